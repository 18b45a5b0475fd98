'use strict';
// The benchmark's clients load from where the suite runs them (bench/clients.js): a path that
// the package move left behind would break `npm run bench` with no test noticing.

const test = require('node:test');
const assert = require('node:assert/strict');
const { clients } = require('../bench/clients');
const { NativeKubernetesWatcher } = require('kube-watch-native');

test("every client of npm run bench loads, the native ones this checkout's watcher", () => {
  for (const name of ['baseline', 'clientnode', 'native', 'native-fields']) {
    assert.doesNotThrow(() => clients[name].load(), name);
  }
  assert.equal(typeof NativeKubernetesWatcher, 'function');
});
