// EntityLiveLogsContent: an entity's live logs and events, in either frontend system (the legacy
// app's entity page route, the new one's `entity-content:kubernetes/live-logs`).
//
// The entity's pods come from `kubernetesApiRef` (LiveKubernetesApi answers its polls from
// memory until a signal says they changed); every container of every pod is in the picker, its
// previous instance too. The log is the Kubernetes plugin's own proxy route, which
// kube-watch-native-backstage answers from one shared native follow per container, read as a
// stream and resumed without a line repeated or lost (./pod-log.mjs); the events are the pods'
// own, asked again when the backend signals that they changed, else every second while the page
// is shown (./pod-events.mjs).

import { createElement as h, memo, useEffect, useMemo, useRef, useState } from 'react';
import { useApi, useApiHolder } from '@backstage/core-plugin-api';
import { signalApiRef } from '@backstage/plugin-signals-react';
import { InfoCard, LogViewer } from '@backstage/core-components';
import { useEntity } from '@backstage/plugin-catalog-react';
import { kubernetesApiRef, useKubernetesObjects } from '@backstage/plugin-kubernetes-react';
import { browserWakes } from './signal-connection.mjs';
import { LOG_TAIL_LINES, LogLines, MAX_LOG_LINES, RenderPacer, followLog } from './pod-log.mjs';
import { EVENTS_INTERVAL_MS, podEventsPath, followPodEvents } from './pod-events.mjs';
import { ENTITY_HEADER, LIVE_HEADER, entityRefOf } from 'kube-watch-native-protocol';

/** How often the pods are asked of kubernetesApiRef (answered from memory while live). */
const PODS_INTERVAL_MS = 1000;

/** The proxy path of a container's log with `query` (PodLogOptions). */
function podLogPath({ namespace, pod, container }, query) {
  const params = new URLSearchParams({ container });
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value));
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(pod)}/log?${params}`;
}

/**
 * Every container of every pod in a getObjectsByEntity answer:
 * `{ key, clusterName, namespace, pod, container }`, init containers first, as the pod runs them.
 */
export function containersOf(objects) {
  const containers = [];
  for (const item of objects?.items ?? []) {
    const clusterName = item.cluster?.name;
    for (const group of item.resources ?? []) {
      if (group.type !== 'pods') continue;
      for (const pod of group.resources ?? []) {
        const { name, namespace = 'default' } = pod.metadata ?? {};
        const specs = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
        for (const { name: container } of specs) {
          containers.push({
            key: JSON.stringify([clusterName, namespace, name, container]),
            clusterName,
            namespace,
            pod: name,
            container,
          });
        }
      }
    }
  }
  return containers;
}

/** The pods of `containers`, once each. */
function podsOf(containers) {
  const pods = new Map();
  for (const { clusterName, namespace, pod } of containers) {
    const key = JSON.stringify([clusterName, namespace, pod]);
    if (!pods.has(key)) pods.set(key, { key, clusterName, namespace, pod });
  }
  return [...pods.values()];
}

/** `value`, or the previous render's when it serializes the same: a poll's equal answer renders nothing new. */
function useStable(value) {
  const kept = useRef({ text: undefined, value });
  const text = JSON.stringify(value);
  if (text !== kept.current.text) kept.current = { text, value };
  return kept.current.value;
}

/**
 * The log of `target` (a container of containersOf, or undefined), followed (or, with
 * `previous`, read once): `{ lines, version, status }`, `version` bumped at each change.
 */
function usePodLog(kubernetesApi, target, { previous, tailLines, maxLines }) {
  const [version, setVersion] = useState(0);
  const [status, setStatus] = useState({ state: 'connecting', error: null });
  const lines = useRef(new LogLines(maxLines));
  const currentPacer = useRef(null);
  const { clusterName, namespace, pod, container } = target ?? {};
  useEffect(() => {
    lines.current = new LogLines(maxLines);
    setVersion((v) => v + 1);
    if (!pod) return undefined;
    // Renders paced by their cost, however many chunks came: at 1 000 lines a second a render
    // per chunk is most of a tab's CPU.
    const pacer = new RenderPacer({ render: () => setVersion((v) => v + 1) });
    currentPacer.current = pacer;
    const where = { namespace, pod, container };
    const mode = previous ? { previous: true } : { follow: true };
    const stop = followLog({
      lines: lines.current,
      follow: !previous,
      tailLines,
      open: (query, signal) =>
        kubernetesApi.proxy({
          clusterName,
          path: podLogPath(where, { ...mode, timestamps: true, ...query }),
          init: { signal },
        }),
      onChange: () => pacer.changed(),
      onStatus: setStatus,
      wakes: browserWakes,
      shown: () => document.visibilityState !== 'hidden',
      visibility: (onChange) => {
        document.addEventListener('visibilitychange', onChange);
        return () => document.removeEventListener('visibilitychange', onChange);
      },
    });
    return () => {
      stop();
      pacer.stop();
    };
  }, [kubernetesApi, clusterName, namespace, pod, container, previous, tailLines, maxLines]);
  // After the render's commit (and paint): its cost paces the next.
  useEffect(() => currentPacer.current?.rendered(), [version]);
  return { lines: lines.current, version, status };
}

/**
 * The events of `pods` of the entity `entityRef`, newest first, asked again on a signal (with the
 * Signals plugin's `signalApi`), else polled while the page is shown: `{ rows, errors }`.
 */
function usePodEvents(kubernetesApi, signalApi, entityRef, pods, intervalMs) {
  const [events, setEvents] = useState({ rows: [], errors: [] });
  const podsKey = pods.map((p) => p.key).join('\n');
  useEffect(() => {
    if (pods.length === 0) return undefined;
    return followPodEvents({
      pods,
      intervalMs,
      signalApi,
      entityRef,
      wakes: browserWakes,
      fetchEvents: async ({ clusterName, namespace, pod }, signal) => {
        const response = await kubernetesApi.proxy({
          clusterName,
          path: podEventsPath(namespace, pod),
          init: { signal, headers: { [ENTITY_HEADER]: entityRef } },
        });
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        const items = (await response.json()).items ?? [];
        return { items, live: response.headers.get(LIVE_HEADER) === '1' };
      },
      // A round that found what the last did renders nothing.
      onRows: (rows, errors) =>
        setEvents((last) =>
          JSON.stringify(last) === JSON.stringify({ rows, errors }) ? last : { rows, errors },
        ),
    });
    // The pods by identity, not the array made at each render.
  }, [kubernetesApi, signalApi, entityRef, podsKey, intervalMs]);
  return events;
}

const STATUS_TEXT = {
  connecting: 'Connecting…',
  following: 'Following',
  retrying: 'Reconnecting…',
  paused: 'Paused while the tab is hidden',
  ended: 'Read',
};

/** The log's LogViewer, rendered again only when its text changed (not at every poll of the pods). */
const LogPane = memo(function LogPane({ text, height }) {
  return h('div', { style: { height } }, h(LogViewer, { text }));
});

const EventsTable = memo(function EventsTable({ rows, errors, many }) {
  const cell = { padding: '4px 8px', textAlign: 'left', verticalAlign: 'top' };
  return h(
    'div',
    null,
    errors.length > 0 && h('p', { role: 'alert' }, `Events not read: ${errors.join('; ')}`),
    rows.length === 0
      ? h('p', null, 'No events.')
      : h(
          'table',
          { 'aria-label': 'Events', style: { borderCollapse: 'collapse', width: '100%' } },
          h(
            'thead',
            null,
            h(
              'tr',
              null,
              ['Type', 'Reason', 'Message', 'Count', 'Last seen', ...(many ? ['Pod'] : [])].map((name) =>
                h('th', { key: name, style: cell }, name),
              ),
            ),
          ),
          h(
            'tbody',
            null,
            rows.map((row) =>
              h(
                'tr',
                { key: row.key, 'data-event': row.key },
                h('td', { style: cell }, row.type),
                h('td', { style: cell }, row.reason),
                h('td', { style: cell }, row.message),
                h('td', { style: cell }, String(row.count)),
                h('td', { style: cell }, row.lastTime ? new Date(row.lastTime).toLocaleTimeString() : ''),
                many && h('td', { style: cell }, row.pod),
              ),
            ),
          ),
        ),
  );
});

/**
 * An entity's live logs and events: a container picker (every container of the entity's pods,
 * its previous instance too), the log following as it is written (Backstage's LogViewer), and the
 * pods' events as they happen, newest first. Needs the entity (an entity page) and the
 * Kubernetes plugin's kubernetesApiRef.
 *
 * Props: `tailLines` (the lines a follow starts with, 1000), `maxLines` (kept in the browser,
 * 10 000), `eventsIntervalMs` (1000), `height` of the log (480).
 */
export function EntityLiveLogsContent({
  tailLines = LOG_TAIL_LINES,
  maxLines = MAX_LOG_LINES,
  eventsIntervalMs = EVENTS_INTERVAL_MS,
  height = 480,
} = {}) {
  const { entity } = useEntity();
  const kubernetesApi = useApi(kubernetesApiRef);
  const { kubernetesObjects: answer, error } = useKubernetesObjects(entity, PODS_INTERVAL_MS);
  // The last answer through a failed poll (the network away a moment): the log keeps following.
  const lastAnswer = useRef(undefined);
  if (answer) lastAnswer.current = answer;
  const kubernetesObjects = answer ?? lastAnswer.current;
  const containers = useStable(useMemo(() => containersOf(kubernetesObjects), [kubernetesObjects]));
  const pods = useMemo(() => podsOf(containers), [containers]);
  const [chosen, setChosen] = useState(null);
  const [previous, setPrevious] = useState(false);
  const [timestamps, setTimestamps] = useState(false);
  const target = containers.find((c) => c.key === chosen) ?? containers[0];
  const log = usePodLog(kubernetesApi, target, { previous, tailLines, maxLines });
  const text = useMemo(
    () => log.lines.text({ timestamps }),
    // log.version: the lines changed in place.
    [log.lines, log.version, timestamps],
  );
  // Optional: without the Signals plugin the events are polled.
  const signalApi = useApiHolder().get(signalApiRef) ?? null;
  const events = usePodEvents(kubernetesApi, signalApi, entityRefOf(entity), pods, eventsIntervalMs);
  const manyClusters = new Set(containers.map((c) => c.clusterName)).size > 1;

  const picker = h(
    'div',
    { style: { display: 'flex', gap: 16, alignItems: 'center', flexWrap: 'wrap', marginBottom: 8 } },
    h(
      'label',
      null,
      'Container ',
      h(
        'select',
        {
          'aria-label': 'Container',
          value: target?.key ?? '',
          onChange: (event) => setChosen(event.target.value),
        },
        containers.map((c) =>
          h(
            'option',
            { key: c.key, value: c.key },
            `${manyClusters ? `${c.clusterName}: ` : ''}${c.pod} / ${c.container}`,
          ),
        ),
      ),
    ),
    h(
      'label',
      null,
      h('input', {
        type: 'checkbox',
        'aria-label': 'Previous instance',
        checked: previous,
        onChange: (event) => setPrevious(event.target.checked),
      }),
      ' Previous instance',
    ),
    h(
      'label',
      null,
      h('input', {
        type: 'checkbox',
        'aria-label': 'Timestamps',
        checked: timestamps,
        onChange: (event) => setTimestamps(event.target.checked),
      }),
      ' Timestamps',
    ),
    h(
      'span',
      { role: 'status', 'data-log-state': log.status.state },
      `${STATUS_TEXT[log.status.state]}${log.status.error ? `: ${log.status.error.message}` : ''}`,
    ),
  );

  const body =
    containers.length === 0
      ? h('p', null, error ? `Pods not read: ${error}` : kubernetesObjects ? 'No pods.' : 'Loading pods…')
      : h(LogPane, { text, height });

  return h(
    'div',
    null,
    h(InfoCard, { title: 'Logs' }, picker, body),
    h(
      'div',
      { style: { marginTop: 16 } },
      h(
        InfoCard,
        { title: 'Events' },
        h(EventsTable, { rows: events.rows, errors: events.errors, many: pods.length > 1 }),
      ),
    ),
  );
}
