'use strict';
// fieldSelector, an extra watchResource option: sent as `fieldSelector=` after labelSelector,
// and filtering for real on the simulated API server (metadata.name, metadata.namespace,
// status.phase), including objects that start or stop matching.

const test = require('node:test');
const assert = require('node:assert/strict');
const { createSimulator } = require('../packages/kube-watch-native/sim');
const { toSpec } = require('../packages/kube-watch-native/lib/watcher');
const { paramsFor, collect, watcherWithLogger, pod, TOKEN } = require('./helpers');
const { within } = require('../testbed/wait');

let sim;
test.before(async () => {
  sim = await createSimulator({ token: TOKEN });
  const ns = 'fields';
  sim.create(
    'pods',
    pod('web-1', { namespace: ns, labels: { app: 'web' }, extra: { status: { phase: 'Running' } } }),
  );
  sim.create(
    'pods',
    pod('web-2', { namespace: ns, labels: { app: 'web' }, extra: { status: { phase: 'Pending' } } }),
  );
  sim.create(
    'pods',
    pod('db-1', { namespace: ns, labels: { app: 'db' }, extra: { status: { phase: 'Running' } } }),
  );
  sim.create('pods', pod('web-1', { namespace: 'elsewhere', extra: { status: { phase: 'Running' } } }));
});
test.after(() => sim.close());

async function names(options) {
  const { watcher } = watcherWithLogger();
  const events = await collect(watcher.watchResource(paramsFor(sim), { timeoutSeconds: 1, ...options }));
  assert.ok(
    events.every((e) => e.type !== 'ERROR'),
    JSON.stringify(events),
  );
  return events.map((e) => `${e.object.metadata.namespace}/${e.object.metadata.name}`).sort();
}

test('fieldSelector goes into the query after labelSelector', async () => {
  const before = sim.requests.length;
  await names({ namespace: 'fields', labelSelector: 'app=web', fieldSelector: 'status.phase=Running' });
  assert.equal(sim.requests.length, before + 1);
  const request = sim.requests.at(-1);
  assert.deepEqual(request.query, {
    watch: 'true',
    labelSelector: 'app=web',
    fieldSelector: 'status.phase=Running',
    timeoutSeconds: '1',
  });
  assert.deepEqual(Object.keys(request.query).slice(0, 3), ['watch', 'labelSelector', 'fieldSelector']);
});

test('metadata.name, metadata.namespace and status.phase filter the events', async () => {
  assert.deepEqual(await names({ fieldSelector: 'metadata.name=web-1' }), [
    'elsewhere/web-1',
    'fields/web-1',
  ]);
  assert.deepEqual(await names({ fieldSelector: 'metadata.namespace==elsewhere' }), ['elsewhere/web-1']);
  assert.deepEqual(await names({ namespace: 'fields', fieldSelector: 'status.phase!=Running' }), [
    'fields/web-2',
  ]);
  assert.deepEqual(
    await names({ namespace: 'fields', labelSelector: 'app=web', fieldSelector: 'status.phase=Running' }),
    ['fields/web-1'],
  );
});

test('an object that stops matching leaves as DELETED, one that starts matching arrives as ADDED', async () => {
  const ns = 'phases';
  sim.create('pods', pod('p', { namespace: ns, extra: { status: { phase: 'Pending' } } }));
  const { watcher } = watcherWithLogger();
  const controller = new AbortController();
  const started = new Promise((resolve) => {
    const onStart = (watch) => {
      if (watch.namespace !== ns) return;
      sim.off('watchStart', onStart);
      resolve();
    };
    sim.on('watchStart', onStart);
  });
  const gen = watcher.watchResource(paramsFor(sim), {
    namespace: ns,
    fieldSelector: 'status.phase=Running',
    signal: controller.signal,
  });
  const seen = [];
  const done = (async () => {
    for await (const e of gen) {
      seen.push(`${e.type} ${e.object.status.phase}`);
      if (seen.length === 2) controller.abort();
    }
  })();
  // The changes must come after the watch is at the server: made before, they would be folded
  // into its initial state (Succeeded: no event at all).
  await within(started, 5000, 'the watch at the server');
  sim.patch('pods', ns, 'p', (p) => {
    p.status.phase = 'Running';
  });
  sim.patch('pods', ns, 'p', (p) => {
    p.status.phase = 'Succeeded';
  });
  await within(done, 5000, 'the ADDED and the DELETED');
  // The DELETED carries the last state that matched.
  assert.deepEqual(seen, ['ADDED Running', 'DELETED Running']);
});

test('an unsupported field is the server 400, as a BAD_REQUEST ERROR', async () => {
  const { watcher } = watcherWithLogger();
  const events = await collect(watcher.watchResource(paramsFor(sim), { fieldSelector: 'spec.bogus=1' }));
  assert.deepEqual(events, [
    { type: 'ERROR', error: { errorType: 'BAD_REQUEST', statusCode: 400, resourcePath: '/api/v1/pods' } },
  ]);
});

test('fieldSelector, proxyUrl and tlsServerName are type-checked strings passed to the native spec', () => {
  const params = paramsFor(sim);
  const spec = toSpec(
    {
      ...params,
      clusterDetails: {
        ...params.clusterDetails,
        proxyUrl: 'http://127.0.0.1:3128',
        tlsServerName: 'api.internal',
      },
    },
    { fieldSelector: 'metadata.name=x' },
  );
  assert.equal(spec.resource.fieldSelector, 'metadata.name=x');
  assert.equal(spec.cluster.proxyUrl, 'http://127.0.0.1:3128');
  assert.equal(spec.cluster.tlsServerName, 'api.internal');
  assert.throws(
    () => toSpec(params, { fieldSelector: 3 }),
    /options\.fieldSelector must be a string \(got number\)/,
  );
  assert.throws(
    () => toSpec({ ...params, clusterDetails: { ...params.clusterDetails, proxyUrl: {} } }, {}),
    /params\.clusterDetails\.proxyUrl must be a string \(got object\)/,
  );
  assert.throws(
    () => toSpec({ ...params, clusterDetails: { ...params.clusterDetails, tlsServerName: true } }, {}),
    /params\.clusterDetails\.tlsServerName must be a string \(got boolean\)/,
  );
});
