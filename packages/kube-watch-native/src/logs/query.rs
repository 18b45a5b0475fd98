//! The log request: which container, and the options of `PodLogOptions`. Pure, no I/O.

use serde::Deserialize;

use crate::request::encode;

/// Whose log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogTarget {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod.
    pub pod: String,
    /// The container; the pod's only one when `None`.
    pub container: Option<String>,
}

impl LogTarget {
    /// `/api/v1/namespaces/{ns}/pods/{pod}/log`, each name percent-encoded.
    pub fn path(&self) -> String {
        format!(
            "/api/v1/namespaces/{}/pods/{}/log",
            encode(&self.namespace),
            encode(&self.pod)
        )
    }
}

/// What the caller asked for, as the API server's `PodLogOptions` (and as JavaScript names
/// them, checked by `lib/logs.js`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LogOptions {
    /// Keep the stream open and hand on lines as they are written.
    pub follow: bool,
    /// The previous instance of a restarted container.
    pub previous: bool,
    /// Each line starts with its timestamp and a space.
    pub timestamps: bool,
    /// Which of the log's lines.
    #[serde(flatten)]
    pub range: LogRange,
}

/// Which of a log's lines a request answers: the API server's filters, applied in this order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LogRange {
    /// Only lines of the last this many seconds.
    pub since_seconds: Option<i64>,
    /// Only lines from this RFC 3339 time on.
    pub since_time: Option<String>,
    /// Only the last this many lines (of what there is when the request is answered).
    pub tail_lines: Option<i64>,
    /// At most this many bytes of log in all.
    pub limit_bytes: Option<i64>,
}

/// One request's query: the caller's options on the first request, a resumed follow's after it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Query {
    pub(super) container: Option<String>,
    pub(super) options: LogOptions,
}

impl Query {
    /// The URL on the cluster's `base` URL (its own path kept).
    pub(super) fn url(&self, base: &str, target: &LogTarget) -> String {
        let mut url = format!("{}{}", base.trim_end_matches('/'), target.path());
        let mut first = true;
        let mut push = |key: &str, value: &str| {
            url.push(if first { '?' } else { '&' });
            first = false;
            url.push_str(key);
            url.push('=');
            url.push_str(&encode(value));
        };
        if let Some(container) = &self.container {
            push("container", container);
        }
        let options = &self.options;
        for (key, set) in [
            ("follow", options.follow),
            ("previous", options.previous),
            ("timestamps", options.timestamps),
        ] {
            if set {
                push(key, "true");
            }
        }
        let range = &options.range;
        if let Some(seconds) = range.since_seconds {
            push("sinceSeconds", &seconds.to_string());
        }
        if let Some(time) = &range.since_time {
            push("sinceTime", time);
        }
        if let Some(lines) = range.tail_lines {
            push("tailLines", &lines.to_string());
        }
        if let Some(bytes) = range.limit_bytes {
            push("limitBytes", &bytes.to_string());
        }
        url
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_carry_each_option_set_and_encode_names() {
        let target = LogTarget {
            namespace: "team a".into(),
            pod: "web-1".into(),
            container: None,
        };
        let options: LogOptions = serde_json::from_str(
            r#"{"follow":true,"timestamps":true,"sinceTime":"2026-12-06T10:00:00.5Z","tailLines":10,"limitBytes":4096}"#,
        )
        .unwrap();
        let query = Query {
            container: Some("app".into()),
            options,
        };
        assert_eq!(
            query.url("https://k8s.example/prefix/", &target),
            "https://k8s.example/prefix/api/v1/namespaces/team%20a/pods/web-1/log\
             ?container=app&follow=true&timestamps=true&sinceTime=2026-12-06T10%3A00%3A00.5Z\
             &tailLines=10&limitBytes=4096"
        );
        assert_eq!(
            Query::default().url("http://127.0.0.1:1", &target),
            "http://127.0.0.1:1/api/v1/namespaces/team%20a/pods/web-1/log"
        );
    }
}
