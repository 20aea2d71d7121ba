//! Sizes set by time (issue 41): a workload whose warm-up left a phase under the minimum time
//! fsbench warns about ([`crate::phase::MIN_TIME`], [`crate::phase::MIN_TIMED_RUN`]) is given
//! more work for its measured repeats, through [`crate::Workload::resized`].
//!
//! The runner gives each workload the shortest warm-up time of each phase over the session's
//! variants ([`PhaseWalls`]), so the sizes chosen are the same for every variant and the
//! fastest one reaches the limit too. A knob (files, bytes, passes, seeks) grows by
//! [`factor`]: the power of two that makes the shortest phase it drives take at least
//! [`TARGET`] times the limit at the warm-up's speed, at most [`MAX_FACTOR`] (a phase that
//! took no measurable time is not stretched without end), rounded up to the knob's unit. A
//! power of two, so that sessions of one suite on one machine mostly land on the same sizes
//! (`compare` and `history` flag sessions whose sizes differ): a warm-up a little faster or
//! slower than the last session's rarely crosses a doubling.
//!
//! Invariants: a knob only grows; a phase at or above its limit changes nothing; every change
//! is one line saying what changed, from what to what, and which phase's time asked for it.

use std::time::Duration;

/// How many times the limit a resized phase aims at least, at its warm-up's speed: the
/// measured repeats of the fastest variant scatter around the warm-up's time (the first
/// repeat of a case often runs slow, or fast on a warm cache), so aiming at the limit itself
/// would leave about half of them under it. With the power-of-two factor a resized phase
/// takes 1.5 to 3 times the limit.
pub const TARGET: f64 = 1.5;

/// The most a knob is multiplied by in one session.
pub const MAX_FACTOR: f64 = 16.0;

/// The shortest wall time of each phase over the warm-ups of one workload's cases, in the
/// workload's phase order.
pub type PhaseWalls = [(String, Duration)];

/// A workload resized by time: its new spec and one line per change (`"files 40960 → 102400
/// (seq_create took 0.21 s in the fastest warm-up, under 0.5 s)"`).
#[derive(Clone, Debug, PartialEq)]
pub struct Resized {
    /// The spec its measured repeats run.
    pub kind: crate::WorkloadKind,
    /// What changed and why, one line each.
    pub changes: Vec<String>,
}

/// The factor a knob grows by so that a phase of `wall` reaches [`TARGET`] × `limit`: 1 when
/// the phase is not under `limit`, else the power of two at or above what it needs, at most
/// [`MAX_FACTOR`].
pub fn factor(wall: Duration, limit: Duration) -> f64 {
    if wall >= limit {
        return 1.0;
    }
    let want = TARGET * limit.as_secs_f64() / wall.as_secs_f64().max(1e-6);
    want.clamp(1.0, MAX_FACTOR).log2().ceil().exp2()
}

/// The shortest phase of `phases` in `walls` under `limit`, and the factor it asks for:
/// `None` when none of them is short.
pub fn shortest<'a>(walls: &'a PhaseWalls, phases: &[&str], limit: Duration) -> Option<(&'a str, Duration, f64)> {
    walls
        .iter()
        .filter(|(p, w)| phases.contains(&p.as_str()) && *w < limit)
        .min_by_key(|(_, w)| *w)
        .map(|(p, w)| (p.as_str(), *w, factor(*w, limit)))
}

/// `n` × `f` rounded up to a multiple of `unit` (at least `n`), saturating at `max`.
pub fn grow(n: u64, f: f64, unit: u64, max: u64) -> u64 {
    let unit = unit.max(1);
    let v = (n as f64 * f).ceil();
    let v = if v.is_finite() && v < max as f64 { v as u64 } else { max };
    v.div_ceil(unit).saturating_mul(unit).clamp(n, max.max(n))
}

/// The line of one change: `"{knob} {from} → {to} ({phase} took {wall} s in the fastest
/// warm-up, under {limit} s)"`.
pub fn change(
    knob: &str,
    from: impl std::fmt::Display,
    to: impl std::fmt::Display,
    phase: &str,
    wall: Duration,
    limit: Duration,
) -> String {
    format!(
        "{knob} {from} → {to} ({phase} took {:.2} s in the fastest warm-up, under {} s)",
        wall.as_secs_f64(),
        limit.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const HALF: Duration = Duration::from_millis(500);

    #[test]
    fn a_phase_at_the_limit_changes_nothing_and_a_short_one_grows_by_a_power_of_two() {
        assert_eq!(factor(HALF, HALF), 1.0);
        assert_eq!(factor(Duration::from_secs(3), HALF), 1.0);
        // 1.5 × 0.5 s / 0.25 s = 3: the next power of two.
        assert_eq!(factor(Duration::from_millis(250), HALF), 4.0);
        assert_eq!(factor(Duration::from_millis(375), HALF), 2.0);
        assert_eq!(factor(Duration::from_millis(374), HALF), 4.0);
        assert_eq!(factor(Duration::ZERO, HALF), MAX_FACTOR);
    }

    #[test]
    fn the_shortest_short_phase_decides_and_long_ones_are_ignored() {
        let walls = vec![
            ("a".to_string(), Duration::from_millis(400)),
            ("b".to_string(), Duration::from_millis(200)),
            ("c".to_string(), Duration::from_millis(100)),
        ];
        let (p, w, f) = shortest(&walls, &["a", "b"], HALF).expect("short");
        assert_eq!((p, w), ("b", Duration::from_millis(200)));
        assert_eq!(f, 4.0);
        assert!(shortest(&walls, &["a"], Duration::from_millis(300)).is_none());
        assert!(shortest(&walls, &["d"], HALF).is_none());
    }

    #[test]
    fn growth_rounds_up_to_the_unit_and_never_shrinks_or_passes_the_cap() {
        assert_eq!(grow(40_960, 2.5, 1024, u64::from(u32::MAX)), 102_400);
        assert_eq!(grow(40_960, 2.51, 1024, u64::from(u32::MAX)), 103_424);
        assert_eq!(grow(3, 1.2, 1, 64), 4);
        assert_eq!(grow(60, 4.0, 1, 64), 64);
        assert_eq!(grow(100, 4.0, 1, 64), 100, "a knob above the cap stays");
    }
}
