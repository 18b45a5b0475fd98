'use strict';
// Hostile networks: silent TLS peers, servers that go away mid-stream, oversized lines arriving
// slowly, and one stalled consumer sharing an HTTP/2 connection with a healthy watch.

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { createSimulator } = require('../packages/kube-watch-native/sim');
const certs = require('../packages/kube-watch-native/sim/certs');
const { toSpec } = require('../packages/kube-watch-native/lib/watcher');
const { paramsFor, collect, watcherWithLogger, pod, TOKEN } = require('./helpers');
const { socketInodes } = require('../testbed/proc');
const { sleep, within } = require('../testbed/wait');

const caData = Buffer.from(certs.ca).toString('base64');
const line = (type, name, rv, extra = {}) =>
  JSON.stringify({ type, object: { metadata: { name, resourceVersion: String(rv) }, ...extra } });

test('abort during the TLS handshake (peer accepts TCP, never answers) closes the socket within a second', async () => {
  const sockets = new Set();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    // Read (and drop) the ClientHello: a paused socket would never see the client's FIN.
    socket.resume();
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { watcher } = watcherWithLogger();
    const controller = new AbortController();
    const url = `https://127.0.0.1:${server.address().port}`;
    const gen = watcher.watchResource(paramsFor({ url }, { clusterDetails: { caData } }), {
      signal: controller.signal,
    });
    const pending = gen.next();
    const deadline = performance.now() + 2000;
    while (sockets.size === 0 && performance.now() < deadline) await sleep(10);
    assert.equal(sockets.size, 1, 'the client connected and is handshaking');
    const abortedAt = Date.now();
    controller.abort();
    assert.deepEqual(await pending, { done: true, value: undefined }, 'no ERROR after an abort');
    while (sockets.size > 0 && Date.now() - abortedAt < 1000) await sleep(10);
    assert.equal(sockets.size, 0, 'the socket closed within a second of the abort');
  } finally {
    server.close();
  }
});

/**
 * This process's client sockets to `port` still in SYN_SENT, from /proc/net/tcp (which lists
 * every process's: on a shared machine another one's connects must not count).
 */
function synSentTo(port) {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const own = socketInodes();
  return fs
    .readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((cols) => cols[2]?.endsWith(`:${hexPort}`) && cols[3] === '02' && own.has(cols[9])).length;
}

test('abort while the TCP connect itself hangs ends at once and drops the half-open socket', async () => {
  const listener = spawn('python3', [path.join(__dirname, 'fixtures/hostile/no-accept.py')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  try {
    const port = Number(await new Promise((resolve) => listener.stdout.once('data', resolve)));
    const filler = net.connect(port, '127.0.0.1'); // fills the backlog of one
    filler.on('error', () => {});
    await new Promise((resolve) => filler.once('connect', resolve));
    const { watcher, logger } = watcherWithLogger();
    const controller = new AbortController();
    const gen = watcher.watchResource(paramsFor({ url: `http://127.0.0.1:${port}` }), {
      signal: controller.signal,
    });
    const pending = gen.next();
    const deadline = performance.now() + 2000;
    while (synSentTo(port) === 0 && performance.now() < deadline) await sleep(10);
    assert.equal(synSentTo(port), 1, 'the watch is stuck in connect()');
    const abortedAt = Date.now();
    controller.abort();
    assert.deepEqual(await pending, { done: true, value: undefined });
    assert.ok(Date.now() - abortedAt < 1000, 'ended within a second');
    while (synSentTo(port) > 0 && Date.now() - abortedAt < 1000) await sleep(10);
    assert.equal(synSentTo(port), 0, 'the half-open socket is gone');
    assert.deepEqual(logger.warnings(), [], 'nothing is reported after an abort');
    filler.destroy();
  } finally {
    listener.kill();
  }
});

test('a server shutting down mid-stream gives the events before it, then one SYSTEM_ERROR 0', async () => {
  const sim = await createSimulator({ token: TOKEN });
  sim.create('pods', pod('a'));
  const { watcher, logger } = watcherWithLogger();
  const gen = watcher.watchResource(paramsFor(sim), { namespace: 'default' });
  const first = await gen.next();
  assert.equal(first.value.object.metadata.name, 'a');
  await sim.close();
  const rest = await collect(gen);
  assert.deepEqual(rest, [
    {
      type: 'ERROR',
      error: { errorType: 'SYSTEM_ERROR', statusCode: 0, resourcePath: '/api/v1/namespaces/default/pods' },
    },
  ]);
  assert.equal(logger.warnings().length, 1);
});

test('a 429 with Retry-After is reported as UNKNOWN_ERROR 429 with the body logged', async () => {
  const sim = await createSimulator({ token: TOKEN });
  try {
    sim.nextWatchFault({ status: 429, retryAfterSeconds: 2 });
    const { watcher, logger } = watcherWithLogger();
    const events = await collect(watcher.watchResource(paramsFor(sim), {}));
    assert.deepEqual(events, [
      { type: 'ERROR', error: { errorType: 'UNKNOWN_ERROR', statusCode: 429, resourcePath: '/api/v1/pods' } },
    ]);
    assert.match(logger.warnings()[0], /retryAfterSeconds/);
  } finally {
    await sim.close();
  }
});

test('an endless line is refused at the limit while memory stays bounded', async () => {
  const sim = await createSimulator({ token: TOKEN });
  try {
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    let written = 0;
    sim.nextWatchFault({
      onWatch(ctx) {
        ctx.write('{"type":"ADDED","object":{"pad":"');
        const pump = () => {
          // 128 MiB offered, far past the 16 MiB default limit.
          while (written < 128 * chunk.length && !ctx.res.destroyed) {
            written += chunk.length;
            if (!ctx.write(chunk)) return ctx.res.once('drain', pump);
          }
        };
        pump();
      },
    });
    const rssBefore = process.memoryUsage.rss();
    let peak = rssBefore;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 5);
    const { watcher, logger } = watcherWithLogger();
    const events = await collect(watcher.watchResource(paramsFor(sim), {}), { timeoutMs: 20000 });
    clearInterval(sampler);
    assert.deepEqual(events, [
      { type: 'ERROR', error: { errorType: 'SYSTEM_ERROR', statusCode: 0, resourcePath: '/api/v1/pods' } },
    ]);
    assert.match(logger.warnings()[0], /limit of 16777216 bytes/);
    assert.ok(written < 128 * chunk.length, `the client stopped reading (server wrote ${written >> 20} MiB)`);
    assert.ok(peak - rssBefore < 64 * 1024 * 1024, `RSS grew by ${(peak - rssBefore) >> 20} MiB`);
  } finally {
    await sim.close();
  }
});

test('an idle limit too long for a Duration (1e300 s) is no limit: the watch runs, no panic', async () => {
  const sim = await createSimulator({ token: TOKEN });
  sim.create('pods', pod('a'));
  const { watcher } = watcherWithLogger();
  const gen = watcher.watchResource(paramsFor(sim), { namespace: 'default', idleTimeoutSeconds: 1e300 });
  const first = await gen.next();
  assert.equal(first.value.object.metadata.name, 'a');
  await gen.return();
  await sim.close();
});

test('the idle limit defaults on with bookmarks (180 s), off without, and 0 turns it off', () => {
  const params = paramsFor({ url: 'http://127.0.0.1:1' });
  assert.equal(toSpec(params, { allowWatchBookmarks: true }).idleTimeoutSeconds, 180);
  assert.equal(toSpec(params, {}).idleTimeoutSeconds, undefined);
  assert.equal(
    toSpec(params, { allowWatchBookmarks: true, idleTimeoutSeconds: 0 }).idleTimeoutSeconds,
    undefined,
  );
  assert.equal(toSpec(params, { idleTimeoutSeconds: 5 }).idleTimeoutSeconds, 5);
});

test(
  'over HTTP/2, stalled consumers do not delay a healthy watch sharing their connection',
  { timeout: 60000 },
  async () => {
    const sim = await createSimulator({ tls: true, http2: true, token: TOKEN });
    const big = 'x'.repeat(100 * 1024);
    const offered = [];
    const stallers = [];
    try {
      // A fresh pool key (localhost rather than 127.0.0.1) so the watches share one new client.
      const params = paramsFor(sim, { clusterDetails: { url: `https://localhost:${sim.port}`, caData } });
      const { watcher } = watcherWithLogger();
      for (let i = 0; i < 3; i++) {
        const state = { written: 0 };
        offered.push(state);
        sim.nextWatchFault({
          onWatch(ctx) {
            let rv = 0;
            const pump = () => {
              while (state.written < 64 * 1024 * 1024 && !ctx.res.destroyed) {
                const text = `${line('ADDED', `big-${rv}`, ++rv, { data: { big } })}\n`;
                state.written += text.length;
                if (!ctx.write(text)) return ctx.res.once('drain', pump);
              }
            };
            pump();
          },
        });
        const gen = watcher.watchResource(params, { namespace: 'stalled' });
        await gen.next(); // take one event, then stop reading
        stallers.push(gen);
      }
      await sleep(1000);
      const plateau = offered.map((s) => s.written);
      assert.ok(
        plateau.every((w) => w < 64 * 1024 * 1024),
        'the stalled streams are flow-controlled',
      );

      const healthy = watcher.watchResource(params, { namespace: 'healthy' });
      const socketIds = new Set(sim.requests.slice(-4).map((r) => r.socketId));
      assert.equal(socketIds.size, 1, 'all four watches share one HTTP/2 connection');
      // Every change reaches the healthy watch while the stalled streams hold whatever
      // connection window they took: a connection-level window they had used up would starve it.
      // The limit bounds that hang only; how fast a busy machine delivers is not checked.
      for (let i = 0; i < 10; i++) {
        sim.create('pods', pod(`h-${i}`, { namespace: 'healthy' }));
        const { value } = await within(healthy.next(), 5000, `healthy event ${i}`);
        assert.equal(value.object.metadata.name, `h-${i}`);
        await sleep(20);
      }
      assert.ok(
        offered.every((s) => s.written < 64 * 1024 * 1024),
        'the stalled streams are still flow-controlled',
      );
      await healthy.return();
    } finally {
      for (const gen of stallers) await gen.return();
      await sim.close();
    }
  },
);
