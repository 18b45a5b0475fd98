'use strict';
// npm run bench:logs-proxy [-- --followers=100 --rate=1000 --seconds=30 --runs=3]: FOLLOWERS callers
// follow one container through the Kubernetes plugin's proxy (`…/pods/web/log?follow=true`) of a
// real backend in a child process, while the container writes RATE lines a second (each carrying
// the time it was written) for SECONDS: the module's shared follow against the stock proxy's
// pass-through, alternating. Per run: the API server's log requests, line → follower latency
// (p50, p99), the backend's main-thread CPU per line per follower, its RSS before and after.
const { spawn } = require('node:child_process');
const { threadCpuNs, rssBytes } = require('../testbed/proc');

const arg = (name, value) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? value);
const [FOLLOWERS, RATE, SECONDS, RUNS] = [
  arg('followers', 100),
  arg('rate', 1000),
  arg('seconds', 30),
  arg('runs', 3),
];
const TOKEN = require('../testbed/live-helpers').TOKEN;
const SIM = `require('kube-watch-native/sim').createSimulator({ tls: true, token: '${TOKEN}' }).then((s) => {
  s.create('pods', { metadata: { name: 'web', namespace: 'default' }, spec: { containers: [{ name: 'main' }] } });
  let timer;
  const logRequests = () => s.requests.filter((r) => r.path.endsWith('/log')).length;
  process.on('message', ({ cmd, rate, seconds }) => {
    if (cmd === 'count') return process.send({ requests: logRequests(), follows: s.logs.follows.size });
    // Every 10 ms, the lines due by then: RATE a second, each with its time and some text.
    const [start, total] = [Date.now(), rate * seconds];
    let written = 0;
    timer = setInterval(() => {
      const due = Math.min(total, Math.floor(((Date.now() - start) * rate) / 1000));
      const lines = [];
      for (; written < due; written++) lines.push('t=' + Date.now() + ' line ' + written + ' ' + 'x'.repeat(60));
      if (lines.length) s.writeLog('default', 'web', 'main', lines.join('\\n'));
      if (written >= total) (clearInterval(timer), process.send({ written }));
    }, 10);
  });
  process.send(s.url);
});`;
const BACKEND = `const [url, native] = [process.argv[1], process.argv[2] === 'native'];
const { startLiveBackend, TOKEN } = require('./testbed/live-helpers');
const caData = Buffer.from(require('kube-watch-native/sim').certs.ca).toString('base64');
const clusters = [{ name: 'sim', url, authProvider: 'serviceAccount', serviceAccountToken: TOKEN, caData, skipMetricsLookup: true }];
startLiveBackend(undefined, { clusters, native }).then((b) => process.send(b.url));`;

const once = (proc) => new Promise((resolve) => proc.once('message', resolve));
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

/** One follower: every line's delay from its write, until `signal` aborts. */
async function follower(backend, delays, signal) {
  const res = await fetch(
    `${backend}/api/kubernetes/proxy/api/v1/namespaces/default/pods/web/log?container=main&follow=true&tailLines=0`,
    {
      headers: { authorization: 'Bearer mock-user-token', 'backstage-kubernetes-cluster': 'sim' },
      signal,
    },
  );
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

async function run(sim, simUrl, mode) {
  const backend = spawn(process.execPath, ['-e', BACKEND, simUrl, mode], {
    cwd: `${__dirname}/..`,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const url = await once(backend);
  const before = await new Promise((resolve) => (sim.send({ cmd: 'count' }), sim.once('message', resolve)));
  const controller = new AbortController();
  const delays = [];
  const followers = Array.from({ length: FOLLOWERS }, () => follower(url, delays, controller.signal));
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const [cpu0, rss0] = [threadCpuNs(backend.pid), rssBytes(backend.pid)];
  sim.send({ cmd: 'write', rate: RATE, seconds: SECONDS });
  const { written } = await once(sim);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const [cpu1, rss1] = [threadCpuNs(backend.pid), rssBytes(backend.pid)];
  const after = await new Promise((resolve) => (sim.send({ cmd: 'count' }), sim.once('message', resolve)));
  controller.abort();
  await Promise.all(followers);
  backend.kill();
  const got = delays.length;
  return {
    mode,
    requests: after.requests - before.requests,
    delivered: got / (written * FOLLOWERS),
    p50: pct(delays, 0.5),
    p99: pct(delays, 0.99),
    nsPerLine: (cpu1 - cpu0) / got,
    rssMiB: [rss0, rss1].map((b) => b / 1048576),
  };
}

(async () => {
  const sim = spawn(process.execPath, ['-e', SIM], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const simUrl = await once(sim);
  const results = { native: [], stock: [] };
  for (let i = 0; i < RUNS; i++) {
    for (const mode of ['native', 'stock']) {
      const r = await run(sim, simUrl, mode);
      results[mode].push(r);
      console.log(
        `${mode}: ${r.requests} log requests, ${(r.delivered * 100).toFixed(1)} % of lines delivered, p50 ${r.p50} ms, p99 ${r.p99} ms, main thread ${(r.nsPerLine / 1000).toFixed(2)} µs per line per follower, RSS ${r.rssMiB.map((m) => m.toFixed(0)).join(' → ')} MiB`,
      );
    }
  }
  const median = (mode, key) =>
    pct(
      results[mode].map((r) => r[key]),
      0.5,
    );
  const ratio = (key) => (median('native', key) / median('stock', key)).toFixed(2);
  console.log(
    `medians of ${RUNS} runs, ${FOLLOWERS} followers at ${RATE} lines/s for ${SECONDS} s: native/stock main thread per line per follower ${ratio('nsPerLine')}×, p99 ${median('native', 'p99')} / ${median('stock', 'p99')} ms, log requests ${median('native', 'requests')} / ${median('stock', 'requests')}`,
  );
  sim.kill();
})().catch((err) => (console.error(err), process.exit(1)));
