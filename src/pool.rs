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
}

/// The process-wide client pool.
#[derive(Default)]
pub struct ClientPool {
    slots: Mutex<HashMap<ClientKey, Vec<Slot>>>,
}

/// A client lent to one watch; returning it is dropping it.
pub struct Lease {
    /// The shared client.
    pub client: reqwest::Client,
    active: Arc<AtomicUsize>,
}

impl Drop for Lease {
    fn drop(&mut self) {
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
            });
        }
        let client = key.build_client()?;
        let active = Arc::new(AtomicUsize::new(1));
        clients.push(Slot {
            client: client.clone(),
            active: active.clone(),
        });
        Ok(Lease { client, active })
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
