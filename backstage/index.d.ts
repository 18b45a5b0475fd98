// Types of kube-watch-native/backstage, written by hand against the published
// @backstage/backend-plugin-api and @backstage/plugin-kubernetes-node (optional peer
// dependencies of kube-watch-native: only this entry point needs them).
// __test__/types/backstage/module.ts compiles a backend that uses them under --strict.

import type {
  BackendFeature,
  LoggerService,
  ServiceFactory,
  ServiceRef,
} from '@backstage/backend-plugin-api';
import type {
  ClusterDetails,
  FetchResponseWrapper,
  KubernetesCredential,
  KubernetesFetcher,
  ObjectFetchParams,
} from '@backstage/plugin-kubernetes-node';
import type { NativeKubernetesWatcher } from '..';

/**
 * The Kubernetes plugin's fetcher answered from shared native informers:
 * `backend.add(import('kube-watch-native/backstage'))` beside `@backstage/plugin-kubernetes-backend`.
 * Configured under `kubernetes.nativeInformers` (see config.d.ts).
 */
declare const kubernetesModuleNativeInformers: BackendFeature;
export default kubernetesModuleNativeInformers;
export { kubernetesModuleNativeInformers };

/**
 * The process's one NativeKubernetesWatcher (root scoped; made on first use, logging through the
 * root logger). Declare it in a plugin's `deps` to share its connections and informers.
 */
export declare const nativeWatcherServiceRef: ServiceRef<NativeKubernetesWatcher, 'root', 'singleton'>;

/** The factory `nativeWatcherServiceRef` uses by default (add it, or your own, to replace it). */
export declare const nativeWatcherServiceFactory: ServiceFactory<
  NativeKubernetesWatcher,
  'root',
  'singleton'
>;

/** Options of {@link NativeInformerFetcher}. */
export interface NativeInformerFetcherOptions {
  /** The watcher whose informers it uses. */
  watcher: NativeKubernetesWatcher;
  /** Backstage's own fetcher (`getDefault()` of `addFetcher`): what is not cached goes there. */
  defaultFetcher: KubernetesFetcher;
  logger?: LoggerService;
  /** An informer no request used for this long closes. Default 600 000 (10 minutes). */
  idleTimeoutMs?: number;
  /** A first request waits this long for an informer's initial list, then asks the default fetcher. Default 5 000. */
  syncTimeoutMs?: number;
  /** Answer without `metadata.managedFields`. Default true. */
  stripManagedFields?: boolean;
  /** The `objectType`s served from informers (`customresources` for all custom resources). Default: every type but secrets. */
  objectTypes?: Set<string>;
}

/** What {@link NativeInformerFetcher.informers} reports about one informer. */
export interface NativeInformerInfo {
  cluster: string;
  group: string;
  apiVersion: string;
  plural: string;
  namespace?: string;
  labelSelector: string;
  synced: boolean;
  /** Objects cached. */
  size: number;
  /** The failure it reports until it works again. */
  error: { errorType: string; statusCode?: number; resourcePath?: string } | null;
  /** Since a request last used it. */
  idleMs: number;
}

/** The fetcher the module registers; usable on its own with any KubernetesFetcher as the default. */
export declare class NativeInformerFetcher implements KubernetesFetcher {
  constructor(options: NativeInformerFetcherOptions);
  fetchObjectsForService(params: ObjectFetchParams): Promise<FetchResponseWrapper>;
  fetchPodMetricsByNamespaces(
    clusterDetails: ClusterDetails,
    credential: KubernetesCredential,
    namespaces: Set<string>,
    labelSelector?: string,
  ): Promise<FetchResponseWrapper>;
  /** The informers open now. */
  informers(): NativeInformerInfo[];
  /** Closes every informer; later requests go to the default fetcher. */
  close(): void;
}
