//! bonnie++'s CSV line (`-q` puts it alone on standard output), read into one [`BonnieColumn`]
//! per test that ran.
//!
//! The line's format is bonnie++'s `1.98` CSV (bonnie++ 1.98 to 2.00a; `bon_csv2html(1)`), 50
//! comma-separated fields: format and bonnie++ version, machine name, concurrency, seed, file
//! size, chunk size, seeks, seeker processes; then value and %CPU of putc, block write,
//! rewrite, getc, block read, seeks; file count, max and min size, directories, file chunk
//! size; value and %CPU of sequential create, read (stat), delete, random create, read,
//! delete; then the twelve latencies in the same test order.
//!
//! Invariants: every number is bonnie++'s, nothing is re-timed. The I/O columns are KiB/s
//! (returned as MiB/s), seeks and file columns per second. `+++++` (value) and `+++` (%CPU) are
//! bonnie++'s "the test ran in under 0.5 s, too fast to time" and become
//! [`Value::TooFast`], never a number. A test left out (`-s 0`, `-n 0`, `-f`) has empty fields
//! and no column. A latency is the longest single operation of the test, written with a unit
//! (`us`, `ms`, `s`) and returned in µs. A format other than `1.98`, a short line or an
//! unreadable number is a [`ParseError`], never a guess.
//!
//! References: bonnie++(8), bon_csv2html(1), bonnie++ 2.00a `bon_io.cpp`/`bonnie++.cpp`
//! (output routines); fixtures captured from bonnie++ 2.00a in `tests/fixtures/bonnie_pp/`.

use super::ParseError;

const TOOL: &str = "bonnie++";
/// Fields in a `1.98` CSV line.
const FIELDS: usize = 50;
/// The CSV format this parser reads.
pub const FORMAT: &str = "1.98";

/// What a column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Amount {
    /// Bytes: the value is a bandwidth (MiB/s).
    Bytes,
    /// Operations (seeks, files): the value is a rate (ops/s).
    Ops,
}

/// bonnie++'s value of a test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A measured rate: MiB/s for [`Amount::Bytes`], ops/s for [`Amount::Ops`].
    Measured(f64),
    /// `+++++`: the test took under 0.5 s, too fast to time; no number.
    TooFast,
}

/// One test of the line.
#[derive(Clone, Debug, PartialEq)]
pub struct BonnieColumn {
    /// fsbench's phase name, the same as the native `bonnie` workload's (`seq_write_char`,
    /// `seq_write_block`, `rewrite`, `seq_read_char`, `seq_read_block`, `random_seeks`,
    /// `seq_create`, `seq_stat`, `seq_delete`, `rand_create`, `rand_stat`, `rand_delete`).
    pub phase: &'static str,
    /// Bytes or operations.
    pub amount: Amount,
    /// The rate, or `+++++`.
    pub value: Value,
    /// bonnie++'s %CPU of the test (of one CPU), `None` for `+++`.
    pub cpu_pct: Option<f64>,
    /// The test's longest operation, µs, when printed.
    pub latency_us: Option<f64>,
}

/// The whole CSV line.
#[derive(Clone, Debug, PartialEq)]
pub struct BonnieReport {
    /// bonnie++'s version (`2.00a`).
    pub version: String,
    /// Tests that ran, in bonnie++'s order.
    pub columns: Vec<BonnieColumn>,
}

/// `(phase, amount, value field, latency field)` in bonnie++'s order; the %CPU is the field
/// after the value.
const COLUMNS: [(&str, Amount, usize, usize); 12] = [
    ("seq_write_char", Amount::Bytes, 9, 38),
    ("seq_write_block", Amount::Bytes, 11, 39),
    ("rewrite", Amount::Bytes, 13, 40),
    ("seq_read_char", Amount::Bytes, 15, 41),
    ("seq_read_block", Amount::Bytes, 17, 42),
    ("random_seeks", Amount::Ops, 19, 43),
    ("seq_create", Amount::Ops, 26, 44),
    ("seq_stat", Amount::Ops, 28, 45),
    ("seq_delete", Amount::Ops, 30, 46),
    ("rand_create", Amount::Ops, 32, 47),
    ("rand_stat", Amount::Ops, 34, 48),
    ("rand_delete", Amount::Ops, 36, 49),
];

/// Every phase bonnie++ can report, in its order.
pub fn all_phases() -> impl Iterator<Item = &'static str> {
    COLUMNS.iter().map(|c| c.0)
}

/// Whether `phase`'s value is bytes (a MiB/s rate) or operations (ops/s); `None` for a phase
/// bonnie++ does not have.
pub fn amount(phase: &str) -> Option<Amount> {
    COLUMNS.iter().find(|c| c.0 == phase).map(|c| c.1)
}

fn bad(field: &'static str, value: &str) -> ParseError {
    ParseError::BadValue {
        tool: TOOL,
        field,
        value: value.to_string(),
    }
}

/// A latency field (`10952us`, `18ms`, `2s`) in µs; empty is `None`.
fn latency_us(field: &'static str, s: &str) -> Result<Option<f64>, ParseError> {
    if s.is_empty() {
        return Ok(None);
    }
    let (num, scale) = if let Some(n) = s.strip_suffix("us") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e6)
    } else {
        return Err(bad(field, s));
    };
    num.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| Some(v * scale))
        .ok_or_else(|| bad(field, s))
}

fn number(field: &'static str, s: &str) -> Result<f64, ParseError> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| bad(field, s))
}

/// Reads bonnie++'s standard output: the last line that starts with the CSV format `1.98,`
/// (with `-q` it is the only one; without, it follows the text report).
pub fn parse(stdout: &str) -> Result<BonnieReport, ParseError> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with(&format!("{FORMAT},")))
        .ok_or_else(|| ParseError::missing(TOOL, "1.98 CSV line", stdout))?;
    let f: Vec<&str> = line.trim_end().split(',').collect();
    if f.len() != FIELDS {
        return Err(bad("CSV line (50 fields)", line));
    }
    let mut columns = Vec::new();
    for (phase, amount, vi, li) in COLUMNS {
        let (v, cpu) = (f[vi], f[vi + 1]);
        if v.is_empty() {
            continue;
        }
        let value = if v.chars().all(|c| c == '+') {
            Value::TooFast
        } else {
            let x = number(phase, v)?;
            Value::Measured(match amount {
                Amount::Bytes => x / 1024.0,
                Amount::Ops => x,
            })
        };
        let cpu_pct = if cpu.is_empty() || cpu.chars().all(|c| c == '+') {
            None
        } else {
            Some(number(phase, cpu)?)
        };
        columns.push(BonnieColumn {
            phase,
            amount,
            value,
            cpu_pct,
            latency_us: latency_us(phase, f[li])?,
        });
    }
    if columns.is_empty() {
        return Err(bad("CSV line (no test ran)", line));
    }
    Ok(BonnieReport {
        version: f[1].to_string(),
        columns,
    })
}

/// The version in bonnie++'s usage text (`Version: 2.00a`; bonnie++ has no `--version`).
pub fn version(usage: &str) -> Option<String> {
    usage
        .lines()
        .find_map(|l| l.trim().strip_prefix("Version:"))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/bonnie_pp")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    fn col<'a>(r: &'a BonnieReport, phase: &str) -> &'a BonnieColumn {
        r.columns
            .iter()
            .find(|c| c.phase == phase)
            .unwrap_or_else(|| panic!("{phase} in {r:?}"))
    }

    #[test]
    fn small_run_has_numbers_and_too_fast_marks() {
        let r = parse(&fixture("bonnie++-2.00a-s64-n1.csv")).expect("parses");
        assert_eq!(r.version, "2.00a");
        assert_eq!(r.columns.len(), 12);
        let c = col(&r, "seq_write_char");
        assert_eq!(c.value, Value::Measured(2032.0 / 1024.0));
        assert_eq!((c.cpu_pct, c.latency_us), (Some(72.0), Some(10952.0)));
        let b = col(&r, "seq_write_block");
        assert_eq!((b.value, b.cpu_pct), (Value::TooFast, None));
        assert_eq!(b.latency_us, Some(18693.0));
        let sc = col(&r, "seq_create");
        assert_eq!((sc.amount, sc.value), (Amount::Ops, Value::Measured(967.0)));
        assert_eq!(col(&r, "rand_delete").latency_us, Some(8273.0));
    }

    #[test]
    fn skipped_tests_have_no_column() {
        let files = parse(&fixture("bonnie++-2.00a-files-only.csv")).expect("parses");
        let names: Vec<&str> = files.columns.iter().map(|c| c.phase).collect();
        assert_eq!(
            names,
            [
                "seq_create",
                "seq_stat",
                "seq_delete",
                "rand_create",
                "rand_stat",
                "rand_delete"
            ]
        );
        assert!(files.columns.iter().all(|c| c.value == Value::TooFast));
        let nochar = parse(&fixture("bonnie++-2.00a-no-char.csv")).expect("parses");
        let names: Vec<&str> = nochar.columns.iter().map(|c| c.phase).collect();
        assert_eq!(names, ["seq_write_block", "rewrite", "seq_read_block", "random_seeks"]);
    }

    #[test]
    fn a_longer_run_measures_the_write_phases() {
        let r = parse(&fixture("bonnie++-2.00a-s1024-n32.csv")).expect("parses");
        for c in &r.columns {
            assert!(c.latency_us.is_some_and(|l| l > 0.0), "{c:?}");
        }
        for p in [
            "seq_write_char",
            "seq_write_block",
            "rewrite",
            "seq_read_char",
            "seq_create",
        ] {
            let c = col(&r, p);
            assert!(matches!(c.value, Value::Measured(v) if v > 0.0), "{c:?}");
            assert!(c.cpu_pct.is_some(), "{c:?}");
        }
    }

    #[test]
    fn latency_units() {
        assert_eq!(latency_us("x", "13us"), Ok(Some(13.0)));
        assert_eq!(latency_us("x", "2ms"), Ok(Some(2000.0)));
        assert_eq!(latency_us("x", "3s"), Ok(Some(3e6)));
        assert_eq!(latency_us("x", ""), Ok(None));
        assert!(latency_us("x", "13").is_err());
        assert!(latency_us("x", "abcus").is_err());
    }

    #[test]
    fn bad_output_is_an_error_never_a_panic() {
        let full = fixture("bonnie++-2.00a-s64-n1.csv");
        // Truncated anywhere after the format: too few fields.
        for cut in [5, full.len() / 3, full.len() / 2, full.len() - 8] {
            let e = parse(&full[..cut]).unwrap_err();
            assert!(e.to_string().contains("50 fields"), "cut at {cut}: {e}");
        }
        assert!(matches!(parse(""), Err(ParseError::Missing { .. })));
        // What bonnie++ 2.00a prints as root without -u (it exits 1).
        let e = parse("You must use the \"-u\" switch when running as root.\n").unwrap_err();
        assert!(e.to_string().contains("You must use"), "{e}");
        let garbled = full.replacen(",2032,", ",20x2,", 1);
        assert!(matches!(
            parse(&garbled),
            Err(ParseError::BadValue {
                field: "seq_write_char",
                ..
            })
        ));
        let other_format = full.replacen("1.98,", "1.97,", 1);
        assert!(parse(&other_format).is_err());
    }

    #[test]
    fn version_from_usage() {
        assert_eq!(version("usage:\n...\nVersion: 2.00a\n").as_deref(), Some("2.00a"));
        assert_eq!(version("nothing"), None);
    }
}
