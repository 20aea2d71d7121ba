//! The trend chart of one series (plotters' SVG backend, as the report's charts): x = session
//! in run order (labelled with its id), y = the mean with its CI as a whisker, a line through
//! the means, each segment's mean as a dashed level, and each change point as a vertical line
//! (red when worse by the metric's direction, green when better).

use super::Series;
use crate::report::charts::{color, series_frame};
use plotters::prelude::*;

const FONT: &str = "sans-serif";

/// One `<svg>` element; an error text from plotters when drawing fails.
pub fn trend_chart(s: &Series, width: u32, height: u32) -> Result<String, String> {
    let de = |e: &dyn std::fmt::Display| e.to_string();
    let n = s.points.len();
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for p in &s.points {
        let (l, h) = p.ci.unwrap_or((p.mean, p.mean));
        lo = lo.min(l).min(p.mean);
        hi = hi.max(h).max(p.mean);
    }
    let (lo, hi) = crate::report::charts::padded_range(lo, hi);
    let higher = s.direction == "higher_is_better";
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| de(&e))?;
        let title = format!("{} · {} · {} · {}", s.workload, s.phase, s.metric, s.variant);
        let mut chart = series_frame(&root, &title)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), lo..hi)
            .map_err(|e| de(&e))?;
        let ids: Vec<i64> = s.points.iter().map(|p| p.session).collect();
        let x_fmt = move |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < ids.len() {
                ids[i as usize].to_string()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .x_labels(n.min(16))
            .x_label_formatter(&x_fmt)
            .x_desc("session")
            .y_desc(s.unit.as_str())
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 12))
            .draw()
            .map_err(|e| de(&e))?;
        let c = color(0);
        // Segment levels between change points.
        let mut bounds = vec![0usize];
        bounds.extend(s.change_points.iter().map(|cp| cp.index));
        bounds.push(n);
        for w in bounds.windows(2) {
            let seg = &s.points[w[0]..w[1]];
            if seg.is_empty() {
                continue;
            }
            let m = seg.iter().map(|p| p.mean).sum::<f64>() / seg.len() as f64;
            chart
                .draw_series(DashedLineSeries::new(
                    [(w[0] as f64 - 0.4, m), (w[1] as f64 - 0.6, m)],
                    6,
                    4,
                    RGBColor(120, 120, 120).stroke_width(1),
                ))
                .map_err(|e| de(&e))?;
        }
        for cp in &s.change_points {
            let worse = if higher {
                cp.change_pct < 0.0
            } else {
                cp.change_pct > 0.0
            };
            let col = if worse {
                RGBColor(200, 30, 30)
            } else {
                RGBColor(0, 150, 60)
            };
            let x = cp.index as f64 - 0.5;
            chart
                .draw_series(LineSeries::new([(x, lo), (x, hi)], col.stroke_width(2)))
                .map_err(|e| de(&e))?
                .label(format!("change {:+.1} %", cp.change_pct));
            chart
                .plotting_area()
                .draw(&Text::new(
                    format!("{:+.1} %", cp.change_pct),
                    (x + 0.05, hi - (hi - lo) * 0.03),
                    TextStyle::from((FONT, 12).into_font()).color(&col),
                ))
                .map_err(|e| de(&e))?;
        }
        for (i, p) in s.points.iter().enumerate() {
            if let Some((l, h)) = p.ci {
                chart
                    .draw_series([ErrorBar::new_vertical(i as f64, l, p.mean, h, c.stroke_width(1), 8)])
                    .map_err(|e| de(&e))?;
            }
        }
        let pts: Vec<(f64, f64)> = s.points.iter().enumerate().map(|(i, p)| (i as f64, p.mean)).collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(1)))
            .map_err(|e| de(&e))?;
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 4, c.filled())))
            .map_err(|e| de(&e))?;
        root.present().map_err(|e| de(&e))?;
    }
    Ok(buf)
}
