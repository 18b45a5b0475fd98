'use strict';
// Events: the five types, their shape and resourceVersion, order, and completeness whatever
// the chunking (byte by byte, split UTF-8, CRLF, last line without newline, many per chunk,
// multi-megabyte objects, gzip).

const test = require('node:test');
const assert = require('node:assert/strict');
const { createSimulator } = require('../packages/kube-watch-native/sim');
const { paramsFor, collect, watcherWithLogger, pod, TOKEN } = require('./helpers');

let sim;
test.before(async () => {
  sim = await createSimulator({ token: TOKEN, bookmarkIntervalMs: 100 });
});
test.after(() => sim.close());
test.afterEach(() => sim.setFault(null));

const names = (events) => events.map((e) => `${e.type} ${e.object?.metadata?.name ?? '-'}`);

test('ADDED, MODIFIED and DELETED arrive in order with the shape of the contract', async () => {
  const { watcher } = watcherWithLogger();
  const ns = 'order';
  sim.create('pods', pod('a', { namespace: ns }));
  const controller = new AbortController();
  const gen = watcher.watchResource(paramsFor(sim), { namespace: ns, signal: controller.signal });
  const first = await gen.next();
  assert.equal(first.value.type, 'ADDED');
  sim.patch('pods', ns, 'a', (p) => {
    p.status = { phase: 'Running' };
  });
  sim.create('pods', pod('b', { namespace: ns }));
  sim.remove('pods', ns, 'a');
  const rest = await collect(gen, { count: 3 });
  const events = [first.value, ...rest];
  assert.deepEqual(names(events), ['ADDED a', 'MODIFIED a', 'ADDED b', 'DELETED a']);
  for (const event of events) {
    assert.deepEqual(Object.keys(event).sort(), ['object', 'resourceVersion', 'type']);
    assert.equal(event.resourceVersion, event.object.metadata.resourceVersion);
    assert.equal(typeof event.resourceVersion, 'string');
  }
  const versions = events.map((e) => Number(e.resourceVersion));
  assert.deepEqual(
    versions,
    [...versions].sort((x, y) => x - y),
    'resourceVersions increase',
  );
  assert.equal(events[1].object.status.phase, 'Running');
});

test('BOOKMARK events carry the resourceVersion; initial events end with the annotated bookmark', async () => {
  const { watcher } = watcherWithLogger();
  const ns = 'bookmarks';
  sim.create('pods', pod('x', { namespace: ns }));
  sim.create('pods', pod('y', { namespace: ns }));
  const gen = watcher.watchResource(paramsFor(sim), {
    namespace: ns,
    allowWatchBookmarks: true,
    sendInitialEvents: true,
    resourceVersionMatch: 'NotOlderThan',
  });
  const events = await collect(gen, { count: 4 });
  assert.deepEqual(names(events.slice(0, 2)).sort(), ['ADDED x', 'ADDED y']);
  const end = events[2];
  assert.equal(end.type, 'BOOKMARK');
  assert.equal(end.object.metadata.annotations['k8s.io/initial-events-end'], 'true');
  assert.equal(end.resourceVersion, end.object.metadata.resourceVersion);
  const periodic = events[3];
  assert.equal(periodic.type, 'BOOKMARK');
  assert.match(periodic.resourceVersion, /^\d+$/);
});

async function watchWithFault(fault, options = {}) {
  sim.nextWatchFault(fault);
  const { watcher, logger } = watcherWithLogger();
  const events = await collect(watcher.watchResource(paramsFor(sim), { namespace: 'chunks', ...options }));
  return { events, logger };
}

const line = (type, name, rv, extra = {}) =>
  JSON.stringify({
    type,
    object: { kind: 'Pod', metadata: { name, resourceVersion: String(rv) }, ...extra },
  });

test('byte-by-byte writes with multi-byte UTF-8 split across chunks yield whole events', async () => {
  const fancy = 'café-☕-𝄞-日本';
  const { events, logger } = await watchWithFault({
    writeMode: 'byte',
    rawLines: [line('ADDED', fancy, 1, { data: { note: 'ünïcödé ✓' } }), line('MODIFIED', fancy, 2)],
    then: 'end',
  });
  assert.deepEqual(names(events), [`ADDED ${fancy}`, `MODIFIED ${fancy}`]);
  assert.equal(events[0].object.data.note, 'ünïcödé ✓');
  assert.deepEqual(logger.warnings(), []);
});

test('CRLF endings, empty lines and a last line without newline', async () => {
  const { events, logger } = await watchWithFault({
    lineEnding: '\r\n',
    rawLines: [line('ADDED', 'a', 1), '', '   ', line('DELETED', 'a', 2), line('ADDED', 'last', 3)],
    noNewlineAfterLast: true,
    then: 'end',
  });
  assert.deepEqual(names(events), ['ADDED a', 'DELETED a', 'ADDED last']);
  assert.deepEqual(logger.warnings(), [], 'blank lines are skipped silently');
});

test('many events in one chunk, and events split at arbitrary points', async () => {
  const lines = Array.from({ length: 300 }, (_, i) => line('ADDED', `p${i}`, i + 1));
  const coalesced = await watchWithFault({ writeMode: 'coalesce', rawLines: lines, then: 'end' });
  assert.deepEqual(
    coalesced.events.map((e) => e.object.metadata.name),
    lines.map((_, i) => `p${i}`),
  );
  const split = await watchWithFault({
    writeMode: 'split',
    splitAt: 7,
    rawLines: lines.slice(0, 50),
    then: 'end',
  });
  assert.deepEqual(
    split.events.map((e) => e.resourceVersion),
    lines.slice(0, 50).map((_, i) => String(i + 1)),
  );
});

test('multi-megabyte objects arrive intact', async () => {
  const big = 'x'.repeat(3 * 1024 * 1024);
  const { events } = await watchWithFault({
    rawLines: [line('ADDED', 'big', 1, { data: { big } }), line('ADDED', 'after', 2)],
    then: 'end',
  });
  assert.deepEqual(names(events), ['ADDED big', 'ADDED after']);
  assert.equal(events[0].object.data.big.length, big.length);
  assert.equal(events[0].object.data.big, big);
});

test('long batches cross intact whether pure ASCII or not', async () => {
  // An ASCII batch crosses as a one-byte string; a single other byte makes the batch UTF-8.
  const ascii = 'a'.repeat(40 * 1024);
  const accented = 'é€𝄞'.repeat(10 * 1024);
  const { events } = await watchWithFault({
    rawLines: [
      line('ADDED', 'ascii', 1, { data: { ascii } }),
      line('ADDED', 'utf8', 2, { data: { accented } }),
      line('ADDED', 'ascii-again', 3, { data: { ascii } }),
    ],
    then: 'end',
  });
  assert.deepEqual(names(events), ['ADDED ascii', 'ADDED utf8', 'ADDED ascii-again']);
  assert.equal(events[0].object.data.ascii, ascii);
  assert.equal(events[1].object.data.accented, accented);
  assert.equal(events[2].object.data.ascii, ascii);
});

test('types Kubernetes may add later pass through unchanged', async () => {
  const { events } = await watchWithFault({ rawLines: [line('SOMETHING_NEW', 'n', 9)], then: 'end' });
  assert.deepEqual(events, [
    {
      type: 'SOMETHING_NEW',
      object: { kind: 'Pod', metadata: { name: 'n', resourceVersion: '9' } },
      resourceVersion: '9',
    },
  ]);
});

test('gzip-encoded watch bodies are decoded', async () => {
  sim.create('pods', pod('gz', { namespace: 'gzip' }));
  sim.nextWatchFault({ gzip: true });
  const { watcher } = watcherWithLogger();
  const gen = watcher.watchResource(paramsFor(sim), { namespace: 'gzip' });
  const events = await collect(gen, { count: 1 });
  assert.deepEqual(names(events), ['ADDED gz']);
  const request = sim.requests.filter((r) => r.path === '/api/v1/namespaces/gzip/pods').at(-1);
  assert.match(request.headers['accept-encoding'] ?? '', /gzip/);
});
