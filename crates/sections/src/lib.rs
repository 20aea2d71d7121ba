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
