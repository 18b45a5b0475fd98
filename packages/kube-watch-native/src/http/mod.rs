//! HTTP for the watch core: GET requests (and the odd POST of a JSON body) to an API server over
//! connections we account for.
//!
//! ```text
//! ConnectionPool::get(key, Get, Kind)
//!   http://, or TLS where ALPN chose http/1.1 ─► reqwest (HTTP/1.1, a connection per request)
//!   TLS with h2 ─► pool: a connection with a stream free (the peer's limit less headroom),
//!                  else a new one (dial ─► H2Connection::handshake) ─► H2Connection::open
//! ```
//! [`Response`] reads both the same way.

mod dial;
mod h2conn;
mod key;
mod pool;
mod response;
mod tunnel;

pub use h2conn::{ASSUMED_STREAM_LIMIT, STREAM_START_WAIT, STREAM_WINDOW};
pub use key::{CONNECT_TIMEOUT, ClientKey, TCP_KEEPALIVE, shared_ca_data};
pub use pool::{ConnectionPool, ConnectionStats, OriginStats, capacity};
pub use response::{Lines, Response};

use bytes::Bytes;

use crate::error::Error;

/// What a request is for, which decides how many of them a connection carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A watch: holds its stream for as long as it lives.
    Watch,
    /// A request that ends soon (a list page, discovery): may use the headroom.
    Short,
}

/// One GET (or, with `post`, one POST): the full URL and the bearer token, if any.
#[derive(Debug, Clone)]
pub struct Get {
    /// The full request URL.
    pub url: String,
    /// Sent as `Authorization: Bearer …` on this request only.
    pub bearer: Option<String>,
    /// The `Accept` header; `application/json` when `None`.
    pub accept: Option<String>,
    /// A JSON body to POST (`Content-Type: application/json`) instead of the GET: a review the
    /// API server answers at once (`SelfSubjectReview`), never a watch or a list.
    pub post: Option<Bytes>,
}

impl Get {
    fn accept(&self) -> &str {
        self.accept.as_deref().unwrap_or("application/json")
    }

    fn http1_request(&self, client: &reqwest::Client) -> reqwest::RequestBuilder {
        let request = match &self.post {
            None => client.get(&self.url),
            Some(body) => client
                .post(&self.url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone()),
        };
        let request = request.header(reqwest::header::ACCEPT, self.accept());
        match &self.bearer {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// The request head for HTTP/2; the body, if any, is [`Get::post`], sent after it.
    fn h2_request(&self) -> Result<http::Request<()>, Error> {
        let request = match &self.post {
            None => http::Request::get(&self.url),
            Some(body) => http::Request::post(&self.url)
                .header(http::header::CONTENT_TYPE, "application/json")
                .header(http::header::CONTENT_LENGTH, body.len()),
        };
        let mut request = request
            .header(http::header::ACCEPT, self.accept())
            .header(http::header::ACCEPT_ENCODING, "gzip");
        if let Some(token) = &self.bearer {
            let mut value =
                http::HeaderValue::try_from(format!("Bearer {token}")).map_err(|_| {
                    Error::Config(
                        "the bearer token holds characters an HTTP header cannot carry".to_owned(),
                    )
                })?;
            // Never into the HPACK table, where another stream's header could be compressed
            // against it.
            value.set_sensitive(true);
            request = request.header(http::header::AUTHORIZATION, value);
        }
        request
            .body(())
            .map_err(|err| Error::Config(format!("cannot build the request: {err}")))
    }
}
