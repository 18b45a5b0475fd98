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
//! - [`fields`]: field selectors for reads, evaluated on the paths they name in the text.
//! - [`memory`]: where their native memory goes, from sizes and capacities.
//!
//! Built on these and on the list-watch engine ([`crate::engine`]), with I/O:
//! - [`reflector`]: one engine run per shared informer, with the cache as its keeper (what a
//!   watch line and a list page are to the cache), and the handle that starts and stops it.
//! - [`registry`]: shared informers by key, reference-counted handles.

pub mod cache;
pub mod fanout;
pub mod fields;
pub mod memory;
pub mod object;
pub mod reflector;
pub mod registry;
pub mod selector;
pub mod store;

#[cfg(test)]
mod proptests;
