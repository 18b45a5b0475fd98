//! The lists: a streaming list (a watch that sends the initial events first) or `limit`/
//! `continue` pages, each item made an object for the cache, and the cache replaced by them.

use tokio::time::Instant;

use super::{RELEASE_AFTER_BYTES, Run};
use crate::engine::machine::{PageRefused, Resume, State, StreamingList};
use crate::engine::sink::Sink;
use crate::engine::step::Initial;
use crate::engine::wire::{ListPage, WireError};
use crate::engine::{Fault, InitialList, ListWatch};
use crate::informer::store::{Listed, Object};
use crate::projection::Projection;
use crate::request::list_url;

impl<A: ListWatch, S: Sink> Run<A, S> {
    /// Lists (streaming or paginated) and caches the result; then watches.
    pub(super) async fn list(&mut self, relist: bool) -> State {
        let streaming = match self.config.initial_list {
            InitialList::Streaming => true,
            InitialList::Paginated => false,
            InitialList::Auto => !self.memory.is_paginated(&self.config.cluster.spec.url),
        };
        if !streaming {
            return Box::pin(self.paged_list(relist)).await;
        }
        let list = StreamingList {
            relist,
            auto: self.config.initial_list == InitialList::Auto,
            metadata_only: self.accept(true).is_some(),
        };
        let mut query = self.query();
        query.send_initial_events = true;
        query.resource_version_match = Some("NotOlderThan".into());
        let lines = match Box::pin(self.watch_lines(query)).await {
            Ok(lines) => {
                self.succeeded();
                lines
            }
            Err(fault) => {
                let transition = self
                    .machine
                    .streaming_list_refused(&fault, list, Instant::now());
                return self.perform(transition);
            }
        };
        self.machine.streaming(Instant::now());
        let initial = Initial {
            objects: Listed::new(),
            relist,
        };
        // Boxed: see `watch`.
        let (end, synced) = Box::pin(self.stream(lines, Some(initial))).await;
        let rv = self.current_rv();
        let transition = self
            .machine
            .streaming_list_ended(end, synced, list, rv, Instant::now());
        self.perform(transition)
    }

    /// `limit`/`continue` pages; a continue token that expires restarts the list.
    pub(super) async fn paged_list(&mut self, relist: bool) -> State {
        let path = self.config.resource_path.clone();
        let query = self.query();
        let limit = self.config.page_size;
        let mut restarts = 0;
        'list: loop {
            let mut objects = Listed::new();
            let mut token: Option<String> = None;
            let rv = loop {
                let continue_token = token.clone();
                let page = self
                    .list_page(|base| {
                        list_url(base, &path, &query, limit, continue_token.as_deref())
                    })
                    .await;
                let body = match page {
                    Ok(body) => {
                        self.succeeded();
                        body
                    }
                    Err(fault) => {
                        let now = Instant::now();
                        let continuing = token.is_some();
                        match self
                            .machine
                            .page_refused(&fault, relist, continuing, restarts, now)
                        {
                            PageRefused::Restart(effect) => {
                                restarts += 1;
                                self.effect(effect);
                                continue 'list;
                            }
                            PageRefused::Then(transition) => return self.perform(transition),
                        }
                    }
                };
                let parsed = ListPage::parse(&body).and_then(|page| {
                    let items = self.list_objects(&page)?;
                    self.take_notice();
                    Ok((items, page.resource_version, page.continue_token))
                });
                let (items, page_rv, next) = match parsed {
                    Ok(parsed) => parsed,
                    Err(err) => {
                        let fault = Fault::Protocol(format!("unusable list page: {err}"));
                        return self.fail(&fault, Resume::List { relist });
                    }
                };
                self.stats.events(items.len());
                objects.extend(items);
                match next {
                    Some(next) => token = Some(next),
                    None => break page_rv.unwrap_or_default(),
                }
            };
            self.synced(objects, &rv, relist);
            return State::Watching { rv };
        }
    }

    /// Warns once that a metadata-only request got full objects (see `Projection`).
    pub(super) fn take_notice(&self) {
        if let Some(notice) = self
            .config
            .projection
            .as_ref()
            .and_then(|p| p.take_notice())
        {
            self.warn(&notice);
        }
    }

    /// A page's items for the cache, each packed as it is made when the cache packs:
    /// projected when `fields` is set (then exactly the kept paths, no `kind`/`apiVersion`
    /// added), else (`strip` too) with the list's `kind`/`apiVersion`.
    fn list_objects(&self, page: &ListPage<'_>) -> Result<Vec<Object>, WireError> {
        let projection = self.config.projection.as_ref();
        page.items
            .iter()
            .map(|item| {
                let raw = item.get().as_bytes();
                let projected = projection.and_then(|p| p.apply_raw(item));
                let text = projected.as_deref().unwrap_or(raw);
                // Whole or with `strip`, the item gets its list's kind and apiVersion.
                let object = if projection.is_none_or(Projection::keeps_the_rest) {
                    Object::from_list_item(text, &page.item_type)
                } else {
                    Object::parse(text)
                };
                Ok(object?.pack_if(self.config.pack))
            })
            .collect()
    }

    pub(super) fn synced(&mut self, objects: Listed, rv: &str, relist: bool) {
        let changes = self.sink.replace(objects, rv, relist);
        self.changed();
        self.progress.rv = Some(rv.to_owned());
        // What a large list left free goes back to the system (see `heap`); small lists
        // leave little, and the call walks every heap of the process.
        let received = self.stats.bytes_received();
        if received - self.released_at_bytes >= RELEASE_AFTER_BYTES {
            self.released_at_bytes = received;
            crate::heap::release_free_memory();
        }
        if relist {
            self.info(&format!(
                "relisted at resourceVersion {rv}: {changes} changes"
            ));
        }
        if self.machine.synced() {
            self.reporter.synced();
        }
    }
}
