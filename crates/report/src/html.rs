//! The self-contained HTML report: one file with inline CSS and inline SVG charts (from
//! [`super::charts`], drawn by plotters), no JavaScript and nothing fetched from the network.
//!
//! Layout: header (session, suite, host), the plain-language summary of every workload, then per
//! workload its charts (grouped bars of the headline metric of every phase with CI whiskers, CPU %
//! per phase for the process and the whole system, latency percentiles where measured, and the
//! individual repeats of every headline metric), its table with best, tied and cache-bound cells
//! marked (`td.best`, `td.tied`, `td.cache-bound` with a `‡`), and a collapsible table of every
//! statistic; then synthetic versus real-data throughput when the session has both kinds of
//! workload, the environment (host, kernel, CPU, memory, the raw-device baseline, devices, mkfs
//! arguments, requested and effective mount options, tool versions, command line, the suite text)
//! and every warning.
//!
//! Hooks for readers and tests: each workload is a `<section class="workload">` with
//! `data-workload`; each chart a `<figure class="chart chart-KIND">` (`bars`, `cpu`, `latency`,
//! `repeats`, `synthetic-real`) with `data-workload`, and each bar a `rect.bar` with
//! `data-variant`, `data-phase` and `data-metric` (see [`super::charts`]); a variant with no value
//! in the workload (unavailable, every repeat failed: [`view::absent`]) gets a grey
//! `rect.bar-missing` with `data-missing` and the reason in its tooltip and the caption, and the
//! summary paragraphs name it ([`summary::paragraph`]). Whiskers are clipped to each metric's
//! bounds ([`role::bounds`]) and the caption says so. With one workload the summary paragraph
//! appears once (the Summary section). Every string that
//! comes from the user or the machine (labels, names, hostnames, paths, options, suite text,
//! warnings) goes through [`esc`].

use super::caption::figure;
use super::charts::{self, Bar, Missing, Panel, RepeatSeries, Slot};
use super::escape::html as esc;
use super::role;
use super::summary;
use super::view::{self, name_unit, CellView};
use super::{Cell, ReportModel, Row, Section, Standing, WorkloadTable};
use crate::metric::Direction;
use std::fmt::Write as _;

/// Workload kinds that copy real files (a generated or user dataset) rather than synthetic
/// patterns; the synthetic-versus-real chart puts them on the right-hand side.
pub const REAL_DATA_KINDS: [&str; 2] = ["treecopy", "filecopy"];

/// Width of full-width charts in pixels.
const WIDE: u32 = 1100;

const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1160px;padding:0 20px 40px;color:#1d1d1f;line-height:1.45}
h1{font-size:1.6em;margin:0.8em 0 0.2em}h2{margin-top:1.6em;border-bottom:2px solid #ddd;padding-bottom:4px}h3{margin:1.2em 0 0.4em}
.sub{color:#555;margin:0 0 1em}
.summary{background:#f4f7fb;border-left:4px solid #0072b2;padding:8px 12px;margin:8px 0}
figure{margin:12px 0}figure svg{max-width:100%;height:auto;display:block}figcaption{font-size:0.9em;color:#444}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(520px,100%),1fr));gap:8px}
.legend span{display:inline-block;margin-right:16px;font-size:0.95em}.legend i{display:inline-block;width:14px;height:14px;margin-right:6px;vertical-align:-2px;border-radius:2px}
table{border-collapse:collapse;margin:8px 0;font-size:0.92em;display:block;max-width:100%;overflow-x:auto}td.l{overflow-wrap:anywhere}th,td{border:1px solid #ddd;padding:3px 8px;text-align:right;vertical-align:top}
th{background:#f2f2f2}td.l,th.l{text-align:left}
td.best{font-weight:bold;background:#e6f4ea}td.tied,td.same{background:#f1f8f3}td.inconclusive{color:#555}td.untested{color:#666}
td.cache-bound{background:#fdf0dc}.mark.cb{color:#a05a00}td.grey{background:#e6e6e6;color:#555}
.mark{font-size:0.85em;color:#2a7a3a;margin-left:4px}
pre{background:#f6f6f6;padding:10px;overflow-x:auto;font-size:0.88em;white-space:pre-wrap;overflow-wrap:anywhere}
ul.warnings li{color:#8a4b00}
table.verdicts td{text-align:center}td.v-best{font-weight:bold;background:#e6f4ea}td.v-same{background:#f1f8f3}td.v-behind{color:#8a2b2b}td.v-inconclusive{color:#666}td.v-within{background:#fbf8ec}td.v-top{font-weight:bold}
details{margin:6px 0}summary{cursor:pointer;color:#0a58a5}
.note{font-size:0.9em;color:#555}
"#;

/// Renders `model` as one self-contained HTML page (see the module docs), with the features'
/// `sections` before the environment, or right after the heading for a section that
/// [`Section::leads`].
pub fn render_html(model: &ReportModel, sections: &[&dyn Section]) -> String {
    let mut out = String::with_capacity(256 * 1024);
    let s = &model.session;
    let h = &s.info.host;
    let label = s
        .info
        .label
        .as_deref()
        .map(|l| format!(" · label “{}”", esc(l)))
        .unwrap_or_default();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>fsbench report: session {}</title><style>{CSS}</style></head><body>\n\
         <h1>fsbench report: session {}</h1>\n<p class=\"sub\">suite <b>{}</b>{label} · {} · Linux {} · \
         started {} · {}</p>\n",
        s.id,
        s.id,
        esc(&s.info.suite_name),
        esc(&h.hostname),
        esc(&h.kernel),
        esc(&s.started_at),
        esc(s.status.as_str()),
    );
    for section in sections.iter().filter(|s| s.leads(model)) {
        out.push_str(&section.html(model));
    }
    out.push_str(&super::matrix::html(model));
    legend(&mut out, model);
    if let Some(sizes) = super::methodology::sizes_sentence(model) {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&sizes));
    }
    let paragraphs: Vec<(&str, String)> = model
        .workloads
        .iter()
        .map(|t| (t.workload.as_str(), summary::paragraph(model, t)))
        .filter(|(_, p)| !p.is_empty())
        .collect();
    if !paragraphs.is_empty() {
        out.push_str("<h2 id=\"summary\">Summary</h2>\n");
        for (workload, paragraph) in &paragraphs {
            let _ = writeln!(
                out,
                "<p class=\"summary\"><b>{}</b>: {}</p>",
                esc(workload),
                esc(paragraph)
            );
        }
        let meaning = if model.session.info.policy.methodology {
            format!(
                "“The same within {} %” means both one-sided tests pass; “within ±X %” means neither different nor the same within that margin, but the interval of the ratio at the equivalence tests’ level lies inside ±X %; “inconclusive” means not even that, never “the same”",
                model.margin_pct()
            )
        } else {
            "“Tied” means Welch’s t-test cannot tell the two apart at the 5 % level".to_string()
        };
        let _ = writeln!(
            out,
            "<p class=\"note\">{meaning}; \
             “x % ± y % ahead” is the difference of the means as a share of the runner-up’s mean, with the half-width of its 95 % confidence interval (Welch).</p>"
        );
    }
    if !model.warnings.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} warning(s): see <a href=\"#warnings\">Warnings</a>.</p>",
            model.warnings.len()
        );
    }
    for (i, table) in model.workloads.iter().enumerate() {
        workload_section(&mut out, model, table, i);
    }
    if model.workloads.is_empty() {
        out.push_str("<p>No results.</p>\n");
    }
    synthetic_vs_real(&mut out, model);
    for section in sections.iter().filter(|s| !s.leads(model)) {
        out.push_str(&section.html(model));
    }
    environment(&mut out, model);
    warnings(&mut out, model);
    out.push_str("</body></html>\n");
    out
}

/// The colour legend of the variants (the same in every chart).
fn legend(out: &mut String, model: &ReportModel) {
    out.push_str("<div class=\"legend\">");
    for (i, v) in model.variants.iter().enumerate() {
        let _ = write!(
            out,
            "<span><i style=\"background:{}\"></i>{}</span>",
            charts::css_color(i),
            esc(v)
        );
    }
    out.push_str("</div>\n");
}

fn direction_text(d: Direction) -> &'static str {
    match d {
        Direction::HigherIsBetter => "higher is better",
        Direction::LowerIsBetter => "lower is better",
    }
}

/// A bar of `cell`.
fn bar(cell: &Cell) -> Bar {
    Bar {
        mean: cell.summary.mean,
        ci: cell.summary.ci_low.zip(cell.summary.ci_high),
    }
}

/// One panel per distinct metric among `rows` (each with its workload), phases as categories,
/// in first-appearance order. A variant without a cell gets a placeholder with the reason when
/// it has no value at all in that workload (unavailable, every repeat failed), else a gap.
fn panels(model: &ReportModel, rows: &[(&str, &Row)], title: impl Fn(&Row) -> String) -> Vec<Panel> {
    let mut out: Vec<(crate::metric::MetricId, Panel)> = Vec::new();
    let mut absent: Vec<(&str, Vec<(usize, view::Absence)>)> = Vec::new();
    for (workload, row) in rows {
        if !absent.iter().any(|(w, _)| w == workload) {
            absent.push((workload, view::absent(model, workload)));
        }
        let missing = &absent.iter().find(|(w, _)| w == workload).expect("just pushed").1;
        let group: Vec<Slot> = model
            .variants
            .iter()
            .enumerate()
            .map(|(i, v)| match row.cells.iter().find(|c| &c.variant == v) {
                Some(cell) => Slot::Bar(bar(cell)),
                None => match missing.iter().find(|(j, _)| *j == i) {
                    Some((_, a)) => Slot::Missing(Missing {
                        word: a.word().to_string(),
                        reason: a.reason().to_string(),
                    }),
                    None => Slot::Empty,
                },
            })
            .collect();
        match out.iter_mut().find(|(m, _)| *m == row.metric) {
            Some((_, p)) => {
                p.categories.push(row.phase.clone());
                p.bars.push(group);
            }
            None => out.push((
                row.metric.clone(),
                Panel {
                    title: title(row),
                    metric: row.metric.name.clone(),
                    unit: row.metric.unit.as_str().to_string(),
                    categories: vec![row.phase.clone()],
                    bars: vec![group],
                    bounds: role::bounds(&row.metric, model.session.info.host.ncpu),
                },
            )),
        }
    }
    out.into_iter().map(|(_, p)| p).collect()
}

/// A bound as captions print it: `0`, `100`, `400`, `2.5`.
fn bound_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        super::number::value(v)
    }
}

/// The caption's sentences about `panels`' placeholders and clipped whiskers (empty when none).
fn caption_notes(model: &ReportModel, panels: &[Panel]) -> String {
    let mut out = String::new();
    let mut missing: Vec<(usize, &Missing)> = Vec::new();
    for p in panels {
        for group in &p.bars {
            for (i, slot) in group.iter().enumerate() {
                if let Slot::Missing(m) = slot {
                    if !missing.iter().any(|(j, n)| *j == i && *n == m) {
                        missing.push((i, m));
                    }
                }
            }
        }
    }
    if !missing.is_empty() {
        let parts: Vec<String> = missing
            .iter()
            .map(|(i, m)| {
                let what = if m.word == "failed" {
                    "every repeat failed"
                } else {
                    m.word.as_str()
                };
                format!(
                    "<b>{}</b>: {what} ({})",
                    esc(model.variants.get(*i).map(String::as_str).unwrap_or("")),
                    esc(&m.reason)
                )
            })
            .collect();
        let _ = write!(out, " Grey slots mark variants with no value: {}.", parts.join("; "));
    }
    let mut cut: Vec<String> = Vec::new();
    for p in panels {
        let (low, high) = p.clipped();
        let unit = if p.unit == "%" {
            " %".to_string()
        } else {
            format!(" {}", p.unit)
        };
        for (hit, bound) in [(low, p.bounds.0), (high, p.bounds.1)] {
            let text = format!("{}{unit}", bound_text(bound));
            if hit && !cut.contains(&text) {
                cut.push(text);
            }
        }
    }
    if !cut.is_empty() {
        let _ = write!(
            out,
            " Whiskers clipped at {}: the interval's symmetric formula reaches past what the quantity can be; a clipped end has no cap, and the tables print the unclipped ± half-width.",
            super::words::list(&cut)
        );
    }
    out
}

fn workload_section(out: &mut String, model: &ReportModel, table: &WorkloadTable, index: usize) {
    let w = esc(&table.workload);
    let kind = if table.kind.is_empty() || table.kind == table.workload {
        String::new()
    } else {
        format!(" ({})", esc(&table.kind))
    };
    let _ = writeln!(
        out,
        "<section class=\"workload\" id=\"w{index}\" data-workload=\"{w}\">\n<h2>{w}{kind}</h2>"
    );
    // With one workload the Summary section above already shows this paragraph.
    let paragraph = summary::paragraph(model, table);
    if model.workloads.len() > 1 && !paragraph.is_empty() {
        let _ = writeln!(out, "<p class=\"summary\">{}</p>", esc(&paragraph));
    }
    legend(out, model);
    let wl = table.workload.as_str();
    let rows_where = |keep: fn(&crate::metric::MetricId) -> bool| -> Vec<(&str, &Row)> {
        table.rows.iter().filter(|r| keep(&r.metric)).map(|r| (wl, r)).collect()
    };
    let headline = rows_where(role::is_headline);
    bar_figure(
        out,
        model,
        &headline,
        ("chart-bars", &format!(" id=\"bars-{index}\" data-workload=\"{w}\"")),
        |r| {
            format!(
                "{} ({}) per phase — {}",
                r.metric.name,
                r.metric.unit,
                direction_text(r.metric.direction)
            )
        },
        "Mean of the measured repeats per phase, filesystems side by side; whiskers: 95 % confidence interval of the mean.",
    );
    bar_figure(
        out,
        model,
        &rows_where(role::is_cpu),
        ("chart-cpu", &format!(" id=\"cpu-{index}\" data-workload=\"{w}\"")),
        |r| {
            let whose = if r.metric.role == crate::metric::Role::ProcessCpu {
                "fsbench process, % of one CPU"
            } else {
                "whole system, % of all CPUs"
            };
            format!("CPU use ({whose}) per phase — lower is better")
        },
        "CPU use during each timed phase: the benchmark process (getrusage) and the whole machine (/proc/stat), which includes kernel threads doing journaling, writeback and compression.",
    );
    bar_figure(
        out,
        model,
        &rows_where(role::is_latency),
        (
            "chart-latency",
            &format!(" id=\"latency-{index}\" data-workload=\"{w}\""),
        ),
        |r| {
            format!(
                "latency {} ({}) per phase — {}",
                r.metric.name_within_role(),
                r.metric.unit,
                direction_text(r.metric.direction)
            )
        },
        "Per-operation latency percentiles (mean over repeats of each repeat's percentile).",
    );
    // Each phase's latency histogram beside its percentile spectrum, and its throughput per
    // second beside its latency per window.
    super::caption::side_by_side(
        out,
        &[
            (
                super::histogram::FIGURES.heading,
                super::histogram::FIGURES.figures(model, wl),
            ),
            (
                super::spectrum::FIGURES.heading,
                super::spectrum::FIGURES.figures(model, wl),
            ),
        ],
    );
    super::caption::side_by_side(
        out,
        &[
            (
                super::throughput::FIGURES.heading,
                super::throughput::FIGURES.figures(model, wl),
            ),
            (
                super::windows::FIGURES.heading,
                super::windows::FIGURES.figures(model, wl),
            ),
        ],
    );
    if !headline.is_empty() {
        out.push_str("<h3>Every repeat</h3>\n<p class=\"note\">Each point is one measured repeat in run order; the dashed line is the trimmed mean and the band the 95 % confidence interval of the mean. A first point far from the rest is a first-run effect.</p>\n<div class=\"grid\">\n");
        let absent = view::absent(model, wl);
        for (_, row) in &headline {
            repeats_figure(out, model, &w, row, &absent);
        }
        out.push_str("</div>\n");
    }
    results_table(out, model, table);
    out.push_str("</section>\n");
}

/// One figure of grouped bars, a panel per row of `rows` titled by `title` (nothing without
/// rows); `(class, attrs)` of the `<figure>`; `caption` is followed by the panels' notes.
fn bar_figure(
    out: &mut String,
    model: &ReportModel,
    rows: &[(&str, &Row)],
    (class, attrs): (&str, &str),
    title: impl Fn(&Row) -> String,
    caption: &str,
) {
    if rows.is_empty() {
        return;
    }
    let p = panels(model, rows, title);
    figure(
        out,
        model,
        class,
        attrs,
        charts::bar_chart(&p, &model.variants, WIDE),
        &format!("{}{}", caption, caption_notes(model, &p)),
    );
}

/// The figure of every measured repeat of headline `row` of workload `w` (escaped), with the
/// workload's `absent` variants marked.
fn repeats_figure(out: &mut String, model: &ReportModel, w: &str, row: &Row, absent: &[(usize, view::Absence)]) {
    let series: Vec<RepeatSeries> = row
        .cells
        .iter()
        .filter_map(|c| {
            let index = model.variants.iter().position(|v| *v == c.variant)?;
            Some(RepeatSeries {
                index,
                values: c.values.clone(),
                trimmed_mean: c.summary.trimmed_mean,
                ci: c.summary.ci_low.zip(c.summary.ci_high),
            })
        })
        .collect();
    let bounds = role::bounds(&row.metric, model.session.info.host.ncpu);
    let marks: Vec<(usize, String)> = absent
        .iter()
        .map(|(i, a)| (*i, format!("{}: {}", model.variants[*i], a.word())))
        .collect();
    let mut caption: Vec<String> = absent
        .iter()
        .map(|(i, a)| format!("<b>{}</b>: {}", esc(&model.variants[*i]), esc(&a.describe())))
        .collect();
    let clipped = series
        .iter()
        .any(|s| s.ci.is_some_and(|(l, h)| l < bounds.0 || h > bounds.1));
    if clipped {
        caption.push(format!(
            "bands clipped at {} {}: the interval reaches past what the quantity can be",
            bound_text(bounds.0),
            esc(row.metric.unit.as_str())
        ));
    }
    let caption = caption.join("; ");
    let title = format!(
        "{} {} — {}",
        row.phase,
        row.metric.name,
        direction_text(row.metric.direction)
    );
    figure(
        out,
        model,
        "chart-repeats",
        &format!(
            " data-workload=\"{w}\" data-phase=\"{}\" data-metric=\"{}\"",
            esc(&row.phase),
            esc(&row.metric.name)
        ),
        charts::repeats_chart(&title, row.metric.unit.as_str(), &series, &marks, bounds, 540, 270),
        &caption,
    );
}

/// Class and mark of a table cell with values, by its standing.
fn standing_class(standing: Option<Standing>) -> (&'static str, &'static str) {
    match standing {
        Some(Standing::Best) => ("best", "★"),
        Some(Standing::Untested) => ("untested", "?"),
        // `=` / `~`: the one table of marks, Standing::mark.
        Some(s @ Standing::Tied) => ("tied", s.mark().unwrap_or_default()),
        Some(s @ Standing::Same) => ("same", s.mark().unwrap_or_default()),
        Some(s @ Standing::Inconclusive) => ("inconclusive", s.mark().unwrap_or_default()),
        _ => ("", ""),
    }
}

fn results_table(out: &mut String, model: &ReportModel, table: &WorkloadTable) {
    out.push_str(
        "<h3>Table</h3>\n<table class=\"results\"><thead><tr><th class=\"l\">phase</th><th class=\"l\">metric</th>",
    );
    for v in &model.variants {
        let _ = write!(out, "<th>{}</th>", esc(v));
    }
    out.push_str("</tr></thead><tbody>\n");
    let legend = super::cachebound::legend(model);
    let mut flagged = false;
    for row in view::results(model, table, true) {
        let phase = if row.first_of_phase {
            esc(&row.row.phase)
        } else {
            String::new()
        };
        let _ = write!(
            out,
            "<tr><td class=\"l\">{phase}</td><td class=\"l\">{}</td>",
            esc(&name_unit(&row.row.metric))
        );
        for cell in &row.cells {
            match cell {
                CellView::Value { text, .. } => {
                    let (class, mark) = standing_class(cell.standing());
                    let (class, cb_mark) = match (&legend, cell.cache_bound()) {
                        (Some(legend), true) => {
                            flagged = true;
                            (
                                format!("{class} cache-bound").trim_start().to_string(),
                                format!("<span class=\"mark cb\" title=\"{}\">‡</span>", esc(legend)),
                            )
                        }
                        _ => (class.to_string(), String::new()),
                    };
                    let within = cell.cell().and_then(|c| c.within_pct);
                    let p = match (cell.p_vs_best(), within) {
                        (Some(p), Some(x)) => format!(
                            " title=\"p = {p:.3} against the best (Welch); within ±{} % of the best\"",
                            summary::within_text(x)
                        ),
                        (Some(p), None) => format!(" title=\"p = {p:.3} against the best (Welch)\""),
                        (None, _) => String::new(),
                    };
                    let mark = match (mark.is_empty(), within) {
                        (true, _) => String::new(),
                        (false, Some(x)) => format!("<span class=\"mark\">{mark} ±{}</span>", summary::within_text(x)),
                        (false, None) => format!("<span class=\"mark\">{mark}</span>"),
                    };
                    let _ = write!(out, "<td class=\"{class}\"{p}>{text}{mark}{cb_mark}</td>");
                }
                CellView::Empty(why) => {
                    let _ = write!(out, "<td class=\"untested\">{why}</td>");
                }
            }
        }
        out.push_str("</tr>\n");
    }
    let marks = if model.session.info.policy.methodology {
        format!(
            "★ best mean of the row; = the same as the best within {} % (both one-sided tests pass); ~ inconclusive: neither shown different nor shown the same (not “the same”: more repeats may decide), ~ ±X where its data still show it within ±X % of the best; unmarked: significantly behind",
            model.margin_pct()
        )
    } else {
        "★ best mean of the row; = tied with the best (Welch’s t-test, p ≥ 0.05)".to_string()
    };
    let _ = write!(out, "</tbody></table>\n<p class=\"note\">mean ± half-width of the 95 % confidence interval (Student t). {marks}; ? too few repeats to test. CPU rows are not ranked. Empty cells say why: unavailable, failed or n/a (see the warnings). The ± is the symmetric half-width as computed, never clipped: where mean − half-width is below 0 (or CPU plus it above 100 %), the interval is wider than the data allow and the charts draw it clipped.");
    if let Some(legend) = legend.filter(|_| flagged) {
        let _ = write!(out, " {}", esc(&legend));
    }
    out.push_str("</p>\n");
    let _ = writeln!(
        out,
        "<details><summary>All statistics of {}</summary><table><thead><tr><th class=\"l\">phase</th><th class=\"l\">metric</th><th class=\"l\">variant</th><th>n</th><th>mean</th><th>± CI</th><th>median</th><th>sd</th><th>CoV %</th><th>trimmed mean</th><th>min</th><th>max</th><th>p vs best</th></tr></thead><tbody>",
        esc(&table.workload)
    );
    for d in view::details(table) {
        let mut cells = d.cells(esc);
        cells[9] = format!("{} ({}/end)", cells[9], d.cell.summary.trimmed);
        cells.push(d.p_vs_best.clone());
        out.push_str("<tr>");
        for (i, c) in cells.iter().enumerate() {
            let class = if i < 3 { " class=\"l\"" } else { "" };
            let _ = write!(out, "<td{class}>{c}</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></details>\n");
}

/// Throughput (MiB/s) of synthetic and real-data workloads side by side, when both exist.
fn synthetic_vs_real(out: &mut String, model: &ReportModel) {
    let mut sides: [Vec<(&str, Row)>; 2] = [Vec::new(), Vec::new()];
    for t in &model.workloads {
        let real = REAL_DATA_KINDS.contains(&t.kind.as_str());
        for r in t
            .rows
            .iter()
            .filter(|r| role::is_headline(&r.metric) && r.metric.unit == crate::metric::Unit::MibPerSec)
        {
            let mut r = r.clone();
            r.phase = format!("{} · {}", t.workload, r.phase);
            sides[usize::from(real)].push((t.workload.as_str(), r));
        }
    }
    if sides.iter().any(Vec::is_empty) {
        return;
    }
    let mut p = Vec::new();
    for (side, name) in sides.iter().zip(["synthetic workloads", "real-data workloads"]) {
        let refs: Vec<(&str, &Row)> = side.iter().map(|(w, r)| (*w, r)).collect();
        let mut panel = panels(model, &refs, |r| {
            format!("{name}: {} ({}) — higher is better", r.metric.name, r.metric.unit)
        });
        p.append(&mut panel);
    }
    out.push_str("<section id=\"synthetic-real\"><h2>Synthetic versus real-data throughput</h2>\n");
    figure(
        out,
        model,
        "chart-synthetic-real",
        "",
        charts::bar_chart(&p, &model.variants, WIDE),
        &format!("{}{}", "Throughput of synthetic workloads (above) and of workloads that copy real files (below); a filesystem that wins the synthetic test does not always win with real data.", caption_notes(model, &p)),
    );
    out.push_str("</section>\n");
}

/// Unique values in first-appearance order.
fn unique(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

fn environment(out: &mut String, model: &ReportModel) {
    let s = &model.session;
    let h = &s.info.host;
    out.push_str("<section id=\"environment\"><h2>Environment</h2>\n<table class=\"env\"><tbody>\n");
    let mut row = |k: &str, v: &str| {
        let _ = writeln!(out, "<tr><th class=\"l\">{k}</th><td class=\"l\">{}</td></tr>", esc(v));
    };
    row("host", &h.hostname);
    row("kernel", &h.kernel);
    row("CPU", &format!("{} ({} CPUs)", h.cpu_model, h.ncpu));
    row(
        "memory",
        &format!("{:.1} GiB", h.mem_bytes as f64 / (1u64 << 30) as f64),
    );
    row("target", &s.info.target);
    row("raw device", &super::cachebound::describe(model.baseline.as_ref()));
    row("fsbench", &s.info.fsbench_version);
    let tools: Vec<String> = s.info.tool_versions.iter().map(|(t, v)| format!("{t} {v}")).collect();
    row("tools", &tools.join(", "));
    row("command", &s.info.args.join(" "));
    row("started", &s.started_at);
    row("finished", s.finished_at.as_deref().unwrap_or("–"));
    row("status", s.status.as_str());
    out.push_str("</tbody></table>\n<h3>Filesystems</h3>\n<table><thead><tr><th class=\"l\">variant</th><th class=\"l\">type</th><th class=\"l\">mkfs arguments</th><th class=\"l\">mount options (requested)</th><th class=\"l\">mount options (effective)</th><th class=\"l\">devices</th><th class=\"l\">state</th></tr></thead><tbody>\n");
    for v in &model.variants {
        let cases: Vec<_> = model.cases.iter().filter(|c| &c.variant == v).collect();
        let Some(first) = cases.first() else { continue };
        let samples = || {
            model
                .samples
                .iter()
                .filter(|r| cases.iter().any(|c| c.case_id == r.sample.case_id))
        };
        let effective = unique(samples().filter_map(|r| r.sample.effective_mount_opts.clone()));
        let devices = unique(samples().filter_map(|r| r.sample.device.clone()));
        let state = match cases.iter().find_map(|c| match &c.availability {
            crate::store::CaseAvailability::Unavailable(r) => Some(r.clone()),
            _ => None,
        }) {
            Some(r) => format!("unavailable: {r}"),
            None => "available".to_string(),
        };
        let _ = writeln!(
            out,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\"><code>{}</code></td><td class=\"l\"><code>{}</code></td><td class=\"l\"><code>{}</code></td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(v),
            esc(&first.fs_type),
            esc(&first.mkfs_args.join(" ")),
            esc(&first.mount_opts.join(",")),
            esc(&effective.join(" | ")),
            esc(&devices.join(", ")),
            esc(&state),
        );
    }
    out.push_str("</tbody></table>\n");
    path_panel(out, model);
    let _ = writeln!(
        out,
        "<h3>Suite</h3>\n<pre>{}</pre>\n</section>",
        esc(&s.info.suite_text)
    );
}

/// The I/O path each variant's repeats really took ([`crate::host::path::PathFacts`], read back
/// after every mount): one row per variant, each fact with the distinct values its repeats had
/// (two values mean the repeats took different paths): loop, backing filesystem, scheduler,
/// readahead, super options, on-disk ratio, the mkfs parameters read back, the memory limit in
/// force, NoCOW, the hypervisor's free page reporting, the atomic write units; and the mismatches counted. Nothing for a session stored before schema 11.
fn path_panel(out: &mut String, model: &ReportModel) {
    if !model.samples.iter().any(|r| r.sample.path.is_some()) {
        return;
    }
    out.push_str("<h3 id=\"io-path\">I/O path (read back from the kernel)</h3>\n<table><thead><tr><th class=\"l\">variant</th><th class=\"l\">loop direct I/O</th><th class=\"l\">backing filesystem</th><th class=\"l\">scheduler</th><th>readahead (KiB)</th><th class=\"l\">super options</th><th>on-disk ratio</th><th class=\"l\">mkfs parameters (read back)</th><th>memory limit (bytes)</th><th class=\"l\">NoCOW</th><th class=\"l\">free page reporting</th><th class=\"l\">atomic writes</th><th class=\"l\">mismatches</th></tr></thead><tbody>\n");
    for v in &model.variants {
        let facts = model.path_facts(v);
        if facts.is_empty() {
            continue;
        }
        let col = |f: &dyn Fn(&crate::host::path::PathFacts) -> Option<String>| {
            let vals = unique(facts.iter().filter_map(|p| f(p)));
            if vals.is_empty() {
                "–".to_string()
            } else {
                vals.join(" | ")
            }
        };
        let ratios: Vec<f64> = facts.iter().filter_map(|p| p.on_disk_ratio).collect();
        let ratio = match ratios.len() {
            0 => "–".to_string(),
            n => format!(
                "{:.2} ({})",
                ratios.iter().sum::<f64>() / n as f64,
                col(&|p| p.probe_content.clone())
            ),
        };
        let mismatched = facts.iter().filter(|p| !p.mismatches().is_empty()).count();
        let _ = writeln!(
            out,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\"><code>{}</code></td><td>{}</td><td class=\"l\"><code>{}</code></td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(v),
            esc(&col(&|p| p.loop_dio.map(|d| if d { "on".into() } else { "off (buffered)".into() }))),
            esc(&col(&|p| p.backing_fs.clone())),
            esc(&col(&|p| p.scheduler.clone())),
            esc(&col(&|p| p.read_ahead_kb.map(|k| k.to_string()))),
            esc(&col(&|p| p.super_options.clone())),
            esc(&ratio),
            esc(&col(&|p| p.mkfs_text())),
            esc(&col(&|p| p.memory_limit.map(|l| l.to_string()))),
            esc(&col(&|p| p.nocow.map(|n| if n { "set".into() } else { "not set".into() }))),
            esc(&col(&|p| p.page_reporting.clone())),
            esc(&col(&|p| p.atomic_write.clone())),
            if mismatched == 0 {
                "none".to_string()
            } else {
                format!("{mismatched} of {} repeats (see Warnings)", facts.len())
            },
        );
    }
    out.push_str("</tbody></table>\n");
}

fn warnings(out: &mut String, model: &ReportModel) {
    out.push_str("<section id=\"warnings\"><h2>Warnings</h2>\n");
    if model.warnings.is_empty() {
        out.push_str("<p>None.</p>\n");
    } else {
        out.push_str("<ul class=\"warnings\">\n");
        for w in &model.warnings {
            let _ = writeln!(out, "<li>{}</li>", esc(w));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build;
    use crate::fixture::{session_data, BTRFS};

    fn page() -> String {
        let mut data = session_data();
        data.session.info.label = Some("<script>alert(1)</script>".into());
        data.session.info.host.hostname = "h<o>st".into();
        data.session.info.suite_text = "name = \"</pre><script>\"".into();
        render_html(&build(&data, 1, 0.95), &[])
    }

    #[test]
    fn page_is_self_contained_and_escapes_everything() {
        let html = page();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(!html.contains("<script"), "unescaped script");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("h&lt;o&gt;st"));
        assert!(html.contains("&lt;/pre&gt;&lt;script&gt;"));
        // No external resources: the only URL is the SVG namespace.
        assert_eq!(
            html.matches("http").count(),
            html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
        );
        assert!(!html.contains("<link") && !html.contains(" src="));
        // The quoted variant name is escaped in attributes and text.
        assert!(html.contains(&esc(BTRFS)));
        assert!(!html.contains(BTRFS));
    }

    #[test]
    fn page_has_every_chart_table_environment_and_warning() {
        let html = page();
        // One bars chart per workload, one bar per available variant and phase.
        assert_eq!(html.matches("class=\"chart chart-bars\"").count(), 2);
        let bonnie = &html[html.find("id=\"bars-0\"").unwrap()..html.find("id=\"cpu-0\"").unwrap()];
        // bonnie: 2 headline phases × 3 variants with values.
        assert_eq!(bonnie.matches("class=\"bar\"").count(), 6, "{bonnie}");
        assert!(bonnie.contains("data-phase=\"rand_create\" data-metric=\"rate\""));
        assert!(bonnie.contains("higher is better"));
        assert_eq!(html.matches("class=\"chart chart-cpu\"").count(), 2);
        assert_eq!(html.matches("class=\"chart chart-latency\"").count(), 1);
        assert!(html.contains("lower is better"));
        // Repeats: one per headline row (bonnie 2, filecopy 1).
        assert_eq!(html.matches("class=\"chart chart-repeats\"").count(), 3);
        // No real-data workload with MiB/s here: no synthetic-versus-real chart.
        assert!(!html.contains("chart-synthetic-real"));
        assert!(html.contains("<td class=\"best\""));
        for needle in [
            "6.1.0-18-amd64",
            "Test CPU",
            "8.0 GiB",
            "/dev/loop7",
            "rw,noatime",
            "mkfs.ext4 1.47.0",
            "module not loaded",
            "first-run effect",
            "id=\"warnings\"",
        ] {
            assert!(html.contains(needle), "{needle}");
        }
        assert!(html.contains("class=\"summary\""));
    }

    /// The `<figure …>` that starts at the first `needle` of `html`, up to its `</figure>`.
    fn figure_of<'a>(html: &'a str, needle: &str) -> &'a str {
        let start = html.find(needle).unwrap_or_else(|| panic!("no {needle}"));
        let end = html[start..].find("</figure>").expect("figure end") + start;
        &html[start..end]
    }

    /// The numeric value of attribute `name` in the element text `element`.
    fn attr(element: &str, name: &str) -> f64 {
        let key = format!(" {name}=\"");
        let at = element.find(&key).unwrap_or_else(|| panic!("no {name} in {element}")) + key.len();
        let len = element[at..].find('"').expect("closing quote");
        element[at..at + len].parse().expect("number")
    }

    #[test]
    fn cpu_whiskers_stay_within_0_and_100_percent_and_the_caption_says_they_are_clipped() {
        let mut data = session_data();
        // Whole-system CPU whose 95 % intervals reach below 0 (ext4: 2, 30, 1 → 11 ± 41) and
        // above 100 (xfs: 99, 60 → 79.5 ± 248).
        for s in data.samples.iter_mut().filter(|s| !s.sample.is_warmup) {
            let value = match (s.sample.case_id.as_str(), s.sample.repeat) {
                ("ext4-bonnie", 1) => 2.0,
                ("ext4-bonnie", 2) => 30.0,
                ("ext4-bonnie", 3) => 1.0,
                ("xfs-bonnie", 1) => 99.0,
                ("xfs-bonnie", 3) => 60.0,
                _ => continue,
            };
            for m in s.sample.measurements.iter_mut() {
                if m.metric.role == crate::metric::Role::SystemCpu {
                    m.value = value;
                }
            }
        }
        let model = build(&data, 1, 0.95);
        let row = model.workloads[0]
            .rows
            .iter()
            .find(|r| r.metric.role == crate::metric::Role::SystemCpu)
            .unwrap();
        let (lo, hi) = (
            row.cells[0].summary.ci_low.unwrap(),
            row.cells[1].summary.ci_high.unwrap(),
        );
        assert!(lo < 0.0 && hi > 100.0, "the fixture must cross both bounds: {lo} {hi}");
        let html = render_html(&model, &[]);
        let cpu = figure_of(&html, "id=\"cpu-0\"");
        assert!(
            cpu.contains("Whiskers clipped at 0 % and 100 %"),
            "the caption must say the whiskers are clipped: {}",
            &cpu[cpu.find("<figcaption>").unwrap()..]
        );
        // The system-CPU panel is the second of the chart (panels are 300 px high, stacked).
        let in_panel = |y: f64| (300.0..600.0).contains(&y);
        // Pixel rows of 0 % and 100 %: every bar starts at 0; the tallest gives px per percent.
        let bars: Vec<&str> = cpu
            .split("<rect class=\"bar\"")
            .skip(1)
            .map(|e| &e[..e.find('>').unwrap_or(e.len())])
            .filter(|e| e.contains("data-metric=\"cpu_system\""))
            .collect();
        assert_eq!(bars.len(), 6, "3 variants × 2 phases");
        let tallest = bars
            .iter()
            .max_by(|a, b| attr(a, "height").total_cmp(&attr(b, "height")))
            .unwrap();
        let bottom = attr(tallest, "y") + attr(tallest, "height");
        let mean = model.workloads[0]
            .rows
            .iter()
            .filter(|r| r.metric.role == crate::metric::Role::SystemCpu)
            .flat_map(|r| r.cells.iter().map(|c| c.summary.mean))
            .fold(0.0, f64::max);
        let per_percent = attr(tallest, "height") / mean;
        let (y0, y100) = (bottom, bottom - 100.0 * per_percent);
        let whisker_ys: Vec<f64> = cpu
            .split("<polyline ")
            .skip(1)
            .filter(|e| e.contains("stroke=\"#111111\""))
            .flat_map(|e| {
                let at = e.find("points=\"").unwrap() + 8;
                let len = e[at..].find('"').unwrap();
                e[at..at + len]
                    .split_whitespace()
                    .map(|p| p.split(',').nth(1).unwrap().parse::<f64>().unwrap())
                    .collect::<Vec<_>>()
            })
            .filter(|y| in_panel(*y))
            .collect();
        assert!(!whisker_ys.is_empty(), "no whiskers in the system-CPU panel");
        for y in &whisker_ys {
            assert!(
                *y >= y100 - 1.5 && *y <= y0 + 1.5,
                "whisker at y = {y} px lies outside 0..100 % (y = {y0} .. {y100} px)"
            );
        }
        // The clipped whiskers reach the bounds (so the check above had something to catch).
        assert!(whisker_ys.iter().any(|y| (y - y100).abs() <= 1.5), "{whisker_ys:?}");
        assert!(whisker_ys.iter().any(|y| (y - y0).abs() <= 1.5), "{whisker_ys:?}");
    }

    #[test]
    fn a_variant_whose_repeats_all_failed_is_named_in_the_summary_and_has_a_slot_in_every_chart() {
        let mut data = session_data();
        for s in data.samples.iter_mut().filter(|s| s.sample.case_id == "xfs-bonnie") {
            s.sample.status = crate::store::SampleStatus::Failed("filesystem full (ENOSPC)".into());
            s.sample.measurements.clear();
        }
        let html = render_html(&build(&data, 1, 0.95), &[]);
        let summary = &html[html.find("id=\"summary\"").unwrap()..html.find("id=\"w0\"").unwrap()];
        assert!(
            summary.contains("Not compared: xfs failed every repeat (filesystem full (ENOSPC)); zfs is unavailable (module not loaded)."),
            "{summary}"
        );
        let section = &html[html.find("id=\"w0\"").unwrap()..html.find("id=\"w1\"").unwrap()];
        // bars: 2 headline phases; cpu: 2 phases × 2 CPU metrics; latency: 1 phase × 1 metric.
        for (needle, slots) in [("chart-bars", 2), ("chart-cpu", 4), ("chart-latency", 1)] {
            let fig = figure_of(section, &format!("class=\"chart {needle}\""));
            for (variant, word) in [("xfs", "failed"), ("zfs", "unavailable")] {
                let slot = format!("class=\"bar-missing\" data-variant=\"{variant}\"");
                assert_eq!(fig.matches(&slot).count(), slots, "{needle} {variant}");
                assert!(
                    fig.contains(&format!(">\n{word}\n</text>")),
                    "{needle}: no '{word}' label"
                );
            }
            assert!(fig.contains("data-missing=\"failed\"") && fig.contains("filesystem full (ENOSPC)"));
            assert!(
                fig.contains("<b>xfs</b>: every repeat failed (filesystem full (ENOSPC))"),
                "{needle} caption"
            );
        }
        let repeats = figure_of(section, "class=\"chart chart-repeats\"");
        assert!(repeats.contains(">\nxfs: failed\n</text>") && repeats.contains(">\nzfs: unavailable\n</text>"));
        assert!(section.contains("<td class=\"untested\">failed</td>"));
    }

    #[test]
    fn one_workload_shows_its_summary_once() {
        let mut data = session_data();
        data.cases.retain(|c| c.workload == "bonnie");
        data.samples.retain(|s| s.sample.case_id.ends_with("-bonnie"));
        let model = build(&data, 1, 0.95);
        assert!(!model.workloads[0].summary.is_empty());
        let html = render_html(&model, &[]);
        assert_eq!(
            html.matches(&esc(&model.workloads[0].summary)).count(),
            1,
            "summary repeated"
        );
        // With two workloads each section repeats its own paragraph below the overview.
        let two = render_html(&build(&session_data(), 1, 0.95), &[]);
        let first = build(&session_data(), 1, 0.95).workloads[0].summary.clone();
        assert_eq!(two.matches(&esc(&first)).count(), 2);
    }

    #[test]
    fn synthetic_and_real_data_throughput_side_by_side() {
        let mut data = session_data();
        for c in data.cases.iter_mut().filter(|c| c.workload == "filecopy") {
            c.workload_kind = "filecopy".into();
        }
        for s in data.samples.iter_mut() {
            for m in s
                .sample
                .measurements
                .iter_mut()
                .filter(|m| m.phase == "copy" && m.metric.name == "time")
            {
                m.metric = crate::metric::MetricId::higher("throughput", crate::metric::Unit::MibPerSec);
                m.value = 100.0 / m.value;
            }
        }
        let html = render_html(&build(&data, 1, 0.95), &[]);
        let start = html.find("chart-synthetic-real").expect("chart");
        let chart = &html[start..];
        assert!(chart.contains("synthetic workloads") && chart.contains("real-data workloads"));
        assert!(chart.contains("data-phase=\"filecopy · copy\""));
        assert!(chart.contains("data-phase=\"bonnie · seq_write_block\""));
    }
}
