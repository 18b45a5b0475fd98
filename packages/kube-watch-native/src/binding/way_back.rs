//! The registry's way back to JavaScript: one thread-safe function per registry (per watcher),
//! called with two arrays (who each message is from, and the messages), the informer
//! consumers' wake-ups gathered for it, or with a plain watch's id alone, sent at once (see
//! `binding/registry.rs`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use napi::Status;
use napi::bindgen_prelude::{Either, Either3, FnArgs};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};

use super::{BatchText, NativeBatch};

/// While informer consumers' wake-ups keep coming, at most one call of the registry's function
/// per this long by default (a watcher's `gatherMs` sets its own): a change waits at most this
/// long when the last call was less than this long ago.
///
/// 50 ms, not the 20 ms it was: a wake-up of the main thread costs it several times the work
/// of a change, even when it does nothing (that is the machine's and Node's, not this addon's:
/// `bench/wake-floor.js`), so at 100 changes a second the wake-ups, not the changes, were most
/// of the cost. The price is latency while changes keep coming; the first change after a quiet
/// spell still crosses at once, and news is never held. The interval swept, with its figures:
/// bench/README.md, "Where a change's main-thread time goes, and wake-ups gathered over 50 ms";
/// what a short one costs: "Latency under 10 ms costs a wake-up per change".
pub const WAKE_UP_INTERVAL: Duration = Duration::from_millis(50);

/// One message: a waiting consumer's next batch (taken on the thread that brought it), or a
/// handle's news as JSON text.
pub type Item = Either3<BatchText, NativeBatch, String>;
/// What the registry's function is called with: who each message is from (a consumer's id,
/// from 1, or 0 for news) and the messages, in the order sent; or a waiting watch's id alone,
/// its batch ready to poll (no array to build for the commonest call of a watcher's watches).
pub type Message = FnArgs<(Either<u32, Vec<u32>>, Option<Vec<Item>>)>;
/// The registry's way back: `(from: number | number[], messages?: (string | NativeBatch)[]) =>
/// void`, weak.
pub type Back = ThreadsafeFunction<Message, (), Message, Status, false, true>;

/// Ids of whatever waits (informer consumers and plain watches), process-wide: a wake-up names
/// its waiter by it, and JavaScript keeps every waiter of a watcher in one map.
static NEXT_WAITER: AtomicU32 = AtomicU32::new(1);

/// A new waiter id (from 1: 0 is news).
pub fn next_waiter() -> u32 {
    NEXT_WAITER.fetch_add(1, Ordering::Relaxed)
}

/// The registry's way back to JavaScript: its function, and the wake-ups gathered for its next
/// call.
pub struct WayBack {
    back: Back,
    /// Gathering: at most one call of consumers' wake-ups per this long.
    interval: Duration,
    /// Where a gathered call is sent from when it is due.
    runtime: tokio::runtime::Handle,
    gathered: Mutex<Gathered>,
}

#[derive(Default)]
struct Gathered {
    from: Vec<u32>,
    items: Vec<Item>,
    /// When the function was last called.
    last_call: Option<Instant>,
    /// A task sends what is gathered when it is due.
    due: bool,
}

impl WayBack {
    /// Its function, how long wake-ups are gathered, and where a gathered call is sent from
    /// when it is due.
    pub fn new(back: Back, interval: Duration, runtime: tokio::runtime::Handle) -> Self {
        Self {
            back,
            interval,
            runtime,
            gathered: Mutex::default(),
        }
    }

    /// Sends consumer `from`'s wake-up: now, or with the next call when the last one was
    /// less than the interval ago.
    pub fn wake(self: &Arc<Self>, from: u32, batch: Item) {
        let mut gathered = lock(&self.gathered);
        gathered.from.push(from);
        gathered.items.push(batch);
        if gathered.due {
            return;
        }
        if let Some(last) = gathered.last_call {
            let at = last + self.interval;
            if Instant::now() < at {
                gathered.due = true;
                let way_back = Arc::clone(self);
                self.runtime.spawn(async move {
                    tokio::time::sleep_until(at.into()).await;
                    way_back.call(lock(&way_back.gathered), None);
                });
                return;
            }
        }
        self.call(gathered, None);
    }

    /// Sends waiting watch `from`'s wake-up (its batch is ready to poll) now, after whatever
    /// was gathered before it: a plain watch crosses as soon as it has something, as it always
    /// did.
    pub fn ready(&self, from: u32) {
        let mut gathered = lock(&self.gathered);
        self.call_gathered(&mut gathered);
        gathered.last_call = Some(Instant::now());
        let _ = self.back.call(
            (Either::A(from), None).into(),
            ThreadsafeFunctionCallMode::NonBlocking,
        );
    }

    /// Sends a handle's news in a call of its own, after whatever was gathered before it;
    /// false when the function can no longer be called (the environment shuts down).
    pub fn news(&self, text: String) -> bool {
        let gathered = lock(&self.gathered);
        self.call(gathered, Some(text))
    }

    /// Calls the function with what is gathered, then with `news` if any. Under the lock, so
    /// calls from different threads keep the order their messages were sent in.
    fn call(&self, mut gathered: MutexGuard<'_, Gathered>, news: Option<String>) -> bool {
        let mut ok = self.call_gathered(&mut gathered);
        if let Some(text) = news {
            ok = self.back.call(
                (Either::B(vec![0]), Some(vec![Either3::C(text)])).into(),
                ThreadsafeFunctionCallMode::NonBlocking,
            ) == Status::Ok;
        }
        ok
    }

    /// Calls the function with what is gathered, if anything is (its lock held by the caller).
    fn call_gathered(&self, gathered: &mut Gathered) -> bool {
        gathered.due = false;
        if gathered.items.is_empty() {
            return true;
        }
        gathered.last_call = Some(Instant::now());
        let from = std::mem::take(&mut gathered.from);
        let items = std::mem::take(&mut gathered.items);
        self.back.call(
            (Either::B(from), Some(items)).into(),
            ThreadsafeFunctionCallMode::NonBlocking,
        ) == Status::Ok
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding it; the data stays consistent.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One handle's way back to JavaScript: the registry's function, and its own id.
pub struct JsListener {
    handle: u32,
    way_back: Arc<WayBack>,
}

impl JsListener {
    pub(super) fn new(handle: u32, way_back: Arc<WayBack>) -> Self {
        JsListener { handle, way_back }
    }

    pub(super) fn send(&self, kind: &str, message: Option<&str>, id: Option<u64>) -> bool {
        let value = serde_json::json!({
            "handle": self.handle, "kind": kind, "message": message, "id": id
        });
        self.way_back.news(value.to_string())
    }
}
