//! One file per workload family. Each defines its spec (serde, `deny_unknown_fields`, defaults
//! documented with units) and implements [`crate::engine::Workload`].

pub mod bigfile;
pub mod bonnie;
pub mod bonnie_pp;
pub mod dbench;
pub mod dd;
pub mod filecopy;
pub mod fileio;
pub mod fio;
pub mod mongo;
pub mod oltp;
pub mod postmark;
pub mod powercut;
pub mod scan;
pub mod sysbench_fileio;
pub mod tool;
pub mod treecopy;

/// `n` scaled by `factor`, rounded down, saturating at `u32::MAX` (also for a non-finite
/// product), and at least `min`: the count a spec's `scaled` gives for a number of files,
/// directories or operations.
pub(crate) fn scaled_count(n: u32, factor: f64, min: u32) -> u32 {
    let v = (f64::from(n) * factor).floor();
    let v = if v.is_finite() && v < f64::from(u32::MAX) {
        v as u32
    } else {
        u32::MAX
    };
    v.max(min)
}

/// serde's default for the boolean options that are on unless turned off.
pub(crate) fn default_true() -> bool {
    true
}
