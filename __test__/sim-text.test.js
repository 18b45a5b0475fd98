'use strict';

// The simulator's cached texts (sim/text.js) and what is served from them: list items and event
// lines must be byte for byte what serialising the object would give, whichever path (bulk
// load, create, corked writes of the initial events, one write per event) they took.

const test = require('node:test');
const assert = require('node:assert/strict');
const { Store } = require('../packages/kube-watch-native/sim/store');
const { addedLine, eventLineOf, itemBody, textBytes } = require('../packages/kube-watch-native/sim/text');
const { watchRequest, rawGet } = require('../packages/kube-watch-native/sim/client');
const { certs } = require('../packages/kube-watch-native/sim');
const { pod, sim, get } = require('./sim-helpers');

test('cached texts are the objects’ JSON: event lines by type, list items without kind and apiVersion', () => {
  const store = new Store();
  const stored = store.load('pods', [pod('b', { app: 'ü ✓' }), pod('a')]);
  stored.push(store.update('pods', { ...store.get('pods', 'default', 'a'), spec: { nodeName: 'n1' } }));
  for (const obj of store.snapshot('pods')) {
    const json = JSON.stringify(obj);
    const { kind: _k, apiVersion: _a, ...rest } = obj;
    assert.equal(addedLine(obj).toString(), `{"type":"ADDED","object":${json}}\n`);
    assert.equal(eventLineOf('MODIFIED', obj).toString(), `{"type":"MODIFIED","object":${json}}\n`);
    assert.equal(eventLineOf('DELETED', obj).toString(), `{"type":"DELETED","object":${json}}\n`);
    assert.equal(`{${itemBody(obj)}`, JSON.stringify(rest));
    assert.equal(textBytes(obj), Buffer.byteLength(json), 'bytes, not characters');
  }
  // An object whose text does not lead with its type meta is serialised afresh as an item.
  const odd = { metadata: { name: 'x' }, kind: 'Pod', apiVersion: 'v1', spec: {} };
  assert.equal(`{${itemBody(odd)}`, '{"metadata":{"name":"x"},"spec":{}}');
  assert.equal(`{${itemBody({ kind: 'Pod', apiVersion: 'v1' })}`, '{}');
});

test('Store#load stores as create does, and lists stay sorted after creates and deletes', async (t) => {
  const s = await sim(t);
  const loaded = s.store.load('pods', [pod('b', {}, 'ns2'), pod('c'), pod('b')]);
  assert.deepEqual(
    loaded.map((o) => [o.kind, o.apiVersion, o.metadata.namespace, o.metadata.name]),
    [
      ['Pod', 'v1', 'ns2', 'b'],
      ['Pod', 'v1', 'default', 'c'],
      ['Pod', 'v1', 'default', 'b'],
    ],
  );
  assert.ok(loaded.every((o) => o.metadata.uid && o.metadata.creationTimestamp));
  assert.deepEqual(
    loaded.map((o) => Number(o.metadata.resourceVersion)),
    [2, 3, 4],
  );
  assert.throws(() => s.store.load('pods', [pod('c')]), /already exists/);
  const names = async () =>
    (await get(`${s.url}/api/v1/pods`)).body.items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
  assert.deepEqual(await names(), ['default/b', 'default/c', 'ns2/b']);
  s.create('pods', pod('a'));
  s.create('pods', pod('a', {}, 'ns1'));
  assert.deepEqual(await names(), ['default/a', 'default/b', 'default/c', 'ns1/a', 'ns2/b']);
  s.remove('pods', 'default', 'b');
  assert.deepEqual(await names(), ['default/a', 'default/c', 'ns1/a', 'ns2/b']);
  // A list page is the items' cached texts: the same JSON as the objects, without type meta.
  const list = await get(`${s.url}/api/v1/pods?limit=2`);
  const { kind: _k, apiVersion: _a, ...first } = s.store.snapshot('pods')[0];
  assert.deepEqual(list.body.items[0], first);
  assert.equal(list.body.items.length, 2);
  assert.ok(list.body.metadata.continue);
  const empty = await get(`${s.url}/api/v1/namespaces/none/pods`);
  assert.deepEqual(empty.body.items, []);
});

test('initial events in corked writes are the lines one write per event sends', async (t) => {
  const s = await sim(t, { tls: true, http2: true });
  s.store.load(
    'pods',
    Array.from({ length: 300 }, (_, i) => pod(`p-${String(i).padStart(3, '0')}`, { i: String(i) })),
  );
  const path = '/api/v1/pods?watch=true&timeoutSeconds=0.5';
  // Over HTTP/1.1 the initial events leave one write each: one chunk per event on every Node.js
  // version (Node 22 and later make one chunk of corked writes).
  const plain = await sim(t);
  plain.store.load(
    'pods',
    s.store.snapshot('pods').map(({ metadata: { name, labels } }) => pod(name, labels)),
  );
  const corked = await rawGet(plain.port, path);
  plain.nextWatchFault({ cutAfterEvents: 100000 }); // counts events: one write each
  const perEvent = await rawGet(plain.port, path);
  assert.equal(corked.chunks.length, 300);
  assert.equal(perEvent.chunks.length, 300);
  assert.equal(corked.body.toString(), perEvent.body.toString());
  // Over h2, where the corked writes leave as DATA frames of many events each.
  const w = watchRequest(`${s.url}${path}`, { http2: true, ca: certs.ca });
  await w.done;
  assert.deepEqual(
    w.events.map((e) => [e.type, e.object.metadata.name, e.object.metadata.resourceVersion]),
    s.store.snapshot('pods').map((o) => ['ADDED', o.metadata.name, o.metadata.resourceVersion]),
  );
  assert.deepEqual(
    w.lines,
    s.store.snapshot('pods').map((o) => addedLine(o).toString().slice(0, -1)),
  );
  // The store's buffer of a whole type's lines is made again after a change, and a watch with
  // a selector or of one namespace takes the objects one by one.
  const changed = s.patch('pods', 'default', 'p-007', (o) => void (o.metadata.labels.changed = 'yes'));
  s.create('pods', pod('p-000a', { changed: 'yes' }));
  const again = watchRequest(`${s.url}${path}`, { http2: true, ca: certs.ca });
  await again.done;
  assert.equal(again.events.length, 301);
  assert.equal(again.events[1].object.metadata.name, 'p-000a', 'in list order');
  assert.equal(again.events[8].object.metadata.resourceVersion, changed.metadata.resourceVersion);
  const selected = watchRequest(`${s.url}${path}&labelSelector=changed%3Dyes`, { http2: true, ca: certs.ca });
  await selected.done;
  assert.deepEqual(
    selected.events.map((e) => e.object.metadata.name),
    ['p-000a', 'p-007'],
  );
  const none = watchRequest(`${s.url}/api/v1/namespaces/other/pods?watch=true&timeoutSeconds=0.3`, {
    http2: true,
    ca: certs.ca,
  });
  await none.done;
  assert.equal(none.events.length, 0);
});

test('an initial state of many write pieces arrives whole and in order, before the events after it', async (t) => {
  const s = await sim(t, { tls: true, http2: true });
  // About 700 KB of lines: about 11 pieces of INITIAL_WRITE_BYTES (sim/watch.js), each written
  // once the one before was flushed.
  const pad = 'x'.repeat(2000);
  s.store.load(
    'pods',
    Array.from({ length: 350 }, (_, i) => pod(`p-${String(i).padStart(3, '0')}`, { i: String(i), pad })),
  );
  const initial = s.store.snapshot('pods').map((o) => addedLine(o).toString().slice(0, -1));
  // Changed as soon as the watch started, while most of its initial state is still held back.
  s.once('watchStart', () => {
    s.patch('pods', 'default', 'p-000', (o) => void (o.metadata.labels.changed = 'yes'));
    s.remove('pods', 'default', 'p-349');
  });
  const path = '/api/v1/pods?watch=true&timeoutSeconds=1';
  const w = watchRequest(`${s.url}${path}`, { http2: true, ca: certs.ca });
  await w.done;
  assert.deepEqual(w.lines.slice(0, 350), initial, 'the initial lines, byte for byte, in order');
  assert.deepEqual(
    w.events.slice(350).map((e) => [e.type, e.object.metadata.name]),
    [
      ['MODIFIED', 'p-000'],
      ['DELETED', 'p-349'],
    ],
  );
});
