//! A response from either client, read the same way: status, headers, then the body — chunk by
//! chunk within an idle limit, whole up to a maximum, as the start of an error body, or as
//! framed lines ([`Lines`]). Every body in the crate is read through here.

use std::io::Write as _;
use std::time::Duration;

use bytes::Bytes;
use flate2::write::GzDecoder;

use crate::error::Error;
use crate::framing::LineFramer;

/// How much of an error response's body is kept for the warning.
const ERROR_BODY_BYTES: usize = 4096;
/// How long to wait for the rest of an error response's body.
const ERROR_BODY_WAIT: Duration = Duration::from_secs(5);

/// Whatever gives the request's place on its connection back when dropped (the pool's stream
/// slot); the response holds it for as long as the body is read, as hyper-util's `Pooled<T>`
/// holds its pool's reference, so this module needs nothing of the pool.
pub type Lease = Box<dyn std::any::Any + Send + Sync>;

/// A response head and its body, from HTTP/1.1 (`reqwest`) or one of our HTTP/2 streams.
/// Dropping it ends the request (closes the HTTP/1.1 connection, resets the HTTP/2 stream) and
/// gives its place on the connection back to the pool.
pub struct Response {
    status: u16,
    headers: http::HeaderMap,
    body: Body,
    /// Decoded body bytes read since [`Response::take_received`] was last called.
    received: u64,
    _lease: Lease,
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
    pub(super) fn http1(response: reqwest::Response, lease: Lease) -> Self {
        Self {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: Body::Http1(response),
            received: 0,
            _lease: lease,
        }
    }

    pub(super) fn h2(response: http::Response<h2::RecvStream>, lease: Lease) -> Self {
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
            received: 0,
            _lease: lease,
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

    /// The decoded body bytes read since the last call (for a caller's traffic counters).
    pub fn take_received(&mut self) -> u64 {
        std::mem::take(&mut self.received)
    }

    /// The next piece of the (decoded) body, or `None` at its clean end.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, Error> {
        let chunk = self.raw_chunk().await?;
        if let Some(chunk) = &chunk {
            self.received += chunk.len() as u64;
        }
        Ok(chunk)
    }

    /// [`Response::chunk`], failing with [`Error::Idle`] when nothing arrives for `idle`.
    pub async fn chunk_within(&mut self, idle: Option<Duration>) -> Result<Option<Bytes>, Error> {
        match idle {
            Some(idle) => tokio::time::timeout(idle, self.chunk())
                .await
                .map_err(|_| Error::Idle {
                    seconds: idle.as_secs_f64(),
                })?,
            None => self.chunk().await,
        }
    }

    /// The whole body, failing with [`Error::TooLarge`] as soon as it would pass `max` bytes
    /// (what was read is dropped then, so no more than `max` is ever held).
    pub async fn read_to_end(
        &mut self,
        max: usize,
        idle: Option<Duration>,
    ) -> Result<Vec<u8>, Error> {
        let mut body = Vec::new();
        while let Some(chunk) = self.chunk_within(idle).await? {
            if chunk.len() > max - body.len() {
                return Err(Error::TooLarge { limit: max });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// The start of an error response's body (waiting a few seconds at most for it), trimmed,
    /// for a warning; `(empty body)` when there is none.
    pub async fn error_body(mut self) -> String {
        let mut body = Vec::new();
        let read = async {
            while body.len() < ERROR_BODY_BYTES {
                match self.chunk().await {
                    Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                    _ => break,
                }
            }
        };
        let _ = tokio::time::timeout(ERROR_BODY_WAIT, read).await;
        body.truncate(ERROR_BODY_BYTES);
        let text = String::from_utf8_lossy(&body);
        let text = text.trim();
        if text.is_empty() {
            "(empty body)".to_owned()
        } else {
            text.to_owned()
        }
    }

    /// The body as lines of at most `max_line_bytes`, each chunk within `idle`.
    pub fn lines(mut self, max_line_bytes: usize, idle: Option<Duration>) -> Lines {
        // Nothing reads a watch's headers once its body is read as lines (the status and
        // `Content-Encoding` were settled before): the map (about 0.6 KiB with the values h2
        // decoded) goes now rather than live as long as the watch.
        self.headers = http::HeaderMap::new();
        Lines {
            response: self,
            framer: LineFramer::new(max_line_bytes),
            idle,
            ended: false,
        }
    }

    async fn raw_chunk(&mut self) -> Result<Option<Bytes>, Error> {
        match &mut self.body {
            Body::Http1(response) => response
                .chunk()
                .await
                .map_err(|err| Error::Body(Box::new(err))),
            Body::H2 { stream, gzip } => loop {
                let Some(data) = stream.data().await else {
                    return finish_gzip(gzip.take());
                };
                let data = data.map_err(|err| Error::Body(Box::new(err)))?;
                // The window opens again as soon as the data is ours: what JavaScript has not
                // taken yet is bounded by the watch's queue, which stops this loop when full.
                let _ = stream.flow_control().release_capacity(data.len());
                match gzip {
                    None if data.is_empty() => {}
                    None => return Ok(Some(data)),
                    Some(decoder) => {
                        decoder
                            .write_all(&data)
                            .map_err(|err| Error::Body(Box::new(err)))?;
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

/// A watch body as lines (without their terminators), through the crate's [`LineFramer`].
pub struct Lines {
    response: Response,
    framer: LineFramer,
    idle: Option<Duration>,
    ended: bool,
}

impl Lines {
    /// The next line, or `None` at the body's clean end (the last line may lack its newline).
    /// A line past the limit is [`Error::LineTooLong`]; silence past the idle limit is
    /// [`Error::Idle`].
    pub async fn next(&mut self) -> Result<Option<Bytes>, Error> {
        let too_long = |err: crate::framing::LineTooLong| Error::LineTooLong { limit: err.limit };
        loop {
            if let Some(line) = self.framer.next_line().map_err(too_long)? {
                return Ok(Some(line));
            }
            if self.ended {
                return Ok(None);
            }
            match self.response.chunk_within(self.idle).await? {
                Some(chunk) => self.framer.push(&chunk),
                None => {
                    self.ended = true;
                    return self.framer.finish().map_err(too_long);
                }
            }
        }
    }

    /// The decoded body bytes read since the last call.
    pub fn take_received(&mut self) -> u64 {
        self.response.take_received()
    }
}

/// At the end of a gzip body: what the decoder still holds, or an error when the gzip stream is
/// incomplete.
fn finish_gzip(decoder: Option<GzDecoder<Vec<u8>>>) -> Result<Option<Bytes>, Error> {
    let Some(decoder) = decoder else {
        return Ok(None);
    };
    let rest = decoder.finish().map_err(|err| Error::Body(Box::new(err)))?;
    Ok((!rest.is_empty()).then(|| Bytes::from(rest)))
}
