'use strict';
// What the stock proxy does with a request it forwards, for the routes that answer it natively
// (./proxy.js): the credential it would send, and its audit event.

const HEADER_AUTH = 'backstage-kubernetes-authorization';

/**
 * The credential the stock proxy would send for `cluster`: the caller's
 * `Backstage-Kubernetes-Authorization` bearer token, else the cluster's strategy's (with the
 * caller's `Backstage-Kubernetes-Authorization-{framework}` headers). Null for one a native
 * request cannot send as the proxy does (anonymous, another scheme).
 */
async function proxyCredential(context, req, cluster) {
  const header = req.headers[HEADER_AUTH];
  if (typeof header === 'string') {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
    return bearer ? { type: 'bearer token', token: bearer[1] } : null;
  }
  const strategy = context.authStrategyMap[cluster.authMetadata?.['kubernetes.io/auth-provider']];
  if (!strategy) return null;
  const credential = await strategy.getCredential(cluster, authObject(req.headers));
  return credential.type === 'bearer token' || credential.type === 'x509 client certificate'
    ? credential
    : null;
}

/** The stock proxy's reading of `Backstage-Kubernetes-Authorization-{framework}[-{provider}]` headers. */
function authObject(headers) {
  const auth = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!name.startsWith(HEADER_AUTH)) continue;
    const parts = name.split('-');
    if (parts.length < 4) continue;
    const framework = parts[3].toLowerCase();
    if (parts.length >= 5)
      auth[framework] = { ...auth[framework], [parts.slice(4).join('-').toLowerCase()]: value };
    else auth[framework] = value;
  }
  return auth;
}

/** The stock proxy's audit event of a request this module answers; `done(error?)` ends it. */
async function auditProxy(context, req, cluster) {
  const audit = await context.auditor?.createEvent({
    eventId: 'cluster-fetch',
    severityLevel: 'medium',
    request: req,
    meta: { queryType: 'proxy', clusterName: cluster.name, method: req.method, path: req.path },
  });
  return (error) =>
    audit?.[error ? 'fail' : 'success'](error ? { error: new Error(error.message) } : undefined).catch(
      (err) => context.logger.error('Failed to emit proxy audit event', err),
    );
}

module.exports = { proxyCredential, auditProxy };
