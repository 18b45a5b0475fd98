'use strict';
// The live tab's following (backstage/following.js) on a scripted informer: a load compares its
// own selector before it joins that selector's viewers, so that they hear of a change the
// joining load already shows (and it does not), and leaves the other selectors to the check the
// change scheduled. Pure JavaScript: no cluster, no timers but one setTimeout(0).

const test = require('node:test');
const assert = require('node:assert/strict');
const { Following } = require('../backstage/following');

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
    informer,
    state: () => informer.state(),
    watched: new Map(),
    tag: undefined,
    checkTimer: null,
    checkedAt: 0,
  };
  return {
    entry,
    change(selector, text) {
      texts.set(selector, text);
      generation += 1;
    },
  };
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
  const following = new Following({
    publisher,
    servable: () => ({ servable: true, until: Infinity }),
    entries: new Map([[entry.key, entry]]),
  });
  const load = (user, selector) =>
    following.viewed({ userEntityRef: user, entityRef: `component:default/${selector}` }, [entry], {
      selector,
    });

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
  following.changed(entry);
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(publisher.calls.slice(2), [['changed', 'app=c']]);
});
