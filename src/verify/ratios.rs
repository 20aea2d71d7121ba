//! The ratios of a stored verify session: for every filesystem variant, pair and compared
//! metric, native mean / referee mean with its 95 % log-ratio confidence interval
//! ([`crate::stats::two_sample::ratio_ci`], the interval `compare` uses), and a verdict.
//!
//! Built from stored cases and samples only (the report renders it as a forest plot), so it
//! imports nothing from `config` and never re-runs anything.
//!
//! Verdicts: `ok` (|ratio − 1| within the tolerance), `outside` (beyond it: the exit code of
//! `fsbench verify` is 1), `bound` (the native mean must reach a lower bound, or the row fails
//! as `BELOW BOUND`), `no data` (a side has no ok repeat with the metric, or the referee ran the
//! phase without it, e.g. a renamed fio / sysbench / dd metric: counted as a failure, because
//! nothing was verified). There is no uncompared row. A row is a bound when
//! - bonnie++ printed `+++++` for the phase in every repeat it ran it (told by the note
//!   [`too_fast_phases`] reads): its rate was above work / 0.5 s, the bound;
//! - bonnie++ printed `+++++` in some repeats only: its mean is at least the mean with each
//!   `+++++` counted at work / 0.5 s, and the native must reach that less the tolerance (the
//!   timed repeats are bonnie++'s slowest, so a ratio of them alone is biased low);
//! - the pair's table marks the row one-sided ([`MetricPair::at_least`]: a response time is
//!   at least the service time the referee measures): the bound is the referee's mean less
//!   the tolerance.
//!
//! A metric with a second referee ([`MetricPair::second`]: fio doing bonnie++'s seeks) gets a
//! second row right after its first, native / second referee, a ratio with its intervals like
//! any other. Its first row, when a bound, also has a ceiling: a native mean above
//! [`pairs::FAR_ABOVE_SECOND`] × the second referee's mean fails (`FAR ABOVE`), since a bound
//! alone passes every native that is too fast. A bonnie throughput row without a second
//! referee ([`MetricPair::device_ceiling`]) has the raw device as its ceiling instead: a native
//! mean above the session's raw-device ceiling ([`RawBaseline::ceiling_mib_s`], the faster of
//! its sequential write and read) plus the report's cache-bound tolerance
//! ([`crate::report::cache_bound_tolerance`]: 50 % for a baseline of every pass) fails as
//! `FAR ABOVE` — bonnie++'s block phases run in a memory cgroup too small to cache their file, so
//! a native that fast did not reach the disk. Without a measured baseline there is no ceiling.
//!
//! Such a response-time row is held from above too (issue 42, item 2): a native repeat that ran
//! at most [`crate::engine::stall::STALL_UTILISATION`] busy (its stored `utilisation` row) with
//! a response time more than [`crate::engine::stall::STALL_FACTOR`] × the referee's service
//! time stalled, and the row is `STALL` (a failure), naming each such repeat and the windows
//! (seconds of its phase) of its late responses from the stored per-second histograms. A
//! session stored before the utilisation row is said to have no upper check.
//!
//! Partial data is kept: the point ratio is native mean / referee mean over whatever repeats
//! each side has (one is enough; not for a partly `+++++` row, whose timed repeats are a
//! biased subset), and every row carries its n per side (shown in the table and in the forest
//! plot's labels) and which side ran first in each repeat (from the stored start times).
//!
//! Next to the point verdict (which alone decides the exit code, as issue 13 asks), every row
//! with a ratio gets the verdict of its interval ([`Interval`]) against the same band
//! `[1 − tol, 1 + tol]`: the whole 95 % CI inside it (`agrees`), wholly outside it (`differs`),
//! or across an edge (`undecided: more pairs`). A point outside the band with an undecided
//! interval is what noise looks like; a `differs` row is a difference the data proves.
//! That interval is the *paired* one ([`paired_ratio_ci`]) when two or more repeats have both
//! sides: the native run and its referee of one repeat run back to back, so the machine's
//! drift from repeat to repeat (here up to ×10 in a shared VM's disk speed) cancels in each
//! repeat's ratio; the unpaired log-ratio CI of the means is printed too, as issue 13 asks.

use super::pairs::{self, MetricPair, Pair};
use crate::engine::workloads::bonnie_pp::too_fast_phases;
use crate::engine::WorkloadKind;
use crate::stats::two_sample::{ratio_ci, Sample};
use crate::store::{CaseRecord, RawBaseline, SampleRecord, SampleStatus};
use std::fmt::Write as _;

/// The suite name of every verify session.
pub const SUITE_NAME: &str = "verify";
/// Confidence of the intervals.
pub const CONFIDENCE: f64 = 0.95;

/// What a row says.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Inside the tolerance.
    Ok,
    /// Outside the tolerance.
    Outside,
    /// Not enough data on one side; the reason.
    NoData(String),
    /// A device-counter row on a filesystem mounted from no block device (tmpfs, a ZFS
    /// dataset): neither side can have it; the reason. Not a failure.
    NoDevice(String),
    /// A response time beyond what any queue gives at the native's utilisation (module doc):
    /// a stall ([`crate::engine::stall`]); a failure.
    Stall {
        /// Native mean, in the metric's unit.
        native: f64,
        /// [`crate::engine::stall::STALL_FACTOR`] × the referee's service time, same unit.
        limit: f64,
        /// Which repeats stalled, at what utilisation, and the windows of their late responses.
        basis: String,
    },
    /// A one-sided check (module doc): the native mean must reach `bound`; below it is a
    /// failure.
    Bound {
        /// Native mean, in the metric's unit.
        native: f64,
        /// The lower bound, same unit.
        bound: f64,
        /// Where the bound comes from (`bonnie++ +++++ in 5 repeat(s): above 16384`).
        basis: String,
        /// The most the native mean may be, and where that comes from: a bound cannot catch
        /// a native that is too fast, so a row with a second referee of the same access
        /// pattern fails above [`pairs::FAR_ABOVE_SECOND`] × that referee's mean.
        ceiling: Option<(f64, String)>,
    },
}

impl Verdict {
    /// Whether the row fails `fsbench verify`.
    pub fn fails(&self) -> bool {
        match self {
            Verdict::Outside | Verdict::NoData(_) | Verdict::Stall { .. } => true,
            Verdict::Bound {
                native, bound, ceiling, ..
            } => native < bound || ceiling.as_ref().is_some_and(|(c, _)| native > c),
            Verdict::Ok | Verdict::NoDevice(_) => false,
        }
    }

    /// Short text for tables.
    pub fn text(&self) -> String {
        match self {
            Verdict::Ok => "ok".into(),
            Verdict::Outside => "OUTSIDE".into(),
            Verdict::NoData(why) => format!("NO DATA: {why}"),
            Verdict::NoDevice(why) => format!("not measured: {why}"),
            Verdict::Stall { native, limit, basis } => {
                format!("STALL: native {} > {}: {basis}", num(Some(*native)), num(Some(*limit)))
            }
            Verdict::Bound {
                native,
                bound,
                basis,
                ceiling,
            } => {
                let (n, b) = (num(Some(*native)), num(Some(*bound)));
                match ceiling {
                    _ if native < bound => format!("BELOW BOUND: {basis}; native {n} < {b}"),
                    Some((c, why)) if native > c => {
                        format!("FAR ABOVE: {basis}, but native {n} > {} ({why})", num(Some(*c)))
                    }
                    Some((c, why)) => format!(
                        "bound: {basis}; native {n} >= {b} and <= {} ({why}): consistent",
                        num(Some(*c))
                    ),
                    None => format!("bound: {basis}; native {n} >= {b}: consistent"),
                }
            }
        }
    }
}

/// Where a row's 95 % CI lies relative to the tolerance band `[1 − tol, 1 + tol]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interval {
    /// The whole interval lies inside the band: the two agree at 95 %.
    Agrees,
    /// The whole interval lies outside the band: the two differ by more than the tolerance.
    Differs,
    /// The interval crosses an edge of the band: more pairs are needed to decide.
    Undecided,
}

impl Interval {
    /// The interval `[low, high]` of a ratio against the band of `tolerance_pct` percent.
    pub fn of(low: f64, high: f64, tolerance_pct: f64) -> Interval {
        let (lo_band, hi_band) = (1.0 - tolerance_pct / 100.0, 1.0 + tolerance_pct / 100.0);
        if low >= lo_band && high <= hi_band {
            Interval::Agrees
        } else if high < lo_band || low > hi_band {
            Interval::Differs
        } else {
            Interval::Undecided
        }
    }

    /// Short text for tables (`CI agrees`, `CI differs`, `CI undecided: more pairs`).
    pub fn text(self) -> &'static str {
        match self {
            Interval::Agrees => "CI agrees",
            Interval::Differs => "CI differs",
            Interval::Undecided => "CI undecided: more pairs",
        }
    }
}

/// One compared metric on one filesystem.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Filesystem variant (report column name).
    pub variant: String,
    /// Pair id.
    pub pair: String,
    /// The referee's name.
    pub tool: String,
    /// `phase metric` of the native side.
    pub native: String,
    /// `phase metric` of the referee.
    pub referee: String,
    /// Mean of the native values (metric's unit), if any.
    pub native_mean: Option<f64>,
    /// Mean of the referee values, if any.
    pub referee_mean: Option<f64>,
    /// Ok repeats with the metric: native, referee.
    pub n: (usize, usize),
    /// Native mean / referee mean, from whatever repeats each side has (`None` without a
    /// value on a side).
    pub point: Option<f64>,
    /// Native / referee with its interval (`None` without two values a side).
    pub ratio: Option<(f64, f64, f64)>,
    /// The paired ratio (geometric mean of each repeat's native/referee) with its interval
    /// ([`paired_ratio_ci`]); `None` under two repeats with both sides.
    pub paired: Option<(f64, f64, f64)>,
    /// Tolerance, percent.
    pub tolerance_pct: f64,
    /// Which side ran first in each repeat both ran, in repeat order: `N` native, `R` referee.
    pub order: String,
    /// The verdict of the point ratio (decides the exit code).
    pub verdict: Verdict,
    /// The verdict of the interval; `None` without a ratio or for a by-design row.
    pub interval: Option<Interval>,
}

impl Row {
    /// Label of the row in tables and the forest plot.
    pub fn label(&self) -> String {
        format!(
            "{} {} {} vs {} {} (n {}/{})",
            self.variant, self.pair, self.native, self.tool, self.referee, self.n.0, self.n.1
        )
    }
}

/// Every row of a verify session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VerifyTable {
    /// Rows in variant, pair, metric order.
    pub rows: Vec<Row>,
}

impl VerifyTable {
    /// Rows that fail the check.
    pub fn failures(&self) -> usize {
        self.rows.iter().filter(|r| r.verdict.fails()).count()
    }

    /// Rows whose interval has the verdict `i`.
    pub fn intervals(&self, i: Interval) -> usize {
        self.rows.iter().filter(|r| r.interval == Some(i)).count()
    }
}

/// One phase's `(bucket value ns, operations)` bins for each second of it.
type WindowBins = Vec<Vec<(u64, u64)>>;

/// What one side of a row has in the ok, measured repeats of its case.
#[derive(Default)]
struct Side {
    /// (repeat, value) of the metric.
    values: Vec<(u32, f64)>,
    /// (repeat, (start time, record id)) of every ok repeat, for the order of the two sides:
    /// the start time has whole seconds, and the record id (samples are stored in the order
    /// they ran) orders two runs that began in the same second.
    started: Vec<(u32, (String, i64))>,
    /// Repeats that ran the phase without the metric.
    untimed: usize,
    /// (repeat, utilisation 0–1) of an open-loop phase ([`crate::engine::phase::UTILISATION`]).
    utilisation: Vec<(u32, f64)>,
    /// (repeat, per-second response bins) of the phase ([`crate::metric::LatencyWindows`]).
    windows: Vec<(u32, WindowBins)>,
    /// Repeats whose referee is bonnie++ and printed `+++++` for the phase, with the rate the
    /// phase must have exceeded ([`BonniePpSpec::too_fast_bound`]).
    too_fast: Option<(usize, f64)>,
}

/// The side of (phase, metric) of the case `workload` on `variant`.
fn side(
    cases: &[CaseRecord],
    samples: &[SampleRecord],
    variant: &str,
    workload: &str,
    (phase, metric): (&str, &str),
) -> Side {
    let Some(case) = cases.iter().find(|c| c.variant == variant && c.workload == workload) else {
        return Side::default();
    };
    // Only bonnie++ may leave a rate out (`+++++`): its work gives the bound.
    let bound = match serde_json::from_str::<WorkloadKind>(&case.workload_json) {
        Ok(WorkloadKind::BonniePp(spec)) => Some(spec.too_fast_bound(phase)),
        _ => None,
    };
    let mut out = Side::default();
    for (s, id) in samples.iter().map(|s| (&s.sample, s.id)) {
        if s.case_id != case.case_id || s.is_warmup || s.status != SampleStatus::Ok {
            continue;
        }
        out.started.push((s.repeat, (s.started_at.clone(), id)));
        let in_phase: Vec<_> = s
            .measurements
            .iter()
            .filter(|m| m.rank.is_none() && m.phase == phase)
            .collect();
        if let Some(u) = in_phase
            .iter()
            .find(|m| m.metric.name == crate::engine::phase::UTILISATION)
        {
            out.utilisation.push((s.repeat, u.value));
        }
        if let Some(w) = s.windows.iter().find(|w| w.phase == phase && w.rank.is_none()) {
            out.windows.push((s.repeat, w.bins.clone()));
        }
        match in_phase.iter().find(|m| m.metric.name == metric) {
            Some(m) => out.values.push((s.repeat, m.value)),
            None if in_phase.is_empty() => {}
            None => {
                out.untimed += 1;
                let fast = s.notes.iter().any(|n| too_fast_phases(n).contains(&phase));
                if let (true, Some(b)) = (fast, bound) {
                    let k = out.too_fast.map_or(0, |(k, _)| k);
                    out.too_fast = Some((k + 1, b));
                }
            }
        }
    }
    out
}

/// Who ran first in each repeat both sides ran: `N` (native) or `R` (referee) per repeat,
/// in repeat order (`NRN`); empty when no repeat has both.
fn order(native: &Side, referee: &Side) -> String {
    let mut o: Vec<(u32, char)> = native
        .started
        .iter()
        .filter_map(|(k, a)| {
            let (_, b) = referee.started.iter().find(|(j, _)| j == k)?;
            Some((*k, if a <= b { 'N' } else { 'R' }))
        })
        .collect();
    o.sort_unstable();
    o.into_iter().map(|(_, c)| c).collect()
}

/// The paired ratio of the repeats both sides have: the geometric mean of native/referee over
/// the repeats with a positive value on each side, and its `confidence` interval from Student's
/// t on the log ratios (n − 1 degrees of freedom). `None` under two pairs, or when every pair
/// has a non-positive value. Identical ratios give a zero-width interval.
pub fn paired_ratio_ci(native: &[(u32, f64)], referee: &[(u32, f64)], confidence: f64) -> Option<(f64, f64, f64)> {
    let logs: Vec<f64> = native
        .iter()
        .filter_map(|(k, a)| {
            let (_, b) = referee.iter().find(|(j, _)| j == k)?;
            (*a > 0.0 && *b > 0.0).then(|| (a / b).ln())
        })
        .collect();
    let n = logs.len();
    if n < 2 || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let mean = logs.iter().sum::<f64>() / n as f64;
    let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = crate::stats::t_quantile(0.5 + confidence / 2.0, (n - 1) as f64)?;
    let half = t * (var / n as f64).sqrt();
    let (r, lo, hi) = (mean.exp(), (mean - half).exp(), (mean + half).exp());
    (r.is_finite() && lo.is_finite() && hi.is_finite()).then_some((r, lo, hi))
}

fn mean(v: &[(u32, f64)]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().map(|(_, x)| x).sum::<f64>() / v.len() as f64)
}

/// The quantile a latency metric's name stands for (`lat_p99` → 0.99), if any.
fn quantile_of(metric: &str) -> Option<f64> {
    // p50, p95, p99: 0.50, 0.95, 0.99; p999: 0.999.
    let digits = metric.strip_prefix("lat_p")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    format!("0.{digits}").parse().ok().filter(|q| *q > 0.0)
}

/// The native repeats of a response-time row whose value is a stall against the referee's
/// service time `referee` ([`crate::engine::stall::is_stall`] at the repeat's stored
/// utilisation), each said with its value, utilisation and the windows of its late responses.
fn stalled_repeats(mp: &MetricPair, nat: &Side, referee: f64) -> Vec<String> {
    use crate::engine::stall;
    let q = quantile_of(mp.native.1).unwrap_or(0.99);
    let limit = stall::STALL_FACTOR * referee;
    let mut v: Vec<(u32, f64)> = nat.values.clone();
    v.sort_by_key(|(k, _)| *k);
    v.iter()
        .filter_map(|(k, value)| {
            let u = nat.utilisation.iter().find(|(j, _)| j == k)?.1;
            if !stall::is_stall(*value, referee, u) {
                return None;
            }
            let late = nat
                .windows
                .iter()
                .find(|(j, _)| j == k)
                .map(|(_, w)| stall::late_windows(w, q, limit))
                .unwrap_or_default();
            Some(format!(
                "repeat {}: {} at {:.1} % utilisation, late responses {}",
                k + 1,
                num(Some(*value)),
                u * 100.0,
                stall::windows_text(&late, limit)
            ))
        })
        .collect()
}

/// The verdict of a one-sided row (a response time against the referee's service time): a
/// stall when a native repeat ran at low utilisation and its response time is more than
/// [`crate::engine::stall::STALL_FACTOR`] × the referee's (two-sided, issue 42), else a bound
/// of the referee's mean less the tolerance.
fn response_verdict(p: &Pair, mp: &MetricPair, why: &str, nat: &Side, native: f64, referee: f64) -> Verdict {
    use crate::engine::stall::{STALL_FACTOR, STALL_UTILISATION};
    let service = format!("{} {} {}", p.tool, mp.referee.1, num(Some(referee)));
    let stalled = stalled_repeats(mp, nat, referee);
    if !stalled.is_empty() {
        return Verdict::Stall {
            native,
            limit: STALL_FACTOR * referee,
            basis: format!(
                "at most {:.0} % utilisation a queue keeps a response time under {STALL_FACTOR:.0} × the service                  time ({service}), so a repeat above it stalled: {}",
                STALL_UTILISATION * 100.0,
                stalled.join("; ")
            ),
        };
    }
    // The repeats too busy for the stall limit are named with their utilisation: a queue
    // there may hold a response far above the service time.
    let busy: Vec<String> = nat
        .utilisation
        .iter()
        .filter(|(_, u)| *u > STALL_UTILISATION)
        .map(|(k, u)| format!("repeat {} {:.0} % busy", k + 1, u * 100.0))
        .collect();
    let upper = if nat.utilisation.is_empty() {
        " (no utilisation stored: the stall limit is not checked)".to_string()
    } else {
        let unjudged = if busy.is_empty() {
            String::new()
        } else {
            format!(" (not judged: {}, where a queue can do more)", busy.join(", "))
        };
        format!(
            ", and at most {STALL_FACTOR:.0} × it ({}) in every repeat at most {:.0} % busy{unjudged}",
            num(Some(STALL_FACTOR * referee)),
            STALL_UTILISATION * 100.0
        )
    };
    Verdict::Bound {
        native,
        bound: referee * (1.0 - mp.tolerance_pct / 100.0),
        basis: format!("{why}: {service} less {:.0} %{upper}", mp.tolerance_pct),
        ceiling: None,
    }
}

/// The point verdict of a row from its two sides; `point` is native mean / referee mean.
/// `ceiling`: the most the native mean may be where the row is a bound (from a second referee).
fn verdict(
    p: &Pair,
    mp: &MetricPair,
    (nat, rf): (&Side, &Side),
    point: Option<f64>,
    ceiling: Option<(f64, String)>,
) -> Verdict {
    let keep = 1.0 - mp.tolerance_pct / 100.0;
    if let (Some(why), Some(native), Some(referee)) = (mp.at_least, mean(&nat.values), mean(&rf.values)) {
        return response_verdict(p, mp, why, nat, native, referee);
    }
    if let (Some((k, above)), Some(native)) = (rf.too_fast, mean(&nat.values)) {
        // bonnie++'s mean is at least its mean with every +++++ counted at the rate it beat;
        // the repeats it timed are its slowest and carry the tools' noise, so a bound that
        // rests on them is kept less the tolerance (one of only +++++ is exact).
        let timed = rf.values.len();
        let least = (rf.values.iter().map(|(_, v)| v).sum::<f64>() + k as f64 * above) / (timed + k) as f64;
        let (bound, basis) = if timed == 0 {
            (
                least,
                format!("{} +++++ in {k} repeat(s): above {}", p.tool, num(Some(above))),
            )
        } else {
            let basis = format!(
                "{} +++++ in {k} of {} repeats (above {}), so its mean is at least {} less {:.0} %",
                p.tool,
                timed + k,
                num(Some(above)),
                num(Some(least)),
                mp.tolerance_pct
            );
            (least * keep, basis)
        };
        return Verdict::Bound {
            native,
            bound,
            basis,
            ceiling,
        };
    }
    if let Some(r) = point {
        return if (r - 1.0).abs() * 100.0 <= mp.tolerance_pct {
            Verdict::Ok
        } else {
            Verdict::Outside
        };
    }
    Verdict::NoData(if rf.untimed > 0 && rf.too_fast.is_none() {
        format!(
            "{} ran {} without `{}` in {} repeat(s) (a renamed metric?)",
            p.tool, mp.referee.0, mp.referee.1, rf.untimed
        )
    } else {
        format!(
            "{} native and {} {} repeat(s) with the metric; need 1 each",
            nat.values.len(),
            rf.values.len(),
            p.tool
        )
    })
}

/// For a device-counter row ([`pairs::DEVICE_READ_MIB`]) on a variant whose filesystem is
/// mounted from no block device (tmpfs, a ZFS pool's dataset): why it has no value on either
/// side. `None` for every other row and variant, whose missing values are NO DATA.
fn no_block_device(cases: &[CaseRecord], variant: &str, mp: &MetricPair) -> Option<String> {
    use crate::fstype::{Backing, FsType};
    if mp.native.1 != pairs::DEVICE_READ_MIB {
        return None;
    }
    let case = cases.iter().find(|c| c.variant == variant)?;
    matches!(FsType::of(&case.fs_type).backing, Backing::Memory | Backing::Pool).then(|| {
        format!(
            "{} is mounted from no block device, so neither side has device counters",
            case.fs_type
        )
    })
}

/// Which referee a row compares the native with: the pair's own, or its second
/// ([`Pair::second`]) for a metric that has one.
#[derive(Clone, Copy, PartialEq)]
enum Referee {
    First,
    Second,
}

fn row(
    (cases, samples, baseline): (&[CaseRecord], &[SampleRecord], Option<&RawBaseline>),
    variant: &str,
    p: &Pair,
    mp: &MetricPair,
    which: Referee,
) -> Row {
    let nat = side(cases, samples, variant, &pairs::native_name(p), mp.native);
    let second = match (p.second, mp.second, pairs::second_name(p)) {
        (Some((tool, _)), Some(metric), Some(name)) => Some((tool, metric, name)),
        _ => None,
    };
    let (tool, referee) = match (which, &second) {
        (Referee::Second, Some((tool, metric, _))) => (*tool, *metric),
        _ => (p.tool, mp.referee),
    };
    let rf = match (which, &second) {
        (Referee::Second, Some((_, metric, name))) => side(cases, samples, variant, name, *metric),
        _ => side(cases, samples, variant, &pairs::referee_name(p), mp.referee),
    };
    // The bound's ceiling: a native far above the second referee fails.
    let ceiling = match (which, &second) {
        (Referee::First, Some((tool, metric, name))) => {
            mean(&side(cases, samples, variant, name, *metric).values).map(|m| {
                (
                    pairs::FAR_ABOVE_SECOND * m,
                    format!(
                        "{} × {tool} {} {} {}",
                        pairs::FAR_ABOVE_SECOND,
                        metric.0,
                        metric.1,
                        num(Some(m))
                    ),
                )
            })
        }
        _ => device_ceiling(mp, which, baseline),
    };
    // A partly +++++ referee's timed repeats are its slowest: no ratio of them alone.
    let censored = rf.too_fast.is_some();
    let paired = paired_ratio_ci(&nat.values, &rf.values, CONFIDENCE).filter(|_| !censored);
    let nv: Vec<f64> = nat.values.iter().map(|(_, v)| *v).collect();
    let rv: Vec<f64> = rf.values.iter().map(|(_, v)| *v).collect();
    let ratio = match (Sample::of(&nv), Sample::of(&rv)) {
        (Some(a), Some(b)) if !censored => ratio_ci(a, b, CONFIDENCE).map(|c| (c.ratio, c.low, c.high)),
        _ => None,
    };
    let (native_mean, referee_mean) = (mean(&nat.values), mean(&rf.values));
    // Compared on whatever repeats each side has (one is enough for the point ratio).
    let point = match (native_mean, referee_mean) {
        (Some(a), Some(b)) if a > 0.0 && b > 0.0 && !censored => Some(a / b),
        _ => None,
    };
    let shown = Pair { tool, ..*p };
    let compared = MetricPair { referee, ..*mp };
    let verdict = match no_block_device(cases, variant, mp) {
        // Neither side can count what reached a device it does not have: said, not failed.
        Some(why) if nat.values.is_empty() && rf.values.is_empty() => Verdict::NoDevice(why),
        _ => verdict(&shown, &compared, (&nat, &rf), point, ceiling),
    };
    // The interval verdict uses the paired interval when there is one (the runs of a repeat
    // are adjacent, so the machine's drift between repeats cancels), else the unpaired one.
    let interval = match (&verdict, paired.or(ratio)) {
        (Verdict::Bound { .. } | Verdict::Stall { .. }, _) | (_, None) => None,
        (_, Some((_, lo, hi))) => Some(Interval::of(lo, hi, mp.tolerance_pct)),
    };
    Row {
        variant: variant.to_string(),
        pair: p.id.to_string(),
        tool: tool.to_string(),
        native: format!("{} {}", mp.native.0, mp.native.1),
        referee: format!("{} {}", referee.0, referee.1),
        native_mean,
        referee_mean,
        n: (nv.len(), rv.len()),
        point,
        ratio,
        paired,
        tolerance_pct: mp.tolerance_pct,
        order: order(&nat, &rf),
        verdict,
        interval,
    }
}

/// The ceiling of a bound row of a throughput the raw device bounds (module doc): the
/// session's raw-device ceiling plus the cache-bound tolerance, with where it comes from.
/// `None` for other rows, the second referee's row, and a session without a measured baseline.
fn device_ceiling(mp: &MetricPair, which: Referee, baseline: Option<&RawBaseline>) -> Option<(f64, String)> {
    if !mp.device_ceiling || which != Referee::First {
        return None;
    }
    let device = baseline?.ceiling_mib_s()?;
    let tolerance = crate::report::cache_bound_tolerance(baseline);
    Some((
        device * (1.0 + tolerance),
        format!(
            "the raw device's {} MiB/s + {:.0} %",
            num(Some(device)),
            tolerance * 100.0
        ),
    ))
}

/// The verify table of a stored session: `None` unless it is a verify session (suite name
/// [`SUITE_NAME`]). Pairs none of whose workloads the session has (`--only`) are left out.
/// `baseline` is the session's raw-device baseline (the ceiling of bound throughput rows).
pub fn table(
    suite_name: &str,
    cases: &[CaseRecord],
    samples: &[SampleRecord],
    baseline: Option<&RawBaseline>,
) -> Option<VerifyTable> {
    if suite_name != SUITE_NAME {
        return None;
    }
    let mut variants: Vec<&str> = Vec::new();
    for c in cases {
        if !variants.contains(&c.variant.as_str()) {
            variants.push(&c.variant);
        }
    }
    let mut rows = Vec::new();
    for v in variants {
        for p in pairs::PAIRS {
            let has = |name: String| cases.iter().any(|c| c.variant == v && c.workload == name);
            if !has(pairs::native_name(p)) && !has(pairs::referee_name(p)) {
                continue;
            }
            for mp in p.metrics {
                rows.push(row((cases, samples, baseline), v, p, mp, Referee::First));
                if mp.second.is_some() && p.second.is_some() {
                    rows.push(row((cases, samples, baseline), v, p, mp, Referee::Second));
                }
            }
        }
    }
    Some(VerifyTable { rows })
}

fn num(v: Option<f64>) -> String {
    match v {
        Some(x) if x.abs() >= 100.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 1.0 => format!("{x:.2}"),
        Some(x) => format!("{x:.4}"),
        None => "-".into(),
    }
}

/// The closing table of `fsbench verify` (plain text, one line per row, then a summary line).
pub fn render_text(t: &VerifyTable) -> String {
    let mut out = String::new();
    let lines: Vec<[String; 11]> = t
        .rows
        .iter()
        .map(|r| {
            let (ratio, ci) = match (r.ratio, r.point) {
                (Some((x, lo, hi)), _) => (format!("{x:.3}"), format!("[{lo:.3}, {hi:.3}]")),
                (None, Some(x)) => (format!("{x:.3}"), "-".into()),
                (None, None) => ("-".into(), "-".into()),
            };
            let paired = match r.paired {
                Some((x, lo, hi)) => format!("{x:.3} [{lo:.3}, {hi:.3}]"),
                None => "-".into(),
            };
            [
                r.variant.clone(),
                format!("{} ({})", r.pair, r.tool),
                format!("{} | {}", r.native, r.referee),
                num(r.native_mean),
                num(r.referee_mean),
                format!("{}/{}", r.n.0, r.n.1),
                if r.order.is_empty() {
                    "-".into()
                } else {
                    r.order.clone()
                },
                ratio,
                ci,
                paired,
                match r.interval {
                    Some(i) => format!("±{:.0}% {}, {}", r.tolerance_pct, r.verdict.text(), i.text()),
                    None => format!("±{:.0}% {}", r.tolerance_pct, r.verdict.text()),
                },
            ]
        })
        .collect();
    let head = [
        "fs",
        "pair (referee)",
        "native metric | referee metric",
        "native",
        "referee",
        "n",
        "first",
        "ratio",
        "95% CI",
        "paired ratio [95% CI]",
        "verdict",
    ];
    let mut w = head.map(str::len);
    for l in &lines {
        for (i, c) in l.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let pad = |s: &str, n: usize, right: bool| {
        let fill = " ".repeat(n.saturating_sub(s.chars().count()));
        if right {
            format!("{fill}{s}")
        } else {
            format!("{s}{fill}")
        }
    };
    let mut line = |cells: &[String]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let right = (3..=7).contains(&i);
            if i == cells.len() - 1 {
                s.push_str(c);
            } else {
                s.push_str(&pad(c, w[i], right));
                s.push_str("  ");
            }
        }
        let _ = writeln!(out, "{}", s.trim_end());
    };
    line(&head.map(String::from));
    for l in &lines {
        line(l);
    }
    let ok = t.rows.iter().filter(|r| r.verdict == Verdict::Ok).count();
    let bounds = t
        .rows
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Bound { .. }) && !r.verdict.fails())
        .count();
    let unmeasured = t
        .rows
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::NoDevice(_)))
        .count();
    let unmeasured = if unmeasured > 0 {
        format!(", {unmeasured} not measured (no block device)")
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "{} metric(s): {ok} within tolerance, {bounds} consistent with a bound, {} outside, \
         below a bound, stalled or without data{unmeasured}; \
         95 % CI: {} agree, {} differ, {} undecided (more pairs)",
        t.rows.len(),
        t.failures(),
        t.intervals(Interval::Agrees),
        t.intervals(Interval::Differs),
        t.intervals(Interval::Undecided),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::{Measurement, MetricId, Unit};
    use crate::store::{CaseAvailability, NewSample};

    fn case(id: &str, variant: &str, workload: &str) -> CaseRecord {
        CaseRecord {
            case_id: id.into(),
            variant: variant.into(),
            fs_type: variant.into(),
            mkfs_args: vec![],
            mount_opts: vec![],
            workload: workload.into(),
            workload_kind: "x".into(),
            workload_json: "{}".into(),
            availability: CaseAvailability::Available,
        }
    }

    fn sample(case: &str, repeat: u32, phase: &str, metric: &str, value: Option<f64>) -> SampleRecord {
        let mut measurements = vec![Measurement {
            phase: phase.into(),
            rank: None,
            metric: MetricId::latency("lat_max"),
            value: 1.0,
        }];
        if let Some(v) = value {
            measurements.push(Measurement {
                phase: phase.into(),
                rank: None,
                metric: MetricId::higher(metric, Unit::MibPerSec),
                value: v,
            });
        }
        SampleRecord {
            id: i64::from(repeat),
            sample: NewSample {
                wall_s: 1.0,
                measurements,
                ..NewSample::new(case.into(), repeat, false)
            },
        }
    }

    #[test]
    fn ratios_verdicts_and_plus_rows() {
        let cases = vec![case("a", "ext4", "bigfile:native"), case("b", "ext4", "bigfile:dd")];
        let mk = |nat: [f64; 3], refv: [Option<f64>; 3]| {
            let mut s = Vec::new();
            for r in 0..3 {
                s.push(sample("a", r, "fsync", "durable_throughput", Some(nat[r as usize])));
                s.push(sample("b", r, "write", "throughput", refv[r as usize]));
            }
            s
        };
        let ok = table(
            SUITE_NAME,
            &cases,
            &mk([100.0, 102.0, 98.0], [Some(101.0), Some(99.0), Some(100.0)]),
            None,
        )
        .unwrap();
        assert_eq!(ok.rows.len(), 1);
        let (r, lo, hi) = ok.rows[0].ratio.unwrap();
        assert!((r - 1.0).abs() < 0.01 && lo < r && r < hi, "{:?}", ok.rows[0]);
        assert_eq!(ok.rows[0].verdict, Verdict::Ok);
        assert_eq!(ok.failures(), 0);

        let bad = table(
            SUITE_NAME,
            &cases,
            &mk([150.0, 152.0, 148.0], [Some(101.0), Some(99.0), Some(100.0)]),
            None,
        )
        .unwrap();
        assert_eq!(bad.rows[0].verdict, Verdict::Outside);
        assert_eq!(bad.failures(), 1);
        assert!(render_text(&bad).contains("OUTSIDE"), "{}", render_text(&bad));

        // The referee ran the phase but has no such metric (renamed, misspelt): not a
        // `+++++` (only bonnie++ prints that), so no data, and it fails.
        let renamed = table(SUITE_NAME, &cases, &mk([100.0, 100.0, 100.0], [None, None, None]), None).unwrap();
        assert!(
            matches!(renamed.rows[0].verdict, Verdict::NoData(ref w) if w.contains("renamed")),
            "{:?}",
            renamed.rows[0]
        );
        assert_eq!(renamed.failures(), 1);
        assert!(render_text(&renamed).contains("NO DATA"));

        // A referee that never ran the phase at all is no data, and fails.
        let only_native: Vec<_> = mk([100.0, 100.0, 100.0], [None, None, None])
            .into_iter()
            .filter(|s| s.sample.case_id == "a")
            .collect();
        let none = table(SUITE_NAME, &cases, &only_native, None).unwrap();
        assert!(none.rows[0].verdict.fails(), "{:?}", none.rows[0]);

        assert!(table("quick", &cases, &[], None).is_none());
    }

    /// A bonnie pair: the native's `rate` of `random_seeks` in every repeat; the referee
    /// (bonnie++ with `files`… as in [`pairs::PAIRS`]) timed the repeats of `timed` and printed
    /// `+++++` in the others.
    fn bonnie(native: &[f64], timed: &[Option<f64>]) -> (Vec<CaseRecord>, Vec<SampleRecord>) {
        let spec = crate::engine::workloads::bonnie_pp::BonniePpSpec::default();
        let mut referee = case("b", "ext4", "bonnie-io:bonnie++");
        referee.workload_json = serde_json::to_string(&WorkloadKind::BonniePp(spec)).unwrap();
        let cases = vec![case("a", "ext4", "bonnie-io:native"), referee];
        let mut s = Vec::new();
        for (r, v) in native.iter().enumerate() {
            s.push(sample("a", r as u32, "random_seeks", "rate", Some(*v)));
        }
        for (r, v) in timed.iter().enumerate() {
            let mut x = sample("b", r as u32, "random_seeks", "rate", *v);
            if v.is_none() {
                x.sample.notes.push(
                    "bonnie++ printed +++++ for seq_create, random_seeks (ran under 0.5 s, too fast to time): \
                     no number; raise size or files"
                        .into(),
                );
            }
            s.push(x);
        }
        (cases, s)
    }

    #[test]
    fn a_plus_row_is_a_bound_the_native_must_reach() {
        // 8192 seeks under 0.5 s: above 16384/s.
        let (cases, s) = bonnie(&[20000.0, 21000.0], &[None, None]);
        let t = table(SUITE_NAME, &cases, &s, None).unwrap();
        let row = &t.rows.iter().find(|r| r.native == "random_seeks rate").unwrap();
        assert_eq!(
            row.verdict,
            Verdict::Bound {
                native: 20500.0,
                bound: 16384.0,
                basis: "bonnie++ +++++ in 2 repeat(s): above 16384".into(),
                ceiling: None,
            }
        );
        assert!(!row.verdict.fails() && row.interval.is_none());
        assert!(
            render_text(&t).contains("native 20500 >= 16384: consistent"),
            "{}",
            render_text(&t)
        );
        // A native rate below what bonnie++'s +++++ proves fails.
        let (cases, s) = bonnie(&[9000.0, 9500.0], &[None, None]);
        let t = table(SUITE_NAME, &cases, &s, None).unwrap();
        let row = &t.rows.iter().find(|r| r.native == "random_seeks rate").unwrap();
        assert!(row.verdict.fails(), "{row:?}");
        assert!(render_text(&t).contains("BELOW BOUND"), "{}", render_text(&t));
        // The other bonnie rows, never run here, are no data.
        assert!(t
            .rows
            .iter()
            .filter(|r| r.native != "random_seeks rate")
            .all(|r| r.verdict.fails()));
    }

    /// A measured baseline: sequential write and read at `write` and `read` MiB/s, and one
    /// pass method's rate (so the report's 50 % tolerance applies, as for every new session).
    fn baseline(write: f64, read: f64) -> RawBaseline {
        let v = |name: &str, value: f64| crate::store::BaselineValue {
            name: name.into(),
            value,
            unit: crate::metric::Unit::MibPerSec,
            bytes: 512 << 20,
            seconds: 512.0 / value,
        };
        RawBaseline {
            status: crate::store::BaselineStatus::Measured,
            device: Some("/dev/loop9".into()),
            method: "test".into(),
            note: None,
            values: vec![
                v(RawBaseline::SEQ_WRITE, write),
                v(RawBaseline::SEQ_READ, read),
                v("raw_seq_read_buffered", read * 0.9),
            ],
        }
    }

    #[test]
    fn a_block_bound_far_above_the_raw_device_fails() {
        // bonnie++ printed +++++ for its block read in every repeat; the device reads 400 MiB/s
        // at best, so with the 50 % tolerance no native block read may pass 600 MiB/s.
        let run = |native: f64, device: Option<&RawBaseline>| {
            let spec = crate::engine::workloads::bonnie_pp::BonniePpSpec::default();
            let mut referee = case("b", "ext4", "bonnie-io:bonnie++");
            referee.workload_json = serde_json::to_string(&WorkloadKind::BonniePp(spec)).unwrap();
            let cases = vec![case("a", "ext4", "bonnie-io:native"), referee];
            let mut s = Vec::new();
            for r in 0..3u32 {
                s.push(sample("a", r, "seq_read_block", "throughput", Some(native)));
                let mut x = sample("b", r, "seq_read_block", "throughput", None);
                x.sample.notes.push(
                    "bonnie++ printed +++++ for seq_read_block (ran under 0.5 s, too fast to time): no number; \
                     raise size or files"
                        .into(),
                );
                s.push(x);
            }
            let t = table(SUITE_NAME, &cases, &s, device).unwrap();
            t.rows
                .into_iter()
                .find(|r| r.native == "seq_read_block throughput")
                .unwrap()
        };
        let device = baseline(300.0, 400.0);
        let honest = run(5000.0, None);
        assert!(
            matches!(honest.verdict, Verdict::Bound { ceiling: None, .. }) && !honest.verdict.fails(),
            "{honest:?}"
        );
        let bound = match honest.verdict {
            Verdict::Bound { bound, .. } => bound,
            _ => unreachable!(),
        };
        // Above the bound and at most the device's ceiling: consistent.
        let within = run(bound.max(550.0), Some(&device));
        let ceiling = match &within.verdict {
            Verdict::Bound {
                ceiling: Some((c, why)),
                ..
            } => {
                assert_eq!(why, "the raw device's 400 MiB/s + 50 %");
                *c
            }
            v => panic!("{v:?}"),
        };
        assert!((ceiling - 600.0).abs() < 1e-9, "{ceiling}");
        if bound < 600.0 {
            assert!(!within.verdict.fails(), "{within:?}");
        }
        // Far above the device: a native that never reached the disk fails.
        let fast = run(5000.0, Some(&device));
        assert!(fast.verdict.fails(), "{fast:?}");
        assert!(fast.verdict.text().starts_with("FAR ABOVE"), "{}", fast.verdict.text());
        // A baseline that failed gives no ceiling.
        let mut rs = baseline(300.0, 400.0);
        rs.status = crate::store::BaselineStatus::Failed("cut short".into());
        assert!(matches!(
            run(5000.0, Some(&rs)).verdict,
            Verdict::Bound { ceiling: None, .. }
        ));
    }

    #[test]
    fn seeks_are_a_ratio_against_fio_and_a_bound_far_above_fio_fails() {
        // bonnie++ printed +++++ in every repeat (above 16,384/s); fio did the same seeks at
        // 20,000 reads/s.
        let run = |native: f64| {
            let (mut cases, mut s) = bonnie(&[native, native * 1.02, native * 0.98], &[None, None, None]);
            cases.push(case("c", "ext4", "bonnie-io:fio"));
            for (r, v) in [20000.0, 20400.0, 19600.0].into_iter().enumerate() {
                s.push(sample("c", r as u32, "randrw_read", "iops", Some(v)));
            }
            let t = table(SUITE_NAME, &cases, &s, None).unwrap();
            let rows: Vec<Row> = t.rows.into_iter().filter(|r| r.native == "random_seeks rate").collect();
            assert_eq!(rows.len(), 2, "bonnie++'s row and fio's: {rows:?}");
            (rows[0].clone(), rows[1].clone())
        };
        // A native that agrees with fio: the fio row is a ratio with its paired interval, and
        // bonnie++'s bound is kept beside it, consistent.
        let (bound, fio) = run(21000.0);
        assert_eq!((fio.tool.as_str(), fio.referee.as_str()), ("fio", "randrw_read iops"));
        assert_eq!(fio.verdict, Verdict::Ok);
        assert!(fio.paired.is_some() && fio.interval.is_some(), "{fio:?}");
        assert!(!bound.verdict.fails(), "{bound:?}");
        assert!(
            bound
                .verdict
                .text()
                .contains("<= 40000 (2 × fio randrw_read iops 20000): consistent"),
            "{}",
            bound.verdict.text()
        );
        // A native twice as fast as fio: outside as a ratio, and its bound row, which it
        // passes from below, fails from above.
        let (bound, fio) = run(42000.0);
        assert_eq!(fio.verdict, Verdict::Outside);
        assert!(bound.verdict.fails(), "{bound:?}");
        assert!(
            bound
                .verdict
                .text()
                .starts_with("FAR ABOVE: bonnie++ +++++ in 3 repeat(s): above 16384, but native 42000 > 40000"),
            "{}",
            bound.verdict.text()
        );
        let t = VerifyTable { rows: vec![bound, fio] };
        assert_eq!(t.failures(), 2);
        assert!(
            render_text(&t).contains("0 consistent with a bound, 2 outside"),
            "{}",
            render_text(&t)
        );
    }

    #[test]
    fn partial_referee_data_is_compared_with_its_n() {
        // fio timed two repeats of three (the third failed): the point ratio of those decides,
        // with n 3/2 shown.
        let cases = vec![case("a", "ext4", "bigfile:native"), case("b", "ext4", "bigfile:dd")];
        let mut s: Vec<SampleRecord> = [100.0, 110.0, 90.0]
            .iter()
            .enumerate()
            .map(|(r, v)| sample("a", r as u32, "fsync", "durable_throughput", Some(*v)))
            .collect();
        s.extend([(0, 95.0), (2, 105.0)].map(|(r, v)| sample("b", r, "write", "throughput", Some(v))));
        let t = table(SUITE_NAME, &cases, &s, None).unwrap();
        let row = t.rows.iter().find(|r| r.pair == "bigfile").unwrap();
        assert_eq!(row.n, (3, 2));
        assert!((row.point.unwrap() - 1.0).abs() < 1e-9, "{row:?}");
        assert_eq!(row.verdict, Verdict::Ok);
        assert!(row.label().ends_with("(n 3/2)"), "{}", row.label());
        let text = render_text(&t);
        assert!(
            text.lines().any(|l| l.contains("bigfile") && l.contains("3/2")),
            "{text}"
        );
    }

    #[test]
    fn a_partly_plus_row_is_a_bound_from_every_repeat_not_a_ratio_of_the_timed_ones() {
        // bonnie++ timed one repeat of three at 13,000/s and printed +++++ (above 16,384/s) in
        // the others: its mean is at least (13000 + 2 × 16384) / 3 = 15,256. The native's
        // 17,000/s is 1.31 × the timed repeat (outside ±15 % as a ratio, the timed repeat being
        // bonnie++'s slowest) but consistent with what bonnie++ did.
        let (cases, s) = bonnie(&[17000.0, 17000.0, 17000.0], &[None, Some(13000.0), None]);
        let t = table(SUITE_NAME, &cases, &s, None).unwrap();
        let row = t.rows.iter().find(|r| r.native == "random_seeks rate").unwrap();
        assert_eq!(row.n, (3, 1));
        let least = (13000.0 + 2.0 * 16384.0) / 3.0;
        match &row.verdict {
            Verdict::Bound {
                native, bound, basis, ..
            } => {
                assert_eq!(*native, 17000.0);
                assert!((bound - least * 0.85).abs() < 1e-6, "{bound}");
                assert!(basis.contains("+++++ in 2 of 3 repeats"), "{basis}");
            }
            v => panic!("{v:?}"),
        }
        assert!(!row.verdict.fails());
        assert_eq!(
            (row.point, row.ratio, row.paired, row.interval),
            (None, None, None, None)
        );
        // A native that is slower than bonnie++ by more than the tolerance even against that
        // least mean fails.
        let (cases, s) = bonnie(&[12000.0, 12500.0, 12000.0], &[None, Some(13000.0), None]);
        let t = table(SUITE_NAME, &cases, &s, None).unwrap();
        let row = t.rows.iter().find(|r| r.native == "random_seeks rate").unwrap();
        assert!(row.verdict.fails(), "{row:?}");
        assert!(
            render_text(&t).contains("BELOW BOUND: bonnie++ +++++ in 2 of 3"),
            "{}",
            render_text(&t)
        );
    }

    #[test]
    fn a_response_time_is_held_to_at_least_the_referees_service_time() {
        let cases = vec![
            case("a", "ext4", "fileio-openloop:native"),
            case("b", "ext4", "fileio-openloop:fio"),
        ];
        let run = |native: f64| {
            let mut s: Vec<SampleRecord> = (0..3)
                .map(|r| sample("a", r, "rndrd", "lat_p50", Some(native)))
                .collect();
            s.extend((0..3).map(|r| sample("b", r, "randread_read", "lat_p50", Some(100.0))));
            let t = table(SUITE_NAME, &cases, &s, None).unwrap();
            t.rows.into_iter().find(|r| r.native == "rndrd lat_p50").unwrap()
        };
        // Waiting behind earlier reads makes the response time longer: consistent, with its
        // ratio shown.
        let slow = run(180.0);
        assert!(matches!(slow.verdict, Verdict::Bound { bound, .. } if (bound - 80.0).abs() < 1e-9));
        assert!(!slow.verdict.fails() && slow.interval.is_none());
        assert!((slow.point.unwrap() - 1.8).abs() < 1e-9);
        assert!(slow
            .verdict
            .text()
            .contains("at least the service time fio's clat measures"));
        // Shorter than the service time fio measured, less the tolerance: impossible, a failure.
        let short = run(70.0);
        assert!(short.verdict.fails(), "{short:?}");
        assert!(short.verdict.text().starts_with("BELOW BOUND"));
    }

    #[test]
    fn a_response_time_far_above_the_service_time_at_low_utilisation_is_a_stall() {
        use crate::metric::LatencyWindows;
        let cases = vec![
            case("a", "ext4", "fileio-openloop:native"),
            case("b", "ext4", "fileio-openloop:fio"),
        ];
        // The acceptance run's xfs: fio's clat p99 214 µs in every repeat; the native's
        // response p99 about 250 µs in two repeats and 61.7 ms in one (mean 20,730 µs, as
        // printed), at 4 % utilisation; the stalled repeat's seconds 3 and 4 hold 120 late
        // responses each, over 4 × 214 = 856 µs.
        let run = |values: [f64; 3], utilisation: Option<f64>| {
            let mut s: Vec<SampleRecord> = Vec::new();
            for (r, v) in values.into_iter().enumerate() {
                let mut x = sample("a", r as u32, "rndrd", "lat_p99", Some(v));
                if let Some(u) = utilisation {
                    x.sample.measurements.push(Measurement {
                        phase: "rndrd".into(),
                        rank: None,
                        metric: MetricId::lower(crate::engine::phase::UTILISATION, Unit::Ratio),
                        value: u,
                    });
                }
                x.sample.windows.push(LatencyWindows {
                    phase: "rndrd".into(),
                    rank: None,
                    window_ms: 1_000,
                    bins: (0..8)
                        .map(|w| {
                            let mut b = vec![(250_000u64, 1_000u64)];
                            if v > 10_000.0 && (w == 3 || w == 4) {
                                b.push((60_000_000, 120));
                            }
                            b
                        })
                        .collect(),
                });
                s.push(x);
            }
            s.extend((0..3).map(|r| sample("b", r, "randread_read", "lat_p99", Some(214.0))));
            let t = table(SUITE_NAME, &cases, &s, None).unwrap();
            t.rows.into_iter().find(|r| r.native == "rndrd lat_p99").unwrap()
        };
        let stalled = run([250.0, 61_690.0, 250.0], Some(0.04));
        assert!(stalled.verdict.fails(), "{stalled:?}");
        assert_eq!(stalled.interval, None);
        let text = stalled.verdict.text();
        assert!(text.starts_with("STALL: native 20730 > 856: "), "{text}");
        assert!(
            text.ends_with(
                "repeat 2: 61690 at 4.0 % utilisation, late responses at 3–4 s (120 of 1120 over 856 µs), at 4–5 s (120 of 1120)"
            ),
            "{text}"
        );
        let table_text = render_text(&VerifyTable {
            rows: vec![stalled.clone()],
        });
        assert!(
            table_text.contains("0 consistent with a bound, 1 outside, below a bound, stalled"),
            "{table_text}"
        );
        // The same response times from a busy worker (half its time in reads): a queue can do
        // that, so only the lower bound applies, and it holds.
        let busy = run([250.0, 61_690.0, 250.0], Some(0.5));
        assert!(
            matches!(busy.verdict, Verdict::Bound { .. }) && !busy.verdict.fails(),
            "{busy:?}"
        );
        assert!(
            busy.verdict.text().contains(
                "(not judged: repeat 1 50 % busy, repeat 2 50 % busy, repeat 3 50 % busy, where a queue can do more)"
            ),
            "{}",
            busy.verdict.text()
        );
        // No stall: a bound that names its upper limit too.
        let fine = run([250.0, 260.0, 240.0], Some(0.04));
        assert!(!fine.verdict.fails(), "{fine:?}");
        assert!(
            fine.verdict
                .text()
                .contains("at most 4 × it (856) in every repeat at most 20 % busy"),
            "{}",
            fine.verdict.text()
        );
        // A session from before the utilisation row: said, not judged.
        let old = run([250.0, 61_690.0, 250.0], None);
        assert!(!old.verdict.fails());
        assert!(
            old.verdict.text().contains("no utilisation stored"),
            "{}",
            old.verdict.text()
        );
        assert_eq!(
            (quantile_of("lat_p50"), quantile_of("lat_p999")),
            (Some(0.5), Some(0.999))
        );
        assert_eq!(quantile_of("reads_per_s"), None);
    }

    #[test]
    fn a_device_row_without_a_block_device_is_said_not_failed_and_missing_elsewhere_fails() {
        let run = |fs_type: &str| {
            let mut cases = vec![case("a", "v", "treecopy:native"), case("b", "v", "treecopy:cp")];
            for c in &mut cases {
                c.fs_type = fs_type.into();
            }
            // Both sides copied (a time) but stored no device counters.
            let s: Vec<SampleRecord> = (0..2)
                .flat_map(|r| {
                    [
                        sample("a", r, "copy", "time", Some(2.0)),
                        sample("b", r, "copy", "time", Some(2.0)),
                    ]
                })
                .collect();
            let t = table(SUITE_NAME, &cases, &s, None).unwrap();
            t.rows.into_iter().find(|r| r.native == "copy device_read_mib").unwrap()
        };
        let zfs = run("zfs");
        assert!(
            matches!(zfs.verdict, Verdict::NoDevice(_)) && !zfs.verdict.fails(),
            "{zfs:?}"
        );
        assert!(zfs
            .verdict
            .text()
            .starts_with("not measured: zfs is mounted from no block device"));
        let text = render_text(&VerifyTable { rows: vec![zfs] });
        assert!(
            text.contains("without data, 1 not measured (no block device)"),
            "{text}"
        );
        assert!(
            run("tmpfs").verdict
                == Verdict::NoDevice(
                    "tmpfs is mounted from no block device, so neither side has device counters".into()
                )
        );
        // On a filesystem with a block device, a missing device counter is no data: a failure.
        let ext4 = run("ext4");
        assert!(
            matches!(ext4.verdict, Verdict::NoData(_)) && ext4.verdict.fails(),
            "{ext4:?}"
        );
    }

    #[test]
    fn the_order_of_each_repeat_is_read_from_the_start_times() {
        let (cases, mut s) = bonnie(&[100.0, 100.0], &[Some(100.0), Some(100.0)]);
        for x in &mut s {
            let first = (x.sample.case_id == "a") == (x.sample.repeat == 0);
            x.sample.started_at = format!("2026-01-01T00:0{}:00Z", x.sample.repeat * 2 + u32::from(!first));
        }
        let t = table(SUITE_NAME, &cases, &s, None).unwrap();
        assert_eq!(
            t.rows.iter().find(|r| r.native == "random_seeks rate").unwrap().order,
            "NR"
        );
        // Runs that began in the same second are ordered by when they were stored.
        for x in &mut s {
            x.sample.started_at = "2026-01-01T00:00:00Z".into();
            let first = (x.sample.case_id == "a") == (x.sample.repeat == 0);
            x.id = i64::from(x.sample.repeat * 2 + u32::from(!first));
        }
        let t = table(SUITE_NAME, &cases, &s, None).unwrap();
        assert_eq!(
            t.rows.iter().find(|r| r.native == "random_seeks rate").unwrap().order,
            "NR"
        );
    }

    #[test]
    fn the_paired_interval_of_a_known_series() {
        // Ratios 1, 2, 4: log ratios 0, ln 2, 2 ln 2, mean ln 2 (geometric mean 2), sd ln 2;
        // t(0.975, 2) = 4.302653, so the interval is 2 · exp(∓4.302653 · ln 2 / √3).
        let nat = [(0, 100.0), (1, 200.0), (2, 400.0)];
        let rf = [(0, 100.0), (1, 100.0), (2, 100.0)];
        let (g, lo, hi) = paired_ratio_ci(&nat, &rf, 0.95).unwrap();
        let half = 4.302_652_729_911_275 * std::f64::consts::LN_2 / 3f64.sqrt();
        assert!((g - 2.0).abs() < 1e-9, "{g}");
        assert!((lo - 2.0 * (-half).exp()).abs() < 1e-6, "{lo}");
        assert!((hi - 2.0 * half.exp()).abs() < 1e-6, "{hi}");
        assert!((lo - 0.357_5).abs() < 1e-3 && (hi - 11.19).abs() < 1e-2, "{lo} {hi}");
    }

    #[test]
    fn interval_verdicts_against_the_band() {
        // ±15 %: the band is [0.85, 1.15]; edges count as inside.
        assert_eq!(Interval::of(0.90, 1.10, 15.0), Interval::Agrees);
        assert_eq!(Interval::of(0.85, 1.15, 15.0), Interval::Agrees);
        assert_eq!(Interval::of(1.20, 1.40, 15.0), Interval::Differs);
        assert_eq!(Interval::of(0.50, 0.80, 15.0), Interval::Differs);
        assert_eq!(Interval::of(0.95, 1.30, 15.0), Interval::Undecided);
        assert_eq!(Interval::of(0.50, 2.00, 15.0), Interval::Undecided);
        // ±10 % for copies: the same interval agrees with 15 % and is undecided with 10 %.
        assert_eq!(Interval::of(0.88, 1.05, 15.0), Interval::Agrees);
        assert_eq!(Interval::of(0.88, 1.05, 10.0), Interval::Undecided);
    }

    #[test]
    fn rows_carry_the_interval_verdict_and_the_summary_counts_them() {
        let cases = vec![case("a", "ext4", "bigfile:native"), case("b", "ext4", "bigfile:dd")];
        let mk = |nat: &[f64], refv: &[f64]| {
            let mut s = Vec::new();
            for (r, v) in nat.iter().enumerate() {
                s.push(sample("a", r as u32, "fsync", "durable_throughput", Some(*v)));
            }
            for (r, v) in refv.iter().enumerate() {
                s.push(sample("b", r as u32, "write", "throughput", Some(*v)));
            }
            s
        };
        // Tight on both sides and equal: ok, and the interval agrees.
        let agree = table(
            SUITE_NAME,
            &cases,
            &mk(&[100.0, 101.0, 99.0], &[100.0, 99.5, 100.5]),
            None,
        )
        .unwrap();
        assert_eq!(agree.rows[0].interval, Some(Interval::Agrees), "{:?}", agree.rows[0]);
        // Tight and 1.5×: outside, and the interval differs.
        let differ = table(
            SUITE_NAME,
            &cases,
            &mk(&[150.0, 151.0, 149.0], &[100.0, 99.5, 100.5]),
            None,
        )
        .unwrap();
        assert_eq!(differ.rows[0].verdict, Verdict::Outside);
        assert_eq!(differ.rows[0].interval, Some(Interval::Differs));
        // A point 1.29× outside the band but with noisy pairs (0.6, 1.5, 2.0): outside,
        // interval undecided.
        let noisy = table(
            SUITE_NAME,
            &cases,
            &mk(&[60.0, 180.0, 120.0], &[100.0, 120.0, 60.0]),
            None,
        )
        .unwrap();
        assert_eq!(noisy.rows[0].verdict, Verdict::Outside);
        assert_eq!(noisy.rows[0].interval, Some(Interval::Undecided));
        let text = render_text(&noisy);
        assert!(text.contains("OUTSIDE, CI undecided: more pairs"), "{text}");
        assert!(
            text.contains("95 % CI: 0 agree, 0 differ, 1 undecided (more pairs)"),
            "{text}"
        );
        // No ratio (a side without values): no interval verdict.
        let none = table(SUITE_NAME, &cases, &mk(&[100.0, 100.0], &[]), None).unwrap();
        assert_eq!(none.rows[0].interval, None);
        let both = VerifyTable {
            rows: vec![agree.rows[0].clone(), differ.rows[0].clone(), none.rows[0].clone()],
        };
        let text = render_text(&both);
        assert!(
            text.contains("95 % CI: 1 agree, 1 differ, 0 undecided (more pairs)"),
            "{text}"
        );
        assert!(text.contains("±15% ok, CI agrees"), "{text}");
    }

    #[test]
    fn the_paired_interval_cancels_drift_between_repeats() {
        // The machine slows down tenfold from repeat to repeat; within a repeat both sides see
        // the same speed. Unpaired, the interval spans everything; paired, it agrees.
        let cases = vec![case("a", "ext4", "bigfile:native"), case("b", "ext4", "bigfile:dd")];
        let mut s = Vec::new();
        for (r, (n, d)) in [(100.0, 101.0), (1000.0, 1005.0), (10000.0, 10080.0)]
            .into_iter()
            .enumerate()
        {
            s.push(sample("a", r as u32, "fsync", "durable_throughput", Some(n)));
            s.push(sample("b", r as u32, "write", "throughput", Some(d)));
        }
        let t = table(SUITE_NAME, &cases, &s, None).unwrap();
        let row = &t.rows[0];
        let (_, lo, hi) = row.ratio.unwrap();
        assert!(lo < 0.5 && hi > 2.0, "unpaired {lo} {hi}");
        let (g, plo, phi) = row.paired.unwrap();
        assert!(
            0.98 < g && g < 1.0 && plo > 0.95 && phi < 1.01,
            "paired {g} {plo} {phi}"
        );
        assert_eq!(row.interval, Some(Interval::Agrees));
        // Pairs are matched by repeat: a repeat missing on one side is left out, and under two
        // pairs there is no paired interval (the unpaired one decides).
        assert!(paired_ratio_ci(&[(0, 1.0), (1, 2.0)], &[(1, 2.0), (2, 3.0)], 0.95).is_none());
        let p = paired_ratio_ci(&[(0, 1.0), (1, 2.0), (2, 4.0)], &[(1, 2.0), (2, 4.0), (3, 9.0)], 0.95);
        assert_eq!(p, Some((1.0, 1.0, 1.0)));
    }
}
