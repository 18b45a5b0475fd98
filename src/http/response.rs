//! A response from either client, read the same way: status, headers, then body chunks.

use std::io::Write as _;

use bytes::Bytes;
use flate2::write::GzDecoder;

use super::pool::StreamSlot;
use crate::error::WatchError;

/// A response head and its body, from HTTP/1.1 (`reqwest`) or one of our HTTP/2 streams.
/// Dropping it ends the request (closes the HTTP/1.1 connection, resets the HTTP/2 stream) and
/// gives its place on the connection back to the pool.
pub struct Response {
    status: u16,
    headers: http::HeaderMap,
    body: Body,
    _slot: StreamSlot,
}

enum Body {
    /// `reqwest` decodes gzip itself.
    Http1(reqwest::Response),
    H2 {
        stream: h2::RecvStream,
        /// Set when the server answered `Content-Encoding: gzip`.
        gzip: Option<GzDecoder<Vec<u8>>>,
    },
}

impl Response {
    pub(super) fn http1(response: reqwest::Response, slot: StreamSlot) -> Self {
        Self {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: Body::Http1(response),
            _slot: slot,
        }
    }

    pub(super) fn h2(response: http::Response<h2::RecvStream>, slot: StreamSlot) -> Self {
        let (head, stream) = response.into_parts();
        let gzip = head
            .headers
            .get(http::header::CONTENT_ENCODING)
            .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"gzip"))
            .then(|| GzDecoder::new(Vec::new()));
        Self {
            status: head.status.as_u16(),
            headers: head.headers,
            body: Body::H2 { stream, gzip },
            _slot: slot,
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The response headers.
    pub fn headers(&self) -> &http::HeaderMap {
        &self.headers
    }

    /// The next piece of the (decoded) body, or `None` at its clean end.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, WatchError> {
        match &mut self.body {
            Body::Http1(response) => response
                .chunk()
                .await
                .map_err(|err| WatchError::Body(Box::new(err))),
            Body::H2 { stream, gzip } => loop {
                let Some(data) = stream.data().await else {
                    return finish_gzip(gzip.take());
                };
                let data = data.map_err(|err| WatchError::Body(Box::new(err)))?;
                // The window opens again as soon as the data is ours: what JavaScript has not
                // taken yet is bounded by the watch's queue, which stops this loop when full.
                let _ = stream.flow_control().release_capacity(data.len());
                match gzip {
                    None if data.is_empty() => {}
                    None => return Ok(Some(data)),
                    Some(decoder) => {
                        decoder
                            .write_all(&data)
                            .map_err(|err| WatchError::Body(Box::new(err)))?;
                        let decoded = std::mem::take(decoder.get_mut());
                        if !decoded.is_empty() {
                            return Ok(Some(Bytes::from(decoded)));
                        }
                    }
                }
            },
        }
    }
}

/// At the end of a gzip body: what the decoder still holds, or an error when the gzip stream is
/// incomplete.
fn finish_gzip(decoder: Option<GzDecoder<Vec<u8>>>) -> Result<Option<Bytes>, WatchError> {
    let Some(decoder) = decoder else {
        return Ok(None);
    };
    let rest = decoder
        .finish()
        .map_err(|err| WatchError::Body(Box::new(err)))?;
    Ok((!rest.is_empty()).then(|| Bytes::from(rest)))
}
