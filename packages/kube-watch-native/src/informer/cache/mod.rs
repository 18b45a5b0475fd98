//! The store and the fanout together, so that what a consumer starts from and what is pushed
//! to it afterwards neither overlap nor leave a gap: every change is applied to the store and
//! pushed to the cursors under the store's write lock, and a new consumer's snapshot is taken
//! under its read lock. Readers (`get`, `list`) share the read lock with each other; taking a
//! consumer's batch locks only that consumer's queue, so a slow consumer holds up nobody.

use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::fanout::{Cursor, Fanout};
use super::memory::{Footprint, arc_bytes};
use super::store::{ChangeKind, Listed, Object, ObjectKey, Query, Store};
use crate::error::Failure;

/// Where the informer stands, as its readers see it.
#[derive(Debug, Default)]
struct Standing {
    /// The last resourceVersion seen (events and bookmarks); empty before the first. Its
    /// buffer is reused, so following events costs no allocation.
    resource_version: String,
    /// The initial list is complete.
    synced: bool,
    /// Bumped after every change to the store (and every complete list), so a reader can tell
    /// that an answer it computed from the store still holds without reading the store again.
    generation: u64,
    /// The last failure, until a sign of life (a successful request, an event, a bookmark).
    failure: Option<LastFailure>,
    /// A reader asked to hear of the next change (see [`Cache::arm_change_notice`]).
    change_notice: bool,
    /// Since when a watch stream has been read, while one is; None between watches (a
    /// backoff after a watch that ended, a reconnect), when the cache may be behind the server.
    watching_since: Option<Moment>,
    /// The last moment the informer had proof its cache is current with the server: a probe
    /// answered, an event applied, a bookmark, a complete list; None before the first. A stream
    /// that stays open but silent leaves it behind, so a reader can bound how stale what it
    /// serves may be.
    alive_at: Option<Moment>,
}

/// Now, in ms since the Unix epoch (0 for a clock before it).
fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}

/// A moment on both clocks: the wall clock's reading, to show, and the monotonic clock's, to
/// measure how long ago it was. Whoever decides by an age asks [`Moment::age_ms`]: a wall clock
/// stepped (by NTP, or a virtual machine resumed) moves no age, so it neither serves an old
/// cache as fresh nor refuses a fresh one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Moment {
    /// Ms since the Unix epoch, as the wall clock read then.
    pub epoch_ms: u64,
    /// The monotonic clock then (tokio's, so tests on a paused clock move it); None for
    /// [`Moment::DAWN`].
    at: Option<tokio::time::Instant>,
}

impl Moment {
    /// Before anything: an age longer than any bound.
    pub const DAWN: Self = Self {
        epoch_ms: 0,
        at: None,
    };

    pub fn now() -> Self {
        Self {
            epoch_ms: epoch_ms(),
            at: Some(tokio::time::Instant::now()),
        }
    }

    /// Ms since this moment on the monotonic clock (infinite for [`Moment::DAWN`]).
    pub fn age_ms(&self) -> f64 {
        self.at
            .map_or(f64::INFINITY, |at| at.elapsed().as_secs_f64() * 1000.0)
    }
}

/// An informer's last failure, as readers see it until the informer shows it works again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastFailure {
    pub failure: Failure,
    /// Whether the informer retries (false: it has ended).
    pub retrying: bool,
}

/// What a reader learns of the informer without following its events: what the fetcher of
/// the Backstage module asks once per answer, so a busy type costs the main thread nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    pub synced: bool,
    pub generation: u64,
    pub failure: Option<LastFailure>,
    pub watching_since: Option<Moment>,
    /// The last moment the informer had proof its cache is current with the server; None
    /// before the first.
    pub alive_at: Option<Moment>,
}

/// While it lives, the cache's health says a watch stream is being read (see
/// [`Cache::watching`]).
pub struct Watching(Arc<Cache>);

impl Drop for Watching {
    fn drop(&mut self) {
        self.0.standing().watching_since = None;
    }
}

/// One informer's cache and consumers.
#[derive(Debug)]
pub struct Cache {
    store: RwLock<Store>,
    fanout: Fanout,
    standing: Mutex<Standing>,
}

impl Cache {
    /// An empty, unsynced cache for an informer of `resource_path` (named in ERROR events).
    pub fn new(resource_path: String) -> Self {
        Self {
            store: RwLock::new(Store::new()),
            fanout: Fanout::new(resource_path),
            standing: Mutex::default(),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Store> {
        // Nothing panics while holding the lock; a poisoned store is still consistent.
        self.store.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Store> {
        self.store.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn standing(&self) -> std::sync::MutexGuard<'_, Standing> {
        self.standing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Applies a watch event's object and pushes what changed; returns how many changes
    /// consumers see (0 for a repeat, 2 for a replacement).
    pub fn apply(&self, kind: ChangeKind, object: Object) -> usize {
        let applied = object.clone();
        let mut store = self.write();
        let changes = store.apply(kind, object);
        self.fanout.push(&changes);
        drop(store);
        let mut standing = self.standing();
        if !changes.is_empty() {
            standing.generation += 1;
        }
        standing.failure = None;
        standing.alive_at = Some(Moment::now());
        if !applied.rv().is_empty() {
            standing.resource_version.clear();
            standing.resource_version.push_str(applied.rv());
        }
        changes.len()
    }

    /// A bookmark moved the resourceVersion on without a change.
    pub fn bookmark(&self, rv: &str) {
        let mut standing = self.standing();
        standing.failure = None;
        standing.alive_at = Some(Moment::now());
        standing.resource_version.clear();
        standing.resource_version.push_str(rv);
    }

    /// A complete list at `rv` (paginated, or a streaming list's initial events) replaces the
    /// content; consumers get the difference, then `SYNCED` (`relist` after a 410). Returns how
    /// many changes that was.
    pub fn replace(&self, listed: Listed, rv: &str, relist: bool) -> usize {
        /// Changes handed to the consumers at a time: enough that a consumer woken by them
        /// takes a full batch, few enough that no buffer grows with the list.
        const CHUNK: usize = 256;
        let mut store = self.write();
        let mut pending = Vec::with_capacity(CHUNK + 1);
        let changes = store.relist(listed, |key_changes| {
            pending.extend_from_slice(key_changes);
            if pending.len() >= CHUNK {
                self.fanout.push(&pending);
                pending.clear();
            }
        });
        self.fanout.push(&pending);
        // Standing first: a consumer that takes the SYNCED and then reads the informer's
        // resourceVersion or `synced` finds them already at the list's.
        let mut standing = self.standing();
        standing.resource_version.clear();
        standing.resource_version.push_str(rv);
        standing.synced = true;
        standing.generation += 1;
        standing.failure = None;
        standing.alive_at = Some(Moment::now());
        drop(standing);
        self.fanout.synced(rv, relist);
        drop(store);
        changes
    }

    /// A new consumer: one ADDED per cached object, then SYNCED at the current
    /// resourceVersion if the cache is synced, then live changes.
    pub fn subscribe(&self) -> Cursor {
        let store = self.read();
        let synced = {
            let standing = self.standing();
            if standing.synced {
                Some(standing.resource_version.as_str().into())
            } else {
                None
            }
        };
        self.fanout.subscribe(store.iter(), synced)
    }

    /// The object `name` in `namespace` (`""` for cluster-scoped ones); its `text()` is what
    /// readers parse.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Object> {
        let key = ObjectKey::new(namespace, name);
        self.read().get(&key).cloned()
    }

    /// The JSON array text of the objects `query` selects.
    pub fn list(&self, query: Query<'_>) -> Vec<u8> {
        self.read().list_json(query)
    }

    /// The SHA-256 of the texts [`Cache::list`] would join (see [`Store::fingerprint`]), in
    /// hex.
    pub fn fingerprint(&self, query: Query<'_>) -> String {
        let digest = self.read().fingerprint(query);
        digest.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// Objects cached.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Its objects and consumers (see [`Footprint`]; `informers` and `fixed_bytes` are left
    /// to the reflector), and its own fixed bytes: the struct, its resourceVersion buffer, the
    /// fanout's and each consumer's.
    pub fn footprint(&self) -> (Footprint, usize) {
        let mut footprint = self.read().footprint();
        let (consumers, fanout_bytes) = self.fanout.footprint();
        footprint += consumers;
        let rv = self.standing().resource_version.capacity();
        (footprint, arc_bytes::<Self>() + fanout_bytes + rv)
    }

    /// Bytes of JSON text cached.
    pub fn cached_bytes(&self) -> usize {
        self.read().cached_bytes()
    }

    /// Bytes the field indexes over the cache take (an estimate).
    pub fn field_index_bytes(&self) -> usize {
        self.read().field_index_bytes()
    }

    /// The last resourceVersion seen, bookmarks included.
    pub fn resource_version(&self) -> Option<String> {
        let standing = self.standing();
        (!standing.resource_version.is_empty()).then(|| standing.resource_version.clone())
    }

    /// The initial list is complete.
    pub fn is_synced(&self) -> bool {
        self.standing().synced
    }

    /// An ERROR event for every consumer; one not retried ends them all.
    pub fn error(&self, failure: &Failure, retrying: bool) {
        self.standing().failure = Some(LastFailure {
            failure: *failure,
            retrying,
        });
        self.fanout.error(failure, retrying);
    }

    /// A request succeeded after a failure (the server answered 200): the failure is over,
    /// even before an event or a bookmark shows it.
    pub fn recovered(&self) {
        let mut standing = self.standing();
        if standing.failure.is_some_and(|last| last.retrying) {
            standing.failure = None;
        }
    }

    /// Arms a notice of the next change (the reflector's `Reporter::changed`), unless the
    /// store has changed since `generation` already: then false, and the reader looks now.
    pub fn arm_change_notice(&self, generation: u64) -> bool {
        let mut standing = self.standing();
        if standing.generation != generation {
            return false;
        }
        standing.change_notice = true;
        true
    }

    /// Whether a notice of this change is due (it is then disarmed).
    pub fn take_change_notice(&self) -> bool {
        std::mem::take(&mut self.standing().change_notice)
    }

    /// Synced, the generation of the store, the failure not yet over, and since when a watch
    /// has been read.
    pub fn health(&self) -> Health {
        let standing = self.standing();
        Health {
            synced: standing.synced,
            generation: standing.generation,
            failure: standing.failure,
            watching_since: standing.watching_since,
            alive_at: standing.alive_at,
        }
    }

    /// A watch stream is read from now until the guard is dropped. `initial`: the stream is a
    /// streaming list's, whose end (the initial-events-end bookmark) proves the cache current
    /// by itself, so it counts as watching since [`Moment::DAWN`]; a resumed watch first
    /// replays what changed while it was closed, so readers count from when it opened.
    ///
    /// Opening a watch proves nothing by itself: a server whose resourceVersion went back (its
    /// storage restored, the cluster recreated) takes a watch from a resourceVersion it never
    /// reached with 200 and stays silent. The runner says when the cache is shown current
    /// ([`Cache::proven`]).
    pub fn watching(self: &Arc<Self>, initial: bool) -> Watching {
        self.standing().watching_since = Some(if initial { Moment::DAWN } else { Moment::now() });
        Watching(Arc::clone(self))
    }

    /// The cache was shown current without an event (`alive_at`): the server answered that its
    /// resourceVersion is not older than the cache's (a probe), or took a resumed watch where
    /// nothing probes.
    pub fn proven(&self) {
        self.standing().alive_at = Some(Moment::now());
    }

    /// The informer stopped: consumers take what is pending, then end.
    pub fn end(&self) {
        self.fanout.end();
    }

    /// Consumers still open.
    pub fn consumers(&self) -> usize {
        self.fanout.consumers()
    }

    /// Events taken by consumers so far, summed over them.
    pub fn delivered(&self) -> u64 {
        self.fanout.delivered()
    }

    /// The most changes pending in one consumer.
    pub fn slowest_pending(&self) -> usize {
        self.fanout.slowest_pending()
    }
}

#[cfg(test)]
mod tests;
