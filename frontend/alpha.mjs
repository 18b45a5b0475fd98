// kube-watch-native/live-frontend/alpha: the live Kubernetes tab in Backstage's new frontend
// system. A module of the `kubernetes` plugin whose API extension has the plugin's own id
// (`api:kubernetes`), so it replaces the plugin's `kubernetesApiRef` factory:
//
//   // packages/app/src/App.tsx
//   import { liveKubernetesModule } from 'kube-watch-native/live-frontend/alpha';
//   createApp({ features: [kubernetesPlugin, signalsPlugin, liveKubernetesModule] });

import { ApiBlueprint, createFrontendModule } from '@backstage/frontend-plugin-api';
import { kubernetesApiRef } from '@backstage/plugin-kubernetes-react';
import { createLiveKubernetesApi, liveKubernetesApiDeps } from './index.mjs';

/** The `api:kubernetes` extension, answered by LiveKubernetesApi. */
export const liveKubernetesApiExtension = ApiBlueprint.make({
  params: (defineParams) =>
    defineParams({
      api: kubernetesApiRef,
      deps: liveKubernetesApiDeps,
      factory: (deps) => createLiveKubernetesApi(deps),
    }),
});

/** Add to the app's features beside the Kubernetes and Signals plugins. */
export const liveKubernetesModule = createFrontendModule({
  pluginId: 'kubernetes',
  extensions: [liveKubernetesApiExtension],
});
