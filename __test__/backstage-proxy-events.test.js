'use strict';
// Issue 50: the Kubernetes plugin's own proxy route for an object's events, `GET /proxy/api/v1/
// namespaces/{ns}/events?fieldSelector=involvedObject.…` (the stock events drawer's), answered by
// the module from one events informer per identity and cluster (packages/backstage/serving/
// proxy-events.js), against the same backend without the module (the stock proxy): the answer
// equal to the stock one after JSON parsing, for every involvedObject field; no request to the
// API server once warm; a change shows in the next answer; other queries and refused callers get
// the stock proxy's answer.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startLiveBackend, viewerCheckedCluster, TOKEN } = require('../testbed/live-helpers');
const { createSimulator } = require('kube-watch-native/sim');
const { podOfContainers } = require('./sim-helpers');
const { until } = require('../testbed/wait');

/** GET `path` under the plugin's proxy on `backend`, as the mock user, for cluster `sim`. */
function proxyGet(backend, path, { headers = {} } = {}) {
  return fetch(`${backend.url}/api/kubernetes/proxy${path}`, {
    headers: { authorization: 'Bearer mock-user-token', 'backstage-kubernetes-cluster': 'sim', ...headers },
  });
}

/** An Event of `pod` (in `namespace`) as the kubelet records one. */
function podEvent(namespace, pod, n, { reason = 'BackOff', type = 'Warning', uid = `uid-${pod}` } = {}) {
  const at = new Date(Date.UTC(2026, 11, 6, 8, 0, n)).toISOString().replace('.000Z', 'Z');
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${pod}.${String(n).padStart(16, '0')}`, namespace },
    involvedObject: {
      kind: 'Pod',
      namespace,
      name: pod,
      uid,
      apiVersion: 'v1',
      resourceVersion: '1',
      fieldPath: n % 2 ? 'spec.containers{main}' : undefined,
    },
    reason,
    message: `Back-off restarting failed container main in pod ${pod} (${n})`,
    source: { component: 'kubelet', host: 'node-1' },
    firstTimestamp: at,
    lastTimestamp: at,
    count: n + 1,
    type,
    reportingComponent: 'kubelet',
  };
}

const eventRequests = (sim) => sim.requests.filter((r) => r.path.endsWith('/events'));
const EVENTS = '/api/v1/namespaces/default/events';

let sim;
let native;
let stock;
let denied;
test.before(async () => {
  sim = await createSimulator({ tls: true, token: TOKEN, bookmarkIntervalMs: 100 });
  sim.create('pods', podOfContainers('web'));
  sim.create('pods', podOfContainers('db'));
  for (let n = 0; n < 6; n++) sim.create('events', podEvent('default', n % 3 ? 'web' : 'db', n));
  sim.create('events', podEvent('other', 'web', 9));
  native = await startLiveBackend(sim);
  stock = await startLiveBackend(sim, { native: false });
  denied = await startLiveBackend(sim, { permission: 'DENY' });
});
test.after(async () => {
  await native?.stop();
  await stock?.stop();
  await denied?.stop();
  await sim?.close();
});

/** Both answers, parsed, once the module's is from its warm informer (its resourceVersion current). */
async function bothAnswers(query) {
  const [ours, theirs] = await Promise.all([
    proxyGet(native, `${EVENTS}?${query}`),
    proxyGet(stock, `${EVENTS}?${query}`),
  ]);
  assert.equal(ours.status, theirs.status, query);
  return [await ours.json(), await theirs.json()];
}

test('the answer is the stock proxy answer for each involvedObject field, and asks nothing of the API server once warm', async () => {
  const queries = [
    'fieldSelector=involvedObject.name=web',
    'fieldSelector=involvedObject.name%3Ddb',
    'fieldSelector=involvedObject.name==web,involvedObject.kind=Pod',
    'fieldSelector=involvedObject.uid=uid-db',
    'fieldSelector=involvedObject.name!=web',
    'fieldSelector=involvedObject.fieldPath=spec.containers%7Bmain%7D',
    'fieldSelector=involvedObject.fieldPath=',
    'fieldSelector=involvedObject.name=nobody',
  ];
  // Warm: the first answers may be the stock one's while the informer lists.
  await until(
    async () => {
      const before = eventRequests(sim).length;
      await proxyGet(native, `${EVENTS}?${queries[0]}`);
      return eventRequests(sim).length === before;
    },
    { what: 'the events informer answers', ms: 10_000 },
  );
  // Its resourceVersion current (a bookmark after the last write), as the stock LIST's.
  await until(async () => {
    const [ours, theirs] = await bothAnswers(queries[0]);
    return ours.metadata.resourceVersion === theirs.metadata.resourceVersion;
  });
  const before = eventRequests(sim).length;
  for (const query of queries) {
    const [ours, theirs] = await bothAnswers(query);
    assert.deepEqual(ours, theirs, query);
  }
  const [web] = await bothAnswers(queries[0]);
  assert.equal(web.items.length, 4, 'four events of web in default, none of other namespaces');
  assert.equal(web.items[0].kind, undefined, 'list items carry no kind, as the server sends them');
  // The stock answers' requests only: one per query.
  assert.equal(eventRequests(sim).length - before, queries.length + 1, 'the module sent none');
});

test('an event recorded or changed shows in the next answer', async () => {
  const event = podEvent('default', 'web', 7, { reason: 'Pulled', type: 'Normal' });
  sim.create('events', event);
  await until(async () => {
    const res = await proxyGet(native, `${EVENTS}?fieldSelector=involvedObject.name=web`);
    return (await res.json()).items.some((e) => e.reason === 'Pulled');
  });
  sim.update('events', { ...event, count: 42 });
  await until(async () => {
    const res = await proxyGet(native, `${EVENTS}?fieldSelector=involvedObject.name=web`);
    return (await res.json()).items.some((e) => e.count === 42);
  });
});

test('other queries go to the stock proxy: a label selector, a limit, another field; so does a caller refused kubernetes.proxy', async () => {
  for (const query of [
    'labelSelector=a%3Db',
    'fieldSelector=involvedObject.name=web&limit=1',
    'fieldSelector=reason=BackOff',
    'fieldSelector=involvedObject.nope=x',
  ]) {
    const before = eventRequests(sim).length;
    const [ours, theirs] = await bothAnswers(query);
    assert.equal(eventRequests(sim).length - before, 2, `${query}: both went to the API server`);
    if (ours.items) assert.deepEqual(ours.items, theirs.items, query);
    else assert.deepEqual(ours, theirs, query);
  }
  const before = eventRequests(sim).length;
  const refused = await proxyGet(denied, `${EVENTS}?fieldSelector=involvedObject.name=web`);
  assert.equal(refused.status, 403);
  assert.deepEqual(await refused.json(), { error: { name: 'NotAllowedError', message: 'Unauthorized' } });
  const log = await proxyGet(denied, '/api/v1/namespaces/default/pods/web/log?container=main');
  assert.equal(log.status, 403, 'the log route refuses as the stock proxy does');
  assert.equal(eventRequests(sim).length, before, 'nothing reached the API server');
});

test("a caller's own token: answered from the cache only when the API server lets that caller list the events (a second identity gets its own answer)", async (t) => {
  const tokens = {
    'tok-sa': { user: 'system:serviceaccount:backstage:cache' },
    'tok-alice': { user: 'alice' },
    'tok-bob': { user: 'bob', rules: [{ namespaces: ['team'] }] },
  };
  const viewers = await createSimulator({ tls: true, tokens, bookmarkIntervalMs: 100 });
  t.after(() => viewers.close());
  for (let n = 0; n < 3; n++) viewers.create('events', podEvent('default', 'web', n));
  // A client-side provider with a service account token: the module's opt-in to a shared cache
  // whose every caller is checked with their own token.
  const clusters = [viewerCheckedCluster(viewers.url, 'tok-sa')];
  const ours = await startLiveBackend(viewers, { clusters });
  const theirs = await startLiveBackend(viewers, { clusters, native: false });
  t.after(() => Promise.all([ours.stop(), theirs.stop()]));
  const as = (backend, token) =>
    proxyGet(backend, `${EVENTS}?fieldSelector=involvedObject.name=web`, {
      headers: { 'backstage-kubernetes-authorization': `Bearer ${token}` },
    });
  const sentWith = (token) =>
    eventRequests(viewers).filter((r) => r.headers.authorization === `Bearer ${token}`).length;
  await until(
    async () => {
      const before = sentWith('tok-alice');
      await as(ours, 'tok-alice');
      return sentWith('tok-alice') === before;
    },
    { what: "alice's answer from the shared cache", ms: 10_000 },
  );
  const [alice, aliceStock] = await Promise.all([as(ours, 'tok-alice'), as(theirs, 'tok-alice')]);
  assert.equal(alice.status, 200);
  assert.deepEqual((await alice.json()).items, (await aliceStock.json()).items);
  // Bob may list events in `team` only: the API server's 403 for him, with his token, as the stock proxy's.
  const before = sentWith('tok-bob');
  const [bob, bobStock] = await Promise.all([as(ours, 'tok-bob'), as(theirs, 'tok-bob')]);
  assert.equal(bob.status, 403);
  assert.deepEqual(await bob.json(), await bobStock.json());
  assert.equal(sentWith('tok-bob') - before, 2, "bob's own LIST, from each backend");
  // A token the API server does not know: its 401.
  const [nobody, nobodyStock] = await Promise.all([as(ours, 'tok-nobody'), as(theirs, 'tok-nobody')]);
  assert.equal(nobody.status, 401);
  assert.deepEqual(await nobody.json(), await nobodyStock.json());
});

test("a page that names its entity is answered live, and a change of the events it was given signals that user on the entity's events channel: not another user, not the objects' channel", async (t) => {
  const { mockCredentials } = require('@backstage/backend-test-utils');
  const { connectSignals, sleep } = { ...require('../testbed/live-helpers'), ...require('../testbed/wait') };
  const { ENTITY_HEADER, LIVE_HEADER, channelOf, eventsViewOf } = require('kube-watch-native-protocol');
  const ENTITY = 'component:default/live-svc';
  const BOB_TOKEN = mockCredentials.user.token('user:default/other');
  const eventsChannel = channelOf(eventsViewOf(ENTITY));
  const alice = await connectSignals(native.port, 'mock-user-token', eventsChannel);
  const aliceObjects = await connectSignals(native.port, 'mock-user-token', channelOf(ENTITY));
  const bob = await connectSignals(native.port, BOB_TOKEN, eventsChannel);
  t.after(() => [alice, aliceObjects, bob].forEach(({ ws }) => ws.terminate()));
  const ask = (token, pod, entity = ENTITY) =>
    fetch(`${native.url}/api/kubernetes/proxy${EVENTS}?fieldSelector=involvedObject.name=${pod}`, {
      headers: {
        authorization: `Bearer ${token}`,
        'backstage-kubernetes-cluster': 'sim',
        ...(entity && { [ENTITY_HEADER]: entity }),
      },
    });
  // Warm and followed: marked live (the informer's first answers may be the stock proxy's).
  await until(async () => (await ask('mock-user-token', 'web')).headers.get(LIVE_HEADER) === '1', {
    what: "alice's events answer marked live",
    ms: 10_000,
  });
  const bobs = await ask(BOB_TOKEN, 'db');
  assert.equal(bobs.headers.get(LIVE_HEADER), '1', "bob's answer of db's events is live too");
  const unnamed = await ask('mock-user-token', 'web', null);
  assert.equal(unnamed.status, 200);
  assert.equal(unnamed.headers.get(LIVE_HEADER), null, 'an answer to a page that names no entity is polled');
  const notAnEntity = await ask('mock-user-token', 'web', 'not an entity');
  assert.equal(notAnEntity.status, 200);
  assert.equal(notAnEntity.headers.get(LIVE_HEADER), null, 'nor one that names something else');
  await sleep(300); // the subscribe messages are in
  for (const one of [alice, aliceObjects, bob]) one.received.length = 0;

  // An event of web: alice, who was given web's events, is told on the events channel.
  sim.create('events', podEvent('default', 'web', 11, { reason: 'Killing', type: 'Normal' }));
  await until(() => alice.received.length > 0, { what: "alice's signal within 2 s", ms: 2000 });
  const [signal] = alice.received;
  assert.equal(signal.channel, eventsChannel);
  assert.deepEqual(signal.message.clusters, ['sim']);
  assert.equal(typeof signal.message.id, 'string');
  assert.equal(JSON.stringify(signal).includes('Killing'), false, 'a signal carries no event data');
  await sleep(500);
  assert.equal(alice.received.length, 1, 'one signal per answer given');
  assert.equal(bob.received.length, 0, "bob's answer (db's events) did not change: bob hears nothing");
  assert.equal(aliceObjects.received.length, 0, "the entity's objects channel hears nothing of its events");

  // An event of db: bob is told; alice, signalled once and not answered since, is not.
  sim.create('events', podEvent('default', 'db', 12));
  await until(() => bob.received.length > 0, { what: "bob's signal within 2 s", ms: 2000 });
  assert.equal(bob.received[0].channel, eventsChannel);
  await sleep(300);
  assert.equal(alice.received.length, 1, 'alice hears nothing until her page asks again');
  // Asked again, alice's next change is signalled again.
  assert.equal((await ask('mock-user-token', 'web')).headers.get(LIVE_HEADER), '1');
  sim.create('events', podEvent('default', 'web', 13));
  await until(() => alice.received.length > 1, { what: "alice's second signal within 2 s", ms: 2000 });
});
