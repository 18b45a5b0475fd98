#!/usr/bin/env node
'use strict';
// `npm run bench:fleet` → node bench/fleet.js [--informers=100,1000] [--clusters=1] [--objects=2]
//                                [--changes=2000] [--rate=200] [--runs=3] [--strip] [--json=file]
//                                [--against=<checkout, built>] [--watches] [--gather-ms=N]
//
// Main-thread cost of a fleet of informers: `clusters` simulated API servers (bench/clusters/fleet.js,
// their own process, HTTPS with h2) hold `objects` ConfigMaps in each namespace; a fresh client
// (bench/fleet-worker.js) opens one informer per cluster and namespace through one watcher, one
// consumer each, and once all synced the servers modify `changes` ConfigMaps at `rate` a second,
// round-robin. Medians over `runs` (informer counts and builds alternating run by run) of the
// main-thread CPU per change (schedstat), the event-loop utilisation, and the RSS growth after
// sync against the JSON held. --against: that build too (bench/builds.js), and this ÷ that.
// --watches: plain watches with sendInitialEvents in place of the informers (no cache).
// --gather-ms: the watchers gather consumers' wake-ups over N ms. Bounded; every child dies with
// this one. `--full` or `--types=N`: the full fleet of issue 18 instead (bench/fleet-full.js).

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
const { opt, num, flag, saveJson } = options(
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
        console.error(
          `run ${run + 1}/${RUNS} ${name} informers=${informers}: ${result.cpuPerChangeUs.toFixed(1)} µs main-thread CPU per change, ` +
            `ELU ${(result.elu * 100).toFixed(2)} %, sync ${result.syncSeconds.toFixed(2)} s, RSS +${(result.rssGrowth / 2 ** 20).toFixed(0)} MiB`,
        );
      }
    }
  }
  const rows = PACKAGES.flatMap(([name]) =>
    INFORMERS.map((n) => {
      const rs = results.get(cell(name, n));
      const med = (f) => median(rs.map(f));
      return {
        package: name,
        informers: n,
        cpuPerChangeUs: med((r) => r.cpuPerChangeUs),
        elu: med((r) => r.elu),
        syncSeconds: med((r) => r.syncSeconds),
        rssGrowthMiB: med((r) => r.rssGrowth) / 2 ** 20,
        jsonMiB: rs[0].jsonBytes / 2 ** 20,
        runs: rs.map((r) => Number(r.cpuPerChangeUs.toFixed(1))),
      };
    }),
  );
  const p = (...a) => console.log(...a);
  p(
    `\n${CLUSTERS} cluster(s), ${OBJECTS} ConfigMaps per namespace, ${CHANGES} changes at ${RATE}/s, ` +
      `medians of ${RUNS} runs, strip ${STRIP ? 'on' : 'off'}${WATCHES ? ', plain watches in place of informers' : ''}` +
      `${PACKAGES.length > 1 ? `, against ${PACKAGES[1][1]}` : ''}\n`,
  );
  p('| build | informers | main-thread CPU per change (runs) | ELU | sync | RSS growth | JSON held |');
  p('|---|---|---|---|---|---|---|');
  for (const r of rows) {
    p(
      `| ${r.package} | ${r.informers} | ${r.cpuPerChangeUs.toFixed(1)} µs (${r.runs.join(', ')}) | ${(r.elu * 100).toFixed(2)} % | ` +
        `${r.syncSeconds.toFixed(2)} s | ${r.rssGrowthMiB.toFixed(0)} MiB | ${r.jsonMiB.toFixed(1)} MiB |`,
    );
  }
  const cpu = (name, n) => rows.find((r) => r.package === name && r.informers === n).cpuPerChangeUs;
  p('');
  for (const [name] of PACKAGES) {
    for (const n of INFORMERS.slice(1))
      p(
        `${name}: CPU per change, ${n} ÷ ${INFORMERS[0]} informers: ${(cpu(name, n) / cpu(name, INFORMERS[0])).toFixed(2)}×`,
      );
  }
  if (PACKAGES.length > 1) {
    for (const n of INFORMERS)
      p(
        `${n} informers: CPU per change, this ÷ against: ${(cpu('this', n) / cpu('against', n)).toFixed(2)}×`,
      );
  }
  saveJson({ rows, CLUSTERS, OBJECTS, CHANGES, RATE, RUNS, STRIP });
}

main().catch(failRun);
