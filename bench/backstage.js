#!/usr/bin/env node
'use strict';
// `npm run bench:backstage` → node bench/backstage.js [--seconds=N] [--runs=N] [--strip] [--json=file]
//                                                    [--profile=DIR] [--against=<checkout, built>]
// `npm run bench:backstage -- --live …`: the live tab's benchmark (bench/backstage-live.js);
// with `--replicas=N`, on N backend replicas against one.
// `npm run bench:backstage -- --bus …`: the events bus on several replicas (bench/backstage-bus.js).
// `npm run bench:backstage -- --viewers [--authorization-ttl=S] …`: viewers' own credentials
// (issue 35), below.
//
// Backstage's Kubernetes tab, with and without kube-watch-native-backstage, side by side in one
// run: six simulated clusters (bench/clusters/backstage.js), a fresh backend per variant
// (bench/backstage-backend.js) warmed up with a load of every entity, then 20 viewers each
// reloading a tab every 10 s for `seconds` (120), each load another entity. `floor` answers every
// load from the default fetcher's first answer to it, kept: what is left is Backstage's own
// router, fan-out and JSON, so native ÷ floor shows what is ours. Measured from outside the
// backend: API requests per load (the clusters count them), load latency p50/p99, the backend's
// main-thread and process CPU per load and RSS at the end (/proc), a change's main-thread CPU
// while nobody loads, and the time until a load shows a change (5, after the viewers stop; not for
// the floor). Runs rotate the variants; the report gives medians and the medians of each run's
// ratios. `--strip`: the module with stripManagedFields too; `--against`: the module and watcher
// of another build too (bench/builds.js), and native ÷ it.
//
// `--viewers`: the same three variants, each cluster taking the viewer's own credential (oidc; the
// clusters' token as serviceAccountToken, which the module caches with): each of the 20 viewers a
// Backstage user with its own cluster token, allowed every type, which the module answers from its
// cache once a SelfSubjectAccessReview allowed it (`authorizationTtl`, 10 s or
// --authorization-ttl=S). The report adds the requests by kind, the access reviews per viewer,
// type and cluster per 10 s (goal ≤ 1), a load within the TTL (goal 0) and the first loads after
// a pause (see measure()). Loopback only; every child dies with this process.

const path = require('node:path');
const { build } = require('./builds');
const { failRun } = require('./children');
const {
  OBJECTS,
  LABELLED,
  ENTITIES,
  startFleet,
  startBackend,
  entityOf,
  fmt,
  measureRuns,
  reportTable,
} = require('./backstage-common');
const { threadCpu, threadCpuNs, processCpu, rssBytes } = require('../testbed/proc');
const { options } = require('./options');
const { quantile, median } = require('./report/measurements');

const argv = process.argv.slice(2);
const LIVE = argv.includes('--live');
const BUS = argv.includes('--bus');
const { opt, num, flag, saveJson } = options(
  LIVE || BUS ? [] : argv,
  /seconds=\d+|runs=\d+|strip|viewers|authorization-ttl=\d+|json=.+|profile=.+|against=.+/,
  'backstage.js',
);
const SECONDS = num('seconds', 120);
const STRIP = flag('strip');
const VIEWER_MODE = flag('viewers');
const AUTHORIZATION_TTL_S = num('authorization-ttl', undefined);
const AGAINST = opt('against') && build(opt('against')).backstage;
/** Pod changes a second while nobody loads, for the main thread's CPU per change. */
const CHURN_PER_SECOND = 100;
const CHURN_SECONDS = 10;
const RUNS = num('runs', 1);
/** A folder for each backend's V8 CPU profile over the viewers' loads (`--profile=DIR`). */
const PROFILE = opt('profile') && path.resolve(opt('profile'));
const VIEWERS = 20;
const PERIOD_MS = 10_000;
const CHANGES = 5;
const log = (...a) => console.error(...a);

/**
 * One tab load of entity `i` (mod ENTITIES). With `viewer` ({ index, token }): as that Backstage
 * user, with that cluster token in the body (the per-viewer variants).
 */
async function load(port, i, viewer) {
  const name = `svc-${i % ENTITIES}`;
  const entity = entityOf(name);
  const started = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}/api/kubernetes/services/${name}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: viewer
        ? `Bearer mock-user-token:${JSON.stringify({ sub: `user:default/viewer-${viewer.index}` })}`
        : 'Bearer mock-user-token',
    },
    body: JSON.stringify(viewer ? { entity, auth: { oidc: { okta: viewer.token } } } : { entity }),
  });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`tab load of ${name}: HTTP ${res.status} ${JSON.stringify(body)}`);
  return { ms: performance.now() - started, body };
}

async function measure(clusters, info, variant) {
  const viewerMode = variant.endsWith('-viewers');
  /** Viewer v's identity in the per-viewer variants, else undefined (one shared user and token). */
  const as = (v) => (viewerMode ? { index: v, token: info.viewerTokens[v] } : undefined);
  const backend = startBackend(variant, info, {
    against: AGAINST,
    ...(viewerMode &&
      AUTHORIZATION_TTL_S !== undefined && { authorizationTtlMs: AUTHORIZATION_TTL_S * 1000 }),
  });
  const { port } = await backend.ready;
  const pid = backend.proc.pid;
  // Warm-up: every entity once, 20 at a time (the native variant's informers sync here).
  for (let i = 0; i < ENTITIES; i += VIEWERS) {
    await Promise.all(Array.from({ length: VIEWERS }, (_, v) => load(port, i + v, as(v))));
  }
  // Per-viewer variants: two unmeasured periods of the same pacing first, so that what is
  // measured is the steady state. The warm-up stamps every decision at once; a viewer whose next
  // load comes within half the TTL renews nothing, and its load after that finds the decisions
  // expired and waits one access review: the cost of a viewer's first load after a pause longer
  // than the TTL, reported apart ("first loads after a pause").
  const settleMs = viewerMode ? 2 * PERIOD_MS : 0;
  const measureFrom = Date.now() + settleMs;
  const deadline = measureFrom + SECONDS * 1000;
  let cpu0;
  const measuring = new Promise((resolve) =>
    setTimeout(async () => {
      cpu0 = { main: threadCpu(pid), all: processCpu(pid) };
      await clusters.request({ cmd: 'requests' });
      if (PROFILE) await backend.request({ cmd: 'profile-start' });
      resolve();
    }, settleMs),
  );
  const latencies = [];
  const settling = [];
  let next = 0;
  const viewer = async (v) => {
    await new Promise((r) => setTimeout(r, (v * PERIOD_MS) / VIEWERS));
    while (Date.now() < deadline) {
      const tick = Date.now();
      const { ms } = await load(port, next++ * 7 + v, as(v));
      (tick < measureFrom ? settling : latencies).push(ms);
      await new Promise((r) => setTimeout(r, Math.max(0, PERIOD_MS - (Date.now() - tick))));
    }
  };
  await Promise.all([measuring, ...Array.from({ length: VIEWERS }, (_, v) => viewer(v))]);
  const cpu1 = { main: threadCpu(pid), all: processCpu(pid) };
  if (PROFILE) {
    const file = path.join(PROFILE, `${variant}-${process.pid}-${Date.now()}.cpuprofile`);
    await backend.request({ cmd: 'profile-stop', file });
    log(`  ${variant}: the backend's main thread over the viewers' loads: ${file}`);
  }
  const { requests, byKind } = await clusters.request({ cmd: 'requests' });
  const rss = rssBytes(pid);
  // A load within the TTL (per-viewer variants): each viewer in turn loads a tab, then at once
  // another; the clusters count what the second cost (nothing else loads meanwhile).
  let withinTtl;
  if (viewerMode) {
    withinTtl = { requests: 0, accessReview: 0, loads: VIEWERS };
    for (let v = 0; v < VIEWERS; v++) {
      await load(port, v * 11, as(v));
      await clusters.request({ cmd: 'requests' });
      await load(port, v * 11 + 5, as(v));
      const second = await clusters.request({ cmd: 'requests' });
      withinTtl.requests += second.requests;
      withinTtl.accessReview += second.byKind.accessReview;
    }
  }
  // What a change costs the backend's main thread when nobody loads: the native variants'
  // informers take the changes on Rust threads and only their state is read at the next load.
  const churn0 = threadCpuNs(pid);
  const { changes } = await clusters.request({
    cmd: 'churn',
    perSecond: CHURN_PER_SECOND,
    seconds: CHURN_SECONDS,
  });
  const churnNs = threadCpuNs(pid) - churn0;
  // How long until a change shows: poll the entity's tab every 10 ms.
  const visible = [];
  for (let c = 0; c < (variant.startsWith('floor') ? 0 : CHANGES); c++) {
    const change = await clusters.request({ cmd: 'change' });
    const started = performance.now();
    for (;;) {
      const { body } = await load(port, Number(change.entity.slice(4)), as(0));
      const pods = body.items
        .find((i) => i.cluster.name === change.cluster)
        ?.resources.find((r) => r.type === 'pods');
      const pod = pods?.resources.find((p) => p.metadata.name === change.name);
      if (pod?.metadata.annotations?.['bench/changed'] === change.value) break;
      if (performance.now() - started > 30_000) throw new Error('a change never showed');
      await new Promise((r) => setTimeout(r, 10));
    }
    visible.push(performance.now() - started);
  }
  await backend.stop();
  const loads = latencies.length;
  return {
    variant,
    loads,
    requestsPerLoad: requests / loads,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    mainCpuMsPerLoad: ((cpu1.main - cpu0.main) * 1000) / loads,
    cpuMsPerLoad: ((cpu1.all - cpu0.all) * 1000) / loads,
    rssMiB: rss / 2 ** 20,
    mainCpuUsPerChange: churnNs / 1e3 / changes,
    visibleMs: visible.length ? median(visible) : NaN,
    ...(viewerMode && {
      pauseP50: quantile(settling, 0.5),
      pauseP99: quantile(settling, 0.99),
      listsPerLoad: byKind.list / loads,
      accessReviewsPerLoad: byKind.accessReview / loads,
      otherRequestsPerLoad: (requests - byKind.list - byKind.accessReview) / loads,
      // 14 types (13 default and one custom resource), cluster-wide, on 6 clusters.
      accessReviewsPerViewerTypeCluster10s: byKind.accessReview / (VIEWERS * 14 * 6 * (SECONDS / 10)),
      withinTtlRequestsPerLoad: withinTtl.requests / withinTtl.loads,
      withinTtlAccessReviewsPerLoad: withinTtl.accessReview / withinTtl.loads,
      byKind,
    }),
  };
}

async function main() {
  const { clusters, info } = await startFleet(VIEWER_MODE ? VIEWERS : 0);
  const variants = VIEWER_MODE
    ? ['default-viewers', 'native-viewers', 'floor-viewers']
    : ['default', 'native', 'floor', STRIP && 'native-strip', AGAINST && 'native-against'].filter(Boolean);
  const runs = await measureRuns(
    RUNS,
    (run) => variants.map((_, i) => variants[(i + run) % variants.length]),
    (variant) => `${variant}, ${VIEWERS} viewers for ${SECONDS} s`,
    (variant) => measure(clusters, info, variant),
  );
  clusters.stop();
  const cachedMiB = info.cachedJsonBytes / 2 ** 20;
  const med = (variant, key) => median(runs.map((r) => r[variant][key]));
  const loads = `${runs[0][variants[0]].loads} / ${runs[0][variants[1]].loads} loads per run.`;
  const ttl = AUTHORIZATION_TTL_S === undefined ? '10 s (default)' : `${AUTHORIZATION_TTL_S} s`;
  const lines = VIEWER_MODE
    ? [
        `## Backstage Kubernetes tab, viewers' own credentials (oidc + serviceAccountToken)`,
        '',
        `6 clusters (+20 ms each), ${OBJECTS} objects (${fmt(cachedMiB)} MiB labelled), ${ENTITIES} entities, ` +
          `${VIEWERS} viewers (each its own user and token) every 10 s for ${SECONDS} s; ` +
          `authorizationTtl ${ttl}; ${RUNS} run(s), medians; ${loads}`,
        '',
        ...variantsTable(VIEWER_ROWS, runs, (variant) => `${variant}-viewers`),
      ]
    : [
        `## Backstage Kubernetes tab: default fetcher vs kube-watch-native-backstage`,
        '',
        `6 clusters (+20 ms each), ${OBJECTS} objects (${LABELLED} labelled, ${fmt(cachedMiB)} MiB of JSON), ` +
          `${ENTITIES} entities, ${VIEWERS} viewers every 10 s for ${SECONDS} s; ${RUNS} run(s), medians; ${loads}`,
        '',
        ...variantsTable(ROWS, runs, (variant) => variant),
        '',
        `RSS goal: native ≤ default + 1.3 × ${fmt(cachedMiB)} MiB = ${fmt(med('default', 'rssMiB') + 1.3 * cachedMiB, 0)} MiB.`,
      ];
  if (STRIP && !VIEWER_MODE)
    lines.push(
      '',
      `With stripManagedFields on (native-strip): RSS ${fmt(med('native-strip', 'rssMiB'), 0)} MiB ` +
        `(native ${fmt(med('native', 'rssMiB'), 0)}), p99 ${fmt(med('native-strip', 'p99'), 1)} ms, ` +
        `main-thread CPU per load ${fmt(med('native-strip', 'mainCpuMsPerLoad'), 2)} ms.`,
    );
  console.log(lines.join('\n'));
  const viewers = VIEWER_MODE && { viewers: true, authorizationTtlS: AUTHORIZATION_TTL_S };
  saveJson({ seconds: SECONDS, ...viewers, runs, cachedJsonBytes: info.cachedJsonBytes });
}

/** The rows both reports end with: a load's latency and CPU, the RSS, a change's CPU and how soon it shows. */
const costRows = (goals) => [
  ['tab load p50 (ms)', 'p50', 1],
  ['tab load p99 (ms)', 'p99', 1, goals.p99],
  ['main-thread CPU per load (ms)', 'mainCpuMsPerLoad', 2, goals.mainCpu],
  ['process CPU per load (ms)', 'cpuMsPerLoad', 2],
  ['RSS at the end (MiB)', 'rssMiB'],
  [`main-thread CPU per change, ${CHURN_PER_SECOND}/s, no loads (µs)`, 'mainCpuUsPerChange', 1, 'schedstat'],
  ['change visible after (ms)', 'visibleMs', 0, 'median of 5'],
];
const ROWS = [
  ['API requests per tab load', 'requestsPerLoad', 1, 'goal 0 once warm'],
  ...costRows({ p99: 'goal ≤ 0.1×', mainCpu: 'goal ≤ 0.3×' }),
];
/** The rows of `--viewers`: the requests by kind, the reviews, a load within the TTL, the first loads. */
const VIEWER_ROWS = [
  ['API requests per tab load', 'requestsPerLoad', 2],
  ['… of which LISTs', 'listsPerLoad', 2],
  ['… of which SelfSubjectAccessReviews', 'accessReviewsPerLoad', 2],
  ['… others (watches, SelfSubjectReviews)', 'otherRequestsPerLoad', 2],
  [
    'access reviews per viewer, type and cluster per 10 s',
    'accessReviewsPerViewerTypeCluster10s',
    2,
    'goal ≤ 1',
  ],
  ['API requests per load within the TTL', 'withinTtlRequestsPerLoad', 2, 'goal 0; 20 loads, sequential'],
  ['… of which SelfSubjectAccessReviews', 'withinTtlAccessReviewsPerLoad', 2],
  ...costRows({ p99: 'goal ≤ 1.2× floor', mainCpu: 'goal ≤ 1.2× floor' }),
  ['first loads after a pause: p50 (ms)', 'pauseP50', 1, 'the unmeasured first 20 s'],
  ['first loads after a pause: p99 (ms)', 'pauseP99', 1, 'one access review each'],
];

/**
 * Both reports' table: default, native and floor (and against, with --against; `nameOf` gives a
 * run's name of each), medians over the runs, and the medians of native's ratios to the others.
 */
function variantsTable(rows, runs, nameOf) {
  const others = ['default', 'floor', ...(runs[0][nameOf('native-against')] ? ['native-against'] : [])];
  const heading = (variant) => variant.replace('native-', '');
  return reportTable(
    rows,
    runs,
    ['default', 'native', ...others.slice(1)].map((variant) => [heading(variant), nameOf(variant)]),
    others.map((to) => [`native ÷ ${heading(to)}`, nameOf('native'), nameOf(to)]),
  );
}

/** `--live` and `--bus` are benchmarks of their own, with their own options. */
const bench = BUS
  ? () => require('./backstage-bus').main(argv)
  : LIVE
    ? () => require('./backstage-live').main(argv)
    : main;
bench().catch(failRun);
