'use strict';

// The simulated API server, driven with plain Node clients (not the native addon): the
// wire behaviour every other test relies on.

const test = require('node:test');
const assert = require('node:assert/strict');
const https = require('node:https');
const http2 = require('node:http2');
const net = require('node:net');
const zlib = require('node:zlib');
const { spawn } = require('node:child_process');
const path = require('node:path');
const {
  createSimulator,
  Simulator,
  startWorkload,
  resourceKey,
  certs,
} = require('../packages/kube-watch-native/sim');
const { watchRequest, rawGet } = require('../packages/kube-watch-native/sim/client');
const { parseSelector, compileSelector } = require('../packages/kube-watch-native/sim/selector');

const { pod, delay, sim, get } = require('./sim-helpers');
const { until } = require('../testbed/wait');
// Changes a default-namespace pod's labels in place (the callback's result is ignored).
const relabel = (s, name, change) => s.patch('pods', 'default', name, (p) => void change(p.metadata.labels));

test('initial ADDED, then live ADDED/MODIFIED/DELETED in order with increasing resourceVersions', async (t) => {
  const s = await sim(t);
  s.create('pods', pod('b'));
  s.create('pods', pod('a'));
  const w = watchRequest(`${s.url}/api/v1/pods?watch=true`);
  await w.untilEvents(2);
  assert.equal(w.status, 200);
  assert.equal(w.headers['content-type'], 'application/json');
  assert.equal(w.headers['transfer-encoding'], 'chunked');
  assert.deepEqual(
    w.events.map((e) => [e.type, e.object.metadata.name]),
    [
      ['ADDED', 'a'],
      ['ADDED', 'b'],
    ],
  );
  assert.equal(w.events[0].object.kind, 'Pod');
  assert.equal(w.events[0].object.apiVersion, 'v1');
  s.create('pods', pod('c'));
  s.patch('pods', 'default', 'c', (p) => ({ ...p, status: { phase: 'Running' } }));
  const removed = s.remove('pods', 'default', 'c');
  await w.untilEvents(5);
  assert.deepEqual(
    w.events.slice(2).map((e) => e.type),
    ['ADDED', 'MODIFIED', 'DELETED'],
  );
  const rvs = w.events.slice(2).map((e) => Number(e.object.metadata.resourceVersion));
  assert.ok(rvs[0] < rvs[1] && rvs[1] < rvs[2], `increasing: ${rvs}`);
  assert.equal(w.events[4].object.status.phase, 'Running', 'DELETED carries the last state');
  assert.equal(w.events[4].object.metadata.resourceVersion, removed.metadata.resourceVersion);
  assert.equal(s.resourceVersion, removed.metadata.resourceVersion);
  assert.equal(s.activeWatches(), 1);
  w.close();
});

test('megabyte objects travel as one intact line', async (t) => {
  const s = await sim(t);
  const big = 'é'.repeat(1.5 * 1024 * 1024);
  s.create('pods', { metadata: { name: 'big', annotations: { big } } });
  const w = watchRequest(`${s.url}/api/v1/pods?watch=true`);
  await w.untilEvents(1, 5000);
  assert.equal(w.events[0].object.metadata.annotations.big, big);
  assert.ok(w.chunks > 1, 'spread over many reads');
  w.close();
});

test('a watch from a resourceVersion replays the history after it', async (t) => {
  const s = await sim(t);
  s.create('pods', pod('a'));
  const rv = s.resourceVersion;
  s.create('pods', pod('b'));
  relabel(s, 'a', (l) => (l.x = '1'));
  s.create('configmaps', { metadata: { name: 'other-type' } });
  const w = watchRequest(`${s.url}/api/v1/pods?watch=1&resourceVersion=${rv}`);
  await w.untilEvents(2);
  s.remove('pods', 'default', 'b');
  await w.untilEvents(3);
  assert.deepEqual(
    w.events.map((e) => `${e.type} ${e.object.metadata.name}`),
    ['ADDED b', 'MODIFIED a', 'DELETED b'],
  );
  w.close();
});

test('an expired resourceVersion is answered 200 + one 410 ERROR event, then the end', async (t) => {
  const s = await sim(t);
  s.create('pods', pod('a'));
  const old = Number(s.resourceVersion) - 1;
  s.compact();
  const w = watchRequest(`${s.url}/api/v1/pods?watch=true&resourceVersion=${old}`);
  const { complete } = await w.done;
  assert.equal(w.status, 200);
  assert.ok(complete, 'the stream ends cleanly');
  assert.equal(w.lines.length, 1);
  assert.deepEqual(JSON.parse(w.lines[0]), {
    type: 'ERROR',
    object: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `too old resource version: ${old} (${s.resourceVersion})`,
      reason: 'Expired',
      code: 410,
    },
  });
  // The current version is still fine after compact().
  const ok = watchRequest(`${s.url}/api/v1/pods?watch=true&resourceVersion=${s.resourceVersion}`);
  await ok.response;
  s.create('pods', pod('b'));
  await ok.untilEvents(1);
  assert.equal(ok.events[0].type, 'ADDED');
  ok.close();
});

test('history beyond historyLimit expires; non-numeric versions are 400', async (t) => {
  const s = await sim(t, { historyLimit: 2 });
  const first = s.create('pods', pod('a')).metadata.resourceVersion;
  for (const n of ['b', 'c', 'd']) s.create('pods', pod(n));
  const w = watchRequest(`${s.url}/api/v1/pods?watch=true&resourceVersion=${first}`);
  await w.done;
  assert.equal(w.events[0].object.code, 410);
  const kept = watchRequest(`${s.url}/api/v1/pods?watch=true&resourceVersion=${Number(first) + 1}`);
  await kept.untilEvents(2);
  assert.deepEqual(
    kept.events.map((e) => e.object.metadata.name),
    ['c', 'd'],
  );
  kept.close();
  const bad = await get(`${s.url}/api/v1/pods?watch=true&resourceVersion=abc`);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.kind, 'Status');
  assert.equal(bad.body.reason, 'BadRequest');
});

test('sendInitialEvents: 422 without NotOlderThan, else ADDED + initial-events-end bookmark', async (t) => {
  const s = await sim(t);
  s.create('pods', pod('a'));
  const bad = await get(`${s.url}/api/v1/pods?watch=true&sendInitialEvents=true&allowWatchBookmarks=true`);
  assert.equal(bad.status, 422);
  assert.equal(bad.body.reason, 'Invalid');
  assert.equal(bad.body.code, 422);
  assert.match(bad.body.message, /sendInitialEvents requires setting resourceVersionMatch to NotOlderThan/);
  const w = watchRequest(
    `${s.url}/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`,
  );
  await w.untilEvents(2);
  assert.equal(w.events[0].type, 'ADDED');
  assert.deepEqual(w.events[1], {
    type: 'BOOKMARK',
    object: {
      kind: 'Pod',
      apiVersion: 'v1',
      metadata: { resourceVersion: s.resourceVersion, annotations: { 'k8s.io/initial-events-end': 'true' } },
    },
  });
  s.create('pods', pod('b'));
  await w.untilEvents(3);
  assert.equal(w.events[2].object.metadata.name, 'b');
  w.close();
});

test('periodic bookmarks only when allowWatchBookmarks=true', async (t) => {
  const s = await sim(t, { bookmarkIntervalMs: 40 });
  const w = watchRequest(`${s.url}/api/v1/pods?watch=true&allowWatchBookmarks=true`);
  const plain = watchRequest(`${s.url}/api/v1/pods?watch=true`);
  await w.untilEvents(2);
  s.create('pods', pod('a'));
  await w.until(() => w.events.filter((e) => e.type === 'BOOKMARK').length >= 3);
  const last = w.events.filter((e) => e.type === 'BOOKMARK').pop();
  assert.deepEqual(last.object, {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: { resourceVersion: s.resourceVersion },
  });
  await plain.untilEvents(1);
  assert.deepEqual(
    plain.events.map((e) => e.type),
    ['ADDED'],
  );
  w.close();
  plain.close();
});

test('label selectors filter, and label changes become DELETED / ADDED', async (t) => {
  const s = await sim(t);
  s.create('pods', pod('web-1', { app: 'web' }));
  s.create('pods', pod('db-1', { app: 'db' }));
  const w = watchRequest(
    `${s.url}/api/v1/pods?watch=true&labelSelector=${encodeURIComponent('app in (web),!canary')}`,
  );
  await w.untilEvents(1);
  relabel(s, 'web-1', (l) => (l.tier = 'fe'));
  relabel(s, 'web-1', (l) => (l.canary = 'true'));
  relabel(s, 'db-1', (l) => (l.app = 'web'));
  relabel(s, 'web-1', (l) => delete l.canary);
  await w.untilEvents(5);
  assert.deepEqual(
    w.events.map((e) => `${e.type} ${e.object.metadata.name}`),
    ['ADDED web-1', 'MODIFIED web-1', 'DELETED web-1', 'ADDED db-1', 'ADDED web-1'],
  );
  // DELETED for "stopped matching" shows the last matching state with the event's version.
  assert.equal(w.events[2].object.metadata.labels.canary, undefined);
  assert.ok(
    Number(w.events[2].object.metadata.resourceVersion) > Number(w.events[1].object.metadata.resourceVersion),
  );
  w.close();
  const list = await get(`${s.url}/api/v1/pods?labelSelector=app%3Dweb`);
  assert.deepEqual(
    list.body.items.map((p) => p.metadata.name),
    ['db-1', 'web-1'],
  );
  const bad = await get(`${s.url}/api/v1/pods?watch=true&labelSelector=${encodeURIComponent('app in web')}`);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.kind, 'Status');
});

test('selector grammar', () => {
  assert.deepEqual(
    parseSelector('a=1,b==2,c!=3').map((r) => r.op),
    ['=', '=', '!='],
  );
  const f = compileSelector('env in (prod, staging),tier notin (db),team,!legacy');
  assert.equal(f({ env: 'prod', team: 'x' }), true);
  assert.equal(f({ env: 'dev', team: 'x' }), false);
  assert.equal(f({ env: 'prod', team: 'x', tier: 'db' }), false);
  assert.equal(f({ env: 'prod' }), false);
  assert.equal(f({ env: 'prod', team: 'x', legacy: '' }), false);
  assert.equal(compileSelector('x!=1')({}), true, 'a missing label satisfies !=');
  for (const bad of ['a b', 'a in (b', '=x', 'a=b=c', 'a in b', '-a=1'])
    assert.throws(() => parseSelector(bad), /unable to parse/, bad);
});

test('timeoutSeconds ends the response cleanly', async (t) => {
  const s = await sim(t);
  const started = Date.now();
  const w = watchRequest(`${s.url}/api/v1/pods?watch=true&timeoutSeconds=0.2`);
  const { complete } = await w.done;
  assert.ok(complete);
  assert.ok(Date.now() - started >= 180, 'not before the timeout');
  // Soon, as against the default of 30 to 60 minutes; generous, as a busy machine is slow.
  assert.ok(Date.now() - started < 5000, 'soon after the timeout');
  const raw = await rawGet(s.port, '/api/v1/pods?watch=true&timeoutSeconds=0.1');
  assert.equal(raw.ended, true, 'terminating chunk sent');
});

test('routing: list, get, version, discovery and 404/405 Status bodies', async (t) => {
  const s = await sim(t);
  s.create('pods', pod('a', {}, 'ns1'));
  s.create('apps/v1/deployments', { metadata: { name: 'd' } });
  s.defineResource('example.com/v1/widgets', { namespaced: false });
  s.create('example.com/v1/widgets', { metadata: { name: 'w' } });
  const list = await get(`${s.url}/api/v1/namespaces/ns1/pods`);
  assert.equal(list.body.kind, 'PodList');
  assert.equal(list.body.metadata.resourceVersion, s.resourceVersion);
  assert.equal(list.body.items[0].kind, undefined, 'list items carry no kind');
  assert.equal((await get(`${s.url}/api/v1/namespaces/other/pods`)).body.items.length, 0);
  assert.equal((await get(`${s.url}/api/v1/namespaces/ns1/pods/a`)).body.kind, 'Pod');
  assert.equal(
    (await get(`${s.url}/apis/apps/v1/namespaces/default/deployments`)).body.kind,
    'DeploymentList',
  );
  assert.equal((await get(`${s.url}/apis/example.com/v1/widgets/w`)).body.metadata.name, 'w');
  assert.equal((await get(`${s.url}/version`)).body.major, '1');
  assert.equal((await get(`${s.url}/api`)).body.kind, 'APIVersions');
  const missing = await get(`${s.url}/api/v1/namespaces/ns1/pods/zzz`);
  assert.equal(missing.status, 404);
  assert.equal(missing.body.message, 'pods "zzz" not found');
  // A group nobody serves gets the API server's plain-text fallback 404, not a Status.
  const unserved = await fetch(`${s.url}/apis/nope/v1/things?watch=1`);
  assert.equal(unserved.status, 404);
  assert.equal(await unserved.text(), '404 page not found\n');
  for (const p of [
    '/api/v1/widgets?watch=true',
    '/nothing',
    '/api/v1/namespaces/x/widgets',
    '/apis/example.com/v1/namespaces/x/widgets',
  ]) {
    const r = await get(s.url + p);
    assert.equal(r.status, 404, p);
    assert.deepEqual(
      [r.body.kind, r.body.status, r.body.reason, r.body.code],
      ['Status', 'Failure', 'NotFound', 404],
      p,
    );
  }
  const post = await get(`${s.url}/api/v1/pods`, { method: 'POST', body: '{}' });
  assert.equal(post.status, 405);
  assert.equal(post.body.reason, 'MethodNotAllowed');
  assert.equal(resourceKey('core/v1/pods'), 'pods');
  assert.equal(resourceKey({ apiVersion: 'apps/v1', plural: 'deployments' }), 'apps/v1/deployments');
  assert.equal(s.get('nodes', undefined, 'x'), undefined);
  assert.throws(() => s.create('pods', pod('a', {}, 'ns1')), /already exists/);
});

test('cluster-scoped resources and namespace filtering of watches', async (t) => {
  const s = await sim(t);
  s.create('nodes', { metadata: { name: 'n1', namespace: 'ignored' } });
  assert.equal(s.get('nodes', undefined, 'n1').metadata.namespace, undefined);
  const nodes = watchRequest(`${s.url}/api/v1/nodes?watch=true`);
  const ns = watchRequest(`${s.url}/api/v1/namespaces/web/pods?watch=true`);
  await nodes.untilEvents(1);
  await ns.response;
  s.create('pods', pod('x', {}, 'default'));
  s.create('pods', pod('y', {}, 'web'));
  await ns.untilEvents(1);
  await delay(30);
  assert.deepEqual(
    ns.events.map((e) => e.object.metadata.name),
    ['y'],
  );
  assert.equal(nodes.events.length, 1);
  nodes.close();
  ns.close();
});

test('bearer token auth: missing or wrong token is 401 Status', async (t) => {
  const s = await sim(t, { token: 'sekret' });
  const none = await get(`${s.url}/api/v1/pods`);
  assert.equal(none.status, 401);
  assert.deepEqual(none.body, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'Unauthorized',
    reason: 'Unauthorized',
    code: 401,
  });
  assert.equal(
    (await get(`${s.url}/api/v1/pods`, { headers: { authorization: 'Bearer wrong' } })).status,
    401,
  );
  assert.equal(
    (
      await get(`${s.url}/api/v1/pods?watch=true&timeoutSeconds=0.01`, {
        headers: { authorization: 'Bearer wrong' },
      })
    ).status,
    401,
  );
  assert.equal(
    (await get(`${s.url}/api/v1/pods`, { headers: { authorization: 'Bearer sekret' } })).status,
    200,
  );
  assert.equal(s.requests.at(-1).headers.authorization, 'Bearer sekret');
  s.nextWatchFault({ status: 503 });
  const watchUrl = `${s.url}/api/v1/pods?watch=true&timeoutSeconds=0.01`;
  const wrong = { headers: { authorization: 'Bearer wrong' } };
  assert.equal((await get(watchUrl, wrong)).status, 503, 'faults apply before authentication');
  assert.equal((await get(watchUrl, wrong)).status, 401, 'and were used up by that request');
});

function httpsOutcome(url, options) {
  return new Promise((resolve) => {
    const req = https.get(url, { agent: false, ...options }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode }));
    });
    req.on('error', (err) => resolve({ error: err }));
  });
}

test('HTTPS with client certificates: only certs from the test CA get through', async (t) => {
  const s = await sim(t, { tls: true, requireClientCert: true, token: 'tok' });
  assert.match(s.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  const ok = await httpsOutcome(`${s.url}/api/v1/pods`, {
    ca: certs.ca,
    cert: certs.client,
    key: certs.clientKey,
  });
  assert.equal(ok.status, 200, 'a client cert authenticates without a token');
  assert.equal(s.requests.at(-1).clientCertCN, 'test-user');
  const before = s.requests.length;
  const noCert = await httpsOutcome(`${s.url}/api/v1/pods`, { ca: certs.ca });
  assert.ok(noCert.error, 'no client cert: handshake fails');
  const other = await httpsOutcome(`${s.url}/api/v1/pods`, {
    ca: certs.ca,
    cert: certs.otherClient,
    key: certs.otherClientKey,
  });
  assert.ok(other.error, 'cert from another CA: handshake fails');
  const wrongCa = await httpsOutcome(`${s.url}/api/v1/pods`, {
    ca: certs.otherCa,
    cert: certs.client,
    key: certs.clientKey,
  });
  assert.ok(wrongCa.error, 'server not trusted under the other CA');
  assert.equal(s.requests.length, before, 'no rejected request reached the API');
  assert.equal(
    (
      await httpsOutcome(`https://localhost:${s.port}/version`, {
        ca: certs.ca,
        cert: certs.client,
        key: certs.clientKey,
      })
    ).status,
    200,
  );
});

test('TLS + http2 negotiates h2 or http/1.1 on the same port', async (t) => {
  const s = await sim(t, { tls: true, http2: true });
  s.create('pods', pod('a'));
  const h2 = watchRequest(`${s.url}/api/v1/pods?watch=true`, { http2: true, ca: certs.ca });
  await h2.untilEvents(1);
  assert.equal(s.requests.at(-1).http2, true);
  s.create('pods', pod('b'));
  await h2.untilEvents(2);
  h2.close();
  const h1 = watchRequest(`${s.url}/api/v1/pods?watch=true&timeoutSeconds=0.05`, { ca: certs.ca });
  await h1.done;
  assert.equal(h1.events.length, 2);
  assert.equal(s.requests.at(-1).http2, false);
  s.nextWatchFault({ then: 'truncate' });
  const broken = watchRequest(`${s.url}/api/v1/pods?watch=true`, { http2: true, ca: certs.ca });
  assert.equal((await broken.done).complete, false, 'truncation resets the h2 stream');
  assert.equal(broken.events.length, 2);
  assert.throws(() => new Simulator({ http2: true }), /needs tls/);
  assert.throws(() => new Simulator({ tokn: 'x' }), /unknown simulator option/);
});

test('pathPrefix: the API lives under it, requests without it are 404', async (t) => {
  const s = await sim(t, { pathPrefix: '/k8s/clusters/c-1' });
  assert.equal(s.url, `${s.origin}/k8s/clusters/c-1`);
  assert.equal((await get(`${s.url}/api/v1/pods`)).status, 200);
  const bare = await get(`${s.origin}/api/v1/pods`);
  assert.equal(bare.status, 404);
  assert.equal(bare.body.kind, 'Status');
  assert.equal(s.requests.at(-1).path, '/api/v1/pods');
});

test('requests are recorded with the query parameters that were present', async (t) => {
  const s = await sim(t);
  const seen = [];
  s.on('request', (r) => seen.push(r));
  const started = new Promise((resolve) => s.once('watchStart', resolve));
  const w = watchRequest(
    `${s.url}/api/v1/namespaces/a%20b/pods?watch=true&labelSelector=&allowWatchBookmarks=true`,
    { headers: { 'x-test': '1' } },
  );
  const info = await started;
  assert.equal(info.resource, 'pods');
  assert.equal(info.namespace, 'a b');
  const r = s.requests[0];
  assert.equal(seen[0], r);
  assert.deepEqual(r.query, { watch: 'true', labelSelector: '', allowWatchBookmarks: 'true' });
  assert.equal(r.path, '/api/v1/namespaces/a%20b/pods');
  assert.equal(r.method, 'GET');
  assert.equal(r.headers['x-test'], '1');
  assert.equal(r.http2, false);
  assert.equal(r.clientCertCN, null);
  w.close();
});

test('socket lifecycle is observable', async (t) => {
  const s = await sim(t);
  const closed = [];
  s.on('socketClose', (id) => closed.push(id));
  const w = watchRequest(`${s.url}/api/v1/pods?watch=true`);
  await w.response;
  assert.equal(s.openSockets(), 1);
  assert.equal(s.activeWatches(), 1);
  const socketId = s.requests[0].socketId;
  w.close();
  assert.equal(await s.waitForSocketsClosed(1000), true);
  assert.deepEqual(closed, [socketId]);
  assert.equal(s.activeWatches(), 0);
  const raw = net.connect(s.port, '127.0.0.1');
  await new Promise((r) => raw.on('connect', r));
  // The client's 'connect' may come before the server has accepted the socket.
  await until(() => s.openSockets() === 1, { ms: 5000, what: 'the server to accept the socket' });
  assert.equal(await s.waitForSocketsClosed(50), false, 'times out while a socket is open');
  raw.destroy();
  assert.equal(await s.waitForSocketsClosed(1000), true);
});

test('close() drops connections, stops listening and is idempotent', async (t) => {
  const s = await createSimulator({ bookmarkIntervalMs: 10 });
  const w = watchRequest(`${s.url}/api/v1/pods?watch=true&allowWatchBookmarks=true`);
  await w.untilEvents(1);
  await Promise.all([s.close(), s.close()]);
  assert.equal((await w.done).complete, false);
  assert.equal(s.openSockets(), 0);
  assert.equal(s.activeWatches(), 0);
  const refused = await new Promise((resolve) =>
    net
      .connect(s.port, '127.0.0.1')
      .on('error', resolve)
      .on('connect', () => resolve(null)),
  );
  assert.equal(refused && refused.code, 'ECONNREFUSED');
});

test('a process using the simulator exits once close() resolves', async () => {
  const script = `
    const { createSimulator, startWorkload } = require(${JSON.stringify(path.join(__dirname, '..', 'packages', 'kube-watch-native', 'sim'))});
    const http = require('http');
    (async () => {
      const s = await createSimulator({ bookmarkIntervalMs: 20 });
      startWorkload(s, { intervalMs: 10 });
      s.nextWatchFault({ delayMs: 60000 });
      http.get(s.url + '/api/v1/pods?watch=true').on('error', () => {});
      await new Promise((r) => http.get(s.url + '/api/v1/pods?watch=true&allowWatchBookmarks=true', r).on('error', () => {}));
      await new Promise((r) => setTimeout(r, 100));
      await s.close();
      console.log('closed');
    })();`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const code = await new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve('timeout');
      // Bounds a hang only: a node start-up alone can take seconds on a busy machine.
    }, 15000);
    child.on('exit', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  assert.equal(code, 0, 'exited by itself');
  assert.equal(out.trim(), 'closed');
});

test('workload creates, updates and deletes realistic pods', async (t) => {
  const s = await sim(t);
  const w = watchRequest(`${s.url}/api/v1/pods?watch=true`);
  await w.response;
  const load = startWorkload(s, { intervalMs: 60000, namespaces: ['default', 'web'], seed: 7 });
  for (let i = 0; i < 200; i++) load.tick();
  load.stop();
  await w.until(() => new Set(w.events.map((e) => e.type)).size === 3, 2000, 'all three event types');
  const p = w.events[0].object;
  assert.deepEqual([p.kind, p.apiVersion], ['Pod', 'v1']);
  assert.ok(
    p.metadata.uid && p.metadata.creationTimestamp && p.metadata.labels.app && p.metadata.annotations,
  );
  assert.equal(p.metadata.ownerReferences[0].controller, true);
  assert.ok(p.spec.containers.length >= 1);
  assert.ok(w.events.some((e) => e.object.status.phase === 'Running' && e.object.status.podIP));
  assert.ok(w.events.some((e) => e.object.status.phase === 'Succeeded'));
  assert.deepEqual(new Set(w.events.map((e) => e.object.metadata.namespace)), new Set(['default', 'web']));
  assert.ok(s.get('namespaces', undefined, 'web'), 'namespaces exist too');
  w.close();
});

test('tokens: 401 for an unknown token, RBAC 403 as kube-apiserver words it, before routing', async (t) => {
  const s = await sim(t, {
    tokens: {
      admin: { user: 'system:admin' },
      team: { user: 'system:serviceaccount:team:viewer', rules: [{ namespaces: ['team'] }] },
      pods: { user: 'pods-reader', rules: [{ resources: ['pods', 'apps/deployments'] }] },
    },
  });
  s.create('pods', { metadata: { name: 'a', namespace: 'team' } });
  const as = (token, path) => get(`${s.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal((await as('nobody', '/api/v1/pods')).status, 401);
  assert.equal((await get(`${s.url}/api/v1/pods`)).status, 401, 'no token at all');
  assert.equal((await as('admin', '/api/v1/pods')).body.items.length, 1);
  const clusterWide = await as('team', '/api/v1/pods');
  assert.equal(clusterWide.status, 403);
  assert.equal(
    clusterWide.body.message,
    'pods is forbidden: User "system:serviceaccount:team:viewer" cannot list resource "pods" in API group "" at the cluster scope',
  );
  assert.equal(clusterWide.body.reason, 'Forbidden');
  assert.deepEqual(clusterWide.body.details, { kind: 'pods' });
  assert.equal((await as('team', '/api/v1/namespaces/team/pods')).status, 200);
  const other = await as('team', '/api/v1/namespaces/other/configmaps');
  assert.match(
    other.body.message,
    /cannot list resource "configmaps" in API group "" in the namespace "other"$/,
  );
  // Watches too, with their verb; a group/plural rule; refusal comes before the 404 of a missing type.
  const watch = await as('pods', '/api/v1/configmaps?watch=true');
  assert.equal(watch.status, 403);
  assert.match(watch.body.message, /cannot watch resource "configmaps"/);
  assert.equal((await as('pods', '/apis/apps/v1/deployments')).status, 200);
  const missing = await as('pods', '/apis/example.com/v1/gadgets');
  assert.equal(missing.status, 403);
  assert.deepEqual(missing.body.details, { group: 'example.com', kind: 'gadgets' });
  assert.equal((await as('admin', '/apis/example.com/v1/gadgets')).status, 404);
  // Tokens change while the server runs (a rotation).
  s.options.tokens.rotated = { user: 'system:admin' };
  assert.equal((await as('rotated', '/api/v1/pods')).status, 200);
});

test('lists of custom resources keep apiVersion and kind on their items, built-in types’ do not; etcd order', async (t) => {
  const s = await sim(t);
  s.defineResource('example.com/v1/widgets', { kind: 'Widget' });
  for (const [namespace, name] of [
    ['team', 'b'],
    ['team-a', 'z'],
    ['team', 'a'],
  ]) {
    s.create('example.com/v1/widgets', { metadata: { name, namespace } });
    s.create('configmaps', { metadata: { name, namespace } });
  }
  const widgets = (await get(`${s.url}/apis/example.com/v1/widgets`)).body;
  assert.equal(widgets.kind, 'WidgetList');
  assert.ok(widgets.items.every((i) => i.apiVersion === 'example.com/v1' && i.kind === 'Widget'));
  const configmaps = (await get(`${s.url}/api/v1/configmaps`)).body;
  assert.ok(configmaps.items.every((i) => i.apiVersion === undefined && i.kind === undefined));
  // By storage key `namespace/name`: '-' sorts before '/', so team-a/z comes before team/a.
  const order = (list) => list.items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`);
  assert.deepEqual(order(widgets), ['team-a/z', 'team/a', 'team/b']);
  assert.deepEqual(order(configmaps), ['team-a/z', 'team/a', 'team/b']);
});
