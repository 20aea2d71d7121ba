//! The sizes of the bonnie pairs, set by time before the verify run (issue 42, item 1).
//!
//! bonnie++ prints `+++++` instead of a rate for a phase that took under 0.5 s, and then
//! verify can only check the native against a bound, which a native that is too fast always
//! passes. So before the verify session, [`run`] runs the two bonnie natives once on every
//! filesystem asked for (a normal session in the same database, suite [`SUITE_NAME`], sizes
//! fixed: 512 MiB file without the per-char phases and the seeks, 16 Ki files), and
//! [`sizes_from`] sets, from the fastest rate measured on any filesystem:
//! - the file of `bonnie-io` (and of fio's seeks) so that the fastest block phase takes about
//!   [`BLOCK_TARGET_S`] (whole 256 MiB, from the table's 512 MiB up to [`MAX_FILE_MIB`]);
//! - the small files of `bonnie-files` so that the fastest small-file phase (a stat) takes
//!   about [`FILES_TARGET_S`], 1.5 × bonnie++'s 0.5 s (whole 1024s, from [`MIN_FILES`] up to
//!   [`FILES_PER_MIB`] per MiB of [`MAX_FILES_MEMORY_MIB`]). The pair runs in a memory cgroup
//!   of its own large enough for them ([`super::pairs::files_memory_mib`]: `memory` in its
//!   `[[workload]]` tables), the other pairs in the run's.
//!
//! Invariants: both sides of a pair get the same sizes (they are written into the suite's
//! bodies, [`super::pairs::sized_body`]); a size never goes under the table's file or over
//! its cap, and every cap that bites is said in the lines printed and stored nowhere else than
//! the suite text of the verify session (which holds the sizes). With `--scale` no calibration
//! runs: the sizes are the table's, scaled.

use super::pairs::{self, BonnieSizes};
use super::VerifyOptions;
use crate::run::{Observer, RunError, RunOptions, RunSummary, Runner};
use crate::store::SampleRecord;
use crate::units::Bytes;
use std::fmt::Write as _;
use std::path::Path;

/// The suite name of a calibration session.
pub const SUITE_NAME: &str = "verify-calibration";
/// How long the fastest block phase (write, rewrite, read) of `bonnie-io` should take at the
/// calibrated speed, seconds.
pub const BLOCK_TARGET_S: f64 = 2.0;
/// How long the fastest small-file phase of `bonnie-files` should take, seconds: 1.5 ×
/// bonnie++'s 0.5 s, so a repeat somewhat faster than the calibration is still timed.
pub const FILES_TARGET_S: f64 = 0.75;
/// The largest file of `bonnie-io`, MiB: at 1.7 GiB/s (the fastest block read measured here on
/// a quiet machine) 2 s need 3.4 GiB; each side writes, rewrites and reads it.
pub const MAX_FILE_MIB: u64 = 4096;
/// The fewest small files.
pub const MIN_FILES: u32 = 16384;
/// The most small files per MiB of a memory cgroup: 128 Ki files under 256 MiB ran without an
/// OOM kill (ext4, bonnie++ `-n 128`, 2026-11-28), 128 Ki under 128 MiB did not.
pub const FILES_PER_MIB: u64 = 512;
/// The largest memory cgroup of the `bonnie-files` pair, MiB: 1 Mi files at [`FILES_PER_MIB`],
/// 1.5 s of stats at the 680 k/s measured on a quiet machine here.
pub const MAX_FILES_MEMORY_MIB: u64 = 2048;
/// The small files of the calibration run (enough to time a stat, quick to create).
const CALIBRATION_FILES: u32 = 16384;

/// What the calibration decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// The sizes of the verify run.
    pub sizes: BonnieSizes,
    /// One line per size: what was measured, what it asked for, and any cap.
    pub lines: Vec<String>,
}

/// The fastest rate of `phases` among `(variant, phase, rate)`: `(rate, phase, variant)`.
fn fastest<'a>(rates: &'a [(String, String, f64)], phases: &[&str]) -> Option<(f64, &'a str, &'a str)> {
    rates
        .iter()
        .filter(|(_, p, r)| phases.contains(&p.as_str()) && r.is_finite() && *r > 0.0)
        .map(|(v, p, r)| (*r, p.as_str(), v.as_str()))
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// The sizes from the natives' rates `(variant, phase, rate)` (block phases in MiB/s, file
/// phases in ops/s) and the largest memory cgroup the small files may have, MiB; see the
/// module documentation.
pub fn sizes_from(rates: &[(String, String, f64)], memory_mib: u64) -> Calibration {
    let mut sizes = BonnieSizes::DEFAULT;
    let mut lines = Vec::new();
    let table_mib = sizes.file.get() / Bytes::MIB;
    match fastest(rates, &["seq_write_block", "rewrite", "seq_read_block"]) {
        Some((rate, phase, variant)) => {
            let want = rate * BLOCK_TARGET_S;
            let mib = ((want / 256.0).ceil().max(0.0) as u64 * 256).clamp(table_mib, MAX_FILE_MIB);
            sizes.file = Bytes(mib * Bytes::MIB);
            let cap = if want > MAX_FILE_MIB as f64 {
                format!(
                    " (capped at {MAX_FILE_MIB} MiB: that phase will take about {:.1} s)",
                    mib as f64 / rate
                )
            } else {
                String::new()
            };
            lines.push(format!(
                "bonnie-io file {mib} MiB: {phase} ran at {rate:.0} MiB/s on {variant}, {BLOCK_TARGET_S} s of it is {want:.0} MiB{cap}"
            ));
        }
        None => lines.push(format!(
            "bonnie-io file {table_mib} MiB (the table's): the calibration timed no block phase"
        )),
    }
    let most = u32::try_from(memory_mib.saturating_mul(FILES_PER_MIB) / 1024 * 1024)
        .unwrap_or(u32::MAX)
        .max(MIN_FILES);
    match fastest(rates, &crate::engine::workloads::bonnie::FILE_PHASES) {
        Some((rate, phase, variant)) => {
            let want = rate * FILES_TARGET_S;
            let n = ((want / 1024.0).ceil().max(0.0) as u64 * 1024).min(u64::from(u32::MAX)) as u32;
            sizes.files = n.clamp(MIN_FILES, most);
            let cap = if n > most {
                format!(
                    " (capped at {most}, {FILES_PER_MIB} per MiB of the {memory_mib} MiB memory cgroup: \
                     {phase} will take about {:.2} s, and bonnie++ prints +++++ under 0.5 s)",
                    f64::from(most) / rate
                )
            } else {
                String::new()
            };
            lines.push(format!(
                "bonnie-files {} files in a {} MiB memory cgroup: {phase} ran at {rate:.0}/s on {variant}, {FILES_TARGET_S} s of it is {want:.0} files{cap}",
                sizes.files,
                pairs::files_memory_mib(sizes.files, pairs::memory_mib(1.0))
            ));
        }
        None => lines.push(format!(
            "bonnie-files {} files (the table's): the calibration timed no small-file phase",
            sizes.files
        )),
    }
    Calibration { sizes, lines }
}

/// The calibration suite: the two bonnie natives of the table, once each, the I/O one without
/// its per-char phases and seeks (not sized here), the small-file one with 16 Ki files.
fn suite_text() -> Result<String, RunError> {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Generated by `fsbench verify`: the bonnie natives once, to size the verify run by time.\n\
         [suite]\nname = \"{SUITE_NAME}\"\ndescription = \"the speed of the bonnie natives, to size the verify pairs\"\n\n\
         [run]\nrepeats = 1\nwarmup = 0\ndrop_caches = true\ntrim = 0\nmemory = \"{}MiB\"\n\n\
         [[fs]]\ntype = \"ext4\"",
        pairs::memory_mib(1.0)
    );
    for id in ["bonnie-io", "bonnie-files"] {
        let Some(p) = pairs::pair(id) else { continue };
        let mut kind: crate::engine::WorkloadKind =
            toml::from_str(p.native).map_err(|e| RunError::Usage(format!("pair body does not load: {e}")))?;
        if let crate::engine::WorkloadKind::Bonnie(b) = &mut kind {
            b.char_size = b.char_size.map(|_| Bytes(0));
            b.seeks = 0;
            if b.files > 0 {
                b.files = CALIBRATION_FILES;
            }
            b.test_seek_credit = 1;
        }
        let body = toml::to_string(&kind).map_err(|e| RunError::Usage(format!("pair body: {e}")))?;
        let _ = writeln!(s, "\n[[workload]]\nname = \"{}\"\n{body}", pairs::native_name(p));
    }
    Ok(s)
}

/// The natives' rates in the stored samples: `(variant, phase, rate)`.
fn rates(cases: &[crate::store::CaseRecord], samples: &[SampleRecord]) -> Vec<(String, String, f64)> {
    samples
        .iter()
        .filter(|s| !s.sample.is_warmup && s.sample.status == crate::store::SampleStatus::Ok)
        .filter_map(|s| {
            let case = cases.iter().find(|c| c.case_id == s.sample.case_id)?;
            Some((case, s))
        })
        .flat_map(|(case, s)| {
            s.sample
                .measurements
                .iter()
                .filter(|m| m.rank.is_none() && (m.metric.name == "throughput" || m.metric.name == "rate"))
                .map(|m| (case.variant.clone(), m.phase.clone(), m.value))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Runs the calibration session into `db` when the verify run has the bonnie pairs and no
/// `--scale`: `Ok(Ok(None))` when none is needed, `Ok(Err(summary))` when it was interrupted
/// (the caller stops there).
pub fn run(
    db: &Path,
    o: &VerifyOptions,
    obs: &dyn Observer,
) -> Result<Result<Option<Calibration>, RunSummary>, RunError> {
    let wanted = |id: &str| o.only.is_empty() || o.only.iter().any(|x| x == id);
    if o.scale.is_some() || !(wanted("bonnie-io") || wanted("bonnie-files")) {
        return Ok(Ok(None));
    }
    let text = suite_text()?;
    std::fs::create_dir_all(&o.scratch).map_err(RunError::Output)?;
    let suite = o
        .scratch
        .join(format!("verify-calibration-{}.toml", std::process::id()));
    std::fs::write(&suite, text).map_err(RunError::Output)?;
    let options = RunOptions {
        suite: Some(suite.clone()),
        fs: Some(o.fs.clone()),
        repeat: Some(1),
        scratch: o.scratch.clone(),
        label: o.label.clone(),
        fixed_sizes: true,
        ..RunOptions::default()
    };
    let line: Vec<String> = vec![
        "fsbench".into(),
        "run".into(),
        "--fs".into(),
        o.fs.clone(),
        "--repeat".into(),
        "1".into(),
        suite.display().to_string(),
    ];
    let runner = Runner::new(
        db,
        &options,
        line,
        |_| Err("verify calibrations are not resumed".into()),
        std::sync::Arc::new(crate::comm::cluster::Solo),
    );
    let _ = std::fs::remove_file(&suite);
    let summary = runner?.run(obs)?;
    if summary.interrupted {
        return Ok(Err(summary));
    }
    let data = summary.store.load_session(summary.session)?;
    let mut c = sizes_from(&rates(&data.cases, &data.samples), MAX_FILES_MEMORY_MIB);
    c.lines.insert(
        0,
        format!("verify: sizes from calibration session {}:", summary.session),
    );
    Ok(Ok(Some(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(v: &str, p: &str, x: f64) -> (String, String, f64) {
        (v.into(), p.into(), x)
    }

    #[test]
    fn the_fastest_phase_on_any_filesystem_sets_each_size_within_its_caps() {
        // Block read at 1700 MiB/s on xfs: 2 s of it is 3400 MiB, rounded up to 3584.
        let c = sizes_from(
            &[
                r("ext4", "seq_write_block", 1000.0),
                r("xfs", "seq_read_block", 1700.0),
                r("ext4", "seq_stat", 100_000.0),
                r("btrfs", "rand_stat", 120_000.0),
                r("btrfs", "seq_create", 50_000.0),
            ],
            256,
        );
        assert_eq!(c.sizes.file, Bytes(3584 * Bytes::MIB));
        // 120,000 stats/s × 0.75 s = 90,000 files, rounded up to 90,112.
        assert_eq!(c.sizes.files, 90_112);
        assert!(
            c.lines[0].contains("seq_read_block ran at 1700 MiB/s on xfs"),
            "{:?}",
            c.lines
        );
        assert!(!c.lines.iter().any(|l| l.contains("capped")), "{:?}", c.lines);
        // A fast machine hits both caps, and says so.
        let fast = sizes_from(&[r("ext4", "rewrite", 5000.0), r("ext4", "seq_stat", 700_000.0)], 256);
        assert_eq!(fast.sizes.file, Bytes(MAX_FILE_MIB * Bytes::MIB));
        assert_eq!(fast.sizes.files, 131_072, "512 files per MiB of a 256 MiB cgroup");
        // The verify run's cap: 700 k stats/s want 525,000 files, under 1 Mi; their cgroup
        // grows to hold them (1,026 MiB at 512 files per MiB).
        let quiet = sizes_from(&[r("ext4", "seq_stat", 700_000.0)], MAX_FILES_MEMORY_MIB);
        assert_eq!(quiet.sizes.files, 525_312);
        assert_eq!(pairs::files_memory_mib(quiet.sizes.files, 256), 1026);
        assert!(
            quiet.lines[1].contains("in a 1026 MiB memory cgroup"),
            "{:?}",
            quiet.lines
        );
        assert!(!quiet.lines[1].contains("capped"), "{:?}", quiet.lines);
        assert!(fast.lines.iter().all(|l| l.contains("capped")), "{:?}", fast.lines);
        // A slow machine never goes under the table's file or the fewest files.
        let slow = sizes_from(&[r("ext4", "seq_read_block", 50.0), r("ext4", "seq_stat", 1000.0)], 256);
        assert_eq!(slow.sizes.file, BonnieSizes::DEFAULT.file);
        assert_eq!(slow.sizes.files, MIN_FILES);
        // Nothing measured: the table's sizes.
        let none = sizes_from(&[r("ext4", "seq_read_block", f64::NAN)], 256);
        assert_eq!(none.sizes, BonnieSizes::DEFAULT);
        assert!(none.lines.iter().all(|l| l.contains("the table's")));
    }

    #[test]
    fn the_calibration_suite_loads_and_runs_the_natives_without_per_char_or_seeks() {
        let text = suite_text().unwrap();
        let suite = crate::config::load_str(&text, "c", &Default::default()).expect("suite loads");
        assert_eq!(suite.name, SUITE_NAME);
        assert_eq!(suite.workloads.len(), 2);
        for w in &suite.workloads {
            let crate::engine::WorkloadKind::Bonnie(b) = &w.kind else {
                panic!("{:?}", w.kind)
            };
            assert_eq!(b.seeks, 0);
            assert!(b.file_size.get() == 0 || b.char_size == Some(Bytes(0)), "{b:?}");
            assert!(b.files == 0 || b.files == CALIBRATION_FILES, "{b:?}");
        }
    }
}
