//! Reports: the [`ReportModel`] built from a stored session, and its renderers.
//!
//! [`build()`] is the only place where stored samples become numbers a reader sees; every
//! exporter renders the same model ([`render`]: terminal table, Markdown, long CSV, JSON), so
//! the formats cannot disagree.
//!
//! Rules (see `doc/statistics.md` for the statistics):
//! * columns are the filesystem variants in the order they first appear in the session's cases;
//!   one [`WorkloadTable`] per workload in case order;
//! * rows are (phase, metric) pairs in the order phases appear in the samples; within a phase the
//!   headline, latency and detail metrics come first (in sample order), then process CPU, then
//!   whole-system CPU — by each metric's declared [`crate::metric::Role`] (`report::role`), never by
//!   its name;
//! * cells use only repeats with status `ok` that are not warm-ups; non-finite values are dropped
//!   with a warning, so `cell.values.len() == cell.summary.n`;
//! * `best` marks the cell(s) with the best mean by the metric's declared direction, only when at
//!   least two variants have values, and never on CPU or detail rows: CPU use is context for the headline
//!   number (low CPU at low throughput is not an achievement), as in the published studies, which
//!   mark the best throughput or time;
//! * an unavailable variant keeps its column; the table prints `unavailable` in its cells and the
//!   reason is a warning (`zfs: unavailable: <reason>`), so nothing is silently skipped; a variant
//!   whose measured repeats all failed prints `failed`; the prose summaries of every format name
//!   both kinds ("Not compared: …", `summary::paragraph`) and the HTML charts give them a
//!   labelled placeholder slot;
//! * `cache_bound` marks a throughput (MiB/s) cell whose mean is more than
//!   [`CACHE_BOUND_TOLERANCE`] above the faster rate of the session's raw-device baseline
//!   (doc/architecture.md: "a throughput above it is flagged cache-bound"), and a random-read
//!   cell (reads/s, IOPS, seeks, small-block MiB/s of random reads) whose reads per second are
//!   above the baseline's random 4 KiB read rate by as much (`cachebound`, which lists the rows
//!   judged and why metadata rates are not); tmpfs cells are never compared (no raw
//!   device), and without a measured baseline nothing is flagged and a warning says why. One
//!   warning per workload lists the flagged cells; the table and Markdown mark them `‡`.
//!
//! Invariant: [`build()`] and [`render`] never panic, whatever the stored data holds (unknown case
//! ids, NaN values, empty sessions); oddities become warnings.

// The lower crates' modules this crate uses, by their names in the layer map
// (doc/architecture.md), so a path reads `crate::units::Bytes` in every crate.
use fsbench_core::choice;
use fsbench_core::fstype;
use fsbench_core::host;
use fsbench_core::metric;
#[cfg(any(test, feature = "test-support"))]
use fsbench_core::policy;
use fsbench_core::stats;
use fsbench_core::units;
use fsbench_engine as engine;
use fsbench_store as store;

pub mod block;
mod build;
pub mod cachebound;
pub mod calibration;
pub mod capacity;
pub mod caption;
pub mod charts;
pub mod compare;
mod csv;
pub mod escape;
pub mod group;
mod histogram;
mod html;
mod matrix;
pub mod methodology;
pub mod noise;
pub mod number;
mod role;
mod spectrum;
mod summary;
mod text;
mod throughput;
mod view;
pub mod warning;
pub mod windows;
pub mod words;

#[cfg(any(test, feature = "test-support"))]
pub mod fixture;

pub use build::{build, build_with};
pub use text::render_table;
pub use warning::Warning;

use crate::metric::MetricId;
use crate::stats::Summary;
use crate::store::{CaseRecord, RawBaseline, SampleRecord, SessionRecord};
use serde::{Deserialize, Serialize};

/// Version of the JSON export's shape; bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Output formats of `fsbench report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Terminal table: filesystems as columns, phases as rows.
    Table,
    /// Markdown tables.
    Md,
    /// Long CSV: one row per sample and metric.
    Csv,
    /// JSON with `schema_version`, summaries and raw samples.
    Json,
    /// One self-contained HTML page: summaries, SVG charts, tables, environment, warnings.
    Html,
}

impl choice::Choice for Format {
    const CHOICES: &'static [(Self, &'static str, &'static str)] = &[
        (
            Format::Table,
            "table",
            "Terminal table: filesystems as columns, phases as rows",
        ),
        (Format::Md, "md", "Markdown tables"),
        (Format::Csv, "csv", "Long CSV: one row per sample and metric"),
        (
            Format::Json,
            "json",
            "JSON with `schema_version`, summaries and raw samples",
        ),
        (
            Format::Html,
            "html",
            "One self-contained HTML page: summaries, SVG charts, tables, environment, warnings",
        ),
    ];
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
    /// Standing against the best cell of its row; `None` on CPU rows and rows with one cell.
    #[serde(default)]
    pub standing: Option<Standing>,
    /// This cell against the best cell of its row (Welch test, ratio this / best); `None` on
    /// the best cell itself and wherever `standing` is `None`.
    #[serde(default)]
    pub vs_best: Option<VsBest>,
    /// For a cell whose standing is [`Standing::Inconclusive`] (neither shown behind nor shown
    /// the same within the session's margin), the tightest statement its data support: this
    /// cell and the row's best cell are within ±`within_pct` % of each other (percent, rounded
    /// up to 0.1). The ratio this / best lies inside `(1 − X/100, 1 + X/100)` by its interval at
    /// the level of the session's equivalence tests, so the statement keeps their error rate
    /// ([`crate::stats::two_sample::within_pct`], doc/statistics.md). `None` on every other cell,
    /// and where the bound would be 100 % or more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_pct: Option<f64>,
    /// A throughput (MiB/s) whose mean is above what the raw device delivers (the faster rate
    /// of the session's baseline, plus [`CACHE_BOUND_TOLERANCE`]), or a random-read rate whose
    /// reads per second are above the baseline's random 4 KiB read rate by as much
    /// ([`cachebound`]): served from a cache, not the disk.
    #[serde(default)]
    pub cache_bound: bool,
    /// The comparison group of a guest variant ([`group`]); `None` for the host's kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// How far above the raw device's faster sequential rate a mean throughput must lie to be
/// flagged cache-bound: 5 %. The baseline is the fastest of a few passes measured once, whose
/// run-to-run spread is a few percent on a quiet machine, and a filesystem may legitimately match
/// or slightly beat it (it merges requests), so only a mean clearly above the device counts as
/// proof of a cache. (Sessions stored before the baseline kept 16 requests in flight measured
/// one O_DIRECT stream, which readahead beats: see `crate::baseline`.)
pub const CACHE_BOUND_TOLERANCE: f64 = 0.05;

/// The tolerance for sessions whose baseline stored every pass (the fastest of deep O_DIRECT and
/// buffered-readahead passes, `crate::baseline`): 50 %. On a virtual disk the "device" is often
/// the hypervisor's cache, whose rate moves by ±20 % between minutes — measured here on a quiet
/// machine, three sessions a minute apart: baseline reads of 2,962, 3,123 and 2,205 MiB/s, and
/// 64 MiB-limited reads of a file four times that size (from the disk) at 3,399, 3,305 and
/// 2,859 — while a read served by this kernel's page cache ran at 12,045–12,328 MiB/s, four
/// times the device. 5 % flagged honest disk reads, 25 % still one of three; 50 % flags every
/// cache-served read seen here and no disk read.
pub const CACHE_BOUND_TOLERANCE_PASSES: f64 = 0.5;

/// The tolerance that applies to a session with `baseline`: [`CACHE_BOUND_TOLERANCE_PASSES`] for
/// a baseline that stored every pass, [`CACHE_BOUND_TOLERANCE`] for older ones (two values), so
/// stored reports (the golden ones) keep their flags.
pub fn cache_bound_tolerance(baseline: Option<&crate::store::RawBaseline>) -> f64 {
    if baseline.is_some_and(|b| b.values.len() > 2) {
        CACHE_BOUND_TOLERANCE_PASSES
    } else {
        CACHE_BOUND_TOLERANCE
    }
}

/// Where a cell stands against the best cell of its row (see `doc/significance.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// The best mean of the row.
    Best,
    /// Indistinguishable from the best: Welch's t-test gives p ≥ [`crate::stats::two_sample::ALPHA`].
    Tied,
    /// Significantly behind the best (p < α).
    Behind,
    /// Cannot be tested: fewer than two measured repeats on one side.
    Untested,
    /// The same as the best within the session's equivalence margin
    /// ([`crate::stats::verdict::DECIDED_MARGIN_PCT`] by default): both one-sided tests pass. Sessions
    /// recorded since schema 5 (`policy.methodology`) only; older ones keep [`Standing::Tied`].
    Same,
    /// Neither shown different from the best nor shown the same: not "the same". Sessions
    /// recorded since schema 5 only. The cell's [`Cell::within_pct`] says how close to the best
    /// its data do show it.
    Inconclusive,
}

impl Standing {
    /// The mark a table prints after the cell: `=` tied or the same, `~` inconclusive.
    pub fn mark(self) -> Option<&'static str> {
        match self {
            Standing::Tied | Standing::Same => Some("="),
            Standing::Inconclusive => Some("~"),
            Standing::Best | Standing::Behind | Standing::Untested => None,
        }
    }
}

/// How a cell that is not the best is judged against it. The equivalence rules carry the
/// session's margin, percent ([`ReportModel::margin_pct`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StandingRule {
    /// Sessions before schema 5: Welch's t-test decides `tied` or `behind` (what their stored
    /// reports said; the golden exports keep it).
    Welch,
    /// Sessions recorded since schema 5 (`policy.methodology`): `same` when both one-sided tests
    /// pass within the margin (even if a smaller gap is significant), else `behind` when
    /// `compare`'s verdict ([`crate::stats::verdict::pair_verdict`]) is worse, else
    /// `inconclusive` — never "tied", which mixed "shown the same" with "not shown different".
    /// An inconclusive cell's bound is at the tests' own level, α = 0.05 a pair.
    Equivalence(f64),
    /// Adaptive sessions since issue 26 (a sequential design in their run options): the
    /// answers the stopping rule decided by, at the last planned look the row's cells reached
    /// ([`crate::stats::verdict::look_answers`], all pairs with Holm at the look's levels):
    /// best / same / behind / inconclusive ("same" only where tested against every candidate).
    /// An inconclusive cell's bound is at the look's equivalence level over the row's pairs
    /// ([`crate::stats::verdict::look_bounds`]).
    Planned(crate::stats::verdict::Design, f64),
}

impl StandingRule {
    /// The equivalence margin, percent (the default for [`StandingRule::Welch`], which has none).
    pub fn margin_pct(self) -> f64 {
        match self {
            StandingRule::Welch => crate::stats::verdict::DECIDED_MARGIN_PCT,
            StandingRule::Equivalence(m) | StandingRule::Planned(_, m) => m,
        }
    }
}

/// A cell compared with the best cell of its row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VsBest {
    /// Variant of the best cell.
    pub best: String,
    /// Welch's t-test of this cell against the best; `None` when untestable.
    pub welch: Option<crate::stats::two_sample::Welch>,
    /// Ratio of means this / best with its CI; `None` when untestable or a mean is not positive.
    pub ratio: Option<crate::stats::two_sample::RatioCi>,
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
    /// One plain-language paragraph: who is best at each phase, by how much, who is tied.
    #[serde(default)]
    pub summary: String,
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
    pub warnings: Vec<Warning>,
    /// Every raw sample, warm-ups included.
    pub samples: Vec<SampleRecord>,
    /// The session's raw-device baseline (see [`crate::baseline`]); `None` when none was stored.
    #[serde(default)]
    pub baseline: Option<RawBaseline>,
    /// Latency percentiles window by window of every time-based phase that stored windows
    /// (schema 12), per workload, phase row and filesystem, its measured repeats' window
    /// histograms added ([`windows`]); absent from the JSON export when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency_windows: Vec<windows::LatencyOverTime>,
    /// The session-to-session noise of every row, as stored when the session completed (schema
    /// 13, [`noise`]); absent from the JSON export for sessions without it (stored before, not
    /// complete, pushed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub session_noise: Vec<crate::store::NoiseEstimate>,
    /// What the features' sections add to the JSON export ([`Section::export`]), by key, after
    /// every field above (the durability matrices under `durability`); absent when none does.
    #[serde(flatten)]
    pub extensions: serde_json::Map<String, serde_json::Value>,
}

impl ReportModel {
    /// The session's equivalence margin, percent: the one stored with its run options
    /// (`--equivalence`), else [`crate::stats::verdict::DECIDED_MARGIN_PCT`].
    pub fn margin_pct(&self) -> f64 {
        methodology::stored_margin(self.session.info.run_options.as_deref())
    }

    /// The I/O-path facts of `variant`'s repeats that have them (schema 11), in run order.
    pub fn path_facts(&self, variant: &str) -> Vec<&crate::host::path::PathFacts> {
        self.samples
            .iter()
            .filter(|r| {
                self.cases
                    .iter()
                    .any(|c| c.variant == variant && c.case_id == r.sample.case_id)
            })
            .filter_map(|r| r.sample.path.as_ref())
            .collect()
    }
}

/// A section that a feature above the report (the workload sections of `fsbench-sections`, the
/// many-rank figures of `comm`, the forest plot of `verify`) adds to a session's reports. The
/// report knows nothing of the features: their caller passes the sections to [`build_with`] and
/// [`render`], which puts them, in the order given, after the workloads (HTML: after the
/// synthetic-versus-real chart, before the environment; Markdown: after the legend, before the
/// warnings).
///
/// A section says what it shows once, as neutral [`block::Block`]s ([`Section::blocks`]); the
/// default [`Section::markdown`] and [`Section::html`] render those, and [`Section::text`]
/// renders nothing unless the section asks for the terminal (`block::text(&self.blocks(m))`).
///
/// Invariant: a section that has nothing to say about `model` renders to "" in every format and
/// exports nothing, so the report of a session the feature did not touch is the same with or
/// without it.
pub trait Section {
    /// What the section shows of `model`, for every format (none, the default).
    fn blocks(&self, _model: &ReportModel) -> Vec<block::Block> {
        Vec::new()
    }
    /// The section as plain text after the terminal table ("" for none, the default).
    fn text(&self, _model: &ReportModel) -> String {
        String::new()
    }
    /// The section in Markdown, starting with its own blank line and heading ("" for none).
    fn markdown(&self, model: &ReportModel) -> String {
        block::markdown(&self.blocks(model))
    }
    /// The section in HTML, starting with its `<h2>` ("" for none).
    fn html(&self, model: &ReportModel) -> String {
        block::html(&self.blocks(model))
    }
    /// Whether the section is the answer of this session and opens the HTML page, right after
    /// its heading, before the summary and the tables (verify's verdicts); by default it goes
    /// before the environment.
    fn leads(&self, _model: &ReportModel) -> bool {
        false
    }
    /// The notes the feature's workloads write once per repeat or per cut, with figures that
    /// differ each time, as `(prefix, what the terminal calls them all)`: [`build_with`] makes
    /// them one terminal line per prefix (the other formats list each in full).
    fn notes_per_repeat(&self) -> &[(&'static str, &'static str)] {
        &[]
    }
    /// A value the JSON export carries under `key` ([`ReportModel::extensions`], set by
    /// [`build_with`]); `None`, the default, for nothing.
    fn export(&self, _model: &ReportModel) -> Option<(String, serde_json::Value)> {
        None
    }
}

/// Renders `model` in `format` with the features' `sections` (Markdown, HTML, and their plain
/// text after [`Format::Table`]; use [`render_table`] for ANSI bold on the best cells). The
/// output always ends with a newline.
pub fn render(model: &ReportModel, format: Format, sections: &[&dyn Section]) -> String {
    match format {
        Format::Table => {
            let mut out = text::render_table(model, false);
            for s in sections {
                out.push_str(&s.text(model));
            }
            out
        }
        Format::Md => text::render_markdown(model, sections),
        Format::Csv => csv::render_csv(model),
        Format::Json => render_json(model),
        Format::Html => html::render_html(model, sections),
    }
}

/// Pretty JSON of the whole model (`schema_version`, every summary, every raw sample).
/// Non-finite numbers become `null` (JSON has no NaN).
fn render_json(model: &ReportModel) -> String {
    match serde_json::to_string_pretty(model) {
        Ok(mut json) => {
            json.push('\n');
            json
        }
        // Plain serde structs with string keys cannot fail to serialise; keep the promise of
        // never panicking anyway and say what happened in valid JSON.
        Err(e) => {
            let error = serde_json::Value::String(e.to_string());
            format!("{{\"schema_version\": {SCHEMA_VERSION}, \"error\": {error}}}\n")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::session_data;

    /// The export carries the session's run options, the order's seed among them, as an
    /// object that reads back as the stored text.
    #[test]
    fn json_carries_the_run_options_and_the_order_seed() {
        let mut data = session_data();
        let stored = r#"{"seed":42,"strict":false}"#;
        data.session.info.run_options = Some(stored.into());
        let json = render(&build(&data, 1, 0.95), Format::Json, &[]);
        let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(v["session"]["run_options"]["seed"], 42, "{json}");
        let back: crate::store::SessionRecord = serde_json::from_value(v["session"].clone()).expect("reads back");
        assert_eq!(back.info.run_options.as_deref(), Some(stored));
        // A session stored before the options has none in its export.
        let json = render(&build(&session_data(), 1, 0.95), Format::Json, &[]);
        assert!(!json.contains("run_options"), "{json}");
    }

    #[test]
    fn json_parses_back_with_schema_version_summaries_and_cpu_rows() {
        let model = build(&session_data(), 1, 0.95);
        let json = render(&model, Format::Json, &[]);
        let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(v["schema_version"], SCHEMA_VERSION);
        let rows = v["workloads"][0]["rows"].as_array().unwrap();
        let cell = &rows[0]["cells"][0];
        assert_eq!(cell["variant"], "ext4");
        assert_eq!(cell["summary"]["mean"], 310.0);
        assert_eq!(cell["summary"]["n"], 3);
        assert_eq!(cell["summary"]["trimmed"], 1);
        assert!(cell["summary"]["ci_low"].as_f64().unwrap() < 310.0);
        assert!(cell["summary"]["ci_high"].as_f64().unwrap() > 310.0);
        assert_eq!(cell["best"], true);
        assert_eq!(rows[0]["metric"]["unit"], "MiB/s");
        let names: Vec<&str> = rows.iter().map(|r| r["metric"]["name"].as_str().unwrap()).collect();
        assert!(names.contains(&"cpu_process") && names.contains(&"cpu_system"));
        // Raw samples, warm-up included, and warnings are in the export.
        assert_eq!(v["samples"].as_array().unwrap().len(), model.samples.len());
        assert_eq!(v["samples"][0]["is_warmup"], true);
        assert!(v["warnings"].as_array().unwrap().len() == model.warnings.len());
        // The document deserialises back into the model type.
        let back: ReportModel = serde_json::from_str(&json).expect("round trip");
        assert_eq!(back.variants, model.variants);
        assert_eq!(back.workloads.len(), model.workloads.len());
    }

    #[test]
    fn every_format_ends_with_a_newline_and_handles_an_empty_model() {
        let mut data = session_data();
        data.cases.clear();
        data.samples.clear();
        let empty = build(&data, 0, 0.95);
        for model in [build(&session_data(), 1, 0.95), empty] {
            for format in [Format::Table, Format::Md, Format::Csv, Format::Json] {
                let out = render(&model, format, &[]);
                assert!(out.ends_with('\n'), "{format:?}");
            }
        }
    }

    /// The modules of `crates/report/src/` and the siblings each one's non-test code names
    /// (`super::x`, `crate::x`, `use super::{x, …}`).
    fn module_graph() -> Vec<(String, Vec<String>)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
            .expect("src/report")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "rs"))
            .map(|p| {
                let name = p.file_stem().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&p).expect("read"))
            })
            .collect();
        files.sort();
        let names: Vec<String> = files.iter().map(|(n, _)| n.clone()).filter(|n| n != "mod").collect();
        files
            .iter()
            .filter(|(n, _)| n != "mod")
            .map(|(name, text)| {
                let code = text.split("#[cfg(test)]").next().unwrap_or_default();
                // Every identifier that follows `super::` or `crate::`, braces included.
                let mut uses = Vec::new();
                for prefix in ["super::", "crate::"] {
                    for (at, _) in code.match_indices(prefix) {
                        let rest = &code[at + prefix.len()..];
                        let group = if let Some(inner) = rest.strip_prefix('{') {
                            &inner[..inner.find('}').unwrap_or(inner.len())]
                        } else {
                            &rest[..rest
                                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                                .unwrap_or(rest.len())]
                        };
                        for item in group.split(',') {
                            let first = item.trim().split("::").next().unwrap_or_default().trim();
                            if names.iter().any(|n| n == first) && first != name && !uses.iter().any(|u| u == first) {
                                uses.push(first.to_string());
                            }
                        }
                    }
                }
                (name.clone(), uses)
            })
            .collect()
    }

    #[test]
    fn report_modules_have_no_import_cycle_and_never_import_config() {
        let graph = module_graph();
        let edges = |m: &str| {
            graph
                .iter()
                .find(|(n, _)| n == m)
                .map(|(_, e)| e.clone())
                .unwrap_or_default()
        };
        assert!(
            edges("build").contains(&"cachebound".to_string()),
            "the scan sees imports: {graph:?}"
        );
        // Depth-first search from every module; a module met again on the current path is a cycle.
        fn visit(m: &str, path: &mut Vec<String>, edges: &dyn Fn(&str) -> Vec<String>) {
            if let Some(i) = path.iter().position(|p| p == m) {
                panic!("import cycle in src/report: {} -> {m}", path[i..].join(" -> "));
            }
            path.push(m.to_string());
            for next in edges(m) {
                visit(&next, path, edges);
            }
            path.pop();
        }
        for (m, _) in &graph {
            visit(m, &mut Vec::new(), &edges);
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for entry in std::fs::read_dir(dir).expect("src/report") {
            let path = entry.expect("entry").path();
            let text = std::fs::read_to_string(&path).expect("read");
            // Spelled in two pieces so this test does not find itself.
            let (a, b) = (concat!("crate::", "config"), concat!("config", "::"));
            assert!(
                !text.contains(a) && !text.contains(b),
                "{} imports from config",
                path.display()
            );
        }
    }
}
