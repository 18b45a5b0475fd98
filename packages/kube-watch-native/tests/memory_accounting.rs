//! The informer's memory figures (`informer::memory`, the native snapshot's `memory`) against
//! what the allocator was really asked for: this test binary counts, per thread, the bytes of
//! every allocation it makes and frees, so a cache built here can be weighed exactly and set
//! against what its `footprint()` works out from lengths and capacities.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use kube_watch_native::informer::cache::Cache;
use kube_watch_native::informer::store::{ChangeKind, Listed, Object};
use kube_watch_native::size::arc_bytes;

/// Counts the bytes asked for on each thread (tests run on threads of their own, so one test's
/// count is its own), then hands every call to the system allocator.
struct Counting;

thread_local! {
    /// Bytes allocated and not freed by this thread (a thread may free what another
    /// allocated, so only differences within one thread's work are meaningful).
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// Allocations this thread made.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    // A const-initialised Cell has no destructor: reachable until the thread's very end.
    let _ = LIVE.try_with(|live| live.set(live.get() + delta));
    if delta > 0 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    }
}

// SAFETY: every call is passed on unchanged to the system allocator; counting touches only a
// thread-local integer, which allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn live() -> isize {
    LIVE.with(Cell::get)
}

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// A ConfigMap `i` whose text is made `len` bytes long by its data.
fn config_map(i: usize, len: usize) -> Vec<u8> {
    let head = format!(
        r#"{{"kind":"ConfigMap","metadata":{{"name":"cm-{i:05}","namespace":"ns","uid":"u-{i}","resourceVersion":"{i}"}},"data":{{"x":""#
    );
    let tail = r#""}}"#;
    let mut text = head.into_bytes();
    text.resize(len - tail.len(), b'a');
    text.extend_from_slice(tail.as_bytes());
    assert_eq!(text.len(), len);
    text
}

#[test]
fn a_listed_caches_figures_are_what_it_allocated() {
    let lengths: Vec<usize> = (0..5_000).map(|i| 200 + (i * 37) % 1_500).collect();
    let texts: Vec<Vec<u8>> = lengths
        .iter()
        .enumerate()
        .map(|(i, len)| config_map(i, *len))
        .collect();
    // The thread's buffer that objects are built in, grown once to the largest (it stays).
    let largest = texts.iter().max_by_key(|t| t.len()).unwrap();
    drop(Object::parse(largest).unwrap().pack_if(true));
    for pack in [false, true] {
        let before = live();
        let cache = std::sync::Arc::new(Cache::new("/api/v1/namespaces/ns/configmaps".into()));
        let listed: Listed = texts
            .iter()
            .map(|t| Object::parse(t).unwrap().pack_if(pack))
            .collect();
        cache.replace(listed, "5000", false);
        let measured = live() - before;
        let (footprint, fixed) = cache.footprint();
        assert_eq!(footprint.objects, 5_000);
        assert_eq!(
            footprint.json_bytes,
            lengths.iter().sum::<usize>(),
            "the JSON is the sum of the objects' lengths"
        );
        if pack {
            // Runs of one letter pack to a few bytes: what is left is the metadata.
            assert!(
                footprint.text_bytes * 5 < footprint.json_bytes,
                "packed: {footprint:?}"
            );
        } else {
            assert_eq!(
                footprint.text_bytes, footprint.json_bytes,
                "held as received"
            );
        }
        let accounted =
            footprint.text_bytes + footprint.header_bytes + footprint.index_bytes + fixed;
        // Exact but for what is not worked out (the rare node of a tree's right edge that is
        // not full): within a tenth of a percent.
        let off = (accounted as isize - measured).abs();
        assert!(
            off * 1_000 <= measured,
            "pack {pack}: accounted {accounted} bytes ({footprint:?}, fixed {fixed}), allocated {measured}"
        );
        // Headers: the Arc counters and the 40-byte header of each object, 8-byte padded.
        assert!(footprint.header_bytes >= 5_000 * (16 + 40), "{footprint:?}");
        assert_eq!(footprint.pending_bytes, 0, "no consumers");
        drop(cache);
        assert!(
            (live() - before).abs() < 64,
            "everything went with the cache: {}",
            live() - before
        );
    }
}

#[test]
fn a_consumers_pending_changes_are_what_its_queue_allocated() {
    let texts: Vec<Vec<u8>> = (0..2_000).map(|i| config_map(i, 300)).collect();
    // Packed, as a packing informer makes them: the consumer's ADDED events are unpacked.
    let cache = Cache::new("/api/v1/namespaces/ns/configmaps".into());
    let listed: Listed = texts
        .iter()
        .map(|t| Object::parse(t).unwrap().pack_if(true))
        .collect();
    cache.replace(listed, "2000", false);
    let (idle, idle_fixed) = cache.footprint();
    let before = live();
    // A new consumer starts with one ADDED pending per object and the SYNCED.
    let cursor = cache.subscribe();
    let measured = live() - before;
    let (pending, fixed) = cache.footprint();
    assert_eq!(pending.consumers, 1);
    assert_eq!(pending.pending_changes, 2_000);
    assert_eq!(
        pending.text_bytes, idle.text_bytes,
        "the objects are shared"
    );
    let accounted = pending.pending_bytes + (fixed - idle_fixed);
    let off = (accounted as isize - measured).abs();
    // The SYNCED marker's resourceVersion (an Arc<str>) and the cursor list's growth are
    // small and not worked out one by one: within 1 %.
    assert!(
        off * 100 <= measured,
        "accounted {accounted} bytes ({pending:?}), allocated {measured}"
    );
    assert!(pending.text_bytes < pending.json_bytes / 2, "{pending:?}");
    // Taking everything gives the queue's table back, and every text unpacked.
    let mut delivered = String::new();
    while let Some(batch) = cursor.take().filter(|b| !b.events.is_empty()) {
        delivered.push_str(&batch.events_text());
    }
    for text in &texts {
        let text = std::str::from_utf8(text).unwrap();
        assert!(
            delivered.contains(&format!(r#"{{"type":"ADDED","object":{text}"#)),
            "{text} delivered whole"
        );
    }
    let (drained, _) = cache.footprint();
    assert_eq!(drained.pending_changes, 0);
    assert!(
        drained.pending_bytes < 1_024,
        "a consumer that caught up holds no table: {drained:?}"
    );
    assert!(
        fixed - idle_fixed >= arc_bytes::<u64>(),
        "a consumer's own struct is counted"
    );
}

#[test]
fn headers_follow_objects_through_events() {
    let cache = Cache::new("/api/v1/namespaces/ns/configmaps".into());
    let object = |i: usize, len: usize| Object::parse(&config_map(i, len)).unwrap();
    cache.apply(ChangeKind::Added, object(1, 400));
    cache.apply(ChangeKind::Added, object(2, 500));
    let (two, _) = cache.footprint();
    assert_eq!(two.text_bytes, 900);
    let per_object = two.header_bytes / 2;
    // A MODIFIED replaces the text and keeps one header.
    let mut modified = config_map(1, 700);
    let rv = br#""resourceVersion":"1""#;
    let at = modified.windows(rv.len()).position(|w| w == rv).unwrap();
    modified[at + rv.len() - 2] = b'9';
    cache.apply(ChangeKind::Modified, Object::parse(&modified).unwrap());
    let (after, _) = cache.footprint();
    assert_eq!(after.text_bytes, 1_200);
    assert_eq!(after.objects, 2);
    assert!(
        after.header_bytes.abs_diff(2 * per_object) <= 8,
        "{after:?}"
    );
    cache.apply(ChangeKind::Deleted, object(2, 500));
    let (one, _) = cache.footprint();
    assert_eq!((one.objects, one.text_bytes), (1, 700));
    assert!(one.header_bytes.abs_diff(per_object) <= 8, "{one:?}");
}

#[test]
fn an_object_is_built_with_one_allocation_its_own() {
    // Packs (a run of one letter), and does not pack (text of no repeats).
    let packs = config_map(1, 2_000);
    let mut noise = String::new();
    let mut x: u32 = 7;
    while noise.len() < 1_800 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        noise.push(char::from(b'a' + (x >> 16) as u8 % 26));
    }
    let random = format!(
        r#"{{"metadata":{{"name":"r","namespace":"ns","uid":"u","resourceVersion":"1"}},"data":{{"x":"{noise}"}}}}"#
    );
    // The thread's build buffer grows once, on the first objects.
    for text in [&packs, random.as_bytes().to_vec().as_ref()] {
        drop(Object::parse(text).unwrap().pack_if(true));
    }
    for (text, packed) in [(packs.as_slice(), true), (random.as_bytes(), false)] {
        let before = allocations();
        let object = Object::parse(text).unwrap();
        assert_eq!(
            allocations() - before,
            1,
            "parsed: the object's one allocation"
        );
        let object = object.pack_if(true);
        assert_eq!(
            object.stored_text_bytes() < object.text_len(),
            packed,
            "packed as expected"
        );
        // lz4_flex allocates its hash table for each block it makes (freed at once; its API
        // takes no table of ours). Beyond that, only the packed object, if it packs.
        let made = usize::from(packed);
        assert_eq!(
            allocations() - before,
            1 + 1 + made,
            "packing adds lz4's table and the packed object's allocation, and nothing else"
        );
    }
}
