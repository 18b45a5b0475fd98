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
       * Leave `metadata.managedFields` out of the objects answered (the Kubernetes tab never
       * shows them; they are often half of an object's size). Default true.
       */
      stripManagedFields?: boolean;
      /**
       * The object types answered from informers, by Backstage's `objectType` names (`pods`,
       * `services`, …, `customresources` for every custom resource). Other types go to the
       * default fetcher. Default: every type but `secrets`, whose data is then never cached.
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
