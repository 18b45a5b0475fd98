'use strict';
// The Backstage module's own OpenTelemetry metrics, beside the watcher's (lib/metrics.js): how
// resources were answered (from a cache, or by the default fetcher), viewers' access decisions
// (allowed, refused, failed, and answered from memory), and the live tab's signals (published,
// failed, viewers evicted for their user's share, viewers refused past maxViewers). Observable
// counters read by one batch callback at collection: nothing runs per load. No token, user or
// entity is ever an attribute.

const { version } = require('./package.json');

const PREFIX = 'kube_watch.backstage.';

/**
 * The points of `figures` (absent: none): one per `field: value` of `fields` (a field alone:
 * its own name), its value the figure of that field (0 when it has none), its attribute
 * `attribute` that value.
 */
function pointsOf(figures, attribute, fields) {
  if (!figures) return [];
  const named = Array.isArray(fields) ? fields.map((field) => [field, field]) : Object.entries(fields);
  return named.map(([field, value]) => [figures[field] ?? 0, { [attribute]: value }]);
}

const METRICS = [
  {
    name: `${PREFIX}answers`,
    unit: '{resource}',
    description: 'Resources answered, by where from (answer: cache | default)',
    points: ({ answered }) => pointsOf(answered, 'answer', { cached: 'cache', delegated: 'default' }),
  },
  {
    name: `${PREFIX}access.decisions`,
    unit: '{decision}',
    description:
      "Viewers' access asked of the API server (decision: allowed | refused | failed) or answered from memory (remembered)",
    points: ({ decisions }) =>
      pointsOf(decisions, 'decision', {
        allowed: 'allowed',
        refused: 'refused',
        failed: 'failed',
        hits: 'remembered',
      }),
  },
  {
    name: `${PREFIX}signals`,
    unit: '{signal}',
    description:
      'Live tab signals (outcome: published | failed | lost, after its retries) and viewers not followed (outcome: evicted | refused | crowded, another replica and no bus)',
    points: ({ signals }) =>
      pointsOf(signals, 'outcome', ['published', 'failed', 'lost', 'evicted', 'refused', 'crowded']),
  },
  {
    name: `${PREFIX}registry`,
    unit: '{event}',
    description:
      "The replicas' viewer registry when it fails or is slow (outcome: slow_load, a load answered not live because its row was late | claim_failed | claim_retried | told_to_poll, viewers told to load again for a failed claim | access_recheck, viewers told to load again as their own access decisions expired | statement_failed, a registry statement failed or timed out, beats included)",
    points: ({ signals }) =>
      pointsOf(signals, 'outcome', {
        slowWrites: 'slow_load',
        claimsFailed: 'claim_failed',
        claimsRetried: 'claim_retried',
        toldToPoll: 'told_to_poll',
        rechecked: 'access_recheck',
        statementsFailed: 'statement_failed',
      }),
  },
];

/**
 * Registers the module's metrics on a meter of `meterProvider` (the global one by default, when
 * `@opentelemetry/api` is installed; else nothing). Returns `{ close() }`.
 * @param {{ answered(): object, decisions(): object }} fetcher
 * @param {{ counts(): object } | undefined} publisher
 */
function registerModuleMetrics(fetcher, publisher, { meterProvider } = {}) {
  let provider = meterProvider;
  if (!provider) {
    try {
      provider = require('@opentelemetry/api').metrics.getMeterProvider();
    } catch (err) {
      if (err?.code !== 'MODULE_NOT_FOUND') throw err;
      return { close() {} };
    }
  }
  const meter = provider.getMeter('kube-watch-native-backstage', version);
  const instruments = METRICS.map((m) =>
    meter.createObservableCounter(m.name, { unit: m.unit, description: m.description }),
  );
  const callback = (result) => {
    const figures = {
      answered: fetcher.answered(),
      decisions: fetcher.decisions(),
      signals: publisher?.counts(),
    };
    METRICS.forEach((m, i) => {
      for (const [value, attributes] of m.points(figures)) result.observe(instruments[i], value, attributes);
    });
  };
  meter.addBatchObservableCallback(callback, instruments);
  return { close: () => meter.removeBatchObservableCallback(callback, instruments) };
}

module.exports = { registerModuleMetrics, METRICS };
