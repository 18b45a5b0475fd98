//! The calls besides watches and informers: one GET or POST (`fetchText`, `kube-watch`'s
//! discovery, a `SelfSubjectReview`) on the watches' pool, a viewer's access reviews
//! (`reviewListAccess`), the pool's connections (`poolStats`), and where the binary came from.

use std::time::Duration;

use napi::bindgen_prelude::{AsyncBlock, AsyncBlockBuilder};
use napi::{Env, Result};
use napi_derive::napi;

use super::{POOL, WatchSpec, endpoint_for};
use crate::access::{Decision, ListAccess, review_all};
use crate::engine::connect::Endpoint;
use crate::error::Error;
use crate::http::{Get, Kind};

/// What [`fetch_text`] got.
#[napi(object)]
pub struct FetchedText {
    /// The HTTP status.
    pub status: u32,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The body (gzip decoded), as UTF-8 text.
    pub body: String,
}

/// What [`fetch_text`] sends besides a GET.
#[napi(object)]
pub struct FetchRequest {
    /// `GET` (the default) or `POST`.
    pub method: Option<String>,
    /// With `POST`: the JSON text sent (`Content-Type: application/json`); empty when absent.
    pub body: Option<String>,
}

impl FetchRequest {
    /// The body to POST (None: a GET), or why the request cannot be sent.
    fn post(self) -> std::result::Result<Option<bytes::Bytes>, String> {
        let method = self.method.unwrap_or_else(|| "GET".to_owned());
        match (method.to_ascii_uppercase().as_str(), self.body) {
            ("GET", None) => Ok(None),
            ("GET", Some(_)) => Err("fetchText: a body needs method POST".to_owned()),
            ("POST", body) => Ok(Some(body.unwrap_or_default().into())),
            _ => Err(format!(
                "fetchText: method {method:?} is not supported (GET or POST)"
            )),
        }
    }
}

/// One GET of `path` (appended to the cluster URL's own path) on the spec's cluster, with its
/// credential, over the same pooled connections, TLS, proxy and `tlsServerName` as watches:
/// `kube-watch`'s discovery requests; with `request` `{ method: 'POST', body }`, a POST of that
/// JSON instead (a `SelfSubjectReview` with the cluster's own credential). Rejects with the
/// reason (credentials masked) when no answer came or the body is larger than `max_bytes`, and
/// with a message naming the method when it is neither GET nor POST.
#[napi(ts_return_type = "Promise<FetchedText>")]
pub fn fetch_text(
    env: &Env,
    spec: WatchSpec,
    path: String,
    accept: String,
    max_bytes: u32,
    request: Option<FetchRequest>,
) -> Result<AsyncBlock<FetchedText>> {
    let post = match request.map(FetchRequest::post).transpose() {
        Ok(post) => post.flatten(),
        Err(reason) => {
            // Rejected like any other failure of the call, not thrown.
            return AsyncBlockBuilder::new(async move {
                Err::<FetchedText, _>(napi::Error::from_reason(reason))
            })
            .build(env);
        }
    };
    let method = if post.is_some() { "POST" } else { "GET" };
    let what = format!("{method} {path}");
    let found = endpoint_for(&spec, &what);
    AsyncBlockBuilder::new(async move {
        let fail = |text: String| napi::Error::from_reason(text);
        let Endpoint {
            client,
            base_url,
            bearer,
            redactor,
        } = found.map_err(|(_, warning)| fail(warning))?;
        let get = Get {
            url: format!("{}{path}", base_url.trim_end_matches('/')),
            bearer,
            accept: Some(accept),
            post,
        };
        let describe = |err: Error| fail(redactor.apply(&format!("{what}: {}", err.describe())));
        let mut response = POOL
            .get(&client, &get, Kind::Short)
            .await
            .map_err(describe)?;
        // Read before the head is used: `response` is still needed for the headers.
        let body = response
            .read_to_end(max_bytes as usize, None)
            .await
            .map_err(describe)?;
        let content_type = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(String::from);
        Ok(FetchedText {
            content_type,
            status: u32::from(response.status()),
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    })
    .build(env)
}

/// Whether the spec's credential may do each of `accesses` on the spec's cluster (a JSON array
/// of [`ListAccess`]: `{ group, resource, namespace?, verb?, subresource?, name? }`, a LIST
/// unless `verb` says otherwise): one `SelfSubjectAccessReview` each, sent together on the
/// pool's connections; `'allowed'`, `'refused'` or `'failed'` in the same order (all `'failed'`
/// when the spec cannot be used). Accesses that are not such an array throw.
#[napi(ts_return_type = "Promise<Array<'allowed' | 'refused' | 'failed'>>")]
pub fn review_list_access(
    env: &Env,
    spec: WatchSpec,
    accesses: String,
    timeout_ms: u32,
) -> Result<AsyncBlock<Vec<&'static str>>> {
    let found = endpoint_for(&spec, "access review");
    let accesses: Vec<ListAccess> = serde_json::from_str(&accesses).map_err(|err| {
        napi::Error::new(
            napi::Status::InvalidArg,
            format!("kube-watch-native: the accesses to review are not valid: {err}"),
        )
    })?;
    AsyncBlockBuilder::new(async move {
        let decisions = match found {
            Ok(endpoint) => {
                let timeout = Duration::from_millis(u64::from(timeout_ms));
                review_all(&POOL, &endpoint, &accesses, timeout).await
            }
            Err(_) => vec![Decision::Failed; accesses.len()],
        };
        Ok(decisions.into_iter().map(Decision::as_str).collect())
    })
    .build(env)
}

/// One HTTP/2 connection of the pool, for `watcher.stats()` (and, as JSON, the metrics).
#[napi(object)]
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionInfo {
    /// Streams booked or running on it.
    pub streams: u32,
    /// The server's advertised `SETTINGS_MAX_CONCURRENT_STREAMS`; absent while opening.
    pub stream_limit: Option<u32>,
    /// Whether new watches may go on it (false after GOAWAY, a refused or a queued stream).
    pub accepting: bool,
}

/// The pool's connections to one cluster origin (per TLS identity), for `watcher.stats()` (and,
/// as JSON, the metrics).
#[napi(object)]
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterConnections {
    /// `scheme://host:port` of the API server.
    pub origin: String,
    /// HTTP/1.1 requests in flight (each on a connection of its own).
    pub http1_requests: u32,
    /// HTTP/2 connections and the streams on each.
    pub connections: Vec<ConnectionInfo>,
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The process-wide connection pool, per cluster origin.
#[napi]
pub fn pool_stats() -> Vec<ClusterConnections> {
    POOL.stats()
        .into_iter()
        .map(|origin| ClusterConnections {
            origin: origin.origin,
            http1_requests: count(origin.http1_requests),
            connections: origin
                .connections
                .into_iter()
                .map(|c| ConnectionInfo {
                    streams: count(c.streams),
                    stream_limit: c.stream_limit.map(count),
                    accepting: c.accepting,
                })
                .collect(),
        })
        .collect()
}

/// Where this binary came from: embedded at build time by build.rs.
#[napi(object)]
pub struct BuildInfo {
    /// The crate's version (the npm package's, kept equal by a test).
    pub version: String,
    /// The Rust target triple it was compiled for.
    pub target: String,
    /// The git commit it was built from, or "unknown".
    pub commit: String,
}

/// The version, target triple and commit of this binary.
#[napi]
pub fn build_info() -> BuildInfo {
    BuildInfo {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        target: env!("KWN_BUILD_TARGET").to_owned(),
        commit: env!("KWN_BUILD_COMMIT").to_owned(),
    }
}
