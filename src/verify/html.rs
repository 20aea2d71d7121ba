//! The verify section of a session's HTML report, which opens the page (the answer first, the
//! session's tables after it): a forest plot of native/referee per metric (the ratio − 1 in
//! percent with its 95 % CI — the paired interval where two or more repeats ran both sides, else
//! the unpaired one — plotters SVG as every chart of the report, through
//! [`crate::report::charts::forest_chart`]) and the verdict table of [`super::ratios`] with each
//! side's n and the paired ratio. Empty for every session that is not a verify session.

use super::ratios::{self, Verdict};
use crate::report::charts::{self, ForestRow};
use crate::report::escape::html as esc;
use crate::report::ReportModel;
use std::fmt::Write as _;

/// Upper end of the intervals drawn, percent (the table gives the full interval).
const CLIP_PCT: f64 = 200.0;

/// The verify section of a session's report, for [`crate::report::render`]: HTML only (the
/// Markdown report has none), "" for every session that is not a verify session.
pub struct ForestSection;

impl crate::report::Section for ForestSection {
    fn markdown(&self, _model: &ReportModel) -> String {
        String::new()
    }

    fn html(&self, model: &ReportModel) -> String {
        let mut out = String::new();
        section(&mut out, model);
        out
    }

    fn leads(&self, _model: &ReportModel) -> bool {
        true
    }
}

/// Appends the section to `out` when `model` is a verify session.
pub fn section(out: &mut String, model: &ReportModel) {
    let Some(t) = ratios::table(&model.session.info.suite_name, &model.cases, &model.samples) else {
        return;
    };
    out.push_str("<h2 id=\"verify\">Native against the real tools</h2>\n");
    let rows: Vec<ForestRow> = t
        .rows
        .iter()
        .filter_map(|r| {
            let (x, lo, hi, label) = match (r.paired.or(r.ratio), &r.verdict) {
                (Some((x, lo, hi)), _) => (x, lo, hi, r.label()),
                // bonnie++ printed +++++ (in all or some repeats): its mean was above the bound,
                // so native / referee is at most native / bound; drawn as a line from there
                // down. A one-sided row with a ratio (response time) is drawn as a ratio.
                (None, Verdict::Bound { native, bound, .. }) if *bound > 0.0 => {
                    let most = native / bound;
                    (most, 0.0, most, format!("{} (bound)", r.label()))
                }
                _ => return None,
            };
            Some(ForestRow {
                label,
                change: (x - 1.0) * 100.0,
                // Three pairs on a loaded machine give intervals up to ×40: clip them so the
                // points stay readable (the table below has the full interval).
                ci: Some(((lo - 1.0) * 100.0, ((hi - 1.0) * 100.0).min(CLIP_PCT))),
                tone: match r.verdict {
                    Verdict::Ok => 1,
                    Verdict::Outside | Verdict::NoData(_) => 2,
                    Verdict::Bound { native, bound, .. } if native < bound => 2,
                    Verdict::Bound { .. } => 0,
                },
            })
        })
        .collect();
    if !rows.is_empty() {
        out.push_str("<figure class=\"chart chart-forest\">");
        match charts::forest_chart(&rows, super::pairs::TOLERANCE_PCT, 1100) {
            Ok(svg) => out.push_str(&svg),
            Err(e) => {
                let _ = write!(out, "<p class=\"note\">{}</p>", esc(&e.to_string()));
            }
        }
        out.push_str(
            "<figcaption class=\"note\">native / referee − 1 of each metric, in percent, with its 95 % \
             CI (paired where two or more repeats ran both sides, else the log-ratio CI of the means; drawn up to +200 %; the table gives the whole interval); grey band: ±15 % (copies are held to ±10 %, open-loop latency to ±20 % at p50 and ±35 % at p99). Green: within tolerance, red: \
             outside, grey: a bound the native must reach (where bonnie++ printed +++++, its rate was above work / 0.5 s: \
             the row is drawn from native / bound − 1 down; an open-loop response time, at least the service time fio measures, \
             is drawn as its ratio), red when the native is below the bound. The table says whether each interval lies inside the band \
             (agrees), outside it (differs) or across its edge (undecided: more pairs).",
        );
        out.push_str(&crate::report::caption::provenance(&model.session.info));
        out.push_str("</figcaption></figure>\n");
    }
    out.push_str(
        "<table><thead><tr><th style=\"text-align:left\">fs</th><th style=\"text-align:left\">pair</th>\
         <th style=\"text-align:left\">native</th><th style=\"text-align:left\">referee</th><th>native mean</th>\
         <th>referee mean</th><th>n</th><th>ratio</th><th>95 % CI</th><th>paired ratio [95 % CI]</th>\
         <th style=\"text-align:left\">verdict</th></tr></thead><tbody>\n",
    );
    for r in &t.rows {
        let f = |v: Option<f64>| v.map_or("–".to_string(), |x| format!("{x:.4}"));
        let (ratio, ci) = match r.ratio {
            Some((x, lo, hi)) => (format!("{x:.3}"), format!("{lo:.3} – {hi:.3}")),
            None => ("–".into(), "–".into()),
        };
        let paired = r
            .paired
            .map_or("–".to_string(), |(x, lo, hi)| format!("{x:.3} [{lo:.3}, {hi:.3}]"));
        let n = format!("{}/{}", r.n.0, r.n.1);
        let _ = writeln!(
            out,
            "<tr><td style=\"text-align:left\">{}</td><td style=\"text-align:left\">{}</td><td style=\"text-align:left\">{}</td>\
             <td style=\"text-align:left\">{} {}</td><td>{}</td><td>{}</td><td>{n}</td><td>{ratio}</td><td>{ci}</td><td>{paired}</td>\
             <td style=\"text-align:left\">±{:.0} %: {}</td></tr>",
            esc(&r.variant),
            esc(&r.pair),
            esc(&r.native),
            esc(&r.tool),
            esc(&r.referee),
            f(r.native_mean),
            f(r.referee_mean),
            r.tolerance_pct,
            esc(&match r.interval {
                Some(i) => format!("{}, {}", r.verdict.text(), i.text()),
                None => r.verdict.text(),
            }),
        );
    }
    out.push_str("</tbody></table>\n");
}
