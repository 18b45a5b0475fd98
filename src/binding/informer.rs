//! The informer's N-API shell: converts the JavaScript informer spec, opens a shared informer
//! in the watcher's registry, hands consumers' batches and the cache's reads to JavaScript,
//! and carries the reflector's news (warnings, notices, sync, end, credential requests) back
//! through one thread-safe function per handle. That function is referenced, so a running
//! informer keeps the process alive; it is let go when the handle closes or the informer ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Duration;

use napi::bindgen_prelude::{AsyncBlock, AsyncBlockBuilder, within_runtime_if_available};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Error, Result, Status};
use napi_derive::napi;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{
    ClusterConnections, ClusterTarget, CredentialSpec, NativeBatch, POOL, count, pool_stats,
};
use crate::auth::Credential;
use crate::framing::DEFAULT_MAX_LINE_BYTES;
use crate::informer::backoff::BackoffPolicy;
use crate::informer::connect::{Cluster, CredentialFuture, CredentialProvider, StaticCredential};
use crate::informer::fanout::Cursor;
use crate::informer::reflector::{InitialList, Reflector, ReflectorConfig, Reporter};
use crate::informer::registry::{Handle, Registry, Sinks};
use crate::informer::selector::Selector;
use crate::informer::stats::{Labels, cluster_label};
use crate::projection::Projection;
use crate::proxy::ProxyEnv;
use crate::request::ResourceRef;

/// How long a `getCredential` call may take before it counts as failed.
const CREDENTIAL_WAIT: Duration = Duration::from_secs(60);

/// Paths every projected cached object keeps.
const KEPT_METADATA: [&str; 4] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "metadata.resourceVersion",
];

/// Everything `informer()` was given, flattened and type-checked by `lib/informer.js`.
#[napi(object)]
pub struct InformerSpec {
    /// The sharing key (cluster URL, identity, resource, namespace, selectors, fields).
    pub key: String,
    pub cluster: ClusterTarget,
    /// The static credential, unless `dynamic_credential`.
    pub credential: Option<CredentialSpec>,
    /// Ask JavaScript (`getCredential`) for each credential.
    pub dynamic_credential: bool,
    pub group: String,
    pub api_version: String,
    pub plural: String,
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub page_size: Option<u32>,
    /// `auto`, `paginated` or `streaming`.
    pub initial_list: Option<String>,
    pub backoff_initial_seconds: Option<f64>,
    pub backoff_max_seconds: Option<f64>,
    pub idle_timeout_seconds: Option<f64>,
    pub credential_ttl_seconds: Option<f64>,
    pub watch_timeout_seconds: Option<f64>,
    pub max_line_bytes: Option<i64>,
    pub fields: Option<Vec<String>>,
}

type Callback = ThreadsafeFunction<String, (), String, Status, false>;

/// One handle's way back to JavaScript.
pub struct JsSink {
    callback: Callback,
}

impl JsSink {
    fn send(&self, kind: &str, message: Option<&str>, id: Option<u64>) -> bool {
        let value = serde_json::json!({ "kind": kind, "message": message, "id": id });
        let status = self
            .callback
            .call(value.to_string(), ThreadsafeFunctionCallMode::NonBlocking);
        status == Status::Ok
    }
}

struct JsReporter {
    sinks: Arc<Sinks<JsSink>>,
}

impl Reporter for JsReporter {
    fn warn(&self, message: &str) {
        if let Some(sink) = self.sinks.first() {
            sink.send("warn", Some(message), None);
        }
    }

    fn info(&self, message: &str) {
        if let Some(sink) = self.sinks.first() {
            sink.send("info", Some(message), None);
        }
    }

    fn synced(&self) {
        for sink in self.sinks.all() {
            sink.send("synced", None, None);
        }
    }

    fn ended(&self) {
        for sink in self.sinks.all() {
            sink.send("ended", None, None);
        }
        // The callbacks go: a finished informer keeps nothing alive.
        self.sinks.clear();
    }
}

type Answer = oneshot::Sender<std::result::Result<Credential, String>>;

/// `getCredential` calls waiting for JavaScript's answer, by request id.
static PENDING_CREDENTIALS: LazyLock<Mutex<HashMap<u64, Answer>>> = LazyLock::new(Mutex::default);
static NEXT_REQUEST: AtomicU64 = AtomicU64::new(1);

fn pending() -> std::sync::MutexGuard<'static, HashMap<u64, Answer>> {
    PENDING_CREDENTIALS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// Asks JavaScript's `getCredential` through the oldest open handle.
struct JsCredentials {
    sinks: Arc<Sinks<JsSink>>,
}

impl CredentialProvider for JsCredentials {
    fn credential(&self) -> CredentialFuture {
        let sink = self.sinks.first();
        Box::pin(async move {
            let sink = sink.ok_or_else(|| "no open informer handle to ask".to_owned())?;
            let id = NEXT_REQUEST.fetch_add(1, Ordering::Relaxed);
            let (tx, rx) = oneshot::channel();
            pending().insert(id, tx);
            if !sink.send("credential", None, Some(id)) {
                pending().remove(&id);
                return Err("getCredential could not be called".to_owned());
            }
            drop(sink);
            let answer = tokio::time::timeout(CREDENTIAL_WAIT, rx).await;
            pending().remove(&id);
            match answer {
                Ok(Ok(answer)) => answer,
                Ok(Err(_)) => Err("getCredential was not answered".to_owned()),
                Err(_) => Err(format!(
                    "getCredential did not answer within {} s",
                    CREDENTIAL_WAIT.as_secs()
                )),
            }
        })
    }

    fn refreshes(&self) -> bool {
        true
    }
}

/// JavaScript's answer to credential request `id`: the credential, or why there is none.
#[napi]
pub fn answer_credential(id: f64, credential: Option<CredentialSpec>, error: Option<String>) {
    let Some(tx) = pending().remove(&(id as u64)) else {
        return;
    };
    let answer = match (credential, error) {
        (Some(credential), None) => Ok(credential.credential()),
        (_, Some(error)) => Err(error),
        (None, None) => Err("getCredential returned nothing".to_owned()),
    };
    let _ = tx.send(answer);
}

/// The shared informers of one `NativeKubernetesWatcher`.
#[napi]
#[derive(Default)]
pub struct NativeInformerRegistry {
    registry: Registry<JsSink>,
}

fn invalid(message: String) -> Error {
    Error::new(Status::InvalidArg, message)
}

fn config_of(spec: &InformerSpec) -> Result<ReflectorConfig> {
    let resource_path = ResourceRef {
        group: spec.group.clone(),
        version: spec.api_version.clone(),
        plural: spec.plural.clone(),
        namespace: spec.namespace.clone(),
    }
    .path();
    let cluster = Cluster {
        spec: spec.cluster.spec(),
        in_cluster: spec.cluster.in_cluster(),
        proxy_url: spec.cluster.proxy_url.clone(),
        tls_server_name: spec.cluster.tls_server_name.clone(),
        proxy_env: ProxyEnv::from_process(),
    };
    let backoff = BackoffPolicy::new(
        spec.backoff_initial_seconds.unwrap_or(0.8),
        spec.backoff_max_seconds.unwrap_or(30.0),
    )
    .map_err(|err| invalid(format!("kube-watch-native: options.{err}")))?;
    let initial_list = match spec.initial_list.as_deref().unwrap_or("auto") {
        "auto" => InitialList::Auto,
        "paginated" => InitialList::Paginated,
        "streaming" => InitialList::Streaming,
        other => {
            return Err(invalid(format!(
                "kube-watch-native: options.initialList must be 'auto', 'paginated' or 'streaming' (got '{other}')"
            )));
        }
    };
    let seconds = |value: Option<f64>| {
        value
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(Duration::from_secs_f64)
    };
    Ok(ReflectorConfig {
        cluster,
        resource_path,
        label_selector: spec.label_selector.clone(),
        field_selector: spec.field_selector.clone(),
        page_size: spec.page_size.unwrap_or(500),
        initial_list,
        backoff,
        idle_timeout: seconds(spec.idle_timeout_seconds),
        projection: spec.fields.as_ref().map(|fields| {
            let all: Vec<&str> = fields
                .iter()
                .map(String::as_str)
                .chain(KEPT_METADATA)
                .collect();
            Projection::new(&all)
        }),
        credential_ttl: seconds(spec.credential_ttl_seconds).unwrap_or(Duration::from_secs(300)),
        max_line_bytes: spec
            .max_line_bytes
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(DEFAULT_MAX_LINE_BYTES),
        watch_timeout: seconds(spec.watch_timeout_seconds).unwrap_or(Duration::from_secs(300)),
    })
}

#[napi]
impl NativeInformerRegistry {
    #[napi(constructor)]
    pub fn new() -> Self {
        Self::default()
    }

    /// A handle on the shared informer for `spec.key`, started if none runs. `callback`
    /// receives the informer's news as JSON text: `{ kind, message, id }`.
    #[napi(ts_args_type = "spec: InformerSpec, callback: (message: string) => void")]
    pub fn open(&self, spec: InformerSpec, callback: Callback) -> Result<NativeInformer> {
        let config = config_of(&spec)?;
        let provider_static = (!spec.dynamic_credential).then(|| {
            spec.credential
                .as_ref()
                .map(CredentialSpec::credential)
                .unwrap_or(Credential::Anonymous)
        });
        let labels = Labels {
            cluster: cluster_label(&spec.cluster.cluster_url),
            group: spec.group.clone(),
            version: spec.api_version.clone(),
            resource: spec.plural.clone(),
        };
        let handle = self
            .registry
            .open(spec.key, labels, JsSink { callback }, |sinks, memory| {
                let provider: Arc<dyn CredentialProvider> = match provider_static {
                    Some(credential) => Arc::new(StaticCredential(credential)),
                    None => Arc::new(JsCredentials {
                        sinks: sinks.clone(),
                    }),
                };
                let reporter = Arc::new(JsReporter { sinks });
                within_runtime_if_available(|| {
                    Reflector::start(
                        config,
                        provider,
                        reporter,
                        memory,
                        POOL.clone(),
                        &tokio::runtime::Handle::current(),
                    )
                })
            });
        Ok(NativeInformer { handle })
    }

    /// Shared informers running now.
    #[napi]
    pub fn running(&self) -> u32 {
        self.registry.running() as u32
    }

    /// Every figure of this watcher's informers and of the process's connections, in one call:
    /// what one metrics collection reads. Counters are read, not reset; nothing here runs per
    /// event.
    #[napi]
    pub fn metrics(&self) -> NativeMetrics {
        let mut informers = Vec::new();
        let mut retired = Vec::new();
        self.registry.each(
            |labels, reflector, handles| {
                let stats = reflector.stats().snapshot();
                let cache = reflector.cache();
                informers.push(InformerMetrics {
                    cluster: labels.cluster.clone(),
                    group: labels.group.clone(),
                    version: labels.version.clone(),
                    resource: labels.resource.clone(),
                    watches_open: count(stats.watches_open as usize),
                    connects: stats.connects as f64,
                    reconnects: stats.reconnects as f64,
                    relists: stats.relists as f64,
                    events_received: stats.events as f64,
                    events_delivered: cache.delivered() as f64,
                    bytes_received: stats.bytes as f64,
                    credential_refreshes: stats.credential_refreshes as f64,
                    errors: stats
                        .errors
                        .into_iter()
                        .map(|(kind, n)| (kind, n as f64))
                        .collect(),
                    objects: count(cache.len()),
                    cached_bytes: cache.cached_bytes() as f64,
                    synced: cache.is_synced(),
                    finished: reflector.is_finished(),
                    seconds_since_last_event: stats.seconds_since_last_event,
                    slowest_consumer_pending: count(cache.slowest_pending()),
                    consumers: count(cache.consumers()),
                    handles: count(handles),
                });
            },
            |labels, totals| {
                let counts = &totals.counts;
                retired.push(RetiredMetrics {
                    cluster: labels.cluster.clone(),
                    group: labels.group.clone(),
                    version: labels.version.clone(),
                    resource: labels.resource.clone(),
                    connects: counts.connects as f64,
                    reconnects: counts.reconnects as f64,
                    relists: counts.relists as f64,
                    events_received: counts.events as f64,
                    events_delivered: totals.delivered as f64,
                    bytes_received: counts.bytes as f64,
                    credential_refreshes: counts.credential_refreshes as f64,
                    errors: counts
                        .errors
                        .iter()
                        .map(|(kind, n)| (kind.clone(), *n as f64))
                        .collect(),
                });
            },
        );
        NativeMetrics {
            informers,
            retired,
            clusters: pool_stats(),
        }
    }
}

/// What one metrics collection reads ([`NativeInformerRegistry::metrics`]).
#[napi(object, object_from_js = false)]
pub struct NativeMetrics {
    /// One entry per shared informer of the watcher.
    pub informers: Vec<InformerMetrics>,
    /// The counts of informers that have closed, one entry per series.
    pub retired: Vec<RetiredMetrics>,
    /// The process's connections per cluster origin, as `poolStats()` gives them.
    pub clusters: Vec<ClusterConnections>,
}

/// The counters of a series' closed informers: what its counters add to the live informers'.
#[napi(object, object_from_js = false)]
pub struct RetiredMetrics {
    pub cluster: String,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub connects: f64,
    pub reconnects: f64,
    pub relists: f64,
    pub events_received: f64,
    pub events_delivered: f64,
    pub bytes_received: f64,
    pub credential_refreshes: f64,
    pub errors: HashMap<String, f64>,
}

/// One shared informer's figures. Counts are numbers (exact up to 2^53).
#[napi(object, object_from_js = false)]
pub struct InformerMetrics {
    /// The cluster URL without credentials, query or trailing slash.
    pub cluster: String,
    pub group: String,
    pub version: String,
    /// The plural resource name.
    pub resource: String,
    /// Watch streams being read now (0 or 1).
    pub watches_open: u32,
    /// Requests sent (list pages, streaming lists, watches).
    pub connects: f64,
    /// Watches started again after one ended or failed.
    pub reconnects: f64,
    /// Lists after a 410.
    pub relists: f64,
    /// Changes received (watch events, list items).
    pub events_received: f64,
    /// Events taken by consumers, summed over them.
    pub events_delivered: f64,
    /// Body bytes received.
    pub bytes_received: f64,
    /// Credentials asked for after the first.
    pub credential_refreshes: f64,
    /// Errors by `errorType`.
    pub errors: HashMap<String, f64>,
    /// Objects cached.
    pub objects: u32,
    /// Bytes of JSON cached.
    pub cached_bytes: f64,
    /// The initial list is cached.
    pub synced: bool,
    /// The informer ended (a terminal error); its handles are still open.
    pub finished: bool,
    /// Seconds since the last event or bookmark (or since the start, before the first).
    pub seconds_since_last_event: f64,
    /// The most changes pending in one consumer.
    pub slowest_consumer_pending: u32,
    /// Consumers open.
    pub consumers: u32,
    /// Handles open.
    pub handles: u32,
}

/// One `informer()` handle.
#[napi]
pub struct NativeInformer {
    handle: Handle<JsSink>,
}

#[napi]
impl NativeInformer {
    /// A new consumer: the cached objects as ADDED, SYNCED once synced, then changes.
    #[napi]
    pub fn subscribe(&self) -> NativeInformerConsumer {
        NativeInformerConsumer {
            cursor: Arc::new(self.handle.reflector().cache().subscribe()),
            cancel: CancellationToken::new(),
        }
    }

    /// The cached object's JSON text, if cached.
    #[napi]
    pub fn get(&self, namespace: String, name: String) -> Option<String> {
        self.handle
            .reflector()
            .cache()
            .get(&namespace, &name)
            .map(|object| String::from_utf8_lossy(object.text()).into_owned())
    }

    /// The JSON array text of the cached objects in `namespace` (all when absent) that
    /// `label_selector` selects.
    #[napi]
    pub fn list(
        &self,
        namespace: Option<String>,
        label_selector: Option<String>,
    ) -> Result<String> {
        let selector = Selector::parse(label_selector.as_deref().unwrap_or("")).map_err(|err| {
            invalid(format!(
                "kube-watch-native: list() labelSelector is not valid: {err}"
            ))
        })?;
        let text = self
            .handle
            .reflector()
            .cache()
            .list(namespace.as_deref(), &selector);
        String::from_utf8(text).map_err(|err| Error::from_reason(err.to_string()))
    }

    /// Objects cached.
    #[napi]
    pub fn size(&self) -> u32 {
        self.handle.reflector().cache().len() as u32
    }

    /// The last resourceVersion seen, bookmarks included.
    #[napi]
    pub fn resource_version(&self) -> Option<String> {
        self.handle.reflector().cache().resource_version()
    }

    /// The initial list is cached.
    #[napi]
    pub fn is_synced(&self) -> bool {
        self.handle.reflector().cache().is_synced()
    }

    /// The shared informer ended (closed, or a terminal error).
    #[napi]
    pub fn is_finished(&self) -> bool {
        self.handle.reflector().is_finished()
    }

    /// This handle joined an informer that was already running.
    #[napi]
    pub fn joined(&self) -> bool {
        self.handle.joined()
    }

    /// The counters as JSON text, with consumers, cached bytes and handles.
    #[napi]
    pub fn stats_json(&self) -> String {
        let reflector = self.handle.reflector();
        let mut value =
            serde_json::to_value(reflector.stats().snapshot()).unwrap_or(serde_json::Value::Null);
        if let Some(map) = value.as_object_mut() {
            map.insert("consumers".into(), reflector.cache().consumers().into());
            map.insert(
                "cachedBytes".into(),
                reflector.cache().cached_bytes().into(),
            );
            map.insert("handles".into(), self.handle.handles().into());
            map.insert("delivered".into(), reflector.cache().delivered().into());
            map.insert(
                "slowestConsumerPending".into(),
                reflector.cache().slowest_pending().into(),
            );
        }
        value.to_string()
    }

    /// Lets this handle go; the last one stops the informer.
    #[napi]
    pub fn close(&self) {
        self.handle.close();
    }
}

/// One consumer (`for await` over an informer), taken from like a watch.
#[napi]
pub struct NativeInformerConsumer {
    cursor: Arc<Cursor>,
    cancel: CancellationToken,
}

#[napi]
impl NativeInformerConsumer {
    /// The batch ready now, or `null`: then call `nextBatch()`.
    #[napi]
    pub fn take_batch(&self) -> Option<NativeBatch> {
        if self.cancel.is_cancelled() {
            return Some(crate::batch::Batch::end().into());
        }
        self.cursor.take().map(Into::into)
    }

    /// Resolves with the next batch (events, or the end).
    #[napi(ts_return_type = "Promise<NativeBatch>")]
    pub fn next_batch(&self, env: &Env) -> Result<AsyncBlock<NativeBatch>> {
        let cursor = self.cursor.clone();
        let cancel = self.cancel.clone();
        AsyncBlockBuilder::new(async move { Ok(cursor.next(&cancel).await.into()) }).build(env)
    }

    /// Ends this consumer now; idempotent.
    #[napi]
    pub fn cancel(&self) {
        self.cancel.cancel();
        self.cursor.close();
    }
}
