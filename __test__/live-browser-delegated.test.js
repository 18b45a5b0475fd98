'use strict';
// The live tab in a real browser (as __test__/live-browser.test.js) for an entity whose answer
// the backend hands to the default fetcher: its selector has only negative requirements
// (`tier!=db`), so no informer follows it and no signal will ever come. Its answers carry no
// x-kube-watch-live mark, so the tab polls them as the stock client does: a pod added while
// the signals WebSocket is open shows at the next poll of the stock 10 s interval, not after
// maxAgeMs (60 s). Runs on one Node.js line only.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startCluster, startLiveBackend, delegatedEntity, pod } = require('../testbed/live-helpers');
const { browserSkip, openPage, tabOrigin } = require('./browser-helpers');

const REFRESH_INTERVAL_MS = 10_000; // the stock default

const skip = browserSkip('a real browser');

const DELEGATED_SVC = delegatedEntity('delegated-svc');

test(
  'a delegated entity (selector tier!=db) shows a new pod within the stock 10 s interval while the signals WebSocket is open',
  { skip, timeout: 90_000 },
  async (t) => {
    const sim = await startCluster(t); // live-svc-1 and other-svc-1: neither has a tier label
    const backend = await startLiveBackend(sim, { entities: [DELEGATED_SVC] });
    t.after(() => backend.stop());
    const origin = await tabOrigin(t, backend.port, {
      entity: DELEGATED_SVC,
      refreshIntervalMs: REFRESH_INTERVAL_MS,
    });
    const { page, pageErrors, waitForText } = await openPage(t, {
      failedShot: 'live-tab-delegated-failed.png',
    });
    const sockets = [];
    page.on('websocket', (ws) => {
      const socket = { url: ws.url(), open: true, subscribed: false };
      sockets.push(socket);
      ws.on('framesent', ({ payload }) => {
        if (String(payload).includes('kubernetes:component:default/delegated-svc')) socket.subscribed = true;
      });
      ws.on('close', () => (socket.open = false));
    });
    // The page's clock, so that the next poll can be brought forward; it runs as the real one.
    await page.clock.install();
    await page.goto(origin.url);
    await waitForText('2 pods', 20_000);
    for (let i = 0; !sockets.some((s) => s.open && s.subscribed && s.url.includes('/api/signals')); i++) {
      assert.ok(i < 100, `no subscribed signals WebSocket: ${JSON.stringify(sockets)}`);
      await page.waitForTimeout(50);
    }
    // A poll answered while the channel is subscribed on an open WebSocket: a live answer would
    // now be kept and served from memory until a signal.
    const polled = page.waitForResponse((r) => r.url().includes('/api/kubernetes/services/'));
    await page.clock.fastForward(REFRESH_INTERVAL_MS);
    const answer = await polled;
    assert.equal(answer.status(), 200);
    assert.equal(
      await answer.headerValue('x-kube-watch-live'),
      null,
      'a delegated answer is not marked live',
    );

    const changedAt = Date.now();
    const added = pod('delegated-2', 'unused');
    added.metadata.labels = { tier: 'web' };
    sim.create('pods', added);
    await waitForText('3 pods', REFRESH_INTERVAL_MS + 1500);
    const latency = Date.now() - changedAt;
    t.diagnostic(`a pod added: shown ${latency} ms after the change`);
    assert.ok(
      sockets.some((s) => s.open && s.url.includes('/api/signals')),
      'the signals WebSocket was open throughout',
    );
    assert.deepEqual(pageErrors, []);
  },
);
