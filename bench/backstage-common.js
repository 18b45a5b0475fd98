'use strict';
// What the Backstage benchmarks (bench/backstage*.js) share: the fleet of simulated clusters and
// its entities, the CPU and memory of a process as /proc accounts them, the runs of the variants
// and the report's arithmetic and tables. (Their forked children with request/answer IPC are
// bench/children.js's.)

const fs = require('node:fs');

/** The fleet bench/backstage-clusters.js holds: objects, those labelled for an entity, entities. */
const OBJECTS = 20_000;
const LABELLED = 3_000;
const ENTITIES = 300;

const log = (...a) => console.error(...a);

/**
 * Starts the six simulated clusters (bench/backstage-clusters.js, a process of their own) holding
 * the fleet, with `extra` arguments; resolves with the child and the fleet's `info`.
 */
async function startFleet(extra = []) {
  // Not at the top: the backends (bench/backstage-backend.js …) load this file too, and
  // bench/children.js's exit and signal handlers are for the parent only.
  const { child } = require('./children');
  log(`clusters: 6 × 20 ms, ${OBJECTS} objects, ${LABELLED} labelled for ${ENTITIES} entities…`);
  const clusters = child('backstage-clusters.js', [
    String(OBJECTS),
    String(LABELLED),
    String(ENTITIES),
    ...extra,
  ]);
  await clusters.ready;
  const info = await clusters.request({ cmd: 'info' });
  return { clusters, info };
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
 * The Kubernetes plugin's config entries of the clusters `info` (bench/backstage-clusters.js)
 * describes. `viewers`: each viewer's own credential (`authProvider: oidc`, the token in the
 * request's `auth.oidc.okta`), with the clusters' token as `serviceAccountToken` too, which
 * Backstage ignores for oidc and kube-watch-native-backstage caches with (issue 35).
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

/** A figure for the report's tables. */
const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : String(x));

const TICK = 100; // USER_HZ
/** CPU seconds of one thread (or, with tid = pid, of the main thread). */
function threadCpu(pid, tid = pid) {
  const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICK;
}
/** CPU nanoseconds of one thread, from the scheduler's own account (no 10 ms ticks). */
function threadCpuNs(pid, tid = pid) {
  return Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
}
function processCpu(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICK;
}
function rssBytes(pid) {
  const kb = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1];
  return Number(kb) * 1024;
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

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
 * A report's markdown table: a row per `rows` entry (`[label, key, decimals, note]`), a column
 * per `columns` entry (`[heading, (key) => figure]`) with the row's decimals, then one per
 * `ratios` entry (the same, with three decimals).
 */
function reportTable(rows, columns, ratios) {
  const headings = [...columns, ...ratios].map(([heading]) => heading);
  return [
    `| | ${headings.join(' | ')} | |`,
    `|---|${headings.map(() => '---:').join('|')}|---|`,
    ...rows.map(([label, key, d, note]) => {
      const figures = [...columns.map(([, f]) => fmt(f(key), d)), ...ratios.map(([, f]) => fmt(f(key), 3))];
      return `| ${label} | ${figures.join(' | ')} | ${note} |`;
    }),
  ];
}

/**
 * reportTable of `runs` for two variants, each `[heading, variant]`: a column of each's medians,
 * then one of the medians of `second ÷ first` headed `ratioHeading`.
 */
function comparisonTable(rows, runs, [firstHeading, first], [secondHeading, second], ratioHeading) {
  const med = (variant) => (key) => median(runs.map((r) => r[variant][key]));
  return reportTable(
    rows,
    [
      [firstHeading, med(first)],
      [secondHeading, med(second)],
    ],
    [[ratioHeading, (key) => median(runs.map((r) => r[second][key] / r[first][key]))]],
  );
}

/** The CPU seconds of every process descended from `pid` whose command is `comm` (a browser's). */
function treeCpu(pid, comm) {
  const parents = new Map();
  const cpu = new Map();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    parents.set(Number(entry), Number(fields[1]));
    if (name.startsWith(comm)) cpu.set(Number(entry), (Number(fields[11]) + Number(fields[12])) / TICK);
  }
  const descends = (p) => {
    for (let q = parents.get(p); q !== undefined && q > 1; q = parents.get(q)) if (q === pid) return true;
    return false;
  };
  let total = 0;
  for (const [p, seconds] of cpu) if (descends(p)) total += seconds;
  return total;
}

module.exports = {
  OBJECTS,
  LABELLED,
  ENTITIES,
  startFleet,
  entityOf,
  entities,
  clusterConfigs,
  fmt,
  threadCpu,
  threadCpuNs,
  processCpu,
  rssBytes,
  treeCpu,
  quantile,
  median,
  measureRuns,
  reportTable,
  comparisonTable,
};
