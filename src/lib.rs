//! fsbench: compare Linux filesystems honestly.
//!
//! The data walks one way (doc/architecture.md):
//! `config` (suite/preset) → `plan` (cases × repeats → slots) → `baseline` (the raw device's
//! sequential rates, once per session) → for each slot `provision`
//! (loop image, mkfs, mount: a guard undoes it) → `engine` (native workloads → `RawSample`) →
//! `store` (SQLite, one transaction per repeat) → `report` (`stats` summaries → `ReportModel`
//! → table, Markdown, CSV, JSON).
//!
//! `run` drives that pipeline for one session (the `Runner`, its `Target` and the progress
//! `Observer`s); `app` maps the subcommands of `cli` to it and to the report; `main.rs` only
//! parses, calls [`app::run`] and maps errors to exit codes.

/// Skips a unit test whose precondition this machine lacks (no FIEMAP, no io_uring, root not
/// on a block device …), loudly, or fails it when `FSBENCH_REQUIRE_PRIVILEGED=1` (set by
/// `.ci/run`): CI must never count a skipped check as passed. Test builds only.
#[cfg(test)]
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

pub mod app;
pub mod balloon;
pub mod baseline;
pub mod cgroup;
pub mod cli;
pub mod cli_extra;
pub mod comm;
pub mod config;
pub mod datasets;
pub mod engine;
pub mod events;
pub mod external;
pub mod fstype;
pub mod guest;
pub mod history;
pub mod host;
pub mod metric;
pub mod plan;
pub mod policy;
pub mod progress;
pub mod provision;
pub mod report;
pub mod run;
pub mod signal;
pub mod stats;
pub mod store;
pub mod sysinfo;
pub mod undo;
pub mod units;
pub mod verify;
