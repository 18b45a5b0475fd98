'use strict';
// The fleet benchmark's servers: simulated API servers (sim/, HTTPS with h2), each its own store
// and resourceVersion sequence, in this process, forked by bench/fleet.js so that none of their
// work is billed to the client. Two shapes:
//   - `fleet-server.js <clusters> <namespaces> <perNamespace> [dataBytes]` (the per-namespace
//     runs): `perNamespace` ConfigMaps in each of `namespaces` namespaces;
//   - `fleet-server.js --json=<config>` with config `{ clusters: [global index…], types,
//     objects, namespaces, bytes }` (the full fleet, possibly spread over several of these
//     processes): per cluster, `objects` objects of each of the first `types` types of
//     bench/fleet-objects.js, spread over `namespaces` namespaces, the CRDs among them defined
//     with defineResource.
// bench/fleet-objects.js shapes the objects: managedFields and a last-applied annotation, as a
// real API server and `kubectl apply` leave them. The full fleet's objects are loaded with
// Store#load (taken over, not copied) and serialised once as they are stored (sim/text.js);
// once they are, the setup's garbage is collected (`gc()`, when run with --expose-gc as
// bench/fleet-full.js does), so that the sync the benchmark times pays for neither.
//
// IPC (parent → servers, each answered with the same `id`):
//   { cmd: 'info' }                         → { urls, jsonBytes, strippedBytes, objects }
//   { cmd: 'changes', count, perSecond }    → { changed } once `count` objects were modified,
//       spread round-robin over this process's clusters, then types (or namespaces), then
//       objects. A full-fleet change stamps `metadata.annotations['fleet.kube-watch.dev/round']`
//       (a counter) and `…/sent` (Date.now() in ms), which survive `strip` and metadataOnly.
//   { cmd: 'outage', cluster, how }         → {} ; `how` 'stop': the cluster stops listening and
//       drops its connections (connection refused; its store goes on changing, as a partitioned
//       API server's); 'throttle': every list and watch is answered 429 with Retry-After, and
//       the watches open are cut so that each must ask again
//   { cmd: 'restore', cluster }             → {} ; the cluster serves again, on the same port
//   { cmd: 'state', clusters: [index…] }    → { counts: { [cluster]: { [plural]: n } },
//       digests: { [cluster]: { [plural]: sha1 } } } (digests of the clusters asked for: of
//       the sorted `namespace/name=resourceVersion` lines, as bench/fleet-worker.js computes them)
//   { cmd: 'stop' }

const crypto = require('node:crypto');
const { createSimulator } = require('../packages/kube-watch-native/sim');
const { textBytes } = require('../packages/kube-watch-native/sim/text');
const { configMap, fleetObject, strippedBytes, TYPES } = require('./fleet-objects');

const ROUND = 'fleet.kube-watch.dev/round';
const SENT = 'fleet.kube-watch.dev/sent';

const jsonArg = process.argv.find((a) => a.startsWith('--json='));
const config = jsonArg
  ? JSON.parse(jsonArg.slice('--json='.length))
  : (() => {
      const [clusters, namespaces, perNamespace] = process.argv.slice(2, 5).map(Number);
      return { legacy: true, clusters: [...Array(clusters).keys()], namespaces, perNamespace };
    })();
const DATA_BYTES = Number(process.argv[5] ?? 600);

/** The simulator of one cluster, started on `port` (0: any). */
function simulator(port = 0) {
  return createSimulator({
    tls: true,
    http2: true,
    token: 'fleet-token',
    maxConcurrentStreams: 1000,
    port,
    // A full fleet's changes to a stopped cluster must still replay when it comes back.
    historyLimit: 10000,
  });
}

/** The full fleet's objects, in the order the changes walk them: `[typeIndex][i]` → id. */
function objectIds() {
  const ids = [];
  for (let t = 0; t < config.types; t++) {
    const type = TYPES[t];
    ids.push(
      Array.from({ length: config.objects }, (_, i) => ({
        ns: `ns-${i % config.namespaces}`,
        name: `${type.plural.slice(0, 12)}-${i}`,
      })),
    );
  }
  return ids;
}

async function main() {
  const sims = [];
  let jsonBytes = 0;
  let stripped = 0;
  let objects = 0;
  const ids = config.legacy ? null : objectIds();
  for (const _ of config.clusters) {
    const sim = await simulator();
    if (config.legacy) {
      for (let n = 0; n < config.namespaces; n++) {
        for (let i = 0; i < config.perNamespace; i++) {
          const stored = sim.create('configmaps', configMap(`ns-${n}`, `cm-${i}`, DATA_BYTES));
          jsonBytes += Buffer.byteLength(JSON.stringify(stored));
          stripped += strippedBytes(stored);
          objects++;
        }
      }
    } else {
      for (let t = 0; t < config.types; t++) {
        const type = TYPES[t];
        if (type.crd) sim.defineResource(type.key, { kind: type.kind, namespaced: true });
        else if (!sim.store.resource(type.key)) sim.defineResource(type.key, { kind: type.kind });
        // Loaded, not created one by one: the store takes the objects over instead of copying
        // each twice, and serialises each once now (sim/text.js), before any sync starts.
        const loaded = sim.store.load(
          type.key,
          ids[t].map(({ ns, name }, i) =>
            fleetObject(type, ns, name, i, config.bytes, config.incompressible),
          ),
        );
        for (const stored of loaded) {
          jsonBytes += textBytes(stored);
          stripped += strippedBytes(stored);
          objects++;
        }
      }
    }
    sims.push(sim);
  }
  const local = (cluster) => config.clusters.indexOf(cluster);
  const reply = (msg) => process.connected && process.send(msg);
  const down = new Map();
  let round = 0;

  /** Modifies the `next`-th object of this process's walk. */
  const change = (next) => {
    const sim = sims[next % sims.length];
    const target = Math.floor(next / sims.length);
    round++;
    if (config.legacy) {
      const ns = `ns-${target % config.namespaces}`;
      const name = `cm-${Math.floor(target / config.namespaces) % config.perNamespace}`;
      sim.patch('configmaps', ns, name, (o) => {
        o.data.round = String(round);
      });
      return;
    }
    const t = target % config.types;
    const { ns, name } = ids[t][Math.floor(target / config.types) % config.objects];
    sim.patch(TYPES[t].key, ns, name, (o) => {
      o.metadata.annotations[ROUND] = String(round);
      o.metadata.annotations[SENT] = String(Date.now());
    });
  };

  process.on('message', (msg) => {
    switch (msg.cmd) {
      case 'info':
        reply({ id: msg.id, urls: sims.map((s) => s.url), jsonBytes, strippedBytes: stripped, objects });
        break;
      case 'changes': {
        // Every 10 ms, as many changes as are due by now at `perSecond` (fractions carry over).
        const started = performance.now();
        let done = 0;
        const tick = () => {
          const due = Math.min(msg.count, Math.floor(((performance.now() - started) / 1000) * msg.perSecond));
          for (; done < due; done++) change(done);
          if (done >= msg.count) {
            clearInterval(timer);
            reply({ id: msg.id, changed: done });
          }
        };
        const timer = setInterval(tick, 10);
        break;
      }
      case 'outage': {
        const sim = sims[local(msg.cluster)];
        if (msg.how === 'stop') {
          const { port } = sim;
          down.set(msg.cluster, port);
          sim.server.close();
          sim.destroySockets();
        } else {
          sim.failNext(100000, 429, 2);
          sim.cutWatches();
        }
        reply({ id: msg.id });
        break;
      }
      case 'restore': {
        const sim = sims[local(msg.cluster)];
        if (down.has(msg.cluster)) {
          const port = down.get(msg.cluster);
          down.delete(msg.cluster);
          sim.server.listen(port, '127.0.0.1', () => reply({ id: msg.id }));
        } else {
          sim.failures.length = 0;
          reply({ id: msg.id });
        }
        break;
      }
      case 'state': {
        const counts = {};
        const digests = {};
        config.clusters.forEach((cluster, k) => {
          counts[cluster] = {};
          for (let t = 0; t < config.types; t++) {
            const items = sims[k].store.snapshot(TYPES[t].key);
            counts[cluster][TYPES[t].plural] = items.length;
            if (msg.clusters.includes(cluster)) {
              digests[cluster] ??= {};
              digests[cluster][TYPES[t].plural] = digest(items);
            }
          }
        });
        reply({ id: msg.id, counts, digests });
        break;
      }
      case 'stop':
        // Bounded: a connection that will not close must not keep the run waiting.
        setTimeout(() => process.exit(0), 5000).unref();
        Promise.all(sims.map((s) => s.close())).then(() => process.exit(0));
        break;
      default:
        break;
    }
  });
  // The setup's garbage collected now, so that no full collection of it (which marks every
  // stored object) falls in the sync the benchmark times (bench/fleet-full.js passes --expose-gc).
  globalThis.gc?.();
  reply({ ready: true });
}

/** sha1 of the sorted `namespace/name=resourceVersion` lines of `objects`. */
function digest(objects) {
  const lines = objects.map(
    (o) => `${o.metadata.namespace}/${o.metadata.name}=${o.metadata.resourceVersion}`,
  );
  return crypto.createHash('sha1').update(lines.sort().join('\n')).digest('hex');
}

process.on('disconnect', () => process.exit(0));
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
