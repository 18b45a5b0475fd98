//! Dialling the API server for an HTTP/2 connection: TCP (with keepalive, through the proxy
//! when there is one), then TLS offering `h2` and `http/1.1` by ALPN. The server's choice decides which client carries the origin's
//! requests: our own HTTP/2 connections, or `reqwest` over HTTP/1.1.

use std::sync::Arc;

use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::key::{CONNECT_TIMEOUT, ClientKey, TCP_KEEPALIVE};
use super::tunnel;
use crate::error::Error;

/// What the TLS handshake settled.
pub enum Dialled {
    /// The server chose HTTP/2: the stream is ready for the HTTP/2 handshake.
    H2(Box<TlsStream<TcpStream>>),
    /// The server chose HTTP/1.1 (or nothing): this origin is served over HTTP/1.1.
    Http1,
}

/// The protocols offered, most wanted first.
pub const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// Connects to the key's origin (`https://host:port`) with `tls` (whose ALPN must offer `h2`).
pub async fn dial(key: &ClientKey, tls: Arc<ClientConfig>) -> Result<Dialled, Error> {
    let origin = key.origin.as_str();
    let url = reqwest::Url::parse(origin)
        .map_err(|err| Error::Config(format!("cluster URL '{origin}' is invalid: {err}")))?;
    let host = url
        .host_str()
        .ok_or_else(|| Error::Config(format!("cluster URL '{origin}' has no host")))?;
    // `[::1]` in a URL is `::1` to the resolver and to certificate verification.
    let bare_host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = url.port_or_known_default().unwrap_or(443);
    // `tls-server-name`: the name sent (SNI) and verified, instead of the URL's host.
    let name = key
        .tls_server_name
        .clone()
        .unwrap_or_else(|| bare_host.clone());
    let server_name = ServerName::try_from(name.clone())
        .map_err(|err| Error::Config(format!("'{name}' is not a valid TLS name: {err}")))?;

    let connect = async {
        let tcp = match &key.proxy {
            Some(proxy) => tunnel::open(proxy, &bare_host, port).await?,
            None => TcpStream::connect((bare_host.as_str(), port))
                .await
                .map_err(|err| Error::Connect(Box::new(err)))?,
        };
        tcp.set_nodelay(true).ok();
        let keepalive = socket2::TcpKeepalive::new()
            .with_time(TCP_KEEPALIVE)
            .with_interval(TCP_KEEPALIVE);
        // Best effort, as every client does: a platform without it still works, only slower to
        // notice a dead peer (HTTP/2 PINGs cover that too).
        socket2::SockRef::from(&tcp)
            .set_tcp_keepalive(&keepalive)
            .ok();
        TlsConnector::from(tls)
            .connect(server_name, tcp)
            .await
            .map_err(|err| Error::Connect(Box::new(err)))
    };
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, connect)
        .await
        .map_err(|_| {
            Error::Connect(
                format!("no TLS connection within {} s", CONNECT_TIMEOUT.as_secs()).into(),
            )
        })??;
    let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
    Ok(if h2 {
        Dialled::H2(Box::new(stream))
    } else {
        Dialled::Http1
    })
}
