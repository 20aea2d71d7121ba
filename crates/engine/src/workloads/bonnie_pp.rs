//! The `bonnie_pp` workload: the real bonnie++ (Russell Coker's bonnie++ 2.x, Debian package
//! `bonnie++`) on the filesystem under test, its CSV line turned into the phases of the native
//! [`bonnie`](super::bonnie) workload (issue 13, item 1).
//!
//! One repeat is one `bonnie++ -q -d <run dir> -m fsbench -s <MiB>[:chunk] -n <k>[:max:min:dirs]
//! -r <MiB> [-f[MiB]] [-z seed] [-u root]` run ([`super::tool::Tool::run`]: a timed,
//! interruptible child in its own process group, the run directory emptied afterwards). Its
//! CSV line ([`crate::parsers::bonnie_pp`]) gives the phases, named as the native workload's
//! (`seq_write_char` … `rand_delete`), with the native metric names where they mean the same:
//!
//! | metric | unit | from bonnie++ |
//! |---|---|---|
//! | `throughput` | MiB/s (headline, higher is better) | the K/sec of the per-char, block, rewrite and read columns |
//! | `rate` | ops/s (headline, higher is better) | the /sec of the seek and file columns |
//! | `lat_max` | µs (latency) | the column's latency (bonnie++'s longest single operation) |
//! | `cpu_process` | % of one CPU | the column's `%CP` (bonnie++'s own CPU of that test) |
//!
//! A `+++++` column (the test ran under 0.5 s, too fast to time) records no headline metric:
//! the phase keeps its latency, and the repeat gets one note naming those phases and what to
//! raise. A `+++` %CP is replaced by the CPU fsbench measured for the whole bonnie++ child. The
//! machine's busy share (`cpu_system`) of every phase is that of the whole child. A phase's
//! wall time is its amount of work divided by bonnie++'s rate (the file size, the per-char size,
//! the seeks, the files), and the whole child's wall time divided among the phases for
//! `+++++` phases, whose time bonnie++ does not say.
//!
//! Defaults follow the native workload's: `size` 512 MiB, `files` 16384 (`-n 16`), chunk
//! 8 KiB. `ram` (bonnie++'s `-r`) defaults to 0, which turns off bonnie++'s check that the
//! file is twice the RAM (fsbench's `drop_caches` policy is what keeps caches honest);
//! `char_size` `0` is `-f` (per-char phases skipped), another value `-f<MiB>`, unset leaves
//! bonnie++ 2.00a's default. As root, bonnie++ refuses to run without `-u`; fsbench passes
//! `-u root`.
//!
//! References: bonnie++(8), `/usr/share/doc/bonnie++/readme.html`.

use crate::host::is_root;
use crate::metric::{CpuUsage, MetricId, PhaseResult, RawSample, Unit};
use crate::parsers::bonnie_pp::{self as report, Amount, Value};
use crate::phase::{Caches, Phases};
use crate::units::Bytes;
use crate::workloads::tool::Tool;
use crate::{EngineError, RunContext, Workload, WorkloadKind};
use crate::{Invalid, Unavailable};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// The tool.
pub const TOOL: Tool = Tool {
    program: "bonnie++",
    package: "bonnie++",
};
/// bonnie++ 2.00a's per-char size when `-f` is not given (`DefaultByteIO`, MiB).
const DEFAULT_CHAR_MIB: u64 = 3;
/// bonnie++'s number of seeks (2.00a: `SeekProcCount` 5 × 8192 / 5, fixed; no option sets it).
pub const SEEKS: u32 = 8192;
/// bonnie++ prints `+++++` for a test that took under this long, in seconds.
pub const TOO_FAST_S: f64 = 0.5;
/// How the note of a repeat with `+++++` phases begins; the phases follow, comma-separated.
const TOO_FAST_NOTE: &str = "bonnie++ printed +++++ for ";

/// The phases a repeat's note says printed `+++++` (none unless `note` is that note).
pub fn too_fast_phases(note: &str) -> Vec<&str> {
    note.strip_prefix(TOO_FAST_NOTE)
        .and_then(|rest| rest.split(" (").next())
        .map(|list| list.split(", ").collect())
        .unwrap_or_default()
}

/// Parameters of the bonnie_pp workload. Sizes take `k`/`M`/`G` suffixes (binary); bonnie++
/// takes MiB, so sizes are rounded down to whole MiB.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BonniePpSpec {
    /// Size of the I/O file (`-s`). Default 512 MiB; `0` skips the I/O phases.
    #[serde(default = "default_size")]
    pub size: Bytes,
    /// Chunk size of the I/O phases (`-s size:chunk`, a power of two from 256 B to 1 MiB).
    /// Default: bonnie++'s (8 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_size: Option<Bytes>,
    /// RAM size bonnie++ assumes (`-r`, MiB); it refuses a `size` under twice this. Default 0
    /// (the check off).
    #[serde(default)]
    pub ram: Bytes,
    /// Number of small files (`-n`, a multiple of 1024). Default 16384; `0` skips the
    /// small-file phases.
    #[serde(default = "default_files")]
    pub files: u32,
    /// Largest small-file size (`-n n:max`). Default 0.
    #[serde(default)]
    pub file_max_size: Bytes,
    /// Smallest small-file size (`-n n:max:min`). Default 0.
    #[serde(default)]
    pub file_min_size: Bytes,
    /// Directories the small files are spread over (`-n n:max:min:dirs`). Default 1.
    #[serde(default = "default_dirs")]
    pub dirs: u32,
    /// Bytes of the per-char phases (`-f<MiB>`); `0` skips them (`-f`). Default: bonnie++'s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub char_size: Option<Bytes>,
    /// Random seed (`-z`), so repeats do the same work. Default: bonnie++ picks one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Extra bonnie++ arguments, passed as they are (e.g. `["-b"]` for an fsync per write).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

fn default_size() -> Bytes {
    Bytes(512 * Bytes::MIB)
}
fn default_files() -> u32 {
    16384
}
fn default_dirs() -> u32 {
    1
}

impl Default for BonniePpSpec {
    fn default() -> Self {
        BonniePpSpec {
            size: default_size(),
            chunk_size: None,
            ram: Bytes(0),
            files: default_files(),
            file_max_size: Bytes(0),
            file_min_size: Bytes(0),
            dirs: default_dirs(),
            char_size: None,
            seed: None,
            options: Vec::new(),
        }
    }
}

/// Options fsbench sets itself.
const FORBIDDEN: &[&str] = &["-d", "-q", "-u", "-x", "-m", "-s", "-n", "-r", "-p", "-y", "-c"];

impl BonniePpSpec {
    fn size_mib(&self) -> u64 {
        self.size.get() / Bytes::MIB
    }

    fn char_mib(&self) -> u64 {
        match self.char_size {
            Some(b) => b.get() / Bytes::MIB,
            None => DEFAULT_CHAR_MIB,
        }
        .min(self.size_mib())
    }

    /// The command line after the program name, for a run in `dir` (`root`: add `-u root`).
    pub fn args(&self, dir: &Path, root: bool) -> Vec<String> {
        let mut a: Vec<String> = vec!["-q".into(), "-d".into(), dir.display().to_string()];
        a.extend(["-m".into(), "fsbench".into()]);
        let mut s = self.size_mib().to_string();
        if let Some(c) = self.chunk_size {
            s.push_str(&format!(":{}", c.get()));
        }
        a.extend(["-s".into(), s]);
        let mut n = (self.files / 1024).to_string();
        if self.files > 0 && (self.file_max_size.get() > 0 || self.dirs > 1) {
            n.push_str(&format!(
                ":{}:{}:{}",
                self.file_max_size.get(),
                self.file_min_size.get(),
                self.dirs
            ));
        }
        a.extend(["-n".into(), n]);
        a.extend(["-r".into(), (self.ram.get() / Bytes::MIB).to_string()]);
        match self.char_size {
            Some(b) if b.get() / Bytes::MIB == 0 => a.push("-f".into()),
            Some(b) => a.push(format!("-f{}", b.get() / Bytes::MIB)),
            None => {}
        }
        if let Some(z) = self.seed {
            a.extend(["-z".into(), z.to_string()]);
        }
        if root {
            a.extend(["-u".into(), "root".into()]);
        }
        a.extend(self.options.iter().cloned());
        a
    }

    /// The work of a phase bonnie++ rates: bytes for I/O, operations for seeks and files.
    pub fn work(&self, phase: &str) -> f64 {
        match phase {
            "seq_write_char" | "seq_read_char" => (self.char_mib() * Bytes::MIB) as f64,
            "random_seeks" => f64::from(SEEKS),
            "seq_write_block" | "rewrite" | "seq_read_block" => (self.size_mib() * Bytes::MIB) as f64,
            _ => f64::from(self.files / 1024 * 1024),
        }
    }

    /// Runs `program` (bonnie++) as one repeat; see the module documentation.
    pub(crate) fn run_with(&self, program: &Path, ctx: &RunContext) -> Result<RawSample, EngineError> {
        let mut p = Phases::new(ctx);
        let first = self.phases().into_iter().next().unwrap_or_else(|| "bonnie_pp".into());
        p.begin(&first, Caches::DropIfAsked);
        let (t, shown) = TOOL.run(&p, program, &self.args(ctx.dir, is_root()), ctx.dir)?;
        Tool::check(&t.value, &shown)?;
        let parsed = report::parse(&t.value.stdout).map_err(|e| Tool::failed(&t.value, &shown, e))?;
        let mut sample = p.finish();
        let fast: Vec<&str> = parsed
            .columns
            .iter()
            .filter(|c| c.value == Value::TooFast)
            .map(|c| c.phase)
            .collect();
        let measured_wall: Duration = parsed
            .columns
            .iter()
            .filter_map(|c| match c.value {
                Value::Measured(v) if v > 0.0 => Some(self.phase_wall(c.phase, c.amount, v)),
                _ => None,
            })
            .sum();
        let fast_wall = t.value.wall.saturating_sub(measured_wall) / (fast.len().max(1) as u32);
        for c in &parsed.columns {
            let mut metrics = Vec::new();
            let wall = match c.value {
                Value::Measured(v) => {
                    metrics.push(match c.amount {
                        Amount::Bytes => (MetricId::higher("throughput", Unit::MibPerSec), v),
                        Amount::Ops => (MetricId::higher("rate", Unit::OpsPerSec), v),
                    });
                    if v > 0.0 {
                        self.phase_wall(c.phase, c.amount, v)
                    } else {
                        fast_wall
                    }
                }
                Value::TooFast => fast_wall,
            };
            if let Some(l) = c.latency_us {
                metrics.push((MetricId::latency("lat_max"), l));
            }
            sample.phases.push(PhaseResult {
                phase: c.phase.to_string(),
                rank: None,
                wall,
                cpu: CpuUsage {
                    process_pct: c.cpu_pct.unwrap_or(t.cpu.process_pct),
                    system_pct: t.cpu.system_pct,
                },
                metrics,
            });
        }
        if !fast.is_empty() {
            sample.notes.push(format!(
                "{TOO_FAST_NOTE}{} (ran under 0.5 s, too fast to time): no number; raise size or files",
                fast.join(", ")
            ));
        }
        Ok(sample)
    }

    /// The rate a phase that printed `+++++` (under [`TOO_FAST_S`]) must have exceeded, in the
    /// unit of its headline metric (MiB/s for bytes, ops/s for seeks and files): its work
    /// divided by 0.5 s. A lower bound, not a measurement.
    pub fn too_fast_bound(&self, phase: &str) -> f64 {
        let work = self.work(phase);
        let work = match report::amount(phase) {
            Some(Amount::Bytes) => work / Bytes::MIB as f64,
            _ => work,
        };
        work / TOO_FAST_S
    }

    fn phase_wall(&self, phase: &str, amount: Amount, rate: f64) -> Duration {
        let work = match amount {
            Amount::Bytes => self.work(phase) / Bytes::MIB as f64,
            Amount::Ops => self.work(phase),
        };
        Duration::try_from_secs_f64(work / rate).unwrap_or_default()
    }
}

impl Workload for BonniePpSpec {
    fn phases(&self) -> Vec<String> {
        report::all_phases()
            .filter(|p| {
                let io = self.size_mib() > 0;
                match *p {
                    "seq_write_char" | "seq_read_char" => io && self.char_size.is_none_or(|c| c.get() >= Bytes::MIB),
                    "seq_write_block" | "rewrite" | "seq_read_block" | "random_seeks" => io,
                    _ => self.files >= 1024,
                }
            })
            .map(str::to_string)
            .collect()
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        let mut s = self.clone();
        if self.size.get() > 0 {
            s.size = self.size.scaled(factor, Bytes::MIB);
            s.size = Bytes(s.size.get() / Bytes::MIB * Bytes::MIB);
        }
        if self.ram.get() > 0 {
            // bonnie++ refuses a file under twice -r: keep the ratio possible, and turn the
            // check off (-r 0) once half the file is under 1 MiB.
            let ram = self.ram.scaled(factor, Bytes::MIB).get() / Bytes::MIB;
            let half = s.size.get() / Bytes::MIB / 2;
            s.ram = Bytes(ram.min(half) * Bytes::MIB);
        }
        if self.files > 0 {
            let k = (f64::from(self.files / 1024) * factor).round().max(1.0);
            s.files = (k as u32).saturating_mul(1024);
        }
        // A set per-char size scales as the native's does (at least 1 MiB), in whole MiB.
        if let Some(c) = self.char_size.filter(|c| c.get() >= Bytes::MIB) {
            s.char_size = Some(Bytes(c.scaled(factor, Bytes::MIB).get() / Bytes::MIB * Bytes::MIB));
        }
        WorkloadKind::BonniePp(s)
    }

    fn validate(&self) -> Result<(), Invalid> {
        if self.size.get() > 0 && self.size_mib() == 0 {
            return Err(Invalid(format!(
                "bonnie_pp size {} is under 1 MiB (bonnie++ takes whole MiB)",
                self.size
            )));
        }
        if self.files % 1024 != 0 {
            return Err(Invalid(format!(
                "bonnie_pp files = {}: bonnie++ counts files in multiples of 1024 (-n)",
                self.files
            )));
        }
        if self.size_mib() == 0 && self.files == 0 {
            return Err("bonnie_pp: size and files are both 0: nothing to run".into());
        }
        if let Some(c) = self.chunk_size {
            let c = c.get();
            if !(256..=Bytes::MIB).contains(&c) || !c.is_power_of_two() {
                return Err(Invalid(format!(
                    "bonnie_pp chunk_size {c}: a power of two from 256 to 1048576 bytes"
                )));
            }
        }
        if self.file_min_size > self.file_max_size {
            return Err("bonnie_pp file_min_size must not exceed file_max_size".into());
        }
        if self.dirs == 0 {
            return Err("bonnie_pp dirs must be at least 1".into());
        }
        let ram = self.ram.get() / Bytes::MIB;
        if ram > 0 && self.size_mib() > 0 && self.size_mib() < 2 * ram {
            return Err(Invalid(format!(
                "bonnie_pp size {} MiB is under twice ram {ram} MiB: bonnie++ refuses it",
                self.size_mib()
            )));
        }
        if let Some(o) = self.options.iter().find(|o| FORBIDDEN.iter().any(|f| o.starts_with(f))) {
            return Err(Invalid(format!(
                "bonnie_pp options: `{o}` is set by fsbench (use size, files, ram, char_size, seed)"
            )));
        }
        Ok(())
    }

    fn availability(&self) -> Result<(), Unavailable> {
        TOOL.locate().map(drop)
    }

    fn tool_versions(&self) -> Vec<(String, String)> {
        // bonnie++ has no --version: its usage text ends with `Version: 2.00a`.
        TOOL.probe(&["-h"])
            .and_then(|t| report::version(&t))
            .map(|v| vec![("bonnie++".to_string(), v)])
            .unwrap_or_default()
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        let size = self.size_mib() * Bytes::MIB;
        super::bonnie::footprint_of(
            size,
            (self.files, self.dirs),
            (self.file_min_size, self.file_max_size),
            22,
        )
    }

    fn describe(&self) -> String {
        format!(
            "bonnie_pp (bonnie++) {}",
            self.args(Path::new("<dir>"), false)[5..].join(" ")
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

    fn quick() -> BonniePpSpec {
        BonniePpSpec {
            size: Bytes(16 * Bytes::MIB),
            files: 1024,
            char_size: Some(Bytes(Bytes::MIB)),
            seed: Some(1),
            ..Default::default()
        }
    }

    #[test]
    fn args_follow_the_spec() {
        let a = quick().args(Path::new("/mnt/x"), true).join(" ");
        assert_eq!(a, "-q -d /mnt/x -m fsbench -s 16 -n 1 -r 0 -f1 -z 1 -u root");
        let s = BonniePpSpec {
            size: Bytes(10 * Bytes::MIB),
            ram: Bytes(4 * Bytes::MIB),
            files: 2048,
            file_max_size: Bytes(4096),
            dirs: 4,
            char_size: Some(Bytes(0)),
            chunk_size: Some(Bytes(4096)),
            ..Default::default()
        };
        assert_eq!(
            s.args(Path::new("/d"), false).join(" "),
            "-q -d /d -m fsbench -s 10:4096 -n 2:4096:0:4 -r 4 -f"
        );
        assert_eq!(s.validate(), Ok(()));
        assert!(!s.phases().iter().any(|p| p.ends_with("_char")), "{:?}", s.phases());
        assert_eq!(quick().phases().len(), 12);
    }

    #[test]
    fn validate_says_what_is_wrong() {
        let bad = |s: BonniePpSpec, want: &str| {
            let e = s.validate().unwrap_err();
            assert!(e.0.contains(want), "{e}");
        };
        bad(BonniePpSpec { files: 1000, ..quick() }, "multiples of 1024");
        bad(
            BonniePpSpec {
                ram: Bytes(16 * Bytes::MIB),
                ..quick()
            },
            "twice ram",
        );
        bad(
            BonniePpSpec {
                options: vec!["-d".into(), "/".into()],
                ..quick()
            },
            "set by fsbench",
        );
        bad(
            BonniePpSpec {
                chunk_size: Some(Bytes(1000)),
                ..quick()
            },
            "power of two",
        );
        let scaled = match BonniePpSpec::default().scaled(0.01) {
            WorkloadKind::BonniePp(s) => s,
            other => panic!("{other:?}"),
        };
        assert_eq!((scaled.size.get() % Bytes::MIB, scaled.files), (0, 1024));
        assert_eq!(scaled.validate(), Ok(()));
        // -s10 -r4 scaled down still satisfies bonnie++'s "file at least twice the RAM".
        let mongo = BonniePpSpec {
            size: Bytes(10 * Bytes::MIB),
            ram: Bytes(4 * Bytes::MIB),
            ..Default::default()
        };
        for f in [0.01, 0.3, 0.5, 2.0] {
            match mongo.scaled(f) {
                WorkloadKind::BonniePp(s) => assert_eq!(s.validate(), Ok(()), "{f}: {s:?}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn runs_the_real_bonnie_and_reports_native_phase_names() {
        if TOOL.locate().is_err() {
            skip_or_fail!("bonnie++ not installed ({})", TOOL.install());
        }
        let dir = tempfile::tempdir().unwrap();
        let flag = AtomicBool::new(false);
        let s = quick();
        let sample = run_quiet(&s, dir.path(), &flag).expect("bonnie++ runs");
        let names: Vec<&str> = sample.phases.iter().map(|p| p.phase.as_str()).collect();
        assert_eq!(names, s.phases());
        for ph in &sample.phases {
            let lat = ph.metrics.iter().filter(|(id, _)| id.role == Role::Latency).count();
            assert_eq!(lat, 1, "{ph:?}");
            assert!(ph.cpu.process_pct >= 0.0, "{ph:?}");
        }
        // Where bonnie++ printed a number, it is a positive rate with the native name.
        let headline = sample
            .phases
            .iter()
            .flat_map(|p| p.metrics.iter().filter(|(id, _)| id.role == Role::Headline))
            .inspect(|(id, v)| assert!(*v > 0.0 && (id.name == "throughput" || id.name == "rate"), "{id:?}"))
            .count();
        let fast = sample.notes.iter().any(|n| n.contains("+++++"));
        assert!(headline == 12 || fast, "{sample:?}");
        assert!(dir_is_empty(dir.path()));
        assert!(s.tool_versions()[0].1.starts_with("2."), "{:?}", s.tool_versions());
    }

    #[test]
    fn bonnie_failing_or_missing_is_an_error_with_its_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let flag = AtomicBool::new(false);
        let ctx = RunContext::quiet(dir.path(), &flag);
        match quick().run_with(Path::new("/nonexistent/bonnie++"), &ctx) {
            Err(EngineError::Unavailable(m)) => assert!(m.contains("apt-get install bonnie++"), "{m}"),
            other => panic!("{other:?}"),
        }
        if TOOL.locate().is_err() {
            skip_or_fail!("bonnie++ not installed ({})", TOOL.install());
        }
        // bonnie++ refuses a size under twice the RAM it is told: it exits 1.
        let bad = BonniePpSpec {
            ram: Bytes(64 * Bytes::MIB),
            ..quick()
        };
        match run_quiet(&bad, dir.path(), &flag) {
            Err(EngineError::Invalid(m)) => assert!(m.contains("failed (exit status: 1)"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(dir_is_empty(dir.path()));
    }

    #[test]
    fn interrupt_kills_bonnie_and_empties_the_directory() {
        if TOOL.locate().is_err() {
            skip_or_fail!("bonnie++ not installed ({})", TOOL.install());
        }
        let dir = tempfile::tempdir().unwrap();
        let s = BonniePpSpec {
            size: Bytes(4 * Bytes::GIB),
            files: 0,
            char_size: Some(Bytes(0)),
            ..Default::default()
        };
        let t0 = std::time::Instant::now();
        let r = crate::run_interrupted_after(&s, dir.path(), Duration::from_millis(700));
        assert!(matches!(r, Err(EngineError::Interrupted)), "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
        assert!(dir_is_empty(dir.path()));
    }
}
