//! Tunnels through a proxy to the API server: HTTP `CONNECT` (RFC 9110 §9.3.6) and SOCKS5
//! (RFC 1928, with RFC 1929 user name and password). TLS to the API server then runs inside
//! the tunnel, end to end: the proxy sees only the host and port.

use base64::Engine as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::Error;
use crate::proxy::{Proxy, ProxyScheme};

/// The most a proxy's answer to `CONNECT` may take up.
const MAX_CONNECT_RESPONSE: usize = 16 * 1024;

fn failed(proxy: &Proxy, why: String) -> Error {
    Error::Connect(format!("proxy {proxy}: {why}").into())
}

/// A failed HTTP/1.1 request (`reqwest`, which opens its own tunnels through the same proxy):
/// a connection failure names the proxy, as our own tunnels' failures do, so that a refused
/// SOCKS5 login or an unreachable proxy is not mistaken for the API server's fault.
pub fn http1_error(proxy: Option<&Proxy>, err: reqwest::Error) -> Error {
    match proxy {
        Some(proxy) if err.is_connect() => failed(proxy, crate::error::describe_chain(&err)),
        _ => Error::Connect(Box::new(err)),
    }
}

/// A `407` answer to a plain `http://` request sent through an HTTP proxy comes from the proxy,
/// never from the API server: it is a connection failure naming the proxy (as a refused
/// `CONNECT` is), not an HTTP status of the cluster.
pub fn http1_refusal(proxy: Option<&Proxy>, status: u16) -> Option<Error> {
    match proxy {
        Some(proxy) if proxy.scheme == ProxyScheme::Http && status == 407 => Some(failed(
            proxy,
            "answered with '407 Proxy Authentication Required' (check the user name and password)"
                .into(),
        )),
        _ => None,
    }
}

/// A TCP stream to `host:port` through `proxy`.
pub async fn open(proxy: &Proxy, host: &str, port: u16) -> Result<TcpStream, Error> {
    let mut tcp = TcpStream::connect((proxy.host.as_str(), proxy.port))
        .await
        .map_err(|err| failed(proxy, format!("cannot connect: {err}")))?;
    tcp.set_nodelay(true).ok();
    match proxy.scheme {
        ProxyScheme::Http => http_connect(&mut tcp, proxy, host, port).await?,
        ProxyScheme::Socks5 => socks5_connect(&mut tcp, proxy, host, port).await?,
    }
    Ok(tcp)
}

async fn http_connect(
    tcp: &mut TcpStream,
    proxy: &Proxy,
    host: &str,
    port: u16,
) -> Result<(), Error> {
    let authority = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
    if let Some((user, password)) = &proxy.auth {
        let credentials =
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        request.push_str(&format!("Proxy-Authorization: Basic {credentials}\r\n"));
    }
    request.push_str("\r\n");
    let io = |err: std::io::Error| failed(proxy, format!("CONNECT {authority} failed: {err}"));
    tcp.write_all(request.as_bytes()).await.map_err(io)?;

    // The API server speaks only after our TLS ClientHello, so nothing past the proxy's
    // answer can have arrived yet.
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_CONNECT_RESPONSE {
            return Err(failed(
                proxy,
                "answered CONNECT with an endless header".into(),
            ));
        }
        let n = tcp.read(&mut buf).await.map_err(io)?;
        if n == 0 {
            return Err(failed(
                proxy,
                format!("closed the connection on CONNECT {authority}"),
            ));
        }
        head.extend_from_slice(&buf[..n]);
    }
    let status_line = head.split(|b| *b == b'\r').next().unwrap_or_default();
    let status_line = String::from_utf8_lossy(status_line);
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok());
    match status {
        Some(200..=299) => Ok(()),
        _ => Err(failed(
            proxy,
            format!("answered CONNECT {authority} with '{}'", status_line.trim()),
        )),
    }
}

async fn socks5_connect(
    tcp: &mut TcpStream,
    proxy: &Proxy,
    host: &str,
    port: u16,
) -> Result<(), Error> {
    socks5_login(tcp, proxy).await?;
    let request = socks5_request(proxy, host, port)?;
    tcp.write_all(&request).await.map_err(handshake(proxy))?;
    socks5_reply(tcp, proxy, host, port).await
}

/// What a broken SOCKS5 handshake says.
fn handshake(proxy: &Proxy) -> impl Fn(std::io::Error) -> Error + '_ {
    move |err| failed(proxy, format!("SOCKS5 handshake failed: {err}"))
}

/// The greeting, and the user name and password when the proxy asks for them (RFC 1929).
async fn socks5_login(tcp: &mut TcpStream, proxy: &Proxy) -> Result<(), Error> {
    let io = handshake(proxy);
    let methods: &[u8] = if proxy.auth.is_some() {
        &[0x00, 0x02]
    } else {
        &[0x00]
    };
    let mut greeting = vec![0x05, methods.len() as u8];
    greeting.extend_from_slice(methods);
    tcp.write_all(&greeting).await.map_err(&io)?;
    let mut choice = [0u8; 2];
    tcp.read_exact(&mut choice).await.map_err(&io)?;
    match choice {
        [0x05, 0x00] => Ok(()),
        [0x05, 0x02] => {
            let (user, password) = proxy.auth.as_ref().ok_or_else(|| {
                failed(
                    proxy,
                    "asks for a user name and password; the URL has none".into(),
                )
            })?;
            let too_long = || failed(proxy, "user name or password longer than 255 bytes".into());
            let mut login = vec![0x01, u8::try_from(user.len()).map_err(|_| too_long())?];
            login.extend_from_slice(user.as_bytes());
            login.push(u8::try_from(password.len()).map_err(|_| too_long())?);
            login.extend_from_slice(password.as_bytes());
            tcp.write_all(&login).await.map_err(&io)?;
            let mut verdict = [0u8; 2];
            tcp.read_exact(&mut verdict).await.map_err(&io)?;
            if verdict[1] != 0x00 {
                return Err(failed(proxy, "refused the user name and password".into()));
            }
            Ok(())
        }
        [0x05, 0xff] => Err(failed(
            proxy,
            "accepts none of our authentication methods".into(),
        )),
        _ => Err(failed(proxy, "does not speak SOCKS5".into())),
    }
}

/// The CONNECT request for `host:port`: an address as it is, a name for the proxy to resolve
/// (the cluster's DNS may be visible only to it).
fn socks5_request(proxy: &Proxy, host: &str, port: u16) -> Result<Vec<u8>, Error> {
    let mut connect = vec![0x05, 0x01, 0x00];
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => {
            connect.push(0x01);
            connect.extend_from_slice(&ip.octets());
        }
        Ok(std::net::IpAddr::V6(ip)) => {
            connect.push(0x04);
            connect.extend_from_slice(&ip.octets());
        }
        Err(_) => {
            let len = u8::try_from(host.len())
                .map_err(|_| failed(proxy, "host name longer than 255 bytes".into()))?;
            connect.extend_from_slice(&[0x03, len]);
            connect.extend_from_slice(host.as_bytes());
        }
    }
    connect.extend_from_slice(&port.to_be_bytes());
    Ok(connect)
}

/// The proxy's answer to the CONNECT request, read to its end.
async fn socks5_reply(
    tcp: &mut TcpStream,
    proxy: &Proxy,
    host: &str,
    port: u16,
) -> Result<(), Error> {
    let io = handshake(proxy);
    let mut reply = [0u8; 4];
    tcp.read_exact(&mut reply).await.map_err(&io)?;
    if reply[1] != 0x00 {
        let why = match reply[1] {
            0x02 => "connection not allowed by its rules",
            0x03 => "network unreachable",
            0x04 => "host unreachable",
            0x05 => "connection refused by the destination",
            0x06 => "TTL expired",
            _ => "general failure",
        };
        return Err(failed(
            proxy,
            format!("could not connect to {host}:{port}: {why}"),
        ));
    }
    // The bound address that follows is of no use to us, but must be read off the stream.
    let skip = match reply[3] {
        0x01 => 4,
        0x04 => 16,
        0x03 => {
            let mut len = [0u8; 1];
            tcp.read_exact(&mut len).await.map_err(&io)?;
            usize::from(len[0])
        }
        _ => return Err(failed(proxy, "sent a malformed SOCKS5 reply".into())),
    };
    let mut bound = vec![0u8; skip + 2];
    tcp.read_exact(&mut bound).await.map_err(&io)?;
    Ok(())
}
