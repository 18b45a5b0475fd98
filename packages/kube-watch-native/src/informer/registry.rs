//! Shared informers: one reflector and one cache per key (cluster URL, identity, resource,
//! namespace, selectors, fields), handed out as reference-counted handles, like client-go's
//! shared informer factory. The last handle's `close()` stops the reflector. Each handle
//! brings a listener (where its logger and `synced` promise live); the shared informer's news goes
//! to every listener, its warnings and credential requests to the first one still open.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use std::mem::size_of;

use super::memory::{Fixed, Footprint, arc_bytes, hash_table_bytes};
use super::reflector::Reflector;
use crate::engine::ListMemory;
use crate::engine::stats::{SeriesLabels, Totals};

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks; the data stays consistent.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The listeners of a shared informer's open handles, in the order they opened.
#[derive(Debug)]
pub struct Listeners<S> {
    list: Mutex<Vec<(u64, Arc<S>)>>,
}

impl<S> Default for Listeners<S> {
    fn default() -> Self {
        Self {
            list: Mutex::new(Vec::new()),
        }
    }
}

impl<S> Listeners<S> {
    /// The oldest open handle's listener.
    pub fn first(&self) -> Option<Arc<S>> {
        lock(&self.list).first().map(|(_, s)| s.clone())
    }

    /// Every open handle's listener.
    pub fn all(&self) -> Vec<Arc<S>> {
        lock(&self.list).iter().map(|(_, s)| s.clone()).collect()
    }

    /// Lets every listener go (the informer ended: nothing more will be said).
    pub fn clear(&self) {
        let drained: Vec<_> = std::mem::take(&mut *lock(&self.list));
        drop(drained);
    }

    fn add(&self, id: u64, listener: Arc<S>) {
        lock(&self.list).push((id, listener));
    }

    fn remove(&self, id: u64) {
        let removed: Vec<_> = {
            let mut list = lock(&self.list);
            let (gone, kept) = std::mem::take(&mut *list)
                .into_iter()
                .partition(|(i, _)| *i == id);
            *list = kept;
            gone
        };
        drop(removed);
    }
}

/// One shared informer.
#[derive(Debug)]
struct Shared<S> {
    key: String,
    /// What its metric series are named by.
    labels: SeriesLabels,
    reflector: Reflector,
    listeners: Arc<Listeners<S>>,
    handles: Mutex<usize>,
    registry: Weak<Mutex<Informers<S>>>,
}

/// The registry's informers by key, and the counts of closed ones by series: one lock, so that
/// a reader sees a closing informer either live or in the totals, never both or neither.
#[derive(Debug)]
struct Informers<S> {
    by_key: HashMap<String, Arc<Shared<S>>>,
    retired: HashMap<SeriesLabels, Totals>,
}

impl<S> Informers<S> {
    /// Keeps the counts of `shared`, which has left `by_key`, in its series (under the same
    /// lock: see [`Informers`]).
    fn retire(&mut self, shared: &Shared<S>) {
        let reflector = &shared.reflector;
        self.retired
            .entry(shared.labels.clone())
            .or_default()
            .add(&reflector.stats().snapshot(), reflector.cache().delivered());
    }
}

impl<S> Default for Informers<S> {
    fn default() -> Self {
        Self {
            by_key: HashMap::new(),
            retired: HashMap::new(),
        }
    }
}

/// The shared informers of one watcher.
#[derive(Debug)]
pub struct Registry<S> {
    informers: Arc<Mutex<Informers<S>>>,
    memory: Arc<ListMemory>,
    next_id: AtomicU64,
}

impl<S> Default for Registry<S> {
    fn default() -> Self {
        Self {
            informers: Arc::default(),
            memory: Arc::default(),
            next_id: AtomicU64::new(1),
        }
    }
}

impl<S: Send + Sync + 'static> Registry<S> {
    /// A handle on the informer for `key`: the running one, or one `start` makes (given the
    /// listeners it reports to and the watcher's memory of clusters without streaming lists).
    /// `listener` is this handle's; it is in the listeners before `start` runs. `labels` name a new
    /// informer's metric series (the key determines them, so a joined one has the same).
    pub fn open(
        &self,
        key: String,
        labels: SeriesLabels,
        listener: S,
        start: impl FnOnce(Arc<Listeners<S>>, Arc<ListMemory>) -> Reflector,
    ) -> Handle<S> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let listener = Arc::new(listener);
        let mut informers = lock(&self.informers);
        if let Some(shared) = informers.by_key.get(&key)
            && !shared.reflector.is_finished()
        {
            *lock(&shared.handles) += 1;
            shared.listeners.add(id, listener);
            return Handle {
                shared: shared.clone(),
                id,
                closed: AtomicBool::new(false),
                joined: true,
            };
        }
        let listeners = Arc::new(Listeners::default());
        listeners.add(id, listener);
        let reflector = start(listeners.clone(), self.memory.clone());
        let shared = Arc::new(Shared {
            key: key.clone(),
            labels,
            reflector,
            listeners,
            handles: Mutex::new(1),
            registry: Arc::downgrade(&self.informers),
        });
        if let Some(ended) = informers.by_key.insert(key, shared.clone()) {
            // An ended informer with handles still open, replaced: its counts stay.
            informers.retire(&ended);
        }
        Handle {
            shared,
            id,
            closed: AtomicBool::new(false),
            joined: false,
        }
    }

    /// Calls `live` with each shared informer's labels, reflector and open handles (ended ones
    /// included until their last handle closes), and `retired` with the counts of the closed
    /// ones per series. The registry is not locked while they run.
    pub fn each(
        &self,
        mut live: impl FnMut(&SeriesLabels, &Reflector, usize),
        mut retired: impl FnMut(&SeriesLabels, &Totals),
    ) {
        let (informers, totals) = {
            let informers = lock(&self.informers);
            let live: Vec<Arc<Shared<S>>> = informers.by_key.values().cloned().collect();
            (live, informers.retired.clone())
        };
        for (labels, totals) in &totals {
            retired(labels, totals);
        }
        for shared in informers {
            live(&shared.labels, &shared.reflector, *lock(&shared.handles));
        }
    }

    /// The memory of every shared informer in the registry (ended ones whose handles are still
    /// open included), added up, with the fixed cost by part (see [`Footprint`], [`Fixed`]).
    /// The registry's own part of each informer's fixed cost is its entry: the shared struct,
    /// key, labels, listeners, and its share of the table by key. What the informers learn of their
    /// clusters together ([`ListMemory::bytes`]) is the footprint's `shared_bytes`.
    pub fn memory(&self) -> (Footprint, Fixed) {
        let (informers, table) = {
            let informers = lock(&self.informers);
            let table = hash_table_bytes(
                informers.by_key.capacity(),
                size_of::<(String, Arc<Shared<S>>)>(),
            );
            let live: Vec<Arc<Shared<S>>> = informers.by_key.values().cloned().collect();
            (live, table)
        };
        let mut footprint = Footprint::default();
        let mut fixed = Fixed {
            registry_bytes: table,
            ..Fixed::default()
        };
        for shared in informers {
            let (mut one, mut parts) = shared.reflector.footprint();
            let labels = &shared.labels;
            let listeners = lock(&shared.listeners.list);
            parts.registry_bytes = arc_bytes::<Shared<S>>()
                + shared.key.capacity()
                + labels.cluster.capacity()
                + labels.group.capacity()
                + labels.version.capacity()
                + labels.resource.capacity()
                + arc_bytes::<Listeners<S>>()
                + listeners.capacity() * size_of::<(u64, Arc<S>)>()
                + listeners.len() * arc_bytes::<S>();
            drop(listeners);
            one.fixed_bytes = parts.total();
            footprint += one;
            fixed += parts;
        }
        footprint.fixed_bytes += table;
        footprint.shared_bytes = self.memory.bytes();
        (footprint, fixed)
    }

    /// Shared informers running now.
    pub fn running(&self) -> usize {
        lock(&self.informers)
            .by_key
            .values()
            .filter(|s| !s.reflector.is_finished())
            .count()
    }
}

/// One `informer()` call's share of a shared informer.
#[derive(Debug)]
pub struct Handle<S> {
    shared: Arc<Shared<S>>,
    id: u64,
    closed: AtomicBool,
    joined: bool,
}

impl<S> Handle<S> {
    /// The shared reflector (cache, stats).
    pub fn reflector(&self) -> &Reflector {
        &self.shared.reflector
    }

    /// This handle joined an informer that was already running.
    pub fn joined(&self) -> bool {
        self.joined
    }

    /// Handles open on the shared informer.
    pub fn handles(&self) -> usize {
        *lock(&self.shared.handles)
    }

    /// This handle is closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Lets this handle go: its listener leaves, and the last handle stops the reflector and
    /// leaves the registry. Idempotent.
    pub fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        self.shared.listeners.remove(self.id);
        let mut handles = lock(&self.shared.handles);
        *handles -= 1;
        if *handles > 0 {
            return;
        }
        drop(handles);
        self.shared.reflector.stop();
        if let Some(registry) = self.shared.registry.upgrade() {
            let mut informers = lock(&registry);
            if informers
                .by_key
                .get(&self.shared.key)
                .is_some_and(|s| Arc::ptr_eq(s, &self.shared))
            {
                informers.by_key.remove(&self.shared.key);
                informers.retire(&self.shared);
            }
        }
    }
}

impl<S> Drop for Handle<S> {
    fn drop(&mut self) {
        self.close();
    }
}
