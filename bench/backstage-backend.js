'use strict';
// The Backstage benchmark's backend: a real Backstage backend (startTestBackend with the real
// @backstage/plugin-kubernetes-backend and a catalog of `entities` entities) in its own process,
// forked by bench/backstage.js, with kube-watch-native-backstage (`native`; `native-strip` with
// `stripManagedFields: true`), without it
// (`default`), or with the floor's fetcher (`floor`): the default fetcher's first answer to each
// request, kept and handed back as it is from then on, so what remains of a load is Backstage's
// own router, fan-out and JSON, the part no fetcher can take away. It tells its parent its HTTP port; the parent measures it from outside
// (/proc for CPU and memory, the clusters for requests, its own clock for latency).
//
// The variants `default-viewers`, `native-viewers` and `floor-viewers` (bench/backstage.js
// --viewers) are the same three with every cluster configured for the viewer's own credential
// (`authProvider: oidc`, `oidcTokenProvider: okta`) and the clusters' token as
// `serviceAccountToken`; `authorizationTtl` <ms> as a fourth argument sets the module's.
//
// argv: <variant> <entities> <clusters JSON from backstage-clusters.js's info> [authorizationTtl ms]

const fs = require('node:fs');
const inspector = require('node:inspector');
const { startTestBackend, mockServices } = require('@backstage/backend-test-utils');
const { kubernetesFetcherExtensionPoint } = require('@backstage/plugin-kubernetes-node');
const { catalogServiceMock } = require('@backstage/plugin-catalog-node/testUtils');
const { initModule } = require('../testbed/backend-modules');
const { entities: benchEntities, clusterConfigs } = require('./backstage-common');

const [variant, entityCount, infoJson, authorizationTtlMs] = process.argv.slice(2);
const VIEWERS = variant.endsWith('-viewers');
const info = JSON.parse(infoJson);

const entities = benchEntities(Number(entityCount));

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
          let answer = prepared.get(key);
          if (!answer) {
            answer = fetcher.fetchObjectsForService(params);
            prepared.set(key, answer);
          }
          return answer;
        },
      };
    });
  },
);

async function main() {
  const config = {
    kubernetes: {
      serviceLocatorMethod: { type: 'multiTenant' },
      clusterLocatorMethods: [
        {
          type: 'config',
          clusters: clusterConfigs(info, { viewers: VIEWERS }),
        },
      ],
      customResources: [{ group: 'example.com', apiVersion: 'v1', plural: 'widgets' }],
      ...(variant === 'native-strip' && { nativeInformers: { stripManagedFields: true } }),
      ...(authorizationTtlMs !== undefined && {
        nativeInformers: { authorizationTtl: { milliseconds: Number(authorizationTtlMs) } },
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
  if (variant.startsWith('native')) features.push(import('kube-watch-native-backstage'));
  if (variant.startsWith('floor')) features.push(floorModule);
  const backend = await startTestBackend({ features });
  process.send({ type: 'ready', port: backend.server.address().port });
  const profiler = cpuProfiler();
  process.on('message', async (msg) => {
    if (msg.cmd === 'profile-start') await profiler.start();
    if (msg.cmd === 'profile-stop') await profiler.stop(msg.file);
    if (msg.cmd?.startsWith('profile-')) process.send({ id: msg.id });
    if (msg.cmd === 'stop') {
      await backend.stop();
      process.exit(0);
    }
  });
}

/** V8's CPU profiler on this process's main thread (bench/backstage.js --profile). */
function cpuProfiler() {
  const session = new inspector.Session();
  session.connect();
  const post = (method) =>
    new Promise((resolve, reject) =>
      session.post(method, (error, result) => (error ? reject(error) : resolve(result))),
    );
  return {
    start: () => post('Profiler.enable').then(() => post('Profiler.start')),
    stop: async (file) => fs.writeFileSync(file, JSON.stringify((await post('Profiler.stop')).profile)),
  };
}

process.on('disconnect', () => process.exit(0));
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
