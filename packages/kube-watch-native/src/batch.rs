//! One batch for JavaScript: a JSON array text of finished events (watch lines with the
//! contract's `resourceVersion` appended, and generated ERROR events), plus the warnings for the
//! logger. Batches are built on the watch's task as lines arrive, so taking one is cheap.

/// A batch stops growing past this many bytes, so parsing one never holds the event loop long.
pub const MAX_BATCH_BYTES: usize = 64 * 1024;

/// Room past the cap for the line that crosses it (most are a few KiB) and the closing `]`.
const RESERVE_SLACK: usize = 16 * 1024;

/// One finished batch.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Batch {
    /// A JSON array of the contract's events, in order, as UTF-8 (every piece was validated or
    /// produced by serde); empty when the batch holds no events.
    pub events: Vec<u8>,
    /// `events` is pure ASCII, so JavaScript can take it as a one-byte string without decoding.
    pub ascii: bool,
    /// Warnings for the logger, in order.
    pub warnings: Vec<String>,
    /// Nothing follows this batch.
    pub done: bool,
    /// Events in `events` (for the delivered counters).
    pub count: usize,
}

impl Batch {
    /// The last batch of a watch that has nothing more to say.
    pub fn end() -> Self {
        Self {
            ascii: true,
            done: true,
            ..Self::default()
        }
    }

    /// `events` as text, for tests and diagnostics.
    pub fn events_text(&self) -> String {
        String::from_utf8_lossy(&self.events).into_owned()
    }
}

/// Collects events and warnings, in order, into one [`Batch`], counting the queue budget the
/// events hold.
#[derive(Debug, Default)]
pub(crate) struct BatchBuilder {
    events: Vec<u8>,
    non_ascii: bool,
    warnings: Vec<String>,
    held: usize,
    count: usize,
    /// The last item is a JSON string of joined lines that the next one may join (a log's).
    joining: bool,
    /// That run's lines needed no escape: its only backslashes are the `\n` that join them.
    plain: bool,
}

/// An ADDED event line with a `pad`-byte string in its object, for tests.
/// Waits until `take` gives a batch, or returns the end at once after `cancel`. `changed` is
/// notified whenever something may have become ready; it is registered before each look, so a
/// change between the look and the wait still wakes.
pub(crate) async fn wait_for_batch(
    changed: &tokio::sync::Notify,
    cancel: &tokio_util::sync::CancellationToken,
    take: impl Fn() -> Option<Batch>,
) -> Batch {
    loop {
        let notified = changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if cancel.is_cancelled() {
            return Batch::end();
        }
        if let Some(batch) = take() {
            return batch;
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Batch::end(),
            () = notified => {}
        }
    }
}

#[cfg(test)]
pub(crate) fn padded_line(pad: usize) -> String {
    format!(
        r#"{{"type":"ADDED","object":{{"p":"{}"}}}}"#,
        "x".repeat(pad)
    )
}

impl BatchBuilder {
    /// An empty batch with room for a whole one, for a stream that just filled one: growing by
    /// doubling would copy it twice over. (A quiet watch's batch starts small instead, so a
    /// thousand watches with an event each hold a few KiB apiece, not a batch's worth.)
    pub(crate) fn sized_for_a_full_batch() -> Self {
        Self {
            events: Vec::with_capacity(MAX_BATCH_BYTES + RESERVE_SLACK),
            ..Self::default()
        }
    }

    /// The batch has reached [`MAX_BATCH_BYTES`]; further items go into the next one.
    pub(crate) fn is_full(&self) -> bool {
        self.events.len() >= MAX_BATCH_BYTES
    }

    /// Bytes reserved for the events text.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.events.capacity()
    }

    /// Nothing has been added.
    pub(crate) fn is_empty(&self) -> bool {
        self.events.is_empty() && self.warnings.is_empty()
    }

    /// Adds a validated watch line (a JSON object) with its `object.metadata.resourceVersion`,
    /// holding `held` bytes of the queue budget until the batch is taken.
    pub(crate) fn push_line(&mut self, line: &[u8], resource_version: Option<&str>, held: usize) {
        self.push_event(line);
        if let Some(version) = resource_version {
            self.add_resource_version(version);
        }
        self.held += held;
    }

    /// Adds an event generated here (an ERROR event).
    pub(crate) fn push_generated(&mut self, json: &str) {
        self.push_event(json.as_bytes());
    }

    /// Adds a warning for the logger.
    pub(crate) fn push_warning(&mut self, text: String) {
        self.warnings.push(text);
    }

    /// Adds a line (its JSON string body, escaped, without the quotes) to the string of lines the
    /// batch ends with, joined by `\n`, or starts one: a run of a log's lines crosses as one
    /// string that JavaScript splits, not a string each to parse. Holds `held` of the budget.
    pub(crate) fn push_joined(&mut self, escaped: &[u8], held: usize, plain: bool) {
        self.plain = plain && (self.plain || !self.joining);
        if self.joining {
            // The run's closing quote goes; the line follows a newline, then the quote again.
            self.events.pop();
            self.events.extend_from_slice(b"\\n");
            self.non_ascii |= !escaped.is_ascii();
            self.events.extend_from_slice(escaped);
            self.events.push(b'"');
        } else {
            self.count += 1;
            self.events
                .push(if self.events.is_empty() { b'[' } else { b',' });
            self.events.push(b'"');
            self.non_ascii |= !escaped.is_ascii();
            self.events.extend_from_slice(escaped);
            self.events.push(b'"');
            self.joining = true;
        }
        self.held += held;
    }

    fn push_event(&mut self, json: &[u8]) {
        self.joining = false;
        self.count += 1;
        self.non_ascii |= !json.is_ascii();
        self.events
            .push(if self.events.is_empty() { b'[' } else { b',' });
        self.events.extend_from_slice(json);
    }

    /// Adds the contract's `resourceVersion` to the event just pushed, so JavaScript yields the
    /// parsed element as it is instead of building another object per event. The line is a
    /// validated JSON object, so its last non-blank byte is its closing brace.
    fn add_resource_version(&mut self, version: &str) {
        let Some(end) = self.events.iter().rposition(|b| !b.is_ascii_whitespace()) else {
            return;
        };
        self.events.truncate(end);
        self.events.extend_from_slice(br#","resourceVersion":"#);
        // A string always serializes.
        let quoted = serde_json::to_string(version).unwrap_or_default();
        self.non_ascii |= !quoted.is_ascii();
        self.events.extend_from_slice(quoted.as_bytes());
        self.events.push(b'}');
    }

    /// The batch (not yet marked `done`) and the queue budget its events held.
    pub(crate) fn finish(mut self) -> (Batch, usize) {
        if self.count == 1 && self.joining && self.plain {
            self.events = plain_run(&self.events);
        } else if !self.events.is_empty() {
            self.events.push(b']');
        }
        if self.events.capacity() > self.events.len() + RESERVE_SLACK {
            // A batch grown by doubling may hold twice its size; queued, that would count
            // double against memory. Shrinking in place is cheap.
            self.events.shrink_to_fit();
        }
        let batch = Batch {
            events: self.events,
            ascii: !self.non_ascii,
            warnings: self.warnings,
            done: false,
            count: self.count,
        };
        (batch, self.held)
    }
}

/// A batch that is one run of plain lines (`["a\\nb"]`, the `[` and the string's quotes
/// included, no `]` yet) as JavaScript takes it without JSON.parse: a newline, then the lines
/// joined by newlines (a batch of JSON always starts with `[`).
fn plain_run(events: &[u8]) -> Vec<u8> {
    let body = &events[2..events.len() - 1];
    let mut out = Vec::with_capacity(body.len() + 1);
    out.push(b'\n');
    let mut rest = body;
    while let Some(at) = memchr::memchr(b'\\', rest) {
        out.extend_from_slice(&rest[..at]);
        out.push(b'\n');
        rest = &rest[at + 2..];
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Failure;

    #[test]
    fn a_batch_of_one_plain_run_of_lines_crosses_as_text_and_any_other_as_json() {
        let mut plain = BatchBuilder::default();
        plain.push_joined(b"one", 3, true);
        plain.push_joined(b"[two]", 5, true);
        assert_eq!(plain.finish().0.events_text(), "\none\n[two]");
        let mut escaped = BatchBuilder::default();
        escaped.push_joined(b"one", 3, true);
        escaped.push_joined(br#"a \"quote\""#, 11, false);
        assert_eq!(escaped.finish().0.events_text(), r#"["one\na \"quote\""]"#);
        let mut mixed = BatchBuilder::default();
        mixed.push_joined(b"one", 3, true);
        mixed.push_generated(r#"{"type":"ERROR"}"#);
        assert_eq!(
            mixed.finish().0.events_text(),
            r#"["one",{"type":"ERROR"}]"#
        );
    }

    #[test]
    fn batches_are_json_arrays_in_order() {
        let mut builder = BatchBuilder::default();
        builder.push_line(br#"{"type":"ADDED","object":{}} "#, Some("4\"2"), 30);
        builder.push_warning("w".into());
        builder.push_generated(&Failure::from_status(410).event_json("/api/v1/pods"));
        builder.push_line(br#"{"type":"DELETED","object":{}}"#, None, 5);
        let (batch, held) = builder.finish();
        let text = batch.events_text();
        assert!(text.starts_with(r#"[{"type":"ADDED","object":{},"resourceVersion":"4\"2"},"#));
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed[0]["type"], "ADDED");
        assert_eq!(parsed[1]["error"]["statusCode"], 410);
        assert_eq!(parsed[1]["error"]["resourcePath"], "/api/v1/pods");
        assert_eq!(parsed[2]["type"], "DELETED");
        assert!(parsed[2].get("resourceVersion").is_none());
        assert_eq!(batch.warnings, vec!["w".to_owned()]);
        assert_eq!(batch.count, 3);
        assert!(batch.ascii);
        assert!(!batch.done);
        assert_eq!(held, 35, "the budget held by both lines");
    }

    #[test]
    fn one_non_ascii_byte_makes_the_batch_utf8() {
        let mut builder = BatchBuilder::default();
        builder.push_line(br#"{"type":"ADDED","object":{}}"#, Some("1"), 1);
        builder.push_line(
            "{\"type\":\"ADDED\",\"object\":{\"n\":\"ü\"}}".as_bytes(),
            None,
            1,
        );
        let (batch, _) = builder.finish();
        assert!(!batch.ascii);
        let mut version = BatchBuilder::default();
        version.push_line(br#"{"type":"ADDED","object":{}}"#, Some("ü"), 1);
        assert!(
            !version.finish().0.ascii,
            "a non-ASCII resourceVersion counts too"
        );
    }

    #[test]
    fn an_empty_batch_has_no_events_text() {
        let builder = BatchBuilder::default();
        assert!(builder.is_empty());
        let (batch, held) = builder.finish();
        assert!(batch.events.is_empty());
        assert_eq!(held, 0);
        assert!(Batch::end().done);
    }

    #[test]
    fn a_lone_event_holds_about_its_size_and_a_busy_stream_reserves_a_batch() {
        let mut quiet = BatchBuilder::default();
        quiet.push_line(&[b'x'; 1500], None, 1500);
        assert!(
            quiet.events.capacity() < 8 * 1024,
            "{}",
            quiet.events.capacity()
        );
        let busy = BatchBuilder::sized_for_a_full_batch();
        assert!(busy.events.capacity() >= MAX_BATCH_BYTES + RESERVE_SLACK);
    }

    /// A builder given `line` until it is full.
    fn filled_with(line: &str) -> BatchBuilder {
        let mut builder = BatchBuilder::default();
        while !builder.is_full() {
            builder.push_line(line.as_bytes(), None, line.len());
        }
        builder
    }

    #[test]
    fn a_finished_batch_holds_little_more_than_its_text() {
        let (batch, _) = filled_with(&padded_line(3000)).finish();
        assert!(batch.events.capacity() <= batch.events.len() + RESERVE_SLACK);
    }

    #[test]
    fn a_batch_is_full_at_the_byte_cap() {
        let line = padded_line(1000);
        let builder = filled_with(&line);
        assert!(builder.events.len() < MAX_BATCH_BYTES + line.len() + 1);
    }
}
