'use strict';
// The bounded outbox in front of the events bus for the live tab's shared signals
// (./signals.js): at most MAX_IN_FLIGHT publishes at once; while the bus is slow, signals
// for the same entity and clusters merge their recipients instead of queueing behind each other,
// so the queue holds at most one entry per (entity, clusters) whatever the rate of changes. A
// failed publish is tried again (RETRIES times, a second apart), then counted as lost and
// logged: its viewers stay claimed, and their tabs poll again within the frontend's liveness
// bound.

const { uniqueId } = require('kube-watch-native-protocol');

const MAX_IN_FLIGHT = 4;
const RETRIES = 3;
const RETRY_MS = 1000;

class Outbox {
  #signals;
  #channelOf;
  #now;
  #setTimer;
  #warnOnce;
  /** `${entityRef}\n${clusters}` → { entityRef, signal, attempts, retryAt }, waiting for the bus. */
  #waiting = new Map();
  #inFlight = 0;
  #counts = { published: 0, failed: 0, lost: 0, merged: 0, recipients: 0 };

  /**
   * @param {object} options
   * @param {{ publish(signal: object): Promise<void> | void }} options.signals
   * @param {(entityRef: string) => string} options.channelOf
   * @param {() => number} options.now
   * @param {(fn: () => void, ms: number) => () => void} options.setTimer
   * @param {(what: string, message: string) => void} options.warnOnce logs a warning once per `what`
   */
  constructor({ signals, channelOf, now, setTimer, warnOnce }) {
    this.#signals = signals;
    this.#channelOf = channelOf;
    this.#now = now;
    this.#setTimer = setTimer;
    this.#warnOnce = warnOnce;
  }

  /** Whether a signal waits for the bus or is on its way. */
  get busy() {
    return this.#waiting.size > 0 || this.#inFlight > 0;
  }

  counts() {
    return { ...this.#counts, queued: this.#waiting.size, inFlight: this.#inFlight };
  }

  /**
   * Queues one signal to these users on the entity's channel (`at`: when it was decided; a
   * retry's `attempts` so far and when it is due), merged with one waiting for the
   * same entity and clusters; returns the queued entry. Merged signals of two ids take an id of
   * their own: a tab drops an id it has seen, and each side's users may have seen the other's
   * (a signal sent again after a newer one was queued).
   */
  enqueue(entityRef, users, clusters, id, { attempts = 0, retryAt = 0, at = this.#now() } = {}) {
    const key = `${entityRef}\n${JSON.stringify(clusters)}`;
    const waiting = this.#waiting.get(key);
    if (waiting) {
      this.#counts.merged++;
      const recipients = new Set([...waiting.signal.recipients.entityRef, ...users]);
      waiting.signal.recipients.entityRef = [...recipients].sort();
      const merged = waiting.signal.message.id === id ? id : uniqueId(id);
      waiting.signal.message = { ...waiting.signal.message, at: this.#now(), id: merged };
      waiting.attempts = Math.max(waiting.attempts, attempts);
      waiting.retryAt = Math.max(waiting.retryAt, retryAt);
      return waiting;
    }
    const entry = {
      entityRef,
      attempts,
      retryAt,
      signal: {
        recipients: { type: 'user', entityRef: [...new Set(users)].sort() },
        channel: this.#channelOf(entityRef),
        message: { clusters, at, id },
      },
    };
    this.#waiting.set(key, entry);
    this.pump();
    return entry;
  }

  /** Publishes what waits and is due, as far as MAX_IN_FLIGHT allows. */
  pump() {
    for (const [key, entry] of this.#waiting) {
      if (this.#inFlight >= MAX_IN_FLIGHT) return;
      if (entry.retryAt > this.#now()) continue;
      this.#waiting.delete(key);
      this.#publish(entry);
    }
  }

  #publish(entry) {
    this.#inFlight++;
    entry.attempts++;
    Promise.resolve()
      .then(() => this.#signals.publish(entry.signal))
      .then(
        () => {
          this.#counts.published++;
          this.#counts.recipients += entry.signal.recipients.entityRef.length;
        },
        (error) => this.#failed(entry, error),
      )
      .finally(() => {
        this.#inFlight--;
        this.pump();
      });
  }

  #failed(entry, error) {
    this.#counts.failed++;
    this.#warnOnce('publish', `publishing a live signal failed: ${error}`);
    if (entry.attempts > RETRIES) {
      this.#counts.lost++;
      this.#warnOnce(
        'lost',
        `a live signal to ${entry.signal.recipients.entityRef.length} viewer(s) of ${entry.signal.channel} was lost after ${entry.attempts} attempts; their tabs poll again within the frontend's liveness bound`,
      );
      return;
    }
    // Back in the queue, merged with anything newer for the same viewers, due RETRY_MS from
    // now (set before it is queued: the queue publishes what is due at once).
    const { signal } = entry;
    this.enqueue(entry.entityRef, signal.recipients.entityRef, signal.message.clusters, signal.message.id, {
      attempts: entry.attempts,
      retryAt: this.#now() + RETRY_MS,
    });
    this.#setTimer(() => this.pump(), RETRY_MS);
  }
}

module.exports = { Outbox };
