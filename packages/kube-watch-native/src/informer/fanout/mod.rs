//! One cursor per consumer: the changes it has not taken yet, coalesced per object, and the
//! SYNCED and ERROR markers between them.
//!
//! The reflector pushes synchronously into every cursor and never waits for one: a consumer
//! that falls behind holds at most one pending change per object (a replacement counts as
//! one), kept in the order its object first became pending, so its memory is bounded by the
//! number of objects and never by the event rate. What a pending change becomes when the
//! next one for the same object arrives:
//!
//! | pending  | then     | pending becomes                                   |
//! |----------|----------|---------------------------------------------------|
//! | –        | X        | X                                                 |
//! | ADDED    | MODIFIED | ADDED (latest object)                             |
//! | ADDED    | DELETED  | nothing (never shown)                             |
//! | MODIFIED | MODIFIED | MODIFIED (latest)                                 |
//! | MODIFIED | DELETED  | DELETED (last known)                              |
//! | DELETED  | ADDED    | DELETED (old) then ADDED (new), taken together    |
//!
//! A replacement that changes again stays a replacement with the latest new object, and one
//! whose new object is deleted again becomes the old object's DELETED. Markers never move, and
//! a change coalesces in its object's place, so SYNCED is a barrier: it is taken after every
//! change that was pending before it. A consumer holds at most two SYNCED markers (its first,
//! and the latest of the relists after it, which absorbs earlier ones) and one ERROR (the
//! latest), so markers are bounded too.
//!
//! Taking builds one JSON array text, `[{"type":…,"object":<text>,"resourceVersion":…},…]`,
//! with the watch core's [`BatchBuilder`] and its byte cap, on the consumer's task.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use std::mem::{size_of, size_of_val};

use super::memory::{Footprint, arc_bytes};
use super::store::{Change, Object};
use crate::batch::Batch;
use crate::error::Failure;

mod queue;
use queue::{Ending, Pending, Queue};

/// Called, on whichever thread pushed, with what an armed cursor had to take.
pub type Waker = Box<dyn Fn(Batch) + Send + Sync>;

/// What the fanout and a cursor share.
struct Shared {
    queue: Mutex<Queue>,
    /// Signalled on every push, for a consumer waiting for one.
    changed: Notify,
    /// Set once by [`Cursor::set_waker`].
    waker: OnceLock<Waker>,
    /// The fanout's count of events taken, shared by all its cursors.
    delivered: Arc<AtomicU64>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("queue", &self.queue)
            .field("waker", &self.waker.get().is_some())
            .field("delivered", &self.delivered)
            .finish_non_exhaustive()
    }
}

impl Shared {
    fn new(queue: Queue, delivered: Arc<AtomicU64>) -> Self {
        Self {
            queue: Mutex::new(queue),
            changed: Notify::new(),
            waker: OnceLock::new(),
            delivered,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Nothing panics while holding the lock; a poisoned queue is still consistent.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn update(&self, change: impl FnOnce(&mut Queue)) {
        let mut queue = self.lock();
        if queue.ending != Ending::Open {
            return;
        }
        change(&mut queue);
        self.signal(queue);
    }

    /// Wakes whoever waits, after a change to `queue` (whose lock this lets go first). An
    /// armed cursor's batch is taken here, at once, as a waiting task would take it.
    fn signal(&self, mut queue: MutexGuard<'_, Queue>) {
        let waker = self
            .waker
            .get()
            .filter(|_| queue.armed && queue.has_batch());
        let batch = waker.and_then(|_| {
            queue.armed = false;
            queue.take(&self.delivered)
        });
        drop(queue);
        self.changed.notify_one();
        if let (Some(wake), Some(batch)) = (waker, batch) {
            wake(batch);
        }
    }
}

/// Every consumer's cursor; the reflector pushes here.
#[derive(Debug)]
pub struct Fanout {
    cursors: Mutex<Vec<Weak<Shared>>>,
    /// Named in ERROR events.
    resource_path: String,
    ended: Mutex<bool>,
    /// The ERROR that ended the informer, for consumers that subscribe after it.
    terminal: Mutex<Option<String>>,
    /// Events taken by all consumers, closed ones included (a count per batch, not per event).
    delivered: Arc<AtomicU64>,
}

impl Fanout {
    /// No consumers yet, for an informer of `resource_path`.
    pub fn new(resource_path: String) -> Self {
        Self {
            cursors: Mutex::new(Vec::new()),
            resource_path,
            ended: Mutex::new(false),
            terminal: Mutex::new(None),
            delivered: Arc::default(),
        }
    }

    fn each(&self, mut f: impl FnMut(&Shared)) {
        let mut cursors = self.cursors.lock().unwrap_or_else(PoisonError::into_inner);
        // A cursor that closed (or was dropped) leaves the list; after `end` every one does.
        cursors.retain(|weak| match weak.upgrade() {
            Some(shared) if shared.lock().ending == Ending::Open => {
                f(&shared);
                shared.lock().ending == Ending::Open
            }
            _ => false,
        });
    }

    /// A new consumer: one ADDED per object of `snapshot` (in its order), then SYNCED at
    /// `synced` when the informer has synced. The caller holds the store still while this
    /// runs, so the snapshot and the pushes that follow neither overlap nor leave a gap.
    pub fn subscribe<'a>(
        &self,
        snapshot: impl Iterator<Item = &'a Object>,
        synced: Option<Arc<str>>,
    ) -> Cursor {
        // Under the list's lock, so an `end` that races with this either comes first (the
        // consumer ends at once) or finds the new cursor in the list and drains it.
        let mut cursors = self.cursors.lock().unwrap_or_else(PoisonError::into_inner);
        let mut queue = Queue::new();
        if *self.ended.lock().unwrap_or_else(PoisonError::into_inner) {
            // A consumer of an informer that gave up still learns why.
            match &*self.terminal.lock().unwrap_or_else(PoisonError::into_inner) {
                Some(json) => {
                    queue.push_error(json);
                    queue.ending = Ending::Draining;
                }
                None => queue.ending = Ending::Closed,
            }
        } else {
            for object in snapshot {
                queue.place(queue.next_seq, Pending::Added(object.clone()));
            }
            if let Some(rv) = synced {
                queue.push_synced(rv, false);
            }
        }
        let shared = Arc::new(Shared::new(queue, self.delivered.clone()));
        cursors.push(Arc::downgrade(&shared));
        Cursor { shared }
    }

    /// Gives every consumer `changes`, in order. A replacement (DELETED then ADDED of one
    /// key) in one call is taken together.
    pub fn push(&self, changes: &[Change]) {
        if changes.is_empty() {
            return;
        }
        self.each(|shared| {
            shared.update(|queue| {
                for change in changes {
                    queue.push(change);
                }
            });
        });
    }

    /// The cache is complete at `rv` (after the initial list, or a relist when `relist`).
    pub fn synced(&self, rv: &str, relist: bool) {
        let rv: Arc<str> = rv.into();
        self.each(|shared| shared.update(|queue| queue.push_synced(rv.clone(), relist)));
    }

    /// An ERROR event for every consumer; one that is not retried ends every consumer's
    /// stream after it (and whatever was pending before it).
    pub fn error(&self, failure: &Failure, retrying: bool) {
        let mut json = failure.event_json(&self.resource_path);
        // The event is an object; `retrying` goes before its closing brace.
        json.pop();
        json.push_str(&format!(r#","retrying":{retrying}}}"#));
        self.each(|shared| shared.update(|queue| queue.push_error(&json)));
        if !retrying {
            *self.terminal.lock().unwrap_or_else(PoisonError::into_inner) = Some(json);
            self.end();
        }
    }

    /// The informer stopped: every consumer takes what is pending, then the end; a consumer
    /// that subscribes later ends at once.
    pub fn end(&self) {
        // Set before `each` takes the list's lock; see `subscribe`.
        *self.ended.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.each(|shared| {
            let mut queue = shared.lock();
            if queue.ending == Ending::Open {
                queue.ending = Ending::Draining;
            }
            shared.signal(queue);
        });
    }

    /// Consumers still open.
    pub fn consumers(&self) -> usize {
        let mut count = 0;
        self.each(|_| count += 1);
        count
    }

    /// Events (changes, SYNCED and ERROR) taken by consumers so far, summed over them.
    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    /// The consumers' part of the informer's memory: open consumers and their pending changes
    /// in a [`Footprint`], and the fixed bytes of the fanout and of each consumer (the queue it
    /// shares with its cursor, its waker) for [`super::memory::Fixed::cache_bytes`].
    pub fn footprint(&self) -> (Footprint, usize) {
        let mut footprint = Footprint::default();
        let mut fixed = self.resource_path.capacity() + arc_bytes::<AtomicU64>();
        self.each(|shared| {
            let queue = shared.lock();
            let (bytes, changes) = queue.pending_bytes();
            footprint.consumers += 1;
            footprint.pending_bytes += bytes;
            footprint.pending_changes += changes;
            fixed += arc_bytes::<Shared>() + shared.waker.get().map_or(0, |w| size_of_val(&**w));
        });
        let cursors = self.cursors.lock().unwrap_or_else(PoisonError::into_inner);
        fixed += cursors.capacity() * size_of::<Weak<Shared>>();
        drop(cursors);
        let terminal = self.terminal.lock().unwrap_or_else(PoisonError::into_inner);
        fixed += terminal.as_ref().map_or(0, String::capacity);
        (footprint, fixed)
    }

    /// The most changes pending in one open consumer (at most one per object): how far the
    /// slowest consumer is behind. 0 without consumers.
    pub fn slowest_pending(&self) -> usize {
        let mut most = 0;
        self.each(|shared| most = most.max(shared.lock().pending.len()));
        most
    }
}

/// One consumer's end of the fanout. Dropping it closes it.
#[derive(Debug)]
pub struct Cursor {
    shared: Arc<Shared>,
}

impl Cursor {
    /// The ready changes as one batch (up to the batch byte cap), the end (`done`), or
    /// `None` when nothing is ready yet.
    pub fn take(&self) -> Option<Batch> {
        self.shared.lock().take(&self.shared.delivered)
    }

    /// Waits for a batch or the end; the end at once after `cancel`.
    pub async fn next(&self, cancel: &CancellationToken) -> Batch {
        crate::batch::wait_for_batch(&self.shared.changed, cancel, || self.take()).await
    }

    /// What [`Cursor::arm`] calls; set once, later calls are ignored.
    pub fn set_waker(&self, waker: Waker) {
        let _ = self.shared.waker.set(waker);
    }

    /// Calls the waker with the next batch (events, markers, or the end) once there is one:
    /// at once if there is now, else on the thread of the push or ending that brings it. No
    /// task waits: a consumer that waits costs nothing until its waker is called.
    pub fn arm(&self) {
        let mut queue = self.shared.lock();
        queue.armed = true;
        if queue.has_batch() {
            self.shared.signal(queue);
        }
    }

    /// Ends this consumer now: nothing pending is delivered, and taking says `done`.
    pub fn close(&self) {
        let mut queue = self.shared.lock();
        queue.ending = Ending::Closed;
        queue.order.clear();
        queue.pending = HashMap::new();
        self.shared.signal(queue);
    }

    /// Objects and markers pending.
    pub fn pending(&self) -> usize {
        self.shared.lock().order.len()
    }
}

impl Drop for Cursor {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests;
