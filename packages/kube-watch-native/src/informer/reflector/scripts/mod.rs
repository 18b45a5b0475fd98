//! The reflector against a scripted [`ListWatch`] (`crate::engine::script`) on tokio's paused
//! clock: every transition a deterministic test, no sockets, no wall time.
//!
//! This file holds the helpers; the scripts are in `resumes.rs`, `lists.rs`, `recovery.rs`
//! and `behind.rs`.

use super::tests::{RELISTED, Recorder, config, events_until, list};

use super::*;
use std::time::Duration;

use crate::auth::Credential;
use crate::engine::backoff::{BackoffPolicy, Jitter};
use crate::engine::connect::CredentialProvider;
use crate::engine::connect::StaticCredential;
use crate::engine::script::{End, Fake, Reply, end_bookmark, event, line, pod, wait_ms};
use crate::engine::*;
use crate::projection::Projection;

mod behind;
mod lists;
mod recovery;
mod resumes;

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
    config: RunConfig,
    provider: Arc<dyn CredentialProvider>,
) -> (Reflector, Arc<Recorder>, Arc<ListMemory>) {
    run_shared(fake, config, provider, Arc::new(ListMemory::default()))
}

/// As [`run_config`], with the watcher's `memory` (shared by the informers of one watcher).
fn run_shared(
    fake: &Fake,
    config: RunConfig,
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

/// The events a consumer that subscribes now sees, up to `until`.
async fn events_seen(reflector: &Reflector, until: &str) -> Vec<String> {
    events_until(&reflector.cache().subscribe(), until).await
}

fn bearer(token: &str) -> Arc<dyn CredentialProvider> {
    Arc::new(StaticCredential(Credential::Bearer(token.into())))
}

fn messages(recorder: &Recorder) -> Vec<String> {
    recorder.messages.lock().unwrap().clone()
}

/// The first message that contains `part`, if one does.
fn message_with(recorder: &Recorder, part: &str) -> Option<String> {
    messages(recorder).into_iter().find(|m| m.contains(part))
}
