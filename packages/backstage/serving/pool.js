'use strict';
// The fetcher's informers and their bounds. One informer per identity, type, selector and
// namespace (see ./opening.js for which), each closed once no request used it for `idleTimeoutMs`.
//
// Bounds that hold under concurrency and against one user:
// - `maxInformers` open at most; a user (the viewer whose load opened it) at most `userShare` of
//   them, and custom resources named in request bodies at most `bodyShare`;
// - `maxCachedBytes` of JSON (and the field indexes built over it) at most, counted as bytes
//   arrive: a listing informer counts what it has read so far, and the count is taken again
//   every GUARD_MS while any informer lists, so that forty informers opened in the same instant
//   cannot each pass the check against a total that had none of them. An informer that takes the
//   total (or its user's share) past the bound is closed and its key avoided for AVOID_MS: the
//   default fetcher answers it;
// - an informer refused (401, 403) or not served (404) before it synced is closed at once and
//   not opened again for AVOID_MS, so made-up types cannot pin informers or requests.
//
// Each informer, and what is kept of it, is an Entry (./entry.js).

const { Entry } = require('./entry');
const clock = require('./clock');

/** How long a key closed for a refusal, a missing type or a bound is answered by the default fetcher. */
const AVOID_MS = 60_000;
/** How often the cached bytes are counted again while an informer lists. */
const GUARD_MS = 200;
/** How long a count of the bytes serves the bounds' checks of new informers. */
const COUNT_REUSE_MS = 100;
/** At most one warning per bound this often. */
const WARN_EVERY_MS = 60_000;

class Pool {
  /** Entry by key. */
  entries = new Map();
  #logger;
  #maxInformers;
  #maxCachedBytes;
  #userShare;
  #bodyShare;
  /** Keys not to open until a time (see the top of the file). */
  #avoid = new Map();
  #warned = new Map();
  #guard = null;
  #counted = null;
  #onDrop;

  constructor({ logger, maxInformers, maxCachedBytes, userShare, bodyShare, onDrop }) {
    this.#logger = logger;
    this.#maxInformers = maxInformers;
    this.#maxCachedBytes = maxCachedBytes;
    this.#userShare = userShare;
    this.#bodyShare = bodyShare;
    this.#onDrop = onDrop;
  }

  /** Whether `key` is to be avoided now (its time refreshed while used, when so set). */
  avoided(key) {
    const avoid = this.#avoid.get(key);
    if (!avoid) return false;
    const now = clock.now();
    if (now >= avoid.until) {
      this.#avoid.delete(key);
      return false;
    }
    if (avoid.refreshMs) avoid.until = now + avoid.refreshMs;
    return true;
  }

  /** Avoids `key` for `ms` (for `ms` after each use, with `refresh`). */
  avoid(key, ms, { refresh = false } = {}) {
    this.#avoid.set(key, { until: clock.now() + ms, refreshMs: refresh ? ms : 0 });
  }

  /**
   * Adds an informer the bounds leave room for: `open()` makes it; null (and a warning, once a
   * minute per bound) when there is no room for `owner` or for another body type.
   */
  add(key, { owner, fromBody }, open) {
    if (this.avoided(key) || !this.#room(owner, fromBody)) return null;
    const entry = open();
    this.entries.set(key, entry);
    entry.identity.entries.add(entry);
    entry.touch();
    this.#armGuard();
    return entry;
  }

  drop(entry) {
    if (this.entries.get(entry.key) === entry) this.entries.delete(entry.key);
    entry.identity.entries.delete(entry);
    entry.close();
    this.#onDrop?.(entry);
  }

  /** Closes entries unused for `idleMs`, and forgets expired avoidances. */
  sweep(idleMs) {
    const now = clock.now();
    for (const entry of this.entries.values()) {
      if (entry.inUse === 0 && now - entry.lastUsed >= idleMs) {
        this.#logger?.debug?.(
          `kube-watch-native: informer for ${entry.description.plural} of cluster ${entry.description.cluster} closed after ${Math.round(
            (now - entry.lastUsed) / 1000,
          )} s unused`,
        );
        this.drop(entry);
      }
    }
    for (const [key, avoid] of this.#avoid) if (now >= avoid.until) this.#avoid.delete(key);
  }

  close() {
    clearTimeout(this.#guard);
    for (const entry of this.entries.values()) entry.close();
    this.entries.clear();
    this.#avoid.clear();
  }

  #room(owner, fromBody) {
    const entries = [...this.entries.values()];
    if (entries.length >= this.#maxInformers) {
      return this.#full('maxInformers', `${this.#maxInformers} informers are open`);
    }
    const userMost = Math.max(1, Math.floor(this.#maxInformers * this.#userShare));
    if (owner && entries.filter((e) => e.owner === owner).length >= userMost) {
      return this.#full('maxInformers', `one user's share, ${userMost} informers, is open`);
    }
    const bodyMost = Math.max(1, Math.floor(this.#maxInformers * this.#bodyShare));
    if (fromBody && entries.filter((e) => e.fromBody).length >= bodyMost) {
      return this.#full(
        'maxInformers',
        `${bodyMost} informers of custom resources named in requests are open`,
      );
    }
    const { total, byOwner } = this.#recentBytes();
    if (total >= this.#maxCachedBytes) {
      return this.#full('maxCachedBytes', `the informers hold ${total} bytes of JSON`);
    }
    if (owner && (byOwner.get(owner) ?? 0) >= this.#maxCachedBytes * this.#userShare) {
      return this.#full('maxCachedBytes', `one user's informers hold ${byOwner.get(owner)} bytes of JSON`);
    }
    return true;
  }

  /**
   * The byte count of at most COUNT_REUSE_MS ago: a burst of opens (a backend's first loads)
   * counts once, not once per open; what crosses meanwhile the guard closes.
   */
  #recentBytes() {
    const now = clock.now();
    if (this.#counted === null || now - this.#counted.at >= COUNT_REUSE_MS) {
      this.#counted = { at: now, ...this.#bytes() };
    }
    return this.#counted;
  }

  #bytes() {
    let total = 0;
    const byOwner = new Map();
    for (const entry of this.entries.values()) {
      const bytes = entry.bytes();
      total += bytes;
      if (entry.owner) byOwner.set(entry.owner, (byOwner.get(entry.owner) ?? 0) + bytes);
    }
    return { total, byOwner };
  }

  /**
   * Counts the bytes GUARD_MS after an informer opens, and again every GUARD_MS while any lists;
   * past a bound, closes the newest informers until under it: they are the ones that crossed it.
   */
  #armGuard() {
    if (this.#guard !== null) return;
    this.#guard = setTimeout(() => {
      this.#guard = null;
      let { total, byOwner } = this.#bytes();
      const newestFirst = [...this.entries.values()].reverse();
      for (const entry of newestFirst) {
        const own = entry.owner ? (byOwner.get(entry.owner) ?? 0) : 0;
        const overall = total >= this.#maxCachedBytes;
        if (!overall && own < this.#maxCachedBytes * this.#userShare) continue;
        if (!overall && !entry.owner) continue;
        const bytes = entry.bytes();
        total -= bytes;
        if (entry.owner) byOwner.set(entry.owner, own - bytes);
        this.#full('maxCachedBytes', `the informer of ${entry.description.plural} crossed it and was closed`);
        this.avoid(entry.key, AVOID_MS);
        this.drop(entry);
        if (
          total < this.#maxCachedBytes &&
          [...byOwner.values()].every((b) => b < this.#maxCachedBytes * this.#userShare)
        ) {
          break;
        }
      }
      if ([...this.entries.values()].some((e) => !e.settled())) this.#armGuard();
    }, GUARD_MS);
    this.#guard.unref?.();
  }

  #full(bound, why) {
    const now = clock.now();
    if (now - (this.#warned.get(bound) ?? -Infinity) >= WARN_EVERY_MS) {
      this.#warned.set(bound, now);
      this.#logger?.warn(
        `kube-watch-native: kubernetes.nativeInformers.${bound} reached (${why}): requests that need another informer are answered by the default fetcher; what is cached stays`,
      );
    }
    return false;
  }
}

module.exports = { Pool, AVOID_MS };
