//! The `fields` opt-in: events whose object is cut down, on a Rust thread, to the fields the
//! consumer reads, so the JavaScript thread parses (and the heap holds) only those.
//!
//! One pass per level and no value tree: each object on a kept path is split into its keys and
//! the raw text of their values; kept values are copied as text, skipped ones only scanned.
//! Key order is the server's.

use std::borrow::Cow;
use std::fmt;

use serde::Deserializer;
use serde::de::{MapAccess, Visitor};
use serde_json::value::RawValue;

/// What to keep of one key.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Keep {
    /// The whole value.
    Whole,
    /// Only these keys of it (when it is an object).
    Within(Level),
}

/// The keys kept at one level of the object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Level {
    keys: Vec<(String, Keep)>,
}

impl Level {
    fn insert(&mut self, path: &[&str]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        let index = match self.keys.iter().position(|(key, _)| key == first) {
            Some(index) => index,
            None => {
                self.keys
                    .push(((*first).to_owned(), Keep::Within(Level::default())));
                self.keys.len() - 1
            }
        };
        let keep = &mut self.keys[index].1;
        match keep {
            // A parent kept whole already holds this path.
            Keep::Whole => {}
            Keep::Within(_) if rest.is_empty() => *keep = Keep::Whole,
            Keep::Within(level) => level.insert(rest),
        }
    }

    fn get(&self, key: &str) -> Option<&Keep> {
        self.keys
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, keep)| keep)
    }
}

/// A set of dotted field paths (`metadata.name`, `status.phase`) to keep in each object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Projection {
    root: Level,
}

impl Projection {
    /// A projection keeping `fields` and, always, `metadata.resourceVersion` (the contract's
    /// `resourceVersion` is read from it). Paths traverse objects, not arrays.
    pub fn new<S: AsRef<str>>(fields: &[S]) -> Self {
        let mut root = Level::default();
        for field in fields
            .iter()
            .map(AsRef::as_ref)
            .chain(["metadata.resourceVersion"])
        {
            let path: Vec<&str> = field.split('.').filter(|s| !s.is_empty()).collect();
            root.insert(&path);
        }
        Self { root }
    }

    /// The event line with its object projected; `None` if the line is not a JSON object
    /// (the classifier has ruled that out before this is called). An `object` that is not an
    /// object is passed through as it is.
    pub fn apply(&self, line: &[u8]) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(line).ok()?;
        let mut out = String::with_capacity(256);
        out.push('{');
        for (i, (key, value)) in entries(text)?.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_key(&mut out, key);
            if key == "object" && is_object(value) {
                project(value, &self.root, &mut out)?;
            } else {
                out.push_str(value.get());
            }
        }
        out.push('}');
        Some(out.into_bytes())
    }

    /// One object (a list item, or a watch event's `object`) projected; `None` if it is not
    /// a JSON object.
    pub fn apply_object(&self, object: &[u8]) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(object).ok()?;
        let raw: &RawValue = serde_json::from_str(text).ok()?;
        if !is_object(raw) {
            return None;
        }
        let mut out = String::with_capacity(256);
        project(raw, &self.root, &mut out)?;
        Some(out.into_bytes())
    }
}

fn project(object: &RawValue, level: &Level, out: &mut String) -> Option<()> {
    out.push('{');
    let mut first = true;
    for (key, value) in entries(object.get())? {
        let Some(keep) = level.get(&key) else {
            continue;
        };
        let nested = match keep {
            Keep::Within(_) if !is_object(value) => continue,
            Keep::Within(nested) => Some(nested),
            Keep::Whole => None,
        };
        if !std::mem::replace(&mut first, false) {
            out.push(',');
        }
        push_key(out, &key);
        match nested {
            Some(nested) => project(value, nested, out)?,
            None => out.push_str(value.get()),
        }
    }
    out.push('}');
    Some(())
}

fn is_object(value: &RawValue) -> bool {
    value.get().starts_with('{')
}

fn push_key(out: &mut String, key: &str) {
    // A string always serializes.
    out.push_str(&serde_json::to_string(key).unwrap_or_default());
    out.push(':');
}

/// The keys of a JSON object with the raw text of each value, in order.
fn entries(text: &str) -> Option<Vec<(Cow<'_, str>, &RawValue)>> {
    struct EntriesVisitor;

    impl<'de> Visitor<'de> for EntriesVisitor {
        type Value = Vec<(Cow<'de, str>, &'de RawValue)>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object")
        }

        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
            let mut entries = Vec::new();
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                entries.push((key, map.next_value::<&'de RawValue>()?));
            }
            Ok(entries)
        }
    }

    let mut deserializer = serde_json::Deserializer::from_str(text);
    let entries = deserializer.deserialize_map(EntriesVisitor).ok()?;
    deserializer.end().ok()?;
    Some(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project_text(fields: &[&str], event: &str) -> String {
        String::from_utf8(Projection::new(fields).apply(event.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn keeps_only_the_listed_fields_and_the_resource_version_in_server_order() {
        let event = r#"{"type":"MODIFIED","object":{"metadata":{"name":"p","namespace":"ns",
            "resourceVersion":"7","labels":{"a":"b"}},"spec":{"containers":[{"name":"c"}]},
            "status":{"phase":"Running","podIP":"10.0.0.1"}}}"#;
        assert_eq!(
            project_text(&["status.phase", "metadata.name"], event),
            r#"{"type":"MODIFIED","object":{"metadata":{"name":"p","resourceVersion":"7"},"status":{"phase":"Running"}}}"#
        );
    }

    #[test]
    fn a_bare_object_is_projected_the_same_way() {
        let object =
            r#"{"kind":"Pod","metadata":{"name":"p","uid":"u","resourceVersion":"7"},"spec":{}}"#;
        let projected = Projection::new(&["metadata.name"])
            .apply_object(object.as_bytes())
            .unwrap();
        assert_eq!(
            String::from_utf8(projected).unwrap(),
            r#"{"metadata":{"name":"p","resourceVersion":"7"}}"#
        );
        assert!(Projection::new(&["a"]).apply_object(b"[1]").is_none());
    }

    #[test]
    fn whole_values_keep_their_key_order_and_text() {
        let event = r#"{"type":"ADDED","object":{"status":{"phase":"Running","z":1,"a":[2, 3]}}}"#;
        assert_eq!(
            project_text(&["status"], event),
            r#"{"type":"ADDED","object":{"status":{"phase":"Running","z":1,"a":[2, 3]}}}"#
        );
    }

    #[test]
    fn parents_win_over_their_children_and_missing_fields_are_absent() {
        let event = r#"{"type":"ADDED","object":{"metadata":{"name":"p","uid":"u"}}}"#;
        assert_eq!(
            project_text(
                &["metadata.name", "metadata", "status.phase", "..", ""],
                event
            ),
            r#"{"type":"ADDED","object":{"metadata":{"name":"p","uid":"u"}}}"#
        );
    }

    #[test]
    fn paths_through_non_objects_are_absent() {
        let event = r#"{"type":"ADDED","object":{"spec":[1,2],"metadata":"odd"}}"#;
        assert_eq!(
            project_text(&["spec.x", "metadata.name"], event),
            r#"{"type":"ADDED","object":{}}"#
        );
    }

    #[test]
    fn an_object_that_is_not_an_object_passes_through() {
        for object in ["null", "[1,2]", "\"s\""] {
            let event = format!(r#"{{"type":"ADDED","object":{object}}}"#);
            assert_eq!(project_text(&["metadata.name"], &event), event);
        }
    }

    #[test]
    fn escaped_keys_are_matched_unescaped_and_written_escaped() {
        let event = r#"{"type":"ADDED","object":{"meta\u0064ata":{"name":"p\"q"}}}"#;
        assert_eq!(
            project_text(&["metadata.name"], event),
            r#"{"type":"ADDED","object":{"metadata":{"name":"p\"q"}}}"#
        );
    }
}
