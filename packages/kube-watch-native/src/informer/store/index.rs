//! The store's objects by the value at a field path, for reads that select by it (an equality
//! of a field selector: `involvedObject.name=web-1`). An index is built at the first such read
//! of its path and kept as objects come and go, so that a read of one involved object's events
//! looks at those events only, not at its namespace's; a relist drops them all (the next read
//! builds them again). At most [`MAX_INDEXES`] paths per store.

use std::collections::{BTreeSet, HashMap};

use super::{Object, ObjectKey};
use crate::informer::fields::value_of;

/// Paths indexed per store at most; a read by another path looks at every object.
pub const MAX_INDEXES: usize = 4;
/// What an entry takes besides its strings, in both maps and the set: their slots, the boxed
/// key's and the value's headers (an estimate; the maps' spare capacity aside).
const ENTRY_OVERHEAD: usize = 120;

/// One path's index.
#[derive(Debug)]
struct FieldIndex {
    path: Vec<String>,
    /// Keys by the value at the path (absent: `""`), in key order.
    by_value: HashMap<String, BTreeSet<ObjectKey>>,
    /// The value each key is indexed under.
    of_key: HashMap<ObjectKey, String>,
    /// What its entries take (see [`ENTRY_OVERHEAD`]).
    bytes: usize,
}

/// What one entry of `key` under `value` takes: the key twice, the value twice, the overhead.
fn entry_bytes(key: &ObjectKey, value: &str) -> usize {
    2 * key.len() + 2 * value.len() + ENTRY_OVERHEAD
}

impl FieldIndex {
    fn add(&mut self, object: &Object) {
        let (key, value) = (object.key(), value_of(object, &self.path));
        self.remove(&key);
        self.bytes += entry_bytes(&key, &value);
        self.by_value
            .entry(value.clone())
            .or_default()
            .insert(key.clone());
        self.of_key.insert(key, value);
    }

    fn remove(&mut self, key: &ObjectKey) {
        let Some(value) = self.of_key.remove(key) else {
            return;
        };
        self.bytes -= entry_bytes(key, &value);
        if let Some(keys) = self.by_value.get_mut(&value) {
            keys.remove(key);
            if keys.is_empty() {
                self.by_value.remove(&value);
            }
        }
    }
}

/// The indexes built so far.
#[derive(Debug, Default)]
pub struct Indexes {
    built: Vec<FieldIndex>,
}

impl Indexes {
    /// `object` was stored (replacing any of its key).
    pub fn stored(&mut self, object: &Object) {
        for index in &mut self.built {
            index.add(object);
        }
    }

    /// The object of `key` was removed.
    pub fn removed(&mut self, key: &ObjectKey) {
        for index in &mut self.built {
            index.remove(key);
        }
    }

    /// What the indexes take (an estimate: see [`ENTRY_OVERHEAD`]).
    pub fn bytes(&self) -> usize {
        self.built.iter().map(|index| index.bytes).sum()
    }

    /// Every index dropped (a relist replaced the objects).
    pub fn clear(&mut self) {
        self.built.clear();
    }

    /// The keys, in key order, of the objects whose value at `path` is `value`: from its index,
    /// built from `objects` when there is none yet and there is room; `None` when there is no
    /// room for another.
    pub fn keys<'a>(
        &mut self,
        path: &[String],
        value: &str,
        objects: impl Iterator<Item = &'a Object>,
    ) -> Option<Vec<ObjectKey>> {
        let at = match self.built.iter().position(|index| index.path == path) {
            Some(at) => at,
            None if self.built.len() < MAX_INDEXES => {
                let mut index = FieldIndex {
                    path: path.to_vec(),
                    by_value: HashMap::new(),
                    of_key: HashMap::new(),
                    bytes: 0,
                };
                for object in objects {
                    index.add(object);
                }
                self.built.push(index);
                self.built.len() - 1
            }
            None => return None,
        };
        let keys = self.built[at].by_value.get(value);
        Some(keys.map_or_else(Vec::new, |keys| keys.iter().cloned().collect()))
    }
}
