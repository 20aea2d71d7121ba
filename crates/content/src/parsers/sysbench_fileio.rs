//! `sysbench fileio … run` output (sysbench 1.0), read into a [`FileioReport`].
//!
//! The part of the report read here (captured from sysbench 1.0.20 for every
//! `--file-test-mode` in `tests/fixtures/sysbench_fileio/`):
//!
//! ```text
//! File operations:
//!     reads/s:                      97.09
//!     writes/s:                     64.73
//!     fsyncs/s:                     9.71
//! Throughput:
//!     read, MiB/s:                  1.52
//!     written, MiB/s:               1.01
//! General statistics:
//!     total time:                          1.2350s
//!     total number of events:              208
//! Latency (ms):
//!          min:                                    0.00
//!          avg:                                    5.10
//!          max:                                  370.43
//!          95th percentile:                        0.02
//! ```
//!
//! Invariants: every number is sysbench's. Latencies are milliseconds in the text (two
//! decimals, so anything under 5 µs prints as 0.00) and microseconds here; they are per event,
//! and sysbench counts an fsync as an event. The percentile line is absent with
//! `--percentile=0` ([`FileioReport::lat_p95_us`] is then `None`). A missing or unreadable
//! line is a [`ParseError`], never a zero.

use super::sysbench::parse_version;
use super::{number_after, ParseError};

const TOOL: &str = "sysbench fileio";

/// The summary of one `sysbench fileio run`.
#[derive(Clone, Debug, PartialEq)]
pub struct FileioReport {
    /// `sysbench 1.0.20` from the banner, when present.
    pub version: Option<String>,
    /// Reads per second.
    pub reads_per_s: f64,
    /// Writes per second.
    pub writes_per_s: f64,
    /// fsyncs per second.
    pub fsyncs_per_s: f64,
    /// Read bandwidth, MiB/s.
    pub read_mib_s: f64,
    /// Write bandwidth, MiB/s.
    pub write_mib_s: f64,
    /// Length of the run, seconds.
    pub total_time_s: f64,
    /// Events (reads, writes and fsyncs) completed.
    pub events: u64,
    /// Per-event latency, µs: minimum, average, maximum.
    pub lat_min_us: f64,
    /// Average latency, µs.
    pub lat_avg_us: f64,
    /// Maximum latency, µs.
    pub lat_max_us: f64,
    /// The `--percentile` (95 by default) latency, µs, when printed.
    pub lat_p95_us: Option<f64>,
}

/// Reads the standard output of `sysbench fileio … run`.
pub fn parse(text: &str) -> Result<FileioReport, ParseError> {
    let ms = |label: &'static str| number_after(TOOL, text, label).map(|v| v * 1000.0);
    // The latency block comes last: its absence is what a truncated report shows first.
    let lat_max_us = ms("max:")?;
    let events = number_after(TOOL, text, "total number of events:")?;
    Ok(FileioReport {
        version: parse_version(text),
        reads_per_s: number_after(TOOL, text, "reads/s:")?,
        writes_per_s: number_after(TOOL, text, "writes/s:")?,
        fsyncs_per_s: number_after(TOOL, text, "fsyncs/s:")?,
        read_mib_s: number_after(TOOL, text, "read, MiB/s:")?,
        write_mib_s: number_after(TOOL, text, "written, MiB/s:")?,
        total_time_s: number_after(TOOL, text, "total time:")?,
        events: events as u64,
        lat_min_us: ms("min:")?,
        lat_avg_us: ms("avg:")?,
        lat_max_us,
        lat_p95_us: if text.contains("95th percentile:") {
            Some(ms("95th percentile:")?)
        } else {
            None
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(mode: &str) -> String {
        let p = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/sysbench_fileio")
            .join(format!("sysbench-1.0.20-{mode}.txt"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn rndrw_has_reads_writes_and_fsyncs() {
        let r = parse(&fixture("rndrw")).expect("parses");
        assert_eq!(r.version.as_deref(), Some("sysbench 1.0.20"));
        assert_eq!((r.reads_per_s, r.writes_per_s, r.fsyncs_per_s), (97.09, 64.73, 9.71));
        assert_eq!((r.read_mib_s, r.write_mib_s), (1.52, 1.01));
        assert_eq!(r.events, 208);
        assert!((r.total_time_s - 1.235).abs() < 1e-9);
        assert!((r.lat_max_us - 370_430.0).abs() < 1e-6, "{r:?}");
        assert!((r.lat_avg_us - 5_100.0).abs() < 1e-6, "{r:?}");
        assert!((r.lat_p95_us.unwrap() - 20.0).abs() < 1e-6, "{r:?}");
    }

    #[test]
    fn every_mode_parses_with_its_direction() {
        for mode in ["seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw"] {
            let r = parse(&fixture(mode)).unwrap_or_else(|e| panic!("{mode}: {e}"));
            let reads = mode.ends_with("rd") || mode == "rndrw";
            let writes = mode.contains("wr") || mode == "rndrw";
            assert_eq!(r.reads_per_s > 0.0, reads, "{mode}: {r:?}");
            assert_eq!(r.writes_per_s > 0.0, writes, "{mode}: {r:?}");
            assert!(
                r.lat_min_us <= r.lat_avg_us && r.lat_avg_us <= r.lat_max_us,
                "{mode}: {r:?}"
            );
        }
    }

    #[test]
    fn truncated_and_foreign_output_are_errors() {
        let full = fixture("rndrd");
        let at = full.find("Latency (ms)").expect("latency block");
        for cut in [0, full.len() / 4, at, at + 60] {
            let e = parse(&full[..cut]).unwrap_err();
            assert!(matches!(e, ParseError::Missing { .. }), "cut at {cut}: {e}");
        }
        let garbled = full.replacen("reads/s:", "reads/s: n/a", 1);
        assert!(matches!(parse(&garbled), Err(ParseError::BadValue { .. })));
        // What sysbench 1.0.20 prints for a missing prepare (it exits 1).
        let e = parse("FATAL: Cannot open file 'test_file.0' errno = 2 (No such file or directory)\n").unwrap_err();
        assert!(e.to_string().contains("FATAL"), "{e}");
        let no_pct: String = full
            .lines()
            .filter(|l| !l.contains("percentile"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(parse(&no_pct).expect("parses").lat_p95_us, None);
    }
}
