'use strict';
// Issue 50, the native log stream (`streamLogs`, src/logs/): a container's log as the API
// server answers it, in batches of lines cut on a Rust thread, its errors as data with the
// server's message, and a follow the server ends resumed from the last line delivered with
// nothing lost or repeated, against the simulator's `pods/log` (sim/logs.js).

const test = require('node:test');
const assert = require('node:assert/strict');
const { NativeKubernetesWatcher } = require('kube-watch-native');
const { useSimulator, paramsFor, collect, recordingLogger } = require('./helpers');
const { until, sleep } = require('../testbed/wait');
const { podOfContainers } = require('./sim-helpers');

let sim;
useSimulator((s) => (sim = s), { perTest: true });

const T0 = Date.parse('2026-12-06T08:00:00.000Z');

/** Pod `name` of running containers `main` and `sidecar` and one waiting to start, `late`. */
function createPod(name = 'web') {
  sim.create('pods', podOfContainers(name));
}

function logParams(overrides = {}) {
  const { clusterDetails, credential } = paramsFor(sim);
  return { clusterDetails, credential, namespace: 'default', pod: 'web', container: 'main', ...overrides };
}

function watcher() {
  const logger = recordingLogger();
  return { watcher: new NativeKubernetesWatcher({ logger }), logger };
}

/** Every line of `events`' LINES batches, joined where a long line was cut. */
function linesOf(events) {
  const out = [];
  let open = false;
  for (const event of events) {
    if (event.type !== 'LINES') continue;
    event.lines.forEach((line, i) => {
      if (open) out[out.length - 1] += line;
      else out.push(line);
      open = event.continued.includes(i);
    });
  }
  return out;
}

const logRequests = () => sim.requests.filter((r) => r.path.endsWith('/log'));

test('a one-shot read: the lines as asked, in LINES batches, then the end', async () => {
  createPod();
  for (let i = 0; i < 5; i++)
    sim.writeLog('default', 'web', 'main', `line ${i}`, { time: new Date(T0 + i * 1000) });
  const { watcher: w } = watcher();
  const all = await collect(w.streamLogs(logParams()));
  assert.deepEqual(all, [
    { type: 'LINES', lines: ['line 0', 'line 1', 'line 2', 'line 3', 'line 4'], continued: [] },
  ]);
  const tail = await collect(w.streamLogs(logParams(), { tailLines: 2, timestamps: true }));
  assert.deepEqual(linesOf(tail), ['2026-12-06T08:00:03Z line 3', '2026-12-06T08:00:04Z line 4']);
  const since = await collect(
    w.streamLogs(logParams(), { sinceTime: '2026-12-06T08:00:03Z', limitBytes: 10 }),
  );
  assert.deepEqual(linesOf(since), ['line 3', 'lin'], '7 bytes of line 3 and its newline, 3 of line 4');
  assert.deepEqual(logRequests().at(-1).query, {
    container: 'main',
    sinceTime: '2026-12-06T08:00:03Z',
    limitBytes: '10',
  });
});

test('errors are data with the API server message: a container not valid, waiting, a pod unknown, a refused token', async () => {
  createPod();
  const { watcher: w, logger } = watcher();
  const cases = [
    [logParams({ container: 'nope' }), 'BAD_REQUEST', 400, 'container nope is not valid for pod web'],
    [
      logParams({ container: 'late' }),
      'BAD_REQUEST',
      400,
      'container "late" in pod "web" is waiting to start: ContainerCreating',
    ],
    [logParams({ pod: 'gone' }), 'NOT_FOUND', 404, 'pods "gone" not found'],
    [
      logParams({ credential: { type: 'bearer token', token: 'wrong-token-123' } }),
      'UNAUTHORIZED_ERROR',
      401,
      'Unauthorized',
    ],
  ];
  for (const [params, errorType, statusCode, message] of cases) {
    const events = await collect(w.streamLogs(params, { follow: true }));
    assert.equal(events.length, 1, JSON.stringify(events));
    assert.deepEqual(events[0], {
      type: 'ERROR',
      error: {
        errorType,
        statusCode,
        resourcePath: `/api/v1/namespaces/default/pods/${params.pod}/log`,
        message,
      },
    });
  }
  assert.equal(logger.warnings().length, cases.length);
  assert.ok(logger.warnings().every((w) => !w.includes('wrong-token-123') && !w.includes('tok-')));
});

test('a follow yields lines as they are written and ends with the server error when its pod is deleted', async () => {
  createPod();
  sim.writeLog('default', 'web', 'main', 'before');
  const { watcher: w } = watcher();
  const stream = w.streamLogs(logParams(), { follow: true });
  const events = [];
  const done = (async () => {
    for await (const event of stream) events.push(event);
  })();
  await until(() => linesOf(events).length === 1, { what: 'the line written before' });
  const written = Date.now();
  sim.writeLog('default', 'web', 'main', 'after');
  await until(() => linesOf(events).length === 2, { what: 'the line written while following' });
  assert.ok(Date.now() - written < 1000, 'within a second');
  sim.remove('pods', 'default', 'web');
  await done;
  assert.deepEqual(linesOf(events), ['before', 'after']);
  assert.deepEqual(events.at(-1).error, {
    errorType: 'NOT_FOUND',
    statusCode: 404,
    resourcePath: '/api/v1/namespaces/default/pods/web/log',
    message: 'pods "web" not found',
  });
});

test('resume: 100 forced ends of the follow (dropped connections and clean ends) lose and repeat no line', async () => {
  createPod();
  const { watcher: w, logger } = watcher();
  const controller = new AbortController();
  const stream = w.streamLogs(logParams(), { follow: true, signal: controller.signal });
  const seen = [];
  const reading = (async () => {
    for await (const event of stream) {
      if (event.type === 'ERROR') throw new Error(JSON.stringify(event));
      seen.push(...event.lines);
    }
  })();
  let written = 0;
  const write = (n) => {
    // Several lines a millisecond: a resume must count the lines of its last timestamp.
    for (let i = 0; i < n; i++) sim.writeLog('default', 'web', 'main', `line ${written++}`);
  };
  write(5);
  await until(() => seen.length === written, { what: 'the first lines' });
  for (let drop = 0; drop < 100; drop++) {
    await until(() => sim.logs.follows.size === 1, { what: `follow ${drop} open` });
    write(3);
    sim.endLogFollows({ abrupt: drop % 2 === 0 });
    write(2);
    if (drop % 10 === 0) await sleep(5);
  }
  await until(() => seen.length >= written, { what: 'every line', ms: 10_000 });
  await sleep(100);
  assert.equal(seen.length, written, 'no line repeated');
  assert.deepEqual(
    seen,
    Array.from({ length: written }, (_, i) => `line ${i}`),
    'every line, once, in order',
  );
  assert.equal(logRequests().length, 101, 'one request per follow');
  assert.ok(
    logRequests()
      .slice(1)
      .every(
        (r) =>
          r.query.sinceTime !== undefined && r.query.tailLines === undefined && r.query.timestamps === 'true',
      ),
  );
  controller.abort();
  await reading;
  assert.deepEqual(
    logger.warnings().filter((m) => !/resuming from the last line/.test(m)),
    [],
  );
});

test('a follow goes on across a container restart, into the new instance', async () => {
  createPod();
  sim.writeLog('default', 'web', 'main', 'first instance');
  const { watcher: w } = watcher();
  const events = [];
  const controller = new AbortController();
  const stream = w.streamLogs(logParams(), { follow: true, signal: controller.signal });
  const reading = (async () => {
    for await (const event of stream) events.push(event);
  })();
  await until(() => linesOf(events).length === 1, { what: 'the first line' });
  sim.restartContainer('default', 'web', 'main');
  await until(() => sim.logs.follows.size === 1 && logRequests().length === 2, {
    what: 'the follow resumed',
  });
  sim.writeLog('default', 'web', 'main', 'second instance');
  await until(() => linesOf(events).length === 2, { what: 'the new instance line' });
  assert.deepEqual(linesOf(events), ['first instance', 'second instance']);
  controller.abort();
  await reading;
  const previous = await collect(w.streamLogs(logParams(), { previous: true }));
  assert.deepEqual(linesOf(previous), ['first instance']);
});

test('bad bytes: a 10 MiB line comes in marked 16 KiB pieces, output that is not UTF-8 as U+FFFD with one warning', async () => {
  createPod();
  const big = Buffer.alloc(10 * 1024 * 1024, 'x');
  sim.writeLog('default', 'web', 'main', Buffer.concat([big, Buffer.from('\nafter\n\xff bad\n', 'latin1')]));
  const { watcher: w, logger } = watcher();
  const events = await collect(w.streamLogs(logParams()), { timeoutMs: 20_000 });
  const pieces = events.flatMap((e) => e.lines);
  assert.equal(pieces.length, 640 + 2, '10 MiB in 640 pieces, then two lines');
  assert.ok(pieces.slice(0, 640).every((p) => p.length === 16 * 1024));
  const lines = linesOf(events);
  assert.equal(lines.length, 3);
  assert.equal(lines[0].length, big.length);
  assert.deepEqual(lines.slice(1), ['after', '\ufffd bad']);
  assert.deepEqual(
    logger.warnings().filter((m) => /not UTF-8/.test(m)).length,
    1,
    logger.warnings().join('\n'),
  );
});

test('an abort, a break or return() closes the follow within a second', async () => {
  createPod();
  sim.writeLog('default', 'web', 'main', 'one');
  const { watcher: w } = watcher();
  const controller = new AbortController();
  const stream = w.streamLogs(logParams(), { follow: true, signal: controller.signal });
  const got = [];
  const reading = (async () => {
    for await (const event of stream) got.push(event);
  })();
  // Read up to the line written: the follow is open and delivering.
  await until(() => got.length > 0, { what: 'the first line' });
  assert.equal(sim.logs.follows.size, 1);
  const aborted = Date.now();
  controller.abort();
  await reading;
  assert.equal(linesOf(got)[0], 'one');
  await until(() => sim.logs.follows.size === 0, { what: 'the connection closed', ms: 1000 });
  assert.ok(Date.now() - aborted < 1000);

  for await (const event of w.streamLogs(logParams(), { follow: true })) {
    assert.deepEqual(event.lines, ['one']);
    break;
  }
  await until(() => sim.logs.follows.size === 0, { what: 'closed after break', ms: 1000 });
});

test('malformed arguments throw a TypeError naming the field', () => {
  const { watcher: w } = watcher();
  const base = {
    clusterDetails: { name: 'c', url: 'http://127.0.0.1:1' },
    credential: { type: 'anonymous' },
  };
  const cases = [
    [{ ...base, pod: 'p' }, {}, /params\.namespace must be a non-empty string/],
    [{ ...base, namespace: 'n' }, {}, /params\.pod must be a non-empty string/],
    [{ ...base, namespace: 'n', pod: 'p', container: 3 }, {}, /params\.container must be a string/],
    [
      { ...base, namespace: 'n', pod: 'p' },
      { tailLines: -1 },
      /options\.tailLines must be a whole number >= 0/,
    ],
    [
      { ...base, namespace: 'n', pod: 'p' },
      { sinceSeconds: 0 },
      /options\.sinceSeconds must be a whole number >= 1/,
    ],
    [
      { ...base, namespace: 'n', pod: 'p' },
      { sinceTime: 'yesterday' },
      /options\.sinceTime must be an RFC 3339 time/,
    ],
    [
      { ...base, namespace: 'n', pod: 'p' },
      { sinceTime: '2026-12-06T10:00:00Z', sinceSeconds: 5 },
      /cannot both be set/,
    ],
    [{ ...base, namespace: 'n', pod: 'p' }, { follow: 'yes' }, /options\.follow must be a boolean/],
  ];
  for (const [params, options, message] of cases) {
    assert.throws(
      () => w.streamLogs(params, options),
      (err) => err instanceof TypeError && message.test(err.message),
    );
  }
});

test('load: 100 000 lines a second from one container reach a follower whole and in order; a slow reader holds the server back, not a buffer', async (t) => {
  createPod();
  const { watcher: w } = watcher();
  const controller = new AbortController();
  const stream = w.streamLogs(logParams(), { follow: true, signal: controller.signal });
  const PAD = 'x'.repeat(90);
  let count = 0;
  let outOfOrder = 0;
  let slow = true;
  const reading = (async () => {
    for await (const event of stream) {
      if (event.type === 'ERROR') throw new Error(JSON.stringify(event));
      for (const line of event.lines) if (line !== `${count++} ${PAD}`) outOfOrder++;
      // A reader that takes 100 ms a batch: about 5 000 lines a second.
      if (slow) await sleep(100);
    }
  })();
  await until(() => sim.logs.follows.size === 1, { what: 'the follow open' });
  const [res] = sim.logs.follows;
  let serverHeld = 0;
  const TOTAL = 200_000;
  const started = Date.now();
  for (let written = 0; written < TOTAL;) {
    const lines = [];
    for (let i = 0; i < 1000; i++) lines.push(`${written + i} ${PAD}`);
    sim.writeLog('default', 'web', 'main', lines.join('\n'));
    written += 1000;
    serverHeld = Math.max(serverHeld, res.writableLength);
    // 1 000 lines every 10 ms.
    await sleep(Math.max(0, started + written / 100 - Date.now()));
  }
  const writing = Date.now() - started;
  assert.ok(count < TOTAL / 2, `the slow reader took ${count} lines of ${TOTAL} while they were written`);
  assert.ok(serverHeld > 4 * 1024 * 1024, `the server held ${serverHeld} bytes it could not send`);
  slow = false;
  await until(() => count >= TOTAL, { what: `all ${TOTAL} lines (${count} so far)`, ms: 20_000 });
  assert.equal(count, TOTAL);
  assert.equal(outOfOrder, 0);
  controller.abort();
  await reading;
  t.diagnostic(`wrote ${TOTAL} lines in ${writing} ms; the server held up to ${serverHeld} bytes`);
});

/** Reads `stream` into `events` until it ends; returns the promise of its end. */
function drainInto(stream, events) {
  return (async () => {
    for await (const event of stream) events.push(event);
  })();
}

/** A shared follow of the pod's `main` with `options`, read into `events`; the promise of its end. */
function followShared(w, signal, events, options = {}) {
  return drainInto(w.streamLogs(logParams(), { follow: true, share: true, signal, ...options }), events);
}

test('shared: 50 followers of one container cost one request; each gets its own tail and timestamps; the last to go closes it', async () => {
  createPod();
  for (let i = 0; i < 5; i++)
    sim.writeLog('default', 'web', 'main', `old ${i}`, { time: new Date(T0 + i * 1000) });
  const { watcher: w } = watcher();
  const controller = new AbortController();
  const first = [];
  const firstDone = followShared(w, controller.signal, first);
  await until(() => linesOf(first).length === 5, { what: 'the first follower has the log' });
  const readers = Array.from({ length: 49 }, (_, i) => {
    const events = [];
    const options = {
      follow: true,
      share: true,
      signal: controller.signal,
      tailLines: i % 5,
      timestamps: i % 2 === 0,
    };
    return { i, events, done: drainInto(w.streamLogs(logParams(), options), events) };
  });
  await until(() => readers.every(({ i, events }) => linesOf(events).length === i % 5), {
    what: 'each reader its own tail',
  });
  sim.writeLog('default', 'web', 'main', 'new line');
  await until(() => readers.every(({ i, events }) => linesOf(events).length === (i % 5) + 1), {
    what: 'the new line at every reader',
  });
  assert.equal(logRequests().length, 1, 'one upstream request for 50 followers');
  assert.equal(sim.logs.follows.size, 1);
  const read = await collect(w.streamLogs(logParams(), { share: true, tailLines: 2, limitBytes: 12 }));
  assert.deepEqual(
    linesOf(read),
    ['old 4', 'new li'],
    'a one-shot read from the kept lines, its own limit (6 + 6 bytes)',
  );
  assert.equal(logRequests().length, 1, 'and no request of its own');
  for (const { i, events } of readers) {
    const lines = linesOf(events);
    const expected = [...Array.from({ length: 5 }, (_, k) => `old ${k}`).slice(5 - (i % 5)), 'new line'];
    if (i % 2 === 0) {
      assert.match(lines.at(-1), /^\d{4}-\d{2}-\d{2}T[\d:.]+Z new line$/);
      assert.deepEqual(
        lines.map((l) => l.replace(/^\S+ /, '')),
        expected,
      );
    } else assert.deepEqual(lines, expected);
  }
  assert.deepEqual(linesOf(first), ['old 0', 'old 1', 'old 2', 'old 3', 'old 4', 'new line']);
  controller.abort();
  await Promise.all([firstDone, ...readers.map((r) => r.done)]);
  await until(() => sim.logs.follows.size === 0, {
    what: 'the upstream closed with its last reader',
    ms: 2000,
  });
});

test('shared: another credential is another follow; a reader whose start the kept lines do not cover gets its own', async () => {
  createPod();
  sim.writeLog('default', 'web', 'main', 'one');
  sim.writeLog('default', 'web', 'main', 'two');
  const { watcher: w } = watcher();
  const controller = new AbortController();
  const a = [];
  const b = [];
  const c = [];
  const options = { follow: true, share: true, signal: controller.signal };
  const ends = [drainInto(w.streamLogs(logParams(), { ...options, tailLines: 1 }), a)];
  await until(() => linesOf(a).length === 1, { what: 'the first reader' });
  // Two lines back are not kept (the follow began one line back): a follow of its own.
  ends.push(drainInto(w.streamLogs(logParams(), { ...options, tailLines: 2 }), b));
  await until(() => linesOf(b).length === 2, { what: 'the uncovered reader' });
  const other = logParams({ credential: { type: 'bearer token', token: 'second-token-456' } });
  ends.push(drainInto(w.streamLogs(other, options), c));
  await until(() => c.length > 0, { what: 'the other credential answered' });
  assert.equal(logRequests().length, 3, 'three follows: shared, uncovered, another credential');
  assert.deepEqual(linesOf(a), ['two']);
  assert.deepEqual(linesOf(b), ['one', 'two']);
  assert.equal(c[0].type, 'ERROR', 'the simulator knows one token: the other is refused on its own');
  controller.abort();
  await Promise.all(ends);
});

test('shared: a reader too slow for what is kept skips ahead with a SKIPPED item; the other readers lose nothing', async () => {
  createPod();
  const { watcher: w } = watcher();
  const controller = new AbortController();
  const fast = [];
  const fastDone = followShared(w, controller.signal, fast);
  const slow = [];
  const slowDone = (async () => {
    for await (const event of w.streamLogs(logParams(), {
      follow: true,
      share: true,
      signal: controller.signal,
    })) {
      slow.push(event);
      await sleep(300);
    }
  })();
  await until(() => sim.logs.follows.size === 1, { what: 'the shared follow' });
  // 12 MiB of lines: three times what a shared follow keeps.
  const PAD = 'y'.repeat(1000);
  const TOTAL = 12_000;
  for (let written = 0; written < TOTAL; written += 500) {
    const lines = [];
    for (let i = 0; i < 500; i++) lines.push(`${written + i} ${PAD}`);
    sim.writeLog('default', 'web', 'main', lines.join('\n'));
    await sleep(5);
  }
  await until(() => linesOf(fast).length === TOTAL, { what: `the fast reader's ${TOTAL} lines`, ms: 20_000 });
  assert.deepEqual(
    linesOf(fast).map((l) => Number(l.split(' ')[0])),
    Array.from({ length: TOTAL }, (_, i) => i),
    'the fast reader: every line, in order',
  );
  await until(() => slow.some((e) => e.type === 'SKIPPED'), {
    what: 'the slow reader told it skipped',
    ms: 20_000,
  });
  const skipped = slow.filter((e) => e.type === 'SKIPPED').reduce((n, e) => n + e.lines, 0);
  assert.ok(skipped > 0);
  controller.abort();
  await Promise.all([fastDone, slowDone]);
  assert.equal(logRequests().length, 1);
});
