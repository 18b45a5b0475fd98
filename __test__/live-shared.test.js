'use strict';
// The shared publisher's claims (backstage/following/signals.js) on a scripted registry: a claim
// behind another replica's gate is made again when the gate opens, bounded to the loads
// recorded by its first attempt, unless a change seen meanwhile needs every armed load.

const test = require('node:test');
const assert = require('node:assert/strict');
const { createSharedSignals } = require('../packages/backstage/following/signals');

const E = 'component:default/one';

/** Shared signals over a registry whose claims answer from `answers`, recording each call. */
function scripted(answers) {
  const calls = [];
  const published = [];
  const registry = {
    async claim(entityRef, options) {
      calls.push({ entityRef, ...options });
      return answers.shift() ?? { rows: [], waitMs: null };
    },
  };
  const shared = createSharedSignals({
    registry,
    signals: { publish: async (signal) => void published.push(signal) },
    channelOf: (entityRef) => `kubernetes:${entityRef}`,
    minIntervalMs: 20,
    now: Date.now,
    setTimer: (fn, ms) => {
      const timer = setTimeout(fn, ms);
      return () => clearTimeout(timer);
    },
  });
  return { shared, calls, published };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const gated = { rows: [], waitMs: 30, armedAt: 1_000 };
const bob = { rows: [{ userEntityRef: 'user:default/bob', entityRef: E, clusters: ['sim'] }], waitMs: null };

test('a claim behind the gate is made again when it opens, for the loads recorded by then', async () => {
  const { shared, calls, published } = scripted([gated, bob]);
  shared.entityChanged(E, 'c1');
  await sleep(80);
  assert.deepEqual(
    calls.map(({ loadedBy }) => loadedBy),
    [null, 1_000],
  );
  assert.deepEqual(
    published.map((signal) => signal.recipients.entityRef),
    [['user:default/bob']],
  );
  await shared.close(0);
});

test('a change seen while a claim waits at the gate makes it claim every armed load', async () => {
  const { shared, calls } = scripted([gated, bob]);
  shared.entityChanged(E, 'c1');
  await sleep(10); // the first attempt answered: gated
  shared.entityChanged(E, 'c2'); // loads answered here before it showed the old state
  await sleep(80);
  assert.deepEqual(
    calls.map(({ loadedBy }) => loadedBy),
    [null, null],
  );
  await shared.close(0);
});
