'use strict';
// npm run bench:logs [-- --lines=200000 --runs=5]: a follow of a container writing LINES lines (1 000
// a chunk) by streamLogs and by client-node's Log split into lines, alternating: main-thread CPU per line.
// npm run bench:logs -- --proxy [--followers=100 --rate=1000 --seconds=30 --runs=3 --tabs=N]: FOLLOWERS
// callers follow it through the plugin's proxy of a backend (a child) while it writes RATE lines a
// second, each with its time, for SECONDS: the module against the stock proxy, alternating; the log
// requests, line → follower p50/p99, the backend's main-thread CPU per line per follower, its RSS.
// --tabs=N: the followers are N Chromium tabs of the entity's live logs (line → DOM).
const { spawn } = require('node:child_process');
const { Writable } = require('node:stream');
const { NativeKubernetesWatcher } = require('kube-watch-native');
const { TOKEN, LIVE_SVC, bundle, startOrigin } = require('../testbed/live-helpers');
const { threadCpuNs, rssBytes } = require('../testbed/proc');
const { kubeConfig } = require('./kube');
const { Window } = require('./measure');
const { options } = require('./options');
const { quantile, median } = require('./report/measurements');

const OPTIONS = /(lines|runs|followers|rate|seconds|tabs)=\d+|proxy/;
const { num, flag } = options(process.argv.slice(2), OPTIONS, 'logs.js');
const PROXY = flag('proxy');
const DEFAULTS = { lines: 200_000, runs: PROXY ? 3 : 5, followers: 100, rate: 1000, seconds: 30, tabs: 0 };
const [LINES, RUNS, FOLLOWERS, RATE, SECONDS, TABS] = Object.entries(DEFAULTS).map(([k, n]) => num(k, n));
const POD = 'live-svc-1';
// LIVE_SVC's pod: `{ lines }` at once; `{ rate, seconds }` every 10 ms; `{ count }` of log requests.
const SIM = `require('kube-watch-native/sim').createSimulator({ tls: ${PROXY}, token: '${TOKEN}' }).then((s) => {
  s.create('pods', { metadata: { name: '${POD}', namespace: 'default', labels: { 'backstage.io/kubernetes-id': '${LIVE_SVC.metadata.name}' } }, spec: { containers: [{ name: 'main' }] } });
  const write = (lines) => s.writeLog('default', '${POD}', 'main', lines.join('\\n'));
  const line = (i) => 't=' + Date.now() + ' line ' + i + ' ' + 'x'.repeat(60);
  process.on('message', ({ lines, rate, seconds, count }) => {
    if (count) return process.send({ requests: s.requests.filter((r) => r.path.endsWith('/log')).length });
    if (lines) for (let i = 0; i < lines; i += 1000) write(Array.from({ length: 1000 }, (_, k) => line(i + k)));
    if (!rate) return undefined;
    let [start, total, written] = [Date.now(), rate * seconds, 0];
    const timer = setInterval(() => {
      const due = [];
      for (; written < Math.min(total, Math.floor(((Date.now() - start) * rate) / 1000)); written++) due.push(line(written));
      if (due.length) write(due);
      if (written >= total) (clearInterval(timer), process.send({ written }));
    }, 10);
  });
  process.send(s.url);
});`;
const FOLLOW = { follow: true, tailLines: 0 };
const once = (proc) => new Promise((resolve) => proc.once('message', resolve));
const ask = (proc, msg) => (proc.send(msg), once(proc));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const IPC = { cwd: `${__dirname}/..`, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] };
const node = (script) => spawn(process.execPath, ['-e', script], IPC);
function splitter(onLines) {
  let carry = '';
  return (text) => {
    const lines = (carry + text).split('\n');
    carry = lines.pop();
    onLines(lines);
  };
}

async function native(url, counted) {
  const credential = { type: 'bearer token', token: TOKEN };
  const params = { clusterDetails: { name: 's', url }, credential, namespace: 'default', pod: POD };
  for await (const e of new NativeKubernetesWatcher().streamLogs(params, FOLLOW))
    if (counted(e.lines.length)) return;
}

async function clientNode(url, counted) {
  const k8s = await import('@kubernetes/client-node');
  const kc = kubeConfig(k8s, { name: 's', server: url, token: TOKEN, skipTLSVerify: true });
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  const split = splitter((lines) => counted(lines.length) && done());
  const write = (chunk, _, next) => (split(chunk.toString()), next());
  const req = await new k8s.Log(kc).log('default', POD, 'main', new Writable({ write }), FOLLOW);
  await finished;
  req.abort();
}

/** streamLogs against client-node's Log, alternating: main-thread CPU per line. */
async function clients(sim, url) {
  const results = { native: [], 'client-node': [] };
  for (let run = 0; run < RUNS; run++) {
    for (const [name, follow] of Object.entries({ native, 'client-node': clientNode })) {
      const [window, timer] = [new Window({ eld: false }), setTimeout(() => sim.send({ lines: LINES }), 300)];
      let seen = 0;
      await follow(url, (n) => (seen === 0 && window.start(), (seen += n) >= LINES));
      clearTimeout(timer);
      results[name].push(window.stop(seen).mainUsPerEvent);
    }
  }
  const [n, c] = [quantile(results.native, 0.5), quantile(results['client-node'], 0.5)];
  const line = `native ${n.toFixed(3)} µs, client-node ${c.toFixed(3)} µs, ratio ${(n / c).toFixed(2)}`;
  console.log(`main thread per line, median of ${RUNS} runs of ${LINES} lines: ${line}`);
}

/** A backend child: the plugins and, for `native`, the module, on the simulator at `url`. */
function backendChild(url, native) {
  const caData = Buffer.from(require('kube-watch-native/sim').certs.ca).toString('base64');
  const cluster = { name: 'sim', url, authProvider: 'serviceAccount', serviceAccountToken: TOKEN, caData };
  const clusters = JSON.stringify([{ ...cluster, skipMetricsLookup: true }]);
  const script = `require('./testbed/live-helpers').startLiveBackend(undefined, { clusters: ${clusters}, native: ${native} })
    .then((backend) => process.send(backend.port));`;
  return node(script);
}

/** One follower: every line's delay from its write, until `signal` aborts. */
async function follower(port, delays, signal) {
  const path = `/api/kubernetes/proxy/api/v1/namespaces/default/pods/${POD}/log?container=main&follow=true&tailLines=0`;
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    headers: { authorization: 'Bearer mock-user-token', 'backstage-kubernetes-cluster': 'sim' },
    signal,
  });
  const decoder = new TextDecoder();
  const split = splitter((lines) => {
    for (const line of lines) delays.push(Date.now() - Number(line.slice(2, line.indexOf(' '))));
  });
  try {
    for await (const chunk of res.body) split(decoder.decode(chunk, { stream: true }));
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
    const nodes = records.flatMap((r) => (r.type === 'characterData' ? [r.target] : [...r.addedNodes]));
    for (const m of nodes
      .map((node) => node.textContent)
      .join('\n')
      .matchAll(/t=(\d+) line (\d+)/g))
      if (!seen.has(m[2])) (seen.add(m[2]), window.benchDelays.push(now - Number(m[1])));
  }).observe(document, { subtree: true, childList: true, characterData: true });
}

/** N Chromium tabs of the entity's live logs on the backend at `port`; `stop()` gives their delays. */
async function tabs(port) {
  const { chromium } = require('playwright-core');
  const page = () => ({ entity: LIVE_SVC, refreshIntervalMs: 500 });
  const origin = await startOrigin(await bundle(), port, page);
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  // A context each, N viewers' browsers (one holds at most 6 HTTP/1.1 connections to an origin).
  const pages = [];
  for (let i = 0; i < TABS; i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addInitScript(observeLines);
    pages.push(await context.newPage());
  }
  await Promise.all(pages.map((page) => page.goto(`${origin.url}/logs`)));
  await Promise.all(pages.map((page) => page.waitForSelector('select[aria-label="Container"]')));
  return async () => {
    const delays = (await Promise.all(pages.map((page) => page.evaluate(() => window.benchDelays)))).flat();
    await Promise.all([browser.close(), origin.close()]);
    return delays;
  };
}

async function run(sim, simUrl, native) {
  const [backend, controller, delays] = [backendChild(simUrl, native), new AbortController(), []];
  const port = await once(backend);
  const before = await ask(sim, { count: true });
  const follow = () => follower(port, delays, controller.signal);
  const followers = Array.from({ length: TABS ? 0 : FOLLOWERS }, follow);
  const tabsStop = TABS ? await tabs(port) : null;
  await sleep(2000);
  const [cpu0, rss0] = [threadCpuNs(backend.pid), rssBytes(backend.pid)];
  const { written } = await ask(sim, { rate: RATE, seconds: SECONDS });
  await sleep(1000);
  const [cpu1, rss1] = [threadCpuNs(backend.pid), rssBytes(backend.pid)];
  const after = await ask(sim, { count: true });
  controller.abort();
  await Promise.all(followers);
  if (tabsStop) delays.push(...(await tabsStop()));
  backend.kill();
  // Per reader and line: the part of the lines shown, the backend's main-thread CPU (ns).
  const lines = written * (TABS || FOLLOWERS);
  const [mode, requests] = [native ? 'native' : 'stock', after.requests - before.requests];
  const [p50, p99] = [0.5, 0.99].map((q) => quantile(delays, q));
  const [shown, nsPerLine, rssMiB] = [delays.length / lines, (cpu1 - cpu0) / lines, [rss0 >> 20, rss1 >> 20]];
  return { mode, requests, shown, p50, p99, nsPerLine, rssMiB };
}

/** --proxy: the module's shared follow against the stock proxy (or --tabs, the module's tabs alone). */
async function proxied(sim, simUrl) {
  const results = { native: [], stock: [] };
  for (let i = 0; i < RUNS; i++) {
    for (const native of TABS ? [true] : [true, false]) {
      const r = await run(sim, simUrl, native);
      results[r.mode].push(r);
      console.log(JSON.stringify(r));
    }
  }
  const m = (mode, key) => median(results[mode].map((r) => r[key]));
  const cpu = (m('native', 'nsPerLine') / m('stock', 'nsPerLine')).toFixed(2);
  const [readers, p99] = [
    TABS ? `${TABS} tabs` : `${FOLLOWERS} followers`,
    `native p99 ${m('native', 'p99')} ms`,
  ];
  const versus = `, native/stock main thread per line per follower ${cpu}×, stock p99 ${m('stock', 'p99')} ms`;
  console.log(
    `medians of ${RUNS} runs, ${readers} at ${RATE} lines/s for ${SECONDS} s: ${p99}${TABS ? '' : versus}`,
  );
}

(async () => {
  const sim = node(SIM);
  const url = await once(sim);
  await (PROXY ? proxied(sim, url) : clients(sim, url));
  sim.kill();
})().catch((err) => (console.error(err), process.exit(1)));
