'use strict';
// The `strip` option of watchResource and informer(): paths removed from every object on a Rust
// thread before it is cached or delivered (managedFields and the last-applied annotation, as a
// real API server writes them), everything else kept; bad paths refused at call time.

const test = require('node:test');
const assert = require('node:assert/strict');
const { configMap } = require('../testbed/fleet-objects');
const { paramsFor, collect, watcherWithLogger, TOKEN, UNREACHABLE } = require('./helpers');
const { sim, consume } = require('./informer-helpers');
const { until } = require('../testbed/wait');

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
const STRIP = ['metadata.managedFields', `metadata.annotations['${LAST_APPLIED}']`];

/** A ConfigMap as `kubectl apply` leaves it, with one more annotation that must stay. */
function applied(name) {
  const object = configMap('default', name, 50);
  object.metadata.annotations['example.com/keep'] = 'yes';
  return object;
}

/** The object has lost exactly the stripped paths. */
function assertStripped(object, what) {
  assert.equal(object.metadata.managedFields, undefined, `${what}: managedFields`);
  assert.deepEqual(object.metadata.annotations, { 'example.com/keep': 'yes' }, `${what}: annotations`);
  assert.equal(object.kind, 'ConfigMap', `${what}: kind`);
  assert.equal(object.apiVersion, 'v1', `${what}: apiVersion`);
  assert.ok(object.metadata.name && object.metadata.uid && object.metadata.resourceVersion, what);
  assert.ok(object.data['config.yaml'].length > 0, `${what}: data`);
}

test(
  'an informer with strip caches and delivers objects without the stripped paths',
  { timeout: 20000 },
  async (t) => {
    const s = await sim(t, { token: TOKEN });
    s.create('configmaps', applied('a'));
    const { watcher } = watcherWithLogger();
    const params = paramsFor(s, { plural: 'configmaps' });
    const informer = watcher.informer(params, { strip: STRIP, initialList: 'paginated' });
    t.after(() => informer.close());
    const c = consume(informer);
    await informer.synced;
    s.create('configmaps', applied('b'));
    s.patch('configmaps', 'default', 'a', (o) => void (o.data.round = '1'));
    await until(() => c.events.filter((e) => e.type !== 'SYNCED').length >= 3, {
      what: 'ADDED a, ADDED b, MODIFIED a',
    });
    for (const e of c.events.filter((e) => e.object)) assertStripped(e.object, `${e.type} event`);
    assertStripped(informer.get('a', 'default'), 'get(a)');
    const listed = informer.list();
    assert.equal(listed.length, 2);
    for (const o of listed) assertStripped(o, `list() ${o.metadata.name}`);
    // An informer of the same resource without strip is another cache, with everything.
    const full = watcher.informer(params, { initialList: 'paginated' });
    t.after(() => full.close());
    await full.synced;
    assert.equal(full.get('a', 'default').metadata.annotations[LAST_APPLIED].length > 0, true);
    assert.equal(full.get('a', 'default').metadata.managedFields.length, 1);
    assert.ok(informer.stats().cachedBytes < full.stats().cachedBytes / 1.5, 'the stripped cache is smaller');
  },
);

test(
  'an informer with strip over a streaming list strips the initial events too',
  { timeout: 20000 },
  async (t) => {
    const s = await sim(t, { token: TOKEN, sendInitialEvents: true });
    s.create('configmaps', applied('a'));
    const { watcher } = watcherWithLogger();
    const informer = watcher.informer(paramsFor(s, { plural: 'configmaps' }), {
      strip: STRIP,
      initialList: 'streaming',
    });
    t.after(() => informer.close());
    await informer.synced;
    assertStripped(informer.get('a', 'default'), 'get(a) after a streaming list');
  },
);

test('a watch with strip delivers events without the stripped paths', { timeout: 20000 }, async (t) => {
  const s = await sim(t, { token: TOKEN });
  s.create('configmaps', applied('a'));
  s.create('configmaps', applied('b'));
  const { watcher } = watcherWithLogger();
  const events = await collect(
    watcher.watchResource(paramsFor(s, { plural: 'configmaps' }), { strip: STRIP, timeoutSeconds: 1 }),
  );
  assert.equal(events.length, 2, JSON.stringify(events.map((e) => e.type)));
  for (const e of events) {
    assert.equal(e.type, 'ADDED');
    assertStripped(e.object, 'watch event');
    assert.equal(e.resourceVersion, e.object.metadata.resourceVersion);
  }
});

test('bad strip options are TypeErrors naming the path, at call time', () => {
  const { watcher } = watcherWithLogger();
  const watch = (options) => () => watcher.watchResource(UNREACHABLE, options);
  const inform = (options) => () => watcher.informer(UNREACHABLE, options);
  for (const call of [watch, inform]) {
    assert.throws(call({ strip: ['metadata..x'] }), {
      name: 'TypeError',
      message: /options\.strip\[0\] "metadata\.\.x" has an empty segment at column 10/,
    });
    assert.throws(call({ strip: ['status', "metadata.annotations['a.b/c"] }), {
      name: 'TypeError',
      message: /options\.strip\[1\] "metadata\.annotations\['a\.b\/c" has an unterminated quoted key/,
    });
    assert.throws(call({ strip: ['metadata.annotations[a]'] }), {
      name: 'TypeError',
      message: /has 'a' at column 22, where a key or a quoted \['key'\] was expected/,
    });
    assert.throws(call({ strip: ['metadata.resourceVersion'] }), {
      name: 'TypeError',
      message: /options\.strip\[0\] "metadata\.resourceVersion" would remove what every object needs/,
    });
    assert.throws(call({ strip: 'metadata.managedFields' }), {
      name: 'TypeError',
      message: /options\.strip must be an array of field paths \(got string\)/,
    });
    assert.throws(call({ strip: [1] }), { name: 'TypeError', message: /options\.strip must be an array/ });
    assert.throws(call({ strip: ['metadata.managedFields'], fields: ['status'] }), {
      name: 'TypeError',
      message: /options\.strip and options\.fields exclude each other/,
    });
  }
});
