'use strict';
// bench/ keeps the suites the npm scripts run, in at most 6 000 lines (issue 49): every file of
// bench/ but bench/investigations/ and the markdown counts, and each is reached from an npm
// script; a one-off measurement goes to bench/investigations/ with a line in its README on what it
// found, and what tests and benchmarks share goes to testbed/.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');
/** The most lines bench/'s suites may hold. */
const LIMIT = 6000;

/** Every file below `dir` (relative to the root). */
const walk = (dir) =>
  fs
    .readdirSync(path.join(ROOT, dir), { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));

/** The files the count holds: bench/ but its investigations and markdown. */
const suiteFiles = () =>
  walk('bench').filter((f) => !f.startsWith(path.join('bench', 'investigations')) && !f.endsWith('.md'));

/** Lines of a file as `wc -l` counts them. */
const linesOf = (file) => (fs.readFileSync(path.join(ROOT, file), 'utf8').match(/\n/g) ?? []).length;

/**
 * The bench/ files reached from `entries`: what they require, and the files they name as string
 * literals (the children a benchmark forks: `work('worker.js', …)`, relative to bench/ or to the
 * file).
 */
function reached(entries) {
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file) || !fs.existsSync(path.join(ROOT, file))) return;
    seen.add(file);
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
    const requires = [...text.matchAll(/require\('(\.{1,2}\/[^']+)'\)/g)].map((m) => m[1]);
    const named = [...text.matchAll(/'([\w./-]+\.js)'/g)].map((m) => m[1]);
    for (const spec of [...requires, ...named]) {
      for (const base of [path.dirname(file), 'bench']) {
        const target = path.normalize(path.join(base, spec));
        for (const candidate of [target, `${target}.js`, path.join(target, 'index.js')]) {
          if (candidate.startsWith(`bench${path.sep}`) && fs.existsSync(path.join(ROOT, candidate))) {
            if (fs.statSync(path.join(ROOT, candidate)).isFile()) visit(candidate);
          }
        }
      }
    }
  };
  entries.forEach(visit);
  return seen;
}

test(`bench/'s suites hold at most ${LIMIT} lines, investigations and markdown aside`, () => {
  const counts = suiteFiles().map((f) => [f, linesOf(f)]);
  const total = counts.reduce((n, [, lines]) => n + lines, 0);
  const largest = counts
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5)
    .map(([f, n]) => `${f} ${n}`);
  assert.ok(total <= LIMIT, `bench/ holds ${total} lines (the largest: ${largest.join(', ')})`);
});

test('every file of bench/ but its investigations is reached from an npm script', () => {
  const { scripts } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const entries = Object.values(scripts).flatMap((s) =>
    [...s.matchAll(/\bbench\/[\w./-]+\.js/g)].map((m) => m[0]),
  );
  assert.ok(entries.length >= 5, `the npm scripts run ${entries.join(', ')}`);
  const reach = reached(entries.map(path.normalize));
  const unreached = suiteFiles().filter((f) => !reach.has(f));
  assert.deepEqual(unreached, [], 'no npm script reaches these: bench/investigations/ is their place');
});

test('every investigation has a line in bench/investigations/README.md', () => {
  const readme = fs.readFileSync(path.join(ROOT, 'bench', 'investigations', 'README.md'), 'utf8');
  const missing = walk(path.join('bench', 'investigations'))
    .filter((f) => f.endsWith('.js'))
    .filter((f) => !readme.includes(`\`${path.basename(f)}\``));
  assert.deepEqual(missing, []);
});
