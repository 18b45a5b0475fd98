'use strict';
// The live tab's backend half end to end: a real backend (Kubernetes + Signals backend plugins
// and kube-watch-native-backstage), two users on /api/signals over WebSocket. The module's
// objects provider must hand the fetcher `{ userEntityRef, entityRef }` of each load; a
// publisher fed from that (as the fetcher will feed it) reaches the user who loaded the entity
// and not the other one.

const test = require('node:test');
const assert = require('node:assert/strict');
const { mockCredentials } = require('@backstage/backend-test-utils');
const { NativeInformerFetcher } = require('../packages/backstage/serving/fetcher');
const { liveRequestContext } = require('../packages/backstage/following/mark');
const {
  LIVE_SVC,
  LIVE_CHANNEL: CHANNEL,
  OTHER_SVC,
  delegatedEntity,
  pod,
  TOKEN,
  startCluster,
  startLiveBackend,
  connectSignals,
  postEntity,
} = require('../testbed/live-helpers');
const { certs } = require('../packages/kube-watch-native/sim');
const { until, sleep } = require('../testbed/wait');

const ALICE = 'user:default/mock'; // mock-user-token
const BOB = 'user:default/other';
const BOB_TOKEN = mockCredentials.user.token(BOB);

async function load(backend, token, entity) {
  const res = await postEntity(backend.url, token, entity);
  assert.equal(res.status, 200, await res.text());
}

test(
  'a change reaches the user who loaded the entity, not another user; coalesced, scoped to the selector, until viewerTtl',
  { timeout: 60_000 },
  async (t) => {
    // What the fetcher sees of each load: the context the objects provider set.
    const seen = [];
    const original = NativeInformerFetcher.prototype.fetchObjectsForService;
    NativeInformerFetcher.prototype.fetchObjectsForService = function (params) {
      seen.push(liveRequestContext.getStore());
      return original.call(this, params);
    };
    t.after(() => {
      NativeInformerFetcher.prototype.fetchObjectsForService = original;
    });

    const sim = await startCluster(t);
    const VIEWER_TTL_MS = 6000;
    const backend = await startLiveBackend(sim, {
      live: { viewerTtl: `${VIEWER_TTL_MS}ms`, minInterval: '250ms' },
    });
    t.after(() => backend.stop());

    const alice = await connectSignals(backend.port, 'mock-user-token', CHANNEL);
    const bob = await connectSignals(backend.port, BOB_TOKEN, CHANNEL); // same channel, never loaded it
    t.after(() => {
      alice.ws.terminate();
      bob.ws.terminate();
    });

    await load(backend, 'mock-user-token', LIVE_SVC);
    await load(backend, BOB_TOKEN, OTHER_SVC);
    // The fetcher adds its own notes (followed, notLive) to the same context as it answers.
    const who = ({ userEntityRef, entityRef }) => ({ userEntityRef, entityRef });
    assert.deepEqual(seen.slice(0, 2).map(who), [
      { userEntityRef: ALICE, entityRef: 'component:default/live-svc' },
      { userEntityRef: BOB, entityRef: 'component:default/other-svc' },
    ]);
    await sleep(300); // the subscribe messages are in, the informers watching
    alice.received.length = 0;

    // A pod of live-svc is added: Alice, who loaded it, is told; Bob, on the same channel, is not.
    const changedAt = Date.now();
    sim.create('pods', pod('live-svc-2', 'live-svc'));
    await until(() => alice.received.length > 0, { ms: 1000, what: 'Alice’s signal within 1 s' });
    t.diagnostic(`change to signal: ${Date.now() - changedAt} ms`);
    await sleep(400);
    assert.equal(alice.received.length, 1, 'one signal for one change');
    // From here on Alice's tab does what the frontend does: a signal, then one reload.
    let reloading = true;
    let lastLoadAt = Date.now();
    const reload = async () => {
      if (!reloading) return;
      await load(backend, 'mock-user-token', LIVE_SVC);
      lastLoadAt = Date.now();
    };
    alice.ws.on('message', () => void reload().catch(() => {}));
    await reload();
    assert.equal(alice.received[0].channel, CHANNEL);
    assert.deepEqual(alice.received[0].message.clusters, ['sim']);
    assert.deepEqual(
      Object.keys(alice.received[0].message).sort(),
      ['at', 'clusters', 'id'],
      'no object data',
    );
    assert.deepEqual(bob.received, [], 'Bob subscribed to the channel but never loaded the entity');

    // An object no loaded entity selects: nobody.
    sim.create('pods', pod('unrelated-1', 'unrelated'));
    sim.patch(
      'pods',
      'default',
      'other-svc-1',
      (p) => void (p.metadata.annotations = { seen: 'by Bob only' }),
    );
    await sleep(600);
    assert.equal(alice.received.length, 1, 'no signal for objects outside Alice’s entity');

    // 1 000 changes in one second: at most 1 s / minInterval + 1 signals.
    const before = alice.received.length;
    const burstStart = Date.now();
    for (let i = 0; i < 1000; i++) {
      sim.patch('pods', 'default', 'live-svc-1', (p) => void (p.metadata.annotations = { n: String(i) }));
      if (i % 100 === 99) await sleep(Math.max(0, burstStart + ((i + 1) / 1000) * 1000 - Date.now()));
    }
    const burstMs = Date.now() - burstStart;
    await sleep(600);
    const burst = alice.received.length - before;
    // The first at once, then one per 250 ms while changes come: 1 s / minInterval + 1 for 1 s.
    const most = Math.ceil(burstMs / 250) + 1;
    t.diagnostic(`1000 changes in ${burstMs} ms: ${burst} signals (at most ${most})`);
    assert.ok(burst >= 2 && burst <= most, `${burst} signals for 1000 changes in ${burstMs} ms`);

    // Past viewerTtl since Alice's last load, her changes signal nobody.
    reloading = false;
    await sleep(300); // a reload still on its way lands
    await sleep(Math.max(0, lastLoadAt + VIEWER_TTL_MS + 200 - Date.now()));
    const expired = alice.received.length;
    sim.create('pods', pod('live-svc-3', 'live-svc'));
    await sleep(700);
    assert.equal(alice.received.length, expired, 'no signal once viewerTtl has passed');
  },
);

/** A load's answer as `token`'s user: its status, its live header and its body. */
async function loadAnswer(backend, token, entity, body = { entity }) {
  const res = await fetch(`${backend.url}/api/kubernetes/services/${entity.metadata.name}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, live: res.headers.get('x-kube-watch-live'), body: await res.json() };
}

const podNames = (answer) =>
  answer.body.items.flatMap((item) =>
    item.resources.filter((r) => r.type === 'pods').flatMap((r) => r.resources.map((p) => p.metadata.name)),
  );

test(
  'only an answer every part of which signals follow carries x-kube-watch-live: not a delegated selector, not an oidc cluster',
  { timeout: 60_000 },
  async (t) => {
    const sim = await startCluster(t);
    const web = pod('web-1', 'unused');
    web.metadata.labels = { tier: 'web' };
    sim.create('pods', web);
    const NEGATIVE = delegatedEntity('negative-svc');
    const backend = await startLiveBackend(sim, { entities: [LIVE_SVC, NEGATIVE] });
    t.after(() => backend.stop());

    const followed = await loadAnswer(backend, 'mock-user-token', LIVE_SVC);
    assert.equal(followed.status, 200);
    assert.deepEqual(podNames(followed), ['live-svc-1']);
    assert.equal(followed.live, '1', 'answered from informers the viewer is registered on');

    const delegated = await loadAnswer(backend, 'mock-user-token', NEGATIVE);
    assert.equal(delegated.status, 200);
    assert.ok(podNames(delegated).includes('web-1'), 'the default fetcher answered it');
    assert.equal(delegated.live, null, 'a delegated answer is never marked live');

    // The other routes through the objects provider: the workloads query is answered from the
    // same informers; custom resources are outside this backend's objectTypes (delegated).
    const post = (route, body) =>
      fetch(`${backend.url}/api/kubernetes/resources/${route}/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer mock-user-token' },
        body: JSON.stringify({ entityRef: 'component:default/live-svc', ...body }),
      });
    const workloads = await post('workloads', {});
    assert.equal(workloads.status, 200, await workloads.clone().text());
    assert.equal(workloads.headers.get('x-kube-watch-live'), '1');
    const custom = await post('custom', {
      customResources: [{ group: 'example.com', apiVersion: 'v1', plural: 'widgets' }],
    });
    assert.equal(custom.status, 200, await custom.clone().text());
    assert.equal(custom.headers.get('x-kube-watch-live'), null);

    // A service's call (no user to signal) is not live either.
    const service = await loadAnswer(backend, 'mock-service-token', LIVE_SVC);
    assert.equal(service.status, 200);
    assert.equal(service.live, null);
  },
);

test(
  'an oidc cluster (the viewer’s own credential) is answered by the default fetcher: no live header',
  { timeout: 60_000 },
  async (t) => {
    const sim = await startCluster(t);
    const backend = await startLiveBackend(sim, {
      clusters: [
        {
          name: 'sim-oidc',
          url: sim.url,
          authProvider: 'oidc',
          oidcTokenProvider: 'okta',
          caData: Buffer.from(certs.ca).toString('base64'),
          skipMetricsLookup: true,
        },
      ],
    });
    t.after(() => backend.stop());
    const answer = await loadAnswer(backend, 'mock-user-token', LIVE_SVC, {
      entity: LIVE_SVC,
      auth: { oidc: { okta: TOKEN } },
    });
    assert.equal(answer.status, 200);
    assert.deepEqual(podNames(answer), ['live-svc-1'], 'the viewer’s token listed the pods');
    assert.equal(answer.live, null);
  },
);
