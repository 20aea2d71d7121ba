//! PostgreSQL pgbench output (pgbench 15).
//!
//! The summary pgbench prints after a run (captured in `tests/fixtures/pgbench-15-*.txt` on
//! this machine):
//!
//! ```text
//! pgbench (15.18 (Debian 15.18-0+deb12u1))
//! transaction type: <builtin: TPC-B (sort of)>
//! number of clients: 2
//! number of threads: 2
//! number of transactions actually processed: 20311
//! number of failed transactions: 0 (0.000%)
//! latency average = 0.492 ms
//! tps = 4064.739649 (without initial connection time)
//! ```
//!
//! pgbench prints no latency percentiles without per-transaction logging, so only the mean is
//! read; its latency is in milliseconds in the text and microseconds in [`PgbenchReport`].

use super::{number_after, ParseError};

const TOOL: &str = "pgbench";

/// The summary of one pgbench run.
#[derive(Clone, Debug, PartialEq)]
pub struct PgbenchReport {
    /// `pgbench 15.18 (…)` from the banner, when present.
    pub version: Option<String>,
    /// The transaction script (`<builtin: TPC-B (sort of)>`).
    pub transaction_type: String,
    /// Client connections.
    pub clients: u32,
    /// Transactions completed.
    pub transactions: u64,
    /// Transactions that failed (serialization or deadlock errors with retries exhausted).
    pub failed: u64,
    /// Mean transaction latency, µs.
    pub lat_avg_us: f64,
    /// Transactions per second, without the initial connection time.
    pub tps: f64,
}

/// Parses pgbench's end-of-run summary.
pub fn parse(text: &str) -> Result<PgbenchReport, ParseError> {
    let version = text.lines().find(|l| l.starts_with("pgbench (")).map(|l| {
        let inner = l.trim_start_matches("pgbench (");
        format!("pgbench {}", inner.strip_suffix(')').unwrap_or(inner))
    });
    let transaction_type = text
        .lines()
        .find_map(|l| l.strip_prefix("transaction type:"))
        .map(|s| s.trim().to_string())
        .ok_or_else(|| ParseError::missing(TOOL, "transaction type:", text))?;
    let failed = if text.contains("number of failed transactions:") {
        number_after(TOOL, text, "number of failed transactions:")? as u64
    } else {
        0 // pgbench before 15 did not print the line
    };
    Ok(PgbenchReport {
        version,
        transaction_type,
        clients: number_after(TOOL, text, "number of clients:")? as u32,
        transactions: number_after(TOOL, text, "number of transactions actually processed:")? as u64,
        failed,
        lat_avg_us: number_after(TOOL, text, "latency average =")? * 1000.0,
        tps: number_after(TOOL, text, "tps =")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tpcb_and_select_only_fixtures() {
        let r = parse(include_str!("../../../../tests/fixtures/pgbench-15-tpcb.txt")).expect("parse");
        assert_eq!(r.version.as_deref(), Some("pgbench 15.18 (Debian 15.18-0+deb12u1)"));
        assert_eq!(r.transaction_type, "<builtin: TPC-B (sort of)>");
        assert_eq!((r.clients, r.transactions, r.failed), (2, 20311, 0));
        assert!((r.lat_avg_us - 492.0).abs() < 1e-6);
        assert_eq!(r.tps, 4064.739649);

        let s = parse(include_str!("../../../../tests/fixtures/pgbench-15-select-only.txt")).expect("parse");
        assert_eq!(s.transaction_type, "<builtin: select only>");
        assert_eq!(s.transactions, 184492);
        assert!((s.lat_avg_us - 33.0).abs() < 1e-6);
    }

    #[test]
    fn errors_name_the_field() {
        assert!(matches!(
            parse("pgbench: error: connection to server failed"),
            Err(ParseError::Missing {
                field: "transaction type:",
                ..
            })
        ));
        let cut = "transaction type: <builtin: select only>\nnumber of clients: 2\n";
        assert!(matches!(
            parse(cut),
            Err(ParseError::Missing {
                field: "number of transactions actually processed:",
                ..
            })
        ));
    }
}
