//! The N-API shell: converts the JavaScript watch spec, starts the core watch, hands batches
//! back. No contract logic lives here.
//!
//! One watcher's native side is its [`registry::NativeRegistry`]: its shared informers
//! (`binding/informer.rs`, `binding/informer_handle.rs`) and its plain watches
//! (`binding/watch.rs`), whose batches and news all come back to JavaScript through the
//! registry's one thread-safe function (`binding/way_back.rs`), and whose figures one metrics
//! collection reads there (`binding/snapshot.rs`).
//!
//! The calls besides watches and informers (`fetchText`, `poolStats`, `buildInfo`) are in
//! `binding/calls.rs`.

mod calls;
mod informer;
mod informer_handle;
mod logs;
mod registry;
mod selector;
mod snapshot;
mod strings;
mod strip;
mod watch;
mod way_back;

use std::path::Path;
use std::sync::{Arc, LazyLock};

use napi::bindgen_prelude::Either;
use napi::bindgen_prelude::{ToNapiValue, TypeName, ValueType};
use napi::{Env, Result, sys};
use napi_derive::napi;

use self::strings::copied_string;
use crate::auth::{ClusterSpec, Credential, InClusterEnv};
use crate::batch::Batch;
use crate::engine::connect::{Cluster, Endpoint};
use crate::engine::stats::{SeriesLabels, cluster_label};
use crate::error::Failure;
use crate::http::ConnectionPool;
use crate::proxy::ProxyEnv;
use crate::request::ResourceRef;

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

    /// The metrics series of this collection on `cluster` (namespaces are not kept apart).
    fn labels(&self, cluster: &ClusterTarget) -> SeriesLabels {
        SeriesLabels {
            cluster: cluster_label(&cluster.cluster_url),
            group: self.group.clone(),
            version: self.api_version.clone(),
            resource: self.plural.clone(),
        }
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

/// A JavaScript argument refused, with the message that names what was wrong.
pub(crate) fn invalid(message: String) -> napi::Error {
    napi::Error::new(napi::Status::InvalidArg, message)
}

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
