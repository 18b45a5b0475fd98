'use strict';
// Viewers' own credentials served from the shared cache (issue 35): a cluster whose provider takes
// the viewer's token (oidc here) and whose config also carries a serviceAccountToken is cached
// with that token, and each viewer's access is asked of the API server with the viewer's own
// token (a SelfSubjectAccessReview of the LIST the default would send). Every answer is compared
// with Backstage's real default fetcher sending that viewer's token.

const test = require('node:test');
const assert = require('node:assert/strict');
const { NativeKubernetesWatcher } = require('kube-watch-native');
const { NativeInformerFetcher } = require('../packages/backstage/serving/fetcher');
const { createLivePublisher } = require('../packages/backstage/following/publisher');
const { liveRequestContext } = require('../packages/backstage/following/mark');
const { createSimulator } = require('../packages/kube-watch-native/sim');
const { recordingLogger } = require('./helpers');
const { CA_DATA, realDefaultFetcher, followerOf } = require('./backstage-helpers');
const { until, sleep } = require('../testbed/wait');

const ID = 'backstage.io/kubernetes-id';
const PODS = { group: '', apiVersion: 'v1', plural: 'pods', objectType: 'pods' };
const SERVICES = { group: '', apiVersion: 'v1', plural: 'services', objectType: 'services' };
const asJson = (value) => JSON.parse(JSON.stringify(value));

const TOKENS = {
  'tok-sa-cache': { user: 'system:serviceaccount:backstage:cache' },
  'tok-alice': { user: 'alice' },
  'tok-bob': { user: 'bob', rules: [{ namespaces: ['team'] }] },
  'tok-carol': { user: 'carol', rules: [] },
};

async function setUp(t, options = {}) {
  const sim = await createSimulator({ tls: true, tokens: { ...TOKENS }, bookmarkIntervalMs: 300 });
  t.after(() => sim.close());
  for (const [ns, name] of [
    ['team', 'p-team'],
    ['other', 'p-other'],
  ]) {
    sim.create('pods', { metadata: { name, namespace: ns, labels: { [ID]: 'svc' } } });
    sim.create('services', { metadata: { name: `s-${name}`, namespace: ns, labels: { [ID]: 'svc' } } });
  }
  const logger = recordingLogger();
  const real = realDefaultFetcher();
  const { live, ...rest } = options;
  const fetcher = new NativeInformerFetcher({
    watcher: new NativeKubernetesWatcher({ logger }),
    defaultFetcher: real,
    logger,
    authorizationTtlMs: 300,
    follower: followerOf(live),
    ...rest,
  });
  t.after(() => fetcher.close());
  const clusterDetails = {
    name: 'oidc-cluster',
    url: sim.url,
    caData: CA_DATA,
    authMetadata: {
      'kubernetes.io/auth-provider': 'oidc',
      'kubernetes.io/oidc-token-provider': 'okta',
      serviceAccountToken: 'tok-sa-cache',
    },
  };
  const as = (token, overrides = {}) => ({
    serviceId: 'svc',
    clusterDetails,
    credential: { type: 'bearer token', token },
    objectTypesToFetch: new Set([PODS, SERVICES]),
    labelSelector: `${ID}=svc`,
    customResources: [],
    ...overrides,
  });
  /** Ours and the default's answers for `params`, compared; ours returned. */
  const same = async (params, what) => {
    const [ours, theirs] = await Promise.all([
      fetcher.fetchObjectsForService(params).then(asJson),
      real.fetchObjectsForService(params).then(asJson),
    ]);
    assert.deepStrictEqual(ours, theirs, what);
    return ours;
  };
  return { sim, fetcher, real, as, same };
}

const VIEWERS = ['tok-alice', 'tok-bob', 'tok-carol', 'tok-unknown'];

test('each viewer gets exactly the default’s answer for its own token, whichever order the cache warms in', async (t) => {
  for (const order of [VIEWERS, [...VIEWERS].reverse()]) {
    await t.test(order.join(' then '), async (t) => {
      const { fetcher, as, same } = await setUp(t);
      for (let round = 0; round < 3; round++) {
        for (const token of order) {
          for (const namespace of [undefined, 'team', 'other']) {
            await same(as(token, namespace ? { namespace } : {}), `${token} in ${namespace ?? '(all)'}`);
          }
        }
        await sleep(400); // the informer syncs and watches; decisions past their TTL are asked again
      }
      const { allowed, refused } = fetcher.decisions();
      assert.ok(allowed > 0 && refused > 0, `decisions ${JSON.stringify(fetcher.decisions())}`);
      assert.ok(fetcher.answered().cached > 0, 'some answers came from the cache');
      assert.deepEqual(
        fetcher
          .informers()
          .map((i) => [i.plural, i.namespace ?? '(all)'])
          .sort(),
        [
          ['pods', '(all)'],
          ['services', '(all)'],
        ],
        'one informer per type, whoever asked',
      );
    });
  }
});

test('warm answers within authorizationTtl cost the cluster no request; a revoked binding shows after it', async (t) => {
  const { sim, fetcher, as, same } = await setUp(t, { authorizationTtlMs: 1500 });
  const bob = as('tok-bob', { namespace: 'team' });
  await until(
    async () =>
      (await fetcher.fetchObjectsForService(bob)).errors.length === 0 && fetcher.answered().cached > 0,
    {
      what: 'a cached answer for Bob',
    },
  );
  await same(bob, 'Bob, warm');
  const before = sim.requests.length;
  for (let i = 0; i < 20; i++) await fetcher.fetchObjectsForService(bob);
  assert.deepEqual(
    sim.requests.slice(before).map((r) => `${r.method} ${r.path}`),
    [],
    'twenty warm loads within the TTL: no request at all',
  );
  // Bob's binding is revoked: within the TTL the cache still answers; after it, the default's 403.
  sim.options.tokens['tok-bob'] = { user: 'bob', rules: [] };
  await sleep(1600);
  const answer = await same(bob, 'Bob, revoked');
  assert.deepEqual(
    answer.errors.map((e) => [e.errorType, e.statusCode]),
    [
      ['UNAUTHORIZED_ERROR', 403],
      ['UNAUTHORIZED_ERROR', 403],
    ].map(([, code]) => ['UNKNOWN_ERROR', code]),
  );
});

test('an expired or unknown token gets the default’s 401; a failed review gets the default fetcher', async (t) => {
  const { sim, as, same, fetcher } = await setUp(t, { authorizationTtlMs: 0 });
  const unknown = await same(as('tok-unknown'), 'unknown token');
  assert.deepEqual(
    unknown.errors.map((e) => e.statusCode),
    [401, 401],
  );
  await same(as('tok-alice'), 'Alice');
  delete sim.options.tokens['tok-alice']; // her token expired
  const expired = await same(as('tok-alice'), 'Alice, expired');
  assert.deepEqual(
    expired.errors.map((e) => e.statusCode),
    [401, 401],
  );
  sim.options.tokens['tok-alice'] = TOKENS['tok-alice'];
  sim.failNext(1, 503); // the review fails
  const failed = fetcher.decisions().failed;
  await fetcher.fetchObjectsForService(as('tok-alice'));
  assert.equal(fetcher.decisions().failed, failed + 1);
  await same(as('tok-alice'), 'Alice after a failed review');
});

test('signals: an allowed viewer is signalled, a refused one never; a binding removed while the tab is live is told at its decisions’ expiry, then no longer (issue 48, finding 4)', async (t) => {
  const published = [];
  const publisher = createLivePublisher({ signals: { publish: (s) => void published.push(s) } });
  const TTL = 1500;
  const { sim, fetcher, as } = await setUp(t, { live: publisher, authorizationTtlMs: TTL });
  const contexts = {};
  const load = (user, token) => {
    const context = { userEntityRef: `user:default/${user}`, entityRef: 'component:default/svc' };
    contexts[user] = context;
    return liveRequestContext.run(context, () =>
      fetcher.fetchObjectsForService(as(token, { namespace: 'team' })),
    );
  };
  await until(
    async () => {
      await load('alice', 'tok-alice');
      await load('bob', 'tok-bob');
      await load('carol', 'tok-carol');
      return fetcher.answered().cached >= 4;
    },
    { what: 'Alice and Bob answered from the cache' },
  );
  published.length = 0;
  await load('alice', 'tok-alice');
  await load('bob', 'tok-bob');
  await load('carol', 'tok-carol');
  assert.equal(contexts.bob.followed && !contexts.bob.notLive, true, 'Bob’s answer is live');
  assert.equal(contexts.carol.notLive, true, 'Carol, refused, is polled');
  sim.create('pods', { metadata: { name: 'p-new', namespace: 'team', labels: { [ID]: 'svc' } } });
  const to = () => published.flatMap((s) => s.recipients.entityRef).sort();
  await until(() => to().length >= 2, { what: 'signals for Alice and Bob' });
  await sleep(300);
  assert.deepEqual(to(), ['user:default/alice', 'user:default/bob'], 'Carol, refused, never');

  // Both reload (each is followed again). Bob's RoleBinding is removed while his tab shows a
  // live answer: nothing in the cluster changes for him, but he is told to load again when the
  // decisions behind his answer expire, within the TTL (and the store's claim grain).
  await load('alice', 'tok-alice');
  await load('bob', 'tok-bob');
  published.length = 0;
  sim.options.tokens['tok-bob'] = { user: 'bob', rules: [] };
  const revokedAt = Date.now();
  await until(() => to().includes('user:default/bob'), { ms: TTL + 3000, what: 'Bob told' });
  const toldAfter = Date.now() - revokedAt;
  assert.ok(toldAfter <= TTL + 1000, `Bob told ${toldAfter} ms after the revocation (TTL ${TTL} ms)`);
  const refused = await load('bob', 'tok-bob');
  assert.deepEqual(
    refused.errors.map((e) => e.statusCode),
    [403, 403],
    'his reload: the default’s 403',
  );
  assert.equal(contexts.bob.notLive, true, 'and polled from then on');
  await load('alice', 'tok-alice');
  published.length = 0;
  sim.create('pods', { metadata: { name: 'p-newer', namespace: 'team', labels: { [ID]: 'svc' } } });
  await until(() => published.length >= 1, { what: 'Alice’s signal' });
  await sleep(300);
  assert.deepEqual(to(), ['user:default/alice'], 'Bob, revoked, no longer');
  t.diagnostic(`a removed binding reached the live tab's signal ${toldAfter} ms after (TTL ${TTL} ms)`);
});

test('with authorizationTtl 0 an answer on viewers’ own credentials is proven only as it is made: never live', async (t) => {
  const published = [];
  const publisher = createLivePublisher({ signals: { publish: (s) => void published.push(s) } });
  const { fetcher, as } = await setUp(t, { live: publisher, authorizationTtlMs: 0 });
  let context;
  await until(
    async () => {
      context = { userEntityRef: 'user:default/alice', entityRef: 'component:default/svc' };
      await liveRequestContext.run(context, () =>
        fetcher.fetchObjectsForService(as('tok-alice', { namespace: 'team' })),
      );
      return fetcher.answered().cached >= 2;
    },
    { what: 'Alice answered from the cache' },
  );
  assert.equal(context.notLive, true, 'polled: every load asks');
  assert.equal(publisher.size, 0);
});

test('the module’s metrics: answers, access decisions and signals, with no token, user or entity', async (t) => {
  const { MeterProvider, MetricReader } = require('@opentelemetry/sdk-metrics');
  const { registerModuleMetrics } = require('../packages/backstage/metrics');
  class PullReader extends MetricReader {
    async onForceFlush() {}
    async onShutdown() {}
  }
  const reader = new PullReader();
  const provider = new MeterProvider({ readers: [reader] });
  t.after(() => provider.shutdown());
  const publisher = createLivePublisher({ signals: { publish: () => {} } });
  const { fetcher, as } = await setUp(t, { live: publisher, authorizationTtlMs: 60_000 });
  const metrics = registerModuleMetrics(fetcher, publisher, { meterProvider: provider });
  t.after(() => metrics.close());
  for (const token of ['tok-alice', 'tok-carol', 'tok-alice'])
    await fetcher.fetchObjectsForService(as(token));
  const { resourceMetrics } = await reader.collect();
  const points = {};
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      for (const p of metric.dataPoints) {
        points[`${metric.descriptor.name}${JSON.stringify(p.attributes)}`] = p.value;
      }
    }
  }
  assert.equal(
    points['kube_watch.backstage.access.decisions{"decision":"allowed"}'],
    2,
    JSON.stringify(points),
  );
  assert.equal(points['kube_watch.backstage.access.decisions{"decision":"refused"}'], 2);
  assert.equal(points['kube_watch.backstage.access.decisions{"decision":"remembered"}'], 2);
  assert.equal(
    points['kube_watch.backstage.answers{"answer":"default"}'] +
      points['kube_watch.backstage.answers{"answer":"cache"}'],
    6,
  );
  assert.equal(points['kube_watch.backstage.signals{"outcome":"published"}'], 0);
  assert.doesNotMatch(JSON.stringify(points), /tok-|alice|carol/);
});

test('a viewer who keeps loading past authorizationTtl never waits for a review: decisions are renewed in the background', async (t) => {
  const { sim, fetcher, as } = await setUp(t, { authorizationTtlMs: 1000 });
  const alice = as('tok-alice');
  await fetcher.fetchObjectsForService(alice); // the first load asks (two types)
  const first = fetcher.decisions();
  assert.equal(first.hits, 0);
  // Three seconds of loads every 300 ms: three TTLs, every load answered from a decision.
  for (let i = 0; i < 10; i++) {
    await sleep(300);
    await fetcher.fetchObjectsForService(alice);
  }
  const { hits, allowed } = fetcher.decisions();
  assert.equal(hits, 10 * 2, 'every later load found its decisions in memory');
  assert.ok(allowed > first.allowed, `renewed in the background (${allowed - first.allowed} reviews)`);
  const reviews = sim.requests.filter((r) => r.path.endsWith('/selfsubjectaccessreviews'));
  assert.ok(reviews.length <= 2 + 2 * 6, `${reviews.length} reviews: at most one per type per half TTL`);
});
