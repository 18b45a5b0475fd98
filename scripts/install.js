#!/usr/bin/env node
'use strict';
// `npm install` hook: keeps a prebuilt binary that loads on this platform, otherwise builds the
// addon from source with cargo (release) and puts it where lib/native.js looks.
// `--force` always rebuilds (cargo's own freshness check makes that cheap when nothing changed).

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { binaryPath } = require('../lib/platform');

const root = path.join(__dirname, '..');
const target = binaryPath();
const force = process.argv.includes('--force');

function loads(file) {
  if (!fs.existsSync(file)) return false;
  const probe = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(file)})`], {
    stdio: 'ignore',
  });
  return probe.status === 0;
}

function builtLibrary() {
  const dir = path.join(process.env.CARGO_TARGET_DIR || path.join(root, 'target'), 'release');
  const names = {
    linux: 'libkube_watch_native.so',
    darwin: 'libkube_watch_native.dylib',
    win32: 'kube_watch_native.dll',
  };
  return path.join(dir, names[process.platform] || names.linux);
}

if (!force && loads(target)) {
  console.log(`kube-watch-native: using the prebuilt ${path.basename(target)}`);
  process.exit(0);
}

if (!fs.existsSync(path.join(root, 'Cargo.toml'))) {
  console.error('kube-watch-native: no prebuilt binary for this platform and no sources to build');
  process.exit(1);
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
