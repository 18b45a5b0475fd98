//! Property tests of the cache and its consumers against a model API server: for any sequence
//! of writes (delivered as watch events, or missed until a relist), relists, new consumers and
//! any interleaving of takes, every consumer's replayed view ends equal to the cache and to the
//! server, each consumer's stream is self-consistent, and per object its resourceVersions
//! never go backwards (and only a DELETED may repeat one).

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::cache::Cache;
use super::fanout::Cursor;
use super::store::{ChangeKind, Listed, Object};

/// One step of a run.
#[derive(Debug, Clone)]
enum Op {
    /// Create, update or delete object `key`; `delivered` false: the watch is broken from
    /// here until the next relist, so this write and every one before the relist is missed.
    Write {
        key: usize,
        delete: bool,
        delivered: bool,
    },
    /// A 410 and a relist.
    Relist,
    /// Consumer `which` (if it exists) takes one batch.
    Take { which: usize },
    /// A new consumer.
    Subscribe,
    /// A bookmark moves the resourceVersion on.
    Bookmark,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..6usize, any::<bool>(), prop::bool::weighted(0.9))
            .prop_map(|(key, delete, delivered)| Op::Write { key, delete, delivered }),
        1 => Just(Op::Relist),
        6 => (0..4usize).prop_map(|which| Op::Take { which }),
        1 => Just(Op::Subscribe),
        1 => Just(Op::Bookmark),
    ]
}

/// The model API server: objects by name, one global resourceVersion counter.
#[derive(Default)]
struct Server {
    rv: u64,
    next_uid: u64,
    objects: BTreeMap<String, (u64, u64)>,
}

fn text(name: &str, uid: u64, rv: u64) -> String {
    format!(
        r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"{name}","namespace":"ns","uid":"u{uid}","resourceVersion":"{rv}"}}}}"#
    )
}

fn parse(text: &str) -> Object {
    Object::parse(text.as_bytes()).unwrap()
}

impl Server {
    /// Applies a write and returns the watch event it makes.
    fn write(&mut self, key: usize, delete: bool) -> (ChangeKind, String) {
        let name = format!("o{key}");
        self.rv += 1;
        match self.objects.get(&name).copied() {
            None => {
                self.next_uid += 1;
                self.objects.insert(name.clone(), (self.next_uid, self.rv));
                (ChangeKind::Added, text(&name, self.next_uid, self.rv))
            }
            Some((uid, _)) if delete => {
                self.objects.remove(&name);
                (ChangeKind::Deleted, text(&name, uid, self.rv))
            }
            Some((uid, _)) => {
                self.objects.insert(name.clone(), (uid, self.rv));
                (ChangeKind::Modified, text(&name, uid, self.rv))
            }
        }
    }

    fn list(&self) -> Listed {
        self.objects
            .iter()
            .map(|(name, (uid, rv))| parse(&text(name, *uid, *rv)))
            .collect()
    }

    fn view(&self) -> BTreeMap<String, String> {
        self.objects
            .iter()
            .map(|(name, (uid, rv))| (name.clone(), text(name, *uid, *rv)))
            .collect()
    }
}

/// What a consumer holds, replayed from its events, with the checks of its stream.
#[derive(Default)]
struct Replay {
    held: BTreeMap<String, String>,
    /// The highest resourceVersion seen per object name.
    seen_rv: BTreeMap<String, u64>,
    synced: bool,
    ended: bool,
}

impl Replay {
    fn apply(&mut self, cursor: &Cursor) -> Result<bool, TestCaseError> {
        let Some(batch) = cursor.take() else {
            return Ok(false);
        };
        if batch.done {
            self.ended = true;
        }
        if batch.events.is_empty() {
            return Ok(false);
        }
        let events: Vec<serde_json::Value> = serde_json::from_slice(&batch.events)
            .map_err(|e| TestCaseError::fail(format!("batch is not JSON: {e}")))?;
        for event in events {
            let kind = event["type"].as_str().unwrap_or_default().to_owned();
            if kind == "SYNCED" {
                self.synced = true;
                continue;
            }
            let object = &event["object"];
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let rv: u64 = object["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| TestCaseError::fail("an object without a resourceVersion"))?;
            let expected = rv.to_string();
            prop_assert_eq!(
                event["resourceVersion"].as_str(),
                Some(expected.as_str()),
                "the event's resourceVersion is the object's"
            );
            // A change is newer than anything seen of that object before (a re-created one
            // included), so a repeated ADDED or MODIFIED fails here; a DELETED from a relist
            // carries the last known object, so it may repeat that rv but never go below it.
            if let Some(last) = self.seen_rv.get(&name) {
                if kind == "DELETED" {
                    prop_assert!(rv >= *last, "{}: DELETED at {} after {}", name, rv, last);
                } else {
                    prop_assert!(rv > *last, "{}: {} at {} after {}", name, kind, rv, last);
                }
            }
            self.seen_rv.insert(name.clone(), rv);
            prop_assert!(
                self.synced || kind == "ADDED",
                "{} before the first SYNCED",
                kind
            );
            let holds = self.held.contains_key(&name);
            match kind.as_str() {
                "ADDED" => {
                    prop_assert!(!holds, "ADDED for {}, which the consumer holds", name);
                    self.held.insert(name, object.to_string());
                }
                "MODIFIED" => {
                    prop_assert!(holds, "MODIFIED for {}, which the consumer lacks", name);
                    self.held.insert(name, object.to_string());
                }
                "DELETED" => {
                    prop_assert!(holds, "DELETED for {}, which the consumer lacks", name);
                    self.held.remove(&name);
                }
                other => return Err(TestCaseError::fail(format!("unexpected event {other}"))),
            }
        }
        Ok(true)
    }
}

fn normalized(view: &BTreeMap<String, String>) -> BTreeMap<String, serde_json::Value> {
    view.iter()
        .map(|(k, v)| (k.clone(), serde_json::from_str(v).unwrap_or_default()))
        .collect()
}

fn run(initial: usize, early_consumers: usize, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut server = Server::default();
    for key in 0..initial {
        server.write(key, false);
    }
    let cache = Cache::new("/api/v1/namespaces/ns/pods".into());
    let mut consumers: Vec<(Cursor, Replay)> = (0..early_consumers)
        .map(|_| (cache.subscribe(), Replay::default()))
        .collect();
    cache.replace(server.list(), &server.rv.to_string(), false);
    let mut broken = false;
    for op in ops {
        match op {
            Op::Write {
                key,
                delete,
                delivered,
            } => {
                let (kind, text) = server.write(key, delete);
                broken |= !delivered;
                if !broken {
                    cache.apply(kind, parse(&text));
                }
            }
            Op::Relist => {
                cache.replace(server.list(), &server.rv.to_string(), true);
                broken = false;
            }
            Op::Take { which } => {
                if let Some((cursor, replay)) = consumers.get_mut(which) {
                    replay.apply(cursor)?;
                }
            }
            Op::Subscribe => consumers.push((cache.subscribe(), Replay::default())),
            Op::Bookmark => {
                if !broken {
                    cache.bookmark(&server.rv.to_string());
                }
            }
        }
    }
    if broken {
        cache.replace(server.list(), &server.rv.to_string(), true);
    }
    let cached: BTreeMap<String, String> = {
        let listed: Vec<serde_json::Value> = serde_json::from_slice(&cache.list(
            crate::informer::store::Query::labels(None, &Default::default()),
        ))
        .unwrap();
        listed
            .into_iter()
            .map(|o| {
                (
                    o["metadata"]["name"].as_str().unwrap().to_owned(),
                    o.to_string(),
                )
            })
            .collect()
    };
    prop_assert_eq!(
        normalized(&cached),
        normalized(&server.view()),
        "the cache equals the server"
    );
    for (i, (cursor, replay)) in consumers.iter_mut().enumerate() {
        while replay.apply(cursor)? {}
        prop_assert!(replay.synced, "consumer {} saw SYNCED", i);
        prop_assert_eq!(
            normalized(&replay.held),
            normalized(&cached),
            "consumer {}'s view equals the cache",
            i
        );
    }
    cache.end();
    for (cursor, replay) in consumers.iter_mut() {
        replay.apply(cursor)?;
        prop_assert!(replay.ended, "after end, a consumer's stream ends");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn every_consumer_replays_to_the_cache_and_the_server(
        initial in 0..6usize,
        early in 0..3usize,
        ops in prop::collection::vec(op(), 0..120),
    ) {
        run(initial, early, ops)?;
    }
}

#[test]
fn a_long_run_with_a_consumer_that_never_looks_until_the_end() {
    let mut ops = Vec::new();
    for i in 0..5000usize {
        ops.push(Op::Write {
            key: (i * 7) % 6,
            delete: i % 5 == 0,
            delivered: i % 997 != 0,
        });
        if i % 1000 == 999 {
            ops.push(Op::Relist);
        }
        if i % 3 == 0 {
            ops.push(Op::Take { which: 1 });
        }
    }
    run(6, 2, ops).unwrap();
}
