'use strict';
// What keeps the process alive: a running informer does (even with no consumer); a finished one
// does not; a rejected `synced` nobody awaits does not crash it.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const path = require('node:path');
const { sim } = require('./informer-helpers');

const ROOT = path.join(__dirname, '..', 'packages', 'kube-watch-native');

/**
 * Runs `body` in a child with `URL` set. It is killed (SIGTERM) after `ms`, or once
 * `killWhen()` resolves; resolves to `{ code, signal, killed, stderr }`, where `killed` says
 * the child was still running when this killed it (a crash is not `killed`).
 */
function child(url, body, ms, killWhen) {
  const script = `const { NativeKubernetesWatcher } = require(${JSON.stringify(ROOT)});
    const watcher = new NativeKubernetesWatcher({ logger: { warn() {}, error() {} } });
    const params = { clusterDetails: { name: 's', url: ${JSON.stringify(url)} },
      credential: { type: 'bearer token', token: 'tok' }, group: '', apiVersion: 'v1', plural: 'configmaps' };
    ${body}`;
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    let killed = false;
    let exited = false;
    const kill = () => {
      if (exited) return;
      killed = true;
      proc.kill('SIGTERM');
    };
    proc.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(kill, ms);
    killWhen?.then(kill);
    proc.on('exit', (code, signal) => {
      exited = true;
      clearTimeout(timer);
      resolve({ code, signal, killed, stderr });
    });
  });
}

/** Resolves once simulator `s` has seen a request for configmaps (the informer's list). */
function firstRequest(s) {
  const seen = () => s.requests.some((r) => r.path.endsWith('/configmaps'));
  if (seen()) return Promise.resolve();
  return new Promise((resolve) => {
    const onRequest = () => {
      if (!seen()) return;
      s.off('request', onRequest);
      resolve();
    };
    s.on('request', onRequest);
  });
}

test('a running informer keeps the process alive even with no consumer', async (t) => {
  const s = await sim(t, { token: 'tok' });
  // Alive a second after its list was asked for (a process the informer does not hold would
  // have ended before the request went out), until this test kills it; 20 s for a slow start.
  const asked = firstRequest(s);
  const run = await child(
    s.url,
    `watcher.informer(params);`,
    20_000,
    asked.then(() => new Promise((r) => setTimeout(r, 1000))),
  );
  assert.ok(
    s.requests.some((r) => r.path.endsWith('/configmaps')),
    'the informer asked for its list',
  );
  assert.deepEqual([run.killed, run.signal], [true, 'SIGTERM'], `still running when killed: ${run.stderr}`);
});

test('a closed or finished informer lets the process exit', async (t) => {
  const s = await sim(t, { token: 'tok' });
  const closed = await child(
    s.url,
    `const i = watcher.informer(params); i.synced.then(() => i.close());`,
    10000,
  );
  assert.deepEqual([closed.killed, closed.code], [false, 0], closed.stderr);
  const finished = await child(s.url, `watcher.informer(params, { labelSelector: 'a in (' });`, 10000);
  assert.deepEqual([finished.killed, finished.code], [false, 0], finished.stderr);
});

test('a rejected synced that nobody awaits does not crash the process', async (t) => {
  const s = await sim(t, { token: 'tok' });
  // The list is refused, so the informer cannot sync before close() even when a loaded
  // machine lets the native side finish a list before the child's next line runs.
  s.failNext(100, 503);
  const run = await child(
    s.url,
    // Looked at only after the rejection would have crashed the process: a handler attached
    // then does not stop an unhandled rejection, it only reports how synced settled.
    `const i = watcher.informer(params); i.close();
    setTimeout(() => i.synced.then(
      () => console.error('alive; synced resolved'),
      (err) => console.error('alive; synced rejected: ' + err.message)), 200);`,
    10000,
  );
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /^alive; synced rejected: .*closed before its initial list was cached/m);
});

test('watcher.close() closes every informer opened through it, and any opened later', async (t) => {
  const s = await sim(t);
  const result = await child(
    s.url,
    `const a = watcher.informer(params);
     const b = watcher.informer({ ...params, plural: 'pods' });
     const other = new NativeKubernetesWatcher({ logger: { warn() {}, error() {} } });
     const kept = other.informer({ ...params, plural: 'secrets' });
     Promise.all([a.synced, b.synced, kept.synced]).then(() => {
       watcher.close();
       watcher.close();
       const late = watcher.informer({ ...params, plural: 'services' });
       if (late.state().finished !== true) process.stderr.write('a late informer is open\\n');
       // Only the other watcher's informer keeps the process alive; closing it lets it exit.
       setTimeout(() => kept.close(), 300);
     });`,
    10_000,
  );
  assert.equal(result.killed, false, `the child still ran: ${result.stderr}`);
  assert.equal(result.code, 0);
  assert.equal(result.stderr, '');
  const watches = s.requests.filter((r) => r.query.watch === 'true').map((r) => r.path);
  assert.ok(!watches.includes('/api/v1/services'), 'the late informer sent nothing');
});
