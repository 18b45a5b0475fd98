//! Batch texts as JavaScript strings: a plain copy into a fresh string that V8 owns.
//!
//! Nothing is ever written into bytes a live string can see: reusable external strings
//! rewritten while V8 could still see them would break V8's `ExternalStringResource` contract.
//! A fresh external string per batch is not used either: it lives in old space, which V8
//! collects only after much external memory, so a slow consumer's RSS grows, where copies,
//! allocated in the young generation, are freed by the next scavenge (the figures of both are
//! in `bench/README.md`).

use std::ptr;

use napi::{Env, Error, Result, Status, sys};

/// A fresh string holding `text`, a batch's JSON (validated UTF-8): one-byte by a plain copy
/// when `ascii` (Kubernetes JSON nearly always is, and decoding UTF-8 would cost nearly as much
/// as the consumer's `JSON.parse`).
pub(super) fn copied_string(env: &Env, text: &[u8], ascii: bool) -> Result<sys::napi_value> {
    let mut value = ptr::null_mut();
    let len = text.len() as isize;
    // SAFETY: Node-API documents that `napi_create_string_latin1` and
    // `napi_create_string_utf8` create a string from `length` bytes at `str` ("the native
    // string is copied"), so `text` only has to be valid for `len` bytes during the call,
    // which the borrow guarantees; the new string shares nothing with it. Any bytes are valid
    // Latin-1 (and ASCII is Latin-1 unchanged); the UTF-8 path gets validated UTF-8 (every
    // piece of a batch was validated or produced by serde on the way in).
    let status = unsafe {
        if ascii {
            sys::napi_create_string_latin1(env.raw(), text.as_ptr().cast(), len, &mut value)
        } else {
            sys::napi_create_string_utf8(env.raw(), text.as_ptr().cast(), len, &mut value)
        }
    };
    if status != sys::Status::napi_ok {
        return Err(Error::new(
            Status::from(status),
            "N-API could not make a string of a batch",
        ));
    }
    Ok(value)
}
