'use strict';
// The object watchResource() returns: an AsyncGenerator in shape and behaviour (it is written by
// hand, for speed), that takes ready batches without a Promise and still lets the event loop
// turn while a flood of them lasts.

const test = require('node:test');
const assert = require('node:assert/strict');
const { HOLD_LOOP_MS } = require('../packages/kube-watch-native/lib/event-stream');
const {
  useSimulator,
  testWithTimeout,
  paramsFor,
  watcherWithLogger,
  pod,
  seedPods,
  countBatches,
  onCrossings,
  floodWatches,
} = require('./helpers');
const { sleep, within } = require('../testbed/wait');

const TEST_TIMEOUT_MS = 20000;
const timedTest = testWithTimeout(TEST_TIMEOUT_MS);

let sim;
useSimulator((s) => (sim = s), { clearFaults: true });

test('it is an AsyncGenerator: tag, prototype chain, its own async iterator', () => {
  const { watcher } = watcherWithLogger();
  const gen = watcher.watchResource(paramsFor(sim), { namespace: 'shape' });
  const AsyncGeneratorPrototype = Object.getPrototypeOf(async function* () {}).prototype;
  assert.equal(Object.prototype.toString.call(gen), '[object AsyncGenerator]');
  assert.ok(AsyncGeneratorPrototype.isPrototypeOf(gen));
  assert.equal(gen[Symbol.asyncIterator](), gen);
  for (const method of ['next', 'return', 'throw']) assert.equal(typeof gen[method], 'function');
  // Never iterated: nothing was started, so there is nothing to clean up.
  assert.equal(sim.activeWatches(), 0);
});

timedTest('next() called many times without awaiting resolves every event once, in order', async () => {
  seedPods(sim, 'burst-next', 5);
  const { watcher, logger } = watcherWithLogger();
  const gen = watcher.watchResource(paramsFor(sim), { namespace: 'burst-next' });
  // The first calls wait for the network, the later ones queue behind them.
  const results = await within(Promise.all(Array.from({ length: 5 }, () => gen.next())), 5000, 'five events');
  assert.deepEqual(
    results.map((r) => [r.done, r.value.object.metadata.name]),
    [0, 1, 2, 3, 4].map((i) => [false, `p${i}`]),
  );
  await gen.return();
  assert.deepEqual(logger.warnings(), []);
});

timedTest(
  'return() and throw() queued behind a pending next() run after it, like an async generator',
  async () => {
    const { watcher } = watcherWithLogger();
    const gen = watcher.watchResource(paramsFor(sim), { namespace: 'queued' });
    const order = [];
    const pending = gen.next().then((r) => order.push(['next', r.value?.object.metadata.name]));
    const returned = gen.return('bye').then((r) => order.push(['return', r.value, r.done]));
    await sleep(100);
    assert.deepEqual(order, [], 'both wait: nothing has arrived yet');
    sim.create('pods', pod('late', { namespace: 'queued' }));
    await within(Promise.all([pending, returned]), 5000, 'the event, then the return');
    assert.deepEqual(order, [
      ['next', 'late'],
      ['return', 'bye', true],
    ]);
    assert.deepEqual(await gen.next(), { value: undefined, done: true });

    const other = watcher.watchResource(paramsFor(sim), { namespace: 'queued' });
    const first = other.next();
    const err = new Error('stop');
    const thrown = other.throw(err);
    assert.equal((await within(first, 5000, 'the replayed event')).value.object.metadata.name, 'late');
    await assert.rejects(thrown, (e) => e === err);
    assert.deepEqual(await other.next(), { value: undefined, done: true });
  },
);

test('return() and throw() before the first next() end it without a request', async () => {
  const { watcher } = watcherWithLogger();
  const before = sim.requests.length;
  const a = watcher.watchResource(paramsFor(sim), { namespace: 'never' });
  assert.deepEqual(await a.return(42), { value: 42, done: true });
  assert.deepEqual(await a.next(), { value: undefined, done: true });
  const b = watcher.watchResource(paramsFor(sim), { namespace: 'never' });
  await assert.rejects(b.throw(new Error('no')), /no/);
  assert.deepEqual(await b.next(), { value: undefined, done: true });
  await sleep(50);
  assert.equal(sim.requests.length, before, 'no request was sent');
});

timedTest(
  'under load most batches are taken without a Promise, and every event arrives in order',
  async () => {
    const body = floodWatches(sim, 8 * 1024 * 1024);
    const { watcher, logger } = watcherWithLogger();
    const counts = countBatches();
    let seq = 0;
    try {
      // A consumer slower than the stream, so batches are ready whenever it asks.
      for await (const event of watcher.watchResource(paramsFor(sim), { namespace: 'load' })) {
        assert.equal(event.object.seq, seq++);
        const spin = performance.now() + 0.02;
        while (performance.now() < spin);
      }
    } finally {
      counts.restore();
    }
    assert.equal(seq, body.lines, 'every line arrived');
    assert.ok(
      counts.taken > 2 * counts.awaited,
      `batches taken at once (${counts.taken}) should outnumber those awaited (${counts.awaited})`,
    );
    assert.deepEqual(logger.warnings(), []);
  },
);

/**
 * Counts the batch texts the watch behind a stream hands over, until restore(), however each
 * crossed: taken at once (takeBatch(), a native poll()), or handed to a waiting next() by the
 * hub's wake-up (a string, or a batch object either way). Which way a batch crosses depends on
 * whether the consumer or the socket is ahead at that moment, which a busy machine decides;
 * every text is made the same way.
 * `onText(text)` sees each of those texts.
 */
function watchBehindTheStream(onText = () => {}) {
  const seen = { textBatches: 0 };
  const record = (batch) => {
    const text = typeof batch === 'string' ? batch : batch?.events;
    if (!text) return;
    seen.textBatches++;
    onText(text);
  };
  seen.restore = onCrossings({ taken: record, woken: record });
  return seen;
}

/**
 * Streams `bytes` of 1 KiB lines to a watch in `namespace` and consumes them, checking each
 * arrives once and in order; the queue fills once (after the first event) so batches are ready
 * ahead of the consumer. `onEvent(seq)` runs after each, `onText(text)` for each batch text.
 * Resolves with the number of batch texts handed over.
 */
async function consumeFlood(namespace, bytes, { onEvent = () => {}, onText } = {}) {
  const body = floodWatches(sim, bytes);
  const { watcher, logger } = watcherWithLogger();
  const seen = watchBehindTheStream(onText);
  let seq = 0;
  try {
    for await (const event of watcher.watchResource(paramsFor(sim), { namespace })) {
      assert.equal(event.object.seq, seq++);
      assert.equal(event.resourceVersion, String(seq));
      if (seq === 1) await sleep(300);
      onEvent(seq);
    }
  } finally {
    seen.restore();
  }
  assert.equal(seq, body.lines, 'every line arrived, once, in order');
  assert.deepEqual(logger.warnings(), []);
  return seen;
}

timedTest('a busy watch hands over many batches, every event intact and in order', async () => {
  const seen = await consumeFlood('busy', 8 * 1024 * 1024, {
    // A consumer a little slower than the stream.
    onEvent() {
      const spin = performance.now() + 0.01;
      while (performance.now() < spin);
    },
  });
  // 8 MiB in batches of at most 64 KiB (MAX_BATCH_BYTES): at least 128 of them, whether
  // taken at once or awaited.
  assert.ok(seen.textBatches >= 128, `${seen.textBatches} batch texts`);
});

timedTest(
  'a batch text keeps its bytes after later batches are taken (nothing is rewritten under a live string)',
  async () => {
    // Every batch text is kept alive, with a copy of its bytes made when it was taken.
    const kept = [];
    const seen = await consumeFlood('kept', 8 * 1024 * 1024, {
      onText: (text) => kept.push([text, Buffer.from(text, 'latin1')]),
    });
    assert.equal(kept.length, seen.textBatches);
    // Every text of the 8 MiB, however it crossed: at least 128 (see above).
    assert.ok(kept.length >= 128, `${kept.length} batch texts kept`);
    const changed = kept.filter(([text, bytes]) => !Buffer.from(text, 'latin1').equals(bytes)).length;
    assert.equal(changed, 0, `${changed} of ${kept.length} kept batch texts changed after they were taken`);
  },
);

timedTest('a flood of ready batches still lets timers run every few milliseconds', async () => {
  const body = floodWatches(sim, 16 * 1024 * 1024);
  const { watcher } = watcherWithLogger();
  const gen = watcher.watchResource(paramsFor(sim), { namespace: 'fair' });
  // Let the native queue fill (4 MiB of 1 KiB lines), so every batch is ready the moment
  // JavaScript asks for it: 3000 events at 50 µs each are 150 ms of work with no wait.
  assert.equal((await within(gen.next(), 5000, 'the first event')).done, false);
  await sleep(300);
  // Counted in events, not milliseconds: how many the loop handled between two runs of a 1 ms
  // timer. A busy machine stretches the gaps between ticks in time (the process is not
  // running), but not in events, so the count measures the stream, not the scheduler.
  let ticks = 0;
  let sinceTick = 0;
  let mostBetweenTicks = 0;
  const timer = setInterval(() => {
    mostBetweenTicks = Math.max(mostBetweenTicks, sinceTick);
    sinceTick = 0;
    ticks++;
  }, 1);
  let events = 0;
  try {
    // No await of our own in the loop: only the stream can let the event loop turn.
    for await (const event of gen) {
      assert.ok(event.object.seq > 0);
      const spin = performance.now() + 0.05;
      while (performance.now() < spin);
      sinceTick++;
      if (++events === 3000) break;
    }
  } finally {
    clearInterval(timer);
  }
  mostBetweenTicks = Math.max(mostBetweenTicks, sinceTick);
  assert.ok(ticks >= 10, `the 1 ms timer ran ${ticks} times`);
  // The stream lets the loop turn once HOLD_LOOP_MS have passed since the last turn, checked
  // before it takes a batch: at most HOLD_LOOP_MS / 50 µs events, plus the rest of the batch
  // then in hand (64 one-KiB lines in a 64 KiB batch). Twice that allows for a turn that comes
  // too soon for the timer to be due. Holding the loop for the whole flood would be 3000.
  const bound = 2 * (HOLD_LOOP_MS / 0.05 + 64);
  assert.ok(
    mostBetweenTicks <= bound,
    `${mostBetweenTicks} events between two timer ticks (at most ${bound}; hold ${HOLD_LOOP_MS} ms)`,
  );
});
