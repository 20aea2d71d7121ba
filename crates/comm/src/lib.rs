//! The ranks of a run: [`Comm`], the few collective operations a many-process run needs (rank,
//! size, barrier, gather to rank 0, broadcast from rank 0, clock offsets), behind one small trait.
//!
//! The runner is given a [`cluster::Cluster`], chosen at the edge: a plain `fsbench run` is
//! [`cluster::Solo`], which calls the engine directly and reads none of the process-wide state
//! below; under `mpirun` it is [`cluster::Mpi`], whose communicator is `mpi::Mpi` in a binary
//! built with `--features mpi` (Open MPI through the `mpi` crate, rsmpi). [`world`] is the
//! process's one communicator, chosen once, reached only through [`cluster::Mpi`].
//!
//! Invariants:
//! - No collective can hang a run: every wait polls a non-blocking MPI request and gives up when
//!   the run is interrupted or the watchdog ([`watchdog`], `FSBENCH_MPI_WATCHDOG` seconds,
//!   default 600, or for the syncs of a repeat three times the longest stretch a rank worked
//!   between two of them) expires; the first such failure is kept ([`failure`]) and the run's interrupt
//!   flag is raised so the runner stops and tears down as after Ctrl-C, then exits 1.
//! - Timestamps exchanged between ranks are CLOCK_MONOTONIC nanoseconds of the rank that took
//!   them ([`now_ns`]); [`Comm::clock_offsets`] maps them onto rank 0's clock.
//! - Collectives are called from the thread that runs the slot loop only.
//!
//! References: MPI 3.1 §5.12 (non-blocking collectives); IOR's fair-share ("stonewall") figures.

// The lower crates' modules this crate uses, by their names in the layer map
// (doc/architecture.md), so a path reads `crate::units::Bytes` in every crate.
use fsbench_core::fstype;
use fsbench_core::metric;
use fsbench_core::signal;
use fsbench_core::sysinfo;
use fsbench_engine as engine;
use fsbench_report as report;
use fsbench_store as store;
use fsbench_suites::plan;

pub mod cluster;
pub mod fingerprint;
pub mod launch;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod ranks;
pub mod section;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Why a collective operation failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CommError {
    /// A rank did not arrive in time: it died, hangs, or runs far slower than the others.
    #[error("rank(s) did not reach {what} within the {secs} s watchdog (a rank died or hangs); the phase is invalid and the run stopped (FSBENCH_MPI_WATCHDOG sets the limit)")]
    Watchdog {
        /// The step that did not complete.
        what: String,
        /// The watchdog, in seconds.
        secs: u64,
    },
    /// The run was interrupted while waiting.
    #[error("interrupted while waiting for the other ranks at {0}")]
    Interrupted(String),
    /// The ranks disagree (version, suite) or a message was malformed.
    #[error("{0}")]
    Mismatch(String),
    /// MPI itself reported an error.
    #[error("MPI: {0}")]
    Mpi(String),
    /// mpirun is ending the job (it signalled this rank: another rank died or left early).
    #[error("mpirun is ending the job (another rank died or left early; mpirun names it) at {0}")]
    Aborted(String),
}

/// The collective operations of a run's ranks. Rank 0 is the leader: it provisions, stores and
/// reports.
pub trait Comm: Send + Sync {
    /// This process's rank, 0-based.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Waits until every rank arrived, at most `watchdog`, or until `stop` says so.
    fn barrier(&self, what: &str, watchdog: Duration, stop: &Stop) -> Result<(), CommError>;
    /// Gathers every rank's `mine` at rank 0 (in rank order); other ranks get an empty vector.
    fn gather(&self, what: &str, mine: &[u8], watchdog: Duration, stop: &Stop) -> Result<Vec<Vec<u8>>, CommError>;
    /// Rank 0's `buf` replaces every other rank's.
    fn broadcast(&self, what: &str, buf: &mut Vec<u8>, watchdog: Duration, stop: &Stop) -> Result<(), CommError>;
    /// The largest of every rank's `mine`, at every rank (a non-blocking all-reduce, MPI_MAX):
    /// the count the ranks agree on at a wear-out stonewall.
    fn all_max(&self, what: &str, mine: u64, watchdog: Duration, stop: &Stop) -> Result<u64, CommError>;
    /// Offset of every rank's CLOCK_MONOTONIC against rank 0's, in nanoseconds (rank's clock −
    /// rank 0's clock), from ping-pongs keeping the one with the smallest round trip; meaningful
    /// at rank 0 (other ranks get zeros), with the smallest round trip of each rank.
    fn clock_offsets(&self) -> Result<Vec<ClockOffset>, CommError>;
    /// Ends the communicator cleanly (MPI_Finalize); only after a run in which every rank
    /// finished every collective. It first waits for every rank in a barrier that SIGINT/SIGTERM
    /// ends (then without MPI_Finalize), so a rank that left early never holds the others.
    fn finish(&self) {}
}

/// When a wait gives up besides the watchdog.
#[derive(Clone, Copy)]
pub struct Stop<'a> {
    /// The run's interrupt flag (SIGINT/SIGTERM, or a failure of the ranks).
    pub interrupt: &'a AtomicBool,
    /// `None`: an interrupt ends the wait at once. `Some(g)`: the wait goes on for at most `g`
    /// after the interrupt (the end of a repeat, which every live rank reaches quickly once it
    /// is interrupted too; a rank that does not within `g` is dead).
    pub grace: Option<Duration>,
}

impl<'a> Stop<'a> {
    /// An interrupt ends the wait at once.
    pub fn now(interrupt: &'a AtomicBool) -> Stop<'a> {
        Stop { interrupt, grace: None }
    }

    /// An interrupt leaves [`GRACE`] to finish.
    pub fn graceful(interrupt: &'a AtomicBool) -> Stop<'a> {
        Stop {
            interrupt,
            grace: Some(GRACE),
        }
    }
}

/// How long the end of a repeat waits for the other ranks after an interrupt (mpirun sends
/// every rank SIGTERM together; a rank not there by then is dead).
pub const GRACE: Duration = Duration::from_secs(5);

/// One rank's clock against rank 0's.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClockOffset {
    /// The rank's clock minus rank 0's, in nanoseconds.
    pub offset_ns: i64,
    /// The smallest round trip seen, in nanoseconds (the offset's uncertainty is half of it).
    pub rtt_ns: i64,
}

/// The one-process communicator: every collective returns at once.
pub struct Solo;

impl Comm for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn barrier(&self, _: &str, _: Duration, _: &Stop) -> Result<(), CommError> {
        Ok(())
    }
    fn gather(&self, _: &str, mine: &[u8], _: Duration, _: &Stop) -> Result<Vec<Vec<u8>>, CommError> {
        Ok(vec![mine.to_vec()])
    }
    fn broadcast(&self, _: &str, _: &mut Vec<u8>, _: Duration, _: &Stop) -> Result<(), CommError> {
        Ok(())
    }
    fn all_max(&self, _: &str, mine: u64, _: Duration, _: &Stop) -> Result<u64, CommError> {
        Ok(mine)
    }
    fn clock_offsets(&self) -> Result<Vec<ClockOffset>, CommError> {
        Ok(vec![ClockOffset::default()])
    }
}

static WORLD: OnceLock<Box<dyn Comm>> = OnceLock::new();
static FAILURE: Mutex<Option<CommError>> = Mutex::new(None);

/// Whether this process was started by `mpirun` (Open MPI's or a PMI launcher's environment).
pub fn launched_by_mpirun() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// Chooses the process's communicator: MPI when started by `mpirun` (and built with the `mpi`
/// feature), [`Solo`] otherwise. Started by `mpirun` without the feature is an error that says
/// how to build it. Call once, early ([`cluster::init`]); later calls return the same.
pub(crate) fn init() -> Result<&'static dyn Comm, CommError> {
    global_read();
    if let Some(w) = WORLD.get() {
        return Ok(w.as_ref());
    }
    let comm: Box<dyn Comm> = if launched_by_mpirun() {
        #[cfg(feature = "mpi")]
        {
            watch_mpirun_abort();
            Box::new(mpi::Mpi::init()?)
        }
        #[cfg(not(feature = "mpi"))]
        {
            return Err(CommError::Mpi(NO_MPI.into()));
        }
    } else {
        Box::new(Solo)
    };
    Ok(WORLD.get_or_init(|| comm).as_ref())
}

/// Set when mpirun began to end the job: when a rank dies or exits early, Open MPI's mpirun
/// (odls `kill_local_procs`) sends every other rank SIGCONT, then SIGTERM after
/// `odls_base_sigkill_timeout` seconds and SIGKILL after twice that. A rank that is not stopped
/// gets SIGCONT from nobody else, so it is the earliest word that the job is over: the rank
/// stops at once (the run's interrupt flag) and no wait lingers for peers ([`poll_until`]), which
/// leaves the whole timeout to tear down.
static ABORTING: OnceLock<std::sync::Arc<AtomicBool>> = OnceLock::new();

/// Under mpirun: SIGCONT raises the run's interrupt flag and [`ABORTING`].
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
fn watch_mpirun_abort() {
    let flag = ABORTING.get_or_init(|| std::sync::Arc::new(AtomicBool::new(false)));
    let _ = signal_hook::flag::register(signal_hook::consts::SIGCONT, flag.clone());
    let _ = signal_hook::flag::register(signal_hook::consts::SIGCONT, crate::signal::interrupt_flag().clone());
}

/// Whether mpirun began to end the job ([`ABORTING`]).
pub fn mpirun_aborting() -> bool {
    global_read();
    ABORTING.get().is_some_and(|f| f.load(Ordering::Relaxed))
}

/// What to do when this binary has no MPI.
pub const NO_MPI: &str = "this fsbench was built without MPI: install Open MPI (scripts/install.sh) and build with `cargo build --release --features mpi`";

/// Whether this binary can run under `mpirun`.
pub const HAS_MPI: bool = cfg!(feature = "mpi");

/// The process's communicator ([`Solo`] until [`init`] chose another).
pub(crate) fn world() -> &'static dyn Comm {
    global_read();
    WORLD.get_or_init(|| Box::new(Solo)).as_ref()
}

/// The watchdog of every collective wait: `FSBENCH_MPI_WATCHDOG` seconds, default 600.
pub fn watchdog() -> Duration {
    global_read();
    let secs = std::env::var("FSBENCH_MPI_WATCHDOG")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .unwrap_or(600.0);
    Duration::from_secs_f64(secs)
}

/// Keeps `e` as the run's failure (the first one wins) and raises `interrupt`, so the runner
/// stops and tears down; [`failure`] then turns the stop into an error.
pub fn fail(e: CommError, interrupt: &AtomicBool) {
    global_read();
    if let Ok(mut f) = FAILURE.lock() {
        f.get_or_insert(e);
    }
    interrupt.store(true, Ordering::Relaxed);
}

/// Adds `detail` (what the ranks reported) to the failure that stopped this run, if any.
pub fn explain(detail: &str) {
    global_read();
    if let Ok(mut f) = FAILURE.lock() {
        if let Some(e) = f.take() {
            *f = Some(CommError::Mismatch(format!("{e} ({detail})")));
        }
    }
}

/// The collective failure that stopped this run, if any: one a wait met, else mpirun ending
/// the job ([`mpirun_aborting`]) while this rank was busy with its own work.
pub(crate) fn failure() -> Option<CommError> {
    global_read();
    FAILURE
        .lock()
        .ok()
        .and_then(|f| f.clone())
        .or_else(|| mpirun_aborting().then(|| CommError::Aborted("this rank's own work".into())))
}

#[cfg(test)]
thread_local! {
    /// This thread's reads of the process-wide state above ([`global_read`]).
    static GLOBAL_READS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Marks a read of the process-wide state (communicator, failure, watchdog, mpirun's abort): in
/// tests, counted per thread, so a test shows a solo run makes none; nothing otherwise.
fn global_read() {
    #[cfg(test)]
    GLOBAL_READS.with(|n| n.set(n.get() + 1));
}

/// This thread's reads of the process-wide state so far.
#[cfg(test)]
fn global_reads() -> usize {
    GLOBAL_READS.with(|n| n.get())
}

/// This rank's CLOCK_MONOTONIC, in nanoseconds.
pub fn now_ns() -> i64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec * 1_000_000_000 + t.tv_nsec
}

/// Polls `done` every 200 µs (then every 2 ms after the first 10 ms) until it returns `true`,
/// `interrupt` is set or `watchdog` expired. The wait of every non-blocking collective.
pub fn poll_until(
    what: &str,
    watchdog: Duration,
    stop: &Stop,
    mut done: impl FnMut() -> Result<bool, CommError>,
) -> Result<(), CommError> {
    let t0 = std::time::Instant::now();
    let mut interrupted_at = None;
    loop {
        if done()? {
            return Ok(());
        }
        if mpirun_aborting() {
            return Err(CommError::Aborted(what.to_string()));
        }
        if stop.interrupt.load(Ordering::Relaxed) {
            match stop.grace {
                None => return Err(CommError::Interrupted(what.to_string())),
                Some(g) => {
                    if interrupted_at.get_or_insert_with(std::time::Instant::now).elapsed() > g {
                        return Err(CommError::Watchdog {
                            what: what.to_string(),
                            secs: g.as_secs(),
                        });
                    }
                }
            }
        }
        let waited = t0.elapsed();
        if waited > watchdog {
            return Err(CommError::Watchdog {
                what: what.to_string(),
                secs: watchdog.as_secs(),
            });
        }
        std::thread::sleep(if waited < Duration::from_millis(10) {
            Duration::from_micros(200)
        } else {
            Duration::from_millis(2)
        });
    }
}
