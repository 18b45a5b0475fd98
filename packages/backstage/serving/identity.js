'use strict';
// Whose cache. The cache is shared by every viewer and entity, so an informer belongs to exactly
// the identity its requests are sent as, and that identity is never taken on trust from a name:
//
// - the connection: URL, CA, TLS verification, proxy, server name and the whole `authMetadata`;
// - the credential: a keyed hash of the token or certificate (HMAC with a key of the process's
//   own; never the secret in clear), or, for a provider the operator names as rotating
//   (`rotatingAuthProviders`), the user the API server reports for the credential
//   (SelfSubjectReview: username, uid, groups). Two tokens share informers only if the server
//   says they are the same user, so a custom strategy registered under a built-in name that
//   hands out per-user tokens gets one identity per user, whatever its name.
//
// An identity in use has its credential checked with the API server (a SelfSubjectReview; a GET
// of `/api` on a server without one) when it is first used and then every `recheckMs` (30 s):
// the API server authenticates a watch only when it starts, so a revoked token would otherwise
// keep an informer serving until its watch ends. Its caches are served only while the last check
// that passed is at most twice that old; a refused credential (401) is answered by the default
// fetcher, which then shows the API server's own 401.
//
// This room holds the identities in use and the checks that keep their caches served; what of a
// credential may key a cache, and its keyed hash, are ./credential.js; asking the API server who
// a credential is, ./review.js.

const { keyedHash, credentialSecret, connectionOf } = require('./credential');
const { clusterRequest, Reviews } = require('./review');
const clock = require('./clock');

/**
 * A credential in use is checked again this often, and its caches are served only while the
 * last check that passed is at most twice as old: a revoked token shows within a minute.
 */
const RECHECK_MS = 30_000;

/** One identity's informers, and the credential the newest request brought, which they use. */
class Identity {
  constructor(key, credential, clusterDetails) {
    this.key = key;
    this.credential = credential;
    this.clusterDetails = clusterDetails;
    this.lastUsed = clock.now();
    this.entries = new Set();
    /** When a check of the credential last passed, and when one last ended (0: never). */
    this.verifiedAt = 0;
    this.checkedAt = 0;
    /** The status of the last check that refused it (401), or null. */
    this.refused = null;
    /** The check under way, if any. */
    this.checking = null;
    // One function per identity, so the watcher shares its informers between requests of it
    // and no other identity's.
    this.getCredential = () => this.credential;
  }
}

/** The identities in use, each checked with the API server as long as it is used. */
class Identities {
  #rotating;
  #recheckMs;
  #verifiedForMs;
  #now;
  #onChange;
  /** Identity by key. */
  #byKey = new Map();
  /** Who the API server says credentials are (./review.js). */
  #reviews;
  /** Checks the identities in use every `recheckMs`, loads or not (null while there are none). */
  #timer = null;

  /**
   * @param {object} options
   * @param {Iterable<string>} options.rotatingAuthProviders providers keyed by the server's user
   * @param {number} [options.recheckMs] a credential in use is checked again this often
   * @param {(identity: Identity) => void} [options.onChange] its credential was refused or verified again
   * @param {typeof clusterRequest} [options.request] how the API server is asked (tests stub it)
   * @param {() => number} [options.now]
   */
  constructor({
    rotatingAuthProviders,
    recheckMs = RECHECK_MS,
    onChange = () => {},
    request = clusterRequest,
    now = clock.now,
  }) {
    this.#rotating = new Set(rotatingAuthProviders);
    this.#recheckMs = recheckMs;
    this.#verifiedForMs = 2 * recheckMs;
    this.#onChange = onChange;
    this.#reviews = new Reviews(request);
    this.#now = now;
  }

  /** The identity the request's cluster details and credential are sent as. */
  async resolve(clusterDetails, credential) {
    const connection = connectionOf(clusterDetails);
    const secretKey = keyedHash(JSON.stringify([connection, credentialSecret(credential)]));
    let who = secretKey;
    const provider = clusterDetails.authMetadata?.['kubernetes.io/auth-provider'];
    if (this.#rotating.has(provider)) {
      const user = await this.#reviews.userOf(secretKey, clusterDetails, credential);
      // No answer (an old server, a refused token): the credential itself is the identity.
      if (user !== null) who = keyedHash(JSON.stringify([connection, 'user', user]));
    }
    let identity = this.#byKey.get(who);
    if (!identity) {
      identity = new Identity(who, credential, clusterDetails);
      this.#byKey.set(who, identity);
    }
    // The same identity's newest credential (a rotated token of the same user).
    identity.credential = credential;
    identity.clusterDetails = clusterDetails;
    identity.lastUsed = this.#now();
    this.#keepChecking();
    if (identity.verifiedAt === 0 && identity.refused === null) await this.check(identity);
    return identity;
  }

  /**
   * Until when the identity's caches may be served: twice `recheckMs` after its credential last
   * passed a check, or 0 when it was refused since. Starts the next check when one is due.
   */
  verifiedUntil(identity) {
    if (this.#now() - identity.verifiedAt >= this.#recheckMs || identity.refused !== null) {
      void this.check(identity);
    }
    return identity.refused === null ? identity.verifiedAt + this.#verifiedForMs : 0;
  }

  /** Checks the identity's credential now (one check at a time per identity). */
  check(identity) {
    if (identity.checking) return identity.checking;
    if (identity.refused !== null && this.#now() - identity.checkedAt < this.#recheckMs) {
      return Promise.resolve();
    }
    identity.checking = this.#reviews
      .review(identity.clusterDetails, identity.credential)
      .then(
        ({ status }) => {
          const before = identity.refused;
          identity.checkedAt = this.#now();
          if (status === 401) identity.refused = 401;
          else if (status < 500) {
            identity.refused = null;
            identity.verifiedAt = identity.checkedAt;
          }
          if (before !== identity.refused) this.#onChange(identity);
        },
        () => {
          identity.checkedAt = this.#now();
        },
      )
      .finally(() => {
        identity.checking = null;
      });
    return identity.checking;
  }

  get(key) {
    return this.#byKey.get(key);
  }

  get size() {
    return this.#byKey.size;
  }

  /** Forgets identities without informers unused for `idleMs`. */
  prune(idleMs) {
    const now = this.#now();
    for (const [key, identity] of this.#byKey) {
      if (identity.entries.size === 0 && now - identity.lastUsed >= idleMs) this.#byKey.delete(key);
    }
  }

  clear() {
    clearInterval(this.#timer);
    this.#timer = null;
    this.#byKey.clear();
    this.#reviews.clear();
  }

  /**
   * Checks every identity with informers each `recheckMs`, whether or not loads come: an idle
   * tab's cache stays served (and unsignalled) while its credential holds, and a revoked one is
   * found within the bound even when nobody loads.
   */
  #keepChecking() {
    if (this.#timer !== null) return;
    this.#timer = setInterval(() => {
      for (const identity of this.#byKey.values()) {
        if (identity.entries.size > 0) void this.check(identity);
      }
    }, this.#recheckMs);
    this.#timer.unref?.();
  }
}

module.exports = { Identities };
