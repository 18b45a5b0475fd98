// Types of kube-watch-native-live-frontend (browser only), written by hand against the published
// @backstage/plugin-kubernetes-react, @backstage/plugin-signals-react and @backstage/core-plugin-api.

import type { AnyApiFactory, DiscoveryApi, FetchApi } from '@backstage/core-plugin-api';
import type { KubernetesApi, KubernetesAuthProvidersApi } from '@backstage/plugin-kubernetes-react';
import type { SignalApi } from '@backstage/plugin-signals-react';
import type { JSX } from 'react';

/** Options of {@link LiveKubernetesApi}. */
export interface LiveKubernetesApiOptions {
  /**
   * An answer is served from memory for at most this long: the worst case a lost signal can
   * leave the tab behind. Default 90 000, the staleness bound the backend's liveness shares.
   */
  maxAgeMs?: number;
  /** An entity no component asked about for this long is unsubscribed and forgotten. Default 60 000. */
  idleMs?: number;
  /**
   * The live connection for a channel (any object; a new one whenever signals may have been
   * missed), or null while signals on it would not arrive. Default: the backend's heartbeat,
   * through the public signals API ({@link Heartbeat}).
   */
  connectionOf?: (signalApi: SignalApi, channel: string) => object | null;
  /**
   * Calls `onWake` when signals may have been missed without the connection saying so (a
   * sleep, a freeze, the network back); returns its stop function. Default: {@link browserWakes}.
   */
  wakes?: (onWake: (reason: string) => void) => () => void;
  /**
   * A signal refetches each request of its entity at once when a component asked for the entity
   * this recently (the tab still polls), so the next poll finds the answer ready or on its way.
   * Default 15 000 (past the stock 10 s polling).
   */
  prefetchWithinMs?: number;
  /**
   * A poll (a call within `pollGapMs` of the last answer handed out for the same request) that
   * finds that answer in memory is held until the request's refetch after a signal lands, for at
   * most this long and no longer than its signals connection lasts; calls meanwhile are held with
   * it. The tab then shows a change as its refetch lands, not at its next poll, and its
   * useAsyncRetry, which skips retries while a call is out, renders three times per `holdMs`
   * rather than per poll. Cost: a second component asking the same request right after another
   * was answered may wait this long for its first answer. Default 10 000; 0 never holds.
   */
  holdMs?: number;
  /**
   * A call this soon after the last answer to the same request was handed out is taken for the
   * next poll (and may be held); after a longer pause (the tab opened again) it is answered from
   * memory at once. Default 1000, past the 500 ms `refreshIntervalMs` the README gives.
   */
  pollGapMs?: number;
  /**
   * Whether an answer of the client is followed by signals (the backend marked its response
   * `x-kube-watch-live: 1`); only those are kept until a signal, and any other at most
   * `notLiveMaxAgeMs`, as the stock client's polling would keep it. Default: none is. {@link createLiveKubernetesApi}
   * gives the one {@link liveAnswerFetch} makes.
   */
  isLive?: (value: unknown) => boolean;
  /**
   * An answer not followed by signals is served from memory for at most this long (9000: within
   * the stock client's 10 s polling); 0: every call for it goes to the network.
   */
  notLiveMaxAgeMs?: number;
  /** The clock, in ms (tests). */
  now?: () => number;
  /** Schedules `fn`; returns its cancel function (tests). */
  setTimer?: (fn: () => void, ms: number) => () => void;
}

/**
 * A KubernetesApi that serves the last answer to each request from memory until a signal on
 * `kubernetes:<entityRef>` arrives, `maxAgeMs` passes or the signals connection changes; while
 * the connection is down every call goes to the wrapped client.
 */
export declare class LiveKubernetesApi implements KubernetesApi {
  constructor(options: LiveKubernetesApiOptions & { client: KubernetesApi; signalApi: SignalApi });
  getObjectsByEntity: KubernetesApi['getObjectsByEntity'];
  getWorkloadsByEntity: KubernetesApi['getWorkloadsByEntity'];
  getCustomObjectsByEntity: KubernetesApi['getCustomObjectsByEntity'];
  getClusters: KubernetesApi['getClusters'];
  getCluster: KubernetesApi['getCluster'];
  proxy: KubernetesApi['proxy'];
  /** Entities subscribed now. */
  readonly watchedEntities: string[];
  /** Unsubscribes everything and forgets every answer; safe to call twice. */
  close(): void;
}

/**
 * Whether the live tab's signals arrive, proven by the backend's heartbeat on the public signals
 * API: `connection()` stays the same object while every replica's heartbeat arrives in sequence
 * within the bound, and is null while not.
 */
export declare class Heartbeat {
  constructor(signalApi: SignalApi, options: { now: () => number; boundMs?: number });
  connection(): object | null;
  lapse(): void;
  close(): void;
}

/**
 * Calls `onWake(reason)` on the page's `resume`, on `online`, when the page is shown after
 * `gapMs` (30 s) hidden, and when, while shown, a `tickMs` (5 s) timer fires `gapMs` late.
 * Returns its stop function; outside a browser it does nothing.
 */
export declare function browserWakes(
  onWake: (reason: string) => void,
  options?: { gapMs?: number; tickMs?: number; now?: () => number },
): () => void;

/** `stringifyEntityRef` of `@backstage/catalog-model`. */
export declare function entityRefOf(entity: {
  kind: string;
  metadata: { name: string; namespace?: string };
}): string;

/** The signals channel of an entity's Kubernetes tab: `kubernetes:<entityRef>`. */
export declare function channelOf(entityRef: string): string;

/** The response header kube-watch-native-backstage marks a live answer with (value `1`). */
export declare const LIVE_HEADER: 'x-kube-watch-live';

/**
 * Wraps a FetchApi: `isLive(value)` is true of exactly the objects that `json()` of a response
 * marked `x-kube-watch-live: 1` returned. Give `fetchApi` to the KubernetesBackendClient and
 * `isLive` to {@link LiveKubernetesApi}.
 */
export declare function liveAnswerFetch(fetchApi: FetchApi): {
  fetchApi: FetchApi;
  isLive: (value: unknown) => boolean;
};

/** Props of {@link EntityLiveLogsContent}. */
export interface EntityLiveLogsContentProps {
  /** The lines a follow starts with (its `tailLines`). Default 1000. */
  tailLines?: number;
  /** Lines kept in the browser, at least (up to half as many more); the oldest go first. Default 10 000. */
  maxLines?: number;
  /**
   * How often the pods' events are asked while the page is shown and they are not live (no
   * Signals plugin, answers the backend does not follow, signals not proven). Default 1000.
   */
  eventsIntervalMs?: number;
  /** The log's height in pixels (Backstage's LogViewer fills its container). Default 480. */
  height?: number;
}

/**
 * An entity's live logs and events (an entity page's content): a picker of every container of
 * the entity's pods (their previous instances too), the log following as it is written
 * (Backstage's LogViewer, through the Kubernetes plugin's proxy route, resumed after a sleep or a
 * network loss with no line repeated or lost), and the pods' events as they happen, newest first.
 * Needs the entity (useEntity) and `kubernetesApiRef`.
 */
export declare function EntityLiveLogsContent(props: EntityLiveLogsContentProps): JSX.Element;

/** The deps of the API factory. */
export declare const liveKubernetesApiDeps: {
  discoveryApi: import('@backstage/core-plugin-api').ApiRef<DiscoveryApi>;
  fetchApi: import('@backstage/core-plugin-api').ApiRef<FetchApi>;
  kubernetesAuthProvidersApi: import('@backstage/core-plugin-api').ApiRef<KubernetesAuthProvidersApi>;
  signalApi: import('@backstage/core-plugin-api').ApiRef<SignalApi>;
};

/** A LiveKubernetesApi around a new KubernetesBackendClient. */
export declare function createLiveKubernetesApi(
  deps: {
    discoveryApi: DiscoveryApi;
    fetchApi: FetchApi;
    kubernetesAuthProvidersApi: KubernetesAuthProvidersApi;
    signalApi: SignalApi;
  },
  options?: LiveKubernetesApiOptions,
): LiveKubernetesApi;

/** An API factory for `kubernetesApiRef` with these options. */
export declare function createLiveKubernetesApiFactory(options?: LiveKubernetesApiOptions): AnyApiFactory;

/** The legacy app's override of `kubernetesApiRef` (add it to `apis.ts`). */
export declare const liveKubernetesApiFactory: AnyApiFactory;
