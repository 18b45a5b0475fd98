'use strict';
/**
 * API discovery for the `kube-watch` CLI: which resources a server serves, under which names
 * (plural, singular, kind, short names), in which versions (preferred first), and whether they
 * are namespaced. Aggregated discovery (`apidiscovery.k8s.io/v2`, one request each on `/api`
 * and `/apis`) where the server serves it, else the legacy documents (`/api`, `/api/v1`,
 * `/apis`, then `/apis/{group}/{version}` for every version).
 *
 * The result is cached per server URL for ten minutes under the user's cache directory, like
 * kubectl's `~/.kube/cache/discovery` (`KUBE_WATCH_CACHE_DIR` overrides the place). The cache
 * holds only names and scopes, never credentials.
 *
 * Requests are plain HTTPS GETs with node:https, using the kubeconfig's CA, client certificate
 * or token and `tls-server-name`. They do not go through `proxy-url` or `HTTPS_PROXY` (the
 * native watcher does): a CLI whose discovery fails falls back to its built-in table.
 */

const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');

const AGGREGATED_ACCEPT =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';
const CACHE_TTL_MS = 10 * 60 * 1000;
const REQUEST_TIMEOUT_MS = 10_000;
const MAX_BODY_BYTES = 32 * 1024 * 1024;

/** A discovery request that failed; `statusCode` (HTTP) or `code` (Node's TLS/network code) says why. */
class DiscoveryError extends Error {
  constructor(message, { statusCode, code } = {}) {
    super(message);
    this.name = 'DiscoveryError';
    this.statusCode = statusCode;
    this.code = code;
  }
}

/** The user's cache directory for kube-watch (overridable with KUBE_WATCH_CACHE_DIR). */
function cacheDir(env = process.env) {
  if (env.KUBE_WATCH_CACHE_DIR) return env.KUBE_WATCH_CACHE_DIR;
  const home = os.homedir();
  if (process.platform === 'win32')
    return path.join(env.LOCALAPPDATA || path.join(home, 'AppData', 'Local'), 'kube-watch', 'discovery');
  if (process.platform === 'darwin') return path.join(home, 'Library', 'Caches', 'kube-watch', 'discovery');
  return path.join(env.XDG_CACHE_HOME || path.join(home, '.cache'), 'kube-watch', 'discovery');
}

function cacheFile(dir, url) {
  const u = new URL(url);
  const readable = `${u.hostname}_${u.port || (u.protocol === 'https:' ? 443 : 80)}`.replace(
    /[^A-Za-z0-9_.-]/g,
    '_',
  );
  const hash = crypto.createHash('sha256').update(url).digest('hex').slice(0, 12);
  return path.join(dir, `${readable}-${hash}.json`);
}

/**
 * One GET returning `{ status, headers, body }` (body parsed as JSON).
 * @param {object} target `{ clusterDetails, credential }`
 * @param {string} pathname e.g. `/apis`
 */
function get(target, pathname, accept = 'application/json') {
  const { clusterDetails: cluster, credential } = target;
  const base = new URL(cluster.url);
  const url = new URL(base.pathname.replace(/\/+$/, '') + pathname, base);
  const headers = { accept, 'user-agent': 'kube-watch' };
  if (credential && credential.type === 'bearer token') headers.authorization = `Bearer ${credential.token}`;
  const options = { method: 'GET', headers, timeout: REQUEST_TIMEOUT_MS };
  const secure = url.protocol === 'https:';
  if (secure) {
    if (cluster.caData) options.ca = Buffer.from(cluster.caData, 'base64').toString('utf8');
    else if (cluster.caFile) options.ca = fs.readFileSync(cluster.caFile, 'utf8');
    if (credential && credential.type === 'x509 client certificate') {
      options.cert = credential.cert;
      options.key = credential.key;
    }
    options.rejectUnauthorized = !cluster.skipTLSVerify;
    // Like tls-server-name for the watcher: SNI and certificate checked against this name.
    if (cluster.tlsServerName) options.servername = cluster.tlsServerName;
  }
  return new Promise((resolve, reject) => {
    const req = (secure ? https : http).request(url, options, (res) => {
      const chunks = [];
      let size = 0;
      res.on('data', (c) => {
        size += c.length;
        if (size > MAX_BODY_BYTES)
          req.destroy(new DiscoveryError(`${pathname}: answer larger than ${MAX_BODY_BYTES} bytes`));
        else chunks.push(c);
      });
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) {
          reject(
            new DiscoveryError(`GET ${pathname}: HTTP ${res.statusCode}`, { statusCode: res.statusCode }),
          );
          return;
        }
        try {
          resolve({ headers: res.headers, body: JSON.parse(text) });
        } catch {
          reject(new DiscoveryError(`GET ${pathname}: the answer is not JSON`));
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () =>
      req.destroy(
        new DiscoveryError(`GET ${pathname}: no answer within ${REQUEST_TIMEOUT_MS / 1000}s`, {
          code: 'ETIMEDOUT',
        }),
      ),
    );
    req.on('error', (err) => {
      if (err instanceof DiscoveryError) reject(err);
      else reject(new DiscoveryError(`GET ${pathname}: ${err.code || err.message}`, { code: err.code }));
    });
    req.end();
  });
}

/** Normalised entry: `{ group, version, plural, singular, kind, shortNames, namespaced, verbs, preferred }`. */
function entry(group, version, preferred, r) {
  return {
    group,
    version,
    plural: r.plural,
    singular: (r.singular || r.kind || '').toLowerCase(),
    kind: r.kind || '',
    shortNames: Array.isArray(r.shortNames) ? r.shortNames.map(String) : [],
    namespaced: Boolean(r.namespaced),
    verbs: Array.isArray(r.verbs) ? r.verbs : [],
    preferred,
  };
}

function fromAggregated(doc) {
  const out = [];
  for (const item of doc.items || []) {
    const group = (item.metadata && item.metadata.name) || '';
    (item.versions || []).forEach((v, i) => {
      for (const r of v.resources || []) {
        out.push(
          entry(group, v.version, i === 0, {
            plural: r.resource,
            singular: r.singularResource,
            kind: r.responseKind && r.responseKind.kind,
            shortNames: r.shortNames,
            namespaced: r.scope === 'Namespaced',
            verbs: r.verbs,
          }),
        );
      }
    });
  }
  return out;
}

function fromResourceList(group, version, preferred, doc) {
  return (doc.resources || [])
    .filter((r) => r && typeof r.name === 'string' && !r.name.includes('/')) // not subresources
    .map((r) => entry(group, version, preferred, { ...r, plural: r.name, singular: r.singularName }));
}

const isAggregated = (res) =>
  res.body &&
  res.body.kind === 'APIGroupDiscoveryList' &&
  /apidiscovery\.k8s\.io/.test(res.headers['content-type'] || '');

/** Asks the server; returns `{ resources, aggregated }`. */
async function fetchResources(target) {
  const [core, apis] = await Promise.all([
    get(target, '/api', AGGREGATED_ACCEPT),
    get(target, '/apis', AGGREGATED_ACCEPT),
  ]);
  if (isAggregated(core) && isAggregated(apis)) {
    return { resources: [...fromAggregated(core.body), ...fromAggregated(apis.body)], aggregated: true };
  }
  const lists = [];
  const coreVersions = (core.body && core.body.versions) || ['v1'];
  for (const [i, v] of coreVersions.entries()) lists.push(['', v, i === 0]);
  for (const g of (apis.body && apis.body.groups) || []) {
    const preferred = g.preferredVersion && g.preferredVersion.version;
    for (const v of g.versions || []) lists.push([g.name, v.version, v.version === preferred]);
  }
  const docs = await Promise.all(
    lists.map(([group, version]) =>
      get(target, group ? `/apis/${group}/${version}` : `/api/${version}`).catch(() => null),
    ),
  );
  const resources = [];
  lists.forEach(([group, version, preferred], i) => {
    if (docs[i]) resources.push(...fromResourceList(group, version, preferred, docs[i].body));
  });
  return { resources, aggregated: false };
}

/**
 * The server's resources, from the cache when fresh.
 * @param {object} target `{ clusterDetails, credential }`
 * @param {{ dir?: string | null, refresh?: boolean, now?: number }} [options] `dir: null`: no cache
 * @returns {Promise<{ resources: object[], aggregated: boolean, fromCache: boolean }>}
 */
async function discover(target, { dir = cacheDir(), refresh = false, now = Date.now() } = {}) {
  const file = dir ? cacheFile(dir, target.clusterDetails.url) : null;
  if (file && !refresh) {
    try {
      const cached = JSON.parse(fs.readFileSync(file, 'utf8'));
      if (cached.url === target.clusterDetails.url && now - cached.fetchedAt < CACHE_TTL_MS) {
        return { resources: cached.resources, aggregated: cached.aggregated, fromCache: true };
      }
    } catch {
      // No cache, or an unreadable one: ask the server.
    }
  }
  const fresh = await fetchResources(target);
  if (!file) return { ...fresh, fromCache: false };
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ url: target.clusterDetails.url, fetchedAt: now, ...fresh }), {
      mode: 0o600,
    });
    fs.renameSync(tmp, file);
  } catch {
    // A cache that cannot be written only costs a later request.
  }
  return { ...fresh, fromCache: false };
}

module.exports = { discover, cacheDir, cacheFile, DiscoveryError, AGGREGATED_ACCEPT, CACHE_TTL_MS };
