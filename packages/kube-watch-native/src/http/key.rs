//! Which client a request goes through: [`ClientKey`], everything that makes two clusters'
//! connections different (origin, trust, identity, proxy, TLS name), the HTTP/1.1 `reqwest`
//! client made from it, and the timeouts every connection shares.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use base64::Engine as _;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;

use crate::auth::{CaSource, Connection};
use crate::error::Error;
use crate::proxy::{Proxy, ProxyEnv, choose};
use crate::tls;

/// Everything that makes two clients different, resolved to bytes: watches with equal keys
/// share one client (and so its connections). Tokens are not part of it: they travel on each
/// request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientKey {
    /// `scheme://host:port` of the API server.
    pub origin: String,
    /// PEM of the CA bundle to trust instead of the system roots: one copy per bundle in the
    /// process (see [`shared_bundle`]).
    pub ca_pem: Option<Arc<[u8]>>,
    /// Server certificate verification off.
    pub skip_verify: bool,
    /// PEM of the client certificate chain followed by its key.
    pub identity_pem: Option<Vec<u8>>,
    /// The proxy between us and the server, if any.
    pub proxy: Option<Proxy>,
    /// `tls-server-name`: the name the server's certificate is verified against (and sent as
    /// SNI) instead of the URL's host.
    pub tls_server_name: Option<String>,
}

/// Keepalive settings so that a silently dropped connection is noticed even when the watch
/// carries no traffic (load balancers drop idle flows without a word).
pub const TCP_KEEPALIVE: Duration = Duration::from_secs(30);
/// The longest a TCP connect plus TLS handshake may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

impl ClientKey {
    /// The key of a plain `origin`: system roots, no identity, no proxy (for tests).
    #[cfg(test)]
    pub fn plain(origin: &str) -> Self {
        Self {
            origin: origin.into(),
            ca_pem: None,
            skip_verify: false,
            identity_pem: None,
            proxy: None,
            tls_server_name: None,
        }
    }

    /// Bytes its strings and buffers hold on the heap, by capacity; of the CA bundle, the
    /// process's one copy (see [`shared_bundle`]), only this key's share.
    pub fn heap_bytes(&self) -> usize {
        let text = |t: &Option<String>| t.as_ref().map_or(0, String::capacity);
        self.origin.capacity()
            + self
                .ca_pem
                .as_ref()
                .map_or(0, |pem| pem.len() / Arc::strong_count(pem))
            + self.identity_pem.as_ref().map_or(0, Vec::capacity)
            + self.proxy.as_ref().map_or(0, |proxy| {
                proxy.host.capacity()
                    + proxy
                        .auth
                        .as_ref()
                        .map_or(0, |(user, password)| user.capacity() + password.capacity())
            })
            + text(&self.tls_server_name)
    }

    /// Resolves `caData` / `caFile` and the client identity. Fails, without any I/O towards the
    /// server, when they are unreadable.
    pub fn resolve(connection: &Connection) -> Result<Self, Error> {
        let origin = origin_of(&connection.base_url)?;
        let ca_pem = match &connection.ca {
            None => None,
            Some(CaSource::Data(data)) => Some(decode_ca_data(data)?),
            Some(CaSource::File(path)) => Some(std::fs::read(path).map_err(|err| {
                Error::Config(format!("cannot read caFile {}: {err}", path.display()))
            })?),
        }
        .map(shared_bundle);
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
            proxy: None,
            tls_server_name: None,
        })
    }

    /// The same key with the route to the server: the proxy chosen for `base_url` (the
    /// cluster's `proxy_url`, else the environment's) and the `tls_server_name`.
    pub fn routed(
        mut self,
        base_url: &str,
        proxy_url: Option<&str>,
        tls_server_name: Option<&str>,
        env: &ProxyEnv,
    ) -> Result<Self, Error> {
        self.proxy = choose(base_url, proxy_url, env)?;
        self.tls_server_name = tls_server_name
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(String::from);
        if let Some(name) = &self.tls_server_name {
            ServerName::try_from(name.as_str()).map_err(|_| {
                Error::Config(format!("tlsServerName '{name}' is not a valid TLS name"))
            })?;
        }
        Ok(self)
    }

    /// Whether connections for this key use TLS.
    pub fn is_https(&self) -> bool {
        self.origin.starts_with("https:")
    }

    /// The TLS configuration for this key: its trust (the CA given, else the system's roots, or
    /// none with `skipTLSVerify`) and its client identity. ALPN is left to the caller.
    pub fn tls_config(&self) -> Result<ClientConfig, Error> {
        tls::client_config(&tls::TlsSettings {
            ca_pem: self.ca_pem.as_deref(),
            skip_verify: self.skip_verify,
            identity_pem: self.identity_pem.as_deref(),
            server_name: self.tls_server_name.as_deref(),
        })
    }

    /// The HTTP/1.1 client for this key: no redirects, gzip, keepalives, the key's TLS.
    pub fn http1_client(&self, tls: Option<ClientConfig>) -> Result<reqwest::Client, Error> {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .gzip(true)
            .http1_only()
            .connect_timeout(CONNECT_TIMEOUT)
            .tcp_keepalive(TCP_KEEPALIVE)
            // Watches are long-lived: one idle HTTP/1.1 connection per host is enough to reuse
            // for the next watch, and more would only hold sockets open after a burst ends.
            .pool_max_idle_per_host(1);
        if let Some(mut tls) = tls {
            tls.alpn_protocols = vec![b"http/1.1".to_vec()];
            builder = builder.use_preconfigured_tls(tls);
        }
        // The proxy was chosen with the key; the environment is not read a second time.
        builder = builder.no_proxy();
        if let Some(proxy) = &self.proxy {
            builder = builder.proxy(proxy.to_reqwest()?);
        }
        builder
            .build()
            .map_err(|err| Error::Config(crate::error::describe_chain(&err)))
    }
}

/// The process's one copy of the CA bundle `pem`. Every watch and every informer resolves its
/// key (an informer again at each credential refresh), and a fleet has a thousand informers over
/// a few dozen clusters: with a copy each, the bundles would be a large part of an idle
/// informer's native memory.
fn shared_bundle(pem: Vec<u8>) -> Arc<[u8]> {
    static BUNDLES: Mutex<Vec<Weak<[u8]>>> = Mutex::new(Vec::new());
    shared(&BUNDLES, &pem, || pem.as_slice().into())
}

/// The process's one copy of a cluster's `caData` text (base64 of its bundle), which each
/// informer keeps to resolve its key again: see [`shared_bundle`].
pub fn shared_ca_data(text: &str) -> Arc<str> {
    static TEXTS: Mutex<Vec<Weak<str>>> = Mutex::new(Vec::new());
    shared(&TEXTS, text, || text.into())
}

/// The value in `known` equal to `value`, else a new one (`make`) remembered there. Values no
/// one holds any more are forgotten at the next call; there are as many as distinct clusters.
fn shared<T: ?Sized + PartialEq>(
    known: &Mutex<Vec<Weak<T>>>,
    value: &T,
    make: impl FnOnce() -> Arc<T>,
) -> Arc<T> {
    let mut known = known.lock().unwrap_or_else(PoisonError::into_inner);
    known.retain(|weak| weak.strong_count() > 0);
    if let Some(found) = known
        .iter()
        .filter_map(Weak::upgrade)
        .find(|found| **found == *value)
    {
        return found;
    }
    let fresh = make();
    known.push(Arc::downgrade(&fresh));
    fresh
}

fn origin_of(base_url: &str) -> Result<String, Error> {
    let url = reqwest::Url::parse(base_url)
        .map_err(|err| Error::Config(format!("cluster URL '{base_url}' is invalid: {err}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Error::Config(format!(
            "cluster URL '{base_url}' must be http or https"
        )));
    }
    Ok(url.origin().ascii_serialization())
}

fn decode_ca_data(data: &str) -> Result<Vec<u8>, Error> {
    let trimmed = data.trim();
    if trimmed.starts_with("-----BEGIN") {
        return Ok(trimmed.as_bytes().to_vec());
    }
    let compact: String = trimmed.split_whitespace().collect();
    base64::engine::general_purpose::STANDARD
        .decode(compact)
        .map_err(|err| Error::Config(format!("caData is not base64: {err}")))
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
        let again =
            ClientKey::resolve(&connection("https://h", Some(CaSource::Data(pem.into())))).unwrap();
        assert_eq!(again.ca_pem.as_deref(), Some(pem.as_bytes()));
        assert!(
            Arc::ptr_eq(key.ca_pem.as_ref().unwrap(), again.ca_pem.as_ref().unwrap()),
            "one copy of a bundle however many keys hold it"
        );
        let other = "-----BEGIN CERTIFICATE-----\nBB==\n-----END CERTIFICATE-----";
        let other =
            ClientKey::resolve(&connection("https://h", Some(CaSource::Data(other.into()))));
        assert_eq!(
            other.unwrap().ca_pem.as_deref(),
            Some(b"-----BEGIN CERTIFICATE-----\nBB==\n-----END CERTIFICATE-----".as_slice()),
            "another bundle is its own"
        );
    }

    #[test]
    fn each_ca_data_text_is_one_copy() {
        let a = shared_ca_data("Zm9vYmFy");
        let b = shared_ca_data(&String::from("Zm9vYmFy"));
        assert!(Arc::ptr_eq(&a, &b), "equal texts share one copy");
        let c = shared_ca_data("YmF6cXV4");
        assert_eq!(&*c, "YmF6cXV4");
        assert!(!Arc::ptr_eq(&a, &c));
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
}
