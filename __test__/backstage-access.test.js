'use strict';
// ViewerAccess alone, its reviews stubbed: a load's reviews on one cluster go in one call, and
// a decision is asked at most once per TTL (renewed in the background past half of it). The
// reviews against the simulator's RBAC are backstage-viewers.test.js's.

const test = require('node:test');
const assert = require('node:assert/strict');
const { ViewerAccess } = require('../packages/backstage/serving/access');

const CLUSTER = { name: 'c', url: 'https://127.0.0.1:1' };
const IDENTITY = { key: 'identity-1' };
const RESOURCES = [{ plural: 'pods' }, { group: 'apps', plural: 'deployments' }, { plural: 'services' }];
const token = (t) => ({ type: 'bearer token', token: t });

/** A ViewerAccess whose reviews are recorded and answered by `answer(access)`. */
function stubbed({ ttlMs = 10_000, answer = () => 'allowed' } = {}) {
  const calls = [];
  let clock = 0;
  let release;
  let held = null;
  const access = new ViewerAccess({
    ttlMs,
    maxDecisions: 100,
    now: () => clock,
    review: async (clusterDetails, credential, accesses) => {
      calls.push({ token: credential.token, accesses });
      if (held) await held;
      return accesses.map(answer);
    },
  });
  return {
    access,
    calls,
    advance: (ms) => (clock += ms),
    hold: () => (held = new Promise((resolve) => (release = resolve))),
    release: () => {
      held = null;
      release();
    },
  };
}

test("a load's reviews on one cluster go in one call, with the LIST each stands for", async () => {
  const { access, calls } = stubbed({
    answer: (a) => (a.resource === 'deployments' ? 'refused' : 'allowed'),
  });
  const decisions = await access.decideAll(CLUSTER, token('alice'), IDENTITY, RESOURCES, 'team-a');
  assert.deepEqual(decisions, ['allowed', 'refused', 'allowed']);
  assert.equal(calls.length, 1);
  assert.deepEqual(calls[0].accesses, [
    { group: '', resource: 'pods', namespace: 'team-a' },
    { group: 'apps', resource: 'deployments', namespace: 'team-a' },
    { group: '', resource: 'services', namespace: 'team-a' },
  ]);
  assert.deepEqual(access.counts(), { allowed: 2, refused: 1, failed: 0, hits: 0, remembered: 3 });
});

test('within the TTL no review; past half of it one call renews them all in the background', async () => {
  const { access, calls, advance, hold, release } = stubbed();
  await access.decideAll(CLUSTER, token('alice'), IDENTITY, RESOURCES);
  advance(4_000);
  assert.deepEqual(await access.decideAll(CLUSTER, token('alice'), IDENTITY, RESOURCES), [
    'allowed',
    'allowed',
    'allowed',
  ]);
  assert.equal(calls.length, 1, 'answered from memory before half the TTL');
  advance(2_000);
  hold();
  // Answered at once from memory while the renewal is out.
  assert.deepEqual(await access.decideAll(CLUSTER, token('alice'), IDENTITY, RESOURCES), [
    'allowed',
    'allowed',
    'allowed',
  ]);
  assert.equal(calls.length, 2);
  assert.equal(calls[1].accesses.length, 3);
  await access.decideAll(CLUSTER, token('alice'), IDENTITY, RESOURCES);
  assert.equal(calls.length, 2, 'a renewal already out is not sent again');
  release();
  await new Promise(setImmediate);
  assert.equal(access.counts().hits, 9);
});

test('a viewer, a cluster identity or a namespace of its own is asked of its own; loads meanwhile wait', async () => {
  const { access, calls, hold, release } = stubbed({ answer: () => 'refused' });
  hold();
  const first = access.decideAll(CLUSTER, token('alice'), IDENTITY, RESOURCES);
  const waiting = access.decideAll(CLUSTER, token('alice'), IDENTITY, RESOURCES);
  await new Promise(setImmediate);
  assert.equal(calls.length, 1, 'a second load waits for the reviews out');
  const others = [
    access.decideAll(CLUSTER, token('bob'), IDENTITY, RESOURCES),
    access.decideAll(CLUSTER, token('alice'), { key: 'identity-2' }, RESOURCES),
    access.decideAll(CLUSTER, token('alice'), IDENTITY, RESOURCES, 'team-b'),
  ];
  await new Promise(setImmediate);
  assert.equal(calls.length, 4);
  release();
  for (const decisions of await Promise.all([first, waiting, ...others])) {
    assert.deepEqual(decisions, ['refused', 'refused', 'refused']);
  }
});

test('a failed review is not remembered; a missing credential fails without a review', async () => {
  let fail = true;
  const { access, calls } = stubbed({ answer: () => (fail ? 'failed' : 'allowed') });
  assert.deepEqual(await access.decideAll(CLUSTER, token('alice'), IDENTITY, RESOURCES.slice(0, 1)), [
    'failed',
  ]);
  fail = false;
  assert.deepEqual(await access.decideAll(CLUSTER, token('alice'), IDENTITY, RESOURCES.slice(0, 1)), [
    'allowed',
  ]);
  assert.equal(calls.length, 2);
  assert.deepEqual(await access.decideAll(CLUSTER, { type: 'anonymous' }, IDENTITY, RESOURCES), [
    'failed',
    'failed',
    'failed',
  ]);
  assert.equal(calls.length, 2);
});

test('a review call that throws fails its decisions and is asked again at the next load', async () => {
  let throws = true;
  const access = new ViewerAccess({
    ttlMs: 10_000,
    maxDecisions: 100,
    review: async (c, credential, accesses) => {
      if (throws) throw new Error('connection refused');
      return accesses.map(() => 'allowed');
    },
  });
  assert.deepEqual(await access.decideAll(CLUSTER, token('alice'), IDENTITY, RESOURCES), [
    'failed',
    'failed',
    'failed',
  ]);
  throws = false;
  assert.deepEqual(await access.decideAll(CLUSTER, token('alice'), IDENTITY, RESOURCES), [
    'allowed',
    'allowed',
    'allowed',
  ]);
});

test('with authorizationTtl 0 every load asks', async () => {
  const { access, calls } = stubbed({ ttlMs: 0 });
  await access.decideAll(CLUSTER, token('alice'), IDENTITY, RESOURCES);
  await access.decideAll(CLUSTER, token('alice'), IDENTITY, RESOURCES);
  assert.equal(calls.length, 2);
  assert.equal(access.counts().remembered, 0);
});

test("one viewer's many decisions evict only its own: another viewer's stay remembered (issue 48, finding 5)", async () => {
  const { access, calls } = stubbed(); // maxDecisions 100: 16 per viewer at most
  await access.decideAll(CLUSTER, token('alice'), IDENTITY, RESOURCES, 'team-a');
  assert.equal(calls.length, 1);
  // Mallory's loads name 1 300 made-up custom resources, 13 loads of 100.
  for (let load = 0; load < 13; load++) {
    const made = Array.from({ length: 100 }, (_, i) => ({ group: 'x.io', plural: `made-up-${load}-${i}` }));
    await access.decideAll(CLUSTER, token('mallory'), IDENTITY, made, 'team-a');
  }
  assert.ok(access.counts().remembered <= 3 + 16, `${access.counts().remembered} remembered`);
  const before = calls.length;
  assert.deepEqual(await access.decideAll(CLUSTER, token('alice'), IDENTITY, RESOURCES, 'team-a'), [
    'allowed',
    'allowed',
    'allowed',
  ]);
  assert.equal(calls.length, before, 'Alice, within her TTL, waits for no review');
});
