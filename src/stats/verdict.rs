//! The verdict statistics of a session run with a stopping rule (`--precision`, `--budget`):
//! [`pair_verdict`], `compare`'s four-way verdict of two samples (better / worse / the same
//! within [`DECIDED_MARGIN_PCT`] / inconclusive), and [`StoppingRule`], the rule's data with its
//! precision check ([`StoppingRule::precise`]).
//!
//! The runner (`run::adaptive`) decides between rounds with these; the report reads the same
//! items to say what a session answers, so the two cannot disagree. Pure functions, no I/O;
//! why the precision check is stricter than the reported interval is in doc/statistics.md.

use super::two_sample::{self, Sample, Verdict};
use crate::metric::Direction;
use crate::policy::Policy;
use std::time::Duration;

/// Fewest values a cell needs before it can count as precise. A stop on a small sample whose
/// sd happened to come out small is what makes a sequential interval under-cover; from 5
/// values on, the simulated coverage of the reported 95 % interval stays above 93 %
/// (doc/statistics.md).
pub const MIN_PRECISE_N: usize = 5;

/// The precision check uses the interval at level `1 − (1 − confidence) / 5` (99 % for a
/// reported 95 %): a session stops when even that interval is within the target, so the stop
/// does not land exactly on the first sample whose sd came out small, which is what makes the
/// reported interval of a sequential rule under-cover (doc/statistics.md).
pub const STOP_LEVEL_FACTOR: f64 = 1.0;

/// The precision target must already have held on this fraction (3/4) of the values: a
/// quarter of the values behind each stop are drawn after the target was first met.
pub const STABLE_FRACTION: (usize, usize) = (3, 4);

/// Equivalence margin of "decided: the same", percent (the `compare` default).
pub const DECIDED_MARGIN_PCT: f64 = two_sample::DEFAULT_EQUIVALENCE_PCT;

/// Smallest difference that counts as "decided: better/worse", percent.
pub const DECIDED_THRESHOLD_PCT: f64 = 0.0;

/// The stopping rule of a session.
#[derive(Clone, Debug, PartialEq)]
pub struct StoppingRule {
    /// Target CI half-width, percent of the mean.
    pub precision_pct: Option<f64>,
    /// Wall-time budget of the session.
    pub budget: Option<Duration>,
    /// Confidence level of the intervals.
    pub confidence: f64,
    /// The minimum measured repeats (the policy's `repeats`).
    pub min_repeats: u32,
}

impl StoppingRule {
    /// The rule of `policy`, if it has one (a precision target or a budget).
    pub fn of(policy: &Policy) -> Option<StoppingRule> {
        policy.is_adaptive().then(|| StoppingRule {
            precision_pct: policy.precision,
            budget: policy.budget_s.map(Duration::from_secs_f64),
            confidence: policy.confidence,
            min_repeats: policy.repeats,
        })
    }

    /// Whether `values` reached the precision target (false without a target or with fewer
    /// than two values or a zero mean).
    ///
    /// The target must hold on all the values and already on their first three quarters
    /// ([`STABLE_FRACTION`]), so the last quarter are fresh values drawn after the target was
    /// first met (see doc/statistics.md for why that keeps the coverage).
    pub fn precise(&self, values: &[f64]) -> bool {
        let earlier = values.len() * STABLE_FRACTION.0 / STABLE_FRACTION.1;
        self.precise_now(values) && self.precise_now(&values[..earlier])
    }

    fn precise_now(&self, values: &[f64]) -> bool {
        let Some(p) = self.precision_pct else { return false };
        if values.len() < MIN_PRECISE_N {
            return false;
        }
        // Checked at a stricter level than reported (see STOP_LEVEL_FACTOR).
        let level = 1.0 - (1.0 - self.confidence) / STOP_LEVEL_FACTOR;
        let Some(s) = super::summarize(values, 0, level) else {
            return false;
        };
        match s.ci_half_width() {
            Some(h) if s.mean != 0.0 => h <= p / 100.0 * s.mean.abs(),
            _ => false,
        }
    }
}

/// `compare`'s four-way verdict of `a` against `b` (unadjusted p, margin
/// [`DECIDED_MARGIN_PCT`], threshold [`DECIDED_THRESHOLD_PCT`]).
pub fn pair_verdict(a: Sample, b: Sample, direction: Direction) -> Verdict {
    let change_pct = if b.mean != 0.0 {
        (a.mean / b.mean - 1.0) * 100.0
    } else {
        0.0
    };
    two_sample::verdict(
        two_sample::log_ratio_p(a, b),
        two_sample::tost_ratio(a, b, DECIDED_MARGIN_PCT),
        change_pct,
        DECIDED_THRESHOLD_PCT,
        direction,
        a.mean,
        b.mean,
    )
}
