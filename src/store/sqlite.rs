//! SQLite implementation of the results store.
//!
//! One [`Store`] is one connection to one database file. Every connection runs with
//! `journal_mode=WAL` (readers never block the writer), `synchronous=FULL` (a commit is on disk
//! when it returns, power loss included), `foreign_keys=ON`, and a busy timeout of
//! [`BUSY_TIMEOUT`] so two fsbench processes can share a database: writers queue rather than
//! fail. Every write takes the write lock up front (`BEGIN IMMEDIATE`), so a transaction never
//! has to be retried after reading.
//!
//! Schema: `migrations/*.sql`, embedded in the binary and applied in order inside one
//! transaction; `PRAGMA user_version` holds how many have been applied. A database written by a
//! newer fsbench is refused rather than guessed at.
//!
//! Invariants:
//! - After [`Store::record_sample`] returns, the repeat and all its measurements are committed
//!   together: a crash never leaves a sample with half of its metrics.
//! - `(session, case, repeat)` is unique: recording a repeat again replaces it (for `--resume`).
//!   The replacement gets a new, higher row id, because ids are the order samples ran in.
//! - Session ids are never reused (`AUTOINCREMENT`), so `latest` is the highest id.
//! - `finished_at` is `NULL` exactly while a session's status is `running`.
//! - Values read back are exactly the values written; text the code does not recognise (a unit
//!   from a newer fsbench, a hand edit) is a [`StoreError::Corrupt`], never a panic or a guess.
//!
//! References: SQLite "Write-Ahead Logging" <https://sqlite.org/wal.html>, `PRAGMA synchronous`
//! <https://sqlite.org/pragma.html#pragma_synchronous>, `BEGIN IMMEDIATE`
//! <https://sqlite.org/lang_transaction.html>.

use super::model::*;
use super::time::now_rfc3339;
use crate::metric::{Direction, Measurement, MetricId, Unit};
use rusqlite::{
    params, Connection, ErrorCode, OptionalExtension, Transaction, TransactionBehavior,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Embedded migrations. Entry `i` brings the schema from version `i` to `i + 1`; entries are
/// only ever appended, never edited, once released.
const MIGRATIONS: &[&str] = &[include_str!("migrations/001_init.sql")];

/// The schema version this fsbench writes (`PRAGMA user_version` after migrations).
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// How long a statement waits for another connection's write lock before failing with
/// "database is locked". Repeats are committed in milliseconds, so seconds is ample.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Columns of `sessions`, in the order [`session_from_row`] reads them.
const SESSION_COLUMNS: &str = "id, started_at, finished_at, status, label, suite_name, \
     suite_text, args_json, fsbench_version, hostname, kernel, cpu_model, ncpu, mem_bytes, target";

/// Store failures. Every variant names the database and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite said no while doing `action`.
    #[error("results database {path}: {action}: {source}{}", hint(.source))]
    Sqlite {
        /// Database path.
        path: String,
        /// What the store was doing ("recording repeat 3 of case 1a2b in session 7").
        action: String,
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
    /// The database was written by a newer fsbench (its `user_version` is above
    /// [`SCHEMA_VERSION`]).
    #[error(
        "results database {path}: database schema version {found} is newer than this fsbench \
         ({supported}): upgrade fsbench or use another --db"
    )]
    TooNew {
        /// Database path.
        path: String,
        /// `PRAGMA user_version` found in the file.
        found: i64,
        /// [`SCHEMA_VERSION`] of this build.
        supported: u32,
    },
    /// A stored value this fsbench cannot read back (unknown unit, direction or status text,
    /// malformed JSON, a negative schema version).
    #[error(
        "results database {path}: {what}: it was written by a different fsbench or edited by \
         hand; read it with the fsbench that wrote it, or use another --db"
    )]
    Corrupt {
        /// Database path.
        path: String,
        /// Which value, where, and why it cannot be read.
        what: String,
    },
    /// A sample names a case that was not recorded for its session (a caller bug: record the
    /// plan's cases with [`Store::record_case`] first).
    #[error(
        "results database {path}: session {session} has no case `{case_id}`: cases must be \
         recorded (Store::record_case) before their samples"
    )]
    NoSuchCase {
        /// Database path.
        path: String,
        /// Session id.
        session: i64,
        /// The unknown case id.
        case_id: String,
    },
    /// A number to store is NaN or infinite (SQLite would turn NaN into NULL).
    #[error(
        "results database {path}: refusing to store {what} = {value}: measurements must be \
         finite; this is a bug in the workload that produced it"
    )]
    NonFinite {
        /// Database path.
        path: String,
        /// Which number (`wall_s`, or `phase/metric`).
        what: String,
        /// The offending value.
        value: f64,
    },
}

/// Advice appended to a SQLite error, by error code.
fn hint(e: &rusqlite::Error) -> String {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => format!(
            " (another process held it for more than {} s: wait for it to finish, or use \
             another --db)",
            BUSY_TIMEOUT.as_secs()
        ),
        Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied | ErrorCode::ReadOnly) => {
            " (check that the file and its folder are writable by you, or use another --db)".into()
        }
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            " (this file is not an intact SQLite database: use another --db)".into()
        }
        Some(ErrorCode::DiskFull) => " (the disk holding it is full: free some space)".into(),
        _ => String::new(),
    }
}

/// Why one row could not be turned into a record.
enum RowError {
    /// Reading a column failed (wrong type, out of range).
    Sql(rusqlite::Error),
    /// The value was read but is not one this fsbench understands.
    Bad(String),
}

impl From<rusqlite::Error> for RowError {
    fn from(e: rusqlite::Error) -> Self {
        RowError::Sql(e)
    }
}

/// Builds a [`StoreError::Sqlite`] mapper for `path` and `action`.
fn sql_err(path: &Path, action: impl Into<String>) -> impl FnOnce(rusqlite::Error) -> StoreError {
    let path = path.display().to_string();
    let action = action.into();
    move |source| StoreError::Sqlite {
        path,
        action,
        source,
    }
}

/// Encodes a list of strings as a JSON array (cannot fail, unlike `serde_json::to_string`).
fn json_strings(items: &[String]) -> String {
    serde_json::Value::Array(
        items
            .iter()
            .cloned()
            .map(serde_json::Value::String)
            .collect(),
    )
    .to_string()
}

/// Decodes a JSON array of strings stored in `column`.
fn parse_json_strings(text: &str, column: &str) -> Result<Vec<String>, RowError> {
    serde_json::from_str(text)
        .map_err(|e| RowError::Bad(format!("{column} is not a JSON array of strings ({e})")))
}

/// An open results database.
///
/// One connection; not `Sync`. Open one `Store` per thread or process: they coordinate
/// through SQLite's locks.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (creating folders and schema as needed) the database at `path`.
    ///
    /// Configures the connection (WAL, `synchronous=FULL`, foreign keys, [`BUSY_TIMEOUT`]) and
    /// applies pending migrations. Fails with [`StoreError::TooNew`] when the file was written
    /// by a newer fsbench.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::Io {
                path: parent.display().to_string(),
                source,
            })?;
        }
        let conn = Connection::open(path).map_err(sql_err(path, "opening"))?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.configure()?;
        store.migrate()?;
        Ok(store)
    }

    /// The database file this store writes to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Maps a SQLite error to [`StoreError::Sqlite`] with this database's path.
    fn sql(&self, action: impl Into<String>) -> impl FnOnce(rusqlite::Error) -> StoreError {
        sql_err(&self.path, action)
    }

    /// Maps a row decoding error to [`StoreError::Sqlite`] or [`StoreError::Corrupt`].
    fn row(&self, action: impl Into<String>) -> impl FnOnce(RowError) -> StoreError {
        let path = self.path.display().to_string();
        let action = action.into();
        move |e| match e {
            RowError::Sql(source) => StoreError::Sqlite {
                path,
                action,
                source,
            },
            RowError::Bad(what) => StoreError::Corrupt {
                path,
                what: format!("{action}: {what}"),
            },
        }
    }

    /// Per-connection settings. The busy timeout comes first so that switching a fresh file to
    /// WAL waits for a concurrent opener instead of failing.
    fn configure(&self) -> Result<(), StoreError> {
        self.conn
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(self.sql("setting the busy timeout"))?;
        // Returns the mode in effect. A filesystem without shared memory support may keep the
        // rollback journal; with synchronous=FULL that is still crash-safe, only less
        // concurrent, so it is accepted.
        let _mode: String = self
            .conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(self.sql("enabling write-ahead logging"))?;
        self.conn
            .pragma_update(None, "synchronous", "FULL")
            .map_err(self.sql("setting synchronous=FULL"))?;
        self.conn
            .pragma_update(None, "foreign_keys", true)
            .map_err(self.sql("enabling foreign keys"))?;
        Ok(())
    }

    /// Reads `PRAGMA user_version` and refuses versions this build cannot handle.
    fn schema_version(conn: &Connection, path: &Path) -> Result<usize, StoreError> {
        let found: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(sql_err(path, "reading the schema version"))?;
        let path_text = || path.display().to_string();
        if found > i64::from(SCHEMA_VERSION) {
            return Err(StoreError::TooNew {
                path: path_text(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
        usize::try_from(found).map_err(|_| StoreError::Corrupt {
            path: path_text(),
            what: format!("schema version (PRAGMA user_version) is {found}"),
        })
    }

    /// Applies the migrations the file has not seen, all in one transaction.
    fn migrate(&self) -> Result<(), StoreError> {
        if Self::schema_version(&self.conn, &self.path)? == MIGRATIONS.len() {
            return Ok(());
        }
        let tx = self.write("migrating the schema")?;
        // Read again under the write lock: another process may have migrated meanwhile.
        let applied = Self::schema_version(&tx, &self.path)?;
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(applied) {
            tx.execute_batch(sql)
                .map_err(self.sql(format!("applying schema migration {}", i + 1)))?;
        }
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(self.sql("recording the schema version"))?;
        tx.commit()
            .map_err(self.sql("committing the schema migration"))
    }

    /// Starts a write transaction holding the write lock (waiting up to [`BUSY_TIMEOUT`]).
    fn write(&self, action: &str) -> Result<Transaction<'_>, StoreError> {
        Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(self.sql(format!("{action}: starting a write transaction")))
    }

    /// Starts a read transaction, so multi-query reads see one consistent snapshot.
    fn read(&self, action: &str) -> Result<Transaction<'_>, StoreError> {
        Transaction::new_unchecked(&self.conn, TransactionBehavior::Deferred)
            .map_err(self.sql(format!("{action}: starting a read transaction")))
    }

    /// Starts a session (status `running`, `started_at` now); returns its id.
    ///
    /// The session row and its tool versions are committed together.
    pub fn begin_session(&self, s: &NewSession) -> Result<i64, StoreError> {
        let action = "starting a session";
        let tx = self.write(action)?;
        tx.execute(
            "INSERT INTO sessions (started_at, finished_at, status, label, suite_name, \
             suite_text, args_json, fsbench_version, hostname, kernel, cpu_model, ncpu, \
             mem_bytes, target) VALUES (?1, NULL, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, \
             ?13)",
            params![
                now_rfc3339(),
                SessionStatus::Running.as_str(),
                s.label,
                s.suite_name,
                s.suite_text,
                json_strings(&s.args),
                s.fsbench_version,
                s.host.hostname,
                s.host.kernel,
                s.host.cpu_model,
                s.host.ncpu,
                s.host.mem_bytes,
                s.target,
            ],
        )
        .map_err(self.sql(action))?;
        let id = tx.last_insert_rowid();
        {
            let mut insert = tx
                .prepare("INSERT INTO tool_versions (session_id, ord, tool, version) VALUES (?1, ?2, ?3, ?4)")
                .map_err(self.sql(action))?;
            for (ord, (tool, version)) in s.tool_versions.iter().enumerate() {
                insert
                    .execute(params![id, ord, tool, version])
                    .map_err(self.sql(format!("{action}: storing the version of {tool}")))?;
            }
        }
        tx.commit().map_err(self.sql(action))?;
        Ok(id)
    }

    /// Fails with [`StoreError::NoSuchSession`] unless session `id` exists.
    fn require_session(&self, conn: &Connection, id: i64) -> Result<(), StoreError> {
        let found = conn
            .query_row("SELECT 1 FROM sessions WHERE id = ?1", [id], |_| Ok(()))
            .optional()
            .map_err(self.sql(format!("looking up session {id}")))?;
        found.ok_or_else(|| StoreError::NoSuchSession(id.to_string()))
    }

    /// Adds a case to a session, or replaces the stored description of a case with the same
    /// `case_id`.
    ///
    /// A case's position in plan order (reports use it for column and row order) is the order
    /// of its first recording; replacing it keeps that position and its samples.
    pub fn record_case(&self, session: i64, c: &CaseRecord) -> Result<(), StoreError> {
        let action = format!("recording case {} of session {session}", c.case_id);
        let tx = self.write(&action)?;
        self.require_session(&tx, session)?;
        let (availability, reason) = match &c.availability {
            CaseAvailability::Available => ("available", None),
            CaseAvailability::Unavailable(why) => ("unavailable", Some(why.as_str())),
        };
        // An upsert, not INSERT OR REPLACE: REPLACE deletes the row first, which would cascade
        // to the case's samples and lose its plan position.
        tx.execute(
            "INSERT INTO cases (session_id, case_id, ord, variant, fs_type, mkfs_args_json, \
             mount_opts_json, workload, workload_kind, workload_json, availability, \
             unavailable_reason) \
             VALUES (?1, ?2, (SELECT COALESCE(MAX(ord) + 1, 0) FROM cases WHERE session_id = ?1), \
             ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
             ON CONFLICT (session_id, case_id) DO UPDATE SET variant = excluded.variant, \
             fs_type = excluded.fs_type, mkfs_args_json = excluded.mkfs_args_json, \
             mount_opts_json = excluded.mount_opts_json, workload = excluded.workload, \
             workload_kind = excluded.workload_kind, workload_json = excluded.workload_json, \
             availability = excluded.availability, \
             unavailable_reason = excluded.unavailable_reason",
            params![
                session,
                c.case_id,
                c.variant,
                c.fs_type,
                json_strings(&c.mkfs_args),
                json_strings(&c.mount_opts),
                c.workload,
                c.workload_kind,
                c.workload_json,
                availability,
                reason,
            ],
        )
        .map_err(self.sql(action.as_str()))?;
        tx.commit().map_err(self.sql(action))
    }

    /// Stores one repeat and its measurements in one committed transaction; returns its id.
    ///
    /// A repeat already stored under the same `(session, case_id, repeat)` is replaced (its
    /// measurements too), and the new row gets a new, higher id. The case must have been
    /// recorded with [`Store::record_case`]. `wall_s` and every value must be finite.
    pub fn record_sample(&self, session: i64, s: &NewSample) -> Result<i64, StoreError> {
        self.check_finite("wall_s", s.wall_s)?;
        for m in &s.measurements {
            self.check_finite(&format!("{}/{}", m.phase, m.metric.name), m.value)?;
        }
        let action = format!(
            "recording repeat {} of case {} in session {session}",
            s.repeat, s.case_id
        );
        let tx = self.write(&action)?;
        let case_known = tx
            .query_row(
                "SELECT 1 FROM cases WHERE session_id = ?1 AND case_id = ?2",
                params![session, s.case_id],
                |_| Ok(()),
            )
            .optional()
            .map_err(self.sql(action.as_str()))?;
        if case_known.is_none() {
            return Err(StoreError::NoSuchCase {
                path: self.path.display().to_string(),
                session,
                case_id: s.case_id.clone(),
            });
        }
        // Deleting cascades to the old repeat's metrics.
        tx.execute(
            "DELETE FROM samples WHERE session_id = ?1 AND case_id = ?2 AND repeat = ?3",
            params![session, s.case_id, s.repeat],
        )
        .map_err(self.sql(format!("{action}: replacing the earlier attempt")))?;
        let (status, error) = match &s.status {
            SampleStatus::Ok => ("ok", None),
            SampleStatus::Failed(e) => ("failed", Some(e.as_str())),
        };
        tx.prepare_cached(
            "INSERT INTO samples (session_id, case_id, repeat, is_warmup, started_at, wall_s, \
             status, error, device, effective_mount_opts, notes_json) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )
        .and_then(|mut insert| {
            insert.execute(params![
                session,
                s.case_id,
                s.repeat,
                s.is_warmup,
                s.started_at,
                s.wall_s,
                status,
                error,
                s.device,
                s.effective_mount_opts,
                json_strings(&s.notes),
            ])
        })
        .map_err(self.sql(action.as_str()))?;
        let id = tx.last_insert_rowid();
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO metrics (sample_id, ord, phase, metric, unit, direction, value) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(self.sql(action.as_str()))?;
            for (ord, m) in s.measurements.iter().enumerate() {
                insert
                    .execute(params![
                        id,
                        ord,
                        m.phase,
                        m.metric.name,
                        m.metric.unit.as_str(),
                        m.metric.direction.as_str(),
                        m.value,
                    ])
                    .map_err(
                        self.sql(format!("{action}: storing {}/{}", m.phase, m.metric.name)),
                    )?;
            }
        }
        tx.commit()
            .map_err(self.sql(format!("{action}: committing")))?;
        Ok(id)
    }

    /// Refuses NaN and infinities (NaN would silently become NULL in SQLite).
    fn check_finite(&self, what: &str, value: f64) -> Result<(), StoreError> {
        if value.is_finite() {
            Ok(())
        } else {
            Err(StoreError::NonFinite {
                path: self.path.display().to_string(),
                what: what.to_string(),
                value,
            })
        }
    }

    /// Marks a session ended with `status`, with `finished_at` now.
    ///
    /// Setting [`SessionStatus::Running`] clears `finished_at` instead (a session taken up
    /// again by `--resume`). Fails with [`StoreError::NoSuchSession`] for an unknown id.
    pub fn finish_session(&self, session: i64, status: SessionStatus) -> Result<(), StoreError> {
        let finished_at = (status != SessionStatus::Running).then(now_rfc3339);
        let changed = self
            .conn
            .execute(
                "UPDATE sessions SET status = ?1, finished_at = ?2 WHERE id = ?3",
                params![status.as_str(), finished_at, session],
            )
            .map_err(self.sql(format!("marking session {session} {}", status.as_str())))?;
        if changed == 0 {
            return Err(StoreError::NoSuchSession(session.to_string()));
        }
        Ok(())
    }

    /// All sessions, newest (highest id) first, with their tool versions.
    pub fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        let action = "listing sessions";
        let tx = self.read(action)?;
        let mut tools = self.tool_versions(&tx, None)?;
        let mut stmt = tx
            .prepare(&format!(
                "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY id DESC"
            ))
            .map_err(self.sql(action))?;
        let mut rows = stmt.query([]).map_err(self.sql(action))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(self.sql(action))? {
            let mut record = session_from_row(row).map_err(self.row(action))?;
            record.info.tool_versions = tools.remove(&record.id).unwrap_or_default();
            out.push(record);
        }
        Ok(out)
    }

    /// Tool versions by session id, in stored order; all sessions, or only `session`.
    fn tool_versions(
        &self,
        conn: &Connection,
        session: Option<i64>,
    ) -> Result<HashMap<i64, Vec<(String, String)>>, StoreError> {
        let action = "reading tool versions";
        let mut stmt = conn
            .prepare(
                "SELECT session_id, tool, version FROM tool_versions \
                 WHERE ?1 IS NULL OR session_id = ?1 ORDER BY session_id, ord",
            )
            .map_err(self.sql(action))?;
        let mut rows = stmt.query([session]).map_err(self.sql(action))?;
        let mut out: HashMap<i64, Vec<(String, String)>> = HashMap::new();
        while let Some(row) = rows.next().map_err(self.sql(action))? {
            let id: i64 = row.get(0).map_err(self.sql(action))?;
            let tool: String = row.get(1).map_err(self.sql(action))?;
            let version: String = row.get(2).map_err(self.sql(action))?;
            out.entry(id).or_default().push((tool, version));
        }
        Ok(out)
    }

    /// Resolves a session reference to an id.
    ///
    /// `latest` is the highest id; a number is that id if it exists; anything else (or a
    /// number that is no id) is a label, meaning the newest session with that label.
    /// [`StoreError::NoSuchSession`] when nothing matches.
    pub fn resolve(&self, reference: &str) -> Result<i64, StoreError> {
        let action = format!("resolving session `{reference}`");
        // The newest session, or the newest with `label`.
        let newest = |label: Option<&str>| -> Result<Option<i64>, StoreError> {
            self.conn
                .query_row(
                    "SELECT MAX(id) FROM sessions WHERE ?1 IS NULL OR label = ?1",
                    [label],
                    |r| r.get::<_, Option<i64>>(0),
                )
                .map_err(self.sql(action.as_str()))
        };
        if reference == "latest" {
            return newest(None)?.ok_or_else(|| StoreError::NoSuchSession(reference.to_string()));
        }
        if let Ok(id) = reference.parse::<i64>() {
            let exists = self
                .conn
                .query_row("SELECT 1 FROM sessions WHERE id = ?1", [id], |_| Ok(()))
                .optional()
                .map_err(self.sql(action.as_str()))?;
            if exists.is_some() {
                return Ok(id);
            }
        }
        let found = newest(Some(reference))?;
        found.ok_or_else(|| StoreError::NoSuchSession(reference.to_string()))
    }

    /// Loads a whole session for reporting: cases in plan order, samples in the order they ran
    /// (row id), measurements in the order they were recorded. Read in one snapshot, so a
    /// concurrent writer never shows half a repeat.
    pub fn load_session(&self, session: i64) -> Result<SessionData, StoreError> {
        let tx = self.read(&format!("loading session {session}"))?;

        let action = format!("reading session {session}");
        let mut record = tx
            .query_row(
                &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"),
                [session],
                |row| Ok(session_from_row(row)),
            )
            .optional()
            .map_err(self.sql(action.as_str()))?
            .ok_or_else(|| StoreError::NoSuchSession(session.to_string()))?
            .map_err(self.row(action.as_str()))?;
        record.info.tool_versions = self
            .tool_versions(&tx, Some(session))?
            .remove(&session)
            .unwrap_or_default();

        let action = format!("reading the cases of session {session}");
        let mut cases = Vec::new();
        {
            let mut stmt = tx
                .prepare(
                    "SELECT case_id, variant, fs_type, mkfs_args_json, mount_opts_json, workload, \
                     workload_kind, workload_json, availability, unavailable_reason \
                     FROM cases WHERE session_id = ?1 ORDER BY ord",
                )
                .map_err(self.sql(action.as_str()))?;
            let mut rows = stmt.query([session]).map_err(self.sql(action.as_str()))?;
            while let Some(row) = rows.next().map_err(self.sql(action.as_str()))? {
                cases.push(case_from_row(row).map_err(self.row(action.as_str()))?);
            }
        }

        let action = format!("reading the samples of session {session}");
        let mut samples = Vec::new();
        let mut index = HashMap::new();
        {
            let mut stmt = tx
                .prepare(
                    "SELECT id, case_id, repeat, is_warmup, started_at, wall_s, status, error, \
                     device, effective_mount_opts, notes_json \
                     FROM samples WHERE session_id = ?1 ORDER BY id",
                )
                .map_err(self.sql(action.as_str()))?;
            let mut rows = stmt.query([session]).map_err(self.sql(action.as_str()))?;
            while let Some(row) = rows.next().map_err(self.sql(action.as_str()))? {
                let sample = sample_from_row(row).map_err(self.row(action.as_str()))?;
                index.insert(sample.id, samples.len());
                samples.push(sample);
            }
        }

        let action = format!("reading the measurements of session {session}");
        {
            let mut stmt = tx
                .prepare(
                    "SELECT m.sample_id, m.phase, m.metric, m.unit, m.direction, m.value \
                     FROM metrics AS m JOIN samples AS s ON s.id = m.sample_id \
                     WHERE s.session_id = ?1 ORDER BY m.sample_id, m.ord",
                )
                .map_err(self.sql(action.as_str()))?;
            let mut rows = stmt.query([session]).map_err(self.sql(action.as_str()))?;
            while let Some(row) = rows.next().map_err(self.sql(action.as_str()))? {
                let (sample_id, m) =
                    measurement_from_row(row).map_err(self.row(action.as_str()))?;
                // Same snapshot as the samples query, so every sample id is in the index.
                if let Some(&i) = index.get(&sample_id) {
                    samples[i].sample.measurements.push(m);
                }
            }
        }

        Ok(SessionData {
            session: record,
            cases,
            samples,
        })
    }

    /// Repeats of `case_id` in `session` stored with status ok, ascending: the ones a resumed
    /// run can skip. Warm-ups count like any other repeat.
    pub fn completed_repeats(&self, session: i64, case_id: &str) -> Result<Vec<u32>, StoreError> {
        let action = format!("listing completed repeats of case {case_id} in session {session}");
        let mut stmt = self
            .conn
            .prepare(
                "SELECT repeat FROM samples WHERE session_id = ?1 AND case_id = ?2 \
                 AND status = 'ok' ORDER BY repeat",
            )
            .map_err(self.sql(action.as_str()))?;
        let repeats = stmt
            .query_map(params![session, case_id], |r| r.get::<_, u32>(0))
            .and_then(|rows| rows.collect::<Result<Vec<u32>, _>>())
            .map_err(self.sql(action.as_str()))?;
        Ok(repeats)
    }

    /// Runs `PRAGMA integrity_check`; `true` when SQLite reports exactly `ok`.
    pub fn integrity_check(&self) -> Result<bool, StoreError> {
        let action = "checking integrity";
        let mut stmt = self
            .conn
            .prepare("PRAGMA integrity_check")
            .map_err(self.sql(action))?;
        let lines = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect::<Result<Vec<String>, _>>())
            .map_err(self.sql(action))?;
        Ok(lines == ["ok"])
    }
}

/// Reads a `sessions` row selected with [`SESSION_COLUMNS`] (tool versions left empty).
fn session_from_row(row: &rusqlite::Row<'_>) -> Result<SessionRecord, RowError> {
    let id: i64 = row.get(0)?;
    let status_text: String = row.get(3)?;
    let status = SessionStatus::parse(&status_text)
        .ok_or_else(|| RowError::Bad(format!("session {id} has unknown status `{status_text}`")))?;
    let args_json: String = row.get(7)?;
    Ok(SessionRecord {
        id,
        started_at: row.get(1)?,
        finished_at: row.get(2)?,
        status,
        info: NewSession {
            label: row.get(4)?,
            suite_name: row.get(5)?,
            suite_text: row.get(6)?,
            args: parse_json_strings(&args_json, &format!("args_json of session {id}"))?,
            fsbench_version: row.get(8)?,
            host: HostInfo {
                hostname: row.get(9)?,
                kernel: row.get(10)?,
                cpu_model: row.get(11)?,
                ncpu: row.get(12)?,
                mem_bytes: row.get(13)?,
            },
            tool_versions: Vec::new(),
            target: row.get(14)?,
        },
    })
}

/// Reads a `cases` row.
fn case_from_row(row: &rusqlite::Row<'_>) -> Result<CaseRecord, RowError> {
    let case_id: String = row.get(0)?;
    let mkfs_args: String = row.get(3)?;
    let mount_opts: String = row.get(4)?;
    let availability: String = row.get(8)?;
    let reason: Option<String> = row.get(9)?;
    let availability = match (availability.as_str(), reason) {
        ("available", None) => CaseAvailability::Available,
        ("unavailable", Some(why)) => CaseAvailability::Unavailable(why),
        (state, reason) => {
            return Err(RowError::Bad(format!(
                "case {case_id} has availability `{state}` with reason {reason:?}"
            )))
        }
    };
    Ok(CaseRecord {
        variant: row.get(1)?,
        fs_type: row.get(2)?,
        mkfs_args: parse_json_strings(&mkfs_args, &format!("mkfs_args_json of case {case_id}"))?,
        mount_opts: parse_json_strings(&mount_opts, &format!("mount_opts_json of case {case_id}"))?,
        workload: row.get(5)?,
        workload_kind: row.get(6)?,
        workload_json: row.get(7)?,
        availability,
        case_id,
    })
}

/// Reads a `samples` row (measurements left empty).
fn sample_from_row(row: &rusqlite::Row<'_>) -> Result<SampleRecord, RowError> {
    let id: i64 = row.get(0)?;
    let status: String = row.get(6)?;
    let error: Option<String> = row.get(7)?;
    let status = match (status.as_str(), error) {
        ("ok", None) => SampleStatus::Ok,
        ("failed", Some(e)) => SampleStatus::Failed(e),
        (state, error) => {
            return Err(RowError::Bad(format!(
                "sample {id} has status `{state}` with error {error:?}"
            )))
        }
    };
    let notes: String = row.get(10)?;
    Ok(SampleRecord {
        id,
        sample: NewSample {
            case_id: row.get(1)?,
            repeat: row.get(2)?,
            is_warmup: row.get(3)?,
            started_at: row.get(4)?,
            wall_s: row.get(5)?,
            status,
            device: row.get(8)?,
            effective_mount_opts: row.get(9)?,
            notes: parse_json_strings(&notes, &format!("notes_json of sample {id}"))?,
            measurements: Vec::new(),
        },
    })
}

/// Reads a `metrics` row as `(sample_id, measurement)`.
fn measurement_from_row(row: &rusqlite::Row<'_>) -> Result<(i64, Measurement), RowError> {
    let sample_id: i64 = row.get(0)?;
    let phase: String = row.get(1)?;
    let name: String = row.get(2)?;
    let unit_text: String = row.get(3)?;
    let direction_text: String = row.get(4)?;
    let unit = Unit::parse(&unit_text).ok_or_else(|| {
        RowError::Bad(format!(
            "metric {phase}/{name} of sample {sample_id} has unknown unit `{unit_text}`"
        ))
    })?;
    let direction = Direction::parse(&direction_text).ok_or_else(|| {
        RowError::Bad(format!(
            "metric {phase}/{name} of sample {sample_id} has unknown direction `{direction_text}`"
        ))
    })?;
    let value: f64 = row.get(5)?;
    Ok((
        sample_id,
        Measurement {
            phase,
            metric: MetricId {
                name,
                unit,
                direction,
            },
            value,
        },
    ))
}
