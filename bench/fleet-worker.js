'use strict';
// The fleet benchmark's client with kube-watch-native (bench/fleet.js, bench/fleet-full.js), a
// fresh process per measurement (bench/child.js's worker protocol, as the client-node baseline
// bench/fleet-client-node.js speaks it). Config: { urls, token, informers: [{ cluster, group,
// version, plural, namespace? }], strip, compress, watches, gatherMs, pkg, cpuChanges?,
// delayChanges?, deadlineSeconds, giveUpSeconds, check? }. It says { type: 'ready', syncSeconds,
// rssGrowth, … } once every informer synced; given { cmd: 'go', changes: N } it reads N changes
// (or until the deadline) and says { type: 'done', cpuPerChangeUs, elu, … }; with `check`, given
// { cmd: 'check', clusters }, its result is the cached objects' counts and digests.
//
// One informer per entry of `informers` through one watcher (`watches`: a plain watch with
// sendInitialEvents, synced at the bookmark that ends the initial events), one consumer each: a
// change is a MODIFIED event after 'go', its latency now − the `…/sent` annotation the servers
// stamped (the per-namespace runs' ConfigMaps count `data.round`). Windows, in changes read: the
// first `cpuChanges` (N) measure main-thread CPU (schedstat) and event-loop utilisation alone, the
// next `delayChanges` the event-loop delay (a 1 ms histogram); then the slowest consumer's
// pending changes are sampled from the metrics snapshot once a second.

const path = require('node:path');
const { monitorEventLoopDelay } = require('node:perf_hooks');
const { runAsWorker, ready, nextMessage, giveUpAfter, stderrWatcher } = require('./child');
const { digest } = require('../testbed/fleet-objects');
const { CA_DATA, resourceParams } = require('./kube');
const { settledRss } = require('./measure');
const { mainThreadCpuNs, threadCount } = require('../testbed/proc');

const SENT = 'fleet.kube-watch.dev/sent';
const STRIP = [
  'metadata.managedFields',
  "metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']",
];

/** HTTP/2 connections per cluster origin, from the pool's figures. */
function connectionsPerOrigin(clusters) {
  const byOrigin = new Map();
  for (const { origin, connections } of clusters)
    byOrigin.set(origin, (byOrigin.get(origin) ?? 0) + connections.length);
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

/**
 * A plain watch read by a for await loop that hands each event to `onEvent`, shaped as an
 * informer is used here: `synced` (the bookmark that ends the initial events), `close()`.
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
  const synced = new Promise((resolve) => (sync = resolve));
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

runAsWorker(async (config) => {
  const { SNAPSHOT } = require(path.join(config.pkg, 'lib', 'metrics.js'));
  giveUpAfter('fleet worker', config.giveUpSeconds);
  let warnings = 0;
  const say = (m) => console.error(`fleet worker: ${m}`);
  const watcher = stderrWatcher(config.pkg, {
    ...(config.gatherMs !== undefined && { gatherMs: config.gatherMs }),
    // An outage makes every informer of the stopped cluster warn on each attempt: count them,
    // print the first few.
    logger: { warn: (m) => warnings++ < 5 && say(m), error: say },
  });
  const snapshot = () => watcher[SNAPSHOT]();
  const rssBefore = await settledRss();
  const started = performance.now();
  const cpuAtStart = { process: process.cpuUsage(), mainNs: mainThreadCpuNs() };
  const opened = [];
  // Changes read after 'go': cluster and informer index, sent and received (ms since the epoch).
  const seen = { cluster: [], informer: [], sent: [], received: [] };
  let going = false;
  // ADDED events the consumers have read: the initial lists, drained before 'ready'.
  let added = 0;
  let onChange = () => {};
  config.informers.forEach(({ cluster, namespace, ...type }, k) => {
    const endpoint = { name: `c${cluster}`, url: config.urls[cluster], token: config.token, caData: CA_DATA };
    const params = resourceParams(endpoint, type);
    const options = {
      ...(namespace !== undefined && { namespace }),
      ...(config.strip && { strip: STRIP }),
      ...(config.compress === false && { compress: false }),
    };
    const onEvent = (event) => {
      if (event.type === 'ADDED') added++;
      if (!going || event.type !== 'MODIFIED') return;
      const sent = event.object.metadata?.annotations?.[SENT];
      if (sent === undefined && event.object.data?.round === undefined) return;
      seen.cluster.push(cluster);
      seen.informer.push(k);
      seen.sent.push(Number(sent));
      seen.received.push(Date.now());
      onChange();
    };
    if (config.watches) {
      opened.push({ informer: openWatch(watcher, params, options, onEvent), cluster, plural: type.plural });
      return;
    }
    const informer = watcher.informer(params, options);
    opened.push({ informer, cluster, plural: type.plural });
    (async () => {
      for await (const event of informer) onEvent(event);
    })();
  });
  await Promise.all(opened.map((o) => o.informer.synced));
  const syncSeconds = (performance.now() - started) / 1000;
  // Where the sync's time went in this process: the main thread (consumers parsing the initial
  // ADDED events) and every thread together (the runtime's TLS, HTTP/2, parsing and caching).
  const used = process.cpuUsage(cpuAtStart.process);
  const syncCpu = {
    processSeconds: (used.user + used.system) / 1e6,
    mainThreadSeconds: (mainThreadCpuNs() - cpuAtStart.mainNs) / 1e9,
  };
  // Every consumer reads its initial ADDED events before anything is measured: with half a
  // million objects that takes a while after the last sync, and a window opened before would
  // bill it to the changes (and read 'go' late, missing the first changes).
  const cached = opened.reduce((n, o) => n + (o.informer.size ?? 0), 0);
  while (added < cached) await new Promise((r) => setTimeout(r, 100));
  const drainSeconds = (performance.now() - started) / 1000 - syncSeconds;
  await new Promise((r) => setTimeout(r, 1000));
  const rssGrowth = (await settledRss()) - rssBefore;
  const atSync = snapshot();
  const { changes } = await ready({
    syncSeconds,
    syncCpu,
    drainSeconds,
    rssGrowth,
    informers: opened.length,
    threads: threadCount(),
    connections: connectionsPerOrigin(atSync.clusters),
    memory: memoryFigures(atSync.memory),
    objects: cached,
  });
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
        cpu = { ns: mainThreadCpuNs() - cpu0, elu: performance.eventLoopUtilization(elu0).utilization };
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
    setTimeout(resolve, config.deadlineSeconds * 1000).unref();
  });
  const cpu0 = mainThreadCpuNs();
  const elu0 = performance.eventLoopUtilization();
  going = true;
  await finished;
  clearInterval(sampler);
  // The deadline came first: the window is what was read.
  cpu ??= { ns: mainThreadCpuNs() - cpu0, elu: performance.eventLoopUtilization(elu0).utilization };
  const atEnd = snapshot();
  process.send({
    type: 'done',
    cpuPerChangeUs: cpu.ns / 1000 / Math.max(1, Math.min(cpuChanges, seen.cluster.length)),
    elu: cpu.elu,
    changes: seen.cluster.length,
    cpuChanges: Math.min(cpuChanges, seen.cluster.length),
    loopDelay: delay,
    pendingMax,
    rssEnd: (await settledRss()) - rssBefore,
    threadsEnd: threadCount(),
    connectionsEnd: connectionsPerOrigin(atEnd.clusters),
    warnings,
    seen,
  });
  const checked = {};
  if (config.check) {
    const { clusters } = await nextMessage();
    const counts = (checked.counts = {});
    const digests = (checked.digests = {});
    for (const { informer, cluster, plural } of opened) {
      (counts[cluster] ??= {})[plural] = informer.size;
      if (clusters.includes(cluster)) (digests[cluster] ??= {})[plural] = digest(informer.list());
    }
    checked.synced = atEnd.series.every((s) => s.synced !== false);
  }
  for (const { informer } of opened) informer.close();
  return checked;
});
