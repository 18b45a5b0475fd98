'use strict';
// `npm run bench:fleet`'s clusters (bench/clusters/index.js fleet): simulated API servers (sim/,
// HTTPS with h2), each its own store and resourceVersion sequence, in one process. Two shapes:
//   - `{ legacy: true, clusters: [index…], namespaces, perNamespace }` (the per-namespace runs):
//     `perNamespace` ConfigMaps in each of `namespaces` namespaces;
//   - `{ clusters: [global index…], types, objects, namespaces, bytes, incompressible }` (the full
//     fleet, maybe over several processes): per cluster, `objects` objects of each of the first
//     `types` types of testbed/fleet-objects.js over `namespaces` namespaces, serialised once as
//     stored (sim/text.js), the setup's garbage collected before any sync (see start()).
// Ready: { urls, jsonBytes, strippedBytes, objects }. Commands:
//   { cmd: 'changes', count, perSecond } → { changed } once `count` objects were modified,
//       round-robin over this process's clusters, then types (or namespaces), then objects; a
//       full-fleet change stamps the annotations `fleet.kube-watch.dev/round` (a counter) and
//       `…/sent` (Date.now()), which survive `strip` and metadataOnly
//   { cmd: 'outage', cluster, how } → {}: 'stop': the cluster stops listening and drops its
//       connections (its store goes on changing, as a partitioned API server's); 'throttle': every
//       list and watch is answered 429 with Retry-After, the open watches cut
//   { cmd: 'restore', cluster } → {}: the cluster serves again, on the same port
//   { cmd: 'state', clusters } → { counts: { [cluster]: { [plural]: n } }, digests }: digests of
//       the clusters asked for, as bench/fleet-worker.js computes them

const { createSimulator } = require('../../packages/kube-watch-native/sim');
const { textBytes } = require('../../packages/kube-watch-native/sim/text');
const { configMap, fleetObject, strippedBytes, digest, TYPES } = require('../../testbed/fleet-objects');

const ROUND = 'fleet.kube-watch.dev/round';
const SENT = 'fleet.kube-watch.dev/sent';

/** ConfigMaps' data in the per-namespace runs. */
const DATA_BYTES = 600;

/** The simulator of one cluster. */
const simulator = () =>
  createSimulator({
    ...{ tls: true, http2: true, token: 'fleet-token', maxConcurrentStreams: 1000 },
    // A full fleet's changes to a stopped cluster must still replay when it comes back.
    historyLimit: 10000,
  });

/** The full fleet's objects, in the order the changes walk them: `[typeIndex][i]` → id. */
const objectIds = (config) =>
  TYPES.slice(0, config.types).map((type) =>
    Array.from({ length: config.objects }, (_, i) => ({
      ns: `ns-${i % config.namespaces}`,
      name: `${type.plural.slice(0, 12)}-${i}`,
    })),
  );

async function start(config) {
  const sims = [];
  let jsonBytes = 0;
  let stripped = 0;
  let objects = 0;
  const ids = config.legacy ? null : objectIds(config);
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

  const commands = {
    // Every 10 ms, as many changes as are due by now at `perSecond` (fractions carry over).
    changes: ({ count, perSecond }) =>
      new Promise((resolve) => {
        const started = performance.now();
        let done = 0;
        const timer = setInterval(() => {
          const due = Math.min(count, Math.floor(((performance.now() - started) / 1000) * perSecond));
          for (; done < due; done++) change(done);
          if (done >= count) (clearInterval(timer), resolve({ changed: done }));
        }, 10);
      }),
    outage({ cluster, how }) {
      const sim = sims[local(cluster)];
      if (how === 'stop') {
        down.set(cluster, sim.port);
        sim.server.close();
        sim.destroySockets();
      } else {
        sim.failNext(100000, 429, 2);
        sim.cutWatches();
      }
      return {};
    },
    async restore({ cluster }) {
      const sim = sims[local(cluster)];
      if (!down.has(cluster)) return ((sim.failures.length = 0), {});
      const port = down.get(cluster);
      down.delete(cluster);
      await new Promise((resolve) => sim.server.listen(port, '127.0.0.1', resolve));
      return {};
    },
    state({ clusters }) {
      const counts = {};
      const digests = {};
      config.clusters.forEach((cluster, k) => {
        counts[cluster] = {};
        for (let t = 0; t < config.types; t++) {
          const items = sims[k].store.snapshot(TYPES[t].key);
          counts[cluster][TYPES[t].plural] = items.length;
          if (clusters.includes(cluster)) (digests[cluster] ??= {})[TYPES[t].plural] = digest(items);
        }
      });
      return { counts, digests };
    },
  };
  // The setup's garbage collected now, so that no full collection of it (which marks every
  // stored object) falls in the sync the benchmark times (bench/fleet-full.js passes --expose-gc).
  globalThis.gc?.();
  return {
    ready: { urls: sims.map((s) => s.url), jsonBytes, strippedBytes: stripped, objects },
    commands,
    stop: () => Promise.all(sims.map((s) => s.close())),
  };
}

module.exports = { start };
