'use strict';
// The answers an informer remembers (backstage/answers.js AnswerMemo): a tab's entities come
// back in turn, so the memo forgets the least recently used answer first, holds as many entities
// as a Backstage catalog typically shows from one informer, and is bounded in JSON too.

const test = require('node:test');
const assert = require('node:assert/strict');
const { AnswerMemo, MEMO_ENTRIES } = require('../packages/backstage/serving/answers');
const { NativeInformer } = require('../packages/kube-watch-native/lib/native');
const { createSimulator } = require('../packages/kube-watch-native/sim');
const { fetcherFor, serviceAccountRequest } = require('./backstage-helpers');
const { until } = require('../testbed/wait');

const ID = 'backstage.io/kubernetes-id';

test('the memo forgets the least recently used answer first, and by bytes as well as by count', () => {
  const memo = new AnswerMemo();
  for (let i = 0; i < MEMO_ENTRIES; i++) memo.set(`k${i}`, 1, { i }, 10, 1e9);
  assert.deepEqual(memo.get('k0', 1), { i: 0 }, 'k0 used again');
  memo.set('new', 1, { i: 'new' }, 10, 1e9);
  assert.equal(memo.size, MEMO_ENTRIES);
  assert.equal(memo.get('k1', 1), undefined, 'the least recently used went');
  assert.deepEqual(memo.get('k0', 1), { i: 0 });
  assert.equal(memo.get('k0', 2), undefined, 'another generation is not remembered');

  const small = new AnswerMemo();
  small.set('a', 1, 'A', 40, 100);
  small.set('b', 1, 'B', 40, 100);
  small.set('c', 1, 'C', 40, 100);
  assert.equal(small.get('a', 1), undefined, 'a went to keep the bytes under 100');
  assert.equal(small.bytes, 80);
  small.set('b', 1, 'B2', 30, 100);
  assert.equal(small.bytes, 70, 'an answer set again counts once');
  small.set('huge', 1, 'H', 101, 100);
  assert.equal(small.get('huge', 1), undefined, 'an answer over the bound alone is not kept');
  assert.deepEqual([small.get('b', 1), small.get('c', 1)], ['B2', 'C'], 'nor does it push others out');
  small.clear();
  assert.deepEqual([small.size, small.bytes], [0, 0]);
});

test('300 entities on one informer, loaded in turn twice: the second round lists nothing natively', async (t) => {
  const ENTITIES = 300;
  const sim = await createSimulator({ token: 'tok' });
  t.after(() => sim.close());
  for (let i = 0; i < ENTITIES; i++) {
    sim.create('pods', { metadata: { name: `p${i}`, namespace: 'team', labels: { [ID]: `svc-${i}` } } });
  }
  const { fetcher } = fetcherFor(t);
  const request = (i) =>
    serviceAccountRequest(sim.url, 'tok', { serviceId: `svc-${i}`, labelSelector: `${ID}=svc-${i}` });
  const names = (answer) => answer.responses[0].resources.map((o) => o.metadata?.name);
  await until(async () => names(await fetcher.fetchObjectsForService(request(0)))[0] === 'p0', {
    what: 'the informer answering',
  });
  for (let i = 0; i < ENTITIES; i++) await fetcher.fetchObjectsForService(request(i));

  const { list } = NativeInformer.prototype;
  let lists = 0;
  NativeInformer.prototype.list = function (...args) {
    lists += 1;
    return list.apply(this, args);
  };
  t.after(() => Object.assign(NativeInformer.prototype, { list }));
  for (let i = 0; i < ENTITIES; i++) {
    assert.deepEqual(names(await fetcher.fetchObjectsForService(request(i))), [`p${i}`]);
  }
  assert.equal(lists, 0, 'every answer of the second round came from the memo');
  sim.create('pods', { metadata: { name: 'new', namespace: 'team', labels: { [ID]: 'svc-7' } } });
  await until(async () => names(await fetcher.fetchObjectsForService(request(7))).join() === 'new,p7', {
    what: 'a change listed afresh',
  });
  assert.ok(lists >= 1, 'a new generation is listed again');
});
