//! The terminal observer: the progress bar (indicatif) on an interactive standard error, one
//! line per repeat otherwise, and the `fsbench: …` lines of a run. Its text is the user
//! interface of `fsbench run`; tests read it from a pipe (the non-interactive form).
//!
//! Invariant: everything goes to standard error; standard output carries only the report.

use super::observer::{Observer, RepeatEnd, RepeatOutcome, RepeatStart, SessionEnd, SessionStart};
use crate::plan::Case;
use crate::store::{BaselineStatus, RawBaseline};
use crate::units::Bytes;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::OnceLock;

/// Shows a run on standard error: a progress bar when it is a terminal, plain lines otherwise.
#[derive(Default)]
pub struct TerminalObserver {
    /// Repeats this run executes, from `session_started`.
    total: OnceLock<usize>,
    /// The bar, made at the first repeat when standard error is a terminal.
    bar: OnceLock<Option<ProgressBar>>,
    /// -1 quiet (warnings and failures only), 0 normal, 1+ verbose (every phase).
    verbosity: i8,
}

impl TerminalObserver {
    /// An observer that has shown nothing yet.
    pub fn new() -> TerminalObserver {
        TerminalObserver::default()
    }

    /// An observer at a verbosity level: -1 (`--quiet`) shows only warnings and failed
    /// repeats, 0 the normal lines, 1 or more (`-v`) also each phase as it starts.
    pub fn with_verbosity(verbosity: i8) -> TerminalObserver {
        TerminalObserver {
            verbosity,
            ..TerminalObserver::default()
        }
    }

    fn quiet(&self) -> bool {
        self.verbosity < 0
    }

    fn bar(&self) -> Option<&ProgressBar> {
        self.bar
            .get_or_init(|| {
                if self.quiet() || !std::io::stderr().is_terminal() {
                    return None;
                }
                let bar = ProgressBar::new(self.total.get().copied().unwrap_or(0) as u64);
                bar.set_style(
                    ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} ETA {eta} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                );
                Some(bar)
            })
            .as_ref()
    }
}

impl Observer for TerminalObserver {
    fn case_unavailable(&self, c: &Case) {
        eprintln!(
            "fsbench: {} × {}: unavailable: {}",
            c.variant.name,
            c.workload.name,
            c.unavailable.as_deref().unwrap_or("")
        );
    }

    fn warning(&self, message: &str) {
        match self.bar.get() {
            Some(Some(b)) => b.println(format!("fsbench: {message}")),
            _ => eprintln!("fsbench: {message}"),
        }
    }

    fn session_started(&self, s: &SessionStart) {
        let _ = self.total.set(s.repeats_left);
        if self.quiet() {
            return;
        }
        if s.resumed {
            eprintln!(
                "fsbench: resuming session {}: {} of {} repeats left; results in {}",
                s.session,
                s.repeats_left,
                s.repeats_total,
                s.db.display()
            );
        } else {
            eprintln!(
                "fsbench: session {}: {} repeats; results in {}",
                s.session,
                s.repeats_left,
                s.db.display()
            );
        }
    }

    fn baseline_started(&self, device: &Path, bytes: u64) {
        if self.quiet() {
            return;
        }
        eprintln!(
            "fsbench: raw-device baseline: sequential write and read of {} of {} (O_DIRECT with {} \
             requests in flight, and buffered readahead; the fastest counts)",
            Bytes(bytes).human(),
            device.display(),
            crate::baseline::DEPTH
        );
    }

    fn baseline_finished(&self, b: &RawBaseline) {
        if b.status != BaselineStatus::Measured || self.quiet() {
            return;
        }
        if let (Some(w), Some(r)) = (b.value(RawBaseline::SEQ_WRITE), b.value(RawBaseline::SEQ_READ)) {
            eprintln!(
                "fsbench: raw device: write {:.0} MiB/s, read {:.0} MiB/s",
                w.value, r.value
            );
        }
    }

    fn repeat_started(&self, s: &RepeatStart) {
        match self.bar() {
            Some(b) => {
                // The stopping rule adds rounds: the bar grows with them.
                if b.length().is_some_and(|l| l < s.of as u64) {
                    b.set_length(s.of as u64);
                }
                b.set_message(s.what.to_string())
            }
            None if self.quiet() => {}
            None => eprintln!("[{}/{}] {}", s.index + 1, s.of, s.what),
        }
    }

    fn phase_started(&self, what: &str, phase: &str) {
        match self.bar.get() {
            Some(Some(b)) if self.verbosity > 0 => b.println(format!("      {what}: phase {phase}")),
            Some(Some(b)) => b.set_message(format!("{what}: {phase}")),
            _ if self.verbosity > 0 => eprintln!("      phase {phase}"),
            _ => {}
        }
    }

    fn repeat_finished(&self, e: &RepeatEnd) {
        let line = match e.outcome {
            RepeatOutcome::Done { .. } if self.quiet() => return,
            RepeatOutcome::Done { wall_s } => format!("{}: done in {wall_s:.1} s", e.what),
            RepeatOutcome::Failed(err) => format!("{}: FAILED: {err}", e.what),
        };
        match self.bar.get() {
            Some(Some(b)) => {
                b.println(line);
                b.inc(1);
            }
            _ => eprintln!("      {line}"),
        }
    }

    fn session_finished(&self, _end: SessionEnd) {
        if let Some(Some(b)) = self.bar.get() {
            b.finish_and_clear();
        }
    }
}
