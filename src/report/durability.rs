//! The durability matrix (issue 28, item 5): for every `durability` workload in a session (one
//! cut method and disk model each, never mixed), a table of primitive × filesystem whose cell is
//! the damaged acknowledged units over those checked (and how many were lost, reverted, torn),
//! summed over the measured repeats (each already a sum over its cuts), as a rate with its 95 %
//! Wilson interval ([`crate::stats::rate::wilson`]); a replace adds how many files came back
//! old, new or neither. A cell that breaks its primitive's promise says `VIOLATION`; the
//! negative control's cell says `caught`, or `NOT CAUGHT` when the method lost nothing (its
//! zeros then prove nothing); where a filesystem documents more than POSIX for a primitive
//! ([`primitives::DOCUMENTED`]) and the cell damaged something, it says `FINDING` and names
//! the source. Two more rows per table: the mean recovery mount time with the
//! cuts after which the filesystem did not mount, and the cuts after which the read-only check
//! asked for a repair.
//!
//! Rendered as plain text (the terminal table), Markdown and HTML (with a heat map: each cell
//! from green, nothing damaged, to red, all damaged or the control not caught) from the report
//! model only; a session without a durability workload renders "".

use super::escape::{html as esc, markdown as md};
use super::{ReportModel, Section, WorkloadTable};
use crate::engine::workloads::durability::primitives::{self, Promise};
use crate::engine::workloads::durability::DurabilitySpec;
use crate::engine::workloads::powercut::Method;
use crate::stats::rate::{wilson, Z95};
use std::fmt::Write as _;

/// The durability section of a session's report.
pub struct DurabilitySection;

/// The kind of workload this section reads.
const KIND: &str = "durability";

/// One table: the workload, how it cut, its rows (primitive, promise, one cell per variant).
struct Matrix {
    workload: String,
    method: String,
    variants: Vec<String>,
    rows: Vec<(String, String, Vec<String>)>,
    /// Per row, per variant: how bad the cell is in [0, 1] for the HTML heat map (the damage
    /// rate; for the control 0 when caught, 1 when not), `None` where there is no rate.
    heat: Vec<Vec<Option<f64>>>,
}

/// The heat of `phase` on `variant` ([`Matrix::heat`]).
fn heat(t: &WorkloadTable, phase: &str, promise: Promise, variant: &str) -> Option<f64> {
    let damaged = total(t, phase, "damaged", variant)?;
    let acked = total(t, phase, "acked_units", variant).filter(|a| *a > 0)?;
    Some(match promise {
        Promise::Control => (damaged == 0) as u8 as f64,
        _ => damaged as f64 / acked as f64,
    })
}

/// What the filesystems document for primitive `name` (the table's words, and each
/// filesystem's own promise beyond POSIX).
fn documented(name: &str) -> String {
    let mut s = primitives::by_name(name).map_or(String::new(), |p| p.documented.to_string());
    for d in primitives::DOCUMENTED.iter().filter(|d| d.primitive == name) {
        let _ = write!(s, "; {} data={}: {}", d.fs_type, d.data_mode, d.source);
    }
    s
}

/// The sum over measured repeats of `metric` in `phase` on `variant`.
fn total(t: &WorkloadTable, phase: &str, metric: &str, variant: &str) -> Option<u64> {
    let c = t
        .rows
        .iter()
        .find(|r| r.phase == phase && r.metric.name == metric)?
        .cells
        .iter()
        .find(|c| c.variant == variant)?;
    (!c.values.is_empty()).then(|| c.values.iter().filter(|v| v.is_finite()).sum::<f64>().round() as u64)
}

/// The workload's stored parameters, if they parse.
fn spec(model: &ReportModel, t: &WorkloadTable) -> Option<DurabilitySpec> {
    let mut v = model
        .cases
        .iter()
        .find(|c| c.workload == t.workload && c.workload_kind == KIND)
        .and_then(|c| serde_json::from_str::<serde_json::Value>(&c.workload_json).ok())?;
    // The stored JSON carries the serde tag; the spec itself does not know it.
    if let Some(o) = v.as_object_mut() {
        o.remove("kind");
    }
    serde_json::from_value::<DurabilitySpec>(v).ok()
}

/// How the workload cut the power.
fn method(spec: Option<&DurabilitySpec>) -> String {
    match spec {
        Some(s) if s.method == Method::Shutdown => "FS_IOC_SHUTDOWN (NOLOGFLUSH)".into(),
        Some(s) => format!(
            "power-cut disk, model {}{}{}",
            s.disk_model.as_arg(),
            if s.disk_model.is_seeded() {
                format!(" (seed {})", s.seed)
            } else {
                String::new()
            },
            if s.writeback {
                ", dirty pages written back before each cut"
            } else {
                ""
            }
        ),
        None => "(parameters not stored)".into(),
    }
}

/// The recovery and check cells of `variant`: the mean recovery mount time with the cuts after
/// which the filesystem did not mount, and the cuts after which fsck asked for a repair, each
/// out of the cuts made (`cuts` per measured repeat).
fn recovery_cells(t: &WorkloadTable, variant: &str, cuts: u32) -> (String, String) {
    let values = |phase: &str, metric: &str| -> Vec<f64> {
        t.rows
            .iter()
            .find(|r| r.phase == phase && r.metric.name == metric)
            .and_then(|r| r.cells.iter().find(|c| c.variant == variant))
            .map(|c| c.values.clone())
            .unwrap_or_default()
    };
    let mounts = values("recovery", "recovery_mount_s");
    if mounts.is_empty() {
        return ("—".into(), "—".into());
    }
    let n = cuts as usize * mounts.len();
    let sum = |v: Vec<f64>| v.iter().sum::<f64>().round() as u64;
    (
        format!(
            "{:.3} s mean; failed {}/{n}",
            mounts.iter().sum::<f64>() / mounts.len() as f64,
            sum(values("recovery", "recovery_failed"))
        ),
        format!("repair needed {}/{n}", sum(values("fsck", "fsck_repair_needed"))),
    )
}

/// `damaged` of `acked` as a rate with its 95 % Wilson interval: `3/64 = 4.7 % [1.6, 12.9]`.
fn rate(damaged: u64, acked: u64) -> String {
    match wilson(damaged, acked, Z95) {
        Some((lo, hi)) => format!(
            "{damaged}/{acked} = {:.1} % [{:.1}, {:.1}]",
            100.0 * damaged as f64 / acked as f64,
            100.0 * lo,
            100.0 * hi
        ),
        None => format!("{damaged}/{acked}"),
    }
}

/// The filesystem's documented promise for `primitive` on `variant` when the cell broke it
/// (something damaged where the filesystem documents nothing would be).
fn finding(
    model: &ReportModel,
    t: &WorkloadTable,
    primitive: &str,
    variant: &str,
) -> Option<&'static primitives::Documented> {
    let case = model
        .cases
        .iter()
        .find(|c| c.workload == t.workload && c.variant == variant)?;
    let d = primitives::documented_for(primitive, &case.fs_type, &case.mount_opts)?;
    (total(t, primitive, "damaged", variant)? > 0).then_some(d)
}

/// The cell of `phase` on `variant`: `3/64 = 4.7 % [1.6, 12.9]` and its verdict words.
fn cell(t: &WorkloadTable, phase: &str, promise: Promise, variant: &str) -> String {
    let (Some(damaged), Some(acked)) = (
        total(t, phase, "damaged", variant),
        total(t, phase, "acked_units", variant),
    ) else {
        return "—".into();
    };
    let mut s = rate(damaged, acked);
    if damaged > 0 {
        let part = |m| total(t, phase, m, variant).unwrap_or(0);
        let _ = write!(
            s,
            " lost/reverted/torn {}/{}/{}",
            part("lost"),
            part("reverted"),
            part("torn")
        );
    }
    if let (Some(o), Some(n), Some(x)) = (
        total(t, phase, "rename_old", variant),
        total(t, phase, "rename_new", variant),
        total(t, phase, "rename_neither", variant),
    ) {
        let _ = write!(s, " old/new/neither {o}/{n}/{x}");
    }
    match promise {
        Promise::Durable | Promise::Atomic if total(t, phase, "violations", variant).unwrap_or(0) > 0 => {
            s.push_str(" VIOLATION")
        }
        Promise::Control if damaged > 0 => s.push_str(" caught"),
        Promise::Control => s.push_str(" NOT CAUGHT"),
        _ => {}
    }
    s
}

fn matrices(model: &ReportModel) -> Vec<Matrix> {
    let mut out = Vec::new();
    for t in model.workloads.iter().filter(|t| t.kind == KIND) {
        let variants: Vec<String> = model
            .variants
            .iter()
            .filter(|v| t.rows.iter().any(|r| r.cells.iter().any(|c| &c.variant == *v)))
            .cloned()
            .collect();
        let mut rows = Vec::new();
        let mut heats = Vec::new();
        for p in primitives::TABLE {
            if !t.rows.iter().any(|r| r.phase == p.name) {
                continue;
            }
            let cells = variants
                .iter()
                .map(|v| {
                    let mut c = cell(t, p.name, p.promise, v);
                    if let Some(d) = finding(model, t, p.name, v) {
                        let _ = write!(c, " FINDING ({})", d.cite);
                    }
                    c
                })
                .collect();
            rows.push((p.name.to_string(), p.promise.as_str().to_string(), cells));
            heats.push(variants.iter().map(|v| heat(t, p.name, p.promise, v)).collect());
        }
        if !rows.is_empty() {
            let spec = spec(model, t);
            let cuts = spec.as_ref().map_or(0, |s| s.total_cuts());
            let (mount, fsck): (Vec<String>, Vec<String>) = variants.iter().map(|v| recovery_cells(t, v, cuts)).unzip();
            rows.push(("recovery mount".into(), "after each cut".into(), mount));
            rows.push(("fsck (read-only)".into(), "after each cut".into(), fsck));
            heats.extend([vec![None; variants.len()], vec![None; variants.len()]]);
            out.push(Matrix {
                workload: t.workload.clone(),
                method: method(spec.as_ref()),
                variants,
                rows,
                heat: heats,
            });
        }
    }
    out
}

const INTRO: &str = "Damaged acknowledged units (lost + reverted + torn) over those checked, summed over the measured repeats and their cuts, with the 95 % Wilson interval of the rate; a replace also counts files found old, new or neither. VIOLATION: the primitive's promise broken. FINDING: a loss where the filesystem documents more than POSIX (the source named; its words in the documented column of the Markdown and HTML reports). The negative control must be caught (it was acknowledged with no sync); NOT CAUGHT means this method showed no loss and its zeros prove nothing.";

impl Matrix {
    /// The header and one line per row, as cells: primitive, promise, one per variant, and
    /// what is documented.
    fn lines(&self) -> Vec<Vec<String>> {
        let mut head = vec!["primitive".to_string(), "promise".to_string()];
        head.extend(self.variants.iter().cloned());
        head.push("documented".into());
        let mut lines = vec![head];
        for (name, promise, cells) in &self.rows {
            let mut l = vec![name.clone(), promise.clone()];
            l.extend(cells.iter().cloned());
            l.push(documented(name));
            lines.push(l);
        }
        lines
    }
}

impl Section for DurabilitySection {
    fn text(&self, model: &ReportModel) -> String {
        let ms = matrices(model);
        if ms.is_empty() {
            return String::new();
        }
        let mut out = format!("\nDurability matrix. {INTRO}\n");
        for m in &ms {
            let _ = writeln!(out, "\n{}: {}", m.workload, m.method);
            // The documented column is for the Markdown and HTML pages (too wide here).
            let lines: Vec<Vec<String>> = m
                .lines()
                .into_iter()
                .map(|mut l| {
                    l.pop();
                    l
                })
                .collect();
            let widths: Vec<usize> = (0..lines[0].len())
                .map(|i| lines.iter().map(|l| l[i].chars().count()).max().unwrap_or(0))
                .collect();
            for l in &lines {
                let cells: Vec<String> = l.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
                let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
            }
        }
        out
    }

    fn markdown(&self, model: &ReportModel) -> String {
        let ms = matrices(model);
        if ms.is_empty() {
            return String::new();
        }
        let mut out = format!("\n## Durability matrix\n\n{}\n", md(INTRO));
        for m in &ms {
            let _ = writeln!(out, "\n### {}: {}\n", md(&m.workload), md(&m.method));
            for (i, l) in m.lines().iter().enumerate() {
                let cells: Vec<String> = l.iter().map(|c| md(c)).collect();
                let _ = writeln!(out, "| {} |", cells.join(" | "));
                if i == 0 {
                    let _ = writeln!(out, "|{}", "---|".repeat(l.len()));
                }
            }
        }
        out
    }

    fn html(&self, model: &ReportModel) -> String {
        let ms = matrices(model);
        if ms.is_empty() {
            return String::new();
        }
        let mut out = format!("<h2>Durability matrix</h2>\n<p>{}</p>\n", esc(INTRO));
        for m in &ms {
            let _ = writeln!(out, "<h3>{}: {}</h3>\n<table>", esc(&m.workload), esc(&m.method));
            for (i, l) in m.lines().iter().enumerate() {
                let tag = if i == 0 { "th" } else { "td" };
                let heat = i.checked_sub(1).and_then(|r| m.heat.get(r));
                let cells: String = l
                    .iter()
                    .enumerate()
                    .map(|(j, c)| {
                        // A heat map over the filesystem columns: green (0) to red (1).
                        let h = heat.and_then(|h| h.get(j.wrapping_sub(2)).copied().flatten());
                        let style = h.map_or(String::new(), |h| {
                            format!(
                                " style=\"background:hsl({:.0},70%,85%)\"",
                                120.0 * (1.0 - h.clamp(0.0, 1.0))
                            )
                        });
                        format!("<{tag}{style}>{}</{tag}>", esc(c))
                    })
                    .collect();
                let _ = writeln!(out, "<tr>{cells}</tr>");
            }
            out.push_str("</table>\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::*;
    use crate::engine::workloads::durability::metrics;
    use crate::engine::workloads::powercut;
    use crate::store::{CaseRecord, SampleStatus};

    /// Two repeats on ext4 and xfs of a reorder-disk durability workload: write-fsync loses
    /// nothing; the control loses 8 units a repeat on ext4 and nothing on xfs; a replace on xfs
    /// comes back neither once.
    fn model() -> ReportModel {
        let mut data = fixture::session_data();
        data.cases.clear();
        data.samples.clear();
        let mut id = 0;
        for (variant, control_lost, neither) in [("ext4", 8.0, 0.0), ("xfs", 0.0, 1.0)] {
            let case_id = format!("{variant}-reorder"); // fixture::case's id
            data.cases.push(CaseRecord {
                workload_kind: KIND.into(),
                workload_json: r#"{"kind":"durability","disk_model":"reorder","seed":3,"cuts":3}"#.into(),
                ..fixture::case(variant, variant, "reorder", true)
            });
            for r in 0..2u32 {
                let m = fixture::m;
                let ms = vec![
                    m("write-fsync", metrics::damaged(), 0.0),
                    m("write-fsync", metrics::violations(), 0.0),
                    m("write-fsync", metrics::acked_units(), 32.0),
                    m("rename-fsync-file", metrics::damaged(), 4.0 * neither),
                    m("rename-fsync-file", metrics::violations(), neither),
                    m("rename-fsync-file", metrics::lost(), 4.0 * neither),
                    m("rename-fsync-file", metrics::acked_units(), 16.0),
                    m("rename-fsync-file", metrics::rename_old(), 0.0),
                    m("rename-fsync-file", metrics::rename_new(), 4.0 - neither),
                    m("rename-fsync-file", metrics::rename_neither(), neither),
                    m("rename-fsync-dir", metrics::damaged(), control_lost),
                    m("rename-fsync-dir", metrics::acked_units(), 16.0),
                    m(primitives::CONTROL, metrics::damaged(), control_lost),
                    m(primitives::CONTROL, metrics::reverted(), control_lost),
                    m(primitives::CONTROL, metrics::acked_units(), 32.0),
                    m(
                        "recovery",
                        powercut::metrics::recovery_mount_s(),
                        0.04 + 0.02 * r as f64,
                    ),
                    m("recovery", powercut::metrics::recovery_failed(), 0.0),
                    m("fsck", powercut::metrics::fsck_repair_needed(), neither),
                ];
                id += 1;
                data.samples
                    .push(fixture::sample(id, &case_id, r, false, SampleStatus::Ok, &[], ms));
            }
        }
        super::super::build::build(&data, 0, 0.95)
    }

    #[test]
    fn a_rate_carries_its_wilson_interval() {
        assert_eq!(rate(3, 64), "3/64 = 4.7 % [1.6, 12.9]");
        assert_eq!(rate(0, 32), "0/32 = 0.0 % [0.0, 10.7]");
        assert_eq!(rate(0, 0), "0/0");
    }

    #[test]
    fn cells_sum_the_repeats_and_say_violations_and_the_control_verdict() {
        let m = model();
        let text = DurabilitySection.text(&m);
        assert!(
            text.contains("reorder: power-cut disk, model reorder (seed 3)"),
            "{text}"
        );
        let line = |start: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(start))
                .unwrap_or_else(|| panic!("no {start}: {text}"))
                .to_string()
        };
        let wf = line("write-fsync");
        assert_eq!(wf.matches("0/64 = 0.0 % [0.0, 5.7]").count(), 2, "{wf}");
        let ctl = line(primitives::CONTROL);
        assert!(
            ctl.contains("16/64 = 25.0 % [") && ctl.contains("lost/reverted/torn 0/16/0 caught"),
            "{ctl}"
        );
        assert!(ctl.contains("0/64 = 0.0 % [0.0, 5.7] NOT CAUGHT"), "{ctl}");
        let rn = line("rename-fsync-file");
        assert!(
            rn.contains("old/new/neither 0/8/0") && !rn.starts_with("VIOLATION"),
            "{rn}"
        );
        assert!(rn.contains("old/new/neither 0/6/2 VIOLATION"), "{rn}");
        // ext4 (data=ordered by default) documents the new data after this sequence: a loss is a
        // finding; xfs documents nothing.
        let rd = line("rename-fsync-dir");
        assert!(
            rd.contains("16/32 = 50.0 % [") && rd.contains("FINDING (ext4(5) auto_da_alloc)"),
            "{rd}"
        );
        assert_eq!(rd.matches("FINDING").count(), 1, "{rd}");
        let mount = line("recovery mount");
        assert_eq!(mount.matches("0.050 s mean; failed 0/6").count(), 2, "{mount}");
        let fsck = line("fsck (read-only)");
        assert!(
            fsck.contains("repair needed 0/6") && fsck.contains("repair needed 2/6"),
            "{fsck}"
        );
        let md = DurabilitySection.markdown(&m);
        assert!(
            md.contains("## Durability matrix") && md.contains("| documented |"),
            "{md}"
        );
        let html = DurabilitySection.html(&m);
        // The heat map: green where nothing was lost or the control was caught, red where
        // everything was lost or the control was not.
        assert!(
            html.contains("<td style=\"background:hsl(120,70%,85%)\">0/64 = 0.0 %"),
            "{html}"
        );
        assert!(
            html.contains("<td style=\"background:hsl(0,70%,85%)\">0/64 = 0.0 % [0.0, 5.7] NOT CAUGHT"),
            "{html}"
        );
        assert!(
            html.contains("<td>rename(2) atomic: old or new after a crash</td>"),
            "{html}"
        );
        // A session without the workload renders nothing.
        let plain = super::super::build::build(&fixture::session_data(), 0, 0.95);
        assert_eq!(DurabilitySection.text(&plain), "");
        assert_eq!(DurabilitySection.html(&plain), "");
    }
}
