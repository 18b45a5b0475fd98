//! The task against scripted answers, on tokio's paused clock.

use std::collections::VecDeque;
use std::sync::Mutex;

use super::*;
use crate::engine::connect::test_cluster;
use crate::logs::LogRange;
use crate::watch::Outbox;

/// One scripted answer: a status fault, or a body of chunks that ends cleanly or breaks, or
/// that then hangs (brings nothing more, ever).
enum Answer {
    Refuse(u16, &'static str),
    Body(Vec<&'static [u8]>, bool),
    Hang(Vec<&'static [u8]>),
}

/// The requests made, and the answers still to give.
#[derive(Default)]
struct Script {
    answers: Mutex<VecDeque<Answer>>,
    urls: Mutex<Vec<String>>,
}

struct Api(Arc<Script>);

/// What a scripted body does after its chunks.
#[derive(Clone, Copy)]
enum Then {
    End,
    Break,
    Hang,
}

struct Body(VecDeque<&'static [u8]>, Then);

impl LogBody for Body {
    async fn chunk(&mut self) -> Result<Option<Bytes>, Error> {
        match (self.0.pop_front(), self.1) {
            (Some(chunk), _) => Ok(Some(Bytes::from_static(chunk))),
            (None, Then::Break) => Err(Error::Body("connection reset".into())),
            (None, Then::End) => Ok(None),
            (None, Then::Hang) => std::future::pending().await,
        }
    }
}

impl LogApi for Api {
    type Body = Body;

    async fn open(&self, request: Request<'_>) -> Result<Body, Fault> {
        self.0.urls.lock().unwrap().push(request.get.url.clone());
        let answer = self.0.answers.lock().unwrap().pop_front();
        match answer {
            Some(Answer::Body(chunks, breaks)) => Ok(Body(
                chunks.into(),
                if breaks { Then::Break } else { Then::End },
            )),
            Some(Answer::Hang(chunks)) => Ok(Body(chunks.into(), Then::Hang)),
            Some(Answer::Refuse(status, body)) => Err(Fault::Status {
                status,
                retry_after: None,
                detail: body.to_owned(),
            }),
            // A script that ran out: the cluster is gone.
            None => Err(Fault::Transport(Error::Connect("refused".into()))),
        }
    }
}

fn config(options: LogOptions) -> LogConfig {
    let (_, endpoint) = test_cluster("http://127.0.0.1:1");
    LogConfig {
        target: LogTarget {
            namespace: "ns".into(),
            pod: "web".into(),
            container: Some("app".into()),
        },
        options,
        endpoint,
        cluster: "c".into(),
        counters: Arc::default(),
        raw: false,
    }
}

/// Runs the task over `answers`: the items it queued (parsed), its warnings, its requests.
async fn run(
    options: LogOptions,
    answers: Vec<Answer>,
) -> (Vec<serde_json::Value>, Vec<String>, Vec<String>) {
    let script = Arc::new(Script {
        answers: Mutex::new(answers.into()),
        ..Script::default()
    });
    let sink = Arc::new(Outbox::new("/p".into()));
    let config = config(options);
    let reader = config.reader(sink.clone());
    follow(config, Api(script.clone()), reader).await;
    sink.close();
    let (mut items, mut warnings) = (Vec::new(), Vec::new());
    loop {
        let batch = sink.take().expect("closed: something to take");
        if batch.events.first() == Some(&b'\n') {
            // A batch of plain lines alone crosses as text (`batch::plain_run`).
            items.push(serde_json::Value::from(&batch.events_text()[1..]));
        } else if !batch.events.is_empty() {
            let parsed: Vec<serde_json::Value> = serde_json::from_slice(&batch.events).unwrap();
            items.extend(parsed);
        }
        warnings.extend(batch.warnings);
        if batch.done {
            break;
        }
    }
    let urls = script.urls.lock().unwrap().clone();
    (items, warnings, urls)
}

/// The whole lines of `items`: each string item is a run of them joined by newlines.
fn lines(items: &[serde_json::Value]) -> Vec<String> {
    items
        .iter()
        .filter_map(serde_json::Value::as_str)
        .flat_map(|run| run.split('\n').map(str::to_owned))
        .collect()
}

const FOLLOW: LogOptions = LogOptions {
    follow: true,
    previous: false,
    timestamps: false,
    range: RANGE,
};

/// A follow of `range`.
fn following(range: LogRange) -> LogOptions {
    LogOptions { range, ..FOLLOW }
}

const RANGE: LogRange = LogRange {
    since_seconds: None,
    since_time: None,
    tail_lines: None,
    limit_bytes: None,
};

#[tokio::test(start_paused = true)]
async fn a_one_shot_request_hands_on_its_lines_as_asked_and_ends() {
    let options = LogOptions {
        range: LogRange {
            tail_lines: Some(2),
            limit_bytes: Some(100),
            ..RANGE
        },
        ..LogOptions::default()
    };
    let (items, warnings, urls) =
        run(options, vec![Answer::Body(vec![b"a\nb", b"\n"], false)]).await;
    assert_eq!(lines(&items), ["a", "b"]);
    assert!(warnings.is_empty());
    assert_eq!(
        urls,
        [
            "http://127.0.0.1:1/api/v1/namespaces/ns/pods/web/log?container=app&tailLines=2&limitBytes=100"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_dropped_follow_resumes_from_the_last_line_with_nothing_lost_or_repeated() {
    let first: Vec<&'static [u8]> = vec![
        b"2026-12-06T10:00:00.1Z one\n2026-12-06T10:00:01.2Z two\n",
        b"2026-12-06T10:00:01.2Z three\n2026-12-06T10:00:01.5Z fo",
    ];
    // The server resumes at the start of the last line's second.
    let second: Vec<&'static [u8]> = vec![
        b"2026-12-06T10:00:01.2Z two\n2026-12-06T10:00:01.2Z three\n",
        b"2026-12-06T10:00:01.5Z four\n2026-12-06T10:00:02Z five\n",
    ];
    let options = following(LogRange {
        tail_lines: Some(10),
        ..RANGE
    });
    let (items, warnings, urls) = run(
        options,
        vec![
            Answer::Body(first, true),
            Answer::Body(second, false),
            Answer::Body(vec![], false),
        ],
    )
    .await;
    assert_eq!(lines(&items), ["one", "two", "three", "four", "five"]);
    assert!(
        warnings.is_empty(),
        "a follow that flowed resumes quietly: {warnings:?}"
    );
    assert_eq!(urls.len(), 3, "{urls:?}");
    assert!(urls[0].ends_with("log?container=app&follow=true&timestamps=true&tailLines=10"));
    assert!(
        urls[1].ends_with(
            "log?container=app&follow=true&timestamps=true&sinceTime=2026-12-06T10%3A00%3A01.2Z"
        ),
        "{}",
        urls[1]
    );
    assert!(
        urls[2].ends_with("sinceTime=2026-12-06T10%3A00%3A02Z"),
        "{}",
        urls[2]
    );
}

#[tokio::test(start_paused = true)]
async fn timestamps_asked_for_are_kept_and_a_long_line_comes_in_marked_pieces() {
    static LONG: std::sync::LazyLock<Vec<u8>> = std::sync::LazyLock::new(|| {
        let mut line = b"2026-12-06T10:00:00Z ".to_vec();
        line.extend(std::iter::repeat_n(b'x', 40_000));
        line.push(b'\n');
        line
    });
    let options = LogOptions {
        timestamps: true,
        ..LogOptions::default()
    };
    let (items, _, _) = run(options, vec![Answer::Body(vec![&LONG[..]], false)]).await;
    assert_eq!(items.len(), 3, "40 000 bytes in pieces of 16 KiB");
    assert!(items[0].is_array() && items[1].is_array() && items[2].is_string());
    let first = items[0][0].as_str().unwrap();
    assert!(first.starts_with("2026-12-06T10:00:00Z xxx"));
    let joined: usize = items[..2]
        .iter()
        .map(|i| i[0].as_str().unwrap().len())
        .sum::<usize>()
        + items[2].as_str().unwrap().len();
    assert_eq!(joined, 40_000 + "2026-12-06T10:00:00Z ".len());
}

#[tokio::test(start_paused = true)]
async fn a_pod_gone_ends_the_follow_with_the_servers_message() {
    let status =
        r#"{"kind":"Status","message":"pods \"web\" not found","reason":"NotFound","code":404}"#;
    let (items, warnings, urls) = run(
        FOLLOW,
        vec![
            Answer::Body(vec![b"2026-12-06T10:00:00Z one\n"], true),
            Answer::Refuse(404, status),
        ],
    )
    .await;
    assert_eq!(lines(&items), ["one"]);
    let error = &items[1];
    assert_eq!(error["type"], "ERROR");
    assert_eq!(error["error"]["errorType"], "NOT_FOUND");
    assert_eq!(error["error"]["statusCode"], 404);
    assert_eq!(error["error"]["message"], "pods \"web\" not found");
    assert_eq!(
        error["error"]["resourcePath"],
        "/api/v1/namespaces/ns/pods/web/log"
    );
    assert_eq!(urls.len(), 2);
    assert!(
        warnings.iter().any(|w| w.contains("HTTP 404")),
        "{warnings:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_container_that_stopped_ends_the_follow_after_one_quiet_resume() {
    let (items, _, urls) = run(
        FOLLOW,
        vec![
            Answer::Body(vec![b"2026-12-06T10:00:00Z last words\n"], false),
            Answer::Body(vec![b"2026-12-06T10:00:00Z last words\n"], false),
        ],
    )
    .await;
    assert_eq!(lines(&items), ["last words"]);
    assert_eq!(urls.len(), 2, "no third request: {urls:?}");
}

#[tokio::test(start_paused = true)]
async fn the_first_request_failing_is_the_one_error() {
    let (items, warnings, urls) = run(FOLLOW, vec![]).await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["error"]["errorType"], "SYSTEM_ERROR");
    assert_eq!(items[0]["error"]["statusCode"], 0);
    assert_eq!(urls.len(), 1);
    assert!(warnings[0].contains("log of pod ns/web (container app) on cluster 'c'"));
}

#[tokio::test(start_paused = true)]
async fn resumes_that_keep_failing_give_up_after_the_bound_with_warnings() {
    let (items, warnings, urls) = run(
        FOLLOW,
        vec![Answer::Body(vec![b"2026-12-06T10:00:00Z one\n"], true)],
    )
    .await;
    assert_eq!(lines(&items), ["one"]);
    assert_eq!(items.last().unwrap()["error"]["errorType"], "SYSTEM_ERROR");
    assert_eq!(urls.len() as u32, 2 + MAX_FAILURES, "{urls:?}");
    assert_eq!(
        warnings
            .iter()
            .filter(|w| w.contains("resuming from the last line"))
            .count() as u32,
        MAX_FAILURES
    );
    assert!(warnings.iter().all(|w| !w.contains("sekret-token")));
}

#[tokio::test(start_paused = true)]
async fn limit_bytes_while_following_count_what_the_caller_sees() {
    let options = following(LogRange {
        limit_bytes: Some(7),
        ..RANGE
    });
    let (items, _, urls) = run(
        options,
        vec![Answer::Body(
            vec![b"2026-12-06T10:00:00Z abc\n2026-12-06T10:00:01Z defgh\n"],
            false,
        )],
    )
    .await;
    // "abc\n" is 4 bytes, then 3 of "defgh", cut inside the line as the API server cuts.
    assert_eq!(items.len(), 2);
    assert_eq!(items[0], "abc");
    assert_eq!(items[1], serde_json::json!(["def"]));
    assert!(!urls[0].contains("limitBytes"), "counted here: {}", urls[0]);
    assert_eq!(urls.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn bytes_that_are_not_utf8_are_replaced_and_said_once() {
    let (items, warnings, _) = run(
        LogOptions::default(),
        vec![Answer::Body(vec![b"ok \xff\n\xfe\n"], false)],
    )
    .await;
    assert_eq!(lines(&items), ["ok \u{fffd}", "\u{fffd}"]);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("not UTF-8"));
}

#[tokio::test(start_paused = true)]
async fn a_one_shot_body_that_hangs_fails_after_the_idle_bound_and_a_quiet_follow_does_not() {
    let started = Instant::now();
    let once = run(LogOptions::default(), vec![Answer::Hang(vec![b"a\nb\n"])]);
    let (items, warnings, urls) = tokio::time::timeout(ONE_SHOT_IDLE * 2, once)
        .await
        .expect("ended at the idle bound");
    assert_eq!(started.elapsed(), ONE_SHOT_IDLE, "failed at the bound");
    assert_eq!(lines(&items), ["a", "b"], "the lines before it kept");
    let error = items.last().unwrap();
    assert_eq!(error["type"], "ERROR");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("idle timeout"),
        "{error}"
    );
    assert_eq!((warnings.len(), urls.len()), (1, 1));
    // A follow of a quiet container waits as long as it is quiet.
    let quiet = run(FOLLOW, vec![Answer::Hang(vec![b"a\n"])]);
    assert!(
        tokio::time::timeout(ONE_SHOT_IDLE * 20, quiet)
            .await
            .is_err(),
        "still following"
    );
}
