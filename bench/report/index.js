'use strict';
// The benchmark's markdown report: a header, one part per scenario (its table and the targets
// it judges), the targets that draw on several scenarios, then every target's verdict and
// every failed measurement. Pure: the same measurements give the same text.

const { fmt, median, table, measurements } = require('./measurements');
const { throughput } = require('./throughput');
const { paired } = require('./paired');
const { interleaved } = require('./interleaved');
const { cpuTargets } = require('./cpu-targets');
const { trickle } = require('./trickle');
const { slow } = require('./slow');
const { idle } = require('./idle');

/** Each part, in the report's order, with the scenarios any one of which makes it appear. */
const PARTS = [
  [['throughput'], throughput],
  [['paired'], paired],
  [['interleaved'], interleaved],
  [['throughput', 'paired', 'interleaved'], cpuTargets],
  [['trickle'], trickle],
  [['slow'], slow],
  [['idle'], idle],
];

/**
 * @param ctx { env, quick, plan, sizes, protos, clients, scenarios, lineBytes, slowAbortAbove, rows }:
 *   `env` as bench/run.js's environment() gives it, `plan` its PLAN, `scenarios` those that ran,
 *   `rows` every measurement ({ scenario, cell, client, run, result }).
 */
function report(ctx) {
  const m = measurements(ctx.rows);
  const parts = PARTS.filter(([needs]) => needs.some((s) => ctx.scenarios.includes(s))).map(([, part]) =>
    part(ctx, m),
  );
  const checks = parts.flatMap((p) => p.checks);
  return [
    ...header(ctx),
    ...parts.flatMap((p) => p.lines),
    ...(checks.length ? ['', '### Targets', '', table(['target', 'measured', 'goal', 'met'], checks)] : []),
    ...failures(ctx.rows),
  ].join('\n');
}

function header({ env, quick, plan, rows }) {
  const other = rows.map((r) => r.result.otherLoadCores).filter((x) => typeof x === 'number');
  return [
    `## kube-watch-native benchmark (${quick ? 'quick' : 'full'})`,
    '',
    `${env.date} · \`nproc\` ${env.nproc} · ${env.cpu} · Node ${env.node} · \`${env.command}\` · ${fmt(env.seconds, 0)} s · ` +
      `medians of ${plan.runs} runs (trickle, slow consumer, idle: ${plan.longRuns}); ratios are medians of per-run ratios`,
    '',
    `Other processes' load during the measurements (cores of ${env.nproc}): median ${fmt(median(other), 2)}, ` +
      `max ${fmt(Math.max(...other), 2)}.`,
  ];
}

function failures(rows) {
  const failed = rows.filter((r) => r.result.error);
  if (!failed.length) return [];
  return [
    '',
    '### Failed measurements',
    '',
    ...failed.map(
      (f) =>
        `- ${f.scenario} ${f.cell} ${f.client} run ${f.run + 1}: ${f.result.error.detail ?? JSON.stringify(f.result.error)}`,
    ),
  ];
}

module.exports = { report, fmt };
