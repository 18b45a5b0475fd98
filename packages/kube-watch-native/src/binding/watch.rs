//! A plain watch (`watchResource`) for JavaScript: started in the watcher's registry
//! (`NativeRegistry::watch`), read like an informer consumer: `poll()` takes the batch ready
//! now, or arms the watch, and the push that readies its next batch names the watch on the
//! registry's one thread-safe function, at once (a plain watch's wake-ups are not gathered: its
//! latency is the one it always had). JavaScript then polls again, taking with it whatever
//! arrived while the wake-up crossed (`src/watch/outbox.rs`).

use std::sync::Arc;
use std::time::Duration;

use napi::Result;
use napi::bindgen_prelude::within_runtime_if_available;
use napi_derive::napi;

use super::way_back::{WayBack, next_waiter};
use super::{Crossing, POOL, WatchSpec, crossing, resolve};
use crate::engine::RunConfig;
use crate::framing::DEFAULT_MAX_LINE_BYTES;
use crate::metrics::watches::WatchMetrics;
use crate::request::WatchQuery;
use crate::watch::{Watch, WatchConfig, WatchCounters};

/// A running watch, owned by one JavaScript generator.
#[napi]
pub struct NativeWatch {
    inner: Watch,
    id: u32,
}

#[napi]
impl NativeWatch {
    /// The batch ready now (the common one as its events text alone, as a consumer's
    /// `poll()`), or `null`, and then the function of the registry's `connect` is called with
    /// `(id, null)` once a batch (events, or the end) is ready to poll: from the thread that
    /// brings it, or by `cancel()`. One native call per wait. One wait at a time.
    #[napi(ts_return_type = "string | NativeBatch | null")]
    pub fn poll(&self) -> Option<Crossing> {
        Some(crossing(self.inner.poll()?))
    }

    /// The id its wake-ups carry.
    #[napi]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Stops the native task and closes the connection; safe to call any number of times. A
    /// waiting watch is woken with its end.
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

/// Starts a watch of `spec`, counted in `metrics`, whose wake-ups go back through `back`;
/// refusals and configuration errors come back as its first batch (only a `strip` path
/// JavaScript should have refused already throws).
pub(super) fn start(
    spec: WatchSpec,
    metrics: &WatchMetrics,
    back: Arc<WayBack>,
) -> Result<NativeWatch> {
    let labels = spec.resource.labels(&spec.cluster);
    let counters = Arc::new(WatchCounters::default());
    let watch = start_watch(spec, counters.clone())?;
    metrics.track(labels, counters);
    Ok(owned(watch, back))
}

/// `watch` (a plain watch, a log stream) as JavaScript owns it, its wake-ups through `back`.
pub(super) fn owned(watch: Watch, back: Arc<WayBack>) -> NativeWatch {
    let id = next_waiter();
    watch.set_wake(Box::new(move || back.ready(id)));
    NativeWatch { inner: watch, id }
}

/// Starts the core watch of `spec`; refusals and configuration errors come back as its first
/// batch.
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
    let runner = RunConfig {
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
        ..RunConfig::once(cluster, resource_path)
    };
    let config = WatchConfig {
        runner,
        query,
        endpoint,
        credential,
        counters,
    };
    Ok(within_runtime_if_available(|| {
        Watch::start(config, POOL.clone(), &tokio::runtime::Handle::current())
    }))
}
