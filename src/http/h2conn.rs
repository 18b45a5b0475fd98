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
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// How a test server answers each stream.
    #[derive(Clone, Copy)]
    enum Answer {
        /// 200, then the stream stays open (a watch).
        Hold,
        /// RST_STREAM(REFUSED_STREAM).
        Refuse,
    }

    /// An in-memory HTTP/2 server allowing `limit` concurrent streams; counts the streams it
    /// saw. `goaway` makes it send GOAWAY after the first stream.
    async fn connect(limit: u32, answer: Answer, goaway: bool) -> (H2Connection, Arc<AtomicUsize>) {
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        tokio::spawn(async move {
            let mut server = h2::server::Builder::new()
                .max_concurrent_streams(limit)
                .handshake::<_, Bytes>(server_io)
                .await
                .unwrap();
            let mut held = Vec::new();
            while let Some(Ok((_request, mut respond))) = server.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                match answer {
                    Answer::Hold => {
                        let body = respond
                            .send_response(http::Response::new(()), false)
                            .unwrap();
                        held.push(body);
                    }
                    Answer::Refuse => respond.send_reset(Reason::REFUSED_STREAM),
                }
                if goaway {
                    server.graceful_shutdown();
                }
            }
        });
        let conn = H2Connection::handshake(client_io, KeepAlive::default())
            .await
            .unwrap();
        (conn, seen)
    }

    fn request() -> http::Request<()> {
        http::Request::get("https://example.test/api/v1/pods?watch=true")
            .body(())
            .unwrap()
    }

    #[tokio::test]
    async fn the_limit_is_the_peers_once_the_handshake_returns() {
        let (conn, _) = connect(7, Answer::Hold, false).await;
        assert_eq!(
            conn.stream_limit(),
            7,
            "not the assumed {ASSUMED_STREAM_LIMIT}"
        );
    }

    #[tokio::test]
    async fn a_request_queued_behind_the_peers_limit_is_withdrawn_unsent() {
        let (conn, seen) = connect(1, Answer::Hold, false).await;
        let Opened::Response(first) = conn.open(request(), None).await else {
            panic!("the first stream opens");
        };
        let started = std::time::Instant::now();
        let second = conn.open(request(), None).await;
        assert!(matches!(second, Opened::Retry(Unopened::Queued)));
        assert!(started.elapsed() >= STREAM_START_WAIT);
        assert_eq!(
            seen.load(Ordering::SeqCst),
            1,
            "the queued request did not reach the server"
        );
        drop(first);
    }

    #[tokio::test]
    async fn a_peer_that_stops_answering_pings_is_dropped_and_its_streams_fail() {
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        tokio::spawn(async move {
            let mut server = h2::server::handshake(server_io).await.unwrap();
            let (_request, mut respond) = server.accept().await.unwrap().unwrap();
            let _body = respond
                .send_response(http::Response::new(()), false)
                .unwrap();
            // Flush the response head, then freeze: the connection stays open, unanswered.
            let _ = tokio::time::timeout(Duration::from_millis(100), server.accept()).await;
            std::future::pending::<()>().await;
        });
        let keep_alive = KeepAlive {
            interval: Duration::from_millis(100),
            timeout: Duration::from_millis(100),
        };
        let conn = H2Connection::handshake(client_io, keep_alive)
            .await
            .unwrap();
        let Opened::Response(response) = conn.open(request(), None).await else {
            panic!("the stream opens");
        };
        let started = std::time::Instant::now();
        let mut body = response.into_body();
        let outcome = tokio::time::timeout(Duration::from_secs(5), body.data()).await;
        let outcome = outcome.expect("the body fails instead of waiting forever");
        // A failure, not a clean end: the server never ended the stream.
        assert!(matches!(outcome, Some(Err(_))), "{outcome:?}");
        assert!(started.elapsed() >= Duration::from_millis(150));
        assert!(conn.is_closed());
    }

    #[tokio::test]
    async fn a_refused_stream_may_be_retried() {
        let (conn, _) = connect(10, Answer::Refuse, false).await;
        assert!(matches!(
            conn.open(request(), None).await,
            Opened::Retry(Unopened::Refused(_))
        ));
    }

    #[tokio::test]
    async fn after_goaway_running_streams_go_on_and_new_ones_are_turned_away() {
        // A server allowing one stream: it answers the first, sends GOAWAY, and once told
        // (after the client was turned away) sends data on the running stream and ends it.
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let (send_tx, send_rx) = oneshot::channel::<()>();
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        let server = tokio::spawn(async move {
            let mut server = h2::server::Builder::new()
                .max_concurrent_streams(1)
                .handshake::<_, Bytes>(server_io)
                .await
                .unwrap();
            let (_request, mut respond) = server.accept().await.unwrap().unwrap();
            counter.fetch_add(1, Ordering::SeqCst);
            let mut body = respond
                .send_response(http::Response::new(()), false)
                .unwrap();
            server.graceful_shutdown();
            let drive = async {
                while let Some(accepted) = server.accept().await {
                    if accepted.is_ok() {
                        counter.fetch_add(1, Ordering::SeqCst);
                    }
                }
            };
            let send = async {
                send_rx.await.unwrap();
                body.send_data(Bytes::from_static(b"after goaway"), true)
                    .unwrap();
            };
            tokio::join!(drive, send);
        });
        let conn = H2Connection::handshake(client_io, KeepAlive::default())
            .await
            .unwrap();
        let Opened::Response(running) = conn.open(request(), None).await else {
            panic!("the first stream opens");
        };
        assert_eq!(running.status(), 200);
        // The one stream the server allows is taken, so this request waits inside h2, unsent,
        // until the GOAWAY turns it away: refused or closing, not given up as still queued.
        let second = conn.open(request(), None).await;
        assert!(
            matches!(
                second,
                Opened::Retry(Unopened::Refused(_) | Unopened::Closing(_))
            ),
            "turned away by the GOAWAY"
        );
        assert_eq!(
            seen.load(Ordering::SeqCst),
            1,
            "it never reached the server"
        );
        assert!(
            !conn.is_closed(),
            "the running stream keeps the connection open"
        );
        // Data sent after the GOAWAY still arrives on the running stream, then its clean end.
        send_tx.send(()).unwrap();
        let mut body = running.into_body();
        let data = tokio::time::timeout(Duration::from_secs(5), body.data())
            .await
            .expect("the running stream goes on")
            .expect("data, not the end")
            .expect("data, not an error");
        assert_eq!(&data[..], b"after goaway");
        assert!(body.data().await.is_none(), "then it ends cleanly");
        server.await.unwrap();
    }

    /// What the server of [`recording`] received: method, content type, authorization, body.
    type Received = (String, Option<String>, Option<String>, Vec<u8>);

    /// An in-memory HTTP/2 server that answers every stream 200 once its request has ended,
    /// and reports each.
    async fn recording() -> (H2Connection, tokio::sync::mpsc::UnboundedReceiver<Received>) {
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut server = h2::server::handshake(server_io).await.unwrap();
            // Accepting drives the connection, so each stream is read on a task of its own.
            while let Some(Ok((request, mut respond))) = server.accept().await {
                let tx = tx.clone();
                tokio::spawn(async move {
                    let header = |name| {
                        request
                            .headers()
                            .get(name)
                            .map(|v: &http::HeaderValue| v.to_str().unwrap().to_owned())
                    };
                    let method = request.method().to_string();
                    let content_type = header(http::header::CONTENT_TYPE);
                    let authorization = header(http::header::AUTHORIZATION);
                    let mut body = request.into_body();
                    let mut bytes = Vec::new();
                    while let Some(data) = body.data().await {
                        bytes.extend_from_slice(&data.unwrap());
                    }
                    respond
                        .send_response(http::Response::new(()), true)
                        .unwrap();
                    tx.send((method, content_type, authorization, bytes))
                        .unwrap();
                });
            }
        });
        let conn = H2Connection::handshake(client_io, KeepAlive::default())
            .await
            .unwrap();
        (conn, rx)
    }

    #[tokio::test]
    async fn a_post_sends_its_json_body_after_the_head_and_a_get_none() {
        let (conn, mut received) = recording().await;
        let review = br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#;
        let mut get = crate::http::Get {
            url: "https://example.test/apis/authentication.k8s.io/v1/selfsubjectreviews".into(),
            bearer: Some("t0ken".into()),
            accept: None,
            post: Some(Bytes::from_static(review)),
        };
        for _ in 0..2 {
            let opened = conn.open(get.h2_request().unwrap(), get.post.clone()).await;
            let response = match opened {
                Opened::Response(response) => response,
                Opened::Retry(why) => panic!("retry {why}"),
                Opened::Failed(err) => panic!("failed {err}"),
            };
            assert_eq!(response.status(), 200);
            let (method, content_type, authorization, body) = received.recv().await.unwrap();
            assert_eq!(authorization.as_deref(), Some("Bearer t0ken"));
            match get.post.take() {
                Some(posted) => {
                    assert_eq!(method, "POST");
                    assert_eq!(content_type.as_deref(), Some("application/json"));
                    assert_eq!(body, posted);
                }
                None => {
                    assert_eq!(method, "GET");
                    assert_eq!(content_type, None);
                    assert!(body.is_empty());
                }
            }
        }
    }
}
