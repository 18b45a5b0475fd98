//! Turning queued items into one batch for JavaScript: a JSON array text of finished events
//! (watch lines with the contract's `resourceVersion` appended, and generated ERROR events), plus
//! the warnings for the logger.

use bytes::Bytes;
use tokio::sync::OwnedSemaphorePermit;

use crate::error::Failure;

/// A batch stops growing past this many bytes, so parsing one never holds the event loop long.
pub const MAX_BATCH_BYTES: usize = 64 * 1024;

/// What the task hands to the queue.
pub(crate) enum Item {
    /// A validated event line and its `object.metadata.resourceVersion`; the permit returns the
    /// line's bytes to the budget when dropped.
    Event(Bytes, Option<String>, OwnedSemaphorePermit),
    /// The watch failed; this is its last item.
    Failure(Failure),
    /// Something the logger should hear.
    Warning(String),
}

/// One drained batch.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Batch {
    /// A JSON array of the contract's events (watch lines with `resourceVersion` appended, and
    /// generated ERROR events) in order; empty when the batch holds no events.
    pub events: String,
    /// `events` is pure ASCII, so JavaScript can take it as a one-byte string without decoding.
    pub ascii: bool,
    /// Warnings for the logger, in order.
    pub warnings: Vec<String>,
    /// Nothing follows this batch.
    pub done: bool,
}

/// Collects items, in order, into one [`Batch`].
pub(crate) struct BatchBuilder<'a> {
    resource_path: &'a str,
    events: Vec<u8>,
    warnings: Vec<String>,
}

impl<'a> BatchBuilder<'a> {
    /// An empty batch for a watch of `resource_path` (named in generated ERROR events).
    pub(crate) fn new(resource_path: &'a str) -> Self {
        Self {
            resource_path,
            events: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// The batch has reached [`MAX_BATCH_BYTES`]; further items wait for the next one.
    pub(crate) fn is_full(&self) -> bool {
        self.events.len() >= MAX_BATCH_BYTES
    }

    /// Adds an item: events to the JSON array, warnings to the list.
    pub(crate) fn push(&mut self, item: Item) {
        match item {
            Item::Event(line, resource_version, _permit) => {
                self.push_event(&line);
                if let Some(version) = resource_version {
                    self.add_resource_version(&version);
                }
            }
            Item::Failure(failure) => {
                self.push_event(failure.event_json(self.resource_path).as_bytes())
            }
            Item::Warning(text) => self.warnings.push(text),
        }
    }

    fn push_event(&mut self, json: &[u8]) {
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
        self.events.extend_from_slice(
            serde_json::to_string(version)
                .unwrap_or_default()
                .as_bytes(),
        );
        self.events.push(b'}');
    }

    /// The batch; `done` says nothing follows it.
    pub(crate) fn finish(mut self, done: bool) -> Batch {
        if !self.events.is_empty() {
            self.events.push(b']');
        }
        // Every piece was validated as UTF-8 (event lines) or produced by serde (errors).
        let events = String::from_utf8(self.events)
            .unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned());
        Batch {
            ascii: events.is_ascii(),
            events,
            warnings: self.warnings,
            done,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::Semaphore;

    use super::*;

    #[test]
    fn batches_are_json_arrays_in_order() {
        let budget = Arc::new(Semaphore::new(100));
        let permit = |n| budget.clone().try_acquire_many_owned(n).unwrap();
        let mut builder = BatchBuilder::new("/api/v1/pods");
        builder.push(Item::Event(
            Bytes::from_static(br#"{"type":"ADDED","object":{}} "#),
            Some("4\"2".into()),
            permit(1),
        ));
        builder.push(Item::Warning("w".into()));
        builder.push(Item::Failure(Failure::from_status(410)));
        let batch = builder.finish(true);
        assert!(
            batch
                .events
                .starts_with(r#"[{"type":"ADDED","object":{},"resourceVersion":"4\"2"},"#)
        );
        let parsed: serde_json::Value = serde_json::from_str(&batch.events).unwrap();
        assert_eq!(parsed[0]["type"], "ADDED");
        assert_eq!(parsed[1]["error"]["statusCode"], 410);
        assert_eq!(parsed[1]["error"]["resourcePath"], "/api/v1/pods");
        assert_eq!(batch.warnings, vec!["w".to_owned()]);
        assert!(batch.done);
        assert_eq!(
            budget.available_permits(),
            100,
            "permits return with the batch"
        );
    }

    #[test]
    fn an_empty_batch_has_no_events_text() {
        let batch = BatchBuilder::new("/p").finish(true);
        assert_eq!(batch.events, "");
    }
}
