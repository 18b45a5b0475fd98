'use strict';
// The fleet benchmark's servers: `clusters` simulated API servers (sim/, HTTPS with h2) in this
// one process, forked by bench/fleet.js so that none of their work is billed to the client.
// Each holds `perNamespace` ConfigMaps in each of `namespaces` namespaces (bench/fleet-objects.js
// shapes them: managedFields and a last-applied annotation, as a real API server writes them).
//
// IPC (parent → servers, each answered with the same `id`):
//   { cmd: 'info' }                        → { urls, jsonBytes }
//   { cmd: 'changes', count, perSecond }   → { changed } once `count` ConfigMaps were modified,
//                                            spread round-robin over clusters and namespaces
//   { cmd: 'stop' }

const { createSimulator } = require('../sim');
const { configMap } = require('./fleet-objects');

const [clusters, namespaces, perNamespace] = process.argv.slice(2, 5).map(Number);
const DATA_BYTES = Number(process.argv[5] ?? 600);

async function main() {
  const sims = [];
  let jsonBytes = 0;
  for (let c = 0; c < clusters; c++) {
    const sim = await createSimulator({
      tls: true,
      http2: true,
      token: 'fleet-token',
      maxConcurrentStreams: 1000,
    });
    for (let n = 0; n < namespaces; n++) {
      for (let i = 0; i < perNamespace; i++) {
        const stored = sim.create('configmaps', configMap(`ns-${n}`, `cm-${i}`, DATA_BYTES));
        jsonBytes += Buffer.byteLength(JSON.stringify(stored));
      }
    }
    sims.push(sim);
  }
  const reply = (msg) => process.connected && process.send(msg);
  let round = 0;
  process.on('message', (msg) => {
    switch (msg.cmd) {
      case 'info':
        reply({ id: msg.id, urls: sims.map((s) => s.url), jsonBytes });
        break;
      case 'changes': {
        // Ticks of 10 ms; each modifies its share of the changes, the next target in turn.
        const perTick = Math.max(1, Math.round(msg.perSecond / 100));
        let done = 0;
        let next = 0;
        const timer = setInterval(() => {
          for (let k = 0; k < perTick && done < msg.count; k++, done++, next++) {
            const sim = sims[next % clusters];
            const target = Math.floor(next / clusters);
            const ns = `ns-${target % namespaces}`;
            const name = `cm-${Math.floor(target / namespaces) % perNamespace}`;
            round++;
            sim.patch('configmaps', ns, name, (o) => {
              o.data.round = String(round);
            });
          }
          if (done >= msg.count) {
            clearInterval(timer);
            reply({ id: msg.id, changed: done });
          }
        }, 10);
        break;
      }
      case 'stop':
        Promise.all(sims.map((s) => s.close())).then(() => process.exit(0));
        break;
      default:
        break;
    }
  });
  reply({ ready: true });
}

process.on('disconnect', () => process.exit(0));
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
