'use strict';
// Version and provenance: the `version` export and `kube-watch --version` name the package
// version, the target triple and the git commit of the binary that was loaded.

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { PLATFORMS, platformId, binaryName } = require('../packages/kube-watch-native/lib/platform');

const root = path.join(__dirname, '..', 'packages', 'kube-watch-native');
const pkg = require('../packages/kube-watch-native/package.json');

function gitHead() {
  return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
}

test('the version export names the package version, the target and the commit of the binary loaded', () => {
  const { version } = require('kube-watch-native');
  assert.equal(version.package, pkg.version);
  assert.equal(version.platform, platformId());
  const platform = PLATFORMS.find((p) => p.id === platformId());
  if (platform) assert.equal(version.target, platform.triple);
  // `npm test` rebuilds first, so the local build is of the commit checked out.
  assert.equal(version.commit, gitHead(), 'the binary is of HEAD; rebuild with `npm run build`');
  assert.equal(version.binary, path.join(root, binaryName()));
  assert.ok(Object.isFrozen(version));
});

test('Cargo.toml and package.json give the same version (the loader refuses a mismatched binary)', () => {
  const cargo = /^version = "([^"]+)"/m.exec(fs.readFileSync(path.join(root, 'Cargo.toml'), 'utf8'))[1];
  assert.equal(cargo, pkg.version);
});

test('kube-watch --version prints the package version, target, commit and binary', () => {
  const out = execFileSync(process.execPath, [path.join(root, 'bin', 'kube-watch.js'), '--version'], {
    encoding: 'utf8',
  });
  const { version } = require('kube-watch-native');
  assert.equal(
    out,
    [
      `kube-watch-native ${pkg.version}`,
      `target ${version.target} (${platformId()})`,
      `commit ${gitHead()}`,
      `binary ${path.join(root, binaryName())}`,
      '',
    ].join('\n'),
  );
});
