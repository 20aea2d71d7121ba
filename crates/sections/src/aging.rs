//! The aging penalty (issue 30): for every pair of `aging` workloads in a session — one aged
//! (it has the phase `age`), one fresh (phase `populate`), paired in suite order — what the
//! aging cost each filesystem on the same files.
//!
//! - **Table**: per filesystem, the mean cold-read throughput of the kept tree on the fresh and
//!   on the aged filesystem (MiB/s), aged / fresh with its interval at the session's confidence
//!   ([`crate::stats::two_sample::ratio_ci`]: the log-scale delta method over the two sets of
//!   repeats; "—" with fewer than two on a side), and the layout before and after: mean extents
//!   per file and the share of files in more than one piece, fresh → aged.
//! - **Ranking**: the filesystems ordered by mean read throughput on the fresh and on the aged
//!   trees, and whether the order changed ("fresh: btrfs, xfs, ext4; aged: xfs, btrfs, ext4 —
//!   the ranking changes").
//! - **The other measured workloads** (`grep`, `seqread`, `statread`; absent from sessions
//!   before them): a row per workload and filesystem with fresh, aged and aged / fresh with its
//!   interval, and a ranking sentence per workload, as for the cold read.
//!
//! An aged workload is one with `read` and without `populate` (its `age` phase is absent when
//! its repeats started from a saved image, `--aged-from`); a fresh one has `populate`.
//! Invariants: built from the report model (stored rows) only; a session without both modes
//! renders "" (no heading); what it shows is the report's blocks ([`crate::report::block`]),
//! which the report renders and escapes.

use crate::engine::workloads::aging::measured::{GREP, RATE, SEQREAD, STATREAD};
use crate::engine::workloads::aging::{EXTENTS, FRAGMENTED, LAYOUT, POPULATE, READ, THROUGHPUT};
use crate::report::block::{Block, Formats, Table};
use crate::report::{Cell, ReportModel, Section, WorkloadTable};
use crate::stats::two_sample::{ratio_ci, Sample};

/// The aging section of a session's report.
pub struct AgingSection;

/// The kind of workload this section reads.
const KIND: &str = "aging";

const HEAD: [&str; 6] = [
    "filesystem",
    "read fresh (MiB/s)",
    "read aged (MiB/s)",
    "aged / fresh",
    "extents per file, fresh → aged",
    "files in pieces (%), fresh → aged",
];

const INTRO: &str = "The same files (same seed: same names, sizes and bytes) on a filesystem aged by the seeded create/append/overwrite/rename/delete stream and on a freshly made one of the same type and size; the cold read of the whole kept tree after dropping caches, and the FIEMAP layout of its files.";

/// A measured workload of the aged and fresh trees besides the cold read: its phase, headline
/// metric (higher is better), what the table calls it and its unit.
struct Measured {
    phase: &'static str,
    metric: &'static str,
    label: &'static str,
    unit: &'static str,
}

/// The other measured workloads, in run order (`engine::workloads::aging::measured`).
const MORE: [Measured; 3] = [
    Measured {
        phase: GREP,
        metric: THROUGHPUT,
        label: "grep-like scan",
        unit: "MiB/s",
    },
    Measured {
        phase: SEQREAD,
        metric: THROUGHPUT,
        label: "sequential read of the largest file",
        unit: "MiB/s",
    },
    Measured {
        phase: STATREAD,
        metric: RATE,
        label: "stat + 4 KiB read per file",
        unit: "files/s",
    },
];

const MORE_HEAD: [&str; 5] = ["measured", "filesystem", "fresh", "aged", "aged / fresh"];

fn has_phase(t: &WorkloadTable, phase: &str) -> bool {
    t.rows.iter().any(|r| r.phase == phase)
}

/// `(aged, fresh)` pairs in suite order. An aged workload has the phase `age`, or none of
/// `age` and `populate` when its repeats started from a saved aged image (`--aged-from`); a
/// fresh one has `populate`.
fn pairs(model: &ReportModel) -> Vec<(&WorkloadTable, &WorkloadTable)> {
    let of = |fresh: bool| -> Vec<&WorkloadTable> {
        model
            .workloads
            .iter()
            .filter(|t| t.kind == KIND && has_phase(t, READ))
            .filter(|t| has_phase(t, POPULATE) == fresh)
            .collect()
    };
    of(false).into_iter().zip(of(true)).collect()
}

fn cell<'a>(t: &'a WorkloadTable, phase: &str, metric: &str, variant: &str) -> Option<&'a Cell> {
    t.rows
        .iter()
        .find(|r| r.phase == phase && r.metric.name == metric)?
        .cells
        .iter()
        .find(|c| c.variant == variant && c.summary.n > 0 && c.summary.mean.is_finite())
}

fn num(v: f64) -> String {
    if !v.is_finite() {
        "—".into()
    } else if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// One filesystem's figures.
struct Line {
    variant: String,
    fresh: f64,
    aged: f64,
    ratio: String,
    /// The interval of aged / fresh excludes 1 (`None`: no interval).
    decided: Option<bool>,
    extents: String,
    pieces: String,
}

/// The cold read's lines, with the layout of each filesystem.
fn lines(model: &ReportModel, aged: &WorkloadTable, fresh: &WorkloadTable, confidence: f64) -> Vec<Line> {
    lines_of(model, aged, fresh, confidence, READ, THROUGHPUT)
}

/// One line per filesystem with `metric` of `phase` on both trees (layout columns filled when
/// the session has them).
fn lines_of(
    model: &ReportModel,
    aged: &WorkloadTable,
    fresh: &WorkloadTable,
    confidence: f64,
    phase: &str,
    metric: &str,
) -> Vec<Line> {
    let mut out = Vec::new();
    for v in &model.variants {
        let (Some(a), Some(f)) = (cell(aged, phase, metric, v), cell(fresh, phase, metric, v)) else {
            continue;
        };
        let ci = ratio_ci(Sample::from(&a.summary), Sample::from(&f.summary), confidence);
        let decided = ci.as_ref().map(|r| r.low > 1.0 || r.high < 1.0);
        let ratio = match ci {
            Some(r) => format!("{:.2} [{:.2}, {:.2}]", r.ratio, r.low, r.high),
            None => format!(
                "{:.2} (no interval: fewer than 2 repeats)",
                a.summary.mean / f.summary.mean
            ),
        };
        let both = |metric: &str| match (cell(fresh, LAYOUT, metric, v), cell(aged, LAYOUT, metric, v)) {
            (Some(f), Some(a)) => format!("{} → {}", num(f.summary.mean), num(a.summary.mean)),
            _ => "—".into(),
        };
        out.push(Line {
            variant: v.clone(),
            fresh: f.summary.mean,
            aged: a.summary.mean,
            ratio,
            decided,
            extents: both(EXTENTS),
            pieces: both(FRAGMENTED),
        });
    }
    out
}

/// "fresh: a, b; aged: b, a — the ranking changes", or "" with fewer than two filesystems.
fn ranking(lines: &[Line]) -> String {
    ranking_of(lines, "Cold read, by mean throughput")
}

/// [`ranking`] of the lines of one measured workload, introduced by `what`.
fn ranking_of(lines: &[Line], what: &str) -> String {
    if lines.len() < 2 {
        return String::new();
    }
    let order = |key: fn(&Line) -> f64| {
        let mut v: Vec<&Line> = lines.iter().collect();
        v.sort_by(|x, y| key(y).total_cmp(&key(x)));
        v.into_iter().map(|l| l.variant.as_str()).collect::<Vec<_>>()
    };
    let (f, a) = (order(|l| l.fresh), order(|l| l.aged));
    let verdict = if f == a {
        "the ranking holds"
    } else if f[0] != a[0] {
        "the ranking changes, and so does the first"
    } else {
        "the ranking changes below the first"
    };
    let caveat = if f != a && lines.iter().all(|l| l.decided != Some(true)) {
        ", but no filesystem's aged / fresh interval excludes 1: the change may be noise"
    } else {
        ""
    };
    format!(
        "{what}: fresh: {}; aged: {} — {verdict}{caveat} (means only; the tables above say which differences are significant).",
        f.join(", "),
        a.join(", ")
    )
}

/// The other measured workloads' rows (`[measured, filesystem, fresh, aged, ratio]`) and
/// their ranking sentences; empty for a session from before they were measured.
fn more(
    model: &ReportModel,
    aged: &WorkloadTable,
    fresh: &WorkloadTable,
    confidence: f64,
) -> (Vec<[String; 5]>, Vec<String>) {
    let (mut rows, mut rankings) = (Vec::new(), Vec::new());
    for m in &MORE {
        let ls = lines_of(model, aged, fresh, confidence, m.phase, m.metric);
        for l in &ls {
            rows.push([
                format!("{} ({})", m.label, m.unit),
                l.variant.clone(),
                num(l.fresh),
                num(l.aged),
                l.ratio.clone(),
            ]);
        }
        let r = ranking_of(&ls, &format!("{}, by mean {}", capitalised(m.label), m.unit));
        if !r.is_empty() {
            rankings.push(r);
        }
    }
    (rows, rankings)
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn row(l: &Line) -> [String; 6] {
    [
        l.variant.clone(),
        num(l.fresh),
        num(l.aged),
        l.ratio.clone(),
        l.extents.clone(),
        l.pieces.clone(),
    ]
}

/// A table of class `aging` whose cells from `numeric_from` on are numbers.
fn table<R: AsRef<[String]>>(head: &[&str], rows: impl IntoIterator<Item = R>, numeric_from: usize) -> Block {
    Block::Table(Table {
        class: Some("aging".into()),
        head: head.iter().map(|h| h.to_string()).collect(),
        rows: rows
            .into_iter()
            .map(|r| r.as_ref().iter().map(|c| c.as_str().into()).collect())
            .collect(),
        numeric_from: Some(numeric_from),
        left: Vec::new(),
        text_omits: None,
    })
}

impl Section for AgingSection {
    fn blocks(&self, model: &ReportModel) -> Vec<Block> {
        let confidence = model.session.info.policy.confidence;
        let mut out = Vec::new();
        for (aged, fresh) in pairs(model) {
            let ls = lines(model, aged, fresh, confidence);
            if ls.is_empty() {
                continue;
            }
            out.push(Block::Heading {
                level: 2,
                text: format!("Aging: {} against {}", aged.workload, fresh.workload),
                id: Some(format!("aging-{}", aged.workload)),
            });
            out.push(Block::paragraph(INTRO).only(Formats::MARKDOWN));
            out.push(
                Block::paragraph(format!("{INTRO} Intervals at {:.0} %.", confidence * 100.0)).only(Formats::HTML),
            );
            out.push(table(&HEAD, ls.iter().map(row), 1));
            out.push(
                Block::paragraph(format!(
                    "Means over measured repeats; aged / fresh of the read throughput with its {:.0} % interval (below 1: the aged filesystem reads slower).",
                    confidence * 100.0
                ))
                .only(Formats::MARKDOWN),
            );
            let r = ranking(&ls);
            if !r.is_empty() {
                out.push(Block::Paragraph(r));
            }
            let (rows, rankings) = more(model, aged, fresh, confidence);
            if !rows.is_empty() {
                out.push(
                    Block::paragraph(
                        "The other measured workloads on the same trees, each after dropping caches (higher is better):",
                    )
                    .only(Formats::MARKDOWN),
                );
                out.push(table(&MORE_HEAD, &rows, 2));
                out.extend(rankings.into_iter().map(Block::Paragraph));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::workloads::aging::AGE;
    use crate::metric::{MetricId, Unit};
    use crate::store::{CaseAvailability, CaseRecord, SampleStatus};

    /// ext4 reads 100 MiB/s fresh and 60 aged, xfs 90 and 80: xfs leads once aged.
    fn model() -> ReportModel {
        let mut data = crate::report::fixture::session_data();
        data.cases.clear();
        data.samples.clear();
        let mut id = 0;
        // The sequential read: ext4 500 → 200 MiB/s, xfs 400 → 390.
        for (variant, fresh, aged, seq_fresh, seq_aged) in
            [("ext4", 100.0, 60.0, 500.0, 200.0), ("xfs", 90.0, 80.0, 400.0, 390.0)]
        {
            for (workload, first, mean, ext, seq) in [
                ("aged", AGE, aged, 1.8, seq_aged),
                ("fresh", POPULATE, fresh, 1.0, seq_fresh),
            ] {
                let case_id = format!("{variant}-{workload}");
                data.cases.push(CaseRecord {
                    case_id: case_id.clone(),
                    variant: variant.into(),
                    fs_type: variant.into(),
                    mkfs_args: vec![],
                    mount_opts: vec![],
                    workload: workload.into(),
                    workload_kind: KIND.into(),
                    workload_json: "{}".into(),
                    availability: CaseAvailability::Available,
                });
                for (r, wobble) in [0.98, 1.0, 1.02].into_iter().enumerate() {
                    let m = crate::report::fixture::m;
                    let ms = vec![
                        m(first, MetricId::lower("time", Unit::Seconds), 5.0),
                        m(READ, MetricId::higher(THROUGHPUT, Unit::MibPerSec), mean * wobble),
                        m(GREP, MetricId::higher(THROUGHPUT, Unit::MibPerSec), mean / 2.0 * wobble),
                        m(SEQREAD, MetricId::higher(THROUGHPUT, Unit::MibPerSec), seq * wobble),
                        m(STATREAD, MetricId::higher(RATE, Unit::OpsPerSec), mean * 10.0 * wobble),
                        m(LAYOUT, MetricId::lower(EXTENTS, Unit::Ratio), ext),
                        m(LAYOUT, MetricId::lower(FRAGMENTED, Unit::Percent), (ext - 1.0) * 50.0),
                    ];
                    id += 1;
                    data.samples.push(crate::report::fixture::sample(
                        id,
                        &case_id,
                        r as u32,
                        false,
                        SampleStatus::Ok,
                        &[],
                        ms,
                    ));
                }
            }
        }
        data.session.info.policy.confidence = 0.95;
        crate::report::build(&data, 0, 0.95)
    }

    #[test]
    fn the_penalty_layout_and_ranking_follow_the_rows() {
        let m = model();
        let text = AgingSection.markdown(&m);
        assert!(text.contains("## Aging: aged against fresh"), "{text}");
        let line = |start: &str| {
            text.lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("no {start}: {text}"))
                .to_string()
        };
        let ext4 = line("| ext4 |").replace('\\', "");
        assert!(ext4.contains("| 100 | 60.0 | 0.60 ["), "{ext4}");
        assert!(ext4.contains("| 1.00 → 1.80 | 0 → 40.0 |"), "{ext4}");
        // The interval holds the ratio and is narrow for a ±2 % wobble.
        let ci = crate::report::fixture::interval(&ext4);
        assert!(ci.0 < 0.6 && ci.1 > 0.6 && ci.1 - ci.0 < 0.1, "{ci:?}");
        assert!(
            text.contains("fresh: ext4, xfs; aged: xfs, ext4 — the ranking changes, and so does the first (means"),
            "{text}"
        );
        // The other measured workloads: a row per filesystem, a ranking each.
        let seq = line("| sequential read of the largest file (MiB/s) | ext4 |").replace('\\', "");
        assert!(seq.contains("| 500 | 200 | 0.40 ["), "{seq}");
        let grep = line("| grep-like scan (MiB/s) | xfs |").replace('\\', "");
        assert!(grep.contains("| 45.0 | 40.0 | 0.89 ["), "{grep}");
        assert!(line("| stat + 4 KiB read per file (files/s) | ext4 |").contains("| 1000 | 600 |"));
        assert!(
            text.contains("Sequential read of the largest file, by mean MiB/s: fresh: ext4, xfs; aged: xfs, ext4 — the ranking changes, and so does the first"),
            "{text}"
        );
        assert!(
            text.contains("Grep-like scan, by mean MiB/s: fresh: ext4, xfs; aged: xfs, ext4"),
            "{text}"
        );
        let html = AgingSection.html(&m);
        assert!(html.contains("<td>stat + 4 KiB read per file (files/s)</td>"), "{html}");
        assert!(
            html.contains("<h2 id=\"aging-aged\">") && html.contains("0.60 ["),
            "{html}"
        );
    }

    #[test]
    fn a_swap_no_interval_decides_is_called_possible_noise() {
        let line = |v: &str, fresh: f64, aged: f64| Line {
            variant: v.into(),
            fresh,
            aged,
            ratio: String::new(),
            decided: Some(false),
            extents: String::new(),
            pieces: String::new(),
        };
        let r = ranking(&[line("ext4", 100.0, 90.0), line("xfs", 95.0, 97.0)]);
        assert!(
            r.contains("the ranking changes, and so does the first, but no filesystem"),
            "{r}"
        );
        let r = ranking(&[line("ext4", 100.0, 99.0), line("xfs", 95.0, 94.0)]);
        assert!(r.contains("the ranking holds (means"), "{r}");
    }

    #[test]
    fn a_session_without_both_modes_has_no_section() {
        let mut m = model();
        m.workloads.retain(|t| t.workload != "fresh");
        assert_eq!(AgingSection.markdown(&m), "");
        assert_eq!(AgingSection.html(&m), "");
    }
}
