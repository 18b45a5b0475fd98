'use strict';
// HTTP/2 stream limits: watches never wait silently for a stream. The simulator advertises
// kube-apiserver's SETTINGS_MAX_CONCURRENT_STREAMS (100) or another limit, lowers it, sends
// GOAWAY and refuses streams; every watch must start and receive a change made after it started,
// on as few connections as the limit allows (the server counts its sessions).

const test = require('node:test');
const assert = require('node:assert/strict');
const { createSimulator, certs } = require('../packages/kube-watch-native/sim');
const { TOKEN, paramsFor, pod, watcherWithLogger } = require('./helpers');
const { until, within } = require('../testbed/wait');

const b64 = (text) => Buffer.from(text).toString('base64');

async function h2Sim(t, maxConcurrentStreams) {
  const sim = await createSimulator({ tls: true, http2: true, token: TOKEN, maxConcurrentStreams });
  t.after(() => sim.close());
  return sim;
}

/**
 * An HTTP/2 simulator advertising `maxConcurrentStreams` and a watcher: `start(namespace, count)`
 * starts watches on it (startWatches()) that are aborted when test `t` ends, after which the
 * simulator closes.
 */
async function h2Watches(t, maxConcurrentStreams) {
  const sim = await h2Sim(t, maxConcurrentStreams);
  const { watcher, logger } = watcherWithLogger();
  const controller = new AbortController();
  t.after(() => controller.abort());
  const start = (namespace, count) => startWatches(watcher, sim, namespace, count, controller.signal);
  return { sim, watcher, logger, controller, start };
}

/**
 * Starts `count` watches of the pods in `namespace` (empty, so nothing arrives until a change)
 * and returns them with the promise of each one's first event.
 */
function startWatches(watcher, sim, namespace, count, signal) {
  const params = paramsFor(sim, { clusterDetails: { caData: b64(certs.ca) } });
  return Array.from({ length: count }, () => {
    const generator = watcher.watchResource(params, { namespace, signal });
    return { generator, first: generator.next() };
  });
}

/** Waits until the server runs `count` watches, makes one change, and checks every watch sees it. */
async function everyWatchSeesAChange(sim, watches, namespace, name) {
  await until(() => sim.activeWatches() >= watches.length, {
    ms: 20000,
    what: `${watches.length} watches at the server`,
  });
  sim.create('pods', pod(name, { namespace }));
  const firsts = await within(
    Promise.all(watches.map((w) => w.first)),
    20000,
    'the first event of every watch',
  );
  for (const { value } of firsts) {
    assert.equal(value.type, 'ADDED');
    assert.equal(value.object.metadata.name, name);
  }
}

function poolOf(watcher, sim) {
  const entry = watcher.stats().clusters.find((c) => c.origin === sim.origin);
  assert.ok(entry, `the pool has an entry for ${sim.origin}`);
  return entry;
}

for (const { limit, perConnection, connections } of [
  { limit: 100, perConnection: 90, connections: 4 },
  { limit: 7, perConnection: 6, connections: Math.ceil(350 / 6) },
]) {
  test(`350 watches with the server's limit at ${limit} all start, over ${connections} connections`, async (t) => {
    const { sim, watcher, logger, start } = await h2Watches(t, limit);
    const watches = start('many', 350);
    await everyWatchSeesAChange(sim, watches, 'many', 'after-start');
    assert.equal(sim.http2.opened, connections, 'HTTP/2 connections the server saw');
    const pool = poolOf(watcher, sim);
    assert.equal(pool.connections.length, connections);
    assert.equal(
      pool.connections.reduce((sum, c) => sum + c.streams, 0),
      350,
      'every watch has its stream',
    );
    for (const c of pool.connections) {
      assert.equal(c.streamLimit, limit, 'the limit is read from the connection');
      assert.ok(
        c.streams <= perConnection,
        `${c.streams} streams on a connection (at most ${perConnection})`,
      );
    }
    assert.deepEqual(logger.warnings(), []);
  });
}

test('a limit lowered mid-connection sends new watches to another connection', async (t) => {
  const { sim, watcher, start } = await h2Watches(t, 100);
  const early = start('lowered', 20);
  await until(() => sim.activeWatches() === 20, { ms: 10000, what: '20 watches' });
  assert.equal(sim.http2.opened, 1);

  sim.http2.setLimit(10);
  await until(() => poolOf(watcher, sim).connections[0].streamLimit === 10, {
    ms: 5000,
    what: 'the new limit',
  });
  const late = start('lowered', 5);
  await until(() => sim.activeWatches() === 25, { ms: 10000, what: '25 watches' });
  // Read from the connection, not found out by waiting for a stream that never opens: a
  // request left queued behind the limit (STREAM_START_WAIT) is withdrawn and its connection
  // stops accepting, so the first one still accepting is the witness, whatever the timing.
  const first = poolOf(watcher, sim).connections.find((c) => c.streams === 20);
  assert.equal(first?.accepting, true, 'no new watch was tried on the full connection');
  await everyWatchSeesAChange(sim, [...early, ...late], 'lowered', 'after-lowering');
  assert.equal(sim.http2.opened, 2, 'the five new watches went to a second connection');
  const streams = poolOf(watcher, sim)
    .connections.map((c) => c.streams)
    .sort((a, b) => a - b);
  assert.deepEqual(streams, [5, 20], 'the running watches stayed where they were');
});

test('after GOAWAY the running watches continue and new ones go to another connection', async (t) => {
  const { sim, watcher, logger, start } = await h2Watches(t, 100);
  const running = start('goaway', 20);
  await until(() => sim.activeWatches() === 20, { ms: 10000, what: '20 watches' });
  const firstSocket = sim.requests.at(-1).socketId;

  assert.equal(sim.http2.goaway(), 1, 'one session got GOAWAY');
  await new Promise((resolve) => setTimeout(resolve, 100));
  const fresh = start('goaway', 5);
  await everyWatchSeesAChange(sim, [...running, ...fresh], 'goaway', 'after-goaway');

  const watchRequests = sim.requests.filter((r) => r.path === '/api/v1/namespaces/goaway/pods');
  assert.equal(watchRequests.length, 25, 'no watch was sent twice (a GOAWAY-ed send fails before the wire)');
  const sockets = new Set(watchRequests.slice(20).map((r) => r.socketId));
  assert.equal(sockets.size, 1);
  assert.notEqual([...sockets][0], firstSocket, 'the new watches run on another connection');
  assert.equal(sim.http2.opened, 2);
  const old = poolOf(watcher, sim).connections.find((c) => c.streams === 20);
  assert.equal(old.accepting, false, 'the GOAWAY-ed connection takes no new streams');
  assert.deepEqual(logger.warnings(), []);
});

test('a stream refused with REFUSED_STREAM is retried transparently', async (t) => {
  const { sim, logger, start } = await h2Watches(t, 100);
  sim.http2.refuseNext = 2;
  const watches = start('refused', 1);
  await everyWatchSeesAChange(sim, watches, 'refused', 'after-refusals');
  assert.equal(sim.http2.refused, 2);
  const attempts = sim.requests.filter((r) => r.path === '/api/v1/namespaces/refused/pods');
  assert.equal(attempts.length, 3, 'two refused, the third served');
  assert.deepEqual(logger.warnings(), []);
});

test('a server that refuses every stream gives one SYSTEM_ERROR saying so, not a hang', async (t) => {
  const sim = await h2Sim(t, 100);
  const { watcher, logger } = watcherWithLogger();
  sim.http2.refuseNext = 1000;
  const [watch] = startWatches(watcher, sim, 'refused', 1);
  const { value } = await within(watch.first, 10000, 'the ERROR');
  assert.deepEqual(value, {
    type: 'ERROR',
    error: { errorType: 'SYSTEM_ERROR', statusCode: 0, resourcePath: '/api/v1/namespaces/refused/pods' },
  });
  assert.deepEqual(await watch.generator.next(), { done: true, value: undefined });
  const [warning] = logger.warnings();
  assert.match(
    warning,
    /no HTTP\/2 stream could be opened after 6 tries; last: the server refused the stream/,
  );
  assert.ok(!warning.includes(TOKEN));
});

test('1 000 idle watches use at most ⌈1000 / (limit − headroom)⌉ + 1 connections', async (t) => {
  const { sim, watcher, controller, start } = await h2Watches(t, 100);
  const watches = start('idle', 1000);
  await until(() => sim.activeWatches() === 1000, { ms: 30000, what: '1 000 watches at the server' });
  const bound = Math.ceil(1000 / 90) + 1;
  assert.ok(sim.http2.opened <= bound, `${sim.http2.opened} connections (at most ${bound})`);
  assert.equal(poolOf(watcher, sim).connections.length, sim.http2.opened);
  controller.abort();
  for (const w of watches) assert.equal((await w.first).done, true);
});

test('a server admitting no streams fails the watch with a warning saying so, and recovers later', async (t) => {
  const { sim, watcher, logger, start } = await h2Watches(t, 0);
  const [refused] = start('zero', 1);
  const { value } = await within(refused.first, 10000, 'the ERROR');
  assert.equal(value.type, 'ERROR');
  assert.equal(value.error.statusCode, 0);
  assert.match(logger.warnings()[0], /admits no streams now \(SETTINGS_MAX_CONCURRENT_STREAMS = 0\)/);

  sim.http2.setLimit(5);
  await until(() => poolOf(watcher, sim).connections.some((c) => c.streamLimit === 5), {
    ms: 5000,
    what: 'the new limit',
  });
  const later = start('zero', 2);
  await everyWatchSeesAChange(sim, later, 'zero', 'after-zero');
});
