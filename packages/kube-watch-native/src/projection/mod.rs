//! The `fields` and `strip` opt-ins: events whose object is cut down, on a Rust thread, to the
//! fields the consumer reads (`fields`), or rid of the ones nobody reads (`strip`:
//! `metadata.managedFields`, the last-applied annotation), so the JavaScript thread parses
//! (and the heap and the informer's cache hold) only the rest.
//!
//! `metadataOnly` is shaped here too: the request asks for `PartialObjectMetadata` (see
//! [`Projection::accept`]), and every object is made one (`kind`, `apiVersion`, `metadata`),
//! so a server that refuses (406) or ignores the request is met with full objects cut down here.
//!
//! One pass per level and no value tree: each object on a listed path is split into its keys
//! and the raw text of their values; values kept whole are copied as text, others only
//! scanned. Objects off every listed path are never split. Key order is the server's.
//!
//! Which projection a watch's or an informer's options ask for, and the `strip` paths'
//! checks, are in [`options`].

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserializer;
use serde::de::{MapAccess, Visitor};
use serde_json::value::RawValue;

pub mod options;
mod scan;

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

/// The `Accept` of a metadata-only list, as client-go's metadata client sends it.
pub const PARTIAL_LIST_ACCEPT: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
/// The `Accept` of a metadata-only watch.
pub const PARTIAL_WATCH_ACCEPT: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/// What a metadata-only projection has learnt of its server.
#[derive(Debug, Default)]
struct Negotiation {
    /// The server answered 406: ask for plain JSON from now on.
    refused: AtomicBool,
    /// A full object came (the server ignores `as=`) and nobody was told yet.
    notice: AtomicBool,
    /// Told already (or the refusal said it): no notice any more.
    told: AtomicBool,
}

/// What a projection does with the paths it lists.
#[derive(Debug, Clone)]
enum Mode {
    /// Keep them, and nothing else (`fields`).
    Keep,
    /// Remove them, and keep everything else (`strip`).
    Strip,
    /// Make each object a `PartialObjectMetadata`, its metadata without the paths under
    /// `metadata` (`metadataOnly`, with `strip` or not).
    Metadata(Arc<Negotiation>),
}

impl PartialEq for Mode {
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

impl Eq for Mode {}

/// A set of field paths to keep in each object (`metadata.name`, `status.phase`), or to remove
/// from it (`metadata.managedFields`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Projection {
    root: Level,
    mode: Mode,
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
        Self {
            root,
            mode: Mode::Keep,
        }
    }

    /// A projection removing `paths` (each the keys from the object down, see
    /// [`crate::field_path`]) and keeping everything else; a path that is not there removes
    /// nothing, a parent removes its children. Paths traverse objects, not arrays.
    pub fn strip<S: AsRef<str>>(paths: &[Vec<S>]) -> Self {
        let mut root = Level::default();
        for path in paths {
            let keys: Vec<&str> = path.iter().map(AsRef::as_ref).collect();
            if !keys.is_empty() {
                root.insert(&keys);
            }
        }
        Self {
            root,
            mode: Mode::Strip,
        }
    }

    /// A projection making every object a `PartialObjectMetadata` whose metadata lacks
    /// `strip`'s paths under `metadata` (others are not there to strip).
    pub fn metadata_only<S: AsRef<str>>(strip: &[Vec<S>]) -> Self {
        Self {
            root: Self::strip(strip).root,
            mode: Mode::Metadata(Arc::default()),
        }
    }

    /// The objects keep their other fields, so a list item still gets the `kind` and
    /// `apiVersion` of its list, as it would unprojected (a `fields` projection keeps exactly
    /// the fields listed).
    pub fn keeps_the_rest(&self) -> bool {
        !matches!(self.mode, Mode::Keep)
    }

    /// The `Accept` header a list (`watch: false`) or a watch sends: `PartialObjectMetadata`
    /// for a metadata-only projection until the server refused it, else `None` (plain JSON).
    pub fn accept(&self, watch: bool) -> Option<String> {
        match &self.mode {
            Mode::Metadata(n) if !n.refused.load(Ordering::Relaxed) => Some(
                if watch {
                    PARTIAL_WATCH_ACCEPT
                } else {
                    PARTIAL_LIST_ACCEPT
                }
                .to_owned(),
            ),
            _ => None,
        }
    }

    /// The server answered 406 to [`Projection::accept`]'s header: the next requests ask for
    /// plain JSON, whose objects are cut down here. The warning to give, the first time.
    pub fn refused(&self) -> Option<String> {
        let Mode::Metadata(n) = &self.mode else {
            return None;
        };
        n.told.store(true, Ordering::Relaxed);
        (!n.refused.swap(true, Ordering::Relaxed)).then(|| {
            "the server answered 406 Not Acceptable to a metadata-only (PartialObjectMetadata) \
             request; asking for full objects instead and keeping only their metadata here"
                .to_owned()
        })
    }

    /// The warning to give, once, when a metadata-only request got full objects back.
    pub fn take_notice(&self) -> Option<String> {
        let Mode::Metadata(n) = &self.mode else {
            return None;
        };
        (n.notice.swap(false, Ordering::Relaxed) && !n.told.swap(true, Ordering::Relaxed)).then(
            || {
                "the server sent full objects to a metadata-only (PartialObjectMetadata) request \
                 (it ignores the Accept header's as=); keeping only their metadata here"
                    .to_owned()
            },
        )
    }

    fn object(&self, object: &RawValue, out: &mut String) -> Option<()> {
        match &self.mode {
            Mode::Keep => project(object, &self.root, out),
            Mode::Strip => strip(object, &self.root, out),
            Mode::Metadata(n) => partial(object, &self.root, n, out),
        }
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
                self.object(value, &mut out)?;
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
        self.apply_raw(raw)
    }

    /// [`Projection::apply_object`] for an object already parsed (a list item, a watch event's
    /// `object`): its text is not checked again, since checking and validating the UTF-8 of
    /// every object twice is a large part of an informer's sync with `strip`.
    pub fn apply_raw(&self, raw: &RawValue) -> Option<Vec<u8>> {
        if !is_object(raw) {
            return None;
        }
        if let Mode::Strip = self.mode {
            return strip_bytes(raw, &self.root);
        }
        let mut out = String::with_capacity(256);
        self.object(raw, &mut out)?;
        Some(out.into_bytes())
    }
}

/// `object` as a `PartialObjectMetadata`: its metadata (without the paths under `metadata` in
/// `level`), and nothing else; an object that had more tells `negotiation`.
fn partial(
    object: &RawValue,
    level: &Level,
    negotiation: &Negotiation,
    out: &mut String,
) -> Option<()> {
    out.push_str(r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":"#);
    let mut metadata = None;
    for (key, value) in entries(object.get())? {
        match key.as_ref() {
            "metadata" => metadata = Some(value),
            "kind" | "apiVersion" => {}
            _ => negotiation.notice.store(true, Ordering::Relaxed),
        }
    }
    match (metadata, level.get("metadata")) {
        (Some(m), Some(Keep::Within(nested))) if is_object(m) => strip(m, nested, out)?,
        (Some(m), _) => out.push_str(m.get()),
        (None, _) => out.push_str("{}"),
    }
    out.push('}');
    Some(())
}

/// `object` without the paths of `level`, in one pass over its text: an entry on no path is
/// copied as its bytes, one that a path ends at is left out, and one a path goes through is
/// stripped in turn (when it is an object; otherwise the path is not there and it is copied).
/// The text was parsed as JSON already (a list item, a watch event's object); anything
/// unexpected gives `None`, and then the object passes through as it was.
fn strip(object: &RawValue, level: &Level, out: &mut String) -> Option<()> {
    let bytes = strip_bytes(object, level)?;
    // Only whole entries of valid UTF-8 text were copied.
    out.push_str(std::str::from_utf8(&bytes).ok()?);
    Some(())
}

/// [`strip`] as the bytes of its text, which are whole entries of `object`'s (valid UTF-8)
/// text and the punctuation between them.
fn strip_bytes(object: &RawValue, level: &Level) -> Option<Vec<u8>> {
    let text = object.get().as_bytes();
    let mut bytes = Vec::with_capacity(text.len());
    let start = skip_ws(text, 0);
    let end = strip_at(text, start, level, &mut bytes)?;
    if skip_ws(text, end) != text.len() {
        return None;
    }
    Some(bytes)
}

/// Strips the object starting at `text[at]` (a `{`) into `out`; returns where it ends.
fn strip_at(text: &[u8], at: usize, level: &Level, out: &mut Vec<u8>) -> Option<usize> {
    if text.get(at) != Some(&b'{') {
        return None;
    }
    out.push(b'{');
    let mut first = true;
    let mut i = skip_ws(text, at + 1);
    if text.get(i) == Some(&b'}') {
        out.push(b'}');
        return Some(i + 1);
    }
    loop {
        let key_start = i;
        let key_end = skip_string(text, key_start)?;
        let colon = skip_ws(text, key_end);
        if text.get(colon) != Some(&b':') {
            return None;
        }
        let value_start = skip_ws(text, colon + 1);
        let value_end = skip_value(text, value_start)?;
        let raw_key = &text[key_start + 1..key_end - 1];
        let key: Cow<'_, str> = if raw_key.contains(&b'\\') {
            Cow::Owned(serde_json::from_slice(&text[key_start..key_end]).ok()?)
        } else {
            Cow::Borrowed(std::str::from_utf8(raw_key).ok()?)
        };
        match level.get(&key) {
            Some(Keep::Whole) => {}
            found => {
                if !std::mem::replace(&mut first, false) {
                    out.push(b',');
                }
                match found {
                    Some(Keep::Within(nested)) if text[value_start] == b'{' => {
                        out.extend_from_slice(&text[key_start..key_end]);
                        out.push(b':');
                        strip_at(text, value_start, nested, out)?;
                    }
                    _ => out.extend_from_slice(&text[key_start..value_end]),
                }
            }
        }
        i = skip_ws(text, value_end);
        match text.get(i) {
            Some(b',') => i = skip_ws(text, i + 1),
            Some(b'}') => {
                out.push(b'}');
                return Some(i + 1);
            }
            _ => return None,
        }
    }
}

fn skip_ws(text: &[u8], mut i: usize) -> usize {
    while matches!(text.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Where the string starting at `text[at]` (a `"`) ends, after its closing quote.
fn skip_string(text: &[u8], at: usize) -> Option<usize> {
    if text.get(at) != Some(&b'"') {
        return None;
    }
    // Most strings (keys, metadata values) end within a few bytes: byte by byte first, then
    // a block at a time (see `scan`).
    let mut i = at + 1;
    let short_end = (i + SHORT_RUN).min(text.len());
    while i < short_end {
        match text[i] {
            b'"' => return Some(i + 1),
            // A backslash and the character it escapes.
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    if i >= text.len() {
        return None;
    }
    scan::string_end(text, i)
}

/// How many bytes of a string [`skip_string`] reads one by one before it scans by blocks.
const SHORT_RUN: usize = 16;

/// Where the value starting at `text[at]` ends.
fn skip_value(text: &[u8], at: usize) -> Option<usize> {
    match text.get(at)? {
        b'"' => skip_string(text, at),
        b'{' | b'[' => scan::nested_end(text, at),
        _ => {
            let len = text[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(text.len() - at);
            (len > 0).then_some(at + len)
        }
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
mod tests;
