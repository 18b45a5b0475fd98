'use strict';
// index.d.ts is written by hand, so this keeps it honest: a Backstage-typed consumer must
// compile under `tsc --strict` against the published @backstage types.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');

test('a Backstage plugin compiled with --strict accepts NativeKubernetesWatcher as KubernetesWatcher', () => {
  const tsc = require.resolve('typescript/bin/tsc');
  const project = path.join(__dirname, 'types', 'tsconfig.json');
  const run = spawnSync(process.execPath, [tsc, '-p', project], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(run.status, 0, `tsc failed:\n${run.stdout}${run.stderr}`);
});

test('a Backstage backend compiled with --strict adds kube-watch-native-backstage and takes the watcher from its service', () => {
  const tsc = require.resolve('typescript/bin/tsc');
  // Resolved as Backstage's CLI resolves a backend's imports (ESNext modules, bundler resolution).
  const project = path.join(__dirname, 'types', 'backstage', 'tsconfig.json');
  const run = spawnSync(process.execPath, [tsc, '-p', project], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(run.status, 0, `tsc failed:\n${run.stdout}${run.stderr}`);
});

test('a Backstage app compiled with --strict uses kube-watch-native-live-frontend as its docs show', () => {
  const tsc = require.resolve('typescript/bin/tsc');
  const project = path.join(__dirname, 'types', 'frontend', 'tsconfig.json');
  const run = spawnSync(process.execPath, [tsc, '-p', project], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(run.status, 0, `tsc failed:\n${run.stdout}${run.stderr}`);
});
