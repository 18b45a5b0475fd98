'use strict';
// `npm run bench:backstage -- --live [--viewers] [--seconds=N] [--idle=N] [--refresh=MS] [--runs=N] [--json=file]`
// `npm run bench:backstage -- --live --replicas=N [--seconds=S] [--runs=R] [--json=file]`
//
// The live Kubernetes tab against the stock one, side by side in one run: 20 headless Chromium
// tabs (/usr/bin/chromium through playwright-core), each the real EntityKubernetesContent of its
// own entity (testbed/fixtures/live-tab) over the clusters of bench/clusters/backstage.js, with a
// fresh backend (bench/backstage-backend.js) and browser per variant: `stock`, the plugin as
// shipped (tabs polling every 10 s), and `live`, kube-watch-native-backstage's signals and
// kube-watch-native-live-frontend's tabs (refreshIntervalMs 500 or --refresh, answered from
// memory). The tabs load and settle; `idle` seconds (60) count what idle tabs ask; then `seconds`
// (120) of 100 pod changes a second (a refetch, nothing to see) and, every 600 ms, one tab's pod
// starting or stopping to crash-loop, stamped by the page when its "pods with errors" count
// changes (page and driver share the clock). Measured: change-to-DOM latency, requests a minute to
// /api/kubernetes, signals published, the backend's main-thread and process CPU and the browser's
// (every Chromium process under this one) a minute. `--viewers` (issue 35): each tab's cluster
// token its own (oidc), which the stock tabs send with every LIST and the live backend has
// reviewed. `--replicas=N`: the live tabs on N replicas (testbed/replica-backend.js, PostgreSQL, a
// round-robin balancer) against one, without the idle window; besides: refetches per signal per
// tab, bus rows a second, WATCHes while the tabs opened, each replica's RSS and main-thread CPU.
// Loopback only; everything ends with this process.

const fs = require('node:fs');
const { chromium } = require('playwright-core');
const { bundle, startOrigin } = require('../testbed/live-helpers');
const { startReplicas } = require('../testbed/replica-helpers');
const { failRun } = require('./children');
const {
  OBJECTS,
  ENTITIES,
  startFleet,
  startBackend,
  entityOf,
  entities,
  clusterConfigs,
  eventsDatabase,
  measureRuns,
  comparisonTable,
} = require('./backstage-common');
const { threadCpu, processCpu, treeCpu, rssBytes } = require('../testbed/proc');
const { options } = require('./options');
const { quantile, median } = require('./report/measurements');

const CHROMIUM = '/usr/bin/chromium';
const TABS = 20;
const CHURN_PER_SECOND = 100;
/** Each tab's pod toggles every TOGGLE_EVERY_MS; the tabs take turns. */
const TOGGLE_EVERY_MS = 12_000;
const SETTLE_MS = 10_000;
const log = (...a) => console.error(...a);

/** In each page: stamps [Date.now(), pods with errors] whenever that count changes. */
function observeErrors() {
  const count = () => {
    const text = document.body.textContent;
    let n = 0;
    for (const m of text.matchAll(/(\d+) pods? with errors/g)) n += Number(m[1]);
    return n;
  };
  window.benchErrors = [];
  let last = count();
  new MutationObserver(() => {
    const n = count();
    if (n !== last) {
      last = n;
      window.benchErrors.push([Date.now(), n]);
    }
  }).observe(document.body, { subtree: true, childList: true, characterData: true });
  return last;
}

/** Entities with a pod, spread over the fleet's clusters: one per tab. */
function tabEntities(info) {
  const step = Math.floor(info.withPods.length / TABS);
  return Array.from({ length: TABS }, (_, i) => info.withPods[i * step]);
}

/**
 * A headless Chromium on the page's `origin`: `tab(name, viewer)` opens a tab of entity `name` and
 * waits until it shows its pods; `close()` ends the browser, then the origin.
 */
async function browse(origin) {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  const tab = async (name, viewer = 0) => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${origin.url}/?entity=${name}&viewer=${viewer}`);
    await page.waitForFunction(() => /No pods with errors/.test(document.body.textContent), null, {
      timeout: 120_000,
      polling: 100,
    });
    return page;
  };
  return { tab, close: async () => (await browser.close(), await origin.close()) };
}

/**
 * A variant's backend (its own process), the page's origin in front of it and a browser; `tab(name)`
 * opens a tab of entity `name` and waits until it shows its pods; `close()` ends all three.
 */
async function startVariant(info, files, variant, refreshMs, { viewers = false } = {}) {
  const backend = startBackend(variant, info, { viewers });
  const { port } = await backend.ready;
  const origin = await startOrigin(files, port, (url) => {
    const query = new URL(url, 'http://origin').searchParams;
    const index = Number(query.get('viewer'));
    const viewer = viewers ? { viewer: { index, token: info.viewerTokens[index] } } : {};
    return variant === 'live'
      ? { entity: entityOf(query.get('entity')), refreshIntervalMs: refreshMs, ...viewer }
      : { entity: entityOf(query.get('entity')), stock: true, ...viewer };
  });
  const { tab, close } = await browse(origin);
  return { backend, origin, tab, close: async () => (await close(), await backend.stop()) };
}

/** Opens a tab per entity of `tabEntities(info)`, each ready and showing no pod with errors. */
async function openTabs(clusters, info, openTab) {
  const tabs = [];
  for (const [viewer, name] of tabEntities(info).entries()) {
    // Ready, whatever the last variant left it as.
    await clusters.request({ cmd: 'toggle', entity: name, crashing: false });
    const page = await openTab(name, viewer);
    const errors = await page.evaluate(observeErrors);
    if (errors !== 0) throw new Error(`tab ${name} starts with ${errors} pods with errors`);
    tabs.push({ name, page, crashing: false, toggles: [] });
  }
  return tabs;
}

/** `seconds` of churn, each tab's pod toggling its crash-loop in turn: resolves to the churn's changes. */
async function churnAndToggle(clusters, tabs, seconds) {
  const churnStarted = Date.now();
  const churn = clusters.request({ cmd: 'churn', perSecond: CHURN_PER_SECOND, seconds });
  const toggleEvery = TOGGLE_EVERY_MS / tabs.length;
  for (let n = 0; Date.now() - churnStarted < seconds * 1000 - TOGGLE_EVERY_MS; n++) {
    const due = churnStarted + n * toggleEvery;
    if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
    const tab = tabs[n % tabs.length];
    tab.crashing = !tab.crashing;
    await clusters.request({ cmd: 'toggle', entity: tab.name, crashing: tab.crashing });
    tab.toggles.push({ at: Date.now(), errors: tab.crashing ? 1 : 0 });
  }
  const { changes } = await churn;
  return changes;
}

/**
 * The toggles' figures of `tabs`: how many, how many not shown, p50 and p99 latency (a toggle's:
 * the first stamp after it with its count, before the tab's next toggle).
 */
async function toggleFigures(tabs) {
  const latencies = [];
  let missed = 0;
  for (const tab of tabs) {
    const stamps = await tab.page.evaluate(() => window.benchErrors);
    tab.toggles.forEach((toggle, k) => {
      const until = tab.toggles[k + 1]?.at ?? Infinity;
      const seen = stamps.find(([at, n]) => at >= toggle.at && at < until && n === toggle.errors);
      if (seen) latencies.push(seen[0] - toggle.at);
      else missed += 1;
    });
  }
  return {
    toggles: latencies.length + missed,
    missed,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
  };
}

/** The report's rows of toggleFigures' figures; `p99Note` is the p99 row's note. */
const toggleRows = (p99Note) => [
  ['change to DOM p50 (ms)', 'p50'],
  ['change to DOM p99 (ms)', 'p99', 0, p99Note],
  ['toggles not shown before the next', 'missed'],
];

/**
 * measureRuns over the fleet (its clusters knowing `viewers` viewers' tokens) and the tabs' bundle,
 * by `measure(clusters, info, files, variant)`: the runs and the fleet's `info`.
 */
async function measureTabRuns(runCount, orderOf, what, measure, viewers = 0) {
  const { clusters, info } = await startFleet(viewers);
  const files = await bundle();
  const runs = await measureRuns(runCount, orderOf, what, (variant) =>
    measure(clusters, info, files, variant),
  );
  clusters.stop();
  return { runs, info };
}

async function measure(clusters, info, files, variant, { seconds, idleSeconds, refreshMs, viewers }) {
  const started = await startVariant(info, files, variant, refreshMs, { viewers });
  const { backend, origin, tab: openTab, close } = started;
  const pid = backend.proc.pid;
  try {
    const tabs = await openTabs(clusters, info, openTab);
    log(`  ${variant}: ${TABS} tabs loaded; settling ${SETTLE_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, SETTLE_MS));

    const idleFrom = origin.kubernetesRequests.length;
    const idle0 = { main: threadCpu(pid), browser: treeCpu(process.pid, 'chrom') };
    await new Promise((r) => setTimeout(r, idleSeconds * 1000));
    const idleRequests = origin.kubernetesRequests.length - idleFrom;
    const idle1 = { main: threadCpu(pid), browser: treeCpu(process.pid, 'chrom') };
    log(`  ${variant}: ${idleRequests} requests in ${idleSeconds} s idle; churn for ${seconds} s`);

    const requests0 = origin.kubernetesRequests.length;
    const { signals: signals0 } = await backend.request({ cmd: 'signals' });
    const cpu0 = { main: threadCpu(pid), all: processCpu(pid), browser: treeCpu(process.pid, 'chrom') };
    const churnStarted = Date.now();
    const changes = await churnAndToggle(clusters, tabs, seconds);
    const minutes = (Date.now() - churnStarted) / 60_000;
    const cpu1 = { main: threadCpu(pid), all: processCpu(pid), browser: treeCpu(process.pid, 'chrom') };
    const requests = origin.kubernetesRequests.length - requests0;
    const { signals: signals1 } = await backend.request({ cmd: 'signals' });
    const toggled = await toggleFigures(tabs);
    const signals = signals1 - signals0;
    return {
      variant,
      ...toggled,
      idleRequestsPerMinute: (idleRequests * 60) / idleSeconds,
      idleBackendMainCpuPerMinute: ((idle1.main - idle0.main) * 60) / idleSeconds,
      idleBrowserCpuPerMinute: ((idle1.browser - idle0.browser) * 60) / idleSeconds,
      churnRequestsPerMinute: requests / minutes,
      signalsPerMinute: signals / minutes,
      requestsPerSignal: signals > 0 ? requests / signals : NaN,
      changes: changes + toggled.toggles,
      backendMainCpuPerMinute: (cpu1.main - cpu0.main) / minutes,
      backendCpuPerMinute: (cpu1.all - cpu0.all) / minutes,
      browserCpuPerMinute: (cpu1.browser - cpu0.browser) / minutes,
    };
  } finally {
    await close();
  }
}

/** The bus's rows after `id`: their count and how many named each channel. */
async function busRows(db, afterId) {
  const rows = await db('event_bus_events').where('id', '>', afterId).select('id', 'data_json');
  const byChannel = new Map();
  for (const row of rows) {
    // { payload: the signal, metadata }
    const channel = JSON.parse(row.data_json)?.payload?.channel;
    if (channel) byChannel.set(channel, (byChannel.get(channel) ?? 0) + 1);
  }
  const lastId = rows.reduce((max, row) => Math.max(max, Number(row.id)), afterId);
  return { count: rows.length, byChannel, lastId };
}

/** The live tabs on `count` replicas (--replicas). */
async function measureReplicas(clusters, info, files, count, seconds) {
  const cluster = await startReplicas(
    count,
    { url: info.clusters[0].url },
    {
      clusters: clusterConfigs(info),
      entities: entities(ENTITIES),
      objectTypes: null,
      readyMs: 180_000,
    },
  );
  const { balancer, replicas, postgres } = cluster;
  const db = eventsDatabase(postgres);
  const origin = await startOrigin(files, balancer.port, (url) => ({
    entity: entityOf(new URL(url, 'http://origin').searchParams.get('entity')),
    refreshIntervalMs: 500,
  }));
  const { tab: openTab, close } = await browse(origin);
  try {
    await clusters.request({ cmd: 'requests' }); // reset the clusters' counts
    const tabs = await openTabs(clusters, info, openTab);
    const { byKind } = await clusters.request({ cmd: 'requests' });
    log(`  ${count} replica(s): ${tabs.length} tabs loaded (${byKind.watch} WATCHes); settling`);
    await new Promise((r) => setTimeout(r, SETTLE_MS));

    const { lastId: rows0 } = await busRows(db, 0);
    const requests0 = origin.kubernetesRequests.length;
    const pids = replicas.map((r) => r.pid);
    const cpu0 = pids.map((pid) => threadCpu(pid));
    const started = Date.now();
    const changes = await churnAndToggle(clusters, tabs, seconds);
    const minutes = (Date.now() - started) / 60_000;
    const cpu1 = pids.map((pid) => threadCpu(pid));
    const rss = pids.map((pid) => rssBytes(pid));
    await new Promise((r) => setTimeout(r, 1000)); // the last signals' refetches
    const bus = await busRows(db, rows0);
    const requests = origin.kubernetesRequests.slice(requests0);
    const toggled = await toggleFigures(tabs);
    // Each tab's refetches per signal on its channel.
    const perTab = tabs.map((tab) => {
      const signals = bus.byChannel.get(`kubernetes:component:default/${tab.name}`) ?? 0;
      const refetches = requests.filter((r) => r.url.endsWith(`/services/${tab.name}`)).length;
      return signals > 0 ? refetches / signals : NaN;
    });
    return {
      replicas: count,
      ...toggled,
      refetchesPerSignalPerTab: median(perTab.filter(Number.isFinite)),
      busRowsPerSecond: bus.count / (minutes * 60),
      changesPerSecond: changes / (minutes * 60),
      watchesPerCluster: byKind.watch / info.clusters.length,
      mainCpuPerMinute: median(cpu1.map((c, i) => (c - cpu0[i]) / minutes)),
      rssMiB: median(rss) / 1048576,
    };
  } finally {
    await close();
    await db.destroy();
    await cluster.stop();
  }
}

async function main(argv) {
  const { num, flag, saveJson } = options(
    argv,
    /live|viewers|replicas=\d+|seconds=\d+|idle=\d+|refresh=\d+|runs=\d+|json=.+/,
    'backstage-live.js',
  );
  if (!fs.existsSync(CHROMIUM)) {
    console.error(`${CHROMIUM} is absent: apt-get install chromium`);
    process.exit(2);
  }
  const seconds = num('seconds', 120);
  const idleSeconds = num('idle', 60);
  /** The live tabs' refreshIntervalMs: how often they poll memory. */
  const refreshMs = num('refresh', 500);
  const runCount = num('runs', 1);
  if (seconds * 1000 < 2 * TOGGLE_EVERY_MS) {
    console.error(`--seconds must be at least ${(2 * TOGGLE_EVERY_MS) / 1000}`);
    process.exit(2);
  }
  if (num('replicas')) return replicasMain(num('replicas'), num('seconds', 60), runCount, saveJson);
  const viewers = flag('viewers');
  const { runs, info } = await measureTabRuns(
    runCount,
    (run) => (run % 2 ? ['live', 'stock'] : ['stock', 'live']),
    (variant) => `${variant}, ${TABS} tabs`,
    (clusters, info, files, variant) =>
      measure(clusters, info, files, variant, { seconds, idleSeconds, refreshMs, viewers }),
    viewers ? TABS : 0,
  );
  const rows = [
    ...toggleRows('goal ≤ 1000 (live)'),
    ['requests/min to /api/kubernetes, idle', 'idleRequestsPerMinute', 1, 'goal 0 (live)'],
    ['backend main-thread CPU (s/min), idle', 'idleBackendMainCpuPerMinute', 2],
    ['browser CPU, 20 tabs (s/min), idle', 'idleBrowserCpuPerMinute', 2],
    ['requests/min to /api/kubernetes, churn', 'churnRequestsPerMinute', 1],
    ['signals published/min, churn', 'signalsPerMinute', 1],
    ['requests per signal, churn', 'requestsPerSignal', 2, 'goal ≤ 1 refetch per signal'],
    ['backend main-thread CPU (s/min), churn', 'backendMainCpuPerMinute', 2],
    ['backend process CPU (s/min), churn', 'backendCpuPerMinute', 2],
    ['browser CPU, 20 tabs (s/min), churn', 'browserCpuPerMinute', 2],
  ];
  const lines = [
    `## The live Kubernetes tab: 20 stock polling tabs vs 20 live tabs${viewers ? ", each its viewer's own credential (oidc)" : ''}`,
    '',
    `6 clusters (+20 ms each), ${OBJECTS} objects, ${ENTITIES} entities; ${TABS} Chromium tabs, one ` +
      `entity each (live: refreshIntervalMs ${refreshMs}); ${idleSeconds} s idle, then ${seconds} s of ${CHURN_PER_SECOND} pod changes/s ` +
      `plus a crash-loop toggle every ${TOGGLE_EVERY_MS / TABS} ms (each tab's every ` +
      `${TOGGLE_EVERY_MS / 1000} s), spread over the ${info.withPods.length} entities with a pod; ` +
      `${runCount} run(s), medians; ${runs[0].live.toggles} toggles per run. The browsers, the ` +
      'backend and the clusters share this machine.',
    '',
    ...comparisonTable(rows, runs, ['stock', 'stock'], ['live', 'live'], 'live ÷ stock'),
  ];
  console.log(lines.join('\n'));
  saveJson({ seconds, idleSeconds, refreshMs, viewers, runs });
}

/** `--replicas=N`: the live tabs on `count` replicas against one. */
async function replicasMain(count, seconds, runCount, saveJson) {
  const { runs } = await measureTabRuns(
    runCount,
    (run) => (run % 2 ? [count, 1] : [1, count]),
    (n) => `${n} replica(s), ${TABS} tabs, ${seconds} s`,
    (clusters, info, files, n) => measureReplicas(clusters, info, files, n, seconds),
  );
  const rows = [
    ...toggleRows('goal ≤ 1000'),
    ['refetches per signal per tab', 'refetchesPerSignalPerTab', 2, 'goal 1.00'],
    ['bus rows per second', 'busRowsPerSecond', 1, '≤ entities changed per minInterval'],
    ['changes per second (churn and toggles)', 'changesPerSecond', 1],
    ['WATCHes per cluster while the tabs opened', 'watchesPerCluster', 1],
    ['main-thread CPU per replica (s/min), median', 'mainCpuPerMinute', 2],
    ['RSS per replica (MiB), median', 'rssMiB'],
  ];
  console.log(
    [
      `## The live tab on ${count} replicas against one (PostgreSQL, events backend)`,
      '',
      `6 clusters (+20 ms each), ${OBJECTS} objects, ${ENTITIES} entities; ${TABS} Chromium tabs ` +
        `behind a round-robin balancer; ${seconds} s of ${CHURN_PER_SECOND} pod changes/s plus crash-loop ` +
        `toggles; ${runCount} run(s), medians. Everything shares this machine.`,
      '',
      ...comparisonTable(rows, runs, ['1 replica', 1], [`${count} replicas`, count], `${count} ÷ 1`),
    ].join('\n'),
  );
  saveJson({ count, seconds, runs });
}

module.exports = { main, startVariant, CHROMIUM };

if (require.main === module) main(process.argv.slice(2)).catch(failRun);
