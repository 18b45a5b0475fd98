'use strict';
// Shared pieces of the JS suite: a recording logger, a simulator for a file or for each test,
// watch params (for it, and for a cluster nothing listens at), tests with a timeout, a flooding
// watch body, and a bounded way to drain a watch. The waits are in ../testbed/wait.js.

const test = require('node:test');
const { NativeKubernetesWatcher } = require('kube-watch-native');
const { HubSource } = require('../packages/kube-watch-native/lib/hub');
const { createSimulator } = require('../packages/kube-watch-native/sim');

const TOKEN = 'tok-7f3a9c1e5b2d4a6f';

/** A Backstage-shaped logger that records every call. */
function recordingLogger() {
  const lines = [];
  const record = (level) => (message, meta) => lines.push({ level, message: String(message), meta });
  const logger = {
    lines,
    error: record('error'),
    warn: record('warn'),
    info: record('info'),
    debug: record('debug'),
    child: () => logger,
    warnings: () => lines.filter((l) => l.level === 'warn').map((l) => l.message),
  };
  return logger;
}

/**
 * A `test()` whose tests fail, rather than hang the run, after `ms`: a file's
 * `const timedTest = testWithTimeout(TEST_TIMEOUT_MS)`.
 */
const testWithTimeout = (ms) => (name, fn) => test(name, { timeout: ms }, fn);

/**
 * Watch params (core pods) of a cluster nothing listens at, for the argument checks that throw
 * at call time, before any request.
 */
const UNREACHABLE = Object.freeze({
  clusterDetails: { name: 'unreachable', url: 'https://127.0.0.1:1' },
  credential: { type: 'anonymous' },
  apiVersion: 'v1',
  plural: 'pods',
});

/**
 * Runs a simulator (bearer token TOKEN) for the tests of the calling file and hands it to
 * `assign` once it has started. By default one serves the whole file and is closed after its
 * last test; `clearFaults` clears its fault after each test. With `perTest` a fresh one starts
 * before each test and is closed after it, so its `requests` and socket counts are that test's
 * alone. Hooks the caller registers before this call run before its close.
 */
function useSimulator(assign, { perTest = false, clearFaults = false } = {}) {
  let sim;
  const start = async () => assign((sim = await createSimulator({ token: TOKEN })));
  if (perTest) {
    test.beforeEach(start);
    test.afterEach(() => sim.close());
  } else {
    test.before(start);
    test.after(() => sim.close());
    if (clearFaults) test.afterEach(() => sim.setFault(null));
  }
}

/** Watch params for `sim` (core pods unless overridden). */
function paramsFor(sim, overrides = {}) {
  const { clusterDetails, ...rest } = overrides;
  return {
    clusterDetails: { name: 'sim', url: sim.url, authMetadata: {}, ...clusterDetails },
    credential: { type: 'bearer token', token: TOKEN },
    group: '',
    apiVersion: 'v1',
    plural: 'pods',
    ...rest,
  };
}

/**
 * Drains `generator` into an array, stopping after `count` events (when given) or at its end,
 * and failing after `timeoutMs`.
 */
async function collect(generator, { count = Infinity, timeoutMs = 5000 } = {}) {
  const events = [];
  let timer;
  let timedOut = false;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      reject(new Error(`collect: timed out after ${timeoutMs} ms with ${events.length} events`));
    }, timeoutMs);
  });
  const drain = (async () => {
    if (count <= 0) return;
    for await (const event of generator) {
      events.push(event);
      if (events.length >= count) break;
    }
  })();
  try {
    await Promise.race([drain, timeout]);
  } finally {
    clearTimeout(timer);
    // After a timeout a next() is still pending, and return() would wait for it: don't await.
    if (timedOut) generator.return?.().catch(() => {});
    else if (events.length < count) await generator.return?.();
  }
  return events;
}

/** A watcher with a recording logger. */
function watcherWithLogger() {
  const logger = recordingLogger();
  return { watcher: new NativeKubernetesWatcher({ logger }), logger };
}

function pod(name, { namespace = 'default', labels = {}, extra = {} } = {}) {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace, labels }, ...extra };
}

/**
 * A watch body (for the simulator's `onWatch`) that offers `totalBytes` of numbered ADDED
 * lines, `lineBytes` each, as fast as the socket takes them: it writes 64 lines at a time and
 * waits for 'drain' whenever `write()` returns false, then ends the response. `written` is
 * what it has handed to the response so far; `waiting` is true while a write is blocked.
 */
function flood(totalBytes, lineBytes = 1024) {
  const state = {
    offered: totalBytes,
    lines: Math.ceil(totalBytes / lineBytes),
    written: 0,
    seq: 0,
    waiting: false,
    closed: false,
  };
  const lineFor = (seq) => {
    const head = `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"f${seq}","resourceVersion":"${seq + 1}"},"seq":${seq},"pad":"`;
    return `${head}${'x'.repeat(Math.max(0, lineBytes - head.length - 4))}"}}\n`;
  };
  state.onWatch = async (ctx) => {
    let wake = () => {};
    ctx.res.once('close', () => {
      state.closed = true;
      wake();
    });
    while (state.seq < state.lines && !state.closed) {
      let text = '';
      for (let i = 0; i < 64 && state.seq < state.lines; i++) text += lineFor(state.seq++);
      const ok = ctx.write(text);
      state.written += text.length;
      if (!ok && !state.closed) {
        state.waiting = true;
        await new Promise((resolve) => {
          wake = resolve;
          ctx.res.once('drain', resolve);
        });
        state.waiting = false;
      }
    }
    if (!state.closed) ctx.end();
  };
  return state;
}

/** A flood() of `totalBytes` that serves every watch of `sim` from now on (its fault); its state. */
function floodWatches(sim, totalBytes) {
  const body = flood(totalBytes);
  sim.setFault({ onWatch: body.onWatch });
  return body;
}

/** Creates pods p0…p{count-1} in namespace `ns` of `sim`. */
function seedPods(sim, ns, count) {
  for (let i = 0; i < count; i++) sim.create('pods', pod(`p${i}`, { namespace: ns }));
}

/**
 * Watches batches cross into JavaScript through every hub source (lib/hub.js) until the
 * returned restore(): `taken(batch)` for a batch a takeBatch() (a native poll()) found,
 * `empty()` for one that found none (the poll armed the wake-up), `woken(batch)` for what a
 * wake-up handed a waiting stream (a batch, or null: ready to poll). A test using it runs plain
 * watches alone.
 */
function onCrossings({ taken = () => {}, empty = () => {}, woken = () => {} }) {
  const { takeBatch, wait } = HubSource.prototype;
  HubSource.prototype.takeBatch = function (...args) {
    const batch = takeBatch.apply(this, args);
    if (batch === null) empty();
    else taken(batch);
    return batch;
  };
  HubSource.prototype.wait = function (onBatch) {
    return wait.call(this, (batch) => {
      woken(batch);
      onBatch(batch);
    });
  };
  return () => Object.assign(HubSource.prototype, { takeBatch, wait });
}

/**
 * Counts how batches cross into JavaScript until `restore()`: `taken` at once by takeBatch()
 * (a native poll()), `empty` takeBatch() calls that found none, `awaited` batches taken after
 * a wake-up of a waiting stream (a watch's wake-up says its batch is ready, and the poll that
 * follows takes it; an informer consumer's carries it); `batches()` is taken + awaited.
 */
function countBatches() {
  const counts = { taken: 0, empty: 0, awaited: 0 };
  let woke = false;
  counts.restore = onCrossings({
    taken: () => {
      if (woke) counts.awaited++;
      else counts.taken++;
      woke = false;
    },
    empty: () => counts.empty++,
    woken: (batch) => {
      if (batch !== null) counts.awaited++;
      else woke = true;
    },
  });
  counts.batches = () => counts.taken + counts.awaited;
  return counts;
}

/** A clock and timers that move only when told to. */
function fakeClock(start = 1_000_000) {
  let t = start;
  const timers = new Set();
  return {
    now: () => t,
    setTimer(fn, ms) {
      const timer = { at: t + ms, fn };
      timers.add(timer);
      return () => timers.delete(timer);
    },
    /** Moves the clock to `t + ms`, firing due timers in order. */
    advance(ms) {
      const end = t + ms;
      for (;;) {
        const due = [...timers].filter((x) => x.at <= end).sort((a, b) => a.at - b.at)[0];
        if (!due) break;
        timers.delete(due);
        t = due.at;
        due.fn();
      }
      t = end;
    },
    get pending() {
      return timers.size;
    },
  };
}

module.exports = {
  fakeClock,
  TOKEN,
  UNREACHABLE,
  useSimulator,
  testWithTimeout,
  recordingLogger,
  paramsFor,
  collect,
  watcherWithLogger,
  pod,
  flood,
  floodWatches,
  seedPods,
  countBatches,
  onCrossings,
};
