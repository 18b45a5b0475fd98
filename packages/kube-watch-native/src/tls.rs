//! Turning a connection's TLS settings into one `rustls` configuration, shared by the HTTP/2
//! connections we own (`crate::http`) and the HTTP/1.1 `reqwest` client. Which settings a
//! cluster has is `crate::http::ClientKey`'s business; this module is rustls only.

use std::sync::{Arc, LazyLock};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::error::Error;

/// What one configuration is made of, as bytes already read.
#[derive(Debug, Clone, Copy, Default)]
pub struct TlsSettings<'a> {
    /// PEM of the CA bundle to trust instead of the system roots.
    pub ca_pem: Option<&'a [u8]>,
    /// Server certificate verification off.
    pub skip_verify: bool,
    /// PEM of the client certificate chain followed by its key.
    pub identity_pem: Option<&'a [u8]>,
    /// The name the server's certificate is verified against instead of the URL's host.
    pub server_name: Option<&'a str>,
}

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

/// The TLS configuration for `settings`: its trust (the CA given, else the system's roots, or
/// none with `skip_verify`) and its client identity. ALPN is left to the caller.
pub fn client_config(settings: &TlsSettings<'_>) -> Result<ClientConfig, Error> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|err| Error::Config(err.to_string()))?;
    let builder = if settings.skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ServerCheck::Skip))
    } else {
        let verifier =
            WebPkiServerVerifier::builder_with_provider(roots(settings.ca_pem)?, provider())
                .build()
                .map_err(|err| Error::Config(format!("cannot verify with this CA: {err}")))?;
        match settings.server_name {
            None => builder.with_webpki_verifier(verifier),
            Some(name) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ServerCheck::Named {
                    webpki: verifier,
                    name: ServerName::try_from(name.to_owned()).map_err(|_| {
                        Error::Config(format!("tlsServerName '{name}' is not a valid TLS name"))
                    })?,
                })),
        }
    };
    match settings.identity_pem {
        None => Ok(builder.with_no_client_auth()),
        Some(pem) => {
            // The error text of a bad key could quote it; say only what kind of input failed.
            let bad = || {
                Error::Config(
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

fn roots(ca_pem: Option<&[u8]>) -> Result<Arc<RootCertStore>, Error> {
    let Some(pem) = ca_pem else {
        return Ok(system_roots());
    };
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| Error::Config(format!("CA is not valid PEM: {err}")))?;
    if certs.is_empty() {
        return Err(Error::Config("CA holds no PEM certificate".to_owned()));
    }
    // A CA given replaces the system roots, as kubectl does.
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots
            .add(cert)
            .map_err(|err| Error::Config(format!("CA certificate refused: {err}")))?;
    }
    Ok(Arc::new(roots))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ca_without_certificates_is_refused() {
        let settings = TlsSettings {
            ca_pem: Some(b"-----BEGIN NOTHING-----"),
            ..TlsSettings::default()
        };
        assert!(matches!(client_config(&settings), Err(Error::Config(_))));
    }

    #[test]
    fn a_bad_identity_error_does_not_quote_the_key() {
        let settings = TlsSettings {
            identity_pem: Some(b"not a cert\nSECRETKEYMATERIAL"),
            ..TlsSettings::default()
        };
        let err = client_config(&settings).unwrap_err();
        assert!(matches!(err, Error::Config(_)));
        assert!(!err.to_string().contains("SECRETKEYMATERIAL"));
    }
}
