// A Backstage app's use of kube-watch-native-live-frontend, as its docs show it: compiled with
// --strict against the published frontend packages' types (__test__/types.test.js).
import type { AnyApiFactory, FetchApi } from '@backstage/core-plugin-api';
import type { KubernetesApi } from '@backstage/plugin-kubernetes-react';
import type { SignalApi } from '@backstage/plugin-signals-react';
import { createElement } from 'react';
import type { ExtensionDefinition } from '@backstage/frontend-plugin-api';
import { liveKubernetesLogsEntityContent } from 'kube-watch-native-live-frontend/alpha';
import {
  EntityLiveLogsContent,
  Heartbeat,
  LiveKubernetesApi,
  browserWakes,
  channelOf,
  createLiveKubernetesApiFactory,
  entityRefOf,
  liveAnswerFetch,
  liveKubernetesApiFactory,
} from 'kube-watch-native-live-frontend';

export const apis: AnyApiFactory[] = [
  liveKubernetesApiFactory,
  createLiveKubernetesApiFactory({ maxAgeMs: 60_000 }),
];

export function wrap(client: KubernetesApi, signalApi: SignalApi, fetchApi: FetchApi): KubernetesApi {
  // The client would be built on `marked.fetchApi`.
  const marked: { fetchApi: FetchApi; isLive: (value: unknown) => boolean } = liveAnswerFetch(fetchApi);
  const stop = browserWakes((reason: string) => console.log(reason), { gapMs: 10_000 });
  stop();
  const heartbeat = new Heartbeat(signalApi, { now: () => performance.now() });
  const api = new LiveKubernetesApi({
    client,
    signalApi,
    idleMs: 30_000,
    prefetchWithinMs: 5000,
    wakes: (onWake) => browserWakes(onWake),
    connectionOf: () => heartbeat.connection(),
    isLive: marked.isLive,
  });
  const watched: string[] = api.watchedEntities;
  console.log(watched, channelOf(entityRefOf({ kind: 'Component', metadata: { name: 'a' } })));
  return api;
}

// On the entity page: <EntityLiveLogsContent tailLines={200} />
export const logsContent = createElement(EntityLiveLogsContent, { tailLines: 200, maxLines: 5000 });
export const logsExtension: ExtensionDefinition = liveKubernetesLogsEntityContent;
