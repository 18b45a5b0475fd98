//! Handing the memory a large list leaves free back to the operating system.
//!
//! A list streams far more bytes through the process than the cache keeps (with `fields`, a
//! small part of what was read). glibc's allocator keeps what is freed in its heaps: a free
//! stretch at the top of a heap stays mapped up to a threshold that glibc raises by itself
//! after any large free (to 32 MiB), and whole free pages between live objects stay mapped
//! too, so after such a list a good part of the projected cache's size would stay held free.
//! `malloc_trim(0)` returns both kinds. Other allocators (musl's, macOS's, Windows') give
//! memory back on their own; there this does nothing.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

/// Returns the allocator's free memory to the operating system where that takes a call
/// (glibc). It walks every heap of the process, so it is for after a list, not per event.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim(3) takes a byte count to keep at the top of the heap and touches only
    // the allocator's free chunks, under each arena's lock; glibc documents it as MT-Safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// No trim is running ([`release_free_memory_soon`]).
const IDLE: u8 = 0;
/// A trim is running.
const RUNNING: u8 = 1;
/// A trim is running, and one more was asked for while it ran.
const AGAIN: u8 = 2;
static TRIM: AtomicU8 = AtomicU8::new(IDLE);
/// Trims [`release_free_memory_soon`] ran, for the tests.
static TRIMS: AtomicU64 = AtomicU64::new(0);

/// How many trims [`release_free_memory_soon`] has run in this process.
pub fn trims_run() -> u64 {
    TRIMS.load(Ordering::Relaxed)
}

/// [`release_free_memory`] on a thread of its own, so that the caller (the main thread, taking
/// a consumer's batch) never waits for the walk over the heaps: for after a consumer caught up
/// with a large backlog, whose queue's nodes and table are free now. One trim at a time; a call
/// while one runs has it run once more when it is done, so the last of many is never lost.
pub fn release_free_memory_soon() {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        return;
    }
    let before = TRIM.fetch_update(Ordering::AcqRel, Ordering::Acquire, |state| {
        Some(if state == IDLE { RUNNING } else { AGAIN })
    });
    if before != Ok(IDLE) {
        return;
    }
    let trims = || {
        loop {
            release_free_memory();
            TRIMS.fetch_add(1, Ordering::Relaxed);
            let after = TRIM.fetch_update(Ordering::AcqRel, Ordering::Acquire, |state| {
                Some(if state == AGAIN { RUNNING } else { IDLE })
            });
            if after != Ok(AGAIN) {
                break;
            }
        }
    };
    let spawned = std::thread::Builder::new()
        .name("kube-watch-trim".into())
        .spawn(trims);
    if spawned.is_err() {
        // No thread to be had: this memory stays with the allocator until the next trim.
        TRIM.store(IDLE, Ordering::Release);
    }
}

/// What the allocator holds, process-wide, where it can say (glibc): for setting the memory
/// the informers account for against what was really allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocatorStats {
    /// Bytes in chunks handed out and not yet freed (glibc `uordblks + hblkhd`), allocator
    /// bookkeeping of each chunk included.
    pub in_use: u64,
    /// Bytes free but still held in the allocator's heaps (`fordblks`): what fragmentation
    /// keeps from the operating system.
    pub free: u64,
}

/// The allocator's figures now, `None` where the allocator is not glibc's. Read with
/// `mallinfo(3)` rather than `mallinfo2`, which the oldest glibc the binaries support (2.17)
/// lacks; its `int` fields are read as `u32`, so each figure is exact below 4 GiB and wraps
/// above. It walks every arena under its lock: for a metrics collection, not per event.
pub fn allocator_stats() -> Option<AllocatorStats> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo(3) takes no arguments and returns a plain struct of counters, read
        // under each arena's lock (it initialises the allocator first if nothing has yet).
        #[allow(deprecated)]
        let info = unsafe { libc::mallinfo() };
        let bytes = |n: libc::c_int| u64::from(n as u32);
        Some(AllocatorStats {
            in_use: bytes(info.uordblks) + bytes(info.hblkhd),
            free: bytes(info.fordblks),
        })
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_asked_for_at_once_run_one_at_a_time_and_the_last_is_not_lost() {
        let before = trims_run();
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    for _ in 0..50 {
                        release_free_memory_soon();
                    }
                });
            }
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while TRIM.load(Ordering::Acquire) != IDLE && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(TRIM.load(Ordering::Acquire), IDLE, "every trim ended");
        let ran = trims_run() - before;
        assert!(ran >= 1, "at least one ran");
        assert!(
            ran < 400,
            "requests made while one ran were gathered: {ran} trims"
        );
        release_free_memory_soon();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while trims_run() == before + ran && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(trims_run() > before + ran, "a later request runs again");
    }
}
