//! Where a JSON string, object or array ends, found 64 bytes at a time: the bytes of a block
//! are classified into bit masks (quotes, backslashes, brackets), the escaped quotes and the
//! bytes inside strings are worked out with a few integer operations on those masks (the
//! technique of simdjson's stage 1, Langdale & Lemire 2019), and only the brackets outside
//! strings are visited one by one. `strip` skips most of an object's text this way (its
//! managedFields, its spec or data, a last-applied annotation full of `\"`), which byte by
//! byte, with a branch per byte, would be the largest CPU cost of an informer's sync
//! (`cargo run --release --example sync_cost` measures it).
//!
//! The text is taken to be JSON already parsed (a list item, a watch event's object); what is
//! not well formed gives `None` or some end within the text, never a panic.

/// Bits of a 64-byte block.
const BLOCK: usize = 64;
/// Bits at even positions.
const EVEN_BITS: u64 = 0x5555_5555_5555_5555;

/// The bit masks of one block: which bytes are `"`, `\`, `{` or `[`, `}` or `]`.
struct Masks {
    quote: u64,
    backslash: u64,
    open: u64,
    close: u64,
}

impl Masks {
    /// The masks of `block`; the brackets' only when `BRACKETS` (a string's end needs none).
    fn of<const BRACKETS: bool>(block: &[u8; BLOCK]) -> Self {
        let mut masks = Self {
            quote: 0,
            backslash: 0,
            open: 0,
            close: 0,
        };
        // Eight bytes at a time in a u64: the compiler does not vectorise a byte loop that
        // builds bit masks, and SIMD intrinsics would need `unsafe`. With this, strip's own
        // time per fleet object went from ~2.5 to ~1.4 times a serde validation of the line.
        for (i, word) in block.chunks_exact(8).enumerate() {
            let mut bytes = [0; 8];
            bytes.copy_from_slice(word);
            let word = u64::from_le_bytes(bytes);
            let at = 8 * i;
            masks.quote |= u64::from(zero_bytes(word ^ splat(b'"'))) << at;
            masks.backslash |= u64::from(zero_bytes(word ^ splat(b'\\'))) << at;
            if !BRACKETS {
                continue;
            }
            // `{` and `[` differ only in 0x20, as `}` and `]` do.
            let folded = word | splat(0x20);
            masks.open |= u64::from(zero_bytes(folded ^ splat(b'{'))) << at;
            masks.close |= u64::from(zero_bytes(folded ^ splat(b'}'))) << at;
        }
        masks
    }
}

/// `byte` in each of a word's eight bytes.
const fn splat(byte: u8) -> u64 {
    u64::from_le_bytes([byte; 8])
}

/// Bit k set where byte k of `word` (little-endian) is zero.
fn zero_bytes(word: u64) -> u8 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    // The high bit of each byte: set where the byte is zero (exactly: no carry crosses bytes).
    let zero = !(((word & LOW7) + LOW7) | word | LOW7);
    // The eight high bits gathered into the low byte (byte k to bit k), by shifts, which
    // vectorise where a 64-bit multiply does not.
    let mut bits = zero >> 7;
    bits |= bits >> 7;
    bits |= bits >> 14;
    bits |= bits >> 28;
    bits as u8
}

/// What carries from one block to the next.
#[derive(Default)]
struct Carry {
    /// The last block ended in an odd run of backslashes: the next block's first byte is
    /// escaped.
    escaped: bool,
    /// The last block ended inside a string.
    in_string: bool,
}

impl Carry {
    /// The bytes of the block escaped by a backslash (the byte after an odd run of them).
    fn escaped(&mut self, backslash: u64) -> u64 {
        let carried = u64::from(self.escaped);
        // A first byte escaped by the last block does not start an escape itself.
        let backslash = backslash & !carried;
        let follows_escape = (backslash << 1) | carried;
        // Runs of backslashes that start on an odd bit; adding the run to its start carries
        // out past its end, which tells odd-length runs from even ones.
        let odd_starts = backslash & !EVEN_BITS & !follows_escape;
        let (even_runs_end, overflow) = odd_starts.overflowing_add(backslash);
        self.escaped = overflow;
        let invert = even_runs_end << 1;
        (EVEN_BITS ^ invert) & follows_escape
    }

    /// The bytes of the block inside a string (its opening quote included, its closing quote
    /// not), given the block's unescaped quotes.
    fn inside(&mut self, quotes: u64) -> u64 {
        let mut inside = prefix_xor(quotes);
        if self.in_string {
            inside = !inside;
        }
        self.in_string = inside >> 63 == 1;
        inside
    }
}

/// Bit i is the XOR of bits 0..=i of `x`.
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// The 64 bytes of `text` from `at`, zero-padded past its end (a zero matches no mask).
fn block(text: &[u8], at: usize) -> &[u8; BLOCK] {
    text[at..].first_chunk::<BLOCK>().unwrap_or(&[0; BLOCK])
}

/// The block at `at`, padded when fewer than 64 bytes are left.
fn masks_at<const BRACKETS: bool>(text: &[u8], at: usize) -> Masks {
    if text.len() - at >= BLOCK {
        Masks::of::<BRACKETS>(block(text, at))
    } else {
        let mut padded = [0; BLOCK];
        padded[..text.len() - at].copy_from_slice(&text[at..]);
        Masks::of::<BRACKETS>(&padded)
    }
}

/// Where the string whose contents start at `text[from]` (after its opening quote) ends,
/// after its closing quote.
pub fn string_end(text: &[u8], from: usize) -> Option<usize> {
    let mut carry = Carry::default();
    let mut at = from;
    while at < text.len() {
        let masks = masks_at::<false>(text, at);
        let quotes = masks.quote & !carry.escaped(masks.backslash);
        if quotes != 0 {
            let end = at + quotes.trailing_zeros() as usize + 1;
            return (end <= text.len()).then_some(end);
        }
        at += BLOCK;
    }
    None
}

/// Where the object or array starting at `text[at]` (a `{` or a `[`) ends, after its closing
/// bracket. As the byte-by-byte scan before it, it counts brackets without matching their
/// kinds (the text was parsed as JSON already).
pub fn nested_end(text: &[u8], at: usize) -> Option<usize> {
    let mut carry = Carry::default();
    let mut depth = 0isize;
    let mut block_at = at;
    while block_at < text.len() {
        let masks = masks_at::<true>(text, block_at);
        let quotes = masks.quote & !carry.escaped(masks.backslash);
        let outside = !carry.inside(quotes);
        let open = masks.open & outside;
        let close = masks.close & outside;
        let mut brackets = open | close;
        while brackets != 0 {
            let bit = brackets.trailing_zeros();
            // +1 for an opening bracket, -1 for a closing one, without a branch on which
            // (they alternate unpredictably in managedFields).
            depth += 2 * (open >> bit & 1) as isize - 1;
            if depth <= 0 {
                return (depth == 0).then_some(block_at + bit as usize + 1);
            }
            brackets &= brackets - 1;
        }
        block_at += BLOCK;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The byte-by-byte scan these replace, as the reference.
    fn reference_string_end(text: &[u8], from: usize) -> Option<usize> {
        let mut i = from;
        loop {
            match text.get(i)? {
                b'"' => return Some(i + 1),
                b'\\' => i += 2,
                _ => i += 1,
            }
        }
    }

    fn reference_nested_end(text: &[u8], at: usize) -> Option<usize> {
        let mut depth = 0usize;
        let mut i = at;
        loop {
            match text.get(i)? {
                b'"' => {
                    i = reference_string_end(text, i + 1)?;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// JSON values whose strings are dense in escapes, backslash runs and brackets.
    fn value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            any::<i32>().prop_map(serde_json::Value::from),
            "[\"\\\\{}\\[\\]a\u{e9} ]{0,70}".prop_map(serde_json::Value::String),
        ];
        leaf.prop_recursive(5, 200, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::Array),
                prop::collection::vec(("[\"\\\\{}a]{0,12}", inner), 0..8)
                    .prop_map(|entries| serde_json::Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_block_scan_ends_values_where_the_byte_scan_does(
            v in value(),
            pad in 0usize..130,
            tail in "[ ,}\\]\"\\\\a]{0,80}",
        ) {
            // At every offset from a block's start, and with text after the value.
            let text = format!("{}{}{}", " ".repeat(pad), v, tail);
            let bytes = text.as_bytes();
            match bytes[pad] {
                b'{' | b'[' => prop_assert_eq!(nested_end(bytes, pad), reference_nested_end(bytes, pad)),
                b'"' => prop_assert_eq!(string_end(bytes, pad + 1), reference_string_end(bytes, pad + 1)),
                _ => {}
            }
            // Strings found inside the value, one by one.
            for (i, _) in text.match_indices('"').filter(|(i, _)| *i >= pad) {
                prop_assert_eq!(string_end(bytes, i + 1), reference_string_end(bytes, i + 1));
            }
        }
    }

    #[test]
    fn backslash_runs_across_a_block_boundary() {
        for run in 0..6 {
            for start in 55..70 {
                let mut text = vec![b'"'];
                text.extend(std::iter::repeat_n(b'a', start));
                text.extend(std::iter::repeat_n(b'\\', run));
                text.extend_from_slice(b"\"x\"");
                let end = string_end(&text, 1);
                assert_eq!(end, reference_string_end(&text, 1), "{run} at {start}");
                // An even run leaves the first quote unescaped, an odd one escapes it.
                let first = 1 + start + run;
                assert_eq!(end, Some(if run % 2 == 0 { first + 1 } else { first + 3 }));
            }
        }
    }

    #[test]
    fn the_masks_mark_exactly_their_bytes() {
        let mut block = [0u8; BLOCK];
        for (i, b) in block.iter_mut().enumerate() {
            *b = (i * 37 % 256) as u8;
        }
        block[3] = b'"';
        block[9] = b'\\';
        block[17] = b'[';
        block[40] = b'{';
        block[63] = b'}';
        block[0] = b']';
        let masks = Masks::of::<true>(&block);
        let quotes_only = Masks::of::<false>(&block);
        assert_eq!(
            (quotes_only.quote, quotes_only.backslash),
            (masks.quote, masks.backslash)
        );
        assert_eq!((quotes_only.open, quotes_only.close), (0, 0));
        let expect = |f: &dyn Fn(u8) -> bool| {
            (0..BLOCK).fold(0u64, |m, i| m | (u64::from(f(block[i])) << i))
        };
        assert_eq!(masks.quote, expect(&|b| b == b'"'));
        assert_eq!(masks.backslash, expect(&|b| b == b'\\'));
        assert_eq!(masks.open, expect(&|b| b == b'{' || b == b'['));
        assert_eq!(masks.close, expect(&|b| b == b'}' || b == b']'));
        assert_ne!(masks.open & 1 << 17, 0);
        assert_ne!(masks.close & 1 << 63, 0);
    }

    #[test]
    fn unterminated_values_have_no_end() {
        assert_eq!(string_end(b"\"abc", 1), None);
        assert_eq!(string_end(b"\"abc\\\"", 1), None);
        assert_eq!(nested_end(b"{\"a\":[1,2]", 0), None);
        assert_eq!(nested_end(b"{\"a\":\"}\"", 0), None);
        assert_eq!(nested_end(b"[]", 0), Some(2));
    }
}
