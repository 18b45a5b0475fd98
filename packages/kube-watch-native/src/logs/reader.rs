//! One reader's view of a log: its options applied to the lines (the timestamp kept or not,
//! `limitBytes` counted as it sees them), the text made safe for JavaScript, and the items
//! queued for it: a run of whole lines as one JSON string joined by `\n` (lines hold no
//! newline: the framer cut them there), a piece that goes on as an array holding its string, the
//! lines a slow reader of a shared follow missed as `{"type":"SKIPPED","lines":n}`.

use std::sync::Arc;

use base64::Engine as _;

use crate::batch::MAX_BATCH_BYTES;
use crate::watch::Outbox;

/// One reader's queue and what it asked for.
pub(crate) struct Reader {
    pub(super) outbox: Arc<Outbox>,
    /// Each line starts with its timestamp.
    timestamps: bool,
    /// Bytes still to hand on, when counted here (a follow asks the server for timestamps, which
    /// its count would include).
    left: Option<u64>,
    /// The log held bytes that are not UTF-8 (said once).
    warned_utf8: bool,
    /// Named in warnings.
    what: String,
    /// Whole lines not queued yet, as the body of one JSON string joined by `\n` (see `flush`).
    pending: Vec<u8>,
    /// No line of `pending` needed an escape.
    plain: bool,
    /// A line that is not UTF-8 is queued as its bytes (`{"raw":"<base64>"}`), not with U+FFFD.
    raw: bool,
}

impl Reader {
    /// A reader into `outbox` that keeps each line's timestamp when `timestamps`, hands on at
    /// most `limit` bytes (when counted here) and names `what` in its warnings.
    pub(crate) fn new(
        outbox: Arc<Outbox>,
        timestamps: bool,
        limit: Option<u64>,
        what: String,
    ) -> Self {
        Self {
            outbox,
            timestamps,
            left: limit,
            warned_utf8: false,
            what,
            pending: Vec::new(),
            plain: true,
            raw: false,
        }
    }

    /// Queues lines that are not UTF-8 as their bytes when `raw` (see the field).
    pub(crate) fn raw(mut self, raw: bool) -> Self {
        self.raw = raw;
        self
    }

    /// Queues a piece of a line (`stamp`: its timestamp's text, on a line's first piece): true
    /// once `limitBytes` are all delivered.
    pub(crate) async fn line(&mut self, stamp: Option<&[u8]>, text: &[u8], last: bool) -> bool {
        let stamp = stamp.filter(|_| self.timestamps);
        let stamp_text = stamp.map(std::str::from_utf8);
        // The common case, a whole line with no byte count: escaped straight into the run of
        // lines gathered, with no buffer of its own.
        if last
            && self.left.is_none()
            && let Ok(text) = std::str::from_utf8(text)
            && !matches!(stamp_text, Some(Err(_)))
        {
            if !self.pending.is_empty() {
                self.pending.extend_from_slice(b"\\n");
            }
            if let Some(Ok(stamp)) = stamp_text {
                self.plain &= !escape_into(&mut self.pending, stamp);
                self.pending.push(b' ');
            }
            self.plain &= !escape_into(&mut self.pending, text);
            if self.pending.len() >= MAX_BATCH_BYTES / 2 {
                self.flush().await;
            }
            return false;
        }
        let mut out = Vec::with_capacity(text.len() + 40);
        if let Some(stamp) = stamp {
            out.extend_from_slice(stamp);
            out.push(b' ');
        }
        out.extend_from_slice(text);
        let mut last = last;
        let mut done = false;
        if let Some(left) = self.left.as_mut() {
            let cost = out.len() as u64 + u64::from(last);
            if cost >= *left {
                // Cut where the bytes run out, as the API server cuts: maybe inside a line.
                out.truncate(usize::try_from(*left).unwrap_or(usize::MAX));
                last = cost == *left;
                done = true;
            }
            *left = left.saturating_sub(cost);
        }
        self.push(&out, last).await;
        done
    }

    /// Queues the marker of `lines` a slow reader missed.
    pub(crate) async fn skipped(&mut self, lines: u64) {
        self.flush().await;
        self.outbox
            .push_generated(&format!(r#"{{"type":"SKIPPED","lines":{lines}}}"#));
    }

    async fn push(&mut self, text: &[u8], last: bool) {
        if self.raw && std::str::from_utf8(text).is_err() {
            // In order with the lines before it; the newline of a whole line with its bytes.
            self.flush().await;
            let mut bytes = text.to_vec();
            if last {
                bytes.push(b'\n');
            }
            let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
            self.outbox
                .push_line(format!(r#"{{"raw":"{encoded}"}}"#).as_bytes(), None)
                .await;
            return;
        }
        let string = String::from_utf8_lossy(text);
        if matches!(string, std::borrow::Cow::Owned(_)) && !self.warned_utf8 {
            self.warned_utf8 = true;
            self.outbox.push_warning(format!(
                "{}: the container wrote bytes that are not UTF-8; they are shown as U+FFFD",
                self.what
            ));
        }
        let mut item = Vec::with_capacity(string.len() + 4);
        if !last {
            item.push(b'[');
        }
        // A string always serializes.
        let _ = serde_json::to_writer(&mut item, &*string);
        if last {
            // A whole line joins the run of lines gathered (one string, split in JavaScript).
            if !self.pending.is_empty() {
                self.pending.extend_from_slice(b"\\n");
            }
            let body = &item[1..item.len() - 1];
            self.plain &= memchr::memchr(b'\\', body).is_none();
            self.pending.extend_from_slice(body);
            // A batch stays about its size: a run is queued once it is half of one.
            if self.pending.len() >= MAX_BATCH_BYTES / 2 {
                self.flush().await;
            }
        } else {
            self.flush().await;
            item.push(b']');
            self.outbox.push_line(&item, None).await;
        }
    }

    /// Queues the lines gathered, in one push (one wake-up of JavaScript's for a chunk's lines).
    pub(crate) async fn flush(&mut self) {
        if !self.pending.is_empty() {
            self.outbox.push_joined(&self.pending, self.plain).await;
            self.pending.clear();
            self.plain = true;
        }
    }
}

/// Appends `text` to `out` escaped as the inside of a JSON string (as serde_json escapes it:
/// `"`, `\\` and the control characters; everything else as it is); true when anything needed an
/// escape.
fn escape_into(out: &mut Vec<u8>, text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut escaped = false;
    let mut start = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(format!("\\u{byte:04x}").as_bytes());
                start = i + 1;
                escaped = true;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escape);
        start = i + 1;
        escaped = true;
    }
    out.extend_from_slice(&bytes[start..]);
    escaped
}

#[cfg(test)]
mod tests {
    use super::escape_into;

    #[test]
    fn escapes_as_serde_json_does() {
        let mut texts: Vec<String> = (0u8..=0x7f).map(|b| format!("a{}b", b as char)).collect();
        texts.extend(["", "plain", "é ü 日本 🦀", "\"q\" \\ \u{7}\u{1b}[31m"].map(String::from));
        for text in texts {
            let mut out = Vec::new();
            let escaped = escape_into(&mut out, &text);
            let json = serde_json::to_string(&text).unwrap();
            assert_eq!(out, json.as_bytes()[1..json.len() - 1], "{text:?}");
            assert_eq!(escaped, json.contains('\\'), "{text:?}");
        }
    }
}
