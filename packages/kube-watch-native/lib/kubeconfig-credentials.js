'use strict';
// A kubeconfig user as the credential source ./kubeconfig.js hands out: a static token or
// client certificate, a token file read again on every call, or an exec credential plugin
// (./exec-credential.js) with the cluster's exec extension. Auth providers, basic auth and
// impersonation are refused by name. Each source has `initial()` (synchronous, for
// `credential`) and `getCredential()`.

const fs = require('node:fs');
const path = require('node:path');
const YAML = require('yaml');
const { parseExecConfig, ExecPlugin, EXEC_EXTENSION } = require('./exec-credential');
const {
  KubeconfigError,
  readText,
  isMapping,
  isNull,
  scalar,
  bool,
  pemFrom,
} = require('./kubeconfig-values');

function credentialFor(contextName, { name, body, dir }, cluster, runtime) {
  const what = `context "${contextName}": user "${name}"`;
  const hasExec = body.exec !== undefined && !isNull(body.exec);
  if (hasExec && !isMapping(body.exec)) throw new KubeconfigError(`${what}: exec must be a mapping`);

  if (body['auth-provider'] !== undefined && !isNull(body['auth-provider'])) {
    const provider = isMapping(body['auth-provider']) ? scalar(body['auth-provider'].name) : '';
    throw new KubeconfigError(
      `${what} uses the "${provider || 'unnamed'}" auth-provider, which kube-watch-native does not support; ` +
        'use a static token or client certificate, or run `kubectl proxy`',
    );
  }
  if (scalar(body.username) || scalar(body.password)) {
    throw new KubeconfigError(
      `${what} uses basic authentication (username/password), which kube-watch-native does not support`,
    );
  }
  for (const field of ['as', 'as-uid', 'as-groups', 'as-user-extra']) {
    const v = body[field];
    const set = Array.isArray(v) ? v.length > 0 : isMapping(v) ? Object.keys(v).length > 0 : scalar(v) !== '';
    if (set) {
      throw new KubeconfigError(
        `${what} sets ${field} (impersonation), which kube-watch-native does not support`,
      );
    }
  }

  const token = scalar(body.token);
  const tokenFile = scalar(body.tokenFile);

  const cert = pemFrom(body, 'client-certificate', dir, what);
  const key = pemFrom(body, 'client-key', dir, what);
  if (cert && !key)
    throw new KubeconfigError(
      `${what} has a client certificate but no client key (client-key or client-key-data)`,
    );
  if (key && !cert)
    throw new KubeconfigError(
      `${what} has a client key but no client certificate (client-certificate or client-certificate-data)`,
    );

  if ((token || tokenFile) && cert) {
    throw new KubeconfigError(
      `${what} sets both a bearer token and a client certificate; kube-watch-native sends one credential, ` +
        'so keep only the one this cluster should see',
    );
  }
  if (hasExec) {
    if (token || tokenFile || cert) {
      throw new KubeconfigError(
        `${what} sets both an exec plugin and a ${cert ? 'client certificate' : 'token'}; ` +
          'kube-watch-native sends one credential, so keep only the one this cluster should see',
      );
    }
    return execSource(contextName, what, body.exec, dir, cluster, runtime);
  }
  if (token) return staticSource({ type: 'bearer token', token });
  if (tokenFile) {
    const file = path.resolve(dir, tokenFile);
    return tokenFileSource(file, `${what}: tokenFile`);
  }
  if (cert) return staticSource({ type: 'x509 client certificate', cert, key });
  return staticSource({ type: 'anonymous' });
}

/** A credential that never changes. */
function staticSource(credential) {
  return { initial: () => credential, getCredential: async () => credential };
}

/** A token read from a file now and again on every `getCredential()` (tokens get rotated). */
function tokenFileSource(file, what) {
  const check = (text) => {
    const token = text.trim();
    if (!token) throw new KubeconfigError(`${what} ${file} is empty`);
    return { type: 'bearer token', token };
  };
  return {
    initial: () => check(readText(file, what)),
    getCredential: async () => {
      let text;
      try {
        text = await fs.promises.readFile(file, 'utf8');
      } catch (err) {
        throw new KubeconfigError(`${what} ${file} cannot be read (${err.code || err.message})`);
      }
      return check(text);
    },
  };
}

/** An exec credential plugin: run once synchronously now, then cached and re-run as needed. */
function execSource(contextName, what, exec, dir, { cluster, clusterDetails }, runtime) {
  const config = parseExecConfig(exec, {
    what,
    dir,
    bool,
    makeError: (message) => new KubeconfigError(message),
  });
  const plugin = new ExecPlugin(config, {
    contextName,
    cluster: config.provideClusterInfo ? execClusterInfo(cluster, clusterDetails) : undefined,
    env: runtime.env,
    terminal: runtime.terminal,
    timeoutMs: runtime.execTimeoutMs,
    makeError: (message) => new KubeconfigError(message),
  });
  return {
    initial: () => plugin.getSync(),
    getCredential: (options) => plugin.get(options || {}),
  };
}

/**
 * `spec.cluster` of KUBERNETES_EXEC_INFO, as client-go builds it: CA as base64 (read from the
 * file when the kubeconfig names one), and the cluster's exec extension as `config`.
 */
function execClusterInfo({ name, body, file }, details) {
  const info = { server: details.url };
  if (details.tlsServerName) info['tls-server-name'] = details.tlsServerName;
  if (details.skipTLSVerify) info['insecure-skip-tls-verify'] = true;
  if (details.caData) info['certificate-authority-data'] = details.caData;
  else if (details.caFile) {
    info['certificate-authority-data'] = fs.readFileSync(details.caFile).toString('base64');
  }
  if (details.proxyUrl) info['proxy-url'] = details.proxyUrl;
  if (bool(body['disable-compression'], `cluster "${name}": disable-compression`)) {
    info['disable-compression'] = true;
  }
  const config = execExtension(file, name);
  if (config !== undefined) info.config = config;
  return info;
}

/**
 * The cluster's `client.authentication.k8s.io/exec` extension with its YAML types intact
 * (the failsafe schema used for the rest would turn numbers and booleans into strings).
 */
function execExtension(file, clusterName) {
  let doc;
  try {
    doc = YAML.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return undefined; // already parsed once with the failsafe schema; nothing more to add
  }
  const entry = Array.isArray(doc && doc.clusters)
    ? doc.clusters.find((c) => c && c.name === clusterName)
    : undefined;
  const extensions = entry && entry.cluster && entry.cluster.extensions;
  if (!Array.isArray(extensions)) return undefined;
  const ext = extensions.find((e) => e && e.name === EXEC_EXTENSION);
  return ext ? ext.extension : undefined;
}

module.exports = { credentialFor, staticSource, tokenFileSource };
