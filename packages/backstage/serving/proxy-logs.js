'use strict';
// The proxy's route for a pod's log, `GET /proxy/api/v1/namespaces/{ns}/pods/{pod}/log` (what
// `kubernetesProxyApi.getPodLogs` and every proxy caller send; authorized as the stock proxy
// authorizes, ./proxy.js), answered from the native log stream.
//
// A follow is a shared native stream: one upstream follow of the container for every caller
// the API server answers the same (the same cluster connection and credential, the stream's
// share key), each caller from its own tailLines / sinceTime / sinceSeconds / timestamps /
// limitBytes. A one-shot request (the stock dialog's) is answered from a running shared
// follow's kept lines when they cover it, else by a request of its own. Query values it does
// not read as the API server does go to the stock proxy (the API server says why).

const { proxyCredential, auditProxy } = require('./proxy-request');

/** A follow's headers go out at its first line, or after this long without one. */
const HEADERS_WITHIN_MS = 1000;
const REASONS = { 400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound' };

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

/** Answers a log request `req` for `target.cluster` (`match`: the path's namespace and pod). */
async function serveLog(context, { cluster }, req, res, match, toStock) {
  const options = logOptions(req.query);
  if (!cluster || !options) return toStock();
  const credential = await proxyCredential(context, req, cluster);
  if (!credential) return toStock();
  const done = await auditProxy(context, req, cluster);
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
  done(error);
  return undefined;
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

module.exports = { serveLog, logOptions };
