'use strict';
// The live tab's signals, one model for one replica and many: a change under a watch key is
// coalesced per entity (at most one claim per `minIntervalMs` here, and through the entity's
// gate in the store at most one claim that signals anyone per `minIntervalMs`), the armed
// viewers whose answers depend on that key are claimed in the store (this replica's memory,
// ./store-memory.js, or the replicas' database, ./store-sql.js), and they get one signal per
// entity naming them all as recipients, through a bounded outbox in front of the events service
// (./outbox.js). With replicas, a signal the bus may have lost is sent again, with its id,
// when the registry hands its viewers back (./store-sql.js: unheard).

const crypto = require('node:crypto');
const { Outbox } = require('./outbox');
const { uniqueId } = require('kube-watch-native-protocol');

/** Entities' coalescing states kept before the ones past their interval are dropped. */
const PRUNE_AT = 1024;
/**
 * A claim that fails (the database refused it or did not answer in time) is tried again this
 * many times, after 1, 2, 4 s; its entity's viewers answered here are told to load again at once
 * (their next answer is live again only once the registry takes their row).
 */
const CLAIM_RETRIES = 3;
const CLAIM_RETRY_MS = 1000;

/** A change's identity: the same on every replica that saw the same changes. */
function changeId(changes) {
  return crypto
    .createHash('sha256')
    .update(JSON.stringify([...changes].sort()))
    .digest('base64url')
    .slice(0, 22);
}

/**
 * A claimed signal's identity: the change's, made unique to this publish. A claim is already
 * exactly one signal per load, and a later load may need a signal of the same change (its
 * refetch reached a replica that had not seen the change yet, which signals it when it does):
 * the frontend, which drops an id it has seen, must not take that one for a duplicate. Only a
 * retry of the same publish repeats an id.
 */
const claimId = (changes) => uniqueId(changeId(changes));

/**
 * Groups viewers' rows by entity, the clusters their answers named and their signal's id (when
 * the registry kept one): one signal to each group, naming its users.
 */
function byClusters(rows) {
  const groups = new Map();
  for (const row of rows) {
    const clusters = [...new Set(row.clusters)].sort();
    const signalId = row.signalId ?? null;
    const key = `${row.entityRef}\n${JSON.stringify(clusters)}\n${signalId}`;
    if (!groups.has(key)) groups.set(key, { entityRef: row.entityRef, clusters, signalId, users: [] });
    groups.get(key).users.push(row.userEntityRef);
  }
  return groups.values();
}

/** Logs a warning once per `what`. */
function warnerOnce(logger) {
  const warnedOf = new Set();
  return (what, message) => {
    if (warnedOf.has(what)) return;
    warnedOf.add(what);
    logger?.warn(`kube-watch-native: ${message} (reported once)`);
  };
}

/**
 * An entity's coalescing state: when it last claimed, the changes, the watch keys they were seen
 * under (null: any) and the loads' writes a claim due is to wait for, that claim's timer, and
 * the bound of a claim at a gate's end.
 */
function newState() {
  return {
    lastSentAt: -Infinity,
    changes: new Set(),
    keys: new Set(),
    before: [],
    cancel: null,
    loadedBy: null,
  };
}

/**
 * @param {object} options
 * @param {ReturnType<import('./store-sql').createViewerRegistry>} options.registry
 * @param {{ publish(signal: object): Promise<void> | void }} options.signals
 * @param {(entityRef: string) => string} options.channelOf
 * @param {{ warn(message: string): void }} [options.logger]
 * @param {number} options.minIntervalMs
 * @param {() => number} options.now
 * @param {(fn: () => void, ms: number) => () => void} options.setTimer
 * @param {(entityRef: string) => Promise<unknown>[]} [options.writesOf] this replica's writes of
 *   the entity's loads still on their way: a claim waits for them
 * @param {(entityRef: string, keys: Set<string> | null) => object[]} [options.viewersOf] the
 *   viewers whose loads this replica answered, of the entity and depending on one of the keys
 *   (null: any), as registry rows: told to load again when a claim fails
 */
function createSharedSignals(options) {
  const shared = new SharedSignals(options);
  // A plain object whose methods need no `this`, as the publisher's (./publisher.js).
  return {
    entityChanged: (entityRef, change, watchKey) => shared.entityChanged(entityRef, change, watchKey),
    pollNow: (rows, reason) => shared.pollNow(rows, reason),
    resend: (rows) => shared.resend(rows),
    counts: () => shared.counts(),
    close: (waitMs) => shared.close(waitMs),
  };
}

class SharedSignals {
  #registry;
  #minIntervalMs;
  #now;
  #setTimer;
  #writesOf;
  #viewersOf;
  #warnOnce;
  #outbox;
  #counts = { claimsFailed: 0, claimsRetried: 0, toldToPoll: 0 };
  /** entityRef → its coalescing state (newState()) */
  #entities = new Map();
  #closed = false;

  constructor({
    registry,
    signals,
    channelOf,
    logger,
    minIntervalMs,
    now,
    setTimer,
    writesOf = () => [],
    viewersOf = () => [],
  }) {
    this.#registry = registry;
    this.#minIntervalMs = minIntervalMs;
    this.#now = now;
    this.#setTimer = setTimer;
    this.#writesOf = writesOf;
    this.#viewersOf = viewersOf;
    this.#warnOnce = warnerOnce(logger);
    this.#outbox = new Outbox({ signals, channelOf, now, setTimer, warnOnce: this.#warnOnce });
  }

  /**
   * Something the entity's answers depend on changed, under `watchKey` as every replica names it
   * (undefined: whatever they depend on): claim and signal, coalesced per entity.
   */
  entityChanged(entityRef, change, watchKey) {
    if (this.#closed) return;
    let state = this.#entities.get(entityRef);
    if (!state && this.#entities.size >= PRUNE_AT) this.#prune();
    if (!state) {
      state = newState();
      this.#entities.set(entityRef, state);
    }
    state.changes.add(change ?? `${this.#now()}`);
    if (watchKey === undefined || state.keys === null) state.keys = null;
    else state.keys.add(watchKey);
    state.loadedBy = null; // the loads answered here before this change must be claimed too
    // The loads answered here before this change was seen, whose rows are still on their way:
    // the claim waits for them. Not the ones answered after it (their answers show it).
    state.before.push(...this.#writesOf(entityRef));
    if (state.cancel) return; // a trailing claim is due and carries this change
    const wait = state.lastSentAt + this.#minIntervalMs - this.#now();
    if (wait <= 0) this.#flush(entityRef);
    else state.cancel = this.#setTimer(() => this.#flush(entityRef), wait);
  }

  /**
   * Tells these viewers to load again now, whatever their arming (evicted, or orphaned), with
   * the id their rows' claim kept, or one of its own.
   */
  pollNow(rows, reason) {
    for (const { entityRef, clusters, users, signalId } of byClusters(rows)) {
      this.#outbox.enqueue(entityRef, users, clusters, signalId ?? claimId([`${reason} ${entityRef}`]));
    }
  }

  /** Sends these viewers their signal again, with its id: the bus may have lost it. */
  resend(rows) {
    if (this.#closed) return;
    this.pollNow(rows, 'resent');
  }

  counts() {
    return { ...this.#outbox.counts(), ...this.#counts };
  }

  /**
   * Stops: tells the viewers whose latest load this replica answered to load again (through
   * another replica), and waits for the outbox to drain, at most `waitMs`.
   */
  async close(waitMs = 3000) {
    this.#closed = true;
    for (const state of this.#entities.values()) state.cancel?.();
    this.#entities.clear();
    try {
      this.pollNow(await this.#registry.close(), 'replica stopping');
    } catch (error) {
      this.#warnOnce('close', `handing the live tab's viewers to the other replicas failed: ${error}`);
    }
    // Real time, whatever clock the publisher was given: a few polls of the outbox.
    for (let waited = 0; this.#outbox.busy && waited < waitMs; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      this.#outbox.pump();
    }
  }

  /**
   * Claims the entity's armed viewers and signals them, grouped by the clusters they named.
   * Viewers behind the entity's gate (another replica claimed within the interval) are claimed
   * when it opens, with the changes seen meanwhile.
   */
  async #claimAndSignal(
    entityRef,
    changes,
    keys,
    before = [],
    loadedBy = null,
    attempt = 0,
    at = this.#now(),
  ) {
    let rows;
    let waitMs;
    let armedAt;
    const signalId = claimId(changes);
    const watchKeys = keys === null ? null : [...keys];
    try {
      // A load answered here before these changes were seen, whose row is still on its way, is
      // claimed too. With none on its way the claim leaves at once, ahead of the row of a load
      // answered right after (whose answer shows the change: it must not be claimed by it).
      if (before.length > 0) await Promise.all(before);
      const minIntervalMs = this.#minIntervalMs;
      ({ rows, waitMs, armedAt } = await this.#registry.claim(entityRef, {
        watchKeys,
        minIntervalMs,
        loadedBy,
        signalId,
      }));
    } catch {
      // Logged by the registry. Never dropped: the viewers answered here are told now, and the
      // claim is tried again for the rows of loads answered elsewhere.
      this.#claimFailed(entityRef, changes, keys, loadedBy, attempt);
      return;
    }
    if (waitMs !== null && !this.#closed) this.#gated(entityRef, changes, keys, waitMs, armedAt);
    // A claim's rows are all of its entity.
    for (const { clusters, users } of byClusters(rows))
      this.#outbox.enqueue(entityRef, users, clusters, signalId, { at });
    return rows.length;
  }

  /**
   * A claim failed: counted; on its first failure the entity's viewers answered here (of these
   * keys) are told to load again, and the claim is tried again, CLAIM_RETRIES times.
   */
  #claimFailed(entityRef, changes, keys, loadedBy, attempt) {
    this.#counts.claimsFailed++;
    if (this.#closed) return;
    if (attempt === 0) {
      const rows = this.#viewersOf(entityRef, keys);
      this.#counts.toldToPoll += rows.length;
      if (rows.length > 0) this.pollNow(rows, `registry failed ${this.#now()}`);
    }
    if (attempt >= CLAIM_RETRIES) {
      this.#warnOnce(
        'claim',
        `a claim of the live tab's viewers failed ${attempt + 1} times; the viewers answered on this replica were told to load again`,
      );
      return;
    }
    this.#counts.claimsRetried++;
    this.#setTimer(
      () => void this.#claimAndSignal(entityRef, changes, keys, [], loadedBy, attempt + 1),
      CLAIM_RETRY_MS * 2 ** attempt,
    );
  }

  /** Viewers wait behind the entity's gate: claim them when it opens, with these changes. */
  #gated(entityRef, changes, keys, waitMs, armedAt) {
    const state = this.#entities.get(entityRef) ?? newState();
    this.#entities.set(entityRef, state);
    for (const change of changes) state.changes.add(change);
    if (keys === null || state.keys === null) state.keys = null;
    else for (const key of keys) state.keys.add(key);
    // At the gate's end, only the loads recorded by now: one answered here since saw these
    // changes. Unless a change seen since is already due (it claims every armed load).
    if (!state.cancel) {
      state.loadedBy = armedAt;
      state.cancel = this.#setTimer(() => this.#flush(entityRef), waitMs);
    }
  }

  /** Forgets the coalescing state of entities past their interval: a new change of one signals at once anyway. */
  #prune() {
    const t = this.#now();
    for (const [entityRef, state] of this.#entities) {
      if (!state.cancel && state.lastSentAt + this.#minIntervalMs <= t) this.#entities.delete(entityRef);
    }
  }

  #flush(entityRef) {
    const state = this.#entities.get(entityRef);
    if (!state) return;
    const { changes, keys, before, loadedBy } = state;
    state.cancel = null;
    state.changes = new Set();
    state.keys = new Set();
    state.before = [];
    state.loadedBy = null;
    state.lastSentAt = this.#now();
    // The signal says when its claim was decided, not when the store answered it.
    void this.#claimAndSignal(entityRef, changes, keys, before, loadedBy, 0, state.lastSentAt);
  }
}

module.exports = { createSharedSignals, claimId };
