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

const crypto = require('node:crypto');
const native = require('../lib/native');
const { toSpec } = require('../lib/spec');

/**
 * A credential in use is checked again this often, and its caches are served only while the
 * last check that passed is at most twice as old: a revoked token shows within a minute.
 */
const RECHECK_MS = 30_000;
/** A check that takes longer has failed (the native request finishes on its own). */
const CHECK_TIMEOUT_MS = 10_000;
/** Users learnt per credential, remembered at most (the oldest go first). */
const MAX_REVIEWS = 4096;

const REVIEW_PATH = '/apis/authentication.k8s.io/v1/selfsubjectreviews';
const REVIEW_BODY = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });

/**
 * Auth providers whose credential is the backend's own, the same for every viewer; any other
 * (google, oidc and aks use the viewer's token from the request's `auth`; a custom strategy may
 * too) is never answered from a cache shared between users.
 */
const SERVER_SIDE_PROVIDERS = new Set([
  'serviceAccount',
  'aws',
  'azure',
  'googleServiceAccount',
  'localKubectlProxy',
]);

/**
 * A cluster whose provider takes the viewer's credential, configured with a service account
 * token as well (which Backstage itself ignores for such providers): the opt-in to caching it
 * with that token while each viewer's access is asked with its own (./access.js).
 */
function isViewerChecked(clusterDetails) {
  const authMetadata = clusterDetails?.authMetadata ?? {};
  const token = authMetadata.serviceAccountToken;
  return (
    !SERVER_SIDE_PROVIDERS.has(authMetadata['kubernetes.io/auth-provider']) &&
    typeof token === 'string' &&
    token.length > 0
  );
}

/** Whether the request's credential is the backend's own, and so may key a shared cache. */
function sharedCredential(clusterDetails, credential) {
  const provider = clusterDetails?.authMetadata?.['kubernetes.io/auth-provider'];
  if (!SERVER_SIDE_PROVIDERS.has(provider) || !credential) return false;
  return credential.type !== 'anonymous' || provider === 'localKubectlProxy';
}

/** The key of the HMAC that turns credentials into identity keys: this process's own, never stored. */
const IDENTITY_KEY = crypto.randomBytes(32);

/** A keyed hash: equal for equal texts, and telling nothing of the text without the process's key. */
function keyedHash(text) {
  return crypto.createHmac('sha256', IDENTITY_KEY).update(text).digest('base64url');
}

/** The secret part of a credential, as one string (only ever hashed). */
function credentialSecret(credential) {
  switch (credential.type) {
    case 'bearer token':
      return `bearer\n${credential.token}`;
    case 'x509 client certificate':
      return `x509\n${credential.cert}\n${credential.key}`;
    default:
      return String(credential.type);
  }
}

/** Everything of the cluster's details that decides where and how a request is sent. */
function connectionOf(clusterDetails) {
  const authMetadata = clusterDetails.authMetadata ?? {};
  return [
    clusterDetails.url,
    clusterDetails.caData ?? '',
    clusterDetails.caFile ?? '',
    Boolean(clusterDetails.skipTLSVerify),
    clusterDetails.proxyUrl ?? '',
    clusterDetails.tlsServerName ?? '',
    Object.keys(authMetadata)
      .sort()
      .map((k) => [k, authMetadata[k]]),
  ];
}

/**
 * One request with the cluster's own connection and credential: `{ status, body }`. The native
 * pool's, so the CA, TLS, proxy and server name are the informers' own.
 */
async function clusterRequest(clusterDetails, credential, path, { method = 'GET', body } = {}) {
  const spec = toSpec({ clusterDetails, credential, group: '', apiVersion: 'v1', plural: 'check' }, {});
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${method} ${path}: no answer in ${CHECK_TIMEOUT_MS} ms`)),
      CHECK_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([
      native.fetchText(spec, path, 'application/json', 64 * 1024, { method, body }),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** One identity's informers, and the credential the newest request brought, which they use. */
class Identity {
  constructor(key, credential, clusterDetails) {
    this.key = key;
    this.credential = credential;
    this.clusterDetails = clusterDetails;
    this.lastUsed = Date.now();
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
  #request;
  #now;
  #onChange;
  /** Identity by key. */
  #byKey = new Map();
  /** keyed hash of connection and credential → the user text the API server reported. */
  #reviews = new Map();
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
    now = Date.now,
  }) {
    this.#rotating = new Set(rotatingAuthProviders);
    this.#recheckMs = recheckMs;
    this.#verifiedForMs = 2 * recheckMs;
    this.#onChange = onChange;
    this.#request = request;
    this.#now = now;
  }

  /** The identity the request's cluster details and credential are sent as. */
  async resolve(clusterDetails, credential) {
    const connection = connectionOf(clusterDetails);
    const secretKey = keyedHash(JSON.stringify([connection, credentialSecret(credential)]));
    let who = secretKey;
    const provider = clusterDetails.authMetadata?.['kubernetes.io/auth-provider'];
    if (this.#rotating.has(provider)) {
      const user = await this.#userOf(secretKey, clusterDetails, credential);
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
    identity.checking = this.#review(identity.clusterDetails, identity.credential)
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

  /**
   * Asks the API server who the credential is: a SelfSubjectReview (201 with the user), or, on
   * a server without it (404, or 405 where the path is another resource's), a GET of `/api`,
   * which any authenticated user may read: 401 there too means the credential is refused.
   * `{ status, user }`, user null when none was reported.
   */
  async #review(clusterDetails, credential) {
    const review = await this.#request(clusterDetails, credential, REVIEW_PATH, {
      method: 'POST',
      body: REVIEW_BODY,
    });
    if (review.status === 201 || review.status === 200) {
      const info = JSON.parse(review.body)?.status?.userInfo;
      const user = info?.username
        ? JSON.stringify([info.username, info.uid ?? '', [...(info.groups ?? [])].sort()])
        : null;
      return { status: review.status, user };
    }
    if (review.status !== 404 && review.status !== 405) return { status: review.status, user: null };
    const { status } = await this.#request(clusterDetails, credential, '/api');
    return { status, user: null };
  }

  async #userOf(secretKey, clusterDetails, credential) {
    if (this.#reviews.has(secretKey)) return this.#reviews.get(secretKey);
    let user = null;
    try {
      ({ user } = await this.#review(clusterDetails, credential));
    } catch {
      return null; // not remembered: the next request asks again
    }
    if (this.#reviews.size >= MAX_REVIEWS) this.#reviews.delete(this.#reviews.keys().next().value);
    this.#reviews.set(secretKey, user);
    return user;
  }
}

module.exports = {
  SERVER_SIDE_PROVIDERS,
  isViewerChecked,
  sharedCredential,
  Identities,
  keyedHash,
  clusterRequest,
};
