//! Error types of the core and their mapping onto the contract's ERROR events.
//!
//! Inside Rust every failure is a typed [`Error`]; at the JavaScript boundary it becomes
//! one `ERROR` event with the error type and status code that Backstage's watcher reports.
//! Its text for a warning is [`Error::describe`], the one place the cause chain is written
//! out; a Kubernetes `Status` (an error body, an in-stream ERROR) is read by [`StatusBody`],
//! whose `code` follows the one rule of [`status_code`].

use std::time::Duration;

use serde::Deserialize;

/// The `errorType` values of Backstage's `KubernetesFetchError` that a watch can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    /// HTTP 400, or a client-side auth provider this watcher refuses to run.
    BadRequest,
    /// HTTP 401, or an anonymous credential where one is not allowed.
    Unauthorized,
    /// HTTP 404.
    NotFound,
    /// HTTP 500, and every failure below HTTP (DNS, connect, TLS, broken body).
    SystemError,
    /// Any other status (403, 410, 422, 429, 3xx, …).
    UnknownError,
}

impl ErrorType {
    /// Backstage's `statusCodeToErrorType`.
    pub fn from_status(status: u16) -> Self {
        match status {
            400 => Self::BadRequest,
            401 => Self::Unauthorized,
            404 => Self::NotFound,
            500 => Self::SystemError,
            _ => Self::UnknownError,
        }
    }

    /// The string JavaScript consumers compare against.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BadRequest => "BAD_REQUEST",
            Self::Unauthorized => "UNAUTHORIZED_ERROR",
            Self::NotFound => "NOT_FOUND",
            Self::SystemError => "SYSTEM_ERROR",
            Self::UnknownError => "UNKNOWN_ERROR",
        }
    }
}

/// What an ERROR event carries besides the resource path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// The contract's error type.
    pub error_type: ErrorType,
    /// The HTTP status, or 0 when the failure happened below HTTP.
    pub status_code: u16,
}

impl Failure {
    /// A failure for an HTTP (or in-stream Status) code.
    pub fn from_status(status: u16) -> Self {
        Self {
            error_type: ErrorType::from_status(status),
            status_code: status,
        }
    }

    /// A failure below HTTP: network, TLS, broken body, local configuration.
    pub fn system() -> Self {
        Self {
            error_type: ErrorType::SystemError,
            status_code: 0,
        }
    }

    /// The JSON text of the `{ type: 'ERROR', error }` event for `resource_path`, with exactly
    /// the keys `errorType`, `statusCode` and `resourcePath`.
    pub fn event_json(&self, resource_path: &str) -> String {
        // Written out rather than through `json!`, whose map would sort the keys.
        let path = serde_json::Value::from(resource_path);
        format!(
            r#"{{"type":"ERROR","error":{{"errorType":"{}","statusCode":{},"resourcePath":{path}}}}}"#,
            self.error_type.as_str(),
            self.status_code,
        )
    }
}

/// A lower layer's error (`reqwest`, `h2`, `rustls`, I/O), kept with its `source()` chain.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Everything that can end a watch early. The `Display` text goes into a logged warning, so
/// it must never contain a credential; callers pass it through [`crate::redact::Redactor`]
/// anyway, because lower layers' messages are not ours to vouch for.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The cluster's TLS, proxy or credential settings could not be turned into a client.
    #[error("invalid cluster configuration: {0}")]
    Config(String),
    /// The request never got a response: DNS, connect, TLS handshake, or the peer hung up.
    #[error("request failed: {0}")]
    Connect(#[source] BoxError),
    /// The server answered with a status outside 2xx.
    #[error("HTTP {status}: {body}")]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The start of the response body (a Kubernetes `Status`, usually).
        body: String,
    },
    /// The response body broke off (reset, truncated chunk, decoding error).
    #[error("watch stream broke: {0}")]
    Body(#[source] BoxError),
    /// A single line exceeded the configured limit.
    #[error("a watch event line exceeded the limit of {limit} bytes")]
    LineTooLong {
        /// The limit in bytes.
        limit: usize,
    },
    /// No bytes arrived for longer than the idle limit.
    #[error("no data for {seconds} s (idle timeout); the connection is presumed dead")]
    Idle {
        /// The idle limit in seconds.
        seconds: f64,
    },
    /// A connection attempt that several requests waited on failed; each gets its
    /// [`Error::describe`] text.
    #[error("{0}")]
    Shared(std::sync::Arc<str>),
    /// A body read whole (a list page, a discovery document) went past its limit.
    #[error("the response body exceeded the limit of {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

impl Error {
    /// The ERROR event this failure becomes.
    pub fn failure(&self) -> Failure {
        match self {
            Self::Status { status, .. } => Failure::from_status(*status),
            Self::Config(_)
            | Self::Connect(_)
            | Self::Shared(_)
            | Self::Body(_)
            | Self::LineTooLong { .. }
            | Self::Idle { .. }
            | Self::TooLarge { .. } => Failure::system(),
        }
    }

    /// The text for a warning: the message and every cause below it that it does not already
    /// say (the top of a lower layer's error, "error sending request", does not say whether
    /// DNS, TCP or TLS failed).
    pub fn describe(&self) -> String {
        describe_chain(self)
    }
}

/// The contract's rule for a Status `code`: 1–999 is kept; anything else (none, 0, negative,
/// not a whole number) is a failure all the same, reported as 500.
pub fn status_code(code: Option<i64>) -> u16 {
    match code {
        // The range keeps the value inside u16.
        Some(code @ 1..=999) => code as u16,
        _ => 500,
    }
}

/// What is read of a Kubernetes `Status` (an error response's body, the object of an
/// in-stream ERROR): its code and the pause it asks for. Never fails: an unreadable Status
/// is still a failure, with code 500 and no pause.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct StatusBody {
    /// The code under [`status_code`]'s rule.
    pub code: u16,
    /// `details.retryAfterSeconds`.
    pub retry_after: Option<Duration>,
}

/// The Status' fields as sent; values of the wrong type are read as absent.
#[derive(Deserialize, Default)]
struct WireStatus {
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default)]
    details: Option<serde_json::Value>,
}

impl StatusBody {
    /// Reads a Status from its JSON text.
    pub fn parse(text: &[u8]) -> Self {
        let status: WireStatus = serde_json::from_slice(text).unwrap_or_default();
        Self {
            code: status_code(status.code.as_ref().and_then(serde_json::Value::as_i64)),
            retry_after: status
                .details
                .as_ref()
                .and_then(|details| details.get("retryAfterSeconds"))
                .and_then(serde_json::Value::as_u64)
                .map(Duration::from_secs),
        }
    }
}

/// Describes an error with its whole `source()` chain, since the top level alone
/// ("error sending request") does not say whether DNS, TCP or TLS failed.
pub fn describe_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes_map_like_backstage() {
        assert_eq!(ErrorType::from_status(400), ErrorType::BadRequest);
        assert_eq!(ErrorType::from_status(401), ErrorType::Unauthorized);
        assert_eq!(ErrorType::from_status(404), ErrorType::NotFound);
        assert_eq!(ErrorType::from_status(500), ErrorType::SystemError);
        for other in [302, 403, 409, 410, 422, 429, 502, 503] {
            assert_eq!(ErrorType::from_status(other), ErrorType::UnknownError);
        }
    }

    #[test]
    fn error_event_json_has_exactly_three_keys() {
        let json = Failure::from_status(410).event_json("/api/v1/pods");
        assert_eq!(
            json,
            r#"{"type":"ERROR","error":{"errorType":"UNKNOWN_ERROR","statusCode":410,"resourcePath":"/api/v1/pods"}}"#
        );
        let json = Failure::system().event_json("/api/v1/namespaces/\"q\"/pods");
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"type": "ERROR", "error": {
                "errorType": "SYSTEM_ERROR", "statusCode": 0,
                "resourcePath": "/api/v1/namespaces/\"q\"/pods"}})
        );
    }

    #[test]
    fn a_status_code_is_kept_from_1_to_999_and_is_500_otherwise() {
        for (text, code) in [
            (r#"{"code":410}"#, 410),
            (r#"{"code":1}"#, 1),
            (r#"{"code":999}"#, 999),
            (r#"{"code":0}"#, 500),
            (r#"{"code":1000}"#, 500),
            (r#"{"code":-3}"#, 500),
            (r#"{"code":70000}"#, 500),
            (r#"{"code":"410"}"#, 500),
            (r#"{"code":4.5}"#, 500),
            (r#"{"kind":"Status"}"#, 500),
            ("not json", 500),
        ] {
            assert_eq!(StatusBody::parse(text.as_bytes()).code, code, "{text}");
        }
        assert_eq!(status_code(None), 500);
    }

    #[test]
    fn a_status_asks_for_a_pause_only_with_whole_seconds() {
        let busy = StatusBody::parse(br#"{"code":429,"details":{"retryAfterSeconds":3}}"#);
        assert_eq!(busy.retry_after, Some(Duration::from_secs(3)));
        for text in [
            r#"{"code":429,"details":{"retryAfterSeconds":"3"}}"#,
            r#"{"code":429,"details":{"retryAfterSeconds":-1}}"#,
            r#"{"code":429,"details":null}"#,
            r#"{"code":429}"#,
        ] {
            assert_eq!(
                StatusBody::parse(text.as_bytes()).retry_after,
                None,
                "{text}"
            );
        }
    }

    #[test]
    fn the_description_names_every_cause_once() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let err = Error::Connect(Box::new(io));
        assert_eq!(err.describe(), "request failed: refused");
        #[derive(Debug, thiserror::Error)]
        #[error("error sending request")]
        struct Outer(#[source] std::io::Error);
        let outer = Outer(std::io::Error::other("tcp connect error"));
        let err = Error::Body(Box::new(outer));
        assert_eq!(
            err.describe(),
            "watch stream broke: error sending request: tcp connect error"
        );
        assert_eq!(
            Error::TooLarge { limit: 9 }.describe(),
            "the response body exceeded the limit of 9 bytes"
        );
    }

    #[test]
    fn failures_below_http_are_system_errors_with_status_zero() {
        let err = Error::LineTooLong { limit: 10 };
        assert_eq!(err.failure(), Failure::system());
        assert_eq!(err.failure().status_code, 0);
        let err = Error::Status {
            status: 401,
            body: String::new(),
        };
        assert_eq!(err.failure().error_type, ErrorType::Unauthorized);
    }
}
