//! What the standard structures allocate, worked out from their lengths and capacities (the
//! layouts `Arc` and the standard collections use), never measured: a figure costs no walk
//! over what they hold. The informer's memory (`crate::informer::memory`) and the engine's
//! shared state add up their parts with these.

use std::alloc::Layout;
use std::mem::size_of;

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
