//! Turning a connection's TLS settings into a configured `reqwest::Client`.

use std::time::Duration;

use base64::Engine as _;

use crate::auth::{CaSource, Connection};
use crate::error::WatchError;
use crate::pool::WATCHES_PER_CLIENT;

/// Everything that makes two clients different, resolved to bytes: watches with equal keys
/// share one client (and so its connections). Tokens are not part of it: they travel on each
/// request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientKey {
    /// `scheme://host:port` of the API server.
    pub origin: String,
    /// PEM of the CA bundle to trust instead of the system roots.
    pub ca_pem: Option<Vec<u8>>,
    /// Server certificate verification off.
    pub skip_verify: bool,
    /// PEM of the client certificate chain followed by its key.
    pub identity_pem: Option<Vec<u8>>,
}

/// Keepalive settings so that a silently dropped connection is noticed even when the watch
/// carries no traffic (load balancers drop idle flows without a word).
const TCP_KEEPALIVE: Duration = Duration::from_secs(30);
const H2_PING_INTERVAL: Duration = Duration::from_secs(30);
const H2_PING_TIMEOUT: Duration = Duration::from_secs(15);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// HTTP/2 flow-control window of one watch's stream. A consumer that stops reading holds at most
/// this much unread data for its stream.
const H2_STREAM_WINDOW: u32 = 1024 * 1024;
/// The connection window is shared by every stream on the connection. It is sized so that every
/// watch a client carries can fill its own window at once and the rest still flow: one stalled
/// consumer must never stall the other watches multiplexed with it.
const H2_CONNECTION_WINDOW: u32 = H2_STREAM_WINDOW * (WATCHES_PER_CLIENT as u32 + 1);

impl ClientKey {
    /// Resolves `caData` / `caFile` and the client identity. Fails, without any I/O towards the
    /// server, when they are unreadable.
    pub fn resolve(connection: &Connection) -> Result<Self, WatchError> {
        let origin = origin_of(&connection.base_url)?;
        let ca_pem = match &connection.ca {
            None => None,
            Some(CaSource::Data(data)) => Some(decode_ca_data(data)?),
            Some(CaSource::File(path)) => Some(std::fs::read(path).map_err(|err| {
                WatchError::Config(format!("cannot read caFile {}: {err}", path.display()))
            })?),
        };
        let identity_pem = connection.identity.as_ref().map(|(cert, key)| {
            let mut pem = cert.trim_end().as_bytes().to_vec();
            pem.push(b'\n');
            pem.extend_from_slice(key.as_bytes());
            pem
        });
        Ok(Self {
            origin,
            ca_pem,
            skip_verify: connection.skip_tls_verify,
            identity_pem,
        })
    }

    /// A client for this key: no redirects, gzip, keepalives, the key's trust and identity.
    pub fn build_client(&self) -> Result<reqwest::Client, WatchError> {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .gzip(true)
            .connect_timeout(CONNECT_TIMEOUT)
            .tcp_keepalive(TCP_KEEPALIVE)
            .http2_keep_alive_interval(H2_PING_INTERVAL)
            .http2_keep_alive_timeout(H2_PING_TIMEOUT)
            .http2_keep_alive_while_idle(true)
            .http2_initial_stream_window_size(H2_STREAM_WINDOW)
            .http2_initial_connection_window_size(H2_CONNECTION_WINDOW)
            .danger_accept_invalid_certs(self.skip_verify)
            // Watches are long-lived: one idle HTTP/1.1 connection per host is enough to reuse
            // for the next watch, and more would only hold sockets open after a burst ends.
            .pool_max_idle_per_host(1);
        if let Some(pem) = &self.ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|err| WatchError::Config(format!("CA is not valid PEM: {err}")))?;
            if certs.is_empty() {
                return Err(WatchError::Config("CA holds no PEM certificate".to_owned()));
            }
            builder = builder.tls_built_in_root_certs(false);
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        if let Some(pem) = &self.identity_pem {
            // The error text of a bad key could quote it; say only what kind of input failed.
            let identity = reqwest::Identity::from_pem(pem).map_err(|_| {
                WatchError::Config(
                    "client certificate or key is not valid PEM (expected a certificate and a \
                     PKCS#8, PKCS#1 or SEC1 private key)"
                        .to_owned(),
                )
            })?;
            builder = builder.identity(identity);
        }
        builder
            .build()
            .map_err(|err| WatchError::Config(crate::error::describe_chain(&err)))
    }
}

fn origin_of(base_url: &str) -> Result<String, WatchError> {
    let url = reqwest::Url::parse(base_url)
        .map_err(|err| WatchError::Config(format!("cluster URL '{base_url}' is invalid: {err}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(WatchError::Config(format!(
            "cluster URL '{base_url}' must be http or https"
        )));
    }
    Ok(url.origin().ascii_serialization())
}

fn decode_ca_data(data: &str) -> Result<Vec<u8>, WatchError> {
    let trimmed = data.trim();
    if trimmed.starts_with("-----BEGIN") {
        return Ok(trimmed.as_bytes().to_vec());
    }
    let compact: String = trimmed.split_whitespace().collect();
    base64::engine::general_purpose::STANDARD
        .decode(compact)
        .map_err(|err| WatchError::Config(format!("caData is not base64: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection(url: &str, ca: Option<CaSource>) -> Connection {
        Connection {
            base_url: url.into(),
            ca,
            skip_tls_verify: false,
            bearer: Some("secret".into()),
            identity: None,
        }
    }

    #[test]
    fn key_ignores_path_and_token() {
        let a = ClientKey::resolve(&connection("https://h:6443/k8s/c-1", None)).unwrap();
        let mut other = connection("https://h:6443/k8s/c-2", None);
        other.bearer = Some("another".into());
        assert_eq!(a, ClientKey::resolve(&other).unwrap());
        assert_eq!(a.origin, "https://h:6443");
    }

    #[test]
    fn ca_data_is_base64_of_pem_or_pem() {
        let pem = "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----";
        let b64 = base64::engine::general_purpose::STANDARD.encode(pem);
        let key = ClientKey::resolve(&connection("https://h", Some(CaSource::Data(b64)))).unwrap();
        assert_eq!(key.ca_pem.as_deref(), Some(pem.as_bytes()));
        let key =
            ClientKey::resolve(&connection("https://h", Some(CaSource::Data(pem.into())))).unwrap();
        assert_eq!(key.ca_pem.as_deref(), Some(pem.as_bytes()));
    }

    #[test]
    fn unreadable_ca_and_bad_urls_are_config_errors() {
        let missing = CaSource::File("/nonexistent/ca.pem".into());
        let err = ClientKey::resolve(&connection("https://h", Some(missing))).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/ca.pem"));
        let err = ClientKey::resolve(&connection("https://h", Some(CaSource::Data("%%".into()))))
            .unwrap_err();
        assert!(err.to_string().contains("caData is not base64"));
        assert!(ClientKey::resolve(&connection("ftp://h", None)).is_err());
        assert!(ClientKey::resolve(&connection("not a url", None)).is_err());
    }

    #[test]
    fn a_ca_without_certificates_is_refused() {
        let key = ClientKey::resolve(&connection(
            "https://h",
            Some(CaSource::Data("-----BEGIN NOTHING-----".into())),
        ))
        .unwrap();
        assert!(matches!(key.build_client(), Err(WatchError::Config(_))));
    }

    #[test]
    fn a_bad_identity_error_does_not_quote_the_key() {
        let mut conn = connection("https://h", None);
        conn.identity = Some(("not a cert".into(), "SECRETKEYMATERIAL".into()));
        let err = ClientKey::resolve(&conn)
            .unwrap()
            .build_client()
            .unwrap_err();
        assert!(!err.to_string().contains("SECRETKEYMATERIAL"));
    }
}
