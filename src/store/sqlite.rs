//! SQLite implementation of the store. (Skeleton: the store helper fills this in.)

use super::model::*;
use std::path::Path;

/// Store failures.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite said no.
    #[error("results database {path}: {source}")]
    Sqlite {
        /// Database path.
        path: String,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
    /// A session reference (`latest`, an id, a label) that matches nothing.
    #[error("no session matches `{0}`: `fsbench list sessions` shows what is stored")]
    NoSuchSession(String),
    /// Filesystem error creating the database folder.
    #[error("cannot create {path}: {source}")]
    Io {
        /// Path.
        path: String,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
}

/// An open results database.
pub struct Store {
    _conn: rusqlite::Connection,
}

impl Store {
    /// Opens (creating folders and schema as needed) the database at `path`.
    pub fn open(_path: &Path) -> Result<Store, StoreError> {
        unimplemented!()
    }
    /// Starts a session (status `running`); returns its id.
    pub fn begin_session(&self, _s: &NewSession) -> Result<i64, StoreError> {
        unimplemented!()
    }
    /// Adds or replaces a case of a session.
    pub fn record_case(&self, _session: i64, _c: &CaseRecord) -> Result<(), StoreError> {
        unimplemented!()
    }
    /// Stores one repeat and its measurements in one committed transaction; returns its id.
    pub fn record_sample(&self, _session: i64, _s: &NewSample) -> Result<i64, StoreError> {
        unimplemented!()
    }
    /// Marks a session ended with `status`.
    pub fn finish_session(&self, _session: i64, _status: SessionStatus) -> Result<(), StoreError> {
        unimplemented!()
    }
    /// All sessions, newest first.
    pub fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        unimplemented!()
    }
    /// Resolves `latest`, a numeric id, or a label (newest session with it) to an id.
    pub fn resolve(&self, _reference: &str) -> Result<i64, StoreError> {
        unimplemented!()
    }
    /// Loads a whole session for reporting.
    pub fn load_session(&self, _session: i64) -> Result<SessionData, StoreError> {
        unimplemented!()
    }
}
