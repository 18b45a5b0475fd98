//! Error types of the core and their mapping onto the contract's ERROR events.
//!
//! Inside Rust every failure is a typed [`WatchError`]; at the JavaScript boundary it becomes
//! one `ERROR` event with the error type and status code that Backstage's watcher reports.

use thiserror::Error;

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
#[derive(Debug, Error)]
pub enum WatchError {
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
}

impl WatchError {
    /// The ERROR event this failure becomes.
    pub fn failure(&self) -> Failure {
        match self {
            Self::Status { status, .. } => Failure::from_status(*status),
            Self::Config(_)
            | Self::Connect(_)
            | Self::Body(_)
            | Self::LineTooLong { .. }
            | Self::Idle { .. } => Failure::system(),
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
    fn failures_below_http_are_system_errors_with_status_zero() {
        let err = WatchError::LineTooLong { limit: 10 };
        assert_eq!(err.failure(), Failure::system());
        assert_eq!(err.failure().status_code, 0);
        let err = WatchError::Status {
            status: 401,
            body: String::new(),
        };
        assert_eq!(err.failure().error_type, ErrorType::Unauthorized);
    }
}
