'use strict';
// Where an informer's initial list (sync) costs the client CPU, and how builds compare on it:
//
//   node bench/investigations/sync-cpu.js [--clusters=5] [--types=20] [--objects=500] [--bytes=1500]
//        [--strip] [--repeats=3] [--pkg=<package directory>]… [--perf=<file prefix>]
//
// One process of the fleet benchmark's simulators (bench/clusters/fleet.js) holds
// `clusters` × `types` × `objects` objects. Then, `repeats` times, each build (this checkout,
// then every --pkg, interleaved) syncs the whole fleet in a fresh client process: one informer
// per cluster × type through one watcher, one consumer each that reads every ADDED event. The
// client reports the sync's wall time (until every informer synced and every consumer read every
// object), process CPU, and CPU per thread name from /proc/self/task (main thread, tokio workers,
// …). Medians per build at the end (a first warm-up run of this checkout is not counted). With --perf, each client runs under `perf record -g` into
// `<prefix>-<build>-<repeat>.data` (perf's own CPU is not billed to the client; PERF_ARGS
// replaces `-g`, e.g. `--call-graph=dwarf -F 499`). Bounded: every
// client gives up after 300 s, every child dies with this process (bench/children.js).

const { fork, spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const STRIP = [
  'metadata.managedFields',
  "metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']",
];

if (process.argv[2] === '--client') client(JSON.parse(process.argv[3]));
else driver();

/** CPU seconds per thread name of this process, from /proc/self/task/<tid>/stat. */
function threadCpu() {
  const byName = {};
  for (const tid of fs.readdirSync('/proc/self/task')) {
    let stat;
    try {
      stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const close = stat.lastIndexOf(')');
    let name = stat.slice(stat.indexOf('(') + 1, close);
    if (Number(tid) === process.pid) name = 'main';
    const fields = stat.slice(close + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat(5), here 11 and 12 (after pid, comm, state).
    const seconds = (Number(fields[11]) + Number(fields[12])) / 100;
    byName[name] = (byName[name] ?? 0) + seconds;
  }
  return byName;
}

async function client(config) {
  setTimeout(() => {
    console.error('sync-cpu client: gave up after 300 s');
    process.exit(1);
  }, 300_000).unref();
  const { NativeKubernetesWatcher } = require(config.pkg);
  const watcher = new NativeKubernetesWatcher({ logger: { warn: console.error, error: console.error } });
  const before = threadCpu();
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  let added = 0;
  const informers = [];
  const drained = [];
  config.urls.forEach((url, c) => {
    for (const type of config.types) {
      const informer = watcher.informer(
        {
          clusterDetails: { name: `c${c}`, url, caData: config.caData },
          credential: { type: 'bearer token', token: 'fleet-token' },
          group: type.group,
          apiVersion: type.version,
          plural: type.plural,
        },
        config.strip ? { strip: STRIP } : {},
      );
      informers.push(informer);
      drained.push(
        (async () => {
          for await (const event of informer) {
            if (event.type === 'ADDED' && ++added === config.objects) return;
          }
        })(),
      );
    }
  });
  await Promise.all(informers.map((i) => i.synced));
  const syncSeconds = (performance.now() - started) / 1000;
  while (added < config.objects) await new Promise((r) => setTimeout(r, 20));
  const readSeconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu0);
  const after = threadCpu();
  const threads = {};
  for (const [name, s] of Object.entries(after)) threads[name] = +(s - (before[name] ?? 0)).toFixed(2);
  process.send({
    syncSeconds,
    readSeconds,
    cpuSeconds: (used.user + used.system) / 1e6,
    threads,
  });
  process.disconnect();
  process.exit(0);
}

async function driver() {
  const { track, cluster } = require('../children');
  const certs = require('../../packages/kube-watch-native/sim/certs');
  const { TYPES } = require('../../testbed/fleet-objects');
  const arg = (name, dflt) => {
    const a = process.argv.find((x) => x.startsWith(`--${name}=`));
    return a === undefined ? dflt : a.slice(name.length + 3);
  };
  const clusters = Number(arg('clusters', 5));
  const types = Number(arg('types', 20));
  const objects = Number(arg('objects', 500));
  const repeats = Number(arg('repeats', 3));
  const perf = arg('perf', null);
  const strip = process.argv.includes('--strip');
  const builds = [path.join(__dirname, '..', '..', 'packages', 'kube-watch-native')];
  for (const a of process.argv) if (a.startsWith('--pkg=')) builds.push(path.resolve(a.slice(6)));

  const serverConfig = {
    clusters: [...Array(clusters).keys()],
    types,
    objects,
    namespaces: 20,
    bytes: Number(arg('bytes', 1500)),
  };
  const server = cluster('fleet', serverConfig, { execArgv: ['--max-old-space-size=8192'] });
  const info = await server.ready;
  console.error(
    `${info.objects} objects, ${(info.jsonBytes / 2 ** 20).toFixed(0)} MiB JSON (${(info.strippedBytes / 2 ** 20).toFixed(0)} MiB stripped), strip ${strip}`,
  );
  const config = {
    urls: info.urls,
    caData: Buffer.from(certs.ca).toString('base64'),
    types: TYPES.slice(0, types).map(({ group, version, plural }) => ({ group, version, plural })),
    objects: info.objects,
    strip,
  };
  const results = builds.map(() => []);
  // Repeat -1 is a warm-up, not counted: the servers' first lists are slower than the others.
  for (let r = -1; r < repeats; r++) {
    for (const [b, pkg] of builds.entries()) {
      if (r < 0 && b > 0) break;
      const args = [__filename, '--client', JSON.stringify({ ...config, pkg })];
      const stdio = ['ignore', 'inherit', 'inherit', 'ipc'];
      const child = track(
        perf
          ? spawn(
              'perf',
              [
                'record',
                '-q',
                ...(process.env.PERF_ARGS ?? '-g').split(' '),
                '-o',
                `${perf}-${b}-${r}.data`,
                '--',
                process.execPath,
                ...args,
              ],
              {
                stdio,
              },
            )
          : fork(args[0], args.slice(1), { stdio }),
      );
      const result = await new Promise((resolve, reject) => {
        child.once('message', resolve);
        child.once('exit', (code) => reject(new Error(`client exited ${code}`)));
      });
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
      if (r >= 0) results[b].push(result);
      const top = Object.entries(result.threads)
        .filter(([, s]) => s >= 0.05)
        .map(([n, s]) => `${n} ${s}`)
        .join(', ');
      console.error(
        `build ${b} ${r < 0 ? 'warm-up' : `repeat ${r}`}: synced ${result.syncSeconds.toFixed(2)} s, read ${result.readSeconds.toFixed(2)} s, CPU ${result.cpuSeconds.toFixed(2)} s (${top})`,
      );
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const [b, pkg] of builds.entries()) {
    const rs = results[b];
    const main = rs.map((x) => x.threads.main ?? 0);
    const cpu = rs.map((x) => x.cpuSeconds);
    console.log(
      `${path.relative(process.cwd(), pkg) || '.'}: median read ${median(rs.map((x) => x.readSeconds)).toFixed(2)} s, ` +
        `CPU ${median(cpu).toFixed(2)} s, main ${median(main).toFixed(2)} s, native ${median(cpu.map((c, i) => c - main[i])).toFixed(2)} s`,
    );
  }
  server.stop();
  process.exit(0);
}
