//! A plain watch's rules (the plan `Once`, [`Machine::once`]) where they differ from an
//! informer's: no list and no retry, so the end of its one watch is the end. Its plan asks
//! these in place of [`Machine::watch_refused`] and [`Machine::watch_ended`].

use super::{Effect, Machine, State, Transition};
use crate::engine::step::StreamEnd;
use crate::engine::transport::Fault;
use crate::error::Failure;

impl Machine {
    /// The answer to a plain watch was a failure: its last, whatever it was (a 410 too: there
    /// is no list to go back to), with one ERROR and a warning; it gives up on nothing it was
    /// promised.
    pub fn once_refused(&mut self, fault: &Fault) -> Transition {
        let failure = fault.failure();
        let mut effects = vec![Effect::CountError(failure.error_type.as_str())];
        if let Fault::Status { status: 406, .. } = fault {
            effects.push(Effect::RefuseMetadataOnly);
        }
        effects.push(Effect::Warn(fault.describe()));
        effects.push(Effect::Failed {
            failure,
            retrying: false,
        });
        (State::Closed, effects)
    }

    /// A plain watch's stream ended: a clean end quietly; an in-stream ERROR (410 too) as that
    /// one last ERROR, without a warning (the server said why); a fault as its last failure.
    pub fn once_ended(&mut self, end: StreamEnd) -> Transition {
        let status = match end {
            StreamEnd::Fault(fault) => return self.once_refused(&fault),
            StreamEnd::Expired => 410,
            StreamEnd::Error { status, .. } => status,
            // `Unsupported` is a streaming list's and `Behind` a probe's, which a plain watch
            // never makes.
            StreamEnd::Clean { .. } | StreamEnd::Unsupported | StreamEnd::Behind(_) => {
                return (State::Closed, Vec::new());
            }
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
