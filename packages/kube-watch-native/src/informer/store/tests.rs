//! Unit tests of the store.

use super::*;

fn object(ns: &str, name: &str, uid: &str, rv: &str) -> Object {
    let text = format!(
        r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"{name}","namespace":"{ns}","uid":"{uid}","resourceVersion":"{rv}","labels":{{"app":"{name}"}}}},"spec":{{"x":[1,2,{{}}]}}}}"#
    );
    Object::parse(text.as_bytes()).unwrap()
}

fn relist(store: &mut Store, objects: Vec<Object>) -> Vec<Change> {
    let mut changes = Vec::new();
    let count = store.relist(objects.into_iter().collect(), |c| {
        changes.extend_from_slice(c)
    });
    assert_eq!(count, changes.len());
    changes
}

fn kinds(changes: &[Change]) -> Vec<(ChangeKind, String, String)> {
    changes
        .iter()
        .map(|c| {
            (
                c.kind,
                c.object.key().to_string(),
                c.object.rv().to_string(),
            )
        })
        .collect()
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
    let (la, lb) = (a.text().len(), b.text().len());
    store.apply(ChangeKind::Added, a);
    store.apply(ChangeKind::Added, b);
    assert_eq!(store.cached_bytes(), la + lb);
    let a2 = object("ns", "a", "u1", "22222");
    let la2 = a2.text().len();
    store.apply(ChangeKind::Modified, a2);
    assert_eq!(store.cached_bytes(), la2 + lb);
    relist(&mut store, vec![object("ns", "b", "u2", "1")]);
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
    let kept = store.get(&ObjectKey::new("a", "same")).unwrap().clone();
    let changes = relist(
        &mut store,
        vec![
            object("c", "new", "u5", "9"),
            object("a", "same", "u1", "1"),
            object("a", "changed", "u2", "8"),
            object("b", "recreated", "u6", "7"),
        ],
    );
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
    let gone = changes.iter().find(|c| c.object.name() == "gone").unwrap();
    assert!(
        String::from_utf8_lossy(&gone.object.text()).contains(r#""uid":"u3""#),
        "DELETED with the last known object"
    );
    assert!(
        kept.ptr_eq(store.get(&ObjectKey::new("a", "same")).unwrap()),
        "an unchanged object keeps its allocation"
    );
    assert_eq!(store.len(), 4);
    let mut again: Vec<Object> = store.iter().cloned().collect();
    assert!(relist(&mut store, again.clone()).is_empty());
    // Of objects listed under one key, the last one counts.
    again.push(object("a", "same", "u1", "10"));
    again.push(object("a", "same", "u1", "11"));
    let changes = relist(&mut store, again);
    assert_eq!(
        kinds(&changes),
        [(ChangeKind::Modified, "a/same".into(), "11".into())]
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
        names(store.list_json(Query::labels(None, &all))),
        ["/node", "a/x", "a/y", "ab/z", "b/x"]
    );
    assert_eq!(
        names(store.list_json(Query::labels(Some("a"), &all))),
        ["a/x", "a/y"]
    );
    assert_eq!(
        names(store.list_json(Query::labels(Some("zz"), &all))),
        Vec::<String>::new()
    );
    let x = Selector::parse("app in (x, node)").unwrap();
    assert_eq!(
        names(store.list_json(Query::labels(None, &x))),
        ["/node", "a/x", "b/x"]
    );
    assert_eq!(
        names(store.list_json(Query::labels(Some("b"), &x))),
        ["b/x"]
    );
    assert_eq!(
        store.list_json(Query::labels(Some("a"), &Selector::parse("app=q").unwrap())),
        b"[]"
    );
}

/// A pod whose text repeats itself, as applied objects' do, so that it packs.
fn bulky(name: &str, rv: &str) -> Object {
    let env: Vec<String> = (0..20)
        .map(|i| format!(r#"{{"name":"SETTING_{i}","value":"value-{i}"}}"#))
        .collect();
    let text = format!(
        r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"{name}","namespace":"ns","uid":"u-{name}","resourceVersion":"{rv}","labels":{{"app":"{name}"}}}},"spec":{{"containers":[{{"name":"main","env":[{}]}}]}}}}"#,
        env.join(",")
    );
    Object::parse(text.as_bytes()).unwrap()
}

#[test]
fn a_store_of_packed_objects_counts_and_lists_them_as_their_json() {
    let mut store = Store::new();
    let packed = |name: &str, rv: &str| bulky(name, rv).pack_if(true);
    let listed = [packed("a", "1"), packed("b", "1")];
    assert!(
        listed
            .iter()
            .all(|o| o.stored_text_bytes() < o.text_len() / 2)
    );
    relist(&mut store, listed.to_vec());
    store.apply(ChangeKind::Added, bulky("c", "1"));
    let footprint = store.footprint();
    let json: usize = ["a", "b", "c"]
        .map(|n| bulky(n, "1").text_len())
        .iter()
        .sum();
    assert_eq!((footprint.json_bytes, store.cached_bytes()), (json, json));
    assert_eq!(
        footprint.text_bytes,
        listed[0].stored_text_bytes() + listed[1].stored_text_bytes() + bulky("c", "1").text_len(),
        "packed texts count as their blocks, the other as its JSON"
    );
    let list = store.list_json(Query::labels(
        None,
        &Selector::parse("app in (b,c)").unwrap(),
    ));
    let expected = [
        b"[".as_slice(),
        &bulky("b", "1").text(),
        b",",
        &bulky("c", "1").text(),
        b"]",
    ]
    .concat();
    assert_eq!(list, expected, "lists unpack");
    // A relist that changes nothing keeps the held objects.
    assert!(
        relist(
            &mut store,
            vec![packed("a", "1"), packed("b", "1"), bulky("c", "1")]
        )
        .is_empty()
    );
    assert!(
        store
            .get(&ObjectKey::new("ns", "a"))
            .unwrap()
            .ptr_eq(&listed[0])
    );
    assert_eq!(store.footprint().text_bytes, footprint.text_bytes);
}

#[test]
fn a_fingerprint_follows_the_selected_texts_without_unpacking_them() {
    let all = Selector::default();
    let a = Selector::parse("app=a").unwrap();
    let fill = |objects: Vec<Object>| {
        let mut store = Store::new();
        for object in objects {
            store.apply(ChangeKind::Added, object);
        }
        store
    };
    let packed = |object: Object| object.pack_if(true);
    let mut store = fill(vec![packed(bulky("a", "1")), object("ns", "b", "ub", "1")]);
    // Equal answers, whichever order the objects came in.
    let other = fill(vec![object("ns", "b", "ub", "1"), packed(bulky("a", "1"))]);
    assert_eq!(
        store.fingerprint(Query::labels(None, &all)),
        other.fingerprint(Query::labels(None, &all))
    );
    let (before_all, before_a) = (
        store.fingerprint(Query::labels(None, &all)),
        store.fingerprint(Query::labels(None, &a)),
    );
    assert_ne!(before_all, before_a, "the selector chooses what is hashed");
    assert_eq!(
        Store::new().fingerprint(Query::labels(None, &a)),
        fill(vec![]).fingerprint(Query::labels(Some("ns"), &all)),
        "nothing selected"
    );
    // An object the selector leaves out changes: its answer is the same.
    store.apply(ChangeKind::Modified, object("ns", "b", "ub", "2"));
    assert_eq!(store.fingerprint(Query::labels(None, &a)), before_a);
    assert_ne!(store.fingerprint(Query::labels(None, &all)), before_all);
    assert_eq!(
        store.fingerprint(Query::labels(Some("other"), &all)),
        Store::new().fingerprint(Query::labels(None, &all))
    );
    // A selected one changes (packed both times), then goes.
    store.apply(ChangeKind::Modified, packed(bulky("a", "2")));
    let changed = store.fingerprint(Query::labels(None, &a));
    assert_ne!(changed, before_a);
    store.apply(ChangeKind::Deleted, packed(bulky("a", "2")));
    assert_ne!(store.fingerprint(Query::labels(None, &a)), changed);
    assert_eq!(
        store.fingerprint(Query::labels(None, &a)),
        Store::new().fingerprint(Query::labels(None, &a))
    );
}

#[test]
fn a_field_equality_reads_its_index_which_follows_every_change() {
    use crate::informer::fields::FieldSelector;
    let event = |ns: &str, name: &str, involved: &str, rv: &str| {
        Object::parse(
            format!(
                r#"{{"metadata":{{"name":"{name}","namespace":"{ns}","uid":"u-{name}","resourceVersion":"{rv}"}},"involvedObject":{{"name":"{involved}"}}}}"#
            )
            .as_bytes(),
        )
        .unwrap()
    };
    let mut store = Store::new();
    store.apply(ChangeKind::Added, event("a", "e1", "web", "1"));
    store.apply(ChangeKind::Added, event("a", "e2", "db", "2"));
    store.apply(ChangeKind::Added, event("b", "e3", "web", "3"));
    let all = Selector::parse("").unwrap();
    let names = |text: Vec<u8>| -> Vec<String> {
        let items: Vec<serde_json::Value> = serde_json::from_slice(&text).unwrap();
        let name = |v: &serde_json::Value| {
            format!(
                "{}/{}",
                v["metadata"]["namespace"].as_str().unwrap(),
                v["metadata"]["name"].as_str().unwrap()
            )
        };
        items.iter().map(name).collect()
    };
    let by = |store: &Store, selector: &str, ns: Option<&str>| {
        let fields = FieldSelector::parse(selector).unwrap();
        names(store.list_json(Query {
            namespace: ns,
            labels: &all,
            fields: &fields,
        }))
    };
    // The first read builds the index (counted in the footprint); the namespace and the other
    // requirements still apply.
    let before = store.footprint().index_bytes;
    assert_eq!(
        by(&store, "involvedObject.name=web", None),
        ["a/e1", "b/e3"]
    );
    let indexed = store.footprint().index_bytes - before;
    assert!((3 * 120..3 * 200).contains(&indexed), "{indexed}");
    assert_eq!(by(&store, "involvedObject.name=web", Some("b")), ["b/e3"]);
    assert_eq!(
        by(&store, "involvedObject.name=web,metadata.name!=e1", None),
        ["b/e3"]
    );
    // Changes after it: an object moved to another value, one added, one deleted.
    store.apply(ChangeKind::Modified, event("a", "e2", "web", "4"));
    store.apply(ChangeKind::Added, event("a", "e4", "web", "5"));
    store.apply(ChangeKind::Deleted, event("a", "e1", "web", "6"));
    assert_eq!(
        by(&store, "involvedObject.name=web", None),
        ["a/e2", "a/e4", "b/e3"]
    );
    assert!(by(&store, "involvedObject.name=db", None).is_empty());
    // A relist drops the indexes; the next read builds them from the new objects.
    store.relist([event("c", "e5", "web", "7")].into_iter().collect(), |_| {});
    assert_eq!(by(&store, "involvedObject.name=web", None), ["c/e5"]);
    store.apply(ChangeKind::Deleted, event("c", "e5", "web", "8"));
    assert_eq!(
        store.footprint().index_bytes,
        0,
        "no objects: the set's nodes and the index's entries gone"
    );
    store.apply(ChangeKind::Added, event("c", "e5", "web", "9"));
    // Past MAX_INDEXES paths, a read looks at every object, with the same answer.
    for path in ["a", "b", "c", "d", "e"] {
        assert!(by(&store, &format!("{path}=x"), None).is_empty());
    }
    assert_eq!(by(&store, "metadata.uid=u-e5", None), ["c/e5"]);
}
