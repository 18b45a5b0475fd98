//! The `strip` option's paths, checked for JavaScript (`stripError`, at call time, so a bad
//! path is a TypeError naming it) and turned into the projection a watch or an informer
//! applies.

use napi_derive::napi;

use crate::field_path;
use crate::projection::Projection;

/// The paths an informer's cache and a watch's `resourceVersion` are built on: `strip` may
/// not remove them, nor their parent `metadata`.
const NEEDED: [&str; 4] = ["name", "namespace", "uid", "resourceVersion"];

/// The keys of each of `paths`, or the message naming the first bad one.
pub(crate) fn parse(paths: &[String]) -> Result<Vec<Vec<String>>, String> {
    paths
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let quoted = serde_json::to_string(path).unwrap_or_default();
            let keys = field_path::parse(path).map_err(|err| {
                format!(
                    "kube-watch-native: options.strip[{i}] {quoted} {err} \
                     (paths are dotted keys, with ['…'] for a key that holds dots or slashes: \
                     metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'])"
                )
            })?;
            let needed = match keys.as_slice() {
                [metadata] => metadata == "metadata",
                [metadata, field] => metadata == "metadata" && NEEDED.contains(&field.as_str()),
                _ => false,
            };
            if needed {
                return Err(format!(
                    "kube-watch-native: options.strip[{i}] {quoted} would remove what every \
                     object needs (metadata.name, namespace, uid and resourceVersion are kept)"
                ));
            }
            Ok(keys)
        })
        .collect()
}

/// The projection of `fields` (with `kept`, what every object keeps), `strip` and
/// `metadataOnly`, if any: `fields` excludes the other two (JavaScript refused that already).
pub(crate) fn projection_of(
    fields: Option<&[String]>,
    kept: &[&str],
    strip: Option<&[String]>,
    metadata_only: bool,
) -> napi::Result<Option<Projection>> {
    if let Some(fields) = fields {
        let all: Vec<&str> = fields
            .iter()
            .map(String::as_str)
            .chain(kept.iter().copied())
            .collect();
        return Ok(Some(Projection::new(&all)));
    }
    let keys = match strip {
        Some(paths) => {
            parse(paths).map_err(|message| napi::Error::new(napi::Status::InvalidArg, message))?
        }
        None => Vec::new(),
    };
    Ok(if metadata_only {
        Some(Projection::metadata_only(&keys))
    } else {
        strip.map(|_| Projection::strip(&keys))
    })
}

/// Why `paths` cannot be the `strip` option, or `null` when they can.
#[napi]
pub fn strip_error(paths: Vec<String>) -> Option<String> {
    parse(&paths).err()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(paths: &[&str]) -> Option<String> {
        strip_error(paths.iter().map(|p| (*p).to_owned()).collect())
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
}
