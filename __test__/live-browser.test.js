'use strict';
// The live Kubernetes tab in a real browser: Debian's Chromium (driven by playwright-core, no
// browser download) opens a legacy Backstage app with the real EntityKubernetesContent, the
// real Signals client and kube-watch-native/live-frontend's LiveKubernetesApi, served from one
// origin that proxies /api/* (HTTP and WebSocket) to a real backend with the Kubernetes and
// Signals plugins and kube-watch-native/backstage, over a simulated cluster.
//
// Until the fetcher publishes changes itself, the test publishes the signal as the module will
// (the Kubernetes plugin's signals service, to the user who loaded the entity) and checks that
// the tab refetches once and shows the new pod within 1 s; that an idle tab sends no request to
// /api/kubernetes for IDLE_MS (15 s here; the issue's 60 s is the same check, longer); and it
// keeps a screenshot in __test__/output/. Runs on one Node.js line only (it takes ~30 s).

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const { startCluster, startLiveBackend, LIVE_SVC, pod } = require('./live-helpers');

const CHROMIUM = '/usr/bin/chromium';
const NODE_LINE = 20;
const IDLE_MS = 15_000;
const REFRESH_INTERVAL_MS = 500;
const OUTPUT = path.join(__dirname, 'output');

const skip =
  Number(process.versions.node.split('.')[0]) !== NODE_LINE
    ? `runs on Node.js ${NODE_LINE} only (a real browser, ~30 s); this is ${process.version}`
    : !fs.existsSync(CHROMIUM)
      ? `${CHROMIUM} is absent (.ci/run installs Debian's chromium)`
      : false;

/** The page bundle: app.jsx with React, Backstage's app and the Kubernetes and Signals plugins. */
async function bundle() {
  const esbuild = require('esbuild');
  const result = await esbuild.build({
    entryPoints: [path.join(__dirname, 'fixtures', 'live-tab', 'app.jsx')],
    bundle: true,
    write: false,
    outdir: '/bundle',
    format: 'iife',
    jsx: 'automatic',
    // Backstage's frontend packages expect a bundler's `global` and `process.env`.
    define: { global: 'globalThis', 'process.env.NODE_ENV': '"production"' },
    banner: { js: 'globalThis.process = globalThis.process || { env: {} };' },
    loader: {
      '.svg': 'dataurl',
      '.png': 'dataurl',
      '.woff': 'dataurl',
      '.woff2': 'dataurl',
      '.ttf': 'dataurl',
    },
    logLevel: 'error',
  });
  return Object.fromEntries(result.outputFiles.map((f) => [path.basename(f.path), f.contents]));
}

/**
 * The page's origin: the page and its bundle, and /api/* proxied to the backend (WebSocket
 * upgrades too), counting the requests to /api/kubernetes.
 */
async function startOrigin(files, backendPort) {
  const kubernetesRequests = [];
  const page = `<!doctype html><html><head><meta charset="utf-8"><link rel="stylesheet" href="/app.css">
<script>window.LIVE_TAB = ${JSON.stringify({ entity: LIVE_SVC, refreshIntervalMs: REFRESH_INTERVAL_MS })};</script>
</head><body><div id="root"></div><script src="/app.js"></script></body></html>`;
  const server = http.createServer((req, res) => {
    if (req.url.startsWith('/api/')) {
      if (req.url.startsWith('/api/kubernetes')) kubernetesRequests.push({ at: Date.now(), url: req.url });
      const upstream = http.request(
        { host: '127.0.0.1', port: backendPort, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
      return;
    }
    const name = req.url.slice(1);
    if (files[name]) {
      res.writeHead(200, { 'content-type': name.endsWith('.css') ? 'text/css' : 'text/javascript' });
      return res.end(files[name]);
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(page);
  });
  // A WebSocket upgrade is passed through as bytes, head and all.
  server.on('upgrade', (req, socket, head) => {
    const upstream = net.connect(backendPort, '127.0.0.1', () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2)
        lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    kubernetesRequests,
    close: () => {
      server.closeAllConnections?.();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

test(
  'the live tab: a signal brings a new pod within 1 s, an idle tab sends nothing',
  { skip, timeout: 90_000 },
  async (t) => {
    const started = Date.now();
    const { chromium } = require('playwright-core');
    const sim = await startCluster();
    t.after(() => sim.close?.());
    const backend = await startLiveBackend(sim);
    t.after(() => backend.stop());
    const origin = await startOrigin(await bundle(), backend.port);
    t.after(() => origin.close());
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox'],
    });
    t.after(() => browser.close());
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const pageErrors = [];
    page.on('pageerror', (error) => pageErrors.push(String(error)));

    page.on('console', (message) => message.type() === 'error' && pageErrors.push(message.text()));
    const text = () => page.evaluate(() => document.body.innerText);
    /** Waits for `needle` in the page's text; on a timeout, says what the page showed. */
    async function waitForText(needle, timeout) {
      try {
        await page.waitForFunction((n) => document.body.innerText.includes(n), needle, {
          timeout,
          polling: 25,
        });
      } catch (error) {
        fs.mkdirSync(OUTPUT, { recursive: true });
        await page.screenshot({ path: path.join(OUTPUT, 'live-tab-failed.png'), fullPage: true });
        const shown = (await text()).slice(0, 2000);
        throw new Error(
          `${needle} not shown in ${timeout} ms: ${error.message}\npage: ${shown}\nerrors: ${pageErrors.join('\n')}`,
        );
      }
    }

    await page.goto(origin.url);
    await waitForText('1 pod', 20_000); // the cluster's summary: live-svc-1

    // Live: once the signals channel is up, polls are answered from memory.
    await page.waitForTimeout(3000);
    const settled = origin.kubernetesRequests.length;
    await page.waitForTimeout(1500);
    assert.equal(origin.kubernetesRequests.length, settled, 'the tab still polls the network once live');

    // A pod the tab does not know of yet: memory does not have it until a signal.
    sim.create('pods', pod('live-svc-2', 'live-svc'));
    await page.waitForTimeout(1000); // the informer has it; the tab, polling memory, does not
    assert.ok(!(await text()).includes('2 pods'), 'served from memory: no new pod before a signal');

    const before = origin.kubernetesRequests.length;
    const signalledAt = Date.now();
    await backend.signals.publish({
      recipients: { type: 'user', entityRef: 'user:default/mock' },
      channel: 'kubernetes:component:default/live-svc',
      message: { clusters: ['sim'], at: signalledAt },
    });
    await waitForText('2 pods', 5000);
    const latency = Date.now() - signalledAt;
    t.diagnostic(`signal to DOM: ${latency} ms`);
    assert.ok(latency <= 1000, `the new pod showed ${latency} ms after the signal`);
    await page.waitForTimeout(1000);
    const refetches = origin.kubernetesRequests.slice(before);
    assert.ok(
      refetches.length >= 1 && refetches.length <= 2,
      `${refetches.map((r) => r.url)}: one refetch per signal`,
    );

    fs.mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT, 'live-tab.png'), fullPage: true });

    // Idle: no request to /api/kubernetes at all.
    const idleFrom = origin.kubernetesRequests.length;
    await page.waitForTimeout(IDLE_MS);
    const idle = origin.kubernetesRequests.slice(idleFrom);
    assert.deepEqual(idle, [], `an idle tab sent ${idle.length} requests in ${IDLE_MS} ms`);
    assert.deepEqual(pageErrors, []);
    t.diagnostic(`test took ${Date.now() - started} ms`);
  },
);
