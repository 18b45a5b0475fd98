'use strict';
// The live tab's wiring in the backend module: when the Signals backend plugin is installed, an
// objects provider that wraps the Kubernetes plugin's default one (built on whichever fetcher
// is registered, this module's included) and runs each user's call inside
// `liveRequestContext`, so the fetcher knows who is looking at which entity; and the publisher
// (./live.js) that the fetcher tells about changes.
//
// Optional all the way: `@backstage/plugin-signals-node` is not a dependency of this package (it
// is loaded only if the app has it), and `signalsServiceRef` always resolves where it is
// installed (it has a default factory that publishes on the events service), so whether the
// Signals backend plugin is there to deliver anything is read from the instance's installed
// plugins. Without it nothing is registered and nothing changes.

const { createLivePublisher, liveRequestContext } = require('./live');

/** `@backstage/plugin-signals-node` if the app has it installed, else null. */
function loadSignalsNode() {
  try {
    return require('@backstage/plugin-signals-node');
  } catch (error) {
    if (error?.code === 'MODULE_NOT_FOUND') return null;
    throw error;
  }
}

/** `catalog-model`'s stringifyEntityRef, which the frontend uses for the channel name too. */
function entityRefOf(entity) {
  const kind = entity.kind;
  const namespace = entity.metadata.namespace ?? 'default';
  return `${kind}:${namespace}/${entity.metadata.name}`.toLowerCase();
}

/**
 * The default objects provider, with each user's call run inside `liveRequestContext` as
 * `{ userEntityRef, entityRef }`. A service's call (an action, a scheduled task) runs as it is.
 */
class LiveObjectsProvider {
  #inner;
  #auth;

  constructor({ inner, auth }) {
    this.#inner = inner;
    this.#auth = auth;
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
    return liveRequestContext.run(context, call);
  }
}

/**
 * Registers the live objects provider and makes the publisher, when the Signals backend plugin
 * is installed and `kubernetes.nativeInformers.live.enabled` is not false; else undefined.
 * Called from the module's init, where extension points still take registrations.
 */
async function setUpLive({ options, logger, signals, objectsProviders, auth, instanceMetadata }) {
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
  const { enabled: _enabled, ...publisherOptions } = options;
  const live = createLivePublisher({ signals, logger, ...publisherOptions });
  objectsProviders.addObjectsProvider(
    async ({ getDefault }) => new LiveObjectsProvider({ inner: await getDefault(), auth }),
  );
  logger.info('kube-watch-native: live Kubernetes tab on (signals on kubernetes:<entityRef>)');
  return live;
}

module.exports = {
  setUpLive,
  loadSignalsNode,
  LiveObjectsProvider,
  entityRefOf,
};
