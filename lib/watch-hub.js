'use strict';
// The way back from every plain watch (`watchResource`) of this JavaScript environment (a
// worker thread has its own): one native hub whose one thread-safe function names the watch
// that has a batch ready after its `wait()`; the waiting watch then takes it with the
// synchronous `takeBatch()` and hands it straight to its stream's waiting next()
// (lib/event-stream.js).
//
// Not one Promise per wait settled from a Rust thread (napi-rs's `AsyncBlock`, a thread-safe
// function each): every thread-safe function is a libuv async handle, and libuv looks at each
// of the loop's async handles on every wake-up, so with one per waiting watch the main
// thread's cost of an event grew with the number of watches (src/binding.rs; informers had the
// same fix, lib/informer.js).
//
// The hub's function is weak, and this module holds it for as long as the environment lives:
// it holds only this module's dispatcher, never a watch, so nothing here keeps a watch, its
// generator or its watcher from being collected. What keeps the process alive is a timer that
// never fires, referenced only while at least one watch waits (as the pending Promise of a wait
// kept it alive before): a process whose watches all ended, or that holds only idle ones
// nobody iterates, exits.

const native = require('./native');

/** The longest delay setInterval takes (about 24.8 days): a timer that never fires. */
const NEVER_MS = 2 ** 31 - 1;

/** Waiting watches (PlainWatch) by native id. */
const waiters = new Map();
/** Made on the first watch. */
let hub = null;
let keepAlive = null;

/** A watch's batch is ready (or its end): hand it to its wait. */
function wake(id) {
  // Only a waiting watch is woken, once per wait.
  waiters.get(id)?.wake();
}

/**
 * Starts a native watch of `spec`, woken through the hub and counted in `metrics` (its
 * watcher's NativeWatchMetrics).
 */
function startWatch(spec, metrics = new native.NativeWatchMetrics()) {
  if (hub === null) {
    hub = new native.NativeWatchHub(wake);
    keepAlive = setInterval(() => {}, NEVER_MS);
    keepAlive.unref();
  }
  return new PlainWatch(hub.start(spec, metrics));
}

/**
 * What EventStream (lib/event-stream.js) reads a plain watch through: the native watch's
 * batches, and its waits through the hub. A wrapper, so the native object's own methods stay as
 * the addon made them.
 */
class PlainWatch {
  #native;
  /** The id the hub's wake-ups carry. */
  #id;
  /** The waiting call's `onBatch`, while the watch is in `waiters`. */
  #onBatch = null;

  constructor(watch) {
    this.#native = watch;
    this.#id = watch.id();
  }

  /** The batch ready now (`string | NativeBatch`), or `null`. */
  takeBatch() {
    return this.#native.takeBatch();
  }

  /**
   * After a takeBatch() that found none: arms the wake-up, and `onBatch(batch)` receives the next
   * batch (events, or the end) once; or returns that batch if one is ready already (then
   * `onBatch` is not called).
   */
  wait(onBatch) {
    if (this.#native.wait()) return this.#native.takeBatch();
    if (waiters.size === 0) keepAlive.ref();
    this.#onBatch = onBatch;
    waiters.set(this.#id, this);
    return null;
  }

  /** The next batch as a Promise, for callers that want one (tests). */
  nextBatch() {
    return new Promise((resolve) => {
      const batch = this.wait(resolve);
      if (batch !== null) resolve(batch);
    });
  }

  /** The hub's wake-up of this waiting watch. */
  wake() {
    const watch = this.#native;
    const batch = watch.takeBatch();
    // Nothing else takes from a waiting watch; were it ever empty, wait on.
    if (batch === null && !watch.wait()) return;
    waiters.delete(this.#id);
    if (waiters.size === 0) keepAlive.unref();
    const onBatch = this.#onBatch;
    this.#onBatch = null;
    onBatch(batch ?? watch.takeBatch());
  }

  /** Closes the native work and the connection; a pending wait is woken with the end. */
  cancel() {
    this.#native.cancel();
  }
}

/** Watches waiting now, for tests. */
function waiting() {
  return waiters.size;
}

module.exports = { startWatch, waiting };
