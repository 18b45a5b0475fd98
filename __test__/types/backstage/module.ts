// Compiled (never run) by __test__/types.test.js under `tsc --strict`: a Backstage backend that
// adds kube-watch-native-backstage, a plugin that takes the watcher from the service, and the
// fetcher used on its own against Backstage's published types.
import { createBackend } from '@backstage/backend-defaults';
import { createBackendPlugin, type BackendFeature } from '@backstage/backend-plugin-api';
import type { KubernetesFetcher, ObjectFetchParams } from '@backstage/plugin-kubernetes-node';
import kubernetesModuleNativeInformers, {
  eventsModuleEndPollsOnShutdown,
  NativeInformerFetcher,
  nativeWatcherServiceFactory,
  nativeWatcherServiceRef,
  type NativeInformerInfo,
} from 'kube-watch-native-backstage';
import type { NativeKubernetesWatcher } from 'kube-watch-native';

const backend = createBackend();
backend.add(import('@backstage/plugin-kubernetes-backend'));
backend.add(import('kube-watch-native-backstage'));
backend.add(nativeWatcherServiceFactory);
const feature: BackendFeature = kubernetesModuleNativeInformers;
backend.add(feature);
backend.add(eventsModuleEndPollsOnShutdown);

export const myPlugin = createBackendPlugin({
  pluginId: 'my-plugin',
  register(env) {
    env.registerInit({
      deps: { watcher: nativeWatcherServiceRef },
      async init({ watcher }) {
        const w: NativeKubernetesWatcher = watcher;
        const informer = w.informer(
          {
            clusterDetails: { name: 'c', url: 'https://127.0.0.1:6443', authMetadata: {} },
            credential: { type: 'bearer token', token: 't' },
            group: '',
            apiVersion: 'v1',
            plural: 'pods',
          },
          { labelSelector: 'backstage.io/kubernetes-id' },
        );
        await informer.synced;
        informer.close();
      },
    });
  },
});

declare const defaultFetcher: KubernetesFetcher;
declare const watcher: NativeKubernetesWatcher;
declare const params: ObjectFetchParams;
const fetcher: KubernetesFetcher = new NativeInformerFetcher({
  watcher,
  defaultFetcher,
  idleTimeoutMs: 60_000,
  maxInformers: 500,
  maxCachedBytes: 256 * 1024 * 1024,
  rotatingAuthProviders: ['aws'],
  stripManagedFields: false,
});
export const answer = fetcher.fetchObjectsForService(params);
const own = new NativeInformerFetcher({ watcher, defaultFetcher });
export const info: NativeInformerInfo[] = own.informers();
export const counts: number = own.answered().cached + own.answered().delegated + own.identities();
