//! Building the watch request: resource path, query string and URL. Pure, no I/O.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// What `encodeURIComponent` leaves alone, so paths and queries match what Backstage's
/// JavaScript watcher sends byte for byte.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// `component` percent-encoded as `encodeURIComponent` does.
pub(crate) fn encode(component: &str) -> String {
    utf8_percent_encode(component, COMPONENT).to_string()
}

/// The collection a watch targets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceRef {
    /// API group; empty for the core group.
    pub group: String,
    /// API version, e.g. `v1`.
    pub version: String,
    /// Plural resource name, e.g. `pods`.
    pub plural: String,
    /// Namespace, or `None` for all namespaces / cluster-scoped resources.
    pub namespace: Option<String>,
}

impl ResourceRef {
    /// `/api/{v}` or `/apis/{group}/{v}`, then `/namespaces/{ns}`, then `/{plural}`, every
    /// segment percent-encoded.
    pub fn path(&self) -> String {
        let mut path = if self.group.is_empty() {
            format!("/api/{}", encode(&self.version))
        } else {
            format!("/apis/{}/{}", encode(&self.group), encode(&self.version))
        };
        if let Some(namespace) = self.namespace.as_deref().filter(|ns| !ns.is_empty()) {
            path.push_str("/namespaces/");
            path.push_str(&encode(namespace));
        }
        path.push('/');
        path.push_str(&encode(&self.plural));
        path
    }
}

/// The watch's query options; each is sent only when set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WatchQuery {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`, e.g. `metadata.name=web,status.phase!=Running`.
    pub field_selector: Option<String>,
    /// `resourceVersion` to start from.
    pub resource_version: Option<String>,
    /// `timeoutSeconds`: the server ends the watch after this long.
    pub timeout_seconds: Option<u64>,
    /// `allowWatchBookmarks=true` when true.
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents=true` when true.
    pub send_initial_events: bool,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<String>,
}

impl WatchQuery {
    /// The query string, starting with `watch=true`, in the order Backstage's watcher uses;
    /// `fieldSelector`, which Backstage's watcher does not send, follows `labelSelector` as
    /// in client-go's query encoding.
    pub fn to_query_string(&self) -> String {
        let mut query = String::from("watch=true");
        let mut push = |key: &str, value: &str| {
            query.push('&');
            query.push_str(key);
            query.push('=');
            query.push_str(&encode(value));
        };
        if let Some(selector) = &self.label_selector {
            push("labelSelector", selector);
        }
        if let Some(selector) = &self.field_selector {
            push("fieldSelector", selector);
        }
        if let Some(version) = &self.resource_version {
            push("resourceVersion", version);
        }
        if let Some(seconds) = self.timeout_seconds {
            push("timeoutSeconds", &seconds.to_string());
        }
        if self.allow_watch_bookmarks {
            push("allowWatchBookmarks", "true");
        }
        if self.send_initial_events {
            push("sendInitialEvents", "true");
        }
        if let Some(matching) = &self.resource_version_match {
            push("resourceVersionMatch", matching);
        }
        query
    }
}

/// The full watch URL: the cluster URL (whose own path, e.g. a Rancher proxy prefix, is kept),
/// the resource path, the query.
pub fn watch_url(cluster_url: &str, resource_path: &str, query: &WatchQuery) -> String {
    let base = cluster_url.trim_end_matches('/');
    format!("{base}{resource_path}?{}", query.to_query_string())
}

/// A list page's URL (the informer's paginated list, and its probe of the server's
/// resourceVersion): selectors, `resourceVersion` and `resourceVersionMatch`, `limit` (when
/// above 0) and the `continue` token of the page before, each sent only when set.
pub fn list_url(
    cluster_url: &str,
    resource_path: &str,
    query: &WatchQuery,
    limit: u32,
    continue_token: Option<&str>,
) -> String {
    let base = cluster_url.trim_end_matches('/');
    let mut parts = Vec::new();
    if let Some(selector) = &query.label_selector {
        parts.push(format!("labelSelector={}", encode(selector)));
    }
    if let Some(selector) = &query.field_selector {
        parts.push(format!("fieldSelector={}", encode(selector)));
    }
    if let Some(rv) = &query.resource_version {
        parts.push(format!("resourceVersion={}", encode(rv)));
    }
    if let Some(matching) = &query.resource_version_match {
        parts.push(format!("resourceVersionMatch={}", encode(matching)));
    }
    if limit > 0 {
        parts.push(format!("limit={limit}"));
    }
    if let Some(token) = continue_token {
        parts.push(format!("continue={}", encode(token)));
    }
    if parts.is_empty() {
        format!("{base}{resource_path}")
    } else {
        format!("{base}{resource_path}?{}", parts.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(group: &str, version: &str, plural: &str, ns: Option<&str>) -> ResourceRef {
        ResourceRef {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            namespace: ns.map(Into::into),
        }
    }

    #[test]
    fn list_urls_carry_selectors_limit_and_continue() {
        let query = WatchQuery {
            label_selector: Some("app in (a,b)".into()),
            ..WatchQuery::default()
        };
        assert_eq!(
            list_url("http://h/", "/api/v1/pods", &query, 500, Some("a+b=")),
            "http://h/api/v1/pods?labelSelector=app%20in%20(a%2Cb)&limit=500&continue=a%2Bb%3D"
        );
        assert_eq!(
            list_url("http://h", "/api/v1/pods", &WatchQuery::default(), 0, None),
            "http://h/api/v1/pods"
        );
    }

    #[test]
    fn core_group_paths() {
        assert_eq!(resource("", "v1", "pods", None).path(), "/api/v1/pods");
        assert_eq!(
            resource("", "v1", "pods", Some("default")).path(),
            "/api/v1/namespaces/default/pods"
        );
    }

    #[test]
    fn named_group_paths() {
        assert_eq!(
            resource("apps", "v1", "deployments", None).path(),
            "/apis/apps/v1/deployments"
        );
        assert_eq!(
            resource("stable.example.com", "v1beta1", "crontabs", Some("team-a")).path(),
            "/apis/stable.example.com/v1beta1/namespaces/team-a/crontabs"
        );
    }

    #[test]
    fn empty_namespace_means_all_namespaces() {
        assert_eq!(resource("", "v1", "pods", Some("")).path(), "/api/v1/pods");
    }

    #[test]
    fn segments_are_percent_encoded_like_encode_uri_component() {
        assert_eq!(
            resource("", "v1", "pods", Some("a b/c?d#é")).path(),
            "/api/v1/namespaces/a%20b%2Fc%3Fd%23%C3%A9/pods"
        );
        assert_eq!(
            resource("", "v1", "x!~*'()", None).path(),
            "/api/v1/x!~*'()"
        );
    }

    #[test]
    fn query_carries_only_what_is_set() {
        assert_eq!(WatchQuery::default().to_query_string(), "watch=true");
        let query = WatchQuery {
            label_selector: Some("app=web,tier in (a,b)".into()),
            field_selector: Some("status.phase!=Running,metadata.name=web-1".into()),
            resource_version: Some("42".into()),
            timeout_seconds: Some(30),
            allow_watch_bookmarks: true,
            send_initial_events: true,
            resource_version_match: Some("NotOlderThan".into()),
        };
        assert_eq!(
            query.to_query_string(),
            "watch=true&labelSelector=app%3Dweb%2Ctier%20in%20(a%2Cb)\
             &fieldSelector=status.phase!%3DRunning%2Cmetadata.name%3Dweb-1&resourceVersion=42\
             &timeoutSeconds=30&allowWatchBookmarks=true&sendInitialEvents=true\
             &resourceVersionMatch=NotOlderThan"
        );
    }

    #[test]
    fn field_selector_alone_follows_watch() {
        let query = WatchQuery {
            field_selector: Some("metadata.namespace==kube-system".into()),
            ..WatchQuery::default()
        };
        assert_eq!(
            query.to_query_string(),
            "watch=true&fieldSelector=metadata.namespace%3D%3Dkube-system"
        );
    }

    #[test]
    fn cluster_url_path_prefix_is_kept() {
        let url = watch_url(
            "https://rancher.example/k8s/clusters/c-1/",
            "/api/v1/pods",
            &WatchQuery::default(),
        );
        assert_eq!(
            url,
            "https://rancher.example/k8s/clusters/c-1/api/v1/pods?watch=true"
        );
        assert_eq!(
            watch_url(
                "http://127.0.0.1:8001",
                "/api/v1/pods",
                &WatchQuery::default()
            ),
            "http://127.0.0.1:8001/api/v1/pods?watch=true"
        );
    }
}
