//! The machine's transitions, one row each: a machine in a given condition, one input, the
//! state that follows and the effects, in order. No tokio, no socket, no cache.

use std::time::Duration;

use tokio::time::Instant;

use super::*;
use crate::engine::connect::Refusal;
use crate::error::{Error, ErrorType};

mod once;
mod streaming;

fn machine() -> Machine {
    Machine::new(BackoffPolicy::default(), Jitter::new(7))
}

fn status(status: u16, retry_after: Option<u64>) -> Fault {
    Fault::Status {
        status,
        retry_after: retry_after.map(Duration::from_secs),
        detail: "nope".into(),
    }
}

fn refused() -> Fault {
    Fault::Refused(Refusal {
        failure: Failure {
            error_type: ErrorType::BadRequest,
            status_code: 400,
        },
        warning: "the oidc provider runs in the browser".into(),
    })
}

/// A state in a few words; a backoff with its waits from `t0`, in whole seconds.
fn brief(state: &State, t0: Instant) -> String {
    match state {
        State::Listing { relist: false } => "list".into(),
        State::Listing { relist: true } => "relist".into(),
        State::ListingPages { relist } => format!("pages relist={relist}"),
        State::Watching { rv } => format!("watch {rv}"),
        State::Backoff {
            until,
            earliest,
            resume,
        } => {
            assert!(
                until >= earliest,
                "the wait ends no earlier than Retry-After"
            );
            let resume = match resume {
                Resume::List { relist } => format!("list relist={relist}"),
                Resume::Watch(rv) => format!("watch {rv}"),
            };
            format!(
                "backoff earliest+{}s then {resume}",
                (*earliest - t0).as_secs()
            )
        }
        State::Closed => "closed".into(),
    }
}

/// An effect in a few words (a warning's backoff figure dropped: the jitter's).
fn effect(effect: &Effect) -> String {
    match effect {
        Effect::CountError(t) => format!("count {t}"),
        Effect::CountReconnect => "count reconnect".into(),
        Effect::CountRelist => "count relist".into(),
        Effect::Warn(text) => match text.split_once("; retrying in ") {
            Some((head, _)) => format!("warn {head}; retrying"),
            None => format!("warn {text}"),
        },
        Effect::Info(text) => format!("info {text}"),
        Effect::Failed { failure, retrying } => format!(
            "ERROR {} {}{}",
            failure.error_type.as_str(),
            failure.status_code,
            if *retrying { " retrying" } else { "" }
        ),
        Effect::Succeeded { news } => format!("succeeded news={news}"),
        Effect::RefuseMetadataOnly => "refuse metadata-only".into(),
        Effect::RememberPaginated => "remember paginated".into(),
    }
}

type Input = fn(&mut Machine, Instant) -> Transition;

/// `(what, input, state, effects)`: each row on a new informer's machine.
fn check(rows: &[(&str, Input, &str, &[&str])]) {
    check_on(machine, rows);
}

/// [`check`], each row on a new machine made by `make`.
fn check_on(make: fn() -> Machine, rows: &[(&str, Input, &str, &[&str])]) {
    for (what, input, state, effects) in rows {
        let mut m = make();
        let t0 = Instant::from_std(std::time::Instant::now());
        let (next, done) = input(&mut m, t0);
        assert_eq!(brief(&next, t0), *state, "{what}: the state");
        let done: Vec<String> = done.iter().map(effect).collect();
        assert_eq!(done, *effects, "{what}: the effects");
    }
}

const AUTO: StreamingList = StreamingList {
    relist: false,
    auto: true,
    metadata_only: false,
};
const FIXED: StreamingList = StreamingList {
    relist: false,
    auto: false,
    metadata_only: false,
};
const AUTO_METADATA: StreamingList = StreamingList {
    relist: true,
    auto: true,
    metadata_only: true,
};

#[test]
fn failures_wait_a_backoff_step_with_one_error() {
    check(&[
        (
            "a 503 while watching",
            |m, t| m.failed(&status(503, None), Resume::Watch("5".into()), t),
            "backoff earliest+0s then watch 5",
            &[
                "count UNKNOWN_ERROR",
                "ERROR UNKNOWN_ERROR 503 retrying",
                "warn HTTP 503: nope; retrying",
            ],
        ),
        (
            "a 500 while listing",
            |m, t| m.failed(&status(500, None), Resume::List { relist: true }, t),
            "backoff earliest+0s then list relist=true",
            &[
                "count SYSTEM_ERROR",
                "ERROR SYSTEM_ERROR 500 retrying",
                "warn HTTP 500: nope; retrying",
            ],
        ),
        (
            "a 429 asking for 5 s",
            |m, t| m.failed(&status(429, Some(5)), Resume::Watch("5".into()), t),
            "backoff earliest+5s then watch 5",
            &[
                "count UNKNOWN_ERROR",
                "ERROR UNKNOWN_ERROR 429 retrying",
                "warn HTTP 429: nope; retrying",
            ],
        ),
        (
            "a 503 asking for a day: capped at 10 min",
            |m, t| m.failed(&status(503, Some(86_400)), Resume::Watch("5".into()), t),
            "backoff earliest+600s then watch 5",
            &[
                "count UNKNOWN_ERROR",
                "ERROR UNKNOWN_ERROR 503 retrying",
                "warn HTTP 503: nope; retrying",
            ],
        ),
        (
            "a 406: plain JSON from now on, and try again",
            |m, t| m.failed(&status(406, None), Resume::List { relist: false }, t),
            "backoff earliest+0s then list relist=false",
            &[
                "count UNKNOWN_ERROR",
                "refuse metadata-only",
                "ERROR UNKNOWN_ERROR 406 retrying",
                "warn HTTP 406: nope; retrying",
            ],
        ),
        (
            "a broken connection",
            |m, t| {
                let fault = Fault::Transport(Error::Connect("reset".into()));
                m.failed(&fault, Resume::Watch("5".into()), t)
            },
            "backoff earliest+0s then watch 5",
            &[
                "count SYSTEM_ERROR",
                "ERROR SYSTEM_ERROR 0 retrying",
                "warn request failed: reset; retrying",
            ],
        ),
    ]);
}

#[test]
fn terminal_failures_end_it_all_with_one_error() {
    check(&[
        (
            "a 400: the request will not get better",
            |m, t| m.failed(&status(400, None), Resume::Watch("5".into()), t),
            "closed",
            &[
                "count BAD_REQUEST",
                "warn HTTP 400: nope; giving up",
                "ERROR BAD_REQUEST 400",
            ],
        ),
        (
            "a 422",
            |m, t| m.failed(&status(422, None), Resume::List { relist: false }, t),
            "closed",
            &[
                "count UNKNOWN_ERROR",
                "warn HTTP 422: nope; giving up",
                "ERROR UNKNOWN_ERROR 422",
            ],
        ),
        (
            "a refused credential",
            |m, t| m.failed(&refused(), Resume::List { relist: false }, t),
            "closed",
            &[
                "count BAD_REQUEST",
                "warn the oidc provider runs in the browser; giving up",
                "ERROR BAD_REQUEST 400",
            ],
        ),
    ]);
}

#[test]
fn a_refused_watch_relists_on_410_and_backs_off_otherwise() {
    check(&[
        (
            "410",
            |m, t| m.watch_refused(&status(410, None), "5".into(), t),
            "relist",
            &[
                "count relist",
                "info resourceVersion expired (410); relisting",
            ],
        ),
        (
            "503",
            |m, t| m.watch_refused(&status(503, None), "5".into(), t),
            "backoff earliest+0s then watch 5",
            &[
                "count UNKNOWN_ERROR",
                "ERROR UNKNOWN_ERROR 503 retrying",
                "warn HTTP 503: nope; retrying",
            ],
        ),
    ]);
}

#[test]
fn a_watch_that_ends_watches_again_backs_off_or_relists() {
    check(&[
        (
            "a clean end after traffic",
            |m, t| m.watch_ended(StreamEnd::Clean { saw_events: true }, "7".into(), t),
            "watch 7",
            &[],
        ),
        (
            "a clean end at once and silent: a backoff step without an ERROR",
            |m, t| {
                m.streaming(t);
                m.watch_ended(StreamEnd::Clean { saw_events: false }, "7".into(), t)
            },
            "backoff earliest+0s then watch 7",
            &[],
        ),
        (
            "a silent end after a long watch: at once",
            |m, t| {
                m.streaming(t);
                let later = t + Duration::from_secs(3600);
                let (state, effects) =
                    m.watch_ended(StreamEnd::Clean { saw_events: false }, "7".into(), later);
                assert_eq!(state, State::Watching { rv: "7".into() });
                (State::Watching { rv: "7".into() }, effects)
            },
            "watch 7",
            &[],
        ),
        (
            "a 410 in the stream",
            |m, t| m.watch_ended(StreamEnd::Expired, "7".into(), t),
            "relist",
            &[
                "count relist",
                "info resourceVersion expired (410); relisting",
            ],
        ),
        (
            "an ERROR in the stream",
            |m, t| {
                let end = StreamEnd::Error {
                    status: 429,
                    retry_after: Some(Duration::from_secs(4)),
                };
                m.watch_ended(end, "7".into(), t)
            },
            "backoff earliest+4s then watch 7",
            &[
                "count UNKNOWN_ERROR",
                "ERROR UNKNOWN_ERROR 429 retrying",
                "warn HTTP 429: an ERROR event in the watch stream; retrying",
            ],
        ),
        (
            "a cut stream",
            |m, t| {
                let fault = Fault::Transport(Error::Connect("reset".into()));
                m.watch_ended(StreamEnd::Fault(fault), "7".into(), t)
            },
            "backoff earliest+0s then watch 7",
            &[
                "count SYSTEM_ERROR",
                "ERROR SYSTEM_ERROR 0 retrying",
                "warn request failed: reset; retrying",
            ],
        ),
    ]);
}

#[test]
fn the_flags_a_401_a_success_a_reconnect_and_the_first_sync_set() {
    let mut m = machine();
    let t0 = Instant::from_std(std::time::Instant::now());
    assert_eq!(machine().start(), State::Listing { relist: false });
    assert_eq!(m.answered(), Effect::Succeeded { news: false });
    assert!(!m.credential_stale());
    m.failed(&status(401, None), Resume::List { relist: false }, t0);
    assert!(m.credential_stale(), "a 401 asks for a new credential");
    m.credential_renewed();
    assert!(!m.credential_stale());
    m.failed(&status(403, None), Resume::List { relist: false }, t0);
    assert!(m.credential_stale(), "so does a 403");
    assert_eq!(
        m.answered(),
        Effect::Succeeded { news: true },
        "the first success after failures is news"
    );
    assert_eq!(m.answered(), Effect::Succeeded { news: false });
    assert_eq!(m.watch_starting(), vec![]);
    assert_eq!(m.watch_starting(), vec![Effect::CountReconnect]);
    assert!(m.synced());
    assert!(!m.synced(), "the first sync is reported once");
    assert_eq!(
        Machine::woke(Resume::Watch("3".into())),
        State::Watching { rv: "3".into() }
    );
    assert_eq!(
        Machine::woke(Resume::List { relist: true }),
        State::Listing { relist: true }
    );
    assert_eq!(jittered_timeout(Duration::from_secs(300), 0.5), 450);
    assert_eq!(jittered_timeout(Duration::ZERO, 0.0), 1);
}

#[test]
fn an_expired_continue_token_restarts_the_list_a_few_times_then_fails() {
    let t0 = Instant::from_std(std::time::Instant::now());
    let restart = PageRefused::Restart(Effect::Info(
        "the list's continue token expired; listing again".into(),
    ));
    let mut m = machine();
    for restarts in 0..MAX_LIST_RESTARTS {
        assert_eq!(
            m.page_refused(&status(410, None), false, true, restarts, t0),
            restart,
            "restart {restarts}"
        );
    }
    let brief_of = |refused: PageRefused| match refused {
        PageRefused::Then((state, effects)) => {
            let effects: Vec<String> = effects.iter().map(effect).collect();
            (brief(&state, t0), effects)
        }
        PageRefused::Restart(_) => panic!("restarted"),
    };
    let expired = [
        "count UNKNOWN_ERROR",
        "ERROR UNKNOWN_ERROR 410 retrying",
        "warn HTTP 410: nope; retrying",
    ];
    let (state, effects) = brief_of(m.page_refused(&status(410, None), true, true, 3, t0));
    assert_eq!(
        state, "backoff earliest+0s then list relist=true",
        "past the restarts"
    );
    assert_eq!(effects, expired);
    let (state, effects) =
        brief_of(machine().page_refused(&status(410, None), false, false, 0, t0));
    assert_eq!(
        state, "backoff earliest+0s then list relist=false",
        "a 410 to the first page"
    );
    assert_eq!(effects, expired);
    let (state, _) = brief_of(machine().page_refused(&status(503, None), false, true, 0, t0));
    assert_eq!(
        state, "backoff earliest+0s then list relist=false",
        "another failure"
    );
}

#[test]
fn only_a_504_that_says_resource_version_too_large_is_a_server_behind() {
    let answer = |status: u16, detail: &str| {
        Probed::of(Err(Fault::Status {
            status,
            retry_after: None,
            detail: detail.into(),
        }))
    };
    let too_large = r#"{"kind":"Status","message":"Timeout: Too large resource version: 900, current: 252","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}]},"code":504}"#;
    assert!(matches!(answer(504, too_large), Probed::Behind(current) if current == "252"));
    let unsaid = r#"{"kind":"Status","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge"}]},"code":504}"#;
    assert!(matches!(answer(504, unsaid), Probed::Behind(current) if current == "unknown"));
    // A gateway's timeout, or the same words on another status, is a failure like any other.
    assert!(matches!(
        answer(504, "upstream request timeout"),
        Probed::Failed(_)
    ));
    assert!(matches!(answer(500, too_large), Probed::Failed(_)));
    assert!(matches!(Probed::of(Ok(())), Probed::Current));
}

#[test]
fn a_probe_that_finds_the_server_behind_relists_and_one_that_fails_is_the_watchs_failure() {
    let t0 = Instant::now();
    let behind = machine().resume_probed(Probed::Behind("252".into()), "900".into(), t0);
    let (state, effects) = behind.expect("a transition");
    assert_eq!(state, State::Listing { relist: true });
    assert!(effects.contains(&Effect::CountRelist));
    assert!(
        machine()
            .resume_probed(Probed::Current, "900".into(), t0)
            .is_none()
    );
    let (state, _) = machine()
        .resume_probed(Probed::Failed(status(503, None)), "900".into(), t0)
        .expect("a transition");
    assert!(matches!(state, State::Backoff { resume: Resume::Watch(rv), .. } if rv == "900"));
    let (end, effects) = Machine::silent_probed(Probed::Failed(status(503, None)));
    assert!(
        end.is_none() && effects.len() == 1,
        "the watch goes on, with a notice"
    );
    let (end, _) = Machine::silent_probed(Probed::Failed(status(410, None)));
    assert!(matches!(end, Some(StreamEnd::Expired)));
}
