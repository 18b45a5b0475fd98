'use strict';
// What the live logs page's events cost a backend (issue 50): VIEWERS users' pages of an entity
// of PODS pods, whose events change CHANGES times a second, for SECONDS; each page asks each
// pod's events through the Kubernetes plugin's proxy (`…/events?fieldSelector=
// involvedObject.name=<pod>`), once a second (polled), or again on each signal of the module
// (pushed: the page names its entity). The backend (a child: the module's, pushed or polled, or
// the stock proxy) answers; its main-thread CPU and the events requests that reached the API
// server. Run: node bench/investigations/events-poll-cost.js [VIEWERS=100 PODS=3 SECONDS=20 CHANGES=1]
const { spawn } = require('node:child_process');
const { createSimulator, certs } = require('kube-watch-native/sim');
const { mockCredentials } = require('@backstage/backend-test-utils');
const { TOKEN, connectSignals } = require('../../testbed/live-helpers');
const { ENTITY_HEADER, LIVE_HEADER, channelOf, eventsViewOf } = require('kube-watch-native-protocol');
const { sleep } = require('../../testbed/wait');
const { threadCpuNs } = require('../../testbed/proc');

const [VIEWERS, PODS, SECONDS, CHANGES] = ['VIEWERS', 'PODS', 'SECONDS', 'CHANGES'].map((k, i) =>
  Number(process.env[k] ?? [100, 3, 20, 1][i]),
);
const ENTITY = 'component:default/crash-looper';
/** The events made so far, over every run. */
let made = 0;

/**
 * One backend (`native`: the module's, else the stock proxy) answering VIEWERS pages for SECONDS,
 * each its own user, while the pods' events change CHANGES times a second (round the pods): each
 * page polls every second, or (`push`) asks again on each signal of its entity's events channel
 * (the module follows answers of a page that names its entity, ENTITY_HEADER).
 */
async function run(sim, native, push) {
  const cluster = { name: 'sim', url: sim.url, authProvider: 'serviceAccount', serviceAccountToken: TOKEN };
  const clusters = JSON.stringify([{ ...cluster, caData: Buffer.from(certs.ca).toString('base64') }]);
  const script = `require('./testbed/live-helpers').startLiveBackend(undefined, { clusters: ${clusters}, native: ${native} })
    .then((backend) => process.send(backend.port));`;
  const child = spawn(process.execPath, ['-e', script], {
    cwd: `${__dirname}/../..`,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise((resolve) => child.once('message', resolve));
  const tokens = Array.from({ length: VIEWERS }, (_, v) =>
    mockCredentials.user.token(`user:default/viewer-${v}`),
  );
  let asked = 0;
  const ask = (pod, token) => {
    asked += 1;
    return fetch(
      `http://127.0.0.1:${port}/api/kubernetes/proxy/api/v1/namespaces/default/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${pod}`)}`,
      {
        headers: {
          authorization: `Bearer ${token}`,
          'backstage-kubernetes-cluster': 'sim',
          ...(push && { [ENTITY_HEADER]: ENTITY }),
        },
      },
    ).then(async (res) => ({ body: await res.json(), live: res.headers.get(LIVE_HEADER) === '1' }));
  };
  const pods = Array.from({ length: PODS }, (_, i) => `pod-${i}`);
  // Warm: the module's informer listed (a second round costs the API server nothing).
  for (let i = 0; i < 20; i++) (await Promise.all(pods.map((pod) => ask(pod, tokens[0]))), await sleep(250));
  const sockets = push
    ? await Promise.all(tokens.map((token) => connectSignals(port, token, channelOf(eventsViewOf(ENTITY)))))
    : [];
  let notLive = 0;
  const round = async (token) => {
    for (const answer of await Promise.all(pods.map((pod) => ask(pod, token))))
      if (!answer.live) notLive += 1;
  };
  if (push) {
    await Promise.all(tokens.map(round));
    sockets.forEach(({ ws }, v) => ws.on('message', () => void round(tokens[v])));
    await sleep(500);
  }
  const events = () => sim.requests.filter((r) => r.path.endsWith('/events')).length;
  const [before, cpu0, asked0, start] = [events(), threadCpuNs(child.pid), asked, Date.now()];
  notLive = 0;
  let changes = 0;
  const changing = setInterval(() => {
    changes += 1;
    made += 1; // a new name in every run
    sim.create('events', eventOf(pods[made % PODS], 100 + made));
  }, 1000 / CHANGES);
  if (push) await sleep(SECONDS * 1000);
  else {
    // Each viewer: a round of its pods' polls, a second after the last began (the page's pace).
    await Promise.all(
      tokens.map(async (token, v) => {
        await sleep((1000 * v) / VIEWERS);
        while (Date.now() - start < SECONDS * 1000) {
          const began = Date.now();
          await round(token);
          await sleep(Math.max(0, 1000 - (Date.now() - began)));
        }
      }),
    );
  }
  clearInterval(changing);
  const [cpu, upstream, requests] = [threadCpuNs(child.pid) - cpu0, events() - before, asked - asked0];
  for (const { ws } of sockets) ws.terminate();
  child.kill();
  const share = ((cpu / 1e9 / SECONDS) * 100).toFixed(1);
  const mode = `${native ? 'module' : 'stock '} ${push ? 'pushed' : 'polled'}`;
  console.log(
    `${mode}: ${requests} requests (${push ? `${notLive} not live` : 'polls'}) for ${changes} changes, ${upstream} events requests to the API server; main thread ${share} % of a core, ${(cpu / requests / 1000).toFixed(0)} µs a request`,
  );
}

/** The `n`th event of `pod`. */
const eventOf = (pod, n) => ({
  metadata: { name: `${pod}.${n}`, namespace: 'default' },
  involvedObject: { kind: 'Pod', namespace: 'default', name: pod, uid: `uid-${pod}` },
  reason: 'BackOff',
  message: `Back-off restarting failed container main in pod ${pod}`,
  type: 'Warning',
  count: n + 1,
});

(async () => {
  const sim = await createSimulator({ tls: true, token: TOKEN });
  for (let p = 0; p < PODS; p++) {
    const name = `pod-${p}`;
    sim.create('pods', {
      metadata: { name, namespace: 'default' },
      spec: { containers: [{ name: 'main' }] },
    });
    for (let n = 0; n < 5; n++) sim.create('events', eventOf(name, n));
  }
  for (let i = 0; i < 2; i++) {
    await run(sim, true, true);
    await run(sim, true, false);
    await run(sim, false, false);
  }
  await sim.close();
})().catch((error) => (console.error(error), process.exit(1)));
