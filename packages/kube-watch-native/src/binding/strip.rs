//! The `strip` option for JavaScript: `stripError` checks its paths at call time (so a bad path
//! is a TypeError naming it), and a spec's options become its projection, a refused path an
//! `InvalidArg` error. The rules are the core's (`crate::projection::options`).

use napi_derive::napi;

use crate::projection::Projection;
use crate::projection::options::{self, strip_paths};

/// The projection of `fields` (with `kept`, what every object keeps), `strip` and
/// `metadataOnly`, if any (see [`options::projection_of`]).
pub(crate) fn projection_of(
    fields: Option<&[String]>,
    kept: &[&str],
    strip: Option<&[String]>,
    metadata_only: bool,
) -> napi::Result<Option<Projection>> {
    options::projection_of(fields, kept, strip, metadata_only)
        .map_err(|err| napi::Error::new(napi::Status::InvalidArg, err.to_string()))
}

/// Why `paths` cannot be the `strip` option, or `null` when they can.
#[napi]
pub fn strip_error(paths: Vec<String>) -> Option<String> {
    strip_paths(&paths).err().map(|err| err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_path_is_an_invalid_argument_naming_it() {
        let bad = ["status".to_owned(), "metadata.uid".to_owned()];
        let err = projection_of(None, &[], Some(&bad), false).unwrap_err();
        assert_eq!(err.status, napi::Status::InvalidArg);
        assert!(
            err.reason
                .starts_with(r#"kube-watch-native: options.strip[1] "metadata.uid" would remove"#),
            "{}",
            err.reason
        );
        assert_eq!(strip_error(bad[..1].to_vec()), None);
        assert_eq!(strip_error(bad.to_vec()), Some(err.reason.clone()));
    }
}
