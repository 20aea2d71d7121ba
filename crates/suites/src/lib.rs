//! fsbench-suites: the suites layer: suites validated (`config`) and expanded into cases and slots (`plan`).
//!
//! Its place among the crates: doc/architecture.md.

// The lower crates' modules this crate uses, by their names in the layer map
// (doc/architecture.md), so a path reads `crate::units::Bytes` in every crate.
use fsbench_core::choice;
use fsbench_core::fstype;
use fsbench_core::policy;
use fsbench_core::units;
use fsbench_engine as engine;

pub mod config;
pub mod plan;
