'use strict';
// One measurement of bench/informer.js in a fresh process (bench/child.js's worker protocol): one
// client (native | clientnode), one scenario (sync | iterate | memory | fields | relist | get).
// Main-thread CPU (schedstat, testbed/proc.js) and process CPU (process.cpuUsage()) from just
// before the informer is made to the moment its cache holds every object (for a relist, from the
// server's change to the end of the relist's events).

const { performance } = require('node:perf_hooks');
const { runAsWorker, ask } = require('./child');
const { CA_DATA, kubeConfig, resourceParams } = require('./kube');
const { settledRss } = require('./measure');
const { mainThreadCpuNs } = require('../testbed/proc');

const TOKEN = 'bench-token';
const NAMESPACE = 'bench';
const PAGE = 500;
/** Three small paths for the `fields` scenario (plus the four metadata fields always kept). */
const FIELDS = ['metadata.labels', 'spec.nodeName', 'status.phase'];
/** Matches none of the pods: the `memory` scenarios' warm-up informer. */
const WARM_UP_SELECTOR = 'bench.example.com/warm-up=none';
const quietLogger = { warn() {}, error() {}, info() {}, debug() {} };

function window() {
  const cpu0 = process.cpuUsage();
  const main0 = mainThreadCpuNs();
  const t0 = performance.now();
  return () => {
    const main = mainThreadCpuNs() - main0;
    const cpu = process.cpuUsage(cpu0);
    return {
      mainMs: main / 1e6,
      processMs: (cpu.user + cpu.system) / 1000,
      wallMs: performance.now() - t0,
    };
  };
}

// ---- The two clients: start(), synced, size(), get(name), a consumer each -----------------------

function nativeClient(task, { fields, onEvent } = {}) {
  const { NativeKubernetesWatcher } = require('kube-watch-native');
  const cluster = { name: 'bench', url: task.url, token: TOKEN, caData: CA_DATA };
  const params = resourceParams(cluster, { plural: 'pods' });
  const options = { namespace: NAMESPACE, ...(fields && { fields }) };
  let watcher;
  const theWatcher = () => (watcher ??= new NativeKubernetesWatcher({ logger: quietLogger }));
  const client = {
    /** An informer of the same pods whose selector matches none, kept open (see `memory`). */
    async warmUp() {
      client.warm = theWatcher().informer(params, { ...options, labelSelector: WARM_UP_SELECTOR });
      await client.warm.synced;
    },
    start() {
      const informer = (client.informer = theWatcher().informer(params, options));
      if (onEvent) {
        client.consumed = (async () => {
          for await (const e of informer) if (onEvent(e) === false) return;
        })();
      }
      return informer.synced;
    },
    size: () => client.informer.size,
    get: (name) => client.informer.get(name, NAMESPACE),
    names: () => client.informer.list().map((o) => o.metadata.name),
    projectedJsonBytes: () =>
      client.informer.list().reduce((n, o) => n + Buffer.byteLength(JSON.stringify(o)), 0),
    close: () => client.informer.close(),
  };
  return client;
}

/**
 * client-node as its README shows makeInformer, listing with CoreV1Api's listNamespacedPod (paged
 * with limit/continue as the native informer lists); `onEvent` gets { type, object } from its
 * add/update/delete callbacks. `synced` resolves once a list's items are all in its cache.
 */
function clientnodeClient(task, { onEvent } = {}) {
  const k8s = require('@kubernetes/client-node');
  const listed = [];
  const kc = kubeConfig(k8s, { name: 'bench', server: task.url, token: TOKEN, caData: CA_DATA });
  const path = `/api/v1/namespaces/${NAMESPACE}/pods`;
  let informer;
  let warm; // kept open
  return {
    /** An informer of the same pods whose selector matches none, kept open (see `memory`). */
    async warmUp() {
      const api = kc.makeApiClient(k8s.CoreV1Api);
      let first;
      const done = new Promise((resolve) => (first = resolve));
      const listFn = async () => {
        const page = await api.listNamespacedPod({ namespace: NAMESPACE, labelSelector: WARM_UP_SELECTOR });
        setImmediate(first);
        return page;
      };
      warm = k8s.makeInformer(kc, path, listFn, WARM_UP_SELECTOR);
      warm.on('error', () => {});
      warm.start();
      await done;
    },
    start() {
      const api = kc.makeApiClient(k8s.CoreV1Api);
      const listFn = async () => {
        let items = [];
        let page;
        let _continue;
        do {
          page = await api.listNamespacedPod({ namespace: NAMESPACE, limit: PAGE, _continue });
          items = items.concat(page.items);
          _continue = page.metadata?._continue;
        } while (_continue);
        page.items = items;
        // The ListWatch caches the items synchronously after this promise resolves.
        setImmediate(() => listed.shift()?.());
        return page;
      };
      informer = k8s.makeInformer(kc, path, listFn);
      if (onEvent) {
        informer.on('add', (object) => onEvent({ type: 'ADDED', object }));
        informer.on('update', (object) => onEvent({ type: 'MODIFIED', object }));
        informer.on('delete', (object) => onEvent({ type: 'DELETED', object }));
      }
      informer.on('error', () => {});
      const synced = this.nextList();
      informer.start();
      return synced;
    },
    /** Resolves once the next list's items are cached. */
    nextList: () => new Promise((resolve) => listed.push(resolve)),
    size: () => informer.list().length,
    get: (name) => informer.get(name, NAMESPACE),
    names: () => informer.list().map((o) => o.metadata.name),
    close: () => informer.stop(),
  };
}

const makeClient = (task, options) =>
  task.client === 'native' ? nativeClient(task, options) : clientnodeClient(task, options);

// ---- Scenarios ----------------------------------------------------------------------------------

async function sync(task) {
  const client = makeClient(task);
  await settledRss();
  const stop = window();
  await client.start();
  const size = client.size();
  return { ...stop(), size };
}

async function iterate(task) {
  let events = 0;
  let nameChars = 0;
  const onEvent = (e) => {
    if (e.type === 'ADDED') {
      events++;
      nameChars += e.object.metadata.name.length;
    } else if (e.type === 'SYNCED') return false;
    return true;
  };
  const client = makeClient(task, { onEvent });
  await settledRss();
  const stop = window();
  await client.start();
  // The native consumer may still be behind the cache: wait for its SYNCED.
  if (client.consumed) await client.consumed;
  const out = stop();
  return { ...out, events, size: client.size(), nameChars };
}

async function memory(task, fields) {
  const client = makeClient(task, { fields });
  // What the cache costs, not what the first informer of a process costs once (the runtime's
  // threads, code paged in, the TLS connection: about 2 MiB for either client): an informer
  // of the same pods whose selector matches none runs first, on the same connection.
  const rssCold = await settledRss();
  await client.warmUp();
  const rss0 = await settledRss();
  await client.start();
  const size = client.size();
  const rss1 = await settledRss();
  const cachedJsonBytes = fields ? client.projectedJsonBytes() : task.jsonBytes;
  const nativeCachedBytes = client.informer?.stats?.().cachedBytes;
  return { growthBytes: rss1 - rss0, warmUpBytes: rss0 - rssCold, cachedJsonBytes, nativeCachedBytes, size };
}

async function relist(task) {
  let counting = false;
  const seen = [];
  let relisted;
  let firstSynced;
  const relistDone = new Promise((r) => (relisted = r));
  const consumerSynced = new Promise((r) => (firstSynced = r));
  const onEvent = (e) => {
    if (e.type === 'SYNCED') {
      if (e.relist) relisted();
      else firstSynced();
      return true;
    }
    if (counting && e.type !== 'ERROR') seen.push(`${e.type} ${e.object.metadata.name}`);
    return true;
  };
  const client = makeClient(task, { onEvent });
  await client.start();
  // The native consumer has seen its initial ADDED events (client-node's came with the list).
  if (task.client === 'native') await consumerSynced;
  await new Promise((r) => setTimeout(r, 500)); // the watches open
  await settledRss();
  counting = true;
  const next = task.client === 'native' ? relistDone : client.nextList();
  const stop = window();
  const { changed } = await ask({ request: { cmd: 'relist', fraction: 0.01 } });
  await next;
  // client-node calls its callbacks synchronously inside the list; the native consumer has
  // had every event before its SYNCED.
  const out = stop();
  const expected = changed.map((n) => `MODIFIED ${n}`).sort();
  seen.sort();
  const exact = expected.length === seen.length && expected.every((x, i) => x === seen[i]);
  client.close();
  return { ...out, events: seen.length, expected: expected.length, exact };
}

async function get(task) {
  const client = makeClient(task);
  await client.start();
  const names = client.names();
  const name = names[names.length >> 1];
  const text = JSON.stringify(client.get(name));
  const N = 200;
  const getUs = [];
  const parseUs = [];
  let sink = 0;
  for (let round = 0; round < 41; round++) {
    let t = performance.now();
    for (let i = 0; i < N; i++) sink += client.get(name).metadata.name.length;
    const g = ((performance.now() - t) * 1000) / N;
    t = performance.now();
    for (let i = 0; i < N; i++) sink += JSON.parse(text).metadata.name.length;
    const p = ((performance.now() - t) * 1000) / N;
    if (round > 0) (getUs.push(g), parseUs.push(p)); // round 0 warms up
  }
  const med = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
  client.close();
  return { getUs: med(getUs), parseUs: med(parseUs), textBytes: text.length, sink };
}

/** What each scenario runs; `fields` is the native informer's alone. */
const SCENARIOS = {
  sync,
  iterate,
  memory: (task) => memory(task),
  fields: (task) => (task.client === 'native' ? memory(task, FIELDS) : { skipped: true }),
  relist,
  get,
};

runAsWorker((task) => {
  if (!Object.hasOwn(SCENARIOS, task.scenario)) throw new Error(`unknown scenario ${task.scenario}`);
  return SCENARIOS[task.scenario](task);
});
