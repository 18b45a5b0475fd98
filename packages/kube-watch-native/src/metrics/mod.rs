//! What one metrics collection reads of a watcher, without N-API: its informers' and plain
//! watches' figures added up per series ([`series`]), what the plain watches count
//! ([`watches`]), and where its informers' native memory goes ([`memory`]). The binding turns
//! them into the one JSON text `metricsJson()` returns.

pub mod memory;
pub mod series;
pub mod watches;
