//! The one driver of a timed phase. Every workload records its phases through [`Phases`]; no
//! workload starts a CPU meter or a worker pool itself.
//!
//! One phase, in order:
//! 1. [`Phases::begin`]: the phase is reported to the progress display, and with
//!    [`Caches::DropIfAsked`] the page, dentry and inode caches are synced and dropped when the
//!    run asks for it (`engine::caches::before_phase`);
//! 2. the timed region, under the CPU meters (`getrusage` of the process, `/proc/stat` of the
//!    machine): a worker-pool run ([`Phases::pool`], the hot loop's start barrier, deadline and
//!    interrupt are the pool's), a plain closure ([`Phases::region`]), or a region around child
//!    processes whose CPU is added ([`Phases::with_children`]: `cp`/`rm`, a database server and
//!    its client);
//! 3. [`Phases::record`]: the headline metrics, then the phase's [`LatencySet`] (chosen by
//!    [`Stat`], declared [`crate::metric::Role::Latency`]), the minimum-time policy
//!    ([`Short`]), and the [`PhaseResult`]; a pool phase's latency histogram, log-bucketed
//!    (≤ ~200 buckets), goes into the sample's `histograms` (the report's histogram chart).
//!    A phase whose pool sampled its latencies ([`crate::pool::Sampling`], set on the
//!    pool or, for [`Phases::run_passes`], by [`Policy::sampling`]) also gets the detail rows
//!    [`SAMPLE_EVERY`] (one operation in how many was timed) and [`SAMPLES`] (how many were),
//!    after its latency set, and the repeat one note naming its sampled phases.
//!
//! [`Phases::run_pool`] is the three steps for the common case. A phase timed in pieces that
//! alternate with other phases' pieces (a replay's phases, doc/replay.md) runs each piece with
//! [`Phases::piece`] (steps 1 and 2; its device I/O kept for its phase), sums them with
//! [`Timed::then`], and records each phase once.
//!
//! Invariants: the CPU meters are read only outside the hot loop (right before and after the
//! timed region); the wall time of a pool phase is the pool's (barrier release to the last
//! worker's end) plus what the phase times after it ([`Phases::pool_then`]); metrics keep the
//! order headline, then latency; a short phase's note text is fixed here, once.

use crate::caches::before_phase;
use crate::cpu::{self, CpuMeter};
use crate::host::diskstat::{self, DiskStat};
use crate::latency::{LatencySummary, Stat};
use crate::metric::{CpuUsage, LatencyHistogram, MetricId, PhaseResult, RawSample, ThroughputSeries};
use crate::pool::{PoolRun, Sampling, Worker, WorkerPool};
use crate::{EngineError, RunContext};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Phases of a fixed amount of work shorter than this get a note: bonnie++ prints `+++++`
/// instead of a number below 0.5 s, because a timer's granularity and the start and end
/// effects are then a visible share of the time (bonnie, mongo).
pub const MIN_TIME: Duration = Duration::from_millis(500);

/// Detail row of a phase whose latencies were sampled: one operation in this many was timed
/// (the largest interval any worker used; [`crate::pool::Sampling`]).
pub const SAMPLE_EVERY: &str = "lat_sample_every";

/// Detail row of a phase whose latencies were sampled: how many operations were timed (the
/// sample size of its percentiles).
pub const SAMPLES: &str = "lat_samples";

/// Detail row of an open-loop phase: the share of each worker's time spent in its operations
/// (0–1), the utilisation the stall check ([`crate::stall`]) and `fsbench verify` judge by.
pub const UTILISATION: &str = "utilisation";

/// Time-based phases shorter than this get a note: sysbench's `--time` is whole seconds, so
/// 1 s is the shortest run the tool it reproduces can make, and its rates are per second
/// (fileio, which ends on `time` or `requests`).
pub const MIN_TIMED_RUN: Duration = Duration::from_secs(1);

/// What happens to the caches before a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caches {
    /// `sync` and drop caches when the run asks for it (`RunContext::drop_caches`).
    DropIfAsked,
    /// Leave them: the phase continues the previous one (an fsync, a close, a measurement).
    Keep,
}

/// Which latency statistics of the pool's histogram a phase reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatencySet {
    /// None.
    None,
    /// Median, 99th percentile and maximum.
    Core,
    /// All of [`Stat::ALL`].
    Full,
}

impl LatencySet {
    /// The statistics of this set, in report order.
    pub fn stats(self) -> &'static [Stat] {
        match self {
            LatencySet::None => &[],
            LatencySet::Core => &[Stat::P50, Stat::P99, Stat::Max],
            LatencySet::Full => &Stat::ALL,
        }
    }
}

/// The minimum-time policy of a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Short {
    /// No note: the phase's time is its result however short (bigfile, copies, OLTP).
    Ignore,
    /// One note per short phase: `"{prefix}{phase} ran under {limit} s{aside}: too short to
    /// time reliably; raise {raise}"`.
    Each {
        /// The limit ([`MIN_TIME`] or [`MIN_TIMED_RUN`]).
        limit: Duration,
        /// Before the phase name (e.g. `"fileio "`).
        prefix: &'static str,
        /// After the limit (e.g. `" (where bonnie++ prints +++++)"`).
        aside: &'static str,
        /// What to raise.
        raise: &'static str,
    },
    /// Short phases are collected; [`Phases::finish`] adds one note: `"{family} phases under
    /// {limit} s ({names}): too short to time reliably; raise {raise}"`.
    Collect {
        /// The limit.
        limit: Duration,
        /// The workload family (e.g. `"mongo"`).
        family: &'static str,
        /// What to raise.
        raise: &'static str,
    },
}

impl Short {
    fn limit(self) -> Option<Duration> {
        match self {
            Short::Ignore => None,
            Short::Each { limit, .. } | Short::Collect { limit, .. } => Some(limit),
        }
    }
}

/// How a workload's phases are recorded: caches, latency set, minimum-time policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Before the phase.
    pub caches: Caches,
    /// Latency statistics reported after the headline metrics.
    pub latency: LatencySet,
    /// Minimum-time policy.
    pub short: Short,
    /// Which operations [`Phases::run_passes`] times ([`WorkerPool::sample_latency`]); a
    /// caller of [`Phases::pool`] sets it on the pool it passes.
    pub sampling: Sampling,
}

impl Policy {
    /// Caches dropped if asked, no latency, no minimum time.
    pub const fn new() -> Policy {
        Policy {
            caches: Caches::DropIfAsked,
            latency: LatencySet::None,
            short: Short::Ignore,
            sampling: Sampling::All,
        }
    }

    /// The same policy with `caches`.
    pub const fn caches(self, caches: Caches) -> Policy {
        Policy { caches, ..self }
    }

    /// The same policy with `latency`.
    pub const fn latency(self, latency: LatencySet) -> Policy {
        Policy { latency, ..self }
    }

    /// The same policy with `short`.
    pub const fn short(self, short: Short) -> Policy {
        Policy { short, ..self }
    }

    /// The same policy with `sampling`.
    pub const fn sample_latency(self, sampling: Sampling) -> Policy {
        Policy { sampling, ..self }
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy::new()
    }
}

/// What one timed region measured.
#[derive(Debug)]
pub struct Timed<T> {
    /// Wall time of the region (a workload may replace it by what the phase defines as its time,
    /// e.g. a client's own report, before [`Phases::record`]).
    pub wall: Duration,
    /// CPU over the region.
    pub cpu: CpuUsage,
    /// The pool's latency percentiles (empty outside a pool run).
    pub latency: LatencySummary,
    /// The pool's latency histogram in compact form, `(ns, operations)` per non-empty log
    /// bucket ([`crate::latency::LatencyRecorder::log_bins`]); empty outside a pool run.
    /// [`Phases::record`] stores it as the phase's [`crate::metric::LatencyHistogram`].
    pub bins: Vec<(u64, u64)>,
    /// Operations per elapsed second of a pool with a deadline ([`PoolRun::per_second`]);
    /// empty otherwise. [`Phases::record`] stores it as the phase's throughput series.
    pub per_second: Vec<u64>,
    /// Latency bins per elapsed second ([`PoolRun::windows`]); empty otherwise.
    /// [`Phases::record`] stores them as the phase's [`crate::metric::LatencyWindows`].
    pub windows: Vec<Vec<(u64, u64)>>,
    /// An open-loop pool's rate, backlog and service times ([`PoolRun::open`]).
    pub open: Option<OpenSummary>,
    /// One operation in this many was timed into the latencies ([`PoolRun::sample_every`]);
    /// 1 outside a pool run. Above 1, [`Phases::record`] adds the detail rows
    /// `lat_sample_every` and `lat_samples` and a note.
    pub sample_every: u64,
    /// What the region produced (the [`PoolRun`] for a pool).
    pub value: T,
}

/// What [`Phases::record`] reports of an open-loop pool run (all workers).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpenSummary {
    /// Rate asked for, operations per second.
    pub asked_per_s: f64,
    /// Operations done per second of the pool's wall time.
    pub achieved_per_s: f64,
    /// Starts due before the deadline that were never issued.
    pub unissued: u64,
    /// Latest start behind its intended time, µs.
    pub max_late_us: f64,
    /// Service times (from each operation's actual start), µs.
    pub service: LatencySummary,
    /// The share of each worker's time spent in its operations, 0–1 ([`PoolRun::utilisation`]).
    pub utilisation: f64,
}

impl OpenSummary {
    /// The summary of `run`'s open loop, if it ran one.
    fn of<O>(run: &PoolRun<O>) -> Option<OpenSummary> {
        run.open.as_ref().map(|o| OpenSummary {
            asked_per_s: o.asked_per_s,
            achieved_per_s: run.ops_per_sec(),
            unissued: o.unissued,
            max_late_us: o.max_late_ns as f64 / 1_000.0,
            service: o.service.summary(),
            utilisation: run.utilisation().unwrap_or(f64::NAN),
        })
    }

    /// Whether the workers kept their schedule ([`crate::openloop::sustained`]) over
    /// `wall`.
    pub fn sustained(&self, wall: Duration) -> bool {
        crate::openloop::sustained(self.unissued, self.asked_per_s, wall)
    }

    /// The detail rows: `rate_asked`, `rate_achieved` (ops/s), `unissued` (count),
    /// `late_max`, `svc_p50`, `svc_p99` (µs), `utilisation` (ratio, 0–1: what the stall check
    /// of [`crate::stall`] reads).
    fn rows(&self) -> Vec<(MetricId, f64)> {
        use crate::metric::{Role, Unit};
        let d = |m: MetricId| m.with_role(Role::Detail);
        let mut rows = vec![
            (d(MetricId::higher("rate_asked", Unit::OpsPerSec)), self.asked_per_s),
            (
                d(MetricId::higher("rate_achieved", Unit::OpsPerSec)),
                self.achieved_per_s,
            ),
            (d(MetricId::lower("unissued", Unit::Count)), self.unissued as f64),
            (d(MetricId::lower("late_max", Unit::Micros)), self.max_late_us),
            (d(MetricId::lower("svc_p50", Unit::Micros)), self.service.p50_us),
            (d(MetricId::lower("svc_p99", Unit::Micros)), self.service.p99_us),
        ];
        if self.utilisation.is_finite() {
            rows.push((d(MetricId::lower(UTILISATION, Unit::Ratio)), self.utilisation));
        }
        rows
    }
}

impl<O> Timed<PoolRun<O>> {
    /// A pool run's measurement: its latency figures, series and sampling, with the phase's
    /// `wall` time and `cpu`.
    fn of_pool(wall: Duration, cpu: CpuUsage, run: PoolRun<O>) -> Self {
        Timed {
            wall,
            cpu,
            latency: run.latency.summary(),
            bins: run.latency.log_bins(),
            per_second: run.per_second.clone(),
            windows: run.windows.clone(),
            open: OpenSummary::of(&run),
            sample_every: run.sample_every,
            value: run,
        }
    }
}

impl<T> Timed<T> {
    /// The measurement of a region outside a pool: its wall time and CPU, no latency figures.
    pub fn plain(wall: Duration, cpu: CpuUsage, value: T) -> Timed<T> {
        Timed {
            wall,
            cpu,
            latency: LatencySummary::default(),
            bins: Vec::new(),
            per_second: Vec::new(),
            windows: Vec::new(),
            open: None,
            sample_every: 1,
            value,
        }
    }

    /// `self` followed by `b`, pieces of one phase ([`Phases::piece`]): the wall times add, the
    /// CPU shares are the time-weighted mean, the values merge with `merge`. Plain regions only
    /// (latencies, series and open-loop summaries stay `self`'s).
    pub fn then(mut self, b: Timed<T>, merge: impl FnOnce(T, T) -> T) -> Timed<T> {
        let (wa, wb) = (self.wall.as_secs_f64(), b.wall.as_secs_f64());
        let weight = |x: f64, y: f64| {
            if wa + wb > 0.0 {
                (x * wa + y * wb) / (wa + wb)
            } else {
                x
            }
        };
        self.cpu = CpuUsage {
            process_pct: weight(self.cpu.process_pct, b.cpu.process_pct),
            system_pct: weight(self.cpu.system_pct, b.cpu.system_pct),
        };
        self.wall += b.wall;
        self.value = merge(self.value, b.value);
        self
    }

    /// The same measurement with its value mapped by `f`.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Timed<U> {
        Timed {
            wall: self.wall,
            cpu: self.cpu,
            latency: self.latency,
            bins: self.bins,
            per_second: self.per_second,
            windows: self.windows,
            open: self.open,
            sample_every: self.sample_every,
            value: f(self.value),
        }
    }
}

/// The phases of one repeat of a workload, and its notes; see the module documentation.
pub struct Phases<'a, 'c> {
    ctx: &'a RunContext<'c>,
    sample: RawSample,
    /// The workload's files are open with O_DIRECT ([`Phases::direct_io`]): each phase counts
    /// the page cache it dirtied (`nr_dirtied` of /proc/vmstat at its begin, here).
    direct: Option<u64>,
    direct_io: bool,
    /// The workload's files, when its I/O asks for no caching ([`Phases::uncached`]): each
    /// phase records how much of them the page cache holds when it ends.
    uncached: Option<Vec<std::path::PathBuf>>,
    /// With [`Phases::uncached`]: the bytes of those files cached when the phase began.
    uncached_from: Option<u64>,
    /// Names of short phases under a [`Short::Collect`] policy, and that policy.
    collected: Vec<String>,
    collect: Option<Short>,
    /// The block device under the run directory (`None`: tmpfs, FUSE, a dataset), and its
    /// counters at the current phase's begin: each phase records the reads, writes and flushes
    /// that reached it ([`crate::host::diskstat`]).
    disk: Option<String>,
    disk_from: Option<DiskStat>,
    /// Device I/O of the pieces run so far, per phase ([`Phases::piece`]), until its record.
    pieces: std::collections::HashMap<String, DiskStat>,
    /// Pool phases of one worker run it pinned to one CPU ([`Phases::pin_single_workers`]).
    pin_single: bool,
    /// Phases whose latencies were sampled ([`Timed::sample_every`] above 1), for the one note
    /// [`Phases::finish`] adds.
    sampled: Vec<String>,
}

impl<'a, 'c> Phases<'a, 'c> {
    /// Starts recording a repeat run in `ctx`.
    pub fn new(ctx: &'a RunContext<'c>) -> Self {
        Phases {
            ctx,
            sample: RawSample::default(),
            direct: None,
            direct_io: false,
            uncached: None,
            uncached_from: None,
            collected: Vec::new(),
            collect: None,
            disk: diskstat::device_of(ctx.dir),
            disk_from: None,
            pieces: std::collections::HashMap::new(),
            pin_single: false,
            sampled: Vec::new(),
        }
    }

    /// The run's context.
    pub fn ctx(&self) -> &'a RunContext<'c> {
        self.ctx
    }

    /// The run's interrupt flag.
    pub fn interrupt(&self) -> &'a AtomicBool {
        self.ctx.interrupt
    }

    /// The workload's I/O bypasses the page cache (its files are open with O_DIRECT): every
    /// phase from here on counts the pages the machine dirtied while it ran (`nr_dirtied`), and
    /// one that dirtied at least a quarter of what it wrote (and 1 MiB) gets a note; each gets
    /// a `dirtied_pages` detail row: the filesystem buffered its direct I/O (btrfs does so for
    /// files with data checksums; doc/io-path.md).
    pub fn direct_io(&mut self) {
        self.direct_io = true;
    }

    /// The workload's I/O asks the kernel to keep nothing cached (`RWF_DONTCACHE`) on the
    /// files `files`: every phase from here on records the MiB of them the page cache gained
    /// while it ran (mincore(2), [`crate::host::path::resident_bytes`], at its begin and its
    /// end) as a `cached_mib` detail row, and one that gained at least a quarter of what it read
    /// and wrote (or of the files, if less) and 1 MiB gets a note: the kernel kept the pages the
    /// requests asked it to drop. Gained, not held: the flag drops only the pages a request
    /// brings in, so pages cached before the phase (`drop_caches = false`) stay and are no
    /// finding.
    pub fn uncached(&mut self, files: Vec<std::path::PathBuf>) {
        self.uncached = Some(files);
    }

    /// From here on, a pool phase of a single worker runs it pinned to one CPU (the first
    /// this process may use; [`WorkerPool::pinned`]), its affinity restored afterwards: the
    /// kernel's threads doing the phase's I/O then run on the other CPUs instead of taking
    /// turns with the worker. Pools of several workers are left to the scheduler.
    pub fn pin_single_workers(&mut self) {
        self.pin_single = true;
    }

    /// Adds a note to the repeat.
    pub fn note(&mut self, note: String) {
        self.sample.notes.push(note);
    }

    /// `true` when a note starting with `prefix` was added already.
    pub fn has_note(&self, prefix: &str) -> bool {
        self.sample.notes.iter().any(|n| n.starts_with(prefix))
    }

    /// Step 1: reports `phase` to the progress display and, with [`Caches::DropIfAsked`], syncs
    /// and drops caches when the run asks for it.
    pub fn begin(&mut self, phase: &str, caches: Caches) {
        // Many ranks: every rank starts the phase together (a no-op alone).
        self.ctx.sync.begin(phase, self.ctx.interrupt);
        match caches {
            Caches::DropIfAsked => before_phase(self.ctx, phase, &mut self.sample),
            Caches::Keep => (self.ctx.on_phase)(phase),
        }
        // From the first pass of a phase on (a later pass begins again before the record).
        if self.direct_io && self.direct.is_none() {
            self.direct = pages_dirtied();
        }
        if self.disk_from.is_none() {
            self.disk_from = self.disk.as_deref().and_then(DiskStat::read);
        }
        if self.uncached_from.is_none() {
            self.uncached_from = self.uncached.as_deref().map(|f| cached_bytes(f).0);
        }
    }

    /// Step 2 for pool phases: runs `workers` on `pool` (start barrier, deadline, interrupt)
    /// under the CPU meters. The wall time is the pool's.
    pub fn pool<W: Worker>(&self, pool: WorkerPool, workers: Vec<W>) -> Result<Timed<PoolRun<W::Output>>, EngineError> {
        let t = self.measure_pool(pool, workers)?;
        self.ctx.sync.pool_measured(&t.value.latency, t.value.stonewall);
        Ok(t)
    }

    /// [`Phases::pool`] without telling the other processes ([`crate::sync::PhaseSync::pool_measured`]):
    /// the one measurement a pool phase and each pass of [`Phases::run_passes`] make.
    fn measure_pool<W: Worker>(
        &self,
        pool: WorkerPool,
        workers: Vec<W>,
    ) -> Result<Timed<PoolRun<W::Output>>, EngineError> {
        let pool = if self.pin_single && workers.len() == 1 {
            pool.pinned(true)
        } else {
            pool
        };
        let meter = CpuMeter::start();
        let run = pool.run_synced(workers, self.ctx.interrupt, self.ctx.sync)?;
        let cpu = meter.stop();
        Ok(Timed::of_pool(run.wall, cpu, run))
    }

    /// [`Phases::pool`], then `after` (e.g. the `syncfs` the phase counts) still inside the
    /// timed region; the wall time is the pool's plus `after`'s.
    pub fn pool_then<W: Worker>(
        &self,
        pool: WorkerPool,
        workers: Vec<W>,
        after: impl FnOnce(&PoolRun<W::Output>) -> Result<(), EngineError>,
    ) -> Result<Timed<PoolRun<W::Output>>, EngineError> {
        let meter = CpuMeter::start();
        let run = pool.run_synced(workers, self.ctx.interrupt, self.ctx.sync)?;
        let t0 = Instant::now();
        after(&run)?;
        let extra = t0.elapsed();
        let cpu = meter.stop();
        self.ctx.sync.pool_measured(&run.latency, run.stonewall);
        Ok(Timed::of_pool(run.wall + extra, cpu, run))
    }

    /// Step 2 for a phase that is one piece of code: runs `body` under the CPU meters; the wall
    /// time is `body`'s.
    pub fn region<T>(&self, body: impl FnOnce() -> Result<T, EngineError>) -> Result<Timed<T>, EngineError> {
        let meter = CpuMeter::start();
        let t0 = Instant::now();
        let value = body()?;
        let wall = t0.elapsed();
        let cpu = meter.stop();
        Ok(Timed::plain(wall, cpu, value))
    }

    /// Steps 1 and 2 for one piece of `phase` when a phase is timed in pieces that alternate
    /// with other phases' pieces: begins it, runs `body` under the CPU meters ([`Phases::region`])
    /// and adds the device I/O of this piece alone to the phase's, for its [`Phases::record`].
    /// The caller sums the pieces ([`Timed::then`]) and records each phase once.
    pub fn piece<T>(
        &mut self,
        phase: &str,
        caches: Caches,
        body: impl FnOnce() -> Result<T, EngineError>,
    ) -> Result<Timed<T>, EngineError> {
        self.begin(phase, caches);
        let from = self.disk_from.take();
        let t = self.region(body)?;
        if let (Some(from), Some(now)) = (from, self.disk.as_deref().and_then(DiskStat::read)) {
            let d = now.since(&from);
            let acc = self.pieces.entry(phase.to_string()).or_default();
            acc.reads += d.reads;
            acc.read_sectors += d.read_sectors;
            acc.writes += d.writes;
            acc.write_sectors += d.write_sectors;
            acc.flushes += d.flushes;
        }
        Ok(t)
    }

    /// Step 2 for a phase done by other processes: [`Phases::region`], and the process CPU also
    /// counts the CPU of the children reaped during `body` (`RUSAGE_CHILDREN`: `cp`, `rm`, a
    /// database client) and of `server`'s process tree (a server fsbench started and does not
    /// wait for), over the region's wall time, in percent of one CPU.
    pub fn with_children<T>(
        &self,
        server: Option<i32>,
        body: impl FnOnce() -> Result<T, EngineError>,
    ) -> Result<Timed<T>, EngineError> {
        let server_cpu = || server.map_or(Duration::ZERO, cpu::tree_cpu_time);
        let (children0, server0) = (cpu::children_cpu_time(), server_cpu());
        let mut t = self.region(body)?;
        let other = cpu::children_cpu_time().saturating_sub(children0) + server_cpu().saturating_sub(server0);
        t.cpu.process_pct += cpu::process_pct(other, t.wall);
        Ok(t)
    }

    /// Step 3: records phase `phase` with `headline` metrics (in order), then the policy's
    /// latency set from `t`, and applies the minimum-time policy to `t.wall`.
    pub fn record<T>(&mut self, phase: &str, t: &Timed<T>, headline: Vec<(MetricId, f64)>, policy: &Policy) {
        let dirtied = self.dirtied_by_direct_io(phase, &headline, t.wall);
        let cached = self.cached_by_uncached_io(phase, &headline, t.wall);
        let device = self.device_io(phase);
        let mut metrics = headline;
        metrics.extend(dirtied);
        metrics.extend(cached);
        metrics.extend(device);
        metrics.extend(t.latency.select(policy.latency.stats()));
        if let Some(o) = &t.open {
            metrics.extend(o.rows());
            if !o.sustained(t.wall) {
                self.sample.notes.push(format!(
                    "{phase}: asked for {:.0} operations/s, achieved {:.0}: the workers could not sustain the rate ({} starts never issued, the latest start {:.1} ms behind schedule); latency counts the wait. Raise threads or lower rate",
                    o.asked_per_s,
                    o.achieved_per_s,
                    o.unissued,
                    o.max_late_us / 1_000.0
                ));
            }
            let stalls = crate::stall::check(&t.latency, &o.service, o.utilisation, &t.windows);
            self.sample
                .notes
                .extend(crate::stall::note(phase, &stalls, o.service.max_us));
        }
        if t.sample_every > 1 && t.latency.count > 0 && policy.latency != LatencySet::None {
            use crate::metric::{Role, Unit};
            metrics.push((
                MetricId::lower(SAMPLE_EVERY, Unit::Count).with_role(Role::Detail),
                t.sample_every as f64,
            ));
            metrics.push((
                MetricId::higher(SAMPLES, Unit::Count).with_role(Role::Detail),
                t.latency.count as f64,
            ));
            self.sampled.push(phase.to_string());
        }
        if policy.short.limit().is_some_and(|limit| t.wall < limit) {
            match policy.short {
                Short::Ignore => {}
                Short::Each {
                    limit,
                    prefix,
                    aside,
                    raise,
                } => self.sample.notes.push(format!(
                    "{prefix}{phase} ran under {} s{aside}: too short to time reliably; raise {raise}",
                    limit.as_secs_f64()
                )),
                Short::Collect { .. } => {
                    self.collected.push(phase.to_string());
                    self.collect = Some(policy.short);
                }
            }
        }
        self.ctx.sync.recorded(phase, t.wall);
        if !t.bins.is_empty() {
            self.sample.histograms.push(LatencyHistogram {
                phase: phase.to_string(),
                bins: t.bins.clone(),
            });
        }
        if !t.per_second.is_empty() {
            self.sample.series.push(ThroughputSeries {
                phase: phase.to_string(),
                rank: None,
                ops: t.per_second.clone(),
            });
        }
        if !t.windows.is_empty() {
            self.sample.windows.push(crate::metric::LatencyWindows {
                phase: phase.to_string(),
                rank: None,
                window_ms: 1_000,
                bins: t.windows.clone(),
            });
        }
        self.sample.phases.push(PhaseResult {
            phase: phase.to_string(),
            rank: None,
            wall: t.wall,
            cpu: t.cpu,
            metrics,
        });
    }

    /// The I/O that reached the device since the phase began, as detail rows (none without a
    /// block device): `device_reads`, `device_read_mib`, `device_writes`, `device_write_mib`,
    /// `device_flushes`. Begin and end are outside the timed region; the counters include the
    /// phase's own `syncfs`/`fsync` when it times one.
    fn device_io(&mut self, phase: &str) -> Vec<(MetricId, f64)> {
        let d = match self.pieces.remove(phase) {
            Some(d) => d,
            None => {
                let (Some(from), Some(name)) = (self.disk_from.take(), self.disk.as_deref()) else {
                    return Vec::new();
                };
                let Some(d) = DiskStat::read(name).map(|now| now.since(&from)) else {
                    return Vec::new();
                };
                d
            }
        };
        use crate::metric::{Role, Unit};
        let row = |name: &str, unit: Unit| MetricId::lower(name, unit).with_role(Role::Detail);
        vec![
            (row("device_reads", Unit::Count), d.reads as f64),
            (row("device_read_mib", Unit::Mib), d.read_mib()),
            (row("device_writes", Unit::Count), d.writes as f64),
            (row("device_write_mib", Unit::Mib), d.write_mib()),
            (row("device_flushes", Unit::Count), d.flushes as f64),
        ]
    }

    /// With [`Phases::direct_io`]: the page cache the phase dirtied, as a `dirtied_pages` detail
    /// row and, when it is at least a quarter of the bytes the phase wrote (its `…write…` MiB/s
    /// rows × its time) and 1 MiB, a note saying the direct I/O was buffered.
    fn dirtied_by_direct_io(
        &mut self,
        phase: &str,
        headline: &[(MetricId, f64)],
        wall: Duration,
    ) -> Option<(MetricId, f64)> {
        let from = self.direct.take()?;
        let pages = pages_dirtied()?.saturating_sub(from);
        let mib = (pages * 4096) as f64 / (1u64 << 20) as f64;
        let written = mib_moved(headline, wall, |m| m.name.contains("write"));
        if mib >= 1.0 && written > 0.0 && mib >= 0.25 * written {
            self.sample.notes.push(format!(
                "{phase}: {}{mib:.0} MiB of page cache while writing {written:.0} MiB: the filesystem buffered the direct I/O (btrfs does for files with data checksums; nodatasum or a NoCOW directory keeps it direct)",
                PATH_NOTES[0].0
            ));
        }
        Some((
            MetricId::lower("dirtied_pages", crate::metric::Unit::Count).with_role(crate::metric::Role::Detail),
            pages as f64,
        ))
    }

    /// With [`Phases::uncached`]: the MiB the page cache gained of the workload's files since
    /// the phase began, as a `cached_mib` detail row, and the note when that is at least a
    /// quarter of what the phase moved (its MiB/s rows × its time; the files' size if smaller)
    /// and 1 MiB. `None` when no file could be read.
    fn cached_by_uncached_io(
        &mut self,
        phase: &str,
        headline: &[(MetricId, f64)],
        wall: Duration,
    ) -> Option<(MetricId, f64)> {
        let files = self.uncached.as_deref()?;
        let from = self.uncached_from.take().unwrap_or(0);
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        let (now, size, read) = cached_bytes(files);
        if read == 0 {
            return None;
        }
        let cached = now.saturating_sub(from);
        let moved = mib_moved(headline, wall, |_| true);
        let (cached, base) = (mib(cached), moved.min(mib(size)));
        if cached >= 1.0 && base > 0.0 && cached >= 0.25 * base {
            self.sample.notes.push(format!(
                "{phase}: {}{cached:.0} MiB of its files while it moved {moved:.0} MiB: the kernel kept pages the requests asked it to drop (readahead they did not read stays cached, which fadvise = \"random\" avoids; ext4 keeps the pages of overwrites: doc/io-path.md)",
                PATH_NOTES[1].0
            ));
        }
        Some((
            MetricId::lower("cached_mib", crate::metric::Unit::Mib).with_role(crate::metric::Role::Detail),
            cached,
        ))
    }

    /// The three steps for a pool phase: [`Phases::begin`] with the policy's caches,
    /// [`Phases::pool`], `headline` from the run and its wall time, [`Phases::record`].
    /// Returns the workers' outputs.
    pub fn run_pool<W: Worker>(
        &mut self,
        phase: &str,
        pool: WorkerPool,
        workers: Vec<W>,
        policy: &Policy,
        headline: impl FnOnce(&PoolRun<W::Output>, Duration) -> Result<Vec<(MetricId, f64)>, EngineError>,
    ) -> Result<Vec<W::Output>, EngineError> {
        self.begin(phase, policy.caches);
        let t = self.pool(pool, workers)?;
        let metrics = headline(&t.value, t.wall)?;
        self.record(phase, &t, metrics, policy);
        Ok(t.value.outputs)
    }

    /// [`Phases::run_pool`] for a phase made of `passes.len()` passes over the same work, each
    /// with its own workers: every pass begins as the phase does (so with
    /// [`Caches::DropIfAsked`] the caches are dropped before each pass, outside the timed
    /// region), and the phase's time is the sum of the passes' pool times; CPU is the
    /// time-weighted mean, latencies are every pass's merged. Workloads use it where one pass
    /// is intrinsically short (bonnie's `stat_passes`, `read_passes`): the phase times the
    /// whole, so it can reach the minimum time without changing what one operation is.
    /// Returns every pass's worker outputs, in order.
    pub fn run_passes<W: Worker>(
        &mut self,
        phase: &str,
        passes: Vec<Vec<W>>,
        policy: &Policy,
        headline: impl FnOnce(u64, Duration) -> Result<Vec<(MetricId, f64)>, EngineError>,
    ) -> Result<Vec<W::Output>, EngineError> {
        let mut total: Option<Timed<PoolRun<W::Output>>> = None;
        for workers in passes {
            self.begin(phase, policy.caches);
            let t = self.measure_pool(WorkerPool::new().sample_latency(policy.sampling), workers)?;
            total = Some(match total {
                None => t,
                Some(acc) => merge_passes(acc, t),
            });
        }
        let Some(mut t) = total else { return Ok(Vec::new()) };
        // Other processes get the whole phase's histogram, once.
        self.ctx.sync.pool_measured(&t.value.latency, t.value.stonewall);
        t.latency = t.value.latency.summary();
        t.bins = t.value.latency.log_bins();
        let metrics = headline(t.value.ops, t.wall)?;
        self.record(phase, &t, metrics, policy);
        Ok(t.value.outputs)
    }

    /// The repeat's phases and notes (with the sampled-latency note, then the collected
    /// short-phase note, last).
    pub fn finish(mut self) -> RawSample {
        if !self.sampled.is_empty() {
            self.sample.notes.push(format!(
                "latencies of {} sampled: one operation in {SAMPLE_EVERY} timed, at random intervals ({SAMPLES} of them); rates count every operation, and lat_max is the largest sampled",
                self.sampled.join(", ")
            ));
        }
        if let Some(Short::Collect { limit, family, raise }) = self.collect {
            self.sample.notes.push(format!(
                "{family} phases under {} s ({}): too short to time reliably; raise {raise}",
                limit.as_secs_f64(),
                self.collected.join(", ")
            ));
        }
        self.sample
    }
}

/// The words after `<phase>: ` of the notes a phase writes when its I/O took another path than
/// asked (O_DIRECT buffered, uncached I/O cached), each with the words that name its kind: the
/// figures vary per repeat, so the report groups them by these (`report::build`).
pub const PATH_NOTES: &[(&str, &str)] = &[
    (
        "its files are open with O_DIRECT, yet it dirtied ",
        "its files are open with O_DIRECT, yet the phase dirtied page cache: the filesystem buffered the direct I/O",
    ),
    (
        "its I/O asked for no caching (RWF_DONTCACHE), yet the page cache gained ",
        "its I/O asked for no caching (RWF_DONTCACHE), yet the page cache gained part of its files",
    ),
];

/// MiB a phase of `wall` moved by its headline MiB/s rows that `which` picks.
fn mib_moved(headline: &[(MetricId, f64)], wall: Duration, which: impl Fn(&MetricId) -> bool) -> f64 {
    headline
        .iter()
        .filter(|(m, _)| m.unit == crate::metric::Unit::MibPerSec && which(m))
        .map(|(_, v)| v * wall.as_secs_f64())
        .sum()
}

/// The bytes of `files` in the page cache, their total size, and how many could be read.
fn cached_bytes(files: &[std::path::PathBuf]) -> (u64, u64, usize) {
    let (mut cached, mut size, mut read) = (0u64, 0u64, 0usize);
    for (r, len) in files.iter().filter_map(|f| crate::host::path::resident_bytes(f).ok()) {
        cached += r;
        size += len;
        read += 1;
    }
    (cached, size, read)
}

/// Pages dirtied on the machine since boot (`nr_dirtied` in /proc/vmstat); `None` if unreadable.
fn pages_dirtied() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/vmstat").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("nr_dirtied ")?.trim().parse().ok())
}

/// Two passes of one phase as one measurement: wall times and operations add, CPU is weighted
/// by wall time, latencies and outputs are merged (see [`Phases::run_passes`]).
fn merge_passes<O>(a: Timed<PoolRun<O>>, b: Timed<PoolRun<O>>) -> Timed<PoolRun<O>> {
    let mut m = a.then(b, |mut x, y| {
        x.wall += y.wall;
        x.ops += y.ops;
        x.latency.merge(&y.latency);
        x.sample_every = x.sample_every.max(y.sample_every);
        x.outputs.extend(y.outputs);
        x
    });
    m.sample_every = m.value.sample_every;
    m
}

/// Runs `workers` on a worker pool outside any phase (no meters, nothing recorded): untimed
/// preparation, and tests of a worker's own behaviour.
pub fn untimed<W: Worker>(workers: Vec<W>, interrupt: &AtomicBool) -> Result<PoolRun<W::Output>, EngineError> {
    WorkerPool::new().run(workers, interrupt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::{Role, Unit};
    use crate::pool::{FnWorker, Step};

    fn with_ctx(f: impl FnOnce(&RunContext)) {
        let flag = AtomicBool::new(false);
        let dir = std::env::temp_dir();
        f(&RunContext::quiet(&dir, &flag));
    }

    fn counted(n: u64) -> Vec<FnWorker<impl FnMut() -> Result<Step, EngineError>>> {
        let mut left = n;
        vec![FnWorker(move || {
            if left == 0 {
                return Ok(Step::Done);
            }
            left -= 1;
            Ok(Step::Op)
        })]
    }

    /// How many CPUs the calling thread may run on.
    fn cpus_allowed() -> usize {
        // SAFETY: a zeroed cpu_set_t of the size passed is what sched_getaffinity fills.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        assert_eq!(rc, 0, "sched_getaffinity");
        // SAFETY: CPU_COUNT reads the set filled above.
        unsafe { libc::CPU_COUNT(&set) as usize }
    }

    #[test]
    fn a_single_worker_runs_pinned_when_asked_and_several_are_left_to_the_scheduler() {
        let all = cpus_allowed();
        with_ctx(|ctx| {
            let seen = |p: &mut Phases, workers: usize| -> Vec<usize> {
                let ws: Vec<_> = (0..workers)
                    .map(|_| {
                        let mut done = false;
                        FnWorker(move || {
                            if done {
                                return Ok(Step::Done);
                            }
                            done = true;
                            Ok(Step::Op)
                        })
                    })
                    .collect();
                // Each worker's first operation notes its thread's CPUs through a channel.
                let (tx, rx) = std::sync::mpsc::channel();
                let ws: Vec<_> = ws
                    .into_iter()
                    .map(|mut w| {
                        let tx = tx.clone();
                        FnWorker(move || {
                            let _ = tx.send(cpus_allowed());
                            (w.0)()
                        })
                    })
                    .collect();
                p.pool(WorkerPool::new(), ws).expect("pool");
                drop(tx);
                rx.iter().collect()
            };
            let mut p = Phases::new(ctx);
            assert!(seen(&mut p, 1).iter().all(|&n| n == all), "not pinned unless asked");
            p.pin_single_workers();
            assert!(seen(&mut p, 1).iter().all(|&n| n == 1), "one worker: one CPU");
            assert_eq!(cpus_allowed(), all, "the calling thread's affinity is restored");
            assert!(seen(&mut p, 2).iter().all(|&n| n == all), "two workers: not pinned");
        });
    }

    const BONNIE: Short = Short::Each {
        limit: MIN_TIME,
        prefix: "",
        aside: " (where bonnie++ prints +++++)",
        raise: "its size",
    };

    #[test]
    fn short_phase_notes_keep_their_texts() {
        with_ctx(|ctx| {
            let mut p = Phases::new(ctx);
            let quick = p.region(|| Ok(())).expect("region");
            let each = Policy::new().short(BONNIE);
            p.record("rewrite", &quick, vec![], &each);
            let fileio = Policy::new().short(Short::Each {
                limit: MIN_TIMED_RUN,
                prefix: "fileio ",
                aside: "",
                raise: "time or requests",
            });
            p.record("rndrd", &quick, vec![], &fileio);
            let mongo = Policy::new().short(Short::Collect {
                limit: MIN_TIME,
                family: "mongo",
                raise: "files",
            });
            p.record("create", &quick, vec![], &mongo);
            p.record("stat", &quick, vec![], &mongo);
            p.record("ignored", &quick, vec![], &Policy::new());
            let s = p.finish();
            assert_eq!(
                s.notes,
                [
                    "rewrite ran under 0.5 s (where bonnie++ prints +++++): too short to time reliably; raise its size",
                    "fileio rndrd ran under 1 s: too short to time reliably; raise time or requests",
                    "mongo phases under 0.5 s (create, stat): too short to time reliably; raise files",
                ]
            );
            assert_eq!(s.phases.len(), 5);
        });
    }

    #[test]
    fn long_phases_get_no_note() {
        with_ctx(|ctx| {
            let mut p = Phases::new(ctx);
            let mut t = p.region(|| Ok(())).expect("region");
            t.wall = MIN_TIME;
            p.record("seq_create", &t, vec![], &Policy::new().short(BONNIE));
            assert!(p.finish().notes.is_empty());
        });
    }

    #[test]
    fn pool_phase_has_headline_then_the_latency_set() {
        with_ctx(|ctx| {
            let mut p = Phases::new(ctx);
            let policy = Policy::new().latency(LatencySet::Core);
            let out = p
                .run_pool("ops", WorkerPool::new(), counted(1000), &policy, |run, wall| {
                    assert_eq!(run.ops, 1000);
                    Ok(vec![(
                        MetricId::higher("rate", Unit::OpsPerSec),
                        run.ops as f64 / wall.as_secs_f64(),
                    )])
                })
                .expect("pool phase");
            assert_eq!(out.len(), 1);
            let full = Policy::new().latency(LatencySet::Full);
            p.run_pool("all", WorkerPool::new(), counted(10), &full, |_, _| Ok(vec![]))
                .expect("pool phase");
            let s = p.finish();
            // Detail rows aside (the device's counters, on a block device only).
            let names = |i: usize| -> Vec<&str> {
                s.phases[i]
                    .metrics
                    .iter()
                    .filter(|(m, _)| m.role != Role::Detail)
                    .map(|(m, _)| m.name.as_str())
                    .collect()
            };
            assert_eq!(names(0), ["rate", "lat_p50", "lat_p99", "lat_max"]);
            assert_eq!(names(1), ["lat_p50", "lat_p95", "lat_p99", "lat_p999", "lat_max"]);
            let detail: Vec<&str> = s.phases[0]
                .metrics
                .iter()
                .filter(|(m, _)| m.role == Role::Detail)
                .map(|(m, _)| m.name.as_str())
                .collect();
            let on_device = crate::host::diskstat::device_of(ctx.dir).is_some();
            let expected: &[&str] = if on_device {
                &[
                    "device_reads",
                    "device_read_mib",
                    "device_writes",
                    "device_write_mib",
                    "device_flushes",
                ]
            } else {
                &[]
            };
            assert_eq!(detail, expected, "directory on a block device: {on_device}");
            assert!(s.phases[0].metrics[1..]
                .iter()
                .all(|(m, _)| matches!(m.role, Role::Latency | Role::Detail)));
            assert!(s.phases[0].wall > Duration::ZERO);
        });
    }

    #[test]
    fn a_sampled_phase_says_so_in_detail_rows_and_one_note() {
        with_ctx(|ctx| {
            let mut p = Phases::new(ctx);
            let policy = Policy::new().latency(LatencySet::Core);
            let rate = |run: &PoolRun<()>, wall: Duration| {
                Ok(vec![(
                    MetricId::higher("rate", Unit::OpsPerSec),
                    run.ops as f64 / wall.as_secs_f64(),
                )])
            };
            let every = WorkerPool::new().sample_latency(Sampling::Every(8));
            p.run_pool("sampled", every, counted(4000), &policy, rate)
                .expect("pool phase");
            p.run_pool("full", WorkerPool::new(), counted(4000), &policy, rate)
                .expect("pool phase");
            // Through the passes of one phase, by its policy.
            let passes = vec![counted(3000), counted(3000)];
            p.run_passes("passes", passes, &policy.sample_latency(Sampling::Every(4)), |_, _| {
                Ok(vec![])
            })
            .expect("passes");
            let s = p.finish();
            let value = |i: usize, name: &str| {
                s.phases[i].metrics.iter().find(|(m, _)| m.name == name).map(|(m, v)| {
                    assert_eq!(m.role, Role::Detail, "{name}");
                    *v
                })
            };
            assert_eq!(value(0, SAMPLE_EVERY), Some(8.0));
            let timed = value(0, SAMPLES).expect("lat_samples");
            assert!(timed > 0.0 && timed < 4000.0, "{timed}");
            assert_eq!(value(1, SAMPLE_EVERY), None, "a fully timed phase has no sampling rows");
            assert_eq!(value(1, SAMPLES), None);
            assert_eq!(value(2, SAMPLE_EVERY), Some(4.0));
            let timed = value(2, SAMPLES).expect("lat_samples");
            assert!(timed > 0.0 && timed < 6000.0, "{timed}");
            let notes: Vec<&String> = s.notes.iter().filter(|n| n.contains(SAMPLE_EVERY)).collect();
            assert_eq!(notes.len(), 1, "{:?}", s.notes);
            assert!(
                notes[0].starts_with("latencies of sampled, passes sampled:"),
                "{}",
                notes[0]
            );
        });
    }

    #[test]
    fn pool_then_times_the_tail_and_errors_propagate() {
        with_ctx(|ctx| {
            let p = Phases::new(ctx);
            let t = p
                .pool_then(WorkerPool::new(), counted(1), |_| {
                    std::thread::sleep(Duration::from_millis(30));
                    Ok(())
                })
                .expect("pool");
            assert!(t.wall >= Duration::from_millis(30), "{:?}", t.wall);
            let e = p.region(|| -> Result<(), EngineError> { Err(EngineError::Interrupted) });
            assert!(matches!(e, Err(EngineError::Interrupted)));
        });
    }

    #[test]
    fn children_cpu_is_added_to_the_process_share() {
        with_ctx(|ctx| {
            let p = Phases::new(ctx);
            let t = p
                .with_children(None, || {
                    let mut c = std::process::Command::new("/bin/sh");
                    c.args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"]);
                    let f = crate::child::run(
                        &mut c,
                        crate::child::Sink::Null,
                        crate::child::Sink::Null,
                        Default::default(),
                    )
                    .expect("sh");
                    assert!(f.status.success());
                    Ok(f.children_cpu)
                })
                .expect("region");
            assert!(t.cpu.process_pct > 30.0, "{:?} over {:?}", t.cpu, t.wall);
        });
    }

    /// The uncached-I/O check on the real page cache: 16 MiB written with `RWF_DONTCACHE`
    /// leave the cache as it was (no note); the same bytes written plainly, as by a kernel
    /// that ignored the flag, are caught (the row and the note); and pages cached before the
    /// phase began are not counted against it.
    #[test]
    fn uncached_io_that_the_page_cache_keeps_is_caught() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir_in("/var/tmp").expect("tempdir");
        let file = dir.path().join("f");
        let block = vec![7u8; 1 << 20];
        let flag = AtomicBool::new(false);
        let ctx = RunContext::quiet(dir.path(), &flag);
        let written = |phases: &mut Phases, name: &str, uncached: bool| -> (Option<f64>, bool) {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(&file)
                .unwrap();
            phases.uncached(vec![file.clone()]);
            phases.begin(name, Caches::Keep);
            let t = phases
                .region(|| {
                    for i in 0..16u64 {
                        if uncached {
                            crate::sysio::pwrite_all_flags(&f, &block, i << 20, crate::sysio::RWF_DONTCACHE)
                        } else {
                            f.write_all_at(&block, i << 20)
                        }
                        .map_err(|e| EngineError::io("write", e))?;
                    }
                    f.sync_all().map_err(|e| EngineError::io("fsync", e))
                })
                .unwrap();
            let mib_s = 16.0 / t.wall.as_secs_f64();
            phases.record(
                name,
                &t,
                vec![(MetricId::higher("write_mib_s", Unit::MibPerSec), mib_s)],
                &Policy::new(),
            );
            let sample = std::mem::take(&mut phases.sample);
            let row = sample.phases[0]
                .metrics
                .iter()
                .find(|(m, _)| m.name == "cached_mib")
                .map(|(_, v)| *v);
            (
                row,
                sample
                    .notes
                    .iter()
                    .any(|n| n.starts_with(&format!("{name}: its I/O asked for no caching"))),
            )
        };
        let mut phases = Phases::new(&ctx);
        let (row, noted) = written(&mut phases, "uncached", true);
        assert!(row.is_some_and(|v| v < 4.0) && !noted, "{row:?} {noted}");
        // The flag ignored: the page cache keeps all 16 MiB.
        std::fs::remove_file(&file).unwrap();
        let (row, noted) = written(&mut phases, "ignored", false);
        assert!(row.is_some_and(|v| v >= 12.0) && noted, "{row:?} {noted}");
        // The same file again: its 16 MiB were cached before this phase, which adds nothing.
        let (row, noted) = written(&mut phases, "cached before", true);
        assert!(row.is_some_and(|v| v < 4.0) && !noted, "{row:?} {noted}");
    }
}
