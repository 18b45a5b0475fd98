'use strict';
// The viewers one replica follows for the live tab's publisher (./publisher.js): a
// (user, entity) pair per viewer, found by its id, by its user and by the watch keys its answer
// depends on. It sends no signal: the publisher decides who is signalled; this remembers.

/** Watch keys remembered per viewer at most: a bound on what one entity's request can pin. */
const MAX_KEYS_PER_VIEWER = 1024;

/** A viewer's id: its (user, entity) pair. */
const idOf = (userEntityRef, entityRef) => `${userEntityRef}\n${entityRef}`;

/** A viewer not yet answered: no key. Whether it is armed is its row's, in the store. */
function newViewer(userEntityRef, entityRef) {
  return {
    userEntityRef,
    entityRef,
    keys: new Map(),
    /** cluster → when the viewer's own access decisions behind its answer there expire */
    proven: new Map(),
    expiresAt: 0,
    /** Its row's write on its way to the store, and one waiting to start (./publisher.js). */
    writing: null,
    queued: null,
  };
}

class Viewers {
  /**
   * One (user, entity) pair, in order of its last load (a Map keeps insertion order, and a load
   * moves its viewer to the end), so the oldest and the expired are always at the front.
   * `keys`: watch key → the cluster's name as the viewer's answer names it, and the key as every
   * replica names it (`shared`: without this process's own identity keys, see ./informers.js).
   * @type {Map<string, { userEntityRef: string, entityRef: string,
   *   keys: Map<string, { cluster: string, shared: string }>, proven: Map<string, number>,
   *   expiresAt: number, writing: Promise<void> | null, queued: Promise<void> | null }>}
   */
  #viewers = new Map();
  /** userEntityRef → the ids of that user's viewers, oldest first. */
  #byUser = new Map();
  /** Watch key -> the ids of the viewers whose answer depends on it. */
  #byKey = new Map();

  get size() {
    return this.#viewers.size;
  }

  get(id) {
    return this.#viewers.get(id);
  }

  has(id) {
    return this.#viewers.has(id);
  }

  /** Every viewer, oldest load first. */
  values() {
    return this.#viewers.values();
  }

  /** The ids of this user's viewers, oldest first, if the user has any. */
  ofUser(userEntityRef) {
    return this.#byUser.get(userEntityRef);
  }

  /** The ids of the viewers whose answer depends on this watch key, if any does. */
  ofKey(watchKey) {
    return this.#byKey.get(watchKey);
  }

  /**
   * `viewer` was answered a load from these watch keys (`sharedKeys`: the same keys as every
   * replica names them) of the cluster its user knows as `cluster`: it goes to the end of the
   * order, and its keys add up to its earlier ones (the newest at the end, the oldest dropped
   * past MAX_KEYS_PER_VIEWER).
   */
  loaded(id, viewer, watchKeys, cluster, sharedKeys = watchKeys) {
    this.#viewers.delete(id); // re-inserted: the newest load goes to the end
    this.#byUser.get(viewer.userEntityRef)?.delete(id);
    this.#viewers.set(id, viewer);
    if (!this.#byUser.has(viewer.userEntityRef)) this.#byUser.set(viewer.userEntityRef, new Set());
    this.#byUser.get(viewer.userEntityRef).add(id);
    watchKeys.forEach((key, i) => {
      if (!viewer.keys.has(key) && viewer.keys.size >= MAX_KEYS_PER_VIEWER) {
        const oldest = viewer.keys.keys().next().value;
        viewer.keys.delete(oldest);
        this.#unlinkKey(id, oldest);
      }
      viewer.keys.delete(key); // re-inserted: the newest at the end
      viewer.keys.set(key, { cluster, shared: sharedKeys[i] ?? key });
      let ids = this.#byKey.get(key);
      if (!ids) this.#byKey.set(key, (ids = new Set()));
      ids.add(id);
    });
  }

  /** Forgets a viewer. */
  forget(id) {
    const viewer = this.#viewers.get(id);
    if (!viewer) return;
    this.#viewers.delete(id);
    const own = this.#byUser.get(viewer.userEntityRef);
    own?.delete(id);
    if (own?.size === 0) this.#byUser.delete(viewer.userEntityRef);
    for (const key of viewer.keys.keys()) this.#unlinkKey(id, key);
  }

  /** Drops expired viewers from the front. */
  sweep(t) {
    for (const [id, viewer] of this.#viewers) {
      if (viewer.expiresAt > t) break;
      this.forget(id);
    }
  }

  /** Forgets every viewer. */
  clear() {
    for (const id of [...this.#viewers.keys()]) this.forget(id);
  }

  #unlinkKey(id, key) {
    const ids = this.#byKey.get(key);
    ids?.delete(id);
    if (ids?.size === 0) this.#byKey.delete(key);
  }
}

/** The clusters a viewer's answer names. */
const clustersOf = (viewer) => [...new Set([...viewer.keys.values()].map((key) => key.cluster))];

module.exports = { Viewers, idOf, newViewer, clustersOf, MAX_KEYS_PER_VIEWER };
