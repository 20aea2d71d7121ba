//! What a run tells the world while it happens: the [`Observer`] trait, in the manner of
//! criterion's `Report` trait. The [`super::Runner`] calls one method per event; every method
//! has an empty default, so an observer implements only what it shows. The terminal progress bar
//! ([`super::TerminalObserver`]) is one observer; [`Recorder`] (every event as an [`Event`], for
//! tests) is another; a JSON-lines event stream or an MPI rank 0 would be a third, with no change
//! to the loop.
//!
//! Order of events in one run (tested in `run::tests` on a real run):
//! `case_unavailable`* → `warning`* → `session_started` → (`baseline_started` →)
//! `baseline_finished`? → { `repeat_started` → `phase_started`* → `repeat_finished` }* →
//! `session_finished`. `warning` may also come at any point (a failed baseline, an incomplete
//! cleanup). `step_started` → `step_progress`* → `step_finished` (a long untimed step: mkfs,
//! a data set, the baseline, a database load; [`crate::progress`]) may come between any two
//! of these, from the runner's thread, never inside a timed phase.
//!
//! Invariants:
//! - `repeat_finished` is sent only after the repeat is committed to the store: an observer that
//!   shows it may say it is stored.
//! - An interrupted repeat sends no `repeat_finished`; `session_finished` says the session was
//!   interrupted.
//! - `phase_started` may come from a worker thread of the engine (hence `Sync`); it never comes
//!   from inside a timed loop.

use crate::plan::Case;
use crate::store::{BaselineStatus, NewSample, RawBaseline};
use std::path::Path;
use std::sync::Mutex;

/// The session is open and the repeats are about to run.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionStart<'a> {
    /// Session id in the store.
    pub session: i64,
    /// `true` when continuing a stored session (`--resume`).
    pub resumed: bool,
    /// Repeats this run will execute (warm-ups included).
    pub repeats_left: usize,
    /// Repeats of the whole plan (warm-ups included).
    pub repeats_total: usize,
    /// The results database.
    pub db: &'a Path,
}

/// One repeat (a slot of the plan) is about to be provisioned and run.
#[derive(Clone, Debug)]
pub struct RepeatStart<'a> {
    /// 0-based position among the repeats this run executes.
    pub index: usize,
    /// Repeats this run executes.
    pub of: usize,
    /// The case (variant × workload).
    pub case: &'a Case,
    /// 0-based repeat index of the case, warm-ups first.
    pub repeat: u32,
    /// Repeats per case (warm-ups included).
    pub repeats_per_case: u32,
    /// A warm-up repeat.
    pub warmup: bool,
    /// One line naming it: `ext4 × bonnie repeat 2/3` (` (warm-up)` appended for warm-ups).
    pub what: &'a str,
}

/// A long untimed step starts ([`crate::progress`]).
#[derive(Clone, Debug, PartialEq)]
pub struct StepStart<'a> {
    /// What it is, with its size (`mkfs.ext4 (64 MiB)`); the same work has the same name.
    pub name: &'a str,
    /// Units of work, `None` when unknown (a spinner: mkfs, a server's load).
    pub total: Option<u64>,
    /// What the units count: `bytes`, `files`, `rows`, `entries`.
    pub unit: &'a str,
    /// Seconds the same step took the last time it ran (in this run or a stored session), for
    /// the ETA of a step without a total.
    pub expected_s: Option<f64>,
}

/// How a repeat ended (an interrupted repeat sends no event).
#[derive(Clone, Debug, PartialEq)]
pub enum RepeatOutcome {
    /// It ran to the end; wall time of provisioning, workload and teardown, in seconds.
    Done {
        /// Seconds.
        wall_s: f64,
    },
    /// It failed; the error is stored with the sample.
    Failed(String),
}

/// A repeat is finished and committed to the store.
#[derive(Clone, Debug)]
pub struct RepeatEnd<'a> {
    /// 0-based position among the repeats this run executes.
    pub index: usize,
    /// The line of its [`RepeatStart`].
    pub what: &'a str,
    /// How it ended.
    pub outcome: &'a RepeatOutcome,
}

/// How the session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionEnd {
    /// Every repeat of this run ran (some may have failed).
    Complete,
    /// SIGINT or SIGTERM stopped it; completed repeats are stored.
    Interrupted,
}

/// Receives the events of one run. Every method has an empty default.
pub trait Observer: Sync {
    /// A case of the plan cannot run here (`case.unavailable` says why); before the session.
    fn case_unavailable(&self, _case: &Case) {}
    /// Something the user should know that is not an error (`killed run(s) left resources …`,
    /// a baseline that could not be measured).
    fn warning(&self, _message: &str) {}
    /// The session is open; repeats follow.
    fn session_started(&self, _start: &SessionStart) {}
    /// The warm-ups left phases under the minimum time and these workloads get more work
    /// for their measured repeats (sizes set by time; stored already).
    fn sizes_set(&self, _resized: &[crate::sizing::ResizedWorkload]) {}
    /// The raw-device baseline starts on `device`, over `bytes` bytes.
    fn baseline_started(&self, _device: &Path, _bytes: u64) {}
    /// The raw-device baseline is decided (measured, failed, or no device) and stored.
    fn baseline_finished(&self, _baseline: &RawBaseline) {}
    /// A repeat starts.
    fn repeat_started(&self, _start: &RepeatStart) {}
    /// The running repeat enters a timed phase (`seq_create`, …).
    fn phase_started(&self, _what: &str, _phase: &str) {}
    /// The stored sample of the repeat that is about to be announced finished (its
    /// measurements); sent right after the commit, just before `repeat_finished`.
    fn repeat_result(&self, _what: &str, _sample: &NewSample) {}
    /// A repeat ended and is stored.
    fn repeat_finished(&self, _end: &RepeatEnd) {}
    /// The loop is over; the session's status is stored next.
    fn session_finished(&self, _end: SessionEnd) {}
    /// A long untimed step starts.
    fn step_started(&self, _step: &StepStart) {}
    /// `done` of `total` units of the step `name` are done (at most every
    /// [`crate::progress::TICK`]).
    fn step_progress(&self, _name: &str, _done: u64, _total: Option<u64>) {}
    /// The step `name` ended after `seconds`; `ok` is `false` when it failed or was interrupted.
    fn step_finished(&self, _name: &str, _seconds: f64, _ok: bool) {}
}

/// Sends every event to each of several observers, in order.
pub struct Fanout<'a>(pub Vec<&'a dyn Observer>);

impl Observer for Fanout<'_> {
    fn case_unavailable(&self, case: &Case) {
        self.0.iter().for_each(|o| o.case_unavailable(case));
    }
    fn warning(&self, message: &str) {
        self.0.iter().for_each(|o| o.warning(message));
    }
    fn session_started(&self, start: &SessionStart) {
        self.0.iter().for_each(|o| o.session_started(start));
    }
    fn sizes_set(&self, resized: &[crate::sizing::ResizedWorkload]) {
        self.0.iter().for_each(|o| o.sizes_set(resized));
    }
    fn baseline_started(&self, device: &Path, bytes: u64) {
        self.0.iter().for_each(|o| o.baseline_started(device, bytes));
    }
    fn baseline_finished(&self, baseline: &RawBaseline) {
        self.0.iter().for_each(|o| o.baseline_finished(baseline));
    }
    fn repeat_started(&self, start: &RepeatStart) {
        self.0.iter().for_each(|o| o.repeat_started(start));
    }
    fn phase_started(&self, what: &str, phase: &str) {
        self.0.iter().for_each(|o| o.phase_started(what, phase));
    }
    fn repeat_result(&self, what: &str, sample: &NewSample) {
        self.0.iter().for_each(|o| o.repeat_result(what, sample));
    }
    fn repeat_finished(&self, end: &RepeatEnd) {
        self.0.iter().for_each(|o| o.repeat_finished(end));
    }
    fn session_finished(&self, end: SessionEnd) {
        self.0.iter().for_each(|o| o.session_finished(end));
    }
    fn step_started(&self, step: &StepStart) {
        self.0.iter().for_each(|o| o.step_started(step));
    }
    fn step_progress(&self, name: &str, done: u64, total: Option<u64>) {
        self.0.iter().for_each(|o| o.step_progress(name, done, total));
    }
    fn step_finished(&self, name: &str, seconds: f64, ok: bool) {
        self.0.iter().for_each(|o| o.step_finished(name, seconds, ok));
    }
}

/// One observed event, owned (what [`Recorder`] keeps).
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// [`Observer::case_unavailable`]: variant and workload names.
    CaseUnavailable {
        /// Variant name.
        variant: String,
        /// Workload name.
        workload: String,
    },
    /// [`Observer::warning`].
    Warning(String),
    /// [`Observer::session_started`].
    SessionStarted {
        /// Session id.
        session: i64,
        /// Resumed session.
        resumed: bool,
        /// Repeats this run executes.
        repeats_left: usize,
        /// Repeats of the plan.
        repeats_total: usize,
    },
    /// [`Observer::sizes_set`]: one line per resized workload.
    SizesSet(Vec<String>),
    /// [`Observer::baseline_started`]: bytes to measure.
    BaselineStarted(u64),
    /// [`Observer::baseline_finished`]: the stored status.
    BaselineFinished(BaselineStatus),
    /// [`Observer::repeat_started`]: the repeat's line.
    RepeatStarted(String),
    /// [`Observer::phase_started`]: the phase name.
    PhaseStarted(String),
    /// [`Observer::repeat_finished`]: the repeat's line and whether it failed.
    RepeatFinished {
        /// The repeat's line.
        what: String,
        /// `true` when it failed.
        failed: bool,
    },
    /// [`Observer::session_finished`].
    SessionFinished(SessionEnd),
    /// [`Observer::step_started`]: its name and the seconds it took last time.
    StepStarted(String, Option<f64>),
    /// [`Observer::step_finished`]: its name and whether it ran to its end.
    StepFinished(String, bool),
}

/// Keeps every event in order (for tests, and as the model of a machine-readable stream).
#[derive(Debug, Default)]
pub struct Recorder(Mutex<Vec<Event>>);

impl Recorder {
    /// The events so far.
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }

    fn push(&self, e: Event) {
        if let Ok(mut v) = self.0.lock() {
            v.push(e);
        }
    }
}

impl Observer for Recorder {
    fn case_unavailable(&self, case: &Case) {
        self.push(Event::CaseUnavailable {
            variant: case.variant.name.clone(),
            workload: case.workload.name.clone(),
        });
    }
    fn warning(&self, message: &str) {
        self.push(Event::Warning(message.to_string()));
    }
    fn session_started(&self, s: &SessionStart) {
        self.push(Event::SessionStarted {
            session: s.session,
            resumed: s.resumed,
            repeats_left: s.repeats_left,
            repeats_total: s.repeats_total,
        });
    }
    fn sizes_set(&self, resized: &[crate::sizing::ResizedWorkload]) {
        self.push(Event::SizesSet(resized.iter().map(|r| r.line()).collect()));
    }
    fn baseline_started(&self, _device: &Path, bytes: u64) {
        self.push(Event::BaselineStarted(bytes));
    }
    fn baseline_finished(&self, b: &RawBaseline) {
        self.push(Event::BaselineFinished(b.status.clone()));
    }
    fn repeat_started(&self, s: &RepeatStart) {
        self.push(Event::RepeatStarted(s.what.to_string()));
    }
    fn phase_started(&self, _what: &str, phase: &str) {
        self.push(Event::PhaseStarted(phase.to_string()));
    }
    fn repeat_finished(&self, e: &RepeatEnd) {
        self.push(Event::RepeatFinished {
            what: e.what.to_string(),
            failed: matches!(e.outcome, RepeatOutcome::Failed(_)),
        });
    }
    fn session_finished(&self, end: SessionEnd) {
        self.push(Event::SessionFinished(end));
    }
    fn step_started(&self, s: &StepStart) {
        self.push(Event::StepStarted(s.name.to_string(), s.expected_s));
    }
    fn step_finished(&self, name: &str, _seconds: f64, ok: bool) {
        self.push(Event::StepFinished(name.to_string(), ok));
    }
}
