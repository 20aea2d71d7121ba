//! [`build`]: stored session → [`ReportModel`] (tables of summarised cells plus warnings).
//!
//! One pass groups the measured values by (workload, phase, metric, variant) in run order; the
//! row order is decided from the same pass. Warnings are collected in a fixed order so reports
//! are reproducible: session state, confidence level, the raw-device baseline and cache-bound
//! cells (see [`super::cachebound`]), unavailable variants, failed repeats, unknown cases,
//! missing intervals, non-finite values, noisy cells, first-run effects, notes.

use super::number;
use super::role;
use super::words::without_name;
use super::Warning;
use super::{Cell, ReportModel, Row, Section, Standing, StandingRule, VsBest, WorkloadTable, SCHEMA_VERSION};
use crate::metric::MetricId;
use crate::stats::two_sample::{self, ratio_ci, tie, Sample, Tie};
use crate::stats::{self, first_run_effect, high_cov, summarize};
use crate::store::{CaseAvailability, CaseRecord, SampleStatus, SessionData, SessionStatus};
use std::collections::HashMap;

/// Grouping key of measured values: (workload, phase, metric, variant).
type Key<'a> = (&'a str, &'a str, &'a MetricId, &'a str);

/// Pushes `item` unless an equal item is already there (keeps first-appearance order).
fn push_unique<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// Builds the report model of `data`: `trim` values dropped per end for trimmed means and
/// `confidence` (e.g. 0.95) for the Student-t intervals of the means. See the module docs of
/// [`crate::report`] for ordering, `best` and warning rules. Without the features' sections:
/// see [`build_with`].
pub fn build(data: &SessionData, trim: usize, confidence: f64) -> ReportModel {
    build_with(data, trim, confidence, &[])
}

/// [`build`] with the features' `sections`: the notes they write per repeat
/// ([`Section::notes_per_repeat`]) become one terminal line per kind, and what they export
/// ([`Section::export`]) is in the model's `extensions`, in the order given.
pub fn build_with(data: &SessionData, trim: usize, confidence: f64, sections: &[&dyn Section]) -> ReportModel {
    let mut variants: Vec<String> = Vec::new();
    let mut workloads: Vec<(String, String)> = Vec::new();
    for case in &data.cases {
        push_unique(&mut variants, case.variant.clone());
        if !workloads.iter().any(|(w, _)| *w == case.workload) {
            workloads.push((case.workload.clone(), case.workload_kind.clone()));
        }
    }
    let case_by_id: HashMap<&str, &CaseRecord> = data.cases.iter().map(|c| (c.case_id.as_str(), c)).collect();
    // Guest variants form their own comparison groups (see super::group): columns of one group
    // stay together, the host's first; nothing is ranked across groups.
    let guests = super::group::of_variants(data);
    let groups: HashMap<String, String> = guests.iter().map(|(v, (g, _))| (v.clone(), g.clone())).collect();
    let releases: HashMap<String, String> = guests.into_iter().map(|(v, (_, r))| (v, r)).collect();
    let mut group_order: Vec<Option<&String>> = vec![None];
    for v in &variants {
        push_unique(&mut group_order, groups.get(v));
    }
    variants.sort_by_key(|v| group_order.iter().position(|g| *g == groups.get(v)));

    // A many-rank session's per-rank measurements are rows of their own (`PHASE@rankN`).
    let row_names: Vec<Vec<std::borrow::Cow<str>>> = data
        .samples
        .iter()
        .map(|r| r.sample.measurements.iter().map(|m| m.row()).collect())
        .collect();
    let Measured {
        phases,
        metrics,
        values,
        non_finite,
    } = measured(data, &row_names, &case_by_id);

    let rule = standing_rule(&data.session.info);
    let mut tables = Vec::with_capacity(workloads.len());
    for (workload, kind) in &workloads {
        let mut rows = Vec::new();
        for phase in phases.get(workload.as_str()).map(Vec::as_slice).unwrap_or_default() {
            let mut phase_metrics = metrics.get(&(workload.as_str(), *phase)).cloned().unwrap_or_default();
            // Stable: headline metrics keep their sample order.
            phase_metrics.sort_by_key(|m| role::rank(m));
            for metric in phase_metrics {
                let cells = variants
                    .iter()
                    .filter_map(|variant| {
                        let key = (workload.as_str(), *phase, metric, variant.as_str());
                        let vals = values.get(&key)?;
                        let summary = summarize(vals, trim, confidence)?;
                        Some(Cell {
                            variant: variant.clone(),
                            summary,
                            values: vals.clone(),
                            best: false,
                            standing: None,
                            vs_best: None,
                            within_pct: None,
                            cache_bound: false,
                            group: groups.get(variant).cloned(),
                        })
                    })
                    .collect();
                let mut row = Row {
                    phase: phase.to_string(),
                    metric: metric.clone(),
                    cells,
                };
                mark_best_by_group(&mut row, rule);
                if !row.cells.is_empty() {
                    rows.push(row);
                }
            }
        }
        let mut table = WorkloadTable {
            workload: workload.clone(),
            kind: kind.clone(),
            rows,
            summary: String::new(),
        };
        table.summary = super::summary::workload_summary(&table, rule);
        tables.push(table);
    }

    super::cachebound::mark(&mut tables, data);
    let mut warnings = Warnings {
        data,
        case_by_id: &case_by_id,
        tables: &tables,
        confidence,
        per_repeat: sections.iter().flat_map(|s| s.notes_per_repeat()).copied().collect(),
    }
    .collect(&non_finite);
    guest_group_warnings(&mut warnings, &group_order, &variants, &groups, &releases);
    let mut model = ReportModel {
        schema_version: SCHEMA_VERSION,
        session: data.session.clone(),
        variants,
        cases: data.cases.clone(),
        workloads: tables,
        warnings,
        samples: data.samples.clone(),
        baseline: data.baseline.clone(),
        latency_windows: Vec::new(),
        session_noise: data.noise.clone(),
        extensions: serde_json::Map::new(),
    };
    model.latency_windows = super::windows::over_time(&model);
    for s in sections {
        if let Some((key, value)) = s.export(&model) {
            model.extensions.insert(key, value);
        }
    }
    let checks = super::methodology::checks(&model);
    model.warnings.extend(checks);
    model
}

/// How a session's rows are judged: by its stored sequential design (an adaptive session), the
/// equivalence rule (sessions since schema 5), or Welch's test (older ones); with the margin it
/// stored.
fn standing_rule(info: &crate::store::NewSession) -> StandingRule {
    let margin = super::methodology::stored_margin(info.run_options.as_deref());
    match super::methodology::stored_design(info.run_options.as_deref()) {
        Some(design) if info.policy.is_adaptive() => StandingRule::Planned(design, margin),
        _ if info.policy.methodology => StandingRule::Equivalence(margin),
        _ => StandingRule::Welch,
    }
}

/// Puts one warning per guest comparison group (`group_order` after the host's `None`) at the
/// front of `warnings`, in group order: its variants are ranked only among themselves.
fn guest_group_warnings(
    warnings: &mut Vec<Warning>,
    group_order: &[Option<&String>],
    variants: &[String],
    groups: &HashMap<String, String>,
    releases: &HashMap<String, String>,
) {
    for (i, g) in group_order.iter().flatten().enumerate() {
        let members: Vec<String> = variants
            .iter()
            .filter(|v| groups.get(*v) == Some(*g))
            .map(|v| match releases.get(v) {
                Some(r) => format!("{v} (Linux {r})"),
                None => v.clone(),
            })
            .collect();
        let members: Vec<&str> = members.iter().map(String::as_str).collect();
        warnings.insert(
            i,
            format!(
                "{} ran in a QEMU guest ({g}): ranked only among themselves, never against the host's variants",
                super::words::list(&members)
            )
            .into(),
        );
    }
}

/// The measured values of a session: rows per workload in discovery order, and values per
/// (workload, phase, metric, variant).
struct Measured<'a> {
    /// The phases of each workload, in the order they first appear.
    phases: HashMap<&'a str, Vec<&'a str>>,
    /// The metrics of each (workload, phase), in the order they first appear.
    metrics: HashMap<(&'a str, &'a str), Vec<&'a MetricId>>,
    /// The finite values of each cell, in run order.
    values: HashMap<Key<'a>, Vec<f64>>,
    /// The cells with non-finite values dropped, and how many.
    non_finite: Vec<(Key<'a>, usize)>,
}

/// The [`Measured`] values of the successful, measured (not warm-up) repeats of `data`.
fn measured<'a>(
    data: &'a SessionData,
    row_names: &'a [Vec<std::borrow::Cow<'a, str>>],
    case_by_id: &HashMap<&str, &'a CaseRecord>,
) -> Measured<'a> {
    let mut phases: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut metrics: HashMap<(&str, &str), Vec<&MetricId>> = HashMap::new();
    let mut values: HashMap<Key, Vec<f64>> = HashMap::new();
    let mut non_finite: Vec<(Key, usize)> = Vec::new();
    for (record, row_names) in data.samples.iter().zip(row_names) {
        let sample = &record.sample;
        if sample.is_warmup || sample.status != SampleStatus::Ok {
            continue;
        }
        let Some(case) = case_by_id.get(sample.case_id.as_str()) else {
            continue;
        };
        let workload = case.workload.as_str();
        for (m, row) in sample.measurements.iter().zip(row_names) {
            let row: &str = row;
            push_unique(phases.entry(workload).or_default(), row);
            push_unique(metrics.entry((workload, row)).or_default(), &m.metric);
            let key = (workload, row, &m.metric, case.variant.as_str());
            let cell = values.entry(key).or_default();
            if m.value.is_finite() {
                cell.push(m.value);
            } else if let Some(entry) = non_finite.iter_mut().find(|(k, _)| *k == key) {
                entry.1 += 1;
            } else {
                non_finite.push((key, 1));
            }
        }
    }
    Measured {
        phases,
        metrics,
        values,
        non_finite,
    }
}

/// Marks the best mean of a row by its direction (exact ties are all marked) and gives every
/// cell its [`Standing`] against the first best cell by `rule`, and every inconclusive cell its
/// bound against that cell ([`Cell::within_pct`](super::Cell::within_pct)). Nothing is marked
/// on rows that are not ranked ([`role::is_ranked`]: CPU, details) or when fewer than two
/// variants have values.
fn mark_best(row: &mut Row, rule: StandingRule) {
    if !role::is_ranked(&row.metric) || row.cells.len() < 2 {
        return;
    }
    let direction = row.metric.direction;
    let best = row
        .cells
        .iter()
        .map(|c| c.summary.mean)
        .reduce(|a, b| if direction.better(b, a) { b } else { a });
    let Some(best) = best else { return };
    let Some(best_index) = row.cells.iter().position(|c| c.summary.mean == best) else {
        return;
    };
    let best_sample = Sample::from(&row.cells[best_index].summary);
    let best_variant = row.cells[best_index].variant.clone();
    let margin = rule.margin_pct();
    let planned = match rule {
        StandingRule::Planned(design, _) => Some(planned_standings(row, design, margin, best_index)),
        _ => None,
    };
    for (i, cell) in row.cells.iter_mut().enumerate() {
        cell.best = cell.summary.mean == best;
        if let Some((_, bounds)) = &planned {
            cell.within_pct = bounds[i];
        }
        if cell.best {
            cell.standing = Some(planned.as_ref().map_or(Standing::Best, |(p, _)| p[i]));
            continue;
        }
        let this = Sample::from(&cell.summary);
        let (decision, test) = tie(this, best_sample);
        cell.standing = Some(match (decision, rule) {
            (_, StandingRule::Planned(..)) => planned.as_ref().map_or(Standing::Untested, |(p, _)| p[i]),
            (Tie::Untested, _) => Standing::Untested,
            (Tie::Tied, StandingRule::Welch) => Standing::Tied,
            (Tie::Separated, StandingRule::Welch) => Standing::Behind,
            // Shown the same within the margin first: a real 0.2 % gap is still "the same
            // within 3 %"; then significantly behind; else inconclusive.
            (_, StandingRule::Equivalence(_))
                if two_sample::tost_ratio(this, best_sample, margin).is_some_and(|t| t.equivalent()) =>
            {
                Standing::Same
            }
            (_, StandingRule::Equivalence(_)) => {
                match crate::stats::verdict::pair_verdict(this, best_sample, direction, margin) {
                    two_sample::Verdict::Worse => Standing::Behind,
                    _ => Standing::Inconclusive,
                }
            }
        });
        // The bound of an inconclusive cell at the level its own equivalence test used.
        if matches!(rule, StandingRule::Equivalence(_)) && cell.standing == Some(Standing::Inconclusive) {
            cell.within_pct = two_sample::within_pct(this, best_sample, two_sample::ALPHA);
        }
        cell.vs_best = Some(VsBest {
            best: best_variant.clone(),
            welch: test,
            ratio: ratio_ci(this, best_sample, 1.0 - two_sample::ALPHA),
        });
    }
}

/// The standings of a row of an adaptive session with a sequential design, margin `margin`
/// percent: the answers at the last planned look its cells reached (all inconclusive, without
/// bounds, before the first look), and each inconclusive cell's bound against cell `reference`
/// at that look ([`crate::stats::verdict::look_bounds`]).
fn planned_standings(
    row: &Row,
    design: crate::stats::verdict::Design,
    margin: f64,
    reference: usize,
) -> (Vec<Standing>, Vec<Option<f64>>) {
    use crate::stats::best::Answer;
    let undecided = (
        vec![Standing::Inconclusive; row.cells.len()],
        vec![None; row.cells.len()],
    );
    let Some(plan) = design.plan() else { return undecided };
    let cells: Vec<&[f64]> = row.cells.iter().map(|c| c.values.as_slice()).collect();
    // The stopping rule's own look for these values (successful measured repeats only).
    let Some(look) = plan.row_look(&cells) else {
        return undecided;
    };
    let answers = crate::stats::verdict::look_answers(&cells, row.metric.direction, &plan, look, margin);
    let bounds = crate::stats::verdict::look_bounds(&cells, &answers, reference, &plan, look);
    let standings = answers
        .into_iter()
        .map(|a| match a {
            Answer::Best => Standing::Best,
            Answer::Same => Standing::Same,
            Answer::Behind => Standing::Behind,
            Answer::Inconclusive => Standing::Inconclusive,
        })
        .collect();
    (standings, bounds)
}

/// [`mark_best`] within each comparison group of the row's cells (one group: the same call).
fn mark_best_by_group(row: &mut Row, rule: StandingRule) {
    let mut order: Vec<Option<String>> = Vec::new();
    for c in &row.cells {
        push_unique(&mut order, c.group.clone());
    }
    if order.len() < 2 {
        return mark_best(row, rule);
    }
    let cells = std::mem::take(&mut row.cells);
    let mut marked: Vec<Option<super::Cell>> = vec![None; cells.len()];
    for g in &order {
        let (idx, part): (Vec<usize>, Vec<super::Cell>) =
            cells.iter().cloned().enumerate().filter(|(_, c)| c.group == *g).unzip();
        let mut sub = Row {
            phase: row.phase.clone(),
            metric: row.metric.clone(),
            cells: part,
        };
        mark_best(&mut sub, rule);
        for (i, c) in idx.into_iter().zip(sub.cells) {
            marked[i] = Some(c);
        }
    }
    row.cells = marked.into_iter().flatten().collect();
}

/// `reason` without a leading `"<name>: "` that would repeat the variant or filesystem name.
struct Warnings<'a> {
    data: &'a SessionData,
    case_by_id: &'a HashMap<&'a str, &'a CaseRecord>,
    tables: &'a [WorkloadTable],
    confidence: f64,
    /// The features' notes written per repeat ([`Section::notes_per_repeat`]).
    per_repeat: Vec<(&'static str, &'static str)>,
}

impl Warnings<'_> {
    fn collect(&self, non_finite: &[(Key, usize)]) -> Vec<Warning> {
        let mut out: Vec<String> = Vec::new();
        let data = self.data;
        match data.session.status {
            SessionStatus::Complete => {}
            SessionStatus::Running => out.push("session still running or killed: results are partial".to_string()),
            SessionStatus::Interrupted => out.push("session was interrupted: results are partial".to_string()),
            SessionStatus::Failed => out.push("session failed: results are partial".to_string()),
        }
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            out.push(format!(
                "confidence level {} is not between 0 and 1: no confidence intervals",
                self.confidence
            ));
        }
        super::cachebound::warnings(data, self.tables, &mut out);
        for case in &data.cases {
            if let CaseAvailability::Unavailable(reason) = &case.availability {
                let reason = without_name(reason, &[&case.variant, &case.fs_type]);
                push_unique(&mut out, format!("{}: unavailable: {reason}", case.variant));
            }
        }
        for record in &data.samples {
            let s = &record.sample;
            let Some(case) = self.case_by_id.get(s.case_id.as_str()) else {
                out.push(format!(
                    "sample {} (repeat {}) belongs to unknown case {}: ignored",
                    record.id, s.repeat, s.case_id
                ));
                continue;
            };
            if let SampleStatus::Failed(error) = &s.status {
                let warm = if s.is_warmup { "warm-up " } else { "" };
                out.push(format!(
                    "{} / {}: {warm}repeat {} failed: {error}",
                    case.variant,
                    case.workload,
                    s.repeat + 1
                ));
            }
        }
        self.missing_intervals(&mut out);
        for ((workload, phase, metric, variant), count) in non_finite {
            out.push(format!(
                "{variant} / {workload} / {phase} {}: {count} non-finite value(s) ignored",
                metric.name
            ));
        }
        let mut out: Vec<Warning> = out.into_iter().map(Warning::from).collect();
        for table in self.tables {
            let headline = table
                .rows
                .iter()
                .filter(|r| !role::is_cpu(&r.metric) && !role::is_detail(&r.metric));
            for row in headline {
                let what = format!("{} / {} {}", table.workload, row.phase, row.metric.name);
                let noisy: Vec<String> = row
                    .cells
                    .iter()
                    .filter(|c| high_cov(&c.summary))
                    .map(|c| format!("{} {:.0} %", c.variant, c.summary.cov * 100.0))
                    .collect();
                if !noisy.is_empty() {
                    let kind = format!(
                        "CoV above {:.0} %: noisy, consider more repeats",
                        stats::HIGH_COV * 100.0
                    );
                    let subject = format!("{what} ({})", noisy.join(", "));
                    let text = format!(
                        "{what}: CoV above {:.0} % ({}): noisy, consider more repeats",
                        stats::HIGH_COV * 100.0,
                        noisy.join(", ")
                    );
                    out.push(Warning::of_kind(kind, subject, text));
                }
                let first: Vec<String> = row
                    .cells
                    .iter()
                    .filter(|c| first_run_effect(&c.values, &c.summary))
                    .map(|c| format!("{} {}", c.variant, number::value(c.values[0])))
                    .collect();
                if !first.is_empty() {
                    let level = stats::FIRST_RUN_LEVEL * 100.0;
                    let kind = format!(
                        "the first measured repeat lies outside the {level:.0} % prediction interval of the others: first-run effect, consider warm-up repeats"
                    );
                    let subject = format!("{what} ({})", first.join(", "));
                    let text = format!(
                        "{what}: the first measured repeat lies outside the {level:.0} % prediction interval of the others ({}): \
                         first-run effect, consider warm-up repeats",
                        first.join(", ")
                    );
                    out.push(Warning::of_kind(kind, subject, text));
                }
            }
        }
        self.path_mismatches(&mut out);
        self.notes(&mut out);
        out
    }

    /// One warning per kind of I/O-path mismatch ([`crate::host::path::PathFacts::mismatches`])
    /// with every repeat that had it.
    fn path_mismatches(&self, out: &mut Vec<Warning>) {
        for record in &self.data.samples {
            let s = &record.sample;
            let Some(facts) = &s.path else { continue };
            let who = match self.case_by_id.get(s.case_id.as_str()) {
                Some(case) => format!("{} / {} repeat {}", case.variant, case.workload, s.repeat + 1),
                None => s.case_id.clone(),
            };
            for kind in facts.mismatches() {
                out.push(Warning::of_kind(kind.clone(), who.clone(), format!("{who}: {kind}")));
            }
        }
    }

    /// One warning per (variant, workload) with one measured repeat that completed, or that is
    /// available but has none at all (and no failure already explains it). Counted in repeats,
    /// not in a row's values: a detail row only some repeats have (the sampled-latency rows
    /// `lat_sample_every`, `lat_samples`) does not make a case of four repeats one of one.
    fn missing_intervals(&self, out: &mut Vec<String>) {
        for table in self.tables {
            for case in self.data.cases.iter().filter(|c| c.workload == table.workload) {
                if case.availability != CaseAvailability::Available {
                    continue;
                }
                let measured = self
                    .data
                    .samples
                    .iter()
                    .filter(|r| {
                        r.sample.case_id == case.case_id
                            && !r.sample.is_warmup
                            && r.sample.status == SampleStatus::Ok
                            && !r.sample.measurements.is_empty()
                    })
                    .count();
                let failed =
                    self.data.samples.iter().any(|r| {
                        r.sample.case_id == case.case_id && matches!(r.sample.status, SampleStatus::Failed(_))
                    });
                let line = match measured {
                    1 => format!(
                        "{} / {}: only 1 measured repeat: no confidence interval",
                        case.variant, case.workload
                    ),
                    0 if !failed => {
                        format!("{} / {}: no measured repeats", case.variant, case.workload)
                    }
                    _ => continue,
                };
                push_unique(out, line);
            }
        }
    }

    /// Sample notes, deduplicated by text, each with the cases that reported it.
    fn notes(&self, out: &mut Vec<Warning>) {
        let mut notes: Vec<(&str, Vec<String>)> = Vec::new();
        for record in &self.data.samples {
            let s = &record.sample;
            let who = match self.case_by_id.get(s.case_id.as_str()) {
                Some(case) => format!("{} / {}", case.variant, case.workload),
                None => s.case_id.clone(),
            };
            for note in &s.notes {
                // A warm-up's short phase is what sizes set by time acts on, not a result: the
                // measured repeats carry their own note when they are short too.
                if s.is_warmup && short_phase_note(note).is_some() {
                    continue;
                }
                match notes.iter_mut().find(|(text, _)| *text == note.as_str()) {
                    Some((_, cases)) => push_unique(cases, who.clone()),
                    None => notes.push((note.as_str(), vec![who.clone()])),
                }
            }
        }
        for (text, cases) in notes {
            let full = format!("note: {text} ({})", cases.join(", "));
            out.push(
                match (
                    short_phase_note(text)
                        .or_else(|| path_note(text))
                        .or_else(|| stall_note(text)),
                    per_repeat_note(&self.per_repeat, text),
                    guest_boot_note(text),
                ) {
                    (Some((kind, phases)), _, _) => {
                        Warning::of_kind(kind, format!("{phases} ({})", cases.join(", ")), full)
                    }
                    (None, Some(kind), _) => Warning::of_kind(kind, cases.join(", "), full),
                    (None, None, Some((kind, boot))) => {
                        Warning::of_kind(kind, format!("{} ({boot})", cases.join(", ")), full)
                    }
                    (None, None, None) => Warning::from(full),
                },
            );
        }
    }
}

/// The kind of a note a feature's workload writes per repeat or per cut (`per_repeat`, from
/// [`Section::notes_per_repeat`]: the power-cut workloads' cuts), so the terminal prints one
/// line for all of them.
fn per_repeat_note(per_repeat: &[(&str, &str)], note: &str) -> Option<String> {
    per_repeat
        .iter()
        .find(|(prefix, _)| note.starts_with(prefix))
        .map(|(_, words)| format!("note: {words} (in full in the md, json and html reports)"))
}

/// The kind and the phase of a note saying a phase's I/O took another path than asked
/// ([`crate::engine::phase::PATH_NOTES`], "`<phase>`: its files are open with O_DIRECT, yet it
/// dirtied 1292 MiB …"): its figures differ per repeat, so without this each repeat's note was a
/// terminal line of its own.
fn path_note(note: &str) -> Option<(String, String)> {
    let (phase, rest) = note.split_once(": ")?;
    crate::engine::phase::PATH_NOTES
        .iter()
        .find(|(words, _)| rest.starts_with(words))
        .map(|(_, kind)| {
            (
                format!("note: {kind} (the figures in the md, json and html reports)"),
                phase.to_string(),
            )
        })
}

/// The kind and the phase of an open-loop stall note ([`crate::engine::stall::note`]: "`<phase>`:
/// stall: response-time p99 … is 97 × the service time's …"): its figures and seconds differ
/// per repeat, so the terminal prints one line per phase and the full notes stay in the md,
/// json and html reports.
fn stall_note(note: &str) -> Option<(String, String)> {
    if !crate::engine::stall::is_stall_note(note) {
        return None;
    }
    let (phase, _) = note.split_once(": ")?;
    Some((
        format!(
            "note: open-loop stall: a response-time percentile above {:.0} × the service time's at most {:.0} % busy \
             (a stall of the worker or the machine, not a queue; the figures and seconds in the md, json and html reports)",
            crate::engine::stall::STALL_FACTOR,
            crate::engine::stall::STALL_UTILISATION * 100.0
        ),
        phase.to_string(),
    ))
}

/// The kind and the boot time of a guest's note ("guest: Linux K under tcg (…), booted in 5.5 s"):
/// each boot has its own time, so without this every guest repeat's note was a terminal line of
/// its own (15 in a `modern-2026` run); the kind is the note with its seconds left out, one line
/// per kernel and accelerator.
fn guest_boot_note(note: &str) -> Option<(String, String)> {
    const BOOTED: &str = ", booted in ";
    if !note.starts_with(crate::metric::GUEST_NOTE_PREFIX) {
        return None;
    }
    let (head, rest) = note.split_once(BOOTED)?;
    let (secs, tail) = rest.split_once(" s").unwrap_or((rest, ""));
    Some((format!("note: {head}{BOOTED}… s{tail}"), format!("{secs} s")))
}

/// The kind and the phases of a note that names its phases, so the terminal groups them:
/// "`<phase>` ran under 0.5 s…" (one phase), "`<family>` phases under 0.5 s (`<phases>`): …"
/// (collected), and "latencies of `<phases>` sampled: …".
fn short_phase_note(note: &str) -> Option<(String, String)> {
    if let Some((phase, rest)) = note.split_once(" ran under ") {
        return Some((format!("note: ran under {rest}"), phase.to_string()));
    }
    // "latencies of seq_stat, rand_stat sampled: …" (engine::phase): the phases vary by case.
    if let Some((phases, rest)) = note
        .strip_prefix("latencies of ")
        .and_then(|n| n.split_once(" sampled: "))
    {
        return Some((format!("note: latencies of … sampled: {rest}"), phases.to_string()));
    }
    let at = note.find(" phases under ")?;
    let open = at + note[at..].find(" (")?;
    let close = open + note[open..].find("): ")?;
    let kind = format!("note: {}{}", &note[..open], &note[close + 1..]);
    Some((kind, note[open + 2..close].to_string()))
}

/// Helpers for the tests of sibling modules.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// A ranked row of `metric` from `(variant, values)` pairs, as [`build()`] makes it for a
    /// session before schema 5 (Welch's "tied").
    pub fn row_of(metric: MetricId, cells: &[(&str, &[f64])]) -> Row {
        row_by(metric, cells, StandingRule::Welch)
    }

    /// [`row_of`] with the standings of `rule`.
    pub fn row_by(metric: MetricId, cells: &[(&str, &[f64])], rule: StandingRule) -> Row {
        let mut row = Row {
            phase: "p".into(),
            metric,
            cells: cells
                .iter()
                .map(|(variant, values)| Cell {
                    group: None,
                    variant: variant.to_string(),
                    summary: summarize(values, 0, 0.95).unwrap(),
                    values: values.to_vec(),
                    best: false,
                    standing: None,
                    vs_best: None,
                    within_pct: None,
                    cache_bound: false,
                })
                .collect(),
        };
        mark_best(&mut row, rule);
        row
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{session_data, BTRFS};

    fn row<'a>(table: &'a WorkloadTable, phase: &str, metric: &str) -> &'a Row {
        table
            .rows
            .iter()
            .find(|r| r.phase == phase && r.metric.name == metric)
            .unwrap_or_else(|| panic!("no row {phase} {metric}"))
    }

    fn cell<'a>(row: &'a Row, variant: &str) -> &'a Cell {
        row.cells.iter().find(|c| c.variant == variant).unwrap()
    }

    /// The margin stored with a session (`--equivalence`) decides what is the same as the best,
    /// and the default holds for sessions stored without one.
    #[test]
    fn the_stored_margin_decides_the_standings() {
        let with_margin = |options: Option<&str>| {
            let mut data = session_data();
            data.session.info.policy.methodology = true;
            data.session.info.run_options = options.map(str::to_string);
            build(&data, 1, 0.95)
        };
        let standing = |m: &ReportModel| {
            let r = row(&m.workloads[0], "rand_create", "rate");
            (cell(r, "xfs").standing, cell(r, "ext4").standing)
        };
        let default = with_margin(None);
        let three = with_margin(Some(r#"{"strict":false,"equivalence":3.0}"#));
        let wide = with_margin(Some(r#"{"strict":false,"equivalence":30.0}"#));
        assert_eq!(
            (default.margin_pct(), three.margin_pct(), wide.margin_pct()),
            (3.0, 3.0, 30.0)
        );
        // 5000 against 5250 ops/s: not the same within 3 %, the same within 30 %.
        assert_eq!(standing(&default), standing(&three));
        assert_eq!(standing(&three).0, Some(Standing::Best));
        assert_ne!(standing(&three).1, Some(Standing::Same));
        assert_eq!(standing(&wide).1, Some(Standing::Same));
        assert!(
            wide.workloads[0].summary.contains("the same within 30 %"),
            "{}",
            wide.workloads[0].summary
        );
        // A margin outside (0, 100) stored by hand reads as the default.
        assert_eq!(with_margin(Some(r#"{"equivalence":0}"#)).margin_pct(), 3.0);
        assert_eq!(with_margin(Some(r#"{"equivalence":100}"#)).margin_pct(), 3.0);
    }

    #[test]
    fn a_guest_variant_is_its_own_group_never_ranked_against_the_host() {
        let mut data = session_data();
        let xfs: Vec<String> = data
            .cases
            .iter()
            .filter(|c| c.variant == "xfs")
            .map(|c| c.case_id.clone())
            .collect();
        for s in data.samples.iter_mut().filter(|s| xfs.contains(&s.sample.case_id)) {
            s.sample.notes.push(
                "guest: Linux 6.1.0-56-amd64 under tcg (emulated: compare only with each other), booted in 3.0 s"
                    .into(),
            );
        }
        let plain = build(&session_data(), 1, 0.95);
        let m = build(&data, 1, 0.95);
        // Host columns first, the guest's after them.
        assert_eq!(m.variants, ["ext4", BTRFS, "zfs", "xfs"]);
        let r = row(&m.workloads[0], "seq_write_block", "throughput");
        let x = cell(r, "xfs");
        assert_eq!(
            x.group.as_deref(),
            Some("guest, tcg (emulated: compare only with each other)")
        );
        // Alone in its group: not ranked, and no host cell is compared with it.
        assert!(!x.best && x.standing.is_none() && x.vs_best.is_none());
        for c in r.cells.iter().filter(|c| c.group.is_none()) {
            assert!(c.vs_best.as_ref().is_none_or(|v| v.best != "xfs"));
            assert_eq!(c.group, None);
        }
        // Without the guest, xfs was compared with the host's variants.
        let before = row(&plain.workloads[0], "seq_write_block", "throughput");
        assert!(cell(before, "xfs").standing.is_some());
        assert!(
            m.warnings[0].starts_with("xfs (Linux 6.1.0-56-amd64) ran in a QEMU guest (guest, tcg"),
            "{}",
            m.warnings[0]
        );
        assert!(!m.workloads[0].summary.contains("xfs"), "{}", m.workloads[0].summary);
    }

    /// The notes of a phase whose I/O took another path than asked differ in their figures per
    /// repeat: one terminal line per kind naming each phase and its cases, every note in full
    /// in the report's warnings.
    #[test]
    fn path_notes_are_one_terminal_line_per_kind() {
        let mut data = session_data();
        for (i, s) in data.samples.iter_mut().enumerate() {
            let words = crate::engine::phase::PATH_NOTES[i % 2].0;
            s.sample
                .notes
                .push(format!("rndrd: {words}{} MiB of its files", 20 + i));
        }
        let m = build(&data, 1, 0.95);
        let full = m
            .warnings
            .iter()
            .filter(|w| w.text().starts_with("note: rndrd: its "))
            .count();
        assert!(full > 2, "each note in full: {:?}", m.warnings);
        let lines: Vec<String> = crate::warning::grouped(&m.warnings)
            .into_iter()
            .filter(|l| l.contains("yet"))
            .collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines
                .iter()
                .all(|l| l.contains("(the figures in the md, json and html reports)") && l.contains("rndrd (")),
            "{lines:?}"
        );
        assert_eq!(path_note("rndrd: another note"), None);
    }

    /// Open-loop stall notes differ in their figures and seconds per repeat: one terminal line
    /// for all, naming the phase and its cases, and every note in full in the warnings.
    #[test]
    fn stall_notes_are_one_terminal_line() {
        let mut data = session_data();
        for (i, s) in data.samples.iter_mut().enumerate() {
            s.sample.notes.push(format!(
                "rndrd: {} p99 {} µs is {} × the service time's 214 µs at 4.0 % utilisation (…); late responses at {i}–{} s",
                crate::engine::stall::NOTE_WORDS,
                20_000 + i,
                90 + i,
                i + 1
            ));
        }
        let m = build(&data, 1, 0.95);
        let full = m
            .warnings
            .iter()
            .filter(|w| w.text().contains(": stall: response-time"))
            .count();
        assert_eq!(full, data.samples.len(), "each note in full: {:?}", m.warnings);
        let lines: Vec<String> = crate::warning::grouped(&m.warnings)
            .into_iter()
            .filter(|l| l.contains("stall"))
            .collect();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with(
                "note: open-loop stall: a response-time percentile above 4 × the service time's at most 20 % busy"
            ) && lines[0].contains("rndrd ("),
            "{lines:?}"
        );
        assert_eq!(stall_note("rndrd: asked for 1000 operations/s"), None);
    }

    /// Guest notes differ in their boot time only: one terminal line per kernel, each case
    /// named with its boot time, and every note in full in the report's warnings.
    #[test]
    fn guest_boot_notes_are_one_terminal_line_per_kernel() {
        let mut data = session_data();
        let variant_of: HashMap<String, String> = data
            .cases
            .iter()
            .map(|c| (c.case_id.clone(), c.variant.clone()))
            .collect();
        for (i, s) in data.samples.iter_mut().enumerate() {
            let k = if variant_of[&s.sample.case_id] == "xfs" {
                "6.12.117+deb12-amd64"
            } else {
                "6.1.0-56-amd64"
            };
            s.sample.notes.push(format!(
                "guest: Linux {k} under tcg (emulated: compare only with each other), booted in {}.{i} s",
                3 + i % 3
            ));
        }
        let m = build(&data, 1, 0.95);
        let notes: Vec<&Warning> = m
            .warnings
            .iter()
            .filter(|w| w.text().starts_with("note: guest: Linux"))
            .collect();
        assert!(notes.len() > 2, "several boot times: {notes:?}");
        let lines: Vec<String> = crate::warning::grouped(&m.warnings)
            .into_iter()
            .filter(|l| l.starts_with("note: guest: Linux"))
            .collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines
                .iter()
                .any(|l| l.contains("6.12.117+deb12-amd64") && l.contains("booted in … s")),
            "{lines:?}"
        );
        assert!(
            lines.iter().all(|l| l.contains(" s)")),
            "each case with its time: {lines:?}"
        );
        assert_eq!(
            guest_boot_note("guest: Linux 6.1 under tcg (x), booted in 4.5 s; the host refused O_DIRECT"),
            Some((
                "note: guest: Linux 6.1 under tcg (x), booted in … s; the host refused O_DIRECT".into(),
                "4.5 s".into()
            ))
        );
        assert_eq!(guest_boot_note("another note, booted in 3 s"), None);
        // The sampled-latency notes name their phases, which vary by case: one kind too.
        assert_eq!(
            short_phase_note("latencies of seq_stat, rand_stat sampled: one operation in N timed"),
            Some((
                "note: latencies of … sampled: one operation in N timed".into(),
                "seq_stat, rand_stat".into()
            ))
        );
    }

    #[test]
    fn guests_of_two_kernels_are_one_group_ranked_against_each_other() {
        let mut data = session_data();
        let kernel_of = |v: &str| match v {
            "xfs" => Some("6.1.0-56-amd64"),
            "ext4" => Some("6.12.117+deb12-amd64"),
            _ => None,
        };
        let variant_of: HashMap<String, String> = data
            .cases
            .iter()
            .map(|c| (c.case_id.clone(), c.variant.clone()))
            .collect();
        for s in data.samples.iter_mut() {
            if let Some(k) = kernel_of(&variant_of[&s.sample.case_id]) {
                s.sample.notes.push(format!(
                    "guest: Linux {k} under tcg (emulated: compare only with each other), booted in 3.0 s"
                ));
            }
        }
        let m = build(&data, 1, 0.95);
        let r = row(&m.workloads[0], "seq_write_block", "throughput");
        let (x, z) = (cell(r, "xfs"), cell(r, "ext4"));
        assert_eq!(x.group, z.group, "one accelerator, one group, whatever the kernel");
        // Ranked against each other: one of the two is the group's best, the other has a standing.
        assert!(x.best != z.best, "{x:?} {z:?}");
        assert!(x.standing.is_some() || z.standing.is_some());
        for c in r.cells.iter().filter(|c| c.group.is_none()) {
            assert!(c.vs_best.as_ref().is_none_or(|v| v.best != "xfs" && v.best != "ext4"));
        }
        let w = &m.warnings[0];
        assert!(
            w.contains("xfs (Linux 6.1.0-56-amd64)") && w.contains("ext4 (Linux 6.12.117+deb12-amd64)"),
            "{w}"
        );
    }

    #[test]
    fn columns_workloads_and_rows_are_in_first_appearance_order() {
        let m = build(&session_data(), 1, 0.95);
        assert_eq!(m.schema_version, SCHEMA_VERSION);
        assert_eq!(m.variants, ["ext4", "xfs", BTRFS, "zfs"]);
        let names: Vec<&str> = m.workloads.iter().map(|t| t.workload.as_str()).collect();
        assert_eq!(names, ["bonnie", "filecopy"]);
        let rows: Vec<(&str, &str)> = m.workloads[0]
            .rows
            .iter()
            .map(|r| (r.phase.as_str(), r.metric.name.as_str()))
            .collect();
        // The samples store rand_create as rate, cpu_process, cpu_system, lat_p99: headline
        // metrics move before the CPU rows.
        assert_eq!(
            rows,
            [
                ("seq_write_block", "throughput"),
                ("seq_write_block", "cpu_process"),
                ("seq_write_block", "cpu_system"),
                ("rand_create", "rate"),
                ("rand_create", "lat_p99"),
                ("rand_create", "cpu_process"),
                ("rand_create", "cpu_system"),
            ]
        );
        // Cells in column order; the unavailable variant has none.
        let variants: Vec<&str> = m.workloads[0].rows[0]
            .cells
            .iter()
            .map(|c| c.variant.as_str())
            .collect();
        assert_eq!(variants, ["ext4", "xfs", BTRFS]);
    }

    #[test]
    fn warmups_and_failed_repeats_are_excluded() {
        let m = build(&session_data(), 1, 0.95);
        let tput = row(&m.workloads[0], "seq_write_block", "throughput");
        let ext4 = cell(tput, "ext4");
        assert_eq!(ext4.summary.n, 3, "warm-up must not count");
        assert_eq!(ext4.values, [300.0, 310.0, 320.0]);
        assert!(!ext4.values.contains(&10.0));
        let xfs = cell(tput, "xfs");
        assert_eq!(xfs.summary.n, 2, "the failed repeat has no values");
        // Raw samples keep everything, warm-ups included.
        assert_eq!(m.samples.len(), session_data().samples.len());
    }

    #[test]
    fn best_follows_direction_and_skips_cpu_rows() {
        let m = build(&session_data(), 1, 0.95);
        let t = &m.workloads[0];
        let best = |phase, metric| -> Vec<String> {
            row(t, phase, metric)
                .cells
                .iter()
                .filter(|c| c.best)
                .map(|c| c.variant.clone())
                .collect()
        };
        assert_eq!(best("seq_write_block", "throughput"), ["ext4"]); // higher is better
        assert_eq!(best("rand_create", "lat_p99"), ["xfs"]); // lower is better
        assert!(best("seq_write_block", "cpu_process").is_empty());
        assert!(best("rand_create", "cpu_system").is_empty());
        // filecopy seconds: lower is better, xfs wins.
        assert_eq!(
            m.workloads[1].rows[0].cells.iter().filter(|c| c.best).count(),
            1,
            "{:?}",
            m.workloads[1].rows[0]
        );
        assert!(cell(&m.workloads[1].rows[0], "xfs").best);
    }

    #[test]
    fn tie_groups_on_constructed_samples() {
        use crate::metric::Unit;
        use tests_support::row_of;
        let standing = |row: &Row| -> Vec<(String, Option<Standing>)> {
            row.cells.iter().map(|c| (c.variant.clone(), c.standing)).collect()
        };
        // ext4 and xfs overlap (p ≈ 0.5), btrfs is 10 % behind with tight data, zfs has one value.
        let row = row_of(
            MetricId::higher("throughput", Unit::MibPerSec),
            &[
                ("ext4", &[100.0, 101.0, 99.0, 100.5, 99.5]),
                ("xfs", &[100.2, 99.8, 100.4, 99.4, 99.7]),
                ("btrfs", &[90.0, 91.0, 89.0, 90.5, 89.5]),
                ("zfs", &[95.0]),
            ],
        );
        assert_eq!(
            standing(&row),
            [
                ("ext4".to_string(), Some(Standing::Best)),
                ("xfs".to_string(), Some(Standing::Tied)),
                ("btrfs".to_string(), Some(Standing::Behind)),
                ("zfs".to_string(), Some(Standing::Untested)),
            ]
        );
        let xfs = row.cells[1].vs_best.as_ref().unwrap();
        assert_eq!(xfs.best, "ext4");
        assert!(xfs.welch.unwrap().p > 0.5, "{xfs:?}");
        let btrfs = row.cells[2].vs_best.as_ref().unwrap();
        assert!(btrfs.welch.unwrap().p < 1e-6);
        let r = btrfs.ratio.unwrap();
        assert!((r.ratio - 0.9).abs() < 0.005 && r.high < 1.0, "{r:?}");
        assert!(row.cells[0].vs_best.is_none() && row.cells[3].vs_best.as_ref().unwrap().welch.is_none());
        // Lower is better: the smallest time is best; a close second with big spread is tied.
        let row = row_of(
            MetricId::lower("time", Unit::Seconds),
            &[
                ("a", &[10.0, 10.2, 9.8]),
                ("b", &[9.0, 12.0, 8.0]),
                ("c", &[20.0, 20.1, 19.9]),
            ],
        );
        let s = standing(&row);
        assert_eq!(s[0].1, Some(Standing::Tied));
        assert_eq!(s[1].1, Some(Standing::Best));
        assert_eq!(s[2].1, Some(Standing::Behind));
        // CPU rows are never ranked.
        let row = row_of(
            MetricId::lower("cpu_system", Unit::Percent).with_role(crate::metric::Role::SystemCpu),
            &[("a", &[1.0, 2.0]), ("b", &[5.0, 6.0])],
        );
        assert!(row.cells.iter().all(|c| c.standing.is_none() && !c.best));
    }

    #[test]
    fn short_phase_notes_group_by_kind() {
        assert_eq!(
            short_phase_note(
                "seq_stat ran under 0.5 s (where bonnie++ prints +++++): too short to time reliably; raise its size"
            ),
            Some((
                "note: ran under 0.5 s (where bonnie++ prints +++++): too short to time reliably; raise its size"
                    .into(),
                "seq_stat".into()
            ))
        );
        assert_eq!(
            short_phase_note("mongo phases under 0.5 s (create, stat): too short to time reliably; raise files"),
            Some((
                "note: mongo phases under 0.5 s: too short to time reliably; raise files".into(),
                "create, stat".into()
            ))
        );
        assert_eq!(short_phase_note("drop_caches skipped: not root"), None);
    }

    /// A warm-up's short phase is what sizes set by time acts on: no warning of the session;
    /// the same note of a measured repeat is one.
    #[test]
    fn a_short_phase_warns_from_measured_repeats_not_from_warm_ups() {
        let note = "seq_stat ran under 0.5 s (where bonnie++ prints +++++): too short to time reliably; raise its size";
        let short = |m: &ReportModel| m.warnings.iter().any(|w| format!("{w:?}").contains("seq_stat"));
        let mut data = session_data();
        let mut warm = data
            .samples
            .iter()
            .find(|r| r.sample.is_warmup)
            .expect("a warm-up")
            .clone();
        warm.sample.is_warmup = true;
        warm.sample.repeat = 99;
        warm.sample.notes.push(note.into());
        data.samples.push(warm);
        let m = build(&data, 1, 0.95);
        assert!(!short(&m), "{:#?}", m.warnings);
        let measured = data
            .samples
            .iter_mut()
            .find(|r| !r.sample.is_warmup)
            .expect("a measured repeat");
        measured.sample.notes.push(note.into());
        let m = build(&data, 1, 0.95);
        assert!(short(&m), "{:#?}", m.warnings);
    }

    #[test]
    fn a_repeat_whose_loop_ran_buffered_is_flagged_and_one_in_direct_mode_is_not() {
        use crate::host::path::PathFacts;
        let mut data = session_data();
        let direct = PathFacts {
            loop_dio: Some(true),
            ..PathFacts::default()
        };
        for r in &mut data.samples {
            r.sample.path = Some(direct.clone());
        }
        let clean = build(&data, 1, 0.95);
        assert!(
            !clean.warnings.iter().any(|w| w.contains("buffered mode")),
            "{:#?}",
            clean.warnings
        );
        data.samples[0].sample.path = Some(PathFacts {
            loop_dio: Some(false),
            ..direct
        });
        let m = build(&data, 1, 0.95);
        let flagged: Vec<&str> = m
            .warnings
            .iter()
            .map(|w| w.text())
            .filter(|w| w.contains("buffered mode"))
            .collect();
        assert_eq!(flagged.len(), 1, "{:#?}", m.warnings);
        assert!(
            flagged[0].contains("repeat 1: loop device in buffered mode"),
            "{flagged:?}"
        );
    }

    #[test]
    fn a_repeat_whose_mkfs_block_size_read_back_differs_is_flagged_once_per_repeat() {
        use crate::host::path::PathFacts;
        let mut data = session_data();
        let facts = |got: &str| PathFacts {
            mkfs_params: [("block_size".to_string(), got.to_string())].into(),
            mkfs_asked: [("block_size".to_string(), "1024".to_string())].into(),
            ..PathFacts::default()
        };
        for r in &mut data.samples {
            r.sample.path = Some(facts("1024"));
        }
        let kind = "mkfs parameter block_size read back as 4096, 1024 was asked for";
        assert!(!build(&data, 1, 0.95).warnings.iter().any(|w| w.contains(kind)));
        data.samples[0].sample.path = Some(facts("4096"));
        data.samples[1].sample.path = Some(facts("4096"));
        let m = build(&data, 1, 0.95);
        let flagged: Vec<&str> = m
            .warnings
            .iter()
            .map(|w| w.text())
            .filter(|w| w.contains(kind))
            .collect();
        assert_eq!(flagged.len(), 2, "{:#?}", m.warnings);
        // The terminal prints the two as one line of their kind.
        let lines = crate::warning::grouped(&m.warnings);
        assert_eq!(lines.iter().filter(|l| l.contains(kind)).count(), 1, "{lines:#?}");
    }

    #[test]
    fn per_cut_notes_are_one_terminal_line_and_in_full_in_the_warnings() {
        let mut data = session_data();
        for (i, s) in data.samples.iter_mut().enumerate() {
            s.sample
                .notes
                .push(format!("cuts: cut 1: mount 0.0{i} s, 0 units damaged, fsck clean"));
            s.sample
                .notes
                .push(format!("VIOLATION (durable): cut 1: f{i}: 4 lost of 4 units damaged"));
        }
        // What the power-cut sections say of their notes (`fsbench-sections`).
        struct Cuts;
        impl Section for Cuts {
            fn notes_per_repeat(&self) -> &[(&'static str, &'static str)] {
                &[
                    ("cuts: ", "each cut's recovery mount, damaged units and fsck verdict"),
                    ("VIOLATION (", "VIOLATION, one note per damaged file"),
                ]
            }
        }
        let m = build_with(&data, 1, 0.95, &[&Cuts]);
        let full = m
            .warnings
            .iter()
            .filter(|w| w.starts_with("note: cuts: cut 1: mount"))
            .count();
        assert_eq!(full, data.samples.len(), "every note in full: {:#?}", m.warnings);
        let lines = crate::warning::grouped(&m.warnings);
        let cuts: Vec<&String> = lines
            .iter()
            .filter(|l| l.contains("cut") || l.contains("VIOLATION"))
            .collect();
        assert_eq!(cuts.len(), 2, "{lines:#?}");
        assert!(
            cuts[0].starts_with("note: each cut's recovery mount, damaged units and fsck verdict (in full in the md, json and html reports) ("),
            "{cuts:#?}"
        );
        assert!(
            cuts[1].starts_with("note: VIOLATION, one note per damaged file"),
            "{cuts:#?}"
        );
    }

    /// A detail row that only one repeat has (the sampled-latency rows appear where sampling
    /// began) is not a case of one measured repeat.
    #[test]
    fn a_row_only_one_repeat_has_does_not_make_a_case_of_one_repeat() {
        let mut data = session_data();
        let one = |m: &ReportModel| {
            m.warnings
                .iter()
                .filter(|w| w.text().contains("only 1 measured repeat"))
                .count()
        };
        let before = one(&build(&data, 1, 0.95));
        let measured = data
            .samples
            .iter_mut()
            .find(|r| !r.sample.is_warmup && r.sample.status == SampleStatus::Ok)
            .expect("a measured repeat");
        let mut detail = measured.sample.measurements[0].clone();
        detail.metric = crate::metric::MetricId::lower("lat_sample_every", crate::metric::Unit::Count)
            .with_role(crate::metric::Role::Detail);
        measured.sample.measurements.push(detail);
        assert_eq!(one(&build(&data, 1, 0.95)), before);
    }

    #[test]
    fn warnings_cover_every_case() {
        let m = build(&session_data(), 1, 0.95);
        let w = &m.warnings;
        let has = |needle: &str| w.iter().filter(|l| l.contains(needle)).count();
        // Two unavailable zfs cases, one warning, the reason's "zfs: " prefix not repeated.
        assert_eq!(has("zfs: unavailable: "), 1, "{w:#?}");
        assert!(
            w.iter().any(|w| w.text() == "zfs: unavailable: module not loaded"),
            "{w:#?}"
        );
        assert_eq!(
            has("xfs / bonnie: repeat 3 failed: mkfs.xfs: exit 1, \"busy\""),
            1,
            "{w:#?}"
        );
        assert_eq!(has("only 1 measured repeat: no confidence interval"), 2, "{w:#?}");
        assert_eq!(
            w.iter()
                .filter(|l| l.starts_with("bonnie / seq_write_block throughput: CoV") && l.contains(BTRFS))
                .count(),
            1,
            "{w:#?}"
        );
        assert_eq!(has("first-run effect"), 1, "{w:#?}");
        assert_eq!(
            w.iter()
                .filter(|l| l.starts_with("bonnie / seq_write_block throughput: the first") && l.contains(BTRFS))
                .count(),
            1,
            "{w:#?}"
        );
        // The same note on several samples appears once, naming the cases.
        assert_eq!(has("note: drop_caches skipped: not root"), 1, "{w:#?}");
        assert!(w
            .iter()
            .any(|l| l.starts_with("note: drop_caches") && l.contains("xfs / bonnie")));
        // CPU rows never produce CoV warnings even when noisy.
        assert_eq!(has("cpu_"), 0, "{w:#?}");
    }

    #[test]
    fn odd_data_becomes_warnings_not_panics() {
        let mut data = session_data();
        data.samples[1].sample.case_id = "nope".into();
        data.samples[2].sample.measurements[0].value = f64::NAN;
        data.session.status = SessionStatus::Interrupted;
        let m = build(&data, 1, 1.5);
        let w = &m.warnings;
        assert!(w[0].contains("interrupted"), "{w:#?}");
        assert!(w.iter().any(|l| l.contains("unknown case nope")), "{w:#?}");
        assert!(w.iter().any(|l| l.contains("1 non-finite value(s) ignored")), "{w:#?}");
        assert!(w.iter().any(|l| l.contains("confidence level 1.5")), "{w:#?}");
        for row in m.workloads.iter().flat_map(|t| &t.rows) {
            for c in &row.cells {
                assert_eq!(c.values.len(), c.summary.n);
                assert_eq!(c.summary.ci_low, None);
            }
        }
        // An empty session builds an empty model.
        let mut empty = session_data();
        empty.cases.clear();
        empty.samples.clear();
        let m = build(&empty, 1, 0.95);
        assert!(m.variants.is_empty() && m.workloads.is_empty());
    }
}
