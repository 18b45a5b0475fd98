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
// Why rows and not a leader: a claim is one statement, true on every replica at once; no
// election to lose, no replica whose death stops signals for everyone. Why these columns: a
// viewer's signal names the clusters its own answer named (the replica that claims it may name
// them otherwise, see ./live.js), and the sequence numbers make "one signal per load" a
// comparison the database does.

const REPLICAS = 'kube_watch_live_replicas';
const VIEWERS = 'kube_watch_live_viewers';

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
  const counts = { claims: 0, claimed: 0, orphaned: 0, failed: 0 };

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
          `INSERT INTO ${VIEWERS} AS v (entity_ref, user_ref, replica, clusters, load_seq, signalled_seq, expires_at)
           VALUES (?, ?, ?, ?, 1, 0, ?)
           ON CONFLICT (entity_ref, user_ref) DO UPDATE SET replica = excluded.replica,
             clusters = excluded.clusters, load_seq = v.load_seq + 1, expires_at = excluded.expires_at`,
          [entityRef, userEntityRef, replica, JSON.stringify(clusters), expiresAt],
        )
        .then(() => undefined, failed('record a load'));
    },

    /** Claims every armed viewer of `entityRef`: the ones this replica is to signal now. */
    async claim(entityRef) {
      counts.claims++;
      const rows = rowsOf(
        await knex
          .raw(
            `UPDATE ${VIEWERS} SET signalled_seq = load_seq
             WHERE entity_ref = ? AND signalled_seq < load_seq AND expires_at > ?
             RETURNING user_ref, entity_ref, clusters`,
            [entityRef, now()],
          )
          .catch(failed('claim viewers')),
      );
      counts.claimed += rows.length;
      return rows;
    },

    /** A viewer was refused what its answer shows: no replica signals it again. */
    forget(userEntityRef, entityRef) {
      return knex
        .raw(`DELETE FROM ${VIEWERS} WHERE entity_ref = ? AND user_ref = ?`, [entityRef, userEntityRef])
        .then(() => undefined, failed('forget a viewer'));
    },

    /** Statements run, viewers claimed, viewers of gone replicas claimed, statements failed. */
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
