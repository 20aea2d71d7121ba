//! The `sysbench_fileio` workload: the real `sysbench fileio` (sysbench 1.0, Debian package
//! `sysbench`) on the filesystem under test, in one phase named after its
//! `--file-test-mode`, with the native [`fileio`](super::fileio) workload's metric names
//! (issue 13, item 1).
//!
//! One repeat, each step a child in the run directory ([`super::tool::Tool`]):
//! 1. `sysbench fileio <options> prepare` (untimed): sysbench writes its `test_file.*`;
//! 2. `sysbench fileio <options> run` (timed, caches dropped before it when the run asks): the
//!    phase; its report ([`crate::parsers::sysbench_fileio`]) gives the metrics;
//! 3. `sysbench fileio <options> cleanup` (untimed), then every entry of the run directory is
//!    removed (also after a failure or an interrupt, when the cleanup step is skipped).
//!
//! | metric | unit | from sysbench |
//! |---|---|---|
//! | `reads_per_s` (reading modes) | ops/s (headline) | `reads/s` |
//! | `writes_per_s`, `fsyncs_per_s` (writing modes) | ops/s (headline) | `writes/s`, `fsyncs/s` |
//! | `read_mib_s`, `write_mib_s` | MiB/s (headline) | `read, MiB/s`, `written, MiB/s` |
//! | `lat_min`, `lat_avg`, `lat_p95`, `lat_max` | µs (latency) | `Latency (ms)` min, avg, 95th percentile, max |
//!
//! Semantics are sysbench's own: its latencies are per event (an fsync is an event), printed
//! with 10 µs resolution; the rates are over sysbench's own `total time`; the phase's wall
//! time is the `run` child's and its CPU the child's (fsbench's measurement). Defaults are the
//! native workload's (128 files, 2 GiB, 16 KiB blocks, `rndrw`, ratio 1.5, fsync every 100
//! requests and at the end, one thread, 10 s); `time` is whole seconds, as `--time` is.
//!
//! References: `sysbench fileio help` (sysbench 1.0.20).

use crate::metric::{MetricId, RawSample, Unit};
use crate::parsers::sysbench_fileio as report;
use crate::phase::{Caches, Phases};
use crate::units::{Bytes, Dur};
use crate::workloads::fileio::FileioMode;
use crate::workloads::fio::empty_dir;
use crate::workloads::tool::Tool;
use crate::{EngineError, RunContext, Workload, WorkloadKind};
use crate::{Invalid, Unavailable};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;
// The defaults of the options both share (sysbench's), written once.
use super::fileio::{
    default_block_size, default_files, default_fsync_freq, default_rw_ratio, default_threads, default_time,
    default_total_size,
};

/// The tool.
pub const TOOL: Tool = Tool {
    program: "sysbench",
    package: "sysbench",
};
/// Options fsbench sets itself.
const FORBIDDEN: &[&str] = &[
    "--file-num",
    "--file-total-size",
    "--file-block-size",
    "--file-test-mode",
    "--threads",
    "--time",
    "--events",
];

fileio_job_spec! {
/// Parameters of the sysbench_fileio workload (sysbench's names in brackets): the fileio job,
/// then sysbench's own options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SysbenchFileioSpec {
    /// `--file-io-mode`: sync, async or mmap. Default: sysbench's (sync).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_mode: Option<String>,
    /// `--file-extra-flags`: e.g. `direct`, `sync`, `dsync`. Default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_flags: Option<String>,
    /// `--rand-seed` (0: sysbench seeds from the time). Default 0.
    #[serde(default)]
    pub seed: u64,
    /// Extra sysbench arguments, each `--key=value`, passed as they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}
}

impl Default for SysbenchFileioSpec {
    fn default() -> Self {
        super::serde_default()
    }
}

impl SysbenchFileioSpec {
    /// `sysbench`'s arguments for `step` (`prepare`, `run` or `cleanup`).
    pub fn args(&self, step: &str) -> Vec<String> {
        let mut a = vec![
            "fileio".to_string(),
            format!("--file-test-mode={}", self.mode.name()),
            format!("--file-num={}", self.files),
            format!("--file-total-size={}", self.total_size.get()),
            format!("--file-block-size={}", self.block_size.get()),
            format!("--threads={}", self.threads),
            format!("--time={}", self.time.0.as_secs()),
            format!("--events={}", self.requests),
            format!("--file-rw-ratio={}", self.rw_ratio),
            format!("--file-fsync-freq={}", self.fsync_freq),
            format!("--file-fsync-end={}", if self.fsync_end { "on" } else { "off" }),
            format!("--rand-seed={}", self.seed),
            "--percentile=95".to_string(),
        ];
        if let Some(m) = &self.io_mode {
            a.push(format!("--file-io-mode={m}"));
        }
        if let Some(f) = &self.extra_flags {
            a.push(format!("--file-extra-flags={f}"));
        }
        a.extend(self.options.iter().cloned());
        a.push(step.to_string());
        a
    }

    /// Runs `program` (sysbench) as one repeat; see the module documentation.
    pub(crate) fn run_with(&self, program: &Path, ctx: &RunContext) -> Result<RawSample, EngineError> {
        let mut p = Phases::new(ctx);
        let r = self.steps(&mut p, program, ctx);
        if !ctx.interrupt.load(Ordering::Relaxed) {
            // sysbench's own cleanup; the directory is emptied after it whatever it did.
            let cleaned = TOOL.run(&p, program, &self.args("cleanup"), ctx.dir);
            if r.is_ok() {
                let (t, shown) = cleaned?;
                Tool::check(&t.value, &shown)?;
            }
        }
        let emptied = empty_dir(ctx.dir);
        r?;
        emptied?;
        Ok(p.finish())
    }

    fn steps(&self, p: &mut Phases, program: &Path, ctx: &RunContext) -> Result<(), EngineError> {
        let (t, shown) = TOOL.run_keeping_files(p, program, &self.args("prepare"), ctx.dir)?;
        Tool::check(&t.value, &shown)?;
        let phase = self.mode.name();
        p.begin(phase, Caches::DropIfAsked);
        let (t, shown) = TOOL.run_keeping_files(p, program, &self.args("run"), ctx.dir)?;
        Tool::check(&t.value, &shown)?;
        let r = report::parse(&t.value.stdout).map_err(|e| Tool::failed(&t.value, &shown, e))?;
        let mut m = Vec::new();
        if self.mode.reads() {
            m.push((MetricId::higher("reads_per_s", Unit::OpsPerSec), r.reads_per_s));
        }
        if self.mode.writes() {
            m.push((MetricId::higher("writes_per_s", Unit::OpsPerSec), r.writes_per_s));
            m.push((MetricId::higher("fsyncs_per_s", Unit::OpsPerSec), r.fsyncs_per_s));
        }
        if self.mode.reads() {
            m.push((MetricId::higher("read_mib_s", Unit::MibPerSec), r.read_mib_s));
        }
        if self.mode.writes() {
            m.push((MetricId::higher("write_mib_s", Unit::MibPerSec), r.write_mib_s));
        }
        m.push((MetricId::latency("lat_min"), r.lat_min_us));
        m.push((MetricId::latency("lat_avg"), r.lat_avg_us));
        if let Some(p95) = r.lat_p95_us {
            m.push((MetricId::latency("lat_p95"), p95));
        }
        m.push((MetricId::latency("lat_max"), r.lat_max_us));
        p.record(phase, &t, m, &Default::default());
        Ok(())
    }
}

impl Workload for SysbenchFileioSpec {
    fn phases(&self) -> Vec<String> {
        vec![self.mode.name().to_string()]
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        let mut s = self.clone();
        let min = u64::from(self.files.max(1)) * self.block_size.get();
        s.total_size = self.total_size.scaled(factor, min);
        if !self.time.0.is_zero() {
            let t = self.time.scaled(factor, Duration::from_secs(1));
            s.time = Dur(Duration::from_secs(t.0.as_secs()));
        }
        s.requests = (self.requests as f64 * factor).round() as u64;
        if self.requests > 0 {
            s.requests = s.requests.max(1);
        }
        WorkloadKind::SysbenchFileio(s)
    }

    fn validate(&self) -> Result<(), Invalid> {
        if self.files == 0 || self.threads == 0 || self.block_size.get() == 0 {
            return Err("sysbench_fileio files, threads and block_size must be at least 1".into());
        }
        if self.total_size.get() < u64::from(self.files) * self.block_size.get() {
            return Err(Invalid(format!(
                "sysbench_fileio total_size {} must hold one block_size {} per file ({} files)",
                self.total_size, self.block_size, self.files
            )));
        }
        if self.time.0.subsec_nanos() != 0 {
            return Err(Invalid(format!(
                "sysbench_fileio time {}: sysbench's --time is whole seconds",
                self.time
            )));
        }
        if self.time.0.is_zero() && self.requests == 0 {
            return Err("sysbench_fileio: time = 0 needs requests > 0 (else it never ends)".into());
        }
        if !(self.rw_ratio.is_finite() && self.rw_ratio > 0.0) {
            return Err("sysbench_fileio rw_ratio must be a positive number".into());
        }
        if let Some(m) = &self.io_mode {
            if !["sync", "async", "mmap"].contains(&m.as_str()) {
                return Err(Invalid(format!(
                    "sysbench_fileio io_mode {m:?}: use sync, async or mmap"
                )));
            }
        }
        for o in &self.options {
            if !o.starts_with("--") {
                return Err(Invalid(format!(
                    "sysbench_fileio options: `{o}` must be written `--key=value`"
                )));
            }
            if FORBIDDEN.iter().any(|f| o.split('=').next() == Some(f)) {
                return Err(Invalid(format!(
                    "sysbench_fileio options: `{o}` is set by fsbench (use mode, files, total_size, …)"
                )));
            }
        }
        Ok(())
    }

    fn availability(&self) -> Result<(), Unavailable> {
        TOOL.locate().map(drop)
    }

    fn tool_versions(&self) -> Vec<(String, String)> {
        TOOL.probe(&["--version"])
            .and_then(|t| crate::parsers::sysbench::parse_version(&t))
            .map(|v| vec![("sysbench".to_string(), v)])
            .unwrap_or_default()
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        let per = self.total_size.get() / u64::from(self.files.max(1));
        let fp = crate::fstype::Footprint::default().files(u64::from(self.files), per, 16);
        if self.mode.writes() {
            fp.rewrites(self.total_size.get())
        } else {
            fp
        }
    }

    fn describe(&self) -> String {
        format!(
            "sysbench_fileio (sysbench fileio) {} files={} total={} block={} threads={} time={} fsync_freq={}",
            self.mode.name(),
            self.files,
            self.total_size,
            self.block_size,
            self.threads,
            self.time,
            self.fsync_freq
        )
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        let program = TOOL.locate()?;
        self.run_with(&program, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::Role;
    use crate::{dir_is_empty, run_quiet};
    use std::sync::atomic::AtomicBool;

    fn quick(mode: FileioMode) -> SysbenchFileioSpec {
        SysbenchFileioSpec {
            mode,
            files: 4,
            total_size: Bytes(16 * Bytes::MIB),
            time: Dur(Duration::from_secs(1)),
            ..Default::default()
        }
    }

    #[test]
    fn args_and_validation() {
        let a = quick(FileioMode::Rndrd).args("run");
        for want in [
            "fileio",
            "--file-test-mode=rndrd",
            "--file-total-size=16777216",
            "--time=1",
            "run",
        ] {
            assert!(a.iter().any(|x| x == want), "{want} not in {a:?}");
        }
        assert_eq!(a.last().map(String::as_str), Some("run"));
        let bad = |s: SysbenchFileioSpec, want: &str| {
            let e = s.validate().unwrap_err();
            assert!(e.0.contains(want), "{e}");
        };
        bad(
            SysbenchFileioSpec {
                time: Dur(Duration::from_millis(1500)),
                ..quick(FileioMode::Rndrw)
            },
            "whole seconds",
        );
        bad(
            SysbenchFileioSpec {
                options: vec!["--threads=4".into()],
                ..quick(FileioMode::Rndrw)
            },
            "set by fsbench",
        );
        bad(
            SysbenchFileioSpec {
                time: Dur(Duration::ZERO),
                ..quick(FileioMode::Rndrw)
            },
            "requests > 0",
        );
        assert_eq!(quick(FileioMode::Seqwr).validate(), Ok(()));
        match SysbenchFileioSpec::default().scaled(0.05) {
            WorkloadKind::SysbenchFileio(s) => {
                assert_eq!(s.time.0, Duration::from_secs(1));
                assert_eq!(s.validate(), Ok(()));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_mode_runs_the_real_sysbench_with_native_metric_names() {
        if TOOL.locate().is_err() {
            skip_or_fail!("sysbench not installed ({})", TOOL.install());
        }
        let dir = tempfile::tempdir().unwrap();
        let flag = AtomicBool::new(false);
        for mode in [FileioMode::Seqwr, FileioMode::Rndrd, FileioMode::Rndrw] {
            let s = quick(mode);
            let sample = run_quiet(&s, dir.path(), &flag).unwrap_or_else(|e| panic!("{mode:?}: {e}"));
            assert_eq!(sample.phases.len(), 1);
            let ph = &sample.phases[0];
            assert_eq!(ph.phase, mode.name());
            let names: Vec<&str> = ph.metrics.iter().map(|(id, _)| id.name.as_str()).collect();
            let want: &[&str] = match mode {
                FileioMode::Seqwr => &["writes_per_s", "fsyncs_per_s", "write_mib_s"],
                FileioMode::Rndrd => &["reads_per_s", "read_mib_s"],
                _ => &[
                    "reads_per_s",
                    "writes_per_s",
                    "fsyncs_per_s",
                    "read_mib_s",
                    "write_mib_s",
                ],
            };
            let headline: Vec<&str> = ph
                .metrics
                .iter()
                .filter(|(id, _)| id.role == Role::Headline)
                .map(|(id, _)| id.name.as_str())
                .collect();
            assert_eq!(headline, want, "{mode:?}");
            for l in ["lat_min", "lat_avg", "lat_p95", "lat_max"] {
                assert!(names.contains(&l), "{mode:?}: {names:?}");
            }
            let v = |n: &str| ph.metrics.iter().find(|(id, _)| id.name == n).unwrap().1;
            assert!(v(want[0]) > 0.0, "{ph:?}");
            assert!(ph.wall >= Duration::from_secs(1), "{ph:?}");
            assert!(ph.cpu.process_pct > 0.0, "{ph:?}");
            assert!(dir_is_empty(dir.path()), "{mode:?}");
        }
        assert!(quick(FileioMode::Rndrw).tool_versions()[0].1.starts_with("sysbench 1."));
    }

    #[test]
    fn sysbench_failing_or_missing_is_an_error_with_its_output() {
        let dir = tempfile::tempdir().unwrap();
        let flag = AtomicBool::new(false);
        let ctx = RunContext::quiet(dir.path(), &flag);
        match quick(FileioMode::Rndrd).run_with(Path::new("/nonexistent/sysbench"), &ctx) {
            Err(EngineError::Unavailable(m)) => assert!(m.contains("apt-get install sysbench"), "{m}"),
            other => panic!("{other:?}"),
        }
        if TOOL.locate().is_err() {
            skip_or_fail!("sysbench not installed ({})", TOOL.install());
        }
        let bad = SysbenchFileioSpec {
            io_mode: Some("telepathy".into()),
            ..quick(FileioMode::Rndrd)
        };
        match run_quiet(&bad, dir.path(), &flag) {
            Err(EngineError::Invalid(m)) => assert!(m.contains("exit status: 1") && m.contains("telepathy"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(dir_is_empty(dir.path()));
    }

    #[test]
    fn interrupt_kills_sysbench_and_empties_the_directory() {
        if TOOL.locate().is_err() {
            skip_or_fail!("sysbench not installed ({})", TOOL.install());
        }
        let dir = tempfile::tempdir().unwrap();
        let s = SysbenchFileioSpec {
            time: Dur(Duration::from_secs(60)),
            ..quick(FileioMode::Rndrd)
        };
        let t0 = std::time::Instant::now();
        let r = crate::run_interrupted_after(&s, dir.path(), Duration::from_millis(1500));
        assert!(matches!(r, Err(EngineError::Interrupted)), "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
        assert!(dir_is_empty(dir.path()));
    }
}
