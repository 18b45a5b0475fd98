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
 * Requests go through the native addon like the watch itself: the same pooled connections, CA,
 * client certificate or token, `tls-server-name` and proxy (`proxy-url`, `HTTPS_PROXY`, …). A CLI
 * whose discovery fails falls back to its built-in table.
 */

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const native = require('../lib/native');
const { toSpec } = require('../lib/spec');

const AGGREGATED_ACCEPT =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';
const CACHE_TTL_MS = 10 * 60 * 1000;
const REQUEST_TIMEOUT_MS = 10_000;
const MAX_BODY_BYTES = 32 * 1024 * 1024;

/**
 * A discovery request that failed; `statusCode` (HTTP) or `code` (Node's TLS/network code) says
 * why. `unexpectedDocument`: the server answered 200, but not with the discovery document asked
 * for (a proxy or another service at the cluster's URL), which the CLI tells the user about.
 */
class DiscoveryError extends Error {
  constructor(message, { statusCode, code, unexpectedDocument = false } = {}) {
    super(message);
    this.name = 'DiscoveryError';
    this.statusCode = statusCode;
    this.code = code;
    this.unexpectedDocument = unexpectedDocument;
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

/** The URL a discovery request went to, for messages: the cluster URL (without any user info) and `pathname`. */
function urlOf(target, pathname) {
  try {
    const url = new URL(target.clusterDetails.url);
    url.username = '';
    url.password = '';
    url.search = '';
    url.hash = '';
    return `${url.href.replace(/\/+$/, '')}${pathname}`;
  } catch {
    return pathname;
  }
}

/** `text` for a message: at most 40 characters, quoted unless plainly a name. */
function shown(text) {
  const cut = text.length > 40 ? `${text.slice(0, 40)}…` : text;
  return /^[\w./:@$-]+$/.test(cut) ? cut : JSON.stringify(cut);
}

/** What a parsed JSON body is, for messages: "a JSON object", "a JSON array of 3 items", … */
function describeJson(body) {
  if (Array.isArray(body)) return `a JSON array of ${body.length} item${body.length === 1 ? '' : 's'}`;
  if (body === null) return 'JSON null';
  return `a JSON ${typeof body}`;
}

const isObject = (body) => body !== null && typeof body === 'object' && !Array.isArray(body);

/** The list each legacy discovery document carries. */
const DOCUMENT_LISTS = { APIVersions: 'versions', APIGroupList: 'groups', APIResourceList: 'resources' };

/**
 * `body` is a `kind` document: an object with that kind (servers always send it; a document
 * without one is taken as meant) and its list.
 */
const isDocument = (body, kind) =>
  isObject(body) &&
  (body.kind === undefined || body.kind === kind) &&
  Array.isArray(body[DOCUMENT_LISTS[kind]]);

/** An aggregated discovery list (`apidiscovery.k8s.io/v2`), whatever the content type says. */
const isAggregatedDocument = (body) =>
  isObject(body) && body.kind === 'APIGroupDiscoveryList' && Array.isArray(body.items);

/**
 * `res` when its body is a `kind` document (or, with `aggregatedToo`, an aggregated list), else a
 * DiscoveryError saying which URL answered what instead.
 */
function expectDocument(res, kind, { aggregatedToo = false } = {}) {
  if (isDocument(res.body, kind) || (aggregatedToo && isAggregatedDocument(res.body))) return res;
  let what = describeJson(res.body);
  if (isObject(res.body)) {
    const { kind: found } = res.body;
    const keys = Object.keys(res.body);
    const kindText =
      found === undefined ? 'none' : typeof found === 'string' ? shown(found) : describeJson(found);
    const keyText = keys.length
      ? keys.slice(0, 8).map(shown).join(', ') + (keys.length > 8 ? `, … (${keys.length} in all)` : '')
      : 'none';
    what += ` that is not an ${kind} document (kind: ${kindText}, keys: ${keyText})`;
  } else {
    what += ` that is not an ${kind} document`;
  }
  throw new DiscoveryError(`GET ${res.url} answered 200 with ${what}`, { unexpectedDocument: true });
}

/**
 * One GET returning `{ headers, body, url }` (body parsed as JSON), through the native addon: the same
 * pooled connections, TLS, proxy (`proxyUrl`, `HTTPS_PROXY`…) and `tlsServerName` as the watch.
 * @param {object} target `{ clusterDetails, credential }`
 * @param {string} pathname e.g. `/apis`
 */
async function get(target, pathname, accept = 'application/json') {
  // The resource fields are the spec's shape only: a fetch uses the cluster and credential.
  const spec = toSpec({ ...target, group: '', apiVersion: 'v1', plural: 'discovery' }, {});
  let answer;
  try {
    answer = await withTimeout(
      native.fetchText(spec, pathname, accept, MAX_BODY_BYTES),
      REQUEST_TIMEOUT_MS,
      pathname,
    );
  } catch (err) {
    if (err instanceof DiscoveryError) throw err;
    // The native reason (credentials already masked) says what failed: TLS, connect, proxy.
    throw new DiscoveryError(err.message, { code: err.message });
  }
  if (answer.status !== 200) {
    throw new DiscoveryError(`GET ${pathname}: HTTP ${answer.status}`, { statusCode: answer.status });
  }
  const contentType = answer.contentType ?? '';
  const url = urlOf(target, pathname);
  try {
    return { headers: { 'content-type': contentType }, body: JSON.parse(answer.body), url };
  } catch {
    const type = contentType.split(';')[0].trim();
    throw new DiscoveryError(
      `GET ${url} answered 200 with ${type ? `a ${shown(type)} body` : 'a body without a content type'} that is not JSON`,
      { unexpectedDocument: true },
    );
  }
}

/** `promise`, or a DiscoveryError after `ms` (the native request is left to finish on its own). */
function withTimeout(promise, ms, pathname) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new DiscoveryError(`GET ${pathname}: no answer within ${ms / 1000}s`, {
            code: 'ETIMEDOUT',
          }),
        ),
      ms,
    );
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
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

/**
 * The values of `promises`, or, once all have settled, the first one's rejection in list order
 * (not in time): a message then names the same URL every time.
 */
async function allInOrder(promises) {
  return (await Promise.allSettled(promises)).map((settled) => {
    if (settled.status === 'rejected') throw settled.reason;
    return settled.value;
  });
}

/**
 * Asks the server; returns `{ resources, aggregated }`. A document of the wrong kind (on `/api`,
 * `/apis` or a group version) makes the whole answer untrustworthy: it throws, and the CLI falls
 * back to its table. A group version that fails (a 503 from an aggregated API server) is left out.
 */
async function fetchResources(target) {
  const [core, apis] = await allInOrder([
    get(target, '/api', AGGREGATED_ACCEPT).then((res) =>
      expectDocument(res, 'APIVersions', { aggregatedToo: true }),
    ),
    get(target, '/apis', AGGREGATED_ACCEPT).then((res) =>
      expectDocument(res, 'APIGroupList', { aggregatedToo: true }),
    ),
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
  const docs = await allInOrder(
    lists.map(([group, version]) =>
      get(target, group ? `/apis/${group}/${version}` : `/api/${version}`).then(
        (res) => expectDocument(res, 'APIResourceList'),
        (err) => {
          if (err.unexpectedDocument) throw err;
          return null;
        },
      ),
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
