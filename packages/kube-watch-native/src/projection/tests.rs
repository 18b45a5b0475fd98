//! Unit tests of the projections: `fields` cut to its paths, `strip` rid of its paths, and
//! `metadataOnly` shaping objects, each checked on the text that comes out.

use super::*;

fn project_text(fields: &[&str], event: &str) -> String {
    String::from_utf8(Projection::new(fields).apply(event.as_bytes()).unwrap()).unwrap()
}

#[test]
fn keeps_only_the_listed_fields_and_the_resource_version_in_server_order() {
    let event = r#"{"type":"MODIFIED","object":{"metadata":{"name":"p","namespace":"ns",
            "resourceVersion":"7","labels":{"a":"b"}},"spec":{"containers":[{"name":"c"}]},
            "status":{"phase":"Running","podIP":"10.0.0.1"}}}"#;
    assert_eq!(
        project_text(&["status.phase", "metadata.name"], event),
        r#"{"type":"MODIFIED","object":{"metadata":{"name":"p","resourceVersion":"7"},"status":{"phase":"Running"}}}"#
    );
}

#[test]
fn a_bare_object_is_projected_the_same_way() {
    let object =
        r#"{"kind":"Pod","metadata":{"name":"p","uid":"u","resourceVersion":"7"},"spec":{}}"#;
    let projected = Projection::new(&["metadata.name"])
        .apply_object(object.as_bytes())
        .unwrap();
    assert_eq!(
        String::from_utf8(projected).unwrap(),
        r#"{"metadata":{"name":"p","resourceVersion":"7"}}"#
    );
    assert!(Projection::new(&["a"]).apply_object(b"[1]").is_none());
}

#[test]
fn whole_values_keep_their_key_order_and_text() {
    let event = r#"{"type":"ADDED","object":{"status":{"phase":"Running","z":1,"a":[2, 3]}}}"#;
    assert_eq!(
        project_text(&["status"], event),
        r#"{"type":"ADDED","object":{"status":{"phase":"Running","z":1,"a":[2, 3]}}}"#
    );
}

#[test]
fn parents_win_over_their_children_and_missing_fields_are_absent() {
    let event = r#"{"type":"ADDED","object":{"metadata":{"name":"p","uid":"u"}}}"#;
    assert_eq!(
        project_text(
            &["metadata.name", "metadata", "status.phase", "..", ""],
            event
        ),
        r#"{"type":"ADDED","object":{"metadata":{"name":"p","uid":"u"}}}"#
    );
}

#[test]
fn paths_through_non_objects_are_absent() {
    let event = r#"{"type":"ADDED","object":{"spec":[1,2],"metadata":"odd"}}"#;
    assert_eq!(
        project_text(&["spec.x", "metadata.name"], event),
        r#"{"type":"ADDED","object":{}}"#
    );
}

#[test]
fn an_object_that_is_not_an_object_passes_through() {
    for object in ["null", "[1,2]", "\"s\""] {
        let event = format!(r#"{{"type":"ADDED","object":{object}}}"#);
        assert_eq!(project_text(&["metadata.name"], &event), event);
    }
}

fn strip_text(paths: &[&str], object: &str) -> String {
    let paths: Vec<Vec<String>> = paths
        .iter()
        .map(|p| crate::field_path::parse(p).unwrap())
        .collect();
    let stripped = Projection::strip(&paths)
        .apply_object(object.as_bytes())
        .unwrap();
    String::from_utf8(stripped).unwrap()
}

const APPLIED: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c",
        "namespace":"ns","resourceVersion":"7","annotations":{"a.b/c":"keep",
        "kubectl.kubernetes.io/last-applied-configuration":"{\"x\":1}\n"},
        "managedFields":[{"manager":"kubectl","fieldsV1":{"f:data":{}}}]},"data":{"k":"v"}}"#;

#[test]
fn strip_removes_managed_fields_and_an_annotation_with_dots_and_slashes() {
    let stripped = strip_text(
        &[
            "metadata.managedFields",
            "metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']",
        ],
        &APPLIED.replace('\n', "").replace("        ", ""),
    );
    assert_eq!(
        stripped,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns","resourceVersion":"7","annotations":{"a.b/c":"keep"}},"data":{"k":"v"}}"#
    );
}

#[test]
fn strip_of_missing_paths_keeps_the_object_as_it_was() {
    let object = r#"{"metadata":{"name":"c","labels":{"a":"b"}},"spec":[{"x":{"y":1}}],"n":null}"#;
    assert_eq!(
        strip_text(
            &[
                "metadata.managedFields",
                "metadata.annotations['x']",
                "spec.x",
                "n.y",
                "status.phase"
            ],
            object
        ),
        object
    );
}

#[test]
fn strip_goes_deep_keeps_emptied_parents_and_lets_parents_win() {
    let object = r#"{"a":{"b":{"c":1,"d":2},"e":3},"f":{"g":4}}"#;
    assert_eq!(
        strip_text(&["a.b.c", "a.b.d", "f", "f.g"], object),
        r#"{"a":{"b":{},"e":3}}"#
    );
    assert_eq!(strip_text(&["a"], object), r#"{"f":{"g":4}}"#);
}

#[test]
fn strip_matches_escaped_keys_and_passes_through_non_objects() {
    let object = r#"{"metadata":{"annotations":{"it's":"x","y":"z"}}}"#;
    assert_eq!(
        strip_text(&[r"metadata.annotations['it\'s']"], object),
        r#"{"metadata":{"annotations":{"y":"z"}}}"#
    );
    let paths = vec![vec!["a".to_owned()]];
    let strip = Projection::strip(&paths);
    assert!(strip.apply_object(b"[1]").is_none());
    let event = r#"{"type":"ADDED","object":{"a":1,"b":2}}"#;
    assert_eq!(
        String::from_utf8(strip.apply(event.as_bytes()).unwrap()).unwrap(),
        r#"{"type":"ADDED","object":{"b":2}}"#
    );
    assert!(strip.keeps_the_rest() && !Projection::new(&["a"]).keeps_the_rest());
}

#[test]
fn strip_reads_white_space_literals_and_strings_with_braces_and_escapes() {
    let object = " { \"a\" : { \"x\" : \"}\\\"{[\" , \"y\":[1, {\"z\":\"]\"}], \"n\" : -1.5e3 } ,
            \"b\":true,\"c\" :null , \"d\": { } } ";
    assert_eq!(
        strip_text(&["a.y", "c", "d.e"], object),
        r#"{"a":{"x" : "}\"{[","n" : -1.5e3},"b":true,"d":{}}"#
    );
    assert_eq!(strip_text(&["a.x"], r#"{"a":{"x":1}}"#), r#"{"a":{}}"#);
}

#[test]
fn metadata_only_makes_partial_objects_and_notices_full_ones_once() {
    let paths = vec![vec!["metadata".to_owned(), "managedFields".to_owned()]];
    let p = Projection::metadata_only(&paths);
    assert_eq!(
        p.accept(false).as_deref(),
        Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
    );
    assert_eq!(
        p.accept(true).as_deref(),
        Some("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
    );
    let served = r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","managedFields":[]}}"#;
    let expected =
        r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a"}}"#;
    let apply = |o: &str| String::from_utf8(p.apply_object(o.as_bytes()).unwrap()).unwrap();
    assert_eq!(apply(served), expected);
    assert_eq!(p.take_notice(), None, "a partial object is what was asked");
    let full = r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","managedFields":[]},"data":{"k":"v"}}"#;
    assert_eq!(apply(full), expected);
    assert!(p.take_notice().unwrap().contains("sent full objects"));
    assert_eq!(apply(full), expected);
    assert_eq!(p.take_notice(), None, "told once");
    assert!(!Projection::new(&["a"]).keeps_the_rest() && p.keeps_the_rest());
    assert_eq!(Projection::new(&["a"]).accept(true), None);
}

#[test]
fn metadata_only_after_a_refusal_asks_for_plain_json_and_says_so_once() {
    let p = Projection::metadata_only::<String>(&[]);
    assert!(p.refused().unwrap().contains("406 Not Acceptable"));
    assert_eq!(p.refused(), None);
    assert_eq!(p.accept(false), None);
    assert_eq!(p.accept(true), None);
    let event = r#"{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"p"},"spec":{}}}"#;
    assert_eq!(
        String::from_utf8(p.apply(event.as_bytes()).unwrap()).unwrap(),
        r#"{"type":"ADDED","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"p"}}}"#
    );
    assert_eq!(p.take_notice(), None, "the refusal said it already");
    assert_eq!(Projection::strip::<String>(&[]).refused(), None);
}

#[test]
fn escaped_keys_are_matched_unescaped_and_written_escaped() {
    let event = r#"{"type":"ADDED","object":{"meta\u0064ata":{"name":"p\"q"}}}"#;
    assert_eq!(
        project_text(&["metadata.name"], event),
        r#"{"type":"ADDED","object":{"metadata":{"name":"p\"q"}}}"#
    );
}
