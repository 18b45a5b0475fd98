'use strict';
// An entity's live logs and events in a real browser (as __test__/live-browser.test.js does the
// live tab): the legacy app of fixtures/live-tab at /logs, kube-watch-native-live-frontend's
// EntityLiveLogsContent, over the real backend (Kubernetes, Signals and kube-watch-native-backstage,
// whose proxy log route answers from a shared native follow) and a simulated cluster.
//
// A line the container writes shows in the DOM within 1 s; after the network is lost and comes
// back, after the page's follow is cut, after the backend's is, and after the laptop sleeps, the
// log goes on with no line repeated and none lost (the LogViewer's whole text compared, each line
// unique); the picker switches container and
// shows a previous instance; a crash-looping pod's events show as they happen, asked again on
// the backend's signals (no request while nothing happens). Runs on one
// Node.js line only (it takes ~30 s).

const test = require('node:test');
const assert = require('node:assert/strict');
const { startCluster, startLiveBackend } = require('../testbed/live-helpers');
const fs = require('node:fs');
const path = require('node:path');
const { browserSkip, openPage, tabOrigin, OUTPUT } = require('./browser-helpers');

const skip = browserSkip('a real browser, ~30 s');

/** In the page: the text the LogViewer was given (it renders only the rows in view). */
function logViewerText() {
  const root = document.getElementById('root');
  const fibers = [root[Object.keys(root).find((k) => k.startsWith('__reactContainer$'))]];
  while (fibers.length) {
    const fiber = fibers.pop();
    if (typeof fiber.type === 'function' && fiber.type.name === 'RealLogViewer')
      return fiber.memoizedProps.text;
    if (fiber.sibling) fibers.push(fiber.sibling);
    if (fiber.child) fibers.push(fiber.child);
  }
  return null;
}

test(
  'live logs: a line shows within 1 s, resumes after a network loss, a cut follow and a sleep with none repeated or lost; the picker; a crash loop’s events as they happen',
  { skip, timeout: 120_000 },
  async (t) => {
    const started = Date.now();
    const sim = await startCluster(t);
    sim.patch('pods', 'default', 'live-svc-1', (p) => {
      p.spec.containers.push({ name: 'sidecar', image: 'example/sidecar:1' });
    });
    const write = (text, container = 'main') => sim.writeLog('default', 'live-svc-1', container, text);
    for (let i = 1; i <= 3; i++) write(`early-${i}`);
    write('side-1', 'sidecar');
    // The page goes first: a log it follows would hold the backend's server open.
    let page = null;
    t.after(() => page?.close());
    const backend = await startLiveBackend(sim);
    t.after(() => backend.stop());
    const origin = await tabOrigin(t, backend.port);
    const opened = await openPage(t, {
      failedShot: 'live-logs-failed.png',
      consoleErrors: true,
    });
    ({ page } = opened);
    const { pageErrors, waitForText } = opened;
    // The page's clock, so that the test can put it to sleep; it runs as the real one until then.
    await page.clock.install();
    const shown = async () => ((await page.evaluate(logViewerText)) ?? '').split('\n');
    const logRequests = () => origin.kubernetesRequests.filter((r) => r.url.includes('/log?'));

    await page.goto(`${origin.url}/logs`);
    await waitForText('live-svc-1 / sidecar', 20_000); // the picker lists every container
    await page.selectOption('select[aria-label="Container"]', { label: 'live-svc-1 / main' });
    await waitForText('early-3', 10_000);
    await waitForText('Following', 5000);
    t.diagnostic(`the log showed in ${Date.now() - started} ms`);

    // A line written shows in the DOM within 1 s.
    const expected = ['early-1', 'early-2', 'early-3'];
    const latencies = [];
    for (let i = 1; i <= 5; i++) {
      const line = `live-${i}`;
      const at = Date.now();
      write(line);
      await waitForText(line, 5000);
      latencies.push(Date.now() - at);
      expected.push(line);
      await page.waitForTimeout(100);
    }
    t.diagnostic(`line to DOM: ${latencies.join(', ')} ms`);
    for (const ms of latencies) assert.ok(ms < 1000, `a line showed ${ms} ms after it was written`);
    assert.deepEqual(await shown(), expected);

    // The network goes away and comes back (the page's `online` event: its read may be dead, so it
    // reads again from the last stamp's second, which the API server answers from that second's
    // start). Lines in that second before the last one, and three with the very same stamp, show
    // once each: the resumed read must drop the first, and exactly three at the stamp.
    const inSecond = () => Date.now() % 1000;
    while (inSecond() > 300) await new Promise((resolve) => setTimeout(resolve, 1000 - inSecond()));
    write('earlier-in-second');
    expected.push('earlier-in-second');
    const before = logRequests().length;
    const errorsBefore = pageErrors.length;
    await page.context().setOffline(true);
    const stamp = new Date(Date.now() + 5);
    for (let i = 1; i <= 3; i++) {
      const line = `offline-${i}`;
      sim.writeLog('default', 'live-svc-1', 'main', line, { time: stamp });
      expected.push(line);
    }
    await page.waitForTimeout(300);
    await page.context().setOffline(false);
    // The requests that failed meanwhile (the page's console says so), and nothing else.
    for (const error of pageErrors.splice(errorsBefore)) {
      assert.match(error, /^Failed to load resource: net::ERR_INTERNET_DISCONNECTED$/);
    }
    await waitForText('offline-3', 10_000);
    write('online-1');
    expected.push('online-1');
    await waitForText('online-1', 5000);
    const resumed = logRequests().slice(before);
    assert.ok(
      resumed.some((r) => r.url.includes('sinceTime=')),
      `resumed with sinceTime: ${resumed.map((r) => r.url)}`,
    );
    assert.deepEqual(await shown(), expected, 'after the network came back');

    // The page's connection is cut mid-follow (the network lost below the browser): it reads
    // again after a pause, from the last stamp's second; the lines written meanwhile show once.
    const requests = logRequests().length;
    const errorsBeforeCut = pageErrors.length;
    assert.equal(origin.cutResponses('/log?'), 1, 'one follow open');
    for (let i = 1; i <= 3; i++) {
      write(`while-cut-${i}`);
      expected.push(`while-cut-${i}`);
    }
    const cutAt = Date.now();
    await waitForText('while-cut-3', 10_000);
    t.diagnostic(
      `the page's follow cut: the lines written meanwhile in ${Date.now() - cutAt} ms, ${logRequests().length - requests} request(s)`,
    );
    assert.deepEqual(await shown(), expected, 'after the follow was cut');
    assert.deepEqual(pageErrors.splice(errorsBeforeCut), [
      'Failed to load resource: net::ERR_INCOMPLETE_CHUNKED_ENCODING',
    ]);

    // The backend's follow of the container is cut (cleanly, then abruptly): the same.
    for (const abrupt of [false, true]) {
      const requests = logRequests().length;
      sim.endLogFollows({ abrupt });
      const line = `cut-${abrupt ? 'abrupt' : 'clean'}`;
      write(line);
      expected.push(line);
      const at = Date.now();
      await waitForText(line, 10_000);
      t.diagnostic(
        `${abrupt ? 'dropped' : 'ended'} follow: the line after it in ${Date.now() - at} ms, ${logRequests().length - requests} request(s) of the page`,
      );
      assert.deepEqual(await shown(), expected, `after a ${abrupt ? 'dropped' : 'ended'} follow`);
    }

    // The laptop sleeps: the page's timers stop, and its follow dies without a word (the backend's
    // end closes, the browser's hears nothing more). Lines written meanwhile cannot show. A minute
    // later it wakes (the clock jumps, the timer that looks for sleeps fires late): the page reads
    // again from the last stamp's second, and the lines show once each.
    await page.clock.pauseAt(await page.evaluate(() => Date.now() + 1000));
    assert.equal(origin.silenceResponses('/log?'), 1, 'one follow open, silenced');
    for (let i = 1; i <= 3; i++) {
      write(`asleep-${i}`);
      expected.push(`asleep-${i}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.ok(!(await shown()).includes('asleep-1'), 'asleep, the dead follow showed nothing');
    const sleptRequests = logRequests().length;
    const woke = Date.now();
    await page.clock.fastForward('01:00');
    await page.clock.resume();
    await waitForText('asleep-3', 5000);
    t.diagnostic(
      `after the sleep, the lines written meanwhile in ${Date.now() - woke} ms, ${logRequests().length - sleptRequests} request(s)`,
    );
    assert.deepEqual(await shown(), expected, 'after the sleep');

    // The picker: another container, then the previous instance of one that restarted.
    await page.selectOption('select[aria-label="Container"]', { label: 'live-svc-1 / sidecar' });
    await waitForText('side-1', 5000);
    assert.deepEqual(await shown(), ['side-1']);
    write('side-2', 'sidecar');
    await waitForText('side-2', 5000);
    assert.deepEqual(await shown(), ['side-1', 'side-2']);
    await page.selectOption('select[aria-label="Container"]', { label: 'live-svc-1 / main' });
    await waitForText('online-1', 5000);
    assert.deepEqual(await shown(), expected, 'the container read again from its tail');

    // A crash loop: the container restarts; its previous instance holds what it wrote, and the
    // kubelet's BackOff event, counted up at each restart, shows as it happens.
    sim.restartContainer('default', 'live-svc-1', 'main');
    write('new-instance-1');
    await page.check('input[aria-label="Previous instance"]');
    await page.waitForFunction(
      () => document.querySelector('[data-log-state]')?.dataset.logState === 'ended',
    );
    await waitForText('online-1', 5000);
    assert.deepEqual(await shown(), expected, 'the previous instance');
    await page.uncheck('input[aria-label="Previous instance"]');
    await waitForText('new-instance-1', 5000);

    // Once the events' answers are live and the heartbeat proves the signals, they are asked
    // again only on a signal: nothing while nothing happens (polled, 3 s would be 3 requests).
    const eventRequests = () => origin.kubernetesRequests.filter((r) => r.url.includes('/events?')).length;
    for (let last = -1, steps = 0; last !== eventRequests(); steps++) {
      assert.ok(steps < 10, 'the events were still polled after 20 s');
      last = eventRequests();
      await page.waitForTimeout(2000);
    }
    const quiet = eventRequests();
    await page.waitForTimeout(3000);
    assert.equal(eventRequests() - quiet, 0, 'no events request in 3 s without a change');

    const eventLatencies = [];
    const beforeEvents = eventRequests();
    for (let count = 1; count <= 3; count++) {
      const at = Date.now();
      // The container crashes, the kubelet backs off and records (or counts again) its BackOff.
      sim.crashLoop('default', 'live-svc-1', 'main');
      await page.waitForFunction(
        (n) =>
          [...document.querySelectorAll('table[aria-label="Events"] tbody tr')].some(
            (row) =>
              row.innerText.includes('Back-off restarting failed container main') &&
              row.cells[3].innerText === String(n),
          ),
        count,
        { timeout: 5000, polling: 25 },
      );
      eventLatencies.push(Date.now() - at);
    }
    const asked = eventRequests() - beforeEvents;
    t.diagnostic(`event to DOM: ${eventLatencies.join(', ')} ms, ${asked} events requests (on signals)`);
    for (const ms of eventLatencies) assert.ok(ms < 1500, `an event showed ${ms} ms after it happened`);
    assert.ok(asked <= 6, `${asked} events requests for 3 events: one or two per signal`);

    assert.deepEqual(pageErrors, []);
    fs.mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT, 'live-logs.png'), fullPage: true });
    t.diagnostic(`test took ${Date.now() - started} ms`);
  },
);
