//! kube-watch-native: Kubernetes watches for Node.js, with the network, TLS, HTTP, line
//! framing and event classification on Rust threads.
//!
//! The core is plain Rust and tested with `cargo test`: `request`, `auth`, `tls`, `proxy`,
//! `http` (our HTTP/2 connections and their stream accounting), `framing`, `projection`,
//! `batch`, `watch` (a plain watch: its lines' reader, its queue to JavaScript), `error`, `redact`, `heap` (memory back to the
//! system after a list), `size` (what the standard structures allocate), `engine` (the
//! list-watch that never gives up: its requests, its decisions, its backoff), `informer` (the
//! cache and its consumers' cursors, over the engine) and `metrics` (what one metrics
//! collection reads, added up per series). `binding` is the only module that knows N-API.
#![deny(clippy::all)]

pub mod access;
pub mod auth;
pub mod batch;
pub mod engine;
pub mod error;
pub mod field_path;
pub mod framing;
pub mod heap;
pub mod http;
pub mod informer;
pub mod logs;
pub mod metrics;
pub mod projection;
pub mod proxy;
pub mod redact;
pub mod request;
pub mod size;
pub mod tls;
pub mod watch;

// Compiled under `cargo test` too: napi-sys's default `dyn-symbols` feature makes every N-API
// function a pointer loaded from the host process at load time (napi-sys 3.4 `src/lib.rs`:
// `load_symbol`, and a stub that reports "Node-API symbol … has not been loaded"), so a test
// binary has no undefined symbols to link; and napi-derive emits each export's registration
// (its `ctor`) only under `cfg(not(test))` (napi-derive-backend 7 `codegen/fn.rs`), so the
// exports no Rust code calls look unused there: that is what the `allow` is for.
#[cfg_attr(test, allow(dead_code))]
mod binding;
