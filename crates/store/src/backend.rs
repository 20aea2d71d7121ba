//! The one [`ResultStore`] trait over the two results databases: SQLite (`sqlite::Store`, the
//! embedded default) and PostgreSQL (`pg::PgStore`, the shared store of a lab). It is narrow on
//! purpose: what the runner writes (session, cases, one transaction per repeat, baseline, the
//! session's end and its noise estimates) and what `report`, `compare`, `history` and `list` read.
//!
//! [`open`] picks the database from `--db` (or `FSBENCH_DB`): a `postgres://` or
//! `postgresql://` URL is PostgreSQL, anything else a SQLite file path.

use super::model::*;
use super::sqlite::{Store, StoreError, SuitePolicyReader};
use std::path::Path;

/// What every results database does (see the module docs). Semantics are those documented on
/// the SQLite [`Store`]'s methods of the same names.
pub trait ResultStore: Send {
    /// Where the results are, for messages: a file path or a URL without its password.
    fn location(&self) -> String;
    /// Stores a new session (status running) and returns its id.
    fn begin_session(&self, s: &NewSession) -> Result<i64, StoreError>;
    /// Stores (or updates) a case of a session.
    fn record_case(&self, session: i64, c: &CaseRecord) -> Result<(), StoreError>;
    /// Stores one repeat with all its measurements in one committed transaction; replaces an
    /// earlier attempt of the same repeat. Returns the sample id.
    fn record_sample(&self, session: i64, s: &NewSample) -> Result<i64, StoreError>;
    /// Replaces the run options stored with a session (JSON, `sessions.run_options_json`): the
    /// runner fixes a budgeted session's sequential design before its first look.
    fn update_run_options(&self, session: i64, json: &str) -> Result<(), StoreError>;
    /// Sets a session's status (and its end time unless running).
    fn finish_session(&self, session: i64, status: SessionStatus) -> Result<(), StoreError>;
    /// Stores the session's raw-device baseline, replacing an earlier one.
    fn record_baseline(&self, session: i64, b: &RawBaseline) -> Result<(), StoreError>;
    /// The session's raw-device baseline, if one was stored.
    fn load_baseline(&self, session: i64) -> Result<Option<RawBaseline>, StoreError>;
    /// Stores the session-to-session noise computed for a session (schema 13), replacing what
    /// was stored for it before; read back with the session ([`SessionData::noise`]).
    fn record_noise(&self, session: i64, rows: &[NoiseEstimate]) -> Result<(), StoreError>;
    /// Every session, newest first.
    fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError>;
    /// A session id from an id, a label (its newest session) or `latest`.
    fn resolve(&self, reference: &str) -> Result<i64, StoreError>;
    /// Everything stored about a session.
    fn load_session(&self, session: i64) -> Result<SessionData, StoreError>;
}

impl ResultStore for Store {
    fn location(&self) -> String {
        self.path().display().to_string()
    }
    fn begin_session(&self, s: &NewSession) -> Result<i64, StoreError> {
        Store::begin_session(self, s)
    }
    fn record_case(&self, session: i64, c: &CaseRecord) -> Result<(), StoreError> {
        Store::record_case(self, session, c)
    }
    fn record_sample(&self, session: i64, s: &NewSample) -> Result<i64, StoreError> {
        Store::record_sample(self, session, s)
    }
    fn update_run_options(&self, session: i64, json: &str) -> Result<(), StoreError> {
        Store::update_run_options(self, session, json)
    }
    fn finish_session(&self, session: i64, status: SessionStatus) -> Result<(), StoreError> {
        Store::finish_session(self, session, status)
    }
    fn record_baseline(&self, session: i64, b: &RawBaseline) -> Result<(), StoreError> {
        Store::record_baseline(self, session, b)
    }
    fn load_baseline(&self, session: i64) -> Result<Option<RawBaseline>, StoreError> {
        Store::load_baseline(self, session)
    }
    fn record_noise(&self, session: i64, rows: &[NoiseEstimate]) -> Result<(), StoreError> {
        Store::record_noise(self, session, rows)
    }
    fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        Store::list_sessions(self)
    }
    fn resolve(&self, reference: &str) -> Result<i64, StoreError> {
        Store::resolve(self, reference)
    }
    fn load_session(&self, session: i64) -> Result<SessionData, StoreError> {
        Store::load_session(self, session)
    }
}

/// Whether `db` (a `--db` value) names PostgreSQL.
pub fn is_postgres(db: &Path) -> bool {
    db.to_str().is_some_and(super::pg::is_postgres_url)
}

/// Opens the results database `db` names (creating a SQLite file, or the schema on an empty
/// PostgreSQL database). `suites` reads the policy of a SQLite session stored before schema 4
/// from its suite text (a PostgreSQL database never held one).
pub fn open(db: &Path, suites: SuitePolicyReader) -> Result<Box<dyn ResultStore>, StoreError> {
    match db.to_str() {
        Some(url) if super::pg::is_postgres_url(url) => Ok(Box::new(super::pg::PgStore::open(url)?)),
        _ => Ok(Box::new(Store::open(db)?.with_suite_reader(suites))),
    }
}

/// Opens the results database of `compare`, `report` and `history`, which read sessions and so
/// must not create an empty one: a missing file is [`StoreError::Missing`] (a usage error). A
/// PostgreSQL URL is connected to (its schema made if missing).
pub fn open_existing(db: &Path, suites: SuitePolicyReader) -> Result<Box<dyn ResultStore>, StoreError> {
    if !is_postgres(db) && !db.exists() {
        return Err(StoreError::Missing {
            path: db.display().to_string(),
        });
    }
    open(db, suites)
}
