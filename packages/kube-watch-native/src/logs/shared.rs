//! One follow of a container's log for any number of readers (`streamLogs` with `share`).
//!
//! ```text
//! upstream follow ─► RingSink ─► Ring (the last RING_BYTES of pieces, off the V8 heap)
//!                                  │ changed (a counter readers wait on)
//!             reader task ◄────────┘ own start (tail / since), own timestamps and limitBytes,
//!               └─► its Reader ─► its queue ─► JavaScript
//! ```
//! Readers of one key share the upstream: the key names the cluster, the credential, the pod
//! and the container, so only callers the API server answers the same share one. The first
//! reader starts the upstream (from its own start), the last one to go stops it. A later reader is served from the ring only when the ring
//! covers what it asks for (all lines since its time, or its last lines, or the whole log);
//! otherwise it gets a follow of its own. A reader that falls behind the ring skips ahead to
//! its start with a `SKIPPED` item saying how many lines it missed: it never holds the ring
//! back, grows it, or slows another reader.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use bytes::Bytes;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::follow::{LogApi, LogConfig, LogSink, follow};
use super::lines::{Piece, Stamp, parse_stamp};
use super::reader::Reader;
use crate::watch::{Outbox, Watch};

/// Bytes of log text a shared follow keeps for its readers.
pub const RING_BYTES: usize = 4 << 20;
/// Text a reader of a shared follow may have queued for JavaScript: past it the reader waits,
/// and the ring moves on without it (the follow keeps what readers share).
const READER_QUEUE_BYTES: usize = 256 << 10;
/// Entries a reader copies out of the ring at a time (the lock is held only for the copy).
const READ_AT_ONCE: usize = 256;

/// One entry of the ring.
#[derive(Clone)]
enum Entry {
    /// A piece of a line as the follow handed it on (what was delivered before a resume cut).
    Piece {
        stamp: Option<Stamp>,
        stamp_text: Option<Bytes>,
        text: Bytes,
        last: bool,
    },
    /// A warning of the follow's, for each reader's logger.
    Warning(String),
}

impl Entry {
    fn bytes(&self) -> usize {
        match self {
            Self::Piece {
                text, stamp_text, ..
            } => text.len() + stamp_text.as_ref().map_or(0, Bytes::len) + 48,
            Self::Warning(text) => text.len() + 48,
        }
    }

    fn is_line(&self) -> bool {
        matches!(self, Self::Piece { last: true, .. })
    }
}

/// The pieces the follow brought, the last [`RING_BYTES`] of them.
#[derive(Default)]
struct Ring {
    entries: VecDeque<Entry>,
    /// The number (from 0) of `entries[0]`.
    first: u64,
    bytes: usize,
    /// Whole lines in `entries`.
    lines: usize,
    /// `entries` start at the log's beginning: the follow asked for all of it and nothing has
    /// been dropped since.
    whole: bool,
    /// `entries` hold every line from this time on: the follow asked for the lines since it and
    /// nothing has been dropped since.
    since: Option<Stamp>,
    /// The follow has ended: `Some(error)`, its ERROR if it ended with one.
    end: Option<Option<String>>,
    /// Where the follow started (its first reader's start).
    origin: Option<Start>,
    /// Nothing has come yet: a reader asking for the follow's own start gets what the first does.
    waiting: bool,
    /// The follow is reading a body now: what the ring holds is the log up to now.
    streaming: bool,
}

impl Ring {
    fn next(&self) -> u64 {
        self.first + self.entries.len() as u64
    }

    fn push(&mut self, entry: Entry) {
        self.waiting = false;
        self.bytes += entry.bytes();
        self.lines += usize::from(entry.is_line());
        self.entries.push_back(entry);
        while self.bytes > RING_BYTES && self.entries.len() > 1 {
            let Some(old) = self.entries.pop_front() else {
                break;
            };
            self.bytes -= old.bytes();
            self.lines -= usize::from(old.is_line());
            self.first += 1;
            self.whole = false;
            self.since = None;
        }
    }

    /// Where a one-shot read of `start` begins, if the ring covers it and is current: a follow
    /// between requests (dropped, backing off) has not brought what was written meanwhile.
    fn read_once(&self, start: &Start) -> Option<u64> {
        self.start(start).filter(|_| self.streaming)
    }

    /// Where a reader asking for `start` begins, if the ring covers it.
    fn start(&self, start: &Start) -> Option<u64> {
        if self.waiting && self.origin.as_ref() == Some(start) {
            return Some(self.first);
        }
        match start {
            Start::Whole => self.whole.then_some(self.first),
            Start::Tail(lines) => {
                if *lines > self.lines && !self.whole {
                    return None;
                }
                // Back from the end over `lines` whole lines (and any piece of the line under way).
                let mut seen = 0;
                let mut at = self.entries.len();
                while at > 0 {
                    let entry = &self.entries[at - 1];
                    if entry.is_line() {
                        if seen == *lines {
                            break;
                        }
                        seen += 1;
                    }
                    at -= 1;
                }
                Some(self.first + at as u64)
            }
            Start::Since(since) => {
                let earliest = self.entries.iter().find_map(|e| match e {
                    Entry::Piece { stamp, .. } => *stamp,
                    Entry::Warning(_) => None,
                });
                let held = self.whole
                    || self.since.is_some_and(|from| from <= *since)
                    || earliest.is_some_and(|t| t <= *since);
                if !held {
                    return None;
                }
                let at = self
                    .entries
                    .iter()
                    .position(|e| matches!(e, Entry::Piece { stamp: Some(t), .. } if *t >= *since));
                Some(self.first + at.unwrap_or(self.entries.len()) as u64)
            }
        }
    }
}

/// Where a reader starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Start {
    /// The whole log.
    Whole,
    /// Its last this many lines.
    Tail(usize),
    /// Its lines from this time on.
    Since(Stamp),
}

impl Start {
    /// The start `config`'s options ask for (`sinceSeconds` from this machine's clock).
    pub(crate) fn of(config: &LogConfig) -> Self {
        let range = &config.options.range;
        if let Some(lines) = range.tail_lines {
            return Self::Tail(usize::try_from(lines).unwrap_or(0));
        }
        if let Some(stamp) = range
            .since_time
            .as_deref()
            .and_then(|t| parse_stamp(t.as_bytes()))
        {
            return Self::Since(stamp);
        }
        if let Some(seconds) = range.since_seconds {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as i128);
            return Self::Since(now - i128::from(seconds) * 1_000_000_000);
        }
        Self::Whole
    }
}

/// The ring and the counter its readers wait on.
struct State {
    ring: Mutex<Ring>,
    changed: watch::Sender<u64>,
}

impl State {
    fn lock(&self) -> MutexGuard<'_, Ring> {
        // Nothing panics while holding it; the ring stays consistent.
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn update(&self, change: impl FnOnce(&mut Ring)) {
        let next = {
            let mut ring = self.lock();
            change(&mut ring);
            ring.next()
        };
        self.changed.send_replace(next);
    }
}

/// A shared follow while any reader holds it: its last reader's drop stops the upstream.
pub(crate) struct SharedLog {
    state: Arc<State>,
    upstream: CancellationToken,
}

impl Drop for SharedLog {
    fn drop(&mut self) {
        self.upstream.cancel();
    }
}

/// The follow's sink: the ring.
struct RingSink(Arc<State>);

impl LogSink for RingSink {
    async fn piece(&mut self, piece: &Piece, skip: usize) -> bool {
        let entry = Entry::Piece {
            stamp: piece.stamp,
            stamp_text: piece.stamp_text.clone().filter(|_| skip == 0),
            text: piece.text.slice(skip..),
            last: piece.last,
        };
        self.0.update(|ring| ring.push(entry));
        false
    }

    async fn flush(&mut self) {}

    fn warn(&mut self, message: String) {
        self.0.update(|ring| ring.push(Entry::Warning(message)));
    }

    fn streaming(&mut self, open: bool) {
        self.0.update(|ring| ring.streaming = open);
    }

    fn fail(&mut self, error: String) {
        self.0.update(|ring| ring.end = Some(Some(error)));
    }
}

/// A watcher's shared follows, by key.
#[derive(Default)]
pub struct LogHub {
    logs: Mutex<HashMap<String, Weak<SharedLog>>>,
}

impl LogHub {
    /// Follows of this hub running now.
    pub fn running(&self) -> usize {
        let mut logs = self.logs.lock().unwrap_or_else(PoisonError::into_inner);
        logs.retain(|_, log| log.strong_count() > 0);
        logs.len()
    }

    /// A reader of the follow `key` with `config`'s options, fed from the shared follow when it
    /// covers them (one is started, through `api`, when none runs), else from a follow of its
    /// own; in either case a watch JavaScript reads.
    pub fn open<A: LogApi>(
        &self,
        key: String,
        config: LogConfig,
        api: A,
        runtime: &tokio::runtime::Handle,
    ) -> Watch {
        let start = Start::of(&config);
        let mut logs = self.logs.lock().unwrap_or_else(PoisonError::into_inner);
        logs.retain(|_, log| log.strong_count() > 0);
        if let Some(shared) = logs.get(&key).and_then(Weak::upgrade) {
            let (at, until) = {
                let ring = shared.state.lock();
                // A one-shot read takes what the follow has brought so far, and only while the
                // follow reads a body: between requests (a drop, a backoff) the ring is behind.
                let at = if config.following() {
                    ring.start(&start)
                } else {
                    ring.read_once(&start)
                };
                (at, ring.next())
            };
            drop(logs);
            let until = (!config.following()).then_some(until);
            return match at {
                Some(at) => read(shared, config, at, until, runtime),
                // Not covered: a follow (or a read) of its own.
                None => super::start(config, api, runtime),
            };
        }
        if !config.following() {
            // Only a follow is shared: a one-shot read is read from one that runs, or alone.
            drop(logs);
            return super::start(config, api, runtime);
        }
        let shared = Arc::new(SharedLog {
            state: Arc::new(State {
                ring: Mutex::new(Ring {
                    whole: start == Start::Whole,
                    since: match start {
                        Start::Since(since) => Some(since),
                        _ => None,
                    },
                    origin: Some(start.clone()),
                    waiting: true,
                    ..Ring::default()
                }),
                changed: watch::channel(0).0,
            }),
            upstream: CancellationToken::new(),
        });
        logs.insert(key, Arc::downgrade(&shared));
        drop(logs);
        // The first reader's start; each reader counts its own bytes.
        let mut upstream = config.clone();
        upstream.options.range.limit_bytes = None;
        upstream.options.timestamps = true;
        let (state, cancel) = (shared.state.clone(), shared.upstream.clone());
        runtime.spawn(async move {
            tokio::select! {
                biased;
                () = cancel.cancelled() => {}
                () = follow(upstream, api, RingSink(state.clone())) => {}
            }
            state.update(|ring| {
                ring.end.get_or_insert(None);
            });
        });
        let at = shared.state.lock().start(&start).unwrap_or(0);
        read(shared, config, at, None, runtime)
    }
}

/// A reader of `shared` from entry `at` on (up to `until`, for a one-shot read), with
/// `config`'s options, its `limitBytes` counted by it.
fn read(
    shared: Arc<SharedLog>,
    config: LogConfig,
    at: u64,
    until: Option<u64>,
    runtime: &tokio::runtime::Handle,
) -> Watch {
    let counters = config.counters.clone();
    let outbox = Outbox::with_budget(config.target.path(), READER_QUEUE_BYTES);
    let limit = config.options.range.limit_bytes;
    Watch::spawn(outbox, counters, runtime, move |outbox| {
        let limit = limit.map(|n| u64::try_from(n).unwrap_or(0));
        let reader =
            Reader::new(outbox, config.options.timestamps, limit, config.what()).raw(config.raw);
        read_from(shared, reader, at, until)
    })
}

/// Hands `reader` the ring's entries from `next` on, as they come, to the follow's end (or to
/// entry `until`, a one-shot read's).
async fn read_from(shared: Arc<SharedLog>, mut reader: Reader, mut next: u64, until: Option<u64>) {
    let mut changed = shared.state.changed.subscribe();
    loop {
        if until.is_some_and(|until| next >= until) {
            reader.flush().await;
            return;
        }
        let (entries, skipped, end) = {
            let ring = shared.state.lock();
            // Behind the ring: what fell off it is missed (entries: lines, and pieces of one).
            let skipped = ring.first.saturating_sub(next);
            next = next.max(ring.first);
            let from = (next - ring.first) as usize;
            let entries: Vec<Entry> = ring
                .entries
                .range(from..)
                .take(READ_AT_ONCE.min(until.map_or(usize::MAX, |u| (u - next) as usize)))
                .cloned()
                .collect();
            let drained = from + entries.len() >= ring.entries.len();
            (entries, skipped, ring.end.clone().filter(|_| drained))
        };
        if skipped > 0 {
            reader.skipped(skipped).await;
        }
        let empty = entries.is_empty();
        for entry in entries {
            next += 1;
            match entry {
                Entry::Piece {
                    stamp_text,
                    text,
                    last,
                    ..
                } => {
                    if reader.line(stamp_text.as_deref(), &text, last).await {
                        reader.flush().await;
                        return;
                    }
                }
                Entry::Warning(message) => reader.outbox.push_warning(message),
            }
        }
        reader.flush().await;
        if !empty {
            continue;
        }
        if let Some(end) = end {
            if let Some(error) = end {
                reader.outbox.push_generated(&error);
            }
            return;
        }
        // The follow's task holds the sender while it runs, and the ring says its end first.
        if changed.changed().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(second: i128, text: &str) -> Entry {
        Entry::Piece {
            stamp: Some(second * 1_000_000_000),
            stamp_text: Some(Bytes::from(format!("t{second}"))),
            text: Bytes::from(text.to_owned()),
            last: true,
        }
    }

    fn ring_of(whole: bool, seconds: &[i128]) -> Ring {
        let mut ring = Ring {
            whole,
            ..Ring::default()
        };
        for &s in seconds {
            ring.push(line(s, "x"));
        }
        ring
    }

    #[test]
    fn a_tail_is_covered_by_the_lines_held_or_a_whole_log() {
        let ring = ring_of(false, &[1, 2, 3]);
        assert_eq!(ring.start(&Start::Tail(2)), Some(1));
        assert_eq!(ring.start(&Start::Tail(0)), Some(3));
        assert_eq!(
            ring.start(&Start::Tail(4)),
            None,
            "only three lines are held"
        );
        assert_eq!(ring.start(&Start::Whole), None);
        let whole = ring_of(true, &[1, 2, 3]);
        assert_eq!(whole.start(&Start::Tail(10)), Some(0));
        assert_eq!(whole.start(&Start::Whole), Some(0));
    }

    #[test]
    fn a_time_is_covered_when_the_lines_held_reach_back_to_it() {
        let ring = ring_of(false, &[5, 6, 7]);
        let at = |s: i128| Start::Since(s * 1_000_000_000);
        assert_eq!(ring.start(&at(6)), Some(1));
        assert_eq!(ring.start(&at(5)), Some(0));
        assert_eq!(ring.start(&at(4)), None, "what came before 5 is not held");
        let since_two = Ring {
            since: Some(2_000_000_000),
            ..ring_of(false, &[5, 6])
        };
        assert_eq!(since_two.start(&at(3)), Some(0), "held from 2 on");
    }

    #[test]
    fn before_anything_comes_a_reader_of_the_follows_own_start_gets_what_the_first_gets() {
        let ring = Ring {
            origin: Some(Start::Tail(1)),
            waiting: true,
            ..Ring::default()
        };
        assert_eq!(ring.start(&Start::Tail(1)), Some(0));
        assert_eq!(ring.start(&Start::Tail(2)), None);
        let mut came = ring;
        came.push(line(1, "x"));
        came.push(line(2, "y"));
        assert_eq!(
            came.start(&Start::Tail(1)),
            Some(1),
            "then its own last line"
        );
    }

    #[test]
    fn a_one_shot_read_is_served_only_while_the_follow_reads_a_body() {
        let mut ring = ring_of(false, &[1, 2, 3]);
        assert_eq!(
            ring.read_once(&Start::Tail(2)),
            None,
            "between requests: behind"
        );
        ring.streaming = true;
        assert_eq!(ring.read_once(&Start::Tail(2)), Some(1));
        assert_eq!(ring.read_once(&Start::Tail(5)), None, "not covered");
    }

    #[test]
    fn the_ring_keeps_its_bytes_and_forgets_the_start() {
        let mut ring = ring_of(true, &[]);
        let big = "z".repeat(64 << 10);
        for s in 0..100 {
            ring.push(line(s, &big));
        }
        assert!(ring.bytes <= RING_BYTES, "{}", ring.bytes);
        assert!(ring.first > 0);
        assert!(!ring.whole);
        assert_eq!(ring.lines, ring.entries.len());
        assert_eq!(ring.next(), 100);
    }
}
