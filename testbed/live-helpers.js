'use strict';
// Shared pieces of the live tab's end-to-end tests: a real Backstage backend with the Kubernetes
// and Signals backend plugins and kube-watch-native-backstage, whose root HTTP router takes
// WebSocket upgrades, a simulated cluster it reads, and a handle on the Kubernetes plugin's
// signals service, so a test can publish as the module will.
//
// Why not startTestBackend: @backstage/backend-test-utils 1.11.7 builds its HTTP router from its
// own copy of @backstage/backend-defaults 0.18.0, which has no `addWebSocketHandler` (the Signals
// backend 0.3.21 needs it), and its `server` getter throws when another root router is given.
// So this is startTestBackend's own recipe (createSpecializedBackend over the same mock
// services) with the root router, HTTP router and discovery of backend-defaults 0.19.0, and the
// real events service.

const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const express = require('express');
const { createBackendPlugin, createServiceFactory, coreServices } = require('@backstage/backend-plugin-api');
const { createSpecializedBackend } = require('@backstage/backend-app-api');
const { mockServices } = require('@backstage/backend-test-utils');
const {
  actionsRegistryServiceMock,
  actionsServiceMock,
  metricsServiceMock,
  tracingServiceMock,
} = require('@backstage/backend-test-utils/alpha');
const { catalogServiceMock } = require('@backstage/plugin-catalog-node/testUtils');
const {
  DefaultRootHttpRouter,
  MiddlewareFactory,
  createHealthRouter,
  createHttpServer,
} = require('@backstage/backend-defaults/rootHttpRouter');
const { httpRouterServiceFactory } = require('@backstage/backend-defaults/httpRouter');
const { HostDiscovery } = require('@backstage/backend-defaults/discovery');
const { ConfigReader } = require('@backstage/config');
const { signalsServiceRef } = require('@backstage/plugin-signals-node');
const { eventsServiceFactory } = require('@backstage/plugin-events-node');
const { createSimulator, certs } = require('../packages/kube-watch-native/sim');
const { initModule } = require('./backend-modules');

const ID = 'backstage.io/kubernetes-id';
const TOKEN = 'tok-live-7e4d';

/** The entity the tab shows, and one another user looks at. */
const entity = (name) => ({
  apiVersion: 'backstage.io/v1alpha1',
  kind: 'Component',
  metadata: { name, namespace: 'default', annotations: { [ID]: name } },
  spec: { type: 'service', owner: 'team', lifecycle: 'production' },
});
const LIVE_SVC = entity('live-svc');
const OTHER_SVC = entity('other-svc');
/** The signals channel of LIVE_SVC, as a tab subscribes to it. */
const LIVE_CHANNEL = 'kubernetes:component:default/live-svc';

/**
 * An entity whose selector has only a negative requirement (`tier!=db`): it matches unlabelled
 * objects, so no informer follows it and the default fetcher answers its loads.
 */
const delegatedEntity = (name) => ({
  ...LIVE_SVC,
  metadata: {
    name,
    namespace: 'default',
    annotations: { 'backstage.io/kubernetes-label-selector': 'tier!=db' },
  },
});

const pod = (name, app, phase = 'Running') => ({
  metadata: { name, namespace: 'default', labels: { [ID]: app }, uid: `uid-${name}` },
  spec: { containers: [{ name: 'main', image: 'example/app:1' }] },
  status: { phase, containerStatuses: [{ name: 'main', ready: true, restartCount: 0 }] },
});

/** One simulated cluster with a pod for each entity, closed when test `t` ends. */
async function startCluster(t) {
  const sim = await createSimulator({ tls: true, token: TOKEN, bookmarkIntervalMs: 300 });
  t.after(() => sim.close());
  sim.create('pods', pod('live-svc-1', 'live-svc'));
  sim.create('pods', pod('other-svc-1', 'other-svc'));
  return sim;
}

/** startTestBackend's default services, but its HTTP routing and discovery. */
const MOCK_SERVICES = [
  mockServices.auth.factory(),
  mockServices.auditor.factory(),
  mockServices.cache.factory(),
  mockServices.database.factory(),
  mockServices.httpAuth.factory(),
  mockServices.lifecycle.factory(),
  mockServices.logger.factory(),
  mockServices.permissions.factory(),
  mockServices.permissionsRegistry.factory(),
  mockServices.rootHealth.factory(),
  mockServices.rootLifecycle.factory(),
  mockServices.rootLogger.factory({ level: process.env.LIVE_TEST_LOG_LEVEL ?? 'none' }),
  mockServices.scheduler.factory(),
  mockServices.userInfo.factory(),
  mockServices.urlReader.factory(),
  // The real events service: one in-process bus for all plugins (the mock gives each its own,
  // and the Kubernetes plugin's signals would never reach the Signals backend's subscriber).
  eventsServiceFactory,
  actionsRegistryServiceMock.factory(),
  actionsServiceMock.factory(),
  metricsServiceMock.factory(),
  tracingServiceMock.factory(),
];

/**
 * A root HTTP router that routes WebSocket upgrades, on 127.0.0.1 and a free port (or `port`:
 * replica-backend.js keeps a replica's port across restarts). `server()` is the HTTP server.
 */
function webSocketRouting({ port: listenPort = 0 } = {}) {
  let server;
  const rootHttpRouter = createServiceFactory({
    service: coreServices.rootHttpRouter,
    deps: {
      config: coreServices.rootConfig,
      lifecycle: coreServices.rootLifecycle,
      rootLogger: coreServices.rootLogger,
      health: coreServices.rootHealth,
    },
    async factory({ config, lifecycle, rootLogger, health }) {
      const logger = rootLogger.child({ service: 'rootHttpRouter' });
      const app = express();
      server = await createHttpServer(app, { listen: { host: '127.0.0.1', port: listenPort } }, { logger });
      const router = DefaultRootHttpRouter.create({ server, lifecycle, logger });
      const middleware = MiddlewareFactory.create({ config, logger });
      app.use(createHealthRouter({ config, health }));
      app.use(router.handler());
      app.use(middleware.notFound());
      app.use(middleware.error());
      lifecycle.addShutdownHook(() => server.stop(), { logger });
      await server.start();
      return router;
    },
  });
  const discovery = createServiceFactory({
    service: coreServices.discovery,
    deps: { rootHttpRouter: coreServices.rootHttpRouter },
    factory() {
      const port = server.port();
      return HostDiscovery.fromConfig(
        new ConfigReader({ backend: { baseUrl: `http://127.0.0.1:${port}`, listen: { port } } }),
      );
    },
  });
  return {
    features: [rootHttpRouter, httpRouterServiceFactory, discovery],
    port: () => server.port(),
    server: () => server,
  };
}

const LIVE_TYPES = ['pods', 'services', 'deployments', 'replicasets'];

/**
 * The `kubernetes` config of startLiveBackend: the cluster at `url` (a service account's `token`,
 * the CA as base64 `caData`) unless `clusters` are given. Also what replica-backend.js, which
 * has no simulator object in its process, configures.
 */
function kubernetesConfig(
  { url, token, caData },
  { clusters, objectTypes = LIVE_TYPES, live, nativeInformers } = {},
) {
  return {
    serviceLocatorMethod: { type: 'multiTenant' },
    clusterLocatorMethods: [
      {
        type: 'config',
        clusters: clusters ?? [
          {
            name: 'sim',
            url,
            authProvider: 'serviceAccount',
            serviceAccountToken: token,
            caData,
            skipMetricsLookup: true,
          },
        ],
      },
    ],
    ...(objectTypes && { objectTypes }),
    nativeInformers: {
      ...(objectTypes && { objectTypes }),
      ...(live && { live }),
      ...nativeInformers,
    },
  };
}

/**
 * A test module of the Kubernetes plugin that sets `captured.signals` to its signals service
 * (what the module publishes with) and `captured.instanceId` to the backend instance's id.
 */
const captureSignals = (captured) =>
  initModule(
    'kubernetes',
    'test-signals',
    { signals: signalsServiceRef, instance: coreServices.rootInstanceMetadata },
    async ({ signals, instance }) => {
      captured.signals = signals;
      captured.instanceId = instance.getId();
    },
  );

/** `kind:namespace/name` of an entity, lower-cased as the catalog compares refs. */
const refOf = (e) => `${e.kind}:${e.metadata.namespace ?? 'default'}/${e.metadata.name}`.toLowerCase();

/**
 * A `catalog` backend plugin answering the two reads of a new-frontend-system entity page from
 * `entities` (the catalog client's GET /entities/by-name/:kind/:namespace/:name and
 * POST /entities/by-refs); the real catalog backend wants a database and its providers.
 */
const catalogReads = (entities) =>
  createBackendPlugin({
    pluginId: 'catalog',
    register(env) {
      env.registerInit({
        deps: { httpRouter: coreServices.httpRouter },
        async init({ httpRouter }) {
          const byRef = new Map(entities.map((e) => [refOf(e), e]));
          const router = express.Router();
          router.use(express.json());
          router.get('/entities/by-name/:kind/:namespace/:name', (req, res) => {
            const { kind, namespace, name } = req.params;
            const entity = byRef.get(`${kind}:${namespace}/${name}`.toLowerCase());
            if (entity) res.json(entity);
            else res.status(404).json({ error: { name: 'NotFoundError', message: 'no such entity' } });
          });
          router.post('/entities/by-refs', (req, res) => {
            const refs = req.body?.entityRefs ?? [];
            res.json({ items: refs.map((ref) => byRef.get(String(ref).toLowerCase()) ?? null) });
          });
          httpRouter.use(router);
        },
      });
    },
  });

/**
 * Config cluster `sim` at `url` whose auth provider takes each viewer's token (oidc) and which
 * carries a `serviceAccountToken` as well: kube-watch-native-backstage's opt-in to a shared cache
 * (or follow) read with that token, each viewer's access asked with their own.
 */
function viewerCheckedCluster(url, serviceAccountToken) {
  const caData = Buffer.from(certs.ca).toString('base64');
  const oidc = { authProvider: 'oidc', oidcTokenProvider: 'okta' };
  return { name: 'sim', url, ...oidc, serviceAccountToken, caData, skipMetricsLookup: true };
}

/**
 * The real backend: Kubernetes + Signals backend plugins, kube-watch-native-backstage, a catalog
 * holding LIVE_SVC and OTHER_SVC, the cluster `sim`. The benchmark (bench/backstage-live.js)
 * gives its own `clusters` (config entries), `entities`, `objectTypes` (null: the plugin's
 * defaults) and, for the stock backend, `native: false` (no kube-watch-native-backstage);
 * `native: 'discovered'` adds no line for it: Backstage's discovery (`backend.packages: all`)
 * must find it among the dependencies of the package.json closest to the running script.
 * With `catalog`, the `entities` are read over HTTP too (catalogReads), as an entity page reads them;
 * `permission: 'DENY'` refuses every permission; `nativeInformers` adds to the module's config.
 * @returns {Promise<{ url: string, port: number, signals: { publish(signal: object): Promise<void> }, stop(): Promise<void> }>}
 */
async function startLiveBackend(
  sim,
  {
    live,
    clusters,
    entities = [LIVE_SVC, OTHER_SVC],
    objectTypes = LIVE_TYPES,
    native = true,
    catalog = false,
    permission,
    nativeInformers,
  } = {},
) {
  const captured = {};
  const config = {
    ...(native === 'discovered' && { backend: { packages: 'all' } }),
    kubernetes: kubernetesConfig(
      // No simulator when the caller gives its own clusters (bench/backstage-live-backend.js).
      { url: sim?.url, token: TOKEN, caData: Buffer.from(certs.ca).toString('base64') },
      { clusters, objectTypes, live, nativeInformers },
    ),
  };
  const routing = webSocketRouting();
  const backend = createSpecializedBackend({
    defaultServiceFactories: [
      // `permission: 'DENY'`: every permission refused (the proxy's `kubernetes.proxy` among them).
      ...(permission
        ? [
            ...MOCK_SERVICES.filter((f) => f.service.id !== 'core.permissions'),
            mockServices.permissions.factory({ result: permission }),
          ]
        : MOCK_SERVICES),
      ...routing.features,
      mockServices.rootConfig.factory({ data: config }),
    ],
  });
  backend.add(import('@backstage/plugin-kubernetes-backend'));
  backend.add(import('@backstage/plugin-signals-backend'));
  if (native === 'discovered') backend.add(require('@backstage/backend-defaults').discoveryFeatureLoader);
  else if (native) backend.add(import('kube-watch-native-backstage'));
  backend.add(captureSignals(captured));
  backend.add(catalogServiceMock.factory({ entities }));
  if (catalog) backend.add(catalogReads(entities));
  await backend.start();
  const port = routing.port();
  return { url: `http://127.0.0.1:${port}`, port, signals: captured.signals, stop: () => backend.stop() };
}

/** A signals WebSocket of the backend on `port` as `token`'s user, subscribed to `channel`, collecting what arrives. */
async function connectSignals(port, token, channel) {
  const WebSocket = require('ws');
  const ws = new WebSocket(`ws://127.0.0.1:${port}/api/signals`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const received = [];
  ws.on('message', (data) => received.push(JSON.parse(String(data))));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  ws.send(JSON.stringify({ action: 'subscribe', channel }));
  return { ws, received };
}

/** One load of `entity`'s Kubernetes tab from the backend at `url`, as `token`'s user: the response. */
function postEntity(url, token, entity) {
  return fetch(`${url}/api/kubernetes/services/${entity.metadata.name}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ entity }),
  });
}

/**
 * A page bundle of fixtures/live-tab: app.jsx (React, Backstage's app, the Kubernetes and Signals
 * plugins) by default, or `entry` (a path relative to fixtures/live-tab, or absolute), with more
 * of esbuild's `options` (testbed/nfs-app.js gives its aliases, config and plugins):
 * `{ files, metafile }`, the output files by name.
 */
async function build(entry = 'app.jsx', options = {}) {
  const esbuild = require('esbuild');
  const result = await esbuild.build({
    entryPoints: [path.resolve(__dirname, 'fixtures', 'live-tab', entry)],
    bundle: true,
    write: false,
    outdir: '/bundle',
    format: 'iife',
    jsx: 'automatic',
    metafile: true,
    ...options,
    // Backstage's frontend packages expect a bundler's `global` and `process.env`.
    define: { global: 'globalThis', 'process.env.NODE_ENV': '"production"', ...options.define },
    banner: { js: 'globalThis.process = globalThis.process || { env: {} };' },
    loader: {
      '.svg': 'dataurl',
      '.png': 'dataurl',
      '.woff': 'dataurl',
      '.woff2': 'dataurl',
      '.ttf': 'dataurl',
    },
    logLevel: 'error',
  });
  const files = Object.fromEntries(result.outputFiles.map((f) => [path.basename(f.path), f.contents]));
  return { files, metafile: result.metafile };
}

/** The output files of build(`entry`) by name. */
async function bundle(entry = 'app.jsx') {
  return (await build(entry)).files;
}

/**
 * Passes an HTTP upgrade (a WebSocket) on to 127.0.0.1:`port` as bytes, request head and all;
 * either end's error ends the other, and with `closeTogether` the upstream's close too (the
 * origin leaves it out: it kills a backend's end alone to play a WebSocket dying silently).
 * Returns the upstream socket.
 */
function tunnel(req, socket, head, port, { closeTogether = false } = {}) {
  const upstream = net.connect(port, '127.0.0.1', () => {
    const lines = [`${req.method} ${req.url} HTTP/1.1`];
    for (let i = 0; i < req.rawHeaders.length; i += 2)
      lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
    upstream.write(head);
    upstream.pipe(socket);
    socket.pipe(upstream);
  });
  upstream.on('error', () => socket.destroy());
  if (closeTogether) upstream.on('close', () => socket.destroy());
  socket.on('error', () => upstream.destroy());
  return upstream;
}

/**
 * The page's origin: the page and its bundle, and /api/* proxied to the backend (WebSocket
 * upgrades too), counting the requests to /api/kubernetes. `pageConfig(url)` is the page's
 * `window.LIVE_TAB` (see fixtures/live-tab/app.jsx).
 */
async function startOrigin(files, firstBackendPort, pageConfig) {
  let backendPort = firstBackendPort;
  const kubernetesRequests = [];
  /** The responses of /api/* still open, by their URL. */
  const open = new Map();
  /** Of those whose answer has begun, what silences each (see silenceResponses). */
  const silencers = new Map();
  const page = (
    url,
  ) => `<!doctype html><html><head><meta charset="utf-8"><link rel="stylesheet" href="/app.css">
<script>window.LIVE_TAB = ${JSON.stringify(pageConfig(url))};</script>
</head><body><div id="root"></div><script src="/app.js"></script></body></html>`;
  const server = http.createServer((req, res) => {
    if (req.url.startsWith('/api/')) {
      if (req.url.startsWith('/api/kubernetes')) kubernetesRequests.push({ at: Date.now(), url: req.url });
      const upstream = http.request(
        { host: '127.0.0.1', port: backendPort, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode, answer.headers);
          answer.pipe(res);
          silencers.set(res, () => {
            answer.unpipe(res);
            upstream.destroy();
          });
        },
      );
      upstream.on('error', () => res.destroy());
      // The browser gave up on it (an aborted fetch, the page closed): so does the backend, as
      // behind a real proxy (a log follow would go on and hold the backend's server open).
      res.once('close', () => res.writableFinished || upstream.destroy());
      open.set(res, req.url);
      res.once('close', () => (open.delete(res), silencers.delete(res)));
      req.pipe(upstream);
      return;
    }
    const name = req.url.slice(1);
    if (files[name]) {
      res.writeHead(200, { 'content-type': name.endsWith('.css') ? 'text/css' : 'text/javascript' });
      return res.end(files[name]);
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(page(req.url));
  });
  // A WebSocket upgrade is passed through as bytes, head and all; close() ends them too.
  const tunnels = new Map();
  server.on('upgrade', (req, socket, head) => {
    tunnels.set(socket, tunnel(req, socket, head, backendPort));
    socket.once('close', () => tunnels.delete(socket));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    kubernetesRequests,
    /** From now on /api/* goes to this backend. */
    setBackend: (port) => {
      backendPort = port;
    },
    /**
     * Every response open now whose URL includes `part` is cut (the connection to the browser
     * destroyed, as a network lost); returns how many.
     */
    cutResponses: (part) => {
      const cut = [...open].filter(([, url]) => url.includes(part));
      for (const [res] of cut) res.destroy();
      return cut.length;
    },
    /**
     * Every response open now whose URL includes `part` dies without the browser being told, as
     * one does while a laptop sleeps: the backend's end closes; the browser's stays open and
     * hears nothing more. Returns how many.
     */
    silenceResponses: (part) => {
      const silenced = [...open].filter(([res, url]) => url.includes(part) && silencers.has(res));
      for (const [res] of silenced) silencers.get(res)();
      return silenced.length;
    },
    /**
     * Every WebSocket open now dies without the browser being told, as one does while a laptop
     * sleeps: the backend's end closes; the browser's stays open and hears nothing more.
     */
    silenceWebSockets: () => {
      for (const [socket, upstream] of tunnels) {
        upstream.unpipe(socket);
        socket.unpipe(upstream);
        socket.on('data', () => {});
        upstream.destroy();
      }
    },
    close: () => {
      for (const socket of tunnels.keys()) socket.destroy();
      server.closeAllConnections?.();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

module.exports = {
  viewerCheckedCluster,
  tunnel,
  ID,
  TOKEN,
  LIVE_SVC,
  LIVE_CHANNEL,
  OTHER_SVC,
  delegatedEntity,
  LIVE_TYPES,
  MOCK_SERVICES,
  pod,
  startCluster,
  kubernetesConfig,
  webSocketRouting,
  captureSignals,
  startLiveBackend,
  connectSignals,
  postEntity,
  build,
  bundle,
  startOrigin,
};
