//! Where a run's requests go and with which credential: the provider trait the binding
//! implements (a static credential, or a JavaScript callback), and the endpoint (pool key,
//! base URL, bearer token, redactor) a credential resolves to under the watch core's rules.

use std::future::Future;
use std::pin::Pin;

use crate::auth::{Access, ClusterSpec, Credential, InClusterEnv, access};
use crate::error::Failure;
use crate::http::ClientKey;
use crate::proxy::ProxyEnv;
use crate::redact::Redactor;

/// A credential on its way (from a JavaScript callback, say).
pub type CredentialFuture = Pin<Box<dyn Future<Output = Result<Credential, String>> + Send>>;

/// Where the informer's credential comes from.
pub trait CredentialProvider: Send + Sync {
    /// A credential for the next requests; an `Err` (its message is logged, redacted) is a
    /// transient failure that the run backs off from.
    fn credential(&self) -> CredentialFuture;

    /// Whether asking again may give another answer: a static credential never changes, so
    /// it is asked for once.
    fn refreshes(&self) -> bool;
}

/// `params.credential`: the same answer every time.
#[derive(Debug, Clone)]
pub struct StaticCredential(pub Credential);

impl CredentialProvider for StaticCredential {
    fn credential(&self) -> CredentialFuture {
        let credential = self.0.clone();
        Box::pin(async move { Ok(credential) })
    }

    fn refreshes(&self) -> bool {
        false
    }
}

/// The cluster as the informer connects to it, whatever the credential.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    /// `clusterDetails`' connection fields.
    pub spec: ClusterSpec,
    /// The in-cluster service account, as read from the process.
    pub in_cluster: InClusterEnv,
    /// `clusterDetails.proxyUrl`.
    pub proxy_url: Option<String>,
    /// `clusterDetails.tlsServerName`.
    pub tls_server_name: Option<String>,
    /// The proxy variables of the environment.
    pub proxy_env: ProxyEnv,
}

/// Where requests go with one credential.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The pool key.
    pub client: ClientKey,
    /// The URL resource paths are appended to.
    pub base_url: String,
    /// `Authorization: Bearer …`, if any.
    pub bearer: Option<String>,
    /// Masks this credential (and a proxy password) in messages.
    pub redactor: Redactor,
}

/// A credential the informer must not use: the ERROR it ends with and the warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The terminal ERROR's content.
    pub failure: Failure,
    /// What to log.
    pub warning: String,
}

impl Cluster {
    /// The endpoint for `credential`, or why there is none (a refused auth provider, an
    /// anonymous credential, a TLS setting that cannot be used): all terminal.
    pub fn resolve(&self, credential: &Credential) -> Result<Endpoint, Refusal> {
        let (token, key) = match credential {
            Credential::Bearer(token) => (Some(token.as_str()), None),
            Credential::ClientCertificate { key, .. } => (None, Some(key.as_str())),
            Credential::Anonymous => (None, None),
        };
        let redactor = Redactor::new(token, key);
        let connection = match access(&self.spec, credential, &self.in_cluster) {
            Access::Refuse { failure, warning } => return Err(Refusal { failure, warning }),
            Access::Connect(connection) => connection,
        };
        let client = ClientKey::resolve(&connection)
            .and_then(|key| {
                key.routed(
                    &connection.base_url,
                    self.proxy_url.as_deref(),
                    self.tls_server_name.as_deref(),
                    &self.proxy_env,
                )
            })
            .map_err(|err| Refusal {
                failure: Failure::system(),
                warning: redactor.apply(&format!("cluster '{}': {err}", self.spec.name)),
            })?;
        let redactor = redactor.with_secret(client.proxy.as_ref().and_then(|p| p.password()));
        Ok(Endpoint {
            client,
            base_url: connection.base_url,
            bearer: connection.bearer,
            redactor,
        })
    }
}

/// The tests' cluster `c` at `url`, and its endpoint for the bearer token `sekret-token` (which
/// no message may show).
#[cfg(test)]
pub(crate) fn test_cluster(url: &str) -> (Cluster, Endpoint) {
    let cluster = Cluster {
        spec: ClusterSpec {
            name: "c".into(),
            url: url.into(),
            ..ClusterSpec::default()
        },
        ..Cluster::default()
    };
    let endpoint = cluster
        .resolve(&Credential::Bearer("sekret-token".into()))
        .expect("a bearer token resolves");
    (cluster, endpoint)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(provider: Option<&str>) -> Cluster {
        Cluster {
            spec: ClusterSpec {
                name: "c".into(),
                url: "http://127.0.0.1:1".into(),
                auth_provider: provider.map(Into::into),
                ..ClusterSpec::default()
            },
            ..Cluster::default()
        }
    }

    #[test]
    fn a_bearer_token_becomes_the_endpoint_and_is_redacted() {
        let endpoint = cluster(None)
            .resolve(&Credential::Bearer("sekret-token".into()))
            .unwrap();
        assert_eq!(endpoint.bearer.as_deref(), Some("sekret-token"));
        assert_eq!(endpoint.base_url, "http://127.0.0.1:1");
        assert_eq!(endpoint.redactor.apply("x sekret-token"), "x [REDACTED]");
    }

    #[test]
    fn refused_providers_and_anonymous_credentials_are_refusals() {
        let refused = cluster(Some("oidc"))
            .resolve(&Credential::Bearer("t".into()))
            .unwrap_err();
        assert_eq!(refused.failure.status_code, 400);
        let anonymous = cluster(None).resolve(&Credential::Anonymous).unwrap_err();
        assert_eq!(anonymous.failure.status_code, 401);
    }
}
