//! Scripts of a plain watch (`watchResource`): the runner with the plan `Once` over a watch's
//! outbox, as `crate::watch` runs it. One request, exactly as asked for; its lines passed on as
//! they came; its end or its first failure the end, whatever the clock does after.

use std::sync::Arc;
use std::time::Duration;

use super::outbox::Outbox;
use crate::auth::Credential;
use crate::engine::connect::test_cluster;
use crate::engine::script::{End, Fake, Reply, event, line, wait_ms};
use crate::engine::stats::Stats;
use crate::engine::{RunConfig, Sink, watch_once};
use crate::request::WatchQuery;

/// The plain watch of `/api/v1/pods` with `query` through `fake`, run to its end (the
/// outbox ended after it, as `Watch::start` does); the outbox. Fails when it does not end.
async fn watch(fake: &Fake, query: WatchQuery) -> Arc<Outbox> {
    let (cluster, endpoint) = test_cluster("http://cluster.test");
    let credential = Credential::Bearer("sekret-token".into());
    let config = RunConfig {
        max_line_bytes: 1 << 20,
        ..RunConfig::once(cluster, "/api/v1/pods".into())
    };
    let outbox = Arc::new(Outbox::new("/api/v1/pods".into()));
    let stats = Arc::new(Stats::default());
    let run = watch_once(
        config,
        query,
        endpoint,
        credential,
        stats,
        outbox.clone(),
        fake.clone(),
    );
    // Ten minutes on the paused clock: a plain watch whose stream ended, or that failed,
    // ends by itself, and never waits a backoff out.
    let ended = tokio::time::timeout(Duration::from_secs(600), run).await;
    assert!(ended.is_ok(), "the watch ended by itself");
    outbox.end();
    outbox
}

/// An event line as JavaScript gets it: the contract's `resourceVersion` added beside `type`
/// and `object`, the rest as it came.
fn delivered(line: &str, rv: &str) -> String {
    let open = line.strip_suffix('}').expect("an object");
    format!(r#"{open},"resourceVersion":"{rv}"}}"#)
}

/// Every event's text and every warning the outbox holds, and whether it ended.
fn drained(outbox: &Outbox) -> (String, Vec<String>, bool) {
    let (mut events, mut warnings, mut done) = (String::new(), Vec::new(), false);
    while let Some(batch) = outbox.take() {
        events.push_str(&batch.events_text());
        warnings.extend(batch.warnings);
        done |= batch.done;
        if done {
            break;
        }
    }
    (events, warnings, done)
}

#[tokio::test(start_paused = true)]
async fn a_plain_watch_asks_once_as_asked_and_passes_every_line_on_as_it_came() {
    let bookmark = r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"8"}}}"#;
    // Not in the API server's shape (white space, another order): passed on untouched too.
    let spaced = r#"{ "object": {"kind": "Pod"}, "type": "SOMETHING_NEW" }"#;
    let fake = Fake::new(vec![Reply::Watch(
        vec![
            line(event("ADDED", "a", "6")),
            line("not json".into()),
            wait_ms(500),
            line(bookmark.into()),
            line(spaced.into()),
            line(event("DELETED", "a", "9")),
        ],
        End::Clean,
    )]);
    let query = WatchQuery {
        resource_version: Some("5".into()),
        timeout_seconds: Some(30),
        ..WatchQuery::default()
    };
    let outbox = watch(&fake, query).await;
    let (events, warnings, done) = drained(&outbox);
    let expected = [
        delivered(&event("ADDED", "a", "6"), "6"),
        delivered(bookmark, "8"),
        spaced.into(),
        delivered(&event("DELETED", "a", "9"), "9"),
    ];
    assert_eq!(events, format!("[{}]", expected.join(",")));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("watch of /api/v1/pods on cluster 'c': skipped a watch line"),
        "{warnings:?}"
    );
    assert!(done, "a clean end is the end");
    let sent = fake.sent();
    assert_eq!(sent.len(), 1, "one request: {sent:?}");
    let url = &sent[0].url;
    assert!(
        url.contains("watch=true") && url.contains("resourceVersion=5"),
        "{url}"
    );
    assert!(url.contains("timeoutSeconds=30"), "its own timeout: {url}");
    assert!(
        !url.contains("allowWatchBookmarks"),
        "no bookmarks it did not ask for: {url}"
    );
    assert_eq!(sent[0].bearer.as_deref(), Some("sekret-token"));
}

#[tokio::test(start_paused = true)]
async fn a_refused_plain_watch_ends_with_one_error_and_never_asks_again() {
    let fake = Fake::new(vec![
        Reply::Status(503, Some(1)),
        Reply::Watch(vec![line(event("ADDED", "a", "6"))], End::Open),
    ]);
    let outbox = watch(&fake, WatchQuery::default()).await;
    assert_eq!(fake.sent().len(), 1, "a plain watch tries once");
    let (events, warnings, done) = drained(&outbox);
    assert!(events.contains(r#""statusCode":503"#), "{events}");
    assert!(!events.contains("ADDED"), "{events}");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("HTTP 503"), "{warnings:?}");
    assert!(done);
}

#[tokio::test(start_paused = true)]
async fn an_error_in_the_stream_is_a_plain_watch_last_event_and_needs_no_warning() {
    let expired = r#"{"type":"ERROR","object":{"kind":"Status","code":410}}"#;
    let fake = Fake::new(vec![
        Reply::Watch(
            vec![
                line(event("ADDED", "a", "6")),
                line(expired.into()),
                line(event("ADDED", "b", "7")),
            ],
            End::Open,
        ),
        Reply::Watch(vec![line(event("ADDED", "c", "8"))], End::Open),
    ]);
    let outbox = watch(&fake, WatchQuery::default()).await;
    assert_eq!(fake.sent().len(), 1, "no relist, no resume");
    let (events, warnings, done) = drained(&outbox);
    let error = r#"{"type":"ERROR","error":{"errorType":"UNKNOWN_ERROR","statusCode":410,"resourcePath":"/api/v1/pods"}}"#;
    assert_eq!(
        events,
        format!("[{},{error}]", delivered(&event("ADDED", "a", "6"), "6")),
        "nothing after the ERROR"
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(done);
}

#[tokio::test(start_paused = true)]
async fn a_cut_plain_watch_ends_with_a_system_error_and_a_warning() {
    let fake = Fake::new(vec![
        Reply::Watch(vec![line(event("ADDED", "a", "6"))], End::Cut),
        Reply::Watch(vec![line(event("ADDED", "b", "7"))], End::Open),
    ]);
    let outbox = watch(&fake, WatchQuery::default()).await;
    assert_eq!(fake.sent().len(), 1, "no reconnect");
    let (events, warnings, done) = drained(&outbox);
    let added = delivered(&event("ADDED", "a", "6"), "6");
    assert!(events.starts_with(&format!("[{added},")), "{events}");
    assert!(
        events.contains(r#""errorType":"SYSTEM_ERROR","statusCode":0"#),
        "{events}"
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("connection reset by peer"),
        "{warnings:?}"
    );
    assert!(done);
}
