//! [`Cluster`]: the ranks a run is given, chosen once at the edge ([`init`], where `app` sets up
//! `fsbench run`) and handed to the runner, which asks it instead of the process's globals.
//!
//! - [`Solo`], one process: rank 0 of 1, a repeat is `engine::run` in the slot's directory with
//!   the engine's own synchroniser, and nothing is exchanged. It never reads the process-wide
//!   state of this crate (the communicator, the failure, the watchdog, the phase log).
//! - [`Mpi`], the ranks under `mpirun`: the communicator [`super::init`] chose and the slot
//!   protocol of [`super::ranks`]. The process-wide MPI state is reached only through it.

use super::{ClockOffset, CommError};
use crate::engine::sync::PhaseSync;
use crate::engine::{EngineError, RunContext, WorkloadKind};
use crate::fstype::FsType;
use crate::metric::RawSample;
use crate::store::RankHost;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The workload of a slot of the plan and its filesystem type's row (a follower's view of the
/// plan, see [`Cluster::follow`]).
pub type WorkloadOf<'a> = &'a dyn Fn(usize) -> Option<(WorkloadKind, &'static FsType)>;

/// The ranks of a run, as the runner sees them. Rank 0 leads: it provisions, stores and reports.
pub trait Cluster: Send + Sync {
    /// This process's rank, 0-based.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Every rank, before the first phase: the ranks agree on version and suite, then every
    /// rank's clock offset against rank 0 and its fingerprint for the ranks' directory `dir`
    /// (at rank 0). One rank: one zero offset, no fingerprint.
    fn start_session(
        &self,
        suite_text: &str,
        dir: &Path,
        interrupt: &AtomicBool,
    ) -> Result<(Vec<ClockOffset>, Vec<RankHost>), CommError>;
    /// The synchroniser of a repeat's [`RunContext`].
    fn phase_sync(&self) -> &dyn PhaseSync;
    /// Rank 0: one repeat's workload (slot `slot` of the plan) on every rank, combined into one
    /// sample with the ranks' clock `offsets`.
    fn run(
        &self,
        kind: &WorkloadKind,
        slot: usize,
        ctx: &RunContext,
        offsets: &[ClockOffset],
    ) -> Result<RawSample, EngineError>;
    /// Rank 0 at the end of the session: the other ranks stop waiting.
    fn stop_followers(&self, interrupt: &AtomicBool);
    /// A rank other than 0: runs the repeats rank 0 announces until it says stop (`Ok(false)`)
    /// or an interrupt (`Ok(true)`).
    fn follow(&self, interrupt: &AtomicBool, drop_caches: bool, workload_of: WorkloadOf) -> Result<bool, CommError>;
    /// The collective failure that stopped this run, if any.
    fn failure(&self) -> Option<CommError>;
    /// Ends the communicator cleanly, after a run in which every rank finished.
    fn finish(&self);
}

/// The cluster of this process: [`Mpi`] when started by `mpirun` (an error without the `mpi`
/// feature that says how to build it), [`Solo`] otherwise, which initialises nothing.
pub fn init() -> Result<Arc<dyn Cluster>, CommError> {
    if !super::launched_by_mpirun() {
        return Ok(Arc::new(Solo));
    }
    Ok(Arc::new(Mpi(super::init()?)))
}

/// One process: rank 0 of 1; the engine runs each repeat directly.
#[derive(Clone, Copy, Debug, Default)]
pub struct Solo;

impl Cluster for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn start_session(&self, _: &str, _: &Path, _: &AtomicBool) -> Result<(Vec<ClockOffset>, Vec<RankHost>), CommError> {
        Ok((vec![ClockOffset::default()], Vec::new()))
    }
    fn phase_sync(&self) -> &dyn PhaseSync {
        &crate::engine::sync::Solo
    }
    fn run(
        &self,
        kind: &WorkloadKind,
        _: usize,
        ctx: &RunContext,
        _: &[ClockOffset],
    ) -> Result<RawSample, EngineError> {
        crate::engine::run(kind.workload(), ctx)
    }
    fn stop_followers(&self, _: &AtomicBool) {}
    /// Rank 0 never follows: nothing to wait for.
    fn follow(&self, _: &AtomicBool, _: bool, _: WorkloadOf) -> Result<bool, CommError> {
        Ok(false)
    }
    fn failure(&self) -> Option<CommError> {
        None
    }
    fn finish(&self) {}
}

/// The ranks under `mpirun`: the process's communicator ([`init`] made it) and the slot
/// protocol of [`super::ranks`].
pub struct Mpi(&'static dyn super::Comm);

impl Cluster for Mpi {
    fn rank(&self) -> usize {
        self.0.rank()
    }
    fn size(&self) -> usize {
        self.0.size()
    }
    fn start_session(
        &self,
        suite_text: &str,
        dir: &Path,
        interrupt: &AtomicBool,
    ) -> Result<(Vec<ClockOffset>, Vec<RankHost>), CommError> {
        super::ranks::start_session(suite_text, dir, interrupt)
    }
    fn phase_sync(&self) -> &dyn PhaseSync {
        super::ranks::phase_sync()
    }
    fn run(
        &self,
        kind: &WorkloadKind,
        slot: usize,
        ctx: &RunContext,
        offsets: &[ClockOffset],
    ) -> Result<RawSample, EngineError> {
        super::ranks::lead_workload(kind, slot, ctx, offsets)
    }
    fn stop_followers(&self, interrupt: &AtomicBool) {
        super::ranks::stop_followers(interrupt)
    }
    fn follow(&self, interrupt: &AtomicBool, drop_caches: bool, workload_of: WorkloadOf) -> Result<bool, CommError> {
        super::ranks::follow(interrupt, drop_caches, workload_of)
    }
    fn failure(&self) -> Option<CommError> {
        super::failure()
    }
    fn finish(&self) {
        self.0.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::BigfileSpec;
    use fsbench_core::units::Bytes;
    use std::path::PathBuf;

    /// A one-process run never reads the process-wide MPI state: [`init`] outside `mpirun`, the
    /// session's start, a repeat's synchroniser and workload (a real one, through the engine),
    /// the end, the failure and the finish of [`Solo`] make no read on this thread, which the
    /// probe counts as soon as one happens.
    #[test]
    fn a_solo_run_never_touches_the_mpi_globals() {
        let before = super::super::global_reads();
        let cluster = if super::super::launched_by_mpirun() {
            Arc::new(Solo)
        } else {
            init().unwrap()
        };
        assert_eq!((cluster.rank(), cluster.size()), (0, 1));
        let tmp = tempfile::tempdir().unwrap();
        let flag = AtomicBool::new(false);
        let (offsets, hosts) = cluster.start_session("suite", tmp.path(), &flag).unwrap();
        assert_eq!(offsets, [ClockOffset::default()]);
        assert!(hosts.is_empty());
        // The engine's own synchroniser: a rank's directory is its own (the many-rank one
        // shares the parent).
        let sync = cluster.phase_sync();
        let dir = Path::new("/x/rank-0");
        assert_eq!(sync.shared_dir(dir), (PathBuf::from(dir), true));
        let kind = WorkloadKind::Bigfile(BigfileSpec {
            size: Bytes(1 << 20),
            block: Bytes(64 << 10),
            ..BigfileSpec::default()
        });
        let ctx = RunContext {
            sync,
            ..RunContext::quiet(tmp.path(), &flag)
        };
        let sample = cluster.run(&kind, 0, &ctx, &offsets).unwrap();
        assert!(!sample.phases.is_empty());
        cluster.stop_followers(&flag);
        assert!(cluster.failure().is_none());
        cluster.finish();
        assert_eq!(super::super::global_reads(), before);
        // The probe sees a read when there is one.
        let _ = super::super::world();
        assert_eq!(super::super::global_reads(), before + 1);
    }
}
