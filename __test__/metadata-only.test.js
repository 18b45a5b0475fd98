'use strict';
// The `metadataOnly` option of watchResource and informer(): lists and watches as
// PartialObjectMetadata, as client-go's metadata informers ask for them, against the simulator
// serving them as a real API server does, refusing them (406) and ignoring the request (full
// objects back), where the objects are cut down locally with one warning.

const test = require('node:test');
const assert = require('node:assert/strict');
const { configMap } = require('../testbed/fleet-objects');
const { paramsFor, collect, watcherWithLogger, TOKEN, UNREACHABLE } = require('./helpers');
const { sim, consume } = require('./informer-helpers');
const { until } = require('../testbed/wait');

const LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
const WATCH_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

/** The object is a PartialObjectMetadata of ConfigMap `name`, and nothing more. */
function assertPartial(object, name, what) {
  assert.deepEqual(Object.keys(object), ['kind', 'apiVersion', 'metadata'], what);
  assert.equal(object.kind, 'PartialObjectMetadata', what);
  assert.equal(object.apiVersion, 'meta.k8s.io/v1', what);
  assert.equal(object.metadata.name, name, what);
  assert.ok(object.metadata.uid && object.metadata.resourceVersion, what);
}

const warnings = (logger) => logger.lines.filter((l) => l.level === 'warn').map((l) => l.message);
const accepts = (s, watch) =>
  s.requests
    .filter(
      (r) => r.path.endsWith('/configmaps') && (r.query.watch === '1' || r.query.watch === 'true') === watch,
    )
    .map((r) => r.headers.accept);

for (const metadataAs of ['serve', 'refuse', 'ignore']) {
  test(
    `an informer with metadataOnly caches and delivers PartialObjectMetadata (server: ${metadataAs})`,
    { timeout: 20000 },
    async (t) => {
      const s = await sim(t, { token: TOKEN, metadataAs });
      s.create('configmaps', configMap('default', 'a', 50));
      const { watcher, logger } = watcherWithLogger();
      const informer = watcher.informer(paramsFor(s, { plural: 'configmaps' }), {
        metadataOnly: true,
        initialList: 'paginated',
        backoff: { initialSeconds: 0.05 },
      });
      t.after(() => informer.close());
      const c = consume(informer);
      await informer.synced;
      s.patch('configmaps', 'default', 'a', (o) => void (o.metadata.labels.round = '1'));
      await until(() => c.events.some((e) => e.type === 'MODIFIED'), { what: 'the MODIFIED event' });
      for (const e of c.events.filter((e) => e.object)) assertPartial(e.object, 'a', `${e.type} event`);
      assert.equal(c.events.find((e) => e.type === 'MODIFIED').object.metadata.labels.round, '1');
      assertPartial(informer.get('a', 'default'), 'a', 'get()');
      assertPartial(informer.list()[0], 'a', 'list()');
      const warned = warnings(logger);
      assert.ok(accepts(s, false).length > 0 && accepts(s, true).length > 0, 'listed and watched');
      if (metadataAs === 'serve') {
        assert.deepEqual(warned, []);
        assert.ok(
          accepts(s, false).every((a) => a === LIST_ACCEPT),
          JSON.stringify(accepts(s, false)),
        );
        assert.ok(
          accepts(s, true).every((a) => a === WATCH_ACCEPT),
          JSON.stringify(accepts(s, true)),
        );
      } else if (metadataAs === 'refuse') {
        assert.equal(warned.filter((m) => m.includes('406 Not Acceptable')).length, 1, warned.join('\n'));
        assert.equal(accepts(s, false)[0], LIST_ACCEPT, 'asked for metadata first');
        assert.ok(
          accepts(s, false)
            .slice(1)
            .every((a) => !a.includes('as=')),
          'then for full objects',
        );
        assert.ok(accepts(s, true).every((a) => !a.includes('as=')));
      } else {
        const notice = warned.filter((m) => m.includes('sent full objects'));
        assert.equal(notice.length, 1, warned.join('\n'));
      }
    },
  );
}

test(
  'an informer with metadataOnly over a streaming list, with strip of managedFields',
  { timeout: 20000 },
  async (t) => {
    const s = await sim(t, { token: TOKEN });
    s.create('configmaps', configMap('default', 'a', 50));
    const { watcher, logger } = watcherWithLogger();
    const informer = watcher.informer(paramsFor(s, { plural: 'configmaps' }), {
      metadataOnly: true,
      strip: ['metadata.managedFields'],
      initialList: 'streaming',
    });
    t.after(() => informer.close());
    await informer.synced;
    const object = informer.get('a', 'default');
    assertPartial(object, 'a', 'get() after a streaming list');
    assert.equal(object.metadata.managedFields, undefined);
    assert.ok(object.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']);
    assert.deepEqual(warnings(logger), []);
    assert.ok(accepts(s, true).length > 0 && accepts(s, true).every((a) => a === WATCH_ACCEPT));
  },
);

for (const metadataAs of ['serve', 'ignore']) {
  test(
    `a watch with metadataOnly delivers PartialObjectMetadata (server: ${metadataAs})`,
    { timeout: 20000 },
    async (t) => {
      const s = await sim(t, { token: TOKEN, metadataAs });
      s.create('configmaps', configMap('default', 'a', 50));
      s.create('configmaps', configMap('default', 'b', 50));
      const { watcher, logger } = watcherWithLogger();
      const events = await collect(
        watcher.watchResource(paramsFor(s, { plural: 'configmaps' }), {
          metadataOnly: true,
          timeoutSeconds: 1,
        }),
      );
      assert.deepEqual(
        events.map((e) => e.type),
        ['ADDED', 'ADDED'],
      );
      events.forEach((e, i) => assertPartial(e.object, ['a', 'b'][i], 'watch event'));
      assert.deepEqual(accepts(s, true), [WATCH_ACCEPT]);
      const notice = warnings(logger).filter((m) => m.includes('sent full objects'));
      assert.equal(notice.length, metadataAs === 'ignore' ? 1 : 0, warnings(logger).join('\n'));
    },
  );
}

test(
  'a watch with metadataOnly on a server that answers 406 ends with ERROR and a warning saying why',
  { timeout: 20000 },
  async (t) => {
    const s = await sim(t, { token: TOKEN, metadataAs: 'refuse' });
    const { watcher, logger } = watcherWithLogger();
    const events = await collect(
      watcher.watchResource(paramsFor(s, { plural: 'configmaps' }), {
        metadataOnly: true,
        timeoutSeconds: 1,
      }),
    );
    assert.equal(events.length, 1);
    assert.equal(events[0].type, 'ERROR');
    assert.equal(events[0].error.statusCode, 406);
    assert.ok(
      warnings(logger).some((m) => m.includes('406 Not Acceptable') && m.includes('metadataOnly')),
      warnings(logger).join('\n'),
    );
  },
);

test('bad metadataOnly options are TypeErrors at call time', () => {
  const { watcher } = watcherWithLogger();
  for (const call of [
    (o) => () => watcher.watchResource(UNREACHABLE, o),
    (o) => () => watcher.informer(UNREACHABLE, o),
  ]) {
    assert.throws(call({ metadataOnly: 'yes' }), {
      name: 'TypeError',
      message: /options\.metadataOnly must be a boolean \(got string\)/,
    });
    assert.throws(call({ metadataOnly: true, fields: ['status'] }), {
      name: 'TypeError',
      message: /options\.metadataOnly and options\.fields exclude each other/,
    });
  }
});
