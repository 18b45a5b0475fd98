//! The store and the fanout together, so that what a consumer starts from and what is pushed
//! to it afterwards neither overlap nor leave a gap: every change is applied to the store and
//! pushed to the cursors under the store's write lock, and a new consumer's snapshot is taken
//! under its read lock. Readers (`get`, `list`) share the read lock with each other; taking a
//! consumer's batch locks only that consumer's queue, so a slow consumer holds up nobody.

use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::fanout::{Cursor, Fanout};
use super::memory::{Footprint, arc_bytes};
use super::selector::Selector;
use super::store::{ChangeKind, Listed, Object, ObjectKey, Store};
use crate::error::Failure;

/// Progress of the informer as readers see it.
#[derive(Debug, Default)]
struct Progress {
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
    /// Since when (ms since the epoch) a watch stream has been read, while one is; None
    /// between watches (a backoff after a watch that ended, a reconnect), when the cache may
    /// be behind the server.
    watching_since: Option<u64>,
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
    pub watching_since: Option<u64>,
}

/// While it lives, the cache's health says a watch stream is being read (see
/// [`Cache::watching`]).
pub struct Watching(Arc<Cache>);

impl Drop for Watching {
    fn drop(&mut self) {
        self.0.progress().watching_since = None;
    }
}

/// One informer's cache and consumers.
#[derive(Debug)]
pub struct Cache {
    store: RwLock<Store>,
    fanout: Fanout,
    progress: Mutex<Progress>,
}

impl Cache {
    /// An empty, unsynced cache for an informer of `resource_path` (named in ERROR events).
    pub fn new(resource_path: String) -> Self {
        Self {
            store: RwLock::new(Store::new()),
            fanout: Fanout::new(resource_path),
            progress: Mutex::default(),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Store> {
        // Nothing panics while holding the lock; a poisoned store is still consistent.
        self.store.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Store> {
        self.store.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn progress(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Applies a watch event's object and pushes what changed; returns how many changes
    /// consumers see (0 for a repeat, 2 for a replacement).
    pub fn apply(&self, kind: ChangeKind, object: Object) -> usize {
        let applied = object.clone();
        let mut store = self.write();
        let changes = store.apply(kind, object);
        self.fanout.push(&changes);
        drop(store);
        let mut progress = self.progress();
        if !changes.is_empty() {
            progress.generation += 1;
        }
        progress.failure = None;
        if !applied.rv().is_empty() {
            progress.resource_version.clear();
            progress.resource_version.push_str(applied.rv());
        }
        changes.len()
    }

    /// A bookmark moved the resourceVersion on without a change.
    pub fn bookmark(&self, rv: &str) {
        let mut progress = self.progress();
        progress.failure = None;
        progress.resource_version.clear();
        progress.resource_version.push_str(rv);
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
        // Progress first: a consumer that takes the SYNCED and then reads the informer's
        // resourceVersion or `synced` finds them already at the list's.
        let mut progress = self.progress();
        progress.resource_version.clear();
        progress.resource_version.push_str(rv);
        progress.synced = true;
        progress.generation += 1;
        progress.failure = None;
        drop(progress);
        self.fanout.synced(rv, relist);
        drop(store);
        changes
    }

    /// A new consumer: one ADDED per cached object, then SYNCED at the current
    /// resourceVersion if the cache is synced, then live changes.
    pub fn subscribe(&self) -> Cursor {
        let store = self.read();
        let synced = {
            let progress = self.progress();
            if progress.synced {
                Some(progress.resource_version.as_str().into())
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

    /// The JSON array text of the objects in `namespace` (all when `None`) that `selector`
    /// selects.
    pub fn list(&self, namespace: Option<&str>, selector: &Selector) -> Vec<u8> {
        self.read().list_json(namespace, selector)
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
        let rv = self.progress().resource_version.capacity();
        (footprint, arc_bytes::<Self>() + fanout_bytes + rv)
    }

    /// Bytes of JSON text cached.
    pub fn cached_bytes(&self) -> usize {
        self.read().cached_bytes()
    }

    /// The last resourceVersion seen, bookmarks included.
    pub fn resource_version(&self) -> Option<String> {
        let progress = self.progress();
        (!progress.resource_version.is_empty()).then(|| progress.resource_version.clone())
    }

    /// The initial list is complete.
    pub fn is_synced(&self) -> bool {
        self.progress().synced
    }

    /// An ERROR event for every consumer; one not retried ends them all.
    pub fn error(&self, failure: &Failure, retrying: bool) {
        self.progress().failure = Some(LastFailure {
            failure: *failure,
            retrying,
        });
        self.fanout.error(failure, retrying);
    }

    /// A request succeeded after a failure (the server answered 200): the failure is over,
    /// even before an event or a bookmark shows it.
    pub fn recovered(&self) {
        let mut progress = self.progress();
        if progress.failure.is_some_and(|last| last.retrying) {
            progress.failure = None;
        }
    }

    /// Arms a notice of the next change (the reflector's `Reporter::changed`), unless the
    /// store has changed since `generation` already: then false, and the reader looks now.
    pub fn arm_change_notice(&self, generation: u64) -> bool {
        let mut progress = self.progress();
        if progress.generation != generation {
            return false;
        }
        progress.change_notice = true;
        true
    }

    /// Whether a notice of this change is due (it is then disarmed).
    pub fn take_change_notice(&self) -> bool {
        std::mem::take(&mut self.progress().change_notice)
    }

    /// Synced, the generation of the store, the failure not yet over, and since when a watch
    /// has been read.
    pub fn health(&self) -> Health {
        let progress = self.progress();
        Health {
            synced: progress.synced,
            generation: progress.generation,
            failure: progress.failure,
            watching_since: progress.watching_since,
        }
    }

    /// A watch stream is read from now until the guard is dropped. `initial`: the stream is a
    /// streaming list's, whose end (the initial-events-end bookmark) proves the cache current
    /// by itself, so it counts as watching since 0; a resumed watch first replays what changed
    /// while it was closed, so readers count from when it opened.
    pub fn watching(self: &Arc<Self>, initial: bool) -> Watching {
        let since = if initial {
            0
        } else {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| since.as_millis() as u64)
        };
        self.progress().watching_since = Some(since);
        Watching(Arc::clone(self))
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
mod tests {
    use super::*;

    fn object(name: &str, uid: &str, rv: &str, app: &str) -> Object {
        let text = format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"ns","uid":"{uid}","resourceVersion":"{rv}","labels":{{"app":"{app}"}}}}}}"#
        );
        Object::parse(text.as_bytes()).unwrap()
    }

    /// Pods `a` (app x) and `b` (app y) as a list.
    fn a_and_b() -> Listed {
        [object("a", "1", "5", "x"), object("b", "2", "6", "y")]
            .into_iter()
            .collect()
    }

    fn events(cursor: &Cursor) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        while let Some(batch) = cursor.take() {
            if batch.events.is_empty() {
                break;
            }
            let parsed: Vec<serde_json::Value> = serde_json::from_slice(&batch.events).unwrap();
            out.extend(parsed);
        }
        out
    }

    fn summary(events: &[serde_json::Value]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e["type"].as_str().unwrap() {
                "SYNCED" => format!("SYNCED {} {}", e["resourceVersion"], e["relist"]),
                t => format!(
                    "{t} {} {}",
                    e["object"]["metadata"]["name"], e["resourceVersion"]
                ),
            })
            .collect()
    }

    #[test]
    fn a_consumer_before_the_sync_gets_the_list_then_synced_and_one_after_a_snapshot() {
        let cache = Cache::new("/api/v1/pods".into());
        let early = cache.subscribe();
        assert!(early.take().is_none(), "nothing before the list");
        cache.replace(a_and_b(), "10", false);
        assert!(cache.is_synced());
        assert_eq!(
            summary(&events(&early)),
            [
                r#"ADDED "a" "5""#,
                r#"ADDED "b" "6""#,
                r#"SYNCED "10" false"#
            ]
        );
        cache.apply(ChangeKind::Modified, object("a", "1", "11", "x"));
        cache.bookmark("12");
        assert_eq!(cache.resource_version().as_deref(), Some("12"));
        let late = cache.subscribe();
        assert_eq!(
            summary(&events(&late)),
            [
                r#"ADDED "a" "11""#,
                r#"ADDED "b" "6""#,
                r#"SYNCED "12" false"#
            ],
            "a late consumer starts from the cache and the current resourceVersion"
        );
        assert_eq!(summary(&events(&early)), [r#"MODIFIED "a" "11""#]);
        assert_eq!(cache.consumers(), 2);
        drop(late);
        assert_eq!(cache.consumers(), 1);
    }

    #[test]
    fn health_counts_changes_and_keeps_a_failure_until_a_sign_of_life() {
        let cache = Cache::new("/api/v1/pods".into());
        let start = cache.health();
        assert!(!start.synced && start.failure.is_none());
        let unavailable = Failure::from_status(503);
        cache.error(&unavailable, true);
        assert_eq!(
            cache.health().failure,
            Some(LastFailure {
                failure: unavailable,
                retrying: true
            })
        );
        cache.replace(a_and_b(), "10", false);
        let synced = cache.health();
        assert!(synced.synced && synced.failure.is_none());
        assert!(synced.generation > start.generation);
        cache.apply(ChangeKind::Modified, object("a", "1", "5", "x"));
        assert_eq!(
            cache.health().generation,
            synced.generation,
            "a repeat changes nothing"
        );
        cache.apply(ChangeKind::Modified, object("a", "1", "11", "x"));
        let changed = cache.health().generation;
        assert!(changed > synced.generation);
        cache.error(&unavailable, true);
        cache.bookmark("12");
        assert!(
            cache.health().failure.is_none(),
            "a bookmark is a sign of life"
        );
        cache.error(&unavailable, true);
        cache.recovered();
        assert!(
            cache.health().failure.is_none(),
            "so is a request answered 200"
        );
        let now = cache.health().generation;
        assert!(!cache.arm_change_notice(now - 1), "changed since: look now");
        assert!(cache.arm_change_notice(now));
        assert!(cache.take_change_notice());
        assert!(!cache.take_change_notice(), "once per arming");
        let cache = Arc::new(cache);
        let watching = cache.watching(false);
        assert!(cache.health().watching_since.is_some());
        drop(watching);
        assert!(
            cache.health().watching_since.is_none(),
            "not between watches"
        );
        assert_eq!(cache.health().generation, changed);
        let refused = Failure::from_status(400);
        cache.error(&refused, false);
        cache.recovered();
        assert_eq!(
            cache.health().failure.map(|last| last.retrying),
            Some(false),
            "a terminal failure stays"
        );
    }

    #[test]
    fn a_relist_sends_only_the_difference_then_synced_relist() {
        let cache = Cache::new("/api/v1/pods".into());
        cache.replace(a_and_b(), "10", false);
        let cursor = cache.subscribe();
        events(&cursor);
        let changed = cache.replace(
            [object("a", "1", "5", "x"), object("c", "3", "20", "z")]
                .into_iter()
                .collect(),
            "21",
            true,
        );
        assert_eq!(changed, 2);
        assert_eq!(
            summary(&events(&cursor)),
            [
                r#"DELETED "b" "6""#,
                r#"ADDED "c" "20""#,
                r#"SYNCED "21" true"#
            ]
        );
    }

    #[test]
    fn reads_return_the_cached_text() {
        let cache = Cache::new("/api/v1/pods".into());
        cache.replace(a_and_b(), "10", false);
        let a = cache.get("ns", "a").unwrap();
        assert!(String::from_utf8_lossy(&a.text()).contains(r#""name":"a""#));
        assert!(cache.get("other", "a").is_none());
        let listed = cache.list(Some("ns"), &Selector::parse("app=y").unwrap());
        let parsed: Vec<serde_json::Value> = serde_json::from_slice(&listed).unwrap();
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0]["metadata"]["name"], "b");
        assert_eq!(cache.len(), 2);
        assert!(cache.cached_bytes() > 0);
    }

    #[test]
    fn a_terminal_error_ends_every_consumer_after_what_was_pending() {
        let cache = Cache::new("/api/v1/pods".into());
        let cursor = cache.subscribe();
        cache.apply(ChangeKind::Added, object("a", "1", "5", "x"));
        cache.error(&Failure::from_status(422), false);
        let batch = cursor.take().unwrap();
        assert!(batch.done, "the ERROR is the last thing this consumer sees");
        let parsed: Vec<serde_json::Value> = serde_json::from_slice(&batch.events).unwrap();
        assert_eq!(parsed[0]["type"], "ADDED");
        assert_eq!(parsed[1]["type"], "ERROR");
        assert_eq!(parsed[1]["retrying"], false);
        assert_eq!(parsed[1]["error"]["statusCode"], 422);
        let later = cache.subscribe().take().unwrap();
        assert!(later.done, "a later consumer ends at once");
        let parsed: Vec<serde_json::Value> = serde_json::from_slice(&later.events).unwrap();
        assert_eq!(parsed.len(), 1, "with the ERROR that ended the informer");
        assert_eq!(parsed[0]["retrying"], false);
    }
}
