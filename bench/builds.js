'use strict';
// The builds a benchmark measures, and the commits it records beside its figures: this checkout's,
// and with a suite's `--against=<dir>` another's, side by side in the same run. `<dir>` is a
// checkout (or an export) of any commit, built: before the package move (104a721) kube-watch-native
// was its root and the Backstage module its backstage/; since, they are in packages/.

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');

/** The commit of the checkout at `dir`, marked when its tree holds changes not committed. */
function commitOf(dir) {
  const git = (...args) => execFileSync('git', args, { cwd: dir, encoding: 'utf8' }).trim();
  try {
    const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
    return `${git('rev-parse', '--short', 'HEAD')}${dirty ? ' with changes not committed' : ''}`;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

/** The build at `dir`: its kube-watch-native package directory (`watcher`) and Backstage module's. */
function build(dir) {
  const root = path.resolve(dir);
  const packages = path.join(root, 'packages');
  if (fs.existsSync(path.join(packages, 'kube-watch-native', 'index.js')))
    return {
      root,
      watcher: path.join(packages, 'kube-watch-native'),
      backstage: path.join(packages, 'backstage'),
    };
  // Before the move; or a package directory itself (which has no Backstage module).
  return { root, watcher: root, backstage: path.join(root, 'backstage') };
}

/** This checkout's build. */
const THIS = build(ROOT);

module.exports = { ROOT, commitOf, build, THIS };
