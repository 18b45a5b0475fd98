'use strict';
// kube-watch-native-backstage in parts: the selector parser against the simulator's (which
// parses as the API server does), the config reader, and NativeInformerFetcher on its own with a
// recording stand-in for Backstage's default fetcher.

const test = require('node:test');
const assert = require('node:assert/strict');
const { ConfigReader } = require('@backstage/config');
const { parseSelector, requiresKey, SelectorError } = require('../packages/backstage/serving/selector');
const { readNativeInformersConfig, DEFAULT_OBJECT_TYPES } = require('../packages/backstage/config');
const serverSelector = require('../packages/kube-watch-native/sim/selector');
const { createSimulator } = require('../packages/kube-watch-native/sim');
const { fetcherFor, serviceAccountRequest } = require('./backstage-helpers');
const { until } = require('../testbed/wait');

const ID = 'backstage.io/kubernetes-id';

test('label selectors parse as the API server parses them', () => {
  const valid = [
    'app=web',
    'app==web',
    'app!=web',
    'app',
    '!app',
    'app in (web,api)',
    'app notin (web)',
    'app in (web), tier != db',
    `${ID}=svc-a`,
    'example.com/team=a.b_c-d',
    'app=',
    'replicas>2',
    'replicas<10',
  ];
  const invalid = [
    'app in (web',
    '=web',
    'app=web,',
    'app web',
    'app in web',
    'replicas>two',
    'a/b/c=x',
    '-app=x',
    'app=-x',
  ];
  for (const selector of valid) {
    assert.doesNotThrow(() => parseSelector(selector), selector);
    assert.doesNotThrow(() => serverSelector.parseSelector(selector), `the simulator agrees on ${selector}`);
  }
  for (const selector of invalid) {
    assert.throws(() => parseSelector(selector), SelectorError, selector);
    assert.throws(() => serverSelector.compileSelector(selector), `the simulator agrees on ${selector}`);
  }
  assert.deepEqual(parseSelector('app in (web, api),!tier'), [
    { key: 'app', operator: 'in', values: ['web', 'api'] },
    { key: 'tier', operator: '!', values: [] },
  ]);
});

test('a selector needs the kubernetes-id label only when no object without it can match', () => {
  const needs = (selector) => requiresKey(parseSelector(selector), ID);
  assert.equal(needs(`${ID}=svc-a`), true);
  assert.equal(needs(`${ID}==svc-a,app=web`), true);
  assert.equal(needs(`${ID} in (a,b)`), true);
  assert.equal(needs(ID), true);
  assert.equal(needs(`${ID}!=svc-a`), false);
  assert.equal(needs(`${ID} notin (a)`), false);
  assert.equal(needs(`!${ID}`), false);
  assert.equal(needs('app=web'), false);
});

test('kubernetes.nativeInformers: defaults, durations in every form the schema takes, bounds, and errors that name the key', () => {
  const read = (nativeInformers) =>
    readNativeInformersConfig(new ConfigReader({ kubernetes: { nativeInformers } }));
  const defaults = readNativeInformersConfig(new ConfigReader({}));
  assert.equal(defaults.enabled, true);
  assert.equal(defaults.idleTimeoutMs, 600_000);
  assert.equal(defaults.syncTimeoutMs, 5_000);
  assert.equal(defaults.stripManagedFields, false, 'answers keep managedFields, as the default’s');
  assert.equal(defaults.maxInformers, 2000);
  assert.equal(defaults.maxCachedBytes, 1024 ** 3);
  assert.deepEqual(defaults.rotatingAuthProviders, [
    'aws',
    'azure',
    'googleServiceAccount',
    'serviceAccount',
  ]);
  assert.equal(defaults.livenessMs, 90_000);
  assert.equal(defaults.credentialCheckMs, 30_000);
  assert.deepEqual([defaults.userShare, defaults.bodyShare], [0.25, 0.1]);
  assert.equal(defaults.live.maxViewersPerUser, 200);
  assert.deepEqual(
    readNativeInformersConfig(
      new ConfigReader({
        kubernetes: { customResources: [{ group: 'example.com', apiVersion: 'v1', plural: 'widgets' }] },
      }),
    ).customResources,
    [{ group: 'example.com', apiVersion: 'v1', plural: 'widgets' }],
  );
  assert.equal(read({ liveness: '2m', credentialCheckInterval: '10s' }).livenessMs, 120_000);
  assert.equal(read({ credentialCheckInterval: '10s' }).credentialCheckMs, 10_000);
  assert.equal(read({ userShare: 0.5 }).userShare, 0.5);
  assert.throws(() => read({ userShare: 0 }), /userShare: must be a number above 0 and at most 1/);
  assert.throws(() => read({ bodyShare: 2 }), /bodyShare: must be a number above 0 and at most 1/);
  assert.deepEqual([...defaults.objectTypes], DEFAULT_OBJECT_TYPES);
  assert.ok(!defaults.objectTypes.has('secrets'));
  assert.equal(read({ idleTimeout: { minutes: 2, seconds: 30 } }).idleTimeoutMs, 150_000);
  assert.equal(read({ idleTimeout: { months: 1 } }).idleTimeoutMs, 30 * 86_400_000);
  assert.equal(read({ idleTimeout: 'P1W' }).idleTimeoutMs, 7 * 86_400_000);
  assert.equal(read({ idleTimeout: '1y' }).idleTimeoutMs, 365 * 86_400_000);
  assert.equal(read({ idleTimeout: '90s' }).idleTimeoutMs, 90_000);
  assert.equal(read({ idleTimeout: '10 minutes' }).idleTimeoutMs, 600_000);
  assert.equal(read({ syncTimeout: 'PT1M30S' }).syncTimeoutMs, 90_000);
  assert.equal(read({ syncTimeout: '250ms' }).syncTimeoutMs, 250);
  assert.equal(read({ maxInformers: 50, maxCachedBytes: 1e6 }).maxInformers, 50);
  assert.deepEqual([...read({ objectTypes: ['pods', 'secrets'] }).objectTypes], ['pods', 'secrets']);
  assert.equal(read({ enabled: false, stripManagedFields: true }).stripManagedFields, true);
  assert.throws(() => read({ idleTimeout: 'soon' }), /kubernetes\.nativeInformers\.idleTimeout: .*soon/);
  assert.throws(
    () => read({ idleTimeout: { fortnights: 1 } }),
    /idleTimeout: .*Needs one or more of 'years'/,
  );
  assert.throws(() => read({ idleTimeout: { days: 1, fortnights: 1 } }), /idleTimeout: .*'fortnights'/);
  assert.throws(() => read({ syncTimeout: '0s' }), /syncTimeout: must be longer than zero/);
  assert.throws(() => read({ maxInformers: 0 }), /maxInformers: must be a whole number above zero/);
  assert.throws(() => read({ maxCachedBytes: 1.5 }), /maxCachedBytes: must be a whole number above zero/);
  assert.throws(
    () => read({ objectTypes: ['pods', 'widgets'] }),
    /objectTypes: unknown object type 'widgets'/,
  );
});

const PODS = { group: '', apiVersion: 'v1', plural: 'pods', objectType: 'pods' };

async function setup(t, options = {}) {
  const sim = await createSimulator({ token: 'tok-unit-77' });
  t.after(() => sim.close());
  sim.create('pods', { metadata: { name: 'p1', namespace: 'team', labels: { [ID]: 'svc' } } });
  sim.create('pods', { metadata: { name: 'p2', namespace: 'other', labels: { [ID]: 'svc' } } });
  const { logger, defaultFetcher, fetcher } = fetcherFor(t, options);
  const params = (overrides = {}) => ({
    serviceId: 'svc',
    clusterDetails: {
      name: 'unit',
      url: sim.url,
      authMetadata: { 'kubernetes.io/auth-provider': 'serviceAccount' },
    },
    credential: { type: 'bearer token', token: 'tok-unit-77' },
    objectTypesToFetch: new Set([PODS]),
    labelSelector: `${ID}=svc`,
    customResources: [],
    ...overrides,
  });
  return { sim, fetcher, defaultFetcher, params, logger };
}

const names = (answer) => answer.responses[0].resources.map((o) => o.metadata?.name);

test('the viewer’s own credentials and pod metrics go to the default fetcher, and no informer opens', async (t) => {
  const { fetcher, defaultFetcher, params } = await setup(t);
  for (const provider of ['google', 'oidc', 'aks', 'myCustomStrategy']) {
    const request = params({
      clusterDetails: {
        ...params().clusterDetails,
        authMetadata: { 'kubernetes.io/auth-provider': provider },
      },
    });
    const answer = await fetcher.fetchObjectsForService(request);
    assert.equal(defaultFetcher.calls.at(-1), request, provider);
    assert.deepEqual(answer.responses[0].resources, [{ fromDefault: true }]);
  }
  await fetcher.fetchObjectsForService(params({ credential: { type: 'anonymous' } }));
  assert.equal(defaultFetcher.calls.length, 5, 'an anonymous credential outside localKubectlProxy');
  const metricsArgs = [params().clusterDetails, params().credential, new Set(['team']), `${ID}=svc`];
  await fetcher.fetchPodMetricsByNamespaces(...metricsArgs);
  assert.deepEqual(defaultFetcher.calls.at(-1), metricsArgs);
  assert.deepEqual(fetcher.informers(), []);
});

test('a first load waits at most syncTimeout, then answers with the default fetcher while the informer syncs', async (t) => {
  const { sim, fetcher, defaultFetcher, params } = await setup(t, { syncTimeoutMs: 150 });
  sim.nextWatchFault({ delayMs: 600 });
  const first = await fetcher.fetchObjectsForService(params());
  assert.deepEqual(first.responses[0].resources, [{ fromDefault: true }]);
  assert.equal(defaultFetcher.calls.length, 1);
  const [informer] = fetcher.informers();
  assert.equal(informer.labelSelector, ID);
  assert.equal(informer.synced, false);
  // Once synced, from the cache.
  const cached = await (async () => {
    for (let i = 0; i < 100; i++) {
      const answer = await fetcher.fetchObjectsForService(params());
      if (!answer.responses[0].resources[0]?.fromDefault) return answer;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error('never answered from the cache');
  })();
  assert.deepEqual(names(cached), ['p2', 'p1'], 'all namespaces, in the API server’s order');
});

test('a credential refused cluster-wide (403) is served by an informer of the entity’s namespace', async (t) => {
  const { sim, fetcher, params } = await setup(t);
  // The credential is checked first (a SelfSubjectReview), so the refusal is the list's.
  await fetcher.fetchObjectsForService(params({ objectTypesToFetch: new Set() }));
  sim.failNext(1, 403);
  const answer = await fetcher.fetchObjectsForService(params({ namespace: 'team' }));
  assert.deepEqual(answer.errors, []);
  assert.deepEqual(names(answer), ['p1']);
  const namespaced = fetcher.informers().find((i) => i.namespace === 'team');
  assert.ok(namespaced, 'a namespaced informer');
  assert.equal(namespaced.labelSelector, ID);
});

test('a token the cluster starts requiring is taken from the next request', async (t) => {
  const { sim, fetcher, params } = await setup(t);
  assert.deepEqual(names(await fetcher.fetchObjectsForService(params())), ['p2', 'p1']);
  sim.rotateToken('tok-unit-88');
  sim.endWatches();
  sim.create('pods', { metadata: { name: 'p3', namespace: 'team', labels: { [ID]: 'svc' } } });
  const fresh = params({ credential: { type: 'bearer token', token: 'tok-unit-88' } });
  for (let i = 0; i < 200; i++) {
    const answer = await fetcher.fetchObjectsForService(fresh);
    if (answer.errors.length === 0 && names(answer).includes('p3')) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail('the informer never used the new token');
});

test('close() ends every informer; later loads go to the default fetcher', async (t) => {
  const { sim, fetcher, defaultFetcher, params } = await setup(t);
  await fetcher.fetchObjectsForService(params());
  assert.equal(fetcher.informers().length, 1);
  assert.equal(sim.activeWatches(), 1);
  fetcher.close();
  assert.deepEqual(fetcher.informers(), []);
  await fetcher.fetchObjectsForService(params());
  assert.equal(defaultFetcher.calls.length, 1);
  for (let i = 0; i < 100 && sim.activeWatches() > 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(sim.activeWatches(), 0);
});

test('config.d.ts is the schema Backstage’s config loader enforces for kubernetes.nativeInformers', async () => {
  const { loadConfigSchema } = require('@backstage/config-loader');
  const schema = await loadConfigSchema({
    dependencies: [],
    packagePaths: [require.resolve('../packages/backstage/package.json')],
  });
  // What the other packages in this package's dependencies require, then the module's own keys.
  const config = (nativeInformers) => ({
    app: { baseUrl: 'http://localhost:3000' },
    backend: {
      baseUrl: 'http://localhost:7007',
      listen: { port: 7007 },
      database: { client: 'better-sqlite3', connection: ':memory:' },
    },
    kubernetes: { serviceLocatorMethod: { type: 'multiTenant' }, clusterLocatorMethods: [], nativeInformers },
  });
  const good = {
    enabled: true,
    idleTimeout: '10m',
    syncTimeout: { seconds: 5 },
    stripManagedFields: false,
    objectTypes: ['pods', 'customresources'],
  };
  assert.doesNotThrow(() => schema.process([{ data: config(good), context: 'app-config.yaml' }]));
  assert.throws(
    () =>
      schema.process([
        { data: config({ enabled: 'yes', objectTypes: ['widgets'] }), context: 'app-config.yaml' },
      ]),
    (err) =>
      /\/kubernetes\/nativeInformers\/enabled/.test(err.message) &&
      /\/kubernetes\/nativeInformers\/objectTypes/.test(err.message),
  );
});

test('managedFields are left out of cached and delegated answers, unless stripManagedFields is off', async (t) => {
  const managedFields = [{ manager: 'kubectl', operation: 'Apply', fieldsType: 'FieldsV1' }];
  for (const stripManagedFields of [true, false]) {
    const { sim, fetcher, defaultFetcher, params } = await setup(t, { stripManagedFields });
    sim.create('pods', {
      metadata: { name: 'p3', namespace: 'team', labels: { [ID]: 'svc' }, managedFields },
    });
    const cached = await fetcher.fetchObjectsForService(params());
    const p3 = cached.responses[0].resources.find((o) => o.metadata.name === 'p3');
    assert.deepEqual(p3.metadata.managedFields, stripManagedFields ? undefined : managedFields);
    // Delegated (a viewer's credential): the default fetcher's objects, treated alike.
    defaultFetcher.fetchObjectsForService = async () => ({
      errors: [],
      responses: [{ type: 'pods', resources: [{ metadata: { name: 'd', managedFields } }] }],
    });
    const viewer = params({ clusterDetails: { ...params().clusterDetails, authMetadata: {} } });
    const delegated = await fetcher.fetchObjectsForService(viewer);
    assert.deepEqual(
      delegated.responses[0].resources[0].metadata.managedFields,
      stripManagedFields ? undefined : managedFields,
    );
  }
});

/** A cluster with two tokens RBAC tells apart, and requests for it as either. */
async function twoTokens(t, options = {}) {
  const sim = await createSimulator({
    tokens: {
      'tok-good-1': { user: 'good' },
      'tok-pods-2': { user: 'pods', rules: [{ resources: ['pods'] }] },
    },
  });
  t.after(() => sim.close());
  sim.create('pods', { metadata: { name: 'p1', namespace: 'team', labels: { [ID]: 'svc', app: 'web' } } });
  sim.create('configmaps', { metadata: { name: 'c1', namespace: 'team', labels: { [ID]: 'svc' } } });
  const { logger, defaultFetcher, fetcher } = fetcherFor(t, options);
  const as = (token, overrides) => serviceAccountRequest(sim.url, token, overrides);
  return { sim, fetcher, defaultFetcher, logger, as };
}

const fromCache = async (fetcher, request) => {
  for (let i = 0; i < 200; i++) {
    const answer = await fetcher.fetchObjectsForService(request);
    if (answer.responses[0] && !answer.responses[0].resources[0]?.fromDefault) return answer;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('never answered from the cache');
};

test('two credentials of one cluster name and URL never share a cache or a connection’s credential', async (t) => {
  const { sim, fetcher, defaultFetcher, as } = await twoTokens(t);
  assert.deepEqual(names(await fromCache(fetcher, as('tok-good-1'))), ['p1']);
  // A wrong token, and a token allowed pods only asking for configmaps: each the default's.
  const CONFIGMAPS = { group: '', apiVersion: 'v1', plural: 'configmaps', objectType: 'configmaps' };
  for (const request of [
    as('tok-wrong-9'),
    as('tok-pods-2', { objectTypesToFetch: new Set([CONFIGMAPS]) }),
    // The good token's cluster entry with another credential (a strategy resolving per caller).
    { ...as('tok-good-1'), credential: { type: 'bearer token', token: 'tok-wrong-9' } },
  ]) {
    const calls = defaultFetcher.calls.length;
    const answer = await fetcher.fetchObjectsForService(request);
    assert.deepEqual(
      answer.responses[0].resources,
      [{ fromDefault: true }],
      'not the other identity’s objects',
    );
    assert.ok(defaultFetcher.calls.length > calls);
  }
  assert.equal(fetcher.identities(), 4);
  // The good token's informer kept its own credential: every request of its watch carried it.
  assert.deepEqual(names(await fetcher.fetchObjectsForService(as('tok-good-1'))), ['p1']);
  const goodWatches = sim.requests.filter(
    (r) => r.query.watch && r.path === '/api/v1/pods' && r.headers.authorization === 'Bearer tok-good-1',
  );
  assert.ok(goodWatches.length >= 1);
  assert.ok(goodWatches.every((r) => r.status === 200 || r.status === undefined));
});

test('a rotating provider’s new token keeps its informer, which takes the new token', async (t) => {
  const { sim, fetcher, as } = await twoTokens(t);
  const aws = (token) => ({
    ...as(token),
    clusterDetails: {
      name: 'one',
      url: sim.url,
      authMetadata: { 'kubernetes.io/auth-provider': 'aws', 'kubernetes.io/aws-assume-role': 'arn:role' },
    },
  });
  sim.options.tokens['tok-aws-1'] = { user: 'role' };
  assert.deepEqual(names(await fromCache(fetcher, aws('tok-aws-1'))), ['p1']);
  sim.options.tokens['tok-aws-2'] = { user: 'role' };
  delete sim.options.tokens['tok-aws-1'];
  assert.deepEqual(names(await fetcher.fetchObjectsForService(aws('tok-aws-2'))), ['p1']);
  sim.endWatches();
  // The informer's next watch is refused the old token (401), asks again, and gets the new one.
  await until(
    () =>
      sim.requests.some(
        (r) => r.query.watch && r.headers.authorization === 'Bearer tok-aws-2' && r.status !== 401,
      ),
    { what: 'a watch with the new token' },
  );
  assert.deepEqual(names(await fromCache(fetcher, aws('tok-aws-2'))), ['p1']);
  assert.equal(fetcher.informers().length, 1, 'one informer across the rotation');
  assert.equal(fetcher.identities(), 1);
});

test('past maxInformers the default fetcher answers, with one warning naming the bound', async (t) => {
  for (const [bound, options] of [['maxInformers', { maxInformers: 2, idleTimeoutMs: 4000 }]]) {
    const { sim, fetcher, defaultFetcher, logger, as } = await twoTokens(t, options);
    await fromCache(fetcher, as('tok-good-1'));
    for (let i = 0; i < 6; i++) {
      const calls = defaultFetcher.calls.length;
      await fetcher.fetchObjectsForService(as('tok-good-1', { labelSelector: `app=web,tier!=x${i}` }));
      if (i >= 1) assert.equal(defaultFetcher.calls.length, calls + 1, `${bound}: selector ${i} delegated`);
    }
    const most = bound === 'maxInformers' ? 2 : 1;
    assert.ok(fetcher.informers().length <= most, `${bound}: ${fetcher.informers().length} informers`);
    assert.ok(sim.activeWatches() <= most);
    const warnings = logger
      .warnings()
      .filter((w) => w.includes(`kubernetes.nativeInformers.${bound} reached`));
    assert.equal(warnings.length, 1, `${bound}: one warning`);
    // What was cached is still answered from the cache.
    assert.deepEqual(names(await fetcher.fetchObjectsForService(as('tok-good-1'))), ['p1']);
    // And everything closes once unused for idleTimeout: informers, watches, identities.
    await until(
      () => fetcher.informers().length === 0 && sim.activeWatches() === 0 && fetcher.identities() === 0,
      { ms: 10_000, what: `${bound}: everything closed after idleTimeout` },
    );
  }
});

test('selectors that match unlabelled objects, and secrets by any route, open no informer', async (t) => {
  const { fetcher, defaultFetcher, as } = await twoTokens(t);
  for (const labelSelector of ['', 'app!=web', '!tier', 'app notin (web)', `!${ID},app!=x`]) {
    await fetcher.fetchObjectsForService(as('tok-good-1', { labelSelector }));
  }
  assert.equal(defaultFetcher.calls.length, 5);
  const SECRETS = { group: '', apiVersion: 'v1', plural: 'secrets', objectType: 'secrets' };
  await fetcher.fetchObjectsForService(as('tok-good-1', { objectTypesToFetch: new Set([SECRETS]) }));
  await fetcher.fetchObjectsForService(
    as('tok-good-1', {
      objectTypesToFetch: new Set(),
      customResources: [{ group: '', apiVersion: 'v1', plural: 'secrets', objectType: 'customresources' }],
    }),
  );
  assert.deepEqual(fetcher.informers(), [], 'no objectTypes option: every type but secrets');
});

test('syncTimeout is waited once per informer; a warm unchanged load parses nothing again', async (t) => {
  const { sim, fetcher, as } = await twoTokens(t, { syncTimeoutMs: 300 });
  sim.nextWatchFault({ delayMs: 1500 });
  let started = Date.now();
  await fetcher.fetchObjectsForService(as('tok-good-1'));
  assert.ok(Date.now() - started >= 280, 'the first load waits');
  started = Date.now();
  await fetcher.fetchObjectsForService(as('tok-good-1'));
  assert.ok(Date.now() - started < 250, `the second load does not wait again (${Date.now() - started} ms)`);
  const first = await fromCache(fetcher, as('tok-good-1'));
  const again = await fetcher.fetchObjectsForService(as('tok-good-1'));
  assert.deepEqual(again.responses[0], first.responses[0], 'the same answer');
  assert.notEqual(again.responses[0], first.responses[0], 'each load its own copy');
  sim.create('pods', { metadata: { name: 'p0', namespace: 'team', labels: { [ID]: 'svc' } } });
  const changed = await until(async () => {
    const answer = await fetcher.fetchObjectsForService(as('tok-good-1'));
    return names(answer).length === 2 && answer;
  });
  assert.notEqual(changed.responses[0], first.responses[0]);
  assert.deepEqual(names(changed), ['p0', 'p1']);
});

test('identities are pruned with their informers; a request whose open fails closes what it opened', async (t) => {
  const { fetcher, as } = await twoTokens(t, { idleTimeoutMs: 200 });
  await fromCache(fetcher, as('tok-good-1'));
  assert.equal(fetcher.identities(), 1);
  await until(() => fetcher.informers().length === 0 && fetcher.identities() === 0, {
    what: 'the idle informer and its identity to go',
  });
  const broken = as('tok-good-1', {
    customResources: [
      { group: 'example.com', apiVersion: '', plural: 'widgets', objectType: 'customresources' },
    ],
  });
  await fetcher.fetchObjectsForService(broken);
  assert.deepEqual(fetcher.informers(), [], 'the pods informer the request opened first is closed too');
});

test('an idle sweep during the sync wait leaves the entry a request is about to use', async (t) => {
  const { sim, fetcher, defaultFetcher, as } = await twoTokens(t, {
    idleTimeoutMs: 100,
    syncTimeoutMs: 2000,
  });
  sim.nextWatchFault({ delayMs: 600 });
  const answer = await fetcher.fetchObjectsForService(as('tok-good-1'));
  assert.deepEqual(names(answer), ['p1'], 'answered from the informer it waited for');
  assert.equal(defaultFetcher.calls.length, 0);
});

test('a cluster-wide informer refused (403) is not opened again while namespaced loads keep coming', async (t) => {
  const { sim, fetcher, as } = await twoTokens(t);
  sim.options.tokens['tok-team-3'] = { user: 'team', rules: [{ namespaces: ['team'] }] };
  for (let i = 0; i < 5; i++) {
    assert.deepEqual(names(await fromCache(fetcher, as('tok-team-3', { namespace: 'team' }))), ['p1']);
  }
  const clusterWide = sim.requests.filter(
    (r) => r.query.watch && r.path === '/api/v1/pods' && r.headers.authorization === 'Bearer tok-team-3',
  );
  assert.equal(clusterWide.length, 1, 'tried once');
});
