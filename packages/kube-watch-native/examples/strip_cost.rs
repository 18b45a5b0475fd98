//! What `strip` costs per object, on the fleet benchmark's ConfigMap shape (managedFields and
//! a last-applied annotation, ~1.7 KB), against the same removal through a `serde_json::Value`
//! tree: `cargo run --release --example strip_cost`. Medians of 7 rounds, in one process.

mod common;

use std::time::Instant;

use common::{fleet_strip, median};

const OBJECTS: usize = 20_000;

fn object(i: usize) -> String {
    let data = format!("cm-{i}-").repeat(60);
    let applied = format!(
        r#"{{"apiVersion":"v1","data":{{"config.yaml":"{data}"}},"kind":"ConfigMap","metadata":{{"name":"cm-{i}","namespace":"ns"}}}}"#
    );
    let applied = serde_json::to_string(&applied).unwrap();
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}","namespace":"ns","uid":"0f6c{i:08}","resourceVersion":"{i}","creationTimestamp":"2026-11-30T12:00:00Z","labels":{{"app":"fleet"}},"annotations":{{"kubectl.kubernetes.io/last-applied-configuration":{applied}}},"managedFields":[{{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"v1","time":"2026-11-30T12:00:00Z","fieldsType":"FieldsV1","fieldsV1":{{"f:data":{{".":{{}},"f:config.yaml":{{}}}},"f:metadata":{{"f:annotations":{{".":{{}},"f:kubectl.kubernetes.io/last-applied-configuration":{{}}}},"f:labels":{{".":{{}},"f:app":{{}}}}}}}}}}]}},"data":{{"config.yaml":"{data}"}}}}"#
    )
}

fn by_value(text: &str) -> Vec<u8> {
    let mut value: serde_json::Value = serde_json::from_str(text).unwrap();
    let metadata = value["metadata"].as_object_mut().unwrap();
    metadata.remove("managedFields");
    if let Some(annotations) = metadata
        .get_mut("annotations")
        .and_then(|a| a.as_object_mut())
    {
        annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
    }
    serde_json::to_vec(&value).unwrap()
}

fn main() {
    let objects: Vec<String> = (0..OBJECTS).map(object).collect();
    let bytes: usize = objects.iter().map(String::len).sum();
    let strip = fleet_strip();
    let mut kept = 0;
    let (mut raw, mut tree) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        let start = Instant::now();
        for o in &objects {
            kept += strip.apply_object(o.as_bytes()).unwrap().len();
        }
        raw.push(start.elapsed().as_secs_f64() * 1e9 / OBJECTS as f64);
        let start = Instant::now();
        for o in &objects {
            kept += by_value(o).len();
        }
        tree.push(start.elapsed().as_secs_f64() * 1e9 / OBJECTS as f64);
    }
    let (raw, tree) = (median(raw), median(tree));
    println!(
        "{OBJECTS} objects of {} bytes on average, {} bytes after strip",
        bytes / OBJECTS,
        kept / 14 / OBJECTS
    );
    println!("strip on the raw text: {:.0} ns per object", raw);
    println!("through a serde_json::Value: {:.0} ns per object", tree);
    println!("raw ÷ value tree: {:.2}×", raw / tree);
}
