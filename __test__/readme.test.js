'use strict';
// The front door (issue 49): README.md is read in five minutes. At most 300 lines; a Backstage
// adopter's backend line before line 60 and frontend line before line 90; its two commands on
// a fresh machine are the ones CI runs (.ci/run ends with the README's test command); every
// relative link of README.md and docs/ reaches a file, and every #anchor a heading there.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
const lines = readme.split('\n');
const lineOf = (text) => lines.findIndex((l) => l.includes(text)) + 1;

test('README.md: at most 300 lines, the backend line before 60, the frontend line before 90', () => {
  assert.ok(lines.length <= 300, `${lines.length} lines`);
  const backend = lineOf("backend.add(import('kube-watch-native-backstage'));");
  assert.ok(backend > 0 && backend < 60, `the backend line is line ${backend}`);
  const frontend = Math.max(lineOf('liveKubernetesModule] });'), lineOf('liveKubernetesApiFactory];'));
  assert.ok(lineOf('liveKubernetesModule] });') > 0 && lineOf('liveKubernetesApiFactory];') > 0);
  assert.ok(frontend < 90, `the frontend lines end at line ${frontend}`);
});

test("README.md's two commands are the demo and the test command, and .ci/run runs the test command", () => {
  const block = readme.slice(readme.indexOf('## Two commands on a fresh machine'));
  const commands = /```sh\n([\s\S]*?)```/
    .exec(block)[1]
    .trim()
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim());
  assert.deepEqual(commands, ['npm install && npx kube-watch --demo', 'npm test']);
  const ci = fs
    .readFileSync(path.join(root, '.ci', 'run'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  assert.equal(ci.at(-1), commands[1], 'CI ends with the README test command');
  const pkg = require('../package.json');
  assert.equal(pkg.scripts.test, 'node scripts/test.js');
});

/** GitHub's anchor of a heading. */
const slug = (heading) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

function anchorsOf(file) {
  let fence = false;
  const anchors = new Set();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) fence = !fence;
    else if (!fence && /^#{1,6} /.test(line)) anchors.add(slug(line.replace(/^#+ /, '')));
  }
  return anchors;
}

test('every relative link of README.md and docs/ reaches a file, and its anchor a heading', () => {
  const files = [
    'README.md',
    'bench/README.md',
    ...fs
      .readdirSync(path.join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  const broken = [];
  let checked = 0;
  for (const file of files) {
    const text = fs.readFileSync(path.join(root, file), 'utf8').replace(/```[\s\S]*?```/g, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue;
      const [where, anchor] = target.split('#');
      const full = where ? path.join(root, path.dirname(file), where) : path.join(root, file);
      checked++;
      if (!fs.existsSync(full)) broken.push(`${file}: ${target}`);
      else if (anchor && full.endsWith('.md') && !anchorsOf(full).has(anchor))
        broken.push(`${file}: ${target} (no heading)`);
    }
  }
  assert.ok(checked > 20, `${checked} links checked`);
  assert.deepEqual(broken, []);
});
