//! `fsbench compare BASE CAND`: two stored sessions, metric by metric.
//!
//! Rows are matched by (variant, workload, phase, metric with unit and direction); rows only one
//! session has are listed, never silently dropped. For each match: the ratio of means
//! candidate / base with its 95 % interval ([`two_sample::ratio_ci`], log-scale delta method),
//! Welch's p-value for reference, the p-value of "the ratio is 1" on the same log scale
//! ([`two_sample::log_ratio_p`]) adjusted by **Holm** across its family, the two one-sided
//! tests of equivalence against `±margin` ([`two_sample::tost_ratio`], default 3 %), and a
//! four-way [`Verdict`] by the metric's declared direction:
//!
//! * `better` / `worse`: the Holm-adjusted p-value is below 5 % *and* the change
//!   `|ratio − 1|` exceeds the threshold (default 5 %);
//! * `same within m %` (`equivalent`): both one-sided tests reject at 5 %;
//! * `inconclusive`: neither; also fewer than two measured repeats on a side, or a mean that is
//!   not positive. Inconclusive is never "same".
//!
//! **Between sessions.** Two sessions of one configuration differ by more than their repeats
//! say (each carries its own effect on each row), so every test above counts a between-session
//! term besides the repeats ([`crate::stats::sessions`]): the variance of a session's own effect
//! estimated per row from the base and the other stored sessions of its configuration (same
//! host, kernel, CPU, memory, fsbench and tool versions, target and memory limit, same suite,
//! variants and sizes: the `references` the edge takes with [`super::noise::references`];
//! never the candidate), or, with fewer than
//! [`sessions::MIN_SESSIONS`] of them, an assumed [`sessions::ASSUMED_SESSION_SD_PCT`] % that
//! the output states ([`sessions::ASSUMED_RULE`]). The interval of the ratio is the same test's.
//!
//! Families (Holm controls the family-wise error rate within each): the *gating* rows — by
//! default the headline metrics ([`Gate::Headline`]), with `--gate all` every non-CPU row — and
//! the other rows, shown for context. [`Comparison::exit_code`] is 1 when any gating row is
//! `worse`, for CI pipelines; 0 otherwise. So an A/A comparison of many metrics exits 1 in at
//! most about 5 % of pairs instead of almost always.

use super::charts::{self, ForestRow};
use super::escape::{html as esc, markdown as md};
use super::number;
use super::role;
use super::ReportModel;
use crate::choice::Choice;
use crate::metric::MetricId;
use crate::metric::{Direction, Role};
use crate::stats::sessions::{self, Between};
pub use crate::stats::two_sample::Verdict;
use crate::stats::two_sample::{self, holm, verdict, welch, RatioCi, Sample, Tost, Welch};
use crate::stats::Summary;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Version of the comparison JSON's shape; bump on any incompatible change.
/// 2: verdict `no_change` replaced by `equivalent`; `p_diff`, `p_adjusted`, `tost`,
/// `margin_pct`, `gate` and `correction` added. 3: every test counts the between-session
/// noise: `between_sd_pct` and `between_sessions` per change, `noise` for the comparison.
pub const COMPARE_SCHEMA_VERSION: u32 = 3;

/// Default threshold of `--threshold`, in percent.
pub const DEFAULT_THRESHOLD_PCT: f64 = 5.0;

/// Default equivalence margin of `--equivalence`, in percent.
pub const DEFAULT_EQUIVALENCE_PCT: f64 = two_sample::DEFAULT_EQUIVALENCE_PCT;

/// The multiple-comparison correction, as stated in the output.
pub const CORRECTION: &str = "Holm";

/// Which rows decide the exit code (`--gate`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// Headline metrics only (rates, throughputs, times): not tail latencies, not details.
    #[default]
    Headline,
    /// Every non-CPU metric, tail latencies such as lat_max included.
    All,
}

impl Choice for Gate {
    const CHOICES: &'static [(Self, &'static str, &'static str)] = &[
        (
            Gate::Headline,
            "headline",
            "Headline metrics only (rates, throughputs, times): not tail latencies, not details",
        ),
        (
            Gate::All,
            "all",
            "Every non-CPU metric, tail latencies such as lat_max included",
        ),
    ];
}

impl Gate {
    /// `headline` or `all`.
    pub fn as_str(self) -> &'static str {
        self.name()
    }

    /// Whether a `worse` verdict on `metric` counts as a regression under this gate (never on
    /// CPU rows).
    pub fn gates(self, metric: &MetricId) -> bool {
        !role::is_cpu(metric) && (self == Gate::All || metric.role == Role::Headline)
    }
}

/// One metric's input to [`decide`]: candidate and base samples, direction, and whether it is
/// in the gating family.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    /// The candidate session's repeats.
    pub cand: Sample,
    /// The base session's repeats.
    pub base: Sample,
    /// The metric's declared direction.
    pub direction: Direction,
    /// In the gating family (see [`Gate::gates`]).
    pub gating: bool,
    /// The between-session term of the row's tests (`None`: the repeats alone, as before
    /// schema 3).
    pub noise: Option<Between>,
}

/// The tests and verdict of one metric, as decided by [`decide`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decided {
    /// Unadjusted p-value of "the ratio is 1" ([`log_ratio_p`]).
    pub p_diff: Option<f64>,
    /// Holm-adjusted within the row's family.
    pub p_adjusted: Option<f64>,
    /// Equivalence tests against the margin.
    pub tost: Option<Tost>,
    /// The verdict.
    pub verdict: Verdict,
}

/// Decides every row of one comparison: the difference test of each row, Holm-adjusted within
/// its family (gating rows, other rows), the equivalence tests against `margin_pct`, and the
/// four-way verdict with `threshold_pct` (both in percent). Pure; the exit code is 1 exactly
/// when a gating row comes out `worse`.
pub fn decide(rows: &[Decision], threshold_pct: f64, margin_pct: f64) -> Vec<Decided> {
    let p: Vec<Option<f64>> = rows
        .iter()
        .map(|r| sessions::log_ratio_p(r.cand, r.base, r.noise))
        .collect();
    let mut adjusted: Vec<Option<f64>> = vec![None; rows.len()];
    for family in [true, false] {
        let idx: Vec<usize> = (0..rows.len())
            .filter(|&i| rows[i].gating == family && p[i].is_some())
            .collect();
        let fam: Vec<f64> = idx.iter().filter_map(|&i| p[i]).collect();
        for (&i, a) in idx.iter().zip(holm(&fam)) {
            adjusted[i] = Some(a);
        }
    }
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let tost = sessions::tost_ratio(r.cand, r.base, margin_pct, r.noise);
            let change_pct = (r.cand.mean / r.base.mean - 1.0) * 100.0;
            Decided {
                p_diff: p[i],
                p_adjusted: adjusted[i],
                tost,
                verdict: verdict(
                    adjusted[i],
                    tost,
                    change_pct,
                    threshold_pct,
                    r.direction,
                    r.cand.mean,
                    r.base.mean,
                ),
            }
        })
        .collect()
}

/// Output formats of `fsbench compare`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareFormat {
    /// Terminal table.
    Table,
    /// Markdown, for pull requests.
    Md,
    /// JSON with `schema_version`.
    Json,
    /// A self-contained HTML page with a forest plot of the changes.
    Html,
}

impl Choice for CompareFormat {
    const CHOICES: &'static [(Self, &'static str, &'static str)] = &[
        (CompareFormat::Table, "table", "Terminal table"),
        (CompareFormat::Md, "md", "Markdown, for pull requests"),
        (CompareFormat::Json, "json", "JSON with `schema_version`"),
        (
            CompareFormat::Html,
            "html",
            "A self-contained HTML page with a forest plot of the changes",
        ),
    ];
}

/// Which session a side of the comparison is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionRef {
    /// Session id.
    pub id: i64,
    /// `--label`, if any.
    pub label: Option<String>,
    /// Suite name.
    pub suite_name: String,
    /// RFC 3339 start time.
    pub started_at: String,
    /// Host name.
    pub hostname: String,
    /// What produced it: kernel, fsbench and tool versions ([`super::caption::versions`]);
    /// absent when the session recorded none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub versions: String,
}

impl SessionRef {
    fn of(model: &ReportModel) -> SessionRef {
        let s = &model.session;
        SessionRef {
            id: s.id,
            label: s.info.label.clone(),
            suite_name: s.info.suite_name.clone(),
            started_at: s.started_at.clone(),
            hostname: s.info.host.hostname.clone(),
            versions: super::caption::versions(&s.info),
        }
    }

    /// `session 3 (nightly)`.
    pub fn describe(&self) -> String {
        match &self.label {
            Some(l) => format!("session {} ({l})", self.id),
            None => format!("session {}", self.id),
        }
    }
}

/// One matched metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricChange {
    /// Variant name.
    pub variant: String,
    /// Workload name.
    pub workload: String,
    /// Phase name.
    pub phase: String,
    /// Metric, with unit and direction.
    pub metric: MetricId,
    /// Summary of the base session's repeats.
    pub base: Summary,
    /// Summary of the candidate session's repeats.
    pub cand: Summary,
    /// Candidate mean / base mean (dimensionless; NaN when the base mean is 0).
    pub ratio: f64,
    /// Change in percent, `(ratio − 1) · 100`; its sign is the raw direction of the numbers.
    pub change_pct: f64,
    /// 95 % interval of the ratio, the between-session term counted; `None` when inconclusive.
    pub ratio_ci: Option<RatioCi>,
    /// The session-to-session sd the row's tests count, percent: estimated, or assumed when
    /// `between_sessions` is 0 (0 % when base and candidate are one session).
    pub between_sd_pct: f64,
    /// Sessions the between-session sd was estimated from (the base among them); 0 when it is
    /// the assumed [`sessions::ASSUMED_SESSION_SD_PCT`].
    pub between_sessions: usize,
    /// Welch's t-test of candidate against base, for reference.
    pub welch: Option<Welch>,
    /// Unadjusted p-value of "the ratio is 1" on the log scale of `ratio_ci`.
    pub p_diff: Option<f64>,
    /// `p_diff` Holm-adjusted within the row's family (gating rows, other rows).
    pub p_adjusted: Option<f64>,
    /// Two one-sided tests of equivalence against `±margin_pct`.
    pub tost: Option<Tost>,
    /// The verdict.
    pub verdict: Verdict,
    /// Whether a `worse` verdict here counts as a regression (see [`Gate::gates`]).
    pub gating: bool,
}

impl MetricChange {
    /// `variant / workload / phase metric`.
    pub fn key(&self) -> String {
        format!(
            "{} / {} / {} {}",
            self.variant, self.workload, self.phase, self.metric.name
        )
    }
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// [`COMPARE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The base session.
    pub base: SessionRef,
    /// The candidate session.
    pub cand: SessionRef,
    /// Threshold in percent.
    pub threshold_pct: f64,
    /// Equivalence margin in percent.
    pub margin_pct: f64,
    /// Which rows decide the exit code.
    pub gate: Gate,
    /// Multiple-comparison correction applied within each family ([`CORRECTION`]).
    pub correction: String,
    /// Confidence level of the intervals (0.95).
    pub confidence: f64,
    /// Every matched metric, in the base session's table order.
    pub changes: Vec<MetricChange>,
    /// Rows only the base session has (`variant / workload / phase metric (unit)`).
    pub only_in_base: Vec<String>,
    /// Rows only the candidate session has.
    pub only_in_cand: Vec<String>,
    /// Number of gating rows with verdict `worse`.
    pub regressions: usize,
    /// How the between-session noise was counted.
    pub noise: Noise,
    /// How the two sessions' set-ups differ (host, tools, fsbench version, mkfs/mount options,
    /// target): a difference may come from the set-up, not the change
    /// ([`super::methodology::fingerprint_differences`]). Absent when identical.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup_differs: Vec<String>,
}

/// How a comparison counted the between-session noise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// The other stored sessions of the base's configuration the estimates used (ids).
    pub reference_sessions: Vec<i64>,
    /// Base and candidate are one session: its effect is on both sides, no term counted.
    pub same_session: bool,
    /// Rows whose between-session sd was estimated.
    pub estimated_rows: usize,
    /// Rows that took the assumed sd ([`sessions::ASSUMED_SESSION_SD_PCT`]).
    pub assumed_rows: usize,
    /// Median estimated sd over the estimated rows, percent (`None` without any).
    pub median_estimated_sd_pct: Option<f64>,
}

impl Comparison {
    /// One sentence on the between-session noise the tests counted.
    pub fn noise_line(&self) -> String {
        let n = &self.noise;
        if n.same_session {
            return "between sessions: one session on both sides, so no session-to-session term".into();
        }
        let refs = n.reference_sessions.len() + 1;
        let mut out = match n.median_estimated_sd_pct {
            Some(sd) => format!(
                "between sessions: every test counts a session-to-session sd estimated per row from {refs} sessions of the base's configuration (the base and {}; median {} %)",
                describe_ids(&n.reference_sessions),
                number::value(sd)
            ),
            None => format!("between sessions: {}", sessions::ASSUMED_RULE),
        };
        if n.estimated_rows > 0 && n.assumed_rows > 0 {
            let _ = write!(
                out,
                "; {} row(s) with fewer sessions take the assumed {} %",
                n.assumed_rows,
                sessions::ASSUMED_SESSION_SD_PCT
            );
        }
        out
    }

    /// The version line of the two sessions: one line when both ran with the same kernel,
    /// fsbench and tools, else `base: … ; candidate: …`; empty when neither recorded any.
    pub fn versions(&self) -> String {
        let (b, c) = (&self.base.versions, &self.cand.versions);
        if b == c {
            b.clone()
        } else {
            let side = |v: &str| {
                if v.is_empty() {
                    "not recorded".to_string()
                } else {
                    v.to_string()
                }
            };
            format!("base: {} ; candidate: {}", side(b), side(c))
        }
    }

    /// 1 when any gating metric is significantly worse (Holm-adjusted) by more than the
    /// threshold, else 0.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.regressions > 0)
    }

    fn count(&self, v: Verdict) -> usize {
        self.changes.iter().filter(|c| c.verdict == v).count()
    }

    /// One line: `2 worse, 1 better, 30 same within 3 %, 0 inconclusive (threshold 5 %, …)`.
    pub fn tally(&self) -> String {
        let trim = |x: f64| number::value(x).trim_end_matches('0').trim_end_matches('.').to_string();
        let gating = self.changes.iter().filter(|c| c.gating).count();
        format!(
            "{} worse, {} better, {} {}, {} inconclusive (threshold {} %, {} % confidence; {}-adjusted across the {} gating ({} metrics) and the {} other rows separately)",
            self.count(Verdict::Worse),
            self.count(Verdict::Better),
            self.count(Verdict::Equivalent),
            Verdict::Equivalent.label(self.margin_pct),
            self.count(Verdict::Inconclusive),
            trim(self.threshold_pct),
            trim(self.confidence * 100.0),
            self.correction,
            gating,
            self.gate.as_str(),
            self.changes.len() - gating,
        )
    }
}

/// `sessions 4, 5 and 7`.
fn describe_ids(ids: &[i64]) -> String {
    let list: Vec<String> = ids.iter().map(i64::to_string).collect();
    match list.as_slice() {
        [] => "no other".into(),
        [one] => format!("session {one}"),
        [head @ .., last] => format!("sessions {} and {last}", head.join(", ")),
    }
}

/// One row of a model, flattened: (variant, workload, phase, metric) → summary.
type Flat<'a> = Vec<((&'a str, &'a str, &'a str, &'a MetricId), &'a Summary)>;

fn flatten(model: &ReportModel) -> Flat<'_> {
    let mut out = Vec::new();
    for t in &model.workloads {
        for r in &t.rows {
            for c in &r.cells {
                out.push((
                    (c.variant.as_str(), t.workload.as_str(), r.phase.as_str(), &r.metric),
                    &c.summary,
                ));
            }
        }
    }
    out
}

fn unmatched_key(k: &(&str, &str, &str, &MetricId)) -> String {
    format!(
        "{} / {} / {} {} ({}, {})",
        k.0,
        k.1,
        k.2,
        k.3.name,
        k.3.unit,
        k.3.direction.as_str()
    )
}

/// Compares `cand` against `base` with a threshold of `threshold_pct` percent, an equivalence
/// margin of `margin_pct` percent and the exit code decided by `gate`; `references` are the
/// other stored sessions of the base's configuration (never the candidate), from which each
/// row's between-session noise is estimated (see the module docs).
pub fn compare(
    base: &ReportModel,
    cand: &ReportModel,
    references: &[&ReportModel],
    threshold_pct: f64,
    margin_pct: f64,
    gate: Gate,
) -> Comparison {
    let confidence = 1.0 - two_sample::ALPHA;
    let b = flatten(base);
    let c = flatten(cand);
    let refs: Vec<Flat<'_>> = references.iter().map(|m| flatten(m)).collect();
    // A session against itself shares its session effect: no between-session term.
    let same_session = base.session.id == cand.session.id;
    let mut noises: Vec<Option<Between>> = Vec::new();
    let mut changes = Vec::new();
    let mut only_in_base = Vec::new();
    for (key, bs) in &b {
        let Some((_, cs)) = c.iter().find(|(k, _)| k == key) else {
            only_in_base.push(unmatched_key(key));
            continue;
        };
        let metric = key.3;
        let others: Vec<Sample> = refs
            .iter()
            .filter_map(|r| r.iter().find(|(k, _)| k == key).map(|(_, s)| Sample::from(*s)))
            .collect();
        let noise = (!same_session).then(|| sessions::pair_noise(Sample::from(*bs), &others));
        noises.push(noise);
        let ratio = if bs.mean != 0.0 { cs.mean / bs.mean } else { f64::NAN };
        let ci = sessions::ratio_ci(Sample::from(*cs), Sample::from(*bs), confidence, noise);
        let change_pct = (ratio - 1.0) * 100.0;
        changes.push(MetricChange {
            variant: key.0.to_string(),
            workload: key.1.to_string(),
            phase: key.2.to_string(),
            metric: metric.clone(),
            base: (*bs).clone(),
            cand: (*cs).clone(),
            ratio,
            change_pct,
            ratio_ci: ci,
            between_sd_pct: noise.map_or(0.0, |n| n.sd_pct()),
            between_sessions: noise.map_or(0, |n| n.sessions),
            welch: welch(Sample::from(*cs), Sample::from(*bs)),
            p_diff: None,
            p_adjusted: None,
            tost: None,
            verdict: Verdict::Inconclusive,
            gating: gate.gates(metric),
        });
    }
    let only_in_cand = c
        .iter()
        .filter(|(k, _)| !b.iter().any(|(bk, _)| bk == k))
        .map(|(k, _)| unmatched_key(k))
        .collect();
    let rows: Vec<Decision> = changes
        .iter()
        .zip(&noises)
        .map(|(c, noise)| Decision {
            cand: Sample::from(&c.cand),
            base: Sample::from(&c.base),
            direction: c.metric.direction,
            gating: c.gating,
            noise: *noise,
        })
        .collect();
    for (c, d) in changes.iter_mut().zip(decide(&rows, threshold_pct, margin_pct)) {
        c.p_diff = d.p_diff;
        c.p_adjusted = d.p_adjusted;
        c.tost = d.tost;
        c.verdict = d.verdict;
    }
    let regressions = changes
        .iter()
        .filter(|c| c.gating && c.verdict == Verdict::Worse)
        .count();
    let mut estimated: Vec<f64> = noises
        .iter()
        .flatten()
        .filter(|n| !n.is_assumed())
        .map(Between::sd_pct)
        .collect();
    estimated.sort_by(f64::total_cmp);
    let noise = Noise {
        reference_sessions: references.iter().map(|m| m.session.id).collect(),
        same_session,
        estimated_rows: estimated.len(),
        assumed_rows: noises.iter().flatten().filter(|n| n.is_assumed()).count(),
        median_estimated_sd_pct: (!estimated.is_empty()).then(|| estimated[estimated.len() / 2]),
    };
    Comparison {
        schema_version: COMPARE_SCHEMA_VERSION,
        base: SessionRef::of(base),
        cand: SessionRef::of(cand),
        threshold_pct,
        margin_pct,
        gate,
        correction: CORRECTION.to_string(),
        confidence,
        changes,
        only_in_base,
        only_in_cand,
        regressions,
        noise,
        setup_differs: super::methodology::fingerprint_differences(base, cand),
    }
}

/// `-12.3 % [-15.0, -9.5]`, or the change alone without an interval.
fn change_text(c: &MetricChange) -> String {
    let pct = |x: f64| format!("{x:+.1}");
    match c.ratio_ci {
        Some(ci) => format!(
            "{} % [{}, {}]",
            pct(c.change_pct),
            pct((ci.low - 1.0) * 100.0),
            pct((ci.high - 1.0) * 100.0)
        ),
        None if c.change_pct.is_finite() => format!("{} %", pct(c.change_pct)),
        None => "–".to_string(),
    }
}

fn value_text(s: &Summary) -> String {
    number::mean_ci(s.mean, s.ci_half_width())
}

/// The cells of one change for the table and Markdown.
fn columns(c: &MetricChange, margin_pct: f64) -> [String; 8] {
    let label = c.verdict.label(margin_pct);
    let verdict = if c.gating || matches!(c.verdict, Verdict::Equivalent | Verdict::Inconclusive) {
        label
    } else if role::is_cpu(&c.metric) {
        format!("{label} (cpu, not gating)")
    } else {
        format!("{label} (not gating)")
    };
    [
        c.variant.clone(),
        c.workload.clone(),
        c.phase.clone(),
        format!(
            "{} ({}, {})",
            c.metric.name,
            c.metric.unit,
            if c.metric.direction == crate::metric::Direction::HigherIsBetter {
                "↑"
            } else {
                "↓"
            }
        ),
        value_text(&c.base),
        value_text(&c.cand),
        change_text(c),
        verdict,
    ]
}

const HEADER: [&str; 8] = [
    "variant",
    "workload",
    "phase",
    "metric",
    "base",
    "candidate",
    "change [95 % CI]",
    "verdict",
];

/// Renders `c` in `format`; the output ends with a newline.
pub fn render(c: &Comparison, format: CompareFormat) -> String {
    match format {
        CompareFormat::Table => render_table(c),
        CompareFormat::Md => render_markdown(c),
        CompareFormat::Json => {
            let mut s =
                serde_json::to_string_pretty(c).unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()));
            s.push('\n');
            s
        }
        CompareFormat::Html => render_html(c),
    }
}

fn render_table(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "fsbench compare: base {} → candidate {}",
        c.base.describe(),
        c.cand.describe()
    );
    let rows: Vec<[String; 8]> = c.changes.iter().map(|x| columns(x, c.margin_pct)).collect();
    let widths: Vec<usize> = (0..8)
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .fold(HEADER[i].chars().count(), usize::max)
        })
        .collect();
    let line = |cells: &[&str]| -> String {
        let mut l = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = widths[i].saturating_sub(cell.chars().count());
            if (4..7).contains(&i) {
                let _ = write!(l, "{}{cell}  ", " ".repeat(pad));
            } else {
                let _ = write!(l, "{cell}{}  ", " ".repeat(pad));
            }
        }
        l.trim_end().to_string()
    };
    let _ = writeln!(out, "\n{}", line(&HEADER));
    let _ = writeln!(out, "{}", "-".repeat(widths.iter().sum::<usize>() + 2 * 7));
    for r in &rows {
        let refs: Vec<&str> = r.iter().map(String::as_str).collect();
        let _ = writeln!(out, "{}", line(&refs));
    }
    let _ = writeln!(out, "\n{}", c.tally());
    let _ = writeln!(out, "{}", c.noise_line());
    let _ = writeln!(
        out,
        "change: candidate mean / base mean − 1, with the unadjusted 95 % CI of the ratio (the repeats and the between-session sd counted); better/worse need the {}-adjusted p < 0.05 and |change| > threshold; \"same within {} %\" needs both one-sided tests against ±{} % to pass; inconclusive is neither, never \"same\". The exit code counts {} rows only (--gate all: every non-CPU row); CPU rows never count.",
        c.correction,
        c.margin_pct,
        c.margin_pct,
        if c.gate == Gate::All { "all non-CPU" } else { "headline" }
    );
    unmatched(&mut out, c, |s| s.to_string());
    if !c.setup_differs.is_empty() {
        let _ = writeln!(
            out,
            "warning: the two sessions ran on different set-ups ({}): a difference may come from the set-up, not the change; compare sessions of one machine and one configuration",
            c.setup_differs.join("; ")
        );
    }
    let _ = writeln!(
        out,
        "{}",
        if c.regressions > 0 {
            format!(
                "REGRESSION: {} metric(s) significantly worse by more than the threshold",
                c.regressions
            )
        } else {
            "no regression".into()
        }
    );
    out
}

fn unmatched(out: &mut String, c: &Comparison, fmt: impl Fn(&str) -> String) {
    for (list, side) in [(&c.only_in_base, "base"), (&c.only_in_cand, "candidate")] {
        if !list.is_empty() {
            let _ = writeln!(out, "\nOnly in the {side} ({}), not compared:", list.len());
            for k in list {
                let _ = writeln!(out, "- {}", fmt(k));
            }
        }
    }
}

fn render_markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## fsbench compare: {} → {}\n",
        md(&c.base.describe()),
        md(&c.cand.describe())
    );
    if c.regressions > 0 {
        let _ = writeln!(
            out,
            "**{} regression(s)** beyond the {} % threshold:\n",
            c.regressions, c.threshold_pct
        );
        for ch in c.changes.iter().filter(|x| x.gating && x.verdict == Verdict::Worse) {
            let _ = writeln!(out, "- {}: {}", md(&ch.key()), change_text(ch));
        }
        out.push('\n');
    } else {
        out.push_str("No regression.\n\n");
    }
    let _ = writeln!(out, "{}\n", c.tally());
    let _ = writeln!(out, "{}\n", md(&c.noise_line()));
    let _ = writeln!(out, "| {} |", HEADER.join(" | "));
    let _ = writeln!(out, "|:--|:--|:--|:--|--:|--:|--:|:--|");
    for ch in &c.changes {
        let mut cols = columns(ch, c.margin_pct).map(|s| md(&s));
        if ch.verdict == Verdict::Worse || ch.verdict == Verdict::Better {
            cols[7] = format!("**{}**", cols[7]);
        }
        let _ = writeln!(out, "| {} |", cols.join(" | "));
    }
    let _ = writeln!(
        out,
        "\nchange: candidate mean / base mean − 1 with the unadjusted 95 % CI of the ratio (log-scale delta method, the repeats and the between-session sd counted); ↑ higher is better, ↓ lower is better. better/worse: {}-adjusted p < 0.05 and |change| > threshold; same within {} %: both one-sided tests pass; inconclusive: neither, never \"same\". Regressions count on {} rows only; CPU rows never count.",
        c.correction,
        c.margin_pct,
        if c.gate == Gate::All { "all non-CPU" } else { "headline" }
    );
    let versions = c.versions();
    if !versions.is_empty() {
        let _ = writeln!(out, "\nVersions: {}", md(&versions));
    }
    unmatched(&mut out, c, md);
    out
}

fn render_html(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>fsbench compare</title><style>\
         body{{font-family:system-ui,sans-serif;max-width:1160px;margin:0 auto;padding:0 20px 40px;color:#1d1d1f}}\
         table{{border-collapse:collapse;font-size:0.92em}}th,td{{border:1px solid #ddd;padding:3px 8px;text-align:right}}\
         th{{background:#f2f2f2}}td.l{{text-align:left}}tr.worse td{{background:#fde8e8}}tr.better td{{background:#e6f4ea}}\
         figure svg{{max-width:100%;height:auto}}.note{{color:#555;font-size:0.9em}}\
         </style></head><body>\n<h1>fsbench compare</h1>\n<p>base {} → candidate {}</p>\n",
        esc(&c.base.describe()),
        esc(&c.cand.describe())
    );
    let _ = writeln!(
        out,
        "<p><b>{}</b> · {}</p>",
        if c.regressions > 0 {
            format!("{} regression(s)", c.regressions)
        } else {
            "no regression".into()
        },
        esc(&c.tally())
    );
    let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&c.noise_line()));
    let rows: Vec<ForestRow> = c
        .changes
        .iter()
        .filter(|x| x.gating)
        .map(|x| ForestRow {
            label: x.key(),
            change: x.change_pct,
            ci: x.ratio_ci.map(|ci| ((ci.low - 1.0) * 100.0, (ci.high - 1.0) * 100.0)),
            tone: match x.verdict {
                Verdict::Better => 1,
                Verdict::Worse => 2,
                _ => 0,
            },
        })
        .collect();
    if !rows.is_empty() {
        out.push_str("<figure class=\"chart chart-forest\">");
        match charts::forest_chart(&rows, c.threshold_pct, 1100) {
            Ok(svg) => out.push_str(&svg),
            Err(e) => {
                let _ = write!(out, "<p class=\"note\">{}</p>", esc(&e.to_string()));
            }
        }
        let _ = writeln!(
            out,
            "<figcaption class=\"note\">Change of each metric (candidate against base) with its 95 % CI; grey band: ± threshold. Red: worse, green: better.{}</figcaption></figure>",
            super::caption::provenance_of(&c.versions())
        );
    }
    out.push_str("<table><thead><tr>");
    for (i, h) in HEADER.iter().enumerate() {
        let l = if i < 4 || i == 7 {
            " style=\"text-align:left\""
        } else {
            ""
        };
        let _ = write!(out, "<th{l}>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>\n");
    for ch in &c.changes {
        let class = match ch.verdict {
            Verdict::Worse if ch.gating => "worse",
            Verdict::Better if ch.gating => "better",
            _ => "",
        };
        let _ = write!(out, "<tr class=\"{class}\">");
        for (i, col) in columns(ch, c.margin_pct).iter().enumerate() {
            let l = if i < 4 || i == 7 { " class=\"l\"" } else { "" };
            let _ = write!(out, "<td{l}>{}</td>", esc(col));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    let mut rest = String::new();
    unmatched(&mut rest, c, |s| s.to_string());
    if !rest.is_empty() {
        let _ = writeln!(out, "<pre>{}</pre>", esc(rest.trim()));
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build;
    use crate::fixture::session_data;

    /// `compare` with four more sessions of the base's configuration that agree with it
    /// exactly: the between-session variance is estimated as 0 from five sessions, so the
    /// tests below see the repeats' own tests (the noise has tests of its own).
    fn cmp(base: &ReportModel, cand: &ReportModel, threshold: f64) -> Comparison {
        let refs = [base; 4];
        compare(base, cand, &refs, threshold, DEFAULT_EQUIVALENCE_PCT, Gate::Headline)
    }

    /// The fixture as session `id` with every measured value of ext4's bonnie throughput rows
    /// times `factor`.
    fn session(id: i64, factor: f64) -> ReportModel {
        let mut m = scaled(factor);
        m.session.id = id;
        m
    }

    #[test]
    fn without_enough_sessions_the_assumed_session_sd_is_counted_and_said() {
        let base = session(1, 1.0);
        // 12 % slower: beyond the threshold, and far beyond the repeats' spread, but within
        // what two sessions 6 % (sd) apart each can give by themselves.
        let cand = session(2, 0.88);
        let run = |refs: &[&ReportModel]| {
            compare(
                &base,
                &cand,
                refs,
                DEFAULT_THRESHOLD_PCT,
                DEFAULT_EQUIVALENCE_PCT,
                Gate::Headline,
            )
        };
        let c = run(&[]);
        let rows: Vec<&MetricChange> = c.changes.iter().filter(|x| x.metric.name == "throughput").collect();
        assert!(!rows.is_empty());
        for x in &rows {
            assert_eq!(
                (x.between_sessions, x.between_sd_pct),
                (0, sessions::ASSUMED_SESSION_SD_PCT)
            );
            assert_ne!(x.verdict, Verdict::Worse, "{}: {:?}", x.key(), x.ratio_ci);
        }
        assert_eq!(c.exit_code(), 0);
        assert_eq!(c.noise.estimated_rows, 0);
        assert!(c.noise_line().contains(sessions::ASSUMED_RULE), "{}", c.noise_line());
        // The same 12 % with four more sessions that agree with the base: the noise estimated
        // as 0 from five sessions, and the drop is worse.
        let refs = [&base; 4];
        let c = run(&refs);
        let rows: Vec<&MetricChange> = c
            .changes
            .iter()
            .filter(|x| x.metric.name == "throughput" && x.base.n >= 2)
            .collect();
        assert!(rows.iter().all(|x| x.between_sessions == 5 && x.between_sd_pct == 0.0));
        assert!(
            rows.iter().any(|x| x.verdict == Verdict::Worse),
            "{:#?}",
            rows.iter()
                .map(|x| (x.key(), x.verdict, x.p_adjusted, x.ratio_ci))
                .collect::<Vec<_>>()
        );
        assert_eq!(c.exit_code(), 1);
        assert!(c.noise_line().contains("from 5 sessions"), "{}", c.noise_line());
        // Four that scatter 8–10 % around it: the estimate is large, and the drop no longer
        // stands out from what sessions do by themselves.
        let scatter: Vec<ReportModel> = [1.09, 0.91, 1.1, 0.92]
            .iter()
            .enumerate()
            .map(|(i, &f)| session(3 + i as i64, f))
            .collect();
        let refs: Vec<&ReportModel> = scatter.iter().collect();
        let c = run(&refs);
        let x = c
            .changes
            .iter()
            .find(|x| x.metric.name == "throughput" && x.base.n >= 2)
            .unwrap();
        assert!(x.between_sd_pct > 5.0 && x.between_sessions == 5, "{x:?}");
        assert_eq!(c.exit_code(), 0, "{}", c.noise_line());
        assert_eq!(c.noise.reference_sessions, [3, 4, 5, 6]);
    }

    /// The fixture with every measured ext4 bonnie throughput multiplied by `factor`.
    fn scaled(factor: f64) -> ReportModel {
        let mut data = session_data();
        data.session.id = 8;
        for s in data.samples.iter_mut().filter(|s| s.sample.case_id == "ext4-bonnie") {
            for m in s
                .sample
                .measurements
                .iter_mut()
                .filter(|m| m.metric.name == "throughput")
            {
                m.value *= factor;
            }
        }
        build(&data, 1, 0.95)
    }

    #[test]
    fn a_session_against_itself_is_never_different_and_exit_0() {
        let m = build(&session_data(), 1, 0.95);
        let c = cmp(&m, &m, DEFAULT_THRESHOLD_PCT);
        assert!(!c.changes.is_empty());
        assert!(
            c.changes
                .iter()
                .all(|x| matches!(x.verdict, Verdict::Equivalent | Verdict::Inconclusive)),
            "{c:#?}"
        );
        // Cells with n ≥ 2 are testable: ratio exactly 1, p = 1; equivalent when the spread is
        // small enough, inconclusive otherwise, never different.
        assert!(c
            .changes
            .iter()
            .filter(|x| x.base.n >= 2)
            .all(|x| x.ratio == 1.0 && x.p_diff == Some(1.0) && x.p_adjusted == Some(1.0)));
        assert!(c.changes.iter().any(|x| x.verdict == Verdict::Equivalent));
        // n = 1 cells (filecopy) cannot be tested.
        assert!(c
            .changes
            .iter()
            .any(|x| x.workload == "filecopy" && x.verdict == Verdict::Inconclusive && x.p_diff.is_none()));
        assert_eq!(c.exit_code(), 0);
        assert!(c.only_in_base.is_empty() && c.only_in_cand.is_empty());
    }

    #[test]
    fn a_slowed_candidate_is_worse_with_exit_1_and_a_faster_one_better() {
        let base = build(&session_data(), 1, 0.95);
        let slow = cmp(&base, &scaled(0.5), DEFAULT_THRESHOLD_PCT);
        let row = slow
            .changes
            .iter()
            .find(|x| x.variant == "ext4" && x.metric.name == "throughput")
            .unwrap();
        assert_eq!(row.verdict, Verdict::Worse);
        assert!((row.change_pct + 50.0).abs() < 1e-9);
        assert_eq!(slow.regressions, 1);
        assert_eq!(slow.exit_code(), 1);
        // Everything else is unchanged.
        assert_eq!(slow.changes.iter().filter(|x| x.verdict == Verdict::Worse).count(), 1);
        let fast = cmp(&base, &scaled(1.5), DEFAULT_THRESHOLD_PCT);
        assert_eq!(fast.exit_code(), 0);
        assert!(fast.changes.iter().any(|x| x.verdict == Verdict::Better));
        // Not significant: 3 % with sd ≈ 3 % of the mean and n = 3.
        let small = cmp(&base, &scaled(1.03), DEFAULT_THRESHOLD_PCT);
        let row = small
            .changes
            .iter()
            .find(|x| x.variant == "ext4" && x.metric.name == "throughput")
            .unwrap();
        assert!(!row.ratio_ci.unwrap().excludes_one());
        assert_eq!(row.verdict, Verdict::Inconclusive);
        // −10 %, CI about ±7 %: significant alone (p ≈ 0.01), but not after Holm's adjustment
        // across the gating family of this comparison, and not within 3 % either:
        // inconclusive, exit 0 — one p ≈ 0.01 among many metrics is what noise produces.
        let row_of = |c: &Comparison| {
            c.changes
                .iter()
                .find(|x| x.variant == "ext4" && x.metric.name == "throughput")
                .unwrap()
                .clone()
        };
        let c = cmp(&base, &scaled(0.9), DEFAULT_THRESHOLD_PCT);
        let row = row_of(&c);
        assert!(row.ratio_ci.unwrap().excludes_one() && row.p_diff.unwrap() < two_sample::ALPHA);
        assert!(row.p_adjusted.unwrap() >= two_sample::ALPHA, "{row:?}");
        assert!(c.changes.iter().filter(|x| x.gating && x.p_diff.is_some()).count() > 1);
        assert_eq!((row.verdict, c.exit_code()), (Verdict::Inconclusive, 0));
        // −50 % is significant after adjustment too, but not beyond a 60 % threshold.
        let c = cmp(&base, &scaled(0.5), 60.0);
        assert_eq!((row_of(&c).verdict, c.exit_code()), (Verdict::Inconclusive, 0));
    }

    #[test]
    fn lower_is_better_direction_and_cpu_rows_do_not_gate() {
        let base = build(&session_data(), 1, 0.95);
        let mut data = session_data();
        for s in data.samples.iter_mut().filter(|s| s.sample.case_id == "ext4-bonnie") {
            for m in s.sample.measurements.iter_mut() {
                match m.metric.name.as_str() {
                    "lat_p99" => m.value *= 0.5,      // lower latency: better
                    "cpu_process" => m.value *= 10.0, // more CPU: worse, but not gating
                    _ => {}
                }
            }
        }
        let c = cmp(&base, &build(&data, 1, 0.95), DEFAULT_THRESHOLD_PCT);
        let find = |name: &str| {
            c.changes
                .iter()
                .find(|x| x.variant == "ext4" && x.metric.name == name)
                .unwrap()
        };
        assert_eq!(find("lat_p99").verdict, Verdict::Better);
        let cpu = find("cpu_process");
        assert_eq!((cpu.verdict, cpu.gating), (Verdict::Worse, false));
        assert_eq!(c.exit_code(), 0);
    }

    #[test]
    fn tail_latencies_gate_only_with_gate_all() {
        let base = build(&session_data(), 1, 0.95);
        let mut data = session_data();
        for s in data.samples.iter_mut().filter(|s| s.sample.case_id == "ext4-bonnie") {
            for m in s.sample.measurements.iter_mut().filter(|m| m.metric.name == "lat_p99") {
                m.value *= 3.0; // much higher tail latency: worse
            }
        }
        let cand = build(&data, 1, 0.95);
        let lat = |c: &Comparison| {
            c.changes
                .iter()
                .find(|x| x.variant == "ext4" && x.metric.name == "lat_p99")
                .unwrap()
                .clone()
        };
        let c = cmp(&base, &cand, DEFAULT_THRESHOLD_PCT);
        assert_eq!(
            (lat(&c).verdict, lat(&c).gating, c.exit_code()),
            (Verdict::Worse, false, 0)
        );
        assert!(render(&c, CompareFormat::Table).contains("worse (not gating)"));
        let c = compare(
            &base,
            &cand,
            &[],
            DEFAULT_THRESHOLD_PCT,
            DEFAULT_EQUIVALENCE_PCT,
            Gate::All,
        );
        assert_eq!(
            (lat(&c).verdict, lat(&c).gating, c.exit_code()),
            (Verdict::Worse, true, 1)
        );
        assert!(render(&c, CompareFormat::Table).contains("Holm-adjusted"));
    }

    /// A standard normal deviate (Box–Muller).
    fn normal(rng: &mut rand::rngs::SmallRng) -> f64 {
        use rand::Rng;
        let u: f64 = rng.gen_range(f64::EPSILON..1.0);
        let v: f64 = rng.gen();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    #[test]
    fn property_aa_false_alarm_rate_is_at_most_five_percent() {
        // A/A: both sessions drawn from the same distribution, 144 metrics (48 headline gating,
        // the rest tail latencies and details, shown but not gating), n = 3 repeats each,
        // CoV from 1 % to 30 % (tail latencies noisy). The exit code must be 1 in at most 5 %
        // of pairs; without the correction nearly every pair would exit 1 (reported too).
        use rand::SeedableRng;
        let mut rng = rand::rngs::SmallRng::seed_from_u64(18);
        let pairs = 2000;
        let (metrics, headline) = (144, 48);
        let (mut alarms, mut alarms_uncorrected, mut alarms_all) = (0, 0, 0);
        for _ in 0..pairs {
            let mut rows = Vec::with_capacity(metrics);
            for m in 0..metrics {
                let cov = if m < headline {
                    0.01 + 0.04 * (m % 5) as f64
                } else {
                    0.3
                };
                let mean = 100.0 * (1 + m) as f64;
                let mut draw = || {
                    let v: Vec<f64> = (0..3)
                        .map(|_| (mean * (1.0 + cov * normal(&mut rng))).max(1e-3))
                        .collect();
                    Sample::of(&v).unwrap()
                };
                let (base, cand) = (draw(), draw());
                rows.push(Decision {
                    cand,
                    base,
                    direction: Direction::HigherIsBetter,
                    gating: m < headline,
                    // Sessions with no effect of their own: the repeats alone.
                    noise: None,
                });
            }
            let d = decide(&rows, DEFAULT_THRESHOLD_PCT, DEFAULT_EQUIVALENCE_PCT);
            if rows
                .iter()
                .zip(&d)
                .any(|(r, x)| r.gating && x.verdict == Verdict::Worse)
            {
                alarms += 1;
            }
            // What the old rule (unadjusted, every non-CPU row) would have done.
            if rows.iter().zip(&d).any(|(r, x)| {
                x.p_diff.is_some_and(|p| p < two_sample::ALPHA)
                    && (r.cand.mean / r.base.mean - 1.0).abs() * 100.0 > DEFAULT_THRESHOLD_PCT
                    && r.cand.mean < r.base.mean
            }) {
                alarms_uncorrected += 1;
            }
            // --gate all: every row in one Holm family.
            let all: Vec<Decision> = rows.iter().map(|r| Decision { gating: true, ..*r }).collect();
            let d = decide(&all, DEFAULT_THRESHOLD_PCT, DEFAULT_EQUIVALENCE_PCT);
            if d.iter().any(|x| x.verdict == Verdict::Worse) {
                alarms_all += 1;
            }
        }
        let rate = alarms as f64 / pairs as f64;
        let uncorrected = alarms_uncorrected as f64 / pairs as f64;
        let all = alarms_all as f64 / pairs as f64;
        eprintln!("A/A exit-1 rate: {rate} (gate headline, Holm), {all} (gate all, Holm), {uncorrected} (unadjusted, all rows)");
        assert!(rate <= 0.05, "A/A false-alarm rate {rate}");
        assert!(all <= 0.05, "A/A false-alarm rate with --gate all {all}");
        assert!(
            uncorrected > 0.5,
            "the simulation must be able to cry wolf: {uncorrected}"
        );
    }

    #[test]
    fn unmatched_rows_are_listed_and_every_format_renders() {
        let base = build(&session_data(), 1, 0.95);
        let mut data = session_data();
        for s in data.samples.iter_mut() {
            for m in s.sample.measurements.iter_mut().filter(|m| m.phase == "rand_create") {
                m.phase = "rand_create_v2".into();
            }
        }
        let cand = build(&data, 1, 0.95);
        let c = cmp(&base, &cand, DEFAULT_THRESHOLD_PCT);
        assert!(
            c.only_in_base
                .iter()
                .any(|k| k.starts_with("ext4 / bonnie / rand_create rate")),
            "{:?}",
            c.only_in_base
        );
        assert!(c.only_in_cand.iter().any(|k| k.contains("rand_create_v2")));
        let table = render(&c, CompareFormat::Table);
        assert!(
            table.contains("Only in the base") && table.contains("same within 3 %") && table.contains("no regression")
        );
        let md = render(&c, CompareFormat::Md);
        assert!(
            md.contains("| variant | workload |") && md.contains("No regression."),
            "{md}"
        );
        let json: serde_json::Value = serde_json::from_str(&render(&c, CompareFormat::Json)).unwrap();
        assert_eq!(json["schema_version"], COMPARE_SCHEMA_VERSION);
        assert!(matches!(
            json["changes"][0]["verdict"].as_str(),
            Some("equivalent" | "inconclusive")
        ));
        assert_eq!(json["correction"], "Holm");
        assert_eq!(json["gate"], "headline");
        let html = render(&c, CompareFormat::Html);
        assert!(html.contains("chart-forest") && !html.contains("<script"));
        // Labels are escaped in HTML.
        assert!(
            html.contains("session 7 (nightly, &quot;fast&quot;)"),
            "{}",
            &html[..600]
        );
    }

    /// The version line ends the forest chart's caption (HTML) and the Markdown; two sessions
    /// made by different versions name both, the base's first.
    #[test]
    fn compare_outputs_carry_the_version_line_of_both_sessions() {
        let mut data = session_data();
        data.session.info.host.kernel = "6.1.0-<a>".into();
        data.session.info.tool_versions = vec![("mkfs.ext4".into(), "1.47.0".into())];
        let base = build(&data, 1, 0.95);
        let c = cmp(&base, &base, DEFAULT_THRESHOLD_PCT);
        let line = format!(
            "Linux 6.1.0-<a> · fsbench {} · mkfs.ext4 1.47.0",
            data.session.info.fsbench_version
        );
        assert_eq!(c.versions(), line);
        let html = render(&c, CompareFormat::Html);
        let cap = &html[html.find("<figcaption").unwrap()..html.find("</figcaption>").unwrap()];
        assert!(
            cap.contains("<span class=\"provenance\">Linux 6.1.0-&lt;a&gt; · fsbench"),
            "{cap}"
        );
        let md = render(&c, CompareFormat::Md);
        assert!(md.contains("\nVersions: Linux 6.1.0-\\<a\\> · fsbench"), "{md}");
        // A candidate on another kernel: both lines, labelled.
        data.session.info.host.kernel = "6.12.0".into();
        let cand = build(&data, 1, 0.95);
        let c = cmp(&base, &cand, DEFAULT_THRESHOLD_PCT);
        let v = c.versions();
        assert!(
            v.starts_with("base: Linux 6.1.0-<a>") && v.contains("; candidate: Linux 6.12.0"),
            "{v}"
        );
        assert!(render(&c, CompareFormat::Html).contains("candidate: Linux 6.12.0"));
        // A session that recorded nothing adds no line at all.
        let mut bare = session_data();
        bare.session.info.host.kernel.clear();
        bare.session.info.fsbench_version.clear();
        bare.session.info.tool_versions.clear();
        let bare = build(&bare, 1, 0.95);
        let c = cmp(&bare, &bare, DEFAULT_THRESHOLD_PCT);
        assert!(!render(&c, CompareFormat::Md).contains("Versions:"));
        assert!(!render(&c, CompareFormat::Html).contains("provenance"));
    }
}
