//! The verdict matrix a report opens with: one line per ranked headline row, one column per
//! variant, each cell the variant's standing in that row (`best`, `same`, `behind`, `?` for
//! inconclusive, `tied`, `few`), and a count of the rows decided.
//!
//! It is the report's answer at a glance, in place of a paragraph of sentences: the terminal
//! prints it first, the HTML page opens with it. The words are the table's standings
//! ([`super::Standing`]: for an adaptive session the stopping rule's answers at its last look),
//! so the matrix and the table can never disagree. A row is *decided* when no cell of it is
//! inconclusive, tied or untested. A session with nothing ranked (one variant) has no matrix.

use super::escape::html as esc;
use super::{role, ReportModel, Row, Standing};
use std::fmt::Write as _;

/// One line of the matrix: `workload / phase metric`, and each variant's word (`""` where the
/// variant has no cell in the row).
struct Line {
    label: String,
    words: Vec<&'static str>,
    decided: bool,
}

/// The word of a standing.
fn word(s: Option<Standing>) -> &'static str {
    match s {
        Some(Standing::Best) => "best",
        Some(Standing::Same) => "same",
        Some(Standing::Behind) => "behind",
        Some(Standing::Inconclusive) => "?",
        Some(Standing::Tied) => "tied",
        Some(Standing::Untested) => "few",
        None => "",
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
            let words: Vec<&'static str> = model
                .variants
                .iter()
                .map(|v| word(row.cells.iter().find(|c| &c.variant == v).and_then(|c| c.standing)))
                .collect();
            let decided = row.cells.iter().all(|c| {
                !matches!(
                    c.standing,
                    Some(Standing::Inconclusive | Standing::Tied | Standing::Untested)
                )
            });
            let prefix = if several {
                format!("{} / ", t.workload)
            } else {
                String::new()
            };
            out.push(Line {
                label: format!("{prefix}{} {}", row.phase, row.metric.name),
                words,
                decided,
            });
        }
    }
    out
}

/// What the words mean, and how many rows are decided (`margin` percent).
fn legend(lines: &[Line], margin: f64) -> String {
    let decided = lines.iter().filter(|l| l.decided).count();
    format!(
        "{decided} of {} rows decided. best: the best mean, shown ahead or the same as every other; \
         same: within ±{margin} % of the best (both one-sided tests); behind: shown worse than the best; \
         ?: inconclusive, neither shown behind nor shown the same (not \"the same\"); tied: not \
         shown different (older sessions); few: too few repeats to compare.",
        lines.len()
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
                .map(|l| l.words[i].len())
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
    let _ = writeln!(out, "{}", super::words::wrap(&legend(&lines, model.margin_pct()), 100));
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
            let class = match *w {
                "?" => "inconclusive",
                "" => "none",
                other => other,
            };
            let _ = write!(out, "<td class=\"v-{class}\">{}</td>", esc(w));
        }
        out.push_str("</tr>\n");
    }
    let _ = writeln!(
        out,
        "</tbody></table>\n<p class=\"legend\">{}</p>",
        esc(&legend(&lines, model.margin_pct()))
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
    fn one_line_per_ranked_row_with_the_tables_standings() {
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
        let open = row_by(
            MetricId::higher("rate", Unit::OpsPerSec),
            &[("ext4", &[5.0, 6.0, 7.0]), ("xfs", &[5.5, 6.5, 6.3])],
            eq,
        );
        let m = model_of(vec![clear, open]);
        let t = text(&m);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[1], "verdicts");
        assert_eq!(
            lines[3].split_whitespace().collect::<Vec<_>>(),
            ["p", "throughput", "behind", "best", "behind"]
        );
        assert_eq!(
            lines[4].split_whitespace().collect::<Vec<_>>(),
            ["p", "rate", "?", "best"]
        );
        assert!(t.contains("1 of 2 rows decided."), "{t}");
        let h = html(&m);
        assert!(
            h.contains("<td class=\"v-best\">best</td>") && h.contains("<td class=\"v-inconclusive\">?</td>"),
            "{h}"
        );
        // Nothing ranked (one variant, or no rows): no matrix at all.
        assert_eq!(text(&model_of(vec![])), "");
        assert_eq!(html(&model_of(vec![])), "");
    }
}
