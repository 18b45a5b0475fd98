//! The state machine against small in-process HTTP/1.1 servers with scripted answers.

use std::sync::Mutex;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use tokio::time::Instant;

use super::*;
use std::time::Duration;

use crate::auth::{ClusterSpec, Credential};
use crate::engine::backoff::{BackoffPolicy, Jitter};
use crate::engine::connect::Cluster;
use crate::engine::connect::StaticCredential;
use crate::engine::script::{event, pod};
use crate::engine::*;
use crate::informer::fanout::Cursor;

/// What the test server answers to one request.
enum Reply {
    /// A whole response.
    Full { status: u16, body: String },
    /// A chunked watch body: these lines, then what arrives on the channel until it closes.
    Stream(Vec<String>, Option<mpsc::UnboundedReceiver<String>>),
}

type Handler = Box<dyn FnMut(&str) -> Reply + Send>;

/// A loopback server answering each request (by its path and query) with `handler`; the
/// requests are logged.
async fn server(handler: Handler) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let log = Arc::new(Mutex::new(Vec::new()));
    let handler = Arc::new(Mutex::new(handler));
    let task_log = log.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let handler = handler.clone();
            let log = task_log.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&head).into_owned();
                let target = text.split(' ').nth(1).unwrap_or("").to_owned();
                log.lock().unwrap().push(target.clone());
                let reply = (handler.lock().unwrap())(&target);
                match reply {
                    Reply::Full { status, body } => {
                        let response = format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n\
                             content-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = socket.write_all(response.as_bytes()).await;
                    }
                    Reply::Stream(lines, rx) => {
                        let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                                    transfer-encoding: chunked\r\nconnection: close\r\n\r\n";
                        let _ = socket.write_all(head.as_bytes()).await;
                        let chunk = |line: &str| format!("{:x}\r\n{line}\n\r\n", line.len() + 1);
                        for line in lines {
                            let _ = socket.write_all(chunk(&line).as_bytes()).await;
                        }
                        if let Some(mut rx) = rx {
                            while let Some(line) = rx.recv().await {
                                let _ = socket.write_all(chunk(&line).as_bytes()).await;
                            }
                        }
                        let _ = socket.write_all(b"0\r\n\r\n").await;
                    }
                }
                let _ = socket.shutdown().await;
            });
        }
    });
    (origin, log)
}

pub(super) fn list(items: &[String], rv: &str, token: Option<&str>) -> String {
    let token = token.map_or(String::new(), |t| format!(r#","continue":"{t}""#));
    format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}"{token}}},"items":[{}]}}"#,
        items.join(",")
    )
}

#[derive(Default)]
pub(super) struct Recorder {
    pub(super) messages: Mutex<Vec<String>>,
}

impl Reporter for Recorder {
    fn warn(&self, message: &str) {
        self.messages
            .lock()
            .unwrap()
            .push(format!("warn {message}"));
    }
    fn info(&self, message: &str) {
        self.messages
            .lock()
            .unwrap()
            .push(format!("info {message}"));
    }
    fn synced(&self) {
        self.messages.lock().unwrap().push("synced".into());
    }
    fn ended(&self) {
        self.messages.lock().unwrap().push("ended".into());
    }
}

pub(super) fn config(origin: &str, initial_list: InitialList) -> RunConfig {
    RunConfig {
        cluster: Cluster {
            spec: ClusterSpec {
                name: "c".into(),
                url: origin.into(),
                ..ClusterSpec::default()
            },
            ..Cluster::default()
        },
        resource_path: "/api/v1/pods".into(),
        label_selector: None,
        field_selector: None,
        page_size: 2,
        initial_list,
        backoff: BackoffPolicy::new(0.05, 0.2).unwrap(),
        idle_timeout: None,
        projection: None,
        credential_ttl: Duration::from_secs(300),
        max_line_bytes: 1 << 20,
        watch_timeout: Duration::from_secs(300),
        pack: true,
        probe: None,
    }
}

fn start(config: RunConfig, recorder: Arc<Recorder>) -> (Reflector, Arc<ListMemory>) {
    let memory = Arc::new(ListMemory::default());
    let reflector = Reflector::start(
        config,
        Arc::new(StaticCredential(Credential::Bearer("sekret-token".into()))),
        recorder,
        memory.clone(),
        Arc::new(ConnectionPool::default()),
        &tokio::runtime::Handle::current(),
    );
    (reflector, memory)
}

/// Events of `cursor` as "TYPE name rv" (SYNCED: "SYNCED rv relist"; ERROR: "ERROR status
/// retrying") until `until` has been seen.
/// What a consumer sees of the relist scenario both the loopback test and the script run: a
/// and b listed at 3, then a 410, and the relist at 10 finds b gone and c new.
pub(super) const RELISTED: [&str; 6] = [
    "ADDED a 1",
    "ADDED b 2",
    r#"SYNCED "3" false"#,
    "DELETED b 2",
    "ADDED c 9",
    r#"SYNCED "10" true"#,
];

pub(super) async fn events_until(cursor: &Cursor, until: &str) -> Vec<String> {
    events_within(cursor, until, Duration::from_secs(10)).await
}

/// The events `cursor` takes until one reads `until`, which must come `within` this long.
pub(super) async fn events_within(cursor: &Cursor, until: &str, within: Duration) -> Vec<String> {
    let cancel = CancellationToken::new();
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    while !out.iter().any(|e: &String| e == until) {
        let batch = tokio::time::timeout_at(deadline, cursor.next(&cancel))
            .await
            .unwrap_or_else(|_| panic!("no {until:?} in {out:?}"));
        if !batch.events.is_empty() {
            let parsed: Vec<serde_json::Value> = serde_json::from_slice(&batch.events).unwrap();
            for e in parsed {
                out.push(match e["type"].as_str().unwrap() {
                    "SYNCED" => format!("SYNCED {} {}", e["resourceVersion"], e["relist"]),
                    "ERROR" => format!("ERROR {} {}", e["error"]["statusCode"], e["retrying"]),
                    t => format!(
                        "{t} {} {}",
                        e["object"]["metadata"]["name"].as_str().unwrap(),
                        e["resourceVersion"].as_str().unwrap()
                    ),
                });
            }
        }
        if batch.done {
            out.push("done".into());
            break;
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_then_a_watch_resumed_from_the_last_event_after_a_clean_end() {
    // The first watch sends its change once the consumer has its SYNCED (a change that comes
    // earlier coalesces into the pending ADDED), then ends cleanly.
    let (first_tx, first_rx) = mpsc::unbounded_channel();
    let mut first_rx = Some(first_rx);
    let (tx, rx) = mpsc::unbounded_channel();
    let mut rx = Some(rx);
    let (origin, log) = server(Box::new(move |target| {
        if target.contains("continue=t1") {
            Reply::Full {
                status: 200,
                body: list(&[pod("c", "3")], "5", None),
            }
        } else if target.contains("limit=2") {
            Reply::Full {
                status: 200,
                body: list(&[pod("a", "1"), pod("b", "2")], "5", Some("t1")),
            }
        } else if target.contains("resourceVersion=5&") {
            // The first watch: one change, then a clean end.
            Reply::Stream(Vec::new(), first_rx.take())
        } else {
            Reply::Stream(Vec::new(), rx.take())
        }
    }))
    .await;
    let recorder = Arc::new(Recorder::default());
    let (reflector, _) = start(config(&origin, InitialList::Paginated), recorder.clone());
    let cursor = reflector.cache().subscribe();
    let seen = events_until(&cursor, r#"SYNCED "5" false"#).await;
    assert_eq!(
        seen,
        ["ADDED a 1", "ADDED b 2", "ADDED c 3", r#"SYNCED "5" false"#]
    );
    first_tx.send(event("MODIFIED", "a", "6")).unwrap();
    drop(first_tx);
    assert_eq!(
        events_until(&cursor, "MODIFIED a 6").await,
        ["MODIFIED a 6"]
    );
    tx.send(event("DELETED", "b", "7")).unwrap();
    assert_eq!(events_until(&cursor, "DELETED b 7").await, ["DELETED b 7"]);
    let log = log.lock().unwrap().clone();
    assert!(
        log[3].contains("resourceVersion=6"),
        "the resumed watch starts at the last event: {log:?}"
    );
    assert!(log[2].contains("allowWatchBookmarks=true"));
    let text = serde_json::to_string(&reflector.stats().snapshot()).unwrap();
    assert!(text.contains(r#""reconnects":1"#), "{text}");
    reflector.stop();
    assert!(
        events_until(&cursor, "done")
            .await
            .ends_with(&["done".to_owned()])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_list_refused_with_422_falls_back_to_pages_and_is_remembered() {
    let (origin, log) = server(Box::new(move |target| {
        if target.contains("sendInitialEvents") {
            Reply::Full {
                status: 422,
                body: r#"{"kind":"Status","code":422}"#.into(),
            }
        } else if target.contains("limit=") {
            Reply::Full {
                status: 200,
                body: list(&[pod("a", "1")], "4", None),
            }
        } else {
            Reply::Stream(Vec::new(), None)
        }
    }))
    .await;
    let recorder = Arc::new(Recorder::default());
    let (reflector, memory) = start(config(&origin, InitialList::Auto), recorder.clone());
    let cursor = reflector.cache().subscribe();
    let seen = events_until(&cursor, r#"SYNCED "4" false"#).await;
    assert_eq!(seen, ["ADDED a 1", r#"SYNCED "4" false"#]);
    assert!(memory.is_paginated(&origin));
    assert!(log.lock().unwrap()[0].contains("sendInitialEvents=true"));
    assert!(
        recorder
            .messages
            .lock()
            .unwrap()
            .iter()
            .any(|m| m.contains("listing in pages")),
        "the fallback is noted"
    );
    reflector.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_list_then_an_in_stream_410_relists_with_only_the_difference() {
    let mut lists = 0;
    let (origin, _log) = server(Box::new(move |target| {
        if target.contains("sendInitialEvents") {
            lists += 1;
            let end = r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"RV","annotations":{"k8s.io/initial-events-end":"true"}}}}"#;
            // A streaming list of `a` and of `other` added at `rv`, ending at `end_rv`, then
            // what `rest` sends.
            let listed = |other: &str, rv: &str, end_rv: &str, rest| {
                let lines = vec![
                    event("ADDED", "a", "1"),
                    event("ADDED", other, rv),
                    end.replace("RV", end_rv),
                ];
                Reply::Stream(lines, Some(rest))
            };
            if lists == 1 {
                // The 410 comes once the consumer has taken the list (else, being behind, it
                // would rightly see b's ADDED and DELETED coalesce to nothing).
                let (tx, rx) = mpsc::unbounded_channel();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    let _ = tx.send(r#"{"type":"ERROR","object":{"kind":"Status","code":410}}"#.into());
                });
                listed("b", "2", "3", rx)
            } else {
                let (_tx, rx) = mpsc::unbounded_channel();
                std::mem::forget(_tx);
                listed("c", "9", "10", rx)
            }
        } else {
            Reply::Full {
                status: 500,
                body: "{}".into(),
            }
        }
    }))
    .await;
    let recorder = Arc::new(Recorder::default());
    let (reflector, _) = start(config(&origin, InitialList::Auto), recorder.clone());
    let cursor = reflector.cache().subscribe();
    let seen = events_until(&cursor, r#"SYNCED "10" true"#).await;
    assert_eq!(seen, RELISTED);
    assert_eq!(reflector.stats().snapshot().relists, 1);
    // `Cache::replace` hands SYNCED to the consumers before it records the resourceVersion,
    // so a consumer can see SYNCED a moment before the cache says "10".
    let deadline = Instant::now() + Duration::from_secs(2);
    while reflector.cache().resource_version().as_deref() != Some("10") && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(reflector.cache().resource_version().as_deref(), Some("10"));
    reflector.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_failures_are_retried_with_an_error_each_and_422_ends_everything() {
    let mut requests = 0;
    let (origin, _log) = server(Box::new(move |_| {
        requests += 1;
        match requests {
            1 => Reply::Full {
                status: 503,
                body: r#"{"kind":"Status","code":503,"message":"sekret-token busy"}"#.into(),
            },
            _ => Reply::Full {
                status: 422,
                body: r#"{"kind":"Status","code":422}"#.into(),
            },
        }
    }))
    .await;
    let recorder = Arc::new(Recorder::default());
    let mut config = config(&origin, InitialList::Paginated);
    // Long enough a pause for the consumer to take the first ERROR before the second.
    config.backoff = BackoffPolicy::new(0.5, 0.5).unwrap();
    let (reflector, _) = start(config, recorder.clone());
    let cursor = reflector.cache().subscribe();
    let seen = events_until(&cursor, "done").await;
    assert_eq!(seen, ["ERROR 503 true", "ERROR 422 false", "done"]);
    let deadline = Instant::now() + Duration::from_secs(2);
    while !reflector.is_finished() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(reflector.is_finished());
    tokio::time::sleep(Duration::from_millis(50)).await;
    let messages = recorder.messages.lock().unwrap().clone();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("HTTP 503") && m.contains("[REDACTED] busy"))
    );
    assert!(messages.iter().all(|m| !m.contains("sekret-token")));
    assert_eq!(messages.last().map(String::as_str), Some("ended"));
}

/// The ERROR events `cursor` has ready.
fn errors_ready(cursor: &Cursor) -> usize {
    let mut errors = 0;
    while let Some(batch) = cursor.take() {
        if batch.events.is_empty() {
            break;
        }
        let parsed: Vec<serde_json::Value> = serde_json::from_slice(&batch.events).unwrap();
        errors += parsed.iter().filter(|e| e["type"] == "ERROR").count();
    }
    errors
}

#[tokio::test]
async fn the_first_failure_after_a_healthy_minute_still_sends_an_error() {
    let recorder = Arc::new(Recorder::default());
    let config = config("http://127.0.0.1:1", InitialList::Paginated);
    let parts = Parts {
        provider: Arc::new(StaticCredential(Credential::Bearer("t".into()))),
        reporter: recorder.clone(),
        memory: Arc::default(),
        jitter: Jitter::new(7),
        stats: Arc::default(),
    };
    let cache = Arc::new(Cache::new(config.resource_path.clone()));
    let plan = Keeping::new(cache.clone());
    let mut run = Run::new(config, parts, PoolListWatch(Arc::default()), plan);
    let cursor = cache.subscribe();
    let healthy = crate::engine::backoff::HEALTHY_AFTER + Duration::from_secs(1);
    for round in 1..=3 {
        // A healthy minute of watching, then one failure: the step count starts over each time,
        // at the step the previous failure had.
        let since = std::time::Instant::now()
            .checked_sub(healthy)
            .expect("the clock is past a minute");
        run.machine.backoff_mut().watching(since);
        let fault = Fault::Status {
            status: 503,
            retry_after: None,
            detail: "busy".into(),
        };
        assert!(matches!(
            run.fail(&fault, Resume::List { relist: false }),
            State::Backoff { .. }
        ));
        assert_eq!(run.machine.failures(), 1);
        assert_eq!(
            errors_ready(&cursor),
            1,
            "round {round}: one ERROR per step"
        );
    }
    let warnings = recorder.messages.lock().unwrap().len();
    assert_eq!(warnings, 3, "and one warning each");
}
