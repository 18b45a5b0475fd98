'use strict';
// Issue 49: the demo backs an entity. `kube-watch --demo --demo-backstage` listens on a fixed
// port with a token, labels its pods for the entity "shop" and prints the app-config block and
// the entity; a real Backstage backend given exactly what it printed answers the entity's tab
// from informers, live.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn } = require('node:child_process');
const YAML = require('yaml');
const { startLiveBackend, postEntity } = require('../testbed/live-helpers');
const { freePort } = require('../testbed/pg-helpers');
const { until } = require('../testbed/wait');
const { LIVE_HEADER } = require('kube-watch-native-protocol');

const CLI = path.join(__dirname, '..', 'packages', 'kube-watch-native', 'bin', 'kube-watch.js');

test('kube-watch --demo --demo-backstage backs an entity in a Backstage backend from what it prints', async (t) => {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [CLI, '--demo', '--demo-backstage', '--demo-port', String(port), '-o', 'json'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  child.stdout.resume();
  await until(() => stderr.includes('spec: {'), { ms: 15_000, what: 'the printed app-config and entity' });
  const printed = stderr.slice(stderr.indexOf('# app-config.yaml'));
  const [config, entityText] = printed.split(/^(?=# catalog-info\.yaml)/m);
  const { kubernetes } = YAML.parse(config);
  const entity = YAML.parse(entityText);
  const [cluster] = kubernetes.clusterLocatorMethods[0].clusters;
  assert.equal(cluster.url, `http://127.0.0.1:${port}`, 'the port asked for');
  assert.equal(cluster.skipMetricsLookup, true);
  // The token is asked for.
  const anonymous = await fetch(`${cluster.url}/api/v1/pods`);
  assert.equal(anonymous.status, 401);

  const backend = await startLiveBackend(null, {
    clusters: kubernetes.clusterLocatorMethods[0].clusters,
    entities: [{ ...entity, metadata: { namespace: 'default', ...entity.metadata } }],
  });
  t.after(() => backend.stop());
  const answer = await until(
    async () => {
      const res = await postEntity(backend.url, 'mock-user-token', entity);
      const body = await res.json();
      const pods = body.items?.[0]?.resources.find((r) => r.type === 'pods')?.resources ?? [];
      return res.headers.get(LIVE_HEADER) === '1' && pods.length > 0 && { body, pods };
    },
    { ms: 20_000, what: "a live answer of the entity's pods" },
  );
  assert.deepEqual(answer.body.items[0].errors, []);
  assert.ok(answer.pods.every((p) => p.metadata.labels['backstage.io/kubernetes-id'] === 'shop'));
});
