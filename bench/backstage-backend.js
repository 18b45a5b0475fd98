'use strict';
// The Backstage benchmarks' backend in its own process, so that its CPU is its own (bench/child.js's
// server protocol), over the clusters of bench/clusters/backstage.js:
//   - bench/backstage.js's: startTestBackend with @backstage/plugin-kubernetes-backend and a
//     catalog of `entities`, with kube-watch-native-backstage (`native`; `native-strip`:
//     stripManagedFields; `native-against`: the module of the build `against`), without it
//     (`default`), or with the floor's fetcher (`floor`: the default fetcher's first answer to each
//     request, kept, so what remains is Backstage's own router, fan-out and JSON). `*-viewers`:
//     every cluster takes the viewer's own credential (oidc), the clusters' token as
//     serviceAccountToken; `authorizationTtlMs` sets the module's.
//   - bench/backstage-live.js's: the Kubernetes and Signals plugins (testbed/live-helpers.js), with
//     the module (`live`) or without (`stock`), counting the signals it publishes; `viewers` as above.
// argv: <{ variant, entities, info (the clusters' ready), authorizationTtlMs?, viewers?, against? }>.
// Ready: { port }. Commands: 'signals' → { signals }; 'profile-start' and 'profile-stop' { file }:
// a V8 CPU profile of the main thread (bench/backstage.js --profile).

const fs = require('node:fs');
const inspector = require('node:inspector');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { startTestBackend, mockServices } = require('@backstage/backend-test-utils');
const { kubernetesFetcherExtensionPoint } = require('@backstage/plugin-kubernetes-node');
const { catalogServiceMock } = require('@backstage/plugin-catalog-node/testUtils');
const { initModule } = require('../testbed/backend-modules');
const { startLiveBackend } = require('../testbed/live-helpers');
const { entities: benchEntities, clusterConfigs } = require('./backstage-common');
const { serve } = require('./child');

const config = JSON.parse(process.argv[2]);
const { variant, info, authorizationTtlMs, viewers, against } = config;
const entities = benchEntities(config.entities);

/** The floor: each request's answer, asked of the default fetcher once (at warm-up), then kept. */
const floorModule = initModule(
  'kubernetes',
  'bench-floor',
  { fetchers: kubernetesFetcherExtensionPoint },
  async ({ fetchers }) => {
    fetchers.addFetcher(async ({ getDefault }) => {
      const fetcher = await getDefault();
      const prepared = new Map();
      return {
        fetchPodMetricsByNamespaces: (...args) => fetcher.fetchPodMetricsByNamespaces(...args),
        fetchObjectsForService(params) {
          const key = JSON.stringify([
            params.clusterDetails.name,
            params.labelSelector,
            params.namespace,
            [...params.objectTypesToFetch].map((t) => t.plural),
            params.customResources.map((c) => c.plural),
          ]);
          if (!prepared.has(key)) prepared.set(key, fetcher.fetchObjectsForService(params));
          return prepared.get(key);
        },
      };
    });
  },
);

/** bench/backstage.js's backend: startTestBackend with the variant's fetcher. */
async function testBackend() {
  const config = {
    kubernetes: {
      serviceLocatorMethod: { type: 'multiTenant' },
      clusterLocatorMethods: [
        { type: 'config', clusters: clusterConfigs(info, { viewers: variant.endsWith('-viewers') }) },
      ],
      customResources: [{ group: 'example.com', apiVersion: 'v1', plural: 'widgets' }],
      ...(variant === 'native-strip' && { nativeInformers: { stripManagedFields: true } }),
      ...(authorizationTtlMs !== undefined && {
        nativeInformers: { authorizationTtl: { milliseconds: authorizationTtlMs } },
      }),
    },
  };
  const features = [
    import('@backstage/plugin-kubernetes-backend'),
    catalogServiceMock.factory({ entities }),
    mockServices.rootConfig.factory({ data: config }),
    // The plugin logs a line per load at info: both variants alike, at warn.
    mockServices.rootLogger.factory({ level: 'warn' }),
  ];
  if (variant === 'native-against') features.push(import(pathToFileURL(path.join(against, 'index.js')).href));
  else if (variant.startsWith('native')) features.push(import('kube-watch-native-backstage'));
  if (variant.startsWith('floor')) features.push(floorModule);
  const backend = await startTestBackend({ features });
  return { port: backend.server.address().port, stop: () => backend.stop() };
}

/** bench/backstage-live.js's backend, counting the signals the module publishes. */
async function liveBackend() {
  const backend = await startLiveBackend(null, {
    native: variant === 'live',
    entities,
    objectTypes: null,
    clusters: clusterConfigs(info, { viewers }),
  });
  // The module publishes through the Kubernetes plugin's signals service, this very object.
  const { publish } = backend.signals;
  backend.signals.publish = function (...args) {
    backend.published = (backend.published ?? 0) + 1;
    return publish.apply(this, args);
  };
  return backend;
}

/** V8's CPU profiler on this process's main thread. */
function cpuProfiler() {
  const session = new inspector.Session();
  session.connect();
  const post = (method) =>
    new Promise((resolve, reject) =>
      session.post(method, (error, result) => (error ? reject(error) : resolve(result))),
    );
  return {
    'profile-start': () => post('Profiler.enable').then(() => post('Profiler.start')),
    'profile-stop': async ({ file }) =>
      fs.writeFileSync(file, JSON.stringify((await post('Profiler.stop')).profile)),
  };
}

serve(
  (async () => {
    const backend = await (variant === 'live' || variant === 'stock' ? liveBackend() : testBackend());
    return {
      ready: { port: backend.port },
      commands: { signals: () => ({ signals: backend.published ?? 0 }), ...cpuProfiler() },
      stop: () => backend.stop(),
    };
  })(),
);
