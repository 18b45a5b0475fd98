//! A plain watch's machine (the plan `Once`), one row per transition: it watches once, and its
//! end or its first failure is the end.

use super::*;

fn once() -> Machine {
    Machine::once(Jitter::new(7))
}

#[test]
fn a_plain_watch_starts_watching_and_never_reconnects() {
    let mut m = once();
    assert_eq!(m.start(), State::Watching { rv: String::new() });
    assert_eq!(
        m.watch_starting(),
        vec![],
        "its first watch is no reconnect"
    );
}

#[test]
fn every_refused_watch_is_the_last_with_one_error_and_its_warning() {
    check_on(
        once,
        &[
            (
                "a 503",
                |m, t| m.watch_refused(&status(503, Some(3)), String::new(), t),
                "closed",
                &[
                    "count UNKNOWN_ERROR",
                    "warn HTTP 503: nope",
                    "ERROR UNKNOWN_ERROR 503",
                ],
            ),
            (
                "a 410: no relist, there is no list",
                |m, t| m.watch_refused(&status(410, None), String::new(), t),
                "closed",
                &[
                    "count UNKNOWN_ERROR",
                    "warn HTTP 410: nope",
                    "ERROR UNKNOWN_ERROR 410",
                ],
            ),
            (
                "a 401: no second credential",
                |m, t| m.watch_refused(&status(401, None), String::new(), t),
                "closed",
                &[
                    "count UNAUTHORIZED_ERROR",
                    "warn HTTP 401: nope",
                    "ERROR UNAUTHORIZED_ERROR 401",
                ],
            ),
            (
                "a 406 to metadataOnly",
                |m, t| m.watch_refused(&status(406, None), String::new(), t),
                "closed",
                &[
                    "count UNKNOWN_ERROR",
                    "refuse metadata-only",
                    "warn HTTP 406: nope",
                    "ERROR UNKNOWN_ERROR 406",
                ],
            ),
            (
                "a refused credential",
                |m, t| m.watch_refused(&refused(), String::new(), t),
                "closed",
                &[
                    "count BAD_REQUEST",
                    "warn the oidc provider runs in the browser",
                    "ERROR BAD_REQUEST 400",
                ],
            ),
        ],
    );
}

#[test]
fn a_plain_watch_ends_with_its_stream() {
    check_on(
        once,
        &[
            (
                "the server's end after events",
                |m, t| m.watch_ended(StreamEnd::Clean { saw_events: true }, String::new(), t),
                "closed",
                &[],
            ),
            (
                "a silent end, however soon",
                |m, t| m.watch_ended(StreamEnd::Clean { saw_events: false }, String::new(), t),
                "closed",
                &[],
            ),
            (
                "an ERROR in the stream: the server said why, so no warning",
                |m, t| {
                    let end = StreamEnd::Error {
                        status: 500,
                        retry_after: Some(Duration::from_secs(4)),
                    };
                    m.watch_ended(end, String::new(), t)
                },
                "closed",
                &["count SYSTEM_ERROR", "ERROR SYSTEM_ERROR 500"],
            ),
            (
                "an expired resourceVersion",
                |m, t| m.watch_ended(StreamEnd::Expired, String::new(), t),
                "closed",
                &["count UNKNOWN_ERROR", "ERROR UNKNOWN_ERROR 410"],
            ),
            (
                "a cut stream",
                |m, t| {
                    let fault = Fault::Transport(Error::Connect("reset".into()));
                    m.watch_ended(StreamEnd::Fault(fault), String::new(), t)
                },
                "closed",
                &[
                    "count SYSTEM_ERROR",
                    "warn request failed: reset",
                    "ERROR SYSTEM_ERROR 0",
                ],
            ),
        ],
    );
}
