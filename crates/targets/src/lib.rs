//! fsbench-targets: the targets layer: what makes a filesystem to measure (loop images, devices, pools,
//! guests, cgroups) and the raw-device baseline. Each owns its undo steps.
//!
//! Its place among the crates: doc/architecture.md.

#[cfg(test)]
#[macro_use]
extern crate fsbench_core;

// The lower crates' modules this crate uses, by their names in the layer map
// (doc/architecture.md), so a path reads `crate::units::Bytes` in every crate.
use fsbench_content::parsers;
use fsbench_core::fstype;
use fsbench_core::host;
use fsbench_core::metric;
use fsbench_core::policy;
use fsbench_core::progress;
use fsbench_core::signal;
use fsbench_core::undo;
use fsbench_core::units;
use fsbench_engine as engine;
use fsbench_suites::config;

pub mod balloon;
pub mod baseline;
pub mod cgroup;
pub mod guest;
pub mod provision;
