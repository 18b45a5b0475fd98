'use strict';
// The full fleet benchmark's client with kube-watch-native, forked by bench/fleet.js as
// `fleet-worker.js --worker <config>`. It speaks the protocol of bench/fleet-client-node.js (the
// client-node baseline), so that the two are interchangeable, and adds figures of its own:
//
//   config { urls, caData, token, types: [{ group, version, plural, namespaced }], strip, compress,
//            pkg?, cpuChanges?, delayChanges?, deadlineSeconds?, check? }
//   worker → parent { cmd: 'ready', syncSeconds, rssGrowth, … }   once every informer synced
//   parent → worker { cmd: 'go', changes: N }                     the servers start changing
//   worker → parent { cmd: 'done', cpuPerChangeUs, elu, changes, … } N changes read (or the
//                                                                 deadline passed), then exits;
//   with `check`, it first waits for { cmd: 'check', clusters } and answers
//   { cmd: 'checked', counts, digests } (cached objects per cluster and type; digests of the
//   clusters asked for, as bench/fleet-server.js computes them).
//
// One informer per url × type (all namespaces) through one watcher, one consumer each reading
// every change; a change is a MODIFIED event after 'go', and its latency is now − the `…/sent`
// annotation the servers stamped. Windows, counted in changes read after 'go': the first
// `cpuChanges` (default N) measure main-thread CPU (/proc/self/task/<pid>/schedstat) and event-loop
// utilisation with nothing else running; the next `delayChanges` have a 1 ms
// monitorEventLoopDelay histogram on, and from there on the slowest consumer's pending changes
// are sampled from the metrics snapshot once a second.

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { monitorEventLoopDelay } = require('node:perf_hooks');

const ROUND = 'fleet.kube-watch.dev/round';
const SENT = 'fleet.kube-watch.dev/sent';
const STRIP = [
  'metadata.managedFields',
  "metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']",
];

if (process.argv[2] !== '--worker') {
  console.error('bench/fleet-worker.js is forked by bench/fleet.js (--worker <config>)');
  process.exit(2);
}
process.on('disconnect', () => process.exit(0));
main(JSON.parse(process.argv[3])).catch((err) => {
  console.error(err);
  process.exit(1);
});

/** Nanoseconds this (the main) thread has run, from the scheduler's own accounting. */
function mainThreadNs() {
  return Number(fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
}

/** RSS after a few full collections when `--expose-gc` allows them (as the client-node worker). */
async function settledRss() {
  if (global.gc) {
    for (let i = 0; i < 3; i++) {
      global.gc();
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return process.memoryUsage.rss();
}

const threads = () => fs.readdirSync('/proc/self/task').length;

/** HTTP/2 connections per cluster origin, from the pool's figures. */
function connectionsPerOrigin(clusters) {
  const byOrigin = new Map();
  for (const entry of clusters) {
    byOrigin.set(entry.origin, (byOrigin.get(entry.origin) ?? 0) + entry.connections.length);
  }
  return [...byOrigin.values()];
}

/** The numeric fields of `snapshot.memory` (if the build has it), flattened to `a.b` names. */
function memoryFigures(memory, prefix = '', out = {}) {
  if (!memory || typeof memory !== 'object') return out;
  for (const [k, v] of Object.entries(memory)) {
    if (typeof v === 'number') out[prefix + k] = v;
    else if (v && typeof v === 'object' && !Array.isArray(v)) memoryFigures(v, `${prefix}${k}.`, out);
  }
  return out;
}

async function main(config) {
  const pkg = config.pkg ?? path.join(__dirname, '..', 'packages', 'kube-watch-native');
  const { NativeKubernetesWatcher } = require(pkg);
  const { SNAPSHOT } = require(path.join(pkg, 'lib', 'metrics.js'));
  const giveUpSeconds = config.giveUpSeconds ?? 600;
  setTimeout(() => {
    console.error(`fleet worker: gave up after ${giveUpSeconds} s`);
    process.exit(1);
  }, giveUpSeconds * 1000).unref();

  const say = (m) => console.error(`fleet worker: ${m}`);
  let warnings = 0;
  const watcher = new NativeKubernetesWatcher({
    ...(config.gatherMs !== undefined && { gatherMs: config.gatherMs }),
    logger: {
      // An outage makes every informer of the stopped cluster warn on each attempt: count them,
      // print the first few.
      warn: (m) => warnings++ < 5 && say(m),
      error: say,
    },
  });
  const snapshot = () => watcher[SNAPSHOT]();
  const rssBefore = await settledRss();
  const started = performance.now();
  const cpuAtStart = { process: process.cpuUsage(), mainNs: mainThreadNs() };
  const opened = [];
  // Changes read after 'go': cluster and type index, sent and received (ms since the epoch).
  const seen = { cluster: [], type: [], sent: [], received: [] };
  let going = false;
  // ADDED events the consumers have read: the initial lists, drained before 'ready'.
  let added = 0;
  let onChange = () => {};
  config.urls.forEach((url, c) => {
    config.types.forEach((type, t) => {
      const informer = watcher.informer(
        {
          clusterDetails: { name: `c${c}`, url, caData: config.caData },
          credential: { type: 'bearer token', token: config.token },
          group: type.group,
          apiVersion: type.version,
          plural: type.plural,
        },
        { ...(config.strip && { strip: STRIP }), ...(config.compress === false && { compress: false }) },
      );
      opened.push({ informer, cluster: c, plural: type.plural });
      (async () => {
        for await (const event of informer) {
          if (event.type === 'ADDED') added++;
          if (!going || event.type !== 'MODIFIED') continue;
          const sent = event.object.metadata?.annotations?.[SENT];
          if (sent === undefined) continue;
          seen.cluster.push(c);
          seen.type.push(t);
          seen.sent.push(Number(sent));
          seen.received.push(Date.now());
          onChange();
        }
      })();
    });
  });
  await Promise.all(opened.map((o) => o.informer.synced));
  const syncSeconds = (performance.now() - started) / 1000;
  // Where the sync's time went in this process: the main thread (consumers parsing the initial
  // ADDED events) and every thread together (the runtime's TLS, HTTP/2, parsing and caching).
  const used = process.cpuUsage(cpuAtStart.process);
  const syncCpu = {
    processSeconds: (used.user + used.system) / 1e6,
    mainThreadSeconds: (mainThreadNs() - cpuAtStart.mainNs) / 1e9,
  };
  // Every consumer reads its initial ADDED events before anything is measured: with half a
  // million objects that takes a while after the last sync, and a window opened before would
  // bill it to the changes (and read 'go' late, missing the first changes).
  const cached = opened.reduce((n, o) => n + o.informer.size, 0);
  while (added < cached) await new Promise((r) => setTimeout(r, 100));
  const drainSeconds = (performance.now() - started) / 1000 - syncSeconds;
  await new Promise((r) => setTimeout(r, 1000));
  const rssGrowth = (await settledRss()) - rssBefore;
  const atSync = snapshot();
  const go = new Promise((resolve) => process.once('message', resolve));
  process.send({
    cmd: 'ready',
    syncSeconds,
    syncCpu,
    drainSeconds,
    rssGrowth,
    informers: opened.length,
    threads: threads(),
    connections: connectionsPerOrigin(atSync.clusters),
    memory: memoryFigures(atSync.memory),
    objects: opened.reduce((n, o) => n + o.informer.size, 0),
  });
  const { changes } = await go;
  const cpuChanges = Math.min(changes, config.cpuChanges ?? changes);
  const delayChanges = config.delayChanges ?? 0;

  let cpu = null;
  let delay = null;
  let histogram = null;
  let pendingMax = 0;
  let sampler = null;
  const samplePending = () => {
    for (const s of snapshot().series) pendingMax = Math.max(pendingMax, s.slowestConsumerPending ?? 0);
  };
  const finished = new Promise((resolve) => {
    onChange = () => {
      const n = seen.cluster.length;
      if (n === cpuChanges && cpu === null) {
        cpu = { ns: mainThreadNs() - cpu0, elu: performance.eventLoopUtilization(elu0).utilization };
        if (delayChanges > 0) {
          histogram = monitorEventLoopDelay({ resolution: 1 });
          histogram.enable();
        }
        samplePending();
        sampler = setInterval(samplePending, 1000);
      }
      if (histogram && n === cpuChanges + delayChanges) {
        histogram.disable();
        delay = {
          p50: histogram.percentile(50) / 1e6,
          p99: histogram.percentile(99) / 1e6,
          max: histogram.max / 1e6,
          changes: delayChanges,
        };
        histogram = null;
      }
      if (n >= changes) resolve();
    };
    setTimeout(resolve, (config.deadlineSeconds ?? 120) * 1000).unref();
  });
  const cpu0 = mainThreadNs();
  const elu0 = performance.eventLoopUtilization();
  going = true;
  await finished;
  clearInterval(sampler);
  if (cpu === null) {
    // The deadline came first: the window is what was read.
    cpu = { ns: mainThreadNs() - cpu0, elu: performance.eventLoopUtilization(elu0).utilization };
  }
  const atEnd = snapshot();
  const rssEnd = (await settledRss()) - rssBefore;
  const done = {
    cmd: 'done',
    cpuPerChangeUs: cpu.ns / 1000 / Math.max(1, Math.min(cpuChanges, seen.cluster.length)),
    elu: cpu.elu,
    changes: seen.cluster.length,
    cpuChanges: Math.min(cpuChanges, seen.cluster.length),
    loopDelay: delay,
    pendingMax,
    rssEnd,
    threadsEnd: threads(),
    connectionsEnd: connectionsPerOrigin(atEnd.clusters),
    warnings,
    seen,
  };
  process.send(done);
  if (config.check) {
    const { clusters } = await new Promise((resolve) => process.once('message', resolve));
    const counts = {};
    const digests = {};
    for (const { informer, cluster, plural } of opened) {
      (counts[cluster] ??= {})[plural] = informer.size;
      if (clusters.includes(cluster)) (digests[cluster] ??= {})[plural] = digest(informer.list());
    }
    const synced = atEnd.series.every((s) => s.synced !== false);
    process.send({ cmd: 'checked', counts, digests, synced });
  }
  for (const { informer } of opened) informer.close();
  process.exit(0);
}

/** sha1 of the sorted `namespace/name=resourceVersion` lines of `objects` (as the servers do). */
function digest(objects) {
  const lines = objects.map(
    (o) => `${o.metadata.namespace}/${o.metadata.name}=${o.metadata.resourceVersion}`,
  );
  return crypto.createHash('sha1').update(lines.sort().join('\n')).digest('hex');
}
