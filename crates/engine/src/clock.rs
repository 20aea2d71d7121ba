//! The hot loop's clock: one read per operation, as cheap as the machine allows.
//!
//! The worker pool reads a clock once per operation (the end of one operation is the start of
//! the next), so the read itself is part of every measured operation's cost. On a 0.85 µs tmpfs
//! `stat` the vDSO `clock_gettime(CLOCK_MONOTONIC)` (22 ns here) is 2.6 % of the operation;
//! the CPU's time-stamp counter read directly (`rdtsc`, 12 ns here) is half that. (Where even
//! that is too much, the pool samples: `engine::pool::Sampling`.)
//!
//! [`best`] picks, once per process:
//! - [`Tsc`] when the kernel itself keeps time with the TSC (`current_clocksource` is `tsc`:
//!   the kernel has found it invariant and synchronised across CPUs, so readings from
//!   different threads compare) — read and converted to nanoseconds by the `quanta` crate,
//!   which calibrates the counter against CLOCK_MONOTONIC once per process (under 1 ms here,
//!   at most 200 ms) and falls back to CLOCK_MONOTONIC itself when the CPU does not report an
//!   invariant TSC;
//! - [`Monotonic`] (CLOCK_MONOTONIC through the vDSO) otherwise, or when the environment sets
//!   `FSBENCH_CLOCK=monotonic` (to compare the two, or to distrust a TSC).
//!
//! Invariants: [`OpClock::now`] allocates nothing and takes no lock; readings of one clock
//! from any thread of the process compare; [`OpClock::ns_between`] is 0 when `end` is not
//! after `start`, never a wrap-around. The pool's wall time and rates keep coming from
//! `std::time::Instant` (CLOCK_MONOTONIC) read once at each worker's start and end; this
//! clock only times single operations and the deadline.
//!
//! References: Linux `Documentation/virt/kvm/x86/timekeeping.rst` (when the TSC is a usable
//! clocksource), the `quanta` crate's documentation (calibration).

use std::sync::OnceLock;

/// A clock the hot loop reads once per operation; see the module documentation.
pub trait OpClock: Copy + Send + Sync {
    /// The current reading, in this clock's own ticks.
    fn now(&self) -> u64;
    /// Nanoseconds from reading `start` to reading `end` (0 if `end <= start`).
    fn ns_between(&self, start: u64, end: u64) -> u64;
    /// How many ticks make at least `ns` nanoseconds (saturating), for deadlines checked
    /// against readings without a conversion per operation. A calibrated clock rounds up by
    /// 1/[`DEADLINE_MARGIN_INV`] so that a deadline never passes early.
    fn ticks_in(&self, ns: u64) -> u64;
}

/// TSC deadlines are padded by 1/`DEADLINE_MARGIN_INV` (0.1 %): quanta's calibration (under a
/// millisecond) is good to about 0.05 % here (2.6990 vs 2.7000 GHz in repeated calibrations),
/// so a 30 ms deadline could otherwise end 15 µs early. The margin keeps every deadline at or
/// after its limit in real time; rates never depend on it (they use the workers' `Instant`
/// wall time).
pub const DEADLINE_MARGIN_INV: u64 = 1000;

/// CLOCK_MONOTONIC in nanoseconds (the clock `std::time::Instant` reads, without its
/// `Duration` arithmetic).
#[derive(Clone, Copy, Debug, Default)]
pub struct Monotonic;

impl OpClock for Monotonic {
    #[inline(always)]
    fn now(&self) -> u64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid timespec; CLOCK_MONOTONIC exists on every Linux.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        (ts.tv_sec as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(ts.tv_nsec as u64)
    }

    #[inline(always)]
    fn ns_between(&self, start: u64, end: u64) -> u64 {
        end.saturating_sub(start)
    }

    fn ticks_in(&self, ns: u64) -> u64 {
        ns
    }
}

/// The CPU's time-stamp counter, calibrated against CLOCK_MONOTONIC by `quanta`.
#[derive(Clone, Copy, Debug)]
pub struct Tsc {
    clock: &'static quanta::Clock,
    /// Nanoseconds in 2^32 ticks.
    ns_per_2_32: u64,
}

impl Tsc {
    /// The process's one `quanta` clock, calibrated on first use.
    fn calibrated() -> Tsc {
        static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();
        let clock = CLOCK.get_or_init(quanta::Clock::new);
        let ns_per_2_32 = clock.delta_as_nanos(1, 1 + (1 << 32)).max(1);
        Tsc { clock, ns_per_2_32 }
    }
}

impl OpClock for Tsc {
    #[inline(always)]
    fn now(&self) -> u64 {
        self.clock.raw()
    }

    #[inline(always)]
    fn ns_between(&self, start: u64, end: u64) -> u64 {
        self.clock.delta_as_nanos(start, end)
    }

    fn ticks_in(&self, ns: u64) -> u64 {
        let ticks = (u128::from(ns) << 32) / u128::from(self.ns_per_2_32);
        let padded = ticks + ticks / u128::from(DEADLINE_MARGIN_INV) + 1;
        u64::try_from(padded).unwrap_or(u64::MAX)
    }
}

/// The clock [`best`] chose.
#[derive(Clone, Copy, Debug)]
pub enum Best {
    /// The time-stamp counter.
    Tsc(Tsc),
    /// CLOCK_MONOTONIC.
    Monotonic(Monotonic),
}

impl Best {
    /// A short description for reports and `fsbench doctor`.
    pub fn describe(&self) -> &'static str {
        match self {
            Best::Tsc(_) => "TSC (rdtsc, calibrated against CLOCK_MONOTONIC)",
            Best::Monotonic(_) => "CLOCK_MONOTONIC (clock_gettime)",
        }
    }
}

/// The cheapest trustworthy per-operation clock of this machine, chosen (and calibrated)
/// once per process; see the module documentation.
pub fn best() -> Best {
    static BEST: OnceLock<Best> = OnceLock::new();
    *BEST.get_or_init(|| {
        let forced = std::env::var("FSBENCH_CLOCK").is_ok_and(|v| v.eq_ignore_ascii_case("monotonic"));
        if !forced && cfg!(target_arch = "x86_64") && kernel_uses_tsc() {
            Best::Tsc(Tsc::calibrated())
        } else {
            Best::Monotonic(Monotonic)
        }
    })
}

/// Whether the kernel keeps time with the TSC (it then trusts it across CPUs).
fn kernel_uses_tsc() -> bool {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .is_ok_and(|s| s.trim() == "tsc")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Both clocks against `Instant` over a sleep: the conversion to nanoseconds is right to
    /// within 1 %, and `ticks_in` inverts it. Each clock reading is bracketed by two `Instant`
    /// readings (outer `i0 ≤ t0 ≤ i0b`, `i1a ≤ t1 ≤ i1`), so the true interval lies between
    /// `i1a - i0b` and `i1 - i0` whatever the scheduler does: a preempted test widens the
    /// bracket, it cannot make a right clock fail.
    fn agrees_with_instant<C: OpClock>(c: C) {
        let (i0, t0, i0b) = (Instant::now(), c.now(), Instant::now());
        std::thread::sleep(Duration::from_millis(50));
        let (i1a, t1, i1) = (Instant::now(), c.now(), Instant::now());
        let ns = c.ns_between(t0, t1) as f64;
        let inner = (i1a - i0b).as_nanos() as f64;
        let outer = (i1 - i0).as_nanos() as f64;
        assert!(
            ns >= 0.99 * inner - 1_000.0 && ns <= 1.01 * outer + 1_000.0,
            "{ns} ns outside [{inner}, {outer}]"
        );
        assert_eq!(c.ns_between(t1, t0), 0, "backwards is zero, not a wrap");
        let ticks = c.ticks_in(1_000_000_000);
        let back = c.ns_between(t0, t0 + ticks) as f64;
        let padded = 1e9 * (1.0 + 1.0 / DEADLINE_MARGIN_INV as f64) + 1e3;
        assert!((1e9 - 1e3..=padded).contains(&back), "1 s → {ticks} ticks → {back} ns");
        assert!(c.ticks_in(u64::MAX) >= ticks);
    }

    #[test]
    fn monotonic_measures_nanoseconds() {
        agrees_with_instant(Monotonic);
    }

    #[test]
    fn tsc_is_calibrated_to_nanoseconds() {
        // Calibrates whether or not the kernel uses the TSC (quanta falls back to
        // CLOCK_MONOTONIC without an invariant TSC, which must also hold).
        agrees_with_instant(Tsc::calibrated());
    }

    #[test]
    fn best_is_chosen_once_and_described() {
        let b = best();
        assert!(!b.describe().is_empty());
        assert_eq!(std::mem::discriminant(&b), std::mem::discriminant(&best()));
        if kernel_uses_tsc() && std::env::var_os("FSBENCH_CLOCK").is_none() && cfg!(target_arch = "x86_64") {
            assert!(
                matches!(b, Best::Tsc(_)),
                "the kernel trusts the TSC, so should the pool"
            );
        }
    }
}
