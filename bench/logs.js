'use strict';
// npm run bench:logs [-- --lines=200000 --runs=5]: a follow of one container that writes LINES
// lines (1 000 a chunk, at once), read by the native log stream (streamLogs, lines as strings)
// and by @kubernetes/client-node's Log into a stream split into lines, alternating, in this
// process (the simulator in a child): the main thread's CPU per line, medians and their ratio.
const { spawn } = require('node:child_process');
const { Writable } = require('node:stream');
const { NativeKubernetesWatcher } = require('kube-watch-native');
const { kubeConfig } = require('./kube');
const { Window } = require('./measure');
const { options } = require('./options');
const { quantile } = require('./report/measurements');

const { num } = options(process.argv.slice(2), /lines=\d+|runs=\d+/, 'logs.js');
const [LINES, RUNS] = [num('lines', 200_000), num('runs', 5)];
const SIM = `require('kube-watch-native/sim').createSimulator({ token: 't' }).then((s) => {
  s.create('pods', { metadata: { name: 'web', namespace: 'default' }, spec: { containers: [{ name: 'main' }] } });
  const chunk = (i) => Array.from({ length: 1000 }, (_, k) => 'line ' + (i + k) + ' ' + 'x'.repeat(60)).join('\\n');
  process.on('message', (n) => { for (let i = 0; i < n; i += 1000) s.writeLog('default', 'web', 'main', chunk(i)); });
  process.send(s.url);
});`;
const FOLLOW = { follow: true, tailLines: 0 };

async function native(url, counted) {
  const credential = { type: 'bearer token', token: 't' };
  const params = { clusterDetails: { name: 's', url }, credential, namespace: 'default', pod: 'web' };
  for await (const e of new NativeKubernetesWatcher().streamLogs(params, FOLLOW))
    if (counted(e.lines.length)) return;
}

async function clientNode(url, counted) {
  const k8s = await import('@kubernetes/client-node');
  const kc = kubeConfig(k8s, { name: 's', server: url, token: 't', skipTLSVerify: true });
  let [carry, done] = ['', null];
  const finished = new Promise((resolve) => (done = resolve));
  const write = (chunk, _, next) => {
    const lines = (carry + chunk.toString()).split('\n');
    carry = lines.pop();
    if (counted(lines.length)) done();
    next();
  };
  const req = await new k8s.Log(kc).log('default', 'web', 'main', new Writable({ write }), FOLLOW);
  await finished;
  req.abort();
}

(async () => {
  const sim = spawn(process.execPath, ['-e', SIM], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const url = await new Promise((resolve) => sim.once('message', resolve));
  const results = { native: [], 'client-node': [] };
  const clients = Object.entries({ native, 'client-node': clientNode });
  for (let run = 0; run < RUNS; run++) {
    for (const [name, follow] of clients) {
      const [window, timer] = [new Window({ eld: false }), setTimeout(() => sim.send(LINES), 300)];
      let seen = 0;
      await follow(url, (n) => (seen === 0 && window.start(), (seen += n) >= LINES));
      clearTimeout(timer);
      results[name].push(window.stop(seen).mainUsPerEvent);
    }
  }
  const [n, c] = [quantile(results.native, 0.5), quantile(results['client-node'], 0.5)];
  const line = `native ${n.toFixed(3)} µs, client-node ${c.toFixed(3)} µs, ratio ${(n / c).toFixed(2)}`;
  console.log(`main thread per line, median of ${RUNS} runs of ${LINES} lines: ${line}`);
  sim.kill();
})().catch((err) => (console.error(err), process.exit(1)));
