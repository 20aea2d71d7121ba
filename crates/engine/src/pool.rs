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
//! With sampled latency ([`WorkerPool::sample_latency`], below) the loop is instead:
//!
//! ```text
//! left = gap()                            // random, mean every − 1
//! loop {
//!     if interrupted or another worker failed: stop
//!     if left > 0 { left -= 1; worker.op()?; ops += 1; continue }   // untimed
//!     t0 = now(); worker.op()?; t1 = now()  // a timed operation: its own two readings
//!     latency.record(t1 - t0); ops += 1; left = gap()
//!     per-second boundary, deadline: checked against t1
//! }
//! ```
//!
//! Invariants of the hot loop: at most one clock read per operation when every operation is
//! timed (the end of one operation is the start of the next; the clock is [`clock::best`]: the
//! TSC where the kernel trusts it, CLOCK_MONOTONIC otherwise), and when sampling none for an
//! untimed operation (a countdown and a test) and two for a timed one; no allocation (the
//! recorder, the per-second counts and Auto's calibration buffer are sized before the start);
//! no shared lock (the only shared state is two atomic flags, read with relaxed loads, written
//! only when something ends the run).
//!
//! **Sampled latency** ([`Sampling`], issue 29): timing an operation costs a clock read and a
//! histogram record, about 20–30 ns here, 2–3 % of a 1 µs `stat` on tmpfs. For operations
//! that short the pool can time one operation in N and count the rest: the phase's wall time
//! (the workers' `Instant` start and end), its operation count and its per-second series still
//! cover every operation; only the latency histogram is a sample. The timed operations are
//! chosen at random intervals, uniform in 1 ..= 2N − 1 operations (mean N; xorshift seeded per
//! worker, drawn only at a timed operation), not every N-th: a workload with a period (files
//! spread over N directories, every N-th name a new block) would otherwise always time the
//! same kind of operation. A timed operation reads the clock right before and after itself,
//! so its latency is the operation alone. [`Sampling::Auto`] times each worker's first
//! [`CALIBRATION_OPS`] operations (one reading each, into a buffer sized before the start),
//! then chooses N from their mean time and what timing one costs (two readings, a record and a
//! gap draw, measured before the first such pool's start barrier, fastest of 8 rounds of 256): [`auto_every`],
//! the smallest power of two keeping that cost at most [`AUTO_COST_SHARE`] (0.25 %: half the
//! 0.5 % aimed at, as the tight loop's cost is a lower bound) of the operations' time, at
//! most [`MAX_SAMPLE_EVERY`] and with N × the mean under [`MAX_SAMPLE_GAP_NS`]; N = 1 (every
//! operation timed) when operations are slow. The
//! calibration's latencies are then thinned by the same random gaps, so the first operations
//! weigh no more than the others; a run shorter than the calibration keeps them all.
//! [`PoolRun::sample_every`] is the largest N any worker used, `latency.count()` the number
//! timed. Because the clock is read only at timed operations, a deadline or a per-second
//! boundary is noticed at the first timed operation after it: late by at most 2N − 1
//! operations (under 2 × [`MAX_SAMPLE_GAP_NS`] at the mean time Auto calibrated), and the
//! operations of that stretch are counted in the second before the boundary (the series still
//! sums to the operations). The interrupt and abort flags are still polled at every operation.
//! What sampling keeps: every percentile lies within its sampling interval of the fully timed
//! one (the binomial order-statistic interval at the number timed; tested with a clock that
//! moves only by drawn latencies). What it loses: the maximum is the largest *sampled*
//! latency, and the far tail (p99.9) rests on fewer operations.
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
//! extra work. The wear-out is timed (or sampled) like the main loop.

use crate::clock::{self, Best, OpClock};
use crate::latency::LatencyRecorder;
use crate::openloop::{self, OpenPart, OpenStats, Rate};
use crate::sync::{PhaseSync, Solo};
use crate::windows::WindowCounts;
use crate::EngineError;
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
    /// What the worker hands back after the run (its own counters, buffers to reuse …; `()`
    /// for a worker with nothing to hand back).
    type Output: Send + Default;

    /// Performs exactly one operation, or returns [`Step::Done`] when its work is complete.
    /// Must not allocate. An operation longer than a few milliseconds should poll the interrupt
    /// flag itself and return [`EngineError::Interrupted`].
    fn op(&mut self) -> Result<Step, EngineError>;

    /// Called once after the last operation, inside the timed region (for example the fsync
    /// that the phase counts). Not called when the run is interrupted or failed.
    fn end(&mut self) -> Result<(), EngineError> {
        Ok(())
    }

    /// Converts the worker into its output, after the timed region (by default the output's
    /// default: nothing, for a worker whose output is `()`).
    fn finish(self) -> Self::Output
    where
        Self: Sized,
    {
        Self::Output::default()
    }
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
    /// One operation in this many was timed into `latency` (the largest interval any worker
    /// used; 1: every operation). `latency.count()` is the number timed.
    pub sample_every: u64,
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

    /// With an open loop: the share of each worker's time spent in its operations, the sum
    /// of the service times over (workers × the pool's wall time), 0–1 (the queueing
    /// utilisation ρ of [`crate::stall`]); `None` for a closed loop or a zero wall time.
    pub fn utilisation(&self) -> Option<f64> {
        let o = self.open.as_ref()?;
        let busy_s = o.service.mean_us() * o.service.count() as f64 / 1e6;
        let capacity_s = self.workers.len().max(1) as f64 * self.wall.as_secs_f64();
        (capacity_s > 0.0).then(|| busy_s / capacity_s)
    }
}

/// Runs workers from a start barrier to a stop condition; see the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkerPool {
    deadline: Option<Duration>,
    pin: bool,
    wear_out: bool,
    open: Option<Rate>,
    sampling: Sampling,
}

/// Which operations the hot loop times ([`WorkerPool::sample_latency`]; see "Sampled latency"
/// in the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sampling {
    /// Every operation: one clock read per operation.
    #[default]
    All,
    /// One operation in `n` on average, at random intervals (uniform in 1 ..= 2n − 1
    /// operations); `Every(0)` and `Every(1)` time every operation.
    Every(u32),
    /// Each worker times its first [`CALIBRATION_OPS`] operations, then samples one in the
    /// interval [`auto_every`] gives for their mean time (1 for slow operations: every one
    /// stays timed).
    Auto,
}

/// Operations each worker times, one clock read each, before [`Sampling::Auto`] chooses its
/// interval; they are kept in a buffer sized before the start and thinned like the rest.
pub const CALIBRATION_OPS: usize = 1024;

/// [`Sampling::Auto`] samples so that the instrument (two clock reads and a histogram record
/// per sampled operation, as measured in a tight loop) costs at most this share of the
/// operations' time: 0.25 %. The tight loop's figure is a lower bound (its histogram's cache
/// lines stay warm; between system calls they are cold), so half of the 0.5 % aimed at leaves
/// room for that.
pub const AUTO_COST_SHARE: f64 = 0.0025;

/// Largest interval [`Sampling::Auto`] chooses.
pub const MAX_SAMPLE_EVERY: u64 = 1024;

/// [`Sampling::Auto`] keeps its interval × the mean operation time under this (20 µs, ns), so
/// that a deadline or a per-second boundary, seen only at a timed operation, is late by at
/// most 2 × 20 µs at the calibrated operation time.
pub const MAX_SAMPLE_GAP_NS: f64 = 20_000.0;

/// The interval of [`Sampling::Auto`] for operations of `mean_ns` each (as timed in the
/// calibration) when timing one costs `cost_ns`: the smallest power of two `n` with
/// `cost_ns / n <= AUTO_COST_SHARE × mean_ns`, at most [`MAX_SAMPLE_EVERY`] and at most the
/// largest power of two with `n × mean_ns <= MAX_SAMPLE_GAP_NS`; 1 when timing every operation
/// already costs less than that share.
pub fn auto_every(cost_ns: f64, mean_ns: f64) -> u64 {
    let mean = mean_ns.max(1.0);
    let want = (cost_ns.max(0.0) / (AUTO_COST_SHARE * mean)).ceil().max(1.0);
    let want = (want.min(MAX_SAMPLE_EVERY as f64) as u64).next_power_of_two();
    let fit = (MAX_SAMPLE_GAP_NS / mean).floor().max(1.0).min(MAX_SAMPLE_EVERY as f64) as u64;
    // The largest power of two not above `fit`.
    let cap = 1u64 << (63 - fit.leading_zeros());
    want.min(cap).clamp(1, MAX_SAMPLE_EVERY)
}

/// One worker's sampling state: the interval in force and the random gaps between timed
/// operations (xorshift64*, seeded per worker so a run is reproducible).
#[derive(Clone, Copy, Debug)]
struct Sampler {
    /// One operation in `every` is timed (1: all).
    every: u64,
    /// Choose `every` from the first [`CALIBRATION_OPS`] operations.
    auto: bool,
    /// What timing one sampled operation costs (two clock reads, a record), ns; for `auto`.
    cost_ns: f64,
    rng: u64,
}

impl Sampler {
    fn new(sampling: Sampling, cost_ns: f64, worker: usize) -> Sampler {
        let (every, auto) = match sampling {
            Sampling::All => (1, false),
            Sampling::Every(n) => (u64::from(n.max(1)), false),
            Sampling::Auto => (1, true),
        };
        // SplitMix64 of the worker index: distinct, never-zero xorshift states.
        let mut z = (worker as u64).wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Sampler {
            every,
            auto,
            cost_ns,
            rng: z | 1,
        }
    }

    /// `true` when every operation is timed by the one-read-per-operation loop.
    fn times_all(&self) -> bool {
        self.every <= 1 && !self.auto
    }

    /// Operations to leave untimed before the next timed one: uniform in 0 ..= 2·every − 2
    /// (mean every − 1, so one in `every` is timed); 0 when every operation is timed.
    #[inline]
    fn gap(&mut self) -> u64 {
        if self.every <= 1 {
            return 0;
        }
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = u128::from(self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32);
        ((r * u128::from(2 * self.every - 1)) >> 32) as u64
    }
}

/// What timing one sampled operation costs with `clock`: two readings, their conversion, a
/// histogram record and a gap draw, in ns, the fastest of 8 rounds of 256 (a round the
/// scheduler interrupted does not count). Measured once per process and clock type (the
/// first [`Sampling::Auto`] pool's, before its start barrier, untimed), then remembered.
fn sample_cost_ns<C: OpClock>(clock: C) -> f64 {
    static COSTS: std::sync::Mutex<Vec<(&'static str, f64)>> = std::sync::Mutex::new(Vec::new());
    let kind = std::any::type_name::<C>();
    let mut costs = COSTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, cost)) = costs.iter().find(|(k, _)| *k == kind) {
        return cost;
    }
    let cost = measure_sample_cost_ns(clock);
    costs.push((kind, cost));
    cost
}

/// [`sample_cost_ns`], measured.
fn measure_sample_cost_ns<C: OpClock>(clock: C) -> f64 {
    let mut scratch = LatencyRecorder::new();
    let mut s = Sampler::new(Sampling::Every(16), 0.0, 0);
    let mut best = f64::INFINITY;
    for _ in 0..8 {
        let a = clock.now();
        for _ in 0..256 {
            let t0 = clock.now();
            let t1 = clock.now();
            scratch.record_ns(clock.ns_between(t0, t1));
            std::hint::black_box(s.gap());
        }
        let b = clock.now();
        best = best.min(clock.ns_between(a, b) as f64 / 256.0);
    }
    best
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
    pub output: O,
    /// What the worker's loop counted.
    pub counted: Counted,
}

impl WorkerPool {
    /// A pool whose workers run until their own work is done (or an interrupt).
    pub fn new() -> WorkerPool {
        WorkerPool {
            deadline: None,
            pin: false,
            wear_out: false,
            open: None,
            sampling: Sampling::All,
        }
    }

    /// Also stop each worker once `limit` has passed since the start (time-based phases).
    pub fn with_deadline(limit: Duration) -> WorkerPool {
        WorkerPool {
            deadline: Some(limit),
            pin: false,
            wear_out: false,
            open: None,
            sampling: Sampling::All,
        }
    }

    /// With `pin`, worker `i` runs pinned to the `i`-th CPU this process may run on (modulo
    /// their number), as fio's `cpus_allowed` with `cpus_allowed_policy=split`. A single worker
    /// runs on the calling thread, whose affinity is restored after the run.
    pub fn pinned(self, pin: bool) -> WorkerPool {
        WorkerPool { pin, ..self }
    }

    /// With `Some(rate)` (and a deadline, which an open loop needs): an open loop at `rate`
    /// ([`crate::openloop`]): every worker issues its operations at its intended start
    /// times and latency is measured from them. Wear-out stonewalling does not apply to it.
    pub fn open_loop(self, open: Option<Rate>) -> WorkerPool {
        WorkerPool { open, ..self }
    }

    /// With `wear_out` (and a deadline): wear-out stonewalling across the ranks of the run (see
    /// the module documentation).
    pub fn wear_out(self, wear_out: bool) -> WorkerPool {
        WorkerPool { wear_out, ..self }
    }

    /// Which operations the workers time (default [`Sampling::All`]); see "Sampled latency" in
    /// the module documentation. The pool's wall time, operation count and per-second series
    /// count every operation either way.
    pub fn sample_latency(self, sampling: Sampling) -> WorkerPool {
        WorkerPool { sampling, ..self }
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
        let cost = if self.sampling == Sampling::Auto {
            sample_cost_ns(clock)
        } else {
            0.0
        };
        let sampler = |i: usize| Sampler::new(self.sampling, cost, i);
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
            self.run_alone(clock, workers, sampler(0), cpu_of(0), interrupt, &abort, coordinated)?
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
                        let sampler = sampler(i);
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
                                sampler,
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
                join_all(handles, &abort)
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
            join_all(handles, &abort)
        });
        merge(results, interrupt, None, Some(rate))
    }

    /// [`WorkerPool::run_with`] of one worker: on the calling thread, pinned to `cpu` for the
    /// run only. With wear-out stonewalling (`wear`: the pool's shared state and the
    /// coordinator's side), the worker coordinates itself, between its two barriers (of two
    /// parties, run on one thread: the coordinator's waits are its own).
    #[allow(clippy::too_many_arguments)]
    fn run_alone<W: Worker, C: OpClock>(
        &self,
        clock: C,
        workers: Vec<W>,
        sampler: Sampler,
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
                    sampler,
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
    // The first worker's recorder takes the others' (no fresh 270 KiB recorder to fill and
    // add into: this runs inside the phase's CPU meter).
    let mut latency: Option<LatencyRecorder> = None;
    let mut workers = Vec::with_capacity(finished.len());
    let mut outputs = Vec::with_capacity(finished.len());
    let mut ops = 0;
    let mut stop = StopReason::Done;
    let mut per_second: Vec<u64> = Vec::new();
    let open = open.map(|rate| OpenStats::merged(rate, finished.iter().filter_map(|f| f.counted.open.as_ref())));
    let mut windows = WindowCounts::default();
    let sample_every = finished.iter().map(|f| f.counted.sample_every).max().unwrap_or(1);
    let stonewall = agreed.map(|agreed| StonewallStats {
        ops_before: finished.iter().map(|f| f.counted.ops_before).sum(),
        ops_after: finished.iter().map(|f| f.counted.ops - f.counted.ops_before).sum(),
        agreed,
    });
    for f in finished {
        if per_second.len() < f.counted.per_second.len() {
            per_second.resize(f.counted.per_second.len(), 0);
        }
        for (total, n) in per_second.iter_mut().zip(&f.counted.per_second) {
            *total += n;
        }
        match &mut latency {
            Some(l) => l.merge(&f.counted.latency),
            None => latency = Some(f.counted.latency),
        }
        windows.merge(&f.counted.windows);
        ops += f.counted.ops;
        if f.counted.deadline_hit {
            stop = StopReason::Deadline;
        }
        workers.push(WorkerStats {
            ops: f.counted.ops,
            wall: f.end.saturating_duration_since(f.start),
        });
        outputs.push(f.output);
    }
    Ok(PoolRun {
        wall,
        ops,
        latency: latency.unwrap_or_default(),
        workers,
        outputs,
        stop,
        per_second,
        stonewall,
        windows: windows.bins(),
        open,
        sample_every,
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

/// Every worker thread's end, in order; a thread that panicked is a failure (and stops the
/// others).
fn join_all<O>(handles: Vec<std::thread::ScopedJoinHandle<'_, Ended<O>>>, abort: &AtomicBool) -> Vec<Ended<O>> {
    handles
        .into_iter()
        .map(|h| {
            h.join().unwrap_or_else(|_| {
                abort.store(true, Ordering::Relaxed);
                Err(Exit::Failed(EngineError::Invalid("a worker thread panicked".into())))
            })
        })
        .collect()
}

/// Why a worker must stop before its next operation: an interrupt, or another worker's failure.
#[inline(always)]
pub(crate) fn stopped(interrupt: &AtomicBool, abort: &AtomicBool) -> Option<Exit> {
    if interrupt.load(Ordering::Relaxed) {
        return Some(Exit::Interrupted);
    }
    abort.load(Ordering::Relaxed).then_some(Exit::Aborted)
}

/// One operation of `w`: `None` when it was done, `Some(end)` when the loop ends — the worker
/// has no work left (`Ok`), or it failed (the error; the other workers are told to stop).
#[inline(always)]
pub(crate) fn call<W: Worker>(w: &mut W, abort: &AtomicBool) -> Option<Result<(), Exit>> {
    match w.op() {
        Ok(Step::Op) => None,
        Ok(Step::Done) => Some(Ok(())),
        Err(e) => {
            abort.store(true, Ordering::Relaxed);
            Some(Err(Exit::Failed(e)))
        }
    }
}

/// How one worker's run ended: what it did, or why it stopped.
type Ended<O> = Result<Finished<O>, Exit>;

/// The stonewall state of a worker and how it meets the others there.
type WearRef<'a> = Option<(&'a Wear, &'a (dyn Fn(&Wear) + Sync))>;

/// What stops a worker's loop before its next operation, and where its deadline falls.
#[derive(Clone, Copy)]
struct Limits<'a> {
    interrupt: &'a AtomicBool,
    abort: &'a AtomicBool,
    /// The clock reading at which a time-based phase ends.
    deadline_at: Option<u64>,
}

impl Limits<'_> {
    /// Whether the reading `t1` is at or past the deadline.
    #[inline(always)]
    fn past(&self, t1: u64) -> bool {
        self.deadline_at.is_some_and(|d| t1 >= d)
    }
}

/// How a worker's loop ended, and what it counted.
struct Looped {
    ended: Result<(), Exit>,
    ops: u64,
    deadline_hit: bool,
}

impl Looped {
    /// The loop reached its deadline after `ops` operations.
    fn at_deadline(ops: u64) -> Looped {
        Looped {
            ended: Ok(()),
            ops,
            deadline_hit: true,
        }
    }

    /// The loop ended before its deadline (`ended`: the work was done, or why it stopped).
    fn stopped(ended: Result<(), Exit>, ops: u64) -> Looped {
        Looped {
            ended,
            ops,
            deadline_hit: false,
        }
    }
}

/// A worker's per-second series of a time-based phase and where its loop is in it: the counts
/// and latency windows (sized before the start, never grown in the loop), the second being
/// counted, its operations so far, and the reading at which it ends (never, without a series).
struct Seconds {
    per_second: Vec<u64>,
    windows: WindowCounts,
    started: u64,
    second: usize,
    in_second: u64,
    ends: u64,
}

impl Seconds {
    /// The series of a phase with `deadline` (its seconds, one partial, one spare), empty for
    /// one without; allocated here, before the start.
    fn new(deadline: Option<Duration>) -> Seconds {
        let per_second: Vec<u64> = match deadline {
            Some(d) => vec![0; (d.as_secs() as usize + 2).min(MAX_SECONDS)],
            None => Vec::new(),
        };
        Seconds {
            windows: WindowCounts::new(per_second.len()),
            per_second,
            started: 0,
            second: 0,
            in_second: 0,
            ends: u64::MAX,
        }
    }

    /// Starts counting at the reading `started`.
    fn start<C: OpClock>(&mut self, clock: C, started: u64) {
        self.started = started;
        if !self.per_second.is_empty() {
            self.ends = started.saturating_add(clock.ticks_in(1_000_000_000));
        }
    }

    /// Moves on to the second the reading `t1` falls in once it passed the current one's end
    /// (rare: once a second), storing the finished second's count.
    #[inline(always)]
    fn reach<C: OpClock>(&mut self, clock: C, t1: u64) {
        if t1 >= self.ends {
            self.per_second[self.second] += self.in_second;
            self.in_second = 0;
            (self.second, self.ends) = next_second(clock, self.started, t1, self.second, self.per_second.len());
        }
    }

    /// The series and windows as the run leaves them: the last second's count stored, the
    /// trailing seconds nobody reached dropped.
    fn close(mut self, ops: u64) -> (Vec<u64>, WindowCounts) {
        if let Some(last) = self.per_second.get_mut(self.second) {
            *last += self.in_second;
        }
        let reached = if ops == 0 { 0 } else { self.second + 1 };
        self.per_second.truncate(reached);
        (self.per_second, self.windows)
    }
}

/// The per-thread hot loop; with `wear`, the stonewall (`meet` waits for the agreed count)
/// and the wear-out after it.
#[allow(clippy::too_many_arguments)]
fn run_one<W: Worker, C: OpClock>(
    clock: C,
    mut w: W,
    mut latency: LatencyRecorder,
    mut sampler: Sampler,
    barrier: Option<&Barrier>,
    deadline: Option<Duration>,
    interrupt: &AtomicBool,
    abort: &AtomicBool,
    wear: WearRef,
) -> Result<Finished<W::Output>, Exit> {
    // Everything the loop fills is allocated now, before the start.
    let mut secs = Seconds::new(deadline);
    // Auto's calibration: the first operations' latencies, kept until the interval is known.
    let mut calibration: Vec<u64> = Vec::with_capacity(if sampler.auto { CALIBRATION_OPS } else { 0 });
    if let Some(b) = barrier {
        b.wait();
    }
    let start = Instant::now();
    let started = clock.now();
    secs.start(clock, started);
    let limits = Limits {
        interrupt,
        abort,
        deadline_at: deadline
            .map(|d| started.saturating_add(clock.ticks_in(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)))),
    };
    let Looped {
        ended: mut first,
        mut ops,
        deadline_hit,
    } = if sampler.times_all() {
        timed_loop(clock, &mut w, &mut latency, &mut secs, started, limits)
    } else {
        sampled_loop(
            clock,
            &mut w,
            &mut latency,
            &mut sampler,
            &mut secs,
            &mut calibration,
            started,
            limits,
        )
    };
    // A run shorter than Auto's calibration: every operation it timed counts.
    for &v in &calibration {
        latency.record_ns(v);
    }
    let ops_before = ops;
    if let Some((shared, meet)) = wear {
        // Every worker meets the stonewall, whatever ended its run, so none waits forever.
        shared.before.fetch_add(ops, Ordering::Relaxed);
        meet(shared);
        if first.is_ok() && deadline_hit {
            let (n, ended) = run_wear_out(clock, &mut w, &mut latency, &mut sampler, shared, interrupt, abort);
            // Wear-out after the deadline: counted in the last second reached, so the series
            // still sums to `ops`.
            ops += n;
            secs.in_second += n;
            first = ended;
        }
    }
    let (per_second, windows) = secs.close(ops);
    let counted = Counted {
        ops,
        latency,
        deadline_hit,
        per_second,
        ops_before,
        windows,
        open: None,
        sample_every: sampler.every,
    };
    Finished::close(w, first, abort, start, counted)
}

/// The loop that times every operation: the end of one operation is the start of the next.
#[inline(always)]
fn timed_loop<W: Worker, C: OpClock>(
    clock: C,
    w: &mut W,
    latency: &mut LatencyRecorder,
    secs: &mut Seconds,
    mut t0: u64,
    limits: Limits,
) -> Looped {
    let mut ops: u64 = 0;
    let ended = loop {
        if let Some(why) = stopped(limits.interrupt, limits.abort) {
            break Err(why);
        }
        if let Some(end) = call(w, limits.abort) {
            break end;
        }
        let t1 = clock.now();
        let ns = clock.ns_between(t0, t1);
        latency.record_ns(ns);
        t0 = t1;
        ops += 1;
        secs.reach(clock, t1);
        secs.windows.record(secs.second, ns);
        secs.in_second += 1;
        if limits.past(t1) {
            return Looped::at_deadline(ops);
        }
    };
    Looped::stopped(ended, ops)
}

/// The sampled loop (see "Sampled latency" in the module documentation): `left` operations run
/// untimed before the next timed one. A timed operation reads the clock before and after
/// itself, except while it is chained (Auto's calibration, or an interval of 1), where the end
/// of one operation is the start of the next as in [`timed_loop`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn sampled_loop<W: Worker, C: OpClock>(
    clock: C,
    w: &mut W,
    latency: &mut LatencyRecorder,
    sampler: &mut Sampler,
    secs: &mut Seconds,
    calibration: &mut Vec<u64>,
    started: u64,
    limits: Limits,
) -> Looped {
    let mut ops: u64 = 0;
    let mut t0 = started;
    let mut left = sampler.gap();
    let mut chained = sampler.auto || sampler.every <= 1;
    let mut calibrating = sampler.auto;
    let ended = loop {
        if let Some(why) = stopped(limits.interrupt, limits.abort) {
            break Err(why);
        }
        if left > 0 {
            left -= 1;
            if let Some(end) = call(w, limits.abort) {
                break end;
            }
            ops += 1;
            secs.in_second += 1;
            continue;
        }
        if !chained {
            t0 = clock.now();
        }
        if let Some(end) = call(w, limits.abort) {
            break end;
        }
        let t1 = clock.now();
        let ns = clock.ns_between(t0, t1);
        t0 = t1;
        ops += 1;
        if calibrating {
            // Within the capacity sized before the start: no allocation.
            calibration.push(ns);
            if calibration.len() == CALIBRATION_OPS {
                let mean = clock.ns_between(started, t1) as f64 / ops as f64;
                left = end_calibration(sampler, latency, calibration, mean);
                chained = sampler.every <= 1;
                calibrating = false;
            }
        } else {
            latency.record_ns(ns);
            left = sampler.gap();
        }
        secs.reach(clock, t1);
        if !calibrating {
            secs.windows.record(secs.second, ns);
        }
        secs.in_second += 1;
        if limits.past(t1) {
            return Looped::at_deadline(ops);
        }
    };
    Looped::stopped(ended, ops)
}

/// The end of Auto's calibration (rare: once): chooses the interval from the mean operation
/// (`mean_ns`), then thins the calibration's latencies by the same random gaps as the rest.
/// Returns the untimed operations left before the next timed one.
#[cold]
fn end_calibration(
    sampler: &mut Sampler,
    latency: &mut LatencyRecorder,
    calibration: &mut Vec<u64>,
    mean_ns: f64,
) -> u64 {
    sampler.every = auto_every(sampler.cost_ns, mean_ns);
    let mut left = sampler.gap();
    for &v in calibration.iter() {
        if left > 0 {
            left -= 1;
        } else {
            latency.record_ns(v);
            left = sampler.gap();
        }
    }
    calibration.clear();
    left
}

/// What a worker's loop counted: the part of [`Finished`] the loop fills.
pub(crate) struct Counted {
    /// Operations, the stonewall's wear-out included.
    pub ops: u64,
    pub latency: LatencyRecorder,
    pub deadline_hit: bool,
    pub per_second: Vec<u64>,
    /// Operations before the stonewall.
    pub ops_before: u64,
    /// Latency counts per second (empty where the loop keeps none).
    pub windows: WindowCounts,
    /// The open loop's share of this worker.
    pub open: Option<OpenPart>,
    /// One operation in this many was timed (1: all).
    pub sample_every: u64,
}

impl<O> Finished<O> {
    /// The end of a worker's run, closed and open loop alike: the loop's own end (`ended`),
    /// then the worker's `end` inside the timed region (a failure tells the others to stop),
    /// the end time, and the worker's output.
    pub(crate) fn close<W: Worker<Output = O>>(
        mut w: W,
        ended: Result<(), Exit>,
        abort: &AtomicBool,
        start: Instant,
        c: Counted,
    ) -> Result<Finished<O>, Exit> {
        ended?;
        if let Err(e) = w.end() {
            abort.store(true, Ordering::Relaxed);
            return Err(Exit::Failed(e));
        }
        let end = Instant::now();
        Ok(Finished {
            start,
            end,
            output: w.finish(),
            counted: c,
        })
    }
}

/// The second a per-second count goes on with after reading `t1` passed the end of `second`
/// (of `len`), and the reading at which that one ends (`u64::MAX` for the last entry, which
/// takes every later second).
#[cold]
fn next_second<C: OpClock>(clock: C, started: u64, t1: u64, second: usize, len: usize) -> (usize, u64) {
    let secs = clock.ns_between(started, t1) / 1_000_000_000;
    let next = (secs as usize).max(second + 1).min(len - 1);
    if next == len - 1 {
        (next, u64::MAX)
    } else {
        (
            next,
            started.saturating_add(clock.ticks_in((next as u64 + 1) * 1_000_000_000)),
        )
    }
}

/// The wear-out after the stonewall: operations claimed from `shared.extra` until none is left,
/// timed like the main loop's. Returns how many it did and how it ended (`Ok` when the claims
/// ran out or the worker was done). Called once per worker, after the timed loop.
#[inline]
fn run_wear_out<W: Worker, C: OpClock>(
    clock: C,
    w: &mut W,
    latency: &mut LatencyRecorder,
    sampler: &mut Sampler,
    shared: &Wear,
    interrupt: &AtomicBool,
    abort: &AtomicBool,
) -> (u64, Result<(), Exit>) {
    let extra = shared.extra.load(Ordering::Relaxed);
    let mut ops: u64 = 0;
    // Sampled as the main loop was (its interval in force, two readings per timed operation).
    let sampled = sampler.every > 1;
    let mut left = sampler.gap();
    let mut t0 = clock.now();
    while shared.claimed.fetch_add(1, Ordering::Relaxed) < extra {
        if let Some(why) = stopped(interrupt, abort) {
            return (ops, Err(why));
        }
        let timed = left == 0;
        if timed && sampled {
            t0 = clock.now();
        }
        match call(w, abort) {
            None => {}
            Some(Ok(())) => break,
            Some(Err(e)) => return (ops, Err(e)),
        }
        ops += 1;
        if !timed {
            left -= 1;
            continue;
        }
        let t1 = clock.now();
        latency.record_ns(clock.ns_between(t0, t1));
        t0 = t1;
        left = sampler.gap();
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
            // The latency windows follow the same seconds: every timed operation is in the
            // window of the second it ended in.
            assert_eq!(run.windows.len(), 3);
            let in_windows: Vec<u64> = run.windows.iter().map(|w| w.iter().map(|b| b.1).sum()).collect();
            assert_eq!(in_windows, run.per_second, "windows and series disagree");
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
        // No deadline, no series and no windows.
        let run = WorkerPool::new().run(vec![Countdown::new(10)], &flag).expect("run");
        assert!(run.per_second.is_empty() && run.windows.is_empty());
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
    fn auto_every_keeps_the_instrument_under_its_share_and_the_gap_short() {
        for cost in [10.0, 35.0, 120.0] {
            let mut last = u64::MAX;
            for mean in [5.0, 30.0, 200.0, 900.0, 5_000.0, 50_000.0, 1e7] {
                let n = auto_every(cost, mean);
                assert!(n.is_power_of_two() && n <= MAX_SAMPLE_EVERY, "{cost} {mean} → {n}");
                assert!(n <= last, "slower operations never get a longer interval");
                last = n;
                let capped = n == MAX_SAMPLE_EVERY || (2 * n) as f64 * mean > MAX_SAMPLE_GAP_NS;
                assert!(
                    cost / n as f64 <= AUTO_COST_SHARE * mean || capped,
                    "{cost} {mean} → {n}"
                );
                assert!(n == 1 || n as f64 * mean <= MAX_SAMPLE_GAP_NS, "{cost} {mean} → {n}");
                if n > 1 {
                    // The smallest such power of two: half of it would cost more.
                    assert!(cost / (n / 2) as f64 > AUTO_COST_SHARE * mean, "{cost} {mean} → {n}");
                }
            }
            assert_eq!(auto_every(cost, 1e7), 1, "slow operations stay fully timed");
        }
    }

    #[test]
    fn the_cost_of_a_sampled_operation_is_measured_once_per_clock() {
        let first = sample_cost_ns(clock::Monotonic);
        assert!(first > 0.0 && first < 100_000.0, "{first} ns");
        assert_eq!(sample_cost_ns(clock::Monotonic), first, "remembered");
    }

    #[test]
    fn gaps_are_uniform_with_mean_interval_every() {
        for every in [2u64, 16, 1000] {
            let mut s = Sampler::new(Sampling::Every(every as u32), 0.0, 3);
            let draws = 200_000u64;
            let (mut sum, mut most) = (0u64, 0u64);
            for _ in 0..draws {
                let g = s.gap();
                sum += g;
                most = most.max(g);
            }
            // Mean of uniform 0 ..= 2n − 2 is n − 1, standard deviation ≈ (2n − 1)/√12; the mean
            // of `draws` is within 5 standard errors.
            let mean = sum as f64 / draws as f64;
            let se = (2 * every - 1) as f64 / 12f64.sqrt() / (draws as f64).sqrt();
            assert!(
                (mean - (every - 1) as f64).abs() < 5.0 * se,
                "every {every}: mean gap {mean}"
            );
            assert_eq!(most, 2 * every - 2, "every {every}: the longest gap is drawn");
        }
        assert_eq!(Sampler::new(Sampling::All, 0.0, 0).gap(), 0);
        assert_eq!(Sampler::new(Sampling::Every(1), 0.0, 0).gap(), 0);
        assert!(Sampler::new(Sampling::Every(1), 0.0, 0).times_all());
        assert!(!Sampler::new(Sampling::Auto, 0.0, 0).times_all());
    }

    thread_local! {
        /// The virtual time of [`Virtual`], advanced by the operations of [`Drawn`].
        static VIRTUAL_NS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// A clock that moves only when an operation says how long it took: the latencies the pool
    /// records are then exactly the ones drawn, on any machine under any load.
    #[derive(Clone, Copy)]
    struct Virtual;

    impl OpClock for Virtual {
        fn now(&self) -> u64 {
            VIRTUAL_NS.with(|t| t.get())
        }
        fn ns_between(&self, start: u64, end: u64) -> u64 {
            end.saturating_sub(start)
        }
        fn ticks_in(&self, ns: u64) -> u64 {
            ns
        }
    }

    /// `left` operations whose durations come from a seeded generator: 0.8 µs plus an
    /// exponential part of mean 0.3 µs, and one in 50 a slow one of 10–30 µs; with `period`,
    /// every `period`-th operation is slow instead (a periodic workload, such as files spread
    /// over `period` directories).
    struct Drawn {
        left: u64,
        rng: u64,
        period: Option<u64>,
        i: u64,
    }

    impl Drawn {
        fn new(left: u64, seed: u64, period: Option<u64>) -> Drawn {
            Drawn {
                left,
                rng: seed | 1,
                period,
                i: 0,
            }
        }
        fn uniform(&mut self) -> f64 {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            ((self.rng >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
    }

    impl Worker for Drawn {
        type Output = ();
        fn op(&mut self) -> Result<Step, EngineError> {
            if self.left == 0 {
                return Ok(Step::Done);
            }
            self.left -= 1;
            self.i += 1;
            let slow = match self.period {
                Some(p) => self.i % p == 0,
                None => self.uniform() < 0.02,
            };
            let ns = if slow {
                10_000.0 + 20_000.0 * self.uniform()
            } else {
                800.0 - 300.0 * self.uniform().ln()
            };
            VIRTUAL_NS.with(|t| t.set(t.get() + ns as u64));
            Ok(Step::Op)
        }
    }

    /// The two-sided order-statistic confidence interval of the `q`-quantile from `sample`
    /// (a histogram of `n` values), at level `1 − alpha`: `[x(l), x(u)]` with ranks from the
    /// binomial distribution of how many of `n` values fall below the true quantile.
    fn quantile_ci(sample: &LatencyRecorder, q: f64, alpha: f64) -> (f64, f64) {
        use statrs::distribution::{Binomial, DiscreteCDF};
        let n = sample.count();
        let b = Binomial::new(q, n).expect("binomial");
        let l = b.inverse_cdf(alpha / 2.0).max(1);
        let u = (b.inverse_cdf(1.0 - alpha / 2.0) + 1).min(n);
        // x(k), the k-th smallest value: the histogram's quantile just under k / n.
        let at = |k: u64| sample.quantile_us((k as f64 - 0.5) / n as f64);
        (at(l), at(u))
    }

    #[test]
    fn sampled_percentiles_lie_within_their_sampling_interval_of_the_fully_timed_ones() {
        let flag = AtomicBool::new(false);
        let ops = 200_000;
        let run = |sampling: Sampling, period: Option<u64>| {
            VIRTUAL_NS.with(|t| t.set(0));
            WorkerPool::new()
                .sample_latency(sampling)
                .run_with(Virtual, vec![Drawn::new(ops, 0x5EED, period)], &flag, &Solo)
                .expect("pool run")
        };
        for period in [None, Some(16)] {
            let full = run(Sampling::All, period);
            assert_eq!(full.latency.count(), ops);
            assert_eq!(full.sample_every, 1);
            for every in [4u32, 16, 64] {
                let sampled = run(Sampling::Every(every), period);
                assert_eq!(sampled.ops, ops, "every operation still counts");
                assert_eq!(sampled.sample_every, u64::from(every));
                // About ops / every timed: within 5 standard deviations of the binomial count.
                let n = sampled.latency.count() as f64;
                let (want, p) = (ops as f64 / f64::from(every), 1.0 / f64::from(every));
                let sd = (ops as f64 * p * (1.0 - p)).sqrt();
                assert!((n - want).abs() < 5.0 * sd, "every {every}: {n} timed of {ops}");
                for q in [0.5, 0.95, 0.99] {
                    let truth = full.latency.quantile_us(q);
                    let (lo, hi) = quantile_ci(&sampled.latency, q, 0.001);
                    assert!(
                        lo <= truth && truth <= hi,
                        "period {period:?}, every {every}, q {q}: fully timed {truth} µs outside the sample's 99.9 % interval [{lo}, {hi}] µs from {n} values"
                    );
                    // The interval is informative, not the whole range.
                    assert!(hi < full.latency.max_us() || q == 0.99, "q {q}: [{lo}, {hi}]");
                }
            }
        }
    }

    #[test]
    fn auto_samples_short_operations_and_times_every_long_one() {
        let flag = AtomicBool::new(false);
        // Short: a counter step (a few ns), far under what timing one costs.
        let mut n = 0u64;
        let short = FnWorker(move || {
            n += 1;
            std::hint::black_box(n);
            Ok(if n <= 200_000 { Step::Op } else { Step::Done })
        });
        let run = WorkerPool::new()
            .sample_latency(Sampling::Auto)
            .run(vec![short], &flag)
            .expect("pool run");
        assert_eq!(run.ops, 200_000);
        assert!(run.sample_every > 1, "interval {}", run.sample_every);
        let timed = run.latency.count();
        assert!(timed > 0 && timed < run.ops / 2, "{timed} of {} timed", run.ops);
        // Long: 100 µs spins; timing each costs far under 0.25 % of one.
        let mut n = 0u64;
        let long = FnWorker(move || {
            n += 1;
            let t = Instant::now();
            while t.elapsed() < Duration::from_micros(100) {
                std::hint::spin_loop();
            }
            Ok(if n <= CALIBRATION_OPS as u64 + 100 {
                Step::Op
            } else {
                Step::Done
            })
        });
        let run = WorkerPool::new()
            .sample_latency(Sampling::Auto)
            .run(vec![long], &flag)
            .expect("pool run");
        assert_eq!(run.sample_every, 1);
        assert_eq!(run.latency.count(), run.ops, "every long operation timed");
        assert!(run.latency.quantile_us(0.5) >= 100.0);
        // Shorter than the calibration: every operation it timed is kept.
        let run = WorkerPool::new()
            .sample_latency(Sampling::Auto)
            .run(vec![Countdown::new(100), Countdown::new(7)], &flag)
            .expect("pool run");
        assert_eq!((run.ops, run.latency.count(), run.sample_every), (107, 107, 1));
    }

    #[test]
    fn a_sampled_deadline_pool_stops_and_counts_every_operation_per_second() {
        let flag = AtomicBool::new(false);
        let every = 8u32;
        let run = WorkerPool::with_deadline(Duration::from_millis(1100))
            .sample_latency(Sampling::Every(every))
            .run(vec![Countdown::new(u64::MAX), Countdown::new(u64::MAX)], &flag)
            .expect("pool run");
        assert_eq!(run.stop, StopReason::Deadline);
        assert!(run.wall >= Duration::from_millis(1100) && run.wall < Duration::from_secs(5));
        assert_eq!(run.per_second.len(), 2, "{:?}", run.per_second);
        assert_eq!(run.per_second.iter().sum::<u64>(), run.ops, "{:?}", run.per_second);
        assert_eq!(run.sample_every, u64::from(every));
        assert!(run.latency.count() > 0 && run.latency.count() < run.ops);
        assert!(
            run.latency.quantile_us(0.5) >= 20.0,
            "a timed operation is the spin itself"
        );
    }

    #[test]
    fn a_sampled_rank_behind_wears_out_exactly_the_agreed_operations() {
        for n in [1, 3] {
            let flag = AtomicBool::new(false);
            let workers: Vec<Countdown> = (0..n).map(|_| Countdown::new(u64::MAX)).collect();
            let run = WorkerPool::with_deadline(Duration::from_millis(20))
                .wear_out(true)
                .sample_latency(Sampling::Every(4))
                .run_synced(workers, &flag, &Behind)
                .expect("pool run");
            let wall = run.stonewall.expect("stonewall stats");
            assert_eq!(wall.ops_after, 50);
            assert_eq!(run.ops, wall.agreed);
            assert_eq!(run.per_second.iter().sum::<u64>(), run.ops, "{:?}", run.per_second);
            assert!(run.latency.count() < run.ops, "sampled through the wear-out too");
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
