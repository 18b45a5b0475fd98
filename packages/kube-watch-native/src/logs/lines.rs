//! A log body cut into lines, and where a resumed follow picks up.
//!
//! The API server writes a container's output as the kubelet read it: lines ending in `\n`,
//! each after its timestamp and a space when `timestamps=true` (Go's RFC 3339 with nanoseconds,
//! in UTC). A line may be any length (a container that prints 10 MiB without a newline is one
//! line) and any bytes. [`LogFramer`] holds at most [`MAX_PIECE_BYTES`] of one: a longer line is
//! cut into pieces of that size, as the kubelet cuts a long line into partial entries at 16 KiB,
//! each but the last marked as going on; a cut never splits a UTF-8 character.
//!
//! A follow the server ends is resumed with `sinceTime`, which the API server passes on to the
//! kubelet in whole seconds: the resumed body starts again at the beginning of the last line's
//! second. [`Cursor`] says what to drop of it: every line before the last one delivered, the
//! lines of its very timestamp already delivered, and of a line delivered in part, its part.

use bytes::{Bytes, BytesMut};

/// The longest piece of a line handed on; the rest of the line follows in further pieces.
pub const MAX_PIECE_BYTES: usize = 16 * 1024;

/// The longest timestamp prefix read (`2006-01-02T15:04:05.999999999+07:00 ` is 36 bytes).
const MAX_STAMP_BYTES: usize = 40;

/// A line's timestamp as nanoseconds since the Unix epoch, comparable across offsets.
pub type Stamp = i128;

/// One piece of a line: the whole line, or a part of a longer one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// The line's timestamp (its first piece and every later one), when the body has them.
    pub stamp: Option<Stamp>,
    /// The timestamp as the server wrote it, on a line's first piece only.
    pub stamp_text: Option<Bytes>,
    /// The piece's bytes, without the timestamp and without the newline.
    pub text: Bytes,
    /// Where in its line the piece starts (0 for a line's first piece).
    pub offset: usize,
    /// The line ends with this piece.
    pub last: bool,
}

/// Cuts a log body into [`Piece`]s of at most [`MAX_PIECE_BYTES`].
#[derive(Debug)]
pub struct LogFramer {
    buf: BytesMut,
    /// The body's lines start with a timestamp.
    stamped: bool,
    /// The line under way was cut already: its timestamp and how far it has come.
    open: Option<(Option<Stamp>, usize)>,
}

impl LogFramer {
    /// A framer for a body whose lines start with a timestamp when `stamped`.
    pub fn new(stamped: bool) -> Self {
        Self {
            buf: BytesMut::new(),
            stamped,
            open: None,
        }
    }

    /// Appends a chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next piece, or `None` until more bytes come.
    pub fn next_piece(&mut self) -> Option<Piece> {
        let head = match self.open {
            Some(_) => 0,
            None if self.stamped => match stamp_end(&self.buf) {
                Some(end) => end,
                // The timestamp is not all here yet.
                None if self.buf.len() < MAX_STAMP_BYTES && !self.buf.contains(&b'\n') => {
                    return None;
                }
                None => 0,
            },
            None => 0,
        };
        let limit = head + MAX_PIECE_BYTES;
        let window = &self.buf[..self.buf.len().min(limit + 1)];
        if let Some(newline) = memchr::memchr(b'\n', window).filter(|&at| at <= limit) {
            let mut line = self.buf.split_to(newline + 1);
            line.truncate(newline);
            if line.last() == Some(&b'\r') {
                line.truncate(newline - 1);
            }
            return Some(self.piece(line.freeze(), head, true));
        }
        if self.buf.len() <= limit {
            if self.buf.is_empty() {
                // Every line was taken: a quiet follow keeps no buffer.
                self.buf = BytesMut::new();
            }
            return None;
        }
        let cut = head + char_boundary(&self.buf[head..limit]);
        let part = self.buf.split_to(cut).freeze();
        Some(self.piece(part, head, false))
    }

    /// What is left when the body ends: a last line without its newline, if any, as a piece
    /// that goes on (the line was not finished: `limitBytes` cut it, or the container has not
    /// written its newline yet, which a resumed follow brings).
    pub fn finish(&mut self) -> Option<Piece> {
        if self.buf.is_empty() {
            self.open = None;
            return None;
        }
        let rest = self.buf.split().freeze();
        let head = match self.open {
            Some(_) => 0,
            None if self.stamped => stamp_end(&rest).unwrap_or(0),
            None => 0,
        };
        Some(self.piece(rest, head, false))
    }

    /// A piece of `bytes`, whose first `head` bytes are a new line's timestamp and its space.
    fn piece(&mut self, bytes: Bytes, head: usize, last: bool) -> Piece {
        let (stamp, stamp_text, offset) = match self.open.take() {
            Some((stamp, offset)) => (stamp, None, offset),
            None if head > 0 => {
                let text = bytes.slice(..head - 1);
                (parse_stamp(&text), Some(text), 0)
            }
            None => (None, None, 0),
        };
        let text = bytes.slice(head..);
        if !last {
            self.open = Some((stamp, offset + text.len()));
        }
        Piece {
            stamp,
            stamp_text,
            text,
            offset,
            last,
        }
    }
}

/// Where the timestamp and its space end in a line's start, if it starts with one.
fn stamp_end(buf: &[u8]) -> Option<usize> {
    let space = memchr::memchr(b' ', &buf[..buf.len().min(MAX_STAMP_BYTES)])?;
    parse_stamp(&buf[..space]).map(|_| space + 1)
}

/// How many of `bytes` (the first [`MAX_PIECE_BYTES`] of a longer line) a piece takes: all of
/// them, less a UTF-8 character that the cut would split.
fn char_boundary(bytes: &[u8]) -> usize {
    let len = bytes.len();
    // A character's lead byte within its last three bytes, whose sequence runs past the end.
    for back in 1..=3.min(len) {
        let byte = bytes[len - back];
        if byte & 0xC0 != 0x80 {
            let width = match byte {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF7 => 4,
                _ => 1,
            };
            return if width > back { len - back } else { len };
        }
    }
    len
}

/// Reads Go's RFC 3339 (`2006-01-02T15:04:05.999999999Z07:00`) as nanoseconds since the epoch.
pub fn parse_stamp(text: &[u8]) -> Option<Stamp> {
    let text = std::str::from_utf8(text).ok()?;
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = text.get(range)?;
        digits
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| digits.parse().ok())?
    };
    let bytes = text.as_bytes();
    if text.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || bytes[10] != b'T' {
        return None;
    }
    if bytes[13] != b':' || bytes[16] != b':' {
        return None;
    }
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    let mut at = 19;
    let mut nanos: i64 = 0;
    if bytes.get(at) == Some(&b'.') {
        let start = at + 1;
        let end = start
            + bytes[start..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
        if end == start || end - start > 9 {
            return None;
        }
        nanos = number(start..end)? * 10_i64.pow(9 - (end - start) as u32);
        at = end;
    }
    let offset_seconds = match &text[at..] {
        "Z" => 0,
        zone if zone.len() == 6 && (zone.starts_with('+') || zone.starts_with('-')) => {
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            let (hours, minutes) = (number(at + 1..at + 3)?, number(at + 4..at + 6)?);
            if bytes[at + 3] != b':' {
                return None;
            }
            sign * (hours * 3600 + minutes * 60)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_seconds;
    Some(i128::from(seconds) * 1_000_000_000 + i128::from(nanos))
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// How far a follow has been delivered, so a resumed body hands on nothing twice.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// The timestamp of the last line delivered (whole or in part) and its text.
    pub at: Option<(Stamp, Bytes)>,
    /// Whole lines delivered with exactly that timestamp.
    same: usize,
    /// Bytes delivered of a line cut short (its timestamp is `at`'s).
    partial: usize,
}

impl Cursor {
    /// The piece was handed on.
    pub fn delivered(&mut self, piece: &Piece) {
        let Some(stamp) = piece.stamp else {
            return;
        };
        if piece.offset == 0 && self.at.as_ref().is_none_or(|(at, _)| *at != stamp) {
            let text = piece.stamp_text.clone().unwrap_or_default();
            self.at = Some((stamp, text));
            self.same = 0;
        }
        if piece.last {
            self.same += 1;
            self.partial = 0;
        } else {
            self.partial = piece.offset + piece.text.len();
        }
    }

    /// What a body resumed from here hands on.
    pub fn resume(&self) -> Resume {
        Resume {
            from: self.at.as_ref().map(|(at, _)| *at),
            same: self.same,
            partial: self.partial,
            seen: 0,
        }
    }
}

/// The sorting of a resumed body's pieces into the delivered and the new, as its
/// [`Cursor::resume`] left off.
#[derive(Debug)]
pub struct Resume {
    /// The last timestamp delivered; `None` once the body has passed it.
    from: Option<Stamp>,
    same: usize,
    partial: usize,
    /// Whole lines of that timestamp met in this body.
    seen: usize,
}

/// What to do with a piece of a resumed body.
#[derive(Debug, PartialEq, Eq)]
pub enum Take {
    /// Hand it on, its first `skip` bytes dropped (delivered before the resume).
    Deliver {
        /// Bytes of the piece delivered already.
        skip: usize,
    },
    /// Delivered before the resume: drop it.
    Drop,
}

impl Resume {
    /// A body that starts afresh: every piece is new.
    pub fn fresh() -> Self {
        Self {
            from: None,
            same: 0,
            partial: 0,
            seen: 0,
        }
    }

    /// What to do with the body's next piece.
    pub fn take(&mut self, piece: &Piece) -> Take {
        let (Some(from), Some(stamp)) = (self.from, piece.stamp) else {
            return Take::Deliver { skip: 0 };
        };
        if stamp < from {
            return Take::Drop;
        }
        if stamp > from {
            self.from = None;
            return Take::Deliver { skip: 0 };
        }
        let last = piece.last;
        if self.seen < self.same {
            self.seen += usize::from(last);
            return Take::Drop;
        }
        // The line delivered in part, or the first new one of this timestamp: past it, all is new.
        let skip = self
            .partial
            .saturating_sub(piece.offset)
            .min(piece.text.len());
        if last {
            self.from = None;
        }
        if skip == piece.text.len() && !last {
            return Take::Drop;
        }
        Take::Deliver { skip }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(framer: &mut LogFramer) -> Vec<Piece> {
        std::iter::from_fn(|| framer.next_piece()).collect()
    }

    #[test]
    fn stamps_read_as_go_writes_them() {
        let base = parse_stamp(b"2026-12-06T10:00:00Z").unwrap();
        assert_eq!(base, 1_796_551_200 * 1_000_000_000);
        assert_eq!(
            parse_stamp(b"2026-12-06T10:00:00.5Z"),
            Some(base + 500_000_000)
        );
        assert_eq!(
            parse_stamp(b"2026-12-06T10:00:00.000000001Z"),
            Some(base + 1)
        );
        assert_eq!(parse_stamp(b"2026-12-06T11:00:00+01:00"), Some(base));
        assert_eq!(parse_stamp(b"1970-01-01T00:00:00Z"), Some(0));
        for bad in [
            &b"2026-12-06 10:00:00Z"[..],
            b"2026-13-06T10:00:00Z",
            b"2026-12-06T10:00:00",
            b"2026-12-06T10:00:00.Z",
            b"2026-12-06T10:00:00.1234567890Z",
            b"hello world",
        ] {
            assert_eq!(parse_stamp(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn lines_come_whole_with_their_stamps_however_the_body_is_cut() {
        let body =
            b"2026-12-06T10:00:00.1Z one\n2026-12-06T10:00:00.2Z two\r\n2026-12-06T10:00:01Z \n";
        for size in 1..body.len() {
            let mut framer = LogFramer::new(true);
            let mut got = Vec::new();
            for chunk in body.chunks(size) {
                framer.push(chunk);
                got.extend(pieces(&mut framer));
            }
            assert_eq!(framer.finish(), None);
            let texts: Vec<&[u8]> = got.iter().map(|p| &p.text[..]).collect();
            assert_eq!(texts, [&b"one"[..], b"two", b""], "chunks of {size}");
            assert!(
                got.iter()
                    .all(|p| p.last && p.offset == 0 && p.stamp.is_some())
            );
            assert_eq!(
                &got[1].stamp_text.as_ref().unwrap()[..],
                b"2026-12-06T10:00:00.2Z"
            );
        }
    }

    #[test]
    fn a_long_line_is_cut_into_marked_pieces_never_inside_a_character() {
        let mut framer = LogFramer::new(true);
        let mut text = "é".repeat(MAX_PIECE_BYTES); // two bytes each: 32 KiB
        text.push_str("end");
        framer.push(format!("2026-12-06T10:00:00Z {text}\nnext").as_bytes());
        let got = pieces(&mut framer);
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(!got[0].last && !got[1].last && got[2].last);
        assert!(got.iter().all(|p| p.text.len() <= MAX_PIECE_BYTES));
        assert!(got.iter().all(|p| std::str::from_utf8(&p.text).is_ok()));
        assert_eq!(got[1].offset, got[0].text.len());
        assert!(got[1].stamp_text.is_none() && got[1].stamp == got[0].stamp);
        let joined: Vec<u8> = got.iter().flat_map(|p| p.text.to_vec()).collect();
        assert_eq!(joined, text.as_bytes());
        assert_eq!(
            framer.finish().map(|p| p.text),
            Some(Bytes::from_static(b"next"))
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_pass_as_they_are() {
        let mut framer = LogFramer::new(false);
        framer.push(b"\xff\xfe raw\n");
        assert_eq!(&pieces(&mut framer)[0].text[..], b"\xff\xfe raw");
    }

    #[test]
    fn a_line_without_a_stamp_in_a_stamped_body_is_kept_whole() {
        let mut framer = LogFramer::new(true);
        framer.push(b"no stamp here\n");
        let got = pieces(&mut framer);
        assert_eq!(&got[0].text[..], b"no stamp here");
        assert_eq!(got[0].stamp, None);
    }

    /// A body of `lines` (stamp second, text), stamped.
    fn body(lines: &[(u32, String)]) -> Vec<u8> {
        lines
            .iter()
            .flat_map(|(s, text)| format!("2026-12-06T10:00:{s:02}.5Z {text}\n").into_bytes())
            .collect()
    }

    /// Delivers `bytes` through `cursor` as a resumed body does, stopping after `stop` bytes of
    /// it (a dropped connection), returning the text handed on.
    fn deliver(cursor: &mut Cursor, bytes: &[u8], stop: usize) -> Vec<u8> {
        let mut framer = LogFramer::new(true);
        framer.push(&bytes[..stop]);
        let mut resume = cursor.resume();
        let mut out = Vec::new();
        while let Some(piece) = framer.next_piece() {
            if let Take::Deliver { skip } = resume.take(&piece) {
                out.extend_from_slice(&piece.text[skip..]);
                if piece.last {
                    out.push(b'\n');
                }
                cursor.delivered(&piece);
            }
        }
        out
    }

    #[test]
    fn a_resume_from_the_start_of_the_second_hands_on_nothing_twice_and_loses_nothing() {
        // Lines sharing timestamps, and one long enough to be cut.
        let mut lines: Vec<(u32, String)> = (0..12).map(|i| (i / 3, format!("line {i}"))).collect();
        lines.insert(7, (2, "x".repeat(3 * MAX_PIECE_BYTES + 5)));
        let all = body(&lines);
        let expected: Vec<u8> = lines
            .iter()
            .flat_map(|(_, t)| format!("{t}\n").into_bytes())
            .collect();
        for stop in (1..all.len()).step_by(997).chain([all.len() - 1]) {
            let mut cursor = Cursor::default();
            let mut out = deliver(&mut cursor, &all, stop);
            // The server resumes at the start of the last line's second.
            let second = cursor.at.as_ref().map_or(0, |(s, _)| {
                ((s / 1_000_000_000)
                    - parse_stamp(b"2026-12-06T10:00:00Z").unwrap() / 1_000_000_000)
                    as u32
            });
            let resumed = body(
                &lines
                    .iter()
                    .filter(|(s, _)| *s >= second)
                    .cloned()
                    .collect::<Vec<_>>(),
            );
            out.extend(deliver(&mut cursor, &resumed, resumed.len()));
            assert!(out == expected, "dropped after {stop} bytes");
        }
    }
}
