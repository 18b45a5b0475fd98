'use strict';
// What every part of the report shares: number formatting, medians and quantiles (every suite's),
// the markdown table, the clients' labels, the targets' verdicts, and the medians over a run's
// recorded measurements.

function fmt(x, digits = 1) {
  if (x === undefined || x === null || Number.isNaN(x)) return '—';
  if (typeof x !== 'number') return String(x);
  return x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function median(xs) {
  const v = xs.filter((x) => typeof x === 'number' && !Number.isNaN(x)).sort((a, b) => a - b);
  if (!v.length) return NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/** The `q` quantile of `xs` (the value a `q` share of them lie below); NaN when there are none. */
function quantile(xs, q) {
  if (!xs.length) return NaN;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

function table(header, body) {
  const lines = [
    `| ${header.join(' | ')} |`,
    `|${header.map((h, i) => (i < 2 ? '---' : '---:')).join('|')}|`,
  ];
  for (const r of body) lines.push(`| ${r.join(' | ')} |`);
  return lines.join('\n');
}

/** A part of the report's lines: its `### title` and its table, each after a blank line. */
const section = (title, header, body) => ['', `### ${title}`, '', table(header, body)];

/** The cells `size/proto` of every size and protocol, size by size. */
const cellsOf = (sizes, protos) => sizes.flatMap((size) => protos.map((proto) => `${size}/${proto}`));

const LABEL = {
  bound: 'JSON.parse bound',
  baseline: 'Backstage-style (node-fetch+split2)',
  clientnode: '@kubernetes/client-node Watch',
  native: 'NativeKubernetesWatcher',
  'native-fields': 'Native + fields (3 paths)',
  'native-against': 'NativeKubernetesWatcher, --against build',
};

// A comparison with a missing figure is neither met nor failed.
const le = (x, limit) => (Number.isFinite(x) ? x <= limit : undefined);
const ge = (x, limit) => (Number.isFinite(x) ? x >= limit : undefined);

/** One row of the targets table: what, the figure measured, the goal, and whether it was met. */
const target = (what, value, ok, goal) => [what, value, goal, ok === undefined ? '?' : ok ? 'yes' : '**NO**'];

/**
 * The lookups over `rows` ({ scenario, cell, client, run, result }) the parts of the report
 * share; failed measurements are left out of every figure.
 */
function measurements(rows) {
  const resultsOf = (scenario, cell, client) =>
    rows.filter((r) => r.scenario === scenario && r.cell === cell && r.client === client && !r.result.error);
  const errorsOf = (scenario, cell, client) =>
    rows.filter((r) => r.scenario === scenario && r.cell === cell && r.client === client && r.result.error);
  const med = (scenario, cell, client, metric) =>
    median(resultsOf(scenario, cell, client).map((r) => r.result[metric]));
  /** Median over runs of (client's metric ÷ other's metric) within the same run. */
  const ratio = (scenario, cell, client, other, metric) => {
    const mine = resultsOf(scenario, cell, client);
    const theirs = resultsOf(scenario, cell, other);
    return median(
      mine.map((m) => {
        const t = theirs.find((x) => x.run === m.run);
        return t ? m.result[metric] / t.result[metric] : NaN;
      }),
    );
  };
  /** One client's medians over the paired cell's processes, each of which measured every client. */
  const pairedOf = (cell, client) => {
    const vals = rows
      .filter((r) => r.scenario === 'paired' && r.cell === cell && !r.result.error)
      .map((r) => r.result.clients[client])
      .filter(Boolean);
    if (!vals.length) return undefined;
    const m = (k) => median(vals.map((v) => v[k]));
    return {
      mainUsPerEvent: m('mainUsPerEvent'),
      eventsPerSec: m('eventsPerSec'),
      mainVsBound: m('mainVsBound'),
      mainVsBaseline: m('mainVsBaseline'),
      eventsPerSecVsBaseline: m('eventsPerSecVsBaseline'),
      spread: vals[0].spread,
      rounds: vals[0].rounds,
      fieldsHonoured: vals.every((v) => v.fieldsHonoured !== false),
    };
  };
  const interleavedOf = (cell, client) => resultsOf('interleaved', cell, client)[0]?.result;
  return { rows, resultsOf, errorsOf, med, ratio, pairedOf, interleavedOf };
}

/** "no result", with the first failure's detail when there was one. */
const noResult = (errs) => `no result${errs.length ? `: ${errs[0].result.error.detail}` : ''}`;

module.exports = {
  fmt,
  median,
  quantile,
  table,
  section,
  cellsOf,
  LABEL,
  le,
  ge,
  target,
  measurements,
  noResult,
};
