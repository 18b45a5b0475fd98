//! What a line of a watch body is to the informer's cache: a change, a bookmark, an object
//! of a streaming list, or the list's end. Pure (no I/O, no clock, no cache), so every case is
//! a plain test; the engine's runner does what the returned [`Step`] says.

use crate::engine::step::{Initial, Kept, Step, StreamEnd};
use crate::engine::{
    Progress,
    wire::{WatchLine, WireError, read_event},
};
use crate::informer::cache::Cache;
use crate::informer::store::{ChangeKind, Listed, Object};
use crate::projection::Projection;

/// What the cache reads a line into.
pub type Read = crate::engine::Read<Cache>;

/// A streaming list's objects so far.
pub type Collecting = Option<Initial<Listed>>;

/// One line of a watch body (without its terminator); a change's object is packed when `pack`.
pub fn step(
    progress: &mut Progress,
    initial: &mut Collecting,
    line: &[u8],
    projection: Option<&Projection>,
    pack: bool,
) -> Step<Read> {
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
            Some(Reading::Split(kind, Object::parse(text).ok()?))
        },
        |kind, object| Reading::Parsed(WatchLine::read(kind, object)),
    );
    match read.map_err(WireError::event) {
        Ok(Reading::Split(kind, object)) => change(progress, initial, kind, object.pack_if(pack)),
        Ok(Reading::Parsed(Ok(line))) => line_step(progress, initial, line, projection, pack),
        Ok(Reading::Parsed(Err(err))) | Err(err) => {
            Step::Warn(format!("skipped a watch line: {err}"))
        }
    }
}

/// What [`step`] reads of a line.
enum Reading<'a> {
    /// A change line as the API server writes one, its object read without the line's parse.
    Split(ChangeKind, Object),
    /// Any other line, parsed whole.
    Parsed(Result<WatchLine<'a>, WireError>),
}

/// [`step`] of a line parsed whole.
fn line_step(
    progress: &mut Progress,
    initial: &mut Collecting,
    parsed: WatchLine<'_>,
    projection: Option<&Projection>,
    pack: bool,
) -> Step<Read> {
    match parsed {
        WatchLine::Change { kind, object } => {
            let raw = object.get().as_bytes();
            let projected = projection.and_then(|p| p.apply_raw(object));
            match Object::parse(projected.as_deref().unwrap_or(raw)) {
                Ok(object) => change(progress, initial, kind, object.pack_if(pack)),
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
            match initial.take() {
                Some(list) if initial_events_end => Step::Read(Kept::Synced(list)),
                Some(list) => {
                    *initial = Some(list);
                    Step::Read(Kept::Bookmark(None))
                }
                None => Step::Read(Kept::Bookmark(resource_version)),
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
fn change(
    progress: &mut Progress,
    initial: &mut Collecting,
    kind: ChangeKind,
    object: Object,
) -> Step<Read> {
    progress.saw_events = true;
    if !object.rv().is_empty() {
        progress.rv = Some(object.rv().to_owned());
    }
    match initial {
        Some(_) if kind != ChangeKind::Added => Step::End(StreamEnd::Unsupported),
        Some(initial) => {
            initial.objects.push(object);
            Step::Read(Kept::Collected)
        }
        None => Step::Read(Kept::Change((kind, object))),
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
            for (plain, parsed) in [(None, None), (streaming(), streaming())] {
                let (mut plain, mut parsed) =
                    ((Progress::default(), plain), (Progress::default(), parsed));
                let fast = step(&mut plain.0, &mut plain.1, line.as_bytes(), None, true);
                let general = parsed_step(&mut parsed, line.as_bytes());
                assert_eq!(format!("{fast:?}"), format!("{general:?}"), "{line}");
                assert_eq!(format!("{plain:?}"), format!("{parsed:?}"), "{line}");
            }
        }
    }

    /// Where a stream is: its progress, and the streaming list it collects.
    type Stream = (Progress, Collecting);

    /// [`step`] of any line but a blank one, parsed whole, unprojected and packed: what a line
    /// that [`step`] cannot split becomes, to compare with.
    fn parsed_step(stream: &mut Stream, line: &[u8]) -> Step<Read> {
        match WatchLine::parse(line) {
            Ok(parsed) => line_step(&mut stream.0, &mut stream.1, parsed, None, true),
            Err(err) => Step::Warn(format!("skipped a watch line: {err}")),
        }
    }

    /// [`step`] of `line`, unprojected, unpacked.
    fn step_line(stream: &mut Stream, line: impl AsRef<[u8]>) -> Step<Read> {
        step(&mut stream.0, &mut stream.1, line.as_ref(), None, false)
    }

    fn streaming() -> Collecting {
        Some(Initial {
            objects: Listed::new(),
            relist: true,
        })
    }

    #[test]
    fn a_watch_applies_changes_and_bookmarks_and_follows_their_resource_versions() {
        let mut stream: Stream = (Progress::default(), None);
        let step1 = step_line(&mut stream, change("MODIFIED", "a", "7"));
        assert!(
            matches!(step1, Step::Read(Kept::Change((ChangeKind::Modified, ref o))) if o.name() == "a")
        );
        assert_eq!(stream.0.rv.as_deref(), Some("7"));
        assert!(stream.0.saw_events);
        let step2 = step_line(&mut stream, bookmark("9", false));
        assert!(matches!(step2, Step::Read(Kept::Bookmark(Some(ref rv))) if rv == "9"));
        assert_eq!(stream.0.rv.as_deref(), Some("9"));
    }

    #[test]
    fn a_streaming_list_collects_until_its_end_bookmark() {
        let mut stream: Stream = (Progress::default(), streaming());
        assert!(matches!(
            step_line(&mut stream, change("ADDED", "a", "1")),
            Step::Read(Kept::Collected)
        ));
        assert!(matches!(
            step_line(&mut stream, bookmark("2", false)),
            Step::Read(Kept::Bookmark(None))
        ));
        let Step::Read(Kept::Synced(list)) = step_line(&mut stream, bookmark("3", true)) else {
            panic!("synced at the end bookmark")
        };
        assert_eq!(list.objects.len(), 1);
        assert!(list.relist);
        assert!(stream.1.is_none());
        assert_eq!(stream.0.rv.as_deref(), Some("3"));
        // After it, a plain watch.
        assert!(matches!(
            step_line(&mut stream, change("DELETED", "a", "4")),
            Step::Read(Kept::Change((ChangeKind::Deleted, _)))
        ));
    }

    #[test]
    fn a_change_before_the_end_bookmark_means_no_streaming_list() {
        let mut stream: Stream = (Progress::default(), streaming());
        let end = step_line(&mut stream, change("MODIFIED", "a", "1"));
        assert!(matches!(end, Step::End(StreamEnd::Unsupported)));
        assert_eq!(end.events(), Some(1));
    }

    #[test]
    fn in_stream_errors_end_the_stream_410_as_expired() {
        let mut stream: Stream = (Progress::default(), None);
        let expired = br#"{"type":"ERROR","object":{"kind":"Status","code":410}}"#;
        assert!(matches!(
            step_line(&mut stream, expired),
            Step::End(StreamEnd::Expired)
        ));
        let busy = br#"{"type":"ERROR","object":{"code":429,"details":{"retryAfterSeconds":4}}}"#;
        let Step::End(StreamEnd::Error {
            status,
            retry_after,
        }) = step_line(&mut stream, busy)
        else {
            panic!("an in-stream error")
        };
        assert_eq!((status, retry_after), (429, Some(Duration::from_secs(4))));
        // A Status code out of range is a 500, by the crate's one rule.
        let zero = br#"{"type":"ERROR","object":{"code":0}}"#;
        assert!(matches!(
            step_line(&mut stream, zero),
            Step::End(StreamEnd::Error { status: 500, .. })
        ));
        assert!(!stream.0.saw_events, "errors are not traffic");
    }

    #[test]
    fn blank_unknown_and_broken_lines_change_nothing() {
        let mut stream: Stream = (Progress::default(), None);
        assert!(matches!(step_line(&mut stream, b"  \t"), Step::Skip));
        assert!(matches!(
            step_line(&mut stream, br#"{"type":"NEW","object":{}}"#),
            Step::Skip
        ));
        let Step::Warn(text) = step_line(&mut stream, b"{oops") else {
            panic!("a warning")
        };
        assert!(text.starts_with("skipped a watch line"), "{text}");
        let nameless = br#"{"type":"ADDED","object":{"metadata":{}}}"#;
        assert!(matches!(step_line(&mut stream, nameless), Step::Warn(_)));
        assert!(stream.0.rv.is_none() && !stream.0.saw_events);
    }
}
