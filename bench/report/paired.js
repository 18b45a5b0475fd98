'use strict';
// Paired: every client in one process per cell, in alternating slices, so that each round
// compares them under the same conditions.

const { fmt, section, cellsOf, LABEL, noResult } = require('./measurements');

const HEADER = (
  'size/proto|client|main µs/ev|events/s|main ÷ bound (min–max)|' + 'main ÷ baseline|events/s ÷ baseline'
).split('|');

function paired({ plan, sizes, protos, clients }, m) {
  const body = [];
  for (const cell of cellsOf(sizes, protos)) {
    for (const client of ['bound', ...clients]) body.push(row(m, cell, client));
  }
  const slices = sizes.map((s) => `${plan.paired.slices[s]} ${s}`).join(' / ');
  return {
    lines: section(
      `Paired: all clients in one process per cell, alternating slices of ${slices} events, ` +
        `${plan.paired.rounds} measured rounds (medians of per-round ratios; min–max of main ÷ bound)`,
      HEADER,
      body,
    ),
    checks: [],
  };
}

function row(m, cell, client) {
  const p = m.pairedOf(cell, client);
  if (!p) {
    // A paired process measures every client, so its failure is the cell's.
    return [
      cell,
      LABEL[client],
      noResult(m.rows.filter((r) => r.scenario === 'paired' && r.cell === cell && r.result.error)),
    ];
  }
  const isBound = client === 'bound';
  const vsBaseline = isBound || client === 'baseline';
  return [
    cell,
    LABEL[client] + (client === 'native-fields' && !p.fieldsHonoured ? ' (fields NOT honoured)' : ''),
    fmt(p.mainUsPerEvent, 2),
    fmt(p.eventsPerSec, 0),
    isBound ? '—' : `${fmt(p.mainVsBound, 2)} (${fmt(p.spread[0], 2)}–${fmt(p.spread[1], 2)})`,
    vsBaseline ? '—' : fmt(p.mainVsBaseline, 2),
    vsBaseline ? '—' : fmt(p.eventsPerSecVsBaseline, 2),
  ];
}

module.exports = { paired };
