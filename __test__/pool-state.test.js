'use strict';
// backstage/serving/entry.js: an entry's state is read from the native informer once per turn of the
// event loop (a load reads each of its informers several times in one stretch), and read again
// in the next turn, so a change is never hidden longer than the turn that read it.

const test = require('node:test');
const assert = require('node:assert/strict');
const { Entry } = require('../packages/backstage/serving/entry');

test('one native state read per turn, a fresh one the next turn', async () => {
  let reads = 0;
  let generation = 1;
  const informer = { state: () => (reads++, { generation, synced: true, error: null, finished: false }) };
  const entry = new Entry('k', { lastUsed: 0 }, informer, {}, { owner: null, fromBody: false });
  assert.equal(entry.state().generation, 1);
  assert.equal(entry.settled(), true);
  assert.equal(entry.state().generation, 1);
  assert.equal(reads, 1, 'one read for the stretch');
  generation = 2;
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(entry.state().generation, 2, 'the next turn reads again');
  assert.equal(reads, 2);
});

test("an entry's bytes, what maxCachedBytes counts, are its JSON and its field indexes", () => {
  const state = { synced: true, finished: false, error: null, cachedBytes: 5000, indexBytes: 800 };
  const informer = { state: () => state, stats: () => ({ bytes: 7000 }) };
  const entry = new Entry('k', { lastUsed: 0 }, informer, {}, { owner: null, fromBody: false });
  assert.equal(entry.bytes(), 5800);
  state.synced = false;
  assert.equal(entry.bytes(), 7800, 'while it lists: what it has read so far, and its indexes');
});

test('servable() decides by the age of the proof on the monotonic clock, whatever Date.now says', (t) => {
  const state = { synced: true, finished: false, error: null, aliveAt: 1, aliveAgoMs: 100 };
  const informer = { state: () => state };
  const servability = { verifiedUntil: () => Infinity, livenessMs: 1000 };
  const entry = new Entry('k', { lastUsed: 0 }, informer, {}, { owner: null, fromBody: false, servability });
  const real = Date.now;
  t.after(() => {
    Date.now = real;
  });
  Date.now = () => 0;
  assert.equal(entry.servable().servable, true, 'proven 100 ms ago: served, though aliveAt is long past');
  state.aliveAgoMs = 1500;
  assert.equal(entry.servable().servable, false, 'proven 1.5 s ago: not served');
});
