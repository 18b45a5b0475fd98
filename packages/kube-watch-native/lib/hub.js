'use strict';
// Hub: one per watcher, the way back from its native registry (src/binding/registry.rs) for
// everything the watcher runs: its shared informers' news, and the batches of every waiting
// informer consumer and plain watch (`watchResource`). The native side says everything through
// one thread-safe function per registry, not one per handle, consumer or wait: libuv looks at
// every one of them on each wake-up of the loop, which made the main thread's cost of a change
// grow with the number of informers and watches. It is called with two arrays, who each
// message is from (a waiter's id, or 0 for news) and the messages, so no object is built per
// wake-up; a consumer's wake-ups that come close together share a call (and a wake-up of the
// loop), a watch's cross at once, and each goes straight to the waiting stream's callback
// (lib/event-stream.js).
//
// That function is weak. While an informer runs or anything waits, a timer that never fires
// keeps the process alive (as the pending Promise of a wait did once), and when nothing is open
// or waiting the registry lets the function go (it holds this hub, and through it the
// informers, strongly): a process whose watches all ended, or that holds only idle ones nobody
// iterates, exits, and nothing here keeps a watch, its generator or its watcher from being
// collected (__test__/hub.test.js, __test__/lifetime.test.js).

const native = require('./native');

/** A watcher's hub, `watcher[HUB]()` (lib/watcher.js): for the tests, not the published API. */
const HUB = Symbol('kube-watch-native hub');

/** The longest delay setInterval takes (about 24.8 days): a timer that never fires. */
const NEVER_MS = 2 ** 31 - 1;

class Hub {
  registry;
  /** Open informers by native handle id, for their news. */
  #informers = new Map();
  /** Waiting consumers' and watches' `onBatch` by waiter id. */
  #waiters = new Map();
  #keepAlive = null;
  #connected = false;

  /** `gatherMs`: how long informer consumers' wake-ups are gathered (the native default if absent). */
  constructor(gatherMs) {
    this.registry = new native.NativeRegistry(gatherMs);
  }

  /** Opens informer `spec`; `onNews(message)` then receives its news, `{ kind, message, id }`. */
  open(spec, onNews) {
    this.#connect();
    let handle;
    try {
      handle = this.registry.open(spec);
    } catch (err) {
      this.#hold();
      throw err;
    }
    this.#informers.set(handle.id(), onNews);
    this.#hold();
    return handle;
  }

  /** The informer of `handle` says nothing more and no longer keeps the process alive. */
  release(handle) {
    this.#informers.delete(handle.id());
    this.#hold();
  }

  /**
   * Starts a plain watch of `spec` (lib/spec.js), read through the returned source. Left
   * connected: the watch's first poll usually waits, and the wait holds the connection.
   */
  watch(spec) {
    this.#connect();
    return new HubSource(this.registry.watch(spec), this);
  }

  /** Starts the log stream of `spec` (lib/logs.js), read as a plain watch is. */
  logs(spec) {
    this.#connect();
    return new HubSource(this.registry.logs(spec), this);
  }

  /** The source EventStream reads informer consumer `consumer` through. */
  consumer(consumer, onCancel) {
    return new HubSource(consumer, this, onCancel);
  }

  /**
   * `onBatch(batch)` receives waiter `id`'s next batch (events, or the end), once: after a
   * `poll()` of it that found none and armed its wake-up. A watch's is `null`: its batch is
   * ready to poll.
   */
  wait(id, onBatch) {
    this.#waiters.set(id, onBatch);
    this.#hold();
  }

  /** Something ended: the process need not stay alive for it. */
  ended() {
    this.#hold();
  }

  /** Waiters now, for tests. */
  waiting() {
    return this.#waiters.size;
  }

  /**
   * Handles' news (from 0, JSON text) and waiters' batches, in the order sent; or a waiting
   * watch's id alone: its batch is ready to poll.
   */
  #back = (from, messages) => {
    if (typeof from === 'number') {
      this.#wake(from, null);
      return;
    }
    for (let i = 0; i < from.length; i++) {
      if (from[i] === 0) this.#news(messages[i]);
      else this.#wake(from[i], messages[i]);
    }
  };

  #wake(waiter, batch) {
    const onBatch = this.#waiters.get(waiter);
    // Only a waiter that waits is woken, once per wait.
    if (onBatch === undefined) return;
    this.#waiters.delete(waiter);
    this.#hold();
    onBatch(batch);
  }

  #news(text) {
    let message;
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    this.#informers.get(message.handle)?.(message);
  }

  #connect() {
    if (!this.#connected) this.registry.connect(this.#back);
    this.#connected = true;
  }

  /** Keeps the process alive and the registry connected while anything is open or waiting. */
  #hold() {
    const busy = this.#informers.size > 0 || this.#waiters.size > 0;
    if (busy) {
      this.#keepAlive ??= setInterval(() => {}, NEVER_MS);
      return;
    }
    if (this.#keepAlive !== null) clearInterval(this.#keepAlive);
    this.#keepAlive = null;
    if (this.#connected) this.registry.disconnect();
    this.#connected = false;
  }
}

/**
 * What EventStream (lib/event-stream.js) reads a plain watch or an informer consumer through:
 * the native object's batches (`poll()`, whose wake-ups come through the hub under its id), and
 * a cancel. A wrapper, so the native object's own methods stay as the addon made them.
 */
class HubSource {
  #native;
  #hub;
  /** The id its wake-ups carry. */
  #id;
  #onCancel;

  /**
   * @param {{ poll(): any, id(): number, cancel(): void }} source a NativeWatch or a
   *   NativeInformerConsumer
   * @param {Hub} hub
   * @param {(source: HubSource) => void} [onCancel]
   */
  constructor(source, hub, onCancel) {
    this.#native = source;
    this.#hub = hub;
    this.#id = source.id();
    this.#onCancel = onCancel;
  }

  /** The batch ready now, or `null` having armed the wake-up: one native call. */
  takeBatch() {
    return this.#native.poll();
  }

  /**
   * After a takeBatch() that found none: `onBatch(batch)` receives the next batch, or `null`
   * when it is ready to take (a watch's), once.
   */
  wait(onBatch) {
    this.#hub.wait(this.#id, onBatch);
    return null;
  }

  /** The next batch as a Promise, for callers that want one (tests). */
  nextBatch() {
    return new Promise((resolve) => {
      const batch = this.takeBatch();
      if (batch !== null) resolve(batch);
      else this.wait((woken) => resolve(woken ?? this.takeBatch()));
    });
  }

  /** Closes the native work (and a watch's connection); a pending wait is woken with the end. */
  cancel() {
    this.#onCancel?.(this);
    this.#native.cancel();
    this.#hub.ended();
  }
}

module.exports = { HUB, Hub, HubSource };
