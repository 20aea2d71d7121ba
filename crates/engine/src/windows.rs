//! Per-window latency counts of one worker: a compact histogram for every window (one second)
//! of a time-based phase, so the report can show p50 / p99 / p99.9 / max over time
//! ([`crate::metric::LatencyWindows`]).
//!
//! Invariants:
//! - the counts are one flat array of `windows × WINDOW_BUCKETS` `u32`s, allocated before the
//!   timed region and never grown; [`WindowCounts::record`] is an index computation
//!   ([`crate::metric::window_bucket`]: a few integer operations) and one increment, no
//!   allocation and no lock;
//! - a window index past the last window counts in the last one (as the per-second series
//!   does);
//! - workers' counts merge by adding ([`WindowCounts::merge`]), and so do repeats' and ranks'
//!   stored bins ([`crate::metric::add_bins`]): percentiles are never averaged.
//!
//! Memory: 2.7 KiB per window and worker (a 60 s phase: 165 KiB per worker).

use crate::metric::{window_bucket, window_bucket_value, WINDOW_BUCKETS};

/// One worker's latency counts per window; see the module documentation.
#[derive(Clone, Debug, Default)]
pub struct WindowCounts {
    counts: Vec<u32>,
    windows: usize,
    /// Windows that received at least one value (the highest index recorded, plus one).
    reached: usize,
}

impl WindowCounts {
    /// Counts for `windows` windows (none for 0: recording then does nothing).
    pub fn new(windows: usize) -> WindowCounts {
        WindowCounts {
            counts: vec![0; windows * WINDOW_BUCKETS],
            windows,
            reached: 0,
        }
    }

    /// Whether this holds no window at all (a phase without a deadline).
    pub fn is_empty(&self) -> bool {
        self.windows == 0
    }

    /// Counts one operation of `ns` nanoseconds in window `window` (the last window for any
    /// later one). Never allocates.
    #[inline]
    pub fn record(&mut self, window: usize, ns: u64) {
        if self.windows == 0 {
            return;
        }
        let w = window.min(self.windows - 1);
        if let Some(c) = self.counts.get_mut(w * WINDOW_BUCKETS + window_bucket(ns)) {
            *c = c.saturating_add(1);
        }
        if w >= self.reached {
            self.reached = w + 1;
        }
    }

    /// Adds `other`'s counts (same or fewer windows) into these.
    pub fn merge(&mut self, other: &WindowCounts) {
        if self.windows < other.windows {
            self.counts.resize(other.windows * WINDOW_BUCKETS, 0);
            self.windows = other.windows;
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a = a.saturating_add(*b);
        }
        self.reached = self.reached.max(other.reached);
    }

    /// `(bucket value in ns, operations)` of every non-empty bucket, for each window up to the
    /// last one reached.
    pub fn bins(&self) -> Vec<Vec<(u64, u64)>> {
        (0..self.reached)
            .map(|w| {
                self.counts[w * WINDOW_BUCKETS..(w + 1) * WINDOW_BUCKETS]
                    .iter()
                    .enumerate()
                    .filter(|(_, &n)| n > 0)
                    .map(|(i, &n)| (window_bucket_value(i), u64::from(n)))
                    .collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::bins_quantile;

    #[test]
    fn counts_land_in_their_window_and_merge_by_adding() {
        let mut a = WindowCounts::new(3);
        for ns in [1_000, 2_000, 3_000] {
            a.record(0, ns);
        }
        a.record(1, 50_000);
        let mut b = WindowCounts::new(3);
        b.record(1, 50_000);
        b.record(9, 7_000_000); // past the end: the last window
        a.merge(&b);
        let bins = a.bins();
        assert_eq!(bins.len(), 3);
        assert_eq!(bins[0].iter().map(|b| b.1).sum::<u64>(), 3);
        assert_eq!(bins[1], vec![(window_bucket_value(window_bucket(50_000)), 2)]);
        let p = bins_quantile(&bins[2], 0.99).unwrap();
        assert!((p as f64 - 7e6).abs() / 7e6 < 0.07, "{p}");
    }

    #[test]
    fn no_windows_record_nothing() {
        let mut w = WindowCounts::new(0);
        w.record(0, 5);
        assert!(w.is_empty());
        assert!(w.bins().is_empty());
    }
}
