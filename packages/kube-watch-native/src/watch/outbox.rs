//! The queue between a watch's task and JavaScript.
//!
//! The task appends every event to an open [`BatchBuilder`] as it arrives, sealing it at
//! [`MAX_BATCH_BYTES`](crate::batch::MAX_BATCH_BYTES); JavaScript takes whole batches. All the
//! copying happens on the task's thread, so taking a batch is a pointer move: cheap enough to
//! do synchronously from the main thread whenever one is ready, and to wait for (a Promise)
//! only when none is. A partly filled batch is taken as it is: nothing waits for a batch to
//! fill.
//!
//! The events held here cost queue budget ([`QUEUE_BUDGET_BYTES`]); when it is spent the task
//! waits, stops reading the body, and the server's writes block. Taking a batch returns its
//! budget.
//!
//! When nothing is ready, JavaScript's [poll](Outbox::poll) arms the queue instead of waiting
//! on it: the push (or the end) that makes a batch ready calls the queue's [`Wake`], once, on
//! the thread that brought it. No task waits and no Promise exists per wait; the binding's wake
//! names the watch on the watcher's one thread-safe function (`binding/way_back.rs`), and
//! JavaScript then polls again. The batch is taken then, not at the wake-up as an informer
//! consumer's is: what arrives while the wake-up crosses joins it, so a stream that JavaScript
//! keeps up with still crosses in batches, not an event at a time.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::batch::{Batch, BatchBuilder};
use crate::error::Failure;

/// Event text a watch may hold while JavaScript is busy.
pub const QUEUE_BUDGET_BYTES: usize = 4 * 1024 * 1024;

/// Called, on whichever thread made a batch (or the end) ready, for an armed queue.
pub type Wake = Box<dyn Fn() + Send + Sync>;

/// One watch's queue; the task writes, JavaScript takes.
pub(crate) struct Outbox {
    state: Mutex<State>,
    /// Signalled on every change, for a consumer waiting for one.
    changed: Notify,
    /// What an armed queue calls; set once by [`Outbox::set_wake`].
    wake: OnceLock<Wake>,
    budget: Semaphore,
    /// The budget's size: the most event text it holds.
    limit: usize,
    /// Named in generated ERROR events.
    resource_path: String,
}

/// What is waiting for JavaScript.
#[derive(Default)]
struct State {
    /// Full batches, oldest first.
    sealed: VecDeque<(Batch, usize)>,
    /// The batch still growing; taken as it is when nothing is sealed.
    open: BatchBuilder,
    /// The task has ended: nothing more will be added.
    closed: bool,
    /// The wake is owed at the next change that makes something ready (see [`Outbox::arm`]).
    armed: bool,
}

impl State {
    /// [`Outbox::take`] would give something now.
    fn ready(&self) -> bool {
        !self.sealed.is_empty() || !self.open.is_empty() || self.closed
    }
}

impl Outbox {
    /// An empty queue for a watch of `resource_path`.
    pub(crate) fn new(resource_path: String) -> Self {
        Self::with_budget(resource_path, QUEUE_BUDGET_BYTES)
    }

    /// An empty queue for a watch of `resource_path` that holds at most `limit` bytes of event
    /// text (a shared log's reader keeps little: the shared follow keeps the rest).
    pub(crate) fn with_budget(resource_path: String, limit: usize) -> Self {
        Self {
            state: Mutex::default(),
            changed: Notify::new(),
            wake: OnceLock::new(),
            budget: Semaphore::new(limit),
            limit,
            resource_path,
        }
    }

    /// Queues a validated watch line, first waiting until the budget has room for it.
    pub(crate) async fn push_line(&self, line: &[u8], resource_version: Option<&str>) {
        let cost = line.len().clamp(1, self.limit);
        // The budget is never closed, and its size bounds `cost`, so this cannot fail.
        let Ok(permit) = self.budget.acquire_many(cost as u32).await else {
            return;
        };
        // The batch carries the budget from here; taking it gives the bytes back.
        permit.forget();
        self.update(|open| open.push_line(line, resource_version, cost));
    }

    /// Queues a log's line (its JSON string body, escaped, without quotes), joined to the run of
    /// lines the open batch ends with, first waiting until the budget has room for it.
    /// `plain`: the line needed no escape.
    pub(crate) async fn push_joined(&self, escaped: &[u8], plain: bool) {
        let cost = (escaped.len() + 2).clamp(1, self.limit);
        // The budget is never closed, and its size bounds `cost`, so this cannot fail.
        let Ok(permit) = self.budget.acquire_many(cost as u32).await else {
            return;
        };
        permit.forget();
        self.update(|open| open.push_joined(escaped, cost, plain));
    }

    /// Queues the watch's ERROR event.
    pub(crate) fn push_failure(&self, failure: &Failure) {
        self.push_generated(&failure.event_json(&self.resource_path));
    }

    /// Queues an item made here (an ERROR event), outside the budget: one per stream.
    pub(crate) fn push_generated(&self, json: &str) {
        self.update(|open| open.push_generated(json));
    }

    /// Queues a warning for the logger.
    pub(crate) fn push_warning(&self, text: String) {
        self.update(|open| open.push_warning(text));
    }

    /// Marks the end: once the queue is drained, batches say `done`.
    pub(crate) fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        self.signal(state);
    }

    fn update(&self, change: impl FnOnce(&mut BatchBuilder)) {
        let mut state = self.lock();
        change(&mut state.open);
        if state.open.is_full() {
            // A stream that filled a batch is likely to fill the next one too.
            let full = std::mem::replace(&mut state.open, BatchBuilder::sized_for_a_full_batch());
            state.sealed.push_back(full.finish());
        }
        self.signal(state);
    }

    /// Tells whoever waits after a change to `state` (whose lock this lets go first): a task
    /// waiting in [`Outbox::next`], and the wake of an armed queue that now has something.
    fn signal(&self, mut state: MutexGuard<'_, State>) {
        let owed = state.armed && state.ready();
        if owed {
            state.armed = false;
        }
        drop(state);
        self.changed.notify_one();
        if owed {
            self.call_wake();
        }
    }

    fn call_wake(&self) {
        if let Some(wake) = self.wake.get() {
            wake();
        }
    }

    /// What [`Outbox::poll`] arms; set once, later calls are ignored.
    pub(crate) fn set_wake(&self, wake: Wake) {
        let _ = self.wake.set(wake);
    }

    /// The batch ready now (or the end); else `None`, and the wake is called, once, when one is.
    /// Polling twice before the wake still wakes once.
    pub(crate) fn poll(&self) -> Option<Batch> {
        let mut state = self.lock();
        match take_from(&mut state) {
            Some(taken) => {
                drop(state);
                Some(self.hand_over(taken))
            }
            None => {
                state.armed = true;
                None
            }
        }
    }

    /// Calls the wake now if the queue is armed (a cancelled watch's end is ready at once,
    /// though nothing changed here).
    pub(crate) fn interrupt(&self) {
        let mut state = self.lock();
        let owed = std::mem::take(&mut state.armed);
        drop(state);
        if owed {
            self.call_wake();
        }
    }

    /// The oldest ready batch, the end, or `None` when JavaScript has to wait.
    pub(crate) fn take(&self) -> Option<Batch> {
        let taken = take_from(&mut self.lock())?;
        Some(self.hand_over(taken))
    }

    /// Finishes a take outside the lock: the batch's budget goes back.
    fn hand_over(&self, taken: Taken) -> Batch {
        drop(taken.spare);
        self.budget.add_permits(taken.held);
        taken.batch
    }

    /// Waits for a batch or the end; the end at once after `cancel`.
    pub(crate) async fn next(&self, cancel: &CancellationToken) -> Batch {
        crate::batch::wait_for_batch(&self.changed, cancel, || self.take()).await
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock; a poisoned state is still consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A batch taken under the queue's lock, its budget still held.
struct Taken {
    batch: Batch,
    /// Budget the batch holds.
    held: usize,
    /// The emptied open batch's buffer, freed outside the lock.
    spare: Option<BatchBuilder>,
}

/// The oldest ready batch of `state`, the end, or `None`.
fn take_from(state: &mut State) -> Option<Taken> {
    let (mut batch, held) = match state.sealed.pop_front() {
        Some(sealed) => sealed,
        None if !state.open.is_empty() => std::mem::take(&mut state.open).finish(),
        None if state.closed => {
            return Some(Taken {
                batch: Batch::end(),
                held: 0,
                spare: None,
            });
        }
        None => return None,
    };
    let drained = state.sealed.is_empty() && state.open.is_empty();
    batch.done = state.closed && drained;
    // JavaScript has caught up: a watch that goes quiet now keeps no batch-sized buffer.
    let spare = drained.then(|| std::mem::take(&mut state.open));
    Some(Taken { batch, held, spare })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::batch::{MAX_BATCH_BYTES, padded_line};

    const LINE: &[u8] = br#"{"type":"ADDED","object":{}}"#;

    fn event_count(batch: &Batch) -> usize {
        if batch.events.is_empty() {
            return 0;
        }
        let parsed: Vec<serde_json::Value> = serde_json::from_slice(&batch.events).unwrap();
        parsed.len()
    }

    #[tokio::test]
    async fn nothing_ready_is_none_and_a_partial_batch_is_taken_as_it_is() {
        let outbox = Outbox::new("/p".into());
        assert!(outbox.take().is_none());
        outbox.push_line(LINE, Some("1")).await;
        let batch = outbox
            .take()
            .expect("the one event, without waiting for more");
        assert_eq!(event_count(&batch), 1);
        assert!(!batch.done);
        assert!(outbox.take().is_none());
    }

    #[tokio::test]
    async fn full_batches_are_sealed_in_order_and_the_last_one_says_done() {
        let outbox = Outbox::new("/p".into());
        let line = padded_line(4000);
        let total = 3 * MAX_BATCH_BYTES / line.len();
        for _ in 0..total {
            outbox.push_line(line.as_bytes(), None).await;
        }
        outbox.push_warning("w".into());
        outbox.push_failure(&Failure::from_status(410));
        outbox.close();
        let mut batches = Vec::new();
        while let Some(batch) = outbox.take() {
            let done = batch.done;
            batches.push(batch);
            if done {
                break;
            }
        }
        assert!(batches.len() >= 3, "{} batches", batches.len());
        assert!(
            batches
                .iter()
                .all(|b| b.events.len() <= MAX_BATCH_BYTES + line.len() + 2)
        );
        let counted: usize = batches.iter().map(event_count).sum();
        assert_eq!(counted, total + 1, "every line and the ERROR event");
        let last = batches.last().unwrap();
        assert!(last.events_text().contains(r#""statusCode":410"#));
        assert_eq!(last.warnings, vec!["w".to_owned()]);
        assert!(batches[..batches.len() - 1].iter().all(|b| !b.done));
        assert!(outbox.take().unwrap().done, "the end stays the end");
    }

    #[tokio::test]
    async fn a_drained_queue_keeps_no_batch_sized_buffer() {
        let outbox = Outbox::new("/p".into());
        let line = padded_line(4000);
        while outbox.lock().sealed.is_empty() {
            outbox.push_line(line.as_bytes(), None).await;
        }
        assert!(
            outbox.lock().open.capacity() >= MAX_BATCH_BYTES,
            "busy: the next batch is sized"
        );
        while let Some(batch) = outbox.take() {
            if batch.events.is_empty() {
                break;
            }
        }
        assert_eq!(outbox.lock().open.capacity(), 0, "quiet: nothing reserved");
    }

    #[tokio::test]
    async fn the_budget_blocks_the_task_until_javascript_takes_a_batch() {
        let outbox = Arc::new(Outbox::new("/p".into()));
        let line = padded_line(100_000);
        let fits = QUEUE_BUDGET_BYTES / line.len();
        for _ in 0..fits {
            outbox.push_line(line.as_bytes(), None).await;
        }
        let pusher = {
            let outbox = outbox.clone();
            let line = line.clone();
            tokio::spawn(async move { outbox.push_line(line.as_bytes(), None).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!pusher.is_finished(), "the budget is spent, the task waits");
        assert!(outbox.take().is_some());
        tokio::time::timeout(Duration::from_secs(1), pusher)
            .await
            .expect("taking a batch gives its budget back")
            .unwrap();
    }

    /// An outbox whose wake counts its calls.
    fn counted() -> (Outbox, Arc<std::sync::atomic::AtomicUsize>) {
        let outbox = Outbox::new("/p".into());
        let wakes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = wakes.clone();
        outbox.set_wake(Box::new(move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }));
        (outbox, wakes)
    }

    #[tokio::test]
    async fn a_poll_that_finds_nothing_arms_one_wake_at_the_push_that_readies_a_batch() {
        use std::sync::atomic::Ordering::SeqCst;
        let (outbox, wakes) = counted();
        assert!(outbox.poll().is_none(), "nothing ready: armed");
        assert!(outbox.poll().is_none(), "armed twice before the wake");
        assert_eq!(wakes.load(SeqCst), 0);
        outbox.push_line(LINE, Some("1")).await;
        assert_eq!(wakes.load(SeqCst), 1, "woken by the push");
        outbox.push_line(LINE, Some("2")).await;
        assert_eq!(wakes.load(SeqCst), 1, "once per poll that armed");
        let batch = outbox.poll().expect("ready: taken now, nothing armed");
        assert_eq!(
            event_count(&batch),
            2,
            "what came while the wake crossed joins the batch"
        );
        assert!(outbox.poll().is_none());
        outbox.close();
        assert_eq!(wakes.load(SeqCst), 2, "woken by the end");
        assert!(outbox.poll().unwrap().done);
        assert!(outbox.poll().unwrap().done, "the end stays the end");
        outbox.interrupt();
        assert_eq!(
            wakes.load(SeqCst),
            2,
            "an interrupt wakes only an armed queue"
        );
    }

    #[tokio::test]
    async fn an_interrupt_wakes_an_armed_queue_once() {
        use std::sync::atomic::Ordering::SeqCst;
        let (outbox, wakes) = counted();
        outbox.interrupt();
        assert_eq!(wakes.load(SeqCst), 0, "not armed: no wake");
        assert!(outbox.poll().is_none());
        outbox.interrupt();
        outbox.interrupt();
        assert_eq!(wakes.load(SeqCst), 1);
        outbox.push_warning("w".into());
        assert_eq!(wakes.load(SeqCst), 1, "the interrupt used up the arming");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_waiting_consumer_wakes_for_the_next_event_and_for_cancel() {
        let outbox = Arc::new(Outbox::new("/p".into()));
        let cancel = CancellationToken::new();
        let waiter = {
            let (outbox, cancel) = (outbox.clone(), cancel.clone());
            tokio::spawn(async move { outbox.next(&cancel).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        outbox.push_line(LINE, None).await;
        let batch = tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("woken by the event")
            .unwrap();
        assert_eq!(event_count(&batch), 1);

        let waiter = {
            let (outbox, cancel) = (outbox.clone(), cancel.clone());
            tokio::spawn(async move { outbox.next(&cancel).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        cancel.cancel();
        let batch = tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("woken by the cancel")
            .unwrap();
        assert!(batch.done);
        outbox.push_line(LINE, None).await;
        assert!(
            outbox.next(&cancel).await.events.is_empty(),
            "after cancel, events are dropped"
        );
    }
}
