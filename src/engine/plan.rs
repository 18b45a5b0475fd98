//! What a run does with its collection, as a type the runner is generic over: the one place
//! where an informer's run and a plain watch's part ways.
//!
//! - [`Keeping`]: an informer's. List, watch from the list's resourceVersion, and again after
//!   every end (or relist) for as long as it runs, into a [`Keeper`].
//! - [`Once`]: a plain watch's (`watchResource`). One watch, exactly as asked for, each line
//!   passed on to a [`Passer`]; its end or its first failure (one ERROR) is the end.

use std::sync::Arc;

use bytes::Bytes;
use tokio::time::Instant;

use super::backoff::{BackoffPolicy, Jitter};
use super::machine::{Machine, Transition};
use super::runner::Run;
use super::sink::{Keeper, Passer, Sink};
use super::step::{Initial, StreamEnd};
use super::transport::{Fault, ListWatch};
use crate::projection::Projection;
use crate::request::WatchQuery;

/// The plan of a run (see the module's documentation); the runner's code for each is in
/// `runner/keeping.rs` and `runner/once.rs`.
pub(crate) trait Plan: Send + Sync + Sized + 'static {
    /// Where what the run reads goes.
    type Sink: Sink;
    /// Held while a watch body is read.
    type Watching: Send;

    /// What the run's messages call it.
    const WHAT: &'static str;

    /// Its sink.
    fn sink(&self) -> &Arc<Self::Sink>;

    /// The decisions under its rules.
    fn machine(&self, backoff: BackoffPolicy, jitter: Jitter) -> Machine;

    /// What the answer `fault` to a watch from `rv` means.
    fn refused(machine: &mut Machine, fault: &Fault, rv: String, now: Instant) -> Transition;

    /// What the `end` of a watch's stream at `rv` means.
    fn ended(machine: &mut Machine, end: StreamEnd, rv: String, now: Instant) -> Transition;

    /// Runs `run` to its end.
    fn run<A: ListWatch>(run: &mut Run<A, Self>) -> impl Future<Output = ()> + Send;

    /// One line of a watch body, read and carried out: the end it brings, if it does.
    fn line<A: ListWatch>(
        run: &mut Run<A, Self>,
        line: Bytes,
    ) -> impl Future<Output = Option<StreamEnd>> + Send;

    /// A watch body is read until the guard is dropped (`initial`: a streaming list's).
    fn watching(&self, initial: bool) -> Self::Watching;

    /// A request succeeded after failures.
    fn recovered(&self);

    /// Whether what it read is a complete list whose resourceVersion a probe may compare with
    /// the server's (see `RunConfig::probe`).
    fn probes(&self) -> bool;

    /// What it read was shown current (a probe answered, or a resumed watch where nothing
    /// probes).
    fn proven(&self);

    /// The server refused the metadata-only `Accept` header (406) of a run with `projection`:
    /// what it says of it, if anything.
    fn metadata_refused(&self, projection: Option<&Projection>) -> Option<String>;
}

/// An informer's plan: list and keep watching, into `keeper`.
pub(crate) struct Keeping<K: Keeper> {
    pub(super) keeper: Arc<K>,
    /// The streaming list being collected; `None` once it synced.
    pub(super) initial: Option<Initial<K::Listed>>,
    /// A list was just taken: the watch that follows it needs no probe.
    pub(super) listed: bool,
}

impl<K: Keeper> Keeping<K> {
    /// Lists and watches into `keeper`.
    pub(crate) fn new(keeper: Arc<K>) -> Self {
        Self {
            keeper,
            initial: None,
            listed: false,
        }
    }
}

/// A plain watch's plan: one watch with `query`, passed on to `sink`.
pub(crate) struct Once<S: Passer> {
    pub(super) sink: Arc<S>,
    pub(super) query: WatchQuery,
}

impl<S: Passer> Once<S> {
    /// One watch with `query`, its lines passed on to `sink`.
    pub(crate) fn new(sink: Arc<S>, query: WatchQuery) -> Self {
        Self { sink, query }
    }
}
