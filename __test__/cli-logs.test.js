'use strict';
// `kube-watch logs` (issue 50) as `kubectl logs`, run as a child process against the simulator:
// one pod's container, every container with prefixes, the options, kubectl's errors and exit
// codes, and `-f -l SELECTOR` following a pod that starts matching while it runs.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { createSimulator } = require('kube-watch-native/sim');
const { BIN, writeKubeconfig, runKubeWatch } = require('./kube-watch-child');
const { podOfContainers } = require('./sim-helpers');
const { parseLogsLine, durationSeconds } = require('../packages/kube-watch-native/cli/logs');
const { until } = require('../testbed/wait');

const TOKEN = 'logs-cli-token-NEVER-PRINTED';
const T0 = Date.parse('2026-12-06T08:00:00.000Z');

let sim;
let kubeconfig;
test.before(async () => {
  sim = await createSimulator({ token: TOKEN });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-watch-logs-'));
  kubeconfig = writeKubeconfig(path.join(dir, 'config'), { server: sim.url, userLines: [`token: ${TOKEN}`] });
  sim.create('pods', podOfContainers('web'));
  for (let i = 0; i < 3; i++)
    sim.writeLog('default', 'web', 'main', `main ${i}`, { time: new Date(T0 + i * 1000) });
  sim.writeLog('default', 'web', 'sidecar', 'side 0', { time: new Date(T0) });
});
test.after(() => sim.close());

const logs = (...args) => runKubeWatch(['logs', '--kubeconfig', kubeconfig, ...args]);

test('a pod: its default container (said on stderr), the options, --all-containers with --prefix', async () => {
  const plain = await logs('web');
  assert.equal(plain.code, 0, plain.stderr);
  assert.equal(plain.stdout, 'main 0\nmain 1\nmain 2\n');
  assert.match(plain.stderr, /Defaulted container "main" out of: main, sidecar, late/);
  const tail = await logs('web', '-c', 'main', '--tail', '1', '--timestamps');
  assert.equal(tail.stdout, '2026-12-06T08:00:02Z main 2\n');
  const since = await logs('web', '-c', 'main', '--since-time', '2026-12-06T08:00:01Z', '--limit-bytes', '9');
  assert.equal(since.stdout, 'main 1\nma');
  const all = await logs('web', '--all-containers', '--prefix');
  assert.equal(all.code, 1, 'the waiting container is an error');
  assert.deepEqual(all.stdout.split('\n').filter(Boolean).sort(), [
    '[pod/web/main] main 0',
    '[pod/web/main] main 1',
    '[pod/web/main] main 2',
    '[pod/web/sidecar] side 0',
  ]);
  assert.match(
    all.stderr,
    /Error from server \(BadRequest\): container "late" in pod "web" is waiting to start/,
  );
  assert.ok(![plain, tail, since, all].some((r) => (r.stdout + r.stderr).includes(TOKEN)));
});

test("kubectl's errors and exit codes: a pod not found, a container not valid, usage", async () => {
  const missing = await logs('nope');
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /Error from server \(NotFound\): pods "nope" not found/);
  const invalid = await logs('web', '-c', 'nope');
  assert.equal(invalid.code, 1);
  assert.match(invalid.stderr, /Error from server \(BadRequest\): container nope is not valid for pod web/);
  const usage = await logs('web', '--since', 'soon');
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /--since must be a duration such as 10s or 5m, not "soon"/);
  assert.throws(() => parseLogsLine(['web', '-l', 'app=x']), /cannot both be given/);
  assert.throws(() => parseLogsLine([]), /a pod name or -l SELECTOR is required/);
  assert.equal(durationSeconds('1h30m'), 5400);
  assert.equal(durationSeconds('500ms'), 1);
  assert.equal(parseLogsLine(['-l', 'app=x']).options.tailLines, 10, "kubectl's default with a selector");
});

test('-f -l SELECTOR follows the matching pods and the ones that start matching while it runs', async () => {
  const labelled = (name) => ({
    ...podOfContainers(name),
    metadata: { name, namespace: 'default', labels: { app: 'shop' } },
  });
  sim.create('pods', labelled('shop-1'));
  sim.writeLog('default', 'shop-1', 'main', 'shop-1 before');
  const child = spawn(
    process.execPath,
    [BIN, 'logs', '--kubeconfig', kubeconfig, '-f', '-l', 'app=shop', '-c', 'main', '--prefix'],
    { env: { ...process.env, KUBECONFIG: '', NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
  const exited = new Promise((resolve) => child.once('close', resolve));
  const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  try {
    await until(() => stdout.includes('[pod/shop-1/main] shop-1 before'), { what: 'the first pod' });
    sim.create('pods', labelled('shop-2'));
    await until(() => sim.logs.follows.size === 2, { what: 'the new pod followed' });
    sim.writeLog('default', 'shop-2', 'main', 'shop-2 new');
    sim.writeLog('default', 'shop-1', 'main', 'shop-1 new');
    await until(
      () =>
        stdout.includes('[pod/shop-2/main] shop-2 new') && stdout.includes('[pod/shop-1/main] shop-1 new'),
      {
        what: 'both followed',
      },
    );
    child.kill('SIGINT');
    assert.equal(await exited, 0);
  } finally {
    clearTimeout(killer);
    child.kill('SIGKILL');
  }
});
