#!/usr/bin/env node
'use strict';
// `npm run bench` → node bench/run.js [--quick] [--runs=N]
//                                     [--only=throughput,paired,interleaved,trickle,slow,idle]
//                                     [--sizes=small,medium,large] [--protos=http,https]
//                                     [--clients=baseline,clientnode,native,native-fields]
//                                     [--json=results.json] [--against=<checkout, built>]
//
// Starts the load server (bench/clusters/load.js) once, then measures every client in its own
// fresh process (bench/worker.js), all clients interleaved cell by cell and run by run, so they
// share the same conditions. Progress goes to stderr; the markdown tables (medians over the
// runs, ratios = median of the per-run ratios) go to stdout. Every load is bounded in count and
// time; every child is killed on exit, on error and on Ctrl-C.

const fs = require('node:fs');
const os = require('node:os');
const { lines } = require('./pods');
const { report, fmt } = require('./report');
const { ROOT, commitOf, build } = require('./builds');
const { options } = require('./options');

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

// ---- Options ------------------------------------------------------------------------------------

const argv = process.argv.slice(2);
const { opt, num, flag, saveJson } = options(
  argv,
  /quick|only=.+|runs=\d+|sizes=.+|protos=.+|clients=.+|json=.+|against=.+|help/,
  'run.js',
);
const list = (name, all) => (opt(name) ? opt(name).split(',') : all);
if (flag('help')) {
  console.error(fs.readFileSync(__filename, 'utf8').split('\n').slice(2, 11).join('\n'));
  process.exit(0);
}

const quick = flag('quick');
const SCENARIOS = list('only', ['throughput', 'paired', 'interleaved', 'trickle', 'slow', 'idle']);
const SIZES = list('sizes', ['small', 'medium', 'large']);
// Quick mode measures over HTTPS only (where the targets are set) unless --protos says otherwise.
const PROTOS = list('protos', flag('quick') ? ['https'] : ['http', 'https']);
const CLIENTS = list('clients', ['baseline', 'clientnode', 'native', 'native-fields']);
// --against adds `native-against`: the native client of another build (bench/builds.js), in its
// own worker processes like every client (not in `paired`, whose one process would load both addons).
if (opt('against')) {
  process.env.KWN_BENCH_AGAINST = build(opt('against')).watcher;
  if (!CLIENTS.includes('native-against')) CLIENTS.push('native-against');
}
const runsOpt = num('runs', undefined);

/** A figure of the plan: quick mode's, else the full run's. */
const quickOr = (quickValue, fullValue) => (quick ? quickValue : fullValue);
const PLAN = {
  runs: runsOpt ?? 3,
  // One run of the trickle, slow and idle scenarios in quick mode (unless --runs says otherwise).
  longRuns: runsOpt ?? quickOr(1, 3),
  counts: quickOr({ small: 15000, medium: 3000, large: 300 }, { small: 60000, medium: 12000, large: 1200 }),
  ownBoundMs: quickOr(80, 150),
  paired: {
    rounds: quickOr(6, 12),
    slices: quickOr({ small: 6000, medium: 1200, large: 120 }, { small: 8000, medium: 1500, large: 150 }),
  },
  interleaved: { rounds: quickOr(40, 300), segments: { small: 1000, medium: 200, large: 20 } },
  trickle: { count: quickOr(20, 100), intervalMs: 50 },
  slow: { bytes: quickOr(256 * MiB, 1 * GiB), durationMs: quickOr(3000, 20000), size: 'medium' },
  idle: { watches: quickOr(300, 1000) },
};
const WARMUP = 0.1;
/** A client-node queue may not grow past this over the start RSS before the worker stops it. */
const SLOW_ABORT_ABOVE = 1 * GiB;

// ---- Children: the load server and the workers, all dying with us -------------------------------

// bench/children.js kills them on exit and on SIGINT, SIGTERM and SIGHUP; here also on a crash.
const { cluster, work, killAll, failRun } = require('./children');
const { machineBusySeconds } = require('../testbed/proc');
process.on('uncaughtException', failRun);
process.on('unhandledRejection', failRun);

const log = (...a) => console.error(...a);

let server;
let ports;
let shuttingDown = false;

async function startServer() {
  server = cluster('load', {}, { startMs: 20000, answerMs: 20000 });
  server.exited.then((code) => {
    if (shuttingDown) return;
    log(`load server exited (${code})`);
    killAll();
    process.exit(1);
  });
  ports = await server.ready;
}

let jobCounter = 0;

/** Runs one worker for `task` against a fresh server job; resolves with its result. */
async function measure(task, job, timeoutMs) {
  const jobId = `j${++jobCounter}`;
  await server.request({ cmd: 'job', job: { ...job, id: jobId, maxMs: timeoutMs } });
  const origin =
    task.proto === 'https' ? `https://127.0.0.1:${ports.httpsPort}` : `http://127.0.0.1:${ports.httpPort}`;
  const stats = async () => (await server.request({ cmd: 'stats', jobId })).stats;
  const t0 = Date.now();
  const busy0 = machineBusySeconds();
  const result = await work(
    'worker.js',
    { ...task, target: { origin, jobId, proto: task.proto } },
    { timeoutMs, execArgv: ['--expose-gc'], onAsk: stats },
  );
  const busy = machineBusySeconds() - busy0;
  result.server = await stats();
  await server.request({ cmd: 'end-job', jobId });
  result.wallSeconds = (Date.now() - t0) / 1000;
  // CPU the rest of the machine used meanwhile (other processes), in cores: how noisy it was.
  const ours = (result.workerCpuSeconds ?? 0) + (result.server.serverCpuMs ?? 0) / 1000;
  result.otherLoadCores = Math.max(0, busy - ours) / result.wallSeconds;
  return result;
}

// ---- The plan: cells (scenario × size × proto) × clients, interleaved ---------------------------

const rows = []; // { scenario, cell, client, run, result }
const lineBytesOf = (size) => lines(size, 64).reduce((a, l) => a + l.length, 0) / 64;
const lineBytes = Object.fromEntries(SIZES.map((s) => [s, lineBytesOf(s)]));
lineBytes[PLAN.slow.size] ??= lineBytesOf(PLAN.slow.size);

const rotate = (arr, by) => [...arr.slice(by % arr.length), ...arr.slice(0, by % arr.length)];

/** A cell per size and protocol; `make(size)` gives its clients, task, job and time bound. */
const perSize = (make) =>
  SIZES.flatMap((size) => PROTOS.map((proto) => ({ key: `${size}/${proto}`, size, proto, ...make(size) })));

function cellsFor(scenario) {
  const streamClients = CLIENTS.filter((c) => c !== 'native-fields');
  const { counts, ownBoundMs, paired, interleaved, trickle, slow } = PLAN;
  const httpsOnly = (key, size, cell) => [{ key, size, proto: 'https', clients: streamClients, ...cell }];
  switch (scenario) {
    case 'throughput':
      return perSize((size) => ({
        clients: ['bound', ...CLIENTS],
        task: { scenario, size, count: counts[size], warmup: Math.round(counts[size] * WARMUP), ownBoundMs },
        job: { mode: 'stream', size, count: counts[size] },
        timeoutMs: 120000,
      }));
    case 'paired':
      return perSize((size) => {
        const [slice, warmup] = [paired.slices[size], Math.round(paired.slices[size] * WARMUP)];
        // Not `native-against`: one process would load both addons.
        const clients = ['bound', ...CLIENTS.filter((c) => c !== 'native-against')];
        return {
          clients: ['all'],
          task: { scenario, size, slice, warmup, rounds: paired.rounds + 1, clients },
          job: { mode: 'stream', size, count: slice + warmup },
          timeoutMs: 600000,
        };
      });
    case 'interleaved':
      // Only clients whose paused stream does no main-thread work: the pure-JS ones keep reading
      // and splitting their socket in the bound's turns of the event loop (client-node cannot
      // even pause), which would bill part of their work to the bound.
      return perSize((size) => ({
        clients: CLIENTS.filter((c) => c.startsWith('native')),
        task: { scenario, size, segment: interleaved.segments[size], rounds: interleaved.rounds },
        job: { mode: 'stream', size, count: interleaved.segments[size] * (interleaved.rounds + 2) },
        timeoutMs: 600000,
      }));
    case 'trickle':
      return PROTOS.map((proto) => ({
        key: `small/${proto}`,
        size: 'small',
        proto,
        clients: streamClients,
        task: { scenario, count: trickle.count },
        job: { mode: 'trickle', size: 'small', count: trickle.count, intervalMs: trickle.intervalMs },
        timeoutMs: trickle.count * trickle.intervalMs + 30000,
      }));
    case 'slow': {
      const { size, durationMs } = slow;
      return httpsOnly(`${size}/https`, size, {
        task: { scenario, durationMs, lineBytes: lineBytes[size], abortAboveBytes: SLOW_ABORT_ABOVE },
        job: { mode: 'bytes', size, bytes: slow.bytes },
        timeoutMs: durationMs + 60000,
      });
    }
    case 'idle':
      return httpsOnly('https', undefined, {
        task: { scenario, watches: PLAN.idle.watches },
        job: { mode: 'idle' },
        timeoutMs: 180000,
      });
    default:
      throw new Error(`unknown scenario ${scenario} (throughput, paired, interleaved, trickle, slow, idle)`);
  }
}

function brief(scenario, r) {
  if (r.error) return `ERROR ${r.error.detail ?? JSON.stringify(r.error)}`;
  switch (scenario) {
    case 'throughput':
      return `${fmt(r.eventsPerSec, 0)} ev/s, main ${fmt(r.mainUsPerEvent, 2)} µs/ev (own bound ${fmt(r.ownBoundUsPerEvent, 2)}), p99 ELD ${fmt(r.eldP99Ms, 1)} ms`;
    case 'paired':
      return Object.entries(r.clients)
        .filter(([name]) => name !== 'bound')
        .map(([name, c]) => `${name} ${fmt(c.mainVsBound, 2)}× bound`)
        .join(', ');
    case 'interleaved':
      return `main ${fmt(r.mainVsBound, 3)}× bound (quartiles ${fmt(r.mainVsBoundQ1, 3)}–${fmt(r.mainVsBoundQ3, 3)}), ${fmt(r.mainUsPerEvent, 2)} µs/ev`;
    case 'trickle':
      return `p50 ${fmt(r.latencyP50Ms, 2)} ms, p99 ${fmt(r.latencyP99Ms, 2)} ms`;
    case 'slow':
      return `growth ${fmt(r.growthMiB, 1)} MiB, consumed ${fmt(r.consumedMiB, 0)} MiB, server wrote ${fmt(r.serverWroteMiB, 0)} MiB`;
    case 'idle':
      return `${fmt(r.kibPerWatch, 1)} KiB/watch, threads ${r.threads1}→${r.threadsN}, TCP ${r.connectionsAtAll}`;
    default:
      return '';
  }
}

async function main() {
  const t0 = Date.now();
  await startServer();
  log(
    `load server: http :${ports.httpPort}, https(h2+h1) :${ports.httpsPort}; ${quick ? 'quick' : 'full'} mode`,
  );
  const plan = SCENARIOS.map((s) => ({ scenario: s, cells: cellsFor(s) }));
  const maxRuns = Math.max(PLAN.runs, PLAN.longRuns);
  for (let run = 0; run < maxRuns; run++) {
    for (const { scenario, cells } of plan) {
      // The paired and interleaved scenarios repeat in rounds inside one process per cell.
      const runs =
        scenario === 'throughput'
          ? PLAN.runs
          : scenario === 'paired' || scenario === 'interleaved'
            ? 1
            : PLAN.longRuns;
      if (run >= runs) continue;
      for (const cell of cells) {
        for (const client of rotate(cell.clients, run)) {
          const task = { ...cell.task, client, proto: cell.proto };
          if (client === 'bound') task.scenario = 'bound';
          const result = await measure(task, cell.job, cell.timeoutMs);
          rows.push({ scenario, cell: cell.key, client, run, result });
          log(
            `[run ${run + 1}/${runs}] ${scenario} ${cell.key} ${client}: ${brief(scenario, result)} ` +
              `(${fmt(result.wallSeconds, 1)} s, other load ${fmt(result.otherLoadCores, 2)} cores)`,
          );
        }
      }
    }
  }
  shuttingDown = true;
  server.stop();
  const seconds = (Date.now() - t0) / 1000;
  const out = report(reportContext(plan, seconds));
  console.log(out);
  saveJson({ env: environment(seconds), plan: PLAN, rows });
  log(`done in ${fmt(seconds, 0)} s`);
}

// ---- Report (bench/report/: one part per scenario) ----------------------------------------------

function environment(seconds) {
  const model =
    /model name\s*:\s*(.+)/.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model;
  return {
    date: new Date().toISOString(),
    nproc: os.availableParallelism?.() ?? os.cpus().length,
    cpu: model,
    node: process.version,
    command: `node bench/run.js ${argv.join(' ')}`.trim(),
    commit: commitOf(ROOT),
    seconds,
  };
}

/** What bench/report/ needs to write the report of this run. */
function reportContext(plan, seconds) {
  return {
    env: environment(seconds),
    quick,
    plan: PLAN,
    sizes: SIZES,
    protos: PROTOS,
    clients: CLIENTS,
    scenarios: plan.map((p) => p.scenario),
    lineBytes,
    slowAbortAbove: SLOW_ABORT_ABOVE,
    rows,
  };
}

main().catch(failRun);
