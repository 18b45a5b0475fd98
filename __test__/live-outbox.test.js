'use strict';
// The live tab's outbox in front of the events bus (backstage/following/outbox.js): while the bus is
// busy, signals of one entity and clusters merge, and the merged signal's id is one a tab has
// not seen unless both were the same signal.

const test = require('node:test');
const assert = require('node:assert/strict');
const { Outbox } = require('../packages/backstage/following/outbox');

/** An outbox whose bus holds every publish until `release()`. */
function busyOutbox() {
  const published = [];
  const held = [];
  const outbox = new Outbox({
    signals: {
      publish: (signal) =>
        new Promise((resolve) => {
          published.push(signal);
          held.push(resolve);
        }),
    },
    channelOf: (entityRef) => `kubernetes:${entityRef}`,
    now: Date.now,
    setTimer: (fn, ms) => {
      const timer = setTimeout(fn, ms);
      return () => clearTimeout(timer);
    },
    warnOnce: () => {},
  });
  // Four publishes on their way: the bus is full, what comes next waits.
  for (let i = 0; i < 4; i++)
    outbox.enqueue(`component:default/busy-${i}`, ['user:default/x'], ['sim'], `busy-${i}`);
  const release = async () => {
    while (held.length > 0) held.shift()();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { outbox, published, release };
}

test('merged signals of two ids carry a third; a signal merged with itself keeps its id', async () => {
  const { outbox, published, release } = busyOutbox();
  const E = 'component:default/one';
  outbox.enqueue(E, ['user:default/alice'], ['sim'], 'change-x'); // sent again: Alice may have it
  outbox.enqueue(E, ['user:default/bob'], ['sim'], 'change-y'); // Bob may have seen change-x
  outbox.enqueue('component:default/two', ['user:default/carol'], ['sim'], 'change-z');
  outbox.enqueue('component:default/two', ['user:default/dan'], ['sim'], 'change-z');
  await release();
  await release();
  const one = published.find((s) => s.channel === `kubernetes:${E}`);
  assert.deepEqual(one.recipients.entityRef, ['user:default/alice', 'user:default/bob']);
  assert.notEqual(one.message.id, 'change-x', 'Bob would drop it had he seen change-x');
  assert.notEqual(one.message.id, 'change-y', 'Alice would drop it had she seen change-y');
  const two = published.find((s) => s.channel === 'kubernetes:component:default/two');
  assert.deepEqual(two.recipients.entityRef, ['user:default/carol', 'user:default/dan']);
  assert.equal(two.message.id, 'change-z');
  assert.equal(outbox.counts().merged, 2);
});

test('a bus that refuses every publish: tried 1 + 3 times, a second apart, then counted lost and logged', async () => {
  const { fakeClock } = require('./helpers');
  const clock = fakeClock();
  const attempts = [];
  const warnings = [];
  const outbox = new Outbox({
    signals: {
      publish: async () => {
        attempts.push(clock.now());
        throw new Error('events down');
      },
    },
    channelOf: (entityRef) => `kubernetes:${entityRef}`,
    now: clock.now,
    setTimer: clock.setTimer,
    warnOnce: (what, message) => warnings.push([what, message]),
  });
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  outbox.enqueue('component:default/e', ['user:default/x'], ['sim'], 'id-1');
  await turn();
  assert.equal(attempts.length, 1, 'not again at once');
  for (let i = 0; i < 5; i++) {
    clock.advance(1000);
    await turn();
  }
  const start = attempts[0];
  assert.deepEqual(
    attempts.map((t) => t - start),
    [0, 1000, 2000, 3000],
  );
  assert.equal(outbox.counts().lost, 1);
  assert.equal(outbox.counts().failed, 4);
  assert.equal(outbox.busy, false);
  assert.deepEqual([...new Set(warnings.map(([what]) => what))], ['publish', 'lost']);
});
