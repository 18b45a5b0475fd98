'use strict';
// Shared pieces of the simulator's own tests (simulator*.test.js), which drive it with plain
// Node clients rather than the native addon.

const { createSimulator } = require('../packages/kube-watch-native/sim');

/** A minimal pod in `namespace` with `labels`. */
const pod = (name, labels = {}, namespace = 'default') => ({
  metadata: { name, namespace, labels },
  spec: { containers: [{ name: 'c', image: 'busybox' }] },
});

/** Pod `name` in `default` of two running containers (`main`, `sidecar`) and one waiting to start (`late`). */
const podOfContainers = (name) => ({
  metadata: { name, namespace: 'default' },
  spec: { containers: [{ name: 'main' }, { name: 'sidecar' }, { name: 'late' }] },
  status: {
    containerStatuses: [
      { name: 'main', state: { running: {} } },
      { name: 'sidecar', state: { running: {} } },
      { name: 'late', state: { waiting: { reason: 'ContainerCreating' } } },
    ],
  },
});

const delay = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resolves once `check()` holds, polling; rejects naming `what` after `ms`. */

/** A simulator closed when test `t` ends. */
async function sim(t, options) {
  const s = await createSimulator(options);
  t.after(() => s.close());
  return s;
}

/** GET with fetch, resolving to `{ status, headers, body }` (body: parsed JSON or null). */
function get(url, options = {}) {
  return fetch(url, options).then(async (res) => ({
    status: res.status,
    headers: res.headers,
    body: await res.json().catch(() => null),
  }));
}

module.exports = { pod, podOfContainers, delay, sim, get };
