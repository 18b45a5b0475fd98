//! News that a cluster answers again, shared by the informers of one watcher that reach it
//! through one client (one [`ClientKey`]: the same origin, CA, client identity, proxy and TLS
//! name, so the same HTTP/2 connection).
//!
//! Each informer backs off on its own, so after an outage of a cluster the last of its
//! informers would otherwise come back only when its own (exponential, jittered) sleep ends,
//! up to `backoff.maxSeconds` after the first. With this news, the first request of the
//! cluster that succeeds after failures (a list page or a watch answered 200) wakes the
//! others sleeping in a backoff: they retry within [`RECOVERY_JITTER`] (a random share of it,
//! so they do not stampede a server that just came back), never before the `Retry-After`
//! their own failure asked for. A wake-up shortens only the sleep: the failure count stays
//! until the woken informer succeeds itself.
//!
//! One `tokio::sync::watch` channel per key carries a count of recoveries; an informer marks
//! what it has seen when its sleep starts, so news older than its own failure never wakes it.

use std::collections::HashMap;
use std::mem::size_of;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::watch;

use crate::http::ClientKey;
use crate::size::{arc_bytes, hash_table_bytes};

/// A woken informer retries after a uniform draw of at most this long.
pub const RECOVERY_JITTER: Duration = Duration::from_millis(500);

/// The recovery channels of one watcher's clusters, by client key. Entries hold the channel
/// weakly: it lives as long as an informer of that cluster does.
#[derive(Debug, Default)]
pub struct Recoveries(Mutex<HashMap<ClientKey, Weak<watch::Sender<u64>>>>);

impl Recoveries {
    /// The news of the cluster reached through `key`, for one informer.
    pub fn news(&self, key: &ClientKey) -> News {
        let mut clusters = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let sender = match clusters.get(key).and_then(Weak::upgrade) {
            Some(sender) => sender,
            None => {
                // A new key: drop the entries of clusters no informer follows any more.
                clusters.retain(|_, sender| sender.strong_count() > 0);
                let sender = Arc::new(watch::Sender::new(0));
                clusters.insert(key.clone(), Arc::downgrade(&sender));
                sender
            }
        };
        let receiver = sender.subscribe();
        News { sender, receiver }
    }

    /// Bytes it holds: its table by key, each key's strings and buffers, and the `Arc` of each
    /// live channel. Not seen: the channel's shared state inside tokio, one small allocation per
    /// cluster (not per informer).
    pub fn bytes(&self) -> usize {
        let clusters = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let table = hash_table_bytes(
            clusters.capacity(),
            size_of::<(ClientKey, Weak<watch::Sender<u64>>)>(),
        );
        table
            + clusters
                .iter()
                .map(|(key, sender)| {
                    let live = sender.strong_count() > 0;
                    key.heap_bytes()
                        + if live {
                            arc_bytes::<watch::Sender<u64>>()
                        } else {
                            0
                        }
                })
                .sum::<usize>()
    }

    /// Clusters with a live channel (for tests).
    #[cfg(test)]
    pub fn clusters(&self) -> usize {
        let clusters = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        clusters.values().filter(|s| s.strong_count() > 0).count()
    }
}

/// One informer's end of its cluster's channel.
#[derive(Debug)]
pub struct News {
    sender: Arc<watch::Sender<u64>>,
    receiver: watch::Receiver<u64>,
}

impl News {
    /// This informer succeeded after failures: wake the others of the cluster.
    pub fn recovered(&mut self) {
        self.sender
            .send_modify(|count| *count = count.wrapping_add(1));
        // Its own news is no news to it.
        self.receiver.borrow_and_update();
    }

    /// A backoff sleep starts: what was announced before it does not end it.
    pub fn seen(&mut self) {
        self.receiver.borrow_and_update();
    }

    /// Resolves when another informer of the cluster recovers after [`News::seen`].
    pub async fn recovered_elsewhere(&mut self) {
        if self.receiver.changed().await.is_err() {
            // Cannot happen (this end holds a sender), but never wake for it.
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(origin: &str) -> ClientKey {
        ClientKey::plain(origin)
    }

    #[tokio::test(start_paused = true)]
    async fn news_reaches_the_informers_of_its_cluster_only_and_only_after_their_sleep_began() {
        let recoveries = Recoveries::default();
        let mut a = recoveries.news(&key("https://a:6443"));
        let mut a2 = recoveries.news(&key("https://a:6443"));
        let mut b = recoveries.news(&key("https://b:6443"));
        assert_eq!(recoveries.clusters(), 2);
        a.recovered();
        // Announced before a2's sleep began: it does not wake it.
        a2.seen();
        b.seen();
        let quiet = tokio::time::timeout(Duration::from_secs(1), a2.recovered_elsewhere()).await;
        assert!(quiet.is_err(), "old news woke a sleeper");
        a.recovered();
        tokio::time::timeout(Duration::from_secs(1), a2.recovered_elsewhere())
            .await
            .expect("woken by its cluster's news");
        let other = tokio::time::timeout(Duration::from_secs(1), b.recovered_elsewhere()).await;
        assert!(other.is_err(), "another cluster's news woke it");
        // Its own news does not wake the one that sent it.
        a.seen();
        a.recovered();
        let own = tokio::time::timeout(Duration::from_secs(1), a.recovered_elsewhere()).await;
        assert!(own.is_err(), "woken by its own news");
        drop((a, a2));
        assert_eq!(
            recoveries.clusters(),
            1,
            "a's channel went with its informers"
        );
    }

    #[test]
    fn its_bytes_count_the_table_the_keys_and_the_live_channels() {
        let recoveries = Recoveries::default();
        assert_eq!(recoveries.bytes(), 0);
        let mut key_a = key("https://a:6443");
        key_a.identity_pem = Some(vec![b'k'; 1000]);
        let a = recoveries.news(&key_a);
        let table = |capacity| {
            hash_table_bytes(capacity, size_of::<(ClientKey, Weak<watch::Sender<u64>>)>())
        };
        let capacity = recoveries.0.lock().unwrap().capacity();
        let live_a = key_a.heap_bytes() + arc_bytes::<watch::Sender<u64>>();
        assert!(key_a.heap_bytes() >= 1000 + "https://a:6443".len());
        assert_eq!(recoveries.bytes(), table(capacity) + live_a);
        let b = recoveries.news(&key("https://b:6443"));
        let live_b = key("https://b:6443").heap_bytes() + arc_bytes::<watch::Sender<u64>>();
        assert_eq!(recoveries.bytes(), table(capacity) + live_a + live_b);
        // A channel whose informers are gone keeps only its key until the next new key.
        drop(b);
        assert_eq!(
            recoveries.bytes(),
            table(capacity) + live_a + key("https://b:6443").heap_bytes()
        );
        drop(a);
    }
}
