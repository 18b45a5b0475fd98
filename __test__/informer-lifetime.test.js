'use strict';
// What keeps the process alive: a running informer does (even with no consumer); a finished one
// does not; a rejected `synced` nobody awaits does not crash it.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const path = require('node:path');
const { sim } = require('./informer-helpers');

const ROOT = path.join(__dirname, '..');

/** Runs `body` in a child with `URL` set; resolves to `{ code, timedOut, stderr }`. */
function child(url, body, ms) {
  const script = `const { NativeKubernetesWatcher } = require(${JSON.stringify(ROOT)});
    const watcher = new NativeKubernetesWatcher({ logger: { warn() {}, error() {} } });
    const params = { clusterDetails: { name: 's', url: ${JSON.stringify(url)} },
      credential: { type: 'bearer token', token: 'tok' }, group: '', apiVersion: 'v1', plural: 'configmaps' };
    ${body}`;
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => proc.kill(), ms);
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, timedOut: signal !== null, stderr });
    });
  });
}

test('a running informer keeps the process alive even with no consumer', async (t) => {
  const s = await sim(t, { token: 'tok' });
  const run = await child(s.url, `watcher.informer(params);`, 1500);
  assert.equal(run.timedOut, true, 'still running after 1.5 s');
});

test('a closed or finished informer lets the process exit', async (t) => {
  const s = await sim(t, { token: 'tok' });
  const closed = await child(
    s.url,
    `const i = watcher.informer(params); i.synced.then(() => i.close());`,
    10000,
  );
  assert.deepEqual([closed.timedOut, closed.code], [false, 0], closed.stderr);
  const finished = await child(s.url, `watcher.informer(params, { labelSelector: 'a in (' });`, 10000);
  assert.deepEqual([finished.timedOut, finished.code], [false, 0], finished.stderr);
});

test('a rejected synced that nobody awaits does not crash the process', async (t) => {
  const s = await sim(t, { token: 'tok' });
  const run = await child(
    s.url,
    `const i = watcher.informer(params); i.close(); setTimeout(() => console.error('alive'), 200);`,
    10000,
  );
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /alive/);
});
