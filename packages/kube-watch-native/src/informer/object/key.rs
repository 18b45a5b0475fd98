//! What names an object and what a list's items lack: the key (namespace, then name) the
//! cache sorts by, and the `kind`/`apiVersion` a list page gives its items.

use std::borrow::Borrow;
use std::fmt;

/// Where an object lives, as bytes: its namespace (empty for cluster-scoped objects), a NUL,
/// its name. Neither may contain a NUL (the API server allows none; such objects are refused),
/// so these bytes name exactly one object and sort by namespace, then name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey(Box<[u8]>);

impl ObjectKey {
    /// The key of `name` in `namespace` (`""` for cluster-scoped objects).
    pub fn new(namespace: &str, name: &str) -> Self {
        Self(key_bytes(namespace, name).into())
    }

    fn split(&self) -> (&str, &str) {
        let at = self.0.iter().position(|b| *b == 0).unwrap_or(0);
        // Made from two `str`s and a NUL.
        let part = |bytes| std::str::from_utf8(bytes).unwrap_or_default();
        (part(&self.0[..at]), part(&self.0[at + 1..]))
    }

    /// The namespace, `""` for a cluster-scoped object.
    pub fn namespace(&self) -> &str {
        self.split().0
    }

    /// The name.
    pub fn name(&self) -> &str {
        self.split().1
    }

    /// Bytes of the key (namespace, NUL, name).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Never: a key holds at least its NUL.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Borrow<[u8]> for ObjectKey {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.split() {
            ("", name) => f.write_str(name),
            (namespace, name) => write!(f, "{namespace}/{name}"),
        }
    }
}

fn key_bytes(namespace: &str, name: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(namespace.len() + 1 + name.len());
    key.extend_from_slice(namespace.as_bytes());
    key.push(0);
    key.extend_from_slice(name.as_bytes());
    key
}

/// `apiVersion` and `kind` of the items of a list, which the items themselves lack.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemType {
    /// The list's `apiVersion`, e.g. `v1` or `apps/v1`.
    pub api_version: Option<String>,
    /// The list's `kind` without its `List` suffix, e.g. `Pod`.
    pub kind: Option<String>,
}

impl ItemType {
    /// The item type of a list whose `apiVersion` and `kind` (e.g. `PodList`) are given.
    pub fn of_list(api_version: Option<&str>, list_kind: Option<&str>) -> Self {
        Self {
            api_version: api_version.map(str::to_owned),
            kind: list_kind.map(|k| k.strip_suffix("List").unwrap_or(k).to_owned()),
        }
    }
}
