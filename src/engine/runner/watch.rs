//! The watches: a watch from a resourceVersion, and the reading of a watch body (a watch's
//! or a streaming list's) into the cache, line by line, until it ends.

use tokio::time::Instant;

use crate::request::WatchQuery;

use super::Run;
use crate::engine::Plan;
use crate::engine::machine::State;
use crate::engine::sink::Sink;
use crate::engine::step::{Initial, Step, StreamEnd};
use crate::engine::{Fault, ListWatch, WatchLines};

impl<A: ListWatch, S: Sink> Run<A, S> {
    /// Watches from `rv`.
    pub(super) async fn watch(&mut self, rv: String) -> State {
        for effect in self.machine.watch_starting() {
            self.effect(effect);
        }
        let query = match &self.config.plan {
            Plan::ListWatch => WatchQuery {
                resource_version: Some(rv.clone()),
                ..self.query()
            },
            Plan::Once(query) => query.clone(),
        };
        let lines = match Box::pin(self.watch_lines(query)).await {
            Ok(lines) => {
                self.succeeded();
                lines
            }
            Err(fault) => {
                let transition = self.machine.watch_refused(&fault, rv, Instant::now());
                return self.perform(transition);
            }
        };
        self.machine.streaming(Instant::now());
        // Boxed: an async fn's state keeps the arguments it moves into a callee's future beside
        // that future, so the stream's body reader would be held twice over a watch's life.
        let (end, _) = Box::pin(self.stream(lines, None)).await;
        let rv = self.current_rv();
        let transition = self.machine.watch_ended(end, rv, Instant::now());
        self.perform(transition)
    }

    pub(super) fn current_rv(&self) -> String {
        self.progress.rv.clone().unwrap_or_default()
    }

    /// Reads a watch body into the cache until it ends; for a streaming list, collects the
    /// initial events first. Returns how it ended and whether the initial list completed.
    pub(super) async fn stream(
        &mut self,
        mut lines: A::Lines,
        initial: Option<Initial>,
    ) -> (StreamEnd, bool) {
        let _open = self.stats.watch_open();
        let _watching = self.sink.watching(initial.is_some());
        self.progress.initial = initial;
        self.progress.saw_events = false;
        let end = loop {
            let line = match lines.next().await {
                Ok(Some(line)) => line,
                Ok(None) => {
                    break StreamEnd::Clean {
                        saw_events: self.progress.saw_events,
                    };
                }
                Err(err) => break StreamEnd::Fault(Fault::from_error(err)),
            };
            let step = self.sink.line(
                &mut self.progress,
                line,
                self.config.projection.as_ref(),
                self.config.pack,
            );
            self.take_notice();
            if let Some(events) = step.events() {
                self.stats.events(events);
            }
            match step {
                Step::Skip | Step::Collected => {}
                Step::Pass(line, rv) => self.sink.pass(line, rv.as_deref()).await,
                Step::Warn(text) => self.warn(&text),
                Step::Change(kind, object) => {
                    if self.sink.apply(kind, object) > 0 {
                        self.changed();
                    }
                }
                Step::Bookmark(rv) => {
                    if let Some(rv) = rv {
                        self.sink.bookmark(&rv);
                    }
                }
                Step::Synced(list) => {
                    let rv = self.current_rv();
                    self.synced(list.objects, &rv, list.relist);
                }
                Step::End(end) => break end,
            }
        };
        (end, self.progress.initial.take().is_none())
    }
}
