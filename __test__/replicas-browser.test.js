'use strict';
// The live tab in a real browser on two backend replicas: Debian's Chromium opens the page of
// testbed/fixtures/live-tab (the real EntityKubernetesContent, Signals client and
// kube-watch-native-live-frontend) whose /api/* goes through a round-robin balancer to two real
// backends (Kubernetes, Signals and events backends and kube-watch-native-backstage) on one
// PostgreSQL: the tab's loads alternate replicas, its WebSocket is on one of them. A pod added,
// changed and deleted shows within 1 s, and again after one replica restarts (SIGTERM, then up
// again). Runs on one Node.js line only; skipped without Chromium, and without PostgreSQL unless
// KUBE_WATCH_REQUIRE_PG=1 (.ci/run installs both).

const test = require('node:test');
const assert = require('node:assert/strict');
const { startCluster } = require('../testbed/live-helpers');
const { replicasFor } = require('../testbed/replica-helpers');
const { browserSkip, openPage, tabOrigin, changeShows, addChangeDelete } = require('./browser-helpers');

const skip = browserSkip('a real browser and two backends');

test(
  'the live tab on two replicas: changes show within 1 s with loads alternating replicas, and after one restarts',
  { skip, timeout: 180_000 },
  async (t) => {
    const sim = await startCluster(t);
    const cluster = await replicasFor(t, 2, sim);
    if (!cluster) return;
    const { balancer, replicas } = cluster;
    const origin = await tabOrigin(t, balancer.port);
    const { page, pageErrors, waitForText } = await openPage(t, { failedShot: 'replicas-tab-failed.png' });

    const live = changeShows(t, { origin, page, waitForText });

    await page.goto(origin.url);
    await waitForText('1 pod', 30_000);
    await page.waitForTimeout(3000); // the signals channel up: polls answered from memory

    await addChangeDelete(live, sim, 'live-svc-2');

    // Replica A restarts (a rolling restart's step): the tab is live again on whichever replica.
    const { ms } = await replicas[0].stop('SIGTERM');
    t.diagnostic(`A exited ${ms} ms after SIGTERM`);
    assert.ok(ms < 10_000, `A took ${ms} ms to exit`);
    await replicas[0].start();
    await page.waitForTimeout(6000); // a WebSocket that was on A comes back (resubscribed every 5 s)
    await addChangeDelete(live, sim, 'live-svc-3', ' after the restart');
    assert.deepEqual(pageErrors, []);
  },
);
