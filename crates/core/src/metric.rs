//! The one vocabulary of measurements shared by the engine, external-tool adapters, the store,
//! statistics and every report.
//!
//! A [`Measurement`] is one number from one repeat: which phase of the workload produced it,
//! which [`MetricId`] it is, and its value in the metric's [`Unit`]. Whether bigger is better is
//! *declared* by the producer in [`Direction`], never guessed from a name later (fsperf's habit).
//!
//! Invariants: values are finite; a metric's unit and direction never change between repeats of
//! the same case (the store keeps them per row so old data stays readable).

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

/// Whether a larger value of a metric is an improvement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Throughput, rates: more is better.
    HigherIsBetter,
    /// Times, latencies, CPU use, fragmentation: less is better.
    LowerIsBetter,
}

impl Direction {
    /// `true` when `a` is better than `b` in this direction.
    pub fn better(self, a: f64, b: f64) -> bool {
        match self {
            Direction::HigherIsBetter => a > b,
            Direction::LowerIsBetter => a < b,
        }
    }

    /// Stable text form used in the store and exports.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::HigherIsBetter => "higher_is_better",
            Direction::LowerIsBetter => "lower_is_better",
        }
    }

    /// Inverse of [`Direction::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "higher_is_better" => Some(Direction::HigherIsBetter),
            "lower_is_better" => Some(Direction::LowerIsBetter),
            _ => None,
        }
    }
}

/// What a metric is for in a report, declared by its producer next to its [`Direction`] so that
/// no report ever guesses it from the metric's name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A result the phase exists to measure (throughput, rate, seconds, transactions per
    /// second): ranked, charted, shown in every table.
    #[default]
    Headline,
    /// CPU use of the fsbench process (and its children) over the phase: shown beside the
    /// headline rows, never ranked.
    ProcessCpu,
    /// Busy share of the whole machine over the phase: in the detailed formats only.
    SystemCpu,
    /// A latency percentile or mean of the phase's operations: in the detailed formats only.
    Latency,
    /// Anything else a phase records for context, outside the ranked tables.
    Detail,
    /// A correctness result, not a speed: a count of acknowledged data lost, a negative control
    /// caught, an error reported (the power-cut and durability workloads). Shown in every table
    /// beside the headline rows, never ranked (no best, behind or tied: fewer losses is a
    /// verdict, not a performance), charted or summarised as a performance.
    Outcome,
}

impl Role {
    /// Stable text form used in the store and exports.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Headline => "headline",
            Role::ProcessCpu => "process_cpu",
            Role::SystemCpu => "system_cpu",
            Role::Latency => "latency",
            Role::Detail => "detail",
            Role::Outcome => "outcome",
        }
    }

    /// Inverse of [`Role::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        [
            Role::Headline,
            Role::ProcessCpu,
            Role::SystemCpu,
            Role::Latency,
            Role::Detail,
            Role::Outcome,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
    }
}

/// The unit a metric is expressed in. Binary prefixes throughout: 1 MiB = 1,048,576 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Unit {
    /// Mebibytes per second.
    #[serde(rename = "MiB/s")]
    MibPerSec,
    /// Operations (files, seeks, requests, transactions) per second.
    #[serde(rename = "ops/s")]
    OpsPerSec,
    /// Seconds of wall-clock time.
    #[serde(rename = "s")]
    Seconds,
    /// Microseconds (latency percentiles).
    #[serde(rename = "us")]
    Micros,
    /// Percent of one CPU (process) or of all CPUs (system).
    #[serde(rename = "%")]
    Percent,
    /// A dimensionless ratio (for example extents per file).
    #[serde(rename = "ratio")]
    Ratio,
    /// A plain count.
    #[serde(rename = "count")]
    Count,
    /// Mebibytes (an amount, not a rate: what a phase wrote to its device).
    #[serde(rename = "MiB")]
    Mib,
}

impl Unit {
    /// Stable text form used in the store, labels and exports.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::MibPerSec => "MiB/s",
            Unit::OpsPerSec => "ops/s",
            Unit::Seconds => "s",
            Unit::Micros => "us",
            Unit::Percent => "%",
            Unit::Ratio => "ratio",
            Unit::Count => "count",
            Unit::Mib => "MiB",
        }
    }

    /// Inverse of [`Unit::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        [
            Unit::MibPerSec,
            Unit::OpsPerSec,
            Unit::Seconds,
            Unit::Micros,
            Unit::Percent,
            Unit::Ratio,
            Unit::Count,
            Unit::Mib,
        ]
        .into_iter()
        .find(|u| u.as_str() == s)
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Prefix of the names of latency statistics (`lat_p50`, `lat_p99`, `lat_max`).
pub const LATENCY_PREFIX: &str = "lat_";

/// How a sample's note about the guest kernel it ran under begins (`guest: Linux 6.1.0-56-amd64
/// under tcg …`): the guest runner writes it, the report groups samples by it.
pub const GUEST_NOTE_PREFIX: &str = "guest: Linux ";

/// What is measured: a name (`throughput`, `rate`, `cpu_process`, `lat_p99`, …), its unit, its
/// direction and its role.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MetricId {
    /// Short snake_case name, unique within a phase.
    pub name: String,
    /// Unit of the value.
    pub unit: Unit,
    /// Declared direction.
    pub direction: Direction,
    /// Declared role in reports. Not part of the JSON export (schema 1 has no such field):
    /// readers of old exports keep working, and the report derives its sections from it.
    #[serde(skip)]
    pub role: Role,
}

impl MetricId {
    /// A headline metric where more is better.
    pub fn higher(name: &str, unit: Unit) -> Self {
        MetricId {
            name: name.to_string(),
            unit,
            direction: Direction::HigherIsBetter,
            role: Role::Headline,
        }
    }

    /// A headline metric where less is better.
    pub fn lower(name: &str, unit: Unit) -> Self {
        MetricId {
            name: name.to_string(),
            unit,
            direction: Direction::LowerIsBetter,
            role: Role::Headline,
        }
    }

    /// A latency statistic in microseconds (lower is better, [`Role::Latency`]).
    pub fn latency(name: &str) -> Self {
        MetricId::lower(name, Unit::Micros).with_role(Role::Latency)
    }

    /// The same metric with another role.
    pub fn with_role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }

    /// The name without the prefix its role already says: a [`Role::Latency`] metric
    /// `lat_p99` is `p99` in a chart of latencies; other metrics keep their name. The `lat_`
    /// prefix is the producers' naming convention ([`LATENCY_PREFIX`]), kept here with the
    /// vocabulary so that no report matches names.
    pub fn name_within_role(&self) -> &str {
        match self.role {
            Role::Latency => self.name.trim_start_matches(LATENCY_PREFIX),
            _ => &self.name,
        }
    }
}

/// One number of one repeat.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The workload phase that produced it (`seq_write_block`, `rand_create`, …).
    pub phase: String,
    /// In a many-rank session, the rank whose own figure this is; `None` for the figure of the
    /// whole repeat (every measurement of a one-rank run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// What it is.
    pub metric: MetricId,
    /// The value, in `metric.unit`.
    pub value: f64,
}

impl Measurement {
    /// The report row this measurement is shown in ([`row_name`]).
    pub fn row(&self) -> Cow<'_, str> {
        row_name(&self.phase, self.rank)
    }
}

/// The name a report shows for the row of `phase` and `rank`: the phase, and for one rank's own
/// figures `PHASE@rankN` (display only: stored and passed around as the two fields).
pub fn row_name(phase: &str, rank: Option<u32>) -> Cow<'_, str> {
    match rank {
        None => Cow::Borrowed(phase),
        Some(r) => Cow::Owned(format!("{phase}@rank{r}")),
    }
}

/// CPU use over one timed phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUsage {
    /// User + system CPU time of the fsbench process (getrusage RUSAGE_SELF) over wall time,
    /// in percent of one CPU, as bonnie++ reports `%CP` (can exceed 100 with threads).
    pub process_pct: f64,
    /// Busy share of all CPUs from /proc/stat over the phase (user+nice+system+irq+softirq+steal
    /// over total, idle and iowait count as not busy), in percent of the whole machine.
    pub system_pct: f64,
}

/// The result of one timed phase of a workload in one repeat.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseResult {
    /// Phase name, snake_case, stable across versions (it is a report row).
    pub phase: String,
    /// In a many-rank session, the rank whose own result this is; `None` for the result of the
    /// whole repeat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// Wall time of the timed region (including the fsync the suite counts).
    pub wall: Duration,
    /// CPU use over the timed region.
    pub cpu: CpuUsage,
    /// The phase's headline metrics (throughput, rate, seconds, latency percentiles …).
    pub metrics: Vec<(MetricId, f64)>,
}

impl PhaseResult {
    /// Flattens the phase into measurements: its metrics, then `cpu_process` and `cpu_system`
    /// (percent, lower is better).
    pub fn measurements(&self) -> Vec<Measurement> {
        let mut out: Vec<Measurement> = self
            .metrics
            .iter()
            .map(|(m, v)| Measurement {
                phase: self.phase.clone(),
                rank: self.rank,
                metric: m.clone(),
                value: *v,
            })
            .collect();
        out.push(Measurement {
            phase: self.phase.clone(),
            rank: self.rank,
            metric: MetricId::lower("cpu_process", Unit::Percent).with_role(Role::ProcessCpu),
            value: self.cpu.process_pct,
        });
        out.push(Measurement {
            phase: self.phase.clone(),
            rank: self.rank,
            metric: MetricId::lower("cpu_system", Unit::Percent).with_role(Role::SystemCpu),
            value: self.cpu.system_pct,
        });
        out
    }
}

/// A latency histogram an external tool reported for one phase (fio's `json+`
/// completion-latency bins), stored so a report can draw it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyHistogram {
    /// The phase it belongs to.
    pub phase: String,
    /// `(bucket value in ns, operations)` of every non-empty bucket, in increasing latency.
    pub bins: Vec<(u64, u64)>,
}

/// Operations per elapsed second of one time-based phase (a pool phase with a deadline:
/// fileio, oltp on SQLite), all workers summed; the last entry is a partial second.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThroughputSeries {
    /// The phase it belongs to.
    pub phase: String,
    /// In a many-rank session, the rank whose own series this is; `None` for one rank's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// Operations completed in second `i` after the phase's start, for each `i`.
    pub ops: Vec<u64>,
}

impl ThroughputSeries {
    /// The report row (chart) this series is shown as ([`row_name`]).
    pub fn row(&self) -> Cow<'_, str> {
        row_name(&self.phase, self.rank)
    }
}

/// Latency of one time-based phase window by window (1 s windows by default): one compact
/// histogram per window, so a report can draw p50 / p99 / p99.9 / max over time and merge
/// repeats and ranks by adding counts, never by averaging percentiles.
///
/// Buckets follow [`window_bucket`]: [`WINDOW_SUB_BUCKETS`] per factor of two of latency
/// (each at most 1 / 16 = 6.25 % wide), named by [`window_bucket_value`]; the same latency
/// always lands in the same bucket, so two histograms add bucket by bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyWindows {
    /// The phase it belongs to.
    pub phase: String,
    /// In a many-rank session, the rank whose own windows these are; `None` for one rank's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// Length of one window, in milliseconds.
    pub window_ms: u64,
    /// For window `i` (from the phase's start): `(bucket value in ns, operations)` of every
    /// non-empty bucket, in increasing latency. The last window is usually partial.
    pub bins: Vec<Vec<(u64, u64)>>,
}

impl LatencyWindows {
    /// The report row this is shown as ([`row_name`]).
    pub fn row(&self) -> Cow<'_, str> {
        row_name(&self.phase, self.rank)
    }
}

/// Sub-buckets per factor of two of latency in [`LatencyWindows`] histograms.
pub const WINDOW_SUB_BUCKETS: u64 = 16;
/// Number of window buckets: latencies from 0 ns to 2⁴² ns (73 minutes, larger ones land in
/// the last bucket).
pub const WINDOW_BUCKETS: usize = 43 * WINDOW_SUB_BUCKETS as usize;

/// The window bucket of a latency of `ns` nanoseconds: values below [`WINDOW_SUB_BUCKETS`]
/// have a bucket each; above, the octave (position of the highest set bit) and the next four
/// bits pick one of [`WINDOW_SUB_BUCKETS`] equal parts of the octave. A few integer
/// operations, no allocation: cheap enough for the hot loop.
#[inline]
pub fn window_bucket(ns: u64) -> usize {
    if ns < WINDOW_SUB_BUCKETS {
        return ns as usize;
    }
    let octave = 63 - u64::from(ns.leading_zeros()); // ≥ 4
    let sub = (ns >> (octave - 4)) & (WINDOW_SUB_BUCKETS - 1);
    let i = ((octave - 3) * WINDOW_SUB_BUCKETS + sub) as usize;
    i.min(WINDOW_BUCKETS - 1)
}

/// The value (ns) a window bucket stands for: the middle of its range (exact below
/// [`WINDOW_SUB_BUCKETS`] ns).
pub fn window_bucket_value(i: usize) -> u64 {
    let i = i as u64;
    if i < WINDOW_SUB_BUCKETS {
        return i;
    }
    let octave = i / WINDOW_SUB_BUCKETS + 3;
    let sub = i % WINDOW_SUB_BUCKETS;
    let width = 1u64 << (octave - 4);
    (1u64 << octave) + sub * width + width / 2
}

/// The latency (ns) at quantile `q` (0..=1) of `(value, count)` bins in increasing value: the
/// smallest bin value whose cumulative count reaches `q` of the total (the maximum for `q = 1`);
/// `None` when the bins are empty.
pub fn bins_quantile(bins: &[(u64, u64)], q: f64) -> Option<u64> {
    let total: u64 = bins.iter().map(|b| b.1).sum();
    if total == 0 {
        return None;
    }
    let want = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for &(v, n) in bins {
        seen += n;
        if seen >= want {
            return Some(v);
        }
    }
    bins.last().map(|b| b.0)
}

/// Adds `more` into `into`, both `(value, count)` bins in increasing value; the result stays
/// sorted with one entry per value.
pub fn add_bins(into: &mut Vec<(u64, u64)>, more: &[(u64, u64)]) {
    let mut out = Vec::with_capacity(into.len() + more.len());
    let (mut a, mut b) = (into.iter().peekable(), more.iter().peekable());
    loop {
        match (a.peek(), b.peek()) {
            (Some(&&(va, na)), Some(&&(vb, nb))) => {
                if va == vb {
                    out.push((va, na + nb));
                    a.next();
                    b.next();
                } else if va < vb {
                    out.push((va, na));
                    a.next();
                } else {
                    out.push((vb, nb));
                    b.next();
                }
            }
            (Some(&&x), None) => {
                out.push(x);
                a.next();
            }
            (None, Some(&&x)) => {
                out.push(x);
                b.next();
            }
            (None, None) => break,
        }
    }
    *into = out;
}

/// Everything one repeat of one case produced, before it is stored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RawSample {
    /// Timed phases in the order they ran.
    pub phases: Vec<PhaseResult>,
    /// Latency histograms of phases whose tool reported one (fio); usually empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histograms: Vec<LatencyHistogram>,
    /// Per-second operation counts of time-based phases; usually empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<ThroughputSeries>,
    /// Per-window latency histograms of time-based phases; usually empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<LatencyWindows>,
    /// Things the report should say about this repeat (for example "phase too short to time").
    pub notes: Vec<String>,
}

impl RawSample {
    /// All measurements of all phases, in phase order.
    pub fn measurements(&self) -> Vec<Measurement> {
        self.phases.iter().flat_map(PhaseResult::measurements).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_buckets_are_monotone_narrow_and_name_their_own_values() {
        let mut last = 0;
        for ns in (0..5_000u64).chain((13..40).map(|k| 1u64 << k)).chain([u64::MAX]) {
            let b = window_bucket(ns);
            assert!(b < WINDOW_BUCKETS);
            assert!(b >= last, "bucket of {ns} went down");
            last = b;
            let v = window_bucket_value(b);
            assert_eq!(window_bucket(v), b, "value {v} of bucket {b} lands elsewhere");
            if (16..1u64 << 40).contains(&ns) {
                let err = (v as f64 - ns as f64).abs() / ns as f64;
                assert!(err <= 1.0 / 16.0, "{ns} ns stands as {v} ns ({err})");
            }
        }
    }

    #[test]
    fn bins_add_and_give_quantiles() {
        let mut a = vec![(10, 2), (30, 1)];
        add_bins(&mut a, &[(5, 1), (30, 2), (50, 4)]);
        assert_eq!(a, vec![(5, 1), (10, 2), (30, 3), (50, 4)]);
        assert_eq!(bins_quantile(&a, 0.5), Some(30));
        assert_eq!(bins_quantile(&a, 0.0), Some(5));
        assert_eq!(bins_quantile(&a, 1.0), Some(50));
        assert_eq!(bins_quantile(&[], 0.5), None);
    }

    #[test]
    fn unit_and_direction_round_trip_through_text() {
        for u in [
            Unit::MibPerSec,
            Unit::OpsPerSec,
            Unit::Seconds,
            Unit::Micros,
            Unit::Percent,
        ] {
            assert_eq!(Unit::parse(u.as_str()), Some(u));
        }
        for d in [Direction::HigherIsBetter, Direction::LowerIsBetter] {
            assert_eq!(Direction::parse(d.as_str()), Some(d));
        }
    }

    #[test]
    fn phase_result_flattens_with_cpu_metrics() {
        let p = PhaseResult {
            phase: "seq_write_block".into(),
            rank: None,
            wall: Duration::from_secs(1),
            cpu: CpuUsage {
                process_pct: 50.0,
                system_pct: 30.0,
            },
            metrics: vec![(MetricId::higher("throughput", Unit::MibPerSec), 100.0)],
        };
        let m = p.measurements();
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].metric.name, "throughput");
        assert_eq!(m[1].metric.name, "cpu_process");
        assert_eq!(m[1].value, 50.0);
        assert!(Direction::LowerIsBetter.better(1.0, 2.0));
    }
}
