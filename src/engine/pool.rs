//! [`WorkerPool`]: runs N workers on N threads from a common start to a stop condition, and
//! merges what they measured.
//!
//! A worker is a value implementing [`Worker`] that owns all its state (file descriptors,
//! buffers, counters, positions); [`FnWorker`] adapts a closure. The pool gives each worker its
//! own [`LatencyRecorder`], releases all of them together from a start barrier, and runs this
//! hot loop on each thread:
//!
//! ```text
//! t0 = now()                              // right after the barrier
//! loop {
//!     if interrupted or another worker failed: stop
//!     worker.op()?                        // one operation, or "no work left"
//!     t1 = now(); latency.record(t1 - t0); t0 = t1; ops += 1
//!     if deadline passed (checked against t1, no extra clock read): stop
//! }
//! worker.end()?                           // still timed: e.g. fsync of what was written
//! ```
//!
//! Invariants of the hot loop: one clock read per operation (the end of one operation is the
//! start of the next; the clock is [`clock::best`]: the TSC where the kernel trusts it,
//! CLOCK_MONOTONIC otherwise), no allocation (the recorder is sized before the start), no shared
//! lock (the only shared state is two atomic flags, read with relaxed loads, written only when
//! something ends the run).
//!
//! A pool with a deadline (a time-based phase) also counts each worker's operations per elapsed
//! second ([`PoolRun::per_second`]): the counts array is sized from the deadline before the start
//! barrier (at most [`MAX_SECONDS`] entries; later seconds add to the last), and the hot loop
//! only compares the reading it already took with the next second's boundary and increments a
//! local counter, storing it when a boundary passes. Boundaries are the clock's `ticks_in`
//! (never early, at most 0.1 % late on the TSC). The counts sum to the operations exactly.
//!
//! The pool's wall time runs from the earliest worker start (barrier release) to the latest
//! worker end, as bonnie++ times its seeker processes (first start to last stop). A single
//! worker runs on the calling thread, without a barrier or a spawn.
//!
//! **Wear-out stonewalling** ([`WorkerPool::wear_out`], IOR's `-D` with
//! `-O stoneWallingWearOut=1`): at the deadline (the stonewall) every worker stops, and the
//! ranks of a many-rank run agree on the largest operation count any rank reached (a
//! non-blocking MPI reduction behind [`PhaseSync::stonewall_agree`], called from the calling
//! thread while the workers wait at a barrier); workers that stopped at the deadline then go on
//! until this rank has done that many operations, so every rank does the same work. Workers
//! that finished their own work before the deadline stay stopped. The timed region includes
//! the wait and the wear-out, as in IOR. With one rank the agreed count is this rank's own: no
//! extra work.

use crate::engine::clock::{self, Best, OpClock};
use crate::engine::latency::LatencyRecorder;
use crate::engine::openloop::{self, OpenPart, OpenStats, Rate};
use crate::engine::sync::{PhaseSync, Solo};
use crate::engine::windows::WindowCounts;
use crate::engine::EngineError;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// What one call of [`Worker::op`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// One operation was performed; the pool times and counts it.
    Op,
    /// The worker has no work left; nothing is counted for this call.
    Done,
}

/// One thread's work, owned by that thread for the whole run.
pub trait Worker: Send {
    /// What the worker hands back after the run (its own counters, buffers to reuse …).
    type Output: Send;

    /// Performs exactly one operation, or returns [`Step::Done`] when its work is complete.
    /// Must not allocate. An operation longer than a few milliseconds should poll the interrupt
    /// flag itself and return [`EngineError::Interrupted`].
    fn op(&mut self) -> Result<Step, EngineError>;

    /// Called once after the last operation, inside the timed region (for example the fsync
    /// that the phase counts). Not called when the run is interrupted or failed.
    fn end(&mut self) -> Result<(), EngineError> {
        Ok(())
    }

    /// Converts the worker into its output, after the timed region.
    fn finish(self) -> Self::Output;
}

/// Adapts a closure `FnMut() -> Result<Step, EngineError>` into a [`Worker`] with no output.
pub struct FnWorker<F>(pub F);

impl<F> Worker for FnWorker<F>
where
    F: FnMut() -> Result<Step, EngineError> + Send,
{
    type Output = ();

    #[inline]
    fn op(&mut self) -> Result<Step, EngineError> {
        (self.0)()
    }

    fn finish(self) {}
}

/// Why the workers stopped, when they stopped normally.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// Every worker finished its own work.
    Done,
    /// The deadline passed before at least one worker finished its work.
    Deadline,
}

/// Counters of one worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkerStats {
    /// Operations performed.
    pub ops: u64,
    /// From the worker's start (barrier release) to its end, including [`Worker::end`].
    pub wall: Duration,
}

/// What a pool run measured.
#[derive(Debug)]
pub struct PoolRun<O> {
    /// From barrier release (earliest worker start) to the last worker's end.
    pub wall: Duration,
    /// Operations of all workers.
    pub ops: u64,
    /// All workers' latencies merged.
    pub latency: LatencyRecorder,
    /// Per-worker counters, in worker order.
    pub workers: Vec<WorkerStats>,
    /// Per-worker outputs ([`Worker::finish`]), in worker order.
    pub outputs: Vec<O>,
    /// Why the run stopped.
    pub stop: StopReason,
    /// Operations of all workers per elapsed second since each worker's start (entry `i` is
    /// second `i`; the last entry is a partial second); empty for a pool without a deadline.
    pub per_second: Vec<u64>,
    /// With [`WorkerPool::wear_out`] and a deadline: what the stonewall did.
    pub stonewall: Option<StonewallStats>,
    /// Per elapsed second (as `per_second`): `(bucket ns, operations)` of every non-empty
    /// latency bucket ([`crate::metric::LatencyWindows`]); empty where the pool kept none.
    pub windows: Vec<Vec<(u64, u64)>>,
    /// With [`WorkerPool::open_loop`]: the rate asked for, the backlog and the service times
    /// (`latency` is then measured from each operation's intended start).
    pub open: Option<OpenStats>,
}

/// What wear-out stonewalling did on this rank (operation counts of all its workers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StonewallStats {
    /// Operations done before the stonewall (the deadline, or the end of the work if earlier).
    pub ops_before: u64,
    /// Operations done after it, wearing out to the agreed count.
    pub ops_after: u64,
    /// The count the ranks agreed on (the largest any rank reached at its stonewall).
    pub agreed: u64,
}

/// Longest per-second series a pool keeps (one hour); later seconds add to the last entry.
pub const MAX_SECONDS: usize = 3600;

impl<O> PoolRun<O> {
    /// Operations per second over the pool's wall time (0 for a zero wall time).
    pub fn ops_per_sec(&self) -> f64 {
        let s = self.wall.as_secs_f64();
        if s > 0.0 {
            self.ops as f64 / s
        } else {
            0.0
        }
    }
}

/// Runs workers from a start barrier to a stop condition; see the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkerPool {
    deadline: Option<Duration>,
    pin: bool,
    wear_out: bool,
    open: Option<Rate>,
}

/// The shared state of wear-out stonewalling (see the module documentation).
struct Wear {
    /// Every worker and the coordinator meet here at the stonewall, and again once the
    /// agreed count is known.
    arrive: Barrier,
    release: Barrier,
    /// Operations of all workers at the stonewall.
    before: AtomicU64,
    /// Operations this rank still has to do, and how many the workers claimed so far.
    extra: AtomicU64,
    claimed: AtomicU64,
    agreed: AtomicU64,
}

pub(crate) enum Exit {
    Interrupted,
    /// Another worker failed; its error is the one reported.
    Aborted,
    Failed(EngineError),
}

pub(crate) struct Finished<O> {
    pub start: Instant,
    pub end: Instant,
    pub ops: u64,
    pub latency: LatencyRecorder,
    pub output: O,
    pub deadline_hit: bool,
    pub per_second: Vec<u64>,
    pub ops_before: u64,
    /// Latency counts per second (empty where the loop keeps none).
    pub windows: WindowCounts,
    /// The open loop's share of this worker.
    pub open: Option<OpenPart>,
}

impl WorkerPool {
    /// A pool whose workers run until their own work is done (or an interrupt).
    pub fn new() -> WorkerPool {
        WorkerPool {
            deadline: None,
            pin: false,
            wear_out: false,
            open: None,
        }
    }

    /// Also stop each worker once `limit` has passed since the start (time-based phases).
    pub fn with_deadline(limit: Duration) -> WorkerPool {
        WorkerPool {
            deadline: Some(limit),
            pin: false,
            wear_out: false,
            open: None,
        }
    }

    /// With `pin`, worker `i` runs pinned to the `i`-th CPU this process may run on (modulo
    /// their number), as fio's `cpus_allowed` with `cpus_allowed_policy=split`. A single worker
    /// runs on the calling thread, whose affinity is restored after the run.
    pub fn pinned(self, pin: bool) -> WorkerPool {
        WorkerPool { pin, ..self }
    }

    /// With `Some(rate)` (and a deadline, which an open loop needs): an open loop at `rate`
    /// ([`crate::engine::openloop`]): every worker issues its operations at its intended start
    /// times and latency is measured from them. Wear-out stonewalling does not apply to it.
    pub fn open_loop(self, open: Option<Rate>) -> WorkerPool {
        WorkerPool { open, ..self }
    }

    /// With `wear_out` (and a deadline): wear-out stonewalling across the ranks of the run (see
    /// the module documentation).
    pub fn wear_out(self, wear_out: bool) -> WorkerPool {
        WorkerPool { wear_out, ..self }
    }

    /// Runs `workers`, one thread each, released together. Returns
    /// [`EngineError::Interrupted`] if `interrupt` was set during the run, the first worker
    /// error otherwise (the other workers stop at their next operation), or the measurements.
    /// An empty `workers` is an [`EngineError::Invalid`].
    /// A wear-out stonewall agrees with this process only ([`Solo`]).
    pub fn run<W: Worker>(&self, workers: Vec<W>, interrupt: &AtomicBool) -> Result<PoolRun<W::Output>, EngineError> {
        self.run_synced(workers, interrupt, &Solo)
    }

    /// [`WorkerPool::run`], agreeing on a wear-out stonewall's count through `sync` (called
    /// once, at the deadline, from the calling thread; never per operation).
    pub fn run_synced<W: Worker>(
        &self,
        workers: Vec<W>,
        interrupt: &AtomicBool,
        sync: &dyn PhaseSync,
    ) -> Result<PoolRun<W::Output>, EngineError> {
        match clock::best() {
            Best::Tsc(c) => self.run_with(c, workers, interrupt, sync),
            Best::Monotonic(c) => self.run_with(c, workers, interrupt, sync),
        }
    }

    /// [`WorkerPool::run`] with the hot loop reading `clock`.
    fn run_with<W: Worker, C: OpClock>(
        &self,
        clock: C,
        workers: Vec<W>,
        interrupt: &AtomicBool,
        sync: &dyn PhaseSync,
    ) -> Result<PoolRun<W::Output>, EngineError> {
        if workers.is_empty() {
            return Err(EngineError::Invalid("a worker pool needs at least one worker".into()));
        }
        if let Some(rate) = self.open {
            return self.run_open(rate, workers, interrupt);
        }
        let abort = AtomicBool::new(false);
        let deadline = self.deadline;
        let cpus = if self.pin {
            affinity::allowed().map_err(|e| EngineError::io("sched_getaffinity", e))?
        } else {
            Vec::new()
        };
        let cpu_of = |i: usize| (!cpus.is_empty()).then(|| cpus[i % cpus.len()]);
        let n = workers.len();
        let wear = (self.wear_out && deadline.is_some()).then(|| Wear {
            arrive: Barrier::new(n + 1),
            release: Barrier::new(n + 1),
            before: AtomicU64::new(0),
            extra: AtomicU64::new(0),
            claimed: AtomicU64::new(0),
            agreed: AtomicU64::new(0),
        });
        // The coordinator's side of the stonewall: the rank's operations → the agreed count.
        let coordinate = |w: &Wear| {
            w.arrive.wait();
            let before = w.before.load(Ordering::Relaxed);
            let agreed = sync.stonewall_agree(before, interrupt).max(before);
            w.agreed.store(agreed, Ordering::Relaxed);
            w.extra.store(agreed - before, Ordering::Relaxed);
            w.release.wait();
        };
        let results: Vec<Ended<W::Output>> = if workers.len() == 1 {
            let coordinated = wear.as_ref().map(|w| (w, &coordinate as &(dyn Fn(&Wear) + Sync)));
            self.run_alone(clock, workers, cpu_of(0), interrupt, &abort, coordinated)?
        } else {
            let barrier = Barrier::new(workers.len());
            let wear = wear.as_ref();
            std::thread::scope(|s| {
                let handles: Vec<_> = workers
                    .into_iter()
                    .enumerate()
                    .map(|(i, w)| {
                        let latency = LatencyRecorder::new();
                        let (barrier, abort) = (&barrier, &abort);
                        let cpu = cpu_of(i);
                        s.spawn(move || {
                            if let Some(cpu) = cpu {
                                if let Err(e) = affinity::pin(cpu) {
                                    // Still meet the others at the barrier, then fail.
                                    barrier.wait();
                                    abort.store(true, Ordering::Relaxed);
                                    if let Some(w) = wear {
                                        w.arrive.wait();
                                        w.release.wait();
                                    }
                                    return Err(Exit::Failed(EngineError::io("sched_setaffinity", e)));
                                }
                            }
                            let meet = |w: &Wear| {
                                w.arrive.wait();
                                w.release.wait();
                            };
                            run_one(
                                clock,
                                w,
                                latency,
                                Some(barrier),
                                deadline,
                                interrupt,
                                abort,
                                wear.map(|w| (w, &meet as &(dyn Fn(&Wear) + Sync))),
                            )
                        })
                    })
                    .collect();
                if let Some(w) = wear {
                    coordinate(w);
                }
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            abort.store(true, Ordering::Relaxed);
                            Err(Exit::Failed(EngineError::Invalid("a worker thread panicked".into())))
                        })
                    })
                    .collect()
            })
        };
        let agreed = wear.map(|w| w.agreed.load(Ordering::Relaxed));
        merge(results, interrupt, agreed, None)
    }

    /// The open loop at `rate`: one thread per worker (pinned with [`WorkerPool::pinned`]),
    /// released together, each on its own schedule until the deadline.
    fn run_open<W: Worker>(
        &self,
        rate: Rate,
        workers: Vec<W>,
        interrupt: &AtomicBool,
    ) -> Result<PoolRun<W::Output>, EngineError> {
        let Some(deadline) = self.deadline else {
            return Err(EngineError::Invalid("an open loop needs a time limit".into()));
        };
        if !(rate.per_s.is_finite() && rate.per_s > 0.0) {
            return Err(EngineError::Invalid(format!(
                "an open loop needs a rate above 0 (is {})",
                rate.per_s
            )));
        }
        let cpus = if self.pin {
            affinity::allowed().map_err(|e| EngineError::io("sched_getaffinity", e))?
        } else {
            Vec::new()
        };
        let n = workers.len();
        let abort = AtomicBool::new(false);
        let barrier = Barrier::new(n);
        let common = AtomicU64::new(0);
        let results: Vec<Ended<W::Output>> = std::thread::scope(|s| {
            let handles: Vec<_> = workers
                .into_iter()
                .enumerate()
                .map(|(i, w)| {
                    let (barrier, abort, common) = (&barrier, &abort, &common);
                    let cpu = (!cpus.is_empty()).then(|| cpus[i % cpus.len()]);
                    s.spawn(move || {
                        let pinned = cpu.map_or(Ok(()), affinity::pin);
                        if let Err(e) = pinned {
                            barrier.wait();
                            abort.store(true, Ordering::Relaxed);
                            return Err(Exit::Failed(EngineError::io("sched_setaffinity", e)));
                        }
                        openloop::run_one_open(w, rate, i, n, barrier, common, deadline, interrupt, abort)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        abort.store(true, Ordering::Relaxed);
                        Err(Exit::Failed(EngineError::Invalid("a worker thread panicked".into())))
                    })
                })
                .collect()
        });
        merge(results, interrupt, None, Some(rate))
    }

    /// [`WorkerPool::run_with`] of one worker: on the calling thread, pinned to `cpu` for the
    /// run only. With wear-out stonewalling (`wear`: the pool's shared state and the
    /// coordinator's side), the worker coordinates itself, between its two barriers (of two
    /// parties, run on one thread: the coordinator's waits are its own).
    fn run_alone<W: Worker, C: OpClock>(
        &self,
        clock: C,
        workers: Vec<W>,
        cpu: Option<usize>,
        interrupt: &AtomicBool,
        abort: &AtomicBool,
        wear: WearRef,
    ) -> Result<Vec<Ended<W::Output>>, EngineError> {
        let restore = match cpu {
            Some(cpu) => {
                let old = affinity::get().map_err(|e| EngineError::io("sched_getaffinity", e))?;
                affinity::pin(cpu).map_err(|e| EngineError::io("sched_setaffinity", e))?;
                Some(old)
            }
            None => None,
        };
        let r = workers
            .into_iter()
            .map(|w| {
                let solo = wear.map(|(shared, _)| Wear {
                    arrive: Barrier::new(1),
                    release: Barrier::new(1),
                    before: AtomicU64::new(0),
                    extra: AtomicU64::new(0),
                    claimed: AtomicU64::new(0),
                    agreed: AtomicU64::new(shared.agreed.load(Ordering::Relaxed)),
                });
                let r = run_one(
                    clock,
                    w,
                    LatencyRecorder::new(),
                    None,
                    self.deadline,
                    interrupt,
                    abort,
                    solo.as_ref().zip(wear).map(|(s, (_, coordinate))| (s, coordinate)),
                );
                if let (Some(s), Some((shared, _))) = (&solo, wear) {
                    shared.agreed.store(s.agreed.load(Ordering::Relaxed), Ordering::Relaxed);
                }
                r
            })
            .collect();
        if let Some(old) = restore {
            affinity::set(&old).map_err(|e| EngineError::io("sched_setaffinity", e))?;
        }
        Ok(r)
    }
}

fn merge<O>(
    results: Vec<Result<Finished<O>, Exit>>,
    interrupt: &AtomicBool,
    agreed: Option<u64>,
    open: Option<Rate>,
) -> Result<PoolRun<O>, EngineError> {
    let mut finished = Vec::with_capacity(results.len());
    let mut first_error = None;
    let mut interrupted = interrupt.load(Ordering::Relaxed);
    for r in results {
        match r {
            Ok(f) => finished.push(f),
            Err(Exit::Interrupted) => interrupted = true,
            Err(Exit::Aborted) => {}
            Err(Exit::Failed(EngineError::Interrupted)) => interrupted = true,
            Err(Exit::Failed(e)) => {
                if first_error.is_none() {
                    first_error = Some(e);
                }
            }
        }
    }
    if interrupted {
        return Err(EngineError::Interrupted);
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let start = finished.iter().map(|f| f.start).min();
    let end = finished.iter().map(|f| f.end).max();
    let wall = match (start, end) {
        (Some(s), Some(e)) => e.saturating_duration_since(s),
        _ => Duration::ZERO,
    };
    let mut latency = LatencyRecorder::new();
    let mut workers = Vec::with_capacity(finished.len());
    let mut outputs = Vec::with_capacity(finished.len());
    let mut ops = 0;
    let mut stop = StopReason::Done;
    let mut per_second: Vec<u64> = Vec::new();
    let open = open.map(|rate| OpenStats::merged(rate, finished.iter().filter_map(|f| f.open.as_ref())));
    let mut windows = WindowCounts::default();
    let stonewall = agreed.map(|agreed| StonewallStats {
        ops_before: finished.iter().map(|f| f.ops_before).sum(),
        ops_after: finished.iter().map(|f| f.ops - f.ops_before).sum(),
        agreed,
    });
    for f in finished {
        if per_second.len() < f.per_second.len() {
            per_second.resize(f.per_second.len(), 0);
        }
        for (total, n) in per_second.iter_mut().zip(&f.per_second) {
            *total += n;
        }
        latency.merge(&f.latency);
        windows.merge(&f.windows);
        ops += f.ops;
        if f.deadline_hit {
            stop = StopReason::Deadline;
        }
        workers.push(WorkerStats {
            ops: f.ops,
            wall: f.end.saturating_duration_since(f.start),
        });
        outputs.push(f.output);
    }
    Ok(PoolRun {
        wall,
        ops,
        latency,
        workers,
        outputs,
        stop,
        per_second,
        stonewall,
        windows: windows.bins(),
        open,
    })
}

/// CPU affinity of the calling thread (sched_getaffinity/sched_setaffinity with pid 0).
mod affinity {
    use std::io;

    /// The calling thread's CPU mask.
    pub fn get() -> io::Result<libc::cpu_set_t> {
        // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: the size passed is the size of `set`, which the kernel fills.
        let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        if rc == 0 {
            Ok(set)
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Sets the calling thread's CPU mask.
    pub fn set(set: &libc::cpu_set_t) -> io::Result<()> {
        // SAFETY: `set` is a valid cpu_set_t of the size passed.
        let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The CPUs the calling thread may run on, in increasing order.
    pub fn allowed() -> io::Result<Vec<usize>> {
        let set = get()?;
        let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: CPU_ISSET reads the set within its size (cpu < CPU_SETSIZE).
        Ok((0..max).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect())
    }

    /// Pins the calling thread to `cpu`.
    pub fn pin(cpu: usize) -> io::Result<()> {
        // SAFETY: as in `get`; CPU_SET writes within the set (cpu < CPU_SETSIZE, from `allowed`).
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe { libc::CPU_SET(cpu, &mut set) };
        self::set(&set)
    }
}

/// How one worker's run ended: what it did, or why it stopped.
type Ended<O> = Result<Finished<O>, Exit>;

/// The stonewall state of a worker and how it meets the others there.
type WearRef<'a> = Option<(&'a Wear, &'a (dyn Fn(&Wear) + Sync))>;

/// The per-thread hot loop; with `wear`, the stonewall (`meet` waits for the agreed count)
/// and the wear-out after it.
#[allow(clippy::too_many_arguments)]
fn run_one<W: Worker, C: OpClock>(
    clock: C,
    mut w: W,
    mut latency: LatencyRecorder,
    barrier: Option<&Barrier>,
    deadline: Option<Duration>,
    interrupt: &AtomicBool,
    abort: &AtomicBool,
    wear: WearRef,
) -> Result<Finished<W::Output>, Exit> {
    // Per-second counts of a time-based phase: sized now, before the start (seconds of the
    // deadline, one partial, one spare), never grown in the loop.
    let mut per_second: Vec<u64> = match deadline {
        Some(d) => vec![0; (d.as_secs() as usize + 2).min(MAX_SECONDS)],
        None => Vec::new(),
    };
    if let Some(b) = barrier {
        b.wait();
    }
    let start = Instant::now();
    let mut t0 = clock.now();
    let started = t0;
    let deadline_at =
        deadline.map(|d| t0.saturating_add(clock.ticks_in(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))));
    let mut ops: u64 = 0;
    let mut deadline_hit = false;
    // The second being counted, its operations so far, and the reading at which it ends
    // (never, without a series).
    let mut second: usize = 0;
    let mut in_second: u64 = 0;
    let mut second_ends = if per_second.is_empty() {
        u64::MAX
    } else {
        started.saturating_add(clock.ticks_in(1_000_000_000))
    };
    let mut first: Result<(), Exit> = loop {
        if interrupt.load(Ordering::Relaxed) {
            break Err(Exit::Interrupted);
        }
        if abort.load(Ordering::Relaxed) {
            break Err(Exit::Aborted);
        }
        match w.op() {
            Ok(Step::Op) => {}
            Ok(Step::Done) => break Ok(()),
            Err(e) => {
                abort.store(true, Ordering::Relaxed);
                break Err(Exit::Failed(e));
            }
        }
        let t1 = clock.now();
        latency.record_ns(clock.ns_between(t0, t1));
        t0 = t1;
        ops += 1;
        if t1 >= second_ends {
            // Rare (once a second): store the finished second, find the current one.
            per_second[second] += in_second;
            in_second = 0;
            let secs = clock.ns_between(started, t1) / 1_000_000_000;
            second = (secs as usize).max(second + 1).min(per_second.len() - 1);
            second_ends = started.saturating_add(clock.ticks_in((second as u64 + 1) * 1_000_000_000));
            if second == per_second.len() - 1 {
                second_ends = u64::MAX;
            }
        }
        in_second += 1;
        if let Some(d) = deadline_at {
            if t1 >= d {
                deadline_hit = true;
                break Ok(());
            }
        }
    };
    let ops_before = ops;
    if let Some((shared, meet)) = wear {
        // Every worker meets the stonewall, whatever ended its run, so none waits forever.
        shared.before.fetch_add(ops, Ordering::Relaxed);
        meet(shared);
        if first.is_ok() && deadline_hit {
            let (n, ended) = run_wear_out(clock, &mut w, &mut latency, shared, interrupt, abort);
            // Wear-out after the deadline: counted in the last second reached, so the series
            // still sums to `ops`.
            ops += n;
            in_second += n;
            first = ended;
        }
    }
    if let Some(last) = per_second.get_mut(second) {
        *last += in_second;
    }
    // Trailing seconds nobody reached are not part of the series.
    let reached = if ops == 0 { 0 } else { second + 1 };
    per_second.truncate(reached);
    first?;
    if let Err(e) = w.end() {
        abort.store(true, Ordering::Relaxed);
        return Err(Exit::Failed(e));
    }
    let end = Instant::now();
    Ok(Finished {
        start,
        end,
        ops,
        latency,
        output: w.finish(),
        deadline_hit,
        per_second,
        ops_before,
        windows: WindowCounts::default(),
        open: None,
    })
}

/// The wear-out after the stonewall: operations claimed from `shared.extra` until none is left,
/// timed like the main loop's. Returns how many it did and how it ended (`Ok` when the claims
/// ran out or the worker was done). Called once per worker, after the timed loop.
#[inline]
fn run_wear_out<W: Worker, C: OpClock>(
    clock: C,
    w: &mut W,
    latency: &mut LatencyRecorder,
    shared: &Wear,
    interrupt: &AtomicBool,
    abort: &AtomicBool,
) -> (u64, Result<(), Exit>) {
    let extra = shared.extra.load(Ordering::Relaxed);
    let mut ops: u64 = 0;
    let mut t0 = clock.now();
    while shared.claimed.fetch_add(1, Ordering::Relaxed) < extra {
        if interrupt.load(Ordering::Relaxed) {
            return (ops, Err(Exit::Interrupted));
        }
        if abort.load(Ordering::Relaxed) {
            return (ops, Err(Exit::Aborted));
        }
        match w.op() {
            Ok(Step::Op) => {}
            Ok(Step::Done) => break,
            Err(e) => {
                abort.store(true, Ordering::Relaxed);
                return (ops, Err(Exit::Failed(e)));
            }
        }
        let t1 = clock.now();
        latency.record_ns(clock.ns_between(t0, t1));
        t0 = t1;
        ops += 1;
    }
    (ops, Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts down `left` operations, each a short spin, and reports when it started.
    struct Countdown {
        left: u64,
        done: u64,
        first_op: Option<Instant>,
        ended: bool,
    }

    impl Countdown {
        fn new(n: u64) -> Self {
            Countdown {
                left: n,
                done: 0,
                first_op: None,
                ended: false,
            }
        }
    }

    impl Worker for Countdown {
        type Output = (u64, Option<Instant>, bool);
        fn op(&mut self) -> Result<Step, EngineError> {
            if self.left == 0 {
                return Ok(Step::Done);
            }
            self.first_op.get_or_insert_with(Instant::now);
            let t = Instant::now();
            while t.elapsed() < Duration::from_micros(20) {
                std::hint::spin_loop();
            }
            self.left -= 1;
            self.done += 1;
            Ok(Step::Op)
        }
        fn end(&mut self) -> Result<(), EngineError> {
            self.ended = true;
            Ok(())
        }
        fn finish(self) -> Self::Output {
            (self.done, self.first_op, self.ended)
        }
    }

    #[test]
    fn runs_every_worker_to_completion_and_merges() {
        let flag = AtomicBool::new(false);
        let workers = vec![Countdown::new(100), Countdown::new(250), Countdown::new(50)];
        let run = WorkerPool::new().run(workers, &flag).expect("pool run");
        assert_eq!(run.stop, StopReason::Done);
        assert_eq!(run.ops, 400);
        assert_eq!(run.latency.count(), 400);
        assert_eq!(run.workers.iter().map(|w| w.ops).collect::<Vec<_>>(), [100, 250, 50]);
        assert_eq!(run.outputs.iter().map(|o| o.0).collect::<Vec<_>>(), [100, 250, 50]);
        assert!(run.outputs.iter().all(|o| o.2), "end() runs for every worker");
        // Each op spins 20 µs, so the slowest worker alone needs ≥ 5 ms.
        assert!(run.wall >= Duration::from_millis(5), "{:?}", run.wall);
        assert!(run.workers.iter().all(|w| w.wall <= run.wall));
        assert!(run.latency.quantile_us(0.5) >= 20.0);
        assert!(run.ops_per_sec() > 0.0 && run.ops_per_sec().is_finite());
    }

    #[test]
    fn workers_are_released_together() {
        // Ordering, not timing (a shared 2-core machine can preempt any thread for any time):
        // each worker's first operation waits until the other has started its own. Workers
        // started one after the other, each running to completion before the next, would
        // never meet and fail after the 10 s limit; workers released by one barrier meet
        // at once.
        use std::sync::atomic::AtomicUsize;
        struct Meet<'a> {
            started: &'a AtomicUsize,
            left: u32,
            first: Option<Instant>,
        }
        impl Worker for Meet<'_> {
            type Output = Option<Instant>;
            fn op(&mut self) -> Result<Step, EngineError> {
                if self.left == 0 {
                    return Ok(Step::Done);
                }
                if self.first.is_none() {
                    self.first = Some(Instant::now());
                    self.started.fetch_add(1, Ordering::SeqCst);
                    let t = Instant::now();
                    while self.started.load(Ordering::SeqCst) < 2 {
                        assert!(t.elapsed() < Duration::from_secs(10), "the other worker never started");
                        std::thread::yield_now();
                    }
                }
                self.left -= 1;
                Ok(Step::Op)
            }
            fn finish(self) -> Self::Output {
                self.first
            }
        }
        let flag = AtomicBool::new(false);
        let started = AtomicUsize::new(0);
        let before = Instant::now();
        let meet = || Meet {
            started: &started,
            left: 5,
            first: None,
        };
        let run = WorkerPool::new().run(vec![meet(), meet()], &flag).expect("pool run");
        let after = Instant::now();
        assert_eq!(started.load(Ordering::SeqCst), 2);
        assert_eq!(run.ops, 10);
        // The pool's wall time spans every worker's (earliest start to latest end).
        assert!(run.workers.iter().all(|w| w.wall <= run.wall), "{:?}", run.workers);
        for first in run.outputs.iter().map(|o| o.expect("each worker ran")) {
            assert!(before <= first && first <= after);
        }
        assert!(run.wall <= after - before);
    }

    #[test]
    fn deadline_stops_endless_workers() {
        let flag = AtomicBool::new(false);
        let workers = vec![Countdown::new(u64::MAX), Countdown::new(u64::MAX)];
        let run = WorkerPool::with_deadline(Duration::from_millis(30))
            .run(workers, &flag)
            .expect("pool run");
        assert_eq!(run.stop, StopReason::Deadline);
        assert!(run.ops > 0);
        assert!(run.wall >= Duration::from_millis(30) && run.wall < Duration::from_secs(5));
    }

    #[test]
    fn a_deadline_pool_counts_operations_per_second_with_either_clock() {
        let flag = AtomicBool::new(false);
        let check = |run: PoolRun<(u64, Option<Instant>, bool)>| {
            // 2.3 s: seconds 0 and 1 full, second 2 partial; no trailing empty seconds.
            assert_eq!(run.per_second.len(), 3, "{:?}", run.per_second);
            assert_eq!(run.per_second.iter().sum::<u64>(), run.ops, "{:?}", run.per_second);
            // Each full second holds a real share of the operations (20 µs spins), and the
            // partial 0.3 s fewer than a full second. Loose bounds: the test shares two cores
            // with the rest of the suite, and a loaded second can lose half its operations.
            let full = run.ops as f64 / run.wall.as_secs_f64();
            for &n in &run.per_second[..2] {
                assert!((n as f64) > 0.25 * full && (n as f64) < 1.75 * full, "{n} of {full}/s");
            }
            let most = run.per_second[..2].iter().copied().max().unwrap_or(0);
            assert!(run.per_second[2] < most, "{:?}", run.per_second);
        };
        let pool = WorkerPool::with_deadline(Duration::from_millis(2300));
        let two = vec![Countdown::new(u64::MAX), Countdown::new(u64::MAX)];
        check(pool.run_with(clock::Monotonic, two, &flag, &Solo).expect("monotonic"));
        if let Best::Tsc(tsc) = clock::best() {
            check(
                pool.run_with(tsc, vec![Countdown::new(u64::MAX)], &flag, &Solo)
                    .expect("tsc"),
            );
        }
        // No deadline, no series.
        let run = WorkerPool::new().run(vec![Countdown::new(10)], &flag).expect("run");
        assert!(run.per_second.is_empty());
    }

    #[test]
    fn wear_out_alone_meets_its_own_stonewall_and_does_no_extra_work() {
        // One rank (this process): the agreed count is its own. One worker coordinates
        // itself, several meet the coordinator at the barriers; neither may hang.
        for n in [1, 3] {
            let flag = AtomicBool::new(false);
            let workers: Vec<Countdown> = (0..n).map(|_| Countdown::new(u64::MAX)).collect();
            let run = WorkerPool::with_deadline(Duration::from_millis(20))
                .wear_out(true)
                .run(workers, &flag)
                .expect("pool run");
            let wall = run.stonewall.expect("stonewall stats");
            assert_eq!(wall.ops_before, run.ops);
            assert_eq!(wall.agreed, run.ops);
            assert_eq!(wall.ops_after, 0);
        }
        // Workers done before the deadline meet the stonewall too, and wear-out needs a deadline.
        let flag = AtomicBool::new(false);
        let run = WorkerPool::with_deadline(Duration::from_secs(30))
            .wear_out(true)
            .run(vec![Countdown::new(5), Countdown::new(7)], &flag)
            .unwrap();
        assert_eq!(run.stonewall.unwrap().ops_before, 12);
        let run = WorkerPool::new()
            .wear_out(true)
            .run(vec![Countdown::new(5)], &flag)
            .unwrap();
        assert!(run.stonewall.is_none());
    }

    /// A rank behind the others: they agreed on 50 operations more than it did.
    struct Behind;

    impl PhaseSync for Behind {
        fn begin(&self, _phase: &str, _interrupt: &AtomicBool) {}
        fn pool_measured(&self, _latency: &LatencyRecorder, _stonewall: Option<StonewallStats>) {}
        fn recorded(&self, _phase: &str, _wall: Duration) {}
        fn stonewall_agree(&self, ops: u64, _interrupt: &AtomicBool) -> u64 {
            ops + 50
        }
        fn shared_dir(&self, dir: &std::path::Path) -> (std::path::PathBuf, bool) {
            (dir.to_path_buf(), true)
        }
        fn barrier(&self, _what: &str, _interrupt: &AtomicBool) -> Result<(), EngineError> {
            Ok(())
        }
    }

    #[test]
    fn a_rank_behind_wears_out_the_agreed_extra_operations_timed_and_counted() {
        for n in [1, 3] {
            let flag = AtomicBool::new(false);
            let workers: Vec<Countdown> = (0..n).map(|_| Countdown::new(u64::MAX)).collect();
            let run = WorkerPool::with_deadline(Duration::from_millis(20))
                .wear_out(true)
                .run_synced(workers, &flag, &Behind)
                .expect("pool run");
            let wall = run.stonewall.expect("stonewall stats");
            assert_eq!(wall.agreed, wall.ops_before + 50);
            assert_eq!(wall.ops_after, 50, "the workers share exactly the extra operations");
            assert_eq!(run.ops, wall.agreed);
            assert_eq!(run.latency.count(), run.ops, "every wear-out operation is timed");
            assert_eq!(run.per_second.iter().sum::<u64>(), run.ops, "{:?}", run.per_second);
        }
    }

    #[test]
    fn either_clock_times_operations_and_deadlines() {
        let flag = AtomicBool::new(false);
        let check = |run: PoolRun<(u64, Option<Instant>, bool)>| {
            assert_eq!(run.stop, StopReason::Deadline);
            assert!(run.wall >= Duration::from_millis(30) && run.wall < Duration::from_secs(5));
            // Each operation spins 20 µs: the recorded latencies are in nanoseconds.
            let p50 = run.latency.quantile_us(0.5);
            assert!((20.0..20_000.0).contains(&p50), "p50 {p50} µs");
            assert_eq!(run.latency.count(), run.ops);
        };
        let pool = WorkerPool::with_deadline(Duration::from_millis(30));
        check(
            pool.run_with(clock::Monotonic, vec![Countdown::new(u64::MAX)], &flag, &Solo)
                .expect("monotonic"),
        );
        if let Best::Tsc(tsc) = clock::best() {
            check(
                pool.run_with(tsc, vec![Countdown::new(u64::MAX)], &flag, &Solo)
                    .expect("tsc"),
            );
        }
    }

    #[test]
    fn interrupt_flag_ends_the_run() {
        let flag = AtomicBool::new(false);
        let started = Instant::now();
        let r = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(20));
                flag.store(true, Ordering::Relaxed);
            });
            WorkerPool::new().run(vec![Countdown::new(u64::MAX), Countdown::new(u64::MAX)], &flag)
        });
        assert!(matches!(r, Err(EngineError::Interrupted)), "{r:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn first_error_stops_the_others() {
        let flag = AtomicBool::new(false);
        // Both workers come from one closure expression, so they have one type.
        let make = |fails: bool| {
            let mut n = 0u32;
            FnWorker(move || {
                n += 1;
                if fails && n == 10 {
                    Err(EngineError::io(
                        "write /x",
                        std::io::Error::from_raw_os_error(libc::ENOSPC),
                    ))
                } else {
                    Ok(Step::Op)
                }
            })
        };
        let r = WorkerPool::new().run(vec![make(true), make(false)], &flag);
        match r {
            Err(EngineError::Io { what, source }) => {
                assert_eq!(what, "write /x");
                assert_eq!(source.raw_os_error(), Some(libc::ENOSPC));
            }
            other => panic!("expected the worker's error, got {other:?}"),
        }
    }

    #[test]
    fn single_worker_runs_inline_and_empty_pool_is_invalid() {
        let flag = AtomicBool::new(false);
        let me = std::thread::current().id();
        let mut calls = 0;
        let w = FnWorker(|| {
            assert_eq!(std::thread::current().id(), me);
            calls += 1;
            Ok(if calls <= 3 { Step::Op } else { Step::Done })
        });
        let run = WorkerPool::new().run(vec![w], &flag).expect("pool run");
        assert_eq!(run.ops, 3);
        let none: Vec<Countdown> = Vec::new();
        assert!(matches!(
            WorkerPool::new().run(none, &flag),
            Err(EngineError::Invalid(_))
        ));
    }
}
