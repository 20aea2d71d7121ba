//! Diagnostics for suite files: byte offsets to `line:col`, "did you mean" suggestions, and
//! turning serde/toml messages into sentences that say what to do.
//!
//! serde reports an unknown key as ``unknown field `x`, expected one of `a`, `b` `` and an unknown
//! enum value as ``unknown variant `x`, expected `a` or `b` ``; that wording is serde's
//! (`serde::de::Error::unknown_field` and `OneOf`), stable across serde 1.x, and it is the only
//! place the list of valid keys of a derived struct is available at run time. [`parse`] reads it
//! back into a [`Problem`]; everything else here is plain text handling.
//!
//! Invariant: nothing here panics on any input (offsets are clamped to the text and to char
//! boundaries).

use std::fmt::Write as _;

/// Where a text came from and the text itself, to turn byte offsets into `origin:line:col`.
pub(crate) struct Source<'a> {
    /// A path or `presets/NAME.toml`, printed first in every message.
    pub origin: &'a str,
    /// The whole text.
    pub text: &'a str,
}

impl Source<'_> {
    /// An error at byte `offset` of the text.
    pub fn at(&self, offset: usize, message: impl Into<String>) -> super::ConfigError {
        let (line, col) = line_col(self.text, offset);
        super::ConfigError::At {
            origin: self.origin.to_string(),
            line,
            col,
            message: one_line(&message.into()),
        }
    }

    /// An error about the file as a whole (no single position).
    pub fn whole(&self, message: impl Into<String>) -> super::ConfigError {
        super::ConfigError::InFile {
            origin: self.origin.to_string(),
            message: one_line(&message.into()),
        }
    }

    /// The 1-based line of byte `offset`.
    pub fn line(&self, offset: usize) -> usize {
        line_col(self.text, offset).0
    }
}

/// `msg` with control characters (from keys or values the user wrote) escaped, so every
/// message stays on one line.
pub(crate) fn one_line(msg: &str) -> String {
    msg.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// 1-based line and column (in characters) of byte `offset`; offsets past the end or inside a
/// multi-byte character are clamped.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut off = offset.min(text.len());
    while !text.is_char_boundary(off) {
        off -= 1;
    }
    let before = &text[..off];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The candidate closest to `word` if it is close enough to be a plausible typo.
///
/// Jaro–Winkler similarity (as clap uses for subcommands) rewards a shared prefix, which is
/// what typos of keys like `fle_size` or `repeat` keep; 0.8 rejects unrelated words.
pub(crate) fn suggest<'a, I, S>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a S>,
    S: AsRef<str> + ?Sized + 'a,
{
    let w = word.to_ascii_lowercase();
    let mut best: Option<(f64, &'a str)> = None;
    for c in candidates {
        let c = c.as_ref();
        let score = strsim::jaro_winkler(&w, &c.to_ascii_lowercase());
        if score >= 0.8 && best.is_none_or(|(b, _)| score > b) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c)
}

/// `` `a`, `b`, `c` `` for messages.
pub(crate) fn quoted_list<S: AsRef<str>>(items: &[S]) -> String {
    let mut out = String::new();
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "`{}`", s.as_ref());
    }
    out
}

/// What went wrong, read back from a serde/toml message.
#[derive(Debug, PartialEq)]
pub(crate) enum Problem {
    /// A key the struct does not have; `expected` is serde's list of valid keys.
    UnknownKey { key: String, expected: Vec<String> },
    /// A string that is not one of an enum's values.
    UnknownValue { value: String, expected: Vec<String> },
    /// A required key is absent.
    MissingKey { key: String },
    /// A value of the wrong type or out of range (`invalid type: …, expected …`).
    WrongType { found: String, expected: String },
    /// Anything else: TOML syntax errors, custom messages from unit parsers.
    Other(String),
}

/// Reads a serde/toml error message back into a [`Problem`].
pub(crate) fn parse(message: &str) -> Problem {
    let msg = message.trim();
    if let Some(rest) = msg.strip_prefix("unknown field ") {
        if let Some((key, expected)) = name_and_expected(rest) {
            return Problem::UnknownKey { key, expected };
        }
    }
    if let Some(rest) = msg.strip_prefix("unknown variant ") {
        if let Some((value, expected)) = name_and_expected(rest) {
            return Problem::UnknownValue { value, expected };
        }
    }
    if let Some(rest) = msg.strip_prefix("missing field ") {
        if let Some((key, _)) = first_backticked(rest) {
            return Problem::MissingKey { key: key.to_string() };
        }
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = msg.strip_prefix(prefix) {
            if let Some((found, expected)) = rest.rsplit_once(", expected ") {
                return Problem::WrongType {
                    found: found.to_string(),
                    expected: expected.to_string(),
                };
            }
        }
    }
    Problem::Other(
        msg.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// The first `` `quoted` `` item of `s` and the text after its closing backtick.
fn first_backticked(s: &str) -> Option<(&str, &str)> {
    let start = s.find('`')? + 1;
    let len = s[start..].find('`')?;
    Some((&s[start..start + len], &s[start + len + 1..]))
}

/// `` `x`, expected one of `a`, `b` `` → (`x`, [a, b]); `` `x`, there are no fields `` → (x, []).
fn name_and_expected(rest: &str) -> Option<(String, Vec<String>)> {
    let (name, after) = first_backticked(rest)?;
    let mut expected = Vec::new();
    if let Some(idx) = after.find("expected ") {
        let mut list = &after[idx + "expected ".len()..];
        while let Some((item, tail)) = first_backticked(list) {
            expected.push(item.to_string());
            list = tail;
        }
    }
    Some((name.to_string(), expected))
}

/// A serde "expected" phrase in words a suite author uses.
fn friendly_expected(expected: &str) -> String {
    match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number ≥ 0".into(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "a boolean" => "`true` or `false`".into(),
        "a string" | "a borrowed string" | "string" => "a quoted string".into(),
        "a sequence" => "a list such as [\"a\", \"b\"]".into(),
        "a map" => "a table".into(),
        other if other.starts_with("struct ") => "a table".into(),
        other => other.into(),
    }
}

/// A sentence for `problem`; `section` names where it happened (`[run]`, ``workload `x` ``),
/// `extra_keys` are keys valid there that serde's list does not include (a workload's `kind`
/// and `name`).
pub(crate) fn describe(problem: &Problem, section: &str, extra_keys: &[&str]) -> String {
    match problem {
        Problem::UnknownKey { key, expected } => {
            let mut valid: Vec<&str> = extra_keys.to_vec();
            valid.extend(expected.iter().map(String::as_str).filter(|e| !extra_keys.contains(e)));
            let place = if section.is_empty() {
                String::new()
            } else {
                format!(" in {section}")
            };
            match suggest(key, &valid) {
                Some(s) => format!(
                    "unknown key `{key}`{place}: did you mean `{s}`? (valid keys: {})",
                    quoted_list(&valid)
                ),
                None if valid.is_empty() => {
                    format!("unknown key `{key}`{place}: remove it, this table takes no keys")
                }
                None => format!(
                    "unknown key `{key}`{place}: remove it or use one of {}",
                    quoted_list(&valid)
                ),
            }
        }
        Problem::UnknownValue { value, expected } => match suggest(value, expected) {
            Some(s) => format!(
                "unknown value `{value}`: did you mean `{s}`? (valid values: {})",
                quoted_list(expected)
            ),
            None => format!("unknown value `{value}`: use one of {}", quoted_list(expected)),
        },
        Problem::MissingKey { key } => {
            let place = if section.is_empty() {
                String::new()
            } else {
                format!(" in {section}")
            };
            format!("missing key `{key}`{place}: add `{key} = …`")
        }
        Problem::WrongType { found, expected } => {
            format!("{found} is not {}: change this value", friendly_expected(expected))
        }
        Problem::Other(msg) => with_advice(msg),
    }
}

/// Appends what to do to messages that do not already say it.
fn with_advice(msg: &str) -> String {
    let says_what_to_do = [
        " use ", " add ", " remove ", " write ", " change ", ": use", ": add", ": remove",
    ]
    .iter()
    .any(|w| msg.contains(w));
    if says_what_to_do {
        msg.to_string()
    } else if msg.contains("negative") {
        format!("{msg}: use a value ≥ 0")
    } else if msg.starts_with("duplicate key") {
        format!("{msg}: remove one of them")
    } else {
        format!("{msg}: fix the TOML here")
    }
}

/// Which table of a suite file a serde key list belongs to, so messages can say `in [run]`.
pub(crate) fn section_of(expected: &[String]) -> &'static str {
    let has = |k: &str| expected.iter().any(|e| e == k);
    if has("repeats") && has("confidence") {
        "[run]"
    } else if has("mount_opts") {
        "[[fs]]"
    } else if has("description") {
        "[suite]"
    } else if has("workload") && has("fs") {
        "the top level (tables are [suite], [run], [[fs]] and [[workload]])"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_lines_and_characters_from_one() {
        let t = "ab\ncdé\nf";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 3), (2, 1));
        assert_eq!(line_col(t, 7), (2, 4)); // after the two-byte é
        assert_eq!(line_col(t, 6), (2, 3)); // inside é → clamped to its start
        assert_eq!(line_col(t, 999), (3, 2));
        assert_eq!(line_col("", 5), (1, 1));
    }

    #[test]
    fn suggest_finds_typos_and_rejects_unrelated_words() {
        assert_eq!(
            suggest("fle_size", &["chunk_size", "file_size", "files"]),
            Some("file_size")
        );
        assert_eq!(suggest("repeat", &["repeats", "warmup", "order"]), Some("repeats"));
        assert_eq!(suggest("Bonie", &["bonnie"]), Some("bonnie"));
        assert_eq!(suggest("zzz", &["repeats", "warmup"]), None);
        assert_eq!(suggest("x", &[] as &[&str]), None);
    }

    #[test]
    fn serde_messages_are_read_back() {
        assert_eq!(
            parse("unknown field `repeat`, expected one of `repeats`, `warmup`, `order`"),
            Problem::UnknownKey {
                key: "repeat".into(),
                expected: vec!["repeats".into(), "warmup".into(), "order".into()]
            }
        );
        assert_eq!(
            parse("unknown field `x`, expected `a` or `b`"),
            Problem::UnknownKey {
                key: "x".into(),
                expected: vec!["a".into(), "b".into()]
            }
        );
        assert_eq!(
            parse("unknown field `x`, there are no fields"),
            Problem::UnknownKey {
                key: "x".into(),
                expected: vec![]
            }
        );
        assert_eq!(
            parse("unknown variant `interleave`, expected `interleaved` or `sequential`"),
            Problem::UnknownValue {
                value: "interleave".into(),
                expected: vec!["interleaved".into(), "sequential".into()]
            }
        );
        assert_eq!(
            parse("missing field `type`"),
            Problem::MissingKey { key: "type".into() }
        );
        assert_eq!(
            parse("invalid type: string \"x\", expected u32"),
            Problem::WrongType {
                found: "string \"x\"".into(),
                expected: "u32".into()
            }
        );
        assert_eq!(
            parse("invalid table header\nexpected `.`, `]`"),
            Problem::Other("invalid table header; expected `.`, `]`".into())
        );
        // Malformed look-alikes fall through instead of panicking.
        assert!(matches!(parse("unknown field `"), Problem::Other(_)));
        assert!(matches!(parse("unknown variant "), Problem::Other(_)));
    }

    #[test]
    fn descriptions_say_what_to_do() {
        let p = parse("unknown field `repeat`, expected one of `repeats`, `warmup`, `order`, `confidence`");
        let section = match &p {
            Problem::UnknownKey { expected, .. } => section_of(expected),
            _ => unreachable!(),
        };
        let d = describe(&p, section, &[]);
        assert!(
            d.starts_with("unknown key `repeat` in [run]: did you mean `repeats`?"),
            "{d}"
        );
        let d = describe(&parse("invalid value: integer `-3`, expected u32"), "", &[]);
        assert_eq!(d, "integer `-3` is not a whole number ≥ 0: change this value");
        let d = describe(&parse("size -1 is negative"), "", &[]);
        assert_eq!(d, "size -1 is negative: use a value ≥ 0");
        let d = describe(
            &parse("unknown field `q`, expected `file_size`"),
            "workload `w`",
            &["kind", "name"],
        );
        assert_eq!(
            d,
            "unknown key `q` in workload `w`: remove it or use one of `kind`, `name`, `file_size`"
        );
    }
}
