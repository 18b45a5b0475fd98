'use strict';
// Cancellation: an AbortSignal (before the start, while connecting, mid-stream, with a full
// native queue), `break`, `return()` and `throw()` each end the iterator with no ERROR and
// close the connection, and the native side really stops.

const test = require('node:test');
const assert = require('node:assert/strict');
const { getEventListeners } = require('node:events');
const { spawnSync } = require('node:child_process');
const { createSimulator, certs } = require('../packages/kube-watch-native/sim');
const native = require('../packages/kube-watch-native/lib/native');
const { toSpec } = require('../packages/kube-watch-native/lib/watcher');
const { Hub } = require('../packages/kube-watch-native/lib/hub');

/** A hub of its own, as a watcher has, for the tests that drive a native watch directly. */
const hub = new Hub();
const startWatch = (spec) => hub.watch(spec);
const waiting = () => hub.waiting();
const {
  useSimulator,
  testWithTimeout,
  TOKEN,
  paramsFor,
  watcherWithLogger,
  pod,
  seedPods,
  floodWatches,
  onCrossings,
} = require('./helpers');
const { sleep, within, until, untilCollected } = require('../testbed/wait');

/** Every close is expected within this long (the contract's "promptly"). */
const CLOSE_MS = 1000;
/**
 * How long an event or a server-side record may take to arrive: this only bounds a hang (on a
 * loaded machine a flood's first event took over 2 s).
 */
const EVENT_MS = 5000;

/** A hung test fails (and its afterEach still closes the simulator) instead of hanging the run. */
const TEST_TIMEOUT_MS = 10000;

let sim;
useSimulator((s) => (sim = s), { perTest: true });

const seed = (ns, count) => seedPods(sim, ns, count);

/** What next() resolves with once the generator has ended. */
const DONE = { done: true, value: undefined };

const timedTest = testWithTimeout(TEST_TIMEOUT_MS);

/**
 * A watch from a fresh watcher, of namespace `ns` (every one when null) after `pods` pods are
 * seeded in it, that `controller` aborts. Nothing is requested before its first next().
 */
function abortableWatch(ns = null, pods = 0) {
  const { watcher, logger } = watcherWithLogger();
  if (pods) seed(ns, pods);
  const controller = new AbortController();
  const gen = watcher.watchResource(paramsFor(sim), {
    ...(ns && { namespace: ns }),
    signal: controller.signal,
  });
  return { gen, controller, logger };
}

async function assertSocketsClose(what) {
  const closed = await sim.waitForSocketsClosed(CLOSE_MS);
  assert.ok(closed, `${what}: ${sim.openSockets()} socket(s) still open after ${CLOSE_MS} ms`);
}

/** Asserts that, over `ms`, no further request reaches the simulator. */
async function assertNoMoreRequests(ms = 300) {
  const before = sim.requests.length;
  await sleep(ms);
  assert.equal(sim.requests.length, before, 'no request after the end (no reconnect)');
}

/**
 * Asserts that `gen` ended for good: next() resolves DONE (`why` says what that shows), the
 * server holds no watch, `logger` (when given) warned of nothing, and no request follows.
 */
async function assertStaysEnded(gen, { logger, why } = {}) {
  assert.deepEqual(await gen.next(), DONE, why);
  assert.equal(sim.activeWatches(), 0);
  if (logger) assert.deepEqual(logger.warnings(), []);
  await assertNoMoreRequests();
}

timedTest('a signal aborted before the call: no events, no request', async () => {
  const { watcher, logger } = watcherWithLogger();
  seed('pre', 2);
  const controller = new AbortController();
  controller.abort();
  const events = [];
  for await (const event of watcher.watchResource(paramsFor(sim), {
    namespace: 'pre',
    signal: controller.signal,
  })) {
    events.push(event);
  }
  assert.deepEqual(events, []);
  // A request started by mistake would reach a loopback server well within this time.
  await sleep(200);
  assert.equal(sim.requests.length, 0, 'no request was made');
  assert.equal(sim.openSockets(), 0, 'no connection was opened');
  assert.deepEqual(logger.warnings(), []);
});

timedTest(
  'a signal aborted after watchResource() but before the first next(): no events, no request',
  async () => {
    const { gen, controller } = abortableWatch('late', 2);
    controller.abort();
    assert.deepEqual(await within(gen.next(), CLOSE_MS, 'next()'), DONE);
    await sleep(200);
    assert.equal(sim.requests.length, 0, 'no request was made');
  },
);

timedTest(
  'abort while the server never sends headers: the pending next() ends within 1 s, socket closed, no ERROR',
  async () => {
    sim.setFault({ stallHeaders: true });
    const { gen, controller, logger } = abortableWatch();
    const pending = gen.next();
    await until(() => sim.requests.length === 1, { ms: EVENT_MS, what: 'the watch request' });
    assert.equal(sim.openSockets(), 1);
    const t0 = Date.now();
    controller.abort();
    const result = await within(pending, CLOSE_MS, 'the iterator to end after abort');
    assert.ok(Date.now() - t0 < CLOSE_MS);
    assert.deepEqual(result, DONE, 'no ERROR event, just the end');
    await assertSocketsClose('abort while connecting');
    assert.equal(sim.activeWatches(), 0);
    assert.deepEqual(logger.warnings(), [], 'a cancelled connect is not a failure worth a warning');
    await assertNoMoreRequests();
  },
);

timedTest('abort mid-stream: buffered events are dropped, no ERROR, socket closed within 1 s', async () => {
  // All five initial events in one chunk, hence one batch: the abort lands mid-batch.
  sim.setFault({ writeMode: 'coalesce' });
  const { gen, controller, logger } = abortableWatch('mid', 5);
  const batchSizes = [];
  const record = (batch) => {
    const events = typeof batch === 'string' ? batch : batch?.events;
    if (events) batchSizes.push(JSON.parse(events).length);
  };
  const restore = onCrossings({ taken: record, woken: record });
  let first;
  try {
    first = await within(gen.next(), EVENT_MS, 'the first event');
  } finally {
    restore();
  }
  assert.equal(first.value.type, 'ADDED');
  assert.ok(batchSizes[0] > 1, `the first batch held more than one event (${batchSizes})`);
  // The stream stays open (no timeout): only the abort can end it.
  await sleep(50);
  assert.equal(sim.activeWatches(), 1);
  controller.abort();
  const t0 = Date.now();
  const after = await within(gen.next(), CLOSE_MS, 'the end after abort');
  assert.ok(Date.now() - t0 < CLOSE_MS);
  // The other four ADDED events were ready (likely in the same batch), yet none may follow.
  assert.deepEqual(after, DONE);
  await assertSocketsClose('abort mid-stream');
  // Events created after the abort have nowhere to go.
  sim.create('pods', pod('later', { namespace: 'mid' }));
  await assertStaysEnded(gen, { logger });
});

timedTest('abort closes the connection at once, even while the consumer is not pulling', async () => {
  const { gen, controller } = abortableWatch('idle', 2);
  await within(gen.next(), EVENT_MS, 'the first event');
  // The generator is suspended at a yield; nobody calls next() until after the socket closed.
  controller.abort();
  await assertSocketsClose('abort with no pending next()');
  assert.equal(sim.activeWatches(), 0);
  assert.deepEqual(await gen.next(), DONE);
});

timedTest(
  'break out of for await: socket closed within 1 s, the native watch stops, no reconnect',
  async () => {
    const { watcher } = watcherWithLogger();
    seed('brk', 3);
    const seen = [];
    for await (const event of watcher.watchResource(paramsFor(sim), { namespace: 'brk' })) {
      seen.push(event.object.metadata.name);
      if (seen.length === 2) break;
    }
    assert.deepEqual(seen, ['p0', 'p1']);
    await assertSocketsClose('break');
    await until(() => sim.activeWatches() === 0, { ms: CLOSE_MS, what: 'the server-side watch to go' });
    seed('brk-after', 3);
    await assertNoMoreRequests();
    assert.equal(sim.requests.length, 1);
  },
);

timedTest(
  'return() mid-stream resolves { done: true } and closes the socket; twice is harmless',
  async () => {
    const { watcher, logger } = watcherWithLogger();
    seed('ret', 3);
    const gen = watcher.watchResource(paramsFor(sim), { namespace: 'ret' });
    assert.equal((await within(gen.next(), EVENT_MS, 'the first event')).value.object.metadata.name, 'p0');
    assert.deepEqual(await within(gen.return(), CLOSE_MS, 'return()'), DONE);
    await assertSocketsClose('return()');
    assert.deepEqual(await within(gen.return(), CLOSE_MS, 'a second return()'), DONE);
    await assertStaysEnded(gen, { logger, why: 'the remaining buffered events are gone' });
  },
);

timedTest('aborting twice, and return() after an abort, are harmless', async () => {
  const { gen, controller } = abortableWatch('twice', 2);
  await within(gen.next(), EVENT_MS, 'the first event');
  controller.abort();
  controller.abort(new Error('again'));
  assert.deepEqual(await within(gen.next(), CLOSE_MS, 'the end'), DONE);
  assert.deepEqual(await gen.return(), DONE);
  await assertSocketsClose('double abort');
});

timedTest(
  'throw(err) mid-stream rejects with that error, closes the socket, and the iterator stays ended',
  async () => {
    const { watcher } = watcherWithLogger();
    seed('thr', 3);
    const gen = watcher.watchResource(paramsFor(sim), { namespace: 'thr' });
    await within(gen.next(), EVENT_MS, 'the first event');
    const err = new Error('consumer gave up');
    await assert.rejects(within(gen.throw(err), CLOSE_MS, 'throw()'), (e) => e === err);
    await assertSocketsClose('throw()');
    await assertStaysEnded(gen);
  },
);

timedTest(
  'next() after a server-side end keeps resolving { done: true }, and a later abort is harmless',
  async () => {
    const { gen, controller, logger } = abortableWatch('end', 2);
    assert.equal((await within(gen.next(), EVENT_MS, 'event 1')).value.type, 'ADDED');
    assert.equal((await within(gen.next(), EVENT_MS, 'event 2')).value.type, 'ADDED');
    sim.endWatches();
    assert.deepEqual(await within(gen.next(), EVENT_MS, 'the end'), DONE);
    for (let i = 0; i < 3; i++) assert.deepEqual(await gen.next(), DONE);
    controller.abort();
    assert.deepEqual(await gen.next(), DONE);
    assert.deepEqual(await gen.return(), DONE);
    assert.deepEqual(logger.warnings(), []);
    await assertNoMoreRequests();
  },
);

timedTest(
  'next() after an ERROR end keeps resolving { done: true }; abort afterwards is harmless',
  async () => {
    sim.setFault({ status: 500 });
    const { gen, controller } = abortableWatch();
    const first = await within(gen.next(), EVENT_MS, 'the ERROR');
    assert.equal(first.value.type, 'ERROR');
    assert.equal(first.value.error.statusCode, 500);
    assert.deepEqual(await within(gen.next(), EVENT_MS, 'the end'), DONE);
    controller.abort();
    assert.deepEqual(await gen.next(), DONE);
  },
);

timedTest('abort with a full native queue and a consumer that stopped pulling ends promptly', async () => {
  const body = floodWatches(sim, 64 * 1024 * 1024);
  const { gen, controller, logger } = abortableWatch();
  assert.equal((await within(gen.next(), EVENT_MS, 'the first event')).value.object.seq, 0);
  // Wait until the server is blocked on a full socket: the native queue (4 MiB) is full too.
  await until(() => body.waiting && body.written > 4 * 1024 * 1024, {
    ms: 5000,
    what: 'the server to block',
  });
  const t0 = Date.now();
  controller.abort();
  await assertSocketsClose('abort with a full queue');
  assert.ok(Date.now() - t0 < CLOSE_MS);
  assert.ok(body.closed, 'the server saw its response close');
  assert.deepEqual(await within(gen.next(), CLOSE_MS, 'the end'), DONE);
  assert.ok(body.written < 64 * 1024 * 1024, 'the server never got to offer everything');
  assert.deepEqual(logger.warnings(), []);
});

timedTest(
  'abort while next() waits on a full queue that JS is draining batch by batch ends promptly',
  async () => {
    const body = floodWatches(sim, 64 * 1024 * 1024);
    const { gen, controller } = abortableWatch();
    let count = 0;
    let lastSeq = -1;
    let countAtAbort;
    const aborted = new Promise((resolve) =>
      controller.signal.addEventListener(
        'abort',
        () => {
          countAtAbort = count;
          resolve();
        },
        { once: true },
      ),
    );
    const consumer = (async () => {
      for await (const event of gen) {
        assert.equal(event.type, 'ADDED', 'no ERROR after an abort');
        assert.equal(event.object.seq, lastSeq + 1);
        lastSeq = event.object.seq;
        count++;
        if (count === 2000) setTimeout(() => controller.abort(), 0);
        // One event every so often: slow enough that the queue stays full.
        if (count % 500 === 0) await sleep(10);
      }
    })();
    await within(aborted, 8000, 'the abort after 2000 events');
    // Promptly is counted from the abort: the stream ends within CLOSE_MS of it, and the
    // events already buffered in JavaScript are not handed out after it.
    await within(consumer, CLOSE_MS, 'the consumer to end after the abort');
    assert.ok(countAtAbort >= 2000, `consumed ${countAtAbort} before the abort`);
    assert.equal(count, countAtAbort, 'no event after the abort');
    await assertSocketsClose('abort while draining');
  },
);

timedTest('NativeWatch.cancel(): twice is harmless, nextBatch() then resolves done every time', async () => {
  sim.setFault({ stallHeaders: true });
  const watch = startWatch(toSpec(paramsFor(sim), {}));
  await until(() => sim.requests.length === 1, { ms: EVENT_MS, what: 'the watch request' });
  watch.cancel();
  watch.cancel();
  for (let i = 0; i < 3; i++) {
    const batch = await within(watch.nextBatch(), CLOSE_MS, 'nextBatch() after cancel');
    assert.equal(batch.done, true);
    assert.equal(batch.events, '');
    assert.deepEqual(batch.warnings, []);
  }
  await assertSocketsClose('NativeWatch.cancel()');
});

timedTest('cancel() while waiting wakes the wait with the end, and the hub forgets the watch', async () => {
  sim.setFault({ stallHeaders: true });
  const watch = startWatch(toSpec(paramsFor(sim), {}));
  await until(() => sim.requests.length === 1, { ms: 2000, what: 'the watch request' });
  assert.equal(watch.takeBatch(), null, 'nothing ready while the headers stall');
  const before = waiting();
  const pending = watch.nextBatch();
  assert.equal(waiting(), before + 1, "the wait is the hub's");
  watch.cancel();
  const batch = await within(pending, CLOSE_MS, 'the wait after cancel()');
  assert.equal(batch.done, true);
  assert.equal(batch.events, '');
  assert.equal(waiting(), before, 'woken once, then forgotten');
  await assertSocketsClose('cancel() while waiting');
});

timedTest('cancelling one watch leaves a second watch on the same cluster running', async () => {
  const { watcher } = watcherWithLogger();
  seed('pair', 1);
  const a = new AbortController();
  const genA = watcher.watchResource(paramsFor(sim), { namespace: 'pair', signal: a.signal });
  const genB = watcher.watchResource(paramsFor(sim), { namespace: 'pair' });
  await within(genA.next(), EVENT_MS, 'A first event');
  await within(genB.next(), EVENT_MS, 'B first event');
  a.abort();
  assert.deepEqual(await within(genA.next(), CLOSE_MS, 'A end'), DONE);
  await until(() => sim.openSockets() === 1, { ms: CLOSE_MS, what: "A's socket to close" });
  sim.create('pods', pod('after', { namespace: 'pair' }));
  const next = await within(genB.next(), EVENT_MS, 'B event after A was cancelled');
  assert.equal(next.value.object.metadata.name, 'after');
  await genB.return();
  await assertSocketsClose('B return()');
});

timedTest(
  'over HTTP/2, abort and return() close their own streams while a sibling watch on the shared connection goes on',
  async () => {
    const h2 = await createSimulator({ tls: true, http2: true, token: TOKEN });
    try {
      const { watcher, logger } = watcherWithLogger();
      const params = paramsFor(h2, { clusterDetails: { caData: Buffer.from(certs.ca).toString('base64') } });
      h2.create('pods', pod('a', { namespace: 'h2' }));
      const aborted = new AbortController();
      const genA = watcher.watchResource(params, { namespace: 'h2', signal: aborted.signal });
      const genB = watcher.watchResource(params, { namespace: 'h2' });
      const genC = watcher.watchResource(params, { namespace: 'h2' });
      for (const gen of [genA, genB, genC])
        assert.equal((await within(gen.next(), 3000, 'a first event')).value.type, 'ADDED');
      assert.ok(
        h2.requests.every((r) => r.http2),
        'HTTP/2 was negotiated',
      );
      assert.equal(h2.activeWatches(), 3);

      aborted.abort();
      assert.deepEqual(await within(genA.next(), CLOSE_MS, 'A to end'), DONE);
      await until(() => h2.activeWatches() === 2, {
        ms: CLOSE_MS,
        what: "A's stream to close on the server",
      });
      assert.deepEqual(await within(genC.return(), CLOSE_MS, 'C return()'), DONE);
      await until(() => h2.activeWatches() === 1, {
        ms: CLOSE_MS,
        what: "C's stream to close on the server",
      });

      h2.create('pods', pod('b', { namespace: 'h2' }));
      const next = await within(genB.next(), EVENT_MS, 'B to go on');
      assert.equal(next.value.type, 'ADDED', 'the sibling saw no ERROR');
      assert.equal(next.value.object.metadata.name, 'b');
      await genB.return();
      await until(() => h2.activeWatches() === 0, { ms: CLOSE_MS, what: "B's stream to close" });
      assert.deepEqual(logger.warnings(), []);
    } finally {
      await h2.close();
    }
  },
);

/** Every process warning named MaxListenersExceededWarning, from now until `stop()`. */
function captureLeakWarnings() {
  const seen = [];
  const onWarning = (warning) => {
    if (warning.name === 'MaxListenersExceededWarning') seen.push(warning.message);
  };
  process.on('warning', onWarning);
  return { seen, stop: () => process.off('warning', onWarning) };
}

/** The 'abort' listeners `signal` holds (Node.js reads an EventTarget's own list). */
const abortListeners = (signal) => getEventListeners(signal, 'abort').length;

test(
  'one signal for 300 watches and 5 informers: one abort listener, no MaxListenersExceededWarning, one abort ends them all',
  { timeout: 30000 },
  async () => {
    const h2 = await createSimulator({ tls: true, http2: true, token: TOKEN });
    const warnings = captureLeakWarnings();
    const controller = new AbortController();
    const { signal } = controller;
    const informers = [];
    try {
      const { watcher, logger } = watcherWithLogger();
      const params = paramsFor(h2, { clusterDetails: { caData: Buffer.from(certs.ca).toString('base64') } });
      h2.create('pods', pod('a', { namespace: 'many' }));
      const gens = Array.from({ length: 300 }, () =>
        watcher.watchResource(params, { namespace: 'many', signal }),
      );
      // The first next() starts each watch, which is when it subscribes to the signal.
      const firsts = await within(Promise.all(gens.map((g) => g.next())), 15000, 'every first event');
      assert.ok(
        firsts.every((r) => r.value?.type === 'ADDED'),
        'every watch is running',
      );
      await until(() => h2.activeWatches() === 300, { ms: 5000, what: 'all 300 watches on the server' });
      for (let i = 0; i < 5; i++) informers.push(watcher.informer(params, { namespace: `inf-${i}`, signal }));
      await within(Promise.all(informers.map((i) => i.synced)), 10000, 'the informers to sync');
      const consumers = informers.map(async (informer) => {
        const types = [];
        for await (const event of informer) types.push(event.type);
        return types;
      });
      assert.equal(abortListeners(signal), 1, 'one listener for all 305');
      // A warning is emitted on the next tick after the listener that trips it.
      await sleep(20);

      controller.abort();
      const ends = await within(Promise.all(gens.map((g) => g.next())), CLOSE_MS * 3, 'every watch to end');
      assert.ok(
        ends.every((r) => r.done === true && r.value === undefined),
        'every watch ended, none with an event or ERROR',
      );
      const seen = await within(Promise.all(consumers), CLOSE_MS * 3, 'every informer consumer to end');
      for (const types of seen) assert.deepEqual(types, ['SYNCED'], 'an informer consumer ends normally');
      await until(() => h2.activeWatches() === 0, {
        ms: CLOSE_MS * 3,
        what: 'the server-side watches to go',
      });
      await sleep(20);
      assert.deepEqual(warnings.seen, [], 'no MaxListenersExceededWarning');
      assert.equal(abortListeners(signal), 0, 'the shared listener went with the abort');
      assert.deepEqual(logger.warnings(), []);
    } finally {
      warnings.stop();
      // Whatever failed above, nothing may keep running (a running informer holds the process).
      controller.abort();
      for (const informer of informers) informer.close();
      await h2.close();
    }
  },
);

timedTest(
  'watches and informers that end without an abort leave no listener on a long-lived signal',
  async () => {
    const { watcher } = watcherWithLogger();
    const warnings = captureLeakWarnings();
    // Not aborted before the cleanup at the end.
    const controller = new AbortController();
    const { signal } = controller;
    const informers = [];
    try {
      seed('life', 2);
      const watch = () => watcher.watchResource(paramsFor(sim), { namespace: 'life', signal });
      const first = (gen) => within(gen.next(), EVENT_MS, 'a first event');

      // break out of for await, return() and throw(): four of each, all running at once.
      const broken = Array.from({ length: 4 }, async () => {
        for await (const event of watch()) if (event.type === 'ADDED') break;
      });
      const returned = Array.from({ length: 4 }, () => watch());
      const thrown = Array.from({ length: 4 }, () => watch());
      await Promise.all([...returned, ...thrown].map(first));
      assert.equal(abortListeners(signal), 1, 'eight running watches share one listener');
      await within(Promise.all(broken), EVENT_MS, 'the loops that break');
      for (const gen of returned) await gen.return();
      for (const gen of thrown) await assert.rejects(gen.throw(new Error('stop')), /stop/);
      assert.equal(abortListeners(signal), 0, 'break, return() and throw() unsubscribed');

      // A natural end (the server ends the watch) and an ERROR end, each consumed to its end.
      const natural = Array.from({ length: 3 }, () => watch());
      await Promise.all(natural.map(first));
      await until(() => sim.activeWatches() === 3, { ms: EVENT_MS, what: 'three watches on the server' });
      sim.endWatches();
      for (const gen of natural)
        assert.equal((await collectRest(gen)).length, 1, 'the second ADDED, then the end');
      sim.setFault({ status: 500 });
      const failed = Array.from({ length: 3 }, () => watch());
      for (const gen of failed) {
        const events = await collectRest(gen);
        assert.deepEqual(
          events.map((e) => e.type),
          ['ERROR'],
        );
      }
      sim.setFault(null);
      assert.equal(abortListeners(signal), 0, 'natural and ERROR ends unsubscribed');

      // Informers: one closed, one that gives up on its own (400 to its list), one at a time
      // (all on one signal share its one listener, so only the last one's end would show).
      const closed = watcher.informer(paramsFor(sim), { namespace: 'life', signal });
      informers.push(closed);
      await closed.synced;
      assert.equal(abortListeners(signal), 1);
      closed.close();
      assert.equal(abortListeners(signal), 0, 'close() unsubscribed');
      sim.failNext(1, 400);
      const givesUp = watcher.informer(paramsFor(sim), {
        namespace: 'other',
        signal,
        initialList: 'paginated',
      });
      informers.push(givesUp);
      assert.equal(abortListeners(signal), 1);
      await assert.rejects(givesUp.synced, /ended before its initial list/);
      assert.equal(abortListeners(signal), 0, 'the informer that gave up unsubscribed');
      await sleep(20);
      assert.deepEqual(warnings.seen, []);
    } finally {
      warnings.stop();
      controller.abort();
      for (const informer of informers) informer.close();
    }
  },
);

/** The events `gen` still yields, to its end (bounded). */
async function collectRest(gen) {
  const events = [];
  for (;;) {
    const { value, done } = await within(gen.next(), EVENT_MS, 'the next event or the end');
    if (done) return events;
    events.push(value);
  }
}

test('lib/abort.js: every subscriber is told though one throws (its error surfaces as uncaught); unsubscribing is per subscription', () => {
  // In a child process: the error is meant to reach 'uncaughtException', which would fail this test.
  const script = `
    const { onAbort } = require(${JSON.stringify(require.resolve('../packages/kube-watch-native/lib/abort'))});
    const controller = new AbortController();
    const calls = [];
    onAbort(controller.signal, () => calls.push('first'));
    onAbort(controller.signal, () => { calls.push('throws'); throw new Error('boom'); });
    const twice = () => calls.push('twice');
    onAbort(controller.signal, twice);
    const second = onAbort(controller.signal, twice);
    const gone = onAbort(controller.signal, () => calls.push('unsubscribed'));
    gone();
    gone();
    onAbort(controller.signal, () => calls.push('last'));
    process.on('uncaughtException', (err) => {
      second(); // after the abort: harmless
      console.log(JSON.stringify({ calls, error: err.message }));
    });
    controller.abort();
    calls.push('after abort');
  `;
  const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 10000 });
  assert.equal(child.status, 0, child.stderr);
  assert.deepEqual(JSON.parse(child.stdout), {
    calls: ['first', 'throws', 'twice', 'twice', 'last', 'after abort'],
    error: 'boom',
  });
});

timedTest(
  'a generator abandoned with a live signal is still collected: its connection closes and the signal lets go of it',
  async () => {
    seed('gone', 1);
    const { watcher } = watcherWithLogger();
    const { signal } = new AbortController(); // outlives the generator
    const kept = watcher.watchResource(paramsFor(sim), { namespace: 'gone', signal });
    assert.equal((await within(kept.next(), EVENT_MS, 'the kept first event')).value.type, 'ADDED');
    await (async () => {
      // Nothing outside this function refers to this generator; only the signal knows of it.
      const gen = watcher.watchResource(paramsFor(sim), { namespace: 'gone', signal });
      assert.equal((await within(gen.next(), EVENT_MS, 'the first event')).value.type, 'ADDED');
    })();
    await until(() => sim.activeWatches() === 2, { ms: EVENT_MS, what: 'both watches on the server' });
    await untilCollected(() => sim.activeWatches() === 1, {
      ms: 3000,
      what: 'the abandoned watch to be collected and cancelled',
    });
    assert.equal(abortListeners(signal), 1, 'the kept watch still listens');
    await kept.return();
    // The abandoned one's place went when it was collected, so the last one out removes the listener.
    await untilCollected(() => abortListeners(signal) === 0, {
      ms: 3000,
      what: 'the signal to hold no listener',
    });
  },
);
