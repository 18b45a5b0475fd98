'use strict';

// Behaviour of the whole simulated server rather than of one watch: scripted failures of the
// next requests (lists and watches alike), list pages far larger than any API server sends
// (fast or trickled), an old API server without streaming lists, and a watch cache that
// answers an expired resourceVersion with an HTTP 410 instead of an in-stream ERROR event.

const { once } = require('node:events');
const { sendJson, sendStatus, status, commonHeaders } = require('./status');

/**
 * @typedef {object} Failure one scripted answer for failNext
 * @property {number} status HTTP status (e.g. 500, 503, 429, 401, 403, 404)
 * @property {number} [retryAfter] seconds for Retry-After and details.retryAfterSeconds
 * @property {'both'|'header'|'details'} [retryAfterIn='both'] where retryAfter is said: the
 *   `Retry-After` header, the Status's details.retryAfterSeconds, or both (as the API server does)
 * @property {boolean} [plain] answer 404 with the plain text `404 page not found`
 */

const RETRY_AFTER_IN = new Set(['both', 'header', 'details']);

/**
 * Validates failNext's arguments.
 * @returns {Failure}
 */
function checkFailure(count, code, retryAfter, { retryAfterIn = 'both', ...rest } = {}) {
  if (!Number.isInteger(count) || count < 1) throw new TypeError('failNext: count must be an integer >= 1');
  if (!Number.isInteger(code) || code < 300 || code > 599)
    throw new TypeError('failNext: status must be an HTTP error status (300-599)');
  if (retryAfter !== undefined && !(Number.isInteger(retryAfter) && retryAfter >= 0))
    throw new TypeError('failNext: retryAfter must be a whole number of seconds');
  // A typo here would quietly send both and turn a header-only test into the usual one.
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new TypeError(`failNext: unknown option "${unknown}"`);
  if (!RETRY_AFTER_IN.has(retryAfterIn))
    throw new TypeError(
      `failNext: retryAfterIn must be 'both', 'header' or 'details', not "${retryAfterIn}"`,
    );
  if (retryAfterIn !== 'both' && retryAfter === undefined)
    throw new TypeError('failNext: retryAfterIn needs a retryAfter');
  return { status: code, retryAfter, retryAfterIn };
}

const MESSAGES = {
  401: 'Unauthorized',
  404: 'the server could not find the requested resource',
  429: 'Too many requests, please try again later.',
  500: 'Internal error occurred: simulated failure',
  503: 'The API server is shutting down or not ready (simulated)',
};

/**
 * Answers a request with a scripted failure: a Status like the API server's, with
 * Retry-After and/or details.retryAfterSeconds when asked for.
 * @param {import('http').ServerResponse} res
 * @param {object} r the parsed route
 * @param {Failure} failure
 */
function sendFailure(res, r, failure) {
  const code = failure.status;
  const headers = {};
  let details;
  if (failure.retryAfter !== undefined) {
    const where = failure.retryAfterIn ?? 'both';
    if (where !== 'details') headers['Retry-After'] = String(failure.retryAfter);
    if (where !== 'header') details = { retryAfterSeconds: failure.retryAfter };
  }
  let message = MESSAGES[code] || `simulated ${code}`;
  if (code === 403) {
    message = `${r.plural} is forbidden: User "system:anonymous" cannot list resource "${r.plural}"`;
  }
  sendJson(res, code, status(code, message, undefined, details), headers);
}

/**
 * The 422 an API server without the WatchList feature answers to `sendInitialEvents`, or
 * null when the server supports it (or the request does not ask for it).
 * @param {object} options the simulator's options
 * @param {URLSearchParams} params
 */
function refuseStreamingList(options, params) {
  if (options.sendInitialEvents !== false || params.get('sendInitialEvents') === null) return null;
  const reason = 'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled';
  return {
    code: 422,
    message: `ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: ${reason}`,
    reason: 'Invalid',
    details: {
      group: 'meta.k8s.io',
      kind: 'ListOptions',
      causes: [
        { reason: 'FieldValueForbidden', message: `Forbidden: ${reason}`, field: 'sendInitialEvents' },
      ],
    },
  };
}

/**
 * With `expiredAs: 'status'`, answers a watch from a compacted resourceVersion with HTTP 410
 * (as the API server does when the request bypasses the watch cache) and returns true.
 * @param {object} sim the Simulator
 * @param {import('http').ServerResponse} res
 * @param {object} options from parseWatchOptions
 */
function sendExpiredStatus(sim, res, options) {
  if (sim.options.expiredAs !== 'status' || !options.rv || options.sendInitialEvents === true) return false;
  if (sim.store.eventsSince(options.rv) !== null) return false;
  const msg = `too old resource version: ${options.rv} (${sim.store.compactedRv})`;
  sendStatus(res, 410, msg, 'Expired');
  return true;
}

/**
 * @typedef {object} HugePage one scripted answer for hugePageNext: a well-formed list page
 *   (200, chunked) of `pageBytes` bytes whatever `limit` asked for, its items ConfigMap-shaped
 *   objects of about `pieceBytes` each
 * @property {number} pageBytes how long the page is; sending stops there, or when the client
 *   closes the connection
 * @property {number} [pieceBytes=65536] each write (one item)
 * @property {number} [everyMs=0] the pause between writes: 0 sends as fast as the client reads,
 *   more trickles the page in (each piece inside the client's idle timeout)
 */

/** Validates hugePageNext's argument. */
function checkHugePage(page) {
  if (page === null || typeof page !== 'object') throw new TypeError('hugePageNext: an object is required');
  const { pageBytes, pieceBytes = 65536, everyMs = 0, ...rest } = page;
  const unknown = Object.keys(rest);
  if (unknown.length) throw new TypeError(`hugePageNext: unknown option "${unknown[0]}"`);
  if (!Number.isInteger(pageBytes) || pageBytes < 1)
    throw new TypeError('hugePageNext: pageBytes must be an integer >= 1');
  if (!Number.isInteger(pieceBytes) || pieceBytes < 256)
    throw new TypeError('hugePageNext: pieceBytes must be an integer >= 256');
  if (!Number.isInteger(everyMs) || everyMs < 0)
    throw new TypeError('hugePageNext: everyMs must be an integer >= 0');
  return { pageBytes, pieceBytes, everyMs };
}

/**
 * Sends a huge list page as `page` says, then emits `hugePage` with `{ sent, complete }`:
 * how many bytes went out, and whether the whole page did (false: the client hung up first).
 * @param {object} sim the Simulator
 * @param {import('http').ServerResponse} res
 * @param {object} def resource description
 * @param {HugePage} page
 */
async function sendHugePage(sim, res, def, page) {
  res.writeHead(200, { ...commonHeaders(), 'content-type': 'application/json' });
  const head =
    `{"kind":"${def.listKind}","apiVersion":"${def.apiVersion}",` +
    `"metadata":{"resourceVersion":"${sim.store.resourceVersion}"},"items":[`;
  let sent = 0;
  const write = async (text) => {
    sent += Buffer.byteLength(text);
    if (!res.write(text)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
  };
  await write(head);
  const tail = ']}';
  for (let i = 0; !res.destroyed && sent + tail.length < page.pageBytes; i++) {
    const meta = `{"metadata":{"name":"huge-${i}","namespace":"default","uid":"huge-${i}","resourceVersion":"1"},"data":{"blob":"`;
    const room = Math.min(page.pieceBytes, page.pageBytes - sent - tail.length) - meta.length - 5;
    await write(`${i ? ',' : ''}${meta}${'x'.repeat(Math.max(0, room))}"}}`);
    if (page.everyMs) await sim.delay(page.everyMs);
  }
  const complete = !res.destroyed;
  if (complete) res.end(tail);
  sim.emit('hugePage', { sent, complete });
}

module.exports = {
  checkFailure,
  sendFailure,
  refuseStreamingList,
  sendExpiredStatus,
  checkHugePage,
  sendHugePage,
};
