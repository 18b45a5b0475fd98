//! Handing the memory a large list leaves free back to the operating system.
//!
//! A list streams far more bytes through the process than the cache keeps (10 000 pods: 88 MiB
//! read, 3 MiB kept with `fields`). glibc's allocator keeps what is freed in its heaps: a free
//! stretch at the top of a heap stays mapped up to a threshold that glibc raises by itself
//! after any large free (to 32 MiB), and whole free pages between live objects stay mapped
//! too. Measured after such a list: about 0.7 MiB held free, a fifth of the projected cache.
//! `malloc_trim(0)` returns both kinds. Other allocators (musl's, macOS's, Windows') give
//! memory back on their own; there this does nothing.

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
