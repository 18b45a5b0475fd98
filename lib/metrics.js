'use strict';
// OpenTelemetry metrics of a NativeKubernetesWatcher: its informers and the process's HTTP/2
// connections, as observable instruments read by one batch callback. The figures are counted
// on the Rust side (relaxed atomics as events arrive); a collection makes one native call that
// returns every informer's snapshot and the connection pool's, and nothing here runs per event.
// Without an OpenTelemetry SDK the API's meter is a no-op that drops the callback, so nothing
// is read at all.
//
// Series are named by `cluster`, `group`, `version`, `resource` (and `error.type`), never by
// namespace: informers of one resource in many namespaces of a cluster add up into one series.

const { version: packageVersion } = require('../package.json');

/** The watcher's native snapshot method (lib/watcher.js implements it). */
const SNAPSHOT = Symbol('kube-watch-native.metricsSnapshot');

const PREFIX = 'kube_watch.';

/**
 * Every informer metric: `kind` is the observable instrument, `value` what one informer
 * contributes. Counters add up over the informers of a series, with the counts the native
 * registry keeps of its closed ones, so they never go down; the others combine as `combine`
 * says.
 */
const INFORMER_METRICS = [
  {
    name: 'watch.active',
    kind: 'upDownCounter',
    unit: '{watch}',
    description: 'Watch streams being read now (one per informer while it watches)',
    value: (i) => i.watchesOpen,
    combine: 'sum',
  },
  {
    name: 'events.received',
    kind: 'counter',
    unit: '{event}',
    description: 'Changes received from the API server (watch events and list items; bookmarks not counted)',
    value: (i) => i.eventsReceived,
  },
  {
    name: 'events.delivered',
    kind: 'counter',
    unit: '{event}',
    description: 'Events taken by consumers (changes, SYNCED, ERROR), summed over consumers',
    value: (i) => i.eventsDelivered,
  },
  {
    name: 'network.io',
    kind: 'counter',
    unit: 'By',
    description: 'Response body bytes read from the API server',
    value: (i) => i.bytesReceived,
    attributes: { 'network.io.direction': 'receive' },
  },
  {
    name: 'reconnects',
    kind: 'counter',
    unit: '{reconnect}',
    description: 'Watches started again after one ended or failed',
    value: (i) => i.reconnects,
  },
  {
    name: 'relists',
    kind: 'counter',
    unit: '{relist}',
    description: 'Lists made again after a 410 (the initial list is not counted)',
    value: (i) => i.relists,
  },
  {
    name: 'credential.refreshes',
    kind: 'counter',
    unit: '{refresh}',
    description:
      'Credentials asked for after the first (after a 401/403, or when older than credentialTtlSeconds)',
    value: (i) => i.credentialRefreshes,
  },
  {
    name: 'informer.count',
    kind: 'upDownCounter',
    unit: '{informer}',
    description: 'Shared informers open',
    value: () => 1,
    combine: 'sum',
  },
  {
    name: 'informer.object.count',
    kind: 'upDownCounter',
    unit: '{object}',
    description: 'Objects cached',
    value: (i) => i.objects,
    combine: 'sum',
  },
  {
    name: 'informer.cache.size',
    kind: 'upDownCounter',
    unit: 'By',
    description: 'Bytes of JSON text cached',
    value: (i) => i.cachedBytes,
    combine: 'sum',
  },
  {
    name: 'informer.synced',
    kind: 'gauge',
    unit: '1',
    description: '1 when every informer of the series has its initial list cached, else 0',
    value: (i) => (i.synced ? 1 : 0),
    combine: 'min',
  },
  {
    name: 'informer.last_event.age',
    kind: 'gauge',
    unit: 's',
    description:
      'Seconds since the last event or bookmark (since the start before the first); the most of the series',
    value: (i) => i.secondsSinceLastEvent,
    combine: 'max',
  },
  {
    name: 'informer.consumer.pending',
    kind: 'gauge',
    unit: '{change}',
    description: 'Changes pending in the slowest consumer (at most one per object)',
    value: (i) => i.slowestConsumerPending,
    combine: 'max',
  },
];

const ERRORS = {
  name: 'errors',
  kind: 'counter',
  unit: '{error}',
  description: 'Failures by error.type (the KubernetesErrorTypes of the ERROR events)',
};

const CONNECTION_METRICS = [
  {
    name: 'http2.connection.count',
    kind: 'upDownCounter',
    unit: '{connection}',
    description: 'HTTP/2 connections open or opening to the cluster origin',
    value: (c) => c.connections.length,
  },
  {
    name: 'http2.stream.count',
    kind: 'upDownCounter',
    unit: '{stream}',
    description: 'HTTP/2 streams booked or running (watches and short requests)',
    value: (c) => c.connections.reduce((n, conn) => n + conn.streams, 0),
  },
  {
    name: 'http1.request.count',
    kind: 'upDownCounter',
    unit: '{request}',
    description: 'HTTP/1.1 requests in flight (plain http, or a server without HTTP/2)',
    value: (c) => c.http1Requests,
  },
];

/** Every metric, for the README's table and for tests: `{ name, kind, unit, description }`. */
const ofCache = (m) => m.name.startsWith('informer.');
const METRICS = [
  ...INFORMER_METRICS.filter((m) => !ofCache(m)),
  ERRORS,
  ...INFORMER_METRICS.filter(ofCache),
  ...CONNECTION_METRICS,
].map(({ name, kind, unit, description }) => ({ name: PREFIX + name, kind, unit, description }));

const COMBINE = { sum: (a, b) => a + b, min: Math.min, max: Math.max };

const seriesKey = (i) => JSON.stringify([i.cluster, i.group, i.version, i.resource]);

/**
 * Reads a watcher's figures, one native call per `read()`. A series' counters add up its live
 * informers' and the counts the native registry kept of its closed ones, so they never go
 * down; its other figures are of the live informers only.
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
    const series = new Map();
    const seriesOf = (entry) => {
      const key = seriesKey(entry);
      let s = series.get(key);
      if (!s) {
        s = { attributes: attributesOf(entry), gauges: null, counts: {} };
        series.set(key, s);
      }
      return s;
    };
    for (const retired of snapshot.retired) addCounts(seriesOf(retired).counts, countsOf(retired));
    for (const informer of snapshot.informers) {
      const s = seriesOf(informer);
      addCounts(s.counts, countsOf(informer));
      s.gauges ??= {};
      for (const m of INFORMER_METRICS) {
        if (m.kind === 'counter') continue;
        const v = m.value(informer);
        const was = s.gauges[m.name];
        s.gauges[m.name] = was === undefined ? v : COMBINE[m.combine](was, v);
      }
    }
    const points = [];
    for (const s of series.values()) {
      for (const m of INFORMER_METRICS) {
        if (m.kind !== 'counter') {
          // A series whose informers all closed keeps its counters; its sums are 0, and its
          // minimum and maximum are of nothing.
          const value = s.gauges ? s.gauges[m.name] : m.combine === 'sum' ? 0 : undefined;
          if (value !== undefined) points.push(point(m, value, s.attributes));
        } else {
          points.push(point(m, s.counts[m.name] ?? 0, s.attributes));
        }
      }
      for (const [errorType, n] of Object.entries(s.counts.errors ?? {})) {
        points.push({
          name: PREFIX + ERRORS.name,
          value: n,
          attributes: { ...s.attributes, 'error.type': errorType },
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

function attributesOf(i) {
  return { cluster: i.cluster, group: i.group, version: i.version, resource: i.resource };
}

function countsOf(informer) {
  const counts = { errors: { ...informer.errors } };
  for (const m of INFORMER_METRICS) if (m.kind === 'counter') counts[m.name] = m.value(informer);
  return counts;
}

function addCounts(into, counts) {
  for (const [name, v] of Object.entries(counts)) {
    if (name === 'errors') {
      into.errors ??= {};
      for (const [t, n] of Object.entries(v)) into.errors[t] = (into.errors[t] ?? 0) + n;
    } else {
      into[name] = (into[name] ?? 0) + v;
    }
  }
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
