//! sysbench 1.0 OLTP output (`oltp_read_only`, `oltp_read_write`, … `run`).
//!
//! The report sysbench 1.0.20 prints at the end of a run (captured in
//! `tests/fixtures/sysbench-1.0.20-*.txt` from MariaDB 10.11 and PostgreSQL 15 on this machine):
//!
//! ```text
//! SQL statistics:
//!     queries performed:
//!         read:                            397712
//!         write:                           0
//!         other:                           56816
//!         total:                           454528
//!     transactions:                        28408  (5679.74 per sec.)
//!     queries:                             454528 (90875.92 per sec.)
//!     ignored errors:                      0      (0.00 per sec.)
//!     reconnects:                          0      (0.00 per sec.)
//! General statistics:
//!     total time:                          5.0005s
//!     total number of events:              28408
//! Latency (ms):
//!          min:                                    0.30
//!          avg:                                    0.35
//!          max:                                   11.24
//!          95th percentile:                        0.39
//!          sum:                                 9979.78
//! ```
//!
//! `queries` counts BEGIN and COMMIT as `other` queries, so qps = 16 × tps for
//! `oltp_read_only` and 20 × tps for `oltp_read_write` with the default options. The percentile
//! line is absent with `--percentile=0`. Latencies are milliseconds in the text and
//! microseconds in [`OltpReport`].

use super::{number_after, paren_number_after, ParseError};

const TOOL: &str = "sysbench";

/// The summary of one `sysbench oltp_* run`.
#[derive(Clone, Debug, PartialEq)]
pub struct OltpReport {
    /// `sysbench 1.0.20` from the banner, when present.
    pub version: Option<String>,
    /// Transactions (events) completed.
    pub transactions: u64,
    /// Transactions per second as sysbench computed them.
    pub tps: f64,
    /// Queries (reads + writes + other) completed.
    pub queries: u64,
    /// Queries per second.
    pub qps: f64,
    /// Read queries.
    pub reads: u64,
    /// Write queries.
    pub writes: u64,
    /// Errors sysbench ignored and retried (deadlocks, serialization failures).
    pub ignored_errors: u64,
    /// Reconnects.
    pub reconnects: u64,
    /// Length of the run, seconds.
    pub total_time_s: f64,
    /// Minimum transaction latency, µs.
    pub lat_min_us: f64,
    /// Mean transaction latency, µs.
    pub lat_avg_us: f64,
    /// Maximum transaction latency, µs.
    pub lat_max_us: f64,
    /// `(percentile, latency µs)`, e.g. `(95, 390.0)`, unless percentiles were disabled.
    pub lat_pct: Option<(u32, f64)>,
}

/// The version in sysbench's banner line (`sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)`).
pub fn parse_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("sysbench "))?;
    let v = line.split_whitespace().nth(1)?;
    v.chars().next()?.is_ascii_digit().then(|| format!("sysbench {v}"))
}

fn count(text: &str, label: &'static str) -> Result<u64, ParseError> {
    let v = number_after(TOOL, text, label)?;
    if v < 0.0 || v.fract() != 0.0 {
        return Err(ParseError::BadValue {
            tool: TOOL,
            field: label,
            value: v.to_string(),
        });
    }
    Ok(v as u64)
}

/// Parses the final report of an OLTP run.
pub fn parse_oltp(text: &str) -> Result<OltpReport, ParseError> {
    // Only the final report: everything after "SQL statistics:" (progress lines with
    // --report-interval come before it and also contain "tps:").
    let report = match text.find("SQL statistics:") {
        Some(i) => &text[i..],
        None => return Err(ParseError::missing(TOOL, "SQL statistics:", text)),
    };
    let ms = |label: &'static str| number_after(TOOL, report, label).map(|v| v * 1000.0);
    let lat_pct = match report.lines().find(|l| l.contains("th percentile:")) {
        Some(line) => {
            let pct: u32 = line
                .trim()
                .split("th percentile:")
                .next()
                .and_then(|p| p.trim().parse().ok())
                .ok_or_else(|| ParseError::BadValue {
                    tool: TOOL,
                    field: "th percentile:",
                    value: line.trim().to_string(),
                })?;
            Some((pct, ms("th percentile:")?))
        }
        None => None,
    };
    Ok(OltpReport {
        version: parse_version(text),
        transactions: count(report, "transactions:")?,
        tps: paren_number_after(TOOL, report, "transactions:")?,
        queries: count(report, "    queries:")?,
        qps: paren_number_after(TOOL, report, "    queries:")?,
        reads: count(report, "read:")?,
        writes: count(report, "write:")?,
        ignored_errors: count(report, "ignored errors:")?,
        reconnects: count(report, "reconnects:")?,
        total_time_s: number_after(TOOL, report, "total time:")?,
        lat_min_us: ms("min:")?,
        lat_avg_us: ms("avg:")?,
        lat_max_us: ms("max:")?,
        lat_pct,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RO_MARIADB: &str =
        include_str!("../../../../tests/fixtures/sysbench-1.0.20-oltp_read_only-mariadb-10.11.txt");
    const RW_MARIADB: &str =
        include_str!("../../../../tests/fixtures/sysbench-1.0.20-oltp_read_write-mariadb-10.11.txt");
    const RO_PG: &str = include_str!("../../../../tests/fixtures/sysbench-1.0.20-oltp_read_only-postgresql-15.txt");
    const RW_PG: &str = include_str!("../../../../tests/fixtures/sysbench-1.0.20-oltp_read_write-postgresql-15.txt");

    #[test]
    fn read_only_against_mariadb() {
        let r = parse_oltp(RO_MARIADB).expect("parse");
        assert_eq!(r.version.as_deref(), Some("sysbench 1.0.20"));
        assert_eq!(r.transactions, 28408);
        assert_eq!(r.tps, 5679.74);
        assert_eq!((r.queries, r.reads, r.writes), (454528, 397712, 0));
        assert_eq!(r.qps, 90875.92);
        assert_eq!((r.ignored_errors, r.reconnects), (0, 0));
        assert_eq!(r.total_time_s, 5.0005);
        assert!((r.lat_min_us - 300.0).abs() < 1e-6);
        assert!((r.lat_avg_us - 350.0).abs() < 1e-6);
        assert!((r.lat_max_us - 11240.0).abs() < 1e-6);
        let (pct, p95) = r.lat_pct.expect("percentile");
        assert_eq!(pct, 95);
        assert!((p95 - 390.0).abs() < 1e-6);
        // 14 reads + BEGIN + COMMIT per read-only transaction.
        assert_eq!(r.queries, 16 * r.transactions);
    }

    #[test]
    fn read_write_against_mariadb_and_postgresql() {
        let m = parse_oltp(RW_MARIADB).expect("parse");
        assert_eq!((m.transactions, m.tps), (7966, 1592.50));
        assert_eq!(m.queries, 20 * m.transactions);
        assert_eq!(m.writes, 4 * m.transactions);
        assert!((m.lat_max_us - 148_330.0).abs() < 1e-6);

        let p = parse_oltp(RW_PG).expect("parse");
        assert_eq!((p.transactions, p.tps, p.qps), (3722, 742.30, 14856.77));
        // PostgreSQL reports deadlocks that sysbench ignores and retries.
        assert_eq!(p.ignored_errors, 3);
        assert!((p.lat_pct.expect("p95").1 - 8430.0).abs() < 1e-6);

        let ro = parse_oltp(RO_PG).expect("parse");
        assert_eq!((ro.transactions, ro.tps), (11781, 3923.33));
    }

    #[test]
    fn garbage_and_truncated_outputs_are_errors() {
        assert!(matches!(
            parse_oltp("FATAL: unable to connect to MySQL server on socket"),
            Err(ParseError::Missing {
                field: "SQL statistics:",
                ..
            })
        ));
        let cut = &RO_MARIADB[..RO_MARIADB.find("Latency").expect("latency section")];
        assert!(matches!(
            parse_oltp(cut),
            Err(ParseError::Missing { field: "min:", .. })
        ));
        let no_pct = RO_MARIADB.replace("         95th percentile:                        0.39\n", "");
        assert_eq!(parse_oltp(&no_pct).expect("parse").lat_pct, None);
        assert_eq!(parse_version("nothing"), None);
    }
}
