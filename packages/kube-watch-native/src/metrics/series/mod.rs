//! A metrics snapshot's series: every figure of a watcher's informers and plain watches added
//! up per series (cluster, group, version, resource: namespaces are not kept apart), the
//! counters of closed informers kept, and the plain watches' counts added into the informers'
//! series of the same labels; a series of plain watches alone has none of the informer figures.

use std::collections::{BTreeMap, HashMap};

use serde::{Serialize, Serializer};

use super::watches::{WatchMetrics, WatchSeries};
use crate::engine::stats::{SeriesLabels, StatsSnapshot};
use crate::informer::registry::Registry;

/// The series of `registry`'s informers and of `watches`, in no particular order.
pub fn series<S: Send + Sync + 'static>(
    registry: &Registry<S>,
    watches: &WatchMetrics,
) -> Vec<Series> {
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
    merge(live, retired, watches.series())
}

/// The series of open informers (`live`), closed ones' counters (`retired`, per series) and
/// plain watches' series, merged by their labels.
fn merge(
    live: Vec<(SeriesLabels, Counts, Live)>,
    retired: Vec<(SeriesLabels, Counts)>,
    watches: Vec<WatchSeries>,
) -> Vec<Series> {
    let mut series: HashMap<SeriesLabels, SeriesMetrics> = HashMap::new();
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
    for watch in watches {
        match series.get_mut(&watch.labels) {
            Some(entry) => entry.add_watches(watch),
            None => {
                let mut alone = SeriesMetrics::new(&watch.labels);
                alone.add_watches(watch);
                watch_only.push(alone);
            }
        }
    }
    series
        .into_values()
        .map(Series::Informers)
        .chain(watch_only.into_iter().map(Series::Watches))
        .collect()
}

/// The counters of an informer, or of a series' informers.
#[derive(Debug, Serialize, Default, PartialEq)]
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
#[derive(Debug, Default)]
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
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SeriesMetrics {
    /// The cluster URL without credentials, query or trailing slash.
    pub cluster: String,
    /// API group, `""` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// The plural resource name.
    pub resource: String,
    /// The counters, closed informers' and plain watches' included.
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
    fn new(labels: &SeriesLabels) -> Self {
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
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Series {
    /// A series with an informer, open or closed.
    Informers(SeriesMetrics),
    /// A series of plain watches alone: their counts, and null for every informer figure, so
    /// both kinds of series have the same fields but `consumers`.
    Watches(#[serde(serialize_with = "watches_alone")] SeriesMetrics),
}

/// The fields of [`SeriesMetrics`] that only informers give: null in a series of plain watches
/// alone, where 0 would claim an informer that counted nothing.
const INFORMER_FIELDS: [&str; 9] = [
    "reconnects",
    "relists",
    "credentialRefreshes",
    "informers",
    "objects",
    "cachedBytes",
    "synced",
    "secondsSinceLastEvent",
    "slowestConsumerPending",
];

/// A series of plain watches alone as JavaScript reads it: [`SeriesMetrics`]' fields, those of
/// [`INFORMER_FIELDS`] null, and no `consumers`.
fn watches_alone<S: Serializer>(series: &SeriesMetrics, serializer: S) -> Result<S::Ok, S::Error> {
    let mut json = serde_json::to_value(series).map_err(serde::ser::Error::custom)?;
    if let Some(fields) = json.as_object_mut() {
        fields.remove("consumers");
        for field in INFORMER_FIELDS {
            fields.insert(field.to_owned(), serde_json::Value::Null);
        }
    }
    json.serialize(serializer)
}

#[cfg(test)]
mod tests;
