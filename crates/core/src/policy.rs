//! The run policy of a session: how its repeats are run (repeats, warm-up, slot order, dropped
//! caches) and summarised (trim, confidence level); and [`LoopIo`], how the loop devices under
//! the filesystems do their I/O.
//!
//! `config` produces a [`Policy`] from a suite (its `[run]` table and the CLI overrides), the
//! runner follows it, and the store keeps it typed with the session (schema 4), so the report
//! reads the trim and confidence a session ran with from the store and never re-parses the
//! suite text. This module depends on nothing else in fsbench.
//!
//! Invariants of a policy produced by `config`: `repeats ≥ 1`, `0 < confidence < 1`.

use crate::choice::Choice;
use serde::{Deserialize, Serialize};

/// In which order the slots (case × repeat) run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Repeat 1 of every case, then repeat 2 of every case, … (ABCABC), so slow drift of the
    /// machine spreads over all variants instead of landing on one. Since issue 26 each round
    /// runs its cases in a fresh random permutation drawn from the session's seed (`--seed`,
    /// stored in its run options: ABC CAB BCA …), so a position or carry-over effect does not
    /// land on the same filesystem every round; sessions without a seed ran the fixed order.
    #[default]
    Interleaved,
    /// All repeats of a case, then the next case (AAABBBCCC).
    Sequential,
    /// As `interleaved`, with every odd-numbered repeat in the reverse order (ABC CBA ABC), so
    /// two cases take turns running first (`fsbench verify`: native and referee, ABBA).
    Alternating,
}

impl Order {
    /// Stable text form used in the store (the suite's spelling).
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Interleaved => "interleaved",
            Order::Sequential => "sequential",
            Order::Alternating => "alternating",
        }
    }

    /// Inverse of [`Order::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        [Order::Interleaved, Order::Sequential, Order::Alternating]
            .into_iter()
            .find(|o| o.as_str() == s)
    }
}

/// How the loop devices under the filesystems do I/O on their image files (`[run] loop_io`,
/// `--loop-io`). Not a field of [`Policy`] (whose columns are schema 4 and 5): the suite and the
/// run options carry it, and every sample's I/O-path facts record what was asked
/// (`loop_dio_asked`, doc/io-path.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LoopIo {
    /// `losetup --direct-io=on`: the image's I/O bypasses the host's page cache (falling back
    /// to buffered where the host's filesystem refuses O_DIRECT, which the report flags).
    #[default]
    Direct,
    /// Plain `losetup`: the host's page cache of the image serves and buffers the loop device's
    /// I/O, on purpose (to measure how much that path changes a result).
    Buffered,
}

impl Choice for LoopIo {
    const CHOICES: &'static [(Self, &'static str, &'static str)] = &[
        (
            LoopIo::Direct,
            "direct",
            "`losetup --direct-io=on`: the image's I/O bypasses the host's page cache (falling back to \
             buffered where the host's filesystem refuses O_DIRECT, which the report flags)",
        ),
        (
            LoopIo::Buffered,
            "buffered",
            "Plain `losetup`: the host's page cache of the image serves and buffers the loop device's \
             I/O, on purpose (to measure how much that path changes a result)",
        ),
    ];
}

impl LoopIo {
    /// The suite's spelling (`direct`, `buffered`).
    pub fn as_str(self) -> &'static str {
        self.name()
    }

    /// Inverse of [`LoopIo::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        Self::from_name(s).ok()
    }

    /// Whether direct I/O on the backing file is asked for.
    pub fn is_direct(self) -> bool {
        self == LoopIo::Direct
    }
}

/// How a suite's repeats are run and summarised.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// Measured repeats per case (≥ 1).
    pub repeats: u32,
    /// Warm-up repeats per case, run first, stored, and excluded from statistics.
    pub warmup: u32,
    /// Slot order.
    pub order: Order,
    /// `sync; echo 3 > /proc/sys/vm/drop_caches` before every timed phase.
    pub drop_caches: bool,
    /// How many of the best and of the worst repeats the trimmed mean drops (the studies'
    /// "drop best and worst" is 1).
    pub trim: u32,
    /// Confidence level of intervals, e.g. 0.95.
    pub confidence: f64,
    /// Memory cgroup limit of every repeat's workload, in bytes (`[run] memory`, `--memory`);
    /// `None`: no limit (schema 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<u64>,
    /// Adaptive stopping rule: the target CI half-width of every headline metric, in percent of
    /// its mean (`[run] precision`, `--precision`); `None`: exactly `repeats` repeats (schema 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
    /// Adaptive stopping rule: wall-time budget of the whole session in seconds (`[run]
    /// budget`, `--budget`), never exceeded by more than one round (schema 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<f64>,
    /// The report runs the methodology checks (crates/report/src/methodology.rs): true for every
    /// session recorded since schema 5, false for older ones, whose exports stay unchanged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub methodology: bool,
}

impl Policy {
    /// Whether more rounds than `repeats` may run (a precision target or a budget is set).
    pub fn is_adaptive(&self) -> bool {
        self.precision.is_some() || self.budget_s.is_some()
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            repeats: 3,
            warmup: 0,
            order: Order::Interleaved,
            drop_caches: true,
            trim: 1,
            confidence: 0.95,
            memory: None,
            precision: None,
            budget_s: None,
            methodology: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_round_trips_through_its_text_and_matches_the_suite_spelling() {
        for o in [Order::Interleaved, Order::Sequential, Order::Alternating] {
            assert_eq!(Order::parse(o.as_str()), Some(o));
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        }
        assert_eq!(Order::parse("random"), None);
    }

    #[test]
    fn loop_io_round_trips_through_its_text_and_defaults_to_direct() {
        for l in [LoopIo::Direct, LoopIo::Buffered] {
            assert_eq!(LoopIo::parse(l.as_str()), Some(l));
            assert_eq!(serde_json::to_value(l).unwrap(), l.as_str());
        }
        assert_eq!(LoopIo::default(), LoopIo::Direct);
        assert!(LoopIo::Direct.is_direct() && !LoopIo::Buffered.is_direct());
        assert_eq!(LoopIo::parse("dio"), None);
    }
}
