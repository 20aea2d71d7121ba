//! Two-sample statistics: whether two sets of repeats differ. Welch's t-test, the tie test built
//! on it, a confidence interval of the ratio of means, and `fsbench compare`'s verdict rule.
//! Pure functions, no I/O; the method is written up in `doc/significance.md`.
//!
//! * [`welch`]: two-sided Welch (1947) t-test of equal means without assuming equal variances,
//!   `t = (m₁ − m₂) / √(s₁²/n₁ + s₂²/n₂)` with Welch–Satterthwaite degrees of freedom
//!   `ν = (s₁²/n₁ + s₂²/n₂)² / ((s₁²/n₁)²/(n₁−1) + (s₂²/n₂)²/(n₂−1))` (fractional), and
//!   `p = 2·P(T_ν ≤ −|t|)` from [`super::t_cdf`]. Reports use it to decide which
//!   filesystems are *tied* with the best one (`p ≥ α`).
//! * [`ratio_ci`]: the ratio `R = m₁ / m₂` of two positive means with a confidence interval by
//!   the delta method on the log scale: `Var(ln m) ≈ s² / (n·m²)`, so
//!   `se(ln R) = √(s₁²/(n₁m₁²) + s₂²/(n₂m₂²))` and the interval is
//!   `R · exp(±t_{1−α/2, ν} · se)` with Welch–Satterthwaite `ν` on the two relative variances.
//!   Working on `ln R` keeps the interval positive and makes "A is 10 % faster than B" and
//!   "B is 9.1 % slower than A" the same statement. `fsbench compare` decides on this interval.
//! * [`tie`]: two samples are *tied* when Welch's test does not separate them at [`ALPHA`]
//!   (`p ≥ α`), *separated* when it does, *untested* when it cannot run.
//! * [`log_ratio_p`]: the two-sided p-value of `ln R = 0` on the same log scale and degrees of
//!   freedom, so `p < α` exactly when the `1 − α` [`ratio_ci`] excludes 1.
//! * [`tost_ratio`]: Schuirmann's (1987) two one-sided tests of equivalence on `ln R` against a
//!   margin `±m` (default [`DEFAULT_EQUIVALENCE_PCT`] = 3 %): `H₀₁: R ≤ 1 − m` and
//!   `H₀₂: R ≥ 1 + m`, each a one-sided Welch t-test; equivalence is shown when both reject at
//!   α, i.e. `max(p₁, p₂) < α` (equivalently, the `1 − 2α` interval lies inside the margin).
//! * [`within_pct`]: the tightest margin ±X % at which that TOST shows equivalence at a level,
//!   read off the `1 − 2α` ratio interval and rounded up to 0.1 %: what the report says of a
//!   pair neither shown different nor shown the same within the session's margin.
//! * [`holm`]: Holm's (1979) step-down adjustment of a family of p-values (family-wise error
//!   rate), used by `fsbench compare` across the metrics of one comparison.
//! * [`verdict`]: four-way — `better` / `worse` when the (adjusted) difference test rejects at
//!   α *and* the change `|ratio − 1|` exceeds a threshold, in the metric's declared direction;
//!   `equivalent` ("same within m %") when the TOST shows equivalence; `inconclusive`
//!   otherwise (neither shown different nor shown equivalent, or untestable). Inconclusive is
//!   never "same".
//!
//! Degenerate cases are decided, not guessed: fewer than two values on a side gives `None`
//! (nothing can be tested); zero spread on both sides gives `p = 1` for equal means and `p = 0`
//! otherwise (a zero-width interval at `R`). Nothing here panics.

use super::{t_cdf, t_quantile, Summary};
use crate::metric::Direction;
use serde::{Deserialize, Serialize};

/// Significance level of "tied" and of `compare`'s verdicts: 0.05 (95 % confidence).
pub const ALPHA: f64 = 0.05;

/// Default equivalence margin of [`tost_ratio`], in percent of the base mean: ±3 %.
pub const DEFAULT_EQUIVALENCE_PCT: f64 = 3.0;

/// The numbers of one side of a two-sample comparison: mean, sample sd and count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Arithmetic mean, in the metric's unit.
    pub mean: f64,
    /// Sample standard deviation (n − 1), in the metric's unit.
    pub sd: f64,
    /// Number of values.
    pub n: usize,
}

impl From<&Summary> for Sample {
    fn from(s: &Summary) -> Self {
        Sample {
            mean: s.mean,
            sd: s.sd,
            n: s.n,
        }
    }
}

impl Sample {
    /// Mean, sd and count of `values` (non-finite values ignored); `None` when empty.
    pub fn of(values: &[f64]) -> Option<Sample> {
        super::summarize(values, 0, 0.95).map(|s| Sample::from(&s))
    }
}

/// Result of Welch's t-test.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Welch {
    /// The t statistic `(m₁ − m₂) / se`; ±∞ when both spreads are zero and the means differ.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom (fractional).
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch's two-sided t-test of `a` against `b`. `None` when either side has fewer than two
/// values or a non-finite mean or sd.
pub fn welch(a: Sample, b: Sample) -> Option<Welch> {
    if a.n < 2 || b.n < 2 || ![a.mean, a.sd, b.mean, b.sd].iter().all(|x| x.is_finite()) {
        return None;
    }
    let va = a.sd * a.sd / a.n as f64;
    let vb = b.sd * b.sd / b.n as f64;
    let se2 = va + vb;
    let diff = a.mean - b.mean;
    if se2 == 0.0 || !se2.is_finite() {
        // No spread at all: the means are either equal or certainly different.
        let df = (a.n + b.n - 2) as f64;
        return Some(if diff == 0.0 {
            Welch { t: 0.0, df, p: 1.0 }
        } else {
            Welch {
                t: f64::INFINITY.copysign(diff),
                df,
                p: 0.0,
            }
        });
    }
    let df = satterthwaite(va, a.n, vb, b.n);
    let t = diff / se2.sqrt();
    let p = (2.0 * t_cdf(-t.abs(), df)?).clamp(0.0, 1.0);
    Some(Welch { t, df, p })
}

/// Welch–Satterthwaite degrees of freedom of the sum of two variance terms `va` (from `na`
/// values) and `vb` (from `nb`); both counts at least 2, at least one term positive.
fn satterthwaite(va: f64, na: usize, vb: f64, nb: usize) -> f64 {
    let num = (va + vb) * (va + vb);
    let den = va * va / (na - 1) as f64 + vb * vb / (nb - 1) as f64;
    let df = num / den;
    // Bounded by min(nᵢ − 1) and nₐ + n_b − 2 in exact arithmetic; keep rounding inside.
    df.clamp(((na.min(nb)) - 1) as f64, (na + nb - 2) as f64)
}

/// Welch confidence interval of the difference of means `a.mean − b.mean`: returns the
/// difference and the half-width `t_{1−α/2, ν} · √(s₁²/n₁ + s₂²/n₂)` (same unit as the means).
/// It excludes 0 exactly when [`welch`] gives `p < 1 − confidence`, so a summary that quotes it
/// never contradicts the tie decision. `None` when [`welch`] would be `None` or `confidence` is
/// outside `(0, 1)`.
pub fn welch_diff_ci(a: Sample, b: Sample, confidence: f64) -> Option<(f64, f64)> {
    if !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let w = welch(a, b)?;
    let se = (a.sd * a.sd / a.n as f64 + b.sd * b.sd / b.n as f64).sqrt();
    let diff = a.mean - b.mean;
    if se == 0.0 {
        return Some((diff, 0.0));
    }
    Some((diff, t_quantile(0.5 + confidence / 2.0, w.df)? * se))
}

/// A ratio of means with its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RatioCi {
    /// `m₁ / m₂` (dimensionless).
    pub ratio: f64,
    /// Lower end of the interval; equals `ratio` when there is no spread.
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
    /// Confidence level of the interval (0.95).
    pub confidence: f64,
    /// Welch–Satterthwaite degrees of freedom of the interval.
    pub df: f64,
}

impl RatioCi {
    /// `true` when the interval does not contain 1: the means differ at `1 − confidence`.
    pub fn excludes_one(&self) -> bool {
        self.low > 1.0 || self.high < 1.0
    }
}

/// Ratio `a.mean / b.mean` with a `confidence` interval by the log-scale delta method (see the
/// module docs). `None` when either side has fewer than two values, a mean is not positive, or
/// `confidence` is not inside `(0, 1)`.
pub fn ratio_ci(a: Sample, b: Sample, confidence: f64) -> Option<RatioCi> {
    if a.n < 2 || b.n < 2 || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    if !(a.mean > 0.0 && b.mean > 0.0 && a.sd.is_finite() && b.sd.is_finite()) {
        return None;
    }
    let ratio = a.mean / b.mean;
    if !ratio.is_finite() || ratio == 0.0 {
        return None;
    }
    // Relative variances of the two means.
    let ua = (a.sd / a.mean).powi(2) / a.n as f64;
    let ub = (b.sd / b.mean).powi(2) / b.n as f64;
    let se2 = ua + ub;
    if se2 == 0.0 {
        let df = (a.n + b.n - 2) as f64;
        return Some(RatioCi {
            ratio,
            low: ratio,
            high: ratio,
            confidence,
            df,
        });
    }
    ratio_interval(ratio, se2.sqrt(), satterthwaite(ua, a.n, ub, b.n), confidence)
}

/// `ratio · exp(±t_{(1+confidence)/2, df} · se)`, `se` the standard error of `ln ratio`: the
/// interval [`ratio_ci`] and [`super::sessions::ratio_ci`] give. `None` when it is not finite.
pub(super) fn ratio_interval(ratio: f64, se: f64, df: f64, confidence: f64) -> Option<RatioCi> {
    let half = t_quantile(0.5 + confidence / 2.0, df)? * se;
    let (low, high) = (ratio * (-half).exp(), ratio * half.exp());
    if !(low.is_finite() && high.is_finite()) {
        return None;
    }
    Some(RatioCi {
        ratio,
        low,
        high,
        confidence,
        df,
    })
}

/// Outcome of the tie test of two samples at [`ALPHA`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tie {
    /// Welch's test does not separate them: `p ≥ α`.
    Tied,
    /// Welch's test separates them: `p < α`.
    Separated,
    /// The test cannot run (fewer than two values on a side, a non-finite mean or sd).
    Untested,
}

/// The tie test of `a` against `b`: Welch's t-test (returned too, `None` when untestable) and
/// its decision at [`ALPHA`].
pub fn tie(a: Sample, b: Sample) -> (Tie, Option<Welch>) {
    let test = welch(a, b);
    let decision = match test {
        None => Tie::Untested,
        Some(w) if w.p >= ALPHA => Tie::Tied,
        Some(_) => Tie::Separated,
    };
    (decision, test)
}

/// Standard error and Welch–Satterthwaite degrees of freedom of `ln(a.mean / b.mean)` by the
/// delta method (see the module docs), with `ln R`. `None` as for [`ratio_ci`]. Shared with
/// [`super::sessions`], whose tests with a between-session term add to this one.
pub(super) fn log_ratio_se(a: Sample, b: Sample) -> Option<(f64, f64, f64)> {
    if a.n < 2 || b.n < 2 || !(a.mean > 0.0 && b.mean > 0.0 && a.sd.is_finite() && b.sd.is_finite()) {
        return None;
    }
    let ln_r = (a.mean / b.mean).ln();
    if !ln_r.is_finite() {
        return None;
    }
    let ua = (a.sd / a.mean).powi(2) / a.n as f64;
    let ub = (b.sd / b.mean).powi(2) / b.n as f64;
    let se2 = ua + ub;
    if se2 == 0.0 {
        return Some((ln_r, 0.0, (a.n + b.n - 2) as f64));
    }
    Some((ln_r, se2.sqrt(), satterthwaite(ua, a.n, ub, b.n)))
}

/// Two-sided p-value of `ln(a.mean / b.mean) = 0` with the standard error and degrees of
/// freedom of [`ratio_ci`]: `p < α` exactly when the `1 − α` ratio interval excludes 1. Zero
/// spread gives 1 for equal means and 0 otherwise. `None` as for [`ratio_ci`].
pub fn log_ratio_p(a: Sample, b: Sample) -> Option<f64> {
    let (ln_r, se, df) = log_ratio_se(a, b)?;
    if se == 0.0 {
        return Some(if ln_r == 0.0 { 1.0 } else { 0.0 });
    }
    Some((2.0 * t_cdf(-(ln_r / se).abs(), df)?).clamp(0.0, 1.0))
}

/// Result of the two one-sided tests of equivalence ([`tost_ratio`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tost {
    /// Margin in percent: equivalence means `1 − m/100 < R < 1 + m/100`.
    pub margin_pct: f64,
    /// p-value of `H₀₁: R ≤ 1 − m` (one-sided, upper tail).
    pub p_lower: f64,
    /// p-value of `H₀₂: R ≥ 1 + m` (one-sided, lower tail).
    pub p_upper: f64,
    /// `max(p_lower, p_upper)`: equivalence is shown at α when `p < α`.
    pub p: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
}

impl Tost {
    /// `true` when both one-sided tests reject at [`ALPHA`].
    pub fn equivalent(&self) -> bool {
        self.p < ALPHA
    }
}

/// Schuirmann's two one-sided tests of the ratio `R = a.mean / b.mean` against the margin
/// `±margin_pct` percent, on the log scale of [`ratio_ci`]:
/// `t₁ = (ln R − ln(1 − m)) / se`, `p₁ = P(T_ν ≥ t₁)`; `t₂ = (ln R − ln(1 + m)) / se`,
/// `p₂ = P(T_ν ≤ t₂)`. Zero spread decides each side exactly (0 inside the margin, 1 on or
/// outside it). `None` as for [`ratio_ci`], or when `margin_pct` is not inside `(0, 100)`.
pub fn tost_ratio(a: Sample, b: Sample, margin_pct: f64) -> Option<Tost> {
    if !(margin_pct > 0.0 && margin_pct < 100.0) {
        return None;
    }
    let (ln_r, se, df) = log_ratio_se(a, b)?;
    tost_of(ln_r, se, df, margin_pct)
}

/// The two one-sided tests of [`tost_ratio`] from `ln R`, its standard error and degrees of
/// freedom: what [`tost_ratio`] and [`super::sessions::tost_ratio`] share.
pub(super) fn tost_of(ln_r: f64, se: f64, df: f64, margin_pct: f64) -> Option<Tost> {
    let lo = (1.0 - margin_pct / 100.0).ln();
    let hi = (1.0 + margin_pct / 100.0).ln();
    let (p_lower, p_upper) = if se == 0.0 {
        (f64::from(u8::from(ln_r <= lo)), f64::from(u8::from(ln_r >= hi)))
    } else {
        (
            t_cdf(-(ln_r - lo) / se, df)?.clamp(0.0, 1.0),
            t_cdf((ln_r - hi) / se, df)?.clamp(0.0, 1.0),
        )
    };
    Some(Tost {
        margin_pct,
        p_lower,
        p_upper,
        p: p_lower.max(p_upper),
        df,
    })
}

/// The tightest "within ±X %" that the data support for `a` against `b` at level `alpha`: the
/// smallest multiple of 0.1 strictly above `max(1 − low, high − 1) · 100`,
/// where `[low, high]` is the `1 − 2·alpha` [`ratio_ci`] of `a.mean / b.mean`, in percent.
///
/// It is the dual of [`tost_ratio`]: the TOST at margin `X` rejects at level `alpha` exactly
/// when that interval lies inside `(1 − X/100, 1 + X/100)`, so [`tost_ratio`]`(a, b, X)` shows
/// equivalence at `alpha` and at `X − 0.1` it does not (up to the rounding of the two
/// computations). Rounded up, never down, so the bound is never tighter than the interval; a
/// statement "within ±X %" read off the data is false only when the interval's end on the side
/// of the true ratio misses it, which has probability at most `alpha` (doc/statistics.md).
///
/// `None` as for [`ratio_ci`], when `alpha` is not inside `(0, 0.5)`, or when the bound is
/// 100 % or more (the lower end would be at or below 0: no statement about the lower side).
pub fn within_pct(a: Sample, b: Sample, alpha: f64) -> Option<f64> {
    if !(alpha > 0.0 && alpha < 0.5) {
        return None;
    }
    let ci = ratio_ci(a, b, 1.0 - 2.0 * alpha)?;
    let raw = (1.0 - ci.low).max(ci.high - 1.0) * 100.0;
    // Strictly above `raw` (a margin on the interval's end is no equivalence: TOST needs
    // p < α), in whole tenths counted as integers so the result prints exactly.
    let x = ((raw * 10.0).floor() + 1.0) / 10.0;
    (x.is_finite() && x < 100.0).then_some(x)
}

/// Holm's step-down adjusted p-values of a family, in the input order: sort ascending,
/// `p̃₍ᵢ₎ = max_{j ≤ i} min(1, (k − j + 1) · p₍ⱼ₎)` for `k` p-values. Rejecting `p̃ < α`
/// controls the family-wise error rate at α under any dependence. Non-finite inputs are
/// treated as 1.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let k = p.len();
    let clean = |x: f64| if x.is_finite() { x.clamp(0.0, 1.0) } else { 1.0 };
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&i, &j| clean(p[i]).total_cmp(&clean(p[j])));
    let mut out = vec![1.0; k];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((k - rank) as f64 * clean(p[i])).min(1.0));
        out[i] = running;
    }
    out
}

/// The verdict of `fsbench compare` on one metric (see [`verdict`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significantly better by more than the threshold.
    Better,
    /// Significantly worse by more than the threshold.
    Worse,
    /// Shown equivalent: the two one-sided tests put the ratio inside the margin.
    Equivalent,
    /// Neither shown different nor shown equivalent, or too few repeats (or a non-positive
    /// mean) to test. Never read as "same".
    Inconclusive,
}

impl Verdict {
    /// Text form: `better`, `worse`, `same within 3 %` (with `margin_pct`), `inconclusive`.
    pub fn label(self, margin_pct: f64) -> String {
        match self {
            Verdict::Better => "better".into(),
            Verdict::Worse => "worse".into(),
            Verdict::Equivalent => format!("same within {} %", trim_number(margin_pct)),
            Verdict::Inconclusive => "inconclusive".into(),
        }
    }
}

/// `3`, `2.5`: a percentage without trailing zeros.
fn trim_number(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The four-way verdict on a candidate against a base: `p_diff` is the (multiplicity-adjusted)
/// p-value of "the means differ" ([`log_ratio_p`] through [`holm`]), `tost` the equivalence
/// tests, `change_pct` the change `(ratio − 1) · 100` in percent, `threshold_pct` the smallest
/// change that counts (percent), `direction` the metric's declared direction and `cand_mean`,
/// `base_mean` the two means (in the metric's unit).
///
/// `Better` / `Worse` need `p_diff < α` *and* `|change_pct| > threshold_pct`; the direction
/// decides which of the two. Otherwise `Equivalent` when `tost` shows equivalence, else
/// `Inconclusive` (also without `p_diff`).
pub fn verdict(
    p_diff: Option<f64>,
    tost: Option<Tost>,
    change_pct: f64,
    threshold_pct: f64,
    direction: Direction,
    cand_mean: f64,
    base_mean: f64,
) -> Verdict {
    match p_diff {
        None => Verdict::Inconclusive,
        Some(p) if p < ALPHA && change_pct.abs() > threshold_pct => {
            if direction.better(cand_mean, base_mean) {
                Verdict::Better
            } else {
                Verdict::Worse
            }
        }
        Some(_) if tost.is_some_and(|t| t.equivalent()) => Verdict::Equivalent,
        Some(_) => Verdict::Inconclusive,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    // Welch's examples as printed on the Wikipedia page "Welch's t-test" (t, ν, p rounded to
    // 2–3 digits there); the 12-digit references were computed independently with mpmath
    // (30 digits, p from the regularized incomplete beta function), see doc/significance.md.
    const A1: [f64; 15] = [
        27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4,
    ];
    const A2: [f64; 15] = [
        27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4,
    ];
    const B1: [f64; 10] = [17.2, 20.9, 22.6, 18.1, 21.7, 21.4, 23.5, 24.2, 14.7, 21.8];
    const B2: [f64; 20] = [
        21.5, 22.8, 21.0, 23.0, 21.6, 23.6, 22.5, 20.7, 23.4, 21.8, 20.7, 21.7, 21.5, 22.5, 23.6, 21.5, 22.5, 23.5,
        21.5, 21.8,
    ];

    #[test]
    fn welch_matches_reference_values() {
        let w = welch(Sample::of(&A1).unwrap(), Sample::of(&A2).unwrap()).unwrap();
        assert!(close(w.t, -2.455356398286, 1e-9), "{w:?}");
        assert!(close(w.df, 24.9885292902314, 1e-9), "{w:?}");
        assert!(close(w.p, 0.0213780014628671, 1e-8), "{w:?}");
        let w = welch(Sample::of(&B1).unwrap(), Sample::of(&B2).unwrap()).unwrap();
        assert!(close(w.t, -1.56543352359851, 1e-9), "{w:?}");
        assert!(close(w.df, 9.90474124865083, 1e-9), "{w:?}");
        assert!(close(w.p, 0.148841696605328, 1e-8), "{w:?}");
        // Symmetric in its arguments apart from the sign of t.
        let r = welch(Sample::of(&B2).unwrap(), Sample::of(&B1).unwrap()).unwrap();
        assert_eq!((r.t, r.df, r.p), (-w.t, w.df, w.p));
    }

    #[test]
    fn ratio_ci_matches_reference_values() {
        let r = ratio_ci(Sample::of(&A2).unwrap(), Sample::of(&A1).unwrap(), 0.95).unwrap();
        assert!(close(r.ratio, 1.10406660262568, 1e-12), "{r:?}");
        assert!(close(r.low, 1.01415380695709, 1e-9), "{r:?}");
        assert!(close(r.high, 1.2019508822738, 1e-9), "{r:?}");
        assert!(close(r.df, 23.612446953695, 1e-9), "{r:?}");
        assert!(r.excludes_one());
        let r = ratio_ci(Sample::of(&B2).unwrap(), Sample::of(&B1).unwrap(), 0.95).unwrap();
        assert!(close(r.low, 0.966651109060161, 1e-9), "{r:?}");
        assert!(close(r.high, 1.19325514475678, 1e-9), "{r:?}");
        assert!(!r.excludes_one());
        // ln-symmetric: the interval of b/a is the reciprocal of the interval of a/b.
        let s = ratio_ci(Sample::of(&B1).unwrap(), Sample::of(&B2).unwrap(), 0.95).unwrap();
        assert!(close(s.low, 1.0 / r.high, 1e-12) && close(s.high, 1.0 / r.low, 1e-12));
    }

    #[test]
    fn welch_difference_interval_agrees_with_the_test() {
        // mpmath: t_{0.975, 24.98853} = 2.0595864913656; se = √(s₁²/15 + s₂²/15) =
        // 0.88242451001376; half-width 1.8174296004743.
        let (d, half) = welch_diff_ci(Sample::of(&A1).unwrap(), Sample::of(&A2).unwrap(), 0.95).unwrap();
        assert!(close(d, -2.1666666666666664, 1e-12), "{d}");
        assert!(close(half, 1.8174296004743, 1e-9), "{half}");
        assert!(d + half < 0.0, "p = 0.021 < 0.05: the interval excludes 0");
        let (d, half) = welch_diff_ci(Sample::of(&B1).unwrap(), Sample::of(&B2).unwrap(), 0.95).unwrap();
        assert!(d + half > 0.0 && d - half < 0.0, "p = 0.149: the interval contains 0");
    }

    #[test]
    fn welch_matches_r_t_test_computed_by_hand() {
        // R: t.test(c(1, 2, 3, 4), c(2, 4, 6, 8, 10)) (var.equal = FALSE, the default) prints
        // t = -2.2514, df = 5.5208, p-value = 0.06913. By hand: means 2.5 and 6, variances 5/3
        // and 10, so s₁²/n₁ = 5/12, s₂²/n₂ = 2, t = −3.5/√(29/12) = −2.251436323159369,
        // ν = (29/12)² / ((5/12)²/3 + 2²/4) = 5.520787746170678; p (mpmath, 30 digits, from
        // the regularized incomplete beta function) = 0.0691335931923924.
        let (x, y) = (
            Sample::of(&[1.0, 2.0, 3.0, 4.0]).unwrap(),
            Sample::of(&[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap(),
        );
        let w = welch(x, y).unwrap();
        assert!(close(w.t, -2.251436323159369, 1e-12), "{w:?}");
        assert!(close(w.df, 5.520787746170678, 1e-12), "{w:?}");
        assert!(close(w.p, 0.0691335931923924, 1e-8), "{w:?}");
        // p > 0.05: tied.
        assert_eq!(tie(x, y), (Tie::Tied, Some(w)));
        // Ratio 6 / 2.5 = 2.4: relative variances 10/36/5 and (5/3)/6.25/4, Welch–Satterthwaite
        // ν = 6.63013698630137, t_{0.975, ν} = 2.39162959461246 (mpmath), so the interval is
        // 2.4 · exp(±t · √(1/18 + 1/15)) = [1.04013236306095, 5.53775673612272].
        let r = ratio_ci(y, x, 0.95).unwrap();
        assert_eq!(r.ratio, 2.4);
        assert!(close(r.df, 6.63013698630137, 1e-12), "{r:?}");
        assert!(close(r.low, 1.04013236306095, 1e-9), "{r:?}");
        assert!(close(r.high, 5.53775673612272, 1e-9), "{r:?}");
    }

    #[test]
    fn tie_separates_at_alpha_and_reports_untestable_pairs() {
        let (a1, a2) = (Sample::of(&A1).unwrap(), Sample::of(&A2).unwrap());
        let (decision, test) = tie(a1, a2);
        assert_eq!(decision, Tie::Separated, "p = 0.021 < 0.05");
        assert_eq!(test, welch(a1, a2));
        let one = Sample {
            mean: 5.0,
            sd: 0.0,
            n: 1,
        };
        assert_eq!(tie(one, a1), (Tie::Untested, None));
    }

    #[test]
    fn verdict_is_four_way_and_needs_a_significant_change_beyond_the_threshold() {
        use Direction::{HigherIsBetter as Up, LowerIsBetter as Down};
        let tost = |p: f64| {
            Some(Tost {
                margin_pct: 3.0,
                p_lower: p,
                p_upper: p,
                p,
                df: 4.0,
            })
        };
        // (p, TOST, change %, direction, mean a) against mean b = 100 with a 5 % threshold.
        let cases = [
            // 20 % up, significant and beyond 5 %.
            (Some(0.01), tost(0.9), 20.0, Up, 120.0, Verdict::Better),
            (Some(0.01), tost(0.9), 20.0, Down, 120.0, Verdict::Worse),
            // Significant but within the threshold, and shown equivalent: same.
            (Some(0.01), tost(0.01), 1.0, Up, 101.0, Verdict::Equivalent),
            // Significant but within the threshold, not shown equivalent: inconclusive.
            (Some(0.01), tost(0.2), 4.0, Up, 104.0, Verdict::Inconclusive),
            // Beyond the threshold but not significant, not equivalent: inconclusive, never "same".
            (Some(0.2), tost(0.6), 20.0, Up, 120.0, Verdict::Inconclusive),
            // Exactly at the threshold is not beyond it.
            (Some(0.001), tost(0.9), 5.0, Up, 105.0, Verdict::Inconclusive),
            // A drop of a lower-is-better metric is an improvement.
            (Some(0.001), None, -40.0, Down, 60.0, Verdict::Better),
            (None, tost(0.0), 0.0, Up, 100.0, Verdict::Inconclusive),
        ];
        for (i, (p, t, pct, dir, a, want)) in cases.into_iter().enumerate() {
            assert_eq!(verdict(p, t, pct, 5.0, dir, a, 100.0), want, "case {i}");
        }
        assert_eq!(Verdict::Equivalent.label(3.0), "same within 3 %");
        assert_eq!(Verdict::Equivalent.label(2.5), "same within 2.5 %");
        assert_eq!(Verdict::Inconclusive.label(3.0), "inconclusive");
    }

    #[test]
    fn within_is_the_tightest_margin_the_tost_shows_rounded_up() {
        let s = |mean: f64, sd: f64, n: usize| Sample { mean, sd, n };
        // Equal means, CoV 5 %, n = 5 each: se(ln R) = 0.05·√(2/5) = 0.0316228, ν = 8, the 90 %
        // interval's half-width t_{0.95, 8} · se = 1.8595480 · 0.0316228 = 0.0588041 on the log
        // scale: high − 1 = e^0.0588041 − 1 = 6.0567 %, 1 − low = 5.7109 %: within ±6.1 %.
        let (a, b) = (s(100.0, 5.0, 5), s(100.0, 5.0, 5));
        assert_eq!(within_pct(a, b, 0.05), Some(6.1));
        // 4 % apart, the same spread: 1.04 · e^0.0588041 − 1 = 10.299 %: within ±10.3 %.
        assert_eq!(within_pct(s(104.0, 5.2, 5), b, 0.05), Some(10.3));
        // A smaller level, a wider interval, a larger bound.
        assert!(within_pct(a, b, 0.005).unwrap() > 6.1);
        // No spread at all: the ratio itself, strictly above (1 → 0.1 %, 1.02 → 2.1 %).
        assert_eq!(within_pct(s(100.0, 0.0, 3), s(100.0, 0.0, 3), 0.05), Some(0.1));
        assert_eq!(within_pct(s(102.0, 0.0, 3), s(100.0, 0.0, 3), 0.05), Some(2.1));
        // Nothing to say: too few values, a bad level, or a bound of 100 % or more.
        assert_eq!(within_pct(s(100.0, 5.0, 1), b, 0.05), None);
        assert_eq!(within_pct(a, b, 0.5), None);
        assert_eq!(within_pct(a, b, 0.0), None);
        assert_eq!(within_pct(s(100.0, 90.0, 2), s(100.0, 90.0, 2), 0.05), None);
    }

    #[test]
    fn property_within_is_the_dual_of_the_tost_and_never_tighter_than_the_interval() {
        let mut rng = SmallRng::seed_from_u64(41);
        let mut checked = 0;
        for _ in 0..5000 {
            let s = |rng: &mut SmallRng| Sample {
                mean: 100.0 * rng.gen_range(0.7..1.3),
                sd: 100.0 * rng.gen_range(0.001..0.2),
                n: rng.gen_range(2..15),
            };
            let (a, b) = (s(&mut rng), s(&mut rng));
            let alpha = [0.05, 0.0167, 0.0112, 0.0008, 0.00003][rng.gen_range(0..5)];
            let Some(x) = within_pct(a, b, alpha) else {
                continue;
            };
            checked += 1;
            let ci = ratio_ci(a, b, 1.0 - 2.0 * alpha).unwrap();
            // Never below the interval: both ends inside ±X, so X is at least the half-width.
            assert!(ci.low > 1.0 - x / 100.0 && ci.high < 1.0 + x / 100.0, "{x} {ci:?}");
            assert!(x / 100.0 >= (ci.high - ci.low) / 2.0, "{x} {ci:?}");
            // The TOST at margin X shows equivalence at α; a tenth tighter it does not.
            assert!(tost_ratio(a, b, x).unwrap().p < alpha, "{x} {a:?} {b:?} {alpha}");
            if x > 0.15 {
                assert!(
                    tost_ratio(a, b, x - 0.1).unwrap().p >= alpha * (1.0 - 1e-9),
                    "{x} {a:?} {b:?}"
                );
            }
        }
        assert!(checked > 3000, "{checked}");
    }

    #[test]
    fn tost_and_log_ratio_p_match_values_computed_by_hand() {
        // References: the formulas of the module docs evaluated with mpmath at 30 digits (t CDF
        // from the regularized incomplete beta function).
        let s = |mean: f64, sd: f64, n: usize| Sample { mean, sd, n };
        // Equal means 100 ± 1 (n = 4 each): ν = 6, both sides reject; the margins are not
        // symmetric on the log scale (ln 0.97 vs ln 1.03), so neither are the p-values.
        let t = tost_ratio(s(100.0, 1.0, 4), s(100.0, 1.0, 4), 3.0).unwrap();
        assert!(close(t.df, 6.0, 1e-12), "{t:?}");
        assert!(close(t.p_lower, 0.00252537162965099, 1e-8), "{t:?}");
        assert!(close(t.p_upper, 0.00290595188009047, 1e-8), "{t:?}");
        assert_eq!(t.p, t.p_upper);
        assert!(t.equivalent());
        assert_eq!(log_ratio_p(s(100.0, 1.0, 4), s(100.0, 1.0, 4)), Some(1.0));
        // 101 ± 1 (n = 5) against 100 ± 2 (n = 3): neither different nor equivalent.
        let (a, b) = (s(101.0, 1.0, 5), s(100.0, 2.0, 3));
        let t = tost_ratio(a, b, 3.0).unwrap();
        assert!(close(t.df, 2.6032776354581753, 1e-9), "{t:?}");
        assert!(close(t.p_lower, 0.0286604812610937, 1e-7), "{t:?}");
        assert!(close(t.p_upper, 0.112248495828551, 1e-7), "{t:?}");
        assert!(!t.equivalent());
        let p = log_ratio_p(a, b).unwrap();
        assert!(close(p, 0.487975402237173, 1e-7), "{p}");
        // 104 ± 1 against 100 ± 1 (n = 3): different (p = 0.0081), not equivalent to 3 %.
        let (a, b) = (s(104.0, 1.0, 3), s(100.0, 1.0, 3));
        let t = tost_ratio(a, b, 3.0).unwrap();
        assert!(close(t.p_lower, 0.000483939787868065, 1e-7), "{t:?}");
        assert!(close(t.p_upper, 0.852869937006882, 1e-8), "{t:?}");
        let p = log_ratio_p(a, b).unwrap();
        assert!(close(p, 0.00809426748141726, 1e-7), "{p}");
        // p < α exactly when the 95 % ratio interval excludes 1.
        assert!(ratio_ci(a, b, 0.95).unwrap().excludes_one());
        // Degenerate: zero spread decides each side; bad margins and n < 2 give None.
        let flat = s(100.0, 0.0, 3);
        let t = tost_ratio(s(102.0, 0.0, 3), flat, 3.0).unwrap();
        assert_eq!((t.p_lower, t.p_upper), (0.0, 0.0));
        let t = tost_ratio(s(103.0, 0.0, 3), flat, 3.0).unwrap();
        assert_eq!(t.p, 1.0);
        assert_eq!(tost_ratio(flat, flat, 0.0), None);
        assert_eq!(tost_ratio(flat, s(100.0, 0.0, 1), 3.0), None);
    }

    #[test]
    fn holm_adjusts_by_hand_computed_values() {
        // Sorted 0.005, 0.01, 0.03, 0.04 → ×4, ×3, ×2, ×1 = 0.02, 0.03, 0.06, 0.04 → running
        // maximum 0.02, 0.03, 0.06, 0.06.
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
        // 0.5 × 2 = 1 stays the running maximum.
        assert_eq!(holm(&[0.5, 0.9]), vec![1.0, 1.0]);
        assert_eq!(holm(&[f64::NAN, 0.01]), vec![1.0, 0.02]);
        assert!(holm(&[]).is_empty());
    }

    #[test]
    fn degenerate_inputs_are_decided_not_guessed() {
        let one = Sample {
            mean: 5.0,
            sd: 0.0,
            n: 1,
        };
        let two = Sample {
            mean: 5.0,
            sd: 1.0,
            n: 2,
        };
        assert_eq!(welch(one, two), None);
        assert_eq!(ratio_ci(two, one, 0.95), None);
        let flat = Sample {
            mean: 5.0,
            sd: 0.0,
            n: 3,
        };
        assert_eq!(welch(flat, flat).unwrap().p, 1.0);
        let other = Sample {
            mean: 6.0,
            sd: 0.0,
            n: 3,
        };
        let w = welch(flat, other).unwrap();
        assert_eq!((w.p, w.t), (0.0, f64::NEG_INFINITY));
        let r = ratio_ci(other, flat, 0.95).unwrap();
        assert_eq!((r.low, r.ratio, r.high), (1.2, 1.2, 1.2));
        // Non-positive means have no ratio; a bad confidence has no interval.
        let zero = Sample {
            mean: 0.0,
            sd: 1.0,
            n: 3,
        };
        assert_eq!(ratio_ci(two, zero, 0.95), None);
        assert_eq!(ratio_ci(two, two, 1.0), None);
        let nan = Sample {
            mean: f64::NAN,
            sd: 1.0,
            n: 3,
        };
        assert_eq!(welch(nan, two), None);
    }

    /// A standard normal deviate (Box–Muller), for the coverage tests.
    fn normal(rng: &mut SmallRng) -> f64 {
        let u: f64 = rng.gen_range(f64::EPSILON..1.0);
        let v: f64 = rng.gen();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    #[test]
    fn property_false_positive_rate_and_coverage_are_near_nominal() {
        // Samples like benchmark repeats: n = 5 and 8, CoV 3 % and 8 %, true ratio 1.2.
        let mut rng = SmallRng::seed_from_u64(42);
        let trials = 4000;
        let (mut rejected, mut covered) = (0, 0);
        for _ in 0..trials {
            let a: Vec<f64> = (0..5).map(|_| 120.0 * (1.0 + 0.03 * normal(&mut rng))).collect();
            let b: Vec<f64> = (0..8).map(|_| 100.0 * (1.0 + 0.08 * normal(&mut rng))).collect();
            let null: Vec<f64> = (0..8).map(|_| 120.0 * (1.0 + 0.08 * normal(&mut rng))).collect();
            let (sa, sb, sn) = (
                Sample::of(&a).unwrap(),
                Sample::of(&b).unwrap(),
                Sample::of(&null).unwrap(),
            );
            if welch(sa, sn).unwrap().p < ALPHA {
                rejected += 1;
            }
            let r = ratio_ci(sa, sb, 0.95).unwrap();
            if r.low <= 1.2 && 1.2 <= r.high {
                covered += 1;
            }
        }
        let fp = rejected as f64 / trials as f64;
        let cov = covered as f64 / trials as f64;
        assert!((0.03..0.07).contains(&fp), "false-positive rate {fp}");
        assert!((0.93..0.97).contains(&cov), "coverage {cov}");
    }

    #[test]
    fn property_tost_size_at_the_margin_is_at_most_alpha() {
        // True ratio exactly at the margin (1.03 and 0.97), n = 10 each, CoV 2 %: the test may
        // declare equivalence in at most α = 5 % of samples. At a true ratio of 1 it should
        // declare it most of the time (power), or the size check would be vacuous.
        let mut rng = SmallRng::seed_from_u64(7);
        let trials = 40000;
        let draw = |mean: f64, rng: &mut SmallRng| {
            let v: Vec<f64> = (0..10).map(|_| mean * (1.0 + 0.02 * normal(rng))).collect();
            Sample::of(&v).unwrap()
        };
        let mut rate = |ratio: f64| {
            let hits = (0..trials)
                .filter(|_| {
                    let (a, b) = (draw(100.0 * ratio, &mut rng), draw(100.0, &mut rng));
                    tost_ratio(a, b, DEFAULT_EQUIVALENCE_PCT).unwrap().equivalent()
                })
                .count();
            hits as f64 / trials as f64
        };
        let (up, down, null) = (rate(1.03), rate(0.97), rate(1.0));
        eprintln!("TOST equivalence rate: ratio 1.03 {up}, 0.97 {down}, 1.00 {null}");
        assert!(up <= 0.05 && down <= 0.05, "size {up} {down}");
        assert!(null > 0.8, "power {null}");
    }
}
