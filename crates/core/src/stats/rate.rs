//! A rate's confidence interval: the Wilson score interval of `k` events in `n` trials (Wilson
//! 1927; Brown, Cai and DasGupta 2001 recommend it over the Wald interval, which collapses to
//! zero width at k = 0, exactly the count a durable primitive should show). Used for the loss
//! rates of the durability matrix.

/// The two-sided 95 % normal quantile.
pub const Z95: f64 = 1.959_963_984_540_054;

/// The Wilson score interval (low, high) of the proportion `k / n` at normal quantile `z`
/// (for example [`Z95`]); `None` when `n` is 0 or `k > n`. Both ends lie in `[0, 1]`.
pub fn wilson(k: u64, n: u64, z: f64) -> Option<(f64, f64)> {
    if n == 0 || k > n {
        return None;
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_published_values() {
        // Brown, Cai & DasGupta (2001) / Newcombe (1998) example: 0 of 10 → (0, 0.2775);
        // 81 of 263 → (0.2553, 0.3662) at 95 %.
        let (lo, hi) = wilson(0, 10, Z95).unwrap();
        assert!(lo == 0.0 && (hi - 0.2775).abs() < 1e-4, "{hi}");
        let (lo, hi) = wilson(81, 263, Z95).unwrap();
        assert!((lo - 0.2553).abs() < 1e-4 && (hi - 0.3662).abs() < 1e-4, "{lo} {hi}");
        let (lo, hi) = wilson(10, 10, Z95).unwrap();
        assert!((lo - 0.7225).abs() < 1e-4 && (hi - 1.0).abs() < 1e-12, "{lo} {hi}");
        assert_eq!(wilson(1, 0, Z95), None);
        assert_eq!(wilson(3, 2, Z95), None);
    }
}
