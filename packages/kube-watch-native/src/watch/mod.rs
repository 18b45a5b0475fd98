//! One watch (`watchResource`): the engine's runner with a plan of one attempt, and the
//! queue JavaScript takes batches from as the runner's sink.
//!
//! ```text
//! runner: request ─► body lines ─► Outbox::line (classify, project) ─► Outbox (batches) ─┐
//! JS:     poll() now, or poll again once woken when nothing was ready ◄─ JSON array text ◄┘
//! ```
//! The runner (`crate::engine`, with the plan `Once`) asks for the watch, reads its lines and
//! decides what its end means by the same rules as an informer's, and the same transport
//! counts its status, error body, lines and bytes; a plain watch differs only in trying once
//! and keeping nothing: its sink is its [`Outbox`], a [`Passer`] that passes each line on as it
//! came.
//! The queue holds at most [`QUEUE_BUDGET_BYTES`] of event text: when it is full the runner
//! waits in [`Passer::pass`], stops polling the body, the socket's receive window fills, and the
//! server's writes block.
//! Cancelling (or dropping the [`Watch`]) drops the task's future, which drops the response and
//! so closes the connection (HTTP/1.1) or resets the stream (HTTP/2).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::auth::Credential;
use crate::batch::Batch;
use crate::engine::connect::Endpoint;
use crate::engine::stats::Stats;
use crate::engine::{
    Pass, Passer, PoolListWatch, Reporter, RunConfig, Sink, Step, StreamEnd, watch_once,
};
use crate::error::Failure;
use crate::http::ConnectionPool;
use crate::projection::Projection;
use crate::request::WatchQuery;
use event::{Line, classify};
pub(crate) use outbox::Outbox;
pub use outbox::{QUEUE_BUDGET_BYTES, Wake};

pub mod event;
pub(crate) mod outbox;
#[cfg(test)]
mod scripts;

/// Everything the task needs, resolved before it starts.
#[derive(Debug, Clone)]
pub struct WatchConfig {
    /// The runner's: the cluster, the path, the line and idle limits, the projection.
    pub runner: RunConfig,
    /// The watch's query, as it was asked for.
    pub query: WatchQuery,
    /// Where the request goes, resolved from `credential`.
    pub endpoint: Endpoint,
    /// What `endpoint` was resolved from.
    pub credential: Credential,
    /// Where the watch counts what it does, for the metrics.
    pub counters: Arc<WatchCounters>,
}

/// What a watch has done so far, for the metrics (`lib/metrics.js`): its stream's counters, of
/// the informers' kind (requests, events received, body bytes, errors by type, whether a
/// stream is being read), and the events JavaScript took. Relaxed atomics: nothing per event but
/// an add.
#[derive(Debug, Default)]
pub struct WatchCounters {
    /// Requests, events, bytes, errors, the open stream.
    pub stats: Arc<Stats>,
    /// Events JavaScript took.
    pub delivered: AtomicU64,
}

impl WatchCounters {
    fn failed(&self, failure: &Failure) {
        self.stats.error(failure.error_type.as_str());
    }

    fn took(&self, batch: Option<&Batch>) {
        if let Some(batch) = batch {
            self.delivered
                .fetch_add(batch.count as u64, Ordering::Relaxed);
        }
    }
}

/// A running (or finished) watch.
pub struct Watch {
    outbox: Arc<Outbox>,
    cancel: CancellationToken,
    counters: Arc<WatchCounters>,
}

impl Watch {
    /// Starts the task for `config` on `runtime`.
    pub fn start(
        config: WatchConfig,
        pool: Arc<ConnectionPool>,
        runtime: &tokio::runtime::Handle,
    ) -> Self {
        let resource_path = config.runner.resource_path.clone();
        let counters = config.counters.clone();
        Self::spawn(Outbox::new(resource_path), counters, runtime, move |sink| {
            watch_once(
                config.runner,
                config.query,
                config.endpoint,
                config.credential,
                config.counters.stats.clone(),
                sink,
                PoolListWatch(pool),
            )
        })
    }

    /// Starts `task` on `runtime`, filling `outbox`, the queue it is given; the queue ends when
    /// the task returns or is cancelled (which drops it, and with it its response and
    /// connection). A log stream is a watch of this kind too.
    pub(crate) fn spawn<F, T>(
        outbox: Outbox,
        counters: Arc<WatchCounters>,
        runtime: &tokio::runtime::Handle,
        task: T,
    ) -> Self
    where
        T: FnOnce(Arc<Outbox>) -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let outbox = Arc::new(outbox);
        let cancel = CancellationToken::new();
        let sink = outbox.clone();
        let task_cancel = cancel.clone();
        runtime.spawn(async move {
            // Made on the task's thread, as its first step.
            let run = task(sink.clone());
            tokio::select! {
                // Cancellation wins ties: after an abort nothing more is reported.
                biased;
                () = task_cancel.cancelled() => {}
                () = run => {}
            }
            sink.end();
        });
        Self {
            outbox,
            cancel,
            counters,
        }
    }

    /// A watch refused before any request: it yields one warning and one ERROR, then ends.
    pub fn refused(
        resource_path: String,
        failure: Failure,
        warning: String,
        counters: Arc<WatchCounters>,
    ) -> Self {
        let outbox = Outbox::new(resource_path);
        outbox.push_warning(warning);
        outbox.push_failure(&failure);
        outbox.close();
        counters.failed(&failure);
        Self {
            outbox: Arc::new(outbox),
            cancel: CancellationToken::new(),
            counters,
        }
    }

    /// Waits for at least one item (or the end), then returns what is ready, as
    /// [`Watch::poll`] would. Returns a `done` batch at once after [`Watch::cancel`].
    pub async fn next_batch(&self) -> Batch {
        let batch = self.outbox.next(&self.cancel).await;
        self.counters.took(Some(&batch));
        batch
    }

    /// What a [`Watch::poll`] that found nothing calls once a batch is ready; set once, later
    /// calls are ignored.
    pub fn set_wake(&self, wake: Wake) {
        self.outbox.set_wake(wake);
    }

    /// The batch ready now (every ready event up to the batch cap; a `done` batch after
    /// [`Watch::cancel`]); else `None`, and the wake is called, once, on the thread that makes a
    /// batch (or the end) ready, or by [`Watch::cancel`]. One call per wait, taking and arming.
    pub fn poll(&self) -> Option<Batch> {
        if self.cancel.is_cancelled() {
            return Some(Batch::end());
        }
        let batch = self.outbox.poll();
        self.counters.took(batch.as_ref());
        batch
    }

    /// Stops the task and closes its connection; idempotent. A polled watch is woken: its end
    /// is ready.
    pub fn cancel(&self) {
        self.cancel.cancel();
        self.outbox.interrupt();
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// A plain watch's failures are its ERROR events, its end the end of its batches.
impl Sink for Outbox {
    fn error(&self, failure: &Failure, _retrying: bool) {
        self.push_failure(failure);
    }

    fn end(&self) {
        self.close();
    }
}

/// A plain watch keeps nothing: each line is passed on as it came (projected when asked).
impl Passer for Outbox {
    fn line(&self, line: Bytes, projection: Option<&Projection>) -> Step<Pass> {
        match classify(&line) {
            // Keep-alive newlines and padding carry nothing.
            Line::Blank => Step::Skip,
            // The common case: the text goes to JavaScript untouched, once the budget has room.
            Line::Event { resource_version } => {
                let line = match projection {
                    Some(projection) => projection.apply(&line).map_or(line, Bytes::from),
                    None => line,
                };
                Step::Read(Pass(line, resource_version))
            }
            // The server's own verdict (410 Expired, mostly) ends the watch, as it ends the
            // stream on the server's side; one ERROR is the last thing a consumer sees.
            Line::Error(failure) => Step::End(StreamEnd::Error {
                status: failure.status_code,
                retry_after: None,
            }),
            // A broken line must not take the rest of the stream with it.
            Line::Malformed(reason) => Step::Warn(format!("skipped a watch line: {reason}")),
        }
    }

    async fn pass(&self, line: Bytes, resource_version: Option<&str>) {
        self.push_line(&line, resource_version).await;
    }
}

/// A plain watch's warnings go to JavaScript with its events (its logger's `warn`); it has no
/// notices (it neither reconnects nor relists) and no sync.
impl Reporter for Outbox {
    fn warn(&self, message: &str) {
        self.push_warning(message.to_owned());
    }
    fn info(&self, _message: &str) {}
    fn synced(&self) {}
    fn ended(&self) {}
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn refused_watches_yield_warning_then_error_then_end() {
        let watch = Watch::refused(
            "/api/v1/pods".into(),
            Failure::from_status(400),
            "no".into(),
            Arc::default(),
        );
        let batch = watch.next_batch().await;
        assert_eq!(batch.warnings, vec!["no".to_owned()]);
        assert!(batch.events_text().contains("BAD_REQUEST"));
        assert!(batch.done);
    }

    fn config_for(origin: &str) -> WatchConfig {
        let (cluster, endpoint) = crate::engine::connect::test_cluster(origin);
        let credential = Credential::Bearer("sekret-token".into());
        WatchConfig {
            runner: RunConfig {
                max_line_bytes: 1024,
                ..RunConfig::once(cluster, "/api/v1/pods".into())
            },
            query: WatchQuery::default(),
            endpoint,
            credential,
            counters: Arc::default(),
        }
    }

    /// A loopback server that accepts one connection, answers with `response` (if any), then
    /// reports when the client closes the socket.
    async fn one_shot_server(
        response: Option<&'static [u8]>,
    ) -> (String, tokio::sync::oneshot::Receiver<()>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let (closed_tx, closed_rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf).await;
            if let Some(bytes) = response {
                socket.write_all(bytes).await.unwrap();
            }
            while let Ok(n) = socket.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
            let _ = closed_tx.send(());
        });
        (origin, closed_rx)
    }

    /// Every batch's events text and warnings of a watch of a server that answers `response`,
    /// until the end.
    async fn watch_of(response: &'static [u8]) -> (String, Vec<String>) {
        let (origin, _closed) = one_shot_server(Some(response)).await;
        let watch = Watch::start(
            config_for(&origin),
            Arc::new(ConnectionPool::default()),
            &tokio::runtime::Handle::current(),
        );
        drain(&watch).await
    }

    /// Every batch's events text and warnings, until the end.
    async fn drain(watch: &Watch) -> (String, Vec<String>) {
        let mut events = String::new();
        let mut warnings = Vec::new();
        loop {
            let batch = watch.next_batch().await;
            events.push_str(&batch.events_text());
            warnings.extend(batch.warnings);
            if batch.done {
                return (events, warnings);
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cancel_while_waiting_for_headers_closes_the_socket_and_ends_quietly() {
        let (origin, closed) = one_shot_server(None).await;
        let watch = Watch::start(
            config_for(&origin),
            Arc::new(ConnectionPool::default()),
            &tokio::runtime::Handle::current(),
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        watch.cancel();
        let batch = watch.next_batch().await;
        assert!(batch.done);
        assert!(batch.events.is_empty());
        assert!(batch.warnings.is_empty());
        tokio::time::timeout(Duration::from_secs(1), closed)
            .await
            .expect("socket closed within a second")
            .unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn events_flow_then_a_clean_end() {
        let body: &'static [u8] = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
            transfer-encoding: chunked\r\n\r\n\
            10\r\n{\"type\":\"ADDED\",\r\n\
            19\r\n\"object\":{\"code\":1}}\n\nnot\r\n\
            2\r\n\n\n\r\n0\r\n\r\n";
        let (events, warnings) = watch_of(body).await;
        assert_eq!(events, r#"[{"type":"ADDED","object":{"code":1}}]"#);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("malformed JSON"));
        assert!(warnings[0].contains("cluster 'c'"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_event_is_counted_before_javascript_can_take_it() {
        let body: &'static [u8] = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
            content-length: 37\r\n\r\n{\"type\":\"ADDED\",\"object\":{\"code\":1}}\n";
        let (origin, _closed) = one_shot_server(Some(body)).await;
        let config = config_for(&origin);
        let counters = config.counters.clone();
        let watch = Watch::start(
            config,
            Arc::new(ConnectionPool::default()),
            &tokio::runtime::Handle::current(),
        );
        // The wake runs on the thread that readies the batch: what it sees, a consumer woken by
        // it may see, so the event must be in the stats by then.
        let (seen_tx, seen_rx) = std::sync::mpsc::channel();
        let seen = counters.clone();
        watch.set_wake(Box::new(move || {
            let _ = seen_tx.send(seen.stats.snapshot().events);
        }));
        assert!(
            watch.poll().is_none(),
            "nothing is ready before the server answers"
        );
        let counted =
            tokio::task::spawn_blocking(move || seen_rx.recv_timeout(Duration::from_secs(5)))
                .await
                .unwrap()
                .expect("woken within 5 s");
        assert_eq!(
            counted, 1,
            "the event was counted when its batch was readied"
        );
        let batch = watch.poll().expect("the batch is ready once woken");
        assert_eq!(
            batch.events_text(),
            r#"[{"type":"ADDED","object":{"code":1}}]"#
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn http_errors_become_one_error_event_with_the_body_logged_and_redacted() {
        let body: &'static [u8] = b"HTTP/1.1 403 Forbidden\r\ncontent-length: 31\r\n\r\n\
            {\"message\":\"sekret-token no\"}  ";
        let (events, warnings) = watch_of(body).await;
        assert!(events.contains(r#""statusCode":403"#));
        assert!(events.contains("UNKNOWN_ERROR"));
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("HTTP 403"));
        assert!(warnings[0].contains("[REDACTED] no"));
        assert!(!warnings[0].contains("sekret-token"));
    }
}
