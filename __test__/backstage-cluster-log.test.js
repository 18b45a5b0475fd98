'use strict';
// Issue 49: a cluster that is down logged one retry warning per object type (24 lines in 5 s in a
// fresh app). Through the module's logger (backstage/cluster-log.js) it is one line per cluster
// per window, then one line counting the warnings held back and naming their types.

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { NativeKubernetesWatcher } = require('kube-watch-native');
const { clusterRetryLogger } = require('../packages/backstage/cluster-log');
const { sleep } = require('../testbed/wait');

function recorder() {
  const lines = [];
  const logger = {
    warn: (m) => lines.push(`warn ${m}`),
    info: (m) => lines.push(`info ${m}`),
    error: (m) => lines.push(`error ${m}`),
    debug: () => {},
    child: () => logger,
  };
  return { lines, logger };
}

/** A port on 127.0.0.1 where nothing listens. */
async function closedPort() {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const TYPES = ['pods', 'services', 'configmaps', 'secrets', 'endpoints', 'events'];

/** Informers of every TYPES on the cluster `name` at a closed port, logging to `logger`, for `ms`. */
async function downCluster(t, logger, ms) {
  const port = await closedPort();
  const watcher = new NativeKubernetesWatcher({ logger });
  t.after(() => watcher.close());
  for (const plural of TYPES) {
    watcher.informer(
      {
        clusterDetails: { name: 'down', url: `http://127.0.0.1:${port}` },
        credential: { type: 'bearer token', token: 'tok' },
        group: '',
        apiVersion: 'v1',
        plural,
      },
      { backoff: { initialSeconds: 0.05, maxSeconds: 0.2 } },
    );
  }
  await sleep(ms);
}

test('a cluster that is down: one retry line per cluster, not one per object type', async (t) => {
  const plain = recorder();
  await downCluster(t, plain.logger, 1500);
  const perType = plain.lines.filter((l) => /retrying in/.test(l));
  assert.ok(perType.length >= TYPES.length, `without grouping: ${perType.length} lines`);

  const grouped = recorder();
  await downCluster(t, clusterRetryLogger(grouped.logger, { windowMs: 1000 }), 1500);
  const retries = grouped.lines.filter((l) => /retrying in/.test(l));
  // One line per window: the first at once, the next once the first window closed (at 1 s).
  assert.ok(retries.length >= 1 && retries.length <= 2, grouped.lines.join('\n'));
  assert.ok(retries.every((l) => /on cluster 'down'/.test(l)));
  const held = grouped.lines.filter((l) => /held back/.test(l));
  assert.equal(held.length, 1, grouped.lines.join('\n'));
  assert.match(held[0], /^warn \d+ more informer retry warning\(s\) on cluster 'down' in the last 1 s/);
  const count = Number(/^warn (\d+) more/.exec(held[0])[1]);
  assert.ok(count >= TYPES.length - 1, `${count} held back`);
  for (const type of TYPES.filter((p) => !retries[0].includes(`/${p}?`)))
    assert.match(held[0], new RegExp(type));
});

test('other messages pass at once, and each cluster has its own window', () => {
  const { lines, logger } = recorder();
  const log = clusterRetryLogger(logger, { windowMs: 60_000 });
  const retry = (path, cluster) =>
    log.warn(`informer of ${path} on cluster '${cluster}': HTTP 503: x; retrying in 0.8 s`);
  retry('/api/v1/pods', 'a');
  retry('/api/v1/services', 'a');
  retry('/api/v1/pods', 'b');
  log.warn("informer of /api/v1/pods on cluster 'a': HTTP 400: bad; giving up");
  log.info('relisted');
  assert.deepEqual(lines, [
    "warn informer of /api/v1/pods on cluster 'a': HTTP 503: x; retrying in 0.8 s",
    "warn informer of /api/v1/pods on cluster 'b': HTTP 503: x; retrying in 0.8 s",
    "warn informer of /api/v1/pods on cluster 'a': HTTP 400: bad; giving up",
    'info relisted',
  ]);
});
