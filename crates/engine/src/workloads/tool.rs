//! One run of an external benchmark tool (bonnie++, sysbench fileio, dbench, postmark) in the
//! filesystem under test: the part every external-tool workload shares, so each adapter is only
//! its command line and its parser (issue 13, item 1). fio keeps its own copy of the same steps
//! in [`super::fio`], whose helpers this module reuses.
//!
//! [`Tool::run`]: the tool runs in the run directory as a timed, interruptible child
//! ([`crate::child`], its own process group, killed with it on Ctrl-C) inside one
//! [`Phases::with_children`] region, so its CPU is counted; afterwards every process left with
//! the run directory as its working directory is killed and every entry of the directory is
//! removed (also after a failure or an interrupt), so the directory is left empty.
//!
//! Failures are errors of the case, never panics: a missing program is
//! [`EngineError::Unavailable`] naming `apt-get install <package>`; a tool that exits non-zero
//! or is killed is [`EngineError::Invalid`] with the command, its exit status and the last
//! 2,000 characters of its own standard error (standard output when stderr is empty); a report
//! the parser cannot read is the same with the parser's message ([`Tool::failed`]).

use crate::child::{self, ChildError, Finished, Sink, Watch};
use crate::phase::{Phases, Timed};
use crate::workloads::fio::{empty_dir, kill_processes_in, tool_text};
use crate::EngineError;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What [`Tool::run`] gives back: the timed, finished child and its command line as shown.
pub type Ran = Result<(Timed<Finished>, String), EngineError>;

/// An external tool: its program name and the Debian package that installs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tool {
    /// Program name looked up in `PATH` (and the sbin directories).
    pub program: &'static str,
    /// Debian package.
    pub package: &'static str,
}

impl Tool {
    /// `apt-get install <package>`.
    pub fn install(&self) -> String {
        format!("apt-get install {}", self.package)
    }

    /// Where the program is, or what to install.
    pub fn locate(&self) -> Result<PathBuf, crate::Unavailable> {
        crate::host::find_tool(self.program).ok_or_else(|| {
            crate::Unavailable(format!(
                "{} is not installed: run `{}` (or scripts/install.sh)",
                self.program,
                self.install()
            ))
        })
    }

    /// Runs `program` with `args` in `dir` as the timed region of the current phase (the
    /// caller has called [`Phases::begin`]); see the module documentation. Returns the finished
    /// child (any exit status: check it with [`Tool::check`]).
    pub fn run(&self, p: &Phases, program: &Path, args: &[String], dir: &Path) -> Ran {
        let ran = self.run_keeping_files(p, program, args, dir);
        let cleaned = empty_dir(dir);
        let done = ran?;
        cleaned?;
        Ok(done)
    }

    /// [`Tool::run`] without emptying the directory afterwards: for a step whose files the
    /// next step uses (`sysbench fileio prepare`). Left-over processes are still killed.
    pub fn run_keeping_files(&self, p: &Phases, program: &Path, args: &[String], dir: &Path) -> Ran {
        let (ran, shown) = self.spawn(p, program, args, dir);
        kill_processes_in(dir);
        Ok((ran?, shown))
    }

    fn spawn(
        &self,
        p: &Phases,
        program: &Path,
        args: &[String],
        dir: &Path,
    ) -> (Result<Timed<Finished>, EngineError>, String) {
        let mut cmd = Command::new(program);
        cmd.args(args).current_dir(dir).process_group(0);
        let shown = child::describe(&cmd);
        let watch = Watch {
            interrupt: Some(p.interrupt()),
            timeout: None,
            kill_group: true,
        };
        let install = self.install();
        let ran = p.with_children(None, || {
            child::run(&mut cmd, Sink::Capture, Sink::Capture, watch).map_err(|e| match e {
                ChildError::Interrupted => EngineError::Interrupted,
                ChildError::Spawn(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    EngineError::Unavailable(format!("{} not found: {install}", program.display()))
                }
                ChildError::Spawn(e) => EngineError::io(format!("run {shown}"), e),
                ChildError::Io(e) => EngineError::io(format!("wait for {shown}"), e),
                ChildError::TimedOut(_) => EngineError::Invalid(format!("{shown}: {e}")),
            })
        });
        (ran, shown)
    }

    /// `Ok` when the tool exited 0, else [`EngineError::Invalid`] with `shown`, the exit
    /// status and the tool's own output tail.
    pub fn check(done: &Finished, shown: &str) -> Result<(), EngineError> {
        if done.status.success() {
            return Ok(());
        }
        let said = tool_text(done);
        Err(EngineError::Invalid(format!(
            "{shown} failed ({}): {}",
            done.status,
            if said.is_empty() {
                "(it printed nothing)"
            } else {
                said.as_str()
            }
        )))
    }

    /// The error of a report the parser could not read: `shown`, the parser's message, and the
    /// tool's stderr tail.
    pub fn failed(done: &Finished, shown: &str, why: impl std::fmt::Display) -> EngineError {
        EngineError::Invalid(format!("{shown}: {why}; stderr: {}", tool_text(done)))
    }

    /// The first line of `program args…`'s standard output and error together, for version
    /// probes (bonnie++ prints its version only in its usage text, on stderr).
    pub fn probe(&self, args: &[&str]) -> Option<String> {
        let path = self.locate().ok()?;
        let o = Command::new(path)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .ok()?;
        Some(format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}
