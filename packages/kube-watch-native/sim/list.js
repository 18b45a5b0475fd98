'use strict';

// Lists as the API server serves them: items of built-in types without kind/apiVersion (the list
// carries them; a CRD's items keep both),
// and pagination with `limit` and opaque `continue` tokens. A paginated list is a consistent
// snapshot at the first page's resourceVersion, as etcd serves it; once the store is compacted
// past that version, the token has expired and the next page is 410 Expired, as on a real
// cluster whose etcd compacted while a client was still paging.

const zlib = require('node:zlib');
const { sendJson, sendStatus, commonHeaders } = require('./status');
const { compileSelector, SelectorError } = require('./selector');
const { compileFieldSelector } = require('./field-selector');
const { asPartial, API_VERSION: PARTIAL_API_VERSION } = require('./metadata');
const { itemBody, fullItemBody } = require('./text');

// Snapshots of lists still being paged; the oldest are forgotten (their tokens then expire).
const MAX_SNAPSHOTS = 64;

const EXPIRED_CONTINUE =
  'The provided continue parameter is too old to display a consistent list result. You can start ' +
  'a new list without the continue parameter, or use the continue token in this response to ' +
  'retrieve the remainder of the results. Continuing with the provided token results in an ' +
  'inconsistent list - objects that were created, modified, or deleted between the time the ' +
  'first chunk was returned and now may show up in the list.';

/** The list snapshots of one simulator, by id. */
class Snapshots {
  constructor() {
    this.byId = new Map();
    this.nextId = 1;
  }

  add(snapshot) {
    const id = this.nextId++;
    this.byId.set(id, snapshot);
    if (this.byId.size > MAX_SNAPSHOTS) this.byId.delete(this.byId.keys().next().value);
    return id;
  }

  // Snapshots older than the compaction point can never be continued; drop them.
  prune(compactedRv) {
    for (const [id, s] of this.byId) if (s.rv < compactedRv) this.byId.delete(id);
  }
}

function encodeToken(id, offset, rv) {
  return Buffer.from(JSON.stringify({ v: 'sim/1', id, offset, rv })).toString('base64url');
}

function decodeToken(token) {
  try {
    const t = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (t && t.v === 'sim/1' && Number.isInteger(t.id) && Number.isInteger(t.offset)) return t;
  } catch {
    // Falls through to the 400 below.
  }
  return null;
}

function parseLimit(raw) {
  if (raw === null || raw === '') return 0;
  if (!/^\d+$/.test(raw)) return undefined;
  return Number(raw);
}

/**
 * Serves a list request (`GET /api/v1/pods?limit=…&continue=…&labelSelector=…`).
 * @param {object} sim the Simulator
 * @param {import('http').ServerResponse} res
 * @param {object} def resource description
 * @param {object} route from parseApiPath
 * @param {URLSearchParams} params
 * @param {boolean} gzip whether to gzip the body
 */
/** `partial`: as a PartialObjectMetadataList (sim/metadata.js). */
function sendList(sim, res, def, route, params, gzip, partial = false) {
  const limit = parseLimit(params.get('limit'));
  if (limit === undefined) {
    return sendStatus(
      res,
      400,
      `invalid value for limit: "${params.get('limit')}": not a number`,
      'BadRequest',
    );
  }
  const wanted = minimumResourceVersion(params);
  if (wanted.error)
    return sendStatus(res, wanted.error.code, wanted.error.message, 'Invalid', wanted.error.details);
  if (wanted.rv > Number(sim.store.resourceVersion) && !params.get('continue')) {
    return answerTooLarge(sim, res, wanted.rv, limit, () =>
      sendList(sim, res, def, route, params, gzip, partial),
    );
  }
  const store = sim.store;
  const snapshots = sim.listSnapshots || (sim.listSnapshots = new Snapshots());
  snapshots.prune(store.compactedRv);
  let snapshot;
  let offset = 0;
  const token = params.get('continue');
  if (token) {
    const t = decodeToken(token);
    if (!t) return sendStatus(res, 400, 'continue key is not valid: illegal base64 data', 'BadRequest');
    snapshot = snapshots.byId.get(t.id);
    if (!snapshot || snapshot.rv < store.compactedRv) {
      return sendStatus(res, 410, EXPIRED_CONTINUE, 'Expired');
    }
    offset = t.offset;
  } else {
    let matches;
    let fieldMatches;
    try {
      matches = compileSelector(params.get('labelSelector'));
      fieldMatches = compileFieldSelector(params.get('fieldSelector'), def);
    } catch (err) {
      if (err instanceof SelectorError) return sendStatus(res, 400, err.message, 'BadRequest');
      throw err;
    }
    // Each item's text without its opening brace (sim/text.js): items of built-in types carry
    // no kind/apiVersion on the real server (the list does); a CRD's items keep both.
    const items = store
      .snapshot(def.key, { namespace: route.namespace })
      .filter((obj) => matches(obj.metadata.labels) && fieldMatches(obj))
      .map((obj) =>
        partial
          ? Buffer.from(JSON.stringify(asPartial(obj)).slice(1))
          : def.builtin
            ? itemBody(obj)
            : fullItemBody(obj),
      );
    snapshot = { rv: Number(store.resourceVersion), items };
  }
  const end = limit > 0 ? Math.min(offset + limit, snapshot.items.length) : snapshot.items.length;
  const page = snapshot.items.slice(offset, end);
  const meta = { resourceVersion: String(snapshot.rv) };
  if (end < snapshot.items.length) {
    const id = token ? decodeToken(token).id : snapshots.add(snapshot);
    meta.continue = encodeToken(id, end, snapshot.rv);
    meta.remainingItemCount = snapshot.items.length - end;
  }
  sim.emit('list', { resource: def.key, limit, continued: Boolean(token), items: page.length });
  const [listKind, apiVersion] = partial
    ? ['PartialObjectMetadataList', PARTIAL_API_VERSION]
    : [def.listKind, def.apiVersion];
  const body = listBody(
    `{"kind":"${listKind}","apiVersion":"${apiVersion}","metadata":${JSON.stringify(meta)},"items":[`,
    page,
  );
  if (gzip) {
    const gz = zlib.gzipSync(body);
    res.writeHead(200, {
      ...commonHeaders(),
      'content-type': 'application/json',
      'content-encoding': 'gzip',
      'content-length': gz.length,
    });
    return res.end(gz);
  }
  return sendJson(res, 200, body, { 'content-type': 'application/json' });
}

// How long the API server's watch cache waits for a resourceVersion it has not reached
// (`blockTimeout` of waitUntilFreshAndBlock) before it answers ResourceVersionTooLarge.
const TOO_LARGE_WAIT_MS = 3000;

/**
 * The resourceVersion a list must not be older than (`resourceVersion` with no or a
 * `NotOlderThan`/`Exact` `resourceVersionMatch`; 0 when any will do), or the 422 a real API
 * server answers to the options.
 */
function minimumResourceVersion(params) {
  const raw = params.get('resourceVersion') ?? '';
  const match = params.get('resourceVersionMatch') ?? '';
  const invalid = (field, message) => ({
    error: {
      code: 422,
      message: `ListOptions.meta.k8s.io "" is invalid: ${field}: ${message}`,
      details: {
        group: 'meta.k8s.io',
        kind: 'ListOptions',
        causes: [{ reason: 'FieldValueInvalid', message, field }],
      },
    },
  });
  if (match && !['NotOlderThan', 'Exact'].includes(match))
    return invalid(
      'resourceVersionMatch',
      `Unsupported value: "${match}": supported values: "Exact", "NotOlderThan", ""`,
    );
  if (match && raw === '')
    return invalid(
      'resourceVersionMatch',
      'Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided',
    );
  if (raw === '') return { rv: 0 };
  if (!/^\d+$/.test(raw)) return invalid('resourceVersion', `Invalid value: "${raw}": must be a number`);
  return { rv: Number(raw) };
}

/**
 * A list from a resourceVersion ahead of the store's, as the API server answers it: with a
 * `limit` (served by etcd) at once, else after its cache waited up to 3 s for the version
 * (`retry` serves the list if the store reached it meanwhile): 504, reason Timeout, the cause
 * ResourceVersionTooLarge.
 */
function answerTooLarge(sim, res, rv, limit, retry) {
  const refuse = () => {
    const current = Number(sim.store.resourceVersion);
    const message = `Timeout: Too large resource version: ${rv}, current: ${current}`;
    const causes = [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }];
    // The cache asks to be retried after a second; etcd after none.
    return sendStatus(res, 504, message, 'Timeout', { causes, retryAfterSeconds: limit > 0 ? 0 : 1 });
  };
  if (limit > 0) return refuse();
  const timer = setTimeout(() => {
    sim.timers.delete(timer);
    if (res.destroyed || res.writableEnded) return undefined;
    return rv > Number(sim.store.resourceVersion) ? refuse() : retry();
  }, TOO_LARGE_WAIT_MS);
  sim.timers.add(timer);
  return undefined;
}

/** `head`, then each item as `{` + its body, comma-separated, then `]}`: one buffer, one copy of each. */
function listBody(head, bodies) {
  let length = Buffer.byteLength(head) + Math.max(0, bodies.length - 1) + 2;
  for (const b of bodies) length += 1 + b.length;
  const out = Buffer.allocUnsafe(length);
  let at = out.write(head);
  bodies.forEach((b, i) => {
    if (i) out[at++] = 0x2c; // ,
    out[at++] = 0x7b; // {
    at += b.copy(out, at);
  });
  out.write(']}', at);
  return out;
}

module.exports = { sendList, EXPIRED_CONTINUE };
