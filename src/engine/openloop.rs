//! Open-loop load: operations issued at a fixed or Poisson rate from their *intended* start
//! times, whatever the filesystem does, with latency measured from the intended start.
//!
//! A closed-loop worker issues its next operation when the last one returns, so while the
//! filesystem stalls no new requests arrive and a 200 ms stall counts as one slow operation
//! (*coordinated omission*, Gil Tene's term; fio's `rate_iops` with `rate_process=poisson`,
//! wrk2 and HdrHistogram's `recordValueWithExpectedInterval` are the references read). Here the
//! rate `R` is split evenly between the pool's `N` workers: worker `i` follows its own schedule
//! of rate `R / N` — for [`Arrival::Fixed`] the starts `(i + k·N) / R` seconds after the
//! common start, for [`Arrival::Poisson`] exponential gaps of mean `N / R` drawn from a
//! generator seeded by the seed and the worker index (a Poisson process of rate `R` split at
//! random into `N` is `N` independent Poisson processes of rate `R / N`). As in fio, each
//! worker is its own queue: a worker stuck in a slow operation does not hand its requests to
//! an idle one.
//!
//! The hot loop of one worker (the clock is CLOCK_MONOTONIC in ns, so a sleep can target an
//! intended start with `clock_nanosleep(TIMER_ABSTIME)`; the worker's timer slack is set to
//! 1 ns for the run, so the kernel wakes it on time):
//!
//! ```text
//! now = start
//! loop {
//!     intended = schedule.next                  // never moves because of the filesystem
//!     stop if intended ≥ deadline or now ≥ deadline
//!     if now < intended { sleep until intended; from = now = clock() }   // idle: on time
//!     else { from = intended }                  // behind schedule: starts at once
//!     late = max(late, now − intended)
//!     worker.op()
//!     t1 = clock()
//!     response.record(t1 − from); service.record(t1 − now); window[t1].record(t1 − from)
//!     now = t1; schedule.advance()
//! }
//! ```
//!
//! An operation whose worker was idle counts from when the worker woke, not from its intended
//! start: the timer's wake-up lateness (about 25 µs here with a 1 ns timer slack, more when
//! the machine is busy) is the generator's own, and counting it would add it to every
//! operation of a lightly loaded filesystem (fio, whose latency runs from submission, does not
//! count it either). Every wait the filesystem caused — a worker still busy with an earlier
//! operation when the next one was due — counts in full.
//!
//! One clock read per operation while a worker is behind schedule (the end of one operation is
//! the start of the next), two when it slept. Nothing is allocated or
//! shared in the loop. When the workers cannot sustain the rate, the run says so: the
//! operations the schedule asked for before the deadline that were never issued
//! ([`OpenStats::unissued`]) and the latest start behind its intended time
//! ([`OpenStats::max_late_ns`]); the rate is never lowered silently.

use crate::engine::clock::{Monotonic, OpClock};
use crate::engine::latency::LatencyRecorder;
use crate::engine::pool::{Exit, Finished, Step, Worker, MAX_SECONDS};
use crate::engine::windows::WindowCounts;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// How intended start times are spaced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Evenly spaced starts (fio's default `rate_process=linear`).
    #[default]
    Fixed,
    /// Exponentially distributed gaps: a Poisson process (fio's `rate_process=poisson`).
    Poisson,
}

impl Arrival {
    /// The name as written in suite files.
    pub fn name(self) -> &'static str {
        match self {
            Arrival::Fixed => "fixed",
            Arrival::Poisson => "poisson",
        }
    }
}

/// An open-loop rate: all workers together start `per_s` operations per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// Operations per second, all workers together (> 0).
    pub per_s: f64,
    /// How starts are spaced.
    pub arrival: Arrival,
    /// Seed of the Poisson gaps (worker `i` draws from `seed` and `i`).
    pub seed: u64,
}

/// What the open loop measured beyond the pool's figures (all workers).
#[derive(Clone, Debug)]
pub struct OpenStats {
    /// The rate asked for, operations per second.
    pub asked_per_s: f64,
    /// How starts were spaced.
    pub arrival: Arrival,
    /// Operations the schedules asked for before the deadline that were never issued (the
    /// backlog left when the deadline came); 0 when the workers kept up.
    pub unissued: u64,
    /// The latest start of an issued operation behind its intended time, in nanoseconds.
    pub max_late_ns: u64,
    /// Service time of every operation (from its actual start), merged.
    pub service: LatencyRecorder,
}

/// One worker's share of the open loop, kept in its [`Finished`].
#[derive(Clone, Debug)]
pub(crate) struct OpenPart {
    pub unissued: u64,
    pub max_late_ns: u64,
    pub service: LatencyRecorder,
}

impl OpenStats {
    /// The workers' parts added up.
    pub(crate) fn merged<'a>(rate: Rate, parts: impl Iterator<Item = &'a OpenPart>) -> OpenStats {
        let mut s = OpenStats {
            asked_per_s: rate.per_s,
            arrival: rate.arrival,
            unissued: 0,
            max_late_ns: 0,
            service: LatencyRecorder::new(),
        };
        for p in parts {
            s.unissued += p.unissued;
            s.max_late_ns = s.max_late_ns.max(p.max_late_ns);
            s.service.merge(&p.service);
        }
        s
    }
}

/// One worker's intended start times (absolute CLOCK_MONOTONIC ns).
#[derive(Debug)]
struct Schedule {
    start: u64,
    /// The next intended start.
    next: u64,
    /// Starts issued so far by this worker (fixed spacing computes each from it, no drift).
    k: u64,
    index: u64,
    workers: u64,
    /// Nanoseconds between two starts of all workers together (`1e9 / R`).
    gap_ns: f64,
    arrival: Arrival,
    rng: SmallRng,
}

impl Schedule {
    fn new(start: u64, rate: Rate, index: usize, workers: usize) -> Schedule {
        let mut s = Schedule {
            start,
            next: start,
            k: 0,
            index: index as u64,
            workers: workers.max(1) as u64,
            gap_ns: 1e9 / rate.per_s,
            arrival: rate.arrival,
            rng: SmallRng::seed_from_u64(rate.seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        };
        s.next = match s.arrival {
            Arrival::Fixed => start + (s.index as f64 * s.gap_ns) as u64,
            Arrival::Poisson => start + s.exp_gap(),
        };
        s
    }

    /// An exponential gap of mean `N / R` seconds, in ns.
    #[inline]
    fn exp_gap(&mut self) -> u64 {
        let u: f64 = self.rng.gen();
        (-(1.0 - u).ln() * self.gap_ns * self.workers as f64) as u64
    }

    #[inline]
    fn advance(&mut self) {
        self.k += 1;
        self.next = match self.arrival {
            Arrival::Fixed => self.start + ((self.index + self.k * self.workers) as f64 * self.gap_ns) as u64,
            Arrival::Poisson => self.next + self.exp_gap(),
        };
    }
}

/// Sleeps until CLOCK_MONOTONIC reads `at_ns`, in slices of at most 50 ms so an interrupt is
/// seen; returns false when interrupted or aborted.
fn sleep_until(clock: Monotonic, at_ns: u64, interrupt: &AtomicBool, abort: &AtomicBool) -> bool {
    const SLICE_NS: u64 = 50_000_000;
    loop {
        if interrupt.load(Ordering::Relaxed) || abort.load(Ordering::Relaxed) {
            return false;
        }
        let now = clock.now();
        if now >= at_ns {
            return true;
        }
        let target = at_ns.min(now + SLICE_NS);
        let ts = libc::timespec {
            tv_sec: (target / 1_000_000_000) as libc::time_t,
            tv_nsec: (target % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: `ts` is a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
        unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
    }
}

/// The calling thread's timer slack set to 1 ns until dropped (then the old value again).
struct TimerSlack(Option<libc::c_ulong>);

impl TimerSlack {
    fn tight() -> TimerSlack {
        // SAFETY: PR_GET_TIMERSLACK takes no pointer and returns the slack in ns.
        let old = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
        if old < 0 {
            return TimerSlack(None);
        }
        // SAFETY: PR_SET_TIMERSLACK takes the new slack in ns as its argument.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
        TimerSlack(Some(old as libc::c_ulong))
    }
}

impl Drop for TimerSlack {
    fn drop(&mut self) {
        if let Some(old) = self.0 {
            // SAFETY: as in `tight`.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, old, 0, 0, 0) };
        }
    }
}

/// The open-loop hot loop of worker `index` of `workers` (see the module documentation), from
/// the start barrier to `deadline`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_one_open<W: Worker>(
    mut w: W,
    rate: Rate,
    index: usize,
    workers: usize,
    barrier: &Barrier,
    deadline: Duration,
    interrupt: &AtomicBool,
    abort: &AtomicBool,
) -> Result<Finished<W::Output>, Exit> {
    let clock = Monotonic;
    let seconds = (deadline.as_secs() as usize + 2).min(MAX_SECONDS);
    let mut per_second = vec![0u64; seconds];
    let mut windows = WindowCounts::new(seconds);
    let mut latency = LatencyRecorder::new();
    let mut service = LatencyRecorder::new();
    let _slack = TimerSlack::tight();
    barrier.wait();
    let start = Instant::now();
    let started = clock.now();
    let end_at = started.saturating_add(u64::try_from(deadline.as_nanos()).unwrap_or(u64::MAX));
    let mut sched = Schedule::new(started, rate, index, workers);
    let mut now = started;
    let (mut ops, mut max_late, mut deadline_hit) = (0u64, 0u64, false);
    let ended: Result<(), Exit> = loop {
        if interrupt.load(Ordering::Relaxed) {
            break Err(Exit::Interrupted);
        }
        if abort.load(Ordering::Relaxed) {
            break Err(Exit::Aborted);
        }
        let intended = sched.next;
        if intended >= end_at || now >= end_at {
            deadline_hit = true;
            break Ok(());
        }
        // Idle and on time: the operation counts from when the worker woke (the timer's own
        // lateness is the generator's, not the filesystem's). Behind: from its intended start.
        let from = if now < intended {
            if !sleep_until(clock, intended, interrupt, abort) {
                continue; // the flags are read at the top
            }
            now = clock.now();
            now
        } else {
            intended
        };
        max_late = max_late.max(now - intended);
        match w.op() {
            Ok(Step::Op) => {}
            Ok(Step::Done) => break Ok(()),
            Err(e) => {
                abort.store(true, Ordering::Relaxed);
                break Err(Exit::Failed(e));
            }
        }
        let t1 = clock.now();
        let response = t1.saturating_sub(from);
        latency.record_ns(response);
        service.record_ns(t1.saturating_sub(now));
        let second = ((t1 - started) / 1_000_000_000) as usize;
        windows.record(second, response);
        per_second[second.min(seconds - 1)] += 1;
        ops += 1;
        now = t1;
        sched.advance();
    };
    // The backlog: starts the schedule asked for before the deadline that never happened.
    let mut unissued = 0;
    if ended.is_ok() && deadline_hit {
        while sched.next < end_at {
            unissued += 1;
            sched.advance();
        }
    }
    ended?;
    if let Err(e) = w.end() {
        abort.store(true, Ordering::Relaxed);
        return Err(Exit::Failed(e));
    }
    let end = Instant::now();
    let reached = per_second.iter().rposition(|&n| n > 0).map_or(0, |i| i + 1);
    per_second.truncate(reached);
    Ok(Finished {
        start,
        end,
        ops,
        latency,
        output: w.finish(),
        deadline_hit,
        per_second,
        ops_before: ops,
        windows,
        open: Some(OpenPart {
            unissued,
            max_late_ns: max_late,
            service,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::pool::{FnWorker, WorkerPool};
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    /// Coordinated omission, shown: a writer appends 4 KiB to a file under a lock that another
    /// thread holds for `STALL` once, one second in. Open loop at `R` starts per second for
    /// `T` seconds: the starts due during the stall wait for it, the `k`-th of them
    /// `STALL − k/R`, so about `STALL·R` operations are spread evenly over 0 … `STALL` and the
    /// quantile `q` is `STALL − (1 − q)·T` (while `(1 − q)·T < STALL`): 170 ms for p99 with
    /// `STALL` = 200 ms, `T` = 3 s. Closed loop: the stall is one slow operation among tens of
    /// thousands, and p99 stays at the write's own time.
    #[test]
    fn an_injected_stall_raises_the_open_loop_p99_as_predicted_and_not_the_closed_loop_one() {
        const STALL: Duration = Duration::from_millis(200);
        const T: Duration = Duration::from_secs(3);
        let run = |open: Option<Rate>| {
            let dir = tempfile::tempdir().unwrap();
            let file = std::fs::File::create(dir.path().join("log")).unwrap();
            let lock = Arc::new(Mutex::new(file));
            let holder = {
                let lock = Arc::clone(&lock);
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_secs(1));
                    let _held = lock.lock().unwrap();
                    std::thread::sleep(STALL);
                })
            };
            let buf = [7u8; 4096];
            let mut written = 0u64;
            let worker = FnWorker(|| {
                let mut f = lock.lock().unwrap();
                f.write_all(&buf)
                    .map_err(|e| crate::engine::EngineError::io("write", e))?;
                written += 1;
                if written % 256 == 0 {
                    f.set_len(0)
                        .map_err(|e| crate::engine::EngineError::io("truncate", e))?;
                }
                Ok(Step::Op)
            });
            let pool = WorkerPool::with_deadline(T).open_loop(open);
            let r = pool.run(vec![worker], &AtomicBool::new(false)).unwrap();
            holder.join().unwrap();
            r
        };
        let open = run(Some(Rate {
            per_s: 1000.0,
            arrival: Arrival::Fixed,
            seed: 1,
        }));
        let closed = run(None);
        let predicted_ms = STALL.as_secs_f64() * 1e3 - 0.01 * T.as_secs_f64() * 1e3;
        let open_p99_ms = open.latency.quantile_us(0.99) / 1e3;
        let closed_p99_ms = closed.latency.quantile_us(0.99) / 1e3;
        eprintln!(
            "p99: open loop {open_p99_ms:.1} ms (predicted {predicted_ms:.0}), closed loop {closed_p99_ms:.3} ms"
        );
        assert!(
            (open_p99_ms - predicted_ms).abs() < 0.1 * predicted_ms,
            "open-loop p99 {open_p99_ms:.1} ms, predicted {predicted_ms:.0} ms"
        );
        assert!(closed_p99_ms < 20.0, "closed-loop p99 {closed_p99_ms:.1} ms");
        // The closed loop saw the stall too, once: its maximum is the stall.
        assert!(closed.latency.max_us() / 1e3 >= 0.9 * STALL.as_secs_f64() * 1e3);
        // The open loop kept its schedule: about R·T operations, nothing left unissued.
        let o = open.open.as_ref().unwrap();
        assert_eq!(o.unissued, 0);
        assert!((open.ops as f64 - 3000.0).abs() <= 3.0, "{} ops", open.ops);
        assert!(o.max_late_ns as f64 >= 0.9 * STALL.as_nanos() as f64);
        // Its windows: second 1 holds the stall's waits, second 0 does not.
        let p99_of = |w: usize| crate::metric::bins_quantile(&open.windows[w], 0.99).unwrap() as f64 / 1e6;
        assert!(p99_of(1) > 100.0 && p99_of(0) < 20.0, "{} {}", p99_of(0), p99_of(1));
    }

    #[test]
    fn an_unsustainable_rate_is_reported_not_lowered() {
        // Each operation takes 2 ms; 1,000 starts per second cannot be kept by one worker.
        let worker = FnWorker(|| {
            std::thread::sleep(Duration::from_millis(2));
            Ok(Step::Op)
        });
        let rate = Rate {
            per_s: 1000.0,
            arrival: Arrival::Poisson,
            seed: 3,
        };
        let r = WorkerPool::with_deadline(Duration::from_millis(500))
            .open_loop(Some(rate))
            .run(vec![worker], &AtomicBool::new(false))
            .unwrap();
        let o = r.open.as_ref().unwrap();
        assert!(r.ops < 260, "{} ops", r.ops);
        assert!(o.unissued > 200, "{} unissued", o.unissued);
        assert!(o.max_late_ns > 100_000_000, "{} ns late", o.max_late_ns);
        assert_eq!(o.asked_per_s, 1000.0);
    }

    fn starts(rate: Rate, index: usize, workers: usize, n: usize) -> Vec<u64> {
        let mut s = Schedule::new(0, rate, index, workers);
        (0..n)
            .map(|_| {
                let t = s.next;
                s.advance();
                t
            })
            .collect()
    }

    #[test]
    fn fixed_schedules_interleave_the_workers_evenly() {
        let rate = Rate {
            per_s: 1000.0,
            arrival: Arrival::Fixed,
            seed: 0,
        };
        assert_eq!(starts(rate, 0, 2, 3), vec![0, 2_000_000, 4_000_000]);
        assert_eq!(starts(rate, 1, 2, 3), vec![1_000_000, 3_000_000, 5_000_000]);
    }

    #[test]
    fn poisson_gaps_have_the_asked_mean_and_are_reproducible() {
        let rate = Rate {
            per_s: 10_000.0,
            arrival: Arrival::Poisson,
            seed: 7,
        };
        let a = starts(rate, 1, 4, 20_000);
        assert_eq!(a, starts(rate, 1, 4, 20_000), "same seed, same schedule");
        assert_ne!(a, starts(rate, 2, 4, 20_000), "workers draw their own gaps");
        let mean_gap = *a.last().unwrap() as f64 / a.len() as f64;
        // Each of 4 workers runs at 2,500/s: a mean gap of 400 µs, within 3 % for 20,000 gaps
        // (the standard error of an exponential mean is mean / √n = 0.7 %).
        assert!((mean_gap - 400_000.0).abs() < 12_000.0, "{mean_gap}");
        // Exponential: about e⁻¹ of the gaps exceed the mean.
        let gaps: Vec<u64> = a.windows(2).map(|w| w[1] - w[0]).collect();
        let over = gaps.iter().filter(|&&g| g as f64 > 400_000.0).count() as f64 / gaps.len() as f64;
        assert!((over - (-1f64).exp()).abs() < 0.02, "{over}");
    }
}
