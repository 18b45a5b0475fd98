//! Unit tests of the cached object: what is read out of the text, and what it costs.

use super::*;
use crate::informer::selector::Selector;

#[test]
fn parses_only_the_metadata_it_needs() {
    let text = br#"{"metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"7",
        "labels":{"z":"1","a":"2"},"annotations":{"k":"v"}},"status":{"deep":[[[{"x":null}]]]}}"#;
    let object = Object::parse(text).unwrap();
    assert_eq!(object.key(), ObjectKey::new("ns", "a"));
    assert_eq!(object.key().to_string(), "ns/a");
    assert_eq!((object.namespace(), object.name()), ("ns", "a"));
    assert_eq!((object.uid(), object.rv()), ("u1", "7"));
    assert!(object.selected_by(&Selector::parse("a=2,z=1").unwrap()));
    assert!(!object.selected_by(&Selector::parse("a=1").unwrap()));
    assert_eq!(object.text(), &text[..], "the text is kept as received");
    let cluster = Object::parse(br#"{"metadata":{"name":"n1"}}"#).unwrap();
    assert_eq!(cluster.key().to_string(), "n1");
    assert_eq!(
        (cluster.namespace(), cluster.uid(), cluster.rv()),
        ("", "", "")
    );
    assert!(cluster.selected_by(&Selector::parse("!app").unwrap()));
    assert!(!cluster.selected_by(&Selector::parse("app").unwrap()));
}

#[test]
fn an_object_costs_its_text_and_a_fixed_header() {
    let text = br#"{"metadata":{"name":"web-1","namespace":"prod","uid":"0fcab53f-1b78-47ae-a585-ce59d572d624","resourceVersion":"7763","labels":{"app":"web"}},"status":{"phase":"Running"}}"#;
    let object = Object::parse(text).unwrap();
    // Key, uid, resourceVersion and labels are places in the text, not copies.
    assert_eq!(object.0.len(), HEADER + text.len());
    assert_eq!(HEADER, 36);
    assert_eq!(std::mem::size_of::<Object>(), 16);
}

#[test]
fn strings_written_with_escapes_are_read_unescaped() {
    let text = br#"{"metadata":{"name":"a\u0062","namespace":"n\"s","uid":"\u0075","resourceVersion":"4\/2","labels":{"k\u0065y":"v\u0061l"}}}"#;
    let object = Object::parse(text).unwrap();
    assert_eq!((object.namespace(), object.name()), ("n\"s", "ab"));
    assert_eq!((object.uid(), object.rv()), ("u", "4/2"));
    assert!(object.selected_by(&Selector::parse("key=val").unwrap()));
    assert_eq!(object.text(), &text[..]);
    // The unescaped copies follow the text.
    assert!(object.0.len() > HEADER + text.len());
    let probe = Object::probe("n\"s", "ab");
    assert_eq!(probe, object, "a probe finds it by its unescaped key");
}

#[test]
fn objects_order_and_compare_by_namespace_then_name() {
    let at = |ns: &str, name: &str, rv: &str| {
        Object::parse(
            format!(
                r#"{{"metadata":{{"name":"{name}","namespace":"{ns}","resourceVersion":"{rv}"}}}}"#
            )
            .as_bytes(),
        )
        .unwrap()
    };
    let mut objects = [
        at("b", "a", "1"),
        at("a", "b", "1"),
        at("ab", "a", "1"),
        at("a", "a", "1"),
        at("", "z", "1"),
    ];
    objects.sort();
    let keys: Vec<String> = objects.iter().map(|o| o.key().to_string()).collect();
    assert_eq!(keys, ["z", "a/a", "a/b", "ab/a", "b/a"]);
    assert_eq!(
        at("a", "b", "1"),
        at("a", "b", "2"),
        "equality is the key's"
    );
    assert!(Object::probe("a", "") < at("a", "a", "1"));
    assert!(Object::probe("a", "") > at("", "zzz", "1"));
}

#[test]
fn objects_without_a_name_or_not_objects_are_refused() {
    for bad in [
        &br#"{"metadata":{}}"#[..],
        br#"{"kind":"Pod"}"#,
        br#"{"metadata":{"name":""}}"#,
        br#"{"metadata":{"name":null}}"#,
    ] {
        assert_eq!(Object::parse(bad).unwrap_err(), StoreError::MissingName);
    }
    let long = format!(r#"{{"metadata":{{"name":"{}"}}}}"#, "x".repeat(70_000));
    for bad in [
        &b"[1]"[..],
        b"{\"metadata\":{\"name\":1}}",
        b"{",
        b"{\"a\":1} x",
        b"{\"metadata\":{\"name\":\"a\\u0000b\"}}",
        b"{\"metadata\":{\"name\":\"a\",\"labels\":{\"k\":1}}}",
        long.as_bytes(),
    ] {
        assert!(
            matches!(Object::parse(bad), Err(StoreError::Invalid(_))),
            "{}",
            String::from_utf8_lossy(&bad[..bad.len().min(80)])
        );
    }
    assert!(Object::parse(br#"{"metadata":{"name":"a","labels":null}}"#).is_ok());
}

#[test]
fn list_items_get_the_watch_events_kind_and_api_version() {
    let watched = br#"{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"d","namespace":"ns","uid":"u","resourceVersion":"3","labels":{"a":"b"}},"spec":{}}"#;
    let item = br#"{"metadata":{"name":"d","namespace":"ns","uid":"u","resourceVersion":"3","labels":{"a":"b"}},"spec":{}}"#;
    let item_type = ItemType::of_list(Some("apps/v1"), Some("DeploymentList"));
    let from_list = Object::from_list_item(item, &item_type).unwrap();
    assert_eq!(
        String::from_utf8_lossy(from_list.text()),
        String::from_utf8_lossy(watched),
        "byte for byte the text a watch event carries"
    );
    // What was read from the item is found in the longer text.
    let from_watch = Object::parse(watched).unwrap();
    for object in [&from_list, &from_watch] {
        assert_eq!(
            (object.namespace(), object.name(), object.uid(), object.rv()),
            ("ns", "d", "u", "3")
        );
        assert!(object.selected_by(&Selector::parse("a=b").unwrap()));
    }
    assert_eq!(from_list.0.len(), from_watch.0.len());
    // An item that has them keeps its text; one that has only one gets the other.
    let typed = Object::from_list_item(watched, &item_type).unwrap();
    assert_eq!(typed.text(), &watched[..]);
    let half = br#"{"kind":"Deployment","metadata":{"name":"d"}}"#;
    let half = Object::from_list_item(half, &item_type).unwrap();
    let value: serde_json::Value = serde_json::from_slice(half.text()).unwrap();
    assert_eq!(value["apiVersion"], "apps/v1");
    assert_eq!(value["kind"], "Deployment");
    assert_eq!(half.name(), "d");
    // Leading white space and a kind that needs escaping.
    let odd = ItemType::of_list(Some("x/v1"), Some("Q\"List"));
    let item = Object::from_list_item(b" { \"metadata\" : {\"name\":\"q\"} }", &odd).unwrap();
    let value: serde_json::Value = serde_json::from_slice(item.text()).unwrap();
    assert_eq!(value["kind"], "Q\"");
    assert_eq!(value["metadata"]["name"], "q");
    assert_eq!(item.name(), "q");
}
