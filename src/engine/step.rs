//! One line of a watch body, as the reflector's bookkeeping sees it: where the stream is (the
//! last resourceVersion, a streaming list still collecting) and what the line asks for. Pure —
//! no I/O, no clock, no cache — so every case is a plain test; `Run::stream` does what the
//! returned [`Step`] says.

use crate::engine::transport::Fault;
use crate::engine::wire::{WatchLine, WireError, read_event};
use crate::informer::store::{ChangeKind, Listed, Object};
use crate::projection::Projection;

/// A streaming list still collecting its initial events.
#[derive(Debug)]
pub struct Initial {
    /// The ADDEDs so far.
    pub objects: Listed,
    /// It is a relist (after a 410), to diff against the cache.
    pub relist: bool,
}

/// Where a watch body is.
#[derive(Debug, Default)]
pub struct Progress {
    /// The last resourceVersion seen (list, events, bookmarks): where a resumed watch starts.
    pub rv: Option<String>,
    /// The streaming list being collected; `None` once it synced, and for a plain watch.
    pub initial: Option<Initial>,
    /// The stream carried an event or a bookmark (a clean end after traffic resets the
    /// backoff).
    pub saw_events: bool,
}

/// How a watch (or a streaming list's stream) ended.
#[derive(Debug)]
pub enum StreamEnd {
    /// The server ended it (its `timeoutSeconds`).
    Clean {
        /// It carried traffic.
        saw_events: bool,
    },
    /// 410: the resourceVersion is too old.
    Expired,
    /// The server ended it with an in-stream ERROR of this code (other than an informer's
    /// 410, which is [`StreamEnd::Expired`]).
    Error {
        /// The Status's code.
        status: u16,
        /// The pause it asks for.
        retry_after: Option<std::time::Duration>,
    },
    /// A non-ADDED event before the initial-events-end bookmark: no streaming list here.
    Unsupported,
    /// It failed.
    Fault(Fault),
}

/// What one line asks of the reflector.
#[derive(Debug)]
pub enum Step {
    /// Nothing: a blank line, a type this informer does not know.
    Skip,
    /// A line or an object that cannot be used (said in the warning); the stream goes on.
    Warn(String),
    /// A plain watch's event, to be passed on as it came (after it is counted, so that a
    /// consumer that has it finds it in the stats): its text and resourceVersion.
    Pass(bytes::Bytes, Option<String>),
    /// An ADDED of the streaming list's initial events, collected.
    Collected,
    /// A change for the cache.
    Change(ChangeKind, Object),
    /// A bookmark; the resourceVersion for the cache when the initial list is done.
    Bookmark(Option<String>),
    /// The streaming list's initial events are complete, at `Progress::rv`.
    Synced(Initial),
    /// The stream ends so.
    End(StreamEnd),
}

impl Step {
    /// How many events it counts in the informer's stats (bookmarks as 0, for the time of
    /// the last event), if it counts at all.
    pub fn events(&self) -> Option<usize> {
        match self {
            Self::Collected | Self::Change(..) | Self::Pass(..) => Some(1),
            // The change that showed a streaming list is not served was received all the same.
            Self::End(StreamEnd::Unsupported) => Some(1),
            Self::Bookmark(_) | Self::Synced(_) => Some(0),
            Self::Skip | Self::Warn(_) | Self::End(_) => None,
        }
    }
}

/// One line of a watch body (without its terminator); a change's object is packed when `pack`.
pub fn step(
    progress: &mut Progress,
    line: &[u8],
    projection: Option<&Projection>,
    pack: bool,
) -> Step {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Step::Skip;
    }
    let read = read_event(
        line,
        // The common line, when nothing is projected: its object is read, and its syntax
        // checked, once (by `Object::parse`). A projection reads the object's text as checked,
        // so with one the line is parsed whole.
        |kind, text| {
            let kind = ChangeKind::of_type(kind).filter(|_| projection.is_none())?;
            Some(Read::Split(kind, Object::parse(text).ok()?))
        },
        |kind, object| Read::Parsed(WatchLine::read(kind, object)),
    );
    match read.map_err(WireError::event) {
        Ok(Read::Split(kind, object)) => change(progress, kind, object.pack_if(pack)),
        Ok(Read::Parsed(Ok(line))) => line_step(progress, line, projection, pack),
        Ok(Read::Parsed(Err(err))) | Err(err) => Step::Warn(format!("skipped a watch line: {err}")),
    }
}

/// What [`step`] reads of a line.
enum Read<'a> {
    /// A change line as the API server writes one, its object read without the line's parse.
    Split(ChangeKind, Object),
    /// Any other line, parsed whole.
    Parsed(Result<WatchLine<'a>, WireError>),
}

/// [`step`] of any line but a blank one, parsed whole: what a line that [`step`] cannot split
/// becomes, for the tests to compare with.
#[cfg(test)]
fn parsed_step(
    progress: &mut Progress,
    line: &[u8],
    projection: Option<&Projection>,
    pack: bool,
) -> Step {
    match WatchLine::parse(line) {
        Ok(parsed) => line_step(progress, parsed, projection, pack),
        Err(err) => Step::Warn(format!("skipped a watch line: {err}")),
    }
}

/// [`step`] of a line parsed whole.
fn line_step(
    progress: &mut Progress,
    parsed: WatchLine<'_>,
    projection: Option<&Projection>,
    pack: bool,
) -> Step {
    match parsed {
        WatchLine::Change { kind, object } => {
            let raw = object.get().as_bytes();
            let projected = projection.and_then(|p| p.apply_raw(object));
            match Object::parse(projected.as_deref().unwrap_or(raw)) {
                Ok(object) => change(progress, kind, object.pack_if(pack)),
                Err(err) => Step::Warn(format!("skipped a watch event: {err}")),
            }
        }
        WatchLine::Bookmark {
            resource_version,
            initial_events_end,
        } => {
            progress.saw_events = true;
            if let Some(rv) = &resource_version {
                progress.rv = Some(rv.clone());
            }
            match progress.initial.take() {
                Some(list) if initial_events_end => Step::Synced(list),
                Some(list) => {
                    progress.initial = Some(list);
                    Step::Bookmark(None)
                }
                None => Step::Bookmark(resource_version),
            }
        }
        WatchLine::Error { code: 410, .. } => Step::End(StreamEnd::Expired),
        WatchLine::Error { code, retry_after } => Step::End(StreamEnd::Error {
            status: code,
            retry_after,
        }),
        WatchLine::Other(_) => Step::Skip,
    }
}

/// A change's object, read: collected into the streaming list, or a change for the cache.
fn change(progress: &mut Progress, kind: ChangeKind, object: Object) -> Step {
    progress.saw_events = true;
    if !object.rv().is_empty() {
        progress.rv = Some(object.rv().to_owned());
    }
    match &mut progress.initial {
        Some(_) if kind != ChangeKind::Added => Step::End(StreamEnd::Unsupported),
        Some(initial) => {
            initial.objects.push(object);
            Step::Collected
        }
        None => Step::Change(kind, object),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn change(kind: &str, name: &str, rv: &str) -> String {
        format!(
            r#"{{"type":"{kind}","object":{{"metadata":{{"name":"{name}","namespace":"n","uid":"u-{name}","resourceVersion":"{rv}"}}}}}}"#
        )
    }

    fn bookmark(rv: &str, end: bool) -> String {
        let annotations = if end {
            r#","annotations":{"k8s.io/initial-events-end":"true"}"#
        } else {
            ""
        };
        format!(
            r#"{{"type":"BOOKMARK","object":{{"metadata":{{"resourceVersion":"{rv}"{annotations}}}}}}}"#
        )
    }

    #[test]
    fn a_line_as_the_api_server_writes_it_steps_as_any_line_does() {
        let object = r#"{"metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"7"},"data":{"x":"}\"}"}}"#;
        let lines = [
            format!(r#"{{"type":"ADDED","object":{object}}}"#),
            format!(r#"{{"type":"MODIFIED","object":{object}}}  "#),
            format!(r#"{{"type":"DELETED","object":{object} }}"#),
            // Not the plain shape, or not well formed: the general way.
            format!(r#"{{"type":"ADDED","object": {object}}}"#),
            format!(r#"{{"type":"ADDED","object":{object},"type":"DELETED"}}"#),
            format!(r#"{{"type":"ADDED","object":{object},"x":{{"y":1}}}}"#),
            format!(r#"{{"type":"ADDED","object":{object}}}}}"#),
            format!(r#"{{"type":"ADDED","object":{object}"#),
            format!(r#"{{"type":"ADDEDX","object":{object}}}"#),
            format!(r#"{{"type":"ERROR","object":{object}}}"#),
            r#"{"type":"ADDED","object":{}}"#.to_string(),
            r#"{"type":"ADDED","object":{"metadata":{"name":"a","name":"b"}}}"#.to_string(),
            r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}"#.to_string(),
            r#"{"type":"ADDED","object":{"metadata":{"name":"a"}},"object":{"metadata":{"name":"b"}}}"#.to_string(),
        ];
        for line in &lines {
            for (plain, parsed) in [
                (Progress::default(), Progress::default()),
                (streaming(), streaming()),
            ] {
                let (mut plain, mut parsed) = (plain, parsed);
                let fast = step(&mut plain, line.as_bytes(), None, true);
                let general = parsed_step(&mut parsed, line.as_bytes(), None, true);
                assert_eq!(format!("{fast:?}"), format!("{general:?}"), "{line}");
                assert_eq!(format!("{plain:?}"), format!("{parsed:?}"), "{line}");
            }
        }
    }

    /// [`step`] of `line`, unprojected, unpacked.
    fn step_line(progress: &mut Progress, line: impl AsRef<[u8]>) -> Step {
        step(progress, line.as_ref(), None, false)
    }

    fn streaming() -> Progress {
        Progress {
            initial: Some(Initial {
                objects: Listed::new(),
                relist: true,
            }),
            ..Progress::default()
        }
    }

    #[test]
    fn a_watch_applies_changes_and_bookmarks_and_follows_their_resource_versions() {
        let mut progress = Progress::default();
        let step1 = step_line(&mut progress, change("MODIFIED", "a", "7"));
        assert!(matches!(step1, Step::Change(ChangeKind::Modified, ref o) if o.name() == "a"));
        assert_eq!(progress.rv.as_deref(), Some("7"));
        assert!(progress.saw_events);
        let step2 = step_line(&mut progress, bookmark("9", false));
        assert!(matches!(step2, Step::Bookmark(Some(ref rv)) if rv == "9"));
        assert_eq!(progress.rv.as_deref(), Some("9"));
    }

    #[test]
    fn a_streaming_list_collects_until_its_end_bookmark() {
        let mut progress = streaming();
        assert!(matches!(
            step_line(&mut progress, change("ADDED", "a", "1")),
            Step::Collected
        ));
        assert!(matches!(
            step_line(&mut progress, bookmark("2", false)),
            Step::Bookmark(None)
        ));
        let Step::Synced(list) = step_line(&mut progress, bookmark("3", true)) else {
            panic!("synced at the end bookmark")
        };
        assert_eq!(list.objects.len(), 1);
        assert!(list.relist);
        assert!(progress.initial.is_none());
        assert_eq!(progress.rv.as_deref(), Some("3"));
        // After it, a plain watch.
        assert!(matches!(
            step_line(&mut progress, change("DELETED", "a", "4")),
            Step::Change(ChangeKind::Deleted, _)
        ));
    }

    #[test]
    fn a_change_before_the_end_bookmark_means_no_streaming_list() {
        let mut progress = streaming();
        let end = step_line(&mut progress, change("MODIFIED", "a", "1"));
        assert!(matches!(end, Step::End(StreamEnd::Unsupported)));
        assert_eq!(end.events(), Some(1));
    }

    #[test]
    fn in_stream_errors_end_the_stream_410_as_expired() {
        let mut progress = Progress::default();
        let expired = br#"{"type":"ERROR","object":{"kind":"Status","code":410}}"#;
        assert!(matches!(
            step_line(&mut progress, expired),
            Step::End(StreamEnd::Expired)
        ));
        let busy = br#"{"type":"ERROR","object":{"code":429,"details":{"retryAfterSeconds":4}}}"#;
        let Step::End(StreamEnd::Error {
            status,
            retry_after,
        }) = step_line(&mut progress, busy)
        else {
            panic!("an in-stream error")
        };
        assert_eq!((status, retry_after), (429, Some(Duration::from_secs(4))));
        // A Status code out of range is a 500, by the crate's one rule.
        let zero = br#"{"type":"ERROR","object":{"code":0}}"#;
        assert!(matches!(
            step_line(&mut progress, zero),
            Step::End(StreamEnd::Error { status: 500, .. })
        ));
        assert!(!progress.saw_events, "errors are not traffic");
    }

    #[test]
    fn blank_unknown_and_broken_lines_change_nothing() {
        let mut progress = Progress::default();
        assert!(matches!(step_line(&mut progress, b"  \t"), Step::Skip));
        assert!(matches!(
            step_line(&mut progress, br#"{"type":"NEW","object":{}}"#),
            Step::Skip
        ));
        let Step::Warn(text) = step_line(&mut progress, b"{oops") else {
            panic!("a warning")
        };
        assert!(text.starts_with("skipped a watch line"), "{text}");
        let nameless = br#"{"type":"ADDED","object":{"metadata":{}}}"#;
        assert!(matches!(step_line(&mut progress, nameless), Step::Warn(_)));
        assert!(progress.rv.is_none() && !progress.saw_events);
    }
}
