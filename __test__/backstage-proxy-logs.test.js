'use strict';
// Issue 50: the Kubernetes plugin's own proxy route for a pod's log, answered by the module from
// the native log stream (packages/backstage/serving/proxy-logs.js), against the same backend
// without the module (the stock proxy, http-proxy-middleware to the API server): the same
// answers for a one-shot read and the API server's errors, a follow shared by any number of
// callers (one upstream request), and every other proxy request left to the stock proxy.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startLiveBackend, TOKEN } = require('../testbed/live-helpers');
const { createSimulator } = require('kube-watch-native/sim');
const { podOfContainers } = require('./sim-helpers');
const { until } = require('../testbed/wait');

const T0 = Date.parse('2026-12-06T08:00:00.000Z');

/** GET `path` under the plugin's proxy on `backend`, as the mock user, for cluster `sim`. */
function proxyGet(backend, path, { signal, headers = {} } = {}) {
  return fetch(`${backend.url}/api/kubernetes/proxy${path}`, {
    headers: { authorization: 'Bearer mock-user-token', 'backstage-kubernetes-cluster': 'sim', ...headers },
    signal,
  });
}

const logRequests = (sim) => sim.requests.filter((r) => r.path.endsWith('/log'));

let sim;
let native;
let stock;
test.before(async () => {
  sim = await createSimulator({ tls: true, token: TOKEN });
  sim.create('pods', podOfContainers('web'));
  for (let i = 0; i < 4; i++)
    sim.writeLog('default', 'web', 'main', `line ${i}`, { time: new Date(T0 + i * 1000) });
  native = await startLiveBackend(sim);
  stock = await startLiveBackend(sim, { native: false });
});
test.after(async () => {
  await native?.stop();
  await stock?.stop();
  await sim?.close();
});

const LOG = '/api/v1/namespaces/default/pods/web/log';

test('one-shot reads and the API server errors: the same status, type and body as the stock proxy', async () => {
  const cases = [
    '?container=main',
    '?container=main&tailLines=2&timestamps=true',
    '?container=main&sinceTime=2026-12-06T08:00:02Z&limitBytes=9',
    '?container=nope',
    '?container=late',
    '?container=main&previous=true',
  ];
  for (const query of cases) {
    const [ours, theirs] = await Promise.all([proxyGet(native, LOG + query), proxyGet(stock, LOG + query)]);
    const [ourBody, theirBody] = await Promise.all([ours.text(), theirs.text()]);
    assert.equal(ours.status, theirs.status, query);
    assert.equal(
      ours.headers.get('content-type')?.split(';')[0],
      theirs.headers.get('content-type')?.split(';')[0],
      query,
    );
    if (ours.status === 200) assert.equal(ourBody, theirBody, query);
    else assert.deepEqual(JSON.parse(ourBody).message, JSON.parse(theirBody).message, query);
  }
  const gone = await proxyGet(native, '/api/v1/namespaces/default/pods/gone/log');
  assert.equal(gone.status, 404);
  assert.equal((await gone.json()).message, 'pods "gone" not found');
});

test('50 callers following one container cost one request to the API server, and each gets every new line', async () => {
  const before = logRequests(sim).length;
  const controller = new AbortController();
  const callers = await Promise.all(
    Array.from({ length: 50 }, () =>
      proxyGet(native, `${LOG}?container=main&follow=true&tailLines=1`, { signal: controller.signal }),
    ),
  );
  const texts = callers.map(() => '');
  callers.forEach((res, i) => {
    assert.equal(res.status, 200);
    (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body) texts[i] += decoder.decode(chunk, { stream: true });
      } catch {
        // Aborted at the end of the test.
      }
    })();
  });
  await until(() => texts.every((t) => t === 'line 3\n'), { what: 'each caller its last line' });
  const written = Date.now();
  sim.writeLog('default', 'web', 'main', 'live line');
  await until(() => texts.every((t) => t === 'line 3\nlive line\n'), {
    what: 'the new line at every caller',
  });
  assert.ok(Date.now() - written < 1000, 'within a second');
  assert.equal(logRequests(sim).length - before, 1, 'one upstream follow for 50 callers');
  const dialog = await proxyGet(native, `${LOG}?container=main&tailLines=1`);
  assert.equal(await dialog.text(), 'live line\n');
  assert.equal(logRequests(sim).length - before, 1, "a one-shot read from the follow's kept lines");
  const stockDialog = await proxyGet(stock, `${LOG}?container=main&tailLines=1`);
  assert.equal(await stockDialog.text(), 'live line\n', 'as the stock proxy answers it');
  controller.abort();
  await until(() => sim.logs.follows.size === 0, { what: 'the follow closed after its callers', ms: 3000 });
});

test('every other proxy request is the stock proxy (a list of pods); a log asked with a caller token is sent with it', async () => {
  const pods = await proxyGet(native, '/api/v1/namespaces/default/pods');
  assert.equal(pods.status, 200);
  assert.ok((await pods.json()).items.some((p) => p.metadata.name === 'web'));
  const before = logRequests(sim);
  const own = await proxyGet(native, `${LOG}?container=main`, {
    headers: { 'backstage-kubernetes-authorization': 'Bearer not-the-token' },
  });
  assert.equal(
    own.status,
    401,
    'the caller token went to the API server, as the stock proxy sends it, and its 401 came back',
  );
  const sent = logRequests(sim).slice(before.length);
  assert.equal(sent.length, 1);
  assert.equal(sent[0].headers.authorization, 'Bearer not-the-token');
});
