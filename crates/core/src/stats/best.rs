//! Comparisons with the best, done as a procedure made for choosing the best from sample
//! means: every variant of a row gets one [`Answer`] — best, the same within the margin as
//! the best, behind, or inconclusive — with the family-wise error rate of each kind of claim
//! held at the given level.
//!
//! **The procedure: all pairs, Holm.** For k variants, every one of the k(k − 1)/2 pairs gets
//! the difference test (Welch on the log ratio, [`two_sample::log_ratio_p`]) and the
//! equivalence test (TOST within the margin, [`two_sample::tost_ratio`]); each family of
//! p-values is adjusted by Holm's step-down ([`two_sample::holm`]) and compared with its
//! level. Then, with "j beats i" meaning the adjusted difference test rejects and j's mean is
//! better, and "i ≡ j" meaning the adjusted TOST shows equivalence:
//!
//! * the **candidates** C are the variants nobody beats (the sample-best always is one). With
//!   probability at least `1 − α_diff` no equal-or-better variant is beaten, so the true best
//!   is in C;
//! * a variant equivalent to every *other* candidate is **same** — within the margin of the
//!   true best, wherever in C that is. Said only of what was tested: each "same" rests on its
//!   own TOST against every candidate;
//! * when every candidate is "same", the candidate with the best mean is **best** (also when
//!   C is that variant alone: it beats all others);
//! * a beaten variant that is not "same" is **behind** (some variant is shown better);
//! * a candidate that is not "same" is **inconclusive** (C is not resolved): neither shown
//!   behind nor shown the same, never read as "same".
//!
//! A row is decided ([`decided`]) when no answer is inconclusive. An inconclusive variant still
//! gets the tightest statement its data support, "within ±X %" of the row's best mean
//! ([`within_bounds`], at [`bound_level`]: the equivalence level over the row's pairs).
//!
//! **Why not "test everyone against the sample-best".** Picking the best by its sample mean
//! and then testing the others against it at α each, without adjustment, is the selection the
//! test does not know about: with three equal variants the sample-best is the one whose mean
//! came out highest, so the others look worse than they are and about 10 % of rows end with a
//! false "behind" (issue 26; doc/statistics.md). **Why Holm over all pairs and not Hsu's MCB.**
//! Hsu's multiple comparisons with the best is the classical answer and more powerful, but its
//! critical values are one-sided Dunnett quantiles of a multivariate t with one pooled
//! variance; filesystems differ in noise as much as in speed (Welch's reason), the counts can
//! differ after failed repeats, and the multivariate t with unequal variances has no closed
//! form. Holm's adjustment controls the family-wise error rate under any dependence, needs only
//! the per-pair Welch and TOST p-values fsbench already computes, and with k = 2…4 variants
//! (1–6 pairs) costs little power.
//!
//! **Error guarantees** at levels `α_d` (difference) and `α_e` (equivalence), per row: a
//! false "behind" (a variant that nothing is truly better than, called behind) has
//! probability at most `α_d`: it needs a rejected true null of the difference family. A false
//! "same" or "best" (called so while the true best is better by the margin or more) has
//! probability at most `α_d + α_e`: it needs either the true best wrongly beaten (difference
//! family) or a false equivalence with it (equivalence family). With the levels of a
//! [`super::sequential::Plan`] look, these hold over all looks of an adaptive session.
//!
//! Invariants: one answer per input, in input order; a variant without a usable sample
//! (`None`: fewer than two values, or a non-positive mean) is never beaten, never "same", so
//! it and the row stay inconclusive. Nothing here panics.

use super::two_sample::{self, Sample};
use crate::metric::Direction;
use serde::{Deserialize, Serialize};

/// One variant's answer in a row (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// The best mean, and every other candidate for the best is shown the same within the
    /// margin (or beaten).
    Best,
    /// Shown the same within the margin as every candidate for the best.
    Same,
    /// Some other variant is shown better.
    Behind,
    /// Neither shown behind nor shown the same: the best is not resolved. Never "same".
    Inconclusive,
}

/// The two levels of one look: the difference tests' and the equivalence tests'.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Levels {
    /// Family-wise level of the difference tests (Holm over the row's pairs).
    pub difference: f64,
    /// Family-wise level of the equivalence tests (Holm over the row's pairs).
    pub equivalence: f64,
}

impl Levels {
    /// Both tests at `alpha` (a fixed-n comparison, one look).
    pub fn both(alpha: f64) -> Levels {
        Levels {
            difference: alpha,
            equivalence: alpha,
        }
    }
}

/// The answers of a row: `samples[i]` is variant i's sample (`None` when it has none usable),
/// `direction` which way is better, `margin_pct` the equivalence margin (percent, as
/// [`two_sample::tost_ratio`]), `levels` the family-wise levels. One answer per sample, in
/// order. An empty row gives no answers; a row of one variant with a sample makes it the best.
pub fn compare_with_best(
    samples: &[Option<Sample>],
    direction: Direction,
    margin_pct: f64,
    levels: Levels,
) -> Vec<Answer> {
    let k = samples.len();
    let pairs: Vec<(usize, usize)> = (0..k).flat_map(|i| (i + 1..k).map(move |j| (i, j))).collect();
    let mut p_diff = Vec::with_capacity(pairs.len());
    let mut p_equiv = Vec::with_capacity(pairs.len());
    for &(i, j) in &pairs {
        let (d, e) = match (samples[i], samples[j]) {
            (Some(a), Some(b)) => (
                two_sample::log_ratio_p(a, b),
                two_sample::tost_ratio(a, b, margin_pct).map(|t| t.p),
            ),
            _ => (None, None),
        };
        // Untestable pairs count as "not rejected" (p = 1), and stay in Holm's family.
        p_diff.push(d.unwrap_or(1.0));
        p_equiv.push(e.unwrap_or(1.0));
    }
    let p_diff = two_sample::holm(&p_diff);
    let p_equiv = two_sample::holm(&p_equiv);

    // A variant without a sample cannot be beaten (it is untested), so it stays a candidate.
    let mut beaten = vec![false; k];
    let mut equiv = vec![false; k * k];
    for (pair, &(i, j)) in pairs.iter().enumerate() {
        if p_diff[pair] < levels.difference {
            if let (Some(a), Some(b)) = (samples[i], samples[j]) {
                if direction.better(a.mean, b.mean) {
                    beaten[j] = true;
                } else if direction.better(b.mean, a.mean) {
                    beaten[i] = true;
                }
            }
        }
        let e = p_equiv[pair] < levels.equivalence;
        equiv[i * k + j] = e;
        equiv[j * k + i] = e;
    }
    answers_of(samples, direction, &beaten, &equiv)
}

/// The answers from who is beaten and which pairs are equivalent (`equiv[i·k + j]`).
fn answers_of(samples: &[Option<Sample>], direction: Direction, beaten: &[bool], equiv: &[bool]) -> Vec<Answer> {
    let k = samples.len();
    let candidate = |i: usize| !beaten[i];
    let same = |i: usize| samples[i].is_some() && (0..k).all(|j| j == i || !candidate(j) || equiv[i * k + j]);
    let resolved = (0..k).filter(|&i| candidate(i)).all(same);
    // The candidate with the best mean (the first of equal means); a candidate without a
    // sample is never resolved (it is equivalent to nobody), so `best` is only used then.
    let best = (0..k)
        .filter(|&i| candidate(i))
        .fold(None, |acc: Option<usize>, i| match (acc, samples[i]) {
            (None, _) => Some(i),
            (Some(b), Some(s)) if samples[b].is_some_and(|sb| direction.better(s.mean, sb.mean)) => Some(i),
            (acc, _) => acc,
        });
    (0..k)
        .map(|i| {
            if resolved && Some(i) == best {
                Answer::Best
            } else if same(i) {
                Answer::Same
            } else if beaten[i] {
                Answer::Behind
            } else {
                Answer::Inconclusive
            }
        })
        .collect()
}

/// The level of each pair's "within ±X %" bound ([`within_bounds`]) in a row of `k` variants
/// whose equivalence tests are held at the family-wise level `alpha` by Holm: `alpha` over the
/// row's `k(k − 1)/2` pairs (Bonferroni, Holm's first step). Every pair's bound then holds
/// together with the others with probability at least `1 − alpha`, so a bound against the
/// variant whose mean came out best is covered although the data chose that pair. `alpha` for
/// a row of fewer than three variants (one pair).
pub fn bound_level(alpha: f64, k: usize) -> f64 {
    alpha / (k * k.saturating_sub(1) / 2).max(1) as f64
}

/// The tightest "within ±X %" of every inconclusive variant against variant `reference` (the
/// row's best mean), percent: [`two_sample::within_pct`]`(variant, reference, alpha)` where
/// `answers[i]` is [`Answer::Inconclusive`] and `i` is not `reference`; `None` for every other
/// variant (best, the same, behind: their answer says more), for a variant without a usable
/// sample and where the bound would be 100 % or more. `alpha` is the per-pair level, e.g.
/// [`bound_level`] of the look's equivalence level. One entry per sample, in order.
pub fn within_bounds(samples: &[Option<Sample>], answers: &[Answer], reference: usize, alpha: f64) -> Vec<Option<f64>> {
    let base = samples.get(reference).copied().flatten();
    samples
        .iter()
        .zip(answers)
        .enumerate()
        .map(|(i, (s, a))| match (s, base) {
            (Some(s), Some(base)) if i != reference && *a == Answer::Inconclusive => {
                two_sample::within_pct(*s, base, alpha)
            }
            _ => None,
        })
        .collect()
}

/// `true` when no answer is inconclusive: the row needs no more repeats.
pub fn decided(answers: &[Answer]) -> bool {
    answers.iter().all(|a| *a != Answer::Inconclusive)
}

/// How many repeats of each of two variants an inconclusive pair would need, if its observed
/// gap and spread were the truth: a planning figure, not a promise (the next repeats will move
/// both).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ToDecide {
    /// The gap between the two means, percent (the ratio of the geometric means less one,
    /// signed as `a` over `b`).
    pub gap_pct: f64,
    /// The run-to-run spread: the root mean square of the two sd of the log values, as a
    /// percent (≈ the CoV).
    pub cov_pct: f64,
    /// Repeats each to show which is ahead (the difference test); `None` when the gap is 0.
    pub ahead: Option<u64>,
    /// Repeats each to show them the same within the margin (the equivalence test); `None`
    /// when the gap is as large as the margin or larger.
    pub same: Option<u64>,
}

/// Power the planning figures of [`repeats_to_decide`] are for.
pub const PLANNING_POWER: f64 = 0.8;

/// [`ToDecide`] for the values `a` and `b` (at least two each, all positive) in a row of
/// `pairs` pairs: the normal-approximation sample size of each test on the log scale at level
/// 0.05 / `pairs` (Holm's first step, where a row's first claim is made) and power
/// [`PLANNING_POWER`]: `n = 2 s² (z_level + z_power)² / δ²`, with δ the gap for the difference
/// test (two-sided) and the margin less the gap for the equivalence test (each one-sided test
/// of TOST). `None` when either sample cannot be used.
pub fn repeats_to_decide(a: &[f64], b: &[f64], pairs: usize, margin_pct: f64) -> Option<ToDecide> {
    use statrs::distribution::{ContinuousCDF, Normal};
    let logs = |v: &[f64]| -> Option<Vec<f64>> {
        (v.len() >= 2 && v.iter().all(|x| x.is_finite() && *x > 0.0)).then(|| v.iter().map(|x| x.ln()).collect())
    };
    let (la, lb) = (logs(a)?, logs(b)?);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let var = |v: &[f64]| {
        let m = mean(v);
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64
    };
    let s2 = (var(&la) + var(&lb)) / 2.0;
    let d = mean(&la) - mean(&lb);
    let alpha = 0.05 / pairs.max(1) as f64;
    let z = Normal::standard();
    let z_power = z.inverse_cdf(PLANNING_POWER);
    let n = |z_level: f64, delta: f64| -> Option<u64> {
        (delta > 0.0).then(|| {
            (2.0 * s2 * (z_level + z_power).powi(2) / (delta * delta))
                .ceil()
                .max(2.0) as u64
        })
    };
    Some(ToDecide {
        gap_pct: (d.exp() - 1.0) * 100.0,
        cov_pct: s2.sqrt() * 100.0,
        ahead: n(z.inverse_cdf(1.0 - alpha / 2.0), d.abs()),
        same: n(z.inverse_cdf(1.0 - alpha), (1.0 + margin_pct / 100.0).ln() - d.abs()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Answer::*;

    fn s(mean: f64, cov: f64, n: usize) -> Option<Sample> {
        Some(Sample {
            mean,
            sd: mean * cov,
            n,
        })
    }

    /// The planning figures grow with the spread and shrink with the gap, as the formula says:
    /// 5 % apart at 7 % CoV needs tens of repeats to show which is ahead and none can show
    /// them the same within 3 %; equal means at 1 % CoV are shown the same in a few.
    #[test]
    fn the_repeats_to_decide_follow_the_gap_and_the_spread() {
        // Five values with a log sd of about 7 %, one set 5 % above the other.
        let base = [0.93, 0.97, 1.0, 1.04, 1.08];
        let a: Vec<f64> = base.iter().map(|x| x * 105.0).collect();
        let b: Vec<f64> = base.iter().map(|x| x * 100.0).collect();
        let t = repeats_to_decide(&a, &b, 3, 3.0).unwrap();
        assert!((t.gap_pct - 5.0).abs() < 1e-9, "{t:?}");
        assert!((t.cov_pct - 5.8).abs() < 0.1, "{t:?}");
        // 2 · 0.058² · (2.394 + 0.842)² / ln(1.05)² ≈ 30.
        assert!((28..=33).contains(&t.ahead.unwrap()), "{t:?}");
        assert_eq!(t.same, None, "a 5 % gap is never the same within 3 %");
        // Twice the spread, four times the repeats.
        let wide: Vec<f64> = base.iter().map(|x| (x - 1.0) * 2.0 + 1.0).collect();
        let (a2, b2): (Vec<f64>, Vec<f64>) = (
            wide.iter().map(|x| x * 105.0).collect(),
            wide.iter().map(|x| x * 100.0).collect(),
        );
        let t2 = repeats_to_decide(&a2, &b2, 3, 3.0).unwrap();
        assert!(t2.ahead.unwrap() > 3 * t.ahead.unwrap(), "{t2:?} against {t:?}");
        // Equal means at 1 % CoV: no gap to show, the same in a few repeats.
        let tight: Vec<f64> = base.iter().map(|x| ((x - 1.0) / 6.0 + 1.0) * 100.0).collect();
        let t3 = repeats_to_decide(&tight, &tight, 3, 3.0).unwrap();
        assert_eq!(t3.ahead, None);
        assert!(t3.same.unwrap() <= 5, "{t3:?}");
        assert_eq!(repeats_to_decide(&[1.0], &b, 3, 3.0), None);
        assert_eq!(repeats_to_decide(&[1.0, -1.0], &b, 3, 3.0), None);
    }

    fn answers(samples: &[Option<Sample>]) -> Vec<Answer> {
        compare_with_best(samples, Direction::HigherIsBetter, 3.0, Levels::both(0.05))
    }

    #[test]
    fn a_clear_winner_is_best_and_the_rest_behind() {
        let a = answers(&[s(100.0, 0.01, 10), s(150.0, 0.01, 10), s(120.0, 0.01, 10)]);
        assert_eq!(a, vec![Behind, Best, Behind]);
        assert!(decided(&a));
        // Lower is better: the same numbers, the other way round.
        let samples = [s(100.0, 0.01, 10), s(150.0, 0.01, 10), s(120.0, 0.01, 10)];
        let low = compare_with_best(&samples, Direction::LowerIsBetter, 3.0, Levels::both(0.05));
        assert_eq!(low, vec![Best, Behind, Behind]);
    }

    #[test]
    fn equal_and_tight_variants_are_the_best_and_the_same() {
        let a = answers(&[s(100.0, 0.005, 10), s(100.3, 0.005, 10), s(99.9, 0.005, 10)]);
        assert_eq!(a, vec![Same, Best, Same]);
        // A real 1 % gap that is still within 3 %: "the same", not "behind".
        let a = answers(&[s(100.0, 0.001, 20), s(101.0, 0.001, 20)]);
        assert_eq!(a, vec![Same, Best]);
    }

    #[test]
    fn noisy_variants_are_inconclusive_never_same() {
        let a = answers(&[s(100.0, 0.2, 3), s(104.0, 0.2, 3), s(30.0, 0.01, 10)]);
        assert_eq!(a, vec![Inconclusive, Inconclusive, Behind]);
        assert!(!decided(&a));
    }

    #[test]
    fn same_needs_a_test_against_every_candidate() {
        // a ≡ b (both tight), c noisy: c is a candidate, not equivalent to anyone, so neither
        // a nor b is "the same as the best" and nobody is the best.
        let a = answers(&[s(100.0, 0.002, 20), s(100.0, 0.002, 20), s(101.0, 0.3, 3)]);
        assert_eq!(a, vec![Inconclusive, Inconclusive, Inconclusive]);
        // A variant beaten but within the margin of the only candidate is the same.
        let a = answers(&[s(100.0, 0.001, 20), s(98.5, 0.001, 20), s(80.0, 0.001, 20)]);
        assert_eq!(a, vec![Best, Same, Behind]);
    }

    #[test]
    fn only_inconclusive_variants_get_a_bound_against_the_reference() {
        // a, b noisy and close: both inconclusive; c far behind: behind, no bound.
        let row = [s(100.0, 0.05, 5), s(104.0, 0.05, 5), s(50.0, 0.01, 5)];
        let a = answers(&row);
        assert_eq!(a, vec![Inconclusive, Inconclusive, Behind]);
        assert_eq!(bound_level(0.05, 3), 0.05 / 3.0);
        assert_eq!((bound_level(0.05, 2), bound_level(0.05, 1)), (0.05, 0.05));
        let level = bound_level(0.05, 3);
        let b = within_bounds(&row, &a, 1, level);
        // a against b at the row's per-pair level, and nothing for the reference or the behind.
        let expected = two_sample::within_pct(row[0].unwrap(), row[1].unwrap(), level);
        assert!(expected.is_some_and(|x| x > 3.0), "{expected:?}");
        assert_eq!(b, vec![expected, None, None]);
        // A decided row has no bounds; nor has a variant without a sample.
        let decided = [s(100.0, 0.005, 10), s(100.3, 0.005, 10)];
        let d = answers(&decided);
        assert_eq!(d, vec![Same, Best]);
        assert_eq!(within_bounds(&decided, &d, 1, 0.05), vec![None, None]);
        let open = [s(100.0, 0.01, 10), None];
        assert_eq!(within_bounds(&open, &answers(&open), 0, 0.05), vec![None, None]);
        assert_eq!(within_bounds(&open, &answers(&open), 5, 0.05), vec![None, None]);
    }

    #[test]
    fn missing_samples_keep_the_row_open() {
        let a = answers(&[s(100.0, 0.01, 10), None, s(50.0, 0.01, 10)]);
        assert_eq!(a, vec![Inconclusive, Inconclusive, Behind]);
        assert_eq!(answers(&[s(100.0, 0.01, 10)]), vec![Best]);
        assert_eq!(answers(&[None]), vec![Inconclusive]);
        assert!(answers(&[]).is_empty());
    }

    #[test]
    fn property_answers_are_consistent_on_random_rows() {
        use rand::rngs::SmallRng;
        use rand::{Rng, SeedableRng};
        let mut rng = SmallRng::seed_from_u64(26);
        for _ in 0..3000 {
            let k = rng.gen_range(1..6);
            let row: Vec<Option<Sample>> = (0..k)
                .map(|_| {
                    (!rng.gen_bool(0.05)).then(|| Sample {
                        mean: 100.0 * rng.gen_range(0.8..1.2),
                        sd: 100.0 * rng.gen_range(0.0..0.1),
                        n: rng.gen_range(2..15),
                    })
                })
                .collect();
            let direction = if rng.gen_bool(0.5) {
                Direction::HigherIsBetter
            } else {
                Direction::LowerIsBetter
            };
            let alpha = [0.0, 0.001, 0.05, 0.2][rng.gen_range(0..4)];
            let a = compare_with_best(&row, direction, 3.0, Levels::both(alpha));
            assert_eq!(a.len(), k);
            let bests = a.iter().filter(|x| **x == Best).count();
            // Decided exactly when the best is named, and then once.
            assert_eq!(decided(&a), bests == 1, "{row:?} → {a:?}");
            assert!(bests <= 1);
            // The top sample mean is never behind, and a variant without a sample is undecided.
            let top = (0..k)
                .filter(|&i| row[i].is_some())
                .fold(None, |b: Option<usize>, i| match b {
                    Some(b) if !direction.better(row[i].unwrap().mean, row[b].unwrap().mean) => Some(b),
                    _ => Some(i),
                });
            if let Some(t) = top {
                assert_ne!(a[t], Behind, "{row:?} → {a:?}");
            }
            assert!((0..k).all(|i| row[i].is_some() || a[i] == Inconclusive));
            // At level 0 nothing is shown: only a lone variant is the best.
            if alpha == 0.0 {
                assert!(a.iter().all(|x| *x == Inconclusive) || (k == 1 && a == [Best]), "{a:?}");
            }
        }
    }

    #[test]
    fn holm_leaves_a_borderline_gap_undecided_that_one_test_would_call() {
        // Two close variants, p ≈ 0.03 on their own: decided at α = 0.05 when alone, but with a
        // third pair in the family and Holm's factor it is not.
        let (a, b) = (s(100.0, 0.05, 8), s(106.5, 0.05, 8));
        let p = two_sample::log_ratio_p(a.unwrap(), b.unwrap()).unwrap();
        assert!(p > 0.0167 && p < 0.05, "{p}");
        assert_eq!(answers(&[a, b]), vec![Behind, Best]);
        let far = s(300.0, 0.01, 8);
        let three = answers(&[a, b, far]);
        assert_eq!(&three[2], &Best);
        assert_eq!(three[..2], [Behind, Behind]);
        let close = s(103.0, 0.05, 8);
        let three = answers(&[a, b, close]);
        assert!(three.contains(&Inconclusive), "{three:?}");
    }
}
