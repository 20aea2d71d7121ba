//! The `dbench` workload: the real dbench 4 (Debian package `dbench`) running a loadfile —
//! by default the package's `/usr/share/dbench/client.txt`, a NetBench trace of a Windows file
//! server's clients — against the filesystem under test (issue 13, item 1).
//!
//! One repeat is one `dbench -t <s> -D <run dir> -c <loadfile> [-s] [-S] [-F] <clients>` run,
//! one phase named `dbench` ([`super::tool::Tool`]: a timed, interruptible child in its own
//! process group; the run directory emptied afterwards, dbench's `clients/` tree included).
//!
//! | metric | unit | from dbench |
//! |---|---|---|
//! | `throughput` | MiB/s (headline) | `Throughput … MB/sec` (dbench's 10^6 bytes, converted) |
//! | `lat_max` | µs (latency) | `max_latency` |
//! | `lat_avg_<op>`, `lat_max_<op>` | µs (latency) | the per-operation table's AvgLat and MaxLat, `<op>` lowercased (`ntcreatex`, `readx`, `writex`, `flush`, …) |
//!
//! The phase's wall time and CPU are those of the dbench child (fsbench's measurement; its
//! clients are forked processes, reaped by dbench, so their CPU is counted).
//!
//! References: dbench(1), `/usr/share/doc/dbench/README.gz`.

use crate::metric::{MetricId, RawSample, Unit};
use crate::parsers::dbench as report;
use crate::phase::{Caches, Phases};
use crate::units::{Bytes, Dur};
use crate::workloads::tool::Tool;
use crate::{EngineError, RunContext, Workload, WorkloadKind};
use crate::{Invalid, Unavailable};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The tool.
pub const TOOL: Tool = Tool {
    program: "dbench",
    package: "dbench",
};
/// The loadfile Debian's package installs.
pub const CLIENT_TXT: &str = "/usr/share/dbench/client.txt";
/// The phase.
pub const PHASE: &str = "dbench";

/// Parameters of the dbench workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DbenchSpec {
    /// Client processes (dbench's positional argument). Default 2.
    #[serde(default = "default_clients")]
    pub clients: u32,
    /// Run length (`-t`), whole seconds. Default 10 s.
    #[serde(default = "default_time")]
    pub time: Dur,
    /// The loadfile (`-c`). Default `/usr/share/dbench/client.txt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loadfile: Option<PathBuf>,
    /// Open files O_SYNC (`-s`). Default false.
    #[serde(default)]
    pub sync: bool,
    /// Sync directory changes (`-S`). Default false.
    #[serde(default)]
    pub sync_dirs: bool,
    /// fsync on write (`-F`). Default false.
    #[serde(default)]
    pub fsync: bool,
}

fn default_clients() -> u32 {
    2
}
fn default_time() -> Dur {
    Dur(Duration::from_secs(10))
}

impl Default for DbenchSpec {
    fn default() -> Self {
        DbenchSpec {
            clients: default_clients(),
            time: default_time(),
            loadfile: None,
            sync: false,
            sync_dirs: false,
            fsync: false,
        }
    }
}

impl DbenchSpec {
    fn loadfile(&self) -> PathBuf {
        self.loadfile.clone().unwrap_or_else(|| PathBuf::from(CLIENT_TXT))
    }

    /// dbench's arguments for a run in `dir`.
    pub fn args(&self, dir: &Path) -> Vec<String> {
        let mut a = vec![
            "-t".to_string(),
            self.time.0.as_secs().to_string(),
            "-D".to_string(),
            dir.display().to_string(),
            "-c".to_string(),
            self.loadfile().display().to_string(),
        ];
        for (on, flag) in [(self.sync, "-s"), (self.sync_dirs, "-S"), (self.fsync, "-F")] {
            if on {
                a.push(flag.to_string());
            }
        }
        a.push(self.clients.to_string());
        a
    }

    /// Runs `program` (dbench) as one repeat; see the module documentation.
    pub(crate) fn run_with(&self, program: &Path, ctx: &RunContext) -> Result<RawSample, EngineError> {
        let mut p = Phases::new(ctx);
        p.begin(PHASE, Caches::DropIfAsked);
        let (t, shown) = TOOL.run(&p, program, &self.args(ctx.dir), ctx.dir)?;
        Tool::check(&t.value, &shown)?;
        let r = report::parse(&t.value.stdout).map_err(|e| Tool::failed(&t.value, &shown, e))?;
        let mut m = vec![
            (MetricId::higher("throughput", Unit::MibPerSec), r.throughput_mib_s),
            (MetricId::latency("lat_max"), r.max_latency_us),
        ];
        for op in &r.ops {
            let name = op.name.to_ascii_lowercase();
            m.push((MetricId::latency(&format!("lat_avg_{name}")), op.avg_us));
            m.push((MetricId::latency(&format!("lat_max_{name}")), op.max_us));
        }
        p.record(PHASE, &t, m, &Default::default());
        Ok(p.finish())
    }
}

impl Workload for DbenchSpec {
    fn phases(&self) -> Vec<String> {
        vec![PHASE.to_string()]
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        let mut s = self.clone();
        let t = self.time.scaled(factor, Duration::from_secs(1));
        s.time = Dur(Duration::from_secs(t.0.as_secs()));
        WorkloadKind::Dbench(s)
    }

    fn validate(&self) -> Result<(), Invalid> {
        if self.clients == 0 {
            return Err("dbench clients must be at least 1".into());
        }
        if self.time.0 < Duration::from_secs(1) || self.time.0.subsec_nanos() != 0 {
            return Err(Invalid(format!(
                "dbench time {}: whole seconds, at least 1 (dbench -t)",
                self.time
            )));
        }
        if let Some(l) = &self.loadfile {
            if !l.is_file() {
                return Err(Invalid(format!("dbench loadfile {}: no such file", l.display())));
            }
        }
        Ok(())
    }

    fn availability(&self) -> Result<(), Unavailable> {
        TOOL.locate()?;
        if self.loadfile.is_none() && !Path::new(CLIENT_TXT).is_file() {
            return Err(Unavailable(format!(
                "{CLIENT_TXT} is missing: run `{}`",
                TOOL.install()
            )));
        }
        Ok(())
    }

    fn tool_versions(&self) -> Vec<(String, String)> {
        // dbench prints its banner before it reads its options.
        TOOL.probe(&["--help"])
            .and_then(|t| report::version(&t))
            .map(|v| vec![("dbench".to_string(), v)])
            .unwrap_or_default()
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        // Measured here with 2 clients for 4 s, sampling `du -sb` and `find` of `clients/`
        // every 0.1 s: at most 47 MB in 160 files and 23 directories. Counted with a margin:
        // 100 files of 320 KiB and 16 directories per client.
        let n = u64::from(self.clients);
        crate::fstype::Footprint::default()
            .dirs(16 * n + 1, 12)
            .files(100 * n, 320 * Bytes::KIB, 24)
    }

    fn describe(&self) -> String {
        format!(
            "dbench clients={} time={} loadfile={}{}{}{}",
            self.clients,
            self.time,
            self.loadfile().display(),
            if self.sync { " -s" } else { "" },
            if self.sync_dirs { " -S" } else { "" },
            if self.fsync { " -F" } else { "" }
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

    fn quick() -> DbenchSpec {
        DbenchSpec {
            time: Dur(Duration::from_secs(2)),
            ..Default::default()
        }
    }

    #[test]
    fn args_and_validation() {
        let a = DbenchSpec { fsync: true, ..quick() }.args(Path::new("/m"));
        assert_eq!(a.join(" "), format!("-t 2 -D /m -c {CLIENT_TXT} -F 2"));
        let e = DbenchSpec {
            time: Dur(Duration::from_millis(500)),
            ..quick()
        }
        .validate()
        .unwrap_err();
        assert!(e.0.contains("whole seconds"), "{e}");
        let e = DbenchSpec {
            loadfile: Some("/nonexistent/x.txt".into()),
            ..quick()
        }
        .validate()
        .unwrap_err();
        assert!(e.0.contains("no such file"), "{e}");
    }

    #[test]
    fn runs_the_real_dbench() {
        if TOOL.locate().is_err() {
            skip_or_fail!("dbench not installed ({})", TOOL.install());
        }
        let dir = tempfile::tempdir().unwrap();
        let flag = AtomicBool::new(false);
        let sample = run_quiet(&quick(), dir.path(), &flag).expect("dbench runs");
        assert_eq!(sample.phases.len(), 1);
        let ph = &sample.phases[0];
        let v = |n: &str| ph.metrics.iter().find(|(id, _)| id.name == n).map(|(_, v)| *v);
        assert!(v("throughput").unwrap() > 0.0, "{ph:?}");
        assert!(v("lat_max").unwrap() > 0.0, "{ph:?}");
        assert!(
            v("lat_avg_ntcreatex").is_some() && v("lat_max_readx").is_some(),
            "{ph:?}"
        );
        // After the headline, the latency set (and the device's counters, detail rows, when
        // the directory is on a block device).
        assert!(ph.metrics[1..]
            .iter()
            .all(|(id, _)| matches!(id.role, Role::Latency | Role::Detail)));
        assert!(ph.wall >= Duration::from_secs(2) && ph.cpu.process_pct > 0.0, "{ph:?}");
        assert!(dir_is_empty(dir.path()));
        assert_eq!(quick().tool_versions()[0].1, "4.00");
    }

    #[test]
    fn dbench_failing_or_missing_is_an_error_with_its_output() {
        let dir = tempfile::tempdir().unwrap();
        let flag = AtomicBool::new(false);
        let ctx = RunContext::quiet(dir.path(), &flag);
        match quick().run_with(Path::new("/nonexistent/dbench"), &ctx) {
            Err(EngineError::Unavailable(m)) => assert!(m.contains("apt-get install dbench"), "{m}"),
            other => panic!("{other:?}"),
        }
        if TOOL.locate().is_err() {
            skip_or_fail!("dbench not installed ({})", TOOL.install());
        }
        let bad = DbenchSpec {
            loadfile: Some("/nonexistent/load.txt".into()),
            ..quick()
        };
        match run_quiet(&bad, dir.path(), &flag) {
            Err(EngineError::Invalid(m)) => {
                assert!(m.contains("exit status: 1") && m.contains("error opening"), "{m}")
            }
            other => panic!("{other:?}"),
        }
        assert!(dir_is_empty(dir.path()));
    }
}
