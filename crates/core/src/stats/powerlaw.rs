//! A power law fitted on log-log axes: `y = c · x^k`, the exponent `k` and its confidence
//! interval, as the repair-scaling report states it ("ext4 e2fsck: time ∝ files^1.02
//! [0.95, 1.09]").
//!
//! Method: ordinary least squares of `ln y` on `ln x` over every point (each repeat at each
//! size is one point, so the repeats' scatter is in the residuals). The slope is the exponent:
//!
//! * `k = Sxy / Sxx`, `ln c = ȳ − k·x̄`, with `Sxx = Σ(xᵢ − x̄)²`, `Sxy = Σ(xᵢ − x̄)(yᵢ − ȳ)` on
//!   the logarithms;
//! * the residual variance `s² = Σ rᵢ² / (n − 2)` and the slope's standard error
//!   `se = √(s² / Sxx)`;
//! * the interval `k ± t_{1−α/2, n−2} · se` (the t quantile from statrs' Student-t,
//!   [`super::t_quantile`]); `R² = 1 − Σ rᵢ² / Syy`.
//!
//! The fit assumes the log-residuals are independent with one variance (a multiplicative
//! error on the times), which timings of one machine roughly follow; a curve that bends (a
//! cache that stops holding the metadata) is not a power law, and its single exponent is an
//! average over the range, which the chart lets a reader see.
//!
//! Invariants: no function here panics; points with a non-positive or non-finite coordinate
//! are left out; a fit needs at least 3 points at 2 or more distinct `x` (else `None`).
//! Reference: Draper & Smith, *Applied Regression Analysis* (1998), ch. 1 and 3.

use super::t_quantile;
use serde::{Deserialize, Serialize};

/// A fitted power law `y = c · x^k`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PowerFit {
    /// The exponent `k` (dimensionless): the slope of `ln y` on `ln x`.
    pub exponent: f64,
    /// Its confidence interval `(low, high)` at [`PowerFit::confidence`].
    pub ci: (f64, f64),
    /// The factor `c`, in the unit of `y` per `x^k`.
    pub factor: f64,
    /// The share of the variance of `ln y` the line explains, 0..=1.
    pub r2: f64,
    /// Points used.
    pub n: usize,
    /// Confidence level of the interval (0.95).
    pub confidence: f64,
}

impl PowerFit {
    /// `y` on the fitted line at `x` (in the unit of `y`).
    pub fn at(&self, x: f64) -> f64 {
        self.factor * x.powf(self.exponent)
    }
}

/// Fits `y = c · x^k` to `points` `(x, y)` with a two-sided interval at `confidence`
/// (0 < confidence < 1); see the module documentation. `None` with fewer than 3 usable points,
/// fewer than 2 distinct `x`, or an invalid `confidence`.
pub fn fit(points: &[(f64, f64)], confidence: f64) -> Option<PowerFit> {
    let logs: Vec<(f64, f64)> = points
        .iter()
        .filter(|(x, y)| x.is_finite() && y.is_finite() && *x > 0.0 && *y > 0.0)
        .map(|(x, y)| (x.ln(), y.ln()))
        .collect();
    let n = logs.len();
    if n < 3 || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let nf = n as f64;
    let mx = logs.iter().map(|p| p.0).sum::<f64>() / nf;
    let my = logs.iter().map(|p| p.1).sum::<f64>() / nf;
    let sxx: f64 = logs.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = logs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = logs.iter().map(|p| (p.1 - my).powi(2)).sum();
    // Two distinct x at least: Sxx is then well above rounding.
    if sxx.is_nan() || sxx <= 1e-12 * nf {
        return None;
    }
    let k = sxy / sxx;
    let a = my - k * mx;
    let ssr: f64 = logs.iter().map(|p| (p.1 - a - k * p.0).powi(2)).sum();
    let df = nf - 2.0;
    let se = (ssr / df / sxx).sqrt();
    let t = t_quantile(1.0 - (1.0 - confidence) / 2.0, df)?;
    let r2 = if syy > 0.0 {
        (1.0 - ssr / syy).clamp(0.0, 1.0)
    } else {
        1.0
    };
    Some(PowerFit {
        exponent: k,
        ci: (k - t * se, k + t * se),
        factor: a.exp(),
        r2,
        n,
        confidence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use statrs::distribution::{ContinuousCDF, Normal};

    /// `repeats` points at each of `sizes` on `y = c · x^k` times a lognormal error of
    /// log-sd `sd` (drawn through statrs' normal quantile of a uniform).
    fn series(k: f64, c: f64, sizes: &[f64], repeats: usize, sd: f64, seed: u64) -> Vec<(f64, f64)> {
        let mut rng = SmallRng::seed_from_u64(seed);
        let normal = Normal::new(0.0, sd).expect("valid normal");
        let mut out = Vec::new();
        for &x in sizes {
            for _ in 0..repeats {
                let u: f64 = rng.gen_range(1e-12..1.0 - 1e-12);
                out.push((x, c * x.powf(k) * normal.inverse_cdf(u).exp()));
            }
        }
        out
    }

    const SIZES: [f64; 4] = [1e4, 3e4, 1e5, 1e6];

    #[test]
    fn a_linear_series_fits_exponent_one_and_a_quadratic_two() {
        for (k, seed) in [(1.0, 7), (2.0, 8)] {
            let pts = series(k, 3e-6, &SIZES, 3, 0.05, seed);
            let f = fit(&pts, 0.95).expect("fits");
            assert!(f.ci.0 <= k && k <= f.ci.1, "k = {k}: {f:?}");
            assert!(f.ci.1 - f.ci.0 < 0.1, "a 5 % error over two decades is precise: {f:?}");
            assert!(f.r2 > 0.99, "{f:?}");
            assert_eq!(f.n, 12);
            // The line passes through the data: at 10^5 within the error.
            let rel = f.at(1e5) / (3e-6 * 1e5f64.powf(k));
            assert!((0.95..1.05).contains(&rel), "{rel}");
        }
        // Exactly on the line: the exponent to rounding, a zero-width interval around it.
        let exact: Vec<(f64, f64)> = SIZES.iter().map(|&x| (x, 2.0 * x * x)).collect();
        let f = fit(&exact, 0.95).expect("fits");
        assert!((f.exponent - 2.0).abs() < 1e-9 && (f.ci.1 - f.ci.0) < 1e-6, "{f:?}");
        assert!((f.factor - 2.0).abs() < 1e-6, "{f:?}");
    }

    #[test]
    fn the_interval_covers_the_true_exponent_at_its_level() {
        // 400 seeded series of 3 sizes × 2 repeats (4 degrees of freedom, where a normal
        // quantile instead of t's would under-cover badly): about 95 % of the intervals hold k.
        let runs = 400;
        let covered = (0..runs)
            .filter(|&s| {
                let f = fit(&series(1.3, 1e-5, &[1e4, 1e5, 1e6], 2, 0.2, 1000 + s), 0.95).expect("fits");
                f.ci.0 <= 1.3 && 1.3 <= f.ci.1
            })
            .count();
        let rate = covered as f64 / runs as f64;
        // 95 % ± 3 binomial standard errors of 400 draws (1.1 %).
        assert!((0.917..=0.983).contains(&rate), "coverage {rate}");
    }

    #[test]
    fn too_few_or_unusable_points_give_no_fit() {
        assert!(
            fit(&[(1e4, 1.0), (1e5, 10.0)], 0.95).is_none(),
            "two points leave no residual"
        );
        assert!(fit(&[(1e4, 1.0), (1e4, 1.1), (1e4, 0.9)], 0.95).is_none(), "one size");
        let with_junk = [(1e4, 1.0), (0.0, 5.0), (1e5, f64::NAN), (1e5, -1.0), (1e5, 10.0)];
        assert!(fit(&with_junk, 0.95).is_none(), "two usable points");
        assert!(fit(&[(1e4, 1.0), (1e5, 10.0), (1e6, 100.0)], 1.0).is_none());
        let f = fit(&[(1e4, 1.0), (1e5, 10.0), (1e6, 100.0), (0.0, 1.0)], 0.9).expect("three usable");
        assert_eq!(f.n, 3);
    }
}
