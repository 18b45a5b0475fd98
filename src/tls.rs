//! Turning a connection's TLS settings into one `rustls` configuration, shared by the HTTP/2
//! connections we own (`crate::http`) and the HTTP/1.1 `reqwest` client.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use base64::Engine as _;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::auth::{CaSource, Connection};
use crate::error::WatchError;
use crate::proxy::{Proxy, ProxyEnv, choose};

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

/// The crypto provider every configuration uses (ring: builds for every target we ship).
fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: LazyLock<Arc<CryptoProvider>> =
        LazyLock::new(|| Arc::new(rustls::crypto::ring::default_provider()));
    PROVIDER.clone()
}

/// The trust anchors used when no CA is given, loaded once per process.
fn system_roots() -> Arc<RootCertStore> {
    static ROOTS: LazyLock<Arc<RootCertStore>> = LazyLock::new(|| {
        let mut roots = RootCertStore::empty();
        #[cfg(not(target_os = "macos"))]
        {
            // Unreadable entries are skipped, as every TLS client does with a system store.
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
        }
        if roots.is_empty() {
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        }
        Arc::new(roots)
    });
    ROOTS.clone()
}

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
    ) -> Result<Self, WatchError> {
        self.proxy = choose(base_url, proxy_url, env)?;
        self.tls_server_name = tls_server_name
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(String::from);
        if let Some(name) = &self.tls_server_name {
            ServerName::try_from(name.as_str()).map_err(|_| {
                WatchError::Config(format!("tlsServerName '{name}' is not a valid TLS name"))
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
    pub fn tls_config(&self) -> Result<ClientConfig, WatchError> {
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|err| WatchError::Config(err.to_string()))?;
        let builder = if self.skip_verify {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ServerCheck::Skip))
        } else {
            let verifier = WebPkiServerVerifier::builder_with_provider(self.roots()?, provider())
                .build()
                .map_err(|err| WatchError::Config(format!("cannot verify with this CA: {err}")))?;
            match &self.tls_server_name {
                None => builder.with_webpki_verifier(verifier),
                Some(name) => builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(ServerCheck::Named {
                        webpki: verifier,
                        name: ServerName::try_from(name.clone()).map_err(|_| {
                            WatchError::Config(format!(
                                "tlsServerName '{name}' is not a valid TLS name"
                            ))
                        })?,
                    })),
            }
        };
        match &self.identity_pem {
            None => Ok(builder.with_no_client_auth()),
            Some(pem) => {
                // The error text of a bad key could quote it; say only what kind of input failed.
                let bad = || {
                    WatchError::Config(
                        "client certificate or key is not valid PEM (expected a certificate and \
                         a PKCS#8, PKCS#1 or SEC1 private key)"
                            .to_owned(),
                    )
                };
                let chain = CertificateDer::pem_slice_iter(pem)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| bad())?;
                let key = PrivateKeyDer::from_pem_slice(pem).map_err(|_| bad())?;
                if chain.is_empty() {
                    return Err(bad());
                }
                builder.with_client_auth_cert(chain, key).map_err(|_| bad())
            }
        }
    }

    fn roots(&self) -> Result<Arc<RootCertStore>, WatchError> {
        let Some(pem) = &self.ca_pem else {
            return Ok(system_roots());
        };
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| WatchError::Config(format!("CA is not valid PEM: {err}")))?;
        if certs.is_empty() {
            return Err(WatchError::Config("CA holds no PEM certificate".to_owned()));
        }
        // A CA given replaces the system roots, as kubectl does.
        let mut roots = RootCertStore::empty();
        for cert in certs {
            roots
                .add(cert)
                .map_err(|err| WatchError::Config(format!("CA certificate refused: {err}")))?;
        }
        Ok(Arc::new(roots))
    }

    /// The HTTP/1.1 client for this key: no redirects, gzip, keepalives, the key's TLS.
    pub fn http1_client(&self, tls: Option<ClientConfig>) -> Result<reqwest::Client, WatchError> {
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
            .map_err(|err| WatchError::Config(crate::error::describe_chain(&err)))
    }
}

/// The server checks that are not plain WebPKI verification of the URL's host. The handshake's
/// signatures are checked either way, so the peer holds the key of the certificate it shows.
#[derive(Debug)]
enum ServerCheck {
    /// `skipTLSVerify`: any certificate is accepted, as kubectl's `insecure-skip-tls-verify`
    /// does.
    Skip,
    /// `tls-server-name`: the certificate is verified against this name rather than the one
    /// the connection was made to (which `reqwest` connections still send as SNI).
    Named {
        webpki: Arc<WebPkiServerVerifier>,
        name: ServerName<'static>,
    },
}

impl ServerCertVerifier for ServerCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self {
            Self::Skip => Ok(ServerCertVerified::assertion()),
            Self::Named { webpki, name } => {
                webpki.verify_server_cert(end_entity, intermediates, name, ocsp_response, now)
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &provider().signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &provider().signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        provider()
            .signature_verification_algorithms
            .supported_schemes()
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
        assert!(matches!(key.tls_config(), Err(WatchError::Config(_))));
    }

    #[test]
    fn a_bad_identity_error_does_not_quote_the_key() {
        let mut conn = connection("https://h", None);
        conn.identity = Some(("not a cert".into(), "SECRETKEYMATERIAL".into()));
        let err = ClientKey::resolve(&conn).unwrap().tls_config().unwrap_err();
        assert!(!err.to_string().contains("SECRETKEYMATERIAL"));
    }
}
