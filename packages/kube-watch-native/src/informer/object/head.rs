//! The few fields of an object's text the cache reads (name, namespace, uid,
//! resourceVersion, labels), borrowed from the text; serde checks the rest for syntax only.

use std::borrow::{Borrow, Cow};
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::StoreError;
use crate::informer::selector::Labels;

/// The fields of an object the informer reads; serde skips every other key unbuilt.
#[derive(Deserialize)]
pub(super) struct Head<'a> {
    #[serde(default)]
    pub(super) kind: Option<serde::de::IgnoredAny>,
    #[serde(rename = "apiVersion", default)]
    pub(super) api_version: Option<serde::de::IgnoredAny>,
    #[serde(default, borrow)]
    pub(super) metadata: Option<Meta<'a>>,
}

#[derive(Deserialize)]
pub(super) struct Meta<'a> {
    #[serde(default, borrow)]
    pub(super) name: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub(super) namespace: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub(super) uid: Option<Str<'a>>,
    #[serde(rename = "resourceVersion", default, borrow)]
    pub(super) resource_version: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub(super) labels: Option<&'a RawValue>,
}

/// A string of the text, borrowed unless it had escapes. (serde borrows a `Cow` only as a
/// field of its own, not inside an `Option` or a map.)
#[derive(Deserialize, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Str<'a>(#[serde(borrow)] pub(super) Cow<'a, str>);

/// `metadata.labels`, read from the text when a selector needs them.
#[derive(Deserialize)]
pub(super) struct LabelMap<'a>(#[serde(borrow)] pub(super) BTreeMap<Str<'a>, Str<'a>>);

impl Labels for LabelMap<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(|v| &*v.0)
    }
}

impl Borrow<str> for Str<'_> {
    fn borrow(&self) -> &str {
        // The derived order is the text's, as `Borrow` requires.
        &self.0
    }
}

pub(super) fn parse_head(text: &[u8]) -> Result<Head<'_>, StoreError> {
    // serde would also read a struct from an array; an object is never one.
    if text.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(StoreError::Invalid("expected a JSON object".into()));
    }
    serde_json::from_slice(text).map_err(|e| StoreError::Invalid(e.to_string()))
}
