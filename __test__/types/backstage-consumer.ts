// Compiled (never run) by __test__/types.test.js under `tsc --strict`: a Backstage backend
// plugin's view of this package. If index.d.ts drifts from Backstage's published types, this
// file stops compiling.
import type { KubernetesWatcher, KubernetesWatchParams } from '@backstage/plugin-kubernetes-node';
import type {
  KubernetesFetchError,
  KubernetesWatchEvent,
  KubernetesWatchOptions,
} from '@backstage/plugin-kubernetes-common';
import type { LoggerService } from '@backstage/backend-plugin-api';
import * as otel from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import {
  METRICS,
  NativeKubernetesWatcher,
  registerMetrics,
  type MetricsRegistration,
  type KubernetesInformer,
  type KubernetesInformerEvent,
  type KubernetesWatchEvent as OwnEvent,
  type KubernetesWatchOptions as OwnOptions,
  type KubernetesWatchParams as OwnParams,
} from 'kube-watch-native';

declare const logger: LoggerService;

// The point of the package: assignable to Backstage's interface with no glue.
const watcher: KubernetesWatcher = new NativeKubernetesWatcher({ logger });

const params: KubernetesWatchParams = {
  clusterDetails: { name: 'c', url: 'https://k8s.example', authMetadata: {} },
  credential: { type: 'bearer token', token: 't' },
  group: 'apps',
  apiVersion: 'v1',
  plural: 'deployments',
};
const options: KubernetesWatchOptions = {
  namespace: 'default',
  allowWatchBookmarks: true,
  sendInitialEvents: true,
  resourceVersionMatch: 'NotOlderThan',
  signal: new AbortController().signal,
};

// Our own declarations and Backstage's are interchangeable both ways.
const ownParams: OwnParams = params;
const ownOptions: OwnOptions = options;
const backToBackstage: KubernetesWatchParams = ownParams;
void backToBackstage;

export async function consume(): Promise<string[]> {
  const names: string[] = [];
  for await (const event of watcher.watchResource(params, options)) {
    const own: OwnEvent = event;
    const theirs: KubernetesWatchEvent = own;
    void theirs;
    // @ts-expect-error `object` exists only once `type` has been narrowed away from ERROR.
    void event.object;
    if (event.type === 'ERROR') {
      const error: KubernetesFetchError = event.error;
      names.push(error.errorType);
    } else {
      const rv: string | undefined = event.resourceVersion;
      const metadata = event.object.metadata;
      names.push(`${event.type} ${String(rv)} ${JSON.stringify(metadata)}`);
    }
  }
  return names;
}

// Extra limits are optional fields of the options type.
const native = new NativeKubernetesWatcher();
void native.watchResource(ownParams, { ...ownOptions, idleTimeoutSeconds: 5, maxLineBytes: 1024 });
void native.watchResource(ownParams, {
  strip: [
    'metadata.managedFields',
    "metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']",
  ],
});
void native.watchResource(ownParams, { metadataOnly: true });
// @ts-expect-error metadataOnly is a boolean
void native.watchResource(ownParams, { metadataOnly: 'yes' });
// @ts-expect-error strip is a list of paths, not one path
void native.watchResource(ownParams, { strip: 'metadata.managedFields' });

// The kubeconfig loader's result feeds watchResource directly.
import { loadKubeconfig, KubeconfigError } from 'kube-watch-native';
export function fromKubeconfig(): AsyncGenerator<KubernetesWatchEvent, void, undefined> | string {
  try {
    const { clusterDetails, credential, namespace } = loadKubeconfig({ context: 'dev' });
    return watcher.watchResource(
      { clusterDetails, credential, group: '', apiVersion: 'v1', plural: 'pods' },
      { namespace },
    );
  } catch (err) {
    if (err instanceof KubeconfigError) return err.code;
    throw err;
  }
}

// getCredential gives a fresh credential for each reconnect; the extras are typed.
export async function reconnect(): Promise<AsyncGenerator<KubernetesWatchEvent, void, undefined>> {
  const loaded = loadKubeconfig({ terminal: false, execTimeoutMs: 10_000 });
  const credential = await loaded.getCredential({ forceRefresh: true });
  const proxied = { ...loaded.clusterDetails, proxyUrl: 'http://127.0.0.1:3128', tlsServerName: 'api' };
  return native.watchResource(
    { clusterDetails: proxied, credential, group: '', apiVersion: 'v1', plural: 'pods' },
    { fieldSelector: 'status.phase=Running' },
  );
}

// The informer, with a getCredential callback as a Backstage plugin would write it.
export async function informerUsage(
  watcher: NativeKubernetesWatcher,
  token: () => Promise<string>,
): Promise<number> {
  const informer: KubernetesInformer = watcher.informer(
    {
      clusterDetails: { name: 'c', url: 'https://k8s.example', authMetadata: {} },
      getCredential: async () => ({ type: 'bearer token', token: await token() }),
      group: '',
      apiVersion: 'v1',
      plural: 'pods',
    },
    { namespace: 'default', initialList: 'auto', backoff: { maxSeconds: 10 }, fields: ['status.phase'] },
  );
  const stripped: KubernetesInformer = watcher.informer(
    {
      clusterDetails: { name: 'c', url: 'https://k8s.example', authMetadata: {} },
      credential: { type: 'anonymous' },
      group: '',
      apiVersion: 'v1',
      plural: 'configmaps',
    },
    { strip: ['metadata.managedFields'], metadataOnly: true },
  );
  stripped.close();
  await informer.synced;
  let relists = 0;
  for await (const event of informer) {
    const e: KubernetesInformerEvent = event;
    if (e.type === 'SYNCED' && e.relist) relists++;
    if (e.type === 'ERROR' && !e.retrying) break;
    if (e.type === 'MODIFIED') e.object.metadata;
  }
  const pod = informer.get('web');
  const pods = informer.list({ labelSelector: 'app=web' });
  const stats = informer.stats();
  const lag: number = stats.slowestConsumerPending + stats.secondsSinceLastEvent + stats.delivered;
  const state = informer.state();
  const stop: () => void = informer.onStateChange(() => {});
  stop();
  const healthy: boolean =
    state.synced && !state.finished && state.error === null && (state.watchingSince ?? 0) >= 0;
  const failing: number = state.error?.statusCode ?? state.generation + state.size + state.cachedBytes;
  informer.close();
  watcher.close();
  return (
    relists +
    pods.length +
    (pod ? 1 : 0) +
    stats.reconnects +
    lag +
    (healthy ? 1 : 0) +
    failing +
    informer.size +
    (informer.resourceVersion ?? '').length
  );
}

// Metrics on an OpenTelemetry SDK's meter provider, and on a meter of the API.
export function metricsUsage(watcher: NativeKubernetesWatcher): string[] {
  const viaProvider: MetricsRegistration = watcher.metrics({ meterProvider: new MeterProvider() });
  const viaMeter = registerMetrics(watcher, { meter: otel.metrics.getMeter('app') });
  viaProvider.close();
  viaMeter.close();
  return METRICS.map((m) => `${m.name} ${m.unit}`);
}
