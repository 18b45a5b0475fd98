// Types of kube-watch-native/live-frontend/alpha: the new frontend system's pieces.

import type { ExtensionDefinition, FrontendModule } from '@backstage/frontend-plugin-api';

/** The `api:kubernetes` extension, answered by LiveKubernetesApi. */
export declare const liveKubernetesApiExtension: ExtensionDefinition;

/** A module of the `kubernetes` plugin replacing its API; add it to the app's features. */
export declare const liveKubernetesModule: FrontendModule;
