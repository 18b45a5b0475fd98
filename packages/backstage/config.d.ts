// Configuration schema of kube-watch-native-backstage (the `configSchema` of package.json), read
// by Backstage's config loader as the schemas of Backstage's own packages are.

import type { HumanDuration } from '@backstage/types';

export interface Config {
  kubernetes?: {
    /** kube-watch-native-backstage: the Kubernetes tab answered from shared native informers. */
    nativeInformers?: {
      /**
       * Whether the module registers its fetcher; false leaves Backstage's default fetcher alone.
       * Default true.
       */
      enabled?: boolean;
      /**
       * Whether the plugin's proxy route for a pod's log (`/proxy/api/v1/namespaces/{ns}/pods/{pod}/log`)
       * is answered from the native log stream, a follow shared by the callers the API server
       * answers the same (one cluster connection and credential); false leaves it to the stock
       * proxy. Default true.
       */
      proxyLogs?: boolean;
      /**
       * Whether the plugin's proxy route for an object's events (`/proxy/api/v1/namespaces/{ns}/events
       * ?fieldSelector=involvedObject.…`) is answered from one events informer per identity and
       * cluster, within the informers' bounds; false leaves it to the stock proxy. Default true.
       */
      proxyEvents?: boolean;
      /**
       * An informer that no tab load has used for this long closes (its cache is freed and its
       * watch ends). A HumanDuration object or a string such as '10m' or 'PT10M'. Default 10 minutes.
       */
      idleTimeout?: HumanDuration | string;
      /**
       * How long the first tab load that needs an informer waits for its initial list; after
       * that the load is answered with a live LIST by the default fetcher while the informer
       * goes on syncing. Default 5 seconds.
       */
      syncTimeout?: HumanDuration | string;
      /**
       * Drop `metadata.managedFields` from the objects cached and answered: often half of an
       * applied object's JSON, so about half the cache's memory. Off by default, since the tab's
       * YAML view has a "managed fields" switch that then shows nothing. Default false.
       */
      stripManagedFields?: boolean;
      /**
       * Informers open at most, over the whole backend. Past it, a request that needs another
       * is answered by the default fetcher (one warning a minute); nothing cached is disturbed.
       * Default 2000: 50 clusters × (13 default types + 2 custom resources) for the entities
       * found by `backstage.io/kubernetes-id`, and as many again for entities with selectors of
       * their own.
       */
      maxInformers?: number;
      /**
       * Bytes of JSON cached at most, over every informer (held packed, about half that).
       * Past it, no informer is opened, as for maxInformers. Default 1 GiB.
       */
      maxCachedBytes?: number;
      /**
       * The part (0 to 1) of maxInformers and of maxCachedBytes that the informers opened by one
       * user's loads may take, so that one user cannot take the bounds from every other.
       * Default 0.25.
       */
      userShare?: number;
      /**
       * The part (0 to 1) of maxInformers that custom resources named in request bodies (not in
       * `kubernetes.customResources` or the cluster's own) may take. Default 0.1.
       */
      bodyShare?: number;
      /**
       * A cache is served only while its watch has shown life this recently (the watch opened,
       * an event, a bookmark: the API server sends one about once a minute); a stream silent
       * longer is cut and watched again, and loads meanwhile get the default fetcher's LIST.
       * Default 90 seconds.
       */
      liveness?: HumanDuration | string;
      /**
       * How often the credential of informers in use is checked with the API server (a
       * SelfSubjectReview): the server authenticates a watch only when it starts, so a revoked
       * token would otherwise be served until the watch ends. A cache is served only while its
       * credential passed a check within twice this. Default 30 seconds.
       */
      credentialCheckInterval?: HumanDuration | string;
      /**
       * Clusters whose auth provider takes the viewer's token (oidc, google, aks, a custom
       * per-viewer strategy) and whose config also carries a serviceAccountToken are cached with
       * that token; each viewer's access is asked of the API server with the viewer's own token
       * (a SelfSubjectAccessReview of the LIST the default would send), and remembered this long
       * per viewer, type and namespace. A revoked binding shows within it (the default fetcher
       * shows it at once); 0 asks on every load. Default 10 seconds.
       */
      authorizationTtl?: HumanDuration | string;
      /** Access decisions remembered at most (keyed hashes, never tokens). Default 10 000. */
      maxDecisions?: number;
      /**
       * Auth providers whose token rotates (minted from the backend's own identity): their
       * informers are keyed by the user the API server reports for the token (SelfSubjectReview:
       * username, uid, groups), so a new token of the same user keeps them, and a strategy of
       * your own registered under one of these names that hands out per-user tokens gets one
       * identity per user. Any other provider's informers belong to the exact credential.
       * Default ['aws', 'azure', 'googleServiceAccount', 'serviceAccount'].
       */
      rotatingAuthProviders?: string[];
      /**
       * The live tab, when the Signals backend plugin is installed: each user who loaded an
       * entity gets a signal on `kubernetes:<entityRef>` (no object data) when an informer
       * that served the load sees a change to what the entity's request selects, and the
       * frontend's LiveKubernetesApi (kube-watch-native-live-frontend) refetches.
       */
      live?: {
        /** Default true (with the Signals backend plugin installed). */
        enabled?: boolean;
        /** How long after a load its user is still signalled. Default 10 minutes. */
        viewerTtl?: HumanDuration | string;
        /** At most one signal per entity and user this often. Default 250 ms. */
        minInterval?: HumanDuration | string;
        /**
         * (user, entity) pairs followed at most; past it a load is answered as not live (the
         * frontend polls it). Default 10 000.
         */
        maxViewers?: number;
        /**
         * Pairs of one user followed at most; past it the user's oldest is signalled once and
         * dropped. Default 200.
         */
        maxViewersPerUser?: number;
        /**
         * Backend replicas serving the tab behind a load balancer. Above 1, the live tab needs the
         * events backend plugin on PostgreSQL (`backend.database.client: pg`), whose bus carries a
         * replica's signals to the browsers connected to the others; without it the live tab is
         * off (with a warning) and the tab polls as usual. With that bus the replicas share their
         * viewers in the Kubernetes plugin's database whatever this says, and on PostgreSQL
         * without it a replica that sees another alive answers as not live: this setting only
         * turns the tab off before a second replica is seen. Default 1.
         */
        replicas?: number;
      };
      /**
       * The object types answered from informers, by Backstage's `objectType` names (`pods`,
       * `services`, …, `customresources` for every custom resource). Other types go to the
       * default fetcher. Default: every type but `secrets`, whose data is then never cached,
       * whichever route or custom resource entry asks for it.
       */
      objectTypes?: Array<
        | 'pods'
        | 'services'
        | 'configmaps'
        | 'limitranges'
        | 'resourcequotas'
        | 'deployments'
        | 'replicasets'
        | 'horizontalpodautoscalers'
        | 'jobs'
        | 'cronjobs'
        | 'ingresses'
        | 'statefulsets'
        | 'daemonsets'
        | 'secrets'
        | 'persistentvolumes'
        | 'persistentvolumeclaims'
        | 'customresources'
      >;
    };
  };
}
