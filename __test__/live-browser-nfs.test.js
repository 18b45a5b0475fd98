'use strict';
// The live Kubernetes tab in the new frontend system, in a real browser (as
// __test__/live-browser.test.js does the legacy one): a create-app 0.9.2 app's packages/app
// (testbed/fixtures/nfs-app: createApp of @backstage/frontend-defaults with the catalog plugin,
// app.packages: all, the template's versions, Signals client 0.0.26 included), bundled by esbuild
// as backstage-cli bundles it (testbed/nfs-app.js), over the real backend of the legacy test
// (Kubernetes, Signals and kube-watch-native-backstage over a simulated cluster; its catalog read
// over HTTP; the app signs in as its mock user, there being no auth backend). Chromium opens the
// entity's Kubernetes tab.
//
// The app discovers kube-watch-native-live-frontend/alpha among its dependencies, and the tab it
// renders is the live module's (the Kubernetes plugin's Router asking every 500 ms), not the
// stock content on its 10 s timer: once live it sends no request to /api/kubernetes for 12 s, and
// a pod added, changed and deleted in the simulator shows in the DOM within 1 s; its logs tab
// (the module's `entity-content:kubernetes/live-logs`) shows a line as it is written. Runs on one
// Node.js line only (it takes ~45 s).

const test = require('node:test');
const assert = require('node:assert/strict');
const { startCluster, startLiveBackend, startOrigin } = require('../testbed/live-helpers');
const { bundleNfsApp } = require('../testbed/nfs-app');
const {
  browserSkip,
  openPage,
  changeShows,
  goesQuiet,
  addChangeDelete,
  LIVE_REFRESH_INTERVAL_MS,
} = require('./browser-helpers');

const IDLE_MS = 12_000;

const skip = browserSkip('a real browser, ~45 s');

/**
 * In the page: what app.packages: all handed to createApp (`name`, `export`, the default export's
 * type), and the Kubernetes tab React rendered: the refreshIntervalMs its KubernetesContent was
 * given (null when none, the stock 10 s) and the components above it, nearest first.
 */
function renderedTab() {
  const discovered = window['__@backstage/discovered__'].modules.map((m) => ({
    name: m.name,
    export: m.export ?? null,
    type: m.default?.$$type ?? null,
  }));
  const root = document.getElementById('root');
  const fibers = [root[Object.keys(root).find((k) => k.startsWith('__reactContainer$'))]];
  const name = (fiber) =>
    typeof fiber.type === 'function' ? (fiber.type.displayName ?? fiber.type.name) : null;
  while (fibers.length) {
    const fiber = fibers.pop();
    if (/^KubernetesContent\d*$/.test(name(fiber) ?? '')) {
      const above = [];
      for (let f = fiber.return; f && above.length < 3; f = f.return) if (name(f)) above.push(name(f));
      return { discovered, refreshIntervalMs: fiber.memoizedProps.refreshIntervalMs ?? null, above };
    }
    if (fiber.sibling) fibers.push(fiber.sibling);
    if (fiber.child) fibers.push(fiber.child);
  }
  return { discovered, refreshIntervalMs: null, above: null };
}

test(
  'the new frontend system: a create-app app discovers the live module; its tab shows a change within 1 s and sends nothing while idle',
  { skip, timeout: 120_000 },
  async (t) => {
    const started = Date.now();
    const app = await bundleNfsApp();
    t.diagnostic(`bundled in ${Date.now() - started} ms`);
    // What the template ships, one copy each.
    assert.deepEqual(app.versions['@backstage/plugin-signals-react'], ['0.0.26']);
    assert.deepEqual(app.versions['@backstage/frontend-plugin-api'], ['0.18.1']);
    assert.deepEqual(app.versions['@backstage/frontend-defaults'], ['0.5.6']);

    const sim = await startCluster(t);
    // The page goes first: a log it follows would hold the backend's server open.
    let closePage = null;
    t.after(() => closePage?.());
    const backend = await startLiveBackend(sim, { catalog: true });
    t.after(() => backend.stop());
    const origin = await startOrigin(app.files, backend.port, () => ({}));
    t.after(() => origin.close());
    const { page, pageErrors, waitForText } = await openPage(t, {
      failedShot: 'live-tab-nfs-failed.png',
      consoleErrors: true,
    });
    closePage = () => page.close();

    await page.goto(`${origin.url}/catalog/default/component/live-svc/kubernetes`);
    await waitForText('1 pod', 20_000); // the cluster's summary: live-svc-1
    t.diagnostic(`the tab showed in ${Date.now() - started} ms`);

    const tab = await page.evaluate(renderedTab);
    assert.deepEqual(
      tab.discovered.filter((m) => m.name === 'kube-watch-native-live-frontend'),
      [
        { name: 'kube-watch-native-live-frontend', export: null, type: null }, // no default export
        { name: 'kube-watch-native-live-frontend', export: './alpha', type: '@backstage/FrontendModule' },
      ],
    );
    assert.equal(
      tab.refreshIntervalMs,
      LIVE_REFRESH_INTERVAL_MS,
      `the tab is the live module's content, asking every ${LIVE_REFRESH_INTERVAL_MS} ms: ${JSON.stringify(tab)}`,
    );
    t.diagnostic(`the tab: KubernetesContent under ${tab.above.join(' < ')}`);

    await goesQuiet(t, { page, origin }, { idleMs: IDLE_MS });
    await addChangeDelete(changeShows(t, { origin, page, waitForText }), sim, 'live-svc-2');

    // The module's third extension: the entity's live logs, a line written shown as it comes.
    sim.writeLog('default', 'live-svc-1', 'main', 'before the logs tab');
    await page.goto(`${origin.url}/catalog/default/component/live-svc/kubernetes-logs`);
    await waitForText('before the logs tab', 20_000);
    const writtenAt = Date.now();
    sim.writeLog('default', 'live-svc-1', 'main', 'on the logs tab');
    await waitForText('on the logs tab', 5000);
    t.diagnostic(`the logs tab: a line to DOM in ${Date.now() - writtenAt} ms`);

    assert.deepEqual(pageErrors, []);
    t.diagnostic(`test took ${Date.now() - started} ms`);
  },
);
