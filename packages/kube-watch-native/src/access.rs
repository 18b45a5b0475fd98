//! A viewer's access to what a shared cache or stream answers for it, asked of the API server
//! with the viewer's own credential: one `SelfSubjectAccessReview` per group, resource and
//! namespace (verb `list` for the LISTs a cache answers; `get` of a pod's `log` subresource for a
//! shared log follow), all of one viewer and cluster sent together on the pool's connections, so
//! that a tab load's reviews cost JavaScript one call and one answer instead of one each.
//!
//! The decisions are what the default fetcher's LIST with that credential would meet: 401 (a
//! token the server does not accept) is a refusal, as the LIST's 401 is; any other answer that
//! is not a review, and any review that could not be had, is a failure, which sends the load to
//! the default fetcher.

use std::time::Duration;

use bytes::Bytes;
use futures::future::join_all;

use crate::engine::connect::Endpoint;
use crate::http::{ConnectionPool, Get, Kind};

/// Where reviews are posted.
pub const REVIEW_PATH: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

/// A review's answer larger than this is not a review.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The request whose access is asked: a LIST unless `verb` says otherwise; cluster-wide when
/// `namespace` is `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Deserialize)]
pub struct ListAccess {
    /// The API group, `""` for the core group.
    pub group: String,
    /// The resource's plural name.
    pub resource: String,
    /// The namespace listed, if any.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The verb, `list` when `None`.
    #[serde(default)]
    pub verb: Option<String>,
    /// The subresource (`log`), if any.
    #[serde(default)]
    pub subresource: Option<String>,
    /// The object's name, for a request of one object.
    #[serde(default)]
    pub name: Option<String>,
}

/// What the API server said of one [`ListAccess`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The viewer may list it: the cache answers.
    Allowed,
    /// The viewer may not (or its token is refused): the default fetcher answers with its error.
    Refused,
    /// No decision could be had (network, a 5xx, an answer that is not a review).
    Failed,
}

impl Decision {
    /// The name JavaScript sees.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allowed => "allowed",
            Decision::Refused => "refused",
            Decision::Failed => "failed",
        }
    }
}

/// The review's JSON body for `access`.
pub fn review_body(access: &ListAccess) -> String {
    let mut attributes = serde_json::json!({
        "verb": access.verb.as_deref().unwrap_or("list"),
        "group": access.group,
        "resource": access.resource,
    });
    let optional = [
        ("namespace", &access.namespace),
        ("subresource", &access.subresource),
        ("name", &access.name),
    ];
    for (field, value) in optional {
        if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
            attributes[field] = value.into();
        }
    }
    serde_json::json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": { "resourceAttributes": attributes },
    })
    .to_string()
}

/// The decision an answer of `status` with `body` carries.
pub fn decision(status: u16, body: &[u8]) -> Decision {
    match status {
        // A token the server does not accept: the default's LIST gets the same 401.
        401 => Decision::Refused,
        200 | 201 => match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(review) if review["status"]["allowed"] == true => Decision::Allowed,
            Ok(review) if review.is_object() => Decision::Refused,
            _ => Decision::Failed,
        },
        _ => Decision::Failed,
    }
}

/// Asks every review of `accesses` with `endpoint`'s credential at once; the decisions in the
/// same order. One that has no answer within `timeout` has failed.
pub async fn review_all(
    pool: &ConnectionPool,
    endpoint: &Endpoint,
    accesses: &[ListAccess],
    timeout: Duration,
) -> Vec<Decision> {
    let url = format!("{}{REVIEW_PATH}", endpoint.base_url.trim_end_matches('/'));
    let asks = accesses.iter().map(|access| {
        let get = Get {
            url: url.clone(),
            bearer: endpoint.bearer.clone(),
            accept: None,
            post: Some(Bytes::from(review_body(access))),
        };
        async move {
            let ask = async {
                let mut response = pool.get(&endpoint.client, &get, Kind::Short).await.ok()?;
                let body = response.read_to_end(MAX_ANSWER_BYTES, None).await.ok()?;
                Some(decision(response.status(), &body))
            };
            match tokio::time::timeout(timeout, ask).await {
                Ok(Some(decision)) => decision,
                Ok(None) | Err(_) => Decision::Failed,
            }
        }
    });
    join_all(asks).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(namespace: Option<&str>) -> ListAccess {
        ListAccess {
            group: "apps".into(),
            resource: "deployments".into(),
            namespace: namespace.map(Into::into),
            ..ListAccess::default()
        }
    }

    #[test]
    fn the_body_asks_for_get_of_a_pods_log() {
        let log = ListAccess {
            resource: "pods".into(),
            namespace: Some("shop".into()),
            verb: Some("get".into()),
            subresource: Some("log".into()),
            name: Some("web-1".into()),
            ..ListAccess::default()
        };
        let body: serde_json::Value = serde_json::from_str(&review_body(&log)).unwrap();
        assert_eq!(
            body["spec"]["resourceAttributes"],
            serde_json::json!({ "verb": "get", "group": "", "resource": "pods", "namespace": "shop",
                "subresource": "log", "name": "web-1" })
        );
    }

    #[test]
    fn the_body_asks_for_list_on_the_resource_in_its_namespace_or_cluster_wide() {
        let body: serde_json::Value =
            serde_json::from_str(&review_body(&access(Some("team-a")))).unwrap();
        assert_eq!(body["kind"], "SelfSubjectAccessReview");
        assert_eq!(
            body["spec"]["resourceAttributes"],
            serde_json::json!({ "verb": "list", "group": "apps", "resource": "deployments", "namespace": "team-a" })
        );
        for namespace in [None, Some("")] {
            let body: serde_json::Value =
                serde_json::from_str(&review_body(&access(namespace))).unwrap();
            assert_eq!(
                body["spec"]["resourceAttributes"],
                serde_json::json!({ "verb": "list", "group": "apps", "resource": "deployments" })
            );
        }
    }

    #[test]
    fn answers_become_decisions() {
        let cases: [(u16, &str, Decision); 8] = [
            (201, r#"{"status":{"allowed":true}}"#, Decision::Allowed),
            (200, r#"{"status":{"allowed":true}}"#, Decision::Allowed),
            (
                201,
                r#"{"status":{"allowed":false,"reason":"no"}}"#,
                Decision::Refused,
            ),
            (201, r#"{"status":{}}"#, Decision::Refused),
            (201, "not json", Decision::Failed),
            (401, "", Decision::Refused),
            (403, r#"{"kind":"Status"}"#, Decision::Failed),
            (503, "", Decision::Failed),
        ];
        for (status, body, expected) in cases {
            assert_eq!(
                decision(status, body.as_bytes()),
                expected,
                "{status} {body}"
            );
        }
    }

    #[test]
    fn decisions_have_the_names_javascript_knows() {
        let names = [Decision::Allowed, Decision::Refused, Decision::Failed].map(Decision::as_str);
        assert_eq!(names, ["allowed", "refused", "failed"]);
    }
}
