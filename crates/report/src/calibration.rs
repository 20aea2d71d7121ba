//! Host-against-guest calibration (issue 31, item 3): when a session holds a filesystem both on
//! the host's kernel and in a guest (`ext4` and `ext4@guest`: the same type, mkfs arguments and
//! mount options), how much slower the guest measured it, phase by phase.
//!
//! - **Slowdown factor**: per workload and headline row, host / guest for a metric where more is
//!   better (throughput, rates) and guest / host where less is better (times), so a factor above
//!   1 always means the guest was slower; with its interval at the session's confidence
//!   ([`crate::stats::two_sample::ratio_ci`], the log-scale delta method over the two sets of
//!   repeats; "no interval" with fewer than two on a side).
//! - **Summary**: the geometric mean of a pair's factors (no interval: the phases of one repeat
//!   are not independent), with the smallest and largest factor.
//!
//! The factor is there to read guest results with, never to convert them: the tables keep
//! ranking each guest group only within itself ([`super::group`]). Invariants: built from the
//! report model only; a session without such a pair renders "" (no heading). The section says
//! what it shows once, as [`super::block`]s; the renderers there lay it out and escape it.

use super::block::{Block, Table};
use super::{Cell, ReportModel, Section, WorkloadTable};
use crate::metric::{Direction, Role};
use crate::stats::two_sample::{ratio_ci, RatioCi, Sample};

/// The calibration section of a session's report.
pub struct CalibrationSection;

const HEAD: [&str; 6] = [
    "workload",
    "phase",
    "metric",
    "host",
    "guest",
    "slowdown (guest / host)",
];

const INTRO: &str = "The same filesystem type, mkfs arguments and mount options measured on the host's kernel and in the guest, in one interleaved session. Slowdown above 1: the guest was slower (host / guest for rates and throughputs, guest / host for times). A factor to read the guest's numbers with, not to convert them: each guest group stays ranked only among itself.";

/// One host variant and the guest variant of the same filesystem, with the guest's group.
struct Pair<'a> {
    host: &'a str,
    guest: &'a str,
    group: &'a str,
}

/// The guest group of `variant`, from its cells (`None`: the host's kernel).
fn group_of<'a>(model: &'a ReportModel, variant: &str) -> Option<&'a str> {
    model
        .workloads
        .iter()
        .flat_map(|t| &t.rows)
        .flat_map(|r| &r.cells)
        .find(|c| c.variant == variant && c.group.is_some())
        .and_then(|c| c.group.as_deref())
}

/// Every (host, guest) pair of variants of the same filesystem, in column order.
fn pairs(model: &ReportModel) -> Vec<Pair<'_>> {
    let case = |v: &str| model.cases.iter().find(|c| c.variant == v);
    let mut out = Vec::new();
    for g in &model.variants {
        let (Some(group), Some(gc)) = (group_of(model, g), case(g)) else {
            continue;
        };
        let host = model.variants.iter().find(|h| {
            group_of(model, h).is_none()
                && case(h).is_some_and(|hc| {
                    (&hc.fs_type, &hc.mkfs_args, &hc.mount_opts) == (&gc.fs_type, &gc.mkfs_args, &gc.mount_opts)
                })
        });
        if let Some(h) = host {
            out.push(Pair {
                host: h,
                guest: g,
                group,
            });
        }
    }
    out
}

fn cell<'a>(cells: &'a [Cell], variant: &str) -> Option<&'a Cell> {
    cells
        .iter()
        .find(|c| c.variant == variant && c.summary.n > 0 && c.summary.mean.is_finite() && c.summary.mean > 0.0)
}

/// One row of a pair's table.
struct Line {
    cells: [String; 6],
    factor: f64,
}

/// The slowdown factor guest against host of one row, with its interval when both sides have
/// two or more repeats.
fn slowdown(host: &Cell, guest: &Cell, direction: Direction, confidence: f64) -> (f64, Option<RatioCi>) {
    let (h, g) = (Sample::from(&host.summary), Sample::from(&guest.summary));
    match direction {
        Direction::HigherIsBetter => (host.summary.mean / guest.summary.mean, ratio_ci(h, g, confidence)),
        Direction::LowerIsBetter => (guest.summary.mean / host.summary.mean, ratio_ci(g, h, confidence)),
    }
}

fn lines(tables: &[WorkloadTable], p: &Pair, confidence: f64) -> Vec<Line> {
    let mut out = Vec::new();
    for t in tables {
        for r in t.rows.iter().filter(|r| r.metric.role == Role::Headline) {
            let (Some(h), Some(g)) = (cell(&r.cells, p.host), cell(&r.cells, p.guest)) else {
                continue;
            };
            let (factor, ci) = slowdown(h, g, r.metric.direction, confidence);
            let shown = match ci {
                Some(c) => format!("{:.2} [{:.2}, {:.2}]", c.ratio, c.low, c.high),
                None => format!("{factor:.2} (no interval: fewer than 2 repeats)"),
            };
            out.push(Line {
                cells: [
                    t.workload.clone(),
                    r.phase.clone(),
                    format!("{} ({})", r.metric.name, r.metric.unit.as_str()),
                    super::number::value(h.summary.mean),
                    super::number::value(g.summary.mean),
                    shown,
                ],
                factor,
            });
        }
    }
    out
}

/// "geometric mean 3.1 over 12 rows (from 1.2 to 9.8)".
fn summary(ls: &[Line]) -> String {
    let logs: Vec<f64> = ls.iter().map(|l| l.factor.ln()).filter(|x| x.is_finite()).collect();
    if logs.is_empty() {
        return String::new();
    }
    let geo = (logs.iter().sum::<f64>() / logs.len() as f64).exp();
    let (lo, hi) = logs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(*x), b.max(*x)));
    format!(
        "Slowdown factor: geometric mean {geo:.2} over {} rows (from {:.2} to {:.2}); no interval for the mean: the phases of one repeat are not independent.",
        logs.len(),
        lo.exp(),
        hi.exp()
    )
}

/// One line per host/guest pair for the terminal table: `calibration: ext4@guest (guest, tcg
/// …) measured 6.47× slower than ext4 (…)`; empty without a pair.
pub fn brief(model: &ReportModel) -> Vec<String> {
    let confidence = model.session.info.policy.confidence;
    pairs(model)
        .iter()
        .filter_map(|p| {
            let s = summary(&lines(&model.workloads, p, confidence));
            (!s.is_empty()).then(|| {
                format!(
                    "calibration: {} ({}) against {} on the host. {s} Each row's factor with its {:.0} % interval is in the md and html formats.",
                    p.guest,
                    p.group,
                    p.host,
                    confidence * 100.0
                )
            })
        })
        .collect()
}

fn heading(p: &Pair) -> String {
    format!("Calibration: {} on the host against {} ({})", p.host, p.guest, p.group)
}

impl Section for CalibrationSection {
    fn blocks(&self, model: &ReportModel) -> Vec<Block> {
        let confidence = model.session.info.policy.confidence;
        let mut out = Vec::new();
        for (i, p) in pairs(model).iter().enumerate() {
            let ls = lines(&model.workloads, p, confidence);
            if ls.is_empty() {
                continue;
            }
            out.push(Block::Heading {
                level: 2,
                text: heading(p),
                id: Some(format!("calibration-{i}")),
            });
            out.push(Block::paragraph(format!(
                "{INTRO} Intervals at {:.0} %.",
                confidence * 100.0
            )));
            out.push(Block::Table(Table {
                class: Some("calibration".into()),
                head: HEAD.iter().map(|h| h.to_string()).collect(),
                rows: ls
                    .iter()
                    .map(|l| l.cells.iter().map(|c| c.as_str().into()).collect())
                    .collect(),
                numeric_from: Some(3),
                ..Table::default()
            }));
            let s = summary(&ls);
            if !s.is_empty() {
                out.push(Block::Paragraph(s));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{case, interval, m, sample};
    use super::*;
    use crate::metric::{MetricId, Unit, GUEST_NOTE_PREFIX};
    use crate::store::{CaseRecord, SampleStatus};

    /// ext4 on the host writes 400 MiB/s and creates a tree in 2 s; in the guest 100 MiB/s and
    /// 6 s; xfs only on the host.
    fn model(guest_opts: &[&str]) -> ReportModel {
        let mut data = super::super::fixture::session_data();
        data.cases.clear();
        data.samples.clear();
        let guest_note = format!(
            "{GUEST_NOTE_PREFIX}6.1.0-56-amd64 under tcg (emulated: compare only with each other), booted in 3.0 s"
        );
        let mut id = 0;
        for (variant, fs, opts, tput, secs) in [
            ("ext4", "ext4", &["noatime"][..], 400.0, 2.0),
            ("ext4@guest", "ext4", guest_opts, 100.0, 6.0),
            ("xfs", "xfs", &["noatime"][..], 300.0, 3.0),
        ] {
            let case_id = format!("{variant}-w");
            data.cases.push(CaseRecord {
                case_id: case_id.clone(),
                mount_opts: opts.iter().map(|s| s.to_string()).collect(),
                workload_kind: "bonnie".into(),
                ..case(variant, fs, "w", true)
            });
            let notes: Vec<&str> = if variant.contains("@guest") {
                vec![&guest_note]
            } else {
                vec![]
            };
            for (r, wobble) in [0.97, 1.0, 1.03].into_iter().enumerate() {
                id += 1;
                let ms = vec![
                    m("write", MetricId::higher("throughput", Unit::MibPerSec), tput * wobble),
                    m("create", MetricId::lower("time", Unit::Seconds), secs * wobble),
                    m(
                        "create",
                        MetricId::lower("cpu", Unit::Percent).with_role(Role::ProcessCpu),
                        50.0,
                    ),
                ];
                data.samples
                    .push(sample(id, &case_id, r as u32, false, SampleStatus::Ok, &notes, ms));
            }
        }
        data.session.info.policy.confidence = 0.95;
        super::super::build::build(&data, 0, 0.95)
    }

    #[test]
    fn the_guest_s_slowdown_is_host_over_guest_for_rates_and_guest_over_host_for_times() {
        let m = model(&["noatime"]);
        let text = CalibrationSection.markdown(&m).replace('\\', "");
        assert!(
            text.contains("## Calibration: ext4 on the host against ext4@guest (guest, tcg"),
            "{text}"
        );
        let row = |phase: &str| {
            text.lines()
                .find(|l| l.starts_with(&format!("| w | {phase} |")))
                .unwrap_or_else(|| panic!("no {phase}: {text}"))
                .to_string()
        };
        let write = row("write");
        assert!(write.contains("| 4.00 ["), "{write}");
        let (lo, hi) = interval(&write);
        assert!(lo < 4.0 && hi > 4.0 && hi - lo < 1.0, "{write}");
        let create = row("create");
        assert!(create.contains("| 3.00 ["), "{create}");
        // CPU rows are not headline results: no factor for them; xfs has no guest twin.
        assert_eq!(text.matches("| w |").count(), 2, "{text}");
        assert!(!text.contains("xfs"), "{text}");
        assert!(
            text.contains("geometric mean 3.46 over 2 rows (from 3.00 to 4.00)"),
            "{text}"
        );
        let html = CalibrationSection.html(&m);
        assert!(
            html.contains("<h2 id=\"calibration-0\">") && html.contains("4.00 ["),
            "{html}"
        );
        let table = super::super::text::render_table(&m, false);
        assert!(
            table.contains("calibration: ext4@guest (guest, tcg") && table.contains("geometric mean 3.46"),
            "{table}"
        );
    }

    #[test]
    fn a_guest_with_other_mount_options_or_no_guest_has_no_section() {
        let other = model(&["noatime", "discard"]);
        assert_eq!(CalibrationSection.markdown(&other), "");
        assert_eq!(CalibrationSection.html(&other), "");
        let mut host_only = model(&["noatime"]);
        host_only.variants.retain(|v| !v.contains("@guest"));
        assert_eq!(CalibrationSection.markdown(&host_only), "");
        assert!(brief(&host_only).is_empty() && brief(&other).is_empty());
    }
}
