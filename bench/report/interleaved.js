'use strict';
// Interleaved: one stream per native client, paused every segment for a bound segment of as
// many events run inline, so main ÷ bound is measured round by round in one process.

const { fmt, section, cellsOf, LABEL, noResult } = require('./measurements');

const HEADER = ['size/proto', 'client', 'main µs/ev', 'bound µs/ev', 'main ÷ bound (quartiles)'];

function interleaved({ plan, sizes, protos, clients }, m) {
  const body = [];
  for (const cell of cellsOf(sizes, protos)) {
    for (const client of clients.filter((c) => c.startsWith('native'))) {
      const r = m.interleavedOf(cell, client);
      if (!r) {
        body.push([cell, LABEL[client], noResult(m.errorsOf('interleaved', cell, client))]);
        continue;
      }
      body.push([
        cell,
        LABEL[client],
        fmt(r.mainUsPerEvent, 2),
        fmt(r.boundUsPerEvent, 2),
        `${fmt(r.mainVsBound, 3)} (${fmt(r.mainVsBoundQ1, 3)}–${fmt(r.mainVsBoundQ3, 3)})`,
      ]);
    }
  }
  const segments = sizes.map((s) => `${plan.interleaved.segments[s]} ${s}`).join(' / ');
  return {
    lines: section(
      `Interleaved: one stream per client, paused every ${segments} events ` +
        `for a bound segment of as many events run inline; ${plan.interleaved.rounds} measured rounds (median and quartiles of per-round ratios)`,
      HEADER,
      body,
    ),
    checks: [],
  };
}

module.exports = { interleaved };
