'use strict';
// The live tab's wiring in the backend module: when the Signals backend plugin is installed, an
// objects provider that wraps the Kubernetes plugin's default one (built on whichever fetcher
// is registered, this module's included) and runs each user's call inside
// `liveRequestContext`, so the fetcher knows who is looking at which entity; a middleware of the
// plugin's router that marks an answer live (`x-kube-watch-live: 1`) only when signals follow
// every part of it, so the frontend polls any other answer as the stock client does; the
// publisher (./publisher.js) and the follower of the fetcher's informers (./informers.js) that
// tells it about changes.
//
// Optional all the way: `@backstage/plugin-signals-node` is not a dependency of this package (it
// is loaded only if the app has it), and `signalsServiceRef` always resolves where it is
// installed (it has a default factory that publishes on the events service), so whether the
// Signals backend plugin is there to deliver anything is read from the instance's installed
// plugins. Without it nothing is registered and nothing changes.

const { AsyncLocalStorage } = require('node:async_hooks');
const crypto = require('node:crypto');
const os = require('node:os');
const { createLivePublisher } = require('./publisher');
const { InformerFollowing } = require('./informers');
const { createEventsView } = require('./events-view');
const { liveRequestContext, isLiveAnswer, markLiveResponse } = require('./mark');
const { createViewerRegistry } = require('./store-sql');
const { startHeartbeat } = require('./heartbeat');
const { LIVE_HEADER, entityRefOf } = require('kube-watch-native-protocol');

/** The HTTP request being answered: `{ calls }`, the live contexts of its objects-provider calls. */
const liveResponseContext = new AsyncLocalStorage();

/** `@backstage/plugin-signals-node` if the app has it installed, else null. */
function loadSignalsNode() {
  try {
    return require('@backstage/plugin-signals-node');
  } catch (error) {
    if (error?.code === 'MODULE_NOT_FOUND') return null;
    throw error;
  }
}

/**
 * The default objects provider, with each user's call run inside `liveRequestContext` as
 * `{ userEntityRef, entityRef }`. A service's call (an action, a scheduled task) runs as it is.
 */
class LiveObjectsProvider {
  #inner;
  #auth;
  #live;
  #heartbeat;

  constructor({ inner, auth, live, heartbeat = null }) {
    this.#inner = inner;
    this.#auth = auth;
    this.#live = live;
    this.#heartbeat = heartbeat;
  }

  getKubernetesObjectsByEntity(request, options) {
    return this.#asViewer(request, options, () => this.#inner.getKubernetesObjectsByEntity(request, options));
  }

  getCustomResourcesByEntity(request, options) {
    return this.#asViewer(request, options, () => this.#inner.getCustomResourcesByEntity(request, options));
  }

  #asViewer(request, options, call) {
    const credentials = options?.credentials;
    if (!credentials || !request?.entity?.metadata || !this.#auth.isPrincipal(credentials, 'user'))
      return call();
    const context = {
      userEntityRef: credentials.principal.userEntityRef,
      entityRef: entityRefOf(request.entity),
    };
    liveResponseContext.getStore()?.calls.push(context);
    return liveRequestContext.run(context, async () => {
      const answer = await call();
      // With replicas, the viewer's row is written before the answer leaves: a change after
      // this answer then finds it armed on whichever replica sees the change first. Its own
      // row only, and within a bound: past it the answer is not live (polled).
      await this.#live?.answered(context);
      // A tab just opened may have missed the last heartbeat: the latest one, so it goes live
      // now. Only a viewer new here: a reload of an open tab costs no publish.
      if (context.newViewer && isLiveAnswer(context)) this.#heartbeat?.greet(context.userEntityRef);
      return answer;
    });
  }
}

/**
 * A middleware of the Kubernetes plugin's router: runs the rest of the request inside
 * `liveResponseContext` and, as its headers are written, marks a successful answer live when the
 * objects provider was called and every call's answer is followed (`isLiveAnswer`). The body is
 * untouched: the stock client ignores the header.
 */
function liveHeaderMiddleware({ refused = () => {} } = {}) {
  return (req, res, next) => {
    if (req.method !== 'POST') return next();
    const request = { calls: [] };
    const writeHead = res.writeHead;
    // Every way of sending (res.json, res.end, an explicit writeHead) writes the head through this.
    res.writeHead = function liveWriteHead(...args) {
      res.writeHead = writeHead;
      const status = typeof args[0] === 'number' ? args[0] : res.statusCode;
      // The router refused the load before any provider call (a permission policy): whoever
      // asked is followed no more for that entity, so no later change signals them.
      if ((status === 401 || status === 403) && request.calls.length === 0 && req.body?.entity?.metadata) {
        refused(req, entityRefOf(req.body.entity));
      }
      if (status === 200 && request.calls.length > 0 && request.calls.every(isLiveAnswer)) {
        markLiveResponse(res);
      }
      return writeHead.apply(this, args);
    };
    liveResponseContext.run(request, next);
  };
}

/**
 * Registers the live objects provider and makes the publisher, the follower of the fetcher's
 * informers and the following of the proxy's events answers (`{ publisher, follower,
 * eventsView }`), when the Signals backend plugin is installed and
 * `kubernetes.nativeInformers.live.enabled` is not false; else undefined. Called from the
 * module's init, where extension points still take registrations.
 */
async function setUpLive({
  options,
  logger,
  config,
  signals,
  objectsProviders,
  auth,
  instanceMetadata,
  httpRouter,
  httpAuth,
  database,
}) {
  if (!signals) return undefined; // @backstage/plugin-signals-node is not installed
  if (!options.enabled) {
    logger.info(
      'kube-watch-native: kubernetes.nativeInformers.live.enabled is false; the tab polls as usual',
    );
    return undefined;
  }
  const plugins = await instanceMetadata.getInstalledPlugins();
  if (!plugins.some((plugin) => plugin.pluginId === 'signals')) {
    logger.info('kube-watch-native: the Signals backend plugin is not installed; the tab polls as usual');
    return undefined;
  }
  // Several replicas: a load answered here registers its viewer here, and the browser's
  // WebSocket may be on another replica, which hears this one's signals only through the events
  // bus across instances (the events backend on PostgreSQL). Without it, an answer served from
  // memory could wait for a signal that never comes: the tab polls instead.
  const databaseClient = config?.getOptionalString('backend.database.client');
  const bus = plugins.some((plugin) => plugin.pluginId === 'events') && databaseClient === 'pg';
  if (options.replicas > 1 && !bus) {
    logger.warn(
      `kube-watch-native: kubernetes.nativeInformers.live.replicas is ${options.replicas}, but signals reach other replicas only through the events backend on PostgreSQL (the events plugin is ${plugins.some((plugin) => plugin.pluginId === 'events') ? '' : 'not '}installed, backend.database.client is ${databaseClient ?? 'unset'}): the live tab is off, the tab polls as usual`,
    );
    return undefined;
  }
  const { enabled: _enabled, replicas: _replicas, ...publisherOptions } = options;
  // On PostgreSQL the replicas meet in the plugin's database (./store-sql.js): with the bus,
  // the viewers are shared there, however many replicas there are; without it, the registry
  // only counts replicas, and while another is alive answers are not live.
  let live;
  // Rows the registry claims before the publisher exists (its first beat, within `ready`, claims
  // the viewers of a replica gone): handed to the publisher once it does, not dropped (claimed,
  // nobody else would tell them to load again).
  const early = [];
  const toPublisher = (hand) => (rows) => (live ? hand(live, rows) : early.push(() => hand(live, rows)));
  let registry = null;
  const replica = `${os.hostname()}-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
  if (databaseClient === 'pg') {
    try {
      registry = createViewerRegistry({
        knex: await database.getClient(),
        replica,
        orphaned: toPublisher((publisher, rows) => publisher.orphaned(rows)),
        unheard: toPublisher((publisher, rows) => publisher.unheard(rows)),
        logger,
      });
      await registry.ready;
    } catch (error) {
      throw new Error(`kube-watch-native: the live tab's viewer registry could not start: ${error}`);
    }
  }
  live = createLivePublisher({ signals, logger, ...publisherOptions, registry, share: bus });
  for (const hand of early.splice(0)) hand();
  // The tabs trust their signals only while every replica's heartbeat reaches them.
  const heartbeat = startHeartbeat({
    signals,
    replica,
    replicas: () => registry?.alive ?? [replica],
    logger,
  });
  const close = live.close;
  live.close = () => {
    heartbeat.close();
    return close();
  };
  objectsProviders.addObjectsProvider(
    async ({ getDefault }) => new LiveObjectsProvider({ inner: await getDefault(), auth, live, heartbeat }),
  );
  // A module's init runs before its plugin's, so this comes before the plugin's own routes.
  const refused = (req, entityRef) =>
    httpAuth
      ?.credentials(req, { allow: ['user'] })
      .then((credentials) => live.forget(credentials.principal.userEntityRef, entityRef))
      .catch(() => {}); // not a user: nobody was followed
  httpRouter.use(liveHeaderMiddleware({ refused }));
  logger.info('kube-watch-native: live Kubernetes tab on (signals on kubernetes:<entityRef>)');
  return {
    publisher: live,
    follower: new InformerFollowing({ publisher: live }),
    eventsView: createEventsView({ publisher: live, heartbeat, logger }),
  };
}

module.exports = {
  setUpLive,
  loadSignalsNode,
  LiveObjectsProvider,
  entityRefOf,
  liveHeaderMiddleware,
  LIVE_HEADER,
};
