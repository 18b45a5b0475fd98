//! One HTTP/2 connection of ours: the handshake, the task that drives the connection and pings
//! the peer, and opening a stream on it without ever queueing behind the peer's limit.
//!
//! `h2` queues a request it cannot open (the peer's `SETTINGS_MAX_CONCURRENT_STREAMS` reached)
//! until a stream ends; watches end after hours, so such a request would wait silently. The pool
//! (`super::pool`) therefore never puts more streams on a connection than the peer allows, and
//! [`H2Connection::open`] checks that `h2` really sent the request: one still queued after
//! [`STREAM_START_WAIT`] (a limit lowered under our feet) is withdrawn, and the pool tries
//! another connection. Nothing was sent for it, so nothing is lost or repeated.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use h2::client::{ResponseFuture, SendRequest};
use h2::{Ping, PingPong, Reason};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;

use crate::error::Error;

/// HTTP/2 flow-control window of one stream. A consumer that stops reading holds at most this
/// much unread data for its stream; so the data a connection buffers is at most this times
/// its streams, whatever the connection window.
pub const STREAM_WINDOW: u32 = 1024 * 1024;
/// The connection window is shared by every stream on the connection. It is the largest
/// HTTP/2 allows, so that however many streams the peer lets us open, every one can fill its
/// own window at once and the rest still flow: one stalled consumer never stalls the others.
/// Memory stays bounded by [`STREAM_WINDOW`] per stream.
const CONNECTION_WINDOW: u32 = (1 << 31) - 1;
/// How often an otherwise quiet connection is checked with a PING, and how long the answer may
/// take before the connection is presumed dead (load balancers drop idle flows silently).
#[derive(Debug, Clone, Copy)]
pub struct KeepAlive {
    /// Time between PINGs.
    pub interval: Duration,
    /// How long a PING may go unanswered.
    pub timeout: Duration,
}

impl Default for KeepAlive {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(30),
            timeout: Duration::from_secs(15),
        }
    }
}
/// The stream limit assumed until the peer's SETTINGS arrive: kube-apiserver's default.
pub const ASSUMED_STREAM_LIMIT: usize = 100;
/// How long a request may stay queued inside `h2` (not yet sent) before it is withdrawn and
/// tried on another connection.
pub const STREAM_START_WAIT: Duration = Duration::from_secs(2);

/// Why a stream could not be opened on this connection; in every case nothing was processed
/// by the server, so the request may be sent again elsewhere.
#[derive(Debug, thiserror::Error)]
pub enum Unopened {
    /// The peer sent GOAWAY (or the connection closed): it takes no new streams.
    #[error("the connection takes no new streams ({0})")]
    Closing(String),
    /// The request stayed queued behind the peer's stream limit.
    #[error("no stream free within {} s", STREAM_START_WAIT.as_secs())]
    Queued,
    /// The peer refused the stream (`REFUSED_STREAM`, or beyond a GOAWAY's last stream).
    #[error("the server refused the stream ({0})")]
    Refused(String),
}

/// What opening a stream gave.
pub enum Opened {
    /// The response head arrived.
    Response(http::Response<h2::RecvStream>),
    /// Safe to retry elsewhere: see [`Unopened`].
    Retry(Unopened),
    /// The stream failed after the server may have seen it.
    Failed(h2::Error),
}

/// A handle on one HTTP/2 connection. Dropping the last handle lets the connection close once
/// its streams have ended.
pub struct H2Connection {
    sender: SendRequest<Bytes>,
    closed: Arc<AtomicBool>,
}

impl H2Connection {
    /// Runs the HTTP/2 handshake on `io`, spawns the task that drives the connection, and
    /// returns once the peer's SETTINGS (and so its stream limit) are known.
    pub async fn handshake<T>(io: T, keep_alive: KeepAlive) -> Result<Self, Error>
    where
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (sender, mut connection) = h2::client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .initial_max_send_streams(ASSUMED_STREAM_LIMIT)
            .enable_push(false)
            .handshake::<_, Bytes>(io)
            .await
            .map_err(|err| Error::Connect(Box::new(err)))?;
        let pings = connection
            .ping_pong()
            .expect("a new connection's ping handle is taken once, here");
        let closed = Arc::new(AtomicBool::new(false));
        let (settled_tx, settled_rx) = oneshot::channel();
        tokio::spawn(drive(
            connection,
            pings,
            keep_alive,
            closed.clone(),
            settled_tx,
        ));
        match settled_rx.await {
            Ok(Ok(())) => Ok(Self { sender, closed }),
            Ok(Err(err)) => Err(Error::Connect(Box::new(err))),
            Err(_) => Err(Error::Connect(
                "the HTTP/2 connection closed during its handshake".into(),
            )),
        }
    }

    /// The peer's current limit of concurrent streams we may open (updated by every SETTINGS).
    pub fn stream_limit(&self) -> usize {
        self.sender.current_max_send_streams()
    }

    /// Whether the connection has ended (its task finished).
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Sends `request` with `body` (none: the request ends with its head) on a new stream and
    /// waits for the response head.
    pub async fn open(&self, request: http::Request<()>, body: Option<Bytes>) -> Opened {
        let mut sender = match self.sender.clone().ready().await {
            Ok(sender) => sender,
            Err(err) => return Opened::Retry(Unopened::Closing(err.to_string())),
        };
        let (response, mut stream) = match sender.send_request(request, body.is_none()) {
            Ok(sent) => sent,
            Err(err) => return Opened::Retry(Unopened::Closing(err.to_string())),
        };
        // `ready` on the handle that sent the request waits while `h2` holds it queued, and
        // returns as soon as it has been sent (or the connection failed, which the response
        // will report).
        if tokio::time::timeout(STREAM_START_WAIT, sender.ready())
            .await
            .is_err()
        {
            // Nothing was sent for it. Dropping the response abandons it; `h2` may still send
            // its head once a stream frees, and reset it at once (a GET cancelled before the
            // server answered, which changes nothing there).
            return Opened::Retry(Unopened::Queued);
        }
        // `h2` buffers the body and sends it as the stream's window allows; a failure to send
        // it shows in the response.
        if let Some(body) = body {
            let _ = stream.send_data(body, true);
        }
        await_head(response).await
    }
}

async fn await_head(response: ResponseFuture) -> Opened {
    match response.await {
        Ok(response) => Opened::Response(response),
        // RFC 9113 §8.7: a stream refused, or beyond the last one a GOAWAY says was processed,
        // was not processed and may be retried.
        Err(err) if err.reason() == Some(Reason::REFUSED_STREAM) => {
            Opened::Retry(Unopened::Refused(err.to_string()))
        }
        Err(err) if err.is_go_away() && err.is_remote() => {
            Opened::Retry(Unopened::Refused(err.to_string()))
        }
        Err(err) => Opened::Failed(err),
    }
}

/// Drives the connection until it ends: first until our first PING is answered (the peer's
/// SETTINGS is the first frame it sends, RFC 9113 §3.4, so its limit is applied by then), then
/// with a PING every [`KeepAlive::interval`]; a PING unanswered for its timeout drops the
/// connection, and every stream on it fails instead of waiting forever.
async fn drive<T: AsyncRead + AsyncWrite + Unpin>(
    mut connection: h2::client::Connection<T, Bytes>,
    mut pings: PingPong,
    keep_alive: KeepAlive,
    closed: Arc<AtomicBool>,
    settled: oneshot::Sender<Result<(), h2::Error>>,
) {
    let first = tokio::select! {
        _ = &mut connection => None,
        pong = pings.ping(Ping::opaque()) => Some(pong),
    };
    match first {
        Some(Ok(_)) => {
            let _ = settled.send(Ok(()));
            ping_while_open(&mut connection, &mut pings, keep_alive).await;
        }
        Some(Err(err)) => {
            let _ = settled.send(Err(err));
        }
        // The connection ended first; dropping `settled` reports it.
        None => {}
    }
    closed.store(true, Ordering::Release);
}

async fn ping_while_open<T: AsyncRead + AsyncWrite + Unpin>(
    connection: &mut h2::client::Connection<T, Bytes>,
    pings: &mut PingPong,
    keep_alive: KeepAlive,
) {
    loop {
        tokio::select! {
            _ = &mut *connection => return,
            () = tokio::time::sleep(keep_alive.interval) => {}
        }
        let answered = tokio::select! {
            _ = &mut *connection => return,
            pong = tokio::time::timeout(keep_alive.timeout, pings.ping(Ping::opaque())) => {
                matches!(pong, Ok(Ok(_)))
            }
        };
        if !answered {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
