//! The transport: a run's two requests behind a trait, as client-go's `ListerWatcher`
//! and kube-runtime's `ApiMode` put them, a list page read whole and a watch read as lines; the
//! plain watch (`crate::watch`) makes its one watch through it too. The connection pool is one
//! implementation ([`PoolListWatch`]); the engine's scripts run a fake instead, on tokio's
//! paused clock. Everything that is HTTP (the status, `Retry-After`, the error body) is settled
//! here, so the callers see only bodies and [`Fault`]s.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::engine::backoff::parse_retry_after;
use crate::engine::connect::Refusal;
use crate::engine::stats::Stats;
use crate::error::{Error, Failure, StatusBody};
use crate::http::{ClientKey, ConnectionPool, Get, Kind, Lines, Response};

/// One GET of a run.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// Which pooled client carries it.
    pub client: &'a ClientKey,
    /// The URL, the bearer token, the `Accept` header.
    pub get: Get,
    /// Drop the answer when no byte of it arrives for this long.
    pub idle: Option<Duration>,
    /// Where its requests and bytes are counted.
    pub stats: &'a Arc<Stats>,
}

/// A list page and a watch: the I/O a run does.
pub trait ListWatch: Send + Sync + 'static {
    /// A watch body's lines.
    type Lines: WatchLines;

    /// A list page's body, whole; one past `max_bytes` is `Fault::Transport(Error::TooLarge)`.
    fn list(
        &self,
        request: Request<'_>,
        max_bytes: usize,
    ) -> impl Future<Output = Result<Vec<u8>, Fault>> + Send;

    /// A watch (or a streaming list), read as lines of at most `max_line_bytes`.
    fn watch(
        &self,
        request: Request<'_>,
        max_line_bytes: usize,
    ) -> impl Future<Output = Result<Self::Lines, Fault>> + Send;
}

/// The lines of one watch body.
pub trait WatchLines: Send {
    /// The next line (without its terminator), `None` at the body's clean end.
    fn next(&mut self) -> impl Future<Output = Result<Option<Bytes>, Error>> + Send;
}

/// Why a request or a stream failed.
#[derive(Debug)]
pub enum Fault {
    /// The server answered (or said in-stream) `status`.
    Status {
        /// The HTTP (or Status) code.
        status: u16,
        /// The pause it asked for (`Retry-After`, `details.retryAfterSeconds`).
        retry_after: Option<Duration>,
        /// The start of the body, or what said it.
        detail: String,
    },
    /// Below HTTP: connect, TLS, a broken or idle body, a line or a page too long.
    Transport(Error),
    /// The server's answer cannot be used: a page that does not parse, a streaming list that
    /// breaks its rules.
    Protocol(String),
    /// The credential provider failed.
    Credential(String),
    /// The credential may not be used (refused provider, anonymous).
    Refused(Refusal),
}

impl Fault {
    /// The ERROR event it becomes.
    pub fn failure(&self) -> Failure {
        match self {
            Self::Status { status, .. } => Failure::from_status(*status),
            Self::Transport(_) | Self::Protocol(_) | Self::Credential(_) => Failure::system(),
            Self::Refused(refusal) => refusal.failure,
        }
    }

    /// The text of its warning.
    pub fn describe(&self) -> String {
        match self {
            Self::Status { status, detail, .. } => format!("HTTP {status}: {detail}"),
            Self::Transport(err) => err.describe(),
            Self::Protocol(detail) => detail.clone(),
            Self::Credential(detail) => format!("getCredential failed: {detail}"),
            Self::Refused(refusal) => refusal.warning.clone(),
        }
    }

    /// The fault for an error of the HTTP layer.
    pub fn from_error(err: Error) -> Self {
        match err {
            Error::Status { status, body } => Self::Status {
                status,
                retry_after: None,
                detail: body,
            },
            other => Self::Transport(other),
        }
    }
}

/// A run's requests through the watch core's connection pool.
pub struct PoolListWatch(pub Arc<ConnectionPool>);

impl PoolListWatch {
    /// Sends `request`; a non-2xx answer is a [`Fault::Status`] with the larger of the pauses
    /// the header and the Status body ask for.
    pub(crate) async fn send(&self, request: &Request<'_>, kind: Kind) -> Result<Response, Fault> {
        request.stats.connect();
        let response = self
            .0
            .get(request.client, &request.get, kind)
            .await
            .map_err(Fault::from_error)?;
        let status = response.status();
        if (200..300).contains(&status) {
            return Ok(response);
        }
        let header = response
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let body = response.error_body().await;
        let in_body = StatusBody::parse(body.as_bytes()).retry_after;
        Err(Fault::Status {
            status,
            retry_after: header.max(in_body),
            detail: body,
        })
    }
}

impl ListWatch for PoolListWatch {
    type Lines = PoolLines;

    async fn list(&self, request: Request<'_>, max_bytes: usize) -> Result<Vec<u8>, Fault> {
        let mut response = self.send(&request, Kind::Short).await?;
        let read = response.read_to_end(max_bytes, request.idle).await;
        request.stats.bytes(response.take_received() as usize);
        read.map_err(Fault::from_error)
    }

    async fn watch(&self, request: Request<'_>, max_line_bytes: usize) -> Result<PoolLines, Fault> {
        let response = self.send(&request, Kind::Watch).await?;
        Ok(PoolLines {
            lines: response.lines(max_line_bytes, request.idle),
            stats: request.stats.clone(),
        })
    }
}

/// A pooled response's lines, its bytes counted as they arrive.
pub struct PoolLines {
    lines: Lines,
    stats: Arc<Stats>,
}

impl WatchLines for PoolLines {
    async fn next(&mut self) -> Result<Option<Bytes>, Error> {
        let next = self.lines.next().await;
        self.stats.bytes(self.lines.take_received() as usize);
        next
    }
}
