'use strict';
// The live Kubernetes tab's backend half: who is looking at which entity, and a coalesced
// "look again" signal to each of them when something their answer depends on changes.
//
// The fetcher knows which informers (watch keys: one per informer, selector and namespace) an
// answer was made from; the objects provider (./live-provider.js) knows who asked and for which
// entity, and runs the default provider inside `liveRequestContext` so the fetcher can join the
// two with `viewed(...)`. When an informer sees a change, the fetcher calls `changed(watchKey)`
// and every recent viewer of an entity that depends on it gets a signal on
// `kubernetes:<entityRef>`: `{ clusters, at }`, never object data. The browser then refetches
// through the usual permission-checked route, so the push reveals nothing the user could not load.
//
// Pure: no I/O but `signals.publish`, time from an injected `now`, timers from an injected
// `setTimer`, so every path runs under a fake clock in __test__/backstage-live.test.js.

const { AsyncLocalStorage } = require('node:async_hooks');

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
 * @param {object} options
 * @param {{ publish(signal: object): Promise<void> | void }} options.signals `signalsServiceRef`'s service
 * @param {{ warn(message: string): void }} [options.logger]
 * @param {number} [options.viewerTtlMs] how long a load keeps its viewer signalled (10 min)
 * @param {number} [options.maxViewers] (user, entity) pairs remembered at most; the oldest go first
 * @param {number} [options.minIntervalMs] at most one signal per (entity, user) per this (250 ms)
 * @param {() => number} [options.now] the clock, in ms
 * @param {(fn: () => void, ms: number) => () => void} [options.setTimer] schedules `fn`; returns its cancel
 */
function createLivePublisher({
  signals,
  logger,
  viewerTtlMs = 600_000,
  maxViewers = 10_000,
  minIntervalMs = 250,
  now = Date.now,
  setTimer = defaultSetTimer,
} = {}) {
  if (!signals || typeof signals.publish !== 'function') {
    throw new TypeError('createLivePublisher: options.signals must have a publish() method');
  }
  for (const [name, value] of Object.entries({ viewerTtlMs, maxViewers, minIntervalMs })) {
    if (!Number.isFinite(value) || value < 0) {
      throw new TypeError(`createLivePublisher: options.${name} must be a finite number >= 0`);
    }
  }

  /**
   * One (user, entity) pair, in order of its last load (a Map keeps insertion order, and a load
   * moves its viewer to the end), so the oldest and the expired are always at the front.
   * @type {Map<string, { userEntityRef: string, entityRef: string, keys: Set<string>,
   *   expiresAt: number, lastSentAt: number, pending: Set<string> | null, cancel: (() => void) | null }>}
   */
  const viewers = new Map();
  /** Watch key -> the ids of the viewers whose answer depends on it. */
  const byKey = new Map();
  let closed = false;
  let warned = false;

  const idOf = (userEntityRef, entityRef) => `${userEntityRef}\n${entityRef}`;

  function forget(id) {
    const viewer = viewers.get(id);
    if (!viewer) return;
    viewer.cancel?.();
    viewers.delete(id);
    for (const key of viewer.keys) {
      const ids = byKey.get(key);
      ids?.delete(id);
      if (ids?.size === 0) byKey.delete(key);
    }
  }

  /** Drops expired viewers from the front, and the oldest past `maxViewers`. */
  function sweep(t) {
    for (const [id, viewer] of viewers) {
      if (viewer.expiresAt > t && viewers.size <= maxViewers) break;
      forget(id);
    }
  }

  function send(viewer) {
    const clusters = [...viewer.pending].sort();
    viewer.pending = null;
    viewer.lastSentAt = now();
    const signal = {
      recipients: { type: 'user', entityRef: viewer.userEntityRef },
      channel: channelOf(viewer.entityRef),
      message: { clusters, at: viewer.lastSentAt },
    };
    // publish() goes through the events service; a failure costs one refresh, not the informer.
    Promise.resolve()
      .then(() => signals.publish(signal))
      .catch((error) => {
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

  return {
    /**
     * A user loaded an entity whose answer depends on these watch keys (the fetcher calls it once
     * per cluster it answered, so keys add up); refreshes the viewer's TTL. Returns whether the
     * viewer is registered (signals will follow its answer).
     * @param {string} userEntityRef
     * @param {string} entityRef
     * @param {string[]} watchKeys
     */
    viewed(userEntityRef, entityRef, watchKeys) {
      if (closed) return false;
      if (typeof userEntityRef !== 'string' || typeof entityRef !== 'string' || !Array.isArray(watchKeys)) {
        throw new TypeError('viewed(userEntityRef: string, entityRef: string, watchKeys: string[])');
      }
      const t = now();
      const id = idOf(userEntityRef, entityRef);
      let viewer = viewers.get(id);
      if (viewer) {
        viewers.delete(id); // re-inserted below: the newest load goes to the end
      } else {
        viewer = {
          userEntityRef,
          entityRef,
          keys: new Set(),
          expiresAt: 0,
          lastSentAt: -Infinity,
          pending: null,
          cancel: null,
        };
      }
      viewer.expiresAt = t + viewerTtlMs;
      viewers.set(id, viewer);
      for (const key of watchKeys) {
        if (viewer.keys.has(key)) continue;
        if (viewer.keys.size >= MAX_KEYS_PER_VIEWER) {
          const oldest = viewer.keys.values().next().value;
          viewer.keys.delete(oldest);
          const ids = byKey.get(oldest);
          ids?.delete(id);
          if (ids?.size === 0) byKey.delete(oldest);
        }
        viewer.keys.add(key);
        let ids = byKey.get(key);
        if (!ids) byKey.set(key, (ids = new Set()));
        ids.add(id);
      }
      sweep(t);
      return viewers.has(id);
    },

    /**
     * Something under this watch key changed (an object the key's selector selects, before or
     * after the change, or the informer's error state): signal each recent viewer that depends
     * on it, the first at once after a quiet spell, then at most one per `minIntervalMs`.
     * @param {string} watchKey
     * @param {{ clusters?: string[] }} [change] the clusters the change was seen on
     */
    changed(watchKey, { clusters = [] } = {}) {
      if (closed) return;
      const t = now();
      sweep(t);
      const ids = byKey.get(watchKey);
      if (!ids) return;
      for (const id of [...ids]) {
        const viewer = viewers.get(id);
        if (viewer.expiresAt <= t) {
          forget(id);
          continue;
        }
        viewer.pending ??= new Set();
        for (const cluster of clusters) viewer.pending.add(cluster);
        if (viewer.cancel) continue; // a trailing signal is due and will carry this one
        const wait = viewer.lastSentAt + minIntervalMs - t;
        if (wait <= 0) send(viewer);
        else viewer.cancel = setTimer(() => flush(id), wait);
      }
    },

    /** Whether a viewer not yet expired depends on this watch key. */
    watching(watchKey) {
      const ids = byKey.get(watchKey);
      if (!ids) return false;
      const t = now();
      for (const id of ids) if (viewers.get(id)?.expiresAt > t) return true;
      return false;
    },

    /** (user, entity) pairs remembered now. */
    get size() {
      return viewers.size;
    },

    /** Forgets every viewer and cancels every pending signal; safe to call twice. */
    close() {
      closed = true;
      for (const id of [...viewers.keys()]) forget(id);
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
