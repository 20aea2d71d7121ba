//! Per-worker operation latency, recorded into an HDR histogram (the `hdrhistogram` crate).
//!
//! Each worker owns one [`LatencyRecorder`]; workers never share one, so recording takes no lock.
//! After the timed region the pool merges them ([`LatencyRecorder::merge`]) and the workload
//! reads percentiles in microseconds ([`LatencyRecorder::summary`]).
//!
//! Invariants:
//! - values are nanoseconds, tracked from 1 ns to 1 hour with 3 significant decimal digits
//!   (every reported value is within 0.1 % of the recorded one);
//! - the histogram is sized for that whole range when it is created and never resizes, so
//!   [`LatencyRecorder::record_ns`] never allocates; values above one hour are clamped to one
//!   hour (a phase that long is not a latency anyone reads to 0.1 %), 0 ns is recorded as 0;
//! - memory: about 270 KiB per recorder.

use crate::metric::MetricId;
use hdrhistogram::Histogram;
use std::time::Duration;

/// Lowest discernible value, in nanoseconds.
pub const LOWEST_NS: u64 = 1;
/// Highest trackable value, in nanoseconds (one hour); larger values are clamped to it.
pub const HIGHEST_NS: u64 = 3_600 * 1_000_000_000;
/// Significant decimal digits kept.
pub const SIGFIG: u8 = 3;

/// A latency histogram owned by one worker.
#[derive(Clone, Debug)]
pub struct LatencyRecorder {
    hist: Histogram<u64>,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyRecorder {
    /// An empty recorder covering 1 ns ..= 1 h at 3 significant digits (allocates its counts
    /// array now, once).
    pub fn new() -> LatencyRecorder {
        let hist = match Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGFIG) {
            Ok(h) => h,
            // The bounds are constants that satisfy the crate's preconditions (low ≥ 1,
            // high ≥ 2·low, sigfig ≤ 5); this arm cannot run.
            Err(e) => unreachable!("constant histogram bounds rejected: {e:?}"),
        };
        LatencyRecorder { hist }
    }

    /// Records one operation of `ns` nanoseconds; clamps above [`HIGHEST_NS`]. Never
    /// allocates.
    #[inline]
    pub fn record_ns(&mut self, ns: u64) {
        self.hist.saturating_record(ns);
    }

    /// Records one operation of duration `d` (clamped like [`LatencyRecorder::record_ns`]).
    #[inline]
    pub fn record(&mut self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.record_ns(ns);
    }

    /// Adds every value recorded by `other` into `self`.
    pub fn merge(&mut self, other: &LatencyRecorder) {
        if self.hist.add(&other.hist).is_err() {
            // Only possible if `other` had different bounds; fall back to clamped re-recording.
            for v in other.hist.iter_recorded() {
                self.hist.saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
    }

    /// Number of operations recorded.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// The latency at quantile `q` (0.0..=1.0) in microseconds; 0 when nothing was recorded.
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.hist.is_empty() {
            return 0.0;
        }
        self.hist.value_at_quantile(q.clamp(0.0, 1.0)) as f64 / 1_000.0
    }

    /// Largest recorded latency in microseconds (to 3 significant digits); 0 when empty.
    pub fn max_us(&self) -> f64 {
        if self.hist.is_empty() {
            return 0.0;
        }
        self.hist.max() as f64 / 1_000.0
    }

    /// Mean latency in microseconds; 0 when empty.
    pub fn mean_us(&self) -> f64 {
        if self.hist.is_empty() {
            return 0.0;
        }
        self.hist.mean() / 1_000.0
    }

    /// p50, p95, p99, p99.9 and max, in microseconds.
    pub fn summary(&self) -> LatencySummary {
        LatencySummary {
            count: self.count(),
            p50_us: self.quantile_us(0.50),
            p95_us: self.quantile_us(0.95),
            p99_us: self.quantile_us(0.99),
            p999_us: self.quantile_us(0.999),
            max_us: self.max_us(),
        }
    }

    /// A recorder holding `hist` (a histogram of this layout, e.g. another rank's, deserialised).
    pub fn from_histogram(hist: Histogram<u64>) -> LatencyRecorder {
        let mut r = LatencyRecorder::new();
        if r.hist.add(&hist).is_err() {
            for v in hist.iter_recorded() {
                r.hist.saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
        r
    }

    /// The histogram in compact form for storage: `(ns, operations)` of every non-empty
    /// log-spaced bucket ([`BUCKETS_PER_DECADE`] per factor of ten of latency), in increasing
    /// latency. Each bucket is named by its geometric centre in ns, so any coarser regrouping
    /// by a divisor of [`BUCKETS_PER_DECADE`] (the report's 8 per decade) puts it in the right
    /// group. At most ⌈log10([`HIGHEST_NS`]) × [`BUCKETS_PER_DECADE`]⌉ + 1 (≈ 200) buckets;
    /// their counts sum to [`LatencyRecorder::count`]. Empty when nothing was recorded.
    pub fn log_bins(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(i64, u64)> = Vec::new();
        for v in self.hist.iter_recorded() {
            let k = log_bucket(v.value_iterated_to());
            match out.last_mut() {
                Some((last, n)) if *last == k => *n += v.count_at_value(),
                _ => out.push((k, v.count_at_value())),
            }
        }
        out.into_iter()
            .map(|(k, n)| {
                let centre = 10f64.powf((k as f64 + 0.5) / BUCKETS_PER_DECADE as f64);
                (centre.round().max(1.0) as u64, n)
            })
            .collect()
    }

    /// The underlying histogram (for serialisation or custom quantiles).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }
}

/// Buckets per factor of ten in [`LatencyRecorder::log_bins`] (a multiple of the report's 8).
pub const BUCKETS_PER_DECADE: u32 = 16;

/// The log bucket of `ns`: `floor(log10(ns) × BUCKETS_PER_DECADE)` (0 ns counts as 1 ns).
fn log_bucket(ns: u64) -> i64 {
    ((ns.max(1) as f64).log10() * f64::from(BUCKETS_PER_DECADE)).floor() as i64
}

/// Latency percentiles of one phase, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LatencySummary {
    /// Operations recorded.
    pub count: u64,
    /// Median, µs.
    pub p50_us: f64,
    /// 95th percentile, µs.
    pub p95_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// Maximum, µs.
    pub max_us: f64,
}

/// One statistic of a [`LatencySummary`], as a typed name: phases choose their latency set
/// from these (see `engine::phase::LatencySet`), never by matching metric names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    /// Median (`lat_p50`).
    P50,
    /// 95th percentile (`lat_p95`).
    P95,
    /// 99th percentile (`lat_p99`).
    P99,
    /// 99.9th percentile (`lat_p999`).
    P999,
    /// Maximum (`lat_max`).
    Max,
}

impl Stat {
    /// Every statistic, in report order.
    pub const ALL: [Stat; 5] = [Stat::P50, Stat::P95, Stat::P99, Stat::P999, Stat::Max];

    /// The metric name (`lat_p50` … `lat_max`).
    pub fn name(self) -> &'static str {
        match self {
            Stat::P50 => "lat_p50",
            Stat::P95 => "lat_p95",
            Stat::P99 => "lat_p99",
            Stat::P999 => "lat_p999",
            Stat::Max => "lat_max",
        }
    }

    /// Its value in `s`, µs.
    pub fn of(self, s: &LatencySummary) -> f64 {
        match self {
            Stat::P50 => s.p50_us,
            Stat::P95 => s.p95_us,
            Stat::P99 => s.p99_us,
            Stat::P999 => s.p999_us,
            Stat::Max => s.max_us,
        }
    }
}

impl LatencySummary {
    /// The percentiles as phase metrics `lat_p50`, `lat_p95`, `lat_p99`, `lat_p999`, `lat_max`
    /// (µs, lower is better). Empty when nothing was recorded.
    pub fn metrics(&self) -> Vec<(MetricId, f64)> {
        self.select(&Stat::ALL)
    }

    /// The statistics `stats`, in that order, as phase metrics ([`MetricId::latency`]: µs, lower
    /// is better, role latency). Empty when nothing was recorded.
    pub fn select(&self, stats: &[Stat]) -> Vec<(MetricId, f64)> {
        if self.count == 0 {
            return Vec::new();
        }
        stats
            .iter()
            .map(|s| (MetricId::latency(s.name()), s.of(self)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= b.abs() * 0.001 + 1e-9
    }

    #[test]
    fn percentiles_of_a_uniform_ramp() {
        let mut r = LatencyRecorder::new();
        for us in 1..=1000u64 {
            r.record_ns(us * 1_000);
        }
        let s = r.summary();
        assert_eq!(s.count, 1000);
        assert!(close(s.p50_us, 500.0), "{s:?}");
        assert!(close(s.p95_us, 950.0), "{s:?}");
        assert!(close(s.p99_us, 990.0), "{s:?}");
        assert!(close(s.p999_us, 999.0), "{s:?}");
        assert!(close(s.max_us, 1000.0), "{s:?}");
        assert!(close(r.mean_us(), 500.5), "{}", r.mean_us());
    }

    #[test]
    fn out_of_range_values_are_clamped_not_lost() {
        let mut r = LatencyRecorder::new();
        r.record_ns(0);
        r.record(Duration::from_secs(7200));
        r.record_ns(u64::MAX);
        assert_eq!(r.count(), 3);
        assert!(close(r.max_us(), HIGHEST_NS as f64 / 1e3), "{}", r.max_us());
        assert_eq!(r.quantile_us(0.0), 0.0);
    }

    #[test]
    fn merge_adds_counts_and_keeps_extremes() {
        let mut a = LatencyRecorder::new();
        let mut b = LatencyRecorder::new();
        for _ in 0..90 {
            a.record(Duration::from_micros(10));
        }
        for _ in 0..10 {
            b.record(Duration::from_millis(5));
        }
        a.merge(&b);
        a.merge(&LatencyRecorder::new());
        assert_eq!(a.count(), 100);
        assert!(close(a.quantile_us(0.5), 10.0));
        assert!(close(a.quantile_us(0.95), 5_000.0));
        assert!(close(a.max_us(), 5_000.0));
        // Merging into an empty recorder copies.
        let mut e = LatencyRecorder::new();
        e.merge(&a);
        assert_eq!(e.summary(), a.summary());
    }

    #[test]
    fn empty_recorder_reports_zeros_and_no_metrics() {
        let r = LatencyRecorder::default();
        assert_eq!(r.summary(), LatencySummary::default());
        assert!(r.summary().metrics().is_empty());
    }

    #[test]
    fn metrics_are_named_lower_is_better_micros() {
        let mut r = LatencyRecorder::new();
        r.record_ns(2_000);
        let m = r.summary().metrics();
        let names: Vec<&str> = m.iter().map(|(id, _)| id.name.as_str()).collect();
        assert_eq!(names, ["lat_p50", "lat_p95", "lat_p99", "lat_p999", "lat_max"]);
        assert!(m.iter().all(|(id, v)| id.unit == crate::metric::Unit::Micros
            && id.direction == crate::metric::Direction::LowerIsBetter
            && id.role == crate::metric::Role::Latency
            && close(*v, 2.0)));
    }

    #[test]
    fn log_bins_are_compact_sorted_and_keep_every_operation() {
        assert!(LatencyRecorder::new().log_bins().is_empty());
        let mut r = LatencyRecorder::new();
        // A wide spread: 1 ns to one hour, many distinct values.
        let mut ns = 1u64;
        let mut n = 0u64;
        while ns < HIGHEST_NS {
            r.record_ns(ns);
            n += 1;
            ns = ns + ns / 50 + 1;
        }
        r.record_ns(HIGHEST_NS);
        n += 1;
        let bins = r.log_bins();
        assert!(bins.len() <= 202, "{} buckets", bins.len());
        assert!(bins.len() > 150, "{} buckets", bins.len());
        assert_eq!(bins.iter().map(|b| b.1).sum::<u64>(), n);
        assert!(bins.windows(2).all(|w| w[0].0 < w[1].0), "increasing");
        // A bucket's centre falls in that bucket and in the report's coarser one.
        let mut one = LatencyRecorder::new();
        for _ in 0..7 {
            one.record_ns(12_345);
        }
        let b = one.log_bins();
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].1, 7);
        assert_eq!(log_bucket(b[0].0), log_bucket(12_345));
        assert!(b[0].0 > 11_000 && b[0].0 < 14_000, "{b:?}");
    }

    #[test]
    fn recording_does_not_grow_the_histogram() {
        let mut r = LatencyRecorder::new();
        let before = r.histogram().distinct_values();
        for ns in [1u64, 999, 1_000_000, HIGHEST_NS, HIGHEST_NS * 10] {
            r.record_ns(ns);
        }
        assert_eq!(r.histogram().distinct_values(), before);
    }
}
