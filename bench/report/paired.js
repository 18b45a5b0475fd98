'use strict';
// Paired: every client in one process per cell, in alternating slices, so that each round
// compares them under the same conditions.

const { fmt, table, LABEL } = require('./measurements');

const HEADER = (
  'size/proto|client|main µs/ev|events/s|main ÷ bound (min–max)|' + 'main ÷ baseline|events/s ÷ baseline'
).split('|');

function paired({ plan, sizes, protos, clients }, m) {
  const body = [];
  for (const size of sizes) {
    for (const proto of protos) {
      const cell = `${size}/${proto}`;
      for (const client of ['bound', ...clients]) body.push(row(m, cell, client));
    }
  }
  const slices = sizes.map((s) => `${plan.paired.slices[s]} ${s}`).join(' / ');
  return {
    lines: [
      '',
      `### Paired: all clients in one process per cell, alternating slices of ${slices} events, ` +
        `${plan.paired.rounds} measured rounds (medians of per-round ratios; min–max of main ÷ bound)`,
      '',
      table(HEADER, body),
    ],
    checks: [],
  };
}

function row(m, cell, client) {
  const p = m.pairedOf(cell, client);
  if (!p) {
    // A paired process measures every client, so its failure is the cell's.
    const err = m.rows.find((r) => r.scenario === 'paired' && r.cell === cell && r.result.error);
    return [cell, LABEL[client], `no result${err ? `: ${err.result.error.detail}` : ''}`];
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
