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

use std::alloc::Layout;
use std::mem::size_of;

use serde::Serialize;

/// Bytes an `Arc<T>` allocates: its two counters and `T`, padded to `T`'s alignment.
pub fn arc_bytes<T>() -> usize {
    Layout::new::<[usize; 2]>()
        .extend(Layout::new::<T>())
        .map(|(layout, _)| layout.pad_to_align().size())
        .unwrap_or(0)
}

/// Bytes an `Arc<[u8]>` of `len` bytes allocates.
pub fn arc_slice_bytes(len: usize) -> usize {
    Layout::new::<[usize; 2]>()
        .extend(Layout::array::<u8>(len).unwrap_or(Layout::new::<u8>()))
        .map(|(layout, _)| layout.pad_to_align().size())
        .unwrap_or(0)
}

/// Bytes the table of a `HashMap` with this `capacity()` and entries of `entry` bytes allocates
/// (hashbrown, the standard library's: a power of two of buckets, one control byte each and a
/// group of 16 more; `capacity()` is 7/8 of the buckets from 8 on, one less below).
pub fn hash_table_bytes(capacity: usize, entry: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 8 {
        (capacity + 1).next_power_of_two()
    } else {
        (capacity * 8 / 7).next_power_of_two()
    };
    buckets * entry + buckets + 16
}

/// The standard B-tree's branching: at most 11 entries in a node, 12 edges in an internal one.
const BTREE_CAPACITY: usize = 11;

/// Bytes the nodes of a `BTreeMap`/`BTreeSet` of `len` entries of `entry` bytes (key and value)
/// take when its nodes are full, as a tree built from sorted entries has them (the store after
/// every list and relist is rebuilt so). A leaf holds its parent pointer, its index and length
/// (two `u16`) and 11 entries; an internal node adds 12 edge pointers. Entries inserted one by
/// one split nodes: see [`appended_btree_bytes`].
pub fn btree_bytes(len: usize, entry: usize) -> usize {
    tree_bytes(len, entry, BTREE_CAPACITY)
}

/// Bytes the nodes of a B-tree filled by appending entries in key order take, as a consumer's
/// queue is: a node full at its right end splits, keeping 6 entries on its left, so every node
/// but the right edge holds 6 (about 1.85 times [`btree_bytes`]).
pub fn appended_btree_bytes(len: usize, entry: usize) -> usize {
    tree_bytes(len, entry, BTREE_CAPACITY / 2 + 1)
}

/// The nodes of a tree of `len` entries with `per_node` entries in each node: its leaves, and
/// between each two children one entry in the level above (`len = (per_node + 1) * leaves - 1`).
fn tree_bytes(len: usize, entry: usize, per_node: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let pointer = size_of::<usize>();
    let align = |n: usize| n.div_ceil(pointer) * pointer;
    let leaf = align(pointer + 2 * size_of::<u16>() + BTREE_CAPACITY * entry);
    let internal = leaf + (BTREE_CAPACITY + 1) * pointer;
    let mut nodes = (len + 1).div_ceil(per_node + 1);
    let mut bytes = nodes * leaf;
    while nodes > 1 {
        nodes = nodes.div_ceil(per_node + 1);
        bytes += nodes * internal;
    }
    bytes
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
    /// The store's index: the nodes of its ordered set of 16-byte object pointers, as a tree of
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

impl std::ops::AddAssign for Footprint {
    fn add_assign(&mut self, other: Self) {
        self.informers += other.informers;
        self.consumers += other.consumers;
        self.objects += other.objects;
        self.json_bytes += other.json_bytes;
        self.text_bytes += other.text_bytes;
        self.header_bytes += other.header_bytes;
        self.index_bytes += other.index_bytes;
        self.pending_bytes += other.pending_bytes;
        self.pending_changes += other.pending_changes;
        self.fixed_bytes += other.fixed_bytes;
        self.shared_bytes += other.shared_bytes;
    }
}

/// An informer's fixed cost by part, each worked out from the sizes of its structures and the
/// capacities of their buffers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fixed {
    /// The reflector's task: the size of its future as spawned (`size_of_val`: the state
    /// machine with every local it keeps across an await). Not in it: the futures it boxes
    /// while they run (a request being made; the watch's body reader, about 1.3 KiB for as
    /// long as it watches) and tokio's task header.
    pub task_bytes: usize,
    /// The cache, its counters and their `Arc`s (`arc_bytes` of each struct) with the
    /// capacities of the strings and lists they own (resource path, resourceVersion, the
    /// cursor list), and per open consumer its shared queue (`arc_bytes`) and waker closure.
    pub cache_bytes: usize,
    /// What the reflector was configured with and resolved: the strings and byte buffers of
    /// its cluster (name, URL, CA data), selectors and the endpoint it connects with (CA PEM,
    /// client identity, base URL, bearer), by capacity.
    pub config_bytes: usize,
    /// The registry's entry: the shared informer's struct (`arc_bytes`), its key and metric
    /// labels by capacity, its handles' sinks, and its share of the registry's table.
    pub registry_bytes: usize,
}

impl Fixed {
    /// The parts added up.
    pub fn total(&self) -> usize {
        self.task_bytes + self.cache_bytes + self.config_bytes + self.registry_bytes
    }
}

impl std::ops::AddAssign for Fixed {
    fn add_assign(&mut self, other: Self) {
        self.task_bytes += other.task_bytes;
        self.cache_bytes += other.cache_bytes;
        self.config_bytes += other.config_bytes;
        self.registry_bytes += other.registry_bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_tables_buckets_follow_its_capacity() {
        assert_eq!(hash_table_bytes(0, 8), 0);
        // capacity 3 → 4 buckets, 7 → 8, 14 → 16, 28 → 32.
        assert_eq!(hash_table_bytes(3, 8), 4 * 8 + 4 + 16);
        assert_eq!(hash_table_bytes(7, 8), 8 * 8 + 8 + 16);
        assert_eq!(hash_table_bytes(14, 8), 16 * 9 + 16);
        assert_eq!(hash_table_bytes(28, 8), 32 * 9 + 16);
        let mut map = std::collections::HashMap::<u64, u64>::with_capacity(100);
        map.insert(1, 1);
        // 100 needs 128 buckets (capacity 112).
        assert_eq!(map.capacity(), 112);
        assert_eq!(hash_table_bytes(map.capacity(), 16), 128 * 17 + 16);
    }

    #[test]
    fn a_trees_nodes_add_up_by_level() {
        assert_eq!(btree_bytes(0, 16), 0);
        let leaf: usize = 8 + 4 + 11 * 16;
        let leaf = leaf.div_ceil(8) * 8;
        assert_eq!(btree_bytes(11, 16), leaf);
        // 12 entries: two leaves under one internal node.
        assert_eq!(btree_bytes(12, 16), 2 * leaf + leaf + 12 * 8);
        assert_eq!(arc_bytes::<u8>(), 24);
        assert_eq!(arc_slice_bytes(1), 24);
        assert_eq!(arc_slice_bytes(9), 32);
    }
}
