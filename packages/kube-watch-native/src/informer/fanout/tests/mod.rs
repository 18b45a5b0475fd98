//! Unit tests of the fanout: the coalescing table row by row, markers, batches and endings.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use super::queue::Slot;
use super::*;
use crate::batch::MAX_BATCH_BYTES;
use crate::informer::store::ChangeKind;
use crate::informer::store::{Object, Store};

fn change(kind: ChangeKind, name: &str, uid: &str, rv: u64) -> Change {
    let text = format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"ns","uid":"{uid}","resourceVersion":"{rv}"}}}}"#
    );
    let object = Object::parse(text.as_bytes()).unwrap();
    Change { kind, object }
}

use ChangeKind::{Added, Deleted, Modified};

mod waking;

/// `TYPE name@rv#uid` per event, or `SYNCED rv relist` / `ERROR status retrying`.
fn drain(cursor: &Cursor) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(batch) = cursor.take() {
        if !batch.events.is_empty() {
            out.extend(describe(&batch));
        }
        if batch.done {
            out.push("END".into());
            break;
        }
        if batch.events.is_empty() {
            break;
        }
    }
    out
}

fn describe(batch: &Batch) -> Vec<String> {
    let events: Vec<serde_json::Value> = serde_json::from_slice(&batch.events).unwrap();
    events
        .iter()
        .map(|e| {
            let kind = e["type"].as_str().unwrap();
            match kind {
                "SYNCED" => format!(
                    "SYNCED {} {}",
                    e["resourceVersion"].as_str().unwrap(),
                    e["relist"]
                ),
                "ERROR" => format!("ERROR {} {}", e["error"]["statusCode"], e["retrying"]),
                _ => {
                    let meta = &e["object"]["metadata"];
                    assert_eq!(
                        e["resourceVersion"], meta["resourceVersion"],
                        "the event's rv is the object's"
                    );
                    format!(
                        "{kind} {}@{}#{}",
                        meta["name"].as_str().unwrap(),
                        meta["resourceVersion"].as_str().unwrap(),
                        meta["uid"].as_str().unwrap()
                    )
                }
            }
        })
        .collect()
}

fn fanout() -> Fanout {
    Fanout::new("/api/v1/pods".into())
}

fn empty() -> std::iter::Empty<&'static Object> {
    std::iter::empty()
}

#[test]
fn a_consumer_that_keeps_up_sees_every_change_in_order() {
    let fanout = fanout();
    let cursor = fanout.subscribe(empty(), None);
    assert!(cursor.take().is_none(), "nothing ready");
    fanout.push(&[change(Added, "a", "u", 1)]);
    assert_eq!(drain(&cursor), ["ADDED a@1#u"]);
    fanout.push(&[change(Modified, "a", "u", 2)]);
    assert_eq!(drain(&cursor), ["MODIFIED a@2#u"]);
    fanout.push(&[change(Deleted, "a", "u", 3)]);
    assert_eq!(drain(&cursor), ["DELETED a@3#u"]);
}

#[test]
fn the_coalescing_table_row_by_row() {
    let rows: [(&[Change], &[&str]); 8] = [
        (
            &[change(Added, "a", "u", 1), change(Modified, "a", "u", 2)],
            &["ADDED a@2#u"],
        ),
        (
            &[change(Added, "a", "u", 1), change(Deleted, "a", "u", 2)],
            &[],
        ),
        (
            &[change(Modified, "a", "u", 1), change(Modified, "a", "u", 2)],
            &["MODIFIED a@2#u"],
        ),
        (
            &[change(Modified, "a", "u", 1), change(Deleted, "a", "u", 2)],
            &["DELETED a@2#u"],
        ),
        (
            &[change(Deleted, "a", "u", 1), change(Added, "a", "v", 2)],
            &["DELETED a@1#u", "ADDED a@2#v"],
        ),
        (
            &[
                change(Deleted, "a", "u", 1),
                change(Added, "a", "v", 2),
                change(Modified, "a", "v", 3),
            ],
            &["DELETED a@1#u", "ADDED a@3#v"],
        ),
        (
            &[
                change(Deleted, "a", "u", 1),
                change(Added, "a", "v", 2),
                change(Deleted, "a", "v", 3),
            ],
            &["DELETED a@1#u"],
        ),
        (
            &[
                change(Added, "a", "u", 1),
                change(Deleted, "a", "u", 2),
                change(Added, "a", "v", 3),
            ],
            &["ADDED a@3#v"],
        ),
    ];
    for (changes, expected) in rows {
        let fanout = fanout();
        let cursor = fanout.subscribe(empty(), None);
        // One push per change: coalescing is per cursor, across pushes.
        for c in changes {
            fanout.push(std::slice::from_ref(c));
        }
        assert_eq!(drain(&cursor), expected, "{changes:?}");
    }
}

#[test]
fn keys_keep_the_place_where_they_first_became_pending() {
    let fanout = fanout();
    let cursor = fanout.subscribe(empty(), None);
    fanout.push(&[change(Added, "a", "u", 1), change(Added, "b", "v", 2)]);
    fanout.push(&[change(Modified, "a", "u", 3), change(Added, "c", "w", 4)]);
    // b vanishes unseen; when it comes back it queues at the end.
    fanout.push(&[change(Deleted, "b", "v", 5), change(Added, "b", "x", 6)]);
    assert_eq!(
        drain(&cursor),
        ["ADDED a@3#u", "ADDED c@4#w", "ADDED b@6#x"]
    );
}

#[test]
fn a_replacement_is_taken_in_one_batch() {
    let fanout = fanout();
    let cursor = fanout.subscribe(empty(), None);
    let pad = "p".repeat(MAX_BATCH_BYTES / 2);
    let big = |kind, name: &str, uid: &str, rv: u64| {
        let text = format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"ns","uid":"{uid}","resourceVersion":"{rv}"}},"pad":"{pad}"}}"#
        );
        let object = Object::parse(text.as_bytes()).unwrap();
        Change { kind, object }
    };
    fanout.push(&[
        big(Added, "a", "u", 1),
        big(Deleted, "b", "v", 2),
        big(Added, "b", "w", 3),
    ]);
    let first = cursor.take().unwrap();
    assert!(
        first.events.len() > MAX_BATCH_BYTES,
        "the DELETED alone filled the batch"
    );
    assert_eq!(
        describe(&first),
        ["ADDED a@1#u", "DELETED b@2#v", "ADDED b@3#w"],
        "the cap never splits a replacement"
    );
    assert!(cursor.take().is_none());
}

#[test]
fn batches_stop_at_the_byte_cap() {
    let fanout = fanout();
    let cursor = fanout.subscribe(empty(), None);
    let pad = "p".repeat(4000);
    let changes: Vec<Change> = (0..100)
        .map(|i| {
            let text = format!(r#"{{"metadata":{{"name":"o{i}","uid":"u","resourceVersion":"{i}"}},"pad":"{pad}"}}"#);
            let object = Object::parse(text.as_bytes()).unwrap();
            Change { kind: Added, object }
        })
        .collect();
    fanout.push(&changes);
    let mut total = 0;
    while let Some(batch) = cursor.take() {
        if batch.events.is_empty() {
            break;
        }
        assert!(
            batch.events.len() < MAX_BATCH_BYTES + 4100,
            "{}",
            batch.events.len()
        );
        total += describe(&batch).len();
    }
    assert_eq!(total, 100);
}

#[test]
fn a_new_consumer_starts_with_the_snapshot_then_synced() {
    let mut store = Store::new();
    for (name, uid, rv) in [("b", "u2", 2), ("a", "u1", 1)] {
        store.apply(Added, change(Added, name, uid, rv).object);
    }
    let fanout = fanout();
    let cursor = fanout.subscribe(store.iter(), Some("7".into()));
    fanout.push(&[change(Modified, "a", "u1", 8), change(Added, "c", "u3", 9)]);
    assert_eq!(
        drain(&cursor),
        [
            "ADDED a@8#u1",
            "ADDED b@2#u2",
            "SYNCED 7 false",
            "ADDED c@9#u3"
        ],
        "a change to a snapshot object before the consumer looked stays an ADDED, before SYNCED"
    );
}

#[test]
fn synced_is_a_barrier_and_later_ones_absorb_each_other() {
    let fanout = fanout();
    let cursor = fanout.subscribe(empty(), None);
    fanout.push(&[change(Added, "a", "u", 1)]);
    fanout.synced("1", false);
    fanout.push(&[change(Added, "b", "v", 2)]);
    fanout.synced("2", true);
    fanout.push(&[change(Modified, "a", "u", 3), change(Added, "c", "w", 4)]);
    fanout.synced("4", false);
    assert_eq!(
        drain(&cursor),
        [
            "ADDED a@3#u",
            "SYNCED 1 false",
            "ADDED b@2#v",
            "ADDED c@4#w",
            "SYNCED 4 true"
        ],
        "the first SYNCED stays; a relist's flag survives absorption"
    );
    fanout.synced("5", false);
    assert_eq!(drain(&cursor), ["SYNCED 5 false"]);
}

#[test]
fn errors_are_markers_and_the_latest_replaces_a_pending_one() {
    let fanout = fanout();
    let cursor = fanout.subscribe(empty(), None);
    fanout.error(&Failure::from_status(503), true);
    fanout.push(&[change(Added, "a", "u", 1)]);
    fanout.error(&Failure::from_status(429), true);
    assert_eq!(drain(&cursor), ["ERROR 429 true", "ADDED a@1#u"]);
    fanout.error(&Failure::system(), true);
    assert_eq!(drain(&cursor), ["ERROR 0 true"]);
    let batch = {
        fanout.error(&Failure::from_status(500), true);
        cursor.take().unwrap()
    };
    let text = batch.events_text();
    assert!(
        text.contains(r#""resourcePath":"/api/v1/pods"},"retrying":true}"#),
        "{text}"
    );
}

#[test]
fn end_drains_then_ends_and_close_ends_at_once() {
    let fanout = fanout();
    let draining = fanout.subscribe(empty(), None);
    let closing = fanout.subscribe(empty(), None);
    fanout.push(&[change(Added, "a", "u", 1)]);
    closing.close();
    assert_eq!(
        drain(&closing),
        ["END"],
        "nothing pending is delivered after close"
    );
    assert_eq!(fanout.consumers(), 1);
    fanout.end();
    fanout.push(&[change(Added, "b", "v", 2)]);
    assert_eq!(drain(&draining), ["ADDED a@1#u", "END"]);
    assert!(draining.take().unwrap().done, "the end stays the end");
    assert_eq!(drain(&fanout.subscribe(empty(), None)), ["END"]);
    assert_eq!(fanout.consumers(), 0);
}

#[test]
fn a_slow_consumers_memory_is_bounded_by_the_objects_and_others_are_not_held_up() {
    let fanout = fanout();
    let slow = fanout.subscribe(empty(), None);
    let fast = fanout.subscribe(empty(), None);
    let mut rv = 0;
    for round in 0..1000 {
        let mut changes = Vec::new();
        for i in 0..10 {
            rv += 1;
            let kind = if round == 0 { Added } else { Modified };
            changes.push(change(kind, &format!("o{i}"), "u", rv));
        }
        fanout.push(&changes);
        assert_eq!(drain(&fast).len(), 10);
    }
    fanout.error(&Failure::from_status(500), true);
    fanout.synced("x", false);
    fanout.synced("y", true);
    fanout.synced("z", true);
    assert_eq!(
        slow.pending(),
        10 + 1 + 2,
        "ten objects, one ERROR, two SYNCED"
    );
    let seen = drain(&slow);
    assert_eq!(seen.len(), 13);
    assert_eq!(
        seen[9],
        format!("ADDED o9@{rv}#u"),
        "the latest state, never a stale one"
    );
}

/// A waker that records that it was woken, for polling a future by hand.
#[derive(Default)]
struct Woken(AtomicBool);

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Woken {
    /// Polls `future` once with this waker, clearing the record first.
    fn poll<F: Future>(self: &Arc<Self>, future: Pin<&mut F>) -> Poll<F::Output> {
        self.0.store(false, Ordering::SeqCst);
        let waker = Waker::from(self.clone());
        future.poll(&mut Context::from_waker(&waker))
    }

    fn was_woken(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

// Polled by hand rather than raced against a sleep: the first poll finds nothing and parks
// (Pending), so the batch can only come from the push's (or the cancel's) wake.
#[test]
fn a_pending_change_holds_only_its_latest_version_and_no_key_of_its_own() {
    let mut queue = Queue::new();
    let versions = [
        change(Added, "a", "u", 1),
        change(Modified, "a", "u", 2),
        change(Deleted, "a", "u", 3),
        change(Added, "a", "v", 4),
    ];
    let held = |queue: &Queue| {
        let (key, seq) = queue.pending.iter().next().expect("one pending object");
        let Some(Slot::Object(pending)) = queue.order.get(seq) else {
            panic!("its slot holds its change")
        };
        assert!(
            key.ptr_eq(pending.latest()),
            "keyed by the version it ends on"
        );
        key.clone()
    };
    for (i, version) in versions.iter().enumerate() {
        queue.push(version);
        if i == 2 {
            // ADDED then DELETED before the consumer looked: nothing to show.
            assert!(queue.pending.is_empty() && queue.order.is_empty());
            continue;
        }
        assert_eq!((queue.pending.len(), queue.order.len()), (1, 1));
        assert!(held(&queue).ptr_eq(&version.object), "after change {i}");
    }
}

#[test]
fn a_consumer_that_caught_up_with_a_large_backlog_gives_free_memory_back() {
    let mut queue = Queue::new();
    let delivered = AtomicU64::new(0);
    for i in 0..super::queue::RELEASE_AFTER_BACKLOG {
        queue.push(&change(Added, &format!("o{i}"), "u", i as u64));
    }
    let before = crate::heap::trims_run();
    while queue
        .take(&delivered)
        .is_some_and(|batch| !batch.events.is_empty())
    {}
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while crate::heap::trims_run() == before && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(
        crate::heap::trims_run() > before,
        "a trim ran after the catch-up"
    );
}
