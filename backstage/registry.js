'use strict';
// The live tab's viewers shared by every replica, in the Kubernetes plugin's own database
// (Backstage's `coreServices.database`, PostgreSQL when there are several replicas).
//
// Each answered load arms its viewer, a row per (user, entity): `load_seq` counts the loads,
// `signalled_seq` the last load a signal was sent for. A replica that sees a change of an entity
// it follows claims every armed viewer of that entity in one UPDATE, so exactly one replica
// signals each load, whichever replica answered it and whichever holds the tab's WebSocket, and
// it signals them all at once (one bus event per entity change, naming every viewer). The
// replica that answered a viewer's latest load is in its row: when that replica stops (its
// shutdown) or stops beating (a crash), its armed viewers are claimed and told to load again,
// because no replica may follow what their answer showed any more.
//
// A claim also passes the entity's gate, a row per entity in a third table: at most one claim
// that signals anyone per entity per `minIntervalMs` across all replicas, on the database's
// clock. A replica that finds the gate closed while viewers wait is told when it opens, and
// claims them then: a load answered just after another replica's claim (a reload that reached a
// replica which had not seen the change yet) is signalled at the interval's end, not at once.
//
// Why rows and not a leader: a claim is one statement, true on every replica at once; no
// election to lose, no replica whose death stops signals for everyone. Why these columns: a
// viewer's signal names the clusters its own answer named (the replica that claims it may name
// them otherwise, see ./live.js), and the sequence numbers make "one signal per load" a
// comparison the database does.

const REPLICAS = 'kube_watch_live_replicas';
const VIEWERS = 'kube_watch_live_viewers';
const ENTITIES = 'kube_watch_live_entities';

/** The database's clock in ms, one reading per statement: the gate's, alike for every replica. */
const DB_NOW = '(extract(epoch from statement_timestamp()) * 1000)::bigint';
/**
 * How long after a claim of an entity the loads answered since on another replica are left to
 * that replica (at least; 4 × minInterval when longer): see claim().
 */
const OWN_LOADS_MS = 1000;

/** Entities' gates unused this long are dropped. */
const GATE_KEPT_MS = 3_600_000;

/** Replicas beat this often; one silent for three beats is gone. */
const HEARTBEAT_MS = 2000;

/**
 * @param {object} options
 * @param {import('knex').Knex} options.knex the Kubernetes plugin's database (PostgreSQL)
 * @param {string} options.replica this replica's name, unique among the replicas (a random id per start)
 * @param {(rows: { userEntityRef: string, entityRef: string, clusters: string[] }[]) => void} options.orphaned
 *   armed viewers whose replica is gone, claimed by this one: they must load again
 * @param {{ warn(message: string): void }} [options.logger]
 * @param {number} [options.heartbeatMs]
 * @param {() => number} [options.now]
 */
function createViewerRegistry({
  knex,
  replica,
  orphaned,
  logger,
  heartbeatMs = HEARTBEAT_MS,
  now = Date.now,
}) {
  let closed = false;
  let timer = null;
  let others = 0;
  let warned = false;
  const counts = { claims: 0, claimed: 0, gated: 0, orphaned: 0, failed: 0 };

  /** A failed statement is counted and logged once: the caller answers as not live. */
  const failed = (what) => (error) => {
    counts.failed++;
    if (!warned) {
      warned = true;
      logger?.warn(
        `kube-watch-native: the live tab's viewer registry failed to ${what} (reported once): ${error}`,
      );
    }
    throw error;
  };

  const rowsOf = (result) =>
    (result.rows ?? result).map((row) => ({
      userEntityRef: row.user_ref,
      entityRef: row.entity_ref,
      clusters: JSON.parse(row.clusters),
    }));

  async function migrate() {
    // Every replica starts with this; the lock keeps two from creating the same table at once.
    await knex.transaction(async (tx) => {
      await tx.raw(`SELECT pg_advisory_xact_lock(hashtext('${VIEWERS}'))`);
      await tx.raw(
        `CREATE TABLE IF NOT EXISTS ${REPLICAS} (replica text PRIMARY KEY, alive_at bigint NOT NULL)`,
      );
      await tx.raw(`CREATE TABLE IF NOT EXISTS ${VIEWERS} (
        entity_ref text NOT NULL, user_ref text NOT NULL, replica text NOT NULL, clusters text NOT NULL,
        load_seq bigint NOT NULL, signalled_seq bigint NOT NULL, expires_at bigint NOT NULL,
        PRIMARY KEY (entity_ref, user_ref))`);
      await tx.raw(
        `CREATE TABLE IF NOT EXISTS ${ENTITIES} (entity_ref text PRIMARY KEY, claimed_at bigint NOT NULL)`,
      );
      // When the row's latest load was recorded, on the database's clock (see claim()).
      await tx.raw(`ALTER TABLE ${VIEWERS} ADD COLUMN IF NOT EXISTS loaded_at bigint NOT NULL DEFAULT 0`);
    });
  }

  /** Beats, counts the other replicas alive, and claims the armed viewers of the ones gone. */
  async function beat() {
    const t = now();
    const alive = t - 3 * heartbeatMs;
    await knex.raw(
      `INSERT INTO ${REPLICAS} (replica, alive_at) VALUES (?, ?)
       ON CONFLICT (replica) DO UPDATE SET alive_at = excluded.alive_at`,
      [replica, t],
    );
    const [{ n }] = (
      await knex.raw(`SELECT count(*)::int AS n FROM ${REPLICAS} WHERE alive_at > ? AND replica <> ?`, [
        alive,
        replica,
      ])
    ).rows;
    others = n;
    const rows = rowsOf(
      await knex.raw(
        `UPDATE ${VIEWERS} SET signalled_seq = load_seq
         WHERE signalled_seq < load_seq AND expires_at > ?
           AND replica NOT IN (SELECT replica FROM ${REPLICAS} WHERE alive_at > ?)
         RETURNING user_ref, entity_ref, clusters`,
        [t, alive],
      ),
    );
    await knex.raw(`DELETE FROM ${VIEWERS} WHERE expires_at <= ?`, [t]);
    await knex.raw(`DELETE FROM ${REPLICAS} WHERE alive_at <= ?`, [t - 30 * heartbeatMs]);
    await knex.raw(`DELETE FROM ${ENTITIES} WHERE claimed_at < ${DB_NOW} - ?`, [GATE_KEPT_MS]);
    if (rows.length > 0) {
      counts.orphaned += rows.length;
      orphaned(rows);
    }
  }

  function schedule() {
    if (closed) return;
    timer = setTimeout(() => {
      // A failed beat is counted and logged once; the next one tries again.
      beat()
        .catch(failed('beat'))
        .catch(() => {})
        .finally(schedule);
    }, heartbeatMs);
    timer.unref?.();
  }

  const ready = migrate()
    .then(beat)
    .then(schedule, (error) => {
      schedule();
      return failed('start')(error);
    });
  ready.catch(() => {});

  return {
    /** Resolves once the tables exist and this replica has beaten once; rejects if it could not. */
    ready,

    /** Other replicas that beat within three beats, at the last beat. */
    get others() {
      return others;
    },

    /**
     * A load of `entityRef` by `userEntityRef` was answered here from these clusters (as the
     * user's answer names them): arms its viewer until `expiresAt`.
     */
    loaded(userEntityRef, entityRef, clusters, expiresAt) {
      return knex
        .raw(
          `INSERT INTO ${VIEWERS} AS v
             (entity_ref, user_ref, replica, clusters, load_seq, signalled_seq, expires_at, loaded_at)
           VALUES (?, ?, ?, ?, 1, 0, ?, ${DB_NOW})
           ON CONFLICT (entity_ref, user_ref) DO UPDATE SET replica = excluded.replica,
             clusters = excluded.clusters, load_seq = v.load_seq + 1, expires_at = excluded.expires_at,
             loaded_at = excluded.loaded_at`,
          [entityRef, userEntityRef, replica, JSON.stringify(clusters), expiresAt],
        )
        .then(() => undefined, failed('record a load'));
    },

    /**
     * Claims every armed viewer of `entityRef` through the entity's gate: `rows`, the viewers
     * this replica is to signal now, and `waitMs`, when viewers wait behind a gate another claim
     * closed less than `minIntervalMs` ago: claim again then (else null). One statement: the
     * gate is an upsert whose row lock orders concurrent claims, and it closes only when there
     * are viewers to claim. A gated answer also carries `armedAt`, the database's time of the
     * statement: a claim again at the gate's end passes it as `loadedBy`, so that it takes only
     * the loads recorded by then (a load this replica answered since saw the change it claims
     * for; claiming it would signal that tab twice).
     */
    async claim(entityRef, { minIntervalMs = 0, loadedBy = null } = {}) {
      counts.claims++;
      const t = now();
      // A load recorded on another replica since the entity's last claim, while that claim is
      // recent, is that replica's to claim: it was answered after a change was signalled, and
      // only the replica that answered it knows whether its answer showed the change (then
      // that replica claims nothing, its answer is current) or not (it had not seen the change
      // yet, and claims it when it does). A replica that merely saw the change late must not
      // signal it again. Past the window, any replica claims it, as any other.
      const ownLoadsMs = Math.max(OWN_LOADS_MS, 4 * minIntervalMs);
      const bound = loadedBy === null ? '' : 'AND COALESCE(v.loaded_at, 0) <= ?';
      const claimable = `AND (v.replica = ? OR NOT EXISTS (
               SELECT 1 FROM ${ENTITIES} g WHERE g.entity_ref = v.entity_ref
                 AND g.claimed_at >= ${DB_NOW} - ? AND v.loaded_at > g.claimed_at)) ${bound}`;
      const claimableArgs = [replica, ownLoadsMs, ...(loadedBy === null ? [] : [loadedBy])];
      const result = await knex
        .raw(
          `WITH armed AS (
             SELECT 1 FROM ${VIEWERS} v
             WHERE entity_ref = ? AND signalled_seq < load_seq AND expires_at > ? ${claimable} LIMIT 1
           ), gate AS (
             INSERT INTO ${ENTITIES} AS e (entity_ref, claimed_at)
             SELECT ?, ${DB_NOW} WHERE EXISTS (SELECT 1 FROM armed)
             ON CONFLICT (entity_ref) DO UPDATE SET claimed_at = excluded.claimed_at
               WHERE e.claimed_at <= excluded.claimed_at - ?
             RETURNING claimed_at
           ), claimed AS (
             UPDATE ${VIEWERS} v SET signalled_seq = load_seq
             WHERE entity_ref = ? AND signalled_seq < load_seq AND expires_at > ? ${claimable}
               AND EXISTS (SELECT 1 FROM gate)
             RETURNING user_ref, entity_ref, clusters
           )
           SELECT user_ref, entity_ref, clusters, NULL::bigint AS wait_ms, NULL::bigint AS armed_at
           FROM claimed
           UNION ALL
           SELECT NULL, NULL, NULL,
             COALESCE((SELECT claimed_at FROM ${ENTITIES} WHERE entity_ref = ?) + ? - ${DB_NOW}, 0),
             ${DB_NOW}
           WHERE EXISTS (SELECT 1 FROM armed) AND NOT EXISTS (SELECT 1 FROM gate)`,
          [
            ...[entityRef, t, ...claimableArgs],
            ...[entityRef, minIntervalMs],
            ...[entityRef, t, ...claimableArgs],
            ...[entityRef, minIntervalMs],
          ],
        )
        .catch(failed('claim viewers'));
      const all = result.rows ?? result;
      const gated = all.find((row) => row.user_ref === null);
      const rows = rowsOf(all.filter((row) => row.user_ref !== null));
      counts.claimed += rows.length;
      if (!gated) return { rows, waitMs: null };
      // A gate that looked open to this statement but was closed by a claim running beside it:
      // that claim took the viewers this one saw armed. Nothing waits.
      const left = Number(gated.wait_ms);
      if (!(left > 0)) return { rows, waitMs: null };
      counts.gated++;
      return { rows, waitMs: left, armedAt: Number(gated.armed_at) };
    },

    /** A viewer was refused what its answer shows: no replica signals it again. */
    forget(userEntityRef, entityRef) {
      return knex
        .raw(`DELETE FROM ${VIEWERS} WHERE entity_ref = ? AND user_ref = ?`, [entityRef, userEntityRef])
        .then(() => undefined, failed('forget a viewer'));
    },

    /**
     * Claims asked, viewers claimed, claims that found the gate closed with viewers waiting,
     * viewers of gone replicas claimed, statements failed.
     */
    counts() {
      return { ...counts };
    },

    /**
     * This replica stops: claims the armed viewers whose latest load it answered (no replica
     * may follow their answers) and leaves the replicas' list. Returns the claimed viewers.
     */
    async close() {
      closed = true;
      clearTimeout(timer);
      const rows = rowsOf(
        await knex.raw(
          `UPDATE ${VIEWERS} SET signalled_seq = load_seq
           WHERE replica = ? AND signalled_seq < load_seq AND expires_at > ?
           RETURNING user_ref, entity_ref, clusters`,
          [replica, now()],
        ),
      );
      await knex.raw(`DELETE FROM ${REPLICAS} WHERE replica = ?`, [replica]);
      return rows;
    },
  };
}

module.exports = { createViewerRegistry, HEARTBEAT_MS };
