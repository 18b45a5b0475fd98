'use strict';
// The informer's bound on a list page (issue 20): a page larger than `pageSize` objects can take
// (sent fast, or trickled in pieces that each arrive inside the idle timeout) ends the list with
// one ERROR and a warning naming the bound, and the list is tried again after a backoff — the
// process never holds more than the bound of it.

const test = require('node:test');
const assert = require('node:assert/strict');
const { sim, syncedInformer, cm, requestsOf, isList } = require('./informer-helpers');
const { until } = require('../testbed/wait');

// pageSize 1: 1 object of at most 2 MiB, and 1 MiB for the page itself.
const BOUND = 3 << 20;

async function hugePageThenRetry(t, page, options = {}, simOptions = {}) {
  const s = await sim(t, { token: 'tok', ...simOptions });
  s.create('configmaps', cm('a'));
  const pages = [];
  s.on('hugePage', (p) => pages.push(p));
  s.hugePageNext(page);
  const { log, informer, c } = await syncedInformer(t, s, {
    initialList: 'paginated',
    pageSize: 1,
    backoff: { initialSeconds: 0.05, maxSeconds: 0.1 },
    ...options,
  });
  await until(() => c.synced === 1, { what: 'the consumer to take SYNCED' });
  assert.deepEqual(
    c.errors.map((e) => [e.error.errorType, e.error.statusCode, e.retrying]),
    [['SYSTEM_ERROR', 0, true]],
    'one retrying ERROR for the dropped list',
  );
  assert.deepEqual([...c.view.keys()], ['default/a'], "none of the huge page's objects were cached");
  const warnings = log.warn.filter((m) => /list page went past/.test(m));
  assert.equal(warnings.length, 1, `one warning: ${JSON.stringify(log.warn)}`);
  assert.match(warnings[0], new RegExp(`went past ${BOUND} bytes \\(3 MiB\\)`), 'it names the bound');
  assert.match(warnings[0], /retrying in/);
  assert.equal(requestsOf(s).filter(isList).length, 2, 'the list was asked for again, once');
  await until(() => pages.length === 1, { what: 'the simulator to stop sending' });
  assert.equal(pages[0].complete, false, 'the informer hung up before the page ended');
  return { log, sent: pages[0].sent };
}

test('a list page past the bound for pageSize objects ends the list with an ERROR naming the size; the list is retried', async (t) => {
  const { sent } = await hugePageThenRetry(t, { pageBytes: 256 << 20 });
  // What the socket buffers took beyond the bound is the kernel's, not the process's.
  assert.ok(sent < 64 << 20, `the informer stopped reading near the bound (${sent} bytes sent)`);
});

test('a list page trickled in pieces, each inside the idle timeout, meets the same bound', async (t) => {
  const { log } = await hugePageThenRetry(
    t,
    { pageBytes: 64 << 20, pieceBytes: 256 << 10, everyMs: 50 },
    { idleTimeoutSeconds: 1 },
  );
  assert.ok(!log.warn.some((m) => /idle timeout/.test(m)), 'no piece came later than the idle timeout');
});

test("initialList 'auto' on a server without streaming lists: the pages it falls back to meet the same bound", async (t) => {
  const { log } = await hugePageThenRetry(
    t,
    { pageBytes: 256 << 20, pieceBytes: 1 << 20 },
    { initialList: 'auto' },
    { sendInitialEvents: false },
  );
  assert.ok(
    log.info.some((m) => /streaming lists are not served/.test(m)),
    `fell back to pages: ${JSON.stringify(log.info)}`,
  );
});
