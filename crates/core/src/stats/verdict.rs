//! The verdict statistics of a session run with a stopping rule (`--precision`, `--budget`):
//! [`pair_verdict`], `compare`'s four-way verdict of two samples (better / worse / the same
//! within the margin, [`DECIDED_MARGIN_PCT`] by default / inconclusive), and [`StoppingRule`],
//! the rule's data with its precision check ([`StoppingRule::precise`]), and the sequential
//! [`Design`] a session since issue 26 is decided by ([`look_answers`]: all pairs with Holm at
//! a planned look's levels, [`super::best`] and [`super::sequential`]), with [`look_bounds`],
//! the "within ±X %" of a pair the look leaves inconclusive.
//!
//! The runner (`run::adaptive`) decides between rounds with these; the report reads the same
//! items to say what a session answers, so the two cannot disagree. Pure functions, no I/O;
//! why the precision check is stricter than the reported interval is in doc/statistics.md.

use super::best::{self, Answer};
use super::sequential::Plan;
use super::two_sample::{self, Sample, Verdict};
use crate::metric::Direction;
use crate::policy::Policy;
use serde::{Deserialize, Serialize};
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

/// Default equivalence margin of "decided: the same", percent (the `compare` default); a
/// session may set its own (`fsbench run --equivalence`, [`StoppingRule::margin_pct`]).
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
    /// The planned looks (sessions since issue 26, [`StoppingRule::with_design`]); `None`: the
    /// unadjusted rule of older sessions (a look after every round, [`pair_verdict`]).
    pub plan: Option<Plan>,
    /// The session's design is still [`Design::pending`]: nothing is decided until it is fixed.
    pub pending: bool,
    /// Equivalence margin of "the same", percent (`--equivalence`, [`DECIDED_MARGIN_PCT`] by
    /// default; [`StoppingRule::with_margin`]).
    pub margin_pct: f64,
}

/// The sequential design of an adaptive session, fixed before its first look and stored with
/// it (the run options' `sequential`), so the report rebuilds the very [`Plan`] the runner
/// decided by: [`Plan::standard`]`(first_n, last_n)`.
///
/// A session with a wall-time budget cannot know how many rounds the budget holds before it
/// has timed one, so its design starts [`Design::pending`] (`last_n` the cap) and is fixed
/// once, just before the first look, by [`Design::fixed_by_budget`] from the rounds timed so
/// far: the last look is the last round the budget will let start. The looks then depend on
/// how long the rounds took and never on what they measured, which is what keeps the spent α
/// the planned α.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Design {
    /// Measured repeats per case at the first look (the policy's repeats, at least 2).
    pub first_n: u32,
    /// Measured repeats per case at the last look (the most the rule runs).
    pub last_n: u32,
    /// `true` until a budgeted session's last look is fixed from its timed rounds
    /// ([`Design::fixed_by_budget`]); a pending design decides nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
}

impl Design {
    /// The design of a session with `repeats` measured repeats that may run up to `most`.
    pub fn new(repeats: u32, most: u32) -> Design {
        let first_n = repeats.max(2);
        Design {
            first_n,
            last_n: most.max(first_n),
            pending: false,
        }
    }

    /// The design of a budgeted session before its rounds are timed: up to `most`, pending.
    pub fn pending(repeats: u32, most: u32) -> Design {
        Design {
            pending: true,
            ..Design::new(repeats, most)
        }
    }

    /// This design with its last look fixed: `done` measured repeats per case are stored, one
    /// round is estimated to take `round`, and `left` of the budget remains. The last look is
    /// at `done` plus the whole rounds that fit in `left` (the budget rule's own estimate, so
    /// the rule lets exactly those rounds start), between `first_n` and the cap `last_n`.
    pub fn fixed_by_budget(self, done: u32, left: Duration, round: Duration) -> Design {
        let rounds = if round.is_zero() {
            u32::MAX
        } else {
            (left.as_secs_f64() / round.as_secs_f64()).floor().min(u32::MAX as f64) as u32
        };
        Design {
            first_n: self.first_n,
            last_n: done.saturating_add(rounds).clamp(self.first_n, self.last_n),
            pending: false,
        }
    }

    /// The plan of this design (`None` for a pending design and for one no runner stores:
    /// first_n < 2).
    pub fn plan(&self) -> Option<Plan> {
        if self.pending {
            return None;
        }
        Plan::standard(self.first_n as usize, self.last_n as usize).ok()
    }
}

/// The answers of one row at look `look` of `plan`: each variant's first `repeats_at(look)`
/// values (in run order), all pairs with Holm at the look's levels, equivalence margin
/// `margin_pct` (the session's, [`DECIDED_MARGIN_PCT`] by default). The runner decides by
/// these at the look; the report shows them (a session ending between looks shows its last
/// look's, [`Plan::last_look_by`]).
pub fn look_answers(cells: &[&[f64]], direction: Direction, plan: &Plan, look: usize, margin_pct: f64) -> Vec<Answer> {
    best::compare_with_best(
        &look_samples(cells, plan, look),
        direction,
        margin_pct,
        plan.levels(look),
    )
}

/// The "within ±X %" bound (percent) of every inconclusive cell of a row against cell
/// `reference` (the row's best mean) at look `look` of `plan`, on the same first
/// `repeats_at(look)` values as [`look_answers`] gave `answers`: the repeated interval of the
/// look's equivalence level over the row's pairs ([`best::bound_level`],
/// [`best::within_bounds`]), so every bound of every look holds together with probability at
/// least `1 − α` (doc/statistics.md). `None` wherever the answer says more or nothing can be.
pub fn look_bounds(
    cells: &[&[f64]],
    answers: &[Answer],
    reference: usize,
    plan: &Plan,
    look: usize,
) -> Vec<Option<f64>> {
    let alpha = best::bound_level(plan.equivalence_level(look), cells.len());
    best::within_bounds(&look_samples(cells, plan, look), answers, reference, alpha)
}

/// Each cell's first `repeats_at(look)` values as a sample.
fn look_samples(cells: &[&[f64]], plan: &Plan, look: usize) -> Vec<Option<Sample>> {
    let n = plan.repeats_at(look).unwrap_or(0);
    cells.iter().map(|v| Sample::of(&v[..v.len().min(n)])).collect()
}

impl StoppingRule {
    /// The rule of `policy`, if it has one (a precision target or a budget).
    pub fn of(policy: &Policy) -> Option<StoppingRule> {
        policy.is_adaptive().then(|| StoppingRule {
            precision_pct: policy.precision,
            budget: policy.budget_s.map(Duration::from_secs_f64),
            confidence: policy.confidence,
            min_repeats: policy.repeats,
            plan: None,
            pending: false,
            margin_pct: DECIDED_MARGIN_PCT,
        })
    }

    /// The rule with the equivalence margin `margin_pct` (percent, inside (0, 100)).
    pub fn with_margin(self, margin_pct: f64) -> StoppingRule {
        StoppingRule { margin_pct, ..self }
    }

    /// The rule deciding by `design`'s planned looks (sessions since issue 26).
    pub fn with_design(self, design: Design) -> StoppingRule {
        StoppingRule {
            plan: design.plan(),
            pending: design.pending,
            ..self
        }
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

/// `compare`'s four-way verdict of `a` against `b` (unadjusted p, equivalence margin
/// `margin_pct` percent, threshold [`DECIDED_THRESHOLD_PCT`]).
pub fn pair_verdict(a: Sample, b: Sample, direction: Direction, margin_pct: f64) -> Verdict {
    let change_pct = if b.mean != 0.0 {
        (a.mean / b.mean - 1.0) * 100.0
    } else {
        0.0
    };
    two_sample::verdict(
        two_sample::log_ratio_p(a, b),
        two_sample::tost_ratio(a, b, margin_pct),
        change_pct,
        DECIDED_THRESHOLD_PCT,
        direction,
        a.mean,
        b.mean,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_fixes_the_last_look_at_the_rounds_it_holds() {
        let d = Design::pending(3, 30);
        assert!(d.pending && d.plan().is_none(), "a pending design has no looks");
        let s = Duration::from_secs;
        // 3 rounds done, 20 s a round, 165 s left: 8 more whole rounds, the last look at 11.
        let fixed = d.fixed_by_budget(3, s(165), s(20));
        assert_eq!((fixed.first_n, fixed.last_n, fixed.pending), (3, 11, false));
        assert_eq!(
            fixed.plan().unwrap().repeats_at(fixed.plan().unwrap().looks() - 1),
            Some(11)
        );
        // Never past the cap, never before the first look.
        assert_eq!(d.fixed_by_budget(3, s(10_000), s(20)).last_n, 30);
        assert_eq!(d.fixed_by_budget(3, s(5), s(20)).last_n, 3);
        assert_eq!(d.fixed_by_budget(3, s(5), Duration::ZERO).last_n, 30);
        // Stored without the flag once fixed; a stored pending design reads back pending.
        assert!(!serde_json::to_string(&fixed).unwrap().contains("pending"));
        let back: Design = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(back, d);
        let old: Design = serde_json::from_str(r#"{"first_n":3,"last_n":12}"#).unwrap();
        assert_eq!(old, Design::new(3, 12));
    }
}
