'use strict';
// The live Kubernetes tab's publisher: who is looking at which entity, and a coalesced "look
// again" signal to each of them when something their answer depends on changes.
//
// The informers' following (./informers.js) knows which watch keys (one per informer, selector
// and namespace) an answer was made from; the objects provider (./provider.js) knows who asked
// and for which entity, and runs the default provider inside `liveRequestContext` (./mark.js),
// so that the two are joined in `viewed(...)`. When an answer under a watch key changes,
// `changed(watchKey)` claims the viewers whose answers depend on it from a store of viewers'
// rows, this replica's memory (./store-memory.js) or the replicas' database (./store-sql.js):
// one model, the same rules over either (./signals.js). Each gets a signal on
// `kubernetes:<entityRef>` (../protocol.js): `{ clusters, at, id }`, never object data. The
// browser then refetches through the usual permission-checked route, so the push reveals
// nothing the user could not load.
//
// Pure: no I/O but `signals.publish` and the store, time from an injected `now`, timers from an
// injected `setTimer`, so every path runs under a fake clock in __test__/backstage-live.test.js.

const { createSharedSignals } = require('./signals');
const { createMemoryRegistry } = require('./store-memory');
const { Viewers, idOf, newViewer, clustersOf } = require('./viewers');
const { liveRequestContext, markNotLive, markNewViewer } = require('./mark');
const { channelOf } = require('kube-watch-native-protocol');

/** Viewers whose access is to be asked again are claimed at most this often. */
const RECHECK_GRAIN_MS = 250;

/** When the viewer's access decisions behind its answer expire (the soonest), or null. */
function recheckOf(viewer) {
  let at = null;
  for (const until of viewer.proven.values()) at = at === null ? until : Math.min(at, until);
  return at;
}

/** The viewer's watch keys as its row keeps them: each key as every replica names it → its cluster. */
const watchKeysOf = (viewer) =>
  Object.fromEntries([...viewer.keys.values()].map(({ shared, cluster }) => [shared, cluster]));

/** A timer that does not keep the process alive; returns its cancel function. */
function defaultSetTimer(fn, ms) {
  const timer = setTimeout(fn, ms);
  timer.unref?.();
  return () => clearTimeout(timer);
}

/** The publisher's options when not given (see createLivePublisher). */
const DEFAULTS = {
  viewerTtlMs: 600_000,
  maxViewers: 10_000,
  maxViewersPerUser: 200,
  minIntervalMs: 250,
  registryWaitMs: 500,
  now: Date.now,
  setTimer: defaultSetTimer,
  registry: null,
  share: true,
};

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
 * @param {number} [options.minIntervalMs] at most one claim that signals anyone per entity per this (250 ms)
 * @param {number} [options.registryWaitMs] a load waits this long at most for its own row in the
 *   shared registry (500 ms); past it, its answer is not live
 * @param {() => number} [options.now] the clock, in ms
 * @param {(fn: () => void, ms: number) => () => void} [options.setTimer] schedules `fn`; returns its cancel
 * @param {ReturnType<import('./store-sql').createViewerRegistry>} [options.registry] the replicas'
 *   registry in the plugin's database: with `share`, the viewers' rows are kept there rather than
 *   in this replica's memory, and a change claims them whichever replica answered their loads
 *   (./signals.js, the same rules over either store); without `share` (no bus between
 *   replicas), it only counts the replicas, and while another is alive no viewer is followed:
 *   its answer is polled
 * @param {boolean} [options.share] whether signals reach every replica (the events bus)
 */
function createLivePublisher(options = {}) {
  const settings = { ...options };
  // As a parameter's default would: an option given as undefined is not given.
  for (const [name, value] of Object.entries(DEFAULTS)) {
    if (settings[name] === undefined) settings[name] = value;
  }
  if (!settings.signals || typeof settings.signals.publish !== 'function') {
    throw new TypeError('createLivePublisher: options.signals must have a publish() method');
  }
  for (const name of ['viewerTtlMs', 'maxViewers', 'maxViewersPerUser', 'minIntervalMs', 'registryWaitMs']) {
    const value = settings[name];
    if (!Number.isFinite(value) || value < 0) {
      throw new TypeError(`createLivePublisher: options.${name} must be a finite number >= 0`);
    }
  }
  const publisher = new LivePublisher({ ...settings, channelOf });
  // A plain object whose methods need no `this`: a caller may pass one on, or wrap the
  // publisher (Object.create) to stand in for some of them.
  return {
    viewed: (userEntityRef, entityRef, watchKeys, answered) =>
      publisher.viewed(userEntityRef, entityRef, watchKeys, answered),
    settled: () => publisher.settled(),
    answered: (context) => publisher.answered(context),
    orphaned: (rows) => publisher.orphaned(rows),
    unheard: (rows) => publisher.unheard(rows),
    changed: (watchKey, what) => publisher.changed(watchKey, what),
    forget: (userEntityRef, entityRef) => publisher.forget(userEntityRef, entityRef),
    watching: (watchKey) => publisher.watching(watchKey),
    get size() {
      return publisher.size;
    },
    counts: () => publisher.counts(),
    close: () => publisher.close(),
  };
}

/**
 * The publisher behind createLivePublisher(): the viewers this replica answered (./viewers.js),
 * the room each user and all of them get, their rows in the store and their signals.
 */
class LivePublisher {
  /** createLivePublisher's options, each given or its default, and `channelOf`. */
  #options;
  #viewers = new Viewers();
  #counts = { evicted: 0, refused: 0, crowded: 0, slowWrites: 0, rechecked: 0 };
  /** The timer of the next claim of viewers whose access is to be asked again: { at, cancel } */
  #recheck = null;
  #closed = false;
  /**
   * The registry's writes of loads not yet done, each with its entity: a load's answer waits for
   * its own, and a claim of an entity for that entity's (a change seen while a load's write is
   * on its way must find that load armed, or its answer, older than the change, is never
   * signalled).
   */
  #writes = new Map();
  /** The viewers' rows: the replicas' registry when they share viewers, else this replica's memory. */
  #store;
  /** Claims and signals over #store (./signals.js). */
  #signals;

  constructor(options) {
    this.#options = options;
    const writesOf = (entityRef) =>
      [...this.#writes].filter(([, of]) => of === entityRef).map(([done]) => done);
    // The viewers answered here of an entity whose answers depend on one of `keys` (as every
    // replica names them; null: any), as the registry's rows: told to load again when a claim
    // of them fails.
    const viewersOf = (entityRef, keys) => {
      const rows = [];
      for (const viewer of this.#viewers.values()) {
        if (viewer.entityRef !== entityRef) continue;
        const clusters = [...viewer.keys.values()]
          .filter(({ shared }) => keys === null || keys.has(shared))
          .map(({ cluster }) => cluster);
        if (clusters.length > 0) rows.push({ userEntityRef: viewer.userEntityRef, entityRef, clusters });
      }
      return rows;
    };
    const shared = Boolean(options.registry && options.share);
    this.#store = shared ? options.registry : createMemoryRegistry({ now: options.now });
    this.#signals = createSharedSignals({ ...options, registry: this.#store, writesOf, viewersOf });
  }

  /**
   * A user's load was answered from these watch keys of the cluster the user knows as
   * `cluster` (the fetcher calls it once per cluster it answered, so keys add up); arms the
   * viewer for one signal and refreshes its TTL. Returns whether the viewer is followed.
   * @param {string} userEntityRef
   * @param {string} entityRef
   * @param {string[]} watchKeys
   * @param {{ cluster?: string, sharedKeys?: string[], provenUntil?: number }} [answered]
   *   `sharedKeys`: the same keys as every replica names them (./informers.js), for the shared
   *   registry's claims; `provenUntil`: when the viewer's own access decisions behind this
   *   cluster's answer expire, at which time the viewer is told to load again (its load asks
   *   again: a binding revoked shows then), once; an answer proven no longer is not followed
   */
  viewed(userEntityRef, entityRef, watchKeys, { cluster = '', sharedKeys = watchKeys, provenUntil } = {}) {
    if (this.#closed) return false;
    if (typeof userEntityRef !== 'string' || typeof entityRef !== 'string' || !Array.isArray(watchKeys)) {
      throw new TypeError('viewed(userEntityRef: string, entityRef: string, watchKeys: string[])');
    }
    if (this.#crowded()) return false;
    const t = this.#options.now();
    if (provenUntil !== undefined && !(provenUntil > t)) return false;
    const id = idOf(userEntityRef, entityRef);
    let viewer = this.#viewers.get(id);
    if (!viewer) {
      if (!this.#room(userEntityRef, t)) return false;
      viewer = newViewer(userEntityRef, entityRef);
      markNewViewer();
    }
    viewer.expiresAt = t + this.#options.viewerTtlMs;
    if (provenUntil !== undefined && Number.isFinite(provenUntil)) viewer.proven.set(cluster, provenUntil);
    else viewer.proven.delete(cluster);
    this.#viewers.loaded(id, viewer, watchKeys, cluster, sharedKeys);
    this.#viewers.sweep(t);
    if (!this.#viewers.has(id)) return false;
    this.#record(viewer);
    return true;
  }

  /** Resolves when the shared registry holds every load registered so far (at once without one). */
  async settled() {
    await Promise.all(this.#writes.keys());
  }

  /**
   * Resolves when the shared registry holds the loads registered in this request's `context`
   * (./mark.js), or after `registryWaitMs`, whichever comes first: a load waits for its
   * own row and nobody else's, and never longer than the bound. A row not written by then (the
   * database slow, stalled or failing) leaves the answer not live: the frontend polls it.
   */
  async answered(context) {
    const own = context?.writes;
    if (!own || own.length === 0) return;
    let timer;
    const late = new Promise((resolve) => {
      timer = this.#options.setTimer(() => resolve(true), this.#options.registryWaitMs);
    });
    const slow = await Promise.race([Promise.all(own).then(() => false), late]);
    timer();
    if (!slow) return;
    markNotLive(context);
    this.#counts.slowWrites++;
  }

  /** Viewers of a replica that is gone, claimed here: each must load again. */
  orphaned(rows) {
    this.#signals.pollNow(rows, 'replica gone');
  }

  /** Viewers signalled a while ago that have not loaded since, claimed again here: the same signal again. */
  unheard(rows) {
    this.#signals.resend(rows);
  }

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
    if (this.#closed) return;
    const t = this.#options.now();
    this.#viewers.sweep(t);
    const ids = this.#viewers.ofKey(watchKey);
    if (!ids) return;
    // Armed or not here: the store knows which loads, on any replica, wait for a signal, and
    // claims those whose answers depend on this key as every replica names it.
    const entities = new Map();
    for (const id of ids) {
      const viewer = this.#viewers.get(id);
      entities.set(viewer.entityRef, viewer.keys.get(watchKey).shared);
    }
    for (const [entityRef, sharedKey] of entities) this.#signals.entityChanged(entityRef, change, sharedKey);
  }

  /** Stops following a (user, entity) pair: its user was refused what its answer shows. */
  forget(userEntityRef, entityRef) {
    this.#viewers.forget(idOf(userEntityRef, entityRef));
    this.#track(this.#store.forget(userEntityRef, entityRef));
  }

  /** Whether a viewer not yet expired depends on this watch key. */
  watching(watchKey) {
    const ids = this.#viewers.ofKey(watchKey);
    if (!ids) return false;
    const t = this.#options.now();
    for (const id of ids) if (this.#viewers.get(id)?.expiresAt > t) return true;
    return false;
  }

  /** (user, entity) pairs followed now. */
  get size() {
    return this.#viewers.size;
  }

  /**
   * Signals sent, publishes that failed, viewers evicted for their user's share, and refused;
   * loads answered not live because their row was late (`slowWrites`); with a shared registry,
   * claims that failed, were tried again, and the viewers told to load again for them.
   */
  counts() {
    const bus = this.#signals.counts();
    return {
      ...this.#counts,
      published: bus.published,
      failed: bus.failed,
      lost: bus.lost,
      queued: bus.queued,
      claimsFailed: bus.claimsFailed,
      claimsRetried: bus.claimsRetried,
      toldToPoll: bus.toldToPoll,
      // The replicas' registry's statements that failed (beats included: each is tried again
      // at the next beat).
      statementsFailed: this.#options.registry?.counts?.().failed ?? 0,
    };
  }

  /**
   * Forgets every viewer and cancels every pending signal; with a shared registry, first hands
   * the viewers whose latest load this replica answered to the others (they load again).
   * Safe to call twice.
   */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    this.#viewers.clear();
    this.#recheck?.cancel();
    this.#recheck = null;
    await this.#signals.close();
    // The replicas' registry that only counted replicas (no bus): leave it too.
    if (this.#options.registry && this.#options.registry !== this.#store) {
      await this.#options.registry.close().catch(() => {});
    }
  }

  /** Whether no viewer may be followed: another replica is alive, and no bus reaches it. */
  #crowded() {
    const { registry, logger } = this.#options;
    if (!registry || registry === this.#store || !(registry.others > 0)) return false;
    // Another replica is alive and nothing carries this one's signals to its WebSockets.
    if (this.#counts.crowded++ === 0) {
      logger?.warn(
        'kube-watch-native: another backend replica shares this database, but no events bus carries signals between replicas (install the events backend plugin on PostgreSQL): answers are not live, the tab polls as usual',
      );
    }
    return true;
  }

  /** Records the viewer's load in the store, where a change (seen by any replica) claims it. */
  #record(viewer) {
    // Not in the registry, no replica would claim it: its answer is polled, not trusted.
    const context = liveRequestContext.getStore();
    const recheckAt = recheckOf(viewer);
    if (recheckAt !== null) this.#scheduleRecheck(recheckAt);
    // This replica's memory takes the row at once. In the replicas' database, a claim of the
    // entity waits for it (writesOf), and so does the load's answer (answered()).
    if (this.#store !== this.#options.registry) {
      void this.#store.loaded(
        viewer.userEntityRef,
        viewer.entityRef,
        watchKeysOf(viewer),
        viewer.expiresAt,
        recheckAt,
      );
      return;
    }
    const write = this.#write(viewer).catch((error) => {
      markNotLive(context);
      throw error;
    });
    this.#track(write, viewer.entityRef);
    if (context) (context.writes ??= []).push(write.catch(() => {}));
  }

  /**
   * Writes the viewer's row as it is when the write starts. One load's clusters each add keys
   * (one viewed() per cluster): their writes go one after another, so that the last to commit
   * holds every key (in parallel, the first cluster's row could commit last and drop the others'
   * keys, and a change under them would claim nobody); a write still waiting to start serves
   * every later call, since it reads the keys when it starts.
   */
  #write(viewer) {
    if (viewer.queued) return viewer.queued;
    const write = (viewer.writing ?? Promise.resolve())
      .catch(() => {})
      .then(() => {
        viewer.queued = null;
        const { userEntityRef, entityRef, expiresAt } = viewer;
        return this.#store.loaded(
          userEntityRef,
          entityRef,
          watchKeysOf(viewer),
          expiresAt,
          recheckOf(viewer),
        );
      });
    viewer.queued = write;
    viewer.writing = write;
    return write;
  }

  /** Claims the viewers whose access must be asked again at `at` (or as soon as one is due). */
  #scheduleRecheck(at) {
    if (this.#recheck && this.#recheck.at <= at) return;
    this.#recheck?.cancel();
    const wait = Math.max(RECHECK_GRAIN_MS, at - this.#options.now());
    const cancel = this.#options.setTimer(() => void this.#claimRechecks(), wait);
    this.#recheck = { at: this.#options.now() + wait, cancel };
  }

  /**
   * Tells the viewers whose access decisions have expired to load again (their load asks them
   * again), once: claimed in the store, as a change claims them, so each load hears it once
   * whichever replica answered it. Then waits for the next such viewer answered here.
   */
  async #claimRechecks() {
    this.#recheck = null;
    if (this.#closed) return;
    try {
      const rows = await this.#store.claimDue();
      this.#counts.rechecked += rows.length;
      if (rows.length > 0) this.#signals.pollNow(rows, 'access recheck');
    } catch {
      // Logged by the store; tried again at the next grain.
      this.#scheduleRecheck(this.#options.now());
      return;
    }
    const t = this.#options.now();
    let next = Infinity;
    for (const viewer of this.#viewers.values()) {
      const at = recheckOf(viewer);
      if (at !== null && at > t && viewer.expiresAt > t) next = Math.min(next, at);
    }
    if (Number.isFinite(next)) this.#scheduleRecheck(next);
  }

  #track(write, entityRef) {
    const done = write.catch(() => {}).finally(() => this.#writes.delete(done));
    this.#writes.set(done, entityRef);
  }

  /** Makes room for one more viewer of `userEntityRef`: false when there is none. */
  #room(userEntityRef, t) {
    this.#viewers.sweep(t);
    const own = this.#viewers.ofUser(userEntityRef);
    if (own && own.size >= this.#options.maxViewersPerUser) {
      // The user's oldest viewer goes, told once so that an open tab reloads.
      const oldest = own.values().next().value;
      const viewer = this.#viewers.get(oldest);
      this.#counts.evicted++;
      this.#signals.pollNow(
        [{ userEntityRef, entityRef: viewer.entityRef, clusters: clustersOf(viewer) }],
        'evicted',
      );
      this.#track(this.#store.forget(userEntityRef, viewer.entityRef));
      this.#viewers.forget(oldest);
    }
    if (this.#viewers.size >= this.#options.maxViewers) {
      this.#counts.refused++;
      return false;
    }
    return true;
  }
}

module.exports = { createLivePublisher, channelOf };
