//! The `fields`, `strip` and `metadataOnly` options turned into the [`Projection`] a watch or
//! an informer applies, and the `strip` paths checked (for JavaScript's `stripError`, at call
//! time, so a bad path is a TypeError naming it).

use thiserror::Error;

use super::Projection;
use crate::field_path::{self, PathError};

/// The paths an informer's cache and a watch's `resourceVersion` are built on: `strip` may
/// not remove them, nor their parent `metadata`.
const NEEDED: [&str; 4] = ["name", "namespace", "uid", "resourceVersion"];

/// Why a `strip` path was refused; the message names it by its index and its JSON text.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StripError {
    /// The path does not parse.
    #[error(
        "kube-watch-native: options.strip[{index}] {quoted} {source} \
         (paths are dotted keys, with ['…'] for a key that holds dots or slashes: \
         metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'])"
    )]
    Path {
        /// Its index in `strip`.
        index: usize,
        /// The path as JSON text.
        quoted: String,
        /// What is wrong with it.
        #[source]
        source: PathError,
    },
    /// The path would remove `metadata` or one of the fields every object needs.
    #[error(
        "kube-watch-native: options.strip[{index}] {quoted} would remove what every \
         object needs (metadata.name, namespace, uid and resourceVersion are kept)"
    )]
    Needed {
        /// Its index in `strip`.
        index: usize,
        /// The path as JSON text.
        quoted: String,
    },
}

/// The keys of each of `paths`, or why the first bad one was refused.
pub fn strip_paths(paths: &[String]) -> Result<Vec<Vec<String>>, StripError> {
    paths
        .iter()
        .enumerate()
        .map(|(index, path)| {
            let quoted = || serde_json::to_string(path).unwrap_or_default();
            let keys = field_path::parse(path).map_err(|source| StripError::Path {
                index,
                quoted: quoted(),
                source,
            })?;
            let needed = match keys.as_slice() {
                [metadata] => metadata == "metadata",
                [metadata, field] => metadata == "metadata" && NEEDED.contains(&field.as_str()),
                _ => false,
            };
            if needed {
                return Err(StripError::Needed {
                    index,
                    quoted: quoted(),
                });
            }
            Ok(keys)
        })
        .collect()
}

/// The projection of `fields` (with `kept`, what every object keeps), `strip` and
/// `metadataOnly`, if any: `fields` excludes the other two (JavaScript refused that already).
pub fn projection_of(
    fields: Option<&[String]>,
    kept: &[&str],
    strip: Option<&[String]>,
    metadata_only: bool,
) -> Result<Option<Projection>, StripError> {
    if let Some(fields) = fields {
        let all: Vec<&str> = fields
            .iter()
            .map(String::as_str)
            .chain(kept.iter().copied())
            .collect();
        return Ok(Some(Projection::new(&all)));
    }
    let keys = match strip {
        Some(paths) => strip_paths(paths)?,
        None => Vec::new(),
    };
    Ok(if metadata_only {
        Some(Projection::metadata_only(&keys))
    } else {
        strip.map(|_| Projection::strip(&keys))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(paths: &[&str]) -> Option<String> {
        let paths: Vec<String> = paths.iter().map(|p| (*p).to_owned()).collect();
        strip_paths(&paths).err().map(|err| err.to_string())
    }

    #[test]
    fn good_paths_pass_and_bad_ones_are_named_with_their_index() {
        assert_eq!(
            error(&[
                "metadata.managedFields",
                "metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']",
                "status",
                "metadata.labels",
            ]),
            None
        );
        let message = error(&["status", "metadata..x"]).unwrap();
        assert!(
            message.starts_with(
                r#"kube-watch-native: options.strip[1] "metadata..x" has an empty segment at column 10"#
            ),
            "{message}"
        );
    }

    #[test]
    fn what_every_object_needs_cannot_be_stripped() {
        for path in [
            "metadata",
            "metadata.name",
            "metadata.namespace",
            "metadata.uid",
            "['metadata'].resourceVersion",
        ] {
            let message = error(&[path]).unwrap_or_else(|| panic!("{path} passed"));
            assert!(
                message.contains("would remove what every object needs"),
                "{message}"
            );
        }
        assert_eq!(error(&["metadata.name.x", "spec.metadata"]), None);
    }

    /// What `projection` makes of a pod with managed fields.
    fn cut(projection: Option<Projection>) -> String {
        let object = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","uid":"u","resourceVersion":"7","managedFields":[]},"spec":{"x":1}}"#;
        match projection {
            Some(p) => String::from_utf8(p.apply_object(object.as_bytes()).unwrap()).unwrap(),
            None => object.to_owned(),
        }
    }

    #[test]
    fn the_options_choose_the_projection() {
        let strip = ["metadata.managedFields".to_owned()];
        let fields = ["spec.x".to_owned()];
        assert!(projection_of(None, &[], None, false).unwrap().is_none());
        assert_eq!(
            cut(projection_of(None, &[], Some(&strip), false).unwrap()),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","uid":"u","resourceVersion":"7"},"spec":{"x":1}}"#
        );
        assert_eq!(
            cut(projection_of(None, &[], Some(&strip), true).unwrap()),
            r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"p","uid":"u","resourceVersion":"7"}}"#
        );
        // `fields` with what every object keeps (`kept`), whatever else was asked.
        assert_eq!(
            cut(projection_of(Some(&fields), &["metadata.uid"], Some(&strip), true).unwrap()),
            r#"{"metadata":{"uid":"u","resourceVersion":"7"},"spec":{"x":1}}"#
        );
        // A bad strip path is refused with metadataOnly too.
        let bad = ["metadata.uid".to_owned()];
        assert!(matches!(
            projection_of(None, &[], Some(&bad), true),
            Err(StripError::Needed { index: 0, .. })
        ));
    }
}
