//! The report's section on many-rank sessions: per case, the cluster figures of every phase
//! (aggregate, fair share, slowest rank, straggler index, barrier cost), the per-rank table and
//! a per-rank timeline chart (start/end bar of every rank in every phase, seconds from the
//! phase's sync). Read from the stored samples only (rows with a `rank`, see [`super::ranks`]);
//! a session of one rank has none, so its report is unchanged (the section renders to "").
//! The section says what it shows once, as [`crate::report::block`]s, which the report lays out
//! in Markdown and HTML and escapes; the timeline is the page's SVG, escaped here. A paragraph
//! says once what a phase's rate figures are (time-based: over the window all ranks ran in;
//! fixed work: all the work over first start to last end).
//!
//! Shown for the first measured, successful repeat of each case: the figures of every repeat
//! are in the main tables (rates, fair share) and in the exports. First, every rank's
//! fingerprint (host, the mount of the ranks' directory, clock offset; `rank_hosts`).

use crate::metric::Unit;
use crate::report::block::{Block, Table};
use crate::report::escape;
use crate::report::ReportModel;
use crate::store::SampleStatus;
use std::fmt::Write;

/// One rank in one phase.
struct RankRow {
    rank: usize,
    start: f64,
    end: f64,
    wall: f64,
    rates: Vec<(String, f64)>,
}

/// One phase of one case.
struct PhaseView {
    phase: String,
    cluster: Vec<(String, f64)>,
    ranks: Vec<RankRow>,
}

/// One case's first measured repeat.
struct CaseView {
    title: String,
    repeat: u32,
    phases: Vec<PhaseView>,
}

/// What the rate figures of a phase are (`ranks` module documentation), said once.
const FIGURES: &str = "A phase's rate rows (the headline, ranked in the tables above) are the \
cluster's. A time-based phase counts, from every rank's per-second series, the work done while \
all ranks were running (latest start to earliest end) over that window. A fixed-work phase \
(no series) counts all the ranks' work over first start to last end, IOR's aggregate: a \
straggler's tail is time the cluster took. Below, ..._rank_sum is the sum of the ranks' \
average rates (steady ranks assumed: optimistic under skew) and ..._fair_share all the work \
over first start to last end.";

const CLUSTER: [&str; 3] = ["slowest_rank_s", "straggler_index", "barrier_s"];

fn collect(model: &ReportModel) -> Vec<CaseView> {
    let mut out = Vec::new();
    for case in &model.cases {
        let Some(s) = model
            .samples
            .iter()
            .map(|s| &s.sample)
            .find(|s| s.case_id == case.case_id && !s.is_warmup && matches!(s.status, SampleStatus::Ok))
        else {
            continue;
        };
        if !s.measurements.iter().any(|m| m.rank.is_some()) {
            continue;
        }
        let mut phases: Vec<PhaseView> = Vec::new();
        for m in &s.measurements {
            if let Some(rank) = m.rank {
                let rank = rank as usize;
                let Some(pv) = phases.iter_mut().find(|p| p.phase == m.phase) else {
                    continue;
                };
                let row = match pv.ranks.iter().position(|r| r.rank == rank) {
                    Some(i) => &mut pv.ranks[i],
                    None => {
                        pv.ranks.push(RankRow {
                            rank,
                            start: 0.0,
                            end: 0.0,
                            wall: 0.0,
                            rates: vec![],
                        });
                        pv.ranks.last_mut().expect("just pushed")
                    }
                };
                match m.metric.name.as_str() {
                    "start_s" => row.start = m.value,
                    "end_s" => row.end = m.value,
                    "wall_s" => row.wall = m.value,
                    _ if matches!(m.metric.unit, Unit::MibPerSec | Unit::OpsPerSec) => row
                        .rates
                        .push((format!("{} ({})", m.metric.name, m.metric.unit.as_str()), m.value)),
                    _ => {}
                }
            } else if s.measurements.iter().any(|x| x.phase == m.phase && x.rank == Some(0)) {
                let pv = match phases.iter().position(|p| p.phase == m.phase) {
                    Some(i) => &mut phases[i],
                    None => {
                        phases.push(PhaseView {
                            phase: m.phase.clone(),
                            cluster: vec![],
                            ranks: vec![],
                        });
                        phases.last_mut().expect("just pushed")
                    }
                };
                let n = m.metric.name.as_str();
                if CLUSTER.contains(&n) || matches!(m.metric.unit, Unit::MibPerSec | Unit::OpsPerSec) {
                    pv.cluster.push((format!("{n} ({})", m.metric.unit.as_str()), m.value));
                }
            }
        }
        out.push(CaseView {
            title: format!("{} × {}", case.variant, case.workload),
            repeat: s.repeat + 1,
            phases,
        });
    }
    out
}

/// The cells of a rank's fingerprint row after its number: host, kernel, CPU, memory, the
/// ranks' directory, its mount (source on point, type, options), clock offset.
fn host_cells(r: &crate::store::RankHost) -> [String; 7] {
    [
        r.host.hostname.clone(),
        r.host.kernel.clone(),
        format!("{} × {}", r.host.ncpu, r.host.cpu_model),
        format!("{:.1} GiB", r.host.mem_bytes as f64 / (1u64 << 30) as f64),
        r.dir.clone(),
        format!(
            "{} on {} type {} ({}; {})",
            r.mount_source, r.mount_point, r.fs_type, r.mount_opts, r.super_opts
        ),
        format!(
            "{:.1} µs ± {:.1}",
            r.clock_offset_ns as f64 / 1e3,
            r.clock_rtt_ns as f64 / 2e3
        ),
    ]
}

fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
    }
}

/// The Ranks section of a session's report, for [`crate::report::render`]: the fingerprint
/// table, then per case its timeline chart (the page only) and its two tables (no blocks for a
/// one-rank session).
pub struct RanksSection;

/// A table of `head` and `rows` whose columns from `numeric_from` on are numbers, but for the
/// words of the `left` columns.
fn table(head: &[&str], rows: Vec<Vec<String>>, numeric_from: usize, left: &[usize]) -> Block {
    Block::Table(Table {
        head: head.iter().map(|h| h.to_string()).collect(),
        rows: rows
            .into_iter()
            .map(|r| r.into_iter().map(Into::into).collect())
            .collect(),
        numeric_from: Some(numeric_from),
        left: left.to_vec(),
        ..Table::default()
    })
}

impl crate::report::Section for RanksSection {
    fn blocks(&self, model: &ReportModel) -> Vec<Block> {
        let cases = collect(model);
        let ranks = &model.session.info.ranks;
        if cases.is_empty() && ranks.is_empty() {
            return Vec::new();
        }
        let mut out = vec![Block::Heading {
            level: 2,
            text: "Ranks".into(),
            id: Some("ranks".into()),
        }];
        if !ranks.is_empty() {
            let rows = ranks
                .iter()
                .map(|r| std::iter::once(r.rank.to_string()).chain(host_cells(r)).collect())
                .collect();
            out.push(table(
                &[
                    "rank",
                    "host",
                    "kernel",
                    "CPU",
                    "memory",
                    "ranks' directory",
                    "mount",
                    "clock offset",
                ],
                rows,
                0,
                &[1, 2, 3, 5, 6],
            ));
        }
        if !cases.is_empty() {
            out.push(Block::Paragraph(FIGURES.into()));
        }
        for c in &cases {
            out.push(Block::heading(3, format!("{} (repeat {})", c.title, c.repeat)));
            out.push(Block::Html(timeline_svg(c)));
            let figures = c
                .phases
                .iter()
                .flat_map(|p| p.cluster.iter().map(|(n, v)| vec![p.phase.clone(), n.clone(), num(*v)]))
                .collect();
            out.push(table(&["phase", "figure", "value"], figures, 2, &[0, 1]));
            let per_rank = c
                .phases
                .iter()
                .flat_map(|p| {
                    p.ranks.iter().map(|r| {
                        let rates: Vec<String> = r.rates.iter().map(|(n, v)| format!("{n} {}", num(*v))).collect();
                        vec![
                            p.phase.clone(),
                            r.rank.to_string(),
                            format!("{:.4}", r.start),
                            format!("{:.4}", r.end),
                            format!("{:.4}", r.wall),
                            rates.join(", "),
                        ]
                    })
                })
                .collect();
            out.push(table(
                &["phase", "rank", "start s", "end s", "wall s", "rates"],
                per_rank,
                1,
                &[0, 5],
            ));
        }
        out
    }
}

/// One row per phase and rank: a bar from the rank's start to its end, seconds after the
/// phase's sync released (the dashed line at 0).
fn timeline_svg(c: &CaseView) -> String {
    let rows: Vec<(&str, &RankRow)> = c
        .phases
        .iter()
        .flat_map(|p| p.ranks.iter().map(move |r| (p.phase.as_str(), r)))
        .collect();
    let t_max = rows.iter().map(|(_, r)| r.end).fold(0.0f64, f64::max).max(1e-6);
    let t_min = rows.iter().map(|(_, r)| r.start).fold(0.0f64, f64::min);
    let (label_w, plot_w, row_h) = (190.0, 560.0, 14.0);
    let height = row_h * rows.len() as f64 + 30.0;
    let x = |t: f64| label_w + (t - t_min) / (t_max - t_min) * plot_w;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" role=\"img\" aria-label=\"per-rank timeline\" font-size=\"10\" font-family=\"sans-serif\">\n",
        label_w + plot_w + 20.0
    );
    for (i, (phase, r)) in rows.iter().enumerate() {
        let y = 5.0 + row_h * i as f64;
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{} rank {}</text><rect x=\"{:.1}\" y=\"{y}\" width=\"{:.1}\" height=\"{}\" fill=\"#4878a8\"><title>{} rank {}: {:.4}–{:.4} s</title></rect>",
            label_w - 4.0,
            y + row_h - 4.0,
            escape::html(phase),
            r.rank,
            x(r.start),
            (x(r.end) - x(r.start)).max(0.5),
            row_h - 3.0,
            escape::html(phase),
            r.rank,
            r.start,
            r.end
        );
    }
    let base = height - 20.0;
    let _ = writeln!(
        s,
        "<line x1=\"{0:.1}\" y1=\"0\" x2=\"{0:.1}\" y2=\"{base}\" stroke=\"#888\" stroke-dasharray=\"3,3\"/><text x=\"{0:.1}\" y=\"{1}\" text-anchor=\"middle\">0 (sync)</text><text x=\"{2:.1}\" y=\"{1}\" text-anchor=\"end\">{3:.3} s after each phase's sync</text>\n</svg>",
        x(0.0),
        base + 12.0,
        label_w + plot_w,
        t_max
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::{Measurement, MetricId};
    use crate::report::fixture::{case, m, sample, session_data};
    use crate::report::Section;
    use crate::store::{HostInfo, RankHost};

    /// Two ranks of fileio on ext4 whose `rndrw` phase rank 1 ends later.
    fn model() -> ReportModel {
        let mut data = session_data();
        data.cases = vec![case("ext4", "ext4", "fileio", true)];
        data.samples.clear();
        let at = |rank: u32, metric: MetricId, value: f64| Measurement {
            rank: Some(rank),
            ..m("rndrw", metric, value)
        };
        let mut ms = vec![
            m("rndrw", MetricId::higher("throughput", Unit::MibPerSec), 150.0),
            m("rndrw", MetricId::lower("straggler_index", Unit::Ratio), 1.25),
        ];
        for (rank, end) in [(0, 2.0), (1, 2.5)] {
            ms.push(at(rank, MetricId::lower("start_s", Unit::Seconds), 0.001));
            ms.push(at(rank, MetricId::lower("end_s", Unit::Seconds), end));
            ms.push(at(rank, MetricId::lower("wall_s", Unit::Seconds), end - 0.001));
            ms.push(at(rank, MetricId::higher("throughput", Unit::MibPerSec), 75.0));
        }
        data.samples
            .push(sample(1, "ext4-fileio", 0, false, SampleStatus::Ok, &[], ms));
        data.session.info.ranks = (0..2)
            .map(|rank| RankHost {
                rank,
                host: HostInfo {
                    hostname: format!("node{rank}"),
                    kernel: "6.1.0".into(),
                    ncpu: 2,
                    cpu_model: "Xeon".into(),
                    mem_bytes: 4 << 30,
                },
                dir: "/scratch/run".into(),
                mount_point: "/scratch".into(),
                mount_source: "/dev/loop3".into(),
                fs_type: "ext4".into(),
                mount_opts: "rw,relatime".into(),
                super_opts: "rw".into(),
                clock_offset_ns: 1_500 * i64::from(rank),
                clock_rtt_ns: 800,
            })
            .collect();
        crate::report::build(&data, 0, 0.95)
    }

    #[test]
    fn every_rank_has_its_fingerprint_row_and_its_row_in_every_phase() {
        let m = model();
        let md = RanksSection.markdown(&m);
        assert!(md.starts_with("\n## Ranks\n"), "{md}");
        for k in 0..2 {
            assert!(
                md.lines()
                    .any(|l| l.starts_with(&format!("| {k} |")) && l.contains(&format!("| node{k} | 6.1.0 | 2 × Xeon | 4.0 GiB | /scratch/run | /dev/loop3 on /scratch type ext4 (rw,relatime; rw) |"))),
                "rank {k}'s fingerprint: {md}"
            );
        }
        assert!(md.contains("|---:|:---|:---|:---|---:|:---|:---|---:|"), "{md}");
        assert!(md.contains("\n### ext4 × fileio (repeat 1)\n"), "{md}");
        assert!(md.contains("over first start to last end, IOR's aggregate"), "{md}");
        assert!(md.contains("| rndrw | straggler_index (ratio) | 1.2500 |"), "{md}");
        assert!(
            md.contains("| rndrw | 1 | 0.0010 | 2.5000 | 2.4990 | throughput (MiB/s) 75.0000 |"),
            "{md}"
        );
        let html = RanksSection.html(&m);
        assert!(html.starts_with("<h2 id=\"ranks\">Ranks</h2>\n"), "{html}");
        assert!(html.contains("<th class=\"l\">ranks&#39; directory</th>"), "{html}");
        assert!(html.contains("aria-label=\"per-rank timeline\""), "{html}");
        assert!(html.contains("<title>rndrw rank 1: 0.0010–2.5000 s</title>"), "{html}");
        assert!(
            html.contains("<td class=\"l\">rndrw</td><td class=\"num\">1</td><td class=\"num\">0.0010</td>"),
            "{html}"
        );
    }

    #[test]
    fn a_one_rank_session_has_no_section() {
        let m = crate::report::build(&session_data(), 0, 0.95);
        assert_eq!(RanksSection.markdown(&m), "");
        assert_eq!(RanksSection.html(&m), "");
    }
}
