//! The N-API shell: converts the JavaScript watch spec, starts the core watch, hands batches
//! back. No contract logic lives here.
//!
//! A watch with nothing ready is armed (`wait()`), and the push that readies its next batch
//! names it on one weak thread-safe function per JavaScript environment ([`NativeWatchHub`]),
//! shared by every watch: JavaScript then takes the batch with `takeBatch()`. Not a Promise
//! per wait (`AsyncBlock`, a thread-safe function each): each thread-safe function is a libuv
//! async handle, and libuv looks at every one of the loop's on every wake-up, so with one per
//! waiting watch the main thread's cost of an event grew with the number of watches (as it did
//! for informers, `binding/informer.rs`).
//!
//! The calls besides watches and informers (`fetchText`, `poolStats`, `buildInfo`) are in
//! `binding/calls.rs`.

mod calls;
mod informer;
mod informer_handle;
mod selector;
mod snapshot;
mod strings;
mod strip;
mod watch_metrics;
mod way_back;

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use napi::bindgen_prelude::Either;
use napi::bindgen_prelude::within_runtime_if_available;
use napi::bindgen_prelude::{ToNapiValue, TypeName, ValueType};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Result, Status, sys};
use napi_derive::napi;

use self::strings::copied_string;
use self::watch_metrics::NativeWatchMetrics;
use crate::auth::{ClusterSpec, Credential, InClusterEnv};
use crate::batch::Batch;
use crate::error::Failure;
use crate::framing::DEFAULT_MAX_LINE_BYTES;
use crate::http::ConnectionPool;
use crate::informer::connect::{Cluster, Endpoint};
use crate::informer::reflector::ReflectorConfig;
use crate::informer::stats::{Labels, cluster_label};
use crate::proxy::ProxyEnv;
use crate::request::{ResourceRef, WatchQuery};
use crate::watch::{Watch, WatchConfig, WatchCounters};

/// One process-wide pool, so every watch to a cluster shares its connections.
static POOL: LazyLock<Arc<ConnectionPool>> = LazyLock::new(Arc::default);

const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Where a watch, an informer or a discovery request goes: `params.clusterDetails` with its
/// `authMetadata`, type-checked by `lib/watcher.js`.
#[napi(object)]
pub struct ClusterTarget {
    pub cluster_name: String,
    pub cluster_url: String,
    pub auth_provider: Option<String>,
    pub has_service_account_token: Option<bool>,
    #[napi(js_name = "skipTLSVerify")]
    pub skip_tls_verify: Option<bool>,
    pub ca_data: Option<String>,
    pub ca_file: Option<String>,
    /// `clusterDetails.proxyUrl` (kubeconfig `proxy-url`): http:// or socks5://.
    pub proxy_url: Option<String>,
    /// `clusterDetails.tlsServerName` (kubeconfig `tls-server-name`).
    pub tls_server_name: Option<String>,
    /// Where the in-cluster token, `ca.crt` and namespace live (tests point it elsewhere).
    pub service_account_dir: Option<String>,
}

impl ClusterTarget {
    fn spec(&self) -> ClusterSpec {
        ClusterSpec {
            name: self.cluster_name.clone(),
            url: self.cluster_url.clone(),
            auth_provider: self.auth_provider.clone(),
            has_service_account_token: self.has_service_account_token.unwrap_or(false),
            skip_tls_verify: self.skip_tls_verify.unwrap_or(false),
            ca_data: self.ca_data.as_deref().map(crate::http::shared_ca_data),
            ca_file: self.ca_file.clone(),
        }
    }

    /// The in-cluster environment as the spec's service-account folder shows it.
    fn in_cluster(&self) -> InClusterEnv {
        in_cluster_env(self.service_account_dir.as_deref())
    }

    /// The cluster as watches, GETs and informers resolve their endpoint on it.
    fn cluster(&self) -> Cluster {
        Cluster {
            spec: self.spec(),
            in_cluster: self.in_cluster(),
            proxy_url: self.proxy_url.clone(),
            tls_server_name: self.tls_server_name.clone(),
            proxy_env: ProxyEnv::from_process(),
        }
    }
}

/// A `KubernetesCredential`, checked by `lib/watcher.js`.
#[napi(object)]
pub struct CredentialSpec {
    /// `bearer token`, `x509 client certificate` or `anonymous`.
    pub credential_type: String,
    pub token: Option<String>,
    pub cert: Option<String>,
    pub key: Option<String>,
}

impl CredentialSpec {
    fn credential(&self) -> Credential {
        match (self.credential_type.as_str(), &self.cert, &self.key) {
            ("x509 client certificate", Some(cert), Some(key)) => Credential::ClientCertificate {
                cert: cert.clone(),
                key: key.clone(),
            },
            ("anonymous", _, _) => Credential::Anonymous,
            _ => Credential::Bearer(self.token.clone().unwrap_or_default()),
        }
    }
}

/// Everything `watchResource` was given, flattened and type-checked by `lib/watcher.js`.
#[napi(object)]
pub struct WatchSpec {
    pub cluster: ClusterTarget,
    pub credential: CredentialSpec,
    pub resource: ResourceSpec,
    pub resource_version: Option<String>,
    pub timeout_seconds: Option<i64>,
    pub allow_watch_bookmarks: Option<bool>,
    pub send_initial_events: Option<bool>,
    pub resource_version_match: Option<String>,
    pub max_line_bytes: Option<i64>,
    pub idle_timeout_seconds: Option<f64>,
}

/// The resource collection a watch or an informer reads and how its objects are cut: the
/// fields `WatchSpec` and `InformerSpec` share (`resource` in both).
#[napi(object)]
pub struct ResourceSpec {
    pub group: String,
    pub api_version: String,
    pub plural: String,
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    /// Dotted paths to keep in each object (the `fields` opt-in).
    pub fields: Option<Vec<String>>,
    /// Paths to remove from each object (the `strip` opt-in; not with `fields`).
    pub strip: Option<Vec<String>>,
    /// `PartialObjectMetadata` instead of whole objects (not with `fields`).
    pub metadata_only: Option<bool>,
}

impl ResourceSpec {
    /// The collection's API path, `/api/v1/namespaces/{ns}/pods` and the like.
    fn path(&self) -> String {
        ResourceRef {
            group: self.group.clone(),
            version: self.api_version.clone(),
            plural: self.plural.clone(),
            namespace: self.namespace.clone(),
        }
        .path()
    }

    /// The projection of `fields`, `strip` and `metadata_only`; `kept` paths stay with `fields`.
    fn projection(&self, kept: &[&str]) -> Result<Option<crate::projection::Projection>> {
        strip::projection_of(
            self.fields.as_deref(),
            kept,
            self.strip.as_deref(),
            self.metadata_only.unwrap_or(false),
        )
    }
}

/// A batch as it crosses to JavaScript, from a watch or an informer consumer: the common one
/// (events, no warnings, not the last) as its events text alone, sparing an object per batch;
/// any other as a [`NativeBatch`].
type Crossing = Either<BatchText, NativeBatch>;

fn crossing(batch: Batch) -> Crossing {
    if batch.warnings.is_empty() && !batch.done && !batch.events.is_empty() {
        Either::A(BatchText {
            bytes: batch.events,
            ascii: batch.ascii,
        })
    } else {
        Either::B(NativeBatch::from(batch))
    }
}

/// The batch's JSON text on its way into a JavaScript string, copied (see [`strings`]).
pub struct BatchText {
    bytes: Vec<u8>,
    ascii: bool,
}

impl TypeName for BatchText {
    fn type_name() -> &'static str {
        "String"
    }

    fn value_type() -> ValueType {
        ValueType::String
    }
}

impl ToNapiValue for BatchText {
    unsafe fn to_napi_value(raw_env: sys::napi_env, value: Self) -> Result<sys::napi_value> {
        copied_string(&Env::from_raw(raw_env), &value.bytes, value.ascii)
    }
}

/// One batch for JavaScript: `events` is a JSON array text (or empty). Only ever sent to
/// JavaScript, never read back.
#[napi(object, object_from_js = false)]
pub struct NativeBatch {
    #[napi(ts_type = "string")]
    pub events: BatchText,
    pub warnings: Vec<String>,
    pub done: bool,
}

impl From<Batch> for NativeBatch {
    fn from(batch: Batch) -> Self {
        Self {
            events: BatchText {
                bytes: batch.events,
                ascii: batch.ascii,
            },
            warnings: batch.warnings,
            done: batch.done,
        }
    }
}

/// The way back from every watch of one JavaScript environment: `(watch: number) => void`,
/// called with a watch's `id()` when its armed queue has a batch. Weak: what keeps the
/// process alive while a watch waits is JavaScript's (`lib/watch-hub.js`), so an environment
/// whose watches all ended or went idle can exit.
type Wakes = ThreadsafeFunction<u32, (), u32, Status, false, true>;

/// Watch ids, process-wide (a wake names its watch by it).
static NEXT_WATCH: AtomicU32 = AtomicU32::new(1);

/// Starts watches whose wake-ups all come back through one thread-safe function.
#[napi]
pub struct NativeWatchHub {
    wakes: Arc<Wakes>,
}

#[napi]
impl NativeWatchHub {
    /// `wake` is called with a watch's `id()` once a batch is ready after its `wait()`.
    #[napi(constructor, ts_args_type = "wake: (watch: number) => void")]
    pub fn new(wake: Wakes) -> Self {
        Self {
            wakes: Arc::new(wake),
        }
    }

    /// Starts a watch, counted in `metrics` (its watcher's); refusals and configuration errors
    /// come back as the watch's first batch (only a `strip` path JavaScript should have refused
    /// already throws).
    #[napi]
    pub fn start(&self, spec: WatchSpec, metrics: &NativeWatchMetrics) -> Result<NativeWatch> {
        let labels = Labels {
            cluster: cluster_label(&spec.cluster.cluster_url),
            group: spec.resource.group.clone(),
            version: spec.resource.api_version.clone(),
            resource: spec.resource.plural.clone(),
        };
        let counters = Arc::new(WatchCounters::default());
        let watch = start_watch(spec, counters.clone())?;
        metrics.track(labels, counters);
        let id = NEXT_WATCH.fetch_add(1, Ordering::Relaxed);
        let wakes = self.wakes.clone();
        watch.set_wake(Box::new(move || {
            // Fails only while the environment shuts down, when nobody waits any more.
            let _ = wakes.call(id, ThreadsafeFunctionCallMode::NonBlocking);
        }));
        Ok(NativeWatch { inner: watch, id })
    }
}

/// A running watch, owned by one JavaScript generator.
#[napi]
pub struct NativeWatch {
    inner: Watch,
    id: u32,
}

#[napi]
impl NativeWatch {
    /// The batch ready now, or `null` when there is none yet: then `wait()`. Taking a ready
    /// batch costs no Promise and no thread hop. The common batch (events, no warnings, not the
    /// last) comes as its events text alone, sparing an object per batch.
    #[napi(ts_return_type = "string | NativeBatch | null")]
    pub fn take_batch(&self) -> Option<Crossing> {
        Some(crossing(self.inner.take_batch()?))
    }

    /// The id its wakes carry.
    #[napi]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// `true` when `takeBatch()` has a batch (or the end) now; else the hub's function is
    /// called with `id()`, once, when it has: on the thread that brings the batch, or by
    /// `cancel()`. No task, thread hop or Promise per wait.
    #[napi]
    pub fn wait(&self) -> bool {
        self.inner.arm()
    }

    /// Stops the native task and closes the connection; safe to call any number of times. A
    /// waiting watch is woken (its end is ready).
    #[napi]
    pub fn cancel(&self) {
        self.inner.cancel();
    }
}

/// A worker thread's JavaScript objects are finalized when it terminates, and an abandoned
/// generator's when it is collected: cancel here, so no watch (and no connection) outlives the
/// object that owns it.
impl Drop for NativeWatch {
    fn drop(&mut self) {
        self.inner.cancel();
    }
}

/// What the in-cluster rule looks at: the service environment and whether the service
/// account's CA exists under `service_account_dir` (default: the standard mount).
fn in_cluster_env(service_account_dir: Option<&str>) -> InClusterEnv {
    let ca_path = Path::new(service_account_dir.unwrap_or(SERVICE_ACCOUNT_DIR)).join("ca.crt");
    InClusterEnv {
        host: std::env::var("KUBERNETES_SERVICE_HOST").ok(),
        port: std::env::var("KUBERNETES_SERVICE_PORT").ok(),
        ca_path: ca_path.exists().then_some(ca_path),
    }
}

/// Where `what` (a watch, a GET) of `spec` goes: the one resolution watches, GETs and
/// informers share (`informer::connect::Cluster::resolve`); a refusal is its failure and the
/// message naming `what`.
fn endpoint_for(spec: &WatchSpec, what: &str) -> std::result::Result<Endpoint, (Failure, String)> {
    resolve(&spec.cluster.cluster(), &spec.credential.credential(), what)
}

/// [`endpoint_for`] on `cluster` (`spec`'s) with `credential` (`spec`'s).
fn resolve(
    cluster: &Cluster,
    credential: &Credential,
    what: &str,
) -> std::result::Result<Endpoint, (Failure, String)> {
    cluster
        .resolve(credential)
        .map_err(|refusal| (refusal.failure, format!("{what}: {}", refusal.warning)))
}

/// Starts the core watch of `spec`; refusals and configuration errors come back as its first
/// batch (only a `strip` path JavaScript should have refused already throws).
fn start_watch(spec: WatchSpec, counters: Arc<WatchCounters>) -> Result<Watch> {
    let resource_path = spec.resource.path();
    let what = format!("watch of {resource_path}");
    let cluster = spec.cluster.cluster();
    let credential = spec.credential.credential();
    let endpoint = match resolve(&cluster, &credential, &what) {
        Ok(endpoint) => endpoint,
        Err((failure, warning)) => {
            return Ok(Watch::refused(resource_path, failure, warning, counters));
        }
    };
    let query = WatchQuery {
        label_selector: spec.resource.label_selector.clone(),
        field_selector: spec.resource.field_selector.clone(),
        resource_version: spec.resource_version,
        timeout_seconds: spec.timeout_seconds.and_then(|s| u64::try_from(s).ok()),
        allow_watch_bookmarks: spec.allow_watch_bookmarks.unwrap_or(false),
        send_initial_events: spec.send_initial_events.unwrap_or(false),
        resource_version_match: spec.resource_version_match,
    };
    let runner = ReflectorConfig {
        max_line_bytes: spec
            .max_line_bytes
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(DEFAULT_MAX_LINE_BYTES),
        // One too long for a Duration (JavaScript lets any finite number through) is no limit
        // at all, as it would be in effect; `from_secs_f64` panicked on it and aborted the process.
        idle_timeout: spec
            .idle_timeout_seconds
            .filter(|s| *s > 0.0)
            .and_then(|s| Duration::try_from_secs_f64(s).ok()),
        projection: spec.resource.projection(&[])?,
        ..ReflectorConfig::once(cluster, resource_path, query)
    };
    let config = WatchConfig {
        runner,
        endpoint,
        credential,
        counters,
    };
    Ok(within_runtime_if_available(|| {
        Watch::start(config, POOL.clone(), &tokio::runtime::Handle::current())
    }))
}
