//! Capacity at a latency target and latency against load: the open loop's answers
//! ([`crate::engine::openloop`]) in one table and one chart per swept phase.
//!
//! - **Capacity**: every row `capacity_pQ` of a phase `PHASE:capacity` (the highest rate whose
//!   percentile `Q` of the response time stayed under the target, one search per repeat) becomes
//!   one sentence per filesystem with its mean and confidence interval over the repeats —
//!   "ext4 sustains 12,300 ops/s [11,800, 12,900] at p99 ≤ 5 ms" — with the target read from the
//!   phase's `target_limit` row.
//! - **Latency against load**: the phases `PHASE@RATE` of a rate sweep give, per filesystem,
//!   the mean of each percentile row (p50, p99) against the rate asked for: one SVG per
//!   percentile of each swept phase, a line per filesystem (drawn by `charts::line_chart`).
//!
//! The section says what it shows once, as [`super::block`]s: the list in Markdown and HTML
//! (under "Capacity at a latency target" in Markdown, "Latency under load" on the page, which
//! adds the charts as figures with their captions).
//!
//! Invariants: built from the report model (stored data) only; a session without capacity or
//! sweep rows renders "" (no heading); the renderers of [`super::block`] escape every text
//! (the captions, given as HTML, are escaped here).

use super::block::{Block, Formats, Item};
use super::charts::{css_color, line_chart, Line, LineAxes, LineStyle, YScale};
use super::escape::html as esc;
use super::{ReportModel, Section};
use std::collections::BTreeMap;

/// The capacity sentences and the latency-against-load charts of a session.
pub struct CapacitySection;

/// One filesystem's capacity at one target.
struct Capacity<'a> {
    workload: &'a str,
    phase: &'a str,
    variant: &'a str,
    /// `p99`, `p99.9`.
    percentile: &'a str,
    mean: f64,
    ci: Option<(f64, f64)>,
    n: usize,
    limit_us: Option<f64>,
}

fn capacities(model: &ReportModel) -> Vec<Capacity<'_>> {
    let mut out = Vec::new();
    for t in &model.workloads {
        for row in &t.rows {
            let Some(percentile) = row.metric.name.strip_prefix("capacity_") else {
                continue;
            };
            if !row.phase.ends_with(":capacity") {
                continue;
            }
            let limit = t
                .rows
                .iter()
                .find(|r| r.phase == row.phase && r.metric.name == "target_limit");
            for c in &row.cells {
                out.push(Capacity {
                    workload: &t.workload,
                    phase: row.phase.trim_end_matches(":capacity"),
                    variant: &c.variant,
                    percentile,
                    mean: c.summary.mean,
                    ci: c.summary.ci_low.zip(c.summary.ci_high),
                    n: c.summary.n,
                    limit_us: limit
                        .and_then(|r| r.cells.iter().find(|x| x.variant == c.variant))
                        .map(|x| x.summary.mean),
                });
            }
        }
    }
    out
}

/// `5 ms`, `500 us`, `2 s`.
fn duration_us(us: f64) -> String {
    if us >= 1e6 {
        format!("{} s", trim(us / 1e6))
    } else if us >= 1e3 {
        format!("{} ms", trim(us / 1e3))
    } else {
        format!("{} us", trim(us))
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `12,345`: whole operations per second with thousands separators.
fn rate(v: f64) -> String {
    super::words::thousands(v.max(0.0).round() as u64)
}

/// "ext4 sustains 12,300 ops/s [11,800, 12,900] at p99 ≤ 5 ms (3 repeats)".
fn sentence(c: &Capacity) -> String {
    let ci = c.ci.map_or_else(
        || " (one repeat: no interval)".to_string(),
        |(lo, hi)| format!(" [{}, {}]", rate(lo), rate(hi)),
    );
    let target = c
        .limit_us
        .map_or_else(String::new, |l| format!(" ≤ {}", duration_us(l)));
    format!(
        "{} sustains {} ops/s{ci} at {}{target} ({} repeat{})",
        c.variant,
        rate(c.mean),
        c.percentile,
        c.n,
        if c.n == 1 { "" } else { "s" }
    )
}

/// Per (workload, swept phase): per latency row name, per variant index, the (rate, mean) points.
type Curves<'a> = BTreeMap<(&'a str, &'a str), BTreeMap<&'a str, BTreeMap<usize, Vec<(f64, f64)>>>>;

/// The latency rows drawn against load.
const CURVE_ROWS: [&str; 2] = ["lat_p50", "lat_p99"];

fn curves(model: &ReportModel) -> Curves<'_> {
    let mut out: Curves = BTreeMap::new();
    for t in &model.workloads {
        for row in &t.rows {
            let Some((base, r)) = row.phase.rsplit_once('@') else {
                continue;
            };
            let Ok(asked) = r.parse::<f64>() else { continue };
            let Some(name) = CURVE_ROWS.iter().find(|n| **n == row.metric.name) else {
                continue;
            };
            for c in &row.cells {
                let Some(v) = model.variants.iter().position(|x| *x == c.variant) else {
                    continue;
                };
                out.entry((t.workload.as_str(), base))
                    .or_default()
                    .entry(name)
                    .or_default()
                    .entry(v)
                    .or_default()
                    .push((asked, c.summary.mean / 1e3));
            }
        }
    }
    for per_row in out.values_mut() {
        for per_variant in per_row.values_mut() {
            for points in per_variant.values_mut() {
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
        }
    }
    out
}

fn curve_svg(
    name: &str,
    phase: &str,
    per_variant: &BTreeMap<usize, Vec<(f64, f64)>>,
    variants: &[String],
) -> Result<String, super::charts::ChartError> {
    let xs: Vec<f64> = per_variant.values().flatten().map(|p| p.0).collect();
    let hi = xs.iter().copied().fold(0.0_f64, f64::max);
    let lines: Vec<Line> = per_variant
        .iter()
        .map(|(&v, points)| Line {
            index: v,
            name: variants.get(v).cloned().unwrap_or_default(),
            points: points.clone(),
            style: LineStyle::Dots,
        })
        .collect();
    let mut keys: Vec<f64> = xs.clone();
    keys.sort_by(f64::total_cmp);
    keys.dedup();
    let fmt = |x: f64| rate(x);
    let label = format!("{phase}: {name} against the rate asked for");
    let y_desc = format!("{} (ms)", name.trim_start_matches("lat_"));
    line_chart(
        &LineAxes {
            label: &label,
            x: (0.0, hi * 1.05),
            x_log: false,
            x_keys: keys,
            x_fmt: &fmt,
            x_desc: "operations per second asked for (open loop)",
            y_desc: &y_desc,
            y: YScale::Linear,
            size: (720, 260),
        },
        &lines,
    )
}

/// What the capacity list means, said once above it.
const EXPLAIN: &str = "The highest open-loop rate at which the percentile of the response time (from each operation's intended start) stayed under the target, searched on every repeat's fresh filesystem; the interval is over the repeats.";

impl Section for CapacitySection {
    fn blocks(&self, model: &ReportModel) -> Vec<Block> {
        let caps = capacities(model);
        let curves = curves(model);
        let mut out = Vec::new();
        // The Markdown has the capacities only (no charts), the page both, each under its name.
        if !caps.is_empty() {
            out.push(Block::heading(2, "Capacity at a latency target").only(Formats::MARKDOWN));
        }
        if !caps.is_empty() || !curves.is_empty() {
            out.push(
                Block::Heading {
                    level: 2,
                    text: "Latency under load".into(),
                    id: Some("capacity".into()),
                }
                .only(Formats::HTML),
            );
        }
        if !caps.is_empty() {
            out.push(Block::paragraph(EXPLAIN));
            let items = caps
                .iter()
                .map(|c| Item {
                    text: format!("{} {}: {}", c.workload, c.phase, sentence(c)),
                    swatch: Some(css_color(
                        model.variants.iter().position(|x| x == c.variant).unwrap_or(0),
                    )),
                })
                .collect();
            out.push(Block::List {
                class: Some("capacity".into()),
                items,
            });
        }
        for ((workload, phase), per_row) in &curves {
            for (name, per_variant) in per_row {
                let svg = curve_svg(name, phase, per_variant, &model.variants);
                let caption = format!(
                    "{workload} {phase}: {} of the response time against the open-loop rate asked for, mean over repeats",
                    name.trim_start_matches("lat_")
                );
                let mut figure = String::new();
                super::caption::figure(&mut figure, model, "chart-load", "", svg, &esc(&caption));
                out.push(Block::Html(figure));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{case, m, sample, session_data};
    use super::*;
    use crate::metric::{MetricId, Unit};
    use crate::store::SampleStatus;

    /// ext4 and xfs: a capacity search at p99 ≤ 5 ms (when `capacity`) and p50 and p99 swept at
    /// 200 and 800 ops/s, three repeats each.
    fn model(capacity: bool) -> ReportModel {
        let mut data = session_data();
        data.cases.clear();
        data.samples.clear();
        let mut id = 0;
        for (variant, cap) in [("ext4", 12_300.0), ("xfs", 9_800.0)] {
            data.cases.push(case(variant, variant, "w", true));
            let case_id = data.cases.last().expect("pushed").case_id.clone();
            for (r, wobble) in [0.97, 1.0, 1.03].into_iter().enumerate() {
                let mut ms = Vec::new();
                if capacity {
                    ms.push(m(
                        "rndrd:capacity",
                        MetricId::higher("capacity_p99", Unit::OpsPerSec),
                        cap * wobble,
                    ));
                    ms.push(m(
                        "rndrd:capacity",
                        MetricId::lower("target_limit", Unit::Micros),
                        5000.0,
                    ));
                }
                for (rate, p50) in [(200, 300.0), (800, 900.0)] {
                    let phase = format!("rndrd@{rate}");
                    ms.push(m(&phase, MetricId::latency("lat_p50"), p50 * wobble));
                    ms.push(m(&phase, MetricId::latency("lat_p99"), 4.0 * p50 * wobble));
                }
                id += 1;
                data.samples
                    .push(sample(id, &case_id, r as u32, false, SampleStatus::Ok, &[], ms));
            }
        }
        super::super::build(&data, 0, 0.95)
    }

    #[test]
    fn markdown_lists_the_capacities_and_the_page_adds_the_curves() {
        let m = model(true);
        let md = CapacitySection.markdown(&m);
        assert!(
            md.starts_with("\n## Capacity at a latency target\n\nThe highest open-loop rate"),
            "{md}"
        );
        assert!(
            md.contains("\n- w rndrd: ext4 sustains 12,300 ops/s \\[")
                && md.contains("\\] at p99 ≤ 5 ms (3 repeats)\n- w rndrd: xfs sustains 9,800 ops/s"),
            "{md}"
        );
        assert!(!md.contains("Latency under load") && !md.contains("<figure"), "{md}");
        let html = CapacitySection.html(&m);
        assert!(
            html.starts_with("<h2 id=\"capacity\">Latency under load</h2>\n<p>The highest open-loop rate"),
            "{html}"
        );
        assert!(
            html.contains("<ul class=\"capacity\"><li><span class=\"swatch\" style=\"background:#0072b2\"></span>w rndrd: ext4 sustains 12,300 ops/s ["),
            "{html}"
        );
        assert_eq!(html.matches("<figure class=\"chart chart-load\">").count(), 2, "{html}");
        assert!(
            html.contains("<figcaption>w rndrd: p99 of the response time against the open-loop rate asked for"),
            "{html}"
        );
        assert_eq!(CapacitySection.text(&m), "");
    }

    #[test]
    fn a_sweep_without_a_capacity_search_is_on_the_page_only() {
        let m = model(false);
        assert_eq!(CapacitySection.markdown(&m), "");
        let html = CapacitySection.html(&m);
        assert!(
            html.starts_with("<h2 id=\"capacity\">Latency under load</h2>\n<figure class=\"chart chart-load\">"),
            "{html}"
        );
        let none = super::super::build(&session_data(), 0, 0.95);
        assert!(CapacitySection.blocks(&none).is_empty());
    }

    #[test]
    fn rates_and_durations_read_as_people_write_them() {
        assert_eq!(rate(12_345.4), "12,345");
        assert_eq!(rate(999.0), "999");
        assert_eq!(rate(1_000_000.0), "1,000,000");
        assert_eq!(duration_us(5_000.0), "5 ms");
        assert_eq!(duration_us(500.0), "500 us");
        assert_eq!(duration_us(2_500_000.0), "2.5 s");
    }
}
