'use strict';
// NativeKubernetesWatcher: Backstage's KubernetesWatcher on top of the native watch.
//
// JavaScript's part is small on purpose: check the arguments, start the native watch, and for
// each batch the native side hands over (every event ready at that moment, as one JSON array
// text) run one JSON.parse and yield the events one by one. The network, TLS, HTTP, framing
// and classification all happened on Rust threads.
//
// The stream itself (lib/event-stream.js) is an AsyncGenerator written out by hand, to keep the
// per-event cost of handing events over well below that of an `async function*`.

const native = require('./native');
const { WatchEventStream } = require('./event-stream');
const { InformerHub, openInformer } = require('./informer');
const { registerMetrics, SNAPSHOT } = require('./metrics');

/** Bookmarks arrive about once a minute; three missed ones mean the connection is dead. */
const DEFAULT_IDLE_TIMEOUT_WITH_BOOKMARKS_SECONDS = 180;

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

function optionalNumber(value, field, { integer = false, min = 0 } = {}) {
  return optional(value, field, (v) => {
    const ok = typeof v === 'number' && Number.isFinite(v) && v >= min;
    if (!ok || (integer && !Number.isInteger(v))) {
      throw fail(field, `a ${integer ? 'whole ' : ''}number >= ${min}`, v);
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

function signalOf(options) {
  const { signal } = options;
  if (signal === undefined || signal === null) return undefined;
  if (typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
    throw fail('options.signal', 'an AbortSignal', signal);
  }
  return signal;
}

/**
 * Type-checks the arguments into the native WatchSpec: `{ cluster, credential, …options }`.
 * Throws TypeError.
 */
function toSpec(params, options, serviceAccountDir) {
  requireObject(params, 'params');
  requireObject(options, 'options');
  const cluster = requireObject(params.clusterDetails, 'params.clusterDetails');
  const authMetadata =
    optional(cluster.authMetadata, 'params.clusterDetails.authMetadata', requireObject) ?? {};
  const provider = optionalString(
    authMetadata['kubernetes.io/auth-provider'],
    "params.clusterDetails.authMetadata['kubernetes.io/auth-provider']",
  );
  const allowWatchBookmarks = optionalBoolean(options.allowWatchBookmarks, 'options.allowWatchBookmarks');
  const idleTimeoutSeconds =
    optionalNumber(options.idleTimeoutSeconds, 'options.idleTimeoutSeconds') ??
    (allowWatchBookmarks ? DEFAULT_IDLE_TIMEOUT_WITH_BOOKMARKS_SECONDS : undefined);
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
    group: requireString(params.group ?? '', 'params.group'),
    apiVersion: requireString(params.apiVersion, 'params.apiVersion', { nonEmpty: true }),
    plural: requireString(params.plural, 'params.plural', { nonEmpty: true }),
    namespace: optionalString(options.namespace, 'options.namespace'),
    labelSelector: optionalString(options.labelSelector, 'options.labelSelector'),
    fieldSelector: optionalString(options.fieldSelector, 'options.fieldSelector'),
    resourceVersion: optionalString(options.resourceVersion, 'options.resourceVersion'),
    timeoutSeconds: optionalNumber(options.timeoutSeconds, 'options.timeoutSeconds', { integer: true }),
    allowWatchBookmarks,
    sendInitialEvents: optionalBoolean(options.sendInitialEvents, 'options.sendInitialEvents'),
    resourceVersionMatch: optionalString(options.resourceVersionMatch, 'options.resourceVersionMatch'),
    maxLineBytes: optionalNumber(options.maxLineBytes, 'options.maxLineBytes', { integer: true, min: 1 }),
    idleTimeoutSeconds: idleTimeoutSeconds > 0 ? idleTimeoutSeconds : undefined,
    fields: optionalFields(options.fields),
    strip: optionalStrip(options.strip, options.fields),
    metadataOnly: optionalMetadataOnly(options.metadataOnly, options.fields),
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

const consoleLogger = {
  error: (message) => console.error(message),
  warn: (message) => console.warn(message),
  info: () => {},
  debug: () => {},
  child: () => consoleLogger,
};

class NativeKubernetesWatcher {
  #logger;
  #serviceAccountDir;
  /** This watcher's shared informers (sharing is per watcher), made on first use. */
  #informers = null;
  /** getCredential functions by identity, for the sharing key. */
  #functionIds = new WeakMap();
  #nextFunctionId = 1;

  /**
   * @param {{ logger?: import('..').LoggerService, serviceAccountDir?: string }} [options]
   */
  constructor(options = {}) {
    requireObject(options, 'options');
    const logger = options.logger ?? consoleLogger;
    for (const method of ['warn', 'error']) {
      if (typeof logger[method] !== 'function')
        throw fail(`options.logger.${method}`, 'a function', logger[method]);
    }
    this.#logger = logger;
    this.#serviceAccountDir = optionalString(options.serviceAccountDir, 'options.serviceAccountDir');
  }

  /**
   * Watches one resource collection. Errors are yielded as `{ type: 'ERROR', error }`; only
   * malformed arguments throw (a TypeError, at call time).
   */
  watchResource(params, options = {}) {
    const spec = toSpec(params, options ?? {}, this.#serviceAccountDir);
    return new WatchEventStream(
      () => native.startWatch(spec),
      signalOf(options ?? {}),
      (message) => this.#warn(message),
    );
  }

  /**
   * A list-watch that never gives up, with the state cached natively: see KubernetesInformer in
   * index.d.ts. Two calls for the same cluster URL, identity (credential, or the getCredential
   * function itself), resource, namespace, selectors and fields share one list-watch and cache.
   * Malformed arguments throw a TypeError at call time.
   */
  informer(params, options = {}) {
    this.#informers ??= new InformerHub();
    const context = {
      hub: this.#informers,
      toSpec,
      credentialFields,
      serviceAccountDir: this.#serviceAccountDir,
      functionId: (fn) => {
        if (!this.#functionIds.has(fn)) this.#functionIds.set(fn, this.#nextFunctionId++);
        return this.#functionIds.get(fn);
      },
      warn: (message) => this.#warn(message),
      info: (message) => this.#info(message),
    };
    return openInformer(context, params, options);
  }

  /**
   * The connections behind this process's watches, per cluster origin (and TLS identity): the
   * HTTP/2 connections with their streams and the server's advertised stream limit, and the
   * HTTP/1.1 requests in flight. The pool is shared by every watcher in the process.
   */
  stats() {
    return { clusters: native.poolStats() };
  }

  /**
   * Reports this watcher's informers and the process's connections as OpenTelemetry metrics
   * (lib/metrics.js): on `options.meter`, a meter of `options.meterProvider`, or of the global
   * provider. Returns `{ close() }`.
   */
  metrics(options = {}) {
    return registerMetrics(this, options ?? {});
  }

  /** Every informer's figures and the pool's, in one native call: one metrics collection. */
  [SNAPSHOT]() {
    if (this.#informers === null) return { series: [], clusters: native.poolStats() };
    return JSON.parse(this.#informers.registry.metricsJson());
  }

  #info(message) {
    try {
      this.#logger.info?.(message);
    } catch {
      // As for warnings.
    }
  }

  /** Errors are data: a logger that throws must not turn a warning into a thrown watch. */
  #warn(message) {
    try {
      this.#logger.warn(message);
    } catch {
      // The warning is lost, the events are not.
    }
  }
}

module.exports = { NativeKubernetesWatcher, toSpec };
