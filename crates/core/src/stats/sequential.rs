//! A group-sequential design for the adaptive rounds: how much of the error rate α each look
//! may spend, so that looking at the data between rounds and stopping as soon as the answer is
//! clear keeps the overall rate of false decisions at α.
//!
//! **The problem.** The adaptive rule looks at the data after every round (one more repeat per
//! variant) and stops at the first look where every comparison is decided. Testing each look at
//! α = 0.05 gives K chances to reject a true null hypothesis: with K = 10 looks the chance of
//! some false "better/worse" is well above 5 % (doc/statistics.md quotes the simulation).
//!
//! **The design.** A [`Plan`] fixes, before the first look, the looks (up to the most repeats
//! the budget and the repeat cap allow) and gives look `k` the level
//! `α_k = α(t_k) − α(t_{k−1})`, the increment of an alpha-spending function `α(t)` (Lan &
//! DeMets 1983) at the information fraction `t_k = n_k / n_K` (`n_k` repeats per variant at
//! look `k`). At look `k`:
//!
//! * (a) the difference test (Welch on the log ratio, Holm within the row) rejects at `α_k`;
//! * (b) the equivalence test (TOST within the margin, Holm within the row) shows equivalence
//!   at `α_k` (each one-sided test at `α_k`; TOST's size is that of its one-sided tests);
//! * an interval printed after a stop at look `k` is computed at confidence `1 − α_k`
//!   ([`Plan::interval_confidence`]): a *repeated confidence interval* (Jennison & Turnbull
//!   1989).
//!
//! **Why the union bound, not the exact boundary.** The increments sum to `α(1) = α`, so by
//! Bonferroni's inequality the probability of a false rejection at *any* look is at most `α`
//! — whatever the dependence between looks, whatever the stopping rule does with the data
//! (stop on "decided", on the budget, or never), and with the t statistic rather than z: the
//! bound needs only each look's own (marginal) level, and Welch's t test has that level at
//! every n by itself. The exact group-sequential boundaries (Armitage, McPherson & Rowe 1969)
//! spend less conservatively, but they rest on the joint normal distribution of the z
//! statistics at known variance; with 3 repeats per variant the variance is estimated from 2
//! degrees of freedom, the Welch–Satterthwaite df differs at every look, Holm's step-down
//! sits inside each look, and mapping the spent α to t quantiles ("p-value matching") is only
//! an approximation there. The union bound is exact in what it promises and simple to check;
//! it costs some power (the simulation in doc/statistics.md shows how much). Likewise every
//! repeated interval covers with probability at least `1 − α` simultaneously over all looks,
//! so the one printed after a data-dependent stop covers with at least `1 − α` too.
//!
//! **The looks and the shape.** [`Plan::standard`], the design fsbench uses, looks at a
//! [`schedule`] that grows by half (3, 5, 8, 12 repeats for 3 to 12; the rounds between only
//! add repeats) and spends by [`Spending::OBrienFleming`] (Lan–DeMets O'Brien–Fleming type,
//! `α(t) = 2 − 2Φ(z_{1−α/2} / √t)`) for both tests: from 3 to 12 repeats the levels are
//! `α_k ≈ 0.00009, 0.0023, 0.0140, 0.0336`. Under the union bound every look costs level at
//! the others, and the last look, where a noisy pair is decided if at all, is where level buys
//! the most; early looks at 3–5 repeats decide only large gaps, which a tiny level still
//! shows. Looking after every round with O'Brien–Fleming type spending leaves 0.0094 for the
//! last look; with [`Spending::Pocock`] (`α·ln(1 + (e − 1)t)`) or [`Spending::Equal`]
//! (`α / K`, plain Bonferroni) less still. In the simulation (doc/statistics.md) the standard
//! design found a 10 % gap at CoV 5 / 10 / 20 % more often than the five other combinations
//! (99 / 54 / 15 % against at most 97 / 42 / 9 %) and showed equal variants "the same within
//! 3 %" more often, close to a single look at 12 repeats (which cannot stop early); it costs
//! about one and a half rounds where the gap is obvious (a 10 % gap at CoV 2 %: 5.1 repeats on
//! average instead of 3.4–4.6).
//!
//! **The intervals.** A sequence of intervals at `1 − α_k` covers at every look at once with
//! probability at least `1 − α` (the same union bound), so the interval printed after a stop at
//! look `k` keeps its stated `1 − α` whatever made the rule stop. With the standard design
//! that is 96.6 % after a stop at the last look, and wide after an early one (99.8 % at 5
//! repeats): the honest width of a guarantee that holds whichever look the data chose. The plain 95 % interval after a stop by
//! this rule was measured too (doc/statistics.md): close to 95 %, because the rule stops on
//! *differences between* variants, not on one cell's spread.
//!
//! Invariants: levels are non-negative and sum to `α` over the planned looks (up to rounding);
//! a look beyond the plan gets level 0 (it can decide nothing), so running more rounds than
//! planned never spends more than `α`. Stopping before the last planned look leaves α unspent,
//! which is allowed (the bound only gets better). Nothing here panics.

use super::best::Levels;
use statrs::distribution::{ContinuousCDF, Normal};
use thiserror::Error;

/// The alpha-spending function that divides α over the looks (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spending {
    /// Lan–DeMets Pocock type: `α(t) = α · ln(1 + (e − 1) t)`.
    Pocock,
    /// Lan–DeMets O'Brien–Fleming type: `α(t) = 2 − 2Φ(z_{1−α/2} / √t)`.
    OBrienFleming,
    /// Bonferroni: `α / K` at every look, whatever the information.
    Equal,
}

impl Spending {
    /// Cumulative α spent by information fraction `t ∈ [0, 1]` (two-sided total `alpha`).
    pub fn spent(self, alpha: f64, t: f64) -> f64 {
        let t = t.clamp(0.0, 1.0);
        match self {
            Spending::Pocock => alpha * (1.0 + (std::f64::consts::E - 1.0) * t).ln(),
            Spending::OBrienFleming => {
                if t == 0.0 {
                    return 0.0;
                }
                if t == 1.0 {
                    return alpha;
                }
                let z = standard_normal().inverse_cdf(1.0 - alpha / 2.0);
                (2.0 * standard_normal().cdf(-z / t.sqrt())).min(alpha)
            }
            // Not a function of information: handled by the plan, linear in the look index.
            Spending::Equal => alpha * t,
        }
    }
}

fn standard_normal() -> Normal {
    // Mean 0, sd 1 is always valid.
    Normal::new(0.0, 1.0).expect("standard normal")
}

/// Why a [`Plan`] cannot be made.
#[derive(Debug, Error, PartialEq)]
pub enum PlanError {
    /// No look planned.
    #[error("a sequential plan needs at least one look")]
    NoLooks,
    /// Fewer than two repeats per variant at the first look: no variance, no test.
    #[error("the first look needs at least 2 repeats per variant, got {0}")]
    TooFewRepeats(usize),
    /// The looks' repeats are not increasing.
    #[error("the looks' repeats must increase")]
    NotIncreasing,
    /// α outside (0, 1).
    #[error("the error rate must be inside (0, 1), got {0}")]
    Alpha(f64),
}

/// The planned looks and the level each may use, for the difference and the equivalence tests.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    alpha: f64,
    /// Repeats per variant at each look, increasing.
    ns: Vec<usize>,
    difference: Vec<f64>,
    equivalence: Vec<f64>,
}

impl Plan {
    /// A plan of `max_looks` looks, the first at `first_n` repeats per variant and one more
    /// repeat per look after it, spending `alpha` on the difference test by `difference` and
    /// on the equivalence test by `equivalence`.
    pub fn new(
        first_n: usize,
        max_looks: usize,
        alpha: f64,
        difference: Spending,
        equivalence: Spending,
    ) -> Result<Plan, PlanError> {
        let ns: Vec<usize> = (first_n..first_n + max_looks).collect();
        Plan::at(&ns, alpha, difference, equivalence)
    }

    /// A plan that looks only at the given repeats per variant (`ns`, increasing; the rounds
    /// between looks only add repeats), spending as [`Plan::new`].
    pub fn at(ns: &[usize], alpha: f64, difference: Spending, equivalence: Spending) -> Result<Plan, PlanError> {
        let Some(&first_n) = ns.first() else {
            return Err(PlanError::NoLooks);
        };
        if first_n < 2 {
            return Err(PlanError::TooFewRepeats(first_n));
        }
        if ns.windows(2).any(|w| w[0] >= w[1]) {
            return Err(PlanError::NotIncreasing);
        }
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(PlanError::Alpha(alpha));
        }
        Ok(Plan {
            alpha,
            ns: ns.to_vec(),
            difference: increments(ns, alpha, difference),
            equivalence: increments(ns, alpha, equivalence),
        })
    }

    /// fsbench's design from `first_n` to `last_n` repeats per variant (the minimum repeats
    /// and the most the budget and the cap allow): looks at [`schedule`]`(first_n, last_n)`,
    /// α = 0.05 ([`super::two_sample::ALPHA`]), O'Brien–Fleming type for both tests (see the
    /// module docs for why).
    pub fn standard(first_n: usize, last_n: usize) -> Result<Plan, PlanError> {
        if last_n < first_n {
            return Err(PlanError::NotIncreasing);
        }
        Plan::at(
            &schedule(first_n, last_n),
            super::two_sample::ALPHA,
            Spending::OBrienFleming,
            Spending::OBrienFleming,
        )
    }

    /// The overall error rate α the plan spends.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Number of planned looks `K`.
    pub fn looks(&self) -> usize {
        self.difference.len()
    }

    /// Repeats per variant at look `look` (0-based); `None` past the plan.
    pub fn repeats_at(&self, look: usize) -> Option<usize> {
        self.ns.get(look).copied()
    }

    /// The look (0-based) made at `n` repeats per variant; `None` when no look is planned
    /// there (before the first, between looks, past the last): nothing may be decided then.
    pub fn look_of(&self, n: usize) -> Option<usize> {
        self.ns.iter().position(|&m| m == n)
    }

    /// The last look made by the time each variant has `n` repeats: the look whose answers
    /// stand when a session ends at `n` (by the budget or the cap) between looks. `None` before
    /// the first look. Its answers are those of the first `repeats_at(look)` values of each
    /// variant in run order; the repeats after it may be shown but decide nothing.
    pub fn last_look_by(&self, n: usize) -> Option<usize> {
        self.ns.iter().rposition(|&m| m <= n)
    }

    /// The look a row's answers stand at: [`Plan::last_look_by`] the fewest values any of
    /// its cells has. The values are the successful measured repeats (a failed repeat adds
    /// none), so the runner's stopping rule and the report name the same look for the same
    /// stored data (issue 42: the runner once counted failed repeats toward its look).
    pub fn row_look(&self, cells: &[&[f64]]) -> Option<usize> {
        self.last_look_by(cells.iter().map(|c| c.len()).min()?)
    }

    /// Level of the difference test at look `look` (0-based); 0 past the plan.
    pub fn difference_level(&self, look: usize) -> f64 {
        self.difference.get(look).copied().unwrap_or(0.0)
    }

    /// Level of the equivalence test (each of TOST's one-sided tests) at look `look`; 0 past
    /// the plan.
    pub fn equivalence_level(&self, look: usize) -> f64 {
        self.equivalence.get(look).copied().unwrap_or(0.0)
    }

    /// Both levels of look `look` (0-based), for [`super::best::compare_with_best`].
    pub fn levels(&self, look: usize) -> Levels {
        Levels {
            difference: self.difference_level(look),
            equivalence: self.equivalence_level(look),
        }
    }

    /// Confidence level of an interval printed after a stop at look `look` (0-based):
    /// `1 − α_k` of the difference test, a repeated confidence interval that covers with at
    /// least `1 − α` however the stop was chosen. Past the plan: the last look's level (the
    /// intervals of all planned looks cover simultaneously; a later one is not covered by the
    /// bound, the caller should not look past the plan).
    pub fn interval_confidence(&self, look: usize) -> f64 {
        let k = look.min(self.looks() - 1);
        1.0 - self.difference_level(k)
    }
}

/// Growth of the repeats from one look of [`schedule`] to the next: ×1.5.
pub const LOOK_GROWTH: f64 = 1.5;

/// The looks of [`Plan::standard`]: at `first_n` repeats per variant, then each at
/// `⌈previous × 1.5⌉` ([`LOOK_GROWTH`]) while one more step would still fit within `last_n`,
/// and last at `last_n`. From 3 to 12: 3, 5, 8, 12; to 13: 3, 5, 8, 13; to 30: 3, 5, 8, 12,
/// 18, 30. Empty when `last_n < first_n`.
pub fn schedule(first_n: usize, last_n: usize) -> Vec<usize> {
    if last_n < first_n {
        return vec![];
    }
    let mut looks = vec![first_n];
    let mut at = first_n;
    loop {
        let next = ((at as f64 * LOOK_GROWTH).ceil() as usize).max(at + 1);
        if next >= last_n || next as f64 * LOOK_GROWTH > last_n as f64 {
            break;
        }
        looks.push(next);
        at = next;
    }
    if last_n > at {
        looks.push(last_n);
    }
    looks
}

/// `α(t_k) − α(t_{k−1})` for the looks at `ns` repeats, with `t_k = n_k / n_K`.
fn increments(ns: &[usize], alpha: f64, spending: Spending) -> Vec<f64> {
    let looks = ns.len();
    if spending == Spending::Equal {
        return vec![alpha / looks as f64; looks];
    }
    let last = ns[looks - 1] as f64;
    let mut before = 0.0;
    ns.iter()
        .enumerate()
        .map(|(k, &n)| {
            let t = if k + 1 == looks { 1.0 } else { n as f64 / last };
            let now = spending.spent(alpha, t);
            let level = (now - before).max(0.0);
            before = now;
            level
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_sum_to_alpha_and_are_positive_for_every_shape() {
        for shape in [Spending::Pocock, Spending::OBrienFleming, Spending::Equal] {
            for looks in [1, 2, 5, 10, 28] {
                let p = Plan::new(3, looks, 0.05, shape, shape).unwrap();
                let sum: f64 = (0..looks).map(|k| p.difference_level(k)).sum();
                assert!((sum - 0.05).abs() < 1e-12, "{shape:?} K={looks}: {sum}");
                assert!((0..looks).all(|k| p.equivalence_level(k) > 0.0));
                assert_eq!(p.difference_level(looks), 0.0, "past the plan");
                assert_eq!(p.looks(), looks);
            }
        }
    }

    #[test]
    fn spending_functions_match_their_published_values() {
        // Lan–DeMets OBF type at t = 0.5, α = 0.05: 2 − 2Φ(1.959964 / 0.707107) = 2 − 2Φ(2.771808)
        // = 0.005575.
        let obf = Spending::OBrienFleming.spent(0.05, 0.5);
        assert!((obf - 0.005575).abs() < 2e-6, "{obf}");
        // Pocock type at t = 0.5: 0.05 · ln(1 + 1.718282 / 2) = 0.05 · 0.620115 = 0.031006.
        let pocock = Spending::Pocock.spent(0.05, 0.5);
        assert!((pocock - 0.031006).abs() < 2e-6, "{pocock}");
        for s in [Spending::Pocock, Spending::OBrienFleming, Spending::Equal] {
            assert_eq!(s.spent(0.05, 0.0), 0.0);
            assert!((s.spent(0.05, 1.0) - 0.05).abs() < 1e-12);
        }
    }

    #[test]
    fn obrien_fleming_spends_less_early_and_more_late_than_pocock() {
        let p = Plan::new(3, 10, 0.05, Spending::Pocock, Spending::Pocock).unwrap();
        let o = Plan::new(3, 10, 0.05, Spending::OBrienFleming, Spending::OBrienFleming).unwrap();
        // O'Brien–Fleming type, n = 3 … 12: the increments of 2 − 2Φ(1.959964 / √(n / 12)).
        let expected = [
            0.000089, 0.000598, 0.001708, 0.003180, 0.004707, 0.006093, 0.007250, 0.008166, 0.008856, 0.009353,
        ];
        for (k, e) in expected.iter().enumerate() {
            assert!(
                (o.difference_level(k) - e).abs() < 2e-6,
                "look {k}: {}",
                o.difference_level(k)
            );
        }
        // Pocock type at n = 3 of 12: 0.05 · ln(1 + 1.718282 · 0.25) = 0.05 · 0.357374 = 0.017869.
        assert!(
            (p.difference_level(0) - 0.017869).abs() < 1e-6,
            "{}",
            p.difference_level(0)
        );
        assert!(o.difference_level(0) < 1e-4);
        assert!(o.difference_level(9) > p.difference_level(9));
        assert_eq!(
            (p.look_of(2), p.look_of(3), p.look_of(12), p.look_of(13)),
            (None, Some(0), Some(9), None)
        );
        assert_eq!((p.repeats_at(9), p.repeats_at(10)), (Some(12), None));
        assert_eq!(o.levels(4).difference, o.difference_level(4));
        assert_eq!(o.levels(4).equivalence, o.equivalence_level(4));
        assert!((p.interval_confidence(9) - (1.0 - p.difference_level(9))).abs() < 1e-15);
        assert_eq!(p.interval_confidence(40), p.interval_confidence(9));
    }

    #[test]
    fn the_standard_schedule_grows_by_half_and_ends_at_the_last_repeat() {
        assert_eq!(schedule(3, 12), [3, 5, 8, 12]);
        assert_eq!(schedule(3, 13), [3, 5, 8, 13]);
        assert_eq!(schedule(3, 30), [3, 5, 8, 12, 18, 30]);
        assert_eq!(schedule(5, 30), [5, 8, 12, 18, 30]);
        assert_eq!(
            (schedule(3, 3), schedule(3, 4), schedule(2, 3)),
            (vec![3], vec![3, 4], vec![2, 3])
        );
        assert!(schedule(4, 3).is_empty());
        // O'Brien–Fleming type at t = 3/12, 5/12, 8/12, 1: increments of 2 − 2Φ(1.959964 / √t).
        let p = Plan::standard(3, 12).unwrap();
        let expected = [0.0000886, 0.0023059, 0.0139802, 0.0336253];
        for (k, e) in expected.iter().enumerate() {
            assert!(
                (p.difference_level(k) - e).abs() < 2e-6,
                "look {k}: {}",
                p.difference_level(k)
            );
        }
        assert_eq!((p.look_of(4), p.look_of(5), p.look_of(12)), (None, Some(1), Some(3)));
        assert_eq!(
            (
                p.last_look_by(2),
                p.last_look_by(4),
                p.last_look_by(11),
                p.last_look_by(40)
            ),
            (None, Some(0), Some(2), Some(3))
        );
    }

    #[test]
    fn invalid_plans_are_errors() {
        assert_eq!(Plan::standard(3, 2), Err(PlanError::NotIncreasing));
        assert_eq!(
            Plan::at(&[], 0.05, Spending::Equal, Spending::Equal),
            Err(PlanError::NoLooks)
        );
        assert_eq!(
            Plan::at(&[3, 3], 0.05, Spending::Equal, Spending::Equal),
            Err(PlanError::NotIncreasing)
        );
        assert_eq!(
            Plan::new(3, 0, 0.05, Spending::Equal, Spending::Equal),
            Err(PlanError::NoLooks)
        );
        assert_eq!(Plan::standard(1, 5), Err(PlanError::TooFewRepeats(1)));
        assert_eq!(
            Plan::new(3, 5, 1.0, Spending::Equal, Spending::Equal),
            Err(PlanError::Alpha(1.0))
        );
    }
}
