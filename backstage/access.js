'use strict';
// Viewers' own access to a cache they do not own. A cluster whose auth provider takes the
// viewer's token (oidc, google, aks, a custom per-viewer strategy) and whose config also carries
// a `serviceAccountToken` (which Backstage ignores for those providers) is cached with that token;
// each viewer's access is then asked of the API server with the viewer's own token, for exactly
// the LIST the default fetcher would send: a SelfSubjectAccessReview of verb `list` on the group
// and resource, in the namespace or cluster-wide. Allowed: the cache answers. Refused, or a review
// that could not be had: the default fetcher answers with the viewer's token, so the viewer gets
// exactly the default's answer (its 403, its 401 for a bad or expired token, its network error).
//
// Decisions are remembered for `ttlMs` per (keyed hash of the viewer's credential, the cache's
// identity, group, resource, namespace), at most `maxDecisions` of them, holding no token.
// `ttlMs` 0 asks on every load. The trade-off: a binding revoked shows within `ttlMs`, where the
// default fetcher shows it at once.

const { keyedHash, isViewerChecked } = require('./credential');
const { clusterRequest } = require('./review');

const REVIEW_PATH = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews';

/** The secret part of a credential, as one string (only ever hashed). */
function secretOf(credential) {
  if (credential?.type === 'bearer token') return `bearer\n${credential.token}`;
  if (credential?.type === 'x509 client certificate') return `x509\n${credential.cert}\n${credential.key}`;
  return null;
}

class ViewerAccess {
  #ttlMs;
  #maxDecisions;
  #request;
  #now;
  /** key → { allowed: boolean, at: number } or a Promise of it while asked. */
  #decisions = new Map();
  #counts = { allowed: 0, refused: 0, failed: 0, hits: 0 };

  /**
   * @param {object} options
   * @param {number} options.ttlMs how long a decision is remembered (0: never)
   * @param {number} options.maxDecisions decisions remembered at most (the oldest go first)
   * @param {typeof clusterRequest} [options.request] how the API server is asked (tests stub it)
   */
  constructor({ ttlMs, maxDecisions, request = clusterRequest, now = Date.now }) {
    this.#ttlMs = ttlMs;
    this.#maxDecisions = maxDecisions;
    this.#request = request;
    this.#now = now;
  }

  /**
   * Whether the viewer's credential may list `resource` in `namespace` (cluster-wide when
   * undefined) on the cluster whose cache `identity` owns: 'allowed', 'refused' or 'failed'.
   */
  async decide(clusterDetails, credential, identity, { group = '', plural }, namespace) {
    const secret = secretOf(credential);
    if (secret === null) return 'failed';
    const key = keyedHash(JSON.stringify([secret, identity.key, group, plural, namespace ?? '']));
    const known = this.#decisions.get(key);
    if (known instanceof Promise) return known;
    const age = known ? this.#now() - known.at : Infinity;
    if (age < this.#ttlMs) {
      this.#counts.hits++;
      // Used past half its TTL: renewed in the background, so a viewer who keeps loading (the
      // stock tab polls every 10 s) never waits for a review, and a revocation still shows
      // within the TTL (the renewal's answer replaces this one).
      if (age >= this.#ttlMs / 2 && !known.renewing) {
        known.renewing = true;
        void this.#settle(key, this.#ask(clusterDetails, credential, { group, plural, namespace }));
      }
      return known.decision;
    }
    const asked = this.#settle(key, this.#ask(clusterDetails, credential, { group, plural, namespace }));
    this.#remember(key, asked);
    return asked;
  }

  /** Counts a review's decision and remembers it (a failed one is not: the next load asks). */
  async #settle(key, asking) {
    const decision = await asking;
    this.#counts[decision]++;
    if (this.#ttlMs > 0 && decision !== 'failed') this.#remember(key, { decision, at: this.#now() });
    else this.#decisions.delete(key);
    return decision;
  }

  /** Decisions asked, by outcome, and answered from memory. */
  counts() {
    return { ...this.#counts, remembered: this.#decisions.size };
  }

  /** Forgets decisions past their TTL. */
  prune() {
    const now = this.#now();
    for (const [key, known] of this.#decisions) {
      if (!(known instanceof Promise) && now - known.at >= this.#ttlMs) this.#decisions.delete(key);
    }
  }

  clear() {
    this.#decisions.clear();
  }

  #remember(key, value) {
    this.#decisions.delete(key);
    if (this.#decisions.size >= this.#maxDecisions)
      this.#decisions.delete(this.#decisions.keys().next().value);
    this.#decisions.set(key, value);
  }

  async #ask(clusterDetails, credential, { group, plural, namespace }) {
    const resourceAttributes = { verb: 'list', group, resource: plural };
    if (namespace) resourceAttributes.namespace = namespace;
    const body = JSON.stringify({
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes },
    });
    let answer;
    try {
      answer = await this.#request(clusterDetails, credential, REVIEW_PATH, { method: 'POST', body });
    } catch {
      return 'failed';
    }
    // A token the server does not accept: the default's LIST gets the same 401.
    if (answer.status === 401) return 'refused';
    if (answer.status !== 201 && answer.status !== 200) return 'failed';
    try {
      return JSON.parse(answer.body)?.status?.allowed === true ? 'allowed' : 'refused';
    } catch {
      return 'failed';
    }
  }
}

/**
 * The cluster and credential a request is cached with: a cluster of viewers' own credentials as
 * a serviceAccount cluster with its service account token (the viewers' credentials only ask
 * for access), any other as it is.
 */
function cachedAs(params) {
  const viewerChecked = isViewerChecked(params.clusterDetails);
  if (!viewerChecked) {
    return { viewerChecked, clusterDetails: params.clusterDetails, cacheCredential: params.credential };
  }
  const clusterDetails = {
    ...params.clusterDetails,
    authMetadata: { ...params.clusterDetails.authMetadata, 'kubernetes.io/auth-provider': 'serviceAccount' },
  };
  const cacheCredential = { type: 'bearer token', token: clusterDetails.authMetadata.serviceAccountToken };
  return { viewerChecked, clusterDetails, cacheCredential };
}

module.exports = { ViewerAccess, cachedAs };
