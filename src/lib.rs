//! kube-watch-native: Kubernetes watches for Node.js, with the network, TLS, HTTP, line
//! framing and event classification on Rust threads.
//!
//! The core (`request`, `auth`, `tls`, `proxy`, `http` (our HTTP/2 connections and their
//! stream accounting), `framing`, `event`, `projection`, `batch`, `outbox`, `watch`, `error`,
//! `redact`, `heap` (memory back to the system after a list), `informer` (the cache, its
//! consumers' cursors and the backoff of a list-watch that never gives up) and `metrics` (what
//! one metrics collection reads, added up per series)) is plain Rust and tested with `cargo test`; `binding` is the only
//! module that knows N-API.
#![deny(clippy::all)]

pub mod auth;
pub mod batch;
pub mod error;
pub mod event;
pub mod field_path;
pub mod framing;
pub mod heap;
pub mod http;
pub mod informer;
pub mod metrics;
mod outbox;
pub mod projection;
pub mod proxy;
pub mod redact;
pub mod request;
pub mod tls;
pub mod watch;

// The N-API glue is exercised by the JavaScript suite; unit tests cover the core alone.
#[cfg(not(test))]
mod binding;
