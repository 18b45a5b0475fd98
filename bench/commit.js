'use strict';
// The commit a benchmark measured, recorded beside its figures.

const { execFileSync } = require('node:child_process');

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

module.exports = { commitOf };
