'use strict';
// watcher.informer() against the simulated API server: the lists, the resumes, the relists and
// the errors of issue 10's semantics and details.

const test = require('node:test');
const assert = require('node:assert/strict');
const {
  sim,
  recordingWatcher,
  params,
  syncedInformer,
  consume,
  storeView,
  viewOf,
  cm,
  delay,
  oneConfigMap,
  caughtUp,
  requestsOf,
  isList,
} = require('./informer-helpers');
const { UNREACHABLE } = require('./helpers');
const { within, until } = require('../testbed/wait');

test('a paginated list (no streaming lists here) fills in kind/apiVersion and syncs at the list rv', async (t) => {
  const s = await sim(t, { sendInitialEvents: false, token: 'tok' });
  for (let i = 0; i < 7; i++) s.create('configmaps', cm(`c${i}`, { i: String(i) }));
  const { log, informer, c } = await syncedInformer(t, s, { pageSize: 3, namespace: 'default' });
  assert.equal(informer.size, 7);
  const listRv = s.resourceVersion;
  await until(() => c.synced === 1, { what: 'SYNCED' });
  const synced = c.events.find((e) => e.type === 'SYNCED');
  assert.deepEqual(synced, { type: 'SYNCED', resourceVersion: listRv, relist: false });
  const c0 = informer.get('c0');
  assert.equal(c0.kind, 'ConfigMap', 'list items get the kind of the list');
  assert.equal(c0.apiVersion, 'v1');
  assert.deepEqual(c0, { kind: 'ConfigMap', apiVersion: 'v1', ...s.get('configmaps', 'default', 'c0') });
  c0.data.v = 'changed';
  assert.equal(informer.get('c0').data.v, '1', 'get returns a copy');
  assert.equal(informer.get('nope'), undefined);
  assert.equal(informer.get('c0', 'other'), undefined);
  assert.deepEqual(
    informer
      .list({ labelSelector: 'i in (1,2)' })
      .map((o) => o.metadata.name)
      .sort(),
    ['c1', 'c2'],
  );
  assert.throws(() => informer.list({ labelSelector: 'a in (' }), /labelSelector is not valid/);
  // A field selector is read natively from the cached text, with the label selector.
  const names = (options) => informer.list(options).map((o) => o.metadata.name);
  assert.equal(informer.state().indexBytes, 0, 'no field index before a field selector');
  assert.deepEqual(names({ fieldSelector: 'data.v=1,metadata.name=c3' }), ['c3']);
  const indexBytes = informer.state().indexBytes;
  assert.ok(indexBytes > 7 * 100, `the index of data.v over 7 objects counted: ${indexBytes} bytes`);
  assert.deepEqual(names({ fieldSelector: 'data.v=2' }), []);
  assert.deepEqual(names({ fieldSelector: 'data.v!=2,metadata.name!=c0', labelSelector: 'i in (0,3,4)' }), [
    'c3',
    'c4',
  ]);
  assert.deepEqual(names({ fieldSelector: 'data.none=' }).length, 7, 'an absent field is empty');
  assert.equal(JSON.parse(informer.listText({ fieldSelector: 'metadata.name=c5' }))[0].metadata.name, 'c5');
  assert.throws(() => informer.list({ fieldSelector: 'data.v' }), /fieldSelector is not valid.*'data.v'/);
  assert.ok(
    log.info.some((m) => /listing in pages/.test(m)),
    'the fallback is noted',
  );
  // Exactly: one refused streaming list, three pages of pageSize 3 (3 + 3 + 1), a watch from
  // the list's resourceVersion.
  const configmaps = () => s.requests.filter((r) => r.path.endsWith('/configmaps'));
  await until(() => configmaps().some((r) => r.query.watch && !r.query.sendInitialEvents), {
    what: 'the watch after the list',
  });
  assert.deepEqual(
    configmaps().map(({ query: q }) =>
      [
        q.watch ? 'watch' : 'list',
        q.sendInitialEvents ? 'initial events' : '',
        q.limit ? `limit ${q.limit}` : '',
        q.continue ? 'continue' : '',
        q.watch && !q.sendInitialEvents ? `from ${q.resourceVersion}` : '',
      ]
        .filter(Boolean)
        .join(' '),
    ),
    [
      'watch initial events',
      'list limit 3',
      'list limit 3 continue',
      'list limit 3 continue',
      `watch from ${listRv}`,
    ],
  );
  assert.equal(configmaps()[0].status, 422, 'the streaming list was refused');
  assert.equal(informer.stats().connects, 5);
  // The cached object looks the same after a watch event brings it.
  s.patch('configmaps', 'default', 'c1', (o) => void (o.data.v = '2'));
  await until(() => c.view.get('default/c1')?.data.v === '2', { what: 'the change' });
  assert.deepEqual(informer.get('c1'), {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    ...s.get('configmaps', 'default', 'c1'),
  });
});

test('a streaming list syncs at its initial-events-end bookmark in one request', async (t) => {
  const s = await sim(t, { token: 'tok' });
  for (let i = 0; i < 5; i++) s.create('configmaps', cm(`c${i}`));
  const { informer, c } = await syncedInformer(t, s);
  await until(() => c.synced === 1, { what: 'SYNCED' });
  assert.equal(c.events.filter((e) => e.type === 'ADDED').length, 5);
  assert.deepEqual(c.events[5], { type: 'SYNCED', resourceVersion: s.resourceVersion, relist: false });
  assert.equal(informer.stats().connects, 1, 'the streaming list goes on as the watch');
  assert.equal(informer.resourceVersion, s.resourceVersion);
  // A consumer that starts late: the cache, then SYNCED at the current resourceVersion.
  s.create('configmaps', cm('late'));
  await until(() => c.view.has('default/late'), { what: 'the live change' });
  const late = consume(informer);
  await until(() => late.synced === 1, { what: 'late SYNCED' });
  assert.equal(late.events.length, 7);
  assert.deepEqual(late.events[6], {
    type: 'SYNCED',
    resourceVersion: informer.resourceVersion,
    relist: false,
  });
});

test('reconnects after a clean end, a cut and a stall resume from the last rv: nothing missed or repeated', async (t) => {
  const s = await sim(t, { token: 'tok' });
  s.create('configmaps', cm('a'));
  const { informer, c } = await syncedInformer(t, s, {
    idleTimeoutSeconds: 0.5,
    backoff: { initialSeconds: 0.05 },
  });
  let n = 0;
  const write = () => s.patch('configmaps', 'default', 'a', (o) => void (o.data.v = String(++n)));
  s.endWatches();
  write();
  s.cutWatches();
  write();
  await until(() => caughtUp(c, s), { what: 'catching up after end and cut' });
  s.nextWatchFault({ stallAfterEvents: 0 });
  s.endWatches();
  write();
  await until(() => caughtUp(c, s), { ms: 5000, what: 'catching up after a stall' });
  const changes = c.events.filter((e) => e.type === 'MODIFIED').map((e) => e.object.data.v);
  assert.deepEqual(changes, ['1', '2', '3'], 'every change once, in order');
  const stats = informer.stats();
  assert.equal(stats.relists, 0, 'resumed, never relisted');
  assert.ok(stats.reconnects >= 3, `reconnects: ${stats.reconnects}`);
  assert.ok(
    c.errors.every((e) => e.retrying && e.error.statusCode === 0),
    'only cut/idle connections may show (statusCode 0)',
  );
});

test('a clean end produces no ERROR', async (t) => {
  const s = await sim(t, { token: 'tok' });
  s.create('configmaps', cm('a'));
  const { informer, c } = await syncedInformer(t, s);
  for (let i = 0; i < 3; i++) {
    s.endWatches();
    s.create('configmaps', cm(`after-${i}`));
    await until(() => c.view.has(`default/after-${i}`), { what: `after-${i}` });
  }
  assert.deepEqual(c.errors, []);
  assert.ok(informer.stats().reconnects >= 3);
});

test('5xx and 429 are retried with one ERROR per step, honouring Retry-After', async (t) => {
  const s = await sim(t, { token: 'tok' });
  s.create('configmaps', cm('a'));
  const { log, informer, c } = await syncedInformer(t, s, {
    backoff: { initialSeconds: 0.05, maxSeconds: 0.1 },
  });
  // One says Retry-After in the header only, the other in the Status details only: each is a
  // wait of its own (the backoff alone is 50–100 ms).
  s.failNext(1, 429, 1, { retryAfterIn: 'header' });
  s.failNext(1, 429, 1, { retryAfterIn: 'details' });
  const started = Date.now();
  s.endWatches();
  s.create('configmaps', cm('b'));
  await until(() => c.view.has('default/b'), { what: 'b after the 429s' });
  const took = Date.now() - started;
  assert.ok(took >= 1800, `two Retry-After: 1 waits took ${took} ms`);
  assert.ok(c.errors.length >= 1 && c.errors.length <= 2, `${c.errors.length} ERRORs`);
  assert.ok(c.errors.every((e) => e.retrying === true && e.error.statusCode === 429));
  assert.ok(log.warn.some((m) => /HTTP 429/.test(m) && /retrying in/.test(m)));
  s.failNext(1, 503);
  s.endWatches();
  s.create('configmaps', cm('c'));
  await until(() => c.view.has('default/c'), { what: 'c after the 503' });
  assert.equal(informer.stats().errors.UNKNOWN_ERROR >= 2, true);
  assert.equal(informer.stats().relists, 0);
});

test('a 429 on the list with only a Retry-After header is waited out before the list is asked again', async (t) => {
  const s = await sim(t, { token: 'tok' });
  s.create('configmaps', cm('a'));
  s.failNext(1, 429, 1, { retryAfterIn: 'header' });
  const { informer, c } = await syncedInformer(t, s, {
    initialList: 'paginated',
    backoff: { initialSeconds: 0.05, maxSeconds: 0.1 },
  });
  const lists = requestsOf(s).filter(isList);
  assert.ok(lists.length >= 2, 'the refused list and the one after it');
  const waited = lists[1].time - lists[0].time;
  assert.ok(waited >= 950, `the list was asked again ${waited} ms after the 429`);
  await until(() => c.errors.length === 1, { what: 'one ERROR for the 429' });
  assert.equal(c.errors[0].error.statusCode, 429);
  assert.equal(c.errors[0].retrying, true);
  assert.equal(informer.size, 1);
});

for (const expiredAs of ['event', 'status']) {
  test(`410 (${expiredAs}) relists and sends only the difference, then SYNCED relist`, async (t) => {
    const s = await sim(t, { token: 'tok', expiredAs });
    for (const name of ['same', 'changed', 'gone']) s.create('configmaps', cm(name));
    const { watcher, informer, c } = await syncedInformer(t, s, { backoff: { initialSeconds: 0.05 } });
    await until(() => c.synced === 1, { what: 'SYNCED' });
    const before = c.events.length;
    const goneObject = informer.get('gone', 'default');
    // Cut while the history is compacted: the resumed watch's rv has expired.
    s.nextWatchFault({ stallAfterEvents: 0 });
    s.endWatches();
    // The path meant: the resumed watch is the stalled one (not one a busy machine starts
    // later) when the history moves on and its socket goes.
    await until(() => s.faultQueue.length === 0 && s.activeWatches() === 1, {
      what: 'the resumed watch to stall',
    });
    s.patch('configmaps', 'default', 'changed', (o) => void (o.data.v = '2'));
    s.remove('configmaps', 'default', 'gone');
    s.create('configmaps', cm('new'));
    s.compact();
    // A stalled watch is only freed by its socket going.
    s.destroySockets();
    await until(() => c.relists === 1, { what: 'the relist' });
    const diff = c.events
      .slice(before)
      .filter((e) => e.type !== 'ERROR')
      .map((e) => (e.type === 'SYNCED' ? `SYNCED ${e.relist}` : `${e.type} ${e.object.metadata.name}`));
    assert.deepEqual(diff.sort(), ['ADDED new', 'DELETED gone', 'MODIFIED changed', 'SYNCED true'].sort());
    assert.equal(diff.at(-1), 'SYNCED true');
    const deleted = c.events.find((e) => e.type === 'DELETED');
    assert.deepEqual(deleted.object, goneObject, 'DELETED from a relist carries the last known object');
    assert.equal(viewOf(c.view), storeView(s));
    assert.equal(informer.stats().relists, 1);
  });
}

test('400 (bad selector) and refused credentials end every consumer with ERROR retrying:false', async (t) => {
  const s = await sim(t, { token: 'tok' });
  const { watcher } = recordingWatcher();
  const bad = watcher.informer(params(s), { labelSelector: 'a in (' });
  const c = consume(bad);
  await assert.rejects(bad.synced, /ended before its initial list/);
  await c.done;
  assert.equal(c.errors.length, 1);
  assert.equal(c.errors[0].retrying, false);
  assert.equal(c.errors[0].error.statusCode, 400);
  const after = consume(bad);
  await after.done;
  assert.deepEqual(after.events, c.errors, 'a consumer after the end gets the ERROR and ends');
  const anon = watcher.informer(params(s, { credential: { type: 'anonymous' } }));
  const a = consume(anon);
  await assert.rejects(anon.synced);
  await a.done;
  assert.equal(a.errors[0].retrying, false);
  assert.equal(a.errors[0].error.errorType, 'UNAUTHORIZED_ERROR');
});

test('a missing CRD (plain 404) is retried until it is installed', async (t) => {
  const s = await sim(t, { token: 'tok' });
  const { watcher } = recordingWatcher();
  const informer = watcher.informer(params(s, { group: 'example.com', plural: 'widgets' }), {
    backoff: { initialSeconds: 0.05, maxSeconds: 0.2 },
  });
  t.after(() => informer.close());
  const c = consume(informer);
  await until(() => c.errors.length >= 2, { what: 'retried 404s' });
  assert.ok(c.errors.every((e) => e.retrying && e.error.statusCode === 404));
  s.defineResource('example.com/v1/widgets');
  s.create('example.com/v1/widgets', { metadata: { name: 'w', namespace: 'default' } });
  await informer.synced;
  await until(() => c.view.has('default/w'), { what: 'the widget' });
});

test('getCredential: asked first, again after a 401, and its failure is transient', async (t) => {
  const s = await sim(t, { token: 'one' });
  let token = 'one';
  let asked = 0;
  let failOnce = false;
  const getCredential = async () => {
    asked++;
    if (failOnce) {
      failOnce = false;
      throw new Error('vault is down');
    }
    return { type: 'bearer token', token };
  };
  const { log, informer, c } = await syncedInformer(
    t,
    s,
    {
      backoff: { initialSeconds: 0.05, maxSeconds: 0.2 },
    },
    { credential: undefined, getCredential },
  );
  assert.equal(asked, 1);
  s.rotateToken('two');
  token = 'two';
  failOnce = true;
  s.endWatches();
  s.create('configmaps', cm('after-rotation'));
  await until(() => c.view.has('default/after-rotation'), { what: 'the watch with the fresh token' });
  // The old token was refused with a 401 before the fresh one was sent, and asked for after it.
  const sent = (token) => s.requests.filter((r) => r.headers.authorization === `Bearer ${token}`);
  const refused = sent('one').filter((r) => r.status === 401);
  assert.ok(refused.length >= 1, 'a 401 for the rotated token');
  const fresh = sent('two');
  assert.ok(fresh.length >= 1 && fresh.every((r) => r.time >= refused[0].time), 'the fresh token after it');
  assert.ok(fresh.every((r) => r.status !== 401));
  assert.ok(asked >= 3, `asked ${asked} times`);
  assert.ok(informer.stats().credentialRefreshes >= 1);
  assert.ok(log.warn.some((m) => /getCredential failed: vault is down/.test(m)));
  assert.ok(log.warn.every((m) => !m.includes('two') || !/Bearer/.test(m)));
});

test('informers share per watcher and key; the last close stops the list-watch', async (t) => {
  const { s, watcher, informer: one } = await oneConfigMap(t);
  const two = watcher.informer(params(s));
  assert.equal(
    await Promise.race([two.synced.then(() => 'resolved'), delay(0).then(() => 'pending')]),
    'resolved',
  );
  assert.equal(one.stats().handles, 2);
  assert.equal(one.stats().connects, 1, 'the second handle sent no request');
  const projected = watcher.informer(params(s), { fields: ['data'] });
  await projected.synced;
  assert.equal(projected.stats().handles, 1, 'fields are part of the key');
  const other = recordingWatcher().watcher.informer(params(s));
  await other.synced;
  assert.equal(other.stats().handles, 1, 'sharing is per watcher');
  const c = consume(two);
  one.close();
  s.create('configmaps', cm('b'));
  await until(() => c.view.has('default/b'), { what: 'the shared informer goes on after one handle closes' });
  two.close();
  await c.done;
  projected.close();
  other.close();
  await until(() => s.activeWatches() === 0, { ms: 3000, what: 'no watch left' });
});

test('the sharing key is the whole connection: another CA, TLS check, proxy or server name is another informer', async (t) => {
  const { certs } = require('../packages/kube-watch-native/sim');
  const s = await sim(t, { token: 'tok', tls: true });
  s.create('configmaps', cm('a'));
  const { watcher } = recordingWatcher();
  const at = (clusterDetails) => ({
    ...params(s),
    clusterDetails: { name: 'sim', url: s.url, ...clusterDetails },
  });
  const trusting = watcher.informer(at({ skipTLSVerify: true }));
  t.after(() => trusting.close());
  await trusting.synced;
  // A CA that did not sign the server's certificate: alone it never syncs, and it must not be
  // handed the cache of the informer that skips verification.
  const wrongCa = watcher.informer(at({ caData: Buffer.from(certs.otherCa).toString('base64') }));
  t.after(() => wrongCa.close());
  assert.equal(wrongCa.stats().handles, 1, 'a CA of its own: not the trusting informer');
  await delay(300);
  assert.equal(wrongCa.state().synced, false);
  assert.deepEqual(wrongCa.list(), []);
  for (const extra of [{ tlsServerName: 'localhost' }, { proxyUrl: 'http://127.0.0.1:9' }]) {
    const other = watcher.informer(at({ skipTLSVerify: true, ...extra }));
    assert.equal(other.stats().handles, 1, `${Object.keys(extra)[0]} is part of the key`);
    other.close();
  }
  // The same connection under another cluster name is the same informer.
  const renamed = watcher.informer({
    ...at({ skipTLSVerify: true }),
    clusterDetails: { name: 'other', url: s.url, skipTLSVerify: true },
  });
  assert.equal(renamed.stats().handles, 2, 'the name labels, it does not key');
  renamed.close();
});

test('close(): consumers end normally, later consumers end at once, synced rejects before the sync', async (t) => {
  const { watcher, informer } = await oneConfigMap(t);
  const c = consume(informer);
  await until(() => c.synced === 1, { what: 'SYNCED' });
  informer.close();
  await c.done;
  assert.deepEqual(c.errors, [], 'no ERROR on close');
  const later = consume(informer);
  await later.done;
  assert.deepEqual(later.events, []);
  const slow = await sim(t, { token: 'tok' });
  slow.failNext(5, 503, 1);
  const early = watcher.informer(params(slow));
  early.close();
  await assert.rejects(early.synced, /closed before its initial list/);
  const aborted = new AbortController();
  const viaSignal = watcher.informer(params(slow), { signal: aborted.signal });
  aborted.abort();
  await assert.rejects(viaSignal.synced, /closed before/);
});

test("iterating an informer leaves the native consumer's own methods alone", async (t) => {
  const { NativeInformer } = require('../packages/kube-watch-native/lib/native');
  const { subscribe } = NativeInformer.prototype;
  const subscribed = [];
  NativeInformer.prototype.subscribe = function (...args) {
    const consumer = subscribe.apply(this, args);
    subscribed.push(consumer);
    return consumer;
  };
  t.after(() => Object.assign(NativeInformer.prototype, { subscribe }));
  const { informer } = await oneConfigMap(t);
  for await (const event of informer) {
    assert.equal(event.type, 'ADDED');
    break;
  }
  const c = consume(informer);
  await until(() => c.synced === 1, { what: 'SYNCED' });
  informer.close();
  await c.done;
  assert.equal(subscribed.length, 2, 'one native consumer per iteration');
  for (const consumer of subscribed) {
    assert.deepEqual(Object.getOwnPropertyNames(consumer), [], 'no method set on the native object');
  }
});

test('fields: cached objects hold exactly the listed paths plus name, namespace, uid, resourceVersion', async (t) => {
  for (const sendInitialEvents of [true, false]) {
    const s = await sim(t, { token: 'tok', sendInitialEvents });
    s.create('configmaps', cm('a', { app: 'x' }, 'default', { v: '1', w: '2' }));
    const { watcher } = recordingWatcher();
    const informer = watcher.informer(params(s), { fields: ['data.v'] });
    await informer.synced;
    const stored = s.get('configmaps', 'default', 'a');
    const expected = {
      metadata: {
        name: 'a',
        namespace: 'default',
        uid: stored.metadata.uid,
        resourceVersion: stored.metadata.resourceVersion,
      },
      data: { v: '1' },
    };
    const got = informer.get('a', 'default');
    assert.deepEqual(
      { ...got, metadata: { ...got.metadata } },
      JSON.parse(JSON.stringify(expected)),
      `sendInitialEvents ${sendInitialEvents}`,
    );
    assert.deepEqual(Object.keys(got.metadata).sort(), ['name', 'namespace', 'resourceVersion', 'uid']);
    informer.close();
  }
});

test('a slow consumer sees coalesced latest states and never holds up the cache or others', async (t) => {
  const s = await sim(t, { token: 'tok' });
  const { watcher } = recordingWatcher();
  const informer = watcher.informer(params(s));
  t.after(() => informer.close());
  await informer.synced;
  const fast = consume(informer);
  // The slow one takes its first event only, then sleeps.
  const slowIterator = informer[Symbol.asyncIterator]();
  await until(() => fast.synced === 1, { what: 'SYNCED' });
  const first = await slowIterator.next();
  assert.equal(first.value.type, 'SYNCED');
  for (let i = 0; i < 200; i++) s.create('configmaps', cm(`c${i % 20}-${i}`));
  for (let i = 0; i < 20; i++) s.remove('configmaps', 'default', `c${i}-${i}`);
  for (let round = 0; round < 10; round++)
    s.patch('configmaps', 'default', 'c5-25', (o) => void (o.data.v = String(round)));
  await until(() => caughtUp(fast, s), { what: 'the fast consumer and cache keep up' });
  assert.equal(informer.size, 180);
  // One event per object, ready to take; a 181st (an added-then-deleted one shown) would be
  // ready too, so none comes while we wait a little.
  const slowEvents = [];
  for (let i = 0; i < 180; i++)
    slowEvents.push((await within(slowIterator.next(), 5000, `slow event ${i}`)).value);
  const more = await Promise.race([slowIterator.next(), delay(300).then(() => null)]);
  assert.equal(
    more,
    null,
    `one event per object: added-then-deleted never shown (then ${JSON.stringify(more)})`,
  );
  assert.ok(slowEvents.every((e) => e.type === 'ADDED'));
  const c5 = slowEvents.find((e) => e.object.metadata.name === 'c5-25');
  assert.equal(c5.object.data.v, '9', 'the latest state, never a stale one');
  // The last next() is still pending: closing ends it normally.
  informer.close();
  assert.deepEqual(await slowIterator.next(), { value: undefined, done: true });
});

test('malformed informer options throw at call time with the message of lib/informer.js', () => {
  const { watcher } = recordingWatcher();
  const target = { ...UNREACHABLE, plural: 'configmaps' };
  const cases = [
    [{ initialList: 'lazy' }, `options.initialList must be 'auto', 'paginated' or 'streaming' (got "lazy")`],
    [{ pageSize: 0 }, 'options.pageSize must be a whole number >= 1 (got number)'],
    [{ backoff: { initialSeconds: 0 } }, 'options.backoff.initialSeconds must be a number > 0 (got number)'],
    [
      { backoff: { initialSeconds: 40 } },
      'options.backoff.initialSeconds (40) must not exceed options.backoff.maxSeconds (30)',
    ],
    [{ credentialTtlSeconds: -1 }, 'options.credentialTtlSeconds must be a number > 0 (got number)'],
    [{ watchTimeoutSeconds: 'soon' }, 'options.watchTimeoutSeconds must be a number > 0 (got string)'],
    [{ signal: {} }, 'options.signal must be an AbortSignal (got object)'],
  ];
  for (const [options, message] of cases) {
    assert.throws(
      () => watcher.informer(target, options),
      (err) => err instanceof TypeError && err.message === `kube-watch-native: ${message}`,
      JSON.stringify(options),
    );
  }
  // Finite and positive but too long for a Duration: refused by name, never a panic (it aborted
  // the process before).
  assert.throws(
    () => watcher.informer(target, { watchTimeoutSeconds: 1e300 }),
    /options\.watchTimeoutSeconds \(1e300 s\)/,
  );
  // An idle limit that long is none, as for a watch: the informer opens.
  watcher.informer(target, { idleTimeoutSeconds: 1e300 }).close();
});
