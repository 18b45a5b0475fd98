//! What a run does with its collection, as the types the runner is generic over (its trait,
//! `Plan`, is the runner's, with the code of each in `runner/`): the one place where an
//! informer's run and a plain watch's part ways.
//!
//! - [`Keeping`]: an informer's. List, watch from the list's resourceVersion, and again after
//!   every end (or relist) for as long as it runs, into a [`Keeper`].
//! - [`Once`]: a plain watch's (`watchResource`). One watch, exactly as asked for, each line
//!   passed on to a [`Passer`]; its end or its first failure (one ERROR) is the end.

use std::sync::Arc;

use super::sink::{Keeper, Passer};
use super::step::Initial;
use crate::request::WatchQuery;

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
