//! The handles on a shared informer, for JavaScript: [`NativeInformer`] reads the cache (its
//! objects, state and counters) without following its events, and [`NativeInformerConsumer`]
//! follows them, its wake-ups going back through the registry's function (`binding/informer.rs`).

use std::sync::Arc;

use napi::bindgen_prelude::{Either, Either3};
use napi::{Error, Result};
use napi_derive::napi;
use tokio_util::sync::CancellationToken;

use super::invalid;
use super::way_back::JsListener;
use super::way_back::{WayBack, next_waiter};
use super::{Crossing, crossing};
use crate::batch::Batch;
use crate::informer::fanout::Cursor;
use crate::informer::fields::FieldSelector;
use crate::informer::registry::Handle;
use crate::informer::selector::Selector;
use crate::informer::store::Query;

/// What [`NativeInformer::state`] reports.
#[napi(object)]
pub struct InformerState {
    /// The initial list is cached.
    pub synced: bool,
    /// The informer ended (closed, or a terminal error).
    pub finished: bool,
    /// Bumped by every change to the cache: an answer computed from it holds while this does.
    pub generation: f64,
    /// Objects cached.
    pub size: u32,
    /// Bytes of JSON cached.
    pub cached_bytes: f64,
    /// Bytes the field indexes built over the cache take (an estimate; 0 until a field
    /// selector's first read): what a budget of the cache's memory counts beside `cached_bytes`.
    pub index_bytes: f64,
    /// Since when (ms since the epoch) a watch stream has been read, while one is (0 for a
    /// streaming list's, current once synced): absent between watches (a backoff, a
    /// reconnect), when the cache may be behind the server.
    pub watching_since: Option<f64>,
    /// How long (ms, on the monotonic clock) the watch being read has been open: what a reader
    /// decides by, since a stepped wall clock moves `watching_since` (Infinity for a streaming
    /// list's).
    pub watching_for_ms: Option<f64>,
    /// The last moment (ms since the epoch) the informer had proof its cache is current with
    /// the server (a probe answered, an event, a bookmark, a complete list): absent before the
    /// first. A stream open but silent leaves it behind.
    pub alive_at: Option<f64>,
    /// How long ago (ms, on the monotonic clock) that proof came: what a reader bounds the
    /// staleness of what it serves by.
    pub alive_ago_ms: Option<f64>,
    /// The failure not yet over: until a request succeeds, or an event or bookmark comes.
    pub error: Option<InformerStateError>,
}

/// A failure in [`InformerState`].
#[napi(object)]
pub struct InformerStateError {
    pub error_type: String,
    /// The HTTP status, or 0 below HTTP.
    pub status_code: u32,
    /// False when the informer gave up.
    pub retrying: bool,
}

/// One `informer()` handle.
#[napi]
pub struct NativeInformer {
    pub(super) handle: Handle<JsListener>,
    pub(super) id: u32,
    pub(super) back: Arc<WayBack>,
}

#[napi]
impl NativeInformer {
    /// The id its news carries (`handle`).
    #[napi]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// A new consumer: the cached objects as ADDED, SYNCED once synced, then changes.
    #[napi]
    pub fn subscribe(&self) -> NativeInformerConsumer {
        let cursor = self.handle.reflector().cache().subscribe();
        let id = next_waiter();
        let back = self.back.clone();
        cursor.set_waker(Box::new(move |batch| {
            let batch = match crossing(batch) {
                Either::A(text) => Either3::A(text),
                Either::B(batch) => Either3::B(batch),
            };
            // Fails only while the environment shuts down, when nobody is waiting any more.
            back.wake(id, batch);
        }));
        NativeInformerConsumer {
            cursor,
            cancel: CancellationToken::new(),
            id,
        }
    }

    /// The cached object's JSON text, if cached.
    #[napi]
    pub fn get(&self, namespace: String, name: String) -> Option<String> {
        self.handle
            .reflector()
            .cache()
            .get(&namespace, &name)
            .map(|object| String::from_utf8_lossy(&object.text()).into_owned())
    }

    /// The JSON array text of the cached objects in `namespace` (all when absent) that
    /// `label_selector` and `field_selector` select.
    #[napi]
    pub fn list(
        &self,
        namespace: Option<String>,
        label_selector: Option<String>,
        field_selector: Option<String>,
    ) -> Result<String> {
        let (selector, fields) = selectors_of(label_selector, field_selector, "list()")?;
        let text = self.handle.reflector().cache().list(Query {
            namespace: namespace.as_deref(),
            labels: &selector,
            fields: &fields,
        });
        String::from_utf8(text).map_err(|err| Error::from_reason(err.to_string()))
    }

    /// A SHA-256, in hex, of the text `list` would return for the same arguments, taken
    /// without making it: for a reader that only compares answers.
    #[napi]
    pub fn fingerprint(
        &self,
        namespace: Option<String>,
        label_selector: Option<String>,
        field_selector: Option<String>,
    ) -> Result<String> {
        let (selector, fields) = selectors_of(label_selector, field_selector, "fingerprint()")?;
        Ok(self.handle.reflector().cache().fingerprint(Query {
            namespace: namespace.as_deref(),
            labels: &selector,
            fields: &fields,
        }))
    }

    /// Objects cached.
    #[napi]
    pub fn size(&self) -> u32 {
        self.handle.reflector().cache().len() as u32
    }

    /// The last resourceVersion seen, bookmarks included.
    #[napi]
    pub fn resource_version(&self) -> Option<String> {
        self.handle.reflector().cache().resource_version()
    }

    /// The initial list is cached.
    #[napi]
    pub fn is_synced(&self) -> bool {
        self.handle.reflector().cache().is_synced()
    }

    /// The shared informer ended (closed, or a terminal error).
    #[napi]
    pub fn is_finished(&self) -> bool {
        self.handle.reflector().is_finished()
    }

    /// The informer's health, read without following its events: one call, no JSON.
    #[napi]
    pub fn state(&self) -> InformerState {
        let reflector = self.handle.reflector();
        let cache = reflector.cache();
        let health = cache.health();
        InformerState {
            synced: health.synced,
            finished: reflector.is_finished(),
            generation: health.generation as f64,
            size: cache.len() as u32,
            cached_bytes: cache.cached_bytes() as f64,
            index_bytes: cache.field_index_bytes() as f64,
            watching_since: health.watching_since.map(|since| since.epoch_ms as f64),
            watching_for_ms: health.watching_since.map(|since| since.age_ms()),
            alive_at: health.alive_at.map(|at| at.epoch_ms as f64),
            alive_ago_ms: health.alive_at.map(|at| at.age_ms()),
            error: health.failure.map(|last| InformerStateError {
                error_type: last.failure.error_type.as_str().to_owned(),
                status_code: u32::from(last.failure.status_code),
                retrying: last.retrying,
            }),
        }
    }

    /// Asks for one `changed` news at the next change of the cache; false (nothing armed)
    /// when it has changed since `generation` already, so the caller looks now.
    #[napi]
    pub fn arm_change_notice(&self, generation: f64) -> bool {
        self.handle
            .reflector()
            .cache()
            .arm_change_notice(generation as u64)
    }

    /// This handle joined an informer that was already running.
    #[napi]
    pub fn joined(&self) -> bool {
        self.handle.joined()
    }

    /// The counters as JSON text, with consumers, cached bytes and handles.
    #[napi]
    pub fn stats_json(&self) -> String {
        let reflector = self.handle.reflector();
        let mut value =
            serde_json::to_value(reflector.stats().snapshot()).unwrap_or(serde_json::Value::Null);
        if let Some(map) = value.as_object_mut() {
            map.insert("consumers".into(), reflector.cache().consumers().into());
            map.insert(
                "cachedBytes".into(),
                reflector.cache().cached_bytes().into(),
            );
            map.insert("handles".into(), self.handle.handles().into());
            map.insert("delivered".into(), reflector.cache().delivered().into());
            map.insert(
                "slowestConsumerPending".into(),
                reflector.cache().slowest_pending().into(),
            );
        }
        value.to_string()
    }

    /// Lets this handle go; the last one stops the informer.
    #[napi]
    pub fn close(&self) {
        self.handle.close();
    }
}

/// One consumer (`for await` over an informer), taken from like a watch.
#[napi]
pub struct NativeInformerConsumer {
    cursor: Cursor,
    cancel: CancellationToken,
    id: u32,
}

#[napi]
impl NativeInformerConsumer {
    /// The batch ready now (the common one as its events text, as a watch's `takeBatch()`), or
    /// `null`, and then the next batch (events, or the end) goes to the function of the
    /// registry's `connect` as `(id, batch)` once there is one: taken on the thread that brings
    /// it, with no task or thread hop per wait. One native call per wait, where taking and then
    /// arming were two. One wait at a time.
    #[napi(ts_return_type = "string | NativeBatch | null")]
    pub fn poll(&self) -> Option<Crossing> {
        if self.cancel.is_cancelled() {
            return Some(crossing(Batch::end()));
        }
        match self.cursor.take() {
            Some(batch) => Some(crossing(batch)),
            None => {
                // Arming looks again under the queue's lock: a batch that came in between is
                // sent at once rather than missed.
                self.cursor.arm();
                None
            }
        }
    }

    /// The id its wake-ups carry.
    #[napi]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Ends this consumer now; idempotent.
    #[napi]
    pub fn cancel(&self) {
        self.cancel.cancel();
        self.cursor.close();
    }
}

/// The label and field selectors `method` was given (none selects everything).
fn selectors_of(
    label_selector: Option<String>,
    field_selector: Option<String>,
    method: &str,
) -> Result<(Arc<Selector>, FieldSelector)> {
    let selector = selector_of(label_selector, method)?;
    let fields = FieldSelector::parse(field_selector.as_deref().unwrap_or("")).map_err(|err| {
        invalid(format!(
            "kube-watch-native: {method} fieldSelector is not valid: {err}"
        ))
    })?;
    Ok((selector, fields))
}

/// The label selector `method` was given (none selects everything).
fn selector_of(label_selector: Option<String>, method: &str) -> Result<Arc<Selector>> {
    Selector::parse_shared(label_selector.as_deref().unwrap_or("")).map_err(|err| {
        invalid(format!(
            "kube-watch-native: {method} labelSelector is not valid: {err}"
        ))
    })
}
