//! The watches, whatever the plan: a watch with the query its plan made up, and the reading
//! of a watch body (a watch's or a streaming list's), line by line, until it ends.

use tokio::time::Instant;

use super::Run;
use crate::engine::machine::State;
use crate::engine::plan::Plan;
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
    /// (`initial`: a streaming list's). Returns how it ended.
    pub(super) async fn stream(&mut self, mut lines: A::Lines, initial: bool) -> StreamEnd {
        let _open = self.stats.watch_open();
        let _watching = self.plan.watching(initial);
        self.progress.saw_events = false;
        loop {
            let line = match lines.next().await {
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
