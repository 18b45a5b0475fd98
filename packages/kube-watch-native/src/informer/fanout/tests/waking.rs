//! The fanout's wake-ups: a waiting consumer, an armed cursor's waker, and what they count.

use super::*;

#[test]
fn a_waiting_consumer_wakes_for_a_push_and_for_cancel() {
    let fanout = fanout();
    let cursor = fanout.subscribe(empty(), None);
    let cancel = CancellationToken::new();
    let waker = Arc::new(Woken::default());

    let mut next = pin!(cursor.next(&cancel));
    assert!(
        waker.poll(next.as_mut()).is_pending(),
        "nothing yet: it waits"
    );
    assert!(!waker.was_woken());
    fanout.push(&[change(Added, "a", "u", 1)]);
    assert!(waker.was_woken(), "the push wakes the waiting consumer");
    let Poll::Ready(batch) = waker.poll(next.as_mut()) else {
        panic!("a batch once woken");
    };
    assert_eq!(describe(&batch), ["ADDED a@1#u"]);

    let mut next = pin!(cursor.next(&cancel));
    assert!(
        waker.poll(next.as_mut()).is_pending(),
        "nothing yet: it waits"
    );
    cancel.cancel();
    assert!(waker.was_woken(), "cancel wakes the waiting consumer");
    let Poll::Ready(batch) = waker.poll(next.as_mut()) else {
        panic!("the end once woken");
    };
    assert!(batch.done);
}

/// A cursor whose waker records the batches it is called with.
fn woken_cursor(fanout: &Fanout) -> (Cursor, Arc<Mutex<Vec<Batch>>>) {
    let cursor = fanout.subscribe(empty(), None);
    let woken = Arc::new(Mutex::new(Vec::new()));
    let sink = woken.clone();
    cursor.set_waker(Box::new(move |batch| sink.lock().unwrap().push(batch)));
    (cursor, woken)
}

fn taken(woken: &Mutex<Vec<Batch>>) -> Vec<Vec<String>> {
    let batches = std::mem::take(&mut *woken.lock().unwrap());
    batches
        .iter()
        .map(|b| {
            let mut d = if b.events.is_empty() {
                Vec::new()
            } else {
                describe(b)
            };
            if b.done {
                d.push("END".into());
            }
            d
        })
        .collect()
}

#[test]
fn an_armed_cursor_is_woken_once_with_the_batch_of_the_push_that_came() {
    let fanout = fanout();
    let (cursor, woken) = woken_cursor(&fanout);
    fanout.push(&[change(Added, "a", "u1", 1)]);
    assert!(taken(&woken).is_empty(), "not armed: nothing is called");
    cursor.arm();
    assert_eq!(
        taken(&woken),
        [["ADDED a@1#u1"]],
        "armed with a change pending: called at once with it"
    );
    assert!(cursor.take().is_none(), "the waker's batch was taken");
    cursor.arm();
    assert!(
        taken(&woken).is_empty(),
        "armed with nothing pending: waits"
    );
    fanout.push(&[change(Modified, "a", "u1", 2)]);
    fanout.push(&[change(Modified, "a", "u1", 3)]);
    assert_eq!(
        taken(&woken),
        [["MODIFIED a@2#u1"]],
        "called once per arm, with what the first push brought"
    );
    assert_eq!(
        fanout.delivered(),
        2,
        "what the waker took counts as delivered"
    );
    assert_eq!(fanout.slowest_pending(), 1, "a@3 waits for a take");
    assert_eq!(
        drain(&cursor),
        ["MODIFIED a@3#u1"],
        "the next push waits for a take"
    );
    assert_eq!(fanout.delivered(), 3);
    assert_eq!(fanout.slowest_pending(), 0);
}

#[test]
fn an_armed_cursor_is_woken_with_the_end() {
    let fanout = fanout();
    let (cursor, woken) = woken_cursor(&fanout);
    cursor.arm();
    fanout.end();
    assert_eq!(taken(&woken), [["END"]], "the informer stopped");
    let (closed, woken) = woken_cursor(&fanout);
    drop(closed);
    assert!(
        taken(&woken).is_empty(),
        "a cursor never armed is not called"
    );
    let fanout = self::fanout();
    let (cursor, woken) = woken_cursor(&fanout);
    cursor.arm();
    cursor.close();
    assert_eq!(taken(&woken), [["END"]], "the consumer closed");
}

#[test]
fn delivered_counts_every_event_taken_and_pending_is_the_slowest_consumers() {
    let fanout = fanout();
    let fast = fanout.subscribe(empty(), None);
    let slow = fanout.subscribe(empty(), None);
    assert_eq!(fanout.slowest_pending(), 0);
    fanout.push(&[change(Added, "a", "1", 1), change(Added, "b", "2", 2)]);
    fanout.push(&[change(Modified, "a", "1", 3)]);
    fanout.synced("3", false);
    assert_eq!(fanout.slowest_pending(), 2, "a (coalesced) and b");
    assert_eq!(drain(&fast).len(), 3);
    assert_eq!(fanout.delivered(), 3, "two changes and SYNCED");
    assert_eq!(fanout.slowest_pending(), 2, "the slow one still holds both");
    // A replacement is two events, an ERROR one more.
    fanout.push(&[change(Deleted, "a", "1", 4), change(Added, "a", "9", 5)]);
    fanout.error(&Failure::from_status(500), true);
    assert_eq!(drain(&fast).len(), 3);
    assert_eq!(fanout.delivered(), 6);
    slow.close();
    assert_eq!(
        fanout.slowest_pending(),
        0,
        "a closed consumer is behind nobody"
    );
    assert_eq!(fanout.delivered(), 6, "closing delivers nothing");
}
