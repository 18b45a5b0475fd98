//! The metrics of one watcher's plain watches (`watchResource`): each watch counts what it does
//! in its own [`WatchCounters`] (relaxed atomics, on its task's thread), and one metrics
//! collection reads them all here, added up per series (cluster, group, version, resource:
//! never the namespace), and into the informers' series of the same labels
//! (`NativeRegistry::metrics_json`), in one call. Nothing here runs per event.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use crate::informer::stats::{Labels, StatsSnapshot, Totals};
use crate::watch::WatchCounters;

/// A watcher's plain watches, for its metrics.
#[derive(Default)]
pub struct WatchMetrics {
    state: Mutex<Tracked>,
}

#[derive(Default)]
struct Tracked {
    /// Watches whose native object may still live (JavaScript holds it, or its task runs).
    live: Vec<(Labels, Arc<WatchCounters>)>,
    /// The counts of the watches let go of, per series: bounded by the number of series.
    retired: HashMap<Labels, Totals>,
    /// `live` is swept when it grows past this, so a process that never collects stays bounded.
    sweep_at: usize,
}

impl Tracked {
    /// Moves the watches nothing else holds any more into `retired`.
    fn sweep(&mut self) {
        let retired = &mut self.retired;
        self.live.retain(|(labels, counters)| {
            if Arc::strong_count(counters) > 1 {
                return true;
            }
            retired.entry(labels.clone()).or_default().add(
                &counters.stats.snapshot(),
                counters.delivered.load(Ordering::Relaxed),
            );
            false
        });
        self.sweep_at = (self.live.len() * 2).max(64);
    }
}

impl WatchMetrics {
    /// Counts the watch of `counters` in the series of `labels`.
    pub(super) fn track(&self, labels: Labels, counters: Arc<WatchCounters>) {
        let mut tracked = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        tracked.live.push((labels, counters));
        if tracked.live.len() > tracked.sweep_at {
            tracked.sweep();
        }
    }
}

/// One series of plain watches, as [`WatchMetrics::metrics_json`] gives it.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct WatchSeries {
    #[serde(skip)]
    pub labels: Labels,
    cluster: String,
    group: String,
    version: String,
    resource: String,
    /// Watches whose native object still lives.
    pub watches: usize,
    /// Watch streams being read now.
    pub watches_open: u64,
    /// Requests sent.
    pub connects: u64,
    /// Watch events received, bookmarks included (a plain watch hands them over).
    pub events_received: u64,
    /// Events JavaScript took, generated ERROR events included.
    pub events_delivered: u64,
    /// Body bytes received.
    pub bytes_received: u64,
    /// Errors by `errorType`.
    pub errors: BTreeMap<String, u64>,
}

impl WatchSeries {
    fn new(labels: &Labels) -> Self {
        Self {
            labels: labels.clone(),
            cluster: labels.cluster.clone(),
            group: labels.group.clone(),
            version: labels.version.clone(),
            resource: labels.resource.clone(),
            ..Self::default()
        }
    }

    fn add(&mut self, stats: &StatsSnapshot, delivered: u64) {
        self.watches_open += stats.watches_open;
        self.connects += stats.connects;
        self.events_received += stats.events;
        self.events_delivered += delivered;
        self.bytes_received += stats.bytes;
        for (kind, n) in &stats.errors {
            *self.errors.entry(kind.clone()).or_default() += n;
        }
    }
}

impl WatchMetrics {
    /// Every figure of this watcher's plain watches added up per series, the ones let go of
    /// included.
    pub(super) fn series(&self) -> Vec<WatchSeries> {
        let mut tracked = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        tracked.sweep();
        let mut series: HashMap<&Labels, WatchSeries> = HashMap::new();
        for (labels, totals) in &tracked.retired {
            series
                .entry(labels)
                .or_insert_with(|| WatchSeries::new(labels))
                .add(&totals.counts, totals.delivered);
        }
        for (labels, counters) in &tracked.live {
            let entry = series
                .entry(labels)
                .or_insert_with(|| WatchSeries::new(labels));
            entry.watches += 1;
            entry.add(
                &counters.stats.snapshot(),
                counters.delivered.load(Ordering::Relaxed),
            );
        }
        series.into_values().collect()
    }
}
