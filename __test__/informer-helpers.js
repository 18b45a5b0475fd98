'use strict';
// Shared pieces of the informer tests: a watcher whose logger is recorded, informer params for a
// simulator, and a consumer that replays its events into a view while checking, event by
// event, the stream's self-consistency rules of issue 10.

const assert = require('node:assert/strict');
const { NativeKubernetesWatcher } = require('kube-watch-native');
const { createSimulator } = require('../packages/kube-watch-native/sim');

const delay = (ms) => new Promise((r) => setTimeout(r, ms));

/** A simulator closed when test `t` ends. */
async function sim(t, options) {
  const s = await createSimulator(options);
  t.after(() => s.close());
  return s;
}

/** A watcher with its logger's messages recorded. */
function recordingWatcher(options = {}) {
  const log = { warn: [], info: [] };
  const watcher = new NativeKubernetesWatcher({
    ...options,
    logger: {
      warn: (m) => log.warn.push(m),
      error: (m) => log.warn.push(m),
      info: (m) => log.info.push(m),
    },
  });
  return { watcher, log };
}

/** informer() params for `plural` on simulator `s`. */
function params(s, extra = {}) {
  return {
    clusterDetails: { name: 'sim', url: s.url },
    credential: { type: 'bearer token', token: s.options.token ?? 'none' },
    group: '',
    apiVersion: 'v1',
    plural: 'configmaps',
    ...extra,
  };
}

/** A simulator with one ConfigMap `a`, and an informer of it, synced, with no consumer yet. */
async function oneConfigMap(t) {
  const s = await sim(t, { token: 'tok' });
  s.create('configmaps', cm('a'));
  const { watcher } = recordingWatcher();
  const informer = watcher.informer(params(s));
  await informer.synced;
  return { s, watcher, informer };
}

/**
 * An informer of a fresh recorded watcher on simulator `s`, with informer() `options` and
 * params(s, `extra`), closed when test `t` ends, and a consumer (consume()) on it from its
 * start; resolves once it has synced.
 */
async function syncedInformer(t, s, options, extra) {
  const { watcher, log } = recordingWatcher();
  const informer = watcher.informer(params(s, extra), options);
  t.after(() => informer.close());
  const c = consume(informer);
  await informer.synced;
  return { watcher, log, informer, c };
}

const keyOf = (o) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/**
 * A consumer iterating `informer` in the background: `events` (all), `view` (key → object),
 * and an assertion on every event of the rules every consumer's stream obeys.
 */
function consume(informer, { onEvent } = {}) {
  const state = { events: [], view: new Map(), synced: 0, relists: 0, errors: [], ended: false };
  const lastRv = new Map();
  state.done = (async () => {
    for await (const e of informer) {
      state.events.push(e);
      if (e.type === 'SYNCED') {
        state.synced++;
        if (e.relist) state.relists++;
      } else if (e.type === 'ERROR') {
        state.errors.push(e);
      } else {
        const key = keyOf(e.object);
        if (state.synced === 0) assert.equal(e.type, 'ADDED', 'only ADDED before the first SYNCED');
        if (e.type === 'ADDED') assert.ok(!state.view.has(key), `ADDED for ${key}, which it holds`);
        else assert.ok(state.view.has(key), `${e.type} for ${key}, which it does not hold`);
        // Per object, resourceVersions never go backwards: a change is newer than anything
        // seen of that key before (a re-created object included); a DELETED from a relist
        // carries the last known object, so it may repeat the last rv but never go below it.
        if (lastRv.has(key)) {
          const before = Number(lastRv.get(key));
          const now = Number(e.resourceVersion);
          assert.ok(
            e.type === 'DELETED' ? now >= before : now > before,
            `${key}: rv went from ${before} to ${now} (${e.type})`,
          );
        }
        lastRv.set(key, e.resourceVersion);
        if (e.type !== 'DELETED') {
          assert.equal(e.resourceVersion, e.object.metadata.resourceVersion, 'event rv = object rv');
          state.view.set(key, e.object);
        } else {
          state.view.delete(key);
        }
      }
      onEvent?.(e, state);
    }
    state.ended = true;
  })();
  return state;
}

/** The store's objects of `plural` as key → resourceVersion, sorted. */
function storeView(s, plural = 'configmaps') {
  return JSON.stringify(
    s
      .list(plural)
      .map((o) => [keyOf(o), o.metadata.resourceVersion])
      .sort(),
  );
}

/** A view (key → object) as key → resourceVersion, sorted. */
function viewOf(view) {
  return JSON.stringify([...view.values()].map((o) => [keyOf(o), o.metadata.resourceVersion]).sort());
}

/** Whether consumer `c` (consume()) holds what simulator `s` holds. */
const caughtUp = (c, s) => viewOf(c.view) === storeView(s);

/** The simulator's requests for `plural` from index `from` on (lists and watches). */
const requestsOf = (s, from = 0, plural = 'configmaps') =>
  s.requests.slice(from).filter((r) => r.path.endsWith(`/${plural}`));
const isWatch = (r) => r.query.watch === 'true' || r.query.watch === '1';
const isStreamingList = (r) => isWatch(r) && r.query.sendInitialEvents === 'true';
const isList = (r) => !isWatch(r);
/** The probe of the server's resourceVersion before a resumed watch (issue 47): one object, NotOlderThan. */
const isProbe = (r) =>
  !isWatch(r) && r.query.limit === '1' && r.query.resourceVersionMatch === 'NotOlderThan';
/** What request `r` is: 'stream' (a streaming list), 'list' (a page) or 'watch'. */
const requestKind = (r) => (isStreamingList(r) ? 'stream' : isList(r) ? 'list' : 'watch');

/** A ConfigMap. */
const cm = (name, labels = {}, namespace = 'default', data = { v: '1' }) => ({
  metadata: { name, namespace, labels },
  data,
});

module.exports = {
  delay,
  sim,
  recordingWatcher,
  params,
  consume,
  syncedInformer,
  oneConfigMap,
  storeView,
  viewOf,
  cm,
  keyOf,
  caughtUp,
  requestsOf,
  requestKind,
  isList,
  isWatch,
  isStreamingList,
  isProbe,
};
