'use strict';
// Slow consumer: a loop body slower than the server, and how far each client's memory grows.

const { fmt, section, LABEL, le, target, noResult } = require('./measurements');

const MiB = 1024 * 1024;

const HEADER =
  'pods/proto|client|start RSS MiB|peak RSS MiB|growth MiB|consumed MiB|server wrote MiB|events'.split('|');

function slow({ plan, clients, slowAbortAbove }, m) {
  const body = [];
  const cell = `${plan.slow.size}/https`;
  for (const client of clients.filter((c) => c !== 'native-fields')) {
    const runs = m.resultsOf('slow', cell, client);
    if (!runs.length) {
      body.push([cell, LABEL[client], noResult(m.errorsOf('slow', cell, client))]);
      continue;
    }
    const med = (k) => m.med('slow', cell, client, k);
    const over = runs.some((r) => r.result.overLimit);
    body.push([
      cell,
      LABEL[client],
      fmt(med('startRssMiB'), 0),
      fmt(med('peakRssMiB'), 0),
      fmt(med('growthMiB'), 1) + (over ? ` (stopped at +${fmt(slowAbortAbove / MiB, 0)} MiB)` : ''),
      fmt(med('consumedMiB'), 0),
      fmt(med('serverWroteMiB'), 0),
      fmt(med('events'), 0),
    ]);
  }
  const g = m.med('slow', cell, 'native', 'growthMiB');
  return {
    lines: section(
      `Slow consumer (${plan.slow.size} pods over https, server offers ${fmt(plan.slow.bytes / MiB, 0)} MiB, consumer sleeps 1 ms per event, stops after ${fmt(plan.slow.durationMs / 1000, 0)} s)`,
      HEADER,
      body,
    ),
    checks: [
      target('slow consumer: peak RSS − start RSS (native)', `${fmt(g, 1)} MiB`, le(g, 64), '≤ 64 MiB'),
    ],
  };
}

module.exports = { slow };
