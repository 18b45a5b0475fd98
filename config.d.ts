// Configuration schema of kube-watch-native/backstage (the `configSchema` of package.json), read
// by Backstage's config loader as the schemas of Backstage's own packages are.

import type { HumanDuration } from '@backstage/types';

export interface Config {
  kubernetes?: {
    /** kube-watch-native/backstage: the Kubernetes tab answered from shared native informers. */
    nativeInformers?: {
      /**
       * Whether the module registers its fetcher; false leaves Backstage's default fetcher alone.
       * Default true.
       */
      enabled?: boolean;
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
       * Auth providers whose token is minted from the backend's own identity and the cluster's
       * authMetadata and rotates: a new token of theirs keeps its informers. Any other provider's
       * informers belong to the exact credential. Default ['aws', 'azure', 'googleServiceAccount'];
       * set [] if a strategy of your own, registered under one of these names, resolves tokens
       * per caller.
       */
      rotatingAuthProviders?: string[];
      /**
       * The live tab, when the Signals backend plugin is installed: each user who loaded an
       * entity gets a signal on `kubernetes:<entityRef>` (no object data) when an informer
       * that served the load sees a change to what the entity's request selects, and the
       * frontend's LiveKubernetesApi (kube-watch-native/live-frontend) refetches.
       */
      live?: {
        /** Default true (with the Signals backend plugin installed). */
        enabled?: boolean;
        /** How long after a load its user is still signalled. Default 10 minutes. */
        viewerTtl?: HumanDuration | string;
        /** At most one signal per entity and user this often. Default 250 ms. */
        minInterval?: HumanDuration | string;
        /** (user, entity) pairs remembered at most; the oldest go first. Default 10 000. */
        maxViewers?: number;
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
