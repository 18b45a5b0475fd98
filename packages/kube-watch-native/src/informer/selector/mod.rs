//! Kubernetes label selectors, parsed and evaluated in Rust so that `list()` filters the cache
//! on the stored labels without building a JavaScript object per candidate.
//!
//! The grammar is the API server's (`k8s.io/apimachinery/pkg/labels`): requirements joined by
//! commas, each `key`, `!key`, `key=value`, `key==value`, `key!=value`, `key in (a,b)`,
//! `key notin (a,b)`, `key>n` or `key<n`. Keys and values are validated as the server does, so
//! a selector that works on `list()` also works in the informer's request, and a bad one fails
//! here with a message that says where and why.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use thiserror::Error;

/// A selector that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid label selector {selector:?}: {reason}")]
pub struct SelectorError {
    /// The selector as given.
    pub selector: String,
    /// What is wrong, and where.
    pub reason: String,
}

/// One requirement on one label.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    /// `key`: the label is present.
    Exists(String),
    /// `!key`: the label is absent.
    DoesNotExist(String),
    /// `key=v`, `key==v`, `key in (…)`: present with one of the values.
    In(String, Vec<String>),
    /// `key!=v`, `key notin (…)`: absent, or present with none of the values.
    NotIn(String, Vec<String>),
    /// `key>n`: present with an integer value greater than n.
    GreaterThan(String, i64),
    /// `key<n`: present with an integer value less than n.
    LessThan(String, i64),
}

/// How many selectors' texts [`Selector::parse_shared`] keeps parsed.
pub const PARSED_KEPT: usize = 1024;

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

/// Looks up a label's value; labels are stored sorted by key.
pub trait Labels {
    /// The value of `key`, if the label is present.
    fn get(&self, key: &str) -> Option<&str>;
}

impl Labels for [(Box<str>, Box<str>)] {
    fn get(&self, key: &str) -> Option<&str> {
        self.binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*self[i].1)
    }
}

impl Selector {
    /// Parses `text`; blank text is the selector that matches everything.
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        let fail = |reason: String| SelectorError {
            selector: text.to_owned(),
            reason,
        };
        let tokens = tokenize(text).map_err(fail)?;
        Parser { tokens, at: 0 }.selector().map_err(fail)
    }

    /// [`Selector::parse`], once per distinct text: the parsed selector is kept for the next
    /// caller of the same text (a request's selector is read for its requirements, then used
    /// for every type's list and every live comparison). Errors are not kept. At most
    /// [`PARSED_KEPT`] texts are kept; past that the kept ones are dropped and kept anew.
    pub fn parse_shared(text: &str) -> Result<Arc<Self>, SelectorError> {
        static PARSED: Mutex<Option<HashMap<Box<str>, Arc<Selector>>>> = Mutex::new(None);
        let mut parsed = PARSED.lock().unwrap_or_else(PoisonError::into_inner);
        let parsed = parsed.get_or_insert_with(HashMap::new);
        if let Some(found) = parsed.get(text) {
            return Ok(Arc::clone(found));
        }
        let selector = Arc::new(Self::parse(text)?);
        if parsed.len() >= PARSED_KEPT {
            parsed.clear();
        }
        parsed.insert(text.into(), Arc::clone(&selector));
        Ok(selector)
    }

    /// Whether an object with `labels` is selected.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        self.requirements.iter().all(|r| match r {
            Requirement::Exists(key) => labels.get(key).is_some(),
            Requirement::DoesNotExist(key) => labels.get(key).is_none(),
            Requirement::In(key, values) => labels
                .get(key)
                .is_some_and(|v| values.iter().any(|w| w == v)),
            Requirement::NotIn(key, values) => labels
                .get(key)
                .is_none_or(|v| values.iter().all(|w| w != v)),
            Requirement::GreaterThan(key, n) => labels
                .get(key)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            Requirement::LessThan(key, n) => labels
                .get(key)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        })
    }

    /// Matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The requirements, in the selector's order, as the Backstage module reads them (through
    /// `parseLabelSelector`): `key=v` is `in` with one value, `key!=v` is `notin` with one.
    pub fn parts(&self) -> Vec<RequirementParts<'_>> {
        self.requirements
            .iter()
            .map(|r| {
                let (key, operator, values) = match r {
                    Requirement::Exists(key) => (key, Operator::Exists, Vec::new()),
                    Requirement::DoesNotExist(key) => (key, Operator::DoesNotExist, Vec::new()),
                    Requirement::In(key, values) => (key, Operator::In, values.clone()),
                    Requirement::NotIn(key, values) => (key, Operator::NotIn, values.clone()),
                    Requirement::GreaterThan(key, n) => {
                        (key, Operator::GreaterThan, vec![n.to_string()])
                    }
                    Requirement::LessThan(key, n) => (key, Operator::LessThan, vec![n.to_string()]),
                };
                RequirementParts {
                    key,
                    operator,
                    values,
                }
            })
            .collect()
    }
}

/// A requirement's operator, as [`Selector::parts`] gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `key`
    Exists,
    /// `!key`
    DoesNotExist,
    /// `key=v`, `key==v`, `key in (…)`
    In,
    /// `key!=v`, `key notin (…)`
    NotIn,
    /// `key>n`
    GreaterThan,
    /// `key<n`
    LessThan,
}

impl Operator {
    /// The operator's name: `exists`, `!`, `in`, `notin`, `>` or `<`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exists => "exists",
            Self::DoesNotExist => "!",
            Self::In => "in",
            Self::NotIn => "notin",
            Self::GreaterThan => ">",
            Self::LessThan => "<",
        }
    }
}

/// One requirement of a parsed selector: its key, operator and values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequirementParts<'a> {
    /// The label's key.
    pub key: &'a str,
    /// What the requirement asks of it.
    pub operator: Operator,
    /// The values it is compared with (none for `exists` and `!`).
    pub values: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    In,
    NotIn,
    Bang,
    Equals,
    DoubleEquals,
    NotEquals,
    Greater,
    Less,
    Open,
    Close,
    Comma,
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Self::Word(w) => format!("{w:?}"),
            Self::In => "'in'".into(),
            Self::NotIn => "'notin'".into(),
            Self::Bang => "'!'".into(),
            Self::Equals => "'='".into(),
            Self::DoubleEquals => "'=='".into(),
            Self::NotEquals => "'!='".into(),
            Self::Greater => "'>'".into(),
            Self::Less => "'<'".into(),
            Self::Open => "'('".into(),
            Self::Close => "')'".into(),
            Self::Comma => "','".into(),
        }
    }
}

/// Splits on the same special characters as the upstream lexer, so `a=b` and `a = b` read
/// alike, and `in`/`notin` are keywords only as whole words.
fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    const SPECIAL: &[char] = &['!', '=', '>', '<', '(', ')', ','];
    let mut tokens = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c.is_whitespace() {
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let (token, len) = match c {
            '!' if rest.starts_with("!=") => (Token::NotEquals, 2),
            '!' => (Token::Bang, 1),
            '=' if rest.starts_with("==") => (Token::DoubleEquals, 2),
            '=' => (Token::Equals, 1),
            '>' => (Token::Greater, 1),
            '<' => (Token::Less, 1),
            '(' => (Token::Open, 1),
            ')' => (Token::Close, 1),
            ',' => (Token::Comma, 1),
            _ => {
                let len = rest
                    .find(|c: char| c.is_whitespace() || SPECIAL.contains(&c))
                    .unwrap_or(rest.len());
                let word = &rest[..len];
                let token = match word {
                    "in" => Token::In,
                    "notin" => Token::NotIn,
                    _ => Token::Word(word.to_owned()),
                };
                (token, len)
            }
        };
        tokens.push(token);
        rest = &rest[len..];
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn selector(mut self) -> Result<Selector, String> {
        let mut requirements = Vec::new();
        if self.tokens.is_empty() {
            return Ok(Selector { requirements });
        }
        loop {
            requirements.push(self.requirement()?);
            match self.next() {
                None => return Ok(Selector { requirements }),
                Some(Token::Comma) if self.peek().is_some() => {}
                Some(Token::Comma) => return Err("a trailing ',' ends the selector".into()),
                Some(other) => {
                    return Err(format!(
                        "expected ',' or the end after a requirement, found {}",
                        other.describe()
                    ));
                }
            }
        }
    }

    fn key(&mut self) -> Result<String, String> {
        match self.next() {
            Some(Token::Word(key)) => {
                validate_key(&key)?;
                Ok(key)
            }
            Some(other) => Err(format!("expected a label key, found {}", other.describe())),
            None => Err("expected a label key, found the end".into()),
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        if self.peek() == Some(&Token::Bang) {
            self.at += 1;
            return Ok(Requirement::DoesNotExist(self.key()?));
        }
        let key = self.key()?;
        let operator = match self.peek() {
            None | Some(Token::Comma) => return Ok(Requirement::Exists(key)),
            Some(_) => self.next().unwrap_or(Token::Comma),
        };
        match operator {
            Token::Equals | Token::DoubleEquals => {
                Ok(Requirement::In(key.clone(), vec![self.single_value(&key)?]))
            }
            Token::NotEquals => Ok(Requirement::NotIn(
                key.clone(),
                vec![self.single_value(&key)?],
            )),
            Token::In => Ok(Requirement::In(key.clone(), self.value_set(&key, "in")?)),
            Token::NotIn => Ok(Requirement::NotIn(
                key.clone(),
                self.value_set(&key, "notin")?,
            )),
            Token::Greater | Token::Less => {
                let value = self.single_value(&key)?;
                let n = value.parse::<i64>().map_err(|_| {
                    format!(
                        "for 'gt' and 'lt' on {key:?} the value must be an integer, found {value:?}"
                    )
                })?;
                Ok(if operator == Token::Greater {
                    Requirement::GreaterThan(key, n)
                } else {
                    Requirement::LessThan(key, n)
                })
            }
            other => Err(format!(
                "expected an operator ('=', '==', '!=', 'in', 'notin', '>', '<') or ',' after {key:?}, found {}",
                other.describe()
            )),
        }
    }

    /// The value after `=`, `==` or `!=`: a word, or nothing (the empty value).
    fn single_value(&mut self, key: &str) -> Result<String, String> {
        match self.peek() {
            None | Some(Token::Comma) => Ok(String::new()),
            Some(Token::Word(_)) => {
                let Some(Token::Word(value)) = self.next() else {
                    unreachable!("peeked a word")
                };
                validate_value(key, &value)?;
                Ok(value)
            }
            // `in`/`notin` are ordinary values after an operator.
            Some(Token::In) | Some(Token::NotIn) => {
                let word = if self.next() == Some(Token::In) {
                    "in"
                } else {
                    "notin"
                };
                Ok(word.to_owned())
            }
            Some(other) => Err(format!(
                "expected a value for {key:?}, found {}",
                other.describe()
            )),
        }
    }

    /// `( v1, v2, … )` after `in` or `notin`; not empty.
    fn value_set(&mut self, key: &str, operator: &str) -> Result<Vec<String>, String> {
        if self.next() != Some(Token::Open) {
            return Err(format!("expected '(' after {key:?} {operator}"));
        }
        let mut values = Vec::new();
        loop {
            match self.next() {
                Some(Token::Word(value)) => {
                    validate_value(key, &value)?;
                    values.push(value);
                }
                Some(Token::In) => values.push("in".into()),
                Some(Token::NotIn) => values.push("notin".into()),
                Some(Token::Close) if values.is_empty() => {
                    return Err(format!("the value set of {key:?} {operator} is empty"));
                }
                Some(Token::Close) => return Ok(values),
                // An empty value between commas, or before the closing parenthesis.
                Some(Token::Comma) => {
                    values.push(String::new());
                    continue;
                }
                Some(other) => {
                    return Err(format!(
                        "expected a value in the set of {key:?} {operator}, found {}",
                        other.describe()
                    ));
                }
                None => return Err(format!("the value set of {key:?} {operator} is not closed")),
            }
            match self.next() {
                Some(Token::Comma) => {}
                Some(Token::Close) => return Ok(values),
                Some(other) => {
                    return Err(format!(
                        "expected ',' or ')' in the set of {key:?} {operator}, found {}",
                        other.describe()
                    ));
                }
                None => return Err(format!("the value set of {key:?} {operator} is not closed")),
            }
        }
    }
}

fn is_name(text: &str) -> bool {
    let bytes = text.as_bytes();
    let edge = |b: &u8| b.is_ascii_alphanumeric();
    !bytes.is_empty()
        && bytes.first().is_some_and(edge)
        && bytes.last().is_some_and(edge)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn is_dns_subdomain(text: &str) -> bool {
    text.len() <= 253
        && text.split('.').all(|part| {
            let bytes = part.as_bytes();
            !bytes.is_empty()
                && bytes
                    .first()
                    .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                && bytes
                    .last()
                    .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        })
}

/// A qualified name: an optional DNS subdomain prefix and `/`, then a name of at most 63
/// characters.
fn validate_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && !is_dns_subdomain(prefix)
    {
        return Err(format!(
            "key {key:?}: the prefix must be a DNS subdomain (lower-case alphanumerics, '-', '.')"
        ));
    }
    if name.len() > 63 || !is_name(name) {
        return Err(format!(
            "key {key:?}: the name part must be 1-63 characters of alphanumerics, '-', '_' or '.', \
             starting and ending with an alphanumeric"
        ));
    }
    Ok(())
}

fn validate_value(key: &str, value: &str) -> Result<(), String> {
    if value.is_empty() || (value.len() <= 63 && is_name(value)) {
        return Ok(());
    }
    Err(format!(
        "value {value:?} of {key:?}: a label value must be empty or 1-63 characters of \
         alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
    ))
}

#[cfg(test)]
mod tests;
