//! The `postmark` workload: the real PostMark 1.51 (Debian package `postmark`), the classic
//! mail/news-server small-file benchmark, on the filesystem under test (issue 13, item 1).
//!
//! One repeat is one `postmark <config>` run, one phase named `postmark`
//! ([`super::tool::Tool`]) in the run directory. The configuration (`set location .`, `set number`,
//! `set transactions`, `set size`, `set subdirectories`, `set read`/`set write`, `set
//! buffering`, `set seed`, `run`, `quit`) is written to `.fsbench-postmark.cfg` in the run
//! directory before the timed region and removed with everything else afterwards.
//!
//! | metric | unit | from PostMark |
//! |---|---|---|
//! | `transactions_per_s` | ops/s (headline) | `seconds of transactions (N per second)` |
//! | `creates_per_s`, `deletes_per_s` | ops/s (headline) | `Creation alone`, `Deletion alone` |
//! | `reads_per_s`, `appends_per_s` | ops/s (headline) | files `read`, `appended` |
//! | `read_mib_s`, `write_mib_s` | MiB/s (headline) | `Data:` read and written per second |
//!
//! PostMark times in whole seconds (`time(2)`): a repeat that PostMark timed under 10 s gets a
//! note, since its rates are then coarse. PostMark reports a file it cannot open or delete on
//! standard error and still exits 0: any `Error:` line there fails the case with that output.
//!
//! References: PostMark's own help (`help` at its prompt); J. Katcher, "PostMark: A New File
//! System Benchmark", NetApp TR3022 (1997).

use crate::metric::{MetricId, RawSample, Unit};
use crate::parsers::postmark as report;
use crate::phase::{Caches, Phases};
use crate::units::Bytes;
use crate::workloads::tool::Tool;
use crate::{EngineError, RunContext, Workload, WorkloadKind};
use crate::{Invalid, Unavailable};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The tool.
pub const TOOL: Tool = Tool {
    program: "postmark",
    package: "postmark",
};
/// The phase.
pub const PHASE: &str = "postmark";
/// The configuration file written into the run directory.
const CONFIG: &str = ".fsbench-postmark.cfg";
/// Below this PostMark run time (its whole seconds) the repeat gets a note.
const COARSE_S: f64 = 10.0;

/// Parameters of the postmark workload (PostMark's `set` names in parentheses).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostmarkSpec {
    /// Files in the pool (`number`). Default 500.
    #[serde(default = "default_files")]
    pub files: u32,
    /// Transactions (`transactions`). Default 500.
    #[serde(default = "default_transactions")]
    pub transactions: u32,
    /// Smallest file (`size` low). Default 500 B.
    #[serde(default = "default_min")]
    pub min_size: Bytes,
    /// Largest file (`size` high). Default 9.77 KiB (10,000 B).
    #[serde(default = "default_max")]
    pub max_size: Bytes,
    /// Subdirectories (`subdirectories`). Default 0.
    #[serde(default)]
    pub subdirs: u32,
    /// Read block size (`read`). Default 512 B.
    #[serde(default = "default_block")]
    pub read_block: Bytes,
    /// Write block size (`write`). Default 512 B.
    #[serde(default = "default_block")]
    pub write_block: Bytes,
    /// Buffered (stdio) I/O (`buffering`). Default true.
    #[serde(default = "super::default_true")]
    pub buffering: bool,
    /// Random seed (`seed`). Default 42 (PostMark's).
    #[serde(default = "default_seed")]
    pub seed: u32,
}

fn default_files() -> u32 {
    500
}
fn default_transactions() -> u32 {
    500
}
fn default_min() -> Bytes {
    Bytes(500)
}
fn default_max() -> Bytes {
    Bytes(10_000)
}
fn default_block() -> Bytes {
    Bytes(512)
}
fn default_seed() -> u32 {
    42
}

impl Default for PostmarkSpec {
    fn default() -> Self {
        PostmarkSpec {
            files: default_files(),
            transactions: default_transactions(),
            min_size: default_min(),
            max_size: default_max(),
            subdirs: 0,
            read_block: default_block(),
            write_block: default_block(),
            buffering: true,
            seed: default_seed(),
        }
    }
}

impl PostmarkSpec {
    /// The PostMark commands for a run in `dir`.
    pub fn config(&self, dir: &Path) -> String {
        format!(
            "set location {}\nset number {}\nset transactions {}\nset size {} {}\n{}\
             set read {}\nset write {}\nset buffering {}\nset seed {}\nrun\nquit\n",
            dir.display(),
            self.files,
            self.transactions,
            self.min_size.get(),
            self.max_size.get(),
            // PostMark refuses `set subdirectories 0`; leaving it out means none.
            if self.subdirs > 0 {
                format!("set subdirectories {}\n", self.subdirs)
            } else {
                String::new()
            },
            self.read_block.get(),
            self.write_block.get(),
            self.buffering,
            self.seed
        )
    }

    /// Runs `program` (postmark) as one repeat; see the module documentation.
    pub(crate) fn run_with(&self, program: &Path, ctx: &RunContext) -> Result<RawSample, EngineError> {
        let cfg = ctx.dir.join(CONFIG);
        // PostMark keeps file names in short fixed buffers: a long absolute location overflows
        // them (garbled names, "cannot open"); it runs in the run directory, so `.` is it.
        std::fs::write(&cfg, self.config(Path::new(".")))
            .map_err(|e| EngineError::io(format!("write {}", cfg.display()), e))?;
        let mut p = Phases::new(ctx);
        p.begin(PHASE, Caches::DropIfAsked);
        let (t, shown) = TOOL.run(&p, program, &[cfg.display().to_string()], ctx.dir)?;
        Tool::check(&t.value, &shown)?;
        check_errors(&t.value, &shown)?;
        let r = report::parse(&t.value.stdout).map_err(|e| Tool::failed(&t.value, &shown, e))?;
        let m = vec![
            (
                MetricId::higher("transactions_per_s", Unit::OpsPerSec),
                r.transactions_per_s,
            ),
            (MetricId::higher("creates_per_s", Unit::OpsPerSec), r.creates_per_s),
            (MetricId::higher("reads_per_s", Unit::OpsPerSec), r.reads_per_s),
            (MetricId::higher("appends_per_s", Unit::OpsPerSec), r.appends_per_s),
            (MetricId::higher("deletes_per_s", Unit::OpsPerSec), r.deletes_per_s),
            (MetricId::higher("read_mib_s", Unit::MibPerSec), r.read_mib_s),
            (MetricId::higher("write_mib_s", Unit::MibPerSec), r.write_mib_s),
        ];
        p.record(PHASE, &t, m, &Default::default());
        if r.total_s < COARSE_S {
            p.note(format!(
                "postmark ran {} s by its own whole-second clock: its rates are coarse; raise transactions",
                r.total_s
            ));
        }
        Ok(p.finish())
    }
}

/// PostMark's `Error:` lines on stderr (it exits 0 after them) as a failure of the case.
fn check_errors(done: &crate::child::Finished, shown: &str) -> Result<(), EngineError> {
    let mut errors = done.stderr.lines().filter(|l| l.starts_with("Error:"));
    let Some(first) = errors.next() else {
        return Ok(());
    };
    Err(EngineError::Invalid(format!(
        "{shown} reported {} errors (first: {first}); its last output: {}",
        1 + errors.count(),
        crate::workloads::fio::tool_text(done)
    )))
}

impl Workload for PostmarkSpec {
    fn phases(&self) -> Vec<String> {
        vec![PHASE.to_string()]
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        let mut s = self.clone();
        let scale = |n: u32| ((f64::from(n) * factor).round() as u32).max(1);
        s.files = scale(self.files);
        s.transactions = scale(self.transactions);
        WorkloadKind::Postmark(s)
    }

    fn validate(&self) -> Result<(), Invalid> {
        if self.files == 0 || self.transactions == 0 {
            return Err("postmark files and transactions must be at least 1".into());
        }
        if self.min_size > self.max_size {
            return Err("postmark min_size must not exceed max_size".into());
        }
        if self.read_block.get() == 0 || self.write_block.get() == 0 {
            return Err("postmark read_block and write_block must be at least 1 byte".into());
        }
        Ok(())
    }

    fn availability(&self) -> Result<(), Unavailable> {
        TOOL.locate().map(drop)
    }

    fn tool_versions(&self) -> Vec<(String, String)> {
        // PostMark prints its banner, then reads commands (here none: stdin is empty).
        TOOL.probe(&[])
            .and_then(|t| report::version(&t))
            .map(|v| vec![("postmark".to_string(), v)])
            .unwrap_or_default()
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        // The pool grows by at most one file per transaction.
        let n = u64::from(self.files) + u64::from(self.transactions);
        crate::fstype::Footprint::default()
            .dirs(u64::from(self.subdirs), 8)
            .uniform_files(n, self.min_size.get(), self.max_size.get(), 8)
    }

    fn describe(&self) -> String {
        format!(
            "postmark files={} transactions={} size={}..{} subdirs={} buffering={}",
            self.files, self.transactions, self.min_size, self.max_size, self.subdirs, self.buffering
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
    use crate::{dir_is_empty, run_quiet};
    use std::sync::atomic::AtomicBool;

    fn quick() -> PostmarkSpec {
        PostmarkSpec {
            files: 200,
            transactions: 2000,
            ..Default::default()
        }
    }

    #[test]
    fn config_and_validation() {
        let c = quick().config(Path::new("/m"));
        assert!(
            c.starts_with("set location /m\nset number 200\nset transactions 2000\nset size 500 10000\n"),
            "{c}"
        );
        assert!(c.ends_with("run\nquit\n"));
        let e = PostmarkSpec {
            min_size: Bytes(20_000),
            ..quick()
        }
        .validate()
        .unwrap_err();
        assert!(e.0.contains("min_size"), "{e}");
    }

    #[test]
    fn runs_the_real_postmark() {
        if TOOL.locate().is_err() {
            skip_or_fail!("postmark not installed ({})", TOOL.install());
        }
        let dir = tempfile::tempdir().unwrap();
        let flag = AtomicBool::new(false);
        let sample = run_quiet(&quick(), dir.path(), &flag).expect("postmark runs");
        let ph = &sample.phases[0];
        let v = |n: &str| ph.metrics.iter().find(|(id, _)| id.name == n).map(|(_, v)| *v).unwrap();
        assert!(v("transactions_per_s") > 0.0 && v("creates_per_s") > 0.0, "{ph:?}");
        assert!(v("write_mib_s") > 0.0, "{ph:?}");
        assert!(
            sample.notes.iter().any(|n| n.contains("whole-second clock")),
            "{sample:?}"
        );
        assert!(dir_is_empty(dir.path()));
        assert_eq!(quick().tool_versions()[0].1, "v1.51");
    }

    #[test]
    fn postmark_errors_and_a_missing_postmark_fail_the_case() {
        let dir = tempfile::tempdir().unwrap();
        let flag = AtomicBool::new(false);
        let ctx = RunContext::quiet(dir.path(), &flag);
        match quick().run_with(Path::new("/nonexistent/postmark"), &ctx) {
            Err(EngineError::Unavailable(m)) => assert!(m.contains("apt-get install postmark"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(dir_is_empty(dir.path()));
        if TOOL.locate().is_err() {
            skip_or_fail!("postmark not installed ({})", TOOL.install());
        }
        // A location that does not exist: every open fails, PostMark says so on stderr and
        // still exits 0; the case fails with its output.
        let cfg = dir.path().join("bad.cfg");
        std::fs::write(&cfg, quick().config(&dir.path().join("gone"))).unwrap();
        let prog = TOOL.locate().unwrap();
        let p = Phases::new(&ctx);
        let (t, shown) = TOOL
            .run(&p, &prog, &[cfg.display().to_string()], dir.path())
            .expect("postmark runs");
        assert!(t.value.status.success(), "PostMark exits 0 on errors");
        match check_errors(&t.value, &shown) {
            Err(EngineError::Invalid(m)) => assert!(m.contains("Error: cannot open"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(dir_is_empty(dir.path()));
    }
}
