//! What a session can answer: for sessions run with a stopping rule (`--precision`,
//! `--budget`, schema 5), one [`RowAnswer`] per headline row that says whether its intervals
//! reached the precision target and, for every other variant against the best, the verdict of
//! `compare`'s rule ([`crate::run::adaptive::pair_verdict`]): better / worse / "same within 3 %"
//! / "inconclusive" — never "tied", which mixed "shown the same" with "not shown different".
//!
//! Sessions without a stopping rule get no answers (their exports are unchanged; the golden
//! test pins them). Everything here reads the model only and never panics.

use super::{role, ReportModel, WorkloadTable};
use crate::run::adaptive::{pair_verdict, StoppingRule, DECIDED_MARGIN_PCT};
use crate::stats::two_sample::{Sample, Verdict};
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
}

impl RowAnswer {
    /// Decided: every other variant is better, worse or the same as the best (a row of one
    /// variant has nothing to decide and counts as decided).
    pub fn decided(&self) -> bool {
        self.versus_best.iter().all(|(_, v)| *v != Verdict::Inconclusive)
    }
}

/// The answers of `model`'s headline rows, if its session ran with a stopping rule.
pub fn answers(model: &ReportModel) -> Vec<RowAnswer> {
    let Some(rule) = StoppingRule::of(&model.session.info.policy) else {
        return vec![];
    };
    model.workloads.iter().flat_map(|t| table_answers(&rule, t)).collect()
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
                (
                    c.variant.clone(),
                    pair_verdict(Sample::from(&c.summary), best_sample, row.metric.direction),
                )
            })
            .collect();
        out.push(RowAnswer {
            workload: table.workload.clone(),
            phase: row.phase.clone(),
            metric: row.metric.name.clone(),
            precise: rule
                .precision_pct
                .map(|_| row.cells.iter().all(|c| rule.precise(&c.values))),
            best: best.variant.clone(),
            versus_best,
        });
    }
    out
}

/// The plain-text block of `answers` (empty when there are none): one line per row and a
/// closing count of decided rows.
pub fn render_text(model: &ReportModel) -> String {
    let answers = answers(model);
    if answers.is_empty() {
        return String::new();
    }
    let policy = &model.session.info.policy;
    let mut out = String::from("\nanswers (stopping rule:");
    if let Some(p) = policy.precision {
        out.push_str(&format!(" precision {p} %"));
    }
    if let Some(b) = policy.budget_s {
        out.push_str(&format!(" budget {b:.0} s"));
    }
    out.push_str(&format!(
        "; verdicts against the best: Welch p < 0.05 → better/worse, TOST ±{DECIDED_MARGIN_PCT} % → same, else inconclusive):\n"
    ));
    for a in &answers {
        let verdicts: Vec<String> = a
            .versus_best
            .iter()
            .map(|(v, verdict)| format!("{v} {}", verdict.label(DECIDED_MARGIN_PCT)))
            .collect();
        let precise = match a.precise {
            Some(true) => ", precision reached",
            Some(false) => ", precision NOT reached",
            None => "",
        };
        out.push_str(&format!(
            "  {} / {} {}: best {}{}{}\n",
            a.workload,
            a.phase,
            a.metric,
            a.best,
            if verdicts.is_empty() {
                String::new()
            } else {
                format!("; {}", verdicts.join(", "))
            },
            precise
        ));
    }
    let decided = answers.iter().filter(|a| a.decided()).count();
    out.push_str(&format!(
        "{decided} of {} headline rows decided (\"inconclusive\" is not \"the same\": more repeats or a larger budget may decide it).\n",
        answers.len()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::{Direction, MetricId, Unit};
    use crate::report::{Cell, Row};
    use crate::stats::summarize;

    fn cell(variant: &str, values: &[f64], best: bool) -> Cell {
        Cell {
            variant: variant.into(),
            summary: summarize(values, 0, 0.95).unwrap(),
            values: values.to_vec(),
            best,
            standing: None,
            vs_best: None,
            cache_bound: false,
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
}
