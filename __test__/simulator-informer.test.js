'use strict';

// The simulator's test bed for informers (INFORMER.md "Test bed additions"), driven with plain
// Node clients: paginated lists with expiring continue tokens, 410 as an event or a status,
// servers without streaming lists, token rotation, scripted failures, cut watches, the plain
// 404 of an unserved group, and the seeded chaos driver, which a reference list-watch client
// must survive with its cache equal to the store.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startChaos } = require('../packages/kube-watch-native/sim');
const { FAULTS } = require('../packages/kube-watch-native/sim/chaos');
const { EXPIRED_CONTINUE } = require('../packages/kube-watch-native/sim/list');
const { watchRequest } = require('../packages/kube-watch-native/sim/client');
const { pod, delay, sim, get } = require('./sim-helpers');

const STREAMING =
  'watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true';

test('paginated lists: pages of `limit` items from one snapshot, items without kind/apiVersion', async (t) => {
  const s = await sim(t);
  for (let i = 0; i < 7; i++) s.create('pods', pod(`p${i}`, { i: String(i) }));
  const first = await get(`${s.url}/api/v1/pods?limit=3`);
  assert.equal(first.status, 200);
  assert.equal(first.body.kind, 'PodList');
  assert.equal(first.body.apiVersion, 'v1');
  assert.deepEqual(
    first.body.items.map((p) => p.metadata.name),
    ['p0', 'p1', 'p2'],
  );
  assert.ok(
    first.body.items.every((p) => !('kind' in p) && !('apiVersion' in p)),
    'list items lack kind and apiVersion',
  );
  assert.equal(first.body.metadata.remainingItemCount, 4);
  const listRv = first.body.metadata.resourceVersion;
  // Writes between pages do not show: the list is one consistent snapshot.
  s.create('pods', pod('p00'));
  s.remove('pods', 'default', 'p5');
  const second = await get(`${s.url}/api/v1/pods?limit=3&continue=${first.body.metadata.continue}`);
  assert.deepEqual(
    second.body.items.map((p) => p.metadata.name),
    ['p3', 'p4', 'p5'],
  );
  assert.equal(second.body.metadata.resourceVersion, listRv, 'every page has the snapshot version');
  const last = await get(`${s.url}/api/v1/pods?limit=3&continue=${second.body.metadata.continue}`);
  assert.deepEqual(
    last.body.items.map((p) => p.metadata.name),
    ['p6'],
  );
  assert.equal(last.body.metadata.continue, undefined, 'the last page has no token');
  // A watch event carries kind and apiVersion; the item text otherwise matches.
  const w = watchRequest(`${s.url}/api/v1/pods?watch=true&labelSelector=i%3D0`);
  await w.untilEvents(1);
  w.close();
  const { kind, apiVersion, ...rest } = w.events[0].object;
  assert.deepEqual([kind, apiVersion], ['Pod', 'v1']);
  assert.deepEqual(rest, first.body.items[0]);
  // Without a limit everything comes at once; selectors and namespaces filter pages too.
  const all = await get(`${s.url}/api/v1/pods`);
  assert.equal(all.body.items.length, 7);
  assert.equal(all.body.metadata.continue, undefined);
  const some = await get(`${s.url}/api/v1/namespaces/default/pods?limit=1&labelSelector=i%20in%20(1,2)`);
  assert.deepEqual(
    some.body.items.map((p) => p.metadata.name),
    ['p1'],
  );
  const rest2 = await get(
    `${s.url}/api/v1/namespaces/default/pods?limit=5&continue=${some.body.metadata.continue}`,
  );
  assert.deepEqual(
    rest2.body.items.map((p) => p.metadata.name),
    ['p2'],
  );
});

test('a continue token expires (410 Expired) once the store is compacted past its snapshot', async (t) => {
  const s = await sim(t);
  for (let i = 0; i < 4; i++) s.create('pods', pod(`p${i}`));
  const first = await get(`${s.url}/api/v1/pods?limit=2`);
  const token = first.body.metadata.continue;
  s.compact();
  const same = await get(`${s.url}/api/v1/pods?limit=2&continue=${token}`);
  assert.equal(same.status, 200, 'compacting at the snapshot version itself keeps it readable');
  s.create('pods', pod('later'));
  s.compact();
  const expired = await get(`${s.url}/api/v1/pods?limit=2&continue=${token}`);
  assert.equal(expired.status, 410);
  assert.equal(expired.body.kind, 'Status');
  assert.equal(expired.body.reason, 'Expired');
  assert.equal(expired.body.message, EXPIRED_CONTINUE);
  const bad = await get(`${s.url}/api/v1/pods?limit=2&continue=garbage`);
  assert.equal(bad.status, 400);
  assert.match(bad.body.message, /continue key is not valid/);
  const badLimit = await get(`${s.url}/api/v1/pods?limit=x`);
  assert.equal(badLimit.status, 400);
  // The history limit compacts too: a slow pager loses its token after enough writes.
  const small = await sim(t, { historyLimit: 3 });
  for (let i = 0; i < 3; i++) small.create('pods', pod(`q${i}`));
  const page = await get(`${small.url}/api/v1/pods?limit=1`);
  for (let i = 0; i < 5; i++)
    small.patch('pods', 'default', 'q0', (p) => void (p.metadata.labels.n = String(i)));
  const gone = await get(`${small.url}/api/v1/pods?limit=1&continue=${page.body.metadata.continue}`);
  assert.equal(gone.status, 410);
});

test("expiredAs: 'status' answers a compacted resourceVersion with HTTP 410, the default in-stream", async (t) => {
  const s = await sim(t, { expiredAs: 'status' });
  s.create('pods', pod('a'));
  const old = Number(s.resourceVersion) - 1;
  s.compact();
  const w = watchRequest(`${s.url}/api/v1/pods?watch=true&resourceVersion=${old}`);
  await w.done;
  assert.equal(w.status, 410);
  const body = JSON.parse(w.lines.join(''));
  assert.equal(body.reason, 'Expired');
  assert.equal(body.message, `too old resource version: ${old} (${s.resourceVersion})`);
  const current = watchRequest(`${s.url}/api/v1/pods?watch=true&resourceVersion=${s.resourceVersion}`);
  assert.equal(await current.response, 200, 'a current version still watches');
  current.close();
  const plain = await sim(t);
  plain.create('pods', pod('a'));
  plain.create('pods', pod('b'));
  plain.compact();
  const inStream = watchRequest(`${plain.url}/api/v1/pods?watch=true&resourceVersion=1`);
  await inStream.done;
  assert.equal(inStream.status, 200);
  assert.equal(inStream.events[0].object.code, 410);
  assert.throws(
    () => new (require('../packages/kube-watch-native/sim').Simulator)({ expiredAs: 'x' }),
    /expiredAs must be 'event' or 'status'/,
  );
});

test('sendInitialEvents: false makes an old server: streaming lists are 422, plain watches work', async (t) => {
  const s = await sim(t, { sendInitialEvents: false });
  s.create('pods', pod('a'));
  const refused = await get(`${s.url}/api/v1/pods?${STREAMING}`);
  assert.equal(refused.status, 422);
  assert.equal(refused.body.reason, 'Invalid');
  assert.match(
    refused.body.message,
    /sendInitialEvents is forbidden for watch unless the WatchList feature gate/,
  );
  const w = watchRequest(`${s.url}/api/v1/pods?watch=true`);
  await w.untilEvents(1);
  assert.equal(w.events[0].type, 'ADDED');
  w.close();
  const modern = await sim(t);
  modern.create('pods', pod('a'));
  const streaming = watchRequest(`${modern.url}/api/v1/pods?${STREAMING}`);
  await streaming.untilEvents(2);
  assert.equal(streaming.events[1].type, 'BOOKMARK');
  streaming.close();
});

test('rotateToken: the new token is accepted, the old one refused with 401, open watches go on', async (t) => {
  const s = await sim(t, { token: 'old' });
  const auth = (token) => ({ headers: { authorization: `Bearer ${token}` } });
  const open = watchRequest(`${s.url}/api/v1/pods?watch=true`, auth('old'));
  assert.equal(await open.response, 200);
  s.rotateToken('new');
  assert.equal((await get(`${s.url}/api/v1/pods`, auth('old'))).status, 401);
  const refused = watchRequest(`${s.url}/api/v1/pods?watch=true`, auth('old'));
  assert.equal(await refused.response, 401);
  assert.equal((await get(`${s.url}/api/v1/pods`, auth('new'))).status, 200);
  s.create('pods', pod('a'));
  await open.untilEvents(1);
  open.close();
  assert.throws(() => s.rotateToken(''), /non-empty string/);
});

test('failNext(n, status, retryAfter) fails the next n lists and watches, then serves again', async (t) => {
  const s = await sim(t, { token: 'tok' });
  const auth = { headers: { authorization: 'Bearer tok' } };
  s.failNext(2, 503, 2);
  const list = await get(`${s.url}/api/v1/pods`, auth);
  assert.equal(list.status, 503);
  assert.equal(list.headers.get('retry-after'), '2');
  assert.equal(list.body.details.retryAfterSeconds, 2);
  assert.equal(list.body.kind, 'Status');
  const watch = watchRequest(`${s.url}/api/v1/pods?watch=true`);
  assert.equal(await watch.response, 503, 'before authentication, like other scripted faults');
  await watch.done;
  assert.equal((await get(`${s.url}/version`, auth)).status, 200, 'non-resource paths are not counted');
  assert.equal((await get(`${s.url}/api/v1/pods`, auth)).status, 200);
  s.failNext(1, 500);
  const plain = await get(`${s.url}/api/v1/pods`, auth);
  assert.equal(plain.status, 500);
  assert.equal(plain.headers.get('retry-after'), null);
  assert.throws(() => s.failNext(0, 500), /count must be an integer/);
  assert.throws(() => s.failNext(1, 200), /HTTP error status/);
  assert.throws(() => s.failNext(1, 429, 1.5), /whole number/);
  assert.throws(() => s.failNext(1, 429, 1, { retryAfterIn: 'body' }), /retryAfterIn must be/);
  assert.throws(() => s.failNext(1, 429, 1, { retryAfterin: 'header' }), /unknown option "retryAfterin"/);
  assert.throws(() => s.failNext(1, 429, undefined, { retryAfterIn: 'header' }), /needs a retryAfter/);
});

test('failNext(…, { retryAfterIn }) says Retry-After only in the header or only in the Status details', async (t) => {
  const s = await sim(t, { token: 'tok' });
  const auth = { headers: { authorization: 'Bearer tok' } };
  s.failNext(1, 429, 3, { retryAfterIn: 'header' });
  const header = await get(`${s.url}/api/v1/pods`, auth);
  assert.equal(header.status, 429);
  assert.equal(header.headers.get('retry-after'), '3');
  assert.equal(header.body.kind, 'Status');
  assert.equal(header.body.code, 429);
  assert.equal(header.body.details, undefined, 'no details.retryAfterSeconds');
  s.failNext(1, 429, 3, { retryAfterIn: 'details' });
  const details = await get(`${s.url}/api/v1/pods`, auth);
  assert.equal(details.status, 429);
  assert.equal(details.headers.get('retry-after'), null);
  assert.equal(details.body.details.retryAfterSeconds, 3);
});

test('cutWatches breaks every watch mid-stream, over HTTP/1.1 and HTTP/2', async (t) => {
  const s = await sim(t, { tls: true, http2: true });
  const { certs } = require('../packages/kube-watch-native/sim');
  s.create('pods', pod('a'));
  const h1 = watchRequest(`${s.url}/api/v1/pods?watch=true`, { ca: certs.ca });
  const h2 = watchRequest(`${s.url}/api/v1/pods?watch=true`, { ca: certs.ca, http2: true });
  await Promise.all([h1.untilEvents(1), h2.untilEvents(1)]);
  s.cutWatches();
  const [d1, d2] = await Promise.all([h1.done, h2.done]);
  assert.equal(d1.complete, false, 'HTTP/1.1: not a clean end');
  assert.equal(d2.complete, false, 'HTTP/2: not a clean end');
  assert.equal(s.activeWatches(), 0);
});

test('an unserved group is a plain-text 404 page not found; an unknown core resource a Status', async (t) => {
  const s = await sim(t);
  for (const url of [
    `${s.url}/apis/example.com/v1/widgets`,
    `${s.url}/apis/example.com/v1/widgets?watch=true`,
  ]) {
    const res = await fetch(url);
    assert.equal(res.status, 404);
    assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.equal(res.headers.get('retry-after'), null);
    assert.equal(await res.text(), '404 page not found\n');
  }
  const core = await get(`${s.url}/api/v1/widgets`);
  assert.equal(core.status, 404);
  assert.equal(core.body.kind, 'Status');
  s.defineResource('example.com/v1/widgets');
  assert.equal((await get(`${s.url}/apis/example.com/v1/widgets`)).status, 200, 'served once the CRD exists');
});

test('the chaos driver replays the same writes and faults from the same seed', async (t) => {
  const runs = [];
  for (let i = 0; i < 2; i++) {
    const s = await sim(t, { token: 't0' });
    const chaos = startChaos(s, { seed: 1234, writes: 300, intervalMs: 0, faultEvery: 10 });
    const summary = await chaos.done;
    runs.push({
      log: chaos.log,
      summary,
      names: s.list('configmaps').map((o) => [o.metadata.namespace, o.metadata.name, o.data.value]),
    });
  }
  assert.equal(runs[0].summary.writes, 300);
  assert.deepEqual(runs[0], runs[1]);
  assert.ok(runs[0].log.length > 10, `${runs[0].log.length} faults`);
  assert.throws(() => startChaos({}, {}), /seed must be an integer/);
  assert.throws(() => startChaos({}, { seed: 1, faults: ['nope'] }), /unknown fault "nope"/);
});

/**
 * A plain reference list-watch client: paged list, watch from the list's version, resume from
 * the last version seen, relist on 410, a fresh token after 401, a pause after other failures,
 * and a give-up on a silent watch. Its cache must end equal to the store.
 */
function referenceInformer(s, resource, getToken) {
  const state = { cache: new Map(), rv: null, relists: 0, resumes: 0, stopped: false };
  const key = (o) => `${o.metadata.namespace}/${o.metadata.name}`;
  const headers = () => ({ authorization: `Bearer ${getToken()}` });
  const pause = (res) => delay(res && res.headers.get?.('retry-after') ? 50 : 10);
  async function list() {
    for (;;) {
      const fresh = new Map();
      let token = '';
      let rv;
      let failed = false;
      do {
        const res = await fetch(`${s.url}/api/v1/${resource}?limit=25${token && `&continue=${token}`}`, {
          headers: headers(),
        }).catch(() => null);
        if (!res || res.status !== 200) {
          if (res) await res.text();
          failed = true;
          await pause(res);
          break;
        }
        const body = await res.json();
        // Items lack kind/apiVersion; a cached object must look the same however it came.
        const type = { kind: body.kind.replace(/List$/, ''), apiVersion: body.apiVersion };
        for (const item of body.items) fresh.set(key(item), { ...type, ...item });
        token = body.metadata.continue || '';
        rv = body.metadata.resourceVersion;
      } while (token);
      if (!failed) {
        state.cache = fresh;
        state.rv = rv;
        state.relists++;
        return;
      }
    }
  }
  async function run() {
    await list();
    while (!state.stopped) {
      const w = watchRequest(
        `${s.url}/api/v1/${resource}?watch=true&allowWatchBookmarks=true&timeoutSeconds=0.5&resourceVersion=${state.rv}`,
        { headers: headers() },
      );
      const idle = setTimeout(() => w.close(), 1500);
      await w.done;
      clearTimeout(idle);
      if (w.status !== 200) {
        if (w.status === 410) await list();
        else await delay(w.status === null ? 5 : 20);
        continue;
      }
      let expired = false;
      for (const e of w.events) {
        if (e.type === 'ERROR') {
          expired = e.object.code === 410;
          break;
        }
        state.rv = e.object.metadata.resourceVersion;
        if (e.type === 'DELETED') state.cache.delete(key(e.object));
        else if (e.type !== 'BOOKMARK') state.cache.set(key(e.object), e.object);
      }
      if (expired) await list();
      else state.resumes++;
    }
  }
  state.done = run();
  return state;
}

test('a reference list-watch client survives a seeded chaos run and ends equal to the store', async (t) => {
  const seed = Number(process.env.CHAOS_SEED) || 1 + Math.floor(Math.random() * 1e6);
  t.diagnostic(`chaos seed ${seed} (rerun with CHAOS_SEED=${seed})`);
  let token = 'initial';
  const s = await sim(t, { token, historyLimit: 200 });
  const informer = referenceInformer(s, 'configmaps', () => token);
  const chaos = startChaos(s, { seed, writes: 2000, onRotate: (next) => (token = next) });
  const started = Date.now();
  const summary = await chaos.done;
  const wrote = Date.now();
  const snapshot = () =>
    JSON.stringify(
      s
        .list('configmaps')
        .map((o) => [`${o.metadata.namespace}/${o.metadata.name}`, o.metadata.resourceVersion]),
    );
  const cached = () =>
    JSON.stringify(
      [...informer.cache.values()]
        .map((o) => [`${o.metadata.namespace}/${o.metadata.name}`, o.metadata.resourceVersion])
        .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)),
    );
  const deadline = Date.now() + 15000;
  while (cached() !== snapshot() && Date.now() < deadline) await delay(50);
  t.diagnostic(`writes took ${wrote - started} ms, catching up ${Date.now() - wrote} ms`);
  informer.stopped = true;
  s.endWatches();
  assert.equal(cached(), snapshot(), `seed ${seed}: the client's cache equals the store`);
  const stored = new Map(s.list('configmaps').map((o) => [`${o.metadata.namespace}/${o.metadata.name}`, o]));
  for (const [k, o] of informer.cache) assert.deepEqual(o, stored.get(k), `seed ${seed}: ${k} as stored`);
  assert.equal(summary.writes, 2000);
  const kinds = Object.keys(summary.faults);
  assert.ok(
    kinds.length >= FAULTS.length - 2,
    `seed ${seed}: faults of most kinds: ${JSON.stringify(summary.faults)}`,
  );
  assert.ok(informer.relists >= 1 && informer.resumes >= 1);
  await informer.done;
});
