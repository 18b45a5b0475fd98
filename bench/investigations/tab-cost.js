'use strict';
// What one Chromium tab of an entity's live logs costs the browser while the container writes
// RATE lines a second (RATE=10 by default): Chromium's own task, script, layout and style times
// over 10 s (the CDP Performance domain), idle and writing, and where the script time went
// (a sampled profile, the top 15 functions by self time). Run: RATE=1000 node bench/investigations/tab-cost.js
const { chromium } = require('playwright-core');
const { createSimulator } = require('kube-watch-native/sim');
const { TOKEN, LIVE_SVC, bundle, startOrigin, startLiveBackend } = require('../../testbed/live-helpers');
const { sleep } = require('../../testbed/wait');

const RATE = Number(process.env.RATE ?? 10);
const KEYS = ['TaskDuration', 'ScriptDuration', 'LayoutDuration', 'RecalcStyleDuration', 'LayoutCount'];

async function main() {
  const sim = await createSimulator({ tls: true, token: TOKEN });
  const labels = { 'backstage.io/kubernetes-id': LIVE_SVC.metadata.name };
  sim.create('pods', {
    metadata: { name: 'live-svc-1', namespace: 'default', labels },
    spec: { containers: [{ name: 'main' }] },
  });
  const backend = await startLiveBackend(sim);
  const origin = await startOrigin(await bundle(), backend.port, () => ({
    entity: LIVE_SVC,
    refreshIntervalMs: 500,
  }));
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${origin.url}/logs`);
  await page.waitForSelector('select[aria-label="Container"]');
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const metrics = async () =>
    Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
  const span = async (label) => {
    const before = await metrics();
    await sleep(10_000);
    const after = await metrics();
    console.log(label, KEYS.map((k) => `${k}=${(after[k] - before[k]).toFixed(3)}`).join(' '));
  };
  await sleep(3000);
  await span('idle, 10 s:');
  const start = Date.now();
  let written = 0;
  const writer = setInterval(() => {
    const lines = [];
    while (written < Math.floor(((Date.now() - start) * RATE) / 1000)) lines.push(`line ${written++}`);
    if (lines.length) sim.writeLog('default', 'live-svc-1', 'main', lines.join('\n'));
  }, 10);
  await sleep(1000);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.start');
  await span(`${RATE} lines/s, 10 s:`);
  const { profile } = await cdp.send('Profiler.stop');
  clearInterval(writer);
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const self = new Map();
  for (const id of profile.samples) {
    const f = frames.get(id);
    const key = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber}`;
    self.set(key, (self.get(key) ?? 0) + 1);
  }
  for (const [key, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 15)) {
    console.log(`${((100 * n) / profile.samples.length).toFixed(1).padStart(5)} % ${key}`);
  }
  await browser.close();
  await origin.close();
  await backend.stop();
  await sim.close();
}

main().catch((error) => (console.error(error), process.exit(1)));
