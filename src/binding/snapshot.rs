//! What one metrics collection reads of a watcher's informers, its plain watches and the
//! process's connections ([`NativeRegistry::metrics_json`]): every figure added up per
//! series (cluster, group, version, resource: namespaces are not kept apart), the plain
//! watches' into the informers' series of the same labels, as one JSON text.
//!
//! [`NativeRegistry::metrics_json`]: super::registry::NativeRegistry::metrics_json

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::calls::{ClusterConnections, pool_stats};
use super::informer::JsSink;
use super::watch_metrics::{WatchMetrics, WatchSeries};
use crate::informer::memory::Footprint;
use crate::informer::registry::Registry;
use crate::informer::stats::{Labels, StatsSnapshot};

/// The snapshot of `registry`'s informers and of `watches`, as JSON text ([`NativeMetrics`]).
pub(super) fn snapshot_json(registry: &Registry<JsSink>, watches: &WatchMetrics) -> String {
    let mut series: HashMap<Labels, SeriesMetrics> = HashMap::new();
    let mut live = Vec::new();
    let mut retired = Vec::new();
    registry.each(
        |labels, reflector, _| {
            let stats = reflector.stats().snapshot();
            let cache = reflector.cache();
            live.push((
                labels.clone(),
                Counts::of(&stats, cache.delivered()),
                Live {
                    watches_open: stats.watches_open,
                    objects: cache.len(),
                    cached_bytes: cache.cached_bytes(),
                    synced: cache.is_synced(),
                    seconds_since_last_event: stats.seconds_since_last_event,
                    slowest_consumer_pending: cache.slowest_pending(),
                    consumers: cache.consumers(),
                },
            ));
        },
        |labels, totals| {
            retired.push((labels.clone(), Counts::of(&totals.counts, totals.delivered)));
        },
    );
    for (labels, counts) in retired {
        series
            .entry(labels.clone())
            .or_insert_with(|| SeriesMetrics::new(&labels))
            .counts
            .add(counts);
    }
    for (labels, counts, informer) in live {
        let entry = series
            .entry(labels.clone())
            .or_insert_with(|| SeriesMetrics::new(&labels));
        entry.counts.add(counts);
        entry.add(&informer);
    }
    // Plain watches count into the informers' series of the same labels; a series of
    // plain watches alone has none of the informer figures (null).
    let mut watch_only = Vec::new();
    for watch in watches.series() {
        match series.get_mut(&watch.labels) {
            Some(entry) => entry.add_watches(watch),
            None => watch_only.push(WatchOnlySeries::of(watch)),
        }
    }
    let metrics = NativeMetrics {
        series: series
            .into_values()
            .map(Series::Informers)
            .chain(watch_only.into_iter().map(Series::Watches))
            .collect(),
        clusters: pool_stats(),
        memory: NativeMemory::of(registry),
    };
    serde_json::to_string(&metrics).unwrap_or_default()
}

/// What one metrics collection reads ([`NativeRegistry::metrics_json`]).
#[derive(Serialize)]
pub struct NativeMetrics {
    /// One entry per series of the watcher's informers, closed ones' counts included, with its
    /// plain watches' counts added; then one per series of plain watches alone.
    pub series: Vec<Series>,
    /// The process's connections per cluster origin, as `poolStats()` gives them.
    pub clusters: Vec<ClusterConnections>,
    /// Where this watcher's informers' native memory goes.
    pub memory: NativeMemory,
}

/// The native snapshot's `memory`: this watcher's informers' memory worked out from their
/// structures (`crate::informer::memory`: objects' text, headers and index, consumers' pending
/// changes, each informer's fixed cost by part), and the allocator's process-wide figures to
/// set it against. Bytes unless named a count.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NativeMemory {
    /// `informers`, `consumers`, `objects`, `textBytes`, `headerBytes`, `indexBytes`,
    /// `pendingBytes`, `pendingChanges`, `fixedBytes`, `sharedBytes`: see [`Footprint`].
    #[serde(flatten)]
    pub footprint: Footprint,
    /// `fixedBytes / informers` (0 without informers).
    pub fixed_bytes_per_informer: f64,
    /// The fixed bytes by part, summed over the informers (see
    /// [`crate::informer::memory::Fixed`]): the reflector
    /// tasks' futures.
    pub fixed_task_bytes: usize,
    /// The caches', counters' and consumers' structs and buffers.
    pub fixed_cache_bytes: usize,
    /// The configurations' and endpoints' strings and CA/identity PEM.
    pub fixed_config_bytes: usize,
    /// The registry's entries and table.
    pub fixed_registry_bytes: usize,
    /// Text, headers, index, pending, fixed and shared bytes added up: what the informers
    /// account for.
    pub accounted_bytes: usize,
    /// The allocator's bytes in use, process-wide (glibc only, else absent): everything the
    /// process allocated with malloc (Node.js and V8's own included, V8's heap not).
    pub allocator_in_use_bytes: Option<u64>,
    /// Bytes free but held in the allocator's heaps, process-wide (glibc only).
    pub allocator_free_bytes: Option<u64>,
}

impl NativeMemory {
    fn of(registry: &Registry<JsSink>) -> Self {
        let (footprint, fixed) = registry.memory();
        let allocator = crate::heap::allocator_stats();
        Self {
            footprint,
            fixed_bytes_per_informer: if footprint.informers == 0 {
                0.0
            } else {
                footprint.fixed_bytes as f64 / footprint.informers as f64
            },
            fixed_task_bytes: fixed.task_bytes,
            fixed_cache_bytes: fixed.cache_bytes,
            fixed_config_bytes: fixed.config_bytes,
            fixed_registry_bytes: fixed.registry_bytes,
            accounted_bytes: footprint.text_bytes
                + footprint.header_bytes
                + footprint.index_bytes
                + footprint.pending_bytes
                + footprint.fixed_bytes
                + footprint.shared_bytes,
            allocator_in_use_bytes: allocator.map(|a| a.in_use),
            allocator_free_bytes: allocator.map(|a| a.free),
        }
    }
}

/// The counters of an informer, or of a series' informers.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Requests sent (list pages, streaming lists, watches).
    pub connects: u64,
    /// Watches started again after one ended or failed.
    pub reconnects: u64,
    /// Lists after a 410.
    pub relists: u64,
    /// Changes received (watch events, list items).
    pub events_received: u64,
    /// Events taken by consumers, summed over them.
    pub events_delivered: u64,
    /// Body bytes received.
    pub bytes_received: u64,
    /// Credentials asked for after the first.
    pub credential_refreshes: u64,
    /// Errors by `errorType`.
    pub errors: BTreeMap<String, u64>,
}

impl Counts {
    fn of(stats: &StatsSnapshot, delivered: u64) -> Self {
        Self {
            connects: stats.connects,
            reconnects: stats.reconnects,
            relists: stats.relists,
            events_received: stats.events,
            events_delivered: delivered,
            bytes_received: stats.bytes,
            credential_refreshes: stats.credential_refreshes,
            errors: stats.errors.clone(),
        }
    }

    fn add(&mut self, other: Self) {
        self.connects += other.connects;
        self.reconnects += other.reconnects;
        self.relists += other.relists;
        self.events_received += other.events_received;
        self.events_delivered += other.events_delivered;
        self.bytes_received += other.bytes_received;
        self.credential_refreshes += other.credential_refreshes;
        for (kind, n) in other.errors {
            *self.errors.entry(kind).or_default() += n;
        }
    }
}

/// One running informer's figures that are not counters.
struct Live {
    watches_open: u64,
    objects: usize,
    cached_bytes: usize,
    synced: bool,
    seconds_since_last_event: f64,
    slowest_consumer_pending: usize,
    consumers: usize,
}

/// One series' figures: counters of its informers, closed ones included, and the figures of
/// the open ones (sums; `synced` all of them; the most for age and pending, absent without an
/// open informer).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SeriesMetrics {
    /// The cluster URL without credentials, query or trailing slash.
    pub cluster: String,
    pub group: String,
    pub version: String,
    /// The plural resource name.
    pub resource: String,
    #[serde(flatten)]
    pub counts: Counts,
    /// Shared informers open.
    pub informers: usize,
    /// Watch streams being read now.
    pub watches_open: u64,
    /// Objects cached.
    pub objects: usize,
    /// Bytes of JSON cached.
    pub cached_bytes: usize,
    /// Consumers open.
    pub consumers: usize,
    /// Every open informer has its initial list cached.
    pub synced: Option<bool>,
    /// The most seconds since an informer's last event or bookmark.
    pub seconds_since_last_event: Option<f64>,
    /// The most changes pending in one consumer.
    pub slowest_consumer_pending: Option<usize>,
}

impl SeriesMetrics {
    fn new(labels: &Labels) -> Self {
        Self {
            cluster: labels.cluster.clone(),
            group: labels.group.clone(),
            version: labels.version.clone(),
            resource: labels.resource.clone(),
            counts: Counts::default(),
            informers: 0,
            watches_open: 0,
            objects: 0,
            cached_bytes: 0,
            consumers: 0,
            synced: None,
            seconds_since_last_event: None,
            slowest_consumer_pending: None,
        }
    }

    /// Adds the counts of the series' plain watches.
    fn add_watches(&mut self, watches: WatchSeries) {
        self.counts.connects += watches.connects;
        self.counts.events_received += watches.events_received;
        self.counts.events_delivered += watches.events_delivered;
        self.counts.bytes_received += watches.bytes_received;
        self.watches_open += watches.watches_open;
        for (kind, n) in watches.errors {
            *self.counts.errors.entry(kind).or_default() += n;
        }
    }

    fn add(&mut self, informer: &Live) {
        self.informers += 1;
        self.watches_open += informer.watches_open;
        self.objects += informer.objects;
        self.cached_bytes += informer.cached_bytes;
        self.consumers += informer.consumers;
        self.synced = Some(self.synced.unwrap_or(true) && informer.synced);
        self.seconds_since_last_event = Some(
            self.seconds_since_last_event
                .unwrap_or(0.0)
                .max(informer.seconds_since_last_event),
        );
        self.slowest_consumer_pending = Some(
            self.slowest_consumer_pending
                .unwrap_or(0)
                .max(informer.slowest_consumer_pending),
        );
    }
}

/// A series of the metrics snapshot: of informers (their plain watches' counts added), or of
/// plain watches alone.
#[derive(Serialize)]
#[serde(untagged)]
pub enum Series {
    Informers(SeriesMetrics),
    Watches(WatchOnlySeries),
}

/// A series of plain watches alone: their counts, and null for every informer figure, so both
/// kinds of series have the same fields.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchOnlySeries {
    pub cluster: String,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub connects: u64,
    pub events_received: u64,
    pub events_delivered: u64,
    pub bytes_received: u64,
    pub watches_open: u64,
    pub errors: BTreeMap<String, u64>,
    pub reconnects: Option<u64>,
    pub relists: Option<u64>,
    pub credential_refreshes: Option<u64>,
    pub informers: Option<usize>,
    pub objects: Option<usize>,
    pub cached_bytes: Option<usize>,
    pub synced: Option<bool>,
    pub seconds_since_last_event: Option<f64>,
    pub slowest_consumer_pending: Option<usize>,
}

impl WatchOnlySeries {
    fn of(watches: WatchSeries) -> Self {
        let Labels {
            cluster,
            group,
            version,
            resource,
        } = watches.labels;
        Self {
            cluster,
            group,
            version,
            resource,
            connects: watches.connects,
            events_received: watches.events_received,
            events_delivered: watches.events_delivered,
            bytes_received: watches.bytes_received,
            watches_open: watches.watches_open,
            errors: watches.errors,
            reconnects: None,
            relists: None,
            credential_refreshes: None,
            informers: None,
            objects: None,
            cached_bytes: None,
            synced: None,
            seconds_since_last_event: None,
            slowest_consumer_pending: None,
        }
    }
}
