//! The reflector: one tokio task per shared informer that keeps its [`Cache`] equal to the
//! server's state, whatever happens to the connection.
//!
//! ```text
//! Listing ──synced──► Watching{rv} ──clean end / fault──► Backoff{until} ──► Watching{rv}
//!  │  ▲                   │ 410 (in-stream or HTTP)                    └──► Listing{relist}
//!  │  └ Listing{relist} ◄─┘                  terminal (400, 422, refused) ──► Closed
//!  └─ no streaming list here ──► ListingPages{relist} ──synced──► Watching{rv}
//! ```
//! The initial list is a streaming list (`sendInitialEvents`) where the cluster serves one,
//! complete at the initial-events-end bookmark, else `limit`/`continue` pages; either way the
//! cache gets it in one [`Cache::replace`], so a relist after 410 yields only the difference.
//! Every other reconnect watches from the last resourceVersion seen (bookmarks included), so
//! nothing is missed or repeated.
//!
//! The requests are behind [`ListWatch`] (the watch core's connection pool in production, a
//! script in the tests), time is tokio's clock (so the tests run on a paused one), what each
//! line of a watch body means is the pure `step` function (`reflector/reflector_step.rs`), and
//! what an answer, a failure or a stream's end means is the pure `Machine`
//! (`reflector/machine/`), which holds every flag. The runner (`Run`, `reflector/runner/`)
//! makes the requests, reads the streams and carries out what those two return; this module is
//! the public surface: the configuration, the [`Reporter`], the [`Reflector`] handle and the
//! [`ListMemory`] a watcher's informers share.

use std::collections::HashSet;
use std::mem::size_of;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::backoff::{BackoffPolicy, Jitter};
use super::cache::Cache;
use super::connect::{Cluster, CredentialProvider, Endpoint, StaticCredential};
use super::memory::{Fixed, Footprint, arc_bytes, hash_table_bytes};
use super::recovery::Recoveries;
use super::stats::Stats;
use crate::auth::Credential;
use crate::http::ConnectionPool;
use crate::projection::Projection;
use crate::request::WatchQuery;

mod machine;
mod reflector_step;
mod runner;
mod sink;

pub use crate::informer::transport::{Fault, ListWatch, PoolListWatch, Request, WatchLines};
pub use reflector_step::{Progress, Step, StreamEnd};
use runner::{Parts, Run};
pub use sink::Sink;

/// How the initial list (and a relist) is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitialList {
    /// A streaming list where the cluster serves one, else pages.
    Auto,
    /// Always `limit`/`continue` pages.
    Paginated,
    /// Always a streaming list.
    Streaming,
}

/// What the runner does with its collection.
#[derive(Debug, Clone)]
pub enum Plan {
    /// An informer's: list, watch from the list's resourceVersion, and again after every end
    /// (or relist) for as long as it runs.
    ListWatch,
    /// A plain watch's (`watchResource`): one watch, exactly as asked for; its end or its first
    /// failure (one ERROR) is the end.
    Once(WatchQuery),
}

/// Everything the reflector needs, resolved before it starts.
#[derive(Debug, Clone)]
pub struct ReflectorConfig {
    /// How to reach the cluster (with whatever credential the provider gives).
    pub cluster: Cluster,
    /// The collection's path, e.g. `/api/v1/namespaces/ns/pods`.
    pub resource_path: String,
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `limit` of each list page; a page is read into memory up to
    /// [`max_page_bytes`]`(page_size)`.
    pub page_size: u32,
    /// How to list.
    pub initial_list: InitialList,
    /// When to try again.
    pub backoff: BackoffPolicy,
    /// Drop a watch that receives nothing (bookmarks count) for this long.
    pub idle_timeout: Option<Duration>,
    /// Cut objects down before caching them.
    pub projection: Option<Projection>,
    /// Ask a refreshing provider again before a request once its answer is this old.
    pub credential_ttl: Duration,
    /// Lines above this end the watch (a fault, resumed).
    pub max_line_bytes: usize,
    /// Each watch asks the server to end it after about this long (jittered up to twice).
    pub watch_timeout: Duration,
    /// The cache holds texts packed (see [`super::object::Object::packed`]).
    pub pack: bool,
    /// What it does.
    pub plan: Plan,
}

/// The most one object's JSON is taken to need in a list page: etcd refuses a request
/// larger than 1.5 MiB (`--max-request-bytes`' default), so no stored object is larger, and
/// the JSON the API server renders of an object it keeps as protobuf runs up to a third
/// longer (base64 of binary data, field names).
pub const MAX_OBJECT_BYTES: usize = 2 << 20;

/// A page's own text around its items (kind, metadata, the continue token).
const PAGE_ENVELOPE_BYTES: usize = 1 << 20;

/// The most of a list page of `page_size` objects that is read into memory: a page past it is
/// not one the API server sends (an endless or corrupted body, a hostile peer), and ends the
/// list with an error, retried after a backoff. 1 GiB at the default 500, 3 MiB at 1.
pub fn max_page_bytes(page_size: u32) -> usize {
    (page_size as usize)
        .saturating_mul(MAX_OBJECT_BYTES)
        .saturating_add(PAGE_ENVELOPE_BYTES)
}

/// Where the reflector's news goes (the binding forwards it to JavaScript).
pub trait Reporter: Send + Sync {
    /// A warning for the logger (transient and terminal failures).
    fn warn(&self, message: &str);
    /// A notice (reconnects, relists, fallbacks) for the logger's `info`.
    fn info(&self, message: &str);
    /// The initial list is cached.
    fn synced(&self);
    /// The reflector stopped (closed, or a terminal error).
    fn ended(&self);
    /// A failure was recorded in the cache's health (see [`super::cache::Health`]): readers
    /// that wait for the informer to settle look again.
    fn failed(&self) {}
    /// A request succeeded after failures: the failure in the cache's health is over.
    fn recovered(&self) {}
    /// The cache changed after a reader armed a notice of it (once per arming, so a busy
    /// informer says so at the pace its reader asks).
    fn changed(&self) {}
}

/// What a watcher's informers learn of their clusters and share: the cluster URLs found not
/// to serve streaming lists, and each cluster's news of recovery (see [`Recoveries`]).
#[derive(Debug, Default)]
pub struct ListMemory {
    paginated: Mutex<HashSet<String>>,
    recoveries: Recoveries,
}

impl ListMemory {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.paginated
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `url` refused a streaming list before.
    pub fn is_paginated(&self, url: &str) -> bool {
        self.lock().contains(url)
    }

    fn remember_paginated(&self, url: &str) {
        self.lock().insert(url.to_owned());
    }

    /// Bytes it holds: the table of paginated URLs with their strings, and the recovery
    /// channels' (see [`Recoveries::bytes`]). One per watcher, whatever the number of informers.
    pub fn bytes(&self) -> usize {
        let paginated = self.lock();
        let urls = hash_table_bytes(paginated.capacity(), size_of::<String>())
            + paginated.iter().map(String::capacity).sum::<usize>();
        drop(paginated);
        urls + self.recoveries.bytes()
    }
}

/// A running (or finished) reflector.
#[derive(Debug)]
pub struct Reflector {
    cache: Arc<Cache>,
    stats: Arc<Stats>,
    cancel: CancellationToken,
    finished: Arc<std::sync::atomic::AtomicBool>,
    /// The size of the task's future as spawned.
    task_bytes: usize,
    /// Heap bytes of its configuration, by capacity.
    config_bytes: usize,
}

impl Reflector {
    /// Starts the task on `runtime`, its requests through `pool`.
    pub fn start(
        config: ReflectorConfig,
        provider: Arc<dyn CredentialProvider>,
        reporter: Arc<dyn Reporter>,
        memory: Arc<ListMemory>,
        pool: Arc<ConnectionPool>,
        runtime: &tokio::runtime::Handle,
    ) -> Self {
        let parts = Parts {
            provider,
            reporter,
            memory,
            jitter: Jitter::from_time(),
            stats: Arc::default(),
        };
        Self::start_with(config, parts, PoolListWatch(pool), runtime)
    }

    /// Starts the task on `runtime`, its requests through `api`.
    fn start_with<A: ListWatch>(
        config: ReflectorConfig,
        parts: Parts,
        api: A,
        runtime: &tokio::runtime::Handle,
    ) -> Self {
        let config_bytes = config.heap_bytes();
        let cache = Arc::new(Cache::new(config.resource_path.clone()));
        let mut run = Run::new(config, parts, api, cache.clone());
        let stats = run.stats.clone();
        let reporter = run.reporter.clone();
        let cancel = CancellationToken::new();
        let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let task_cancel = cancel.clone();
        let task_finished = finished.clone();
        let task = async move {
            tokio::select! {
                biased;
                () = task_cancel.cancelled() => {}
                () = run.run() => {}
            }
            run.sink.end();
            task_finished.store(true, std::sync::atomic::Ordering::SeqCst);
            reporter.ended();
        };
        let task_bytes = std::mem::size_of_val(&task);
        runtime.spawn(task);
        Self {
            cache,
            stats,
            cancel,
            finished,
            task_bytes,
            config_bytes,
        }
    }

    /// Its memory: the cache's objects and consumers, and its fixed cost by part but for the
    /// registry's (see [`Footprint`] and [`Fixed`]).
    pub fn footprint(&self) -> (Footprint, Fixed) {
        let (mut footprint, cache_bytes) = self.cache.footprint();
        footprint.informers = 1;
        let fixed = Fixed {
            task_bytes: self.task_bytes,
            cache_bytes: cache_bytes
                + arc_bytes::<Stats>()
                + arc_bytes::<std::sync::atomic::AtomicBool>(),
            config_bytes: self.config_bytes + self.stats.endpoint_bytes(),
            registry_bytes: 0,
        };
        footprint.fixed_bytes = fixed.total();
        (footprint, fixed)
    }

    /// The cache it keeps.
    pub fn cache(&self) -> &Arc<Cache> {
        &self.cache
    }

    /// Its counters.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// Stops the task (consumers end normally); idempotent.
    pub fn stop(&self) {
        self.cancel.cancel();
    }

    /// The task has ended (stopped, or a terminal error).
    pub fn is_finished(&self) -> bool {
        self.finished.load(std::sync::atomic::Ordering::SeqCst) || self.cancel.is_cancelled()
    }
}

/// A plain watch (`watchResource`): the runner with `config.plan` [`Plan::Once`] over `sink`,
/// from `endpoint` (resolved from `credential` already: a refusal is the caller's one ERROR),
/// its requests through `api`, counted in `stats`. Returns when the watch has ended; the
/// caller ends `sink` (after this, or after cancelling it).
pub async fn watch_once<A: ListWatch, S: Sink>(
    config: ReflectorConfig,
    endpoint: Endpoint,
    credential: Credential,
    reporter: Arc<dyn Reporter>,
    stats: Arc<Stats>,
    sink: Arc<S>,
    api: A,
) {
    let parts = Parts {
        provider: Arc::new(StaticCredential(credential)),
        reporter,
        memory: Arc::default(),
        jitter: Jitter::from_time(),
        stats,
    };
    let mut run = Run::new(config, parts, api, sink);
    run.endpoint = Some((endpoint, tokio::time::Instant::now()));
    run.run().await;
}

impl Drop for Reflector {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

fn capacity(text: &Option<String>) -> usize {
    text.as_ref().map_or(0, String::capacity)
}

impl ReflectorConfig {
    /// A plain watch's ([`Plan::Once`] with `query`) of `resource_path` on `cluster`: what
    /// only an informer uses (pages, backoff, timeouts, credential refresh, packing) unset, and
    /// no line or idle limit, no projection until the caller sets them.
    pub fn once(cluster: Cluster, resource_path: String, query: WatchQuery) -> Self {
        Self {
            cluster,
            resource_path,
            label_selector: query.label_selector.clone(),
            field_selector: query.field_selector.clone(),
            page_size: 0,
            initial_list: InitialList::Auto,
            backoff: BackoffPolicy::default(),
            idle_timeout: None,
            projection: None,
            credential_ttl: Duration::ZERO,
            max_line_bytes: usize::MAX,
            watch_timeout: Duration::ZERO,
            pack: false,
            plan: Plan::Once(query),
        }
    }

    /// Its strings on the heap, by capacity: the path, the selectors, the cluster's (name, URL,
    /// CA data, proxy and TLS name, the proxy environment). A projection's paths are not
    /// counted (a few short strings when `fields` or `strip` is given).
    fn heap_bytes(&self) -> usize {
        let spec = &self.cluster.spec;
        let env = &self.cluster.proxy_env;
        let in_cluster = &self.cluster.in_cluster;
        self.resource_path.capacity()
            + capacity(&self.label_selector)
            + capacity(&self.field_selector)
            + spec.name.capacity()
            + spec.url.capacity()
            + capacity(&spec.auth_provider)
            // The process's one copy (`shared_ca_data`): this informer's share of it.
            + spec
                .ca_data
                .as_ref()
                .map_or(0, |text| text.len() / std::sync::Arc::strong_count(text))
            + capacity(&spec.ca_file)
            + capacity(&self.cluster.proxy_url)
            + capacity(&self.cluster.tls_server_name)
            + capacity(&env.https)
            + capacity(&env.http)
            + capacity(&env.no_proxy)
            + capacity(&in_cluster.host)
            + capacity(&in_cluster.port)
            + in_cluster.ca_path.as_ref().map_or(0, |p| p.capacity())
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod scripts;
