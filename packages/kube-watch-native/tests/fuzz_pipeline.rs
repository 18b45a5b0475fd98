//! Property-based fuzzing of framing + classification together: arbitrary byte streams made
//! of valid watch events, blank lines, garbage and overlong lines, cut into arbitrary chunks.
//! Every valid event line before the first overlong line must come out exactly once, whole and
//! in order; the overlong line is refused (nothing after it comes out); nothing panics.
//!
//! The number of cases defaults to proptest's 256 (the bounded run in `npm test`); set
//! `PROPTEST_CASES` for a longer run, e.g. `PROPTEST_CASES=200000 cargo test --release --test
//! fuzz_pipeline`.

use kube_watch_native::framing::LineFramer;
use kube_watch_native::watch::event::{Line, classify};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Piece {
    /// A valid event; carries its sequence number.
    Event(String),
    /// Something the classifier must skip or warn about, never deliver.
    Noise(Vec<u8>),
    /// A line over the framer's limit: refused, and the stream ends there.
    Overlong(String),
}

fn event_line() -> impl Strategy<Value = Piece> {
    (
        prop::sample::select(vec!["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]),
        "[a-z0-9é☕\"\\\\ -]{0,24}",
        0u32..1_000_000,
    )
        .prop_map(|(kind, name, rv)| {
            let object =
                serde_json::json!({"metadata": {"name": name, "resourceVersion": rv.to_string()}});
            Piece::Event(serde_json::json!({"type": kind, "object": object}).to_string())
        })
}

/// The framer's line limit in the first property: above every generated event and noise line
/// (an event is at most ~230 bytes), so only an overlong line reaches it.
const LIMIT: usize = 512;

/// A line just over [`LIMIT`] (by 1 to 300 bytes, often by one: the framer allows a byte of
/// slack for a `\r` while a line is incomplete) that would otherwise be a valid event, so
/// letting it through would show as a delivered event.
fn overlong_line() -> impl Strategy<Value = String> {
    prop_oneof![Just(1usize), Just(2), 1usize..=300].prop_map(|over| {
        let shell = r#"{"type":"ADDED","object":{"metadata":{"name":""}}}"#.len();
        let name = "x".repeat(LIMIT + over - shell);
        serde_json::json!({"type": "ADDED", "object": {"metadata": {"name": name}}}).to_string()
    })
}

fn noise_line() -> impl Strategy<Value = Piece> {
    prop_oneof![
        Just(Piece::Noise(Vec::new())),
        Just(Piece::Noise(b"   ".to_vec())),
        Just(Piece::Noise(b"{\"type\":\"ADDED\"".to_vec())),
        Just(Piece::Noise(b"[1,2]".to_vec())),
        Just(Piece::Noise(b"{\"object\":{}}".to_vec())),
        prop::collection::vec(any::<u8>(), 0..64).prop_map(|mut bytes| {
            bytes.retain(|b| *b != b'\n');
            // Arbitrary bytes that happen to be a valid event are not noise.
            if matches!(classify(&bytes), Line::Event { .. }) {
                bytes.insert(0, b'#');
            }
            Piece::Noise(bytes)
        }),
    ]
}

proptest! {
    #[test]
    fn every_valid_event_comes_out_once_in_order(
        mut pieces in prop::collection::vec(prop_oneof![3 => event_line(), 1 => noise_line()], 0..40),
        overlong in prop::option::of((any::<prop::sample::Index>(), overlong_line())),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
        crlf in any::<bool>(),
        trailing_newline in any::<bool>(),
    ) {
        // Half the cases carry one overlong line, anywhere (last included).
        let overlong_at = overlong.map(|(at, line)| {
            let at = at.index(pieces.len() + 1);
            pieces.insert(at, Piece::Overlong(line));
            at
        });
        let ending: &[u8] = if crlf { b"\r\n" } else { b"\n" };
        let mut body = Vec::new();
        let mut expected = Vec::new();
        for (i, piece) in pieces.iter().enumerate() {
            match piece {
                Piece::Event(text) => {
                    body.extend_from_slice(text.as_bytes());
                    if overlong_at.is_none_or(|at| i < at) {
                        expected.push(text.clone());
                    }
                }
                Piece::Noise(bytes) => body.extend_from_slice(bytes),
                Piece::Overlong(text) => {
                    prop_assert!(text.len() > LIMIT);
                    body.extend_from_slice(text.as_bytes());
                }
            }
            if i + 1 < pieces.len() || trailing_newline {
                body.extend_from_slice(ending);
            }
        }
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(body.len() + 1)).collect();
        points.sort_unstable();

        let mut framer = LineFramer::new(LIMIT);
        let mut delivered = Vec::new();
        let mut keep = |line: &[u8]| {
            if matches!(classify(line), Line::Event { .. }) {
                delivered.push(String::from_utf8(line.to_vec()).unwrap());
            }
        };
        // As the watch does: the first refused line ends the stream.
        let mut refused = None;
        let mut start = 0;
        'body: for point in points.into_iter().chain([body.len()]) {
            framer.push(&body[start..point]);
            start = point;
            loop {
                match framer.next_line() {
                    Ok(Some(line)) => keep(&line),
                    Ok(None) => break,
                    Err(err) => {
                        refused = Some(err);
                        break 'body;
                    }
                }
            }
        }
        if refused.is_none() {
            match framer.finish() {
                Ok(Some(line)) => keep(&line),
                Ok(None) => {}
                Err(err) => refused = Some(err),
            }
        }
        prop_assert_eq!(refused.map(|err| err.limit), overlong_at.map(|_| LIMIT));
        prop_assert_eq!(delivered, expected);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_overlong_lines_are_refused(
        body in prop::collection::vec(any::<u8>(), 0..2048),
        chunk in 1usize..64,
        limit in 1usize..128,
    ) {
        let mut framer = LineFramer::new(limit);
        'outer: for piece in body.chunks(chunk) {
            framer.push(piece);
            loop {
                match framer.next_line() {
                    Ok(Some(line)) => {
                        prop_assert!(line.len() <= limit);
                        let _ = classify(&line);
                    }
                    Ok(None) => break,
                    Err(err) => {
                        prop_assert_eq!(err.limit, limit);
                        break 'outer;
                    }
                }
            }
            prop_assert!(framer.buffered() <= limit + 1 + chunk);
        }
    }
}
