//! Student's t distribution: cumulative distribution function and quantile (inverse CDF),
//! thin wrappers over [`statrs::distribution::StudentsT`] (standard form: location 0, scale 1).
//!
//! statrs evaluates the CDF through the regularized incomplete beta function,
//! `P(T ≤ −|t|) = ½ · I_x(ν/2, ½)` with `x = ν / (ν + t²)` (Abramowitz & Stegun 26.7.1,
//! 26.5.27), and the quantile by inverting `I_x` (`inv_beta_reg`). What these wrappers add:
//!
//! * `None` instead of a panic for invalid arguments (`p` outside `(0, 1)`, `df ≤ 0`, NaN);
//! * degrees of freedom above [`DF_MAX`] are evaluated at `DF_MAX`, which also maps `df = +∞`
//!   (the quantile then differs from the normal one by less than 1e-4 for `p` within `1e-12` of
//!   0 or 1, and far less for ordinary `p`); benchmark repeats never get near that;
//! * `t_quantile(0.5, df)` is exactly 0.
//!
//! Accuracy: the tests check published tables (df 1…100, p 0.95/0.975/0.995) to 3 decimals and
//! a few high-precision values to 1e-7 relative.
//!
//! Invariants: no function here panics; invalid arguments give `None`.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Degrees of freedom above this are evaluated at this value (see the module docs).
pub const DF_MAX: f64 = 1e6;

/// The standard t distribution with `df` degrees of freedom, `df` clamped to [`DF_MAX`];
/// `None` unless `df > 0`.
fn standard(df: f64) -> Option<StudentsT> {
    if df.is_nan() || df <= 0.0 {
        return None;
    }
    StudentsT::new(0.0, 1.0, df.min(DF_MAX)).ok()
}

/// Cumulative distribution function `P(T ≤ t)` of Student's t with `df` degrees of freedom
/// (`df` may be fractional, as Welch's approximation needs).
///
/// Returns `None` when `t` is NaN or `df` is not a positive number; `t = ±∞` gives 1 or 0.
pub fn t_cdf(t: f64, df: f64) -> Option<f64> {
    if t.is_nan() {
        return None;
    }
    Some(standard(df)?.cdf(t).clamp(0.0, 1.0))
}

/// Quantile (inverse CDF) of Student's t: the `t` with `P(T ≤ t) = p`, for `df` degrees of
/// freedom (fractional allowed). `t_quantile(0.975, 9.0)` ≈ 2.262 is the factor of a two-sided
/// 95 % interval from 10 values.
///
/// Returns `None` unless `0 < p < 1` and `df > 0` (`df = +∞` is evaluated at [`DF_MAX`]).
pub fn t_quantile(p: f64, df: f64) -> Option<f64> {
    if !(p > 0.0 && p < 1.0) {
        return None;
    }
    let dist = standard(df)?;
    if p == 0.5 {
        return Some(0.0);
    }
    // Work on the lower tail q = min(p, 1 − p), where statrs' CDF keeps relative precision.
    let (q, sign) = if p > 0.5 { (1.0 - p, 1.0) } else { (p, -1.0) };
    Some(sign * bisect_lower_tail(&dist, q))
}

/// Finds `t ≥ 0` with `P(T ≤ −t) = q` for `0 < q < ½` by bracketing (double `hi` until the
/// tail drops below `q`) and bisection to relative width 1e-15 on statrs' CDF. statrs' own
/// `inverse_cdf` is not used: its inverse incomplete beta is off by a factor of 4.7 in the
/// probability at `p = 1e-9, df = 1` and by 1e-4 in `t` at `df = 1e6` (the inversion and
/// large-df tests below fail with it).
fn bisect_lower_tail(dist: &StudentsT, q: f64) -> f64 {
    let tail = |t: f64| dist.cdf(-t);
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    // The tail is decreasing in t. 2^1100 overflows f64, so this loop is bounded.
    while tail(hi) > q && hi.is_finite() {
        lo = hi;
        hi *= 2.0;
    }
    if !hi.is_finite() {
        return f64::MAX;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if tail(mid) > q {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-15 * hi {
            break;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One-sided critical values `t_{p, df}` from a standard t table (e.g. NIST/SEMATECH
    /// e-Handbook of Statistical Methods, table 1.3.6.7.2), rounded to 3 decimals.
    const TABLE: &[(f64, [f64; 3])] = &[
        // df      p = 0.95, 0.975, 0.995
        (1.0, [6.314, 12.706, 63.657]),
        (2.0, [2.920, 4.303, 9.925]),
        (3.0, [2.353, 3.182, 5.841]),
        (4.0, [2.132, 2.776, 4.604]),
        (5.0, [2.015, 2.571, 4.032]),
        (9.0, [1.833, 2.262, 3.250]),
        (10.0, [1.812, 2.228, 3.169]),
        (30.0, [1.697, 2.042, 2.750]),
        (100.0, [1.660, 1.984, 2.626]),
    ];

    #[test]
    fn quantiles_match_published_table_to_three_decimals() {
        for &(df, row) in TABLE {
            for (p, expected) in [0.95, 0.975, 0.995].into_iter().zip(row) {
                let t = t_quantile(p, df).unwrap();
                assert!(
                    (t - expected).abs() <= 0.0005 + 1e-12,
                    "t({p}, {df}) = {t}, table {expected}"
                );
            }
        }
    }

    #[test]
    fn quantiles_match_high_precision_values() {
        // Values computed with mpmath at 30 digits (betainc + findroot), quoted to 10 significant
        // digits; they agree with R's qt().
        let cases = [
            (0.975, 1.0, 12.70620474),
            (0.975, 3.0, 3.182446305),
            (0.975, 10.0, 2.228138852),
            (0.995, 4.0, 4.604094871),
            (0.9995, 7.0, 5.407882521),
            (0.975, 1000.0, 1.962339081),
            (0.6, 5.0, 0.2671808657),
        ];
        for (p, df, expected) in cases {
            let t = t_quantile(p, df).unwrap();
            assert!(
                (t - expected).abs() < 1e-7 * expected.max(1.0),
                "t({p}, {df}) = {t}, want {expected}"
            );
        }
    }

    #[test]
    fn large_df_approaches_the_normal_quantile() {
        // z_{0.975} = 1.959963985.
        let t = t_quantile(0.975, 1e12).unwrap();
        assert!((t - 1.959963985).abs() < 1e-5, "{t}");
        let t = t_quantile(0.975, f64::INFINITY).unwrap();
        assert!((t - 1.959963985).abs() < 1e-5, "{t}");
    }

    #[test]
    fn quantile_is_antisymmetric_and_inverts_the_cdf() {
        for df in [1.0, 2.0, 2.5, 3.0, 7.0, 19.0, 250.0] {
            for p in [1e-9, 0.001, 0.05, 0.3, 0.5, 0.8, 0.975, 0.999999] {
                let t = t_quantile(p, df).unwrap();
                let back = t_cdf(t, df).unwrap();
                assert!((back - p).abs() < 1e-9 * p.max(1e-3), "cdf(t({p}, {df})) = {back}");
                let mirrored = t_quantile(1.0 - p, df).unwrap();
                assert!((t + mirrored).abs() < 1e-7 * t.abs().max(1.0), "{t} vs {mirrored}");
            }
        }
    }

    #[test]
    fn cdf_known_values() {
        // Cauchy (df = 1): P(T ≤ 1) = 3/4.
        assert!((t_cdf(1.0, 1.0).unwrap() - 0.75).abs() < 1e-12);
        // df = 2 closed form: P(T ≤ t) = ½ + t / (2√(t² + 2)); at t = 2: ½ + 1/√6.
        let want = 0.5 + 1.0 / 6f64.sqrt();
        assert!((t_cdf(2.0, 2.0).unwrap() - want).abs() < 1e-12);
        assert_eq!(t_cdf(0.0, 5.0), Some(0.5));
        assert_eq!(t_cdf(f64::INFINITY, 5.0), Some(1.0));
        assert_eq!(t_cdf(f64::NEG_INFINITY, 5.0), Some(0.0));
    }

    #[test]
    fn invalid_arguments_give_none() {
        for (p, df) in [
            (0.0, 5.0),
            (1.0, 5.0),
            (-0.1, 5.0),
            (f64::NAN, 5.0),
            (0.9, 0.0),
            (0.9, -1.0),
            (0.9, f64::NAN),
        ] {
            assert_eq!(t_quantile(p, df), None, "p {p} df {df}");
        }
        assert_eq!(t_cdf(f64::NAN, 3.0), None);
        assert_eq!(t_cdf(1.0, 0.0), None);
    }

    #[test]
    fn quantile_is_finite_and_monotone_for_random_arguments() {
        use rand::{rngs::SmallRng, Rng, SeedableRng};
        let mut rng = SmallRng::seed_from_u64(42);
        for _ in 0..300 {
            // df from 0.05 to 1e7 on a log scale, fractional; p from 1e-12 to 1 − 1e-12.
            let df = 10f64.powf(rng.gen_range(-1.3..7.0));
            let p1 = rng.gen_range(1e-12..1.0 - 1e-12);
            let p2 = rng.gen_range(1e-12..1.0 - 1e-12);
            let (lo, hi) = if p1 < p2 { (p1, p2) } else { (p2, p1) };
            let (t_lo, t_hi) = (t_quantile(lo, df).unwrap(), t_quantile(hi, df).unwrap());
            assert!(t_lo.is_finite() && t_hi.is_finite(), "df {df}: {t_lo} {t_hi}");
            assert!(t_lo <= t_hi, "df {df}: t({lo}) = {t_lo} > t({hi}) = {t_hi}");
        }
    }
}
