'use strict';
// Flat out: every client in its own process, as fast as the server writes; and the event-loop
// delay target, judged here.

const { fmt, section, cellsOf, LABEL, target, noResult } = require('./measurements');

const HEADER = (
  'size/proto|client|events/s|CPU µs/ev|main µs/ev|other threads µs/ev|ELU|p99 ELD ms|' +
  'peak RSS MiB|main ÷ bound|main ÷ own bound|main ÷ baseline|events/s ÷ baseline'
).split('|');

function throughput({ plan, sizes, protos, clients, lineBytes }, m) {
  const body = [];
  const checks = [];
  for (const cell of cellsOf(sizes, protos)) {
    for (const client of ['bound', ...clients]) body.push(row(m, cell, client));
    const mine = m.med('throughput', cell, 'native', 'eldP99Ms');
    const others = ['baseline', 'clientnode']
      .filter((c) => clients.includes(c))
      .map((c) => m.med('throughput', cell, c, 'eldP99Ms'));
    const ok = Number.isFinite(mine)
      ? mine <= 10 && others.every((o) => Number.isNaN(o) || mine <= o)
      : undefined;
    checks.push(
      target(
        `p99 event-loop delay flat out, ${cell}`,
        `${fmt(mine, 1)} ms (baselines ${others.map((o) => fmt(o, 1)).join(', ')})`,
        ok,
        '≤ 10 ms and ≤ every baseline',
      ),
    );
  }
  const events = sizes.map((s) => `${s} ${plan.counts[s]} × ${fmt(lineBytes[s] / 1024, 1)} KiB`).join(', ');
  return { lines: section(`Flat out (events: ${events}; first 10% are warm-up)`, HEADER, body), checks };
}

/** One client's row in one cell: medians over its runs, ratios against the same run's others. */
function row(m, cell, client) {
  const runs = m.resultsOf('throughput', cell, client);
  const errs = m.errorsOf('throughput', cell, client);
  if (!runs.length) return [cell, LABEL[client], noResult(errs)];
  const med = (k) => m.med('throughput', cell, client, k);
  const isBound = client === 'bound';
  const against = (other, metric) =>
    isBound || client === other ? NaN : m.ratio('throughput', cell, client, other, metric);
  const fields =
    client === 'native-fields' && !runs.every((r) => r.result.fieldsHonoured) ? ' (fields NOT honoured)' : '';
  return [
    cell,
    LABEL[client] + fields + (errs.length ? ` (${errs.length} failed)` : ''),
    fmt(med('eventsPerSec'), 0),
    fmt(med('cpuUsPerEvent'), 2),
    fmt(med('mainUsPerEvent'), 2),
    isBound ? '—' : fmt(med('cpuUsPerEvent') - med('mainUsPerEvent'), 2),
    fmt(med('elu'), 2),
    fmt(med('eldP99Ms'), 1),
    fmt(med('peakRssMiB'), 0),
    fmt(against('bound', 'mainUsPerEvent'), 2),
    fmt(isBound ? NaN : med('mainVsOwnBound'), 2),
    fmt(against('baseline', 'mainUsPerEvent'), 2),
    fmt(against('baseline', 'eventsPerSec'), 2),
  ];
}

module.exports = { throughput };
