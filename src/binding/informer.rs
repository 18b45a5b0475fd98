//! The informer's N-API shell: converts the JavaScript informer spec, opens a shared informer
//! in the watcher's registry, hands consumers' batches and the cache's reads to JavaScript,
//! and carries the reflector's news (warnings, notices, sync, end, credential requests) back
//! through one thread-safe function per handle. That function is referenced, so a running
//! informer keeps the process alive; it is let go when the handle closes or the informer ends.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Duration;

use napi::bindgen_prelude::{AsyncBlock, AsyncBlockBuilder, within_runtime_if_available};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Error, Result, Status};
use napi_derive::napi;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use serde::Serialize;

use super::{ClusterConnections, ClusterTarget, CredentialSpec, NativeBatch, POOL, pool_stats};
use crate::auth::Credential;
use crate::framing::DEFAULT_MAX_LINE_BYTES;
use crate::informer::backoff::BackoffPolicy;
use crate::informer::connect::{Cluster, CredentialFuture, CredentialProvider, StaticCredential};
use crate::informer::fanout::Cursor;
use crate::informer::reflector::{InitialList, Reflector, ReflectorConfig, Reporter};
use crate::informer::registry::{Handle, Registry, Sinks};
use crate::informer::selector::Selector;
use crate::informer::stats::{Labels, StatsSnapshot, cluster_label};
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

    /// Every figure of this watcher's informers, added up per series (cluster, group, version,
    /// resource: namespaces are not kept apart), and of the process's connections, in one call,
    /// as JSON text ([`NativeMetrics`]): what one metrics collection reads. One string crosses
    /// to JavaScript, not an object per informer (with 1 000 informers, objects cost three
    /// times as much). Counters are read, not reset; nothing here runs per event.
    #[napi]
    pub fn metrics_json(&self) -> String {
        let mut series: HashMap<Labels, SeriesMetrics> = HashMap::new();
        let mut live = Vec::new();
        let mut retired = Vec::new();
        self.registry.each(
            |labels, reflector, _| {
                let stats = reflector.stats().snapshot();
                let cache = reflector.cache();
                live.push((
                    labels.clone(),
                    Counts::of(&stats, cache.delivered()),
                    Live {
                        watches_open: stats.watches_open,
                        objects: cache.len(),
                        cached_bytes: cache.cached_bytes(),
                        synced: cache.is_synced(),
                        seconds_since_last_event: stats.seconds_since_last_event,
                        slowest_consumer_pending: cache.slowest_pending(),
                        consumers: cache.consumers(),
                    },
                ));
            },
            |labels, totals| {
                retired.push((labels.clone(), Counts::of(&totals.counts, totals.delivered)));
            },
        );
        for (labels, counts) in retired {
            series
                .entry(labels.clone())
                .or_insert_with(|| SeriesMetrics::new(&labels))
                .counts
                .add(counts);
        }
        for (labels, counts, informer) in live {
            let entry = series
                .entry(labels.clone())
                .or_insert_with(|| SeriesMetrics::new(&labels));
            entry.counts.add(counts);
            entry.add(&informer);
        }
        let metrics = NativeMetrics {
            series: series.into_values().collect(),
            clusters: pool_stats(),
        };
        serde_json::to_string(&metrics).unwrap_or_default()
    }
}

/// What one metrics collection reads ([`NativeInformerRegistry::metrics_json`]).
#[derive(Serialize)]
pub struct NativeMetrics {
    /// One entry per series of the watcher's informers, closed ones' counts included.
    pub series: Vec<SeriesMetrics>,
    /// The process's connections per cluster origin, as `poolStats()` gives them.
    pub clusters: Vec<ClusterConnections>,
}

/// The counters of an informer, or of a series' informers.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Requests sent (list pages, streaming lists, watches).
    pub connects: u64,
    /// Watches started again after one ended or failed.
    pub reconnects: u64,
    /// Lists after a 410.
    pub relists: u64,
    /// Changes received (watch events, list items).
    pub events_received: u64,
    /// Events taken by consumers, summed over them.
    pub events_delivered: u64,
    /// Body bytes received.
    pub bytes_received: u64,
    /// Credentials asked for after the first.
    pub credential_refreshes: u64,
    /// Errors by `errorType`.
    pub errors: BTreeMap<String, u64>,
}

impl Counts {
    fn of(stats: &StatsSnapshot, delivered: u64) -> Self {
        Self {
            connects: stats.connects,
            reconnects: stats.reconnects,
            relists: stats.relists,
            events_received: stats.events,
            events_delivered: delivered,
            bytes_received: stats.bytes,
            credential_refreshes: stats.credential_refreshes,
            errors: stats.errors.clone(),
        }
    }

    fn add(&mut self, other: Self) {
        self.connects += other.connects;
        self.reconnects += other.reconnects;
        self.relists += other.relists;
        self.events_received += other.events_received;
        self.events_delivered += other.events_delivered;
        self.bytes_received += other.bytes_received;
        self.credential_refreshes += other.credential_refreshes;
        for (kind, n) in other.errors {
            *self.errors.entry(kind).or_default() += n;
        }
    }
}

/// One running informer's figures that are not counters.
struct Live {
    watches_open: u64,
    objects: usize,
    cached_bytes: usize,
    synced: bool,
    seconds_since_last_event: f64,
    slowest_consumer_pending: usize,
    consumers: usize,
}

/// One series' figures: counters of its informers, closed ones included, and the figures of
/// the open ones (sums; `synced` all of them; the most for age and pending, absent without an
/// open informer).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SeriesMetrics {
    /// The cluster URL without credentials, query or trailing slash.
    pub cluster: String,
    pub group: String,
    pub version: String,
    /// The plural resource name.
    pub resource: String,
    #[serde(flatten)]
    pub counts: Counts,
    /// Shared informers open.
    pub informers: usize,
    /// Watch streams being read now.
    pub watches_open: u64,
    /// Objects cached.
    pub objects: usize,
    /// Bytes of JSON cached.
    pub cached_bytes: usize,
    /// Consumers open.
    pub consumers: usize,
    /// Every open informer has its initial list cached.
    pub synced: Option<bool>,
    /// The most seconds since an informer's last event or bookmark.
    pub seconds_since_last_event: Option<f64>,
    /// The most changes pending in one consumer.
    pub slowest_consumer_pending: Option<usize>,
}

impl SeriesMetrics {
    fn new(labels: &Labels) -> Self {
        Self {
            cluster: labels.cluster.clone(),
            group: labels.group.clone(),
            version: labels.version.clone(),
            resource: labels.resource.clone(),
            counts: Counts::default(),
            informers: 0,
            watches_open: 0,
            objects: 0,
            cached_bytes: 0,
            consumers: 0,
            synced: None,
            seconds_since_last_event: None,
            slowest_consumer_pending: None,
        }
    }

    fn add(&mut self, informer: &Live) {
        self.informers += 1;
        self.watches_open += informer.watches_open;
        self.objects += informer.objects;
        self.cached_bytes += informer.cached_bytes;
        self.consumers += informer.consumers;
        self.synced = Some(self.synced.unwrap_or(true) && informer.synced);
        self.seconds_since_last_event = Some(
            self.seconds_since_last_event
                .unwrap_or(0.0)
                .max(informer.seconds_since_last_event),
        );
        self.slowest_consumer_pending = Some(
            self.slowest_consumer_pending
                .unwrap_or(0)
                .max(informer.slowest_consumer_pending),
        );
    }
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
