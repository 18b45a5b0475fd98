'use strict';
// The live tab's following of informers (backstage/following/informers.js) on a scripted informer: a load compares its
// own selector before it joins that selector's viewers, so that they hear of a change the
// joining load already shows (and it does not), and leaves the other selectors to the check the
// change scheduled. Pure JavaScript: no cluster, no timers but one setTimeout(0).

const test = require('node:test');
const assert = require('node:assert/strict');
const { InformerFollowing } = require('../packages/backstage/following/informers');

/** An informer whose generation and per-selector text the test sets. */
function scriptedEntry() {
  const texts = new Map();
  let generation = 1;
  const informer = {
    state: () => ({ generation, synced: true, error: null }),
    fingerprint: ({ labelSelector }) => texts.get(labelSelector) ?? '[]',
    onStateChange: () => () => {},
    armChangeNotice: () => true, // armed: the check waits for a notice the test never sends
    resourceVersion: '7',
  };
  const entry = {
    key: 'pods@sim',
    description: { cluster: 'sim', group: '', apiVersion: 'v1', plural: 'pods', labelSelector: 'app' },
    informer,
    state: () => informer.state(),
    servable: () => ({ servable: true, until: Infinity }),
    closed: false,
  };
  return {
    entry,
    change(selector, text) {
      texts.set(selector, text);
      generation += 1;
    },
  };
}

/**
 * A load of `selector` as the fetcher makes it (backstage/serving.js): prepare(), the answers
 * read (`answering`, where the test may change the cache), then the viewer joins.
 */
function loadThrough(following, entries, user, selector, answering = () => {}) {
  const prepared = following.prepare(entries, { selector });
  answering();
  following.viewed({ userEntityRef: user, entityRef: `component:default/${selector}` }, entries, prepared, {
    cluster: 'sim',
  });
}

function recordingPublisher() {
  const calls = [];
  return {
    calls,
    viewed: (user, entityRef, keys) => (
      calls.push(['viewed', user, keys.map((k) => k.split('\0')[2])]),
      true
    ),
    changed: (key) => calls.push(['changed', key.split('\0')[2]]),
    watching: () => true,
  };
}

test('a load compares its own selector first, and only its own; the scheduled check compares the rest', async () => {
  const { entry, change } = scriptedEntry();
  const publisher = recordingPublisher();
  const following = new InformerFollowing({ publisher });
  const load = (user, selector) => loadThrough(following, [entry], user, selector);

  load('alice', 'app=a');
  load('carol', 'app=c');
  publisher.calls.length = 0;
  change('app=a', '[{"a":2}]');
  change('app=c', '[{"c":2}]');

  // Bob loads app=a after the change: Alice (app=a) hears of it before he joins; Carol's
  // selector is not compared now.
  load('bob', 'app=a');
  assert.deepEqual(publisher.calls, [
    ['changed', 'app=a'],
    ['viewed', 'bob', ['app=a']],
  ]);

  // The check the change scheduled compares the rest: Carol's selector, not app=a again.
  following.entryChanged(entry);
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(publisher.calls.slice(2), [['changed', 'app=c']]);
});

test('a change the cache takes while a load reads its answers is signalled to that viewer too', async () => {
  // The native cache moves on its own threads: between the answers' read and the viewer's
  // joining, a change may land. The key must not be compared past what the answer showed, or
  // the viewer, answered before the change, would never hear of it.
  const { entry, change } = scriptedEntry();
  const publisher = recordingPublisher();
  const following = new InformerFollowing({ publisher });
  loadThrough(following, [entry], 'alice', 'app=a');
  change('app=a', '[{"a":2}]');
  // Bob's load reads its answers (showing a:2), and a:3 lands before he joins.
  loadThrough(following, [entry], 'bob', 'app=a', () => change('app=a', '[{"a":3}]'));
  assert.deepEqual(publisher.calls.slice(1), [
    ['changed', 'app=a'], // a:2, for Alice
    ['viewed', 'bob', ['app=a']],
  ]);
  // The check a:3 scheduled signals the key again: Bob's answer (a:2) is behind.
  following.entryChanged(entry);
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(publisher.calls.slice(3), [['changed', 'app=a']]);

  // The first viewer of a key: what it is compared as is read before the answer too.
  loadThrough(following, [entry], 'carol', 'app=c', () => change('app=c', '[{"c":2}]'));
  following.entryChanged(entry);
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(publisher.calls.slice(4), [
    ['viewed', 'carol', ['app=c']],
    ['changed', 'app=c'],
  ]);
});
