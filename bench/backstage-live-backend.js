'use strict';
// The live benchmark's backend (bench/backstage-live.js), in its own process so that its CPU is
// its own: the real Kubernetes and Signals backend plugins (the recipe of
// testbed/live-helpers.js), with kube-watch-native-backstage (`live`) or without it (`stock`),
// over the benchmark's six clusters (bench/backstage-clusters.js). It counts the signals the
// module publishes. With `viewers`, every cluster takes the viewer's own credential (oidc, with
// the clusters' token as serviceAccountToken: bench/backstage-common.js clusterConfigs).
//
// argv: <variant> <entities> <clusters JSON from backstage-clusters.js's info> [viewers]
// IPC: → { type: 'ready', port }; { cmd: 'signals', id } → { id, signals }; { cmd: 'stop' }

const { startLiveBackend } = require('../testbed/live-helpers');
const { entities: benchEntities, clusterConfigs } = require('./backstage-common');

const [variant, entityCount, infoJson, viewers] = process.argv.slice(2);
const info = JSON.parse(infoJson);

const entities = benchEntities(Number(entityCount));

async function main() {
  const backend = await startLiveBackend(null, {
    native: variant === 'live',
    entities,
    objectTypes: null,
    clusters: clusterConfigs(info, { viewers: viewers === 'viewers' }),
  });
  // The module publishes through the Kubernetes plugin's signals service, this very object.
  let signals = 0;
  const { publish } = backend.signals;
  backend.signals.publish = function (...args) {
    signals += 1;
    return publish.apply(this, args);
  };
  process.on('message', async (msg) => {
    if (msg.cmd === 'signals') process.send({ id: msg.id, signals });
    else if (msg.cmd === 'stop') {
      await backend.stop();
      process.exit(0);
    }
  });
  process.send({ type: 'ready', port: backend.port });
}

// Dies with its parent.
process.on('disconnect', () => process.exit(0));
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
