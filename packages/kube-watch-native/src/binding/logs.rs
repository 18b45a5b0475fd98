//! A container's log stream (`streamLogs`) for JavaScript: the spec converted, the core stream
//! (`crate::logs`) started on the process's pool, and handed back as a plain watch is, read the
//! same way (`binding/watch.rs`).

use std::sync::Arc;

use napi::Result;
use napi::bindgen_prelude::within_runtime_if_available;
use napi_derive::napi;

use super::watch::{NativeWatch, owned};
use super::way_back::WayBack;
use super::{ClusterTarget, CredentialSpec, POOL, invalid, resolve};
use crate::engine::PoolListWatch;
use crate::logs::{LogConfig, LogHub, LogOptions, LogTarget};
use crate::watch::{Watch, WatchCounters};

/// Everything `streamLogs` was given, flattened and type-checked by `lib/logs.js`.
#[napi(object)]
pub struct LogSpec {
    pub cluster: ClusterTarget,
    pub credential: CredentialSpec,
    pub namespace: String,
    pub pod: String,
    pub container: Option<String>,
    /// The checked options (`follow`, `previous`, `timestamps`, `sinceSeconds`, `sinceTime`,
    /// `tailLines`, `limitBytes`) as JSON text: one definition of them, the core's.
    pub options: String,
    /// Shares one follow with the other streams of this watcher of the same key (the cluster,
    /// the credential, the pod and the container: `lib/logs.js`); `None` for one of its own.
    pub share_key: Option<String>,
    /// Lines that are not UTF-8 cross as their bytes (`text: true`).
    pub raw: Option<bool>,
}

/// Starts the log stream of `spec`, its wake-ups through `back`; a refused credential is its
/// first batch, options that do not read (which `lib/logs.js` checked) a TypeError.
pub(super) fn start(spec: LogSpec, hub: &LogHub, back: Arc<WayBack>) -> Result<NativeWatch> {
    let options: LogOptions = serde_json::from_str(&spec.options)
        .map_err(|err| invalid(format!("kube-watch-native: log options: {err}")))?;
    let target = LogTarget {
        namespace: spec.namespace,
        pod: spec.pod,
        container: spec.container,
    };
    let counters = Arc::new(WatchCounters::default());
    let cluster = spec.cluster.cluster();
    let credential = spec.credential.credential();
    let what = format!("log of pod {}/{}", target.namespace, target.pod);
    let stream = match resolve(&cluster, &credential, &what) {
        Ok(endpoint) => {
            let config = LogConfig {
                cluster: cluster.spec.name.clone(),
                target,
                options,
                endpoint,
                counters,
                raw: spec.raw.unwrap_or(false),
            };
            let api = PoolListWatch(POOL.clone());
            within_runtime_if_available(|| {
                let runtime = tokio::runtime::Handle::current();
                match spec.share_key.filter(|_| !config.options.previous) {
                    Some(key) => hub.open(key, config, api, &runtime),
                    None => crate::logs::start(config, api, &runtime),
                }
            })
        }
        Err((failure, warning)) => Watch::refused(target.path(), failure, warning, counters),
    };
    Ok(owned(stream, back))
}
