//! What one metrics collection reads of a watcher's informers, its plain watches and the
//! process's connections ([`NativeRegistry::metrics_json`]), as one JSON text: the series and
//! the memory come from the core (`crate::metrics`), the connections from the binding's
//! `poolStats()`.
//!
//! [`NativeRegistry::metrics_json`]: super::registry::NativeRegistry::metrics_json

use serde::Serialize;

use super::calls::{ClusterConnections, pool_stats};
use super::way_back::JsListener;
use crate::informer::registry::Registry;
use crate::metrics::memory::WatcherMemory;
use crate::metrics::series::{Series, series};
use crate::metrics::watches::WatchMetrics;

/// The snapshot of `registry`'s informers and of `watches`, as JSON text ([`NativeMetrics`]).
pub(super) fn snapshot_json(registry: &Registry<JsListener>, watches: &WatchMetrics) -> String {
    let metrics = NativeMetrics {
        series: series(registry, watches),
        clusters: pool_stats(),
        memory: WatcherMemory::of(registry),
    };
    serde_json::to_string(&metrics).unwrap_or_default()
}

/// What one metrics collection reads ([`NativeRegistry::metrics_json`]).
///
/// [`NativeRegistry::metrics_json`]: super::registry::NativeRegistry::metrics_json
#[derive(Serialize)]
pub struct NativeMetrics {
    /// One entry per series of the watcher's informers, closed ones' counts included, with its
    /// plain watches' counts added; then one per series of plain watches alone.
    pub series: Vec<Series>,
    /// The process's connections per cluster origin, as `poolStats()` gives them.
    pub clusters: Vec<ClusterConnections>,
    /// Where this watcher's informers' native memory goes.
    pub memory: WatcherMemory,
}
