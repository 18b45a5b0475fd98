'use strict';
// What the Backstage benchmarks (bench/backstage*.js) share: the fleet of simulated clusters and
// its entities, the backend children, the runs of the variants and the report's tables.

const { median } = require('./report/measurements');

/** The fleet bench/clusters/backstage.js holds: objects, those labelled for an entity, entities. */
const OBJECTS = 20_000;
const LABELLED = 3_000;
const ENTITIES = 300;

const log = (...a) => console.error(...a);

/** The fleet's clusters (bench/clusters/backstage.js) knowing `viewers` viewers' tokens, and its `info`. */
async function startFleet(viewers = 0) {
  // Not at the top: the backends (bench/backstage-backend.js) load this file too, and
  // bench/children.js's exit and signal handlers are for the parent only.
  const { cluster } = require('./children');
  log(`clusters: 6 × 20 ms, ${OBJECTS} objects, ${LABELLED} labelled for ${ENTITIES} entities…`);
  const clusters = cluster('backstage', {
    objects: OBJECTS,
    labelled: LABELLED,
    entities: ENTITIES,
    viewers,
  });
  return { clusters, info: await clusters.ready };
}

/** A backend (bench/backstage-backend.js) of `variant` and `options`; `stop()` resolves once it exited. */
function startBackend(variant, info, options = {}) {
  const { child } = require('./children');
  const backend = child('backstage-backend.js', [
    JSON.stringify({ variant, entities: ENTITIES, info, ...options }),
  ]);
  return { ...backend, stop: () => (backend.stop(), backend.exited) };
}

/** The benchmark's entity `name`: its pods and the rest carry `backstage.io/kubernetes-id: name`. */
const entityOf = (name) => ({
  apiVersion: 'backstage.io/v1alpha1',
  kind: 'Component',
  metadata: { name, namespace: 'default', annotations: { 'backstage.io/kubernetes-id': name } },
  spec: { type: 'service', owner: 'team', lifecycle: 'production' },
});

/** The catalog's `count` entities, svc-0 … */
const entities = (count) => Array.from({ length: count }, (_, i) => entityOf(`svc-${i}`));

/**
 * The Kubernetes plugin's config entries of the clusters of `info`. `viewers` (issue 35): oidc, the
 * viewer's token in the request's `auth.oidc.okta`, the clusters' as `serviceAccountToken` too.
 */
const clusterConfigs = (info, { viewers = false } = {}) =>
  info.clusters.map(({ name, url }) => ({
    name,
    url,
    ...(viewers ? { authProvider: 'oidc', oidcTokenProvider: 'okta' } : { authProvider: 'serviceAccount' }),
    serviceAccountToken: info.token,
    caData: info.caData,
    skipMetricsLookup: true,
  }));

/** The events backend's database on the variant's PostgreSQL (Backstage names it per plugin). */
const eventsDatabase = (postgres) =>
  require('knex')({
    client: 'pg',
    connection: { ...postgres.connection, database: 'backstage_plugin_events' },
    pool: { min: 0, max: 1 },
  });

/** A figure for the report's tables. */
const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : String(x));

/**
 * `runCount` runs, each measuring with `measure(variant)` every variant of `orderOf(run)` (an
 * order that changes from run to run, so that no variant always goes first); `what(variant)`
 * names the measure in the progress. One `{ [variant]: result }` per run.
 */
async function measureRuns(runCount, orderOf, what, measure) {
  const runs = [];
  for (let run = 0; run < runCount; run++) {
    const results = {};
    for (const variant of orderOf(run)) {
      log(`run ${run + 1}/${runCount}: ${what(variant)}…`);
      results[variant] = await measure(variant);
      log(`  ${JSON.stringify(results[variant])}`);
    }
    runs.push(results);
  }
  return runs;
}

/**
 * A report's markdown table of `runs` (measureRuns'): a row per `rows` entry (`[label, key or keys,
 * decimals = 0, note]`), a column of the medians over the runs per `columns` entry (`[heading,
 * variant]`) with the row's decimals, then one of the medians of each run's `of ÷ to` per `ratios`
 * entry (`[heading, of, to]`) with three.
 */
function reportTable(rows, runs, columns, ratios = []) {
  const med = (f) => (key) => median(runs.map((r) => f(r, key)));
  const figures = [
    ...columns.map(([heading, v]) => [heading, med((r, key) => r[v][key])]),
    ...ratios.map(([heading, of, to]) => [heading, med((r, key) => r[of][key] / r[to][key]), 3]),
  ];
  return [
    `| | ${figures.map(([heading]) => heading).join(' | ')} | |`,
    `|---|${figures.map(() => '---:').join('|')}|---|`,
    ...rows.map(([label, key, d = 0, note = '']) => {
      // Several keys (`[p50, p99]`) make one figure of theirs: `p50 / p99`.
      const figure = ([, f, digits = d]) =>
        [key]
          .flat()
          .map((k) => fmt(f(k), digits))
          .join(' / ');
      return `| ${label} | ${figures.map(figure).join(' | ')} | ${note} |`;
    }),
  ];
}

/** reportTable of two variants (`[heading, variant]` each) and the ratio `second ÷ first`. */
const comparisonTable = (rows, runs, first, second, ratioHeading) =>
  reportTable(rows, runs, [first, second], [[ratioHeading, second[1], first[1]]]);

module.exports = {
  OBJECTS,
  LABELLED,
  ENTITIES,
  startFleet,
  entityOf,
  entities,
  clusterConfigs,
  eventsDatabase,
  startBackend,
  fmt,
  measureRuns,
  reportTable,
  comparisonTable,
};
