//! Where a runner puts what it reads: an informer's [`Cache`], or a plain watch's queue to
//! JavaScript (`crate::outbox::Outbox`), which keeps nothing and passes each line on as it came.
//!
//! The runner asks, answers, reads and decides the same way for both; only what a line
//! becomes differs: for the cache an object (read by the pure `step`), for a plain watch the
//! line's own text.

use std::sync::Arc;

use bytes::Bytes;

use super::step::{Progress, Step, step};
use crate::error::Failure;
use crate::informer::cache::{Cache, Watching};
use crate::informer::store::{ChangeKind, Listed, Object};
use crate::projection::Projection;

/// What a runner keeps (or passes on) what it reads in.
pub trait Sink: Send + Sync + 'static {
    /// Held while a watch body is read.
    type Watching: Send;

    /// A watch body is read until the guard is dropped (`initial`: a streaming list's).
    fn watching(self: &Arc<Self>, initial: bool) -> Self::Watching;

    /// One line of a watch body (without its terminator), read: what it asks of the runner.
    fn line(
        &self,
        progress: &mut Progress,
        line: Bytes,
        projection: Option<&Projection>,
        pack: bool,
    ) -> Step;

    /// A line passed on as it came (a [`Step::Pass`]). A plain watch waits here, while its
    /// queue is full, for JavaScript to take events.
    fn pass(&self, line: Bytes, resource_version: Option<&str>) -> impl Future<Output = ()> + Send;

    /// A change the line was (a [`Step::Change`]); how many changes it made.
    fn apply(&self, kind: ChangeKind, object: Object) -> usize;

    /// A bookmark's resourceVersion, once the initial list is done.
    fn bookmark(&self, rv: &str);

    /// The list's objects at `rv` in place of what was kept (`relist`: the difference);
    /// how many changes that made.
    fn replace(&self, listed: Listed, rv: &str, relist: bool) -> usize;

    /// A failure (the ERROR its consumers see); `retrying` unless it is the last.
    fn error(&self, failure: &Failure, retrying: bool);

    /// A request succeeded after failures.
    fn recovered(&self);

    /// Whether a reader asked to hear of the next change (once per asking).
    fn take_change_notice(&self) -> bool;

    /// The runner stopped: nothing more comes.
    fn end(&self);
}

impl Sink for Cache {
    type Watching = Watching;

    fn watching(self: &Arc<Self>, initial: bool) -> Watching {
        Cache::watching(self, initial)
    }

    fn line(
        &self,
        progress: &mut Progress,
        line: Bytes,
        projection: Option<&Projection>,
        pack: bool,
    ) -> Step {
        step(progress, &line, projection, pack)
    }

    /// Never called: the cache's lines are objects, never passed on.
    async fn pass(&self, _line: Bytes, _resource_version: Option<&str>) {}

    fn apply(&self, kind: ChangeKind, object: Object) -> usize {
        Cache::apply(self, kind, object)
    }

    fn bookmark(&self, rv: &str) {
        Cache::bookmark(self, rv);
    }

    fn replace(&self, listed: Listed, rv: &str, relist: bool) -> usize {
        Cache::replace(self, listed, rv, relist)
    }

    fn error(&self, failure: &Failure, retrying: bool) {
        Cache::error(self, failure, retrying);
    }

    fn recovered(&self) {
        Cache::recovered(self);
    }

    fn take_change_notice(&self) -> bool {
        Cache::take_change_notice(self)
    }

    fn end(&self) {
        Cache::end(self);
    }
}
