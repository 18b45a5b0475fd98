#!/usr/bin/env node
'use strict';
// `npm run bench:informer` → node bench/informer.js [--runs=N] [--count=N]
//                                    [--only=sync,iterate,memory,fields,relist,get]
//                                    [--clients=native,clientnode] [--json=file]
//
// watcher.informer() side by side with @kubernetes/client-node's makeInformer over the same
// simulated API server (bench/clusters/informer.js, its own process: `count` medium pods of
// ~9 KiB JSON each, HTTPS with h2 offered). Every measurement runs in a fresh process
// (bench/informer-worker.js, forked with --expose-gc), clients alternating and their order
// rotating run by run; the report gives medians over the runs and ratios from the same run.
// Progress goes to stderr, the markdown report to stdout. Every child dies with this process.

const os = require('node:os');
const { cluster, work, failRun } = require('./children');
const { machineBusySeconds } = require('../testbed/proc');
const { options } = require('./options');
const { fmt: format, median } = require('./report/measurements');

const { opt, num, saveJson } = options(
  process.argv.slice(2),
  /runs=\d+|count=\d+|only=.+|clients=.+|json=.+/,
  'informer.js',
);
const RUNS = num('runs', 3);
const COUNT = num('count', 10000);
const SCENARIOS = (opt('only') ?? 'sync,iterate,memory,fields,relist,get').split(',');
const CLIENTS = (opt('clients') ?? 'native,clientnode').split(',');
const log = (...a) => console.error(...a);
const fmt = (x, d = 2) => format(x, d);

async function measure(server, task) {
  const t0 = Date.now();
  const busy0 = machineBusySeconds();
  const result = await work('informer-worker.js', task, {
    timeoutMs: 300000,
    execArgv: ['--expose-gc'],
    onAsk: (msg) => server.request(msg.request),
  });
  result.machineBusyCores = (machineBusySeconds() - busy0) / ((Date.now() - t0) / 1000);
  return result;
}

async function main() {
  const t0 = Date.now();
  const server = cluster('informer', { count: COUNT }, { startMs: 120_000 });
  const info = await server.ready;
  log(`server ${info.url}: ${info.count} pods, ${fmt(info.jsonBytes / info.count / 1024, 2)} KiB JSON each`);
  const rows = [];
  for (let run = 0; run < RUNS; run++) {
    for (const scenario of SCENARIOS) {
      const clients = run % 2 ? [...CLIENTS].reverse() : CLIENTS;
      for (const client of clients) {
        const task = { scenario, client, url: info.url, count: info.count, jsonBytes: info.jsonBytes };
        const r = await measure(server, task);
        rows.push({ run, scenario, client, r });
        log(
          `[run ${run + 1}/${RUNS}] ${scenario} ${client}: ${r.error?.detail ?? brief(r)} (busy ${fmt(r.machineBusyCores)} cores)`,
        );
      }
    }
  }
  server.stop();
  const out = report(rows, info, (Date.now() - t0) / 1000);
  console.log(out);
  saveJson({ info, rows });
}

function brief(r) {
  const parts = [];
  if (r.mainMs !== undefined) parts.push(`main ${fmt(r.mainMs, 1)} ms`);
  if (r.processMs !== undefined) parts.push(`process ${fmt(r.processMs, 1)} ms`);
  if (r.events !== undefined) parts.push(`${r.events} events`);
  if (r.growthBytes !== undefined) parts.push(`RSS +${fmt(r.growthBytes / 2 ** 20, 2)} MiB`);
  if (r.warmUpBytes !== undefined) parts.push(`warm-up +${fmt(r.warmUpBytes / 2 ** 20, 2)} MiB`);
  if (r.getUs !== undefined) parts.push(`get ${fmt(r.getUs, 2)} µs, JSON.parse ${fmt(r.parseUs, 2)} µs`);
  if (r.size !== undefined) parts.push(`size ${r.size}`);
  return parts.join(', ');
}

const mainMs = (r) => r.mainMs;
const processMs = (r) => r.processMs;
const events = (r) => r.events;

function report(rows, info, seconds) {
  const pick = (scenario, client, f) =>
    rows.filter((x) => x.scenario === scenario && x.client === client && !x.r.error).map((x) => f(x.r));
  /** Ratios `f` of native's `scenario` ÷ `other`'s (client-node's `scenario`) from the same run. */
  const perRun = (scenario, f, other = [scenario, 'clientnode']) => {
    const out = [];
    for (let run = 0; run < RUNS; run++) {
      const find = (s, client) => rows.find((x) => x.run === run && x.scenario === s && x.client === client);
      const [n, c] = [find(scenario, 'native'), find(...other)];
      if (n && c && !n.r.error && !c.r.error) out.push(f(n.r) / f(c.r));
    }
    return out;
  };
  const range = (xs) =>
    xs.length ? `${fmt(median(xs), 3)} (${fmt(Math.min(...xs), 3)}–${fmt(Math.max(...xs), 3)})` : '—';
  const busy = rows.map((x) => x.r.machineBusyCores);
  const lines = [];
  lines.push(
    `### Informer: ${info.count} medium pods (${fmt(info.jsonBytes / info.count / 1024, 2)} KiB JSON each), ` +
      `${RUNS} runs, ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores, ` +
      `machine busy ${fmt(Math.min(...busy))}–${fmt(Math.max(...busy))} cores during measurements (ours included), ` +
      `${fmt(seconds, 0)} s`,
    '',
    '| scenario | client | main-thread CPU ms | process CPU ms | events | other |',
    '|---|---|---:|---:|---:|---|',
  );
  for (const scenario of SCENARIOS) {
    for (const client of CLIENTS) {
      const m = (f) => median(pick(scenario, client, f));
      let other = '';
      if (scenario === 'memory' || scenario === 'fields')
        other =
          `RSS growth ${fmt(m((r) => r.growthBytes) / 2 ** 20, 1)} MiB = ${fmt(m((r) => r.growthBytes / r.cachedJsonBytes))}× ` +
          `the ${fmt(m((r) => r.cachedJsonBytes) / 2 ** 20, 1)} MiB of JSON cached ` +
          `(the warm-up informer before it: +${fmt(m((r) => r.warmUpBytes) / 2 ** 20, 1)} MiB)`;
      if (scenario === 'get')
        other = `get ${fmt(m((r) => r.getUs))} µs/call; JSON.parse of its text ${fmt(m((r) => r.parseUs))} µs`;
      const cells = [fmt(m(mainMs), 1), fmt(m(processMs), 1), fmt(m(events), 0)];
      lines.push(`| ${scenario} | ${client} | ${cells.join(' | ')} | ${other} |`);
    }
  }
  lines.push('', '| target | measured (median, min–max over runs) | goal | met |', '|---|---|---|---|');
  const met = (x, goal) => (Number.isNaN(x) ? '?' : x <= goal ? 'yes' : `no (${fmt(x / goal)}× the goal)`);
  const target = (name, xs, goal) =>
    lines.push(`| ${name} | ${range(xs)} | ≤ ${goal} | ${met(median(xs), goal)} |`);
  if (SCENARIOS.includes('sync')) {
    target('sync: main-thread CPU ÷ client-node', perRun('sync', mainMs), 0.25);
    target('sync: process CPU ÷ client-node', perRun('sync', processMs), 0.6);
  }
  if (SCENARIOS.includes('iterate'))
    target('iterate ADDED: main-thread CPU ÷ client-node', perRun('iterate', mainMs), 0.7);
  if (SCENARIOS.includes('memory')) {
    target(
      'memory: RSS growth ÷ JSON cached (native)',
      pick('memory', 'native', (r) => r.growthBytes / r.cachedJsonBytes),
      1.3,
    );
    lines.push(
      `| memory: the same, client-node | ${range(pick('memory', 'clientnode', (r) => r.growthBytes / r.cachedJsonBytes))} | report | |`,
    );
  }
  if (SCENARIOS.includes('fields'))
    target(
      'fields (3 paths): RSS growth ÷ (projected JSON + 150 B/object)',
      pick('fields', 'native', (r) => r.growthBytes / (r.cachedJsonBytes + 150 * r.size)),
      1,
    );
  if (SCENARIOS.includes('relist')) {
    const ok = pick('relist', 'native', (r) => (r.exact ? 1 : 0));
    lines.push(
      `| relist: exactly the changed objects' events (native) | ${ok.filter(Boolean).length} of ${ok.length} runs | all | ${ok.length && ok.every(Boolean) ? 'yes' : 'no'} |`,
    );
    const own = perRun('relist', mainMs, ['iterate', 'native']);
    target('relist: main-thread CPU ÷ its own full delivery (iterate)', own, 0.1);
    target('relist: main-thread CPU ÷ client-node relist', perRun('relist', mainMs), 0.05);
  }
  if (SCENARIOS.includes('get'))
    lines.push(
      `| get(): µs per call ÷ JSON.parse of its text | ${range(pick('get', 'native', (r) => r.getUs / r.parseUs))} | report | |`,
    );
  return lines.join('\n');
}

main().catch(failRun);
