'use strict';
// An informer consumer's stream (lib/event-stream.js, through InformerConsumer in
// lib/informer.js): an async generator's contract when calls overlap a wait, and what one change
// costs the main thread while its consumer waits
// (issue 18: counted, never timed).

const test = require('node:test');
const assert = require('node:assert/strict');
const { createHook } = require('node:async_hooks');
const native = require('../packages/kube-watch-native/lib/native');
const { sim, recordingWatcher, params, cm, delay } = require('./informer-helpers');
const { within } = require('../testbed/wait');
const { NativeKubernetesWatcher } = require('kube-watch-native');

/**
 * Opens an informer of `s` through `watcher` in each namespace ns-0…ns-{count - 1}, closed when
 * test `t` ends, each read from its start by a loop that hands its events to `onEvent(event, i)`;
 * resolves once every one has synced.
 */
async function openPerNamespace(t, s, watcher, count, onEvent) {
  const opened = [];
  for (let i = 0; i < count; i++) {
    const informer = watcher.informer(params(s), { namespace: `ns-${i}` });
    t.after(() => informer.close());
    opened.push(informer);
    (async () => {
      for await (const e of informer) onEvent(e, i);
    })();
  }
  await Promise.all(opened.map((informer) => informer.synced));
}

/** Takes the consumer's events up to and including its first SYNCED. */
async function throughSynced(iterator) {
  for (;;) {
    const { value, done } = await iterator.next();
    assert.equal(done, false, 'the stream ended before SYNCED');
    if (value.type === 'SYNCED') return;
  }
}

test('calls made while a next() waits run after it, in call order, and return() ends the stream', async (t) => {
  const s = await sim(t);
  s.create('configmaps', cm('a'));
  const { watcher } = recordingWatcher();
  const informer = watcher.informer(params(s), { namespace: 'default' });
  t.after(() => informer.close());
  const it = informer[Symbol.asyncIterator]();
  assert.equal(Object.prototype.toString.call(it), '[object AsyncGenerator]');
  await throughSynced(it);
  // Nothing is ready: the first waits, the rest queue behind it.
  const order = [];
  const first = it.next().then((r) => (order.push('first'), r));
  const second = it.next().then((r) => (order.push('second'), r));
  const ended = it.return('bye').then((r) => (order.push('return'), r));
  const after = it.next().then((r) => (order.push('after'), r));
  await delay(50);
  assert.deepEqual(order, [], 'nothing settles before a change');
  s.create('configmaps', cm('b'));
  const one = await within(first, 5000, 'the first next()');
  assert.equal(one.value.type, 'ADDED');
  assert.equal(one.value.object.metadata.name, 'b');
  s.create('configmaps', cm('c'));
  const two = await within(second, 5000, 'the second next()');
  assert.equal(two.value.object.metadata.name, 'c');
  assert.deepEqual(await ended, { value: 'bye', done: true });
  assert.deepEqual(await after, { value: undefined, done: true });
  assert.deepEqual(order, ['first', 'second', 'return', 'after']);
  assert.deepEqual(await it.next(), { value: undefined, done: true });
});

test('close() ends a consumer that waits, and its queued calls with it', async (t) => {
  const s = await sim(t);
  const { watcher } = recordingWatcher();
  const informer = watcher.informer(params(s), { namespace: 'default' });
  const it = informer[Symbol.asyncIterator]();
  await throughSynced(it);
  const waiting = it.next();
  const queued = it.next();
  await delay(20);
  informer.close();
  assert.deepEqual(await within(waiting, 5000, 'the waiting next()'), { value: undefined, done: true });
  assert.deepEqual(await within(queued, 5000, 'the queued next()'), { value: undefined, done: true });
});

/**
 * `informers` informers on one simulator, one consumer each; then `changes` changes, one at a
 * time, each read before the next is made. Counts, per change: native poll() calls, calls of
 * the hub's thread-safe function, and Promises created (the test's own bookkeeping included).
 */
async function countPerChange(t, informers, changes) {
  const s = await sim(t);
  for (let i = 0; i < informers; i++) s.create('configmaps', cm('x', {}, `ns-${i}`));
  const counts = { poll: 0, back: 0, promises: 0 };
  let counting = false;
  const { poll } = native.NativeInformerConsumer.prototype;
  const { connect } = native.NativeRegistry.prototype;
  native.NativeInformerConsumer.prototype.poll = function (...args) {
    if (counting) counts.poll++;
    return poll.apply(this, args);
  };
  native.NativeRegistry.prototype.connect = function (back) {
    return connect.call(this, (...message) => {
      if (counting) counts.back++;
      return back(...message);
    });
  };
  const hook = createHook({
    init(id, type) {
      if (counting && type === 'PROMISE') counts.promises++;
    },
  });
  t.after(() => {
    hook.disable();
    Object.assign(native.NativeInformerConsumer.prototype, { poll });
    Object.assign(native.NativeRegistry.prototype, { connect });
  });
  const { watcher } = recordingWatcher();
  const seen = new Map();
  let onSeen = null;
  await openPerNamespace(t, s, watcher, informers, (e, i) => {
    if (e.type === 'MODIFIED') onSeen?.(e.object.data.v);
    else if (e.type === 'SYNCED') seen.set(i, true);
  });
  while (seen.size < informers) await delay(10);
  // Every consumer is waiting now; let the loop settle.
  await delay(50);
  hook.enable();
  counting = true;
  for (let k = 0; k < changes; k++) {
    const got = new Promise((resolve) => {
      onSeen = resolve;
    });
    // From a timer, which runs after every microtask, so the consumer's next() is waiting by
    // then: patched at once, a fast watch thread could queue the change before that next()
    // polls, and the change was taken without a wake-up (CI once saw 19 for 20 changes). A
    // timer makes no Promise to count.
    setTimeout(() => {
      s.patch('configmaps', `ns-${k % informers}`, 'x', (o) => {
        o.data.v = String(k);
      });
    }, 1);
    assert.equal(await got, String(k));
  }
  counting = false;
  hook.disable();
  return { poll: counts.poll / changes, back: counts.back / changes, promises: counts.promises / changes };
}

test('a change to a waiting consumer costs one native call, one wake-up and a Promise or two, however many informers', async (t) => {
  const one = await countPerChange(t, 1, 20);
  const many = await countPerChange(t, 20, 20);
  t.diagnostic(`per change: ${JSON.stringify({ one, many })}`);
  for (const [name, per] of [
    ['1 informer', one],
    ['20 informers', many],
  ]) {
    // One per change; the last one's may fall after the count when the loop's turn delays it.
    assert.ok(per.poll <= 1 && per.poll >= 0.9, `${name}: ${per.poll} poll() calls per change`);
    assert.equal(per.back, 1, `${name}: wake-ups per change`);
    // The waiting next()'s own Promise, and this test's: `got` and the awaits on it and on
    // next() (async_hooks counts a throwaway Promise per await). A watch's path made eleven.
    assert.ok(per.promises <= 4, `${name}: ${per.promises} Promises per change`);
  }
});

/**
 * Changes `informers` informers' objects at once, each read by its consumer, and resolves with
 * the number of wake-ups each call of the registry's function carried.
 */
async function wakeUpCalls(t, informers, watcherOptions) {
  const s = await sim(t);
  for (let i = 0; i < informers; i++) s.create('configmaps', cm('x', {}, `ns-${i}`));
  const calls = [];
  let counting = false;
  const { connect } = native.NativeRegistry.prototype;
  native.NativeRegistry.prototype.connect = function (back) {
    return connect.call(this, (from, messages) => {
      if (counting) calls.push(from.length);
      return back(from, messages);
    });
  };
  t.after(() => Object.assign(native.NativeRegistry.prototype, { connect }));
  const { watcher } = recordingWatcher(watcherOptions);
  const seen = new Map();
  await openPerNamespace(t, s, watcher, informers, (e, i) => {
    if (e.type === 'MODIFIED') seen.set(i, [...(seen.get(i) ?? []), e.object.data.v]);
  });
  await delay(100);
  counting = true;
  for (let i = 0; i < informers; i++) {
    s.patch('configmaps', `ns-${i}`, 'x', (o) => {
      o.data.v = `changed-${i}`;
    });
  }
  await within(
    (async () => {
      while (seen.size < informers) await delay(5);
    })(),
    5000,
    'every consumer seeing its change',
  );
  await delay(100);
  counting = false;
  for (let i = 0; i < informers; i++) assert.deepEqual(seen.get(i), [`changed-${i}`], `consumer ${i}`);
  assert.equal(
    calls.reduce((a, b) => a + b, 0),
    informers,
    'one wake-up per consumer',
  );
  return calls;
}

test('wake-ups that come close together cross in one call, each consumer woken once with its change', async (t) => {
  const informers = 20;
  const calls = await wakeUpCalls(t, informers);
  // Without gathering, one call per wake-up: 20. The first crosses at once, the rest within
  // the interval after it; a slow machine may spread them over a few.
  t.diagnostic(`calls: ${calls}`);
  assert.ok(calls.length <= informers / 4, `${calls.length} calls for ${informers} wake-ups: ${calls}`);
});

test('gatherMs: 0 sends each wake-up in a call of its own; a gatherMs the watcher cannot take is refused', async (t) => {
  const informers = 20;
  const calls = await wakeUpCalls(t, informers, { gatherMs: 0 });
  assert.deepEqual(calls, Array(informers).fill(1), `calls: ${calls}`);
  for (const gatherMs of [-1, Number.NaN, Infinity, '5', 1001]) {
    assert.throws(
      () => new NativeKubernetesWatcher({ gatherMs }),
      (err) => err instanceof TypeError && /options\.gatherMs/.test(err.message),
      `gatherMs ${String(gatherMs)}`,
    );
  }
});

test('news does not overtake the wake-ups held back before it: a warning after a change reaches JavaScript after both consumers’ wake-ups', async (t) => {
  const s = await sim(t);
  s.create('configmaps', cm('x'));
  const stored = s.get('configmaps', 'default', 'x');
  // The informer's watch (after its paginated list) is this test's: it writes a change and, in
  // the same write, a line that does not parse, so the reflector sends the consumers' wake-ups
  // and then its warning, back to back.
  let watch = null;
  s.nextWatchFault({
    onWatch: (ctx) => {
      watch = ctx;
    },
  });
  // Each call of the registry's function, in order: who each message is from (0: news) and,
  // for news, its kind.
  const calls = [];
  const { connect } = native.NativeRegistry.prototype;
  native.NativeRegistry.prototype.connect = function (back) {
    return connect.call(this, (from, messages) => {
      calls.push(from.map((id, i) => (id === 0 ? JSON.parse(messages[i]).kind : id)));
      return back(from, messages);
    });
  };
  t.after(() => Object.assign(native.NativeRegistry.prototype, { connect }));
  const { watcher, log } = recordingWatcher();
  const informer = watcher.informer(params(s), { namespace: 'default', initialList: 'paginated' });
  t.after(() => informer.close());
  // Two consumers of the one informer: the change wakes both, the first crossing at once (the
  // first wake-up after a quiet spell), the second held back by the Outbox's gathering, since
  // the last call was just now; the warning comes while it is held.
  const modified = [];
  const consumers = [0, 1].map((n) =>
    (async () => {
      for await (const e of informer) {
        if (e.type === 'MODIFIED') {
          modified.push(n);
          return;
        }
      }
    })(),
  );
  await informer.synced;
  await within(
    (async () => {
      while (watch === null) await delay(5);
    })(),
    5000,
    'the informer’s watch',
  );
  // Both consumers have read SYNCED and wait, armed; nothing has crossed for a while.
  await delay(200);
  const from = calls.length;
  const change = {
    type: 'MODIFIED',
    object: {
      kind: 'ConfigMap',
      apiVersion: 'v1',
      ...stored,
      metadata: { ...stored.metadata, resourceVersion: String(Number(stored.metadata.resourceVersion) + 1) },
      data: { v: '2' },
    },
  };
  watch.write(`${JSON.stringify(change)}\n{oops\n`);
  await within(Promise.all(consumers), 5000, 'both consumers reading the change');
  await within(
    (async () => {
      while (!log.warn.some((m) => /skipped a watch line/.test(m))) await delay(5);
    })(),
    5000,
    'the warning about the bad line',
  );
  assert.deepEqual(modified.sort(), [0, 1]);
  const after = calls.slice(from);
  t.diagnostic(`calls after the write: ${JSON.stringify(after)}`);
  const warnAt = after.findIndex((c) => c.includes('warn'));
  const wakeUps = after.flatMap((c, i) => c.filter((id) => typeof id === 'number').map(() => i));
  assert.equal(wakeUps.length, 2, `one wake-up per consumer: ${JSON.stringify(after)}`);
  // The first wake-up crossed alone and at once; the second was held back (gathered) and the
  // warning sent while it was: had news gone straight out, the warning would cross first.
  assert.ok(
    wakeUps.every((i) => i < warnAt),
    `the warning (call ${warnAt}) crossed before a wake-up held back before it (calls ${wakeUps}): ${JSON.stringify(after)}`,
  );
});
