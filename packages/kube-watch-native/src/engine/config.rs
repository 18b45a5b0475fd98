//! What an engine run is given: the collection, how to list it, its limits.

use std::time::Duration;

use super::backoff::BackoffPolicy;
use super::connect::Cluster;
use crate::projection::Projection;

/// How the initial list (and a relist) is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitialList {
    /// A streaming list where the cluster serves one, else pages.
    Auto,
    /// Always `limit`/`continue` pages.
    Paginated,
    /// Always a streaming list.
    Streaming,
}

/// Everything a run needs, resolved before it starts.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// How to reach the cluster (with whatever credential the provider gives).
    pub cluster: Cluster,
    /// The collection's path, e.g. `/api/v1/namespaces/ns/pods`.
    pub resource_path: String,
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `limit` of each list page; a page is read into memory up to
    /// [`max_page_bytes`]`(page_size)`.
    pub page_size: u32,
    /// How to list.
    pub initial_list: InitialList,
    /// When to try again.
    pub backoff: BackoffPolicy,
    /// Drop a watch that receives nothing (bookmarks count) for this long.
    pub idle_timeout: Option<Duration>,
    /// Cut objects down before caching them.
    pub projection: Option<Projection>,
    /// Ask a refreshing provider again before a request once its answer is this old.
    pub credential_ttl: Duration,
    /// Lines above this end the watch (a fault, resumed).
    pub max_line_bytes: usize,
    /// Each watch asks the server to end it after about this long (jittered up to twice).
    pub watch_timeout: Duration,
    /// The cache holds texts packed (see `crate::informer::object::Object::packed`).
    pub pack: bool,
    /// An informer asks the server whether its resourceVersion is not older than the one it
    /// reached (a LIST of one object, `resourceVersionMatch=NotOlderThan`) before each resumed
    /// watch and after an open watch has been silent this long: a server behind it (its
    /// storage restored, the cluster recreated in place) is relisted. `None`: never.
    pub probe: Option<Duration>,
}

/// How long an informer's open watch may be silent before it probes the server's
/// resourceVersion (see [`RunConfig::probe`]): a real API server sends a bookmark about once a
/// minute to a watch that asked for them, and none to a watch from a resourceVersion it never
/// reached.
pub const DEFAULT_PROBE_AFTER: Duration = Duration::from_secs(60);

/// The most one object's JSON is taken to need in a list page: etcd refuses a request
/// larger than 1.5 MiB (`--max-request-bytes`' default), so no stored object is larger, and
/// the JSON the API server renders of an object it keeps as protobuf runs up to a third
/// longer (base64 of binary data, field names).
pub const MAX_OBJECT_BYTES: usize = 2 << 20;

/// A page's own text around its items (kind, metadata, the continue token).
const PAGE_ENVELOPE_BYTES: usize = 1 << 20;

/// The most of a list page of `page_size` objects that is read into memory: a page past it is
/// not one the API server sends (an endless or corrupted body, a hostile peer), and ends the
/// list with an error, retried after a backoff. 1 GiB at the default 500, 3 MiB at 1.
pub fn max_page_bytes(page_size: u32) -> usize {
    (page_size as usize)
        .saturating_mul(MAX_OBJECT_BYTES)
        .saturating_add(PAGE_ENVELOPE_BYTES)
}

pub(crate) fn capacity(text: &Option<String>) -> usize {
    text.as_ref().map_or(0, String::capacity)
}

impl RunConfig {
    /// A plain watch's of `resource_path` on `cluster` (its query is its plan's: see
    /// `super::plan::Once`): what only an informer uses (selectors, pages, backoff, timeouts,
    /// credential refresh, packing) unset, and no line or idle limit, no projection until the
    /// caller sets them.
    pub fn once(cluster: Cluster, resource_path: String) -> Self {
        Self {
            cluster,
            resource_path,
            label_selector: None,
            field_selector: None,
            page_size: 0,
            initial_list: InitialList::Auto,
            backoff: BackoffPolicy::default(),
            idle_timeout: None,
            projection: None,
            credential_ttl: Duration::ZERO,
            max_line_bytes: usize::MAX,
            watch_timeout: Duration::ZERO,
            pack: false,
            probe: None,
        }
    }

    /// Its strings on the heap, by capacity: the path, the selectors, the cluster's (name, URL,
    /// CA data, proxy and TLS name, the proxy environment). A projection's paths are not
    /// counted (a few short strings when `fields` or `strip` is given).
    pub(crate) fn heap_bytes(&self) -> usize {
        let spec = &self.cluster.spec;
        let env = &self.cluster.proxy_env;
        let in_cluster = &self.cluster.in_cluster;
        self.resource_path.capacity()
            + capacity(&self.label_selector)
            + capacity(&self.field_selector)
            + spec.name.capacity()
            + spec.url.capacity()
            + capacity(&spec.auth_provider)
            // The process's one copy (`shared_ca_data`): this informer's share of it.
            + spec
                .ca_data
                .as_ref()
                .map_or(0, |text| text.len() / std::sync::Arc::strong_count(text))
            + capacity(&spec.ca_file)
            + capacity(&self.cluster.proxy_url)
            + capacity(&self.cluster.tls_server_name)
            + capacity(&env.https)
            + capacity(&env.http)
            + capacity(&env.no_proxy)
            + capacity(&in_cluster.host)
            + capacity(&in_cluster.port)
            + in_cluster.ca_path.as_ref().map_or(0, |p| p.capacity())
    }
}
