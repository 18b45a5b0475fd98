'use strict';
// WatchEventStream: the AsyncGenerator `watchResource` returns, written out by hand.
//
// An `async function*` costs about 220 ns per event in V8 (request queue, an implicit await on
// every `yield`, a resumption) where an iterator whose `next()` returns an already-resolved
// promise costs about 85 ns; at a few microseconds of JSON.parse per small event, that
// difference is a few percent of the main thread's whole share (measured end to end on ~1.4 KB
// pods, in four back-to-back pairs of `node bench/run.js --only=interleaved`: main ÷ bound
// 1.072 with this class, 1.088 with the same logic in an `async function*`). So this class
// keeps an async generator's contract and shape, and takes the short path whenever it can:
//
//   - next() with an event already parsed and nothing queued before it: a resolved promise;
//   - a batch ready in the native queue: taken synchronously (`takeBatch()`, no Promise, no
//     thread hop) and parsed at once; `nextBatch()` (a Promise the watch's hub resolves when
//     the native side wakes it, lib/watch-hub.js and lib/informer.js) only when none is ready;
//   - every HOLD_LOOP_MS of that, one setImmediate() so the event loop turns: yields and
//     resolved promises are microtasks, and a flood of ready batches would otherwise starve
//     timers and I/O for as long as it lasts;
//   - anything else (waiting for the network, return(), throw(), calls made while one is
//     pending) goes through one promise chain, in call order, as an async generator's queue.
//
// Generator semantics kept: nothing starts before the first next(); return(value) and
// throw(err) end the stream and close the watch (throw rejects with err); calls queued behind a
// pending one run after it; after the end every next() resolves { done: true }. The object
// inherits from %AsyncGeneratorPrototype%, so it is tagged "AsyncGenerator", is its own async
// iterator, and has Symbol.asyncDispose where Node.js defines it.

const { onAbort } = require('./abort');

/** How long a flood of ready batches may keep the event loop from turning. */
const HOLD_LOOP_MS = 2;

/** Resolves after the event loop has run its timers and I/O callbacks once. */
const turnOfTheEventLoop = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Gives WatchEventStream %AsyncGeneratorPrototype% as its prototype's prototype from the start
 * (setting it afterwards would turn the prototype into a slow dictionary-mode object).
 */
function AsyncGeneratorShape() {}
AsyncGeneratorShape.prototype = Object.getPrototypeOf(async function* () {}).prototype;

class WatchEventStream extends AsyncGeneratorShape {
  /** Starts the native watch; called once, on the first next(). */
  #start;
  /** The AbortSignal from the options, if any. */
  #signal;
  /** Where native warnings go. */
  #warn;
  #watch = null;
  /** Ends this watch's subscription to the signal's abort. */
  #unsubscribe = null;
  /** The parsed events of the current batch and the next one to hand out. */
  #events = null;
  #index = 0;
  /** The current batch was the last one. */
  #lastBatch = false;
  #ended = false;
  /** Until when ready batches may be taken without letting the event loop turn. */
  #turnBy = 0;
  /** Calls still queued on the slow path, and the end of that queue. */
  #queued = 0;
  #tail = Promise.resolve();

  /**
   * @param {() => import('./native').NativeWatch} start
   * @param {AbortSignal | undefined} signal
   * @param {(message: string) => void} warn
   */
  constructor(start, signal, warn) {
    super();
    this.#start = start;
    this.#signal = signal;
    this.#warn = warn;
  }

  next() {
    if (this.#queued === 0) {
      let event;
      try {
        event = this.#ready();
      } catch (err) {
        // As a generator body that threw: the call rejects and the stream is over.
        this.#end();
        return Promise.reject(err);
      }
      if (event !== undefined) return Promise.resolve({ value: event, done: false });
      if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    }
    return this.#enqueue(() => this.#nextSlowly());
  }

  return(value) {
    return this.#enqueue(async () => {
      this.#end();
      return { value: await value, done: true };
    });
  }

  throw(err) {
    return this.#enqueue(() => {
      this.#end();
      throw err;
    });
  }

  /** Runs `step` after every call before it, as an async generator queues its requests. */
  #enqueue(step) {
    this.#queued++;
    const result = this.#tail.then(step).finally(() => this.#queued--);
    this.#tail = result.catch(() => {});
    return result;
  }

  /** The next event if one can be had without waiting; starts the watch on the first call. */
  #ready() {
    if (this.#ended) return undefined;
    if (this.#signal?.aborted) {
      this.#end();
      return undefined;
    }
    if (this.#watch === null) {
      this.#watch = this.#start();
      // One listener per signal, shared by every watch on it (lib/abort.js).
      if (this.#signal) this.#unsubscribe = onAbort(this.#signal, () => this.#watch.cancel());
    }
    for (;;) {
      if (this.#events !== null && this.#index < this.#events.length) return this.#events[this.#index++];
      this.#events = null;
      if (this.#lastBatch) {
        this.#end();
        return undefined;
      }
      // A flood of ready batches has held the event loop long enough: let it turn first.
      if (performance.now() >= this.#turnBy) return undefined;
      const batch = this.#watch.takeBatch();
      if (batch === null) return undefined;
      this.#load(batch);
    }
  }

  async #nextSlowly() {
    try {
      for (;;) {
        const event = this.#ready();
        if (event !== undefined) return { value: event, done: false };
        if (this.#ended) return { value: undefined, done: true };
        if (performance.now() >= this.#turnBy) {
          await turnOfTheEventLoop();
          this.#turnBy = performance.now() + HOLD_LOOP_MS;
          continue;
        }
        this.#load(await this.#watch.nextBatch());
        this.#turnBy = performance.now() + HOLD_LOOP_MS;
      }
    } catch (err) {
      // As a generator body that threw: the call rejects and the stream is over.
      this.#end();
      throw err;
    }
  }

  /** Logs a batch's warnings and parses its events; the common batch is its events text alone. */
  #load(batch) {
    if (typeof batch === 'string') {
      this.#parse(batch);
      return;
    }
    for (const warning of batch.warnings) this.#warn(warning);
    if (batch.events) this.#parse(batch.events);
    this.#lastBatch = batch.done;
  }

  /**
   * One JSON.parse per batch. Each element is already the contract's event:
   * `{ type, object, resourceVersion }` (the native side appended `resourceVersion`) or
   * `{ type: 'ERROR', error }`.
   */
  #parse(events) {
    this.#events = JSON.parse(events);
    this.#index = 0;
  }

  /** Ends the stream for good: the watch is cancelled, buffered events are dropped. */
  #end() {
    if (this.#ended) return;
    this.#ended = true;
    this.#events = null;
    if (this.#watch !== null) {
      this.#unsubscribe?.();
      this.#watch.cancel();
    }
  }
}

module.exports = { WatchEventStream, HOLD_LOOP_MS };
