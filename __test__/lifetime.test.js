'use strict';
// Lifetime: a running watch keeps Node alive, a finished, cancelled or never-started one does
// not (checked in child processes); an abandoned generator and a terminated worker thread let
// go of their connections; and many start/cancel cycles leave no socket, file descriptor or
// thread behind.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { useSimulator, testWithTimeout, TOKEN, paramsFor, watcherWithLogger, pod } = require('./helpers');
const { fdCount, threadCount } = require('../testbed/proc');
const { sleep, within, until, untilCollected } = require('../testbed/wait');
const { startFixture, assertExitsBy } = require('./fixture-child');

const FIXTURE = path.join(__dirname, 'fixtures', 'lifetime', 'watch.js');
const WORKER_FIXTURE = path.join(__dirname, 'fixtures', 'lifetime', 'worker.js');
/** Any child is killed after this long, so a hung one fails its test instead of the run. */
const KILL_MS = 20000;

/** A hung test fails (and its afterEach still closes the simulator) instead of hanging the run. */
const TEST_TIMEOUT_MS = 30000;
const timedTest = testWithTimeout(TEST_TIMEOUT_MS);

let sim;
const children = new Set();
// Registered before useSimulator's hooks, so a test's children are killed before its simulator closes.
test.afterEach(() => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  children.clear();
});
useSimulator((s) => (sim = s), { perTest: true });

/** Starts `script` (the watch fixture unless given) with `mode` against `url` (./fixture-child.js). */
function runChild(mode, url = sim.url, { script = FIXTURE } = {}) {
  const handle = startFixture([script, url, TOKEN, mode], { killMs: KILL_MS, stdin: 'pipe' });
  children.add(handle.child);
  return handle;
}

/** Asserts the child's watch gave one ERROR and then its end, and the child then exits cleanly. */
async function assertErrorThenExit(handle, what) {
  const end = await handle.line('end');
  assert.deepEqual(handle.texts(), ['event ERROR', 'end']);
  await assertExitsBy(handle, end.at, what);
}

timedTest('a watch the server ends cleanly: the process exits by itself', async () => {
  sim.create('pods', pod('a'));
  sim.create('pods', pod('b'));
  const child = runChild('drain');
  await until(() => child.lines.length >= 2, { ms: 5000, what: 'two events in the child' });
  assert.deepEqual(child.texts(), ['event ADDED', 'event ADDED']);
  sim.endWatches();
  const end = await child.line('end');
  await assertExitsBy(child, end.at, 'server end');
});

for (const mode of ['break', 'abort', 'return', 'idle-abort']) {
  timedTest(`a watch ended mid-stream by ${mode}: the process exits by itself`, async () => {
    sim.create('pods', pod('a'));
    sim.create('pods', pod('b'));
    const child = runChild(mode);
    const end = await child.line('end');
    assert.deepEqual(child.texts(), ['event ADDED', 'end'], 'one event, then the end, no ERROR');
    // The simulator keeps the stream open: only the child's cancel can have closed it.
    await until(() => sim.activeWatches() === 0, { ms: 1000, what: 'the server to see the watch close' });
    await assertExitsBy(child, end.at, mode);
  });
}

timedTest('a watch that ends with an HTTP error: the process exits by itself', async () => {
  sim.setFault({ status: 500 });
  const child = runChild('drain');
  await assertErrorThenExit(child, 'HTTP 500');
});

timedTest('a watch whose connection is refused: the process exits by itself', async () => {
  // A port that was free a moment ago: nothing listens there.
  const probe = net.createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  const child = runChild('drain', `http://127.0.0.1:${port}`);
  await assertErrorThenExit(child, 'connection refused');
});

timedTest(
  'a generator that is never iterated does not keep the process alive (and sends nothing)',
  async () => {
    const child = runChild('unused');
    // Counted from the generator's creation, not from the spawn: a busy machine's node start-up
    // is not the generator's doing.
    const created = await child.line('created');
    await assertExitsBy(child, created.at, 'never iterated');
    assert.equal(sim.requests.length, 0);
  },
);

timedTest('a running, idle watch keeps the process alive until the server ends it', async () => {
  sim.create('pods', pod('a'));
  const child = runChild('drain');
  await child.line('event ADDED');
  // Nothing but the watch is left in the child; the stream is open and silent.
  await sleep(1500);
  assert.ok(
    child.alive(),
    `the child exited while its watch was running; stdout: ${child.texts().join(' | ')}`,
  );
  assert.deepEqual(child.texts(), ['event ADDED']);
  assert.equal(sim.activeWatches(), 1);
  sim.endWatches();
  const end = await child.line('end');
  await assertExitsBy(child, end.at, 'end after idling');
});

timedTest(
  'a watch still waiting for response headers keeps the process alive until the server goes',
  async () => {
    sim.setFault({ stallHeaders: true });
    const child = runChild('drain');
    await until(() => sim.requests.length === 1, { ms: 5000, what: "the child's request" });
    await sleep(1500);
    assert.ok(child.alive(), `the child exited while connecting; stdout: ${child.texts().join(' | ')}`);
    assert.deepEqual(child.texts(), []);
    // Closing drops the connection: the child sees a broken watch (one ERROR), then ends.
    await sim.close();
    await assertErrorThenExit(child, 'end after the server went');
  },
);

timedTest(
  'a generator abandoned mid-stream (never finished or returned) releases its connection once collected',
  async () => {
    sim.create('pods', pod('a'));
    sim.create('pods', pod('b'));
    const { watcher } = watcherWithLogger();
    await (async () => {
      // No signal: nothing outside this function refers to the generator or its native watch.
      const gen = watcher.watchResource(paramsFor(sim), {});
      assert.equal((await within(gen.next(), 2000, 'the first event')).value.type, 'ADDED');
    })();
    assert.equal(sim.openSockets(), 1);
    await untilCollected(() => sim.openSockets() === 0, {
      ms: 3000,
      what: "the abandoned watch's connection to close after gc()",
    });
    await until(() => sim.activeWatches() === 0, { ms: 1000, what: 'the server-side watch to go' });
  },
);

timedTest(
  'terminating a worker thread mid-watch closes its connection, and the process survives it',
  async () => {
    // Node finalizes a worker's native objects when it terminates; a watch must not outlive
    // its JavaScript environment (a leaked connection per terminated worker), and the native
    // side must not touch the dead environment afterwards.
    sim.create('pods', pod('a'));
    const rounds = 4;
    const child = runChild(String(rounds), sim.url, { script: WORKER_FIXTURE });
    const leftOpen = [];
    for (let round = 0; round < rounds; round++) {
      await child.line(`round ${round} terminated`);
      // A leaked connection never closes; 5 s only bounds a busy machine's closing.
      await sim.waitForSocketsClosed(5000);
      leftOpen.push(sim.openSockets());
      if (child.alive()) child.child.stdin.write('next\n');
    }
    const exit = await child.exited;
    assert.equal(exit.signal, null, `the child died of ${exit.signal}; stdout: ${child.texts().join(' | ')}`);
    assert.equal(exit.code, 0, `exit code ${exit.code}; stderr: ${child.stderr}`);
    assert.ok(child.texts().includes('done'));
    assert.deepEqual(
      leftOpen,
      Array(rounds).fill(0),
      'simulator sockets still open 5 s after each terminate()',
    );
  },
);

timedTest('200 start/cancel cycles leave no socket, file descriptor or thread behind', async () => {
  const ns = 'cycles';
  sim.create('pods', pod('a', { namespace: ns }));
  sim.create('pods', pod('b', { namespace: ns }));
  const { watcher, logger } = watcherWithLogger();

  /** One watch, started and then cancelled the way `i` picks. */
  async function cycle(i) {
    const controller = new AbortController();
    const mode = i % 5;
    if (mode === 4) controller.abort();
    if (mode === 3) sim.nextWatchFault({ stallHeaders: true });
    const gen = watcher.watchResource(paramsFor(sim), { namespace: ns, signal: controller.signal });
    const step = (promise, what) => within(promise, 2000, `cycle ${i}: ${what}`);
    if (mode === 4) {
      // Already aborted: no request at all.
      assert.equal((await step(gen.next(), 'next()')).done, true);
      return;
    }
    if (mode === 3) {
      // Aborted while waiting for the response headers.
      const requests = sim.requests.length;
      const pending = gen.next();
      await until(() => sim.requests.length > requests, { ms: 2000, what: 'the stalled request' });
      controller.abort();
      assert.equal((await step(pending, 'the end after abort')).done, true);
      return;
    }
    const first = await step(gen.next(), 'the first event');
    assert.equal(first.value.type, 'ADDED');
    if (mode === 0) {
      // As `break` does.
      await step(gen.return(), 'return()');
    } else if (mode === 1) {
      controller.abort();
      assert.equal((await step(gen.next(), 'the end after abort')).done, true);
    } else {
      await assert.rejects(step(gen.throw(new Error('stop')), 'throw()'), /stop/);
    }
  }

  // Warm up: the tokio runtime, the pooled client, and libuv's thread pool (which starts all
  // its threads on first use) exist before the baseline.
  for (let i = 0; i < 5; i++) await cycle(i);
  await fs.promises.stat(__filename);
  assert.ok(await sim.waitForSocketsClosed(2000), 'warm-up sockets closed');
  await sleep(100);
  const fds0 = fdCount();
  const threads0 = threadCount();
  const requests0 = sim.requests.length;

  for (let i = 0; i < 200; i++) await cycle(i);

  assert.equal(sim.requests.length - requests0, 160, 'one request per cycle, none for the pre-aborted ones');
  assert.ok(await sim.waitForSocketsClosed(2000), `${sim.openSockets()} simulator socket(s) still open`);
  assert.equal(sim.openSockets(), 0);
  assert.equal(sim.activeWatches(), 0);
  // Slack: the server and client ends of one connection close on different threads, so allow
  // two descriptors still closing when we look, plus one for readdir's own; and one thread
  // for a tokio blocking-pool thread that may be parked (it leaves after 10 s idle). A leak
  // of one per cycle would show as 200 (or 400 with both ends in this process).
  const FD_SLACK = 3;
  const THREAD_SLACK = 1;
  await until(() => fdCount() <= fds0 + FD_SLACK, {
    ms: 2000,
    what: `file descriptors back near ${fds0} (now ${fdCount()})`,
  }).catch(() => {});
  await until(() => threadCount() <= threads0 + THREAD_SLACK, { ms: 2000, what: 'threads back' }).catch(
    () => {},
  );
  assert.ok(fdCount() <= fds0 + FD_SLACK, `file descriptors: ${fds0} before, ${fdCount()} after 200 cycles`);
  assert.ok(
    threadCount() <= threads0 + THREAD_SLACK,
    `threads: ${threads0} before, ${threadCount()} after 200 cycles`,
  );
  assert.deepEqual(logger.warnings(), [], 'cancelling is not worth a warning');
});
