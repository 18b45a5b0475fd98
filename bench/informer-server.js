'use strict';
// The informer benchmark's server: the project's simulated API server (sim/) in its own process
// (forked by bench/informer.js), so that none of its work is billed to the client measured.
// It holds `count` medium pods (bench/pods.js, ~9 KiB of JSON each) in namespace `bench` and
// serves the paginated list (`limit`/`continue`), the streaming list and the watch to every
// client alike. HTTPS with HTTP/2 offered by ALPN, as kube-apiserver does (client-node speaks
// HTTP/1.1, the native client h2).
//
// IPC (parent → server, each answered with the same `id`):
//   { cmd: 'info' }     → { url, jsonBytes, count }: the JSON bytes of the objects as listed
//   { cmd: 'relist', fraction } → { changed }: ends every watch cleanly, changes `fraction` of
//                         the pods (one annotation) and compacts the history, all in one turn
//                         of the event loop, so that every client's resumed watch is answered
//                         410 Expired and it has to list again; `changed` are the names.
//   { cmd: 'stop' }

const { createSimulator } = require('../packages/kube-watch-native/sim');
const { pods } = require('./pods');

const count = Number(process.argv[2] ?? 10000);

async function main() {
  const sim = await createSimulator({ tls: true, http2: true, token: 'bench-token' });
  // Names carry random suffixes; make sure no two collide.
  const all = pods('medium', count, 7);
  const names = new Set();
  for (const p of all) {
    if (names.has(p.metadata.name)) p.metadata.name += `-${names.size}`;
    names.add(p.metadata.name);
    delete p.metadata.resourceVersion;
    sim.create('pods', p);
  }
  let round = 0;
  const jsonBytes = () => {
    let n = 0;
    for (const o of sim.list('pods', { namespace: 'bench' })) n += Buffer.byteLength(JSON.stringify(o));
    return n;
  };
  const reply = (msg) => process.connected && process.send(msg);
  process.on('message', (msg) => {
    switch (msg.cmd) {
      case 'info':
        reply({ id: msg.id, url: sim.url, jsonBytes: jsonBytes(), count });
        break;
      case 'relist': {
        round++;
        const every = Math.round(1 / msg.fraction);
        const changed = [];
        sim.endWatches();
        all.forEach((p, i) => {
          if (i % every !== 0) return;
          sim.patch('pods', 'bench', p.metadata.name, (o) => {
            o.metadata.annotations['bench.example.com/round'] = String(round);
          });
          changed.push(p.metadata.name);
        });
        sim.compact();
        reply({ id: msg.id, changed });
        break;
      }
      case 'stop':
        sim.close();
        process.exit(0);
        break;
      default:
        reply({ id: msg.id, error: `unknown command ${msg.cmd}` });
    }
  });
  reply({ type: 'ready' });
}

process.on('disconnect', () => process.exit(0));
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
