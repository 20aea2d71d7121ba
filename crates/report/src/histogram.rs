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
//! The SVG is drawn by `charts::line_chart` (plotters), every text escaped.

use super::charts::{line_chart, Line, LineAxes, LineStyle, YScale};
use super::ReportModel;
use crate::store::{NewSample, SampleStatus};
use std::collections::BTreeMap;

/// Buckets per factor of ten of latency.
pub const PER_DECADE: f64 = 8.0;
/// Size of one chart in pixels.
const W: u32 = 720;
const H: u32 = 260;

/// Regrouped bucket of a latency in ns: `floor(log10(µs) × PER_DECADE)`.
fn bucket(ns: u64) -> i32 {
    let us = (ns.max(1) as f64) / 1000.0;
    (us.log10() * PER_DECADE).floor() as i32
}

/// Per phase (in first-seen order), per variant index: operations per regrouped bucket.
type Grouped = Vec<(String, BTreeMap<usize, BTreeMap<i32, u64>>)>;

fn grouped(model: &ReportModel, workload: &str) -> Grouped {
    let mut out: Grouped = Vec::new();
    for (v, sample) in measured(model, workload) {
        for h in &sample.histograms {
            let per = phase_entry(&mut out, &h.phase).entry(v).or_default();
            for &(ns, n) in &h.bins {
                *per.entry(bucket(ns)).or_default() += n;
            }
        }
    }
    out
}

/// The measured repeats (not warm-ups, status ok) of `workload`, each with its variant's index
/// in `model.variants`. Shared with `throughput`.
pub(super) fn measured<'a>(
    model: &'a ReportModel,
    workload: &'a str,
) -> impl Iterator<Item = (usize, &'a NewSample)> + 'a {
    model.samples.iter().filter_map(move |s| {
        let sample = &s.sample;
        if sample.is_warmup || sample.status != SampleStatus::Ok {
            return None;
        }
        let case = model
            .cases
            .iter()
            .find(|c| c.case_id == sample.case_id && c.workload == workload)?;
        let v = model.variants.iter().position(|n| *n == case.variant)?;
        Some((v, sample))
    })
}

/// The entry of `phase` in a first-seen-order list, added empty when new.
pub(super) fn phase_entry<'a, T: Default>(list: &'a mut Vec<(String, T)>, phase: &str) -> &'a mut T {
    let i = match list.iter().position(|(p, _)| p == phase) {
        Some(i) => i,
        None => {
            list.push((phase.to_string(), T::default()));
            list.len() - 1
        }
    };
    &mut list[i].1
}

/// One SVG of `phase`: a line per variant, share of operations (%) against latency (µs, a
/// log₁₀ axis spanning whole decades, a point at each bucket's geometric middle).
fn svg(
    phase: &str,
    per_variant: &BTreeMap<usize, BTreeMap<i32, u64>>,
    variants: &[String],
) -> Result<String, super::charts::ChartError> {
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
    let d_lo = (f64::from(lo) / PER_DECADE).floor() as i32;
    let d_hi = ((f64::from(hi + 1) / PER_DECADE).ceil() as i32).max(d_lo + 1);
    let lines: Vec<Line> = per_variant
        .iter()
        .map(|(&v, b)| {
            let total: u64 = b.values().sum();
            let points = b
                .iter()
                .map(|(&k, &n)| {
                    let us = 10f64.powf((f64::from(k) + 0.5) / PER_DECADE);
                    (us, 100.0 * n as f64 / total.max(1) as f64)
                })
                .collect();
            Line {
                index: v,
                name: variants.get(v).cloned().unwrap_or_default(),
                points,
                style: LineStyle::Dots,
            }
        })
        .collect();
    let x_fmt = |us: f64| match us.log10().round() as i32 {
        e if e < 3 => format!("{} µs", 10f64.powi(e)),
        e if e < 6 => format!("{} ms", 10f64.powi(e - 3)),
        e => format!("{} s", 10f64.powi(e - 6)),
    };
    let axes = LineAxes {
        label: &format!("latency histogram of {phase}"),
        x: (10f64.powi(d_lo), 10f64.powi(d_hi)),
        x_log: true,
        x_keys: (d_lo..=d_hi).map(|e| 10f64.powi(e)).collect(),
        x_fmt: &x_fmt,
        x_desc: "completion latency (log scale)",
        y_desc: "share of operations (%)",
        y: YScale::Linear,
        size: (W, H),
    };
    line_chart(&axes, &lines)
}

/// These figures of a workload: `FIGURES.section(out, model, workload)` writes them (none
/// when no repeat stored the data).
pub(super) const FIGURES: super::caption::PhaseFigures<BTreeMap<usize, BTreeMap<i32, u64>>> =
    super::caption::PhaseFigures {
        heading: "Latency histograms",
        class: "chart-histogram",
        caption: |p| {
            format!("{p}: share of each filesystem's operations per completion-latency bucket ({PER_DECADE} per factor of ten), from the recorded histogram (fsbench's per-operation clock for its own workloads, the tool's for external tools), measured repeats summed.")
        },
        groups: grouped,
        svg,
    };

#[cfg(test)]
mod tests {
    use super::*;
    use crate::escape::html as esc;
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
        FIGURES.section(&mut out, &base, "bonnie");
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
        FIGURES.section(&mut out, &m, &wl);
        assert_eq!(out.matches("<figure").count(), 1, "{out}");
        assert!(!out.contains("warm_only"), "warm-ups are left out");
        assert_eq!(
            out.matches("class=\"series\"").count(),
            2,
            "a line per filesystem: {out}"
        );
        // A point per bucket: a's 1 µs (25 %) and 20 µs (75 %) buckets, b's one 5 µs bucket (100 %).
        let pa = super::super::charts::series_points(&out, &esc(&variant_of(a)));
        let pb = super::super::charts::series_points(&out, &esc(&variant_of(b)));
        assert_eq!((pa.len(), pb.len()), (2, 1), "{out}");
        assert_eq!(out.matches("<circle").count(), 3, "a dot per bucket: {out}");
        // Log x axis: 1 µs → 5 µs → 20 µs left to right; y: 100 % above 75 % above 25 %.
        assert!(pa[0].0 < pb[0].0 && pb[0].0 < pa[1].0, "{pa:?} {pb:?}");
        assert!(pb[0].1 < pa[1].1 && pa[1].1 < pa[0].1, "{pa:?} {pb:?}");
        // On a log axis 5 µs lies at log10(5/1)/log10(20/1) ≈ 54 % of the way from 1 to 20 µs
        // (bucket middles: 10^(k+½)/8), not at the linear 21 %.
        let mid = |k: f64| (k + 0.5) / PER_DECADE;
        let want = (mid(f64::from(bucket(5_000))) - mid(0.0)) / (mid(10.0) - mid(0.0));
        let got = (pb[0].0 - pa[0].0) / (pa[1].0 - pa[0].0);
        assert!((got - want).abs() < 0.02, "log position {got}, want {want}");
        assert!(out.contains("1 µs") && out.contains("100 µs"), "{out}");
    }
}
