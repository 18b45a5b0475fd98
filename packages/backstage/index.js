'use strict';
// kube-watch-native-backstage: a Backstage backend module for the Kubernetes plugin.
//
//   backend.add(import('@backstage/plugin-kubernetes-backend'));
//   backend.add(import('kube-watch-native-backstage'));
//
// It registers, through `kubernetesFetcherExtensionPoint`, a fetcher that answers the Kubernetes
// tab from shared native informers (./serving/fetcher.js), and provides the process's one
// NativeKubernetesWatcher to every plugin as a service (`nativeWatcherServiceRef`). The Backstage
// packages it needs are optional peer dependencies of kube-watch-native: only this entry point
// loads them.

Object.defineProperty(exports, '__esModule', { value: true });

const {
  coreServices,
  createBackendModule,
  createServiceFactory,
  createServiceRef,
} = require('@backstage/backend-plugin-api');
const {
  kubernetesFetcherExtensionPoint,
  kubernetesObjectsProviderExtensionPoint,
  kubernetesRouterExtensionPoint,
} = require('@backstage/plugin-kubernetes-node');
const { NativeKubernetesWatcher } = require('kube-watch-native');
const { NativeInformerFetcher } = require('./serving/fetcher');
const { readNativeInformersConfig } = require('./config');
const { registerModuleMetrics } = require('./metrics');
const { setUpLive, loadSignalsNode } = require('./following/provider');
const { eventsModuleEndPollsOnShutdown } = require('./events-polls');
const { preloadKubernetesClient } = require('./preload');
const { clusterRetryLogger } = require('./cluster-log');
const { proxyRouter } = require('./serving/proxy');

/** The live tab's dependencies, only where the app has @backstage/plugin-signals-node (./following/provider.js). */
const signalsNode = loadSignalsNode();
const liveDeps = signalsNode && {
  signals: signalsNode.signalsServiceRef,
  objectsProviders: kubernetesObjectsProviderExtensionPoint,
  auth: coreServices.auth,
  instanceMetadata: coreServices.rootInstanceMetadata,
  httpRouter: coreServices.httpRouter,
  httpAuth: coreServices.httpAuth,
  database: coreServices.database,
};

/**
 * The process's NativeKubernetesWatcher, as a root service: every plugin that depends on it gets
 * the same watcher, so their watches and informers share connections and caches.
 */
const nativeWatcherServiceRef = createServiceRef({
  id: 'kube-watch-native.watcher',
  scope: 'root',
  defaultFactory: async () => nativeWatcherServiceFactory,
});

/**
 * Builds the watcher on first use, logging through Backstage's root logger; the backend's
 * shutdown closes it (every watch and informer any plugin opened through it).
 */
const nativeWatcherServiceFactory = createServiceFactory({
  service: nativeWatcherServiceRef,
  initialization: 'lazy',
  deps: { rootLogger: coreServices.rootLogger, rootLifecycle: coreServices.rootLifecycle },
  factory({ rootLogger, rootLifecycle }) {
    const watcher = new NativeKubernetesWatcher({
      logger: clusterRetryLogger(rootLogger.child({ service: 'kube-watch-native' })),
    });
    rootLifecycle.addShutdownHook(() => watcher.close());
    return watcher;
  },
});

/** The Kubernetes plugin's fetcher, answered from shared informers of the process's watcher. */
const kubernetesModuleNativeInformers = createBackendModule({
  pluginId: 'kubernetes',
  moduleId: 'native-informers',
  register(env) {
    env.registerInit({
      deps: {
        fetchers: kubernetesFetcherExtensionPoint,
        config: coreServices.rootConfig,
        logger: coreServices.logger,
        lifecycle: coreServices.lifecycle,
        rootLifecycle: coreServices.rootLifecycle,
        watcher: nativeWatcherServiceRef,
        routers: kubernetesRouterExtensionPoint,
        permissions: coreServices.permissions,
        proxyAuth: coreServices.httpAuth,
        auditor: coreServices.auditor,
        ...liveDeps,
      },
      async init({
        fetchers,
        config,
        logger,
        lifecycle,
        rootLifecycle,
        watcher,
        routers,
        permissions,
        proxyAuth,
        auditor,
        ...live
      }) {
        const options = readNativeInformersConfig(config);
        if (!options.enabled) {
          logger.info(
            'kube-watch-native: kubernetes.nativeInformers.enabled is false; the default fetcher answers',
          );
          return;
        }
        await preloadKubernetesClient(logger);
        // The proxy's routes for a pod's log and an object's events, from shared native
        // streams and informers (./serving/proxy.js).
        let fetcher;
        let eventsView;
        const proxy =
          (options.proxyLogs || options.proxyEvents) &&
          proxyRouter({
            watcher,
            fetcher: () => fetcher,
            eventsView: () => eventsView,
            permissions,
            httpAuth: proxyAuth,
            auditor,
            logger,
            routes: { logs: options.proxyLogs, events: options.proxyEvents },
          });
        if (proxy) {
          try {
            routers.addRouter(proxy);
          } catch (err) {
            // The plugin takes one custom router: another module's stays, with the stock proxy.
            logger.warn(`kube-watch-native: the proxy's routes are the stock ones: ${err.message}`);
          }
        }
        // Two wings: serving loads (./serving/), and following them for the live tab
        // (./following/), which meet at the fetcher's `follower` (./serving/fetcher.js).
        const following = (await setUpLive({ options: options.live, logger, config, ...live })) ?? {};
        const { publisher, follower } = following;
        eventsView = following.eventsView;
        let metrics;
        fetchers.addFetcher(async ({ getDefault }) => {
          fetcher = new NativeInformerFetcher({
            watcher,
            defaultFetcher: await getDefault(),
            logger,
            ...options,
            follower,
          });
          metrics = registerModuleMetrics(fetcher, publisher);
          return fetcher;
        });
        // With replicas, the publisher hands its viewers to the others (./following/signals.js) before
        // any plugin shuts down: the plugin's events service refuses to publish once its own
        // shutdown hook, run beside this plugin's others, has begun.
        rootLifecycle.addBeforeShutdownHook?.(() => {
          // The follows being answered end first: the HTTP server waits for open responses.
          if (proxy) proxy.close();
          return publisher?.close();
        });
        lifecycle.addShutdownHook(async () => {
          await publisher?.close();
          metrics?.close();
          fetcher?.close();
        });
      },
    });
  },
});

exports.default = kubernetesModuleNativeInformers;
exports.kubernetesModuleNativeInformers = kubernetesModuleNativeInformers;
exports.nativeWatcherServiceRef = nativeWatcherServiceRef;
exports.nativeWatcherServiceFactory = nativeWatcherServiceFactory;
exports.NativeInformerFetcher = NativeInformerFetcher;
exports.eventsModuleEndPollsOnShutdown = eventsModuleEndPollsOnShutdown;
