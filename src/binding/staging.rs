//! Reusable batch strings: how a busy watch's batches reach `JSON.parse` without a copy on the
//! main thread.
//!
//! Copying a 64 KiB batch into a fresh V8 string on the main thread costs a few percent of the
//! main thread's time per event: the bytes were just written on another core, and pulling them
//! across is most of that cost. V8 reading them where they lie (an external string) hides it,
//! because the parser's reads overlap the transfer. But V8 puts external strings in old space:
//! one per batch, and their memory waits for a full collection (a slow consumer grew RSS by
//! 176 MiB in 20 s).
//!
//! So a busy watch has [`SLOTS`] buffers, made once, that the watch's task copies sealed
//! batches into on its own thread ([`Stager::stage`]); JavaScript takes a staged batch as an
//! external string over its slot's buffer and parses it at once; the slot is free again at the
//! next take. A string's length is fixed, so each slot keeps one string per length class (a
//! multiple of [`LENGTH_STEP`]) over the same buffer, made on first use, and the task pads the
//! gap up to the class with spaces (JSON allows trailing white space; V8 skips it at ~0.5 ns a
//! byte, parsing costs ~5). Batches not staged in time, or fitting no slot, are copied as
//! before. A watch that goes quiet lets its buffers go.
//!
//! The contract with JavaScript: a string from `takeBatch()` is read at once and not kept, as
//! `lib/event-stream.js` does; its bytes change once the next batch is taken.

use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use napi::{Env, Error, Result, Status, sys};

use crate::batch::Batch;
use crate::watch::Stager;

/// Buffers per busy watch: one being parsed, two being filled ahead of it, so the task has
/// two batches' parsing time to stage the next one.
const SLOTS: usize = 3;

/// Only batches this long get slots: shorter ones are cheap to copy, and only a busy stream
/// should hold buffers.
const SLOT_MIN_BYTES: usize = 32 * 1024;

/// Nor do batches longer than this: a watch should not hold megabytes for one huge object.
const SLOT_MAX_BYTES: usize = 512 * 1024;

/// Strings over a slot's buffer come in lengths that are multiples of this: at most this much
/// padding to skip per batch.
const LENGTH_STEP: usize = 1024;

/// The bytes of one slot, shared by the task (which writes them while the slot is free) and
/// every string made over them (each holds a clone; the last one dropped frees them).
#[derive(Debug)]
struct Buffer {
    bytes: *mut u8,
    len: usize,
}

// SAFETY: the bytes are written only by `SlotPool::stage`, under the pool's lock, while the
// slot is `Free` (no JavaScript reads it), and read by V8 only while the slot is `Taken`.
unsafe impl Send for Buffer {}
// SAFETY: as above; shared references only ever read `bytes` and `len` themselves.
unsafe impl Sync for Buffer {}

impl Buffer {
    /// `len` spaces (so any prefix plus the rest is valid JSON padding).
    fn spaces(len: usize) -> Self {
        let bytes = Box::into_raw(vec![b' '; len].into_boxed_slice()).cast::<u8>();
        Self { bytes, len }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: the boxed slice `spaces` made; dropped once, with the last reference.
        drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(self.bytes, self.len)) });
    }
}

/// What a slot is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// Nobody reads it: the task may write.
    Free,
    /// Holds the batch staged under this ticket, waiting in the queue. (Tickets, not slot
    /// numbers, name staged batches: a slot let go and made again must not pass for the slot
    /// an older batch still in the queue was staged in.)
    Staged(u32),
    /// JavaScript took its batch.
    Taken,
}

/// One slot as the task sees it.
#[derive(Debug)]
struct Slot {
    state: Use,
    buffer: Arc<Buffer>,
    /// Length of the batch written last; bytes past it are spaces.
    written: usize,
}

/// A buffer's length for batches of about `events` bytes: room for somewhat longer ones.
fn buffer_len(events: usize) -> usize {
    (events + events / 8).next_multiple_of(LENGTH_STEP)
}

/// The length class (string length) for a batch of `events` bytes in a buffer of `len`.
fn length_class(events: usize, len: usize) -> usize {
    events.next_multiple_of(LENGTH_STEP).min(len)
}

/// The slots' shared state: the task stages into it, JavaScript takes from it.
#[derive(Debug, Default)]
pub(super) struct SlotPool {
    slots: Mutex<[Option<Slot>; SLOTS]>,
    next_ticket: AtomicU32,
}

impl Stager for SlotPool {
    fn stage(&self, events: &[u8]) -> Option<u32> {
        let mut slots = self.lock();
        let slot = slots
            .iter_mut()
            .flatten()
            .find(|slot| slot.state == Use::Free && events.len() <= slot.buffer.len)?;
        // SAFETY: a `Free` slot's buffer is alive (the slot holds it) and nothing reads it
        // until JavaScript takes the slot; writes happen only here, under the lock.
        let target = unsafe { std::slice::from_raw_parts_mut(slot.buffer.bytes, slot.buffer.len) };
        target[..events.len()].copy_from_slice(events);
        if slot.written > events.len() {
            target[events.len()..slot.written].fill(b' ');
        }
        slot.written = events.len();
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        slot.state = Use::Staged(ticket);
        Some(ticket)
    }
}

impl SlotPool {
    /// JavaScript is done with the slot it took last; a slot staged for a batch that will not
    /// be read from it (it carries warnings or ends the watch) is free again too.
    pub(super) fn unstage(&self, staged: Option<u32>) {
        let mut slots = self.lock();
        for slot in slots.iter_mut().flatten() {
            let unused = matches!(slot.state, Use::Staged(ticket) if staged == Some(ticket));
            if slot.state == Use::Taken || unused {
                slot.state = Use::Free;
            }
        }
    }

    /// Takes the slot holding the batch staged under `staged`, if one still does: its index
    /// and the length class of the batch in it.
    fn take(&self, staged: Option<u32>) -> Option<(usize, usize)> {
        let ticket = staged?;
        let mut slots = self.lock();
        slots.iter_mut().enumerate().find_map(|(index, slot)| {
            let slot = slot.as_mut()?;
            (slot.state == Use::Staged(ticket)).then(|| {
                slot.state = Use::Taken;
                (index, length_class(slot.written, slot.buffer.len))
            })
        })
    }

    fn lock(&self) -> MutexGuard<'_, [Option<Slot>; SLOTS]> {
        // Nothing panics while holding the lock; a poisoned pool is still consistent.
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One watch's batch strings, on the JavaScript thread.
#[derive(Debug, Default)]
pub(super) struct BatchStrings {
    pool: Arc<SlotPool>,
    /// Per slot, its strings by length class: references to one-element arrays holding them
    /// (before Node.js 22 references can only be made to objects).
    strings: [Vec<(usize, sys::napi_ref)>; SLOTS],
    /// This Node.js cannot make external strings, or copied one anyway: copy every batch.
    unavailable: bool,
    /// Batches taken from a slot so far (for tests and diagnostics).
    staged_taken: u32,
}

impl BatchStrings {
    /// The pool the watch's task stages into.
    pub(super) fn pool(&self) -> Arc<SlotPool> {
        self.pool.clone()
    }

    /// A string holding `batch.events` for `JSON.parse`: the slot it was staged in, or a copy.
    pub(super) fn take(&mut self, env: &Env, batch: &Batch) -> Result<sys::napi_value> {
        self.pool.unstage(None);
        if let Some((index, class)) = self.pool.take(batch.staged)
            && let Some(string) = self.slot_string(env, index, class)?
        {
            self.staged_taken = self.staged_taken.saturating_add(1);
            return Ok(string);
        }
        if batch.ascii && (SLOT_MIN_BYTES..=SLOT_MAX_BYTES).contains(&batch.events.len()) {
            // A busy stream: make (or grow) the buffers its next batches will be staged in.
            self.prepare(env, batch.events.len());
        }
        copied_string(env, &batch.events, batch.ascii)
    }

    /// Batches taken from a slot so far.
    pub(super) fn staged_taken(&self) -> u32 {
        self.staged_taken
    }

    /// Slots that hold a buffer now.
    pub(super) fn buffers(&self) -> u32 {
        self.pool
            .lock()
            .iter()
            .filter(|slot| slot.is_some())
            .count() as u32
    }

    /// Lets every buffer go (each is freed once V8 has collected its strings).
    pub(super) fn release(&mut self, env: &Env) {
        for index in 0..SLOTS {
            self.drop_slot(env, index);
        }
    }

    /// The string of length `class` over slot `index`'s buffer, made on first use.
    fn slot_string(
        &mut self,
        env: &Env,
        index: usize,
        class: usize,
    ) -> Result<Option<sys::napi_value>> {
        if let Some(&(_, holder)) = self.strings[index].iter().find(|(len, _)| *len == class) {
            return held_string(env, holder).map(Some);
        }
        let Some(buffer) = self.pool.lock()[index]
            .as_ref()
            .map(|slot| slot.buffer.clone())
        else {
            return Ok(None);
        };
        let Some((holder, string)) = external_string(env, buffer, class)? else {
            self.unavailable = true;
            return Ok(None);
        };
        self.strings[index].push((class, holder));
        Ok(Some(string))
    }

    /// Gives every slot that is absent, or free but too short for `events` bytes, a buffer.
    fn prepare(&mut self, env: &Env, events: usize) {
        if self.unavailable || !has_external_strings(env) {
            self.unavailable = true;
            return;
        }
        for index in 0..SLOTS {
            let stale = match &self.pool.lock()[index] {
                None => true,
                Some(slot) => slot.state == Use::Free && slot.buffer.len < events,
            };
            if stale {
                self.drop_slot(env, index);
                self.pool.lock()[index] = Some(Slot {
                    state: Use::Free,
                    buffer: Arc::new(Buffer::spaces(buffer_len(events))),
                    written: 0,
                });
            }
        }
    }

    /// Empties slot `index` and lets its strings go.
    fn drop_slot(&mut self, env: &Env, index: usize) {
        // Under the lock: once it is gone from the pool the task cannot write to it.
        drop(self.pool.lock()[index].take());
        for (_, holder) in self.strings[index].drain(..) {
            // SAFETY: a reference made in this environment, deleted once (drained above).
            unsafe { sys::napi_delete_reference(env.raw(), holder) };
        }
    }
}

/// An external one-byte string over the first `len` bytes of `buffer`, which it keeps alive,
/// and a new reference holding it; `None` if V8 copied the bytes instead.
fn external_string(
    env: &Env,
    buffer: Arc<Buffer>,
    len: usize,
) -> Result<Option<(sys::napi_ref, sys::napi_value)>> {
    let bytes = buffer.bytes;
    let keep = Box::into_raw(Box::new(buffer));
    let mut string = ptr::null_mut();
    let mut copied = false;
    // SAFETY: `bytes` holds at least `len` bytes of Latin-1, alive while `keep` is. On success
    // `keep` belongs to the string, whose finalizer (`release_buffer`) drops it once: when V8
    // collects it, or before this call returns if V8 copied the bytes. On failure no finalizer
    // runs and it is dropped below.
    let status = unsafe {
        sys::node_api_create_external_string_latin1(
            env.raw(),
            bytes.cast(),
            len as isize,
            Some(release_buffer),
            keep.cast(),
            &mut string,
            &mut copied,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: N-API took no ownership of `keep`.
        drop(unsafe { Box::from_raw(keep) });
        return Err(napi_error(status));
    }
    if copied {
        return Ok(None);
    }
    let mut holder = ptr::null_mut();
    let mut reference = ptr::null_mut();
    // SAFETY: plain N-API calls in this environment on values made during this call.
    unsafe {
        check(sys::napi_create_array_with_length(
            env.raw(),
            1,
            &mut holder,
        ))?;
        check(sys::napi_set_element(env.raw(), holder, 0, string))?;
        check(sys::napi_create_reference(
            env.raw(),
            holder,
            1,
            &mut reference,
        ))?;
    }
    Ok(Some((reference, string)))
}

/// Drops a string's hold on its buffer when V8 collects the string.
unsafe extern "C" fn release_buffer(
    _env: sys::node_api_basic_env,
    _data: *mut c_void,
    hint: *mut c_void,
) {
    // SAFETY: `hint` is the boxed `Arc<Buffer>` `external_string` gave this string; V8 calls
    // this once per string.
    drop(unsafe { Box::from_raw(hint.cast::<Arc<Buffer>>()) });
}

/// The string a reference made by `external_string` holds.
fn held_string(env: &Env, holder: sys::napi_ref) -> Result<sys::napi_value> {
    let mut array = ptr::null_mut();
    let mut string = ptr::null_mut();
    // SAFETY: `holder` is a live reference made in this environment.
    unsafe {
        check(sys::napi_get_reference_value(env.raw(), holder, &mut array))?;
        check(sys::napi_get_element(env.raw(), array, 0, &mut string))?;
    }
    Ok(string)
}

/// A fresh string holding `text`: one-byte by a plain copy when ASCII (Kubernetes JSON nearly
/// always is; UTF-8 decoding measured at about three quarters of the cost of `JSON.parse`).
pub(super) fn copied_string(env: &Env, text: &[u8], ascii: bool) -> Result<sys::napi_value> {
    let mut value = ptr::null_mut();
    let len = text.len() as isize;
    // SAFETY: `text` is valid for `len` bytes during the call; every piece of a batch was
    // validated as UTF-8 on the way in.
    let status = unsafe {
        if ascii {
            sys::napi_create_string_latin1(env.raw(), text.as_ptr().cast(), len, &mut value)
        } else {
            sys::napi_create_string_utf8(env.raw(), text.as_ptr().cast(), len, &mut value)
        }
    };
    check(status)?;
    Ok(value)
}

/// Whether this Node.js has `node_api_create_external_string_latin1` (20.4 and later); without
/// it napi-rs' dynamically resolved symbol would fail.
fn has_external_strings(env: &Env) -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        env.get_node_version()
            .is_ok_and(|v| (v.major, v.minor) >= (20, 4))
    })
}

fn check(status: sys::napi_status) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi_error(status))
    }
}

fn napi_error(status: sys::napi_status) -> Error {
    Error::new(Status::from(status), "N-API call failed on a batch string")
}
