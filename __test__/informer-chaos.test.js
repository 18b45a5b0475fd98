'use strict';
// The seeded chaos run of issue 10: at least 2 000 writes while the simulator cuts and ends
// watches, drops sockets, stalls, answers 5xx/429, compacts (410) and rotates the token; at the
// end every consumer's replayed view and the cache equal the store, and each kind of fault is
// known to have happened (the driver goes through every kind first). The seed is printed.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startChaos } = require('../packages/kube-watch-native/sim');
const {
  sim,
  recordingWatcher,
  params,
  consume,
  storeView,
  viewOf,
  delay,
  keyOf,
  caughtUp,
} = require('./informer-helpers');

test('chaos: every consumer and list() end equal to the store', { timeout: 120_000 }, async (t) => {
  const seed = Number(process.env.CHAOS_SEED) || 1 + Math.floor(Math.random() * 1e6);
  t.diagnostic(`chaos seed ${seed} (rerun with CHAOS_SEED=${seed})`);
  let token = 'initial';
  const s = await sim(t, { token, historyLimit: 200 });
  const { watcher } = recordingWatcher();
  const informer = watcher.informer(
    params(s, { credential: undefined, getCredential: () => ({ type: 'bearer token', token }) }),
    { backoff: { initialSeconds: 0.05, maxSeconds: 0.5 }, idleTimeoutSeconds: 1, pageSize: 7 },
  );
  t.after(() => informer.close());
  const consumers = [consume(informer), consume(informer)];
  // Synced first: a 410 during the initial list would be a restart of it, not a relist.
  await informer.synced;
  const chaos = startChaos(s, { seed, writes: 2000, onRotate: (next) => (token = next) });
  // A third consumer joins half-way.
  await delay(300);
  consumers.push(consume(informer));
  const summary = await chaos.done;
  assert.equal(summary.writes, 2000, `seed ${seed}`);
  const listed = () => viewOf(new Map(informer.list().map((o) => [keyOf(o), o])));
  // Faults the chaos queued for the next requests (scripted 5xx/429 with Retry-After, watches
  // that stall or break) still hit the informer after the last write; each costs it a second or
  // so. The informer has 20 s to converge once the simulator has none left (bounded by 60 s).
  const drained = performance.now() + 60_000;
  while ((s.failures.length || s.faultQueue.length) && performance.now() < drained) await delay(50);
  const deadline = performance.now() + 20_000;
  const equal = () => listed() === storeView(s) && consumers.every((c) => caughtUp(c, s));
  while (!equal() && performance.now() < deadline) await delay(50);
  assert.equal(listed(), storeView(s), `seed ${seed}: list() equals the store`);
  for (const [i, c] of consumers.entries()) {
    assert.equal(viewOf(c.view), storeView(s), `seed ${seed}: consumer ${i} equals the store`);
    assert.ok(
      c.errors.every((e) => e.retrying),
      `seed ${seed}: only transient errors`,
    );
  }
  for (const o of s.list('configmaps')) {
    assert.deepEqual(
      informer.get(o.metadata.name, o.metadata.namespace),
      { kind: 'ConfigMap', apiVersion: 'v1', ...o },
      `seed ${seed}: ${keyOf(o)} as stored`,
    );
  }
  const stats = informer.stats();
  const happened = chaos.happened();
  t.diagnostic(
    `faults ${JSON.stringify(summary.faults)}; happened ${JSON.stringify(happened)}; ` +
      `stats ${JSON.stringify({ ...stats, clusters: undefined })}`,
  );
  // Every kind of fault did happen in this run, and the informer went through it.
  const answered = (...codes) => codes.reduce((n, code) => n + (happened.answered[code] || 0), 0);
  const errors = new Set(consumers[0].errors.map((e) => e.error.statusCode));
  assert.ok(happened.watchesBroken > 0, `seed ${seed}: a cut broke an open watch`);
  assert.ok(answered(500, 503) > 0 && (errors.has(500) || errors.has(503)), `seed ${seed}: a 5xx`);
  assert.ok(answered(429) > 0 && errors.has(429), `seed ${seed}: a 429`);
  assert.ok(stats.relists > 0 && consumers[0].relists > 0, `seed ${seed}: a 410 and a relist`);
  assert.ok(
    happened.rotations > 0 && answered(401) > 0 && stats.credentialRefreshes > 0,
    `seed ${seed}: a rotated token refused (401) and the credential asked for again`,
  );
});
