'use strict';
// Cancellation: an AbortSignal (before the start, while connecting, mid-stream, with a full
// native queue), `break`, `return()` and `throw()` each end the iterator with no ERROR and
// close the connection, and the native side really stops.

const test = require('node:test');
const assert = require('node:assert/strict');
const { createSimulator, certs } = require('../sim');
const native = require('../lib/native');
const { toSpec } = require('../lib/watcher');
const {
  TOKEN,
  paramsFor,
  watcherWithLogger,
  pod,
  sleep,
  within,
  until,
  flood,
  seedPods,
} = require('./helpers');

/** Every close is expected within this long (the contract's "promptly"). */
const CLOSE_MS = 1000;

/** A hung test fails (and its afterEach still closes the simulator) instead of hanging the run. */
const TEST_TIMEOUT_MS = 10000;

let sim;
test.beforeEach(async () => {
  // A fresh simulator per test, so `requests` and the socket counts belong to that test alone.
  sim = await createSimulator({ token: TOKEN });
});
test.afterEach(() => sim.close());

const seed = (ns, count) => seedPods(sim, ns, count);

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

test('a signal aborted before the call: no events, no request', { timeout: TEST_TIMEOUT_MS }, async () => {
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

test(
  'a signal aborted after watchResource() but before the first next(): no events, no request',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    const { watcher } = watcherWithLogger();
    seed('late', 2);
    const controller = new AbortController();
    const gen = watcher.watchResource(paramsFor(sim), { namespace: 'late', signal: controller.signal });
    controller.abort();
    assert.deepEqual(await within(gen.next(), CLOSE_MS, 'next()'), { done: true, value: undefined });
    await sleep(200);
    assert.equal(sim.requests.length, 0, 'no request was made');
  },
);

test(
  'abort while the server never sends headers: the pending next() ends within 1 s, socket closed, no ERROR',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    const { watcher, logger } = watcherWithLogger();
    sim.setFault({ stallHeaders: true });
    const controller = new AbortController();
    const gen = watcher.watchResource(paramsFor(sim), { signal: controller.signal });
    const pending = gen.next();
    await until(() => sim.requests.length === 1, 2000, 'the watch request');
    assert.equal(sim.openSockets(), 1);
    const t0 = Date.now();
    controller.abort();
    const result = await within(pending, CLOSE_MS, 'the iterator to end after abort');
    assert.ok(Date.now() - t0 < CLOSE_MS);
    assert.deepEqual(result, { done: true, value: undefined }, 'no ERROR event, just the end');
    await assertSocketsClose('abort while connecting');
    assert.equal(sim.activeWatches(), 0);
    assert.deepEqual(logger.warnings(), [], 'a cancelled connect is not a failure worth a warning');
    await assertNoMoreRequests();
  },
);

test(
  'abort mid-stream: buffered events are dropped, no ERROR, socket closed within 1 s',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    const { watcher, logger } = watcherWithLogger();
    seed('mid', 5);
    // All five initial events in one chunk, hence one batch: the abort lands mid-batch.
    sim.setFault({ writeMode: 'coalesce' });
    const controller = new AbortController();
    const gen = watcher.watchResource(paramsFor(sim), { namespace: 'mid', signal: controller.signal });
    const original = native.NativeWatch.prototype.nextBatch;
    const batchSizes = [];
    native.NativeWatch.prototype.nextBatch = async function nextBatch() {
      const batch = await original.call(this);
      batchSizes.push(batch.events ? JSON.parse(batch.events).length : 0);
      return batch;
    };
    let first;
    try {
      first = await within(gen.next(), 2000, 'the first event');
    } finally {
      native.NativeWatch.prototype.nextBatch = original;
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
    assert.deepEqual(after, { done: true, value: undefined });
    await assertSocketsClose('abort mid-stream');
    // Events created after the abort have nowhere to go.
    sim.create('pods', pod('later', { namespace: 'mid' }));
    assert.deepEqual(await gen.next(), { done: true, value: undefined });
    assert.equal(sim.activeWatches(), 0);
    assert.deepEqual(logger.warnings(), []);
    await assertNoMoreRequests();
  },
);

test(
  'abort closes the connection at once, even while the consumer is not pulling',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    const { watcher } = watcherWithLogger();
    seed('idle', 2);
    const controller = new AbortController();
    const gen = watcher.watchResource(paramsFor(sim), { namespace: 'idle', signal: controller.signal });
    await within(gen.next(), 2000, 'the first event');
    // The generator is suspended at a yield; nobody calls next() until after the socket closed.
    controller.abort();
    await assertSocketsClose('abort with no pending next()');
    assert.equal(sim.activeWatches(), 0);
    assert.deepEqual(await gen.next(), { done: true, value: undefined });
  },
);

test(
  'break out of for await: socket closed within 1 s, the native watch stops, no reconnect',
  { timeout: TEST_TIMEOUT_MS },
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
    await until(() => sim.activeWatches() === 0, CLOSE_MS, 'the server-side watch to go');
    seed('brk-after', 3);
    await assertNoMoreRequests();
    assert.equal(sim.requests.length, 1);
  },
);

test(
  'return() mid-stream resolves { done: true } and closes the socket; twice is harmless',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    const { watcher, logger } = watcherWithLogger();
    seed('ret', 3);
    const gen = watcher.watchResource(paramsFor(sim), { namespace: 'ret' });
    assert.equal((await within(gen.next(), 2000, 'the first event')).value.object.metadata.name, 'p0');
    assert.deepEqual(await within(gen.return(), CLOSE_MS, 'return()'), { done: true, value: undefined });
    await assertSocketsClose('return()');
    assert.deepEqual(await within(gen.return(), CLOSE_MS, 'a second return()'), {
      done: true,
      value: undefined,
    });
    assert.deepEqual(
      await gen.next(),
      { done: true, value: undefined },
      'the remaining buffered events are gone',
    );
    assert.equal(sim.activeWatches(), 0);
    assert.deepEqual(logger.warnings(), []);
    await assertNoMoreRequests();
  },
);

test('aborting twice, and return() after an abort, are harmless', { timeout: TEST_TIMEOUT_MS }, async () => {
  const { watcher } = watcherWithLogger();
  seed('twice', 2);
  const controller = new AbortController();
  const gen = watcher.watchResource(paramsFor(sim), { namespace: 'twice', signal: controller.signal });
  await within(gen.next(), 2000, 'the first event');
  controller.abort();
  controller.abort(new Error('again'));
  assert.deepEqual(await within(gen.next(), CLOSE_MS, 'the end'), { done: true, value: undefined });
  assert.deepEqual(await gen.return(), { done: true, value: undefined });
  await assertSocketsClose('double abort');
});

test(
  'throw(err) mid-stream rejects with that error, closes the socket, and the iterator stays ended',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    const { watcher } = watcherWithLogger();
    seed('thr', 3);
    const gen = watcher.watchResource(paramsFor(sim), { namespace: 'thr' });
    await within(gen.next(), 2000, 'the first event');
    const err = new Error('consumer gave up');
    await assert.rejects(within(gen.throw(err), CLOSE_MS, 'throw()'), (e) => e === err);
    await assertSocketsClose('throw()');
    assert.deepEqual(await gen.next(), { done: true, value: undefined });
    assert.equal(sim.activeWatches(), 0);
    await assertNoMoreRequests();
  },
);

test(
  'next() after a server-side end keeps resolving { done: true }, and a later abort is harmless',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    const { watcher, logger } = watcherWithLogger();
    seed('end', 2);
    const controller = new AbortController();
    const gen = watcher.watchResource(paramsFor(sim), { namespace: 'end', signal: controller.signal });
    assert.equal((await within(gen.next(), 2000, 'event 1')).value.type, 'ADDED');
    assert.equal((await within(gen.next(), 2000, 'event 2')).value.type, 'ADDED');
    sim.endWatches();
    assert.deepEqual(await within(gen.next(), 2000, 'the end'), { done: true, value: undefined });
    for (let i = 0; i < 3; i++) assert.deepEqual(await gen.next(), { done: true, value: undefined });
    controller.abort();
    assert.deepEqual(await gen.next(), { done: true, value: undefined });
    assert.deepEqual(await gen.return(), { done: true, value: undefined });
    assert.deepEqual(logger.warnings(), []);
    await assertNoMoreRequests();
  },
);

test(
  'next() after an ERROR end keeps resolving { done: true }; abort afterwards is harmless',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    const { watcher } = watcherWithLogger();
    sim.setFault({ status: 500 });
    const controller = new AbortController();
    const gen = watcher.watchResource(paramsFor(sim), { signal: controller.signal });
    const first = await within(gen.next(), 2000, 'the ERROR');
    assert.equal(first.value.type, 'ERROR');
    assert.equal(first.value.error.statusCode, 500);
    assert.deepEqual(await within(gen.next(), 2000, 'the end'), { done: true, value: undefined });
    controller.abort();
    assert.deepEqual(await gen.next(), { done: true, value: undefined });
  },
);

test(
  'abort with a full native queue and a consumer that stopped pulling ends promptly',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    const { watcher, logger } = watcherWithLogger();
    const body = flood(64 * 1024 * 1024);
    sim.setFault({ onWatch: body.onWatch });
    const controller = new AbortController();
    const gen = watcher.watchResource(paramsFor(sim), { signal: controller.signal });
    assert.equal((await within(gen.next(), 2000, 'the first event')).value.object.seq, 0);
    // Wait until the server is blocked on a full socket: the native queue (4 MiB) is full too.
    await until(() => body.waiting && body.written > 4 * 1024 * 1024, 5000, 'the server to block');
    const t0 = Date.now();
    controller.abort();
    await assertSocketsClose('abort with a full queue');
    assert.ok(Date.now() - t0 < CLOSE_MS);
    assert.ok(body.closed, 'the server saw its response close');
    assert.deepEqual(await within(gen.next(), CLOSE_MS, 'the end'), { done: true, value: undefined });
    assert.ok(body.written < 64 * 1024 * 1024, 'the server never got to offer everything');
    assert.deepEqual(logger.warnings(), []);
  },
);

test(
  'abort while next() waits on a full queue that JS is draining batch by batch ends promptly',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    const { watcher } = watcherWithLogger();
    const body = flood(64 * 1024 * 1024);
    sim.setFault({ onWatch: body.onWatch });
    const controller = new AbortController();
    const gen = watcher.watchResource(paramsFor(sim), { signal: controller.signal });
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

test(
  'NativeWatch.cancel(): twice is harmless, nextBatch() then resolves done every time',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    sim.setFault({ stallHeaders: true });
    const watch = native.startWatch(toSpec(paramsFor(sim), {}));
    await until(() => sim.requests.length === 1, 2000, 'the watch request');
    watch.cancel();
    watch.cancel();
    for (let i = 0; i < 3; i++) {
      const batch = await within(watch.nextBatch(), CLOSE_MS, 'nextBatch() after cancel');
      assert.equal(batch.done, true);
      assert.equal(batch.events, '');
      assert.deepEqual(batch.warnings, []);
    }
    await assertSocketsClose('NativeWatch.cancel()');
  },
);

test(
  'cancelling one watch leaves a second watch on the same cluster running',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    const { watcher } = watcherWithLogger();
    seed('pair', 1);
    const a = new AbortController();
    const genA = watcher.watchResource(paramsFor(sim), { namespace: 'pair', signal: a.signal });
    const genB = watcher.watchResource(paramsFor(sim), { namespace: 'pair' });
    await within(genA.next(), 2000, 'A first event');
    await within(genB.next(), 2000, 'B first event');
    a.abort();
    assert.deepEqual(await within(genA.next(), CLOSE_MS, 'A end'), { done: true, value: undefined });
    await until(() => sim.openSockets() === 1, CLOSE_MS, "A's socket to close");
    sim.create('pods', pod('after', { namespace: 'pair' }));
    const next = await within(genB.next(), 2000, 'B event after A was cancelled');
    assert.equal(next.value.object.metadata.name, 'after');
    await genB.return();
    await assertSocketsClose('B return()');
  },
);

test(
  'over HTTP/2, abort and return() close their own streams while a sibling watch on the shared connection goes on',
  { timeout: TEST_TIMEOUT_MS },
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
      assert.deepEqual(await within(genA.next(), CLOSE_MS, 'A to end'), { done: true, value: undefined });
      await until(() => h2.activeWatches() === 2, CLOSE_MS, "A's stream to close on the server");
      assert.deepEqual(await within(genC.return(), CLOSE_MS, 'C return()'), { done: true, value: undefined });
      await until(() => h2.activeWatches() === 1, CLOSE_MS, "C's stream to close on the server");

      h2.create('pods', pod('b', { namespace: 'h2' }));
      const next = await within(genB.next(), 2000, 'B to go on');
      assert.equal(next.value.type, 'ADDED', 'the sibling saw no ERROR');
      assert.equal(next.value.object.metadata.name, 'b');
      await genB.return();
      await until(() => h2.activeWatches() === 0, CLOSE_MS, "B's stream to close");
      assert.deepEqual(logger.warnings(), []);
    } finally {
      await h2.close();
    }
  },
);
