//! The results database: SQLite (bundled), WAL mode, one transaction per repeat.
//!
//! Raw samples are the source of truth; summaries are never stored, they are recomputed at
//! report time. Metrics are stored in long format (`sample, phase, metric, unit, direction,
//! value`) so a new metric needs no migration. The schema version lives in
//! `PRAGMA user_version`; migrations run in order on open.
//!
//! Invariant: after `record_sample` returns, that repeat survives a crash of fsbench (the
//! transaction is committed; WAL + `synchronous=FULL`).

mod model;
mod sqlite;

pub use model::*;
pub use sqlite::{Store, StoreError};
/// TEMP
pub fn now_rfc3339() -> String { String::new() }
