'use strict';
// `npm run bench:backstage -- --bus [--replicas=2,3] [--users=100] [--entities=50] [--rate=100]
//   [--seconds=30] [--runs=1] [--json=file]`
//
// The events bus under load on several replicas (issue 37's shape, before the shared viewers): N
// backend replicas (testbed/replica-backend.js) on a throwaway PostgreSQL behind a round-robin
// balancer; `entities` entities with a pod each on one simulated cluster (in this process);
// `users` users, each with a signals WebSocket and 2 entities, loaded once through every replica.
// Then `rate` pod changes a second for `seconds`; every signal makes its user reload the entity
// as a tab does (one reload out, one queued; a signal id seen before is dropped). Measured per
// change and viewer: change → signal, change → the first answer that shows it (none within 10 s
// of the end: lost); bus rows (event_bus_events), signals and reloads a second; each replica's
// main-thread CPU and RSS. Loopback only; every child ends with this process.

const { once } = require('node:events');
const os = require('node:os');
const WebSocket = require('ws');
const { mockCredentials } = require('@backstage/backend-test-utils');
const { createSimulator } = require('../packages/kube-watch-native/sim');
const { TOKEN, pod } = require('../testbed/live-helpers');
const { startReplicas } = require('../testbed/replica-helpers');
const { failRun } = require('./children');
const { entityOf, eventsDatabase, measureRuns, reportTable } = require('./backstage-common');
const { machineBusySeconds, threadCpu, processCpu, rssBytes } = require('../testbed/proc');
const { options } = require('./options');
const { quantile, median } = require('./report/measurements');

const log = (...a) => console.error(...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const SEQ = 'bench.kube-watch-native/seq';
const DRAIN_MS = 10_000;
/** The module's default live.minInterval. */
const MIN_INTERVAL_MS = 250;

const channelOf = (name) => `kubernetes:component:default/${name}`;

/** The highest change number a tab answer shows for its entity's pod (-1: none). */
function seqOf(answer) {
  let seq = -1;
  for (const item of answer.items ?? []) {
    for (const group of item.resources ?? []) {
      if (group.type !== 'pods') continue;
      for (const p of group.resources) seq = Math.max(seq, Number(p.metadata?.annotations?.[SEQ] ?? -1));
    }
  }
  return seq;
}

/** `<name>P50` and `<name>P99` of each list of `lists` ({ name: ms[] }). */
const percentiles = (lists) =>
  Object.fromEntries(
    Object.entries(lists).flatMap(([k, xs]) => [0.5, 0.99].map((q) => [`${k}P${q * 100}`, quantile(xs, q)])),
  );

/** A user: a signals WebSocket on replica `index`, subscribed to its entities' channels. */
async function connectUser(balancer, index, token, names) {
  const ws = new WebSocket(`ws://127.0.0.1:${balancer.port}/api/signals?replica=${index}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  await once(ws, 'open');
  for (const name of names) ws.send(JSON.stringify({ action: 'subscribe', channel: channelOf(name) }));
  return ws;
}

async function measure(count, { users, entities, rate, seconds }) {
  const sim = await createSimulator({ tls: true, token: TOKEN, bookmarkIntervalMs: 60_000 });
  const names = Array.from({ length: entities }, (_, i) => `bus-${i}`);
  for (const name of names) sim.create('pods', pod(`${name}-1`, name));
  const cluster = await startReplicas(count, sim, {
    entities: names.map(entityOf),
    readyMs: 180_000,
  });
  const { balancer, replicas, postgres } = cluster;
  const db = eventsDatabase(postgres);
  const viewers = [];
  const sockets = [];
  try {
    // 100 users × 2 entities: each entity has users × 2 ÷ entities viewers.
    for (let u = 0; u < users; u++) {
      const token = mockCredentials.user.token(`user:default/bench-${u}`);
      const mine = [names[u % entities], names[(u + Math.floor(entities / 2)) % entities]];
      const ws = await connectUser(balancer, u % count, token, mine);
      sockets.push(ws);
      for (const name of mine) {
        const arrived = { signals: [], sentAt: [], answers: [], seen: new Set() };
        viewers.push({ user: u, token, name, ws, ...arrived, out: null, again: false });
      }
    }
    const byUserEntity = new Map(viewers.map((v) => [`${v.user}\n${v.name}`, v]));
    let reloads = 0;
    let failures = 0;
    let duplicates = 0;
    const load = async (v) => {
      const res = await fetch(`${balancer.url}/api/kubernetes/services/${v.name}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${v.token}` },
        body: JSON.stringify({ entity: entityOf(v.name) }),
      });
      const text = await res.text();
      reloads++;
      if (res.status !== 200) {
        failures++;
        return;
      }
      v.answers.push({ at: Date.now(), seq: seqOf(JSON.parse(text)) });
    };
    // A tab's reload: one out, one more queued behind it whatever the number of signals meanwhile.
    const reload = (v) => {
      if (v.out) {
        v.again = true;
        return;
      }
      v.out = load(v)
        .catch(() => failures++)
        .finally(() => {
          v.out = null;
          if (v.again) {
            v.again = false;
            reload(v);
          }
        });
    };
    for (const ws of sockets) {
      ws.on('message', (data) => {
        const at = Date.now();
        const { channel, message } = JSON.parse(String(data));
        const name = channel?.slice(channel.lastIndexOf('/') + 1);
        const v = byUserEntity.get(`${sockets.indexOf(ws)}\n${name}`);
        if (!v) return;
        // As the frontend: an id seen already is the same signal again (sent again by a replica
        // that could not know it arrived), nothing new.
        if (typeof message?.id === 'string') {
          if (v.seen.has(message.id)) {
            duplicates++;
            return;
          }
          v.seen.add(message.id);
        }
        v.signals.push(at);
        v.sentAt.push(message?.at ?? at);
        reload(v);
      });
    }
    // Every user known to every replica: one load of each of its entities through each.
    for (let round = 0; round < count; round++) {
      for (let i = 0; i < viewers.length; i += 20) await Promise.all(viewers.slice(i, i + 20).map(load));
    }
    log(`  ${count} replica(s): ${users} users, ${viewers.length} viewers loaded; settling`);
    await sleep(3000);
    for (const v of viewers) v.signals.length = v.sentAt.length = 0;
    const duplicates0 = duplicates;

    const rows0 = Number((await db('event_bus_events').max('id as id'))[0].id ?? 0);
    const pids = replicas.map((r) => r.pid);
    const cpu0 = pids.map((pid) => threadCpu(pid));
    const processCpu0 = pids.map((pid) => processCpu(pid));
    const busy0 = machineBusySeconds();
    const benchCpu0 = process.cpuUsage();
    const reloads0 = reloads;
    const changes = [];
    const started = Date.now();
    const total = Math.round(rate * seconds);
    for (let n = 0; n < total; n++) {
      const due = started + (n * 1000) / rate;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
      const name = names[n % entities];
      changes.push({ name, seq: n, at: Date.now() });
      sim.patch('pods', 'default', `${name}-1`, (p) => {
        p.metadata.annotations = { ...p.metadata.annotations, [SEQ]: String(n) };
      });
    }
    const elapsed = (Date.now() - started) / 1000;
    const cpu1 = pids.map((pid) => threadCpu(pid));
    const processCpu1 = pids.map((pid) => processCpu(pid));
    const busy = machineBusySeconds() - busy0;
    const benchCpu = process.cpuUsage(benchCpu0);
    const rss = pids.map((pid) => rssBytes(pid));
    const reloadsDuring = reloads - reloads0;
    // The last changes' signals and reloads.
    const drainUntil = Date.now() + DRAIN_MS;
    const lastOf = new Map(changes.map((c) => [c.name, c.seq]));
    while (Date.now() < drainUntil) {
      const behind = viewers.some((v) => (v.answers.at(-1)?.seq ?? -1) < lastOf.get(v.name) || v.out);
      if (!behind) break;
      await sleep(100);
    }
    const rows = Number((await db('event_bus_events').max('id as id'))[0].id ?? 0) - rows0;

    const toSignal = [];
    const toPublish = [];
    const onBus = [];
    const toAnswer = [];
    let lost = 0;
    const viewersOf = new Map();
    for (const v of viewers) viewersOf.set(v.name, [...(viewersOf.get(v.name) ?? []), v]);
    for (const c of changes) {
      for (const v of viewersOf.get(c.name)) {
        const i = v.signals.findIndex((at) => at >= c.at);
        if (i >= 0) {
          toSignal.push(v.signals[i] - c.at);
          toPublish.push(Math.max(0, v.sentAt[i] - c.at));
          onBus.push(v.signals[i] - v.sentAt[i]);
        }
        const answer = v.answers.find((a) => a.at >= c.at && a.seq >= c.seq);
        if (answer) toAnswer.push(answer.at - c.at);
        else if (++lost <= 10) {
          // Which, so that a loss can be followed into the replicas' logs.
          const last = v.answers.at(-1);
          const after = v.signals.filter((at) => at >= c.at).map((at) => `+${at - started}`);
          log(
            `  lost: user ${v.user}, ${c.name}, change ${c.seq} at +${c.at - started} ms; its last answer ` +
              `showed ${last?.seq} at +${(last?.at ?? started) - started} ms; signals after the change: ` +
              `${after.join(', ') || 'none'}`,
          );
        }
      }
    }
    const signals = viewers.reduce((n, v) => n + v.signals.length, 0);
    // The bound on bus rows: at most one per entity changed per minInterval (the module's
    // default, 250 ms); and, tighter, how many minIntervals of an entity held a change.
    const changed = new Set(changes.map((c) => c.name)).size;
    const windows = new Set(
      changes.map((c) => `${c.name}\n${Math.floor((c.at - started) / MIN_INTERVAL_MS)}`),
    );
    return {
      replicas: count,
      changes: changes.length,
      changesPerSecond: changes.length / elapsed,
      viewerChanges: toAnswer.length + lost,
      lost,
      ...percentiles({ signal: toSignal, publish: toPublish, bus: onBus, answer: toAnswer }),
      busRowsPerSecond: rows / elapsed,
      busBoundPerSecond: (changed * 1000) / MIN_INTERVAL_MS,
      changeWindowsPerSecond: windows.size / elapsed,
      signalsPerSecond: signals / elapsed,
      duplicates: duplicates - duplicates0,
      reloadsPerSecond: reloadsDuring / elapsed,
      failures,
      mainCpuPerMinute: median(cpu1.map((c, i) => ((c - cpu0[i]) * 60) / elapsed)),
      replicasCores: processCpu1.reduce((n, c, i) => n + c - processCpu0[i], 0) / elapsed,
      benchCores: (benchCpu.user + benchCpu.system) / 1e6 / elapsed,
      machineCores: busy / elapsed,
      rssMiB: median(rss) / 1048576,
    };
  } finally {
    for (const ws of sockets) ws.terminate();
    await db.destroy();
    await cluster.stop();
    await sim.close?.();
  }
}

const ROWS = [
  ['changes per second', 'changesPerSecond', 1],
  ['viewer-changes lost', 'lost', 0, 'goal 0'],
  ['change → signal p50 (ms)', 'signalP50'],
  ['change → signal p99 (ms)', 'signalP99', 0, 'goal ≤ 1000'],
  [
    'of which change → publish p50 / p99 (ms)',
    ['publishP50', 'publishP99'],
    0,
    "the replica's informer, claim, outbox",
  ],
  [
    'of which publish → WebSocket p50 / p99 (ms)',
    ['busP50', 'busP99'],
    0,
    "Backstage's events bus and Signals",
  ],
  ['change → answer p50 (ms)', 'answerP50'],
  ['change → answer p99 (ms)', 'answerP99'],
  ['bus rows per second', 'busRowsPerSecond', 1, 'goal ≤ the next row'],
  ['entities changed ÷ minInterval (250 ms), per second', 'busBoundPerSecond', 1, 'the bound'],
  ['minIntervals in which an entity changed, per second', 'changeWindowsPerSecond', 1],
  ['signals received per second', 'signalsPerSecond', 1],
  ['signals dropped as seen (an id received before)', 'duplicates', 0, 'sent again by a replica'],
  ['reloads per second', 'reloadsPerSecond', 1],
  ['reloads failed', 'failures'],
  ['main-thread CPU per replica (s/min), median', 'mainCpuPerMinute', 2],
  ['RSS per replica (MiB), median', 'rssMiB'],
  ['CPU cores busy: all replicas (processes)', 'replicasCores', 2],
  ['CPU cores busy: this bench (clients, simulator)', 'benchCores', 2],
  ['CPU cores busy: the whole machine', 'machineCores', 2, `of ${os.cpus().length}`],
];

async function main(argv) {
  const { opt, num, saveJson } = options(
    argv,
    /bus|replicas=[\d,]+|users=\d+|entities=\d+|rate=\d+|seconds=\d+|runs=\d+|json=.+/,
    'backstage-bus.js',
  );
  const counts = (opt('replicas') ?? '2,3').split(',').map(Number);
  const shape = {
    users: num('users', 100),
    entities: num('entities', 50),
    rate: num('rate', 100),
    seconds: num('seconds', 30),
  };
  const runCount = num('runs', 1);
  const runs = await measureRuns(
    runCount,
    (run) => (run % 2 === 0 ? counts : [...counts].reverse()),
    (count) => `${count} replicas, ${shape.users} users, ${shape.rate} changes/s, ${shape.seconds} s`,
    (count) => measure(count, shape),
  );
  console.log(
    [
      `## The events bus on ${counts.join(' and ')} replicas (issue 37's shape)`,
      '',
      `${shape.users} users with a signals WebSocket each, viewing 2 of ${shape.entities} entities, every user loaded through every replica; ${shape.rate} pod changes a second for ${shape.seconds} s; every signal reloads its entity (one reload out per tab). ${runCount} run(s), medians. Everything shares this machine.`,
      '',
      ...reportTable(
        ROWS,
        runs,
        counts.map((c) => [`${c} replicas`, c]),
      ),
    ].join('\n'),
  );
  saveJson({ shape, runs });
}

module.exports = { main };

if (require.main === module) main(process.argv.slice(2)).catch(failRun);
