//! The one table view of a workload, rendered by the terminal table, Markdown and HTML: which
//! rows, which cells, what each cell says and how it is marked. Renderers only format it.
//!
//! * [`results`]: the studies' layout, filesystems (variants) as columns and phases as rows. A
//!   row knows whether it is the first of its phase (later rows leave the phase blank); a cell is
//!   `mean ± CI half-width` ([`super::number::mean_ci`]) with its standing (best, tied,
//!   untested), its cache-bound flag and Welch's p against the best, or, without values, why:
//!   `unavailable` (the case could not run here), `failed` (every measured repeat failed),
//!   `unsupported` (the phase was left out: the filesystem lacks what it needs) or `n/a`. `full = false` keeps the headline and process-CPU rows (the terminal table);
//!   `full = true` adds the detail rows ([`super::role::is_detail`]).
//! * [`details`]: every summary field of every cell, one line per (row, variant), with the
//!   numbers already formatted as every format prints them.
//!
//! Invariant: every [`RowView`] has exactly one cell per variant of the model, in column order.

use super::role;
use super::words::without_name;
use super::{number, Cell, ReportModel, Row, Standing, WorkloadTable};
use crate::metric::{MetricId, Role, Unit};
use crate::store::{CaseAvailability, SampleStatus};

/// One displayed row of a results table.
pub(super) struct RowView<'a> {
    /// The model's row.
    pub row: &'a Row,
    /// `true` on the first displayed row of its phase (later ones leave the phase blank).
    pub first_of_phase: bool,
    /// One cell per variant, in column order.
    pub cells: Vec<CellView<'a>>,
}

/// One cell of a [`RowView`].
pub(super) enum CellView<'a> {
    /// A summarised cell and its `mean ± CI` text.
    Value {
        /// The model's cell.
        cell: &'a Cell,
        /// `mean ± half-width`.
        text: String,
    },
    /// No values: `unavailable`, `failed` or `n/a`.
    Empty(&'static str),
}

impl CellView<'_> {
    /// What the cell prints before any mark.
    pub fn text(&self) -> &str {
        match self {
            CellView::Value { text, .. } => text,
            CellView::Empty(why) => why,
        }
    }

    /// The model's cell, if it has values.
    pub fn cell(&self) -> Option<&Cell> {
        match self {
            CellView::Value { cell, .. } => Some(cell),
            CellView::Empty(_) => None,
        }
    }

    /// Best mean of its row.
    pub fn best(&self) -> bool {
        self.cell().is_some_and(|c| c.best)
    }

    /// The mark after the cell's text ([`Standing::mark`]): `=` tied with (older sessions) or
    /// the same as the best, `~` inconclusive.
    pub fn mark(&self) -> Option<&'static str> {
        self.standing().and_then(Standing::mark)
    }

    /// Standing against the best, on ranked rows.
    pub fn standing(&self) -> Option<Standing> {
        self.cell().and_then(|c| c.standing)
    }

    /// Above what the raw device delivers ([`super::cachebound`]).
    pub fn cache_bound(&self) -> bool {
        self.cell().is_some_and(|c| c.cache_bound)
    }

    /// Welch's p-value against the best cell of the row, when tested.
    pub fn p_vs_best(&self) -> Option<f64> {
        self.cell()
            .and_then(|c| c.vs_best.as_ref())
            .and_then(|b| b.welch)
            .map(|w| w.p)
    }
}

/// `throughput (MiB/s)`.
pub(super) fn name_unit(metric: &MetricId) -> String {
    format!("{} ({})", metric.name, metric.unit)
}

/// The compact label of the text formats: `throughput (MiB/s)`, or `cpu % (process)` /
/// `cpu % (system)` for the CPU rows.
pub(super) fn short_label(metric: &MetricId) -> String {
    if metric.unit == Unit::Percent {
        match metric.role {
            Role::ProcessCpu => return "cpu % (process)".to_string(),
            Role::SystemCpu => return "cpu % (system)".to_string(),
            _ => {}
        }
    }
    name_unit(metric)
}

/// Why a variant has no value at all in a workload.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Absence {
    /// The case could not run here; the stored reason (without a leading `variant:`).
    Unavailable(String),
    /// Every measured repeat failed; the first repeat's error.
    Failed(String),
}

impl Absence {
    /// The word of an empty table cell and of a chart's empty slot: `unavailable` or `failed`.
    pub fn word(&self) -> &'static str {
        match self {
            Absence::Unavailable(_) => "unavailable",
            Absence::Failed(_) => "failed",
        }
    }

    /// The reason, as stored.
    pub fn reason(&self) -> &str {
        match self {
            Absence::Unavailable(r) | Absence::Failed(r) => r,
        }
    }

    /// "unavailable: module not loaded" / "every repeat failed: filesystem full …".
    pub fn describe(&self) -> String {
        match self {
            Absence::Unavailable(r) => format!("unavailable: {r}"),
            Absence::Failed(r) => format!("every repeat failed: {r}"),
        }
    }
}

/// Why `variant` has no value in `workload`: unavailable (any of its cases), or every measured
/// repeat failed (at least one failed, none ok). `None` when it has values, or has no case or no
/// measured repeat there (an interrupted session: the cells say `n/a`).
pub(super) fn absence(model: &ReportModel, variant: &str, workload: &str) -> Option<Absence> {
    let cases: Vec<_> = model
        .cases
        .iter()
        .filter(|c| c.variant == variant && c.workload == workload)
        .collect();
    if let Some((case, reason)) = cases.iter().find_map(|c| match &c.availability {
        CaseAvailability::Unavailable(r) => Some((c, r)),
        CaseAvailability::Available => None,
    }) {
        return Some(Absence::Unavailable(
            without_name(reason, &[&case.variant, &case.fs_type]).to_string(),
        ));
    }
    let measured = model
        .samples
        .iter()
        .filter(|s| !s.sample.is_warmup && cases.iter().any(|c| c.case_id == s.sample.case_id));
    let mut first_error = None;
    for s in measured {
        match &s.sample.status {
            SampleStatus::Ok => return None,
            SampleStatus::Failed(e) => {
                first_error.get_or_insert_with(|| e.clone());
            }
        }
    }
    first_error.map(Absence::Failed)
}

/// Every variant of the model without any value in `workload`, with why, in column order
/// (`(column index, absence)`).
pub(super) fn absent(model: &ReportModel, workload: &str) -> Vec<(usize, Absence)> {
    model
        .variants
        .iter()
        .enumerate()
        .filter_map(|(i, v)| absence(model, v, workload).map(|a| (i, a)))
        .collect()
}

/// Whether `variant`'s measured repeats of `workload` left `phase` out because its filesystem
/// lacks what the phase needs (their "PHASE: unsupported on TYPE" note).
fn unsupported(model: &ReportModel, variant: &str, workload: &str, phase: &str) -> bool {
    let cases: Vec<&str> = model
        .cases
        .iter()
        .filter(|c| c.variant == variant && c.workload == workload)
        .map(|c| c.case_id.as_str())
        .collect();
    model.samples.iter().any(|s| {
        !s.sample.is_warmup
            && cases.contains(&s.sample.case_id.as_str())
            && s.sample
                .notes
                .iter()
                .any(|n| crate::fstype::is_unsupported_note(n, phase))
    })
}

/// What an empty cell of `variant` in `workload` says.
fn empty_text(model: &ReportModel, variant: &str, workload: &str) -> &'static str {
    absence(model, variant, workload).map_or("n/a", |a| a.word())
}

/// The results table of `table` (see the module docs; `full` adds the detail rows).
pub(super) fn results<'a>(model: &ReportModel, table: &'a WorkloadTable, full: bool) -> Vec<RowView<'a>> {
    let empty: Vec<&'static str> = model
        .variants
        .iter()
        .map(|v| empty_text(model, v, &table.workload))
        .collect();
    let mut previous_phase: Option<&str> = None;
    table
        .rows
        .iter()
        .filter(|row| full || !role::is_detail(&row.metric))
        .map(|row| {
            let first_of_phase = previous_phase != Some(row.phase.as_str());
            previous_phase = Some(row.phase.as_str());
            let cells = model
                .variants
                .iter()
                .zip(&empty)
                .map(
                    |(variant, empty)| match row.cells.iter().find(|c| &c.variant == variant) {
                        Some(cell) => CellView::Value {
                            cell,
                            text: number::mean_ci(cell.summary.mean, cell.summary.ci_half_width()),
                        },
                        None if unsupported(model, variant, &table.workload, &row.phase) => {
                            CellView::Empty("unsupported")
                        }
                        None => CellView::Empty(empty),
                    },
                )
                .collect();
            RowView {
                row,
                first_of_phase,
                cells,
            }
        })
        .collect()
}

/// One line of the all-statistics table: one cell's summary, formatted.
pub(super) struct DetailRow<'a> {
    /// The model's row.
    pub row: &'a Row,
    /// The model's cell.
    pub cell: &'a Cell,
    /// Mean, CI half-width (`–` without one), median, sd, CoV in percent (one decimal), trimmed
    /// mean, min and max, as printed.
    pub numbers: DetailNumbers,
    /// Welch's p against the best cell, three decimals, `–` when untested.
    pub p_vs_best: String,
}

impl DetailRow<'_> {
    /// The line's cells as every format prints them: phase, metric with its unit and variant
    /// (through the format's escaper `esc`), then n, mean, ± CI, median, sd, CoV %, trimmed
    /// mean, min and max.
    pub fn cells(&self, esc: fn(&str) -> String) -> Vec<String> {
        let x = &self.numbers;
        vec![
            esc(&self.row.phase),
            esc(&name_unit(&self.row.metric)),
            esc(&self.cell.variant),
            self.cell.summary.n.to_string(),
            x.mean.clone(),
            x.ci.clone(),
            x.median.clone(),
            x.sd.clone(),
            x.cov_pct.clone(),
            x.trimmed_mean.clone(),
            x.min.clone(),
            x.max.clone(),
        ]
    }
}

/// The formatted numbers of a [`DetailRow`].
pub(super) struct DetailNumbers {
    pub mean: String,
    pub ci: String,
    pub median: String,
    pub sd: String,
    pub cov_pct: String,
    pub trimmed_mean: String,
    pub min: String,
    pub max: String,
}

/// Every cell of `table` with all its statistics, rows in table order, cells in column order.
pub(super) fn details(table: &WorkloadTable) -> Vec<DetailRow<'_>> {
    table
        .rows
        .iter()
        .flat_map(|row| row.cells.iter().map(move |cell| (row, cell)))
        .map(|(row, cell)| {
            let s = &cell.summary;
            DetailRow {
                row,
                cell,
                numbers: DetailNumbers {
                    mean: number::value(s.mean),
                    ci: s.ci_half_width().map(number::value).unwrap_or_else(|| "–".into()),
                    median: number::value(s.median),
                    sd: number::value(s.sd),
                    cov_pct: format!("{:.1}", s.cov * 100.0),
                    trimmed_mean: number::value(s.trimmed_mean),
                    min: number::value(s.min),
                    max: number::value(s.max),
                },
                p_vs_best: cell
                    .vs_best
                    .as_ref()
                    .and_then(|b| b.welch)
                    .map(|w| format!("{:.3}", w.p))
                    .unwrap_or_else(|| "–".into()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build;
    use crate::fixture::session_data;

    #[test]
    fn a_phase_the_filesystem_could_not_run_says_unsupported_and_other_gaps_n_a() {
        use crate::fixture::{case, m, sample};
        use crate::metric::{MetricId, Unit};
        let mut data = session_data();
        data.cases = vec![
            case("ext4", "ext4", "mongo", true),
            case("exfat", "exfat", "mongo", true),
        ];
        data.samples.clear();
        let time = |phase: &str| m(phase, MetricId::lower("time", Unit::Seconds), 1.0);
        let note = crate::fstype::FsType::of("exfat")
            .unsupported("symlink", &[crate::fstype::Feature::Symlinks])
            .unwrap();
        for (i, (id, notes, ms)) in [
            (
                "ext4-mongo",
                vec![],
                vec![time("create"), time("symlink"), time("frag")],
            ),
            ("exfat-mongo", vec![note.as_str()], vec![time("create")]),
        ]
        .into_iter()
        .enumerate()
        {
            data.samples
                .push(sample(i as i64 + 1, id, 0, false, SampleStatus::Ok, &notes, ms));
        }
        let model = build::build(&data, 0, 0.95);
        let rows = results(&model, &model.workloads[0], false);
        let exfat = model.variants.iter().position(|v| v == "exfat").unwrap();
        let text = |phase: &str| {
            rows.iter().find(|r| r.row.phase == phase).unwrap().cells[exfat]
                .text()
                .to_string()
        };
        assert_eq!(text("symlink"), "unsupported");
        assert_eq!(text("frag"), "n/a", "a gap without the note stays n/a");
        assert_ne!(text("create"), "unsupported");
    }

    #[test]
    fn empty_cells_say_why() {
        let mut data = session_data();
        // Every measured xfs bonnie repeat fails: its cells read `failed`, not `n/a`.
        for s in data.samples.iter_mut().filter(|s| s.sample.case_id == "xfs-bonnie") {
            s.sample.status = crate::store::SampleStatus::Failed("ENOSPC".into());
            s.sample.measurements.clear();
        }
        let model = build(&data, 1, 0.95);
        let rows = results(&model, &model.workloads[0], true);
        let texts: Vec<&str> = rows[0].cells.iter().map(CellView::text).collect();
        assert_eq!(texts, ["310.0 ± 24.8", "failed", "224 ± 159", "unavailable"]);
        let rows = results(&model, &model.workloads[1], true);
        assert_eq!(rows[0].cells[2].text(), "n/a");
    }

    #[test]
    fn one_cell_per_variant_and_details_rows_leave_out_nothing() {
        let model = build(&session_data(), 1, 0.95);
        for table in &model.workloads {
            let full = results(&model, table, true);
            assert_eq!(full.len(), table.rows.len());
            assert!(full.iter().all(|r| r.cells.len() == model.variants.len()));
            let short = results(&model, table, false);
            assert!(short.iter().all(|r| !role::is_detail(&r.row.metric)));
            assert!(short.len() < full.len(), "the fixture has latency and system-CPU rows");
            let cells: usize = table.rows.iter().map(|r| r.cells.len()).sum();
            assert_eq!(details(table).len(), cells);
        }
        let bonnie = results(&model, &model.workloads[0], true);
        assert!(bonnie[0].first_of_phase && !bonnie[1].first_of_phase);
        assert_eq!(short_label(&bonnie[1].row.metric), "cpu % (process)");
        assert_eq!(name_unit(&bonnie[1].row.metric), "cpu_process (%)");
    }
}
