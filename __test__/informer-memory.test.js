'use strict';
// The native snapshot's `memory` (src/informer/memory.rs): the figures of a cache of known
// objects, and what one more informer and one more consumer add. The figures are worked out
// from the structures' sizes and capacities; tests/memory_accounting.rs sets them against what
// the allocator was really asked for.

const test = require('node:test');
const assert = require('node:assert/strict');
const { SNAPSHOT } = require('../packages/kube-watch-native/lib/metrics');
const { cm, params, recordingWatcher, sim } = require('./informer-helpers');
const { until } = require('../testbed/wait');

const FIELDS = [
  'informers',
  'consumers',
  'objects',
  'jsonBytes',
  'textBytes',
  'headerBytes',
  'indexBytes',
  'pendingBytes',
  'pendingChanges',
  'fixedBytes',
  'sharedBytes',
  'fixedBytesPerInformer',
  'fixedTaskBytes',
  'fixedCacheBytes',
  'fixedConfigBytes',
  'fixedRegistryBytes',
  'accountedBytes',
];

test('memory: text, headers and index of a known cache, and what an informer and a consumer add', async (t) => {
  const s = await sim(t);
  const texts = [];
  for (let i = 0; i < 30; i++) {
    const stored = s.create('configmaps', cm(`cm-${i}`, { app: 'a' }, 'one', { v: 'x'.repeat(10 * i) }));
    texts.push(JSON.stringify(stored));
  }
  s.create('configmaps', cm('other', {}, 'two'));
  const { watcher } = recordingWatcher();
  const empty = watcher[SNAPSHOT]().memory;
  assert.equal(empty.informers, 0, 'a watcher without informers has a memory object too');
  assert.equal(empty.fixedBytes, 0);

  const one = watcher.informer(params(s), { namespace: 'one' });
  t.after(() => one.close());
  await one.synced;
  const first = watcher[SNAPSHOT]().memory;
  for (const field of FIELDS) assert.equal(typeof first[field], 'number', field);
  assert.equal(first.informers, 1);
  assert.equal(first.objects, 30);
  // The cache holds each object's text as the server sent it (JSON.stringify of the stored one).
  const sum = texts.reduce((n, text) => n + Buffer.byteLength(text), 0);
  assert.equal(first.jsonBytes, sum, 'jsonBytes is the sum of the texts');
  assert.equal(first.jsonBytes, watcher[SNAPSHOT]().series[0].cachedBytes);
  // Packed by default: the longer texts (runs of one letter) take less than their JSON.
  assert.ok(first.textBytes < sum * 0.7, `textBytes ${first.textBytes} of ${sum}`);
  // At least Arc's counters and the 40-byte header per object; the index has a node per 11.
  assert.ok(first.headerBytes >= 30 * 52, `headerBytes ${first.headerBytes}`);
  assert.ok(first.indexBytes >= 3 * 192, `indexBytes ${first.indexBytes}`);
  assert.ok(first.fixedTaskBytes > 0 && first.fixedConfigBytes > 0 && first.fixedRegistryBytes > 0);
  assert.equal(
    first.fixedBytes,
    first.fixedTaskBytes + first.fixedCacheBytes + first.fixedConfigBytes + first.fixedRegistryBytes,
  );
  assert.equal(first.fixedBytesPerInformer, first.fixedBytes);
  assert.equal(
    first.accountedBytes,
    first.textBytes +
      first.headerBytes +
      first.indexBytes +
      first.pendingBytes +
      first.fixedBytes +
      first.sharedBytes,
  );
  // What the watcher's informers learn of their clusters together (here one cluster's recovery
  // channel and its key: origin and a share of the CA) is counted once, not per informer.
  assert.ok(first.sharedBytes >= new URL(s.url).origin.length, `sharedBytes ${first.sharedBytes}`);
  if (process.platform === 'linux' && first.allocatorInUseBytes !== undefined) {
    assert.ok(
      first.allocatorInUseBytes > first.accountedBytes,
      'the process allocated more than the informers',
    );
  }

  // One more informer (another namespace): one more fixed cost, one object more.
  const two = watcher.informer(params(s), { namespace: 'two' });
  // Closed on every path, so that a failed assertion ends the test instead of leaving it running.
  t.after(() => two.close());
  await two.synced;
  const second = watcher[SNAPSHOT]().memory;
  assert.equal(second.informers, 2);
  assert.equal(second.objects, 31);
  assert.ok(second.fixedBytes > first.fixedBytes, 'an informer adds its fixed cost');
  // The two informers differ only in their namespace: their fixed costs are within a few
  // hundred bytes of each other (the registry's table may have grown).
  assert.ok(
    Math.abs(second.fixedBytes - 2 * first.fixedBytes) < 512,
    `fixed ${second.fixedBytes} for two, ${first.fixedBytes} for one`,
  );
  assert.equal(second.fixedBytesPerInformer, second.fixedBytes / 2);
  assert.equal(second.sharedBytes, first.sharedBytes, 'one cluster: one recovery channel');

  // A consumer that has not read yet holds one pending ADDED per object.
  const iterator = one[Symbol.asyncIterator]();
  const firstEvent = await iterator.next();
  assert.equal(firstEvent.value.type, 'ADDED');
  const reading = watcher[SNAPSHOT]().memory;
  assert.equal(reading.consumers, 1);
  assert.ok(reading.fixedBytes > second.fixedBytes, 'a consumer adds its struct');
  // Once it has read everything, nothing is pending.
  for (let seen = 1; seen < 31; seen++) await iterator.next();
  await until(() => watcher[SNAPSHOT]().memory.pendingChanges === 0, { what: 'nothing pending' });

  two.close();
  await until(() => watcher[SNAPSHOT]().memory.informers === 1, {
    what: 'the closed informer leaves the figures',
  });
  assert.equal(watcher[SNAPSHOT]().memory.objects, 30);
  await iterator.return();
});

test('memory: compress: false holds the texts as received, and both caches read back the same', async (t) => {
  const s = await sim(t);
  for (let i = 0; i < 20; i++) {
    s.create(
      'configmaps',
      cm(`cm-${i}`, { app: i % 2 ? 'odd' : 'even' }, 'one', { v: `line ${i}\n`.repeat(40) }),
    );
  }
  const { watcher } = recordingWatcher();
  const packed = watcher.informer(params(s), { namespace: 'one' });
  t.after(() => packed.close());
  await packed.synced;
  const alone = watcher[SNAPSHOT]().memory;
  const plain = watcher.informer(params(s), { namespace: 'one', compress: false });
  t.after(() => plain.close());
  await plain.synced;
  const both = watcher[SNAPSHOT]().memory;
  assert.equal(both.informers, 2, 'compress is part of the sharing key');
  assert.equal(both.jsonBytes, 2 * alone.jsonBytes);
  assert.equal(both.textBytes - alone.textBytes, alone.jsonBytes, 'compress: false holds the JSON');
  assert.ok(alone.textBytes * 2 < alone.jsonBytes, `packed ${alone.textBytes} of ${alone.jsonBytes}`);
  assert.deepEqual(packed.list(), plain.list());
  assert.deepEqual(packed.list({ labelSelector: 'app=odd' }), plain.list({ labelSelector: 'app=odd' }));
  assert.equal(packed.list({ labelSelector: 'app=odd' }).length, 10);
  assert.deepEqual(packed.get('cm-7', 'one'), s.get('configmaps', 'one', 'cm-7'));
  // A consumer of the synced, packed cache starts from ADDED events unpacked from it.
  const seen = [];
  for await (const event of packed) {
    if (event.type === 'SYNCED') break;
    seen.push(event.object);
  }
  assert.deepEqual(seen, plain.list());
  assert.throws(
    () => watcher.informer(params(s), { compress: 'yes' }),
    /options\.compress/,
    'a compress that is not a boolean is refused by name',
  );
});
