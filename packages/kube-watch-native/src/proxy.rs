//! Which proxy, if any, stands between us and an API server — chosen the way kubectl (Go's
//! `net/http`) chooses: the cluster's own `proxy-url` always; else `HTTPS_PROXY` / `HTTP_PROXY`
//! by the URL's scheme, unless `NO_PROXY` names the host or the host is loopback.
//!
//! Pure: parsing and matching only; `crate::http` opens the tunnels. A proxy's password is a
//! secret: nothing here puts it in a message, and [`Proxy`]'s `Debug` masks it.

use std::fmt;
use std::net::IpAddr;

use percent_encoding::percent_decode_str;

use crate::error::Error;

/// How we talk to the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProxyScheme {
    /// An HTTP proxy: `CONNECT host:port` opens a tunnel (for `https://` clusters), or plain
    /// requests go through it (`http://` clusters).
    Http,
    /// A SOCKS5 proxy (RFC 1928), which resolves the host name itself.
    Socks5,
}

/// A parsed proxy URL.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Proxy {
    /// The protocol spoken to the proxy.
    pub scheme: ProxyScheme,
    /// The proxy's host (an IPv6 address without brackets).
    pub host: String,
    /// The proxy's port.
    pub port: u16,
    /// User name and password from the URL, percent-decoded.
    pub auth: Option<(String, String)>,
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// The proxy as a URL with the password masked: safe in a log line.
impl fmt::Display for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self.scheme {
            ProxyScheme::Http => "http",
            ProxyScheme::Socks5 => "socks5",
        };
        let user = match &self.auth {
            Some((user, _)) => format!("{user}:***@"),
            None => String::new(),
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        write!(f, "{scheme}://{user}{host}:{}", self.port)
    }
}

impl Proxy {
    /// Parses a proxy URL (`http://[user:pass@]host[:port]`, `socks5://…`; a bare `host:port`
    /// means `http://`, as Go reads the environment). The error never quotes the URL, which
    /// may hold a password.
    pub fn parse(text: &str, source: &str) -> Result<Self, Error> {
        let text = text.trim();
        let with_scheme = if text.contains("://") {
            text.to_owned()
        } else {
            format!("http://{text}")
        };
        let bad = |why: &str| Error::Config(format!("{source} is not a usable proxy URL: {why}"));
        let url = reqwest::Url::parse(&with_scheme).map_err(|err| bad(&err.to_string()))?;
        let (scheme, default_port) = match url.scheme() {
            "http" => (ProxyScheme::Http, 80),
            "socks5" | "socks5h" => (ProxyScheme::Socks5, 1080),
            "https" => {
                return Err(bad(
                    "https:// proxies (TLS to the proxy itself) are not supported; use http:// \
                     (the tunnel to the API server is TLS end to end either way) or socks5://",
                ));
            }
            other => return Err(bad(&format!("scheme '{other}' (use http:// or socks5://)"))),
        };
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| bad("no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let decode = |part: &str| percent_decode_str(part).decode_utf8_lossy().into_owned();
        let auth = (!url.username().is_empty()).then(|| {
            (
                decode(url.username()),
                decode(url.password().unwrap_or_default()),
            )
        });
        Ok(Self {
            scheme,
            host,
            port: url.port().unwrap_or(default_port),
            auth,
        })
    }

    /// The password, for the redactor.
    pub fn password(&self) -> Option<&str> {
        self.auth.as_ref().map(|(_, password)| password.as_str())
    }

    /// The same proxy for `reqwest` (HTTP/1.1 requests).
    pub fn to_reqwest(&self) -> Result<reqwest::Proxy, Error> {
        let scheme = match self.scheme {
            ProxyScheme::Http => "http",
            // `socks5h`: the proxy resolves the name, as our own tunnel lets it.
            ProxyScheme::Socks5 => "socks5h",
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let proxy = reqwest::Proxy::all(format!("{scheme}://{host}:{}", self.port))
            .map_err(|_| Error::Config(format!("proxy {self} cannot be used")))?;
        Ok(match &self.auth {
            Some((user, password)) => proxy.basic_auth(user, password),
            None => proxy,
        })
    }
}

/// The proxy variables of the environment, read as Go reads them (upper case first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    /// `HTTPS_PROXY` or `https_proxy`.
    pub https: Option<String>,
    /// `HTTP_PROXY` or `http_proxy`.
    pub http: Option<String>,
    /// `NO_PROXY` or `no_proxy`.
    pub no_proxy: Option<String>,
}

impl ProxyEnv {
    /// Reads the process environment now.
    pub fn from_process() -> Self {
        let any = |names: [&str; 2]| {
            names
                .iter()
                .filter_map(|name| std::env::var(name).ok())
                .find(|value| !value.trim().is_empty())
        };
        Self {
            https: any(["HTTPS_PROXY", "https_proxy"]),
            http: any(["HTTP_PROXY", "http_proxy"]),
            no_proxy: any(["NO_PROXY", "no_proxy"]),
        }
    }
}

/// The proxy for requests to `target` (the cluster URL): the cluster's `proxy_url` when set,
/// else the environment's.
pub fn choose(
    target: &str,
    cluster_proxy: Option<&str>,
    env: &ProxyEnv,
) -> Result<Option<Proxy>, Error> {
    if let Some(url) = cluster_proxy.filter(|u| !u.trim().is_empty()) {
        return Proxy::parse(url, "clusterDetails.proxyUrl").map(Some);
    }
    let url = reqwest::Url::parse(target)
        .map_err(|err| Error::Config(format!("cluster URL '{target}' is invalid: {err}")))?;
    let (variable, name) = match url.scheme() {
        "https" => (&env.https, "HTTPS_PROXY"),
        _ => (&env.http, "HTTP_PROXY"),
    };
    let Some(value) = variable else {
        return Ok(None);
    };
    let host = url
        .host_str()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let port = url.port_or_known_default().unwrap_or(443);
    // Go never sends loopback through a proxy from the environment.
    let loopback = host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if loopback || no_proxy_matches(env.no_proxy.as_deref().unwrap_or(""), &host, port) {
        return Ok(None);
    }
    Proxy::parse(value, name).map(Some)
}

/// Whether a `NO_PROXY` list names `host` (lower case) on `port`: `*`; an IP address or CIDR
/// block; a domain, which matches itself and its subdomains (`.domain` and `*.domain` only the
/// subdomains); each optionally with `:port`.
pub fn no_proxy_matches(list: &str, host: &str, port: u16) -> bool {
    let host_ip = host.parse::<IpAddr>().ok();
    list.split(',')
        .map(|entry| entry.trim().to_ascii_lowercase())
        .filter(|entry| !entry.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            if let Some((network, bits)) = entry.split_once('/') {
                return match (network.parse::<IpAddr>(), bits.parse::<u8>(), host_ip) {
                    (Ok(network), Ok(bits), Some(ip)) => in_cidr(ip, network, bits),
                    _ => false,
                };
            }
            let (name, entry_port) = split_port(&entry);
            if entry_port.is_some_and(|p| p != port) {
                return false;
            }
            if let (Ok(ip), Some(host_ip)) = (name.parse::<IpAddr>(), host_ip) {
                return ip == host_ip;
            }
            let name = name.strip_prefix('*').unwrap_or(name);
            match name.strip_prefix('.') {
                Some(suffix) => host.ends_with(&format!(".{suffix}")),
                None => host == name || host.ends_with(&format!(".{name}")),
            }
        })
}

/// `host:port`, `[v6]:port`, or a bare host (an IPv6 address without brackets has no port).
fn split_port(entry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((ip, tail)) => (ip, tail.strip_prefix(':').and_then(|p| p.parse().ok())),
            None => (entry, None),
        };
    }
    match entry.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => match port.parse() {
            Ok(port) => (name, Some(port)),
            Err(_) => (entry, None),
        },
        _ => (entry, None),
    }
}

fn in_cidr(ip: IpAddr, network: IpAddr, bits: u8) -> bool {
    match (ip, network) {
        (IpAddr::V4(ip), IpAddr::V4(network)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(ip) & mask == u32::from(network) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(network)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(ip) & mask == u128::from(network) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(https: Option<&str>, no_proxy: Option<&str>) -> ProxyEnv {
        ProxyEnv {
            https: https.map(String::from),
            http: Some("http://plain-proxy:3128".into()),
            no_proxy: no_proxy.map(String::from),
        }
    }

    #[test]
    fn proxy_urls_parse_with_credentials_and_default_ports() {
        let proxy = Proxy::parse("http://us%40er:p%3Ass@proxy.corp:8080", "x").unwrap();
        assert_eq!(proxy.scheme, ProxyScheme::Http);
        assert_eq!((proxy.host.as_str(), proxy.port), ("proxy.corp", 8080));
        assert_eq!(proxy.auth, Some(("us@er".into(), "p:ss".into())));
        assert_eq!(proxy.to_string(), "http://us@er:***@proxy.corp:8080");
        assert!(!format!("{proxy:?}").contains("p:ss"));
        assert_eq!(Proxy::parse("proxy.corp", "x").unwrap().port, 80);
        let socks = Proxy::parse("socks5://[::1]", "x").unwrap();
        assert_eq!(
            (socks.scheme, socks.host.as_str(), socks.port),
            (ProxyScheme::Socks5, "::1", 1080)
        );
    }

    #[test]
    fn unusable_proxy_urls_are_refused_without_quoting_them() {
        for bad in [
            "https://u:hunter22@p:1",
            "ftp://u:hunter22@p:1",
            "http://u:hunter22@:1",
        ] {
            let err = Proxy::parse(bad, "HTTPS_PROXY").unwrap_err().to_string();
            assert!(
                err.starts_with("invalid cluster configuration: HTTPS_PROXY"),
                "{err}"
            );
            assert!(!err.contains("hunter22"), "{err}");
        }
    }

    #[test]
    fn the_clusters_proxy_wins_and_applies_even_to_loopback() {
        let chosen = choose(
            "https://127.0.0.1:6443",
            Some("socks5://p:1"),
            &env(None, Some("*")),
        );
        assert_eq!(chosen.unwrap().unwrap().scheme, ProxyScheme::Socks5);
    }

    #[test]
    fn the_environment_is_read_by_scheme_and_skips_loopback_and_no_proxy() {
        let e = env(
            Some("http://secure-proxy:3128"),
            Some("internal.corp,10.0.0.0/8"),
        );
        let host = |url: &str| choose(url, None, &e).unwrap().map(|p| p.host);
        assert_eq!(
            host("https://api.example.com").as_deref(),
            Some("secure-proxy")
        );
        assert_eq!(
            host("http://api.example.com").as_deref(),
            Some("plain-proxy")
        );
        assert_eq!(host("https://localhost:6443"), None);
        assert_eq!(host("https://127.0.0.1:6443"), None);
        assert_eq!(host("https://[::1]:6443"), None);
        assert_eq!(host("https://k8s.internal.corp"), None);
        assert_eq!(host("https://10.1.2.3:6443"), None);
        assert_eq!(
            host("https://11.1.2.3:6443").as_deref(),
            Some("secure-proxy")
        );
        assert_eq!(
            choose("https://api.example.com", None, &env(None, None)).unwrap(),
            None
        );
    }

    #[test]
    fn no_proxy_matches_like_go() {
        let cases = [
            ("*", "anything.example", 443, true),
            ("example.com", "example.com", 443, true),
            ("example.com", "api.example.com", 443, true),
            ("example.com", "badexample.com", 443, false),
            (".example.com", "example.com", 443, false),
            (".example.com", "api.example.com", 443, true),
            ("*.example.com", "api.example.com", 443, true),
            ("*.example.com", "example.com", 443, false),
            ("example.com:6443", "api.example.com", 6443, true),
            ("example.com:6443", "api.example.com", 443, false),
            ("192.168.1.10", "192.168.1.10", 6443, true),
            ("192.168.1.10:443", "192.168.1.10", 6443, false),
            ("192.168.0.0/16", "192.168.7.7", 443, true),
            ("192.168.0.0/16", "192.169.7.7", 443, false),
            ("fd00::/8", "fd12::1", 443, true),
            ("[fd00::1]:443", "fd00::1", 443, true),
            ("fd00::1", "fd00::1", 443, true),
            (" Example.COM , other", "api.example.com", 443, true),
            ("", "example.com", 443, false),
            ("10.0.0.0/8", "ten.example", 443, false),
        ];
        for (list, host, port, expected) in cases {
            assert_eq!(
                no_proxy_matches(list, host, port),
                expected,
                "{list} vs {host}:{port}"
            );
        }
    }
}
