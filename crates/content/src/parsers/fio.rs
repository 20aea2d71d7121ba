//! fio's `--output-format=json+` report, read into one [`FioPhase`] per job entry and data
//! direction (read, write, trim) that moved data (`io_bytes > 0`).
//!
//! Invariants: every number comes from fio (IOPS, bandwidth, completion-latency percentiles and
//! maximum); nothing is re-timed here. Every job entry is read, not only the first; a job that
//! reports an error (`"error" != 0`) makes the whole report an error. Phase names are
//! `<jobname>_<direction>`; a job name that repeats (clones of `numjobs` without
//! `group_reporting`) gets `.<k>` for its k-th repeat (`reader.1_read`), as fio names its files.
//! fio may print warnings before the JSON object on standard output; they are skipped.
//! With `json+`, every phase also carries fio's completion-latency histogram
//! ([`FioPhase::clat_bins`]): fio lists only its non-empty buckets (about 1.6 % wide, keyed by
//! the bucket's value in ns), so they are kept as they are, sorted, compact enough to store.
//!
//! References: fio(1) "OUTPUT" and `--output-format=json+` (fio 3.x; captured from fio-3.33 in
//! `tests/fixtures/fio/`).

use serde::Deserialize;
use std::collections::BTreeMap;

/// Why fio's report could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FioError {
    /// Standard output holds no JSON object.
    #[error("fio printed no JSON report (first line: {0:?})")]
    NoJson(String),
    /// The JSON is truncated or not fio's report.
    #[error("fio's JSON report is unreadable: {0}")]
    Json(String),
    /// A job ended with an error number.
    #[error("fio job `{job}` ended with error {errno} ({})", std::io::Error::from_raw_os_error(*errno))]
    Job {
        /// The job's name.
        job: String,
        /// fio's `error` field (an errno).
        errno: i32,
    },
    /// The report has no job that moved data.
    #[error("fio's report has no job that read, wrote or trimmed anything")]
    NoData,
}

/// What fio measured for one job entry and direction.
#[derive(Clone, Debug, PartialEq)]
pub struct FioPhase {
    /// `<jobname>_<direction>` (see the module documentation).
    pub name: String,
    /// I/O operations per second (fio's `iops`).
    pub iops: f64,
    /// Bandwidth in MiB/s (fio's `bw_bytes` / 1,048,576).
    pub bw_mib_s: f64,
    /// Completion latency percentiles in µs: p50, p99, p99.9 (absent when fio printed none,
    /// e.g. `clat_percentiles=0`).
    pub clat_us: Option<[f64; 3]>,
    /// Largest completion latency in µs.
    pub clat_max_us: f64,
    /// fio's runtime of this direction, in seconds.
    pub runtime_s: f64,
    /// fio's reporting group (`groupid`; `stonewall`/`new_group` start a new one).
    pub group: u32,
    /// The completion-latency histogram of `json+` (empty with plain `json`): `(bucket value
    /// in ns, completions)` for every non-empty bucket, in increasing latency.
    pub clat_bins: Vec<(u64, u64)>,
}

/// fio's whole report: its version and the phases in report order.
#[derive(Clone, Debug, PartialEq)]
pub struct FioReport {
    /// `fio-3.33`.
    pub version: String,
    /// One per job entry and direction with data.
    pub phases: Vec<FioPhase>,
}

#[derive(Deserialize)]
struct RawReport {
    #[serde(rename = "fio version")]
    version: String,
    jobs: Vec<RawJob>,
}

#[derive(Deserialize)]
struct RawJob {
    jobname: String,
    #[serde(default)]
    error: i32,
    #[serde(default)]
    groupid: u32,
    read: RawDir,
    write: RawDir,
    trim: RawDir,
}

#[derive(Deserialize)]
struct RawDir {
    io_bytes: u64,
    iops: f64,
    bw_bytes: f64,
    /// Milliseconds.
    runtime: f64,
    clat_ns: RawClat,
}

#[derive(Deserialize)]
struct RawClat {
    max: f64,
    #[serde(default)]
    percentile: BTreeMap<String, f64>,
    /// json+ only: bucket value in ns (as text) → completions.
    #[serde(default)]
    bins: BTreeMap<String, u64>,
}

/// The percentile `p` (fio's key `"99.900000"`) in µs.
fn pct_us(map: &BTreeMap<String, f64>, p: &str) -> Option<f64> {
    map.get(p).map(|ns| ns / 1000.0)
}

/// Reads fio's `--output-format=json+` (or `json`) standard output.
pub fn parse(stdout: &str) -> Result<FioReport, FioError> {
    let start = stdout
        .find("\n{")
        .map(|i| i + 1)
        .or_else(|| stdout.starts_with('{').then_some(0))
        .ok_or_else(|| FioError::NoJson(stdout.lines().next().unwrap_or("").chars().take(80).collect()))?;
    // fio may print more text after the object (e.g. `disk_util` lines in `json,normal`):
    // read one value and ignore the rest.
    let mut de = serde_json::Deserializer::from_str(&stdout[start..]);
    let raw = RawReport::deserialize(&mut de).map_err(|e| FioError::Json(e.to_string()))?;
    let mut seen: BTreeMap<&str, u32> = BTreeMap::new();
    let mut phases = Vec::new();
    for job in &raw.jobs {
        if job.error != 0 {
            return Err(FioError::Job {
                job: job.jobname.clone(),
                errno: job.error,
            });
        }
        let k = seen.entry(&job.jobname).or_insert(0);
        let base = if *k == 0 {
            job.jobname.clone()
        } else {
            format!("{}.{k}", job.jobname)
        };
        *k += 1;
        for (dir, d) in [("read", &job.read), ("write", &job.write), ("trim", &job.trim)] {
            if d.io_bytes == 0 {
                continue;
            }
            let p = &d.clat_ns.percentile;
            let clat_us = match (pct_us(p, "50.000000"), pct_us(p, "99.000000"), pct_us(p, "99.900000")) {
                (Some(a), Some(b), Some(c)) => Some([a, b, c]),
                _ => None,
            };
            let mut clat_bins = Vec::with_capacity(d.clat_ns.bins.len());
            for (ns, &n) in &d.clat_ns.bins {
                let ns = ns.parse::<u64>().map_err(|_| {
                    FioError::Json(format!(
                        "job `{}`: histogram bucket `{ns}` is not a number",
                        job.jobname
                    ))
                })?;
                clat_bins.push((ns, n));
            }
            clat_bins.sort_unstable();
            phases.push(FioPhase {
                name: format!("{base}_{dir}"),
                iops: d.iops,
                bw_mib_s: d.bw_bytes / (1024.0 * 1024.0),
                clat_us,
                clat_max_us: d.clat_ns.max / 1000.0,
                runtime_s: d.runtime / 1000.0,
                group: job.groupid,
                clat_bins,
            });
        }
    }
    if phases.is_empty() {
        return Err(FioError::NoData);
    }
    Ok(FioReport {
        version: raw.version,
        phases,
    })
}

/// The first line of `fio --version` (`fio-3.33`) as the version.
pub fn version(line: &str) -> Option<String> {
    let v = line.trim();
    v.starts_with("fio-").then(|| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/fio")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn randread_has_one_read_phase_with_fio_numbers() {
        let r = parse(&fixture("fio-3.33-randread.json")).expect("parses");
        assert_eq!(r.version, "fio-3.33");
        assert_eq!(r.phases.len(), 1);
        let p = &r.phases[0];
        assert_eq!(p.name, "randread_read");
        assert!((p.iops - 19284.715285).abs() < 1e-6, "{p:?}");
        assert!((p.bw_mib_s - 78990193.0 / 1048576.0).abs() < 1e-9, "{p:?}");
        let [p50, p99, p999] = p.clat_us.expect("percentiles");
        assert!(0.0 < p50 && p50 <= p99 && p99 <= p999 && p999 <= p.clat_max_us, "{p:?}");
        assert!(p.runtime_s > 0.9 && p.runtime_s < 1.5, "{p:?}");
    }

    #[test]
    fn every_job_of_a_file_is_read() {
        let r = parse(&fixture("fio-3.33-two-jobs.json")).expect("parses");
        let names: Vec<&str> = r.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["writer_write", "reader_read"]);
        assert!((r.phases[0].iops - 33884.231537).abs() < 1e-6);
        assert!((r.phases[1].iops - 10682.317682).abs() < 1e-6);
    }

    #[test]
    fn a_write_job_reports_its_write_direction_only() {
        let r = parse(&fixture("fio-3.33-seqwrite-end-fsync.json")).expect("parses");
        assert_eq!(r.phases.len(), 1);
        assert_eq!(r.phases[0].name, "seqwrite_write");
        assert!(r.phases[0].bw_mib_s > 1.0);
    }

    #[test]
    fn repeated_job_names_are_numbered() {
        let one = fixture("fio-3.33-randread.json");
        let v: serde_json::Value = serde_json::from_str(&one).unwrap();
        let mut twice = v.clone();
        let job = v["jobs"][0].clone();
        twice["jobs"].as_array_mut().unwrap().push(job);
        let r = parse(&twice.to_string()).expect("parses");
        let names: Vec<&str> = r.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["randread_read", "randread.1_read"]);
    }

    #[test]
    fn bad_output_is_an_error_never_a_panic() {
        let full = fixture("fio-3.33-randread.json");
        for cut in [10, full.len() / 3, full.len() / 2, full.len() - 3] {
            assert!(matches!(parse(&full[..cut]), Err(FioError::Json(_))), "cut at {cut}");
        }
        // What fio 3.33 printed on stdout for `--rw=bogus` (it exited 1).
        let bad = "        valid values: read       Sequential read\n";
        assert!(matches!(parse(bad), Err(FioError::NoJson(l)) if l.contains("valid values")));
        assert!(matches!(parse(""), Err(FioError::NoJson(_))));
        assert!(matches!(parse("{\"jobs\": []}"), Err(FioError::Json(_))));
        let v: serde_json::Value = serde_json::from_str(&full).unwrap();
        let mut failed = v.clone();
        failed["jobs"][0]["error"] = 5.into();
        let e = parse(&failed.to_string()).unwrap_err();
        assert!(matches!(&e, FioError::Job { errno: 5, .. }), "{e}");
        let mut idle = v;
        idle["jobs"][0]["read"]["io_bytes"] = 0.into();
        assert_eq!(parse(&idle.to_string()), Err(FioError::NoData));
        // A warning line before the object is skipped.
        assert!(parse(&format!("fio: some warning\n{full}")).is_ok());
    }

    #[test]
    fn every_job_of_every_group_has_its_histogram() {
        let r = parse(&fixture("fio-3.33-three-jobs-two-groups.json")).expect("parses");
        let names: Vec<(&str, u32)> = r.phases.iter().map(|p| (p.name.as_str(), p.group)).collect();
        assert_eq!(
            names,
            [("w1_write", 0), ("r1_read", 0), ("rw2_read", 1), ("rw2_write", 1)]
        );
        let raw: serde_json::Value = serde_json::from_str(&fixture("fio-3.33-three-jobs-two-groups.json")).unwrap();
        for (p, (job, dir)) in r
            .phases
            .iter()
            .zip([(0, "write"), (1, "read"), (2, "read"), (2, "write")])
        {
            let d = &raw["jobs"][job][dir];
            // One entry per non-empty bucket, sorted, and together every completion fio counted.
            assert_eq!(
                p.clat_bins.len(),
                d["clat_ns"]["bins"].as_object().unwrap().len(),
                "{}",
                p.name
            );
            assert!(p.clat_bins.windows(2).all(|w| w[0].0 < w[1].0), "{}", p.name);
            let total: u64 = p.clat_bins.iter().map(|b| b.1).sum();
            assert_eq!(total, d["clat_ns"]["N"].as_u64().unwrap(), "{}", p.name);
            let max_ns = p.clat_bins.last().unwrap().0 as f64;
            // The last bucket holds the maximum (buckets are about 1.6 % wide).
            assert!((max_ns - p.clat_max_us * 1000.0).abs() <= 0.02 * max_ns, "{}", p.name);
        }
        // Plain `json` (no bins) parses with empty histograms; a garbled bucket is an error.
        let mut v = raw.clone();
        v["jobs"][0]["write"]["clat_ns"].as_object_mut().unwrap().remove("bins");
        assert!(parse(&v.to_string()).unwrap().phases[0].clat_bins.is_empty());
        let mut v = raw;
        v["jobs"][1]["read"]["clat_ns"]["bins"]["x12"] = 1.into();
        assert!(matches!(parse(&v.to_string()), Err(FioError::Json(m)) if m.contains("x12")));
    }

    #[test]
    fn version_line() {
        assert_eq!(version("fio-3.33\n").as_deref(), Some("fio-3.33"));
        assert_eq!(version("sysbench 1.0"), None);
    }
}
