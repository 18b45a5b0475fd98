//! A plain watch's machine (the plan `Once`), one row per transition: it watches once, and its
//! end or its first failure is the end.

use super::*;

fn once() -> Machine {
    Machine::once(Jitter::new(7))
}

#[test]
fn a_plain_watch_never_reconnects() {
    let mut m = once();
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
                |m, _| m.once_refused(&status(503, Some(3))),
                "closed",
                &[
                    "count UNKNOWN_ERROR",
                    "warn HTTP 503: nope",
                    "ERROR UNKNOWN_ERROR 503",
                ],
            ),
            (
                "a 410: no relist, there is no list",
                |m, _| m.once_refused(&status(410, None)),
                "closed",
                &[
                    "count UNKNOWN_ERROR",
                    "warn HTTP 410: nope",
                    "ERROR UNKNOWN_ERROR 410",
                ],
            ),
            (
                "a 401: no second credential",
                |m, _| m.once_refused(&status(401, None)),
                "closed",
                &[
                    "count UNAUTHORIZED_ERROR",
                    "warn HTTP 401: nope",
                    "ERROR UNAUTHORIZED_ERROR 401",
                ],
            ),
            (
                "a 406 to metadataOnly",
                |m, _| m.once_refused(&status(406, None)),
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
                |m, _| m.once_refused(&refused()),
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
                |m, _| m.once_ended(StreamEnd::Clean { saw_events: true }),
                "closed",
                &[],
            ),
            (
                "a silent end, however soon",
                |m, _| m.once_ended(StreamEnd::Clean { saw_events: false }),
                "closed",
                &[],
            ),
            (
                "an ERROR in the stream: the server said why, so no warning",
                |m, _| {
                    let end = StreamEnd::Error {
                        status: 500,
                        retry_after: Some(Duration::from_secs(4)),
                    };
                    m.once_ended(end)
                },
                "closed",
                &["count SYSTEM_ERROR", "ERROR SYSTEM_ERROR 500"],
            ),
            (
                "an expired resourceVersion",
                |m, _| m.once_ended(StreamEnd::Expired),
                "closed",
                &["count UNKNOWN_ERROR", "ERROR UNKNOWN_ERROR 410"],
            ),
            (
                "a cut stream",
                |m, _| {
                    let fault = Fault::Transport(Error::Connect("reset".into()));
                    m.once_ended(StreamEnd::Fault(fault))
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
