//! The reflector: one engine run per shared informer that keeps its [`Cache`] equal to the
//! server's state, whatever happens to the connection (see [`crate::engine`] for how). This
//! module is the informer's handle on that run: it starts the task over the cache, stops it,
//! and tells what it costs; the cache as the engine's keeper is in `keeper.rs`, what a watch
//! line is to it in `lines.rs`.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::cache::Cache;
use super::memory::{Fixed, Footprint, arc_bytes};
use crate::engine::backoff::Jitter;
use crate::engine::connect::CredentialProvider;
use crate::engine::stats::Stats;
use crate::engine::{
    Keeping, ListMemory, ListWatch, Parts, PoolListWatch, Reporter, Run, RunConfig,
};
use crate::http::ConnectionPool;

mod keeper;
mod lines;

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
        config: RunConfig,
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
        config: RunConfig,
        parts: Parts,
        api: A,
        runtime: &tokio::runtime::Handle,
    ) -> Self {
        let config_bytes = config.heap_bytes();
        let cache = Arc::new(Cache::new(config.resource_path.clone()));
        let mut run = Run::new(config, parts, api, Keeping::new(cache.clone()));
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
            run.sink().end();
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

impl Drop for Reflector {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod scripts;
