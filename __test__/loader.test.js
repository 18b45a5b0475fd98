'use strict';
// The loader and the install hook: installed from the registry (no Cargo.toml) the binary
// comes from this platform's package and nothing is compiled; without that package, or on a
// platform with no binary, the error names the platform and what to install; in a source
// checkout the hook builds with cargo. A stand-in `cargo` on PATH records whether it ran.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const {
  tempDir,
  installedLayout,
  NATIVE_ROOT: root,
  HOST: platform,
  NO_HOST: skip,
  VERSION: version,
  PLATFORMS,
  platformId,
  binaryName,
  packageName,
} = require('./pkg-helpers');

const localBuild = path.join(root, binaryName());

/** A PATH whose `cargo` only logs its arguments (and, in a checkout, "builds" by copying). */
function fakeCargo(dir) {
  const bin = path.join(dir, 'fake-bin');
  fs.mkdirSync(bin);
  const log = path.join(dir, 'cargo.log');
  fs.writeFileSync(
    path.join(bin, 'cargo'),
    `#!/bin/sh\necho "$@" >> "${log}"\nmkdir -p target/release && cp "${localBuild}" target/release/libkube_watch_native.so\n`,
    { mode: 0o755 },
  );
  const PATH = [bin, path.dirname(process.execPath), '/usr/bin', '/bin'].join(path.delimiter);
  return {
    env: { ...process.env, PATH },
    calls: () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : ''),
  };
}

function run(cwd, args, env = process.env) {
  return spawnSync(process.execPath, args, { cwd, env, encoding: 'utf8' });
}

const requireVersion = "console.log(JSON.stringify(require('kube-watch-native').version))";

test(
  'installed with its platform package: the hook compiles nothing and the package binary loads',
  { skip },
  (t) => {
    const project = tempDir(t, 'kwn-loader-');
    const main = installedLayout(project, { platform, binary: localBuild });
    const cargo = fakeCargo(project);
    const hook = run(main, ['scripts/install.js'], cargo.env);
    assert.equal(hook.status, 0, hook.stderr);
    assert.match(hook.stdout, new RegExp(`using the prebuilt binary from ${packageName()}`));
    assert.equal(cargo.calls(), '', 'cargo was not run');
    const loaded = run(project, ['-e', requireVersion], cargo.env);
    assert.equal(loaded.status, 0, loaded.stderr);
    const binary = JSON.parse(loaded.stdout).binary;
    assert.equal(binary, path.join(project, 'node_modules', packageName(), binaryName()));
  },
);

test(
  'installed without its platform package: the error names the platform and the package to install',
  { skip },
  (t) => {
    const project = tempDir(t, 'kwn-loader-');
    const main = installedLayout(project);
    const cargo = fakeCargo(project);
    const wanted = `${packageName()}@${version}`;
    const loaded = run(project, ['-e', "require('kube-watch-native')"], cargo.env);
    assert.notEqual(loaded.status, 0);
    assert.match(
      loaded.stderr,
      new RegExp(`no binary for ${platformId()}: the package ${wanted} that holds it is not installed`),
    );
    assert.match(loaded.stderr, new RegExp(`npm install ${wanted}`));
    // The hook warns with the same words but lets the install finish, and compiles nothing.
    const hook = run(main, ['scripts/install.js'], cargo.env);
    assert.equal(hook.status, 0);
    assert.match(hook.stderr, new RegExp(`warning: kube-watch-native: no binary for ${platformId()}`));
    assert.equal(cargo.calls(), '');
  },
);

test('a platform package of another version is refused, naming both versions', { skip }, (t) => {
  const project = tempDir(t, 'kwn-loader-');
  installedLayout(project, { platform, binary: localBuild, version: '0.0.1-other' });
  const loaded = run(project, ['-e', "require('kube-watch-native')"]);
  assert.notEqual(loaded.status, 0);
  assert.match(
    loaded.stderr,
    new RegExp(
      `kube-watch-native ${version} needs ${packageName()}@${version}, but 0.0.1-other is installed`,
    ),
  );
});

test('on a platform with no prebuilt binary, the error names it and the supported ones', (t) => {
  const project = tempDir(t, 'kwn-loader-');
  installedLayout(project);
  const preload = path.join(project, 'freebsd.js');
  fs.writeFileSync(preload, "Object.defineProperty(process, 'platform', { value: 'freebsd' });");
  const loaded = run(project, ['-r', preload, '-e', "require('kube-watch-native')"]);
  assert.notEqual(loaded.status, 0);
  assert.match(
    loaded.stderr,
    new RegExp(`no prebuilt binary for this platform \\(freebsd-${process.arch}\\)`),
  );
  assert.match(loaded.stderr, new RegExp(PLATFORMS.map((p) => p.id).join(', ')));
  assert.match(loaded.stderr, /source checkout/);
});

test('in a source checkout the hook builds with cargo, and keeps a local build that loads', { skip }, (t) => {
  const checkout = tempDir(t, 'kwn-checkout-');
  for (const entry of ['lib', 'scripts/install.js', 'package.json', 'Cargo.toml']) {
    fs.mkdirSync(path.dirname(path.join(checkout, entry)), { recursive: true });
    fs.cpSync(path.join(root, entry), path.join(checkout, entry), { recursive: true });
  }
  const cargo = fakeCargo(checkout);
  const first = run(checkout, ['scripts/install.js'], cargo.env);
  assert.equal(first.status, 0, first.stderr);
  assert.equal(cargo.calls(), 'build --release --lib\n');
  assert.ok(fs.existsSync(path.join(checkout, binaryName())), 'the build was put where the loader looks');
  const again = run(checkout, ['scripts/install.js'], cargo.env);
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stdout, /using the local build/);
  assert.equal(cargo.calls(), 'build --release --lib\n', 'a local build that loads is kept');
});

test('the checked-in platform manifests are the generated ones (os, cpu, libc, version)', () => {
  const { platformManifest } = require('../packages/kube-watch-native/scripts/packaging');
  for (const p of PLATFORMS) {
    const checkedIn = JSON.parse(fs.readFileSync(path.join(root, 'npm', p.id, 'package.json'), 'utf8'));
    assert.deepEqual(checkedIn, platformManifest(p), `npm/${p.id}/package.json: run npm run pack:all`);
    assert.equal(checkedIn.version, version);
  }
  assert.deepEqual(
    PLATFORMS.map((p) => p.id),
    [
      'linux-x64-gnu',
      'linux-arm64-gnu',
      'linux-x64-musl',
      'linux-arm64-musl',
      'darwin-x64',
      'darwin-arm64',
      'win32-x64',
    ],
  );
});

test('platform ids follow process.platform, process.arch and the C library', () => {
  assert.equal(platformId({ platform: 'linux', arch: 'arm64', libc: 'musl' }), 'linux-arm64-musl');
  assert.equal(platformId({ platform: 'linux', arch: 'x64', libc: 'glibc' }), 'linux-x64-gnu');
  assert.equal(platformId({ platform: 'darwin', arch: 'arm64' }), 'darwin-arm64');
  assert.equal(platformId({ platform: 'win32', arch: 'x64' }), 'win32-x64');
});
