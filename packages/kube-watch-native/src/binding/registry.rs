//! The native side of one `NativeKubernetesWatcher`: its shared informers, its plain watches,
//! their one way back to JavaScript and the figures one metrics collection reads.
//!
//! Every handle's news and every waiter's wake-up (an informer consumer's, a plain watch's) go
//! through one thread-safe function per registry, never one per handle, consumer or wait:
//! each thread-safe function is a libuv async handle, and libuv looks at every async handle of
//! the loop on every wake-up, so with one per informer and one per pending wait the main
//! thread's cost of a change would grow with the number of informers and watches.
//! One function also keeps news and wake-ups in the order they were sent (a consumer's
//! ADDED batch before the `synced` that follows it). It is called with two arrays, never an
//! object per message: who each message is from (a waiter's id, or 0 for a handle's news) and
//! the messages (a wake-up's batch, the common one as its events text alone, or the news as
//! JSON naming its handle): building an object per wake-up was a tenth of the main thread's
//! time per change (bench/README.md, "A change costs the main thread one Promise, one native
//! call and half a wake-up").
//!
//! Informer consumers' wake-ups are gathered ([`WayBack`], `binding/way_back.rs`): the first
//! after a quiet spell crosses at once, and while they keep coming, those within its interval
//! of the last call cross together in the next. A plain watch's cross at once, and news is
//! never gathered. JavaScript dispatches them (`lib/hub.js`). The function is weak: what keeps
//! the process alive while informers run or anything waits is JavaScript's.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use napi::Result;
use napi::bindgen_prelude::within_runtime_if_available;
use napi_derive::napi;

use super::WatchSpec;
use super::informer::{InformerSpec, open};
use super::informer_handle::NativeInformer;
use super::logs::{self, LogSpec};
use super::snapshot::snapshot_json;
use super::watch::{self, NativeWatch};
use super::way_back::JsListener;
use super::way_back::{Back, WAKE_UP_INTERVAL, WayBack};
use crate::informer::registry::Registry;
use crate::logs::LogHub;
use crate::metrics::watches::WatchMetrics;

/// The shared informers and the plain watches of one `NativeKubernetesWatcher`.
#[napi]
#[derive(Default)]
pub struct NativeRegistry {
    informers: Registry<JsListener>,
    /// What this watcher's plain watches count.
    watches: WatchMetrics,
    /// Its shared log follows.
    logs: LogHub,
    /// Set by `connect` while JavaScript has informers open or anything waiting: a thread-safe
    /// function holds its JavaScript function strongly, so holding it for good would keep
    /// the watcher's side of JavaScript from ever being collected.
    back: Mutex<Option<Arc<WayBack>>>,
    next_handle: AtomicU32,
    /// How long informer consumers' wake-ups are gathered ([`WAKE_UP_INTERVAL`] by default).
    gather: Duration,
}

#[napi]
impl NativeRegistry {
    /// `gather_ms`: how long informer consumers' wake-ups are gathered into one call (a
    /// watcher's `gatherMs`, checked by `lib/watcher.js`; 0 sends each at once).
    #[napi(constructor)]
    pub fn new(gather_ms: Option<f64>) -> Self {
        let gather = gather_ms
            .and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok())
            .unwrap_or(WAKE_UP_INTERVAL);
        Self {
            next_handle: AtomicU32::new(1),
            gather,
            ..Self::default()
        }
    }

    /// Where the handles and watches opened from now on report: `back(from, messages)`
    /// receives, in the order sent, every handle's news as JSON text (`{ handle, kind, message,
    /// id }`, from 0) and a waiting consumer's next batch (after a `poll()` that found none,
    /// from its `id()`), the common batch as its events text; `back(id)` says that waiting
    /// watch `id`'s batch is ready to `poll()`.
    #[napi(
        ts_args_type = "back: (from: number | number[], messages?: (string | NativeBatch)[]) => void"
    )]
    pub fn connect(&self, back: Back) {
        let runtime = within_runtime_if_available(tokio::runtime::Handle::current);
        *self.lock() = Some(Arc::new(WayBack::new(back, self.gather, runtime)));
    }

    /// Lets the function of `connect` go, once nothing is open or waiting (what still holds
    /// it, a closing handle, a finishing consumer or watch, lets it go when it ends).
    #[napi]
    pub fn disconnect(&self) {
        self.lock().take();
    }

    /// A handle on the shared informer for `spec.key`, started if none runs; its news comes
    /// to the function of `connect` with the handle's `id()`.
    #[napi]
    pub fn open(&self, spec: InformerSpec) -> Result<NativeInformer> {
        let back = self.back()?;
        let id = self.next_handle.fetch_add(1, Ordering::Relaxed);
        open(&self.informers, spec, id, back)
    }

    /// Starts a plain watch (`watchResource`), counted in this watcher's metrics; refusals and
    /// configuration errors come back as its first batch (only a `strip` path JavaScript should
    /// have refused already throws).
    #[napi]
    pub fn watch(&self, spec: WatchSpec) -> Result<NativeWatch> {
        watch::start(spec, &self.watches, self.back()?)
    }

    /// Starts a container's log stream (`streamLogs`), read as a plain watch is; refusals come
    /// back as its first batch.
    #[napi]
    pub fn logs(&self, spec: LogSpec) -> Result<NativeWatch> {
        logs::start(spec, &self.logs, self.back()?)
    }

    /// Shared log follows running now.
    #[napi]
    pub fn logs_running(&self) -> u32 {
        self.logs.running() as u32
    }

    /// Shared informers running now.
    #[napi]
    pub fn running(&self) -> u32 {
        self.informers.running() as u32
    }

    /// Every figure of this watcher's informers and of its plain watches (`watches`), added up
    /// per series (cluster, group, version, resource: namespaces are not kept apart), and of the
    /// process's connections, in one call, as JSON text (`NativeMetrics`, `binding/snapshot.rs`):
    /// what one metrics collection reads. One string crosses to JavaScript, not an object per
    /// informer (with 1 000 informers, objects cost three times as much). Counters are read,
    /// not reset; nothing here runs per event.
    #[napi]
    pub fn metrics_json(&self) -> String {
        snapshot_json(&self.informers, &self.watches)
    }
}

impl NativeRegistry {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<WayBack>>> {
        // Nothing panics while holding it; the data stays consistent.
        self.back.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The way back of `connect`, or the error that says it is missing.
    fn back(&self) -> Result<Arc<WayBack>> {
        self.lock().clone().ok_or_else(|| {
            napi::Error::from_reason("kube-watch-native: the registry is not connected")
        })
    }
}
