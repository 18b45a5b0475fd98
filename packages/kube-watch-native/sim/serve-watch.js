'use strict';
// The simulator's watch requests (`?watch=true`): the faults a test queued, authentication and
// RBAC, then a Watch (./watch.js) of the resource with its selectors, streaming list, bookmarks
// and gzip, registered with the simulator so that its test controls (cutWatches, endWatches,
// close) reach it.

const { sendStatus } = require('./status');
const routes = require('./routes');
const { Watch, parseWatchOptions } = require('./watch');
const { compileFieldSelector } = require('./field-selector');
const { SelectorError } = require('./selector');
const { testOnly } = require('./test-only');

const noop = () => {};

// The HTTP/2 compat request's socket getter throws once the stream is gone.
function remotePort(req) {
  try {
    return req.socket && req.socket.remotePort;
  } catch {
    return undefined;
  }
}

/** Serves a watch of `sim` (a Simulator): `r` the parsed path, `record` the request's log entry. */
async function serveWatch(sim, req, res, r, params, record) {
  const fault = sim.takeFault() || {};
  const tcp = sim.socketsByPort.get(remotePort(req));
  const rawSocket = tcp ? tcp.socket : req.socket;
  const slot = { end: noop, dispose: noop, cut: () => res.destroy(), closed: false };
  sim.watches.add(slot);
  res.once('close', () => {
    slot.closed = true;
    sim.watches.delete(slot);
    slot.dispose();
  });
  if (fault.delayMs) {
    await sim.delay(fault.delayMs);
    if (slot.closed || sim.closing) return undefined;
  }
  // Headers never come: the client is left waiting for the response.
  if (fault.stallHeaders) return undefined;
  if (fault.onWatch)
    return fault.onWatch(testOnly('./faults').watchContext(req, res, rawSocket, params, sim.store));
  if (fault.status) return testOnly('./faults').sendFaultStatus(res, r, fault);
  if (!sim.authorized(req, record)) return sendStatus(res, 401, 'Unauthorized', 'Unauthorized');
  if (!sim.permitted(req, res, r, record, 'watch')) return undefined;

  const def = routes.lookupResource(sim.store, r);
  if (!def) return routes.sendResourceNotFound(sim.store, res, r);
  const parsed = parseWatchOptions(params);
  // An old server (`sendInitialEvents: false`) and one answering 410 by status are the tests'.
  const old = sim.options.sendInitialEvents === false || sim.options.expiredAs === 'status';
  const serverFaults = old ? testOnly('./server-faults') : null;
  const e = parsed.error || serverFaults?.refuseStreamingList(sim.options, params);
  if (e) return sendStatus(res, e.code, e.message, e.reason, e.details);
  try {
    parsed.options.fieldSelector = compileFieldSelector(params.get('fieldSelector'), def);
  } catch (err) {
    if (err instanceof SelectorError) return sendStatus(res, 400, err.message, 'BadRequest');
    throw err;
  }
  if (serverFaults?.sendExpiredStatus(sim, res, parsed.options)) return undefined;
  const partial = sim.partialAnswer(req, res, 'PartialObjectMetadata');
  if (partial === null) return undefined;
  const gzip = Boolean(fault.gzip ?? sim.options.gzip) && routes.acceptsGzip(req.headers['accept-encoding']);
  const watch = new Watch({
    store: sim.store,
    def,
    namespace: r.namespace,
    name: r.name,
    options: parsed.options,
    fault,
    res,
    rawSocket,
    gzip,
    metadataOnly: partial,
    bookmarkIntervalMs: sim.options.bookmarkIntervalMs,
    defaultTimeoutSeconds: sim.options.defaultTimeoutSeconds ?? 1800 + Math.random() * 1800,
  });
  slot.end = () => watch.end();
  slot.dispose = () => watch.dispose();
  // HTTP/2 breaks the one stream (RST_STREAM mid-body), HTTP/1.1 the connection.
  slot.cut = () => watch.misbehave(res.stream ? 'truncate' : 'cut');
  watch.start();
  sim.emit('watchStart', {
    resource: def.key,
    namespace: r.namespace,
    name: r.name,
    query: Object.fromEntries(params),
    socketId: tcp ? tcp.id : null,
    http2: req.httpVersionMajor === 2,
    req,
    res,
  });
  return undefined;
}

module.exports = { serveWatch, remotePort };
