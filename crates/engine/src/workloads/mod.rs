//! One file per workload family. Each defines its spec (serde, `deny_unknown_fields`, defaults
//! documented with units) and implements [`crate::Workload`].

pub mod aging;
pub mod bigfile;
pub mod bonnie;
pub mod bonnie_pp;
pub mod dbench;
pub mod dd;
pub mod durability;
pub mod filecopy;
pub mod fileio;
pub mod fio;
pub mod image;
pub mod mongo;
pub mod oltp;
pub mod postmark;
pub mod powercut;
pub mod repair_scaling;
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

/// Helpers the workloads' unit tests share.
#[cfg(any(test, feature = "test-support"))]
pub mod test_util {
    use crate::metric::PhaseResult;
    use crate::{EngineError, Workload};
    use std::sync::atomic::AtomicBool;

    /// The value of metric `name` in `p`; panics naming the phase and its metrics without it.
    pub fn metric(p: &PhaseResult, name: &str) -> f64 {
        p.metrics
            .iter()
            .find(|(m, _)| m.name == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("{} has no {name}: {:?}", p.phase, p.metrics))
    }

    /// `w` run with the interrupt already raised stops with [`EngineError::Interrupted`] and
    /// leaves its directory empty.
    pub fn assert_interrupted_leaves_nothing(w: &dyn Workload) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(true);
        assert!(matches!(
            crate::run_quiet(w, tmp.path(), &flag),
            Err(EngineError::Interrupted)
        ));
        assert!(crate::dir_is_empty(tmp.path()));
    }
}
