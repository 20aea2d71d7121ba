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
//! Invariants: built from the report model (stored data) only; a session without capacity or
//! sweep rows renders "" (no heading); every text is escaped once, here.

use super::charts::{css_color, line_chart, Line, LineAxes, LineStyle, YScale};
use super::escape::html as esc;
use super::{ReportModel, Section};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The capacity table and the latency-against-load charts of a session.
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

impl Section for CapacitySection {
    fn markdown(&self, model: &ReportModel) -> String {
        let caps = capacities(model);
        if caps.is_empty() {
            return String::new();
        }
        let mut out = String::from("\n## Capacity at a latency target\n\n");
        for c in &caps {
            let _ = writeln!(out, "- {} {}: {}", c.workload, c.phase, sentence(c));
        }
        out.push_str("\nThe highest open-loop rate at which the percentile of the response time (from each operation's intended start) stayed under the target, searched on every repeat's fresh filesystem; the interval is over the repeats.\n");
        out
    }

    fn html(&self, model: &ReportModel) -> String {
        let caps = capacities(model);
        let curves = curves(model);
        if caps.is_empty() && curves.is_empty() {
            return String::new();
        }
        let mut out = String::from("<h2 id=\"capacity\">Latency under load</h2>");
        if !caps.is_empty() {
            out.push_str("<p>The highest open-loop rate at which the percentile of the response time (from each operation's intended start) stayed under the target, searched on every repeat's fresh filesystem; the interval is over the repeats.</p><ul class=\"capacity\">");
            for c in &caps {
                let v = model.variants.iter().position(|x| x == c.variant).unwrap_or(0);
                let _ = write!(
                    out,
                    "<li><span class=\"swatch\" style=\"background:{}\"></span>{} {}: {}</li>",
                    css_color(v),
                    esc(c.workload),
                    esc(c.phase),
                    esc(&sentence(c))
                );
            }
            out.push_str("</ul>");
        }
        for ((workload, phase), per_row) in &curves {
            for (name, per_variant) in per_row {
                let svg = curve_svg(name, phase, per_variant, &model.variants);
                let caption = format!(
                    "{workload} {phase}: {} of the response time against the open-loop rate asked for, mean over repeats",
                    name.trim_start_matches("lat_")
                );
                super::caption::figure(&mut out, model, "chart-load", "", svg, &esc(&caption));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
