'use strict';

// The simulated API server's fault injection, driven with plain Node clients (not the native
// addon): the misbehaviour the hostile-network tests of the watcher rely on.

const test = require('node:test');
const assert = require('node:assert/strict');
const https = require('node:https');
const http2 = require('node:http2');
const net = require('node:net');
const zlib = require('node:zlib');
const path = require('node:path');
const { watchRequest, rawGet } = require('../packages/kube-watch-native/sim/client');

const { pod, delay, sim, get } = require('./sim-helpers');
const { until } = require('../testbed/wait');

test('fault writeMode: byte, split, coalesce and the default one-event-per-chunk', async (t) => {
  const s = await sim(t);
  s.create('pods', { metadata: { name: 'a', annotations: { note: 'grüße ✓ 🚀' } } });
  s.create('pods', pod('b'));
  s.create('pods', pod('c'));
  const path = '/api/v1/pods?watch=true&timeoutSeconds=0.3';
  const normal = await rawGet(s.port, path);
  assert.equal(normal.chunks.length, 3);
  assert.ok(
    normal.chunks.every((c) => c.toString().endsWith('\n') && JSON.parse(c.toString()).type === 'ADDED'),
  );
  s.nextWatchFault({ writeMode: 'byte' });
  const bytes = await rawGet(s.port, path);
  assert.equal(bytes.chunks.length, normal.body.length, 'one chunk per byte');
  assert.ok(bytes.chunks.every((c) => c.length === 1));
  assert.ok(
    bytes.chunks.some((c) => c[0] >= 0x80),
    'multi-byte characters are split across chunks',
  );
  assert.deepEqual(bytes.body, normal.body);
  s.nextWatchFault({ writeMode: 'split', splitAt: 5 });
  const split = await rawGet(s.port, path);
  assert.equal(split.chunks.length, 6);
  assert.equal(split.chunks[0].toString(), '{"typ');
  assert.deepEqual(split.body, normal.body);
  s.nextWatchFault({ writeMode: 'coalesce' });
  const co = await rawGet(s.port, path);
  assert.equal(co.chunks.length, 1, 'three events in one chunk');
  assert.deepEqual(co.body, normal.body);
});

test('fault lineEnding and rawLines are written verbatim before the events', async (t) => {
  const s = await sim(t);
  s.create('pods', pod('a'));
  const path = '/api/v1/pods?watch=true&timeoutSeconds=0.2';
  s.nextWatchFault({ lineEnding: '\r\n', rawLines: ['{"broken', '', Buffer.from([0xff, 0xfe])] });
  const r = await rawGet(s.port, path);
  const body = r.body;
  assert.deepEqual(body.subarray(0, 13), Buffer.from('{"broken\r\n\r\n\xff', 'latin1'));
  assert.ok(body.toString('latin1').endsWith('}}\r\n'));
  s.nextWatchFault({ rawLines: ['{"type":"ADD'], noNewlineAfterLast: true, then: 'end' });
  const r2 = await rawGet(s.port, path);
  assert.ok(r2.ended);
  assert.match(r2.body.toString(), /^\{"type":"ADD\{"type":"ADDED"/);
});

test('fault then: cut, truncate and reset break the body; end ends it cleanly', async (t) => {
  const s = await sim(t);
  s.create('pods', pod('a'));
  for (const then of ['cut', 'truncate', 'reset']) {
    s.nextWatchFault({ then });
    const w = watchRequest(`${s.url}/api/v1/pods?watch=true`);
    const { complete } = await w.done;
    assert.equal(complete, false, then);
    assert.ok(w.error, `${then} surfaces as a client error`);
    assert.equal(w.events.length, 1, `${then}: initial event delivered first`);
  }
  s.nextWatchFault({ then: 'truncate' });
  const raw = await rawGet(s.port, '/api/v1/pods?watch=true');
  assert.equal(raw.broken, true, 'connection closed inside a chunk');
  s.nextWatchFault({ then: 'end' });
  const end = watchRequest(`${s.url}/api/v1/pods?watch=true`);
  assert.equal((await end.done).complete, true);
  s.nextWatchFault({ cutAfterEvents: 2 });
  const cut = watchRequest(`${s.url}/api/v1/pods?watch=true`);
  await cut.untilEvents(1);
  s.create('pods', pod('b'));
  s.create('pods', pod('c'));
  assert.equal((await cut.done).complete, false);
  assert.equal(cut.events.length, 2);
});

test('fault stall, stallAfterEvents and stallHeaders keep the connection open and silent', async (t) => {
  const s = await sim(t);
  s.create('pods', pod('a'));
  s.nextWatchFault({ stallAfterEvents: 1 });
  const w = watchRequest(`${s.url}/api/v1/pods?watch=true&timeoutSeconds=0.05&allowWatchBookmarks=true`);
  await w.untilEvents(1);
  s.create('pods', pod('b'));
  await delay(150);
  assert.equal(w.events.length, 1, 'nothing after the stall, not even the timeout');
  assert.equal(w.complete, undefined, 'still open');
  s.nextWatchFault({ then: 'stall' });
  const st = watchRequest(`${s.url}/api/v1/pods?watch=true&timeoutSeconds=0.05`);
  await st.untilEvents(2);
  s.create('pods', pod('c'));
  await delay(100);
  assert.equal(st.events.length, 2, 'then: stall writes nothing after the initial events');
  assert.equal(st.complete, undefined);
  st.close();
  await until(() => s.activeWatches() === 1, { ms: 5000, what: 'the closed watch to go at the server' });
  s.nextWatchFault({ stallHeaders: true });
  const h = watchRequest(`${s.url}/api/v1/pods?watch=true`);
  // At the server (beside the stalled watch), then given time to send headers it must not.
  await until(() => s.activeWatches() === 2, { ms: 5000, what: 'the request at the server' });
  await delay(100);
  assert.equal(h.status, null, 'no headers');
  h.close();
  w.close();
  assert.equal(await s.waitForSocketsClosed(1000), true);
  assert.equal(s.activeWatches(), 0);
});

test('fault status answers: 500, 429 with Retry-After, 302 with location, custom body', async (t) => {
  const s = await sim(t);
  s.nextWatchFault({ status: 500 });
  s.nextWatchFault({ status: 429, retryAfterSeconds: 3 });
  s.nextWatchFault({ status: 302, headers: { location: 'http://127.0.0.1:1/elsewhere' } });
  s.nextWatchFault({ status: 403, body: 'plain text' });
  const url = `${s.url}/api/v1/pods?watch=true`;
  const e500 = await get(url);
  assert.deepEqual(
    [e500.status, e500.body.kind, e500.body.reason, e500.body.code],
    [500, 'Status', 'InternalError', 500],
  );
  const e429 = await get(url);
  assert.equal(e429.status, 429);
  assert.equal(e429.headers.get('retry-after'), '3');
  assert.equal(e429.body.details.retryAfterSeconds, 3);
  const e302 = await fetch(url, { redirect: 'manual' });
  assert.equal(e302.status, 302);
  assert.equal(e302.headers.get('location'), 'http://127.0.0.1:1/elsewhere');
  const e403 = await fetch(url);
  assert.equal(e403.status, 403);
  assert.equal(await e403.text(), 'plain text');
  assert.equal((await get(`${url}&timeoutSeconds=0.01`)).status, 200, 'next faults apply once');
  s.setFault({ status: 503 });
  assert.equal((await get(url)).status, 503);
  assert.equal((await get(url)).status, 503, 'setFault persists');
  assert.equal((await get(`${s.url}/api/v1/pods`)).status, 200, 'lists are not faulted');
  s.setFault(null);
  assert.equal((await get(`${url}&timeoutSeconds=0.01`)).status, 200);
  assert.throws(() => s.setFault({ cutAfterEvent: 1 }), /unknown fault option/);
  assert.throws(() => s.nextWatchFault({ then: 'explode' }), /unknown fault.then/);
});

test('fault gzip: Content-Encoding gzip that decodes to the events, flushed per event', async (t) => {
  const s = await sim(t);
  s.create('pods', pod('a'));
  s.nextWatchFault({ gzip: true });
  const w = watchRequest(`${s.url}/api/v1/pods?watch=true`, { headers: { 'accept-encoding': 'gzip' } });
  await w.untilEvents(1);
  assert.equal(w.headers['content-encoding'], 'gzip');
  s.create('pods', pod('b'));
  await w.untilEvents(2, 1000);
  assert.deepEqual(
    w.events.map((e) => e.object.metadata.name),
    ['a', 'b'],
  );
  w.close();
  s.nextWatchFault({ gzip: true });
  const raw = await rawGet(s.port, '/api/v1/pods?watch=true&timeoutSeconds=0.1', {
    headers: { 'accept-encoding': 'gzip' },
  });
  assert.equal(zlib.gunzipSync(raw.body).toString().split('\n').filter(Boolean).length, 2);
  s.nextWatchFault({ gzip: true });
  const plain = await rawGet(s.port, '/api/v1/pods?watch=true&timeoutSeconds=0.1');
  assert.equal(plain.headers['content-encoding'], undefined, 'not for clients that do not accept it');
  assert.equal(JSON.parse(plain.chunks[0]).type, 'ADDED');
});

test('fault delayMs and onWatch', async (t) => {
  const s = await sim(t);
  s.nextWatchFault({ delayMs: 150 });
  const started = Date.now();
  assert.equal((await get(`${s.url}/api/v1/pods?watch=true&timeoutSeconds=0.01`)).status, 200);
  assert.ok(Date.now() - started >= 140);
  s.nextWatchFault({
    onWatch(ctx) {
      assert.equal(ctx.query.watch, 'true');
      ctx.write('{"type":"ADDED","object":{"metadata":{"name":"custom"}}}\n');
      ctx.end();
    },
  });
  const w = watchRequest(`${s.url}/api/v1/pods?watch=true`);
  await w.done;
  assert.deepEqual(
    w.events.map((e) => e.object.metadata.name),
    ['custom'],
  );
});
