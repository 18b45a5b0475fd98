#!/usr/bin/env node
'use strict';
// The fleet benchmark's pure-JavaScript baseline (issue 18, "side by side with client-node's
// makeInformer"): @kubernetes/client-node following a fleet, one `makeInformer` per cluster and
// resource type across all namespaces, one consumer each. bench/fleet.js forks it:
//
//   fork('bench/fleet-client-node.js', ['--worker', JSON.stringify(config)], { stdio: [..., 'ipc'] })
//   config = { urls: string[], caData: base64 PEM, token: string,
//              types: [{ group, version, plural, namespaced }], strip: boolean,
//              timeoutSeconds?: number (default 300) }
//
// IPC, worker → parent: { cmd: 'ready', syncSeconds, rssGrowth } once every informer has
// listed; parent → worker: { cmd: 'go', changes: N }; worker → parent, once N 'update' events
// have been read: { cmd: 'done', cpuPerChangeUs, elu, changes: N }, then exit 0. It exits 1 on
// a bad config, an informer that cannot list, `timeoutSeconds` passing, or the parent going.
//
// `node bench/fleet-client-node.js --selftest [--clusters=2] [--types=4] [--objects=200]
//   [--changes=400] [--rate=200] [--runs=1] [--strip] [--native[=<package dir>]]` checks it
// against simulators started in this process (see selftest() below); with --native it also runs
// a minimal native worker speaking the same protocol. That is a check of this file, not the
// benchmark: bench/fleet.js is.

const path = require('node:path');
const { fork } = require('node:child_process');
const { performance } = require('node:perf_hooks');
const { mainThreadCpuNs } = require('./measure');

/** `limit` of each list page, the native informer's default `pageSize`. */
const PAGE = 500;
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
const delay = (ms) => new Promise((r) => setTimeout(r, ms));

/** Throws a TypeError naming the first thing wrong with a worker config (never its token). */
function checkConfig(config) {
  const bad = (what) => {
    throw new TypeError(`fleet-client-node worker: config.${what}`);
  };
  if (!config || typeof config !== 'object') bad('is missing (pass a JSON object after --worker)');
  const { urls, caData, token, types, strip, timeoutSeconds } = config;
  if (!Array.isArray(urls) || urls.length === 0) bad('urls must be a non-empty array of URLs');
  urls.forEach((u, i) => {
    if (typeof u !== 'string' || !/^https?:\/\//.test(u)) bad(`urls[${i}] must be an http(s) URL`);
  });
  if (typeof caData !== 'string' || caData === '') bad('caData must be a base64 PEM string');
  if (typeof token !== 'string' || token === '') bad('token must be a non-empty string');
  if (!Array.isArray(types) || types.length === 0) bad('types must be a non-empty array');
  types.forEach((t, i) => {
    if (!t || typeof t !== 'object') bad(`types[${i}] must be { group, version, plural, namespaced }`);
    if (typeof t.group !== 'string') bad(`types[${i}].group must be a string ('' for the core group)`);
    for (const k of ['version', 'plural'])
      if (typeof t[k] !== 'string' || !/^[a-z0-9][a-z0-9.-]*$/.test(t[k]))
        bad(`types[${i}].${k} must be a lower-case name, not ${JSON.stringify(t[k])}`);
  });
  if (strip !== undefined && typeof strip !== 'boolean') bad('strip must be a boolean');
  if (timeoutSeconds !== undefined && !(Number.isFinite(timeoutSeconds) && timeoutSeconds > 0))
    bad('timeoutSeconds must be a positive number of seconds');
}

/** The collection path of a type across all namespaces. */
const collectionPath = ({ group, version, plural }) =>
  group === '' ? `/api/${version}/${plural}` : `/apis/${group}/${version}/${plural}`;

/** Removes what `strip` removes: managedFields and the last-applied annotation. */
function stripObject(obj) {
  const meta = obj.metadata;
  if (!meta) return;
  delete meta.managedFields;
  if (meta.annotations) {
    delete meta.annotations[LAST_APPLIED];
    if (Object.keys(meta.annotations).length === 0) delete meta.annotations;
  }
}

/** RSS after a few full collections when `--expose-gc` allows them (as the native worker). */
async function settledRss() {
  if (global.gc) {
    for (let i = 0; i < 3; i++) {
      global.gc();
      await delay(50);
    }
  }
  return process.memoryUsage.rss();
}

/**
 * Bounds a worker: exit 1 after `timeoutSeconds`, or as soon as the parent goes.
 * @returns {(phase: string) => void} names the phase the give-up message reports
 */
function bound(name, timeoutSeconds) {
  let phase = 'starting';
  setTimeout(() => {
    console.error(`${name}: gave up after ${timeoutSeconds} s (${phase})`);
    process.exit(1);
  }, timeoutSeconds * 1000);
  process.on('disconnect', () => process.exit(1));
  return (p) => {
    phase = p;
  };
}

/**
 * After 'ready': waits for { cmd: 'go', changes }, then measures main-thread CPU and ELU until
 * `count()` has been called `changes` times, sends 'done' and exits 0.
 * @returns {{ count: () => void }}
 */
function measureChanges(setPhase) {
  let received = 0;
  let wanted = Infinity;
  let cpu0;
  let elu0;
  const finish = () => {
    const cpuNs = mainThreadCpuNs() - cpu0;
    const elu = performance.eventLoopUtilization(elu0).utilization;
    wanted = Infinity;
    const changes = received;
    process.send({ cmd: 'done', cpuPerChangeUs: changes ? cpuNs / 1000 / changes : 0, elu, changes }, () =>
      process.exit(0),
    );
  };
  process.on('message', (msg) => {
    if (msg?.cmd !== 'go') return;
    if (!Number.isInteger(msg.changes) || msg.changes < 0) {
      console.error(`fleet worker: 'go' needs a whole number of changes, not ${JSON.stringify(msg.changes)}`);
      process.exit(1);
    }
    setPhase(`waiting for ${msg.changes} changes`);
    received = 0;
    cpu0 = mainThreadCpuNs();
    elu0 = performance.eventLoopUtilization();
    wanted = msg.changes;
    if (wanted === 0) finish();
  });
  return {
    count() {
      if (++received === wanted) finish();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The client-node worker.

async function worker(config) {
  checkConfig(config);
  const { urls, caData, token, types, strip = false, timeoutSeconds = 300 } = config;
  const setPhase = bound('fleet-client-node worker', timeoutSeconds);
  const k8s = require('@kubernetes/client-node');
  // client-node's own HTTP client (its Watch issues every watch with it), resolved from
  // client-node's directory so that it is the very copy client-node uses.
  const fetch = require(
    require.resolve('node-fetch', { paths: [path.dirname(require.resolve('@kubernetes/client-node'))] }),
  );
  const measuring = measureChanges(setPhase);

  const rssBefore = await settledRss();
  const started = performance.now();
  setPhase('listing');
  const informers = [];
  let unsynced = urls.length * types.length;
  let allSynced;
  const synced = new Promise((resolve) => (allSynced = resolve));
  let lastSeen = '';

  urls.forEach((url, c) => {
    // One KubeConfig per cluster, as a fleet of kubeconfig contexts would give.
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: `c${c}`, server: url, caData }],
      users: [{ name: `c${c}`, token }],
      contexts: [{ name: `c${c}`, cluster: `c${c}`, user: `c${c}` }],
      currentContext: `c${c}`,
    });
    for (const type of types) {
      const collection = collectionPath(type);
      const name = `cluster ${c} ${collection}`;
      let listed = false;
      // The list function. makeInformer needs one returning { metadata, items }. client-node's
      // typed APIs cover only the built-in types (one method per type, and they turn items into
      // model classes while the Watch hands plain JSON.parse output to the same cache);
      // CustomObjectsApi cannot name the core group (it always builds /apis/{group}/...);
      // KubernetesObjectApi.list needs a kind and a discovery round trip per group version. So
      // this is a raw GET through client-node's own request set-up (KubeConfig.
      // applyToFetchOptions: the TLS agent with the CA, the bearer token) and its node-fetch,
      // exactly as its Watch makes its requests: any type, CRDs included, plain objects.
      // Paginated with limit/continue, as the native informer lists where streaming is not used.
      const listFn = async () => {
        const base = new URL(url + collection);
        base.searchParams.set('limit', String(PAGE));
        const init = await kc.applyToFetchOptions({ method: 'GET' });
        let items = [];
        let list;
        let cont = '';
        do {
          const u = new URL(base);
          if (cont) u.searchParams.set('continue', cont);
          const res = await fetch(u, init);
          if (res.status !== 200) {
            const err = new Error(`list of ${name} answered ${res.status} ${res.statusText}`);
            err.statusCode = res.status;
            throw err;
          }
          list = await res.json();
          items = items.concat(list.items ?? []);
          cont = list.metadata?.continue ?? '';
        } while (cont);
        // Stripped before the ListWatch caches them: the list's objects are never held whole.
        if (strip) items.forEach(stripObject);
        list.items = items;
        // The ListWatch caches the items (calling 'add' for each) as soon as this resolves.
        if (!listed) {
          setImmediate(() => {
            listed = true;
            if (--unsynced === 0) allSynced();
          });
        }
        return list;
      };
      const informer = k8s.makeInformer(kc, collection, listFn);
      // The consumer: reads each object as the native consumer reads each event. With `strip`
      // it deletes managedFields and the last-applied annotation in place. client-node caches an
      // object before it calls the handlers, and the handler gets that very object, so this
      // strips the cached object too, but only after the Watch has parsed the whole line and
      // the cache has held it: the full object is built and paid for on the main thread on
      // every change. A client-node user cannot strip before the cache (the Watch's callback is
      // the ListWatch's), so this is the most its cache can be cut down: the honest baseline.
      const read = (obj) => {
        if (strip) stripObject(obj);
        lastSeen = obj.metadata?.resourceVersion ?? lastSeen;
      };
      informer.on('add', read);
      informer.on('delete', read);
      informer.on('update', (obj) => {
        read(obj);
        measuring.count();
      });
      // A ListWatch stops at an error; client-node's README restarts it from the error handler.
      informer.on('error', (err) => {
        if (!listed) {
          console.error(`fleet-client-node worker: ${name} could not list: ${err?.message ?? err}`);
          process.exit(1);
        }
        console.error(`fleet-client-node worker: ${name}: ${err?.message ?? err}; restarting in 1 s`);
        setTimeout(() => informer.start(), 1000);
      });
      informers.push(informer);
    }
  });
  for (const informer of informers) informer.start().catch(fail);
  await synced;
  const syncSeconds = (performance.now() - started) / 1000;
  setPhase('synced');
  // As the native worker: let the initial events settle before the memory is read.
  await delay(500);
  const rssGrowth = (await settledRss()) - rssBefore;
  process.send({ cmd: 'ready', syncSeconds, rssGrowth });
  setPhase(`waiting for 'go' (last resourceVersion read ${lastSeen || 'none'})`);
}

// ---------------------------------------------------------------------------------------------
// A minimal native worker speaking the same protocol: the selftest's check, not the benchmark.

async function nativeWorker(config) {
  checkConfig(config);
  const { urls, caData, token, types, strip = false, timeoutSeconds = 300, pkg } = config;
  const setPhase = bound('fleet-client-node selftest native worker', timeoutSeconds);
  const { NativeKubernetesWatcher } = require(pkg);
  const measuring = measureChanges(setPhase);
  const say = (m) => console.error(m);
  const rssBefore = await settledRss();
  const started = performance.now();
  setPhase('listing');
  const watcher = new NativeKubernetesWatcher({ logger: { warn: say, error: say } });
  const informers = [];
  urls.forEach((url, c) => {
    for (const { group, version, plural } of types) {
      const informer = watcher.informer(
        {
          clusterDetails: { name: `c${c}`, url, caData },
          credential: { type: 'bearer token', token },
          group,
          apiVersion: version,
          plural,
        },
        strip ? { strip: ['metadata.managedFields', `metadata.annotations['${LAST_APPLIED}']`] } : {},
      );
      informers.push(informer);
      (async () => {
        for await (const event of informer) {
          if (event.type === 'MODIFIED' && event.object.metadata.resourceVersion) measuring.count();
        }
      })();
    }
  });
  await Promise.all(informers.map((i) => i.synced));
  const syncSeconds = (performance.now() - started) / 1000;
  setPhase('synced');
  await delay(500);
  const rssGrowth = (await settledRss()) - rssBefore;
  process.send({ cmd: 'ready', syncSeconds, rssGrowth });
  setPhase("waiting for 'go'");
}

// ---------------------------------------------------------------------------------------------
// The selftest driver.

/** The selftest's types, the first `--types` of them: core, apps, batch and two CRDs. */
const SELFTEST_TYPES = [
  { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true },
  { group: 'fleet.example.com', version: 'v1', plural: 'widgets', kind: 'Widget', namespaced: true },
  { group: 'apps', version: 'v1', plural: 'deployments', kind: 'Deployment', namespaced: true },
  { group: 'fleet.example.com', version: 'v1', plural: 'gadgets', kind: 'Gadget', namespaced: false },
  { group: 'batch', version: 'v1', plural: 'jobs', kind: 'Job', namespaced: true },
  { group: '', version: 'v1', plural: 'services', kind: 'Service', namespaced: true },
];
const SELFTEST_NAMESPACES = 4;
const resourceKeyOf = (t) => (t.group ? `${t.group}/${t.version}/${t.plural}` : t.plural);

/** Starts the simulators, each holding `objects` objects of every type. */
async function startFleet({ clusters, types, objects, token }) {
  const { createSimulator } = require('../packages/kube-watch-native/sim');
  const { configMap } = require('./fleet-objects');
  const sims = [];
  let jsonBytes = 0;
  for (let c = 0; c < clusters; c++) {
    const sim = await createSimulator({ tls: true, http2: true, token, maxConcurrentStreams: 1000 });
    for (const t of types) {
      sim.defineResource(resourceKeyOf(t), { kind: t.kind, namespaced: t.namespaced });
      for (let i = 0; i < objects; i++) {
        // A ConfigMap's shape (managedFields, last-applied) under this type's name: the
        // simulator stores any body, and the workers read only metadata.
        const obj = configMap(`ns-${i % SELFTEST_NAMESPACES}`, `${t.plural}-${i}`);
        obj.apiVersion = t.group ? `${t.group}/${t.version}` : t.version;
        obj.kind = t.kind;
        if (!t.namespaced) delete obj.metadata.namespace;
        jsonBytes += Buffer.byteLength(JSON.stringify(sim.create(resourceKeyOf(t), obj)));
      }
    }
    sims.push(sim);
  }
  let round = 0;
  let next = 0;
  /** Modifies `count` objects at `perSecond`, round-robin over clusters, types and objects. */
  const change = (count, perSecond) => {
    const perTick = Math.max(1, Math.round(perSecond / 100));
    let done = 0;
    const timer = setInterval(() => {
      for (let k = 0; k < perTick && done < count; k++, done++, next++) {
        const t = types[Math.floor(next / clusters) % types.length];
        const i = Math.floor(next / (clusters * types.length)) % objects;
        round++;
        sims[next % clusters].patch(
          resourceKeyOf(t),
          t.namespaced ? `ns-${i % SELFTEST_NAMESPACES}` : undefined,
          `${t.plural}-${i}`,
          (o) => {
            o.data.round = String(round);
          },
        );
      }
      if (done >= count) clearInterval(timer);
    }, 10);
    return () => clearInterval(timer);
  };
  return { sims, jsonBytes, change, close: () => Promise.all(sims.map((s) => s.close())) };
}

/** One measurement: forks `mode` ('--worker' or '--native-worker') and drives it to 'done'. */
function measureOnce(mode, config, fleet, { changes, rate }) {
  const { track } = require('./children');
  return new Promise((resolve, reject) => {
    const child = track(
      fork(__filename, [mode, JSON.stringify(config)], {
        execArgv: ['--expose-gc'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
    let ready = null;
    let out = null;
    let stopChanges = () => {};
    child.on('message', (msg) => {
      if (msg.cmd === 'ready') {
        ready = msg;
        child.send({ cmd: 'go', changes });
        stopChanges = fleet.change(changes, rate);
      } else if (msg.cmd === 'done') out = msg;
    });
    child.on('exit', (code) => {
      stopChanges();
      if (code === 0 && ready && out) resolve({ ...ready, ...out });
      else reject(new Error(`${mode} exited ${code} (${ready ? 'after' : 'before'} ready)`));
    });
  });
}

async function selftest(argv) {
  const opt = (name, dflt) => {
    const a = argv.find((x) => x === `--${name}` || x.startsWith(`--${name}=`));
    return a === undefined ? dflt : a.includes('=') ? a.slice(name.length + 3) : true;
  };
  for (const a of argv) {
    if (
      !/^--(clusters=\d+|types=\d+|objects=\d+|changes=\d+|rate=\d+|runs=\d+|strip|native(=.+)?)$/.test(a)
    ) {
      console.error(`unknown option ${a}; see the header of bench/fleet-client-node.js`);
      process.exit(2);
    }
  }
  const clusters = Number(opt('clusters', 2));
  const typeCount = Number(opt('types', 4));
  const objects = Number(opt('objects', 200));
  const changes = Number(opt('changes', 400));
  const rate = Number(opt('rate', 200));
  const runs = Number(opt('runs', 1));
  const strip = opt('strip', false) === true;
  const native = opt('native', false);
  if (typeCount < 1 || typeCount > SELFTEST_TYPES.length) {
    console.error(`--types must be 1 to ${SELFTEST_TYPES.length}`);
    process.exit(2);
  }
  if (clusters < 1 || objects < 1 || rate < 1 || runs < 1) {
    console.error('--clusters, --objects, --rate and --runs must be at least 1');
    process.exit(2);
  }
  const pkg =
    native === false
      ? null
      : path.resolve(native === true ? path.join(__dirname, '..', 'packages', 'kube-watch-native') : native);
  // The whole selftest is bounded too: each worker by its own timeout, this by the sum.
  const timeoutSeconds = 120;
  setTimeout(
    () => {
      console.error('selftest: gave up');
      process.exit(1);
    },
    (timeoutSeconds + 10) * 1000 * runs * (pkg ? 2 : 1),
  ).unref();

  const token = 'selftest-token';
  const types = SELFTEST_TYPES.slice(0, typeCount);
  const fleet = await startFleet({ clusters, types, objects, token });
  const config = {
    urls: fleet.sims.map((s) => s.url),
    caData: Buffer.from(require('../packages/kube-watch-native/sim/certs').ca).toString('base64'),
    token,
    types: types.map(({ group, version, plural, namespaced }) => ({ group, version, plural, namespaced })),
    strip,
    timeoutSeconds,
  };
  const kinds = [['client-node', '--worker', config]];
  if (pkg) kinds.push(['native (check)', '--native-worker', { ...config, pkg }]);
  const results = new Map(kinds.map(([k]) => [k, []]));
  for (let run = 0; run < runs; run++) {
    for (const [kind, mode, cfg] of run % 2 ? [...kinds].reverse() : kinds) {
      const r = await measureOnce(mode, cfg, fleet, { changes, rate });
      if (r.changes !== changes) throw new Error(`${kind} reported ${r.changes} changes, not ${changes}`);
      results.get(kind).push(r);
      console.error(
        `run ${run + 1}/${runs} ${kind}: sync ${r.syncSeconds.toFixed(2)} s, RSS +${(r.rssGrowth / 2 ** 20).toFixed(1)} MiB, ` +
          `${r.cpuPerChangeUs.toFixed(1)} µs main-thread CPU per change, ELU ${(r.elu * 100).toFixed(2)} %`,
      );
    }
  }
  await fleet.close();

  const median = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  const med = (kind, f) => median(results.get(kind).map(f));
  const total = clusters * typeCount * objects;
  console.log(
    `\nselftest: ${clusters} clusters × ${typeCount} types × ${objects} objects = ${total} objects ` +
      `(${(fleet.jsonBytes / 2 ** 20).toFixed(1)} MiB of JSON), ${clusters * typeCount} informers, ` +
      `${changes} changes at ${rate}/s, strip ${strip ? 'on' : 'off'}, medians of ${runs} run(s)\n`,
  );
  console.log('| worker | sync | RSS growth | RSS ÷ JSON | main-thread CPU per change | ELU |');
  console.log('|---|---|---|---|---|---|');
  for (const [kind] of kinds) {
    const rss = med(kind, (r) => r.rssGrowth);
    console.log(
      `| ${kind} | ${med(kind, (r) => r.syncSeconds).toFixed(2)} s | ${(rss / 2 ** 20).toFixed(1)} MiB | ` +
        `${(rss / fleet.jsonBytes).toFixed(2)}× | ${med(kind, (r) => r.cpuPerChangeUs).toFixed(1)} µs | ` +
        `${(med(kind, (r) => r.elu) * 100).toFixed(2)} % |`,
    );
  }
  if (pkg) {
    const ratio = (f) => (med('native (check)', f) / med('client-node', f)).toFixed(2);
    console.log(
      `\nnative ÷ client-node (a check at this size, not the benchmark): RSS growth ${ratio((r) => r.rssGrowth)}×, ` +
        `main-thread CPU per change ${ratio((r) => r.cpuPerChangeUs)}×, sync ${ratio((r) => r.syncSeconds)}×`,
    );
  }
}

// ---------------------------------------------------------------------------------------------

const [mode, arg] = process.argv.slice(2);
const fail = (err) => {
  console.error(err?.message ?? err);
  process.exit(1);
};
if (mode === '--worker' || mode === '--native-worker') {
  let config;
  try {
    config = JSON.parse(arg);
  } catch {
    fail(new TypeError(`fleet-client-node: ${mode} needs a JSON config as its argument`));
  }
  (mode === '--worker' ? worker : nativeWorker)(config).catch(fail);
} else if (mode === '--selftest') {
  selftest(process.argv.slice(3)).then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
} else {
  console.error('usage: node bench/fleet-client-node.js --worker <config JSON> | --selftest [options]');
  process.exit(2);
}
