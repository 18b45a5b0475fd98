// The events of an entity's pods, as they happen: each pod's events asked of the Kubernetes
// plugin's proxy route (`GET …/namespaces/{ns}/events?fieldSelector=involvedObject.name=<pod>`)
// every `intervalMs` while the page is shown, not while it is hidden. kube-watch-native-backstage
// answers that from a shared events informer (no request to the API server once warm), and the
// stock proxy answers the same from the API server.
//
// Plain ESM without imports, so it runs (and is tested) in Node as it runs in the browser.

/** How often the events are asked while the page is shown. */
export const EVENTS_INTERVAL_MS = 1000;

/** The proxy path of the events of pod `pod` in `namespace`. */
export function podEventsPath(namespace, pod) {
  const selector = encodeURIComponent(`involvedObject.name=${pod}`);
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/events?fieldSelector=${selector}`;
}

/** When an event last happened (events.k8s.io's series and eventTime, or core/v1's fields), in ms. */
function lastTimeOf(event) {
  const at =
    event.series?.lastObservedTime ??
    event.lastTimestamp ??
    event.eventTime ??
    event.firstTimestamp ??
    event.metadata?.creationTimestamp;
  const ms = at ? Date.parse(at) : NaN;
  return Number.isNaN(ms) ? 0 : ms;
}

/**
 * The rows of the events of the pods (`{ clusterName, namespace, pod }`'s), newest first:
 * `{ key, clusterName, pod, type, reason, message, count, lastTime }` (`lastTime` in ms).
 */
export function eventRows(answers) {
  const rows = [];
  for (const { clusterName, pod, items } of answers) {
    for (const event of items) {
      // A field selector on the name alone: another kind's object may share the pod's name.
      const kind = event.involvedObject?.kind;
      if (kind !== undefined && kind !== 'Pod') continue;
      rows.push({
        key: `${clusterName}/${event.metadata?.namespace}/${event.metadata?.name}`,
        clusterName,
        pod,
        type: event.type ?? '',
        reason: event.reason ?? '',
        message: event.message ?? event.note ?? '',
        count: event.series?.count ?? event.count ?? 1,
        lastTime: lastTimeOf(event),
      });
    }
  }
  return rows.sort((a, b) => b.lastTime - a.lastTime || a.key.localeCompare(b.key));
}

/**
 * Asks the events of `pods` (`{ clusterName, namespace, pod }`) with `fetchEvents(pod, signal)`
 * (resolves to the EventList's items) every `intervalMs` while `doc` is shown, and hands each
 * round's rows to `onRows(rows, errors)`; returns the stop function. A round starts when the last
 * one ended, so a slow answer never piles requests up; a page shown again asks at once.
 */
export function pollPodEvents({
  pods,
  fetchEvents,
  onRows,
  intervalMs = EVENTS_INTERVAL_MS,
  doc = globalThis.document,
}) {
  let stopped = false;
  let timer = null;
  let controller = null;
  const shown = () => doc?.visibilityState !== 'hidden';

  async function round() {
    timer = null;
    if (stopped || !shown()) return;
    controller = new AbortController();
    const { signal } = controller;
    const settled = await Promise.allSettled(pods.map((p) => fetchEvents(p, signal)));
    controller = null;
    if (stopped) return;
    const answers = [];
    const errors = [];
    settled.forEach((result, i) => {
      if (result.status === 'fulfilled') answers.push({ ...pods[i], items: result.value });
      else errors.push(`${pods[i].pod}: ${result.reason?.message ?? result.reason}`);
    });
    onRows(eventRows(answers), errors);
    if (!stopped && shown()) timer = setTimeout(round, intervalMs);
  }

  const onVisibility = () => {
    if (shown() && timer === null && controller === null) round();
  };
  doc?.addEventListener?.('visibilitychange', onVisibility);
  round();
  return () => {
    stopped = true;
    clearTimeout(timer);
    controller?.abort();
    doc?.removeEventListener?.('visibilitychange', onVisibility);
  };
}
