//! The terminal observer: the progress bar (indicatif) on an interactive standard error, one
//! line per repeat otherwise, and the `fsbench: …` lines of a run (among them an open-loop
//! phase's stall, said when its repeat ends). Its text is the user
//! interface of `fsbench run`; tests read it from a pipe (the non-interactive form).
//!
//! Long untimed steps ([`crate::progress`]: mkfs, data sets, the baseline, database loads) get
//! a bar of their own under the run's bar, with indicatif's ETA when their total is known, else
//! a spinner with the elapsed time and the ETA from the step's last duration. Without a
//! terminal they print plain lines only once a step has run [`LINE_EVERY`], and then at most
//! once per [`LINE_EVERY`]; `--quiet` shows no step.
//!
//! Invariant: everything goes to standard error; standard output carries only the report.

use super::observer::{Observer, RepeatEnd, RepeatOutcome, RepeatStart, SessionEnd, SessionStart, StepStart};
use crate::plan::Case;
use crate::store::{BaselineStatus, RawBaseline};
use crate::units::Bytes;
use indicatif::{MultiProgress, ProgressBar, ProgressState, ProgressStyle};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Without a terminal: a step prints its first line after this long, then at most this often.
pub const LINE_EVERY: Duration = Duration::from_secs(10);

/// A running step as the terminal shows it.
#[derive(Debug)]
struct StepView {
    bar: Option<ProgressBar>,
    started: Instant,
    /// When the last plain line was printed.
    last_line: Option<Instant>,
    total: Option<u64>,
    unit: String,
    expected_s: Option<f64>,
}

/// `  12 s left (last run 30 s)`, `  due (last run 30 s)`, or nothing without an expectation.
fn eta_from_last(expected_s: Option<f64>, elapsed: Duration) -> String {
    match expected_s {
        Some(e) => {
            let left = e - elapsed.as_secs_f64();
            if left >= 0.5 {
                format!("  ETA {left:.0} s (last run {e:.0} s)")
            } else {
                format!("  ETA due (last run {e:.0} s)")
            }
        }
        None => String::new(),
    }
}

impl StepView {
    /// The plain line for a step at `now` with `done` units, if one is due (no terminal).
    fn plain_line(&mut self, name: &str, done: Option<u64>, now: Instant) -> Option<String> {
        let elapsed = now.duration_since(self.started);
        let due = elapsed >= LINE_EVERY && self.last_line.is_none_or(|t| now.duration_since(t) >= LINE_EVERY);
        if !due {
            return None;
        }
        self.last_line = Some(now);
        let secs = elapsed.as_secs_f64();
        Some(match (done, self.total) {
            (Some(d), Some(t)) if t > 0 && d > 0 => {
                let left = secs * (t.saturating_sub(d)) as f64 / d as f64;
                format!(
                    "      {name}: {:.0} % of {} after {secs:.0} s, ETA {left:.0} s",
                    100.0 * d as f64 / t as f64,
                    self.amount(t)
                )
            }
            _ => format!("      {name}: {secs:.0} s{}", eta_from_last(self.expected_s, elapsed)),
        })
    }

    fn amount(&self, n: u64) -> String {
        if self.unit == "bytes" {
            Bytes(n).human()
        } else {
            format!("{n} {}", self.unit)
        }
    }

    /// The closing plain line: only for a step that printed a line or ran [`LINE_EVERY`].
    fn plain_end(&self, name: &str, seconds: f64, ok: bool) -> Option<String> {
        if self.last_line.is_none() && seconds < LINE_EVERY.as_secs_f64() {
            return None;
        }
        Some(if ok {
            format!("      {name}: done in {seconds:.1} s")
        } else {
            format!("      {name}: stopped after {seconds:.1} s")
        })
    }
}

/// Shows a run on standard error: a progress bar when it is a terminal, plain lines otherwise.
#[derive(Default)]
pub struct TerminalObserver {
    /// Repeats this run executes, from `session_started`.
    total: OnceLock<usize>,
    /// The bar, made at the first repeat when standard error is a terminal.
    bar: OnceLock<Option<ProgressBar>>,
    /// -1 quiet (warnings and failures only), 0 normal, 1+ verbose (every phase).
    verbosity: i8,
    /// The bars on a terminal: the run's, and one per running step below it.
    multi: OnceLock<MultiProgress>,
    /// Running steps by name.
    steps: Mutex<HashMap<String, StepView>>,
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

    fn interactive(&self) -> bool {
        !self.quiet() && std::io::stderr().is_terminal()
    }

    fn multi(&self) -> &MultiProgress {
        self.multi.get_or_init(MultiProgress::new)
    }

    /// A bar for a step: a bar with indicatif's ETA for a known total, else a spinner with the
    /// elapsed time and the ETA from the last duration.
    fn step_bar(&self, s: &StepStart) -> ProgressBar {
        let bar = match s.total {
            Some(t) => {
                let amounts = if s.unit == "bytes" {
                    "{bytes}/{total_bytes}".to_string()
                } else {
                    format!("{{pos}}/{{len}} {}", s.unit)
                };
                let bar = ProgressBar::new(t);
                bar.set_style(
                    ProgressStyle::with_template(&format!("  {{spinner}} {{msg}} [{{bar:24}}] {amounts} ETA {{eta}}"))
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                );
                bar
            }
            None => {
                let bar = ProgressBar::new_spinner();
                let expected = s.expected_s;
                bar.set_style(
                    ProgressStyle::with_template("  {spinner} {msg} {elapsed}{eta_last}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner())
                        .with_key("eta_last", move |st: &ProgressState, w: &mut dyn std::fmt::Write| {
                            let _ = w.write_str(&eta_from_last(expected, st.elapsed()));
                        }),
                );
                bar
            }
        };
        bar.set_message(s.name.to_string());
        let bar = self.multi().add(bar);
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    }

    fn bar(&self) -> Option<&ProgressBar> {
        self.bar
            .get_or_init(|| {
                if self.quiet() || !std::io::stderr().is_terminal() {
                    return None;
                }
                let bar = self
                    .multi()
                    .add(ProgressBar::new(self.total.get().copied().unwrap_or(0) as u64));
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

    fn sizes_set(&self, resized: &[crate::sizing::ResizedWorkload]) {
        for r in resized {
            let line = format!("sizes set by time: {}", r.line());
            match self.bar.get() {
                Some(Some(b)) => b.println(line),
                _ => eprintln!("{line}"),
            }
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
             requests in flight, and buffered readahead; the fastest counts), and 4 KiB random reads",
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
            let random = b
                .random_read_ops_s()
                .map(|v| format!(", random 4 KiB read {v:.0} ops/s"))
                .unwrap_or_default();
            eprintln!(
                "fsbench: raw device: write {:.0} MiB/s, read {:.0} MiB/s{random}",
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

    /// A stall of an open-loop phase ([`crate::engine::stall`]) is said when it happens, not
    /// only in the report's warnings: the run's figures from then on carry it.
    fn repeat_result(&self, what: &str, sample: &crate::store::NewSample) {
        for note in sample.notes.iter().filter(|n| crate::engine::stall::is_stall_note(n)) {
            self.warning(&format!("{what}: {note}"));
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

    fn step_started(&self, s: &StepStart) {
        if self.quiet() {
            return;
        }
        let bar = self.interactive().then(|| self.step_bar(s));
        if let Ok(mut steps) = self.steps.lock() {
            steps.insert(
                s.name.to_string(),
                StepView {
                    bar,
                    started: Instant::now(),
                    last_line: None,
                    total: s.total,
                    unit: s.unit.to_string(),
                    expected_s: s.expected_s,
                },
            );
        }
    }

    fn step_progress(&self, name: &str, done: u64, _total: Option<u64>) {
        let Ok(mut steps) = self.steps.lock() else { return };
        let Some(v) = steps.get_mut(name) else { return };
        match &v.bar {
            Some(b) => b.set_position(done),
            None => {
                if let Some(line) = v.plain_line(name, Some(done), Instant::now()) {
                    eprintln!("{line}");
                }
            }
        }
    }

    fn step_finished(&self, name: &str, seconds: f64, ok: bool) {
        let Some(v) = self.steps.lock().ok().and_then(|mut s| s.remove(name)) else {
            return;
        };
        match &v.bar {
            Some(b) => b.finish_and_clear(),
            None => {
                if let Some(line) = v.plain_end(name, seconds, ok) {
                    eprintln!("{line}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(total: Option<u64>, unit: &str, expected_s: Option<f64>, started: Instant) -> StepView {
        StepView {
            bar: None,
            started,
            last_line: None,
            total,
            unit: unit.into(),
            expected_s,
        }
    }

    /// Without a terminal: nothing for a short step, then one line per LINE_EVERY with the
    /// fraction and ETA of a counted step, or the elapsed time and the last run's ETA of a
    /// spinner; the closing line only after lines or a long step.
    #[test]
    fn plain_lines_come_at_a_low_rate_with_an_eta() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut v = view(Some(4 << 20), "bytes", None, t0);
        assert_eq!(v.plain_line("fileio prepare", Some(1 << 20), at(3)), None);
        assert_eq!(
            v.plain_end("fileio prepare", 3.0, true),
            None,
            "a short step prints nothing"
        );
        let line = v.plain_line("fileio prepare", Some(1 << 20), at(10)).unwrap();
        assert_eq!(line, "      fileio prepare: 25 % of 4.0 MiB after 10 s, ETA 30 s");
        assert_eq!(
            v.plain_line("fileio prepare", Some(2 << 20), at(15)),
            None,
            "at most every 10 s"
        );
        assert!(v
            .plain_line("fileio prepare", Some(3 << 20), at(20))
            .unwrap()
            .contains("75 %"));
        assert_eq!(
            v.plain_end("fileio prepare", 26.04, true).unwrap(),
            "      fileio prepare: done in 26.0 s"
        );

        let mut m = view(None, "steps", Some(42.0), t0);
        assert_eq!(
            m.plain_line("mkfs.ext4 (8 GiB)", None, at(12)).unwrap(),
            "      mkfs.ext4 (8 GiB): 12 s  ETA 30 s (last run 42 s)"
        );
        let mut m = view(None, "steps", None, t0);
        assert_eq!(m.plain_line("mkfs.xfs", None, at(12)).unwrap(), "      mkfs.xfs: 12 s");
        assert_eq!(
            view(None, "steps", None, t0)
                .plain_end("mkfs.xfs", 11.0, false)
                .unwrap(),
            "      mkfs.xfs: stopped after 11.0 s"
        );
        assert_eq!(
            eta_from_last(Some(5.0), Duration::from_secs(9)),
            "  ETA due (last run 5 s)"
        );
        assert_eq!(eta_from_last(None, Duration::from_secs(9)), "");
    }

    /// `--quiet` keeps no step at all; a normal observer without a terminal keeps it without a
    /// bar until it ends.
    #[test]
    fn quiet_shows_no_step() {
        let s = StepStart {
            name: "mkfs.ext4 (64 MiB)",
            total: None,
            unit: "steps",
            expected_s: None,
        };
        let q = TerminalObserver::with_verbosity(-1);
        q.step_started(&s);
        assert!(q.steps.lock().unwrap().is_empty());
        let n = TerminalObserver::new();
        n.step_started(&s);
        let running = n.steps.lock().unwrap().get(s.name).map(|v| v.bar.is_some());
        // Under `cargo test` standard error is a pipe or a terminal; either way the step is kept.
        assert_eq!(running, Some(std::io::stderr().is_terminal()));
        n.step_finished(s.name, 0.5, true);
        assert!(n.steps.lock().unwrap().is_empty());
    }
}
