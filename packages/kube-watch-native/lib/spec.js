'use strict';
// The argument checks every entry point shares, and the watch's native spec: one definition of
// each rule (the TypeError's wording, what counts as a number, an AbortSignal, the idle
// default), required by lib/watcher.js and lib/informer.js alike.

const native = require('./native');

/** Bookmarks arrive about once a minute; three missed ones mean the connection is dead. */
const DEFAULT_IDLE_TIMEOUT_SECONDS = 180;

const CREDENTIAL_TYPES = new Set(['bearer token', 'x509 client certificate', 'anonymous']);

function fail(field, expected, value) {
  const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
  return new TypeError(`kube-watch-native: ${field} must be ${expected} (got ${got})`);
}

function requireObject(value, field) {
  if (value === null || typeof value !== 'object') throw fail(field, 'an object', value);
  return value;
}

function requireString(value, field, { nonEmpty = false } = {}) {
  if (typeof value !== 'string' || (nonEmpty && value.length === 0)) {
    throw fail(field, nonEmpty ? 'a non-empty string' : 'a string', value);
  }
  return value;
}

function optional(value, field, check) {
  return value === undefined || value === null ? undefined : check(value, field);
}

function optionalBoolean(value, field) {
  return optional(value, field, (v) => {
    if (typeof v !== 'boolean') throw fail(field, 'a boolean', v);
    return v;
  });
}

/** A finite number `>= min` (`> min` with `above`), whole with `integer`; absent is undefined. */
function optionalNumber(value, field, { integer = false, min = 0, above = false } = {}) {
  return optional(value, field, (v) => {
    const ok = typeof v === 'number' && Number.isFinite(v) && (above ? v > min : v >= min);
    if (!ok || (integer && !Number.isInteger(v))) {
      throw fail(field, `a ${integer ? 'whole ' : ''}number ${above ? '>' : '>='} ${min}`, v);
    }
    return v;
  });
}

function optionalString(value, field) {
  return optional(value, field, requireString);
}

function credentialFields(credential) {
  requireObject(credential, 'params.credential');
  const { type } = credential;
  if (!CREDENTIAL_TYPES.has(type)) {
    throw new TypeError(
      `kube-watch-native: params.credential.type must be one of ${[...CREDENTIAL_TYPES]
        .map((t) => `'${t}'`)
        .join(', ')} (got ${JSON.stringify(type)})`,
    );
  }
  if (type === 'bearer token') {
    return { credentialType: type, token: requireString(credential.token, 'params.credential.token') };
  }
  if (type === 'x509 client certificate') {
    return {
      credentialType: type,
      cert: requireString(credential.cert, 'params.credential.cert', { nonEmpty: true }),
      key: requireString(credential.key, 'params.credential.key', { nonEmpty: true }),
    };
  }
  return { credentialType: type };
}

/** `options.signal`: an AbortSignal (anything with `aborted` and `addEventListener`), or undefined. */
function signalOf(options) {
  const { signal } = options;
  if (signal === undefined || signal === null) return undefined;
  if (typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
    throw fail('options.signal', 'an AbortSignal', signal);
  }
  return signal;
}

/**
 * Type-checks where a request goes into the native `{ cluster, credential }`: `params.clusterDetails`
 * (with its `authMetadata`) and `params.credential`, as a watch, an informer and a log stream take
 * them. Throws TypeError.
 */
function toTarget(params, serviceAccountDir) {
  requireObject(params, 'params');
  const cluster = requireObject(params.clusterDetails, 'params.clusterDetails');
  const authMetadata =
    optional(cluster.authMetadata, 'params.clusterDetails.authMetadata', requireObject) ?? {};
  const provider = optionalString(
    authMetadata['kubernetes.io/auth-provider'],
    "params.clusterDetails.authMetadata['kubernetes.io/auth-provider']",
  );
  return {
    cluster: {
      clusterName: requireString(cluster.name, 'params.clusterDetails.name'),
      clusterUrl: requireString(cluster.url, 'params.clusterDetails.url', { nonEmpty: true }),
      authProvider: provider,
      hasServiceAccountToken: Boolean(authMetadata.serviceAccountToken),
      skipTLSVerify: optionalBoolean(cluster.skipTLSVerify, 'params.clusterDetails.skipTLSVerify'),
      caData: optionalString(cluster.caData, 'params.clusterDetails.caData'),
      caFile: optionalString(cluster.caFile, 'params.clusterDetails.caFile'),
      proxyUrl: optionalString(cluster.proxyUrl, 'params.clusterDetails.proxyUrl'),
      tlsServerName: optionalString(cluster.tlsServerName, 'params.clusterDetails.tlsServerName'),
      serviceAccountDir,
    },
    credential: credentialFields(params.credential),
  };
}

/**
 * Type-checks the arguments into the native WatchSpec: `{ cluster, credential, resource, …options }`,
 * where `resource` (the collection, its selectors and projection) is the informer's too.
 * Throws TypeError.
 */
function toSpec(params, options, serviceAccountDir) {
  const { cluster, credential } = toTarget(params, serviceAccountDir);
  requireObject(options, 'options');
  const allowWatchBookmarks = optionalBoolean(options.allowWatchBookmarks, 'options.allowWatchBookmarks');
  const idleTimeoutSeconds =
    optionalNumber(options.idleTimeoutSeconds, 'options.idleTimeoutSeconds') ??
    (allowWatchBookmarks ? DEFAULT_IDLE_TIMEOUT_SECONDS : undefined);
  // Built property by property: a spec spread from toTarget's object cost each watch about
  // 3 KiB that stayed (RSS +27 MiB over 9 000 watches in longevity.test.js).
  return {
    cluster,
    credential,
    resource: {
      group: requireString(params.group ?? '', 'params.group'),
      apiVersion: requireString(params.apiVersion, 'params.apiVersion', { nonEmpty: true }),
      plural: requireString(params.plural, 'params.plural', { nonEmpty: true }),
      namespace: optionalString(options.namespace, 'options.namespace'),
      labelSelector: optionalString(options.labelSelector, 'options.labelSelector'),
      fieldSelector: optionalString(options.fieldSelector, 'options.fieldSelector'),
      fields: optionalFields(options.fields),
      strip: optionalStrip(options.strip, options.fields),
      metadataOnly: optionalMetadataOnly(options.metadataOnly, options.fields),
    },
    resourceVersion: optionalString(options.resourceVersion, 'options.resourceVersion'),
    timeoutSeconds: optionalNumber(options.timeoutSeconds, 'options.timeoutSeconds', { integer: true }),
    allowWatchBookmarks,
    sendInitialEvents: optionalBoolean(options.sendInitialEvents, 'options.sendInitialEvents'),
    resourceVersionMatch: optionalString(options.resourceVersionMatch, 'options.resourceVersionMatch'),
    maxLineBytes: optionalNumber(options.maxLineBytes, 'options.maxLineBytes', { integer: true, min: 1 }),
    idleTimeoutSeconds: idleTimeoutSeconds > 0 ? idleTimeoutSeconds : undefined,
  };
}

/** `options.metadataOnly`: objects as PartialObjectMetadata; `fields` would cut those again. */
function optionalMetadataOnly(value, fields) {
  const on = optionalBoolean(value, 'options.metadataOnly');
  if (on && fields !== undefined && fields !== null) {
    throw new TypeError(
      'kube-watch-native: options.metadataOnly and options.fields exclude each other (strip may go with metadataOnly)',
    );
  }
  return on;
}

function optionalFields(value) {
  return optional(value, 'options.fields', (v) => {
    if (!Array.isArray(v) || !v.every((f) => typeof f === 'string' && f.length > 0)) {
      throw fail('options.fields', 'an array of dotted field paths', v);
    }
    return v;
  });
}

/** `options.strip`: paths checked by the native parser, so a bad one is named at call time. */
function optionalStrip(value, fields) {
  return optional(value, 'options.strip', (v) => {
    if (!Array.isArray(v) || !v.every((p) => typeof p === 'string')) {
      throw fail('options.strip', 'an array of field paths', v);
    }
    if (fields !== undefined && fields !== null) {
      throw new TypeError(
        'kube-watch-native: options.strip and options.fields exclude each other (fields keeps only what it lists)',
      );
    }
    const problem = native.stripError(v);
    if (problem !== null) throw new TypeError(problem);
    return v;
  });
}

module.exports = {
  DEFAULT_IDLE_TIMEOUT_SECONDS,
  fail,
  requireObject,
  requireString,
  optional,
  optionalBoolean,
  optionalNumber,
  optionalString,
  signalOf,
  credentialFields,
  toSpec,
  toTarget,
};
