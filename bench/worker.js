'use strict';
// One measurement of one client in a fresh process (clean RSS, threads and JIT state), forked by
// bench/run.js (bench/child.js's worker protocol). Scenarios:
//   throughput  `count` events flat out, measured after `warmup` events
//   bound       JSON.parse of the same lines in a tight loop (no network): the floor for JS
//   trickle     one event every 50 ms: the delay from the server's write to the loop body
//   slow        the consumer sleeps 1 ms per event for `durationMs`: RSS growth
//   idle        `watches` concurrent idle watches: RSS per watch, threads, (server) connections
//   paired      all clients and the bound in one process, alternating slices (tighter ratios)
//   interleaved one client's stream paused every `segment` events for a bound segment run
//               inline: the tightest main ÷ bound ratio this machine allows
// Every bound loop lets the event loop turn every TURN_MS (one setImmediate, ~1 µs), as the
// clients' streams do: V8 runs the scavenges a loop's garbage makes due as tasks on the event
// loop, and a loop that never yields leaves its own collections to be billed to whatever runs
// after it (measured: 2–6 % of a native client's main-thread time in the paired scenario).

const { performance } = require('node:perf_hooks');
const { setTimeout: sleep } = require('node:timers/promises');
const { runAsWorker, ask } = require('./child');
const { median, quantile } = require('./report/measurements');
const { clients, STOP, FIELDS, quietLogger } = require('./clients');
const { lines, SENT_AT } = require('./pods');
const { MiB, RssSampler, Window } = require('./measure');
const { threadCount, statusBytes, resetPeakRss, mainThreadCpuNs } = require('../testbed/proc');

let task;

const gc = () => globalThis.gc?.();

/** How often the bound's loop lets the event loop turn (see the header). */
const TURN_MS = 2;
const turn = () => new Promise((resolve) => setImmediate(resolve));

/** JSON.parse of `count` watch lines as a client reads them (`onEvent(i)` before line i): names read. */
async function parseLines(texts, count, onEvent) {
  let names = 0;
  // Look at the clock about every 0.2 ms of parsing: often enough to turn on time, rarely
  // enough to cost the loop nothing measurable.
  const stride = Math.max(1, Math.round(200 / (texts[0].length / 250)));
  let turnAt = performance.now() + TURN_MS;
  for (let i = 0; i < count; i++) {
    onEvent?.(i);
    if (JSON.parse(texts[i % texts.length]).object.metadata.name) names++;
    if (i % stride === stride - 1 && performance.now() >= turnAt) {
      await turn();
      turnAt = performance.now() + TURN_MS;
    }
  }
  return names;
}

/** Whether options.fields was honoured: the object holds only the projected paths. */
const fieldsCheck = (object) => object.spec === undefined && object.metadata?.managedFields === undefined;

/** The watch lines of `size` as strings without their newline (what a line splitter yields). */
const textsOf = (size) => lines(size, 64).map((l) => l.slice(0, -1));

/**
 * The JSON.parse floor measured inside this process, for `ms` of wall time: main-thread µs per
 * event. Run right before and right after a stream, it pairs each client with a bound taken in
 * the same process and at nearly the same moment, which cancels most of a noisy machine's drift.
 */
async function ownBound(texts, ms) {
  let names = await parseLines(texts, 200);
  const w = new Window({ eld: false });
  w.start();
  const until = performance.now() + ms;
  let n = 0;
  while (performance.now() < until) {
    names += await parseLines(texts, 64);
    n += 64;
  }
  return names > 0 ? w.stop(n).mainUsPerEvent : NaN;
}

async function throughput(client) {
  const texts = textsOf(task.size);
  const boundBefore = await ownBound(texts, task.ownBoundMs);
  gc();
  resetPeakRss();
  const sampler = new RssSampler(5);
  const startRss = process.memoryUsage.rss();
  const window = new Window();
  const { count, warmup } = task;
  let n = 0;
  let names = 0;
  let projected;
  const target = { ...task.target, fields: FIELDS };
  const watch = client.open(target, (object) => {
    if (object.metadata.name) names++;
    if (++n === warmup) window.start();
    if (projected === undefined) projected = fieldsCheck(object);
  });
  const end = await watch.done;
  if (n < warmup) window.start();
  const result = window.stop(n - warmup);
  const peakRss = sampler.stop();
  const threads = threadCount();
  const boundAfter = await ownBound(texts, task.ownBoundMs);
  const ownBoundUsPerEvent = (boundBefore + boundAfter) / 2;
  return {
    ...result,
    ownBoundUsPerEvent,
    mainVsOwnBound: result.mainUsPerEvent / ownBoundUsPerEvent,
    totalEvents: end.events,
    expected: count,
    error: end.error ?? (n !== count ? { detail: `got ${n} of ${count} events` } : undefined),
    namesRead: names,
    fieldsHonoured: task.client === 'native-fields' ? projected : undefined,
    startRssMiB: startRss / MiB,
    peakRssMiB: peakRss / MiB,
    threads,
    warnings: quietLogger.warnings.slice(0, 3),
  };
}

/** The bound row: the same lines parsed in a tight loop, no network. */
async function bound() {
  const texts = textsOf(task.size);
  gc();
  resetPeakRss();
  const startRss = process.memoryUsage.rss();
  const window = new Window({ eld: false });
  const { count, warmup } = task;
  const names = await parseLines(texts, count, (i) => {
    if (i === warmup) window.start();
  });
  const result = window.stop(count - warmup);
  return {
    ...result,
    // A tight loop (it yields only so the GC runs): the event-loop figures do not apply.
    elu: NaN,
    totalEvents: count,
    expected: count,
    namesRead: names,
    startRssMiB: startRss / MiB,
    peakRssMiB: Math.max(process.memoryUsage.rss(), statusBytes('VmHWM')) / MiB,
    threads: threadCount(),
  };
}

async function trickle(client) {
  const delays = [];
  const window = new Window({ eld: false });
  const watch = client.open(task.target, (object) => {
    const now = performance.timeOrigin + performance.now();
    // CPU per event counts from the first event on (connection setup excluded).
    if (delays.length === 0) window.start();
    if (object.metadata.name) delays.push(now - Number(object.metadata.annotations[SENT_AT]));
  });
  const end = await watch.done;
  const w = window.stop(delays.length - 1);
  const q = (p) => quantile(delays, p / 100);
  return {
    events: delays.length,
    expected: task.count,
    error:
      end.error ??
      (delays.length !== task.count ? { detail: `got ${delays.length} of ${task.count}` } : undefined),
    ...{ latencyP50Ms: q(50), latencyP90Ms: q(90), latencyP99Ms: q(99) },
    ...{ latencyMaxMs: Math.max(...delays), latencyMinMs: Math.min(...delays) },
    ...{ mainUsPerEvent: w.mainUsPerEvent, cpuUsPerEvent: w.cpuUsPerEvent, elu: w.elu },
  };
}

async function slow(client) {
  gc();
  await sleep(50);
  const startRss = process.memoryUsage.rss();
  const limit = startRss + task.abortAboveBytes;
  let overLimit = false;
  let stop = false;
  const sampler = new RssSampler(5, (rss) => {
    if (rss > limit) {
      overLimit = true;
      stop = true;
    }
  });
  const deadline = setTimeout(() => (stop = true), task.durationMs);
  let n = 0;
  const t0 = performance.now();
  const watch = client.open(
    task.target,
    (object) => {
      if (stop) return STOP;
      if (object.metadata.name) n++;
      return sleep(1);
    },
    { queue: true },
  );
  // The client-node queue can grow without bound: cancel as soon as the sampler says so.
  const guard = setInterval(() => stop && watch.cancel(), 20);
  const end = await watch.done;
  clearInterval(guard);
  clearTimeout(deadline);
  const seconds = (performance.now() - t0) / 1000;
  const peakRss = sampler.stop();
  const stats = await ask({ what: 'stats' });
  return {
    events: n,
    seconds,
    consumedMiB: (n * task.lineBytes) / MiB,
    serverWroteMiB: stats.bytesWritten / MiB,
    ...{ startRssMiB: startRss / MiB, peakRssMiB: peakRss / MiB, growthMiB: (peakRss - startRss) / MiB },
    overLimit,
    queued: watch.queued?.(),
    error: end.error,
  };
}

async function idle(client) {
  const settle = async () => {
    gc();
    await sleep(300);
    gc();
    await sleep(200);
  };
  await settle();
  const rss0 = process.memoryUsage.rss();
  const threads0 = threadCount();
  const opened = [];
  const openOne = () =>
    new Promise((resolve, reject) => {
      let first = true;
      const w = client.open(task.target, () => {
        if (first) {
          first = false;
          resolve();
        }
      });
      w.done.then((r) => (first ? reject(new Error(`watch ended early: ${JSON.stringify(r)}`)) : undefined));
      opened.push(w);
    });
  await openOne();
  await settle();
  const rss1 = process.memoryUsage.rss();
  const threads1 = threadCount();
  const stats1 = await ask({ what: 'stats' });
  const t0 = performance.now();
  for (let i = 1; i < task.watches; i += 50) {
    const batch = [];
    for (let j = i; j < Math.min(task.watches, i + 50); j++) batch.push(openOne());
    await Promise.all(batch);
  }
  const openSeconds = (performance.now() - t0) / 1000;
  await settle();
  await sleep(500);
  gc();
  const rssN = process.memoryUsage.rss();
  const threadsN = threadCount();
  const statsN = await ask({ what: 'stats' });
  // The Backstage-style baseline does not end on abort while its stream is idle (node-fetch emits
  // the abort on the body, which pipe() does not forward to split2), so do not wait long.
  let ended = 0;
  for (const w of opened) {
    w.done.then(() => ended++);
    w.cancel();
  }
  await Promise.race([Promise.all(opened.map((w) => w.done)), sleep(1000)]);
  return {
    ...{ endedWithin1sOfCancel: ended, watches: task.watches, openSeconds },
    ...{ rssBaseMiB: rss0 / MiB, rssOneMiB: rss1 / MiB, rssAllMiB: rssN / MiB },
    kibPerWatch: (rssN - rss1) / 1024 / (task.watches - 1),
    ...{ threads0, threads1, threadsN },
    ...{ connectionsAtOne: stats1.connectionsOpen, connectionsAtAll: statsN.connectionsOpen },
    ...{
      h2SessionsAtAll: statsN.h2SessionsOpen,
      h2Requests: statsN.h2Requests,
      h1Requests: statsN.h1Requests,
    },
  };
}

/**
 * Every client (and the bound) in THIS process, in short alternating slices, round after round:
 * a noisy machine's drift then hits all of them alike, and the per-round ratios are much tighter
 * than those of separate processes. Only main-thread CPU per event and events/s are compared.
 */
async function paired() {
  for (const name of task.clients) if (name !== 'bound') clients[name].load();
  const texts = textsOf(task.size);
  const { slice, warmup } = task;
  const rounds = [];
  let names = 0;
  const one = async (name) => {
    const window = new Window({ eld: false });
    if (name === 'bound') {
      names += await parseLines(texts, slice + warmup, (i) => {
        if (i === warmup) window.start();
      });
      return window.stop(slice);
    }
    let n = 0;
    let projected;
    const watch = clients[name].open({ ...task.target, fields: FIELDS }, (object) => {
      if (object.metadata.name) names++;
      if (++n === warmup) window.start();
      if (projected === undefined) projected = fieldsCheck(object);
    });
    const end = await watch.done;
    if (end.error || n !== slice + warmup)
      throw new Error(`${name}: got ${n} of ${slice + warmup} events ${JSON.stringify(end.error ?? '')}`);
    return { ...window.stop(n - warmup), fieldsHonoured: projected };
  };
  for (let r = 0; r < task.rounds; r++) {
    const round = {};
    const order = task.clients
      .slice(r % task.clients.length)
      .concat(task.clients.slice(0, r % task.clients.length));
    for (const name of order) round[name] = await one(name);
    // The first round warms every path up.
    if (r > 0) rounds.push(round);
    gc();
  }
  const out = {};
  const toBound = (name) => rounds.map((r) => r[name].mainUsPerEvent / r.bound.mainUsPerEvent);
  /** The median over rounds of `name`'s `metric` ÷ the baseline's. */
  const toBaseline = (name, metric) =>
    rounds[0]?.baseline ? median(rounds.map((r) => r[name][metric] / r.baseline[metric])) : NaN;
  for (const name of task.clients) {
    const per = rounds.map((r) => r[name]);
    const ratios = toBound(name).sort((a, b) => a - b);
    out[name] = {
      mainUsPerEvent: median(per.map((x) => x.mainUsPerEvent)),
      eventsPerSec: median(per.map((x) => x.eventsPerSec)),
      mainVsBound: median(ratios),
      mainVsBaseline: toBaseline(name, 'mainUsPerEvent'),
      eventsPerSecVsBaseline: toBaseline(name, 'eventsPerSec'),
      spread: [ratios[0], ratios.at(-1)],
      fieldsHonoured: name === 'native-fields' ? per.every((x) => x.fieldsHonoured) : undefined,
    };
  }
  return { rounds: rounds.length, clients: out };
}

/**
 * One client's stream, paused every `segment` events for a bound segment of as many events run
 * inline (the loop body awaits it, so the client takes nothing meanwhile): each round pairs a
 * client segment with the bound segment right after it, milliseconds apart, under the same
 * background activity (the client's own threads, the load server). On this machine that gives
 * per-round ratios within a few percent, where separate slices differ by tens of percent.
 */
async function interleaved(client) {
  const texts = textsOf(task.size);
  const { segment, rounds } = task;
  // The first two segments warm the client and the bound up.
  const skip = 2;
  const total = segment * (rounds + skip);
  const per = { client: [], bound: [], ratio: [] };
  let n = 0;
  let names = 0;
  let clientFrom = mainThreadCpuNs();
  const pauseForBound = async () => {
    const clientNs = mainThreadCpuNs() - clientFrom;
    const boundFrom = mainThreadCpuNs();
    names += await parseLines(texts, segment);
    const boundNs = mainThreadCpuNs() - boundFrom;
    if (n > segment * skip) {
      per.client.push(clientNs / segment / 1000);
      per.bound.push(boundNs / segment / 1000);
      per.ratio.push(clientNs / boundNs);
    }
    clientFrom = mainThreadCpuNs();
  };
  // The consumer the issue describes, and nothing more: a `for await` loop reading the name,
  // so the client's segments hold no harness code the bound's loop does not have.
  for await (const event of client.events({ ...task.target, fields: FIELDS })) {
    if (event.type === 'ERROR') throw new Error(`${task.client}: ${JSON.stringify(event.error)}`);
    if (event.object.metadata.name) names++;
    if (++n % segment === 0) await pauseForBound();
  }
  if (n !== total) throw new Error(`${task.client}: got ${n} of ${total} events`);
  // Quartiles, the nearest rank of the sorted rounds.
  const q = (xs, p) => xs.slice().sort((a, b) => a - b)[Math.round(p * (xs.length - 1))];
  return {
    rounds: per.ratio.length,
    mainUsPerEvent: q(per.client, 0.5),
    boundUsPerEvent: q(per.bound, 0.5),
    mainVsBound: q(per.ratio, 0.5),
    mainVsBoundQ1: q(per.ratio, 0.25),
    mainVsBoundQ3: q(per.ratio, 0.75),
    ratios: per.ratio,
    namesRead: names,
  };
}

const SCENARIOS = { bound, paired, throughput, trickle, slow, idle, interleaved };

runAsWorker(async (config) => {
  task = config;
  if (!Object.hasOwn(SCENARIOS, task.scenario)) throw new Error(`unknown scenario ${task.scenario}`);
  // The one client measured (none for the bound; `paired` loads every client itself).
  const client = clients[task.client];
  client?.load();
  const result = await SCENARIOS[task.scenario](client);
  const cpu = process.cpuUsage();
  result.workerCpuSeconds = (cpu.user + cpu.system) / 1e6;
  return result;
});
