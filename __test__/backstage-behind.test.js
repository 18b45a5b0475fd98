'use strict';
// Issue 47 in the Backstage module: the cluster behind an entity's tab is recreated at the same
// address, its resourceVersions starting over (etcd wiped or restored from an older backup). The
// module must never answer the old cluster's objects again, live or not, and the tab must show
// the new cluster's within seconds, live, its viewer told; later changes signal the viewer again.

const test = require('node:test');
const assert = require('node:assert/strict');
const {
  LIVE_SVC,
  LIVE_CHANNEL: CHANNEL,
  pod,
  startCluster,
  startLiveBackend,
  connectSignals,
  postEntity,
} = require('../testbed/live-helpers');
const { LIVE_HEADER } = require('kube-watch-native-protocol');
const { until, sleep } = require('../testbed/wait');

/** One load of live-svc's tab: its pods' names and whether it was marked live. */
async function load(backend) {
  const res = await postEntity(backend.url, 'mock-user-token', LIVE_SVC);
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  const pods = body.items[0].resources
    .filter((r) => r.type === 'pods')
    .flatMap((r) => r.resources.map((p) => p.metadata.name))
    .sort();
  return { pods, live: res.headers.get(LIVE_HEADER) === '1', errors: body.items[0].errors };
}

/** Loads until `check(answer)`, every 100 ms, for at most `ms`: the answers. */
async function loadUntil(backend, check, ms, what) {
  const answers = [];
  const deadline = performance.now() + ms;
  for (;;) {
    const answer = await load(backend);
    answers.push(answer);
    if (check(answer)) return answers;
    if (performance.now() > deadline)
      assert.fail(`no ${what} within ${ms} ms: ${JSON.stringify(answers.slice(-3))}`);
    await sleep(100);
  }
}

test('a cluster recreated in place at lower resourceVersions: the tab never shows the old pods again and is live on the new ones within seconds', async (t) => {
  const sim = await startCluster(t);
  // The old cluster has seen hundreds of writes.
  for (let i = 0; i < 300; i++)
    sim.patch('pods', 'default', 'other-svc-1', (p) => void (p.metadata.annotations = { n: String(i) }));
  const backend = await startLiveBackend(sim, { live: { minInterval: '250ms' } });
  t.after(() => backend.stop());
  const alice = await connectSignals(backend.port, 'mock-user-token', CHANNEL);
  t.after(() => alice.ws.terminate());

  await loadUntil(backend, (a) => a.live, 15000, 'live answer from the old cluster');
  const before = await load(backend);
  assert.deepEqual(before, { pods: ['live-svc-1'], live: true, errors: [] });
  await sleep(300);
  alice.received.length = 0;

  // The cluster is rebuilt at the same address, with the same CA and token.
  const recreatedAt = Date.now();
  const next = await sim.recreate();
  t.after(() => next.close());
  next.create('pods', pod('live-svc-new', 'live-svc'));
  next.create('pods', pod('other-svc-1', 'other-svc'));
  await sleep(100);
  const answers = await loadUntil(
    backend,
    (a) => a.live && a.pods.join() === 'live-svc-new',
    10000,
    "live answer of the new cluster's pods",
  );
  const took = Date.now() - recreatedAt;
  t.diagnostic(`the new cluster's pods live after ${took} ms, ${answers.length} loads`);
  for (const answer of answers) {
    assert.ok(!answer.pods.includes('live-svc-1'), `an old pod answered: ${JSON.stringify(answer)}`);
  }
  assert.ok(took < 5000, `within the bound: ${took} ms`);
  await until(() => alice.received.length > 0, { ms: 2000, what: 'the viewer told of the change' });

  // The new cluster's changes reach the viewer, and the tab, live. A signal asks for one reload
  // (the tab's), after which the viewer is followed again.
  await sleep(500);
  assert.equal((await load(backend)).live, true);
  alice.received.length = 0;
  next.create('pods', pod('live-svc-new-2', 'live-svc'));
  await until(() => alice.received.length > 0, {
    ms: 2000,
    what: "the viewer told of the new cluster's change",
  });
  assert.deepEqual(await load(backend), { pods: ['live-svc-new', 'live-svc-new-2'], live: true, errors: [] });
});
