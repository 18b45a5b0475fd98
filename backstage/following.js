'use strict';
// The live tab's following of informers: which viewers' answers each informer's changes touch,
// and when an answer a viewer was given has changed, so that the publisher (./live.js) signals
// them.
//
// A user's load depends on a watch key per informer, selector and namespace it was answered
// from. An answer changes when an object its selector selects changes, when the informer fails
// or recovers, and when the cache stops being served (its watch silent past the liveness bound,
// its credential refused or not checked in time: ./serving.js `servable`): then the viewer's
// next load is the default fetcher's, which the frontend polls, so the viewer is told once.
//
// Each informer is compared at most every LIVE_CHECK_MS, and only when its state tag (generation,
// failure, sync, servable) moved since the last comparison; a comparison takes the native cache's
// fingerprint of what each watched selector selects (no text made, nothing parsed). A load
// compares its own selector first when the tag moved, so that viewers who loaded before a change
// hear of it before a later viewer of the same selector, whose answer shows it, joins them; it
// does so before its answers are read (prepare()), so that no answer is older than what its key
// is compared as.

const crypto = require('node:crypto');

/**
 * A watch key as every replica names it: what the informer lists (cluster, type, its own
 * namespace and selector) and what the load selects of it, without this process's identity
 * key (a keyed hash no other replica can make). The shared registry claims viewers by it:
 * a viewer's row names only the keys of its own followed answer, which its access allowed.
 */
function sharedKeyOf(
  { cluster, group, apiVersion, plural, namespace, labelSelector },
  loadNamespace,
  selector,
) {
  const what = [
    cluster,
    group,
    apiVersion,
    plural,
    namespace ?? '',
    labelSelector,
    loadNamespace ?? '',
    selector,
  ];
  return crypto.createHash('sha256').update(JSON.stringify(what)).digest('base64url').slice(0, 22);
}

/**
 * An informer with live viewers is looked at again at most this often: a busy type's changes
 * cost its answers' comparison a few times a second, not once per change.
 */
const LIVE_CHECK_MS = 100;

class Following {
  #publisher;
  #servable;
  #now;
  #entries;

  /**
   * @param {object} options
   * @param {ReturnType<import('./live').createLivePublisher>} options.publisher
   * @param {(entry: object) => { servable: boolean, until: number }} options.servable whether
   *   the entry's cache answers loads now, and until when at most (Infinity: until it changes)
   * @param {Map<string, object>} options.entries the pool's entries (a dropped entry is not followed)
   */
  constructor({ publisher, servable, entries, now = Date.now }) {
    this.#publisher = publisher;
    this.#servable = servable;
    this.#entries = entries;
    this.#now = now;
  }

  /**
   * Before a load's answers are read from these entries for `selector` and `namespace`: the
   * viewers of each key who loaded before a change not yet compared hear of it now, and a key
   * nobody watches yet takes what its answer is now. Returns what viewed() needs after the
   * answers. Read before them, never after: the native cache moves on its own threads, so an
   * answer read first could be older than what its key is then compared as, and its viewer would
   * never hear of the change between. Read in this order, a change taken meanwhile is at worst
   * signalled to a viewer whose answer already shows it (one refetch more), never missed.
   */
  prepare(entries, { selector, namespace }) {
    return entries.map((entry) => {
      if (!entry || this.#entries.get(entry.key) !== entry) return null;
      const key = `${entry.key}\0${namespace ?? ''}\0${selector}`;
      // Only this key: the others' viewers are not touched by this load, and the check that
      // the change scheduled compares them.
      const watched = entry.watched.get(key);
      if (watched) {
        if (this.#tag(entry) !== entry.tag) this.#checkKey(entry, key);
        return { key, shared: watched.shared, watched: null };
      }
      const shared = sharedKeyOf(entry.description, namespace, selector);
      return {
        key,
        shared,
        watched: { namespace, selector, shared, last: this.#fingerprint(entry, namespace, selector) },
      };
    });
  }

  /**
   * The load prepare() prepared was answered from these entries on the cluster the user knows
   * as `cluster`: registers the viewer. Returns whether it was registered.
   */
  viewed(viewer, entries, prepared, { cluster }) {
    const keys = [];
    const sharedKeys = [];
    entries.forEach((entry, i) => {
      const ready = prepared[i];
      if (!entry || !ready || this.#entries.get(entry.key) !== entry) return;
      // prepare() and this run in one turn of the event loop (no check can forget a key between).
      if (ready.watched && !entry.watched.has(ready.key)) {
        entry.watched.set(ready.key, ready.watched);
        entry.tag ??= this.#tag(entry);
      }
      this.#follow(entry);
      keys.push(ready.key);
      sharedKeys.push(ready.shared);
    });
    if (keys.length === 0) return false;
    return this.#publisher.viewed(viewer.userEntityRef, viewer.entityRef, keys, { cluster, sharedKeys });
  }

  /** Something outside the informer changed whether its cache is served (its credential). */
  changed(entry) {
    if (entry.watched.size > 0) this.#scheduleCheck(entry, 0);
  }

  #tag(entry, state = entry.state()) {
    const { servable } = this.#servable(entry);
    return `${state.generation}|${state.error?.statusCode ?? ''}|${state.synced}|${servable}`;
  }

  /**
   * What a viewer's answer from `entry` is now, as a short string: the default fetcher's while
   * the cache is not served, else its failure, whether it is synced, and the native cache's
   * fingerprint of the objects it selects.
   */
  #fingerprint(entry, namespace, selector, servable = this.#servable(entry).servable, state = entry.state()) {
    if (!servable) return 'default';
    let digest = '';
    if (state.synced) {
      try {
        digest = entry.informer.fingerprint({ namespace, labelSelector: selector });
      } catch {
        // A selector the native cache refuses: its answer is the default's, which never changes here.
      }
    }
    return `${state.error?.statusCode ?? ''}|${state.synced}|${digest}`;
  }

  /** Looks again at `entry` when it syncs, fails, recovers, ends or (once armed) changes. */
  #follow(entry) {
    if (entry.unfollow) return;
    entry.unfollow = entry.informer.onStateChange(() => this.#scheduleCheck(entry));
    if (!entry.informer.armChangeNotice(entry.informer.state().generation)) this.#scheduleCheck(entry);
    this.#armStaleness(entry);
  }

  #scheduleCheck(entry, delay) {
    if (entry.checkTimer !== null) return;
    const wait = delay ?? Math.max(0, entry.checkedAt + LIVE_CHECK_MS - this.#now());
    entry.checkTimer = setTimeout(() => {
      entry.checkTimer = null;
      this.#check(entry);
    }, wait);
    entry.checkTimer.unref?.();
  }

  /** A timer for the moment the cache stops being served if nothing moves it on. */
  #armStaleness(entry) {
    clearTimeout(entry.staleTimer);
    const { until } = this.#servable(entry);
    if (!Number.isFinite(until)) return;
    entry.staleTimer = setTimeout(() => this.#scheduleCheck(entry, 0), Math.max(0, until - this.#now()) + 5);
    entry.staleTimer.unref?.();
  }

  /** Signals `key` of `entry` if its answer changed since it was last compared. */
  #checkKey(entry, key) {
    if (!this.#publisher.watching(key)) return;
    this.#compare(entry, key, entry.watched.get(key), this.#servable(entry).servable, entry.state());
  }

  /** Signals `key` if what its selector selects (`watched`) is not what it was last compared as. */
  #compare(entry, key, watched, servable, state) {
    const now = this.#fingerprint(entry, watched.namespace, watched.selector, servable, state);
    if (now === watched.last) return;
    watched.last = now;
    // The change's identity: where the cache is (its resourceVersion) and what the answer
    // became (a hash of content, not of this process's keys), alike on every replica that has
    // seen the same events; the resourceVersion tells apart a change back to an earlier state.
    this.#publisher.changed(key, { change: `${entry.informer.resourceVersion ?? ''}|${now}` });
  }

  /** Signals every watch key of `entry` whose answer changed; forgets the keys nobody watches. */
  #check(entry) {
    if (this.#entries.get(entry.key) !== entry) return;
    clearTimeout(entry.checkTimer);
    entry.checkTimer = null;
    entry.checkedAt = this.#now();
    // Read before the answers, so a change while they are compared arms no stale notice.
    const fresh = entry.informer.state();
    const { generation } = fresh;
    const tag = this.#tag(entry, fresh);
    if (tag !== entry.tag) {
      entry.tag = tag;
      // Read once for every key: what each key's answer is now, as of this one state.
      const { servable } = this.#servable(entry);
      for (const [key, watched] of entry.watched) {
        if (!this.#publisher.watching(key)) {
          entry.watched.delete(key);
          continue;
        }
        this.#compare(entry, key, watched, servable, fresh);
      }
    }
    if (entry.watched.size === 0) {
      entry.unfollow?.();
      entry.unfollow = null;
      clearTimeout(entry.staleTimer);
      return;
    }
    this.#armStaleness(entry);
    if (!entry.informer.armChangeNotice(generation)) this.#scheduleCheck(entry);
  }
}

module.exports = { Following, LIVE_CHECK_MS, sharedKeyOf };
