'use strict';
/**
 * Turns a kubeconfig file (or, failing that, the pod's service account) into the
 * `{ clusterDetails, credential }` pair that `NativeKubernetesWatcher#watchResource` takes.
 *
 * Which file:
 *  1. `options.path` when given (it must exist);
 *  2. else every existing file named in `KUBECONFIG` (a `:`-separated list, `;` on Windows),
 *     merged the way kubectl merges them: the first file that sets `current-context` wins,
 *     and for clusters, users and contexts the first file that defines a name wins
 *     (entries are never merged field by field);
 *  3. else `~/.kube/config`;
 *  4. else, inside a pod (`KUBERNETES_SERVICE_HOST` set and a service-account token
 *     mounted), the in-cluster service account.
 *
 * Relative file paths in an entry (`certificate-authority`, `client-certificate`,
 * `client-key`, `tokenFile`) are resolved against the directory of the file that defined
 * that entry, as kubectl does.
 *
 * Credentials: a bearer token (`token`, `tokenFile`), a client certificate (inline `-data`
 * or files), an exec credential plugin (`exec`, see lib/exec-credential.js), or none
 * (anonymous, allowed by the watcher only for a local `kubectl proxy`). Auth providers,
 * basic auth and impersonation are refused with a `KubeconfigError` that says which context
 * or user asked for them: a watch that silently ignored them would talk as the wrong identity.
 * A cluster's `proxy-url` and `tls-server-name` become the extra `clusterDetails` fields
 * `proxyUrl` and `tlsServerName`, which the native watcher applies.
 *
 * Synchronous and asynchronous parts: `loadKubeconfig` itself is synchronous, so an exec
 * plugin runs once (with `spawnSync`) to produce the first `credential`. The returned
 * `getCredential()` is asynchronous and is what long-running users (the informer, the CLI's
 * reconnects) call before each connection: it returns the plugin's cached credential until
 * it is about to expire and runs the plugin again (without blocking) after that, or at once
 * with `{ forceRefresh: true }` after the server answered 401; it re-reads `tokenFile` and
 * the in-cluster token (which the kubelet rotates) on every call.
 *
 * Error messages name files, contexts, clusters, users and fields, never the value of a
 * token, key, password or certificate (YAML syntax errors are reported by line and column
 * only, because the YAML parser's own message quotes the offending source line).
 */

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const YAML = require('yaml');
const values = require('./kubeconfig-values');
const { KubeconfigError, scalar } = values;
const { credentialFor, staticSource, tokenFileSource } = require('./kubeconfig-credentials');

/** Where Kubernetes mounts a pod's service-account token, CA and namespace. */
const DEFAULT_SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * @param {object} [options]
 * @param {string} [options.path] kubeconfig file to read (overrides KUBECONFIG and ~/.kube/config)
 * @param {string} [options.context] context to use instead of `current-context`
 * @param {Record<string, string | undefined>} [options.env] environment (default `process.env`)
 * @param {string} [options.homedir] home directory (default `os.homedir()`)
 * @param {string} [options.serviceAccountDir] where the in-cluster token, ca.crt and namespace live
 * @param {boolean} [options.terminal] whether an exec plugin may use the terminal (default:
 *   whether standard input is one)
 * @param {number} [options.execTimeoutMs] how long an exec plugin may run (default 60 s, 5 min
 *   when it has the terminal)
 * @returns {{ clusterDetails: object, credential: object,
 *   getCredential: (options?: { forceRefresh?: boolean }) => Promise<object>, namespace: string,
 *   contextName: string, source: 'kubeconfig' | 'in-cluster' }}
 * @throws {KubeconfigError}
 */
function loadKubeconfig(options = {}) {
  const {
    path: explicitPath,
    context: requestedContext,
    env = process.env,
    homedir = os.homedir(),
    serviceAccountDir = DEFAULT_SERVICE_ACCOUNT_DIR,
    terminal = Boolean(process.stdin && process.stdin.isTTY),
    execTimeoutMs,
  } = options;
  const runtime = { env, terminal, execTimeoutMs };

  let candidates;
  if (explicitPath) {
    const file = path.resolve(explicitPath);
    if (!values.isFile(file)) throw new KubeconfigError(`kubeconfig ${file} does not exist or is not a file`);
    candidates = [file];
  } else if (env.KUBECONFIG) {
    candidates = env.KUBECONFIG.split(path.delimiter)
      .filter(Boolean)
      .map((p) => path.resolve(p));
  } else {
    candidates = [path.join(homedir, '.kube', 'config')];
  }

  const files = candidates.filter(values.isFile);
  if (files.length === 0) {
    const looked =
      env.KUBECONFIG && !explicitPath
        ? `KUBECONFIG (${candidates.join(', ') || 'empty'})`
        : candidates.join(', ');
    const inCluster = loadInCluster(env, serviceAccountDir);
    if (inCluster.result) {
      if (requestedContext) {
        throw new KubeconfigError(
          `context "${requestedContext}" was requested, but no kubeconfig file exists (looked at ${looked}); ` +
            'only the in-cluster service account is available',
        );
      }
      return inCluster.result;
    }
    throw new KubeconfigError(
      `no kubeconfig found: looked at ${looked}, and in-cluster configuration is not available ` +
        `(${inCluster.reason}); pass --kubeconfig PATH or set KUBECONFIG`,
      'NoKubeconfig',
    );
  }

  const config = mergeFiles(files);
  return resolveContext(config, requestedContext, runtime);
}

// ---------------------------------------------------------------------------------------
// Reading and merging files

/** Parses each file and merges them first-wins (see the module comment). */
function mergeFiles(files) {
  const config = {
    files,
    currentContext: '',
    currentContextFile: '',
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
  };
  for (const file of files) {
    const doc = parseFile(file);
    const current = scalar(doc['current-context']);
    if (!config.currentContext && current) {
      config.currentContext = current;
      config.currentContextFile = file;
    }
    addNamed(config.clusters, doc, 'clusters', 'cluster', file);
    addNamed(config.users, doc, 'users', 'user', file);
    addNamed(config.contexts, doc, 'contexts', 'context', file);
  }
  return config;
}

function parseFile(file) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new KubeconfigError(`cannot read kubeconfig ${file}: ${err.code || err.message}`);
  }
  let doc;
  try {
    // The failsafe schema keeps every scalar a string, as kubectl's typed Go structs do:
    // a token such as `0x1F` or `1e3` must not turn into a number.
    doc = YAML.parse(text, { schema: 'failsafe' });
  } catch (err) {
    // The parser's message quotes the offending line, which may hold a token: report
    // only the error code and the position.
    const where = err.linePos ? ` at line ${err.linePos[0].line}, column ${err.linePos[0].col}` : '';
    throw new KubeconfigError(`kubeconfig ${file} is not valid YAML (${err.code || 'parse error'}${where})`);
  }
  if (doc === null || doc === undefined || doc === '') return {};
  if (!values.isMapping(doc)) throw new KubeconfigError(`kubeconfig ${file} is not a YAML mapping`);
  return doc;
}

/** Adds `doc[listKey]` entries `{ name, [itemKey]: {...} }` to `map`, first wins. */
function addNamed(map, doc, listKey, itemKey, file) {
  const list = doc[listKey];
  if (list === undefined || values.isNull(list)) return;
  if (!Array.isArray(list)) throw new KubeconfigError(`kubeconfig ${file}: "${listKey}" must be a list`);
  list.forEach((entry, i) => {
    const name = values.isMapping(entry) ? scalar(entry.name) : '';
    if (!name) throw new KubeconfigError(`kubeconfig ${file}: ${listKey}[${i}] has no name`);
    const body = entry[itemKey];
    if (body !== undefined && !values.isNull(body) && !values.isMapping(body)) {
      throw new KubeconfigError(`kubeconfig ${file}: ${itemKey} "${name}" must be a mapping`);
    }
    if (!map.has(name))
      map.set(name, { name, body: values.isMapping(body) ? body : {}, file, dir: path.dirname(file) });
  });
}

// ---------------------------------------------------------------------------------------
// From a context to watch parameters

function resolveContext(config, requestedContext, runtime) {
  const where =
    config.files.length === 1 ? config.files[0] : `the merged kubeconfig (${config.files.join(', ')})`;
  const available = [...config.contexts.keys()];
  const availableText = available.length
    ? `available contexts: ${available.join(', ')}`
    : 'it defines no contexts';

  const contextName = requestedContext || config.currentContext;
  if (!contextName) {
    throw new KubeconfigError(
      `${where} has no current-context; choose one with --context NAME (${availableText})`,
    );
  }
  const ctx = config.contexts.get(contextName);
  if (!ctx) {
    const how = requestedContext ? '' : ` (the current-context of ${config.currentContextFile})`;
    throw new KubeconfigError(
      `context "${contextName}"${how} not found in ${where}; ${availableText}`,
      'ContextNotFound',
    );
  }

  const clusterName = scalar(ctx.body.cluster);
  if (!clusterName) throw new KubeconfigError(`context "${contextName}" in ${ctx.file} names no cluster`);
  const cluster = config.clusters.get(clusterName);
  if (!cluster) {
    throw new KubeconfigError(
      `context "${contextName}" refers to cluster "${clusterName}", which ${where} does not define`,
    );
  }
  const clusterDetails = clusterDetailsFor(contextName, cluster);

  const userName = scalar(ctx.body.user);
  let source = staticSource({ type: 'anonymous' });
  if (userName) {
    const user = config.users.get(userName);
    if (!user) {
      throw new KubeconfigError(
        `context "${contextName}" refers to user "${userName}", which ${where} does not define`,
      );
    }
    source = credentialFor(contextName, user, { cluster, clusterDetails }, runtime);
  }
  const credential = source.initial();
  if (credential.type === 'anonymous' && values.isLocalPlainHttp(clusterDetails.url)) {
    // kubectl proxy: the proxy adds the credentials, so no credential here is expected.
    clusterDetails.authMetadata['kubernetes.io/auth-provider'] = 'localKubectlProxy';
  }

  return {
    clusterDetails,
    credential,
    getCredential: source.getCredential,
    namespace: scalar(ctx.body.namespace) || 'default',
    contextName,
    source: 'kubeconfig',
  };
}

function clusterDetailsFor(contextName, { name, body, file, dir }) {
  const what = `context "${contextName}": cluster "${name}"`;
  const server = scalar(body.server);
  if (!server) throw new KubeconfigError(`${what} in ${file} has no server`);
  let parsed;
  try {
    parsed = new URL(server);
  } catch {
    throw new KubeconfigError(`${what}: server "${server}" is not a URL`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw new KubeconfigError(`${what}: server "${server}" must be an http:// or https:// URL`);
  }
  if (parsed.username || parsed.password) {
    throw new KubeconfigError(
      `${what}: server URL carries credentials (user:password@host), which is not supported`,
    );
  }

  const details = { name, url: server.replace(/\/+$/, ''), authMetadata: {} };
  const caData = scalar(body['certificate-authority-data']);
  const caPath = scalar(body['certificate-authority']);
  if (caData) {
    // kubectl's rule: inline data wins over a file when both are given.
    if (!values.decodeBase64(caData).includes('-----BEGIN')) {
      throw new KubeconfigError(`${what}: certificate-authority-data is not base64 of a PEM certificate`);
    }
    details.caData = caData;
  } else if (caPath) {
    const caFile = path.resolve(dir, caPath);
    if (!values.isFile(caFile))
      throw new KubeconfigError(`${what}: certificate-authority file ${caFile} does not exist`);
    details.caFile = caFile;
  }
  if (values.bool(body['insecure-skip-tls-verify'], `${what}: insecure-skip-tls-verify`))
    details.skipTLSVerify = true;
  const proxyUrl = scalar(body['proxy-url']);
  if (proxyUrl) {
    let proxy;
    try {
      proxy = new URL(proxyUrl);
    } catch {
      // Not quoted: a proxy URL may carry a password.
      throw new KubeconfigError(`${what}: proxy-url is not a URL`);
    }
    if (proxy.protocol === 'https:') {
      throw new KubeconfigError(
        `${what}: proxy-url is an https:// proxy (TLS to the proxy itself), which the watcher does not support; ` +
          'use http:// (the tunnel to the API server is TLS end to end either way) or socks5://',
      );
    }
    if (!['http:', 'socks5:'].includes(proxy.protocol)) {
      throw new KubeconfigError(
        `${what}: proxy-url must be an http:// or socks5:// URL (it is ${proxy.protocol}//…)`,
      );
    }
    details.proxyUrl = proxyUrl;
  }
  const tlsServerName = scalar(body['tls-server-name']);
  if (tlsServerName) details.tlsServerName = tlsServerName;
  return details;
}

// ---------------------------------------------------------------------------------------
// In-cluster

/** Returns `{ result }` when running in a pod with a mounted token, else `{ reason }`. */
function loadInCluster(env, serviceAccountDir) {
  const host = env.KUBERNETES_SERVICE_HOST;
  if (!host) return { reason: 'KUBERNETES_SERVICE_HOST is not set' };
  const tokenPath = path.join(serviceAccountDir, 'token');
  if (!values.isFile(tokenPath)) return { reason: `${tokenPath} does not exist` };
  const token = values.readText(tokenPath, 'in-cluster service account token').trim();
  if (!token) throw new KubeconfigError(`in-cluster service account token ${tokenPath} is empty`);

  let namespace = 'default';
  const nsPath = path.join(serviceAccountDir, 'namespace');
  if (values.isFile(nsPath)) namespace = values.readText(nsPath, 'in-cluster namespace').trim() || 'default';

  const source = tokenFileSource(tokenPath, 'in-cluster service account token');
  const port = env.KUBERNETES_SERVICE_PORT || '443';
  const hostPart = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return {
    result: {
      clusterDetails: {
        name: 'in-cluster',
        url: `https://${hostPart}:${port}`,
        authMetadata: { 'kubernetes.io/auth-provider': 'serviceAccount' },
        caFile: path.join(serviceAccountDir, 'ca.crt'),
      },
      credential: { type: 'bearer token', token },
      getCredential: source.getCredential,
      namespace,
      contextName: 'in-cluster',
      source: 'in-cluster',
    },
  };
}

module.exports = { loadKubeconfig, KubeconfigError, DEFAULT_SERVICE_ACCOUNT_DIR };
