'use strict';
// npm run bench:logs-proxy [-- --followers=100 --rate=1000 --seconds=30 --runs=3 --tabs=20]: FOLLOWERS
// callers follow one container through the Kubernetes plugin's proxy (`…/pods/{pod}/log?follow=true`)
// of a real backend in a child process while the container writes RATE lines a second, each with the
// time it was written, for SECONDS: the module's shared follow against the stock proxy's pass-through,
// alternating. Per run: the API server's log requests, line → follower latency (p50, p99), the
// backend's main-thread CPU per line per follower and its RSS before and after. With --tabs=N, the
// followers are N headless Chromium tabs of the entity's live logs (testbed/fixtures/live-tab at
// /logs, the module's backend): line → DOM latency, seen by a MutationObserver in each page.
const { spawn } = require('node:child_process');
const { threadCpuNs, rssBytes } = require('../testbed/proc');
const { startLiveBackend, TOKEN, LIVE_SVC, bundle, startOrigin } = require('../testbed/live-helpers');
const { options } = require('./options');
const { quantile, median } = require('./report/measurements');

const { num } = options(
  require.main === module ? process.argv.slice(2) : [],
  /(followers|rate|seconds|runs|tabs)=\d+/,
  'logs-proxy.js',
);
const [FOLLOWERS, RATE, SECONDS, RUNS, TABS] = [
  num('followers', 100),
  num('rate', 1000),
  num('seconds', 30),
  num('runs', 3),
  num('tabs', 0),
];
const POD = 'live-svc-1';
// The container of the entity LIVE_SVC's pod; every 10 ms, the lines due by then.
const SIM = `require('kube-watch-native/sim').createSimulator({ tls: true, token: '${TOKEN}' }).then((s) => {
  const labels = { 'backstage.io/kubernetes-id': '${LIVE_SVC.metadata.name}' };
  s.create('pods', { metadata: { name: '${POD}', namespace: 'default', labels }, spec: { containers: [{ name: 'main' }] } });
  process.on('message', ({ cmd, rate, seconds }) => {
    if (cmd === 'count') return process.send({ requests: s.requests.filter((r) => r.path.endsWith('/log')).length });
    const [start, total] = [Date.now(), rate * seconds];
    let written = 0;
    const timer = setInterval(() => {
      const due = Math.min(total, Math.floor(((Date.now() - start) * rate) / 1000));
      const lines = [];
      for (; written < due; written++) lines.push('t=' + Date.now() + ' line ' + written + ' ' + 'x'.repeat(60));
      if (lines.length) s.writeLog('default', '${POD}', 'main', lines.join('\\n'));
      if (written >= total) (clearInterval(timer), process.send({ written }));
    }, 10);
  });
  process.send(s.url);
});`;

const once = (proc) => new Promise((resolve) => proc.once('message', resolve));
const ask = (proc, msg) => (proc.send(msg), once(proc));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A backend child: the plugins and, for `native`, the module, on the simulator at `simUrl`. */
function backendChild(simUrl, native) {
  const script = `require(${JSON.stringify(__filename)}).serve(process.argv[1], process.argv[2] === 'true')`;
  return spawn(process.execPath, ['-e', script, simUrl, String(native)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

async function serve(url, native) {
  const caData = Buffer.from(require('kube-watch-native/sim').certs.ca).toString('base64');
  const cluster = { name: 'sim', url, authProvider: 'serviceAccount', serviceAccountToken: TOKEN, caData };
  const backend = await startLiveBackend(undefined, {
    clusters: [{ ...cluster, skipMetricsLookup: true }],
    native,
  });
  process.send(backend.port);
}

/** One follower: every line's delay from its write, until `signal` aborts. */
async function follower(port, delays, signal) {
  const path = `/api/kubernetes/proxy/api/v1/namespaces/default/pods/${POD}/log?container=main&follow=true&tailLines=0`;
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    headers: { authorization: 'Bearer mock-user-token', 'backstage-kubernetes-cluster': 'sim' },
    signal,
  });
  if (res.status !== 200) throw new Error(`follower: HTTP ${res.status}`);
  const decoder = new TextDecoder();
  let carry = '';
  try {
    for await (const chunk of res.body) {
      const now = Date.now();
      const lines = (carry + decoder.decode(chunk, { stream: true })).split('\n');
      carry = lines.pop();
      for (const line of lines) delays.push(now - Number(line.slice(2, line.indexOf(' '))));
    }
  } catch {
    // Aborted at the end of the run.
  }
}

/** In each page: the delay of every line `t=<ms> …` the DOM shows, once (read from what was added). */
function observeLines() {
  window.benchDelays = [];
  const seen = new Set();
  new MutationObserver((records) => {
    const now = Date.now();
    for (const record of records) {
      const nodes = record.type === 'characterData' ? [record.target] : record.addedNodes;
      for (const node of nodes) {
        for (const m of (node.textContent ?? '').matchAll(/t=(\d+) line (\d+)/g)) {
          if (!seen.has(m[2])) (seen.add(m[2]), window.benchDelays.push(now - Number(m[1])));
        }
      }
    }
  }).observe(document, { subtree: true, childList: true, characterData: true });
}

/** N Chromium tabs of the entity's live logs on the backend at `port`; `stop()` gives their delays. */
async function tabs(port) {
  const { chromium } = require('playwright-core');
  const origin = await startOrigin(await bundle(), port, () => ({
    entity: LIVE_SVC,
    refreshIntervalMs: 500,
  }));
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  // A context each, as N viewers' browsers: one browser holds at most 6 HTTP/1.1 connections to
  // an origin, so its 7th follow (and every other request to it) would wait.
  const pages = await Promise.all(
    Array.from({ length: TABS }, async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      await context.addInitScript(observeLines);
      return context.newPage();
    }),
  );
  await Promise.all(pages.map((page) => page.goto(`${origin.url}/logs`)));
  await Promise.all(pages.map((page) => page.waitForSelector('select[aria-label="Container"]')));
  return async () => {
    const delays = (await Promise.all(pages.map((page) => page.evaluate(() => window.benchDelays)))).flat();
    await browser.close();
    await origin.close();
    return delays;
  };
}

async function run(sim, simUrl, native) {
  const backend = backendChild(simUrl, native);
  const port = await once(backend);
  const before = await ask(sim, { cmd: 'count' });
  const controller = new AbortController();
  const delays = [];
  const followers = TABS
    ? []
    : Array.from({ length: FOLLOWERS }, () => follower(port, delays, controller.signal));
  const tabsStop = TABS ? await tabs(port) : null;
  await sleep(2000);
  const [cpu0, rss0] = [threadCpuNs(backend.pid), rssBytes(backend.pid)];
  const { written } = await ask(sim, { cmd: 'write', rate: RATE, seconds: SECONDS });
  await sleep(1000);
  const [cpu1, rss1] = [threadCpuNs(backend.pid), rssBytes(backend.pid)];
  const after = await ask(sim, { cmd: 'count' });
  controller.abort();
  await Promise.all(followers);
  if (tabsStop) delays.push(...(await tabsStop()));
  backend.kill();
  const readers = TABS || FOLLOWERS;
  return {
    mode: native ? 'native' : 'stock',
    requests: after.requests - before.requests,
    delivered: delays.length / (written * readers),
    p50: quantile(delays, 0.5),
    p99: quantile(delays, 0.99),
    nsPerLine: (cpu1 - cpu0) / (written * readers),
    rssMiB: [rss0, rss1].map((b) => b / 1048576),
  };
}

async function main() {
  const sim = spawn(process.execPath, ['-e', SIM], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const simUrl = await once(sim);
  const results = { native: [], stock: [] };
  for (let i = 0; i < RUNS; i++) {
    // The tabs are the module's (the stock frontend follows no log).
    for (const native of TABS ? [true] : [true, false]) {
      const r = await run(sim, simUrl, native);
      results[r.mode].push(r);
      const [cpu, rss] = [(r.nsPerLine / 1000).toFixed(2), r.rssMiB.map((m) => m.toFixed(0)).join(' → ')];
      console.log(
        `${r.mode}: ${r.requests} log requests, ${(r.delivered * 100).toFixed(1)} % of lines shown, p50 ${r.p50} ms, p99 ${r.p99} ms, main thread ${cpu} µs per line per ${TABS ? 'tab' : 'follower'}, RSS ${rss} MiB`,
      );
    }
  }
  const m = (mode, key) => median(results[mode].map((r) => r[key]));
  const readers = TABS ? `${TABS} tabs` : `${FOLLOWERS} followers`;
  const versus = TABS
    ? ''
    : `, native/stock main thread per line per follower ${(m('native', 'nsPerLine') / m('stock', 'nsPerLine')).toFixed(2)}×, stock p99 ${m('stock', 'p99')} ms, log requests ${m('native', 'requests')} / ${m('stock', 'requests')}`;
  console.log(
    `medians of ${RUNS} runs, ${readers} at ${RATE} lines/s for ${SECONDS} s: native p99 ${m('native', 'p99')} ms${versus}`,
  );
  sim.kill();
}

if (require.main === module) main().catch((err) => (console.error(err), process.exit(1)));
module.exports = { serve };
