'use strict';
// OpenTelemetry metrics of a NativeKubernetesWatcher: its informers, its plain watches
// (`watchResource`) and the process's HTTP/2 connections, as observable instruments read by one
// batch callback. The figures are counted on the Rust side (relaxed atomics as events arrive); a
// collection makes two native calls, one that returns the informers' figures added up per series
// and the connection pool's, one the plain watches' per series, and nothing here runs per event.
// Without an OpenTelemetry SDK the API's meter is a no-op that drops the callback, so nothing
// is read at all.
//
// Series are named by `cluster`, `group`, `version`, `resource` (and `error.type`), never by
// namespace: informers of one resource in many namespaces of a cluster add up into one series,
// and so do the plain watches of it, with the informers' when there are both. A series of plain
// watches alone has the watch figures (watch.active, events, network.io, errors), not the
// informer ones (no informer.*, reconnects, relists or credential refreshes).

const { version: packageVersion } = require('../package.json');

/** The watcher's native snapshot method (lib/watcher.js implements it). */
const SNAPSHOT = Symbol('kube-watch-native.metricsSnapshot');

const PREFIX = 'kube_watch.';

/**
 * A metric read from the snapshot as the observable instrument `kind`: `value` is the name of
 * the field it reads, or a function of what it reads.
 */
const instrument = (kind) => (name, unit, value, description, attributes) => ({
  name,
  kind,
  unit,
  description,
  value: typeof value === 'string' ? (figures) => figures[value] : value,
  attributes,
});
const counter = instrument('counter');
const upDownCounter = instrument('upDownCounter');
const gauge = instrument('gauge');

/**
 * Every informer metric: `value` is its figure in a series of the native snapshot (or null:
 * none). The native side adds a series' informers up; counters include its closed informers'
 * counts, so they never go down.
 */
const INFORMER_METRICS = [
  upDownCounter(
    'watch.active',
    '{watch}',
    'watchesOpen',
    'Watch streams being read now (one per informer while it watches, one per running plain watch)',
  ),
  counter(
    'events.received',
    '{event}',
    'eventsReceived',
    "Changes received from the API server (watch events and list items; an informer's bookmarks not counted, a plain watch's are)",
  ),
  counter(
    'events.delivered',
    '{event}',
    'eventsDelivered',
    'Events taken by consumers (changes, SYNCED, ERROR), summed over consumers and plain watches',
  ),
  counter('network.io', 'By', 'bytesReceived', 'Response body bytes read from the API server', {
    'network.io.direction': 'receive',
  }),
  counter('reconnects', '{reconnect}', 'reconnects', 'Watches started again after one ended or failed'),
  counter('relists', '{relist}', 'relists', 'Lists made again after a 410 (the initial list is not counted)'),
  counter(
    'credential.refreshes',
    '{refresh}',
    'credentialRefreshes',
    'Credentials asked for after the first (after a 401/403, or when older than credentialTtlSeconds)',
  ),
  upDownCounter('informer.count', '{informer}', 'informers', 'Shared informers open'),
  upDownCounter('informer.object.count', '{object}', 'objects', 'Objects cached'),
  upDownCounter('informer.cache.size', 'By', 'cachedBytes', 'Bytes of JSON text cached'),
  gauge(
    'informer.synced',
    '1',
    (s) => (s.synced === null ? null : s.synced ? 1 : 0),
    '1 when every informer of the series has its initial list cached, else 0',
  ),
  gauge(
    'informer.last_event.age',
    's',
    'secondsSinceLastEvent',
    'Seconds since the last event or bookmark (since the start before the first); the most of the series',
  ),
  gauge(
    'informer.consumer.pending',
    '{change}',
    'slowestConsumerPending',
    'Changes pending in the slowest consumer (at most one per object)',
  ),
];

const ERRORS = {
  name: 'errors',
  kind: 'counter',
  unit: '{error}',
  description: 'Failures by error.type (the KubernetesErrorTypes of the ERROR events)',
};

const CONNECTION_METRICS = [
  upDownCounter(
    'http2.connection.count',
    '{connection}',
    (c) => c.connections.length,
    'HTTP/2 connections open or opening to the cluster origin',
  ),
  upDownCounter(
    'http2.stream.count',
    '{stream}',
    (c) => c.connections.reduce((n, conn) => n + conn.streams, 0),
    'HTTP/2 streams booked or running (watches and short requests)',
  ),
  upDownCounter(
    'http1.request.count',
    '{request}',
    'http1Requests',
    'HTTP/1.1 requests in flight (plain http, or a server without HTTP/2)',
  ),
];

/** Every metric, for the README's table and for tests: `{ name, kind, unit, description }`. */
const ofCache = (m) => m.name.startsWith('informer.');
const METRICS = [
  ...INFORMER_METRICS.filter((m) => !ofCache(m)),
  ERRORS,
  ...INFORMER_METRICS.filter(ofCache),
  ...CONNECTION_METRICS,
].map(({ name, kind, unit, description }) => ({ name: PREFIX + name, kind, unit, description }));

/**
 * Reads a watcher's figures: one snapshot per `read()` (two native calls), which returns them
 * added up per series; here they only become points.
 */
class MetricsReader {
  #watcher;

  constructor(watcher) {
    if (!watcher || typeof watcher[SNAPSHOT] !== 'function') {
      throw new TypeError('kube-watch-native: registerMetrics needs a NativeKubernetesWatcher');
    }
    this.#watcher = watcher;
  }

  /**
   * The figures now: `[{ name, value, attributes }]` with full metric names. Informer series
   * first, then per cluster origin the connection figures.
   */
  read() {
    const snapshot = this.#watcher[SNAPSHOT]();
    const points = [];
    for (const s of snapshot.series) {
      const attributes = { cluster: s.cluster, group: s.group, version: s.version, resource: s.resource };
      for (const m of INFORMER_METRICS) {
        const value = m.value(s);
        // A series whose informers all closed keeps its counters and sums; its synced, age and
        // pending are of nothing.
        if (value !== null) points.push(point(m, value, attributes));
      }
      for (const [errorType, n] of Object.entries(s.errors)) {
        points.push({
          name: PREFIX + ERRORS.name,
          value: n,
          attributes: { ...attributes, 'error.type': errorType },
        });
      }
    }
    const origins = new Map();
    for (const entry of snapshot.clusters) {
      const o = origins.get(entry.origin) ?? { connections: [], http1Requests: 0 };
      o.connections.push(...entry.connections);
      o.http1Requests += entry.http1Requests;
      origins.set(entry.origin, o);
    }
    for (const [origin, o] of origins) {
      for (const m of CONNECTION_METRICS) points.push(point(m, m.value(o), { cluster: origin }));
    }
    return points;
  }
}

function point(m, value, attributes) {
  return { name: PREFIX + m.name, value, attributes: { ...attributes, ...m.attributes } };
}

const CREATE = {
  counter: 'createObservableCounter',
  upDownCounter: 'createObservableUpDownCounter',
  gauge: 'createObservableGauge',
};

function defaultMeterProvider() {
  let api;
  try {
    api = require('@opentelemetry/api');
  } catch (err) {
    if (err?.code !== 'MODULE_NOT_FOUND') throw err;
    throw new Error(
      'kube-watch-native: metrics need the @opentelemetry/api package (npm install @opentelemetry/api), or options.meter',
    );
  }
  return api.metrics.getMeterProvider();
}

/**
 * Registers the watcher's metrics on `options.meter`, else on a meter of
 * `options.meterProvider`, else of the global OpenTelemetry meter provider (which needs the
 * optional peer dependency `@opentelemetry/api`). Returns `{ close() }`, which stops the
 * collection callback. Register a watcher once per meter: each registration reports the
 * process-wide connection figures too.
 */
function registerMetrics(watcher, options = {}) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError('kube-watch-native: metrics options must be an object');
  }
  const reader = new MetricsReader(watcher);
  let meter = options.meter;
  if (meter === undefined) {
    const provider = options.meterProvider ?? defaultMeterProvider();
    if (!provider || typeof provider.getMeter !== 'function') {
      throw new TypeError('kube-watch-native: options.meterProvider must be a MeterProvider (with getMeter)');
    }
    meter = provider.getMeter('kube-watch-native', packageVersion);
  }
  if (!meter || typeof meter.addBatchObservableCallback !== 'function') {
    throw new TypeError('kube-watch-native: options.meter must be an OpenTelemetry Meter');
  }
  const instruments = new Map();
  for (const m of METRICS) {
    instruments.set(m.name, meter[CREATE[m.kind]](m.name, { unit: m.unit, description: m.description }));
  }
  const observables = [...instruments.values()];
  const callback = (result) => {
    for (const p of reader.read()) result.observe(instruments.get(p.name), p.value, p.attributes);
  };
  meter.addBatchObservableCallback(callback, observables);
  let closed = false;
  return {
    close() {
      if (closed) return;
      closed = true;
      meter.removeBatchObservableCallback(callback, observables);
    },
  };
}

/**
 * The figures as text lines, for `kube-watch --stats`: one line per series, with the metric
 * names less the `kube_watch.` prefix.
 */
function formatMetrics(points) {
  const lines = new Map();
  for (const p of points) {
    const { 'error.type': errorType, 'network.io.direction': _direction, ...series } = p.attributes;
    const where = series.resource
      ? `${series.resource}${series.group ? `.${series.group}` : ''}/${series.version} on ${series.cluster}`
      : `connections to ${series.cluster}`;
    const name = p.name.slice(PREFIX.length) + (errorType ? `{${errorType}}` : '');
    const value = Number.isInteger(p.value) ? String(p.value) : p.value.toFixed(1);
    if (!lines.has(where)) lines.set(where, []);
    lines.get(where).push(`${name}=${value}`);
  }
  return [...lines].map(([where, figures]) => `${where}: ${figures.join(' ')}`);
}

module.exports = { registerMetrics, MetricsReader, formatMetrics, METRICS, SNAPSHOT };
