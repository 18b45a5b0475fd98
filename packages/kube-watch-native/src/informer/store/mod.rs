//! The informer's cache: the objects by key (namespace, then name), and the changes that
//! watch events and relists make to it.
//!
//! The set holds each object's one shared allocation ([`Object`]) and nothing else; a lookup
//! by key compares with a key-only [`Object::probe`].

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use index::Indexes;

use super::fields::FieldSelector;
use super::memory::{Footprint, btree_bytes};
use super::selector::Selector;

pub use super::object::{ItemType, Object, ObjectKey, StoreError};
pub use crate::engine::wire::ChangeKind;

/// One change to the cache, for the consumers.
#[derive(Debug, Clone)]
pub struct Change {
    /// What happened.
    pub kind: ChangeKind,
    /// The object as it now is (for DELETED: as last known).
    pub object: Object,
}

impl Change {
    fn new(kind: ChangeKind, object: &Object) -> Self {
        Self {
            kind,
            object: object.clone(),
        }
    }
}

/// The objects of a list as they arrive, for [`Store::relist`]: of objects with one key, the
/// last one counts.
#[derive(Debug, Default)]
pub struct Listed(BTreeSet<Object>);

impl Listed {
    /// Nothing listed yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// One more object of the list.
    pub fn push(&mut self, object: Object) {
        self.0.replace(object);
    }

    /// Objects listed.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Nothing listed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Extend<Object> for Listed {
    fn extend<I: IntoIterator<Item = Object>>(&mut self, objects: I) {
        for object in objects {
            self.push(object);
        }
    }
}

impl FromIterator<Object> for Listed {
    fn from_iter<I: IntoIterator<Item = Object>>(objects: I) -> Self {
        let mut listed = Self::new();
        listed.extend(objects);
        listed
    }
}

/// What the store's objects add up to, kept as they come and go.
#[derive(Debug, Default, Clone, Copy)]
struct Sums {
    /// [`Object::text_len`]: the JSON.
    json: usize,
    /// [`Object::stored_text_bytes`]: the JSON as held, packed or not.
    text: usize,
    /// [`Object::header_bytes`].
    headers: usize,
}

impl Sums {
    fn add(&mut self, object: &Object) {
        self.json += object.text_len();
        self.text += object.stored_text_bytes();
        self.headers += object.header_bytes();
    }

    fn sub(&mut self, object: &Object) {
        self.json -= object.text_len();
        self.text -= object.stored_text_bytes();
        self.headers -= object.header_bytes();
    }
}

/// Which cached objects a read selects: those of `namespace` (every namespace when `None`) that
/// `labels` and `fields` select.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// One namespace, or all.
    pub namespace: Option<&'a str>,
    /// The label selector.
    pub labels: &'a Selector,
    /// The field selector.
    pub fields: &'a FieldSelector,
}

/// A field selector that selects everything, for a [`Query`] by labels alone.
pub static ALL_FIELDS: FieldSelector = FieldSelector::ALL;

impl<'a> Query<'a> {
    /// The objects of `namespace` (all when `None`) that `labels` selects.
    pub fn labels(namespace: Option<&'a str>, labels: &'a Selector) -> Self {
        Self {
            namespace,
            labels,
            fields: &ALL_FIELDS,
        }
    }
}

/// The cached objects.
#[derive(Debug, Default)]
pub struct Store {
    objects: BTreeSet<Object>,
    sums: Sums,
    /// Objects by field values, built by the reads that select by them (`index.rs`).
    indexes: Mutex<Indexes>,
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

    /// Bytes of JSON text cached (unpacked).
    pub fn cached_bytes(&self) -> usize {
        self.sums.json
    }

    /// What the field indexes built over the objects take (an estimate; 0 before a field
    /// selector's first read).
    pub fn field_index_bytes(&self) -> usize {
        self.indexes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .bytes()
    }

    /// What the objects take: their count, text, headers and the set's nodes (see
    /// [`Footprint`]); the sums are kept as objects come and go, so this walks nothing.
    pub fn footprint(&self) -> Footprint {
        Footprint {
            objects: self.objects.len(),
            json_bytes: self.sums.json,
            text_bytes: self.sums.text,
            header_bytes: self.sums.headers,
            index_bytes: btree_bytes(self.objects.len(), std::mem::size_of::<Object>())
                + self.field_index_bytes(),
            ..Footprint::default()
        }
    }

    /// The object at `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<&Object> {
        self.objects
            .get(&Object::probe(key.namespace(), key.name()))
    }

    /// Every object, in key order.
    pub fn iter(&self) -> impl Iterator<Item = &Object> {
        self.objects.iter()
    }

    /// The objects `query` selects, in key order.
    fn selected<'a>(&'a self, query: Query<'a>) -> Box<dyn Iterator<Item = &'a Object> + 'a> {
        let selected = move |o: &&Object| o.selected_by(query.labels) && query.fields.matches(o);
        // An equality of a field selector: the objects its index holds, in key order.
        if let Some((path, value)) = query.fields.equality() {
            let mut indexes = self.indexes.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(keys) = indexes.keys(path, value, self.objects.iter()) {
                let objects = keys
                    .into_iter()
                    .filter(move |key| query.namespace.is_none_or(|ns| key.namespace() == ns))
                    .filter_map(|key| {
                        self.objects
                            .get(&Object::probe(key.namespace(), key.name()))
                    });
                return Box::new(objects.filter(selected));
            }
        }
        let objects: Box<dyn Iterator<Item = &Object>> = match query.namespace {
            // The keys of one namespace are one contiguous range.
            Some(ns) => Box::new(
                self.objects
                    .range(Object::probe(ns, "")..)
                    .take_while(move |o| o.namespace() == ns),
            ),
            None => Box::new(self.objects.iter()),
        };
        Box::new(objects.filter(selected))
    }

    /// The JSON array text of the objects `query` selects, in key order.
    pub fn list_json(&self, query: Query<'_>) -> Vec<u8> {
        let mut out = vec![b'['];
        for object in self.selected(query) {
            if out.len() > 1 {
                out.push(b',');
            }
            object.write_text(&mut out);
        }
        out.push(b']');
        out
    }

    /// A SHA-256 of the texts [`Store::list_json`] would join, taken without joining or
    /// unpacking them: equal for equal answers (of caches that pack alike), different when a
    /// selected object changed, came or went. For a reader that only compares answers.
    pub fn fingerprint(&self, query: Query<'_>) -> [u8; 32] {
        let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
        for object in self.selected(query) {
            object.digest_text(&mut digest);
        }
        let mut out = [0; 32];
        out.copy_from_slice(digest.finish().as_ref());
        out
    }

    fn insert(&mut self, object: Object) -> Option<Object> {
        self.sums.add(&object);
        self.indexes_mut().stored(&object);
        let old = self.objects.replace(object);
        if let Some(old) = &old {
            self.sums.sub(old);
        }
        old
    }

    fn remove(&mut self, key: &Object) -> Option<Object> {
        let old = self.objects.take(key)?;
        self.sums.sub(&old);
        self.indexes_mut().removed(&old.key());
        Some(old)
    }

    /// Applies one watch event and returns the changes consumers see: none for a DELETED of
    /// an unknown object or a repeat of the cached version; DELETED (old) then ADDED (new) when
    /// the key now names another object (other uid); otherwise one change. An ADDED for a
    /// cached object counts as MODIFIED and a MODIFIED for an unknown one as ADDED, so the
    /// consumers' streams stay self-consistent whatever the server sends.
    pub fn apply(&mut self, kind: ChangeKind, object: Object) -> Vec<Change> {
        if kind == ChangeKind::Deleted {
            return match self.remove(&object) {
                // The DELETED carries the server's final object, with its resourceVersion.
                Some(_) => vec![Change::new(ChangeKind::Deleted, &object)],
                None => Vec::new(),
            };
        }
        self.upsert(object)
    }

    fn upsert(&mut self, object: Object) -> Vec<Change> {
        let changes = match self.objects.get(&object) {
            None => vec![Change::new(ChangeKind::Added, &object)],
            Some(old) if old.uid() != object.uid() => vec![
                Change::new(ChangeKind::Deleted, old),
                Change::new(ChangeKind::Added, &object),
            ],
            Some(old) if old.rv() == object.rv() => return Vec::new(),
            Some(_) => vec![Change::new(ChangeKind::Modified, &object)],
        };
        self.insert(object);
        changes
    }

    /// Replaces the whole content with a complete list and tells `changes` the difference,
    /// key by key in key order: ADDED for a new key, MODIFIED for another resourceVersion,
    /// DELETED (old) then ADDED (new), together, for another uid, DELETED with the last known
    /// object for a vanished key, and nothing for an unchanged object (whose cached allocation
    /// is kept). Returns how many changes that was.
    ///
    /// The list's set becomes the cache as it is: no object is copied and no transient buffer
    /// sized by the list is made, which after a large list would leave that much memory free
    /// but held in the allocator's heap.
    pub fn relist(&mut self, listed: Listed, mut changes: impl FnMut(&[Change])) -> usize {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let mut fresh = listed.0;
        let mut count = 0;
        self.indexes_mut().clear();
        let mut tell = |batch: &[Change]| {
            count += batch.len();
            changes(batch);
        };
        let mut unchanged = Vec::new();
        {
            let mut old = std::mem::take(&mut self.objects).into_iter().peekable();
            let mut new = fresh.iter().peekable();
            loop {
                let order = match (old.peek(), new.peek()) {
                    (None, None) => break,
                    (Some(_), None) => Less,
                    (None, Some(_)) => Greater,
                    (Some(before), Some(after)) => before.cmp(after),
                };
                match (
                    order,
                    old.next_if(|_| order != Greater),
                    new.next_if(|_| order != Less),
                ) {
                    (Less, Some(gone), _) => tell(&[Change::new(ChangeKind::Deleted, &gone)]),
                    (Greater, _, Some(added)) => tell(&[Change::new(ChangeKind::Added, added)]),
                    (Equal, Some(before), Some(after)) if before.uid() != after.uid() => tell(&[
                        Change::new(ChangeKind::Deleted, &before),
                        Change::new(ChangeKind::Added, after),
                    ]),
                    (Equal, Some(before), Some(after)) if before.rv() != after.rv() => {
                        tell(&[Change::new(ChangeKind::Modified, after)]);
                    }
                    // After a relist most objects are unchanged: only these are remembered.
                    (Equal, Some(before), Some(_)) => unchanged.push(before),
                    _ => break,
                }
            }
        }
        for before in unchanged {
            fresh.replace(before);
        }
        let mut sums = Sums::default();
        for object in &fresh {
            sums.add(object);
        }
        self.sums = sums;
        // Filled in key order, the set's nodes are about half full; built again from its
        // sorted objects they come out full (16 bytes less per object).
        self.objects = fresh.into_iter().collect();
        count
    }

    /// Drops every object, returning nothing: for an informer that stopped.
    pub fn clear(&mut self) {
        self.indexes_mut().clear();
        self.objects.clear();
        self.sums = Sums::default();
    }

    /// The indexes, to keep as objects come and go (no read holds them then: `&mut self`).
    fn indexes_mut(&mut self) -> &mut Indexes {
        self.indexes
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

mod index;

#[cfg(test)]
mod tests;
