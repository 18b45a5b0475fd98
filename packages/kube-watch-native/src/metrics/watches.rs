//! The metrics of one watcher's plain watches (`watchResource`): each watch counts what it does
//! in its own [`WatchCounters`] (relaxed atomics, on its task's thread), and one metrics
//! collection reads them all here, added up per series (cluster, group, version, resource:
//! never the namespace), in one call. Nothing here runs per event.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};

use crate::engine::stats::{SeriesLabels, StatsSnapshot, Totals};
use crate::watch::WatchCounters;

/// A watcher's plain watches, for its metrics.
#[derive(Default)]
pub struct WatchMetrics {
    state: Mutex<Tracked>,
}

#[derive(Default)]
struct Tracked {
    /// Watches whose native object may still live (JavaScript holds it, or its task runs).
    live: Vec<(SeriesLabels, Arc<WatchCounters>)>,
    /// The counts of the watches let go of, per series: bounded by the number of series.
    retired: HashMap<SeriesLabels, Totals>,
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
    pub fn track(&self, labels: SeriesLabels, counters: Arc<WatchCounters>) {
        let mut tracked = self.lock();
        tracked.live.push((labels, counters));
        if tracked.live.len() > tracked.sweep_at {
            tracked.sweep();
        }
    }

    /// Every figure of this watcher's plain watches added up per series, the ones let go of
    /// included.
    pub fn series(&self) -> Vec<WatchSeries> {
        let mut tracked = self.lock();
        tracked.sweep();
        let mut series: HashMap<&SeriesLabels, WatchSeries> = HashMap::new();
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

    fn lock(&self) -> std::sync::MutexGuard<'_, Tracked> {
        // Nothing panics while holding it; the data stays consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One series of plain watches, as [`WatchMetrics::series`] gives it.
#[derive(Debug, Default, PartialEq)]
pub struct WatchSeries {
    /// Cluster, group, version and resource.
    pub labels: SeriesLabels,
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
    fn new(labels: &SeriesLabels) -> Self {
        Self {
            labels: labels.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A watch's counters after `events` events (all taken), one request and `bytes` bytes.
    fn watched(events: usize, bytes: usize) -> Arc<WatchCounters> {
        let counters = Arc::new(WatchCounters::default());
        counters.stats.connect();
        counters.stats.events(events);
        counters.stats.bytes(bytes);
        counters
            .delivered
            .fetch_add(events as u64, Ordering::Relaxed);
        counters
    }

    fn find<'a>(series: &'a [WatchSeries], resource: &str) -> &'a WatchSeries {
        let found: Vec<_> = series
            .iter()
            .filter(|s| s.labels.resource == resource)
            .collect();
        assert_eq!(found.len(), 1, "one series of {resource}: {series:?}");
        found[0]
    }

    #[test]
    fn watches_of_one_series_add_up_and_others_stay_apart() {
        let metrics = WatchMetrics::default();
        // Two watches of configmaps (the namespace is not a label: one series), one of pods.
        let one = watched(1, 100);
        let two = watched(2, 200);
        let pods = watched(1, 50);
        let open = two.stats.watch_open();
        two.stats.error("BAD_REQUEST");
        metrics.track(SeriesLabels::core("configmaps"), one.clone());
        metrics.track(SeriesLabels::core("configmaps"), two.clone());
        metrics.track(SeriesLabels::core("pods"), pods.clone());

        let series = metrics.series();
        assert_eq!(series.len(), 2);
        let cms = find(&series, "configmaps");
        let figures = (cms.watches, cms.watches_open, cms.connects);
        assert_eq!(figures, (2, 1, 2));
        let events = (cms.events_received, cms.events_delivered);
        assert_eq!(events, (3, 3));
        assert_eq!(cms.bytes_received, 300);
        assert_eq!(cms.errors, BTreeMap::from([("BAD_REQUEST".to_owned(), 1)]));
        let pods = find(&series, "pods");
        assert_eq!((pods.watches, pods.events_received), (1, 1));
        drop(open);
    }

    #[test]
    fn watches_let_go_of_keep_their_counts() {
        let metrics = WatchMetrics::default();
        let one = watched(1, 100);
        let two = watched(2, 200);
        two.stats.error("BAD_REQUEST");
        metrics.track(SeriesLabels::core("configmaps"), one.clone());
        metrics.track(SeriesLabels::core("configmaps"), two.clone());
        drop(two);

        let series = metrics.series();
        let cms = find(&series, "configmaps");
        assert_eq!(cms.watches, 1, "only one still lives");
        assert_eq!(cms.events_received, 3, "the one let go of still counts");
        assert_eq!(cms.bytes_received, 300);
        assert_eq!(cms.errors["BAD_REQUEST"], 1);

        // Let go of too: still one series with every count, and no watch.
        drop(one);
        let series = metrics.series();
        let cms = find(&series, "configmaps");
        assert_eq!(cms.watches, 0);
        assert_eq!(
            (cms.connects, cms.events_received, cms.events_delivered),
            (2, 3, 3)
        );
        // Read twice, counted once.
        assert_eq!(find(&metrics.series(), "configmaps").events_received, 3);
    }

    #[test]
    fn many_watches_never_collected_stay_bounded() {
        let metrics = WatchMetrics::default();
        for _ in 0..1000 {
            metrics.track(SeriesLabels::core("configmaps"), watched(1, 10));
        }
        // Swept as they come: what is kept is far below the thousand tracked.
        assert!(
            metrics.lock().live.len() <= 65,
            "{}",
            metrics.lock().live.len()
        );
        let series = metrics.series();
        assert_eq!(find(&series, "configmaps").events_received, 1000);
    }
}
