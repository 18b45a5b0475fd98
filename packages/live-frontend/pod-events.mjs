// The events of an entity's pods, as they happen: each pod's events asked of the Kubernetes
// plugin's proxy route (`GET …/namespaces/{ns}/events?fieldSelector=involvedObject.name=<pod>`),
// naming the entity (ENTITY_HEADER). kube-watch-native-backstage answers that from a shared
// events informer (no request to the API server once warm), follows the answer and marks it live
// (LIVE_HEADER); it then signals the user on the channel of the entity's events
// (`channelOf(eventsViewOf(entityRef))`) when an answer it gave changes. A round whose every
// answer is live, asked while the backend's heartbeat proved the signals connection
// (./heartbeat.mjs), is kept until a signal, until that connection changes or until
// STALENESS_MS; any other is asked again every `intervalMs` while the page is shown, as the
// stock proxy's answers are. Not while the page is hidden; at once when it is shown again.
//
// Plain ESM importing only its sibling (./heartbeat.mjs) and the protocol, so it runs (and is
// tested) in Node as it runs in the browser.

import { Heartbeat } from './heartbeat.mjs';
import { channelOf, eventsViewOf, STALENESS_MS } from 'kube-watch-native-protocol';

/** How often the events are asked while they are not live and the page is shown. */
export const EVENTS_INTERVAL_MS = 1000;
/**
 * A round's answers count as live only when it was asked this long after the channel's
 * subscription: a signal sent before the backend's signals took the subscription is lost.
 */
const SUBSCRIBE_SETTLE_MS = 1000;
/** While kept until a signal, whether the signals connection is still the same is looked at this often. */
const CHECK_MS = 250;
/** While the signals connection is down, the channel is subscribed again at most this often. */
const RESUBSCRIBE_MS = 5000;
/** Signal ids remembered, to drop a change signalled twice (by two replicas). */
const SEEN_SIGNALS = 32;

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
 * (resolves to `{ items, live }`: the EventList's items, and whether the backend marked the
 * answer live), hands each round's rows to `onRows(rows, errors)`, and asks again as the top of
 * this file says; returns the stop function. A round starts when the last one ended, so a slow
 * answer never piles requests up; a signal during a round asks again once it ended.
 *
 * Without `signalApi` and `entityRef`, every round is polled. `wakes(onWake)` (./signal-
 * connection.mjs browserWakes) says when signals may have been missed silently (a sleep, the
 * network back): the round is asked again at once and nothing is trusted until proven again.
 */
export function followPodEvents({
  pods,
  fetchEvents,
  onRows,
  intervalMs = EVENTS_INTERVAL_MS,
  doc = globalThis.document,
  signalApi = null,
  entityRef = null,
  wakes = null,
  now = () => globalThis.performance.now(),
  maxAgeMs = STALENESS_MS,
  settleMs = SUBSCRIBE_SETTLE_MS,
  checkMs = CHECK_MS,
  resubscribeMs = RESUBSCRIBE_MS,
}) {
  // Whether signals arrive, proven by the backend's heartbeat.
  const heartbeat = signalApi && entityRef ? new Heartbeat(signalApi, { now }) : null;
  let stopped = false;
  let timer = null;
  let controller = null;
  /** Bumped by each signal: a round out across one may predate the change it signals. */
  let version = 0;
  const seen = [];
  const channel = entityRef ? channelOf(eventsViewOf(entityRef)) : null;
  let subscription = null;
  let subscribedAt = -Infinity;
  const shown = () => doc?.visibilityState !== 'hidden';
  const wait = (fn, ms) => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      fn();
    }, ms);
  };

  const subscribe = () => {
    if (!heartbeat || stopped) return;
    const old = subscription;
    subscribedAt = now();
    subscription = signalApi.subscribe(channel, onSignal);
    // The new one first: with none, the signals client would close its connection.
    old?.unsubscribe();
  };

  function onSignal(message) {
    const id = typeof message?.id === 'string' ? message.id : null;
    if (id !== null) {
      if (seen.includes(id)) return;
      seen.push(id);
      if (seen.length > SEEN_SIGNALS) seen.shift();
    }
    version += 1;
    // A round out now sees the version moved and asks again as it ends.
    if (controller === null) round();
  }

  /** Kept until a signal: looks whether the connection it was answered on still holds. */
  function keep(connection, askedAt) {
    wait(() => {
      if (heartbeat.connection() !== connection || now() - askedAt >= maxAgeMs) round();
      else keep(connection, askedAt);
    }, checkMs);
  }

  async function round() {
    clearTimeout(timer);
    timer = null;
    if (stopped || !shown()) return;
    const connection = heartbeat?.connection() ?? null;
    if (heartbeat && (connection === null || heartbeat.late()) && now() - subscribedAt >= resubscribeMs) {
      // The signals client does not reconnect by itself after a normal close; a subscribe does.
      subscribe();
    }
    const askedAt = now();
    const asked = version;
    controller = new AbortController();
    const { signal } = controller;
    const settled = await Promise.allSettled(pods.map((p) => fetchEvents(p, signal)));
    controller = null;
    if (stopped) return;
    const answers = [];
    const errors = [];
    let live = connection !== null && askedAt - subscribedAt >= settleMs;
    settled.forEach((result, i) => {
      if (result.status === 'fulfilled') {
        answers.push({ ...pods[i], items: result.value.items });
        live &&= result.value.live === true;
      } else {
        errors.push(`${pods[i].pod}: ${result.reason?.message ?? result.reason}`);
        live = false;
      }
    });
    onRows(eventRows(answers), errors);
    if (stopped || !shown()) return;
    if (version !== asked) round();
    else if (live && heartbeat.connection() === connection) keep(connection, askedAt);
    else wait(round, intervalMs);
  }

  const onVisibility = () => {
    if (shown() && controller === null) round();
  };
  const onWake = () => {
    heartbeat?.lapse();
    subscribedAt = -Infinity;
    if (controller === null) round();
    else version += 1;
  };
  doc?.addEventListener?.('visibilitychange', onVisibility);
  const stopWakes = heartbeat && wakes ? wakes(onWake) : null;
  subscribe();
  round();
  return () => {
    stopped = true;
    clearTimeout(timer);
    controller?.abort();
    doc?.removeEventListener?.('visibilitychange', onVisibility);
    stopWakes?.();
    subscription?.unsubscribe();
    heartbeat?.close();
  };
}
