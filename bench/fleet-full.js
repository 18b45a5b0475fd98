'use strict';
// The full fleet of issue 18, run by bench/fleet.js when given --full or --types=N:
//   --full: 50 clusters × 20 types × 500 objects, 100 changes/s for 120 s, strip off and on, an
//   outage, the client-node comparison; --types=20 [--clusters=5] [--objects=20] [--namespaces=20]
//   [--bytes=1500] [--incompressible] [--rate=100] [--seconds=20] [--strip | --strip=both]
//   [--outage] [--outage-seconds=20] [--compare | --compare-only] [--compare-seconds=30]
//   [--compare-runs=2] [--no-compress] [--gather-ms=N] [--server-processes=N]
//   [--server-cpu-prof=<dir>] [--server-trace-gc] [--pkg=<checkout, built>] [--json=<file>]
//
// Servers (bench/clusters/fleet.js, as cheap as an honest API server can be): `clusters`
// simulators over `server-processes` processes, each cluster holding `objects` objects (~2.3 KB of
// JSON) of each of the first `types` types of testbed/fleet-objects.js over `namespaces`
// namespaces; their CPU in each sync is reported (--server-cpu-prof: a V8 profile of each into
// <dir>; --server-trace-gc: V8's GC trace lines among the report). The client
// (bench/fleet-worker.js, a fresh process per measurement) opens one informer per cluster × type;
// once all synced, the servers make `rate` changes a second for `seconds`, round-robin, each
// stamped with the time it was sent; main-thread CPU and ELU are measured over the first 60 % of
// the changes read (30 % with --outage), the event-loop delay over the next 30 % (15 %), then the
// slowest consumer's pending changes are sampled. --outage: at half the window one cluster stops
// and another answers 429 (Retry-After: 2) for `outage-seconds`: the others' latency by phase,
// the two's recovery, and every cache checked against its server at the end. --compare: a tenth
// of the fleet with this worker and bench/fleet-client-node.js, interleaved `compare-runs` times
// per strip setting (--compare-only: those alone). --incompressible: padding that LZ4 cannot pack;
// --no-compress: informers hold plain JSON; --gather-ms: the watcher's `gatherMs`; --pkg: another
// build (bench/builds.js). Bounded: give-ups follow from the options; every child dies with this.

const fs = require('node:fs');
const path = require('node:path');
const { build, THIS } = require('./builds');
const { options } = require('./options');
const { cluster, work } = require('./children');
const { TYPES } = require('../testbed/fleet-objects');
const { processCpu, threadCpu } = require('../testbed/proc');
const { median, quantile } = require('./report/measurements');

const T0 = performance.now();
const log = (...a) => console.error(`[${((performance.now() - T0) / 1000).toFixed(1).padStart(6)} s]`, ...a);
const MiB = 2 ** 20;

/** The options of a full fleet run, `--full` first filling in the issue's figures. */
function parseOptions(argv) {
  const { opt, num, flag } = options(
    argv,
    /full|types=\d+|clusters=\d+|objects=\d+|namespaces=\d+|bytes=\d+|incompressible|rate=\d+|seconds=\d+|strip|strip=both|outage|outage-seconds=\d+|compare|compare-only|compare-seconds=\d+|compare-runs=\d+|no-compress|gather-ms=\d+|server-processes=\d+|server-cpu-prof=.+|server-trace-gc|pkg=.+|json=.+/,
    'fleet-full.js',
  );
  const full = flag('full');
  const o = {
    clusters: num('clusters', full ? 50 : 5),
    types: num('types', 20),
    objects: num('objects', full ? 500 : 20),
    namespaces: num('namespaces', 20),
    bytes: num('bytes', 1500),
    incompressible: flag('incompressible'),
    rate: num('rate', 100),
    seconds: num('seconds', full ? 120 : 20),
    outage: full || flag('outage'),
    outageSeconds: num('outage-seconds', 20),
    compare: full || flag('compare') || flag('compare-only'),
    compareOnly: flag('compare-only'),
    compress: !flag('no-compress'),
    gatherMs: num('gather-ms', undefined),
    compareSeconds: num('compare-seconds', 30),
    compareRuns: num('compare-runs', 2),
    json: opt('json'),
    pkg: opt('pkg') && build(opt('pkg')).watcher,
    serverCpuProf: opt('server-cpu-prof'),
    serverTraceGc: flag('server-trace-gc'),
  };
  o.strips = full || opt('strip') === 'both' ? [false, true] : [flag('strip')];
  o.serverProcesses = Math.min(o.clusters, num('server-processes', Math.min(4, o.clusters)));
  if (o.types < 1 || o.types > TYPES.length) throw new Error(`--types must be 1 to ${TYPES.length}`);
  if (o.clusters < 1 || o.objects < 1 || o.rate < 1 || o.seconds < 1)
    throw new Error('--clusters, --objects, --rate and --seconds must be at least 1');
  if (o.outage && o.clusters < 3)
    throw new Error('--outage needs at least 3 clusters (one stopped, one throttled)');
  if (o.outage && o.outageSeconds >= o.seconds / 2)
    throw new Error(
      `--outage-seconds (${o.outageSeconds}) must end before the window does (--seconds=${o.seconds})`,
    );
  return o;
}

// ---- servers --------------------------------------------------------------------------------

/**
 * Forks `processes` server processes holding `clusters` clusters between them (`shape`: the
 * per-namespace runs' { legacy, namespaces, perNamespace }, else the full fleet's of `o`).
 */
async function startServers(o, clusters, processes, shape) {
  const total = clusters * (shape ? shape.namespaces * shape.perNamespace : o.types * o.objects);
  // Building the objects is the slow part: about 0.1 ms each on a quiet machine; allow 20×.
  const startMs = (60 + total / 500) * 1000;
  const groups = Array.from({ length: processes }, () => []);
  for (let c = 0; c < clusters; c++) groups[Math.floor((c * processes) / clusters)].push(c);
  const owner = new Map();
  const handles = groups.map((group, p) => {
    for (const c of group) owner.set(c, p);
    const { types, objects, namespaces, bytes, incompressible } = o;
    return cluster(
      'fleet',
      { clusters: group, ...(shape ?? { types, objects, namespaces, bytes, incompressible }) },
      {
        startMs,
        name: `fleet server process ${p}`,
        execArgv: [
          '--max-old-space-size=8192',
          '--expose-gc',
          ...(o.serverTraceGc ? ['--trace-gc', '--trace-incremental-marking'] : []),
          ...(o.serverCpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(o.serverCpuProf)}`] : []),
        ],
      },
    );
  });
  const infos = await Promise.all(handles.map((h) => h.ready));
  const urls = [];
  groups.forEach((group, p) => group.forEach((c, k) => (urls[c] = infos[p].urls[k])));
  const sum = (f) => infos.reduce((n, i) => n + i[f], 0);
  const pids = handles.map((h) => h.proc.pid);
  // Change k of the fleet goes to cluster k % clusters; each process walks its own clusters.
  const perCluster = (count) =>
    Array.from({ length: clusters }, (_, c) => Math.floor(count / clusters) + (c < count % clusters ? 1 : 0));
  const perProcess = (count) => groups.map((group) => group.reduce((s, c) => s + perCluster(count)[c], 0));
  return {
    urls,
    jsonBytes: sum('jsonBytes'),
    strippedBytes: sum('strippedBytes'),
    objects: sum('objects'),
    /** How many of `count` changes each cluster gets, as the processes walk their clusters. */
    expected: (count) => {
      const out = [];
      perProcess(count).forEach((n, p) =>
        groups[p].forEach(
          (c, k) => (out[c] = Math.floor(n / groups[p].length) + (k < n % groups[p].length ? 1 : 0)),
        ),
      );
      return out;
    },
    changes: (count, perSecond) =>
      Promise.all(
        perProcess(count).map((n, p) =>
          n ? handles[p].request({ cmd: 'changes', count: n, perSecond: (perSecond * n) / count }) : null,
        ),
      ),
    outage: (c, how) => handles[owner.get(c)].request({ cmd: 'outage', cluster: c, how }),
    restore: (c) => handles[owner.get(c)].request({ cmd: 'restore', cluster: c }),
    state: async (asked) => {
      const answers = await Promise.all(handles.map((h) => h.request({ cmd: 'state', clusters: asked })));
      const counts = {};
      const digests = {};
      for (const a of answers) (Object.assign(counts, a.counts), Object.assign(digests, a.digests));
      return { counts, digests };
    },
    /** Stops every server process; resolves once they exited (a --server-cpu-prof is written then). */
    stop: () => (handles.forEach((h) => h.stop()), Promise.all(handles.map((h) => h.exited))),
    /** CPU seconds the server processes have used so far (user + system, every thread). */
    cpuSeconds: () => pids.reduce((n, pid) => n + processCpu(pid), 0),
    /** The same, of their main threads only (the rest: V8's collector and Node's helpers). */
    mainThreadCpuSeconds: () => pids.reduce((n, pid) => n + threadCpu(pid), 0),
  };
}

// ---- one measurement ------------------------------------------------------------------------

const WORKERS = { native: 'fleet-worker.js', 'client-node': 'fleet-client-node.js' };

/** One informer per cluster of `servers` and type of the fleet's first `types`, all namespaces. */
const fleetInformers = (servers, types) =>
  servers.urls.flatMap((_, cluster) =>
    TYPES.slice(0, types).map(({ group, version, plural }) => ({ cluster, group, version, plural })),
  );

/**
 * Forks worker `which` against `servers` and runs one change window: `count` changes in
 * `seconds`; `during(t0)` is called when the changes start (the outage schedule). `config` is the
 * worker's (bench/fleet-worker.js), on top of the fleet's informers and options `o`. Resolves to
 * the worker's 'ready' and 'done' messages (and what it `checked` with `config.check`).
 */
async function measure(which, servers, o, config, count, seconds, during) {
  const objects = servers.objects;
  const full = {
    urls: servers.urls,
    token: 'fleet-token',
    informers: config.informers ?? fleetInformers(servers, o.types),
    strip: false,
    compress: o.compress,
    ...(o.gatherMs !== undefined && { gatherMs: o.gatherMs }),
    pkg: o.pkg ?? THIS.watcher,
    ...config,
    deadlineSeconds: seconds + 60,
    // Sync (generous: 1 ms per object, a loaded machine), the window and its grace, the check.
    giveUpSeconds: 120 + objects / 1000 + seconds + 60 + 120,
  };
  const serverCpuAtFork = servers.cpuSeconds();
  const serverMainCpuAtFork = servers.mainThreadCpuSeconds();
  const out = {};
  const onMessage = async (msg, proc) => {
    if (msg.type === 'ready') {
      out.ready = msg;
      // The servers' share of the sync (they are idle while the worker drains and settles).
      out.ready.serverCpuSeconds = servers.cpuSeconds() - serverCpuAtFork;
      out.ready.serverMainThreadCpuSeconds = servers.mainThreadCpuSeconds() - serverMainCpuAtFork;
      log(
        `  ${which}: synced in ${msg.syncSeconds.toFixed(2)} s, RSS +${(msg.rssGrowth / MiB).toFixed(0)} MiB`,
      );
      proc.send({ cmd: 'go', changes: count });
      out.t0 = Date.now();
      out.changed = servers.changes(count, count / seconds).then(() => Date.now());
      out.phases = during ? during(out.t0) : null;
    } else if (msg.type === 'done') {
      out.done = msg;
      log(
        `  ${which}: ${msg.changes}/${count} changes read, ${msg.cpuPerChangeUs.toFixed(1)} µs main-thread CPU per change`,
      );
      if (config.check) {
        await out.changed;
        if (out.phases) await out.phases;
        out.state = await servers.state(config.checkClusters);
        proc.send({ cmd: 'check', clusters: config.checkClusters });
      }
    }
  };
  // RSS is measured after full collections, in both workers alike.
  const execArgv = ['--max-old-space-size=8192', '--expose-gc'];
  const result = await work(WORKERS[which], full, {
    timeoutMs: (full.giveUpSeconds + 10) * 1000,
    execArgv,
    onMessage,
  });
  if (!out.done) throw new Error(`${which} worker ended before it was done: ${result.error?.detail}`);
  if (config.check) out.checked = result;
  // The servers' changes are over before the next measurement starts.
  out.changedAt = await out.changed;
  if (out.phases) out.phases = await out.phases;
  return out;
}

// ---- figures --------------------------------------------------------------------------------

const ms = (x) => (Number.isFinite(x) ? `${x.toFixed(0)} ms` : '–');

/** Change latency per phase: of the clusters not affected, and of the stopped and throttled ones. */
function phases(seen, t0, outage, stopped, throttled) {
  const { start, end } = outage;
  const phaseOf = (sent) => (sent < start ? 'before' : sent < end ? 'during' : 'after');
  const groups = {};
  const add = (key, phase, value) => ((groups[key] ??= {})[phase] ??= []).push(value);
  // Per informer of the two, its first change read after the restore.
  const firstAfter = { stopped: new Map(), throttled: new Map() };
  for (let i = 0; i < seen.cluster.length; i++) {
    const c = seen.cluster[i];
    const latency = seen.received[i] - seen.sent[i];
    const phase = phaseOf(seen.sent[i]);
    const who = c === stopped ? 'stopped' : c === throttled ? 'throttled' : 'others';
    add(who, phase, latency);
    if (who === 'others') add(`c${c}`, phase, latency);
    else if (seen.received[i] >= end) {
      const t = seen.informer[i];
      firstAfter[who].set(t, Math.min(firstAfter[who].get(t) ?? Infinity, seen.received[i]));
    }
  }
  const worst = {};
  for (const phase of ['before', 'during', 'after']) {
    worst[phase] = Math.max(
      ...Object.entries(groups)
        .filter(([k]) => k.startsWith('c'))
        .map(([, g]) => quantile(g[phase] ?? [], 0.99))
        .filter(Number.isFinite),
    );
  }
  return {
    groups,
    worst,
    recovery: Object.fromEntries(
      Object.entries(firstAfter).map(([who, m]) => {
        const firsts = [...m.values()].map((t) => (t - end) / 1000);
        return [who, { first: Math.min(...firsts), last: Math.max(...firsts), informers: firsts.length }];
      }),
    ),
    sinceGo: { start: (start - t0) / 1000, end: (end - t0) / 1000 },
  };
}

/** Whether every informer's cache matches its server: counts for all, digests for `asked`. */
function checkCaches(state, checked) {
  let informers = 0;
  const wrong = [];
  for (const [cluster, byType] of Object.entries(state.counts)) {
    for (const [plural, n] of Object.entries(byType)) {
      informers++;
      const cached = checked.counts[cluster]?.[plural];
      if (cached !== n) wrong.push(`c${cluster} ${plural}: ${cached} cached, ${n} on the server`);
    }
  }
  for (const [cluster, byType] of Object.entries(state.digests)) {
    for (const [plural, d] of Object.entries(byType)) {
      if (checked.digests[cluster]?.[plural] !== d)
        wrong.push(`c${cluster} ${plural}: resourceVersions differ from the server's`);
    }
  }
  return { informers, wrong, synced: checked.synced };
}

// ---- the run --------------------------------------------------------------------------------

async function run(argv) {
  const o = parseOptions(argv);
  const count = o.rate * o.seconds;
  const total = o.clusters * o.types * o.objects;
  log(
    `fleet: ${o.clusters} clusters × ${o.types} types × ${o.objects} objects = ${total} objects, ` +
      `${o.clusters * o.types} informers, ${o.rate} changes/s for ${o.seconds} s, ${o.serverProcesses} server process(es)`,
  );
  if (o.compareOnly) return report(o, null, [], await runCompares(o), {});
  const servers = await startServers(o, o.clusters, o.serverProcesses);
  log(
    `fleet: servers hold ${(servers.jsonBytes / MiB).toFixed(1)} MiB of JSON (${(servers.strippedBytes / MiB).toFixed(1)} MiB without managedFields and last-applied)`,
  );
  // The stopped and the throttled cluster: two in the middle of the fleet.
  const stopped = Math.floor(o.clusters / 2);
  const throttled = stopped - 1;
  const results = [];
  for (const strip of o.strips) {
    log(`fleet: strip ${strip ? 'on' : 'off'}`);
    const config = {
      strip,
      cpuChanges: Math.floor(count * (o.outage ? 0.3 : 0.6)),
      delayChanges: Math.floor(count * (o.outage ? 0.15 : 0.3)),
      // Every informer against its server at the end: counts, and every object's resourceVersion.
      check: true,
      checkClusters: [...Array(o.clusters).keys()],
    };
    const during = o.outage
      ? async (t0) => {
          await sleepUntil(t0 + (o.seconds / 2) * 1000);
          await Promise.all([servers.outage(stopped, 'stop'), servers.outage(throttled, 'throttle')]);
          const start = Date.now();
          log(`  outage: cluster ${stopped} stopped, cluster ${throttled} throttled (429)`);
          await sleepUntil(start + o.outageSeconds * 1000);
          await Promise.all([servers.restore(stopped), servers.restore(throttled)]);
          const end = Date.now();
          log(`  outage over after ${((end - start) / 1000).toFixed(1)} s`);
          return { start, end };
        }
      : null;
    const out = await measure('native', servers, o, config, count, o.seconds, during);
    results.push({ strip, ...out });
  }
  // The side-by-side runs, with strip as the fleet's runs had it (both ways with --strip=both;
  // the client-node worker strips the same paths in its handlers, its leanest cache).
  const compare = o.compare ? await runCompares(o) : [];
  await servers.stop();
  report(o, servers, results, compare, { stopped, throttled, count });
}

/** The side-by-side runs, one per strip setting of the fleet's. */
async function runCompares(o) {
  const compare = [];
  for (const strip of o.strips) compare.push(await runCompare(o, strip));
  return compare;
}

/** The side-by-side run on a tenth of the fleet: native and client-node, interleaved. */
async function runCompare(o, strip) {
  const clusters = Math.max(1, Math.ceil(o.clusters / 10));
  const seconds = o.compareSeconds;
  const count = o.rate * seconds;
  log(
    `compare: ${clusters} clusters × ${o.types} types × ${o.objects} objects, ${count} changes in ${seconds} s, strip ${strip ? 'on' : 'off'}, native and client-node ×${o.compareRuns}`,
  );
  const servers = await startServers(o, clusters, Math.min(clusters, 2));
  const runs = { native: [], 'client-node': [] };
  for (let r = 0; r < o.compareRuns; r++) {
    const order = r % 2 ? ['client-node', 'native'] : ['native', 'client-node'];
    for (const which of order) {
      const out = await measure(which, servers, o, { strip }, count, seconds, null);
      runs[which].push({ ...out.ready, ...out.done });
    }
  }
  await servers.stop();
  return { strip, clusters, count, seconds, jsonBytes: servers.jsonBytes, objects: servers.objects, runs };
}

const sleepUntil = (t) => new Promise((r) => setTimeout(r, Math.max(0, t - Date.now())));

const mib = (bytes) => `${(bytes / MiB).toFixed(0)} MiB`;
const range = (xs) => (xs.length ? `${Math.min(...xs)}–${Math.max(...xs)}` : '–');

/** The fleet's table: a row per figure, a column per strip setting measured. */
function fleetRows(o, servers, count, results) {
  const held = (r) => (r.strip ? servers.strippedBytes : servers.jsonBytes);
  const perObject = (bytes) => `${(bytes / servers.objects).toFixed(0)} B`;
  const loopDelay = ({ p50, p99, max }) => `${p50.toFixed(2)} / ${p99.toFixed(2)} / ${max.toFixed(1)} ms`;
  const rows = [
    [
      'JSON held',
      (r) => mib(held(r)),
      `${mib(servers.jsonBytes)} with, ${mib(servers.strippedBytes)} without managedFields + last-applied`,
    ],
    [
      'JSON per object (average)',
      (r) => perObject(held(r)),
      `${perObject(servers.jsonBytes)} with, ${perObject(servers.strippedBytes)} without`,
    ],
    ['full sync', ({ ready }) => `${ready.syncSeconds.toFixed(2)} s`, '≤ 15 s'],
    [
      "servers' CPU in the sync: all threads / main threads (the rest: their collectors)",
      ({ ready }) =>
        `${ready.serverCpuSeconds.toFixed(1)} / ${ready.serverMainThreadCpuSeconds.toFixed(1)} s`,
    ],
    ['initial ADDED events read after sync', ({ ready }) => `${ready.drainSeconds.toFixed(2)} s later`],
    [
      'CPU of the sync: client main thread / all client threads / servers',
      ({ ready: { syncCpu, serverCpuSeconds } }) =>
        `${syncCpu.mainThreadSeconds.toFixed(1)} / ${syncCpu.processSeconds.toFixed(1)} / ${serverCpuSeconds.toFixed(1)} s`,
    ],
    [
      'RSS growth after sync',
      (r) => `${mib(r.ready.rssGrowth)} (${(r.ready.rssGrowth / held(r)).toFixed(2)}× JSON held)`,
      '≤ 1.3× JSON held + 64 MiB',
    ],
    ['RSS growth at the end', (r) => `${mib(r.done.rssEnd)} (${(r.done.rssEnd / held(r)).toFixed(2)}×)`],
    [
      'main-thread CPU per change',
      ({ done }) => `${done.cpuPerChangeUs.toFixed(1)} µs (${done.cpuChanges} changes)`,
      '≤ 100 µs',
    ],
    ['ELU (CPU window)', ({ done }) => `${(done.elu * 100).toFixed(2)} %`, '≤ 2 %'],
    [
      'event-loop delay, own window (p50 / p99 / max)',
      ({ done }) => (done.loopDelay ? loopDelay(done.loopDelay) : '–'),
      'p99 ≤ 5 ms',
    ],
    [
      'HTTP/2 connections per cluster (sync / end)',
      ({ ready, done }) =>
        `${range(ready.connections)} / ${range(done.connectionsEnd)} over ${ready.connections.length} origins`,
      `${Math.ceil(o.types / 90)}`,
    ],
    [
      'native threads (sync / end)',
      ({ ready, done }) => `${ready.threads} / ${done.threadsEnd} for ${ready.informers} informers`,
      'bounded by the runtime',
    ],
    ['slowest consumer pending (max sampled)', ({ done }) => `${done.pendingMax}`, '≤ 1 per object'],
    ['changes read / sent', ({ done }) => `${done.changes} / ${count}`],
  ];
  const memoryKeys = [...new Set(results.flatMap((r) => Object.keys(r.ready.memory ?? {})))];
  for (const k of memoryKeys) rows.push([`memory.${k}`, (r) => `${r.ready.memory[k] ?? '–'}`]);
  // The per-object parts of the cache, per object cached (the fixed cost per informer is a field
  // of its own, fixedBytesPerInformer).
  for (const k of memoryKeys.filter((k) => /^(text|header|index|pending)Bytes$/.test(k))) {
    const perCached = ({ ready: { memory, objects } }) => memory[k] / (memory.objects || objects);
    rows.push([
      `${k} per object`,
      (r) => (r.ready.memory?.[k] === undefined ? '–' : `${perCached(r).toFixed(0)} B`),
    ]);
  }
  return { rows, memoryKeys };
}

/** The outage's latency by phase and the recovery of the clusters it hit, for result `r`. */
function reportOutage(p, r, stopped, throttled) {
  const ph = phases(r.done.seen, r.t0, r.phases, stopped, throttled);
  r.latency = ph;
  p(
    `\nReliability, strip ${r.strip ? 'on' : 'off'}: cluster ${stopped} stopped and cluster ${throttled} throttled (429, Retry-After 2 s) ` +
      `from ${ph.sinceGo.start.toFixed(1)} s to ${ph.sinceGo.end.toFixed(1)} s of the window; change latency (received − sent) by the phase it was sent in\n`,
  );
  p('| phase | other clusters p50 | p99 | worst cluster p99 | stopped p50 / p99 | throttled p50 / p99 |');
  p('|---|---|---|---|---|---|');
  for (const phase of ['before', 'during', 'after']) {
    const g = (who) => ph.groups[who]?.[phase] ?? [];
    const both = (who, between = ' / ') => `${ms(median(g(who)))}${between}${ms(quantile(g(who), 0.99))}`;
    p(
      `| ${phase} | ${both('others', ' | ')} | ${ms(ph.worst[phase])} | ${both('stopped')} | ${both('throttled')} |`,
    );
  }
  const rec = (x) => `first informer ${x.first.toFixed(2)} s, last of ${x.informers} ${x.last.toFixed(2)} s`;
  p(
    `\nRecovery after the restore (each informer's first change read): stopped ${rec(ph.recovery.stopped)}; throttled ${rec(ph.recovery.throttled)}`,
  );
}

/** The changes each cluster's informers read of those sent, and the caches' check, for `r`. */
function reportDelivery(p, r, servers, count) {
  const readBy = new Map();
  for (const c of r.done.seen.cluster) readBy.set(c, (readBy.get(c) ?? 0) + 1);
  const short = servers
    .expected(count)
    .map((n, c) => [c, n, readBy.get(c) ?? 0])
    .filter(([, n, got]) => got < n);
  const lastRead = Math.max(...r.done.seen.received) - r.t0;
  p(
    `\nStrip ${r.strip ? 'on' : 'off'}: the servers sent their last change ${((r.changedAt - r.t0) / 1000).toFixed(1)} s after 'go', ` +
      `the last change was read ${(lastRead / 1000).toFixed(1)} s after; changes read per cluster: ` +
      `${short.length ? short.map(([c, n, got]) => `c${c} ${got}/${n}`).join(', ') : 'every change of every cluster'}`,
  );
  if (!r.checked) return;
  const c = (r.cacheCheck = checkCaches(r.state, r.checked));
  const caches = c.wrong.length
    ? `${c.wrong.length} of ${c.informers} informers differ: ${c.wrong.slice(0, 5).join('; ')}`
    : `all ${c.informers} informers hold their server's objects (counts and every object's resourceVersion)`;
  p(
    `Caches at the end: ${caches}, snapshot synced: ${c.synced ? 'all' : 'not all'}; warnings logged: ${r.done.warnings}`,
  );
}

/** The side-by-side runs' table: native against client-node, medians and each run. */
function reportCompare(p, o, side) {
  const { runs } = side;
  p(
    `\nSide by side on a tenth of the fleet: ${side.clusters} clusters × ${o.types} types × ${o.objects} objects = ${side.objects} objects ` +
      `(${mib(side.jsonBytes)} of JSON), ${side.count} changes at ${o.rate}/s, strip ${side.strip ? 'on' : 'off'}, medians of ${o.compareRuns} interleaved runs\n`,
  );
  p('| | native | client-node | native ÷ client-node | target |');
  p('|---|---|---|---|---|');
  const lines = [
    ['RSS growth after sync', (x) => x.rssGrowth, mib, '≤ 0.3×'],
    ['main-thread CPU per change', (x) => x.cpuPerChangeUs, (v) => `${v.toFixed(1)} µs`, '≤ 0.3×'],
    ['sync', (x) => x.syncSeconds, (v) => `${v.toFixed(2)} s`, ''],
    ['ELU', (x) => x.elu, (v) => `${(v * 100).toFixed(2)} %`, ''],
  ];
  for (const [name, f, fmt, target] of lines) {
    const [n, c] = ['native', 'client-node'].map((which) => median(runs[which].map(f)));
    const each = (which) => runs[which].map((x) => fmt(f(x))).join(', ');
    p(
      `| ${name} | ${fmt(n)} (${each('native')}) | ${fmt(c)} (${each('client-node')}) | ${(n / c).toFixed(2)}× | ${target} |`,
    );
  }
}

function report(o, servers, results, compare, { stopped, throttled, count }) {
  const p = (...a) => console.log(...a);
  if (results.length) {
    p(
      `\n${o.clusters} clusters × ${o.types} types × ${o.objects} objects = ${servers.objects} objects ` +
        `(${(servers.jsonBytes / servers.objects).toFixed(0)} B of JSON each on average), ${o.clusters * o.types} informers, ` +
        `${count} changes at ${o.rate}/s, ${o.serverProcesses} server process(es), single runs\n`,
    );
    p(`| figure | ${results.map((r) => `strip ${r.strip ? 'on' : 'off'}`).join(' | ')} | target |`);
    p(`|---|${results.map(() => '---|').join('')}---|`);
    const { rows, memoryKeys } = fleetRows(o, servers, count, results);
    for (const [name, f, target = ''] of rows) p(`| ${name} | ${results.map(f).join(' | ')} | ${target} |`);
    if (!memoryKeys.length)
      p(
        '\n(no `memory` in the metrics snapshot of this build: per-object and per-informer bytes not printed)',
      );
    if (o.outage) for (const r of results) reportOutage(p, r, stopped, throttled);
    for (const r of results) reportDelivery(p, r, servers, count);
  }
  for (const side of compare) reportCompare(p, o, side);
  if (o.json) {
    const slim = results.map(({ changed: _c, ...r }) => r);
    const { jsonBytes, strippedBytes } = servers ?? {};
    fs.writeFileSync(
      o.json,
      JSON.stringify({ options: o, jsonBytes, strippedBytes, results: slim, compare }, null, 2),
    );
  }
}

module.exports = { run, startServers, measure };
