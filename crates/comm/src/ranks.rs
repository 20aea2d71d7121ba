//! One repeat on many ranks: the slot protocol between rank 0 (which provisions, stores and
//! reports) and the other ranks, the per-phase synchronisation the phase driver calls, and the
//! reduction of every rank's phases into cluster figures.
//!
//! Per slot: rank 0 provisions, then broadcasts [`Cmd::Run`] (slot, directory); every rank runs
//! the workload in its own subdirectory `rank-N` (file-per-process). Every phase: sync →
//! local start → run → stop ([`RankSync`], the [`PhaseSync`] the engine's phases call). After
//! the workload every rank syncs "ended" until all have, then the results are gathered at rank
//! 0, which combines them ([`combine`]). A single rank under `mpirun` ([`super::Solo`]) runs the
//! workload directly in the slot's directory with the engine's own [`Solo`] synchroniser
//! ([`phase_sync`]): no call into the ranks during a phase. A plain run never comes here: its
//! cluster is [`super::cluster::Solo`]; these entry points are [`super::cluster::Mpi`]'s.
//!
//! A sync is an all-gather of every rank's state (starting a phase, or ended): a rank that sees
//! a peer already ended while it starts a phase stops its own workload (the peer's failed),
//! instead of waiting for a barrier the peer never reaches. The repeat is then a failed repeat
//! of the session, with every rank's error (as alone: the session goes on with the next repeat
//! or case); only a dead or hung rank (watchdog) or an interrupt stops the session.
//!
//! Figures of a phase P (rank 0's timeline, every rank's clock corrected by its offset; the
//! origin is the release of P's sync, the last rank's arrival):
//! - `M` (for each rate metric M, MiB/s or ops/s), the headline:
//!   - a time-based phase (its ranks have per-second series): the aggregate while all ranks
//!     were active (latest start to earliest end), the work done in that window over its
//!     length, absent if the ranks never all ran at once. Every rank's per-second series
//!     measures it ([`window_shares`]: each rank's share of its operations inside the window,
//!     its seconds placed on rank 0's timeline and spread evenly within each second), so a
//!     rank that ran slow in the window counts as slow there (a wear-out stonewall's
//!     operations after the deadline come after the ranks' agreement, which closes the
//!     window: outside it); every rank's series is stored too (phase P with `rank` N). Tested
//!     against an independent computation with one rank throttled up to its stonewall only
//!     (`tests/integration/mpi.rs`);
//!   - a fixed-work phase (bonnie's, small files: no series): all the ranks' work (Σ rate ×
//!     wall) over first start to last end, IOR's aggregate bandwidth (IOR's `-D` deadline makes
//!     a phase the time-limited case above). The work inside the common window is not measured here, and
//!     spread evenly over each rank's phase it would be the ranks' sum again; all the work over
//!     the window alone would count work done outside it (without bound as the window
//!     shrinks). So a straggler's tail counts as time the cluster took, as IOR counts it.
//!     Tested with one rank throttled for its whole phases (`tests/integration/mpi.rs`);
//! - `M_rank_sum` (detail): the sum of the ranks' average rates, the figure that assumes every
//!   rank ran steadily: under skew it is the optimistic one, and the difference to
//!   `M` is what the skew cost;
//! - `M_fair_share`: total work (Σ rate × wall) / (last end − first start), IOR's figure; a
//!   detail where it is the headline already (fixed work), so it is not ranked twice;
//! - `slowest_rank_s`, `straggler_index` (slowest / median rank time), `barrier_s` (from the
//!   last arrival to the last rank leaving the sync);
//! - latency statistics from the sum of every rank's histogram (one bucket layout), so cluster
//!   percentiles are true percentiles, and the sum of the ranks' stored (log-bucketed)
//!   histograms as the phase's histogram ([`phase_histogram`]); other metrics: the slowest
//!   rank's (seconds) or the mean;
//! - phase P with `rank` N (a report shows it as `P@rankN`): every rank's own rates and latency
//!   statistics, `wall_s`, `sync_in_s`, `start_s`, `end_s` (relative to the origin), as detail
//!   rows;
//! - per-window latency (time-based phases): the cluster's windows, every rank's window
//!   histograms added bucket by bucket window by window on rank 0's timeline (never averaged
//!   percentiles), and every rank's own windows with its `rank` ([`phase_windows`]);
//! - with wear-out stonewalling (`engine::pool`, IOR's `stoneWallingWearOut`): `stonewall_ops_min`
//!   / `_max` (operations of the least and most advanced rank at the deadline) and
//!   `stonewall_agreed_ops` (the all-reduced maximum every rank wore out to), and per rank
//!   `ops_before_stonewall` / `ops_after_stonewall`.

use super::{fail, now_ns, world, ClockOffset, Comm, CommError, Stop};
use crate::engine::latency::{LatencyRecorder, Stat};
use crate::engine::pool::StonewallStats;
use crate::engine::sync::{PhaseSync, Solo};
use crate::engine::{EngineError, RunContext, WorkloadKind};
use crate::metric::{
    add_bins, CpuUsage, LatencyHistogram, LatencyWindows, MetricId, PhaseResult, RawSample, Role, Unit,
};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// What rank 0 tells the other ranks before each repeat.
#[derive(Debug, Serialize, Deserialize)]
pub enum Cmd {
    /// Run slot `slot` of the plan in `dir` (each rank in `dir/rank-N`).
    Run {
        /// Index into the plan's slots.
        slot: usize,
        /// The mounted filesystem's work directory.
        dir: PathBuf,
    },
    /// The session is over.
    Stop,
}

/// One rank's timestamps of one phase (CLOCK_MONOTONIC ns of that rank).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RankPhase {
    /// Phase name.
    pub phase: String,
    /// When the rank arrived at the phase's sync.
    pub sync_in_ns: i64,
    /// When it left it.
    pub sync_out_ns: i64,
    /// Start of the timed region (end − wall).
    pub start_ns: i64,
    /// End of the timed region.
    pub end_ns: i64,
    /// The phase's latency histogram (hdrhistogram V2 serialisation), if it had one.
    pub hist: Option<Vec<u8>>,
    /// What wear-out stonewalling did on this rank, if the phase had it.
    #[serde(default)]
    pub stonewall: Option<StonewallStats>,
}

/// What every rank sends rank 0 after a repeat.
#[derive(Debug, Serialize, Deserialize)]
pub struct RankResult {
    /// The rank.
    pub rank: usize,
    /// Its sample, or why it has none.
    pub sample: Result<RawSample, RankFailure>,
    /// Its phases' timestamps, in the order of the sample's phases.
    pub phases: Vec<RankPhase>,
    /// The role of every metric of every phase (`MetricId` does not serialise its role).
    pub roles: Vec<Vec<String>>,
}

impl RankResult {
    /// The result of `rank`, ready to send.
    pub fn new(rank: usize, sample: Result<RawSample, RankFailure>, phases: Vec<RankPhase>) -> RankResult {
        let roles = sample
            .as_ref()
            .map(|s| {
                s.phases
                    .iter()
                    .map(|p| p.metrics.iter().map(|(m, _)| m.role.as_str().to_string()).collect())
                    .collect()
            })
            .unwrap_or_default();
        RankResult {
            rank,
            sample,
            phases,
            roles,
        }
    }

    /// Reads a result another rank sent, roles restored.
    pub fn from_bytes(b: &[u8]) -> Result<RankResult, BadRankResult> {
        let mut r: RankResult = serde_json::from_slice(b).map_err(BadRankResult::Json)?;
        if let Ok(s) = &mut r.sample {
            for (p, roles) in s.phases.iter_mut().zip(&r.roles) {
                for ((m, _), role) in p.metrics.iter_mut().zip(roles) {
                    m.role = Role::parse(role).ok_or_else(|| BadRankResult::UnknownRole(role.clone()))?;
                }
            }
        }
        Ok(r)
    }
}

/// Why a rank has no sample for a repeat, as it sent it (its workload's error, or
/// `stopped: …` when a peer's failure stopped it). On the wire it is the message itself, a
/// JSON string.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(transparent)]
#[error("{0}")]
pub struct RankFailure(pub String);

impl From<String> for RankFailure {
    fn from(s: String) -> Self {
        RankFailure(s)
    }
}

impl From<&str> for RankFailure {
    fn from(s: &str) -> Self {
        RankFailure(s.to_string())
    }
}

/// A rank's result that rank 0 cannot read ([`RankResult::from_bytes`]).
#[derive(Debug, thiserror::Error)]
pub enum BadRankResult {
    /// Not a serialised [`RankResult`].
    #[error("a rank's result: {0}")]
    Json(#[source] serde_json::Error),
    /// A metric's role is none this build knows.
    #[error("a rank's result: unknown role {0}")]
    UnknownRole(String),
}

/// A rank's latency histogram that does not deserialise ([`merge_histograms`]).
#[derive(Debug, thiserror::Error)]
#[error("a rank's latency histogram: {0:?}")]
pub struct BadHistogram(pub hdrhistogram::serialization::DeserializeError);

/// Why the ranks' results of a repeat make no sample ([`combine`]).
#[derive(Debug, thiserror::Error)]
pub enum CombineError {
    /// Some ranks have no sample: every rank's error, `rank N: …`, the ranks whose own
    /// workload failed first, joined by `; `.
    #[error("{0}")]
    Ranks(String),
    /// A rank ran phases other than rank 0's.
    #[error("rank {rank} did not run phase {phase} like rank 0")]
    PhaseMismatch {
        /// The rank.
        rank: usize,
        /// Rank 0's phase it did not run.
        phase: String,
    },
    /// A rank's histogram does not deserialise.
    #[error(transparent)]
    Histogram(#[from] BadHistogram),
}

struct Log {
    pending: RankPhase,
    done: Vec<RankPhase>,
}

static LOG: Mutex<Log> = Mutex::new(Log {
    pending: RankPhase {
        phase: String::new(),
        sync_in_ns: 0,
        sync_out_ns: 0,
        start_ns: 0,
        end_ns: 0,
        hist: None,
        stonewall: None,
    },
    done: Vec::new(),
});

/// Why this rank stopped the current repeat early: a peer ended its workload (it failed) while
/// this rank was still starting phases. Reset at the start of each repeat.
static PEER_ENDED: Mutex<Option<String>> = Mutex::new(None);

/// A peer ended the repeat: this rank stops its own workload too (`interrupt` is the repeat's
/// flag), and its result says why; the session goes on with the next repeat.
fn peer_ended(why: String, interrupt: &AtomicBool) {
    if let Ok(mut p) = PEER_ENDED.lock() {
        p.get_or_insert(why);
    }
    interrupt.store(true, Ordering::Relaxed);
}

/// What [`peer_ended`] recorded in this repeat, cleared.
fn take_peer_ended() -> Option<String> {
    PEER_ENDED.lock().ok().and_then(|mut p| p.take())
}

/// Prefix of the error of a rank that stopped because another rank's workload failed.
const STOPPED: &str = "stopped: ";

const STARTING: u8 = 0;
const ENDED: u8 = 1;

/// The least a rank waits for rank 0's next command.
const COMMAND_WAIT: Duration = Duration::from_secs(600);

/// When this rank last left a sync, and the longest stretch of its own work between two syncs
/// (CLOCK_MONOTONIC ns).
static LAST_SYNC_NS: AtomicI64 = AtomicI64::new(0);
static LONGEST_GAP_NS: AtomicI64 = AtomicI64::new(0);

/// The watchdog of a sync: [`super::watchdog`], or three times the longest stretch this rank
/// itself worked between two syncs if that is longer (a phase that takes 20 min on a fast rank
/// may take longer on a slow one; a dead rank is still found).
fn sync_watchdog() -> Duration {
    let longest = LONGEST_GAP_NS.load(Ordering::Relaxed).max(0) as u64;
    super::watchdog().max(Duration::from_nanos(longest.saturating_mul(3)))
}

/// An all-gather of one state byte: every rank's state at every rank.
fn sync(comm: &dyn Comm, what: &str, state: u8, stop: &Stop) -> Result<Vec<u8>, CommError> {
    let last = LAST_SYNC_NS.load(Ordering::Relaxed);
    if last > 0 {
        LONGEST_GAP_NS.fetch_max(now_ns() - last, Ordering::Relaxed);
    }
    let wd = sync_watchdog();
    let all = comm.gather(what, &[state], wd, stop)?;
    let mut flat: Vec<u8> = all.into_iter().flatten().collect();
    comm.broadcast(what, &mut flat, wd, stop)?;
    LAST_SYNC_NS.store(now_ns(), Ordering::Relaxed);
    Ok(flat)
}

/// The [`PhaseSync`] of a repeat run by many ranks (the engine's phases call it; see the module
/// documentation): syncs before every phase, agrees on wear-out stonewalls, shares the slot's
/// directory, and logs every phase's timestamps, histogram and stonewall for [`combine`]. Used
/// only with more than one rank ([`phase_sync`]); one rank runs with [`Solo`].
#[derive(Clone, Copy, Debug)]
pub struct RankSync;

/// The synchroniser of a repeat's [`RunContext`] under `mpirun`: [`Solo`] alone (no call into
/// the ranks during a phase), [`RankSync`] with more than one rank.
pub(crate) fn phase_sync() -> &'static dyn PhaseSync {
    if world().size() == 1 {
        &Solo
    } else {
        &RankSync
    }
}

impl PhaseSync for RankSync {
    /// Waits until every rank starts `phase` too. A peer that already ended (its workload
    /// failed) stops this rank's repeat (`interrupt` is the repeat's own flag, see
    /// [`run_and_gather`]); a dead rank (watchdog) stops the run ([`super::fail`]).
    fn begin(&self, phase: &str, interrupt: &AtomicBool) {
        let sync_in = now_ns();
        let result = sync(
            world(),
            &format!("the start of phase {phase}"),
            STARTING,
            &Stop::now(interrupt),
        );
        let sync_out = now_ns();
        match result {
            Ok(states) => {
                if let Some(r) = states.iter().position(|s| *s == ENDED) {
                    peer_ended(format!("rank {r} ended its workload before phase {phase}"), interrupt);
                }
            }
            Err(CommError::Interrupted(_)) => {}
            Err(e) => fail(e, interrupt),
        }
        if let Ok(mut log) = LOG.lock() {
            // A later pass of a phase not yet recorded (`Phases::run_passes`) keeps the phase's
            // first sync: the phase starts there.
            if log.pending.phase != phase {
                log.pending = RankPhase {
                    phase: phase.to_string(),
                    sync_in_ns: sync_in,
                    sync_out_ns: sync_out,
                    ..RankPhase::default()
                };
            }
        }
    }

    /// Keeps a pool phase's latency histogram and stonewall for rank 0's cluster figures.
    fn pool_measured(&self, latency: &LatencyRecorder, stonewall: Option<StonewallStats>) {
        let mut buf = Vec::new();
        use hdrhistogram::serialization::Serializer;
        let hist = hdrhistogram::serialization::V2Serializer::new()
            .serialize(latency.histogram(), &mut buf)
            .is_ok()
            .then_some(buf);
        if let Ok(mut log) = LOG.lock() {
            if hist.is_some() {
                log.pending.hist = hist;
            }
            if stonewall.is_some() {
                log.pending.stonewall = stonewall;
            }
        }
    }

    /// Logs the phase's timed region (ending now).
    fn recorded(&self, phase: &str, wall: Duration) {
        let end = now_ns();
        if let Ok(mut log) = LOG.lock() {
            let mut p = std::mem::take(&mut log.pending);
            p.end_ns = end;
            p.start_ns = end - i64::try_from(wall.as_nanos()).unwrap_or(i64::MAX);
            if p.phase != phase {
                // A phase recorded without its own start (one of several from one region): it
                // starts with no sync of its own.
                p.phase = phase.to_string();
                p.sync_in_ns = p.start_ns;
                p.sync_out_ns = p.start_ns;
            }
            log.done.push(p);
        }
    }

    /// The largest `ops` of any rank (a non-blocking all-reduce under the sync watchdog). A
    /// failure (dead rank, watchdog, interrupt) stops the run ([`super::fail`]) and returns
    /// `ops` (no wear-out).
    fn stonewall_agree(&self, ops: u64, interrupt: &AtomicBool) -> u64 {
        match world().all_max("the stonewall", ops, sync_watchdog(), &Stop::now(interrupt)) {
            Ok(max) => max,
            Err(CommError::Interrupted(_)) => ops,
            Err(e) => {
                fail(e, interrupt);
                ops
            }
        }
    }

    /// A file set shared between the ranks (fileio `ranks_share`, IOR's N-1 against `-F`) is
    /// in the slot's directory (the parent of this rank's `rank-N`), prepared and removed by
    /// rank 0.
    fn shared_dir(&self, dir: &std::path::Path) -> (PathBuf, bool) {
        match dir.parent() {
            Some(parent) => (parent.to_path_buf(), world().rank() == 0),
            None => (dir.to_path_buf(), true),
        }
    }

    /// A sync like a phase's start (for example: rank 0 has prepared the shared file set), so
    /// a rank whose workload failed before (it syncs "ended" instead) stops this repeat on every
    /// rank rather than leaving the others waiting. A dead rank or the watchdog stops the run
    /// ([`super::fail`]); every such stop is [`EngineError::Interrupted`].
    fn barrier(&self, what: &str, interrupt: &AtomicBool) -> Result<(), EngineError> {
        match sync(world(), what, STARTING, &Stop::now(interrupt)) {
            Ok(states) => match states.iter().position(|s| *s == ENDED) {
                Some(r) => {
                    peer_ended(format!("rank {r} ended its workload before {what}"), interrupt);
                    Err(EngineError::Interrupted)
                }
                None => Ok(()),
            },
            Err(CommError::Interrupted(_)) => Err(EngineError::Interrupted),
            Err(e) => {
                fail(e, interrupt);
                Err(EngineError::Interrupted)
            }
        }
    }
}

/// The phases logged since the last call; a phase begun and never recorded (a failed repeat)
/// is dropped, so the next repeat's first phase starts from its own sync.
fn take_log() -> Vec<RankPhase> {
    LOG.lock()
        .map(|mut l| {
            l.pending = RankPhase::default();
            std::mem::take(&mut l.done)
        })
        .unwrap_or_default()
}

/// Runs one repeat's workload on every rank: rank 0's side. Alone, it is `engine::run` in
/// `ctx.dir`. With more ranks: tells the others, runs in `ctx.dir/rank-0`, and combines every
/// rank's phases into cluster figures ([`combine`]).
pub(crate) fn lead_workload(
    kind: &WorkloadKind,
    slot: usize,
    ctx: &RunContext,
    offsets: &[ClockOffset],
) -> Result<RawSample, EngineError> {
    let comm = world();
    if comm.size() == 1 {
        return crate::engine::run(kind.workload(), ctx);
    }
    let mut cmd = serde_json::to_vec(&Cmd::Run {
        slot,
        dir: ctx.dir.to_path_buf(),
    })
    .unwrap_or_default();
    if let Err(e) = comm.broadcast(
        "the start of a repeat",
        &mut cmd,
        super::watchdog().max(COMMAND_WAIT),
        &Stop::now(ctx.interrupt),
    ) {
        if !matches!(e, CommError::Interrupted(_)) {
            fail(e, ctx.interrupt);
        }
        return Err(EngineError::Interrupted);
    }
    let results = run_and_gather(comm, kind, ctx)?;
    let mut parsed = Vec::new();
    for r in results {
        parsed.push(RankResult::from_bytes(&r).map_err(|e| EngineError::Invalid(e.to_string()))?);
    }
    if super::failure().is_some() {
        let errors = rank_errors(&parsed);
        super::explain(&errors);
        return Err(EngineError::Invalid(errors));
    }
    combine(&parsed, offsets).map_err(|e| EngineError::Invalid(e.to_string()))
}

/// Every rank's error, the ranks whose own workload failed first (then those that stopped
/// because of them).
fn rank_errors(results: &[RankResult]) -> String {
    let mut errs: Vec<(bool, String)> = results
        .iter()
        .filter_map(|r| {
            r.sample
                .as_ref()
                .err()
                .map(|e| (e.0.starts_with(STOPPED), format!("rank {}: {e}", r.rank)))
        })
        .collect();
    errs.sort_by_key(|(stopped, _)| *stopped);
    let errs: Vec<String> = errs.into_iter().map(|(_, e)| e).collect();
    if errs.is_empty() {
        "no rank reported an error".into()
    } else {
        errs.join("; ")
    }
}

/// Every rank: run the workload in `dir/rank-N`, sync until all ended, gather the results at
/// rank 0 (others get an empty vector).
fn run_and_gather(comm: &dyn Comm, kind: &WorkloadKind, ctx: &RunContext) -> Result<Vec<Vec<u8>>, EngineError> {
    let sub = ctx.dir.join(format!("rank-{}", comm.rank()));
    take_peer_ended();
    // The repeat's own stop flag: raised by the run's (SIGINT/SIGTERM, a failure of the ranks),
    // copied by the watcher below, and by a peer whose workload failed ([`peer_ended`]), which
    // stops this repeat only.
    let repeat_stop = AtomicBool::new(false);
    let finished = AtomicBool::new(false);
    let local = std::thread::scope(|s| {
        s.spawn(|| {
            while !finished.load(Ordering::Relaxed) {
                if ctx.interrupt.load(Ordering::Relaxed) {
                    repeat_stop.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        let r = std::fs::create_dir_all(&sub)
            .map_err(|e| EngineError::io(format!("mkdir {}", sub.display()), e))
            .and_then(|_| {
                take_log();
                crate::engine::run(
                    kind.workload(),
                    &RunContext {
                        dir: &sub,
                        drop_caches: ctx.drop_caches,
                        interrupt: &repeat_stop,
                        sync: ctx.sync,
                        on_phase: ctx.on_phase,
                        state: ctx.state,
                        fs: ctx.fs,
                        mkfs_args: ctx.mkfs_args,
                        keep: ctx.keep,
                    },
                )
            });
        finished.store(true, Ordering::Relaxed);
        r
    });
    let _ = std::fs::remove_dir(&sub);
    // A failure of the ranks (dead rank, watchdog) stops the session, not only the repeat.
    if super::failure().is_some() {
        ctx.interrupt.store(true, Ordering::Relaxed);
    }
    let local = match (local, take_peer_ended()) {
        (Err(EngineError::Interrupted), Some(why)) if !ctx.interrupt.load(Ordering::Relaxed) => {
            Err(RankFailure(format!("{STOPPED}{why}")))
        }
        (r, _) => r.map_err(|e| RankFailure(e.to_string())),
    };
    // Until every rank ended: a rank still starting phases sees this one ended and stops.
    loop {
        match sync(comm, "the end of a repeat", ENDED, &Stop::graceful(ctx.interrupt)) {
            Ok(states) if states.iter().all(|s| *s == ENDED) => break,
            Ok(_) => continue,
            Err(e) => {
                fail(e, ctx.interrupt);
                return Err(EngineError::Interrupted);
            }
        }
    }
    let mine = RankResult::new(comm.rank(), local, take_log());
    let bytes = serde_json::to_vec(&mine).unwrap_or_default();
    comm.gather(
        "the results of a repeat",
        &bytes,
        sync_watchdog(),
        &Stop::graceful(ctx.interrupt),
    )
    .map_err(|e| {
        fail(e, ctx.interrupt);
        EngineError::Interrupted
    })
}

/// A rank other than 0: waits for rank 0's commands and runs each repeat in its subdirectory
/// until [`Cmd::Stop`] (`Ok(false)`) or an interrupt (`Ok(true)`). `workload_of(slot)` gives
/// the workload of a slot of the plan and its filesystem type's row (what the type lacks leaves
/// out the same phases on every rank).
pub(crate) fn follow(
    interrupt: &AtomicBool,
    drop_caches: bool,
    workload_of: &dyn Fn(usize) -> Option<(WorkloadKind, &'static crate::fstype::FsType)>,
) -> Result<bool, CommError> {
    let comm = world();
    fn no_phase(_: &str) {}
    loop {
        let mut buf = Vec::new();
        match comm.broadcast(
            "rank 0's next command",
            &mut buf,
            // Rank 0 makes and measures filesystems meanwhile (mkfs, the baseline): minutes.
            super::watchdog().max(COMMAND_WAIT),
            &Stop::now(interrupt),
        ) {
            Ok(()) => {}
            Err(CommError::Interrupted(_)) => return Ok(true),
            Err(e) => return Err(e),
        }
        let cmd: Cmd =
            serde_json::from_slice(&buf).map_err(|e| CommError::Mismatch(format!("rank 0's command: {e}")))?;
        match cmd {
            Cmd::Stop => return Ok(false),
            Cmd::Run { slot, dir } => {
                let (kind, fs) = workload_of(slot).ok_or_else(|| {
                    CommError::Mismatch(format!("rank 0 runs slot {slot}, which this rank's plan lacks"))
                })?;
                let ctx = RunContext {
                    dir: &dir,
                    drop_caches,
                    interrupt,
                    sync: &RankSync,
                    on_phase: &no_phase,
                    state: None,
                    fs: Some(fs),
                    mkfs_args: &[],
                    keep: false,
                };
                if run_and_gather(comm, &kind, &ctx).is_err() {
                    return match super::failure() {
                        Some(e) => Err(e),
                        None => Ok(true),
                    };
                }
            }
        }
    }
}

/// Rank 0 at the end of the session: the other ranks stop waiting. Interrupted, it does not
/// wait (the others were interrupted too and left, or take the message if still there).
pub(crate) fn stop_followers(interrupt: &AtomicBool) {
    let comm = world();
    if comm.size() == 1 || super::failure().is_some() {
        return;
    }
    let mut cmd = serde_json::to_vec(&Cmd::Stop).unwrap_or_default();
    match comm.broadcast(
        "the end of the session",
        &mut cmd,
        super::watchdog(),
        &Stop::now(interrupt),
    ) {
        Ok(()) | Err(CommError::Interrupted(_)) => {}
        Err(e) => fail(e, interrupt),
    }
}

/// Before the first phase: every rank must run the same fsbench version and suite text
/// (refused otherwise, on every rank); then the clock offsets of every rank against rank 0, and
/// every rank's fingerprint for the ranks' directory `dir` ([`super::fingerprint`]), with its
/// clock offset, at rank 0. Alone: no offsets and no fingerprints.
pub(crate) fn start_session(
    suite_text: &str,
    dir: &std::path::Path,
    interrupt: &AtomicBool,
) -> Result<(Vec<ClockOffset>, Vec<crate::store::RankHost>), CommError> {
    let comm = world();
    if comm.size() == 1 {
        return Ok((vec![ClockOffset::default()], Vec::new()));
    }
    let wd = super::watchdog();
    let me = serde_json::to_vec(&(
        env!("CARGO_PKG_VERSION"),
        suite_text,
        serde_json::to_string(&super::fingerprint::of_this_rank(comm.rank(), dir)).unwrap_or_default(),
    ))
    .unwrap_or_default();
    let stop = Stop::now(interrupt);
    let all = comm.gather("the version check", &me, wd, &stop)?;
    let mut verdict = Vec::new();
    let mut hosts: Vec<crate::store::RankHost> = Vec::new();
    if comm.rank() == 0 {
        let parsed: Vec<(String, String, String)> = all
            .iter()
            .map(|b| serde_json::from_slice(b).unwrap_or_default())
            .collect();
        for (r, (v, s, h)) in parsed.iter().enumerate() {
            if *v != parsed[0].0 {
                verdict = format!(
                    "rank {r} runs fsbench {v}, rank 0 runs {}: every rank must run the same fsbench",
                    parsed[0].0
                )
                .into_bytes();
                break;
            }
            if *s != parsed[0].1 {
                verdict = format!("rank {r} has another suite text than rank 0: every rank must run the same suite")
                    .into_bytes();
                break;
            }
            hosts.push(serde_json::from_str(h).unwrap_or_else(|_| crate::store::RankHost {
                rank: r as u32,
                ..Default::default()
            }));
        }
    }
    comm.broadcast("the version check", &mut verdict, wd, &stop)?;
    if !verdict.is_empty() {
        return Err(CommError::Mismatch(String::from_utf8_lossy(&verdict).into_owned()));
    }
    comm.barrier("the clock check", wd, &stop)?;
    let offsets = comm.clock_offsets()?;
    for h in &mut hosts {
        let o = offsets.get(h.rank as usize).copied().unwrap_or_default();
        h.clock_offset_ns = o.offset_ns;
        h.clock_rtt_ns = o.rtt_ns;
    }
    Ok((offsets, hosts))
}

/// With `ranks` ranks sharing each filesystem, every case holds `ranks` times its workload's
/// footprint (one copy per `rank-N` subdirectory): its estimate and image are planned for that.
/// A variant's own `image_size` is kept. Nothing changes for one rank.
pub fn scale_plan(plan: &mut crate::plan::Plan, ranks: usize) {
    if ranks <= 1 {
        return;
    }
    let n = ranks as u64;
    for c in &mut plan.cases {
        let f = c.footprint;
        let m = |x: u64| x.saturating_mul(n);
        let scaled = crate::fstype::Footprint {
            files: m(f.files),
            dirs: m(f.dirs) + n,
            symlinks: m(f.symlinks),
            block_bytes: m(f.block_bytes),
            small_files: m(f.small_files),
            small_bytes: m(f.small_bytes),
            entry_bytes: m(f.entry_bytes),
            extra_bytes: m(f.extra_bytes),
            growing_bytes: m(f.growing_bytes),
            rewrite_bytes: m(f.rewrite_bytes),
        };
        c.estimate = c.variant.fs().plan(&scaled);
        c.image_bytes = c.variant.image_size.map_or(c.estimate.image_bytes, |b| b.get());
        c.footprint = scaled;
    }
}

fn is_rate(m: &MetricId) -> bool {
    m.role == Role::Headline && matches!(m.unit, Unit::MibPerSec | Unit::OpsPerSec)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Merges serialised histograms into one recorder (the ranks share one bucket layout).
pub fn merge_histograms(hists: &[Vec<u8>]) -> Result<LatencyRecorder, BadHistogram> {
    let mut all = LatencyRecorder::new();
    for h in hists {
        let hist: hdrhistogram::Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut h.as_slice())
            .map_err(BadHistogram)?;
        all.merge(&LatencyRecorder::from_histogram(hist));
    }
    Ok(all)
}

/// One rank's share of one phase: its rank, its phase result, its timestamps and its clock
/// offset against rank 0 (ns).
type RankOfPhase<'a> = (usize, &'a PhaseResult, &'a RankPhase, i64);

/// Every rank's per-second operation counts of one phase (`None` for a rank without a series,
/// a phase that is not time-based), in the order of the phase's [`RankOfPhase`]s.
type SeriesOfPhase<'a> = Vec<Option<&'a [u64]>>;

/// The repeat's sample from every rank's (see the module documentation for the figures).
pub fn combine(results: &[RankResult], offsets: &[ClockOffset]) -> Result<RawSample, CombineError> {
    let errs: Vec<&RankResult> = results.iter().filter(|r| r.sample.is_err()).collect();
    if !errs.is_empty() {
        return Err(CombineError::Ranks(rank_errors(results)));
    }
    let samples: Vec<&RawSample> = results.iter().filter_map(|r| r.sample.as_ref().ok()).collect();
    let lead = samples[0];
    let mut out = RawSample {
        notes: rank_notes(results),
        series: rank_series(results),
        ..RawSample::default()
    };
    for (i, p0) in lead.phases.iter().enumerate() {
        let ranks = ranks_of_phase(results, offsets, i, p0)?;
        let series: SeriesOfPhase = ranks
            .iter()
            .map(|(rank, _, _, _)| {
                let sample = results.iter().find(|r| r.rank == *rank)?.sample.as_ref().ok()?;
                let t = sample.series.iter().find(|t| t.phase == p0.phase)?;
                Some(t.ops.as_slice())
            })
            .collect();
        combine_phase(p0, &ranks, &series, &mut out)?;
        out.windows.extend(phase_windows(results, &ranks, &p0.phase));
        out.histograms.extend(phase_histogram(results, &ranks, &p0.phase));
    }
    Ok(out)
}

/// The cluster's whole-phase latency histogram of `phase` (what the report's histogram and
/// percentile spectrum draw): every rank's stored bins added bucket by bucket; none unless
/// every rank of the phase stored one (a sum without a rank's operations would misstate the
/// tail).
fn phase_histogram(results: &[RankResult], ranks: &[RankOfPhase], phase: &str) -> Option<LatencyHistogram> {
    let mut bins = Vec::new();
    for (rank, _, _, _) in ranks {
        let sample = results.iter().find(|r| r.rank == *rank)?.sample.as_ref().ok()?;
        add_bins(&mut bins, &sample.histograms.iter().find(|h| h.phase == phase)?.bins);
    }
    Some(LatencyHistogram {
        phase: phase.to_string(),
        bins,
    })
}

/// The per-window latency histograms of phase `phase`: the cluster's (no `rank`), the ranks'
/// windows added bucket by bucket window by window, then every rank's own with its `rank`.
///
/// Each rank counts windows from its own start of the phase; on rank 0's timeline (clock
/// offsets applied) a rank that started `d` after the first one has its window `i` added to the
/// cluster's window `i + round(d / window)`, so the cluster's window `i` is the `i`-th window
/// since the first rank started, to within half a window. The cluster's windows exist only
/// when every rank of the phase sent windows of one length (as its latency statistics need
/// every rank's histogram); percentiles are taken from the sums, never averaged.
fn phase_windows(results: &[RankResult], ranks: &[RankOfPhase], phase: &str) -> Vec<LatencyWindows> {
    let own: Vec<(usize, i64, &LatencyWindows)> = ranks
        .iter()
        .filter_map(|(rank, _, t, o)| {
            let sample = results.iter().find(|r| r.rank == *rank)?.sample.as_ref().ok()?;
            let w = sample.windows.iter().find(|w| w.phase == phase && w.rank.is_none())?;
            Some((*rank, t.start_ns - o, w))
        })
        .collect();
    let mut out = Vec::new();
    let window_ms = own.first().map(|(_, _, w)| w.window_ms).unwrap_or(0);
    if !own.is_empty()
        && own.len() == ranks.len()
        && window_ms > 0
        && own.iter().all(|(_, _, w)| w.window_ms == window_ms)
    {
        let first = own.iter().map(|(_, start, _)| *start).min().unwrap_or(0);
        let window_ns = window_ms as f64 * 1e6;
        let mut bins: Vec<Vec<(u64, u64)>> = Vec::new();
        for (_, start, w) in &own {
            let shift = ((start - first) as f64 / window_ns).round() as usize;
            if bins.len() < shift + w.bins.len() {
                bins.resize(shift + w.bins.len(), Vec::new());
            }
            for (i, b) in w.bins.iter().enumerate() {
                add_bins(&mut bins[shift + i], b);
            }
        }
        out.push(LatencyWindows {
            phase: phase.to_string(),
            rank: None,
            window_ms,
            bins,
        });
    }
    out.extend(own.into_iter().map(|(rank, _, w)| LatencyWindows {
        rank: Some(rank_number(rank)),
        ..w.clone()
    }));
    out
}

/// Every rank's notes, once each; another rank's prefixed with its number.
fn rank_notes(results: &[RankResult]) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    for r in results {
        for n in &r.sample.as_ref().map(|s| s.notes.clone()).unwrap_or_default() {
            let n = if r.rank == 0 {
                n.clone()
            } else {
                format!("rank {}: {n}", r.rank)
            };
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
    }
    notes
}

/// Every rank's per-second series of its time-based phases, with its rank (second i from that
/// rank's own start of P, which its `start_s` row puts on rank 0's timeline).
fn rank_series(results: &[RankResult]) -> Vec<crate::metric::ThroughputSeries> {
    let mut series = Vec::new();
    for r in results {
        for t in r.sample.as_ref().map(|s| s.series.as_slice()).unwrap_or_default() {
            series.push(crate::metric::ThroughputSeries {
                phase: t.phase.clone(),
                rank: Some(rank_number(r.rank)),
                ops: t.ops.clone(),
            });
        }
    }
    series
}

/// A rank's number as stored with its rows.
fn rank_number(rank: usize) -> u32 {
    u32::try_from(rank).unwrap_or(u32::MAX)
}

/// Every rank's share of phase `i` of rank 0 (`p0`); an error if a rank did not run it.
fn ranks_of_phase<'a>(
    results: &'a [RankResult],
    offsets: &[ClockOffset],
    i: usize,
    p0: &PhaseResult,
) -> Result<Vec<RankOfPhase<'a>>, CombineError> {
    let mut ranks = Vec::new();
    for r in results {
        let s = r.sample.as_ref().map_err(|e| CombineError::Ranks(e.0.clone()))?;
        let p = s.phases.get(i).filter(|p| p.phase == p0.phase);
        let t = r.phases.get(i).filter(|t| t.phase == p0.phase);
        match (p, t) {
            (Some(p), Some(t)) => {
                let off = offsets.get(r.rank).map_or(0, |o| o.offset_ns);
                ranks.push((r.rank, p, t, off));
            }
            _ => {
                return Err(CombineError::PhaseMismatch {
                    rank: r.rank,
                    phase: p0.phase.clone(),
                })
            }
        }
    }
    Ok(ranks)
}

/// A phase's metrics with their values.
type Metrics = Vec<(MetricId, f64)>;

/// A detail row in seconds.
fn detail(name: &str, v: f64) -> (MetricId, f64) {
    (MetricId::lower(name, Unit::Seconds).with_role(Role::Detail), v)
}

/// A detail row counting operations.
fn count(name: &str, v: u64) -> (MetricId, f64) {
    (MetricId::higher(name, Unit::Count).with_role(Role::Detail), v as f64)
}

fn secs(ns: i64) -> f64 {
    ns as f64 / 1e9
}

/// Phase `p0`'s cluster row and every rank's own row, from `ranks`, added to `out`.
fn combine_phase(
    p0: &PhaseResult,
    ranks: &[RankOfPhase],
    series: &SeriesOfPhase,
    out: &mut RawSample,
) -> Result<(), CombineError> {
    let origin = ranks.iter().map(|(_, _, t, o)| t.sync_in_ns - o).max().unwrap_or(0);
    let first_start = ranks.iter().map(|(_, _, t, o)| t.start_ns - o).min().unwrap_or(0);
    let last_end = ranks.iter().map(|(_, _, t, o)| t.end_ns - o).max().unwrap_or(0);
    let last_out = ranks.iter().map(|(_, _, t, o)| t.sync_out_ns - o).max().unwrap_or(0);
    let mut walls: Vec<f64> = ranks.iter().map(|(_, p, _, _)| p.wall.as_secs_f64()).collect();
    let slowest = walls.iter().copied().fold(0.0, f64::max);
    let med = median(&mut walls);
    let span = secs(last_end - first_start);
    let (mut metrics, mut rank_rows) = other_metrics(p0, ranks, series, span);
    latency_metrics(p0, ranks, &mut metrics, &mut rank_rows)?;
    metrics.push(detail("slowest_rank_s", slowest));
    metrics.push((
        MetricId::lower("straggler_index", Unit::Ratio).with_role(Role::Detail),
        if med > 0.0 { slowest / med } else { f64::NAN },
    ));
    metrics.push(detail("barrier_s", secs(last_out - origin)));
    stonewall_metrics(p0, ranks, &mut metrics, &mut out.notes);
    let n = ranks.len() as f64;
    out.phases.push(PhaseResult {
        phase: p0.phase.clone(),
        rank: None,
        wall: Duration::from_secs_f64(span.max(0.0)),
        cpu: CpuUsage {
            process_pct: ranks.iter().map(|(_, p, _, _)| p.cpu.process_pct).sum(),
            system_pct: ranks.iter().map(|(_, p, _, _)| p.cpu.system_pct).sum::<f64>() / n,
        },
        metrics,
    });
    for ((rank, p, t, o), mut row) in ranks.iter().zip(rank_rows) {
        row.push(detail("wall_s", p.wall.as_secs_f64()));
        row.push(detail("sync_in_s", secs(t.sync_in_ns - o - origin)));
        row.push(detail("start_s", secs(t.start_ns - o - origin)));
        row.push(detail("end_s", secs(t.end_ns - o - origin)));
        if let Some(w) = t.stonewall {
            row.push(count("ops_before_stonewall", w.ops_before));
            row.push(count("ops_after_stonewall", w.ops_after));
        }
        out.phases.push(PhaseResult {
            phase: p0.phase.clone(),
            rank: Some(rank_number(*rank)),
            wall: p.wall,
            cpu: p.cpu,
            metrics: row,
        });
    }
    Ok(())
}

/// The cluster figures of every metric of `p0` but latencies (rates: the headline, measured
/// over the window all ranks ran in (a time-based phase, from the ranks' `series`) or all the
/// work over `span` seconds, first start to last end (a fixed-work phase); the fair share over
/// `span`; the ranks' sum as a detail; seconds: the slowest rank's; others: the mean), and every
/// rank's own rates as the start of its row.
fn other_metrics(
    p0: &PhaseResult,
    ranks: &[RankOfPhase],
    series: &SeriesOfPhase,
    span: f64,
) -> (Metrics, Vec<Metrics>) {
    let last_start = ranks.iter().map(|(_, _, t, o)| t.start_ns - o).max().unwrap_or(0);
    let first_end = ranks.iter().map(|(_, _, t, o)| t.end_ns - o).min().unwrap_or(0);
    // Each rank's share of its own work done inside the window, from its series.
    let shares = window_shares(ranks, series, (last_start, first_end));
    // A time-based phase: its ranks have per-second series; a fixed-work one has none.
    let timed = series.iter().any(Option::is_some);
    let mut metrics = Vec::new();
    let mut rank_rows: Vec<Metrics> = vec![Vec::new(); ranks.len()];
    for (m, _) in p0.metrics.iter().filter(|(m, _)| m.role != Role::Latency) {
        let vals: Vec<f64> = ranks
            .iter()
            .map(|(_, p, _, _)| p.metrics.iter().find(|(x, _)| x == m).map_or(f64::NAN, |(_, v)| *v))
            .collect();
        if is_rate(m) {
            let work: f64 = ranks
                .iter()
                .zip(&vals)
                .map(|((_, p, _, _), v)| v * p.wall.as_secs_f64())
                .sum();
            let sum: f64 = vals.iter().sum();
            let fair = if span > 0.0 { work / span } else { f64::NAN };
            let rank_sum = MetricId::higher(&format!("{}_rank_sum", m.name), m.unit).with_role(Role::Detail);
            let fair_share = MetricId::higher(&format!("{}_fair_share", m.name), m.unit);
            if timed {
                if last_start < first_end {
                    let aggregate = match &shares {
                        // Measured: the work each rank did inside the window, over the window.
                        Some(shares) => {
                            let window = secs(first_end - last_start);
                            ranks
                                .iter()
                                .zip(&vals)
                                .zip(shares)
                                .map(|(((_, p, _, _), v), share)| v * p.wall.as_secs_f64() * share)
                                .sum::<f64>()
                                / window
                        }
                        // A rank's series without operations: its work spread evenly.
                        None => sum,
                    };
                    metrics.push((m.clone(), aggregate));
                    metrics.push((rank_sum, sum));
                }
                metrics.push((fair_share, fair));
            } else {
                // Fixed work: what the ranks did inside the window is not measured (spread
                // evenly it would be the ranks' sum again), so the headline is all the work over
                // first start to last end, IOR's aggregate; the fair-share row repeats it as a
                // detail, not ranked twice.
                if span > 0.0 {
                    metrics.push((m.clone(), fair));
                }
                metrics.push((rank_sum, sum));
                if span > 0.0 {
                    metrics.push((fair_share.with_role(Role::Detail), fair));
                }
            }
            for (row, v) in rank_rows.iter_mut().zip(&vals) {
                row.push((m.clone().with_role(Role::Detail), *v));
            }
        } else if m.unit == Unit::Seconds {
            metrics.push((m.clone(), vals.iter().copied().fold(f64::NAN, f64::max)));
        } else {
            // The mean over the ranks that have the row: a detail such as `lat_sample_every`
            // is written only by a rank whose own run sampled.
            let present: Vec<f64> = vals.iter().copied().filter(|v| v.is_finite()).collect();
            if !present.is_empty() {
                metrics.push((m.clone(), present.iter().sum::<f64>() / present.len() as f64));
            }
        }
    }
    (metrics, rank_rows)
}

/// Each rank's fraction of its own operations done inside `window` (ns on rank 0's timeline),
/// from its per-second series: second `i` covers `start + i` to `start + i + 1` (the last one
/// ends at the rank's end), its operations spread evenly over it. `None` unless every rank has
/// a series with operations and the window is not empty.
///
/// A wear-out stonewall's operations after the deadline (`ops_after`) are counted in the last
/// second the rank reached (`engine::pool`), however long the wear-out lasted; they all came
/// after the ranks agreed on the count, and the rank that had reached it ended right there,
/// first, closing the window: they are outside it, not spread over that second.
fn window_shares(ranks: &[RankOfPhase], series: &SeriesOfPhase, (from, to): (i64, i64)) -> Option<Vec<f64>> {
    if to <= from {
        return None;
    }
    let (from, to) = (secs(from), secs(to));
    ranks
        .iter()
        .zip(series)
        .map(|((_, _, t, o), ser)| {
            let ser = (*ser)?;
            let total: u64 = ser.iter().sum();
            if total == 0 {
                return None;
            }
            let (start, end) = (secs(t.start_ns - o), secs(t.end_ns - o));
            // The series without the wear-out, taken from its last seconds.
            let mut worn = t.stonewall.map_or(0, |w| w.ops_after);
            let mut ser = ser.to_vec();
            for n in ser.iter_mut().rev() {
                let off = worn.min(*n);
                *n -= off;
                worn -= off;
            }
            let inside: f64 = ser
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    let a = start + i as f64;
                    let b = (a + 1.0).min(end).max(a);
                    let overlap = (b.min(to) - a.max(from)).max(0.0);
                    if b > a {
                        n as f64 * overlap / (b - a)
                    } else {
                        0.0
                    }
                })
                .sum();
            Some(inside / total as f64)
        })
        .collect()
}

/// The latency statistics of `p0`: from the sum of every rank's histogram when every rank sent
/// one, else the largest of the ranks' own; every rank's own added to its row.
fn latency_metrics(
    p0: &PhaseResult,
    ranks: &[RankOfPhase],
    metrics: &mut Metrics,
    rank_rows: &mut [Metrics],
) -> Result<(), CombineError> {
    let hists: Vec<Vec<u8>> = ranks.iter().filter_map(|(_, _, t, _)| t.hist.clone()).collect();
    let lat_names: Vec<&MetricId> = p0
        .metrics
        .iter()
        .map(|(m, _)| m)
        .filter(|m| m.role == Role::Latency)
        .collect();
    if lat_names.is_empty() {
        return Ok(());
    }
    let merged = if hists.len() == ranks.len() {
        Some(merge_histograms(&hists)?.summary())
    } else {
        None
    };
    for m in lat_names {
        let v = match (&merged, Stat::ALL.iter().find(|s| s.name() == m.name)) {
            (Some(sum), Some(stat)) => stat.of(sum),
            _ => ranks
                .iter()
                .filter_map(|(_, p, _, _)| p.metrics.iter().find(|(x, _)| x == m).map(|(_, v)| *v))
                .fold(f64::NAN, f64::max),
        };
        metrics.push((m.clone(), v));
        for (row, (_, p, _, _)) in rank_rows.iter_mut().zip(ranks) {
            if let Some((_, v)) = p.metrics.iter().find(|(x, _)| x == m) {
                row.push((m.clone().with_role(Role::Detail), *v));
            }
        }
    }
    Ok(())
}

/// With wear-out stonewalling: the least and most advanced rank's operations at the deadline,
/// the agreed count, and a note saying so.
fn stonewall_metrics(
    p0: &PhaseResult,
    ranks: &[RankOfPhase],
    metrics: &mut Vec<(MetricId, f64)>,
    notes: &mut Vec<String>,
) {
    let walls: Vec<StonewallStats> = ranks.iter().filter_map(|(_, _, t, _)| t.stonewall).collect();
    if walls.is_empty() {
        return;
    }
    let min = walls.iter().map(|w| w.ops_before).min().unwrap_or(0);
    let max = walls.iter().map(|w| w.ops_before).max().unwrap_or(0);
    let agreed = walls.iter().map(|w| w.agreed).max().unwrap_or(0);
    metrics.push(count("stonewall_ops_min", min));
    metrics.push(count("stonewall_ops_max", max));
    metrics.push(count("stonewall_agreed_ops", agreed));
    notes.push(format!(
        "{}: stonewall (wear-out): the ranks had done {min} to {max} operations at the deadline; every rank went on to {agreed}",
        p0.phase
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder(values: impl IntoIterator<Item = u64>) -> LatencyRecorder {
        let mut r = LatencyRecorder::new();
        for v in values {
            r.record_ns(v);
        }
        r
    }

    fn serialised(r: &LatencyRecorder) -> Vec<u8> {
        use hdrhistogram::serialization::Serializer;
        let mut buf = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(r.histogram(), &mut buf)
            .unwrap();
        buf
    }

    /// Rank `r` of a phase `p` that ran `wall` s from `start` s at `rate` ops/s.
    fn rank(r: usize, start: f64, wall: f64, rate: f64, lat: &LatencyRecorder, offset_ns: i64) -> RankResult {
        let ns = |s: f64| (s * 1e9) as i64 + offset_ns;
        let sent = RankResult::new(
            r,
            Ok(RawSample {
                phases: vec![PhaseResult {
                    phase: "p".into(),
                    rank: None,
                    wall: Duration::from_secs_f64(wall),
                    cpu: CpuUsage::default(),
                    metrics: vec![
                        (MetricId::higher("rate", Unit::OpsPerSec), rate),
                        (MetricId::latency("lat_p99"), lat.summary().p99_us),
                        (MetricId::latency("lat_max"), lat.summary().max_us),
                    ],
                }],
                histograms: vec![],
                series: Vec::new(),
                windows: Vec::new(),
                notes: vec![],
            }),
            vec![RankPhase {
                phase: "p".into(),
                sync_in_ns: ns(0.0),
                sync_out_ns: ns(0.001),
                start_ns: ns(start),
                end_ns: ns(start + wall),
                hist: Some(serialised(lat)),
                stonewall: None,
            }],
        );
        // As rank 0 receives it.
        RankResult::from_bytes(&serde_json::to_vec(&sent).unwrap()).unwrap()
    }

    /// Metric `name` of the cluster's phase `phase`.
    fn metric(s: &RawSample, phase: &str, name: &str) -> f64 {
        rank_metric(s, phase, None, name)
    }

    /// Metric `name` of `rank`'s own row of `phase` (`None`: the cluster's).
    fn rank_metric(s: &RawSample, phase: &str, rank: Option<u32>, name: &str) -> f64 {
        let p = s.phases.iter().find(|p| p.phase == phase && p.rank == rank).unwrap();
        p.metrics.iter().find(|(m, _)| m.name == name).unwrap().1
    }

    #[test]
    fn cluster_figures_come_from_every_rank_on_one_timeline() {
        // Two ranks; rank 1's clock runs 5 s ahead, which its offset corrects.
        let a = recorder((1..=1000).map(|i| i * 1000));
        let b = recorder((1..=3000).map(|i| i * 7000));
        let offsets = [
            ClockOffset::default(),
            ClockOffset {
                offset_ns: 5_000_000_000,
                rtt_ns: 10_000,
            },
        ];
        let results = [
            rank(0, 0.010, 2.0, 1000.0, &a, 0),
            rank(1, 0.020, 4.0, 750.0, &b, 5_000_000_000),
        ];
        let s = combine(&results, &offsets).unwrap();
        // A fixed-work phase (no series): the headline is all the work, 2000 + 3000
        // operations, over first start to last end, 0.010 ..= 4.020 (IOR's aggregate), not
        // the ranks' sum of 1750 ops/s, which assumes rank 1 ran at its average during
        // rank 0's 2 s and rank 0 during rank 1's 4 s.
        let headline = metric(&s, "p", "rate");
        assert!((headline - 5000.0 / 4.010).abs() < 1e-6, "{headline}");
        assert_eq!(metric(&s, "p", "rate_rank_sum"), 1750.0);
        assert_eq!(metric(&s, "p", "rate_fair_share"), headline);
        // Ranked once: the headline keeps the ranks' role and direction; the sum and the
        // fair share (the same figure here) are details.
        let id = |name: &str| {
            s.phases[0]
                .metrics
                .iter()
                .find(|(m, _)| m.name == name)
                .unwrap()
                .0
                .clone()
        };
        let detail = |name: &str| MetricId::higher(name, Unit::OpsPerSec).with_role(Role::Detail);
        assert_eq!(id("rate"), MetricId::higher("rate", Unit::OpsPerSec));
        assert_eq!(id("rate_rank_sum"), detail("rate_rank_sum"));
        assert_eq!(id("rate_fair_share"), detail("rate_fair_share"));
        assert_eq!(metric(&s, "p", "slowest_rank_s"), 4.0);
        assert_eq!(metric(&s, "p", "straggler_index"), 4.0 / 3.0);
        // The timeline: rank 1's start is 0.020 s after the sync on rank 0's clock.
        assert!((rank_metric(&s, "p", Some(1), "start_s") - 0.020).abs() < 1e-9);
        // Every rank's own row is the phase with its rank, after the cluster's.
        let rows: Vec<(&str, Option<u32>)> = s.phases.iter().map(|p| (p.phase.as_str(), p.rank)).collect();
        assert_eq!(rows, [("p", None), ("p", Some(0)), ("p", Some(1))]);
        // Percentiles of the merged histograms are those of all values recorded in one.
        let all = recorder((1..=1000).map(|i| i * 1000).chain((1..=3000).map(|i| i * 7000)));
        assert_eq!(metric(&s, "p", "lat_p99"), all.summary().p99_us);
        assert_eq!(metric(&s, "p", "lat_max"), all.summary().max_us);
        // ... and not the mean or maximum of the ranks' own p99.
        assert_ne!(
            metric(&s, "p", "lat_p99"),
            (a.summary().p99_us + b.summary().p99_us) / 2.0
        );
        assert_ne!(metric(&s, "p", "lat_p99"), b.summary().p99_us);
    }

    /// A detail row only some ranks wrote (`lat_sample_every`: only a rank whose run sampled)
    /// is the mean of the ranks that have it, never NaN (which the store refuses, ending the
    /// run: CI's four-rank small-file run did).
    #[test]
    fn a_detail_row_of_some_ranks_is_their_mean_not_nan() {
        let a = recorder([1000]);
        let mut results = [rank(0, 0.0, 1.0, 100.0, &a, 0), rank(1, 0.0, 1.0, 100.0, &a, 0)];
        if let Ok(s) = results[0].sample.as_mut() {
            s.phases[0].metrics.push((
                MetricId::lower("lat_sample_every", Unit::Count).with_role(Role::Detail),
                16.0,
            ));
        }
        let s = combine(&results, &[ClockOffset::default(), ClockOffset::default()]).unwrap();
        assert_eq!(metric(&s, "p", "lat_sample_every"), 16.0);
    }

    /// One rank throttled: the aggregate is measured from the per-second series over the window
    /// in which all ran, so it differs from the sum of the ranks' average rates by what the
    /// throttle predicts, computed here by hand.
    #[test]
    fn a_throttled_rank_counts_at_its_rate_inside_the_window_not_its_average() {
        let a = recorder([1000]);
        let with_series = |mut r: RankResult, ops: Vec<u64>| {
            if let Ok(s) = &mut r.sample {
                s.series = vec![crate::metric::ThroughputSeries {
                    phase: "p".into(),
                    rank: None,
                    ops,
                }];
            }
            r
        };
        // Rank 0: 100 ops/s from 0 to 4 s. Rank 1: from 1 to 5 s, throttled to 10 ops/s for its
        // first 2 s, then 100 ops/s: 220 operations, an average of 55 ops/s.
        let results = [
            with_series(rank(0, 0.0, 4.0, 100.0, &a, 0), vec![100, 100, 100, 100]),
            with_series(rank(1, 1.0, 4.0, 55.0, &a, 0), vec![10, 10, 100, 100]),
        ];
        let s = combine(&results, &[ClockOffset::default(); 2]).unwrap();
        // The window is 1..4 s: rank 0 did 300 operations in it, rank 1 its first three
        // seconds, 10 + 10 + 100 = 120; 420 over 3 s.
        let measured = metric(&s, "p", "rate");
        assert!((measured - 140.0).abs() < 1e-6, "{measured}");
        // The sum of the average rates assumes steady ranks: 155, 15 ops/s optimistic.
        assert_eq!(metric(&s, "p", "rate_rank_sum"), 155.0);
        // Unthrottled, both figures agree.
        let steady = [
            with_series(rank(0, 0.0, 4.0, 100.0, &a, 0), vec![100, 100, 100, 100]),
            with_series(rank(1, 1.0, 4.0, 55.0, &a, 0), vec![55, 55, 55, 55]),
        ];
        let s = combine(&steady, &[ClockOffset::default(); 2]).unwrap();
        assert!((metric(&s, "p", "rate") - 155.0).abs() < 1e-6);
        // A partial last second spreads its operations over its own length: rank 1 stops at
        // 3.5 s having done 50 operations in its last half second.
        let partial = [
            with_series(rank(0, 0.0, 4.0, 100.0, &a, 0), vec![100, 100, 100, 100]),
            with_series(rank(1, 1.0, 2.5, 100.0, &a, 0), vec![100, 100, 50]),
        ];
        let s = combine(&partial, &[ClockOffset::default(); 2]).unwrap();
        // Window 1..3.5 s: rank 0 250, rank 1 all 250; 500 over 2.5 s.
        assert!(
            (metric(&s, "p", "rate") - 200.0).abs() < 1e-6,
            "{}",
            metric(&s, "p", "rate")
        );
    }

    #[test]
    fn wear_out_after_the_stonewall_falls_outside_the_window() {
        let a = recorder([1000]);
        let worn = |mut r: RankResult, ops: Vec<u64>, before: u64, after: u64| {
            if let Ok(s) = &mut r.sample {
                s.series = vec![crate::metric::ThroughputSeries {
                    phase: "p".into(),
                    rank: None,
                    ops,
                }];
            }
            r.phases[0].stonewall = Some(StonewallStats {
                ops_before: before,
                ops_after: after,
                agreed: 200,
            });
            r
        };
        // Stonewall at 2 s. Rank 0: 200 operations by then, then it waits 50 ms for rank 1 to
        // agree, and ends. Rank 1: 10 ops/s to its stonewall, then 180 operations of wear-out
        // in a second, counted in its last second (the pool's series) however long it lasted.
        let results = [
            worn(rank(0, 0.0, 2.05, 200.0 / 2.05, &a, 0), vec![100, 100, 0], 200, 0),
            worn(rank(1, 0.0, 3.0, 200.0 / 3.0, &a, 0), vec![10, 10, 180], 20, 180),
        ];
        let s = combine(&results, &[ClockOffset::default(); 2]).unwrap();
        // Window 0..2.05 s: 200 + 20 operations, none of the wear-out (spread over rank 1's
        // third second it would add 9).
        let measured = metric(&s, "p", "rate");
        assert!((measured - 220.0 / 2.05).abs() < 1e-6, "{measured}");
        let sum = metric(&s, "p", "rate_rank_sum");
        assert!((sum - (200.0 / 2.05 + 200.0 / 3.0)).abs() < 1e-6, "{sum}");
    }

    /// The cluster's window histograms are the ranks' added window by window on rank 0's
    /// timeline, so its percentiles are those of every operation of the window, not the mean
    /// of the ranks' percentiles; every rank's own windows are kept with its rank.
    #[test]
    fn cluster_windows_add_the_ranks_bins_window_by_window_on_one_timeline() {
        let a = recorder([1000]);
        let with_windows = |mut r: RankResult, bins: Vec<Vec<(u64, u64)>>| {
            if let Ok(s) = &mut r.sample {
                s.windows = vec![LatencyWindows {
                    phase: "p".into(),
                    rank: None,
                    window_ms: 1000,
                    bins,
                }];
            }
            r
        };
        let quiet = vec![(1_000, 100)];
        let spiky = vec![(1_000, 98), (50_000, 2)];
        // Rank 0 runs 0..4 s; rank 1 (its clock 5 s ahead, corrected) 2..6 s: its window 0 is
        // the cluster's window 2.
        let offsets = [
            ClockOffset::default(),
            ClockOffset {
                offset_ns: 5_000_000_000,
                rtt_ns: 10_000,
            },
        ];
        let zero = vec![quiet.clone(), quiet.clone(), spiky.clone(), quiet.clone()];
        let one = vec![quiet.clone(), vec![(3_000, 10)]];
        let results = [
            with_windows(rank(0, 0.0, 4.0, 100.0, &a, 0), zero.clone()),
            with_windows(rank(1, 2.0, 4.0, 100.0, &a, 5_000_000_000), one.clone()),
        ];
        let s = combine(&results, &offsets).unwrap();
        let rows: Vec<Option<u32>> = s.windows.iter().map(|w| w.rank).collect();
        assert_eq!(rows, [None, Some(0), Some(1)]);
        assert_eq!((s.windows[1].bins.clone(), s.windows[2].bins.clone()), (zero, one));
        let cluster = &s.windows[0];
        assert_eq!((cluster.phase.as_str(), cluster.window_ms), ("p", 1000));
        assert_eq!(
            cluster.bins,
            [
                quiet.clone(),
                quiet.clone(),
                vec![(1_000, 198), (50_000, 2)],
                vec![(1_000, 100), (3_000, 10)]
            ]
        );
        // Window 2: p99 of the 200 operations is 1 µs; the ranks' own p99 are 50 µs and 1 µs,
        // whose mean (25.5 µs) no operation of the window had.
        let p99 = |b: &[(u64, u64)]| crate::metric::bins_quantile(b, 0.99).unwrap();
        assert_eq!(p99(&cluster.bins[2]), 1_000);
        assert_eq!((p99(&spiky), p99(&quiet)), (50_000, 1_000));
        assert_ne!(p99(&cluster.bins[2]), (p99(&spiky) + p99(&quiet)) / 2);
        assert_eq!(crate::metric::bins_quantile(&cluster.bins[2], 1.0), Some(50_000));

        // No rank stored a whole-phase histogram here: the cluster has none either.
        assert!(s.histograms.is_empty());

        // A rank without windows: no cluster windows (they would leave its operations out),
        // the other rank's own are kept.
        let results = [
            with_windows(rank(0, 0.0, 4.0, 100.0, &a, 0), vec![quiet.clone()]),
            rank(1, 0.0, 4.0, 100.0, &a, 0),
        ];
        let s = combine(&results, &[ClockOffset::default(); 2]).unwrap();
        let rows: Vec<Option<u32>> = s.windows.iter().map(|w| w.rank).collect();
        assert_eq!(rows, [Some(0)]);
    }

    /// The cluster's stored histogram of a phase is the ranks' added bucket by bucket, and only
    /// when every rank stored one.
    #[test]
    fn the_cluster_histogram_adds_every_ranks_bins() {
        let a = recorder([1000]);
        let with_hist = |mut r: RankResult, bins: Vec<(u64, u64)>| {
            if let Ok(s) = &mut r.sample {
                s.histograms = vec![LatencyHistogram {
                    phase: "p".into(),
                    bins,
                }];
            }
            r
        };
        let results = [
            with_hist(rank(0, 0.0, 1.0, 10.0, &a, 0), vec![(1_000, 98), (50_000, 2)]),
            with_hist(rank(1, 0.0, 1.0, 10.0, &a, 0), vec![(1_000, 100), (2_000, 1)]),
        ];
        let s = combine(&results, &[ClockOffset::default(); 2]).unwrap();
        assert_eq!(
            s.histograms,
            [LatencyHistogram {
                phase: "p".into(),
                bins: vec![(1_000, 198), (2_000, 1), (50_000, 2)]
            }]
        );
        let results = [
            with_hist(rank(0, 0.0, 1.0, 10.0, &a, 0), vec![(1_000, 98)]),
            rank(1, 0.0, 1.0, 10.0, &a, 0),
        ];
        assert!(combine(&results, &[ClockOffset::default(); 2])
            .unwrap()
            .histograms
            .is_empty());
    }

    /// A phase of several passes (`Phases::run_passes`) begins once per pass but is one phase on
    /// the timeline: it keeps its first sync, and a repeat that failed mid-phase leaves nothing
    /// for the next one.
    /// The tests that use the process-wide phase log, one at a time.
    static LOG_TESTS: Mutex<()> = Mutex::new(());

    #[test]
    fn a_phase_begun_again_for_its_next_pass_keeps_its_first_sync() {
        let _one = LOG_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let flag = AtomicBool::new(false);
        take_log();
        RankSync.begin("p", &flag);
        let first = LOG.lock().unwrap().pending.sync_in_ns;
        std::thread::sleep(Duration::from_millis(5));
        RankSync.begin("p", &flag);
        RankSync.recorded("p", Duration::from_millis(1));
        let log = take_log();
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].sync_in_ns, first);
        // Begun, never recorded: gone with the repeat's log.
        RankSync.begin("q", &flag);
        take_log();
        assert_eq!(LOG.lock().unwrap().pending.phase, "");
    }

    #[test]
    fn one_rank_runs_its_phases_with_the_engines_solo_synchroniser() {
        // A unit test is one rank: the runner gets `Solo`, which keeps the rank's own
        // directory (`RankSync` would share the slot's, the parent) and logs nothing.
        let _one = LOG_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        take_log();
        let sync = phase_sync();
        let dir = std::path::Path::new("/x/rank-0");
        assert_eq!(sync.shared_dir(dir), (dir.to_path_buf(), true));
        sync.recorded("p", Duration::from_secs(1));
        assert!(take_log().is_empty());
        // The many-rank form shares the slot's directory, prepared by rank 0.
        assert_eq!(RankSync.shared_dir(dir), (PathBuf::from("/x"), true));
    }

    #[test]
    fn ranks_that_never_ran_together_have_no_window_aggregate_and_a_failed_rank_fails_the_repeat() {
        let a = recorder([1000]);
        let timed = |mut r: RankResult| {
            if let Ok(s) = &mut r.sample {
                s.series = vec![crate::metric::ThroughputSeries {
                    phase: "p".into(),
                    rank: None,
                    ops: vec![10],
                }];
            }
            r
        };
        // Time-based: no moment with both ranks running, no aggregate over one.
        let results = [
            timed(rank(0, 0.0, 1.0, 10.0, &a, 0)),
            timed(rank(1, 2.0, 1.0, 10.0, &a, 0)),
        ];
        let s = combine(&results, &[ClockOffset::default(); 2]).unwrap();
        let names: Vec<&str> = s.phases[0].metrics.iter().map(|(m, _)| m.name.as_str()).collect();
        assert!(!names.contains(&"rate"), "{names:?}");
        assert_eq!(metric(&s, "p", "rate_fair_share"), 20.0 / 3.0);
        // Fixed work needs no common window: all the work over first start to last end.
        let results = [rank(0, 0.0, 1.0, 10.0, &a, 0), rank(1, 2.0, 1.0, 10.0, &a, 0)];
        let s = combine(&results, &[ClockOffset::default(); 2]).unwrap();
        assert_eq!(metric(&s, "p", "rate"), 20.0 / 3.0);
        assert_eq!(metric(&s, "p", "rate_rank_sum"), 20.0);

        let mut results = [rank(0, 0.0, 1.0, 10.0, &a, 0), rank(1, 0.0, 1.0, 10.0, &a, 0)];
        results[1].sample = Err("ENOSPC".into());
        assert_eq!(
            combine(&results, &[ClockOffset::default(); 2]).unwrap_err().to_string(),
            "rank 1: ENOSPC"
        );
    }
}
