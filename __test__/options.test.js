'use strict';
// Options and request building: resource paths, path prefixes, percent-encoding, the query
// (only what is set), selectors, resourceVersion replay and expiry, timeouts, argument checks.

const test = require('node:test');
const assert = require('node:assert/strict');
const { createSimulator } = require('../packages/kube-watch-native/sim');
const { NativeKubernetesWatcher } = require('kube-watch-native');
const { useSimulator, paramsFor, collect, watcherWithLogger, pod, TOKEN } = require('./helpers');

let sim;
useSimulator((s) => (sim = s));

function lastRequest() {
  return sim.requests.at(-1);
}

async function requestFor(params, options) {
  const { watcher } = watcherWithLogger();
  const before = sim.requests.length;
  await collect(watcher.watchResource(params, { timeoutSeconds: 1, ...options }), { timeoutMs: 5000 });
  assert.equal(sim.requests.length, before + 1, 'exactly one request');
  return lastRequest();
}

test('resource paths for core and named groups, namespaced and cluster-wide', async () => {
  const cases = [
    [{ group: '', apiVersion: 'v1', plural: 'pods' }, {}, '/api/v1/pods'],
    [
      { group: '', apiVersion: 'v1', plural: 'pods' },
      { namespace: 'team-a' },
      '/api/v1/namespaces/team-a/pods',
    ],
    [{ group: 'apps', apiVersion: 'v1', plural: 'deployments' }, {}, '/apis/apps/v1/deployments'],
    [
      { group: 'apps', apiVersion: 'v1', plural: 'deployments' },
      { namespace: 'web' },
      '/apis/apps/v1/namespaces/web/deployments',
    ],
  ];
  for (const [resource, options, path] of cases) {
    const request = await requestFor(paramsFor(sim, resource), options);
    assert.equal(request.path, path);
  }
});

test('segments are percent-encoded and the ERROR names the encoded path', async () => {
  const { watcher } = watcherWithLogger();
  const params = paramsFor(sim, { group: 'stable.example.com', apiVersion: 'v1', plural: 'cron tabs' });
  const events = await collect(watcher.watchResource(params, { namespace: 'a/b' }));
  const path = '/apis/stable.example.com/v1/namespaces/a%2Fb/cron%20tabs';
  assert.equal(lastRequest().path, path);
  assert.deepEqual(events, [
    { type: 'ERROR', error: { errorType: 'NOT_FOUND', statusCode: 404, resourcePath: path } },
  ]);
});

test('a cluster URL with a path keeps it as a prefix', async () => {
  const prefixed = await createSimulator({ token: TOKEN, pathPrefix: '/k8s/clusters/c-1' });
  try {
    prefixed.create('pods', pod('p', { namespace: 'default' }));
    const { watcher } = watcherWithLogger();
    const gen = watcher.watchResource(paramsFor(prefixed, { clusterDetails: { url: `${prefixed.url}/` } }), {
      namespace: 'default',
    });
    const [event] = await collect(gen, { count: 1 });
    assert.equal(event.object.metadata.name, 'p');
    assert.equal(prefixed.requests.at(-1).path, '/k8s/clusters/c-1/api/v1/namespaces/default/pods');
  } finally {
    await prefixed.close();
  }
});

test('the query carries watch=true and only the options that are set', async () => {
  let request = await requestFor(paramsFor(sim), {});
  assert.deepEqual(request.query, { watch: 'true', timeoutSeconds: '1' });
  assert.equal(request.headers.accept, 'application/json');

  request = await requestFor(paramsFor(sim), {
    labelSelector: 'app=web,tier!=db',
    resourceVersion: sim.resourceVersion,
    allowWatchBookmarks: true,
    sendInitialEvents: true,
    resourceVersionMatch: 'NotOlderThan',
  });
  assert.deepEqual(request.query, {
    watch: 'true',
    labelSelector: 'app=web,tier!=db',
    resourceVersion: sim.resourceVersion,
    timeoutSeconds: '1',
    allowWatchBookmarks: 'true',
    sendInitialEvents: 'true',
    resourceVersionMatch: 'NotOlderThan',
  });

  request = await requestFor(paramsFor(sim), { allowWatchBookmarks: false, sendInitialEvents: false });
  assert.deepEqual(request.query, { watch: 'true', timeoutSeconds: '1' }, 'false flags are not sent');
});

test('labelSelector filters events', async () => {
  const ns = 'labels';
  sim.create('pods', pod('web-1', { namespace: ns, labels: { app: 'web' } }));
  sim.create('pods', pod('db-1', { namespace: ns, labels: { app: 'db' } }));
  sim.create('pods', pod('web-2', { namespace: ns, labels: { app: 'web' } }));
  const { watcher } = watcherWithLogger();
  const events = await collect(
    watcher.watchResource(paramsFor(sim), { namespace: ns, labelSelector: 'app=web', timeoutSeconds: 1 }),
  );
  assert.deepEqual(events.map((e) => e.object.metadata.name).sort(), ['web-1', 'web-2']);
});

test('resourceVersion replays what came after it', async () => {
  const ns = 'replay';
  sim.create('pods', pod('old', { namespace: ns }));
  const from = sim.resourceVersion;
  sim.create('pods', pod('new', { namespace: ns }));
  sim.remove('pods', ns, 'old');
  const { watcher } = watcherWithLogger();
  const events = await collect(
    watcher.watchResource(paramsFor(sim), { namespace: ns, resourceVersion: from, timeoutSeconds: 1 }),
  );
  assert.deepEqual(
    events.map((e) => `${e.type} ${e.object.metadata.name}`),
    ['ADDED new', 'DELETED old'],
  );
});

test('an expired resourceVersion gives the in-stream 410 as an ERROR event, then the end', async () => {
  const ns = 'expired';
  sim.create('pods', pod('p', { namespace: ns }));
  const from = sim.resourceVersion;
  sim.create('pods', pod('q', { namespace: ns }));
  sim.compact();
  const { watcher, logger } = watcherWithLogger();
  const events = await collect(
    watcher.watchResource(paramsFor(sim), { namespace: ns, resourceVersion: from }),
  );
  assert.deepEqual(events, [
    {
      type: 'ERROR',
      error: { errorType: 'UNKNOWN_ERROR', statusCode: 410, resourcePath: `/api/v1/namespaces/${ns}/pods` },
    },
  ]);
  assert.deepEqual(logger.warnings(), []);
});

test('sendInitialEvents without resourceVersionMatch is answered 422 and logged with the body', async () => {
  const { watcher, logger } = watcherWithLogger();
  const events = await collect(
    watcher.watchResource(paramsFor(sim), { allowWatchBookmarks: true, sendInitialEvents: true }),
  );
  assert.deepEqual(events, [
    { type: 'ERROR', error: { errorType: 'UNKNOWN_ERROR', statusCode: 422, resourcePath: '/api/v1/pods' } },
  ]);
  const [warning] = logger.warnings();
  assert.match(warning, /HTTP 422/);
  assert.match(warning, /resourceVersionMatch/, 'the Status message from the body is logged');
  assert.match(warning, /cluster 'sim'/);
  assert.match(warning, /\/api\/v1\/pods/);
});

test('timeoutSeconds ends the watch cleanly with no ERROR', async () => {
  const { watcher } = watcherWithLogger();
  const started = Date.now();
  const events = await collect(
    watcher.watchResource(paramsFor(sim), { namespace: 'empty', timeoutSeconds: 1 }),
  );
  assert.deepEqual(events, []);
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 900 && elapsed < 4000, `ended after ${elapsed} ms`);
});

test('programmer errors throw a TypeError naming the field, at call time', () => {
  const watcher = new NativeKubernetesWatcher({ logger: { warn() {}, error() {} } });
  const good = paramsFor(sim);
  const cases = [
    [undefined, {}, /params must be an object/],
    [{ ...good, clusterDetails: undefined }, {}, /params\.clusterDetails must be an object/],
    [{ ...good, clusterDetails: { ...good.clusterDetails, url: 42 } }, {}, /params\.clusterDetails\.url/],
    [{ ...good, credential: { type: 'password' } }, {}, /params\.credential\.type must be one of/],
    [{ ...good, credential: { type: 'bearer token' } }, {}, /params\.credential\.token/],
    [{ ...good, credential: { type: 'x509 client certificate', cert: 'c' } }, {}, /params\.credential\.key/],
    [{ ...good, plural: '' }, {}, /params\.plural must be a non-empty string/],
    [{ ...good, apiVersion: undefined }, {}, /params\.apiVersion/],
    [good, { timeoutSeconds: 1.5 }, /options\.timeoutSeconds must be a whole number/],
    [good, { timeoutSeconds: -1 }, /options\.timeoutSeconds/],
    [good, { namespace: 7 }, /options\.namespace must be a string/],
    [good, { allowWatchBookmarks: 'yes' }, /options\.allowWatchBookmarks must be a boolean/],
    [good, { signal: {} }, /options\.signal must be an AbortSignal/],
    [good, { maxLineBytes: 0 }, /options\.maxLineBytes/],
  ];
  for (const [params, options, message] of cases) {
    assert.throws(
      () => watcher.watchResource(params, options),
      (err) => err instanceof TypeError && message.test(err.message),
    );
  }
  assert.throws(() => new NativeKubernetesWatcher({ logger: {} }), TypeError);
});

test('fields projects each object in Rust to the listed paths plus metadata.resourceVersion', async () => {
  const ns = 'fields';
  sim.create(
    'pods',
    pod('f1', {
      namespace: ns,
      labels: { app: 'web' },
      extra: { status: { phase: 'Running', podIP: '10.1.2.3' }, spec: { nodeName: 'n1' } },
    }),
  );
  const { watcher } = watcherWithLogger();
  const [event] = await collect(
    watcher.watchResource(paramsFor(sim), { namespace: ns, fields: ['metadata.name', 'status.phase'] }),
    { count: 1 },
  );
  assert.deepEqual(event, {
    type: 'ADDED',
    object: {
      metadata: { name: 'f1', resourceVersion: event.resourceVersion },
      status: { phase: 'Running' },
    },
    resourceVersion: event.resourceVersion,
  });
  assert.match(event.resourceVersion, /^\d+$/);
  const watcherStrict = new NativeKubernetesWatcher({ logger: { warn() {}, error() {} } });
  for (const fields of ['metadata.name', [''], [1]]) {
    assert.throws(() => watcherStrict.watchResource(paramsFor(sim), { fields }), /options\.fields/);
  }
});
