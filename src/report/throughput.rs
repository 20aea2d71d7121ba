//! Per-second throughput in the HTML report: for each time-based phase that stored a series
//! (`throughput_series`: a pool phase with a deadline, e.g. fileio, oltp on SQLite), one SVG
//! with a line per filesystem: operations per second against seconds since the phase began.
//!
//! Invariants: only measured repeats count (warm-ups and failed repeats are left out); a
//! filesystem's line is the mean over its repeats of the operations in each second; the last,
//! partial second of every series is left out (it would show as a false drop); colours are the
//! variants' (`charts::css_color`). The SVG is written by hand, every text escaped.

use super::escape::html as esc;
use super::ReportModel;
use crate::store::SampleStatus;
use std::collections::BTreeMap;
use std::fmt::Write as _;

const W: f64 = 720.0;
const H: f64 = 260.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 28.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 40.0;

/// Per phase (first-seen order), per variant index: the sum of each full second's operations
/// over repeats, and the number of repeats that reached that second.
type Grouped = Vec<(String, BTreeMap<usize, Vec<(u64, u32)>>)>;

fn grouped(model: &ReportModel, workload: &str) -> Grouped {
    let mut out: Grouped = Vec::new();
    for s in &model.samples {
        let sample = &s.sample;
        if sample.is_warmup || sample.status != SampleStatus::Ok || sample.series.is_empty() {
            continue;
        }
        let Some(case) = model
            .cases
            .iter()
            .find(|c| c.case_id == sample.case_id && c.workload == workload)
        else {
            continue;
        };
        let Some(v) = model.variants.iter().position(|n| *n == case.variant) else {
            continue;
        };
        for t in &sample.series {
            let full = &t.ops[..t.ops.len().saturating_sub(1)];
            if full.is_empty() {
                continue;
            }
            let i = match out.iter().position(|(p, _)| *p == t.phase) {
                Some(i) => i,
                None => {
                    out.push((t.phase.clone(), BTreeMap::new()));
                    out.len() - 1
                }
            };
            let per = out[i].1.entry(v).or_default();
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

/// A round step for an axis spanning `span` with about `n` ticks.
fn step(span: f64, n: f64) -> f64 {
    let raw = (span / n).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

fn svg(phase: &str, per_variant: &BTreeMap<usize, Vec<(u64, u32)>>, variants: &[String]) -> String {
    let lines: Vec<(usize, Vec<f64>)> = per_variant
        .iter()
        .map(|(&v, secs)| {
            let ys = secs.iter().map(|&(sum, n)| sum as f64 / f64::from(n.max(1))).collect();
            (v, ys)
        })
        .collect();
    let n_secs = lines.iter().map(|(_, y)| y.len()).max().unwrap_or(1).max(1) as f64;
    let y_top = lines
        .iter()
        .flat_map(|(_, y)| y.iter().copied())
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let y_step = step(y_top, 4.0);
    let y_max = (y_top / y_step).ceil() * y_step;
    let px = |x: f64| LEFT + x / n_secs * (W - LEFT - RIGHT);
    let py = |y: f64| TOP + (1.0 - y / y_max) * (H - TOP - BOTTOM);
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" role=\"img\" \
         aria-label=\"throughput per second of {p}\" font-family=\"sans-serif\" font-size=\"11\">\
         <line x1=\"{LEFT}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\" stroke=\"#444\"/>\
         <line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{y0}\" stroke=\"#444\"/>",
        p = esc(phase),
        y0 = H - BOTTOM,
        x1 = W - RIGHT
    );
    let mut y = 0.0;
    while y <= y_max + y_step / 2.0 {
        let _ = write!(
            s,
            "<line x1=\"{LEFT}\" y1=\"{py:.1}\" x2=\"{x1}\" y2=\"{py:.1}\" stroke=\"#eee\"/>\
             <text x=\"{tx}\" y=\"{ty:.1}\" text-anchor=\"end\">{y}</text>",
            py = py(y),
            x1 = W - RIGHT,
            tx = LEFT - 4.0,
            ty = py(y) + 4.0
        );
        y += y_step;
    }
    let x_step = step(n_secs, 8.0).max(1.0);
    let mut x = 0.0;
    while x <= n_secs + 1e-9 {
        let _ = write!(
            s,
            "<text x=\"{px:.1}\" y=\"{ty}\" text-anchor=\"middle\">{x}</text>",
            px = px(x),
            ty = H - BOTTOM + 14.0
        );
        x += x_step;
    }
    let _ = write!(
        s,
        "<text x=\"{cx}\" y=\"{by}\" text-anchor=\"middle\">seconds since the phase began; operations per second</text>",
        cx = (LEFT + W - RIGHT) / 2.0,
        by = H - 6.0
    );
    for (v, ys) in &lines {
        // Each second's count drawn at the middle of that second.
        let name = variants.get(*v).map_or("", String::as_str);
        let points = ys.iter().enumerate().map(|(i, &y)| (px(i as f64 + 0.5), py(y)));
        super::charts::svg_polyline(&mut s, *v, name, points);
    }
    s.push_str("</svg>");
    s
}

/// Writes the per-second throughput figures of workload `workload` (none when no repeat
/// stored a series).
pub(super) fn section(out: &mut String, model: &ReportModel, workload: &str) {
    let groups = grouped(model, workload);
    if groups.is_empty() {
        return;
    }
    out.push_str("<h3>Throughput per second</h3>\n<div class=\"grid\">\n");
    for (phase, per_variant) in &groups {
        let _ = writeln!(
            out,
            "<figure class=\"chart chart-throughput\" data-workload=\"{w}\" data-phase=\"{p}\">{svg}<figcaption>{p}: operations completed in each second of the phase, mean over measured repeats, one line per filesystem (the last, partial second left out).{prov}</figcaption></figure>",
            w = esc(workload),
            p = esc(phase),
            svg = svg(phase, per_variant, &model.variants),
            prov = super::caption::provenance(&model.session.info)
        );
    }
    out.push_str("</div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::ThroughputSeries;

    #[test]
    fn a_line_per_filesystem_means_over_repeats_and_drops_the_partial_second() {
        let data = super::super::fixture::session_data();
        let mut m = super::super::build::build(&data, 0, 0.95);
        let mut out = String::new();
        let wl = m.cases[0].workload.clone();
        section(&mut out, &m, &wl);
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
        section(&mut out, &m, &wl);
        assert_eq!(out.matches("<figure").count(), 1, "{out}");
        assert_eq!(out.matches("<polyline").count(), g[0].1.len());
        assert!(out.contains("data-phase=\"rndrd\""));
    }
}
