'use strict';
// What the live logs page's events poll costs a backend (issue 50): VIEWERS viewers of an entity
// of PODS pods, each page asking each pod's events once a second through the Kubernetes plugin's
// proxy (`…/events?fieldSelector=involvedObject.name=<pod>`), for SECONDS. The backend (a child,
// the module's or the stock proxy) answers; its main-thread CPU per poll and the events requests
// that reached the API server. Run: node bench/investigations/events-poll-cost.js
// [VIEWERS=100 PODS=3 SECONDS=20]
const { spawn } = require('node:child_process');
const { createSimulator, certs } = require('kube-watch-native/sim');
const { TOKEN } = require('../../testbed/live-helpers');
const { sleep } = require('../../testbed/wait');
const { threadCpuNs } = require('../../testbed/proc');

const [VIEWERS, PODS, SECONDS] = ['VIEWERS', 'PODS', 'SECONDS'].map((k, i) =>
  Number(process.env[k] ?? [100, 3, 20][i]),
);

async function run(sim, native) {
  const cluster = { name: 'sim', url: sim.url, authProvider: 'serviceAccount', serviceAccountToken: TOKEN };
  const clusters = JSON.stringify([{ ...cluster, caData: Buffer.from(certs.ca).toString('base64') }]);
  const script = `require('./testbed/live-helpers').startLiveBackend(undefined, { clusters: ${clusters}, native: ${native} })
    .then((backend) => process.send(backend.port));`;
  const child = spawn(process.execPath, ['-e', script], {
    cwd: `${__dirname}/../..`,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise((resolve) => child.once('message', resolve));
  const ask = (pod) =>
    fetch(
      `http://127.0.0.1:${port}/api/kubernetes/proxy/api/v1/namespaces/default/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${pod}`)}`,
      { headers: { authorization: 'Bearer mock-user-token', 'backstage-kubernetes-cluster': 'sim' } },
    ).then((res) => res.json());
  const pods = Array.from({ length: PODS }, (_, i) => `pod-${i}`);
  // Warm: the module's informer listed (a second round costs the API server nothing).
  for (let i = 0; i < 20; i++) (await Promise.all(pods.map(ask)), await sleep(250));
  const events = () => sim.requests.filter((r) => r.path.endsWith('/events')).length;
  const [before, cpu0, start] = [events(), threadCpuNs(child.pid), Date.now()];
  let [polls, wrong] = [0, 0];
  // Each viewer: a round of its pods' polls, a second after the last began (the page's pace).
  await Promise.all(
    Array.from({ length: VIEWERS }, async (_, v) => {
      await sleep((1000 * v) / VIEWERS);
      while (Date.now() - start < SECONDS * 1000) {
        const began = Date.now();
        for (const answer of await Promise.all(pods.map(ask))) {
          polls += 1;
          if (answer.items?.length !== 5) wrong += 1;
        }
        await sleep(Math.max(0, 1000 - (Date.now() - began)));
      }
    }),
  );
  const [cpu, upstream] = [threadCpuNs(child.pid) - cpu0, events() - before];
  child.kill();
  const perPoll = (cpu / polls / 1000).toFixed(0);
  const share = ((cpu / 1e9 / SECONDS) * 100).toFixed(1);
  console.log(
    `${native ? 'module' : 'stock '}: ${polls} polls (${wrong} not the 5 events), ${upstream} events requests to the API server; main thread ${perPoll} µs a poll, ${share} % of a core`,
  );
}

(async () => {
  const sim = await createSimulator({ tls: true, token: TOKEN });
  for (let p = 0; p < PODS; p++) {
    const name = `pod-${p}`;
    sim.create('pods', {
      metadata: { name, namespace: 'default' },
      spec: { containers: [{ name: 'main' }] },
    });
    for (let n = 0; n < 5; n++) {
      sim.create('events', {
        metadata: { name: `${name}.${n}`, namespace: 'default' },
        involvedObject: { kind: 'Pod', namespace: 'default', name, uid: `uid-${name}` },
        reason: 'BackOff',
        message: `Back-off restarting failed container main in pod ${name}`,
        type: 'Warning',
        count: n + 1,
      });
    }
  }
  for (const native of [true, false, true, false]) await run(sim, native);
  await sim.close();
})().catch((error) => (console.error(error), process.exit(1)));
