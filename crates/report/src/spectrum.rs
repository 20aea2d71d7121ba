//! Percentile spectra in the HTML report, HdrHistogram style: for each phase that stored a
//! whole-phase latency histogram (`latency_histograms`: every pool phase of fsbench's own
//! workloads, fio's json+ bins), one SVG with the latency at every percentile, the percentile
//! on a log scale of 1 / (1 − q) (50 %, 90 %, 99 %, 99.9 %, … equally spaced) and the latency
//! on a log scale, so the tail is as readable as the median.
//!
//! Invariants: only measured repeats count (warm-ups and failed repeats are left out); a
//! filesystem's line is the spectrum of its repeats' histograms added bucket by bucket
//! (`metric::add_bins`), never an average of percentiles, and each repeat's own spectrum is a
//! thin faint line under it, so the repeats' spread shows; the lines are exact steps of the
//! stored buckets (the latency at q is the smallest bucket whose cumulative count reaches q of
//! the total, as `metric::bins_quantile`); the right end is the largest latency, drawn at
//! 1 / (1 − q) = the number of operations (the finest percentile they resolve), at most
//! [`MAX_X`]. Colours are the variants'; the SVG is drawn by `charts::line_chart` (plotters),
//! every text escaped.

use super::charts::{latency_label, line_chart, log_axis, Line, LineAxes, LineStyle, YScale};
use super::ReportModel;
use crate::metric::add_bins;
use std::collections::BTreeMap;

/// The right end of the percentile axis: 1 / (1 − q) for q = 99.9999 %.
pub const MAX_X: f64 = 1e6;
/// Size of one chart in pixels.
const W: u32 = 720;
const H: u32 = 260;

/// Per variant index: each measured repeat's bins of one phase.
type PerVariant = BTreeMap<usize, Vec<Vec<(u64, u64)>>>;

/// Per phase (first-seen order), its [`PerVariant`].
type Grouped = Vec<(String, PerVariant)>;

fn grouped(model: &ReportModel, workload: &str) -> Grouped {
    let mut out: Grouped = Vec::new();
    for (v, sample) in super::histogram::measured(model, workload) {
        for h in sample.histograms.iter().filter(|h| h.bins.iter().any(|b| b.1 > 0)) {
            let mut bins = h.bins.clone();
            bins.sort_unstable();
            super::histogram::phase_entry(&mut out, &h.phase)
                .entry(v)
                .or_default()
                .push(bins);
        }
    }
    out
}

/// The repeats' bins added bucket by bucket.
pub(super) fn merged(repeats: &[Vec<(u64, u64)>]) -> Vec<(u64, u64)> {
    let mut sum = Vec::new();
    for bins in repeats {
        add_bins(&mut sum, bins);
    }
    sum
}

/// The percentile spectrum of `bins` (`(ns, operations)` in increasing latency) as points
/// `(1 / (1 − q), latency in µs)`: a step per bucket from the fraction of operations below
/// it to the fraction up to it, the last (the largest latency) ending at the number of
/// operations (capped at [`MAX_X`]). Empty without operations.
pub(super) fn spectrum(bins: &[(u64, u64)]) -> Vec<(f64, f64)> {
    let total: u64 = bins.iter().map(|b| b.1).sum();
    if total == 0 {
        return Vec::new();
    }
    let end = (total as f64).min(MAX_X);
    let x = |seen: u64| match total - seen {
        0 => end,
        rest => (total as f64 / rest as f64).min(end),
    };
    let mut points: Vec<(f64, f64)> = Vec::new();
    let mut seen = 0;
    for &(ns, n) in bins.iter().filter(|b| b.1 > 0) {
        let us = ns.max(1) as f64 / 1000.0;
        for p in [(x(seen), us), (x(seen + n), us)] {
            if points.last() != Some(&p) {
                points.push(p);
            }
        }
        seen += n;
    }
    points
}

/// A percentile axis tick `1 / (1 − q)` as `q` in percent with the digits it needs: `50 %`,
/// `99 %`, `99.99 %`.
fn percent_label(x: f64) -> String {
    let decimals = (x.log10().ceil() as i32 - 2).max(0) as usize;
    format!("{:.*} %", decimals, 100.0 * (1.0 - 1.0 / x.max(1.0)))
}

/// One SVG of `phase`: for each variant a thin line per repeat (with more than one) and the
/// merged line above them.
fn svg(phase: &str, per_variant: &PerVariant, variants: &[String]) -> Result<String, super::charts::ChartError> {
    let name = |v: usize| variants.get(v).cloned().unwrap_or_default();
    let mut lines: Vec<Line> = Vec::new();
    for (&v, repeats) in per_variant.iter().filter(|(_, r)| r.len() > 1) {
        for bins in repeats {
            lines.push(Line {
                index: v,
                name: name(v),
                points: spectrum(bins),
                style: LineStyle::Thin,
            });
        }
    }
    for (&v, repeats) in per_variant {
        lines.push(Line {
            index: v,
            name: name(v),
            points: spectrum(&merged(repeats)),
            style: LineStyle::Plain,
        });
    }
    let points = || lines.iter().flat_map(|l| l.points.iter().copied());
    let (y_range, y_keys) = log_axis(
        points().map(|p| p.1).fold(f64::INFINITY, f64::min),
        points().map(|p| p.1).fold(0.0, f64::max),
    );
    let x_end = points().map(|p| p.0).fold(100.0, f64::max);
    let x_hi = 10f64.powf(x_end.log10().ceil());
    let x_keys: Vec<f64> = std::iter::once(2.0)
        .chain((1..=6).map(|e| 10f64.powi(e)))
        .filter(|&x| x <= x_hi * (1.0 + 1e-9))
        .collect();
    let axes = LineAxes {
        label: &format!("percentile spectrum of {phase}"),
        // A little room right of the last tick, whose label is the widest.
        x: (1.0, x_hi * 2.0),
        x_log: true,
        x_keys,
        x_fmt: &percent_label,
        x_desc: "percentile (log scale of 1 / (1 − q))",
        y_desc: "latency (log)",
        y: YScale::Log {
            range: y_range,
            keys: y_keys,
            fmt: &latency_label,
        },
        size: (W, H),
    };
    line_chart(&axes, &lines)
}

/// These figures of a workload: `FIGURES.figures(model, workload)` (none when no repeat stored
/// a histogram).
pub(super) const FIGURES: super::caption::PhaseFigures<PerVariant> = super::caption::PhaseFigures {
    heading: "Percentile spectra",
    class: "chart-spectrum",
    caption: |p| {
        format!("{p}: latency at each percentile (log scales; the percentile axis is 1 / (1 − q), so 90 %, 99 %, 99.9 % are equally spaced), one line per filesystem from its measured repeats' histograms added, each repeat a thin line under it; the right end of a line is its largest latency.")
    },
    groups: grouped,
    svg,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::escape::html as esc;
    use crate::metric::{bins_quantile, LatencyHistogram};
    use crate::store::SampleStatus;

    #[test]
    fn a_spectrum_is_the_steps_of_the_buckets_up_to_the_largest_latency() {
        // 200 operations: 198 at 1 µs, 2 at 50 µs.
        let s = spectrum(&[(1_000, 198), (50_000, 2)]);
        assert_eq!(s, [(1.0, 1.0), (100.0, 1.0), (100.0, 50.0), (200.0, 50.0)]);
        assert!(spectrum(&[]).is_empty() && spectrum(&[(5, 0)]).is_empty());
        // Many operations: the right end stops at 99.9999 %.
        let s = spectrum(&[(1_000, 10_000_000), (2_000, 1)]);
        assert_eq!(s.last(), Some(&(MAX_X, 2.0)));
        assert_eq!(percent_label(2.0), "50 %");
        assert_eq!(percent_label(10.0), "90 %");
        assert_eq!(percent_label(1e3), "99.9 %");
        assert_eq!(percent_label(1e4), "99.99 %");
    }

    #[test]
    fn repeats_merge_by_adding_bins_not_by_averaging_their_percentiles() {
        let a = vec![(1_000, 98), (50_000, 2)];
        let b = vec![(1_000, 100)];
        let m = merged(&[a.clone(), b.clone()]);
        assert_eq!(m, [(1_000, 198), (50_000, 2)]);
        // p99 of all 200 operations is 1 µs; the repeats' p99 are 50 µs and 1 µs, whose mean
        // (25.5 µs) is no latency any operation had.
        assert_eq!(bins_quantile(&m, 0.99), Some(1_000));
        let mean = (bins_quantile(&a, 0.99).unwrap() + bins_quantile(&b, 0.99).unwrap()) as f64 / 2.0;
        assert_eq!(mean, 25_500.0);
        // The merged spectrum is 1 µs up to 99 % (x = 100) and never 25.5 µs.
        let s = spectrum(&m);
        assert!(s.contains(&(100.0, 1.0)) && s.iter().all(|p| p.1 != 25.5), "{s:?}");
    }

    #[test]
    fn a_figure_per_phase_with_a_merged_line_per_filesystem_and_a_thin_line_per_repeat() {
        let data = super::super::fixture::session_data();
        let mut m = super::super::build::build(&data, 0, 0.95);
        let wl = m.cases[0].workload.clone();
        let measured: Vec<(usize, String)> = m
            .samples
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let c = m
                    .cases
                    .iter()
                    .find(|c| c.case_id == s.sample.case_id && c.workload == wl)?;
                (!s.sample.is_warmup && s.sample.status == SampleStatus::Ok).then(|| (i, c.variant.clone()))
            })
            .collect();
        for (k, (i, variant)) in measured.iter().enumerate() {
            let slow = if variant == "ext4" { 1 } else { 10 };
            m.samples[*i].sample.histograms.push(LatencyHistogram {
                phase: "rndrd".into(),
                bins: vec![(1_000 * slow, 990), (100_000 + k as u64, 10)],
            });
        }
        // A warm-up's histogram never shows.
        let warm = m.samples.iter().position(|s| s.sample.is_warmup).expect("a warm-up");
        m.samples[warm].sample.histograms.push(LatencyHistogram {
            phase: "warm_only".into(),
            bins: vec![(1_000, 1)],
        });
        let figs = FIGURES.figures(&m, &wl);
        assert_eq!(figs.len(), 1, "{figs:?}");
        let out = &figs[0].1;
        assert!(out.contains("class=\"chart chart-spectrum\"") && out.contains("data-phase=\"rndrd\""));
        let mut per: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, v) in &measured {
            *per.entry(v.as_str()).or_default() += 1;
        }
        assert_eq!(out.matches("class=\"series\"").count(), per.len(), "{out}");
        let thin: usize = per.values().filter(|&&n| n > 1).sum();
        assert_eq!(out.matches("class=\"series-repeat\"").count(), thin, "{out}");
        assert!(thin >= 2, "the fixture has repeats");
        // Percent labels on x, time units on y; no dots on these long lines.
        for label in ["50 %", "90 %", "99 %", "99.9 %"] {
            assert!(out.lines().any(|l| l.trim() == label), "{label}: {out}");
        }
        assert!(out.contains("µs") && !out.contains("<circle"), "{out}");
        // ext4's median (1 µs) lies below (larger pixel y) the other filesystem's (10 µs).
        let other = per.keys().find(|v| **v != "ext4").expect("two filesystems");
        let fast = super::super::charts::series_points(out, "ext4");
        let slow = super::super::charts::series_points(out, &esc(other));
        assert!(fast[0].1 > slow[0].1, "{fast:?} {slow:?}");
        // And the page puts each phase's histogram beside its spectrum.
        let html = super::super::render(&m, super::super::Format::Html, &[]);
        let h = html.find("class=\"chart chart-histogram\"").expect("histogram");
        let s = html.find("class=\"chart chart-spectrum\"").expect("spectrum");
        assert!(h < s && html.contains("<h3>Latency histograms and percentile spectra</h3>"));
    }
}
