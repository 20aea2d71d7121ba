//! The report sections of the workloads whose results are more than a table of means: the
//! aging penalty ([`aging`]), the durability matrix ([`durability`]), the crash-consistency properties ([`crashprops`]) and the repair-scaling
//! curves ([`repair`]), and the power-cut workloads' notes ([`powercut`]). Each implements [`report::Section`] by saying what it shows as the
//! report's neutral blocks ([`report::block`]), rendered to text, Markdown and HTML by the
//! report; the edge passes them to `report::build_with` and `report::render` beside the other
//! features' sections ([`all`]).
//!
//! Invariant: the report crate never names a workload; what these sections know of one (its
//! phase and metric names, its stored parameters, its notes) is read here from the engine.

// The lower crates' modules this crate uses, by their names in the layer map
// (doc/architecture.md), so a path reads `crate::stats::rate` in every crate.
#[cfg(test)]
use fsbench_core::metric;
use fsbench_core::stats;
use fsbench_engine as engine;
use fsbench_report as report;
use fsbench_store as store;

pub mod aging;
pub mod crashprops;
pub mod durability;
pub mod powercut;
pub mod repair;

/// One matrix of a matrix section (durability, crash-consistency properties): the workload it
/// comes from, how it was made, its table and the lines printed under it.
pub(crate) struct MatrixBlocks {
    /// The workload's name (the heading's first part).
    pub workload: String,
    /// How the matrix was made (the heading's second part).
    pub how: String,
    /// The matrix (none when the workload has only other tables, in `more`).
    pub table: Option<report::block::Table>,
    /// The lines under the table (notes, examples, warnings).
    pub below: Vec<String>,
    /// Blocks after them (crash consistency: the application table).
    pub more: Vec<report::block::Block>,
}

/// The blocks of a matrix section titled `title`: one paragraph (`intro`) in the terminal, a
/// heading and the paragraph in the pages, then per matrix a heading, its table and its lines.
/// Nothing when there are no matrices.
pub(crate) fn matrix_section(title: &str, intro: &str, matrices: Vec<MatrixBlocks>) -> Vec<report::block::Block> {
    use report::block::{Block, Formats, Item};
    if matrices.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        Block::paragraph(format!("{title}. {intro}")).only(Formats::TEXT),
        Block::heading(2, title).only(Formats::PAGES),
        Block::paragraph(intro).only(Formats::PAGES),
    ];
    for m in matrices {
        out.push(Block::heading(3, format!("{}: {}", m.workload, m.how)));
        if let Some(t) = m.table {
            out.push(Block::Table(t));
        }
        if !m.below.is_empty() {
            out.push(Block::List {
                class: None,
                items: m.below.into_iter().map(Item::from).collect(),
            });
        }
        out.extend(m.more);
    }
    out
}

/// This crate's sections, in the order a report shows them.
pub fn all() -> [&'static dyn report::Section; 5] {
    [
        &powercut::PowercutNotes,
        &durability::DurabilitySection,
        &crashprops::CrashPropsSection,
        &repair::RepairSection,
        &aging::AgingSection,
    ]
}
