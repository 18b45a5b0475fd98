//! What a run has done so far, for `informer.stats()` and the metrics (`lib/metrics.js`):
//! counters a run bumps as it goes (relaxed atomics, nothing per event but an add), read
//! at any time without stopping it, and the [`SeriesLabels`] its metric series are named by.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// What an informer's metric series are named by. Never a credential, and never the namespace:
/// a fleet's namespaces are a set that grows without bound, so informers of one resource in
/// several namespaces of a cluster share a series.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SeriesLabels {
    /// The cluster URL without user info, query or fragment (see [`cluster_label`]).
    pub cluster: String,
    /// API group, `""` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource name.
    pub resource: String,
}

#[cfg(test)]
impl SeriesLabels {
    /// The tests' series of a core/v1 `resource` on one cluster.
    pub fn core(resource: &str) -> Self {
        SeriesLabels {
            cluster: "https://k8s.example".to_owned(),
            group: String::new(),
            version: "v1".to_owned(),
            resource: resource.to_owned(),
        }
    }
}

/// The cluster URL as a metric attribute: scheme, host, port and path (a Rancher-style proxy
/// prefix names the cluster behind it), without user info (which may hold a password), query
/// or fragment, and without a trailing slash. A URL that does not parse is named by its scheme
/// alone rather than risk exporting a secret in it.
pub fn cluster_label(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(parsed) => {
            let origin = parsed.origin().ascii_serialization();
            format!("{origin}{}", parsed.path().trim_end_matches('/'))
        }
        Err(_) => match url.split_once("://") {
            Some((scheme, _)) if scheme.chars().all(|c| c.is_ascii_alphanumeric()) => {
                format!("{scheme}://(invalid)")
            }
            _ => "(invalid)".to_owned(),
        },
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A run's counters.
#[derive(Debug)]
pub struct Stats {
    connects: AtomicU64,
    reconnects: AtomicU64,
    relists: AtomicU64,
    events: AtomicU64,
    bytes: AtomicU64,
    credential_refreshes: AtomicU64,
    /// Milliseconds since the epoch of the last event or bookmark; 0 before the first.
    last_event_ms: AtomicU64,
    /// When the informer started (ms since the epoch): how long it has waited for a first event.
    started_ms: u64,
    /// Watch streams (a streaming list's included) being read now: 0 or 1.
    watches_open: AtomicU64,
    errors: Mutex<BTreeMap<String, u64>>,
    /// Heap bytes of the endpoint the run holds (see `crate::informer::memory::Fixed`), set when
    /// it resolves one.
    endpoint_bytes: AtomicU64,
}

impl Default for Stats {
    fn default() -> Self {
        Self {
            connects: AtomicU64::default(),
            reconnects: AtomicU64::default(),
            relists: AtomicU64::default(),
            events: AtomicU64::default(),
            bytes: AtomicU64::default(),
            credential_refreshes: AtomicU64::default(),
            last_event_ms: AtomicU64::default(),
            started_ms: now_ms(),
            watches_open: AtomicU64::default(),
            errors: Mutex::default(),
            endpoint_bytes: AtomicU64::default(),
        }
    }
}

/// A watch stream being read; counted in `watchesOpen` until dropped.
#[derive(Debug)]
pub struct WatchOpen(Arc<Stats>);

impl Drop for WatchOpen {
    fn drop(&mut self) {
        self.0.watches_open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A copy of the counters, as `stats()` returns them (camelCase keys).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatsSnapshot {
    /// Requests sent (list pages, streaming lists, watches).
    pub connects: u64,
    /// Watches started again after one ended or failed.
    pub reconnects: u64,
    /// Lists after a 410 (the initial list is not counted).
    pub relists: u64,
    /// Changes received from the server, each counted once as it arrives: watch events (a
    /// streaming list's initial ADDED included) and paginated list items. Bookmarks are not
    /// counted; a relist counts the items it received, not the difference consumers see, so
    /// after a 410 this is below the number of writes. With no fault, N writes give N.
    pub events: u64,
    /// Body bytes received.
    pub bytes: u64,
    /// Errors by `errorType` (`SYSTEM_ERROR`, `UNKNOWN_ERROR`, ...).
    pub errors: BTreeMap<String, u64>,
    /// When the last event or bookmark arrived (ms since the epoch), if one has.
    pub last_event_time: Option<u64>,
    /// Credentials asked for after the first.
    pub credential_refreshes: u64,
    /// Watch streams being read now (0 or 1): 0 while listing in pages, backing off or ended.
    pub watches_open: u64,
    /// Seconds since the last event or bookmark arrived, or since the informer started if
    /// none has: what grows when a cluster goes quiet or a connection hangs.
    pub seconds_since_last_event: f64,
}

/// The counters of a series' informers that have closed, so that the series' counters never go
/// down when one closes. Kept per series ([`SeriesLabels`]), so bounded by their number.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// The counters added up (the fields that are not counters stay at their default).
    pub counts: StatsSnapshot,
    /// Events their consumers took.
    pub delivered: u64,
}

impl Totals {
    /// Adds a closing informer's final counts.
    pub fn add(&mut self, stats: &StatsSnapshot, delivered: u64) {
        let counts = &mut self.counts;
        counts.connects += stats.connects;
        counts.reconnects += stats.reconnects;
        counts.relists += stats.relists;
        counts.events += stats.events;
        counts.bytes += stats.bytes;
        counts.credential_refreshes += stats.credential_refreshes;
        for (kind, n) in &stats.errors {
            *counts.errors.entry(kind.clone()).or_default() += n;
        }
        self.delivered += delivered;
    }
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

impl Stats {
    pub(crate) fn connect(&self) {
        bump(&self.connects, 1);
    }

    pub(crate) fn reconnect(&self) {
        bump(&self.reconnects, 1);
    }

    pub(crate) fn relist(&self) {
        bump(&self.relists, 1);
    }

    pub(crate) fn bytes(&self, n: usize) {
        bump(&self.bytes, n as u64);
    }

    /// Body bytes received so far.
    pub(crate) fn bytes_received(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Counts a watch stream as open until the guard is dropped.
    pub(crate) fn watch_open(self: &Arc<Self>) -> WatchOpen {
        bump(&self.watches_open, 1);
        WatchOpen(self.clone())
    }

    pub(crate) fn credential_refresh(&self) {
        bump(&self.credential_refreshes, 1);
    }

    pub(crate) fn events(&self, n: usize) {
        bump(&self.events, n as u64);
        self.last_event_ms.store(now_ms(), Ordering::Relaxed);
    }

    pub(crate) fn set_endpoint_bytes(&self, bytes: usize) {
        self.endpoint_bytes.store(bytes as u64, Ordering::Relaxed);
    }

    /// Heap bytes of the run's current endpoint (0 before the first).
    pub fn endpoint_bytes(&self) -> usize {
        self.endpoint_bytes.load(Ordering::Relaxed) as usize
    }

    pub(crate) fn error(&self, error_type: &str) {
        let mut errors = self.errors.lock().unwrap_or_else(PoisonError::into_inner);
        *errors.entry(error_type.to_owned()).or_default() += 1;
    }

    /// The counters now.
    pub fn snapshot(&self) -> StatsSnapshot {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let last = load(&self.last_event_ms);
        StatsSnapshot {
            connects: load(&self.connects),
            reconnects: load(&self.reconnects),
            relists: load(&self.relists),
            events: load(&self.events),
            bytes: load(&self.bytes),
            errors: self
                .errors
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            last_event_time: (last > 0).then_some(last),
            credential_refreshes: load(&self.credential_refreshes),
            watches_open: load(&self.watches_open),
            seconds_since_last_event: now_ms().saturating_sub(last.max(self.started_ms)) as f64
                / 1000.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_up_and_serialize_in_camel_case() {
        let stats = Stats::default();
        stats.connect();
        stats.connect();
        stats.events(3);
        stats.error("SYSTEM_ERROR");
        stats.error("SYSTEM_ERROR");
        let snapshot = stats.snapshot();
        assert_eq!(snapshot.connects, 2);
        assert_eq!(snapshot.events, 3);
        assert_eq!(snapshot.errors["SYSTEM_ERROR"], 2);
        assert!(snapshot.last_event_time.is_some());
        let json = serde_json::to_string(&snapshot).unwrap();
        assert!(json.contains(r#""credentialRefreshes":0"#), "{json}");
        assert!(json.contains(r#""lastEventTime":"#), "{json}");
        assert!(json.contains(r#""secondsSinceLastEvent":"#), "{json}");
        assert!(snapshot.seconds_since_last_event < 60.0);
    }

    #[test]
    fn totals_add_up_the_counters_of_closed_informers() {
        let stats = Stats::default();
        stats.events(2);
        stats.reconnect();
        stats.error("SYSTEM_ERROR");
        let mut totals = Totals::default();
        totals.add(&stats.snapshot(), 5);
        totals.add(&stats.snapshot(), 1);
        assert_eq!(totals.counts.events, 4);
        assert_eq!(totals.counts.reconnects, 2);
        assert_eq!(totals.counts.errors["SYSTEM_ERROR"], 2);
        assert_eq!(totals.delivered, 6);
        assert_eq!(totals.counts.watches_open, 0, "no gauges");
    }

    #[test]
    fn open_watches_are_counted_while_their_guard_lives() {
        let stats = Arc::new(Stats::default());
        let open = stats.watch_open();
        assert_eq!(stats.snapshot().watches_open, 1);
        drop(open);
        assert_eq!(stats.snapshot().watches_open, 0);
    }

    #[test]
    fn the_cluster_label_keeps_no_credentials_query_or_trailing_slash() {
        assert_eq!(
            cluster_label("https://user:secret@h.example:6443/?token=x#f"),
            "https://h.example:6443"
        );
        assert_eq!(
            cluster_label("https://rancher.example/k8s/clusters/c-1/"),
            "https://rancher.example/k8s/clusters/c-1"
        );
        assert_eq!(
            cluster_label("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(cluster_label("https://tok:en@[bad"), "https://(invalid)");
        assert_eq!(cluster_label("secret-without-scheme"), "(invalid)");
    }
}
