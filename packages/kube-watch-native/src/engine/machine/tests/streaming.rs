//! A streaming initial list's transitions (`sendInitialEvents`): refused, ended before its
//! bookmark, and when it falls back to pages.

use super::*;

#[test]
fn a_refused_streaming_list_falls_back_to_pages_only_when_it_means_not_served() {
    check(&[
        (
            "auto, 400",
            |m, t| m.streaming_list_refused(&status(400, None), AUTO, t),
            "pages relist=false",
            &[
                "remember paginated",
                "info streaming lists are not served (HTTP 400: nope); listing in pages",
            ],
        ),
        (
            "auto, 406 without the metadata-only header",
            |m, t| m.streaming_list_refused(&status(406, None), AUTO, t),
            "pages relist=false",
            &[
                "remember paginated",
                "info streaming lists are not served (HTTP 406: nope); listing in pages",
            ],
        ),
        (
            "auto, 406 to the metadata-only header: says nothing of streaming",
            |m, t| m.streaming_list_refused(&status(406, None), AUTO_METADATA, t),
            "backoff earliest+0s then list relist=true",
            &[
                "count UNKNOWN_ERROR",
                "refuse metadata-only",
                "ERROR UNKNOWN_ERROR 406 retrying",
                "warn HTTP 406: nope; retrying",
            ],
        ),
        (
            "auto, 401: a fault pages would meet too",
            |m, t| m.streaming_list_refused(&status(401, None), AUTO, t),
            "backoff earliest+0s then list relist=false",
            &[
                "count UNAUTHORIZED_ERROR",
                "ERROR UNAUTHORIZED_ERROR 401 retrying",
                "warn HTTP 401: nope; retrying",
            ],
        ),
        (
            "auto, 404",
            |m, t| m.streaming_list_refused(&status(404, None), AUTO, t),
            "backoff earliest+0s then list relist=false",
            &[
                "count NOT_FOUND",
                "ERROR NOT_FOUND 404 retrying",
                "warn HTTP 404: nope; retrying",
            ],
        ),
        (
            "streaming asked for, 400: no fallback",
            |m, t| m.streaming_list_refused(&status(400, None), FIXED, t),
            "closed",
            &[
                "count BAD_REQUEST",
                "warn HTTP 400: nope; giving up",
                "ERROR BAD_REQUEST 400",
            ],
        ),
    ]);
}

#[test]
fn a_streaming_list_that_ends_before_its_bookmark_fails_or_falls_back() {
    check(&[
        (
            "auto, a change inside it",
            |m, t| m.streaming_list_ended(StreamEnd::Unsupported, false, AUTO, String::new(), t),
            "pages relist=false",
            &[
                "remember paginated",
                "info the streaming list sent a change before its initial events ended; listing in pages",
            ],
        ),
        (
            "streaming asked for, a change inside it",
            |m, t| m.streaming_list_ended(StreamEnd::Unsupported, false, FIXED, String::new(), t),
            "backoff earliest+0s then list relist=false",
            &[
                "count SYSTEM_ERROR",
                "ERROR SYSTEM_ERROR 0 retrying",
                "warn the streaming list sent a change before its initial events ended; retrying",
            ],
        ),
        (
            "a clean end before the bookmark",
            |m, t| {
                let end = StreamEnd::Clean { saw_events: true };
                m.streaming_list_ended(end, false, AUTO, String::new(), t)
            },
            "backoff earliest+0s then list relist=false",
            &[
                "count SYSTEM_ERROR",
                "ERROR SYSTEM_ERROR 0 retrying",
                "warn the streaming list ended before its initial-events-end bookmark; retrying",
            ],
        ),
        (
            "a 410 before the bookmark",
            |m, t| {
                m.streaming_list_ended(StreamEnd::Expired, false, AUTO_METADATA, String::new(), t)
            },
            "backoff earliest+0s then list relist=true",
            &[
                "count UNKNOWN_ERROR",
                "ERROR UNKNOWN_ERROR 410 retrying",
                "warn HTTP 410: the streaming list expired; retrying",
            ],
        ),
        (
            "synced, then a clean end after traffic: watch on",
            |m, t| {
                let end = StreamEnd::Clean { saw_events: true };
                m.streaming_list_ended(end, true, AUTO, "9".into(), t)
            },
            "watch 9",
            &[],
        ),
        (
            "synced, then a 410",
            |m, t| m.streaming_list_ended(StreamEnd::Expired, true, AUTO, "9".into(), t),
            "relist",
            &[
                "count relist",
                "info resourceVersion expired (410); relisting",
            ],
        ),
    ]);
}
