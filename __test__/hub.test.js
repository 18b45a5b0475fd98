'use strict';
// The hub (lib/hub.js, src/binding/registry.rs): every plain watch of a watcher wakes
// JavaScript through its one weak thread-safe function, the one its informers use. Its wake-ups reach the right watch with its
// events intact and in order; it keeps the process alive only while a watch waits (child
// processes must exit by themselves once their watches and informers ended, or were left idle);
// and it holds nothing that keeps a watcher or a finished generator from being collected.

const assert = require('node:assert/strict');
const path = require('node:path');
const { NativeKubernetesWatcher } = require('kube-watch-native');
const { HUB } = require('../packages/kube-watch-native/lib/hub');
const { useSimulator, testWithTimeout, TOKEN, paramsFor, pod, collect } = require('./helpers');
const { within, until, untilCollected } = require('../testbed/wait');
const { startFixture, assertExitsBy } = require('./fixture-child');

const FIXTURE = path.join(__dirname, 'fixtures', 'lifetime', 'hub.js');
/** Any child is killed after this long, so a hung one fails its test instead of the run. */
const KILL_MS = 15000;
const TEST_TIMEOUT_MS = 20000;
const timedTest = testWithTimeout(TEST_TIMEOUT_MS);

let sim;
useSimulator((s) => (sim = s), { perTest: true });

const quietLogger = { warn() {}, error() {}, info() {}, debug() {}, child: () => quietLogger };

/** Runs the hub fixture with `mode` and `watches` (./fixture-child.js). */
function runChild(mode, watches) {
  return startFixture([FIXTURE, sim.url, TOKEN, mode, String(watches)], { killMs: KILL_MS });
}

function seedHub() {
  sim.create('pods', pod('a', { namespace: 'hub' }));
  for (let i = 0; i < 3; i++) sim.create('configmaps', { metadata: { name: 'cm', namespace: `hub-${i}` } });
}

for (const mode of ['closed', 'idle']) {
  timedTest(
    `a child whose 40 watches and 3 informers were ${mode === 'closed' ? 'ended' : 'left idle (not iterated)'}, watcher dropped, exits by itself`,
    async () => {
      seedHub();
      const child = runChild(mode, 40);
      const closed = await child.line('closed', KILL_MS);
      await assertExitsBy(child, closed.at, mode);
      assert.deepEqual(child.texts(), ['ready', 'closed']);
    },
  );
}

timedTest('a watcher and its finished generators are collected: the hub holds none of them', async () => {
  const collected = new Set();
  const registry = new FinalizationRegistry((name) => collected.add(name));
  let hub = null;
  const waiting = () => hub.waiting();
  await (async () => {
    const watcher = new NativeKubernetesWatcher({ logger: quietLogger });
    registry.register(watcher, 'watcher');
    // Held past the watcher: the hub holds nothing of it.
    hub = watcher[HUB]();
    const before = waiting();
    const gens = [0, 1, 2].map((i) => {
      const gen = watcher.watchResource(paramsFor(sim), { namespace: 'gc', timeoutSeconds: 1 });
      registry.register(gen, `watch ${i}`);
      return gen;
    });
    // Each waits through the hub (nothing exists yet), gets its event, then ends: by
    // return() while waiting, and by the server (timeoutSeconds).
    const pending = gens.map((gen) => gen.next());
    await until(() => waiting() === before + 3, {
      ms: 2000,
      what: 'the three watches to wait through the hub',
    });
    assert.equal(before, 0);
    sim.create('pods', pod('a', { namespace: 'gc' }));
    for (const result of await within(Promise.all(pending), 5000, 'the first events'))
      assert.equal(result.value.type, 'ADDED');
    const third = gens[2].next();
    await gens[2].return();
    assert.deepEqual(await within(third, 2000, 'a wait ended by return()'), {
      value: undefined,
      done: true,
    });
    for (const gen of gens.slice(0, 2))
      assert.deepEqual(await within(gen.next(), 5000, 'the server end'), { value: undefined, done: true });
  })();
  assert.equal(waiting(), 0, 'no watch waits any more');
  const all = ['watcher', 'watch 0', 'watch 1', 'watch 2'];
  await untilCollected(() => all.every((name) => collected.has(name)), {
    ms: 5000,
    what: `the watcher and its generators to be collected (collected: ${[...collected]})`,
  }).catch(() => assert.fail(`not collected: ${all.filter((n) => !collected.has(n)).join(', ')}`));
});

timedTest('200 watches woken through one hub: each gets its own events, intact and in order', async () => {
  const watcher = new NativeKubernetesWatcher({ logger: quietLogger });
  const WATCHES = 200;
  const EVENTS = 10;
  // Two namespaces, so a wake routed to the wrong watch would show as the other's names.
  const gens = Array.from({ length: WATCHES }, (_, i) =>
    watcher.watchResource(paramsFor(sim), { namespace: `n${i % 2}` }),
  );
  const results = gens.map((gen) => collect(gen, { count: EVENTS, timeoutMs: 10000 }));
  // Let every watch start and wait before the changes trickle in, one every few ms.
  await until(() => sim.activeWatches() === WATCHES, { ms: 5000, what: 'every watch to be running' });
  for (let k = 0; k < EVENTS; k++) {
    for (const ns of ['n0', 'n1']) sim.create('pods', pod(`${ns}-p${k}`, { namespace: ns }));
    await new Promise((r) => setTimeout(r, 5));
  }
  const all = await Promise.all(results);
  all.forEach((events, i) => {
    const ns = `n${i % 2}`;
    assert.deepEqual(
      events.map((e) => `${e.type} ${e.object.metadata.name}`),
      Array.from({ length: EVENTS }, (_, k) => `ADDED ${ns}-p${k}`),
      `watch ${i}`,
    );
    const versions = events.map((e) => Number(e.resourceVersion));
    assert.ok(
      versions.every((v, k) => k === 0 || v > versions[k - 1]),
      `watch ${i}: resourceVersions increase`,
    );
  });
  await Promise.all(gens.map((gen) => gen.return()));
  assert.equal(watcher[HUB]().waiting(), 0);
});

timedTest(
  "a watcher's plain watches and informers come back through one function of its registry",
  async (t) => {
    const native = require('../packages/kube-watch-native/lib/native');
    const { connect } = native.NativeRegistry.prototype;
    const calls = [];
    native.NativeRegistry.prototype.connect = function (back) {
      calls.push({ registry: this, from: [] });
      const call = calls[calls.length - 1];
      return connect.call(this, (from, messages) => {
        // A watch's wake-up is its id alone; the rest come as arrays.
        call.from.push(...(typeof from === 'number' ? [from] : from));
        return back(from, messages);
      });
    };
    t.after(() => Object.assign(native.NativeRegistry.prototype, { connect }));
    const watcher = new NativeKubernetesWatcher({ logger: quietLogger });
    const informer = watcher.informer(paramsFor(sim, { plural: 'configmaps' }), { namespace: 'one' });
    const gen = watcher.watchResource(paramsFor(sim), { namespace: 'one' });
    const stream = informer[Symbol.asyncIterator]();
    try {
      await within(informer.synced, 5000, 'the informer to sync');
      assert.equal((await within(stream.next(), 5000, 'the SYNCED marker')).value.type, 'SYNCED');
      // Both wait before the changes: each is woken through the function.
      const nextEvent = gen.next();
      const nextChange = stream.next();
      await until(() => watcher[HUB]().waiting() === 2, {
        ms: 2000,
        what: 'the watch and the consumer to wait',
      });
      sim.create('pods', pod('p', { namespace: 'one' }));
      sim.create('configmaps', { metadata: { name: 'c', namespace: 'one' } });
      assert.equal((await within(nextEvent, 5000, 'the watch event')).value.object.metadata.name, 'p');
      assert.equal((await within(nextChange, 5000, 'the informer change')).value.object.metadata.name, 'c');
    } finally {
      await gen.return();
      await stream.return();
      informer.close();
    }
    const registries = new Set(calls.map((call) => call.registry));
    assert.equal(registries.size, 1, 'one registry for the watcher');
    assert.equal(calls.length, 1, 'connected once while something was open or waiting');
    const from = calls[0].from;
    assert.ok(from.includes(0), "the informer's news came through it");
    const waiters = new Set(from.filter((id) => id !== 0));
    assert.equal(waiters.size, 2, `the watch's and the consumer's wake-ups came through it (from ${from})`);
  },
);
