'use strict';
// `kube-watch --informer`: the list as ADDED rows, a SYNCED line, then live changes.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const BIN = path.join(__dirname, '..', 'packages', 'kube-watch-native', 'bin', 'kube-watch.js');
const keyOf = (o) => `${o.metadata.namespace}/${o.metadata.name}`;

test('kube-watch --informer prints the list, SYNCED, then changes', () => {
  // The demo's workload changes a pod every 250 ms: three seconds bring several changes.
  const run = spawnSync(
    process.execPath,
    [BIN, '--demo', '--informer', '--demo-seconds', '3', '-o', 'json'],
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
  assert.equal(events[synced].relist, false);
  const listed = events.slice(0, synced);
  assert.ok(listed.every((e) => e.type === 'ADDED'));

  // After SYNCED: the workload's changes, each newer than the list and than the one before,
  // about pods the stream has already introduced (listed or ADDED since), and only one SYNCED.
  const changes = events.slice(synced + 1);
  assert.ok(changes.length >= 2, `changes after SYNCED (got ${changes.length})`);
  const known = new Set(listed.map((e) => keyOf(e.object)));
  let lastRv = Number(events[synced].resourceVersion);
  for (const e of changes) {
    assert.ok(['ADDED', 'MODIFIED', 'DELETED'].includes(e.type), `a change, not ${e.type}`);
    assert.equal(e.object.kind, 'Pod');
    assert.equal(e.resourceVersion, e.object.metadata.resourceVersion, 'event rv = object rv');
    const rv = Number(e.resourceVersion);
    assert.ok(rv > lastRv, `rv ${rv} after ${lastRv}`);
    lastRv = rv;
    const key = keyOf(e.object);
    if (e.type === 'ADDED') {
      assert.ok(!known.has(key), `ADDED for ${key}, already shown`);
      known.add(key);
    } else {
      assert.ok(known.has(key), `${e.type} for ${key}, never shown`);
      if (e.type === 'DELETED') known.delete(key);
    }
  }

  // The table: rows, the SYNCED line, then more rows.
  const table = spawnSync(process.execPath, [BIN, '--demo', '--informer', '--demo-seconds', '2'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(table.status, 0, table.stderr);
  const lines = table.stdout.trim().split('\n');
  const at = lines.findIndex((l) => /^SYNCED at resourceVersion \d+$/.test(l));
  assert.ok(at > 1, `header and rows before SYNCED:\n${table.stdout}`);
  assert.match(lines[0], /^TIME\s+TYPE\s+NAMESPACE\/NAME\s+RV\s+STATUS$/);
  const after = lines.slice(at + 1);
  assert.ok(after.length >= 1, `rows after SYNCED:\n${table.stdout}`);
  for (const row of after) assert.match(row, /^\S+\s+(ADDED|MODIFIED|DELETED)\s+\S+\/\S+\s+\d+\s/);
});
