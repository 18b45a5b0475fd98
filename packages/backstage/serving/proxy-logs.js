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
const { now } = require('./clock');

/** A viewer's access to a follow is asked again at most this often (an authorizationTtl of 0). */
const RECHECK_MIN_MS = 1000;
/** A follow's headers go out at its first line, or after this long without one. */
const HEADERS_WITHIN_MS = 1000;
const REASONS = { 400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound' };
/**
 * A follow's lines that come in small pieces are gathered this long after each write, so a
 * caller gets them in a few larger chunks: a container that writes 1 000 lines a second in 100
 * pieces costs a browser tab (its network and renderer) a third more than in 20. What comes
 * while the stream is gathered waits in its native queue (bounded).
 */
const GATHER_MS = 50;
/**
 * A piece this large says the stream is fast (320 KiB a second or more, if it came in one pause;
 * the native stream hands on up to 32 or 64 KiB at a time): no gathering for FAST_MS after it.
 */
const FAST_PIECE_BYTES = 16 << 10;
const FAST_MS = 1000;

/**
 * How long a follow's reading pauses after each write (`pauseAfter(bytes, now)`, ms): GATHER_MS
 * after a small piece, none while the stream is fast. A pause in a fast stream would only hold a
 * caller that keeps up behind it (20 MiB a second is 1 MiB a pause), and lag it past what the
 * follow keeps, to a skip. A slower stream brings less than FAST_PIECE_BYTES in a pause, all of
 * it read at the next turn: its caller never falls further behind than one pause.
 */
class Gathering {
  #fastUntil = -Infinity;

  pauseAfter(bytes, now) {
    if (bytes >= FAST_PIECE_BYTES) this.#fastUntil = now + FAST_MS;
    return now < this.#fastUntil ? 0 : GATHER_MS;
  }
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
    error = await writeLog(stream, res, Boolean(options.follow), controller.signal);
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
 * headers ends the body. Resolves to the ERROR's error, if any. `signal` (the backend's shutdown,
 * the caller's close) ends a wait on the caller's socket.
 */
async function writeLog(stream, res, follow, signal) {
  const start = () => {
    if (res.headersSent) return;
    res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-cache, private' });
    res.flushHeaders();
  };
  const timer = follow ? setTimeout(start, HEADERS_WITHIN_MS) : null;
  const gathering = follow ? new Gathering() : null;
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
      if (!res.write(text)) await waitOn(res, signal, 'drain');
      else if (gathering?.pauseAfter(text.length, now())) await waitOn(res, signal, GATHER_MS);
    }
    return undefined;
  } finally {
    clearTimeout(timer);
    // Ended (the backend's shutdown) while the caller's socket was full: it could take no end
    // either, and an HTTP server waits for an open response.
    if (res.writableNeedDrain) res.destroy();
    else if (!res.writableEnded) {
      start();
      res.end();
    }
  }
}

/**
 * Resolves at `res`'s drain (`wait` 'drain') or after `wait` ms, and at once when `res` closes
 * or `signal` aborts.
 */
function waitOn(res, signal, wait) {
  return new Promise((resolve) => {
    const timer = wait === 'drain' ? null : setTimeout(done, wait);
    function done() {
      clearTimeout(timer);
      res.off('drain', done);
      res.off('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    }
    if (signal.aborted) return done();
    if (wait === 'drain') res.on('drain', done);
    res.on('close', done);
    signal.addEventListener('abort', done);
    return undefined;
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

module.exports = { serveLog, logOptions, Gathering, GATHER_MS, FAST_PIECE_BYTES };
