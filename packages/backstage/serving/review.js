'use strict';
// Who the API server says a credential is. A SelfSubjectReview answers with the user (name, uid,
// groups), which keys the caches of rotating credentials (two tokens of one user share them);
// on a server without it a GET of `/api`, which any authenticated user may read, still tells a
// credential that is refused from one that is not. Each request goes through the native pool
// with the cluster's own connection, so what is checked is what the informers send.

const { native, toSpec } = require('kube-watch-native/internals');

/** A check that takes longer has failed (the native request finishes on its own). */
const CHECK_TIMEOUT_MS = 10_000;
/** Users learnt per credential, remembered at most (the oldest go first). */
const MAX_REVIEWS = 4096;

const REVIEW_PATH = '/apis/authentication.k8s.io/v1/selfsubjectreviews';
const REVIEW_BODY = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });

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

/** Who the API server says credentials are: asked, and the users remembered per credential. */
class Reviews {
  #request;
  /** keyed hash of connection and credential → the user text the API server reported. */
  #users = new Map();

  /** @param {typeof clusterRequest} [request] how the API server is asked (tests stub it) */
  constructor(request = clusterRequest) {
    this.#request = request;
  }

  /**
   * Asks the API server who the credential is: a SelfSubjectReview (201 with the user), or, on
   * a server without it (404, or 405 where the path is another resource's), a GET of `/api`,
   * which any authenticated user may read: 401 there too means the credential is refused.
   * `{ status, user }`, user null when none was reported.
   */
  async review(clusterDetails, credential) {
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

  /**
   * The user the API server reports for the credential whose keyed hash is `secretKey`, asked
   * once and remembered (MAX_REVIEWS at most); null when none was reported.
   */
  async userOf(secretKey, clusterDetails, credential) {
    if (this.#users.has(secretKey)) return this.#users.get(secretKey);
    let user = null;
    try {
      ({ user } = await this.review(clusterDetails, credential));
    } catch {
      return null; // not remembered: the next request asks again
    }
    if (this.#users.size >= MAX_REVIEWS) this.#users.delete(this.#users.keys().next().value);
    this.#users.set(secretKey, user);
    return user;
  }

  clear() {
    this.#users.clear();
  }
}

module.exports = { clusterRequest, Reviews };
