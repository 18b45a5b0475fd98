//! A scripted [`ListWatch`] for running the engine on tokio's paused clock: every transition
//! a deterministic test, no sockets, no wall time. A script is the answers to a run's
//! requests in order; each request is logged with the moment (on the paused clock) it was
//! made and the bearer token it carried. Once the script is spent, requests never answer, so
//! the run stays where it is until the test stops it. The informer's scripts
//! (`informer/reflector/scripts/`) and the plain watch's (`watch/scripts.rs`) run on it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::{Fault, ListWatch, Request, WatchLines};
use crate::error::Error;

/// A pod's JSON, named `name` in namespace `ns`, at `rv`.
pub(crate) fn pod(name: &str, rv: &str) -> String {
    format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"ns","uid":"u-{name}","resourceVersion":"{rv}"}}}}"#
    )
}

/// A watch line of `kind` with [`pod`]`(name, rv)`.
pub(crate) fn event(kind: &str, name: &str, rv: &str) -> String {
    format!(r#"{{"type":"{kind}","object":{}}}"#, pod(name, rv))
}

/// A `PodList` page of pods `a` and `b` (`b` with a spec), at resourceVersion 42, continued by
/// `tok`.
pub(crate) const TWO_POD_PAGE: &[u8] = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"tok"},
    "items":[{"metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"40"}},
             {"metadata":{"name":"b","namespace":"n","uid":"v","resourceVersion":"41"},"spec":{"big":[1,2,3]}}]}"#;

/// One answer of the script.
pub(crate) enum Reply {
    /// A non-2xx answer, with the pause it asks for (seconds).
    Status(u16, Option<u64>),
    /// A non-2xx answer with this Status body.
    StatusBody(u16, String),
    /// A list page's body.
    Page(String),
    /// A watch body: lines and pauses, then how it ends.
    Watch(Vec<Say>, End),
}

/// One piece of a watch body.
pub(crate) enum Say {
    Line(String),
    /// Nothing for this long (the consumer catches up meanwhile).
    Wait(Duration),
}

/// How a watch body ends.
pub(crate) enum End {
    /// The server's `timeoutSeconds`.
    Clean,
    /// The connection breaks.
    Cut,
    /// It stays open.
    Open,
}

/// One request as the script saw it.
#[derive(Debug, Clone)]
pub(crate) struct Sent {
    /// When, since the script started.
    pub(crate) at: Duration,
    pub(crate) url: String,
    pub(crate) bearer: Option<String>,
    pub(crate) accept: Option<String>,
}

pub(crate) struct Script {
    replies: Mutex<VecDeque<Reply>>,
    sent: Mutex<Vec<Sent>>,
    start: Instant,
}

#[derive(Clone)]
pub(crate) struct Fake(Arc<Script>);

impl Fake {
    pub(crate) fn new(replies: Vec<Reply>) -> Self {
        Self(Arc::new(Script {
            replies: Mutex::new(replies.into()),
            sent: Mutex::default(),
            start: Instant::now(),
        }))
    }

    pub(crate) fn sent(&self) -> Vec<Sent> {
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

pub(crate) fn status_fault(status: u16, retry_after: Option<u64>) -> Fault {
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
            Reply::StatusBody(status, detail) => Err(Fault::Status {
                status,
                retry_after: None,
                detail,
            }),
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
            Reply::StatusBody(status, detail) => Err(Fault::Status {
                status,
                retry_after: None,
                detail,
            }),
            Reply::Page(_) => panic!("the script answers a watch with a page: {request:?}"),
        }
    }
}

pub(crate) struct FakeLines {
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

pub(crate) fn line(text: String) -> Say {
    Say::Line(text)
}

pub(crate) fn wait_ms(ms: u64) -> Say {
    Say::Wait(Duration::from_millis(ms))
}

pub(crate) fn end_bookmark(rv: &str) -> Say {
    Say::Line(format!(
        r#"{{"type":"BOOKMARK","object":{{"metadata":{{"resourceVersion":"{rv}","annotations":{{"k8s.io/initial-events-end":"true"}}}}}}}}"#
    ))
}
