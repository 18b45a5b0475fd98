'use strict';
// `node bench/investigations/events-bus-gaps.js [--events=20000] [--publishers=12] [--runs=3]`
//
// Whether Backstage's events bus on PostgreSQL delivers every event it stored, measured with its
// own store (@backstage/plugin-events-backend's DatabaseEventBusStore, the class every replica's
// events service reads and writes through) on a throwaway PostgreSQL: `publishers` publishes at
// once, from two stores on two connection pools (two replicas), and one subscriber reading as
// fast as it can, as a replica's Signals backend does while events keep arriving. Reports, per
// run, the events published, read, and never read.
//
// Why it can lose one: an event's id comes from a sequence when its INSERT runs, and becomes
// visible when that INSERT commits; two publishes on two connections can commit in the other
// order. A read between the two commits sees the higher id, moves the subscription's
// `read_until` past it, and never reads the lower one. The live tab's signals ride on this bus:
// the module sends a claimed signal again (backstage/following/store-sql.js) for that reason.
// Loopback only; the PostgreSQL stops with the run.

const path = require('node:path');
const knexFactory = require('knex');
const { startPostgres } = require('../../testbed/pg-helpers');

const STORE = path.join(
  path.dirname(require.resolve('@backstage/plugin-events-backend/package.json')),
  'dist/service/hub/DatabaseEventBusStore.cjs.js',
);
const { DatabaseEventBusStore } = require(STORE);

const TOPIC = 'bench-gaps';
const SUBSCRIBER = 'bench-gaps-reader';
const credentials = { principal: { type: 'service', subject: 'plugin:bench' } };
const logger = { warn() {}, info() {}, debug() {}, error() {}, child: () => logger };

async function run(pg, { events, publishers }) {
  const pools = [0, 1].map(() =>
    knexFactory({ client: 'pg', connection: pg.connection, pool: { min: 0, max: publishers } }),
  );
  const reader = knexFactory({ client: 'pg', connection: pg.connection, pool: { min: 0, max: 1 } });
  try {
    const stores = [];
    for (const db of pools) stores.push(await DatabaseEventBusStore.forTest({ db, logger }));
    const readStore = await DatabaseEventBusStore.forTest({ db: reader, logger });
    await readStore.upsertSubscription(SUBSCRIBER, [TOPIC], credentials);
    const seen = new Set();
    let next = 0;
    let publishing = true;
    const publisher = async (store) => {
      while (next < events) {
        const n = next++;
        await store.publish({ event: { topic: TOPIC, eventPayload: { n } }, credentials });
      }
    };
    const read = async () => {
      const { events: got } = await readStore.readSubscription(SUBSCRIBER);
      for (const e of got) seen.add(e.eventPayload.n);
      return got.length;
    };
    const reading = (async () => {
      while (publishing) await read();
    })();
    const started = Date.now();
    await Promise.all(Array.from({ length: publishers }, (_, i) => publisher(stores[i % stores.length])));
    publishing = false;
    await reading;
    while ((await read()) > 0);
    const missing = [];
    for (let n = 0; n < events; n++) if (!seen.has(n)) missing.push(n);
    return { events, ms: Date.now() - started, read: seen.size, missing };
  } finally {
    // Each run on tables of its own: the next run's stores migrate them again.
    await reader.raw('DROP TABLE IF EXISTS event_bus_events, event_bus_subscriptions CASCADE');
    await reader.raw('DROP TABLE IF EXISTS knex_migrations, knex_migrations_lock CASCADE');
    for (const k of [...pools, reader]) await k.destroy();
  }
}

async function main(argv) {
  const opt = (name, fallback) =>
    Number(argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
  for (const a of argv) {
    if (!/^--(events|publishers|runs)=\d+$/.test(a)) {
      console.error(`unknown option ${a}; see the header of bench/events-bus-gaps.js`);
      process.exit(2);
    }
  }
  const shape = { events: opt('events', 20_000), publishers: opt('publishers', 12) };
  const runs = opt('runs', 3);
  const pg = await startPostgres();
  const results = [];
  try {
    for (let i = 0; i < runs; i++) {
      const r = await run(pg, shape);
      console.error(
        `run ${i + 1}/${runs}: ${r.events} published in ${r.ms} ms, ${r.read} read, ${r.missing.length} never read${r.missing.length ? ` (${r.missing.slice(0, 10).join(', ')})` : ''}`,
      );
      results.push(r);
    }
  } finally {
    await pg.stop();
  }
  const lost = results.reduce((n, r) => n + r.missing.length, 0);
  const total = results.reduce((n, r) => n + r.events, 0);
  console.log(
    `Backstage's events bus (DatabaseEventBusStore, PostgreSQL): ${shape.publishers} publishes at once from two pools, one subscriber; ${lost} of ${total} events never read in ${runs} run(s) (per run: ${results.map((r) => r.missing.length).join(', ')}).`,
  );
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

module.exports = { main };
