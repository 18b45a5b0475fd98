'use strict';
// No import circle anywhere (issue 49): two files that import each other, directly or around a
// loop, are one piece of code split in two, where neither can be read, tested or moved alone. The
// Rust crate's files by their `use` paths (`crate::`, `super::`, `self::`; a module's file is the
// longest path prefix that is one), the JavaScript files by their relative `require`, `import` and
// `import()`. A file that uses its parent's items is no circle unless the parent uses its items
// back.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
/** The Rust crate's sources. */
const SRC = path.join('packages', 'kube-watch-native', 'src');

/** Every file below `dir` (relative to the root) whose name passes `keep`, skipping node_modules. */
function walk(dir, keep, out = []) {
  for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && entry.name !== 'target') walk(rel, keep, out);
    } else if (keep(entry.name)) out.push(rel);
  }
  return out;
}

/** The import circles of `graph` (file → files it imports): its strongly connected components of two or more. */
function circles(graph) {
  let counter = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (v) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) === index.get(v)) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** `prefix::{a, b::{c, d}}` as its paths. */
function expandUse(text) {
  const group = /^(.*?)::\{([\s\S]*)\}$/.exec(text.trim());
  if (!group) return [text.trim()];
  const parts = [];
  let depth = 0;
  let current = '';
  for (const ch of group[2]) {
    if (ch === '{') depth++;
    if (ch === '}') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  if (current.trim()) parts.push(current);
  return parts.flatMap((part) => expandUse(part).map((p) => `${group[1]}::${p}`));
}

function rustGraph() {
  const modules = new Map(); // module path ('engine/runner') → file
  for (const file of walk(SRC, (n) => n.endsWith('.rs'))) {
    const segments = path.relative(SRC, file).slice(0, -3).split(path.sep);
    if (['mod', 'lib'].includes(segments.at(-1))) segments.pop();
    modules.set(segments.join('/'), file);
  }
  const fileOf = (segments) => {
    for (let i = segments.length; i >= 0; i--) {
      const key = segments.slice(0, i).join('/');
      if (modules.has(key)) return modules.get(key);
    }
    return null;
  };
  const graph = new Map();
  for (const [module, file] of modules) {
    const own = module === '' ? [] : module.split('/');
    const imports = new Set();
    for (const [, text] of fs.readFileSync(path.join(root, file), 'utf8').matchAll(/\buse\s+([^;]+);/g)) {
      for (const used of expandUse(text)) {
        let segments = used.split('::').map((s) => s.trim());
        let base;
        if (segments[0] === 'crate') base = [];
        else if (segments[0] === 'self') base = own;
        else if (segments[0] === 'super') {
          base = own.slice(0, -1);
          segments = segments.slice(1);
          while (segments[0] === 'super') {
            base = base.slice(0, -1);
            segments = segments.slice(1);
          }
          segments.unshift('super');
        } else continue;
        const target = fileOf([...base, ...segments.slice(1).filter((s) => s !== '*' && s !== 'self')]);
        if (target && target !== file) imports.add(target);
      }
    }
    graph.set(file, imports);
  }
  return graph;
}

function jsGraph() {
  const isJs = (n) => /\.(c|m)?js$/.test(n);
  const files = [
    ...['packages', 'bench', 'scripts', 'testbed', '__test__']
      .filter((dir) => fs.existsSync(path.join(root, dir)))
      .flatMap((dir) => walk(dir, isJs)),
  ];
  const resolve = (from, spec) => {
    const base = path.join(path.dirname(from), spec);
    for (const candidate of [
      base,
      `${base}.js`,
      `${base}.mjs`,
      `${base}.cjs`,
      path.join(base, 'index.js'),
      path.join(base, 'index.mjs'),
    ]) {
      const full = path.join(root, candidate);
      if (fs.existsSync(full) && fs.statSync(full).isFile()) return path.normalize(candidate);
    }
    return null;
  };
  const graph = new Map();
  const pattern = /(?:require\(\s*|from\s+|import\(\s*|import\s+)['"](\.{1,2}\/[^'"]*|\.{1,2})['"]/g;
  for (const file of files) {
    const imports = new Set();
    // Comments go first: a JSDoc type's `import('kube-watch-native')` imports nothing.
    const code = fs
      .readFileSync(path.join(root, file), 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/(^|\s)\/\/.*$/gm, '$1');
    for (const [, spec] of code.matchAll(pattern)) {
      const target = resolve(file, spec);
      if (target && target !== file) imports.add(target);
    }
    graph.set(file, imports);
  }
  return graph;
}

test('the Rust crate has no import circle', () => {
  const graph = rustGraph();
  assert.ok(graph.size > 50, `read ${graph.size} files`);
  // The reader finds what it must: the runner's files import the plan's types.
  assert.ok(
    graph.get(path.join(SRC, 'engine', 'runner', 'keeping.rs')).has(path.join(SRC, 'engine', 'plan.rs')),
  );
  assert.deepEqual(circles(graph), []);
});

test('the JavaScript files have no import circle', () => {
  const graph = jsGraph();
  assert.ok(graph.size > 100, `read ${graph.size} files`);
  assert.ok(graph.get(path.join('packages', 'backstage', 'index.js')).size > 0, 'the reader finds imports');
  assert.deepEqual(circles(graph), []);
});

test('the circle finder finds a circle around a loop', () => {
  const graph = new Map([
    ['a', new Set(['b'])],
    ['b', new Set(['c'])],
    ['c', new Set(['a', 'd'])],
    ['d', new Set()],
  ]);
  assert.deepEqual(circles(graph), [['a', 'b', 'c']]);
});
