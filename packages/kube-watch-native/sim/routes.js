'use strict';

// URL routing of the read-only API surface: discovery, list, get, and handing watches over.

const { resourceKey } = require('./resources');
const { sendJson, sendStatus, sendPageNotFound } = require('./status');
const { discovery } = require('./discovery');
const { parseBool } = require('./watch');
const { sendList } = require('./list');
const { serveLog, isLogRoute } = require('./logs');

const VERSION = {
  major: '1',
  minor: '31',
  gitVersion: 'v1.31.0-sim',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2024-08-13T00:00:00Z',
  goVersion: 'go1.22.5',
  compiler: 'gc',
  platform: 'linux/amd64',
};

const NOT_FOUND = 'the server could not find the requested resource';

/**
 * Parses a path (without any cluster path prefix) into a route, or null for a path the API
 * server does not serve.
 * @param {string} pathname percent-encoded path
 * @returns {object|null}
 */
function parseApiPath(pathname) {
  if (pathname === '/version') return { type: 'version' };
  if (pathname === '/healthz' || pathname === '/livez' || pathname === '/readyz') return { type: 'health' };
  let segs;
  try {
    segs = pathname.split('/').slice(1).map(decodeURIComponent);
  } catch {
    return null;
  }
  if (pathname[0] !== '/' || segs.some((s) => s === '')) return null;
  let group;
  let version;
  let rest;
  if (segs[0] === 'api') {
    if (segs.length === 1) return { type: 'apiVersions' };
    group = '';
    version = segs[1];
    rest = segs.slice(2);
  } else if (segs[0] === 'apis') {
    if (segs.length === 1) return { type: 'apiGroups' };
    if (segs.length === 2) return { type: 'apiGroup', group: segs[1] };
    group = segs[1];
    version = segs[2];
    rest = segs.slice(3);
  } else {
    return null;
  }
  // The deprecated `/watch/` path form is still served by real clusters.
  const watchPath = rest[0] === 'watch';
  if (watchPath) rest = rest.slice(1);
  const base = { type: 'resource', group, version, watchPath };
  if (rest.length === 0) return watchPath ? null : { type: 'resources', group, version };
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    // Of the subresources, a pod's log (sim/logs.js).
    if (rest.length === 5 && rest[4] === 'log' && !watchPath)
      return { ...base, namespace: rest[1], plural: rest[2], name: rest[3], subresource: 'log' };
    if (rest.length > 4) return null;
    return { ...base, namespace: rest[1], plural: rest[2], name: rest[3] };
  }
  if (rest.length > 2) return null;
  return { ...base, plural: rest[0], name: rest[1] };
}

function acceptsGzip(header) {
  if (!header) return false;
  return String(header)
    .split(',')
    .some((part) => {
      const [coding, ...params] = part.trim().split(';');
      const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
      return (coding.trim() === 'gzip' || coding.trim() === '*') && !(q && Number(q.slice(2)) === 0);
    });
}

/**
 * The resource description for a route, or null when the real server would answer 404.
 * @param {import('./store').Store} store
 * @param {object} route from parseApiPath
 * @returns {object|null}
 */
function lookupResource(store, route) {
  let def;
  try {
    def = store.resource(resourceKey(route.group, route.version, route.plural));
  } catch {
    return null;
  }
  if (!def) return null;
  // Namespaced paths exist only for namespaced types, and namespaced objects are only
  // addressable by name inside their namespace.
  if (route.namespace !== undefined && !def.namespaced) return null;
  if (route.name !== undefined && def.namespaced && route.namespace === undefined) return null;
  return def;
}

function sendNotFound(res) {
  sendStatus(res, 404, NOT_FOUND, 'NotFound', {});
}

/**
 * The 404 for a resource path with no resource: a Status when its group/version is served
 * (an unknown resource), the plain-text `404 page not found` of the API server's fallback
 * handler when it is not (a CRD not installed yet).
 */
function sendResourceNotFound(store, res, r) {
  const served =
    (r.group === '' && r.version === 'v1') ||
    [...store.defs.values()].some((d) => d.group === r.group && d.version === r.version);
  return served ? sendNotFound(res) : sendPageNotFound(res);
}

/**
 * Whether a request is a watch (and so subject to faults).
 * @param {import('http').IncomingMessage} req
 * @param {object|null} r from parseApiPath
 * @param {URLSearchParams} params
 * @returns {boolean}
 */
function isWatchRequest(req, r, params) {
  return Boolean(
    r &&
    r.type === 'resource' &&
    (req.method === 'GET' || req.method === 'HEAD') &&
    (r.watchPath || parseBool(params.get('watch')) === true),
  );
}

/**
 * Serves one authenticated request that is not a watch.
 * @param {object} sim the Simulator
 * @param {import('http').IncomingMessage} req
 * @param {import('http').ServerResponse} res
 * @param {object|null} r from parseApiPath (null: a path the API server does not serve)
 * @param {URLSearchParams} params
 */
function route(sim, req, res, r, params) {
  if (!r) return sendNotFound(res);
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    return sendStatus(
      res,
      405,
      'the server does not allow this method on the requested resource',
      'MethodNotAllowed',
      {},
    );
  }
  switch (r.type) {
    case 'version':
      return sendJson(res, 200, VERSION);
    case 'health':
      return sendJson(res, 200, 'ok');
    case 'apiVersions':
    case 'apiGroups':
    case 'apiGroup':
    case 'resources': {
      const found = discovery(sim, r, req);
      return found ? sendJson(res, 200, found.body, found.headers) : sendNotFound(res);
    }
    default:
      break;
  }
  if (isLogRoute(r)) return serveLog(sim, res, r, params);
  const def = lookupResource(sim.store, r);
  if (!def) return sendResourceNotFound(sim.store, res, r);
  if (r.name === undefined) {
    const partial = sim.partialAnswer(req, res, 'PartialObjectMetadataList');
    if (partial === null) return undefined;
    return sendList(
      sim,
      res,
      def,
      r,
      params,
      Boolean(sim.options.gzip) && acceptsGzip(req.headers['accept-encoding']),
      partial,
    );
  }
  const obj = sim.store.get(def.key, r.namespace, r.name);
  if (!obj)
    return sendStatus(res, 404, `${def.plural} "${r.name}" not found`, 'NotFound', {
      name: r.name,
      kind: def.plural,
    });
  return sendJson(res, 200, obj);
}

/** Whether the request is a list (a GET of a known collection, not a watch). */
function isListRequest(req, r, params, store) {
  return Boolean(
    r &&
    r.type === 'resource' &&
    r.name === undefined &&
    !isWatchRequest(req, r, params) &&
    lookupResource(store, r),
  );
}

module.exports = {
  route,
  isWatchRequest,
  isListRequest,
  parseApiPath,
  lookupResource,
  acceptsGzip,
  sendNotFound,
  sendResourceNotFound,
  VERSION,
};
