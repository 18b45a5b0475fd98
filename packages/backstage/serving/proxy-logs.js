'use strict';
// The Kubernetes plugin's own proxy route for a pod's log, `GET /proxy/api/v1/namespaces/{ns}/
// pods/{pod}/log` (what `kubernetesProxyApi.getPodLogs` and every proxy caller use), answered
// from the native log stream; every other request goes to the plugin's own router untouched.
//
// The route is the plugin's custom router (kubernetesRouterExtensionPoint), which is handed the
// plugin's cluster supplier and auth strategies: the stock proxy's authorization exactly (the
// `kubernetes.proxy` permission, the cluster of the `Backstage-Kubernetes-Cluster` header, the
// cluster's strategy), audited as it audits (`cluster-fetch`, queryType proxy). It serves the
// clusters whose credential is the backend's own (a server-side provider, ./credential.js), which
// the API server answers the same for every caller the proxy lets through: a follow is a shared
// native stream, one upstream follow of the container for all of them, each caller from its own
// tailLines / sinceTime / sinceSeconds / timestamps / limitBytes. A one-shot request (the stock
// dialog's) is answered from a running shared follow's kept lines when they cover it, else by a
// request of its own.
//
// What goes to the plugin's proxy instead, untouched: other methods and paths, a cluster this
// route cannot resolve (the proxy says why), a caller's own credential (a client-side provider,
// a `Backstage-Kubernetes-Authorization` header), query values it does not read as the API server
// does (the API server says why).

const { kubernetesProxyPermission } = require('@backstage/plugin-kubernetes-common');
const { SERVER_SIDE_PROVIDERS } = require('./credential');

const LOG_PATH = /^\/proxy\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/log$/;
const HEADER_CLUSTER = 'backstage-kubernetes-cluster';
const HEADER_AUTH = 'backstage-kubernetes-authorization';
/** A follow's headers go out at its first line, or after this long without one. */
const HEADERS_WITHIN_MS = 1000;
const REASONS = { 400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound' };

/**
 * The plugin's custom router factory: the log route in front of `getDefault()`.
 * @param {{ watcher: import('kube-watch-native').NativeKubernetesWatcher, permissions: any, httpAuth: any, auditor?: any, logger: any }} deps
 */
function proxyLogsRouter({ watcher, permissions, httpAuth, auditor, logger }) {
  return ({ getDefault, clusterSupplier, authStrategyMap }) => {
    const stock = getDefault();
    const context = { watcher, permissions, httpAuth, auditor, logger, clusterSupplier, authStrategyMap };
    return (req, res, next) => {
      const match = req.method === 'GET' ? LOG_PATH.exec(req.path) : null;
      if (!match) return stock(req, res, next);
      serveLog(context, req, res, match, () => stock(req, res, next)).catch(next);
      return undefined;
    };
  };
}

/** PodLogOptions as the API server reads them, or null for a value it would refuse. */
function logOptions(query) {
  const options = {};
  for (const name of ['follow', 'previous', 'timestamps']) {
    const value = query[name];
    if (value === undefined) continue;
    if (value !== 'true' && value !== 'false') return null;
    options[name] = value === 'true';
  }
  for (const [name, min] of [
    ['tailLines', 0],
    ['sinceSeconds', 1],
    ['limitBytes', 1],
  ]) {
    const value = query[name];
    if (value === undefined) continue;
    if (typeof value !== 'string' || !/^\d+$/.test(value) || Number(value) < min) return null;
    options[name] = Number(value);
  }
  if (query.sinceTime !== undefined) {
    if (typeof query.sinceTime !== 'string' || options.sinceSeconds !== undefined) return null;
    options.sinceTime = query.sinceTime;
  }
  return options;
}

/**
 * The credential the stock proxy would send for `cluster` when it is the backend's own (a
 * server-side provider's, with no caller's header), which every caller the proxy lets through
 * would be answered the same with; else null: a caller's own credential is the stock proxy's.
 */
async function credentialFor(context, req, cluster) {
  if (req.headers[HEADER_AUTH] !== undefined) return null;
  const provider = cluster.authMetadata?.['kubernetes.io/auth-provider'];
  const strategy = context.authStrategyMap[provider];
  if (!SERVER_SIDE_PROVIDERS.has(provider) || !strategy) return null;
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

async function serveLog(context, req, res, match, toStock) {
  const credentials = await context.httpAuth.credentials(req);
  const [decision] = await context.permissions.authorize([{ permission: kubernetesProxyPermission }], {
    credentials,
  });
  if (decision.result === 'DENY') {
    // As the stock proxy answers.
    res.status(403).json({ error: { name: 'NotAllowedError', message: 'Unauthorized' } });
    return;
  }
  const clusterName = req.headers[HEADER_CLUSTER];
  const clusters = (await context.clusterSupplier.getClusters({ credentials })) ?? [];
  const cluster =
    typeof clusterName === 'string' && clusterName.length > 0
      ? clusters.find((c) => c.name === clusterName)
      : clusters.length === 1
        ? clusters[0]
        : undefined;
  const options = logOptions(req.query);
  if (!cluster || !options) return toStock();
  const credential = await credentialFor(context, req, cluster);
  if (!credential) return toStock();
  const audit = await context.auditor?.createEvent({
    eventId: 'cluster-fetch',
    severityLevel: 'medium',
    request: req,
    meta: { queryType: 'proxy', clusterName: cluster.name, method: req.method, path: req.path },
  });
  const controller = new AbortController();
  res.once('close', () => controller.abort());
  const [, namespace, pod] = match;
  const stream = context.watcher.streamLogs(
    {
      clusterDetails: cluster,
      credential,
      namespace: decodeURIComponent(namespace),
      pod: decodeURIComponent(pod),
      container: typeof req.query.container === 'string' ? req.query.container : undefined,
    },
    // A follow is shared; a one-shot read is answered from a shared follow that covers it.
    { ...options, share: !options.previous, signal: controller.signal },
  );
  let error;
  try {
    error = await writeLog(stream, res, Boolean(options.follow));
  } finally {
    controller.abort();
  }
  audit?.[error ? 'fail' : 'success'](error ? { error: new Error(error.message) } : undefined).catch((err) =>
    context.logger.error('Failed to emit proxy audit event', err),
  );
}

/**
 * Writes the stream out as the API server would: the lines as text/plain; an ERROR before any
 * line as the API server's Status (a failure below HTTP as the stock proxy's 500); one after the
 * headers ends the body. Resolves to the ERROR's error, if any.
 */
async function writeLog(stream, res, follow) {
  const start = () => {
    if (res.headersSent) return;
    res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-cache, private' });
    res.flushHeaders();
  };
  const timer = follow ? setTimeout(start, HEADERS_WITHIN_MS) : null;
  try {
    for await (const event of stream) {
      if (event.type === 'ERROR') {
        if (!res.headersSent) writeStatus(res, event.error);
        return event.error;
      }
      if (event.type !== 'LINES') continue;
      start();
      let text = '';
      event.lines.forEach((line, i) => {
        text += event.continued.includes(i) ? line : `${line}\n`;
      });
      res.write(text);
    }
    return undefined;
  } finally {
    clearTimeout(timer);
    if (!res.writableEnded) {
      start();
      res.end();
    }
  }
}

/** The API server's Status body for `error`, or the stock proxy's 500 for one below HTTP. */
function writeStatus(res, error) {
  if (!error.statusCode) {
    res.status(500).json({
      error: { name: 'ForwardedError', message: error.message },
      response: { statusCode: 500 },
    });
    return;
  }
  res.status(error.statusCode).json({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: error.message,
    reason: REASONS[error.statusCode] ?? 'Unknown',
    code: error.statusCode,
  });
}

module.exports = { proxyLogsRouter, logOptions };
