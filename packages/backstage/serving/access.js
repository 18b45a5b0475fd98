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
// identity, group, resource, namespace), at most `maxDecisions` of them, holding no token, and
// at most DECISION_SHARE of them per viewer: one viewer asking for many made-up types evicts
// its own oldest decisions, never another viewer's.
// `ttlMs` 0 asks on every load. The trade-off: a binding revoked shows within `ttlMs`, where the
// default fetcher shows it at once. The reviews one load needs on one cluster go to the API
// server together, in one native call.

const { native, toSpec } = require('kube-watch-native/internals');
const { keyedHash, isViewerChecked } = require('./credential');

/** A review that takes longer has failed (the load goes to the default fetcher). */
const REVIEW_TIMEOUT_MS = 10_000;
/** The part of `maxDecisions` one viewer's credential may hold (at least 16). */
const DECISION_SHARE = 0.1;

/** The secret part of a credential, as one string (only ever hashed); null for none. */
function secretOf(credential) {
  if (credential?.type === 'bearer token') return `bearer\n${credential.token}`;
  if (credential?.type === 'x509 client certificate') return `x509\n${credential.cert}\n${credential.key}`;
  return null;
}

/**
 * Asks the API server, with `credential`, whether it may list each of `accesses`
 * (`{ group, resource, namespace }`; another `verb`, of a `subresource` of the object `name`): one SelfSubjectAccessReview each, sent together by one
 * native call on the cluster's own connection (its CA, TLS, proxy and server name). Resolves to
 * 'allowed', 'refused' or 'failed' for each, in order.
 */
function reviewListAccess(clusterDetails, credential, accesses) {
  const spec = toSpec({ clusterDetails, credential, group: '', apiVersion: 'v1', plural: 'check' }, {});
  return native.reviewListAccess(spec, JSON.stringify(accesses), REVIEW_TIMEOUT_MS);
}

/**
 * What is asked of `resource` (`{ group, plural }`, and for one object's subresource `verb`,
 * `subresource` and `name`) in `namespace`: as a decision's key, and as the review's access.
 */
const what = ({ group = '', plural, verb = 'list', subresource = '', name = '' }, namespace) =>
  JSON.stringify([group, plural, namespace ?? '', verb, subresource, name]);
const accessOf = ({ group = '', plural, verb, subresource, name }, namespace) => ({
  group,
  resource: plural,
  namespace,
  ...(verb && { verb }),
  ...(subresource && { subresource }),
  ...(name && { name }),
});

class ViewerAccess {
  #ttlMs;
  #maxDecisions;
  #review;
  #now;
  /**
   * `${viewer}\n${what}` → { decision, at, renewing? } or a Promise of the decision while
   * asked; least recently remembered first.
   */
  #decisions = new Map();
  /** viewer → its keys in #decisions, least recently remembered first */
  #byViewer = new Map();
  #perViewer;
  #counts = { allowed: 0, refused: 0, failed: 0, hits: 0 };

  /**
   * @param {object} options
   * @param {number} options.ttlMs how long a decision is remembered (0: never)
   * @param {number} options.maxDecisions decisions remembered at most (the oldest go first)
   * @param {typeof reviewListAccess} [options.review] how the API server is asked (tests stub it)
   */
  constructor({ ttlMs, maxDecisions, review = reviewListAccess, now = Date.now }) {
    this.#ttlMs = ttlMs;
    this.#maxDecisions = maxDecisions;
    this.#perViewer = Math.max(16, Math.floor(maxDecisions * DECISION_SHARE));
    this.#review = review;
    this.#now = now;
  }

  /**
   * Whether the viewer's credential may list each of `resources` (or `verb` its `subresource`
   * of the object `name`, as a log follow asks) in `namespace` (cluster-wide
   * when undefined) on the cluster whose cache `identity` owns: 'allowed', 'refused' or
   * 'failed' for each, in order. The reviews a load needs go to the API server in one call.
   */
  async decideAll(clusterDetails, credential, identity, resources, namespace) {
    return (await this.decide(clusterDetails, credential, identity, resources, namespace)).decisions;
  }

  /**
   * decideAll()'s `decisions`, and `until`: when the oldest 'allowed' decision among them
   * expires (Infinity when none was allowed). An answer from the cache shown to the viewer is
   * proven only until then: a binding revoked since shows at the viewer's next load after it.
   */
  async decide(clusterDetails, credential, identity, resources, namespace) {
    const secret = secretOf(credential);
    if (secret === null) return { decisions: resources.map(() => 'failed'), until: Infinity };
    const viewer = keyedHash(JSON.stringify([secret, identity.key]));
    const now = this.#now();
    const asks = [];
    const decisions = resources.map((resource) => {
      const key = `${viewer}\n${what(resource, namespace)}`;
      const access = accessOf(resource, namespace);
      const known = this.#decisions.get(key);
      if (known instanceof Promise) return known;
      const age = known ? now - known.at : Infinity;
      if (age < this.#ttlMs) {
        this.#counts.hits++;
        // Used past half its TTL: renewed in the background, so a viewer who keeps loading (the
        // stock tab polls every 10 s) never waits for a review, and a revocation still shows
        // within the TTL (the renewal's answer replaces this one).
        if (age >= this.#ttlMs / 2 && !known.renewing) {
          known.renewing = true;
          asks.push({ key, access, remember: false });
        }
        return known.decision;
      }
      const ask = { key, access, remember: true };
      asks.push(ask);
      return ask;
    });
    if (asks.length > 0) this.#ask(clusterDetails, credential, asks);
    const answered = await Promise.all(decisions.map((d) => (d?.access ? d.decision : d)));
    // Read once answered: a decision asked now was remembered as of its answer.
    let until = Infinity;
    resources.forEach((resource, i) => {
      if (answered[i] !== 'allowed') return;
      const known = this.#decisions.get(`${viewer}\n${what(resource, namespace)}`);
      until = Math.min(until, known && !(known instanceof Promise) ? known.at + this.#ttlMs : this.#now());
    });
    return { decisions: answered, until };
  }

  /**
   * Sends `asks` in one review call and sets each ask's `decision`, a Promise, counted and
   * remembered once answered (a failed one is not: the next load asks). A decision not known
   * before is remembered as that Promise while asked, so loads meanwhile wait for it.
   */
  #ask(clusterDetails, credential, asks) {
    const accesses = asks.map((ask) => ask.access);
    const answers = Promise.resolve()
      .then(() => this.#review(clusterDetails, credential, accesses))
      .catch(() => []);
    asks.forEach((ask, i) => {
      ask.decision = answers.then((all) => this.#settle(ask.key, all[i] ?? 'failed'));
      if (ask.remember) this.#remember(ask.key, ask.decision);
    });
  }

  #settle(key, decision) {
    this.#counts[decision]++;
    if (this.#ttlMs > 0 && decision !== 'failed') this.#remember(key, { decision, at: this.#now() });
    else this.#forget(key);
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
      if (!(known instanceof Promise) && now - known.at >= this.#ttlMs) this.#forget(key);
    }
  }

  clear() {
    this.#decisions.clear();
    this.#byViewer.clear();
  }

  /** Remembers `value` under `key`, the newest; the viewer's own oldest go past its share. */
  #remember(key, value) {
    this.#forget(key);
    const viewer = key.slice(0, key.indexOf('\n'));
    const own = this.#byViewer.get(viewer);
    if (own && own.size >= this.#perViewer) this.#forget(own.values().next().value);
    if (this.#decisions.size >= this.#maxDecisions) this.#forget(this.#decisions.keys().next().value);
    this.#decisions.set(key, value);
    if (!this.#byViewer.has(viewer)) this.#byViewer.set(viewer, new Set());
    this.#byViewer.get(viewer).add(key);
  }

  #forget(key) {
    if (!this.#decisions.delete(key)) return;
    const viewer = key.slice(0, key.indexOf('\n'));
    const own = this.#byViewer.get(viewer);
    own?.delete(key);
    if (own?.size === 0) this.#byViewer.delete(viewer);
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

module.exports = { ViewerAccess, cachedAs, reviewListAccess };
