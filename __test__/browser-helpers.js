'use strict';
// The browser tests' page: Debian's Chromium through playwright-core (no browser download), one
// page, its errors collected, a wait for text that says what the page showed when it fails, and
// the changes of a pod the tab must show.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { bundle, startOrigin, pod, LIVE_SVC } = require('../testbed/live-helpers');

const CHROMIUM = '/usr/bin/chromium';
const OUTPUT = path.join(__dirname, 'output');
/** The one Node.js line the browser tests run on: they are slow, and what they check is not Node's. */
const NODE_LINE = 20;
/** The live tabs' refreshIntervalMs (their polls are answered from memory once live). */
const LIVE_REFRESH_INTERVAL_MS = 500;

/** Why a browser test is skipped here (`what` says what it runs), or false: on NODE_LINE with Chromium. */
function browserSkip(what) {
  if (Number(process.versions.node.split('.')[0]) !== NODE_LINE) {
    return `runs on Node.js ${NODE_LINE} only (${what}); this is ${process.version}`;
  }
  return fs.existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent (.ci/run installs Debian's chromium)`;
}

/**
 * A page of a new Chromium, closed with test `t`: `{ page, pageErrors, waitForText }`; the page's
 * uncaught errors are collected, and with `consoleErrors` its console's errors too.
 * `waitForText(needle, ms)` waits for `needle` in the page's text; on a timeout it keeps a
 * screenshot as `__test__/output/<failedShot>` and throws with the page's text and errors.
 */
async function openPage(t, { failedShot = 'browser-failed.png', consoleErrors = false } = {}) {
  const { chromium } = require('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  t.after(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const pageErrors = [];
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  if (consoleErrors) {
    page.on('console', (message) => message.type() === 'error' && pageErrors.push(message.text()));
  }
  async function waitForText(needle, timeout) {
    try {
      await page.waitForFunction((n) => document.body.innerText.includes(n), needle, {
        timeout,
        polling: 25,
      });
    } catch (error) {
      fs.mkdirSync(OUTPUT, { recursive: true });
      await page.screenshot({ path: path.join(OUTPUT, failedShot), fullPage: true });
      const shown = (await page.evaluate(() => document.body.innerText)).slice(0, 2000);
      throw new Error(
        `${needle} not shown in ${timeout} ms: ${error.message}\npage: ${shown}\nerrors: ${pageErrors.join('\n')}`,
      );
    }
  }
  return { page, pageErrors, waitForText };
}

/**
 * The origin (startOrigin) of a tab showing `entity`, polling every `refreshIntervalMs`, its /api/*
 * proxied to the backend on `backendPort`; closed when test `t` ends.
 */
async function tabOrigin(
  t,
  backendPort,
  { entity = LIVE_SVC, refreshIntervalMs = LIVE_REFRESH_INTERVAL_MS } = {},
) {
  const origin = await startOrigin(await bundle(), backendPort, () => ({ entity, refreshIntervalMs }));
  t.after(() => origin.close());
  return origin;
}

/**
 * `live(what, change, needle)`: makes `change` in the cluster, waits for `needle` in the page and
 * asserts that it showed within 1 s, through one refetch (a request to /api/kubernetes, or two
 * when the tab also asked for the clusters); returns the change-to-DOM ms.
 */
function changeShows(t, { origin, page, waitForText }) {
  return async function live(what, change, needle) {
    const before = origin.kubernetesRequests.length;
    const changedAt = Date.now();
    change();
    await waitForText(needle, 5000);
    const latency = Date.now() - changedAt;
    t.diagnostic(`${what}: change to DOM in ${latency} ms`);
    assert.ok(latency <= 1000, `${what} showed ${latency} ms after the change`);
    await page.waitForTimeout(600);
    const refetches = origin.kubernetesRequests.slice(before);
    assert.ok(
      refetches.length >= 1 && refetches.length <= 2,
      `${what}: ${refetches.map((r) => r.url).join(', ')}: one refetch per signal`,
    );
    return latency;
  };
}

/**
 * Waits, in steps of `stepMs` (at most `maxSteps`), for a step in which the tab sends nothing to
 * /api/kubernetes (once live, it answers its polls from memory); then, with `idleMs`, asserts
 * that it sends nothing for that long either: live, not merely between polls (a tab not live asks
 * again within the stock 10 s). `when` ends the messages. Returns how long it took to go quiet.
 */
async function goesQuiet(t, { page, origin }, { idleMs = 0, stepMs = 2000, maxSteps = 6, when = '' } = {}) {
  const from = Date.now();
  for (let last = -1, steps = 0; last !== origin.kubernetesRequests.length; steps++) {
    assert.ok(steps < maxSteps, `the tab never went quiet${when} (still polling the network once live)`);
    last = origin.kubernetesRequests.length;
    await page.waitForTimeout(stepMs);
  }
  const quietMs = Date.now() - from;
  t.diagnostic(`quiet${when} in ${quietMs} ms (the last ${stepMs} ms without a request)`);
  if (idleMs) {
    const quiet = origin.kubernetesRequests.slice();
    await page.waitForTimeout(idleMs);
    const idle = origin.kubernetesRequests.slice(quiet.length);
    assert.deepEqual(idle, [], `the tab still polls the network once live${when}`);
    t.diagnostic(`idle${when} ${idleMs} ms: 0 requests to /api/kubernetes`);
  }
  return quietMs;
}

/** A pod's container crash-looping (a `sim.patch` change): the tab counts it as a pod with errors. */
const crashLooping = (p) => {
  p.status.containerStatuses = [
    {
      name: 'main',
      ready: false,
      restartCount: 7,
      state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off restarting' } },
    },
  ];
};

/**
 * Through `live` (changeShows), a second pod `name` of live-svc added to `sim`, crash-looping, then
 * deleted: each shows within 1 s. `when` ends the steps' names.
 */
async function addChangeDelete(live, sim, name, when = '') {
  await live(
    `a pod added${when}`,
    () => sim.create('pods', pod(name, 'live-svc')),
    '2 pods\nNo pods with errors',
  );
  await live(
    `a pod changed${when}`,
    () => sim.patch('pods', 'default', name, crashLooping),
    '2 pods\n1 pod with errors',
  );
  await live(`a pod deleted${when}`, () => sim.remove('pods', 'default', name), '1 pod\nNo pods with errors');
}

module.exports = {
  LIVE_REFRESH_INTERVAL_MS,
  browserSkip,
  openPage,
  tabOrigin,
  changeShows,
  goesQuiet,
  addChangeDelete,
  CHROMIUM,
  OUTPUT,
};
