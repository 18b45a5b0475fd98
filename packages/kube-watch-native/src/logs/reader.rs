//! One reader's view of a log: its options applied to the lines (the timestamp kept or not,
//! `limitBytes` counted as it sees them), the text made safe for JavaScript, and the items
//! queued for it: a run of whole lines as one JSON string joined by `\n` (lines hold no
//! newline: the framer cut them there), a piece that goes on as an array holding its string, the
//! lines a slow reader of a shared follow missed as `{"type":"SKIPPED","lines":n}`.

use std::sync::Arc;

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
        }
    }

    /// Queues a piece of a line (`stamp`: its timestamp's text, on a line's first piece): true
    /// once `limitBytes` are all delivered.
    pub(crate) async fn line(&mut self, stamp: Option<&[u8]>, text: &[u8], last: bool) -> bool {
        let mut out = Vec::with_capacity(text.len() + 40);
        if self.timestamps
            && let Some(stamp) = stamp
        {
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
