'use strict';
// The live Kubernetes tab's backend half: who is looking at which entity, and a coalesced
// "look again" signal to each of them when something their answer depends on changes.
//
// The fetcher knows which informers (watch keys: one per informer, selector and namespace) an
// answer was made from; the objects provider (./live-provider.js) knows who asked and for which
// entity, and runs the default provider inside `liveRequestContext` so the fetcher can join the
// two with `viewed(...)`. When an informer sees a change, the fetcher calls `changed(watchKey)`
// and every recent viewer of an entity that depends on it gets a signal on
// `kubernetes:<entityRef>`: `{ clusters, at, id }` (`id`: the change's identity, the same on every
// replica that saw it), never object data. The browser then refetches
// through the usual permission-checked route, so the push reveals nothing the user could not load.
//
// Pure: no I/O but `signals.publish`, time from an injected `now`, timers from an injected
// `setTimer`, so every path runs under a fake clock in __test__/backstage-live.test.js.

const { AsyncLocalStorage } = require('node:async_hooks');
const { createSharedSignals, changeId } = require('./live-shared');

/**
 * The request being answered, for the fetcher: `{ userEntityRef, entityRef }` while the objects
 * provider runs a user's call, undefined otherwise (a service's call, or no objects provider).
 */
const liveRequestContext = new AsyncLocalStorage();

/**
 * Notes that a part of the answer being built is not followed by signals (the default fetcher
 * answered it, or its viewer could not be registered): the frontend must poll that answer, not
 * trust memory. Outside a user's call, nothing.
 */
function answerNotLive() {
  const context = liveRequestContext.getStore();
  if (context) context.notLive = true;
}

/** Notes that the answer being built is followed: its viewer is registered for signals. */
function answerFollowed() {
  const context = liveRequestContext.getStore();
  if (context) context.followed = true;
}

/** Whether the call that ran in `context` may be served from memory until a signal. */
function isLiveAnswer(context) {
  return Boolean(context?.followed) && !context.notLive;
}

/** The signals channel of an entity's Kubernetes tab; the frontend subscribes to the same name. */
const channelOf = (entityRef) => `kubernetes:${entityRef}`;

/** Watch keys remembered per viewer at most: a bound on what one entity's request can pin. */
const MAX_KEYS_PER_VIEWER = 1024;

/** A timer that does not keep the process alive; returns its cancel function. */
function defaultSetTimer(fn, ms) {
  const timer = setTimeout(fn, ms);
  timer.unref?.();
  return () => clearTimeout(timer);
}

/**
 * Publishes a coalesced signal to each recent viewer of an entity whose answer depends on a
 * changed watch key.
 *
 * A signal asks for one reload: a viewer is signalled at most once per load it was answered
 * (its next load registers it again), so a viewer refused since (a permission policy changed, a
 * token revoked), or whose tab has closed, hears nothing more. Every viewer within the bounds is
 * followed, and none is dropped silently: a user past `maxViewersPerUser` loses their oldest
 * viewer, which is signalled once so that its tab reloads (and is answered as not live if it
 * cannot be followed again); past `maxViewers` a new viewer is not registered, and its load
 * says so (`viewed` returns false: the frontend polls it).
 *
 * @param {object} options
 * @param {{ publish(signal: object): Promise<void> | void }} options.signals `signalsServiceRef`'s service
 * @param {{ warn(message: string): void }} [options.logger]
 * @param {number} [options.viewerTtlMs] how long a load keeps its viewer signalled (10 min)
 * @param {number} [options.maxViewers] (user, entity) pairs followed at most (10 000)
 * @param {number} [options.maxViewersPerUser] pairs of one user followed at most (200)
 * @param {number} [options.minIntervalMs] at most one signal per (entity, user) per this (250 ms)
 * @param {() => number} [options.now] the clock, in ms
 * @param {(fn: () => void, ms: number) => () => void} [options.setTimer] schedules `fn`; returns its cancel
 * @param {ReturnType<import('./registry').createViewerRegistry>} [options.registry] the replicas'
 *   registry in the plugin's database: with `share`, the viewers are shared there, and a change
 *   claims the entity's armed viewers and signals them all at once (./live-shared.js), whichever
 *   replica answered their loads; without `share` (no bus between replicas), it only counts the
 *   replicas, and while another is alive no viewer is followed: its answer is polled
 * @param {boolean} [options.share] whether signals reach every replica (the events bus)
 */
function createLivePublisher({
  signals,
  logger,
  viewerTtlMs = 600_000,
  maxViewers = 10_000,
  maxViewersPerUser = 200,
  minIntervalMs = 250,
  now = Date.now,
  setTimer = defaultSetTimer,
  registry = null,
  share = true,
} = {}) {
  if (!signals || typeof signals.publish !== 'function') {
    throw new TypeError('createLivePublisher: options.signals must have a publish() method');
  }
  for (const [name, value] of Object.entries({ viewerTtlMs, maxViewers, maxViewersPerUser, minIntervalMs })) {
    if (!Number.isFinite(value) || value < 0) {
      throw new TypeError(`createLivePublisher: options.${name} must be a finite number >= 0`);
    }
  }

  /**
   * One (user, entity) pair, in order of its last load (a Map keeps insertion order, and a load
   * moves its viewer to the end), so the oldest and the expired are always at the front.
   * `keys`: watch key → the cluster's name as the viewer's answer names it. `armed`: answered
   * since its last signal.
   * @type {Map<string, { userEntityRef: string, entityRef: string, keys: Map<string, string>,
   *   expiresAt: number, lastSentAt: number, armed: boolean, pending: Set<string> | null,
   *   cancel: (() => void) | null }>}
   */
  const viewers = new Map();
  /** userEntityRef → the ids of that user's viewers, oldest first. */
  const byUser = new Map();
  /** Watch key -> the ids of the viewers whose answer depends on it. */
  const byKey = new Map();
  const counts = { published: 0, failed: 0, lost: 0, evicted: 0, refused: 0, crowded: 0 };
  let closed = false;
  let warned = false;
  /**
   * The registry's writes of loads not yet done, each with its entity: a load's answer waits for
   * its own, and a claim of an entity for that entity's (a change seen while a load's write is
   * on its way must find that load armed, or its answer, older than the change, is never
   * signalled).
   */
  const writes = new Map();
  function track(write, entityRef) {
    const done = write.catch(() => {}).finally(() => writes.delete(done));
    writes.set(done, entityRef);
  }
  const writesOf = (entityRef) => [...writes].filter(([, of]) => of === entityRef).map(([done]) => done);
  const shared =
    registry &&
    share &&
    createSharedSignals({
      registry,
      signals,
      channelOf,
      logger,
      minIntervalMs,
      now,
      setTimer,
      writesOf,
    });

  const idOf = (userEntityRef, entityRef) => `${userEntityRef}\n${entityRef}`;

  function unlinkKey(id, key) {
    const ids = byKey.get(key);
    ids?.delete(id);
    if (ids?.size === 0) byKey.delete(key);
  }

  function forget(id) {
    const viewer = viewers.get(id);
    if (!viewer) return;
    viewer.cancel?.();
    viewers.delete(id);
    const own = byUser.get(viewer.userEntityRef);
    own?.delete(id);
    if (own?.size === 0) byUser.delete(viewer.userEntityRef);
    for (const key of viewer.keys.keys()) unlinkKey(id, key);
  }

  /** Drops expired viewers from the front. */
  function sweep(t) {
    for (const [id, viewer] of viewers) {
      if (viewer.expiresAt > t) break;
      forget(id);
    }
  }

  function send(viewer) {
    const clusters = [...viewer.pending].sort();
    // The change's identity: what the viewer's answer became, which every replica that saw the
    // same change computes alike, so the frontend drops a second signal of it.
    const id = changeId(viewer.changes);
    viewer.pending = null;
    viewer.changes = new Set();
    viewer.armed = false;
    viewer.lastSentAt = now();
    const signal = {
      recipients: { type: 'user', entityRef: viewer.userEntityRef },
      channel: channelOf(viewer.entityRef),
      message: { clusters, at: viewer.lastSentAt, id },
    };
    counts.published++;
    // publish() goes through the events service. A failure re-arms the viewer, so the next
    // change tries again, rather than leaving its tab on an answer nobody will signal.
    Promise.resolve()
      .then(() => signals.publish(signal))
      .catch((error) => {
        counts.failed++;
        if (viewers.get(idOf(viewer.userEntityRef, viewer.entityRef)) === viewer) viewer.armed = true;
        if (warned) return;
        warned = true;
        logger?.warn(`kube-watch-native: publishing a live signal failed (reported once): ${error}`);
      });
  }

  /** The trailing signal of a busy spell, at `lastSentAt + minIntervalMs`. */
  function flush(id) {
    const viewer = viewers.get(id);
    if (!viewer) return;
    viewer.cancel = null;
    if (viewer.expiresAt <= now()) return forget(id);
    if (viewer.pending) send(viewer);
  }

  /** Signals `viewer` for these clusters, at once or at the end of its minInterval. */
  function signal(id, viewer, clusters, t, change) {
    viewer.pending ??= new Set();
    for (const cluster of clusters) viewer.pending.add(cluster);
    if (change !== undefined) viewer.changes.add(change);
    if (viewer.cancel) return; // a trailing signal is due and will carry this one
    const wait = viewer.lastSentAt + minIntervalMs - t;
    if (wait <= 0) send(viewer);
    else viewer.cancel = setTimer(() => flush(id), wait);
  }

  /** Makes room for one more viewer of `userEntityRef`: false when there is none. */
  function room(userEntityRef, t) {
    sweep(t);
    const own = byUser.get(userEntityRef);
    if (own && own.size >= maxViewersPerUser) {
      // The user's oldest viewer goes, told once so that an open tab reloads.
      const oldest = own.values().next().value;
      const viewer = viewers.get(oldest);
      counts.evicted++;
      if (shared) {
        const clusters = [...new Set(viewer.keys.values())];
        shared.pollNow([{ userEntityRef, entityRef: viewer.entityRef, clusters }], 'evicted');
        track(registry.forget(userEntityRef, viewer.entityRef));
      } else if (viewer.armed) {
        send(
          Object.assign(viewer, {
            pending: new Set(viewer.keys.values()),
            changes: new Set([`evicted ${t}`]),
          }),
        );
      }
      forget(oldest);
    }
    if (viewers.size >= maxViewers) {
      counts.refused++;
      return false;
    }
    return true;
  }

  return {
    /**
     * A user's load was answered from these watch keys of the cluster the user knows as
     * `cluster` (the fetcher calls it once per cluster it answered, so keys add up); arms the
     * viewer for one signal and refreshes its TTL. Returns whether the viewer is followed.
     * @param {string} userEntityRef
     * @param {string} entityRef
     * @param {string[]} watchKeys
     * @param {{ cluster?: string }} [answered]
     */
    viewed(userEntityRef, entityRef, watchKeys, { cluster = '' } = {}) {
      if (closed) return false;
      if (typeof userEntityRef !== 'string' || typeof entityRef !== 'string' || !Array.isArray(watchKeys)) {
        throw new TypeError('viewed(userEntityRef: string, entityRef: string, watchKeys: string[])');
      }
      if (registry && !shared && registry.others > 0) {
        // Another replica is alive and nothing carries this one's signals to its WebSockets.
        if (counts.crowded++ === 0) {
          logger?.warn(
            'kube-watch-native: another backend replica shares this database, but no events bus carries signals between replicas (install the events backend plugin on PostgreSQL): answers are not live, the tab polls as usual',
          );
        }
        return false;
      }
      const t = now();
      const id = idOf(userEntityRef, entityRef);
      let viewer = viewers.get(id);
      if (viewer) {
        viewers.delete(id); // re-inserted below: the newest load goes to the end
        byUser.get(userEntityRef).delete(id);
      } else {
        if (!room(userEntityRef, t)) return false;
        viewer = {
          userEntityRef,
          entityRef,
          keys: new Map(),
          expiresAt: 0,
          lastSentAt: -Infinity,
          armed: false,
          pending: null,
          changes: new Set(),
          cancel: null,
        };
      }
      viewer.expiresAt = t + viewerTtlMs;
      viewer.armed = true;
      viewers.set(id, viewer);
      if (!byUser.has(userEntityRef)) byUser.set(userEntityRef, new Set());
      byUser.get(userEntityRef).add(id);
      for (const key of watchKeys) {
        if (!viewer.keys.has(key) && viewer.keys.size >= MAX_KEYS_PER_VIEWER) {
          const oldest = viewer.keys.keys().next().value;
          viewer.keys.delete(oldest);
          unlinkKey(id, oldest);
        }
        viewer.keys.delete(key); // re-inserted: the newest at the end
        viewer.keys.set(key, cluster);
        let ids = byKey.get(key);
        if (!ids) byKey.set(key, (ids = new Set()));
        ids.add(id);
      }
      sweep(t);
      if (!viewers.has(id)) return false;
      if (shared) {
        // Not in the registry, no replica would claim it: its answer is polled, not trusted.
        const context = liveRequestContext.getStore();
        const clusters = [...new Set(viewer.keys.values())];
        const write = registry.loaded(userEntityRef, entityRef, clusters, viewer.expiresAt);
        track(
          write.catch((error) => {
            if (context) context.notLive = true;
            throw error;
          }),
          entityRef,
        );
      }
      return true;
    },

    /** Resolves when the shared registry holds every load registered so far (at once without one). */
    async settled() {
      await Promise.all(writes.keys());
    },

    /** Viewers of a replica that is gone, claimed here: each must load again. */
    orphaned(rows) {
      shared?.pollNow(rows, 'replica gone');
    },

    /**
     * Something under this watch key changed (an object the key's selector selects, before or
     * after the change, the informer's failure, or whether its cache is served): signal each
     * viewer that depends on it and was answered since its last signal, the first at once
     * after a quiet spell, then at most one per `minIntervalMs`.
     * @param {string} watchKey
     * @param {{ change?: string }} [what] what the key's answer became (a content fingerprint the
     *   same on every replica), so that the signal carries the change's identity
     */
    changed(watchKey, { change } = {}) {
      if (closed) return;
      const t = now();
      sweep(t);
      const ids = byKey.get(watchKey);
      if (!ids) return;
      if (shared) {
        // Armed or not here: the registry knows which loads, on any replica, wait for a signal.
        const entities = new Set([...ids].map((id) => viewers.get(id).entityRef));
        for (const entityRef of entities) shared.entityChanged(entityRef, change);
        return;
      }
      for (const id of [...ids]) {
        const viewer = viewers.get(id);
        if (!viewer.armed) continue; // signalled already: its reload arms it again
        signal(id, viewer, [viewer.keys.get(watchKey)], t, change);
      }
    },

    /** Stops following a (user, entity) pair: its user was refused what its answer shows. */
    forget(userEntityRef, entityRef) {
      forget(idOf(userEntityRef, entityRef));
      if (shared) track(registry.forget(userEntityRef, entityRef));
    },

    /** Whether a viewer not yet expired depends on this watch key. */
    watching(watchKey) {
      const ids = byKey.get(watchKey);
      if (!ids) return false;
      const t = now();
      for (const id of ids) if (viewers.get(id)?.expiresAt > t) return true;
      return false;
    },

    /** (user, entity) pairs followed now. */
    get size() {
      return viewers.size;
    },

    /** Signals sent, publishes that failed, viewers evicted for their user's share, and refused. */
    counts() {
      if (!shared) return { ...counts };
      const bus = shared.counts();
      return { ...counts, published: bus.published, failed: bus.failed, lost: bus.lost, queued: bus.queued };
    },

    /**
     * Forgets every viewer and cancels every pending signal; with a shared registry, first hands
     * the viewers whose latest load this replica answered to the others (they load again).
     * Safe to call twice.
     */
    async close() {
      if (closed) return;
      closed = true;
      for (const id of [...viewers.keys()]) forget(id);
      if (shared) await shared.close();
      else await registry?.close().catch(() => {});
    },
  };
}

module.exports = {
  createLivePublisher,
  liveRequestContext,
  channelOf,
  answerNotLive,
  answerFollowed,
  isLiveAnswer,
};
