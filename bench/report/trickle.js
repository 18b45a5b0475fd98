'use strict';
// Trickle: one small event at a time, the delay from the server's write to the loop body.

const { fmt, section, LABEL, le, target } = require('./measurements');

const HEADER = ['proto', 'client', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'p50 − baseline ms', 'main µs/ev'];

function trickle({ plan, protos, clients }, m) {
  const body = [];
  const checks = [];
  for (const proto of protos) {
    const cell = `small/${proto}`;
    const med = (client, k) => m.med('trickle', cell, client, k);
    for (const client of clients.filter((c) => c !== 'native-fields')) {
      if (!m.resultsOf('trickle', cell, client).length) {
        body.push([proto, LABEL[client], 'no result']);
        continue;
      }
      const base = med('baseline', 'latencyP50Ms');
      body.push([
        proto,
        LABEL[client],
        fmt(med(client, 'latencyP50Ms'), 3),
        fmt(med(client, 'latencyP90Ms'), 3),
        fmt(med(client, 'latencyP99Ms'), 3),
        fmt(med(client, 'latencyMaxMs'), 3),
        client === 'baseline' ? '' : fmt(med(client, 'latencyP50Ms') - base, 3),
        fmt(med(client, 'mainUsPerEvent'), 1),
      ]);
    }
    const diff = med('native', 'latencyP50Ms') - med('baseline', 'latencyP50Ms');
    checks.push(
      target(
        `trickle: median delay native − baseline, ${proto}`,
        `${fmt(diff, 3)} ms`,
        le(diff, 1),
        '≤ 1 ms',
      ),
    );
  }
  return {
    lines: section(
      `Trickle (${plan.trickle.count} small events, one every ${plan.trickle.intervalMs} ms): delay from the server's write to the loop body`,
      HEADER,
      body,
    ),
    checks,
  };
}

module.exports = { trickle };
