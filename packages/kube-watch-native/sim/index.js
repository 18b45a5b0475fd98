'use strict';

// A simulated Kubernetes API server for tests, benchmarks and the demo: real HTTP/1.1,
// HTTPS (optionally mutual TLS) and HTTP/2 on 127.0.0.1, a store with watch semantics, and
// scripted faults. Where it and a real API server differ, it is wrong. Its test-only parts
// (faults, chaos, TLS fixtures) are loaded when asked for (./test-only.js).

const { EventEmitter } = require('node:events');
const http = require('node:http');
const https = require('node:https');
const http2 = require('node:http2');
const { Http2Sessions } = require('./http2');
const { Store } = require('./store');
const { resourceKey } = require('./resources');
const { sendStatus } = require('./status');
const routes = require('./routes');
const { serveWatch, remotePort } = require('./serve-watch');
const { OPTION_KEYS, SERVER_CERTIFICATES, BUILTIN_RESOURCES } = require('./defaults');
const { startWorkload } = require('./workload');
const { partialKind } = require('./metadata');
const { authenticate, forbidden, validateTokens } = require('./rbac');
const { isReview, serveReview } = require('./reviews');
const { testOnly } = require('./test-only');
const { Logs } = require('./logs');

function peerCommonName(req) {
  const sock = req.socket;
  if (!sock || typeof sock.getPeerCertificate !== 'function') return null;
  try {
    const cert = sock.getPeerCertificate();
    return (cert && cert.subject && cert.subject.CN) || null;
  } catch {
    return null;
  }
}

const noop = () => {};

// The name the client sent by SNI (TLS only; false or undefined when it sent none).
function sniName(req) {
  try {
    return (req.socket && req.socket.servername) || null;
  } catch {
    return null;
  }
}

/** The simulated API server. Create it with createSimulator(). */
class Simulator extends EventEmitter {
  constructor(options = {}) {
    super();
    for (const key of Object.keys(options)) {
      if (!OPTION_KEYS.has(key)) throw new TypeError(`unknown simulator option "${key}"`);
    }
    if (options.http2 && !options.tls)
      throw new TypeError('http2 needs tls: true (h2 is negotiated with ALPN)');
    if (options.requireClientCert && !options.tls) throw new TypeError('requireClientCert needs tls: true');
    if (options.serverCertificate !== undefined) {
      if (!Object.hasOwn(SERVER_CERTIFICATES, options.serverCertificate))
        throw new TypeError(
          `serverCertificate must be one of ${Object.keys(SERVER_CERTIFICATES).join(', ')}, not ${JSON.stringify(options.serverCertificate)}`,
        );
      if (!options.tls) throw new TypeError('serverCertificate needs tls: true');
    }
    if (options.metadataAs !== undefined && !['serve', 'refuse', 'ignore'].includes(options.metadataAs))
      throw new TypeError(
        `metadataAs must be 'serve', 'refuse' or 'ignore', not ${JSON.stringify(options.metadataAs)}`,
      );
    if (options.expiredAs !== undefined && options.expiredAs !== 'event' && options.expiredAs !== 'status')
      throw new TypeError(`expiredAs must be 'event' or 'status', not ${JSON.stringify(options.expiredAs)}`);
    validateTokens(options.tokens);
    const prefix = (options.pathPrefix || '').replace(/\/+$/, '');
    this.options = {
      bookmarkIntervalMs: 60000,
      historyLimit: 1000,
      maxConcurrentStreams: 100,
      port: 0,
      ...options,
      pathPrefix: prefix && !prefix.startsWith('/') ? `/${prefix}` : prefix,
    };
    if (options.discovery !== undefined && !['aggregated', 'legacy'].includes(options.discovery))
      throw new TypeError('discovery must be "aggregated" or "legacy"');
    this.store = new Store({ historyLimit: this.options.historyLimit });
    /** Discovery-only names of a resource type (shortNames, singularName, categories), by key. */
    this.discoveryNames = new Map();
    for (const key of BUILTIN_RESOURCES) this.store.defineResource(key, { builtin: true });
    this.requests = [];
    this.sockets = new Map();
    this.socketsByPort = new Map();
    this.nextSocketId = 1;
    this.watches = new Set();
    this.timers = new Set();
    this.fault = null;
    this.faultQueue = [];
    this.failures = [];
    this.hugePages = [];
    this.closing = null;
    this.http2 = new Http2Sessions(this.options.maxConcurrentStreams);
    /** What the containers wrote (sim/logs.js); a deleted pod's go with it. */
    this.logs = new Logs();
    /** Makes the names of the events recordEvent creates unique. */
    this.eventSeq = 0;
    this.followStore();
  }

  /** A pod deleted from the store takes its containers' logs (and ends their follows). */
  followStore() {
    this.store.subscribe((entry) => {
      if (entry.type === 'DELETED' && entry.def.key === 'pods') {
        this.logs.forgetPod(`${entry.object.metadata.namespace}/${entry.object.metadata.name}/`);
      }
    });
  }

  /**
   * Container `container` of pod `name` in `namespace` writes `text` (one or more lines) at
   * `time` (default now): what `GET …/pods/{name}/log` answers, and its followers get at once.
   */
  writeLog(namespace, name, container, text, { time } = {}) {
    this.logs.write(`${namespace}/${name}/${container}`, text, time);
  }

  /** The container restarts: what it wrote is its previous instance's (`previous=true`); its follows end. */
  restartContainer(namespace, name, container) {
    this.logs.restart(`${namespace}/${name}/${container}`);
  }

  /**
   * The container crashes and the kubelet backs off, as a crash-looping container does: its
   * instance ends (exit code 1), its status is waiting in `CrashLoopBackOff` with that instance
   * as its last state and one more restart, and the kubelet records (or counts again) its
   * `BackOff` Warning event for the pod. A log request without `previous` then gets the ended
   * instance's lines, as the kubelet serves them, and a follow ends after them.
   */
  crashLoop(namespace, name, container) {
    this.restartContainer(namespace, name, container);
    const at = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const pod = this.patch('pods', namespace, name, (p) => {
      const status = (p.status ??= {});
      const statuses = (status.containerStatuses ??= []);
      let cs = statuses.find((c) => c.name === container);
      if (!cs) statuses.push((cs = { name: container, restartCount: 0, ready: false }));
      cs.restartCount = (cs.restartCount ?? 0) + 1;
      cs.ready = false;
      cs.lastState = { terminated: { exitCode: 1, reason: 'Error', startedAt: at, finishedAt: at } };
      cs.state = { waiting: { reason: 'CrashLoopBackOff', message: `back-off restarting failed container` } };
    });
    this.recordEvent(pod, {
      reason: 'BackOff',
      type: 'Warning',
      message: `Back-off restarting failed container ${container} in pod ${name}_${namespace}(${pod.metadata.uid})`,
      fieldPath: `spec.containers{${container}}`,
    });
  }

  /**
   * The kubelet's event recorder: an Event of `object` with `reason`, counted again (count,
   * lastTimestamp) when one of the same reason, message and field is there, as the recorder
   * aggregates; else a new one named `{object}.{hex}`.
   */
  recordEvent(object, { reason, type = 'Normal', message, fieldPath }) {
    const { namespace, name, uid } = object.metadata;
    const at = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const same = this.store
      .snapshot('events', { namespace })
      .find(
        (e) =>
          e.involvedObject?.uid === uid &&
          e.reason === reason &&
          e.message === message &&
          e.involvedObject?.fieldPath === fieldPath,
      );
    if (same) {
      return this.patch('events', namespace, same.metadata.name, (e) => {
        e.count = (e.count ?? 1) + 1;
        e.lastTimestamp = at;
      });
    }
    return this.create('events', {
      metadata: {
        name: `${name}.${Date.now().toString(16)}${String(this.eventSeq++).padStart(6, '0')}`,
        namespace,
      },
      involvedObject: {
        kind: object.kind ?? 'Pod',
        namespace,
        name,
        uid,
        apiVersion: object.apiVersion ?? 'v1',
        resourceVersion: object.metadata.resourceVersion,
        ...(fieldPath && { fieldPath }),
      },
      reason,
      message,
      source: { component: 'kubelet', host: object.spec?.nodeName ?? 'sim-node' },
      firstTimestamp: at,
      lastTimestamp: at,
      count: 1,
      type,
      eventTime: null,
      reportingComponent: 'kubelet',
      reportingInstance: object.spec?.nodeName ?? 'sim-node',
    });
  }

  /**
   * Ends every log follow open now: cleanly (as a server ends a body), or `abrupt`ly (a dropped
   * connection).
   */
  endLogFollows(options) {
    this.logs.endFollows(options);
  }

  async listen() {
    const o = this.options;
    const handler = (req, res) => this.onRequest(req, res);
    const tls = {
      ...(o.tls && SERVER_CERTIFICATES[o.serverCertificate ?? 'localhost']()),
      ...(o.requireClientCert && {
        ca: [testOnly('./certs').ca],
        requestCert: true,
        rejectUnauthorized: true,
      }),
    };
    if (!o.tls) this.server = http.createServer({ noDelay: true }, handler);
    else if (o.http2) {
      this.server = http2.createSecureServer(
        {
          ...tls,
          allowHTTP1: true,
          settings: { maxConcurrentStreams: o.maxConcurrentStreams },
          // Node's default (10 MB) counts the data queued on a session's streams and refuses
          // new streams with ENHANCE_YOUR_CALM beyond it; a real API server has no such limit,
          // and the initial events, queued in one write per watch (sim/watch.js), trip it as
          // soon as a few watches of a large type start together on one connection.
          maxSessionMemory: 1024,
        },
        handler,
      );
      this.http2.attach(this.server);
      this.server.on('sessionError', noop);
    } else this.server = https.createServer({ ...tls, noDelay: true }, handler);
    if (o.keepAliveTimeoutMs !== undefined) this.server.keepAliveTimeout = o.keepAliveTimeoutMs;
    this.server.on('connection', (socket) => this.track(socket));
    await new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(o.port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.port = this.server.address().port;
    this.origin = `${o.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
    this.url = this.origin + o.pathPrefix;
    return this;
  }

  track(socket) {
    const id = this.nextSocketId++;
    const port = socket.remotePort;
    // Without this, Nagle's algorithm would merge the byte-by-byte writes faults ask for.
    socket.setNoDelay(true);
    socket.on('error', noop);
    this.sockets.set(id, socket);
    this.socketsByPort.set(port, { id, socket });
    this.emit('socketOpen', id);
    socket.once('close', () => {
      this.sockets.delete(id);
      if (this.socketsByPort.get(port)?.id === id) this.socketsByPort.delete(port);
      this.emit('socketClose', id);
    });
  }

  onRequest(req, res) {
    req.on('error', noop);
    res.on('error', noop);
    const q = req.url.indexOf('?');
    const path = q >= 0 ? req.url.slice(0, q) : req.url;
    const params = new URLSearchParams(q >= 0 ? req.url.slice(q + 1) : '');
    const tcp = this.socketsByPort.get(remotePort(req));
    const record = {
      method: req.method,
      path,
      query: Object.fromEntries(params),
      headers: { ...req.headers },
      clientCertCN: peerCommonName(req),
      servername: sniName(req),
      remotePort: remotePort(req),
      http2: req.httpVersionMajor === 2,
      socketId: tcp ? tcp.id : null,
      time: Date.now(),
      // The status answered, once the response is over (null: closed before any headers).
      status: undefined,
    };
    res.once('close', () => {
      record.status = res.headersSent ? res.statusCode : null;
    });
    this.requests.push(record);
    this.emit('request', record);
    if (this.closing) return res.destroy();
    if (this.http2.maybeRefuse(req)) return undefined;

    const prefix = this.options.pathPrefix;
    let rest = path;
    if (prefix) {
      if (path !== prefix && !path.startsWith(`${prefix}/`)) return routes.sendNotFound(res);
      rest = path.slice(prefix.length) || '/';
    }
    // A throwing handler (a test's onWatch included) becomes a 500 the client can see.
    const fail = (err) => {
      this.emit('handlerError', err);
      if (!res.headersSent) sendStatus(res, 500, `Internal error occurred: ${err.message}`, 'InternalError');
      else res.destroy();
    };
    try {
      const r = routes.parseApiPath(rest);
      // Watches take their fault before authentication: a fault stands for a misbehaving
      // server or network, and "the next watch" must not depend on the credentials sent.
      let done;
      // Scripted failures hit lists and watches alike, before authentication (see below).
      if (r && r.type === 'resource' && this.failures.length)
        done = testOnly('./server-faults').sendFailure(res, r, this.failures.shift());
      else if (this.hugePages.length && routes.isListRequest(req, r, params, this.store))
        done = testOnly('./server-faults').sendHugePage(
          this,
          res,
          routes.lookupResource(this.store, r),
          this.hugePages.shift(),
        );
      else if (routes.isWatchRequest(req, r, params)) done = this.serveWatch(req, res, r, params, record);
      else if (!this.authorized(req, record)) done = sendStatus(res, 401, 'Unauthorized', 'Unauthorized');
      else if (isReview(r)) done = serveReview(req, res, r, record.identity);
      else if (!this.permitted(req, res, r, record, r && r.name === undefined ? 'list' : 'get'))
        done = undefined;
      else done = routes.route(this, req, res, r, params);
      if (done && typeof done.catch === 'function') done.catch(fail);
    } catch (err) {
      fail(err);
    }
    return undefined;
  }

  /** Whether the request is authenticated (sim/rbac.js); remembers who it is in `record.user`. */
  authorized(req, record) {
    const identity = authenticate(this.options, req, record);
    record.identity = identity;
    return identity !== null;
  }

  /** RBAC, after authentication: false having answered 403 when the identity may not `verb` it. */
  permitted(req, res, r, record, verb) {
    const refusal = r ? forbidden(record.identity, r, verb) : null;
    if (refusal === null) return true;
    sendStatus(res, 403, refusal.message, 'Forbidden', refusal.details);
    return false;
  }

  /**
   * Whether a list or watch asking for `kind` (`PartialObjectMetadata(List)`) in its Accept
   * header gets it (sim/metadata.js); null once a 406 was sent (option `metadataAs`).
   */
  partialAnswer(req, res, kind) {
    if (partialKind(req.headers.accept) !== kind) return false;
    if (this.options.metadataAs === 'ignore') return false;
    if (this.options.metadataAs === 'refuse') {
      sendStatus(
        res,
        406,
        `the server does not support the requested media type: ${req.headers.accept}`,
        'NotAcceptable',
      );
      return null;
    }
    return true;
  }

  takeFault() {
    return this.faultQueue.length ? this.faultQueue.shift() : this.fault;
  }

  delay(ms) {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, ms);
      this.timers.add(t);
    });
  }

  /** A watch request: sim/serve-watch.js. */
  serveWatch(req, res, r, params, record) {
    return serveWatch(this, req, res, r, params, record);
  }

  // ---- store API -------------------------------------------------------------------------

  /**
   * Declares a resource type; see Store#defineResource. `shortNames`, `singularName` and
   * `categories` only show in discovery, as a CRD's `spec.names` do.
   */
  defineResource(key, options = {}) {
    const { shortNames, singularName, categories, ...rest } = options;
    const def = this.store.defineResource(key, rest);
    if (shortNames || singularName || categories) {
      this.discoveryNames.set(def.key, { shortNames, singularName, categories });
    }
    return def;
  }

  /** Stores a new object; see Store#create. */
  create(key, obj) {
    return this.store.create(key, obj);
  }

  /** Replaces an object; see Store#update. */
  update(key, obj) {
    return this.store.update(key, obj);
  }

  /** Read-modify-write; see Store#patch. */
  patch(key, namespace, name, mutate) {
    return this.store.patch(key, namespace, name, mutate);
  }

  /** Deletes an object; see Store#remove. */
  remove(key, namespace, name) {
    return this.store.remove(key, namespace, name);
  }

  /** A copy of one object, or undefined. */
  get(key, namespace, name) {
    return this.store.get(key, namespace, name);
  }

  /** Copies of the current objects of a type. */
  list(key, options) {
    return this.store.list(key, options);
  }

  /** Forgets history so any older resourceVersion is answered 410. */
  compact() {
    this.store.compact();
  }

  /** @returns {string} the current global resourceVersion */
  get resourceVersion() {
    return this.store.resourceVersion;
  }

  // ---- faults and observation -----------------------------------------------------------

  /**
   * Applies `fault` to every following watch request until cleared with null.
   * @param {import('./faults').Fault|null} fault
   */
  setFault(fault) {
    this.fault = testOnly('./faults').checkFault(fault);
  }

  /**
   * Applies `fault` to the next watch request only (calls queue up, one per request); it
   * takes precedence over setFault's.
   * @param {import('./faults').Fault} fault
   */
  nextWatchFault(fault) {
    this.faultQueue.push(testOnly('./faults').checkFault(fault) || {});
  }

  /** @returns {number} TCP connections currently open */
  openSockets() {
    return this.sockets.size;
  }

  /** @returns {number} watch responses still in progress */
  activeWatches() {
    return this.watches.size;
  }

  /**
   * @param {number} [timeoutMs]
   * @returns {Promise<boolean>} true once no TCP connection is open, false on timeout
   */
  waitForSocketsClosed(timeoutMs = 1000) {
    if (this.sockets.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (value) => {
        clearTimeout(timer);
        this.off('socketClose', onClose);
        resolve(value);
      };
      const onClose = () => this.sockets.size === 0 && done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.on('socketClose', onClose);
    });
  }

  /**
   * Answers the next `count` list and watch requests with `status` (a Status body), plus
   * Retry-After and details.retryAfterSeconds when `retryAfter` is given.
   * @param {number} count
   * @param {number} status
   * @param {number} [retryAfter] seconds
   * @param {{retryAfterIn?: 'both'|'header'|'details'}} [options] say retryAfter only in the
   *   header or only in the Status details (default both, as the API server does)
   */
  failNext(count, status, retryAfter, options) {
    const failure = testOnly('./server-faults').checkFailure(count, status, retryAfter, options);
    for (let i = 0; i < count; i++) this.failures.push(failure);
  }

  /**
   * Answers the next list request (not a watch, before authentication, as failNext does) with
   * a page far larger than an API server sends, fast or trickled; see server-faults.js.
   * @param {import('./server-faults').HugePage} page
   */
  hugePageNext(page) {
    this.hugePages.push(testOnly('./server-faults').checkHugePage(page));
  }

  /**
   * Accepts `token` from now on and refuses the old one with 401; watches already open go on.
   * @param {string} token
   */
  rotateToken(token) {
    if (typeof token !== 'string' || !token)
      throw new TypeError('rotateToken: token must be a non-empty string');
    this.options.token = token;
  }

  /**
   * Breaks every watch mid-stream (a broken connection, not a clean end).
   * @returns {number} how many watches were open (and so were broken)
   */
  cutWatches() {
    const open = this.watches.size;
    for (const w of this.watches) w.cut();
    return open;
  }

  /** Ends every watch cleanly, as when their timeouts expire. */
  endWatches() {
    for (const w of this.watches) w.end();
  }

  /**
   * Drops every TCP connection, as a restarting server or load balancer does.
   * @param {{reset?: boolean}} [options] reset: send a TCP RST instead of a FIN
   */
  destroySockets(options = {}) {
    for (const s of this.sockets.values()) {
      if (options.reset && s._handle && typeof s.resetAndDestroy === 'function') s.resetAndDestroy();
      else s.destroy();
    }
  }

  /**
   * The cluster rebuilt in place (etcd wiped or restored from an older backup): closes this
   * simulator and starts another at the same port, with the same options (so the same
   * credentials and certificates) and a fresh store, whose resourceVersions start over at
   * `initialResourceVersion` (default 1).
   * @param {{ initialResourceVersion?: number }} [options]
   * @returns {Promise<Simulator>}
   */
  async recreate({ initialResourceVersion } = {}) {
    const { port } = this;
    await this.close();
    const next = new Simulator({ ...this.options, port });
    if (initialResourceVersion !== undefined) {
      next.store = new Store({ historyLimit: next.options.historyLimit, initialResourceVersion });
      for (const key of BUILTIN_RESOURCES) next.store.defineResource(key, { builtin: true });
      next.followStore();
    }
    return next.listen();
  }

  /**
   * Destroys every connection and stops the server; safe to call twice.
   * @returns {Promise<void>}
   */
  close() {
    if (!this.closing) {
      this.closing = (async () => {
        this.emit('close');
        for (const t of this.timers) clearTimeout(t);
        this.timers.clear();
        for (const w of this.watches) w.dispose();
        if (this.server) {
          const closed = new Promise((resolve) => this.server.close(() => resolve()));
          for (const s of this.sockets.values()) s.destroy();
          // 'close' of a destroyed socket comes a tick later than the server's.
          await Promise.all([closed, this.waitForSocketsClosed(5000)]);
        }
      })();
    }
    return this.closing;
  }
}

/**
 * Starts a simulated API server on 127.0.0.1.
 * @param {object} [options]
 * @param {boolean} [options.tls] HTTPS with the fixture server certificate
 * @param {boolean} [options.http2] with tls: negotiate h2 or http/1.1 by ALPN
 * @param {boolean} [options.requireClientCert] with tls: only clients with a cert from the test CA connect
 * @param {string} [options.token] require `Authorization: Bearer <token>` (or a client cert)
 * @param {string} [options.pathPrefix] serve the API under this path, e.g. `/k8s/clusters/c-1`
 * @param {number} [options.bookmarkIntervalMs=60000]
 * @param {number} [options.defaultTimeoutSeconds] default: random 1800–3600 per watch
 * @param {number} [options.historyLimit=1000] events kept for replay
 * @param {boolean} [options.gzip] gzip watch and list bodies for clients that accept it
 * @param {number} [options.maxConcurrentStreams=100] HTTP/2 streams per connection (kube-apiserver's
 *   default); `sim.http2` changes it later, sends GOAWAY, refuses streams and counts sessions
 * @param {number} [options.keepAliveTimeoutMs] idle HTTP/1.1 keep-alive timeout (Node's default 5000)
 * @param {number} [options.port=0]
 * @param {'aggregated'|'legacy'} [options.discovery='aggregated'] whether `/api` and `/apis` answer
 *   aggregated discovery (apidiscovery.k8s.io/v2) to clients that ask for it
 * @param {'serve'|'refuse'|'ignore'} [options.metadataAs='serve'] lists and watches asking for
 *   PartialObjectMetadata(List) in their Accept header: served as a real API server does, refused
 *   with 406, or answered with full objects as if not asked (sim/metadata.js)
 * @param {boolean} [options.sendInitialEvents=true] false: refuse streaming lists with 422, like an old server
 * @param {'event'|'status'} [options.expiredAs='event'] how a watch from a compacted resourceVersion
 *   is answered: 200 + an in-stream 410 ERROR event, or an HTTP 410 Status
 * @returns {Promise<Simulator>}
 */
async function createSimulator(options = {}) {
  return new Simulator(options).listen();
}

module.exports = { createSimulator, Simulator, resourceKey, startWorkload };
// The repository's alone (./test-only.js): loaded when read.
Object.defineProperty(module.exports, 'certs', { enumerable: true, get: () => testOnly('./certs') });
Object.defineProperty(module.exports, 'startChaos', {
  enumerable: true,
  get: () => testOnly('./chaos').startChaos,
});
