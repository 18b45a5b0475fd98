//! A plain watch's rules (the plan `Once`, [`Machine::once`]) where they differ from an
//! informer's: no list and no retry, so the end of its one watch is the end.

use tokio::time::Instant;

use super::{Effect, Machine, Resume, State, Transition};
use crate::engine::step::StreamEnd;
use crate::error::Failure;

impl Machine {
    /// A plain watch's stream ended: a clean end quietly; an in-stream ERROR (410 too) as that
    /// one last ERROR, without a warning (the server said why); a fault as its last failure.
    pub(super) fn once_ended(&mut self, end: StreamEnd, rv: String, now: Instant) -> Transition {
        let status = match end {
            StreamEnd::Fault(fault) => return self.failed(&fault, Resume::Watch(rv), now),
            StreamEnd::Expired => 410,
            StreamEnd::Error { status, .. } => status,
            // `Unsupported` is a streaming list's, which a plain watch never makes.
            StreamEnd::Clean { .. } | StreamEnd::Unsupported => return (State::Closed, Vec::new()),
        };
        let failure = Failure::from_status(status);
        let effects = vec![
            Effect::CountError(failure.error_type.as_str()),
            Effect::Failed {
                failure,
                retrying: false,
            },
        ];
        (State::Closed, effects)
    }
}
