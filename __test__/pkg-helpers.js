'use strict';
// Shared pieces of the packaging tests: a project laid out as npm installs this package
// (main package plus one platform package), and a consumer script that watches the simulator
// through `require('kube-watch-native')` in a separate process.

const { execFile } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {
  PLATFORMS,
  platformId,
  binaryName,
  packageName,
} = require('../packages/kube-watch-native/lib/platform');
const { platformManifest } = require('../packages/kube-watch-native/scripts/packaging');

/** The native package's directory (packages/kube-watch-native), what the tests of packaging read. */
const NATIVE_ROOT = path.join(__dirname, '..', 'packages', 'kube-watch-native');
/** Where npm put the dependencies: the repository's root. */
const MODULES = path.join(__dirname, '..', 'node_modules');
/** This machine's entry in PLATFORMS; undefined where no prebuilt binary is made for it. */
const HOST = PLATFORMS.find((p) => p.id === platformId());
/** The skip reason of a test that needs HOST: false where there is one. */
const NO_HOST = HOST ? false : `no prebuilt binary is made for ${platformId()}`;
/** The native package's version, which every platform package has too. */
const { version: VERSION } = require('../packages/kube-watch-native/package.json');
/** The npm command to spawn here. */
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const root = NATIVE_ROOT;
const modules = MODULES;

/** A temporary directory removed when test `t` ends. */
function tempDir(t, prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * `project/node_modules/kube-watch-native` with the main package's JavaScript (no Cargo.toml:
 * not a source checkout) and, when `binary` is given, the platform package of `platform`
 * holding it, as npm would have installed them. Returns the main package's directory.
 */
function installedLayout(project, { platform, binary, version } = {}) {
  const main = path.join(project, 'node_modules', 'kube-watch-native');
  for (const entry of ['index.js', 'lib', 'cli', 'bin', 'scripts/install.js', 'package.json']) {
    fs.mkdirSync(path.dirname(path.join(main, entry)), { recursive: true });
    fs.cpSync(path.join(root, entry), path.join(main, entry), { recursive: true });
  }
  // Its one dependency, as npm would have put it beside it.
  fs.cpSync(path.join(modules, 'yaml'), path.join(project, 'node_modules', 'yaml'), {
    recursive: true,
  });
  if (binary) {
    const dir = path.join(project, 'node_modules', packageName(platform.id));
    fs.mkdirSync(dir, { recursive: true });
    const manifest = { ...platformManifest(platform), ...(version && { version }) };
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest));
    fs.copyFileSync(binary, path.join(dir, manifest.main));
  }
  return main;
}

/** Prints the first event of a pod watch on the simulator at argv[1], then `version`. */
const WATCH_SCRIPT = `
const { NativeKubernetesWatcher, version } = require('kube-watch-native');
(async () => {
  const w = new NativeKubernetesWatcher({ logger: console });
  const params = { clusterDetails: { name: 'sim', url: process.argv[1],
    authMetadata: { 'kubernetes.io/auth-provider': 'localKubectlProxy' } },
    credential: { type: 'anonymous' }, group: '', apiVersion: 'v1', plural: 'pods' };
  for await (const e of w.watchResource(params, { namespace: 'default' })) {
    console.log(e.type, e.object.metadata.name);
    break;
  }
  console.log(JSON.stringify(version));
})();`;

/**
 * Runs WATCH_SCRIPT in `cwd` with `command` (a node, or an emulator followed by its arguments
 * and a node); resolves to { event, version } from what it printed.
 */
function watchOnce({ command, args = [], cwd, url, timeout = 60_000, env = process.env }) {
  return new Promise((resolve, reject) => {
    execFile(command, [...args, '-e', WATCH_SCRIPT, url], { cwd, timeout, env }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`${err.message}\n${stdout}\n${stderr}`));
      const [event, version] = stdout.trim().split('\n');
      resolve({ event, version: JSON.parse(version) });
    });
  });
}

module.exports = {
  tempDir,
  installedLayout,
  watchOnce,
  WATCH_SCRIPT,
  NATIVE_ROOT,
  MODULES,
  HOST,
  NO_HOST,
  VERSION,
  NPM,
  // lib/platform's, so that a test of packaging takes all it needs from here
  PLATFORMS,
  platformId,
  binaryName,
  packageName,
};
