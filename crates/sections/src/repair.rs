//! The repair-scaling curves (issue 30): for every workload of kind `repair_scaling`, how a
//! full read-only check and a mount grow with the number of files on each filesystem.
//!
//! - **Exponents**: per filesystem and phase kind (`check`, `mount`, `mount_cut`), the power
//!   law `time ∝ files^k` fitted by least squares of log(time) on log(files) over every
//!   measured repeat at every count, with the exponent's t interval at the session's confidence
//!   ([`crate::stats::powerlaw`]): "ext4 e2fsck: time ∝ files^1.02 [0.95, 1.09]".
//! - **Table**: per filesystem and count, the checker and its version (from the repeat's
//!   `checker:` note, [`crate::engine::workloads::repair_scaling::CHECKER_NOTE`]), the mean
//!   check time, the checker's peak resident set, and the mean mount times (clean, after a cut).
//! - **Chart** (HTML): check time against files on log-log axes, a line per filesystem through
//!   the means (`charts::line_chart`, [`YScale::Log`]).
//!
//! Invariants: built from the report model (stored rows and notes) only; a session without a
//! `repair_scaling` workload renders "" (no heading); what it shows is the report's blocks
//! ([`crate::report::block`]), which the report renders and escapes (the chart's figure is made
//! by the report's charts).

use crate::engine::workloads::repair_scaling::{self as rs, CHECK, CHECKER_NOTE, CHECK_RSS, MOUNT, MOUNT_CUT, TIME};
use crate::report::block::{Block, Formats, Item, Table};
use crate::report::charts::{css_color, line_chart, log_axis, Line, LineAxes, LineStyle, YScale};
use crate::report::escape::html as esc;
use crate::report::{ReportModel, Section, WorkloadTable};
use crate::stats::powerlaw::{self, PowerFit};
use std::collections::BTreeMap;

/// The repair-scaling section of a session's report.
pub struct RepairSection;

/// The kind of workload this section reads.
const KIND: &str = "repair_scaling";

/// One filesystem's figures in one repair_scaling workload.
#[derive(Default)]
struct Curves {
    /// Per phase kind, per file count: the measured values (seconds or MiB) of every repeat.
    time: BTreeMap<&'static str, BTreeMap<u64, Vec<f64>>>,
    rss: BTreeMap<u64, Vec<f64>>,
    /// `e2fsck -f -n`, and its version line.
    checker: Option<(String, String)>,
}

fn kind_of(prefix: &str) -> Option<&'static str> {
    [CHECK, MOUNT, MOUNT_CUT].into_iter().find(|k| *k == prefix)
}

/// Per variant index (the session's column order), its curves in workload `t`.
fn curves(model: &ReportModel, t: &WorkloadTable) -> BTreeMap<usize, Curves> {
    let mut out: BTreeMap<usize, Curves> = BTreeMap::new();
    for row in &t.rows {
        let Some((prefix, count)) = rs::parse_phase(&row.phase) else {
            continue;
        };
        let Some(kind) = kind_of(prefix) else { continue };
        for c in &row.cells {
            let Some(v) = model.variants.iter().position(|x| *x == c.variant) else {
                continue;
            };
            let cur = out.entry(v).or_default();
            if row.metric.name == TIME {
                cur.time.entry(kind).or_default().insert(count, c.values.clone());
            } else if row.metric.name == CHECK_RSS && kind == CHECK {
                cur.rss.insert(count, c.values.clone());
            }
        }
    }
    for (v, cur) in &mut out {
        cur.checker = checker(model, &t.workload, &model.variants[*v]);
    }
    out
}

/// The checker note of `variant`'s first measured repeat of `workload`, split at ` · `.
fn checker(model: &ReportModel, workload: &str, variant: &str) -> Option<(String, String)> {
    model
        .samples
        .iter()
        .filter(|s| {
            model
                .cases
                .iter()
                .any(|c| c.case_id == s.sample.case_id && c.workload == workload && c.variant == variant)
        })
        .flat_map(|s| s.sample.notes.iter())
        .find_map(|n| n.strip_prefix(CHECKER_NOTE))
        .map(|rest| match rest.split_once(" · ") {
            Some((tool, version)) => (tool.to_string(), version.to_string()),
            None => (rest.to_string(), String::new()),
        })
}

/// Every repeat's `(files, value)` of one kind.
fn points(per_count: &BTreeMap<u64, Vec<f64>>) -> Vec<(f64, f64)> {
    per_count
        .iter()
        .flat_map(|(&n, vs)| vs.iter().map(move |&v| (n as f64, v)))
        .collect()
}

fn mean(vs: &[f64]) -> Option<f64> {
    let finite: Vec<f64> = vs.iter().copied().filter(|v| v.is_finite()).collect();
    (!finite.is_empty()).then(|| finite.iter().sum::<f64>() / finite.len() as f64)
}

/// `1.02` (`0.00`, never `-0.00`).
fn k(v: f64) -> String {
    let r = (v * 100.0).round() / 100.0;
    format!("{:.2}", if r == 0.0 { 0.0 } else { r })
}

/// "time ∝ files^1.02 [0.95, 1.09] (9 points, R² 0.998)", or why there is no fit.
fn law(fit: Option<PowerFit>) -> String {
    match fit {
        Some(f) => format!(
            "time ∝ files^{} [{}, {}] ({} points, R² {:.3})",
            k(f.exponent),
            k(f.ci.0),
            k(f.ci.1),
            f.n,
            f.r2
        ),
        None => "no fit (needs 3 measured repeats over 2 file counts or more)".into(),
    }
}

/// The fitted sentences of one filesystem: the check's, then the mounts' where measured.
fn sentences(variant: &str, cur: &Curves, confidence: f64) -> Vec<String> {
    // The command without its options: `e2fsck`, `xfs_repair`, `btrfs check`.
    let program = cur
        .checker
        .as_ref()
        .map(|(tool, _)| {
            let words: Vec<&str> = tool.split_whitespace().take_while(|w| !w.starts_with('-')).collect();
            words.join(" ")
        })
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "check".to_string());
    let mut out = Vec::new();
    for (kind, what) in [
        (CHECK, program.as_str()),
        (MOUNT, "mount"),
        (MOUNT_CUT, "mount after a cut"),
    ] {
        if let Some(per) = cur.time.get(kind) {
            out.push(format!(
                "{variant} {what}: {}",
                law(powerlaw::fit(&points(per), confidence))
            ));
        }
    }
    out
}

/// `3.89`, `0.0142`; `—` for none.
fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_string(), crate::report::number::value)
}

/// `1,000,000`.
fn files(n: u64) -> String {
    crate::report::words::thousands(n)
}

/// The table's rows: filesystem, checker, files, check s, peak RSS MiB, mount s, cut mount s.
fn table_rows(model: &ReportModel, all: &BTreeMap<usize, Curves>) -> Vec<[String; 7]> {
    let mut rows = Vec::new();
    for (&v, cur) in all {
        let checker = cur
            .checker
            .as_ref()
            .map(|(t, ver)| {
                if ver.is_empty() {
                    t.clone()
                } else {
                    format!("{t} ({ver})")
                }
            })
            .unwrap_or_default();
        let counts: std::collections::BTreeSet<u64> = cur.time.values().flat_map(|m| m.keys().copied()).collect();
        for n in counts {
            let at = |kind: &str| cur.time.get(kind).and_then(|m| m.get(&n)).and_then(|vs| mean(vs));
            rows.push([
                model.variants[v].clone(),
                checker.clone(),
                files(n),
                cell(at(CHECK)),
                cell(cur.rss.get(&n).and_then(|vs| mean(vs))),
                cell(at(MOUNT)),
                cell(at(MOUNT_CUT)),
            ]);
        }
    }
    rows
}

const HEAD: [&str; 7] = [
    "filesystem",
    "checker (version)",
    "files",
    "check (s)",
    "checker peak RSS (MiB)",
    "mount (s)",
    "mount after a cut (s)",
];

const INTRO: &str = "How the full read-only check (after a clean unmount), the mount after that unmount and the mount after a cut (FS_IOC_SHUTDOWN without a log flush, then unmount: the log is replayed) grow with the number of files. The exponent k of time ∝ files^k is the slope of the least-squares line of log(time) on log(files) over every measured repeat, with its t interval (k = 1: linear in the files; under 1: a fixed cost dominates).";

/// The HTML chart: check time against files, log-log, a line per filesystem through the means.
fn chart(
    all: &BTreeMap<usize, Curves>,
    variants: &[String],
    workload: &str,
) -> Result<String, crate::report::charts::ChartError> {
    let lines: Vec<Line> = all
        .iter()
        .filter_map(|(&v, cur)| {
            let per = cur.time.get(CHECK)?;
            Some(Line {
                index: v,
                name: variants.get(v).cloned().unwrap_or_default(),
                points: per
                    .iter()
                    .filter_map(|(&n, vs)| mean(vs).filter(|m| *m > 0.0).map(|m| (n as f64, m)))
                    .collect(),
                style: LineStyle::Dots,
            })
        })
        .collect();
    let pts = || lines.iter().flat_map(|l| l.points.iter().copied());
    let (x_range, x_keys) = log_axis(
        pts().map(|p| p.0).fold(f64::INFINITY, f64::min),
        pts().map(|p| p.0).fold(0.0, f64::max),
    );
    let (y_range, y_keys) = log_axis(
        pts().map(|p| p.1).fold(f64::INFINITY, f64::min),
        pts().map(|p| p.1).fold(0.0, f64::max),
    );
    let x_fmt = |x: f64| files(x.round() as u64);
    let y_fmt = |y: f64| {
        let v = crate::report::number::value(y);
        let v = if v.contains('.') && !v.contains('e') {
            v.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            v
        };
        format!("{v} s")
    };
    let label = format!("{workload}: full check time against files (log-log)");
    line_chart(
        &LineAxes {
            label: &label,
            x: x_range,
            x_log: true,
            x_keys,
            x_fmt: &x_fmt,
            x_desc: "files (log scale)",
            y_desc: "check time (s, log scale)",
            y: YScale::Log {
                range: y_range,
                keys: y_keys,
                fmt: &y_fmt,
            },
            size: (720, 300),
        },
        &lines,
    )
}

fn tables(model: &ReportModel) -> impl Iterator<Item = &WorkloadTable> {
    model.workloads.iter().filter(|t| t.kind == KIND)
}

impl Section for RepairSection {
    fn blocks(&self, model: &ReportModel) -> Vec<Block> {
        let confidence = model.session.info.policy.confidence;
        let mut out = Vec::new();
        for t in tables(model) {
            let all = curves(model, t);
            if all.is_empty() {
                continue;
            }
            out.push(Block::Heading {
                level: 2,
                text: format!("Repair scaling: {}", t.workload),
                id: Some(format!("repair-{}", t.workload)),
            });
            out.push(Block::paragraph(INTRO).only(Formats::MARKDOWN));
            out.push(
                Block::paragraph(format!("{INTRO} Intervals at {:.0} %.", confidence * 100.0)).only(Formats::HTML),
            );
            let items = all
                .iter()
                .flat_map(|(&v, cur)| {
                    sentences(&model.variants[v], cur, confidence)
                        .into_iter()
                        .map(move |text| Item {
                            text,
                            swatch: Some(css_color(v)),
                        })
                })
                .collect();
            out.push(Block::List {
                class: Some("repair-fits".into()),
                items,
            });
            let caption = format!(
                "{}: mean time of the full read-only check against the number of files, log-log, one line per filesystem.",
                t.workload
            );
            let mut figure = String::new();
            crate::report::caption::figure(
                &mut figure,
                model,
                "chart-repair",
                &format!(" data-workload=\"{}\"", esc(&t.workload)),
                chart(&all, &model.variants, &t.workload),
                &esc(&caption),
            );
            out.push(Block::Html(figure));
            out.push(Block::Table(Table {
                class: Some("repair".into()),
                head: HEAD.iter().map(|h| h.to_string()).collect(),
                rows: table_rows(model, &all)
                    .into_iter()
                    .map(|r| r.into_iter().map(Into::into).collect())
                    .collect(),
                numeric_from: Some(2),
                left: Vec::new(),
                text_omits: None,
            }));
            out.push(
                Block::paragraph(format!(
                    "Means over measured repeats; the intervals are {:.0} %.",
                    confidence * 100.0
                ))
                .only(Formats::MARKDOWN),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::{MetricId, Role, Unit};
    use crate::store::{CaseAvailability, CaseRecord, SampleStatus};

    /// A session of repair_scaling on ext4 (check time linear in the files) and xfs (quadratic),
    /// 3 repeats at 10⁴, 10⁵, 10⁶ files, ±2 % around the law; xfs has no cut mount.
    fn model() -> ReportModel {
        let mut data = crate::report::fixture::session_data();
        data.cases.clear();
        data.samples.clear();
        let mut id = 0;
        for (variant, k, tool) in [
            ("ext4", 1.0, "e2fsck -f -n · e2fsck 1.47.0 (5-Feb-2023)"),
            ("xfs", 2.0, "xfs_repair -n · xfs_repair version 6.1.0"),
        ] {
            let case_id = format!("{variant}-rs");
            data.cases.push(CaseRecord {
                case_id: case_id.clone(),
                variant: variant.into(),
                fs_type: variant.into(),
                mkfs_args: vec![],
                mount_opts: vec![],
                workload: "repair".into(),
                workload_kind: KIND.into(),
                workload_json: "{}".into(),
                availability: CaseAvailability::Available,
            });
            for (r, wobble) in [0.98, 1.0, 1.02].into_iter().enumerate() {
                let mut ms = Vec::new();
                let m = |phase: String, metric: MetricId, value: f64| crate::report::fixture::m(&phase, metric, value);
                for n in [10_000u64, 100_000, 1_000_000] {
                    let x = n as f64 / 1e4;
                    let time = MetricId::lower(TIME, Unit::Seconds);
                    ms.push(m(rs::phase_name(CHECK, n), time.clone(), 0.1 * x.powf(k) * wobble));
                    ms.push(m(
                        rs::phase_name(CHECK, n),
                        MetricId::lower(CHECK_RSS, Unit::Mib).with_role(Role::Detail),
                        4.0 * x,
                    ));
                    ms.push(m(rs::phase_name(MOUNT, n), time.clone(), 0.05 * wobble));
                    if variant == "ext4" {
                        ms.push(m(rs::phase_name(MOUNT_CUT, n), time.clone(), 0.06 * wobble));
                    }
                }
                id += 1;
                let note = format!("{CHECKER_NOTE}{tool}");
                data.samples.push(crate::report::fixture::sample(
                    id,
                    &case_id,
                    r as u32,
                    false,
                    SampleStatus::Ok,
                    &[&note],
                    ms,
                ));
            }
        }
        data.session.info.policy.confidence = 0.95;
        crate::report::build(&data, 0, 0.95)
    }

    #[test]
    fn exponents_table_and_chart_follow_the_stored_rows() {
        let m = model();
        let text = RepairSection.markdown(&m);
        assert!(text.contains("## Repair scaling: repair"), "{text}");
        let line = |start: &str| {
            text.lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("no {start}: {text}"))
                .to_string()
        };
        // The fitted exponents: 1 for ext4's check, 2 for xfs's, 0 for the constant mounts,
        // each inside its interval.
        let exp = |l: &str| -> (f64, f64, f64) {
            let after = l.split("files^").nth(1).expect("an exponent");
            let nums: Vec<f64> = after
                .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
                .filter(|s| !s.is_empty())
                .take(3)
                .map(|s| s.parse().expect("number"))
                .collect();
            (nums[0], nums[1], nums[2])
        };
        for (start, want) in [
            ("- ext4 e2fsck:", 1.0),
            ("- xfs xfs_repair:", 2.0),
            ("- ext4 mount:", 0.0),
        ] {
            let (k, lo, hi) = exp(&line(start));
            assert!(
                (k - want).abs() < 0.01 && lo <= want && want <= hi,
                "{start} {k} [{lo}, {hi}]"
            );
        }
        assert!(line("- ext4 e2fsck:").contains("9 points"));
        assert!(line("- ext4 mount after a cut:").contains("files^"));
        assert!(!text.contains("xfs mount after a cut"), "xfs measured none: {text}");
        // The table names checker and version, and the means.
        let row = line("| ext4 | e2fsck -f -n (e2fsck 1.47.0 (5-Feb-2023)) | 1,000,000 |");
        assert!(row.contains("| 10.00 | 400.0 | 0.05000 | 0.06000 |"), "{row}");
        let xfs = line("| xfs | xfs_repair -n (xfs_repair version 6.1.0) | 10,000 |");
        assert!(xfs.ends_with("| — |"), "no cut mount on xfs: {xfs}");
        // HTML: one log-log chart with a line per filesystem, rising left to right.
        let html = RepairSection.html(&m);
        assert_eq!(html.matches("<figure").count(), 1, "{html}");
        for v in ["ext4", "xfs"] {
            let pts = crate::report::charts::series_points(&html, v);
            assert_eq!(pts.len(), 3, "{v}: {html}");
            // SVG y grows downwards: more files, a longer check, a higher point.
            assert!(pts[0].0 < pts[2].0 && pts[2].1 < pts[0].1, "{v}: {pts:?}");
        }
        assert!(html.contains("time ∝ files^1.00"), "{html}");
        assert!(
            html.contains("<td>e2fsck -f -n (e2fsck 1.47.0 (5-Feb-2023))</td>"),
            "{html}"
        );
    }

    #[test]
    fn sentences_name_the_checker_command_without_its_options() {
        let mut cur = Curves::default();
        let per: BTreeMap<u64, Vec<f64>> = [(1_000, vec![0.01, 0.011]), (10_000, vec![0.1, 0.098])].into();
        cur.time.insert(CHECK, per);
        cur.checker = Some(("btrfs check --readonly".into(), "btrfs-progs v6.2".into()));
        let s = sentences("btrfs", &cur, 0.95);
        assert_eq!(s.len(), 1, "{s:?}");
        assert!(s[0].starts_with("btrfs btrfs check: time ∝ files^"), "{s:?}");
        cur.checker = None;
        assert!(sentences("btrfs", &cur, 0.95)[0].starts_with("btrfs check: "));
    }

    #[test]
    fn a_session_without_repair_scaling_renders_nothing() {
        let data = crate::report::fixture::session_data();
        let m = crate::report::build(&data, 0, 0.95);
        assert_eq!(RepairSection.markdown(&m), "");
        assert_eq!(RepairSection.html(&m), "");
    }
}
