//! An informer's plan ([`Keeping`]): its loop of lists and watches for as long as it runs, the
//! lists (a streaming list, a watch that sends the initial events first, or `limit`/`continue`
//! pages), each read into what the keeper lists into and put in place of what it kept, and the
//! lines of its watches carried out on the keeper.

use std::sync::Arc;

use bytes::Bytes;
use tokio::time::Instant;

use super::Plan;
use super::{RELEASE_AFTER_BYTES, Run};
use crate::engine::backoff::{BackoffPolicy, Jitter};
use crate::engine::machine::{
    self, Machine, PageRefused, Resume, State, StreamingList, Transition,
};
use crate::engine::plan::Keeping;
use crate::engine::sink::Keeper;
use crate::engine::step::{Initial, Kept, Step, StreamEnd};
use crate::engine::{Fault, InitialList, ListWatch};
use crate::projection::Projection;
use crate::request::{WatchQuery, list_url};

impl<K: Keeper> Plan for Keeping<K> {
    type Sink = K;
    type Watching = K::Watching;

    const WHAT: &'static str = "informer";

    fn sink(&self) -> &Arc<K> {
        &self.keeper
    }

    fn machine(&self, backoff: BackoffPolicy, jitter: Jitter) -> Machine {
        Machine::new(backoff, jitter)
    }

    fn refused(machine: &mut Machine, fault: &Fault, rv: String, now: Instant) -> Transition {
        machine.watch_refused(fault, rv, now)
    }

    fn ended(machine: &mut Machine, end: StreamEnd, rv: String, now: Instant) -> Transition {
        machine.watch_ended(end, rv, now)
    }

    async fn run<A: ListWatch>(run: &mut Run<A, Self>) {
        let mut state = run.machine.start();
        loop {
            state = match state {
                State::Listing { relist } => run.list(relist).await,
                // Boxed: see `watch`.
                State::ListingPages { relist } => Box::pin(run.paged_list(relist)).await,
                State::Watching { rv } => {
                    if let Some(state) = run.probe_resume(&rv).await {
                        state
                    } else {
                        let query = WatchQuery {
                            resource_version: Some(rv.clone()),
                            ..run.query()
                        };
                        let query = run.bookmarked(query);
                        run.watch(rv, query).await
                    }
                }
                State::Backoff {
                    until,
                    earliest,
                    resume,
                } => {
                    run.sleep(until, earliest).await;
                    Machine::woke(resume)
                }
                State::Closed => return,
            };
        }
    }

    async fn line<A: ListWatch>(run: &mut Run<A, Self>, line: Bytes) -> Option<StreamEnd> {
        let step = run.plan.keeper.line(
            &mut run.progress,
            &mut run.plan.initial,
            line,
            run.config.projection.as_ref(),
            run.config.pack,
        );
        run.take_notice();
        if let Some(events) = step.events() {
            run.stats.events(events);
        }
        match step {
            Step::Skip | Step::Read(Kept::Collected) => {}
            Step::Warn(text) => run.warn(&text),
            Step::Read(Kept::Change(change)) => {
                if run.plan.keeper.apply(change) > 0 {
                    run.changed();
                }
            }
            Step::Read(Kept::Bookmark(rv)) => {
                if let Some(rv) = rv {
                    run.plan.keeper.bookmark(&rv);
                }
            }
            Step::Read(Kept::Synced(list)) => {
                let rv = run.current_rv();
                run.synced(list.objects, &rv, list.relist);
            }
            Step::End(end) => return Some(end),
        }
        None
    }

    fn watching(&self, initial: bool) -> K::Watching {
        self.keeper.watching(initial)
    }

    fn recovered(&self) {
        self.keeper.recovered();
    }

    fn probes(&self) -> bool {
        self.initial.is_none()
    }

    fn proven(&self) {
        self.keeper.proven();
    }

    /// From now on the informer asks for plain JSON and cuts the objects down here (`refused`
    /// says so once; None without metadataOnly, or when the header was not sent).
    fn metadata_refused(&self, projection: Option<&Projection>) -> Option<String> {
        projection.and_then(Projection::refused)
    }
}

impl<A: ListWatch, K: Keeper> Run<A, Keeping<K>> {
    /// Lists (streaming or paginated) and caches the result; then watches.
    async fn list(&mut self, relist: bool) -> State {
        let streaming = match self.config.initial_list {
            InitialList::Streaming => true,
            InitialList::Paginated => false,
            InitialList::Auto => !self.memory.is_paginated(&self.config.cluster.spec.url),
        };
        if !streaming {
            return Box::pin(self.paged_list(relist)).await;
        }
        let list = StreamingList {
            relist,
            auto: self.config.initial_list == InitialList::Auto,
            metadata_only: self.accept(true).is_some(),
        };
        let mut query = self.query();
        query.send_initial_events = true;
        query.resource_version_match = Some("NotOlderThan".into());
        let query = self.bookmarked(query);
        let lines = match Box::pin(self.watch_lines(query)).await {
            Ok(lines) => {
                self.succeeded();
                lines
            }
            Err(fault) => {
                let transition = self
                    .machine
                    .streaming_list_refused(&fault, list, Instant::now());
                return self.perform(transition);
            }
        };
        self.machine.streaming(Instant::now());
        self.plan.initial = Some(Initial {
            objects: K::Listed::default(),
            relist,
        });
        // Boxed: see `watch`.
        let end = Box::pin(self.stream(lines, true)).await;
        let synced = self.plan.initial.take().is_none();
        let rv = self.current_rv();
        let transition = self
            .machine
            .streaming_list_ended(end, synced, list, rv, Instant::now());
        self.perform(transition)
    }

    /// `limit`/`continue` pages; a continue token that expires restarts the list.
    async fn paged_list(&mut self, relist: bool) -> State {
        let path = self.config.resource_path.clone();
        let query = self.query();
        let limit = self.config.page_size;
        let mut restarts = 0;
        'list: loop {
            let mut objects = K::Listed::default();
            let mut token: Option<String> = None;
            let rv = loop {
                let continue_token = token.clone();
                let page = self
                    .list_page(|base| {
                        list_url(base, &path, &query, limit, continue_token.as_deref())
                    })
                    .await;
                let body = match page {
                    Ok(body) => {
                        self.succeeded();
                        body
                    }
                    Err(fault) => {
                        let now = Instant::now();
                        let continuing = token.is_some();
                        match self
                            .machine
                            .page_refused(&fault, relist, continuing, restarts, now)
                        {
                            PageRefused::Restart(effect) => {
                                restarts += 1;
                                self.effect(effect);
                                continue 'list;
                            }
                            PageRefused::Then(transition) => return self.perform(transition),
                        }
                    }
                };
                let projection = self.config.projection.as_ref();
                let read = self
                    .plan
                    .keeper
                    .page(&mut objects, &body, projection, self.config.pack);
                let page = match read {
                    Ok(page) => page,
                    Err(err) => {
                        let fault = Fault::Protocol(format!("unusable list page: {err}"));
                        return self.fail(&fault, Resume::List { relist });
                    }
                };
                self.take_notice();
                self.stats.events(page.items);
                match page.continue_token {
                    Some(next) => token = Some(next),
                    None => break page.resource_version.unwrap_or_default(),
                }
            };
            self.synced(objects, &rv, relist);
            self.plan.listed = true;
            return State::Watching { rv };
        }
    }

    /// Before a watch resumes from `rv` (not right after a list): a probe of the server's
    /// resourceVersion (see `RunConfig::probe`). The state that follows in place of the
    /// watch, if any: a relist when the server is behind, a backoff when the probe failed.
    async fn probe_resume(&mut self, rv: &str) -> Option<State> {
        if std::mem::take(&mut self.plan.listed) || self.config.probe.is_none() || rv.is_empty() {
            return None;
        }
        let probed = self.probe(rv).await;
        let transition = self
            .machine
            .resume_probed(probed, rv.to_owned(), Instant::now())?;
        Some(self.perform(transition))
    }

    /// `query` with bookmarks on and the server asked to end the watch after a jittered while.
    fn bookmarked(&mut self, mut query: WatchQuery) -> WatchQuery {
        query.allow_watch_bookmarks = true;
        query.timeout_seconds = Some(machine::jittered_timeout(
            self.config.watch_timeout,
            self.machine.draw(),
        ));
        query
    }

    /// What was kept changed: a reader that asked to hear of it is told, once.
    fn changed(&self) {
        if self.plan.keeper.take_change_notice() {
            self.reporter.changed();
        }
    }

    fn synced(&mut self, objects: K::Listed, rv: &str, relist: bool) {
        let changes = self.plan.keeper.replace(objects, rv, relist);
        self.changed();
        self.progress.rv = Some(rv.to_owned());
        // What a large list left free goes back to the system (see `heap`); small lists
        // leave little, and the call walks every heap of the process.
        let received = self.stats.bytes_received();
        if received - self.released_at_bytes >= RELEASE_AFTER_BYTES {
            self.released_at_bytes = received;
            crate::heap::release_free_memory();
        }
        if relist {
            self.info(&format!(
                "relisted at resourceVersion {rv}: {changes} changes"
            ));
        }
        if self.machine.synced() {
            self.reporter.synced();
        }
    }
}
