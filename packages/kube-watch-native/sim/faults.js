'use strict';

// Scripted misbehaviour for watch requests: what a fault may say, and the two fault answers
// that do not go through a Watch (a scripted status, and the onWatch escape hatch).

const { sendJson, status } = require('./status');

const FAULT_KEYS = new Set([
  'status',
  'body',
  'headers',
  'retryAfterSeconds',
  'writeMode',
  'splitAt',
  'lineEnding',
  'rawLines',
  'noNewlineAfterLast',
  'then',
  'cutAfterEvents',
  'stallAfterEvents',
  'stallHeaders',
  'gzip',
  'delayMs',
  'onWatch',
]);
const WRITE_MODES = new Set(['normal', 'byte', 'split', 'coalesce']);
const THEN = new Set(['live', 'end', 'cut', 'stall', 'truncate', 'reset']);

/**
 * @typedef {object} Fault what the next watch request(s) should suffer; every key optional
 * @property {number} [status] answer with this HTTP status instead of a watch
 * @property {string|object|Buffer} [body] with status: the body (default: a matching Status)
 * @property {Record<string,string>} [headers] with status: extra headers, e.g. `{ location }`
 * @property {number} [retryAfterSeconds=1] with status 429: Retry-After and details.retryAfterSeconds
 * @property {'normal'|'byte'|'split'|'coalesce'} [writeMode] one write per event (normal), per byte,
 *   two per event (split, at `splitAt`), or several events per write (coalesce: whatever is
 *   queued in one turn of the event loop)
 * @property {number|((line: Buffer) => number)} [splitAt] split offset (negative: from the end);
 *   default random
 * @property {string} [lineEnding='\n'] e.g. '\r\n'
 * @property {Array<string|Buffer>} [rawLines] written verbatim, each plus lineEnding, before events
 * @property {boolean} [noNewlineAfterLast] no line ending after the last raw line
 * @property {'live'|'end'|'cut'|'stall'|'truncate'|'reset'} [then='live'] after raw lines and
 *   initial events: stream live events, end cleanly, close the TCP connection, go silent, end
 *   inside a chunk (HTTP/2: RST_STREAM), or send a TCP RST
 * @property {number} [cutAfterEvents] close the connection once this many events (bookmarks
 *   included, raw lines not) were written
 * @property {number} [stallAfterEvents] go silent once this many events were written
 * @property {boolean} [stallHeaders] never answer at all
 * @property {boolean} [gzip] gzip the body if the client sends Accept-Encoding: gzip
 * @property {number} [delayMs] wait this long before answering
 * @property {(ctx: object) => void} [onWatch] take over the request (see watchContext)
 */

/**
 * Validates a fault description.
 * @param {Fault|null} fault
 * @returns {Fault|null} the same fault
 * @throws {TypeError} on an unknown option or value
 */
function checkFault(fault) {
  if (fault === null) return null;
  if (typeof fault !== 'object') throw new TypeError('a fault must be an object or null');
  // A typo in a fault would silently turn a failure test into a happy-path test.
  for (const key of Object.keys(fault)) {
    if (!FAULT_KEYS.has(key)) throw new TypeError(`unknown fault option "${key}"`);
  }
  if (fault.writeMode !== undefined && !WRITE_MODES.has(fault.writeMode)) {
    throw new TypeError(`unknown fault.writeMode "${fault.writeMode}"`);
  }
  if (fault.then !== undefined && !THEN.has(fault.then)) {
    throw new TypeError(`unknown fault.then "${fault.then}"`);
  }
  return fault;
}

/**
 * Answers a watch with the fault's status: its body, or the Status the API server would send.
 * @param {import('http').ServerResponse} res
 * @param {object} route the parsed request path (for a realistic 403 message)
 * @param {object} fault
 */
function sendFaultStatus(res, route, fault) {
  const code = fault.status;
  const headers = { ...(fault.headers || {}) };
  if (fault.body !== undefined) return sendJson(res, code, fault.body, headers);
  let message = `simulated ${code}`;
  let details;
  if (code === 403) {
    const scope = route.namespace ? `in the namespace "${route.namespace}"` : 'at the cluster scope';
    message =
      `${route.plural} is forbidden: User "system:anonymous" cannot watch resource ` +
      `"${route.plural}" in API group "${route.group}" ${scope}`;
    details = { kind: route.plural };
  } else if (code === 429) {
    const retry = fault.retryAfterSeconds ?? 1;
    message = 'Too many requests, please try again later.';
    details = { retryAfterSeconds: retry };
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'retry-after')) {
      headers['Retry-After'] = String(retry);
    }
  } else if (code === 500) {
    message = 'Internal error occurred: simulated failure';
  }
  return sendJson(res, code, status(code, message, undefined, details), headers);
}

/**
 * What an onWatch fault handler gets: the raw request/response plus helpers that send
 * 200 JSON headers on first use.
 * @returns {{req, res, socket, rawSocket, query: object, store, write: Function, end: Function, destroy: Function}}
 */
function watchContext(req, res, rawSocket, params, store) {
  const ensureHeaders = () => {
    if (res.headersSent) return;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.flushHeaders();
  };
  return {
    req,
    res,
    socket: res.socket || req.socket,
    rawSocket,
    query: Object.fromEntries(params),
    store,
    write(data) {
      ensureHeaders();
      return res.write(data);
    },
    end(data) {
      ensureHeaders();
      res.end(data);
    },
    destroy() {
      rawSocket.destroy();
    },
  };
}

module.exports = { checkFault, sendFaultStatus, watchContext, FAULT_KEYS };
