// Types of kube-watch-native-live-frontend/alpha: the new frontend system's pieces.

import type { ExtensionDefinition, FrontendModule } from '@backstage/frontend-plugin-api';

/** The `api:kubernetes` extension, answered by LiveKubernetesApi. */
export declare const liveKubernetesApiExtension: ExtensionDefinition;

/** The `entity-content:kubernetes/kubernetes` extension: the plugin's tab, asking every 500 ms. */
export declare const liveKubernetesEntityContent: ExtensionDefinition;

/** The `entity-content:kubernetes/live-logs` extension: EntityLiveLogsContent, for the same entities. */
export declare const liveKubernetesLogsEntityContent: ExtensionDefinition;

/** How often the live tab asks the API (memory while live). */
export declare const LIVE_REFRESH_MS: number;

/**
 * A module of the `kubernetes` plugin replacing its API and its entity content, and adding the
 * live logs; add it to the app's features.
 */
export declare const liveKubernetesModule: FrontendModule;

/** What Backstage's feature discovery (`app.packages: all`) installs: liveKubernetesModule. */
declare const _default: FrontendModule;
export default _default;
