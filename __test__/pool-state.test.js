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
