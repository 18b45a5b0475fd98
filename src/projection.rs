//! The `fields` opt-in: events whose object is cut down, on a Rust thread, to the fields the
//! consumer reads, so the JavaScript thread parses (and the heap holds) only those.

use serde_json::{Map, Value};

/// A set of dotted field paths (`metadata.name`, `status.phase`) to keep in each object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Projection {
    /// Disjoint paths: none is a prefix of another.
    paths: Vec<Vec<String>>,
}

impl Projection {
    /// A projection keeping `fields` and, always, `metadata.resourceVersion` (the contract's
    /// `resourceVersion` is read from it).
    pub fn new<S: AsRef<str>>(fields: &[S]) -> Self {
        let mut paths: Vec<Vec<String>> = fields
            .iter()
            .map(|field| {
                field
                    .as_ref()
                    .split('.')
                    .filter(|segment| !segment.is_empty())
                    .map(String::from)
                    .collect::<Vec<_>>()
            })
            .filter(|path| !path.is_empty())
            .chain([vec!["metadata".to_owned(), "resourceVersion".to_owned()]])
            .collect();
        // Shortest first, so a path whose parent is already kept is dropped: the parent holds it.
        paths.sort_by_key(Vec::len);
        let mut disjoint: Vec<Vec<String>> = Vec::new();
        for path in paths {
            if !disjoint.iter().any(|kept| path.starts_with(kept)) {
                disjoint.push(path);
            }
        }
        Self { paths: disjoint }
    }

    /// The event line with its object projected; `None` if the line is not a JSON object
    /// (the classifier has ruled that out before this is called).
    pub fn apply(&self, line: &[u8]) -> Option<Vec<u8>> {
        let Value::Object(mut event) = serde_json::from_slice::<Value>(line).ok()? else {
            return None;
        };
        if let Some(mut object) = event.remove("object") {
            let mut kept = Map::new();
            for path in &self.paths {
                if let Some(value) = take_path(&mut object, path) {
                    insert_path(&mut kept, path, value);
                }
            }
            event.insert("object".to_owned(), Value::Object(kept));
        }
        serde_json::to_vec(&Value::Object(event)).ok()
    }
}

fn take_path(value: &mut Value, path: &[String]) -> Option<Value> {
    let (last, parents) = path.split_last()?;
    let mut current = value;
    for segment in parents {
        current = current.as_object_mut()?.get_mut(segment)?;
    }
    current.as_object_mut()?.remove(last)
}

fn insert_path(into: &mut Map<String, Value>, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut current = into;
    for segment in parents {
        let entry = current
            .entry(segment.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(map) = entry else {
            return;
        };
        current = map;
    }
    current.insert(last.clone(), value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn project(fields: &[&str], event: Value) -> Value {
        let line = serde_json::to_vec(&event).unwrap();
        serde_json::from_slice(&Projection::new(fields).apply(&line).unwrap()).unwrap()
    }

    #[test]
    fn keeps_only_the_listed_fields_and_the_resource_version() {
        let event = json!({"type": "MODIFIED", "object": {
            "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "7", "labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1"}}});
        assert_eq!(
            project(&["metadata.name", "status.phase"], event),
            json!({"type": "MODIFIED", "object": {
                "metadata": {"name": "p", "resourceVersion": "7"},
                "status": {"phase": "Running"}}})
        );
    }

    #[test]
    fn parents_win_over_their_children_and_missing_fields_are_absent() {
        let event = json!({"type": "ADDED", "object": {"metadata": {"name": "p", "uid": "u"}}});
        assert_eq!(
            project(
                &["metadata.name", "metadata", "status.phase", "..", ""],
                event
            ),
            json!({"type": "ADDED", "object": {"metadata": {"name": "p", "uid": "u"}}})
        );
    }

    #[test]
    fn paths_through_non_objects_are_absent() {
        let event = json!({"type": "ADDED", "object": {"spec": [1, 2], "metadata": "odd"}});
        assert_eq!(
            project(&["spec.x", "metadata.name"], event),
            json!({"type": "ADDED", "object": {}})
        );
    }
}
