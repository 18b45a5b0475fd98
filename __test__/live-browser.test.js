'use strict';
// The live Kubernetes tab in a real browser: Debian's Chromium (driven by playwright-core, no
// browser download) opens a legacy Backstage app with the real EntityKubernetesContent, the
// real Signals client and kube-watch-native-live-frontend's LiveKubernetesApi, served from one
// origin that proxies /api/* (HTTP and WebSocket) to a real backend with the Kubernetes and
// Signals plugins and kube-watch-native-backstage, over a simulated cluster.
//
// A pod added, changed (its container crash-looping) and deleted in the simulator shows in the
// DOM within 1 s, through the module's own signal (the fetcher sees the informer's change) and
// one refetch; an idle tab sends no request to /api/kubernetes for 60 s but one per request at
// the liveness bound (`maxAgeMs`, 60 s after its answer); after the backend is
// stopped and started again, and after the laptop sleeps (Playwright's clock stops the page's
// timers and then jumps a minute, while its WebSocket dies silently), the tab is live again and
// shows the change made meanwhile. A screenshot is kept in __test__/output/. Runs on one
// Node.js line only (it takes ~90 s).

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { startCluster, startLiveBackend, bundle, pod } = require('../testbed/live-helpers');
const {
  browserSkip,
  openPage,
  tabOrigin,
  changeShows,
  goesQuiet,
  addChangeDelete,
  OUTPUT,
  LIVE_REFRESH_INTERVAL_MS,
} = require('./browser-helpers');

const IDLE_MS = 60_000;
/** The frontend's `maxAgeMs`: no answer is trusted longer. */
const { STALENESS_MS: LIVENESS_MS, HEARTBEAT_BOUND_MS } = require('kube-watch-native-protocol');

const skip = browserSkip('a real browser, ~90 s');

test(
  'the live tab: a pod added, changed and deleted shows within 1 s; an idle tab sends nothing; a backend restart comes back live',
  { skip, timeout: 180_000 },
  async (t) => {
    const started = Date.now();
    const sim = await startCluster(t);
    const backend = await startLiveBackend(sim);
    let backendStopped = false;
    t.after(() => backendStopped || backend.stop());
    const origin = await tabOrigin(t, backend.port);
    const { page, pageErrors, waitForText } = await openPage(t, {
      failedShot: 'live-tab-failed.png',
      consoleErrors: true,
    });
    const text = () => page.evaluate(() => document.body.innerText);

    // The page's clock, so that the test can put it to sleep; it runs as the real one until then.
    await page.clock.install();
    await page.goto(origin.url);
    await waitForText('1 pod', 20_000); // the cluster's summary: live-svc-1

    // Live: once a heartbeat proves its signals arrive (the first load's greeting, or the next
    // beat within 5 s when the greeting raced the tab's subscription), the tab refetches once and
    // then answers its polls from memory.
    await goesQuiet(t, { page, origin }, { idleMs: 10_000 });

    const live = changeShows(t, { origin, page, waitForText });

    await addChangeDelete(live, sim, 'live-svc-2');

    fs.mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT, 'live-tab.png'), fullPage: true });

    // Idle: no request to /api/kubernetes but the liveness bound's, each request once when its
    // answer is `maxAgeMs` (60 s) old, never sooner.
    const idleFrom = origin.kubernetesRequests.length;
    await page.waitForTimeout(IDLE_MS);
    const before = origin.kubernetesRequests.slice(0, idleFrom);
    const idle = origin.kubernetesRequests.slice(idleFrom);
    for (const request of idle) {
      const last = before.findLast((r) => r.url === request.url);
      assert.ok(last, `an idle tab asked for something new: ${request.url}`);
      assert.ok(
        request.at - last.at >= LIVENESS_MS - 1000,
        `an idle tab asked again for ${request.url} ${request.at - last.at} ms after its answer`,
      );
      assert.equal(idle.filter((r) => r.url === request.url).length, 1, `${request.url} once`);
    }
    t.diagnostic(`idle ${IDLE_MS} ms: ${idle.length} request(s), at the liveness bound`);

    // The backend goes away; a pod is added meanwhile; a new backend comes up: the tab refetches
    // once its signals connection is back, shows the pod, and is live again.
    await backend.stop();
    backendStopped = true;
    sim.create('pods', pod('live-svc-4', 'live-svc'));
    const restarted = await startLiveBackend(sim);
    t.after(() => restarted.stop());
    origin.setBackend(restarted.port);
    const downAt = Date.now();
    await waitForText('2 pods\nNo pods with errors', 30_000);
    t.diagnostic(`after the restart, the change made while down showed in ${Date.now() - downAt} ms`);
    // The new backend's informers sync after its first load (answered live meanwhile), and that
    // is a change of the answer too: one more refetch. Then the tab is quiet again.
    await goesQuiet(t, { page, origin }, { stepMs: 1500, maxSteps: 10, when: ' after the restart' });
    await live(
      'a pod deleted after the restart',
      () => sim.remove('pods', 'default', 'live-svc-4'),
      '1 pod\nNo pods with errors',
    );

    // The WebSocket dies without a word (the backend's end is gone; the browser is told nothing,
    // and the signals client keeps it): no heartbeat reaches the tab, which then polls the network
    // as the stock tab does, through the public signals API alone. A pod added at that moment
    // shows within the heartbeat's bound and a poll.
    origin.silenceWebSockets();
    const silencedAt = Date.now();
    sim.create('pods', pod('live-svc-5', 'live-svc'));
    await waitForText('2 pods\nNo pods with errors', HEARTBEAT_BOUND_MS + 5000);
    const polledAfter = Date.now() - silencedAt;
    t.diagnostic(
      `WebSocket dead: the change made then showed in ${polledAfter} ms (bound ${HEARTBEAT_BOUND_MS} ms + a poll)`,
    );
    assert.ok(polledAfter <= HEARTBEAT_BOUND_MS + 2000, `shown ${polledAfter} ms after`);
    // Polling, never more often than the stock tab (one request per request per 9 s).
    const pollFrom = origin.kubernetesRequests.length;
    await page.waitForTimeout(20_000);
    const polls = origin.kubernetesRequests.slice(pollFrom);
    for (const url of new Set(polls.map((r) => r.url))) {
      const n = polls.filter((r) => r.url === url).length;
      assert.ok(n >= 1 && n <= 3, `${url}: ${n} requests in 20 s while not live`);
    }
    t.diagnostic(
      `not live for 20 s: ${polls.length} request(s) (refreshIntervalMs ${LIVE_REFRESH_INTERVAL_MS})`,
    );

    // The laptop sleeps: the page's timers stop, and a pod is deleted meanwhile. A minute later
    // it wakes (the clock jumps, and the timers due fire once): the tab refetches at once and
    // shows it.
    // A second ahead of the page's clock: the time of pauseAt must not have passed by the time
    // the call reaches the page (by 1 ms ahead, it once had, on a loaded machine).
    await page.clock.pauseAt(await page.evaluate(() => Date.now() + 1000));
    sim.remove('pods', 'default', 'live-svc-5');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.ok((await text()).includes('2 pods\nNo pods with errors'), 'asleep, the tab showed a change');
    const woke = Date.now();
    await page.clock.fastForward('01:00');
    await page.clock.resume();
    await waitForText('1 pod\nNo pods with errors', 5000);
    t.diagnostic(`after the sleep, the change made meanwhile showed in ${Date.now() - woke} ms`);
    assert.deepEqual(pageErrors, []);
    t.diagnostic(`test took ${Date.now() - started} ms`);
  },
);

test(
  "the new frontend system: live-frontend/alpha's module replaces the Kubernetes plugin's own API and entity content extensions, and adds the live logs",
  { skip, timeout: 60_000 },
  async (t) => {
    const files = await bundle('alpha-ids.mjs');
    const { page, pageErrors } = await openPage(t);
    await page.setContent('<!doctype html><html><body></body></html>');
    await page.addScriptTag({ content: Buffer.from(files['alpha-ids.js']).toString() });
    const ids = await page.evaluate(() => window.ALPHA_IDS);
    assert.deepEqual(pageErrors, []);
    assert.equal(ids.module.type, '@backstage/FrontendModule');
    assert.equal(ids.module.pluginId, ids.plugin.pluginId, 'a module of the Kubernetes plugin');
    assert.deepEqual(ids.module.extensions, [
      'api:kubernetes',
      'entity-content:kubernetes/kubernetes',
      'entity-content:kubernetes/live-logs',
    ]);
    // The plugin's own factory of kubernetesApiRef and its entity content have those ids, so the
    // module's replace them; the live logs are its own.
    for (const id of ids.module.extensions.slice(0, 2)) {
      assert.ok(
        ids.plugin.extensions.includes(id),
        `${id} among the plugin extensions: ${ids.plugin.extensions}`,
      );
    }
    assert.ok(!ids.plugin.extensions.includes('entity-content:kubernetes/live-logs'));
  },
);
