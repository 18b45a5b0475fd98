'use strict';
// `kube-watch --informer`: the list as ADDED rows, a SYNCED line, then live changes.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const BIN = path.join(__dirname, '..', 'bin', 'kube-watch.js');

test('kube-watch --informer prints the list, SYNCED, then changes', () => {
  const run = spawnSync(
    process.execPath,
    [BIN, '--demo', '--informer', '--demo-seconds', '2', '-o', 'json'],
    {
      encoding: 'utf8',
      timeout: 30_000,
    },
  );
  assert.equal(run.status, 0, run.stderr);
  const events = run.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  const synced = events.findIndex((e) => e.type === 'SYNCED');
  assert.ok(synced > 0, 'a SYNCED line after the listed objects');
  assert.deepEqual(Object.keys(events[synced]).sort(), ['relist', 'resourceVersion', 'type']);
  assert.ok(events.slice(0, synced).every((e) => e.type === 'ADDED'));
  const table = spawnSync(process.execPath, [BIN, '--demo', '--informer', '--demo-seconds', '1'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.match(table.stdout, /^SYNCED at resourceVersion \d+$/m);
});
