//! The results database: SQLite (bundled), WAL mode, one transaction per repeat; or, with a
//! `postgres://` `--db`, the shared PostgreSQL store (`pg`), both behind [`ResultStore`].
//!
//! Raw samples are the source of truth; summaries are never stored, they are recomputed at
//! report time. The one derived value kept is a completed session's between-session noise
//! estimate per report row (`noise_estimates`, schema 13, [`NoiseEstimate`]): a record of what
//! was known of its configuration then, with the ids of the sessions it came from, written once
//! by the runner and never recomputed here. Metrics are stored in long format (`sample, phase, metric, unit, direction,
//! value`) so a new metric needs no migration. The schema version lives in
//! `PRAGMA user_version`; migrations (`migrations/*.sql`, embedded) run in order on open.
//! Times are RFC 3339 UTC text ([`format_rfc3339`]).
//!
//! Invariant: after `record_sample` returns, that repeat survives a crash of fsbench (the
//! transaction is committed; WAL + `synchronous=FULL`).

// The lower crates' modules this crate uses, by their names in the layer map
// (doc/architecture.md), so a path reads `crate::units::Bytes` in every crate.
use fsbench_core::host;
use fsbench_core::metric;
use fsbench_core::policy;
use fsbench_core::sysinfo;

mod backend;
mod model;
pub mod pg;
mod read;
mod sqlite;
mod time;

pub use backend::{is_postgres, open, open_existing, ResultStore};
pub use model::*;
pub use sqlite::{Store, StoreError, SuitePolicyReader, BUSY_TIMEOUT, SCHEMA_VERSION};
pub use time::{format_rfc3339, now_rfc3339, parse_rfc3339};
