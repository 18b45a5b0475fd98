'use strict';

// The review resources an authenticated user may always create (system:basic-user): who the API
// server sees for the request's credential (SelfSubjectReview, authentication.k8s.io/v1, GA in
// 1.28) and whether it may do a verb on a resource (SelfSubjectAccessReview,
// authorization.k8s.io/v1), answered from the same tokens and rules as every request
// (sim/rbac.js). Both are POST only; another method is 405, as on kube-apiserver.

const { forbidden } = require('./rbac');
const { sendJson, sendStatus } = require('./status');

/** A request's body, parsed as JSON (null when it is not JSON); at most 64 KiB is read. */
function readJson(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size <= 65536) chunks.push(chunk);
    });
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        resolve(null);
      }
    });
    req.on('error', reject);
  });
}

/**
 * Whether a request is for the v1 collection `plural` of API group `group` as a whole (no
 * namespace, no name): where the review resources are created.
 */
function isCollection(route, group, plural) {
  return (
    route?.type === 'resource' &&
    route.group === group &&
    route.version === 'v1' &&
    route.plural === plural &&
    route.namespace === undefined &&
    route.name === undefined
  );
}

/**
 * Whether a request is for the SelfSubjectReview collection, which every authenticated user may
 * create (system:basic-user); it serves POST only.
 */
const isSelfSubjectReview = (route) => isCollection(route, 'authentication.k8s.io', 'selfsubjectreviews');

/**
 * The answer kube-apiserver (1.28+) gives a SelfSubjectReview: 201 with the user it sees for
 * the request's credential, `system:authenticated` among the groups.
 */
function selfSubjectReview(identity) {
  const userInfo = { username: identity.user };
  if (identity.uid) userInfo.uid = identity.uid;
  userInfo.groups = [...(identity.groups ?? []), 'system:authenticated'];
  return {
    kind: 'SelfSubjectReview',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: { creationTimestamp: null },
    status: { userInfo },
  };
}

/** Whether a request is for the SelfSubjectAccessReview collection (POST only, as the review). */
const isSelfSubjectAccessReview = (route) =>
  isCollection(route, 'authorization.k8s.io', 'selfsubjectaccessreviews');

/**
 * The answer to a SelfSubjectAccessReview of `review` (the request body, parsed): whether
 * `identity` may do its verb on its resource, by the same rules as a request (201, or 400 for a
 * review without resource attributes, as kube-apiserver answers).
 * @returns {{ code: number, body: object }}
 */
function selfSubjectAccessReview(identity, review) {
  const attributes = review?.spec?.resourceAttributes;
  if (review?.kind !== 'SelfSubjectAccessReview' || !attributes || typeof attributes.resource !== 'string') {
    return {
      code: 400,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message:
          'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified',
        reason: 'Invalid',
        code: 400,
      },
    };
  }
  const route = {
    type: 'resource',
    group: attributes.group ?? '',
    plural: attributes.resource,
    namespace: attributes.namespace || undefined,
    subresource: attributes.subresource || undefined,
    name: attributes.name || undefined,
  };
  const refusal = forbidden(identity, route, attributes.verb ?? '');
  const status = { allowed: refusal === null };
  if (refusal !== null) status.reason = '';
  return {
    code: 201,
    body: {
      kind: 'SelfSubjectAccessReview',
      apiVersion: 'authorization.k8s.io/v1',
      metadata: { creationTimestamp: null },
      spec: review.spec,
      status,
    },
  };
}

/** Whether `route` is one of the review collections. */
function isReview(route) {
  return isSelfSubjectReview(route) || isSelfSubjectAccessReview(route);
}

/** Answers a review request of an authenticated `identity`; a promise while its body is read. */
function serveReview(req, res, route, identity) {
  if (req.method !== 'POST') {
    return sendStatus(
      res,
      405,
      'the server does not allow this method on the requested resource',
      'MethodNotAllowed',
      {},
    );
  }
  if (isSelfSubjectReview(route)) return sendJson(res, 201, selfSubjectReview(identity));
  return readJson(req).then((review) => {
    const { code, body } = selfSubjectAccessReview(identity, review);
    sendJson(res, code, body);
  });
}

module.exports = { isReview, serveReview, selfSubjectReview, selfSubjectAccessReview };
