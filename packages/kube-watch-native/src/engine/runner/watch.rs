//! The watches, whatever the plan: a watch with the query its plan made up, and the reading
//! of a watch body (a watch's or a streaming list's), line by line, until it ends.

use std::pin::Pin;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use super::Plan;
use super::Run;
use crate::engine::machine::{Machine, State};
use crate::engine::step::StreamEnd;
use crate::engine::{Fault, ListWatch, WatchLines};
use crate::request::WatchQuery;

impl<A: ListWatch, P: Plan> Run<A, P> {
    /// Watches with `query`, from `rv` (the resourceVersion a failure resumes from).
    pub(super) async fn watch(&mut self, rv: String, query: WatchQuery) -> State {
        for effect in self.machine.watch_starting() {
            self.effect(effect);
        }
        let lines = match Box::pin(self.watch_lines(query)).await {
            Ok(lines) => {
                self.succeeded();
                lines
            }
            Err(fault) => {
                let transition = P::refused(&mut self.machine, &fault, rv, Instant::now());
                return self.perform(transition);
            }
        };
        self.machine.streaming(Instant::now());
        // Where nothing probes, the server taking the watch is its proof of life.
        if self.config.probe.is_none() {
            self.plan.proven();
        }
        // Boxed: an async fn's state keeps the arguments it moves into a callee's future beside
        // that future, so the stream's body reader would be held twice over a watch's life.
        let end = Box::pin(self.stream(lines, false)).await;
        let rv = self.current_rv();
        let transition = P::ended(&mut self.machine, end, rv, Instant::now());
        self.perform(transition)
    }

    pub(super) fn current_rv(&self) -> String {
        self.progress.rv.clone().unwrap_or_default()
    }

    /// Reads a watch body into the sink, each line as the plan says, until it ends
    /// (`initial`: a streaming list's). Returns how it ended. Once it has been silent for the
    /// run's probe interval (and again after each), the server's resourceVersion is probed
    /// while the watch stays open.
    pub(super) async fn stream(&mut self, mut lines: A::Lines, initial: bool) -> StreamEnd {
        let _open = self.stats.watch_open();
        let _watching = self.plan.watching(initial);
        self.progress.saw_events = false;
        let mut silence = self.config.probe.map(Silence::new);
        loop {
            let next = match silence.as_mut() {
                None => lines.next().await,
                Some(silence) => {
                    let next = lines.next();
                    tokio::pin!(next);
                    loop {
                        tokio::select! {
                            next = &mut next => break next,
                            () = silence.timer.as_mut() => {
                                if silence.due() && self.plan.probes()
                                    && let Some(end) = self.probe_silent().await
                                {
                                    return end;
                                }
                            }
                        }
                    }
                }
            };
            if let Some(silence) = silence.as_mut() {
                silence.heard = Instant::now();
            }
            let line = match next {
                Ok(Some(line)) => line,
                Ok(None) => {
                    return StreamEnd::Clean {
                        saw_events: self.progress.saw_events,
                    };
                }
                Err(err) => return StreamEnd::Fault(Fault::from_error(err)),
            };
            if let Some(end) = P::line(self, line).await {
                return end;
            }
        }
    }

    /// The probe of a silent watch: the end it brings, if any (see `Machine::silent_probed`).
    async fn probe_silent(&mut self) -> Option<StreamEnd> {
        let rv = self.current_rv();
        if rv.is_empty() {
            return None;
        }
        let probed = self.probe(&rv).await;
        let (end, effects) = Machine::silent_probed(probed);
        for effect in effects {
            self.effect(effect);
        }
        end
    }

    /// Warns once that a metadata-only request got full objects (see `Projection`).
    pub(super) fn take_notice(&self) {
        if let Some(notice) = self
            .config
            .projection
            .as_ref()
            .and_then(|p| p.take_notice())
        {
            self.warn(&notice);
        }
    }
}

/// When an open watch has been silent long enough to probe: one timer, moved on only when it
/// fires (a line just notes the time), so a busy watch pays a clock read per line.
struct Silence {
    after: Duration,
    /// Boxed: a timer is large, and only informers' streams have one.
    timer: Pin<Box<Sleep>>,
    /// The last line read (or probe made).
    heard: Instant,
}

impl Silence {
    fn new(after: Duration) -> Self {
        let heard = Instant::now();
        Self {
            after,
            timer: Box::pin(tokio::time::sleep_until(heard + after)),
            heard,
        }
    }

    /// The timer fired: whether the watch was silent for the whole interval (then the next
    /// interval starts now, for the probe about to be made); else it waits for the rest.
    fn due(&mut self) -> bool {
        let now = Instant::now();
        let due = self.heard + self.after;
        if now < due {
            self.timer.as_mut().reset(due);
            return false;
        }
        self.heard = now;
        self.timer.as_mut().reset(now + self.after);
        true
    }
}
