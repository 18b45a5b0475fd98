// kube-watch-native-live-frontend: the live Kubernetes tab for a Backstage app (browser only).
//
//   // packages/app/src/apis.ts (legacy frontend system)
//   import { liveKubernetesApiFactory } from 'kube-watch-native-live-frontend';
//   export const apis = [..., liveKubernetesApiFactory];
//
//   <EntityKubernetesContent refreshIntervalMs={500} />  // polls memory, not the network
//
//   // an entity's live logs and events, on the entity page
//   <EntityLayout.Route path="/kubernetes-logs" title="Logs"><EntityLiveLogsContent /></EntityLayout.Route>
//
// The new frontend system: `kube-watch-native-live-frontend/alpha`. See README.md.

import { createApiFactory, discoveryApiRef, fetchApiRef } from '@backstage/core-plugin-api';
import {
  KubernetesBackendClient,
  kubernetesApiRef,
  kubernetesAuthProvidersApiRef,
} from '@backstage/plugin-kubernetes-react';
import { signalApiRef } from '@backstage/plugin-signals-react';
import { LiveKubernetesApi, liveAnswerFetch } from './live-api.mjs';

export {
  LiveKubernetesApi,
  Heartbeat,
  browserWakes,
  entityRefOf,
  channelOf,
  liveAnswerFetch,
  LIVE_HEADER,
} from './live-api.mjs';
export { EntityLiveLogsContent } from './live-logs.mjs';

/** The deps both frontend systems give the factory. */
export const liveKubernetesApiDeps = {
  discoveryApi: discoveryApiRef,
  fetchApi: fetchApiRef,
  kubernetesAuthProvidersApi: kubernetesAuthProvidersApiRef,
  signalApi: signalApiRef,
};

/**
 * Builds the LiveKubernetesApi around the default client, as the Kubernetes plugin builds that,
 * with a fetchApi that notes which answers the backend marked live (only those are kept).
 */
export function createLiveKubernetesApi(
  { discoveryApi, fetchApi, kubernetesAuthProvidersApi, signalApi },
  options = {},
) {
  const marked = liveAnswerFetch(fetchApi);
  const client = new KubernetesBackendClient({
    discoveryApi,
    fetchApi: marked.fetchApi,
    kubernetesAuthProvidersApi,
  });
  return new LiveKubernetesApi({ client, signalApi, isLive: marked.isLive, ...options });
}

/** An API factory for `kubernetesApiRef` with these options (`maxAgeMs`, `idleMs`). */
export function createLiveKubernetesApiFactory(options = {}) {
  return createApiFactory({
    api: kubernetesApiRef,
    deps: liveKubernetesApiDeps,
    factory: (deps) => createLiveKubernetesApi(deps, options),
  });
}

/** The legacy app's override of `kubernetesApiRef`, with the default options. */
export const liveKubernetesApiFactory = createLiveKubernetesApiFactory();
