//! The metrics snapshot's `memory`: where one watcher's informers' native memory goes, worked
//! out from their structures (`crate::informer::memory`), beside the allocator's process-wide
//! figures to set it against.

use serde::Serialize;

use crate::informer::memory::{Fixed, Footprint};
use crate::informer::registry::Registry;

/// This watcher's informers' memory worked out from their structures (objects' text, headers
/// and index, consumers' pending changes, each informer's fixed cost by part), and the
/// allocator's process-wide figures to set it against. Bytes unless named a count.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WatcherMemory {
    /// `informers`, `consumers`, `objects`, `textBytes`, `headerBytes`, `indexBytes`,
    /// `pendingBytes`, `pendingChanges`, `fixedBytes`, `sharedBytes`: see [`Footprint`].
    #[serde(flatten)]
    pub footprint: Footprint,
    /// `fixedBytes / informers` (0 without informers).
    pub fixed_bytes_per_informer: f64,
    /// `fixedTaskBytes`, `fixedCacheBytes`, `fixedConfigBytes`, `fixedRegistryBytes`: the
    /// fixed bytes by part, summed over the informers (see [`Fixed`]).
    #[serde(flatten)]
    pub fixed: Fixed,
    /// Text, headers, index, pending, fixed and shared bytes added up: what the informers
    /// account for.
    pub accounted_bytes: usize,
    /// The allocator's bytes in use, process-wide (glibc only, else absent): everything the
    /// process allocated with malloc (Node.js and V8's own included, V8's heap not).
    pub allocator_in_use_bytes: Option<u64>,
    /// Bytes free but held in the allocator's heaps, process-wide (glibc only).
    pub allocator_free_bytes: Option<u64>,
}

impl WatcherMemory {
    /// The memory of `registry`'s informers now.
    pub fn of<S: Send + Sync + 'static>(registry: &Registry<S>) -> Self {
        let (footprint, fixed) = registry.memory();
        Self::from_parts(footprint, fixed, crate::heap::allocator_stats())
    }

    fn from_parts(
        footprint: Footprint,
        fixed: Fixed,
        allocator: Option<crate::heap::AllocatorStats>,
    ) -> Self {
        Self {
            footprint,
            fixed_bytes_per_informer: if footprint.informers == 0 {
                0.0
            } else {
                footprint.fixed_bytes as f64 / footprint.informers as f64
            },
            fixed,
            accounted_bytes: footprint.text_bytes
                + footprint.header_bytes
                + footprint.index_bytes
                + footprint.pending_bytes
                + footprint.fixed_bytes
                + footprint.shared_bytes,
            allocator_in_use_bytes: allocator.map(|a| a.in_use),
            allocator_free_bytes: allocator.map(|a| a.free),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounted_bytes_add_up_and_the_fixed_cost_is_per_informer() {
        let footprint = Footprint {
            informers: 4,
            json_bytes: 1_000_000,
            text_bytes: 1,
            header_bytes: 10,
            index_bytes: 100,
            pending_bytes: 1_000,
            fixed_bytes: 10_000,
            shared_bytes: 100_000,
            ..Footprint::default()
        };
        let fixed = Fixed {
            task_bytes: 1,
            cache_bytes: 2,
            config_bytes: 3,
            registry_bytes: 4,
        };
        let memory = WatcherMemory::from_parts(footprint, fixed, None);
        // The JSON text's length is what the cache would hold unpacked, not what it holds.
        assert_eq!(memory.accounted_bytes, 111_111);
        assert_eq!(memory.fixed_bytes_per_informer, 2_500.0);
        let json = serde_json::to_value(&memory).unwrap();
        assert_eq!(json["informers"], 4, "the footprint's fields are flattened");
        assert_eq!(
            [
                &json["fixedTaskBytes"],
                &json["fixedCacheBytes"],
                &json["fixedConfigBytes"],
                &json["fixedRegistryBytes"]
            ],
            [1, 2, 3, 4],
            "so are the fixed cost's, named as parts of it"
        );
        assert_eq!(json["allocatorInUseBytes"], serde_json::Value::Null);
    }

    #[test]
    fn without_informers_the_fixed_cost_per_informer_is_zero() {
        let memory = WatcherMemory::of(&Registry::<()>::default());
        assert_eq!(memory.footprint.informers, 0);
        assert_eq!(memory.fixed_bytes_per_informer, 0.0);
    }
}
