#!/usr/bin/env node
'use strict';
// `npm test`: the whole suite in one command. Rust formatting, lints and unit tests (including
// the bounded property-based fuzzing of framing), then the JavaScript suite against the
// simulated API server. Every step runs in the release profile so it reuses the build that
// `npm install` made instead of compiling the dependency tree a second time.

const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.join(__dirname, '..');
const steps = [
  ['native addon up to date', process.execPath, ['scripts/install.js', '--force']],
  ['rustfmt', 'cargo', ['fmt', '--check']],
  ['clippy', 'cargo', ['clippy', '--release', '--all-targets', '--', '-D', 'warnings']],
  ['rust unit tests', 'cargo', ['test', '--release']],
  ['javascript format', process.execPath, ['node_modules/prettier/bin/prettier.cjs', '--check', '.']],
  ['javascript suite', process.execPath, ['--test', '--test-reporter=spec', '__test__/']],
];

for (const [name, command, args] of steps) {
  console.log(`\n=== ${name}: ${[path.basename(command), ...args].join(' ')}`);
  const started = Date.now();
  const run = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (run.status !== 0) {
    console.error(`\n=== ${name} failed after ${seconds} s (${run.error?.message ?? `exit ${run.status}`})`);
    process.exit(run.status || 1);
  }
  console.log(`=== ${name} passed in ${seconds} s`);
}
