//! The list-watch engine: one task that lists a collection and watches it, whatever happens to
//! the connection, and puts what it reads into a [`Sink`]. An informer's cache and a plain
//! watch's queue to JavaScript are two sinks; the engine knows neither.
//!
//! ```text
//! Listing ──synced──► Watching{rv} ──clean end / fault──► Backoff{until} ──► Watching{rv}
//!  │  ▲                   │ 410 (in-stream or HTTP)                    └──► Listing{relist}
//!  │  └ Listing{relist} ◄─┘                  terminal (400, 422, refused) ──► Closed
//!  └─ no streaming list here ──► ListingPages{relist} ──synced──► Watching{rv}
//! ```
//! The initial list is a streaming list (`sendInitialEvents`) where the cluster serves one,
//! complete at the initial-events-end bookmark, else `limit`/`continue` pages; either way the
//! sink gets it in one replace, so a relist after 410 yields only the difference. Every other
//! reconnect watches from the last resourceVersion seen (bookmarks included), so nothing is
//! missed or repeated.
//!
//! Its parts, each plain Rust that `cargo test` covers alone:
//! - [`wire`]: list pages and watch lines read without building value trees.
//! - [`backoff`]: when to try again after a failure.
//! - [`recovery`]: news that a cluster answers again, waking its runs' backoffs.
//! - [`stats`]: a run's counters.
//! - [`step`]: what a line of a watch body asks of the runner.
//! - `plan`: what a run does with its collection, and into what kind of [`Sink`].
//! - `machine`: what an answer, a failure or a stream's end means, holding every flag.
//!
//! Built on these, with I/O:
//! - [`connect`]: the credential provider and the endpoint a credential resolves to.
//! - [`transport`]: a list page and a watch's lines through the connection pool, behind the
//!   [`ListWatch`] trait (a script in the tests); HTTP's status and pauses settled.
//! - `runner`: the task: it makes the requests, reads the streams and carries out what the
//!   step and the machine return, on tokio's clock (so the tests run on a paused one).
//! - [`config`]: what a run is given.

use std::collections::HashSet;
use std::mem::size_of;
use std::sync::{Arc, Mutex, PoisonError};

pub mod backoff;
pub mod config;
pub mod connect;
mod machine;
mod plan;
pub mod recovery;
mod runner;
#[cfg(test)]
pub(crate) mod script;
mod sink;
pub mod stats;
pub mod step;
pub mod transport;
pub mod wire;

use crate::auth::Credential;
use crate::request::WatchQuery;
use crate::size::hash_table_bytes;
use backoff::Jitter;
pub use config::{InitialList, MAX_OBJECT_BYTES, RunConfig, max_page_bytes};
use connect::{Endpoint, StaticCredential};
#[cfg(test)]
pub(crate) use machine::{Resume, State};
pub(crate) use plan::Keeping;
use plan::Once;
use recovery::Recoveries;
pub(crate) use runner::{Parts, Run};
pub use sink::{Keeper, Page, Passer, Read, Sink};
use stats::Stats;
pub use step::{Initial, Kept, Pass, Progress, Step, StreamEnd};
pub use transport::{Fault, ListWatch, PoolListWatch, Request, WatchLines};

/// Where a run's news goes (the binding forwards it to JavaScript).
pub trait Reporter: Send + Sync {
    /// A warning for the logger (transient and terminal failures).
    fn warn(&self, message: &str);
    /// A notice (reconnects, relists, fallbacks) for the logger's `info`.
    fn info(&self, message: &str);
    /// The initial list is cached.
    fn synced(&self);
    /// The run stopped (closed, or a terminal error).
    fn ended(&self);
    /// A failure was recorded in the keeper's health (an informer's cache): readers
    /// that wait for the informer to settle look again.
    fn failed(&self) {}
    /// A request succeeded after failures: the failure in the keeper's health is over.
    fn recovered(&self) {}
    /// What the keeper keeps changed after a reader armed a notice of it (once per arming, so
    /// a busy informer says so at the pace its reader asks).
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

/// A plain watch (`watchResource`): a run of `query` with the plan [`Once`] over `sink`, which
/// hears its news too, from `endpoint` (resolved from `credential` already: a refusal is the
/// caller's one ERROR), its requests through `api`, counted in `stats`. Returns when the watch
/// has ended; the caller ends `sink` (after this, or after cancelling it).
pub async fn watch_once<A: ListWatch, S: Passer + Reporter>(
    config: RunConfig,
    query: WatchQuery,
    endpoint: Endpoint,
    credential: Credential,
    stats: Arc<Stats>,
    sink: Arc<S>,
    api: A,
) {
    let parts = Parts {
        provider: Arc::new(StaticCredential(credential)),
        reporter: sink.clone(),
        memory: Arc::default(),
        jitter: Jitter::from_time(),
        stats,
    };
    let mut run = Run::new(config, parts, api, Once::new(sink, query));
    run.endpoint = Some((endpoint, tokio::time::Instant::now()));
    run.run().await;
}
