//! The informer's cache: each object's JSON text as received, keyed by namespace and name.
//!
//! The text is kept as bytes (`Arc<[u8]>`, shared with the consumers' pending changes), never
//! as a `serde_json::Value` tree: a tree costs several times the text in memory, and readers
//! parse only what they read, in JavaScript, once. Only the few metadata fields the informer
//! itself needs (name, namespace, uid, resourceVersion, labels) are parsed out of the text;
//! everything else is checked for syntax and skipped.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::Deserialize;
use thiserror::Error;

use super::selector::Selector;

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

/// Where an object lives: its namespace (empty for cluster-scoped objects) and name. Keys sort
/// by namespace, then name, as the API server lists them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// The namespace, or `""` for a cluster-scoped object.
    pub namespace: Box<str>,
    /// `metadata.name`.
    pub name: Box<str>,
}

impl ObjectKey {
    /// The key of `name` in `namespace` (`""` for cluster-scoped objects).
    pub fn new(namespace: &str, name: &str) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// Labels sorted by key, for binary search by [`Selector::matches`].
pub type LabelSet = Box<[(Box<str>, Box<str>)]>;

/// One cached object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `metadata.resourceVersion`: opaque, compared only for equality.
    pub rv: Arc<str>,
    /// `metadata.uid`: tells a re-created object from an updated one.
    pub uid: Box<str>,
    /// `metadata.labels`, sorted by key.
    pub labels: LabelSet,
    /// The object's JSON text.
    pub text: Arc<[u8]>,
}

/// An object parsed just enough to be cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// Where it lives.
    pub key: ObjectKey,
    /// What is cached.
    pub entry: Entry,
}

/// `apiVersion` and `kind` of the items of a list, which the items themselves lack.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemType {
    /// The list's `apiVersion`, e.g. `v1` or `apps/v1`.
    pub api_version: Option<String>,
    /// The list's `kind` without its `List` suffix, e.g. `Pod`.
    pub kind: Option<String>,
}

impl ItemType {
    /// The item type of a list whose `apiVersion` and `kind` (e.g. `PodList`) are given.
    pub fn of_list(api_version: Option<&str>, list_kind: Option<&str>) -> Self {
        Self {
            api_version: api_version.map(str::to_owned),
            kind: list_kind.map(|k| k.strip_suffix("List").unwrap_or(k).to_owned()),
        }
    }
}

/// The fields of an object the informer reads; serde skips every other key unbuilt.
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    kind: Option<serde::de::IgnoredAny>,
    #[serde(rename = "apiVersion", default)]
    api_version: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    metadata: Option<Meta>,
}

#[derive(Deserialize)]
struct Meta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(rename = "resourceVersion", default)]
    resource_version: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
}

fn parse_head(text: &[u8]) -> Result<Head, StoreError> {
    // serde would also read a struct from an array; an object is never one.
    if text.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(StoreError::Invalid("expected a JSON object".into()));
    }
    serde_json::from_slice(text).map_err(|e| StoreError::Invalid(e.to_string()))
}

impl Object {
    /// Parses the metadata out of an object's text (as a watch event carries it).
    pub fn parse(text: Arc<[u8]>) -> Result<Self, StoreError> {
        let head = parse_head(&text)?;
        Self::from_head(head, text)
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
        let text: Arc<[u8]> = if prefix.is_empty() {
            item.into()
        } else {
            // The item parsed as an object, so after leading white space comes its `{`.
            let open = item.iter().position(|b| *b == b'{').unwrap_or(0);
            let rest = &item[open + 1..];
            let empty = rest.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'}');
            if empty {
                prefix.pop();
            }
            let mut text = Vec::with_capacity(item.len() + prefix.len());
            text.push(b'{');
            text.extend_from_slice(prefix.as_bytes());
            text.extend_from_slice(rest);
            text.into()
        };
        Self::from_head(head, text)
    }

    fn from_head(head: Head, text: Arc<[u8]>) -> Result<Self, StoreError> {
        let meta = head.metadata.ok_or(StoreError::MissingName)?;
        let name = meta
            .name
            .filter(|n| !n.is_empty())
            .ok_or(StoreError::MissingName)?;
        let labels: Vec<(Box<str>, Box<str>)> = meta
            .labels
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k.into_boxed_str(), v.into_boxed_str()))
            .collect();
        Ok(Self {
            key: ObjectKey {
                namespace: meta.namespace.unwrap_or_default().into_boxed_str(),
                name: name.into_boxed_str(),
            },
            entry: Entry {
                rv: meta.resource_version.unwrap_or_default().into(),
                uid: meta.uid.unwrap_or_default().into_boxed_str(),
                // A BTreeMap iterates in key order, which the binary search needs.
                labels: labels.into_boxed_slice(),
                text,
            },
        })
    }
}

fn quoted(text: &str) -> String {
    // A string always serializes.
    serde_json::to_string(text).unwrap_or_default()
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
    /// The event `type` JavaScript sees.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One change to the cache, for the consumers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// What happened.
    pub kind: ChangeKind,
    /// To which object.
    pub key: ObjectKey,
    /// The object's resourceVersion in `text`.
    pub rv: Arc<str>,
    /// The object as it now is (for DELETED: as last known).
    pub text: Arc<[u8]>,
}

impl Change {
    fn new(kind: ChangeKind, key: ObjectKey, entry: &Entry) -> Self {
        Self {
            kind,
            key,
            rv: entry.rv.clone(),
            text: entry.text.clone(),
        }
    }
}

/// The cached objects.
#[derive(Debug, Default)]
pub struct Store {
    objects: BTreeMap<ObjectKey, Entry>,
    bytes: usize,
}

impl Store {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Objects cached.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Bytes of JSON text cached.
    pub fn cached_bytes(&self) -> usize {
        self.bytes
    }

    /// The object at `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<&Entry> {
        self.objects.get(key)
    }

    /// Every object, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &Entry)> {
        self.objects.iter()
    }

    /// The JSON array text of the objects in `namespace` (every namespace when `None`) that
    /// `selector` selects, in key order.
    pub fn list_json(&self, namespace: Option<&str>, selector: &Selector) -> Vec<u8> {
        let entries: Box<dyn Iterator<Item = (&ObjectKey, &Entry)>> = match namespace {
            // The keys of one namespace are one contiguous range.
            Some(ns) => Box::new(
                self.objects
                    .range(ObjectKey::new(ns, "")..)
                    .take_while(move |(key, _)| &*key.namespace == ns),
            ),
            None => Box::new(self.objects.iter()),
        };
        let mut out = vec![b'['];
        for (_, entry) in entries.filter(|(_, e)| selector.matches(&e.labels[..])) {
            if out.len() > 1 {
                out.push(b',');
            }
            out.extend_from_slice(&entry.text);
        }
        out.push(b']');
        out
    }

    fn insert(&mut self, key: ObjectKey, entry: Entry) -> Option<Entry> {
        self.bytes += entry.text.len();
        let old = self.objects.insert(key, entry);
        if let Some(old) = &old {
            self.bytes -= old.text.len();
        }
        old
    }

    fn remove(&mut self, key: &ObjectKey) -> Option<Entry> {
        let old = self.objects.remove(key)?;
        self.bytes -= old.text.len();
        Some(old)
    }

    /// Applies one watch event and returns the changes consumers see: none for a DELETED of
    /// an unknown object or a repeat of the cached version; DELETED (old) then ADDED (new) when
    /// the key now names another object (other uid); otherwise one change. An ADDED for a
    /// cached object counts as MODIFIED and a MODIFIED for an unknown one as ADDED, so the
    /// consumers' streams stay self-consistent whatever the server sends.
    pub fn apply(&mut self, kind: ChangeKind, object: Object) -> Vec<Change> {
        let Object { key, entry } = object;
        if kind == ChangeKind::Deleted {
            return match self.remove(&key) {
                // The DELETED carries the server's final object, with its resourceVersion.
                Some(_) => vec![Change::new(ChangeKind::Deleted, key, &entry)],
                None => Vec::new(),
            };
        }
        self.upsert(key, entry)
    }

    fn upsert(&mut self, key: ObjectKey, entry: Entry) -> Vec<Change> {
        match self.objects.get(&key) {
            None => {
                let change = Change::new(ChangeKind::Added, key.clone(), &entry);
                self.insert(key, entry);
                vec![change]
            }
            Some(old) if old.uid != entry.uid => {
                let deleted = Change::new(ChangeKind::Deleted, key.clone(), old);
                let added = Change::new(ChangeKind::Added, key.clone(), &entry);
                self.insert(key, entry);
                vec![deleted, added]
            }
            Some(old) if old.rv == entry.rv => Vec::new(),
            Some(_) => {
                let change = Change::new(ChangeKind::Modified, key.clone(), &entry);
                self.insert(key, entry);
                vec![change]
            }
        }
    }

    /// Replaces the whole content with a fresh list and returns the difference, in key order:
    /// ADDED for a new key, MODIFIED for another resourceVersion, DELETED (old) then ADDED
    /// (new) for another uid, DELETED with the last known object for a vanished key, and
    /// nothing for an unchanged object (whose cached text is kept). When a key repeats in
    /// `objects`, the last one counts.
    pub fn relist(&mut self, objects: Vec<Object>) -> Vec<Change> {
        let mut fresh: BTreeMap<ObjectKey, Entry> = BTreeMap::new();
        for Object { key, entry } in objects {
            fresh.insert(key, entry);
        }
        let old = std::mem::take(&mut self.objects);
        self.bytes = 0;
        let mut changes = Vec::new();
        let mut old = old.into_iter().peekable();
        let mut fresh = fresh.into_iter().peekable();
        loop {
            let order = match (old.peek(), fresh.peek()) {
                (None, None) => break,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some((a, _)), Some((b, _))) => a.cmp(b),
            };
            match order {
                std::cmp::Ordering::Less => {
                    let Some((key, entry)) = old.next() else {
                        break;
                    };
                    changes.push(Change::new(ChangeKind::Deleted, key, &entry));
                }
                std::cmp::Ordering::Greater => {
                    let Some((key, entry)) = fresh.next() else {
                        break;
                    };
                    changes.push(Change::new(ChangeKind::Added, key.clone(), &entry));
                    self.insert(key, entry);
                }
                std::cmp::Ordering::Equal => {
                    let (Some((key, before)), Some((_, after))) = (old.next(), fresh.next()) else {
                        break;
                    };
                    if before.uid != after.uid {
                        changes.push(Change::new(ChangeKind::Deleted, key.clone(), &before));
                        changes.push(Change::new(ChangeKind::Added, key.clone(), &after));
                        self.insert(key, after);
                    } else if before.rv != after.rv {
                        changes.push(Change::new(ChangeKind::Modified, key.clone(), &after));
                        self.insert(key, after);
                    } else {
                        self.insert(key, before);
                    }
                }
            }
        }
        changes
    }

    /// Drops every object, returning nothing: for an informer that stopped.
    pub fn clear(&mut self) {
        self.objects.clear();
        self.bytes = 0;
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
