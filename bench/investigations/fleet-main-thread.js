#!/usr/bin/env node
'use strict';
// node bench/investigations/fleet-main-thread.js [--informers=1000] [--clusters=50] [--objects=50] [--changes=1000]
//                                 [--rate=100] [--types=N [--strip]] [--idle=<seconds>]
//                                 [--pkg=<package directory>] [--profile=<file>] [--count]
//
// Where the main thread's time goes per change in the fleet benchmark's steady state (issue 18):
// the same fleet as bench/fleet.js (its servers, bench/clusters/fleet.js), one worker process,
// one measurement. With --types=N, the full fleet's shape instead (bench/fleet-full.js): per
// cluster `objects` objects of each of the first N types of testbed/fleet-objects.js over 20
// namespaces, one informer per cluster × type (all namespaces; --informers is then
// clusters × N), with `strip` of managedFields and last-applied given --strip.
// Before the window it measures, informers open and synced and nothing changing, what the
// main thread costs per second when idle (`--idle` seconds, default 3): its fixed cost, which
// the window bills to the changes (every ms per second is 10 µs per change at 100/s).
// During the window of changes, and only then, it can:
//   --profile=<file>  record a V8 CPU profile of the main thread (node:inspector, 50 µs samples)
//                     and print the functions with the most self time;
//   --count           count, per change, the calls into the addon (by method), JSON.parse calls,
//                     Promises created (node:async_hooks), timers and setImmediate calls, and
//                     calls of the informer hub's thread-safe function (the wake-ups);
//   --perf=<file>     record the main thread with `perf record -e cpu-clock -g` (JIT frames named
//                     through --perf-basic-prof) during the window: native and kernel time too.
// It also measures, before the window, what an empty wake-up of the main thread costs (a timer
// that does nothing), the floor under a change that costs one.
// Counting slows the main thread down: its CPU figure is only for comparing counts, never a
// measure. Bounded: the worker gives up after 180 s, every child dies with this process.

const { fork, spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const argv = process.argv.slice(2);
const SENT = 'fleet.kube-watch.dev/sent';
const STRIP = [
  'metadata.managedFields',
  "metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']",
];
const opt = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

const { runAsWorker, giveUpAfter, stderrWatcher, ready } = require('../child');
// Required above the line below: in a worker, this module's body ends there.
const { mainThreadCpuNs } = require('../../testbed/proc');
const { emptyWakeUpUs } = require('./wake-floor');

if (runAsWorker(worker)) return;

for (const a of argv) {
  if (
    !/^--(informers|clusters|objects|changes|rate|types|idle)=\d+$|^--(pkg|profile|perf)=.+$|^--(count|strip)$/.test(
      a,
    )
  ) {
    console.error(`unknown option ${a}; see the header of bench/fleet-main-thread.js`);
    process.exit(2);
  }
}

const { track, cluster } = require('../children');

async function main() {
  const types = opt('types') === undefined ? 0 : Number(opt('types'));
  const clusters = Number(opt('clusters') ?? 50);
  const informers = types ? clusters * types : Number(opt('informers') ?? 1000);
  const objects = Number(opt('objects') ?? 50);
  const changes = Number(opt('changes') ?? 1000);
  const rate = Number(opt('rate') ?? 100);
  const pkg = path.resolve(opt('pkg') ?? path.join(__dirname, '..', '..', 'packages', 'kube-watch-native'));
  const namespaces = Math.ceil(informers / clusters);
  const servers = cluster(
    'fleet',
    types
      ? { clusters: [...Array(clusters).keys()], types, objects, namespaces: 20, bytes: 1500 }
      : { legacy: true, clusters: [...Array(clusters).keys()], namespaces, perNamespace: objects },
    { startMs: 120000 },
  );
  const { urls } = await servers.ready;
  const config = {
    pkg,
    urls,
    namespaces,
    informers,
    types: types
      ? require('../../testbed/fleet-objects')
          .TYPES.slice(0, types)
          .map(({ group, version, plural }) => ({ group, version, plural }))
      : null,
    strip: argv.includes('--strip'),
    idleSeconds: Number(opt('idle') ?? 3),
    profile: opt('profile') ? path.resolve(opt('profile')) : null,
    count: argv.includes('--count'),
  };
  const result = await new Promise((resolve, reject) => {
    const perf = opt('perf');
    const child = track(
      fork(__filename, ['--worker', JSON.stringify(config)], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        execArgv: perf ? ['--perf-basic-prof'] : [],
      }),
    );
    let out = null;
    child.on('message', (msg) => {
      if (msg.type === 'ready') {
        if (perf) {
          const seconds = String(Math.max(1, Math.floor(changes / rate) - 1));
          const args = [
            'record',
            '-e',
            'cpu-clock',
            '-F',
            '10000',
            '-g',
            '-t',
            String(child.pid),
            '-o',
            perf,
          ];
          track(spawn('perf', [...args, '--', 'sleep', seconds], { stdio: 'ignore' }));
        }
        child.send({ cmd: 'go', changes });
        servers.request({ cmd: 'changes', count: changes, perSecond: rate });
      } else if (msg.type === 'result') out = msg.result;
    });
    child.on('exit', (code) => (out ? resolve(out) : reject(new Error(`worker exited (${code})`))));
  });
  servers.stop();
  console.log(
    `${informers} informers, ${clusters} clusters, ${changes} changes at ${rate}/s, ${path.relative(process.cwd(), pkg) || '.'}: ` +
      `${result.cpuPerChangeUs.toFixed(1)} µs main-thread CPU per change, ${result.sleepsPerChange.toFixed(2)} wake-ups of it per change; ` +
      `an empty wake-up costs it ${result.floorUs.toFixed(1)} µs${config.count ? ' (counting: not a measure)' : ''}`,
  );
  console.log(
    `idle (nothing changing, ${config.idleSeconds} s): ${result.idle.cpuUsPerSecond.toFixed(0)} µs of main-thread CPU per second ` +
      `(${(result.idle.cpuUsPerSecond / rate).toFixed(1)} µs per change at ${rate}/s), ${result.idle.sleepsPerSecond.toFixed(1)} wake-ups per second`,
  );
  if (Number.isFinite(result.latency.p50))
    console.log(
      `change latency (received − sent): p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms`,
    );
  if (result.counts) {
    console.log('per change:');
    for (const [name, n] of Object.entries(result.counts).sort((a, b) => b[1] - a[1])) {
      console.log(`  ${(n / changes).toFixed(2).padStart(8)}  ${name}`);
    }
  }
  if (result.top) {
    console.log(`main thread, self time per change (profile in ${config.profile}):`);
    for (const { name, us } of result.top)
      console.log(`  ${(us / changes).toFixed(2).padStart(8)} µs  ${name}`);
  }
}

/** Times this (the main) thread went to sleep and was woken again (voluntary context switches). */
function mainThreadSleeps() {
  const text = fs.readFileSync(`/proc/self/task/${process.pid}/status`, 'utf8');
  return Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(text)[1]);
}

/** Counters of what the main thread does, switched on for the window only. */
function counters(pkg) {
  const counts = {};
  let on = false;
  const bump = (name) => {
    if (on) counts[name] = (counts[name] ?? 0) + 1;
  };
  const native = require(path.join(pkg, 'lib', 'native'));
  for (const [className, value] of Object.entries(native)) {
    if (typeof value !== 'function' || !value.prototype) continue;
    for (const method of Object.getOwnPropertyNames(value.prototype)) {
      const d = Object.getOwnPropertyDescriptor(value.prototype, method);
      if (method === 'constructor' || typeof d.value !== 'function') continue;
      const original = d.value;
      value.prototype[method] = function (...args) {
        bump(`native ${className}.${method}()`);
        if (method === 'connect') {
          const [back] = args;
          return original.call(this, (...message) => {
            bump('thread-safe function calls (wake-ups and news)');
            return back(...message);
          });
        }
        return original.apply(this, args);
      };
    }
  }
  const parse = JSON.parse;
  JSON.parse = function (...args) {
    bump('JSON.parse');
    return parse.apply(this, args);
  };
  for (const name of ['setTimeout', 'setImmediate', 'setInterval', 'queueMicrotask']) {
    const original = globalThis[name];
    globalThis[name] = function (...args) {
      bump(name);
      return original.apply(this, args);
    };
  }
  const hook = require('node:async_hooks').createHook({
    init(id, type) {
      bump(type === 'PROMISE' ? 'Promises created' : `async resource ${type}`);
    },
  });
  return {
    start() {
      hook.enable();
      on = true;
    },
    stop() {
      on = false;
      hook.disable();
      return counts;
    },
  };
}

/** A CPU profile of this thread between start() and stop(), summed by function (self time). */
function profiler(file) {
  const { Session } = require('node:inspector');
  const session = new Session();
  session.connect();
  const post = (method, params) =>
    new Promise((resolve, reject) =>
      session.post(method, params, (err, r) => (err ? reject(err) : resolve(r))),
    );
  return {
    async start() {
      await post('Profiler.enable');
      await post('Profiler.setSamplingInterval', { interval: 50 });
      await post('Profiler.start');
    },
    async stop() {
      const { profile } = await post('Profiler.stop');
      fs.writeFileSync(file, JSON.stringify(profile));
      const byId = new Map(profile.nodes.map((n) => [n.id, n]));
      const self = new Map();
      for (let i = 0; i < profile.samples.length; i++) {
        const node = byId.get(profile.samples[i]);
        const { functionName, url, lineNumber } = node.callFrame;
        const name = `${functionName || '(anonymous)'} ${url ? `${path.basename(url)}:${lineNumber + 1}` : ''}`;
        self.set(name, (self.get(name) ?? 0) + (profile.timeDeltas[i] ?? 0));
      }
      return [...self]
        .filter(([name]) => !name.startsWith('(idle)'))
        .sort((a, b) => b[1] - a[1])
        .slice(0, 30)
        .map(([name, us]) => ({ name, us }));
    },
  };
}

async function worker({ pkg, urls, namespaces, informers, types, strip, idleSeconds, profile, count }) {
  const counting = count ? counters(pkg) : null;
  const profiling = profile ? profiler(profile) : null;
  const certs = require('../../packages/kube-watch-native/sim/certs');
  giveUpAfter('fleet main-thread worker', 180);
  const watcher = stderrWatcher(pkg);
  const opened = [];
  let received = 0;
  let wanted = Infinity;
  let reached = null;
  // Change latency (ms, received − the `…/sent` stamp) of the full fleet's changes in the window.
  const latencies = [];
  let measuring = false;
  const caData = Buffer.from(certs.ca).toString('base64');
  const options = strip ? { strip: STRIP } : {};
  for (let i = 0; i < informers; i++) {
    const c = i % urls.length;
    const type = types
      ? types[Math.floor(i / urls.length)]
      : { group: '', version: 'v1', plural: 'configmaps' };
    const informer = watcher.informer(
      {
        clusterDetails: { name: `c${c}`, url: urls[c], caData },
        credential: { type: 'bearer token', token: 'fleet-token' },
        group: type.group,
        apiVersion: type.version,
        plural: type.plural,
      },
      types ? options : { ...options, namespace: `ns-${Math.floor(i / urls.length) % namespaces}` },
    );
    opened.push(informer);
    (async () => {
      for await (const event of informer) {
        if (event.type !== 'MODIFIED') continue;
        const sent = event.object.metadata?.annotations?.[SENT];
        if (sent === undefined && event.object.data?.round === undefined) continue;
        if (measuring && sent !== undefined) latencies.push(Date.now() - Number(sent));
        received++;
        if (received >= wanted) reached?.();
      }
    })();
  }
  await Promise.all(opened.map((i) => i.synced));
  await new Promise((r) => setTimeout(r, 1000));
  const floorUs = await emptyWakeUpUs();
  const idle0 = { ns: mainThreadCpuNs(), sleeps: mainThreadSleeps() };
  await new Promise((r) => setTimeout(r, idleSeconds * 1000));
  const idle = {
    cpuUsPerSecond: (mainThreadCpuNs() - idle0.ns) / 1000 / idleSeconds,
    sleepsPerSecond: (mainThreadSleeps() - idle0.sleeps) / idleSeconds,
  };
  const done = new Promise((resolve) => {
    reached = resolve;
  });
  const { changes } = await ready();
  received = 0;
  wanted = changes;
  measuring = true;
  await profiling?.start();
  counting?.start();
  const cpu0 = mainThreadCpuNs();
  const sleeps0 = mainThreadSleeps();
  await done;
  const cpuNs = mainThreadCpuNs() - cpu0;
  const sleeps = mainThreadSleeps() - sleeps0;
  const counts = counting?.stop();
  const top = await profiling?.stop();
  for (const informer of opened) informer.close();
  latencies.sort((a, b) => a - b);
  const q = (f) =>
    latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(f * latencies.length))] : NaN;
  return {
    cpuPerChangeUs: cpuNs / 1000 / changes,
    sleepsPerChange: sleeps / changes,
    floorUs,
    idle,
    latency: { p50: q(0.5), p99: q(0.99) },
    counts,
    top,
  };
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
