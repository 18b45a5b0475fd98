'use strict';
// The platforms with prebuilt binaries, and which one this process runs on. Each platform has
// its own npm package (`kube-watch-native-linux-x64-gnu`, …, built from npm/<id>/), the
// napi-rs convention: npm installs only the one whose `os`, `cpu` and `libc` fit.

const path = require('node:path');

/**
 * Every platform a binary is built for: the id used in package and file names, the Rust target
 * triple, and npm's `os` / `cpu` / `libc` values for the platform package.
 */
const PLATFORMS = [
  { id: 'linux-x64-gnu', triple: 'x86_64-unknown-linux-gnu', os: 'linux', cpu: 'x64', libc: 'glibc' },
  { id: 'linux-arm64-gnu', triple: 'aarch64-unknown-linux-gnu', os: 'linux', cpu: 'arm64', libc: 'glibc' },
  { id: 'linux-x64-musl', triple: 'x86_64-unknown-linux-musl', os: 'linux', cpu: 'x64', libc: 'musl' },
  { id: 'linux-arm64-musl', triple: 'aarch64-unknown-linux-musl', os: 'linux', cpu: 'arm64', libc: 'musl' },
  { id: 'darwin-x64', triple: 'x86_64-apple-darwin', os: 'darwin', cpu: 'x64' },
  { id: 'darwin-arm64', triple: 'aarch64-apple-darwin', os: 'darwin', cpu: 'arm64' },
  { id: 'win32-x64', triple: 'x86_64-pc-windows-gnu', os: 'win32', cpu: 'x64' },
];

const PACKAGE = 'kube-watch-native';

function libc() {
  if (process.platform !== 'linux') return undefined;
  const report = process.report?.getReport?.();
  return report?.header?.glibcVersionRuntime ? 'glibc' : 'musl';
}

/** This process's platform id, e.g. `linux-x64-gnu` (whether or not a binary exists for it). */
function platformId({ platform = process.platform, arch = process.arch, libc: lib = libc() } = {}) {
  const suffix = platform === 'linux' ? (lib === 'musl' ? '-musl' : '-gnu') : '';
  return `${platform}-${arch}${suffix}`;
}

/** File name of a platform's binary: `kube-watch-native.linux-x64-gnu.node`. */
function binaryName(id = platformId()) {
  return `${PACKAGE}.${id}.node`;
}

/** Name of a platform's npm package: `kube-watch-native-linux-x64-gnu`. */
function packageName(id = platformId()) {
  return `${PACKAGE}-${id}`;
}

/** Path of a local build of this platform's binary in the package root (a source checkout). */
function binaryPath() {
  return path.join(__dirname, '..', binaryName());
}

/** Kept for callers that name the binary by its suffix. */
function platformSuffix() {
  return platformId();
}

module.exports = { PLATFORMS, PACKAGE, platformId, binaryName, packageName, binaryPath, platformSuffix };
