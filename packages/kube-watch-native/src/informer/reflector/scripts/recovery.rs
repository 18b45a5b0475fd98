//! Scripts of two informers of one watcher failing together: the recovery of one wakes the
//! other's backoff when they share a cluster, within the jitter and never before a Retry-After.

use super::*;
use crate::engine::recovery::RECOVERY_JITTER;

/// A script that fails once with `status` (asking for `retry_after` seconds), then lists and
/// watches.
fn failing_once(status: u16, retry_after: Option<u64>) -> Fake {
    Fake::new(vec![
        Reply::Status(status, retry_after),
        Reply::Page(list(&[pod("a", "1")], "5", None)),
        Reply::Watch(Vec::new(), End::Open),
    ])
}

/// An informer of `origin` that backs off 3 to 30 s after a failure (the floor is a tenth of
/// `initialSeconds`), so a retry sooner than 3 s was woken.
fn slow_config(origin: &str) -> RunConfig {
    let mut config = config(origin, InitialList::Paginated);
    config.backoff = BackoffPolicy::new(30.0, 30.0).unwrap();
    config
}

/// The wait the last "retrying in" warning announced.
fn announced_wait(recorder: &Recorder) -> Duration {
    let messages = messages(recorder);
    let text = messages
        .iter()
        .rev()
        .find_map(|m| m.split("retrying in ").nth(1))
        .expect("a retry warning");
    let seconds: f64 = text.trim_end_matches(" s").parse().unwrap();
    Duration::from_secs_f64(seconds)
}

/// Runs `slow` (of `slow_origin`, retrying after 3 to 30 s) and a quick informer of
/// `http://cluster.test` (0.05 to 0.2 s) on one watcher, both failing at once; once both had
/// time to recover on their own, the moments of the quick one's successful list and of the
/// slow one's retry, and the wait the slow one announced (its own backoff, 3 s or more).
async fn recover_beside(slow: Fake, slow_origin: &str) -> (Duration, Duration, Duration) {
    let memory = Arc::new(ListMemory::default());
    let quick = failing_once(503, None);
    let (a, slow_recorder, _) =
        run_shared(&slow, slow_config(slow_origin), bearer("t"), memory.clone());
    let (b, _, _) = run_shared(
        &quick,
        config("http://cluster.test", InitialList::Paginated),
        bearer("t"),
        memory,
    );
    tokio::time::sleep(Duration::from_secs(40)).await;
    let (slow_sent, quick_sent) = (slow.sent(), quick.sent());
    assert_eq!(slow_sent.len(), 3, "failed, listed, watched: {slow_sent:?}");
    assert_eq!(
        quick_sent.len(),
        3,
        "failed, listed, watched: {quick_sent:?}"
    );
    let recovered = quick_sent[1].at;
    assert!(recovered <= Duration::from_millis(200), "{recovered:?}");
    a.stop();
    b.stop();
    let wait = announced_wait(&slow_recorder);
    assert!(wait >= Duration::from_secs(3), "{wait:?}");
    (recovered, slow_sent[1].at, wait)
}

#[tokio::test(start_paused = true)]
async fn a_recovery_of_the_cluster_wakes_its_other_informers_backoff_within_the_jitter() {
    let slow = failing_once(503, None);
    let (recovered, retried, wait) = recover_beside(slow, "http://cluster.test").await;
    assert!(
        retried >= recovered && retried <= recovered + RECOVERY_JITTER,
        "the cluster recovered at {recovered:?}, the other informer retried at {retried:?} \
         (its own backoff: {wait:?})"
    );
}

#[tokio::test(start_paused = true)]
async fn a_woken_informer_still_waits_for_the_retry_after_its_server_asked_for() {
    let slow = failing_once(429, Some(2));
    let (recovered, retried, wait) = recover_beside(slow, "http://cluster.test").await;
    assert!(recovered + RECOVERY_JITTER < Duration::from_secs(2));
    assert!(
        // Below 3 s: woken, since its own backoff is at least 3 s.
        retried >= Duration::from_secs(2) && retried < Duration::from_secs(3),
        "Retry-After 2 s, woken at {recovered:?}, retried at {retried:?} (its backoff: {wait:?})"
    );
}

#[tokio::test(start_paused = true)]
async fn a_recovery_of_another_cluster_does_not_wake_an_informer() {
    let slow = failing_once(503, None);
    let (_, retried, wait) = recover_beside(slow, "http://other.test").await;
    // Its own backoff, to the warning's tenth of a second.
    assert!(
        retried + Duration::from_millis(50) >= wait,
        "retried at {retried:?}, its backoff {wait:?}"
    );
}
