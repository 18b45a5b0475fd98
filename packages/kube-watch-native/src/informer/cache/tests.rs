//! The cache's tests: what consumers see of lists, changes, relists and errors, and the
//! health readers see.

use super::*;
use crate::informer::selector::Selector;

fn object(name: &str, uid: &str, rv: &str, app: &str) -> Object {
    let text = format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"ns","uid":"{uid}","resourceVersion":"{rv}","labels":{{"app":"{app}"}}}}}}"#
    );
    Object::parse(text.as_bytes()).unwrap()
}

/// Pods `a` (app x) and `b` (app y) as a list.
fn a_and_b() -> Listed {
    [object("a", "1", "5", "x"), object("b", "2", "6", "y")]
        .into_iter()
        .collect()
}

fn events(cursor: &Cursor) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    while let Some(batch) = cursor.take() {
        if batch.events.is_empty() {
            break;
        }
        let parsed: Vec<serde_json::Value> = serde_json::from_slice(&batch.events).unwrap();
        out.extend(parsed);
    }
    out
}

fn summary(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e["type"].as_str().unwrap() {
            "SYNCED" => format!("SYNCED {} {}", e["resourceVersion"], e["relist"]),
            t => format!(
                "{t} {} {}",
                e["object"]["metadata"]["name"], e["resourceVersion"]
            ),
        })
        .collect()
}

#[test]
fn a_consumer_before_the_sync_gets_the_list_then_synced_and_one_after_a_snapshot() {
    let cache = Cache::new("/api/v1/pods".into());
    let early = cache.subscribe();
    assert!(early.take().is_none(), "nothing before the list");
    cache.replace(a_and_b(), "10", false);
    assert!(cache.is_synced());
    assert_eq!(
        summary(&events(&early)),
        [
            r#"ADDED "a" "5""#,
            r#"ADDED "b" "6""#,
            r#"SYNCED "10" false"#
        ]
    );
    cache.apply(ChangeKind::Modified, object("a", "1", "11", "x"));
    cache.bookmark("12");
    assert_eq!(cache.resource_version().as_deref(), Some("12"));
    let late = cache.subscribe();
    assert_eq!(
        summary(&events(&late)),
        [
            r#"ADDED "a" "11""#,
            r#"ADDED "b" "6""#,
            r#"SYNCED "12" false"#
        ],
        "a late consumer starts from the cache and the current resourceVersion"
    );
    assert_eq!(summary(&events(&early)), [r#"MODIFIED "a" "11""#]);
    assert_eq!(cache.consumers(), 2);
    drop(late);
    assert_eq!(cache.consumers(), 1);
}

#[test]
fn health_counts_changes_and_keeps_a_failure_until_a_sign_of_life() {
    let cache = Cache::new("/api/v1/pods".into());
    let start = cache.health();
    assert!(!start.synced && start.failure.is_none());
    let unavailable = Failure::from_status(503);
    cache.error(&unavailable, true);
    assert_eq!(
        cache.health().failure,
        Some(LastFailure {
            failure: unavailable,
            retrying: true
        })
    );
    cache.replace(a_and_b(), "10", false);
    let synced = cache.health();
    assert!(synced.synced && synced.failure.is_none());
    assert!(synced.generation > start.generation);
    cache.apply(ChangeKind::Modified, object("a", "1", "5", "x"));
    assert_eq!(
        cache.health().generation,
        synced.generation,
        "a repeat changes nothing"
    );
    cache.apply(ChangeKind::Modified, object("a", "1", "11", "x"));
    let changed = cache.health().generation;
    assert!(changed > synced.generation);
    cache.error(&unavailable, true);
    cache.bookmark("12");
    assert!(
        cache.health().failure.is_none(),
        "a bookmark is a sign of life"
    );
    cache.error(&unavailable, true);
    cache.recovered();
    assert!(
        cache.health().failure.is_none(),
        "so is a request answered 200"
    );
    let now = cache.health().generation;
    assert!(!cache.arm_change_notice(now - 1), "changed since: look now");
    assert!(cache.arm_change_notice(now));
    assert!(cache.take_change_notice());
    assert!(!cache.take_change_notice(), "once per arming");
    let cache = Arc::new(cache);
    let watching = cache.watching(false);
    assert!(cache.health().watching_since.is_some());
    drop(watching);
    assert!(
        cache.health().watching_since.is_none(),
        "not between watches"
    );
    assert_eq!(cache.health().generation, changed);
    let refused = Failure::from_status(400);
    cache.error(&refused, false);
    cache.recovered();
    assert_eq!(
        cache.health().failure.map(|last| last.retrying),
        Some(false),
        "a terminal failure stays"
    );
}

#[test]
fn a_relist_sends_only_the_difference_then_synced_relist() {
    let cache = Cache::new("/api/v1/pods".into());
    cache.replace(a_and_b(), "10", false);
    let cursor = cache.subscribe();
    events(&cursor);
    let changed = cache.replace(
        [object("a", "1", "5", "x"), object("c", "3", "20", "z")]
            .into_iter()
            .collect(),
        "21",
        true,
    );
    assert_eq!(changed, 2);
    assert_eq!(
        summary(&events(&cursor)),
        [
            r#"DELETED "b" "6""#,
            r#"ADDED "c" "20""#,
            r#"SYNCED "21" true"#
        ]
    );
}

#[test]
fn reads_return_the_cached_text() {
    let cache = Cache::new("/api/v1/pods".into());
    cache.replace(a_and_b(), "10", false);
    let a = cache.get("ns", "a").unwrap();
    assert!(String::from_utf8_lossy(&a.text()).contains(r#""name":"a""#));
    assert!(cache.get("other", "a").is_none());
    let listed = cache.list(Query::labels(
        Some("ns"),
        &Selector::parse("app=y").unwrap(),
    ));
    let parsed: Vec<serde_json::Value> = serde_json::from_slice(&listed).unwrap();
    assert_eq!(parsed.len(), 1);
    assert_eq!(parsed[0]["metadata"]["name"], "b");
    assert_eq!(cache.len(), 2);
    assert!(cache.cached_bytes() > 0);
}

#[test]
fn a_terminal_error_ends_every_consumer_after_what_was_pending() {
    let cache = Cache::new("/api/v1/pods".into());
    let cursor = cache.subscribe();
    cache.apply(ChangeKind::Added, object("a", "1", "5", "x"));
    cache.error(&Failure::from_status(422), false);
    let batch = cursor.take().unwrap();
    assert!(batch.done, "the ERROR is the last thing this consumer sees");
    let parsed: Vec<serde_json::Value> = serde_json::from_slice(&batch.events).unwrap();
    assert_eq!(parsed[0]["type"], "ADDED");
    assert_eq!(parsed[1]["type"], "ERROR");
    assert_eq!(parsed[1]["retrying"], false);
    assert_eq!(parsed[1]["error"]["statusCode"], 422);
    let later = cache.subscribe().take().unwrap();
    assert!(later.done, "a later consumer ends at once");
    let parsed: Vec<serde_json::Value> = serde_json::from_slice(&later.events).unwrap();
    assert_eq!(parsed.len(), 1, "with the ERROR that ended the informer");
    assert_eq!(parsed[0]["retrying"], false);
}

#[test]
fn proof_of_life_is_none_at_first_then_set_by_a_probe_an_event_a_bookmark_and_a_list() {
    let cache = Arc::new(Cache::new("/api/v1/pods".into()));
    assert_eq!(cache.health().alive_at, None, "no proof before the first");
    let streaming_list = cache.watching(true);
    assert_eq!(
        cache.health().alive_at,
        None,
        "a streaming list proves nothing before its end"
    );
    drop(streaming_list);
    // Each step waits for the clock to move on, so each must set the moment anew.
    let later = |before: Option<Moment>| {
        let before = before.expect("set").epoch_ms;
        while epoch_ms() <= before {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    };
    cache.replace(a_and_b(), "10", false);
    let listed = cache.health().alive_at;
    assert!(listed.is_some(), "a complete list");
    later(listed);
    let watching = cache.watching(false);
    assert_eq!(
        cache.health().alive_at,
        listed,
        "a watch opened proves nothing: a server behind the cache takes it too"
    );
    cache.proven();
    let opened = cache.health().alive_at;
    assert!(opened > listed, "shown current (a probe)");
    drop(watching);
    assert_eq!(cache.health().alive_at, opened, "kept between watches");
    later(opened);
    cache.apply(ChangeKind::Modified, object("a", "1", "11", "x"));
    let applied = cache.health().alive_at;
    assert!(applied > opened, "an event");
    later(applied);
    cache.bookmark("12");
    let bookmarked = cache.health().alive_at;
    assert!(bookmarked > applied, "a bookmark");
    cache.error(&Failure::from_status(503), true);
    assert_eq!(
        cache.health().alive_at,
        bookmarked,
        "a failure is no proof either way"
    );
}

#[tokio::test(start_paused = true)]
async fn ages_are_measured_on_the_monotonic_clock_not_the_wall_clock() {
    let cache = Arc::new(Cache::new("/api/v1/pods".into()));
    let streaming_list = cache.watching(true);
    let since = cache.health().watching_since.expect("watching");
    assert_eq!(
        since.age_ms(),
        f64::INFINITY,
        "a streaming list's counts from the dawn"
    );
    drop(streaming_list);
    cache.replace(a_and_b(), "10", false);
    let _watching = cache.watching(false);
    let alive = cache.health().alive_at.expect("a list proves life");
    let opened = cache.health().watching_since.expect("watching");
    // The wall clock moves on while the monotonic one (paused) does not: no age moves.
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(alive.age_ms(), 0.0);
    assert_eq!(opened.age_ms(), 0.0);
    tokio::time::advance(std::time::Duration::from_millis(1500)).await;
    assert_eq!(alive.age_ms(), 1500.0, "the monotonic clock's 1.5 s");
    assert_eq!(opened.age_ms(), 1500.0);
}
