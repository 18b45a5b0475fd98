//! Where the informers' native memory goes: the objects' text, their fixed headers, the indexes
//! that find them, the consumers' pending changes, and what each informer costs whatever it
//! caches. Every figure is worked out from lengths and capacities of the structures as they are
//! (`capacity() * size_of`, the layouts `Arc` and the standard collections allocate), not
//! measured: nothing here touches the allocator, so a collection costs a walk over the informers
//! and their consumers, never over the objects (the stores keep their sums as objects come and
//! go). What it cannot see (the HTTP/2 library's per-stream state, tokio's task header and the
//! shared state of each cluster's recovery channel, the allocator's own bookkeeping and what
//! fragmentation holds) is what [`crate::heap`]'s figures and `bench/informer-fixed-cost.js`
//! show beside it.

use serde::Serialize;

/// The formulas, for the informer's parts that work out their sizes.
pub use crate::size::{
    appended_btree_bytes, arc_bytes, arc_slice_bytes, btree_bytes, hash_table_bytes,
};

/// `AddAssign` for a struct of sums, field by field. `other` is taken apart whole, so a field
/// the list leaves out does not compile.
macro_rules! add_assign_fields {
    ($ty:ident { $($field:ident),* $(,)? }) => {
        impl std::ops::AddAssign for $ty {
            fn add_assign(&mut self, other: Self) {
                let $ty { $($field),* } = other;
                $(self.$field += $field;)*
            }
        }
    };
}

/// One informer's memory, or the sum of several: the figures of the native snapshot's `memory`
/// (`metricsJson()`), in bytes unless named a count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Footprint {
    /// Shared informers (registry entries: one per key, however many handles share it).
    pub informers: usize,
    /// Open consumers.
    pub consumers: usize,
    /// Objects cached.
    pub objects: usize,
    /// The objects' JSON text: the sum of their text lengths (after `fields` or `strip`),
    /// which is what `cachedBytes` of the series says too.
    pub json_bytes: usize,
    /// What that text takes as the cache holds it: each packed text's LZ4 block, each other
    /// text's length (see [`super::object::Object::packed`]).
    pub text_bytes: usize,
    /// The rest of each object's one allocation: `Arc`'s two counters, the 40-byte header of
    /// where its metadata lies, the strings that had escapes (copied after the text; after a
    /// packed text, all of its metadata strings and labels), padding to 8 bytes. Each object's
    /// allocation size less its text as held, summed as objects come and go.
    pub header_bytes: usize,
    /// The store's indexes: its field indexes (`store/index.rs`, an estimate), and the nodes of
    /// its ordered set of 16-byte object pointers, as a tree of
    /// full nodes (see [`btree_bytes`]; a store grown by many ADDED events since its last list
    /// takes up to twice this).
    pub index_bytes: usize,
    /// Changes pending in consumers (one per object at most): each consumer's table by key
    /// (`capacity()` × entry, control bytes) and its order (a B-tree filled by appending, see
    /// [`appended_btree_bytes`]); the objects they point at are the cache's, or versions the
    /// cache has moved past. A consumer that caught up gives its table back, so this is near
    /// zero when every consumer keeps up.
    pub pending_bytes: usize,
    /// Changes pending in consumers, summed.
    pub pending_changes: usize,
    /// What the informers cost whatever they cache, summed (see [`Fixed`]).
    pub fixed_bytes: usize,
    /// What the watcher's informers learned of their clusters together (the recovery channels,
    /// the URLs that refused streaming lists): once per watcher, not per informer.
    pub shared_bytes: usize,
}

add_assign_fields!(Footprint {
    informers,
    consumers,
    objects,
    json_bytes,
    text_bytes,
    header_bytes,
    index_bytes,
    pending_bytes,
    pending_changes,
    fixed_bytes,
    shared_bytes,
});

/// An informer's fixed cost by part, each worked out from the sizes of its structures and the
/// capacities of their buffers. Its fields are named in JSON as parts of the fixed cost
/// (`fixedTaskBytes`, ...), beside the footprint's (`fixedBytes`, their sum).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Fixed {
    /// The reflector's task: the size of its future as spawned (`size_of_val`: the state
    /// machine with every local it keeps across an await). Not in it: the futures it boxes
    /// while they run (a request being made; the watch's body reader, about 1.3 KiB for as
    /// long as it watches) and tokio's task header.
    #[serde(rename = "fixedTaskBytes")]
    pub task_bytes: usize,
    /// The cache, its counters and their `Arc`s (`arc_bytes` of each struct) with the
    /// capacities of the strings and lists they own (resource path, resourceVersion, the
    /// cursor list), and per open consumer its shared queue (`arc_bytes`) and waker closure.
    #[serde(rename = "fixedCacheBytes")]
    pub cache_bytes: usize,
    /// What the reflector was configured with and resolved: the strings and byte buffers of
    /// its cluster (name, URL, CA data), selectors and the endpoint it connects with (CA PEM,
    /// client identity, base URL, bearer), by capacity.
    #[serde(rename = "fixedConfigBytes")]
    pub config_bytes: usize,
    /// The registry's entry: the shared informer's struct (`arc_bytes`), its key and metric
    /// labels by capacity, its handles' sinks, and its share of the registry's table.
    #[serde(rename = "fixedRegistryBytes")]
    pub registry_bytes: usize,
}

impl Fixed {
    /// The parts added up.
    pub fn total(&self) -> usize {
        self.task_bytes + self.cache_bytes + self.config_bytes + self.registry_bytes
    }
}

add_assign_fields!(Fixed {
    task_bytes,
    cache_bytes,
    config_bytes,
    registry_bytes,
});
