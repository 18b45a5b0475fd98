'use strict';
// The live tab's viewers of one replica alone, in memory: the same rows, rules and answers as
// the replicas' registry in PostgreSQL (./store-sql.js, ./store-sql-statements.js), so that one model of
// following (./signals.js) runs over either store, and what a viewer is signalled for
// cannot differ between one backend and many. A row per (user, entity): the watch keys its
// answer depends on, a count of loads and the last load signalled; a claim takes the armed rows
// of an entity that depend on a changed key, through the entity's gate (at most one claim that
// signals anyone per `minIntervalMs`). What only replicas need (heartbeats, a replica gone, a
// signal the events bus lost) has nothing to do here.

const { storeMethods } = require('./store');

/** Rows are swept of the expired at least this often (and whenever they double). */
const SWEEP_MS = 60_000;
/** Entities' gates unused this long are dropped. */
const GATE_KEPT_MS = 3_600_000;

/**
 * @param {object} options
 * @param {() => number} options.now the publisher's clock, in ms
 */
function createMemoryRegistry({ now }) {
  const registry = new MemoryRegistry(now);
  return {
    ready: Promise.resolve(),
    /** One replica: nobody else. */
    others: 0,
    ...storeMethods(registry),
  };
}

class MemoryRegistry {
  #now;
  /**
   * entityRef → userEntityRef → { userEntityRef, entityRef, watchKeys, clusters, loadSeq,
   * signalledSeq, expiresAt, loadedAt }: a claim reads one entity's rows.
   */
  #byEntity = new Map();
  #size = 0;
  /** entityRef → when a claim that signalled anyone last passed its gate */
  #gates = new Map();
  #sweptAt;
  #sweptSize = 0;
  #counts = { claims: 0, claimed: 0, gated: 0 };

  constructor(now) {
    this.#now = now;
    this.#sweptAt = now();
  }

  /**
   * As the registry's loaded(): `watchKeys`, key → cluster, or an array of clusters (any key);
   * `recheckAt`, when the viewer's access must be asked again (null: never).
   */
  loaded(userEntityRef, entityRef, watchKeys, expiresAt, recheckAt = null) {
    const t = this.#now();
    let rows = this.#byEntity.get(entityRef);
    if (!rows) this.#byEntity.set(entityRef, (rows = new Map()));
    let row = rows.get(userEntityRef);
    if (!row) {
      row = { userEntityRef, entityRef, loadSeq: 0, signalledSeq: 0 };
      rows.set(userEntityRef, row);
      this.#size++;
    }
    Object.assign(row, {
      watchKeys: Array.isArray(watchKeys) ? null : watchKeys,
      clusters: Array.isArray(watchKeys) ? watchKeys : Object.values(watchKeys),
      loadSeq: row.loadSeq + 1,
      expiresAt,
      recheckAt,
      loadedAt: t,
    });
    this.#sweep(t);
    return Promise.resolve();
  }

  /** As the registry's claim(): `{ rows, waitMs, armedAt }`. */
  claim(entityRef, { watchKeys = null, minIntervalMs = 0, loadedBy = null, signalId } = {}) {
    this.#counts.claims++;
    const t = this.#now();
    const armed = [];
    for (const row of this.#byEntity.get(entityRef)?.values() ?? []) {
      if (row.signalledSeq >= row.loadSeq || row.expiresAt <= t) continue;
      if (loadedBy !== null && row.loadedAt > loadedBy) continue;
      const clusters = clustersFor(row, watchKeys);
      if (clusters.length > 0) armed.push({ row, clusters });
    }
    if (armed.length === 0) return Promise.resolve({ rows: [], waitMs: null });
    const claimedAt = this.#gates.get(entityRef);
    if (claimedAt !== undefined && claimedAt > t - minIntervalMs) {
      this.#counts.gated++;
      return Promise.resolve({ rows: [], waitMs: claimedAt + minIntervalMs - t, armedAt: t });
    }
    this.#gates.set(entityRef, t);
    const rows = armed.map(({ row, clusters }) => {
      row.signalledSeq = row.loadSeq;
      return { userEntityRef: row.userEntityRef, entityRef, clusters, signalId };
    });
    this.#counts.claimed += rows.length;
    return Promise.resolve({ rows, waitMs: null });
  }

  /** As the registry's claimDue(): the armed rows whose access is to be asked again by now. */
  claimDue(signalId = null) {
    const t = this.#now();
    const rows = [];
    for (const byUser of this.#byEntity.values()) {
      for (const row of byUser.values()) {
        if (
          row.recheckAt === null ||
          row.recheckAt > t ||
          row.signalledSeq >= row.loadSeq ||
          row.expiresAt <= t
        )
          continue;
        row.signalledSeq = row.loadSeq;
        rows.push({
          userEntityRef: row.userEntityRef,
          entityRef: row.entityRef,
          clusters: [...new Set(row.clusters)].sort(),
          signalId,
        });
      }
    }
    return Promise.resolve(rows);
  }

  forget(userEntityRef, entityRef) {
    const rows = this.#byEntity.get(entityRef);
    if (rows?.delete(userEntityRef)) this.#size--;
    if (rows?.size === 0) this.#byEntity.delete(entityRef);
    return Promise.resolve();
  }

  counts() {
    return { ...this.#counts };
  }

  /** One replica stopping hands nobody on: there is no other to load from. */
  close() {
    this.#byEntity.clear();
    this.#size = 0;
    this.#gates.clear();
    return Promise.resolve([]);
  }

  /** Drops expired rows and old gates, at most every SWEEP_MS unless the rows doubled. */
  #sweep(t) {
    if (t - this.#sweptAt < SWEEP_MS && this.#size < 2 * this.#sweptSize + 64) return;
    for (const rows of this.#byEntity.values()) {
      for (const row of rows.values()) if (row.expiresAt <= t) this.forget(row.userEntityRef, row.entityRef);
    }
    for (const [entityRef, at] of this.#gates) if (at < t - GATE_KEPT_MS) this.#gates.delete(entityRef);
    this.#sweptAt = t;
    this.#sweptSize = this.#size;
  }
}

/** The clusters of a row's keys among `watchKeys` (null: all of the row's), sorted. */
function clustersFor(row, watchKeys) {
  if (watchKeys === null || row.watchKeys === null) return [...new Set(row.clusters)].sort();
  const clusters = new Set();
  for (const key of watchKeys) if (Object.hasOwn(row.watchKeys, key)) clusters.add(row.watchKeys[key]);
  return [...clusters].sort();
}

module.exports = { createMemoryRegistry };
