//! The verdict matrix a report opens with: one line per ranked headline row, one column per
//! variant, each cell the variant's standing in that row (`best`, `same`, `behind`, `±4.2` for
//! an inconclusive cell whose data show it within ±4.2 % of the best, `top` for the best mean of
//! a row whose best is not resolved, `?` for an inconclusive cell without a bound, `tied`,
//! `few`), and a count of the rows answered.
//!
//! It is the report's answer at a glance, in place of a paragraph of sentences: the terminal
//! prints it first, the HTML page opens with it. The words are the table's standings
//! ([`super::Standing`]: for an adaptive session the stopping rule's answers at its last look),
//! so the matrix and the table can never disagree. A row is *answered* when every cell of it
//! is best, the same, behind, or inconclusive with a bound ([`super::Cell::within_pct`]; the
//! row's best mean is the reference of the bounds): *ordered* when it has no bound and someone
//! is behind, *the same* when every cell is best or the same, *within ±X %* when it has a bound
//! (X its largest). The count line gives the median X of those rows, the figure to quote. A
//! session with nothing ranked (one variant) has no matrix.

use super::escape::html as esc;
use super::{role, Cell, ReportModel, Row, Standing};
use std::fmt::Write as _;

/// One line of the matrix: `workload / phase metric`, and each variant's word (`""` where the
/// variant has no cell in the row).
struct Line {
    label: String,
    words: Vec<String>,
    answer: Answered,
}

/// What a ranked row answers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Answered {
    /// Every cell best, the same or behind, someone behind.
    Ordered,
    /// Every cell best or the same within the margin.
    Same,
    /// Every cell answered, some inconclusive one by a bound: the largest bound, percent.
    Within(f64),
    /// Some cell inconclusive without a bound, tied or untested.
    Open,
}

/// The word of a cell: its standing's, `±X` for an inconclusive cell with a bound, `top` for
/// the best mean of a row whose best is not resolved (the reference of the others' bounds).
fn word(cell: Option<&Cell>) -> String {
    let w = match cell.and_then(|c| c.standing) {
        Some(Standing::Best) => "best",
        Some(Standing::Same) => "same",
        Some(Standing::Behind) => "behind",
        Some(Standing::Inconclusive) => match cell.and_then(|c| c.within_pct) {
            Some(x) => return format!("±{}", super::summary::within_text(x)),
            None if cell.is_some_and(|c| c.best) => "top",
            None => "?",
        },
        Some(Standing::Tied) => "tied",
        Some(Standing::Untested) => "few",
        None => "",
    };
    w.to_string()
}

/// What `row` answers (see the module docs). A best-mean cell left inconclusive is the
/// reference of the others' bounds, so it needs none itself.
fn answered(row: &Row) -> Answered {
    let mut within: Option<f64> = None;
    let mut behind = false;
    for c in &row.cells {
        match (c.standing, c.within_pct) {
            (Some(Standing::Best | Standing::Same), _) | (None, _) => {}
            (Some(Standing::Behind), _) => behind = true,
            (Some(Standing::Inconclusive), Some(x)) => within = Some(within.map_or(x, |w: f64| w.max(x))),
            (Some(Standing::Inconclusive), None) if c.best => {}
            _ => return Answered::Open,
        }
    }
    match (within, behind) {
        (Some(x), _) => Answered::Within(x),
        (None, true) => Answered::Ordered,
        (None, false) => Answered::Same,
    }
}

fn ranked(row: &Row) -> bool {
    role::is_headline(&row.metric) && row.cells.iter().filter(|c| c.standing.is_some()).count() >= 2
}

fn lines(model: &ReportModel) -> Vec<Line> {
    let several = model.workloads.len() > 1;
    let mut out = Vec::new();
    for t in &model.workloads {
        for row in t.rows.iter().filter(|r| ranked(r)) {
            let words: Vec<String> = model
                .variants
                .iter()
                .map(|v| word(row.cells.iter().find(|c| &c.variant == v)))
                .collect();
            let prefix = if several {
                format!("{} / ", t.workload)
            } else {
                String::new()
            };
            out.push(Line {
                label: format!("{prefix}{} {}", row.phase, row.metric.name),
                words,
                answer: answered(row),
            });
        }
    }
    out
}

/// The median of `xs` (not empty): the middle value, or the mean of the two middle ones.
fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// How many rows are answered and how: "12 of 12 rows answered: 7 ordered, 2 the same within
/// 3 %, 3 within ±X % (median ±6.1 %)." (`margin` percent): the median over the bounded rows of
/// each row's largest bound.
fn count_line(lines: &[Line], margin: f64) -> String {
    let count = |f: &dyn Fn(Answered) -> bool| lines.iter().filter(|l| f(l.answer)).count();
    let ordered = count(&|a| a == Answered::Ordered);
    let same = count(&|a| a == Answered::Same);
    let mut within: Vec<f64> = lines
        .iter()
        .filter_map(|l| match l.answer {
            Answered::Within(x) => Some(x),
            _ => None,
        })
        .collect();
    let bounded = match within.len() {
        0 => "0 within ±X %".to_string(),
        n => format!(
            "{n} within ±X % (median ±{} %)",
            super::summary::within_text(median(&mut within))
        ),
    };
    format!(
        "{} of {} rows answered: {ordered} ordered, {same} the same within {margin} %, {bounded}.",
        ordered + same + within.len(),
        lines.len()
    )
}

/// The count line of `model`'s matrix ([`count_line`]); `None` when nothing is ranked.
pub fn answered_line(model: &ReportModel) -> Option<String> {
    let lines = lines(model);
    (!lines.is_empty()).then(|| count_line(&lines, model.margin_pct()))
}

/// What the words mean (`margin` percent).
fn legend(margin: f64) -> String {
    format!(
        "best: the best mean, shown ahead or the same as every other; top: the best mean, not \
         shown so (the ±X of the others are against it); same: within ±{margin} % of the best \
         (both one-sided tests); behind: shown worse than the best; ±X: neither shown behind nor \
         the same, but its data show it and the best mean within ±X % of each other (the interval \
         at the equivalence tests' level; doc/statistics.md); ?: inconclusive, not even that (not \
         \"the same\"); tied: not shown different (older sessions); few: too few repeats to \
         compare."
    )
}

/// The matrix as terminal text (empty when nothing is ranked), starting with a blank line.
pub fn text(model: &ReportModel) -> String {
    let lines = lines(model);
    if lines.is_empty() {
        return String::new();
    }
    let label_w = lines.iter().map(|l| l.label.chars().count()).max().unwrap_or(0);
    let col_w: Vec<usize> = model
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            lines
                .iter()
                .map(|l| l.words[i].chars().count())
                .fold(v.chars().count(), usize::max)
        })
        .collect();
    let mut out = String::from("\nverdicts\n");
    let mut head = format!("{:label_w$}", "");
    for (v, w) in model.variants.iter().zip(&col_w) {
        let _ = write!(head, "  {v:<w$}");
    }
    let _ = writeln!(out, "{}", head.trim_end());
    for l in &lines {
        let mut line = format!("{:label_w$}", l.label);
        for (word, w) in l.words.iter().zip(&col_w) {
            let _ = write!(line, "  {word:<w$}");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    // The count on a line of its own, the figure to quote; then what the words mean.
    let _ = writeln!(out, "{}", count_line(&lines, model.margin_pct()));
    let _ = writeln!(out, "{}", super::words::wrap(&legend(model.margin_pct()), 100));
    out
}

/// The matrix as an HTML section (empty when nothing is ranked).
pub fn html(model: &ReportModel) -> String {
    let lines = lines(model);
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h2 id=\"verdicts\">Verdicts</h2>\n<table class=\"verdicts\"><thead><tr><th></th>");
    for v in &model.variants {
        let _ = write!(out, "<th>{}</th>", esc(v));
    }
    out.push_str("</tr></thead><tbody>\n");
    for l in &lines {
        let _ = write!(out, "<tr><th>{}</th>", esc(&l.label));
        for w in &l.words {
            let class = match w.as_str() {
                "?" => "inconclusive",
                "" => "none",
                x if x.starts_with('±') => "within",
                other => other,
            };
            let _ = write!(out, "<td class=\"v-{class}\">{}</td>", esc(w));
        }
        out.push_str("</tr>\n");
    }
    let _ = writeln!(
        out,
        "</tbody></table>\n<p class=\"legend\">{}</p>",
        esc(&format!(
            "{} {}",
            count_line(&lines, model.margin_pct()),
            legend(model.margin_pct())
        ))
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::tests_support::row_by;
    use crate::metric::{MetricId, Unit};
    use crate::{StandingRule, WorkloadTable};

    fn model_of(rows: Vec<Row>) -> ReportModel {
        let mut m = crate::build(&crate::fixture::session_data(), 0, 0.95);
        m.variants = vec!["ext4".into(), "xfs".into(), "btrfs".into()];
        m.workloads = vec![WorkloadTable {
            workload: "bonnie".into(),
            kind: "bonnie".into(),
            rows,
            summary: String::new(),
        }];
        m
    }

    #[test]
    fn one_line_per_ranked_row_with_the_tables_standings_and_bounds() {
        let eq = StandingRule::Equivalence(3.0);
        let clear = row_by(
            MetricId::higher("throughput", Unit::MibPerSec),
            &[
                ("ext4", &[100.0, 101.0, 99.0, 100.5]),
                ("xfs", &[200.0, 201.0, 199.0, 200.5]),
                ("btrfs", &[50.0, 51.0, 49.0, 50.5]),
            ],
            eq,
        );
        // Neither shown behind nor the same: the 90 % interval of 6 / 6.1 (the equivalence test's
        // own level) is 0.762–1.270, so within ±27.0 %.
        let open = row_by(
            MetricId::higher("rate", Unit::OpsPerSec),
            &[("ext4", &[5.0, 6.0, 7.0]), ("xfs", &[5.5, 6.5, 6.3])],
            eq,
        );
        let same = row_by(
            MetricId::higher("iops", Unit::OpsPerSec),
            &[
                ("ext4", &[100.0, 100.1, 99.9, 100.0]),
                ("xfs", &[100.05, 100.15, 99.95, 100.05]),
            ],
            eq,
        );
        // So noisy that the bound would be 100 % or more: no statement, the row stays open.
        let wide = row_by(
            MetricId::higher("ops", Unit::OpsPerSec),
            &[("ext4", &[1.0, 20.0, 3.0]), ("xfs", &[5.0, 6.0, 7.0])],
            eq,
        );
        assert_eq!(wide.cells[1].standing, Some(Standing::Inconclusive));
        assert_eq!(wide.cells[1].within_pct, None);
        let m = model_of(vec![clear, open, same, wide]);
        let t = text(&m);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[1], "verdicts");
        let words = |i: usize| lines[i].split_whitespace().collect::<Vec<_>>();
        assert_eq!(words(3), ["p", "throughput", "behind", "best", "behind"]);
        assert_eq!(words(4), ["p", "rate", "±27.0", "best"]);
        assert_eq!(words(5), ["p", "iops", "same", "best"]);
        assert_eq!(words(6), ["p", "ops", "best", "?"]);
        let count = "3 of 4 rows answered: 1 ordered, 1 the same within 3 %, 1 within ±X % (median ±27.0 %).";
        assert_eq!(lines[7], count, "{t}");
        assert_eq!(answered_line(&m).unwrap(), count);
        let h = html(&m);
        assert!(
            h.contains("<td class=\"v-best\">best</td>")
                && h.contains("<td class=\"v-within\">±27.0</td>")
                && h.contains("<td class=\"v-inconclusive\">?</td>"),
            "{h}"
        );
        // Nothing ranked (one variant, or no rows): no matrix at all.
        assert_eq!(text(&model_of(vec![])), "");
        assert_eq!(html(&model_of(vec![])), "");
        assert_eq!(answered_line(&model_of(vec![])), None);
    }

    #[test]
    fn the_median_bound_is_the_middle_row_and_a_rows_bound_its_largest() {
        let mut xs = [9.0, 1.0, 4.0];
        assert_eq!(median(&mut xs), 4.0);
        let mut xs = [9.0, 1.0, 4.0, 2.0];
        assert_eq!(median(&mut xs), 3.0);
        // A row with two bounded cells is within the larger of the two.
        let mut row = row_by(
            MetricId::higher("rate", Unit::OpsPerSec),
            &[
                ("a", &[5.0, 6.0, 7.0]),
                ("b", &[5.5, 6.5, 6.3]),
                ("c", &[5.2, 6.2, 6.0]),
            ],
            StandingRule::Equivalence(3.0),
        );
        let bounds: Vec<Option<f64>> = row.cells.iter().map(|c| c.within_pct).collect();
        assert!(
            bounds[0].is_some() && bounds[1].is_none() && bounds[2].is_some(),
            "{bounds:?}"
        );
        let largest = bounds[0].unwrap().max(bounds[2].unwrap());
        assert_eq!(answered(&row), Answered::Within(largest));
        // The best mean left inconclusive is the reference: it needs no bound of its own.
        row.cells[1].standing = Some(Standing::Inconclusive);
        assert_eq!(answered(&row), Answered::Within(largest));
        row.cells[0].within_pct = None;
        assert_eq!(answered(&row), Answered::Open);
    }
}
