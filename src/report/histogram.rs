//! Latency histograms in the HTML report: for each phase that stored one (`latency_histograms`:
//! every pool phase of fsbench's own workloads, from its hdrhistogram log-bucketed by
//! `engine::phase`; fio's json+ completion-latency bins), one SVG with a line per
//! filesystem: the share of that filesystem's operations per latency bucket, on a logarithmic
//! latency axis.
//!
//! Invariants: only measured repeats count (warm-ups and failed repeats are left out); the
//! repeats of a filesystem are summed, then each filesystem is normalised to 100 % of its own
//! operations, so filesystems that did different numbers of operations compare by shape; fio's
//! ~1.6 %-wide buckets are regrouped into [`PER_DECADE`] buckets per factor of ten, so lines
//! from different runs share their x positions. Colours are the variants' (`charts::css_color`).
//! The SVG is written by hand (a few lines and labels), every text escaped.

use super::escape::html as esc;
use super::ReportModel;
use crate::store::SampleStatus;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Buckets per factor of ten of latency.
pub const PER_DECADE: f64 = 8.0;
const W: f64 = 720.0;
const H: f64 = 260.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 28.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 40.0;

/// Regrouped bucket of a latency in ns: `floor(log10(µs) × PER_DECADE)`.
fn bucket(ns: u64) -> i32 {
    let us = (ns.max(1) as f64) / 1000.0;
    (us.log10() * PER_DECADE).floor() as i32
}

/// Per phase (in first-seen order), per variant index: operations per regrouped bucket.
type Grouped = Vec<(String, BTreeMap<usize, BTreeMap<i32, u64>>)>;

fn grouped(model: &ReportModel, workload: &str) -> Grouped {
    let mut out: Grouped = Vec::new();
    for s in &model.samples {
        let sample = &s.sample;
        if sample.is_warmup || sample.status != SampleStatus::Ok || sample.histograms.is_empty() {
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
        for h in &sample.histograms {
            let i = match out.iter().position(|(p, _)| *p == h.phase) {
                Some(i) => i,
                None => {
                    out.push((h.phase.clone(), BTreeMap::new()));
                    out.len() - 1
                }
            };
            let per = out[i].1.entry(v).or_default();
            for &(ns, n) in &h.bins {
                *per.entry(bucket(ns)).or_default() += n;
            }
        }
    }
    out
}

/// One SVG of `phase`: a line per variant, share of operations (%) against latency.
fn svg(phase: &str, per_variant: &BTreeMap<usize, BTreeMap<i32, u64>>, variants: &[String]) -> String {
    let lo = per_variant
        .values()
        .filter_map(|b| b.keys().next())
        .min()
        .copied()
        .unwrap_or(0);
    let hi = per_variant
        .values()
        .filter_map(|b| b.keys().last())
        .max()
        .copied()
        .unwrap_or(0);
    // Whole decades around the data.
    let d_lo = (f64::from(lo) / PER_DECADE).floor();
    let d_hi = (f64::from(hi + 1) / PER_DECADE).ceil().max(d_lo + 1.0);
    let shares: Vec<(usize, Vec<(f64, f64)>)> = per_variant
        .iter()
        .map(|(&v, b)| {
            let total: u64 = b.values().sum();
            let pts = b
                .iter()
                .map(|(&k, &n)| {
                    let x = (f64::from(k) + 0.5) / PER_DECADE;
                    (x, 100.0 * n as f64 / total.max(1) as f64)
                })
                .collect();
            (v, pts)
        })
        .collect();
    let y_max = shares
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1))
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let px = |x: f64| LEFT + (x - d_lo) / (d_hi - d_lo) * (W - LEFT - RIGHT);
    let py = |y: f64| TOP + (1.0 - y / y_max) * (H - TOP - BOTTOM);
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" role=\"img\" \
         aria-label=\"latency histogram of {p}\" font-family=\"sans-serif\" font-size=\"11\">",
        p = esc(phase)
    );
    let _ = write!(
        s,
        "<line x1=\"{LEFT}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\" stroke=\"#444\"/>\
         <line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{y0}\" stroke=\"#444\"/>",
        y0 = H - BOTTOM,
        x1 = W - RIGHT
    );
    let mut d = d_lo;
    while d <= d_hi {
        let x = px(d);
        let label = match d as i32 {
            e if e < 3 => format!("{} µs", 10f64.powi(e)),
            e if e < 6 => format!("{} ms", 10f64.powi(e - 3)),
            e => format!("{} s", 10f64.powi(e - 6)),
        };
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{TOP}\" x2=\"{x:.1}\" y2=\"{y0}\" stroke=\"#ddd\"/>\
             <text x=\"{x:.1}\" y=\"{ty}\" text-anchor=\"middle\">{label}</text>",
            y0 = H - BOTTOM,
            ty = H - BOTTOM + 14.0
        );
        d += 1.0;
    }
    let _ = write!(
        s,
        "<text x=\"{LEFT}\" y=\"{ty}\">0</text><text x=\"4\" y=\"{t2}\">{y_max:.1} %</text>\
         <text x=\"{cx}\" y=\"{by}\" text-anchor=\"middle\">completion latency (log scale)</text>",
        ty = H - BOTTOM - 2.0,
        t2 = TOP + 4.0,
        cx = (LEFT + W - RIGHT) / 2.0,
        by = H - 6.0
    );
    for (v, pts) in &shares {
        let name = variants.get(*v).map_or("", String::as_str);
        super::charts::svg_polyline(&mut s, *v, name, pts.iter().map(|&(x, y)| (px(x), py(y))));
    }
    s.push_str("</svg>");
    s
}

/// Writes the histogram figures of workload `workload` (none when no repeat stored one).
pub(super) fn section(out: &mut String, model: &ReportModel, workload: &str) {
    let groups = grouped(model, workload);
    if groups.is_empty() {
        return;
    }
    out.push_str("<h3>Latency histograms</h3>\n<div class=\"grid\">\n");
    for (phase, per_variant) in &groups {
        let _ = writeln!(
            out,
            "<figure class=\"chart chart-histogram\" data-workload=\"{w}\" data-phase=\"{p}\">{svg}<figcaption>{p}: share of each filesystem's operations per completion-latency bucket ({PER_DECADE} per factor of ten), from the recorded histogram (fsbench's per-operation clock for its own workloads, the tool's for external tools), measured repeats summed.{prov}</figcaption></figure>",
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
    use crate::metric::LatencyHistogram;

    /// `(sample index, phase, bins)` added to the fixture session's samples.
    type Added<'a> = (usize, &'a str, Vec<(u64, u64)>);

    fn model_with(hist: &[Added]) -> ReportModel {
        let data = super::super::fixture::session_data();
        let mut m = super::super::build::build(&data, 0, 0.95);
        for (i, phase, bins) in hist {
            m.samples[*i].sample.histograms.push(LatencyHistogram {
                phase: phase.to_string(),
                bins: bins.clone(),
            });
        }
        m
    }

    #[test]
    fn buckets_are_log_spaced() {
        assert_eq!(bucket(1000), 0); // 1 µs
        assert_eq!(bucket(10_000), 8); // 10 µs
        assert_eq!(bucket(1_000_000), 24); // 1 ms
        assert!(bucket(1_300) < bucket(1_500));
    }

    #[test]
    fn one_figure_per_phase_with_a_line_per_filesystem_and_only_measured_repeats() {
        let base = model_with(&[]);
        let mut out = String::new();
        section(&mut out, &base, "bonnie");
        assert!(out.is_empty(), "no histograms, no section");

        // Find two measured samples of different variants and one warm-up of the same workload.
        let wl = base.cases[0].workload.clone();
        let of = |pred: &dyn Fn(&crate::store::SampleRecord, &str) -> bool| -> Vec<usize> {
            base.samples
                .iter()
                .enumerate()
                .filter(|(_, s)| {
                    let c = base.cases.iter().find(|c| c.case_id == s.sample.case_id).unwrap();
                    c.workload == wl && pred(s, &c.variant)
                })
                .map(|(i, _)| i)
                .collect()
        };
        let measured = of(&|s, _| !s.sample.is_warmup && s.sample.status == SampleStatus::Ok);
        let variant_of = |i: usize| {
            let c = base
                .cases
                .iter()
                .find(|c| c.case_id == base.samples[i].sample.case_id)
                .unwrap();
            c.variant.clone()
        };
        let a = measured[0];
        let b = *measured
            .iter()
            .find(|&&i| variant_of(i) != variant_of(a))
            .expect("two variants");
        let mut hist = vec![
            (a, "randread_read", vec![(1_000, 10), (20_000, 30)]),
            (b, "randread_read", vec![(5_000, 5)]),
        ];
        if let Some(&w) = of(&|s, _| s.sample.is_warmup).first() {
            hist.push((w, "warm_only", vec![(1_000, 1)]));
        }
        let m = model_with(&hist);
        let mut out = String::new();
        section(&mut out, &m, &wl);
        assert_eq!(out.matches("<figure").count(), 1, "{out}");
        assert!(!out.contains("warm_only"), "warm-ups are left out");
        assert_eq!(out.matches("<polyline").count(), 2, "{out}");
        for v in [variant_of(a), variant_of(b)] {
            assert!(out.contains(&format!("data-variant=\"{}\"", esc(&v))), "{v}");
        }
        assert!(out.contains("1 µs") && out.contains("100 µs"), "{out}");
    }
}
