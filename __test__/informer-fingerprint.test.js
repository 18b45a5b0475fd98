'use strict';
// informer.fingerprint(): the native cache's hash of what listText() would return, for a reader
// that only compares answers (the live tab's following): it moves with the objects a selector
// selects, and with nothing else.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { sim, syncedInformer, cm } = require('./informer-helpers');
const { until } = require('../testbed/wait');

test('a fingerprint moves when a selected object changes, comes or goes, and only then', async (t) => {
  const s = await sim(t, { token: 'tok' });
  for (let i = 0; i < 4; i++) s.create('configmaps', cm(`c${i}`, { i: String(i) }));
  const { informer, c } = await syncedInformer(t, s, {}, { namespace: 'default' });
  const fp = (labelSelector) => informer.fingerprint({ labelSelector });
  const [low, high, all] = [fp('i in (0,1)'), fp('i in (2,3)'), fp()];
  assert.match(low, /^[0-9a-f]{64}$/);
  assert.equal(fp('i in (1,0)'), low, 'the same answer, the same fingerprint');
  assert.equal(new Set([low, high, all]).size, 3, 'each selector its own answer');
  const none = crypto.createHash('sha256').update('').digest('hex');
  assert.equal(fp('i=9'), none, 'nothing selected');
  assert.equal(informer.fingerprint({ namespace: 'other' }), none);

  s.patch('configmaps', 'default', 'c1', (o) => void (o.data.v = 'changed'));
  await until(() => c.view.get('default/c1')?.data.v === 'changed', { what: 'the change' });
  assert.notEqual(fp('i in (0,1)'), low, 'a selected object changed');
  assert.equal(fp('i in (2,3)'), high, 'none of its objects changed');
  assert.notEqual(fp(), all);

  s.create('configmaps', cm('c4', { i: '2' }));
  await until(() => c.view.has('default/c4'), { what: 'the new object' });
  const more = fp('i in (2,3)');
  assert.notEqual(more, high, 'an object came');
  s.remove('configmaps', 'default', 'c4');
  await until(() => !c.view.has('default/c4'), { what: 'the deletion' });
  assert.equal(fp('i in (2,3)'), high, 'gone again: the answer it was');

  assert.throws(() => fp('a in ('), {
    name: 'TypeError',
    message: /fingerprint\(\) labelSelector is not valid/,
  });
  assert.throws(() => informer.fingerprint('i=1'), /fingerprint\(\) options/);
});
