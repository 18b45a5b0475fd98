'use strict';
// `npm run bench:backstage -- --live --replicas=N [--seconds=S] [--runs=R] [--json=file]`
//
// The live tab on N backend replicas against one, side by side in one run: each variant is
// fresh replicas of the real Kubernetes, Signals and events backends with
// kube-watch-native-backstage (testbed/replica-backend.js, one process each) on a throwaway
// PostgreSQL of its own, a round-robin balancer in front (the tabs' loads and WebSockets spread
// over the replicas), and 20 Chromium tabs over the six simulated clusters of
// bench/backstage-live.js, with 100 pod changes a second plus each tab's crash-loop toggles.
// Measured: change-to-DOM latency of the toggles, refetches per signal each tab got, bus rows
// per second (the events backend's event_bus_events: it stores an event only when some
// replica's subscriber was not told in-process, so one replica alone stores none), WATCHes the clusters saw while the tabs
// opened, and each replica's RSS and main-thread CPU per minute of churn. Loopback only; every
// child ends with this process. Progress on stderr, the report on stdout.

const fs = require('node:fs');
const knexFactory = require('knex');
const { chromium } = require('playwright-core');
const { startOrigin } = require('../testbed/live-helpers');
const { startReplicas } = require('../testbed/replica-helpers');
const { failRun } = require('./children');
const {
  OBJECTS,
  ENTITIES,
  entityOf,
  entities,
  clusterConfigs,
  comparisonTable,
} = require('./backstage-common');
const { threadCpu, rssBytes } = require('./measure');
const { options } = require('./options');
const { median } = require('./report/measurements');
const live = require('./backstage-live');

const log = (...a) => console.error(...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The events backend's database on the variant's PostgreSQL (Backstage names it per plugin). */
const eventsDatabase = (postgres) =>
  knexFactory({
    client: 'pg',
    connection: { ...postgres.connection, database: 'backstage_plugin_events' },
    pool: { min: 0, max: 1 },
  });

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

async function measure(clusters, info, files, count, seconds) {
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
  const browser = await chromium.launch({
    executablePath: live.CHROMIUM,
    headless: true,
    args: ['--no-sandbox'],
  });
  try {
    const openTab = live.tabOpener(browser, origin);
    await clusters.request({ cmd: 'requests' }); // reset the clusters' counts
    const tabs = await live.openTabs(clusters, info, openTab);
    const { byKind } = await clusters.request({ cmd: 'requests' });
    log(`  ${count} replica(s): ${tabs.length} tabs loaded (${byKind.watch} WATCHes); settling`);
    await sleep(live.SETTLE_MS);

    const { lastId: rows0 } = await busRows(db, 0);
    const requests0 = origin.kubernetesRequests.length;
    const pids = replicas.map((r) => r.pid);
    const cpu0 = pids.map((pid) => threadCpu(pid));
    const started = Date.now();
    const changes = await live.churnAndToggle(clusters, tabs, seconds);
    const minutes = (Date.now() - started) / 60_000;
    const cpu1 = pids.map((pid) => threadCpu(pid));
    const rss = pids.map((pid) => rssBytes(pid));
    await sleep(1000); // the last signals' refetches
    const bus = await busRows(db, rows0);
    const requests = origin.kubernetesRequests.slice(requests0);
    const toggled = await live.toggleFigures(tabs);
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
    await browser.close();
    await origin.close();
    await db.destroy();
    await cluster.stop();
  }
}

async function main(argv) {
  const { opt, num } = options(
    argv,
    /live|replicas=\d+|seconds=\d+|runs=\d+|json=.+/,
    'backstage-replicas.js',
  );
  const count = num('replicas', 3);
  const seconds = num('seconds', 60);
  const runCount = num('runs', 1);
  if (!fs.existsSync(live.CHROMIUM)) {
    console.error(`${live.CHROMIUM} is absent: apt-get install chromium`);
    process.exit(2);
  }
  const { runs } = await live.measureTabRuns(
    runCount,
    (run) => (run % 2 ? [count, 1] : [1, count]),
    (n) => `${n} replica(s), ${live.TABS} tabs, ${seconds} s`,
    (clusters, info, files, n) => measure(clusters, info, files, n, seconds),
  );
  const rows = [
    ...live.toggleRows('goal ≤ 1000'),
    ['refetches per signal per tab', 'refetchesPerSignalPerTab', 2, 'goal 1.00'],
    ['bus rows per second', 'busRowsPerSecond', 1, '≤ entities changed per minInterval'],
    ['changes per second (churn and toggles)', 'changesPerSecond', 1, ''],
    ['WATCHes per cluster while the tabs opened', 'watchesPerCluster', 1, ''],
    ['main-thread CPU per replica (s/min), median', 'mainCpuPerMinute', 2, ''],
    ['RSS per replica (MiB), median', 'rssMiB', 0, ''],
  ];
  console.log(
    [
      `## The live tab on ${count} replicas against one (PostgreSQL, events backend)`,
      '',
      `6 clusters (+20 ms each), ${OBJECTS} objects, ${ENTITIES} entities; ${live.TABS} Chromium tabs ` +
        `behind a round-robin balancer; ${seconds} s of ${live.CHURN_PER_SECOND} pod changes/s plus crash-loop ` +
        `toggles; ${runCount} run(s), medians. Everything shares this machine.`,
      '',
      ...comparisonTable(rows, runs, ['1 replica', 1], [`${count} replicas`, count], `${count} ÷ 1`),
    ].join('\n'),
  );
  const json = opt('json');
  if (json) fs.writeFileSync(json, JSON.stringify({ count, seconds, runs }, null, 2));
}

module.exports = { main };

if (require.main === module) main(process.argv.slice(2)).catch(failRun);
