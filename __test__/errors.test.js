'use strict';
// Errors are data: HTTP statuses, network failures, broken streams, bad lines, oversized
// lines and silent peers each become warnings and at most one ERROR event, never a throw, and
// never lose the events around them. Secrets stay out of every message.

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { useSimulator, paramsFor, collect, watcherWithLogger } = require('./helpers');

let sim;
useSimulator((s) => (sim = s));

const resourcePath = '/api/v1/namespaces/errs/pods';
const errorEvent = (errorType, statusCode) => ({
  type: 'ERROR',
  error: { errorType, statusCode, resourcePath },
});
const line = (type, name, rv) =>
  JSON.stringify({ type, object: { metadata: { name, resourceVersion: String(rv) } } });

async function watchWith(fault, options = {}, paramOverrides = {}) {
  if (fault) sim.nextWatchFault(fault);
  const { watcher, logger } = watcherWithLogger();
  const events = await collect(
    watcher.watchResource(paramsFor(sim, paramOverrides), { namespace: 'errs', ...options }),
    { timeoutMs: 8000 },
  );
  return { events, warnings: logger.warnings() };
}

test('HTTP statuses map to error types and the body is logged', async () => {
  const cases = [
    [400, 'BAD_REQUEST'],
    [401, 'UNAUTHORIZED_ERROR'],
    [403, 'UNKNOWN_ERROR'],
    [404, 'NOT_FOUND'],
    [429, 'UNKNOWN_ERROR'],
    [500, 'SYSTEM_ERROR'],
    [503, 'UNKNOWN_ERROR'],
  ];
  for (const [status, errorType] of cases) {
    const body = {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      message: `marker-${status}`,
      code: status,
    };
    const { events, warnings } = await watchWith({ status, body });
    assert.deepEqual(events, [errorEvent(errorType, status)], `status ${status}`);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], new RegExp(`HTTP ${status}`));
    assert.match(warnings[0], new RegExp(`marker-${status}`), 'the response body is in the warning');
    assert.match(warnings[0], /cluster 'sim'/);
    assert.ok(warnings[0].includes(resourcePath));
  }
});

test('a refused connection is SYSTEM_ERROR 0 with a warning', async () => {
  const port = await new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port: p } = server.address();
      server.close(() => resolve(p));
    });
  });
  const { watcher, logger } = watcherWithLogger();
  const params = paramsFor(sim, { clusterDetails: { url: `http://127.0.0.1:${port}` } });
  const events = await collect(watcher.watchResource(params, { namespace: 'errs' }));
  assert.deepEqual(events, [errorEvent('SYSTEM_ERROR', 0)]);
  assert.match(logger.warnings()[0], /request failed: .*(refused|connect)/i);
});

test('malformed, non-object and invalid UTF-8 lines are warned about and skipped; the stream goes on', async () => {
  const { events, warnings } = await watchWith({
    rawLines: [
      line('ADDED', 'a', 1),
      '{"type":"ADDED","object":',
      '[1,2,3]',
      '"just a string"',
      '{"object":{"metadata":{"name":"no-type"}}}',
      '{"type":42,"object":{}}',
      Buffer.from([0x7b, 0x22, 0x74, 0xff, 0xfe, 0x22, 0x7d]),
      line('MODIFIED', 'a', 2),
    ],
    then: 'end',
  });
  assert.deepEqual(
    events.map((e) => `${e.type} ${e.object.metadata.name}`),
    ['ADDED a', 'MODIFIED a'],
  );
  assert.equal(warnings.length, 6, warnings.join('\n'));
  assert.match(warnings[0], /malformed JSON/);
  assert.match(warnings[1], /not a watch event/);
  assert.match(warnings[5], /invalid UTF-8 at byte 3/);
  for (const w of warnings) assert.ok(w.includes(resourcePath) && w.includes("cluster 'sim'"), w);
});

test('an in-stream ERROR without a code is SYSTEM_ERROR 500; the events before it are kept', async () => {
  const { events } = await watchWith({
    rawLines: [line('ADDED', 'a', 1), '{"type":"ERROR","object":{"kind":"Status","message":"boom"}}'],
    then: 'end',
  });
  assert.equal(events[0].type, 'ADDED');
  assert.deepEqual(events.slice(1), [errorEvent('SYSTEM_ERROR', 500)]);
});

test('a clean end of the body ends the iterator without an ERROR', async () => {
  const { events, warnings } = await watchWith({ rawLines: [line('ADDED', 'a', 1)], then: 'end' });
  assert.deepEqual(
    events.map((e) => e.type),
    ['ADDED'],
  );
  assert.deepEqual(warnings, []);
});

for (const then of ['cut', 'truncate', 'reset']) {
  test(`a broken stream (${then}) gives the events before it, then exactly one SYSTEM_ERROR 0`, async () => {
    const { events, warnings } = await watchWith({
      rawLines: [line('ADDED', 'a', 1), line('ADDED', 'b', 2)],
      then,
    });
    assert.deepEqual(
      events.slice(0, 2).map((e) => e.object.metadata.name),
      ['a', 'b'],
    );
    assert.deepEqual(events.slice(2), [errorEvent('SYSTEM_ERROR', 0)]);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /watch stream broke|request failed/);
  });
}

test('the server closing after a partial line is a broken stream, not an event', async () => {
  const { events } = await watchWith({
    onWatch(ctx) {
      ctx.write(`${line('ADDED', 'a', 1)}\n{"type":"ADDED","obj`);
      setTimeout(() => ctx.destroy(), 20);
    },
  });
  assert.deepEqual(
    events.map((e) => e.type),
    ['ADDED', 'ERROR'],
  );
  assert.deepEqual(events[1], errorEvent('SYSTEM_ERROR', 0));
});

test('a line above maxLineBytes ends the watch with SYSTEM_ERROR 0 and a warning naming the limit', async () => {
  const { events, warnings } = await watchWith(
    {
      rawLines: [line('ADDED', 'a', 1), JSON.stringify({ type: 'ADDED', object: { pad: 'x'.repeat(5000) } })],
      then: 'stall',
    },
    { maxLineBytes: 4096 },
  );
  assert.deepEqual(
    events.map((e) => e.type),
    ['ADDED', 'ERROR'],
  );
  assert.deepEqual(events[1], errorEvent('SYSTEM_ERROR', 0));
  assert.match(warnings[0], /limit of 4096 bytes/);
});

test('a silent peer ends the watch with SYSTEM_ERROR 0 after idleTimeoutSeconds', async () => {
  const started = Date.now();
  const { events, warnings } = await watchWith(
    { rawLines: [line('ADDED', 'a', 1)], then: 'stall' },
    { idleTimeoutSeconds: 0.5 },
  );
  const elapsed = Date.now() - started;
  assert.deepEqual(
    events.map((e) => e.type),
    ['ADDED', 'ERROR'],
  );
  assert.deepEqual(events[1], errorEvent('SYSTEM_ERROR', 0));
  assert.match(warnings[0], /idle timeout/);
  assert.ok(elapsed >= 450 && elapsed < 3000, `${elapsed} ms`);
});

test('tokens never appear in warnings or events, whatever the error path', async () => {
  const token = 'SECRET-token-5a1f0c9e77d2';
  const credential = { type: 'bearer token', token };
  const faults = [
    { status: 401, body: { message: `invalid bearer token ${token}` } },
    { status: 302, headers: { location: `http://127.0.0.1:1/?t=${token}` }, body: `redirecting ${token}` },
    { rawLines: [`{"type":"ADDED" ${token}`, `${token}`], then: 'cut' },
  ];
  for (const fault of faults) {
    const { events, warnings } = await watchWith(fault, {}, { credential });
    const text = JSON.stringify(events) + warnings.join('\n');
    assert.ok(warnings.length > 0);
    assert.ok(!text.includes(token), `token leaked: ${text}`);
  }
  const { watcher, logger } = watcherWithLogger();
  const params = paramsFor(sim, { credential, clusterDetails: { url: 'http://127.0.0.1:1' } });
  const events = await collect(watcher.watchResource(params, {}));
  assert.ok(!(JSON.stringify(events) + logger.warnings().join('\n')).includes(token));
});

test('an in-stream ERROR is the last event: nothing after it is read, even if the server goes on', async () => {
  const { events } = await watchWith({
    rawLines: [
      line('ADDED', 'a', 1),
      '{"type":"ERROR","object":{"kind":"Status","reason":"Expired","code":410}}',
      line('ADDED', 'b', 2),
    ],
    then: 'stall',
  });
  assert.deepEqual(
    events.map((e) => e.type),
    ['ADDED', 'ERROR'],
    JSON.stringify(events),
  );
  assert.deepEqual(events[1], errorEvent('UNKNOWN_ERROR', 410));
  assert.ok(await sim.waitForSocketsClosed(1000), 'the connection is closed');
});

test('a logger that throws does not turn a warning into a thrown watch', async () => {
  sim.nextWatchFault({ rawLines: ['{broken', line('ADDED', 'a', 1)], then: 'end' });
  const { NativeKubernetesWatcher } = require('kube-watch-native');
  const calls = [];
  const logger = {
    warn: (message) => {
      calls.push(message);
      throw new Error('logger down');
    },
    error() {},
  };
  const watcher = new NativeKubernetesWatcher({ logger });
  const events = await collect(watcher.watchResource(paramsFor(sim), { namespace: 'errs' }));
  assert.deepEqual(
    events.map((e) => e.type),
    ['ADDED'],
  );
  assert.equal(calls.length, 1);
});
