//! The HTTP/2 connection against in-memory servers: the peer's stream limit, queued requests,
//! pings, refused streams, GOAWAY and request bodies.

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
