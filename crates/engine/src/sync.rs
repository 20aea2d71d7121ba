//! [`PhaseSync`]: how the phases of one repeat line up with the same repeat run by other
//! processes (the ranks of an MPI run), seen from the engine.
//!
//! The engine defines the interface and its single-process form, [`Solo`], which does nothing;
//! the runner injects an implementation through [`super::RunContext::sync`] (`comm` implements
//! it for many ranks). The engine never names who implements it.
//!
//! Invariants:
//! - the phase driver ([`super::phase::Phases`]) calls [`PhaseSync::begin`] before every phase,
//!   [`PhaseSync::pool_measured`] after every pool run and [`PhaseSync::recorded`] when a phase
//!   is recorded; the worker pool calls [`PhaseSync::stonewall_agree`] only at a wear-out
//!   deadline, from the calling thread, never per operation;
//! - every call is outside the timed hot loop; [`Solo`]'s calls return at once and never block;
//! - a many-rank implementation that finds a peer stopped raises `interrupt` (the repeat's flag)
//!   instead of waiting for it.

use crate::latency::LatencyRecorder;
use crate::pool::StonewallStats;
use crate::EngineError;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// The synchronisation of one repeat's phases with the other processes running it.
pub trait PhaseSync: Sync {
    /// Before phase `phase` starts: waits until every process starts it too. A peer that
    /// already ended its repeat raises `interrupt` (the repeat's flag).
    fn begin(&self, phase: &str, interrupt: &AtomicBool);

    /// After a pool phase ran: its latency histogram and what wear-out stonewalling did, kept
    /// for the cluster figures (merged histograms, stonewall counts).
    fn pool_measured(&self, latency: &LatencyRecorder, stonewall: Option<StonewallStats>);

    /// Phase `phase`, timed at `wall`, was recorded (it ended just now).
    fn recorded(&self, phase: &str, wall: Duration);

    /// At a wear-out stonewall: the operation count every process agrees on (at least `ops`,
    /// the largest any reached). A failure raises `interrupt` and returns `ops`.
    fn stonewall_agree(&self, ops: u64, interrupt: &AtomicBool) -> u64;

    /// Where a workload that shares one file set between the processes keeps it (from its own
    /// directory `dir`), and whether this process prepares and removes it.
    fn shared_dir(&self, dir: &Path) -> (PathBuf, bool);

    /// Waits until every process arrived at `what`; [`EngineError::Interrupted`] when a peer
    /// ended its repeat instead, or the wait failed. Must not be called after this process's
    /// own workload failed.
    fn barrier(&self, what: &str, interrupt: &AtomicBool) -> Result<(), EngineError>;
}

/// The single-process [`PhaseSync`]: nothing to wait for, nothing kept.
#[derive(Clone, Copy, Debug, Default)]
pub struct Solo;

impl PhaseSync for Solo {
    fn begin(&self, _phase: &str, _interrupt: &AtomicBool) {}

    fn pool_measured(&self, _latency: &LatencyRecorder, _stonewall: Option<StonewallStats>) {}

    fn recorded(&self, _phase: &str, _wall: Duration) {}

    fn stonewall_agree(&self, ops: u64, _interrupt: &AtomicBool) -> u64 {
        ops
    }

    fn shared_dir(&self, dir: &Path) -> (PathBuf, bool) {
        (dir.to_path_buf(), true)
    }

    fn barrier(&self, _what: &str, _interrupt: &AtomicBool) -> Result<(), EngineError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solo_waits_for_nobody_and_agrees_with_itself() {
        let flag = AtomicBool::new(false);
        let solo: &dyn PhaseSync = &Solo;
        solo.begin("p", &flag);
        solo.recorded("p", Duration::from_secs(1));
        assert_eq!(solo.stonewall_agree(42, &flag), 42);
        assert_eq!(
            solo.shared_dir(Path::new("/x/rank-0")),
            (PathBuf::from("/x/rank-0"), true)
        );
        assert!(solo.barrier("b", &flag).is_ok());
        assert!(!flag.load(std::sync::atomic::Ordering::Relaxed));
    }

    /// Logs every call it gets.
    #[derive(Default)]
    struct Logged(std::sync::Mutex<Vec<String>>);

    impl PhaseSync for Logged {
        fn begin(&self, phase: &str, _interrupt: &AtomicBool) {
            self.0.lock().unwrap().push(format!("begin {phase}"));
        }
        fn pool_measured(&self, latency: &LatencyRecorder, stonewall: Option<StonewallStats>) {
            let n = latency.histogram().len();
            self.0.lock().unwrap().push(format!("pool {n} {stonewall:?}"));
        }
        fn recorded(&self, phase: &str, _wall: Duration) {
            self.0.lock().unwrap().push(format!("recorded {phase}"));
        }
        fn stonewall_agree(&self, ops: u64, _interrupt: &AtomicBool) -> u64 {
            self.0.lock().unwrap().push(format!("agree {ops}"));
            ops
        }
        fn shared_dir(&self, dir: &Path) -> (PathBuf, bool) {
            (dir.to_path_buf(), true)
        }
        fn barrier(&self, what: &str, _interrupt: &AtomicBool) -> Result<(), EngineError> {
            self.0.lock().unwrap().push(format!("barrier {what}"));
            Ok(())
        }
    }

    #[test]
    fn the_phase_driver_calls_the_injected_synchroniser_around_every_phase() {
        use crate::phase::{Phases, Policy};
        use crate::pool::{FnWorker, Step, WorkerPool};
        let flag = AtomicBool::new(false);
        let logged = Logged::default();
        let tmp = tempfile::tempdir().unwrap();
        let ctx = crate::RunContext {
            sync: &logged,
            ..crate::RunContext::quiet(tmp.path(), &flag)
        };
        let mut phases = Phases::new(&ctx);
        let mut left = 3;
        let worker = FnWorker(move || {
            left -= 1;
            Ok(if left > 0 { Step::Op } else { Step::Done })
        });
        phases
            .run_pool("p", WorkerPool::new(), vec![worker], &Policy::new(), |_, _| {
                Ok(Vec::new())
            })
            .unwrap();
        assert_eq!(
            *logged.0.lock().unwrap(),
            ["begin p", "pool 2 None", "recorded p"],
            "one begin, one pool measurement (2 operations), one record; no stonewall"
        );
    }
}
