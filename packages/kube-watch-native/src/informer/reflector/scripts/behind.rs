//! Scripts of a server whose resourceVersion went back (its etcd restored from an older backup,
//! the cluster recreated at the same address): the probes that notice it, at a resumed watch
//! and on a silent one, and the relist that follows.

use super::*;

/// The API server's answer to a LIST `NotOlderThan` a resourceVersion it never reached
/// (`NewTooLargeResourceVersionError`, after its cache waited 3 s).
fn too_large(rv: &str, current: &str) -> Reply {
    Reply::StatusBody(
        504,
        format!(
            r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"Timeout: Too large resource version: {rv}, current: {current}","reason":"Timeout","details":{{"causes":[{{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}}],"retryAfterSeconds":1}},"code":504}}"#
        ),
    )
}

/// A paginated informer that probes after 60 s of silence, on a script that lists the old
/// cluster ([`old_cluster`]) and then answers `then`.
fn probing(then: Vec<Reply>) -> (Fake, Reflector, Arc<Recorder>) {
    let fake = Fake::new(std::iter::once(old_cluster()).chain(then).collect());
    let mut config = config("http://cluster.test", InitialList::Paginated);
    config.probe = Some(Duration::from_secs(60));
    let (reflector, recorder, _) = run_config(&fake, config, bearer("t"));
    (fake, reflector, recorder)
}

/// Stops `reflector`, which relisted `relists` times in all.
fn stop_after_relists(reflector: &Reflector, relists: u64) {
    assert_eq!(reflector.stats().snapshot().relists, relists);
    reflector.stop();
}

/// The old cluster's list: `old-1` and `old-2`, at 900.
fn old_cluster() -> Reply {
    Reply::Page(list(
        &[pod("old-1", "880"), pod("old-2", "899")],
        "900",
        None,
    ))
}

/// The new cluster's list: `new-1`, at 252.
fn new_cluster() -> Reply {
    Reply::Page(list(&[pod("new-1", "247")], "252", None))
}

/// What a consumer sees of the old list, then of the relist: the difference, in key order.
const RELISTED_NEW: [&str; 7] = [
    "ADDED old-1 880",
    "ADDED old-2 899",
    r#"SYNCED "900" false"#,
    "ADDED new-1 247",
    "DELETED old-1 880",
    "DELETED old-2 899",
    r#"SYNCED "252" true"#,
];

/// The events a consumer subscribed from the start sees, until `until`, within 5 minutes.
async fn seen_until(reflector: &Reflector, until: &str) -> Vec<String> {
    let cursor = reflector.cache().subscribe();
    super::super::tests::events_within(&cursor, until, Duration::from_secs(300)).await
}

/// The URLs the script was asked for.
fn urls(fake: &Fake) -> Vec<String> {
    fake.sent().into_iter().map(|sent| sent.url).collect()
}

/// A probe's URL: one object, not older than `rv`.
fn is_probe(url: &str, rv: &str) -> bool {
    !url.contains("watch=true")
        && url.contains(&format!(
            "resourceVersion={rv}&resourceVersionMatch=NotOlderThan"
        ))
        && url.contains("limit=1")
}

#[tokio::test(start_paused = true)]
async fn a_resumed_watch_probes_first_and_a_server_behind_is_relisted_with_the_difference() {
    let (fake, reflector, recorder) = probing(vec![
        // The connection breaks: the cluster is recreated.
        Reply::Watch(vec![wait_ms(1_000)], End::Cut),
        too_large("900", "252"),
        new_cluster(),
        Reply::Watch(vec![line(event("ADDED", "new-2", "253"))], End::Open),
    ]);
    let mut expected = RELISTED_NEW.to_vec();
    // The broken connection is a failure like any other.
    expected.insert(3, "ERROR 0 true");
    expected.push("ADDED new-2 253");
    assert_eq!(seen_until(&reflector, "ADDED new-2 253").await, expected);
    let urls = urls(&fake);
    assert!(is_probe(&urls[2], "900"), "{urls:?}");
    assert!(
        !urls[3].contains("watch=true") && !urls[3].contains("resourceVersion"),
        "a relist from scratch: {urls:?}"
    );
    assert!(urls[4].contains("watch=true") && urls[4].contains("resourceVersion=252&"));
    let warning = message_with(&recorder, "is behind").expect("a warning");
    assert!(
        warning.starts_with("warn informer of /api/v1/pods on cluster 'c': the server's resourceVersion (252) is behind the 900 this informer reached"),
        "{warning}"
    );
    stop_after_relists(&reflector, 1);
}

#[tokio::test(start_paused = true)]
async fn a_silent_watch_probes_after_its_interval_and_relists_a_server_behind() {
    let (fake, reflector, _) = probing(vec![
        // Taken, and silent: a real API server sends nothing, bookmarks included, to a watch from
        // a resourceVersion it never reached.
        Reply::Watch(Vec::new(), End::Open),
        too_large("900", "252"),
        new_cluster(),
        Reply::Watch(Vec::new(), End::Open),
    ]);
    assert_eq!(
        seen_until(&reflector, r#"SYNCED "252" true"#).await,
        RELISTED_NEW
    );
    let sent = fake.sent();
    assert!(is_probe(&sent[2].url, "900"), "{:?}", urls(&fake));
    assert_eq!(
        sent[2].at - sent[1].at,
        Duration::from_secs(60),
        "probed once the watch was silent for the interval"
    );
    reflector.stop();
}

#[tokio::test(start_paused = true)]
async fn a_watch_that_hears_lines_is_not_probed_and_its_resumption_is_probed() {
    let bookmark = |rv: &str| {
        line(format!(
            r#"{{"type":"BOOKMARK","object":{{"metadata":{{"resourceVersion":"{rv}"}}}}}}"#
        ))
    };
    let (fake, reflector, recorder) = probing(vec![
        // A bookmark every 50 s for 150 s: never silent for 60 s.
        Reply::Watch(
            vec![
                wait_ms(50_000),
                bookmark("901"),
                wait_ms(50_000),
                bookmark("902"),
                wait_ms(50_000),
                bookmark("903"),
            ],
            End::Clean,
        ),
        // The resumed watch is probed first: the server is current.
        Reply::Page(list(&[], "950", None)),
        Reply::Watch(vec![line(event("ADDED", "c", "951"))], End::Open),
    ]);
    assert_eq!(
        seen_until(&reflector, "ADDED c 951").await,
        [
            "ADDED old-1 880",
            "ADDED old-2 899",
            r#"SYNCED "900" false"#,
            "ADDED c 951"
        ]
    );
    let sent = fake.sent();
    assert_eq!(sent.len(), 4, "{:?}", urls(&fake));
    assert!(is_probe(&sent[2].url, "903"), "the resumed watch's probe");
    assert!(
        sent[3].url.contains("resourceVersion=903&"),
        "watched as before"
    );
    assert_eq!(reflector.stats().snapshot().relists, 0);
    assert!(message_with(&recorder, "behind").is_none());
    reflector.stop();
}

#[tokio::test(start_paused = true)]
async fn a_probe_that_fails_otherwise_backs_off_and_probes_again() {
    let (fake, reflector, _) = probing(vec![
        Reply::Watch(vec![wait_ms(1_000)], End::Cut),
        Reply::Status(503, None),
        Reply::Page(list(&[], "905", None)),
        Reply::Watch(vec![line(event("ADDED", "c", "906"))], End::Open),
    ]);
    let seen = seen_until(&reflector, "ADDED c 906").await;
    assert!(seen.iter().any(|e| e.starts_with("ERROR")), "{seen:?}");
    let urls = urls(&fake);
    assert!(
        is_probe(&urls[2], "900") && is_probe(&urls[3], "900"),
        "{urls:?}"
    );
    stop_after_relists(&reflector, 0);
}

#[tokio::test(start_paused = true)]
async fn a_probe_answered_is_proof_of_life_and_a_watch_opened_is_not() {
    let (fake, reflector, _) = probing(vec![
        Reply::Watch(Vec::new(), End::Open),
        // The silent watch's probe: the server is current.
        Reply::Page(list(&[], "900", None)),
    ]);
    seen_until(&reflector, r#"SYNCED "900" false"#).await;
    let listed = reflector
        .cache()
        .health()
        .alive_at
        .expect("a list proves life");
    // The wall clock (`alive_at`'s) moves on; the paused one to the watch's opening.
    std::thread::sleep(Duration::from_millis(5));
    while fake.sent().len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        reflector.cache().health().alive_at,
        Some(listed),
        "a watch taken proves nothing"
    );
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(fake.sent().len(), 3, "{:?}", urls(&fake));
    let probed = reflector.cache().health().alive_at.expect("set");
    assert!(probed > listed, "the probe answered 200 proves life");
    stop_after_relists(&reflector, 0);
}

#[tokio::test(start_paused = true)]
async fn a_probe_that_never_answers_fails_after_its_bound_and_the_watch_goes_on() {
    let (fake, reflector, recorder) = probing(vec![
        Reply::Watch(Vec::new(), End::Open),
        // The script is spent: the silent watch's probe never answers.
    ]);
    seen_until(&reflector, r#"SYNCED "900" false"#).await;
    tokio::time::sleep(Duration::from_secs(135)).await;
    let sent = fake.sent();
    assert_eq!(sent.len(), 4, "{:?}", urls(&fake));
    assert!(is_probe(&sent[2].url, "900") && is_probe(&sent[3].url, "900"));
    assert_eq!(
        sent[3].at - sent[2].at,
        Duration::from_secs(60),
        "the first probe gave up after its 10 s, and the watch went on to the next minute's"
    );
    let notice = message_with(&recorder, "no answer to the probe").expect("a notice");
    assert!(notice.contains("the watch goes on"), "{notice}");
    stop_after_relists(&reflector, 0);
}
