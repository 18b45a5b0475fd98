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
    assert_eq!(HEADER, 40);
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
        &br#"[1]"#[..],
        br#"{"metadata":{"name":1}}"#,
        br#"{"#,
        br#"{"a":1} x"#,
        br#"{"metadata":{"name":"a\u0000b"}}"#,
        br#"{"metadata":{"name":"a","labels":{"k":1}}}"#,
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
        String::from_utf8_lossy(&from_list.text()),
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
    let value: serde_json::Value = serde_json::from_slice(&half.text()).unwrap();
    assert_eq!(value["apiVersion"], "apps/v1");
    assert_eq!(value["kind"], "Deployment");
    assert_eq!(half.name(), "d");
    // Leading white space and a kind that needs escaping.
    let odd = ItemType::of_list(Some("x/v1"), Some("Q\"List"));
    let item = Object::from_list_item(b" { \"metadata\" : {\"name\":\"q\"} }", &odd).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&item.text()).unwrap();
    assert_eq!(value["kind"], "Q\"");
    assert_eq!(value["metadata"]["name"], "q");
    assert_eq!(item.name(), "q");
}

/// An applied object's text: its last-applied annotation repeats the rest, as kubectl's does.
fn applied(name: &str, rv: &str) -> Vec<u8> {
    let spec = format!(
        r#"{{"replicas":3,"selector":{{"matchLabels":{{"app":"{name}"}}}},"template":{{"metadata":{{"labels":{{"app":"{name}"}}}},"spec":{{"containers":[{{"name":"{name}","image":"registry.example/{name}:1.2.3","ports":[{{"containerPort":8080,"protocol":"TCP"}}]}}]}}}}}}"#
    );
    let applied = serde_json::to_string(&format!(
        r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"labels":{{"app":"{name}"}},"name":"{name}","namespace":"n\"s"}},"spec":{spec}}}"#
    ))
    .unwrap();
    format!(
        r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"{name}","namespace":"n\"s","uid":"uid-{name}","resourceVersion":"{rv}","labels":{{"app":"{name}"}},"annotations":{{"kubectl.kubernetes.io/last-applied-configuration":{applied}}}}},"spec":{spec}}}"#
    )
    .into_bytes()
}

#[test]
fn a_packed_object_reads_as_the_object_it_was_packed_from() {
    let text = applied("web", "41");
    let plain = Object::parse(&text).unwrap();
    let packed = plain.packed().expect("an applied object packs");
    assert_eq!(
        packed.text(),
        &text[..],
        "the text comes back byte for byte"
    );
    assert!(matches!(packed.text(), Cow::Owned(_)) && matches!(plain.text(), Cow::Borrowed(_)));
    let mut out = b"[".to_vec();
    packed.write_text(&mut out);
    assert_eq!(&out[1..], &text[..], "written after what the buffer held");
    assert_eq!(
        (packed.namespace(), packed.name(), packed.uid(), packed.rv()),
        ("n\"s", "web", "uid-web", "41"),
        "the metadata is read without unpacking, escapes and all"
    );
    assert_eq!(packed, plain, "one key");
    assert!(packed.selected_by(&Selector::parse("app=web").unwrap()));
    assert!(!packed.selected_by(&Selector::parse("app=db").unwrap()));
    assert_eq!(packed.text_len(), text.len());
    assert!(
        packed.stored_text_bytes() * 10 < text.len() * 7,
        "{} of {} bytes",
        packed.stored_text_bytes(),
        text.len()
    );
    assert_eq!(
        packed.header_bytes() + packed.stored_text_bytes(),
        super::super::memory::arc_slice_bytes(packed.0.len()),
        "the allocation is the block and the header"
    );
    assert!(packed.packed().is_none(), "packed once");
}

#[test]
fn a_text_that_would_not_shrink_is_kept_as_it_is() {
    // No repeats for LZ4 to find: the block would be as long as the text.
    let text = br#"{"metadata":{"name":"q","namespace":"z","uid":"7","resourceVersion":"1"}}"#;
    assert!(Object::parse(text).unwrap().packed().is_none());
}

#[test]
fn a_block_that_does_not_unpack_gives_the_objects_metadata_not_broken_json() {
    let packed = Object::parse(&applied("web", "41"))
        .unwrap()
        .packed()
        .unwrap();
    let mut bytes = packed.0.to_vec();
    // The block's first token says how long its first literal run is: claim the longest.
    bytes[HEADER] = 0xff;
    bytes[HEADER + 1] = 0xff;
    let broken = Object(bytes.into());
    let value: serde_json::Value = serde_json::from_slice(&broken.text()).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"metadata": {"name": "web", "namespace": "n\"s", "uid": "uid-web", "resourceVersion": "41"}})
    );
}
