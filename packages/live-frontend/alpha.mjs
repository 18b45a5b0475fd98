// kube-watch-native-live-frontend/alpha: the live Kubernetes tab in Backstage's new frontend
// system. A module of the `kubernetes` plugin. Two of its extensions have the plugin's own ids, so
// they replace the plugin's: its `kubernetesApiRef` factory (`api:kubernetes`), answered by
// LiveKubernetesApi, and its entity content (`entity-content:kubernetes/kubernetes`), which the
// stock plugin renders on its own 10 s timer and this one asks of the API every 500 ms (answered
// from memory while live, so no request leaves the browser). A third adds the entity's live logs
// and events (`entity-content:kubernetes/live-logs`, EntityLiveLogsContent):
//
//   // packages/app/src/App.tsx
//   import { liveKubernetesModule } from 'kube-watch-native-live-frontend/alpha';
//   createApp({ features: [kubernetesPlugin, signalsPlugin, liveKubernetesModule] });

import { createElement } from 'react';
import { ApiBlueprint, createFrontendModule } from '@backstage/frontend-plugin-api';
import { EntityContentBlueprint } from '@backstage/plugin-catalog-react/alpha';
import { kubernetesApiRef } from '@backstage/plugin-kubernetes-react';
import { createLiveKubernetesApi, liveKubernetesApiDeps } from './index.mjs';

/** How often the live tab asks the API: memory while live, the network at the stock pace when not. */
export const LIVE_REFRESH_MS = 500;

/** The `api:kubernetes` extension, answered by LiveKubernetesApi. */
export const liveKubernetesApiExtension = ApiBlueprint.make({
  params: (defineParams) =>
    defineParams({
      api: kubernetesApiRef,
      deps: liveKubernetesApiDeps,
      factory: (deps) => createLiveKubernetesApi(deps),
    }),
});

/** The entities the Kubernetes tab is shown for: those with either annotation. */
const KUBERNETES_ENTITIES = {
  $any: [
    { 'metadata.annotations.backstage.io/kubernetes-id': { $exists: true } },
    { 'metadata.annotations.backstage.io/kubernetes-label-selector': { $exists: true } },
  ],
};

/**
 * The `entity-content:kubernetes/kubernetes` extension: the plugin's own tab (its exported
 * `Router`, shown for the same entities), asking every LIVE_REFRESH_MS.
 */
export const liveKubernetesEntityContent = EntityContentBlueprint.make({
  name: 'kubernetes',
  params: {
    path: '/kubernetes',
    title: 'Kubernetes',
    group: 'deployment',
    filter: KUBERNETES_ENTITIES,
    loader: () =>
      import('@backstage/plugin-kubernetes').then((m) =>
        createElement(m.Router, { refreshIntervalMs: LIVE_REFRESH_MS }),
      ),
  },
});

/**
 * The `entity-content:kubernetes/live-logs` extension: the entity's live logs and events
 * (EntityLiveLogsContent), for the same entities.
 */
export const liveKubernetesLogsEntityContent = EntityContentBlueprint.make({
  name: 'live-logs',
  params: {
    path: '/kubernetes-logs',
    title: 'Logs',
    group: 'deployment',
    filter: KUBERNETES_ENTITIES,
    loader: () => import('./live-logs.mjs').then((m) => createElement(m.EntityLiveLogsContent)),
  },
});

/** Add to the app's features beside the Kubernetes and Signals plugins. */
export const liveKubernetesModule = createFrontendModule({
  pluginId: 'kubernetes',
  extensions: [liveKubernetesApiExtension, liveKubernetesEntityContent, liveKubernetesLogsEntityContent],
});

/** What Backstage's feature discovery (`app.packages: all`) installs. */
export default liveKubernetesModule;
