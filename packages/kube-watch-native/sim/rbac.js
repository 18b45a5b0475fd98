'use strict';

// Who a request is, and what it may read: the API server's bearer-token authentication
// (401 for a token it does not know) and RBAC authorization (403 Forbidden, with the message
// and details kube-apiserver writes) for the simulator's `tokens` option. Authorization comes
// before routing, as on the real server: a token refused a resource gets 403 even where the
// resource does not exist, and one allowed every resource gets the 404.

/**
 * @typedef {object} Rule what one grant lets a token read (list, watch, get)
 * @property {string[]} [resources] plurals, or `group/plural`; a subresource only by its own name
 *   (`pods/log`, `group/plural/sub`), as RBAC reads it; `'*'` (default) for every one
 * @property {string[]} [namespaces] namespaces; `'*'` (default) for every one and the cluster scope
 */

/**
 * @typedef {object} Identity
 * @property {string} user the user name refusals name
 * @property {string} [uid] the user's uid, as a SelfSubjectReview reports it
 * @property {string[]} [groups] the user's groups besides `system:authenticated`
 * @property {Rule[]|undefined} rules undefined: everything (cluster-admin)
 */

const ANONYMOUS = { user: 'system:anonymous', rules: undefined };

/** Checks the `tokens` option: `{ [token]: { user?, rules? } }`. */
function validateTokens(tokens) {
  if (tokens === undefined) return;
  if (tokens === null || typeof tokens !== 'object' || Array.isArray(tokens))
    throw new TypeError('tokens must be an object of token → { user, rules }');
  for (const [token, grant] of Object.entries(tokens)) {
    if (grant === null || typeof grant !== 'object')
      throw new TypeError(`tokens: the grant of a token must be an object`);
    if (grant.rules !== undefined && !Array.isArray(grant.rules))
      throw new TypeError(`tokens: rules must be an array (user ${grant.user ?? token.length + ' chars'})`);
  }
}

/** The bearer token of a request (the API server's parsing: trimmed, case-insensitive scheme). */
function bearerToken(req) {
  const parts = String(req.headers.authorization || '')
    .trim()
    .split(' ');
  return parts.length >= 2 && parts[0].toLowerCase() === 'bearer' ? parts[1] : null;
}

/**
 * The identity of a request, or null when it is not authenticated (401).
 * @param {{ token?: string, tokens?: Record<string, {user?: string, rules?: Rule[]}>, requireClientCert?: boolean }} options
 */
function authenticate(options, req, record) {
  const { token, tokens, requireClientCert } = options;
  if (!token && !tokens) return ANONYMOUS;
  if (requireClientCert && record.clientCertCN && req.socket.authorized) {
    return { user: record.clientCertCN, rules: undefined };
  }
  const sent = bearerToken(req);
  if (sent === null) return null;
  if (token && sent === token) return { user: 'system:admin', rules: undefined };
  if (tokens && Object.hasOwn(tokens, sent)) {
    const grant = tokens[sent];
    return {
      user: grant.user ?? 'system:serviceaccount:default:sim',
      uid: grant.uid,
      groups: grant.groups,
      rules: grant.rules,
    };
  }
  return null;
}

function matches(list, value) {
  return list === undefined || list.includes('*') || list.includes(value);
}

/**
 * Whether `identity` may `verb` the resource of `route`; else the 403 Status's message and
 * details, as kube-apiserver words them.
 * @returns {null | { message: string, details: object }}
 */
function forbidden(identity, route, verb) {
  if (!identity.rules || route.type !== 'resource') return null;
  const { group, namespace, subresource, name } = route;
  const plural = subresource ? `${route.plural}/${subresource}` : route.plural;
  const allowed = identity.rules.some(
    (rule) =>
      (matches(rule.resources, plural) || matches(rule.resources, `${group}/${plural}`)) &&
      (namespace === undefined
        ? rule.namespaces === undefined || rule.namespaces.includes('*')
        : matches(rule.namespaces, namespace)),
  );
  if (allowed) return null;
  const scope = namespace === undefined ? 'at the cluster scope' : `in the namespace "${namespace}"`;
  return {
    message: `${name ? `${route.plural} "${name}"` : route.plural} is forbidden: User "${identity.user}" cannot ${verb} resource "${plural}" in API group "${group}" ${scope}`,
    details: { ...(name && { name }), ...(group && { group }), kind: route.plural },
  };
}

module.exports = { authenticate, forbidden, validateTokens, bearerToken };
