//! Batch texts as JavaScript strings, by the documented Node-API calls only.
//!
//! A batch's text becomes a fresh string that V8 owns or that owns the batch: nothing is
//! written into bytes a live string can see (V8's `ExternalStringResource` contract).
//!
//! - A plain copy (`napi_create_string_latin1`, or `_utf8` for the rare non-ASCII batch):
//!   V8 allocates it in the young generation, so a scavenge frees it soon after parsing.
//! - An external string over the batch itself (`node_api_create_external_string_latin1`): no
//!   copy on the main thread, whose cost is mostly pulling bytes the task wrote on another
//!   core. V8 allocates external strings in old space, so their memory would wait for a full
//!   collection (a slow consumer grew RSS by 176 MiB in 20 s); each one's size is therefore
//!   reported with `napi_adjust_external_memory`, which is what V8 uses to schedule full
//!   collections for memory it cannot see, and given back by the string's finalizer.

use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

use napi::{Env, Error, Result, Status, sys};

/// Only batches this long go external: shorter ones are cheap to copy, and a quiet watch's
/// one-event batches should not each become an old-space object awaiting a full collection.
const EXTERNAL_MIN_BYTES: usize = 32 * 1024;

/// Bytes of external strings V8 has not collected yet, across all watches.
static EXTERNAL_BYTES: AtomicUsize = AtomicUsize::new(0);

fn external_budget() -> usize {
    static B: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *B.get_or_init(|| {
        std::env::var("KUBE_WATCH_EXTERNAL_BUDGET_MIB")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(100_000)
            << 20
    })
}

/// How a watch turns its batches into strings (a measurement switch while both are compared).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StringMode {
    /// Every batch copied.
    Copy,
    /// Long ASCII batches as external strings, the rest copied.
    External,
}

/// A string holding `text`, a batch's JSON (validated UTF-8, `ascii` if it is pure ASCII).
pub(super) fn batch_string(
    env: &Env,
    text: Vec<u8>,
    ascii: bool,
    mode: StringMode,
) -> Result<sys::napi_value> {
    if mode == StringMode::External
        && ascii
        && text.len() >= EXTERNAL_MIN_BYTES
        && has_external_strings(env)
        && EXTERNAL_BYTES.load(Ordering::Relaxed) + text.capacity() <= external_budget()
    {
        return external_string(env, text);
    }
    copied_string(env, &text, ascii)
}

/// A fresh string holding `text`: one-byte by a plain copy when ASCII (Kubernetes JSON nearly
/// always is; UTF-8 decoding measured at about three quarters of the cost of `JSON.parse`).
fn copied_string(env: &Env, text: &[u8], ascii: bool) -> Result<sys::napi_value> {
    let mut value = ptr::null_mut();
    let len = text.len() as isize;
    // SAFETY: Node-API's `napi_create_string_latin1` / `napi_create_string_utf8` copy `len`
    // bytes from `text` into a new string before returning ("the native string is copied"),
    // and `text` is valid for `len` bytes for the whole call. Latin-1 accepts any bytes; the
    // UTF-8 path gets validated UTF-8 (every piece of a batch was validated on the way in).
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

/// An external one-byte string that owns `text` (ASCII) until V8 collects it, with its
/// allocation reported to V8 as external memory for as long.
fn external_string(env: &Env, text: Vec<u8>) -> Result<sys::napi_value> {
    let accounted = text.capacity() as i64;
    let len = text.len() as isize;
    // Boxed, so the finalizer gets the `Vec` back (and its capacity) through one pointer; the
    // bytes themselves stay where the task wrote them and are never written again.
    let owner = Box::into_raw(Box::new(text));
    // SAFETY: `owner` was just made by `Box::into_raw` and nothing else holds it yet.
    let bytes = unsafe { (*owner).as_ptr() };
    adjust_external_memory(env.raw(), accounted);
    EXTERNAL_BYTES.fetch_add(accounted as usize, Ordering::Relaxed);
    let mut string = ptr::null_mut();
    let mut copied = false;
    // SAFETY: Node-API's `node_api_create_external_string_latin1` documents that the native
    // string "may not be copied and must thus exist for the entire life cycle of the
    // JavaScript value", and that `finalize_callback` is called when the string is collected,
    // or before the call returns if it was copied (`copied`). V8's
    // `String::NewExternalOneByte` (v8-primitive.h) adds that the buffer must not be
    // deallocated or modified except through the resource's disposal. So `owner` (hence the
    // bytes) belongs to the string from here: nothing in this crate keeps, writes or frees it,
    // and `release_text` frees it exactly once. `len` bytes are valid ASCII, hence Latin-1.
    let status = unsafe {
        sys::node_api_create_external_string_latin1(
            env.raw(),
            bytes.cast(),
            len,
            Some(release_text),
            owner.cast(),
            &mut string,
            &mut copied,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: on failure Node-API made no string and took no ownership of `owner`: no
        // finalizer will run, so it is still ours to free, once.
        drop(unsafe { Box::from_raw(owner) });
        adjust_external_memory(env.raw(), -accounted);
        EXTERNAL_BYTES.fetch_sub(accounted as usize, Ordering::Relaxed);
        return Err(napi_error(status));
    }
    Ok(string)
}

/// Frees a batch's text once V8 has collected (or copied) its external string, and gives its
/// size back to V8's external memory count.
unsafe extern "C" fn release_text(
    env: sys::node_api_basic_env,
    _data: *mut c_void,
    hint: *mut c_void,
) {
    // SAFETY: `hint` is the `Box<Vec<u8>>` `external_string` handed over with this string;
    // Node-API calls the finalizer once per string, so it is reclaimed once.
    let text = unsafe { Box::from_raw(hint.cast::<Vec<u8>>()) };
    EXTERNAL_BYTES.fetch_sub(text.capacity(), Ordering::Relaxed);
    // Node-API passes a null `env` when the string is collected while the environment is
    // being torn down; there is no count left to adjust then.
    if !env.is_null() {
        adjust_external_memory(env.cast(), -(text.capacity() as i64));
    }
}

/// Tells V8 that `change` bytes outside its heap are now kept alive by JavaScript objects (or
/// no longer, when negative), so that it schedules full collections accordingly.
fn adjust_external_memory(env: sys::napi_env, change: i64) {
    let mut total = 0;
    // SAFETY: Node-API documents `napi_adjust_external_memory` as taking a
    // `node_api_basic_env`, so it may be called from finalizers, including during garbage
    // collection; `env` is the live environment this string belongs to. Every decrease
    // undoes an earlier increase of the same size, as the documentation asks. A failure
    // only leaves V8's estimate off, so it is ignored.
    unsafe { sys::napi_adjust_external_memory(env, change, &mut total) };
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
