//! PostMark 1.51's verbose report (Jeffrey Katcher's mail-server benchmark, Debian package
//! `postmark`), read into a [`PostmarkReport`].
//!
//! The report (captured from PostMark v1.51 in `tests/fixtures/postmark/`):
//!
//! ```text
//! Time:
//!     3 seconds total
//!     2 seconds of transactions (10000 per second)
//! Files:
//!     11979 created (3993 per second)
//!         Creation alone: 2000 files (2000 per second)
//!         Mixed with transactions: 9979 files (4989 per second)
//!     9963 read (4981 per second)
//!     9981 appended (4990 per second)
//!     11979 deleted (3993 per second)
//!         Deletion alone: 1958 files (1958 per second)
//!         Mixed with transactions: 10021 files (5010 per second)
//! Data:
//!     63.46 megabytes read (21.15 megabytes per second)
//!     76.65 megabytes written (25.55 megabytes per second)
//! ```
//!
//! Invariants: every number is PostMark's. PostMark times with `time(2)`, in whole seconds,
//! and divides by them: its rates are coarse unless a run lasts many seconds
//! ([`PostmarkReport::total_s`] says how long it was). Its data sizes are scaled to `bytes`,
//! `kilobytes`, `megabytes` or `gigabytes` of 1024; they are returned in MiB/s. A report
//! without the `Data:` block (truncated) is a [`ParseError`].

use super::{paren_number_after, ParseError};

const TOOL: &str = "postmark";

/// PostMark's summary.
#[derive(Clone, Debug, PartialEq)]
pub struct PostmarkReport {
    /// `v1.51`, from the banner.
    pub version: Option<String>,
    /// The whole run, whole seconds.
    pub total_s: f64,
    /// Transactions per second.
    pub transactions_per_s: f64,
    /// Files created per second in the creation stage alone.
    pub creates_per_s: f64,
    /// Files read per second (transactions).
    pub reads_per_s: f64,
    /// Files appended per second (transactions).
    pub appends_per_s: f64,
    /// Files deleted per second in the deletion stage alone.
    pub deletes_per_s: f64,
    /// Read bandwidth over the whole run, MiB/s.
    pub read_mib_s: f64,
    /// Write bandwidth over the whole run, MiB/s.
    pub write_mib_s: f64,
}

/// The version in PostMark's banner (`PostMark v1.51 : 8/14/01`).
pub fn version(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("PostMark "))
        .and_then(|r| r.split_whitespace().next())
        .map(str::to_string)
}

/// `(… <unit>s per second)` of the line with `label` in MiB/s.
fn data_rate(text: &str, label: &'static str) -> Result<f64, ParseError> {
    let line = text
        .lines()
        .find(|l| l.contains(label))
        .ok_or_else(|| ParseError::missing(TOOL, label, text))?;
    let inner = line.split_once('(').map(|(_, r)| r).unwrap_or("");
    let mut it = inner.split_whitespace();
    let (v, unit) = (it.next().unwrap_or(""), it.next().unwrap_or(""));
    let scale = match unit {
        "bytes" => 1.0,
        "kilobytes" => 1024.0,
        "megabytes" => 1024.0 * 1024.0,
        "gigabytes" => 1024.0 * 1024.0 * 1024.0,
        _ => f64::NAN,
    };
    v.parse::<f64>()
        .ok()
        .map(|v| v * scale / (1024.0 * 1024.0))
        .filter(|v| v.is_finite())
        .ok_or_else(|| ParseError::BadValue {
            tool: TOOL,
            field: label,
            value: line.trim().to_string(),
        })
}

/// Reads PostMark's standard output (the verbose report, PostMark's default).
pub fn parse(text: &str) -> Result<PostmarkReport, ParseError> {
    // The data block comes last: a truncated report is missing it first.
    let data = text
        .split_once("\nData:")
        .map(|(_, r)| r)
        .ok_or_else(|| ParseError::missing(TOOL, "Data:", text))?;
    let write_mib_s = data_rate(data, "written (")?;
    let files = text
        .split_once("\nFiles:")
        .map(|(_, r)| r)
        .ok_or_else(|| ParseError::missing(TOOL, "Files:", text))?;
    Ok(PostmarkReport {
        version: version(text),
        total_s: {
            let l = super::line_with(TOOL, text, "seconds total")?;
            super::finite_number(TOOL, "seconds total", l.split_whitespace().next().unwrap_or(""))?
        },
        transactions_per_s: paren_number_after(TOOL, text, "seconds of transactions")?,
        creates_per_s: paren_number_after(TOOL, files, "Creation alone:")?,
        reads_per_s: paren_number_after(TOOL, files, " read (")?,
        appends_per_s: paren_number_after(TOOL, files, "appended (")?,
        deletes_per_s: paren_number_after(TOOL, files, "Deletion alone:")?,
        read_mib_s: data_rate(data, "read (")?,
        write_mib_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/postmark")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn reads_rates_and_bandwidth() {
        let r = parse(&fixture("postmark-1.51-2000files-4dirs.txt")).expect("parses");
        assert_eq!(r.version.as_deref(), Some("v1.51"));
        assert_eq!(r.total_s, 3.0);
        assert_eq!(r.transactions_per_s, 10000.0);
        assert_eq!((r.creates_per_s, r.deletes_per_s), (2000.0, 1958.0));
        assert_eq!((r.reads_per_s, r.appends_per_s), (4981.0, 4990.0));
        assert!(
            (r.read_mib_s - 21.15).abs() < 1e-9 && (r.write_mib_s - 25.55).abs() < 1e-9,
            "{r:?}"
        );
        let small = parse(&fixture("postmark-1.51-500files.txt")).expect("parses");
        assert_eq!(small.total_s, 1.0);
        assert!((small.read_mib_s - 5.96).abs() < 1e-9);
    }

    #[test]
    fn units_and_bad_output() {
        let full = fixture("postmark-1.51-500files.txt");
        let kb = full.replace("5.96 megabytes per second", "512.00 kilobytes per second");
        assert!((parse(&kb).unwrap().read_mib_s - 0.5).abs() < 1e-12);
        for cut in [0, full.len() / 2, full.len() - 30] {
            assert!(parse(&full[..cut]).is_err(), "cut at {cut}");
        }
        let odd = full.replace("5.96 megabytes per second", "5.96 parsecs per second");
        assert!(matches!(parse(&odd), Err(ParseError::BadValue { .. })));
    }
}
