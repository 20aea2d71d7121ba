//! Reports: the [`ReportModel`] built from a stored session, and its renderers.
//! (Skeleton: the report helper fills this in.)

use crate::metric::MetricId;
use crate::stats::Summary;
use crate::store::{CaseRecord, SampleRecord, SessionRecord};
use serde::{Deserialize, Serialize};

/// Version of the JSON export's shape; bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Output formats of `fsbench report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Terminal table: filesystems as columns, phases as rows.
    Table,
    /// Markdown tables.
    Md,
    /// Long CSV: one row per sample and metric.
    Csv,
    /// JSON with `schema_version`, summaries and raw samples.
    Json,
}

/// One summarised cell: one metric of one variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Variant name (column).
    pub variant: String,
    /// Summary of the measured repeats.
    pub summary: Summary,
    /// The measured values in run order (warm-ups excluded).
    pub values: Vec<f64>,
    /// This variant is the best of the row (by the metric's direction, on the mean).
    pub best: bool,
}

/// One row of a workload table: one phase × metric across variants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Phase name.
    pub phase: String,
    /// Metric, with unit and direction.
    pub metric: MetricId,
    /// One cell per variant that has values, in column order.
    pub cells: Vec<Cell>,
}

/// The rows of one workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkloadTable {
    /// Workload name.
    pub workload: String,
    /// Workload kind.
    pub kind: String,
    /// Rows in phase order, headline metric first, CPU rows after it.
    pub rows: Vec<Row>,
}

/// Everything any exporter needs; built only from stored data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReportModel {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The session.
    pub session: SessionRecord,
    /// Variant names in column order.
    pub variants: Vec<String>,
    /// The cases.
    pub cases: Vec<CaseRecord>,
    /// One table per workload.
    pub workloads: Vec<WorkloadTable>,
    /// Warnings a reader must see (unavailable variants, failed repeats, high CoV, …).
    pub warnings: Vec<String>,
    /// Every raw sample, warm-ups included.
    pub samples: Vec<SampleRecord>,
}
/// TEMP
pub fn build(_d: &crate::store::SessionData, _t: usize, _c: f64) -> ReportModel { unimplemented!() }
/// TEMP
pub fn render(_m: &ReportModel, _f: Format) -> String { unimplemented!() }
