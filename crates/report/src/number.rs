//! Number formatting for report cells: `mean ± half-width` with digits the data supports.
//!
//! Rule: the half-width of the interval gets three significant digits, and the mean is printed
//! to the same decimal place, but never with more than five significant digits
//! (`312.4 ± 12.1`, `15234 ± 312`, `0.5320 ± 0.0121`). Without an interval (n = 1) the mean
//! gets four significant digits. Magnitudes of 10⁹ and above, or below 10⁻⁴, switch to
//! scientific notation. At most six decimals are ever printed. Never panics; non-finite numbers
//! print as Rust does (`NaN`, `inf`).

/// Decimals that show `x` with `significant` significant digits, within `0..=6`.
fn decimals_for(x: f64, significant: i32) -> usize {
    if x == 0.0 || !x.is_finite() {
        return 0;
    }
    let magnitude = x.abs().log10().floor() as i32;
    (significant - 1 - magnitude).clamp(0, 6) as usize
}

/// `true` when plain decimals would be unreadable.
fn needs_scientific(x: f64) -> bool {
    let a = x.abs();
    a.is_finite() && (a >= 1e9 || (a > 0.0 && a < 1e-4))
}

/// A single value with four significant digits (`312.4`, `0.01234`, `15234`).
pub fn value(x: f64) -> String {
    if needs_scientific(x) {
        return format!("{x:.3e}");
    }
    format!("{x:.*}", decimals_for(x, 4))
}

/// `mean ± half` (see the module docs), or just the mean when there is no interval.
pub fn mean_ci(mean: f64, half: Option<f64>) -> String {
    let Some(half) = half.filter(|h| h.is_finite()) else {
        return value(mean);
    };
    if needs_scientific(mean) || needs_scientific(half) {
        return format!("{mean:.3e} ± {half:.2e}");
    }
    let decimals = if half == 0.0 {
        decimals_for(mean, 4)
    } else if mean == 0.0 {
        decimals_for(half, 3)
    } else {
        decimals_for(half, 3).min(decimals_for(mean, 5))
    };
    format!("{mean:.decimals$} ± {half:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_follow_the_interval() {
        assert_eq!(mean_ci(312.4123, Some(12.13)), "312.4 ± 12.1");
        assert_eq!(mean_ci(15234.2, Some(312.4)), "15234 ± 312");
        assert_eq!(mean_ci(0.532, Some(0.0121)), "0.5320 ± 0.0121");
        assert_eq!(mean_ci(312.4123, Some(0.5)), "312.41 ± 0.50");
        assert_eq!(mean_ci(7.5, Some(0.0)), "7.500 ± 0.000");
        assert_eq!(mean_ci(0.0, Some(1.25)), "0.00 ± 1.25");
        assert_eq!(mean_ci(312.4123, None), "312.4");
        assert_eq!(mean_ci(2.5e12, Some(1e10)), "2.500e12 ± 1.00e10");
    }

    #[test]
    fn single_values() {
        assert_eq!(value(312.4123), "312.4");
        assert_eq!(value(0.012345), "0.01235");
        assert_eq!(value(15234.0), "15234");
        assert_eq!(value(0.0), "0");
        assert_eq!(value(-45.678), "-45.68");
        assert_eq!(value(3e-7), "3.000e-7");
        assert_eq!(value(f64::NAN), "NaN");
    }
}
