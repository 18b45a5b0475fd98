//! One cached object in one allocation: a small header, then its JSON text as received.
//!
//! The text is kept as bytes, never as a `serde_json::Value` tree: a tree costs several times
//! the text in memory, and readers parse only what they read, in JavaScript, once. Only the few
//! metadata fields the informer itself needs (name, namespace, uid, resourceVersion, labels)
//! are read out of the text; everything else is checked for syntax and skipped.
//!
//! Nothing is copied out of the text: the 40-byte header says where the namespace, name, uid,
//! resourceVersion and labels lie in it (the rare string written with escapes is copied,
//! unescaped, after the text). With `Arc`'s two counters and the store's pointer that is about
//! 80 bytes per object beside the text, in the one allocation that the store, the consumers'
//! pending changes and readers share. Measured before this layout, separately allocated keys,
//! labels and strings cost ~700 bytes per object, twice the text of a pod projected with `fields`.
//!
//! An informer that compresses (the default) holds the text as an LZ4 block instead
//! ([`Object::packed`]), with those few strings copied after it so that they are read without
//! unpacking: about 100 bytes more per object, for about half the text.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use thiserror::Error;

mod head;
mod key;
use head::{Head, LabelMap, Str, parse_head};
pub use key::{ItemType, ObjectKey};

/// An object that cannot be cached.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StoreError {
    /// The text is not a JSON object (or its metadata has the wrong types).
    #[error("not a Kubernetes object: {0}")]
    Invalid(String),
    /// The object has no `metadata.name`, so it has no key.
    #[error("a Kubernetes object without metadata.name")]
    MissingName,
}

/// The header: the text's length, then the offset (`u32`) and length (`u16`) of the
/// namespace, the name, the uid and the resourceVersion, then the labels' offset and length
/// (`u32` each), then the length of the text's LZ4 block (`u32`, 0 when the text is kept as
/// it is), all little-endian. Offsets count from the end of the header.
const HEADER: usize = 4 + 4 * 6 + 8 + 4;
/// Where each part's offset and length are in the header.
const NAMESPACE: usize = 4;
const NAME: usize = 10;
const UID: usize = 16;
const RV: usize = 22;
const LABELS: usize = 28;
const PACKED: usize = 36;

/// A part of an object's bytes after the header: `(offset, length)`.
type Span = (usize, usize);

/// One object as cached. Cloning shares it. Equality, order and hashing are the key's
/// (namespace, then name), so that a set of objects is a map by key.
#[derive(Clone)]
pub struct Object(Arc<[u8]>);

impl Object {
    /// Parses the metadata out of an object's text (as a watch event carries it).
    pub fn parse(text: &[u8]) -> Result<Self, StoreError> {
        let head = parse_head(text)?;
        Self::build(head, text, &[])
    }

    /// Parses an item of a list page, filling in the `kind` and `apiVersion` the API server
    /// leaves out of list items, in the place and order a watch event has them, so that an
    /// object is cached as the same text whichever way it arrived.
    pub fn from_list_item(item: &[u8], item_type: &ItemType) -> Result<Self, StoreError> {
        let head = parse_head(item)?;
        let mut prefix = String::new();
        if head.kind.is_none()
            && let Some(kind) = &item_type.kind
        {
            prefix.push_str(r#""kind":"#);
            prefix.push_str(&quoted(kind));
            prefix.push(',');
        }
        if head.api_version.is_none()
            && let Some(api_version) = &item_type.api_version
        {
            prefix.push_str(r#""apiVersion":"#);
            prefix.push_str(&quoted(api_version));
            prefix.push(',');
        }
        if prefix.is_empty() {
            return Self::build(head, item, &[]);
        }
        // The item parsed as an object with a name, so after leading white space comes its
        // `{` and the object is not empty: the prefix goes right after the brace.
        let open = item.iter().position(|b| *b == b'{').unwrap_or(0);
        let mut prefix = prefix.into_bytes();
        prefix.insert(0, b'{');
        Self::build(head, &item[open + 1..], &prefix)
    }

    /// An object with no text, only a key: what a lookup compares with.
    pub fn probe(namespace: &str, name: &str) -> Self {
        let mut bytes = vec![0; HEADER];
        let tail = |s: &str, bytes: &mut Vec<u8>| {
            let at = bytes.len() - HEADER;
            bytes.extend_from_slice(s.as_bytes());
            (at, s.len())
        };
        let namespace = tail(namespace, &mut bytes);
        let name = tail(name, &mut bytes);
        write_header(&mut bytes, 0, [namespace, name, (0, 0), (0, 0)], (0, 0));
        Self(bytes.into())
    }

    /// The object whose text is `prefix` then `rest`, where `rest` is the part of the text
    /// `head` was parsed from that holds its metadata.
    fn build(head: Head<'_>, rest: &[u8], prefix: &[u8]) -> Result<Self, StoreError> {
        let meta = head.metadata.ok_or(StoreError::MissingName)?;
        let name = meta
            .name
            .filter(|n| !n.0.is_empty())
            .ok_or(StoreError::MissingName)?;
        let namespace = meta.namespace.as_ref().map_or("", |n| &n.0);
        if name.0.contains('\0') || namespace.contains('\0') {
            return Err(StoreError::Invalid(
                "metadata.name or metadata.namespace contains a NUL character".into(),
            ));
        }
        if let Some(labels) = meta.labels {
            serde_json::from_str::<Option<LabelMap<'_>>>(labels.get())
                .map_err(|e| StoreError::Invalid(format!("metadata.labels: {e}")))?;
        }
        let strings = [
            Some(&name),
            meta.namespace.as_ref(),
            meta.uid.as_ref(),
            meta.resource_version.as_ref(),
        ];
        if let Some(long) = strings
            .iter()
            .flatten()
            .find(|s| s.0.len() > usize::from(u16::MAX))
        {
            return Err(StoreError::Invalid(format!(
                "a metadata string of {} bytes (at most 65535 are cached)",
                long.0.len()
            )));
        }
        let text_len = prefix.len() + rest.len();
        let origin = rest.as_ptr() as usize;
        // Where a string read from `rest` lies in the new text, or `None` when serde had to
        // unescape it (then it is copied after the text).
        let in_text = |s: &str| -> Option<Span> {
            let at = (s.as_ptr() as usize).checked_sub(origin)?;
            (at + s.len() <= rest.len()).then_some((prefix.len() + at, s.len()))
        };
        // Built in this thread's scratch buffer, then copied once into the shared allocation.
        let mut bytes = Scratch::take();
        bytes.resize(HEADER, 0);
        bytes.extend_from_slice(prefix);
        bytes.extend_from_slice(rest);
        let place = |value: Option<&Str<'_>>, bytes: &mut Vec<u8>| -> Span {
            match value {
                None => (0, 0),
                Some(Str(s)) => in_text(s).unwrap_or_else(|| {
                    let at = bytes.len() - HEADER;
                    bytes.extend_from_slice(s.as_bytes());
                    (at, s.len())
                }),
            }
        };
        let parts = [
            place(meta.namespace.as_ref(), &mut bytes),
            place(Some(&name), &mut bytes),
            place(meta.uid.as_ref(), &mut bytes),
            place(meta.resource_version.as_ref(), &mut bytes),
        ];
        let labels = meta
            .labels
            .filter(|raw| raw.get() != "null")
            .and_then(|raw| in_text(raw.get()))
            .unwrap_or((0, 0));
        write_header(&mut bytes, text_len, parts, labels);
        Ok(Self(Scratch::keep(bytes)))
    }

    fn word(&self, at: usize) -> usize {
        let mut word = [0; 4];
        word.copy_from_slice(&self.0[at..at + 4]);
        u32::from_le_bytes(word) as usize
    }

    fn half(&self, at: usize) -> usize {
        usize::from(u16::from_le_bytes([self.0[at], self.0[at + 1]]))
    }

    fn part(&self, at: usize, len: usize) -> &[u8] {
        &self.0[HEADER + at..HEADER + at + len]
    }

    /// The bytes of a string part (see [`HEADER`]).
    fn string_bytes(&self, field: usize) -> &[u8] {
        self.part(self.word(field), self.half(field + 4))
    }

    fn string(&self, field: usize) -> &str {
        // Every string part was a `str` when it was stored.
        std::str::from_utf8(self.string_bytes(field)).unwrap_or_default()
    }

    /// The object's JSON text: borrowed, or unpacked into a buffer of its own when the cache
    /// packed it (see [`Object::packed`]).
    pub fn text(&self) -> Cow<'_, [u8]> {
        if self.word(PACKED) == 0 {
            return Cow::Borrowed(self.part(0, self.text_len()));
        }
        let mut text = Vec::new();
        self.write_text(&mut text);
        Cow::Owned(text)
    }

    /// Appends the object's JSON text to `out`, unpacking it when it is packed.
    pub fn write_text(&self, out: &mut Vec<u8>) {
        let (len, packed) = (self.text_len(), self.word(PACKED));
        if packed == 0 {
            out.extend_from_slice(self.part(0, len));
            return;
        }
        let start = out.len();
        out.resize(start + len, 0);
        match lz4_flex::block::decompress_into(self.part(0, packed), &mut out[start..]) {
            Ok(written) if written == len => {}
            // Not for a block that `packed` made of this length (the safe decoder checks every
            // offset and stops at the buffer's end rather than read or write past it); were it
            // ever, readers get the object's metadata rather than broken JSON.
            _ => {
                out.truncate(start);
                out.extend_from_slice(self.metadata_stub().as_bytes());
            }
        }
    }

    /// `{"metadata":{…}}` of the name, namespace, uid and resourceVersion the header holds.
    fn metadata_stub(&self) -> String {
        let fields = [
            ("name", self.name()),
            ("namespace", self.namespace()),
            ("uid", self.uid()),
            ("resourceVersion", self.rv()),
        ];
        let inner: Vec<String> = fields
            .iter()
            .filter(|(_, value)| !value.is_empty())
            .map(|(key, value)| format!("\"{key}\":{}", quoted(value)))
            .collect();
        format!("{{\"metadata\":{{{}}}}}", inner.join(","))
    }

    /// Feeds what tells this object's text from another to `digest`, without unpacking it:
    /// its length, whether it is packed, and its stored bytes (an LZ4 block is made alike of
    /// equal texts, and `packed` decides alike for them).
    pub fn digest_text(&self, digest: &mut ring::digest::Context) {
        digest.update(&(self.text_len() as u64).to_le_bytes());
        digest.update(&(self.word(PACKED) as u64).to_le_bytes());
        digest.update(self.part(0, self.stored_text_bytes()));
    }

    /// Bytes of the JSON text.
    pub fn text_len(&self) -> usize {
        self.word(0)
    }

    /// Bytes the text takes in the allocation: its LZ4 block's when packed.
    pub fn stored_text_bytes(&self) -> usize {
        match self.word(PACKED) {
            0 => self.text_len(),
            packed => packed,
        }
    }

    /// The object as a cache that packs (`pack`) or does not holds it: see [`Object::packed`].
    /// Packed where it is made, before anything else holds it, so that the unpacked copy lives
    /// only for the moment and its memory is reused for the next (packing objects that had
    /// been held a while would leave their freed texts scattered among the packed ones, in
    /// the allocator's heap, held free beside the packed cache).
    pub fn pack_if(self, pack: bool) -> Self {
        if pack {
            self.packed().unwrap_or(self)
        } else {
            self
        }
    }

    /// The same object with its text packed as an LZ4 block (`lz4_flex`, safe Rust, about
    /// 0.4–0.5 GB/s to pack and 1.4–2 GB/s to unpack on one core here) and its metadata strings
    /// copied after the block, for the cache to hold; `None` when it is packed already or the
    /// block would not save an eighth of the text. Applied objects' JSON (managed fields, the
    /// last-applied annotation repeating the spec, keys over and over) packs to about half.
    pub fn packed(&self) -> Option<Self> {
        if self.word(PACKED) != 0 {
            return None;
        }
        let text = self.part(0, self.text_len());
        let strings = [NAMESPACE, NAME, UID, RV].map(|field| self.string_bytes(field));
        let labels = self.part(self.word(LABELS), self.word(LABELS + 4));
        let copied = strings.iter().map(|s| s.len()).sum::<usize>() + labels.len();
        let mut bytes = Scratch::take();
        bytes.resize(
            HEADER + lz4_flex::block::get_maximum_output_size(text.len()),
            0,
        );
        // The buffer is the maximum output size, which `compress_into` never exceeds.
        let packed = lz4_flex::block::compress_into(text, &mut bytes[HEADER..]).ok();
        let Some(packed) = packed.filter(|packed| packed + copied + text.len() / 8 < text.len())
        else {
            Scratch::give_back(bytes);
            return None;
        };
        bytes.truncate(HEADER + packed);
        let mut copy = |part: &[u8]| -> Span {
            let at = bytes.len() - HEADER;
            bytes.extend_from_slice(part);
            (at, part.len())
        };
        let parts = strings.map(&mut copy);
        let labels = if labels.is_empty() {
            (0, 0)
        } else {
            copy(labels)
        };
        write_header(&mut bytes, text.len(), parts, labels);
        bytes[PACKED..PACKED + 4].copy_from_slice(&(packed as u32).to_le_bytes());
        Some(Self(Scratch::keep(bytes)))
    }

    /// The key, owned.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(self.namespace(), self.name())
    }

    /// `metadata.namespace`, or `""` for a cluster-scoped object.
    pub fn namespace(&self) -> &str {
        self.string(NAMESPACE)
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.string(NAME)
    }

    /// `metadata.uid`: tells a re-created object from an updated one.
    pub fn uid(&self) -> &str {
        self.string(UID)
    }

    /// `metadata.resourceVersion`: opaque, compared only for equality.
    pub fn rv(&self) -> &str {
        self.string(RV)
    }

    /// Whether `selector`'s labels match: `metadata.labels` is read from the text here.
    pub fn selected_by(&self, selector: &super::selector::Selector) -> bool {
        if selector.is_empty() {
            return true;
        }
        let labels = self.part(self.word(LABELS), self.word(LABELS + 4));
        if labels.is_empty() {
            return selector.matches(&LabelMap(BTreeMap::new()));
        }
        // Checked when the object was parsed.
        match serde_json::from_slice::<LabelMap<'_>>(labels) {
            Ok(map) => selector.matches(&map),
            Err(_) => false,
        }
    }

    /// Bytes of its one allocation beside the text: `Arc`'s counters, the header, the unescaped
    /// strings after the text, padding (see [`super::memory::Footprint::header_bytes`]).
    pub fn header_bytes(&self) -> usize {
        super::memory::arc_slice_bytes(self.0.len()) - self.stored_text_bytes()
    }

    /// The same object: one allocation shared.
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Writes the header (see [`HEADER`]): `parts` are the namespace, name, uid and
/// resourceVersion, whose lengths were checked to fit in a `u16`.
fn write_header(bytes: &mut [u8], text_len: usize, parts: [Span; 4], labels: Span) {
    // An object's text is far below 4 GiB (etcd's limit is a few MiB).
    let word = |n: usize| (n as u32).to_le_bytes();
    bytes[..4].copy_from_slice(&word(text_len));
    for (i, (at, len)) in parts.into_iter().enumerate() {
        let field = NAMESPACE + i * 6;
        bytes[field..field + 4].copy_from_slice(&word(at));
        bytes[field + 4..field + 6].copy_from_slice(&(len as u16).to_le_bytes());
    }
    bytes[LABELS..LABELS + 4].copy_from_slice(&word(labels.0));
    bytes[LABELS + 4..LABELS + 8].copy_from_slice(&word(labels.1));
}

/// The buffer each thread builds an object's bytes in before copying them into the object's one
/// allocation. Building each object in a `Vec` of its own left one freed buffer of about the
/// object's size beside every object cached, in holes the allocator could not give back: on
/// 500 000 small objects that do not pack, about 50 bytes per object held free
/// (`bench/README.md`, "Bytes per object").
struct Scratch;

thread_local! {
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

impl Scratch {
    /// A buffer larger than this is not kept for the next object (a rare multi-MiB object must
    /// not stay allocated on every thread that ever built one).
    const KEEP_BYTES: usize = 64 * 1024;

    /// This thread's buffer, empty (a fresh one when it is out already: nothing nests, but
    /// nothing breaks if it ever did).
    fn take() -> Vec<u8> {
        let mut bytes = SCRATCH.with(std::cell::Cell::take);
        bytes.clear();
        bytes
    }

    /// The buffer back, for the next object.
    fn give_back(bytes: Vec<u8>) {
        if bytes.capacity() <= Self::KEEP_BYTES {
            SCRATCH.with(|scratch| scratch.set(bytes));
        }
    }

    /// Copies `bytes` into an allocation of their exact size, and gives the buffer back.
    fn keep(bytes: Vec<u8>) -> Arc<[u8]> {
        let kept = Arc::from(bytes.as_slice());
        Self::give_back(bytes);
        kept
    }
}

fn quoted(text: &str) -> String {
    // A string always serializes.
    serde_json::to_string(text).unwrap_or_default()
}

// Equality and order compare the key's bytes, as `str`'s do, without validating them as
// UTF-8 again on every comparison (a list's objects are sorted into a set of them).
impl PartialEq for Object {
    fn eq(&self, other: &Self) -> bool {
        self.string_bytes(NAME) == other.string_bytes(NAME)
            && self.string_bytes(NAMESPACE) == other.string_bytes(NAMESPACE)
    }
}

impl Eq for Object {}

impl std::hash::Hash for Object {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.string_bytes(NAMESPACE).hash(state);
        self.string_bytes(NAME).hash(state);
    }
}

impl PartialOrd for Object {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Object {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.string_bytes(NAMESPACE), self.string_bytes(NAME))
            .cmp(&(other.string_bytes(NAMESPACE), other.string_bytes(NAME)))
    }
}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Object")
            .field("key", &self.key().to_string())
            .field("uid", &self.uid())
            .field("rv", &self.rv())
            .field("text", &String::from_utf8_lossy(&self.text()))
            .finish()
    }
}

#[cfg(test)]
mod tests;
