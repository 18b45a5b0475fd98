'use strict';
// `npm run bench:informer`'s cluster (bench/clusters/index.js informer): the project's simulated
// API server (sim/) holding `count` medium pods (bench/pods.js, ~9 KiB of JSON each) in namespace
// `bench`; it serves the paginated list (`limit`/`continue`), the streaming list and the watch to
// every client alike, over HTTPS with HTTP/2 offered by ALPN, as kube-apiserver does (client-node
// speaks HTTP/1.1, the native client h2).
//
// Ready: { url, jsonBytes, count }, the JSON bytes of the objects as listed. Commands:
//   { cmd: 'relist', fraction } → { changed }: ends every watch cleanly, changes `fraction` of
//       the pods (one annotation) and compacts the history, all in one turn of the event loop,
//       so that every client's resumed watch is answered 410 Expired and it has to list again;
//       `changed` are the names.

const { createSimulator } = require('../../packages/kube-watch-native/sim');
const { pods } = require('../pods');

async function start({ count }) {
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
  let jsonBytes = 0;
  for (const o of sim.list('pods', { namespace: 'bench' })) jsonBytes += Buffer.byteLength(JSON.stringify(o));
  let round = 0;
  const relist = ({ fraction }) => {
    round++;
    const every = Math.round(1 / fraction);
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
    return { changed };
  };
  return { ready: { url: sim.url, jsonBytes, count }, commands: { relist }, stop: () => sim.close() };
}

module.exports = { start };
