#!/usr/bin/env node
'use strict';
// node bench/investigations/informer-fixed-cost.js [--informers=1000] [--runs=3] [--consumers] [--against=<dir>]
//                                   [--json=file]
//
// What one idle informer costs, whatever it caches: one simulated cluster (bench/fleet-server.js,
// its own process, HTTPS with h2, loopback only) holds one small ConfigMap in each of `informers`
// namespaces; a fresh worker process (`node --expose-gc`) opens one informer per namespace through
// one watcher. The first informer is opened and synced alone (the runtime's threads, TLS, the
// HTTP/2 connection and the addon's code are then paid for); after a GC the worker notes its
// figures, opens informers up to half of `informers`, waits for every one to sync and for a second,
// runs the GC and notes them again, then the same up to `informers`. The difference over the
// second half divided by its informers is the cost of one more informer (the first half's, also
// recorded, includes what grows once: V8's young generation sizing itself to the burst): RSS, the V8 heap (used and external), the allocator's bytes in use (glibc's
// mallinfo2, through the native snapshot's `memory` where the build has it) and every numeric field
// of that `memory` object. With --consumers every informer also has one consumer iterating it.
// With --against, every run also measures that build of the package (a directory with its
// index.js, lib/ and built addon, e.g. a worktree of another commit), interleaved, and the report
// gives both side by side. Figures are medians over `runs`.
// Bounded: each worker gives up after 120 s; the server dies with this process.

const { fork } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const v8 = require('node:v8');

const { runAsWorker, giveUpAfter, stderrWatcher } = require('../child');

if (runAsWorker(worker)) return;

const argv = process.argv.slice(2);
const opt = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
for (const a of argv) {
  if (!/^--(informers=\d+|runs=\d+|consumers|against=.+|json=.+)$/.test(a)) {
    console.error(`unknown option ${a}; see the header of bench/informer-fixed-cost.js`);
    process.exit(2);
  }
}
const INFORMERS = Number(opt('informers') ?? 1000);
const RUNS = Number(opt('runs') ?? 3);
const CONSUMERS = argv.includes('--consumers');
const PACKAGES = [['this', path.join(__dirname, '..', '..', 'packages', 'kube-watch-native')]];
if (opt('against')) PACKAGES.push(['against', path.resolve(opt('against'))]);
if (INFORMERS < 2) {
  console.error('--informers must be at least 2');
  process.exit(2);
}

const { track, cluster } = require('../children');

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** The server: one cluster, `INFORMERS` namespaces of one ConfigMap each. */
async function startServer() {
  const server = cluster('fleet', { legacy: true, clusters: [0], namespaces: INFORMERS, perNamespace: 1 });
  const { urls } = await server.ready;
  return { url: urls[0], stop: server.stop };
}

function measure(pkg, url) {
  return new Promise((resolve, reject) => {
    const child = track(
      fork(
        __filename,
        ['--worker', JSON.stringify({ pkg, url, informers: INFORMERS, consumers: CONSUMERS })],
        {
          execArgv: ['--expose-gc'],
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        },
      ),
    );
    let out = null;
    child.on('message', (msg) => (out = msg.result));
    child.on('exit', (code) => (out ? resolve(out) : reject(new Error(`worker exited (${code})`))));
  });
}

async function main() {
  const server = await startServer();
  const results = new Map(PACKAGES.map(([name]) => [name, []]));
  for (let run = 0; run < RUNS; run++) {
    const order = run % 2 ? [...PACKAGES].reverse() : PACKAGES;
    for (const [name, pkg] of order) {
      const r = await measure(pkg, server.url);
      results.get(name).push(r);
      console.error(
        `run ${run + 1}/${RUNS} ${name}: ${(r.perInformer.rss / 1024).toFixed(1)} KiB RSS, ` +
          `${(r.perInformer.mallocInUse / 1024).toFixed(1)} KiB malloc, ${(r.perInformer.heapUsed / 1024).toFixed(1)} KiB V8 heap per informer`,
      );
    }
  }
  server.stop();
  const fields = [
    ...new Set([...results.values()].flatMap((rs) => rs.flatMap((r) => Object.keys(r.perInformer)))),
  ];
  const med = (name, field) => {
    const xs = results
      .get(name)
      .map((r) => r.perInformer[field])
      .filter((x) => typeof x === 'number');
    return xs.length ? median(xs) : null;
  };
  console.log(
    `\n${INFORMERS} informers on one cluster (one ConfigMap each), ${CONSUMERS ? 'one consumer each' : 'no consumers'}, ` +
      `bytes per informer after the first, medians of ${RUNS} runs\n`,
  );
  const names = PACKAGES.map(([name]) => name);
  console.log(`| figure | ${names.join(' | ')}${names.length > 1 ? ' | this ÷ against' : ''} |`);
  console.log(`|---|${names.map(() => '---|').join('')}${names.length > 1 ? '---|' : ''}`);
  for (const field of fields) {
    const values = names.map((n) => med(n, field));
    const cells = values.map((v) => (v === null ? '–' : v.toFixed(0)));
    const ratio =
      names.length > 1 && values[0] !== null && values[1]
        ? ` ${(values[0] / values[1]).toFixed(2)}× |`
        : names.length > 1
          ? ' – |'
          : '';
    console.log(`| ${field} | ${cells.join(' | ')} |${ratio}`);
  }
  for (const name of names) {
    const rs = results.get(name);
    console.log(
      `${name}: threads ${rs.map((r) => r.threads).join(', ')}; RSS per informer ${rs.map((r) => (r.perInformer.rss / 1024).toFixed(1)).join(', ')} KiB`,
    );
  }
  const json = opt('json');
  if (json)
    fs.writeFileSync(
      json,
      JSON.stringify({ INFORMERS, RUNS, CONSUMERS, results: Object.fromEntries(results) }, null, 2),
    );
}

/**
 * Resident bytes by kind of mapping (/proc/self/smaps): the main heap's (`[heap]`, glibc's main
 * arena), thread stacks and other anonymous mappings (glibc's thread arenas, V8's pages), files.
 */
function mappings() {
  const out = { rssHeap: 0, rssAnonymous: 0, rssFile: 0 };
  let kind = null;
  for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (head) {
      const name = head[2];
      kind = name === '[heap]' ? 'rssHeap' : name === '' || name.startsWith('[') ? 'rssAnonymous' : 'rssFile';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && kind) out[kind] += Number(rss[1]) * 1024;
  }
  return out;
}

/** The figures of this process now, after two full GCs. */
async function figures(watcher, SNAPSHOT) {
  for (let i = 0; i < 2; i++) {
    global.gc();
    await new Promise((r) => setTimeout(r, 50));
  }
  const m = process.memoryUsage();
  const memory = watcher[SNAPSHOT]().memory ?? {};
  const numeric = Object.fromEntries(Object.entries(memory).filter(([, v]) => typeof v === 'number'));
  return {
    rss: m.rss,
    ...mappings(),
    heapTotal: m.heapTotal,
    heapPhysical: v8.getHeapStatistics().total_physical_size,
    ...Object.fromEntries(
      v8.getHeapSpaceStatistics().map((sp) => [`physical.${sp.space_name}`, sp.physical_space_size]),
    ),
    heapUsed: m.heapUsed,
    external: m.external,
    mallocInUse: numeric.allocatorInUseBytes ?? NaN,
    ...Object.fromEntries(Object.entries(numeric).map(([k, v]) => [`memory.${k}`, v])),
  };
}

async function worker({ pkg, url, informers, consumers }) {
  giveUpAfter('informer-fixed-cost worker', 120);
  const watcher = stderrWatcher(pkg);
  const { SNAPSHOT } = require(path.join(pkg, 'lib', 'metrics'));
  const certs = require('../../packages/kube-watch-native/sim/certs');
  const open = (i) => {
    const informer = watcher.informer(
      {
        clusterDetails: { name: 'c0', url, caData: Buffer.from(certs.ca).toString('base64') },
        credential: { type: 'bearer token', token: 'fleet-token' },
        group: '',
        apiVersion: 'v1',
        plural: 'configmaps',
      },
      { namespace: `ns-${i}` },
    );
    if (consumers) {
      (async () => {
        for await (const _event of informer);
      })();
    }
    return informer;
  };
  const opened = [open(0)];
  await opened[0].synced;
  await new Promise((r) => setTimeout(r, 500));
  // Two steps, so that what grows once (V8's young generation sizes itself to the burst of
  // opening, the allocator's arenas) shows in the first and the second is the cost of one more.
  const steps = [await figures(watcher, SNAPSHOT)];
  const half = Math.floor(informers / 2);
  for (const upTo of [half, informers]) {
    for (let i = opened.length; i < upTo; i++) opened.push(open(i));
    await Promise.all(opened.map((i) => i.synced));
    await new Promise((r) => setTimeout(r, 1000));
    steps.push(await figures(watcher, SNAPSHOT));
  }
  const per = (from, to, n) => Object.fromEntries(Object.keys(to).map((k) => [k, (to[k] - from[k]) / n]));
  const perInformer = per(steps[1], steps[2], informers - half);
  // Already a figure per informer: its value at the end, not a difference.
  if (steps[2]['memory.fixedBytesPerInformer'] !== undefined) {
    perInformer['memory.fixedBytesPerInformer'] = steps[2]['memory.fixedBytesPerInformer'];
  }
  const firstHalf = per(steps[0], steps[1], half - 1);
  const threads = Number(/Threads:\s+(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]);
  for (const informer of opened) informer.close();
  return { perInformer, firstHalf, steps, threads };
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
