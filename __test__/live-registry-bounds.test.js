'use strict';
// The live tab on several replicas (issue 48), on a real PostgreSQL: a change signals only the
// viewers whose answer depends on its watch key, as one replica does; a load waits for its own
// row only, and never past `registryWaitMs` (a stalled database: answered not live); a claim
// that fails tells this replica's viewers to load again; time is the database's, so a replica
// whose clock is off neither hands another's viewers on nor drops their rows. Skipped without
// PostgreSQL unless KUBE_WATCH_REQUIRE_PG=1 (.ci/run sets it).

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const knexFactory = require('knex');
const { createViewerRegistry } = require('../packages/backstage/following/store-sql');
const { createLivePublisher } = require('../packages/backstage/following/publisher');
const { liveRequestContext } = require('../packages/backstage/following/mark');
const { startPostgres, orSkipWithoutPostgres } = require('../testbed/pg-helpers');
const { sleep, until, within } = require('../testbed/wait');

const ALICE = 'user:default/alice';
const BOB = 'user:default/bob';
const E1 = 'component:default/one';
const MINUTE = 60_000;

/** PostgreSQL for the test, gone with it; null when skipped. */
async function postgres(t) {
  const pg = await orSkipWithoutPostgres(t, startPostgres);
  if (pg) t.after(() => pg.stop());
  return pg;
}

/** A replica's registry on its own pool to `connection`, closed with the test. */
function replica(t, connection, name, options = {}) {
  const knex = knexFactory({ client: 'pg', connection, pool: { min: 0, max: 4 } });
  const orphans = [];
  const warnings = [];
  const registry = createViewerRegistry({
    knex,
    replica: name,
    orphaned: (rows) => orphans.push(...rows),
    logger: { warn: (message) => warnings.push(message) },
    ...options,
  });
  t.after(() => knex.destroy().catch(() => {}));
  return { knex, registry, orphans, warnings };
}

/** A publisher on `registry` whose signals go to `published`. */
function publisher(registry, published, options = {}) {
  return createLivePublisher({
    signals: { publish: async (signal) => void published.push(signal) },
    registry,
    minIntervalMs: 0,
    ...options,
  });
}

/** A user's load as the objects provider runs it: viewed inside its request's context. */
function load(p, user, keys, answered = { cluster: 'sim' }) {
  const context = { userEntityRef: user, entityRef: E1 };
  const followed = liveRequestContext.run(context, () => p.viewed(user, E1, keys, answered));
  return { context, followed };
}

/**
 * A TCP relay to `port` on 127.0.0.1 that can stop forwarding while keeping every socket open,
 * as a partition or a failover behind a proxy does.
 */
async function relayTo(t, port) {
  let stalled = false;
  const sockets = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ]) {
      sockets.add(from);
      from.on('data', (chunk) => stalled || to.write(chunk));
      from.on('error', () => {});
      from.on('close', () => to.destroy());
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return {
    port: server.address().port,
    stall() {
      stalled = true;
    },
  };
}

test('a change signals only the viewers whose answer depends on its watch key, on any replica', async (t) => {
  const pg = await postgres(t);
  if (!pg) return;
  const a = replica(t, pg.connection, 'a');
  const b = replica(t, pg.connection, 'b');
  await Promise.all([a.registry.ready, b.registry.ready]);
  const published = [];
  const pa = publisher(a.registry, published);
  const pb = publisher(b.registry, published);
  t.after(() => Promise.all([pa.close(), pb.close()]));

  // Alice may list pods and deployments (her answer follows both); Bob pods only. Their loads
  // went to different replicas; each replica names its keys its own way (identity keys),
  // and alike for the registry (sharedKeys).
  load(pa, ALICE, ['a-pods', 'a-deploys'], { cluster: 'sim', sharedKeys: ['pods', 'deploys'] });
  load(pb, BOB, ['b-pods'], { cluster: 'sim', sharedKeys: ['pods'] });
  await Promise.all([pa.settled(), pb.settled()]);

  pa.changed('a-deploys', { change: 'rv-1|d' });
  await until(() => published.length === 1, { ms: 3000, what: 'the deployments change signalled' });
  await sleep(300);
  assert.equal(published.length, 1);
  assert.deepEqual(published[0].recipients.entityRef, [ALICE], 'Bob hears nothing of deployments');

  // A pods change: Bob's, and Alice's once she has loaded again.
  load(pa, ALICE, ['a-pods', 'a-deploys'], { cluster: 'sim', sharedKeys: ['pods', 'deploys'] });
  await pa.settled();
  // Both replicas see it; each load is claimed once, by one of them.
  pa.changed('a-pods', { change: 'rv-2|p' });
  pb.changed('b-pods', { change: 'rv-2|p' });
  const told = () => published.slice(1).flatMap((signal) => signal.recipients.entityRef);
  await until(() => told().length === 2, { ms: 3000, what: 'the pods change signalled' });
  await sleep(300);
  assert.deepEqual(told().sort(), [ALICE, BOB]);
});

test('a signal names the clusters of the keys that changed, not every cluster of the answer', async (t) => {
  const pg = await postgres(t);
  if (!pg) return;
  const a = replica(t, pg.connection, 'a');
  await a.registry.ready;
  const published = [];
  const pa = publisher(a.registry, published);
  t.after(() => pa.close());
  load(pa, ALICE, ['k-us'], { cluster: 'us', sharedKeys: ['pods-us'] });
  load(pa, ALICE, ['k-eu'], { cluster: 'eu', sharedKeys: ['pods-eu'] });
  await pa.settled();
  pa.changed('k-eu', { change: 'rv-3|e' });
  await until(() => published.length === 1, { ms: 3000, what: 'the signal' });
  assert.deepEqual(published[0].message.clusters, ['eu']);
});

test('a load waits for its own row only: another user’s stuck write holds nobody else', async (t) => {
  const pg = await postgres(t);
  if (!pg) return;
  const a = replica(t, pg.connection, 'a');
  await a.registry.ready;
  // Alice's write never lands (stuck on a connection); Bob's does.
  const stuck = Object.create(a.registry, {
    loaded: {
      value: (user, ...rest) => (user === ALICE ? new Promise(() => {}) : a.registry.loaded(user, ...rest)),
    },
  });
  const pa = publisher(stuck, [], { registryWaitMs: 400 });
  t.after(() => pa.close());
  const alice = load(pa, ALICE, ['k']);
  const bob = load(pa, BOB, ['k']);
  const startedAt = Date.now();
  await within(pa.answered(bob.context), 300, 'Bob’s own row');
  assert.ok(Date.now() - startedAt < 300);
  assert.notEqual(bob.context.notLive, true, 'Bob’s answer is live');
  await within(pa.answered(alice.context), 1000, 'Alice’s bound');
  const waited = Date.now() - startedAt;
  assert.ok(waited >= 380 && waited < 900, `Alice waited ${waited} ms, the bound is 400`);
  assert.equal(alice.context.notLive, true, 'past the bound: not live, the tab polls');
  assert.equal(pa.counts().slowWrites, 1);
});

test('PostgreSQL stalled behind a relay: loads answered not live within the bound, the claim fails in bounded time and this replica’s viewers are told', async (t) => {
  const pg = await postgres(t);
  if (!pg) return;
  const relay = await relayTo(t, pg.connection.port);
  const a = replica(t, { ...pg.connection, port: relay.port }, 'a', { statementMs: 800, heartbeatMs: 200 });
  await a.registry.ready;
  const published = [];
  const pa = publisher(a.registry, published);
  t.after(() => pa.close());
  const before = load(pa, ALICE, ['k'], { cluster: 'sim', sharedKeys: ['pods'] });
  await within(pa.answered(before.context), 1000, 'her row, before the stall');
  assert.notEqual(before.context.notLive, true);

  relay.stall();
  const loads = [ALICE, BOB].map((user) => load(pa, user, ['k'], { cluster: 'sim', sharedKeys: ['pods'] }));
  const startedAt = Date.now();
  await within(Promise.all(loads.map(({ context }) => pa.answered(context))), 2000, 'every load answered');
  const waited = Date.now() - startedAt;
  assert.ok(waited < 700, `answered after ${waited} ms (bound 500)`);
  for (const { context } of loads) assert.equal(context.notLive, true, 'not live: polled');

  // A change while the database hangs: the claim fails within statementMs, and the viewers
  // answered here are told at once to load again (their next answers are polled).
  pa.changed('k', { change: 'rv-4|x' });
  await until(() => published.length === 1, { ms: 3000, what: 'the viewers told' });
  assert.deepEqual(published[0].recipients.entityRef, [ALICE, BOB]);
  assert.deepEqual(published[0].message.clusters, ['sim']);
  const counts = pa.counts();
  assert.ok(counts.claimsFailed >= 1, 'counted');
  assert.equal(counts.toldToPoll, 2);
  assert.ok(a.registry.counts().failed >= 1);
  assert.ok(counts.statementsFailed >= 1, 'in the metrics too');
});

test('a replica 7 s behind the database: its viewers are not handed on as a gone replica’s, one signal per change', async (t) => {
  const pg = await postgres(t);
  if (!pg) return;
  const behind = replica(t, pg.connection, 'behind', { heartbeatMs: 200, now: () => Date.now() - 7000 });
  const normal = replica(t, pg.connection, 'normal', { heartbeatMs: 200 });
  await Promise.all([behind.registry.ready, normal.registry.ready]);
  const published = [];
  const pBehind = publisher(behind.registry, published, { now: () => Date.now() - 7000 });
  t.after(() => pBehind.close());
  load(pBehind, ALICE, ['k'], { cluster: 'sim', sharedKeys: ['pods'] });
  await pBehind.settled();
  await until(() => behind.registry.others === 1 && normal.registry.others === 1, {
    ms: 2000,
    what: 'each sees the other',
  });
  await sleep(1500); // several beats of both
  assert.deepEqual(normal.orphans, [], 'the replica behind is alive: its viewers stay its own');
  assert.equal(normal.registry.others, 1);
  pBehind.changed('k', { change: 'rv-5|y' });
  await until(() => published.length === 1, { ms: 3000, what: 'the change signalled' });
  await sleep(800);
  assert.equal(published.length, 1, 'one reload for one change, none for the clock');
  assert.equal(behind.warnings.filter((w) => /clock is \d+ ms behind the database/.test(w)).length, 1);
  assert.equal(normal.warnings.length, 0);
});

test('a replica 11 min ahead of the database: its beats drop no other replica’s rows', async (t) => {
  const pg = await postgres(t);
  if (!pg) return;
  const ahead = replica(t, pg.connection, 'ahead', { heartbeatMs: 200, now: () => Date.now() + 11 * MINUTE });
  const normal = replica(t, pg.connection, 'normal', { heartbeatMs: 200 });
  await Promise.all([ahead.registry.ready, normal.registry.ready]);
  const published = [];
  const pNormal = publisher(normal.registry, published); // viewers kept 10 min
  t.after(() => pNormal.close());
  load(pNormal, ALICE, ['k'], { cluster: 'sim', sharedKeys: ['pods'] });
  await pNormal.settled();
  await sleep(1000); // several beats of the replica ahead
  assert.equal(ahead.registry.others, 1, 'the normal replica is alive to it');
  assert.equal(normal.registry.others, 1);
  assert.deepEqual(ahead.orphans, []);
  pNormal.changed('k', { change: 'rv-6|z' });
  await until(() => published.length === 1, { ms: 3000, what: 'Alice’s row is there to claim' });
  assert.deepEqual(published[0].recipients.entityRef, [ALICE]);
  assert.equal(ahead.warnings.filter((w) => /clock is \d+ ms ahead of the database/.test(w)).length, 1);
});

test('one load over several clusters: its row ends with every cluster’s keys, whatever order the store commits in', async () => {
  // A store whose writes take longer the earlier they start (the first cluster's row committing
  // last): written in parallel, the row would end with the first cluster's keys alone.
  const rows = [];
  let pending = 0;
  const store = {
    ready: Promise.resolve(),
    others: 0,
    loaded(user, entity, watchKeys) {
      const delay = 60 - 10 * pending++;
      return new Promise((resolve) =>
        setTimeout(
          () => {
            pending--;
            rows.push(watchKeys);
            resolve();
          },
          Math.max(delay, 1),
        ),
      );
    },
    claim: async () => ({ rows: [], waitMs: null }),
    claimDue: async () => [],
    forget: async () => {},
    close: async () => [],
  };
  const p = createLivePublisher({ signals: { publish() {} }, registry: store });
  const context = { userEntityRef: ALICE, entityRef: E1 };
  await liveRequestContext.run(context, async () => {
    for (const cluster of ['c1', 'c2', 'c3', 'c4', 'c5', 'c6']) {
      p.viewed(ALICE, E1, [`k-${cluster}`], { cluster, sharedKeys: [`pods-${cluster}`] });
      await new Promise((resolve) => setImmediate(resolve)); // the clusters answer one by one
    }
  });
  await p.answered(context);
  await p.settled();
  assert.deepEqual(Object.keys(rows.at(-1)).sort(), [
    'pods-c1',
    'pods-c2',
    'pods-c3',
    'pods-c4',
    'pods-c5',
    'pods-c6',
  ]);
  assert.ok(rows.length <= 3, `${rows.length} writes: one on its way, one waiting, for six clusters`);
  await p.close();
});
