'use strict';
// Backpressure: events cross into JavaScript in batches, the native queue is bounded so a
// consumer that stops pulling stops the server (not the process's memory), nothing is lost or
// reordered on the way, and one slow watch does not hold up another.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const {
  useSimulator,
  testWithTimeout,
  paramsFor,
  collect,
  watcherWithLogger,
  pod,
  flood,
  countBatches,
  floodWatches,
} = require('./helpers');
const { sleep, within, until } = require('../testbed/wait');

const MiB = 1024 * 1024;

/** The native queue's budget (src/watch/outbox.rs QUEUE_BUDGET_BYTES). */
const QUEUE_BYTES = 4 * MiB;

/** The largest a socket buffer may autotune to (`tcp_rmem`/`tcp_wmem` max), or `fallback`. */
function socketBufferMax(name, fallback) {
  try {
    return Number(fs.readFileSync(`/proc/sys/net/ipv4/${name}`, 'utf8').trim().split(/\s+/)[2]) || fallback;
  } catch {
    return fallback;
  }
}

/**
 * Where a server writing into a consumer that takes nothing must stall at the latest: the
 * native queue, plus the client's receive buffer and the server's send buffer (the kernel
 * grows both, up to these maxima, while the flood runs), plus 4 MiB for the HTTP client's read
 * buffer and Node's writable buffer. On a stock Linux box this is about 44 MiB.
 */
const STALL_CEILING =
  QUEUE_BYTES + socketBufferMax('tcp_rmem', 6 * MiB) + socketBufferMax('tcp_wmem', 4 * MiB) + 4 * MiB;

/** What the flood offers: well beyond the ceiling, so a watch without backpressure takes it all. */
const OFFERED = Math.max(128 * MiB, 2 * STALL_CEILING);

/** A hung test fails (and its afterEach still closes the simulator) instead of hanging the run. */
const TEST_TIMEOUT_MS = 40000;
const timedTest = testWithTimeout(TEST_TIMEOUT_MS);
/** The flood test drains 128 MiB through JSON.parse: seconds here, far more on a busy machine. */
const DRAIN_TIMEOUT_MS = 60000;

let sim;
useSimulator((s) => (sim = s), { clearFaults: true });

/**
 * Waits until the server has been blocked with no progress for `settleMs` (the kernel grows
 * its socket buffers for a while after the first block), then asserts it stays blocked, with
 * not one more byte written, for a further `ms`. Returns where it stalled.
 */
async function assertStalled(body, ms, what, settleMs = 300) {
  let last = -1;
  let since = Date.now();
  await until(
    () => {
      if (!body.waiting || body.written !== last) {
        last = body.written;
        since = Date.now();
        return false;
      }
      return Date.now() - since >= settleMs;
    },
    { ms: 5000, what: `${what}: the server's writes to stall` },
  );
  const before = body.written;
  await sleep(ms);
  assert.ok(body.waiting, `${what}: the server is still waiting for 'drain'`);
  assert.equal(body.written, before, `${what}: the server made no progress in ${ms} ms`);
  return before;
}

const rss = () => process.memoryUsage().rss;

timedTest('many ready events cross in far fewer batches, all in order', async () => {
  const ns = 'burst';
  const count = 2000;
  for (let i = 0; i < count; i++)
    sim.create('pods', pod(`b${String(i).padStart(4, '0')}`, { namespace: ns }));
  const { watcher, logger } = watcherWithLogger();
  const gen = watcher.watchResource(paramsFor(sim), { namespace: ns });
  // The first event starts the watch; the rest are then made ready before anything takes them:
  // the ~0.4 MB burst reaches the native queue (4 MiB) within milliseconds on loopback, so a
  // consumer that keeps pace with the socket is not what is measured (on a busy machine it
  // would take one batch per socket read, and the count would measure the scheduler).
  const first = (await within(gen.next(), 5000, 'the first event')).value;
  await sleep(1000);
  const counter = countBatches();
  let events;
  try {
    events = [first, ...(await collect(gen, { count: count - 1, timeoutMs: 10000 }))];
  } finally {
    counter.restore();
    await gen.return();
  }
  assert.equal(events.length, count);
  assert.deepEqual(
    events.map((e) => e.object.metadata.name),
    Array.from({ length: count }, (_, i) => `b${String(i).padStart(4, '0')}`),
  );
  const versions = events.map((e) => Number(e.resourceVersion));
  for (let i = 1; i < count; i++) assert.ok(versions[i] > versions[i - 1], 'resourceVersions increase');
  // One batch per event would be 2000; ~0.4 MB of ready events fill about seven 64 KiB batches
  // (plus one for anything still arriving after the pause). 20 leaves a margin for a busy machine.
  assert.ok(counter.batches() <= 20, `${counter.batches()} batches for ${count - 1} ready events`);
  assert.deepEqual(logger.warnings(), []);
});

timedTest('one coalesced chunk of 1000 live events arrives in a few batches, in order', async () => {
  const ns = 'coalesce';
  sim.create('pods', pod('seed', { namespace: ns }));
  sim.setFault({ writeMode: 'coalesce' });
  const { watcher } = watcherWithLogger();
  const gen = watcher.watchResource(paramsFor(sim), { namespace: ns });
  assert.equal((await within(gen.next(), 5000, 'the seed event')).value.object.metadata.name, 'seed');
  // All in one turn of the event loop: the simulator writes them as one chunk. As in the test
  // above, the first one shows the chunk is arriving, and the rest are then given the time
  // to be ready before anything takes them: a consumer waiting while the chunk is read would
  // take one batch per socket read, and the count would measure the scheduler.
  for (let i = 0; i < 1000; i++) sim.create('pods', pod(`c${i}`, { namespace: ns }));
  const first = (await within(gen.next(), 5000, 'the first coalesced event')).value;
  await sleep(1000);
  const counter = countBatches();
  let events;
  try {
    events = [first, ...(await collect(gen, { count: 999, timeoutMs: 10000 }))];
  } finally {
    counter.restore();
    await gen.return();
  }
  assert.deepEqual(
    events.map((e) => e.object.metadata.name),
    Array.from({ length: 1000 }, (_, i) => `c${i}`),
  );
  // ~200 kB in one chunk fills about four 64 KiB batches; 10 allows for TCP splitting it.
  assert.ok(counter.batches() <= 10, `${counter.batches()} batches for 999 coalesced events`);
});

test(
  'a consumer that stops pulling stops the server, memory stays bounded, and nothing is lost',
  { timeout: DRAIN_TIMEOUT_MS + TEST_TIMEOUT_MS },
  async () => {
    // Warm up first: the runtime, the pooled client and the V8 heap for small batches exist
    // before the baseline, so the baseline measures only what the flood adds.
    sim.create('pods', pod('warm', { namespace: 'warm' }));
    await collect(watcherWithLogger().watcher.watchResource(paramsFor(sim), { namespace: 'warm' }), {
      count: 1,
    });
    const rss0 = rss();
    let maxRss = rss0;
    const sample = () => {
      maxRss = Math.max(maxRss, rss());
    };

    const body = floodWatches(sim, OFFERED);
    const { watcher, logger } = watcherWithLogger();
    const gen = watcher.watchResource(paramsFor(sim), {});
    let expected = 0;
    const take = async () => {
      const { value, done } = await within(gen.next(), 5000, `event ${expected}`);
      assert.equal(done, false);
      assert.equal(value.type, 'ADDED');
      assert.equal(value.object.seq, expected, 'no gap, no reordering');
      expected++;
    };
    try {
      await take();

      // Phase 1: the consumer takes nothing. The native queue (4 MiB) fills, then the socket
      // buffers, then the server's writes block and stay blocked.
      const stalledAt = await assertStalled(body, 500, 'consumer idle');
      sample();
      assert.ok(stalledAt > 1 * MiB, `the server did send a fair amount first (${stalledAt} bytes)`);
      assert.ok(
        stalledAt < STALL_CEILING,
        `the server stalled at ${(stalledAt / MiB).toFixed(1)} MiB; expected under ${(STALL_CEILING / MiB).toFixed(1)} MiB`,
      );

      // Phase 2: one event per millisecond. The server moves only as fast as the consumer.
      const t0 = Date.now();
      while (Date.now() - t0 < 1000) {
        await take();
        sample();
        await sleep(1);
      }
      assert.ok(
        body.written < STALL_CEILING + MiB,
        `the server is still held back (${(body.written / MiB).toFixed(1)} MiB)`,
      );
      assert.ok(!body.closed);
      sample();
      assert.ok(
        maxRss - rss0 < 64 * MiB,
        `RSS grew by ${((maxRss - rss0) / MiB).toFixed(1)} MiB while the server offered ${OFFERED / MiB} MiB`,
      );

      // Phase 3: drain. Every remaining event arrives, in order, then the stream ends cleanly.
      const drained = (async () => {
        for (;;) {
          const { value, done } = await gen.next();
          if (done) return;
          if (value.object?.seq !== expected)
            assert.fail(`expected seq ${expected}, got ${JSON.stringify(value).slice(0, 200)}`);
          expected++;
        }
      })();
      await within(drained, DRAIN_TIMEOUT_MS, 'the drain');
      assert.equal(expected, body.lines, 'every offered event arrived');
      assert.equal(body.written, body.lines * 1024);
      assert.deepEqual(logger.warnings(), []);
    } finally {
      await gen.return();
    }
  },
);

timedTest('stalled watches (not pulled, or pulled slowly) do not delay events on another watch', async () => {
  const ns = 'fast';
  const floods = [flood(OFFERED), flood(OFFERED), flood(OFFERED)];
  // More stalled watches than the machine has runtime worker threads: a producer that blocked
  // its thread while the queue is full would starve the fast watch.
  for (const body of floods) sim.nextWatchFault({ onWatch: body.onWatch });
  const socketsBefore = sim.openSockets();
  const { watcher } = watcherWithLogger();
  const slow = floods.map(() => watcher.watchResource(paramsFor(sim), {}));
  const fast = watcher.watchResource(paramsFor(sim), { namespace: ns });
  let slowConsumer;
  let stop = false;
  try {
    for (const gen of slow)
      assert.equal((await within(gen.next(), 5000, 'a slow watch')).value.object.seq, 0);
    await Promise.all(
      floods.map((body) => until(() => body.waiting, { ms: 5000, what: 'a flood to block' })),
    );
    // The first slow watch is pulled one event per 10 ms; the others not at all.
    slowConsumer = (async () => {
      let seq = 1;
      while (!stop) {
        const { value } = await slow[0].next();
        assert.equal(value.object.seq, seq++);
        await sleep(10);
      }
    })();

    // Each change reaches the fast watch while the slow ones stay stalled. A runtime thread
    // held by a blocked producer would starve it; the time limits bound that hang only (how
    // long a busy machine takes to schedule the delivery is not this test's business).
    sim.create('pods', pod('first', { namespace: ns }));
    assert.equal((await within(fast.next(), 5000, 'the fast watch')).value.object.metadata.name, 'first');
    for (let i = 0; i < 10; i++) {
      sim.create('pods', pod(`p${i}`, { namespace: ns }));
      const { value } = await within(fast.next(), 5000, `fast event ${i}`);
      assert.equal(value.object.metadata.name, `p${i}`);
    }
    assert.ok(
      floods.every((body) => !body.closed && body.written < body.offered),
      'the slow watches are still held back',
    );
  } finally {
    stop = true;
    await slowConsumer;
    await Promise.all([...slow, fast].map((gen) => gen.return()));
  }
  // An idle pooled connection left by an earlier test may have been reused, so "no more than
  // before" rather than zero.
  await until(() => sim.openSockets() <= socketsBefore, {
    ms: 5000,
    what: "the watches' connections to close",
  });
});
