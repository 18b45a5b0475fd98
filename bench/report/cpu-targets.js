'use strict';
// The main-thread CPU and throughput targets, which draw on the flat-out, paired and
// interleaved scenarios together. main ÷ bound is judged on the interleaved scenario when it
// ran (the tightest on a noisy machine), else on the paired one, else on the flat-out runs
// against their own bound; main ÷ baseline on the paired one, else flat out; throughput flat
// out. Every figure measured is shown.

const { fmt, cellsOf, le, ge, target } = require('./measurements');

/** The first figure that was measured. */
const judge = (...xs) => xs.find((x) => Number.isFinite(x)) ?? NaN;
const both = (flat, paired, inter) =>
  `flat-out ${fmt(flat, 2)}; paired ${fmt(paired, 2)}` +
  (inter === undefined ? '' : `; interleaved ${fmt(inter, 3)}`);

/** main CPU per event ÷ the baseline's, at most this over https. */
const VS_BASELINE = { small: 0.7, medium: 0.8, large: 0.9 };
/** events/s ÷ the baseline's, at least this over https. */
const THROUGHPUT = [
  ['small', 1.3],
  ['medium', 1.15],
];

function cpuTargets(ctx, m) {
  return {
    lines: [],
    checks: [...vsBaseline(ctx, m), ...vsBound(ctx, m), ...throughput(ctx, m), ...fields(ctx, m)],
  };
}

function vsBaseline({ sizes, protos }, m) {
  if (!protos.includes('https')) return [];
  return sizes.map((size) => {
    const cell = `${size}/https`;
    const flat = m.ratio('throughput', cell, 'native', 'baseline', 'mainUsPerEvent');
    const paired = m.pairedOf(cell, 'native')?.mainVsBaseline;
    return target(
      `main CPU/event ÷ baseline, ${cell}`,
      both(flat, paired),
      le(judge(paired, flat), VS_BASELINE[size]),
      `≤ ${VS_BASELINE[size]}`,
    );
  });
}

function vsBound({ sizes, protos }, m) {
  const checks = [];
  for (const cell of cellsOf(sizes, protos)) {
    const flat = m.med('throughput', cell, 'native', 'mainVsOwnBound');
    const paired = m.pairedOf(cell, 'native')?.mainVsBound;
    const inter = m.interleavedOf(cell, 'native')?.mainVsBound;
    checks.push(
      target(
        `main CPU/event ÷ JSON.parse bound, ${cell}`,
        `${both(flat, paired, inter)} (flat-out against its own in-process bound)`,
        le(judge(inter, paired, flat), 1.1),
        '≤ 1.10',
      ),
    );
    // Each interleaved segment starts from a full queue, the native side's best case; flat
    // out is the figure the watch's next improvement is aimed at, so it gets its own line.
    const flatRuns = m.resultsOf('throughput', cell, 'native').map((r) => r.result.mainVsOwnBound);
    if (flatRuns.length) {
      checks.push(
        target(
          `main CPU/event ÷ JSON.parse bound flat out, ${cell}`,
          `${fmt(flat, 2)} (runs ${fmt(Math.min(...flatRuns), 2)}–${fmt(Math.max(...flatRuns), 2)}; ` +
            `against its own in-process bound)`,
          undefined,
          'report (next to aim at)',
        ),
      );
    }
  }
  return checks;
}

function throughput({ sizes, protos }, m) {
  if (!protos.includes('https')) return [];
  return THROUGHPUT.filter(([size]) => sizes.includes(size)).map(([size, min]) => {
    const cell = `${size}/https`;
    const flat = m.ratio('throughput', cell, 'native', 'baseline', 'eventsPerSec');
    const paired = m.pairedOf(cell, 'native')?.eventsPerSecVsBaseline;
    return target(
      `events/s ÷ baseline, ${cell}`,
      both(flat, paired),
      ge(judge(flat, paired), min),
      `≥ ${min} (judged flat-out)`,
    );
  });
}

/** The fields client's main ÷ bound, reported (not judged), flagged when the fields were not honoured. */
function fields({ sizes, protos, clients }, m) {
  if (!clients.includes('native-fields')) return [];
  return cellsOf(sizes, protos).map((cell) => {
    const flat = m.med('throughput', cell, 'native-fields', 'mainVsOwnBound');
    const p = m.pairedOf(cell, 'native-fields');
    const honoured =
      m.resultsOf('throughput', cell, 'native-fields').every((x) => x.result.fieldsHonoured) &&
      (p?.fieldsHonoured ?? true);
    return target(
      `fields: main CPU/event ÷ JSON.parse bound, ${cell}`,
      `${both(flat, p?.mainVsBound, m.interleavedOf(cell, 'native-fields')?.mainVsBound)}${honoured ? '' : ' (fields NOT honoured)'}`,
      undefined,
      'report',
    );
  });
}

module.exports = { cpuTargets };
