//! Scripts of how a watch's end or a failure is followed: resumed at once or after a backoff
//! step, relisted after a 410, waited out as long as a 429 asks, retried with a new credential.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::engine::connect::CredentialFuture;

#[tokio::test(start_paused = true)]
async fn pages_then_a_watch_that_ends_cleanly_is_resumed_at_once_from_its_last_event() {
    let fake = Fake::new(vec![
        Reply::Page(list(&[pod("a", "1"), pod("b", "2")], "5", Some("t1"))),
        Reply::Page(list(&[pod("c", "3")], "5", None)),
        Reply::Watch(
            vec![wait_ms(500), line(event("MODIFIED", "a", "6"))],
            End::Clean,
        ),
        Reply::Watch(vec![line(event("DELETED", "b", "7"))], End::Open),
    ]);
    let (reflector, _, _) = run_script(&fake, InitialList::Paginated, bearer("t"));
    assert_eq!(
        events_seen(&reflector, "DELETED b 7").await,
        [
            "ADDED a 1",
            "ADDED b 2",
            "ADDED c 3",
            r#"SYNCED "5" false"#,
            "MODIFIED a 6",
            "DELETED b 7"
        ]
    );
    let sent = fake.sent();
    let urls: Vec<&str> = sent.iter().map(|s| s.url.as_str()).collect();
    assert_eq!(urls.len(), 4, "{urls:?}");
    assert!(urls[0].contains("limit=2") && !urls[0].contains("continue"));
    assert!(urls[1].contains("continue=t1"));
    assert!(urls[2].contains("watch=true") && urls[2].contains("resourceVersion=5&"));
    assert!(urls[2].contains("allowWatchBookmarks=true"));
    assert!(
        urls[3].contains("resourceVersion=6&"),
        "resumed at the last event"
    );
    // A clean end after traffic is no failure, however soon: the next watch follows at once.
    assert_eq!(sent[3].at, sent[2].at + Duration::from_millis(500));
    let stats = reflector.stats().snapshot();
    assert_eq!((stats.reconnects, stats.relists), (1, 0));
    reflector.stop();
}

/// Runs a paginated reflector on a script that lists `a` (at 5), meets `trouble`, then watches
/// `b` added (at 6), until its consumer saw `b`: after the list and before `b` it saw `error`
/// (the ERROR event of a trouble that is a failure) and nothing else. The script, the reflector
/// and its recorder.
async fn list_trouble_watch(
    trouble: Reply,
    error: Option<&str>,
    provider: Arc<dyn CredentialProvider>,
) -> (Fake, Reflector, Arc<Recorder>) {
    let fake = Fake::new(vec![
        Reply::Page(list(&[pod("a", "1")], "5", None)),
        trouble,
        Reply::Watch(vec![line(event("ADDED", "b", "6"))], End::Open),
    ]);
    let (reflector, recorder, _) = run_script(&fake, InitialList::Paginated, provider);
    let expected: Vec<&str> = ["ADDED a 1", r#"SYNCED "5" false"#]
        .into_iter()
        .chain(error)
        .chain(["ADDED b 6"])
        .collect();
    assert_eq!(events_seen(&reflector, "ADDED b 6").await, expected);
    (fake, reflector, recorder)
}

#[tokio::test(start_paused = true)]
async fn a_watch_that_ends_at_once_without_traffic_waits_a_backoff_step_without_an_error() {
    let (fake, reflector, _) =
        list_trouble_watch(Reply::Watch(Vec::new(), End::Clean), None, bearer("t")).await;
    let sent = fake.sent();
    assert!(sent[2].url.contains("resourceVersion=5&"));
    let pause = sent[2].at - sent[1].at;
    assert!(
        pause > Duration::ZERO && pause <= Duration::from_millis(200),
        "{pause:?}"
    );
    reflector.stop();
}

#[tokio::test(start_paused = true)]
async fn a_cut_watch_is_resumed_after_a_backoff_step_with_one_error() {
    let cut = Reply::Watch(vec![wait_ms(1000)], End::Cut);
    let (fake, reflector, recorder) =
        list_trouble_watch(cut, Some("ERROR 0 true"), bearer("t")).await;
    let sent = fake.sent();
    assert!(
        sent[2].url.contains("resourceVersion=5&"),
        "resumed, not relisted"
    );
    let pause = sent[2].at - sent[1].at - Duration::from_secs(1);
    // One step of the test policy (0.05 s to 0.2 s), with at least its floor.
    assert!(
        pause > Duration::ZERO && pause <= Duration::from_millis(200),
        "{pause:?}"
    );
    assert!(
        message_with(
            &recorder,
            "watch stream broke: connection reset by peer; retrying in"
        )
        .is_some()
    );
    reflector.stop();
}

#[tokio::test(start_paused = true)]
async fn an_in_stream_410_relists_and_hands_out_only_the_difference() {
    let fake = Fake::new(vec![
        Reply::Watch(
            vec![
                line(event("ADDED", "a", "1")),
                line(event("ADDED", "b", "2")),
                end_bookmark("3"),
                wait_ms(1000),
                line(r#"{"type":"ERROR","object":{"kind":"Status","code":410}}"#.into()),
            ],
            End::Open,
        ),
        Reply::Watch(
            vec![
                line(event("ADDED", "a", "1")),
                line(event("ADDED", "c", "9")),
                end_bookmark("10"),
            ],
            End::Open,
        ),
    ]);
    let (reflector, _, _) = run_script(&fake, InitialList::Auto, bearer("t"));
    assert_eq!(
        events_seen(&reflector, r#"SYNCED "10" true"#).await,
        RELISTED
    );
    assert_eq!(reflector.stats().snapshot().relists, 1);
    assert_eq!(reflector.cache().resource_version().as_deref(), Some("10"));
    let sent = fake.sent();
    assert!(
        sent.iter()
            .all(|s| s.url.contains("sendInitialEvents=true"))
    );
    // A 410 is no failure to back off from: the relist follows at once.
    assert_eq!(sent[1].at, sent[0].at + Duration::from_secs(1));
    reflector.stop();
}

#[tokio::test(start_paused = true)]
async fn a_410_answer_to_a_watch_relists_without_an_error() {
    let fake = Fake::new(vec![
        Reply::Page(list(&[pod("a", "1")], "5", None)),
        Reply::Status(410, None),
        Reply::Page(list(&[pod("a", "1"), pod("b", "7")], "8", None)),
        Reply::Watch(Vec::new(), End::Open),
    ]);
    let (reflector, recorder, _) = run_script(&fake, InitialList::Paginated, bearer("t"));
    assert_eq!(
        events_seen(&reflector, r#"SYNCED "8" true"#).await,
        [
            "ADDED a 1",
            r#"SYNCED "5" false"#,
            "ADDED b 7",
            r#"SYNCED "8" true"#
        ]
    );
    let sent = fake.sent();
    assert!(sent[3].url.contains("resourceVersion=8&"));
    assert!(message_with(&recorder, "resourceVersion expired (410); relisting").is_some());
    assert_eq!(reflector.stats().snapshot().relists, 1);
    reflector.stop();
}

#[tokio::test(start_paused = true)]
async fn a_429_is_waited_out_for_as_long_as_it_asks() {
    let busy = Reply::Status(429, Some(3));
    let (fake, reflector, _) = list_trouble_watch(busy, Some("ERROR 429 true"), bearer("t")).await;
    let sent = fake.sent();
    // The test policy's steps are at most 0.2 s: the 3 s are the server's.
    assert_eq!(sent[2].at - sent[1].at, Duration::from_secs(3));
    reflector.stop();
}

/// A provider that answers `t1`, `t2`, … and counts the questions.
#[derive(Default)]
struct Rotating(AtomicUsize);

impl CredentialProvider for Rotating {
    fn credential(&self) -> CredentialFuture {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        Box::pin(async move { Ok(Credential::Bearer(format!("t{n}"))) })
    }

    fn refreshes(&self) -> bool {
        true
    }
}

#[tokio::test(start_paused = true)]
async fn a_401_asks_for_a_new_credential_before_the_next_request() {
    let provider = Arc::new(Rotating::default());
    let unauthorized = Reply::Status(401, None);
    let (fake, reflector, recorder) =
        list_trouble_watch(unauthorized, Some("ERROR 401 true"), provider.clone()).await;
    let bearers: Vec<Option<String>> = fake.sent().into_iter().map(|s| s.bearer).collect();
    let expected = ["t1", "t1", "t2"].map(|t| Some(t.to_owned()));
    assert_eq!(
        bearers, expected,
        "the credential before the 401 is not used again"
    );
    assert_eq!(provider.0.load(Ordering::SeqCst), 2);
    assert_eq!(reflector.stats().snapshot().credential_refreshes, 1);
    assert!(messages(&recorder).iter().all(|m| !m.contains("t1")));
    reflector.stop();
}
