//! Latency window by window (issue 29): the percentiles of every window of a time-based phase
//! (`latency_windows`, schema 12: one compact histogram per window, 1 s by default), per
//! filesystem, as [`LatencyOverTime`] in the report model (and so in the JSON export), and in
//! the HTML report one figure per phase beside its throughput per second: four stacked panels,
//! p50, p99, p99.9 and max against seconds since the phase began, a line per filesystem.
//!
//! Invariants: only measured repeats count (warm-ups and failed repeats are left out); a
//! filesystem's window `i` is the sum of its repeats' window-`i` histograms, bucket by bucket
//! (`metric::add_bins`), and its percentiles are taken from that sum (`metric::bins_quantile`),
//! never averaged across repeats: the p99 of a window is a latency that 1 % of that window's
//! operations, over all repeats, exceeded. The last, usually partial window of every repeat
//! is left out, as the throughput chart leaves out the last second; a window in which no
//! operation completed has no percentiles (`null`, no point). Latencies are the window
//! buckets' values (each at most 6.25 % wide), in µs. Colours are the variants'; the SVG is
//! drawn by `charts::line_panels` (plotters), every text escaped.

use super::charts::{latency_label, line_panels, log_axis, Line, LineAxes, LineStyle, YScale};
use super::ReportModel;
use crate::metric::{add_bins, bins_quantile};
use serde::{Deserialize, Serialize};

/// The percentiles drawn and exported for every window: (panel title, quantile).
pub const QUANTILES: [(&str, f64); 4] = [("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999), ("max", 1.0)];

/// Size of one panel in pixels (four panels per figure).
const W: u32 = 720;
const PANEL_H: u32 = 140;

/// One filesystem's latency over the windows of one phase: its measured repeats' window
/// histograms added window by window, and the percentiles of each sum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyOverTime {
    /// The workload.
    pub workload: String,
    /// The report row of the phase: `PHASE`, or `PHASE@rankN` for rank N's own windows.
    pub phase: String,
    /// The filesystem variant.
    pub variant: String,
    /// Length of one window, in milliseconds.
    pub window_ms: u64,
    /// How many measured repeats were added.
    pub repeats: u32,
    /// Every full window from the phase's start, in order.
    pub windows: Vec<WindowLatency>,
}

/// The latency of one window, all added repeats together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowLatency {
    /// Start of the window, in seconds since the phase began.
    pub start_s: f64,
    /// Operations completed in the window, over the added repeats.
    pub ops: u64,
    /// Median latency, in µs (`None`: no operation completed in the window).
    pub p50_us: Option<f64>,
    /// 99th percentile, in µs.
    pub p99_us: Option<f64>,
    /// 99.9th percentile, in µs.
    pub p99_9_us: Option<f64>,
    /// The largest latency, in µs (its bucket's value).
    pub max_us: Option<f64>,
}

impl WindowLatency {
    /// The percentile of [`QUANTILES`] entry `k`, in µs.
    fn quantile(&self, k: usize) -> Option<f64> {
        [self.p50_us, self.p99_us, self.p99_9_us, self.max_us]
            .get(k)
            .copied()
            .flatten()
    }
}

/// The windows of one window length of one row and variant: `(bins per window, repeats)`.
type Sums = (Vec<Vec<(u64, u64)>>, u32);

/// Every (workload, phase row, variant, window length) of `model`'s measured repeats that
/// stored windows, in workload order, then the order phases first appear, then column order.
pub fn over_time(model: &ReportModel) -> Vec<LatencyOverTime> {
    let mut out = Vec::new();
    for table in &model.workloads {
        let wl = table.workload.as_str();
        let mut rows: Vec<String> = Vec::new();
        let mut groups: Vec<((usize, usize, u64), Sums)> = Vec::new();
        for (v, sample) in super::histogram::measured(model, wl) {
            for w in &sample.windows {
                let full = &w.bins[..w.bins.len().saturating_sub(1)];
                if full.is_empty() || w.window_ms == 0 {
                    continue;
                }
                let row = w.row();
                let r = match rows.iter().position(|p| *p == row) {
                    Some(r) => r,
                    None => {
                        rows.push(row.into_owned());
                        rows.len() - 1
                    }
                };
                let key = (r, v, w.window_ms);
                let i = match groups.iter().position(|(k, _)| *k == key) {
                    Some(i) => i,
                    None => {
                        groups.push((key, (Vec::new(), 0)));
                        groups.len() - 1
                    }
                };
                let (sums, repeats) = &mut groups[i].1;
                if sums.len() < full.len() {
                    sums.resize(full.len(), Vec::new());
                }
                for (sum, bins) in sums.iter_mut().zip(full) {
                    add_bins(sum, bins);
                }
                *repeats += 1;
            }
        }
        groups.sort_by_key(|(k, _)| *k);
        for ((r, v, window_ms), (sums, repeats)) in groups {
            out.push(LatencyOverTime {
                workload: wl.to_string(),
                phase: rows[r].clone(),
                variant: model.variants.get(v).cloned().unwrap_or_default(),
                window_ms,
                repeats,
                windows: sums
                    .iter()
                    .enumerate()
                    .map(|(i, bins)| window_latency(i, window_ms, bins))
                    .collect(),
            });
        }
    }
    out
}

/// Window `i` of `window_ms` from its (summed) bins.
fn window_latency(i: usize, window_ms: u64, bins: &[(u64, u64)]) -> WindowLatency {
    let us = |q: f64| bins_quantile(bins, q).map(|ns| ns as f64 / 1000.0);
    WindowLatency {
        start_s: i as f64 * window_ms as f64 / 1000.0,
        ops: bins.iter().map(|b| b.1).sum(),
        p50_us: us(QUANTILES[0].1),
        p99_us: us(QUANTILES[1].1),
        p99_9_us: us(QUANTILES[2].1),
        max_us: us(QUANTILES[3].1),
    }
}

/// Each variant's index and its windows of one phase row.
type PerVariant = Vec<(usize, LatencyOverTime)>;

/// Per phase row of `workload` (first-seen order), its [`PerVariant`].
type Grouped = Vec<(String, PerVariant)>;

fn grouped(model: &ReportModel, workload: &str) -> Grouped {
    let mut out: Grouped = Vec::new();
    for l in model.latency_windows.iter().filter(|l| l.workload == workload) {
        let v = model.variants.iter().position(|n| *n == l.variant).unwrap_or(0);
        super::histogram::phase_entry(&mut out, &l.phase).push((v, l.clone()));
    }
    out
}

/// One SVG of `phase`: a panel per entry of [`QUANTILES`], a line per variant, the
/// percentile (µs, log axis) against seconds since the phase began (each window at its
/// middle).
fn svg(phase: &str, per_variant: &PerVariant, _variants: &[String]) -> Result<String, super::charts::ChartError> {
    let end_s = per_variant
        .iter()
        .map(|(_, l)| l.windows.len() as f64 * l.window_ms as f64 / 1000.0)
        .fold(0.0, f64::max)
        .max(1.0);
    let x_keys = super::charts::ticks(0.0, end_s, false);
    let x_fmt = |x: f64| super::charts::tick_label(x);
    let panels: Vec<(String, Vec<Line>)> = QUANTILES
        .iter()
        .enumerate()
        .map(|(k, (name, _))| {
            let lines = per_variant
                .iter()
                .map(|(v, l)| {
                    let half = l.window_ms as f64 / 2000.0;
                    Line {
                        index: *v,
                        name: l.variant.clone(),
                        points: l
                            .windows
                            .iter()
                            .filter_map(|w| Some((w.start_s + half, w.quantile(k)?.max(1e-3))))
                            .collect(),
                        style: LineStyle::Dots,
                    }
                })
                .collect();
            (name.to_string(), lines)
        })
        .collect();
    let ranges: Vec<((f64, f64), Vec<f64>)> = panels
        .iter()
        .map(|(_, lines)| {
            let ys = || lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
            log_axis(ys().fold(f64::INFINITY, f64::min), ys().fold(0.0, f64::max))
        })
        .collect();
    let last = panels.len().saturating_sub(1);
    let axes: Vec<LineAxes> = panels
        .iter()
        .zip(ranges)
        .enumerate()
        .map(|(k, ((name, _), (range, keys)))| LineAxes {
            label: name,
            x: (0.0, end_s),
            x_log: false,
            x_keys: x_keys.clone(),
            x_fmt: &x_fmt,
            // The panels share their x axis: described once, under the last.
            x_desc: if k == last { "seconds since the phase began" } else { "" },
            y_desc: "latency (log)",
            y: YScale::Log {
                range,
                keys,
                fmt: &latency_label,
            },
            size: (W, PANEL_H),
        })
        .collect();
    let stacked: Vec<(&LineAxes, &[Line])> = axes.iter().zip(&panels).map(|(a, (_, l))| (a, l.as_slice())).collect();
    line_panels(&format!("latency per window of {phase}"), &stacked)
}

/// These figures of a workload: `FIGURES.figures(model, workload)` (none when no repeat stored
/// windows).
pub(super) const FIGURES: super::caption::PhaseFigures<PerVariant> = super::caption::PhaseFigures {
    heading: "Latency per window",
    class: "chart-latency-windows",
    caption: |p| {
        format!("{p}: latency percentiles of the operations completed in each window of the phase (p50, p99, p99.9 and the largest; log scale), one line per filesystem, its measured repeats' window histograms added before each percentile is taken (never averaged); the last, partial window left out.")
    },
    groups: grouped,
    svg,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::escape::html as esc;
    use crate::metric::LatencyWindows;
    use crate::store::{SampleStatus, SessionData};

    /// The fixture session with `windows(variant, measured repeat k)` added to the measured
    /// repeats of its first workload (and a window of 9 s latency to every warm-up), rebuilt.
    fn model_with(windows: impl Fn(&str, usize) -> Vec<Vec<(u64, u64)>>) -> ReportModel {
        let mut data: SessionData = super::super::fixture::session_data();
        let wl = data.cases[0].workload.clone();
        let mut seen: Vec<(String, usize)> = Vec::new();
        for s in &mut data.samples {
            let Some(case) = data
                .cases
                .iter()
                .find(|c| c.case_id == s.sample.case_id && c.workload == wl)
            else {
                continue;
            };
            let bins = if s.sample.is_warmup {
                vec![vec![(9_000_000_000, 1)], vec![]]
            } else if s.sample.status == SampleStatus::Ok {
                let k = seen.iter().filter(|(v, _)| *v == case.variant).count();
                seen.push((case.variant.clone(), k));
                windows(&case.variant, k)
            } else {
                continue;
            };
            s.sample.windows.push(LatencyWindows {
                phase: "rndrd".into(),
                rank: None,
                window_ms: 1000,
                bins,
            });
        }
        super::super::build::build(&data, 0, 0.95)
    }

    #[test]
    fn window_percentiles_come_from_the_repeats_bins_added_not_from_averaged_percentiles() {
        // Every measured repeat: a quiet window, a window where the first repeat of each
        // filesystem had two slow operations out of 100 and the others none, and a partial one.
        let quiet = vec![(1_000, 100)];
        let spiky = vec![(1_000, 98), (50_000, 2)];
        let m = model_with(|_, k| {
            let second = if k == 0 { spiky.clone() } else { quiet.clone() };
            vec![quiet.clone(), second, vec![(7_000_000, 1)]]
        });
        assert!(!m.latency_windows.is_empty());
        for l in &m.latency_windows {
            assert_eq!((l.phase.as_str(), l.window_ms), ("rndrd", 1000));
            assert!(l.repeats >= 2, "{l:?}");
            // The partial window is left out, and the warm-up's 9 s never shows.
            assert_eq!(l.windows.len(), 2);
            assert!(l.windows.iter().all(|w| w.max_us < Some(1e6)));
            let w = &l.windows[1];
            assert_eq!((w.start_s, w.ops), (1.0, 100 * u64::from(l.repeats)));
            // Added: 2 slow operations out of 100 × repeats, under 1 %: p99 is 1 µs. The mean
            // of the repeats' own p99 (50 µs once, 1 µs otherwise) would be far above it.
            assert_eq!(w.p99_us, Some(1.0));
            let mean_of_p99 = (50.0 + f64::from(l.repeats - 1)) / f64::from(l.repeats);
            assert!(mean_of_p99 > 1.0 + 1e-9);
            assert_eq!((w.p50_us, w.max_us), (Some(1.0), Some(50.0)));
            // With 100 × repeats operations, p99.9 lies among the two slow ones.
            let slow_share = 2.0 / (100.0 * f64::from(l.repeats));
            assert_eq!(w.p99_9_us, Some(if slow_share > 0.001 { 50.0 } else { 1.0 }));
        }
    }

    #[test]
    fn one_figure_per_phase_with_four_panels_and_a_line_per_filesystem_in_each() {
        let m = model_with(|variant, _| {
            let slow = if variant == "ext4" { 1 } else { 4 };
            vec![vec![(1_000 * slow, 99), (80_000, 1)], vec![(2_000 * slow, 50)], vec![]]
        });
        let wl = m.cases[0].workload.clone();
        let figs = FIGURES.figures(&m, &wl);
        assert_eq!(figs.len(), 1, "one figure for the one phase");
        let out = &figs[0].1;
        assert!(out.contains("class=\"chart chart-latency-windows\""), "{out}");
        assert!(out.contains("data-phase=\"rndrd\""));
        let variants: Vec<&str> = m.latency_windows.iter().map(|l| l.variant.as_str()).collect();
        assert_eq!(out.matches("class=\"series\"").count(), 4 * variants.len(), "{out}");
        for (name, _) in QUANTILES {
            assert_eq!(
                out.matches(&format!("data-panel=\"{}\"", esc(name))).count(),
                variants.len(),
                "{name}"
            );
        }
        // In the p50 panel ext4's line lies below (larger pixel y) the slower filesystem's.
        let other = variants.iter().find(|v| **v != "ext4").expect("two filesystems");
        let at = |v: &str| {
            super::super::charts::polyline_points(
                out,
                &format!("class=\"series\" data-variant=\"{}\" data-panel=\"p50\"", esc(v)),
            )
        };
        let (fast, slow) = (at("ext4"), at(other));
        assert_eq!((fast.len(), slow.len()), (2, 2), "a point per full window");
        assert!(fast.iter().zip(&slow).all(|(f, s)| f.1 > s.1), "{fast:?} {slow:?}");
        // The latency axis is labelled in time units; no other data in the fixture, no figure.
        assert!(out.contains("µs"), "{out}");
        assert!(FIGURES.figures(&m, "no such workload").is_empty());
    }

    #[test]
    fn the_json_export_carries_the_window_percentiles_only_when_there_are_some() {
        let m = model_with(|_, _| vec![vec![(1_000, 3)], vec![], vec![(2_000, 1)]]);
        let json = super::super::render(&m, super::super::Format::Json, &[]);
        let v: serde_json::Value = serde_json::from_str(&json).expect("json");
        let first = &v["latency_windows"][0];
        assert_eq!(first["phase"], "rndrd");
        assert_eq!(first["windows"][0]["p99_us"], 1.0);
        // A window without operations has no percentiles.
        assert!(first["windows"][1]["p99_us"].is_null(), "{first}");
        assert_eq!(first["windows"][1]["ops"], 0);
        let back: ReportModel = serde_json::from_str(&json).expect("round trip");
        assert_eq!(back.latency_windows, m.latency_windows);
        let plain = super::super::build::build(&super::super::fixture::session_data(), 0, 0.95);
        let json = super::super::render(&plain, super::super::Format::Json, &[]);
        assert!(!json.contains("latency_windows"), "absent without windows");
    }
}
