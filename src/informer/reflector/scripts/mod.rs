//! The state machine against a scripted [`ListWatch`] on tokio's paused clock: every
//! transition a deterministic test — no sockets, no wall time. A script is the answers to the
//! reflector's requests in order; each request is logged with the moment (on the paused
//! clock) it was made and the bearer token it carried. Once the script is spent, requests
//! never answer, so the reflector stays where it is until the test stops it.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;

use super::tests::{Recorder, config, event, events_until, list, pod};
use tokio::time::Instant;

use super::*;
use crate::auth::Credential;
use crate::error::Error;
use crate::informer::connect::{CredentialFuture, StaticCredential};
use crate::informer::recovery::RECOVERY_JITTER;

/// One answer of the script.
enum Reply {
    /// A non-2xx answer, with the pause it asks for (seconds).
    Status(u16, Option<u64>),
    /// A list page's body.
    Page(String),
    /// A watch body: lines and pauses, then how it ends.
    Watch(Vec<Say>, End),
}

/// One piece of a watch body.
enum Say {
    Line(String),
    /// Nothing for this long (the consumer catches up meanwhile).
    Wait(Duration),
}

/// How a watch body ends.
enum End {
    /// The server's `timeoutSeconds`.
    Clean,
    /// The connection breaks.
    Cut,
    /// It stays open.
    Open,
}

/// One request as the script saw it.
#[derive(Debug, Clone)]
struct Sent {
    /// When, since the script started.
    at: Duration,
    url: String,
    bearer: Option<String>,
    accept: Option<String>,
}

struct Script {
    replies: Mutex<VecDeque<Reply>>,
    sent: Mutex<Vec<Sent>>,
    start: Instant,
}

#[derive(Clone)]
struct Fake(Arc<Script>);

impl Fake {
    fn new(replies: Vec<Reply>) -> Self {
        Self(Arc::new(Script {
            replies: Mutex::new(replies.into()),
            sent: Mutex::default(),
            start: Instant::now(),
        }))
    }

    fn sent(&self) -> Vec<Sent> {
        self.0.sent.lock().unwrap().clone()
    }

    /// Logs `request` and takes its answer; a spent script never answers.
    async fn answer(&self, request: &Request<'_>) -> Reply {
        self.0.sent.lock().unwrap().push(Sent {
            at: self.0.start.elapsed(),
            url: request.get.url.clone(),
            bearer: request.get.bearer.clone(),
            accept: request.get.accept.clone(),
        });
        let reply = self.0.replies.lock().unwrap().pop_front();
        match reply {
            Some(reply) => reply,
            None => std::future::pending().await,
        }
    }
}

fn status_fault(status: u16, retry_after: Option<u64>) -> Fault {
    Fault::Status {
        status,
        retry_after: retry_after.map(Duration::from_secs),
        detail: format!(r#"{{"kind":"Status","code":{status}}}"#),
    }
}

impl ListWatch for Fake {
    type Lines = FakeLines;

    async fn list(&self, request: Request<'_>, max_bytes: usize) -> Result<Vec<u8>, Fault> {
        match self.answer(&request).await {
            // As the pool does: no more than the maximum is read.
            Reply::Page(body) if body.len() > max_bytes => {
                Err(Fault::Transport(Error::TooLarge { limit: max_bytes }))
            }
            Reply::Page(body) => Ok(body.into_bytes()),
            Reply::Status(status, retry_after) => Err(status_fault(status, retry_after)),
            Reply::Watch(..) => panic!("the script answers a list with a watch: {request:?}"),
        }
    }

    async fn watch(
        &self,
        request: Request<'_>,
        _max_line_bytes: usize,
    ) -> Result<FakeLines, Fault> {
        match self.answer(&request).await {
            Reply::Watch(says, end) => Ok(FakeLines {
                says: says.into(),
                end,
            }),
            Reply::Status(status, retry_after) => Err(status_fault(status, retry_after)),
            Reply::Page(_) => panic!("the script answers a watch with a page: {request:?}"),
        }
    }
}

struct FakeLines {
    says: VecDeque<Say>,
    end: End,
}

impl WatchLines for FakeLines {
    async fn next(&mut self) -> Result<Option<Bytes>, Error> {
        loop {
            match self.says.pop_front() {
                Some(Say::Line(line)) => return Ok(Some(Bytes::from(line))),
                Some(Say::Wait(pause)) => tokio::time::sleep(pause).await,
                None => break,
            }
        }
        match self.end {
            End::Clean => Ok(None),
            End::Cut => Err(Error::Body("connection reset by peer".into())),
            End::Open => std::future::pending().await,
        }
    }
}

fn line(text: String) -> Say {
    Say::Line(text)
}

fn wait_ms(ms: u64) -> Say {
    Say::Wait(Duration::from_millis(ms))
}

fn end_bookmark(rv: &str) -> Say {
    Say::Line(format!(
        r#"{{"type":"BOOKMARK","object":{{"metadata":{{"resourceVersion":"{rv}","annotations":{{"k8s.io/initial-events-end":"true"}}}}}}}}"#
    ))
}

/// A reflector running `script` with `initial_list`; its recorder; its list memory.
fn run_script(
    fake: &Fake,
    initial_list: InitialList,
    provider: Arc<dyn CredentialProvider>,
) -> (Reflector, Arc<Recorder>, Arc<ListMemory>) {
    run_config(fake, config("http://cluster.test", initial_list), provider)
}

/// As [`run_script`], with a configuration of the test's own.
fn run_config(
    fake: &Fake,
    config: ReflectorConfig,
    provider: Arc<dyn CredentialProvider>,
) -> (Reflector, Arc<Recorder>, Arc<ListMemory>) {
    run_shared(fake, config, provider, Arc::new(ListMemory::default()))
}

/// As [`run_config`], with the watcher's `memory` (shared by the informers of one watcher).
fn run_shared(
    fake: &Fake,
    config: ReflectorConfig,
    provider: Arc<dyn CredentialProvider>,
    memory: Arc<ListMemory>,
) -> (Reflector, Arc<Recorder>, Arc<ListMemory>) {
    let recorder = Arc::new(Recorder::default());
    let parts = Parts {
        provider,
        reporter: recorder.clone(),
        memory: memory.clone(),
        jitter: Jitter::new(7),
    };
    let reflector = Reflector::start_with(
        config,
        parts,
        fake.clone(),
        &tokio::runtime::Handle::current(),
    );
    (reflector, recorder, memory)
}

fn bearer(token: &str) -> Arc<dyn CredentialProvider> {
    Arc::new(StaticCredential(Credential::Bearer(token.into())))
}

fn messages(recorder: &Recorder) -> Vec<String> {
    recorder.messages.lock().unwrap().clone()
}

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
    let cursor = reflector.cache().subscribe();
    assert_eq!(
        events_until(&cursor, "DELETED b 7").await,
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

#[tokio::test(start_paused = true)]
async fn a_watch_that_ends_at_once_without_traffic_waits_a_backoff_step_without_an_error() {
    let fake = Fake::new(vec![
        Reply::Page(list(&[pod("a", "1")], "5", None)),
        Reply::Watch(Vec::new(), End::Clean),
        Reply::Watch(vec![line(event("ADDED", "b", "6"))], End::Open),
    ]);
    let (reflector, _, _) = run_script(&fake, InitialList::Paginated, bearer("t"));
    let cursor = reflector.cache().subscribe();
    assert_eq!(
        events_until(&cursor, "ADDED b 6").await,
        ["ADDED a 1", r#"SYNCED "5" false"#, "ADDED b 6"]
    );
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
    let fake = Fake::new(vec![
        Reply::Page(list(&[pod("a", "1")], "5", None)),
        Reply::Watch(vec![wait_ms(1000)], End::Cut),
        Reply::Watch(vec![line(event("ADDED", "b", "6"))], End::Open),
    ]);
    let (reflector, recorder, _) = run_script(&fake, InitialList::Paginated, bearer("t"));
    let cursor = reflector.cache().subscribe();
    assert_eq!(
        events_until(&cursor, "ADDED b 6").await,
        [
            "ADDED a 1",
            r#"SYNCED "5" false"#,
            "ERROR 0 true",
            "ADDED b 6"
        ]
    );
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
        messages(&recorder)
            .iter()
            .any(|m| m.contains("watch stream broke: connection reset by peer; retrying in"))
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
    let cursor = reflector.cache().subscribe();
    assert_eq!(
        events_until(&cursor, r#"SYNCED "10" true"#).await,
        [
            "ADDED a 1",
            "ADDED b 2",
            r#"SYNCED "3" false"#,
            "DELETED b 2",
            "ADDED c 9",
            r#"SYNCED "10" true"#
        ]
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
    let cursor = reflector.cache().subscribe();
    assert_eq!(
        events_until(&cursor, r#"SYNCED "8" true"#).await,
        [
            "ADDED a 1",
            r#"SYNCED "5" false"#,
            "ADDED b 7",
            r#"SYNCED "8" true"#
        ]
    );
    let sent = fake.sent();
    assert!(sent[3].url.contains("resourceVersion=8&"));
    assert!(
        messages(&recorder)
            .iter()
            .any(|m| m.contains("resourceVersion expired (410); relisting"))
    );
    assert_eq!(reflector.stats().snapshot().relists, 1);
    reflector.stop();
}

#[tokio::test(start_paused = true)]
async fn a_429_is_waited_out_for_as_long_as_it_asks() {
    let fake = Fake::new(vec![
        Reply::Page(list(&[pod("a", "1")], "5", None)),
        Reply::Status(429, Some(3)),
        Reply::Watch(vec![line(event("ADDED", "b", "6"))], End::Open),
    ]);
    let (reflector, _, _) = run_script(&fake, InitialList::Paginated, bearer("t"));
    let cursor = reflector.cache().subscribe();
    assert_eq!(
        events_until(&cursor, "ADDED b 6").await,
        [
            "ADDED a 1",
            r#"SYNCED "5" false"#,
            "ERROR 429 true",
            "ADDED b 6"
        ]
    );
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
    let fake = Fake::new(vec![
        Reply::Page(list(&[pod("a", "1")], "5", None)),
        Reply::Status(401, None),
        Reply::Watch(vec![line(event("ADDED", "b", "6"))], End::Open),
    ]);
    let provider = Arc::new(Rotating::default());
    let (reflector, recorder, _) = run_script(&fake, InitialList::Paginated, provider.clone());
    let cursor = reflector.cache().subscribe();
    assert_eq!(
        events_until(&cursor, "ADDED b 6").await,
        [
            "ADDED a 1",
            r#"SYNCED "5" false"#,
            "ERROR 401 true",
            "ADDED b 6"
        ]
    );
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

#[tokio::test(start_paused = true)]
async fn a_streaming_list_refused_falls_back_to_pages_and_is_remembered() {
    let fake = Fake::new(vec![
        Reply::Status(422, None),
        Reply::Page(list(&[pod("a", "1")], "4", None)),
        Reply::Watch(Vec::new(), End::Open),
    ]);
    let (reflector, recorder, memory) = run_script(&fake, InitialList::Auto, bearer("t"));
    let cursor = reflector.cache().subscribe();
    assert_eq!(
        events_until(&cursor, r#"SYNCED "4" false"#).await,
        ["ADDED a 1", r#"SYNCED "4" false"#]
    );
    let sent = fake.sent();
    assert!(sent[0].url.contains("sendInitialEvents=true"));
    assert!(sent[1].url.contains("limit=2") && !sent[1].url.contains("watch"));
    assert_eq!(sent[1].at, sent[0].at, "no backoff before the fallback");
    assert!(memory.is_paginated("http://cluster.test"));
    assert!(
        messages(&recorder)
            .iter()
            .any(|m| m.contains("streaming lists are not served (HTTP 422"))
    );
    reflector.stop();
}

#[tokio::test(start_paused = true)]
async fn a_406_to_a_metadata_only_streaming_list_asks_for_plain_json_and_still_streams() {
    let fake = Fake::new(vec![
        Reply::Status(406, None),
        Reply::Watch(
            vec![line(event("ADDED", "a", "1")), end_bookmark("4")],
            End::Open,
        ),
        Reply::Watch(Vec::new(), End::Open),
    ]);
    let mut config = config("http://cluster.test", InitialList::Auto);
    config.projection = Some(Projection::metadata_only::<&str>(&[]));
    let (reflector, recorder, memory) = run_config(&fake, config, bearer("t"));
    let cursor = reflector.cache().subscribe();
    assert_eq!(
        events_until(&cursor, r#"SYNCED "4" false"#).await,
        ["ERROR 406 true", "ADDED a 1", r#"SYNCED "4" false"#]
    );
    let sent = fake.sent();
    let accept = sent[0].accept.as_deref().unwrap_or_default();
    assert!(accept.contains("as=PartialObjectMetadata;"), "{accept}");
    assert!(
        sent[1].url.contains("sendInitialEvents=true"),
        "streamed again"
    );
    assert_eq!(sent[1].accept, None, "plain JSON from then on");
    assert!(
        !memory.is_paginated("http://cluster.test"),
        "a refused Accept header says nothing of streaming lists"
    );
    let refused: Vec<String> = messages(&recorder)
        .into_iter()
        .filter(|m| m.contains("406 Not Acceptable"))
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(
        reflector
            .cache()
            .get("ns", "a")
            .map(|o| String::from_utf8_lossy(&o.text())
                .contains(r#""kind":"PartialObjectMetadata""#)),
        Some(true),
        "cut down here"
    );
    reflector.stop();
}

#[tokio::test(start_paused = true)]
async fn a_change_inside_a_streaming_list_falls_back_to_pages() {
    let fake = Fake::new(vec![
        Reply::Watch(
            vec![
                line(event("ADDED", "a", "1")),
                line(event("MODIFIED", "a", "2")),
            ],
            End::Open,
        ),
        Reply::Page(list(&[pod("a", "2")], "4", None)),
        Reply::Watch(Vec::new(), End::Open),
    ]);
    let (reflector, _, memory) = run_script(&fake, InitialList::Auto, bearer("t"));
    let cursor = reflector.cache().subscribe();
    assert_eq!(
        events_until(&cursor, r#"SYNCED "4" false"#).await,
        ["ADDED a 2", r#"SYNCED "4" false"#],
        "nothing of the abandoned streaming list reaches the cache"
    );
    assert!(memory.is_paginated("http://cluster.test"));
    assert!(fake.sent()[2].url.contains("resourceVersion=4&"));
    reflector.stop();
}

#[tokio::test(start_paused = true)]
async fn an_expired_continue_token_restarts_the_list_without_an_error() {
    let fake = Fake::new(vec![
        Reply::Page(list(&[pod("a", "1"), pod("b", "2")], "5", Some("t1"))),
        Reply::Status(410, None),
        Reply::Page(list(&[pod("a", "1"), pod("b", "2")], "9", Some("t2"))),
        Reply::Page(list(&[pod("c", "8")], "9", None)),
        Reply::Watch(Vec::new(), End::Open),
    ]);
    let (reflector, recorder, _) = run_script(&fake, InitialList::Paginated, bearer("t"));
    let cursor = reflector.cache().subscribe();
    assert_eq!(
        events_until(&cursor, r#"SYNCED "9" false"#).await,
        ["ADDED a 1", "ADDED b 2", "ADDED c 8", r#"SYNCED "9" false"#]
    );
    let sent = fake.sent();
    let continues: Vec<bool> = sent[..4]
        .iter()
        .map(|s| s.url.contains("continue="))
        .collect();
    assert_eq!(continues, [false, true, false, true]);
    assert!(sent[3].url.contains("continue=t2"));
    assert_eq!(sent[2].at, sent[1].at, "restarted at once");
    assert!(
        messages(&recorder)
            .iter()
            .any(|m| m.contains("continue token expired"))
    );
    assert_eq!(reflector.stats().snapshot().relists, 0);
    reflector.stop();
}

#[test]
fn a_page_may_take_2_mib_an_object_and_1_mib_besides() {
    assert_eq!(max_page_bytes(1), 3 << 20);
    assert_eq!(max_page_bytes(500), 1001 << 20);
    assert_eq!(
        max_page_bytes(u32::MAX),
        (u32::MAX as usize) * (2 << 20) + (1 << 20)
    );
}

#[tokio::test(start_paused = true)]
async fn a_page_past_the_bound_drops_the_list_with_an_error_naming_it_and_lists_again() {
    // Page size 2: at most 5 MiB.
    let huge = list(&[pod("a", "1"), "9".repeat(5 << 20)], "5", None);
    let fake = Fake::new(vec![
        Reply::Page(huge),
        Reply::Page(list(&[pod("a", "1")], "6", None)),
        Reply::Watch(Vec::new(), End::Open),
    ]);
    let (reflector, recorder, _) = run_script(&fake, InitialList::Paginated, bearer("t"));
    let cursor = reflector.cache().subscribe();
    assert_eq!(
        events_until(&cursor, r#"SYNCED "6" false"#).await,
        ["ERROR 0 true", "ADDED a 1", r#"SYNCED "6" false"#]
    );
    let sent = fake.sent();
    assert!(sent[1].url.contains("limit=2") && !sent[1].url.contains("continue"));
    assert!(sent[1].at > sent[0].at, "after a backoff step");
    let warning = messages(&recorder)
        .into_iter()
        .find(|m| m.contains("list page"))
        .expect("a warning");
    assert!(
        warning.contains("went past 5242880 bytes (5 MiB), more than 2 objects of at most 2 MiB"),
        "{warning}"
    );
    assert!(warning.contains("retrying in"), "{warning}");
    reflector.stop();
}

/// A script that fails once with `status` (asking for `retry_after` seconds), then lists and
/// watches.
fn failing_once(status: u16, retry_after: Option<u64>) -> Fake {
    Fake::new(vec![
        Reply::Status(status, retry_after),
        Reply::Page(list(&[pod("a", "1")], "5", None)),
        Reply::Watch(Vec::new(), End::Open),
    ])
}

/// An informer of `origin` that backs off 3 to 30 s after a failure (the floor is a tenth of
/// `initialSeconds`), so a retry sooner than 3 s was woken.
fn slow_config(origin: &str) -> ReflectorConfig {
    let mut config = config(origin, InitialList::Paginated);
    config.backoff = BackoffPolicy::new(30.0, 30.0).unwrap();
    config
}

/// The wait the last "retrying in" warning announced.
fn announced_wait(recorder: &Recorder) -> Duration {
    let messages = messages(recorder);
    let text = messages
        .iter()
        .rev()
        .find_map(|m| m.split("retrying in ").nth(1))
        .expect("a retry warning");
    let seconds: f64 = text.trim_end_matches(" s").parse().unwrap();
    Duration::from_secs_f64(seconds)
}

/// Runs `slow` (of `slow_origin`, retrying after 3 to 30 s) and a quick informer of
/// `http://cluster.test` (0.05 to 0.2 s) on one watcher, both failing at once; once both had
/// time to recover on their own, the moments of the quick one's successful list and of the
/// slow one's retry, and the wait the slow one announced.
async fn recover_beside(slow: &Fake, slow_origin: &str) -> (Duration, Duration, Duration) {
    let memory = Arc::new(ListMemory::default());
    let quick = failing_once(503, None);
    let (a, slow_recorder, _) =
        run_shared(slow, slow_config(slow_origin), bearer("t"), memory.clone());
    let (b, _, _) = run_shared(
        &quick,
        config("http://cluster.test", InitialList::Paginated),
        bearer("t"),
        memory,
    );
    tokio::time::sleep(Duration::from_secs(40)).await;
    let (slow_sent, quick_sent) = (slow.sent(), quick.sent());
    assert_eq!(slow_sent.len(), 3, "failed, listed, watched: {slow_sent:?}");
    assert_eq!(
        quick_sent.len(),
        3,
        "failed, listed, watched: {quick_sent:?}"
    );
    let recovered = quick_sent[1].at;
    assert!(recovered <= Duration::from_millis(200), "{recovered:?}");
    a.stop();
    b.stop();
    (recovered, slow_sent[1].at, announced_wait(&slow_recorder))
}

#[tokio::test(start_paused = true)]
async fn a_recovery_of_the_cluster_wakes_its_other_informers_backoff_within_the_jitter() {
    let slow = failing_once(503, None);
    let (recovered, retried, wait) = recover_beside(&slow, "http://cluster.test").await;
    assert!(wait >= Duration::from_secs(3), "{wait:?}");
    assert!(
        retried >= recovered && retried <= recovered + RECOVERY_JITTER,
        "the cluster recovered at {recovered:?}, the other informer retried at {retried:?} \
         (its own backoff: {wait:?})"
    );
}

#[tokio::test(start_paused = true)]
async fn a_woken_informer_still_waits_for_the_retry_after_its_server_asked_for() {
    let slow = failing_once(429, Some(2));
    let (recovered, retried, wait) = recover_beside(&slow, "http://cluster.test").await;
    assert!(wait >= Duration::from_secs(3), "{wait:?}");
    assert!(recovered + RECOVERY_JITTER < Duration::from_secs(2));
    assert!(
        // Below 3 s: woken, since its own backoff is at least 3 s.
        retried >= Duration::from_secs(2) && retried < Duration::from_secs(3),
        "Retry-After 2 s, woken at {recovered:?}, retried at {retried:?} (its backoff: {wait:?})"
    );
}

#[tokio::test(start_paused = true)]
async fn a_recovery_of_another_cluster_does_not_wake_an_informer() {
    let slow = failing_once(503, None);
    let (_, retried, wait) = recover_beside(&slow, "http://other.test").await;
    assert!(wait >= Duration::from_secs(3), "{wait:?}");
    // Its own backoff, to the warning's tenth of a second.
    assert!(
        retried + Duration::from_millis(50) >= wait,
        "retried at {retried:?}, its backoff {wait:?}"
    );
}
