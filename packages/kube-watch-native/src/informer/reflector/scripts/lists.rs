//! Scripts of the initial list: a streaming list refused or abandoned for pages, a
//! metadata-only one refused its Accept header, a paged list restarted or dropped.

use super::*;

#[tokio::test(start_paused = true)]
async fn a_streaming_list_refused_falls_back_to_pages_and_is_remembered() {
    let fake = Fake::new(vec![
        Reply::Status(422, None),
        Reply::Page(list(&[pod("a", "1")], "4", None)),
        Reply::Watch(Vec::new(), End::Open),
    ]);
    let (reflector, recorder, memory) = run_script(&fake, InitialList::Auto, bearer("t"));
    assert_eq!(
        events_seen(&reflector, r#"SYNCED "4" false"#).await,
        ["ADDED a 1", r#"SYNCED "4" false"#]
    );
    let sent = fake.sent();
    assert!(sent[0].url.contains("sendInitialEvents=true"));
    assert!(sent[1].url.contains("limit=2") && !sent[1].url.contains("watch"));
    assert_eq!(sent[1].at, sent[0].at, "no backoff before the fallback");
    assert!(memory.is_paginated("http://cluster.test"));
    assert!(message_with(&recorder, "streaming lists are not served (HTTP 422").is_some());
    reflector.stop();
}

#[tokio::test(start_paused = true)]
async fn a_406_to_a_metadata_only_streaming_list_asks_for_plain_json_and_still_streams() {
    let fake = Fake::new(vec![
        Reply::Status(406, None),
        Reply::Watch(
            vec![line(event("ADDED", "a", "1")), end_bookmark("4")],
            End::Open,
        ),
        Reply::Watch(Vec::new(), End::Open),
    ]);
    let mut config = config("http://cluster.test", InitialList::Auto);
    config.projection = Some(Projection::metadata_only::<&str>(&[]));
    let (reflector, recorder, memory) = run_config(&fake, config, bearer("t"));
    assert_eq!(
        events_seen(&reflector, r#"SYNCED "4" false"#).await,
        ["ERROR 406 true", "ADDED a 1", r#"SYNCED "4" false"#]
    );
    let sent = fake.sent();
    let accept = sent[0].accept.as_deref().unwrap_or_default();
    assert!(accept.contains("as=PartialObjectMetadata;"), "{accept}");
    assert!(
        sent[1].url.contains("sendInitialEvents=true"),
        "streamed again"
    );
    assert_eq!(sent[1].accept, None, "plain JSON from then on");
    assert!(
        !memory.is_paginated("http://cluster.test"),
        "a refused Accept header says nothing of streaming lists"
    );
    let refused: Vec<String> = messages(&recorder)
        .into_iter()
        .filter(|m| m.contains("406 Not Acceptable"))
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(
        reflector
            .cache()
            .get("ns", "a")
            .map(|o| String::from_utf8_lossy(&o.text())
                .contains(r#""kind":"PartialObjectMetadata""#)),
        Some(true),
        "cut down here"
    );
    reflector.stop();
}

#[tokio::test(start_paused = true)]
async fn a_change_inside_a_streaming_list_falls_back_to_pages() {
    let fake = Fake::new(vec![
        Reply::Watch(
            vec![
                line(event("ADDED", "a", "1")),
                line(event("MODIFIED", "a", "2")),
            ],
            End::Open,
        ),
        Reply::Page(list(&[pod("a", "2")], "4", None)),
        Reply::Watch(Vec::new(), End::Open),
    ]);
    let (reflector, _, memory) = run_script(&fake, InitialList::Auto, bearer("t"));
    assert_eq!(
        events_seen(&reflector, r#"SYNCED "4" false"#).await,
        ["ADDED a 2", r#"SYNCED "4" false"#],
        "nothing of the abandoned streaming list reaches the cache"
    );
    assert!(memory.is_paginated("http://cluster.test"));
    assert!(fake.sent()[2].url.contains("resourceVersion=4&"));
    reflector.stop();
}

#[tokio::test(start_paused = true)]
async fn an_expired_continue_token_restarts_the_list_without_an_error() {
    let fake = Fake::new(vec![
        Reply::Page(list(&[pod("a", "1"), pod("b", "2")], "5", Some("t1"))),
        Reply::Status(410, None),
        Reply::Page(list(&[pod("a", "1"), pod("b", "2")], "9", Some("t2"))),
        Reply::Page(list(&[pod("c", "8")], "9", None)),
        Reply::Watch(Vec::new(), End::Open),
    ]);
    let (reflector, recorder, _) = run_script(&fake, InitialList::Paginated, bearer("t"));
    assert_eq!(
        events_seen(&reflector, r#"SYNCED "9" false"#).await,
        ["ADDED a 1", "ADDED b 2", "ADDED c 8", r#"SYNCED "9" false"#]
    );
    let sent = fake.sent();
    let continues: Vec<bool> = sent[..4]
        .iter()
        .map(|s| s.url.contains("continue="))
        .collect();
    assert_eq!(continues, [false, true, false, true]);
    assert!(sent[3].url.contains("continue=t2"));
    assert_eq!(sent[2].at, sent[1].at, "restarted at once");
    assert!(message_with(&recorder, "continue token expired").is_some());
    assert_eq!(reflector.stats().snapshot().relists, 0);
    reflector.stop();
}

#[test]
fn a_page_may_take_2_mib_an_object_and_1_mib_besides() {
    assert_eq!(max_page_bytes(1), 3 << 20);
    assert_eq!(max_page_bytes(500), 1001 << 20);
    assert_eq!(
        max_page_bytes(u32::MAX),
        (u32::MAX as usize) * (2 << 20) + (1 << 20)
    );
}

#[tokio::test(start_paused = true)]
async fn a_page_past_the_bound_drops_the_list_with_an_error_naming_it_and_lists_again() {
    // Page size 2: at most 5 MiB.
    let huge = list(&[pod("a", "1"), "9".repeat(5 << 20)], "5", None);
    let fake = Fake::new(vec![
        Reply::Page(huge),
        Reply::Page(list(&[pod("a", "1")], "6", None)),
        Reply::Watch(Vec::new(), End::Open),
    ]);
    let (reflector, recorder, _) = run_script(&fake, InitialList::Paginated, bearer("t"));
    assert_eq!(
        events_seen(&reflector, r#"SYNCED "6" false"#).await,
        ["ERROR 0 true", "ADDED a 1", r#"SYNCED "6" false"#]
    );
    let sent = fake.sent();
    assert!(sent[1].url.contains("limit=2") && !sent[1].url.contains("continue"));
    assert!(sent[1].at > sent[0].at, "after a backoff step");
    let warning = message_with(&recorder, "list page").expect("a warning");
    assert!(
        warning.contains("went past 5242880 bytes (5 MiB), more than 2 objects of at most 2 MiB"),
        "{warning}"
    );
    assert!(warning.contains("retrying in"), "{warning}");
    reflector.stop();
}

#[tokio::test(start_paused = true)]
async fn a_relist_page_past_the_bound_reaches_synced_consumers_as_an_error_then_lists_again() {
    // Page size 1: at most 3 MiB. The relist after a 410 meets a page that goes on past it.
    let endless = list(&[pod("a", "1"), "9".repeat(4 << 20)], "5", None);
    let fake = Fake::new(vec![
        Reply::Page(list(&[pod("a", "1")], "3", None)),
        Reply::Status(410, None),
        Reply::Page(endless),
        Reply::Page(list(&[pod("b", "6")], "6", None)),
        Reply::Watch(Vec::new(), End::Open),
    ]);
    let mut config = config("http://cluster.test", InitialList::Paginated);
    config.page_size = 1;
    let (reflector, recorder, _) = run_config(&fake, config, bearer("t"));
    assert_eq!(
        events_seen(&reflector, r#"SYNCED "6" true"#).await,
        [
            "ADDED a 1",
            r#"SYNCED "3" false"#,
            "ERROR 0 true",
            "DELETED a 1",
            "ADDED b 6",
            r#"SYNCED "6" true"#
        ],
        "the dropped relist is an ERROR between the two lists"
    );
    let sent = fake.sent();
    assert!(sent[2].url.contains("limit=1") && sent[3].url.contains("limit=1"));
    assert!(sent[3].at > sent[2].at, "listed again after a backoff step");
    let warning = message_with(&recorder, "list page").expect("a warning");
    assert!(
        warning.contains("went past 3145728 bytes (3 MiB), more than 1 objects of at most 2 MiB"),
        "{warning}"
    );
    reflector.stop();
}
