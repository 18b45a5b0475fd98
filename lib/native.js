'use strict';
// Loads the native addon built by scripts/install.js (or shipped prebuilt in the tarball).

const { binaryPath } = require('./platform');

function load() {
  const file = binaryPath();
  try {
    return require(file);
  } catch (err) {
    const hint =
      err.code === 'MODULE_NOT_FOUND'
        ? `no native binary at ${file}; run \`npm run build\` (needs a Rust toolchain)`
        : `the native binary at ${file} failed to load: ${err.message}`;
    throw new Error(`kube-watch-native: ${hint}`, { cause: err });
  }
}

module.exports = load();
