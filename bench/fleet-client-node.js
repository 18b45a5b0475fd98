'use strict';
// The fleet benchmark's pure-JavaScript baseline (issue 18, "side by side with client-node's
// makeInformer"): @kubernetes/client-node following a fleet, one `makeInformer` per cluster and
// resource type across all namespaces, one consumer each. bench/fleet-full.js forks it as it
// forks bench/fleet-worker.js, with the same config (its `informers` all namespaces) and the same
// messages: { type: 'ready', syncSeconds, rssGrowth } once every informer has listed; 'go' with N
// changes; { type: 'done', cpuPerChangeUs, elu, changes: N } once N 'update' events were read.
// It gives up on an informer that cannot list and after `giveUpSeconds`.

const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { runAsWorker, ready, giveUpAfter } = require('./child');
const { CA_DATA, kubeConfig } = require('./kube');
const { settledRss } = require('./measure');
const { mainThreadCpuNs } = require('../testbed/proc');
const { LAST_APPLIED } = require('../testbed/fleet-objects');

/** `limit` of each list page, the native informer's default `pageSize`. */
const PAGE = 500;

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

runAsWorker(async ({ urls, token, informers: specs, strip = false, giveUpSeconds }) => {
  giveUpAfter('fleet-client-node worker', giveUpSeconds);
  const k8s = require('@kubernetes/client-node');
  // client-node's own HTTP client (its Watch issues every watch with it), resolved from
  // client-node's directory so that it is the very copy client-node uses.
  const fetch = require(
    require.resolve('node-fetch', { paths: [path.dirname(require.resolve('@kubernetes/client-node'))] }),
  );
  let received = 0;
  let wanted = Infinity;
  let done;
  const allRead = new Promise((resolve) => (done = resolve));

  const rssBefore = await settledRss();
  const started = performance.now();
  const informers = [];
  let unsynced = specs.length;
  let allSynced;
  const synced = new Promise((resolve) => (allSynced = resolve));
  // One KubeConfig per cluster, as a fleet of kubeconfig contexts would give.
  const kcs = urls.map((server, c) => kubeConfig(k8s, { name: `c${c}`, server, token, caData: CA_DATA }));

  for (const { cluster: c, ...type } of specs) {
    const url = urls[c];
    const kc = kcs[c];
    const collection = collectionPath(type);
    const name = `cluster ${c} ${collection}`;
    let listed = false;
    // makeInformer's list function: client-node's typed APIs cover only the built-in types (and
    // make model classes of the items, where the Watch caches plain JSON), CustomObjectsApi cannot
    // name the core group, KubernetesObjectApi.list needs discovery; so a raw GET through
    // client-node's own request set-up (applyToFetchOptions: CA, token) and node-fetch, as its
    // Watch makes its requests, paginated with limit/continue as the native informer lists.
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
    // The consumer reads each object as the native one each event; with `strip` it deletes
    // managedFields and last-applied in place, from the cached object itself (the handler gets
    // it), but only after the whole object was parsed and cached on the main thread: a client-node
    // user cannot strip before the cache, so this is the leanest its cache gets.
    const read = (obj) => strip && stripObject(obj);
    informer.on('add', read);
    informer.on('delete', read);
    informer.on('update', (obj) => {
      read(obj);
      if (++received === wanted) done();
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
  for (const informer of informers) informer.start().catch((err) => (console.error(err), process.exit(1)));
  await synced;
  const syncSeconds = (performance.now() - started) / 1000;
  // As the native worker: let the initial events settle before the memory is read.
  await new Promise((r) => setTimeout(r, 500));
  const rssGrowth = (await settledRss()) - rssBefore;
  ({ changes: wanted } = await ready({ syncSeconds, rssGrowth }));
  received = 0;
  const cpu0 = mainThreadCpuNs();
  const elu0 = performance.eventLoopUtilization();
  if (wanted === 0) done();
  await allRead;
  const cpuNs = mainThreadCpuNs() - cpu0;
  const elu = performance.eventLoopUtilization(elu0).utilization;
  process.send({
    type: 'done',
    cpuPerChangeUs: received ? cpuNs / 1000 / received : 0,
    elu,
    changes: received,
  });
  return {};
});
