//! dbench 4's report (Andrew Tridgell's dbench, Debian package `dbench`, running its loadfile
//! `client.txt`), read into a [`DbenchReport`].
//!
//! The part read (captured from dbench 4.00 in `tests/fixtures/dbench/`):
//!
//! ```text
//!  Operation      Count    AvgLat    MaxLat
//!  ----------------------------------------
//!  NTCreateX       5586     0.024    20.090
//!  …
//!  Flush            406    13.657   118.854
//!
//! Throughput 78.5966 MB/sec  2 clients  2 procs  max_latency=118.862 ms
//! ```
//!
//! Invariants: every number is dbench's. Its `MB/sec` is 10^6 bytes per second (dbench
//! computes `1.0e-6 * bytes / seconds`) and is returned in MiB/s; latencies are milliseconds
//! in the text and µs here. The per-operation table lists the loadfile's operations in
//! dbench's order; an operation never issued (count 0) is left out. A report without the
//! `Throughput` line (a truncated run, a client that failed) is a [`ParseError`].

use super::{number_after, ParseError};

const TOOL: &str = "dbench";

/// One row of dbench's per-operation table.
#[derive(Clone, Debug, PartialEq)]
pub struct DbenchOp {
    /// Operation name as dbench prints it (`NTCreateX`, `ReadX`, `Flush`, …).
    pub name: String,
    /// Operations issued after the warmup.
    pub count: u64,
    /// Average latency, µs.
    pub avg_us: f64,
    /// Largest latency, µs.
    pub max_us: f64,
}

/// dbench's summary.
#[derive(Clone, Debug, PartialEq)]
pub struct DbenchReport {
    /// `4.00`, from the banner.
    pub version: Option<String>,
    /// Throughput, MiB/s.
    pub throughput_mib_s: f64,
    /// Clients.
    pub clients: u32,
    /// Largest latency of any operation, µs.
    pub max_latency_us: f64,
    /// The per-operation table, in dbench's order.
    pub ops: Vec<DbenchOp>,
}

/// The version in dbench's banner (`dbench version 4.00 - Copyright …`).
pub fn version(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("dbench version "))
        .and_then(|r| r.split_whitespace().next())
        .map(str::to_string)
}

/// Reads dbench's standard output.
pub fn parse(text: &str) -> Result<DbenchReport, ParseError> {
    let mb_s = number_after(TOOL, text, "Throughput ")?;
    let line = text.lines().find(|l| l.starts_with("Throughput ")).unwrap_or_default();
    let bad = |field: &'static str| ParseError::BadValue {
        tool: TOOL,
        field,
        value: line.to_string(),
    };
    let clients = line
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .find(|w| w[1] == "clients")
        .and_then(|w| w[0].parse::<u32>().ok())
        .ok_or_else(|| bad("clients"))?;
    let max_ms = line
        .split_once("max_latency=")
        .and_then(|(_, r)| r.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .ok_or_else(|| bad("max_latency"))?;
    let table = text
        .split_once(" ----------------------------------------")
        .map(|(_, r)| r)
        .ok_or_else(|| ParseError::missing(TOOL, "Operation table", text))?;
    let mut ops = Vec::new();
    // The table starts right after the rule and ends at the first blank line.
    for l in table
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
    {
        let f: Vec<&str> = l.split_whitespace().collect();
        let [name, count, avg, max] = f[..] else {
            return Err(ParseError::BadValue {
                tool: TOOL,
                field: "Operation table",
                value: l.to_string(),
            });
        };
        let num = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
        let (Some(c), Some(a), Some(m)) = (count.parse::<u64>().ok(), num(avg), num(max)) else {
            return Err(ParseError::BadValue {
                tool: TOOL,
                field: "Operation table",
                value: l.to_string(),
            });
        };
        if c > 0 {
            ops.push(DbenchOp {
                name: name.to_string(),
                count: c,
                avg_us: a * 1000.0,
                max_us: m * 1000.0,
            });
        }
    }
    Ok(DbenchReport {
        version: version(text),
        throughput_mib_s: mb_s * 1e6 / (1024.0 * 1024.0),
        clients,
        max_latency_us: max_ms * 1000.0,
        ops,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> String {
        let p = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/dbench/dbench-4.00-client-2procs.txt");
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn reads_throughput_and_the_operation_table() {
        let r = parse(&fixture()).expect("parses");
        assert_eq!(r.version.as_deref(), Some("4.00"));
        assert!((r.throughput_mib_s - 78.5966e6 / 1048576.0).abs() < 1e-9, "{r:?}");
        assert_eq!(r.clients, 2);
        assert!((r.max_latency_us - 118_862.0).abs() < 1e-6);
        assert_eq!(r.ops.len(), 16);
        assert_eq!(r.ops[0].name, "NTCreateX");
        assert_eq!(r.ops[0].count, 5586);
        assert!((r.ops[0].avg_us - 24.0).abs() < 1e-9 && (r.ops[0].max_us - 20_090.0).abs() < 1e-6);
        let flush = r.ops.iter().find(|o| o.name == "Flush").unwrap();
        assert!((flush.max_us - 118_854.0).abs() < 1e-6);
    }

    #[test]
    fn truncated_or_failed_runs_are_errors() {
        let full = fixture();
        let at = full.find("Throughput").unwrap();
        for cut in [0, full.len() / 2, at, at + 12] {
            assert!(parse(&full[..cut]).is_err(), "cut at {cut}");
        }
        // What dbench 4.00 printed when its directory was missing (it exited 1).
        let failed = "releasing clients\n[3] open /nonexistent/dir/clients/client0 failed for handle 16385 (No such file or directory)\nChild failed with status 1\n";
        assert!(matches!(parse(failed), Err(ParseError::Missing { .. })));
        let garbled = full.replacen(" NTCreateX       5586", " NTCreateX       55x6", 1);
        assert!(matches!(parse(&garbled), Err(ParseError::BadValue { .. })));
    }
}
