//! Terminal table and Markdown: the studies' layout, filesystems (variants) as columns and
//! phases as rows, one table per workload.
//!
//! Both renderers format the one table view ([`super::view`]), as HTML does, so the formats
//! always show the same cells:
//! * row label `phase  metric (unit)` on a phase's first row, later rows of the phase indented
//!   (`  lat_p99 (us)`), CPU rows compact (`  cpu % (process)`);
//! * cell `mean ± CI half-width`, or why it is empty (see [`super::view`]);
//! * best cell: trailing `*` in the table (plus ANSI bold with `color`), **bold** in Markdown;
//! * cache-bound cell ([`super::cachebound`]): a trailing `‡` in both, in a marker column of its
//!   own in the table, and a legend line under every table that has one.
//!
//! Column widths are counted in `char`s (`±` is one column), which is right for the ASCII and
//! common Latin text of names and numbers; wide CJK names would misalign, not break.

use super::escape::markdown as md;
use super::view::{self, short_label};
use super::words::wrap;
use super::{cachebound, number, summary, ReportModel, WorkloadTable};
use std::fmt::Write as _;

const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

fn width(s: &str) -> usize {
    s.chars().count()
}

/// `workload` or `workload (kind)` when the kind says something the name does not.
fn title(table: &WorkloadTable) -> String {
    if table.kind.is_empty() || table.kind == table.workload {
        table.workload.clone()
    } else {
        format!("{} ({})", table.workload, table.kind)
    }
}

/// Smallest and largest n over all cells, if any.
fn n_range(model: &ReportModel) -> Option<(usize, usize)> {
    let ns = model
        .workloads
        .iter()
        .flat_map(|t| &t.rows)
        .flat_map(|r| &r.cells)
        .map(|c| c.summary.n);
    ns.fold(None, |acc, n| match acc {
        None => Some((n, n)),
        Some((lo, hi)) => Some((lo.min(n), hi.max(n))),
    })
}

/// Confidence level and per-end trim of the model's summaries (0.95 and 0 when there are none).
fn method(model: &ReportModel) -> (f64, usize) {
    let summaries = model.workloads.iter().flat_map(|t| &t.rows).flat_map(|r| &r.cells);
    let confidence = summaries.clone().next().map_or(0.95, |c| c.summary.confidence);
    let trim = summaries.map(|c| c.summary.trimmed).max().unwrap_or(0);
    (confidence, trim)
}

/// The `± …` explanation shared by both formats, as two sentences.
fn legend(model: &ReportModel) -> Vec<String> {
    let (confidence, _) = method(model);
    let n = match n_range(model) {
        Some((lo, hi)) if lo == hi => format!("n = {lo}"),
        Some((lo, hi)) => format!("n = {lo}–{hi}"),
        None => "n = 0".to_string(),
    };
    let level = number::value(confidence * 100.0);
    let level = if level.contains('.') {
        level.trim_end_matches('0').trim_end_matches('.')
    } else {
        level.as_str()
    };
    let mut out = vec![
        format!("± is the half-width of the {level} % confidence interval of the mean (Student t)."),
        format!("{n} measured repeats per cell; warm-ups and failed repeats are excluded."),
    ];
    out.extend(super::methodology::sizes_sentence(model));
    out
}

/// The mark after a cell of the terminal table: `*` on the row's best mean, then its
/// standing's mark ([`Standing::mark`](super::Standing::mark): `=`, `~`), so a best mean that
/// is inconclusive reads `*~`, never a bare `*`.
fn cell_mark(cell: &view::CellView) -> String {
    let star = if cell.best() { "*" } else { "" };
    format!("{star}{}", cell.mark().unwrap_or_default())
}

/// The terminal table. `color` adds ANSI bold to the best cells (the `*` stays either way).
pub fn render_table(model: &ReportModel, color: bool) -> String {
    let mut out = String::new();
    let s = &model.session;
    let label = s
        .info
        .label
        .as_deref()
        .map(|l| format!(", label {l:?}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "fsbench session {} ({}{label}) on {}, Linux {}, started {}, {}",
        s.id,
        s.info.suite_name,
        s.info.host.hostname,
        s.info.host.kernel,
        s.started_at,
        s.status.as_str()
    );
    // The answer first: the verdict matrix, in place of a paragraph per workload.
    let matrix = super::matrix::text(model);
    out.push_str(&matrix);
    for table in &model.workloads {
        let rows = view::results(model, table, false);
        let labels: Vec<String> = rows
            .iter()
            .map(|r| match r.first_of_phase {
                true => format!("{}  {}", r.row.phase, short_label(&r.row.metric)),
                false => format!("  {}", short_label(&r.row.metric)),
            })
            .collect();
        let label_w = labels.iter().map(|l| width(l)).max().unwrap_or(0);
        let col_w: Vec<usize> = model
            .variants
            .iter()
            .enumerate()
            .map(|(i, v)| rows.iter().map(|r| width(r.cells[i].text())).fold(width(v), usize::max))
            .collect();

        // A table with cache-bound cells gets one more marker column for their `‡`, and one
        // whose best mean is inconclusive a wider mark (`*~`: the `*` never hides the `~`).
        let flagged = rows.iter().any(|r| r.cells.iter().any(|c| c.cache_bound()));
        let mark_w = rows
            .iter()
            .flat_map(|r| &r.cells)
            .map(|c| cell_mark(c).chars().count())
            .max()
            .unwrap_or(1)
            .max(1);
        let _ = writeln!(out, "\n{}", title(table));
        let mut line = format!("{:label_w$}", "");
        for (v, w) in model.variants.iter().zip(&col_w) {
            let _ = write!(line, "  {v:>w$} {:mark_w$}{}", "", if flagged { " " } else { "" });
        }
        let _ = writeln!(out, "{}", line.trim_end());
        let total = width(&line);
        let _ = writeln!(out, "{}", "-".repeat(total.max(label_w)));
        for (row, label) in rows.iter().zip(&labels) {
            let mut line = format!("{label:label_w$}");
            for (cell, w) in row.cells.iter().zip(&col_w) {
                let text = cell.text();
                let padded = format!("{text:>w$}");
                let dagger = match (flagged, cell.cache_bound()) {
                    (true, true) => "‡",
                    (true, false) => " ",
                    (false, _) => "",
                };
                let mark = cell_mark(cell);
                if cell.best() && color {
                    let pad = &padded[..padded.len() - text.len()];
                    let _ = write!(line, "  {pad}{BOLD}{text} {mark:mark_w$}{RESET}{dagger}");
                } else {
                    let _ = write!(line, "  {padded} {mark:mark_w$}{dagger}");
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
        if let Some(legend) = cachebound::legend(model).filter(|_| flagged) {
            let _ = writeln!(out, "{legend}");
        }
        let paragraph = summary::paragraph(model, table);
        if matrix.is_empty() && !paragraph.is_empty() {
            let _ = writeln!(out, "\n{}", wrap(&paragraph, 100));
        }
    }
    if model.workloads.is_empty() {
        let _ = writeln!(out, "\nno results");
    }
    let (_, trim) = method(model);
    let _ = writeln!(out, "\n{}", standing_legend(model));
    let _ = writeln!(
        out,
        "Latency percentiles and whole-system CPU are in the md, json and html formats."
    );
    let legend: Vec<String> = legend(model).iter().map(|l| wrap(l, 100)).collect();
    let _ = writeln!(out, "{}", legend.join("\n"));
    let _ = writeln!(
        out,
        "Medians, sd, min/max and trimmed means ({trim} dropped from each end) are in the md and \
         json formats."
    );
    out.push_str(&super::methodology::render_text(model));
    for line in super::calibration::brief(model) {
        let _ = writeln!(out, "\n{line}");
    }
    write_warnings(&mut out, model);
    out
}

/// The terminal's warnings: one line per kind that occurs more than once (md, json and html
/// keep every warning in full).
fn write_warnings(out: &mut String, model: &ReportModel) {
    if model.warnings.is_empty() {
        return;
    }
    let lines = super::warning::grouped(&model.warnings);
    if lines.len() < model.warnings.len() {
        let _ = writeln!(
            out,
            "\nwarnings ({} in {} lines, one per kind; each in full in the md, json and html formats):",
            model.warnings.len(),
            lines.len()
        );
    } else {
        let _ = writeln!(out, "\nwarnings:");
    }
    for w in lines {
        let _ = writeln!(out, "  ! {w}");
    }
}

/// GitHub Markdown: session header, one table per workload (best in **bold**), a details table
/// with every summary field, the legend, the features' `sections` and the warnings.
pub fn render_markdown(model: &ReportModel, sections: &[&dyn super::Section]) -> String {
    let mut out = String::new();
    let s = &model.session;
    let h = &s.info.host;
    let _ = writeln!(out, "# fsbench report: session {}\n", s.id);
    let _ = writeln!(out, "| | |\n|:--|:--|");
    let mut info = vec![
        ("suite", s.info.suite_name.clone()),
        ("label", s.info.label.clone().unwrap_or_else(|| "–".into())),
        (
            "host",
            format!(
                "{} ({}, {} CPUs, {:.1} GiB)",
                h.hostname,
                h.cpu_model,
                h.ncpu,
                h.mem_bytes as f64 / (1u64 << 30) as f64
            ),
        ),
        ("kernel", h.kernel.clone()),
        ("started", s.started_at.clone()),
        ("finished", s.finished_at.clone().unwrap_or_else(|| "–".into())),
        ("status", s.status.as_str().to_string()),
        ("target", s.info.target.clone()),
        ("raw device", cachebound::describe(model.baseline.as_ref())),
        ("fsbench", s.info.fsbench_version.clone()),
    ];
    if !s.info.tool_versions.is_empty() {
        let tools: Vec<String> = s.info.tool_versions.iter().map(|(t, v)| format!("{t} {v}")).collect();
        info.push(("tools", tools.join(", ")));
    }
    for (key, value) in info {
        let _ = writeln!(out, "| {key} | {} |", md(&value));
    }
    if let Some(line) = super::matrix::answered_line(model) {
        let _ = writeln!(out, "\n**Verdicts**: {}", md(&line));
    }
    let (_, trim) = method(model);
    for table in &model.workloads {
        let _ = writeln!(out, "\n## {}\n", md(&title(table)));
        let mut head = String::from("| phase | metric |");
        let mut rule = String::from("|:--|:--|");
        for v in &model.variants {
            let _ = write!(head, " {} |", md(v));
            rule.push_str("--:|");
        }
        let _ = writeln!(out, "{head}\n{rule}");
        let rows = view::results(model, table, true);
        for row in &rows {
            let phase = if row.first_of_phase {
                md(&row.row.phase)
            } else {
                String::new()
            };
            let _ = write!(out, "| {phase} | {} |", md(&short_label(&row.row.metric)));
            for cell in &row.cells {
                let text = cell.text();
                let dagger = if cell.cache_bound() { " ‡" } else { "" };
                let within = cell
                    .cell()
                    .and_then(|c| c.within_pct)
                    .map(|x| format!(" ±{}", summary::within_text(x)))
                    .unwrap_or_default();
                if cell.best() {
                    // An inconclusive best mean keeps its `~` beside the bold.
                    let mark = cell.mark().map(|m| format!(" {m}{within}")).unwrap_or_default();
                    let _ = write!(out, " **{text}**{mark}{dagger} |");
                } else if let Some(mark) = cell.mark() {
                    let _ = write!(out, " {text} {mark}{within}{dagger} |");
                } else {
                    let _ = write!(out, " {text}{dagger} |");
                }
            }
            out.push('\n');
        }
        let flagged = rows.iter().any(|r| r.cells.iter().any(|c| c.cache_bound()));
        if let Some(legend) = cachebound::legend(model).filter(|_| flagged) {
            let _ = writeln!(out, "\n{}", md(&legend));
        }
        let paragraph = summary::paragraph(model, table);
        if !paragraph.is_empty() {
            let _ = writeln!(out, "\n{}", md(&paragraph));
        }
        details(&mut out, table, trim);
    }
    let _ = writeln!(
        out,
        "\n**Bold**: best mean of its row; {} {}",
        standing_legend_md(model),
        legend(model).join(" ")
    );
    for section in sections {
        out.push_str(&section.markdown(model));
    }
    if !model.warnings.is_empty() {
        let _ = writeln!(out, "\n## Warnings\n");
        for w in &model.warnings {
            let _ = writeln!(out, "- {}", md(w));
        }
    }
    out
}

/// A collapsible long table with every summary field of every cell of `table`.
fn details(out: &mut String, table: &WorkloadTable, trim: usize) {
    let _ = writeln!(
        out,
        "\n<details><summary>{}: all statistics</summary>\n\n\
         | phase | metric | variant | n | mean | ± CI | median | sd | CoV % | trimmed mean ({trim}/end) | min | max |\n\
         |:--|:--|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
        md(&table.workload)
    );
    for d in view::details(table) {
        let _ = writeln!(out, "| {} |", d.cells(md).join(" | "));
    }
    let _ = writeln!(out, "\n</details>");
}

/// The line explaining the table's marks: Welch's "tied" for sessions before schema 5, the
/// equivalence standings ([`super::Standing::Same`], [`super::Standing::Inconclusive`]) since.
fn standing_legend(model: &ReportModel) -> String {
    if model.session.info.policy.methodology {
        format!(
            "* best mean of its row; = the same as the best within {m} % (both one-sided tests pass); \
             ~ inconclusive: neither shown different nor shown the same (not \"the same\": more repeats may \
             decide; the verdicts above say how close its data show it, ±X); *~ the best mean, itself \
             inconclusive (not shown best); unmarked: significantly behind the best. CPU rows are not ranked.",
            m = model.margin_pct()
        )
    } else {
        "* best mean of its row; = tied with the best (Welch's t-test, p >= 0.05). CPU rows are not ranked.".into()
    }
}

/// [`standing_legend`] for the Markdown table (after "**Bold**: best mean of its row;").
fn standing_legend_md(model: &ReportModel) -> String {
    if model.session.info.policy.methodology {
        format!(
            "`=`: the same as the best within {m} % (both one-sided tests pass); `~`: inconclusive, neither \
             shown different nor shown the same (not \"the same\"), `~ ±X` where its data still show it \
             within ±X % of the best; **bold** `~`: the best mean, itself inconclusive; unmarked: significantly \
             behind. CPU rows are not ranked.",
            m = model.margin_pct()
        )
    } else {
        "`=`: tied with the best (Welch's t-test, p ≥ 0.05). CPU rows are not ranked.".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build;
    use crate::fixture::{session_data, BTRFS};

    /// A best mean that is itself inconclusive (a sequential look) keeps its `~` beside the
    /// `*` in the terminal table and beside the bold in Markdown (issue 42: the `*` hid it).
    #[test]
    fn an_inconclusive_best_mean_shows_its_mark_beside_the_star() {
        use crate::build::tests_support::row_by;
        use crate::metric::{MetricId, Unit};
        let planned = crate::StandingRule::Planned(crate::stats::verdict::Design::new(3, 12), 3.0);
        let row = row_by(
            MetricId::higher("rate", Unit::OpsPerSec),
            &[
                ("ext4", &[100.0, 100.5, 99.5]),
                ("xfs", &[104.0, 103.5, 104.5]),
                ("btrfs", &[10.0, 10.05, 9.95]),
            ],
            planned,
        );
        assert_eq!(row.cells[1].standing, Some(crate::Standing::Inconclusive));
        assert!(row.cells[1].best);
        let mut m = build(&session_data(), 0, 0.95);
        m.session.info.policy.methodology = true;
        m.variants = vec!["ext4".into(), "xfs".into(), "btrfs".into()];
        m.workloads = vec![WorkloadTable {
            workload: "bonnie".into(),
            kind: "bonnie".into(),
            rows: vec![row],
            summary: String::new(),
        }];
        let t = render_table(&m, false);
        let lines: Vec<&str> = t.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("p  rate"))
            .unwrap_or_else(|| panic!("{t}"));
        let line = lines[at];
        let marks: Vec<&str> = line
            .split_whitespace()
            .filter(|w| ["*", "*~", "~", "="].contains(w))
            .collect();
        assert_eq!(marks, ["~", "*~"], "{line}");
        assert!(t.contains("*~ the best mean, itself inconclusive"), "{t}");
        // The columns stay aligned: the header's names (above the rule) end where the cells'
        // texts do.
        let head = lines[at - 2];
        let end = |l: &str, w: &str| l.find(w).map(|i| l[..i + w.len()].chars().count());
        let xfs_text = row_text(&m, 1);
        assert_eq!(end(head, "xfs"), end(line, &xfs_text), "{head}\n{line}");
        let md = render_markdown(&m, &[]);
        assert!(md.contains(&format!("**{xfs_text}** ~")), "{md}");
    }

    /// The table text of cell `i` of the first row of `m`'s first workload.
    fn row_text(m: &ReportModel, i: usize) -> String {
        let rows = view::results(m, &m.workloads[0], false);
        rows[0].cells[i].text().to_string()
    }

    #[test]
    fn table_golden() {
        let model = build(&session_data(), 1, 0.95);
        assert_eq!(render_table(&model, false), GOLDEN_TABLE);
    }

    const GOLDEN_TABLE: &str = r#"fsbench session 7 (quick, label "nightly, \"fast\"") on bench-1, Linux 6.1.0-18-amd64, started 2026-03-01T10:00:00Z, complete

verdicts
                                     ext4    xfs   btrfs "lzo", ssd  zfs
bonnie / seq_write_block throughput  best    tied  tied
bonnie / rand_create rate            behind  best  behind
filecopy / copy time                 few     best
1 of 3 rows answered: 1 ordered, 0 the same within 3 %, 0 within ±X %.
best: the best mean, shown ahead or the same as every other; top: the best mean, not shown so (the
±X of the others are against it); same: within ±3 % of the best (both one-sided tests); behind:
shown worse than the best; ±X: neither shown behind nor the same, but its data show it and the best
mean within ±X % of each other (the interval at the equivalence tests' level; doc/statistics.md); ?:
inconclusive, not even that (not "the same"); tied: not shown different (older sessions); few: too
few repeats to compare.

bonnie
                                             ext4             xfs    btrfs "lzo", ssd            zfs
------------------------------------------------------------------------------------------------------
seq_write_block  throughput (MiB/s)  310.0 ± 24.8 *  295.0 ± 63.5 =         224 ± 159 =  unavailable
  cpu % (process)                     47.0 ± 28.0    38.50 ± 6.35        51.00 ± 2.48    unavailable
rand_create  rate (ops/s)              5000 ± 248      5250 ± 635 *        4050 ± 124    unavailable
  cpu % (process)                     47.0 ± 28.0    38.50 ± 6.35        51.00 ± 2.48    unavailable

filecopy
                    ext4      xfs    btrfs "lzo", ssd            zfs
----------------------------------------------------------------------
copy  time (s)     12.50    11.00 *               n/a    unavailable
  cpu % (process)  12.00    12.00                 n/a    unavailable

* best mean of its row; = tied with the best (Welch's t-test, p >= 0.05). CPU rows are not ranked.
Latency percentiles and whole-system CPU are in the md, json and html formats.
± is the half-width of the 95 % confidence interval of the mean (Student t).
n = 1–3 measured repeats per cell; warm-ups and failed repeats are excluded.
Medians, sd, min/max and trimmed means (1 dropped from each end) are in the md and json formats.

warnings:
  ! zfs: unavailable: module not loaded
  ! xfs / bonnie: repeat 3 failed: mkfs.xfs: exit 1, "busy"
  ! ext4 / filecopy: only 1 measured repeat: no confidence interval
  ! xfs / filecopy: only 1 measured repeat: no confidence interval
  ! btrfs "lzo", ssd / filecopy: no measured repeats
  ! bonnie / seq_write_block throughput: CoV above 10 % (btrfs "lzo", ssd 29 %): noisy, consider more repeats
  ! bonnie / seq_write_block throughput: the first measured repeat lies outside the 99 % prediction interval of the others (btrfs "lzo", ssd 150.0): first-run effect, consider warm-up repeats
  ! note: drop_caches skipped: not root (ext4 / bonnie, xfs / bonnie, ext4 / filecopy)
"#;

    #[test]
    fn table_marks_best_and_bold_only_with_color() {
        let model = build(&session_data(), 1, 0.95);
        let plain = render_table(&model, false);
        assert!(!plain.contains('\x1b'));
        let colored = render_table(&model, true);
        assert!(colored.contains(&format!("{BOLD}310.0 ± 24.8 *{RESET}")), "{colored}");
        // Same layout apart from the escape codes.
        assert_eq!(colored.replace(BOLD, "").replace(RESET, ""), plain);
    }

    #[test]
    fn markdown_has_header_bold_best_and_warnings() {
        let model = build(&session_data(), 1, 0.95);
        let md = render_markdown(&model, &[]);
        assert!(md.starts_with("# fsbench report: session 7\n"));
        assert!(md.contains("| suite | quick |"));
        assert!(md.contains("| label | nightly, \"fast\" |"));
        assert!(md.contains("| host | bench-1 (Test CPU, 4 CPUs, 8.0 GiB) |"));
        assert!(md.contains("| kernel | 6.1.0-18-amd64 |"));
        assert!(md.contains(&format!("| phase | metric | ext4 | xfs | {BTRFS} | zfs |")));
        assert!(
            md.contains("| seq_write_block | throughput (MiB/s) | **310.0 ± 24.8** | 295.0 ± 63.5 = | 224 ± 159 = |"),
            "{md}"
        );
        assert!(md.contains("|  | cpu % (process) |"));
        assert!(md.contains(" unavailable |"));
        assert!(md.contains("## Warnings\n\n- zfs: unavailable: module not loaded\n"));
        assert!(md.contains("trimmed mean (1/end)"));
        // Exactly one bold cell per ranked row with at least two values: 3 in bonnie, 1 in
        // filecopy.
        assert_eq!(md.matches(" **").count(), 4, "{md}");
        // Tied cells carry `=`, and each workload has its summary paragraph.
        assert_eq!(md.matches(" = |").count(), 2, "{md}");
        assert!(
            md.contains("\nAt seq_write_block, ext4, xfs and btrfs \"lzo\", ssd are all tied."),
            "{md}"
        );
    }
}
