//! The durability matrix (issue 28, items 5 and 6): for every `durability` workload in a session
//! (one cut method and disk model each, never mixed), a table of primitive × filesystem whose
//! cell is the damaged acknowledged units over those checked (and how many were lost, reverted,
//! torn), summed over the measured repeats (each already a sum over its cuts), as a rate with its
//! 95 % Wilson interval ([`crate::stats::rate::wilson`]); a replace adds how many files came back
//! old, new or neither. A cell that breaks its primitive's promise says `VIOLATION`; the negative
//! control's cell says `caught`, or `NOT CAUGHT in k/n cuts` when it lost nothing in some cut.
//! Such a cut showed no loss, so a column with one is unverified ([`Column`]): its header says
//! `UNVERIFIED`, and every cell of it that found no damage says `UNVERIFIED` (grey) instead of
//! being green; a loss found there stays what it is (a loss is seen whatever the control did).
//! The flush control's cell says `caught`, or `KEPT in k/n cuts` (grey: those cuts cannot
//! expose a missing flush; it invalidates nothing), and a line below the table says what the
//! method can expose and where the flush control showed it. Beside each row is what is documented or reported
//! ([`promises::PROMISES`]); a cell that contradicts a filesystem's entry says `FINDING` and names
//! the source. More rows per table: the fsync error probe's outcomes (with its findings), the
//! mean recovery mount time with the cuts after which the filesystem did not mount, and the cuts
//! after which the read-only check asked for a repair.
//!
//! [`matrices`] builds the structured matrices from the report model only; the section exports
//! them (the JSON export's `durability`, through [`Section::export`]) and shows them as the
//! report's blocks: a table per matrix, then one line per finding, in plain text (the terminal,
//! without the documented column), Markdown and HTML (with a heat map: each cell from green,
//! nothing damaged, to red, all damaged or the negative control not caught; grey where
//! unverified). A session without a durability workload has none, exports nothing and renders
//! "".
//!
//! Sessions stored before the controls were judged per cut have no `cuts_not_caught` rows: their
//! column is unverified only where the negative control lost nothing over all its cuts.

use crate::engine::workloads::durability::primitives::{self, Control, Promise};
use crate::engine::workloads::durability::promises::{self, Claim, Documented, PROMISES};
use crate::engine::workloads::durability::{DurabilitySpec, PHASE_FSYNC_EIO};
use crate::engine::workloads::powercut::Method;
use crate::report::block::{self, Block, Table, Tone};
use crate::report::{ReportModel, Section, WorkloadTable};
use crate::stats::rate::{wilson, Z95};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The durability section of a session's report.
pub struct DurabilitySection;

/// The kind of workload this section reads.
const KIND: &str = "durability";

/// The matrix of one `durability` workload: one cut method (and disk model).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    /// The workload's name.
    pub workload: String,
    /// `disk` (the power-cut disk) or `shutdown` (`FS_IOC_SHUTDOWN`); `unknown` when the
    /// parameters were not stored.
    pub method: String,
    /// The power-cut disk's model (`volatile`, `reorder`, `torn-sectors`, …); `None` under
    /// `shutdown`.
    pub disk_model: Option<String>,
    /// The seed of a seeded model's cuts.
    pub seed: Option<u64>,
    /// Dirty pages (but the control's) written back without a flush before each cut.
    pub writeback: bool,
    /// Cuts per measured repeat.
    pub cuts_per_repeat: u32,
    /// How the power was cut, in words.
    pub how: String,
    /// Which failures the method can expose in principle ([`DurabilitySpec::exposes`]); empty
    /// when the parameters were not stored.
    #[serde(default)]
    pub exposes: String,
    /// The filesystem variants (columns), in report order.
    pub variants: Vec<String>,
    /// What the controls showed of each column, in the order of `variants`.
    #[serde(default)]
    pub columns: Vec<Column>,
    /// One row per primitive run, in table order (the negative control last).
    pub primitives: Vec<PrimitiveRow>,
    /// The fsync error probe per variant probed; empty when it did not run.
    pub fsync_eio: Vec<ProbeCell>,
    /// What is documented or reported for the probe.
    pub fsync_eio_documented: Vec<Source>,
    /// Recovery after the cuts, per variant.
    pub recovery: Vec<Recovery>,
    /// The session's variants this workload has no results on, and why (unavailable here, or
    /// every repeat failed: a ZFS pool, the shutdown ioctl on btrfs).
    #[serde(default)]
    pub without_results: Vec<NoResults>,
}

/// What the controls showed of one column (variant), over the measured repeats.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// The variant.
    pub variant: String,
    /// Cuts the negative control ran in (0 when a session stored before per-cut controls does
    /// not say).
    pub cuts: u64,
    /// Cuts whose negative control lost nothing: they showed no loss, so their zeros prove
    /// nothing.
    pub unverified_cuts: u64,
    /// Whether the column is unverified: some cut's negative control lost nothing (in a session
    /// stored before per-cut controls: it lost nothing over all cuts). Its cells that found no
    /// damage are `unverified`.
    pub unverified: bool,
    /// Cuts the flush control ran in; `None` where it did not run.
    pub flush_cuts: Option<u64>,
    /// Cuts whose flush control lost nothing (what reached the disk unflushed survived them: they
    /// cannot expose a missing flush); `None` where it did not run.
    pub flush_kept_cuts: Option<u64>,
}

/// A variant a durability workload has no results on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoResults {
    /// The variant.
    pub variant: String,
    /// Why: the case's unavailability, or its first failed repeat's error.
    pub why: String,
}

/// A documented promise or reported finding, as stated beside a row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// Where it holds: `every filesystem`, `ext3/ext4 data=ordered`.
    pub scope: String,
    /// What it claims: `durable`, `old or new`, `may lose`, or for the probe `yes`/`no`.
    pub claim: String,
    /// The source, short.
    pub cite: String,
    /// What the source says.
    pub says: String,
}

impl Source {
    fn of(d: &Documented) -> Source {
        Source {
            scope: d.scope(),
            claim: d.claim.as_str().into(),
            cite: d.cite.into(),
            says: d.says.into(),
        }
    }
}

/// One primitive across the variants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrimitiveRow {
    /// The primitive's name (the phase).
    pub primitive: String,
    /// Its system-call sequence.
    pub sequence: String,
    /// What it promises by POSIX (`durable`, `atomic (old or new)`, `none (POSIX)`, the control).
    pub promise: String,
    /// Every entry of the promises table for it.
    pub documented: Vec<Source>,
    /// One cell per variant that ran it.
    pub cells: Vec<Cell>,
}

/// What a cell's counts say about its promise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Nothing damaged.
    Intact,
    /// Something damaged where POSIX promises nothing (measured, not a violation).
    Damaged,
    /// The primitive's promise broken.
    Violation,
    /// The control lost something in every cut, as it must (the flush control: the cuts drop
    /// unflushed writes).
    Caught,
    /// The control lost nothing in some cut: for the negative control those cuts showed no
    /// loss (the column is unverified); for the flush control they cannot expose a missing
    /// flush.
    NotCaught,
    /// Nothing damaged, in a column whose negative control lost nothing in some cut: the zeros
    /// prove nothing.
    Unverified,
}

/// Files of a replace found whole in their old version, their new version, or neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rename {
    /// Whole in the old version.
    pub old: u64,
    /// Whole in the new version.
    pub new: u64,
    /// Neither (zero-length, mixed, missing).
    pub neither: u64,
}

/// A measurement that contradicts a documented promise or a reported finding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The source, short.
    pub cite: String,
    /// What it claims.
    pub claim: String,
    /// What it says.
    pub says: String,
    /// What the same filesystem also documents that allows the loss (an explanation beside
    /// the finding, which stays a finding: the documentation contradicts itself or the code).
    #[serde(default)]
    pub beside: Vec<Source>,
}

/// One primitive on one variant, summed over the measured repeats and their cuts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// The variant (column).
    pub variant: String,
    /// Acknowledged units checked.
    pub checked: u64,
    /// Lost + reverted + torn units.
    pub damaged: u64,
    /// Units missing (zeros, beyond the end, the file gone).
    pub lost: u64,
    /// Units found in an older generation.
    pub reverted: u64,
    /// Units whose stamp or checksum does not match.
    pub torn: u64,
    /// `damaged / checked` (a fraction in [0, 1]); `None` when nothing was checked.
    pub rate: Option<f64>,
    /// The 95 % Wilson score interval of the rate (fractions).
    pub ci: Option<(f64, f64)>,
    /// A replace's files by version.
    pub rename: Option<Rename>,
    /// Acknowledged units checked in cuts whose negative control lost nothing.
    #[serde(default)]
    pub unverified: u64,
    /// Acknowledged units of cuts after which the filesystem did not mount (counted as lost).
    #[serde(default)]
    pub unrecovered: u64,
    /// A control's cuts lost nothing in / cuts run (`None` for a primitive under test, or a
    /// session stored before per-cut controls).
    #[serde(default)]
    pub control_cuts: Option<(u64, u64)>,
    /// What the counts say about the primitive's promise.
    pub verdict: Verdict,
    /// Documented promises the measurement contradicts.
    pub findings: Vec<Finding>,
}

/// The fsync error probe on one variant: how many of its `repeats` probes saw each outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeCell {
    /// The variant (column).
    pub variant: String,
    /// Repeats probed.
    pub repeats: u64,
    /// The first fsync after the failed writeback returned an error.
    pub first_fsync_error: u64,
    /// A second fsync then returned success (the data not on the disk).
    pub second_fsync_ok: u64,
    /// A read through the page cache returned the new data.
    pub cached_read_new: u64,
    /// A read after dropping the clean pages returned the old data.
    pub uncached_read_old: u64,
    /// Writes the disk refused because they carried the new data, summed (0: nothing failed).
    pub refused_writes: u64,
    /// The failure turned the filesystem read-only (ext4 data=journal's journal abort).
    #[serde(default)]
    pub went_read_only: u64,
    /// Reported behaviour the probe contradicts.
    pub findings: Vec<Finding>,
}

/// Recovery after the cuts of one variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    /// The variant (column).
    pub variant: String,
    /// Cuts made (over the measured repeats).
    pub cuts: u64,
    /// Mean recovery mount time, seconds.
    pub mount_mean_s: f64,
    /// Cuts after which the filesystem did not mount.
    pub mount_failed: u64,
    /// Cuts after which the read-only check asked for a repair.
    pub repair_needed: u64,
}

/// The measured values of `metric` in `phase` on `variant` (finite ones only).
fn values(t: &WorkloadTable, phase: &str, metric: &str, variant: &str) -> Vec<f64> {
    t.rows
        .iter()
        .find(|r| r.phase == phase && r.metric.name == metric)
        .and_then(|r| r.cells.iter().find(|c| c.variant == variant))
        .map(|c| c.values.iter().copied().filter(|v| v.is_finite()).collect())
        .unwrap_or_default()
}

/// The sum over measured repeats of `metric` in `phase` on `variant`; `None` without values.
fn total(t: &WorkloadTable, phase: &str, metric: &str, variant: &str) -> Option<u64> {
    let v = values(t, phase, metric, variant);
    (!v.is_empty()).then(|| v.iter().sum::<f64>().round() as u64)
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

/// How the workload cut the power, in words.
fn how(spec: Option<&DurabilitySpec>) -> String {
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

/// The filesystem type and mount options of `variant`'s case of workload `t`, a NOCOW variant's
/// (its samples read back `FS_NOCOW_FL` on the workload folder) with btrfs's `nodatacow`
/// ([`promises::with_nocow`]).
fn fs_of<'a>(model: &'a ReportModel, t: &WorkloadTable, variant: &str) -> Option<(&'a str, Vec<String>)> {
    let c = model
        .cases
        .iter()
        .find(|c| c.workload == t.workload && c.variant == variant)?;
    let nocow = model
        .samples
        .iter()
        .any(|s| s.sample.case_id == c.case_id && s.sample.path.as_ref().is_some_and(|p| p.nocow == Some(true)));
    Some((c.fs_type.as_str(), promises::with_nocow(&c.mount_opts, nocow)))
}

/// For a probe claim: its metric → (repeats where it was 1, repeats probed).
type ProbeCounts<'a> = &'a dyn Fn(&str) -> (u64, u64);

/// The entries of `table` for `primitive` on `variant` that the measurement contradicts; the
/// primitives' own POSIX promises are left out (their break is the cell's `VIOLATION`).
fn findings(
    model: &ReportModel,
    table: &[Documented],
    t: &WorkloadTable,
    primitive: &str,
    variant: &str,
    measured: (u64, u64, Option<ProbeCounts>),
) -> Vec<Finding> {
    let Some((fs_type, opts)) = fs_of(model, t, variant) else {
        return Vec::new();
    };
    let (damaged, neither, probe) = measured;
    let own = || promises::applicable(table, primitive, fs_type, &opts).filter(|d| !d.is_primitive_promise());
    // What the same filesystem documents that allows the loss: said beside the finding.
    let beside: Vec<Source> = own().filter(|d| d.claim == Claim::MayLose).map(Source::of).collect();
    own()
        .filter(|d| {
            let p = match (d.claim, probe) {
                (Claim::Probe { metric, .. }, Some(f)) => Some(f(metric)),
                _ => None,
            };
            d.claim.broken_by(damaged, neither, p)
        })
        .map(|d| Finding {
            cite: d.cite.into(),
            claim: d.claim.as_str().into(),
            says: d.says.into(),
            beside: beside.clone(),
        })
        .collect()
}

/// What the controls showed of `variant`'s column; `cuts` is the workload's cuts per repeat
/// (for a session stored before per-cut controls).
fn column(t: &WorkloadTable, variant: &str, cuts: u32) -> Column {
    let control = |m: &str| total(t, primitives::CONTROL, m, variant);
    let flush = |m: &str| total(t, primitives::FLUSH_CONTROL, m, variant);
    let (n, missed) = match (control("cuts"), control("cuts_not_caught")) {
        (Some(n), Some(missed)) => (n, missed),
        // Stored before per-cut controls: only a control that lost nothing in every cut shows.
        _ => {
            let repeats = values(t, primitives::CONTROL, "damaged", variant).len() as u64;
            let n = cuts as u64 * repeats;
            (n, if control("damaged") == Some(0) { n } else { 0 })
        }
    };
    Column {
        variant: variant.into(),
        cuts: n,
        unverified_cuts: missed,
        unverified: missed > 0 || control("damaged") == Some(0),
        flush_cuts: flush("cuts"),
        flush_kept_cuts: flush("cuts_not_caught"),
    }
}

/// The cell of primitive `p` on `variant` (whose column is `col`), `None` where it did not run.
fn cell(
    model: &ReportModel,
    table: &[Documented],
    t: &WorkloadTable,
    p: &primitives::Primitive,
    col: &Column,
) -> Option<Cell> {
    let variant = col.variant.as_str();
    let damaged = total(t, p.name, "damaged", variant)?;
    let checked = total(t, p.name, "acked_units", variant)?;
    let part = |m| total(t, p.name, m, variant).unwrap_or(0);
    let rename = match (
        total(t, p.name, "rename_old", variant),
        total(t, p.name, "rename_new", variant),
        total(t, p.name, "rename_neither", variant),
    ) {
        (Some(old), Some(new), Some(neither)) => Some(Rename { old, new, neither }),
        _ => None,
    };
    let control_cuts = match (
        total(t, p.name, "cuts_not_caught", variant),
        total(t, p.name, "cuts", variant),
    ) {
        (Some(missed), Some(n)) if p.control().is_some() => Some((missed, n)),
        _ => None,
    };
    let verdict = match p.control() {
        Some(_) if damaged > 0 && control_cuts.is_none_or(|(missed, _)| missed == 0) => Verdict::Caught,
        Some(_) => Verdict::NotCaught,
        None if matches!(p.promise, Promise::Durable | Promise::Atomic) && part("violations") > 0 => Verdict::Violation,
        None if damaged > 0 => Verdict::Damaged,
        None if col.unverified => Verdict::Unverified,
        None => Verdict::Intact,
    };
    let neither = rename.map_or(0, |r| r.neither);
    Some(Cell {
        variant: variant.into(),
        checked,
        damaged,
        lost: part("lost"),
        reverted: part("reverted"),
        torn: part("torn"),
        rate: (checked > 0).then(|| damaged as f64 / checked as f64),
        ci: wilson(damaged, checked, Z95),
        rename,
        unverified: part("unverified_units"),
        unrecovered: part("unrecovered_units"),
        control_cuts,
        verdict,
        findings: findings(model, table, t, p.name, variant, (damaged, neither, None)),
    })
}

/// The fsync error probe's cell on `variant`, `None` where it did not run.
fn probe_cell(model: &ReportModel, table: &[Documented], t: &WorkloadTable, variant: &str) -> Option<ProbeCell> {
    let repeats = values(t, PHASE_FSYNC_EIO, "first_fsync_error", variant).len() as u64;
    if repeats == 0 {
        return None;
    }
    let sum = |m: &str| total(t, PHASE_FSYNC_EIO, m, variant).unwrap_or(0);
    let of = |m: &str| (sum(m), repeats);
    Some(ProbeCell {
        variant: variant.into(),
        repeats,
        first_fsync_error: sum("first_fsync_error"),
        second_fsync_ok: sum("second_fsync_ok"),
        cached_read_new: sum("cached_read_new"),
        uncached_read_old: sum("uncached_read_old"),
        refused_writes: sum("refused_writes"),
        went_read_only: sum("went_read_only"),
        findings: findings(model, table, t, PHASE_FSYNC_EIO, variant, (0, 0, Some(&of))),
    })
}

/// Recovery on `variant` over its measured repeats of `cuts` cuts each; `None` without mounts.
fn recovery(t: &WorkloadTable, variant: &str, cuts: u32) -> Option<Recovery> {
    let mounts = values(t, "recovery", "recovery_mount_s", variant);
    if mounts.is_empty() {
        return None;
    }
    Some(Recovery {
        variant: variant.into(),
        cuts: cuts as u64 * mounts.len() as u64,
        mount_mean_s: mounts.iter().sum::<f64>() / mounts.len() as f64,
        mount_failed: total(t, "recovery", "recovery_failed", variant).unwrap_or(0),
        repair_needed: total(t, "fsck", "fsck_repair_needed", variant).unwrap_or(0),
    })
}

/// The cases of workload `t` whose variant is not among `variants` (no results), and why.
fn without_results(model: &ReportModel, t: &WorkloadTable, variants: &[String]) -> Vec<NoResults> {
    use crate::store::{CaseAvailability, SampleStatus};
    model
        .cases
        .iter()
        .filter(|c| c.workload == t.workload && !variants.contains(&c.variant))
        .map(|c| {
            let failed = model.samples.iter().find_map(|s| match &s.sample.status {
                SampleStatus::Failed(e) if s.sample.case_id == c.case_id => Some(e.clone()),
                _ => None,
            });
            let why = match (&c.availability, failed) {
                (CaseAvailability::Unavailable(why), _) => format!("unavailable: {why}"),
                (_, Some(e)) => format!("failed: {e}"),
                (_, None) => "no measured repeat".into(),
            };
            NoResults {
                variant: c.variant.clone(),
                why,
            }
        })
        .collect()
}

/// The matrix of workload table `t`, judged against `table`; `None` when no primitive ran.
fn matrix(model: &ReportModel, table: &[Documented], t: &WorkloadTable) -> Option<Matrix> {
    let variants: Vec<String> = model
        .variants
        .iter()
        .filter(|v| t.rows.iter().any(|r| r.cells.iter().any(|c| &c.variant == *v)))
        .cloned()
        .collect();
    let sources =
        |name: &str| -> Vec<Source> { table.iter().filter(|d| d.primitive == name).map(Source::of).collect() };
    let spec = spec(model, t);
    let cuts = spec.as_ref().map_or(0, |s| s.total_cuts());
    let columns: Vec<Column> = variants.iter().map(|v| column(t, v, cuts)).collect();
    let rows: Vec<PrimitiveRow> = primitives::TABLE
        .iter()
        .filter(|p| t.rows.iter().any(|r| r.phase == p.name))
        .map(|p| PrimitiveRow {
            primitive: p.name.into(),
            sequence: p.sequence.into(),
            promise: p.promise_str().into(),
            documented: sources(p.name),
            cells: columns.iter().filter_map(|c| cell(model, table, t, p, c)).collect(),
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let fsync_eio: Vec<ProbeCell> = variants.iter().filter_map(|v| probe_cell(model, table, t, v)).collect();
    Some(Matrix {
        workload: t.workload.clone(),
        method: match spec.as_ref().map(|s| s.method) {
            Some(Method::Shutdown) => "shutdown",
            Some(_) => "disk",
            None => "unknown",
        }
        .into(),
        disk_model: spec
            .as_ref()
            .filter(|s| s.method != Method::Shutdown)
            .map(|s| s.disk_model.as_arg().into()),
        seed: spec
            .as_ref()
            .filter(|s| s.method != Method::Shutdown && s.disk_model.is_seeded())
            .map(|s| s.seed),
        writeback: spec.as_ref().is_some_and(|s| s.writeback),
        cuts_per_repeat: cuts,
        how: how(spec.as_ref()),
        exposes: spec.as_ref().map_or(String::new(), |s| s.exposes().to_string()),
        fsync_eio_documented: if fsync_eio.is_empty() {
            Vec::new()
        } else {
            sources(PHASE_FSYNC_EIO)
        },
        fsync_eio,
        recovery: variants.iter().filter_map(|v| recovery(t, v, cuts)).collect(),
        without_results: without_results(model, t, &variants),
        variants,
        columns,
        primitives: rows,
    })
}

/// The durability matrices of `model`, one per durability workload, judged against `table`.
pub fn matrices_with(model: &ReportModel, table: &[Documented]) -> Vec<Matrix> {
    model
        .workloads
        .iter()
        .filter(|t| t.kind == KIND)
        .filter_map(|t| matrix(model, table, t))
        .collect()
}

/// The durability matrices of `model`, judged against [`PROMISES`] (what the JSON export
/// carries under `durability`).
pub fn matrices(model: &ReportModel) -> Vec<Matrix> {
    matrices_with(model, PROMISES)
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

impl Cell {
    /// The cell as the tables print it: `3/64 = 4.7 % [1.6, 12.9] lost/reverted/torn 0/3/0`
    /// and its verdict words; `control` is which control its row is, if one.
    fn text(&self, control: Option<Control>) -> String {
        let mut s = rate(self.damaged, self.checked);
        if self.damaged > 0 {
            let _ = write!(s, " lost/reverted/torn {}/{}/{}", self.lost, self.reverted, self.torn);
        }
        if let Some(r) = self.rename {
            let _ = write!(s, " old/new/neither {}/{}/{}", r.old, r.new, r.neither);
        }
        if self.unrecovered > 0 {
            let _ = write!(s, " ({} in cuts that did not mount)", self.unrecovered);
        }
        let cuts = self
            .control_cuts
            .map_or(String::new(), |(missed, n)| format!(" in {missed}/{n} cuts"));
        match (self.verdict, control) {
            (Verdict::NotCaught, Some(Control::Flush)) => {
                let _ = write!(s, " KEPT{cuts}: a missing flush cannot show there");
            }
            (Verdict::NotCaught, _) => {
                let _ = write!(s, " NOT CAUGHT{cuts}");
            }
            (v, _) => s.push_str(match v {
                Verdict::Violation => " VIOLATION",
                Verdict::Caught => " caught",
                Verdict::Unverified => " UNVERIFIED",
                _ => "",
            }),
        }
        for f in &self.findings {
            let _ = write!(s, " FINDING ({})", f.cite);
        }
        s
    }

    /// How bad the cell is in [0, 1] for the HTML heat map: the damage rate; for a control 0
    /// when caught, 1 when the negative control was not; `None` (grey) where unverified and
    /// where the flush control was kept.
    fn heat(&self, control: Option<Control>) -> Option<f64> {
        match (self.verdict, control) {
            (Verdict::Caught, _) => Some(0.0),
            (Verdict::NotCaught, Some(Control::Flush)) | (Verdict::Unverified, _) => None,
            (Verdict::NotCaught, _) => Some(1.0),
            _ => self.rate,
        }
    }

    /// How the HTML shows it: its heat, or grey (unverified, or the flush control kept).
    fn shade(&self, control: Option<Control>) -> Shade {
        match self.heat(control) {
            None if matches!(self.verdict, Verdict::Unverified | Verdict::NotCaught) => Shade::Grey,
            h => Shade::Heat(h),
        }
    }
}

/// How a cell of the matrix is shaded in HTML.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Shade {
    /// Its heat, none when `None`.
    Heat(Option<f64>),
    /// Grey: unverified.
    Grey,
}

impl Shade {
    fn apply(self, c: block::Cell) -> block::Cell {
        match self {
            Shade::Heat(h) => c.with_heat(h),
            Shade::Grey => block::Cell {
                tone: Some(Tone::Grey),
                ..c
            },
        }
    }
}

impl ProbeCell {
    fn text(&self) -> String {
        let n = self.repeats;
        let mut s = format!(
            "fsync 1 EIO {}/{n}; fsync 2 ok {}/{n}; cached read new {}/{n}; uncached read old {}/{n}; writes refused {}",
            self.first_fsync_error,
            self.second_fsync_ok,
            self.cached_read_new,
            self.uncached_read_old,
            self.refused_writes
        );
        if self.went_read_only > 0 {
            let _ = write!(s, "; went read-only {}/{n}", self.went_read_only);
        }
        for f in &self.findings {
            let _ = write!(s, " FINDING ({})", f.cite);
        }
        s
    }
}

/// The sources of a row as one line: `POSIX fsync(2) (every filesystem: durable): …`.
fn sources_line(sources: &[Source]) -> String {
    sources
        .iter()
        .map(|s| format!("{} ({}: {}): {}", s.cite, s.scope, s.claim, s.says))
        .collect::<Vec<_>>()
        .join("; ")
}

/// One rendered line of a matrix: its cells (name, promise, one per variant, documented) and
/// the shade of each variant's cell.
struct Line {
    cells: Vec<String>,
    shade: Vec<Shade>,
}

impl Matrix {
    /// The header and one line per row: primitive, promise, one cell per variant, documented.
    fn lines(&self) -> Vec<Line> {
        let mut head = vec!["primitive".to_string(), "promise".to_string()];
        head.extend(self.variants.iter().map(|v| self.head(v)));
        head.push("documented".into());
        let mut lines = vec![Line {
            cells: head,
            shade: Vec::new(),
        }];
        let mut push = |name: &str, promise: &str, per: &dyn Fn(&str) -> (String, Shade), doc: String| {
            let (cells, shade): (Vec<String>, Vec<Shade>) = self.variants.iter().map(|v| per(v)).unzip();
            let mut l = vec![name.to_string(), promise.to_string()];
            l.extend(cells);
            l.push(doc);
            lines.push(Line { cells: l, shade });
        };
        for r in &self.primitives {
            let control = primitives::by_name(&r.primitive).and_then(|p| p.control());
            let per = |v: &str| {
                r.cells
                    .iter()
                    .find(|c| c.variant == v)
                    .map_or(("—".into(), Shade::Heat(None)), |c| {
                        (c.text(control), c.shade(control))
                    })
            };
            push(&r.primitive, &r.promise, &per, sources_line(&r.documented));
        }
        if !self.fsync_eio.is_empty() {
            let per = |v: &str| {
                let c = self.fsync_eio.iter().find(|c| c.variant == v);
                (c.map_or("—".into(), ProbeCell::text), Shade::Heat(None))
            };
            push(
                PHASE_FSYNC_EIO,
                "failed writeback",
                &per,
                sources_line(&self.fsync_eio_documented),
            );
        }
        let rec = |v: &str| self.recovery.iter().find(|r| r.variant == v);
        let mount = |v: &str| {
            let s = rec(v).map_or("—".into(), |r| {
                format!("{:.3} s mean; failed {}/{}", r.mount_mean_s, r.mount_failed, r.cuts)
            });
            (s, Shade::Heat(None))
        };
        push("recovery mount", "after each cut", &mount, String::new());
        let fsck = |v: &str| {
            let s = rec(v).map_or("—".into(), |r| {
                format!("repair needed {}/{}", r.repair_needed, r.cuts)
            });
            (s, Shade::Heat(None))
        };
        push("fsck (read-only)", "after each cut", &fsck, String::new());
        lines
    }

    /// The header of `variant`'s column: its name, and `UNVERIFIED (k/n cuts)` where a cut's
    /// negative control lost nothing.
    fn head(&self, variant: &str) -> String {
        match self.columns.iter().find(|c| c.variant == variant) {
            Some(c) if c.unverified && c.cuts > 0 => {
                format!("{variant} UNVERIFIED ({}/{} cuts)", c.unverified_cuts, c.cuts)
            }
            Some(c) if c.unverified => format!("{variant} UNVERIFIED"),
            _ => variant.to_string(),
        }
    }

    /// What the method can expose, and what the flush control showed per column, in a
    /// sentence; `None` when neither is known.
    fn exposes_line(&self) -> Option<String> {
        let (mut shown, mut kept) = (Vec::new(), Vec::new());
        for c in &self.columns {
            match (c.flush_kept_cuts, c.flush_cuts) {
                (Some(0), Some(_)) => shown.push(c.variant.clone()),
                (Some(k), Some(n)) => kept.push(format!("{} (kept in {k}/{n} cuts)", c.variant)),
                _ => {}
            }
        }
        let mut line = String::new();
        if !self.exposes.is_empty() {
            let _ = write!(line, "Can expose: {}.", self.exposes);
        }
        if !shown.is_empty() {
            let _ = write!(
                line,
                " The flush control (written back, never flushed) was lost in every cut on {}: a missing flush shows there.",
                shown.join(", ")
            );
        }
        if !kept.is_empty() {
            let _ = write!(
                line,
                " It survived cuts on {}: a missing flush cannot show in those cuts, and a durable zero there says the data was written, not flushed.",
                kept.join(", ")
            );
        }
        (!line.is_empty()).then(|| line.trim_start().to_string())
    }

    /// One sentence per variant without results, the method's exposure, one per unverified
    /// column, then one per finding: where, what was measured, and what the source says.
    fn lines_below(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .without_results
            .iter()
            .map(|n| format!("{}: {}", n.variant, n.why))
            .collect();
        out.extend(self.exposes_line());
        for c in self.columns.iter().filter(|c| c.unverified) {
            out.push(format!(
                "UNVERIFIED: {}: the negative control lost nothing in {} of {} cuts: a loss in those cuts would not have been seen, so the column's cells without damage prove nothing",
                c.variant, c.unverified_cuts, c.cuts
            ));
        }
        for r in &self.primitives {
            for c in &r.cells {
                for f in &c.findings {
                    let mut line = format!(
                        "FINDING: {} {}: {} damaged, where {} says {}: {}",
                        c.variant,
                        r.primitive,
                        rate(c.damaged, c.checked),
                        f.cite,
                        f.claim,
                        f.says
                    );
                    if !f.beside.is_empty() {
                        let _ = write!(line, ". Beside it: {}", sources_line(&f.beside));
                    }
                    out.push(line);
                }
            }
        }
        for c in &self.fsync_eio {
            for f in &c.findings {
                out.push(format!(
                    "FINDING: {} {PHASE_FSYNC_EIO}: {}, where {} says otherwise: {}",
                    c.variant,
                    c.text(),
                    f.cite,
                    f.says
                ));
            }
        }
        out
    }
}

const INTRO: &str = "Damaged acknowledged units (lost + reverted + torn) over those checked, summed over the measured repeats and their cuts, with the 95 % Wilson interval of the rate; a replace also counts files found old, new or neither. VIOLATION: the primitive's promise broken. FINDING: a measurement that contradicts what a filesystem documents or the literature reports (the source named; its words in the documented column of the Markdown and HTML reports). The negative control must be caught in every cut (it was acknowledged with no sync); NOT CAUGHT means some cut showed no loss: the column is UNVERIFIED (grey), its cells without damage prove nothing. The flush control was written back and never flushed: KEPT means those cuts cannot expose a missing flush (the line below the table says what the method can expose). A cut after which the filesystem did not mount counts its units as lost.";

impl Matrix {
    /// The matrix as a table: heat on the filesystems' cells, the documented column left out of
    /// the terminal (too wide there).
    fn table(&self) -> Table {
        let mut lines = self.lines().into_iter();
        let head = lines.next().map(|l| l.cells).unwrap_or_default();
        let rows = lines
            .map(|l| {
                l.cells
                    .into_iter()
                    .enumerate()
                    .map(|(j, c)| {
                        let shade = j.checked_sub(2).and_then(|k| l.shade.get(k).copied());
                        shade.unwrap_or(Shade::Heat(None)).apply(block::Cell::new(c))
                    })
                    .collect()
            })
            .collect();
        Table {
            class: None,
            text_omits: head.len().checked_sub(1),
            head,
            rows,
            numeric_from: None,
            left: Vec::new(),
        }
    }
}

impl Section for DurabilitySection {
    fn blocks(&self, model: &ReportModel) -> Vec<Block> {
        let matrices = matrices(model)
            .iter()
            .map(|m| crate::MatrixBlocks {
                workload: m.workload.clone(),
                how: m.how.clone(),
                table: Some(m.table()),
                below: m.lines_below(),
                more: Vec::new(),
            })
            .collect();
        crate::matrix_section("Durability matrix", INTRO, matrices)
    }

    fn text(&self, model: &ReportModel) -> String {
        block::text(&self.blocks(model))
    }

    fn export(&self, model: &ReportModel) -> Option<(String, serde_json::Value)> {
        let matrices = matrices(model);
        if matrices.is_empty() {
            return None;
        }
        serde_json::to_value(matrices)
            .ok()
            .map(|v| ("durability".to_string(), v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::workloads::durability::metrics;
    use crate::engine::workloads::powercut;
    use crate::report::fixture;
    use crate::store::{CaseRecord, SampleStatus};

    /// Two repeats on ext4 and xfs of a reorder-disk durability workload with the fsync error
    /// probe: write-fsync loses nothing; the control loses 8 units a repeat on ext4 and nothing
    /// on xfs; a replace on xfs comes back neither once; xfs's first fsync missed the error once.
    fn model() -> ReportModel {
        let mut data = fixture::session_data();
        data.cases.clear();
        data.samples.clear();
        let mut id = 0;
        for (variant, control_lost, neither) in [("ext4", 8.0, 0.0), ("xfs", 0.0, 1.0)] {
            let case_id = format!("{variant}-reorder"); // fixture::case's id
            data.cases.push(CaseRecord {
                workload_kind: KIND.into(),
                workload_json: r#"{"kind":"durability","disk_model":"reorder","seed":3,"cuts":3,"fsync_errors":true}"#
                    .into(),
                ..fixture::case(variant, variant, "reorder", true)
            });
            for r in 0..2u32 {
                let m = fixture::m;
                let eio = if variant == "xfs" && r == 1 { 0.0 } else { 1.0 };
                let ms = vec![
                    m(PHASE_FSYNC_EIO, metrics::first_fsync_error(), eio),
                    m(PHASE_FSYNC_EIO, metrics::second_fsync_ok(), 1.0),
                    m(PHASE_FSYNC_EIO, metrics::cached_read_new(), 1.0),
                    m(PHASE_FSYNC_EIO, metrics::uncached_read_old(), 1.0),
                    m(PHASE_FSYNC_EIO, metrics::refused_writes(), eio),
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
        // zfs: every repeat failed (the workload cannot cut a pool).
        data.cases.push(CaseRecord {
            workload_kind: KIND.into(),
            ..fixture::case("zfs", "zfs", "reorder", true)
        });
        let why = SampleStatus::Failed("unavailable: durability cannot cut a ZFS pool".into());
        data.samples
            .push(fixture::sample(id + 1, "zfs-reorder", 0, false, why, &[], vec![]));
        crate::report::build_with(&data, 0, 0.95, &[&DurabilitySection])
    }

    #[test]
    fn a_rate_carries_its_wilson_interval() {
        assert_eq!(rate(3, 64), "3/64 = 4.7 % [1.6, 12.9]");
        assert_eq!(rate(0, 32), "0/32 = 0.0 % [0.0, 10.7]");
        assert_eq!(rate(0, 0), "0/0");
    }

    #[test]
    fn cells_sum_the_repeats_and_say_violations_findings_and_the_control_verdict() {
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
        // finding, with its sentence below the table; xfs documents nothing.
        let rd = line("rename-fsync-dir");
        assert!(
            rd.contains("16/32 = 50.0 % [") && rd.contains("FINDING (ext4(5) auto_da_alloc)"),
            "{rd}"
        );
        assert_eq!(rd.matches("FINDING").count(), 1, "{rd}");
        assert!(
            text.contains("FINDING: ext4 rename-fsync-dir: 16/32 = 50.0 % [") && text.contains("says durable"),
            "{text}"
        );
        // ext4's default dioread_nolock allows the loss: said beside the finding.
        assert!(
            text.contains(". Beside it: ext4(5) dioread_nolock (ext4 dioread_nolock: may lose)"),
            "{text}"
        );
        // The probe: xfs's first fsync missed the error once, against fsync(2).
        let probe = line(PHASE_FSYNC_EIO);
        assert!(
            probe.contains("fsync 1 EIO 2/2; fsync 2 ok 2/2; cached read new 2/2; uncached read old 2/2"),
            "{probe}"
        );
        assert!(
            probe.contains("fsync 1 EIO 1/2;") && probe.matches("FINDING").count() == 1,
            "{probe}"
        );
        assert!(text.contains("FINDING: xfs fsync-eio: fsync 1 EIO 1/2"), "{text}");
        assert!(
            text.contains("  zfs: failed: unavailable: durability cannot cut a ZFS pool"),
            "{text}"
        );
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
        assert!(
            md.contains("ext4(5) auto_da_alloc (ext3/ext4 data=ordered: durable)"),
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
            html.contains("<td>POSIX rename(2) (every filesystem: old or new)"),
            "{html}"
        );
        // A session without the workload renders nothing and exports no matrix.
        let plain = crate::report::build_with(&fixture::session_data(), 0, 0.95, &[&DurabilitySection]);
        assert_eq!(DurabilitySection.text(&plain), "");
        assert_eq!(DurabilitySection.html(&plain), "");
        let json = crate::report::render(&plain, crate::report::Format::Json, &[]);
        assert!(!json.contains("\"durability\""), "absent without a matrix");
    }

    #[test]
    fn the_json_export_carries_the_matrix() {
        let m = model();
        let json = crate::report::render(&m, crate::report::Format::Json, &[]);
        let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        let d = &v["durability"][0];
        assert_eq!(d["workload"], "reorder");
        assert_eq!(
            (d["method"].as_str(), d["disk_model"].as_str()),
            (Some("disk"), Some("reorder"))
        );
        assert_eq!((d["seed"].as_u64(), d["cuts_per_repeat"].as_u64()), (Some(3), Some(3)));
        assert_eq!(d["variants"], serde_json::json!(["ext4", "xfs"]));
        let row = |name: &str| {
            d["primitives"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["primitive"] == name)
                .unwrap_or_else(|| panic!("no {name}: {d}"))
                .clone()
        };
        let ctl = row(primitives::CONTROL);
        let ext4 = &ctl["cells"][0];
        assert_eq!(ext4["variant"], "ext4");
        assert_eq!(
            (ext4["checked"].as_u64(), ext4["damaged"].as_u64()),
            (Some(64), Some(16))
        );
        assert_eq!((ext4["reverted"].as_u64(), ext4["lost"].as_u64()), (Some(16), Some(0)));
        assert_eq!(ext4["rate"], 0.25);
        let (lo, hi) = (ext4["ci"][0].as_f64().unwrap(), ext4["ci"][1].as_f64().unwrap());
        assert!(lo < 0.25 && 0.25 < hi && lo > 0.0, "{lo} {hi}");
        assert_eq!(
            (ext4["verdict"].as_str(), ctl["cells"][1]["verdict"].as_str()),
            (Some("caught"), Some("not_caught"))
        );
        let rn = row("rename-fsync-file");
        assert_eq!(
            rn["cells"][1]["rename"],
            serde_json::json!({"old": 0, "new": 6, "neither": 2})
        );
        assert_eq!(rn["cells"][1]["verdict"], "violation");
        let rd = row("rename-fsync-dir");
        assert_eq!(rd["cells"][0]["findings"][0]["cite"], "ext4(5) auto_da_alloc");
        assert_eq!(rd["cells"][1]["findings"], serde_json::json!([]));
        assert!(rd["documented"].as_array().unwrap().iter().any(|s| s["scope"] == "xfs"));
        assert_eq!(d["fsync_eio"][1]["first_fsync_error"], 1);
        assert_eq!(d["fsync_eio"][1]["findings"][0]["cite"], "Linux fsync(2) EIO");
        assert_eq!(d["recovery"][1]["repair_needed"], 2);
        assert_eq!(d["recovery"][0]["cuts"], 6);
        assert_eq!(d["without_results"][0]["variant"], "zfs");
        // Loss counts are verdicts, not speeds: no best, behind or tied on their rows.
        let ranked: Vec<String> = m.workloads[0]
            .rows
            .iter()
            .filter(|r| r.cells.iter().any(|c| c.best || c.standing.is_some()))
            .map(|r| format!("{}/{}", r.phase, r.metric.name))
            .collect();
        assert!(
            ranked
                .iter()
                .all(|r| r.starts_with("recovery/recovery_mount_s") || r.contains("cpu")),
            "{ranked:?}"
        );
        assert!(!ranked
            .iter()
            .any(|r| r.contains("damaged") || r.contains("first_fsync_error")));
        // The export's matrices read back into the model's type (the same, to JSON's precision).
        let back: Vec<Matrix> = serde_json::from_value(v["durability"].clone()).expect("round trip");
        assert_eq!(serde_json::to_value(&back).unwrap(), v["durability"]);
        assert_eq!(back[0].primitives.len(), matrices(&m)[0].primitives.len());
    }

    #[test]
    fn a_deliberately_wrong_promise_is_caught_as_a_finding() {
        let m = model();
        // Claims no filesystem makes: the control durable on ext4 (it lost 16 units) and on xfs
        // (it lost none), and write-fsync durable on ext4 (kept): only the first is broken.
        let wrong = |primitive, fs: &'static [&'static str]| Documented {
            primitive,
            fs_types: fs,
            when: None,
            claim: Claim::Durable,
            cite: "WRONG",
            says: "deliberately wrong",
        };
        let table = [
            wrong(primitives::CONTROL, &["ext4"]),
            wrong(primitives::CONTROL, &["xfs"]),
            wrong("write-fsync", &["ext4"]),
        ];
        let ms = matrices_with(&m, &table);
        let found: Vec<(String, String)> = ms[0]
            .primitives
            .iter()
            .flat_map(|r| {
                r.cells
                    .iter()
                    .filter(|c| !c.findings.is_empty())
                    .map(|c| (r.primitive.clone(), c.variant.clone()))
            })
            .collect();
        assert_eq!(found, [(primitives::CONTROL.to_string(), "ext4".to_string())]);
        assert!(
            ms[0]
                .lines_below()
                .iter()
                .any(|l| l.starts_with("FINDING: ext4 nosync-control: 16/64")),
            "{:?}",
            ms[0].lines_below()
        );
        // Against the real table the control finds nothing (it promises nothing).
        assert!(matrices(&m)[0]
            .primitives
            .last()
            .unwrap()
            .cells
            .iter()
            .all(|c| c.findings.is_empty()));
    }

    /// Two repeats of 3 cuts on ext4 and xfs under the shutdown ioctl, with the controls judged
    /// per cut: on xfs one cut's negative control lost nothing (repeat 2), and a replace lost a
    /// file there all the same; on ext4 one cut did not mount (its append-fsync units count as
    /// lost); the flush control survived every cut on both.
    fn per_cut_model() -> ReportModel {
        let mut data = fixture::session_data();
        data.cases.clear();
        data.samples.clear();
        let mut id = 0;
        for variant in ["ext4", "xfs"] {
            let case_id = format!("{variant}-shutdown");
            data.cases.push(CaseRecord {
                workload_kind: KIND.into(),
                workload_json: r#"{"kind":"durability","method":"shutdown","cuts":3}"#.into(),
                ..fixture::case(variant, variant, "shutdown", true)
            });
            for r in 0..2u32 {
                let m = fixture::m;
                let missed = if variant == "xfs" && r == 1 { 1.0 } else { 0.0 };
                let neither = if variant == "xfs" && r == 1 { 1.0 } else { 0.0 };
                let unmounted = if variant == "ext4" && r == 0 { 4.0 } else { 0.0 };
                let ms = vec![
                    m("write-fsync", metrics::damaged(), 0.0),
                    m("write-fsync", metrics::violations(), 0.0),
                    m("write-fsync", metrics::acked_units(), 12.0),
                    m("write-fsync", metrics::unverified_units(), 4.0 * missed),
                    m("write-fsync", metrics::unrecovered_units(), 0.0),
                    m("append-fsync", metrics::damaged(), unmounted),
                    m("append-fsync", metrics::violations(), unmounted),
                    m("append-fsync", metrics::lost(), unmounted),
                    m("append-fsync", metrics::acked_units(), 24.0),
                    m("append-fsync", metrics::unrecovered_units(), unmounted),
                    m("rename-fsync-file", metrics::damaged(), 4.0 * neither),
                    m("rename-fsync-file", metrics::violations(), neither),
                    m("rename-fsync-file", metrics::lost(), 4.0 * neither),
                    m("rename-fsync-file", metrics::acked_units(), 12.0),
                    m("rename-fsync-file", metrics::rename_old(), 0.0),
                    m("rename-fsync-file", metrics::rename_new(), 3.0 - neither),
                    m("rename-fsync-file", metrics::rename_neither(), neither),
                    m(primitives::FLUSH_CONTROL, metrics::damaged(), 0.0),
                    m(primitives::FLUSH_CONTROL, metrics::acked_units(), 12.0),
                    m(primitives::FLUSH_CONTROL, metrics::control_caught(), 0.0),
                    m(primitives::FLUSH_CONTROL, metrics::cuts_not_caught(), 3.0),
                    m(primitives::FLUSH_CONTROL, metrics::cuts(), 3.0),
                    m(primitives::CONTROL, metrics::damaged(), 12.0 - 4.0 * missed),
                    m(primitives::CONTROL, metrics::lost(), 12.0 - 4.0 * missed),
                    m(primitives::CONTROL, metrics::acked_units(), 12.0),
                    m(primitives::CONTROL, metrics::control_caught(), 1.0 - missed),
                    m(primitives::CONTROL, metrics::cuts_not_caught(), missed),
                    m(primitives::CONTROL, metrics::cuts(), 3.0),
                    m("recovery", powercut::metrics::recovery_mount_s(), 0.01),
                    m("recovery", powercut::metrics::recovery_failed(), unmounted / 4.0),
                    m("fsck", powercut::metrics::fsck_repair_needed(), 0.0),
                ];
                id += 1;
                data.samples
                    .push(fixture::sample(id, &case_id, r, false, SampleStatus::Ok, &[], ms));
            }
        }
        crate::report::build_with(&data, 0, 0.95, &[&DurabilitySection])
    }

    #[test]
    fn a_cut_whose_control_lost_nothing_makes_its_column_unverified_in_every_format() {
        let m = per_cut_model();
        let text = DurabilitySection.text(&m);
        let line = |start: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(start))
                .unwrap_or_else(|| panic!("no {start}: {text}"))
                .to_string()
        };
        let head = line("primitive");
        assert!(
            head.contains("xfs UNVERIFIED (1/6 cuts)") && !head.contains("ext4 UNVERIFIED"),
            "{head}"
        );
        let wf = line("write-fsync");
        assert_eq!(wf.matches("0/24 = 0.0 % [0.0, 13.8]").count(), 2, "{wf}");
        assert_eq!(wf.matches("UNVERIFIED").count(), 1, "xfs only: {wf}");
        assert!(wf.trim_end().ends_with("UNVERIFIED"), "the xfs cell, last: {wf}");
        // A loss found in the unverified column stays a violation.
        assert!(
            line("rename-fsync-file").contains("old/new/neither 0/5/1 VIOLATION"),
            "{text}"
        );
        let ctl = line(primitives::CONTROL);
        assert!(ctl.contains("24/24 = 100.0 % [") && ctl.contains(" caught"), "{ctl}");
        assert!(
            ctl.contains("20/24 = 83.3 % [") && ctl.contains("NOT CAUGHT in 1/6 cuts"),
            "{ctl}"
        );
        let flush = line(primitives::FLUSH_CONTROL);
        assert_eq!(
            flush
                .matches("KEPT in 6/6 cuts: a missing flush cannot show there")
                .count(),
            2,
            "{flush}"
        );
        // The cut that did not mount: its units lost, and said so.
        assert!(
            line("append-fsync").contains("4/48 = 8.3 % [")
                && text.contains("(4 in cuts that did not mount) VIOLATION"),
            "{text}"
        );
        assert!(
            text.contains("UNVERIFIED: xfs: the negative control lost nothing in 1 of 6 cuts"),
            "{text}"
        );
        assert!(!text.contains("UNVERIFIED: ext4"), "{text}");
        assert!(
            text.contains("Can expose: the shutdown ioctl drops the page cache")
                && text.contains("It survived cuts on ext4 (kept in 6/6 cuts), xfs (kept in 6/6 cuts)"),
            "{text}"
        );

        let md = DurabilitySection.markdown(&m);
        assert!(md.contains("| xfs UNVERIFIED (1/6 cuts) |"), "{md}");
        assert!(md.contains("0/24 = 0.0 % \\[0.0, 13.8\\] UNVERIFIED |"), "{md}");

        let html = DurabilitySection.html(&m);
        assert!(html.contains("<th>xfs UNVERIFIED (1/6 cuts)</th>"), "{html}");
        assert!(
            html.contains("<td class=\"grey\">0/24 = 0.0 % [0.0, 13.8] UNVERIFIED</td>"),
            "{html}"
        );
        assert!(
            html.contains("<td style=\"background:hsl(120,70%,85%)\">0/24 = 0.0 % [0.0, 13.8]</td>"),
            "ext4's write-fsync stays green: {html}"
        );
        assert_eq!(
            html.matches("<td class=\"grey\">0/24 = 0.0 % [0.0, 13.8] KEPT in 6/6 cuts")
                .count(),
            2,
            "{html}"
        );

        let json = crate::report::render(&m, crate::report::Format::Json, &[]);
        let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        let d = &v["durability"][0];
        assert_eq!(
            d["columns"],
            serde_json::json!([
                {"variant": "ext4", "cuts": 6, "unverified_cuts": 0, "unverified": false, "flush_cuts": 6, "flush_kept_cuts": 6},
                {"variant": "xfs", "cuts": 6, "unverified_cuts": 1, "unverified": true, "flush_cuts": 6, "flush_kept_cuts": 6}
            ])
        );
        assert!(d["exposes"].as_str().unwrap().contains("not a missing flush"), "{d}");
        let row = |name: &str| {
            d["primitives"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["primitive"] == name)
                .unwrap_or_else(|| panic!("no {name}: {d}"))
                .clone()
        };
        let wf = row("write-fsync");
        assert_eq!(
            (wf["cells"][0]["verdict"].as_str(), wf["cells"][1]["verdict"].as_str()),
            (Some("intact"), Some("unverified"))
        );
        assert_eq!(wf["cells"][1]["unverified"], 4);
        assert_eq!(row("rename-fsync-file")["cells"][1]["verdict"], "violation");
        assert_eq!(row("append-fsync")["cells"][0]["unrecovered"], 4);
        let ctl = row(primitives::CONTROL);
        assert_eq!(ctl["cells"][1]["control_cuts"], serde_json::json!([1, 6]));
        assert_eq!(
            (ctl["cells"][0]["verdict"].as_str(), ctl["cells"][1]["verdict"].as_str()),
            (Some("caught"), Some("not_caught"))
        );
        let flush = row(primitives::FLUSH_CONTROL);
        assert_eq!(flush["cells"][0]["verdict"], "not_caught");
        assert_eq!(flush["promise"], Control::Flush.as_str());
        let back: Vec<Matrix> = serde_json::from_value(v["durability"].clone()).expect("round trip");
        assert_eq!(back[0].columns, matrices(&m)[0].columns);
    }

    #[test]
    fn an_older_session_is_unverified_only_where_the_control_lost_nothing_at_all() {
        // The fixture has no per-cut rows: ext4's control lost 16 units, xfs's none.
        let ms = matrices(&model());
        let cols: Vec<(String, bool, u64, u64)> = ms[0]
            .columns
            .iter()
            .map(|c| (c.variant.clone(), c.unverified, c.unverified_cuts, c.cuts))
            .collect();
        assert_eq!(
            cols,
            [("ext4".to_string(), false, 0, 6), ("xfs".to_string(), true, 6, 6)]
        );
        let wf = ms[0].primitives.iter().find(|r| r.primitive == "write-fsync").unwrap();
        assert_eq!(
            wf.cells.iter().map(|c| c.verdict).collect::<Vec<_>>(),
            [Verdict::Intact, Verdict::Unverified]
        );
        assert!(
            ms[0].columns.iter().all(|c| c.flush_cuts.is_none()),
            "no flush control then"
        );
    }

    /// btrfs and btrfs+nocow, each probed twice as measured on Linux 6.18 (the new data read
    /// through the page cache after the failure), ext4 data=journal turned read-only; the
    /// NOCOW variant's samples read back `FS_NOCOW_FL` when `nocow_read_back`.
    fn probed(nocow_read_back: bool) -> ReportModel {
        let mut data = fixture::session_data();
        data.cases.clear();
        data.samples.clear();
        let mut id = 0;
        for (variant, fs, opts) in [
            ("btrfs", "btrfs", vec![]),
            ("btrfs+nocow", "btrfs", vec![]),
            ("ext4-journal", "ext4", vec!["data=journal".to_string()]),
        ] {
            let case_id = format!("{variant}-eio");
            data.cases.push(CaseRecord {
                case_id: case_id.clone(),
                workload_kind: KIND.into(),
                workload_json: r#"{"kind":"durability","cuts":1,"fsync_errors":true}"#.into(),
                mount_opts: opts,
                ..fixture::case(variant, fs, "eio", true)
            });
            let journal = (variant == "ext4-journal") as u8 as f64;
            for r in 0..2u32 {
                let m = fixture::m;
                let ms = vec![
                    m(PHASE_FSYNC_EIO, metrics::first_fsync_error(), 1.0),
                    m(PHASE_FSYNC_EIO, metrics::second_fsync_ok(), 1.0 - journal),
                    m(PHASE_FSYNC_EIO, metrics::cached_read_new(), 1.0),
                    m(PHASE_FSYNC_EIO, metrics::uncached_read_old(), 1.0 - journal),
                    m(PHASE_FSYNC_EIO, metrics::refused_writes(), 1.0),
                    m(PHASE_FSYNC_EIO, metrics::went_read_only(), journal),
                    m("write-fsync", metrics::damaged(), 0.0),
                    m("write-fsync", metrics::acked_units(), 4.0),
                ];
                id += 1;
                let mut sample = fixture::sample(id, &case_id, r, false, SampleStatus::Ok, &[], ms);
                if variant == "btrfs+nocow" && nocow_read_back {
                    sample.sample.path = Some(fsbench_core::host::path::PathFacts {
                        nocow_asked: true,
                        nocow: Some(true),
                        ..Default::default()
                    });
                }
                data.samples.push(sample);
            }
        }
        crate::report::build_with(&data, 0, 0.95, &[&DurabilitySection])
    }

    #[test]
    fn the_copy_on_write_and_the_nocow_btrfs_columns_are_judged_by_their_own_entries() {
        let findings = |m: &ReportModel| -> Vec<(String, String)> {
            matrices(m)[0]
                .fsync_eio
                .iter()
                .flat_map(|c| c.findings.iter().map(|f| (c.variant.clone(), f.says.clone())))
                .collect()
        };
        // btrfs's copy-on-write file kept the new data in its pages where ATC'20 says Btrfs
        // reverts them; the NOCOW file, which ATC'20 did not study, has no finding.
        let found = findings(&probed(true));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "btrfs");
        assert!(found[0].1.starts_with("Btrfs reverts the file"), "{found:?}");
        // Without the NOCOW flag read back, the same numbers are judged as a copy-on-write file.
        let found = findings(&probed(false));
        assert_eq!(
            found.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(),
            ["btrfs", "btrfs+nocow"]
        );
        // ext4 data=journal: read-only as documented, no finding, and the cell says so.
        let m = probed(true);
        let text = DurabilitySection.text(&m);
        let probe = text
            .lines()
            .find(|l| l.trim_start().starts_with(PHASE_FSYNC_EIO))
            .unwrap();
        assert!(
            probe.contains(
                "fsync 2 ok 0/2; cached read new 2/2; uncached read old 0/2; writes refused 2; went read-only 2/2"
            ),
            "{probe}"
        );
        assert!(
            !probe.contains("went read-only 0"),
            "said only where it happened: {probe}"
        );
    }
}
