#!/usr/bin/env node
'use strict';
// `npm run bench:fleet` → node bench/fleet.js [--informers=100,1000] [--clusters=1] [--objects=2]
//                                [--changes=2000] [--rate=200] [--runs=3] [--strip] [--json=file]
//                                [--against=<checkout, built>] [--watches] [--gather-ms=N]
//
// Main-thread cost of a fleet of informers: `clusters` simulated API servers (bench/clusters/fleet.js,
// one process of their own, HTTPS with h2) hold `objects` ConfigMaps in each namespace; the
// client (bench/fleet-worker.js, a fresh process per measurement) opens one informer per
// cluster and namespace through one watcher, with one consumer each that reads every change,
// waits for every informer to sync, then has the servers modify `changes` ConfigMaps at `rate`
// per second, spread round-robin over every informer, and measures until every consumer has
// read its share. Figures, each the median over `runs`, the informer counts alternating run by
// run:
//   - main-thread CPU per change (µs), from /proc/self/task/<pid>/schedstat (ns, this thread only);
//   - event-loop utilisation during the changes;
//   - process RSS growth after sync (after collections), against the JSON the servers hold.
// With --against, every measurement is made with that build too (bench/builds.js), interleaved
// with this one's, and the report adds this ÷ that.
// With --watches, plain watches (`watchResource` with sendInitialEvents, one per cluster and
// namespace, each read by a for await loop) stand in for the informers: their synced is the
// bookmark that ends the initial events, and no cache is held.
// --gather-ms: the watchers (of every build) gather consumers' wake-ups over N ms (`gatherMs`).
// Every process is bounded: the worker gives up after its sync and window, and every child dies
// with this one.
//
// `--full` or `--types=N` run the full fleet of issue 18 instead (20 resource types per cluster,
// one informer per cluster and type, change latency, loop delay, an outage, client-node side by
// side): see bench/fleet-full.js.

const fs = require('node:fs');
const { build, THIS } = require('./builds');
const { failRun } = require('./children');
const { run: runFull, startServers, measure: measureOnce } = require('./fleet-full');
const { options } = require('./options');
const { median } = require('./report/measurements');

const argv = process.argv.slice(2);
if (argv.some((a) => a === '--full' || a.startsWith('--types='))) {
  // The full fleet of issue 18: 20 resource types per cluster (bench/fleet-full.js).
  runFull(argv).then(() => process.exit(0), failRun);
  return;
}
const { opt, num, flag } = options(
  argv,
  /informers=[\d,]+|against=.+|clusters=\d+|objects=\d+|changes=\d+|rate=\d+|runs=\d+|strip|watches|gather-ms=\d+|json=.+/,
  'fleet.js',
);
const INFORMERS = (opt('informers') ?? '100,1000').split(',').map(Number);
const CLUSTERS = num('clusters', 1);
const OBJECTS = num('objects', 2);
const CHANGES = num('changes', 2000);
const RATE = num('rate', 200);
const RUNS = num('runs', 3);
const STRIP = flag('strip');
const WATCHES = flag('watches');
const GATHER_MS = num('gather-ms', undefined);
const PACKAGES = [['this', THIS.watcher]];
if (opt('against')) PACKAGES.push(['against', build(opt('against')).watcher]);
const log = (...a) => console.error(...a);

/** One measurement: `informers` informers of package `pkg` against fresh servers. */
async function measure(informers, pkg) {
  const namespaces = Math.ceil(informers / CLUSTERS);
  const shape = { legacy: true, namespaces, perNamespace: OBJECTS };
  const servers = await startServers({}, CLUSTERS, 1, shape);
  const specs = Array.from({ length: informers }, (_, i) => ({
    cluster: i % CLUSTERS,
    namespace: `ns-${Math.floor(i / CLUSTERS) % namespaces}`,
    plural: 'configmaps',
  }));
  const config = { pkg, informers: specs, strip: STRIP, watches: WATCHES };
  const o = { gatherMs: GATHER_MS };
  const { ready, done } = await measureOnce('native', servers, o, config, CHANGES, CHANGES / RATE, null);
  await servers.stop();
  return { ...ready, ...done, jsonBytes: servers.jsonBytes };
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

main().catch(failRun);
