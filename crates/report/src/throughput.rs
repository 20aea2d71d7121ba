//! Per-second throughput in the HTML report: for each time-based phase that stored a series
//! (`throughput_series`: a pool phase with a deadline, e.g. fileio, oltp on SQLite), one SVG
//! with a line per filesystem: operations per second against seconds since the phase began.
//!
//! Invariants: only measured repeats count (warm-ups and failed repeats are left out); a
//! filesystem's line is the mean over its repeats of the operations in each second; the last,
//! partial second of every series is left out (it would show as a false drop); colours are the
//! variants' (`charts::css_color`). The SVG is drawn by `charts::line_chart` (plotters), every
//! text escaped.

use super::charts::{line_chart, Line, LineAxes, LineStyle, YScale};
use super::ReportModel;
use std::collections::BTreeMap;

/// Size of one chart in pixels.
const W: u32 = 720;
const H: u32 = 260;

/// Per phase (first-seen order), per variant index: the sum of each full second's operations
/// over repeats, and the number of repeats that reached that second.
type Grouped = Vec<(String, BTreeMap<usize, Vec<(u64, u32)>>)>;

fn grouped(model: &ReportModel, workload: &str) -> Grouped {
    let mut out: Grouped = Vec::new();
    for (v, sample) in super::histogram::measured(model, workload) {
        for t in &sample.series {
            let full = &t.ops[..t.ops.len().saturating_sub(1)];
            if full.is_empty() {
                continue;
            }
            let per = super::histogram::phase_entry(&mut out, &t.row()).entry(v).or_default();
            if per.len() < full.len() {
                per.resize(full.len(), (0, 0));
            }
            for (acc, &n) in per.iter_mut().zip(full) {
                acc.0 += n;
                acc.1 += 1;
            }
        }
    }
    out
}

/// One SVG of `phase`: a line per variant, operations per second against seconds since the
/// phase began (each second's count drawn at the middle of that second).
fn svg(
    phase: &str,
    per_variant: &BTreeMap<usize, Vec<(u64, u32)>>,
    variants: &[String],
) -> Result<String, super::charts::ChartError> {
    let lines: Vec<Line> = per_variant
        .iter()
        .map(|(&v, secs)| Line {
            index: v,
            name: variants.get(v).cloned().unwrap_or_default(),
            points: secs
                .iter()
                .enumerate()
                .map(|(i, &(sum, n))| (i as f64 + 0.5, sum as f64 / f64::from(n.max(1))))
                .collect(),
            style: LineStyle::Dots,
        })
        .collect();
    let n_secs = lines.iter().map(|l| l.points.len()).max().unwrap_or(1).max(1) as f64;
    let x_keys = super::charts::ticks(0.0, n_secs, false);
    let x_fmt = |x: f64| super::charts::tick_label(x);
    let axes = LineAxes {
        label: &format!("throughput per second of {phase}"),
        x: (0.0, n_secs),
        x_log: false,
        x_keys,
        x_fmt: &x_fmt,
        x_desc: "seconds since the phase began",
        y_desc: "operations per second",
        y: YScale::Linear,
        size: (W, H),
    };
    line_chart(&axes, &lines)
}

/// These figures of a workload: `FIGURES.section(out, model, workload)` writes them (none
/// when no repeat stored the data).
pub(super) const FIGURES: super::caption::PhaseFigures<BTreeMap<usize, Vec<(u64, u32)>>> =
    super::caption::PhaseFigures {
        heading: "Throughput per second",
        class: "chart-throughput",
        caption: |p| {
            format!("{p}: operations completed in each second of the phase, mean over measured repeats, one line per filesystem (the last, partial second left out).")
        },
        groups: grouped,
        svg,
    };

#[cfg(test)]
mod tests {
    use super::*;
    use crate::escape::html as esc;
    use crate::metric::ThroughputSeries;
    use crate::store::SampleStatus;

    #[test]
    fn a_line_per_filesystem_means_over_repeats_and_drops_the_partial_second() {
        let data = super::super::fixture::session_data();
        let mut m = super::super::build::build(&data, 0, 0.95);
        let mut out = String::new();
        let wl = m.cases[0].workload.clone();
        FIGURES.section(&mut out, &m, &wl);
        assert!(out.is_empty(), "no series, no section");
        let measured: Vec<usize> = (0..m.samples.len())
            .filter(|&i| {
                let s = &m.samples[i].sample;
                !s.is_warmup
                    && s.status == SampleStatus::Ok
                    && m.cases.iter().any(|c| c.case_id == s.case_id && c.workload == wl)
            })
            .collect();
        for &i in &measured {
            m.samples[i].sample.series.push(ThroughputSeries {
                phase: "rndrd".into(),
                rank: None,
                ops: vec![100, 300, 7],
            });
        }
        let g = grouped(&m, &wl);
        assert_eq!(g.len(), 1);
        for secs in g[0].1.values() {
            assert_eq!(secs.len(), 2, "partial second dropped");
            assert_eq!(secs[0].0 / u64::from(secs[0].1), 100);
            assert_eq!(secs[1].0 / u64::from(secs[1].1), 300);
        }
        FIGURES.section(&mut out, &m, &wl);
        assert_eq!(out.matches("<figure").count(), 1, "{out}");
        assert_eq!(out.matches("class=\"series\"").count(), g[0].1.len());
        // Each line has a point per full second: 100 then 300 operations, the higher one above.
        for &v in g[0].1.keys() {
            let pts = super::super::charts::series_points(&out, &esc(&m.variants[v]));
            assert_eq!(pts.len(), 2, "{out}");
            assert!(pts[0].0 < pts[1].0 && pts[1].1 < pts[0].1, "{pts:?}");
        }
        assert_eq!(out.matches("<circle").count(), 2 * g[0].1.len(), "a dot per second");
        assert!(out.contains("data-phase=\"rndrd\""));
    }
}
