//! The label-selector grammar of the native cache (`informer::selector`), for JavaScript: the
//! Backstage module decides what it may cache from a selector's requirements, and reads them
//! with the parser the cache filters with, so the two never disagree on what a selector means.

use napi::{Error, Result, Status};
use napi_derive::napi;

use crate::informer::selector::Selector;

/// One requirement of a label selector.
#[napi(object)]
pub struct LabelRequirement {
    /// The label's key.
    pub key: String,
    /// `exists`, `!`, `in`, `notin`, `>` or `<` (`key=v` is `in` with one value, `key!=v`
    /// `notin` with one).
    pub operator: String,
    /// The values it is compared with; none for `exists` and `!`.
    pub values: Vec<String>,
}

/// Parses a label selector as the API server does; an invalid one throws an InvalidArg error
/// whose message says where and why.
#[napi]
pub fn parse_label_selector(text: String) -> Result<Vec<LabelRequirement>> {
    let selector =
        Selector::parse_shared(&text).map_err(|e| Error::new(Status::InvalidArg, e.to_string()))?;
    Ok(selector
        .parts()
        .into_iter()
        .map(|part| LabelRequirement {
            key: part.key.to_owned(),
            operator: part.operator.as_str().to_owned(),
            values: part.values,
        })
        .collect())
}
