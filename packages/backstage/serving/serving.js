'use strict';
// Whether a cache answers, and one request's answers. A resource is answered from its informer
// only while that answer is the one the default fetcher would give now: synced, its watch open
// long enough to have replayed what it missed, alive within the liveness bound, its credential
// confirmed in time (./identity.js, the entry's servable()). Anything else is the default
// fetcher's fresh answer, so a cache behind the server or no longer ours to show is never what a
// viewer sees. The follower of the answers (the live tab's, ../following/informers.js) asks the
// same question, to tell a viewer when the answer changes.

const { resourcePathFor, isError, cachedAnswer } = require('./answers');
const { AVOID_MS } = require('./pool');

/** Statuses that close an informer that has not synced: the credential or the type will not do. */
const REFUSALS = new Set([401, 403, 404]);
/**
 * How long after a watch (re)opens its cache is trusted: a resumed watch first replays what
 * changed while it was closed, which the API server writes right after the headers.
 */
const WATCH_SETTLE_MS = 250;

/** One request's answers, each from its informer's cache when it may be, else the default's. */
class Serving {
  #default;
  #pool;
  #follower;

  /**
   * @param {object} options
   * @param {import('./default-answers').DefaultAnswers} options.defaultAnswers
   * @param {import('./pool').Pool} options.pool
   * @param {object | null} [options.follower] what follows the answers (./fetcher.js), if anything
   */
  constructor({ defaultAnswers, pool, follower = null }) {
    this.#default = defaultAnswers;
    this.#pool = pool;
    this.#follower = follower;
  }

  /** Every resource's answer, and the viewer's live following of them. */
  answerAll({ params, clusterDetails, types, resources, selector, namespace, viewer, provenUntil }, entries) {
    // Answered now: the entries are used as of this moment, whatever the wait took.
    for (const entry of entries) entry?.touch();
    // The follower looks before the answers are read (../following/informers.js prepare()).
    const follower = viewer && this.#follower;
    const prepared = follower && follower.prepare(entries, { selector, namespace });
    const results = resources.map((resource, i) => {
      const answer = this.#answer(params, resource, i >= types.length, entries[i], selector, namespace);
      this.#default.count(answer);
      return answer;
    });
    if (follower) follower.viewed(viewer, entries, prepared, { cluster: clusterDetails.name, provenUntil });
    return Promise.all(results).then((all) => ({
      errors: all.filter(isError),
      responses: all.filter((r) => !isError(r)),
    }));
  }

  /**
   * The entry's state when its cache may answer now, else null: not when it ended (dropped),
   * failed (dropped and avoided for a while when refused before it synced), is not synced yet,
   * is between watches or only just watching again, was silent too long, or its credential is
   * not confirmed.
   */
  usable(entry) {
    const state = entry.state();
    if (state.finished) {
      this.#pool.drop(entry);
      return null;
    }
    if (state.error) {
      // Refused (401, 403) or not served (404) before it synced: closed now, and not opened
      // again for a while, so made-up types and refused credentials pin nothing.
      if (REFUSALS.has(state.error.statusCode) && !state.synced) {
        this.#pool.avoid(entry.key, AVOID_MS);
        this.#pool.drop(entry);
      }
      // Any other failure not yet over (the informer retries): the default's fresh answer,
      // whatever it is, until a successful request, an event or a bookmark shows the cache
      // is live again.
      return null;
    }
    // Not synced yet, between watches (a backoff, a reconnect, a relist), silent too long, or
    // its credential not confirmed: the cache may be behind the server or not ours to show.
    if (
      !state.synced ||
      state.watchingForMs === null ||
      state.watchingForMs < WATCH_SETTLE_MS ||
      !entry.servable().servable
    ) {
      return null;
    }
    return state;
  }

  /** One resource's answer: from the cache when it equals the default's, else the default's. */
  #answer(params, resource, custom, entry, selector, namespace) {
    const live = () => this.#default.one(params, resource, custom);
    const state = entry && this.usable(entry);
    if (!state) return live();
    // A cluster-wide informer asked for a namespace: the default's namespaced LIST of a
    // cluster-scoped type is a 404, learnt from its answer once.
    if (namespace && !entry.description.namespace && entry.scope !== 'namespaced') {
      if (entry.scope === 'cluster') {
        return {
          errorType: 'NOT_FOUND',
          statusCode: 404,
          resourcePath: resourcePathFor(params.clusterDetails, resource, namespace),
        };
      }
      return live().then((result) => {
        if (!isError(result)) entry.scope = 'namespaced';
        else if (result.statusCode === 404) entry.scope = 'cluster';
        return result;
      });
    }
    return cachedAnswer(entry, resource, namespace, selector, state) ?? live();
  }
}

module.exports = { Serving };
