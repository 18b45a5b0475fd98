'use strict';
// The Kubernetes backend imports @kubernetes/client-node, an ES module that takes about 600 ms
// of the main thread to load, lazily: at the first load of a tab after the backend starts (its
// serviceAccount strategy, its connections and its pod metrics import it). Every replica of a
// rolling restart made its first viewer wait for it, and every other request to that replica
// with them. The module loads it while the backend starts instead, from where the Kubernetes
// backend resolves it, so that the backend's own import finds the same module already loaded.

const { createRequire } = require('node:module');
const { pathToFileURL } = require('node:url');

const CLIENT = '@kubernetes/client-node';

/**
 * Loads the Kubernetes backend's @kubernetes/client-node now; resolves with its URL, or null
 * (with a logged warning that names the cause) when it cannot be found or loaded: the backend
 * then loads it at its first load, as it does without this module.
 */
async function preloadKubernetesClient(logger) {
  const started = Date.now();
  try {
    const fromBackend = createRequire(require.resolve('@backstage/plugin-kubernetes-backend'));
    const url = pathToFileURL(fromBackend.resolve(CLIENT)).href;
    await import(url);
    logger.debug(`kube-watch-native: ${CLIENT} loaded in ${Date.now() - started} ms, before the first load`);
    return url;
  } catch (error) {
    logger.warn(
      `kube-watch-native: could not load ${CLIENT} ahead of the first load (${error.message}); ` +
        'the Kubernetes backend loads it then',
    );
    return null;
  }
}

module.exports = { preloadKubernetesClient };
