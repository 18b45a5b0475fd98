'use strict';

// metav1.Status bodies, shaped and ordered like the API server's, because clients log and
// sometimes parse them.

const crypto = require('node:crypto');

const REASONS = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Expired',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/**
 * A Status object.
 * @param {number} code HTTP status it travels with
 * @param {string} message
 * @param {string} [reason] defaults to the API server's reason for the code
 * @param {object} [details]
 * @returns {object}
 */
function status(code, message, reason, details) {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: code >= 200 && code < 300 ? 'Success' : 'Failure',
    message,
    reason: reason ?? REASONS[code] ?? '',
    ...(details && { details }),
    code,
  };
}

/** Headers every API server response carries. */
function commonHeaders() {
  return {
    'audit-id': crypto.randomUUID(),
    'cache-control': 'no-cache, private',
  };
}

/**
 * Answers with a JSON body (a Status unless told otherwise) and ends the response.
 * @param {import('http').ServerResponse} res
 * @param {number} code
 * @param {object|string|Buffer} body objects are serialised as JSON
 * @param {Record<string,string|number>} [headers]
 */
function sendJson(res, code, body, headers = {}) {
  if (res.headersSent || res.destroyed) return;
  const isText = typeof body === 'string' || Buffer.isBuffer(body);
  const payload = isText ? body : JSON.stringify(body);
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  res.writeHead(code, {
    ...commonHeaders(),
    'content-type': isText ? 'text/plain; charset=utf-8' : 'application/json',
    'content-length': Buffer.byteLength(payload),
    ...lower,
  });
  res.end(payload);
}

/**
 * Answers with a Status body.
 * @param {import('http').ServerResponse} res
 * @param {number} code
 * @param {string} message
 * @param {string} [reason]
 * @param {object} [details]
 * @param {Record<string,string|number>} [headers]
 */
function sendStatus(res, code, message, reason, details, headers) {
  sendJson(res, code, status(code, message, reason, details), headers);
}

/**
 * The API server's fallback 404 for paths no handler serves (e.g. a group whose CRD is not
 * installed): plain text, not a Status.
 * @param {import('http').ServerResponse} res
 */
function sendPageNotFound(res) {
  if (res.headersSent || res.destroyed) return;
  const body = '404 page not found\n';
  res.writeHead(404, {
    ...commonHeaders(),
    'content-type': 'text/plain; charset=utf-8',
    'x-content-type-options': 'nosniff',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

module.exports = { status, sendStatus, sendJson, sendPageNotFound, commonHeaders, REASONS };
