//! What is read from the API server: list pages and watch event lines, parsed without building
//! a value tree for the objects in them. The objects stay slices of the body (`RawValue`) until
//! the store copies each one's text once. [`read_event`] is the one reader of watch lines, for
//! the plain watch (`crate::watch::event::classify`) and the informer ([`WatchLine`]).

use std::borrow::Cow;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use thiserror::Error;

use crate::error::StatusBody;

/// A body the informer cannot use.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    /// Not the JSON shape expected.
    #[error("malformed {what}: {reason}")]
    Malformed {
        /// `list page` or `watch event`.
        what: &'static str,
        /// The parser's message.
        reason: String,
    },
}

/// The three kinds of change a watch reports and a consumer sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    /// An object the consumer does not hold appeared.
    Added,
    /// An object the consumer holds changed.
    Modified,
    /// An object the consumer holds is gone.
    Deleted,
}

impl ChangeKind {
    /// The change a watch event's `type` names; `None` for BOOKMARK, ERROR and the rest.
    pub fn of_type(kind: &str) -> Option<Self> {
        match kind {
            "ADDED" => Some(Self::Added),
            "MODIFIED" => Some(Self::Modified),
            "DELETED" => Some(Self::Deleted),
            _ => None,
        }
    }

    /// The event `type` JavaScript sees.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One page of a paginated list (`GET …?limit=N&continue=…`).
#[derive(Debug)]
pub struct ListPage<'a> {
    /// The list's `apiVersion`: its items', which they do not say themselves.
    pub api_version: Option<String>,
    /// The list's `kind` (`PodList`): its items' with `List` cut off.
    pub kind: Option<String>,
    /// `metadata.resourceVersion`: where a watch after the last page starts.
    pub resource_version: Option<String>,
    /// `metadata.continue`: the token for the next page; `None` on the last page.
    pub continue_token: Option<String>,
    /// The items' texts, as slices of the body.
    pub items: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
struct WireList<'a> {
    #[serde(rename = "apiVersion", default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: Option<ListMeta>,
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct ListMeta {
    #[serde(rename = "resourceVersion", default)]
    resource_version: Option<String>,
    #[serde(rename = "continue", default)]
    continue_token: Option<String>,
}

impl<'a> ListPage<'a> {
    /// Parses a list body; the items are only checked for syntax.
    pub fn parse(body: &'a [u8]) -> Result<Self, WireError> {
        let list: WireList<'a> =
            serde_json::from_slice(body).map_err(|e| WireError::Malformed {
                what: "list page",
                reason: e.to_string(),
            })?;
        let meta = list.metadata.unwrap_or(ListMeta {
            resource_version: None,
            continue_token: None,
        });
        Ok(Self {
            api_version: list.api_version,
            kind: list.kind,
            resource_version: meta.resource_version.filter(|v| !v.is_empty()),
            continue_token: meta.continue_token.filter(|t| !t.is_empty()),
            items: list.items.unwrap_or_default(),
        })
    }
}

/// One line of a watch body, as the informer reads it.
#[derive(Debug)]
pub enum WatchLine<'a> {
    /// ADDED, MODIFIED or DELETED, with the object's text.
    Change {
        /// What happened.
        kind: ChangeKind,
        /// The object, as a slice of the line.
        object: &'a RawValue,
    },
    /// A BOOKMARK: progress without a change.
    Bookmark {
        /// Where a resumed watch may start.
        resource_version: Option<String>,
        /// The bookmark that ends a streaming list's initial events.
        initial_events_end: bool,
    },
    /// An in-stream `ERROR` with a Status.
    Error {
        /// The Status `code` (410 when the resourceVersion expired), under the crate's one
        /// rule ([`crate::error::status_code`]).
        code: u16,
        /// `details.retryAfterSeconds`, when the server asks for a pause.
        retry_after: Option<Duration>,
    },
    /// A type this informer does not know; skipped.
    Other(String),
}

impl PartialEq for WatchLine<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            // Objects compare by text: RawValue has no equality of its own.
            (
                Self::Change { kind, object },
                Self::Change {
                    kind: other_kind,
                    object: other_object,
                },
            ) => kind == other_kind && object.get() == other_object.get(),
            (
                Self::Bookmark {
                    resource_version: a,
                    initial_events_end: b,
                },
                Self::Bookmark {
                    resource_version: c,
                    initial_events_end: d,
                },
            ) => a == c && b == d,
            (
                Self::Error {
                    code: a,
                    retry_after: b,
                },
                Self::Error {
                    code: c,
                    retry_after: d,
                },
            ) => a == c && b == d,
            (Self::Other(a), Self::Other(b)) => a == b,
            _ => false,
        }
    }
}

#[derive(Deserialize)]
struct WireEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    object: Option<&'a RawValue>,
}

/// Reads one watch line, `{"type":…,"object":…}`, into what `split` or `parsed` make of its
/// type and its object; `Err` when the line is not a JSON object with a string `type`.
///
/// A line exactly as the API server writes one (`{"type":"ADDED","object":{…}}`: Go's field
/// order, no white space, a type of letters, digits and `_`) is split without being parsed, and
/// `split` gets its object's text unchecked: a reader that parses that text as one JSON value
/// checks it as it reads it, in one pass rather than two (the line's, then the object's). When
/// `split` returns `None` (the text does not parse, so the line may not be the shape it looked
/// like, e.g. `{"type":"A","object":{},"x":1}`; or this reader will not read it unchecked) the
/// line is parsed whole, as every other line is, and `parsed` gets its type and its object
/// (`None` when the line has none, or `null`).
pub fn read_event<'a, T>(
    line: &'a [u8],
    split: impl FnOnce(&str, &'a [u8]) -> Option<T>,
    parsed: impl FnOnce(&str, Option<&'a RawValue>) -> T,
) -> Result<T, serde_json::Error> {
    if let Some((kind, object)) = split_event(line)
        && let Some(read) = split(kind, object)
    {
        return Ok(read);
    }
    let event: WireEvent<'a> = serde_json::from_slice(line)?;
    // serde also reads the struct from an array; an event is never one.
    if line.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(serde::de::Error::custom("expected a JSON object"));
    }
    Ok(parsed(&event.kind, event.object))
}

/// A line in the API server's own shape (see [`read_event`]) split into its type and its
/// object's text, which is not checked here.
fn split_event(line: &[u8]) -> Option<(&str, &[u8])> {
    let rest = line.strip_prefix(br#"{"type":""#)?;
    let (kind, rest) = rest.split_at(rest.iter().position(|b| *b == b'"')?);
    if kind.is_empty() || !kind.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_') {
        return None;
    }
    let object = rest.strip_prefix(br#"","object":"#)?;
    let object = object.trim_ascii_end().strip_suffix(b"}")?.trim_ascii_end();
    // Letters, digits and `_` are UTF-8.
    let kind = std::str::from_utf8(kind).ok()?;
    (object.first() == Some(&b'{')).then_some((kind, object))
}

#[derive(Deserialize, Default)]
struct BookmarkObject {
    #[serde(default)]
    metadata: BookmarkMeta,
}

#[derive(Deserialize, Default)]
struct BookmarkMeta {
    #[serde(rename = "resourceVersion", default)]
    resource_version: Option<String>,
    #[serde(default)]
    annotations: Option<std::collections::HashMap<String, String>>,
}

/// The annotation on the bookmark that ends a streaming list.
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

impl WireError {
    /// A watch line that is not a watch event.
    pub fn event(err: serde_json::Error) -> Self {
        Self::Malformed {
            what: "watch event",
            reason: err.to_string(),
        }
    }
}

impl<'a> WatchLine<'a> {
    /// Reads one framed line of a watch body, parsed whole.
    pub fn parse(line: &'a [u8]) -> Result<Self, WireError> {
        read_event(line, |_, _| None, Self::read).map_err(WireError::event)?
    }

    /// The line of a watch event of type `kind` with `object`, as [`read_event`] parsed it.
    pub fn read(kind: &str, object: Option<&'a RawValue>) -> Result<Self, WireError> {
        let object = object.ok_or_else(|| WireError::Malformed {
            what: "watch event",
            reason: "no object".into(),
        })?;
        if let Some(kind) = ChangeKind::of_type(kind) {
            return Ok(Self::Change { kind, object });
        }
        let text = object.get().as_bytes();
        Ok(match kind {
            "BOOKMARK" => {
                let bookmark: BookmarkObject =
                    serde_json::from_slice(text).map_err(WireError::event)?;
                let meta = bookmark.metadata;
                let initial_events_end = meta
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(INITIAL_EVENTS_END))
                    .is_some_and(|v| v == "true");
                Self::Bookmark {
                    resource_version: meta.resource_version.filter(|v| !v.is_empty()),
                    initial_events_end,
                }
            }
            "ERROR" => {
                let status = StatusBody::parse(text);
                Self::Error {
                    code: status.code,
                    retry_after: status.retry_after,
                }
            }
            other => Self::Other(other.to_owned()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::script::TWO_POD_PAGE;

    #[test]
    fn a_list_page_yields_typed_items_and_its_continuation() {
        let page = ListPage::parse(TWO_POD_PAGE).unwrap();
        assert_eq!(page.resource_version.as_deref(), Some("42"));
        assert_eq!(page.continue_token.as_deref(), Some("tok"));
        assert_eq!(page.items.len(), 2);
        assert_eq!(page.api_version.as_deref(), Some("v1"));
        assert_eq!(page.kind.as_deref(), Some("PodList"));
        assert!(page.items[1].get().contains(r#""big":[1,2,3]"#));
    }

    #[test]
    fn the_last_page_has_no_token_and_an_empty_list_may_say_null() {
        let page = ListPage::parse(
            br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5","continue":""},"items":null}"#,
        )
        .unwrap();
        assert_eq!(page.continue_token, None);
        assert!(page.items.is_empty());
        assert!(matches!(
            ListPage::parse(b"{\"items\":3}"),
            Err(WireError::Malformed {
                what: "list page",
                ..
            })
        ));
    }

    #[test]
    fn a_line_as_the_api_server_writes_it_is_split_without_a_parse() {
        let object = r#"{"metadata":{"name":"a"},"data":{"x":"}\"}"}}"#;
        for (line, split) in [
            (
                format!(r#"{{"type":"MODIFIED","object":{object}}}  "#),
                true,
            ),
            (
                format!(r#"{{"type":"SOME_NEW9","object":{object} }}"#),
                true,
            ),
            (format!(r#"{{"type":"ADDED","object": {object}}}"#), false),
            (format!(r#"{{"object":{object},"type":"ADDED"}}"#), false),
            (
                format!(r#"{{"type":"AD\u0044ED","object":{object}}}"#),
                false,
            ),
            (
                format!("{{\"type\":\"AD\tDED\",\"object\":{object}}}"),
                false,
            ),
            (format!(r#"{{"type":"","object":{object}}}"#), false),
            (r#"{"type":"ERROR","object":"gone"}"#.to_owned(), false),
        ] {
            let expected = split.then(|| (&line[9..line.find("\",").unwrap()], object.as_bytes()));
            assert_eq!(split_event(line.as_bytes()), expected, "{line}");
        }
        // Split, the object is the reader's to check; parsed whole, its text is the same.
        let line = format!(r#"{{"type":"ADDED","object":{object}}}"#);
        let read = |line: &str| {
            read_event(
                line.as_bytes(),
                |_, text| Some(String::from_utf8_lossy(text).into_owned()),
                |_, raw| raw.map(|r| r.get().to_owned()).unwrap_or_default(),
            )
            .unwrap()
        };
        assert_eq!(read(&line), object);
        assert_eq!(
            read(&format!(r#"{{"type":"ADDED", "object":{object}}}"#)),
            object
        );
        assert!(read_event(br#"["ADDED",{}]"#, |_, _| Some(()), |_, _| ()).is_err());
    }

    #[test]
    fn watch_lines_by_type() {
        let line = br#"{"type":"MODIFIED","object":{"metadata":{"name":"a"}}}"#;
        let WatchLine::Change { kind, object } = WatchLine::parse(line).unwrap() else {
            panic!("a change")
        };
        assert_eq!(kind, ChangeKind::Modified);
        assert_eq!(object.get(), r#"{"metadata":{"name":"a"}}"#);

        let end = br#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}"#;
        assert_eq!(
            WatchLine::parse(end).unwrap(),
            WatchLine::Bookmark {
                resource_version: Some("9".into()),
                initial_events_end: true
            }
        );
        let plain = br#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"10"}}}"#;
        assert_eq!(
            WatchLine::parse(plain).unwrap(),
            WatchLine::Bookmark {
                resource_version: Some("10".into()),
                initial_events_end: false
            }
        );
        let expired =
            br#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}"#;
        assert_eq!(
            WatchLine::parse(expired).unwrap(),
            WatchLine::Error {
                code: 410,
                retry_after: None
            }
        );
        let busy = br#"{"type":"ERROR","object":{"code":429,"details":{"retryAfterSeconds":3}}}"#;
        assert_eq!(
            WatchLine::parse(busy).unwrap(),
            WatchLine::Error {
                code: 429,
                retry_after: Some(Duration::from_secs(3))
            }
        );
        assert_eq!(
            WatchLine::parse(br#"{"type":"NEW","object":{}}"#).unwrap(),
            WatchLine::Other("NEW".into())
        );
        assert!(WatchLine::parse(br#"{"type":"ADDED"}"#).is_err());
        assert!(WatchLine::parse(b"not json").is_err());
    }
}
