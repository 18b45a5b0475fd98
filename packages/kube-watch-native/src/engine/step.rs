//! One line of a watch body, as the runner sees it: where the stream is (the last
//! resourceVersion, whether it carried traffic) and what the line asks for. What a line means
//! is the sink's to read; what it asks of the runner is a [`Step`], which the runner carries
//! out.

use crate::engine::transport::Fault;

/// A streaming list still collecting its initial events, in what the keeper lists into.
#[derive(Debug)]
pub struct Initial<L> {
    /// The ADDEDs so far.
    pub objects: L,
    /// It is a relist (after a 410), to diff against what is kept.
    pub relist: bool,
}

/// Where a watch body is.
#[derive(Debug, Default)]
pub struct Progress {
    /// The last resourceVersion seen (list, events, bookmarks): where a resumed watch starts.
    pub rv: Option<String>,
    /// The stream carried an event or a bookmark (a clean end after traffic resets the
    /// backoff).
    pub saw_events: bool,
}

/// How a watch (or a streaming list's stream) ended.
#[derive(Debug)]
pub enum StreamEnd {
    /// The server ended it (its `timeoutSeconds`).
    Clean {
        /// It carried traffic.
        saw_events: bool,
    },
    /// 410: the resourceVersion is too old.
    Expired,
    /// The server ended it with an in-stream ERROR of this code (other than an informer's
    /// 410, which is [`StreamEnd::Expired`]).
    Error {
        /// The Status's code.
        status: u16,
        /// The pause it asks for.
        retry_after: Option<std::time::Duration>,
    },
    /// A non-ADDED event before the initial-events-end bookmark: no streaming list here.
    Unsupported,
    /// A probe found the server's resourceVersion behind the informer's (its storage restored,
    /// the cluster recreated): the server's, as it said it.
    Behind(String),
    /// It failed.
    Fault(Fault),
}

/// What one line asks of the runner; `R` is what the sink read it into.
#[derive(Debug)]
pub enum Step<R> {
    /// Nothing: a blank line, a type the sink does not know.
    Skip,
    /// A line or an object that cannot be used (said in the warning); the stream goes on.
    Warn(String),
    /// What the sink read, for the runner to count and then hand back.
    Read(R),
    /// The stream ends so.
    End(StreamEnd),
}

/// What a read line counts in the stats.
pub trait Counted {
    /// How many events it counts (bookmarks as 0, for the time of the last event).
    fn events(&self) -> usize;
}

impl<R: Counted> Step<R> {
    /// How many events it counts in the run's stats, if it counts at all.
    pub fn events(&self) -> Option<usize> {
        match self {
            Self::Read(read) => Some(read.events()),
            // The change that showed a streaming list is not served was received all the same.
            Self::End(StreamEnd::Unsupported) => Some(1),
            Self::Skip | Self::Warn(_) | Self::End(_) => None,
        }
    }
}

/// A plain watch's event, to be passed on as it came (after it is counted, so that a consumer
/// that has it finds it in the stats): its text and resourceVersion.
#[derive(Debug)]
pub struct Pass(pub bytes::Bytes, pub Option<String>);

impl Counted for Pass {
    fn events(&self) -> usize {
        1
    }
}

/// What a keeper reads a line into: `C` a change to what it keeps, `L` what it lists into.
#[derive(Debug)]
pub enum Kept<C, L> {
    /// An ADDED of the streaming list's initial events, collected.
    Collected,
    /// A change for the keeper.
    Change(C),
    /// A bookmark; the resourceVersion for the keeper when the initial list is done.
    Bookmark(Option<String>),
    /// The streaming list's initial events are complete, at `Progress::rv`.
    Synced(Initial<L>),
}

impl<C, L> Counted for Kept<C, L> {
    fn events(&self) -> usize {
        match self {
            Self::Collected | Self::Change(_) => 1,
            Self::Bookmark(_) | Self::Synced(_) => 0,
        }
    }
}
