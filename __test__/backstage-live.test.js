'use strict';
// backstage/live.js, the live tab's publisher, under a fake clock: who gets a signal, how
// often, for how long, and how much it remembers; and the middleware that marks a followed
// answer live (backstage/live-provider.js).

const test = require('node:test');
const assert = require('node:assert/strict');
const { fakeClock } = require('./helpers');
const { createLivePublisher, liveRequestContext, channelOf } = require('../backstage/live');

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
  live.viewed(ALICE, SVC_A, ['alpha|pods|app=a|']);
  live.changed('alpha|pods|app=a|', { clusters: ['alpha'] });
  await settle();
  assert.deepEqual(published, [
    {
      recipients: { type: 'user', entityRef: ALICE },
      channel: `kubernetes:${SVC_A}`,
      message: { clusters: ['alpha'], at: clock.now() },
    },
  ]);
  assert.equal(channelOf(SVC_A), 'kubernetes:component:default/svc-a');
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
    [[ALICE, `kubernetes:${SVC_A}`]],
  );
});

test('two users of one entity each get their own signal; keys of several clusters add up', async () => {
  const { live, published, settle } = setUp();
  live.viewed(ALICE, SVC_A, ['alpha-key']);
  live.viewed(ALICE, SVC_A, ['beta-key']); // the fetcher calls once per cluster
  live.viewed(BOB, SVC_A, ['alpha-key']);
  live.changed('alpha-key', { clusters: ['alpha'] });
  live.changed('beta-key', { clusters: ['beta'] }); // Alice's is coalesced (within minInterval)
  await settle();
  assert.deepEqual(published.map((s) => s.recipients.entityRef).sort(), [ALICE, BOB]);
});

test('1000 changes in 1 s give at most 1 s / minInterval + 1 signals, the first at once, the last trailing', async () => {
  const { live, published, settle, clock } = setUp({ minIntervalMs: 250 });
  live.viewed(ALICE, SVC_A, ['k']);
  const start = clock.now();
  for (let i = 0; i < 1000; i++) {
    live.changed('k', { clusters: [i % 2 ? 'alpha' : 'beta'] });
    if (i === 0) {
      await settle();
      assert.equal(published.length, 1, 'the first signal after a quiet spell goes at once');
    }
    assert.ok(clock.pending <= 1, `${clock.pending} timers pending: one per viewer is enough`);
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
  assert.deepEqual(published.at(-1).message.clusters, ['alpha', 'beta']);
  assert.equal(clock.pending, 0, 'no timer left once quiet');
});

test('a change after a quiet spell goes at once again', async () => {
  const { live, published, settle, clock } = setUp({ minIntervalMs: 250 });
  live.viewed(ALICE, SVC_A, ['k']);
  live.changed('k');
  clock.advance(5000);
  live.changed('k');
  await settle();
  assert.equal(published.length, 2);
  assert.equal(published[1].message.at - published[0].message.at, 5000);
  assert.equal(clock.pending, 0);
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

test('maxViewers bounds the count: the oldest load is forgotten first', async () => {
  const { live, published, settle } = setUp({ maxViewers: 3 });
  for (const user of ['u1', 'u2', 'u3', 'u4']) live.viewed(`user:default/${user}`, SVC_A, ['k']);
  assert.equal(live.size, 3);
  live.viewed('user:default/u2', SVC_A, ['k']); // u2 is now the newest
  live.viewed('user:default/u5', SVC_A, ['k']); // evicts u3
  assert.equal(live.size, 3);
  live.changed('k');
  await settle();
  assert.deepEqual(published.map((s) => s.recipients.entityRef).sort(), [
    'user:default/u2',
    'user:default/u4',
    'user:default/u5',
  ]);
});

test('close() cancels pending signals, leaves no timer, and is safe twice', async () => {
  const { live, published, settle, clock } = setUp({ minIntervalMs: 250 });
  live.viewed(ALICE, SVC_A, ['k']);
  live.changed('k');
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

test('a failing publish is logged once and does not throw', async () => {
  const warnings = [];
  const clock = fakeClock();
  const live = createLivePublisher({
    signals: { publish: async () => Promise.reject(new Error('events down')) },
    logger: { warn: (m) => warnings.push(m) },
    now: clock.now,
    setTimer: clock.setTimer,
    minIntervalMs: 0,
  });
  live.viewed(ALICE, SVC_A, ['k']);
  live.changed('k');
  live.changed('k');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /events down/);
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
  const { liveHeaderMiddleware, LiveObjectsProvider } = require('../backstage/live-provider');
  const { answerFollowed, answerNotLive } = require('../backstage/live');
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
