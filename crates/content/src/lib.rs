//! fsbench-content: the content layer: dataset generators, the parsers of the real tools' output,
//! and the portable trace of a program's file-system calls (`trace`).
//!
//! Its place among the crates: doc/architecture.md.

#[cfg(test)]
#[macro_use]
extern crate fsbench_core;

// The lower crates' modules this crate uses, by their names in the layer map
// (doc/architecture.md), so a path reads `crate::units::Bytes` in every crate.
use fsbench_core::choice;
use fsbench_core::progress;
use fsbench_core::units;

pub mod datasets;
pub mod parsers;
pub mod trace;
