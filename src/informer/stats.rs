//! What an informer has done so far, for `informer.stats()`: counters the reflector bumps as it
//! goes, read at any time without stopping it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// The reflector's counters.
#[derive(Debug, Default)]
pub struct Stats {
    connects: AtomicU64,
    reconnects: AtomicU64,
    relists: AtomicU64,
    events: AtomicU64,
    bytes: AtomicU64,
    credential_refreshes: AtomicU64,
    /// Milliseconds since the epoch of the last event or bookmark; 0 before the first.
    last_event_ms: AtomicU64,
    errors: Mutex<BTreeMap<String, u64>>,
}

/// A copy of the counters, as `stats()` returns them (camelCase keys).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
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

    pub(crate) fn credential_refresh(&self) {
        bump(&self.credential_refreshes, 1);
    }

    pub(crate) fn events(&self, n: usize) {
        bump(&self.events, n as u64);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        self.last_event_ms.store(now, Ordering::Relaxed);
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
    }
}
