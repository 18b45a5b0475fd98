'use strict';
// kube-watch-native/backstage in parts: the selector parser against the simulator's (which
// parses as the API server does), the config reader, and NativeInformerFetcher on its own with a
// recording stand-in for Backstage's default fetcher.

const test = require('node:test');
const assert = require('node:assert/strict');
const { ConfigReader } = require('@backstage/config');
const { NativeKubernetesWatcher } = require('..');
const { NativeInformerFetcher } = require('kube-watch-native/backstage');
const { parseSelector, requiresKey, SelectorError } = require('../backstage/selector');
const { readNativeInformersConfig, DEFAULT_OBJECT_TYPES } = require('../backstage/config');
const serverSelector = require('../sim/selector');
const { createSimulator } = require('../sim');
const { recordingLogger } = require('./helpers');

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

test('kubernetes.nativeInformers: defaults, durations in every form, and errors that name the key', () => {
  const read = (nativeInformers) =>
    readNativeInformersConfig(new ConfigReader({ kubernetes: { nativeInformers } }));
  const defaults = readNativeInformersConfig(new ConfigReader({}));
  assert.equal(defaults.enabled, true);
  assert.equal(defaults.idleTimeoutMs, 600_000);
  assert.equal(defaults.syncTimeoutMs, 5_000);
  assert.equal(defaults.stripManagedFields, true);
  assert.deepEqual([...defaults.objectTypes], DEFAULT_OBJECT_TYPES);
  assert.ok(!defaults.objectTypes.has('secrets'));
  assert.equal(read({ idleTimeout: { minutes: 2, seconds: 30 } }).idleTimeoutMs, 150_000);
  assert.equal(read({ idleTimeout: '90s' }).idleTimeoutMs, 90_000);
  assert.equal(read({ idleTimeout: '10 minutes' }).idleTimeoutMs, 600_000);
  assert.equal(read({ syncTimeout: 'PT1M30S' }).syncTimeoutMs, 90_000);
  assert.equal(read({ syncTimeout: '250ms' }).syncTimeoutMs, 250);
  assert.deepEqual([...read({ objectTypes: ['pods', 'secrets'] }).objectTypes], ['pods', 'secrets']);
  assert.equal(read({ enabled: false, stripManagedFields: false }).stripManagedFields, false);
  assert.throws(
    () => read({ idleTimeout: 'soon' }),
    /kubernetes\.nativeInformers\.idleTimeout: expected a duration/,
  );
  assert.throws(
    () => read({ idleTimeout: { fortnights: 1 } }),
    /idleTimeout: unknown duration field 'fortnights'/,
  );
  assert.throws(() => read({ syncTimeout: '0s' }), /syncTimeout: must be longer than zero/);
  assert.throws(
    () => read({ objectTypes: ['pods', 'widgets'] }),
    /objectTypes: unknown object type 'widgets'/,
  );
});

/** A stand-in for Backstage's default fetcher: records its calls, answers one marker per type. */
function recordingDefault() {
  const calls = [];
  return {
    calls,
    async fetchObjectsForService(params) {
      calls.push(params);
      const resources = [...params.objectTypesToFetch, ...params.customResources];
      return {
        errors: [],
        responses: resources.map((r) => ({ type: r.objectType, resources: [{ fromDefault: true }] })),
      };
    },
    async fetchPodMetricsByNamespaces(...args) {
      calls.push(args);
      return { errors: [], responses: [{ type: 'podstatus', resources: [] }] };
    },
  };
}

const PODS = { group: '', apiVersion: 'v1', plural: 'pods', objectType: 'pods' };

async function setup(t, options = {}) {
  const sim = await createSimulator({ token: 'tok-unit-77' });
  t.after(() => sim.close());
  sim.create('pods', { metadata: { name: 'p1', namespace: 'team', labels: { [ID]: 'svc' } } });
  sim.create('pods', { metadata: { name: 'p2', namespace: 'other', labels: { [ID]: 'svc' } } });
  const logger = recordingLogger();
  const defaultFetcher = recordingDefault();
  const fetcher = new NativeInformerFetcher({
    watcher: new NativeKubernetesWatcher({ logger }),
    defaultFetcher,
    logger,
    ...options,
  });
  t.after(() => fetcher.close());
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
    packagePaths: [require.resolve('../package.json')],
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
