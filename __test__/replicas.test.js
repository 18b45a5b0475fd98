'use strict';
// Several real Backstage backend replicas on one PostgreSQL, each its own process, behind a
// round-robin balancer (replica-helpers.js). A user's signals WebSocket is on one replica; what
// is published on another reaches it only through the events backend's bus on PostgreSQL.
// Needs PostgreSQL (apt-get install postgresql): skipped without it, failed without it when
// KUBE_WATCH_REQUIRE_PG=1.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startCluster, LIVE_CHANNEL: CHANNEL } = require('../testbed/live-helpers');
const { startReplicas, postgresFor, connectSignals, subscribed } = require('../testbed/replica-helpers');
const { sleep, until } = require('../testbed/wait');

const ALICE = 'user:default/mock'; // mock-user-token

const signal = (message) => ({ recipients: { type: 'user', entityRef: ALICE }, channel: CHANNEL, message });

test(
  'a signal published on replica A reaches a WebSocket on replica B, through the events backend on PostgreSQL',
  { timeout: 120_000 },
  async (t) => {
    const postgres = await postgresFor(t);
    if (!postgres) return;
    const sim = await startCluster(t);
    const { replicas, balancer, stop } = await startReplicas(2, sim, { pg: postgres.connection });
    t.after(stop);
    const [a, b] = replicas;
    t.diagnostic(
      `replicas ready (from spawn): ${replicas.map((r) => `${r.name} ${r.startMs} ms`).join(', ')}`,
    );

    const alice = await connectSignals(balancer, b.index, 'mock-user-token', CHANNEL);
    t.after(() => alice.ws.terminate());
    await subscribed(alice, b, ALICE, CHANNEL, { via: 'B' }); // B's own signal reaches it
    assert.equal(alice.received[0].message.via, 'B');

    // On A, which has no WebSocket: only the bus can carry it to B.
    const publishedAt = Date.now();
    await a.publish(signal({ via: 'A' }));
    const viaA = () => alice.received.filter((s) => s.message.via === 'A');
    await until(() => viaA().length > 0, { ms: 2000, what: 'A’s signal on the WebSocket to B within 2 s' });
    t.diagnostic(`A → B: ${viaA()[0].at - publishedAt} ms`);
    assert.equal(viaA()[0].channel, CHANNEL);
    await sleep(300);
    assert.equal(viaA().length, 1, 'delivered once');

    // Both exit promptly on SIGTERM, B with Alice's WebSocket open (backstage/events-polls.js
    // says what would hold them ~56 s).
    for (const replica of [b, a]) {
      const { ms, code } = await replica.stop();
      t.diagnostic(`${replica.name} exited ${ms} ms after SIGTERM`);
      assert.equal(code, 0);
      assert.ok(ms < 10_000, `${replica.name} took ${ms} ms to exit`);
    }
  },
);
