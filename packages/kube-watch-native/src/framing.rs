//! Splitting the watch body into lines.
//!
//! The API server writes one JSON object and `\n` per event, but the transport re-chunks at
//! will: one chunk can carry many lines, one line can span many chunks, and a multi-byte UTF-8
//! character can be split between two. The framer only looks for `\n` bytes (which never occur
//! inside a UTF-8 sequence), so it is indifferent to all of that. Unlike an unbounded lines
//! codec it refuses a line longer than its limit, so a hostile or broken peer cannot make it
//! buffer without end.

use bytes::{Bytes, BytesMut};

/// Kubernetes' own client refuses lines above this many bytes.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// A line grew beyond the framer's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("line longer than {limit} bytes")]
pub struct LineTooLong {
    /// The limit that was exceeded.
    pub limit: usize,
}

/// Incremental `\n` framer with a line-length cap.
#[derive(Debug)]
pub struct LineFramer {
    buf: BytesMut,
    /// How far `buf` is known to hold no `\n`, so a line arriving byte by byte is scanned once.
    scanned: usize,
    max_line: usize,
}

impl LineFramer {
    /// A framer refusing lines longer than `max_line` bytes (the terminator not counted).
    pub fn new(max_line: usize) -> Self {
        Self {
            buf: BytesMut::new(),
            scanned: 0,
            max_line,
        }
    }

    /// Appends a chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete line, without its `\n` or `\r\n`; `None` when more bytes are needed.
    pub fn next_line(&mut self) -> Result<Option<Bytes>, LineTooLong> {
        match memchr::memchr(b'\n', &self.buf[self.scanned..]) {
            Some(offset) => {
                let end = self.scanned + offset;
                self.scanned = 0;
                let mut line = self.buf.split_to(end + 1);
                line.truncate(end);
                if line.last() == Some(&b'\r') {
                    line.truncate(end - 1);
                }
                if line.len() > self.max_line {
                    return Err(LineTooLong {
                        limit: self.max_line,
                    });
                }
                Ok(Some(line.freeze()))
            }
            None => {
                if self.buf.is_empty() {
                    // Every line was taken: let the buffer go rather than keep its capacity
                    // (the largest chunk seen) for a watch that may stay quiet for minutes
                    // (what an idle informer costs: bench/informer-fixed-cost.js).
                    self.buf = BytesMut::new();
                }
                self.scanned = self.buf.len();
                // A `\r` may still turn out to belong to a `\r\n`, so allow one byte of slack.
                if self.buf.len() > self.max_line + 1 {
                    return Err(LineTooLong {
                        limit: self.max_line,
                    });
                }
                Ok(None)
            }
        }
    }

    /// What is left when the body ends cleanly: a last line that had no `\n`, if any.
    pub fn finish(&mut self) -> Result<Option<Bytes>, LineTooLong> {
        self.scanned = 0;
        let mut rest = self.buf.split();
        if rest.last() == Some(&b'\r') {
            rest.truncate(rest.len() - 1);
        }
        if rest.len() > self.max_line {
            return Err(LineTooLong {
                limit: self.max_line,
            });
        }
        Ok((!rest.is_empty()).then(|| rest.freeze()))
    }

    /// Bytes held for an incomplete line.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Bytes the buffer has room for (what it holds on the heap, or shares with lines taken).
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn drain(framer: &mut LineFramer, out: &mut Vec<Vec<u8>>) {
        while let Some(line) = framer.next_line().unwrap() {
            out.push(line.to_vec());
        }
    }

    fn frame_all(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut framer = LineFramer::new(DEFAULT_MAX_LINE_BYTES);
        let mut out = Vec::new();
        for chunk in chunks {
            framer.push(chunk);
            drain(&mut framer, &mut out);
        }
        if let Some(last) = framer.finish().unwrap() {
            out.push(last.to_vec());
        }
        out
    }

    #[test]
    fn chunks_are_framed_into_their_lines() {
        let line = "{\"name\":\"café\"}";
        let text = format!("{line}\n");
        let byte_by_byte: Vec<&[u8]> = text.as_bytes().chunks(1).collect();
        // What a case is, the chunks pushed, the lines framed of them.
        type Case<'a> = (&'a str, &'a [&'a [u8]], &'a [&'a str]);
        let cases: [Case; 5] = [
            ("many lines in one chunk", &[b"a\nb\nc\n"], &["a", "b", "c"]),
            (
                "one line over many chunks, a UTF-8 character split",
                &byte_by_byte,
                &[line],
            ),
            (
                "CRLF endings are tolerated",
                &[b"a\r", b"\nb\r\n"],
                &["a", "b"],
            ),
            (
                "the last line without a newline is kept",
                &[b"a\nlast"],
                &["a", "last"],
            ),
            ("empty lines come out empty", &[b"\n\na\n"], &["", "", "a"]),
        ];
        for (case, chunks, lines) in cases {
            let lines: Vec<Vec<u8>> = lines.iter().map(|l| l.as_bytes().to_vec()).collect();
            assert_eq!(frame_all(chunks), lines, "{case}");
        }
    }

    #[test]
    fn an_overlong_line_is_refused_before_it_is_complete() {
        let mut framer = LineFramer::new(8);
        framer.push(b"0123456789");
        assert_eq!(framer.next_line(), Err(LineTooLong { limit: 8 }));
        let mut framer = LineFramer::new(8);
        framer.push(b"012345678\n");
        assert_eq!(framer.next_line(), Err(LineTooLong { limit: 8 }));
    }

    #[test]
    fn a_line_at_the_limit_passes_with_crlf() {
        let mut framer = LineFramer::new(4);
        framer.push(b"abcd\r");
        assert_eq!(framer.next_line(), Ok(None));
        framer.push(b"\n");
        assert_eq!(framer.next_line().unwrap().unwrap().as_ref(), b"abcd");
        assert_eq!(framer.buffered(), 0);
    }

    #[test]
    fn a_framer_whose_lines_were_all_taken_holds_no_buffer() {
        let mut framer = LineFramer::new(DEFAULT_MAX_LINE_BYTES);
        framer.push(&[b'x'; 4096]);
        framer.push(b"\n");
        let line = framer.next_line().unwrap().unwrap();
        assert_eq!(line.len(), 4096);
        assert_eq!(framer.next_line(), Ok(None));
        assert_eq!(framer.capacity(), 0, "nothing kept for a quiet watch");
        // A line split over chunks still comes out whole after that.
        framer.push(b"ab");
        assert_eq!(framer.next_line(), Ok(None));
        assert!(framer.capacity() > 0, "a partial line is kept");
        framer.push(b"c\n");
        assert_eq!(framer.next_line().unwrap().unwrap().as_ref(), b"abc");
    }

    proptest! {
        /// Whatever the chunking, every line comes out once, whole and in order.
        #[test]
        fn any_chunking_yields_the_same_lines(
            lines in proptest::collection::vec(proptest::collection::vec(
                any::<u8>().prop_map(|b| if b == b'\n' || b == b'\r' { b'x' } else { b }), 0..40), 0..20),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..30),
            crlf in any::<bool>(),
        ) {
            let ending: &[u8] = if crlf { b"\r\n" } else { b"\n" };
            let mut body = Vec::new();
            for line in &lines {
                body.extend_from_slice(line);
                body.extend_from_slice(ending);
            }
            let mut points: Vec<usize> = cuts.iter().map(|i| i.index(body.len() + 1)).collect();
            points.sort_unstable();
            points.dedup();
            let mut chunks = Vec::new();
            let mut start = 0;
            for point in points {
                chunks.push(&body[start..point]);
                start = point;
            }
            chunks.push(&body[start..]);
            prop_assert_eq!(frame_all(&chunks), lines);
        }
    }
}
