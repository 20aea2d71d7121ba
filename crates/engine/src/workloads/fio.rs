//! The `fio` workload: runs the real fio (Jens Axboe's flexible I/O tester) on the filesystem
//! under test, from a job file or from a few inline options, and turns its JSON report into
//! phases (issue 13, item 1).
//!
//! One repeat is one fio run: `fio --output-format=json+ --eta=never --directory=<run dir> …`,
//! a timed, interruptible child ([`crate::child`]; on Ctrl-C its process group is
//! killed, and then every process left with the run directory as its working directory, since
//! fio's forked job processes start their own sessions) inside one [`Phases::with_children`] region, so the CPU of
//! fio and its job processes is counted. Its report ([`crate::parsers::fio`]) gives one phase
//! per job entry and direction that moved data, named `<jobname>_read`, `_write`, `_trim`:
//!
//! | metric | unit | from fio |
//! |---|---|---|
//! | `iops` | ops/s (headline, higher is better) | `iops` |
//! | `bw` | MiB/s (headline, higher is better) | `bw_bytes` |
//! | `lat_p50`, `lat_p99`, `lat_p999` | µs (latency) | `clat_ns.percentile` 50, 99, 99.9 |
//! | `lat_max` | µs (latency) | `clat_ns.max` |
//!
//! With them, every phase's completion-latency histogram (fio's json+ bins) goes into the
//! sample's `histograms` (stored in the `latency_histograms` table, exported with the sample).
//!
//! fsbench does not re-time fio's numbers. The wall time and CPU of every phase of a repeat are
//! those of the whole fio child (fsbench's measurement; it includes fio laying out its files),
//! since fio runs its jobs in one process tree. Afterwards every entry of the run directory is
//! removed, so the directory is left empty (also after a failure or an interrupt).
//!
//! Inline options: `name` (default: the `rw` value), `rw` (default `randread`), `bs` (4 KiB),
//! `size` (64 MiB per job, passed to fio in bytes: fio's default `kb_base` reads `MiB` as
//! 10^6), `runtime` (5 s; makes the job time-based, like sysbench's `--time`), `ioengine`
//! (`psync`), `iodepth` (1), `numjobs` (1; with more than one, `--group_reporting` makes them one
//! entry), `direct` (false), `shared` (false; true: every job on one file `<name>.shared` in the
//! run directory, fio's `--filename`, as bonnie++'s seekers share its file), and `options`,
//! extra `--key=value` arguments passed as they are.
//! With `job_file`, the inline options except `options` must be left out; `options` then come
//! before the job file (fio's global defaults).
//!
//! [`Workload::phases`] (the plan and the report's rows) is declared before fio runs: from the
//! inline `rw`, or from a tiny reader of the job file ([`JobFile`]: its sections other than
//! `[global]`, and each one's `rw`). The run's phases are those of fio's report, which agree
//! unless the job file makes fio report otherwise (e.g. `numjobs` without `group_reporting`
//! adds numbered entries such as `reader.1_read`).
//!
//! Refused (validate): `directory`, `filename`, `filename_format` or `output*` in a job file or
//! in `options` (fio would leave the filesystem under test, or print no report); a job file
//! section with no `size` (the image could not be sized).
//!
//! References: fio(1), <https://fio.readthedocs.io/en/latest/fio_doc.html>.

use crate::child::{self, ChildError, Sink, Watch};
use crate::metric::{MetricId, RawSample, Unit};
use crate::parsers::fio as report;
use crate::phase::{Caches, Phases};
use crate::units::{Bytes, Dur};
use crate::{EngineError, RunContext, Workload, WorkloadKind};
use crate::{Invalid, Unavailable};
use serde::{Deserialize, Serialize};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// What a missing fio tells the user.
pub const INSTALL: &str = "apt-get install fio";
/// Options fio must not get from a suite: they would move its files off the filesystem under
/// test or change its report.
const FORBIDDEN: &[&str] = &["directory", "filename", "filename_format", "output", "output-format"];
/// Default `rw`.
const DEFAULT_RW: &str = "randread";
/// Length of fio's file names (`<job>.<k>.<n>`) counted in the footprint.
const NAME_LEN: u64 = 24;

/// Parameters of the fio workload; see the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FioSpec {
    /// A fio job file; then only `options` may be given besides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_file: Option<PathBuf>,
    /// Job name (phase prefix). Default: the `rw` value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// fio `rw`: read, write, randread, randwrite, rw, randrw, trim, … Default randread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rw: Option<String>,
    /// Block size. Default 4 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bs: Option<Bytes>,
    /// File size per job. Default 64 MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Bytes>,
    /// Time-based run length. Default 5 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Dur>,
    /// fio `ioengine`. Default psync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ioengine: Option<String>,
    /// fio `iodepth`. Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iodepth: Option<u32>,
    /// fio `numjobs`. Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numjobs: Option<u32>,
    /// fio `direct` (O_DIRECT). Default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct: Option<bool>,
    /// Extra fio arguments, each `--key=value` or `--flag`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// Lay the files out first, in an untimed fio run with the same arguments and
    /// `--create_only=1`, then drop caches (if the run drops them) before the timed run, as
    /// fileio and sysbench fileio prepare their files. Default false: fio lays its files out
    /// inside the timed child, after the caches were dropped, so they start cached — including,
    /// on a loop device, the backing file's pages, which fio's `invalidate=1` does not reach.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prepare: bool,
    /// Every job reads and writes one file, `<name>.shared` in the run directory (fio
    /// `--filename`), each through its own descriptor, as bonnie++'s seekers share its file.
    /// Inline options only. Default false: fio's own file per job (`<name>.<job>.0`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
}

/// A job file read by the tiny INI reader: `(section, key=value pairs)` in file order, the
/// `[global]` section included. Comments (`#`, `;`) and blank lines are skipped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobFile(pub Vec<(String, Vec<(String, String)>)>);

impl JobFile {
    /// Parses fio's job-file syntax (sections and `key=value` or bare `key` lines).
    pub fn parse(text: &str) -> Result<JobFile, Invalid> {
        let mut sections: Vec<(String, Vec<(String, String)>)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') || l.starts_with(';') {
                continue;
            }
            if let Some(name) = l.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
                sections.push((name.trim().to_string(), Vec::new()));
                continue;
            }
            let Some((_, kv)) = sections.last_mut() else {
                return Err(Invalid(format!("line {}: `{l}` is outside any [section]", i + 1)));
            };
            let (k, v) = l.split_once('=').unwrap_or((l, ""));
            kv.push((k.trim().to_string(), v.trim().to_string()));
        }
        Ok(JobFile(sections))
    }

    fn get<'a>(kv: &'a [(String, String)], key: &str) -> Option<&'a str> {
        kv.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// `key` of job `section`, else of `[global]`.
    fn value<'a>(&'a self, section: &'a [(String, String)], key: &str) -> Option<&'a str> {
        Self::get(section, key).or_else(|| self.global().and_then(|g| Self::get(g, key)))
    }

    fn global(&self) -> Option<&[(String, String)]> {
        self.0.iter().find(|(n, _)| n == "global").map(|(_, kv)| kv.as_slice())
    }

    /// The job sections (all but `[global]`).
    fn jobs(&self) -> impl Iterator<Item = &(String, Vec<(String, String)>)> {
        self.0.iter().filter(|(n, _)| n != "global")
    }
}

/// The directions fio reports for an `rw` value (fio's default is `read`).
fn directions(rw: &str) -> &'static [&'static str] {
    // fio allows `rw=randread:8` (a sequence modifier) after a colon.
    match rw.split(':').next().unwrap_or("").trim() {
        "read" | "randread" => &["read"],
        "write" | "randwrite" => &["write"],
        "rw" | "readwrite" | "randrw" => &["read", "write"],
        "trim" | "randtrim" => &["trim"],
        "trimwrite" | "randtrimwrite" => &["write", "trim"],
        _ => &[],
    }
}

/// The option name of `--key=value`, `--key` or a job-file `key`.
fn option_key(arg: &str) -> &str {
    let a = arg.trim_start_matches('-');
    a.split_once('=').map_or(a, |(k, _)| k)
}

impl FioSpec {
    fn name(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.rw().to_string())
    }
    fn rw(&self) -> &str {
        self.rw.as_deref().unwrap_or(DEFAULT_RW)
    }
    fn bs(&self) -> Bytes {
        self.bs.unwrap_or(Bytes(4 * Bytes::KIB))
    }
    fn size(&self) -> Bytes {
        self.size.unwrap_or(Bytes(64 * Bytes::MIB))
    }
    fn runtime(&self) -> Dur {
        self.runtime.unwrap_or(Dur(Duration::from_secs(5)))
    }
    fn numjobs(&self) -> u32 {
        self.numjobs.unwrap_or(1)
    }

    fn inline_set(&self) -> bool {
        self.name.is_some()
            || self.rw.is_some()
            || self.bs.is_some()
            || self.size.is_some()
            || self.runtime.is_some()
            || self.ioengine.is_some()
            || self.iodepth.is_some()
            || self.numjobs.is_some()
            || self.direct.is_some()
            || self.shared
    }

    fn job_file(&self) -> Result<Option<JobFile>, Invalid> {
        let Some(path) = &self.job_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path).map_err(|e| format!("fio job_file {}: {e}", path.display()))?;
        JobFile::parse(&text)
            .map(Some)
            .map_err(|e| Invalid(format!("fio job_file {}: {e}", path.display())))
    }

    /// The command line after the program name, for a run in `dir`.
    pub fn args(&self, dir: &Path) -> Vec<String> {
        let mut a = vec![
            "--output-format=json+".to_string(),
            "--eta=never".to_string(),
            format!("--directory={}", dir.display()),
        ];
        match &self.job_file {
            Some(path) => {
                a.extend(self.options.iter().cloned());
                a.push(path.display().to_string());
            }
            None => {
                a.push(format!("--name={}", self.name()));
                a.push(format!("--rw={}", self.rw()));
                a.push(format!("--bs={}", self.bs().get()));
                a.push(format!("--size={}", self.size().get()));
                a.push(format!("--runtime={}ms", self.runtime().0.as_millis().max(1)));
                a.push("--time_based=1".to_string());
                a.push(format!("--ioengine={}", self.ioengine.as_deref().unwrap_or("psync")));
                a.push(format!("--iodepth={}", self.iodepth.unwrap_or(1)));
                a.push(format!("--numjobs={}", self.numjobs()));
                if self.numjobs() > 1 {
                    a.push("--group_reporting=1".to_string());
                }
                a.push(format!("--direct={}", u8::from(self.direct.unwrap_or(false))));
                if self.shared {
                    // A plain name: fio puts it in --directory, the filesystem under test.
                    a.push(format!("--filename={}.shared", self.name()));
                }
                a.extend(self.options.iter().cloned());
            }
        }
        a
    }

    /// Runs `program` (fio) as one repeat; see the module documentation.
    fn run_with(&self, program: &Path, ctx: &RunContext) -> Result<RawSample, EngineError> {
        let mut p = Phases::new(ctx);
        if self.prepare {
            self.lay_out(program, ctx)?;
        }
        let first = self.phases().into_iter().next().unwrap_or_else(|| "fio".into());
        p.begin(&first, Caches::DropIfAsked);
        let mut cmd = Command::new(program);
        cmd.args(self.args(ctx.dir)).current_dir(ctx.dir).process_group(0);
        let shown = child::describe(&cmd);
        let watch = Watch {
            interrupt: Some(ctx.interrupt),
            timeout: None,
            kill_group: true,
        };
        let ran = p.with_children(None, || {
            child::run(&mut cmd, Sink::Capture, Sink::Capture, watch).map_err(|e| match e {
                ChildError::Interrupted => EngineError::Interrupted,
                ChildError::Spawn(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    EngineError::Unavailable(format!("{} not found: {INSTALL}", program.display()))
                }
                ChildError::Spawn(e) => EngineError::io(format!("run {shown}"), e),
                ChildError::Io(e) => EngineError::io(format!("wait for {shown}"), e),
                ChildError::TimedOut(_) => EngineError::Invalid(format!("{shown}: {e}")),
            })
        });
        // On an interrupt only fio's main process was killed and reaped; its job processes
        // (in their own sessions) would run on and keep the filesystem busy: kill them too.
        kill_processes_in(ctx.dir);
        let cleaned = empty_dir(ctx.dir);
        let t = ran?;
        cleaned?;
        let done = &t.value;
        if !done.status.success() {
            return Err(EngineError::Invalid(format!(
                "{shown} failed ({}): {}",
                done.status,
                tool_text(done)
            )));
        }
        let parsed = report::parse(&done.stdout)
            .map_err(|e| EngineError::Invalid(format!("{shown}: {e}; stderr: {}", done.stderr.trim())))?;
        for ph in &parsed.phases {
            let mut metrics = vec![
                (MetricId::higher("iops", Unit::OpsPerSec), ph.iops),
                (MetricId::higher("bw", Unit::MibPerSec), ph.bw_mib_s),
            ];
            if let Some([p50, p99, p999]) = ph.clat_us {
                metrics.push((MetricId::latency("lat_p50"), p50));
                metrics.push((MetricId::latency("lat_p99"), p99));
                metrics.push((MetricId::latency("lat_p999"), p999));
            }
            metrics.push((MetricId::latency("lat_max"), ph.clat_max_us));
            p.record(&ph.name, &t, metrics, &Default::default());
        }
        let mut sample = p.finish();
        sample.histograms = parsed
            .phases
            .into_iter()
            .filter(|ph| !ph.clat_bins.is_empty())
            .map(|ph| crate::metric::LatencyHistogram {
                phase: ph.name,
                bins: ph.clat_bins,
            })
            .collect();
        Ok(sample)
    }
}

impl FioSpec {
    /// `prepare`: fio with the same arguments and `--create_only=1` (lays the files out and
    /// exits), untimed. On failure or interrupt the run directory is emptied.
    fn lay_out(&self, program: &Path, ctx: &RunContext) -> Result<(), EngineError> {
        let mut cmd = Command::new(program);
        cmd.args(self.args(ctx.dir))
            .arg("--create_only=1")
            .current_dir(ctx.dir)
            .process_group(0);
        let shown = child::describe(&cmd);
        let watch = Watch {
            interrupt: Some(ctx.interrupt),
            timeout: None,
            kill_group: true,
        };
        let done = child::run(&mut cmd, Sink::Capture, Sink::Capture, watch);
        let failed = match done {
            Ok(d) if d.status.success() => return Ok(()),
            Ok(d) => EngineError::Invalid(format!("{shown} (prepare) failed ({}): {}", d.status, tool_text(&d))),
            Err(ChildError::Interrupted) => EngineError::Interrupted,
            Err(ChildError::Spawn(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                EngineError::Unavailable(format!("{} not found: {INSTALL}", program.display()))
            }
            Err(e) => EngineError::Invalid(format!("{shown} (prepare): {e}")),
        };
        kill_processes_in(ctx.dir);
        let _ = empty_dir(ctx.dir);
        Err(failed)
    }
}

/// fio's stderr, or its stdout when stderr is empty (it prints some option errors there),
/// trimmed to the last 2,000 characters.
pub(crate) fn tool_text(done: &child::Finished) -> String {
    let t = if done.stderr.trim().is_empty() {
        done.stdout.trim()
    } else {
        done.stderr.trim()
    };
    let skip = t.chars().count().saturating_sub(2000);
    t.chars().skip(skip).collect()
}

/// Longest wait for fio's job processes to leave the run directory after a kill.
const LEAVE_TIMEOUT: Duration = Duration::from_secs(30);

/// SIGKILLs every process whose working directory is `dir` and waits (polling every 10 ms,
/// at most [`LEAVE_TIMEOUT`]) until none is left. fio runs in `dir` and its job processes
/// inherit it; they call setsid(2), so killing fio's process group does not reach them.
pub(crate) fn kill_processes_in(dir: &Path) {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return;
    };
    let inside = || -> Vec<i32> {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let pid: i32 = e.file_name().to_str()?.parse().ok()?;
                std::fs::read_link(e.path().join("cwd"))
                    .is_ok_and(|c| c == dir)
                    .then_some(pid)
            })
            .collect()
    };
    let t0 = std::time::Instant::now();
    loop {
        let pids = inside();
        if pids.is_empty() || t0.elapsed() > LEAVE_TIMEOUT {
            return;
        }
        for pid in pids {
            // SAFETY: kill(2) on a pid; no memory involved.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Removes every entry of `dir` (fio's data files), keeping `dir`.
pub(crate) fn empty_dir(dir: &Path) -> Result<(), EngineError> {
    let rd = std::fs::read_dir(dir).map_err(|e| EngineError::io(format!("read directory {}", dir.display()), e))?;
    for e in rd {
        let e = e.map_err(|e| EngineError::io(format!("read directory {}", dir.display()), e))?;
        let path = e.path();
        let r = if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        r.map_err(|e| EngineError::io(format!("remove {}", path.display()), e))?;
    }
    Ok(())
}

/// Where fio is, or what to install.
fn locate(program: &str) -> Result<PathBuf, Unavailable> {
    crate::host::find_tool(program).ok_or_else(|| {
        Unavailable(format!(
            "{program} is not installed: run `{INSTALL}` (or scripts/install.sh)"
        ))
    })
}

impl Workload for FioSpec {
    fn phases(&self) -> Vec<String> {
        let per_job =
            |name: &str, rw: &str| -> Vec<String> { directions(rw).iter().map(|d| format!("{name}_{d}")).collect() };
        match self.job_file() {
            Ok(Some(jf)) => jf
                .jobs()
                .flat_map(|(name, kv)| per_job(name, jf.value(kv, "rw").unwrap_or("read")))
                .collect(),
            Ok(None) => per_job(&self.name(), self.rw()),
            // validate() reports the unreadable file; the plan shows one row meanwhile.
            Err(_) => vec!["fio".to_string()],
        }
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        let mut s = self.clone();
        if s.job_file.is_none() {
            s.size = Some(self.size().scaled(factor, Bytes::MIB));
            s.runtime = Some(self.runtime().scaled(factor, Duration::from_secs(1)));
        }
        WorkloadKind::Fio(s)
    }

    fn validate(&self) -> Result<(), Invalid> {
        for o in &self.options {
            if !o.starts_with("--") {
                return Err(Invalid(format!("fio options: `{o}` must be written `--key=value`")));
            }
            if FORBIDDEN.contains(&option_key(o)) {
                return Err(Invalid(format!(
                    "fio options: `{o}` is not allowed: fsbench sets the directory and the output format"
                )));
            }
        }
        match self.job_file()? {
            Some(jf) => {
                if self.inline_set() {
                    return Err(Invalid(
                        "fio: give either job_file or inline options (rw, bs, size, …), not both; `options` may go with either"
                            .into(),
                    ));
                }
                if jf.jobs().next().is_none() {
                    return Err("fio job_file has no job section".into());
                }
                for (name, kv) in &jf.0 {
                    if let Some((k, _)) = kv.iter().find(|(k, _)| FORBIDDEN.contains(&k.as_str())) {
                        return Err(Invalid(format!(
                            "fio job_file [{name}]: `{k}` is not allowed: fsbench runs fio in the filesystem under test"
                        )));
                    }
                }
                for (name, kv) in jf.jobs() {
                    let rw = jf.value(kv, "rw").unwrap_or("read");
                    if directions(rw).is_empty() {
                        return Err(Invalid(format!("fio job_file [{name}]: unknown rw={rw}")));
                    }
                    match jf.value(kv, "size") {
                        None => {
                            return Err(Invalid(format!(
                                "fio job_file [{name}]: no size (fsbench needs it to size the filesystem)"
                            )))
                        }
                        Some(s) if s.parse::<Bytes>().is_err() && !s.ends_with('%') => {
                            return Err(Invalid(format!("fio job_file [{name}]: unreadable size={s}")))
                        }
                        _ => {}
                    }
                }
                Ok(())
            }
            None => {
                if directions(self.rw()).is_empty() {
                    return Err(Invalid(format!(
                        "fio rw = {:?}: use read, write, randread, randwrite, rw, randrw, trim, randtrim or trimwrite",
                        self.rw()
                    )));
                }
                let name = self.name();
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                    return Err(Invalid(format!("fio name {name:?}: use letters, digits, '_' and '-'")));
                }
                if self.bs().get() == 0 || self.size().get() < self.bs().get() {
                    return Err(Invalid(format!(
                        "fio: size {} must be at least bs {} (> 0)",
                        self.size(),
                        self.bs()
                    )));
                }
                if self.runtime().0 < Duration::from_millis(1) {
                    return Err("fio runtime must be at least 1ms".into());
                }
                if self.iodepth == Some(0) || self.numjobs == Some(0) {
                    return Err("fio iodepth and numjobs must be at least 1".into());
                }
                Ok(())
            }
        }
    }

    fn availability(&self) -> Result<(), Unavailable> {
        locate("fio").map(drop)
    }

    fn tool_versions(&self) -> Vec<(String, String)> {
        let Ok(path) = locate("fio") else {
            return Vec::new();
        };
        let out = Command::new(path).arg("--version").output();
        out.ok()
            .and_then(|o| report::version(String::from_utf8_lossy(&o.stdout).lines().next()?))
            .map(|v| vec![("fio".to_string(), v)])
            .unwrap_or_default()
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        let fp = crate::fstype::Footprint::default();
        match self.job_file() {
            Ok(Some(jf)) => jf.jobs().fold(fp, |fp, (_, kv)| {
                let size = jf
                    .value(kv, "size")
                    .and_then(|s| s.parse::<Bytes>().ok())
                    .map_or(0, Bytes::get);
                let n = jf.value(kv, "numjobs").and_then(|s| s.parse::<u64>().ok()).unwrap_or(1);
                fp.files(n, size, NAME_LEN)
            }),
            _ if self.job_file.is_some() => fp,
            _ if self.shared => fp.files(1, self.size().get(), NAME_LEN),
            _ => fp.files(u64::from(self.numjobs()), self.size().get(), NAME_LEN),
        }
    }

    fn describe(&self) -> String {
        match &self.job_file {
            Some(p) => format!("fio job file {} {}", p.display(), self.options.join(" "))
                .trim_end()
                .to_string(),
            None => format!(
                "fio {} bs={} size={} runtime={} ioengine={} iodepth={} numjobs={} direct={}{}{}{}",
                self.rw(),
                self.bs(),
                self.size(),
                self.runtime(),
                self.ioengine.as_deref().unwrap_or("psync"),
                self.iodepth.unwrap_or(1),
                self.numjobs(),
                u8::from(self.direct.unwrap_or(false)),
                self.options.iter().map(|o| format!(" {o}")).collect::<String>(),
                if self.shared {
                    " (every job on one shared file)"
                } else {
                    ""
                },
                if self.prepare {
                    " (files laid out before the caches are dropped)"
                } else {
                    ""
                }
            ),
        }
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        let program = locate("fio")?;
        self.run_with(&program, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::Role;
    use crate::{dir_is_empty, run_quiet};
    use std::sync::atomic::AtomicBool;

    fn have_fio() -> bool {
        locate("fio").is_ok()
    }

    fn quick(rw: &str) -> FioSpec {
        FioSpec {
            rw: Some(rw.into()),
            size: Some(Bytes(4 * Bytes::MIB)),
            runtime: Some(Dur(Duration::from_millis(300))),
            ..Default::default()
        }
    }

    #[test]
    fn job_file_phases_and_footprint_come_from_its_sections() {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("tests/fixtures/fio/two-jobs.fio");
        let s = FioSpec {
            job_file: Some(path),
            ..Default::default()
        };
        assert_eq!(s.validate(), Ok(()));
        assert_eq!(s.phases(), ["writer_write", "reader_read"]);
        let fp = s.footprint();
        assert_eq!((fp.files, fp.block_bytes), (2, 16 * Bytes::MIB));
        assert!(s.describe().starts_with("fio job file "), "{}", s.describe());
        let both = FioSpec {
            rw: Some("read".into()),
            ..s.clone()
        };
        assert!(both.validate().unwrap_err().0.contains("not both"));
    }

    #[test]
    fn validate_says_what_is_wrong() {
        let jf = JobFile::parse("[global]\nsize=1M\n[a]\nrw=randrw\ndirectory=/tmp\n").unwrap();
        assert_eq!(jf.0.len(), 2);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.fio");
        std::fs::write(&p, "[a]\nrw=read\ndirectory=/tmp\nsize=1M\n").unwrap();
        let s = FioSpec {
            job_file: Some(p.clone()),
            ..Default::default()
        };
        assert!(s.validate().unwrap_err().0.contains("`directory` is not allowed"));
        std::fs::write(&p, "[a]\nrw=read\n").unwrap();
        assert!(s.validate().unwrap_err().0.contains("no size"));
        let missing = FioSpec {
            job_file: Some(dir.path().join("none.fio")),
            ..Default::default()
        };
        assert!(missing.validate().unwrap_err().0.contains("none.fio"));
        let bad = |f: FioSpec, want: &str| {
            let e = f.validate().unwrap_err();
            assert!(e.0.contains(want), "{e}");
        };
        bad(quick("sideways"), "use read, write");
        bad(
            FioSpec {
                options: vec!["--filename=/dev/sda".into()],
                ..quick("read")
            },
            "not allowed",
        );
        bad(
            FioSpec {
                options: vec!["fsync=1".into()],
                ..quick("read")
            },
            "--key=value",
        );
        bad(
            FioSpec {
                numjobs: Some(0),
                ..quick("read")
            },
            "at least 1",
        );
        assert_eq!(quick("randrw").phases(), ["randrw_read", "randrw_write"]);
    }

    #[test]
    fn inline_args_pass_sizes_in_bytes_and_group_clones() {
        let s = FioSpec {
            numjobs: Some(2),
            options: vec!["--fsync=1".into()],
            ..quick("randwrite")
        };
        let a = s.args(Path::new("/mnt/x"));
        for want in [
            "--output-format=json+",
            "--directory=/mnt/x",
            "--size=4194304",
            "--bs=4096",
            "--runtime=300ms",
            "--group_reporting=1",
        ] {
            assert!(a.iter().any(|x| x == want), "{want} not in {a:?}");
        }
        assert_eq!(a.last().map(String::as_str), Some("--fsync=1"));
        let fp = s.footprint();
        assert_eq!((fp.files, fp.block_bytes), (2, 8 * Bytes::MIB));
    }

    #[test]
    fn shared_jobs_use_one_file_in_the_run_directory() {
        let s = FioSpec {
            numjobs: Some(5),
            shared: true,
            ..quick("randrw")
        };
        let a = s.args(Path::new("/mnt/x"));
        assert!(a.iter().any(|x| x == "--filename=randrw.shared"), "{a:?}");
        let fp = s.footprint();
        assert_eq!(
            (fp.files, fp.block_bytes),
            (1, 4 * Bytes::MIB),
            "one file, not one per job"
        );
        assert!(s.describe().contains("one shared file"), "{}", s.describe());
        // Only with inline options.
        let jf = FioSpec {
            job_file: Some(
                Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("tests/fixtures/fio/two-jobs.fio"),
            ),
            shared: true,
            ..Default::default()
        };
        assert!(jf.validate().unwrap_err().0.contains("not both"));
        if !have_fio() {
            skip_or_fail!("fio not installed ({INSTALL})");
        }
        // The real fio: five jobs, one file of `size` in the run directory.
        let dir = tempfile::tempdir().unwrap();
        let flag = AtomicBool::new(false);
        let seen = std::sync::Mutex::new(Vec::new());
        let s = FioSpec {
            options: vec!["--time_based=0".into(), "--number_ios=20".into()],
            ..s
        };
        let mut cmd = Command::new(locate("fio").unwrap());
        cmd.args(s.args(dir.path())).arg("--create_only=1");
        assert!(cmd.status().expect("fio runs").success());
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let e = e.unwrap();
            seen.lock().unwrap().push((e.file_name(), e.metadata().unwrap().len()));
        }
        assert_eq!(
            *seen.lock().unwrap(),
            [(std::ffi::OsString::from("randrw.shared"), 4 * Bytes::MIB)]
        );
        let sample = run_quiet(&s, dir.path(), &flag).expect("fio runs");
        assert_eq!(sample.phases.len(), 2, "read and write");
        assert!(dir_is_empty(dir.path()));
    }

    #[test]
    fn runs_the_real_fio_and_leaves_the_directory_empty() {
        if !have_fio() {
            skip_or_fail!("fio not installed ({INSTALL})");
        }
        let dir = tempfile::tempdir().unwrap();
        let flag = AtomicBool::new(false);
        // 1 s, not quick()'s 300 ms: on a loaded machine 300 ms of randrw once moved no write
        // bytes, and a direction that moved nothing is (rightly) not a phase.
        let s = FioSpec {
            runtime: Some(Dur(Duration::from_secs(1))),
            ..quick("randrw")
        };
        let sample = run_quiet(&s, dir.path(), &flag).expect("fio runs");
        let names: Vec<&str> = sample.phases.iter().map(|p| p.phase.as_str()).collect();
        assert_eq!(names, s.phases());
        for ph in &sample.phases {
            let m = |n: &str| ph.metrics.iter().find(|(id, _)| id.name == n).map(|(_, v)| *v);
            assert!(m("iops").unwrap() > 0.0 && m("bw").unwrap() > 0.0, "{ph:?}");
            // fio's percentiles are histogram bucket values; the exact max may be below p99.
            assert!(m("lat_p50").unwrap() <= m("lat_p999").unwrap(), "{ph:?}");
            let lat = ph.metrics.iter().filter(|(id, _)| id.role == Role::Latency).count();
            assert_eq!(lat, 4, "{ph:?}");
            assert!(ph.wall >= Duration::from_millis(300), "{ph:?}");
            assert!(ph.cpu.process_pct > 0.0, "{ph:?}");
        }
        let hist: Vec<&str> = sample.histograms.iter().map(|h| h.phase.as_str()).collect();
        assert_eq!(hist, s.phases(), "every phase has its histogram");
        assert!(sample
            .histograms
            .iter()
            .all(|h| h.bins.iter().map(|b| b.1).sum::<u64>() > 0));
        assert!(dir_is_empty(dir.path()));
    }

    #[test]
    fn prepare_lays_the_files_out_before_the_phase_begins() {
        if !have_fio() {
            skip_or_fail!("fio not installed ({INSTALL})");
        }
        // Left out of the stored spec when false, so existing case ids do not change.
        assert!(!serde_json::to_string(&quick("read")).unwrap().contains("prepare"));
        let s: FioSpec = toml::from_str("rw = \"read\"\nprepare = true").expect("toml");
        assert!(
            s.prepare && s.describe().contains("laid out before"),
            "{}",
            s.describe()
        );
        // What the directory holds when the timed phase begins (where caches are dropped):
        // fio's file with `prepare`, nothing without it (fio lays it out inside the timed run).
        for prepare in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let flag = AtomicBool::new(false);
            let seen = std::sync::Mutex::new(None);
            let on_phase = |_: &str| {
                let n = std::fs::read_dir(dir.path()).map(|d| d.count()).unwrap_or(0);
                *seen.lock().expect("test mutex") = Some(n);
            };
            let ctx = RunContext {
                on_phase: &on_phase,
                ..RunContext::quiet(dir.path(), &flag)
            };
            let spec = FioSpec {
                prepare,
                ..quick("read")
            };
            let sample = spec.run_with(&locate("fio").unwrap(), &ctx).expect("fio runs");
            assert_eq!(sample.phases.len(), 1);
            let files = seen.lock().expect("test mutex").expect("the phase began");
            assert_eq!(
                files > 0,
                prepare,
                "{files} entries at the phase start, prepare = {prepare}"
            );
            assert!(dir_is_empty(dir.path()));
        }
        // A failing preparation is an error naming it, and leaves the directory empty.
        let dir = tempfile::tempdir().unwrap();
        let flag = AtomicBool::new(false);
        let bad = FioSpec {
            prepare: true,
            options: vec!["--no-such-option=1".into()],
            ..quick("read")
        };
        match run_quiet(&bad, dir.path(), &flag) {
            Err(EngineError::Invalid(m)) => assert!(m.contains("(prepare)") && m.contains("no-such-option"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(dir_is_empty(dir.path()));
    }

    #[test]
    fn fio_failing_or_missing_is_an_error_with_its_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let flag = AtomicBool::new(false);
        let ctx = RunContext::quiet(dir.path(), &flag);
        match quick("read").run_with(Path::new("/nonexistent/fio"), &ctx) {
            Err(EngineError::Unavailable(m)) => assert!(m.contains("apt-get install fio"), "{m}"),
            other => panic!("{other:?}"),
        }
        if !have_fio() {
            skip_or_fail!("fio not installed ({INSTALL})");
        }
        let bad = FioSpec {
            options: vec!["--no-such-option=1".into()],
            ..quick("read")
        };
        match run_quiet(&bad, dir.path(), &flag) {
            Err(EngineError::Invalid(m)) => {
                assert!(m.contains("no-such-option") && m.contains("exit status: 1"), "{m}")
            }
            other => panic!("{other:?}"),
        }
        assert!(dir_is_empty(dir.path()));
    }

    #[test]
    fn interrupt_kills_fio_and_empties_the_directory() {
        if !have_fio() {
            skip_or_fail!("fio not installed ({INSTALL})");
        }
        let dir = tempfile::tempdir().unwrap();
        let s = FioSpec {
            runtime: Some(Dur(Duration::from_secs(60))),
            ..quick("randread")
        };
        let t0 = std::time::Instant::now();
        let r = crate::run_interrupted_after(&s, dir.path(), Duration::from_millis(700));
        assert!(matches!(r, Err(EngineError::Interrupted)), "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
        assert!(dir_is_empty(dir.path()));
        // No fio job process runs on in the directory (they leave fio's process group).
        let d = std::fs::canonicalize(dir.path()).unwrap();
        let left = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|c| c == d))
            .count();
        assert_eq!(left, 0);
    }
}
