'use strict';
// The proxy's route for a pod's log, `GET /proxy/api/v1/namespaces/{ns}/pods/{pod}/log` (what
// `kubernetesProxyApi.getPodLogs` and every proxy caller send; authorized as the stock proxy
// authorizes, ./proxy.js), answered from the native log stream.
//
// A follow is a shared native stream: one upstream follow of the container for every caller
// the API server answers the same (the same cluster connection and credential, the stream's
// share key; on a viewer-checked cluster, the service account's, for each viewer the API server
// lets `get` the pod's log, asked again per authorizationTtl while it follows), each caller from its own tailLines / sinceTime / sinceSeconds / timestamps /
// limitBytes. A one-shot request (the stock dialog's) is answered from a running shared
// follow's kept lines when they cover it, else by a request of its own. Query values it does
// not read as the API server does go to the stock proxy (the API server says why).

const { proxyCredential, auditProxy } = require('./proxy-request');
const { isViewerChecked } = require('./credential');

/** A viewer's access to a follow is asked again at most this often (an authorizationTtl of 0). */
const RECHECK_MIN_MS = 1000;
/** A follow's headers go out at its first line, or after this long without one. */
const HEADERS_WITHIN_MS = 1000;
const REASONS = { 400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound' };
/**
 * A follow's lines that come in small pieces are gathered this long after each write, so a
 * caller gets them in a few larger chunks: a container that writes 1 000 lines a second in 100
 * pieces costs a browser tab (its network and renderer) a third more than in 20. What comes
 * while the stream is gathered waits in its native queue (bounded; past the bound a larger
 * piece is written at once).
 */
const GATHER_MS = 50;
const GATHER_BELOW_BYTES = 64 << 10;

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
  const [namespace, pod] = [match[1], match[2]].map(decodeURIComponent);
  const params = { clusterDetails: cluster, credential };
  const access = () => logAccess(context, params, namespace, pod);
  const granted = await access();
  if (!granted) return toStock();
  const done = await auditProxy(context, req, cluster);
  const controller = new AbortController();
  context.open.add(controller);
  res.once('close', () => controller.abort());
  const stream = context.watcher.streamLogs(
    {
      clusterDetails: granted.clusterDetails,
      credential: granted.credential,
      namespace,
      pod,
      container: typeof req.query.container === 'string' ? req.query.container : undefined,
    },
    // A follow is shared; a one-shot read is answered from a shared follow that covers it.
    { ...options, share: !options.previous, text: true, signal: controller.signal },
  );
  const recheck = granted.until === Infinity ? null : keepChecking(granted.until, access, controller);
  let error;
  try {
    error = await writeLog(stream, res, Boolean(options.follow));
  } finally {
    controller.abort();
    context.open.delete(controller);
    recheck?.stop();
  }
  done(error);
  return undefined;
}

/**
 * `{ clusterDetails, credential, until }` the log is read with (the fetcher's logAccess: a
 * viewer-checked cluster's service account while the viewer may read the log), or null (the
 * stock proxy answers).
 */
function logAccess(context, params, namespace, pod) {
  if (!isViewerChecked(params.clusterDetails)) return { ...params, until: Infinity };
  return context.fetcher()?.logAccess(params, namespace, pod) ?? null;
}

/** A follow shown to a viewer only while its access is proven: asked again at `until`, ended once refused. */
function keepChecking(until, access, controller) {
  let timer;
  const schedule = (at) => {
    timer = setTimeout(
      async () => {
        const again = await access().catch(() => null);
        if (!again) controller.abort();
        else if (!controller.signal.aborted) schedule(again.until);
      },
      Math.max(RECHECK_MIN_MS, at - Date.now()),
    );
  };
  schedule(until);
  return { stop: () => clearTimeout(timer) };
}

/**
 * Writes the stream out as the API server would: the lines as text/plain (lines a slow caller
 * missed as one marker line that says how many); an ERROR before any
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
      const text =
        event.type === 'TEXT'
          ? event.text
          : event.type === 'BYTES'
            ? event.bytes
            : event.type === 'SKIPPED'
              ? `[kube-watch-native: ${event.lines} lines skipped: this reader fell behind the follow]\n`
              : null;
      if (text === null) continue;
      start();
      // A caller that reads slowly holds its stream's reading here (its native queue, bounded,
      // then skips ahead), never a buffer in this process.
      if (!res.write(text)) await drained(res);
      else if (follow && text.length < GATHER_BELOW_BYTES) await gather(res);
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

/** Resolves after GATHER_MS, or at once when `res` closes. */
function gather(res) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, GATHER_MS);
    res.on('close', done);
  });
}

/** Resolves once `res` can take more (or is closed). */
function drained(res) {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
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
