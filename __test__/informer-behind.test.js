'use strict';
// Issue 47: a cluster whose resourceVersions went backwards (etcd restored from an older backup,
// a cluster rebuilt at the same address). The simulator is recreated in place (same port, same
// token and CA, a fresh store at a lower resourceVersion), as the real one was: the informer
// notices at its next watch (a probe: a LIST of one object NotOlderThan its resourceVersion,
// answered 504 ResourceVersionTooLarge) and relists; its consumers see exactly the difference.
// A plain watchResource probes nothing: it yields what the server sends.

const test = require('node:test');
const assert = require('node:assert/strict');
const { sim, recordingWatcher, params, delay, cm } = require('./informer-helpers');
const { until } = require('../testbed/wait');

/** Every event an informer's consumer takes, as `TYPE name rv` (SYNCED: `SYNCED rv relist`). */
function record(informer) {
  const seen = [];
  (async () => {
    for await (const e of informer) {
      if (e.type === 'SYNCED') seen.push(`SYNCED ${e.resourceVersion} ${e.relist}`);
      else if (e.type === 'ERROR') seen.push(`ERROR ${e.error.errorType}`);
      else seen.push(`${e.type} ${e.object.metadata.name} ${e.resourceVersion}`);
    }
  })();
  return seen;
}

/** The old cluster: `old-1`, `old-2` and `shared`, then 300 writes (its resourceVersion near 305). */
function oldCluster(s) {
  for (const name of ['old-1', 'old-2', 'shared']) s.create('configmaps', cm(name));
  for (let i = 0; i < 300; i++)
    s.patch('configmaps', 'default', 'old-2', (o) => ({ ...o, data: { v: String(i) } }));
}

for (const bookmarkIntervalMs of [200, 60000]) {
  test(`an informer whose cluster is recreated at a lower resourceVersion relists it within seconds (bookmarks every ${bookmarkIntervalMs} ms)`, async (t) => {
    const old = await sim(t, { token: 'tok', bookmarkIntervalMs });
    oldCluster(old);
    const { watcher, log } = recordingWatcher();
    const informer = watcher.informer(params(old), { backoff: { initialSeconds: 0.2, maxSeconds: 1 } });
    t.after(() => informer.close());
    const seen = record(informer);
    await informer.synced;
    const oldRv = Number(informer.resourceVersion);
    assert.ok(oldRv > 300, `the old cluster's resourceVersion: ${oldRv}`);
    const oldSeen = seen.length;
    assert.deepEqual(seen.slice(-1), [`SYNCED ${oldRv} false`]);
    const [shared] = old.list('configmaps').filter((o) => o.metadata.name === 'shared');

    const recreatedAt = Date.now();
    const next = await old.recreate();
    t.after(() => next.close());
    assert.equal(next.url, old.url, 'the same address');
    next.create('configmaps', cm('new-1'));
    next.create('configmaps', cm('shared'));
    const newRv = Number(next.store.resourceVersion);
    assert.ok(newRv < oldRv);

    await until(() => seen.includes(`SYNCED ${newRv} true`), {
      ms: 15000,
      what: 'the relist of the new cluster',
    });
    const took = Date.now() - recreatedAt;
    const [sharedNow] = next.list('configmaps').filter((o) => o.metadata.name === 'shared');
    // The relist's difference, in key order; a broken connection may show as an ERROR first.
    assert.deepEqual(
      seen.slice(oldSeen).filter((e) => !e.startsWith('ERROR')),
      [
        `ADDED new-1 ${next.get('configmaps', 'default', 'new-1').metadata.resourceVersion}`,
        `DELETED old-1 ${old.get('configmaps', 'default', 'old-1').metadata.resourceVersion}`,
        `DELETED old-2 ${old.get('configmaps', 'default', 'old-2').metadata.resourceVersion}`,
        // Another object of the same name: the old one goes, the new one comes.
        `DELETED shared ${shared.metadata.resourceVersion}`,
        `ADDED shared ${sharedNow.metadata.resourceVersion}`,
        `SYNCED ${newRv} true`,
      ],
    );
    assert.deepEqual(
      informer
        .list()
        .map((o) => o.metadata.name)
        .sort(),
      ['new-1', 'shared'],
    );
    assert.equal(informer.get('shared', 'default').metadata.uid, sharedNow.metadata.uid);
    assert.ok(took < 5000, `noticed at the next watch, in ${took} ms`);
    const warning = log.warn.find((m) => m.includes('is behind'));
    assert.ok(warning, `a warning: ${JSON.stringify(log.warn)}`);
    assert.match(warning, /cluster 'sim'/);
    assert.ok(
      warning.includes(`(${newRv - 2})`) ||
        warning.includes(`(${newRv - 1})`) ||
        warning.includes(`(${newRv})`),
      warning,
    );
    assert.ok(warning.includes(`behind the ${oldRv} `), warning);
    assert.equal(informer.stats().relists, 1);
    // The probe: one object, not older than the informer's resourceVersion.
    const probes = next.requests.filter(
      (r) => r.query.resourceVersionMatch === 'NotOlderThan' && r.query.limit === '1',
    );
    assert.ok(probes.length >= 1, 'probed');
    assert.equal(probes[0].query.resourceVersion, String(oldRv));

    // And it follows the new cluster from there.
    next.create('configmaps', cm('new-2'));
    await until(() => informer.get('new-2', 'default'), { what: 'a change of the new cluster' });
  });
}

test('the simulator answers a LIST NotOlderThan a resourceVersion it never reached as the API server does', async (t) => {
  const s = await sim(t, { token: 'tok' });
  s.create('configmaps', cm('a'));
  const current = Number(s.store.resourceVersion);
  const get = async (query) => {
    const res = await fetch(`${s.url}/api/v1/namespaces/default/configmaps?${query}`, {
      headers: { authorization: 'Bearer tok' },
    });
    return { status: res.status, body: await res.json() };
  };
  // With a limit (etcd answers): at once.
  let started = Date.now();
  let answer = await get(`limit=1&resourceVersion=${current + 100}&resourceVersionMatch=NotOlderThan`);
  assert.ok(Date.now() - started < 1000);
  assert.equal(answer.status, 504);
  assert.equal(answer.body.reason, 'Timeout');
  assert.equal(
    answer.body.message,
    `Timeout: Too large resource version: ${current + 100}, current: ${current}`,
  );
  assert.equal(answer.body.details.causes[0].reason, 'ResourceVersionTooLarge');
  // Without one (the watch cache answers): after its 3 s wait.
  started = Date.now();
  answer = await get(`resourceVersion=${current + 100}&resourceVersionMatch=NotOlderThan`);
  assert.ok(Date.now() - started >= 2900, 'the cache waited');
  assert.equal(answer.status, 504);
  // Not older than one it reached: the list.
  answer = await get(`limit=1&resourceVersion=${current}&resourceVersionMatch=NotOlderThan`);
  assert.equal(answer.status, 200);
  assert.equal(answer.body.items.length, 1);
  // What a real server refuses.
  answer = await get('resourceVersionMatch=NotOlderThan');
  assert.equal(answer.status, 422);
  assert.match(answer.body.message, /resourceVersionMatch is forbidden unless resourceVersion is provided/);
});

test('a plain watchResource from a resourceVersion ahead of the server yields what the server sends: nothing, no probe', async (t) => {
  const s = await sim(t, { token: 'tok', bookmarkIntervalMs: 100 });
  s.create('configmaps', cm('a'));
  const current = Number(s.store.resourceVersion);
  const { watcher } = recordingWatcher();
  const controller = new AbortController();
  const events = [];
  const from = s.requests.length;
  const done = (async () => {
    for await (const e of watcher.watchResource(params(s), {
      resourceVersion: String(current + 5),
      allowWatchBookmarks: true,
      signal: controller.signal,
    })) {
      events.push(e);
    }
  })();
  // Silent while the server is behind, bookmarks included.
  for (let i = 0; i < 3; i++) s.create('configmaps', cm(`b${i}`));
  await delay(600);
  assert.deepEqual(events, []);
  // Past it (b4 is at its resourceVersion), the server's events flow.
  for (let i = 3; i < 8; i++) s.create('configmaps', cm(`b${i}`));
  await until(() => events.some((e) => e.type === 'ADDED'), { what: 'the events past the resourceVersion' });
  assert.deepEqual(
    events.filter((e) => e.type === 'ADDED').map((e) => e.object.metadata.name),
    ['b5', 'b6', 'b7'],
  );
  assert.ok(!events.some((e) => e.type === 'ERROR'));
  controller.abort();
  await done;
  assert.deepEqual(
    s.requests.slice(from).filter((r) => r.query.watch !== 'true' && r.query.watch !== '1'),
    [],
    'no LIST: a plain watch probes nothing',
  );
});
