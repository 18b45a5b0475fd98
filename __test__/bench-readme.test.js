'use strict';
// README's performance section as bench/readme.js writes it from a run's measurements: each
// figure in its column, the commit beside them, and nothing written without the markers.

const test = require('node:test');
const assert = require('node:assert/strict');
const { section, splice, BEGIN, END } = require('../bench/readme');

const ENV = {
  date: '2026-12-04T10:00:00Z',
  command: 'node bench/run.js --json=/tmp/r.json --quick',
  nproc: 2,
  node: 'v20.1.0',
};
const PLAN = {
  trickle: { count: 20, intervalMs: 50 },
  slow: { size: 'medium', bytes: 256 * 1024 * 1024 },
  idle: { watches: 300 },
};

/** A run's rows: one size measured by every scenario the section reads, with distinct figures. */
function rows() {
  const cell = 'small/https';
  const at = (scenario, client, result, c = cell) => ({ scenario, cell: c, client, run: 0, result });
  return [
    at('paired', 'bound', { clients: { native: { mainVsBaseline: 0.43, mainVsBound: 2.1 } } }),
    at('interleaved', 'native', { mainVsBound: 1.071 }),
    at('throughput', 'native', { eventsPerSec: 330, eldP99Ms: 5.4 }),
    at('throughput', 'baseline', { eventsPerSec: 200, eldP99Ms: 8.2 }),
    at('throughput', 'clientnode', { eventsPerSec: 150, eldP99Ms: 17.4 }),
    at('trickle', 'native', { latencyP50Ms: 0.41 }),
    at('trickle', 'baseline', { latencyP50Ms: 0.4 }),
    at('slow', 'native', { growthMiB: 35.2 }, 'medium/https'),
    at('slow', 'baseline', { growthMiB: 34.8 }, 'medium/https'),
    at('slow', 'clientnode', { growthMiB: 1030, overLimit: true }, 'medium/https'),
    at('idle', 'native', { kibPerWatch: 22.4, threads1: 9, threadsN: 9, connectionsAtAll: 4 }, 'https'),
    at('idle', 'baseline', { connectionsAtAll: 300 }, 'https'),
  ];
}

test('the section puts each measured figure in its column, with the commit', () => {
  const text = section({ env: ENV, plan: PLAN, rows: rows() }, 'abc1234');
  assert.ok(text.startsWith(BEGIN) && text.endsWith(END));
  assert.match(
    text,
    /Measured at commit abc1234 on 2026-12-04 \(`node bench\/run\.js --quick`, 2 cores, Node v20\.1\.0/,
  );
  const small = text.split('\n').find((line) => line.startsWith('| ~1.4 KB'));
  assert.equal(small, '| ~1.4 KB | 0.43 | 1.071 | 1.65 | 5.4 ms (baselines 8–17) |');
  const medium = text.split('\n').find((line) => line.startsWith('| ~9 KB'));
  assert.equal(medium, '| ~9 KB | — | — | — | — ms (baselines —) |', 'a size not measured shows no figure');
  assert.match(
    text,
    /median delay from the server's write to the loop body is 0\.41 ms \(Backstage-style 0\.40 ms\)/,
  );
  assert.match(text, /RSS grows 35 MiB \(Backstage-style 35 MiB, client-node stopped at the bench’s limit\)/);
  assert.match(
    text,
    /300 idle watches cost 22 KiB each, 0 more threads than one watch, and 4 TCP connections \(the Backstage-style watcher 300\)/,
  );
});

test('the section replaces only what lies between the markers, and never writes without them', () => {
  const readme = `# Title\n\nbefore\n${BEGIN}\nold figures\n${END}\nafter\n`;
  assert.equal(splice(readme, `${BEGIN}\nnew\n${END}`), `# Title\n\nbefore\n${BEGIN}\nnew\n${END}\nafter\n`);
  assert.throws(
    () => splice('# Title\n', 'x'),
    /README\.md has no section to write: it needs <!-- bench:readme begin -->/,
  );
  assert.throws(() => splice(`${END}\n${BEGIN}\n`, 'x'), /no section to write/);
});
