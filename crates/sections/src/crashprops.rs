//! The crash-consistency properties matrix of the `crashprops` workload (issue 43): one row per
//! persistence property (Pillai et al., OSDI '14), one column per filesystem/mode, each cell
//! `holds (n states)` or `FAILS k of n states`, in the terminal, Markdown, HTML (a heat map:
//! green where it holds, red where it fails, darker with the violating share) and the JSON export's `crashprops` field
//! (with each failing cell's smallest violating state, from the workload's notes).
//!
//! Applications (`apps`) get a table of their own: one row per application, each cell `ok (n
//! states)` or `k of n vulnerable (c corrupt, l lost)`, with the smallest state of each kind.
//!
//! Invariant: a cell sums the measured repeats' `states` and `violating_states`; a column
//! without results is listed below the table with the reason, never dropped silently.

use crate::engine::workloads::crashprops::{apps, metrics, probes, CrashPropsSpec, EXAMPLE_NOTE};
use crate::report::block::{self, Block, Cell, Item, Table, Tone};
use crate::report::{ReportModel, Section, WorkloadTable};
use serde::Serialize;

/// The workload kind this section reads.
const KIND: &str = "crashprops";

const INTRO: &str = "Each property is probed by a tiny syscall sequence with no fsync between the operations under test; the power-cut disk records every write and flush from a mark through the final sync and the unmount, and each crash state built from that log (per flush epoch every subset when few, else every prefix and seeded samples; with torn writes also each write torn in half after the ones before it) is mounted read-only, which replays the journal, and checked. A property FAILS when some explored state violates it (a state that does not mount counts as violating); k of n: violating of explored states.";

const APPS_INTRO: &str = "Each application runs its update protocol on the recording disk; each acknowledgement (a COMMIT or git command returned) is a note in the write log. Per crash state the application's folder is copied out and judged by its own check (PRAGMA integrity_check and whole transactions; git fsck --full and HEAD; PostgreSQL and MariaDB started on the copy, which is their crash recovery, then amcheck or CHECK TABLE and whole transactions); a state is vulnerable when the check fails or the state does not mount (corrupt), or when an update acknowledged before the crash is missing (lost): acknowledged before the crash means logged before the flush that ended the state's previous epoch or before a write the state kept. Each state of a server starts it, so a server explores a seeded uniform sample of at most 10 of its states.";

/// The crash-consistency section.
pub struct CrashPropsSection;

/// One matrix: a crashprops workload over the session's variants.
#[derive(Clone, Debug, Serialize)]
pub struct Matrix {
    /// The workload's name.
    pub workload: String,
    /// How the states were enumerated (the workload's description).
    pub how: String,
    /// Column order.
    pub variants: Vec<String>,
    /// One row per property.
    pub properties: Vec<PropertyRow>,
    /// One row per application.
    pub applications: Vec<AppRow>,
    /// Variants of the workload without results, with the reason.
    pub without_results: Vec<(String, String)>,
}

/// One property's row.
#[derive(Clone, Debug, Serialize)]
pub struct PropertyRow {
    /// The probe's name.
    pub property: String,
    /// `atomicity` or `ordering`.
    pub kind: String,
    /// The syscall sequence.
    pub ops: String,
    /// One cell per variant with results.
    pub cells: Vec<PropertyCell>,
}

/// One application's row.
#[derive(Clone, Debug, Serialize)]
pub struct AppRow {
    /// The application's name.
    pub application: String,
    /// Its protocol.
    pub ops: String,
    /// One cell per variant with results.
    pub cells: Vec<AppCell>,
}

/// One application on one variant.
#[derive(Clone, Debug, Serialize)]
pub struct AppCell {
    /// The variant.
    pub variant: String,
    /// States explored, over the measured repeats.
    pub states: u64,
    /// States enumerated before the cap (a server application explores a seeded sample of
    /// them), over the measured repeats.
    pub enumerated: u64,
    /// Of them vulnerable (corrupt, unmountable or with an acknowledged update lost).
    pub vulnerable: u64,
    /// Of the vulnerable, those whose check passed with an acknowledged update lost.
    pub lost: u64,
    /// Of the vulnerable, those that did not mount.
    pub unmountable: u64,
    /// `ok` or `vulnerable`.
    pub verdict: String,
    /// The smallest corrupt (or unmountable) state, a note of the workload.
    pub corrupt_example: Option<String>,
    /// The smallest state with an acknowledged update lost.
    pub lost_example: Option<String>,
}

/// One property on one variant.
#[derive(Clone, Debug, Serialize)]
pub struct PropertyCell {
    /// The variant.
    pub variant: String,
    /// States explored, over the measured repeats.
    pub states: u64,
    /// Of them violating the property.
    pub violating: u64,
    /// Of them not mountable.
    pub unmountable: u64,
    /// `holds` or `fails`.
    pub verdict: String,
    /// The smallest violating state and what it recovered (a note of the workload).
    pub example: Option<String>,
}

fn total(t: &WorkloadTable, phase: &str, metric: &str, variant: &str) -> Option<u64> {
    let v: Vec<f64> = t
        .rows
        .iter()
        .find(|r| r.phase == phase && r.metric.name == metric)
        .and_then(|r| r.cells.iter().find(|c| c.variant == variant))
        .map(|c| c.values.iter().copied().filter(|v| v.is_finite()).collect())
        .unwrap_or_default();
    (!v.is_empty()).then(|| v.iter().sum::<f64>().round() as u64)
}

/// The first example note of `property` on `variant` in workload `workload`.
fn example(model: &ReportModel, workload: &str, variant: &str, property: &str) -> Option<String> {
    let cases: Vec<&str> = model
        .cases
        .iter()
        .filter(|c| c.workload == workload && c.variant == variant)
        .map(|c| c.case_id.as_str())
        .collect();
    let prefix = format!("{EXAMPLE_NOTE}{property}: ");
    model
        .samples
        .iter()
        .filter(|s| cases.contains(&s.sample.case_id.as_str()) && !s.sample.is_warmup)
        .flat_map(|s| s.sample.notes.iter())
        .find_map(|n| n.strip_prefix(&prefix).map(str::to_string))
}

fn how(model: &ReportModel, t: &WorkloadTable) -> String {
    let mut v = model
        .cases
        .iter()
        .find(|c| c.workload == t.workload && c.workload_kind == KIND)
        .and_then(|c| serde_json::from_str::<serde_json::Value>(&c.workload_json).ok());
    if let Some(o) = v.as_mut().and_then(|v| v.as_object_mut()) {
        o.remove("kind");
    }
    v.and_then(|v| serde_json::from_value::<CrashPropsSpec>(v).ok())
        .map(|s| {
            let d = crate::engine::Workload::describe(&s);
            d.strip_prefix("crashprops: ").unwrap_or(&d).to_string()
        })
        .unwrap_or_else(|| "parameters unknown".into())
}

fn matrix(model: &ReportModel, t: &WorkloadTable) -> Option<Matrix> {
    let variants: Vec<String> = model
        .variants
        .iter()
        .filter(|v| t.rows.iter().any(|r| r.cells.iter().any(|c| &c.variant == *v)))
        .cloned()
        .collect();
    let properties: Vec<PropertyRow> = probes::TABLE
        .iter()
        .filter(|p| t.rows.iter().any(|r| r.phase == p.name))
        .map(|p| PropertyRow {
            property: p.name.into(),
            kind: match p.kind {
                probes::Kind::Atomicity => "atomicity",
                probes::Kind::Ordering => "ordering",
            }
            .into(),
            ops: p.ops.into(),
            cells: variants
                .iter()
                .filter_map(|v| {
                    let states = total(t, p.name, &metrics::states().name, v)?;
                    let violating = total(t, p.name, &metrics::violating_states().name, v)?;
                    Some(PropertyCell {
                        variant: v.clone(),
                        states,
                        violating,
                        unmountable: total(t, p.name, &metrics::unmountable().name, v).unwrap_or(0),
                        verdict: if violating > 0 { "fails" } else { "holds" }.into(),
                        example: (violating > 0)
                            .then(|| example(model, &t.workload, v, p.name))
                            .flatten(),
                    })
                })
                .collect(),
        })
        .collect();
    let applications = app_rows(model, t, &variants);
    if properties.is_empty() && applications.is_empty() {
        return None;
    }
    let without_results = model
        .cases
        .iter()
        .filter(|c| c.workload == t.workload && !variants.contains(&c.variant))
        .map(|c| (c.variant.clone(), without(model, &c.case_id, &c.availability)))
        .collect();
    Some(Matrix {
        workload: t.workload.clone(),
        how: how(model, t),
        variants,
        properties,
        applications,
        without_results,
    })
}

fn app_rows(model: &ReportModel, t: &WorkloadTable, variants: &[String]) -> Vec<AppRow> {
    apps::TABLE
        .iter()
        .filter(|a| t.rows.iter().any(|r| r.phase == a.name))
        .map(|a| AppRow {
            application: a.name.into(),
            ops: a.ops.into(),
            cells: variants
                .iter()
                .filter_map(|v| {
                    let states = total(t, a.name, &metrics::states().name, v)?;
                    let vulnerable = total(t, a.name, &metrics::violating_states().name, v)?;
                    let lost = total(t, a.name, &metrics::lost_states().name, v).unwrap_or(0);
                    Some(AppCell {
                        variant: v.clone(),
                        states,
                        enumerated: total(t, a.name, &metrics::enumerated().name, v).unwrap_or(states),
                        vulnerable,
                        lost,
                        unmountable: total(t, a.name, &metrics::unmountable().name, v).unwrap_or(0),
                        verdict: if vulnerable > 0 { "vulnerable" } else { "ok" }.into(),
                        corrupt_example: (vulnerable > lost)
                            .then(|| example(model, &t.workload, v, a.name))
                            .flatten(),
                        lost_example: (lost > 0)
                            .then(|| example(model, &t.workload, v, &format!("{} lost", a.name)))
                            .flatten(),
                    })
                })
                .collect(),
        })
        .collect()
}

fn without(model: &ReportModel, case_id: &str, a: &crate::store::CaseAvailability) -> String {
    use crate::store::{CaseAvailability, SampleStatus};
    if let CaseAvailability::Unavailable(why) = a {
        return format!("unavailable: {why}");
    }
    model
        .samples
        .iter()
        .find_map(|s| match &s.sample.status {
            SampleStatus::Failed(e) if s.sample.case_id == case_id => Some(format!("failed: {e}")),
            _ => None,
        })
        .unwrap_or_else(|| "no measured repeat".into())
}

/// The matrices of `model`, one per crashprops workload (the JSON export's `crashprops`).
pub fn matrices(model: &ReportModel) -> Vec<Matrix> {
    model
        .workloads
        .iter()
        .filter(|t| t.kind == KIND)
        .filter_map(|t| matrix(model, t))
        .collect()
}

impl Matrix {
    fn app_table(&self) -> Table {
        let mut head = vec!["application".to_string()];
        head.extend(self.variants.iter().cloned());
        let rows = self
            .applications
            .iter()
            .map(|a| {
                variant_row(vec![Cell::new(a.application.clone())], &self.variants, |v| {
                    a.cells.iter().find(|c| c.variant == v).map(app_cell)
                })
            })
            .collect();
        variant_table(head, rows)
    }

    /// The application table and its lines (nothing without applications); the columns
    /// without results are listed here when there is no properties table to list them.
    fn app_blocks(&self) -> Vec<Block> {
        if self.applications.is_empty() {
            return Vec::new();
        }
        let mut lines = self.app_lines();
        if self.properties.is_empty() {
            lines.extend(
                self.without_results
                    .iter()
                    .map(|(v, why)| format!("{v}: no results ({why})")),
            );
        }
        vec![
            Block::paragraph(format!("Applications. {APPS_INTRO}")),
            Block::Table(self.app_table()),
            Block::List {
                class: None,
                items: lines.into_iter().map(Item::from).collect(),
            },
        ]
    }

    fn app_lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .applications
            .iter()
            .map(|a| format!("{}: {}", a.application, a.ops))
            .collect();
        for a in &self.applications {
            for c in a.cells.iter().filter(|c| c.vulnerable > 0) {
                for e in [&c.corrupt_example, &c.lost_example].into_iter().flatten() {
                    out.push(format!("VULNERABLE: {} on {}: {e}", a.application, c.variant));
                }
            }
        }
        out
    }

    fn table(&self) -> Table {
        let mut head = vec!["property".to_string(), "kind".to_string()];
        head.extend(self.variants.iter().cloned());
        let rows = self
            .properties
            .iter()
            .map(|p| {
                let label = vec![Cell::new(p.property.clone()), Cell::new(p.kind.clone())];
                variant_row(label, &self.variants, |v| {
                    p.cells.iter().find(|c| c.variant == v).map(cell)
                })
            })
            .collect();
        variant_table(head, rows)
    }

    fn lines_below(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .properties
            .iter()
            .map(|p| format!("{}: {}", p.property, p.ops))
            .collect();
        for p in &self.properties {
            for c in p.cells.iter().filter(|c| c.violating > 0) {
                out.push(format!(
                    "FAILS: {} on {}: {}",
                    p.property,
                    c.variant,
                    c.example.as_deref().unwrap_or("(no example stored)")
                ));
            }
        }
        out.extend(
            self.without_results
                .iter()
                .map(|(v, why)| format!("{v}: no results ({why})")),
        );
        out
    }
}

fn app_cell(c: &AppCell) -> Cell {
    let (text, tone) = match c.vulnerable {
        0 => (format!("ok ({} states)", c.states), Tone::Good),
        k => (
            format!(
                "{k} of {} vulnerable ({} corrupt, {} lost)",
                c.states,
                k - c.lost,
                c.lost
            ),
            Tone::Bad,
        ),
    };
    let title = [&c.corrupt_example, &c.lost_example]
        .into_iter()
        .flatten()
        .cloned()
        .collect::<Vec<_>>()
        .join("\n");
    Cell {
        tone: Some(tone),
        title: (!title.is_empty()).then_some(title),
        ..Cell::new(text)
    }
    .with_heat((c.states > 0).then(|| match c.vulnerable {
        0 => 0.0,
        k => 0.6 + 0.4 * k as f64 / c.states as f64,
    }))
}

fn cell(c: &PropertyCell) -> Cell {
    let (text, tone) = match c.violating {
        0 => (format!("holds ({} states)", c.states), Tone::Good),
        k => (format!("FAILS {k} of {}", c.states), Tone::Bad),
    };
    Cell {
        tone: Some(tone),
        title: c.example.clone(),
        ..Cell::new(text)
    }
    // A failing cell reads red at a glance, darker with a larger violating share.
    .with_heat((c.states > 0).then(|| match c.violating {
        0 => 0.0,
        k => 0.6 + 0.4 * k as f64 / c.states as f64,
    }))
}

/// A row: `label`, then per variant its cell (`cell_of`), a grey "—" where it has none.
fn variant_row(mut label: Vec<Cell>, variants: &[String], cell_of: impl Fn(&str) -> Option<Cell>) -> Vec<Cell> {
    for v in variants {
        label.push(cell_of(v).unwrap_or_else(|| Cell {
            tone: Some(Tone::Grey),
            ..Cell::new("—")
        }));
    }
    label
}

/// A matrix of this section: every column left-aligned (the cells are words).
fn variant_table(head: Vec<String>, rows: Vec<Vec<Cell>>) -> Table {
    Table {
        class: Some("crashprops".into()),
        left: (0..head.len()).collect(),
        head,
        rows,
        numeric_from: None,
        text_omits: None,
    }
}

impl Section for CrashPropsSection {
    fn blocks(&self, model: &ReportModel) -> Vec<Block> {
        let matrices = matrices(model)
            .iter()
            .map(|m| crate::MatrixBlocks {
                workload: m.workload.clone(),
                how: m.how.clone(),
                table: (!m.properties.is_empty()).then(|| m.table()),
                below: if m.properties.is_empty() {
                    Vec::new()
                } else {
                    m.lines_below()
                },
                more: m.app_blocks(),
            })
            .collect();
        crate::matrix_section("Crash-consistency properties", INTRO, matrices)
    }

    fn text(&self, model: &ReportModel) -> String {
        block::text(&self.blocks(model))
    }

    fn notes_per_repeat(&self) -> &[(&'static str, &'static str)] {
        &[(
            EXAMPLE_NOTE,
            "the smallest violating crash state of each failing property (in the crash-consistency section)",
        )]
    }

    fn export(&self, model: &ReportModel) -> Option<(String, serde_json::Value)> {
        let matrices = matrices(model);
        if matrices.is_empty() {
            return None;
        }
        serde_json::to_value(matrices)
            .ok()
            .map(|v| ("crashprops".to_string(), v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;
    use crate::store::{CaseRecord, SampleStatus};

    /// ext4-journal: every probe holds; ext4-writeback: atomic-block-append fails in 3 of 12
    /// states, with its example note; zfs: unavailable.
    fn model() -> ReportModel {
        let mut data = fixture::session_data();
        data.cases.clear();
        data.samples.clear();
        for (i, (variant, bad)) in [("ext4-journal", 0.0), ("ext4-writeback", 3.0)].into_iter().enumerate() {
            let case_id = format!("{variant}-cp");
            data.cases.push(CaseRecord {
                workload_kind: KIND.into(),
                workload_json: r#"{"kind":"crashprops","max_states":12,"seed":5}"#.into(),
                ..fixture::case(variant, variant, "cp", true)
            });
            let mut ms = Vec::new();
            for p in probes::TABLE.iter().take(4) {
                let v = if p.name == "atomic-block-append" { bad } else { 0.0 };
                ms.push(fixture::m(p.name, metrics::violating_states(), v));
                ms.push(fixture::m(p.name, metrics::states(), 12.0));
                ms.push(fixture::m(p.name, metrics::unmountable(), 0.0));
            }
            let note = "crash state: atomic-block-append: FAILS in 3 of 12 states; recovered: f: 8192 B: 4096×A 4096×0";
            let notes: &[&str] = if bad > 0.0 { &[note] } else { &[] };
            data.samples.push(fixture::sample(
                i as i64 + 1,
                &case_id,
                0,
                false,
                SampleStatus::Ok,
                notes,
                ms,
            ));
        }
        data.cases.push(CaseRecord {
            workload_kind: KIND.into(),
            ..fixture::case("zfs", "zfs", "cp", false)
        });
        crate::report::build_with(&data, 0, 0.95, &[&CrashPropsSection])
    }

    #[test]
    fn a_failing_cell_says_k_of_n_with_its_example_and_a_holding_one_says_holds() {
        let m = model();
        let text = CrashPropsSection.text(&m);
        assert!(text.contains("FAILS 3 of 12"), "{text}");
        assert!(text.contains("holds (12 states)"), "{text}");
        assert!(
            text.contains("FAILS: atomic-block-append on ext4-writeback: FAILS in 3 of 12"),
            "{text}"
        );
        assert!(text.contains("zfs: no results (unavailable"), "{text}");
        let md = CrashPropsSection.markdown(&m);
        assert!(md.contains("## Crash-consistency properties") && md.contains("| atomic-block-append |"));
        let html = CrashPropsSection.html(&m);
        assert!(html.contains("FAILS 3 of 12") && html.contains("l bad\""), "{html}");
        let (key, json) = CrashPropsSection.export(&m).unwrap();
        assert_eq!(key, "crashprops");
        let cell = &json[0]["properties"][3]["cells"][1];
        assert_eq!(
            (cell["violating"].as_u64(), cell["verdict"].as_str()),
            (Some(3), Some("fails"))
        );
        assert!(cell["example"].as_str().unwrap().contains("4096×0"));
        assert_eq!(json[0]["properties"][3]["cells"][0]["verdict"], "holds");
    }

    /// git on ext4-ordered: 5 of 20 states vulnerable, 3 of them lost; sqlite-wal: ok.
    fn app_model() -> ReportModel {
        let mut data = fixture::session_data();
        data.cases.clear();
        data.samples.clear();
        data.cases.push(CaseRecord {
            workload_kind: KIND.into(),
            workload_json: r#"{"kind":"crashprops","apps":["sqlite-wal","git"],"max_states":20}"#.into(),
            ..fixture::case("ext4-ordered", "ext4-ordered", "cp", true)
        });
        let mut ms = Vec::new();
        for (a, bad, lost) in [("sqlite-wal", 0.0, 0.0), ("git", 5.0, 3.0)] {
            ms.push(fixture::m(a, metrics::violating_states(), bad));
            ms.push(fixture::m(a, metrics::lost_states(), lost));
            ms.push(fixture::m(a, metrics::states(), 20.0));
            ms.push(fixture::m(a, metrics::unmountable(), 0.0));
        }
        let notes = [
            "crash state: git: corrupt in 2 of 20 states; recovered: corrupt: git fsck --full: error: object file is empty",
            "crash state: git lost: lost in 3 of 20 states; recovered: lost: main's commits [\"first\"]",
        ];
        data.samples.push(fixture::sample(
            1,
            "ext4-ordered-cp",
            0,
            false,
            SampleStatus::Ok,
            &notes,
            ms,
        ));
        crate::report::build_with(&data, 0, 0.95, &[&CrashPropsSection])
    }

    #[test]
    fn an_application_cell_counts_corrupt_and_lost_states_with_the_smallest_of_each() {
        let m = app_model();
        let text = CrashPropsSection.text(&m);
        assert!(text.contains("5 of 20 vulnerable (2 corrupt, 3 lost)"), "{text}");
        assert!(
            text.contains("ok (20 states)") && text.contains("Applications."),
            "{text}"
        );
        assert!(text.contains("VULNERABLE: git on ext4-ordered: corrupt in 2"), "{text}");
        assert!(text.contains("VULNERABLE: git on ext4-ordered: lost in 3"), "{text}");
        assert!(
            !text.contains("  property "),
            "no properties table without probes: {text}"
        );
        let md = CrashPropsSection.markdown(&m);
        assert!(md.contains("| git |"), "{md}");
        let html = CrashPropsSection.html(&m);
        assert!(html.contains("5 of 20 vulnerable"), "{html}");
        let (_, json) = CrashPropsSection.export(&m).unwrap();
        let git = &json[0]["applications"][1]["cells"][0];
        assert_eq!((git["vulnerable"].as_u64(), git["lost"].as_u64()), (Some(5), Some(3)));
        assert!(git["corrupt_example"]
            .as_str()
            .unwrap()
            .contains("object file is empty"));
        assert!(git["lost_example"].as_str().unwrap().contains("main's commits"));
        assert_eq!(json[0]["applications"][0]["cells"][0]["verdict"], "ok");
    }

    #[test]
    fn a_session_without_crashprops_shows_nothing() {
        let plain = crate::report::build_with(&fixture::session_data(), 0, 0.95, &[&CrashPropsSection]);
        assert_eq!(CrashPropsSection.text(&plain), "");
        assert!(CrashPropsSection.export(&plain).is_none());
    }
}
