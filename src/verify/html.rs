//! The verify section of a session's HTML report, which opens the page (the answer first, the
//! session's tables after it): a forest plot of native/referee per metric (the ratio − 1 in
//! percent with its 95 % CI — the paired interval where two or more repeats ran both sides, else
//! the unpaired one — plotters SVG as every chart of the report, through
//! [`crate::report::charts::forest_chart`]) and the verdict table of [`super::ratios`] with each
//! side's n and the paired ratio. Empty for every session that is not a verify session.
//!
//! The section says what it shows once, as [`crate::report::block`]s, all of them HTML only
//! (the chart a `<figure>` with its caption, [`crate::report::caption::figure`]); the report
//! lays them out and escapes them.

use super::ratios::{self, Verdict, VerifyTable};
use crate::report::block::{Block, Cell, Formats, Table};
use crate::report::charts::{self, ForestRow};
use crate::report::escape::html as esc;
use crate::report::{caption, ReportModel};

/// Upper end of the intervals drawn, percent (the table gives the full interval).
const CLIP_PCT: f64 = 200.0;

/// What the forest plot draws, said under it.
const CAPTION: &str = "native / referee − 1 of each metric, in percent, with its 95 % \
     CI (paired where two or more repeats ran both sides, else the log-ratio CI of the means; drawn up to +200 %; the table gives the whole interval); grey band: ±15 % (copies are held to ±10 %, open-loop latency to ±20 % at p50 and ±35 % at p99). Green: within tolerance, red: \
     outside, grey: a bound the native must reach (where bonnie++ printed +++++, its rate was above work / 0.5 s: \
     the row is drawn from native / bound − 1 down; an open-loop response time, at least the service time fio measures, \
     is drawn as its ratio), red when the native is below the bound. The table says whether each interval lies inside the band \
     (agrees), outside it (differs) or across its edge (undecided: more pairs).";

/// The verify section of a session's report, for [`crate::report::render`]: HTML only (the
/// Markdown report has none), no blocks for a session that is not a verify session.
pub struct ForestSection;

impl crate::report::Section for ForestSection {
    fn blocks(&self, model: &ReportModel) -> Vec<Block> {
        let Some(t) = ratios::table(
            &model.session.info.suite_name,
            &model.cases,
            &model.samples,
            model.baseline.as_ref(),
        ) else {
            return Vec::new();
        };
        let mut out = vec![Block::Heading {
            level: 2,
            text: "Native against the real tools".into(),
            id: Some("verify".into()),
        }];
        let rows = forest_rows(&t);
        if !rows.is_empty() {
            let mut figure = String::new();
            caption::figure(
                &mut figure,
                model,
                "chart-forest",
                "",
                charts::forest_chart(&rows, super::pairs::TOLERANCE_PCT, 1100),
                &esc(CAPTION),
            );
            out.push(Block::Html(figure));
        }
        out.push(Block::Table(verdicts(&t)));
        out.into_iter().map(|b| b.only(Formats::HTML)).collect()
    }

    fn leads(&self, _model: &ReportModel) -> bool {
        true
    }
}

/// The forest plot's rows: every row with a ratio, or a bound to reach, in table order.
fn forest_rows(t: &VerifyTable) -> Vec<ForestRow> {
    t.rows
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
                    Verdict::Outside | Verdict::NoData(_) | Verdict::Stall { .. } => 2,
                    // Below its bound, or far above a second referee.
                    Verdict::Bound { .. } if r.verdict.fails() => 2,
                    Verdict::Bound { .. } | Verdict::NoDevice(_) => 0,
                },
            })
        })
        .collect()
}

/// The verdict table: each pair's sides, their means and n, the ratio with its interval, the
/// paired ratio and the verdict; the words set left, the numbers right.
fn verdicts(t: &VerifyTable) -> Table {
    let f = |v: Option<f64>| v.map_or("–".to_string(), |x| format!("{x:.4}"));
    let rows = t
        .rows
        .iter()
        .map(|r| {
            let (ratio, ci) = match r.ratio {
                Some((x, lo, hi)) => (format!("{x:.3}"), format!("{lo:.3} – {hi:.3}")),
                None => ("–".into(), "–".into()),
            };
            let paired = r
                .paired
                .map_or("–".to_string(), |(x, lo, hi)| format!("{x:.3} [{lo:.3}, {hi:.3}]"));
            let verdict = match r.interval {
                Some(i) => format!("{}, {}", r.verdict.text(), i.text()),
                None => r.verdict.text(),
            };
            [
                r.variant.clone(),
                r.pair.clone(),
                r.native.clone(),
                format!("{} {}", r.tool, r.referee),
                f(r.native_mean),
                f(r.referee_mean),
                format!("{}/{}", r.n.0, r.n.1),
                ratio,
                ci,
                paired,
                format!("±{:.0} %: {verdict}", r.tolerance_pct),
            ]
            .into_iter()
            .map(Cell::new)
            .collect()
        })
        .collect();
    Table {
        head: [
            "fs",
            "pair",
            "native",
            "referee",
            "native mean",
            "referee mean",
            "n",
            "ratio",
            "95 % CI",
            "paired ratio [95 % CI]",
            "verdict",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        numeric_from: Some(4),
        left: vec![0, 1, 2, 3, 10],
        ..Table::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::{MetricId, Unit};
    use crate::report::fixture::{case, m, sample, session_data};
    use crate::report::Section;
    use crate::store::SampleStatus;

    /// A verify session: ext4's native bigfile against dd, three repeats of each.
    fn model() -> ReportModel {
        let mut data = session_data();
        data.session.info.suite_name = ratios::SUITE_NAME.into();
        data.cases = vec![
            case("ext4", "ext4", "bigfile:native", true),
            case("ext4", "ext4", "bigfile:dd", true),
        ];
        data.samples.clear();
        let native = &data.cases[0].case_id.clone();
        let referee = &data.cases[1].case_id.clone();
        let mut id = 0;
        for (r, (n, d)) in [(100.0, 101.0), (102.0, 99.0), (98.0, 100.0)].into_iter().enumerate() {
            for (c, phase, metric, v) in [
                (native, "fsync", "durable_throughput", n),
                (referee, "write", "throughput", d),
            ] {
                id += 1;
                let ms = vec![m(phase, MetricId::higher(metric, Unit::MibPerSec), v)];
                data.samples
                    .push(sample(id, c, r as u32, false, SampleStatus::Ok, &[], ms));
            }
        }
        crate::report::build(&data, 0, 0.95)
    }

    #[test]
    fn the_page_only_opens_with_the_forest_plot_and_the_verdict_table() {
        let m = model();
        let html = ForestSection.html(&m);
        assert!(
            html.starts_with(
                "<h2 id=\"verify\">Native against the real tools</h2>\n<figure class=\"chart chart-forest\"><svg"
            ),
            "{html}"
        );
        assert!(
            html.contains("<figcaption>native / referee − 1 of each metric"),
            "{html}"
        );
        assert!(
            html.contains("<th class=\"l\">fs</th><th class=\"l\">pair</th>") && html.contains("<th>n</th>"),
            "{html}"
        );
        assert!(
            html.contains("<th>paired ratio [95 % CI]</th><th class=\"l\">verdict</th>"),
            "{html}"
        );
        assert!(
            html.contains("<td class=\"l\">ext4</td><td class=\"l\">bigfile</td>")
                && html.contains("<td class=\"num\">3/3</td>")
                && html.contains("<td class=\"l\">±"),
            "{html}"
        );
        assert!(ForestSection.leads(&m));
        assert_eq!(ForestSection.markdown(&m), "");
        assert_eq!(ForestSection.text(&m), "");
    }

    #[test]
    fn a_session_that_is_not_a_verify_session_has_no_section() {
        let m = crate::report::build(&session_data(), 0, 0.95);
        assert!(ForestSection.blocks(&m).is_empty());
        assert_eq!(ForestSection.html(&m), "");
    }
}
