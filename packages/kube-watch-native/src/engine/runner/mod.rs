//! The engine's runner: one run's task. It makes the requests (through its [`ListWatch`]),
//! reads list pages and watch bodies, hands each watch line to its sink and each answer,
//! failure and stream end to the pure [`Machine`], and carries out the effects they return on
//! the sink, the stats, the reporter and the cluster's news.
//!
//! This file holds the task's state, the effects and the making of requests, whatever the
//! plan; the watches and the reading of their bodies are in `watch.rs`, what only an
//! informer's plan does (its loop, its lists) in `keeping.rs`, a plain watch's in `once.rs`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::backoff::BackoffPolicy;
use super::config::capacity;
use super::machine::{Effect, Machine, Probed, Resume, State, Transition};
use super::sink::Sink;
use super::step::{Progress, StreamEnd};
use super::{
    Fault, ListMemory, ListWatch, MAX_OBJECT_BYTES, Reporter, Request, RunConfig, max_page_bytes,
};
use crate::engine::backoff::Jitter;
use crate::engine::connect::{CredentialProvider, Endpoint};
use crate::engine::recovery::{News, RECOVERY_JITTER};
use crate::engine::stats::Stats;
use crate::error::Error;
use crate::http::Get;
use crate::projection::Projection;
use crate::request::{WatchQuery, list_url, watch_url};

mod keeping;
mod once;
mod watch;

/// Bytes received since the allocator last gave memory back after which a completed list
/// gives it back again.
const RELEASE_AFTER_BYTES: u64 = 8 << 20;

/// The plan of a run (see `super::plan`): what the runner asks of it. Its implementations are in
/// `keeping.rs` (an informer's) and `once.rs` (a plain watch's).
pub(crate) trait Plan: Send + Sync + Sized + 'static {
    /// Where what the run reads goes.
    type Sink: Sink;
    /// Held while a watch body is read.
    type Watching: Send;

    /// What the run's messages call it.
    const WHAT: &'static str;

    /// Its sink.
    fn sink(&self) -> &Arc<Self::Sink>;

    /// The decisions under its rules.
    fn machine(&self, backoff: BackoffPolicy, jitter: Jitter) -> Machine;

    /// What the answer `fault` to a watch from `rv` means.
    fn refused(machine: &mut Machine, fault: &Fault, rv: String, now: Instant) -> Transition;

    /// What the `end` of a watch's stream at `rv` means.
    fn ended(machine: &mut Machine, end: StreamEnd, rv: String, now: Instant) -> Transition;

    /// Runs `run` to its end.
    fn run<A: ListWatch>(run: &mut Run<A, Self>) -> impl Future<Output = ()> + Send;

    /// One line of a watch body, read and carried out: the end it brings, if it does.
    fn line<A: ListWatch>(
        run: &mut Run<A, Self>,
        line: Bytes,
    ) -> impl Future<Output = Option<StreamEnd>> + Send;

    /// A watch body is read until the guard is dropped (`initial`: a streaming list's).
    fn watching(&self, initial: bool) -> Self::Watching;

    /// A request succeeded after failures.
    fn recovered(&self);

    /// Whether what it read is a complete list whose resourceVersion a probe may compare with
    /// the server's (see `RunConfig::probe`).
    fn probes(&self) -> bool;

    /// What it read was shown current (a probe answered, or a resumed watch where nothing
    /// probes).
    fn proven(&self);

    /// The server refused the metadata-only `Accept` header (406) of a run with `projection`:
    /// what it says of it, if anything.
    fn metadata_refused(&self, projection: Option<&Projection>) -> Option<String>;
}

/// How long a probe of the server's resourceVersion may wait for its answer: an API server gives
/// one at once, or after its cache waited 3 s for the version; past this the probe failed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a run is started with besides its configuration and its requests.
pub(crate) struct Parts {
    pub(crate) provider: Arc<dyn CredentialProvider>,
    pub(crate) reporter: Arc<dyn Reporter>,
    pub(crate) memory: Arc<ListMemory>,
    pub(crate) jitter: Jitter,
    /// Where it counts what it does.
    pub(crate) stats: Arc<Stats>,
}

/// The task's state.
pub(crate) struct Run<A, P> {
    pub(super) config: RunConfig,
    pub(crate) provider: Arc<dyn CredentialProvider>,
    pub(crate) reporter: Arc<dyn Reporter>,
    pub(crate) memory: Arc<ListMemory>,
    pub(super) api: A,
    /// What it does, and where what it reads goes.
    pub(super) plan: P,
    pub(crate) stats: Arc<Stats>,
    /// Every flag, and the decisions.
    pub(crate) machine: Machine,
    /// The endpoint for the current credential and when it was asked for.
    pub(crate) endpoint: Option<(Endpoint, Instant)>,
    /// Where the stream is.
    pub(super) progress: Progress,
    /// Body bytes received when the allocator last gave memory back.
    pub(super) released_at_bytes: u64,
    /// The channel of the cluster's news of recovery, once a credential resolved its client.
    pub(super) news: Option<News>,
}

impl<A: ListWatch, P: Plan> Run<A, P> {
    pub(crate) fn new(config: RunConfig, parts: Parts, api: A, plan: P) -> Self {
        Self {
            machine: plan.machine(config.backoff, parts.jitter),
            plan,
            config,
            provider: parts.provider,
            reporter: parts.reporter,
            memory: parts.memory,
            api,
            stats: parts.stats,
            endpoint: None,
            progress: Progress::default(),
            released_at_bytes: 0,
            news: None,
        }
    }

    /// Runs to the end, by its plan.
    pub(crate) async fn run(&mut self) {
        P::run(self).await;
    }

    /// Where what it reads goes.
    pub(crate) fn sink(&self) -> &Arc<P::Sink> {
        self.plan.sink()
    }

    /// Carries out a transition's effects, in order; its state is what comes next.
    fn perform(&mut self, (state, effects): Transition) -> State {
        for effect in effects {
            self.effect(effect);
        }
        state
    }

    fn effect(&mut self, effect: Effect) {
        match effect {
            Effect::CountError(error_type) => self.stats.error(error_type),
            Effect::CountReconnect => self.stats.reconnect(),
            Effect::CountRelist => self.stats.relist(),
            Effect::Warn(text) => self.warn(&text),
            Effect::Info(text) => self.info(&text),
            Effect::Failed { failure, retrying } => {
                self.plan.sink().error(&failure, retrying);
                self.reporter.failed();
            }
            Effect::Succeeded { news } => {
                self.plan.recovered();
                if news {
                    self.reporter.recovered();
                    if let Some(news) = self.news.as_mut() {
                        news.recovered();
                    }
                }
            }
            // An informer asks for plain JSON from now on and cuts the objects down here; a
            // plain watch says what the 406 means, and ends.
            Effect::RefuseMetadataOnly => {
                if let Some(warning) = self.plan.metadata_refused(self.config.projection.as_ref()) {
                    self.warn(&warning);
                }
            }
            Effect::RememberPaginated => self
                .memory
                .remember_paginated(&self.config.cluster.spec.url),
        }
    }

    /// A failure, to be waited out and resumed from, or the end.
    pub(crate) fn fail(&mut self, fault: &Fault, resume: Resume) -> State {
        let transition = self.machine.failed(fault, resume, Instant::now());
        self.perform(transition)
    }

    /// A backoff's sleep until `until`, cut short when another informer of the cluster
    /// recovers: then a random share of [`RECOVERY_JITTER`] more, but never past `until` nor
    /// before `earliest`.
    async fn sleep(&mut self, until: Instant, earliest: Instant) {
        let Some(news) = self.news.as_mut() else {
            tokio::time::sleep_until(until).await;
            return;
        };
        news.seen();
        tokio::select! {
            () = tokio::time::sleep_until(until) => {}
            () = news.recovered_elsewhere() => {
                let wake = Instant::now() + RECOVERY_JITTER.mul_f64(self.machine.draw());
                tokio::time::sleep_until(wake.max(earliest).min(until)).await;
            }
        }
    }

    /// A request was answered 200: after failures, news for the cluster's other informers.
    fn succeeded(&mut self) {
        let effect = self.machine.answered();
        self.effect(effect);
    }

    fn context(&self) -> String {
        format!(
            "{} of {} on cluster '{}'",
            P::WHAT,
            self.config.resource_path,
            self.config.cluster.spec.name
        )
    }

    fn redact(&self, text: &str) -> String {
        match &self.endpoint {
            Some((endpoint, _)) => endpoint.redactor.apply(text),
            None => text.to_owned(),
        }
    }

    fn info(&self, text: &str) {
        let message = self.redact(&format!("{}: {text}", self.context()));
        self.reporter.info(&message);
    }

    fn warn(&self, text: &str) {
        let message = self.redact(&format!("{}: {text}", self.context()));
        self.reporter.warn(&message);
    }

    /// The endpoint for the next request, asking the provider first when there is none yet,
    /// after a 401/403, or when a refreshing provider's answer has grown old.
    async fn endpoint(&mut self) -> Result<Endpoint, Fault> {
        let fresh = match &self.endpoint {
            None => true,
            Some((_, at)) => {
                self.machine.credential_stale()
                    || (self.provider.refreshes() && at.elapsed() >= self.config.credential_ttl)
            }
        };
        if fresh {
            let credential = self
                .provider
                .credential()
                .await
                .map_err(Fault::Credential)?;
            let endpoint = self
                .config
                .cluster
                .resolve(&credential)
                .map_err(Fault::Refused)?;
            if self.endpoint.is_some() {
                self.stats.credential_refresh();
            }
            // A credential may bring another client (a client certificate): another channel.
            if self
                .endpoint
                .as_ref()
                .is_none_or(|(old, _)| old.client != endpoint.client)
            {
                self.news = Some(self.memory.recoveries.news(&endpoint.client));
            }
            self.stats
                .set_endpoint_bytes(endpoint_heap_bytes(&endpoint));
            self.endpoint = Some((endpoint, Instant::now()));
            self.machine.credential_renewed();
        }
        Ok(self.endpoint.as_ref().map(|(e, _)| e.clone()).expect("set"))
    }

    /// The page at `url_for(base URL)`, whole, up to [`max_page_bytes`].
    async fn list_page(&mut self, url_for: impl FnOnce(&str) -> String) -> Result<Vec<u8>, Fault> {
        let endpoint = self.endpoint().await?;
        let max = max_page_bytes(self.config.page_size);
        let request = self.request(&endpoint, url_for(&endpoint.base_url), false);
        // Boxed, as the watch's request: see `watch_lines`.
        Box::pin(self.api.list(request, max))
            .await
            .map_err(|fault| match fault {
                Fault::Transport(Error::TooLarge { limit }) => Fault::Protocol(format!(
                    "a list page went past {limit} bytes ({} MiB), more than {} objects of at \
                     most {} MiB can take; the list was dropped",
                    limit >> 20,
                    self.config.page_size,
                    MAX_OBJECT_BYTES >> 20
                )),
                other => other,
            })
    }

    /// Asks the server whether its resourceVersion is not older than `rv`: a LIST of one object
    /// with `resourceVersionMatch=NotOlderThan` (its body is dropped). A real API server
    /// answers 504 `ResourceVersionTooLarge` when it is behind, after waiting up to 3 s for its
    /// cache to catch up. An answer 200 is proof of life for what the plan keeps.
    async fn probe(&mut self, rv: &str) -> Probed {
        let path = self.config.resource_path.clone();
        let query = WatchQuery {
            resource_version: Some(rv.to_owned()),
            resource_version_match: Some("NotOlderThan".into()),
            ..self.query()
        };
        let page = self.list_page(|base| list_url(base, &path, &query, 1, None));
        // Bounded: a silent watch's probe holds its stream unread while it waits.
        let answer = match tokio::time::timeout(PROBE_TIMEOUT, page).await {
            Ok(answer) => answer,
            Err(_) => Err(Fault::Protocol(format!(
                "no answer to the probe of the server's resourceVersion within {} s",
                PROBE_TIMEOUT.as_secs()
            ))),
        };
        if answer.is_ok() {
            self.succeeded();
            self.plan.proven();
        }
        Probed::of(answer.map(drop))
    }

    /// A watch of the collection with `query` (as its plan made it up), as lines.
    async fn watch_lines(&mut self, query: WatchQuery) -> Result<A::Lines, Fault> {
        let endpoint = self.endpoint().await?;
        let url = watch_url(&endpoint.base_url, &self.config.resource_path, &query);
        let request = self.request(&endpoint, url, true);
        // Making the request (placing it in the pool, maybe dialling, TLS, opening the stream)
        // is a large future, and the task's state is as large as its largest await: boxed, it
        // is allocated only while a request is being made, and the long-lived state of an
        // informer reading its watch is that much smaller. With the boxes around the calls of
        // `watch_lines`, `paged_list` and `stream` (see `watch`), the task's future is less than
        // half the size (`fixedTaskBytes` in the memory snapshot; bench/README.md).
        Box::pin(self.api.watch(request, self.config.max_line_bytes)).await
    }

    /// The one place a request is made up: the endpoint's client and bearer, the URL, the
    /// `Accept` header (`metadataOnly`: PartialObjectMetadataList for a list page,
    /// PartialObjectMetadata for a watch or a streaming list, until the server refuses it),
    /// the idle limit.
    fn request<'a>(&'a self, endpoint: &'a Endpoint, url: String, watch: bool) -> Request<'a> {
        Request {
            client: &endpoint.client,
            get: Get {
                url,
                bearer: endpoint.bearer.clone(),
                accept: self.accept(watch),
                post: None,
            },
            idle: self.config.idle_timeout,
            stats: &self.stats,
        }
    }

    /// The `Accept` header of a list page or (`watch`) of a watch or streaming list.
    fn accept(&self, watch: bool) -> Option<String> {
        self.config.projection.as_ref()?.accept(watch)
    }

    fn query(&self) -> WatchQuery {
        WatchQuery {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            ..WatchQuery::default()
        }
    }
}

/// An endpoint's bytes on the heap, by capacity: its client key's (see
/// [`crate::http::ClientKey::heap_bytes`]),
/// the base URL, the bearer token and the redactor's copies of the secrets.
fn endpoint_heap_bytes(endpoint: &Endpoint) -> usize {
    endpoint.client.heap_bytes()
        + endpoint.base_url.capacity()
        + capacity(&endpoint.bearer)
        + endpoint.redactor.heap_bytes()
}
