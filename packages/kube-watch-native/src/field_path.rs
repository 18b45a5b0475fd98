//! The paths of the `strip` option: dotted segments, and bracket-quoted ones for keys that
//! hold dots or slashes, as annotation and label keys do:
//!
//! ```text
//! metadata.managedFields
//! metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']
//! metadata.labels["app.kubernetes.io/name"]
//! ```
//!
//! A dotted segment is any text without `.`, `[`, `]`, quotes, backslashes or white space; a
//! bracketed one is a single- or double-quoted string in which a backslash makes the next
//! character literal (`\'`, `\"`, `\\`). Segments are object keys (paths do not go into
//! arrays). Anything else is refused with the reason and the column where it went wrong.

use thiserror::Error;

/// Why a path was refused; `at` counts characters from 1.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PathError {
    #[error("is empty")]
    Empty,
    #[error("has an empty segment at column {at}")]
    EmptySegment { at: usize },
    #[error("has '{found}' at column {at}, where a key or a quoted ['key'] was expected")]
    Unexpected { found: char, at: usize },
    #[error("has an unterminated quoted key starting at column {at}")]
    Unterminated { at: usize },
    #[error("has no ']' after the quoted key ending at column {at}")]
    NoClosingBracket { at: usize },
    #[error("has an empty quoted key at column {at}")]
    EmptyKey { at: usize },
}

/// The keys of `path`, in order.
pub fn parse(path: &str) -> Result<Vec<String>, PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    let chars: Vec<char> = path.chars().collect();
    let mut keys = Vec::new();
    let mut i = 0;
    // Whether a dotted segment may start here: at the start, and after a '.'.
    let mut dotted_allowed = true;
    while i < chars.len() {
        match chars[i] {
            '[' => {
                let (key, next) = quoted(&chars, i)?;
                keys.push(key);
                i = next;
                dotted_allowed = false;
            }
            '.' if keys.is_empty() => return Err(PathError::EmptySegment { at: 1 }),
            '.' => {
                // A dot is followed by a dotted segment, never by another dot, a bracket or
                // the end.
                i += 1;
                match chars.get(i) {
                    Some(c) if plain(*c) => dotted_allowed = true,
                    _ => return Err(PathError::EmptySegment { at: i + 1 }),
                }
            }
            c if dotted_allowed && plain(c) => {
                let start = i;
                while i < chars.len() && plain(chars[i]) {
                    i += 1;
                }
                keys.push(chars[start..i].iter().collect());
                dotted_allowed = false;
            }
            found => return Err(PathError::Unexpected { found, at: i + 1 }),
        }
    }
    Ok(keys)
}

/// A character of a dotted segment.
fn plain(c: char) -> bool {
    !matches!(c, '.' | '[' | ']' | '\'' | '"' | '\\') && !c.is_whitespace()
}

/// The key of the `['…']` starting at `open`, and where the path goes on after its `]`.
fn quoted(chars: &[char], open: usize) -> Result<(String, usize), PathError> {
    let quote_at = open + 1;
    let quote = match chars.get(quote_at) {
        Some(q @ ('\'' | '"')) => *q,
        Some(found) => {
            return Err(PathError::Unexpected {
                found: *found,
                at: quote_at + 1,
            });
        }
        None => return Err(PathError::Unterminated { at: open + 1 }),
    };
    let mut key = String::new();
    let mut i = quote_at + 1;
    loop {
        match chars.get(i) {
            None => return Err(PathError::Unterminated { at: open + 1 }),
            Some('\\') => match chars.get(i + 1) {
                Some(c) => {
                    key.push(*c);
                    i += 2;
                }
                None => return Err(PathError::Unterminated { at: open + 1 }),
            },
            Some(c) if *c == quote => break,
            Some(c) => {
                key.push(*c);
                i += 1;
            }
        }
    }
    if chars.get(i + 1) != Some(&']') {
        return Err(PathError::NoClosingBracket { at: i + 1 });
    }
    if key.is_empty() {
        return Err(PathError::EmptyKey { at: open + 1 });
    }
    Ok((key, i + 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(path: &str) -> Vec<String> {
        parse(path).unwrap_or_else(|err| panic!("{path}: {err}"))
    }

    #[test]
    fn dotted_segments() {
        assert_eq!(ok("metadata.managedFields"), ["metadata", "managedFields"]);
        assert_eq!(ok("status"), ["status"]);
        assert_eq!(ok("a-b_c:d/e"), ["a-b_c:d/e"]);
    }

    #[test]
    fn bracketed_keys_hold_dots_and_slashes() {
        assert_eq!(
            ok("metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']"),
            [
                "metadata",
                "annotations",
                "kubectl.kubernetes.io/last-applied-configuration"
            ]
        );
        assert_eq!(
            ok(r#"metadata.labels["app.kubernetes.io/name"]"#),
            ["metadata", "labels", "app.kubernetes.io/name"]
        );
        assert_eq!(ok("['a.b']['c']"), ["a.b", "c"]);
        assert_eq!(ok("['a.b'].c"), ["a.b", "c"]);
    }

    #[test]
    fn backslash_escapes_in_quoted_keys() {
        assert_eq!(ok(r"a['it\'s']"), ["a", "it's"]);
        assert_eq!(ok(r#"a["say \"hi\""]"#), ["a", r#"say "hi""#]);
        assert_eq!(ok(r"a['back\\slash']"), ["a", r"back\slash"]);
        assert_eq!(ok(r#"a['"']"#), ["a", "\""]);
        assert_eq!(ok(r"a['x]y']"), ["a", "x]y"]);
    }

    #[test]
    fn bad_paths_say_what_and_where() {
        let cases = [
            ("", PathError::Empty),
            (".a", PathError::EmptySegment { at: 1 }),
            ("a.", PathError::EmptySegment { at: 3 }),
            ("a..b", PathError::EmptySegment { at: 3 }),
            ("a.['b']", PathError::EmptySegment { at: 3 }),
            ("a['b", PathError::Unterminated { at: 2 }),
            (r"a['b\", PathError::Unterminated { at: 2 }),
            ("a[", PathError::Unterminated { at: 2 }),
            ("a[b]", PathError::Unexpected { found: 'b', at: 3 }),
            ("a['b'", PathError::NoClosingBracket { at: 5 }),
            ("a['b'].", PathError::EmptySegment { at: 8 }),
            ("a['']", PathError::EmptyKey { at: 2 }),
            ("a['b']c", PathError::Unexpected { found: 'c', at: 7 }),
            ("a b", PathError::Unexpected { found: ' ', at: 2 }),
            ("a]", PathError::Unexpected { found: ']', at: 2 }),
            ("a'b'", PathError::Unexpected { found: '\'', at: 2 }),
        ];
        for (path, expected) in cases {
            assert_eq!(parse(path), Err(expected), "{path:?}");
        }
        assert_eq!(
            PathError::NoClosingBracket { at: 5 }.to_string(),
            "has no ']' after the quoted key ending at column 5"
        );
    }
}
