//! What a session can answer: for sessions run with a stopping rule (`--precision`,
//! `--budget`, schema 5), one [`RowAnswer`] per headline row that says whether its intervals
//! reached the precision target and, for every other variant against the best, the verdict of
//! `compare`'s rule ([`crate::stats::verdict::pair_verdict`]): better / worse / "same within 3 %"
//! / "inconclusive" — never "tied", which mixed "shown the same" with "not shown different".
//!
//! Sessions run since issue 26 carry the stopping rule's sequential design in their run options
//! (`sequential`): their answers are those the rule decided by — all pairs with Holm at the
//! levels of the last planned look the session reached ([`crate::stats::verdict::look_answers`]
//! on each variant's first values up to that look), with the look, its repeats and the
//! confidence of its repeated interval printed. "Same" is said only of a variant tested the
//! same within the margin against every candidate for the best.
//!
//! Sessions without a stopping rule get no answers (their exports are unchanged; the golden
//! test pins them).
//!
//! [`checks`]: the methodology check of every report of a session recorded since schema 5
//! (`Policy::methodology`), warnings that say what is wrong with the set-up and the fix, as
//! hyperfine's do:
//! - **cache regime**: a workload's data set (`file_size`) under 2 × the memory it can cache
//!   (the memory cgroup, else the machine's memory);
//! - **device-bound**: every filesystem of a throughput row within 15 % of the raw device's
//!   ceiling (the device is measured, not the filesystems: compare their CPU rows);
//! - **multimodal**: a headline cell of ≥ 8 values whose bimodality coefficient
//!   (Pfister et al. 2013: `(g² + 1) / (κ + 3(n−1)²/((n−2)(n−3)))`, sample skewness g, excess
//!   kurtosis κ) is above 5/9, the value of a uniform distribution: the median is shown;
//! - **drift**: a headline cell of ≥ 6 values, in run order, with a change point: the largest
//!   standardised difference of the means before and after a split, against 999 permutations
//!   of the same values (p < 0.01) and a shift of at least 5 %;
//! - **loops buffered by request**: the variants whose loop devices ran buffered because the
//!   run asked for it (`loop_io = "buffered"`, doc/io-path.md), said so the numbers are read as
//!   that path's (a buffered loop nobody asked for is a path mismatch, `report::build`).
//!
//! Phases under the minimum time are already flagged by the engine's notes (engine::phase).
//! Everything here reads the model only and never panics.

use super::{cachebound, role, ReportModel, Row, Standing, Warning, WorkloadTable};
use crate::stats::best::Answer;
use crate::stats::sequential::Plan;
use crate::stats::two_sample::{Sample, Verdict};
use crate::stats::verdict::{look_answers, pair_verdict, Design, StoppingRule, DECIDED_MARGIN_PCT};
use serde::{Deserialize, Serialize};

/// The answer of one headline row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowAnswer {
    /// Workload name.
    pub workload: String,
    /// Phase.
    pub phase: String,
    /// Metric name.
    pub metric: String,
    /// Whether every cell's interval reached the precision target (`None`: no target).
    pub precise: Option<bool>,
    /// The best variant of the row.
    pub best: String,
    /// Every other variant against the best: (variant, verdict of the variant vs the best).
    pub versus_best: Vec<(String, Verdict)>,
    /// The planned look the answers are from (sessions with a sequential design); `None`:
    /// the unadjusted verdicts of an older session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub look: Option<LookNote>,
}

/// Which planned look a row's answers come from.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LookNote {
    /// 1-based look number.
    pub look: usize,
    /// Planned looks in all.
    pub looks: usize,
    /// Repeats per variant the look used.
    pub repeats: usize,
    /// Family-wise level of the look's difference tests.
    pub level: f64,
    /// Confidence of the repeated interval at that look.
    pub confidence: f64,
}

/// The sequential design stored with a session's run options (key `sequential`), if any.
pub fn stored_design(run_options: Option<&str>) -> Option<Design> {
    #[derive(Deserialize)]
    struct Stored {
        sequential: Option<Design>,
    }
    serde_json::from_str::<Stored>(run_options?).ok()?.sequential
}

/// The equivalence margin stored with a session's run options (key `equivalence`, percent,
/// inside (0, 100)), else [`DECIDED_MARGIN_PCT`] (sessions before `--equivalence`).
pub fn stored_margin(run_options: Option<&str>) -> f64 {
    #[derive(Deserialize)]
    struct Stored {
        equivalence: Option<f64>,
    }
    run_options
        .and_then(|o| serde_json::from_str::<Stored>(o).ok())
        .and_then(|s| s.equivalence)
        .filter(|m| *m > 0.0 && *m < 100.0)
        .unwrap_or(DECIDED_MARGIN_PCT)
}

/// The sizes a session's warm-ups set (run options key `resized`, written by the runner's
/// sizes set by time), one line per resized workload: `"bonnie: files 40960 → 102400 (…)"`.
/// Empty for a session that ran its suite's sizes.
pub fn sizes_set(run_options: Option<&str>) -> Vec<String> {
    #[derive(Deserialize)]
    struct Resized {
        workload: String,
        changes: Vec<String>,
    }
    #[derive(Deserialize)]
    struct Stored {
        #[serde(default)]
        resized: Vec<Resized>,
    }
    let Some(stored) = run_options.and_then(|o| serde_json::from_str::<Stored>(o).ok()) else {
        return Vec::new();
    };
    stored
        .resized
        .into_iter()
        .map(|r| format!("{}: {}", r.workload, r.changes.join("; ")))
        .collect()
}

/// What decides a session's sizes beyond its suite text: `--scale` and the sizes its warm-ups
/// set (each change without the warm-up time that asked for it, which differs every session):
/// `"scale 0.5; bonnie: files 40960 → 81920"`, `"as the suite"` when neither.
pub fn size_fact(run_options: Option<&str>) -> String {
    #[derive(Deserialize)]
    struct Stored {
        scale: Option<f64>,
    }
    let scale = run_options
        .and_then(|o| serde_json::from_str::<Stored>(o).ok())
        .and_then(|s| s.scale)
        .filter(|s| *s != 1.0);
    let mut parts: Vec<String> = scale.map(|s| format!("scale {s}")).into_iter().collect();
    parts.extend(sizes_set(run_options).iter().map(|line| {
        line.split("; ")
            .map(|change| change.split(" (").next().unwrap_or(change))
            .collect::<Vec<_>>()
            .join(", ")
    }));
    if parts.is_empty() {
        "as the suite".to_string()
    } else {
        parts.join("; ")
    }
}

/// The sentence saying what [`sizes_set`] found, or `None`.
pub fn sizes_sentence(model: &ReportModel) -> Option<String> {
    let lines = sizes_set(model.session.info.run_options.as_deref());
    (!lines.is_empty()).then(|| {
        format!(
            "Sizes set by time: the warm-ups left phases under the minimum time, so the measured repeats of every variant ran more work ({}); `--fixed-sizes` runs the suite's sizes.",
            lines.join("; ")
        )
    })
}

impl RowAnswer {
    /// The answer of headline `row` of `table` under `rule`: its best variant, the others'
    /// verdicts against it and the look they come from.
    fn of(
        rule: &StoppingRule,
        table: &WorkloadTable,
        row: &Row,
        best: &str,
        versus_best: Vec<(String, Verdict)>,
        look: Option<LookNote>,
    ) -> RowAnswer {
        RowAnswer {
            workload: table.workload.clone(),
            phase: row.phase.clone(),
            metric: row.metric.name.clone(),
            precise: rule
                .precision_pct
                .map(|_| row.cells.iter().all(|c| rule.precise(&c.values))),
            best: best.to_string(),
            versus_best,
            look,
        }
    }

    /// Decided: every other variant is better, worse or the same as the best (a row of one
    /// variant has nothing to decide and counts as decided).
    pub fn decided(&self) -> bool {
        self.versus_best.iter().all(|(_, v)| *v != Verdict::Inconclusive)
    }
}

/// The answers of `model`'s headline rows, if its session ran with a stopping rule.
pub fn answers(model: &ReportModel) -> Vec<RowAnswer> {
    let info = &model.session.info;
    let Some(rule) = StoppingRule::of(&info.policy) else {
        return vec![];
    };
    let rule = rule.with_margin(stored_margin(info.run_options.as_deref()));
    let rule = match stored_design(info.run_options.as_deref()) {
        Some(design) => rule.with_design(design),
        None => rule,
    };
    model
        .workloads
        .iter()
        .flat_map(|t| match &rule.plan {
            Some(plan) => planned_answers(&rule, Some(plan), t),
            // A pending design has no looks yet: every row is inconclusive.
            None if rule.pending => planned_answers(&rule, None, t),
            None => table_answers(&rule, t),
        })
        .collect()
}

/// The answers of a session with a sequential plan: each headline row at the last look its
/// cells reached ([`Plan::last_look_by`] of the fewest values; before the first look, and
/// without a plan (a pending design), every variant is inconclusive).
fn planned_answers(rule: &StoppingRule, plan: Option<&Plan>, table: &WorkloadTable) -> Vec<RowAnswer> {
    let mut out = Vec::new();
    for row in table.rows.iter().filter(|r| role::is_headline(&r.metric)) {
        let Some(n) = row.cells.iter().map(|c| c.values.len()).min() else {
            continue;
        };
        let look = plan.and_then(|p| Some((p, p.last_look_by(n)?)));
        let answers = match look {
            Some((plan, look)) => {
                let cells: Vec<&[f64]> = row.cells.iter().map(|c| c.values.as_slice()).collect();
                look_answers(&cells, row.metric.direction, plan, look, rule.margin_pct)
            }
            None => vec![Answer::Inconclusive; row.cells.len()],
        };
        let top = answers
            .iter()
            .position(|a| *a == Answer::Best)
            .or_else(|| row.cells.iter().position(|c| c.best))
            .unwrap_or(0);
        let versus_best = row
            .cells
            .iter()
            .zip(&answers)
            .enumerate()
            .filter(|(i, _)| *i != top)
            .map(|(_, (c, a))| {
                let verdict = match a {
                    Answer::Same | Answer::Best => Verdict::Equivalent,
                    Answer::Behind => Verdict::Worse,
                    Answer::Inconclusive => Verdict::Inconclusive,
                };
                (c.variant.clone(), verdict)
            })
            .collect();
        let look = look.map(|(plan, k)| LookNote {
            look: k + 1,
            looks: plan.looks(),
            repeats: plan.repeats_at(k).unwrap_or(0),
            level: plan.difference_level(k),
            confidence: plan.interval_confidence(k),
        });
        out.push(RowAnswer::of(
            rule,
            table,
            row,
            &row.cells[top].variant,
            versus_best,
            look,
        ));
    }
    out
}

fn table_answers(rule: &StoppingRule, table: &WorkloadTable) -> Vec<RowAnswer> {
    let mut out = Vec::new();
    for row in table.rows.iter().filter(|r| role::is_headline(&r.metric)) {
        let Some(best) = row.cells.iter().find(|c| c.best).or(row.cells.first()) else {
            continue;
        };
        let best_sample = Sample::from(&best.summary);
        let versus_best = row
            .cells
            .iter()
            .filter(|c| c.variant != best.variant)
            .map(|c| {
                // The table's standing where it has one (so the answers and the table never
                // disagree: a significant 1 % gap that is within the margin is "same" in both),
                // else compare's verdict.
                let verdict = match c.standing {
                    Some(Standing::Same) => Verdict::Equivalent,
                    Some(Standing::Behind) => Verdict::Worse,
                    Some(Standing::Inconclusive | Standing::Untested) => Verdict::Inconclusive,
                    _ => pair_verdict(
                        Sample::from(&c.summary),
                        best_sample,
                        row.metric.direction,
                        rule.margin_pct,
                    ),
                };
                (c.variant.clone(), verdict)
            })
            .collect();
        out.push(RowAnswer::of(rule, table, row, &best.variant, versus_best, None));
    }
    out
}

/// The plain-text block of the stopping rule (empty without one): the rule, the look its
/// answers are from, the precision target's state and the decided count. The answers
/// themselves are the verdict matrix's words ([`super::matrix`]), which the terminal prints
/// first.
pub fn render_text(model: &ReportModel) -> String {
    let answers = answers(model);
    if answers.is_empty() {
        return String::new();
    }
    let policy = &model.session.info.policy;
    let mut out = String::from("\nstopping rule:");
    if let Some(p) = policy.precision {
        out.push_str(&format!(" precision {p} %"));
    }
    if let Some(b) = policy.budget_s {
        out.push_str(&format!(" budget {b:.0} s"));
    }
    let margin = model.margin_pct();
    if answers.iter().any(|a| a.look.is_some()) {
        out.push_str(&format!(
            "; all pairs with Holm at the planned look's level (α = 0.05 spent over the looks, O'Brien–Fleming type): TOST ±{margin} % against every candidate → same, shown worse than another → behind, else inconclusive.\n"
        ));
    } else {
        out.push_str(&format!(
            "; verdicts against the best, as in the table: TOST ±{margin} % → same, else log-ratio p < 0.05 → worse, else inconclusive.\n"
        ));
    }
    let mut out = super::words::wrap(out.trim_end(), 100) + "\n";
    // The looks the answers are from (one, unless rows reached different looks).
    let mut looks: Vec<String> = Vec::new();
    for l in answers.iter().filter_map(|a| a.look) {
        let line = format!(
            "answers at look {} of {} at {} repeats: level {}; its repeated interval is at {}, the table's at their stated level",
            l.look,
            l.looks,
            l.repeats,
            level_text(l.level),
            confidence_text(l.confidence)
        );
        if !looks.contains(&line) {
            looks.push(line);
        }
    }
    for l in looks {
        out.push_str(&format!("  {l}\n"));
    }
    if policy.precision.is_some() {
        let missed: Vec<String> = answers
            .iter()
            .filter(|a| a.precise == Some(false))
            .map(|a| format!("{} {}", a.phase, a.metric))
            .collect();
        match missed.len() {
            0 => out.push_str("  precision reached in every headline row\n"),
            n => out.push_str(&format!(
                "  precision NOT reached in {n} of {} headline rows{}\n",
                answers.len(),
                if n == answers.len() {
                    String::new()
                } else {
                    format!(" ({})", missed.join(", "))
                }
            )),
        }
    }
    let decided = answers.iter().filter(|a| a.decided()).count();
    out.push_str(&format!(
        "{decided} of {} headline rows decided (\"inconclusive\" is not \"the same\": more repeats or a larger budget may decide it).\n",
        answers.len()
    ));
    let needs = to_decide(model, &answers);
    if !needs.is_empty() {
        out.push_str(&format!(
            "  repeats each that would decide the inconclusive pairs if their observed gap and spread held ({:.0} % power, level 0.05 over the row's pairs):\n",
            crate::stats::best::PLANNING_POWER * 100.0
        ));
        for n in needs {
            out.push_str(&format!("    {n}\n"));
        }
    }
    out
}

/// One line per inconclusive pair of `answers` (a variant against its row's best): their gap,
/// their spread, and the repeats each that would show which is ahead or that they are the same
/// ([`crate::stats::best::repeats_to_decide`]).
fn to_decide(model: &ReportModel, answers: &[RowAnswer]) -> Vec<String> {
    let mut out = Vec::new();
    for a in answers.iter().filter(|a| !a.decided()) {
        let Some(row) = model
            .workloads
            .iter()
            .filter(|t| t.workload == a.workload)
            .flat_map(|t| &t.rows)
            .find(|r| r.phase == a.phase && r.metric.name == a.metric)
        else {
            continue;
        };
        let cell = |v: &str| row.cells.iter().find(|c| c.variant == v);
        let Some(best) = cell(&a.best) else {
            continue;
        };
        let k = row.cells.len();
        let margin = model.margin_pct();
        for (v, _) in a.versus_best.iter().filter(|(_, v)| *v == Verdict::Inconclusive) {
            let Some(other) = cell(v) else {
                continue;
            };
            let Some(t) = crate::stats::best::repeats_to_decide(&other.values, &best.values, k * (k - 1) / 2, margin)
            else {
                continue;
            };
            let what = match (t.ahead, t.same) {
                (Some(n), Some(s)) => {
                    format!("about {n} to show which is ahead, {s} to show them the same within ±{margin} %")
                }
                (Some(n), None) => {
                    format!("about {n} to show which is ahead (a gap beyond ±{margin} % is never the same)")
                }
                (None, Some(s)) => format!("about {s} to show them the same within ±{margin} %"),
                (None, None) => continue,
            };
            out.push(format!(
                "{} {}: {v} against {} {:+.1} % at {:.1} % CoV: {what}",
                a.phase, a.metric, a.best, t.gap_pct, t.cov_pct
            ));
        }
    }
    out
}

/// A look's level: four decimals, or two significant digits below 0.001 (an early
/// O'Brien–Fleming look spends almost nothing: `2.1e-5`, never `0.0000`).
fn level_text(level: f64) -> String {
    if level >= 0.001 {
        format!("{level:.4}")
    } else {
        format!("{level:.1e}")
    }
}

/// A look's interval confidence in percent: two decimals, or `> 99.99 %` when the look's level
/// is below 0.0001 (never `100.00 %`).
fn confidence_text(confidence: f64) -> String {
    if 1.0 - confidence < 0.0001 {
        "> 99.99 %".to_string()
    } else {
        format!("{:.2} %", confidence * 100.0)
    }
}

/// How the set-ups of two sessions differ, one item per fact (`kernel A → B`): kernel, CPU,
/// CPUs, memory, fsbench version, tool versions, each variant's mkfs arguments and mount
/// options, the target, the memory limit, and the I/O path each variant took
/// ([`path_differences`]: loop direct I/O, super options, backing filesystem, mkfs parameters
/// read back, memory limit in force, NoCOW; only where both sessions have the fact), and the
/// sizes ([`size_fact`]: `--scale` and the sizes set by time). Empty
/// when they match.
pub fn fingerprint_differences(base: &ReportModel, cand: &ReportModel) -> Vec<String> {
    let (b, c) = (&base.session.info, &cand.session.info);
    let mut out = Vec::new();
    let mut diff = |what: &str, x: String, y: String| {
        if x != y {
            out.push(format!("{what} {x} → {y}"));
        }
    };
    diff("kernel", b.host.kernel.clone(), c.host.kernel.clone());
    diff("CPU", b.host.cpu_model.clone(), c.host.cpu_model.clone());
    diff("CPUs", b.host.ncpu.to_string(), c.host.ncpu.to_string());
    diff("memory", b.host.mem_bytes.to_string(), c.host.mem_bytes.to_string());
    diff("fsbench", b.fsbench_version.clone(), c.fsbench_version.clone());
    // The target names the run's private folder (`run-<pid>-<secs>`), different every run.
    let target = |t: &str| {
        t.split('/')
            .map(|p| if p.starts_with("run-") { "run-*" } else { p })
            .collect::<Vec<_>>()
            .join("/")
    };
    diff("target", target(&b.target), target(&c.target));
    // Sizes: rows of more work are not the same measurement (sizes set by time, `--scale`).
    diff(
        "sizes",
        size_fact(b.run_options.as_deref()),
        size_fact(c.run_options.as_deref()),
    );
    diff(
        "memory limit",
        format!("{:?}", b.policy.memory),
        format!("{:?}", c.policy.memory),
    );
    for (tool, version) in &b.tool_versions {
        if let Some((_, other)) = c.tool_versions.iter().find(|(t, _)| t == tool) {
            diff(tool, version.clone(), other.clone());
        }
    }
    for bc in &base.cases {
        if let Some(cc) = cand
            .cases
            .iter()
            .find(|c| c.variant == bc.variant && c.workload == bc.workload)
        {
            diff(
                &format!("{} mkfs", bc.variant),
                bc.mkfs_args.join(" "),
                cc.mkfs_args.join(" "),
            );
            diff(
                &format!("{} mount", bc.variant),
                bc.mount_opts.join(","),
                cc.mount_opts.join(","),
            );
        }
    }
    out.extend(path_differences(base, cand, None));
    out.dedup();
    out
}

/// How the I/O paths of two sessions differ (schema 11; sessions without path facts have
/// nothing to compare), one item per variant of both (or only `variant`) and fact that differs:
/// `ext4 loop direct I/O on → off`, its super options, the filesystem holding its images. What
/// `compare` names among the set-up differences and `history` warns of between sessions.
pub fn path_differences(base: &ReportModel, cand: &ReportModel, variant: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let both = base.variants.iter().filter(|v| cand.variants.contains(v));
    for v in both.filter(|v| variant.is_none_or(|only| only == v.as_str())) {
        let (pb, pc) = (path_summary(base, v), path_summary(cand, v));
        for ((what, x), (_, y)) in pb.iter().zip(&pc) {
            if !x.is_empty() && !y.is_empty() && x != y {
                out.push(format!("{v} {what} {x} → {y}"));
            }
        }
    }
    out
}

/// A variant's path facts over its repeats, as text per fact (distinct values joined with
/// `|`; empty where no repeat has the fact): the loop direct-I/O state (`off (by request)` when
/// buffered was asked), the super options, the backing filesystem, the mkfs parameters read
/// back, the memory limit in force (bytes), NoCOW and the hypervisor's free page reporting.
fn path_summary(model: &ReportModel, variant: &str) -> [(&'static str, String); 8] {
    let facts = model.path_facts(variant);
    let distinct = |f: &dyn Fn(&crate::host::path::PathFacts) -> Option<String>| {
        let mut vals: Vec<String> = facts.iter().filter_map(|p| f(p)).collect();
        vals.sort();
        vals.dedup();
        vals.join("|")
    };
    [
        (
            "loop direct I/O",
            distinct(&|p| {
                p.loop_dio.map(|d| match (d, p.loop_dio_asked) {
                    (true, _) => "on".into(),
                    (false, Some(false)) => "off (by request)".into(),
                    (false, _) => "off".into(),
                })
            }),
        ),
        ("super options", distinct(&|p| p.super_options.clone())),
        ("backing filesystem", distinct(&|p| p.backing_fs.clone())),
        ("mkfs parameters", distinct(&|p| p.mkfs_text())),
        (
            "memory limit in force",
            distinct(&|p| p.memory_limit.map(|l| l.to_string())),
        ),
        (
            "NoCOW",
            distinct(&|p| p.nocow.map(|n| if n { "set".into() } else { "not set".into() })),
        ),
        ("free page reporting", distinct(&|p| p.page_reporting.clone())),
        ("atomic write units", distinct(&|p| p.atomic_write.clone())),
    ]
}

/// Bimodality coefficient above this (5/9, a uniform distribution's) suggests two modes.
pub const BIMODAL_BC: f64 = 5.0 / 9.0;

/// The methodology warnings of `model` (empty when its session predates them).
pub fn checks(model: &ReportModel) -> Vec<Warning> {
    if !model.session.info.policy.methodology {
        return vec![];
    }
    let mut out: Vec<Warning> = cache_regime(model).into_iter().map(Warning::from).collect();
    out.extend(loop_by_request(model).map(Warning::from));
    out.extend(page_reporting(model).map(Warning::from));
    out.extend(device_bound(model).into_iter().map(Warning::from));
    for t in &model.workloads {
        for row in t.rows.iter().filter(|r| role::is_headline(&r.metric)) {
            for c in &row.cells {
                let label = format!("{} / {} {} on {}", t.workload, row.phase, row.metric.name, c.variant);
                if let Some(bc) = bimodality(&c.values).filter(|bc| *bc > BIMODAL_BC) {
                    let (median, mean) = (
                        super::number::value(c.summary.median),
                        super::number::value(c.summary.mean),
                    );
                    out.push(Warning::of_kind(
                        "the values look multimodal (bimodality coefficient > 0.56): the typical value is the median, not the mean; look for two regimes (caches, background work) or run more repeats",
                        format!("{label} (median {median}, mean {mean})"),
                        format!(
                            "{label}: the values look multimodal (bimodality coefficient {bc:.2} > 0.56): the typical value is the median, {median}, not the mean, {mean}; look for two regimes (caches, background work) or run more repeats"
                        ),
                    ));
                }
                if let Some((k, p)) = change_point(&c.values) {
                    out.push(Warning::of_kind(
                        "the series drifts (change-point test over the run order): the machine changed during the run; add warm-up repeats, keep other work off the machine, or rerun",
                        format!("{label} (from repeat {} on, p = {p:.3})", k + 1),
                        format!(
                            "{label}: the series drifts: the repeats from {} on differ from those before (change-point test over the run order, p = {p:.3}): the machine changed during the run; add warm-up repeats, keep other work off the machine, or rerun",
                            k + 1
                        ),
                    ));
                }
            }
        }
    }
    out
}

/// Data sets smaller than twice the cacheable memory.
fn cache_regime(model: &ReportModel) -> Vec<String> {
    let info = &model.session.info;
    let (memory, which) = match info.policy.memory {
        Some(m) => (m, "the memory cgroup"),
        None => (info.host.mem_bytes, "the machine's memory"),
    };
    let mut out = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for c in &model.cases {
        if seen.contains(&c.workload.as_str()) {
            continue;
        }
        seen.push(&c.workload);
        // A workload with its own `memory` ran in that cgroup: its samples' path facts say so.
        let (memory, which) = model
            .samples
            .iter()
            .filter(|s| s.sample.case_id == c.case_id)
            .find_map(|s| s.sample.path.as_ref()?.memory_asked)
            .map_or((memory, which), |m| (m, "the memory cgroup"));
        let Ok(json) = serde_json::from_str::<serde_json::Value>(&c.workload_json) else {
            continue;
        };
        let Some(size) = json
            .get("file_size")
            .and_then(|v| v.as_str())
            .and_then(|s| s.parse::<crate::units::Bytes>().ok())
        else {
            continue;
        };
        if size.get() > 0 && size.get() < 2 * memory {
            out.push(format!(
                "{}: its data set ({}) is smaller than 2 × {which} ({}): cache regime, reads may be served from the page cache rather than the disk; set `[run] memory` (--memory) to at most half the data set, or raise file_size",
                c.workload,
                size.human(),
                crate::units::Bytes(memory).human()
            ));
        }
    }
    out
}

/// Throughput rows where every filesystem runs at the raw device's speed.
fn device_bound(model: &ReportModel) -> Vec<String> {
    let Some(ceiling) = model.baseline.as_ref().and_then(|b| b.ceiling_mib_s()) else {
        return vec![];
    };
    let mut out = Vec::new();
    for t in &model.workloads {
        for row in t
            .rows
            .iter()
            .filter(|r| role::is_headline(&r.metric) && cachebound::is_throughput(&r.metric))
        {
            let tolerance = super::cache_bound_tolerance(model.baseline.as_ref());
            let at = |m: f64| m >= 0.85 * ceiling && m <= (1.0 + tolerance) * ceiling;
            if row.cells.len() >= 2 && row.cells.iter().all(|c| at(c.summary.mean)) {
                out.push(format!(
                    "{} / {}: every filesystem runs within 15 % of the raw device's {} MiB/s: device-bound, the disk is measured, not the filesystems; compare their cpu % rows (CPU per operation) instead, or use a faster device",
                    t.workload,
                    row.phase,
                    super::number::value(ceiling)
                ));
            }
        }
    }
    out
}

/// The methodology note of loop devices run buffered on purpose (`--loop-io buffered`, `[run]
/// loop_io`), naming the variants; `None` when no repeat asked for it.
fn loop_by_request(model: &ReportModel) -> Option<String> {
    let asked = |v: &&String| model.path_facts(v).iter().any(|p| p.loop_dio_asked == Some(false));
    let variants: Vec<&str> = model.variants.iter().filter(asked).map(String::as_str).collect();
    (!variants.is_empty()).then(|| {
        format!(
            "{}: loop devices in buffered mode by request (loop_io = \"buffered\"): the host's page cache of each image serves and buffers its I/O, so these results measure that path and may exceed the raw device",
            variants.join(", ")
        )
    })
}

/// The methodology note of repeats run while the hypervisor's free page reporting was on
/// (`host::path::PathFacts::page_reporting`, see `balloon`): how many, and how to hold it;
/// `None` when no repeat ran with it on.
fn page_reporting(model: &ReportModel) -> Option<String> {
    let facts: Vec<_> = model.variants.iter().flat_map(|v| model.path_facts(v)).collect();
    let on = facts
        .iter()
        .filter(|p| p.page_reporting.as_deref().is_some_and(|r| r.starts_with("on")))
        .count();
    (on > 0).then(|| {
        format!(
            "free page reporting was on in {on} of {} repeats: the hypervisor took back memory the machine freed and faulted it in again when a phase reused it, a cost that lands on whichever phase and filesystem reuses it (on a 2-core VM, rewrite through a 256 MiB cgroup ran 10-25 % slower on ext4 and xfs and not on btrfs; doc/statistics.md); `fsbench run --hold-page-reporting` holds it for a run",
            facts.len()
        )
    })
}

/// The bimodality coefficient of `values` (≥ 8 finite values, non-zero spread).
pub fn bimodality(values: &[f64]) -> Option<f64> {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let n = v.len() as f64;
    if v.len() < 8 {
        return None;
    }
    let mean = v.iter().sum::<f64>() / n;
    let m2 = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    if m2 <= 0.0 {
        return None;
    }
    let m3 = v.iter().map(|x| (x - mean).powi(3)).sum::<f64>() / n;
    let m4 = v.iter().map(|x| (x - mean).powi(4)).sum::<f64>() / n;
    // Sample (bias-corrected) skewness and excess kurtosis.
    let g = (n * (n - 1.0)).sqrt() / (n - 2.0) * m3 / m2.powf(1.5);
    let k = (n - 1.0) / ((n - 2.0) * (n - 3.0)) * ((n + 1.0) * (m4 / (m2 * m2) - 3.0) + 6.0);
    let bc = (g * g + 1.0) / (k + 3.0 * (n - 1.0).powi(2) / ((n - 2.0) * (n - 3.0)));
    bc.is_finite().then_some(bc)
}

/// The change point of `values` in run order, if significant: the index of the first value
/// after the split and the permutation p-value (999 permutations, fixed seed).
pub fn change_point(values: &[f64]) -> Option<(usize, f64)> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.len() < 6 {
        return None;
    }
    let stat = |x: &[f64]| -> (f64, usize) {
        let n = x.len();
        let total: f64 = x.iter().sum();
        let mut left = 0.0;
        let mut best = (0.0, 0);
        for k in 1..n {
            left += x[k - 1];
            let (a, b) = (left / k as f64, (total - left) / (n - k) as f64);
            let z = (a - b).abs() * ((k * (n - k)) as f64 / n as f64).sqrt();
            if z > best.0 {
                best = (z, k);
            }
        }
        best
    };
    let (observed, k) = stat(&v);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let before = v[..k].iter().sum::<f64>() / k as f64;
    let after = v[k..].iter().sum::<f64>() / (v.len() - k) as f64;
    if mean == 0.0 || (before - after).abs() < 0.05 * mean.abs() {
        return None;
    }
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0);
    let mut perm = v.clone();
    let mut at_least = 1;
    for _ in 0..999 {
        perm.shuffle(&mut rng);
        if stat(&perm).0 >= observed {
            at_least += 1;
        }
    }
    let p = at_least as f64 / 1000.0;
    (p < 0.01).then_some((k, p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::{Direction, MetricId, Unit};
    use crate::stats::summarize;
    use crate::{Cell, Row};

    fn cell(variant: &str, values: &[f64], best: bool) -> Cell {
        Cell {
            variant: variant.into(),
            summary: summarize(values, 0, 0.95).unwrap(),
            values: values.to_vec(),
            best,
            standing: None,
            vs_best: None,
            within_pct: None,
            cache_bound: false,
            group: None,
        }
    }

    #[test]
    fn same_inconclusive_and_worse_are_told_apart_and_counted() {
        let rule = StoppingRule::of(&crate::policy::Policy {
            precision: Some(5.0),
            ..Default::default()
        })
        .unwrap();
        let best = [100.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3];
        let same = [99.9, 100.4, 99.6, 100.0, 99.7, 100.2, 99.8, 100.1];
        let noisy = [60.0, 140.0, 95.0, 120.0, 70.0, 110.0, 85.0, 100.0];
        let slow = [50.0, 50.5, 49.5, 50.2, 49.8, 50.1, 49.9, 50.3];
        let table = WorkloadTable {
            workload: "w".into(),
            kind: "bonnie".into(),
            rows: vec![Row {
                phase: "p".into(),
                metric: MetricId::higher("throughput", Unit::MibPerSec),
                cells: vec![
                    cell("a", &best, true),
                    cell("b", &same, false),
                    cell("c", &noisy, false),
                    cell("d", &slow, false),
                ],
            }],
            summary: String::new(),
        };
        let a = table_answers(&rule, &table);
        assert_eq!(a.len(), 1);
        let v: Vec<Verdict> = a[0].versus_best.iter().map(|(_, v)| *v).collect();
        assert_eq!(v, [Verdict::Equivalent, Verdict::Inconclusive, Verdict::Worse]);
        assert_eq!(a[0].precise, Some(false), "the noisy cell is not precise");
        assert!(!a[0].decided());
        assert_eq!(
            MetricId::higher("x", Unit::MibPerSec).direction,
            Direction::HigherIsBetter
        );
    }

    #[test]
    fn an_adaptive_session_with_a_design_is_answered_at_its_last_look() {
        // Six repeats of a 3-to-12 design: the last look made is the one at 5 (3, 5, 8, 12); the
        // sixth repeat decides nothing.
        let a = [100.0, 100.5, 99.5, 100.2, 99.8, 100.1];
        let b = [99.9, 100.4, 99.6, 100.0, 99.7, 100.2];
        let c = [50.0, 50.5, 49.5, 50.2, 49.8, 50.1];
        let mut data = session_data_of("1MiB", None, 1e9, &[("a", &a), ("b", &b), ("c", &c)]);
        data.session.info.policy.budget_s = Some(300.0);
        data.session.info.run_options = Some(r#"{"strict":false,"sequential":{"first_n":3,"last_n":12}}"#.into());
        let model = crate::build(&data, 0, 0.95);
        let ans = answers(&model);
        assert_eq!(ans.len(), 1, "{ans:?}");
        assert_eq!(ans[0].best, "a");
        let v: Vec<Verdict> = ans[0].versus_best.iter().map(|(_, v)| *v).collect();
        assert_eq!(v, [Verdict::Equivalent, Verdict::Worse]);
        let look = ans[0].look.expect("a planned look");
        assert_eq!((look.look, look.looks, look.repeats), (2, 4, 5));
        let text = render_text(&model);
        assert!(
            text.contains("all pairs with Holm") && text.contains("look 2 of 4 at 5 repeats"),
            "{text}"
        );
        assert!(text.contains("1 of 1 headline rows decided"), "{text}");
        assert!(
            !text.contains("repeats each that would decide"),
            "decided: nothing to plan\n{text}"
        );
        // Undecided: two variants 4 % apart at about 6 % CoV. The line names the pair, its gap
        // and spread, and the repeats the difference test would need (the equivalence test
        // none: the gap is beyond the margin).
        let noisy = [0.93, 0.97, 1.0, 1.04, 1.08, 1.0];
        let hi: Vec<f64> = noisy.iter().map(|x| x * 104.0).collect();
        let lo: Vec<f64> = noisy.iter().rev().map(|x| x * 100.0).collect();
        let mut undecided = session_data_of("1MiB", None, 1e9, &[("a", &hi), ("b", &lo)]);
        undecided.session.info.policy.budget_s = Some(300.0);
        undecided.session.info.run_options = data.session.info.run_options.clone();
        let text = render_text(&crate::build(&undecided, 0, 0.95));
        assert!(text.contains("0 of 1 headline rows decided"), "{text}");
        let line = text
            .lines()
            .find(|l| l.contains("b against a"))
            .unwrap_or_else(|| panic!("no planning line:\n{text}"));
        assert!(line.contains("-3.8 % at 5.2 % CoV: about 28"), "{line}");
        assert!(
            line.contains("to show which is ahead (a gap beyond ±3 % is never the same)"),
            "{line}"
        );
        // The table's standings are the same answers.
        let row = &model.workloads[0].rows[0];
        let standings: Vec<Option<Standing>> = row.cells.iter().map(|c| c.standing).collect();
        assert_eq!(
            standings,
            [Some(Standing::Best), Some(Standing::Same), Some(Standing::Behind)]
        );
        // At the first look of a 3-to-30 design the level is tiny: written with its digits,
        // never "level 0.0000" or an interval "at 100.00 %".
        data.session.info.run_options = Some(r#"{"strict":false,"sequential":{"first_n":3,"last_n":30}}"#.into());
        let text = render_text(&crate::build(&data, 0, 0.95));
        assert!(text.contains("look 2 of 6 at 5 repeats: level "), "{text}");
        assert!(!text.contains("level 0.0000") && !text.contains("100.00 %"), "{text}");
        assert_eq!(level_text(2.14e-5), "2.1e-5");
        assert_eq!(level_text(0.0311), "0.0311");
        assert_eq!(confidence_text(1.0 - 2.14e-5), "> 99.99 %");
        assert_eq!(confidence_text(0.969), "96.90 %");
        // A pending design (a budgeted session stopped before its last look was fixed) answers
        // nothing planned: no look, and no fall-back to the unadjusted rule's verdicts.
        data.session.info.run_options =
            Some(r#"{"strict":false,"sequential":{"first_n":3,"last_n":30,"pending":true}}"#.into());
        let pending = answers(&crate::build(&data, 0, 0.95));
        assert!(pending[0].look.is_none() && !pending[0].decided(), "{pending:?}");
        // Without the stored design (an older adaptive session) the unadjusted answers stay.
        data.session.info.run_options = None;
        assert!(answers(&crate::build(&data, 0, 0.95))[0].look.is_none());
    }

    /// A row the stopping rule left open gets the tightest "within ±X %" its data support, at
    /// the look's equivalence level (the repeated interval), and every format says it: the
    /// matrix and its count line, the summary sentence, the Markdown and HTML tables, the JSON.
    #[test]
    fn an_undecided_row_is_answered_within_a_bound_in_every_format() {
        use crate::stats::two_sample::{within_pct, Sample};
        use crate::Format;
        // Two variants 4 % apart at about 6 % CoV, six repeats of a 3-to-12 design: answered at
        // the look at 5 repeats, neither shown behind nor the same within 3 %.
        let noisy = [0.93, 0.97, 1.0, 1.04, 1.08, 1.0];
        let hi: Vec<f64> = noisy.iter().map(|x| x * 104.0).collect();
        let lo: Vec<f64> = noisy.iter().rev().map(|x| x * 100.0).collect();
        let mut data = session_data_of("1MiB", None, 1e9, &[("a", &hi), ("b", &lo)]);
        data.session.info.policy.budget_s = Some(300.0);
        data.session.info.run_options = Some(r#"{"strict":false,"sequential":{"first_n":3,"last_n":12}}"#.into());
        let model = crate::build(&data, 0, 0.95);
        let row = &model.workloads[0].rows[0];
        let (a, b) = (&row.cells[0], &row.cells[1]);
        assert_eq!(
            (a.standing, b.standing),
            (Some(Standing::Inconclusive), Some(Standing::Inconclusive))
        );
        // b against the best mean a, on the look's first 5 values, at the look's equivalence
        // level (one pair: no division); a is the reference and has none.
        let plan = Design::new(3, 12).plan().unwrap();
        let level = plan.equivalence_level(1);
        let want = within_pct(Sample::of(&lo[..5]).unwrap(), Sample::of(&hi[..5]).unwrap(), level).unwrap();
        assert_eq!((a.within_pct, b.within_pct), (None, Some(want)));
        // Wider than the interval at the plain 90 %: the look and its level cost width.
        let plain = within_pct(Sample::of(&lo[..5]).unwrap(), Sample::of(&hi[..5]).unwrap(), 0.05).unwrap();
        assert!(want > plain && want > 3.0, "{want} {plain}");
        let x = format!("{want:.1}");
        let count = format!("1 of 1 rows answered: 0 ordered, 0 the same within 3 %, 1 within ±X % (median ±{x} %).");
        let table = crate::render(&model, Format::Table, &[]);
        assert!(table.contains(&count), "{table}");
        // The best mean of the unresolved row is the bounds' reference: `top`, not `?`.
        let matrix_line = table.lines().find(|l| l.contains("throughput")).unwrap();
        let words: Vec<&str> = matrix_line.split_whitespace().collect();
        assert_eq!(words[words.len() - 2..], ["top", format!("±{x}").as_str()], "{table}");
        let sentence = format!("b is within ±{x} % of a (neither shown behind nor the same within 3 %)");
        assert!(
            model.workloads[0].summary.contains(&sentence),
            "{}",
            model.workloads[0].summary
        );
        let md = crate::render(&model, Format::Md, &[]);
        assert!(
            md.contains(&format!("**Verdicts**: {count}")) && md.contains(&format!(" ~ ±{x} |")),
            "{md}"
        );
        let html = crate::render(&model, Format::Html, &[]);
        assert!(
            html.contains(&format!("<td class=\"v-within\">±{x}</td>"))
                && html.contains("<td class=\"v-top\">top</td>")
                && html.contains(&format!("<span class=\"mark\">~ ±{x}</span>"))
                && html.contains(&sentence),
            "{html}"
        );
        let json: serde_json::Value = serde_json::from_str(&crate::render(&model, Format::Json, &[])).unwrap();
        let cells = &json["workloads"][0]["rows"][0]["cells"];
        assert_eq!(cells[1]["within_pct"].as_f64(), Some(want));
        assert!(cells[0].get("within_pct").is_none(), "{}", cells[0]);
        // The session's own margin moves the bound's role, not its width: within ±30 % this pair
        // is the same (the same TOST at the same level), and then there is no bound to state.
        data.session.info.run_options =
            Some(r#"{"strict":false,"equivalence":30.0,"sequential":{"first_n":3,"last_n":12}}"#.into());
        let wide = crate::build(&data, 0, 0.95);
        let cells = &wide.workloads[0].rows[0].cells;
        assert!(want < 30.0, "{want}");
        assert_eq!(
            (cells[0].standing, cells[1].standing, cells[1].within_pct),
            (Some(Standing::Best), Some(Standing::Same), None)
        );
    }

    /// A constructed session: one bonnie-like workload (`file_size`), one headline throughput
    /// row with `values` per variant in run order, a baseline of `ceiling` MiB/s, `memory`.
    fn session(file_size: &str, memory: Option<u64>, ceiling: f64, values: &[(&str, &[f64])]) -> ReportModel {
        crate::build(&session_data_of(file_size, memory, ceiling, values), 0, 0.95)
    }

    /// The stored data of [`session`], before the report is built.
    fn session_data_of(
        file_size: &str,
        memory: Option<u64>,
        ceiling: f64,
        values: &[(&str, &[f64])],
    ) -> crate::store::SessionData {
        use crate::metric::Measurement;
        use crate::store::{
            BaselineStatus, BaselineValue, CaseAvailability, CaseRecord, NewSample, RawBaseline, SampleRecord,
            SampleStatus, SessionData,
        };
        let mut data: SessionData = crate::fixture::session_data();
        data.session.info.policy = crate::policy::Policy {
            memory,
            ..Default::default()
        };
        data.session.info.host.mem_bytes = 24 << 30;
        data.cases = values
            .iter()
            .map(|(v, _)| CaseRecord {
                case_id: format!("{v}-w"),
                variant: v.to_string(),
                fs_type: "ext4".into(),
                mkfs_args: vec![],
                mount_opts: vec![],
                workload: "w".into(),
                workload_kind: "bonnie".into(),
                workload_json: format!("{{\"kind\":\"bonnie\",\"file_size\":\"{file_size}\"}}"),
                availability: CaseAvailability::Available,
            })
            .collect();
        let mut samples = Vec::new();
        let n = values[0].1.len();
        for r in 0..n {
            for (v, vals) in values {
                samples.push(SampleRecord {
                    id: samples.len() as i64,
                    sample: NewSample {
                        case_id: format!("{v}-w"),
                        repeat: r as u32,
                        is_warmup: false,
                        started_at: String::new(),
                        wall_s: 1.0,
                        status: SampleStatus::Ok,
                        device: None,
                        effective_mount_opts: None,
                        notes: vec![],
                        histograms: vec![],
                        series: Vec::new(),
                        windows: Vec::new(),
                        path: None,
                        measurements: vec![Measurement {
                            phase: "seq_read_block".into(),
                            rank: None,
                            metric: MetricId::higher("throughput", Unit::MibPerSec),
                            value: vals[r],
                        }],
                    },
                });
            }
        }
        data.samples = samples;
        let value = |name: &str| BaselineValue {
            name: name.into(),
            value: ceiling,
            unit: Unit::MibPerSec,
            bytes: 1 << 29,
            seconds: 1.0,
        };
        data.baseline = Some(RawBaseline {
            status: BaselineStatus::Measured,
            device: None,
            method: String::new(),
            note: None,
            values: vec![value(RawBaseline::SEQ_WRITE), value(RawBaseline::SEQ_READ)],
        });
        data
    }

    fn has(m: &ReportModel, what: &str) -> bool {
        m.warnings.iter().any(|w| w.contains(what))
    }

    const STEADY: [f64; 8] = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.4];

    #[test]
    fn compare_of_different_set_ups_says_how_they_differ() {
        let a = session("8GiB", Some(1 << 30), 1000.0, &[("a", &STEADY)]);
        assert!(fingerprint_differences(&a, &a).is_empty());
        let mut b = a.clone();
        b.session.info.host.kernel = "6.8.0".into();
        b.cases[0].mount_opts = vec!["noatime".into()];
        // Only the run's private folder differs: the same target.
        let mut same = a.clone();
        same.session.info.target = "loop images in /var/tmp/fsbench/run-1-2".into();
        b.session.info.target = "loop images in /var/tmp/fsbench/run-3-4".into();
        assert!(fingerprint_differences(&same, &{
            let mut x = a.clone();
            x.session.info.target = "loop images in /var/tmp/fsbench/run-3-4".into();
            x
        })
        .is_empty());
        let a = same;
        let d = fingerprint_differences(&a, &b);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].starts_with("kernel ") && d[0].ends_with("→ 6.8.0"), "{d:?}");
        assert_eq!(d[1], "a mount  → noatime");
        let c = crate::compare::compare(&a, &b, &[], 5.0, 3.0, crate::compare::Gate::Headline);
        let text = crate::compare::render(&c, crate::compare::CompareFormat::Table);
        assert!(text.contains("different set-ups (kernel"), "{text}");
        // Two sessions whose repeats took different I/O paths: the loop's direct-I/O state.
        let with_path = |m: &ReportModel, dio: bool| {
            let mut m = m.clone();
            for r in &mut m.samples {
                r.sample.path = Some(crate::host::path::PathFacts {
                    loop_dio: Some(dio),
                    super_options: Some("rw".into()),
                    ..Default::default()
                });
            }
            m
        };
        let (on, off) = (with_path(&a, true), with_path(&a, false));
        assert!(fingerprint_differences(&on, &on).is_empty());
        assert_eq!(fingerprint_differences(&on, &off), ["a loop direct I/O on → off"]);
        // A session stored before the facts compares with nothing there.
        assert!(fingerprint_differences(&a, &off).is_empty());
        // The mkfs parameters read back, the memory limit in force and NoCOW are set-up
        // differences too.
        let with_read_back = |m: &ReportModel, block: &str, limit: u64, nocow: bool| {
            let mut m = m.clone();
            for r in &mut m.samples {
                r.sample.path = Some(crate::host::path::PathFacts {
                    mkfs_params: [("block_size".to_string(), block.to_string())].into(),
                    memory_limit: Some(limit),
                    nocow: Some(nocow),
                    ..Default::default()
                });
            }
            m
        };
        let one = with_read_back(&a, "1024", 64 << 20, true);
        assert!(fingerprint_differences(&one, &one).is_empty());
        assert_eq!(
            fingerprint_differences(&one, &with_read_back(&a, "4096", 32 << 20, false)),
            [
                "a mkfs parameters block_size=1024 → block_size=4096",
                "a memory limit in force 67108864 → 33554432",
                "a NoCOW set → not set"
            ]
        );
    }

    /// Two sessions whose loops or backing filesystems differ name it per variant ("by
    /// request" when buffered was asked), `--fs`-style for one variant only; sessions without
    /// facts, or with the same path, nothing.
    #[test]
    fn path_differences_name_the_loop_mode_and_the_backing_filesystem() {
        let a = session("8GiB", Some(1 << 30), 1000.0, &[("a", &STEADY), ("b", &STEADY)]);
        let (direct, buffered) = (with_facts(&a, true, "ext4"), with_facts(&a, false, "ext4"));
        assert_eq!(
            path_differences(&direct, &buffered, None),
            [
                "a loop direct I/O on → off (by request)",
                "b loop direct I/O on → off (by request)"
            ]
        );
        assert_eq!(
            path_differences(&direct, &buffered, Some("b")),
            ["b loop direct I/O on → off (by request)"]
        );
        assert_eq!(
            path_differences(&direct, &with_facts(&a, true, "tmpfs"), Some("a")),
            ["a backing filesystem ext4 → tmpfs"]
        );
        assert!(path_differences(&direct, &direct, None).is_empty());
        assert!(path_differences(&a, &buffered, None).is_empty());
    }

    /// `m` with every repeat's path facts: a loop device in the mode asked for (`direct`) on
    /// an image held by a `backing` filesystem.
    fn with_facts(m: &ReportModel, direct: bool, backing: &str) -> ReportModel {
        let mut m = m.clone();
        for r in &mut m.samples {
            r.sample.path = Some(crate::host::path::PathFacts {
                loop_dio: Some(direct),
                loop_dio_asked: Some(direct),
                backing_fs: Some(backing.into()),
                ..Default::default()
            });
        }
        m
    }

    #[test]
    fn a_clean_session_gets_no_methodology_warning() {
        let m = session(
            "8GiB",
            Some(1 << 30),
            1000.0,
            &[("a", &STEADY), ("b", &STEADY.map(|x| x * 2.0))],
        );
        let ours: Vec<&Warning> = m
            .warnings
            .iter()
            .filter(|w| {
                ["cache regime", "device-bound", "multimodal", "drifts"]
                    .iter()
                    .any(|k| w.contains(k))
            })
            .collect();
        assert!(ours.is_empty(), "{ours:#?}");
    }

    /// A loop buffered by request is said in the methodology, naming the variants; direct
    /// loops or no facts, nothing.
    #[test]
    fn a_loop_buffered_by_request_is_said() {
        let a = session("8GiB", Some(1 << 30), 1000.0, &[("a", &STEADY), ("b", &STEADY)]);
        assert_eq!(loop_by_request(&a), None);
        let (direct, buffered) = (with_facts(&a, true, "ext4"), with_facts(&a, false, "ext4"));
        assert_eq!(loop_by_request(&direct), None);
        let note = loop_by_request(&buffered).expect("a note");
        assert!(
            note.starts_with("a, b: loop devices in buffered mode by request"),
            "{note}"
        );
        assert!(checks(&buffered).iter().any(|w| w.contains("by request")));
        assert!(!checks(&direct).iter().any(|w| w.contains("by request")));
    }

    /// Repeats that ran with free page reporting on are counted in one methodology note
    /// naming the switch; held or absent, nothing.
    #[test]
    fn repeats_with_free_page_reporting_on_are_said() {
        let a = with_facts(
            &session("8GiB", Some(1 << 30), 1000.0, &[("a", &STEADY), ("b", &STEADY)]),
            true,
            "ext4",
        );
        assert_eq!(page_reporting(&a), None, "no fact: nothing");
        let with = |fact: &str, every: usize| {
            let mut m = a.clone();
            for (i, r) in m.samples.iter_mut().enumerate() {
                if i % every == 0 {
                    r.sample.path.as_mut().unwrap().page_reporting = Some(fact.into());
                }
            }
            m
        };
        assert_eq!(page_reporting(&with("held (order 11)", 1)), None);
        let half = with("on (blocks of 2.0 MiB and larger)", 2);
        let n = half.samples.len();
        let note = page_reporting(&half).expect("a note");
        assert!(
            note.starts_with(&format!(
                "free page reporting was on in {} of {n} repeats",
                n.div_ceil(2)
            )),
            "{note}"
        );
        assert!(note.contains("--hold-page-reporting"), "{note}");
        assert!(checks(&half).iter().any(|w| w.contains("free page reporting")));
    }

    #[test]
    fn a_small_data_set_is_the_cache_regime_and_says_which_memory() {
        let m = session("1GiB", Some(1 << 30), 1000.0, &[("a", &STEADY)]);
        assert!(
            has(&m, "cache regime") && has(&m, "the memory cgroup"),
            "{:#?}",
            m.warnings
        );
        let m = session("1GiB", None, 1000.0, &[("a", &STEADY)]);
        assert!(
            has(&m, "cache regime") && has(&m, "the machine's memory"),
            "{:#?}",
            m.warnings
        );
    }

    #[test]
    fn every_filesystem_at_the_device_ceiling_is_device_bound() {
        let m = session(
            "8GiB",
            Some(1 << 30),
            100.0,
            &[("a", &STEADY), ("b", &STEADY.map(|x| x * 0.95))],
        );
        assert!(has(&m, "device-bound") && has(&m, "cpu %"), "{:#?}", m.warnings);
    }

    #[test]
    fn two_modes_are_flagged_with_the_median() {
        let two = [50.0, 51.0, 49.0, 50.5, 100.0, 101.0, 99.0, 100.5, 50.2, 100.2];
        assert!(bimodality(&two).unwrap() > BIMODAL_BC);
        assert!(bimodality(&STEADY).unwrap() < BIMODAL_BC);
        let m = session("8GiB", Some(1 << 30), 1000.0, &[("a", &two)]);
        assert!(has(&m, "multimodal") && has(&m, "median"), "{:#?}", m.warnings);
    }

    #[test]
    fn a_series_that_shifts_in_run_order_drifts() {
        let shift = [
            100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 80.0, 81.0, 79.5, 80.4, 80.2, 79.8,
        ];
        let (k, p) = change_point(&shift).unwrap();
        assert_eq!(k, 6);
        assert!(p < 0.01);
        // The same values shuffled (no order effect) and a steady series are not flagged.
        let mixed = [
            100.0, 80.0, 101.0, 81.0, 99.0, 79.5, 100.5, 80.4, 99.5, 80.2, 100.2, 79.8,
        ];
        assert_eq!(change_point(&mixed), None);
        assert_eq!(change_point(&STEADY), None);
        let m = session("8GiB", Some(1 << 30), 1000.0, &[("a", &shift)]);
        assert!(has(&m, "drifts") && has(&m, "from 7 on"), "{:#?}", m.warnings);
    }

    #[test]
    fn a_phase_under_the_minimum_time_is_a_warning_naming_the_cases() {
        // The note the engine writes for a bonnie phase under MIN_TIME (its text is pinned by
        // engine::phase's short_phase_notes_keep_their_texts), on the second repeat of one
        // variant only: the report warns once and names that case.
        let note =
            "seq_read_block ran under 0.5 s (where bonnie++ prints +++++): too short to time reliably; raise its size";
        let mut data = session_data_of("8GiB", None, 1000.0, &[("a", &STEADY), ("b", &STEADY)]);
        let clean = crate::build(&data, 0, 0.95);
        assert!(!has(&clean, "too short to time"), "{:#?}", clean.warnings);
        data.samples[2].sample.notes.push(note.into());
        assert_eq!(data.samples[2].sample.case_id, "a-w");
        let m = crate::build(&data, 0, 0.95);
        let short: Vec<&str> = m
            .warnings
            .iter()
            .map(|w| w.text())
            .filter(|w| w.contains("too short to time"))
            .collect();
        assert_eq!(short.len(), 1, "{:#?}", m.warnings);
        assert!(
            short[0].contains(note) && short[0].contains("a / w") && !short[0].contains("b / w"),
            "{short:?}"
        );
        let text = crate::render(&m, crate::Format::Table, &[]);
        assert!(text.contains(&format!("! note: {note}")), "{text}");
    }
}
