'use strict';
// Issue 50: the Kubernetes plugin's own proxy route for a pod's log, answered by the module from
// the native log stream (packages/backstage/serving/proxy-logs.js), against the same backend
// without the module (the stock proxy, http-proxy-middleware to the API server): the same
// answers for a one-shot read and the API server's errors, a follow shared by any number of
// callers (one upstream request), and every other proxy request left to the stock proxy.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startLiveBackend, viewerCheckedCluster, TOKEN } = require('../testbed/live-helpers');
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

test('output that is not UTF-8 comes through byte for byte, as the stock proxy passes it, one-shot and followed', async () => {
  sim.create('pods', podOfContainers('raw'));
  const bytes = Buffer.from([0x61, 0xff, 0xfe, 0x62, 0x0a, 0x6f, 0x6b, 0x0a, 0xc3, 0x28]);
  sim.writeLog('default', 'raw', 'main', bytes);
  const path = '/api/v1/namespaces/default/pods/raw/log?container=main';
  const [ours, theirs] = await Promise.all([proxyGet(native, path), proxyGet(stock, path)]);
  const [ourBytes, theirBytes] = await Promise.all([ours.arrayBuffer(), theirs.arrayBuffer()]);
  assert.deepEqual(Buffer.from(ourBytes), Buffer.from(theirBytes));
  assert.deepEqual(Buffer.from(ourBytes), Buffer.concat([bytes, Buffer.from('\n')]));
  // Followed: the same bytes, then a line written after.
  const controller = new AbortController();
  const follow = await proxyGet(native, `${path}&follow=true`, { signal: controller.signal });
  const chunks = [];
  const reading = (async () => {
    try {
      for await (const chunk of follow.body) chunks.push(Buffer.from(chunk));
    } catch {
      // Aborted below.
    }
  })();
  sim.writeLog('default', 'raw', 'main', Buffer.from([0x7a, 0x80]));
  const expected = Buffer.concat([bytes, Buffer.from([0x0a, 0x7a, 0x80, 0x0a])]);
  await until(() => Buffer.concat(chunks).equals(expected), { what: 'the bytes followed' });
  controller.abort();
  await reading;
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

test("viewers' own tokens share one follow (the service account's) while the API server lets each get the pod's log; a viewer refused gets the stock answer, one revoked mid-follow is ended", async (t) => {
  const tokens = {
    'tok-sa': { user: 'system:serviceaccount:backstage:cache' },
    'tok-alice': { user: 'alice', rules: [{ resources: ['pods', 'pods/log'] }] },
    'tok-dave': { user: 'dave', rules: [{ resources: ['pods', 'pods/log'] }] },
    'tok-bob': { user: 'bob', rules: [{ resources: ['pods'] }] },
  };
  const viewers = await createSimulator({ tls: true, tokens });
  t.after(() => viewers.close());
  viewers.create('pods', podOfContainers('web'));
  viewers.writeLog('default', 'web', 'main', 'first', { time: new Date(T0) });
  // A client-side provider with a service account token: the opt-in to sharing, each viewer checked.
  const clusters = [viewerCheckedCluster(viewers.url, 'tok-sa')];
  const ours = await startLiveBackend(viewers, { clusters, nativeInformers: { authorizationTtl: '1s' } });
  const theirs = await startLiveBackend(viewers, { clusters, native: false });
  const controller = new AbortController();
  t.after(() => {
    controller.abort();
    return Promise.all([ours.stop(), theirs.stop()]);
  });
  const as = (backend, token, query = 'container=main&follow=true') =>
    proxyGet(backend, `${LOG}?${query}`, {
      signal: controller.signal,
      headers: { 'backstage-kubernetes-authorization': `Bearer ${token}` },
    });
  const follow = (res) => {
    const seen = { text: '', ended: false };
    (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body) seen.text += decoder.decode(chunk, { stream: true });
        seen.ended = true;
      } catch {
        // Aborted at the end of the test.
      }
    })();
    return seen;
  };
  const before = logRequests(viewers).length;
  const [alice, dave] = await Promise.all([as(ours, 'tok-alice'), as(ours, 'tok-dave')]);
  assert.equal(alice.status, 200);
  assert.equal(dave.status, 200);
  const [aliceSeen, daveSeen] = [follow(alice), follow(dave)];
  await until(() => aliceSeen.text === 'first\n' && daveSeen.text === 'first\n', {
    what: 'both see the log',
  });
  const sent = logRequests(viewers).slice(before);
  assert.equal(sent.length, 1, 'one follow for both viewers');
  assert.equal(sent[0].headers.authorization, 'Bearer tok-sa', "the service account's");
  // Bob may read pods, not their logs: the API server's 403 with his token, as the stock proxy's.
  const [bob, bobStock] = await Promise.all([
    as(ours, 'tok-bob', 'container=main'),
    as(theirs, 'tok-bob', 'container=main'),
  ]);
  assert.equal(bob.status, 403);
  assert.deepEqual(await bob.json(), await bobStock.json());
  // Alice loses the log: her follow ends within the decision's TTL (1 s) and its renewal; Dave's goes on.
  viewers.options.tokens['tok-alice'] = { user: 'alice', rules: [{ resources: ['pods'] }] };
  await until(() => aliceSeen.ended, { what: "alice's follow ended", ms: 5000 });
  viewers.writeLog('default', 'web', 'main', 'second');
  await until(() => daveSeen.text === 'first\nsecond\n', { what: "dave's next line" });
  assert.equal(aliceSeen.text, 'first\n', 'nothing after the revocation');
});

test("a follow's lines written in many small pieces reach a caller in a few larger chunks, every line once and in order", async () => {
  const http = require('node:http');
  const url = new URL(`${native.url}/api/kubernetes/proxy${LOG}?container=main&follow=true&tailLines=0`);
  const headers = { authorization: 'Bearer mock-user-token', 'backstage-kubernetes-cluster': 'sim' };
  const res = await new Promise((resolve, reject) => {
    const req = http.get(url, { headers }, resolve);
    req.once('error', reject);
  });
  assert.equal(res.statusCode, 200);
  let [text, chunks] = ['', 0];
  res.setEncoding('utf8');
  res.on('data', (chunk) => ((text += chunk), (chunks += 1)));
  await until(() => sim.logs.follows.size > 0, { what: 'the follow open' });
  // 1 000 lines in 100 pieces over about a second, as a busy container writes them.
  for (let piece = 0; piece < 100; piece++) {
    const lines = Array.from({ length: 10 }, (_, i) => `piece ${piece} line ${i}`);
    sim.writeLog('default', 'web', 'main', lines.join('\n'));
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await until(() => text.endsWith('piece 99 line 9\n'), { what: 'the last line' });
  const expected = Array.from({ length: 1000 }, (_, n) => `piece ${Math.floor(n / 10)} line ${n % 10}\n`);
  assert.equal(text, expected.join(''));
  assert.ok(chunks <= 40, `${chunks} chunks for 100 pieces`);
  res.destroy();
  await until(() => sim.logs.follows.size === 0, { what: 'the follow closed', ms: 3000 });
});

test('a follow pauses after a small piece to gather the next, never while its stream is fast (a large piece in the last second)', () => {
  const { Gathering, GATHER_MS, FAST_PIECE_BYTES } = require('../packages/backstage/serving/proxy-logs');
  const gathering = new Gathering();
  assert.equal(gathering.pauseAfter(100, 0), GATHER_MS, 'a trickle of small pieces is gathered');
  assert.equal(gathering.pauseAfter(FAST_PIECE_BYTES - 1, 50), GATHER_MS);
  // 20 MiB a second: what one pause let in is large (the native stream hands on 32 KiB at a
  // time, the size seen on Node.js 22 in the test below), and so is what a caller that keeps up reads.
  assert.equal(gathering.pauseAfter(32 << 10, 100), 0, 'a large piece: the stream is fast');
  assert.equal(gathering.pauseAfter(100, 150), 0, 'caught up with a fast stream: read on at once');
  assert.equal(gathering.pauseAfter(100, 1099), 0);
  assert.equal(gathering.pauseAfter(100, 1100), GATHER_MS, 'a second with no large piece: a trickle again');
});

test('a caller that stops reading holds nothing in the backend: it skips ahead with a marker line, and a caller that reads gets every line', async () => {
  const http = require('node:http');
  const url = new URL(`${native.url}/api/kubernetes/proxy${LOG}?container=main&follow=true&tailLines=0`);
  const headers = { authorization: 'Bearer mock-user-token', 'backstage-kubernetes-cluster': 'sim' };
  // The slow caller: its socket paused as soon as the headers come.
  const slow = await new Promise((resolve, reject) => {
    const req = http.get(url, { headers }, (res) => (res.pause(), resolve({ req, res })));
    req.once('error', reject);
  });
  const controller = new AbortController();
  const fast = await proxyGet(native, `${LOG}?container=main&follow=true&tailLines=0`, {
    signal: controller.signal,
  });
  let fastLines = 0;
  const reading = (async () => {
    const decoder = new TextDecoder();
    let carry = '';
    try {
      for await (const chunk of fast.body) {
        const lines = (carry + decoder.decode(chunk, { stream: true })).split('\n');
        carry = lines.pop();
        fastLines += lines.length;
      }
    } catch {
      // Aborted below.
    }
  })();
  // 24 MiB of lines at 20 MiB a second: past the socket buffers, the slow caller's native queue
  // and the kept 4 MiB, at a pace a reader keeps up with.
  const LINES = 24 * 1024;
  const line = 'y'.repeat(1023);
  for (let i = 0; i < LINES; i += 1024) {
    sim.writeLog('default', 'web', 'main', Array.from({ length: 1024 }, () => line).join('\n'));
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await until(() => fastLines === LINES, { what: 'the fast caller read every line', ms: 30_000 });
  let text = '';
  slow.res.setEncoding('utf8');
  slow.res.on('data', (chunk) => (text += chunk));
  slow.res.resume();
  await until(() => /lines skipped: this reader fell behind the follow\]\n/.test(text), {
    what: 'the marker',
    ms: 10_000,
  });
  const [, skipped] = /\[kube-watch-native: (\d+) lines skipped/.exec(text);
  assert.ok(Number(skipped) > 0);
  assert.ok(text.length < 20 * 1024 * 1024, 'it did not get all 24 MiB');
  slow.req.destroy();
  controller.abort();
  await reading;
});

test("the backend's shutdown ends the follows it answers (an HTTP server waits for open responses)", async () => {
  const backend = await startLiveBackend(sim);
  const res = await proxyGet(backend, `${LOG}?container=main&follow=true&tailLines=1`);
  assert.equal(res.status, 200);
  const body = res.text();
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('the backend was still stopping after 5 s')), 5000);
  });
  await Promise.race([backend.stop(), late]).finally(() => clearTimeout(timer));
  assert.match(await body, /\n$/, 'the follow ended, with what it had');
});

test("the backend's shutdown ends a follow whose caller stopped reading (its writes held by the full socket)", async () => {
  const http = require('node:http');
  const backend = await startLiveBackend(sim);
  const url = new URL(`${backend.url}/api/kubernetes/proxy${LOG}?container=main&follow=true&tailLines=0`);
  const headers = { authorization: 'Bearer mock-user-token', 'backstage-kubernetes-cluster': 'sim' };
  const stalled = await new Promise((resolve, reject) => {
    const req = http.get(url, { headers }, (res) => (res.pause(), resolve({ req, res })));
    req.once('error', reject);
  });
  // 8 MiB: past both sockets' buffers, so the backend's write waits for a drain that never comes.
  const line = 'z'.repeat(1023);
  for (let i = 0; i < 8; i++) {
    sim.writeLog('default', 'web', 'main', Array.from({ length: 1024 }, () => line).join('\n'));
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await new Promise((resolve) => setTimeout(resolve, 500));
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('the backend was still stopping after 5 s')), 5000);
  });
  try {
    await Promise.race([backend.stop(), late]);
  } finally {
    clearTimeout(timer);
    stalled.req.destroy();
  }
});
