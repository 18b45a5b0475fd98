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
// A signal is a row in Backstage's events bus, which can skip one (a publish whose INSERT commits
// after a later one's, while a replica reads: bench/investigations/events-bus-gaps.js). So each claim stamps its
// rows with the signal's id, and a viewer that has not loaded again `resendMs` after its claim is
// claimed once more by whichever replica beats first, and sent the same signal again: a tab that
// heard it drops the copy, one that did not loads again.
//
// Why rows and not a leader: a claim is one statement, true on every replica at once; no
// election to lose, no replica whose death stops signals for everyone. Why these columns: a
// viewer's signal names the clusters its own answer named (the replica that claims it may name
// them otherwise, see ./publisher.js), and the sequence numbers make "one signal per load" a
// comparison the database does. The statements themselves are in ./store-sql-statements.js.
//
// Time is the database's (./store-sql-statements.js): alive, gone and expired are one clock for every
// replica; a replica whose own clock is more than a second off the database's says so, once.
// Every statement is bounded (STATEMENT_MS, the wait for a pooled connection included): a
// PostgreSQL that stops answering (a partition, a failover whose old primary vanished) fails
// a statement in bounded time, as a refused one does, and what waits on it moves on.

const sql = require('./store-sql-statements');
const { uniqueId } = require('kube-watch-native-protocol');
const { storeMethods } = require('./store');

/** Replicas beat this often; one silent for three beats is gone. */
const HEARTBEAT_MS = 2000;
/**
 * A viewer claimed this long ago that has not loaded since is sent its signal again, once:
 * longer than a delivered signal's round trip to a reload (change → answer p99 about 1.2 s on a
 * saturated 2-core machine, bench/README.md), short beside the frontend's `maxAgeMs` (60 s).
 */
const RESEND_MS = 3000;

/**
 * Every statement fails past this, whatever holds it (a stalled network, a pool whose connections
 * all wait on one): a server-side statement_timeout cannot bound a statement the server never
 * received.
 */
const STATEMENT_MS = 2000;
/** A replica's clock this far off the database's is reported (once). */
const SKEW_MS = 1000;

/** An id for the signal of a claim that is not an entity's change (a replica gone or stopping). */
const newSignalId = (why) => uniqueId(why);

/** The viewers of a claim, as the statements return them, with their signal's id. */
const rowsOf = (result) =>
  (result.rows ?? result).map((row) => ({
    userEntityRef: row.user_ref,
    entityRef: row.entity_ref,
    clusters: JSON.parse(row.clusters),
    signalId: row.signal_id ?? null,
  }));

/**
 * @param {object} options
 * @param {import('knex').Knex} options.knex the Kubernetes plugin's database (PostgreSQL)
 * @param {string} options.replica this replica's name, unique among the replicas (a random id per start)
 * @param {(rows: { userEntityRef: string, entityRef: string, clusters: string[], signalId: string }[]) => void} options.orphaned
 *   armed viewers whose replica is gone, claimed by this one: they must load again
 * @param {(rows: { userEntityRef: string, entityRef: string, clusters: string[], signalId: string }[]) => void} [options.unheard]
 *   viewers signalled `resendMs` ago that have not loaded since, claimed again by this one:
 *   send each its signal again, with the same id
 * @param {{ warn(message: string): void }} [options.logger]
 * @param {number} [options.heartbeatMs]
 * @param {number} [options.resendMs]
 * @param {() => number} [options.now]
 */
function createViewerRegistry(options) {
  const registry = new ViewerRegistry(options);
  // A plain object whose methods need no `this` (./store.js).
  return {
    /** Resolves once the tables exist and this replica has beaten once; rejects if it could not. */
    ready: registry.ready,
    /** Other replicas that beat within three beats, at the last beat. */
    get others() {
      return registry.others;
    },
    /** The names of the replicas that beat within three beats (this one's too), at the last beat. */
    get alive() {
      return registry.alive;
    },
    ...storeMethods(registry),
  };
}

class ViewerRegistry {
  #knex;
  #replica;
  #orphaned;
  #unheard;
  #logger;
  #heartbeatMs;
  #resendMs;
  #statementMs;
  #now;
  #closed = false;
  #skewWarned = false;
  #timer = null;
  #alive = [];
  #warned = false;
  #counts = { claims: 0, claimed: 0, gated: 0, orphaned: 0, resent: 0, rechecked: 0, failed: 0 };

  constructor({
    knex,
    replica,
    orphaned,
    unheard = null,
    logger,
    heartbeatMs = HEARTBEAT_MS,
    resendMs = RESEND_MS,
    statementMs = STATEMENT_MS,
    now = Date.now,
  }) {
    this.#knex = knex;
    this.#replica = replica;
    this.#orphaned = orphaned;
    this.#unheard = unheard;
    this.#logger = logger;
    this.#heartbeatMs = heartbeatMs;
    this.#resendMs = resendMs;
    this.#statementMs = statementMs;
    this.#now = now;
    this.ready = sql
      .migrate(knex)
      .then(() => this.#beat())
      .then(
        () => this.#schedule(),
        (error) => {
          this.#schedule();
          return this.#failed('start')(error);
        },
      );
    this.ready.catch(() => {});
  }

  get others() {
    return this.#alive.filter((name) => name !== this.#replica).length;
  }

  get alive() {
    return [...this.#alive];
  }

  /**
   * A load of `entityRef` by `userEntityRef` was answered here from these watch keys (an object
   * of key → the cluster the user's answer names it by; an array of clusters, for a load whose
   * keys do not matter: any change of its entity claims it): arms its viewer until `expiresAt`
   * on this replica's clock, which the database's clock takes as a duration from now; the
   * viewer's access is to be asked again at `recheckAt` (null: never), taken the same way.
   */
  loaded(userEntityRef, entityRef, watchKeys, expiresAt, recheckAt = null) {
    const answered = Array.isArray(watchKeys)
      ? { clusters: watchKeys, watchKeys: null }
      : { clusters: Object.values(watchKeys), watchKeys };
    const now = this.#now();
    const recheckInMs = recheckAt === null ? null : recheckAt - now;
    return this.#run(
      sql.recordLoad(this.#replica, userEntityRef, entityRef, answered, expiresAt - now, recheckInMs),
    ).then(() => undefined, this.#failed('record a load'));
  }

  /**
   * Claims every armed viewer of `entityRef` through the entity's gate: `rows`, the viewers
   * this replica is to signal now, and `waitMs`, when viewers wait behind a gate another claim
   * closed less than `minIntervalMs` ago: claim again then (else null). One statement: the
   * gate is an upsert whose row lock orders concurrent claims, and it closes only when there
   * are viewers to claim. A gated answer also carries `armedAt`, the database's time of the
   * statement: a claim again at the gate's end passes it as `loadedBy`, so that it takes only
   * the loads recorded by then (a load this replica answered since saw the change it claims
   * for; claiming it would signal that tab twice). `signalId` is the id the claimed viewers'
   * signal carries, kept in their rows for a resend.
   */
  async claim(
    entityRef,
    { watchKeys = null, minIntervalMs = 0, loadedBy = null, signalId = newSignalId('change') } = {},
  ) {
    this.#counts.claims++;
    const statement = sql.claimViewers({
      replica: this.#replica,
      entityRef,
      watchKeys,
      minIntervalMs,
      loadedBy,
      signalId,
    });
    const result = await this.#run(statement).catch(this.#failed('claim viewers'));
    const all = result.rows ?? result;
    const gated = all.find((row) => row.user_ref === null);
    const rows = rowsOf(all.filter((row) => row.user_ref !== null));
    this.#counts.claimed += rows.length;
    if (!gated) return { rows, waitMs: null };
    // A gate that looked open to this statement but was closed by a claim running beside it:
    // that claim took the viewers this one saw armed. Nothing waits.
    const left = Number(gated.wait_ms);
    if (!(left > 0)) return { rows, waitMs: null };
    this.#counts.gated++;
    return { rows, waitMs: left, armedAt: Number(gated.armed_at) };
  }

  /**
   * Claims the armed viewers, on any replica, whose access is to be asked again by now: each
   * is told once to load again (its load asks again).
   */
  async claimDue() {
    const rows = rowsOf(
      await this.#run(sql.claimDue(newSignalId('access recheck'))).catch(this.#failed('claim rechecks')),
    );
    this.#counts.rechecked += rows.length;
    return rows;
  }

  /** A viewer was refused what its answer shows: no replica signals it again. */
  forget(userEntityRef, entityRef) {
    return this.#run(sql.forgetViewer(userEntityRef, entityRef)).then(
      () => undefined,
      this.#failed('forget a viewer'),
    );
  }

  /**
   * Claims asked, viewers claimed, claims that found the gate closed with viewers waiting,
   * viewers of gone replicas claimed, viewers whose signal was sent again, statements failed.
   */
  counts() {
    return { ...this.#counts };
  }

  /**
   * This replica stops: claims the armed viewers whose latest load it answered (no replica
   * may follow their answers) and leaves the replicas' list. Returns the claimed viewers.
   */
  async close() {
    this.#closed = true;
    clearTimeout(this.#timer);
    const rows = rowsOf(await this.#run(sql.claimOwn(this.#replica, newSignalId('replica stopping'))));
    await this.#run(sql.leave(this.#replica));
    return rows;
  }

  /** Runs one statement, failing it past `statementMs` whatever holds it. */
  #run([text, bindings]) {
    let timer;
    const bound = new Promise((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer from the database within ${this.#statementMs} ms`)),
        this.#statementMs,
      );
      timer.unref?.();
    });
    return Promise.race([this.#knex.raw(text, bindings), bound]).finally(() => clearTimeout(timer));
  }

  /** Warns once when this replica's clock is more than SKEW_MS off the database's. */
  #checkClock(dbNow, sentAt) {
    if (this.#skewWarned) return;
    const receivedAt = this.#now();
    // The database read its clock somewhere within the round trip.
    const skew = (sentAt + receivedAt) / 2 - dbNow;
    if (Math.abs(skew) <= SKEW_MS + (receivedAt - sentAt) / 2) return;
    this.#skewWarned = true;
    this.#counts.skewMs = Math.round(skew);
    this.#logger?.warn(
      `kube-watch-native: this replica's clock is ${Math.round(Math.abs(skew))} ms ${skew > 0 ? 'ahead of' : 'behind'} the database's (reported once); the live tab's registry keeps time by the database's clock`,
    );
  }

  /** A failed statement is counted and logged once: the caller answers as not live. */
  #failed(what) {
    return (error) => {
      this.#counts.failed++;
      if (!this.#warned) {
        this.#warned = true;
        this.#logger?.warn(
          `kube-watch-native: the live tab's viewer registry failed to ${what} (reported once): ${error}`,
        );
      }
      throw error;
    };
  }

  /**
   * Beats, counts the other replicas alive, claims the armed viewers of the ones gone, and
   * claims again the viewers whose signal may not have reached them.
   */
  async #beat() {
    const aliveMs = 3 * this.#heartbeatMs;
    const sentAt = this.#now();
    const [{ now }] = (await this.#run(sql.beat(this.#replica))).rows;
    this.#checkClock(Number(now), sentAt);
    this.#alive = (await this.#run(sql.alive(aliveMs))).rows.map((row) => row.replica);
    const rows = rowsOf(await this.#run(sql.claimOrphans(aliveMs, newSignalId('replica gone'))));
    // Handed on at once: claimed, they are this replica's to tell whatever fails next.
    if (rows.length > 0) {
      this.#counts.orphaned += rows.length;
      this.#orphaned(rows);
    }
    if (this.#unheard) {
      const unheard = rowsOf(await this.#run(sql.claimUnheard(this.#resendMs)));
      if (unheard.length > 0) {
        this.#counts.resent += unheard.length;
        this.#unheard(unheard);
      }
    }
    await this.#run(sql.dropExpired());
    await this.#run(sql.dropGone(30 * this.#heartbeatMs));
    await this.#run(sql.dropGates());
  }

  #schedule() {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      // A failed beat is counted and logged once; the next one tries again.
      this.#beat()
        .catch(this.#failed('beat'))
        .catch(() => {})
        .finally(() => this.#schedule());
    }, this.#heartbeatMs);
    this.#timer.unref?.();
  }
}

module.exports = { createViewerRegistry, HEARTBEAT_MS, RESEND_MS, STATEMENT_MS };
