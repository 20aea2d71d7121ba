//! fsbench-core: the foundation layer: the vocabulary (units, metrics with direction and role, the run policy),
//! pure statistics, the filesystem-type table, the host's facts, the undo log, signals and progress.
//!
//! Its place among the crates: doc/architecture.md.

/// Skips a unit test whose precondition this machine lacks (no FIEMAP, no io_uring, root not
/// on a block device …), loudly, or fails it when `FSBENCH_REQUIRE_PRIVILEGED=1` (set by
/// `.ci/run`): CI must never count a skipped check as passed. Test builds only.
#[macro_export]
#[doc(hidden)]
macro_rules! skip_or_fail {
    ($($why:tt)+) => {{
        let why = format!($($why)+);
        if std::env::var("FSBENCH_REQUIRE_PRIVILEGED").as_deref() == Ok("1") {
            panic!("cannot run ({why}) and FSBENCH_REQUIRE_PRIVILEGED=1 requires every check to run");
        }
        eprintln!("SKIPPED: {why}");
        return;
    }};
}

pub mod choice;
pub mod fstype;
pub mod host;
pub mod metric;
pub mod policy;
pub mod progress;
pub mod signal;
pub mod stats;
pub mod sysinfo;
pub mod undo;
pub mod units;
