//! Field selectors for reading the cache (`list`, `listText`, `fingerprint`): `path=value`,
//! `path==value` and `path!=value` joined by commas, where a path is dotted into the object's
//! JSON (`involvedObject.name`, `spec.nodeName`, `status.phase`). A value compares as the API
//! server's field sets hold it: a string as itself, a number or boolean as its text, an absent
//! field (or null) as the empty string. `\,` `\=` and `\\` escape in values, as in the API
//! server's grammar.
//!
//! The cache reads only what a requirement names: each object's text is walked key by key
//! with borrowed raw values, and nothing else of it is built.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::value::RawValue;

use super::object::Object;

/// Why a field selector cannot be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FieldSelectorError {
    /// A requirement has no `=`, `==` or `!=`.
    #[error("invalid field selector: '{selector}'; can't understand '{part}'")]
    Syntax {
        /// The whole selector.
        selector: String,
        /// The requirement not understood.
        part: String,
    },
}

/// One `path op value`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    /// The dotted path, split.
    path: Vec<String>,
    /// `=`/`==` (true) or `!=` (false).
    equal: bool,
    value: String,
}

/// A parsed field selector; the empty one selects everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<Requirement>,
}

impl FieldSelector {
    /// Selects everything.
    pub const ALL: Self = Self {
        requirements: Vec::new(),
    };

    /// Parses `text` (empty or blank: everything).
    pub fn parse(text: &str) -> Result<Self, FieldSelectorError> {
        let mut requirements = Vec::new();
        for part in split_unescaped(text, ',') {
            if part.trim().is_empty() && text.trim().is_empty() {
                continue;
            }
            let fail = || FieldSelectorError::Syntax {
                selector: text.to_owned(),
                part: part.clone(),
            };
            let (field, equal, value) = operator(&part).ok_or_else(fail)?;
            let field = field.trim();
            if field.is_empty() || field.split('.').any(str::is_empty) {
                return Err(fail());
            }
            requirements.push(Requirement {
                path: field.split('.').map(str::to_owned).collect(),
                equal,
                value: unescape(value.trim()),
            });
        }
        Ok(Self { requirements })
    }

    /// Selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The path and value of its first equality, which an index can answer.
    pub fn equality(&self) -> Option<(&[String], &str)> {
        self.requirements
            .iter()
            .find(|r| r.equal)
            .map(|r| (r.path.as_slice(), r.value.as_str()))
    }

    /// Whether `object` meets every requirement.
    pub fn matches(&self, object: &Object) -> bool {
        if self.requirements.is_empty() {
            return true;
        }
        let text = object.text();
        self.requirements
            .iter()
            .all(|r| (value_at(&text, &r.path).as_deref().unwrap_or("") == r.value) == r.equal)
    }
}

/// Splits at `sep` where it is not escaped with `\` (escapes kept for [`unescape`]).
fn split_unescaped(text: &str, sep: char) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        let last = parts.last_mut().expect("one part at least");
        if c == '\\' {
            last.push(c);
            if let Some(next) = chars.next() {
                last.push(next);
            }
        } else if c == sep {
            parts.push(String::new());
        } else {
            last.push(c);
        }
    }
    parts
}

/// `(field, equal, value)` of one requirement: the first unescaped `!=`, `==` or `=`.
fn operator(part: &str) -> Option<(&str, bool, &str)> {
    let bytes = part.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'!' if bytes.get(i + 1) == Some(&b'=') => {
                return Some((&part[..i], false, &part[i + 2..]));
            }
            b'=' if bytes.get(i + 1) == Some(&b'=') => {
                return Some((&part[..i], true, &part[i + 2..]));
            }
            b'=' => return Some((&part[..i], true, &part[i + 1..])),
            _ => i += 1,
        }
    }
    None
}

fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The value at `path` in `object` as a field selector compares it (absent: `""`).
pub fn value_of(object: &Object, path: &[String]) -> String {
    value_at(&object.text(), path).unwrap_or_default()
}

/// The text of the value at `path` in the JSON `text`: a string as itself, a number or boolean
/// as written; None when absent, null, an object or an array (or the text is not JSON).
fn value_at(text: &[u8], path: &[String]) -> Option<String> {
    let mut raw: &RawValue = serde_json::from_slice(text).ok()?;
    for key in path {
        let map: BTreeMap<Cow<'_, str>, &RawValue> = serde_json::from_str(raw.get()).ok()?;
        raw = map.get(key.as_str()).copied()?;
    }
    match serde_json::from_str::<serde_json::Value>(raw.get()).ok()? {
        serde_json::Value::String(s) => Some(s),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(text: &str) -> Object {
        Object::parse(text.as_bytes()).unwrap()
    }

    const EVENT: &str = r#"{"metadata":{"name":"web-1.17f","namespace":"shop"},
        "involvedObject":{"kind":"Pod","name":"web-1","namespace":"shop","uid":"u-1"},
        "reason":"BackOff","count":3,"type":"Warning","source":{"component":"kubelet"}}"#;

    #[test]
    fn equality_inequality_and_several_requirements() {
        let event = object(EVENT);
        let yes = |s: &str| assert!(FieldSelector::parse(s).unwrap().matches(&event), "{s}");
        let no = |s: &str| assert!(!FieldSelector::parse(s).unwrap().matches(&event), "{s}");
        yes("involvedObject.name=web-1");
        yes("involvedObject.name==web-1");
        yes("involvedObject.name=web-1,involvedObject.kind=Pod");
        yes("involvedObject.name!=web-2");
        yes("");
        yes("source.component=kubelet");
        yes("count=3");
        no("involvedObject.name=web-2");
        no("involvedObject.name=web-1,involvedObject.kind=Node");
        no("involvedObject.name!=web-1");
        no("involvedObject.name=web");
    }

    #[test]
    fn absent_fields_are_empty_and_objects_are_not_values() {
        let event = object(EVENT);
        assert!(
            FieldSelector::parse("involvedObject.fieldPath=")
                .unwrap()
                .matches(&event)
        );
        assert!(
            !FieldSelector::parse("involvedObject.fieldPath=x")
                .unwrap()
                .matches(&event)
        );
        assert!(
            FieldSelector::parse("involvedObject!=x")
                .unwrap()
                .matches(&event)
        );
        assert!(
            FieldSelector::parse("nothing.deeper.still=")
                .unwrap()
                .matches(&event)
        );
    }

    #[test]
    fn escapes_and_syntax_errors() {
        let odd = object(r#"{"metadata":{"name":"a","namespace":"n"},"reason":"a,b=c\\d"}"#);
        assert!(
            FieldSelector::parse(r"reason=a\,b\=c\\d")
                .unwrap()
                .matches(&odd)
        );
        for bad in ["involvedObject.name", "a=b,c", "=x", "a..b=c"] {
            assert!(
                matches!(
                    FieldSelector::parse(bad),
                    Err(FieldSelectorError::Syntax { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn packed_objects_are_read_unpacked() {
        let long = format!(
            r#"{{"metadata":{{"name":"e","namespace":"n"}},"involvedObject":{{"name":"web-1"}},"message":"{}"}}"#,
            "x".repeat(4096)
        );
        let packed = object(&long).pack_if(true);
        assert!(packed.stored_text_bytes() < long.len(), "packed");
        assert!(
            FieldSelector::parse("involvedObject.name=web-1")
                .unwrap()
                .matches(&packed)
        );
    }
}
