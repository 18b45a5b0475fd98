//! A container's log (`streamLogs`): one `GET …/pods/{pod}/log`, its body cut into lines on
//! this thread and handed to JavaScript in batches through a watch's queue, and a follow that
//! the server ends resumed from the last line delivered.
//!
//! ```text
//! task: GET log ─► chunks ─► LogFramer (pieces ≤ 16 KiB) ─► Resume (drop what was delivered)
//!       ─► Delivery (strip the stamp we added, count limitBytes) ─► Outbox (JSON array text)
//!       body ends: follow? ─► GET log?sinceTime=<last line's> … : the end
//! ```
//! A follow always asks for timestamps (and strips them when they were not asked for): the
//! last line's timestamp is where a resumed follow starts, and [`lines::Cursor`] drops what the
//! resumed body repeats (the API server resumes at the start of that second).
//!
//! The items JavaScript parses, in one JSON array per batch: a line as a string; a piece of a
//! longer line that goes on in the next item as an array holding its string; an ERROR event as
//! the watch's, with the API server's `message`.

mod follow;
pub mod lines;
mod query;
mod reader;
mod shared;

pub use follow::{LogApi, LogBody, LogConfig, start};
pub use query::{LogOptions, LogRange, LogTarget};
pub use shared::{LogHub, RING_BYTES};
