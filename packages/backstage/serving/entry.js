'use strict';
// One informer of the fetcher's, and what the answers keep of it beside the native cache: when
// it was last used, whether a load is waiting on it, its scope and its answers' memo. What a load asks of one informer (its state, whether it settled,
// how much it holds) is answered here; how many there may be and what they may hold together
// is the pool's (./pool.js), which only counts and closes entries.

const { AnswerMemo } = require('./answers');
const clock = require('./clock');

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

/** One informer of the fetcher's, with what the answers keep of it. */
class Entry {
  #state = null;
  #stateTurn = -1;
  #servability;

  /**
   * @param {string} key
   * @param {object} identity whose informer it is (./identity.js)
   * @param {object} informer the watcher's
   * @param {object} description cluster, group, apiVersion, plural, namespace, labelSelector
   * @param {object} options
   * @param {string | null} options.owner the user whose load opened it (null: a service's call)
   * @param {boolean} options.fromBody whether a request body named its type
   * @param {{ verifiedUntil(identity: object): number, livenessMs: number }} options.servability
   *   until when its identity's credential counts as confirmed, and how recently its watch must
   *   have shown life for its cache to answer
   */
  constructor(key, identity, informer, description, { owner, fromBody, servability }) {
    this.key = key;
    this.identity = identity;
    this.informer = informer;
    this.description = description;
    /** The user whose load opened it (null: a service's call), and whether a request body named its type. */
    this.owner = owner;
    this.fromBody = fromBody;
    this.#servability = servability;
    /** Closed: its answers, and whatever follows them, are done with. */
    this.closed = false;
    this.lastUsed = clock.now();
    /** Requests between choosing this entry and answering from it: the idle sweep leaves it be. */
    this.inUse = 0;
    /** Until when the first requests wait for the initial list; null before the first. */
    this.waitUntil = null;
    /** 'namespaced' or 'cluster' once known (a cluster-wide informer asked for a namespace). */
    this.scope = undefined;
    /** Its remembered answers, by `${objectType}\0${namespace}\0${selector}` (./answers.js). */
    this.memo = new AnswerMemo();
  }

  /**
   * Whether its cache answers loads now, and until when at most (Infinity: until it changes):
   * while its watch showed life (an event, a bookmark, a probe answered) within `livenessMs` and
   * its credential was confirmed in time (./identity.js).
   */
  servable() {
    const verifiedUntil = this.#servability.verifiedUntil(this.identity);
    const { aliveAgoMs } = this.state();
    const now = clock.now();
    const aliveUntil =
      aliveAgoMs === null || aliveAgoMs === undefined ? 0 : now - aliveAgoMs + this.#servability.livenessMs;
    const until = Math.min(verifiedUntil, aliveUntil);
    return { servable: now < until, until: until > 0 ? until : Infinity };
  }

  touch() {
    this.lastUsed = clock.now();
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
    this.waitUntil ??= clock.now() + syncTimeoutMs;
    const ms = this.waitUntil - clock.now();
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

  /** JSON this informer holds, or has read so far while it lists, and its field indexes. */
  bytes() {
    const state = this.informer.state();
    const indexes = state.indexBytes ?? 0;
    if (state.synced || state.finished) return state.cachedBytes + indexes;
    return Math.max(state.cachedBytes, this.informer.stats().bytes ?? 0) + indexes;
  }

  close() {
    this.closed = true;
    this.memo.clear();
    this.informer.close();
  }
}

module.exports = { Entry };
