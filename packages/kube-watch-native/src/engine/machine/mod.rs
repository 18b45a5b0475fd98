//! A run's decisions, pure: what an answer, a failure or the end of a stream means for
//! an informer, given every flag it keeps. No I/O and no clock of its own (`now` is an input,
//! the jitter a seeded generator), no cache: each call returns the next [`State`] and the
//! [`Effect`]s the runner (`Run`, in the parent module) carries out, in order. So each
//! transition is a row of a table test (`machine/tests/`), and the runner is left with the
//! requests, the streams and the performing.

use std::time::Duration;

use tokio::time::Instant;

use super::step::StreamEnd;
use crate::engine::backoff::{Backoff, BackoffPolicy, Jitter, MAX_RETRY_AFTER};
use crate::engine::transport::Fault;
use crate::error::Failure;

/// Where a run is: what the runner does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// The initial list (`relist`: again after a 410, to diff against the cache): a streaming
    /// list where the cluster serves one, else pages.
    Listing {
        /// A relist.
        relist: bool,
    },
    /// A list in `limit`/`continue` pages (the cluster serves no streaming list).
    ListingPages {
        /// A relist.
        relist: bool,
    },
    /// Watching from `rv`.
    Watching {
        /// The resourceVersion to watch from.
        rv: String,
    },
    /// Waiting after a failure until `until`, then `resume`; woken early by the cluster's
    /// news of recovery, but never before `earliest` (the server's `Retry-After`).
    Backoff {
        /// The end of the wait.
        until: Instant,
        /// No earlier than this, whatever the news.
        earliest: Instant,
        /// What follows.
        resume: Resume,
    },
    /// Stopped for good.
    Closed,
}

/// What follows a backoff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// The list (or relist) again.
    List {
        /// A relist.
        relist: bool,
    },
    /// The watch from this resourceVersion.
    Watch(String),
}

impl Resume {
    fn state(self) -> State {
        match self {
            Self::List { relist } => State::Listing { relist },
            Self::Watch(rv) => State::Watching { rv },
        }
    }
}

/// What the runner does for a transition, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Count an error of this type (the contract's `errorType`) in the informer's stats.
    CountError(&'static str),
    /// Count a reconnect of the watch.
    CountReconnect,
    /// Count a relist.
    CountRelist,
    /// A warning for the logger.
    Warn(String),
    /// A notice for the logger's `info`.
    Info(String),
    /// The failure goes into the cache's health (an ERROR event for its consumers,
    /// `retrying` unless it is the last) and the reporter hears of it.
    Failed {
        /// The ERROR's type and status.
        failure: Failure,
        /// The informer tries again.
        retrying: bool,
    },
    /// A request was answered 200: the failure in the cache's health is over; after failures
    /// (`news`), the reporter and the cluster's other informers hear of the recovery.
    Succeeded {
        /// It follows failures.
        news: bool,
    },
    /// The server refused the metadata-only `Accept` header (406): ask for plain JSON from
    /// now on, and cut the objects down here.
    RefuseMetadataOnly,
    /// The cluster serves no streaming list: remember it for its other informers.
    RememberPaginated,
}

/// How a streaming list's request went, for [`Machine::streaming_list_refused`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamingList {
    /// A relist.
    pub relist: bool,
    /// The list's kind was chosen by the cluster (`initialList: auto`): one it does not serve
    /// falls back to pages.
    pub auto: bool,
    /// The request carried the metadata-only `Accept` header.
    pub metadata_only: bool,
}

/// What a probe of the server's resourceVersion found: a LIST of one object with
/// `resourceVersionMatch=NotOlderThan` and the informer's resourceVersion (see
/// `RunConfig::probe`).
#[derive(Debug)]
pub enum Probed {
    /// Answered 200: the server's resourceVersion is not older than the informer's.
    Current,
    /// Answered 504 `ResourceVersionTooLarge`: the server is behind; its resourceVersion as it
    /// said it ("unknown" when it did not).
    Behind(String),
    /// Any other failure.
    Failed(Fault),
}

impl Probed {
    /// What a probe's answer (200, or the fault it was) means.
    pub fn of(answer: Result<(), Fault>) -> Self {
        match answer {
            Ok(()) => Self::Current,
            Err(fault) => match too_large(&fault) {
                Some(current) => Self::Behind(current),
                None => Self::Failed(fault),
            },
        }
    }
}

/// The server's resourceVersion, when `fault` is its answer that a resourceVersion asked for is
/// ahead of it: 504, reason `Timeout`, a cause `ResourceVersionTooLarge`, the message "Too large
/// resource version: 900, current: 252" (the API server's `NewTooLargeResourceVersionError`).
fn too_large(fault: &Fault) -> Option<String> {
    let Fault::Status {
        status: 504,
        detail,
        ..
    } = fault
    else {
        return None;
    };
    if !detail.contains("ResourceVersionTooLarge") && !detail.contains("Too large resource version")
    {
        return None;
    }
    let current = detail
        .split_once("current: ")
        .map(|(_, rest)| {
            rest.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        })
        .filter(|digits| !digits.is_empty());
    Some(current.unwrap_or_else(|| "unknown".into()))
}

/// How many times an expired continue token restarts one list before it counts as a failure.
pub const MAX_LIST_RESTARTS: u32 = 3;

/// What follows a list page's failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageRefused {
    /// The continue token expired: list again from the first page, at once, without an ERROR.
    Restart(Effect),
    /// A failure like any other.
    Then(Transition),
}

/// A 4xx answer to a streaming list that means "not served here" rather than a fault of the
/// moment (auth, rate limits, a missing resource) that a paginated list would meet as well.
fn means_unsupported(status: u16) -> bool {
    (400..500).contains(&status) && !matches!(status, 401 | 403 | 404 | 408 | 429)
}

/// Every flag of one run, and the transitions between its [`State`]s.
#[derive(Debug)]
pub struct Machine {
    backoff: Backoff,
    jitter: Jitter,
    /// A 401 or 403 came back: the next request asks for a fresh credential first.
    stale: bool,
    /// A watch was started before (so the next one is a reconnect).
    watched: bool,
    /// The last request failed (so the next success is news for the cluster).
    failing: bool,
    /// The first sync was reported.
    synced_once: bool,
}

/// A transition: the next state, and what to do on the way.
pub type Transition = (State, Vec<Effect>);

impl Machine {
    /// No request made yet.
    pub fn new(policy: BackoffPolicy, jitter: Jitter) -> Self {
        Self {
            backoff: Backoff::new(policy),
            jitter,
            stale: false,
            watched: false,
            failing: false,
            synced_once: false,
        }
    }

    /// A plain watch's (the plan `Once`): it never waits a backoff out, so it has no policy;
    /// its plan asks `once.rs`'s questions in place of an informer's refusals and ends.
    pub fn once(jitter: Jitter) -> Self {
        Self::new(BackoffPolicy::default(), jitter)
    }

    /// Where an informer starts: with its list.
    pub fn start(&self) -> State {
        State::Listing { relist: false }
    }

    /// The backoff's count of failures (the current step).
    #[cfg(test)]
    pub fn failures(&self) -> u32 {
        self.backoff.failures()
    }

    /// The backoff, for a test that sets when a watch began.
    #[cfg(test)]
    pub fn backoff_mut(&mut self) -> &mut Backoff {
        &mut self.backoff
    }

    /// A draw from `[0, 1)` of its jitter (a watch's timeout, a woken backoff's delay).
    pub fn draw(&mut self) -> f64 {
        self.jitter.draw()
    }

    /// Whether the next request must ask for a fresh credential (after a 401 or 403).
    pub fn credential_stale(&self) -> bool {
        self.stale
    }

    /// A fresh credential was taken.
    pub fn credential_renewed(&mut self) {
        self.stale = false;
    }

    /// A request was answered 200.
    pub fn answered(&mut self) -> Effect {
        Effect::Succeeded {
            news: std::mem::take(&mut self.failing),
        }
    }

    /// A watch is about to be asked for: a reconnect if one was asked for before.
    pub fn watch_starting(&mut self) -> Vec<Effect> {
        if std::mem::replace(&mut self.watched, true) {
            vec![Effect::CountReconnect]
        } else {
            Vec::new()
        }
    }

    /// A watch (or a streaming list) is streaming since `now`.
    pub fn streaming(&mut self, now: Instant) {
        self.watched = true;
        self.backoff.watching(now.into_std());
    }

    /// The list is cached: whether this is the informer's first sync (to report).
    pub fn synced(&mut self) -> bool {
        !std::mem::replace(&mut self.synced_once, true)
    }

    /// A failure at `now`: a terminal one (a refused credential, HTTP 400 or 422) closes the
    /// informer; any other waits out a backoff step (at least the server's `Retry-After`,
    /// capped) with one `ERROR { retrying: true }` and a warning, then `resume`s.
    pub fn failed(&mut self, fault: &Fault, resume: Resume, now: Instant) -> Transition {
        let failure = fault.failure();
        let mut effects = vec![Effect::CountError(failure.error_type.as_str())];
        if let Fault::Status { status: 406, .. } = fault {
            effects.push(Effect::RefuseMetadataOnly);
        }
        let terminal = match fault {
            Fault::Refused(_) => true,
            Fault::Status { status, .. } => matches!(status, 400 | 422),
            _ => false,
        };
        if terminal {
            effects.push(Effect::Warn(format!("{}; giving up", fault.describe())));
            effects.push(Effect::Failed {
                failure,
                retrying: false,
            });
            return (State::Closed, effects);
        }
        if let Fault::Status {
            status: 401 | 403, ..
        } = fault
        {
            self.stale = true;
        }
        let retry_after = match fault {
            Fault::Status { retry_after, .. } => retry_after.map(|d| d.min(MAX_RETRY_AFTER)),
            _ => None,
        };
        let wait = self
            .backoff
            .failed(now.into_std(), retry_after, self.jitter.draw());
        self.failing = true;
        // Every failure is one backoff step (one wait, one request after it), so one ERROR
        // here is one per step. Keying it on the step number instead would swallow the first
        // ERROR after a healthy minute, when the count starts over at a step already reported.
        effects.push(Effect::Failed {
            failure,
            retrying: true,
        });
        effects.push(Effect::Warn(format!(
            "{}; retrying in {:.1} s",
            fault.describe(),
            wait.as_secs_f64()
        )));
        let state = State::Backoff {
            until: now + wait,
            earliest: now + retry_after.unwrap_or_default(),
            resume,
        };
        (state, effects)
    }

    /// The watch's resourceVersion expired (410, as an answer or in the stream): relist.
    pub fn expired() -> Transition {
        let effects = vec![
            Effect::CountRelist,
            Effect::Info("resourceVersion expired (410); relisting".into()),
        ];
        (State::Listing { relist: true }, effects)
    }

    /// The server's resourceVersion (`current`) is behind the `rv` the informer reached: what it
    /// keeps is another cluster's past, so it relists from scratch (no resourceVersion), and its
    /// consumers get the difference.
    pub fn behind(rv: &str, current: &str) -> Transition {
        let effects = vec![
            Effect::CountRelist,
            Effect::Warn(format!(
                "the server's resourceVersion ({current}) is behind the {rv} this informer \
                 reached: its storage was restored or the cluster recreated; relisting"
            )),
        ];
        (State::Listing { relist: true }, effects)
    }

    /// What a probe before a watch resumes from `rv` found: `None` to watch; else a server
    /// behind relists, and a failure is the watch's own (a 410 relists, anything else waits a
    /// backoff step out and probes again).
    pub fn resume_probed(
        &mut self,
        probed: Probed,
        rv: String,
        now: Instant,
    ) -> Option<Transition> {
        match probed {
            Probed::Current => None,
            Probed::Behind(current) => Some(Self::behind(&rv, &current)),
            Probed::Failed(fault) => Some(self.watch_refused(&fault, rv, now)),
        }
    }

    /// What a probe made while an open watch was silent found: the end of the watch it
    /// brings (a server behind, a 410), if any. Any other failure leaves the watch be (its idle
    /// limit ends it if the server is gone) with a notice, and proves nothing.
    pub fn silent_probed(probed: Probed) -> (Option<StreamEnd>, Vec<Effect>) {
        match probed {
            Probed::Current => (None, Vec::new()),
            Probed::Behind(current) => (Some(StreamEnd::Behind(current)), Vec::new()),
            Probed::Failed(Fault::Status { status: 410, .. }) => {
                (Some(StreamEnd::Expired), Vec::new())
            }
            Probed::Failed(fault) => {
                let notice = format!(
                    "a probe of the server's resourceVersion failed ({}); the watch goes on",
                    fault.describe()
                );
                (None, vec![Effect::Info(notice)])
            }
        }
    }

    /// The answer to a watch from `rv` was a failure: a 410 relists.
    pub fn watch_refused(&mut self, fault: &Fault, rv: String, now: Instant) -> Transition {
        match fault {
            Fault::Status { status: 410, .. } => Self::expired(),
            _ => self.failed(fault, Resume::Watch(rv), now),
        }
    }

    /// The answer to a list page was a failure: a 410 to a page after the first (its continue
    /// token expired) restarts the list, up to [`MAX_LIST_RESTARTS`] times (`restarts` so far);
    /// anything else is a failure, resumed by listing again.
    pub fn page_refused(
        &mut self,
        fault: &Fault,
        relist: bool,
        continuing: bool,
        restarts: u32,
        now: Instant,
    ) -> PageRefused {
        if continuing
            && restarts < MAX_LIST_RESTARTS
            && let Fault::Status { status: 410, .. } = fault
        {
            let info = "the list's continue token expired; listing again";
            return PageRefused::Restart(Effect::Info(info.into()));
        }
        PageRefused::Then(self.failed(fault, Resume::List { relist }, now))
    }

    /// The answer to a streaming list was a failure: `auto`, a 4xx that means it is not
    /// served falls back to pages (and is remembered), but a 406 to the metadata-only header
    /// says nothing of streaming lists (it turns the header off, and the list is asked again).
    pub fn streaming_list_refused(
        &mut self,
        fault: &Fault,
        list: StreamingList,
        now: Instant,
    ) -> Transition {
        let resume = Resume::List {
            relist: list.relist,
        };
        match fault {
            Fault::Status { status: 406, .. } if list.metadata_only => {
                self.failed(fault, resume, now)
            }
            Fault::Status { status, detail, .. } if list.auto && means_unsupported(*status) => {
                let effects = vec![
                    Effect::RememberPaginated,
                    Effect::Info(format!(
                        "streaming lists are not served (HTTP {status}: {detail}); listing in pages"
                    )),
                ];
                let state = State::ListingPages {
                    relist: list.relist,
                };
                (state, effects)
            }
            _ => self.failed(fault, resume, now),
        }
    }

    /// A streaming list's stream ended: `synced`, it became a watch and ended as one; else
    /// it ended before its initial-events-end bookmark (a change inside it: the cluster
    /// serves none, so pages when `auto`).
    pub fn streaming_list_ended(
        &mut self,
        end: StreamEnd,
        synced: bool,
        list: StreamingList,
        rv: String,
        now: Instant,
    ) -> Transition {
        let resume = Resume::List {
            relist: list.relist,
        };
        let fault = match end {
            StreamEnd::Unsupported if list.auto => {
                let effects = vec![
                    Effect::RememberPaginated,
                    Effect::Info(
                        "the streaming list sent a change before its initial events ended; \
                         listing in pages"
                            .into(),
                    ),
                ];
                let state = State::ListingPages {
                    relist: list.relist,
                };
                return (state, effects);
            }
            StreamEnd::Unsupported => Fault::Protocol(
                "the streaming list sent a change before its initial events ended".into(),
            ),
            end if synced => return self.watch_ended(end, rv, now),
            // Probes are made only once the list synced; a relist either way.
            StreamEnd::Behind(current) => return Self::behind(&rv, &current),
            StreamEnd::Expired => Fault::Status {
                status: 410,
                retry_after: None,
                detail: "the streaming list expired".into(),
            },
            StreamEnd::Clean { .. } => Fault::Protocol(
                "the streaming list ended before its initial-events-end bookmark".into(),
            ),
            StreamEnd::Error {
                status,
                retry_after,
            } => in_stream(status, retry_after),
            StreamEnd::Fault(fault) => fault,
        };
        self.failed(&fault, resume, now)
    }

    /// A watch's stream ended at `rv` (the last resourceVersion seen): a clean end after
    /// traffic (the server's `timeoutSeconds`) watches again at once, one so soon and silent
    /// that it counts as a failure waits a backoff step without an ERROR; a 410 relists; a
    /// fault is a failure.
    pub fn watch_ended(&mut self, end: StreamEnd, rv: String, now: Instant) -> Transition {
        match end {
            StreamEnd::Clean { saw_events } => {
                match self
                    .backoff
                    .ended(now.into_std(), saw_events, self.jitter.draw())
                {
                    None => (State::Watching { rv }, Vec::new()),
                    Some(wait) => {
                        let state = State::Backoff {
                            until: now + wait,
                            earliest: now,
                            resume: Resume::Watch(rv),
                        };
                        (state, Vec::new())
                    }
                }
            }
            StreamEnd::Expired => Self::expired(),
            StreamEnd::Behind(current) => Self::behind(&rv, &current),
            // Only a streaming list's stream can say this, and only before it synced.
            StreamEnd::Unsupported => (State::Listing { relist: true }, Vec::new()),
            StreamEnd::Error {
                status,
                retry_after,
            } => self.failed(&in_stream(status, retry_after), Resume::Watch(rv), now),
            StreamEnd::Fault(fault) => self.failed(&fault, Resume::Watch(rv), now),
        }
    }

    /// A backoff's sleep is over.
    pub fn woke(resume: Resume) -> State {
        resume.state()
    }
}

/// The fault an in-stream ERROR of `status` is to an informer.
fn in_stream(status: u16, retry_after: Option<Duration>) -> Fault {
    Fault::Status {
        status,
        retry_after,
        detail: "an ERROR event in the watch stream".into(),
    }
}

/// The timeout a watch asks the server for: `base` (at least a second), jittered up to twice.
pub fn jittered_timeout(base: Duration, draw: f64) -> u64 {
    let base = base.as_secs().max(1);
    base + (draw * base as f64) as u64
}

mod once;

#[cfg(test)]
mod tests;
