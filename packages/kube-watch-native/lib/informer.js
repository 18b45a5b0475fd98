'use strict';
// KubernetesInformer: a list-watch that never gives up, with the cluster's state cached natively
// (src/informer/). JavaScript's part: check the arguments, open the shared informer in the
// watcher's native registry (through its hub, lib/hub.js), hand each consumer's batches over
// (one JSON.parse per batch, lib/event-stream.js), parse `get`/`list` results on demand, answer
// `getCredential` requests, and route the native side's news to the logger.

const native = require('./native');
const { onAbort } = require('./abort');
const { EventStream } = require('./event-stream');
const spec = require('./spec');
const { fail } = spec;

const INITIAL_LISTS = new Set(['auto', 'paginated', 'streaming']);
/** The fingerprint of an answer that selects nothing (the SHA-256 of no bytes). */
const EMPTY_FINGERPRINT = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** The informer options on top of what the watch spec already checked. */
function informerOptions(options) {
  const initialList = options.initialList ?? 'auto';
  if (!INITIAL_LISTS.has(initialList)) {
    throw new TypeError(
      `kube-watch-native: options.initialList must be 'auto', 'paginated' or 'streaming' (got ${JSON.stringify(initialList)})`,
    );
  }
  const backoff = options.backoff ?? {};
  if (backoff === null || typeof backoff !== 'object' || Array.isArray(backoff)) {
    throw fail('options.backoff', 'an object', backoff);
  }
  const initialSeconds =
    spec.optionalNumber(backoff.initialSeconds, 'options.backoff.initialSeconds', { above: true }) ?? 0.8;
  const maxSeconds =
    spec.optionalNumber(backoff.maxSeconds, 'options.backoff.maxSeconds', { above: true }) ?? 30;
  if (initialSeconds > maxSeconds) {
    throw new TypeError(
      `kube-watch-native: options.backoff.initialSeconds (${initialSeconds}) must not exceed options.backoff.maxSeconds (${maxSeconds})`,
    );
  }
  return {
    pageSize: spec.optionalNumber(options.pageSize, 'options.pageSize', { integer: true, min: 1 }) ?? 500,
    initialList,
    backoffInitialSeconds: initialSeconds,
    backoffMaxSeconds: maxSeconds,
    credentialTtlSeconds:
      spec.optionalNumber(options.credentialTtlSeconds, 'options.credentialTtlSeconds', { above: true }) ??
      300,
    watchTimeoutSeconds:
      spec.optionalNumber(options.watchTimeoutSeconds, 'options.watchTimeoutSeconds', { above: true }) ?? 300,
    compress: spec.optionalBoolean(options.compress, 'options.compress') ?? true,
    probeSeconds: spec.optionalNumber(options.probeSeconds, 'options.probeSeconds', { above: true }) ?? 60,
  };
}

/**
 * Builds the native spec and the sharing key, and opens the informer.
 * @param {object} watcher `{ hub, functionId, serviceAccountDir, warn, info }`: the watcher's own state
 */
function openInformer(watcher, params, options = {}) {
  if (params === null || typeof params !== 'object') throw fail('params', 'an object', params);
  options = options ?? {};
  if (typeof options !== 'object') throw fail('options', 'an object', options);
  const { getCredential } = params;
  if (getCredential !== undefined && typeof getCredential !== 'function') {
    throw fail('params.getCredential', 'a function', getCredential);
  }
  if (getCredential && params.credential !== undefined) {
    throw new TypeError('kube-watch-native: give params.credential or params.getCredential, not both');
  }
  if (!getCredential && params.credential === undefined) {
    throw new TypeError('kube-watch-native: params.credential or params.getCredential is required');
  }
  const signal = spec.signalOf(options);
  const watchOptions = {
    namespace: options.namespace,
    labelSelector: options.labelSelector,
    fieldSelector: options.fieldSelector,
    fields: options.fields,
    strip: options.strip,
    metadataOnly: options.metadataOnly,
    maxLineBytes: options.maxLineBytes,
    idleTimeoutSeconds: options.idleTimeoutSeconds ?? spec.DEFAULT_IDLE_TIMEOUT_SECONDS,
  };
  const base = spec.toSpec(
    { ...params, credential: getCredential ? { type: 'anonymous' } : params.credential },
    watchOptions,
    watcher.serviceAccountDir,
  );
  const extra = informerOptions(options);
  const staticCredential = getCredential ? null : base.credential;
  const identity = getCredential ? `getCredential#${watcher.functionId(getCredential)}` : staticCredential;
  const { resource } = base;
  // The whole connection identity (URL, CA, TLS verification, proxy, server name, auth
  // provider): an informer that a wrong CA would keep from ever syncing must not be handed the
  // cache of one that skips verification. The cluster's name only labels warnings and metrics.
  const { clusterName: _clusterName, ...connection } = base.cluster;
  const key = JSON.stringify([
    connection,
    identity,
    resource.group,
    resource.apiVersion,
    resource.plural,
    resource.namespace ?? '',
    resource.labelSelector ?? '',
    resource.fieldSelector ?? '',
    resource.fields ?? null,
    resource.strip ?? null,
    resource.metadataOnly ?? false,
    extra.compress,
  ]);
  // The watch-only fields go.
  // eslint-disable-next-line no-unused-vars
  const { credential, resourceVersion, timeoutSeconds, ...rest } = base;
  const informerSpec = {
    ...rest,
    ...extra,
    key,
    credential: staticCredential ?? undefined,
    dynamicCredential: Boolean(getCredential),
  };
  return new KubernetesInformer(watcher, informerSpec, {
    signal,
    getCredential,
    namespace: resource.namespace,
  });
}

class KubernetesInformer {
  #native;
  #watcher;
  #namespace;
  /** Ends this informer's subscription to the signal's abort. */
  #unsubscribe = null;
  #getCredential;
  #closed = false;
  #finished = false;
  #consumers = new Set();
  #synced;
  #settleSynced = null;
  /** Called when the informer syncs, fails or ends (onStateChange). */
  #stateListeners = new Set();

  constructor(watcher, spec, { signal, getCredential, namespace }) {
    this.#watcher = watcher;
    this.#namespace = namespace;
    this.#getCredential = getCredential;
    this.#synced = new Promise((resolve, reject) => {
      this.#settleSynced = { resolve, reject };
    });
    // A rejected `synced` that nobody awaits must not crash the process; awaiting it still
    // throws.
    this.#synced.catch(() => {});
    if (signal?.aborted) {
      this.#closed = true;
      this.#rejectSynced('the informer was aborted before its initial list was cached');
      return;
    }
    this.#native = watcher.hub.open(spec, (message) => this.#onNative(message));
    if (this.#native.isSynced()) this.#resolveSynced();
    // One listener per signal, shared by every informer and watch on it (lib/abort.js).
    if (signal) this.#unsubscribe = onAbort(signal, () => this.close());
  }

  /** Resolves once the initial list is cached; rejects if the informer ends before. */
  get synced() {
    return this.#synced;
  }

  /** Objects cached. */
  get size() {
    return this.#native ? this.#native.size() : 0;
  }

  /** The last resourceVersion seen (events and bookmarks), or undefined before the first. */
  get resourceVersion() {
    return this.#native ? (this.#native.resourceVersion() ?? undefined) : undefined;
  }

  /** The cached object (the caller's own copy), or undefined. */
  get(name, namespace) {
    if (typeof name !== 'string' || name.length === 0) throw fail('name', 'a non-empty string', name);
    const ns = spec.optionalString(namespace, 'namespace') ?? this.#namespace ?? '';
    if (!this.#native) return undefined;
    const text = this.#native.get(ns, name);
    return text === null || text === undefined ? undefined : JSON.parse(text);
  }

  /** The cached objects, optionally of one namespace and matching label and field selectors. */
  list(options = {}) {
    const text = this.#read('list', 'list', '[]', options);
    return JSON.parse(text);
  }

  /**
   * The informer's health, read natively without following its events: `{ synced, finished,
   * generation, size, cachedBytes, indexBytes, watchingSince, watchingForMs, aliveAt, aliveAgoMs,
   * error }`. `generation` changes with every change to the cache. `indexBytes` is what the field
   * indexes built by `fieldSelector` reads take beside the `cachedBytes` of JSON (an estimate).
   * `watchingSince` is when the watch being read opened (null between watches). `aliveAt` is the
   * last moment (ms since the epoch) the informer had proof its cache is current (a probe of the
   * server's resourceVersion answered, an event, a bookmark, a complete list; null before the
   * first: a watch taken proves nothing, since a server behind the informer takes one too).
   * `watchingForMs` and `aliveAgoMs` are the same two as ages on the monotonic clock, what to
   * decide by: a stepped wall clock moves neither. `error` is the failure not yet over (until a
   * request succeeds, or an event or bookmark arrives).
   */
  state() {
    if (!this.#native) {
      return {
        synced: false,
        finished: true,
        generation: 0,
        size: 0,
        cachedBytes: 0,
        indexBytes: 0,
        watchingSince: null,
        watchingForMs: null,
        aliveAt: null,
        aliveAgoMs: null,
        error: null,
      };
    }
    const state = this.#native.state();
    state.error ??= null;
    state.watchingSince ??= null;
    state.watchingForMs ??= null;
    state.aliveAt ??= null;
    state.aliveAgoMs ??= null;
    return state;
  }

  /**
   * Asks for one more onStateChange call, at the cache's next change after `generation` (a
   * `state().generation`): false, with nothing asked, when it has changed since already.
   */
  armChangeNotice(generation) {
    if (!this.#native) return false;
    if (!Number.isInteger(generation) || generation < 0) {
      throw fail('armChangeNotice() generation', 'a state().generation', generation);
    }
    return this.#native.armChangeNotice(generation);
  }

  /**
   * The JSON array text of the cached objects `list(options)` would return, unparsed: for a
   * reader that only compares answers.
   */
  listText(options = {}) {
    return this.#read('listText', 'list', '[]', options);
  }

  /**
   * A SHA-256 (hex) of the text `listText(options)` would return, taken natively without making
   * that text: for a reader that only compares answers.
   */
  fingerprint(options = {}) {
    return this.#read('fingerprint', 'fingerprint', EMPTY_FINGERPRINT, options);
  }

  /** `method(options)` of the native cache (`native`), or `closed` when there is none. */
  #read(method, native, closed, options) {
    if (options === null || typeof options !== 'object')
      throw fail(`${method}() options`, 'an object', options);
    const namespace = spec.optionalString(options.namespace, `${method}() options.namespace`);
    const labelSelector = spec.optionalString(options.labelSelector, `${method}() options.labelSelector`);
    const fieldSelector = spec.optionalString(options.fieldSelector, `${method}() options.fieldSelector`);
    if (!this.#native) return closed;
    try {
      return this.#native[native](namespace, labelSelector, fieldSelector);
    } catch (err) {
      throw new TypeError(err.message);
    }
  }

  /**
   * `listener()` runs when the informer syncs, fails, recovers or ends, and at a change the
   * caller armed with armChangeNotice(); returns its remover.
   */
  onStateChange(listener) {
    if (typeof listener !== 'function') throw fail('onStateChange() listener', 'a function', listener);
    this.#stateListeners.add(listener);
    return () => this.#stateListeners.delete(listener);
  }

  /** Counters of the shared informer, and the process's connections. */
  stats() {
    const own = this.#native ? JSON.parse(this.#native.statsJson()) : {};
    return { ...own, clusters: native.poolStats() };
  }

  /** Ends this handle's consumers normally; the last handle stops the informer. Idempotent. */
  close() {
    if (this.#closed) return;
    this.#closed = true;
    for (const consumer of this.#consumers) consumer.cancel();
    this.#consumers.clear();
    this.#native?.close();
    this.#rejectSynced('the informer was closed before its initial list was cached');
    this.#release();
    this.#watcher.closed?.(this);
  }

  [Symbol.asyncIterator]() {
    if (this.#closed || !this.#native) return (async function* () {})();
    const start = () => {
      const consumer = this.#watcher.hub.consumer(this.#native.subscribe(), (ended) =>
        this.#consumers.delete(ended),
      );
      if (this.#closed) consumer.cancel();
      else this.#consumers.add(consumer);
      return consumer;
    };
    // No signal here: the informer's own closes its consumers.
    return new EventStream(start, undefined, (message) => this.#watcher.warn(message));
  }

  /** The native handle's news, `{ kind, message, id }` (lib/hub.js). */
  #onNative(message) {
    switch (message.kind) {
      case 'warn':
        this.#watcher.warn(message.message);
        break;
      case 'info':
        this.#watcher.info(message.message);
        break;
      case 'synced':
        this.#resolveSynced();
        this.#stateChanged();
        break;
      case 'failed':
      case 'recovered':
      case 'changed':
        this.#stateChanged();
        break;
      case 'ended':
        this.#finished = true;
        this.#rejectSynced('the informer ended before its initial list was cached');
        this.#release();
        this.#stateChanged();
        break;
      case 'credential':
        this.#answerCredential(message.id);
        break;
      default:
        break;
    }
  }

  #stateChanged() {
    for (const listener of [...this.#stateListeners]) {
      try {
        listener();
      } catch (err) {
        this.#watcher.warn(`kube-watch-native: an onStateChange listener threw: ${err?.message ?? err}`);
      }
    }
  }

  #answerCredential(id) {
    Promise.resolve()
      .then(() => this.#getCredential())
      .then(spec.credentialFields)
      .then(
        (spec) => native.answerCredential(id, spec, null),
        (err) => native.answerCredential(id, null, String(err?.message ?? err)),
      );
  }

  #resolveSynced() {
    if (this.#settleSynced === null) return;
    this.#settleSynced.resolve();
    this.#settleSynced = null;
  }

  #rejectSynced(reason) {
    if (this.#settleSynced === null) return;
    this.#settleSynced.reject(new Error(`kube-watch-native: ${reason}`));
    this.#settleSynced = null;
  }

  #release() {
    if (this.#native) this.#watcher.hub.release(this.#native);
    this.#unsubscribe?.();
    this.#unsubscribe = null;
  }
}

module.exports = { KubernetesInformer, openInformer };
