'use strict';
// Loads the native addon: in a source checkout (Cargo.toml present) the local build that
// scripts/install.js made, otherwise this platform's package (`kube-watch-native-<platform>`,
// an optional dependency npm installs only where its os/cpu/libc fit). When neither is there,
// the error names the platform and what to install.

const fs = require('node:fs');
const path = require('node:path');
const { PLATFORMS, platformId, binaryName, packageName } = require('./platform');

const root = path.join(__dirname, '..');
const { version } = require('../package.json');

const RUST = 'needs a Rust toolchain, https://rustup.rs';

/** Why no binary could be loaded, as one message naming the platform and the way out. */
function missingMessage(id, checkout) {
  if (checkout) {
    return (
      `kube-watch-native: no local build for ${id} at ${path.join(root, binaryName(id))}: ` +
      `build the addon with \`npm run build\` (${RUST})`
    );
  }
  if (!PLATFORMS.some((p) => p.id === id)) {
    return (
      `kube-watch-native: no prebuilt binary for this platform (${id}); there are binaries for ` +
      `${PLATFORMS.map((p) => p.id).join(', ')}. Build it from a source checkout of kube-watch-native: ` +
      `\`npm install\` there compiles it with cargo (${RUST}).`
    );
  }
  return (
    `kube-watch-native: no binary for ${id}: the package ${packageName(id)}@${version} that holds it is not ` +
    `installed. npm installs it as an optional dependency: reinstall without --omit=optional ` +
    `(or --no-optional), or run \`npm install ${packageName(id)}@${version}\`.`
  );
}

/** Resolves the platform package's binary; undefined when the package is not installed. */
function platformPackageBinary(id) {
  let manifestPath;
  try {
    manifestPath = require.resolve(`${packageName(id)}/package.json`);
  } catch (err) {
    if (err.code === 'MODULE_NOT_FOUND') return undefined;
    throw err;
  }
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  if (manifest.version !== version) {
    throw new Error(
      `kube-watch-native ${version} needs ${packageName(id)}@${version}, but ${manifest.version} is installed ` +
        `(${path.dirname(manifestPath)}); install the matching version`,
    );
  }
  return path.join(path.dirname(manifestPath), manifest.main);
}

/** Where the binary for this process comes from, or an Error saying what is missing. */
function locate() {
  const id = platformId();
  const checkout = fs.existsSync(path.join(root, 'Cargo.toml'));
  const local = path.join(root, binaryName(id));
  if (checkout && fs.existsSync(local)) return local;
  const packaged = PLATFORMS.some((p) => p.id === id) ? platformPackageBinary(id) : undefined;
  if (packaged) return packaged;
  throw new Error(missingMessage(id, checkout));
}

function load() {
  const file = locate();
  let addon;
  try {
    addon = require(file);
  } catch (err) {
    throw new Error(`kube-watch-native: the native binary at ${file} failed to load: ${err.message}`, {
      cause: err,
    });
  }
  const built = typeof addon.buildInfo === 'function' ? addon.buildInfo() : { version: 'unknown' };
  if (built.version !== version) {
    throw new Error(
      `kube-watch-native ${version} cannot use the binary at ${file}: it was built as version ${built.version}` +
        (fs.existsSync(path.join(root, 'Cargo.toml')) ? '; rebuild it with `npm run build`' : ''),
    );
  }
  // Which file was loaded, for `version` and `kube-watch --version`.
  Object.defineProperty(addon, 'binaryPath', { value: file, enumerable: false });
  return addon;
}

module.exports = load();
