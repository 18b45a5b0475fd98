'use strict';
// frontend/live-api.mjs, the live tab's KubernetesApi, against a fake default client and a fake
// signals client shaped like @backstage/plugin-signals' SignalClient, under a fake clock: what
// it serves from memory, when it goes to the network, and when it subscribes.

const test = require('node:test');
const assert = require('node:assert/strict');

const { fakeClock } = require('./helpers');

const load = () => import('../packages/live-frontend/live-api.mjs');

const entity = (name) => ({ apiVersion: 'backstage.io/v1alpha1', kind: 'Component', metadata: { name } });
const SVC_A = entity('svc-a');
const SVC_B = entity('svc-b');

/**
 * The fake client's connection for `channel`, read from its fields: what the caching tests take
 * for the signals connection (the default, the backend's heartbeat, has its own tests below).
 */
function fieldConnection(signalApi, channel) {
  const { ws, subscribedChannels: channels } = signalApi;
  if (!ws || signalApi.connecting || ws.readyState !== 1 || !channels.has(channel)) return null;
  return ws;
}

/** A SignalClient look-alike: its WebSocket and channels, and a way to emit. */
function fakeSignals() {
  const subscriptions = new Map();
  let id = 0;
  const api = {
    ws: { readyState: 1 },
    connecting: undefined,
    subscribedChannels: new Set(),
    subscribes: 0,
    /** As SignalClient: a subscribe() connects when there is no WebSocket (after a normal close). */
    connectOnSubscribe: false,
    subscribe(channel, onMessage) {
      api.subscribes += 1;
      if (!api.ws && api.connectOnSubscribe) api.reconnect();
      const key = ++id;
      subscriptions.set(key, { channel, onMessage });
      if (api.ws) api.subscribedChannels.add(channel);
      return {
        unsubscribe() {
          subscriptions.delete(key);
          if (![...subscriptions.values()].some((s) => s.channel === channel))
            api.subscribedChannels.delete(channel);
        },
      };
    },
    emit(channel, message = { clusters: ['alpha'], at: 0 }) {
      for (const s of subscriptions.values()) if (s.channel === channel) s.onMessage(message);
    },
    /** The WebSocket closed: the client forgets its channels until it reconnects. */
    drop() {
      api.ws = null;
      api.subscribedChannels.clear();
    },
    /** A new WebSocket, and the channels subscribed again on it. */
    reconnect() {
      api.ws = { readyState: 1 };
      for (const s of subscriptions.values()) api.subscribedChannels.add(s.channel);
    },
    get channels() {
      return [...new Set([...subscriptions.values()].map((s) => s.channel))];
    },
  };
  return api;
}

/**
 * A default client that counts its calls and answers a new object each time, marked live (as
 * the backend's header marks it, through liveAnswerFetch) while `client.live` is true.
 */
function fakeClient() {
  const calls = [];
  const marked = new WeakSet();
  let n = 0;
  const answer = (method) => async (request) => {
    calls.push(method);
    if (request?.entity?.metadata?.name === 'broken') throw new Error('HTTP 500');
    const value = { items: [], n: ++n };
    if (client.live) marked.add(value);
    return value;
  };
  const client = {
    live: true,
    isLive: (value) => marked.has(value),
    calls,
    getObjectsByEntity: answer('objects'),
    getWorkloadsByEntity: answer('workloads'),
    getCustomObjectsByEntity: answer('custom'),
    getClusters: async () => {
      calls.push('clusters');
      return [{ name: 'alpha', authProvider: 'serviceAccount' }];
    },
    getCluster: async (name) => {
      calls.push(`cluster:${name}`);
      if (name !== 'alpha') throw new Error(`Cluster ${name} not found`);
      return { name, authProvider: 'serviceAccount' };
    },
    proxy: async () => {
      calls.push('proxy');
      return 'response';
    },
  };
  return client;
}

async function setUp(options = {}) {
  const { LiveKubernetesApi } = await load();
  const client = fakeClient();
  const signals = fakeSignals();
  const clock = fakeClock();
  const api = new LiveKubernetesApi({
    client,
    signalApi: signals,
    isLive: client.isLive,
    now: clock.now,
    setTimer: clock.setTimer,
    // What is served from memory, and when: the holding of polls has its own tests below, and
    // so does the stock polling of answers that are not live.
    holdMs: 0,
    notLiveMaxAgeMs: 0,
    connectionOf: fieldConnection,
    ...options,
  });
  return { api, client, signals, clock };
}

/** Whether `promise` has settled by the next turn of the event loop. */
async function settled(promise) {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

test('served from memory until a signal on the entity channel, then fetched once', async () => {
  const { api, client, signals } = await setUp();
  const first = await api.getObjectsByEntity({ entity: SVC_A, auth: {} });
  assert.deepEqual(signals.channels, ['kubernetes:component:default/svc-a']);
  const again = await api.getObjectsByEntity({ entity: SVC_A, auth: {} });
  assert.equal(again, first, 'the same answer, from memory');
  assert.deepEqual(client.calls, ['objects']);
  signals.emit('kubernetes:component:default/svc-a');
  const fresh = await api.getObjectsByEntity({ entity: SVC_A, auth: {} });
  assert.notEqual(fresh, first);
  await api.getObjectsByEntity({ entity: SVC_A, auth: {} });
  assert.deepEqual(client.calls, ['objects', 'objects'], 'one refetch per signal');
});

test('a change signalled twice (two replicas saw it) is refetched once; another change again', async () => {
  const { api, client, signals } = await setUp();
  const channel = 'kubernetes:component:default/svc-a';
  await api.getObjectsByEntity({ entity: SVC_A });
  signals.emit(channel, { clusters: ['alpha'], at: 1, id: 'change-1' });
  await api.getObjectsByEntity({ entity: SVC_A });
  signals.emit(channel, { clusters: ['alpha'], at: 2, id: 'change-1' }); // the other replica's
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.deepEqual(client.calls, ['objects', 'objects'], 'the duplicate is dropped');
  signals.emit(channel, { clusters: ['alpha'], at: 3, id: 'change-2' });
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.deepEqual(client.calls, ['objects', 'objects', 'objects']);
});

test('an answer the backend did not mark live (the default fetcher gave it) is fetched at every call while the connection is up; a live one is kept', async () => {
  const { api, client, signals, clock } = await setUp({ holdMs: 10_000 });
  client.live = false;
  const first = await api.getObjectsByEntity({ entity: SVC_A, auth: {} });
  assert.deepEqual(signals.channels, ['kubernetes:component:default/svc-a'], 'the connection is up');
  const again = api.getObjectsByEntity({ entity: SVC_A, auth: {} });
  assert.equal(await settled(again), true, 'a poll of it is never held: no signal would release it');
  assert.notEqual(await again, first, 'not from memory');
  await api.getWorkloadsByEntity({ entity: SVC_A, auth: {} });
  await api.getWorkloadsByEntity({ entity: SVC_A, auth: {} });
  assert.deepEqual(client.calls, ['objects', 'objects', 'workloads', 'workloads']);
  client.live = true; // the backend follows it now (say, its selector was made positive)
  const live = await api.getObjectsByEntity({ entity: SVC_A, auth: {} });
  clock.advance(2000); // past pollGapMs: not a poll, so not held
  const kept = await api.getObjectsByEntity({ entity: SVC_A, auth: {} });
  assert.equal(kept, live, 'a live answer, from memory');
  assert.equal(client.calls.length, 5);
});

test('without isLive (a client whose answers carry no mark) nothing is kept: every call goes to the network', async () => {
  const { LiveKubernetesApi } = await load();
  const client = fakeClient();
  const api = new LiveKubernetesApi({ client, signalApi: fakeSignals(), notLiveMaxAgeMs: 0 });
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.deepEqual(client.calls, ['objects', 'objects']);
  api.close();
});

test('an answer that is not live is polled as the stock client polls: kept notLiveMaxAgeMs, never held', async () => {
  const { api, client, clock } = await setUp({ notLiveMaxAgeMs: 9000, holdMs: 10_000 });
  client.live = false;
  const first = await api.getObjectsByEntity({ entity: SVC_A });
  for (let i = 0; i < 17; i++) {
    clock.advance(500); // a tab polling memory every 500 ms
    assert.equal(await api.getObjectsByEntity({ entity: SVC_A }), first, `poll ${i}: from memory, at once`);
  }
  clock.advance(500); // 9 s after the answer
  const next = await api.getObjectsByEntity({ entity: SVC_A });
  assert.notEqual(next, first, 'from the network again');
  assert.deepEqual(client.calls, ['objects', 'objects'], 'one request per 9 s, not one per poll');
});

test('liveAnswerFetch: only the JSON of a response marked x-kube-watch-live: 1 reads as live, each by its own identity', async () => {
  const { liveAnswerFetch, LIVE_HEADER } = await load();
  assert.equal(LIVE_HEADER, 'x-kube-watch-live');
  const asked = [];
  const fetchApi = {
    async fetch(url, init) {
      asked.push([url, init]);
      const headers = url.endsWith('/live')
        ? { [LIVE_HEADER]: '1' }
        : url.endsWith('/zero')
          ? { [LIVE_HEADER]: '0' }
          : {};
      return new Response(JSON.stringify({ items: [url] }), { headers });
    },
  };
  const { fetchApi: marked, isLive } = liveAnswerFetch(fetchApi);
  const init = { method: 'POST', body: '{}' };
  const [live, plain, zero] = await Promise.all(
    ['/live', '/plain', '/zero'].map(async (url) => (await marked.fetch(url, init)).json()),
  );
  assert.deepEqual(
    asked,
    [
      ['/live', init],
      ['/plain', init],
      ['/zero', init],
    ],
    'passed on as given',
  );
  assert.deepEqual([live.items, plain.items, zero.items], [['/live'], ['/plain'], ['/zero']]);
  assert.deepEqual([isLive(live), isLive(plain), isLive(zero)], [true, false, false]);
  assert.equal(isLive(structuredClone(live)), false, 'an equal object is not the answer');
  assert.equal(isLive(undefined), false);
  assert.equal(isLive('text'), false);
});

test("another entity's signal leaves this one's answer in memory", async () => {
  const { api, client, signals } = await setUp();
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_B });
  signals.emit('kubernetes:component:default/svc-b');
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_B });
  assert.deepEqual(client.calls, ['objects', 'objects', 'objects']);
});

test('while the connection is down every call goes to the network; a reconnect refetches once', async () => {
  const { api, client, signals } = await setUp();
  await api.getObjectsByEntity({ entity: SVC_A });
  signals.drop();
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 3, 'down: like the default client');
  signals.reconnect();
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 4, 'up again: one refetch, then memory');
});

test('a connection the client closed for good (a graceful backend restart) is opened again by a new subscribe, at most every resubscribeMs', async () => {
  const { api, client, signals, clock } = await setUp();
  signals.connectOnSubscribe = true;
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(signals.subscribes, 1);
  signals.drop(); // closed with 1001: SignalClient does not reconnect by itself
  clock.advance(1000);
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(signals.subscribes, 1, 'not again within resubscribeMs');
  assert.equal(client.calls.length, 2, 'down: the network');
  clock.advance(5000);
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(signals.subscribes, 2, 'subscribed again, which connects');
  assert.deepEqual(signals.channels, ['kubernetes:component:default/svc-a'], 'the old subscription is gone');
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_A });
  // This fake connects within subscribe(), so the request that poll sent already left on a live
  // channel, and is kept: live again with that one refetch, then memory.
  assert.equal(client.calls.length, 3, 'live again: one refetch, then memory');
});

test('a closing WebSocket, or a channel the server was not told of yet, is no connection', async () => {
  const { api, client, signals } = await setUp();
  await api.getObjectsByEntity({ entity: SVC_A });
  signals.ws.readyState = 2; // CLOSING: onclose has not run yet
  await api.getObjectsByEntity({ entity: SVC_A });
  signals.ws.readyState = 1;
  signals.subscribedChannels.delete('kubernetes:component:default/svc-a'); // subscribe not sent yet
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_A });
  signals.connecting = Promise.resolve(true); // a connect in progress
  signals.subscribedChannels.add('kubernetes:component:default/svc-a');
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 5);
  signals.connecting = undefined;
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 6);
});

test('a reconnect without a visible drop (a new WebSocket) refetches once too', async () => {
  const { api, client, signals } = await setUp();
  await api.getObjectsByEntity({ entity: SVC_A });
  signals.reconnect(); // a backend restart seen only as a new connection
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 2);
});

test('an answer fetched before the channel was subscribed on the server is not kept', async () => {
  const { api, client, signals } = await setUp();
  signals.drop(); // subscribe() before the WebSocket is open: the channel is not live yet
  await api.getObjectsByEntity({ entity: SVC_A });
  signals.reconnect();
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 2);
});

test('a signal while the request is out: that answer is not kept', async () => {
  const { LiveKubernetesApi } = await load();
  const signals = fakeSignals();
  let calls = 0;
  const client = {
    ...fakeClient(),
    async getObjectsByEntity() {
      calls += 1;
      if (calls === 1) signals.emit('kubernetes:component:default/svc-a'); // the change races the LIST
      return { items: [], calls };
    },
  };
  const api = new LiveKubernetesApi({ client, signalApi: signals, isLive: () => true });
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(calls, 2);
  api.close();
});

test('maxAge: an answer older than it goes to the network', async () => {
  const { api, client, clock } = await setUp({ maxAgeMs: 5000, idleMs: 60_000 });
  await api.getObjectsByEntity({ entity: SVC_A });
  clock.advance(4999);
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 1);
  clock.advance(1);
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 2);
});

test('the staleness bound: by default no answer is trusted past 90 s, a signal or not, the backend’s liveness too', async () => {
  // The worst case a lost signal (a bus that dropped it, a replica that died) can cost the tab.
  const { STALENESS_MS } = require('kube-watch-native-protocol');
  const { DEFAULTS } = require('../packages/backstage/config');
  assert.equal(STALENESS_MS, 90_000);
  assert.equal(DEFAULTS.livenessMs, STALENESS_MS, 'one bound, frontend and backend');
  const { api, client, clock } = await setUp({ idleMs: 120_000 });
  await api.getObjectsByEntity({ entity: SVC_A });
  clock.advance(89_999);
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 1, 'from memory within the bound');
  clock.advance(1);
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 2, 'from the network at the bound');
});

test('requests differ by method, body and credentials; each is remembered on its own', async () => {
  const { api, client } = await setUp();
  const matchers = [{ group: 'example.com', apiVersion: 'v1', plural: 'widgets' }];
  for (let i = 0; i < 2; i++) {
    await api.getObjectsByEntity({ entity: SVC_A, auth: {} });
    await api.getWorkloadsByEntity({ entity: SVC_A, auth: {} });
    await api.getCustomObjectsByEntity({ entity: SVC_A, auth: {}, customResources: matchers });
    await api.getCustomObjectsByEntity({ entity: SVC_A, auth: {}, customResources: [] });
  }
  assert.deepEqual(client.calls, ['objects', 'workloads', 'custom', 'custom']);
  await api.getObjectsByEntity({ entity: SVC_A, auth: { oidc: { okta: 'new-token' } } });
  assert.equal(client.calls.length, 5, 'new credentials: from the network');
});

test('errors are not remembered', async () => {
  const { api, client } = await setUp();
  const broken = entity('broken');
  await assert.rejects(api.getObjectsByEntity({ entity: broken }), /HTTP 500/);
  await assert.rejects(api.getObjectsByEntity({ entity: broken }), /HTTP 500/);
  assert.equal(client.calls.length, 2);
});

test('subscribes on first use and unsubscribes when nobody asked for idleMs', async () => {
  const { api, client, signals, clock } = await setUp({ idleMs: 10_000 });
  await api.getObjectsByEntity({ entity: SVC_A });
  for (let i = 0; i < 5; i++) {
    clock.advance(5000);
    await api.getObjectsByEntity({ entity: SVC_A }); // asked every 5 s: kept
  }
  assert.deepEqual(api.watchedEntities, ['component:default/svc-a']);
  assert.equal(client.calls.length, 1);
  clock.advance(10_000);
  assert.deepEqual(api.watchedEntities, []);
  assert.deepEqual(signals.channels, [], 'unsubscribed');
  assert.equal(clock.pending, 0, 'no timer left');
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 2, 'and the memory went with it');
  assert.deepEqual(signals.channels, ['kubernetes:component:default/svc-a']);
});

test('getClusters: from memory while a channel is live, from the network otherwise', async () => {
  const { api, client, signals } = await setUp();
  await api.getClusters();
  await api.getClusters();
  assert.equal(client.calls.filter((c) => c === 'clusters').length, 2, 'nothing watched yet');
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getClusters();
  await api.getClusters();
  assert.deepEqual(await api.getCluster('alpha'), { name: 'alpha', authProvider: 'serviceAccount' });
  assert.equal(client.calls.filter((c) => c === 'clusters').length, 3);
  await assert.rejects(api.getCluster('nope'), /not found/);
  signals.drop();
  await api.getClusters();
  await api.getCluster('alpha');
  assert.equal(client.calls.filter((c) => c === 'clusters').length, 5, 'down: from the network each time');
  assert.equal(await api.proxy({ clusterName: 'alpha', path: '/x' }), 'response');
});

test('a signals API on which no heartbeat arrives: nothing is live, answers kept only as the stock tab polls', async () => {
  const { LiveKubernetesApi } = await load();
  const clock = fakeClock();
  const client = fakeClient();
  const signalApi = { subscribe: () => ({ unsubscribe() {} }) };
  const api = new LiveKubernetesApi({
    client,
    signalApi,
    isLive: client.isLive,
    now: clock.now,
    setTimer: clock.setTimer,
  });
  // EntityKubernetesContent with refreshIntervalMs 500 for 20 s, while nothing proves signals arrive.
  for (let t = 0; t < 20_000; t += 500) {
    await api.getClusters();
    await api.getObjectsByEntity({ entity: SVC_A });
    clock.advance(500);
  }
  assert.deepEqual(
    [client.calls.filter((c) => c === 'objects').length, client.calls.filter((c) => c === 'clusters').length],
    [3, 3],
    'one request per request per notLiveMaxAgeMs (9 s), as the stock tab’s 10 s',
  );
  api.close();
});

test('close() unsubscribes, cancels the idle timers and is safe twice', async () => {
  const { api, signals, clock } = await setUp();
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_B });
  api.close();
  api.close();
  assert.deepEqual(signals.channels, []);
  assert.equal(clock.pending, 0);
});

test('the channel name matches the backend publisher', async () => {
  const { entityRefOf, channelOf } = await load();
  const { channelOf: backendChannelOf } = require('../packages/backstage/following/publisher');
  const { entityRefOf: backendEntityRefOf } = require('../packages/backstage/following/provider');
  const { stringifyEntityRef } = require('@backstage/catalog-model');
  const e = { kind: 'Component', metadata: { name: 'Svc-A', namespace: 'Team' } };
  assert.equal(entityRefOf(e), stringifyEntityRef(e));
  assert.equal(backendEntityRefOf(e), stringifyEntityRef(e));
  assert.equal(channelOf(entityRefOf(SVC_A)), backendChannelOf(backendEntityRefOf(SVC_A)));
});

/** A wake source the test fires by hand, counting its starts and stops. */
function fakeWakes() {
  const source = { started: 0, stopped: 0, onWake: null };
  source.wakes = (onWake) => {
    source.started += 1;
    source.onWake = onWake;
    return () => {
      source.stopped += 1;
      source.onWake = null;
    };
  };
  source.fire = () => source.onWake?.('test');
  return source;
}

test('a wake (sleep, freeze, network back) refetches each request once and subscribes again, then memory again', async () => {
  const wakes = fakeWakes();
  const { api, client, signals } = await setUp({ wakes: wakes.wakes });
  signals.connectOnSubscribe = true;
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_B });
  await api.getClusters();
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.deepEqual(client.calls, ['objects', 'objects', 'clusters']);
  // The WebSocket still says OPEN (a dead one would), yet signals may have been missed.
  wakes.fire();
  assert.equal(signals.subscribes, 4, 'each watched channel subscribed again');
  assert.deepEqual(signals.channels.sort(), [
    'kubernetes:component:default/svc-a',
    'kubernetes:component:default/svc-b',
  ]);
  for (let round = 0; round < 2; round++) {
    await api.getObjectsByEntity({ entity: SVC_A });
    await api.getObjectsByEntity({ entity: SVC_B });
    await api.getClusters();
  }
  assert.deepEqual(
    client.calls.slice(3),
    ['objects', 'objects', 'clusters'],
    'one refetch each, then memory',
  );
});

test('a wake forgets answers; one fetched across a wake is not kept', async () => {
  const wakes = fakeWakes();
  // Another signals implementation: nothing to restart, and its connection looks unchanged.
  const { api, client, signals } = await setUp({ wakes: wakes.wakes });
  await api.getObjectsByEntity({ entity: SVC_A });
  wakes.fire();
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 2, 'refetched once after the wake, then memory');
  const { getObjectsByEntity } = client;
  client.getObjectsByEntity = async (request) => {
    const answer = await getObjectsByEntity(request);
    wakes.fire(); // while the request was out
    return answer;
  };
  signals.emit('kubernetes:component:default/svc-a');
  await api.getObjectsByEntity({ entity: SVC_A });
  client.getObjectsByEntity = getObjectsByEntity;
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 4, 'the answer from across the wake was fetched again, then kept');
});

test('the wake source runs only while some entity is watched', async () => {
  const wakes = fakeWakes();
  const { api } = await setUp({ wakes: wakes.wakes });
  assert.equal(wakes.started, 0, 'nothing before the first request');
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_B });
  assert.deepEqual([wakes.started, wakes.stopped], [1, 0]);
  api.close();
  assert.deepEqual([wakes.started, wakes.stopped], [1, 1]);
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.deepEqual([wakes.started, wakes.stopped], [2, 1]);
  api.close();
});

test('browserWakes: resume, online, shown after a long hide, and a late timer while shown wake; a short hide and a late timer while hidden do not', async (t) => {
  const { browserWakes } = await load();
  const doc = new EventTarget();
  doc.visibilityState = 'visible';
  const win = new EventTarget();
  Object.assign(globalThis, { document: doc, window: win });
  t.after(() => {
    delete globalThis.document;
    delete globalThis.window;
  });
  let clock = 1_000_000;
  const woken = [];
  const stop = browserWakes((reason) => woken.push(reason), { gapMs: 30_000, tickMs: 20, now: () => clock });
  t.after(stop);
  const tick = () => new Promise((resolve) => setTimeout(resolve, 60));
  doc.dispatchEvent(new Event('resume'));
  win.dispatchEvent(new Event('online'));
  assert.deepEqual(woken, ['resumed', 'online']);
  const hide = (ms) => {
    doc.visibilityState = 'hidden';
    doc.dispatchEvent(new Event('visibilitychange'));
    clock += ms;
    doc.visibilityState = 'visible';
    doc.dispatchEvent(new Event('visibilitychange'));
  };
  hide(5000);
  assert.equal(woken.length, 2, 'a short hide is no wake');
  hide(31_000);
  assert.deepEqual(woken.slice(2), ['shown after hidden']);
  await tick();
  assert.equal(woken.length, 3, 'timers on time are no wake');
  clock += 40_000; // the machine slept with the tab shown
  await tick();
  assert.deepEqual(woken.slice(3), ['timer late']);
  doc.visibilityState = 'hidden';
  doc.dispatchEvent(new Event('visibilitychange'));
  clock += 40_000; // a hidden tab's throttled timer
  await tick();
  assert.equal(woken.length, 4, 'a late timer while hidden is no wake');
  stop();
  doc.dispatchEvent(new Event('resume'));
  assert.equal(woken.length, 4, 'stopped: no listener left');
});

test('a signal refetches at once each request asked within prefetchWithinMs; the next poll takes that answer', async () => {
  const { api, client, signals, clock } = await setUp();
  const first = await api.getObjectsByEntity({ entity: SVC_A });
  await api.getWorkloadsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_B });
  signals.emit('kubernetes:component:default/svc-a');
  assert.deepEqual(
    client.calls,
    ['objects', 'workloads', 'objects', 'objects', 'workloads'],
    'sent at the signal',
  );
  const polled = await api.getObjectsByEntity({ entity: SVC_A });
  assert.notEqual(polled, first);
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getWorkloadsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 5, 'the polls took the refetched answers: one request per signal');
  // Nobody asked for svc-b for longer than prefetchWithinMs (a closed tab): its next poll fetches.
  clock.advance(16_000);
  await api.getObjectsByEntity({ entity: SVC_A });
  signals.emit('kubernetes:component:default/svc-b');
  assert.equal(client.calls.length, 5, 'no refetch for an entity nobody polls');
  await api.getObjectsByEntity({ entity: SVC_B });
  assert.equal(client.calls.length, 6);
});

test('a signal while a request is out sends it again, and that newer answer is the one kept', async () => {
  const { api, client, signals } = await setUp();
  await api.getObjectsByEntity({ entity: SVC_A });
  const { getObjectsByEntity } = client;
  const held = [];
  client.getObjectsByEntity = (request) =>
    new Promise((resolve) => held.push(() => resolve(getObjectsByEntity(request))));
  signals.emit('kubernetes:component:default/svc-a'); // the refetch goes out and is held
  assert.equal(held.length, 1);
  signals.emit('kubernetes:component:default/svc-a'); // a second change while it is out
  assert.equal(held.length, 2, 'sent again at the second signal');
  const poll = api.getObjectsByEntity({ entity: SVC_A });
  held[0]();
  held[1]();
  const newest = await poll;
  client.getObjectsByEntity = getObjectsByEntity;
  assert.equal(newest.n, 3, 'the poll was given the request sent after the last signal');
  assert.equal(await api.getObjectsByEntity({ entity: SVC_A }), newest, 'and that answer is kept');
  assert.equal(client.calls.length, 3);
});

test('a refetch that fails: the next poll sees the error, as from its own request, and then goes to the network', async () => {
  const { api, client, signals } = await setUp();
  await api.getObjectsByEntity({ entity: SVC_A });
  const { getObjectsByEntity } = client;
  let failing = true;
  client.getObjectsByEntity = async (request) => {
    if (!failing) return getObjectsByEntity(request);
    client.calls.push('objects');
    throw new Error('HTTP 503');
  };
  signals.emit('kubernetes:component:default/svc-a');
  await new Promise((resolve) => setImmediate(resolve)); // the refetch has failed, unawaited
  await assert.rejects(api.getObjectsByEntity({ entity: SVC_A }), /HTTP 503/);
  failing = false;
  await api.getObjectsByEntity({ entity: SVC_A });
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 4, 'the failure was not kept; the next answer was');
});

test('holdMs: a poll of an answer already given is held until the refetch after a signal lands; polls meanwhile share it', async () => {
  const { api, client, signals } = await setUp({ holdMs: 2000 });
  const first = await api.getObjectsByEntity({ entity: SVC_A });
  const poll = api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(await settled(poll), false, 'held: the caller already has this answer');
  const next = api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(await settled(next), false, 'the next poll is held with it');
  signals.emit('kubernetes:component:default/svc-a');
  const fresh = await poll;
  assert.notEqual(fresh, first);
  assert.equal(fresh.n, 2, 'settled with the refetch the signal sent');
  assert.equal(await next, fresh);
  assert.deepEqual(client.calls, ['objects', 'objects']);
});

test('holdMs: a held poll settles after holdMs with the answer it had; a refetched answer is given at once the first time', async () => {
  const { api, client, signals, clock } = await setUp({ holdMs: 2000 });
  const first = await api.getObjectsByEntity({ entity: SVC_A });
  const poll = api.getObjectsByEntity({ entity: SVC_A });
  clock.advance(1999);
  assert.equal(await settled(poll), false);
  clock.advance(1);
  assert.equal(await poll, first, 'after holdMs, the answer it was held on');
  // A refetch that lands with no poll held: the next poll takes it at once, the one after is held.
  signals.emit('kubernetes:component:default/svc-a');
  await new Promise((resolve) => setImmediate(resolve));
  const fresh = api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(await settled(fresh), true, 'not given yet: not held');
  assert.equal((await fresh).n, 2);
  assert.equal(await settled(api.getObjectsByEntity({ entity: SVC_A })), false, 'given: held');
  assert.equal(client.calls.length, 2);
});

test('holdMs: a held poll settles at the liveness bound, and the next poll asks the network', async () => {
  const { api, client, clock } = await setUp({ holdMs: 10_000, maxAgeMs: 60_000, idleMs: 120_000 });
  const first = await api.getObjectsByEntity({ entity: SVC_A });
  clock.advance(55_000);
  await api.getObjectsByEntity({ entity: SVC_A }); // given from memory: the tab's poll after a pause
  const poll = api.getObjectsByEntity({ entity: SVC_A }); // held
  clock.advance(4999);
  assert.equal(await settled(poll), false);
  clock.advance(1); // the answer is 60 s old: not held past it
  assert.equal(await poll, first);
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 2, 'the next poll: from the network');
});

test('holdMs: a request asked first is never held, nor one with other credentials; close() and a wake settle held polls', async () => {
  const wakes = [];
  const { api, client } = await setUp({
    holdMs: 2000,
    wakes: (onWake) => (wakes.push(onWake), () => {}),
  });
  const first = await api.getObjectsByEntity({ entity: SVC_A, auth: { token: 'a' } });
  const other = api.getObjectsByEntity({ entity: SVC_A, auth: { token: 'b' } });
  assert.equal(await settled(other), true, 'another credential: its own request');
  assert.equal(client.calls.length, 2);
  const held = api.getObjectsByEntity({ entity: SVC_A, auth: { token: 'b' } });
  assert.equal(await settled(held), false);
  wakes[0]('resumed');
  assert.notEqual(await held, undefined, 'a wake settles it (the next poll refetches)');
  const refetched = await api.getObjectsByEntity({ entity: SVC_A, auth: { token: 'a' } });
  assert.notEqual(refetched, first, 'after the wake: from the network');
  const again = api.getObjectsByEntity({ entity: SVC_A, auth: { token: 'a' } });
  assert.equal(await settled(again), false);
  api.close();
  assert.equal(await again, refetched, 'close() settles it, with the answer it was held on');
});

test('holdMs: a held poll settles as soon as its signals connection drops or is replaced, so the tab polls the network at once', async () => {
  const { api, client, signals, clock } = await setUp({ holdMs: 2000 });
  const first = await api.getObjectsByEntity({ entity: SVC_A });
  const poll = api.getObjectsByEntity({ entity: SVC_A });
  clock.advance(250);
  assert.equal(await settled(poll), false, 'the connection is the same: still held');
  signals.drop(); // a backend's graceful restart closes the WebSocket
  clock.advance(250);
  assert.equal(await poll, first, 'settled within a check, with the answer it was held on');
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 2, 'the next poll went to the network');
  signals.reconnect();
  const again = await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 3, 'a new connection: refetched once');
  const held = api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(await settled(held), false);
  signals.reconnect(); // a new WebSocket without a visible drop
  clock.advance(250);
  assert.equal(await held, again);
});

test('pollGapMs: a call long after the last answer was handed out (the tab opened again) is answered from memory at once', async () => {
  const { api, client, clock } = await setUp({ holdMs: 10_000, pollGapMs: 1000 });
  const first = await api.getObjectsByEntity({ entity: SVC_A });
  clock.advance(1001);
  const reopened = api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(await settled(reopened), true, 'past pollGapMs: not a poll, not held');
  assert.equal(await reopened, first);
  clock.advance(1000);
  const poll = api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(await settled(poll), false, 'within pollGapMs of the last answer: a poll, held');
  clock.advance(10_000);
  assert.equal(await poll, first);
  assert.equal(client.calls.length, 1);
});

test('holdMs: a held poll settles at once when the refetch it waits for fails, so the next poll sees the error', async () => {
  const { api, client, signals } = await setUp({ holdMs: 10_000 });
  const first = await api.getObjectsByEntity({ entity: SVC_A });
  const poll = api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(await settled(poll), false);
  client.getObjectsByEntity = async () => {
    client.calls.push('objects');
    throw new Error('HTTP 503');
  };
  signals.emit('kubernetes:component:default/svc-a');
  assert.equal(await settled(poll), true, 'not held on until holdMs');
  assert.equal(await poll, first);
  await assert.rejects(api.getObjectsByEntity({ entity: SVC_A }), /HTTP 503/);
});

test('holdMs: a poll held on a live answer settles with the refetch when that one is not live, and the next goes to the network', async () => {
  const { api, client, signals } = await setUp({ holdMs: 10_000 });
  const first = await api.getObjectsByEntity({ entity: SVC_A });
  const poll = api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(await settled(poll), false);
  client.live = false; // the backend now hands this entity to the default fetcher
  signals.emit('kubernetes:component:default/svc-a');
  const fresh = await poll;
  assert.notEqual(fresh, first, 'the refetch, not held on until holdMs');
  const next = api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(await settled(next), true);
  assert.notEqual(await next, fresh, 'from the network');
  assert.equal(client.calls.length, 3);
});

/** A signals API on the public interface only: subscribe() and the messages the test sends. */
function publicSignals() {
  const subscriptions = new Set();
  return {
    subscribe(channel, onMessage) {
      const s = { channel, onMessage };
      subscriptions.add(s);
      return { unsubscribe: () => subscriptions.delete(s) };
    },
    emit(channel, message) {
      for (const s of [...subscriptions]) if (s.channel === channel) s.onMessage(message);
    },
    get channels() {
      return [...subscriptions].map((s) => s.channel);
    },
  };
}

test('Heartbeat: signals are proven while every replica named beats in sequence within the bound', async () => {
  const { Heartbeat } = await load();
  const { HEARTBEAT_CHANNEL } = require('kube-watch-native-protocol');
  const clock = fakeClock();
  const signals = publicSignals();
  const heartbeat = new Heartbeat(signals, { now: clock.now, boundMs: 15_000 });
  const beat = (replica, seq, replicas) => signals.emit(HEARTBEAT_CHANNEL, { replica, seq, replicas });
  assert.equal(heartbeat.connection(), null, 'nothing heard yet');
  assert.deepEqual(signals.channels, [HEARTBEAT_CHANNEL], 'subscribed on the public API');
  beat('r1', 7, ['r1']);
  const first = heartbeat.connection();
  assert.ok(first);
  clock.advance(5000);
  beat('r1', 8, ['r1']);
  assert.equal(heartbeat.connection(), first, 'the same connection while it beats in sequence');
  beat('r1', 10, ['r1']); // 9 never came: a signal may have been lost with it
  const second = heartbeat.connection();
  assert.ok(second && second !== first, 'a gap: a new connection, nothing kept before trusted');
  clock.advance(15_001);
  assert.equal(heartbeat.connection(), null, 'silent past the bound: not proven');
  beat('r1', 11, ['r1', 'r2']);
  const third = heartbeat.connection();
  assert.ok(third && third !== second);
  clock.advance(10_000);
  beat('r1', 12, ['r1', 'r2']);
  clock.advance(5001);
  assert.equal(heartbeat.connection(), null, 'r2, named alive, never reached this tab (a stalled bus)');
  beat('r2', 1, ['r1', 'r2']);
  assert.ok(heartbeat.connection());
  beat('r1', 13, ['r1']); // r2 is gone: no longer expected
  clock.advance(10_000);
  beat('r1', 14, ['r1']);
  assert.ok(heartbeat.connection());
  beat('r1', 'x', 'junk'); // ignored
  assert.ok(heartbeat.connection());
  heartbeat.close();
  assert.deepEqual(signals.channels, []);
});

test('the default connection is the heartbeat: live after one, polled when it stops, on the public signals API', async () => {
  const { HEARTBEAT_CHANNEL, HEARTBEAT_BOUND_MS } = require('kube-watch-native-protocol');
  const signals = publicSignals();
  // setUp's fake client and clock, on the public signals API and the default connection.
  const { api, client, clock } = await setUp({
    signalApi: signals,
    connectionOf: undefined,
    notLiveMaxAgeMs: 9000,
    wakes: () => () => {},
  });
  let seq = 0;
  const beat = () => signals.emit(HEARTBEAT_CHANNEL, { replica: 'r1', seq: ++seq, replicas: ['r1'] });
  await api.getObjectsByEntity({ entity: SVC_A });
  beat();
  await api.getObjectsByEntity({ entity: SVC_A }); // proven now: fetched live
  for (let i = 0; i < 5; i++) {
    clock.advance(1000);
    await api.getObjectsByEntity({ entity: SVC_A });
  }
  assert.equal(client.calls.length, 2, 'live: from memory');
  signals.emit('kubernetes:component:default/svc-a', { clusters: ['alpha'], at: 0, id: 'c1.x' });
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 3, 'a signal: fetched again');
  // The WebSocket dies silently: no heartbeat. Within the bound the tab polls the network.
  clock.advance(HEARTBEAT_BOUND_MS + 1);
  await api.getObjectsByEntity({ entity: SVC_A });
  assert.equal(client.calls.length, 4, 'not proven: from the network');
  api.close();
});
