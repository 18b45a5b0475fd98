//! A plain watch's plan ([`Once`]): one watch, exactly as it was asked for, each line passed on
//! as it came; the machine's rules for it (`Machine::once`) make its end or its first failure
//! the end.

use std::sync::Arc;

use bytes::Bytes;
use tokio::time::Instant;

use super::Plan;
use super::Run;
use crate::engine::backoff::{BackoffPolicy, Jitter};
use crate::engine::machine::{Machine, State, Transition};
use crate::engine::plan::Once;
use crate::engine::sink::Passer;
use crate::engine::step::{Pass, Step, StreamEnd};
use crate::engine::{Fault, ListWatch};
use crate::projection::Projection;

impl<S: Passer> Plan for Once<S> {
    type Sink = S;
    type Watching = ();

    const WHAT: &'static str = "watch";

    fn sink(&self) -> &Arc<S> {
        &self.sink
    }

    /// No list, no retry: the backoff is never waited out.
    fn machine(&self, _backoff: BackoffPolicy, jitter: Jitter) -> Machine {
        Machine::once(jitter)
    }

    /// Its first failure is its last (there is nothing to resume).
    fn refused(machine: &mut Machine, fault: &Fault, _rv: String, _now: Instant) -> Transition {
        machine.once_refused(fault)
    }

    /// Its end is the end.
    fn ended(machine: &mut Machine, end: StreamEnd, _rv: String, _now: Instant) -> Transition {
        machine.once_ended(end)
    }

    /// One watch, as it was asked for (from no resourceVersion of the run's).
    async fn run<A: ListWatch>(run: &mut Run<A, Self>) {
        let query = run.plan.query.clone();
        let state = run.watch(String::new(), query).await;
        debug_assert_eq!(state, State::Closed, "a plain watch's one watch is its end");
    }

    async fn line<A: ListWatch>(run: &mut Run<A, Self>, line: Bytes) -> Option<StreamEnd> {
        let step = run.plan.sink.line(line, run.config.projection.as_ref());
        run.take_notice();
        if let Some(events) = step.events() {
            run.stats.events(events);
        }
        match step {
            Step::Skip => {}
            Step::Warn(text) => run.warn(&text),
            Step::Read(Pass(line, rv)) => run.plan.sink.pass(line, rv.as_deref()).await,
            Step::End(end) => return Some(end),
        }
        None
    }

    /// A plain watch keeps nothing that tells whether it is watching.
    fn watching(&self, _initial: bool) {}

    /// A plain watch's failure is its last: there is no recovery to tell of.
    fn recovered(&self) {}

    /// A plain watch yields what the server sends, whatever its resourceVersion.
    fn probes(&self) -> bool {
        false
    }

    /// It keeps nothing to prove.
    fn proven(&self) {}

    /// It tries once: it says what the 406 means, and ends.
    fn metadata_refused(&self, projection: Option<&Projection>) -> Option<String> {
        projection?.accept(true)?;
        Some(
            "the server answered 406 Not Acceptable to a metadata-only (PartialObjectMetadata) \
             watch: it cannot serve metadataOnly; watch without it"
                .to_owned(),
        )
    }
}
