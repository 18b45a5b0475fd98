'use strict';
// backstage/following/publisher.js, the live tab's publisher, under a fake clock: who gets a signal, how
// often, for how long, and how much it remembers; and the middleware that marks a followed
// answer live (backstage/following/provider.js).

const test = require('node:test');
const assert = require('node:assert/strict');
const { fakeClock } = require('./helpers');
const { createLivePublisher, channelOf } = require('../packages/backstage/following/publisher');
const { liveRequestContext } = require('../packages/backstage/following/mark');

const ALICE = 'user:default/alice';
const BOB = 'user:default/bob';
const SVC_A = 'component:default/svc-a';
const SVC_B = 'component:default/svc-b';

/** A publisher with a recording signals service, a fake clock and its defaults otherwise. */
function setUp(options = {}) {
  const clock = fakeClock();
  const published = [];
  const signals = { publish: async (signal) => void published.push(signal) };
  const live = createLivePublisher({ signals, now: clock.now, setTimer: clock.setTimer, ...options });
  /** Lets the publisher's `Promise.resolve().then(publish)` run. */
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { clock, published, live, settle };
}

test('a change signals the user who loaded the entity, on its channel, with no object data', async () => {
  const { live, published, settle, clock } = setUp();
  assert.equal(live.viewed(ALICE, SVC_A, ['alpha|pods|app=a|'], { cluster: 'alpha' }), true);
  live.changed('alpha|pods|app=a|');
  await settle();
  assert.deepEqual(published, [
    {
      recipients: { type: 'user', entityRef: [ALICE] },
      channel: `kubernetes:${SVC_A}`,
      message: { clusters: ['alpha'], at: clock.now(), id: published[0].message.id },
    },
  ]);
  assert.equal(channelOf(SVC_A), 'kubernetes:component:default/svc-a');
});

test('a change carries its identity, the same on every replica that saw it, in an id unique to each publish', async () => {
  const replicas = [setUp(), setUp()];
  const ids = async (change) => {
    const out = [];
    for (const [i, { live, published, settle, clock }] of replicas.entries()) {
      // Each replica's watch keys are its own (keyed hashes); what the answer became is content.
      live.viewed(ALICE, SVC_A, [`replica-${i}-key`], { cluster: 'alpha' });
      live.changed(`replica-${i}-key`, { change });
      await settle();
      out.push(published.at(-1).message.id);
      clock.advance(1000);
    }
    return out;
  };
  const changeOf = (id) => id.split('.')[0];
  const [a, b] = await ids('fingerprint-1');
  assert.equal(typeof a, 'string');
  assert.equal(changeOf(a), changeOf(b), 'both replicas name the change alike');
  // A cache that turns unservable, servable, unservable at one resourceVersion repeats a
  // change's identity: the frontend drops an id it has seen, so each publish is its own.
  assert.notEqual(a, b, 'each publish its own id');
  const [c] = await ids('fingerprint-2');
  assert.notEqual(changeOf(c), changeOf(a), 'another change, another identity');
  const [again] = await ids('fingerprint-1');
  assert.equal(changeOf(again), changeOf(a));
  assert.notEqual(again, a, 'the same change again: an id the frontend has not seen');
});

test("another user's entity, and a key nobody loaded, get nothing", async () => {
  const { live, published, settle } = setUp();
  live.viewed(ALICE, SVC_A, ['k-a']);
  live.viewed(BOB, SVC_B, ['k-b']);
  live.changed('k-a');
  live.changed('k-nobody');
  await settle();
  assert.deepEqual(
    published.map((s) => [s.recipients.entityRef, s.channel]),
    [[[ALICE], `kubernetes:${SVC_A}`]],
  );
});

test('one signal per entity change names every user of it; keys of several clusters add up', async () => {
  const { live, published, settle } = setUp();
  live.viewed(ALICE, SVC_A, ['alpha-key'], { cluster: 'alpha' });
  live.viewed(ALICE, SVC_A, ['beta-key'], { cluster: 'beta' }); // the fetcher calls once per cluster
  live.viewed(BOB, SVC_A, ['alpha-key'], { cluster: 'alpha' });
  live.changed('alpha-key');
  live.changed('beta-key'); // Alice was signalled already: one reload answers both
  await settle();
  assert.equal(published.length, 1);
  assert.deepEqual(published[0].recipients.entityRef, [ALICE, BOB]);
});

test('1000 changes in 1 s, the tab reloading after each signal: at most 1 s / minInterval + 1 signals, the first at once, the last trailing', async () => {
  const { live, published, settle, clock } = setUp({ minIntervalMs: 250 });
  live.viewed(ALICE, SVC_A, ['k'], { cluster: 'alpha' });
  const start = clock.now();
  let seen = 0;
  for (let i = 0; i < 1000; i++) {
    live.changed('k');
    await settle();
    if (i === 0) assert.equal(published.length, 1, 'the first signal after a quiet spell goes at once');
    assert.ok(clock.pending <= 1, `${clock.pending} timers pending: one per viewer is enough`);
    // The frontend reloads 5 ms after a signal, which arms the viewer again.
    if (published.length > seen && clock.now() - published.at(-1).message.at === 5) {
      seen = published.length;
      live.viewed(ALICE, SVC_A, ['k'], { cluster: 'alpha' });
    }
    clock.advance(1);
  }
  clock.advance(1000); // the trailing signal of the spell
  await settle();
  assert.ok(published.length <= 1000 / 250 + 1, `${published.length} signals`);
  assert.ok(published.length >= 4, `${published.length} signals: changes went unsignalled`);
  const times = published.map((s) => s.message.at);
  for (let i = 1; i < times.length; i++) assert.ok(times[i] - times[i - 1] >= 250, `signals ${times}`);
  assert.equal(times[0], start);
  assert.ok(times.at(-1) >= start + 999, 'a change late in the spell was signalled');
  assert.equal(clock.pending, 0, 'no timer left once quiet');
});

test('a signal asks for one reload: no more signals until the viewer is answered again', async () => {
  const { live, published, settle, clock } = setUp({ minIntervalMs: 250 });
  live.viewed(ALICE, SVC_A, ['k'], { cluster: 'alpha' });
  live.changed('k');
  clock.advance(5000);
  live.changed('k'); // the tab did not reload (closed, or refused since): nothing
  await settle();
  assert.equal(published.length, 1);
  live.viewed(ALICE, SVC_A, ['k'], { cluster: 'alpha' }); // answered again
  clock.advance(1000);
  live.changed('k');
  await settle();
  assert.equal(published.length, 2, 'after a quiet spell, at once again');
  assert.equal(published[1].message.at - published[0].message.at, 6000);
  assert.equal(clock.pending, 0);
});

test('a signal names the cluster as the viewer’s own answer names it', async () => {
  const { live, published, settle } = setUp();
  // One shared informer, known to Alice as `shared` and to Bob as `secret-prod-eu`.
  live.viewed(ALICE, SVC_A, ['informer-1'], { cluster: 'shared' });
  live.viewed(BOB, SVC_A, ['informer-1'], { cluster: 'secret-prod-eu' });
  live.changed('informer-1');
  await settle();
  const clustersOf = (user) => published.find((s) => s.recipients.entityRef.includes(user)).message.clusters;
  assert.deepEqual(clustersOf(ALICE), ['shared']);
  assert.deepEqual(clustersOf(BOB), ['secret-prod-eu']);
});

test('viewerTtl: signals stop when it passes without a load, and a load refreshes it', async () => {
  const { live, published, settle, clock } = setUp({ viewerTtlMs: 10_000 });
  live.viewed(ALICE, SVC_A, ['k']);
  clock.advance(9_000);
  live.viewed(ALICE, SVC_A, ['k']); // refreshed: alive until 19 000
  clock.advance(9_000);
  live.changed('k');
  await settle();
  assert.equal(published.length, 1, 'a load refreshes the TTL');
  live.viewed(ALICE, SVC_A, ['k']); // the reload: alive until 28 000
  clock.advance(10_000);
  live.changed('k');
  await settle();
  assert.equal(published.length, 1, 'expired: no signal');
  assert.equal(live.size, 0, 'and forgotten');
});

test('a trailing signal due after the TTL passed is not sent', async () => {
  const { live, published, settle, clock } = setUp({ viewerTtlMs: 1_000, minIntervalMs: 250 });
  live.viewed(ALICE, SVC_A, ['k']);
  clock.advance(900);
  live.changed('k');
  clock.advance(50);
  live.changed('k'); // due at 1150, after expiry at 1000
  clock.advance(1000);
  await settle();
  assert.equal(published.length, 1);
});

test('maxViewers: past it a new viewer is refused (its load says so), none is dropped silently', async () => {
  const { live, published, settle } = setUp({ maxViewers: 3 });
  for (const user of ['u1', 'u2', 'u3']) {
    assert.equal(live.viewed(`user:default/${user}`, SVC_A, ['k']), true);
  }
  assert.equal(live.viewed('user:default/u4', SVC_A, ['k']), false, 'refused: the frontend polls it');
  assert.equal(live.viewed('user:default/u2', SVC_A, ['k']), true, 'a followed viewer reloads');
  assert.equal(live.size, 3);
  live.changed('k');
  await settle();
  assert.deepEqual(
    published.flatMap((s) => s.recipients.entityRef),
    ['user:default/u1', 'user:default/u2', 'user:default/u3'],
  );
  assert.equal(live.counts().refused, 1);
});

test('maxViewersPerUser: one user loading many entities evicts only their own, each told once', async () => {
  const { live, published, settle } = setUp({ maxViewers: 100, maxViewersPerUser: 5 });
  live.viewed(ALICE, SVC_A, ['k-a'], { cluster: 'alpha' });
  for (let i = 0; i < 50; i++) live.viewed(BOB, `component:default/e${i}`, [`k${i}`], { cluster: 'beta' });
  assert.equal(live.size, 6, 'Alice’s one and Bob’s five');
  await settle();
  // Each of Bob's evicted viewers was signalled once, so an open tab of it reloads.
  assert.equal(published.length, 45);
  assert.ok(published.every((s) => s.recipients.entityRef.join() === BOB));
  assert.deepEqual(published[0].message.clusters, ['beta']);
  live.changed('k-a');
  await settle();
  assert.deepEqual(published.at(-1).recipients.entityRef, [ALICE], 'Alice is still followed');
  assert.equal(live.counts().evicted, 45);
});

test('close() cancels pending signals, leaves no timer, and is safe twice', async () => {
  const { live, published, settle, clock } = setUp({ minIntervalMs: 250 });
  live.viewed(ALICE, SVC_A, ['k']);
  live.changed('k');
  live.viewed(ALICE, SVC_A, ['k']); // reloaded at once
  live.changed('k'); // a trailing one is pending
  assert.equal(clock.pending, 1);
  live.close();
  live.close();
  assert.equal(clock.pending, 0);
  clock.advance(1000);
  live.changed('k');
  live.viewed(ALICE, SVC_A, ['k']);
  await settle();
  assert.equal(published.length, 1);
  assert.equal(live.size, 0);
});

test('a failing publish is logged once, does not throw, and is tried again a second apart before it counts as lost', async () => {
  const warnings = [];
  const clock = fakeClock();
  const live = createLivePublisher({
    signals: { publish: async () => Promise.reject(new Error('events down')) },
    logger: { warn: (m) => warnings.push(m) },
    now: clock.now,
    setTimer: clock.setTimer,
    minIntervalMs: 0,
  });
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  live.viewed(ALICE, SVC_A, ['k']);
  live.changed('k');
  await turn();
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /events down/);
  for (let i = 0; i < 4; i++) {
    clock.advance(1000);
    await turn();
  }
  const counts = live.counts();
  assert.equal(counts.published, 0);
  assert.equal(counts.failed, 4, 'once, then 3 more times');
  assert.equal(counts.lost, 1);
  assert.equal(warnings.length, 2);
  assert.match(warnings[1], /lost after 4 attempts/);
});

test('programmer errors are TypeErrors naming the field', () => {
  assert.throws(() => createLivePublisher({}), /options\.signals/);
  assert.throws(() => createLivePublisher({ signals: { publish() {} }, minIntervalMs: -1 }), /minIntervalMs/);
  const { live } = setUp();
  assert.throws(() => live.viewed(ALICE, SVC_A, 'k'), TypeError);
});

test('liveRequestContext carries the viewer through awaits', async () => {
  const seen = await liveRequestContext.run({ userEntityRef: ALICE, entityRef: SVC_A }, async () => {
    await new Promise((resolve) => setTimeout(resolve, 1));
    return liveRequestContext.getStore();
  });
  assert.deepEqual(seen, { userEntityRef: ALICE, entityRef: SVC_A });
  assert.equal(liveRequestContext.getStore(), undefined);
});

test('liveHeaderMiddleware: x-kube-watch-live only on a 200 whose every provider call is followed; exposed through CORS', async () => {
  const { liveHeaderMiddleware, LiveObjectsProvider } = require('../packages/backstage/following/provider');
  const {
    markFollowed: answerFollowed,
    markNotLive: answerNotLive,
  } = require('../packages/backstage/following/mark');
  const auth = { isPrincipal: (credentials, type) => credentials.principal.type === type };
  const user = { principal: { type: 'user', userEntityRef: ALICE } };
  const service = { principal: { type: 'service', subject: 'plugin:x' } };
  const entity = { kind: 'Component', metadata: { name: 'svc-a', namespace: 'default' } };
  /** One request through the middleware: `notes` run inside each provider call; the headers written. */
  async function answer({
    method = 'POST',
    credentials = user,
    calls = [[answerFollowed]],
    status = 200,
    cors,
  } = {}) {
    const headers = new Map(cors ? [['access-control-allow-origin', cors]] : []);
    const res = {
      statusCode: status,
      setHeader: (name, value) => headers.set(name, value),
      getHeader: (name) => headers.get(name),
      writeHead(code) {
        this.written = code;
        return this;
      },
    };
    await new Promise((resolve, reject) => {
      liveHeaderMiddleware()({ method }, res, async () => {
        try {
          for (const notes of calls) {
            const inner = { getKubernetesObjectsByEntity: async () => notes.forEach((note) => note()) };
            await new LiveObjectsProvider({ inner, auth }).getKubernetesObjectsByEntity(
              { entity },
              { credentials },
            );
          }
          await new Promise((r) => setImmediate(r)); // the route answers later, as express does
          res.writeHead(res.statusCode);
          resolve();
        } catch (error) {
          reject(error);
        }
      });
    });
    return Object.fromEntries(headers);
  }
  assert.deepEqual(await answer(), { 'x-kube-watch-live': '1' });
  assert.deepEqual(await answer({ calls: [[answerFollowed, answerNotLive]] }), {}, 'a part delegated');
  assert.deepEqual(
    await answer({ calls: [[answerFollowed], [answerNotLive]] }),
    {},
    'one call of two delegated',
  );
  assert.deepEqual(await answer({ calls: [[]] }), {}, 'nothing followed (no informer answered)');
  assert.deepEqual(await answer({ calls: [] }), {}, 'no provider call (another route)');
  assert.deepEqual(await answer({ credentials: service }), {}, 'a service: no user to signal');
  assert.deepEqual(await answer({ status: 500 }), {});
  assert.deepEqual(await answer({ method: 'GET' }), {});
  assert.deepEqual(await answer({ cors: 'https://app.example' }), {
    'access-control-allow-origin': 'https://app.example',
    'x-kube-watch-live': '1',
    'access-control-expose-headers': 'x-kube-watch-live',
  });
});

test('a load the permission policy refuses on the router: its user is followed no more for that entity (issue 48, finding 4)', async () => {
  const { setUpLive } = require('../packages/backstage/following/provider');
  const { ConfigReader } = require('@backstage/config');
  const published = [];
  const registered = [];
  const { publisher } = await setUpLive({
    options: {
      enabled: true,
      viewerTtlMs: 60_000,
      maxViewers: 10,
      maxViewersPerUser: 5,
      minIntervalMs: 0,
      replicas: 1,
    },
    logger: { info() {}, warn() {} },
    config: new ConfigReader({}),
    signals: { publish: (signal) => void published.push(signal) },
    objectsProviders: { addObjectsProvider() {} },
    auth: {},
    instanceMetadata: { getInstalledPlugins: async () => [{ pluginId: 'signals' }] },
    httpRouter: { use: (h) => registered.push(h) },
    httpAuth: { credentials: async () => ({ principal: { type: 'user', userEntityRef: ALICE } }) },
  });
  const [middleware] = registered;
  // Alice's allowed load of svc-a, then one refused by the policy before any provider call.
  publisher.viewed(ALICE, SVC_A, ['k'], { cluster: 'alpha' });
  const entity = { kind: 'Component', metadata: { name: 'svc-a', namespace: 'default' } };
  const res = { statusCode: 403, setHeader() {}, getHeader() {}, writeHead() {} };
  middleware({ method: 'POST', body: { entity } }, res, () => res.writeHead(403));
  await new Promise((resolve) => setImmediate(resolve));
  publisher.changed('k');
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(
    published.filter((s) => s.channel !== 'kube-watch-native:heartbeat'),
    [],
    'no signal of a change she may no longer load',
  );
  assert.equal(publisher.size, 0);
  await publisher.close();
});

test('several replicas: the live tab is on only with the events backend on PostgreSQL, else off with a warning', async () => {
  const { setUpLive } = require('../packages/backstage/following/provider');
  const { ConfigReader } = require('@backstage/config');
  const setUp = async ({ replicas, plugins, client, database }) => {
    const warnings = [];
    const registered = [];
    const { publisher: live } =
      (await setUpLive({
        options: {
          enabled: true,
          viewerTtlMs: 1000,
          maxViewers: 10,
          maxViewersPerUser: 5,
          minIntervalMs: 0,
          replicas,
        },
        logger: { info() {}, warn: (m) => warnings.push(m) },
        config: new ConfigReader(client ? { backend: { database: { client } } } : {}),
        signals: { publish() {} },
        objectsProviders: { addObjectsProvider: (p) => registered.push(p) },
        auth: {},
        instanceMetadata: { getInstalledPlugins: async () => plugins.map((pluginId) => ({ pluginId })) },
        httpRouter: { use: (h) => registered.push(h) },
        database,
      })) ?? {};
    live?.close();
    return { live, warnings, registered };
  };
  const one = await setUp({ replicas: 1, plugins: ['signals', 'kubernetes'] });
  assert.ok(one.live, 'one replica: on');
  const noBus = await setUp({ replicas: 3, plugins: ['signals', 'kubernetes'], client: 'pg' });
  assert.equal(noBus.live, undefined, 'no events backend: off');
  assert.deepEqual(noBus.registered, [], 'no objects provider, no header');
  assert.match(noBus.warnings[0], /replicas is 3.*events plugin is not installed.*the live tab is off/);
  const sqlite = await setUp({ replicas: 2, plugins: ['signals', 'events'], client: 'better-sqlite3' });
  assert.equal(sqlite.live, undefined, 'the events backend on SQLite is in-memory: off');
  assert.match(sqlite.warnings[0], /backend\.database\.client is better-sqlite3/);
  // With the bus, the viewers are shared in the plugin's database (on: __test__/replicas.test.js);
  // a database that cannot be reached stops the start with a message that says what failed.
  const unreachable = {
    getClient: async () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432')),
  };
  await assert.rejects(
    setUp({ replicas: 2, plugins: ['signals', 'events'], client: 'pg', database: unreachable }),
    /the live tab's viewer registry could not start: Error: connect ECONNREFUSED/,
  );
});

test('the heartbeat: one broadcast per replica per interval, numbered, naming the replicas alive by opaque ids; a greeting repeats the latest beat to one user, once per interval', async () => {
  const { startHeartbeat, publicIdOf } = require('../packages/backstage/following/heartbeat');
  const { HEARTBEAT_CHANNEL } = require('kube-watch-native-protocol');
  const published = [];
  let alive = ['host-a-1-x', 'host-b-2-y'];
  const heartbeat = startHeartbeat({
    signals: { publish: (signal) => void published.push(signal) },
    replica: 'host-a-1-x',
    replicas: () => alive,
    intervalMs: 50,
  });
  await new Promise((resolve) => setTimeout(resolve, 130));
  heartbeat.greet(ALICE);
  heartbeat.greet(ALICE); // once per interval
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(published.filter((s) => s.recipients.type === 'user').length, 0, 'not at once');
  await new Promise((resolve) => setTimeout(resolve, 300)); // the first greeting, 250 ms after
  alive = ['host-a-1-x'];
  await new Promise((resolve) => setTimeout(resolve, 60));
  heartbeat.close(); // the second, due 1 500 ms after, goes with it
  const count = published.length;
  await new Promise((resolve) => setTimeout(resolve, 120));
  assert.equal(published.length, count, 'closed: no more beats');
  const broadcasts = published.filter((s) => s.recipients.type === 'broadcast');
  assert.ok(broadcasts.length >= 3, `${broadcasts.length} beats`);
  assert.ok(published.every((s) => s.channel === HEARTBEAT_CHANNEL));
  assert.deepEqual(
    broadcasts.map((s) => s.message.seq),
    broadcasts.map((_, i) => i + 1),
    'numbered in sequence',
  );
  const id = publicIdOf('host-a-1-x');
  assert.doesNotMatch(JSON.stringify(published), /host-/, 'no host name reaches a browser');
  assert.deepEqual(broadcasts[0].message, {
    replica: id,
    seq: 1,
    replicas: [id, publicIdOf('host-b-2-y')].sort(),
  });
  assert.deepEqual(broadcasts.at(-1).message.replicas, [id], 'a replica gone is named no more');
  const greetings = published.filter((s) => s.recipients.type === 'user');
  assert.equal(greetings.length, 1);
  assert.deepEqual(greetings[0].recipients, { type: 'user', entityRef: ALICE });
  const beforeGreeting = broadcasts
    .filter((s) => published.indexOf(s) < published.indexOf(greetings[0]))
    .at(-1);
  assert.deepEqual(
    greetings[0].message,
    beforeGreeting.message,
    'the latest beat again, its number unchanged',
  );
});

test('a greeting (the latest heartbeat to one user) goes with the first live load of an entity here, not with its reloads', async () => {
  const { LiveObjectsProvider } = require('../packages/backstage/following/provider');
  const { markFollowed } = require('../packages/backstage/following/mark');
  const { live } = setUp();
  const greets = [];
  const inner = {
    getKubernetesObjectsByEntity: async () => {
      live.viewed(ALICE, SVC_A, ['k'], { cluster: 'alpha' });
      markFollowed();
      return { items: [] };
    },
  };
  const provider = new LiveObjectsProvider({
    inner,
    auth: { isPrincipal: (credentials, type) => credentials.principal.type === type },
    live,
    heartbeat: { greet: (user) => greets.push(user) },
  });
  const entity = { kind: 'Component', metadata: { name: 'svc-a', namespace: 'default' } };
  const credentials = { principal: { type: 'user', userEntityRef: ALICE } };
  for (let i = 0; i < 3; i++) await provider.getKubernetesObjectsByEntity({ entity }, { credentials });
  assert.deepEqual(greets, [ALICE], 'once: its reloads cost no publish');
});
