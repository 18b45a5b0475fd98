//! The informer: a list-watch that never gives up, with the cluster's state cached natively.
//!
//! Layers, each plain Rust without N-API or I/O, so `cargo test` covers them alone:
//! - [`object`]: one object in one allocation: its raw JSON text and where the few metadata
//!   fields the informer reads lie in it.
//! - [`store`]: the objects by key (namespace/name); watch events and relist diffs become
//!   consistent changes.
//! - [`fanout`]: one cursor per consumer, coalescing per object so a slow consumer's memory is
//!   bounded by the cache, never by the event rate; SYNCED is a barrier.
//! - [`cache`]: the store and fanout under one lock order, with `get`/`list` for readers.
//! - [`selector`]: Kubernetes label selectors evaluated on the labels read from the text.
//! - [`wire`]: list pages and watch lines read without building value trees.
//! - [`backoff`]: when to try again after a failure.
//! - [`recovery`]: news that a cluster answers again, waking its informers' backoffs.
//!
//! Built on these, with I/O:
//! - [`connect`]: the credential provider and the endpoint a credential resolves to.
//! - [`transport`]: a list page and a watch's lines through the connection pool, behind the
//!   `ListWatch` trait (the plain watch's transport too); HTTP's status and pauses settled.
//! - [`reflector`]: the list-watch state machine and its runner, one task per shared informer.
//! - [`registry`]: shared informers by key, reference-counted handles.
//! - [`stats`]: the reflector's counters.
//! - [`memory`]: where their native memory goes, from sizes and capacities.

pub mod backoff;
pub mod cache;
pub mod connect;
pub mod fanout;
pub mod memory;
pub mod object;
pub mod recovery;
pub mod reflector;
pub mod registry;
pub mod selector;
pub mod stats;
pub mod store;
pub mod transport;
pub mod wire;

#[cfg(test)]
mod proptests;
