#!/usr/bin/env node
'use strict';
// `npm install` hook. Installed from the registry, the binary comes from this platform's
// package (an optional dependency): nothing is compiled, and a missing package is reported
// here (and again, as an error, when the addon is required). In a source checkout (Cargo.toml
// present) it builds the addon with cargo (release) unless a local build already loads, and
// puts it where lib/native.js looks. `--force` always rebuilds (cargo's own freshness check
// makes that cheap when nothing changed).

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { binaryPath, platformId, packageName } = require('../lib/platform');

const root = path.join(__dirname, '..');
const force = process.argv.includes('--force');

/** null when `require(request)` succeeds in a fresh Node.js process, else its error message. */
function probe(request) {
  const script = `try { require(${JSON.stringify(request)}) } catch (e) { process.stderr.write(e.message); process.exit(1) }`;
  const run = spawnSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' });
  return run.status === 0 ? null : run.stderr.trim() || `exit ${run.status}`;
}

if (!fs.existsSync(path.join(root, 'Cargo.toml'))) {
  const problem = probe(path.join(root, 'lib', 'native.js'));
  if (problem === null) {
    console.log(`kube-watch-native: using the prebuilt binary from ${packageName(platformId())}`);
  } else {
    // Not fatal here: the install of a project that never loads the watcher should not break.
    console.warn(`warning: ${problem}`);
  }
  process.exit(0);
}

const target = binaryPath();

function builtLibrary() {
  const dir = path.join(process.env.CARGO_TARGET_DIR || path.join(root, 'target'), 'release');
  const names = {
    linux: 'libkube_watch_native.so',
    darwin: 'libkube_watch_native.dylib',
    win32: 'kube_watch_native.dll',
  };
  return path.join(dir, names[process.platform] || names.linux);
}

if (!force && fs.existsSync(target) && probe(target) === null) {
  console.log(`kube-watch-native: using the local build ${path.basename(target)}`);
  process.exit(0);
}

console.log('kube-watch-native: building the native addon (cargo build --release)…');
const build = spawnSync('cargo', ['build', '--release', '--lib'], { cwd: root, stdio: 'inherit' });
if (build.error?.code === 'ENOENT') {
  console.error('kube-watch-native: cargo not found; install Rust (https://rustup.rs) to build from source');
  process.exit(1);
}
if (build.status !== 0) process.exit(build.status ?? 1);
// Copy then rename: a process that has the old binary loaded keeps its (unlinked) file intact,
// where copying over it in place could crash that process.
const staging = `${target}.${process.pid}.tmp`;
fs.copyFileSync(builtLibrary(), staging);
fs.renameSync(staging, target);
console.log(`kube-watch-native: built ${path.basename(target)}`);
