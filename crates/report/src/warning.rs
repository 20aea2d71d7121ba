//! [`Warning`]: one warning of a report, and [`grouped`], the terminal's one line per kind.
//!
//! A run can raise the same kind of warning for many cells (a noisy cell, a first repeat
//! outside the others' prediction interval, a phase too short to time): the Markdown, HTML and
//! JSON reports list every warning in full, and the terminal prints one line per kind naming
//! the cells, so a person reads five lines, not thirty.
//!
//! Invariants: a warning's text is the whole warning (every format can print it alone); the
//! kind and subject only group it. JSON stores the text alone, as before there were kinds, so a
//! model read back from JSON has no kinds and the terminal then prints each warning in full.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::Deref;

/// One warning: its full text, and for a kind a run may raise for many cells, the kind (the
/// words every such warning shares) and the subject (the cell it is about).
#[derive(Clone, Debug, PartialEq)]
pub struct Warning {
    text: String,
    group: Option<(String, String)>,
}

impl Warning {
    /// A warning of kind `kind` (e.g. `noisy: CoV above 10 %, consider more repeats`) about
    /// `subject` (e.g. `bonnie / seq_read_char throughput (ext4 12 %)`), with its full `text`.
    pub fn of_kind(kind: impl Into<String>, subject: impl Into<String>, text: impl Into<String>) -> Warning {
        Warning {
            text: text.into(),
            group: Some((kind.into(), subject.into())),
        }
    }

    /// The full text.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl From<String> for Warning {
    fn from(text: String) -> Warning {
        Warning { text, group: None }
    }
}

impl Deref for Warning {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Warning {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Warning {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Warning, D::Error> {
        String::deserialize(d).map(Warning::from)
    }
}

/// Most cells a grouped line names (the rest are counted: every one is in the full list).
pub const MAX_SUBJECTS: usize = 6;

/// The terminal's lines: a warning without a kind, or alone of its kind, in full; two or more
/// of one kind as one line, `kind (count): subject; subject; …` (count of distinct subjects)
/// naming at most
/// [`MAX_SUBJECTS`] cells (`; and N more`), at the place of the first of them.
pub fn grouped(warnings: &[Warning]) -> Vec<String> {
    let mut lines: Vec<(Option<&str>, Vec<&Warning>)> = Vec::new();
    for w in warnings {
        let kind = w.group.as_ref().map(|(k, _)| k.as_str());
        match lines.iter_mut().find(|(k, _)| k.is_some() && *k == kind) {
            Some((_, members)) => members.push(w),
            None => lines.push((kind, vec![w])),
        }
    }
    lines
        .into_iter()
        .map(|(kind, members)| match (kind, members.as_slice()) {
            (Some(kind), [_, _, ..]) => {
                // A subject named twice (two repeats of one cell) is named once.
                let mut subjects: Vec<&str> = Vec::new();
                for s in members.iter().filter_map(|w| w.group.as_ref().map(|(_, s)| s.as_str())) {
                    if !subjects.contains(&s) {
                        subjects.push(s);
                    }
                }
                let shown = subjects.len().min(MAX_SUBJECTS);
                let more = match subjects.len() - shown {
                    0 => String::new(),
                    n => format!("; and {n} more"),
                };
                format!("{kind} ({}): {}{more}", subjects.len(), subjects[..shown].join("; "))
            }
            _ => members[0].text.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_kind_and_the_rest_in_full() {
        let w = vec![
            Warning::from("zfs: unavailable".to_string()),
            Warning::of_kind("noisy", "a (ext4 12 %)", "a: noisy (ext4 12 %)"),
            Warning::of_kind("first-run", "b (xfs 3)", "b: first (xfs 3)"),
            Warning::of_kind("noisy", "c (xfs 11 %)", "c: noisy (xfs 11 %)"),
        ];
        assert_eq!(
            grouped(&w),
            [
                "zfs: unavailable",
                "noisy (2): a (ext4 12 %); c (xfs 11 %)",
                "b: first (xfs 3)"
            ]
        );
        // The text is the whole warning; JSON keeps only it.
        assert!(w[1].contains("noisy (ext4"));
        let json = serde_json::to_string(&w).unwrap();
        assert_eq!(
            json,
            r#"["zfs: unavailable","a: noisy (ext4 12 %)","b: first (xfs 3)","c: noisy (xfs 11 %)"]"#
        );
        let many: Vec<Warning> = (0..9)
            .map(|i| Warning::of_kind("k", format!("c{i}"), format!("c{i}: k")))
            .collect();
        assert_eq!(grouped(&many), ["k (9): c0; c1; c2; c3; c4; c5; and 3 more"]);
        let twice = vec![
            Warning::of_kind("k", "ext4 / volatile", "repeat 1"),
            Warning::of_kind("k", "ext4 / volatile", "repeat 2"),
            Warning::of_kind("k", "xfs / volatile", "repeat 1"),
        ];
        assert_eq!(grouped(&twice), ["k (2): ext4 / volatile; xfs / volatile"]);
        let back: Vec<Warning> = serde_json::from_str(&json).unwrap();
        assert_eq!(grouped(&back).len(), 4, "kinds are not stored: each in full");
    }
}
