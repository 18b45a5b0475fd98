'use strict';
// The live tab on three real backend replicas (Kubernetes, Signals and events backends and
// kube-watch-native-backstage) on one PostgreSQL, behind a round-robin balancer: a user whose
// loads and WebSocket land on different replicas gets each change once, within 1 s, and
// reloads once per change; another user gets nothing; a replica killed mid-run and started
// again loses nothing, and one stopped (SIGTERM, a rolling restart) hands its viewers over.
// Skipped without PostgreSQL unless KUBE_WATCH_REQUIRE_PG=1 (.ci/run sets it).

const test = require('node:test');
const assert = require('node:assert/strict');
const { mockCredentials } = require('@backstage/backend-test-utils');
const { startCluster, LIVE_SVC, LIVE_CHANNEL: CHANNEL, OTHER_SVC, pod } = require('../testbed/live-helpers');
const { replicasFor, connectSignals, subscribed } = require('../testbed/replica-helpers');
const { until, sleep } = require('../testbed/wait');

const ALICE_TOKEN = 'mock-user-token';
const BOB_TOKEN = mockCredentials.user.token('user:default/other');

/** One load through the balancer: which replica answered, and whether the answer is live. */
async function load(balancer, token, entity) {
  const res = await fetch(`${balancer.url}/api/kubernetes/services/${entity.metadata.name}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ entity }),
  });
  const body = await res.text();
  assert.equal(res.status, 200, body);
  return { replica: res.headers.get('x-replica'), live: res.headers.get('x-kube-watch-live') === '1', body };
}

test(
  'three replicas: each change once per tab within 1 s, whichever replica answers; nothing lost when one dies or stops',
  { timeout: 240_000 },
  async (t) => {
    const sim = await startCluster(t);
    const cluster = await replicasFor(t, 3, sim, { live: { minInterval: '100ms' } });
    if (!cluster) return;
    const { balancer, replicas } = cluster;

    // Alice's WebSocket is on B; Bob's on C, subscribed to the same channel, never loading it.
    const alice = await connectSignals(balancer, 1, ALICE_TOKEN, CHANNEL);
    const bob = await connectSignals(balancer, 2, BOB_TOKEN, CHANNEL);
    t.after(() => {
      alice.ws.terminate();
      bob.ws.terminate();
    });

    // Alice's tab: a load, then one reload per signal, each through the balancer (round-robin).
    const loads = [];
    const reload = async () => {
      const answer = await load(balancer, ALICE_TOKEN, LIVE_SVC);
      loads.push({ at: Date.now(), ...answer });
      return answer;
    };
    alice.ws.on('message', () => void reload().catch((error) => loads.push({ error })));
    for (let i = 0; i < 3; i++) assert.equal((await reload()).live, true, 'every replica answers live');
    await load(balancer, BOB_TOKEN, OTHER_SVC);
    await subscribed(alice, replicas[1], 'user:default/mock', CHANNEL);
    await subscribed(bob, replicas[2], 'user:default/other', CHANNEL);
    await sleep(500); // the informers watching
    bob.received.length = 0;
    alice.received.length = 0;
    loads.length = 0;

    /** One change; Alice must see exactly one signal within 1 s, and reload once. */
    let n = 0;
    const change = async (what, make) => {
      n++;
      const before = alice.received.length;
      const loadsBefore = loads.length;
      const at = Date.now();
      make();
      await until(() => alice.received.length > before, {
        ms: 1000,
        what: `change ${n} (${what}) signalled within 1 s`,
      });
      const latency = alice.received[before].at - at;
      await sleep(700); // any duplicate from another replica arrives meanwhile
      assert.equal(
        alice.received.length,
        before + 1,
        `change ${n} (${what}): one signal, not one per replica`,
      );
      assert.equal(loads.length, loadsBefore + 1, `change ${n}: one reload`);
      return latency;
    };

    const latencies = [];
    latencies.push(await change('pod added', () => sim.create('pods', pod('live-svc-2', 'live-svc'))));
    latencies.push(
      await change('pod changed', () =>
        sim.patch('pods', 'default', 'live-svc-2', (p) => void (p.status.phase = 'Failed')),
      ),
    );
    latencies.push(await change('pod deleted', () => sim.remove('pods', 'default', 'live-svc-2')));

    // A dies (SIGKILL) right after answering Alice's latest load: the others still follow her.
    while ((await reload()).replica !== 'A');
    await sleep(300);
    const killed = await replicas[0].stop('SIGKILL');
    alice.received.length = 0;
    loads.length = 0;
    latencies.push(
      await change('pod added, A dead', () => sim.create('pods', pod('live-svc-3', 'live-svc'))),
    );
    const sinceRestart = sim.requests.length;
    await replicas[0].start();
    // Back, A answers a load from informers of its own, started from the API server's watch
    // cache (a streaming list), not a LIST: a restarted replica is no LIST storm.
    while ((await reload()).replica !== 'A');
    const typed = sim.requests
      .slice(sinceRestart)
      .filter((r) => /\/(pods|services|deployments|replicasets)$/.test(r.path));
    assert.deepEqual(
      typed.filter((r) => r.query.watch === undefined).map((r) => r.path),
      [],
      'no LIST since the restart',
    );
    assert.ok(
      typed.some((r) => r.query.sendInitialEvents === 'true'),
      'streaming lists',
    );
    await sleep(300);
    alice.received.length = 0;
    loads.length = 0;
    latencies.push(
      await change('pod changed, A back', () =>
        sim.patch('pods', 'default', 'live-svc-3', (p) => void (p.status.phase = 'Failed')),
      ),
    );

    // A rolling restart: C stops (SIGTERM) right after answering Alice's load. It hands her over:
    // one signal, one reload (elsewhere), and the next change reaches her once.
    while ((await reload()).replica !== 'C');
    await sleep(300);
    alice.received.length = 0;
    loads.length = 0;
    const stopped = await replicas[2].stop('SIGTERM');
    await until(() => alice.received.length === 1 && loads.length === 1, {
      ms: 2000,
      what: 'handed over by the stopping replica',
    });
    assert.notEqual(loads[0].replica, 'C');
    latencies.push(await change('pod deleted, C gone', () => sim.remove('pods', 'default', 'live-svc-3')));

    assert.equal(bob.received.length, 0, 'Bob never loaded live-svc: no signal');
    assert.ok(
      loads.every((l) => !l.error && l.live),
      'every reload answered, live',
    );
    latencies.sort((a, b) => a - b);
    t.diagnostic(
      `change to signal (ms): ${latencies.join(', ')}; A killed in ${killed.ms} ms; C stopped in ${stopped.ms} ms`,
    );
  },
);

test(
  "two replicas: an entity's events, asked through the proxy by a page that names it, are signalled once per change to the user who asked, whichever replica answered",
  { timeout: 120_000 },
  async (t) => {
    const { ENTITY_HEADER, LIVE_HEADER, channelOf, eventsViewOf } = require('kube-watch-native-protocol');
    const sim = await startCluster(t);
    const cluster = await replicasFor(t, 2, sim, { live: { minInterval: '100ms' } });
    if (!cluster) return;
    const { balancer, replicas } = cluster;
    const ENTITY = 'component:default/live-svc';
    const channel = channelOf(eventsViewOf(ENTITY));
    // Both WebSockets on B; the page's requests go round-robin over A and B.
    const alice = await connectSignals(balancer, 1, ALICE_TOKEN, channel);
    const bob = await connectSignals(balancer, 1, BOB_TOKEN, channel);
    t.after(() => {
      alice.ws.terminate();
      bob.ws.terminate();
    });
    const ask = async (token) => {
      const res = await fetch(
        `${balancer.url}/api/kubernetes/proxy/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dlive-svc-1`,
        {
          headers: {
            authorization: `Bearer ${token}`,
            'backstage-kubernetes-cluster': 'sim',
            [ENTITY_HEADER]: ENTITY,
          },
        },
      );
      const { items } = await res.json();
      return { replica: res.headers.get('x-replica'), live: res.headers.get(LIVE_HEADER) === '1', items };
    };
    const event = (n) => ({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `live-svc-1.${n}`, namespace: 'default' },
      involvedObject: {
        kind: 'Pod',
        namespace: 'default',
        name: 'live-svc-1',
        uid: 'uid-1',
        apiVersion: 'v1',
      },
      reason: 'BackOff',
      message: `Back-off restarting failed container main (${n})`,
      type: 'Warning',
      count: n,
    });
    // Warm on both replicas: each answers Alice live.
    const liveFrom = new Set();
    await until(
      async () => {
        const answer = await ask(ALICE_TOKEN);
        if (answer.live) liveFrom.add(answer.replica);
        return liveFrom.size === 2;
      },
      { ms: 20_000, what: 'both replicas answer the events live' },
    );
    // Alice's page asks again on each signal, through the balancer.
    const asked = [];
    alice.ws.on('message', () => void ask(ALICE_TOKEN).then((answer) => asked.push(answer)));
    await ask(ALICE_TOKEN);
    await ask(BOB_TOKEN); // Bob's page asks once, and not again
    await subscribed(alice, replicas[1], 'user:default/mock', channel);
    await subscribed(bob, replicas[1], 'user:default/other', channel);
    await sleep(500);
    alice.received.length = 0;
    bob.received.length = 0;
    const latencies = [];
    for (let n = 1; n <= 3; n++) {
      const before = alice.received.length;
      const at = Date.now();
      sim.create('events', event(n));
      await until(() => alice.received.length > before, {
        ms: 1000,
        what: `event ${n} signalled within 1 s`,
      });
      latencies.push(alice.received[before].at - at);
      await sleep(700); // a duplicate from the other replica arrives meanwhile
      assert.equal(alice.received.length, before + 1, `event ${n}: one signal, not one per replica`);
      assert.ok(
        asked.at(-1)?.items.some((e) => e.metadata.name === `live-svc-1.${n}`),
        `event ${n}: the page's next answer shows it`,
      );
    }
    assert.equal(
      bob.received.length,
      1,
      'Bob, who asked once, is signalled once, then not until he asks again',
    );
    t.diagnostic(
      `event to signal (ms): ${latencies.join(', ')}; answered by ${asked.map((a) => a.replica).join('')}`,
    );
  },
);

test(
  "a replica started while a dead replica's viewers wait to be claimed starts, and claims them (its registry's first beat comes before its publisher exists)",
  { timeout: 120_000 },
  async (t) => {
    const sim = await startCluster(t);
    const cluster = await replicasFor(t, 1, sim);
    if (!cluster) return;
    const { balancer, replicas } = cluster;
    // Alice's load: her row armed, on A.
    assert.equal((await load(balancer, ALICE_TOKEN, LIVE_SVC)).live, true);
    await replicas[0].stop('SIGKILL');
    // Past the liveness of A's heartbeat (3 × 2 s): its viewers are orphans, and nobody else is
    // alive to claim them. A started again is a new replica, whose first beat claims them.
    await sleep(6500);
    await replicas[0].start();
    assert.equal((await load(balancer, ALICE_TOKEN, LIVE_SVC)).live, true, 'the new replica answers live');
  },
);
