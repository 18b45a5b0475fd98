'use strict';
// kube-watch-native-backstage end to end: a real Backstage backend (startTestBackend with the
// real @backstage/plugin-kubernetes-backend) with the module, beside the same backend without it,
// both asking the same simulated clusters; every answer of the routes the frontend calls is
// compared between the two.

const test = require('node:test');
const assert = require('node:assert/strict');
const { createSimulator } = require('../packages/kube-watch-native/sim');
const {
  ENTITIES,
  OBJECT_TYPES,
  ROUTES,
  startClusters,
  populate,
  startBackend,
  normalize,
  requestCount,
  KEEP_ALIVE_MS,
} = require('./backstage-helpers');
const { until } = require('../testbed/wait');

// Every type the backend asks for cached, secrets included.
const NATIVE_INFORMERS = { objectTypes: ['customresources', ...OBJECT_TYPES] };
const GOOD = ENTITIES.filter((e) => e.metadata.name !== 'bad-selector');
const named = (name) => ENTITIES.find((e) => e.metadata.name === name);

let clusters;
let plain;
let native;

test.before(async () => {
  clusters = await startClusters();
  plain = await startBackend(clusters);
  native = await startBackend(clusters, { native: true, nativeInformers: NATIVE_INFORMERS });
});

test.after(async () => {
  await native?.stop();
  await plain?.stop();
  for (const sim of Object.values(clusters ?? {})) await sim.close();
});

/** Both backends' answers to one route for one entity, normalized. */
async function both(route, entity) {
  const [expected, actual] = await Promise.all([ROUTES[route](plain, entity), ROUTES[route](native, entity)]);
  return {
    expected: normalize(expected),
    actual: normalize(actual),
    raw: actual,
  };
}

const clusterOf = (body, name) => body.items.find((item) => item.cluster.name === name);
const objectsOf = (body, cluster, type) =>
  (clusterOf(body, cluster)?.resources.find((r) => r.type === type)?.resources ?? []).map(
    (o) => o.metadata.name,
  );

test('every route the frontend calls answers as the default fetcher does', async () => {
  for (const route of Object.keys(ROUTES)) {
    for (const entity of ENTITIES) {
      const { expected, actual, raw } = await both(route, entity);
      assert.deepEqual(actual, expected, `${route} for ${entity.metadata.name}`);
      if (JSON.stringify(expected).includes('managedFields')) {
        assert.ok(JSON.stringify(raw).includes('managedFields'), 'managedFields are kept by default');
      }
    }
  }
  // Not vacuous: the answers hold the entities' objects, secrets redacted, and the errors.
  const { actual } = await both('services', named('svc-a'));
  assert.deepEqual(objectsOf(actual, 'beta', 'pods'), ['pod-a1', 'pod-a2']);
  assert.deepEqual(objectsOf(actual, 'alpha', 'customresources'), ['widget-a1', 'widget-a2']);
  const secret = clusterOf(actual, 'alpha').resources.find((r) => r.type === 'secrets').resources[0];
  assert.deepEqual(secret.data, { password: '***' });
  assert.deepEqual(clusterOf(actual, 'beta').errors, [
    {
      errorType: 'NOT_FOUND',
      statusCode: 404,
      resourcePath: '/k8s/clusters/c-1/apis/example.com/v1/widgets',
    },
  ]);
  const team = (await both('services', named('svc-team'))).actual;
  assert.deepEqual(objectsOf(team, 'alpha', 'deployments'), ['deployment-a2']);
  const byApp = (await both('services', named('by-app'))).actual;
  assert.deepEqual(objectsOf(byApp, 'alpha', 'pods'), ['pod-a1', 'pod-x', 'pod-a2']);
});

test('an invalid selector gets the default fetcher’s errors and leaves no informer behind', async () => {
  const { expected, actual } = await both('services', named('bad-selector'));
  assert.deepEqual(actual, expected);
  const errors = clusterOf(actual, 'alpha').errors;
  assert.equal(errors.length, 15);
  assert.ok(errors.every((e) => e.errorType === 'BAD_REQUEST' && e.statusCode === 400));
  for (const sim of Object.values(clusters)) {
    const watches = sim.requests.filter((r) => r.query.watch && r.query.labelSelector === 'app in (web');
    assert.equal(watches.length, 0, 'no informer for the invalid selector');
  }
});

test('warm tab loads send no request to the service-account clusters; the viewer’s cluster gets the default’s', async () => {
  for (const entity of GOOD) await ROUTES.services(native, entity);
  const before = Object.fromEntries(Object.entries(clusters).map(([name, sim]) => [name, requestCount(sim)]));
  const ROUNDS = 5;
  for (let round = 0; round < ROUNDS; round++) {
    for (const entity of GOOD) await ROUTES.services(native, entity);
  }
  const sent = (name) => clusters[name].requests.slice(before[name]);
  // Only the resources a cluster lacks (gadgets anywhere, widgets on beta) reach it: each load's
  // LIST of them by the default fetcher (their informers closed at the 404 and are not opened
  // again for a minute, so no watch of them follows).
  const missing = (r) =>
    r.path.endsWith('/gadgets') || (r.path.endsWith('/widgets') && r.path.startsWith('/k8s/'));
  for (const name of ['alpha', 'beta']) {
    const requests = sent(name);
    assert.deepEqual(
      requests.filter((r) => !missing(r)).map((r) => `${r.path}?${new URLSearchParams(r.query)}`),
      [],
      `${name}: every load answered from the cache`,
    );
    assert.deepEqual(
      requests.filter((r) => r.query.watch === 'true' || r.query.limit !== undefined),
      [],
      `${name}: no informer retries a missing type`,
    );
  }

  // The viewer's own token: exactly what the default backend sends for the same loads.
  const viewerNative = sent('viewer').length;
  const mark = requestCount(clusters.viewer);
  for (let round = 0; round < ROUNDS; round++) {
    for (const entity of GOOD) await ROUTES.services(plain, entity);
  }
  assert.ok(viewerNative > 0);
  assert.equal(viewerNative, requestCount(clusters.viewer) - mark);
  assert.equal(
    clusters.viewer.requests.filter((r) => r.query.watch).length,
    0,
    'no informer on the viewer’s cluster',
  );
  assert.ok(
    clusters.viewer.requests.some((r) => r.path.includes('/apis/metrics.k8s.io/')),
    'pod metrics asked of the default fetcher',
  );
});

test('a modified, a deleted and a new object show in the next tab load', async () => {
  const { alpha, beta } = clusters;
  const before = (await both('services', named('svc-a'))).actual;
  assert.ok(objectsOf(before, 'alpha', 'deployments').includes('deployment-a1'));
  assert.ok(!objectsOf(before, 'beta', 'services').includes('service-new'));
  alpha.patch('pods', 'default', 'pod-a1', (pod) => {
    pod.metadata.annotations = { changed: 'yes' };
  });
  alpha.remove('apps/v1/deployments', 'default', 'deployment-a1');
  beta.create('services', {
    metadata: {
      name: 'service-new',
      namespace: 'default',
      labels: { 'backstage.io/kubernetes-id': 'svc-a' },
    },
  });
  const seen = await until(
    async () => {
      const { expected, actual } = await both('services', named('svc-a'));
      const pod = clusterOf(actual, 'alpha').resources.find((r) => r.type === 'pods').resources[0];
      const done =
        pod.metadata.annotations?.changed === 'yes' &&
        !objectsOf(actual, 'alpha', 'deployments').includes('deployment-a1') &&
        objectsOf(actual, 'beta', 'services').includes('service-new');
      return done && { expected, actual };
    },
    { ms: 15_000, what: 'the three changes' },
  );
  assert.deepEqual(seen.actual, seen.expected);
});

test('a missing custom resource is the default’s 404 on every load, and its informer is not retried meanwhile', async () => {
  const before = requestCount(clusters.alpha);
  const LOADS = 10;
  for (let i = 0; i < LOADS; i++) {
    const { expected, actual } = await both('custom', named('svc-a'));
    assert.deepEqual(actual, expected);
    assert.deepEqual(clusterOf(actual, 'alpha').errors, [
      { errorType: 'NOT_FOUND', statusCode: 404, resourcePath: '/apis/example.com/v1/gadgets' },
    ]);
  }
  // Both backends: one LIST per load; the native one's informer, closed at its first 404, is
  // not opened again within the minute.
  const gadgets = clusters.alpha.requests.slice(before).filter((r) => r.path.endsWith('/gadgets'));
  assert.ok(gadgets.filter((r) => !r.query.watch).length >= 2 * LOADS, 'one LIST per load and backend');
  assert.deepEqual(
    gadgets.filter((r) => r.query.watch === 'true' || r.query.limit !== undefined),
    [],
    'no informer request for gadgets',
  );
});

/** Both backends' answer for svc-a's services once beta's first error is `errorType` there. */
const whenBetaErrorIs = (errorType, { timeoutMs, what }) =>
  until(
    async () => {
      const answer = await both('services', named('svc-a'));
      return clusterOf(answer.actual, 'beta').errors[0]?.errorType === errorType && answer;
    },
    { ms: timeoutMs, what },
  );

test('a cluster that goes away gets the default fetcher’s error, and recovers when it comes back', async () => {
  const port = clusters.beta.port;
  await clusters.beta.close();
  const down = await whenBetaErrorIs('FETCH_ERROR', { timeoutMs: 5000, what: 'the FETCH_ERROR for beta' });
  assert.deepEqual(down.actual, down.expected);
  assert.match(clusterOf(down.raw, 'beta').errors[0].message, /ECONNREFUSED|ECONNRESET|socket hang up/);

  clusters.beta = await createSimulator({
    tls: true,
    bookmarkIntervalMs: 300,
    keepAliveTimeoutMs: KEEP_ALIVE_MS,
    token: 'tok-beta-8c2f',
    pathPrefix: '/k8s/clusters/c-1',
    port,
  });
  populate(clusters.beta, { widgets: false });
  const up = await whenBetaErrorIs('NOT_FOUND', { timeoutMs: 10_000, what: 'beta answering again' });
  assert.deepEqual(up.actual, up.expected);
  // And back on its informers: a load sends nothing but the LIST of the widgets beta lacks.
  await until(
    async () => {
      const mark = requestCount(clusters.beta);
      await ROUTES.services(native, named('svc-a'));
      return clusters.beta.requests
        .slice(mark)
        .every((r) => r.query.watch === 'true' || r.path.endsWith('/widgets'));
    },
    { ms: 20_000, what: 'beta served from its informers again' },
  );
});

/**
 * The watches `sim` starts while `action` runs and, when `expected` is given, until that many
 * have started (a slow machine may answer a first load before every informer's watch is up);
 * each with whether it has ended since.
 */
async function watchesStartedBy(sim, action, expected = 0) {
  const started = [];
  const onStart = ({ resource, res }) => {
    const watch = { resource, ended: false };
    res.once('close', () => (watch.ended = true));
    started.push(watch);
  };
  sim.on('watchStart', onStart);
  try {
    await action();
    if (expected) await until(() => started.length >= expected, { ms: 30_000, what: 'the watches' });
  } finally {
    sim.off('watchStart', onStart);
  }
  return started;
}

test('an informer nobody asks for closes after the idle timeout', async () => {
  // Long enough for every informer to reach its watch first: under load the 14 watches did not
  // all start within 30 s at 500 ms (an informer closed before its watch never starts one).
  const short = await startBackend(clusters, {
    native: true,
    nativeInformers: { idleTimeout: { milliseconds: 3000 } },
  });
  try {
    // The other backend's informers for svc-b are warm: every watch started now is this one's.
    const opened = await watchesStartedBy(clusters.alpha, () => ROUTES.workloads(short, named('svc-b')), 14);
    // The 13 default types and widgets; secrets are not cached unless configured.
    assert.equal(opened.length, 13 + 1, 'an informer per cached type and custom resource');
    await until(() => opened.every((w) => w.ended), {
      ms: 20_000,
      what: 'the idle informers to close',
    });
    // The next load opens them again and answers as before.
    const { expected } = await both('workloads', named('svc-b'));
    assert.deepEqual(normalize(await ROUTES.workloads(short, named('svc-b'))), expected);
  } finally {
    await short.stop();
  }
});

test('the module registers nothing when kubernetes.nativeInformers.enabled is false', async () => {
  const off = await startBackend(clusters, { native: true, nativeInformers: { enabled: false } });
  try {
    const mark = requestCount(clusters.alpha);
    const opened = await watchesStartedBy(clusters.alpha, () => ROUTES.services(off, named('svc-b')));
    assert.deepEqual(opened, [], 'no informer');
    const lists = clusters.alpha.requests.slice(mark).filter((r) => !r.query.watch);
    assert.equal(lists.length, 14 + 1, 'one LIST per type and custom resource');
  } finally {
    await off.stop();
  }
});

test('the watcher service is one NativeKubernetesWatcher for every plugin', async () => {
  const { createBackendPlugin } = require('@backstage/backend-plugin-api');
  const { startTestBackend } = require('@backstage/backend-test-utils');
  const { nativeWatcherServiceRef } = require('kube-watch-native-backstage');
  const { NativeKubernetesWatcher } = require('kube-watch-native');
  const seen = [];
  const plugin = (pluginId) =>
    createBackendPlugin({
      pluginId,
      register(env) {
        env.registerInit({
          deps: { watcher: nativeWatcherServiceRef },
          init: async ({ watcher }) => seen.push(watcher),
        });
      },
    });
  const backend = await startTestBackend({ features: [plugin('one'), plugin('two')] });
  assert.equal(seen.length, 2);
  assert.ok(seen[0] instanceof NativeKubernetesWatcher);
  assert.equal(seen[0], seen[1]);
  // A plugin's informer of that watcher: the backend's shutdown (rootLifecycle) closes it.
  const sim = await createSimulator({});
  try {
    const informer = seen[0].informer({
      clusterDetails: { name: 'plain', url: sim.url, authMetadata: {} },
      credential: { type: 'bearer token', token: 't' },
      group: '',
      apiVersion: 'v1',
      plural: 'pods',
    });
    await informer.synced;
    assert.equal(sim.activeWatches(), 1);
    await backend.stop();
    assert.equal(informer.state().finished, true, 'closed by the shutdown');
    await until(() => sim.activeWatches() === 0, { what: 'the watch to end' });
  } finally {
    await sim.close();
  }
});
