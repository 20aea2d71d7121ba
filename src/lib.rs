//! fsbench: compare Linux filesystems honestly. This crate is the edge: the command line (`cli`),
//! the subcommands (`app`) and `verify`; the layers below are crates of their own (`crates/`).
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

pub use fsbench_comm as comm;
pub use fsbench_content::{datasets, parsers, trace};
pub use fsbench_core::{choice, fstype, host, metric, policy, progress, signal, stats, sysinfo, undo, units};
pub use fsbench_engine as engine;
pub use fsbench_history as history;
pub use fsbench_report as report;
pub use fsbench_run as run;
pub use fsbench_run::events;
pub use fsbench_sections as sections;
pub use fsbench_store as store;
pub use fsbench_suites::{config, plan};
pub use fsbench_targets::{balloon, baseline, cgroup, guest, provision};

pub mod app;
pub mod cli;
pub mod verify;
