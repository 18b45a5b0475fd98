'use strict';
// The informer behaviours of issue 10 that need a closer look at the simulator's request log:
// credential refreshes (TTL, 403), a continue token expiring mid-list, the streaming list's
// fallback and its memory, the idle timeout with and without bookmarks, Retry-After, and what
// stats().events counts.

const test = require('node:test');
const assert = require('node:assert/strict');
const {
  sim,
  requestsOf,
  isWatch,
  isStreamingList,
  isList,
  isProbe,
  requestKind,
  cm,
  storeView,
  recordingWatcher,
  params,
  syncedInformer,
  consume,
  viewOf,
  caughtUp,
  delay,
} = require('./informer-helpers');
const { within, until } = require('../testbed/wait');

test('getCredential is asked again before a reconnect once its answer is older than credentialTtlSeconds', async (t) => {
  const s = await sim(t, { token: 'tok' });
  s.create('configmaps', cm('a'));
  let asked = 0;
  const getCredential = () => {
    asked++;
    return { type: 'bearer token', token: 'tok' };
  };
  const { watcher } = recordingWatcher();
  // Long enough that the sync and a first reconnect fit inside it on a busy machine.
  const ttlSeconds = 3;
  const informer = watcher.informer(params(s, { credential: undefined, getCredential }), {
    credentialTtlSeconds: ttlSeconds,
    backoff: { initialSeconds: 0.05, maxSeconds: 0.1 },
  });
  t.after(() => informer.close());
  const c = consume(informer);
  await informer.synced;
  assert.equal(asked, 1, 'asked before the first request');
  // A reconnect while the answer is fresh does not ask.
  s.endWatches();
  s.create('configmaps', cm('fresh'));
  await until(() => c.view.has('default/fresh'), { what: 'the reconnect with a fresh credential' });
  assert.equal(asked, 1, 'a fresh answer is reused');
  await delay(ttlSeconds * 1000 + 100);
  const from = s.requests.length;
  s.endWatches();
  s.create('configmaps', cm('stale'));
  await until(() => c.view.has('default/stale'), { what: 'the reconnect after the TTL' });
  assert.equal(asked, 2, 'an answer older than credentialTtlSeconds is asked again');
  assert.equal(informer.stats().credentialRefreshes, 1);
  const reconnects = requestsOf(s, from).filter(isWatch);
  assert.ok(reconnects.length >= 1 && reconnects.every((r) => !r.query.sendInitialEvents), 'a plain watch');
  assert.deepEqual(c.errors, [], 'no 401 was needed to refresh');
});

test('getCredential is asked again after a 403, not only after a 401', async (t) => {
  const s = await sim(t, { token: 'tok' });
  s.create('configmaps', cm('a'));
  let asked = 0;
  const getCredential = async () => {
    asked++;
    return { type: 'bearer token', token: 'tok' };
  };
  const { informer, c } = await syncedInformer(
    t,
    s,
    {
      backoff: { initialSeconds: 0.05, maxSeconds: 0.1 },
    },
    { credential: undefined, getCredential },
  );
  assert.equal(asked, 1);
  s.failNext(1, 403);
  s.endWatches();
  s.create('configmaps', cm('after-403'));
  await until(() => c.view.has('default/after-403'), { what: 'the watch after the 403' });
  assert.equal(asked, 2, 'a 403 makes the informer ask for a fresh credential');
  assert.equal(informer.stats().credentialRefreshes, 1);
  assert.ok(c.errors.length === 1 && c.errors[0].error.statusCode === 403 && c.errors[0].retrying);
});

test('a continue token that expires mid-list (410) restarts the list: nothing missing or repeated', async (t) => {
  const s = await sim(t, { token: 'tok', sendInitialEvents: false });
  for (let i = 0; i < 20; i++) s.create('configmaps', cm(`c${i}`));
  let compacted = false;
  s.on('list', ({ continued }) => {
    // After the first page is served: a write, then compaction, so its token expires.
    if (compacted || continued) return;
    compacted = true;
    s.create('configmaps', cm('during'));
    s.remove('configmaps', 'default', 'c19');
    s.compact();
  });
  const { watcher, log } = recordingWatcher();
  const informer = watcher.informer(params(s), { initialList: 'paginated', pageSize: 5 });
  t.after(() => informer.close());
  let atSync = null;
  const c = consume(informer, {
    onEvent: (e, state) => {
      if (e.type === 'SYNCED' && atSync === null) atSync = viewOf(state.view);
    },
  });
  await informer.synced;
  await until(() => c.synced === 1, { what: 'SYNCED' });
  assert.equal(atSync, storeView(s), 'SYNCED comes with the complete, current state');
  assert.equal(informer.size, 20);
  const added = c.events.filter((e) => e.type === 'ADDED').map((e) => e.object.metadata.name);
  assert.equal(added.length, 20, 'one ADDED per object, none repeated');
  assert.ok(added.includes('during') && !added.includes('c19'));
  const lists = requestsOf(s).filter(isList);
  assert.deepEqual(
    lists.slice(0, 3).map((r) => Boolean(r.query.continue)),
    [false, true, false],
    'the expired continue is followed at once by a new list from the start',
  );
  assert.deepEqual(c.errors, [], 'a restarted list is no error');
  assert.deepEqual(informer.stats().errors, {});
  assert.ok(log.info.some((m) => /continue token expired/.test(m)));
});

test("initialList 'auto' falls back to pages on a change before the initial-events-end bookmark, once per watcher and cluster", async (t) => {
  const s = await sim(t, { token: 'tok' });
  s.create('configmaps', cm('a'));
  s.create('configmaps', cm('b', {}, 'team-a'));
  const a = s.get('configmaps', 'default', 'a');
  // A server that ignores sendInitialEvents: a plain watch from "now" sends a change at once.
  s.nextWatchFault({
    onWatch: (ctx) =>
      ctx.end(
        `${JSON.stringify({ type: 'MODIFIED', object: { kind: 'ConfigMap', apiVersion: 'v1', ...a } })}\n`,
      ),
  });
  const { watcher, log } = recordingWatcher();
  const first = watcher.informer(params(s), { namespace: 'default' });
  t.after(() => first.close());
  const c = consume(first);
  await first.synced;
  await until(() => c.synced === 1, { what: 'SYNCED' });
  assert.deepEqual(
    c.events.map((e) => e.type),
    ['ADDED', 'SYNCED'],
    'the change of the failed streaming list is not shown',
  );
  await until(() => requestsOf(s).length >= 3, { what: 'the watch after the pages' });
  const firstRequests = requestsOf(s, 0).map(requestKind);
  assert.deepEqual(firstRequests.slice(0, 3), ['stream', 'list', 'watch']);
  assert.ok(log.info.some((m) => /listing in pages/.test(m)));
  // The same watcher and cluster: pages at once, no streaming list tried again.
  const from = s.requests.length;
  const second = watcher.informer(params(s), { namespace: 'team-a' });
  t.after(() => second.close());
  await second.synced;
  assert.equal(second.size, 1);
  const secondRequests = requestsOf(s, from);
  assert.ok(secondRequests.some(isList), 'the second informer lists in pages');
  assert.ok(!secondRequests.some(isStreamingList), 'the fallback is remembered per watcher and cluster');
  // A forced streaming list still streams on that cluster.
  const forced = watcher.informer(params(s), {
    namespace: 'team-a',
    labelSelector: 'x!=y',
    initialList: 'streaming',
  });
  t.after(() => forced.close());
  const fromForced = s.requests.length;
  await forced.synced;
  assert.equal(forced.size, 1);
  const forcedRequests = requestsOf(s, fromForced);
  assert.ok(forcedRequests.some(isStreamingList) && !forcedRequests.some(isList), "'streaming' is forced");
  // Another watcher has its own memory.
  const other = recordingWatcher().watcher.informer(params(s), { namespace: 'default' });
  t.after(() => other.close());
  const fromOther = s.requests.length;
  await other.synced;
  assert.ok(requestsOf(s, fromOther).some(isStreamingList), 'memory is per watcher');
});

test("initialList 'auto' falls back to pages on a 4xx answer to the streaming list; 'streaming' does not", async (t) => {
  const s = await sim(t, { token: 'tok' });
  s.create('configmaps', cm('a'));
  s.nextWatchFault({ status: 400 });
  const { watcher } = recordingWatcher();
  const auto = watcher.informer(params(s));
  t.after(() => auto.close());
  await auto.synced;
  assert.equal(auto.size, 1);
  await until(() => requestsOf(s).length >= 3, { what: 'the watch after the pages' });
  const kinds = requestsOf(s).map(requestKind);
  assert.deepEqual(kinds.slice(0, 3), ['stream', 'list', 'watch']);
  // Forced streaming on a server that refuses it is not turned into pages.
  const old = await sim(t, { token: 'tok', sendInitialEvents: false });
  old.create('configmaps', cm('a'));
  const forced = recordingWatcher().watcher.informer(params(old), { initialList: 'streaming' });
  t.after(() => forced.close());
  const c = consume(forced);
  await assert.rejects(forced.synced);
  await c.done;
  assert.equal(c.errors.at(-1).error.statusCode, 422);
  assert.ok(!requestsOf(old).some(isList), 'no paginated list');
});

test('idleTimeoutSeconds counts bookmarks as traffic: a quiet watch with bookmarks is kept', async (t) => {
  const s = await sim(t, { token: 'tok', bookmarkIntervalMs: 150 });
  s.create('configmaps', cm('a'));
  const { watcher } = recordingWatcher();
  // Bookmarks every 150 ms against a 1 s idle limit: a loaded machine may delay one by a lot
  // and still not by the limit; 2.5 s quiet is over two idle limits.
  const informer = watcher.informer(params(s), { idleTimeoutSeconds: 1 });
  t.after(() => informer.close());
  const c = consume(informer);
  await informer.synced;
  await delay(2500);
  assert.deepEqual(c.errors, []);
  assert.equal(informer.stats().reconnects, 0, 'never dropped as idle');
  assert.equal(requestsOf(s).length, 1, 'the one streaming list goes on as the watch');
  assert.ok(Number(informer.resourceVersion) >= Number(s.resourceVersion));
});

test('an idle watch (no bookmarks) is dropped and resumed, not relisted', async (t) => {
  const s = await sim(t, { token: 'tok', bookmarkIntervalMs: 60_000 });
  s.create('configmaps', cm('a'));
  const { informer, c } = await syncedInformer(t, s, {
    idleTimeoutSeconds: 0.4,
    backoff: { initialSeconds: 0.05, maxSeconds: 0.1 },
  });
  const rv = informer.resourceVersion;
  await until(() => informer.stats().reconnects >= 2, { ms: 5000, what: 'two idle drops' });
  s.create('configmaps', cm('b'));
  await until(() => c.view.has('default/b'), { what: 'the change after the drops' });
  const later = requestsOf(s).slice(1);
  const watches = later.filter((r) => !isProbe(r));
  assert.ok(watches.length >= 2);
  assert.ok(
    watches.every((r) => isWatch(r) && !r.query.sendInitialEvents),
    'only plain watches and their probes, no list',
  );
  assert.ok(
    later.filter(isProbe).every((r) => r.query.resourceVersion === rv),
    'each resumed watch probed first, from the last resourceVersion',
  );
  assert.equal(watches[0].query.resourceVersion, rv, 'resumed from the last resourceVersion');
  assert.equal(informer.stats().relists, 0);
  assert.ok(c.errors.every((e) => e.retrying && e.error.statusCode === 0));
});

test('transient failures: at most one ERROR per backoff step', async (t) => {
  const s = await sim(t, { token: 'tok' });
  s.create('configmaps', cm('a'));
  const { log, informer, c } = await syncedInformer(t, s, {
    backoff: { initialSeconds: 0.05, maxSeconds: 0.2 },
  });
  const from = s.requests.length;
  s.failNext(4, 503);
  s.endWatches();
  s.create('configmaps', cm('b'));
  await until(() => c.view.has('default/b'), { what: 'b after the 503s' });
  const tries = requestsOf(s, from);
  // The resumed watch's probe meets the failures: four refused, then the probe and the watch.
  assert.equal(tries.length, 6, 'four failures, then the probe and the watch');
  assert.ok(tries.slice(0, 5).every(isProbe) && isWatch(tries[5]));
  assert.ok(c.errors.length >= 1 && c.errors.length <= 4, `${c.errors.length} ERRORs for 4 steps`);
  const warnings = log.warn.filter((m) => /HTTP 503/.test(m));
  assert.equal(warnings.length, 4, 'one warning per step');
});

test('429 Retry-After (header, Status details, in-stream ERROR) is waited out before the next request', async (t) => {
  const s = await sim(t, { token: 'tok' });
  s.create('configmaps', cm('a'));
  const { informer, c } = await syncedInformer(t, s, { backoff: { initialSeconds: 0.05, maxSeconds: 0.1 } });
  const statusBody = (seconds) =>
    JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      reason: 'TooManyRequests',
      code: 429,
      details: { retryAfterSeconds: seconds },
    });
  // Each case says Retry-After one way only: the reflector must honour each on its own.
  const faults = {
    header: () => s.failNext(1, 429, 1, { retryAfterIn: 'header' }),
    details: () => s.nextWatchFault({ status: 429, body: statusBody(1) }),
    event: () =>
      s.nextWatchFault({
        onWatch: (ctx) =>
          ctx.end(`${JSON.stringify({ type: 'ERROR', object: JSON.parse(statusBody(1)) })}\n`),
      }),
  };
  for (const [how, arm] of Object.entries(faults)) {
    const from = s.requests.length;
    arm();
    s.endWatches();
    s.create('configmaps', cm(`after-${how}`));
    await until(() => c.view.has(`default/after-${how}`), {
      ms: 5000,
      what: `the change after the 429 (${how})`,
    });
    // The resumed watch is probed first: the header case refuses the probe, the others the watch.
    const seq = requestsOf(s, from);
    assert.ok(isProbe(seq[0]), `${how}: the probe first`);
    const [refused, next] = how === 'header' ? seq : seq.slice(1);
    assert.ok(
      (how === 'header' ? isProbe(refused) : isWatch(refused)) && isProbe(next),
      `${how}: the refused request and the probe after it`,
    );
    const waited = next.time - refused.time;
    assert.ok(waited >= 950, `${how}: the next request came ${waited} ms after the 429`);
  }
  assert.ok(c.errors.every((e) => e.error.statusCode === 429 && e.retrying));
  assert.equal(informer.stats().relists, 0);
});

test('stats().events counts the changes received: N writes with no faults → N, bookmarks not counted', async (t) => {
  for (const initialList of ['streaming', 'paginated']) {
    const s = await sim(t, { token: 'tok', bookmarkIntervalMs: 50, historyLimit: 10_000 });
    for (let i = 0; i < 5; i++) s.create('configmaps', cm(`seed-${i}`));
    const { informer, c } = await syncedInformer(t, s, {
      initialList,
      pageSize: 2,
      backoff: { initialSeconds: 0.05, maxSeconds: 0.1 },
    });
    assert.equal(informer.stats().events, 5, `${initialList}: one per listed object`);
    let writes = 0;
    for (let i = 0; i < 300; i++) {
      const name = `w-${i % 25}`;
      if (!s.get('configmaps', 'default', name)) s.create('configmaps', cm(name));
      else if (i % 7 === 0) s.remove('configmaps', 'default', name);
      else s.patch('configmaps', 'default', name, (o) => void (o.data.v = String(i)));
      writes++;
      // Resumes in between must neither lose nor repeat one.
      if (i === 100) s.endWatches();
      if (i === 200) s.cutWatches();
      if (i % 50 === 0) await delay(5);
    }
    await until(() => caughtUp(c, s), { what: `${initialList}: caught up` });
    await delay(200);
    const stats = informer.stats();
    assert.equal(stats.relists, 0);
    assert.equal(stats.events, 5 + writes, `${initialList}: events = listed objects + writes`);
    informer.close();
  }
});

test('a slow consumer never delays the cache or another consumer, and holds at most one pending change per object', async (t) => {
  const s = await sim(t, { token: 'tok' });
  for (let i = 0; i < 10; i++) s.create('configmaps', cm(`o${i}`));
  const { watcher } = recordingWatcher();
  const informer = watcher.informer(params(s));
  t.after(() => informer.close());
  await informer.synced;
  const slow = informer[Symbol.asyncIterator]();
  for (let i = 0; i < 11; i++) await slow.next(); // its ADDED and SYNCED, then it stops reading
  const fast = consume(informer);
  await until(() => fast.synced === 1, { what: 'SYNCED' });
  for (let round = 0; round < 500; round++) {
    for (let i = 0; i < 10; i++)
      s.patch('configmaps', 'default', `o${i}`, (o) => void (o.data.v = String(round)));
  }
  // Reached while the slow consumer still takes nothing: a cache or consumer it held up would
  // never get there. The time limits only bound a hang (a busy machine is slow, not stuck).
  const last = s.get('configmaps', 'default', 'o9').metadata.resourceVersion;
  await until(() => informer.get('o9', 'default')?.metadata.resourceVersion === last, {
    ms: 20_000,
    what: 'get() up to date',
  });
  await until(() => caughtUp(fast, s), { ms: 20_000, what: 'the fast consumer up to date' });
  assert.equal(informer.list().length, 10);
  // Everything the slow one held comes out now: one change per object, the latest, ready to
  // take; an eleventh would be ready too, so none comes while we wait a little.
  const held = [];
  for (let i = 0; i < 10; i++) held.push((await within(slow.next(), 5000, `held change ${i}`)).value);
  const more = await Promise.race([slow.next(), delay(300).then(() => null)]);
  assert.equal(more, null, `at most one pending change per object (then ${JSON.stringify(more)})`);
  assert.ok(held.every((e) => e.type === 'MODIFIED' && e.object.data.v === '499'));
  assert.equal(informer.stats().consumers, 2);
});

test('state().aliveAt: null before any proof, set by the list, moved by an event and a reopened watch, left behind by a silent one', async (t) => {
  const s = await sim(t, { token: 'tok' });
  s.create('configmaps', cm('a'));
  const aborted = new AbortController();
  aborted.abort();
  assert.equal(
    recordingWatcher().watcher.informer(params(s), { signal: aborted.signal }).state().aliveAt,
    null,
  );
  const before = Date.now();
  const { informer, c } = await syncedInformer(t, s);
  const listed = informer.state().aliveAt;
  assert.ok(listed >= before && listed <= Date.now(), `the list proves it: ${listed}`);
  await delay(20);
  s.create('configmaps', cm('b'));
  await until(() => c.view.has('default/b'), { what: 'b' });
  const changed = informer.state().aliveAt;
  assert.ok(changed > listed, 'an event moves it');
  await delay(20);
  // The next watch answers 200 and then says nothing: a stream alive but stalled.
  s.nextWatchFault({ stallAfterEvents: 0 });
  s.endWatches();
  await until(() => informer.state().aliveAt > changed, { what: 'the reopened watch' });
  const reopened = informer.state().aliveAt;
  s.create('configmaps', cm('c'));
  await delay(300);
  assert.ok(!c.view.has('default/c'), 'the stalled stream sent nothing');
  assert.equal(informer.state().aliveAt, reopened, 'silence proves nothing');
  assert.ok(informer.state().watchingSince !== null, 'while the stream still counts as watched');
});
