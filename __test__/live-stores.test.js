'use strict';
// One model of following, two stores: the live tab's viewers' rows in one replica's memory
// (backstage/following/store-memory.js) and in the replicas' PostgreSQL (backstage/following/store-sql.js) answer
// the same sequence of loads, claims and forgets alike, so what a viewer is signalled for cannot
// differ between one backend and many. Skipped without PostgreSQL unless KUBE_WATCH_REQUIRE_PG=1.

const test = require('node:test');
const assert = require('node:assert/strict');
const knexFactory = require('knex');
const { createViewerRegistry } = require('../packages/backstage/following/store-sql');
const { createMemoryRegistry } = require('../packages/backstage/following/store-memory');
const { startPostgres, orSkipWithoutPostgres } = require('../testbed/pg-helpers');
const { sleep } = require('../testbed/wait');

const ALICE = 'user:default/alice';
const BOB = 'user:default/bob';
const CAROL = 'user:default/carol';
const LATER = () => Date.now() + 60_000;

/** What a claim answered, without what differs by a store's timing (the gate's exact wait). */
const shapeOf = ({ rows, waitMs }) => ({
  rows: rows.map((row) => [row.userEntityRef, row.clusters]).sort(),
  gated: waitMs !== null,
});

/**
 * The scenario, run on `store` in entity `entity`: each step's claim, in order. Alice follows
 * pods (us) and deployments (eu), Bob pods only, Carol any key (a row of an older version).
 */
async function scenario(store, entity) {
  const out = [];
  const claim = async (options) =>
    out.push(shapeOf(await store.claim(entity, { signalId: 's', ...options })));
  await store.loaded(ALICE, entity, { pods: 'us', deploys: 'eu' }, LATER());
  await store.loaded(BOB, entity, { pods: 'us' }, LATER());
  await store.loaded(CAROL, entity, ['us', 'eu'], LATER());
  await claim({ watchKeys: ['deploys'] }); // Alice (eu) and Carol, never Bob
  await claim({ watchKeys: ['deploys'] }); // nobody armed for it now
  await claim({ watchKeys: ['pods'] }); // Bob
  await store.loaded(ALICE, entity, { pods: 'us', deploys: 'eu' }, LATER());
  await claim({ watchKeys: ['pods', 'deploys'] }); // Alice, both clusters
  // The gate: one claim that signals anyone per interval; within it, armed rows wait. Armed
  // rows of other keys do not close it: nobody waits for them.
  await store.loaded(BOB, entity, { pods: 'us' }, LATER());
  await claim({ watchKeys: ['deploys'], minIntervalMs: 60_000 }); // nobody armed: not gated
  await claim({ watchKeys: ['pods'], minIntervalMs: 60_000 }); // Bob waits for the gate
  await claim({ watchKeys: ['pods'], minIntervalMs: 0 }); // open: Bob
  // Expired and forgotten rows are claimed by nobody.
  await store.loaded(CAROL, entity, ['us'], Date.now() + 50);
  await store.forget(BOB, entity);
  await sleep(120);
  await claim({ watchKeys: ['pods'] });
  // A viewer whose access decisions expire is claimed when they do, once, and then by nobody.
  const DAVE = 'user:default/dave';
  await store.loaded(DAVE, entity, { pods: 'us' }, LATER(), Date.now() + 50);
  await store.loaded(ALICE, entity, { pods: 'us' }, LATER(), Date.now() + 60_000);
  const due = async () => out.push((await store.claimDue()).map((row) => [row.userEntityRef, row.clusters]));
  await due(); // not yet
  await sleep(120);
  await due(); // Dave
  await due(); // claimed already
  return out;
}

const EXPECTED = [
  {
    rows: [
      [ALICE, ['eu']],
      [CAROL, ['eu', 'us']],
    ],
    gated: false,
  },
  { rows: [], gated: false },
  { rows: [[BOB, ['us']]], gated: false },
  { rows: [[ALICE, ['eu', 'us']]], gated: false },
  { rows: [], gated: false },
  { rows: [], gated: true },
  { rows: [[BOB, ['us']]], gated: false },
  { rows: [], gated: false },
  [],
  [['user:default/dave', ['us']]],
  [],
];

test('the memory store and the PostgreSQL store answer one scenario alike', async (t) => {
  const memory = await scenario(createMemoryRegistry({ now: Date.now }), 'component:default/m');
  assert.deepEqual(memory, EXPECTED, 'memory');
  const pg = await orSkipWithoutPostgres(t, startPostgres);
  if (!pg) return;
  const knex = knexFactory({ client: 'pg', connection: pg.connection, pool: { min: 0, max: 2 } });
  t.after(async () => {
    await knex.destroy();
    await pg.stop();
  });
  const registry = createViewerRegistry({ knex, replica: 'r', orphaned: () => {} });
  await registry.ready;
  t.after(() => registry.close().catch(() => {}));
  const sql = await scenario(registry, 'component:default/s');
  assert.deepEqual(sql, memory, 'PostgreSQL answers as memory does');
});
