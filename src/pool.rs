//! Sharing clients between watches to the same cluster with the same TLS identity.
//!
//! A `reqwest::Client` owns a connection pool; over TLS it speaks HTTP/2 and multiplexes
//! watches on one connection. The API server allows a limited number of concurrent streams
//! per connection (250 by default) and a watch holds its stream for as long as it lives, so a
//! client serves at most [`WATCHES_PER_CLIENT`] watches and the pool opens another client (and
//! so another connection) beyond that, instead of queueing new watches behind old ones.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use crate::error::WatchError;
use crate::tls::ClientKey;

/// Watches one client carries before the pool starts another: below the API server's default
/// of 250 concurrent streams per connection (Go's default), with room for the other requests a
/// proxy in between may multiplex, so a connection never makes a new watch wait for a stream.
/// 1 000 watches to one cluster use five connections.
pub const WATCHES_PER_CLIENT: usize = 200;

struct Slot {
    client: reqwest::Client,
    active: Arc<AtomicUsize>,
    /// Becomes true once the slot's first request has its answer (or gave up); see [`Lease`].
    warm: watch::Sender<bool>,
}

/// The process-wide client pool.
#[derive(Default)]
pub struct ClientPool {
    slots: Mutex<HashMap<ClientKey, Vec<Slot>>>,
}

/// A client lent to one watch; returning it is dropping it.
///
/// Whether a TLS connection speaks HTTP/2 is only known once ALPN has run, so watches started
/// together on a new client would each open a connection of their own. The first lease of a
/// client therefore goes first: the others wait ([`Lease::ready`]) until its request has been
/// answered, by when an HTTP/2 connection is pooled and they multiplex onto it — but never
/// longer than [`WARM_UP_WAIT`], so a slow first answer cannot hold the others up.
pub struct Lease {
    /// The shared client.
    pub client: reqwest::Client,
    active: Arc<AtomicUsize>,
    warm: watch::Sender<bool>,
    opener: bool,
}

/// The longest a watch waits for the first request on its client to be answered.
pub const WARM_UP_WAIT: Duration = Duration::from_secs(2);

impl Lease {
    /// Waits, at most [`WARM_UP_WAIT`], until the client's first request has been answered.
    pub async fn ready(&self) {
        if self.opener {
            return;
        }
        let mut warm = self.warm.subscribe();
        let _ = tokio::time::timeout(WARM_UP_WAIT, warm.wait_for(|warm| *warm)).await;
    }

    /// Says the first request has been answered (or failed); later leases stop waiting.
    pub fn answered(&self) {
        if self.opener {
            self.warm.send_replace(true);
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // A first request cancelled before its answer must not leave the others waiting.
        self.answered();
        self.active.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ClientPool {
    /// Lends a client for `key`, building one when every existing client is full.
    pub fn lease(&self, key: &ClientKey) -> Result<Lease, WatchError> {
        let mut slots = self
            .slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let clients = slots.entry(key.clone()).or_default();
        // Idle extra clients go, so a burst of watches does not leave connections behind.
        let mut kept_idle = false;
        clients.retain(|slot| {
            let idle = slot.active.load(Ordering::Acquire) == 0;
            let keep = !idle || !kept_idle;
            kept_idle |= idle;
            keep
        });
        if let Some(slot) = clients
            .iter()
            .find(|slot| slot.active.load(Ordering::Acquire) < WATCHES_PER_CLIENT)
        {
            slot.active.fetch_add(1, Ordering::AcqRel);
            return Ok(Lease {
                client: slot.client.clone(),
                active: slot.active.clone(),
                warm: slot.warm.clone(),
                opener: false,
            });
        }
        let client = key.build_client()?;
        let active = Arc::new(AtomicUsize::new(1));
        let (warm, _) = watch::channel(false);
        clients.push(Slot {
            client: client.clone(),
            active: active.clone(),
            warm: warm.clone(),
        });
        Ok(Lease {
            client,
            active,
            warm,
            opener: true,
        })
    }

    /// How many distinct clients the pool holds (for tests and diagnostics).
    pub fn client_count(&self) -> usize {
        let slots = self
            .slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        slots.values().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(origin: &str) -> ClientKey {
        ClientKey {
            origin: origin.into(),
            ca_pem: None,
            skip_verify: false,
            identity_pem: None,
        }
    }

    #[test]
    fn equal_keys_share_a_client_until_it_is_full() {
        let pool = ClientPool::default();
        let leases: Vec<Lease> = (0..WATCHES_PER_CLIENT)
            .map(|_| pool.lease(&key("https://a")).unwrap())
            .collect();
        assert_eq!(pool.client_count(), 1);
        let extra = pool.lease(&key("https://a")).unwrap();
        assert_eq!(pool.client_count(), 2);
        drop(leases);
        drop(extra);
        let _again = pool.lease(&key("https://a")).unwrap();
        assert_eq!(pool.client_count(), 1, "idle extra clients are dropped");
    }

    #[tokio::test]
    async fn later_leases_wait_for_the_first_answer_or_its_end() {
        let pool = ClientPool::default();
        let first = pool.lease(&key("https://warm")).unwrap();
        let second = pool.lease(&key("https://warm")).unwrap();
        first.ready().await; // the opener never waits
        let waiting = tokio::time::timeout(Duration::from_millis(50), second.ready()).await;
        assert!(
            waiting.is_err(),
            "the second lease waits for the first answer"
        );
        first.answered();
        tokio::time::timeout(Duration::from_millis(50), second.ready())
            .await
            .expect("ready once the first request was answered");

        let opener = pool.lease(&key("https://dropped")).unwrap();
        let other = pool.lease(&key("https://dropped")).unwrap();
        drop(opener);
        tokio::time::timeout(Duration::from_millis(50), other.ready())
            .await
            .expect("a dropped first lease releases the others");
    }

    #[tokio::test]
    async fn the_wait_is_bounded() {
        let pool = ClientPool::default();
        let _first = pool.lease(&key("https://slow")).unwrap();
        let second = pool.lease(&key("https://slow")).unwrap();
        let started = std::time::Instant::now();
        second.ready().await;
        let waited = started.elapsed();
        assert!(
            waited >= WARM_UP_WAIT && waited < WARM_UP_WAIT * 2,
            "{waited:?}"
        );
    }

    #[test]
    fn different_keys_get_different_clients() {
        let pool = ClientPool::default();
        let _a = pool.lease(&key("https://a")).unwrap();
        let _b = pool.lease(&key("https://b")).unwrap();
        let mut skip = key("https://a");
        skip.skip_verify = true;
        let _c = pool.lease(&skip).unwrap();
        assert_eq!(pool.client_count(), 3);
    }
}
