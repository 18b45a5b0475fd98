'use strict';
// The live tab's signals when several replicas share the viewers (./registry.js): a change of
// an entity is coalesced per entity (at most one claim per `minIntervalMs` here, and through
// the entity's gate in the database at most one claim that signals anyone per `minIntervalMs`
// across all replicas), its armed viewers are claimed in the database, and they get one signal
// per entity naming them all as recipients, through a bounded outbox in front of the events bus.
//
// The outbox: at most MAX_IN_FLIGHT publishes at once; while the bus is slow, signals for the
// same entity and clusters merge their recipients instead of queueing behind each other, so
// the queue holds at most one entry per (entity, clusters) whatever the rate of changes. A
// failed publish is tried again (RETRIES times, a second apart), then counted as lost and
// logged: its viewers stay claimed, and their tabs poll again within the frontend's liveness
// bound.

const crypto = require('node:crypto');

const MAX_IN_FLIGHT = 4;
const RETRIES = 3;
const RETRY_MS = 1000;
/** Entities' coalescing states kept before the ones past their interval are dropped. */
const PRUNE_AT = 1024;

/** A change's identity: the same on every replica that saw the same changes. */
function changeId(changes) {
  return crypto
    .createHash('sha256')
    .update(JSON.stringify([...changes].sort()))
    .digest('base64url')
    .slice(0, 22);
}

/**
 * A claimed signal's identity: the change's, made unique to this publish. A claim is already
 * exactly one signal per load, and a later load may need a signal of the same change (its
 * refetch reached a replica that had not seen the change yet, which signals it when it does):
 * the frontend, which drops an id it has seen, must not take that one for a duplicate. Only a
 * retry of the same publish repeats an id.
 */
const claimId = (changes) => `${changeId(changes)}.${crypto.randomBytes(6).toString('base64url')}`;

/**
 * @param {object} options
 * @param {ReturnType<import('./registry').createViewerRegistry>} options.registry
 * @param {{ publish(signal: object): Promise<void> | void }} options.signals
 * @param {(entityRef: string) => string} options.channelOf
 * @param {{ warn(message: string): void }} [options.logger]
 * @param {number} options.minIntervalMs
 * @param {() => number} options.now
 * @param {(fn: () => void, ms: number) => () => void} options.setTimer
 * @param {(entityRef: string) => Promise<unknown>[]} [options.writesOf] this replica's writes of
 *   the entity's loads still on their way: a claim waits for them
 */
function createSharedSignals({
  registry,
  signals,
  channelOf,
  logger,
  minIntervalMs,
  now,
  setTimer,
  writesOf = () => [],
}) {
  /** entityRef → { lastSentAt, changes: Set<string>, cancel } */
  const entities = new Map();
  /** `${entityRef}\n${clusters}` → { signal, attempts }, waiting for the bus. */
  const outbox = new Map();
  let inFlight = 0;
  let closed = false;
  const warnedOf = new Set();
  const counts = { published: 0, failed: 0, lost: 0, merged: 0, recipients: 0 };

  function warnOnce(what, message) {
    if (warnedOf.has(what)) return;
    warnedOf.add(what);
    logger?.warn(`kube-watch-native: ${message} (reported once)`);
  }

  /**
   * Queues one signal to these users on the entity's channel, merged with one waiting for the
   * same entity and clusters; returns the queued entry.
   */
  function enqueue(entityRef, users, clusters, id) {
    const key = `${entityRef}\n${JSON.stringify(clusters)}`;
    const waiting = outbox.get(key);
    if (waiting) {
      counts.merged++;
      const recipients = new Set([...waiting.signal.recipients.entityRef, ...users]);
      waiting.signal.recipients.entityRef = [...recipients].sort();
      waiting.signal.message = { ...waiting.signal.message, at: now(), id };
      return waiting;
    }
    const entry = {
      entityRef,
      attempts: 0,
      retryAt: 0,
      signal: {
        recipients: { type: 'user', entityRef: [...new Set(users)].sort() },
        channel: channelOf(entityRef),
        message: { clusters, at: now(), id },
      },
    };
    outbox.set(key, entry);
    pump();
    return entry;
  }

  function pump() {
    for (const [key, entry] of outbox) {
      if (inFlight >= MAX_IN_FLIGHT) return;
      if (entry.retryAt > now()) continue;
      outbox.delete(key);
      inFlight++;
      entry.attempts++;
      Promise.resolve()
        .then(() => signals.publish(entry.signal))
        .then(
          () => {
            counts.published++;
            counts.recipients += entry.signal.recipients.entityRef.length;
          },
          (error) => {
            counts.failed++;
            warnOnce('publish', `publishing a live signal failed: ${error}`);
            if (entry.attempts > RETRIES) {
              counts.lost++;
              warnOnce(
                'lost',
                `a live signal to ${entry.signal.recipients.entityRef.length} viewer(s) of ${entry.signal.channel} was lost after ${entry.attempts} attempts; their tabs poll again within the frontend's liveness bound`,
              );
              return;
            }
            // Back in the queue, merged with anything newer for the same viewers.
            const { signal } = entry;
            const again = enqueue(
              entry.entityRef,
              signal.recipients.entityRef,
              signal.message.clusters,
              signal.message.id,
            );
            again.attempts = Math.max(again.attempts, entry.attempts);
            again.retryAt = now() + RETRY_MS;
            setTimer(pump, RETRY_MS);
          },
        )
        .finally(() => {
          inFlight--;
          pump();
        });
    }
  }

  /**
   * Claims the entity's armed viewers and signals them, grouped by the clusters they named.
   * Viewers behind the entity's gate (another replica claimed within the interval) are claimed
   * when it opens, with the changes seen meanwhile.
   */
  async function claimAndSignal(entityRef, changes, before = [], loadedBy = null) {
    let rows;
    let waitMs;
    let armedAt;
    try {
      // A load answered here before these changes were seen, whose row is still on its way, is
      // claimed too. With none on its way the claim leaves at once, ahead of the row of a load
      // answered right after (whose answer shows the change: it must not be claimed by it).
      if (before.length > 0) await Promise.all(before);
      ({ rows, waitMs, armedAt } = await registry.claim(entityRef, { minIntervalMs, loadedBy }));
    } catch {
      return; // counted and logged by the registry; the viewers stay armed for the next change
    }
    if (waitMs !== null && !closed) {
      const state = entities.get(entityRef) ?? newState();
      entities.set(entityRef, state);
      for (const change of changes) state.changes.add(change);
      // At the gate's end, only the loads recorded by now: one answered here since saw these
      // changes. Unless a change seen since is already due (it claims every armed load).
      if (!state.cancel) {
        state.loadedBy = armedAt;
        state.cancel = setTimer(() => flush(entityRef), waitMs);
      }
    }
    const id = claimId(changes);
    const groups = new Map();
    for (const row of rows) {
      const clusters = [...new Set(row.clusters)].sort();
      const key = JSON.stringify(clusters);
      if (!groups.has(key)) groups.set(key, { clusters, users: [] });
      groups.get(key).users.push(row.userEntityRef);
    }
    for (const { clusters, users } of groups.values()) enqueue(entityRef, users, clusters, id);
    return rows.length;
  }

  /**
   * An entity's coalescing state: when it last claimed, the changes and the loads' writes a
   * claim due is to wait for, that claim's timer, and the bound of a claim at a gate's end.
   */
  function newState() {
    return { lastSentAt: -Infinity, changes: new Set(), before: [], cancel: null, loadedBy: null };
  }

  /** Forgets the coalescing state of entities past their interval: a new change of one signals at once anyway. */
  function prune() {
    const t = now();
    for (const [entityRef, state] of entities) {
      if (!state.cancel && state.lastSentAt + minIntervalMs <= t) entities.delete(entityRef);
    }
  }

  function flush(entityRef) {
    const state = entities.get(entityRef);
    if (!state) return;
    const { changes, before, loadedBy } = state;
    state.cancel = null;
    state.changes = new Set();
    state.before = [];
    state.loadedBy = null;
    state.lastSentAt = now();
    void claimAndSignal(entityRef, changes, before, loadedBy);
  }

  return {
    /** Something the entity's answers depend on changed: claim and signal, coalesced per entity. */
    entityChanged(entityRef, change) {
      if (closed) return;
      let state = entities.get(entityRef);
      if (!state && entities.size >= PRUNE_AT) prune();
      if (!state) {
        state = newState();
        entities.set(entityRef, state);
      }
      state.changes.add(change ?? `${now()}`);
      state.loadedBy = null; // the loads answered here before this change must be claimed too
      // The loads answered here before this change was seen, whose rows are still on their way:
      // the claim waits for them. Not the ones answered after it (their answers show it).
      state.before.push(...writesOf(entityRef));
      if (state.cancel) return; // a trailing claim is due and carries this change
      const wait = state.lastSentAt + minIntervalMs - now();
      if (wait <= 0) flush(entityRef);
      else state.cancel = setTimer(() => flush(entityRef), wait);
    },

    /** Tells these viewers to load again now, whatever their arming (evicted, or orphaned). */
    pollNow(rows, reason) {
      const byEntity = new Map();
      for (const row of rows) {
        const clusters = [...new Set(row.clusters)].sort();
        const key = `${row.entityRef}\n${JSON.stringify(clusters)}`;
        if (!byEntity.has(key)) byEntity.set(key, { entityRef: row.entityRef, clusters, users: [] });
        byEntity.get(key).users.push(row.userEntityRef);
      }
      for (const { entityRef, clusters, users } of byEntity.values()) {
        enqueue(entityRef, users, clusters, claimId([`${reason} ${entityRef}`]));
      }
    },

    counts() {
      return { ...counts, queued: outbox.size, inFlight };
    },

    /**
     * Stops: tells the viewers whose latest load this replica answered to load again (through
     * another replica), and waits for the outbox to drain, at most `waitMs`.
     */
    async close(waitMs = 3000) {
      closed = true;
      for (const state of entities.values()) state.cancel?.();
      entities.clear();
      try {
        this.pollNow(await registry.close(), 'replica stopping');
      } catch (error) {
        warnOnce('close', `handing the live tab's viewers to the other replicas failed: ${error}`);
      }
      const deadline = now() + waitMs;
      while ((outbox.size > 0 || inFlight > 0) && now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        pump();
      }
    },
  };
}

module.exports = { createSharedSignals, changeId };
