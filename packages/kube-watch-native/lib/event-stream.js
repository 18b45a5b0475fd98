'use strict';
// EventStream: the AsyncGenerator that `watchResource` returns and that
// `for await (const event of informer)` reads, written out by hand, one class for both.
//
// An `async function*` queues every request, awaits implicitly at every `yield` and resumes,
// where an iterator whose `next()` returns an already-resolved promise does none of that; next
// to the JSON.parse of a small event the difference is a few percent of the main thread's share
// (bench/README.md has the figures). So this class keeps an async generator's contract and
// shape, and takes the short path whenever it can:
//
//   - next() with an event already parsed and nothing queued before it: a resolved promise;
//   - a batch ready in the native queue: taken synchronously (`takeBatch()`, no Promise, no
//     thread hop) and parsed at once, one JSON.parse per batch;
//   - none ready: the next() that waits gets one Promise, settled straight from the source's
//     wake-up (`wait(onBatch)`) with the batch's first event. The wake-ups of every watch and of
//     every informer consumer of a watcher come back through one weak thread-safe function (its
//     hub, lib/hub.js), not a Promise and a thread-safe function per wait: per change one native
//     call, one Promise, one JSON.parse, with a thousand consumers that each see a change now
//     and then (bench/fleet.js);
//   - every HOLD_LOOP_MS of taking ready batches, one setImmediate() so the event loop turns:
//     resolved promises are microtasks, and a flood of ready batches would otherwise starve
//     timers and I/O for as long as it lasts;
//   - anything else (return(), throw(), calls made while one is pending) goes through one
//     promise chain, in call order, as an async generator's queue.
//
// What differs between a watch and an informer consumer is only the source, which `start()`
// returns on the first next(): `takeBatch()` the ready batch, or null having armed its wake-up,
// `wait(onBatch)` after a takeBatch() that found none (`onBatch(batch)` is then called once with
// the next batch, or with null when one is ready to take; or it returns that batch when one is
// ready already), `cancel()`. A batch is the JSON text of an array of events, or
// `{ events, warnings, done }`; the one with `done` is the last.
//
// Generator semantics kept: nothing starts before the first next(); return(value) and
// throw(err) end the stream and cancel the source (throw rejects with err); calls made while
// one is pending run after it, in call order; after the end every next() resolves
// { done: true }; a batch that does not parse rejects the call that met it and ends the stream,
// as a generator body that threw. The object inherits from %AsyncGeneratorPrototype%, so it is
// tagged "AsyncGenerator", is its own async iterator, and has Symbol.asyncDispose where
// Node.js defines it.

const { onAbort } = require('./abort');

/** How long a flood of ready batches may keep the event loop from turning. */
const HOLD_LOOP_MS = 2;

/**
 * Gives EventStream %AsyncGeneratorPrototype% as its prototype's prototype from the start
 * (setting it afterwards would turn the prototype into a slow dictionary-mode object).
 */
function AsyncGeneratorShape() {}
AsyncGeneratorShape.prototype = Object.getPrototypeOf(async function* () {}).prototype;

/**
 * @typedef {string | { events: string, warnings: string[], done: boolean }} Batch
 * @typedef {object} Source what a stream reads: HubSource (lib/hub.js), over a plain watch or
 *   an informer consumer
 * @property {() => Batch | null} takeBatch
 * @property {(onBatch: (batch: Batch) => void) => Batch | null} wait
 * @property {() => void} cancel
 */

class EventStream extends AsyncGeneratorShape {
  /** Makes the source (`{ takeBatch(), wait(onBatch), cancel() }`); called on the first next(). */
  #start;
  /** The AbortSignal that ends the stream, if any (an informer's consumers have none here). */
  #signal;
  /** Where native warnings go. */
  #warn;
  /** Turns a batch's parsed array into the items yielded (a log stream's), or null. */
  #shape;
  #source = null;
  /** Ends this stream's subscription to the signal's abort. */
  #unsubscribe = null;
  /** The parsed events of the current batch and the next one to hand out. */
  #events = null;
  #index = 0;
  /** The current batch was the last one. */
  #lastBatch = false;
  #ended = false;
  /** The last takeBatch() found nothing: the next wait is the source's, not the loop's turn. */
  #empty = false;
  /** Until when ready batches may be taken without letting the event loop turn. */
  #turnBy = 0;
  /** Calls made while another was pending and not settled yet (the waiting one counts). */
  #queued = 0;
  /** Settles after every call made so far; never rejects, except a fast wait's own promise. */
  #tail = Promise.resolve();
  /** The waiting call's settlement, and whether it counts in #queued. */
  #resolve = null;
  #reject = null;
  #waitCounted = false;
  /** The wake-up and the loop's turn, bound once (not a closure per wait). */
  #onBatch = (batch) => this.#resume(batch);
  #onTurn = () => this.#resume(null);

  /**
   * @param {() => Source} start
   * @param {AbortSignal | undefined} signal
   * @param {(message: string) => void} warn
   * @param {((text: string) => unknown[]) | null} [shape] what a batch's text becomes, once per
   *   batch (a log stream's reads its own kind of batch); its JSON array by default
   */
  constructor(start, signal, warn, shape = null) {
    super();
    this.#start = start;
    this.#signal = signal;
    this.#warn = warn;
    this.#shape = shape;
  }

  next() {
    if (this.#queued !== 0) return this.#enqueue(() => this.#nextQueued());
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
    this.#queued++;
    const waiting = this.#wait(true);
    this.#tail = waiting;
    return waiting;
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
    // After the call before it, whether that one resolved or rejected.
    const run = () => step();
    const result = this.#tail.then(run, run).finally(() => this.#queued--);
    this.#tail = result.catch(() => {});
    return result;
  }

  /** A next() whose turn in the queue has come. */
  #nextQueued() {
    let event;
    try {
      event = this.#ready();
    } catch (err) {
      this.#end();
      throw err;
    }
    if (event !== undefined) return { value: event, done: false };
    if (this.#ended) return { value: undefined, done: true };
    return this.#wait(false);
  }

  /** The next event if one can be had without waiting; starts the source on the first call. */
  #ready() {
    if (this.#ended) return undefined;
    if (this.#signal?.aborted) {
      this.#end();
      return undefined;
    }
    if (this.#source === null) {
      this.#source = this.#start();
      // One listener per signal, shared by every watch on it (lib/abort.js).
      if (this.#signal) this.#unsubscribe = onAbort(this.#signal, () => this.#source.cancel());
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
      const batch = this.#source.takeBatch();
      if (batch === null) {
        this.#empty = true;
        return undefined;
      }
      this.#load(batch);
    }
  }

  /** One Promise for the call that waits, settled by #resume. */
  #wait(counted) {
    return new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
      this.#waitCounted = counted;
      this.#park();
    });
  }

  /** Waits for the source's wake-up, or for the loop's turn when the hold ran out. */
  #park() {
    if (!this.#empty) {
      setImmediate(this.#onTurn);
      return;
    }
    this.#empty = false;
    const batch = this.#source.wait(this.#onBatch);
    // A batch that came between the takeBatch() and the wait.
    if (batch !== null) this.#resume(batch);
  }

  /**
   * The waiting call goes on: with the batch of its wake-up, or after the loop's turn or a
   * wake-up that says a batch is ready (null: take it).
   */
  #resume(batch) {
    this.#turnBy = performance.now() + HOLD_LOOP_MS;
    let event;
    try {
      if (batch !== null) this.#load(batch);
      event = this.#ready();
    } catch (err) {
      this.#end();
      this.#settle(this.#reject, err);
      return;
    }
    if (event !== undefined) this.#settle(this.#resolve, { value: event, done: false });
    else if (this.#ended) this.#settle(this.#resolve, { value: undefined, done: true });
    // A batch that held nothing to hand out (an informer's changes all coalesced away, a watch's
    // warnings alone): wait again.
    else this.#park();
  }

  #settle(settle, value) {
    this.#resolve = null;
    this.#reject = null;
    if (this.#waitCounted) this.#queued--;
    this.#waitCounted = false;
    settle(value);
  }

  /**
   * Logs a batch's warnings and parses its events: one JSON.parse per batch; the common batch
   * is its events text alone. Each element is already the contract's event: a watch's
   * `{ type, object, resourceVersion }` (the native side appended `resourceVersion`) or
   * `{ type: 'ERROR', error }`, an informer's events and SYNCED.
   */
  #load(batch) {
    if (typeof batch === 'string') {
      this.#events = this.#parse(batch);
      this.#index = 0;
      return;
    }
    for (const warning of batch.warnings) this.#warn(warning);
    if (batch.events) {
      this.#events = this.#parse(batch.events);
      this.#index = 0;
    }
    this.#lastBatch = batch.done;
  }

  #parse(text) {
    return this.#shape === null ? JSON.parse(text) : this.#shape(text);
  }

  /** Ends the stream for good: the source is cancelled, buffered events are dropped. */
  #end() {
    if (this.#ended) return;
    this.#ended = true;
    this.#events = null;
    if (this.#source !== null) {
      this.#unsubscribe?.();
      this.#source.cancel();
    }
  }
}

module.exports = { EventStream, HOLD_LOOP_MS };
