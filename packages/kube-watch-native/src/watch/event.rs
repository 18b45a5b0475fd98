//! Classifying one framed line of a plain watch's body.
//!
//! The line is validated here, on a Rust thread, so that JavaScript can hand the text of a
//! whole batch to `JSON.parse` without ever meeting a line it cannot parse. It is read by the
//! informer's reader of watch lines ([`read_event`]); of its object only the resourceVersion is
//! looked at (and an in-stream error's Status, by [`StatusBody`]'s rule); everything else is
//! checked for syntax and skipped without being built into a value. Unlike the informer's
//! objects, a plain watch's may be any JSON: it passes them on as they came, so its probe reads
//! a field of the wrong type as absent rather than refusing the line.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::engine::wire::read_event;
use crate::error::{Failure, StatusBody, status_code};

/// What one line of the body means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// Empty or white space only: skipped without a word.
    Blank,
    /// A watch event (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or a type Kubernetes adds
    /// later) whose text JavaScript may parse as it is.
    Event {
        /// `object.metadata.resourceVersion`, when it is a string.
        resource_version: Option<String>,
    },
    /// A `{"type":"ERROR","object":Status}` line, already mapped to the contract's failure.
    Error(Failure),
    /// Not a watch event; the reason goes into a warning and the stream goes on.
    Malformed(String),
}

/// The keys of an object a probe reads; every other key is only checked for syntax.
trait ProbeKeys: Default {
    /// Reads the value of `key` if this probe wants it; `Ok(false)` leaves it to be skipped.
    fn read<'de, M: MapAccess<'de>>(&mut self, key: &str, map: &mut M) -> Result<bool, M::Error>;
}

/// Deserializes any JSON value into `T`: the keys `T` wants when it is an object, nothing
/// (after a syntax check) otherwise.
struct Probe<T>(T);

impl<'de, T: ProbeKeys> Deserialize<'de> for Probe<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ProbeVisitor<T>(std::marker::PhantomData<T>);

        impl<'de, T: ProbeKeys> Visitor<'de> for ProbeVisitor<T> {
            type Value = Probe<T>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }

            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Probe<T>, M::Error> {
                let mut probe = T::default();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if !probe.read(&key, &mut map)? {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(Probe(probe))
            }

            fn visit_seq<S: de::SeqAccess<'de>>(self, mut seq: S) -> Result<Probe<T>, S::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Probe(T::default()))
            }

            fn visit_bool<E>(self, _: bool) -> Result<Probe<T>, E> {
                Ok(Probe(T::default()))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Probe<T>, E> {
                Ok(Probe(T::default()))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Probe<T>, E> {
                Ok(Probe(T::default()))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Probe<T>, E> {
                Ok(Probe(T::default()))
            }
            fn visit_str<E>(self, _: &str) -> Result<Probe<T>, E> {
                Ok(Probe(T::default()))
            }
            fn visit_unit<E>(self) -> Result<Probe<T>, E> {
                Ok(Probe(T::default()))
            }
        }

        deserializer.deserialize_any(ProbeVisitor(std::marker::PhantomData))
    }
}

/// What the classifier reads of an event's `object`: its `metadata` (`IN_METADATA` false),
/// and in that its `resourceVersion` when it is a string (`IN_METADATA` true).
#[derive(Default)]
struct RvProbe<const IN_METADATA: bool> {
    resource_version: Option<String>,
}

/// The probe of an event's `object`.
type ObjectProbe = RvProbe<false>;

impl<const IN_METADATA: bool> ProbeKeys for RvProbe<IN_METADATA> {
    fn read<'de, M: MapAccess<'de>>(&mut self, key: &str, map: &mut M) -> Result<bool, M::Error> {
        self.resource_version = match (IN_METADATA, key) {
            (false, "metadata") => map.next_value::<Probe<RvProbe<true>>>()?.0.resource_version,
            (true, "resourceVersion") => match map.next_value::<serde_json::Value>()? {
                serde_json::Value::String(version) => Some(version),
                _ => None,
            },
            _ => return Ok(false),
        };
        Ok(true)
    }
}

/// Classifies one line (without its terminator).
pub fn classify(line: &[u8]) -> Line {
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(err) => {
            return Line::Malformed(format!(
                "invalid UTF-8 at byte {} of {}",
                err.valid_up_to(),
                line.len()
            ));
        }
    };
    if text.trim().is_empty() {
        return Line::Blank;
    }
    let read = read_event(
        line,
        // Split unchecked: the probe's parse checks the object; an ERROR's Status is read
        // leniently, so that line is parsed whole.
        |kind, object| {
            let probe = serde_json::from_slice::<Probe<ObjectProbe>>(object).ok()?;
            (kind != "ERROR").then_some(Line::Event {
                resource_version: probe.0.resource_version,
            })
        },
        parsed_line,
    );
    read.unwrap_or_else(|err| Line::Malformed(describe_json_error(&err, line.len())))
}

/// The line of a watch event of type `kind` with `object`, parsed whole.
fn parsed_line(kind: &str, object: Option<&RawValue>) -> Line {
    let object = object.map(|object| object.get().as_bytes());
    if kind == "ERROR" {
        // The API server ends a watch it cannot serve (410 Expired, mostly) with a Status.
        let code = object.map_or(status_code(None), |status| StatusBody::parse(status).code);
        return Line::Error(Failure::from_status(code));
    }
    // The text parsed already: the probe reads any JSON value.
    let probe = object.and_then(|text| serde_json::from_slice::<Probe<ObjectProbe>>(text).ok());
    Line::Event {
        resource_version: probe.and_then(|probe| probe.0.resource_version),
    }
}

fn describe_json_error(err: &serde_json::Error, len: usize) -> String {
    match err.classify() {
        serde_json::error::Category::Data => {
            format!("not a watch event (an object with a string \"type\"): {err} ({len} bytes)")
        }
        _ => format!("malformed JSON: {err} ({len} bytes)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorType;

    #[test]
    fn regular_events_pass() {
        for kind in ["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "SOMETHING_NEW"] {
            let line = format!(
                r#"{{"type":"{kind}","object":{{"metadata":{{"name":"a","resourceVersion":"12"}}}}}}"#
            );
            let expected = Line::Event {
                resource_version: Some("12".into()),
            };
            assert_eq!(classify(line.as_bytes()), expected, "{kind}");
        }
    }

    #[test]
    fn the_resource_version_is_read_only_where_the_contract_says() {
        let cases = [
            (
                r#"{"type":"ADDED","object":{"metadata":{"resourceVersion":7}}}"#,
                None,
            ),
            (r#"{"type":"ADDED","object":{"resourceVersion":"7"}}"#, None),
            (r#"{"type":"ADDED","object":null}"#, None),
            (r#"{"type":"ADDED"}"#, None),
            (
                r#"{"object":{"spec":{"metadata":{"resourceVersion":"1"}},"metadata":{"x":[{"resourceVersion":"2"}],"resourceVersion":"3"}},"type":"ADDED"}"#,
                Some("3"),
            ),
        ];
        for (line, expected) in cases {
            let expected = Line::Event {
                resource_version: expected.map(String::from),
            };
            assert_eq!(classify(line.as_bytes()), expected, "{line}");
        }
    }

    #[test]
    fn blank_lines_are_skipped() {
        assert_eq!(classify(b""), Line::Blank);
        assert_eq!(classify(b"  \t "), Line::Blank);
    }

    #[test]
    fn in_stream_errors_carry_their_code() {
        let line = br#"{"type":"ERROR","object":{"kind":"Status","reason":"Expired","code":410}}"#;
        assert_eq!(classify(line), Line::Error(Failure::from_status(410)));
        // A field of the Status with the wrong type is absent; the others are still read.
        let line = br#"{"type":"ERROR","object":{"code":429,"details":"busy"}}"#;
        assert_eq!(classify(line), Line::Error(Failure::from_status(429)));
    }

    #[test]
    fn in_stream_errors_without_code_are_500() {
        let expected = Line::Error(Failure {
            error_type: ErrorType::SystemError,
            status_code: 500,
        });
        assert_eq!(
            classify(br#"{"type":"ERROR","object":{"kind":"Status"}}"#),
            expected
        );
        assert_eq!(classify(br#"{"type":"ERROR"}"#), expected);
        assert_eq!(
            classify(br#"{"type":"ERROR","object":{"code":0}}"#),
            expected
        );
        assert_eq!(classify(br#"{"type":"ERROR","object":"gone"}"#), expected);
    }

    #[test]
    fn malformed_lines_are_reported() {
        for bad in [
            &br#"{not json"#[..],
            br#"[1,2]"#,
            br#"42"#,
            br#""ADDED""#,
            br#"{"object":{}}"#,
            br#"{"type":7}"#,
            br#"{"type":"ADDED","object":{}} trailing"#,
            br#"["ADDED",{}]"#,
            br#"{"type":"ADDED","object":{"a":1},"type":"DELETED"}"#,
        ] {
            assert!(
                matches!(classify(bad), Line::Malformed(_)),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn invalid_utf8_is_reported_with_its_offset() {
        match classify(b"{\"type\":\"ADDED\",\"x\":\"\xff\"}") {
            Line::Malformed(reason) => assert!(reason.contains("invalid UTF-8 at byte 21")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn malformed_syntax_anywhere_in_the_object_is_caught() {
        let line = br#"{"type":"ADDED","object":{"metadata":{"name":"a",}}}"#;
        assert!(matches!(classify(line), Line::Malformed(_)));
    }

    #[test]
    fn unicode_and_escapes_pass() {
        let line = r#"{"type":"ADDED","object":{"metadata":{"name":"caf\u00e9 ☕ \"q\""}}}"#;
        assert!(matches!(classify(line.as_bytes()), Line::Event { .. }));
    }
}
