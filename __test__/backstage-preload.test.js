'use strict';
// The Kubernetes backend imports @kubernetes/client-node (about 600 ms of the main thread) at
// the first load of a tab; the module loads it while the backend starts (backstage/preload.js),
// from where the backend resolves it, so that the backend's own import finds it loaded: a
// restarted replica's first viewer no longer waits for it. Counted by the loader's own hooks.

const test = require('node:test');
const assert = require('node:assert/strict');
const { register } = require('node:module');
const { MessageChannel, receiveMessageOnPort } = require('node:worker_threads');
const { startCluster, startLiveBackend, postEntity, LIVE_SVC } = require('../testbed/live-helpers');

const CLIENT_ENTRY = '/node_modules/@kubernetes/client-node/dist/index.js';

// Every ES module the loader loads, as its URL, through a hooks module on the loader's thread.
const HOOKS = `
let port;
export function initialize(data) { port = data.port; }
export async function load(url, context, next) {
  port.postMessage(url);
  return next(url, context);
}`;
const { port1, port2 } = new MessageChannel();
register(`data:text/javascript,${encodeURIComponent(HOOKS)}`, {
  data: { port: port2 },
  transferList: [port2],
});
const loaded = [];
function clientLoads() {
  for (let m = receiveMessageOnPort(port1); m; m = receiveMessageOnPort(port1)) loaded.push(m.message);
  return loaded.filter((url) => url.endsWith(CLIENT_ENTRY));
}

test('the backend has @kubernetes/client-node loaded when it starts, and its first load loads it no more', async (t) => {
  const sim = await startCluster(t);
  assert.deepEqual(clientLoads(), [], 'not loaded before the backend starts');
  const backend = await startLiveBackend(sim);
  t.after(() => backend.stop());
  const atStart = clientLoads();
  assert.equal(atStart.length, 1, `loaded once while the backend started: ${atStart.join(', ')}`);

  const res = await postEntity(backend.url, 'mock-user-token', LIVE_SVC);
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.items[0].resources.length > 0, true, 'the tab was answered');
  assert.deepEqual(clientLoads(), atStart, "the backend's own import found the module already loaded");
});
