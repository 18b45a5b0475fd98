//! One consumer's queue: its pending changes, coalesced per object in the order each first
//! became pending (the table in the fanout's module docs), and its SYNCED and ERROR markers.

use std::collections::{BTreeMap, HashMap};
use std::mem::size_of;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::batch::{Batch, BatchBuilder};
use crate::informer::memory::{appended_btree_bytes, hash_table_bytes};
use crate::informer::store::{Change, ChangeKind, Object};

/// The pending changes (the table's capacity) a consumer must have held for its catching up to
/// give the allocator's free memory back.
pub(super) const RELEASE_AFTER_BACKLOG: usize = 4096;

/// One version of an object, as a consumer will see it.
pub(super) type Version = Object;

/// The one change pending for an object.
#[derive(Debug, Clone)]
pub(super) enum Pending {
    Added(Version),
    Modified(Version),
    Deleted(Version),
    /// The consumer holds the object `deleted` replaced by `added` (another uid).
    Replaced {
        deleted: Version,
        added: Version,
    },
}

impl Pending {
    /// The pending change after `kind` with `next`, or `None` when the object was added and
    /// deleted before the consumer looked.
    pub(super) fn then(self, kind: ChangeKind, next: Version) -> Option<Self> {
        use ChangeKind::{Added, Deleted, Modified};
        Some(match (self, kind) {
            (Self::Added(_), Added | Modified) => Self::Added(next),
            (Self::Added(_), Deleted) => return None,
            (Self::Modified(_), Added | Modified) => Self::Modified(next),
            (Self::Modified(_) | Self::Deleted(_), Deleted) => Self::Deleted(next),
            (Self::Deleted(deleted), Added | Modified) => Self::Replaced {
                deleted,
                added: next,
            },
            (Self::Replaced { deleted, .. }, Added | Modified) => Self::Replaced {
                deleted,
                added: next,
            },
            (Self::Replaced { deleted, .. }, Deleted) => Self::Deleted(deleted),
        })
    }

    pub(super) fn new(kind: ChangeKind, version: Version) -> Self {
        match kind {
            ChangeKind::Added => Self::Added(version),
            ChangeKind::Modified => Self::Modified(version),
            ChangeKind::Deleted => Self::Deleted(version),
        }
    }
}

impl Pending {
    /// The version it ends on, which the consumer will hold (or have seen deleted).
    pub(super) fn latest(&self) -> &Version {
        match self {
            Self::Added(v) | Self::Modified(v) | Self::Deleted(v) => v,
            Self::Replaced { added, .. } => added,
        }
    }
}

/// An entry of a consumer's queue.
#[derive(Debug)]
pub(super) enum Slot {
    /// An object's pending change.
    Object(Pending),
    /// `{"type":"SYNCED","resourceVersion":…,"relist":…}`.
    Synced { rv: Arc<str>, relist: bool },
    /// An ERROR event's text.
    Error(String),
}

/// How far a consumer's stream has come to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ending {
    /// Changes keep coming.
    Open,
    /// The informer stopped: what is pending is still taken, then the end.
    Draining,
    /// The consumer closed: the end, at once.
    Closed,
}

/// One consumer's pending changes and markers.
#[derive(Debug)]
pub(super) struct Queue {
    pub(super) next_seq: u64,
    /// Slots by the order they became pending.
    pub(super) order: BTreeMap<u64, Slot>,
    /// Each pending object's place in `order`, keyed by its pending change's latest version
    /// ([`Object`] hashes and compares by key): no key is allocated per pending change, and no
    /// version is held that the change no longer needs.
    pub(super) pending: HashMap<Object, u64>,
    /// The consumer's first SYNCED was queued (and maybe taken).
    pub(super) first_synced: bool,
    /// A later SYNCED still pending, which the next one absorbs.
    pub(super) later_synced: Option<u64>,
    /// An ERROR still pending, which the next one replaces.
    pub(super) error: Option<u64>,
    pub(super) ending: Ending,
    /// The cursor's waker is to be called at the next push or ending (see [`Cursor::arm`]).
    pub(super) armed: bool,
    /// Reused to build each event line.
    pub(super) scratch: Vec<u8>,
}

impl Queue {
    pub(super) fn new() -> Self {
        Self {
            next_seq: 0,
            order: BTreeMap::new(),
            pending: HashMap::new(),
            first_synced: false,
            later_synced: None,
            error: None,
            ending: Ending::Open,
            armed: false,
            scratch: Vec::new(),
        }
    }

    pub(super) fn append(&mut self, slot: Slot) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert(seq, slot);
        seq
    }

    pub(super) fn push(&mut self, change: &Change) {
        let version = change.object.clone();
        let earlier = self.pending.remove(&version).and_then(|seq| {
            match self.order.remove(&seq) {
                Some(Slot::Object(pending)) => Some((seq, pending)),
                // `pending` names object slots only.
                _ => None,
            }
        });
        let (seq, next) = match earlier {
            None => (self.next_seq, Some(Pending::new(change.kind, version))),
            Some((seq, pending)) => (seq, pending.then(change.kind, version)),
        };
        if let Some(next) = next {
            self.place(seq, next);
        }
    }

    /// Puts `pending` at `seq` of the order (the next place, or the one its object already
    /// had), indexed by its latest version.
    pub(super) fn place(&mut self, seq: u64, pending: Pending) {
        self.pending.insert(pending.latest().clone(), seq);
        if seq == self.next_seq {
            self.append(Slot::Object(pending));
        } else {
            self.order.insert(seq, Slot::Object(pending));
        }
    }

    pub(super) fn push_synced(&mut self, rv: Arc<str>, relist: bool) {
        if !self.first_synced {
            self.first_synced = true;
            self.append(Slot::Synced { rv, relist });
            return;
        }
        let mut relist = relist;
        if let Some(seq) = self.later_synced.take()
            && let Some(Slot::Synced {
                relist: earlier, ..
            }) = self.order.remove(&seq)
        {
            relist |= earlier;
        }
        self.later_synced = Some(self.append(Slot::Synced { rv, relist }));
    }

    pub(super) fn push_error(&mut self, json: &str) {
        if let Some(seq) = self.error
            && let Some(Slot::Error(text)) = self.order.get_mut(&seq)
        {
            json.clone_into(text);
            return;
        }
        self.error = Some(self.append(Slot::Error(json.to_owned())));
    }

    /// Writes one change as an event into `builder`.
    pub(super) fn write(
        &mut self,
        builder: &mut BatchBuilder,
        kind: ChangeKind,
        version: &Version,
    ) {
        let line = &mut self.scratch;
        line.clear();
        line.extend_from_slice(br#"{"type":""#);
        line.extend_from_slice(kind.as_str().as_bytes());
        line.extend_from_slice(br#"","object":"#);
        version.write_text(line);
        line.push(b'}');
        builder.push_line(line, Some(version.rv()), 0);
    }

    /// The bytes its pending changes take (see [`Footprint::pending_bytes`]) and how many
    /// there are. Walks the pending keys, which are at most the cache's objects.
    pub(super) fn pending_bytes(&self) -> (usize, usize) {
        let table = hash_table_bytes(self.pending.capacity(), size_of::<(Object, u64)>());
        let order = appended_btree_bytes(self.order.len(), size_of::<(u64, Slot)>());
        (table + order + self.scratch.capacity(), self.pending.len())
    }

    /// `take` would give something: events, markers, or the end.
    pub(super) fn has_batch(&self) -> bool {
        self.ending != Ending::Open || !self.order.is_empty()
    }

    /// The next batch; the events in it are added to `delivered`.
    pub(super) fn take(&mut self, delivered: &AtomicU64) -> Option<Batch> {
        if self.ending == Ending::Closed {
            return Some(Batch::end());
        }
        if self.order.is_empty() {
            return (self.ending == Ending::Draining).then(Batch::end);
        }
        let mut builder = BatchBuilder::default();
        let mut events = 0;
        while !builder.is_full() {
            let Some((seq, slot)) = self.order.pop_first() else {
                break;
            };
            match slot {
                Slot::Object(pending) => {
                    self.pending.remove(pending.latest());
                    events += 1;
                    match pending {
                        Pending::Added(v) => self.write(&mut builder, ChangeKind::Added, &v),
                        Pending::Modified(v) => self.write(&mut builder, ChangeKind::Modified, &v),
                        Pending::Deleted(v) => self.write(&mut builder, ChangeKind::Deleted, &v),
                        Pending::Replaced { deleted, added } => {
                            events += 1;
                            self.write(&mut builder, ChangeKind::Deleted, &deleted);
                            self.write(&mut builder, ChangeKind::Added, &added);
                        }
                    }
                }
                Slot::Synced { rv, relist } => {
                    events += 1;
                    if self.later_synced == Some(seq) {
                        self.later_synced = None;
                    }
                    let rv = serde_json::to_string(&*rv).unwrap_or_default();
                    builder.push_generated(&format!(
                        r#"{{"type":"SYNCED","resourceVersion":{rv},"relist":{relist}}}"#
                    ));
                }
                Slot::Error(json) => {
                    events += 1;
                    self.error = None;
                    builder.push_generated(&json);
                }
            }
        }
        delivered.fetch_add(events, Ordering::Relaxed);
        let (mut batch, _) = builder.finish();
        batch.done = self.ending == Ending::Draining && self.order.is_empty();
        if self.order.is_empty() {
            // Caught up: a quiet consumer keeps no table sized for a burst, and the memory a
            // large backlog took (the table, the order's nodes, the batches' text) goes back to
            // the system: freed after the sync's own release, it would otherwise stay with the
            // allocator (bench/README.md, "Bytes per object", has the figures).
            if self.pending.capacity() >= RELEASE_AFTER_BACKLOG {
                crate::heap::release_free_memory_soon();
            }
            self.pending.shrink_to(0);
            self.scratch = Vec::new();
        }
        Some(batch)
    }
}
