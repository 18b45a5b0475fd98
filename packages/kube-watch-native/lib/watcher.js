'use strict';
// NativeKubernetesWatcher: Backstage's KubernetesWatcher on top of the native watch.
//
// JavaScript's part is small on purpose: check the arguments, start the native watch, and for
// each batch the native side hands over (every event ready at that moment, as one JSON array
// text) run one JSON.parse and yield the events one by one. The network, TLS, HTTP, framing
// and classification all happened on Rust threads.
//
// The stream itself (lib/event-stream.js, the same class an informer's consumers read) is an
// AsyncGenerator written out by hand, to keep the per-event cost of handing events over well
// below that of an `async function*`.

const native = require('./native');
const { EventStream } = require('./event-stream');
const { logBatch, textBatch, toLogSpec } = require('./logs');
const { HUB, Hub } = require('./hub');
const { openInformer } = require('./informer');
const { registerMetrics, SNAPSHOT } = require('./metrics');
const {
  fail,
  requireObject,
  optionalBoolean,
  optionalNumber,
  optionalString,
  signalOf,
  toSpec,
} = require('./spec');

/** The longest a change may be held for others to share its wake-up (options.gatherMs). */
const MAX_GATHER_MS = 1000;

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
  /**
   * This watcher's native registry and its way back (lib/hub.js): its shared informers (sharing
   * is per watcher) and its plain watches, made on first use.
   */
  #hub = null;
  /** getCredential functions by identity, for the sharing key. */
  #functionIds = new WeakMap();
  #nextFunctionId = 1;
  /** How long informer consumers' wake-ups are gathered (options.gatherMs), or the default. */
  #gatherMs;
  /**
   * Informers open through this watcher, for close(). Held strongly, as the informer hub holds
   * an open informer anyway; plain watches are not tracked (a generator its owner abandons must
   * still be collected and close its connection: __test__/lifetime.test.js).
   */
  #informersOpen = new Set();
  #closed = false;

  /**
   * @param {{ logger?: import('..').LoggerService, serviceAccountDir?: string, gatherMs?: number }} [options]
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
    this.#gatherMs = optionalNumber(options.gatherMs, 'options.gatherMs');
    if (this.#gatherMs > MAX_GATHER_MS) {
      throw new TypeError(
        `kube-watch-native: options.gatherMs must be at most ${MAX_GATHER_MS} (got ${this.#gatherMs})`,
      );
    }
  }

  /**
   * Watches one resource collection. Errors are yielded as `{ type: 'ERROR', error }`; only
   * malformed arguments throw (a TypeError, at call time).
   */
  watchResource(params, options = {}) {
    const spec = toSpec(params, options ?? {}, this.#serviceAccountDir);
    return this.#stream((hub) => hub.watch(spec), options);
  }

  /**
   * A container's log, as `GET …/pods/{pod}/log` answers it: batches of lines
   * (`{ type: 'LINES', lines, continued }`) and ERROR events as data, cut into lines on a Rust
   * thread. A follow the server ends resumes from the last line delivered, nothing lost or
   * repeated. Only malformed arguments throw (a TypeError, at call time).
   */
  streamLogs(params, options = {}) {
    const spec = toLogSpec(params, options ?? {}, this.#serviceAccountDir);
    const shape = optionalBoolean(options?.text, 'options.text') ? textBatch : logBatch;
    return this.#stream((hub) => hub.logs(spec), options, shape);
  }

  /** The generator of a native stream `open(hub)` starts on the first next(), ended by `options.signal`. */
  #stream(open, options, shape = null) {
    return new EventStream(
      () => open(this[HUB]()),
      signalOf(options ?? {}),
      (message) => this.#warn(message),
      shape,
    );
  }

  /**
   * A list-watch that never gives up, with the state cached natively: see KubernetesInformer in
   * index.d.ts. Two calls for the same cluster URL, identity (credential, or the getCredential
   * function itself), resource, namespace, selectors and fields share one list-watch and cache.
   * Malformed arguments throw a TypeError at call time.
   */
  informer(params, options = {}) {
    const context = {
      hub: this[HUB](),
      serviceAccountDir: this.#serviceAccountDir,
      functionId: (fn) => {
        if (!this.#functionIds.has(fn)) this.#functionIds.set(fn, this.#nextFunctionId++);
        return this.#functionIds.get(fn);
      },
      warn: (message) => this.#warn(message),
      info: (message) => this.#info(message),
      closed: (informer) => this.#informersOpen.delete(informer),
    };
    // After close(), an informer that never starts (as with an aborted signal): no request.
    const informer = openInformer(
      context,
      params,
      this.#closed ? { ...(options ?? {}), signal: AbortSignal.abort() } : options,
    );
    if (!this.#closed) this.#informersOpen.add(informer);
    return informer;
  }

  /**
   * Closes every informer opened through this watcher (a backend's shutdown); ones opened
   * later close at once. Plain watches end by their own signal, `break` or `return()`.
   * Idempotent.
   */
  close() {
    this.#closed = true;
    for (const informer of [...this.#informersOpen]) informer.close();
    this.#informersOpen.clear();
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
   * Reports this watcher's informers, its plain watches and the process's connections as
   * OpenTelemetry metrics (lib/metrics.js): on `options.meter`, a meter of
   * `options.meterProvider`, or of the global provider. Returns `{ close() }`.
   */
  metrics(options = {}) {
    return registerMetrics(this, options ?? {});
  }

  /**
   * Every informer's figures and the pool's, and every plain watch's, in one native call: one
   * metrics collection. Series of both with the same labels are added up there, into one.
   */
  [SNAPSHOT]() {
    // An empty registry (nothing connected, nothing started) still says what memory is held.
    const { series, clusters, memory } = JSON.parse(this[HUB]().registry.metricsJson());
    return { series, clusters, memory };
  }

  /** This watcher's hub (lib/hub.js), made on first use; for tests too. */
  [HUB]() {
    this.#hub ??= new Hub(this.#gatherMs);
    return this.#hub;
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
