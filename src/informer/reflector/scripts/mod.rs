//! The state machine against a scripted [`ListWatch`] on tokio's paused clock: every
//! transition a deterministic test — no sockets, no wall time. A script is the answers to the
//! reflector's requests in order; each request is logged with the moment (on the paused
//! clock) it was made and the bearer token it carried. Once the script is spent, requests
//! never answer, so the reflector stays where it is until the test stops it.
//!
//! This file holds the fake and the helpers; the scripts are in `resumes.rs`, `lists.rs`,
//! `recovery.rs` and (a plain watch's) `once.rs`.

use std::collections::VecDeque;
use std::sync::Mutex;

use bytes::Bytes;

use super::tests::{RELISTED, Recorder, config, event, events_until, list, pod};
use tokio::time::Instant;

use super::*;
use std::time::Duration;

use crate::auth::Credential;
use crate::engine::backoff::{BackoffPolicy, Jitter};
use crate::engine::connect::CredentialProvider;
use crate::engine::connect::StaticCredential;
use crate::engine::stats::Stats;
use crate::engine::*;
use crate::error::Error;
use crate::projection::Projection;

mod lists;
mod once;
mod recovery;
mod resumes;

/// One answer of the script.
enum Reply {
    /// A non-2xx answer, with the pause it asks for (seconds).
    Status(u16, Option<u64>),
    /// A list page's body.
    Page(String),
    /// A watch body: lines and pauses, then how it ends.
    Watch(Vec<Say>, End),
}

/// One piece of a watch body.
enum Say {
    Line(String),
    /// Nothing for this long (the consumer catches up meanwhile).
    Wait(Duration),
}

/// How a watch body ends.
enum End {
    /// The server's `timeoutSeconds`.
    Clean,
    /// The connection breaks.
    Cut,
    /// It stays open.
    Open,
}

/// One request as the script saw it.
#[derive(Debug, Clone)]
struct Sent {
    /// When, since the script started.
    at: Duration,
    url: String,
    bearer: Option<String>,
    accept: Option<String>,
}

struct Script {
    replies: Mutex<VecDeque<Reply>>,
    sent: Mutex<Vec<Sent>>,
    start: Instant,
}

#[derive(Clone)]
struct Fake(Arc<Script>);

impl Fake {
    fn new(replies: Vec<Reply>) -> Self {
        Self(Arc::new(Script {
            replies: Mutex::new(replies.into()),
            sent: Mutex::default(),
            start: Instant::now(),
        }))
    }

    fn sent(&self) -> Vec<Sent> {
        self.0.sent.lock().unwrap().clone()
    }

    /// Logs `request` and takes its answer; a spent script never answers.
    async fn answer(&self, request: &Request<'_>) -> Reply {
        self.0.sent.lock().unwrap().push(Sent {
            at: self.0.start.elapsed(),
            url: request.get.url.clone(),
            bearer: request.get.bearer.clone(),
            accept: request.get.accept.clone(),
        });
        let reply = self.0.replies.lock().unwrap().pop_front();
        match reply {
            Some(reply) => reply,
            None => std::future::pending().await,
        }
    }
}

fn status_fault(status: u16, retry_after: Option<u64>) -> Fault {
    Fault::Status {
        status,
        retry_after: retry_after.map(Duration::from_secs),
        detail: format!(r#"{{"kind":"Status","code":{status}}}"#),
    }
}

impl ListWatch for Fake {
    type Lines = FakeLines;

    async fn list(&self, request: Request<'_>, max_bytes: usize) -> Result<Vec<u8>, Fault> {
        match self.answer(&request).await {
            // As the pool does: no more than the maximum is read.
            Reply::Page(body) if body.len() > max_bytes => {
                Err(Fault::Transport(Error::TooLarge { limit: max_bytes }))
            }
            Reply::Page(body) => Ok(body.into_bytes()),
            Reply::Status(status, retry_after) => Err(status_fault(status, retry_after)),
            Reply::Watch(..) => panic!("the script answers a list with a watch: {request:?}"),
        }
    }

    async fn watch(
        &self,
        request: Request<'_>,
        _max_line_bytes: usize,
    ) -> Result<FakeLines, Fault> {
        match self.answer(&request).await {
            Reply::Watch(says, end) => Ok(FakeLines {
                says: says.into(),
                end,
            }),
            Reply::Status(status, retry_after) => Err(status_fault(status, retry_after)),
            Reply::Page(_) => panic!("the script answers a watch with a page: {request:?}"),
        }
    }
}

struct FakeLines {
    says: VecDeque<Say>,
    end: End,
}

impl WatchLines for FakeLines {
    async fn next(&mut self) -> Result<Option<Bytes>, Error> {
        loop {
            match self.says.pop_front() {
                Some(Say::Line(line)) => return Ok(Some(Bytes::from(line))),
                Some(Say::Wait(pause)) => tokio::time::sleep(pause).await,
                None => break,
            }
        }
        match self.end {
            End::Clean => Ok(None),
            End::Cut => Err(Error::Body("connection reset by peer".into())),
            End::Open => std::future::pending().await,
        }
    }
}

fn line(text: String) -> Say {
    Say::Line(text)
}

fn wait_ms(ms: u64) -> Say {
    Say::Wait(Duration::from_millis(ms))
}

fn end_bookmark(rv: &str) -> Say {
    Say::Line(format!(
        r#"{{"type":"BOOKMARK","object":{{"metadata":{{"resourceVersion":"{rv}","annotations":{{"k8s.io/initial-events-end":"true"}}}}}}}}"#
    ))
}

/// A reflector running `script` with `initial_list`; its recorder; its list memory.
fn run_script(
    fake: &Fake,
    initial_list: InitialList,
    provider: Arc<dyn CredentialProvider>,
) -> (Reflector, Arc<Recorder>, Arc<ListMemory>) {
    run_config(fake, config("http://cluster.test", initial_list), provider)
}

/// As [`run_script`], with a configuration of the test's own.
fn run_config(
    fake: &Fake,
    config: ReflectorConfig,
    provider: Arc<dyn CredentialProvider>,
) -> (Reflector, Arc<Recorder>, Arc<ListMemory>) {
    run_shared(fake, config, provider, Arc::new(ListMemory::default()))
}

/// As [`run_config`], with the watcher's `memory` (shared by the informers of one watcher).
fn run_shared(
    fake: &Fake,
    config: ReflectorConfig,
    provider: Arc<dyn CredentialProvider>,
    memory: Arc<ListMemory>,
) -> (Reflector, Arc<Recorder>, Arc<ListMemory>) {
    let recorder = Arc::new(Recorder::default());
    let parts = Parts {
        provider,
        reporter: recorder.clone(),
        memory: memory.clone(),
        jitter: Jitter::new(7),
        stats: Arc::default(),
    };
    let reflector = Reflector::start_with(
        config,
        parts,
        fake.clone(),
        &tokio::runtime::Handle::current(),
    );
    (reflector, recorder, memory)
}

fn bearer(token: &str) -> Arc<dyn CredentialProvider> {
    Arc::new(StaticCredential(Credential::Bearer(token.into())))
}

fn messages(recorder: &Recorder) -> Vec<String> {
    recorder.messages.lock().unwrap().clone()
}
