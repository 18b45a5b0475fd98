'use strict';
// The statements of the live tab's viewer registry (./store-sql.js), each built as
// `[sql, bindings]` for `knex.raw`: the tables, a replica's beat and the cleaning it does, a
// load, a claim through an entity's gate, a claim sent again, a viewer forgotten, and a replica
// leaving. Every claim stamps its rows with the signal's id and the database's time, so that a
// signal the events bus lost can be sent again, with the same id (see claimUnheard()).
//
// Time is the database's, never a replica's: a replica is alive, gone or a viewer expired by one
// clock (DB_NOW), so a replica whose own clock is off neither signals nor drops another's rows.
// Durations (a viewer's TTL, an interval) are the only numbers a replica passes in.

const REPLICAS = 'kube_watch_live_replicas';
const VIEWERS = 'kube_watch_live_viewers';
const ENTITIES = 'kube_watch_live_entities';

/** The database's clock in ms, one reading per statement: the gate's, alike for every replica. */
const DB_NOW = '(extract(epoch from statement_timestamp()) * 1000)::bigint';
/**
 * How long after a claim of an entity the loads answered since on another replica are left to
 * that replica (at least; 4 × minInterval when longer): see claimViewers().
 */
const OWN_LOADS_MS = 1000;

/** Entities' gates unused this long are dropped. */
const GATE_KEPT_MS = 3_600_000;

/** Creates the tables, or adds what an older version's lack. */
async function migrate(knex) {
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
    // When the row's latest load was recorded, on the database's clock (see claimViewers()).
    await tx.raw(`ALTER TABLE ${VIEWERS} ADD COLUMN IF NOT EXISTS loaded_at bigint NOT NULL DEFAULT 0`);
    // The id of the signal of the row's latest claim, when it was claimed (the database's
    // clock), and the latest claim whose signal was sent again (see claimUnheard()).
    await tx.raw(`ALTER TABLE ${VIEWERS} ADD COLUMN IF NOT EXISTS signal_id text`);
    await tx.raw(`ALTER TABLE ${VIEWERS} ADD COLUMN IF NOT EXISTS signalled_at bigint NOT NULL DEFAULT 0`);
    await tx.raw(`ALTER TABLE ${VIEWERS} ADD COLUMN IF NOT EXISTS resent_seq bigint NOT NULL DEFAULT 0`);
    // The watch keys the row's answer depends on, each with the cluster its answer names it by
    // (NULL: a row of an older version, claimed by any change of its entity).
    await tx.raw(`ALTER TABLE ${VIEWERS} ADD COLUMN IF NOT EXISTS watch_keys jsonb`);
    // When the viewer's own access behind its answer is to be asked again (NULL: never).
    await tx.raw(`ALTER TABLE ${VIEWERS} ADD COLUMN IF NOT EXISTS recheck_at bigint`);
  });
}

/** The replica is alive now; returns the database's time, `now`, for the replica's clock check. */
const beat = (replica) => [
  `INSERT INTO ${REPLICAS} (replica, alive_at) VALUES (?, ${DB_NOW})
   ON CONFLICT (replica) DO UPDATE SET alive_at = excluded.alive_at
   RETURNING alive_at AS now`,
  [replica],
];

/** The replicas that beat within `aliveMs`: a row each, `replica`. */
const alive = (aliveMs) => [`SELECT replica FROM ${REPLICAS} WHERE alive_at > ${DB_NOW} - ?`, [aliveMs]];

/** What a claim sets: the row is signalled, by the signal `?`, now. */
const CLAIMED = `signalled_seq = load_seq, signal_id = ?, signalled_at = ${DB_NOW}`;
/** What a claim returns of each row. */
const RETURNED = 'RETURNING user_ref, entity_ref, clusters, signal_id';

/**
 * Claims the armed viewers not expired of the replicas that have not beaten within `aliveMs`,
 * for the signal `signalId`.
 */
const claimOrphans = (aliveMs, signalId) => [
  `UPDATE ${VIEWERS} SET ${CLAIMED}
   WHERE signalled_seq < load_seq AND expires_at > ${DB_NOW}
     AND replica NOT IN (SELECT replica FROM ${REPLICAS} WHERE alive_at > ${DB_NOW} - ?)
   ${RETURNED}`,
  [signalId, aliveMs],
];

/**
 * Claims again, once per claim, the viewers not expired that were signalled at least
 * `resendMs` ago and have not loaded since: their signal may be one the events bus never
 * delivered (bench/investigations/events-bus-gaps.js). Each comes back with its signal's id, sent again as it
 * was: a tab that heard it drops it (the frontend drops an id it has seen), one that did not
 * loads again.
 */
const claimUnheard = (resendMs) => [
  `UPDATE ${VIEWERS} SET resent_seq = signalled_seq
   WHERE signalled_seq = load_seq AND resent_seq < signalled_seq AND signal_id IS NOT NULL
     AND signalled_at > 0 AND signalled_at <= ${DB_NOW} - ? AND expires_at > ${DB_NOW}
   ${RETURNED}`,
  [resendMs],
];

/** Drops the viewers expired. */
const dropExpired = () => [`DELETE FROM ${VIEWERS} WHERE expires_at <= ${DB_NOW}`, []];

/** Drops the replicas that have not beaten within `goneMs`. */
const dropGone = (goneMs) => [`DELETE FROM ${REPLICAS} WHERE alive_at <= ${DB_NOW} - ?`, [goneMs]];

/** Drops the entities' gates unused for GATE_KEPT_MS. */
const dropGates = () => [`DELETE FROM ${ENTITIES} WHERE claimed_at < ${DB_NOW} - ?`, [GATE_KEPT_MS]];

/**
 * A load answered on `replica`, naming these `clusters`, from these watch keys (`watchKeys`:
 * key → the cluster the answer names it by; null: any change of the entity claims it) arms its
 * viewer for `ttlMs`.
 */
const recordLoad = (
  replica,
  userEntityRef,
  entityRef,
  { clusters, watchKeys },
  ttlMs,
  recheckInMs = null,
) => [
  `INSERT INTO ${VIEWERS} AS v
     (entity_ref, user_ref, replica, clusters, watch_keys, load_seq, signalled_seq, expires_at, loaded_at,
      recheck_at)
   VALUES (?, ?, ?, ?, ?::jsonb, 1, 0, ${DB_NOW} + ?, ${DB_NOW}, ${DB_NOW} + ?::bigint)
   ON CONFLICT (entity_ref, user_ref) DO UPDATE SET replica = excluded.replica,
     clusters = excluded.clusters, watch_keys = excluded.watch_keys, load_seq = v.load_seq + 1,
     expires_at = excluded.expires_at, loaded_at = excluded.loaded_at, recheck_at = excluded.recheck_at`,
  [
    entityRef,
    userEntityRef,
    replica,
    JSON.stringify([...new Set(clusters)].sort()),
    watchKeys === null ? null : JSON.stringify(watchKeys),
    Math.max(0, Math.round(ttlMs)),
    recheckInMs === null ? null : Math.round(recheckInMs),
  ],
];

/** Claims the armed viewers not expired whose access is to be asked again by now, for `signalId`. */
const claimDue = (signalId) => [
  `UPDATE ${VIEWERS} SET ${CLAIMED}
   WHERE recheck_at <= ${DB_NOW} AND signalled_seq < load_seq AND expires_at > ${DB_NOW}
   ${RETURNED}`,
  [signalId],
];

/**
 * The viewers of `entityRef` that `replica` claims through the entity's gate (see the registry's
 * claim()), then, when the gate is closed while viewers wait, one row with their `wait_ms` and
 * the statement's `armed_at`. With `watchKeys`, only the viewers whose answer depends on one of
 * them, each returned with the clusters its answer names those keys by: a change signals
 * exactly the viewers it would on one replica, never a viewer of the same entity whose answer it
 * does not touch (another user's types, types this user may not list).
 */
function claimViewers({ replica, entityRef, watchKeys = null, minIntervalMs, loadedBy, signalId }) {
  // A load recorded on another replica since the entity's last claim, while that claim is
  // recent, is that replica's to claim: it was answered after a change was signalled, and
  // only the replica that answered it knows whether its answer showed the change (then
  // that replica claims nothing, its answer is current) or not (it had not seen the change
  // yet, and claims it when it does). A replica that merely saw the change late must not
  // signal it again. Past the window, any replica claims it, as any other.
  const ownLoadsMs = Math.max(OWN_LOADS_MS, 4 * minIntervalMs);
  const bound = loadedBy === null ? '' : 'AND COALESCE(v.loaded_at, 0) <= ?';
  // A row of an older version (no keys) is claimed by any change of its entity, as it was then.
  const keyed =
    watchKeys === null
      ? ''
      : 'AND (v.watch_keys IS NULL OR EXISTS (SELECT 1 FROM unnest(?::text[]) k WHERE jsonb_exists(v.watch_keys, k)))';
  const claimable = `AND (v.replica = ? OR NOT EXISTS (
           SELECT 1 FROM ${ENTITIES} g WHERE g.entity_ref = v.entity_ref
             AND g.claimed_at >= ${DB_NOW} - ? AND v.loaded_at > g.claimed_at)) ${keyed} ${bound}`;
  const claimableArgs = [
    replica,
    ownLoadsMs,
    ...(watchKeys === null ? [] : [watchKeys]),
    ...(loadedBy === null ? [] : [loadedBy]),
  ];
  const clusters =
    watchKeys === null
      ? 'clusters'
      : `COALESCE((SELECT jsonb_agg(DISTINCT v.watch_keys ->> k ORDER BY v.watch_keys ->> k)::text
           FROM unnest(?::text[]) k WHERE jsonb_exists(v.watch_keys, k)), clusters)`;
  return [
    `WITH armed AS (
       SELECT 1 FROM ${VIEWERS} v
       WHERE entity_ref = ? AND signalled_seq < load_seq AND expires_at > ${DB_NOW} ${claimable} LIMIT 1
     ), gate AS (
       INSERT INTO ${ENTITIES} AS e (entity_ref, claimed_at)
       SELECT ?, ${DB_NOW} WHERE EXISTS (SELECT 1 FROM armed)
       ON CONFLICT (entity_ref) DO UPDATE SET claimed_at = excluded.claimed_at
         WHERE e.claimed_at <= excluded.claimed_at - ?
       RETURNING claimed_at
     ), claimed AS (
       UPDATE ${VIEWERS} v SET ${CLAIMED}
       WHERE entity_ref = ? AND signalled_seq < load_seq AND expires_at > ${DB_NOW} ${claimable}
         AND EXISTS (SELECT 1 FROM gate)
       RETURNING user_ref, entity_ref, ${clusters} AS clusters, signal_id
     )
     SELECT user_ref, entity_ref, clusters, signal_id, NULL::bigint AS wait_ms, NULL::bigint AS armed_at
     FROM claimed
     UNION ALL
     SELECT NULL, NULL, NULL, NULL,
       COALESCE((SELECT claimed_at FROM ${ENTITIES} WHERE entity_ref = ?) + ? - ${DB_NOW}, 0),
       ${DB_NOW}
     WHERE EXISTS (SELECT 1 FROM armed) AND NOT EXISTS (SELECT 1 FROM gate)`,
    [
      ...[entityRef, ...claimableArgs],
      ...[entityRef, minIntervalMs],
      ...[signalId, entityRef, ...claimableArgs, ...(watchKeys === null ? [] : [watchKeys])],
      ...[entityRef, minIntervalMs],
    ],
  ];
}

/** No replica signals this viewer again. */
const forgetViewer = (userEntityRef, entityRef) => [
  `DELETE FROM ${VIEWERS} WHERE entity_ref = ? AND user_ref = ?`,
  [entityRef, userEntityRef],
];

/** Claims the armed viewers not expired whose latest load `replica` answered, for `signalId`. */
const claimOwn = (replica, signalId) => [
  `UPDATE ${VIEWERS} SET ${CLAIMED}
   WHERE replica = ? AND signalled_seq < load_seq AND expires_at > ${DB_NOW}
   ${RETURNED}`,
  [signalId, replica],
];

/** The replica leaves the replicas' list. */
const leave = (replica) => [`DELETE FROM ${REPLICAS} WHERE replica = ?`, [replica]];

module.exports = {
  migrate,
  beat,
  alive,
  claimOrphans,
  dropExpired,
  dropGone,
  dropGates,
  recordLoad,
  claimViewers,
  claimUnheard,
  claimDue,
  forgetViewer,
  claimOwn,
  leave,
};
