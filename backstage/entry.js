'use strict';
// One informer of the fetcher's, and what the answers and the live tab keep of it beside the
// native cache: when it was last used, whether a load is waiting on it, its scope, its answers'
// memo and its live viewers. What a load asks of one informer (its state, whether it settled,
// how much it holds) is answered here; how many there may be and what they may hold together
// is the pool's (./pool.js), which only counts and closes entries.

const { AnswerMemo } = require('./answers');

/**
 * The event loop's turn, as far as the informers' states go: bumped by a microtask queued at the
 * first read of a turn. A load reads each of its informers' state several times in one
 * synchronous stretch (is it ended, settled, alive, servable, what is its tag), each read a
 * native call; within a turn they share one read.
 */
let turn = 0;
let bumping = false;
function currentTurn() {
  if (!bumping) {
    bumping = true;
    queueMicrotask(() => {
      turn += 1;
      bumping = false;
    });
  }
  return turn;
}

/** One informer of the fetcher's, with what the answers and the live tab keep of it. */
class Entry {
  #state = null;
  #stateTurn = -1;

  constructor(key, identity, informer, description, { owner, fromBody }) {
    this.key = key;
    this.identity = identity;
    this.informer = informer;
    this.description = description;
    /** The user whose load opened it (null: a service's call), and whether a request body named its type. */
    this.owner = owner;
    this.fromBody = fromBody;
    this.lastUsed = Date.now();
    /** Requests between choosing this entry and answering from it: the idle sweep leaves it be. */
    this.inUse = 0;
    /** Until when the first requests wait for the initial list; null before the first. */
    this.waitUntil = null;
    /** 'namespaced' or 'cluster' once known (a cluster-wide informer asked for a namespace). */
    this.scope = undefined;
    /** Its remembered answers, by `${objectType}\0${namespace}\0${selector}` (./answers.js). */
    this.memo = new AnswerMemo();
    /** The live tab's watch keys on this informer → { namespace, selector, last, tag } (./following.js). */
    this.watched = new Map();
    this.unfollow = null;
    this.checkTimer = null;
    this.staleTimer = null;
    this.checkedAt = 0;
    /** The state the last comparison saw (./following.js). */
    this.tag = undefined;
  }

  touch() {
    this.lastUsed = Date.now();
    this.identity.lastUsed = this.lastUsed;
  }

  /**
   * The informer's state, read once per turn of the event loop (see currentTurn): what a load
   * reads of it several times. Whoever must see a change it is told of reads the informer's own.
   */
  state() {
    const now = currentTurn();
    if (this.#stateTurn !== now) {
      this.#stateTurn = now;
      this.#state = this.informer.state();
    }
    return this.#state;
  }

  /** Synced, failing or ended: an answer (from the cache, or live) can be given now. */
  settled(state = this.state()) {
    return state.synced || state.error !== null || state.finished;
  }

  /**
   * Waits until settled, at most until `syncTimeoutMs` after the first request that waited:
   * the sync timeout is spent once per informer, not once per load.
   */
  wait(syncTimeoutMs) {
    if (this.settled()) return Promise.resolve();
    this.waitUntil ??= Date.now() + syncTimeoutMs;
    const ms = this.waitUntil - Date.now();
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      let stop = () => {};
      const done = () => {
        clearTimeout(timer);
        stop();
        resolve();
      };
      const timer = setTimeout(done, ms);
      stop = this.informer.onStateChange(() => {
        if (this.settled(this.informer.state())) done();
      });
    });
  }

  /** JSON this informer holds, or has read so far while it lists. */
  bytes() {
    const state = this.informer.state();
    if (state.synced || state.finished) return state.cachedBytes;
    return Math.max(state.cachedBytes, this.informer.stats().bytes ?? 0);
  }

  close() {
    this.memo.clear();
    this.watched.clear();
    this.unfollow?.();
    this.unfollow = null;
    clearTimeout(this.checkTimer);
    clearTimeout(this.staleTimer);
    this.informer.close();
  }
}

module.exports = { Entry };
