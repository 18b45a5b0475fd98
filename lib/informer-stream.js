'use strict';
// InformerEventStream: what `for await (const event of informer)` reads, an AsyncGenerator
// written out by hand for the informer's consumers (a watch has lib/event-stream.js).
//
// Same contract and the same short paths as a watch's stream, and the same HOLD_LOOP_MS turn
// of the event loop in a flood of ready batches; what differs is the wait. A watch waits on a
// Promise of its own from the addon (`nextBatch()`), run through an async function and a
// queue of promises: about eleven Promises, three native calls and an object built per
// change, with a thousand consumers that each see a change now and then (bench/fleet.js).
// Here a consumer that finds nothing ready makes one native call, `poll()`, which takes the
// ready batch or arms the consumer's wake-up, and the next() that waits gets one Promise,
// settled straight from the wake-up (InformerHub, lib/informer.js) with the batch's first
// event: per change one native call, one Promise, one JSON.parse.
//
// Generator semantics kept: nothing starts before the first next(); return(value) and
// throw(err) end the stream and cancel the consumer (throw rejects with err); calls made while
// one is pending run after it, in call order; after the end every next() resolves
// { done: true }. The object inherits from %AsyncGeneratorPrototype%, so it is tagged
// "AsyncGenerator", is its own async iterator, and has Symbol.asyncDispose where Node.js
// defines it.

const { HOLD_LOOP_MS } = require('./event-stream');

/** Gives the stream %AsyncGeneratorPrototype% as its prototype's prototype from the start. */
function AsyncGeneratorShape() {}
AsyncGeneratorShape.prototype = Object.getPrototypeOf(async function* () {}).prototype;

class InformerEventStream extends AsyncGeneratorShape {
  /** Subscribes: returns the consumer, `{ id, poll(), cancel() }`; called on the first next(). */
  #start;
  /** Where a waiting consumer's wake-up is registered: `wait(id, onBatch)`. */
  #hub;
  #warn;
  #consumer = null;
  /** The parsed events of the current batch and the next one to hand out. */
  #events = null;
  #index = 0;
  /** The current batch was the last one. */
  #lastBatch = false;
  #ended = false;
  /** The last poll() found nothing and armed the consumer's wake-up. */
  #armed = false;
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
   * @param {() => { id: number, poll(): string | object | null, cancel(): void }} start
   * @param {{ wait(id: number, onBatch: (batch: string | object) => void): void }} hub
   * @param {(message: string) => void} warn
   */
  constructor(start, hub, warn) {
    super();
    this.#start = start;
    this.#hub = hub;
    this.#warn = warn;
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

  /** The next event if one can be had without waiting; subscribes on the first call. */
  #ready() {
    if (this.#ended) return undefined;
    this.#consumer ??= this.#start();
    for (;;) {
      if (this.#events !== null && this.#index < this.#events.length) return this.#events[this.#index++];
      this.#events = null;
      if (this.#lastBatch) {
        this.#end();
        return undefined;
      }
      // A flood of ready batches has held the event loop long enough: let it turn first.
      if (performance.now() >= this.#turnBy) return undefined;
      const batch = this.#consumer.poll();
      if (batch === null) {
        this.#armed = true;
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

  /** Waits for the armed wake-up, or for the loop's turn when the hold ran out. */
  #park() {
    if (this.#armed) {
      this.#armed = false;
      this.#hub.wait(this.#consumer.id, this.#onBatch);
    } else {
      setImmediate(this.#onTurn);
    }
  }

  /** The waiting call goes on: with the batch of its wake-up, or after the loop's turn. */
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
    // A batch that held nothing to hand out (every change in it coalesced away): wait again.
    else this.#park();
  }

  #settle(settle, value) {
    this.#resolve = null;
    this.#reject = null;
    if (this.#waitCounted) this.#queued--;
    this.#waitCounted = false;
    settle(value);
  }

  /** Logs a batch's warnings and parses its events: one JSON.parse per batch. */
  #load(batch) {
    if (typeof batch === 'string') {
      this.#events = JSON.parse(batch);
      this.#index = 0;
      return;
    }
    for (const warning of batch.warnings) this.#warn(warning);
    if (batch.events) {
      this.#events = JSON.parse(batch.events);
      this.#index = 0;
    }
    this.#lastBatch = batch.done;
  }

  /** Ends the stream for good: the consumer is cancelled, buffered events are dropped. */
  #end() {
    if (this.#ended) return;
    this.#ended = true;
    this.#events = null;
    this.#consumer?.cancel();
  }
}

module.exports = { InformerEventStream };
