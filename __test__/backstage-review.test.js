'use strict';
// The security review of the Backstage module (issue 34), finding by finding, against the
// simulator: a cache is served only while it can prove it is current and its credential good,
// its identity is never taken from a name, its answers are each load's own, and no request can
// pin or blow its bounds. Each test fails on the module as it was before the review.

const test = require('node:test');
const assert = require('node:assert/strict');
const { NativeKubernetesWatcher } = require('kube-watch-native');
const { NativeInformerFetcher } = require('../packages/backstage/serving/fetcher');
const { createLivePublisher } = require('../packages/backstage/following/publisher');
const { liveRequestContext } = require('../packages/backstage/following/mark');
const { createSimulator } = require('../packages/kube-watch-native/sim');
const { recordingLogger } = require('./helpers');
const { fetcherFor, followerOf, recordingDefault, serviceAccountRequest } = require('./backstage-helpers');
const { until, sleep } = require('../testbed/wait');

const ID = 'backstage.io/kubernetes-id';

/** A simulator with bookmarks every 200 ms and a fetcher over it, both closed after `t`. */
async function setUp(t, { sim: simOptions = {}, ...options } = {}) {
  const sim = await createSimulator({ bookmarkIntervalMs: 200, ...simOptions });
  t.after(() => sim.close());
  const { logger, defaultFetcher, fetcher } = fetcherFor(t, options);
  const request = (token, overrides) => serviceAccountRequest(sim.url, token, overrides);
  return { sim, fetcher, defaultFetcher, logger, request };
}

const pod = (name, labels = { [ID]: 'svc' }) => ({ metadata: { name, namespace: 'team', labels } });
const names = (answer) => answer.responses[0].resources.map((o) => o.metadata?.name ?? 'default');
const fromDefault = (answer) => answer.responses[0]?.resources[0]?.fromDefault === true;

/** Loads until an answer comes from the cache (not the default fetcher's marker). */
async function fromCache(fetcher, request, what = 'an answer from the cache') {
  return until(
    async () => {
      const answer = await fetcher.fetchObjectsForService(request);
      return !fromDefault(answer) && answer;
    },
    { what },
  );
}

test('finding 3: a watch silent past the liveness bound is not served; the informer watches again', async (t) => {
  const { sim, fetcher, request } = await setUp(t, { sim: { token: 'tok-a' }, livenessMs: 1200 });
  sim.create('pods', pod('p1'));
  await fromCache(fetcher, request('tok-a'));
  // Bookmarks keep a quiet watch alive past the bound.
  await sleep(1600);
  assert.ok(!fromDefault(await fetcher.fetchObjectsForService(request('tok-a'))), 'a quiet watch is alive');
  // The next watch answers its headers and then writes nothing: the connection alive, the stream quiet.
  sim.nextWatchFault({ stallAfterEvents: 0 });
  sim.endWatches();
  await sleep(300);
  sim.create('pods', pod('p2'));
  const stalledAt = Date.now();
  await until(async () => fromDefault(await fetcher.fetchObjectsForService(request('tok-a'))), {
    ms: 3000,
    what: 'the default fetcher to answer for the silent watch',
  });
  t.diagnostic(`silent watch not served after ${Date.now() - stalledAt} ms (bound 1200 ms)`);
  // The informer cut the silent stream and watched again: served again, with what it missed.
  const again = await fromCache(fetcher, request('tok-a'), 'the cache served again after a new watch');
  assert.deepEqual(names(again).sort(), ['p1', 'p2']);
});

/** Steps the process's wall clock (Date.now) by `ms` until the test ends, as NTP or a resumed VM would. */
function stepWallClock(t, ms) {
  const real = Date.now;
  Date.now = () => real() + ms;
  t.after(() => {
    Date.now = real;
  });
}

test('finding 3: a wall clock stepped on or back neither drops a live cache nor serves a silent one', async (t) => {
  const { sim, fetcher, request } = await setUp(t, { sim: { token: 'tok-a' }, livenessMs: 1200 });
  sim.create('pods', pod('p1'));
  await fromCache(fetcher, request('tok-a'));
  const served = async () => !fromDefault(await fetcher.fetchObjectsForService(request('tok-a')));
  stepWallClock(t, 10 * 60_000);
  await sleep(300);
  assert.ok(await served(), 'ten minutes on by the wall clock, 300 ms by the monotonic one: still served');
  // A watch reopened, then the wall clock stepped back: served again once the resumed watch settles.
  sim.endWatches();
  stepWallClock(t, -20 * 60_000);
  sim.create('pods', pod('p2'));
  await until(
    async () => {
      const answer = await fetcher.fetchObjectsForService(request('tok-a'));
      return !fromDefault(answer) && names(answer).includes('p2');
    },
    { ms: 3000, what: 'the cache served with p2 after the reopened watch' },
  );
  // A silent watch is not served past the bound, whatever the wall clock says.
  sim.nextWatchFault({ stallAfterEvents: 0 });
  sim.endWatches();
  await until(async () => !(await served()), { ms: 3000, what: 'the silent watch not served' });
});

test('finding 3: bytes that prove nothing (lines that are not events) do not keep a cache served', async (t) => {
  const { sim, fetcher, request } = await setUp(t, { sim: { token: 'tok-a' }, livenessMs: 1200 });
  sim.create('pods', pod('p1'));
  await fromCache(fetcher, request('tok-a'));
  // The next watch answers 200 and then writes a line that is no event every 200 ms (skipped
  // with a warning): the stream is busy, so no idle timer fires, but nothing says the cache is
  // current.
  const timers = [];
  t.after(() => timers.forEach(clearInterval));
  sim.nextWatchFault({
    onWatch: (ctx) => {
      ctx.write('');
      timers.push(setInterval(() => ctx.write('{"kind":"noise"}\n'), 200));
    },
  });
  sim.endWatches();
  // Served while the new watch's opening is recent enough to prove the cache current...
  await fromCache(fetcher, request('tok-a'), 'the cache served once the new watch opened');
  // ...and no longer once that is past the bound, busy as the stream is.
  await until(async () => fromDefault(await fetcher.fetchObjectsForService(request('tok-a'))), {
    ms: 4000,
    what: 'the default fetcher to answer while only lines that are no event arrive',
  });
});

test('finding 4: a revoked token stops being served within twice the check interval', async (t) => {
  const { sim, fetcher, request } = await setUp(t, {
    sim: { tokens: { 'tok-sa': { user: 'system:serviceaccount:backstage:reader' } } },
    credentialCheckMs: 400,
  });
  sim.create('pods', pod('p1'));
  await fromCache(fetcher, request('tok-sa'));
  delete sim.options.tokens['tok-sa']; // the ServiceAccount token is deleted
  const revokedAt = Date.now();
  sim.create('pods', pod('p2'));
  await until(async () => fromDefault(await fetcher.fetchObjectsForService(request('tok-sa'))), {
    ms: 3000,
    what: 'the default fetcher (whose LIST is refused 401) to answer',
  });
  const took = Date.now() - revokedAt;
  t.diagnostic(`revoked token not served after ${took} ms (bound 800 ms + a check)`);
  assert.ok(took < 2000, `${took} ms`);
  const checks = sim.requests.filter((r) => r.path.endsWith('/selfsubjectreviews') || r.path === '/api');
  assert.ok(
    checks.some((r) => r.status === 401),
    'a check was refused',
  );
  // The watch itself is still open: the API server authenticated it when it started.
  assert.ok(sim.activeWatches() >= 1);
});

test('finding 5: each load gets its own answer: a caller changing it in place changes no other', async (t) => {
  const { sim, fetcher, request } = await setUp(t, { sim: { token: 'tok-a' } });
  sim.create('pods', pod('mine'));
  sim.create('pods', pod('private'));
  const first = await fromCache(fetcher, request('tok-a'));
  // An objects provider filtering per user in place.
  first.responses[0].resources.splice(1, 1);
  first.responses[0].resources[0].metadata.name = 'changed';
  const second = await fetcher.fetchObjectsForService(request('tok-a'));
  assert.deepEqual(names(second), ['mine', 'private']);
  second.responses[0].resources[1].metadata.labels.app = 'changed too';
  const third = await fetcher.fetchObjectsForService(request('tok-a'));
  assert.notEqual(third.responses[0].resources[0], second.responses[0].resources[0]);
  assert.deepEqual(names(third), ['mine', 'private']);
  assert.notEqual(third.responses[0].resources[1].metadata.labels.app, 'changed too', 'a deep copy');
});

test('an answer copy: new objects and arrays throughout, a __proto__ key kept as the own property JSON.parse made', () => {
  const { copyJson } = require('../packages/backstage/serving/answers');
  const original = JSON.parse('{"a":[{"b":{"c":"d"}},1,null,true],"__proto__":{"polluted":true}}');
  const copy = copyJson(original);
  assert.deepEqual(copy, original);
  assert.notEqual(copy.a, original.a);
  assert.notEqual(copy.a[0].b, original.a[0].b);
  assert.equal(Object.getPrototypeOf(copy), Object.prototype, 'the prototype is untouched');
  assert.ok(Object.hasOwn(copy, '__proto__'));
  assert.deepEqual(Object.keys(copy), ['a', '__proto__']);
  assert.equal(copy.polluted, undefined);
});

test('finding 7: a strategy under the serviceAccount name with per-user tokens gets one identity per user the server reports', async (t) => {
  const { sim, fetcher, defaultFetcher, request } = await setUp(t, {
    sim: {
      tokens: {
        'tok-alice-1': { user: 'alice', uid: 'u-alice' },
        'tok-alice-2': { user: 'alice', uid: 'u-alice' },
        'tok-bob': { user: 'bob', uid: 'u-bob', rules: [{ resources: ['configmaps'] }] },
      },
    },
  });
  sim.create('pods', pod('alices-view'));
  // No serviceAccountToken in the cluster's config: the strategy resolves a token per caller.
  const perUser = (token) => ({
    ...request(token),
    clusterDetails: {
      name: 'one',
      url: sim.url,
      authMetadata: { 'kubernetes.io/auth-provider': 'serviceAccount' },
    },
  });
  assert.deepEqual(names(await fromCache(fetcher, perUser('tok-alice-1'))), ['alices-view']);
  for (const token of ['tok-bob', 'tok-unknown']) {
    const calls = defaultFetcher.calls.length;
    for (let i = 0; i < 5; i++) {
      const answer = await fetcher.fetchObjectsForService(perUser(token));
      assert.ok(fromDefault(answer), `${token}: the default's answer (403 / 401), never Alice's pods`);
      await sleep(50);
    }
    assert.ok(defaultFetcher.calls.length > calls);
  }
  // Another token the server says is Alice shares her informers.
  const before = fetcher.informers().length;
  assert.deepEqual(names(await fromCache(fetcher, perUser('tok-alice-2'))), ['alices-view']);
  assert.equal(fetcher.informers().length, before, 'the same user: the same informer');
});

test('finding 11: maxCachedBytes holds under concurrent loads of distinct selectors', async (t) => {
  const bound = 60_000;
  const { sim, fetcher, logger, request } = await setUp(t, {
    sim: { token: 'tok-a' },
    maxCachedBytes: bound,
  });
  const padding = 'x'.repeat(2000);
  for (let i = 0; i < 200; i++) {
    sim.create('pods', { ...pod(`p${i}`, { [ID]: 'svc', app: 'web', [`s${i % 20}`]: 'y' }), data: padding });
  }
  // Twenty loads at once, each with a selector of its own (an informer each, ~20 KB each).
  const selectors = Array.from({ length: 20 }, (_, i) => `app=web,s${i}=y,tier!=z`);
  await Promise.all(
    selectors.map((labelSelector) => fetcher.fetchObjectsForService(request('tok-a', { labelSelector }))),
  );
  await sleep(600);
  const informers = fetcher.informers();
  const held = informers.reduce((sum, i) => sum + i.cachedBytes, 0);
  t.diagnostic(`${informers.length} informers hold ${held} bytes (bound ${bound})`);
  assert.ok(held <= bound, `${held} bytes held under a bound of ${bound}`);
  assert.ok(informers.length >= 1 && informers.length < 20, `${informers.length} informers`);
  assert.ok(logger.warnings().some((w) => w.includes('kubernetes.nativeInformers.maxCachedBytes reached')));
});

test('finding 12: types from a request body that the server refuses or lacks close at once and stay closed', async (t) => {
  const { sim, fetcher, request } = await setUp(t, {
    sim: { tokens: { 'tok-pods': { user: 'pods-only', rules: [{ resources: ['pods'] }] } } },
  });
  const madeUp = Array.from({ length: 10 }, (_, i) => ({
    group: `made-up-${i}.example.com`,
    apiVersion: 'v1',
    plural: 'things',
    objectType: 'customresources',
  }));
  const body = request('tok-pods', { objectTypesToFetch: new Set(), customResources: madeUp });
  await fetcher.fetchObjectsForService(body);
  assert.deepEqual(fetcher.informers(), [], 'refused (403) before syncing: closed at once');
  const requests = sim.requests.length;
  for (let i = 0; i < 3; i++) await fetcher.fetchObjectsForService(body);
  await sleep(300);
  const reopened = sim.requests.slice(requests).filter((r) => r.query.watch || r.query.limit);
  assert.deepEqual(reopened, [], 'not opened again within a minute');
});

test('finding 12: custom resources named in request bodies take at most bodyShare of maxInformers', async (t) => {
  const { sim, fetcher, request } = await setUp(t, {
    sim: { token: 'tok-a' },
    maxInformers: 20,
    bodyShare: 0.1,
    customResources: [{ group: 'example.com', apiVersion: 'v1', plural: 'configured' }],
  });
  const kinds = ['configured', ...Array.from({ length: 6 }, (_, i) => `kind${i}`)];
  for (const plural of kinds) sim.defineResource(`example.com/v1/${plural}`, { kind: plural });
  const resources = kinds.map((plural) => ({
    group: 'example.com',
    apiVersion: 'v1',
    plural,
    objectType: 'customresources',
  }));
  await fetcher.fetchObjectsForService(
    request('tok-a', { objectTypesToFetch: new Set(), customResources: resources }),
  );
  const open = fetcher.informers().map((i) => i.plural);
  assert.ok(open.includes('configured'), 'a configured custom resource is not a body type');
  assert.equal(open.length, 1 + 2, `the configured one and 2 of the body's (${open})`);
});

test('findings 2 and 8: every viewer of an informer is signalled, past 256 selectors, naming its own cluster', async (t) => {
  const published = [];
  const publisher = createLivePublisher({ signals: { publish: (s) => void published.push(s) } });
  const { sim, fetcher, request } = await setUp(t, { sim: { token: 'tok-a' }, live: publisher });
  sim.create('pods', pod('p0', { [ID]: 'svc', n: '0' }));
  const load = (i, clusterName) =>
    liveRequestContext.run(
      { userEntityRef: `user:default/u${i}`, entityRef: `component:default/e${i}` },
      () =>
        fetcher.fetchObjectsForService({
          ...request('tok-a', { labelSelector: `${ID}=svc,n=${i}` }),
          clusterDetails: { ...request('tok-a').clusterDetails, name: clusterName },
        }),
    );
  await fromCache(fetcher, request('tok-a'));
  await load(0, 'known-to-u0-as-this');
  for (let i = 1; i < 300; i++) await load(i, 'shared');
  assert.equal(fetcher.informers().length, 1, 'one informer for every selector of the id label');
  sim.patch('pods', 'team', 'p0', (p) => void (p.metadata.annotations = { changed: 'yes' }));
  await until(() => published.length > 0, { what: 'the first viewer’s signal' });
  await sleep(300);
  assert.deepEqual(
    published.map((s) => [s.recipients.entityRef, s.message.clusters]),
    [[['user:default/u0'], ['known-to-u0-as-this']]],
  );
});

test('an idle viewer whose cache stays current hears nothing: credentials are checked without loads', async (t) => {
  const published = [];
  const publisher = createLivePublisher({ signals: { publish: (s) => void published.push(s) } });
  const { sim, fetcher, request } = await setUp(t, {
    sim: { tokens: { 'tok-sa': { user: 'sa' } } },
    live: publisher,
    credentialCheckMs: 300,
    livenessMs: 1200,
  });
  sim.create('pods', pod('p1'));
  await fromCache(fetcher, request('tok-sa'));
  await liveRequestContext.run(
    { userEntityRef: 'user:default/idle', entityRef: 'component:default/svc' },
    () => fetcher.fetchObjectsForService(request('tok-sa')),
  );
  // Four check intervals and more than the liveness bound, with no load: nothing changed.
  await sleep(2000);
  assert.deepEqual(published, [], 'no signal while the cache stays current and its credential good');
  const reviews = sim.requests.filter((r) => r.path.endsWith('/selfsubjectreviews'));
  assert.ok(reviews.length >= 4, `${reviews.length} credential checks in 2 s without a load`);
  // And a revocation is found without a load, and signalled.
  delete sim.options.tokens['tok-sa'];
  await until(() => published.length === 1, { what: 'the signal of a credential refused' });
});

test('two replicas that see the same change signal its same identity, each publish with an id of its own', async (t) => {
  const sim = await createSimulator({ bookmarkIntervalMs: 200, token: 'tok-a' });
  t.after(() => sim.close());
  sim.create('pods', pod('p1'));
  const replicas = [0, 1].map(() => {
    const published = [];
    const fetcher = new NativeInformerFetcher({
      watcher: new NativeKubernetesWatcher({ logger: recordingLogger() }),
      defaultFetcher: recordingDefault(),
      follower: followerOf(createLivePublisher({ signals: { publish: (s) => void published.push(s) } })),
    });
    t.after(() => fetcher.close());
    return { fetcher, published };
  });
  const request = serviceAccountRequest(sim.url, 'tok-a');
  for (const { fetcher } of replicas) {
    await fromCache(fetcher, request);
    await liveRequestContext.run(
      { userEntityRef: 'user:default/a', entityRef: 'component:default/svc' },
      () => fetcher.fetchObjectsForService(request),
    );
  }
  sim.create('pods', pod('p2'));
  await until(() => replicas.every((r) => r.published.length === 1), {
    what: 'one signal from each replica',
  });
  // The change's identity, then a part unique to each publish (a repeated id is dropped).
  const changeOf = (signal) => signal.message.id.split('.')[0];
  const [a, b] = replicas.map((r) => changeOf(r.published[0]));
  assert.equal(a, b, 'the change named alike');
  assert.notEqual(replicas[0].published[0].message.id, replicas[1].published[0].message.id);
  // The viewer reloads (through either replica); the next change has an identity of its own.
  for (const { fetcher } of replicas) {
    await liveRequestContext.run(
      { userEntityRef: 'user:default/a', entityRef: 'component:default/svc' },
      () => fetcher.fetchObjectsForService(request),
    );
  }
  sim.create('pods', pod('p3'));
  await until(() => replicas.every((r) => r.published.length === 2), { what: 'the next change' });
  assert.notEqual(changeOf(replicas[0].published[1]), a);
  assert.equal(changeOf(replicas[0].published[1]), changeOf(replicas[1].published[1]));
  // Back to the state of the first change (p3 deleted): a change all the same, not a duplicate.
  for (const { fetcher } of replicas) {
    await liveRequestContext.run(
      { userEntityRef: 'user:default/a', entityRef: 'component:default/svc' },
      () => fetcher.fetchObjectsForService(request),
    );
  }
  sim.remove('pods', 'team', 'p3');
  await until(() => replicas.every((r) => r.published.length === 3), { what: 'the change back' });
  assert.notEqual(changeOf(replicas[0].published[2]), a, 'a change back to an earlier state is new');
  assert.equal(changeOf(replicas[0].published[2]), changeOf(replicas[1].published[2]));
});

test('finding 6 (issue 48): a viewer whose informer a bound closes is told to load again', async (t) => {
  const published = [];
  const publisher = createLivePublisher({ signals: { publish: (s) => void published.push(s) } });
  // Closed when no load used it for 400 ms: a live tab asks nothing while its answer is current.
  const { sim, fetcher, request } = await setUp(t, {
    sim: { token: 'tok-a' },
    live: publisher,
    idleTimeoutMs: 400,
  });
  sim.create('pods', pod('p1'));
  await fromCache(fetcher, request('tok-a'));
  await liveRequestContext.run({ userEntityRef: 'user:default/a', entityRef: 'component:default/svc' }, () =>
    fetcher.fetchObjectsForService(request('tok-a')),
  );
  assert.equal(fetcher.informers().length, 1);
  await until(() => fetcher.informers().length === 0, { what: 'the idle informer closed' });
  await until(() => published.length === 1, { what: 'its viewer told' });
  assert.deepEqual(published[0].recipients.entityRef, ['user:default/a']);
  assert.equal(published[0].channel, 'kubernetes:component:default/svc');
  await sleep(300);
  assert.equal(published.length, 1, 'once: the signal asks for one reload');
});
