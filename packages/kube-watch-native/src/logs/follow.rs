//! The log stream's task: the requests, the reading of their bodies into the queue, and when a
//! follow resumes or ends.
//!
//! - Not following: one request, its lines, its end (or its one ERROR).
//! - Following: when the server ends the body (the container stopped or restarted, a dropped
//!   connection, a proxy's timeout), the follow asks again from the last line delivered. The
//!   stream ends when the API server refuses (a pod gone: 404; a container not valid or
//!   waiting to start: 400; 401, 403), with one ERROR that keeps the server's message; when a
//!   resumed body ends within [`QUICK_END`] having brought nothing new (the container has
//!   stopped for good); when `limitBytes` are delivered; or after [`MAX_FAILURES`] failed
//!   resumes in a row (network, 429, 5xx), each waited out on the engine's backoff.
//! - The first request's failure of any kind is the stream's one ERROR, as a watch's is: a
//!   cluster that never answered has nothing to resume. A one-shot body silent for
//!   [`ONE_SHOT_IDLE`] is such a failure (a server that hangs mid-answer).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::lines::{Cursor, LogFramer, Piece, Resume, Take};
use super::query::{LogOptions, LogTarget, Query};
use super::reader::Reader;
use crate::engine::backoff::{Backoff, BackoffPolicy, Jitter};
use crate::engine::connect::Endpoint;
use crate::engine::{Fault, PoolListWatch, Request};
use crate::error::{Error, Failure};
use crate::http::{Get, Kind, Response};
use crate::watch::{Outbox, Watch, WatchCounters};

/// A resumed follow that the server ends this soon with nothing new is over.
pub const QUICK_END: Duration = Duration::from_secs(2);
/// Failed resumes in a row after which the stream ends with its ERROR.
pub const MAX_FAILURES: u32 = 5;
/// A one-shot read whose body brings nothing for this long has failed (a follow may be quiet as
/// long as its container is).
pub const ONE_SHOT_IDLE: Duration = Duration::from_secs(30);
/// What a log request accepts: the API server answers `text/plain`.
const ACCEPT: &str = "text/plain, */*";

/// Everything the task needs, resolved before it starts.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// Whose log.
    pub target: LogTarget,
    /// What was asked for.
    pub options: LogOptions,
    /// Where the requests go.
    pub endpoint: Endpoint,
    /// Named in warnings: the cluster's name.
    pub cluster: String,
    /// Requests, lines and bytes, for the metrics.
    pub counters: Arc<WatchCounters>,
    /// Lines that are not UTF-8 cross as their bytes (a reader that passes the log on), not
    /// with U+FFFD.
    pub raw: bool,
}

impl LogConfig {
    pub(crate) fn what(&self) -> String {
        let container = self
            .target
            .container
            .as_deref()
            .map_or(String::new(), |c| format!(" (container {c})"));
        format!(
            "log of pod {}/{}{container} on cluster '{}'",
            self.target.namespace, self.target.pod, self.cluster
        )
    }

    /// A reader of these options into `outbox`: `limitBytes` counted by it while following (the
    /// server's count would include the timestamps a follow asks for).
    pub(crate) fn reader(&self, outbox: Arc<Outbox>) -> Reader {
        let limit = self.options.range.limit_bytes.filter(|_| self.following());
        Reader::new(
            outbox,
            self.options.timestamps,
            limit.map(|n| u64::try_from(n).unwrap_or(0)),
            self.what(),
        )
        .raw(self.raw)
    }

    pub(crate) fn following(&self) -> bool {
        // A previous instance has stopped: its log is whole at once.
        self.options.follow && !self.options.previous
    }
}

/// A log request and its body: the connection pool, or a script in the tests.
pub trait LogApi: Send + Sync + 'static {
    /// The body's chunks.
    type Body: LogBody;
    /// Sends the request; an answer other than 2xx is a [`Fault::Status`].
    fn open(&self, request: Request<'_>) -> impl Future<Output = Result<Self::Body, Fault>> + Send;
}

/// A log body, read in chunks.
pub trait LogBody: Send {
    /// The next chunk, `None` at the body's clean end.
    fn chunk(&mut self) -> impl Future<Output = Result<Option<Bytes>, Error>> + Send;
}

impl LogApi for PoolListWatch {
    type Body = PoolLogBody;

    async fn open(&self, request: Request<'_>) -> Result<PoolLogBody, Fault> {
        let stats = request.stats.clone();
        // It holds its stream for as long as it is followed, as a watch does.
        let response = self.send(&request, Kind::Watch).await?;
        Ok(PoolLogBody { response, stats })
    }
}

/// A pooled response's body, its bytes counted as they arrive.
pub struct PoolLogBody {
    response: Response,
    stats: Arc<crate::engine::stats::Stats>,
}

impl LogBody for PoolLogBody {
    async fn chunk(&mut self) -> Result<Option<Bytes>, Error> {
        let chunk = self.response.chunk().await;
        self.stats.bytes(self.response.take_received() as usize);
        chunk
    }
}

/// Starts the log stream of `config` on `runtime`, its requests through `api`.
pub fn start<A: LogApi>(config: LogConfig, api: A, runtime: &tokio::runtime::Handle) -> Watch {
    let counters = config.counters.clone();
    let outbox = Outbox::new(config.target.path());
    Watch::spawn(outbox, counters, runtime, move |outbox| {
        let reader = config.reader(outbox);
        follow(config, api, reader)
    })
}

/// How a body's reading ended.
enum Outcome {
    /// The body ended cleanly.
    Ended,
    /// Nothing more is wanted (`limitBytes` delivered).
    Done,
    /// The request or its body failed.
    Failed(Fault),
}

/// Follows (or reads once) the log of `config` through `api` into `sink`, to its end.
pub(crate) async fn follow<A: LogApi, S: LogSink>(config: LogConfig, api: A, sink: S) {
    let mut delivery = Delivery::new(&config, sink);
    let mut backoff = Backoff::new(BackoffPolicy::default());
    let mut jitter = Jitter::from_time();
    let mut answered = false;
    loop {
        let query = delivery.query(&config, answered);
        let request = Request {
            client: &config.endpoint.client,
            get: Get {
                url: query.url(&config.endpoint.base_url, &config.target),
                bearer: config.endpoint.bearer.clone(),
                accept: Some(ACCEPT.to_owned()),
                post: None,
            },
            idle: None,
            stats: &config.counters.stats,
        };
        let opened = Instant::now();
        let before = delivery.lines;
        let outcome = match api.open(request).await {
            Ok(body) => {
                let resume = if answered {
                    delivery.cursor.resume()
                } else {
                    Resume::fresh()
                };
                answered = true;
                delivery.sink.streaming(true);
                let outcome = delivery.read(body, query.options.timestamps, resume).await;
                delivery.sink.streaming(false);
                outcome
            }
            Err(fault) => Outcome::Failed(fault),
        };
        let fresh = delivery.lines > before;
        match outcome {
            Outcome::Done => return,
            Outcome::Ended if !config.following() => return,
            // Lines came, or the follow was quiet for a while before the server (or a proxy)
            // ended it: ask again at once.
            Outcome::Ended if fresh || opened.elapsed() >= QUICK_END => {
                backoff = Backoff::new(BackoffPolicy::default());
            }
            // Ended at once with nothing new: the container has stopped.
            Outcome::Ended => return,
            Outcome::Failed(fault) => {
                if !(answered && config.following() && transient(&fault)) {
                    delivery.fail(&fault, &config);
                    return;
                }
                // It was flowing when it broke: ask again at once.
                if fresh {
                    backoff = Backoff::new(BackoffPolicy::default());
                    continue;
                }
                if backoff.failures() >= MAX_FAILURES {
                    delivery.fail(&fault, &config);
                    return;
                }
                let retry_after = match &fault {
                    Fault::Status { retry_after, .. } => *retry_after,
                    _ => None,
                };
                let wait = backoff.failed(Instant::now().into_std(), retry_after, jitter.draw());
                let reason = config.endpoint.redactor.apply(&fault.describe());
                delivery.sink.warn(format!(
                    "{}: {reason}; resuming from the last line in {:.1} s",
                    config.what(),
                    wait.as_secs_f64()
                ));
                tokio::time::sleep(wait).await;
            }
        }
    }
}

/// Whether a follow that failed so may resume: below HTTP, or the server's pause (429, 5xx).
fn transient(fault: &Fault) -> bool {
    match fault {
        Fault::Transport(_) => true,
        Fault::Status { status, .. } => *status == 429 || *status >= 500,
        Fault::Protocol(_) | Fault::Credential(_) | Fault::Refused(_) => false,
    }
}

/// Where a follow's pieces go: one reader's queue (a stream of its own), or the ring of a
/// shared one that its readers read (`shared.rs`).
pub(crate) trait LogSink: Send + 'static {
    /// A piece of a line, `skip` bytes of it delivered before (a resumed line): true once
    /// nothing more is wanted (a reader's `limitBytes` delivered).
    fn piece(&mut self, piece: &Piece, skip: usize) -> impl Future<Output = bool> + Send;
    /// What it holds goes on (the lines of a chunk, gathered).
    fn flush(&mut self) -> impl Future<Output = ()> + Send;
    /// A warning for the logger.
    fn warn(&mut self, message: String);
    /// A body is being read (`true`), or none is (the follow is between requests or over).
    fn streaming(&mut self, _open: bool) {}
    /// The stream's one ERROR (JSON text), its last item.
    fn fail(&mut self, error: String);
}

/// A stream of its own: its pieces go straight to its reader's queue.
impl LogSink for Reader {
    async fn piece(&mut self, piece: &Piece, skip: usize) -> bool {
        let stamp = piece.stamp_text.as_deref().filter(|_| skip == 0);
        self.line(stamp, &piece.text[skip..], piece.last).await
    }

    async fn flush(&mut self) {
        self.flush().await;
    }

    fn warn(&mut self, message: String) {
        self.outbox.push_warning(message);
    }

    fn fail(&mut self, error: String) {
        self.outbox.push_generated(&error);
    }
}

/// What the follow has handed on: where a resume picks up.
struct Delivery<S: LogSink> {
    sink: S,
    /// Lines handed on (a line cut in pieces counts at its last).
    lines: u64,
    cursor: Cursor,
    /// Named in warnings.
    what: String,
    /// How long a body may bring nothing (a one-shot read's); none for a follow.
    idle: Option<Duration>,
}

impl<S: LogSink> Delivery<S> {
    fn new(config: &LogConfig, sink: S) -> Self {
        Self {
            sink,
            lines: 0,
            cursor: Cursor::default(),
            what: config.what(),
            idle: (!config.following()).then_some(ONE_SHOT_IDLE),
        }
    }

    /// The query of the next request: the caller's first, then a resume from the last line.
    fn query(&self, config: &LogConfig, resumed: bool) -> Query {
        let following = config.following();
        let mut options = config.options.clone();
        // A follow's resume starts from the last line's timestamp, and its bytes are counted
        // here.
        options.timestamps |= following;
        let range = &mut options.range;
        range.limit_bytes = range.limit_bytes.filter(|_| !following);
        if resumed && let Some((_, text)) = &self.cursor.at {
            range.since_seconds = None;
            range.tail_lines = None;
            range.since_time = Some(String::from_utf8_lossy(text).into_owned());
        }
        Query {
            container: config.target.container.clone(),
            options,
        }
    }

    /// Reads `body` (its lines stamped when `stamped`) to its end, handing on what `resume`
    /// does not drop.
    async fn read<B: LogBody>(
        &mut self,
        mut body: B,
        stamped: bool,
        mut resume: Resume,
    ) -> Outcome {
        let outcome = self.read_chunks(&mut body, stamped, &mut resume).await;
        self.sink.flush().await;
        outcome
    }

    /// [`Delivery::read`]'s loop: each chunk's lines handed on, then flushed together.
    async fn read_chunks<B: LogBody>(
        &mut self,
        body: &mut B,
        stamped: bool,
        resume: &mut Resume,
    ) -> Outcome {
        let mut framer = LogFramer::new(stamped);
        loop {
            let next = match self.idle {
                Some(idle) => tokio::time::timeout(idle, body.chunk())
                    .await
                    .unwrap_or(Err(Error::Idle {
                        seconds: idle.as_secs_f64(),
                    })),
                None => body.chunk().await,
            };
            let chunk = match next {
                Ok(Some(chunk)) => chunk,
                Ok(None) => {
                    if let Some(piece) = framer.finish()
                        && self.hand_on(piece, resume).await
                    {
                        return Outcome::Done;
                    }
                    return Outcome::Ended;
                }
                Err(err) => return Outcome::Failed(Fault::Transport(err)),
            };
            framer.push(&chunk);
            while let Some(piece) = framer.next_piece() {
                if self.hand_on(piece, resume).await {
                    return Outcome::Done;
                }
            }
            // A chunk's lines cross to JavaScript together: one wake-up, not one a line.
            self.sink.flush().await;
        }
    }

    /// Hands `piece` on unless `resume` drops it; true once nothing more is wanted.
    async fn hand_on(&mut self, piece: Piece, resume: &mut Resume) -> bool {
        let Take::Deliver { skip } = resume.take(&piece) else {
            return false;
        };
        let done = self.sink.piece(&piece, skip).await;
        self.cursor.delivered(&piece);
        self.lines += u64::from(piece.last);
        done
    }

    /// The stream's one ERROR, with the server's message, and its warning.
    fn fail(&mut self, fault: &Fault, config: &LogConfig) {
        let redactor = &config.endpoint.redactor;
        let failure = fault.failure();
        let message = match fault {
            Fault::Status { detail, .. } => status_message(detail),
            _ => fault.describe(),
        };
        let message = redactor.apply(&message);
        self.sink.warn(format!(
            "{}: {}",
            self.what,
            redactor.apply(&fault.describe())
        ));
        self.sink
            .fail(error_json(failure, &config.target.path(), &message));
        config.counters.stats.error(failure.error_type.as_str());
    }
}

/// The `message` of a Kubernetes Status body, or the body's start when it is not one.
fn status_message(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|status| status.get("message")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| body.chars().take(512).collect())
}

/// A watch's ERROR event for `path`, with the API server's `message`.
fn error_json(failure: Failure, path: &str, message: &str) -> String {
    let event = failure.event_json(path);
    // The event ends with its error object's brace and its own.
    let open = &event[..event.len() - 2];
    let message = serde_json::Value::from(message);
    format!(r#"{open},"message":{message}}}}}"#)
}

#[cfg(test)]
mod tests;
