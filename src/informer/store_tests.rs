//! Unit tests of the store.

use super::*;

fn object(ns: &str, name: &str, uid: &str, rv: &str) -> Object {
    let text = format!(
        r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"{name}","namespace":"{ns}","uid":"{uid}","resourceVersion":"{rv}","labels":{{"app":"{name}"}}}},"spec":{{"x":[1,2,{{}}]}}}}"#
    );
    Object::parse(text.as_bytes().into()).unwrap()
}

fn kinds(changes: &[Change]) -> Vec<(ChangeKind, String, String)> {
    changes
        .iter()
        .map(|c| (c.kind, c.key.to_string(), c.rv.to_string()))
        .collect()
}

#[test]
fn parses_only_the_metadata_it_needs() {
    let text = br#"{"metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"7",
        "labels":{"z":"1","a":"2"},"annotations":{"k":"v"}},"status":{"deep":[[[{"x":null}]]]}}"#;
    let object = Object::parse(text[..].into()).unwrap();
    assert_eq!(object.key, ObjectKey::new("ns", "a"));
    assert_eq!(object.key.to_string(), "ns/a");
    assert_eq!(&*object.entry.rv, "7");
    assert_eq!(&*object.entry.uid, "u1");
    let labels: Vec<_> = object
        .entry
        .labels
        .iter()
        .map(|(k, v)| (&**k, &**v))
        .collect();
    assert_eq!(labels, [("a", "2"), ("z", "1")], "sorted by key");
    assert_eq!(
        &*object.entry.text,
        &text[..],
        "the text is kept as received"
    );
    let cluster = Object::parse(br#"{"metadata":{"name":"n1"}}"#[..].into()).unwrap();
    assert_eq!(cluster.key.to_string(), "n1");
}

#[test]
fn objects_without_a_name_or_not_objects_are_refused() {
    for bad in [
        &br#"{"metadata":{}}"#[..],
        br#"{"kind":"Pod"}"#,
        br#"{"metadata":{"name":""}}"#,
    ] {
        assert_eq!(Object::parse(bad.into()), Err(StoreError::MissingName));
    }
    for bad in [
        &b"[1]"[..],
        b"{\"metadata\":{\"name\":1}}",
        b"{",
        b"{\"a\":1} x",
    ] {
        assert!(
            matches!(Object::parse(bad.into()), Err(StoreError::Invalid(_))),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn list_items_get_the_watch_events_kind_and_api_version() {
    let watched = br#"{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"d","namespace":"ns","uid":"u","resourceVersion":"3"},"spec":{}}"#;
    let item =
        br#"{"metadata":{"name":"d","namespace":"ns","uid":"u","resourceVersion":"3"},"spec":{}}"#;
    let item_type = ItemType::of_list(Some("apps/v1"), Some("DeploymentList"));
    let from_list = Object::from_list_item(item, &item_type).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&from_list.entry.text),
        String::from_utf8_lossy(watched),
        "byte for byte the text a watch event carries"
    );
    assert_eq!(from_list, Object::parse(watched[..].into()).unwrap());
    // An item that has them keeps its text; one that has only one gets the other.
    let typed = Object::from_list_item(watched, &item_type).unwrap();
    assert_eq!(&*typed.entry.text, &watched[..]);
    let half = br#"{"kind":"Deployment","metadata":{"name":"d"}}"#;
    let half = Object::from_list_item(half, &item_type).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&half.entry.text).unwrap();
    assert_eq!(value["apiVersion"], "apps/v1");
    assert_eq!(value["kind"], "Deployment");
    // Leading white space and a kind that needs escaping.
    let odd = ItemType::of_list(Some("x/v1"), Some("Q\"List"));
    let item = Object::from_list_item(b" { \"metadata\" : {\"name\":\"q\"} }", &odd).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&item.entry.text).unwrap();
    assert_eq!(value["kind"], "Q\"");
    assert_eq!(value["metadata"]["name"], "q");
}

#[test]
fn watch_events_apply_as_consistent_changes() {
    let mut store = Store::new();
    let a1 = object("ns", "a", "u1", "1");
    assert_eq!(
        kinds(&store.apply(ChangeKind::Added, a1.clone())),
        [(ChangeKind::Added, "ns/a".into(), "1".into())]
    );
    assert!(
        store.apply(ChangeKind::Added, a1).is_empty(),
        "a repeat is nothing"
    );
    assert_eq!(
        kinds(&store.apply(ChangeKind::Added, object("ns", "a", "u1", "2"))),
        [(ChangeKind::Modified, "ns/a".into(), "2".into())],
        "ADDED for a cached object is a MODIFIED"
    );
    assert_eq!(
        kinds(&store.apply(ChangeKind::Modified, object("ns", "a", "u2", "3"))),
        [
            (ChangeKind::Deleted, "ns/a".into(), "2".into()),
            (ChangeKind::Added, "ns/a".into(), "3".into())
        ],
        "another uid replaces the object"
    );
    assert_eq!(
        kinds(&store.apply(ChangeKind::Modified, object("ns", "b", "u3", "4"))),
        [(ChangeKind::Added, "ns/b".into(), "4".into())],
        "MODIFIED for an unknown object is an ADDED"
    );
    let deleted = store.apply(ChangeKind::Deleted, object("ns", "a", "u2", "5"));
    assert_eq!(
        kinds(&deleted),
        [(ChangeKind::Deleted, "ns/a".into(), "5".into())],
        "DELETED carries the server's final object"
    );
    assert!(
        store
            .apply(ChangeKind::Deleted, object("ns", "a", "u2", "6"))
            .is_empty()
    );
    assert_eq!(store.len(), 1);
}

#[test]
fn cached_bytes_follow_the_texts() {
    let mut store = Store::new();
    let a = object("ns", "a", "u1", "1");
    let b = object("ns", "b", "u2", "1");
    let (la, lb) = (a.entry.text.len(), b.entry.text.len());
    store.apply(ChangeKind::Added, a);
    store.apply(ChangeKind::Added, b);
    assert_eq!(store.cached_bytes(), la + lb);
    let a2 = object("ns", "a", "u1", "22222");
    let la2 = a2.entry.text.len();
    store.apply(ChangeKind::Modified, a2);
    assert_eq!(store.cached_bytes(), la2 + lb);
    store.relist(vec![object("ns", "b", "u2", "1")]);
    assert_eq!(store.cached_bytes(), lb);
    store.clear();
    assert_eq!((store.cached_bytes(), store.len()), (0, 0));
}

#[test]
fn a_relist_yields_exactly_the_difference() {
    let mut store = Store::new();
    for o in [
        object("a", "same", "u1", "1"),
        object("a", "changed", "u2", "1"),
        object("b", "gone", "u3", "1"),
        object("b", "recreated", "u4", "1"),
    ] {
        store.apply(ChangeKind::Added, o);
    }
    let kept = store
        .get(&ObjectKey::new("a", "same"))
        .unwrap()
        .text
        .clone();
    let changes = store.relist(vec![
        object("c", "new", "u5", "9"),
        object("a", "same", "u1", "1"),
        object("a", "changed", "u2", "8"),
        object("b", "recreated", "u6", "7"),
    ]);
    assert_eq!(
        kinds(&changes),
        [
            (ChangeKind::Modified, "a/changed".into(), "8".into()),
            (ChangeKind::Deleted, "b/gone".into(), "1".into()),
            (ChangeKind::Deleted, "b/recreated".into(), "1".into()),
            (ChangeKind::Added, "b/recreated".into(), "7".into()),
            (ChangeKind::Added, "c/new".into(), "9".into()),
        ]
    );
    let gone = changes.iter().find(|c| &*c.key.name == "gone").unwrap();
    assert!(
        String::from_utf8_lossy(&gone.text).contains(r#""uid":"u3""#),
        "DELETED with the last known object"
    );
    assert!(Arc::ptr_eq(
        &kept,
        &store.get(&ObjectKey::new("a", "same")).unwrap().text
    ));
    assert_eq!(store.len(), 4);
    assert!(
        store
            .relist(
                store
                    .iter()
                    .map(|(k, e)| Object {
                        key: k.clone(),
                        entry: e.clone()
                    })
                    .collect()
            )
            .is_empty()
    );
}

#[test]
fn lists_filter_by_namespace_and_labels_in_key_order() {
    let mut store = Store::new();
    for (ns, name) in [
        ("b", "x"),
        ("a", "y"),
        ("a", "x"),
        ("ab", "z"),
        ("", "node"),
    ] {
        store.apply(ChangeKind::Added, object(ns, name, name, "1"));
    }
    let names = |text: Vec<u8>| -> Vec<String> {
        let value: Vec<serde_json::Value> = serde_json::from_slice(&text).unwrap();
        value
            .iter()
            .map(|v| {
                let m = &v["metadata"];
                format!(
                    "{}/{}",
                    m["namespace"].as_str().unwrap(),
                    m["name"].as_str().unwrap()
                )
            })
            .collect()
    };
    let all = Selector::default();
    assert_eq!(
        names(store.list_json(None, &all)),
        ["/node", "a/x", "a/y", "ab/z", "b/x"]
    );
    assert_eq!(names(store.list_json(Some("a"), &all)), ["a/x", "a/y"]);
    assert_eq!(
        names(store.list_json(Some("zz"), &all)),
        Vec::<String>::new()
    );
    let x = Selector::parse("app in (x, node)").unwrap();
    assert_eq!(names(store.list_json(None, &x)), ["/node", "a/x", "b/x"]);
    assert_eq!(names(store.list_json(Some("b"), &x)), ["b/x"]);
    assert_eq!(
        store.list_json(Some("a"), &Selector::parse("app=q").unwrap()),
        b"[]"
    );
}
