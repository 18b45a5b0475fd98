//! The cache as the engine's [`Keeper`]: what a line (`lines.rs`) and a list page are to it,
//! and where the runner's changes, lists, failures and end go.

use std::sync::Arc;

use bytes::Bytes;
use thiserror::Error;

use super::lines::{self, Collecting, Read};
use crate::engine::wire::{ListPage, WireError};
use crate::engine::{Keeper, Page, Progress, Sink, Step};
use crate::error::Failure;
use crate::informer::cache::{Cache, Watching};
use crate::informer::store::{ChangeKind, ItemType, Listed, Object, StoreError};
use crate::projection::Projection;

/// Why a list page cannot be cached.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PageError {
    /// The page is not a list.
    #[error("{0}")]
    Wire(#[from] WireError),
    /// An object in it cannot be cached.
    #[error("{0}")]
    Object(#[from] StoreError),
}

impl Sink for Cache {
    fn error(&self, failure: &Failure, retrying: bool) {
        Cache::error(self, failure, retrying);
    }

    fn end(&self) {
        Cache::end(self);
    }
}

impl Keeper for Cache {
    type Watching = Watching;
    type Change = (ChangeKind, Object);
    type Listed = Listed;
    type Error = PageError;

    fn watching(self: &Arc<Self>, initial: bool) -> Watching {
        Cache::watching(self, initial)
    }

    fn line(
        &self,
        progress: &mut Progress,
        initial: &mut Collecting,
        line: Bytes,
        projection: Option<&Projection>,
        pack: bool,
    ) -> Step<Read> {
        lines::step(progress, initial, &line, projection, pack)
    }

    fn page(
        &self,
        listed: &mut Listed,
        body: &[u8],
        projection: Option<&Projection>,
        pack: bool,
    ) -> Result<Page, PageError> {
        let page = ListPage::parse(body)?;
        let objects = page_objects(&page, projection, pack)?;
        let items = objects.len();
        listed.extend(objects);
        Ok(Page {
            items,
            resource_version: page.resource_version,
            continue_token: page.continue_token,
        })
    }

    fn apply(&self, (kind, object): (ChangeKind, Object)) -> usize {
        Cache::apply(self, kind, object)
    }

    fn bookmark(&self, rv: &str) {
        Cache::bookmark(self, rv);
    }

    fn replace(&self, listed: Listed, rv: &str, relist: bool) -> usize {
        Cache::replace(self, listed, rv, relist)
    }

    fn recovered(&self) {
        Cache::recovered(self);
    }

    fn proven(&self) {
        Cache::proven(self);
    }

    fn take_change_notice(&self) -> bool {
        Cache::take_change_notice(self)
    }
}

/// A page's items for the cache, each packed as it is made when `pack`: projected when
/// `fields` is set (then exactly the kept paths, no `kind`/`apiVersion` added), else (`strip`
/// too) with the list's `kind`/`apiVersion`.
fn page_objects(
    page: &ListPage<'_>,
    projection: Option<&Projection>,
    pack: bool,
) -> Result<Vec<Object>, StoreError> {
    let item_type = ItemType::of_list(page.api_version.as_deref(), page.kind.as_deref());
    page.items
        .iter()
        .map(|item| {
            let raw = item.get().as_bytes();
            let projected = projection.and_then(|p| p.apply_raw(item));
            let text = projected.as_deref().unwrap_or(raw);
            // Whole or with `strip`, the item gets its list's kind and apiVersion.
            let object = if projection.is_none_or(Projection::keeps_the_rest) {
                Object::from_list_item(text, &item_type)
            } else {
                Object::parse(text)
            };
            Ok(object?.pack_if(pack))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::script::TWO_POD_PAGE;

    #[test]
    fn a_list_pages_items_get_the_lists_type_and_its_continuation() {
        let cache = Cache::new("/api/v1/pods".into());
        let mut listed = Listed::new();
        let page = cache.page(&mut listed, TWO_POD_PAGE, None, false).unwrap();
        assert_eq!(page.items, 2);
        assert_eq!(page.resource_version.as_deref(), Some("42"));
        assert_eq!(page.continue_token.as_deref(), Some("tok"));
        let objects = page_objects(&ListPage::parse(TWO_POD_PAGE).unwrap(), None, false).unwrap();
        assert_eq!(objects[1].name(), "b");
        assert!(
            objects[1]
                .text()
                .starts_with(br#"{"kind":"Pod","apiVersion":"v1","metadata""#)
        );
    }

    #[test]
    fn a_page_with_an_object_that_cannot_be_cached_is_refused() {
        let cache = Cache::new("/api/v1/pods".into());
        let mut listed = Listed::new();
        let bad_item = br#"{"items":[{"metadata":{}}]}"#;
        assert_eq!(
            cache.page(&mut listed, bad_item, None, false).unwrap_err(),
            PageError::Object(StoreError::MissingName)
        );
        assert!(matches!(
            cache.page(&mut listed, b"{\"items\":3}", None, false),
            Err(PageError::Wire(WireError::Malformed { .. }))
        ));
    }
}
