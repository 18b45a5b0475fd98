'use strict';
// The live tab's viewers shared by replicas (backstage/following/store-sql.js, backstage/following/signals.js)
// on a real PostgreSQL: each armed load is claimed by exactly one replica, a change of an
// entity is one signal naming all its viewers, and the viewers of a replica that stops or
// crashes are told to load again. Skipped without PostgreSQL unless KUBE_WATCH_REQUIRE_PG=1
// (.ci/run sets it: CI installs PostgreSQL).

const test = require('node:test');
const assert = require('node:assert/strict');
const knexFactory = require('knex');
const { createViewerRegistry } = require('../packages/backstage/following/store-sql');
const { createLivePublisher } = require('../packages/backstage/following/publisher');
const { startPostgres, orSkipWithoutPostgres } = require('../testbed/pg-helpers');
const { sleep, until } = require('../testbed/wait');

const ALICE = 'user:default/alice';
const BOB = 'user:default/bob';
const CAROL = 'user:default/carol';
const E1 = 'component:default/one';
const E2 = 'component:default/two';
const E3 = 'component:default/three';
const LATER = () => Date.now() + 60_000;

const clientOf = (pg) => knexFactory({ client: 'pg', connection: pg.connection, pool: { min: 0, max: 4 } });

/**
 * A replica's registry on its own pool; `orphans` collects what it is handed, `onUnheard` (set
 * by publishersOn) takes the viewers it claims again for a resend.
 */
function replica(pg, name, { heartbeatMs = 2000, resendMs } = {}) {
  const knex = clientOf(pg);
  const orphans = [];
  const self = { knex, orphans, onUnheard: null };
  self.registry = createViewerRegistry({
    knex,
    replica: name,
    orphaned: (rows) => orphans.push(...rows),
    unheard: (rows) => self.onUnheard?.(rows),
    heartbeatMs,
    resendMs,
  });
  return self;
}

/**
 * Replicas A and B, their registries on a PostgreSQL of the test's own (started at once, so the
 * tables are created once, under the lock), all gone with the test; null when skipped.
 */
async function twoReplicas(t, options) {
  const pg = await orSkipWithoutPostgres(t, startPostgres);
  if (!pg) return null;
  const a = replica(pg, 'a', options);
  const b = replica(pg, 'b', options);
  t.after(async () => {
    await a.knex.destroy().catch(() => {});
    await b.knex.destroy().catch(() => {});
    await pg.stop();
  });
  await Promise.all([a.registry.ready, b.registry.ready]);
  return { a, b };
}

/** Publishers on A's and B's registries, both publishing into `published`. */
function publishersOn({ a, b }, minIntervalMs) {
  const published = [];
  const signals = { publish: async (signal) => void published.push(signal) };
  const pa = createLivePublisher({ signals, registry: a.registry, minIntervalMs });
  const pb = createLivePublisher({ signals, registry: b.registry, minIntervalMs });
  a.onUnheard = (rows) => pa.unheard(rows);
  b.onUnheard = (rows) => pb.unheard(rows);
  return { published, pa, pb };
}

/** Test `title` as `body(replicas, t)` on twoReplicas(t, `options`); skipped without PostgreSQL. */
function testOnReplicas(title, options, body) {
  test(title, { timeout: 120_000 }, async (t) => {
    const replicas = await twoReplicas(t, options);
    if (replicas) await body(replicas, t);
  });
}

/** Alice's load of E1 (following `k`) answered by publisher `p`, which then sees `change` of `k`. */
async function aliceLoadsThenSees(p, change) {
  p.viewed(ALICE, E1, ['k'], { cluster: 'sim' });
  await p.settled();
  p.changed('k', { change });
}

testOnReplicas(
  'shared viewers on PostgreSQL: one claim per load, handed over when a replica stops or crashes',
  { heartbeatMs: 200 },
  async ({ a, b }, t) => {
    await until(() => a.registry.others === 1 && b.registry.others === 1, {
      ms: 2000,
      what: 'each sees the other',
    });

    await t.test('a load answered on A is claimed once, by whichever replica asks first', async () => {
      await a.registry.loaded(ALICE, E1, ['sim'], LATER());
      await a.registry.loaded(BOB, E1, ['sim-eu'], LATER());
      const { rows: claimed, waitMs } = await b.registry.claim(E1);
      assert.equal(waitMs, null, 'nobody waits');
      assert.deepEqual(claimed.map((row) => [row.userEntityRef, row.clusters]).sort(), [
        [ALICE, ['sim']],
        [BOB, ['sim-eu']],
      ]);
      assert.deepEqual(
        await a.registry.claim(E1),
        { rows: [], waitMs: null },
        'claimed already: A signals nobody',
      );
      assert.deepEqual(await b.registry.claim(E1), { rows: [], waitMs: null }, 'one signal per load');
      await b.registry.loaded(ALICE, E1, ['sim'], LATER()); // her tab reloads, through B
      // A sees the change late, after her reload: B answered it, and only B knows whether its
      // answer showed the change; A does not signal her again.
      assert.deepEqual(await a.registry.claim(E1), { rows: [], waitMs: null }, 'not A’s to claim');
      // B had not seen it yet (its answer was the old one): B claims her when it does.
      assert.deepEqual(
        (await b.registry.claim(E1)).rows.map((row) => row.userEntityRef),
        [ALICE],
      );
    });

    await t.test(
      "an entity's gate: one claim that signals anyone per interval across replicas, the rest when it opens",
      async () => {
        const E4 = 'component:default/four';
        await a.registry.loaded(ALICE, E4, ['sim'], LATER());
        const first = await a.registry.claim(E4, { minIntervalMs: 400 });
        assert.deepEqual(
          first.rows.map((row) => row.userEntityRef),
          [ALICE],
        );
        // Bob's load lands on B right after A's claim: he waits behind the gate, told how long.
        await b.registry.loaded(BOB, E4, ['sim'], LATER());
        const behind = await b.registry.claim(E4, { minIntervalMs: 400 });
        assert.deepEqual(behind.rows, [], 'no second claim within the interval');
        assert.ok(behind.waitMs > 0 && behind.waitMs <= 400, `waits ${behind.waitMs} ms`);
        await sleep(behind.waitMs + 20);
        const opened = await b.registry.claim(E4, { minIntervalMs: 400 });
        assert.deepEqual(
          opened.rows.map((row) => row.userEntityRef),
          [BOB],
          'claimed once the gate opens',
        );
        // Nobody armed: the gate stays as it was, and nobody is told to wait.
        assert.deepEqual(await a.registry.claim(E4, { minIntervalMs: 400 }), { rows: [], waitMs: null });
      },
    );

    await t.test(
      "a claim again at the gate's end takes only the loads recorded by the first attempt",
      async () => {
        const E5 = 'component:default/five';
        await a.registry.loaded(ALICE, E5, ['sim'], LATER());
        assert.equal((await a.registry.claim(E5, { minIntervalMs: 400 })).rows.length, 1);
        // Bob's load was answered on B before B saw the change: B's claim waits behind A's gate.
        await b.registry.loaded(BOB, E5, ['sim'], LATER());
        const behind = await b.registry.claim(E5, { minIntervalMs: 400 });
        assert.ok(behind.waitMs > 0 && Number.isFinite(behind.armedAt), JSON.stringify(behind));
        // Carol's load, answered on B after B saw the change, shows it: not to be signalled.
        await sleep(5);
        await b.registry.loaded(CAROL, E5, ['sim'], LATER());
        await sleep(behind.waitMs + 20);
        const opened = await b.registry.claim(E5, { minIntervalMs: 400, loadedBy: behind.armedAt });
        assert.deepEqual(
          opened.rows.map((row) => row.userEntityRef),
          [BOB],
        );
        // Carol stays armed, for the next change.
        await sleep(420);
        assert.deepEqual(
          (await b.registry.claim(E5, { minIntervalMs: 400 })).rows.map((row) => row.userEntityRef),
          [CAROL],
        );
      },
    );

    await t.test('an expired or forgotten viewer is never claimed', async () => {
      await a.registry.loaded(ALICE, E2, ['sim'], Date.now() - 1);
      await a.registry.loaded(BOB, E2, ['sim'], LATER());
      await b.registry.forget(BOB, E2); // refused since
      assert.deepEqual(await a.registry.claim(E2), { rows: [], waitMs: null });
    });

    await t.test(
      'a replica that stops hands its armed viewers over; one that crashes is found by the others',
      async () => {
        await a.registry.loaded(CAROL, E3, ['sim'], LATER());
        await b.registry.loaded(ALICE, E3, ['sim'], LATER());
        // A crashes: its pool is gone, it beats no more. B claims A's armed viewer, not its own.
        await a.knex.destroy();
        await until(() => b.orphans.length > 0, { ms: 3000, what: 'B finds A gone within three beats' });
        assert.deepEqual(
          b.orphans.map((row) => [row.userEntityRef, row.entityRef]),
          [[CAROL, E3]],
        );
        assert.equal(b.registry.others, 0);
        // B stops: Alice's latest load was B's, so she is handed over (told to load again).
        const handed = await b.registry.close();
        assert.deepEqual(
          handed.map((row) => row.userEntityRef),
          [ALICE],
        );
      },
    );
  },
);

testOnReplicas(
  'publishers of two replicas on one registry: one signal per entity change, naming every viewer',
  {},
  async (replicas) => {
    const { published, pa, pb } = publishersOn(replicas, 50);

    // Alice's load went to A, Bob's to B; both follow the same informer.
    assert.equal(pa.viewed(ALICE, E1, ['pods|app=one'], { cluster: 'sim' }), true);
    assert.equal(pb.viewed(BOB, E1, ['pods|app=one'], { cluster: 'sim' }), true);
    await Promise.all([pa.settled(), pb.settled()]);
    // Both replicas see the change; one claims, one signal names both.
    pa.changed('pods|app=one', { change: 'rv-7|abc' });
    pb.changed('pods|app=one', { change: 'rv-7|abc' });
    await until(() => published.length > 0, { ms: 2000, what: 'a signal' });
    await sleep(300);
    assert.equal(published.length, 1, 'one bus event for one change');
    assert.deepEqual(published[0].recipients, { type: 'user', entityRef: [ALICE, BOB] });
    assert.equal(published[0].channel, `kubernetes:${E1}`);
    assert.deepEqual(published[0].message.clusters, ['sim']);

    // Not loaded again: no replica signals them for a second change.
    pb.changed('pods|app=one', { change: 'rv-8|def' });
    await sleep(300);
    assert.equal(published.length, 1, 'one signal per load');

    // Bob reloads through A; A stops: he is told to load again (through the other replica).
    pa.viewed(BOB, E1, ['pods|app=one'], { cluster: 'sim' });
    await pa.settled();
    await pa.close();
    assert.equal(published.length, 2);
    assert.deepEqual(published[1].recipients.entityRef, [BOB]);
    await pb.close();
  },
);

testOnReplicas(
  'replicas on one database without an events bus: while another is alive, no answer is live',
  { heartbeatMs: 200 },
  async ({ a, b }) => {
    await until(() => a.registry.others === 1, { ms: 2000, what: 'A sees B' });
    const warnings = [];
    const live = createLivePublisher({
      signals: { publish() {} },
      registry: a.registry,
      share: false,
      logger: { warn: (message) => warnings.push(message) },
    });
    assert.equal(
      live.viewed(ALICE, E1, ['k'], { cluster: 'sim' }),
      false,
      'B may hold the WebSocket: polled',
    );
    assert.equal(live.viewed(BOB, E1, ['k'], { cluster: 'sim' }), false);
    assert.equal(warnings.length, 1, 'said once');
    assert.match(warnings[0], /another backend replica shares this database, but no events bus/);
    assert.equal(live.counts().crowded, 2);
    await b.registry.close(); // B leaves
    await until(() => a.registry.others === 0, { ms: 2000, what: 'A alone at its next beat' });
    assert.equal(live.viewed(ALICE, E1, ['k'], { cluster: 'sim' }), true, 'alone: followed');
    await live.close();
  },
);

testOnReplicas(
  'a later load signalled for a change already signalled gets an id of its own, which the frontend does not drop',
  {},
  async (replicas) => {
    const { published, pa, pb } = publishersOn(replicas, 0);
    await aliceLoadsThenSees(pa, 'rv-9|crash-looping'); // A sees the change first
    await until(() => published.length === 1, { ms: 2000, what: 'A’s signal' });
    // Alice's refetch lands on B, which has not seen the change yet: its answer is the old one.
    await aliceLoadsThenSees(pb, 'rv-9|crash-looping'); // B sees it after: Alice must hear again
    await until(() => published.length === 2, { ms: 2000, what: 'B’s signal' });
    assert.notEqual(published[1].message.id, published[0].message.id);
    await pa.close();
    await pb.close();
  },
);

testOnReplicas(
  'a signal the events bus lost is sent again, with its id, to the viewers that have not loaded since, once',
  { heartbeatMs: 100, resendMs: 400 },
  async (replicas) => {
    const { published, pa, pb } = publishersOn(replicas, 0);
    pa.viewed(ALICE, E3, ['k3'], { cluster: 'sim' });
    pa.viewed(BOB, E3, ['k3'], { cluster: 'sim' });
    await pa.settled();
    pa.changed('k3', { change: 'rv-12|c' });
    await until(() => published.length === 1, { ms: 2000, what: 'the signal' });
    const [first] = published;
    assert.deepEqual(first.recipients.entityRef, [ALICE, BOB]);
    // Bob heard it and loads again, through B; Alice's copy was lost on the bus: she never loads.
    pb.viewed(BOB, E3, ['k3'], { cluster: 'sim' });
    await pb.settled();
    await until(() => published.length === 2, { ms: 3000, what: 'the signal sent again' });
    assert.deepEqual(published[1].recipients.entityRef, [ALICE], 'only the viewer that did not load');
    assert.equal(published[1].message.id, first.message.id, 'the same id: a tab that heard it drops it');
    assert.equal(published[1].channel, first.channel);
    assert.deepEqual(published[1].message.clusters, ['sim']);
    const resent = replicas.a.registry.counts().resent + replicas.b.registry.counts().resent;
    assert.equal(resent, 1);
    await sleep(1000);
    assert.equal(published.length, 2, 'once per claim: a closed tab is not signalled forever');
    await pa.close();
    await pb.close();
  },
);

testOnReplicas(
  "across replicas an entity's signals keep minInterval apart, and the one behind the gate is sent when it opens",
  {},
  async (replicas) => {
    const { published, pa, pb } = publishersOn(replicas, 400);
    const times = [];
    const count = () => {
      while (times.length < published.length) times.push(Date.now());
      return published.length;
    };
    await aliceLoadsThenSees(pa, 'rv-10|a');
    await until(() => count() === 1, { ms: 2000, what: 'A’s signal' });
    // Alice's refetch lands on B before B saw the change; B sees it at once after.
    await aliceLoadsThenSees(pb, 'rv-10|a');
    await until(() => count() === 2, { ms: 3000, what: 'B’s signal, once the gate opens' });
    const apart = times[1] - times[0];
    assert.ok(apart >= 300, `the second signal ${apart} ms after the first, within the 400 ms interval`);
    assert.deepEqual(published[1].recipients.entityRef, [ALICE]);
    await sleep(600);
    assert.equal(count(), 2, 'nothing more: one signal per load');
    await pa.close();
    await pb.close();
  },
);

testOnReplicas(
  'a change seen while a load’s row is on its way to the database still signals that load',
  {},
  async ({ a }) => {
    // A's writes of loads take 300 ms (a busy database); its claims do not.
    const slow = Object.create(a.registry, {
      loaded: {
        value: (...args) => sleep(300).then(() => a.registry.loaded(...args)),
      },
    });
    const published = [];
    const pa = createLivePublisher({
      signals: { publish: async (signal) => void published.push(signal) },
      registry: slow,
      minIntervalMs: 0,
    });
    pa.viewed(ALICE, E2, ['k2'], { cluster: 'sim' });
    pa.changed('k2', { change: 'rv-11|b' }); // the informer moved on before the row landed
    await until(() => published.length === 1, { ms: 3000, what: 'Alice’s signal' });
    assert.deepEqual(published[0].recipients.entityRef, [ALICE]);
    await pa.close();
  },
);
