//! Statistics over repeats: pure functions, no I/O. (Skeleton: the stats helper fills this in.)

use serde::{Deserialize, Serialize};

/// Summary of the measured (non-warm-up) repeats of one metric of one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// Sample standard deviation (n − 1); 0 when n < 2.
    pub sd: f64,
    /// Coefficient of variation sd / |mean|; 0 when the mean is 0.
    pub cov: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Mean after dropping `trimmed` lowest and `trimmed` highest values (the studies'
    /// "drop best and worst"); equals `mean` when too few values to trim.
    pub trimmed_mean: f64,
    /// How many values were dropped from each end for `trimmed_mean`.
    pub trimmed: usize,
    /// Confidence level of the interval (0.95).
    pub confidence: f64,
    /// Lower end of the Student-t interval of the mean; `None` when n < 2.
    pub ci_low: Option<f64>,
    /// Upper end of the Student-t interval of the mean; `None` when n < 2.
    pub ci_high: Option<f64>,
}

impl Summary {
    /// Half-width of the interval, if any.
    pub fn ci_half_width(&self) -> Option<f64> {
        Some((self.ci_high? - self.ci_low?) / 2.0)
    }
}

/// Summarises `values` with `trim` values dropped per end for the trimmed mean and a
/// `confidence` Student-t interval of the mean. `None` for an empty slice.
pub fn summarize(_values: &[f64], _trim: usize, _confidence: f64) -> Option<Summary> {
    unimplemented!()
}
