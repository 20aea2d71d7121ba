//! Adapters for external benchmark tools whose output fsbench turns into the same metrics as
//! its native workloads (doc/architecture.md, the `parsers` row).
//!
//! Each adapter is a pure parser from the tool's text output to a typed summary, so it can be
//! tested on real outputs captured on this machine (`tests/fixtures/`), plus the small helpers
//! that build the tool's command line. Running the tools is left to the workload that needs
//! them (for example [`crate::engine::workloads::oltp`], which also starts the database
//! server). Parsers never panic; missing or malformed fields are a [`ParseError`] naming the
//! field, so a changed output format is reported rather than read as zero.
//!
//! - [`sysbench`]: sysbench 1.0 OLTP scripts (`oltp_read_only`, `oltp_read_write`, …) against
//!   MariaDB/MySQL or PostgreSQL.
//! - [`pgbench`]: PostgreSQL's pgbench (TPC-B-like and select-only built-ins).
//! - [`fio`]: fio's `--output-format=json+` report (every job and direction).
//! - [`bonnie_pp`]: bonnie++'s CSV line (`+++++` as "too fast to time", latencies).
//! - [`sysbench_fileio`]: `sysbench fileio run`'s report (rates, bandwidth, latency).
//! - [`dbench`]: dbench 4's throughput and per-operation latency table.
//! - [`postmark`]: PostMark 1.51's verbose report (transaction and file rates, bandwidth).
//! - [`strace`]: strace 6.x `-f -ttt -T -y` output, the system calls `fsbench record` turns into a
//!   trace ([`crate::trace`]).
//! - [`mkfs_params`]: a filesystem's creation parameters read back (`dumpe2fs -h`, `xfs_info`,
//!   `btrfs inspect-internal dump-super`, `zfs get`), and the mkfs options that ask for them.

pub mod bonnie_pp;
pub mod dbench;
pub mod fio;
pub mod mkfs_params;
pub mod pgbench;
pub mod postmark;
pub mod strace;
pub mod sysbench;
pub mod sysbench_fileio;

/// Why a tool's output could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A field the parser needs is not in the output.
    #[error("{tool} output has no `{field}` line (is this {tool}'s report? first line: {first_line:?})")]
    Missing {
        /// The tool.
        tool: &'static str,
        /// The label that was looked for.
        field: &'static str,
        /// The output's first line, to show what was there instead.
        first_line: String,
    },
    /// A field is present but its value is not a number.
    #[error("{tool} output: `{field}` has an unreadable value {value:?}")]
    BadValue {
        /// The tool.
        tool: &'static str,
        /// The label.
        field: &'static str,
        /// The text found.
        value: String,
    },
}

impl ParseError {
    /// [`ParseError::Missing`] for `field` in `text`, quoting the first 80 characters of the
    /// output's first line.
    pub(crate) fn missing(tool: &'static str, field: &'static str, text: &str) -> Self {
        ParseError::Missing {
            tool,
            field,
            first_line: text.lines().next().unwrap_or("").chars().take(80).collect(),
        }
    }
}

/// The first line of `text` containing `label`, or [`ParseError::Missing`].
fn line_with<'t>(tool: &'static str, text: &'t str, label: &'static str) -> Result<&'t str, ParseError> {
    text.lines()
        .find(|l| l.contains(label))
        .ok_or_else(|| ParseError::missing(tool, label, text))
}

/// `token` as a finite number, or [`ParseError::BadValue`] for `label`.
fn finite_number(tool: &'static str, label: &'static str, token: &str) -> Result<f64, ParseError> {
    token
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| ParseError::BadValue {
            tool,
            field: label,
            value: token.to_string(),
        })
}

/// The first whitespace-separated token after `label` on the first line containing `label`,
/// parsed as a number (thousands separators are not used by these tools; a trailing `s`, as
/// in `5.0005s`, is ignored).
pub(crate) fn number_after(tool: &'static str, text: &str, label: &'static str) -> Result<f64, ParseError> {
    let line = line_with(tool, text, label)?;
    let rest = &line[line.find(label).map_or(0, |i| i + label.len())..];
    let token = rest.split_whitespace().next().unwrap_or("");
    // sysbench prints `total time: 5.0005s`: a unit letter glued to the number.
    let token = token.trim_start_matches('(').trim_end_matches('s');
    finite_number(tool, label, token)
}

/// The number inside the first parenthesis after `label`, e.g. `(5679.74 per sec.)`.
pub(crate) fn paren_number_after(tool: &'static str, text: &str, label: &'static str) -> Result<f64, ParseError> {
    let line = line_with(tool, text, label)?;
    let inner = line
        .split_once('(')
        .map(|(_, r)| r.split_whitespace().next().unwrap_or(""))
        .unwrap_or("");
    finite_number(tool, label, inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_find_numbers_and_name_missing_fields() {
        let t = "x\n    transactions:   28408  (5679.74 per sec.)\n    total time:   5.0005s\n";
        assert_eq!(number_after("t", t, "transactions:"), Ok(28408.0));
        assert_eq!(number_after("t", t, "total time:"), Ok(5.0005));
        assert_eq!(paren_number_after("t", t, "transactions:"), Ok(5679.74));
        match number_after("t", t, "queries:") {
            Err(ParseError::Missing { field, first_line, .. }) => {
                assert_eq!(field, "queries:");
                assert_eq!(first_line, "x");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            number_after("t", "total time: soon\n", "total time:"),
            Err(ParseError::BadValue { .. })
        ));
    }
}
