// Types of kube-watch-native-backstage, written by hand against the published
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
import type { NativeKubernetesWatcher } from 'kube-watch-native';

/**
 * The Kubernetes plugin's fetcher answered from shared native informers:
 * `backend.add(import('kube-watch-native-backstage'))` beside `@backstage/plugin-kubernetes-backend`.
 * Configured under `kubernetes.nativeInformers` (see config.d.ts).
 */
declare const kubernetesModuleNativeInformers: BackendFeature;
export default kubernetesModuleNativeInformers;
export { kubernetesModuleNativeInformers };

/**
 * A module of the events backend plugin that ends its waiting long polls at shutdown, so that a
 * replica exits within a second of SIGTERM instead of after `events.notifyTimeoutMs` (55 s):
 * `backend.add(eventsModuleEndPollsOnShutdown)` beside `@backstage/plugin-events-backend`.
 */
export declare const eventsModuleEndPollsOnShutdown: BackendFeature;

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
  /**
   * The first requests wait this long (once per informer) for its initial list, then ask the
   * default fetcher. Default 5 000.
   */
  syncTimeoutMs?: number;
  /** Cache and answer without `metadata.managedFields`. Default false (answers as the default's). */
  stripManagedFields?: boolean;
  /**
   * The `objectType`s served from informers (`customresources` for all custom resources).
   * Default: every type but secrets; secrets are cached only when named here, by any route.
   */
  objectTypes?: Set<string>;
  /** Informers open at most; past it the default fetcher answers. Default 2 000. */
  maxInformers?: number;
  /** Bytes of JSON cached at most over every informer; past it no informer opens. Default 1 GiB. */
  maxCachedBytes?: number;
  /**
   * Auth providers whose rotating tokens keep their informers (any other provider's informers
   * belong to the exact credential). Default `['aws', 'azure', 'googleServiceAccount']`.
   */
  rotatingAuthProviders?: string[];
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
  /** The failure not yet over (until a request succeeds, or an event or bookmark comes). */
  error: { errorType: string; statusCode: number; retrying: boolean } | null;
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
  /** How many resources were answered from a cache and how many by the default fetcher. */
  answered(): { cached: number; delegated: number };
  /** Identities (credential holders) kept now; pruned with their informers. */
  identities(): number;
  /** Closes every informer; later requests go to the default fetcher. */
  close(): void;
}
