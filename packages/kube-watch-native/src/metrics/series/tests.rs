//! The series' merge rules: informers of one series add up, closed informers' counters are
//! kept, plain watches have series of their own and add into an informer series of theirs.

use super::*;
use crate::watch::WatchCounters;
use std::sync::Arc;

fn counts(events: u64, errors: &[(&str, u64)]) -> Counts {
    Counts {
        connects: 1,
        reconnects: 1,
        relists: 1,
        events_received: events,
        events_delivered: events,
        bytes_received: events * 100,
        credential_refreshes: 1,
        errors: errors.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect(),
    }
}

fn informer(objects: usize, synced: bool, age: f64, pending: usize) -> Live {
    Live {
        watches_open: 1,
        objects,
        cached_bytes: objects * 10,
        synced,
        seconds_since_last_event: age,
        slowest_consumer_pending: pending,
        consumers: 1,
    }
}

/// An open informer of `resource`, as [`merge`] takes it.
fn open(resource: &str, counts: Counts, informer: Live) -> (SeriesLabels, Counts, Live) {
    (SeriesLabels::core(resource), counts, informer)
}

/// An open informer of configmaps, synced, with one object and one event.
fn quiet_configmaps() -> (SeriesLabels, Counts, Live) {
    open("configmaps", counts(1, &[]), informer(1, true, 0.0, 0))
}

fn watches(resource: &str, events: u64, errors: &[(&str, u64)]) -> WatchSeries {
    WatchSeries {
        labels: SeriesLabels::core(resource),
        watches: 1,
        watches_open: 1,
        connects: 1,
        events_received: events,
        events_delivered: events,
        bytes_received: events * 100,
        errors: errors.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect(),
    }
}

/// The one series of `resource` that `pick` takes (a `kind` series, for the failure's message).
fn the_one<'a, T>(
    series: &'a [Series],
    kind: &str,
    resource: &str,
    pick: impl Fn(&'a Series) -> Option<&'a T>,
) -> &'a T {
    let found: Vec<&T> = series.iter().filter_map(pick).collect();
    assert_eq!(
        found.len(),
        1,
        "one {kind} series of {resource}: {series:?}"
    );
    found[0]
}

/// The one informer series of `resource`.
fn informers<'a>(series: &'a [Series], resource: &str) -> &'a SeriesMetrics {
    the_one(series, "informer", resource, |s| match s {
        Series::Informers(s) if s.resource == resource => Some(s),
        _ => None,
    })
}

/// The one series of plain watches alone of `resource`.
fn watch_only<'a>(series: &'a [Series], resource: &str) -> &'a SeriesMetrics {
    the_one(series, "watch", resource, |s| match s {
        Series::Watches(s) if s.resource == resource => Some(s),
        _ => None,
    })
}

/// That series as the snapshot's JSON has it.
fn watch_only_json(series: &[Series], resource: &str) -> serde_json::Value {
    let one = the_one(series, "watch", resource, |s| match s {
        Series::Watches(w) if w.resource == resource => Some(s),
        _ => None,
    });
    serde_json::to_value(one).unwrap()
}

#[test]
fn informers_of_one_series_add_up_and_others_stay_apart() {
    // Two informers of configmaps (two namespaces: the same labels), one of pods.
    let series = merge(
        vec![
            open("configmaps", counts(1, &[]), informer(1, true, 2.0, 0)),
            open("configmaps", counts(2, &[]), informer(2, true, 5.0, 3)),
            open("pods", counts(4, &[]), informer(4, true, 1.0, 0)),
        ],
        Vec::new(),
        Vec::new(),
    );
    assert_eq!(series.len(), 2);
    let cms = informers(&series, "configmaps");
    let sizes = (cms.informers, cms.objects, cms.cached_bytes);
    assert_eq!(sizes, (2, 3, 30));
    assert_eq!((cms.consumers, cms.watches_open), (2, 2));
    let c = &cms.counts;
    assert_eq!((c.events_received, c.connects), (3, 2));
    assert_eq!(c.bytes_received, 300);
    assert_eq!(cms.synced, Some(true));
    // The oldest last event and the slowest consumer of the series, not their sums.
    assert_eq!(cms.seconds_since_last_event, Some(5.0));
    assert_eq!(cms.slowest_consumer_pending, Some(3));
    assert_eq!(informers(&series, "pods").counts.events_received, 4);
}

#[test]
fn one_unsynced_informer_makes_its_series_unsynced() {
    let series = merge(
        vec![
            quiet_configmaps(),
            open(
                "configmaps",
                counts(0, &[("BAD_REQUEST", 1)]),
                informer(0, false, 0.0, 0),
            ),
        ],
        Vec::new(),
        Vec::new(),
    );
    let cms = informers(&series, "configmaps");
    assert_eq!(cms.synced, Some(false));
    assert_eq!(cms.counts.errors["BAD_REQUEST"], 1);
}

#[test]
fn closed_informers_keep_their_counters() {
    let series = merge(
        vec![open(
            "configmaps",
            counts(3, &[("SYSTEM_ERROR", 1)]),
            informer(3, true, 0.0, 0),
        )],
        vec![
            (
                SeriesLabels::core("configmaps"),
                counts(2, &[("BAD_REQUEST", 1)]),
            ),
            (SeriesLabels::core("pods"), counts(5, &[])),
        ],
        Vec::new(),
    );
    let cms = informers(&series, "configmaps");
    assert_eq!(cms.informers, 1, "the closed one is not open");
    assert_eq!(cms.counts.events_received, 5);
    assert_eq!(cms.counts.events_delivered, 5);
    assert_eq!(cms.counts.reconnects, 2);
    assert_eq!(cms.counts.relists, 2);
    assert_eq!(cms.counts.credential_refreshes, 2);
    assert_eq!(
        cms.counts.errors,
        BTreeMap::from([
            ("BAD_REQUEST".to_owned(), 1),
            ("SYSTEM_ERROR".to_owned(), 1)
        ])
    );
    // A series whose informers all closed: its counters, and nothing open.
    let pods = informers(&series, "pods");
    assert_eq!(pods.counts.events_received, 5);
    assert_eq!(pods.informers, 0);
    assert_eq!(pods.objects, 0);
    assert_eq!(pods.synced, None);
    assert_eq!(pods.seconds_since_last_event, None);
    assert_eq!(pods.slowest_consumer_pending, None);
}

#[test]
fn plain_watches_have_series_of_their_own_and_add_into_an_informer_series_of_theirs() {
    let series = merge(
        vec![quiet_configmaps()],
        vec![(SeriesLabels::core("secrets"), counts(1, &[]))],
        vec![
            watches("configmaps", 3, &[("BAD_REQUEST", 1)]),
            watches("secrets", 2, &[]),
            watches("pods", 1, &[("BAD_REQUEST", 2)]),
        ],
    );
    assert_eq!(series.len(), 3, "{series:?}");
    let cms = informers(&series, "configmaps");
    assert_eq!(
        cms.counts.events_received,
        1 + 3,
        "the informer's and the watches'"
    );
    assert_eq!(cms.counts.events_delivered, 1 + 3);
    assert_eq!(cms.counts.connects, 2);
    assert_eq!(cms.counts.bytes_received, 400);
    assert_eq!(cms.watches_open, 2);
    assert_eq!(cms.counts.errors["BAD_REQUEST"], 1);
    assert_eq!(cms.informers, 1);
    assert_eq!(
        cms.counts.reconnects, 1,
        "watches have no reconnects of their own"
    );
    // A series of closed informers is an informer series too: its watches add into it.
    assert_eq!(informers(&series, "secrets").counts.events_received, 1 + 2);
    // Plain watches alone: their counts, and no informer figure.
    let pods = watch_only(&series, "pods");
    assert_eq!(
        (
            pods.counts.events_received,
            pods.counts.events_delivered,
            pods.counts.connects,
            pods.watches_open
        ),
        (1, 1, 1, 1)
    );
    assert_eq!(pods.counts.bytes_received, 100);
    assert_eq!(pods.counts.errors["BAD_REQUEST"], 2);
    let json = watch_only_json(&series, "pods");
    for field in INFORMER_FIELDS {
        assert_eq!(json[field], serde_json::Value::Null, "{field}");
    }
}

#[test]
fn both_kinds_of_series_have_the_same_camel_case_fields() {
    let series = merge(
        vec![quiet_configmaps()],
        Vec::new(),
        vec![watches("pods", 1, &[])],
    );
    let keys = |s: &Series| -> Vec<String> {
        let mut keys: Vec<String> = match serde_json::to_value(s).unwrap() {
            serde_json::Value::Object(map) => map.keys().cloned().collect(),
            other => panic!("not an object: {other}"),
        };
        keys.sort();
        keys
    };
    let (informer_keys, watch_keys) = match &series[0] {
        Series::Informers(_) => (keys(&series[0]), keys(&series[1])),
        Series::Watches(_) => (keys(&series[1]), keys(&series[0])),
    };
    // All but `consumers`, which only informers have (and JavaScript does not read).
    let without_consumers: Vec<String> = informer_keys
        .iter()
        .filter(|k| *k != "consumers")
        .cloned()
        .collect();
    assert_eq!(watch_keys, without_consumers);
    for key in [
        "eventsReceived",
        "watchesOpen",
        "secondsSinceLastEvent",
        "errors",
    ] {
        assert!(informer_keys.contains(&key.to_owned()), "{informer_keys:?}");
    }
    let json = watch_only_json(&series, "pods");
    assert_eq!(json["informers"], serde_json::Value::Null);
    assert_eq!(json["synced"], serde_json::Value::Null);
}

#[test]
fn a_registry_without_informers_gives_its_watches_series() {
    let registry = Registry::<()>::default();
    let metrics = WatchMetrics::default();
    let counters = Arc::new(WatchCounters::default());
    counters.stats.connect();
    counters.stats.events(2);
    metrics.track(SeriesLabels::core("pods"), counters.clone());
    let series = series(&registry, &metrics);
    assert_eq!(series.len(), 1);
    let pods = watch_only(&series, "pods");
    assert_eq!((pods.counts.connects, pods.counts.events_received), (1, 2));
}
