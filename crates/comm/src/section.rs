//! The report's section on many-rank sessions: per case, the cluster figures of every phase
//! (aggregate, fair share, slowest rank, straggler index, barrier cost), the per-rank table and
//! a per-rank timeline chart (start/end bar of every rank in every phase, seconds from the
//! phase's sync). Read from the stored samples only (rows with a `rank`, see [`super::ranks`]);
//! a session of one rank has none, so its report is unchanged (the section renders to "").
//!
//! Shown for the first measured, successful repeat of each case: the figures of every repeat
//! are in the main tables (rates, fair share) and in the exports. First, every rank's
//! fingerprint (host, the mount of the ranks' directory, clock offset; `rank_hosts`).

use crate::metric::Unit;
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

/// The Ranks section of a session's report, for [`crate::report::render`]: [`markdown`] and
/// [`html`] ("" for a one-rank session).
pub struct RanksSection;

impl crate::report::Section for RanksSection {
    fn markdown(&self, model: &ReportModel) -> String {
        markdown(model)
    }

    fn html(&self, model: &ReportModel) -> String {
        html(model)
    }
}

/// The Markdown section ("" for a one-rank session).
pub fn markdown(model: &ReportModel) -> String {
    let cases = collect(model);
    let mut out = String::new();
    let ranks = &model.session.info.ranks;
    if cases.is_empty() && ranks.is_empty() {
        return out;
    }
    let md = escape::markdown;
    out.push_str("\n## Ranks\n");
    if !ranks.is_empty() {
        out.push_str(
            "\n| rank | host | kernel | CPU | memory | ranks' directory | mount | clock offset |\n|--:|:--|:--|:--|--:|:--|:--|--:|\n",
        );
        for r in ranks {
            let c = host_cells(r);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                r.rank,
                md(&c[0]),
                md(&c[1]),
                md(&c[2]),
                md(&c[3]),
                md(&c[4]),
                md(&c[5]),
                md(&c[6])
            );
        }
    }
    for c in &cases {
        let _ = writeln!(out, "\n### {} (repeat {})\n", md(&c.title), c.repeat);
        out.push_str("| phase | figure | value |\n|:--|:--|--:|\n");
        for p in &c.phases {
            for (n, v) in &p.cluster {
                let _ = writeln!(out, "| {} | {} | {} |", md(&p.phase), md(n), num(*v));
            }
        }
        out.push_str("\n| phase | rank | start s | end s | wall s | rates |\n|:--|--:|--:|--:|--:|:--|\n");
        for p in &c.phases {
            for r in &p.ranks {
                let rates: Vec<String> = r.rates.iter().map(|(n, v)| format!("{} {}", md(n), num(*v))).collect();
                let _ = writeln!(
                    out,
                    "| {} | {} | {:.4} | {:.4} | {:.4} | {} |",
                    md(&p.phase),
                    r.rank,
                    r.start,
                    r.end,
                    r.wall,
                    rates.join(", ")
                );
            }
        }
    }
    out
}

/// The HTML section with a timeline chart per case ("" for a one-rank session).
pub fn html(model: &ReportModel) -> String {
    let cases = collect(model);
    let mut out = String::new();
    let ranks = &model.session.info.ranks;
    if cases.is_empty() && ranks.is_empty() {
        return out;
    }
    let h = escape::html;
    out.push_str("<h2 id=\"ranks\">Ranks</h2>\n");
    if !ranks.is_empty() {
        out.push_str("<table><tr><th>rank</th><th>host</th><th>kernel</th><th>CPU</th><th>memory</th><th>ranks' directory</th><th>mount</th><th>clock offset</th></tr>\n");
        for r in ranks {
            let c = host_cells(r);
            let _ = write!(out, "<tr><td>{}</td>", r.rank);
            for cell in &c {
                let _ = write!(out, "<td>{}</td>", h(cell));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    }
    for c in &cases {
        let _ = writeln!(out, "<h3>{} (repeat {})</h3>", h(&c.title), c.repeat);
        out.push_str(&timeline_svg(c));
        out.push_str("<table><tr><th>phase</th><th>figure</th><th>value</th></tr>\n");
        for p in &c.phases {
            for (n, v) in &p.cluster {
                let _ = writeln!(
                    out,
                    "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                    h(&p.phase),
                    h(n),
                    num(*v)
                );
            }
        }
        out.push_str("</table>\n<table><tr><th>phase</th><th>rank</th><th>start s</th><th>end s</th><th>wall s</th><th>rates</th></tr>\n");
        for p in &c.phases {
            for r in &p.ranks {
                let rates: Vec<String> = r.rates.iter().map(|(n, v)| format!("{} {}", h(n), num(*v))).collect();
                let _ = writeln!(
                    out,
                    "<tr><td>{}</td><td>{}</td><td>{:.4}</td><td>{:.4}</td><td>{:.4}</td><td>{}</td></tr>",
                    h(&p.phase),
                    r.rank,
                    r.start,
                    r.end,
                    r.wall,
                    rates.join(", ")
                );
            }
        }
        out.push_str("</table>\n");
    }
    out
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
