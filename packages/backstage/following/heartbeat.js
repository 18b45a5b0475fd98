'use strict';
// The live tab's heartbeat (kube-watch-native-protocol: HEARTBEAT_CHANNEL): every replica broadcasts
// `{ replica, seq, replicas }` every HEARTBEAT_MS, one publish per replica per interval whatever
// the number of users. A tab trusts its signals only while every replica named keeps beating, in
// sequence, within the bound (frontend/heartbeat.mjs): a dead WebSocket, a stalled events bus or
// a silent backend turns its answers to polling. A publish that fails still takes its number, so
// the tabs see the gap. A user whose first load of an entity here was just answered live is sent
// the latest beat again (`greet`), at most once per interval, so that a tab opened between beats
// goes live at once rather than at the next one (the tab drops a beat it has already heard); a
// reload of an open tab costs no publish.

const crypto = require('node:crypto');
const { HEARTBEAT_CHANNEL, HEARTBEAT_MS } = require('kube-watch-native-protocol');

/** When a greeting goes after the answer it greets (ms): soon, and once more a little later. */
const GREET_AFTER_MS = [250, 1500];

/** A replica's id as browsers see it: opaque (its name holds a hostname, not theirs to read). */
const publicIdOf = (replica) => crypto.createHash('sha256').update(replica).digest('base64url').slice(0, 12);

/**
 * Starts this replica's heartbeat; returns `{ close() }`.
 * @param {object} options
 * @param {{ publish(signal: object): Promise<void> | void }} options.signals
 * @param {string} options.replica this replica's name
 * @param {() => string[]} options.replicas the names of the replicas alive now (this one's too)
 * @param {{ warn(message: string): void }} [options.logger]
 * @param {number} [options.intervalMs]
 */
function startHeartbeat({ signals, replica, replicas, logger, intervalMs = HEARTBEAT_MS }) {
  const id = publicIdOf(replica);
  let seq = 0;
  let warned = false;
  let last = null;
  /** user → when it was last greeted */
  let greeted = new Map();
  const publish = (recipients, message) => {
    const signal = { recipients, channel: HEARTBEAT_CHANNEL, message };
    Promise.resolve()
      .then(() => signals.publish(signal))
      .catch((error) => {
        if (warned) return;
        warned = true;
        logger?.warn(
          `kube-watch-native: publishing the live tab's heartbeat failed (reported once): ${error}; tabs poll until it comes back`,
        );
      });
  };
  const beat = () => {
    const alive = [...new Set([replica, ...replicas()])].map(publicIdOf).sort();
    last = { replica: id, seq: ++seq, replicas: alive };
    greeted = new Map();
    publish({ type: 'broadcast' }, last);
  };
  beat();
  const timer = setInterval(beat, intervalMs);
  timer.unref?.();
  const greetings = new Set();
  return {
    /**
     * The latest beat again, to one user whose first load was answered live (once per interval),
     * GREET_AFTER_MS after the answer: the tab subscribes to the heartbeat as its load leaves,
     * and a greeting sent at once could reach the backend's signals before that subscription.
     */
    greet(userEntityRef) {
      if (greeted.has(userEntityRef) || greeted.size >= 10_000) return;
      greeted.set(userEntityRef, true);
      for (const ms of GREET_AFTER_MS) {
        const greeting = setTimeout(() => {
          greetings.delete(greeting);
          publish({ type: 'user', entityRef: userEntityRef }, last);
        }, ms);
        greeting.unref?.();
        greetings.add(greeting);
      }
    },
    close: () => {
      clearInterval(timer);
      for (const greeting of greetings) clearTimeout(greeting);
    },
  };
}

module.exports = { startHeartbeat, publicIdOf };
