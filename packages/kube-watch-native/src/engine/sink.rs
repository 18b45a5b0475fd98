//! Where a run puts what it reads. Every sink hears of the run's failures and its end
//! ([`Sink`]); what it does with the lines depends on what it is: a plain watch's queue to
//! JavaScript passes each line on as it came ([`Passer`]), an informer's cache keeps the
//! objects, lists and all ([`Keeper`]). The runner reads, asks and decides the same way for
//! both; which of the two it fills is its plan (`super::plan`).

use std::sync::Arc;

use bytes::Bytes;

use super::step::{Initial, Kept, Pass, Progress, Step};
use crate::error::Failure;
use crate::projection::Projection;

/// What every sink hears of its run.
pub trait Sink: Send + Sync + 'static {
    /// A failure (the ERROR its consumers see); `retrying` unless it is the last.
    fn error(&self, failure: &Failure, retrying: bool);

    /// The run stopped: nothing more comes.
    fn end(&self);
}

/// A sink that keeps nothing: each line is passed on as it came.
pub trait Passer: Sink {
    /// One line of a watch body (without its terminator), read: what it asks of the runner.
    fn line(&self, line: Bytes, projection: Option<&Projection>) -> Step<Pass>;

    /// A line passed on as it came. A plain watch waits here, while its queue is full, for
    /// JavaScript to take events.
    fn pass(&self, line: Bytes, resource_version: Option<&str>) -> impl Future<Output = ()> + Send;
}

/// What a keeper reads a line into.
pub type Read<K> = Kept<<K as Keeper>::Change, <K as Keeper>::Listed>;

/// A list page, as a keeper read it.
#[derive(Debug)]
pub struct Page {
    /// How many objects it held.
    pub items: usize,
    /// `metadata.resourceVersion`: where a watch after the last page starts.
    pub resource_version: Option<String>,
    /// `metadata.continue`: the token for the next page; `None` on the last page.
    pub continue_token: Option<String>,
}

/// A sink that keeps the collection: it takes lists (streaming or in pages) in place of what
/// it kept, and the changes after them.
pub trait Keeper: Sink {
    /// Held while a watch body is read.
    type Watching: Send;
    /// A change a watch line makes to what is kept.
    type Change: Send;
    /// What a list is collected into.
    type Listed: Default + Send + Sync;
    /// Why a list page cannot be used.
    type Error: std::fmt::Display;

    /// A watch body is read until the guard is dropped (`initial`: a streaming list's).
    fn watching(self: &Arc<Self>, initial: bool) -> Self::Watching;

    /// One line of a watch body (without its terminator), read: what it asks of the runner;
    /// `initial` is the streaming list being collected, `None` once it synced. A change's
    /// object is packed when `pack`.
    fn line(
        &self,
        progress: &mut Progress,
        initial: &mut Option<Initial<Self::Listed>>,
        line: Bytes,
        projection: Option<&Projection>,
        pack: bool,
    ) -> Step<Read<Self>>;

    /// A list page's objects, read into `listed` (projected, packed when `pack`).
    fn page(
        &self,
        listed: &mut Self::Listed,
        body: &[u8],
        projection: Option<&Projection>,
        pack: bool,
    ) -> Result<Page, Self::Error>;

    /// A change a line was; how many changes it made.
    fn apply(&self, change: Self::Change) -> usize;

    /// A bookmark's resourceVersion, once the initial list is done.
    fn bookmark(&self, rv: &str);

    /// The list's objects at `rv` in place of what was kept (`relist`: the difference);
    /// how many changes that made.
    fn replace(&self, listed: Self::Listed, rv: &str, relist: bool) -> usize;

    /// A request succeeded after failures.
    fn recovered(&self);

    /// What it keeps was shown current without a change: the server's resourceVersion is not
    /// older than its own.
    fn proven(&self);

    /// Whether a reader asked to hear of the next change (once per asking).
    fn take_change_notice(&self) -> bool;
}
