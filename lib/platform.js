'use strict';
// Names the prebuilt binary for this platform the way napi-rs packages do
// (`kube-watch-native.linux-x64-gnu.node`), so a tarball can carry one per platform.

const path = require('node:path');

function libc() {
  if (process.platform !== 'linux') return '';
  const report = process.report?.getReport?.();
  return report?.header?.glibcVersionRuntime ? '-gnu' : '-musl';
}

function platformSuffix() {
  const abi = process.platform === 'win32' ? '-msvc' : libc();
  return `${process.platform}-${process.arch}${abi}`;
}

/** Absolute path of this platform's addon binary in the package root. */
function binaryPath() {
  return path.join(__dirname, '..', `kube-watch-native.${platformSuffix()}.node`);
}

module.exports = { binaryPath, platformSuffix };
