//! The informer's N-API shell: converts the JavaScript informer spec, opens a shared informer
//! in the watcher's registry (`binding/registry.rs`), and carries the reflector's news
//! (warnings, notices, sync, end, credential requests) back through the registry's function.
//! The handle and consumer classes JavaScript holds are in `binding/informer_handle.rs`, which
//! this module builds and which imports nothing from it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Duration;

use napi::Result;
use napi::bindgen_prelude::within_runtime_if_available;
use napi_derive::napi;
use tokio::sync::oneshot;

use super::informer_handle::NativeInformer;
use super::invalid;
use super::way_back::{JsListener, WayBack};
use super::{ClusterTarget, CredentialSpec, POOL, ResourceSpec};
use crate::auth::Credential;
use crate::engine::backoff::BackoffPolicy;
use crate::engine::connect::{CredentialFuture, CredentialProvider, StaticCredential};
use crate::engine::{InitialList, Reporter, RunConfig};
use crate::framing::DEFAULT_MAX_LINE_BYTES;
use crate::informer::reflector::Reflector;
use crate::informer::registry::{Listeners, Registry};

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
    pub resource: ResourceSpec,
    /// This and the four fields below are required: their defaults and checks are
    /// `lib/informer.js`'s alone (one side, one message), so this side has none of its own.
    pub page_size: u32,
    pub initial_list: InitialListMode,
    pub backoff_initial_seconds: f64,
    pub backoff_max_seconds: f64,
    pub credential_ttl_seconds: f64,
    /// Required too (`lib/informer.js` defaults it to 300 s).
    pub watch_timeout_seconds: f64,
    /// Hold cached texts compressed (`options.compress`, default true in `lib/informer.js`).
    pub compress: bool,
    /// Required too (`lib/informer.js` defaults it to 60 s): see `RunConfig::probe`.
    pub probe_seconds: f64,
    /// No idle limit when absent.
    pub idle_timeout_seconds: Option<f64>,
    pub max_line_bytes: Option<i64>,
}

/// `options.initialList` as it crosses: napi's conversion of the three strings, checked (and
/// defaulted) in `lib/informer.js` first.
#[napi(string_enum = "lowercase")]
#[derive(Clone, Copy)]
pub enum InitialListMode {
    Auto,
    Paginated,
    Streaming,
}

impl From<InitialListMode> for InitialList {
    fn from(mode: InitialListMode) -> Self {
        match mode {
            InitialListMode::Auto => InitialList::Auto,
            InitialListMode::Paginated => InitialList::Paginated,
            InitialListMode::Streaming => InitialList::Streaming,
        }
    }
}

struct JsReporter {
    listeners: Arc<Listeners<JsListener>>,
}

impl JsReporter {
    /// A message goes to the oldest handle's listener alone, so it is logged once however
    /// many handles share the informer.
    fn tell_first(&self, news: &str, message: &str) {
        if let Some(listener) = self.listeners.first() {
            listener.send(news, Some(message), None);
        }
    }

    /// State news goes to every handle's listener.
    fn tell_all(&self, news: &str) {
        for listener in self.listeners.all() {
            listener.send(news, None, None);
        }
    }
}

impl Reporter for JsReporter {
    fn warn(&self, message: &str) {
        self.tell_first("warn", message);
    }

    fn info(&self, message: &str) {
        self.tell_first("info", message);
    }

    fn synced(&self) {
        self.tell_all("synced");
    }

    fn failed(&self) {
        self.tell_all("failed");
    }

    fn recovered(&self) {
        self.tell_all("recovered");
    }

    fn changed(&self) {
        self.tell_all("changed");
    }

    fn ended(&self) {
        self.tell_all("ended");
        // The callbacks go: a finished informer keeps nothing alive.
        self.listeners.clear();
    }
}

type Answer = oneshot::Sender<std::result::Result<Credential, String>>;

/// `getCredential` calls waiting for JavaScript's answer, by request id.
static PENDING_CREDENTIALS: LazyLock<Mutex<HashMap<u64, Answer>>> = LazyLock::new(Mutex::default);
static NEXT_REQUEST: AtomicU64 = AtomicU64::new(1);

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Nothing panics while holding these locks; the data stays consistent.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn pending() -> std::sync::MutexGuard<'static, HashMap<u64, Answer>> {
    lock(&PENDING_CREDENTIALS)
}

/// Asks JavaScript's `getCredential` through the oldest open handle.
struct JsCredentials {
    listeners: Arc<Listeners<JsListener>>,
}

impl CredentialProvider for JsCredentials {
    fn credential(&self) -> CredentialFuture {
        let listener = self.listeners.first();
        Box::pin(async move {
            let listener = listener.ok_or_else(|| "no open informer handle to ask".to_owned())?;
            let id = NEXT_REQUEST.fetch_add(1, Ordering::Relaxed);
            let (tx, rx) = oneshot::channel();
            pending().insert(id, tx);
            if !listener.send("credential", None, Some(id)) {
                pending().remove(&id);
                return Err("getCredential could not be called".to_owned());
            }
            drop(listener);
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

fn config_of(spec: &InformerSpec) -> Result<RunConfig> {
    let resource_path = spec.resource.path();
    let cluster = spec.cluster.cluster();
    let backoff = BackoffPolicy::new(spec.backoff_initial_seconds, spec.backoff_max_seconds)
        .map_err(|err| invalid(format!("kube-watch-native: options.{err}")))?;
    // JavaScript checked these are finite and positive; a Duration still refuses the ones too
    // long for it rather than panicking.
    let duration = |field: &str, value: f64| {
        Duration::try_from_secs_f64(value).map_err(|err| {
            invalid(format!(
                "kube-watch-native: options.{field} ({value:e} s): {err}"
            ))
        })
    };
    // As for a watch (`start_watch`): an idle limit too long for a Duration is none.
    let idle_timeout = spec
        .idle_timeout_seconds
        .filter(|s| *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok());
    Ok(RunConfig {
        cluster,
        resource_path,
        label_selector: spec.resource.label_selector.clone(),
        field_selector: spec.resource.field_selector.clone(),
        page_size: spec.page_size,
        initial_list: spec.initial_list.into(),
        backoff,
        idle_timeout,
        projection: spec.resource.projection(&KEPT_METADATA)?,
        credential_ttl: duration("credentialTtlSeconds", spec.credential_ttl_seconds)?,
        max_line_bytes: spec
            .max_line_bytes
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(DEFAULT_MAX_LINE_BYTES),
        watch_timeout: duration("watchTimeoutSeconds", spec.watch_timeout_seconds)?,
        pack: spec.compress,
        probe: Some(duration("probeSeconds", spec.probe_seconds)?),
    })
}

/// Opens a handle, numbered `id`, on the shared informer of `registry` for `spec.key`, started
/// if none runs; its news and its consumers' wake-ups go back through `back`.
pub(super) fn open(
    registry: &Registry<JsListener>,
    spec: InformerSpec,
    id: u32,
    back: Arc<WayBack>,
) -> Result<NativeInformer> {
    let config = config_of(&spec)?;
    let provider_static = (!spec.dynamic_credential).then(|| {
        spec.credential
            .as_ref()
            .map(CredentialSpec::credential)
            .unwrap_or(Credential::Anonymous)
    });
    let listener = JsListener::new(id, back.clone());
    let labels = spec.resource.labels(&spec.cluster);
    let handle = registry.open(spec.key, labels, listener, |listeners, memory| {
        let provider: Arc<dyn CredentialProvider> = match provider_static {
            Some(credential) => Arc::new(StaticCredential(credential)),
            None => Arc::new(JsCredentials {
                listeners: listeners.clone(),
            }),
        };
        let reporter = Arc::new(JsReporter { listeners });
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
    Ok(NativeInformer { handle, id, back })
}
