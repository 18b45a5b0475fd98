// Public types of kube-watch-native. They mirror, shape for shape, the types Backstage
// publishes in @backstage/plugin-kubernetes-node (KubernetesWatcher, KubernetesWatchParams,
// ClusterDetails, KubernetesCredential) and @backstage/plugin-kubernetes-common
// (KubernetesWatchOptions, KubernetesWatchEvent, KubernetesFetchError), so that a
// NativeKubernetesWatcher is assignable to Backstage's KubernetesWatcher with no glue.
// Written by hand; __test__/types.test.js compiles a Backstage-typed consumer under --strict.

/** A JSON value, as in @backstage/types. */
export type JsonPrimitive = number | string | boolean | null;
/** A JSON object, as in @backstage/types. */
export type JsonObject = { [key in string]?: JsonValue };
/** A JSON array, as in @backstage/types. */
export interface JsonArray extends Array<JsonValue> {}
/** Any JSON value, as in @backstage/types. */
export type JsonValue = JsonObject | JsonArray | JsonPrimitive;

/** Backstage's AuthMetadata. */
export type AuthMetadata = Record<string, string>;

/** The parts of Backstage's ClusterDetails a watch reads (others are accepted and ignored). */
export interface ClusterDetails {
  /** Name of the cluster; named in warnings. */
  name: string;
  title?: string;
  /** API server URL; a path (e.g. a Rancher proxy prefix) is kept and the resource path appended. */
  url: string;
  /**
   * `kubernetes.io/auth-provider`: google, oidc and aks are refused (BAD_REQUEST);
   * `localKubectlProxy` allows the anonymous credential; `serviceAccount` without
   * `serviceAccountToken` means in-cluster when the service account CA exists.
   */
  authMetadata: AuthMetadata;
  /** Turn off server certificate verification for this cluster only. */
  skipTLSVerify?: boolean;
  skipMetricsLookup?: boolean;
  /** Base64 of the PEM CA bundle to trust instead of the system roots. */
  caData?: string | undefined;
  /** Path of a PEM CA bundle to trust instead of the system roots. */
  caFile?: string | undefined;
  /**
   * Extra field (kubeconfig `proxy-url`): reach this cluster through an `http://` (CONNECT) or
   * `socks5://` proxy; credentials in the URL are used and never logged. `https://` proxies (TLS
   * to the proxy itself) are refused with an ERROR event and a warning saying so.
   */
  proxyUrl?: string;
  /** Extra field (kubeconfig `tls-server-name`): verify the server certificate against this name. */
  tlsServerName?: string;
  dashboardUrl?: string;
  dashboardApp?: string;
  dashboardParameters?: JsonObject;
  customResources?: Array<{ group: string; apiVersion: string; plural: string }>;
}

/** Backstage's KubernetesCredential. */
export type KubernetesCredential =
  | { type: 'bearer token'; token: string }
  | { type: 'x509 client certificate'; cert: string; key: string }
  | { type: 'anonymous' };

/** Backstage's KubernetesWatchParams. */
export interface KubernetesWatchParams {
  clusterDetails: ClusterDetails;
  credential: KubernetesCredential;
  /** API group; empty string for the core group. */
  group: string;
  /** API version, e.g. `v1`. */
  apiVersion: string;
  /** Plural resource name, e.g. `pods`. */
  plural: string;
}

/** Backstage's KubernetesWatchOptions, plus two optional limits of this watcher. */
export interface KubernetesWatchOptions {
  namespace?: string;
  labelSelector?: string;
  /** Extra option: a field selector, e.g. `status.phase=Running` (sent after `labelSelector`). */
  fieldSelector?: string;
  resourceVersion?: string;
  timeoutSeconds?: number;
  allowWatchBookmarks?: boolean;
  sendInitialEvents?: boolean;
  resourceVersionMatch?: 'NotOlderThan' | 'Exact';
  /** Cancels the watch: the iterator ends, the connection closes, no ERROR follows. */
  signal?: AbortSignal;
  /**
   * End the watch with `SYSTEM_ERROR 0` when no bytes arrive for this long. Default: 180 when
   * `allowWatchBookmarks` is set, otherwise off; `0` turns it off.
   */
  idleTimeoutSeconds?: number;
  /** A longer line ends the watch with `SYSTEM_ERROR 0`. Default 16 MiB, as Kubernetes' client. */
  maxLineBytes?: number;
  /**
   * Opt-in: keep only these dotted paths (e.g. `['metadata.name', 'status.phase']`) in each
   * event's `object`, plus `metadata.resourceVersion`. The cut happens on a Rust thread, so the
   * JavaScript thread parses only what the consumer reads. Paths traverse objects, not arrays.
   */
  fields?: string[]; /**
   * Opt-in: remove these paths from each event's `object`, keep the rest; the complement of
   * `fields` (give one or the other). Dotted keys, with `['…']` for a key holding dots or
   * slashes: `['metadata.managedFields',
   * "metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']"]`. A path that
   * is not there removes nothing; `metadata` and its `name`, `namespace`, `uid` and
   * `resourceVersion` cannot be stripped. A bad path is a TypeError naming it.
   */
  strip?: string[]; /**
   * Opt-in: watch `PartialObjectMetadata` (`Accept:
   * application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`), as client-go's metadata
   * informers do: each event's `object` is `{ kind: 'PartialObjectMetadata', apiVersion:
   * 'meta.k8s.io/v1', metadata }`. A server that sends full objects anyway is met by cutting
   * them down on a Rust thread, with one warning; one that answers 406 ends the watch with an
   * ERROR (`statusCode` 406) and a warning. Goes with `strip` (of paths under `metadata`),
   * not with `fields`.
   */
  metadataOnly?: boolean;
}

/** Backstage's KubernetesErrorTypes. */
export type KubernetesErrorTypes =
  'BAD_REQUEST' | 'UNAUTHORIZED_ERROR' | 'NOT_FOUND' | 'SYSTEM_ERROR' | 'UNKNOWN_ERROR';

/** Backstage's StatusError: what this watcher's ERROR events carry. */
export interface StatusError {
  errorType: KubernetesErrorTypes;
  statusCode?: number;
  resourcePath?: string;
}

/** Backstage's RawFetchError (never produced by this watcher; part of the union). */
export interface RawFetchError {
  errorType: 'FETCH_ERROR';
  message: string;
}

/** Backstage's KubernetesFetchError. */
export type KubernetesFetchError = StatusError | RawFetchError;

/** Backstage's KubernetesWatchEventType. */
export type KubernetesWatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** Backstage's KubernetesWatchEvent. */
export type KubernetesWatchEvent =
  | {
      type: Exclude<KubernetesWatchEventType, 'ERROR'>;
      object: JsonObject;
      resourceVersion?: string;
    }
  | {
      type: 'ERROR';
      error: KubernetesFetchError;
    };

/** Backstage's KubernetesWatcher. */
export interface KubernetesWatcher {
  watchResource(
    params: KubernetesWatchParams,
    options?: KubernetesWatchOptions,
  ): AsyncGenerator<KubernetesWatchEvent, void, undefined>;
  /** The connections behind this process's watches (the pool is shared by every watcher). */
  stats(): NativeWatcherStats;
}

/** One HTTP/2 connection in {@link NativeWatcherStats}. */
export interface HTTP2ConnectionStats {
  /** Streams booked or running on it (watches and short requests). */
  streams: number;
  /** The server's advertised `SETTINGS_MAX_CONCURRENT_STREAMS`; absent while the connection opens. */
  streamLimit?: number;
  /** Whether new watches may go on it: false after a GOAWAY, a refused stream or a queued one. */
  accepting: boolean;
}

/** What {@link NativeKubernetesWatcher.stats} reports. */
export interface NativeWatcherStats {
  /** One entry per cluster origin and TLS identity. */
  clusters: Array<{
    /** `scheme://host:port` of the API server. */
    origin: string;
    /** HTTP/1.1 requests in flight (plain http, or a server that does not speak HTTP/2). */
    http1Requests: number;
    /** HTTP/2 connections and the streams on each. */
    connections: HTTP2ConnectionStats[];
  }>;
}

/** The methods of Backstage's LoggerService this package calls (warn) or may call. */
export interface LoggerService {
  error(message: string, meta?: Error | JsonObject): void;
  warn(message: string, meta?: Error | JsonObject): void;
  info(message: string, meta?: Error | JsonObject): void;
  debug(message: string, meta?: Error | JsonObject): void;
  child(meta: JsonObject): LoggerService;
}

/** `informer()` params: `credential` may be replaced by `getCredential`. */
export type KubernetesInformerParams = Omit<KubernetesWatchParams, 'credential'> &
  (
    | { credential: KubernetesCredential; getCredential?: undefined }
    | {
        credential?: undefined;
        /**
         * Asked before the first request, again after every 401 or 403, and before a reconnect
         * once the last answer is older than `credentialTtlSeconds`. A throw or rejection is a
         * transient error (retried with backoff).
         */
        getCredential: () => KubernetesCredential | Promise<KubernetesCredential>;
      }
  );

/** Options of {@link NativeKubernetesWatcher.informer}. */
export interface KubernetesInformerOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** `limit` of each page of a paginated list. Default 500. */
  pageSize?: number;
  /**
   * `'auto'` (default): a streaming list (`sendInitialEvents`) where the cluster serves one,
   * else `limit`/`continue` pages, remembered per watcher and cluster URL.
   */
  initialList?: 'auto' | 'paginated' | 'streaming';
  /** Exponential with full jitter, reset after a healthy minute. Default 0.8 and 30. */
  backoff?: { initialSeconds?: number; maxSeconds?: number };
  /** Drop (and resume) a watch receiving nothing, bookmarks included, for this long. Default 180. */
  idleTimeoutSeconds?: number;
  /** Ask `getCredential` again before a reconnect once its answer is this old. Default 300. */
  credentialTtlSeconds?: number;
  /**
   * Before each resumed watch, and after an open watch is silent this long, ask the server with
   * a LIST of one object whether its resourceVersion is not older than the informer's. A server
   * behind it (its storage restored, the cluster recreated at the same address) answers 504
   * `ResourceVersionTooLarge`: the informer warns and relists, and its consumers get the
   * difference and `SYNCED { relist: true }`. A probe answered 200 is proof of life (`aliveAt`).
   * Default 60.
   */
  probeSeconds?: number;
  /**
   * Hold each cached object's JSON as an LZ4 block (default true): about half the cache's
   * memory for applied objects, for about 5 µs of a Rust thread per 2 KB object cached and
   * 1.2–1.5 µs each time one is read back (`get`, `list`, each event a consumer takes).
   * `false` holds the JSON as received.
   */
  compress?: boolean;
  /**
   * Cache only these dotted paths plus `metadata.name`, `metadata.namespace`,
   * `metadata.resourceVersion` and `metadata.uid`.
   */
  fields?: string[];
  /**
   * Remove these paths from every object before it is cached or delivered (the complement of
   * `fields`; not with it), e.g. `['metadata.managedFields',
   * "metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']"]`: about half
   * of an applied object's JSON. Path syntax as for `watchResource`'s `strip`.
   */
  strip?: string[];
  /**
   * List (`as=PartialObjectMetadataList`) and watch (`as=PartialObjectMetadata`) metadata
   * only, as client-go's metadata informers do: cached objects and events are `{ kind:
   * 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata }`. A server that answers
   * 406 is asked for full objects instead and one that ignores the request sends them; either
   * way they are cut down to their metadata on a Rust thread, with one warning. Goes with
   * `strip`, not with `fields`.
   */
  metadataOnly?: boolean;
  /** A longer watch line is a fault (resumed). Default 16 MiB. */
  maxLineBytes?: number;
  /** Aborting closes this handle, as `close()` does. */
  signal?: AbortSignal;
}

/** Which cached objects {@link KubernetesInformer.list}, `listText` and `fingerprint` read. */
export interface KubernetesInformerReadOptions {
  namespace?: string;
  labelSelector?: string;
  /**
   * `path=value`, `path==value`, `path!=value` joined by commas, the path dotted into the
   * object (`involvedObject.name=web-1`): evaluated natively on the cached text, a number or
   * boolean compared as its text and an absent field as `''`.
   */
  fieldSelector?: string;
}

/** What a consumer of a {@link KubernetesInformer} sees. */
export type KubernetesInformerEvent =
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: JsonObject; resourceVersion: string }
  | { type: 'SYNCED'; resourceVersion: string; relist: boolean }
  | { type: 'ERROR'; error: KubernetesFetchError; retrying: boolean };

/** What {@link KubernetesInformer.stats} reports. */
export interface KubernetesInformerStats {
  /** Requests sent (list pages, streaming lists, watches). */
  connects: number;
  /** Watches started again after one ended or failed. */
  reconnects: number;
  /** Lists after a 410. */
  relists: number;
  /**
   * Changes received from the server: watch events (a streaming list's initial ADDED included) and
   * list items; bookmarks are not counted. A relist after a 410 counts the items it received, so
   * after one this is below the number of writes.
   */
  events: number;
  /** Body bytes received. */
  bytes: number;
  /** Errors by `errorType`. */
  errors: Partial<Record<KubernetesErrorTypes, number>>;
  /** When the last event or bookmark arrived (ms since the epoch). */
  lastEventTime?: number;
  /** getCredential answers after the first. */
  credentialRefreshes: number;
  /** Watch streams being read now: 1 while watching (or streaming the list), else 0. */
  watchesOpen: number;
  /** Seconds since the last event or bookmark (since the informer started, before the first). */
  secondsSinceLastEvent: number;
  /** Events taken by the consumers (changes, SYNCED, ERROR), summed over them. */
  delivered: number;
  /** Changes pending in the slowest consumer (at most one per object). */
  slowestConsumerPending: number;
  /** Consumers open. */
  consumers: number;
  /** Bytes of JSON cached. */
  cachedBytes: number;
  /** Handles open on the shared informer. */
  handles: number;
  /** The process's connections, as {@link NativeKubernetesWatcher.stats} reports them. */
  clusters: NativeWatcherStats['clusters'];
}

/** What {@link KubernetesInformer.state} reports. */
export interface KubernetesInformerState {
  /** The initial list is cached. */
  synced: boolean;
  /** The informer ended (closed, or a terminal error). */
  finished: boolean;
  /** Changes with every change to the cache: an answer computed from it holds while this does. */
  generation: number;
  /** Objects cached. */
  size: number;
  /** Bytes of JSON cached. */
  cachedBytes: number;
  /**
   * Bytes the field indexes take (an estimate): built at a `fieldSelector`'s first read of a
   * path, dropped by a relist. A budget of the cache's memory counts them beside `cachedBytes`.
   */
  indexBytes: number;
  /**
   * When (ms since the epoch) the watch being read now opened (0 for a streaming list's
   * stream, whose sync proves the cache current); null between watches (a backoff, a
   * reconnect, a relist), when the cache may be behind the server.
   */
  watchingSince: number | null;
  /**
   * How long (ms, on the monotonic clock) the watch being read has been open (Infinity for a
   * streaming list's); null between watches. Decide by this, not by `watchingSince`: a wall
   * clock stepped (by NTP, a virtual machine resumed) moves `watchingSince`, never this.
   */
  watchingForMs: number | null;
  /**
   * The last proof (ms since the epoch) that the cache is current with the server (a complete
   * list, an event, a bookmark, a probe answered: see `probeSeconds`); null before any.
   */
  aliveAt: number | null;
  /**
   * How long ago (ms, on the monotonic clock) that proof came, when `state()` was read; null
   * before any. What to bound the staleness of a cache shown to someone by.
   */
  aliveAgoMs: number | null;
  /**
   * The failure not yet over: it lasts until a request succeeds or an event or bookmark
   * arrives. `statusCode` is 0 below HTTP; `retrying` is false once the informer gave up.
   */
  error: { errorType: KubernetesErrorTypes; statusCode: number; retrying: boolean } | null;
}

/**
 * A list-watch that never gives up, with the state cached natively. Every `for await` is an
 * independent consumer: one ADDED per cached object, SYNCED, then live changes.
 */
export interface KubernetesInformer extends AsyncIterable<KubernetesInformerEvent> {
  /** Resolves once the initial list is cached; rejects if the informer ends (or closes) before. */
  readonly synced: Promise<void>;
  /** The cached object (a copy), or undefined; `namespace` defaults to the informer's. */
  get(name: string, namespace?: string): JsonObject | undefined;
  /** Cached objects (copies), optionally of one namespace and matching a label selector. */
  list(options?: KubernetesInformerReadOptions): JsonObject[];
  /** Objects cached. */
  readonly size: number;
  /** The last resourceVersion seen, bookmarks included. */
  readonly resourceVersion: string | undefined;
  stats(): KubernetesInformerStats;
  /**
   * The informer's health, read natively without following its events (no JSON, no event per
   * change): for a reader that only needs to know whether the cache can answer.
   */
  state(): KubernetesInformerState;
  /**
   * `listener()` runs when the informer syncs, fails, recovers or ends, and at the change a
   * caller armed with {@link armChangeNotice}; returns a function that removes it.
   */
  onStateChange(listener: () => void): () => void;
  /**
   * Asks for one more onStateChange call at the cache's next change after `generation` (a
   * `state().generation`); false, with nothing asked, when it has changed since already. A busy
   * informer then wakes its reader at the pace the reader re-arms, not once per change.
   */
  armChangeNotice(generation: number): boolean;
  /** The JSON array text `list(options)` parses: for a reader that only compares answers. */
  listText(options?: KubernetesInformerReadOptions): string;
  /**
   * A SHA-256, in hex, of the objects `listText(options)` would join, taken natively without
   * making that text: equal for equal answers, different when a selected object changed, came
   * or went. For a reader that only compares answers.
   */
  fingerprint(options?: KubernetesInformerReadOptions): string;
  /** Ends this handle's consumers normally; the last handle stops the list-watch. */
  close(): void;
}

/** Options of {@link NativeKubernetesWatcher}. */
export interface NativeKubernetesWatcherOptions {
  /** Receives warnings (malformed lines, HTTP and network errors). Default: console.warn. */
  logger?: Pick<LoggerService, 'warn' | 'error'> & Partial<LoggerService>;
  /** Where the in-cluster service account lives; default `/var/run/secrets/kubernetes.io/serviceaccount`. */
  serviceAccountDir?: string;
  /**
   * How long, in ms, an informer consumer's change may wait for others to cross with it in one
   * wake-up of the main thread, while changes keep coming (default 50, at most 1000; 0 sends
   * each at once). The first change after a quiet spell always crosses at once. Shorter is
   * lower latency at more main-thread CPU per change (bench/README.md, "Latency under 10 ms
   * costs a wake-up per change"). Plain watches never wait.
   */
  gatherMs?: number;
}

/** Whose log {@link NativeKubernetesWatcher.streamLogs} reads: a pod's container on a cluster. */
export interface KubernetesLogParams {
  clusterDetails: ClusterDetails;
  credential: KubernetesCredential;
  namespace: string;
  pod: string;
  /** The container; may be left out for a pod of one container. */
  container?: string;
}

/** The API server's `PodLogOptions`, and a signal. */
export interface KubernetesLogOptions {
  /** Keep the stream open and yield lines as they are written; a follow the server ends resumes from the last line. */
  follow?: boolean;
  /** The previous instance of a restarted container. */
  previous?: boolean;
  /** Each line starts with its RFC 3339 timestamp and a space. */
  timestamps?: boolean;
  /** Only lines of the last this many seconds (at least 1; not with `sinceTime`). */
  sinceSeconds?: number;
  /** Only lines from this RFC 3339 time on (not with `sinceSeconds`). */
  sinceTime?: string;
  /** Only the last this many lines of what there is when the stream starts. */
  tailLines?: number;
  /** At most this many bytes in all (counted as yielded); the last line may be cut. */
  limitBytes?: number;
  /** Aborting it ends the stream and closes its connection. */
  signal?: AbortSignal;
  /**
   * A follow shared with this watcher's other shared streams of the same cluster, credential,
   * pod and container: one request to the API server for all of them, its last 4 MiB kept off
   * the V8 heap; each stream still gets its own `tailLines`, `sinceTime`, `sinceSeconds`,
   * `timestamps` and `limitBytes`, from the kept lines when they cover it, else from a follow of
   * its own. A stream that reads too slowly skips ahead with a SKIPPED item. Without `follow`, a
   * read is answered from such a follow's kept lines when one runs and covers it (no request).
   */
  share?: boolean;
  /**
   * Yield the text itself (`{ type: 'TEXT', text }`: whole lines with their newlines, a piece of
   * a longer line without) rather than LINES: for a reader that passes the log on (a proxy's
   * body), at one string per batch however many lines it holds.
   */
  text?: boolean;
}

/** A batch of a log's text, with `text: true`. */
export interface KubernetesLogText {
  type: 'TEXT';
  /** Whole lines each with its `\n`, a piece of a longer line without. */
  text: string;
}

/** A line (or piece) that is not UTF-8, with `text: true`: its bytes as the server sent them. */
export interface KubernetesLogBytes {
  type: 'BYTES';
  bytes: Buffer;
}

/** Lines a shared stream's reader missed because it fell behind what the follow keeps. */
export interface KubernetesLogSkipped {
  type: 'SKIPPED';
  /** Lines (and pieces of long lines) it missed. */
  lines: number;
}

/** A batch of a log's lines. */
export interface KubernetesLogLines {
  type: 'LINES';
  /** The lines, without their newlines; bytes that are not UTF-8 become U+FFFD (with one warning). */
  lines: string[];
  /**
   * Indexes in `lines` of pieces of a line longer than 16 KiB, cut as the kubelet cuts them:
   * the line goes on in the next piece (which may be the next batch's first).
   */
  continued: number[];
}

/** A log stream's error: the API server's message kept (a pod gone, a container not valid or waiting to start). */
export interface KubernetesLogError {
  type: 'ERROR';
  error: StatusError & { message: string };
}

/** What a log stream yields. */
export type KubernetesLogEvent =
  KubernetesLogLines | KubernetesLogText | KubernetesLogBytes | KubernetesLogSkipped | KubernetesLogError;

/** Backstage's KubernetesWatcher, implemented natively. */
export declare class NativeKubernetesWatcher implements KubernetesWatcher {
  constructor(options?: NativeKubernetesWatcherOptions);
  watchResource(
    params: KubernetesWatchParams,
    options?: KubernetesWatchOptions,
  ): AsyncGenerator<KubernetesWatchEvent, void, undefined>;
  /**
   * A container's log (`GET …/pods/{pod}/log`): its lines in batches, cut on a Rust thread, and
   * ERROR events as data. A follow the server ends (a restart, a dropped connection) resumes
   * from the last line delivered, nothing lost or repeated; it ends when the API server refuses
   * (404 for a pod gone, 400 for a container not valid or waiting to start), when a resumed
   * follow brings nothing new at once (the container stopped), or after 5 failed resumes in a row.
   */
  streamLogs(
    params: KubernetesLogParams,
    options?: KubernetesLogOptions,
  ): AsyncGenerator<KubernetesLogEvent, void, undefined>;
  /** A shared, self-healing list-watch with a native cache. */
  informer(params: KubernetesInformerParams, options?: KubernetesInformerOptions): KubernetesInformer;
  /**
   * Closes every informer opened through this watcher (a backend's shutdown); any opened later
   * closes at once. Plain watches end by their own signal, `break` or `return()`. Idempotent.
   */
  close(): void;
  /** Reports this watcher's informers, its plain watches and the process's connections as OpenTelemetry metrics. */
  metrics(options?: MetricsOptions): MetricsRegistration;
}

/**
 * The part of an OpenTelemetry `Meter` (`@opentelemetry/api`) the metrics use; declared here so
 * that these types need not the optional peer dependency.
 */
export interface MetricsMeter {
  createObservableCounter(name: string, options?: { description?: string; unit?: string }): object;
  createObservableUpDownCounter(name: string, options?: { description?: string; unit?: string }): object;
  createObservableGauge(name: string, options?: { description?: string; unit?: string }): object;
  addBatchObservableCallback(callback: (result: any) => void, observables: any[]): void;
  removeBatchObservableCallback(callback: (result: any) => void, observables: any[]): void;
}

/** Options of {@link registerMetrics}. */
export interface MetricsOptions {
  /** The meter to register on; takes precedence over `meterProvider`. */
  meter?: MetricsMeter;
  /**
   * Where to get the meter (`kube-watch-native` and the package version); default the global
   * provider of `@opentelemetry/api`, which then must be installed.
   */
  meterProvider?: { getMeter(name: string, version?: string, options?: object): MetricsMeter };
}

/** A registration of {@link registerMetrics}. */
export interface MetricsRegistration {
  /** Removes the collection callback; idempotent. */
  close(): void;
}

/** One metric of {@link METRICS}. */
export interface MetricDescription {
  /** `kube_watch.…`. */
  readonly name: string;
  /** The observable instrument. */
  readonly kind: 'counter' | 'upDownCounter' | 'gauge';
  /** UCUM unit, as OpenTelemetry writes it (`By`, `s`, `{event}`, …). */
  readonly unit: string;
  readonly description: string;
}

/**
 * Reports the watcher's informers and plain watches (by `cluster`, `group`, `version`,
 * `resource`; errors also by `error.type`) and the process's HTTP/2 connections (by `cluster`, the origin) as observable
 * instruments, read by one batch callback: one native snapshot per collection, nothing per
 * event, nothing at all without an SDK reader. Same as `watcher.metrics(options)`.
 */
export declare function registerMetrics(
  watcher: NativeKubernetesWatcher,
  options?: MetricsOptions,
): MetricsRegistration;

/** Every metric reported, with its instrument and unit (the README's table). */
export declare const METRICS: readonly MetricDescription[];

/** Options of {@link loadKubeconfig}. */
export interface LoadKubeconfigOptions {
  /** Kubeconfig file to read; overrides `KUBECONFIG` and `~/.kube/config`. Must exist. */
  path?: string;
  /** Context to use instead of the file's `current-context`. */
  context?: string;
  /** Environment to read `KUBECONFIG` and `KUBERNETES_SERVICE_HOST`/`_PORT` from (default `process.env`). */
  env?: Record<string, string | undefined>;
  /** Home directory holding `.kube/config` (default `os.homedir()`). */
  homedir?: string;
  /** Where the in-cluster `token`, `ca.crt` and `namespace` are (default `/var/run/secrets/kubernetes.io/serviceaccount`). */
  serviceAccountDir?: string;
  /** Whether an exec plugin may use the terminal (default: whether standard input is a terminal). */
  terminal?: boolean;
  /** How long an exec plugin may run before it is stopped (default 60 000, 300 000 with the terminal). */
  execTimeoutMs?: number;
}

/** Options of {@link LoadedKubeconfig.getCredential}. */
export interface GetCredentialOptions {
  /** The server refused the current credential (401): run the exec plugin again even if it has not expired. */
  forceRefresh?: boolean;
}

/** What {@link loadKubeconfig} found: `clusterDetails` and `credential` go straight into `watchResource`. */
export interface LoadedKubeconfig {
  clusterDetails: ClusterDetails;
  /** The credential now (an exec plugin has run once, synchronously, to produce it). */
  credential: KubernetesCredential;
  /**
   * A current credential, for each new connection: an exec plugin's is cached until shortly
   * before its `expirationTimestamp` (or for the process) and renewed without blocking;
   * `tokenFile` and the in-cluster token are read again. Rejects with {@link KubeconfigError}.
   */
  getCredential(options?: GetCredentialOptions): Promise<KubernetesCredential>;
  /** The context's namespace, the pod's namespace in-cluster, else `'default'`. */
  namespace: string;
  /** The context used (`'in-cluster'` for the service-account fallback). */
  contextName: string;
  source: 'kubeconfig' | 'in-cluster';
}

/** Why a kubeconfig cannot be used; the message names files, contexts and fields, never secrets. */
export declare class KubeconfigError extends Error {
  readonly name: 'KubeconfigError';
  readonly code: 'ERR_KUBECONFIG';
  /** Set for the failures a first run usually meets. */
  readonly reason?: 'NoKubeconfig' | 'ContextNotFound';
}

/**
 * Reads `options.path`, else the files in `KUBECONFIG` (merged first-wins, as kubectl does),
 * else `~/.kube/config`, else the in-cluster service account. Supports static tokens, token
 * files, client certificates and exec credential plugins (`client.authentication.k8s.io/v1`
 * and `v1beta1`); maps `proxy-url` and `tls-server-name` to `clusterDetails.proxyUrl` and
 * `tlsServerName`; throws {@link KubeconfigError} for auth providers, basic auth and
 * impersonation, and when an exec plugin fails (naming the context, command and reason).
 */
export declare function loadKubeconfig(options?: LoadKubeconfigOptions): LoadedKubeconfig;

/** What is running: the package version, and where the loaded native binary came from. */
export interface VersionInfo {
  /** The npm package's version (the binary's, which the loader checks is the same). */
  readonly package: string;
  /** The Rust target triple the binary was compiled for, e.g. `x86_64-unknown-linux-gnu`. */
  readonly target: string;
  /** The git commit the binary was built from, or `unknown`. */
  readonly commit: string;
  /** This process's platform id, e.g. `linux-x64-gnu` (the platform package's suffix). */
  readonly platform: string;
  /** Path of the binary loaded: a platform package's, or a local build in a source checkout. */
  readonly binary: string;
}

/** The version and provenance of this package and its native binary. */
export declare const version: VersionInfo;
