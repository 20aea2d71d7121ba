//! SVG charts drawn with plotters' SVG backend (no hand-assembled SVG): grouped bars with
//! confidence-interval whiskers, per-repeat series, the forest plot of `fsbench compare`, and
//! line charts with a line per variant ([`line_chart`]: the latency histograms on a log-x axis,
//! the per-second throughput, the percentile spectra on log-log axes; [`line_panels`] stacks
//! several, as the latency percentiles per window do).
//!
//! Every function returns one `<svg>` element as a string, ready to inline in HTML. Colours come
//! from [`PALETTE`] (Okabe & Ito's colour-blind-safe set) by variant index, so a variant has the
//! same colour in every chart of a page and in its HTML legend.
//!
//! Bars carry data attributes for readers and tests: plotters writes every rectangle as a bare
//! `<rect …/>`, so bars are drawn with the one opacity nothing else uses ([`BAR_ALPHA`]), and
//! after drawing, the n-th rectangle with that opacity receives the n-th bar's
//! `class="bar" data-variant="…" data-phase="…" data-metric="…"` and a `<title>` tooltip
//! (draw order is plotters' write order). The count is checked, so a mismatch is an error, not a
//! mislabelled bar. Attribute values are HTML-escaped. Lines of a [`line_chart`] are found the
//! same way by [`LINE_ALPHA`] and get `class="series" data-variant="…"` and a `<title>`.
//!
//! Axes: categories sit at `i + 0.5` on an `f64` axis with explicit key points; a panel whose
//! values span more than [`LOG_SPAN`] is drawn on a log₁₀ axis (values transformed here, ticks
//! at 1-2-5 steps, labels printed back in the metric's unit) and says "log scale".

use super::escape::html as esc;
use super::number;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Display;
use std::ops::Range;

/// Colour-blind-safe palette (Okabe & Ito 2008), as `#rrggbb` components; variant `i` uses
/// entry `i % 8`.
pub const PALETTE: [(u8, u8, u8); 8] = [
    (0, 114, 178),
    (230, 159, 0),
    (0, 158, 115),
    (204, 121, 167),
    (86, 180, 233),
    (213, 94, 0),
    (0, 0, 0),
    (240, 228, 66),
];

/// Opacity of bar rectangles, which no other element uses (see the module docs).
pub const BAR_ALPHA: f64 = 0.86;

/// Ratio of largest to smallest positive value above which a bar panel uses a log axis.
pub const LOG_SPAN: f64 = 50.0;

const FONT: &str = "sans-serif";

/// Drawing failed (plotters reported an error, or bars and rectangles did not match).
#[derive(Debug, thiserror::Error)]
#[error("chart: {0}")]
pub struct ChartError(String);

fn de<E: Display>(e: E) -> ChartError {
    ChartError(e.to_string())
}

/// Colour of variant `i`.
pub fn color(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

/// `#rrggbb` of variant `i`, for HTML legends.
pub fn css_color(i: usize) -> String {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// One bar: a mean and its confidence interval (same unit).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bar {
    /// Height.
    pub mean: f64,
    /// Interval, drawn as a whisker when present.
    pub ci: Option<(f64, f64)>,
}

/// A variant's place in a group that has no bar: why, shown as a grey placeholder.
#[derive(Clone, Debug, PartialEq)]
pub struct Missing {
    /// Short word drawn in the slot: `failed`, `unavailable`.
    pub word: String,
    /// The reason, in the placeholder's tooltip.
    pub reason: String,
}

/// What one variant has in one group.
#[derive(Clone, Debug, PartialEq)]
pub enum Slot {
    /// A measured value.
    Bar(Bar),
    /// No value, for a reason a reader must see (a marked, labelled empty slot).
    Missing(Missing),
    /// No value and nothing to say (e.g. the metric does not exist for this variant): a gap.
    Empty,
}

/// One panel of grouped bars: categories (phases) on x, one bar per variant in each group.
#[derive(Clone, Debug)]
pub struct Panel {
    /// Caption, e.g. "throughput (MiB/s) — higher is better".
    pub title: String,
    /// Metric name for the bars' `data-metric`.
    pub metric: String,
    /// Unit, the y axis description.
    pub unit: String,
    /// Category (phase) labels.
    pub categories: Vec<String>,
    /// `bars[category][variant]`.
    pub bars: Vec<Vec<Slot>>,
    /// The values the quantity can take, `(lowest, highest)` in its unit (e.g. `(0, 100)` for
    /// whole-system CPU %, `(0, ∞)` for times and rates). Whiskers are drawn clipped to it; see
    /// [`Panel::clipped`].
    pub bounds: (f64, f64),
}

impl Panel {
    /// Whether some interval reaches below the lower bound / above the upper bound, so its
    /// whisker is drawn clipped there (captions must say so).
    pub fn clipped(&self) -> (bool, bool) {
        let cis = || {
            self.bars.iter().flatten().filter_map(|s| match s {
                Slot::Bar(b) => b.ci,
                _ => None,
            })
        };
        (
            cis().any(|(l, _)| l < self.bounds.0),
            cis().any(|(_, h)| h > self.bounds.1),
        )
    }
}

/// Opacity of the grey placeholder of a [`Slot::Missing`], which no other element uses.
pub const MISSING_ALPHA: f64 = 0.55;

/// Stroke colour of CI whiskers (near-black, distinct from the axes' black so readers and tests
/// can find them).
pub const WHISKER: RGBColor = RGBColor(17, 17, 17);

/// Ticks 1-2-5 × 10ᵏ (log) or a "nice" step (linear) covering `[lo, hi]`.
pub(super) fn ticks(lo: f64, hi: f64, log: bool) -> Vec<f64> {
    if log {
        let mut out = Vec::new();
        let mut decade = 10f64.powf(lo.floor());
        while decade.log10() <= hi + 1e-9 && out.len() < 60 {
            for m in [1.0, 2.0, 5.0] {
                let v = (decade * m).log10();
                if v >= lo - 1e-9 && v <= hi + 1e-9 {
                    out.push(v);
                }
            }
            decade *= 10.0;
        }
        return out;
    }
    let span = hi - lo;
    if span <= 0.0 || !span.is_finite() {
        return vec![lo];
    }
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 7.0)
        .unwrap_or(10.0 * mag);
    let mut v = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while v <= hi + step * 1e-9 && out.len() < 20 {
        out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        v += step;
    }
    out
}

/// Tick label: the value in the metric's unit (`1.5k` style is avoided: units stay exact).
pub(super) fn tick_label(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e6 || v.abs() < 1e-3) {
        return format!("{v:.0e}");
    }
    let s = number::value(v);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Value axis of a panel: linear or log₁₀ of the values.
#[derive(Clone, Copy)]
struct Scale {
    log: bool,
}

impl Scale {
    fn fwd(self, v: f64) -> f64 {
        if self.log {
            v.max(1e-300).log10()
        } else {
            v
        }
    }
    fn back(self, v: f64) -> f64 {
        if self.log {
            10f64.powf(v)
        } else {
            v
        }
    }
}

/// Axis range and scale for bars of `means` (which start at zero) with interval ends `ends`.
/// The log axis is chosen on the means alone (whiskers below the axis are cut at its bottom),
/// so one wide interval cannot flatten a panel whose bars span decades.
fn bar_range(means: &[f64], ends: &[f64]) -> (Scale, f64, f64) {
    let finite = |xs: &[f64]| xs.iter().copied().filter(|v| v.is_finite()).collect::<Vec<f64>>();
    let (means, ends) = (finite(means), finite(ends));
    let max_mean = means.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min_mean = means.iter().copied().fold(f64::INFINITY, f64::min);
    let max = means.iter().chain(&ends).copied().fold(0.0_f64, f64::max);
    if !means.is_empty() && min_mean > 0.0 && max_mean / min_mean > LOG_SPAN {
        let s = Scale { log: true };
        return (s, (min_mean / 2.0).log10().floor(), (max * 1.5).log10());
    }
    let min = means.iter().chain(&ends).copied().fold(0.0_f64, f64::min);
    let hi = if max > 0.0 { max * 1.1 } else { 1.0 };
    let lo = if min < 0.0 { min * 1.1 } else { 0.0 };
    (Scale { log: false }, lo, hi)
}

/// What one bar or placeholder rectangle is, for its attributes.
struct BarTag {
    variant: String,
    phase: String,
    metric: String,
    tooltip: String,
    /// `Some(word)` for a [`Slot::Missing`] placeholder (class `bar-missing`, `data-missing`).
    missing: Option<String>,
}

/// Puts the attributes of `tags` on the rectangles drawn with [`BAR_ALPHA`] (bars) and
/// [`MISSING_ALPHA`] (placeholders), each kind in its own drawing order.
fn annotate_bars(svg: &str, tags: &[BarTag]) -> Result<String, ChartError> {
    let kind = |missing: bool| -> Vec<Marked> {
        tags.iter()
            .filter(|t| t.missing.is_some() == missing)
            .map(|tag| {
                let (class, extra) = match &tag.missing {
                    None => ("bar", String::new()),
                    Some(word) => ("bar-missing", format!(" data-missing=\"{}\"", esc(word))),
                };
                Marked {
                    attrs: format!(
                        "class=\"{class}\" data-variant=\"{}\" data-phase=\"{}\" data-metric=\"{}\"{extra}",
                        esc(&tag.variant),
                        esc(&tag.phase),
                        esc(&tag.metric)
                    ),
                    title: esc(&tag.tooltip),
                }
            })
            .collect()
    };
    annotate(
        svg,
        "rect",
        vec![
            (format!("opacity=\"{BAR_ALPHA}\""), kind(false)),
            (format!("opacity=\"{MISSING_ALPHA}\""), kind(true)),
        ],
    )
}

/// Attributes (escaped, without the leading space) and escaped `<title>` text given to one
/// drawn element.
struct Marked {
    attrs: String,
    title: String,
}

/// Gives the n-th `<element …/>` whose text contains a kind's marker (an opacity nothing else
/// in the chart uses) that kind's n-th [`Marked`] (plotters writes elements in drawing order).
/// Counts must match exactly, so a mismatch is an error, not a mislabelled element.
fn annotate(svg: &str, element: &str, kinds: Vec<(String, Vec<Marked>)>) -> Result<String, ChartError> {
    let open = format!("<{element} ");
    let mut kinds: Vec<(String, std::vec::IntoIter<Marked>)> =
        kinds.into_iter().map(|(m, v)| (m, v.into_iter())).collect();
    let mut out = String::with_capacity(svg.len() * 2);
    let mut rest = svg;
    while let Some(start) = rest.find(&open) {
        let Some(len) = rest[start..].find("/>") else { break };
        let text = &rest[start..start + len];
        out.push_str(&rest[..start]);
        match kinds.iter_mut().find(|(marker, _)| text.contains(marker.as_str())) {
            Some((_, tags)) => {
                let tag = tags
                    .next()
                    .ok_or_else(|| ChartError(format!("more marked <{element}> elements than tags")))?;
                out.push_str(&format!(
                    "<{element} {} {}><title>{}</title></{element}>",
                    tag.attrs,
                    &text[open.len()..],
                    tag.title
                ));
            }
            None => {
                out.push_str(text);
                out.push_str("/>");
            }
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    if kinds.iter_mut().any(|(_, tags)| tags.next().is_some()) {
        return Err(ChartError(format!("fewer <{element}> elements than tags")));
    }
    Ok(out)
}

/// A linear `f64` axis whose ticks are exactly `keys` (categories at `i + 0.5`, or values we
/// chose); labels always come from a formatter of ours.
#[derive(Clone, Debug)]
struct Axis {
    lo: f64,
    hi: f64,
    keys: Vec<f64>,
}

impl Axis {
    fn new(lo: f64, hi: f64, keys: Vec<f64>) -> Axis {
        let hi = if hi > lo { hi } else { lo + 1.0 };
        Axis { lo, hi, keys }
    }
}

impl Ranged for Axis {
    type ValueType = f64;
    type FormatOption = DefaultFormatting;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let frac = (value - self.lo) / (self.hi - self.lo);
        let px = limit.0 as f64 + frac * (limit.1 - limit.0) as f64;
        px.round().clamp(-1e6, 1e6) as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.keys.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// Height in pixels of one bar panel.
const PANEL_H: u32 = 300;

/// Grouped bars, one panel per entry of `panels`, stacked vertically, `width` pixels wide.
/// `variants` names the bars of each group (the `bars[c][v]` index); colours by index.
pub fn bar_chart(panels: &[Panel], variants: &[String], width: u32) -> Result<String, ChartError> {
    let mut buf = String::new();
    let mut tags = Vec::new();
    {
        let height = PANEL_H * panels.len().max(1) as u32;
        let root = SVGBackend::with_string(&mut buf, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(de)?;
        let areas = root.split_evenly((panels.len().max(1), 1));
        for (area, panel) in areas.iter().zip(panels) {
            draw_bar_panel(area, panel, variants, &mut tags)?;
        }
        root.present().map_err(de)?;
    }
    annotate_bars(&buf, &tags)
}

fn draw_bar_panel(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    panel: &Panel,
    variants: &[String],
    tags: &mut Vec<BarTag>,
) -> Result<(), ChartError> {
    let (floor, ceiling) = panel.bounds;
    let clip = |v: f64| v.max(floor).min(ceiling);
    let bars = || {
        panel.bars.iter().flatten().filter_map(|s| match s {
            Slot::Bar(b) => Some(b),
            _ => None,
        })
    };
    let means: Vec<f64> = bars().map(|b| b.mean).collect();
    let ends: Vec<f64> = bars()
        .filter_map(|b| b.ci)
        .flat_map(|(l, h)| [clip(l), clip(h)])
        .collect();
    let (scale, lo, hi) = bar_range(&means, &ends);
    let title = if scale.log {
        format!("{} (log scale)", panel.title)
    } else {
        panel.title.clone()
    };
    let mut chart = bar_panel_axes(area, panel, &title, scale, (lo, hi))?;

    // Slots only for the variants this panel has a bar or a placeholder for, so groups stay
    // centred; colours still follow the variant's index.
    let present: Vec<usize> = (0..variants.len())
        .filter(|v| {
            panel
                .bars
                .iter()
                .any(|g| matches!(g.get(*v), Some(Slot::Bar(_) | Slot::Missing(_))))
        })
        .collect();
    let slot = (0.8 / present.len().max(1) as f64).min(0.2);
    let group = slot * present.len() as f64;
    let mut rects = Vec::new();
    let mut placeholders = Vec::new();
    let mut labels = Vec::new();
    let mut whiskers = Vec::new();
    let mut missing_tags = Vec::new();
    let whisker = WHISKER.stroke_width(1);
    for (c, group_bars) in panel.bars.iter().enumerate() {
        for (v, item) in group_bars.iter().enumerate() {
            let pos = present.iter().position(|p| *p == v).unwrap_or(0);
            let x0 = c as f64 + 0.5 - group / 2.0 + pos as f64 * slot;
            let x1 = x0 + slot * 0.9;
            let xm = (x0 + x1) / 2.0;
            let variant = variants.get(v).map(String::as_str).unwrap_or("");
            let phase = panel.categories.get(c).map(String::as_str).unwrap_or("");
            let bar = match item {
                Slot::Bar(bar) => bar,
                Slot::Empty => continue,
                Slot::Missing(m) => {
                    // A grey block over the lower third of the axis with the word written up it.
                    let top = lo + (hi - lo) * 0.36;
                    placeholders.push(Rectangle::new(
                        [(x0, lo), (x1, top)],
                        RGBColor(200, 200, 200).mix(MISSING_ALPHA).filled(),
                    ));
                    let style = TextStyle::from((FONT, 12).into_font())
                        .transform(FontTransform::Rotate270)
                        .color(&RGBColor(40, 40, 40))
                        .pos(Pos::new(HPos::Left, VPos::Center));
                    labels.push(Text::new(m.word.clone(), (xm, lo + (hi - lo) * 0.02), style));
                    missing_tags.push(BarTag {
                        variant: variant.to_string(),
                        phase: phase.to_string(),
                        metric: panel.metric.clone(),
                        tooltip: format!("{variant} · {phase}: {}: {}", m.word, m.reason),
                        missing: Some(m.word.clone()),
                    });
                    continue;
                }
            };
            let top = scale.fwd(bar.mean).clamp(lo, hi);
            rects.push(Rectangle::new([(x0, lo), (x1, top)], color(v).mix(BAR_ALPHA).filled()));
            let ci = bar.ci.map(|ci| ci_tooltip(ci, panel.bounds));
            tags.push(BarTag {
                variant: variant.to_string(),
                phase: phase.to_string(),
                metric: panel.metric.clone(),
                tooltip: format!(
                    "{variant} · {phase}: {} {}{}",
                    number::value(bar.mean),
                    panel.unit,
                    ci.unwrap_or_default()
                ),
                missing: None,
            });
            if let Some((l, h)) = bar.ci {
                let cap = slot * 0.2;
                // A clipped end gets no cap: the interval goes on past what the quantity can be.
                let (cap_l, cap_h) = (l >= floor, h <= ceiling);
                let (l, h) = (scale.fwd(clip(l)).clamp(lo, hi), scale.fwd(clip(h)).clamp(lo, hi));
                whiskers.push(PathElement::new(vec![(xm, l), (xm, h)], whisker));
                for (capped, y) in [(cap_l, l), (cap_h, h)] {
                    if capped {
                        whiskers.push(PathElement::new(vec![(xm - cap, y), (xm + cap, y)], whisker));
                    }
                }
            }
        }
    }
    tags.append(&mut missing_tags);
    chart.draw_series(placeholders).map_err(de)?;
    chart.draw_series(labels).map_err(de)?;
    chart.draw_series(rects).map_err(de)?;
    chart.draw_series(whiskers).map_err(de)?;
    Ok(())
}

/// The axes of one bar panel: a category per group on x, `lo..hi` on y (in `scale`), the
/// panel's unit as the y description, `title` as the caption.
fn bar_panel_axes<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    panel: &Panel,
    title: &str,
    scale: Scale,
    (lo, hi): (f64, f64),
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<Axis, Axis>>, ChartError> {
    let ncat = panel.categories.len().max(1);
    let x_keys: Vec<f64> = (0..ncat).map(|i| i as f64 + 0.5).collect();
    let x = Axis::new(0.0, ncat as f64, x_keys);
    let y = Axis::new(lo, hi, ticks(lo, hi, scale.log));
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 17))
        .margin(10)
        .margin_right(20)
        .x_label_area_size(34)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)
        .map_err(de)?;
    let categories = &panel.categories;
    let x_fmt = |v: &f64| -> String {
        let i = (*v - 0.5).round();
        if i >= 0.0 {
            categories.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let y_fmt = |v: &f64| tick_label(scale.back(*v));
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .y_desc(panel.unit.as_str())
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 13))
        .draw()
        .map_err(de)?;
    Ok(chart)
}

/// The tooltip's words for a bar's 95 % interval `(l, h)`, saying where its whisker is clipped
/// at the panel's `(floor, ceiling)`.
fn ci_tooltip((l, h): (f64, f64), (floor, ceiling): (f64, f64)) -> String {
    let cut = match (l < floor, h > ceiling) {
        (false, false) => String::new(),
        (true, false) => format!("; whisker clipped at {}", number::value(floor)),
        (false, true) => format!("; whisker clipped at {}", number::value(ceiling)),
        (true, true) => format!(
            "; whisker clipped at {} and {}",
            number::value(floor),
            number::value(ceiling)
        ),
    };
    format!(", 95 % CI {} – {}{cut}", number::value(l), number::value(h))
}

/// The y range of a chart of values from `lo` to `hi`: 12 % of the span added at each end (10 %
/// of the value when they are equal), never below 0 for values that are not; `0..1` when there
/// are no finite values.
pub fn padded_range(lo: f64, hi: f64) -> (f64, f64) {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    let pad = if hi > lo {
        (hi - lo) * 0.12
    } else {
        hi.abs().max(1.0) * 0.1
    };
    (if lo >= 0.0 { (lo - pad).max(0.0) } else { lo - pad }, hi + pad)
}

/// Opacity of the lines of a [`line_chart`], which no other element of it uses (see [`annotate`]).
pub const LINE_ALPHA: f64 = 0.9;

/// Opacity of the thin lines of a [`line_chart`] ([`LineStyle::Thin`], one repeat of a
/// variant), which nothing else uses either.
pub const THIN_ALPHA: f64 = 0.35;

/// How a [`Line`] is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineStyle {
    /// 2 px in the variant's colour with a dot on every point (`class="series"`).
    Dots,
    /// 2 px in the variant's colour, no dots (`class="series"`): a line of many points.
    Plain,
    /// 1 px, faint ([`THIN_ALPHA`]), no dots (`class="series-repeat"`): one repeat under its
    /// variant's merged line.
    Thin,
}

/// One variant's line of a [`line_chart`].
#[derive(Clone, Debug)]
pub struct Line {
    /// Colour index (the variant's column).
    pub index: usize,
    /// The variant's name: `data-variant` of the line and its hover title.
    pub name: String,
    /// Points in data units, in x order.
    pub points: Vec<(f64, f64)>,
    /// How it is drawn.
    pub style: LineStyle,
}

/// The y axis of a [`line_chart`].
pub enum YScale<'a> {
    /// Linear, from 0 to just above the largest point, ticks at "nice" steps.
    Linear,
    /// Logarithmic over `range` (data units, both ends > 0), ticks at `keys` labelled by `fmt`.
    Log {
        /// Bottom and top of the axis.
        range: (f64, f64),
        /// Ticks, in data units.
        keys: Vec<f64>,
        /// Label of a tick.
        fmt: &'a dyn Fn(f64) -> String,
    },
}

/// Axes and size of a [`line_chart`] (or of one panel of [`line_panels`]).
pub struct LineAxes<'a> {
    /// `aria-label` of the `<svg>` (for [`line_panels`], the title of the panel above it,
    /// also its lines' `data-panel`; empty: no title).
    pub label: &'a str,
    /// x range in data units; on a log₁₀ axis when `x_log` (then both ends must be > 0).
    pub x: (f64, f64),
    /// Whether the x axis is logarithmic.
    pub x_log: bool,
    /// x ticks, in data units.
    pub x_keys: Vec<f64>,
    /// Label of an x tick.
    pub x_fmt: &'a dyn Fn(f64) -> String,
    /// Description under the x axis (empty: none, and a narrower label area).
    pub x_desc: &'a str,
    /// Description of the y axis.
    pub y_desc: &'a str,
    /// The y axis.
    pub y: YScale<'a>,
    /// Size in pixels.
    pub size: (u32, u32),
}

/// A line chart (the latency histograms, the per-second throughput, the percentile spectra):
/// one line per variant (or repeat) in its colour, each line's `<polyline>` with
/// `class="series"` (or `series-repeat` for [`LineStyle::Thin`]), `data-variant` and a
/// `<title>` (found by [`LINE_ALPHA`] and [`THIN_ALPHA`], as bars are by [`BAR_ALPHA`]).
pub fn line_chart(axes: &LineAxes, lines: &[Line]) -> Result<String, ChartError> {
    line_svg(axes.label, &[(axes, lines)], false)
}

/// Panels of [`line_chart`]s stacked in one `<svg>` (small multiples with the same x axis: the
/// latency percentiles per window), `label` its `aria-label`; each panel is titled by its
/// `axes.label`, and its lines carry `data-panel` with that title. The SVG is as wide as the
/// widest panel and as high as the panels together.
pub fn line_panels(label: &str, panels: &[(&LineAxes, &[Line])]) -> Result<String, ChartError> {
    line_svg(label, panels, true)
}

fn line_svg(label: &str, panels: &[(&LineAxes, &[Line])], titled: bool) -> Result<String, ChartError> {
    let width = panels.iter().map(|(a, _)| a.size.0).max().unwrap_or(1);
    let heights: Vec<u32> = panels.iter().map(|(a, _)| a.size.1).collect();
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, heights.iter().sum::<u32>().max(1))).into_drawing_area();
        root.fill(&WHITE).map_err(de)?;
        let mut rest = root.clone();
        for ((axes, lines), h) in panels.iter().zip(&heights) {
            let (area, below) = rest.split_vertically(*h);
            draw_panel(&area, axes, lines, titled)?;
            rest = below;
        }
        root.present().map_err(de)?;
    }
    let mut main = Vec::new();
    let mut thin = Vec::new();
    for (axes, lines) in panels {
        let panel = if titled {
            format!(" data-panel=\"{}\"", esc(axes.label))
        } else {
            String::new()
        };
        for l in lines.iter().filter(|l| !l.points.is_empty()) {
            let name = esc(&l.name);
            if l.style == LineStyle::Thin {
                thin.push(Marked {
                    attrs: format!("class=\"series-repeat\" data-variant=\"{name}\"{panel}"),
                    title: format!("{name}: one repeat"),
                });
            } else {
                main.push(Marked {
                    attrs: format!("class=\"series\" data-variant=\"{name}\"{panel}"),
                    title: name,
                });
            }
        }
    }
    let svg = annotate(
        &buf,
        "polyline",
        vec![
            (format!("opacity=\"{LINE_ALPHA}\""), main),
            (format!("opacity=\"{THIN_ALPHA}\""), thin),
        ],
    )?;
    Ok(svg.replacen("<svg ", &format!("<svg role=\"img\" aria-label=\"{}\" ", esc(label)), 1))
}

/// One panel: its axes (linear or log on each side) and lines.
fn draw_panel(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    axes: &LineAxes,
    lines: &[Line],
    titled: bool,
) -> Result<(), ChartError> {
    let (x_lo, x_hi) = axes.x;
    let x_lin = || Axis::new(x_lo, x_hi, axes.x_keys.clone());
    let x_log = || (x_lo..x_hi).log_scale().with_key_points(axes.x_keys.clone());
    match &axes.y {
        YScale::Linear => {
            let y_top = lines
                .iter()
                .flat_map(|l| l.points.iter().map(|p| p.1))
                .filter(|v| v.is_finite())
                .fold(0.0_f64, f64::max);
            let y_hi = if y_top > 0.0 { y_top * 1.1 } else { 1.0 };
            let y = Axis::new(0.0, y_hi, ticks(0.0, y_hi, false));
            let y_fmt = |v: f64| tick_label(v);
            if axes.x_log {
                draw_lines(area, axes, (x_log(), y, &y_fmt), lines, titled)
            } else {
                draw_lines(area, axes, (x_lin(), y, &y_fmt), lines, titled)
            }
        }
        YScale::Log { range, keys, fmt } => {
            let y = (range.0..range.1).log_scale().with_key_points(keys.clone());
            if axes.x_log {
                draw_lines(area, axes, (x_log(), y, *fmt), lines, titled)
            } else {
                draw_lines(area, axes, (x_lin(), y, *fmt), lines, titled)
            }
        }
    }
}

fn draw_lines<X, Y>(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    axes: &LineAxes,
    (x, y, y_fmt): (X, Y, &dyn Fn(f64) -> String),
    lines: &[Line],
    titled: bool,
) -> Result<(), ChartError>
where
    X: Ranged<ValueType = f64, FormatOption = DefaultFormatting>,
    Y: Ranged<ValueType = f64, FormatOption = DefaultFormatting>,
{
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(8)
        .margin_right(20)
        .x_label_area_size(if axes.x_desc.is_empty() { 24 } else { 40 })
        .y_label_area_size(62);
    if titled && !axes.label.is_empty() {
        builder.caption(axes.label, (FONT, 13));
    }
    let mut chart = builder.build_cartesian_2d(x, y).map_err(de)?;
    let x_fmt = |v: &f64| (axes.x_fmt)(*v);
    let y_fmt = |v: &f64| y_fmt(*v);
    chart
        .configure_mesh()
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .label_style((FONT, 11))
        .axis_desc_style((FONT, 12))
        .draw()
        .map_err(de)?;
    for l in lines.iter().filter(|l| !l.points.is_empty()) {
        let (alpha, width) = match l.style {
            LineStyle::Thin => (THIN_ALPHA, 1),
            LineStyle::Dots | LineStyle::Plain => (LINE_ALPHA, 2),
        };
        let c = color(l.index).mix(alpha);
        chart
            .draw_series(LineSeries::new(l.points.clone(), c.stroke_width(width)))
            .map_err(de)?;
        if l.style == LineStyle::Dots {
            chart
                .draw_series(l.points.iter().map(|&p| Circle::new(p, 2, c.filled())))
                .map_err(de)?;
        }
    }
    Ok(())
}

/// A log₁₀ axis around data from `lo` to `hi` (both > 0): whole decades, and ticks at 1-2-5
/// steps when it spans one decade, else at each decade.
pub fn log_axis(lo: f64, hi: f64) -> ((f64, f64), Vec<f64>) {
    let (lo, hi) = if lo > 0.0 && hi >= lo && hi.is_finite() {
        (lo, hi)
    } else {
        (1.0, 10.0)
    };
    let d_lo = lo.log10().floor();
    let d_hi = hi.log10().ceil().max(d_lo + 1.0);
    let keys = if d_hi - d_lo <= 1.0 {
        ticks(d_lo, d_hi, true).into_iter().map(|e| 10f64.powf(e)).collect()
    } else {
        (d_lo as i32..=d_hi as i32).map(|e| 10f64.powi(e)).collect()
    };
    ((10f64.powf(d_lo), 10f64.powf(d_hi)), keys)
}

/// A latency tick given in µs, in the unit that keeps it a short number: `500 ns`, `2 µs`,
/// `20 ms`, `1 s`.
pub fn latency_label(us: f64) -> String {
    let short = |v: f64| {
        let r = (v * 1000.0).round() / 1000.0;
        format!("{r}")
    };
    if us >= 1e6 {
        format!("{} s", short(us / 1e6))
    } else if us >= 1e3 {
        format!("{} ms", short(us / 1e3))
    } else if us >= 1.0 {
        format!("{} µs", short(us))
    } else {
        format!("{} ns", short(us * 1e3))
    }
}

/// The pixel points of the line of variant `name` (escaped as in `data-variant`) in an SVG of
/// [`line_chart`], for tests (the sections' too).
#[cfg(any(test, feature = "test-support"))]
pub fn series_points(svg: &str, name: &str) -> Vec<(f64, f64)> {
    polyline_points(svg, &format!("class=\"series\" data-variant=\"{name}\""))
}

/// The pixel points of the first `<polyline>` whose attributes start with `attrs`, for tests.
#[cfg(any(test, feature = "test-support"))]
pub(super) fn polyline_points(svg: &str, attrs: &str) -> Vec<(f64, f64)> {
    let start = svg.find(attrs).unwrap_or_else(|| panic!("no line {attrs}"));
    let points = &svg[start..];
    let points = &points[points.find("points=\"").unwrap() + 8..];
    points[..points.find('"').unwrap()]
        .split_whitespace()
        .map(|xy| {
            let (x, y) = xy.split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect()
}

/// The repeats of one variant for [`repeats_chart`].
#[derive(Clone, Debug)]
pub struct RepeatSeries {
    /// Colour index (the variant's column).
    pub index: usize,
    /// Measured values in run order.
    pub values: Vec<f64>,
    /// Trimmed mean, drawn as a dashed line.
    pub trimmed_mean: f64,
    /// Interval of the mean, drawn as a shaded band.
    pub ci: Option<(f64, f64)>,
}

/// The frame of a chart of values over time (a cell's repeats, a history trend): `title` in
/// 15 px above, margins of 8 px (16 px on the right), label areas of 30 px below and 62 px left.
pub fn series_frame<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, (FONT, 15))
        .margin(8)
        .margin_right(16)
        .x_label_area_size(30)
        .y_label_area_size(62);
    b
}

/// Per-repeat chart of one metric: x = measured repeat in run order, one line of points per
/// variant, its trimmed mean dashed and its CI shaded, so first-run effects and outliers show.
///
/// `absent` are variants without any repeat here, `(colour index, "ext4: failed")`, written in
/// the plot's top left corner in their colour so the chart names them; `bounds` are the values
/// the quantity can take (see [`Panel::bounds`]), to which the CI bands are clipped.
pub fn repeats_chart(
    title: &str,
    unit: &str,
    series: &[RepeatSeries],
    absent: &[(usize, String)],
    bounds: (f64, f64),
    width: u32,
    height: u32,
) -> Result<String, ChartError> {
    let clip = |(l, h): (f64, f64)| (l.max(bounds.0).min(bounds.1), h.max(bounds.0).min(bounds.1));
    let n = series.iter().map(|s| s.values.len()).max().unwrap_or(1).max(1);
    let all: Vec<f64> = series
        .iter()
        .flat_map(|s| {
            s.values
                .iter()
                .copied()
                .chain(s.ci.map(clip).into_iter().flat_map(|(l, h)| [l, h]))
                .chain([s.trimmed_mean])
        })
        .filter(|v| v.is_finite())
        .collect();
    let (lo, hi) = all
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(*v), b.max(*v)));
    let (lo, hi) = padded_range(lo, hi);
    let step = n.div_ceil(12);
    let x_keys: Vec<f64> = (1..=n).step_by(step).map(|k| k as f64).collect();
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(de)?;
        let x = Axis::new(0.5, n as f64 + 0.5, x_keys);
        let y = Axis::new(lo, hi, ticks(lo, hi, false));
        let mut chart = series_frame(&root, title).build_cartesian_2d(x, y).map_err(de)?;
        let y_fmt = |v: &f64| tick_label(*v);
        let x_fmt = |v: &f64| format!("{}", v.round() as i64);
        chart
            .configure_mesh()
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .x_desc("measured repeat (run order)")
            .y_desc(unit)
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 12))
            .draw()
            .map_err(de)?;
        let (x_lo, x_hi) = (0.5, n as f64 + 0.5);
        let m = series.len().max(1) as f64;
        for (j, s) in series.iter().enumerate() {
            let c = color(s.index);
            if let Some((l, h)) = s.ci.map(clip) {
                chart
                    .draw_series([Rectangle::new([(x_lo, l), (x_hi, h)], c.mix(0.13).filled())])
                    .map_err(de)?;
            }
            chart
                .draw_series(DashedLineSeries::new(
                    [(x_lo, s.trimmed_mean), (x_hi, s.trimmed_mean)],
                    6,
                    4,
                    c.stroke_width(1),
                ))
                .map_err(de)?;
            // Spread the variants a little around each repeat so equal values stay visible.
            let dx = (j as f64 - (m - 1.0) / 2.0) * 0.06;
            let points: Vec<(f64, f64)> = s
                .values
                .iter()
                .enumerate()
                .map(|(k, v)| ((k + 1) as f64 + dx, *v))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), c.stroke_width(1)))
                .map_err(de)?;
            chart
                .draw_series(points.into_iter().map(|p| Circle::new(p, 4, c.filled())))
                .map_err(de)?;
        }
        for (k, (index, text)) in absent.iter().enumerate() {
            let c = color(*index);
            let style = TextStyle::from((FONT, 12).into_font()).color(&c);
            chart
                .plotting_area()
                .draw(&Text::new(
                    text.clone(),
                    (x_lo + (x_hi - x_lo) * 0.02, hi - (hi - lo) * (0.04 + 0.08 * k as f64)),
                    style,
                ))
                .map_err(de)?;
        }
        root.present().map_err(de)?;
    }
    Ok(buf)
}

/// One line of a forest plot: a relative change in percent with its interval.
#[derive(Clone, Debug)]
pub struct ForestRow {
    /// Label at the left.
    pub label: String,
    /// Change in percent (candidate over base − 1).
    pub change: f64,
    /// Interval of the change in percent.
    pub ci: Option<(f64, f64)>,
    /// Colour of the point: 0 neutral, 1 better, 2 worse.
    pub tone: u8,
}

/// Forest plot of `fsbench compare`: one line per metric, change in percent with its 95 %
/// interval, a line at 0 and a band of ±`threshold` percent.
pub fn forest_chart(rows: &[ForestRow], threshold: f64, width: u32) -> Result<String, ChartError> {
    let n = rows.len().max(1);
    let height = 70 + 22 * n as u32;
    let ends: Vec<f64> = rows
        .iter()
        .flat_map(|r| [Some(r.change), r.ci.map(|c| c.0), r.ci.map(|c| c.1)])
        .flatten()
        .filter(|v| v.is_finite())
        .chain([threshold, -threshold])
        .collect();
    let lo = ends.iter().copied().fold(0.0_f64, f64::min);
    let hi = ends.iter().copied().fold(0.0_f64, f64::max);
    let pad = ((hi - lo) * 0.08).max(1.0);
    let (lo, hi) = (lo - pad, hi + pad);
    let label_w = rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(10)
        .clamp(10, 70) as u32
        * 7
        + 10;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(de)?;
        let y_keys: Vec<f64> = (0..n).map(|i| i as f64 + 0.5).collect();
        let x = Axis::new(lo, hi, ticks(lo, hi, false));
        let y = Axis::new(0.0, n as f64, y_keys);
        let mut chart = ChartBuilder::on(&root)
            .margin(10)
            .margin_right(20)
            .x_label_area_size(40)
            .y_label_area_size(label_w)
            .build_cartesian_2d(x, y)
            .map_err(de)?;
        let y_fmt = |v: &f64| {
            let i = (*v - 0.5).round();
            // Row 0 at the top.
            let idx = n as f64 - 1.0 - i;
            if idx >= 0.0 {
                rows.get(idx as usize).map(|r| r.label.clone()).unwrap_or_default()
            } else {
                String::new()
            }
        };
        let x_fmt = |v: &f64| format!("{} %", tick_label(*v));
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .x_desc("change of the candidate against the base (95 % CI)")
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 12))
            .draw()
            .map_err(de)?;
        let band = RGBColor(120, 120, 120).mix(0.15).filled();
        chart
            .draw_series([Rectangle::new([(-threshold, 0.0), (threshold, n as f64)], band)])
            .map_err(de)?;
        chart
            .draw_series([PathElement::new(
                vec![(0.0, 0.0), (0.0, n as f64)],
                BLACK.stroke_width(1),
            )])
            .map_err(de)?;
        let tone = |t: u8| match t {
            1 => RGBColor(0, 140, 70),
            2 => RGBColor(200, 30, 30),
            _ => RGBColor(90, 90, 90),
        };
        for (i, r) in rows.iter().enumerate() {
            let y = (n - 1 - i) as f64 + 0.5;
            let c = tone(r.tone);
            if let Some((l, h)) = r.ci {
                chart
                    .draw_series([PathElement::new(vec![(l, y), (h, y)], c.stroke_width(2))])
                    .map_err(de)?;
            }
            if r.change.is_finite() {
                chart
                    .draw_series([Circle::new((r.change, y), 4, c.filled())])
                    .map_err(de)?;
            }
        }
        root.present().map_err(de)?;
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panel(values: &[[f64; 2]]) -> Panel {
        Panel {
            title: "throughput (MiB/s) — higher is better".into(),
            metric: "throughput".into(),
            unit: "MiB/s".into(),
            categories: (0..values.len()).map(|i| format!("phase{i}")).collect(),
            bars: values
                .iter()
                .map(|g| {
                    g.iter()
                        .map(|v| {
                            Slot::Bar(Bar {
                                mean: *v,
                                ci: Some((v * 0.9, v * 1.1)),
                            })
                        })
                        .collect()
                })
                .collect(),
            bounds: (0.0, f64::INFINITY),
        }
    }

    #[test]
    fn every_bar_gets_its_attributes_and_labels_are_escaped() {
        let variants = vec!["ext4".to_string(), "<b>x\"".to_string()];
        let svg = bar_chart(&[panel(&[[100.0, 120.0], [50.0, 40.0], [10.0, 11.0]])], &variants, 800).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert_eq!(svg.matches("class=\"bar\"").count(), 6);
        assert_eq!(svg.matches("data-variant=\"ext4\"").count(), 3);
        assert_eq!(svg.matches("data-variant=\"&lt;b&gt;x&quot;\"").count(), 3);
        assert!(svg.contains("data-phase=\"phase1\""));
        assert!(!svg.contains("<b>"), "unescaped variant name");
        assert!(svg.contains("higher is better"));
        // Whiskers are drawn.
        assert!(svg.matches("<polyline").count() >= 18);
    }

    #[test]
    fn wide_ranges_switch_to_a_log_axis() {
        let svg = bar_chart(
            &[panel(&[[100.0, 120.0], [100000.0, 150000.0]])],
            &["a".into(), "b".into()],
            800,
        )
        .unwrap();
        assert!(svg.contains("(log scale)"));
        assert_eq!(svg.matches("class=\"bar\"").count(), 4);
        let (scale, lo, hi) = bar_range(&[1.0, 10.0], &[-3.0, 12.0]);
        assert!(!scale.log && lo < -3.0 && hi > 12.0);
        // Means spanning decades go log even when an interval reaches below zero.
        let (scale, lo, _) = bar_range(&[100.0, 400_000.0], &[-200_000.0, 600_000.0]);
        assert!(scale.log && lo == 1.0, "{lo}");
    }

    #[test]
    fn ticks_are_nice() {
        assert_eq!(ticks(0.0, 110.0, false), [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let log = ticks(0.0, 2.2, true);
        let back: Vec<f64> = log.iter().map(|v| (10f64.powf(*v) * 1000.0).round() / 1000.0).collect();
        assert_eq!(back, [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]);
        assert_eq!(tick_label(2.5), "2.5");
        assert_eq!(tick_label(200.0), "200");
    }

    #[test]
    fn repeats_and_forest_charts_draw() {
        let s = RepeatSeries {
            index: 0,
            values: vec![150.0, 260.0, 262.0],
            trimmed_mean: 260.0,
            ci: Some((200.0, 300.0)),
        };
        let svg = repeats_chart(
            "seq_write_block throughput",
            "MiB/s",
            &[s],
            &[(1, "xfs: failed".into())],
            (0.0, f64::INFINITY),
            500,
            260,
        )
        .unwrap();
        assert!(svg.contains("xfs: failed"), "an absent variant is named in the chart");
        assert!(svg.starts_with("<svg") && svg.matches("<circle").count() == 3, "{svg}");
        let rows = vec![
            ForestRow {
                label: "ext4 / bonnie / a".into(),
                change: -20.0,
                ci: Some((-25.0, -15.0)),
                tone: 2,
            },
            ForestRow {
                label: "<i>".into(),
                change: 1.0,
                ci: None,
                tone: 0,
            },
        ];
        let svg = forest_chart(&rows, 5.0, 900).unwrap();
        assert!(svg.contains("ext4 / bonnie / a") && svg.contains("&lt;i&gt;"));
        assert_eq!(svg.matches("<circle").count(), 2);
    }
}
