//! The connection accounting: which connection a new request goes on.
//!
//! Per cluster origin and TLS identity ([`ClientKey`]) the pool keeps our HTTP/2 connections
//! and, for servers that do not speak HTTP/2 (plain `http://`, or a TLS server whose ALPN
//! chooses HTTP/1.1), one `reqwest` client. A watch holds its HTTP/2 stream for hours, so each
//! connection carries at most [`capacity`] of them: the peer's advertised
//! `SETTINGS_MAX_CONCURRENT_STREAMS` (read from the connection, so a limit lowered later counts)
//! less a tenth kept free for short requests (lists, discovery). When every connection is full
//! another is opened. A connection that refused a stream, sent GOAWAY or queued a request
//! takes no new ones; its running streams go on to their end.
//!
//! Connections are opened by a task of their own, so a watch cancelled meanwhile does not
//! cancel the opening for the others waiting on it. While a connection is opening, requests
//! are booked on it up to the limit its origin last advertised (kube-apiserver's 100 before
//! any), and those booked beyond the limit it really advertises move on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustls::ClientConfig;
use tokio::sync::watch;

use super::dial::{ALPN, Dialled, dial};
use super::h2conn::{ASSUMED_STREAM_LIMIT, H2Connection, KeepAlive, Opened, Unopened};
use super::key::{CONNECT_TIMEOUT, ClientKey};
use super::response::Response;
use super::tunnel;
use super::{Get, Kind};
use crate::error::Error;

/// How many times a request is moved to another connection (refused, queued, GOAWAY) before
/// it fails with an error saying why.
const MAX_RETRIES: usize = 6;
/// How many placements one request may go through in all (moving off an opening connection
/// whose limit turned out lower than booked is not a failure, but still bounded).
const MAX_PLACEMENTS: usize = 64;
/// An idle connection (no streams) is closed after this long; extra idle ones at once.
const IDLE_CLOSE: Duration = Duration::from_secs(90);

/// How many requests of `kind` one connection carries when the peer allows `limit` streams.
pub fn capacity(limit: usize, kind: Kind) -> usize {
    match kind {
        Kind::Short => limit,
        Kind::Watch => limit - headroom(limit),
    }
}

/// Streams kept free of watches for short requests: a tenth of the limit, rounded up (none
/// when the peer allows a single stream: a watch then needs a connection of its own).
fn headroom(limit: usize) -> usize {
    if limit < 2 { 0 } else { limit.div_ceil(10) }
}

/// The process-wide pool.
#[derive(Default)]
pub struct ConnectionPool {
    origins: Mutex<HashMap<ClientKey, Arc<Origin>>>,
}

/// One origin + TLS identity.
struct Origin {
    key: ClientKey,
    state: Mutex<OriginState>,
}

#[derive(Default)]
struct OriginState {
    /// TLS with ALPN `h2`, `http/1.1`; `None` for `http://`.
    tls: Option<Arc<ClientConfig>>,
    /// The HTTP/1.1 client, once the origin is known to need it.
    http1: Option<reqwest::Client>,
    /// Requests in flight over HTTP/1.1.
    http1_requests: usize,
    /// The stream limit the origin's last connection advertised.
    learned_limit: Option<usize>,
    connections: Vec<Connection>,
    next_id: u64,
}

struct Connection {
    id: u64,
    phase: Phase,
    /// Streams booked or running on it.
    streams: usize,
    /// Bookings made while it was opening, in order.
    booked: usize,
    /// No new streams: it refused one, queued one, or sent GOAWAY.
    refusing: bool,
    idle_since: Option<Instant>,
}

enum Phase {
    /// Being opened by a task of its own, aborted when every request booked on it is gone.
    Opening(watch::Receiver<Settled>, tokio::task::AbortHandle),
    Ready(Arc<H2Connection>),
}

/// How an opening connection ended up.
#[derive(Clone)]
enum Settled {
    Pending,
    Ready(Arc<H2Connection>),
    /// The server chose HTTP/1.1: the origin's requests go through `reqwest` from now on.
    Http1,
    /// The attempt failed, as [`Error::describe`] said it (every request booked on it gets
    /// the same text).
    Failed(Arc<str>),
}

impl Settled {
    fn failed(err: &Error) -> Self {
        Self::Failed(err.describe().into())
    }
}

/// A place on a connection (or an HTTP/1.1 request in flight), given back when dropped.
pub struct StreamSlot {
    origin: Arc<Origin>,
    connection: Option<u64>,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut state = self.origin.lock();
        let Some(id) = self.connection else {
            state.http1_requests -= 1;
            return;
        };
        let Some(index) = state.connections.iter().position(|c| c.id == id) else {
            return;
        };
        let connection = &mut state.connections[index];
        connection.streams -= 1;
        if connection.streams > 0 {
            return;
        }
        if let Phase::Opening(_, opening) = &connection.phase {
            // Nobody waits for it any more (the watches were cancelled): stop dialling, which
            // closes the half-open socket.
            opening.abort();
            state.connections.remove(index);
            return;
        }
        connection.idle_since = Some(Instant::now());
        let other_idle = state
            .connections
            .iter()
            .any(|c| c.id != id && c.streams == 0 && matches!(c.phase, Phase::Ready(_)));
        let connection = &state.connections[index];
        if connection.refusing || other_idle {
            // Dropping our handle lets the connection close (it has no streams left).
            state.connections.remove(index);
        } else if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let origin = self.origin.clone();
            runtime.spawn(async move {
                tokio::time::sleep(IDLE_CLOSE).await;
                origin.lock().connections.retain(|c| {
                    c.streams > 0 || c.idle_since.is_none_or(|idle| idle.elapsed() < IDLE_CLOSE)
                });
            });
        }
    }
}

/// What the pool decided for one placement.
enum Placement {
    Http1(reqwest::Client, StreamSlot),
    Ready(Arc<H2Connection>, StreamSlot),
    /// Booked on an opening connection as its `ticket`-th request.
    Booked {
        settled: watch::Receiver<Settled>,
        ticket: usize,
        slot: StreamSlot,
    },
}

impl Origin {
    fn lock(&self) -> MutexGuard<'_, OriginState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn slot(self: &Arc<Self>, connection: Option<u64>) -> StreamSlot {
        StreamSlot {
            origin: self.clone(),
            connection,
        }
    }

    /// Picks the connection for one request of `kind`, opening one when all are full.
    fn place(self: &Arc<Self>, kind: Kind) -> Result<Placement, Error> {
        let mut state = self.lock();
        let Some(tls) = state.tls.clone() else {
            return self.place_http1(&mut state);
        };
        if state.http1.is_some() {
            return self.place_http1(&mut state);
        }
        state.connections.retain(|c| match &c.phase {
            Phase::Ready(conn) => !conn.is_closed() || c.streams > 0,
            Phase::Opening(..) => true,
        });
        let assumed = capacity(state.learned_limit.unwrap_or(ASSUMED_STREAM_LIMIT), kind);
        for connection in &mut state.connections {
            if connection.refusing {
                continue;
            }
            match &connection.phase {
                Phase::Ready(conn) => {
                    if conn.is_closed() || connection.streams >= capacity(conn.stream_limit(), kind)
                    {
                        continue;
                    }
                    let conn = conn.clone();
                    connection.streams += 1;
                    connection.idle_since = None;
                    let id = connection.id;
                    return Ok(Placement::Ready(conn, self.slot(Some(id))));
                }
                Phase::Opening(settled, _) => {
                    if connection.booked >= assumed {
                        continue;
                    }
                    let settled = settled.clone();
                    let ticket = connection.booked;
                    connection.booked += 1;
                    connection.streams += 1;
                    let id = connection.id;
                    return Ok(Placement::Booked {
                        settled,
                        ticket,
                        slot: self.slot(Some(id)),
                    });
                }
            }
        }
        if state.learned_limit == Some(0) {
            // RFC 9113 §5.1.2 lets a peer admit no streams for a while; opening connection
            // after connection to it would only multiply the refusals. This request fails; the
            // next one tries a new connection again.
            state.learned_limit = None;
            return Err(no_streams());
        }
        let id = state.next_id;
        state.next_id += 1;
        let (settle, settled) = watch::channel(Settled::Pending);
        let origin = self.clone();
        let opening = tokio::spawn(async move { origin.open(id, tls, settle).await });
        state.connections.push(Connection {
            id,
            phase: Phase::Opening(settled.clone(), opening.abort_handle()),
            streams: 1,
            booked: 1,
            refusing: false,
            idle_since: None,
        });
        Ok(Placement::Booked {
            settled,
            ticket: 0,
            slot: self.slot(Some(id)),
        })
    }

    fn place_http1(self: &Arc<Self>, state: &mut OriginState) -> Result<Placement, Error> {
        let client = match &state.http1 {
            Some(client) => client.clone(),
            None => {
                let tls = state.tls.as_deref().cloned();
                let client = self.key.http1_client(tls)?;
                state.http1 = Some(client.clone());
                client
            }
        };
        state.http1_requests += 1;
        Ok(Placement::Http1(client, self.slot(None)))
    }

    /// The opening task: dial, handshake, then tell everyone booked on it.
    async fn open(
        self: Arc<Self>,
        id: u64,
        tls: Arc<ClientConfig>,
        settle: watch::Sender<Settled>,
    ) {
        let opened = async {
            match dial(&self.key, tls).await? {
                Dialled::H2(io) => H2Connection::handshake(*io, KeepAlive::default())
                    .await
                    .map(Some),
                Dialled::Http1 => Ok(None),
            }
        };
        let outcome = match tokio::time::timeout(CONNECT_TIMEOUT, opened).await {
            Ok(Ok(Some(conn))) => Settled::Ready(Arc::new(conn)),
            Ok(Ok(None)) => Settled::Http1,
            Ok(Err(err)) => Settled::failed(&err),
            Err(_) => Settled::failed(&Error::Connect(
                "the HTTP/2 handshake did not finish in time".into(),
            )),
        };
        let mut state = self.lock();
        let index = state.connections.iter().position(|c| c.id == id);
        match (&outcome, index) {
            (Settled::Ready(conn), Some(index)) => {
                state.learned_limit = Some(conn.stream_limit());
                state.connections[index].phase = Phase::Ready(conn.clone());
            }
            (Settled::Http1, _) => {
                state.http1 = Some(match self.key.http1_client(state.tls.as_deref().cloned()) {
                    Ok(client) => client,
                    Err(err) => {
                        drop(state);
                        settle.send_replace(Settled::failed(&err));
                        return;
                    }
                });
                state.connections.retain(|c| c.id != id);
            }
            (_, Some(_)) => state.connections.retain(|c| c.id != id),
            (_, None) => {}
        }
        drop(state);
        settle.send_replace(outcome);
    }

    /// Takes no new streams on `id` from now on.
    fn stop_using(&self, id: Option<u64>) {
        let mut state = self.lock();
        if let Some(connection) = state.connections.iter_mut().find(|c| Some(c.id) == id) {
            connection.refusing = true;
        }
    }
}

fn no_streams() -> Error {
    Error::Connect("the server admits no streams now (SETTINGS_MAX_CONCURRENT_STREAMS = 0)".into())
}

impl ConnectionPool {
    fn origin(&self, key: &ClientKey) -> Result<Arc<Origin>, Error> {
        let mut origins = self
            .origins
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(origin) = origins.get(key) {
            return Ok(origin.clone());
        }
        let tls = if key.is_https() {
            let mut config = key.tls_config()?;
            config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
            Some(Arc::new(config))
        } else {
            None
        };
        let origin = Arc::new(Origin {
            key: key.clone(),
            state: Mutex::new(OriginState {
                tls,
                ..OriginState::default()
            }),
        });
        origins.insert(key.clone(), origin.clone());
        Ok(origin)
    }

    /// Sends `get` (a GET, or its POST) to the cluster of `key` and returns the response head, on a connection with a
    /// stream free for a request of `kind`.
    pub async fn get(&self, key: &ClientKey, get: &Get, kind: Kind) -> Result<Response, Error> {
        let origin = self.origin(key)?;
        let mut retries = 0;
        let mut last: Option<Unopened> = None;
        for _ in 0..MAX_PLACEMENTS {
            let (conn, slot) = match origin.place(kind)? {
                Placement::Http1(client, slot) => {
                    let proxy = key.proxy.as_ref();
                    let response = get
                        .http1_request(&client)
                        .send()
                        .await
                        .map_err(|err| tunnel::http1_error(proxy, err))?;
                    if let Some(err) = tunnel::http1_refusal(proxy, response.status().as_u16()) {
                        return Err(err);
                    }
                    return Ok(Response::http1(response, Box::new(slot)));
                }
                Placement::Ready(conn, slot) => (conn, slot),
                Placement::Booked {
                    mut settled,
                    ticket,
                    slot,
                } => {
                    let outcome = settled
                        .wait_for(|s| !matches!(s, Settled::Pending))
                        .await
                        .map(|s| s.clone())
                        .unwrap_or_else(|_| {
                            Settled::failed(&Error::Connect(
                                "the connection attempt was dropped".into(),
                            ))
                        });
                    match outcome {
                        Settled::Ready(conn) if ticket < capacity(conn.stream_limit(), kind) => {
                            (conn, slot)
                        }
                        Settled::Ready(conn) if conn.stream_limit() == 0 => {
                            return Err(no_streams());
                        }
                        // Booked beyond what the server allows, or it speaks HTTP/1.1: place
                        // again (the slot goes back first).
                        Settled::Ready(_) | Settled::Http1 | Settled::Pending => continue,
                        Settled::Failed(reason) => return Err(Error::Shared(reason)),
                    }
                }
            };
            match conn.open(get.h2_request()?, get.post.clone()).await {
                Opened::Response(response) => return Ok(Response::h2(response, Box::new(slot))),
                Opened::Failed(err) => return Err(Error::Connect(Box::new(err))),
                Opened::Retry(why) => {
                    origin.stop_using(slot.connection);
                    retries += 1;
                    last = Some(why);
                    if retries >= MAX_RETRIES {
                        break;
                    }
                }
            }
        }
        let why = last.map_or_else(|| "every connection was full".to_owned(), |w| w.to_string());
        Err(Error::Connect(
            format!("no HTTP/2 stream could be opened after {retries} tries; last: {why}").into(),
        ))
    }

    /// The pool's connections, per origin, for diagnostics and tests.
    pub fn stats(&self) -> Vec<OriginStats> {
        let origins: Vec<Arc<Origin>> = self
            .origins
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .values()
            .cloned()
            .collect();
        origins
            .iter()
            .map(|origin| {
                let state = origin.lock();
                OriginStats {
                    origin: origin.key.origin.clone(),
                    http1_requests: state.http1_requests,
                    connections: state
                        .connections
                        .iter()
                        .map(|c| ConnectionStats {
                            streams: c.streams,
                            stream_limit: match &c.phase {
                                Phase::Ready(conn) => Some(conn.stream_limit()),
                                Phase::Opening(..) => None,
                            },
                            accepting: !c.refusing
                                && matches!(&c.phase, Phase::Ready(conn) if !conn.is_closed()),
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

/// One origin's share of [`ConnectionPool::stats`].
#[derive(Debug, Clone)]
pub struct OriginStats {
    /// `scheme://host:port`.
    pub origin: String,
    /// Requests in flight over HTTP/1.1 (each on a connection of its own).
    pub http1_requests: usize,
    /// The HTTP/2 connections.
    pub connections: Vec<ConnectionStats>,
}

/// One HTTP/2 connection in [`ConnectionPool::stats`].
#[derive(Debug, Clone)]
pub struct ConnectionStats {
    /// Streams booked or running.
    pub streams: usize,
    /// The peer's advertised limit (`None` while opening).
    pub stream_limit: Option<usize>,
    /// Whether new streams may go on it.
    pub accepting: bool,
}

#[cfg(test)]
mod tests;
