'use strict';
// The live tab's following of the fetcher's informers: which viewers' answers each informer's
// changes touch, and when an answer a viewer was given has changed, so that the publisher
// (./publisher.js) signals them. It is the follower the serving wing (../serving/) calls
// through one small interface (`InformerFollowing`'s methods), and the serving wing knows
// nothing else of following.
//
// A user's load depends on a watch key per informer, selector and namespace it was answered
// from; a page's answer of the proxy's events (../serving/proxy-events.js, ./events-view.js)
// is such a load too, its selector one of fields. An answer changes when an object its selector selects changes, when the informer fails
// or recovers, when the cache stops being served (its watch silent past the liveness bound, its
// credential refused or not checked in time: the entry's `servable()`), and when the informer is
// closed (idle, a bound, a refusal): then the viewer's next load is the default fetcher's, which
// the frontend polls, so the viewer is told once.
//
// Each informer is compared at most every LIVE_CHECK_MS, and only when its state tag (generation,
// failure, sync, servable) moved since the last comparison; a comparison takes the native cache's
// fingerprint of what each watched selector selects (no text made, nothing parsed). A load
// compares its own selector first when the tag moved, so that viewers who loaded before a change
// hear of it before a later viewer of the same selector, whose answer shows it, joins them; it
// does so before its answers are read (prepare()), so that no answer is older than what its key
// is compared as.

const crypto = require('node:crypto');
const { liveRequestContext, markFollowed, markNotLive } = require('./mark');
const clock = require('../serving/clock');

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
  field = false,
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
    // A field selector's keys apart from a label selector's of the same text (older keys unchanged).
    ...(field ? ['field'] : []),
  ];
  return crypto.createHash('sha256').update(JSON.stringify(what)).digest('base64url').slice(0, 22);
}

/**
 * An informer with live viewers is looked at again at most this often: a busy type's changes
 * cost its answers' comparison a few times a second, not once per change.
 */
const LIVE_CHECK_MS = 100;

/**
 * What a watched key's answer reads of its informer: its namespace and its selector, of labels
 * or (`field`: the proxy's events answers) of fields.
 */
const readOf = ({ namespace, selector, field }) =>
  field ? { namespace, fieldSelector: selector } : { namespace, labelSelector: selector };

/** What the following keeps of one followed informer (never on the serving wing's entry). */
function newFollowed() {
  return {
    /** watch key → { namespace, selector, field, shared, last } */
    watched: new Map(),
    unfollow: null,
    checkTimer: null,
    staleTimer: null,
    checkedAt: 0,
    /** The state the last comparison saw. */
    tag: undefined,
  };
}

/**
 * The serving wing's follower. What it is handed of an entry (../serving/entry.js): `key`,
 * `description`, `informer` (its state, fingerprint, change notices), `state()` (once per turn)
 * and `servable()` (whether its cache answers loads now, and until when).
 */
class InformerFollowing {
  #publisher;
  #now;
  /** entry → what is kept of it, while it is open and followed */
  #followed = new Map();

  /**
   * @param {object} options
   * @param {ReturnType<import('./publisher').createLivePublisher>} options.publisher
   * @param {() => number} [options.now]
   */
  constructor({ publisher, now = clock.now }) {
    this.#publisher = publisher;
    this.#now = now;
  }

  /** The viewer of the request being answered (the objects provider's user call), if any. */
  viewer() {
    return liveRequestContext.getStore();
  }

  /** A part of the answer being built was not served from a followed cache: it is polled. */
  notFollowed() {
    markNotLive();
  }

  /**
   * Before a load's answers are read from these entries for `selector` (of labels, or of fields
   * with `field`) and `namespace`: the
   * viewers of each key who loaded before a change not yet compared hear of it now, and a key
   * nobody watches yet takes what its answer is now. Returns what viewed() needs after the
   * answers. Read before them, never after: the native cache moves on its own threads, so an
   * answer read first could be older than what its key is then compared as, and its viewer would
   * never hear of the change between. Read in this order, a change taken meanwhile is at worst
   * signalled to a viewer whose answer already shows it (one refetch more), never missed.
   */
  prepare(entries, { selector, namespace, field = false }) {
    return entries.map((entry) => {
      if (!entry || entry.closed) return null;
      const key = `${entry.key}\0${namespace ?? ''}\0${selector}${field ? '\0field' : ''}`;
      const followed = this.#followed.get(entry);
      const watched = followed?.watched.get(key);
      // Only this key: the others' viewers are not touched by this load, and the check that
      // the change scheduled compares them.
      if (watched) {
        if (this.#tag(entry) !== followed.tag) this.#checkKey(entry, followed, key);
        return { key, shared: watched.shared, watched: null };
      }
      const shared = sharedKeyOf(entry.description, namespace, selector, field);
      const fresh = { namespace, selector, field, shared, last: '' };
      fresh.last = this.#fingerprint(entry, fresh);
      return { key, shared, watched: fresh };
    });
  }

  /**
   * The load prepare() prepared was answered from these entries on the cluster the user knows
   * as `cluster`: registers the viewer, and marks the answer followed or not. `provenUntil`: when
   * the viewer's own access behind the answer must be asked again (its decisions expire).
   */
  viewed(viewer, entries, prepared, { cluster, provenUntil }) {
    const keys = [];
    const sharedKeys = [];
    entries.forEach((entry, i) => {
      const ready = prepared[i];
      if (!entry || !ready || entry.closed) return;
      let followed = this.#followed.get(entry);
      if (!followed) this.#followed.set(entry, (followed = newFollowed()));
      // prepare() and this run in one turn of the event loop (no check can forget a key between).
      if (ready.watched && !followed.watched.has(ready.key)) {
        followed.watched.set(ready.key, ready.watched);
        followed.tag ??= this.#tag(entry);
      }
      this.#follow(entry, followed);
      keys.push(ready.key);
      sharedKeys.push(ready.shared);
    });
    const registered =
      keys.length > 0 &&
      this.#publisher.viewed(viewer.userEntityRef, viewer.entityRef, keys, {
        cluster,
        sharedKeys,
        provenUntil,
      });
    if (registered) markFollowed(viewer);
    else markNotLive(viewer);
  }

  /** The viewer's own access was refused: it is followed no more (its answer is the default's). */
  refused(viewer) {
    this.#publisher.forget(viewer.userEntityRef, viewer.entityRef);
  }

  /** Something outside the informer changed whether its cache is served (its credential). */
  entryChanged(entry) {
    const followed = this.#followed.get(entry);
    if (followed && followed.watched.size > 0) this.#scheduleCheck(entry, followed, 0);
  }

  /**
   * The entry was closed (idle, a bound, a refusal): its viewers' next answers are the default
   * fetcher's, which nothing signals. Each watched key whose viewers are still there is signalled
   * once, so that their tabs reload and poll from then on.
   */
  entryClosed(entry) {
    const followed = this.#followed.get(entry);
    if (!followed) return;
    this.#unfollow(entry, followed);
    for (const [key, watched] of followed.watched) {
      if (this.#publisher.watching(key)) this.#publisher.changed(key, { change: `closed|${watched.last}` });
    }
  }

  #tag(entry, state = entry.state()) {
    const { servable } = entry.servable();
    return `${state.generation}|${state.error?.statusCode ?? ''}|${state.synced}|${servable}`;
  }

  /**
   * What a viewer's answer from `entry` for `watched` (its namespace and selector) is now, as a
   * short string: the default fetcher's while the cache is not served, else its failure, whether
   * it is synced, and the native cache's fingerprint of the objects it selects.
   */
  #fingerprint(entry, watched, servable = entry.servable().servable, state = entry.state()) {
    if (!servable) return 'default';
    let digest = '';
    if (state.synced) {
      try {
        digest = entry.informer.fingerprint(readOf(watched));
      } catch {
        // A selector the native cache refuses: its answer is the default's, which never changes here.
      }
    }
    return `${state.error?.statusCode ?? ''}|${state.synced}|${digest}`;
  }

  /** Looks again at `entry` when it syncs, fails, recovers, ends or (once armed) changes. */
  #follow(entry, followed) {
    if (followed.unfollow) return;
    followed.unfollow = entry.informer.onStateChange(() => this.#scheduleCheck(entry, followed));
    if (!entry.informer.armChangeNotice(entry.informer.state().generation))
      this.#scheduleCheck(entry, followed);
    this.#armStaleness(entry, followed);
  }

  /** Stops looking at `entry`: no notice, no timer, nothing kept. */
  #unfollow(entry, followed) {
    followed.unfollow?.();
    followed.unfollow = null;
    clearTimeout(followed.checkTimer);
    followed.checkTimer = null;
    clearTimeout(followed.staleTimer);
    this.#followed.delete(entry);
  }

  #scheduleCheck(entry, followed, delay) {
    if (followed.checkTimer !== null) return;
    const wait = delay ?? Math.max(0, followed.checkedAt + LIVE_CHECK_MS - this.#now());
    followed.checkTimer = setTimeout(() => {
      followed.checkTimer = null;
      this.#check(entry, followed);
    }, wait);
    followed.checkTimer.unref?.();
  }

  /** A timer for the moment the cache stops being served if nothing moves it on. */
  #armStaleness(entry, followed) {
    clearTimeout(followed.staleTimer);
    const { until } = entry.servable();
    if (!Number.isFinite(until)) return;
    followed.staleTimer = setTimeout(
      () => this.#scheduleCheck(entry, followed, 0),
      Math.max(0, until - this.#now()) + 5,
    );
    followed.staleTimer.unref?.();
  }

  /** Signals `key` of `entry` if its answer changed since it was last compared. */
  #checkKey(entry, followed, key) {
    if (!this.#publisher.watching(key)) return;
    this.#compare(entry, key, followed.watched.get(key), entry.servable().servable, entry.state());
  }

  /** Signals `key` if what its selector selects (`watched`) is not what it was last compared as. */
  #compare(entry, key, watched, servable, state) {
    const now = this.#fingerprint(entry, watched, servable, state);
    if (now === watched.last) return;
    watched.last = now;
    // The change's identity: where the cache is (its resourceVersion) and what the answer
    // became (a hash of content, not of this process's keys), alike on every replica that has
    // seen the same events; the resourceVersion tells apart a change back to an earlier state.
    this.#publisher.changed(key, { change: `${entry.informer.resourceVersion ?? ''}|${now}` });
  }

  /** Signals every watch key of `entry` whose answer changed; forgets the keys nobody watches. */
  #check(entry, followed) {
    if (this.#followed.get(entry) !== followed) return;
    clearTimeout(followed.checkTimer);
    followed.checkTimer = null;
    followed.checkedAt = this.#now();
    // Read before the answers, so a change while they are compared arms no stale notice.
    const fresh = entry.informer.state();
    const { generation } = fresh;
    const tag = this.#tag(entry, fresh);
    if (tag !== followed.tag) {
      followed.tag = tag;
      // Read once for every key: what each key's answer is now, as of this one state.
      const { servable } = entry.servable();
      for (const [key, watched] of followed.watched) {
        if (!this.#publisher.watching(key)) {
          followed.watched.delete(key);
          continue;
        }
        this.#compare(entry, key, watched, servable, fresh);
      }
    }
    if (followed.watched.size === 0) {
      this.#unfollow(entry, followed);
      return;
    }
    this.#armStaleness(entry, followed);
    if (!entry.informer.armChangeNotice(generation)) this.#scheduleCheck(entry, followed);
  }
}

module.exports = { InformerFollowing, LIVE_CHECK_MS, sharedKeyOf };
