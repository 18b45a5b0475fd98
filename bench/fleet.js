#!/usr/bin/env node
'use strict';
// `npm run bench:fleet` → node bench/fleet.js [--informers=100,1000] [--clusters=1] [--objects=2]
//                                [--changes=2000] [--rate=200] [--runs=3] [--strip] [--json=file]
//                                [--against=<package directory>] [--watches] [--gather-ms=N]
//
// Main-thread cost of a fleet of informers: `clusters` simulated API servers (bench/fleet-server.js,
// one process of their own, HTTPS with h2) hold `objects` ConfigMaps in each namespace; the
// client (this file with --worker, a fresh process per measurement) opens one informer per
// cluster and namespace through one watcher, with one consumer each that reads every change,
// waits for every informer to sync, then has the servers modify `changes` ConfigMaps at `rate`
// per second, spread round-robin over every informer, and measures until every consumer has
// read its share. Figures, each the median over `runs`, the informer counts alternating run by
// run:
//   - main-thread CPU per change (µs), from /proc/self/task/<pid>/schedstat (ns, this thread only);
//   - event-loop utilisation during the changes;
//   - process RSS growth after sync, against the JSON the servers hold.
// With --against, every measurement is made with that build of the package too (a directory
// holding its index.js, lib/ and built addon, e.g. an export of main), interleaved with this
// one's, and the report adds this ÷ that.
// With --watches, plain watches (`watchResource` with sendInitialEvents, one per cluster and
// namespace, each read by a for await loop) stand in for the informers: their synced is the
// bookmark that ends the initial events, and no cache is held.
// --gather-ms: the watchers (of every build) gather consumers' wake-ups over N ms (`gatherMs`).
// Every process is bounded: the worker gives up after 120 s, and every child dies with this one.
//
// `--full` or `--types=N` run the full fleet of issue 18 instead (20 resource types per cluster,
// one informer per cluster and type, change latency, loop delay, an outage, client-node side by
// side): see bench/fleet-full.js.

const { fork } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const { runAsWorker, giveUpAfter, stderrWatcher, readyForChanges } = require('./worker-main');

if (runAsWorker(worker)) return;

const argv = process.argv.slice(2);
if (argv.some((a) => a === '--full' || a.startsWith('--types='))) {
  // The full fleet of issue 18: 20 resource types per cluster (bench/fleet-full.js).
  require('./fleet-full')
    .run(argv)
    .then(
      () => process.exit(0),
      (err) => {
        console.error(err.message ?? err);
        process.exit(1);
      },
    );
  return;
}
const opt = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
for (const a of argv) {
  if (
    !/^--(informers=[\d,]+|against=.+|clusters=\d+|objects=\d+|changes=\d+|rate=\d+|runs=\d+|strip|watches|gather-ms=\d+|json=.+)$/.test(
      a,
    )
  ) {
    console.error(`unknown option ${a}; see the header of bench/fleet.js`);
    process.exit(2);
  }
}
const INFORMERS = (opt('informers') ?? '100,1000').split(',').map(Number);
const CLUSTERS = Number(opt('clusters') ?? 1);
const OBJECTS = Number(opt('objects') ?? 2);
const CHANGES = Number(opt('changes') ?? 2000);
const RATE = Number(opt('rate') ?? 200);
const RUNS = Number(opt('runs') ?? 3);
const STRIP = argv.includes('--strip');
const WATCHES = argv.includes('--watches');
const GATHER_MS = opt('gather-ms') === undefined ? undefined : Number(opt('gather-ms'));
const PACKAGES = [['this', path.join(__dirname, '..', 'packages', 'kube-watch-native')]];
if (opt('against')) PACKAGES.push(['against', path.resolve(opt('against'))]);
const log = (...a) => console.error(...a);

const { track, killAll } = require('./children');

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Forks the servers for `informers` informers over CLUSTERS clusters; resolves to an IPC handle. */
function startServers(informers) {
  const namespaces = Math.ceil(informers / CLUSTERS);
  const child = track(
    fork(path.join(__dirname, 'fleet-server.js'), [CLUSTERS, namespaces, OBJECTS].map(String), {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  const pending = new Map();
  let nextId = 0;
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('fleet servers did not start within 120 s')), 120000);
    child.on('exit', (code) => reject(new Error(`fleet servers exited (${code})`)));
    child.on('message', (msg) => {
      if (msg.ready) {
        clearTimeout(t);
        resolve({
          namespaces,
          ask: (cmd) =>
            new Promise((res) => {
              const id = nextId++;
              pending.set(id, res);
              child.send({ ...cmd, id });
            }),
          stop: () => child.send({ cmd: 'stop' }),
        });
      } else if (pending.has(msg.id)) {
        pending.get(msg.id)(msg);
        pending.delete(msg.id);
      }
    });
  });
}

/** One measurement: `informers` informers of package `pkg` against fresh servers. */
async function measure(informers, pkg) {
  const servers = await startServers(informers);
  const info = await servers.ask({ cmd: 'info' });
  const config = {
    pkg,
    urls: info.urls,
    namespaces: servers.namespaces,
    informers,
    strip: STRIP,
    watches: WATCHES,
    gatherMs: GATHER_MS,
  };
  const result = await new Promise((resolve, reject) => {
    const child = track(
      fork(__filename, ['--worker', JSON.stringify(config)], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
    let out = null;
    child.on('message', (msg) => {
      if (msg.cmd === 'ready') {
        child.send({ cmd: 'go', changes: CHANGES });
        servers.ask({ cmd: 'changes', count: CHANGES, perSecond: RATE });
      } else out = msg;
    });
    child.on('exit', (code) => (out ? resolve(out) : reject(new Error(`worker exited (${code})`))));
  });
  servers.stop();
  return { ...result, jsonBytes: info.jsonBytes };
}

async function main() {
  const results = new Map();
  const cell = (name, n) => `${name}/${n}`;
  for (let run = 0; run < RUNS; run++) {
    const counts = run % 2 ? [...INFORMERS].reverse() : INFORMERS;
    const packages = run % 2 ? [...PACKAGES].reverse() : PACKAGES;
    for (const informers of counts) {
      for (const [name, pkg] of packages) {
        const result = await measure(informers, pkg);
        if (!results.has(cell(name, informers))) results.set(cell(name, informers), []);
        results.get(cell(name, informers)).push(result);
        log(
          `run ${run + 1}/${RUNS} ${name} informers=${informers}: ${result.cpuPerChangeUs.toFixed(1)} µs main-thread CPU per change, ` +
            `ELU ${(result.elu * 100).toFixed(2)} %, sync ${result.syncSeconds.toFixed(2)} s, RSS +${(result.rssGrowth / 2 ** 20).toFixed(0)} MiB`,
        );
      }
    }
  }
  const rows = [];
  for (const [name] of PACKAGES) {
    for (const n of INFORMERS) {
      const rs = results.get(cell(name, n));
      rows.push({
        package: name,
        informers: n,
        cpuPerChangeUs: median(rs.map((r) => r.cpuPerChangeUs)),
        elu: median(rs.map((r) => r.elu)),
        syncSeconds: median(rs.map((r) => r.syncSeconds)),
        rssGrowthMiB: median(rs.map((r) => r.rssGrowth)) / 2 ** 20,
        jsonMiB: rs[0].jsonBytes / 2 ** 20,
        runs: rs.map((r) => Number(r.cpuPerChangeUs.toFixed(1))),
      });
    }
  }
  console.log(
    `\n${CLUSTERS} cluster(s), ${OBJECTS} ConfigMaps per namespace, ${CHANGES} changes at ${RATE}/s, ` +
      `medians of ${RUNS} runs, strip ${STRIP ? 'on' : 'off'}${WATCHES ? ', plain watches in place of informers' : ''}` +
      `${PACKAGES.length > 1 ? `, against ${PACKAGES[1][1]}` : ''}\n`,
  );
  console.log(
    '| build | informers | main-thread CPU per change (runs) | ELU | sync | RSS growth | JSON held |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.package} | ${r.informers} | ${r.cpuPerChangeUs.toFixed(1)} µs (${r.runs.join(', ')}) | ${(r.elu * 100).toFixed(2)} % | ` +
        `${r.syncSeconds.toFixed(2)} s | ${r.rssGrowthMiB.toFixed(0)} MiB | ${r.jsonMiB.toFixed(1)} MiB |`,
    );
  }
  const row = (name, n) => rows.find((r) => r.package === name && r.informers === n);
  console.log('');
  for (const [name] of PACKAGES) {
    for (const n of INFORMERS.slice(1)) {
      const ratio = row(name, n).cpuPerChangeUs / row(name, INFORMERS[0]).cpuPerChangeUs;
      console.log(`${name}: CPU per change, ${n} ÷ ${INFORMERS[0]} informers: ${ratio.toFixed(2)}×`);
    }
  }
  if (PACKAGES.length > 1) {
    for (const n of INFORMERS) {
      const ratio = row('this', n).cpuPerChangeUs / row('against', n).cpuPerChangeUs;
      console.log(`${n} informers: CPU per change, this ÷ against: ${ratio.toFixed(2)}×`);
    }
  }
  const json = opt('json');
  if (json)
    fs.writeFileSync(json, JSON.stringify({ rows, CLUSTERS, OBJECTS, CHANGES, RATE, RUNS, STRIP }, null, 2));
}

/** Nanoseconds this (the main) thread has run, from the scheduler's own accounting. */
function mainThreadNs() {
  const text = fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8');
  return Number(text.split(' ')[0]);
}

async function worker({ pkg, urls, namespaces, informers, strip, watches, gatherMs }) {
  const certs = require('../packages/kube-watch-native/sim/certs');
  giveUpAfter('fleet worker', 120);
  const watcher = stderrWatcher(pkg, gatherMs === undefined ? {} : { gatherMs });
  const rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  const opened = [];
  let received = 0;
  let wanted = Infinity;
  let reached = null;
  for (let i = 0; i < informers; i++) {
    const url = urls[i % urls.length];
    const params = {
      clusterDetails: {
        name: `c${i % urls.length}`,
        url,
        caData: Buffer.from(certs.ca).toString('base64'),
      },
      credential: { type: 'bearer token', token: 'fleet-token' },
      group: '',
      apiVersion: 'v1',
      plural: 'configmaps',
    };
    const options = {
      namespace: `ns-${Math.floor(i / urls.length) % namespaces}`,
      ...(strip && {
        strip: [
          'metadata.managedFields',
          "metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']",
        ],
      }),
    };
    const onEvent = (event) => {
      if (event.type === 'MODIFIED' && event.object.data.round !== undefined) {
        received++;
        if (received >= wanted) reached?.();
      }
    };
    if (watches) {
      opened.push(openWatch(watcher, params, options, onEvent));
      continue;
    }
    const informer = watcher.informer(params, options);
    opened.push(informer);
    (async () => {
      for await (const event of informer) onEvent(event);
    })();
  }
  await Promise.all(opened.map((i) => i.synced));
  const syncSeconds = (performance.now() - started) / 1000;
  // Let the initial ADDED events drain before the window opens.
  await new Promise((r) => setTimeout(r, 500));
  const rssGrowth = process.memoryUsage().rss - rssBefore;
  const done = new Promise((resolve) => {
    reached = resolve;
  });
  const changes = await readyForChanges();
  received = 0;
  wanted = changes;
  const cpu0 = mainThreadNs();
  const elu0 = performance.eventLoopUtilization();
  await done;
  const cpuNs = mainThreadNs() - cpu0;
  const elu = performance.eventLoopUtilization(elu0).utilization;
  for (const informer of opened) informer.close();
  return { cpuPerChangeUs: cpuNs / 1000 / changes, elu, syncSeconds, rssGrowth };
}

/**
 * A plain watch read by a for await loop that hands each event to `onEvent`, shaped as the
 * informers are used above: `synced` (the bookmark that ends the initial events), `close()`.
 */
function openWatch(watcher, params, options, onEvent) {
  const controller = new AbortController();
  const stream = watcher.watchResource(params, {
    ...options,
    sendInitialEvents: true,
    resourceVersionMatch: 'NotOlderThan',
    allowWatchBookmarks: true,
    signal: controller.signal,
  });
  let sync;
  const synced = new Promise((resolve) => {
    sync = resolve;
  });
  (async () => {
    for await (const event of stream) {
      if (event.type === 'BOOKMARK') {
        if (event.object.metadata.annotations?.['k8s.io/initial-events-end']) sync();
      } else if (event.type === 'ERROR') console.error(`fleet worker: ${JSON.stringify(event.error)}`);
      else onEvent(event);
    }
  })();
  return { synced, close: () => controller.abort() };
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
