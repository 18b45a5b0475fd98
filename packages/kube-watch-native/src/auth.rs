//! Deciding, before any request, how a watch connects: refused providers, the anonymous
//! credential, the in-cluster service account. Pure: the environment comes in as values.

use std::path::PathBuf;

use crate::error::Failure;

/// Auth providers that need a client-side token exchange this watcher does not perform.
const CLIENT_SIDE_PROVIDERS: [&str; 3] = ["google", "oidc", "aks"];

/// The credential as Backstage hands it over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// `bearer token`.
    Bearer(String),
    /// `x509 client certificate`, both PEM.
    ClientCertificate {
        /// Certificate chain, PEM.
        cert: String,
        /// Private key, PEM.
        key: String,
    },
    /// `anonymous`.
    Anonymous,
}

/// Where the CA comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaSource {
    /// `caData`: base64 of PEM (PEM itself is accepted too).
    Data(String),
    /// `caFile`: a path to PEM.
    File(PathBuf),
}

/// The connection-relevant parts of Backstage's `ClusterDetails`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterSpec {
    /// `name`, used in warnings.
    pub name: String,
    /// `url`.
    pub url: String,
    /// `authMetadata['kubernetes.io/auth-provider']`.
    pub auth_provider: Option<String>,
    /// Whether `authMetadata.serviceAccountToken` is set.
    pub has_service_account_token: bool,
    /// `skipTLSVerify`.
    pub skip_tls_verify: bool,
    /// `caData`, one copy per distinct text in the process (`crate::http::shared_ca_data`).
    pub ca_data: Option<std::sync::Arc<str>>,
    /// `caFile`.
    pub ca_file: Option<String>,
}

/// What the in-cluster rule looks at, read from the process by the caller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InClusterEnv {
    /// `$KUBERNETES_SERVICE_HOST`.
    pub host: Option<String>,
    /// `$KUBERNETES_SERVICE_PORT`.
    pub port: Option<String>,
    /// The service account CA, when that file exists.
    pub ca_path: Option<PathBuf>,
}

/// How to reach the API server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// Base URL; the resource path is appended.
    pub base_url: String,
    /// The CA to trust instead of the system roots.
    pub ca: Option<CaSource>,
    /// Turn off server certificate verification.
    pub skip_tls_verify: bool,
    /// Bearer token for the `Authorization` header.
    pub bearer: Option<String>,
    /// Client certificate and key for mutual TLS.
    pub identity: Option<(String, String)>,
}

/// The outcome of the checks that run before any request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Do not connect; yield this ERROR (after logging the warning).
    Refuse {
        /// The ERROR event's content.
        failure: Failure,
        /// What to tell the logger.
        warning: String,
    },
    /// Connect like this.
    Connect(Connection),
}

/// Applies the contract's rules in order: refused providers, in-cluster, anonymous.
pub fn access(cluster: &ClusterSpec, credential: &Credential, env: &InClusterEnv) -> Access {
    let provider = cluster.auth_provider.as_deref().unwrap_or_default();
    if CLIENT_SIDE_PROVIDERS.contains(&provider) {
        return Access::Refuse {
            failure: Failure::from_status(400),
            warning: format!(
                "auth provider '{provider}' of cluster '{}' needs a client-side token exchange, \
                 which watches do not support; use a server-side provider (serviceAccount, \
                 localKubectlProxy, x509) for this cluster",
                cluster.name
            ),
        };
    }

    let in_cluster_ca = env
        .ca_path
        .as_ref()
        .filter(|_| provider == "serviceAccount" && !cluster.has_service_account_token);
    if credential == &Credential::Anonymous
        && provider != "localKubectlProxy"
        && in_cluster_ca.is_none()
    {
        return Access::Refuse {
            failure: Failure::from_status(401),
            warning: format!(
                "cluster '{}' has no credential (anonymous) and is not a kubectl proxy; refusing \
                 to watch",
                cluster.name
            ),
        };
    }

    let (bearer, identity) = match credential {
        Credential::Bearer(token) => (Some(token.clone()), None),
        Credential::ClientCertificate { cert, key } => (None, Some((cert.clone(), key.clone()))),
        Credential::Anonymous => (None, None),
    };

    if let Some(ca_path) = in_cluster_ca {
        let base_url = match (&env.host, &env.port) {
            (Some(host), port) => {
                let host = if host.contains(':') && !host.starts_with('[') {
                    format!("[{host}]")
                } else {
                    host.clone()
                };
                format!("https://{host}:{}", port.as_deref().unwrap_or("443"))
            }
            // Without the service env vars, the configured URL is the best guess left.
            (None, _) => cluster.url.clone(),
        };
        return Access::Connect(Connection {
            base_url,
            ca: Some(CaSource::File(ca_path.clone())),
            skip_tls_verify: cluster.skip_tls_verify,
            bearer,
            identity,
        });
    }

    let ca = match (&cluster.ca_data, &cluster.ca_file) {
        (Some(data), _) if !data.is_empty() => Some(CaSource::Data(data.to_string())),
        (_, Some(file)) if !file.is_empty() => Some(CaSource::File(PathBuf::from(file))),
        _ => None,
    };
    Access::Connect(Connection {
        base_url: cluster.url.clone(),
        ca,
        skip_tls_verify: cluster.skip_tls_verify,
        bearer,
        identity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(provider: Option<&str>) -> ClusterSpec {
        ClusterSpec {
            name: "c1".into(),
            url: "https://k8s.example:6443".into(),
            auth_provider: provider.map(Into::into),
            ..ClusterSpec::default()
        }
    }

    fn refused_status(access: Access) -> u16 {
        match access {
            Access::Refuse { failure, .. } => failure.status_code,
            Access::Connect(c) => panic!("expected refusal, got {c:?}"),
        }
    }

    fn bearer() -> Credential {
        Credential::Bearer("t0ken".into())
    }

    #[test]
    fn client_side_providers_are_refused_as_bad_request() {
        for provider in ["google", "oidc", "aks"] {
            let access = access(
                &cluster(Some(provider)),
                &bearer(),
                &InClusterEnv::default(),
            );
            assert_eq!(refused_status(access), 400, "{provider}");
        }
    }

    #[test]
    fn anonymous_is_refused_unless_kubectl_proxy() {
        let env = InClusterEnv::default();
        assert_eq!(
            refused_status(access(&cluster(None), &Credential::Anonymous, &env)),
            401
        );
        assert_eq!(
            refused_status(access(
                &cluster(Some("serviceAccount")),
                &Credential::Anonymous,
                &env
            )),
            401
        );
        assert!(matches!(
            access(
                &cluster(Some("localKubectlProxy")),
                &Credential::Anonymous,
                &env
            ),
            Access::Connect(_)
        ));
    }

    #[test]
    fn in_cluster_uses_service_env_and_ca_and_brackets_ipv6_hosts() {
        for (host, port, base_url) in [
            ("10.0.0.1", "443", "https://10.0.0.1:443"),
            ("fd00::1", "6443", "https://[fd00::1]:6443"),
        ] {
            let env = InClusterEnv {
                host: Some(host.into()),
                port: Some(port.into()),
                ca_path: Some("/sa/ca.crt".into()),
            };
            let Access::Connect(conn) = access(&cluster(Some("serviceAccount")), &bearer(), &env)
            else {
                panic!("refused");
            };
            assert_eq!(conn.base_url, base_url);
            assert_eq!(conn.ca, Some(CaSource::File("/sa/ca.crt".into())));
            assert_eq!(conn.bearer.as_deref(), Some("t0ken"));
        }
    }

    #[test]
    fn in_cluster_does_not_apply_with_an_explicit_service_account_token() {
        let mut spec = cluster(Some("serviceAccount"));
        spec.has_service_account_token = true;
        let env = InClusterEnv {
            host: Some("10.0.0.1".into()),
            port: None,
            ca_path: Some("/sa/ca.crt".into()),
        };
        let Access::Connect(conn) = access(&spec, &bearer(), &env) else {
            panic!("refused");
        };
        assert_eq!(conn.base_url, "https://k8s.example:6443");
        assert_eq!(conn.ca, None);
    }

    #[test]
    fn ca_data_wins_over_ca_file() {
        let mut spec = cluster(None);
        spec.ca_data = Some("Zm9v".into());
        spec.ca_file = Some("/ca.pem".into());
        let Access::Connect(conn) = access(&spec, &bearer(), &InClusterEnv::default()) else {
            panic!("refused");
        };
        assert_eq!(conn.ca, Some(CaSource::Data("Zm9v".into())));
    }

    #[test]
    fn client_certificates_become_the_identity() {
        let credential = Credential::ClientCertificate {
            cert: "C".into(),
            key: "K".into(),
        };
        let Access::Connect(conn) = access(&cluster(None), &credential, &InClusterEnv::default())
        else {
            panic!("refused");
        };
        assert_eq!(conn.identity, Some(("C".into(), "K".into())));
        assert_eq!(conn.bearer, None);
    }
}
