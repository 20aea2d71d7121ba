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
use super::read;
use super::time::now_rfc3339;
use crate::metric::{Direction, Measurement, Role, Unit};
use crate::policy::{Order, Policy};
use rusqlite::{params, Connection, ErrorCode, OptionalExtension, Transaction, TransactionBehavior};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Embedded migrations. Entry `i` brings the schema from version `i` to `i + 1`; entries are
/// only ever appended, never edited, once released.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/001_init.sql"),
    include_str!("migrations/002_baselines.sql"),
    include_str!("migrations/003_metric_roles.sql"),
    include_str!("migrations/004_session_policy.sql"),
    include_str!("migrations/005_adaptive_policy.sql"),
    include_str!("migrations/006_latency_histograms.sql"),
    include_str!("migrations/007_throughput_series.sql"),
    include_str!("migrations/008_rank_hosts.sql"),
    include_str!("migrations/009_metric_rank.sql"),
    include_str!("migrations/010_run_options.sql"),
    include_str!("migrations/011_path_facts.sql"),
    include_str!("migrations/012_latency_windows.sql"),
    include_str!("migrations/013_noise_estimates.sql"),
];

/// The schema version this fsbench writes (`PRAGMA user_version` after migrations).
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// How long a statement waits for another connection's write lock before failing with
/// "database is locked". Repeats are committed in milliseconds, so seconds is ample.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Columns of `rank_hosts` (schema 8), in the order they are written and read.
const RANK_HOST_COLUMNS: &str = "session_id, rank, hostname, kernel, cpu_model, ncpu, mem_bytes, dir, \
     mount_point, mount_source, fs_type, mount_opts, super_opts, clock_offset_ns, clock_rtt_ns";

/// Columns of `sessions`, in the order [`session_from_row`] reads them.
const SESSION_COLUMNS: &str = "id, started_at, finished_at, status, label, suite_name, \
     suite_text, args_json, fsbench_version, hostname, kernel, cpu_model, ncpu, mem_bytes, target, \
     policy_repeats, policy_warmup, policy_order, policy_drop_caches, policy_trim, policy_confidence, \
     policy_memory_bytes, policy_precision_pct, policy_budget_s, policy_methodology, run_options_json";

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
    /// A PostgreSQL results database failed (`store::pg`).
    #[error("results database {url}: {action}: {source}")]
    Postgres {
        /// The URL, without its password.
        url: String,
        /// What was being done.
        action: String,
        /// The client's error.
        #[source]
        source: postgres::Error,
    },
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
    /// A command that reads sessions (`report`, `compare`, `history`) found no database file:
    /// the user's to fix (exit code 2).
    #[error("no results database at {path}: run `fsbench run` first, or pass --db")]
    Missing {
        /// Database path.
        path: String,
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
    /// A session recorded before run policies were stored (schema 4) whose stored suite text
    /// this fsbench can no longer load, so its trim and confidence level are unknown.
    #[error(
        "results database {path}: session {session} was recorded before fsbench stored the run \
         policy (trim, confidence) with each session, and its stored suite text no longer loads: \
         {reason}; report it with the fsbench version that recorded it"
    )]
    NoPolicy {
        /// Database path.
        path: String,
        /// Session id.
        session: i64,
        /// Why the stored suite text does not load.
        reason: String,
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
    /// A session from before schema 4 whose suite text no longer loads: no run policy.
    NoPolicy {
        /// Session id.
        session: i64,
        /// Why the stored suite text does not load.
        reason: String,
    },
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
    move |source| StoreError::Sqlite { path, action, source }
}

/// Encodes a list of strings as a JSON array (cannot fail, unlike `serde_json::to_string`).
fn json_strings(items: &[String]) -> String {
    serde_json::Value::Array(items.iter().cloned().map(serde_json::Value::String).collect()).to_string()
}

/// Decodes a JSON array of strings stored in `column`.
fn parse_json_strings(text: &str, column: &str) -> Result<Vec<String>, RowError> {
    serde_json::from_str(text).map_err(|e| RowError::Bad(format!("{column} is not a JSON array of strings ({e})")))
}

/// An open results database.
///
/// One connection; not `Sync`. Open one `Store` per thread or process: they coordinate
/// through SQLite's locks.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// How sessions stored before schema 4 get their policy; `None` makes such a session an
    /// error that says no reader was given.
    suites: Option<SuitePolicyReader>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
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
            suites: None,
        };
        store.configure()?;
        store.migrate()?;
        Ok(store)
    }

    /// This store, reading the policy of sessions stored before schema 4 from their suite text
    /// with `read` (the store itself never parses suites).
    pub fn with_suite_reader(mut self, read: SuitePolicyReader) -> Store {
        self.suites = Some(read);
        self
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
            RowError::Sql(source) => StoreError::Sqlite { path, action, source },
            RowError::Bad(what) => StoreError::Corrupt {
                path,
                what: format!("{action}: {what}"),
            },
            RowError::NoPolicy { session, reason } => StoreError::NoPolicy { path, session, reason },
        }
    }

    /// Per-connection settings. The busy timeout comes first so that everything after it waits
    /// for a concurrent opener instead of failing.
    fn configure(&self) -> Result<(), StoreError> {
        self.conn
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(self.sql("setting the busy timeout"))?;
        // Refuse a newer schema before changing anything in the file (the journal mode is
        // stored in it).
        Self::schema_version(&self.conn, &self.path)?;
        self.enable_wal()?;
        self.conn
            .pragma_update(None, "synchronous", "FULL")
            .map_err(self.sql("setting synchronous=FULL"))?;
        self.conn
            .pragma_update(None, "foreign_keys", true)
            .map_err(self.sql("enabling foreign keys"))?;
        Ok(())
    }

    /// Switches the file to write-ahead logging (a persistent property of the file).
    ///
    /// SQLite does not always call the busy handler for the locks a journal-mode change needs:
    /// when two processes create the same new database at once, one gets "database is locked"
    /// at once. So this retries for up to [`BUSY_TIMEOUT`] itself. A filesystem without shared
    /// memory support may keep the rollback journal; with `synchronous=FULL` that is still
    /// crash-safe, only less concurrent, so the mode SQLite reports back is accepted.
    fn enable_wal(&self) -> Result<(), StoreError> {
        let deadline = Instant::now() + BUSY_TIMEOUT;
        loop {
            let result = self
                .conn
                .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0));
            match result {
                Ok(_mode) => return Ok(()),
                Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(self.sql("enabling write-ahead logging")(e)),
            }
        }
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
        tx.commit().map_err(self.sql("committing the schema migration"))
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
             mem_bytes, target, policy_repeats, policy_warmup, policy_order, policy_drop_caches, \
             policy_trim, policy_confidence, policy_memory_bytes, policy_precision_pct, \
             policy_budget_s, policy_methodology, run_options_json) VALUES (?1, NULL, ?2, ?3, ?4, ?5, ?6, \
             ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)",
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
                s.policy.repeats,
                s.policy.warmup,
                s.policy.order.as_str(),
                s.policy.drop_caches,
                s.policy.trim,
                s.policy.confidence,
                s.policy.memory,
                s.policy.precision,
                s.policy.budget_s,
                s.policy.methodology,
                s.run_options,
            ],
        )
        .map_err(self.sql(action))?;
        let id = tx.last_insert_rowid();
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO tool_versions (session_id, ord, tool, version) \
                     VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(self.sql(action))?;
            for (ord, (tool, version)) in s.tool_versions.iter().enumerate() {
                insert
                    .execute(params![id, ord, tool, version])
                    .map_err(|e| self.sql(format!("{action}: storing the version of {tool}"))(e))?;
            }
        }
        if !s.ranks.is_empty() {
            let mut insert = tx
                .prepare(&format!(
                    "INSERT INTO rank_hosts ({RANK_HOST_COLUMNS}) VALUES \
                     (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
                ))
                .map_err(self.sql(action))?;
            for r in &s.ranks {
                insert
                    .execute(params![
                        id,
                        r.rank,
                        r.host.hostname,
                        r.host.kernel,
                        r.host.cpu_model,
                        r.host.ncpu,
                        r.host.mem_bytes as i64,
                        r.dir,
                        r.mount_point,
                        r.mount_source,
                        r.fs_type,
                        r.mount_opts,
                        r.super_opts,
                        r.clock_offset_ns,
                        r.clock_rtt_ns,
                    ])
                    .map_err(|e| self.sql(format!("{action}: storing rank {}", r.rank))(e))?;
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
        s.check_values(|value, what| self.check_finite(value, what))?;
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
             status, error, device, effective_mount_opts, notes_json, path_facts_json) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
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
                super::read::path_facts_json(s.path.as_ref()),
            ])
        })
        .map_err(self.sql(action.as_str()))?;
        let id = tx.last_insert_rowid();
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO metrics (sample_id, ord, phase, metric, unit, direction, value, role, rank) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
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
                        m.metric.role.as_str(),
                        m.rank,
                    ])
                    .map_err(|e| self.sql(format!("{action}: storing {}/{}", m.row(), m.metric.name))(e))?;
            }
        }
        for child in read::Child::ALL {
            let rows = child.rows(s);
            if rows.is_empty() {
                continue;
            }
            let mut insert = tx
                .prepare_cached(&child.insert('?'))
                .map_err(self.sql(action.as_str()))?;
            for (ord, (phase, json, rank, window_ms)) in rows.into_iter().enumerate() {
                let done = match window_ms {
                    Some(ms) => insert.execute(params![id, ord, phase, json, rank, ms]),
                    None => insert.execute(params![id, ord, phase, json, rank]),
                };
                done.map_err(|e| self.sql(format!("{action}: storing {}", child.one(phase)))(e))?;
            }
        }
        tx.commit().map_err(self.sql(format!("{action}: committing")))?;
        Ok(id)
    }

    /// Refuses NaN and infinities (NaN would silently become NULL in SQLite).
    fn check_finite(&self, value: f64, what: impl FnOnce() -> String) -> Result<(), StoreError> {
        if value.is_finite() {
            Ok(())
        } else {
            Err(StoreError::NonFinite {
                path: self.path.display().to_string(),
                what: what(),
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

    /// Replaces the run options stored with `session` (see [`super::ResultStore`]).
    pub fn update_run_options(&self, session: i64, json: &str) -> Result<(), StoreError> {
        let changed = self
            .conn
            .execute(
                "UPDATE sessions SET run_options_json = ?1 WHERE id = ?2",
                params![json, session],
            )
            .map_err(self.sql(format!("storing the run options of session {session}")))?;
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
            .prepare(&format!("SELECT {SESSION_COLUMNS} FROM sessions ORDER BY id DESC"))
            .map_err(self.sql(action))?;
        let mut rows = stmt.query([]).map_err(self.sql(action))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(self.sql(action))? {
            let mut record = session_from_row(row, self.suites).map_err(self.row(action))?;
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

    /// The ranks of a many-rank session, in rank order (none for one rank).
    fn rank_hosts(&self, conn: &Connection, session: i64) -> Result<Vec<RankHost>, StoreError> {
        let action = format!("reading the ranks of session {session}");
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {RANK_HOST_COLUMNS} FROM rank_hosts WHERE session_id = ?1 ORDER BY rank"
            ))
            .map_err(self.sql(action.as_str()))?;
        let rows = stmt
            .query_map([session], |r| {
                Ok(RankHost {
                    rank: r.get(1)?,
                    host: HostInfo {
                        hostname: r.get(2)?,
                        kernel: r.get(3)?,
                        cpu_model: r.get(4)?,
                        ncpu: r.get(5)?,
                        mem_bytes: r.get::<_, i64>(6)? as u64,
                    },
                    dir: r.get(7)?,
                    mount_point: r.get(8)?,
                    mount_source: r.get(9)?,
                    fs_type: r.get(10)?,
                    mount_opts: r.get(11)?,
                    super_opts: r.get(12)?,
                    clock_offset_ns: r.get(13)?,
                    clock_rtt_ns: r.get(14)?,
                })
            })
            .map_err(self.sql(action.as_str()))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(self.sql(action.as_str()))
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

    /// Runs `sql` (one `?1`: `session`) in `conn` and calls `f` on every row; SQL errors name
    /// `action`.
    fn each_row(
        &self,
        conn: &Connection,
        sql: &str,
        session: i64,
        action: &str,
        mut f: impl FnMut(&rusqlite::Row<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut stmt = conn.prepare(sql).map_err(self.sql(action))?;
        let mut rows = stmt.query([session]).map_err(self.sql(action))?;
        while let Some(row) = rows.next().map_err(self.sql(action))? {
            f(row)?;
        }
        Ok(())
    }

    /// Loads a whole session for reporting: cases in plan order, samples in the order they ran
    /// (row id), measurements in the order they were recorded, and the raw-device baseline.
    /// Read in one snapshot, so a concurrent writer never shows half a repeat.
    pub fn load_session(&self, session: i64) -> Result<SessionData, StoreError> {
        let tx = self.read(&format!("loading session {session}"))?;

        let action = format!("reading session {session}");
        let mut record = tx
            .query_row(
                &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"),
                [session],
                |row| Ok(session_from_row(row, self.suites)),
            )
            .optional()
            .map_err(self.sql(action.as_str()))?
            .ok_or_else(|| StoreError::NoSuchSession(session.to_string()))?
            .map_err(self.row(action.as_str()))?;
        record.info.tool_versions = self
            .tool_versions(&tx, Some(session))?
            .remove(&session)
            .unwrap_or_default();
        record.info.ranks = self.rank_hosts(&tx, session)?;

        let action = format!("reading the cases of session {session}");
        let mut cases = Vec::new();
        self.each_row(&tx, &read::cases_query("?1"), session, &action, |row| {
            cases.push(case_from_row(row).map_err(self.row(action.as_str()))?);
            Ok(())
        })?;

        let action = format!("reading the samples of session {session}");
        let mut samples = Vec::new();
        let mut index = HashMap::new();
        self.each_row(&tx, &read::samples_query("?1"), session, &action, |row| {
            let sample = sample_from_row(row).map_err(self.row(action.as_str()))?;
            index.insert(sample.id, samples.len());
            samples.push(sample);
            Ok(())
        })?;

        let action = format!("reading the measurements of session {session}");
        self.each_row(&tx, &read::metrics_query("?1"), session, &action, |row| {
            let (sample_id, m) = measurement_from_row(row).map_err(self.row(action.as_str()))?;
            // Same snapshot as the samples query, so every sample id is in the index.
            if let Some(&i) = index.get(&sample_id) {
                samples[i].sample.measurements.push(m);
            }
            Ok(())
        })?;

        for child in read::Child::ALL {
            let action = format!("reading the {} of session {session}", child.plural());
            self.each_row(&tx, &child.query("?1"), session, &action, |row| {
                let read = |row: &rusqlite::Row| -> rusqlite::Result<read::ChildRow> {
                    Ok(read::ChildRow {
                        sample_id: row.get(0)?,
                        phase: row.get(1)?,
                        json: row.get(2)?,
                        rank: row.get(3)?,
                        window_ms: row.get(4)?,
                    })
                };
                let values = read(row).map_err(self.sql(action.as_str()))?;
                child
                    .attach(&mut samples, &index, values)
                    .map_err(|what| StoreError::Corrupt {
                        path: self.path.display().to_string(),
                        what,
                    })
            })?;
        }

        let baseline = self.baseline(&tx, session)?;
        let noise = self.noise(&tx, session)?;
        Ok(SessionData {
            session: record,
            cases,
            samples,
            baseline,
            noise,
        })
    }

    /// Stores the noise estimates computed for `session` (schema 13) in one committed
    /// transaction, replacing any stored before; `rows` in the report's order. Every number must
    /// be finite.
    pub fn record_noise(&self, session: i64, rows: &[NoiseEstimate]) -> Result<(), StoreError> {
        for e in rows {
            for (value, what) in read::noise::numbers(e) {
                self.check_finite(value, || what)?;
            }
        }
        let action = format!("recording the session-to-session noise of session {session}");
        let tx = self.write(&action)?;
        self.require_session(&tx, session)?;
        tx.execute(&read::noise::delete('?'), [session])
            .map_err(self.sql(action.as_str()))?;
        {
            let mut insert = tx
                .prepare(&read::noise::insert('?'))
                .map_err(self.sql(action.as_str()))?;
            for (ord, e) in rows.iter().enumerate() {
                insert
                    .execute(params![
                        session,
                        ord,
                        e.workload,
                        e.phase,
                        e.metric,
                        e.unit.as_str(),
                        e.variant,
                        e.between_sd_pct,
                        e.sessions.len(),
                        e.within_sd_pct,
                        read::noise::ids_json(e),
                    ])
                    .map_err(self.sql(action.as_str()))?;
            }
        }
        tx.commit().map_err(self.sql(action))
    }

    /// Reads the noise estimates of `session` on `conn` (inside the caller's transaction).
    fn noise(&self, conn: &Connection, session: i64) -> Result<Vec<NoiseEstimate>, StoreError> {
        let action = format!("reading the session-to-session noise of session {session}");
        let mut out = Vec::new();
        self.each_row(conn, &read::noise::query("?1"), session, &action, |row| {
            let columns = (|| -> rusqlite::Result<read::noise::Columns> {
                Ok(read::noise::Columns {
                    names: [row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?],
                    between: row.get(5)?,
                    count: row.get(6)?,
                    within: row.get(7)?,
                    ids: row.get(8)?,
                })
            })()
            .map_err(self.sql(action.as_str()))?;
            out.push(read::noise::decode(columns).map_err(|what| StoreError::Corrupt {
                path: self.path.display().to_string(),
                what,
            })?);
            Ok(())
        })?;
        Ok(out)
    }

    /// Stores the raw-device baseline of `session` in one committed transaction, replacing one
    /// stored before. Every value (and its seconds) must be finite.
    pub fn record_baseline(&self, session: i64, b: &RawBaseline) -> Result<(), StoreError> {
        for v in &b.values {
            self.check_finite(v.value, || format!("baseline {}", v.name))?;
            self.check_finite(v.seconds, || format!("baseline {} seconds", v.name))?;
        }
        let action = format!("recording the raw-device baseline of session {session}");
        let tx = self.write(&action)?;
        self.require_session(&tx, session)?;
        // Deleting cascades to the old values.
        tx.execute("DELETE FROM baselines WHERE session_id = ?1", [session])
            .map_err(self.sql(action.as_str()))?;
        let (state, error) = match &b.status {
            BaselineStatus::Measured => ("measured", None),
            BaselineStatus::Failed(e) => ("failed", Some(e.as_str())),
            BaselineStatus::NoDevice => ("no_device", None),
        };
        tx.execute(
            "INSERT INTO baselines (session_id, state, device, method, note, error) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![session, state, b.device, b.method, b.note, error],
        )
        .map_err(self.sql(action.as_str()))?;
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO baseline_values (session_id, ord, name, value, unit, bytes, seconds) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(self.sql(action.as_str()))?;
            for (ord, v) in b.values.iter().enumerate() {
                insert
                    .execute(params![
                        session,
                        ord,
                        v.name,
                        v.value,
                        v.unit.as_str(),
                        v.bytes,
                        v.seconds
                    ])
                    .map_err(|e| self.sql(format!("{action}: storing {}", v.name))(e))?;
            }
        }
        tx.commit().map_err(self.sql(action))
    }

    /// The raw-device baseline of `session`, or `None` when none was stored (a session of
    /// schema version 1, or one stopped before it was measured).
    pub fn load_baseline(&self, session: i64) -> Result<Option<RawBaseline>, StoreError> {
        let tx = self.read(&format!("loading the raw-device baseline of session {session}"))?;
        self.require_session(&tx, session)?;
        self.baseline(&tx, session)
    }

    /// Reads the baseline of `session` on `conn` (inside the caller's transaction).
    fn baseline(&self, conn: &Connection, session: i64) -> Result<Option<RawBaseline>, StoreError> {
        let action = format!("reading the raw-device baseline of session {session}");
        let Some(row) = conn
            .query_row(
                "SELECT state, device, method, note, error FROM baselines WHERE session_id = ?1",
                [session],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, Option<String>>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, Option<String>>(3)?,
                        r.get::<_, Option<String>>(4)?,
                    ))
                },
            )
            .optional()
            .map_err(self.sql(action.as_str()))?
        else {
            return Ok(None);
        };
        let (state, device, method, note, error) = row;
        let status = match (state.as_str(), error) {
            ("measured", None) => BaselineStatus::Measured,
            ("failed", Some(e)) => BaselineStatus::Failed(e),
            ("no_device", None) => BaselineStatus::NoDevice,
            (state, error) => {
                return Err(self.row(action.as_str())(RowError::Bad(format!(
                    "baseline has state `{state}` with error {error:?}"
                ))))
            }
        };
        let mut stmt = conn
            .prepare(
                "SELECT name, value, unit, bytes, seconds FROM baseline_values \
                 WHERE session_id = ?1 ORDER BY ord",
            )
            .map_err(self.sql(action.as_str()))?;
        let mut rows = stmt.query([session]).map_err(self.sql(action.as_str()))?;
        let mut values = Vec::new();
        while let Some(row) = rows.next().map_err(self.sql(action.as_str()))? {
            values.push(baseline_value_from_row(row).map_err(self.row(action.as_str()))?);
        }
        Ok(Some(RawBaseline {
            status,
            device,
            method,
            note,
            values,
        }))
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
        let mut stmt = self.conn.prepare("PRAGMA integrity_check").map_err(self.sql(action))?;
        let lines = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect::<Result<Vec<String>, _>>())
            .map_err(self.sql(action))?;
        Ok(lines == ["ok"])
    }
}

/// Reads the run policy of a stored suite text (`text`, named `name` in errors): how a session
/// stored before schema 4 gets its policy. The store never parses suites; the caller that
/// knows the suite format passes this ([`Store::with_suite_reader`], [`super::backend::open`]),
/// with its own error (shown as the reason the session has no policy).
pub type SuitePolicyReader = fn(text: &str, name: &str) -> Result<Policy, Box<dyn std::error::Error + Send + Sync>>;

/// Reads a `sessions` row selected with [`SESSION_COLUMNS`] (tool versions left empty).
fn session_from_row(row: &rusqlite::Row<'_>, suites: Option<SuitePolicyReader>) -> Result<SessionRecord, RowError> {
    let id: i64 = row.get(0)?;
    let status_text: String = row.get(3)?;
    let status = SessionStatus::parse(&status_text)
        .ok_or_else(|| RowError::Bad(format!("session {id} has unknown status `{status_text}`")))?;
    let args_json: String = row.get(7)?;
    let suite_text: String = row.get(6)?;
    let policy = policy_from_row(row, id, &suite_text, suites)?;
    Ok(SessionRecord {
        id,
        started_at: row.get(1)?,
        finished_at: row.get(2)?,
        status,
        info: NewSession {
            label: row.get(4)?,
            suite_name: row.get(5)?,
            suite_text,
            args: parse_json_strings(&args_json, &format!("args_json of session {id}"))?,
            run_options: row.get(25)?,
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
            ranks: Vec::new(),
            policy,
        },
    })
}

/// The run policy of a `sessions` row selected with [`SESSION_COLUMNS`]: the stored columns
/// (schema 4), or for a session recorded before them, the policy its stored suite text gives
/// (without the CLI's `--repeat`/`--warmup`, which were never stored; trim and confidence, what
/// reports use, come only from the suite). A suite text that no longer loads is an error that
/// says so, never a default.
fn policy_from_row(
    row: &rusqlite::Row<'_>,
    id: i64,
    suite_text: &str,
    suites: Option<SuitePolicyReader>,
) -> Result<Policy, RowError> {
    let repeats: Option<u32> = row.get(15)?;
    let warmup: Option<u32> = row.get(16)?;
    let order: Option<String> = row.get(17)?;
    let drop_caches: Option<bool> = row.get(18)?;
    let trim: Option<u32> = row.get(19)?;
    let confidence: Option<f64> = row.get(20)?;
    match (repeats, warmup, order, drop_caches, trim, confidence) {
        (Some(repeats), Some(warmup), Some(order), Some(drop_caches), Some(trim), Some(confidence)) => {
            let order = Order::parse(&order)
                .ok_or_else(|| RowError::Bad(format!("session {id} has unknown slot order `{order}`")))?;
            Ok(Policy {
                repeats,
                warmup,
                order,
                drop_caches,
                trim,
                confidence,
                memory: row.get(21)?,
                precision: row.get(22)?,
                budget_s: row.get(23)?,
                methodology: row.get::<_, Option<bool>>(24)?.unwrap_or(false),
            })
        }
        (None, None, None, None, None, None) => {
            let read = match suites {
                None => Err("the store was opened without a suite reader (Store::with_suite_reader)".to_string()),
                Some(read) => read(suite_text, &format!("stored suite of session {id}")).map_err(|e| e.to_string()),
            };
            read.map(|policy| Policy {
                methodology: false,
                ..policy
            })
            .map_err(|reason| RowError::NoPolicy { session: id, reason })
        }
        _ => Err(RowError::Bad(format!("session {id} has a partly stored run policy"))),
    }
}

/// Reads a `cases` row.
fn case_from_row(row: &rusqlite::Row<'_>) -> Result<CaseRecord, RowError> {
    let case_id: String = row.get(0)?;
    let mkfs_args: String = row.get(3)?;
    let mount_opts: String = row.get(4)?;
    let availability: String = row.get(8)?;
    let reason: Option<String> = row.get(9)?;
    let availability = read::availability(&case_id, &availability, reason).map_err(RowError::Bad)?;
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
    let status = read::status(id, &status, error).map_err(RowError::Bad)?;
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
            histograms: Vec::new(),
            series: Vec::new(),
            windows: Vec::new(),
            path: read::path_facts(row.get::<_, Option<String>>(11)?.as_deref()),
        },
    })
}

/// Reads a `baseline_values` row.
fn baseline_value_from_row(row: &rusqlite::Row<'_>) -> Result<BaselineValue, RowError> {
    let name: String = row.get(0)?;
    let unit_text: String = row.get(2)?;
    let unit = Unit::parse(&unit_text)
        .ok_or_else(|| RowError::Bad(format!("baseline value {name} has unknown unit `{unit_text}`")))?;
    Ok(BaselineValue {
        value: row.get(1)?,
        unit,
        bytes: row.get(3)?,
        seconds: row.get(4)?,
        name,
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
    let role_text: String = row.get(6)?;
    let role = Role::parse(&role_text).ok_or_else(|| {
        RowError::Bad(format!(
            "metric {phase}/{name} of sample {sample_id} has unknown role `{role_text}`"
        ))
    })?;
    Ok((
        sample_id,
        read::measurement((phase, row.get(7)?), name, (unit, direction, role), value),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::MetricId;
    use std::sync::{Arc, Barrier};

    fn new_session(label: Option<&str>) -> NewSession {
        NewSession {
            run_options: None,
            label: label.map(str::to_string),
            suite_name: "ext4-vs-xfs".into(),
            suite_text: "[suite]\nname = \"ext4-vs-xfs\"\n# ünïcödé and 'quotes' \"too\"\n".into(),
            args: vec!["fsbench".into(), "run".into(), "--label".into(), "a b\tc\"d".into()],
            fsbench_version: "0.1.0".into(),
            host: HostInfo {
                hostname: "bench-1".into(),
                kernel: "6.8.0-45-generic".into(),
                cpu_model: "AMD EPYC 7B13".into(),
                ncpu: 2,
                mem_bytes: 8 * 1024 * 1024 * 1024,
            },
            tool_versions: vec![
                ("mkfs.xfs".into(), "6.6.0".into()),
                ("mkfs.ext4".into(), "1.47.0".into()),
            ],
            target: "loop images in /var/tmp/fsbench".into(),
            ranks: Vec::new(),
            // Not the default, so a round trip shows every field is stored.
            policy: Policy {
                repeats: 5,
                warmup: 2,
                order: Order::Sequential,
                drop_caches: false,
                trim: 2,
                confidence: 0.9,
                memory: Some(786 << 20),
                precision: Some(5.0),
                budget_s: Some(600.0),
                methodology: true,
            },
        }
    }

    fn case(id: &str, variant: &str, availability: CaseAvailability) -> CaseRecord {
        CaseRecord {
            case_id: id.into(),
            variant: variant.into(),
            fs_type: variant.split('-').next().unwrap_or(variant).into(),
            mkfs_args: vec!["-E".into(), "lazy_itable_init=0,lazy_journal_init=0".into()],
            mount_opts: vec!["noatime".into()],
            workload: "bonnie".into(),
            workload_kind: "bonnie".into(),
            workload_json: r#"{"file_size":1073741824,"files":1024}"#.into(),
            availability,
        }
    }

    fn measurement(phase: &str, metric: MetricId, value: f64) -> Measurement {
        Measurement {
            phase: phase.into(),
            rank: None,
            metric,
            value,
        }
    }

    fn sample(case_id: &str, repeat: u32, status: SampleStatus) -> NewSample {
        let measurements = match status {
            SampleStatus::Ok => vec![
                measurement(
                    "seq_write_block",
                    MetricId::higher("throughput", Unit::MibPerSec),
                    123.456_789 + f64::from(repeat),
                ),
                measurement(
                    "seq_write_block",
                    MetricId::lower("cpu_process", Unit::Percent),
                    0.1 + 0.2,
                ),
                measurement("rand_create", MetricId::higher("rate", Unit::OpsPerSec), 1e-300),
                measurement("rand_create", MetricId::lower("lat_p99", Unit::Micros), 1.0e9),
                measurement("rand_create", MetricId::lower("time", Unit::Seconds), f64::MAX),
                measurement("fragmentation", MetricId::lower("extents", Unit::Ratio), -0.5),
                measurement("fragmentation", MetricId::lower("files", Unit::Count), 0.0),
            ],
            SampleStatus::Failed(_) => Vec::new(),
        };
        NewSample {
            case_id: case_id.into(),
            repeat,
            is_warmup: repeat == 0,
            started_at: "2024-05-01T12:00:00Z".into(),
            wall_s: 12.345_678_901_234,
            status,
            device: Some("/dev/loop7".into()),
            effective_mount_opts: Some("rw,noatime,attr2,inode64".into()),
            notes: vec!["drop_caches skipped: not root".into()],
            measurements,
            histograms: Vec::new(),
            series: Vec::new(),
            windows: Vec::new(),
            path: None,
        }
    }

    /// A measured baseline whose numbers exercise exact round trips.
    fn measured_baseline() -> RawBaseline {
        let value = |name: &str, value: f64, seconds: f64| BaselineValue {
            name: name.into(),
            value,
            unit: Unit::MibPerSec,
            bytes: 512 << 20,
            seconds,
        };
        RawBaseline {
            status: BaselineStatus::Measured,
            device: Some("/dev/loop3".into()),
            method: "sequential O_DIRECT in 1 MiB requests".into(),
            note: Some("ünïcödé 'note'".into()),
            values: vec![
                value(RawBaseline::SEQ_WRITE, 1_234.567_890_123, 0.1 + 0.2),
                value(RawBaseline::SEQ_READ, 2100.0, 512.0 / 2100.0),
            ],
        }
    }

    /// A session with one available case, ready for samples.
    /// A new store `r.db` in a new temporary folder (kept alive by the returned handle).
    fn temp_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("r.db")).expect("open");
        (dir, store)
    }

    fn session_with_case(store: &Store, label: Option<&str>) -> i64 {
        let id = store.begin_session(&new_session(label)).expect("begin");
        store
            .record_case(id, &case("c1", "ext4-default", CaseAvailability::Available))
            .expect("case");
        id
    }

    fn is_rfc3339_utc(s: &str) -> bool {
        let b = s.as_bytes();
        b.len() == 20
            && b.iter().enumerate().all(|(i, c)| match i {
                4 | 7 => *c == b'-',
                10 => *c == b'T',
                13 | 16 => *c == b':',
                19 => *c == b'Z',
                _ => c.is_ascii_digit(),
            })
    }

    fn user_version(path: &Path) -> i64 {
        let conn = Connection::open(path).expect("raw open");
        conn.pragma_query_value(None, "user_version", |r| r.get(0))
            .expect("user_version")
    }

    #[test]
    fn whole_session_round_trips_through_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("nested/deeper/results.db");
        let info = new_session(Some("baseline"));
        let cases = vec![
            case("c1", "ext4-default", CaseAvailability::Available),
            case(
                "c2",
                "zfs-default",
                CaseAvailability::Unavailable("zfs: no mkfs.zfs".into()),
            ),
        ];
        let inputs = vec![
            sample("c1", 0, SampleStatus::Ok),
            sample("c1", 1, SampleStatus::Ok),
            NewSample {
                device: None,
                effective_mount_opts: None,
                notes: Vec::new(),
                ..sample("c1", 2, SampleStatus::Failed("mount: wrong fs type".into()))
            },
        ];
        assert!(inputs[0].is_warmup && !inputs[1].is_warmup);

        let (id, sample_ids) = {
            let store = Store::open(&path).expect("open creates folders");
            let id = store.begin_session(&info).expect("begin");
            for c in &cases {
                store.record_case(id, c).expect("case");
            }
            let ids: Vec<i64> = inputs
                .iter()
                .map(|s| store.record_sample(id, s).expect("sample"))
                .collect();
            store.record_baseline(id, &measured_baseline()).expect("baseline");
            store.finish_session(id, SessionStatus::Complete).expect("finish");
            (id, ids)
        };

        let store = Store::open(&path).expect("reopen");
        let loaded = store.load_session(id).expect("load");
        let expected = SessionData {
            session: SessionRecord {
                id,
                started_at: loaded.session.started_at.clone(),
                finished_at: loaded.session.finished_at.clone(),
                status: SessionStatus::Complete,
                info,
            },
            cases,
            samples: sample_ids
                .iter()
                .zip(&inputs)
                .map(|(&id, s)| SampleRecord { id, sample: s.clone() })
                .collect(),
            baseline: Some(measured_baseline()),
            noise: Vec::new(),
        };
        assert_eq!(loaded, expected);
        assert!(
            is_rfc3339_utc(&loaded.session.started_at),
            "{}",
            loaded.session.started_at
        );
        let finished = loaded.session.finished_at.as_deref().expect("finished_at set");
        assert!(is_rfc3339_utc(finished) && finished >= loaded.session.started_at.as_str());
        // Every unit and both directions made it back, in order.
        let units: Vec<Unit> = loaded.samples[1]
            .sample
            .measurements
            .iter()
            .map(|m| m.metric.unit)
            .collect();
        assert_eq!(
            units,
            [
                Unit::MibPerSec,
                Unit::Percent,
                Unit::OpsPerSec,
                Unit::Micros,
                Unit::Seconds,
                Unit::Ratio,
                Unit::Count
            ]
        );
        assert!(store.integrity_check().expect("integrity"));
    }

    #[test]
    fn connection_runs_in_wal_with_full_sync_and_foreign_keys() {
        let (dir, store) = temp_store();
        let pragma = |name: &str| -> String {
            store
                .conn
                .pragma_query_value(None, name, |r| r.get::<_, rusqlite::types::Value>(0))
                .map(|v| format!("{v:?}"))
                .expect("pragma")
        };
        assert_eq!(pragma("journal_mode"), r#"Text("wal")"#);
        assert_eq!(pragma("synchronous"), "Integer(2)"); // FULL
        assert_eq!(pragma("foreign_keys"), "Integer(1)");
        assert_eq!(pragma("busy_timeout"), "Integer(10000)");
        assert_eq!(store.path(), dir.path().join("r.db"));
    }

    #[test]
    fn migration_sets_user_version_and_does_not_rerun() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.db");
        let id = {
            let store = Store::open(&path).expect("open");
            store.begin_session(&new_session(None)).expect("begin")
        };
        assert_eq!(user_version(&path), i64::from(SCHEMA_VERSION));
        assert_eq!(SCHEMA_VERSION as usize, MIGRATIONS.len());
        // Migration 1 has plain CREATE TABLEs: running it again would fail, and the data would
        // not survive.
        let store = Store::open(&path).expect("reopen");
        assert_eq!(user_version(&path), i64::from(SCHEMA_VERSION));
        assert_eq!(store.list_sessions().expect("list").len(), 1);
        assert_eq!(store.resolve("latest").expect("latest"), id);
    }

    #[test]
    fn baselines_round_trip_replace_and_stay_per_session() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.db");
        let store = Store::open(&path).expect("open");
        let a = session_with_case(&store, None);
        let b = session_with_case(&store, None);
        assert_eq!(store.load_baseline(a).expect("none yet"), None);
        assert_eq!(store.load_session(a).expect("load").baseline, None);

        let failed = RawBaseline {
            status: BaselineStatus::Failed("open /dev/loop3: Device or resource busy".into()),
            values: measured_baseline().values[..1].to_vec(),
            note: None,
            ..measured_baseline()
        };
        store.record_baseline(a, &failed).expect("failed");
        let none = RawBaseline::no_device("directory /mnt/x (nfs4)");
        store.record_baseline(b, &none).expect("no device");
        assert_eq!(store.load_baseline(a).expect("load a"), Some(failed));
        assert_eq!(store.load_session(b).expect("load b").baseline, Some(none));

        // Recording again replaces the row and its values.
        store.record_baseline(a, &measured_baseline()).expect("replace");
        drop(store);
        let store = Store::open(&path).expect("reopen");
        let loaded = store.load_baseline(a).expect("load").expect("stored");
        assert_eq!(loaded, measured_baseline());
        assert_eq!(loaded.ceiling_mib_s(), Some(2100.0));
        let rows: i64 = store
            .conn
            .query_row("SELECT COUNT(*) FROM baseline_values", [], |r| r.get(0))
            .expect("count");
        assert_eq!(rows, 2);

        // Unknown sessions, NaN and unreadable text are refused like everywhere else.
        assert!(matches!(
            store.record_baseline(99, &measured_baseline()),
            Err(StoreError::NoSuchSession(_))
        ));
        assert!(matches!(store.load_baseline(99), Err(StoreError::NoSuchSession(_))));
        let mut nan = measured_baseline();
        nan.values[1].value = f64::NAN;
        let err = store.record_baseline(b, &nan).expect_err("NaN refused");
        assert!(err.to_string().contains("baseline raw_seq_read = NaN"), "{err}");
        store
            .conn
            .execute_batch("UPDATE baseline_values SET unit = 'furlongs/s'")
            .expect("edit by hand");
        let err = store.load_session(a).expect_err("refused");
        assert!(err.to_string().contains("unknown unit `furlongs/s`"), "{err}");
        store
            .conn
            .execute_batch("UPDATE baselines SET state = 'measured', error = 'x'")
            .expect("edit by hand");
        let err = store.load_baseline(b).expect_err("refused");
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    }

    /// The suite text of the old sessions of the migration tests.
    const OLD_SUITE: &str = "[suite]\nname = \"quick\"\n\n[run]\nrepeats = 5\nwarmup = 1\n\
        order = \"sequential\"\ntrim = 2\nconfidence = 0.9\n\n[[fs]]\ntype = \"ext4\"\n\n\
        [[workload]]\nkind = \"bonnie\"\n";

    /// The suite reader the edge registers reads `OLD_SUITE`'s `[run]` table as below and fails
    /// on anything else; the store's part (which text it passes, what it does with the answer)
    /// is what these tests check, the suite format's is config's.
    fn old_suite_reader(text: &str, name: &str) -> Result<Policy, Box<dyn std::error::Error + Send + Sync>> {
        if text != OLD_SUITE {
            return Err(format!("{name}: trim: invalid type").into());
        }
        Ok(Policy {
            repeats: 5,
            warmup: 1,
            order: Order::Sequential,
            drop_caches: true,
            trim: 2,
            confidence: 0.9,
            ..Policy::default()
        })
    }

    #[test]
    fn a_version_3_session_whose_suite_no_longer_loads_is_a_clear_error_not_a_default() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v3.db");
        {
            let conn = Connection::open(&path).expect("raw open");
            for sql in &MIGRATIONS[..3] {
                conn.execute_batch(sql).expect("schema 1-3");
            }
            conn.pragma_update(None, "user_version", 3).expect("version 3");
            for (label, text) in [("good", OLD_SUITE), ("bad", "[run]\ntrim = \"one\"\n")] {
                conn.execute(
                    "INSERT INTO sessions (started_at, finished_at, status, label, suite_name, \
                     suite_text, args_json, fsbench_version, hostname, kernel, cpu_model, ncpu, \
                     mem_bytes, target) VALUES ('2025-01-01T00:00:00Z', '2025-01-01T00:10:00Z', \
                     'complete', ?1, 'quick', ?2, '[]', '0.1.0', 'h', 'k', 'c', 2, 1, 'dir')",
                    [label, text],
                )
                .expect("v3 session");
            }
        }
        // Without a reader the old session's policy is an error that says so, never a default.
        let plain = Store::open(&path).expect("open migrates");
        let err = plain
            .load_session(plain.resolve("good").expect("good"))
            .expect_err("no reader, no policy");
        assert!(
            matches!(err, StoreError::NoPolicy { session: 1, .. })
                && err.to_string().contains("without a suite reader"),
            "{err}"
        );
        drop(plain);
        let store = Store::open(&path).expect("reopen").with_suite_reader(old_suite_reader);
        let good = store.load_session(store.resolve("good").expect("good")).expect("load");
        assert_eq!(
            (good.session.info.policy.trim, good.session.info.policy.confidence),
            (2, 0.9)
        );
        let err = store
            .load_session(store.resolve("bad").expect("bad"))
            .expect_err("no silent default");
        assert!(matches!(err, StoreError::NoPolicy { session: 2, .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains("session 2 was recorded before") && text.contains("trim"),
            "{text}"
        );
        // A new session stores its policy, and a partly stored one is refused.
        let id = store.begin_session(&new_session(None)).expect("begin");
        assert_eq!(
            store.load_session(id).expect("load").session.info.policy,
            new_session(None).policy
        );
        store
            .conn
            .execute("UPDATE sessions SET policy_trim = NULL WHERE id = ?1", [id])
            .expect("edit by hand");
        let err = store.load_session(id).expect_err("refused");
        assert!(err.to_string().contains("partly stored run policy"), "{err}");
    }

    #[test]
    fn a_version_1_database_migrates_to_the_current_version_keeping_its_sessions() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v1.db");
        // A database as fsbench with schema version 1 left it: migration 1 only, one session
        // with a case and a sample.
        {
            let conn = Connection::open(&path).expect("raw open");
            conn.execute_batch(MIGRATIONS[0]).expect("schema 1");
            conn.pragma_update(None, "user_version", 1).expect("version 1");
            conn.execute_batch(
                "INSERT INTO sessions (started_at, finished_at, status, label, suite_name, \
                 suite_text, args_json, fsbench_version, hostname, kernel, cpu_model, ncpu, \
                 mem_bytes, target) VALUES ('2025-01-01T00:00:00Z', '2025-01-01T00:10:00Z', \
                 'complete', 'old', 'quick', '', '[\"fsbench\"]', '0.1.0', 'h', 'k', 'c', 2, 1, \
                 'loop images in /var/tmp/fsbench');
                 INSERT INTO cases VALUES (1, 'c1', 0, 'ext4', 'ext4', '[]', '[]', 'bonnie', \
                 'bonnie', '{}', 'available', NULL);
                 INSERT INTO samples (session_id, case_id, repeat, is_warmup, started_at, wall_s, \
                 status, error, device, effective_mount_opts, notes_json) VALUES (1, 'c1', 0, 0, \
                 '2025-01-01T00:01:00Z', 3.5, 'ok', NULL, NULL, NULL, '[]');
                 INSERT INTO metrics VALUES (1, 0, 'seq_write_block', 'throughput', 'MiB/s', \
                 'higher_is_better', 321.5);
                 INSERT INTO metrics VALUES (1, 1, 'seq_write_block', 'cpu_process', '%', \
                 'lower_is_better', 40.0);
                 INSERT INTO metrics VALUES (1, 2, 'seq_write_block', 'cpu_system', '%', \
                 'lower_is_better', 30.0);
                 INSERT INTO metrics VALUES (1, 3, 'seq_write_block', 'lat_p99', 'us', \
                 'lower_is_better', 12.0);
                 INSERT INTO metrics VALUES (1, 4, 'seq_write_block', 'latency_budget', 'us', \
                 'lower_is_better', 12.0);",
            )
            .expect("v1 data");
            conn.execute("UPDATE sessions SET suite_text = ?1", [OLD_SUITE])
                .expect("suite text");
        }
        assert_eq!(user_version(&path), 1);

        let store = Store::open(&path)
            .expect("open migrates")
            .with_suite_reader(old_suite_reader);
        // Every migration ran (005 the adaptive policy, 006 latency_histograms, 007
        // throughput_series, included).
        assert_eq!(user_version(&path), i64::from(SCHEMA_VERSION));
        assert_eq!(SCHEMA_VERSION, 13);
        assert!(MIGRATIONS[12].contains("CREATE TABLE noise_estimates"));
        assert!(MIGRATIONS[10].contains("ADD COLUMN path_facts_json"));
        assert!(MIGRATIONS[11].contains("CREATE TABLE latency_windows"));
        assert!(MIGRATIONS.iter().any(|m| m.contains("CREATE TABLE latency_histograms")));
        assert!(MIGRATIONS[6].contains("CREATE TABLE throughput_series"));
        let old = store
            .load_session(store.resolve("old").expect("resolve"))
            .expect("load");
        // A session from before schema 4 gets the policy of its stored suite text, and, being
        // from before schema 5, no methodology checks (its exports stay as they were).
        assert_eq!(
            old.session.info.policy,
            Policy {
                repeats: 5,
                warmup: 1,
                order: Order::Sequential,
                drop_caches: true,
                trim: 2,
                confidence: 0.9,
                methodology: false,
                ..Policy::default()
            }
        );
        assert_eq!(old.baseline, None, "a v1 session has no baseline");
        assert_eq!(old.samples[0].sample.measurements[0].value, 321.5);
        // Migration 3 gives old rows the roles their names always meant (and only those:
        // `latency_budget` is not a `lat_` percentile).
        let roles: Vec<Role> = old.samples[0]
            .sample
            .measurements
            .iter()
            .map(|m| m.metric.role)
            .collect();
        assert_eq!(
            roles,
            [
                Role::Headline,
                Role::ProcessCpu,
                Role::SystemCpu,
                Role::Latency,
                Role::Headline
            ]
        );
        // The new tables work for the old session and for new ones.
        store
            .record_baseline(old.session.id, &measured_baseline())
            .expect("record");
        assert_eq!(
            store.load_baseline(old.session.id).expect("load"),
            Some(measured_baseline())
        );
        let new = session_with_case(&store, None);
        store
            .record_baseline(new, &RawBaseline::no_device("directory"))
            .expect("new");
        assert!(store.integrity_check().expect("integrity"));
        // Deleting a session takes its baseline with it (foreign keys, cascade).
        store
            .conn
            .execute("DELETE FROM sessions WHERE id = ?1", [old.session.id])
            .expect("delete");
        let left: i64 = store
            .conn
            .query_row("SELECT COUNT(*) FROM baseline_values", [], |r| r.get(0))
            .expect("count");
        assert_eq!(left, 0);
    }

    #[test]
    fn newer_schema_is_refused_with_advice() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.db");
        let too_new = i64::from(SCHEMA_VERSION) + 1;
        Connection::open(&path)
            .and_then(|c| c.pragma_update(None, "user_version", too_new))
            .expect("raw setup");
        let err = Store::open(&path).expect_err("refused");
        assert!(
            matches!(err, StoreError::TooNew { found, .. } if found == too_new),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains(&format!(
                "database schema version {too_new} is newer than this fsbench ({SCHEMA_VERSION}): \
                 upgrade fsbench or use another --db"
            )),
            "{msg}"
        );
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        // Refusing did not touch the file: same version, journal mode not switched to WAL.
        assert_eq!(user_version(&path), too_new);
        let mode: String = Connection::open(&path)
            .and_then(|c| c.pragma_query_value(None, "journal_mode", |r| r.get(0)))
            .expect("journal_mode");
        assert_eq!(mode, "delete");
    }

    #[test]
    fn a_file_that_is_not_a_database_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "this is not sqlite, just some text long enough to fill a header").expect("write");
        let msg = Store::open(&path).expect_err("refused").to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains("not an intact SQLite database: use another --db"), "{msg}");
    }

    #[test]
    fn resolve_latest_id_label_and_unknown() {
        let (_dir, store) = temp_store();
        assert!(matches!(store.resolve("latest"), Err(StoreError::NoSuchSession(r)) if r == "latest"));

        let s1 = store.begin_session(&new_session(Some("base"))).expect("s1");
        let s2 = store.begin_session(&new_session(Some("new"))).expect("s2");
        let s3 = store.begin_session(&new_session(Some("base"))).expect("s3");
        let s4 = store.begin_session(&new_session(Some("2024"))).expect("s4");
        assert!(s1 < s2 && s2 < s3 && s3 < s4);

        assert_eq!(store.resolve("latest").expect("latest"), s4);
        assert_eq!(store.resolve(&s2.to_string()).expect("id"), s2);
        assert_eq!(store.resolve("base").expect("newest with label"), s3);
        assert_eq!(store.resolve("new").expect("label"), s2);
        // A number that is no id falls back to being a label.
        assert_eq!(store.resolve("2024").expect("numeric label"), s4);
        for unknown in ["nope", "999", ""] {
            let err = store.resolve(unknown).expect_err("unknown");
            assert!(matches!(&err, StoreError::NoSuchSession(r) if r == unknown), "{err:?}");
            assert!(err.to_string().contains("fsbench list sessions"));
        }
    }

    #[test]
    fn list_sessions_is_newest_first_with_status_and_tools() {
        let (_dir, store) = temp_store();
        let a = store.begin_session(&new_session(Some("a"))).expect("a");
        let b = store
            .begin_session(&NewSession {
                tool_versions: vec![],
                run_options: None,
                ..new_session(None)
            })
            .expect("b");
        store.finish_session(a, SessionStatus::Interrupted).expect("finish a");

        let listed = store.list_sessions().expect("list");
        let ids: Vec<i64> = listed.iter().map(|s| s.id).collect();
        assert_eq!(ids, [b, a]);
        assert_eq!(listed[0].status, SessionStatus::Running);
        assert_eq!(listed[0].finished_at, None);
        assert!(listed[0].info.tool_versions.is_empty());
        assert_eq!(listed[1].status, SessionStatus::Interrupted);
        assert!(listed[1].finished_at.as_deref().is_some_and(is_rfc3339_utc));
        assert_eq!(listed[1].info, new_session(Some("a")));

        // Taking a session up again clears finished_at: it is NULL exactly while running.
        store.finish_session(a, SessionStatus::Running).expect("resume");
        let again = store.load_session(a).expect("load");
        assert_eq!(
            (again.session.status, again.session.finished_at),
            (SessionStatus::Running, None)
        );
    }

    #[test]
    fn unknown_sessions_and_cases_are_refused() {
        let (_dir, store) = temp_store();
        let c = case("c1", "ext4", CaseAvailability::Available);
        assert!(matches!(store.record_case(42, &c), Err(StoreError::NoSuchSession(r)) if r == "42"));
        assert!(matches!(
            store.finish_session(42, SessionStatus::Complete),
            Err(StoreError::NoSuchSession(_))
        ));
        assert!(matches!(store.load_session(42), Err(StoreError::NoSuchSession(_))));

        let id = session_with_case(&store, None);
        let err = store
            .record_sample(id, &sample("c9", 0, SampleStatus::Ok))
            .expect_err("refused");
        assert!(
            matches!(&err, StoreError::NoSuchCase { case_id, .. } if case_id == "c9"),
            "{err:?}"
        );
        assert!(store.load_session(id).expect("load").samples.is_empty());
    }

    #[test]
    fn non_finite_numbers_are_refused_and_nothing_is_stored() {
        let (_dir, store) = temp_store();
        let id = session_with_case(&store, None);
        let mut bad = sample("c1", 1, SampleStatus::Ok);
        bad.measurements[2].value = f64::NAN;
        let err = store.record_sample(id, &bad).expect_err("NaN refused");
        assert!(err.to_string().contains("rand_create/rate = NaN"), "{err}");
        let bad_wall = NewSample {
            wall_s: f64::INFINITY,
            ..sample("c1", 1, SampleStatus::Ok)
        };
        assert!(matches!(
            store.record_sample(id, &bad_wall),
            Err(StoreError::NonFinite { .. })
        ));
        assert!(store.load_session(id).expect("load").samples.is_empty());
    }

    #[test]
    fn recording_a_repeat_again_replaces_it() {
        let (_dir, store) = temp_store();
        let id = session_with_case(&store, None);
        let first = store
            .record_sample(id, &sample("c1", 1, SampleStatus::Ok))
            .expect("first");
        let other = store
            .record_sample(id, &sample("c1", 2, SampleStatus::Ok))
            .expect("other");
        let retry = NewSample {
            started_at: "2024-05-02T08:00:00Z".into(),
            ..sample("c1", 1, SampleStatus::Failed("ENOSPC".into()))
        };
        let second = store.record_sample(id, &retry).expect("replace");
        assert!(
            second > other && other > first,
            "a replacement runs later, so sorts later"
        );

        let data = store.load_session(id).expect("load");
        let ids: Vec<i64> = data.samples.iter().map(|s| s.id).collect();
        assert_eq!(ids, [other, second]);
        assert_eq!(data.samples[1].sample, retry);
        // The first attempt's measurements went with it.
        let metric_rows: i64 = store
            .conn
            .query_row("SELECT COUNT(*) FROM metrics", [], |r| r.get(0))
            .expect("count");
        assert_eq!(
            metric_rows as usize,
            sample("c1", 2, SampleStatus::Ok).measurements.len()
        );
    }

    #[test]
    fn recording_a_case_again_keeps_its_place_and_samples() {
        let (_dir, store) = temp_store();
        let id = session_with_case(&store, None);
        store
            .record_case(id, &case("c2", "xfs", CaseAvailability::Available))
            .expect("c2");
        store
            .record_sample(id, &sample("c1", 0, SampleStatus::Ok))
            .expect("sample");
        let changed = case("c1", "ext4-default", CaseAvailability::Unavailable("no loop".into()));
        store.record_case(id, &changed).expect("replace c1");

        let data = store.load_session(id).expect("load");
        let order: Vec<&str> = data.cases.iter().map(|c| c.case_id.as_str()).collect();
        assert_eq!(order, ["c1", "c2"]);
        assert_eq!(data.cases[0], changed);
        assert_eq!(data.samples.len(), 1);
    }

    #[test]
    fn completed_repeats_lists_ok_repeats_only() {
        let (_dir, store) = temp_store();
        let id = session_with_case(&store, None);
        store
            .record_case(id, &case("c2", "xfs", CaseAvailability::Available))
            .expect("c2");
        for (repeat, ok) in [(3, true), (0, true), (1, false), (2, true)] {
            let status = if ok {
                SampleStatus::Ok
            } else {
                SampleStatus::Failed("boom".into())
            };
            store.record_sample(id, &sample("c1", repeat, status)).expect("sample");
        }
        store
            .record_sample(id, &sample("c2", 0, SampleStatus::Ok))
            .expect("c2 sample");
        let other = session_with_case(&store, None);
        store
            .record_sample(other, &sample("c1", 5, SampleStatus::Ok))
            .expect("other session");

        assert_eq!(store.completed_repeats(id, "c1").expect("c1"), [0, 2, 3]);
        assert_eq!(store.completed_repeats(id, "c2").expect("c2"), [0]);
        assert_eq!(store.completed_repeats(other, "c1").expect("other"), [5]);
        assert!(store.completed_repeats(id, "nope").expect("unknown").is_empty());
        // A failed repeat that is retried successfully becomes complete.
        store
            .record_sample(id, &sample("c1", 1, SampleStatus::Ok))
            .expect("retry");
        assert_eq!(store.completed_repeats(id, "c1").expect("c1"), [0, 1, 2, 3]);
    }

    #[test]
    fn unreadable_stored_values_are_clear_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let edits = [
            (
                "UPDATE metrics SET unit = 'furlongs' WHERE ord = 3",
                "unknown unit `furlongs`",
            ),
            (
                "UPDATE metrics SET direction = 'sideways'",
                "unknown direction `sideways`",
            ),
            ("UPDATE sessions SET status = 'paused'", "unknown status `paused`"),
            ("UPDATE samples SET notes_json = 'oops'", "notes_json of sample"),
            (
                "UPDATE samples SET status = 'ok', error = 'x'",
                "status `ok` with error",
            ),
            ("UPDATE cases SET availability = 'maybe'", "availability `maybe`"),
        ];
        for (i, (edit, expect)) in edits.into_iter().enumerate() {
            let path = dir.path().join(format!("r{i}.db"));
            let store = Store::open(&path).expect("open");
            let id = session_with_case(&store, None);
            store
                .record_sample(id, &sample("c1", 1, SampleStatus::Ok))
                .expect("sample");
            assert!(store.load_session(id).is_ok(), "readable before the edit");
            store.conn.execute_batch(edit).expect("edit by hand");

            let err = store.load_session(id).expect_err("refused");
            assert!(matches!(err, StoreError::Corrupt { .. }), "{edit}: {err:?}");
            let msg = err.to_string();
            assert!(msg.contains(expect) && msg.contains("use another --db"), "{msg}");
            assert!(msg.contains(&path.display().to_string()), "{msg}");
        }
    }

    #[test]
    fn committed_sample_survives_a_crash_before_finish() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.db");
        let store = Store::open(&path).expect("open");
        let id = session_with_case(&store, Some("crashy"));
        let sample_id = store
            .record_sample(id, &sample("c1", 1, SampleStatus::Ok))
            .expect("sample");

        // What a crash leaves behind is the files: copy the database and its WAL while the
        // handle is still open (no checkpoint, no clean close) and read the copy.
        let crashed = dir.path().join("crashed");
        std::fs::create_dir(&crashed).expect("mkdir");
        for suffix in ["", "-wal"] {
            let from = PathBuf::from(format!("{}{suffix}", path.display()));
            if from.exists() {
                std::fs::copy(&from, crashed.join(format!("r.db{suffix}"))).expect("copy");
            }
        }
        let copy = Store::open(&crashed.join("r.db")).expect("open copy");
        let data = copy
            .load_session(copy.resolve("crashy").expect("resolve"))
            .expect("load");
        assert_eq!(data.session.status, SessionStatus::Running);
        assert_eq!(data.session.finished_at, None);
        assert_eq!(data.samples.len(), 1);
        assert_eq!(data.samples[0].sample, sample("c1", 1, SampleStatus::Ok));

        // And dropping the process's handle without finish_session loses nothing either.
        drop(store);
        let reopened = Store::open(&path).expect("reopen");
        let data = reopened.load_session(id).expect("load");
        assert_eq!(data.session.status, SessionStatus::Running);
        assert_eq!(data.samples.iter().map(|s| s.id).collect::<Vec<_>>(), [sample_id]);
    }

    #[test]
    fn a_second_handle_waits_for_the_write_lock() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.db");
        let a = Store::open(&path).expect("a");
        let b = Store::open(&path).expect("b");
        let sa = session_with_case(&a, Some("a"));
        let sb = session_with_case(&b, Some("b"));

        // `a` holds the write lock; `b`, on another thread, must wait for it, not fail.
        let held = Duration::from_millis(300);
        let tx = a.write("holding the lock").expect("lock");
        tx.execute("UPDATE sessions SET target = 'held' WHERE id = ?1", [sa])
            .expect("write");
        let writer = std::thread::spawn(move || {
            let started = Instant::now();
            let result = b.record_sample(sb, &sample("c1", 1, SampleStatus::Ok));
            (result.map(|_| ()), started.elapsed(), b)
        });
        std::thread::sleep(held);
        tx.commit().expect("release");
        let (result, waited, b) = writer.join().expect("thread");
        result.expect("b's write landed after waiting");
        assert!(waited >= held - Duration::from_millis(50), "b waited only {waited:?}");

        a.record_sample(sa, &sample("c1", 1, SampleStatus::Ok))
            .expect("a writes too");
        for (store, session) in [(&a, sb), (&b, sa)] {
            assert_eq!(store.load_session(session).expect("load").samples.len(), 1);
        }
        assert_eq!(b.load_session(sa).expect("load").session.info.target, "held");
    }

    #[test]
    fn concurrent_writers_from_two_threads_both_land() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("fresh/r.db");
        const REPEATS: u32 = 25;
        // Both threads also open the not-yet-existing file at the same moment, so creating and
        // migrating it races too.
        let start = Arc::new(Barrier::new(2));
        let threads: Vec<_> = ["left", "right"]
            .into_iter()
            .map(|label| {
                let (path, start) = (path.clone(), Arc::clone(&start));
                std::thread::spawn(move || -> Result<i64, StoreError> {
                    start.wait();
                    let store = Store::open(&path)?;
                    let id = store.begin_session(&new_session(Some(label)))?;
                    store.record_case(id, &case("c1", "ext4", CaseAvailability::Available))?;
                    for repeat in 0..REPEATS {
                        store.record_sample(id, &sample("c1", repeat, SampleStatus::Ok))?;
                    }
                    store.finish_session(id, SessionStatus::Complete)?;
                    Ok(id)
                })
            })
            .collect();
        let ids: Vec<i64> = threads
            .into_iter()
            .map(|t| t.join().expect("thread").expect("writes"))
            .collect();

        let store = Store::open(&path).expect("open");
        assert_eq!(user_version(&path), i64::from(SCHEMA_VERSION));
        for (id, label) in ids.iter().zip(["left", "right"]) {
            assert_eq!(store.resolve(label).expect("label"), *id);
            let data = store.load_session(*id).expect("load");
            assert_eq!(data.session.status, SessionStatus::Complete);
            let repeats: Vec<u32> = data.samples.iter().map(|s| s.sample.repeat).collect();
            assert_eq!(repeats, (0..REPEATS).collect::<Vec<_>>());
            assert!(data.samples.iter().all(|s| s.sample.measurements.len() == 7));
        }
        assert!(store.integrity_check().expect("integrity"));
    }

    #[test]
    fn a_version_8_database_gets_the_rank_of_its_per_rank_rows_from_their_phase_names() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v8.db");
        // A many-rank session as schema 8 stored it: every rank's own rows as `PHASE@rankN`.
        {
            let conn = Connection::open(&path).expect("raw open");
            for sql in &MIGRATIONS[..8] {
                conn.execute_batch(sql).expect("schema 1-8");
            }
            conn.pragma_update(None, "user_version", 8).expect("version 8");
            conn.execute_batch(
                "INSERT INTO sessions (started_at, finished_at, status, label, suite_name, \
                 suite_text, args_json, fsbench_version, hostname, kernel, cpu_model, ncpu, \
                 mem_bytes, target) VALUES ('2025-01-01T00:00:00Z', '2025-01-01T00:10:00Z', \
                 'complete', 'ranks', 'quick', '', '[]', '0.1.0', 'h', 'k', 'c', 2, 1, 'dir');
                 INSERT INTO cases VALUES (1, 'c1', 0, 'ext4', 'ext4', '[]', '[]', 'fileio', \
                 'fileio', '{}', 'available', NULL);
                 INSERT INTO samples (session_id, case_id, repeat, is_warmup, started_at, wall_s, \
                 status, error, device, effective_mount_opts, notes_json) VALUES (1, 'c1', 0, 0, \
                 '2025-01-01T00:01:00Z', 3.5, 'ok', NULL, NULL, NULL, '[]');
                 INSERT INTO metrics (sample_id, ord, phase, metric, unit, direction, value, role) \
                 VALUES (1, 0, 'rndrd', 'iops', 'ops/s', 'higher_is_better', 900.0, 'headline'), \
                 (1, 1, 'rndrd@rank0', 'iops', 'ops/s', 'higher_is_better', 400.0, 'detail'), \
                 (1, 2, 'rndrd@rank12', 'start_s', 's', 'lower_is_better', 0.02, 'detail'), \
                 (1, 3, 'odd@rankX', 'time', 's', 'lower_is_better', 1.0, 'headline');
                 INSERT INTO throughput_series (sample_id, ord, phase, ops_json) VALUES \
                 (1, 0, 'rndrd@rank1', '[1, 2]'), (1, 1, 'rndrd', '[3]');",
            )
            .expect("v8 data");
            conn.execute("UPDATE sessions SET suite_text = ?1", [OLD_SUITE])
                .expect("suite text");
        }
        let store = Store::open(&path)
            .expect("open migrates")
            .with_suite_reader(old_suite_reader);
        assert_eq!(user_version(&path), i64::from(SCHEMA_VERSION));
        let data = store
            .load_session(store.resolve("ranks").expect("resolve"))
            .expect("load");
        let old = &data.samples[0].sample;
        let rows: Vec<(&str, Option<u32>, String)> = old
            .measurements
            .iter()
            .map(|m| (m.phase.as_str(), m.rank, m.row().into_owned()))
            .collect();
        assert_eq!(
            rows,
            [
                ("rndrd", None, "rndrd".to_string()),
                ("rndrd", Some(0), "rndrd@rank0".to_string()),
                ("rndrd", Some(12), "rndrd@rank12".to_string()),
                // Not a rank suffix fsbench wrote: left as it was.
                ("odd@rankX", None, "odd@rankX".to_string()),
            ]
        );
        let series: Vec<(&str, Option<u32>, &[u64])> = old
            .series
            .iter()
            .map(|t| (t.phase.as_str(), t.rank, t.ops.as_slice()))
            .collect();
        assert_eq!(
            series,
            [("rndrd", Some(1), &[1u64, 2][..]), ("rndrd", None, &[3u64][..])]
        );

        // A new per-rank row is stored with its rank and read back the same.
        let mut s = sample("c1", 1, SampleStatus::Ok);
        s.measurements[0].rank = Some(3);
        s.series = vec![crate::metric::ThroughputSeries {
            phase: "rndrd".into(),
            rank: Some(3),
            ops: vec![5],
        }];
        store.record_sample(data.session.id, &s).expect("record");
        let again = store.load_session(data.session.id).expect("load again");
        let new = &again
            .samples
            .iter()
            .find(|r| r.sample.repeat == 1)
            .expect("repeat 1")
            .sample;
        assert_eq!(new.measurements, s.measurements);
        assert_eq!(new.series, s.series);
    }

    /// Per-window latency histograms as a time-based phase of a many-rank repeat stores them:
    /// the cluster's merged windows (`rank` None) and every rank's own.
    fn windows() -> Vec<crate::metric::LatencyWindows> {
        let w = |rank: Option<u32>, bins: Vec<Vec<(u64, u64)>>| crate::metric::LatencyWindows {
            phase: "rndrd".into(),
            rank,
            window_ms: 1000,
            bins,
        };
        vec![
            w(
                None,
                vec![vec![(1_000, 5), (68_719_476_735, 1)], vec![], vec![(1_500, 2)]],
            ),
            w(Some(0), vec![vec![(1_000, 3)], vec![], vec![(1_500, 2)]]),
            w(Some(1), vec![vec![(1_000, 2), (68_719_476_735, 1)]]),
        ]
    }

    #[test]
    fn latency_windows_histograms_and_series_round_trip_and_go_with_their_sample() {
        let (_dir, store) = temp_store();
        let id = store.begin_session(&new_session(Some("w"))).expect("begin");
        store
            .record_case(id, &case("c1", "ext4", CaseAvailability::Available))
            .expect("case");
        let mut s = sample("c1", 1, SampleStatus::Ok);
        s.histograms = vec![crate::metric::LatencyHistogram {
            phase: "rndrd".into(),
            bins: vec![(900, 4), (12_000, 1)],
        }];
        s.series = vec![crate::metric::ThroughputSeries {
            phase: "rndrd".into(),
            rank: Some(1),
            ops: vec![7, 9],
        }];
        s.windows = windows();
        // A second phase with shorter windows keeps its own length.
        s.windows.push(crate::metric::LatencyWindows {
            phase: "seqwr".into(),
            rank: None,
            window_ms: 250,
            bins: vec![vec![(3, 1)]],
        });
        store.record_sample(id, &s).expect("record");
        let back = store.load_session(id).expect("load");
        assert_eq!(back.samples.len(), 1);
        assert_eq!(
            back.samples[0].sample, s,
            "every child row read back as written, in order"
        );

        // Recording the repeat again replaces its windows with the new ones (cascade).
        s.windows.truncate(1);
        store.record_sample(id, &s).expect("record again");
        let back = store.load_session(id).expect("load");
        assert_eq!(back.samples[0].sample.windows, s.windows);
        let rows: i64 = store
            .conn
            .query_row("SELECT COUNT(*) FROM latency_windows", [], |r| r.get(0))
            .expect("count");
        assert_eq!(rows, 1, "the replaced repeat's windows went with it");

        // A window length that is not a positive number of milliseconds is refused by name.
        store
            .conn
            .execute("UPDATE latency_windows SET window_ms = 0", [])
            .expect("edit by hand");
        let err = store.load_session(id).expect_err("refused");
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
        assert!(err.to_string().contains("latency windows of sample"), "{err}");
    }

    #[test]
    fn a_version_11_database_gains_latency_windows_and_keeps_its_samples() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v11.db");
        {
            let conn = Connection::open(&path).expect("raw open");
            for sql in &MIGRATIONS[..11] {
                conn.execute_batch(sql).expect("schema 1-11");
            }
            conn.pragma_update(None, "user_version", 11).expect("version 11");
        }
        let store = Store::open(&path).expect("open migrates");
        assert_eq!(user_version(&path), i64::from(SCHEMA_VERSION));
        let id = store.begin_session(&new_session(Some("v11"))).expect("begin");
        store
            .record_case(id, &case("c1", "ext4", CaseAvailability::Available))
            .expect("case");
        // A sample without windows stores no row and reads back without any.
        let plain = sample("c1", 1, SampleStatus::Ok);
        store.record_sample(id, &plain).expect("record");
        assert!(store.load_session(id).expect("load").samples[0]
            .sample
            .windows
            .is_empty());
        let mut s = sample("c1", 2, SampleStatus::Ok);
        s.windows = windows();
        store.record_sample(id, &s).expect("record");
        assert_eq!(
            store.load_session(id).expect("load").samples[1].sample.windows,
            s.windows
        );
    }

    /// Two rows of a session's noise: an estimate from five sessions, and a row with three
    /// usable sessions and no estimate.
    fn noise_rows(first: i64) -> Vec<NoiseEstimate> {
        vec![
            NoiseEstimate {
                workload: "bonnie".into(),
                phase: "seq_write_block".into(),
                metric: "throughput".into(),
                unit: Unit::MibPerSec,
                variant: "ext4".into(),
                between_sd_pct: Some(3.25),
                sessions: vec![first, first - 1, first - 2, first - 3, first - 4],
                within_sd_pct: Some(1.5),
            },
            NoiseEstimate {
                workload: "bonnie".into(),
                phase: "seq_create".into(),
                metric: "rate".into(),
                unit: Unit::OpsPerSec,
                variant: "ext4:noatime".into(),
                between_sd_pct: None,
                sessions: vec![first, first - 1, first - 2],
                within_sd_pct: None,
            },
        ]
    }

    #[test]
    fn noise_estimates_round_trip_are_replaced_and_go_with_their_session() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("n.db")).expect("open");
        let id = store.begin_session(&new_session(Some("aa-1"))).expect("begin");
        assert!(
            store.load_session(id).expect("load").noise.is_empty(),
            "none until stored"
        );
        let rows = noise_rows(id);
        store.record_noise(id, &rows).expect("record");
        assert_eq!(
            store.load_session(id).expect("load").noise,
            rows,
            "read back as written, in order"
        );
        // The count column is the number of sessions listed.
        let counts: Vec<i64> = store
            .conn
            .prepare("SELECT sessions FROM noise_estimates WHERE session_id = ?1 ORDER BY ord")
            .and_then(|mut st| st.query_map([id], |r| r.get(0))?.collect())
            .expect("counts");
        assert_eq!(counts, [5, 3]);
        // Recording again replaces every row.
        store.record_noise(id, &rows[1..]).expect("replace");
        assert_eq!(store.load_session(id).expect("load").noise, rows[1..]);
        // Not finite: refused by name, nothing changed; an unknown session: refused.
        let mut bad = rows.clone();
        bad[0].between_sd_pct = Some(f64::NAN);
        let err = store.record_noise(id, &bad).expect_err("NaN refused");
        assert!(matches!(err, StoreError::NonFinite { .. }), "{err:?}");
        assert!(
            err.to_string()
                .contains("seq_write_block throughput on ext4: between_sd_pct"),
            "{err}"
        );
        assert_eq!(store.load_session(id).expect("load").noise, rows[1..]);
        assert!(matches!(
            store.record_noise(id + 100, &rows),
            Err(StoreError::NoSuchSession(_))
        ));
        // A count that disagrees with the list, or a unit from elsewhere: corrupt, said where.
        store
            .conn
            .execute("UPDATE noise_estimates SET sessions = 4", [])
            .expect("edit by hand");
        let err = store.load_session(id).expect_err("refused");
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
        assert!(err.to_string().contains("counts 4 sessions but lists 3"), "{err}");
        store
            .conn
            .execute("UPDATE noise_estimates SET sessions = 3, unit = 'furlongs'", [])
            .expect("edit by hand");
        let err = store.load_session(id).expect_err("refused");
        assert!(err.to_string().contains("unknown unit `furlongs`"), "{err}");
        // Deleting the session removes its rows (the foreign key cascades).
        store
            .conn
            .execute("DELETE FROM sessions WHERE id = ?1", [id])
            .expect("delete");
        let left: i64 = store
            .conn
            .query_row("SELECT COUNT(*) FROM noise_estimates", [], |r| r.get(0))
            .expect("count");
        assert_eq!(left, 0);
    }

    #[test]
    fn a_version_12_database_gains_noise_estimates_and_keeps_its_sessions() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v12.db");
        let old = {
            let store = Store::open(&path).expect("open");
            // Written by this build, then taken back to version 12 as fsbench 12 left it.
            let id = store.begin_session(&new_session(Some("v12"))).expect("begin");
            store
                .record_case(id, &case("c1", "ext4", CaseAvailability::Available))
                .expect("case");
            store
                .record_sample(id, &sample("c1", 0, SampleStatus::Ok))
                .expect("sample");
            store.finish_session(id, SessionStatus::Complete).expect("finish");
            let before = store.load_session(id).expect("load");
            store.conn.execute_batch("DROP TABLE noise_estimates").expect("drop");
            store.conn.pragma_update(None, "user_version", 12).expect("version 12");
            before
        };
        assert_eq!(user_version(&path), 12);
        let store = Store::open(&path).expect("open migrates");
        assert_eq!(user_version(&path), i64::from(SCHEMA_VERSION));
        // The old session reads back unchanged, with no estimate (nothing is recomputed).
        assert_eq!(store.load_session(old.session.id).expect("load"), old);
        assert!(old.noise.is_empty());
        // A new one stores and reads its estimates; the old one may get some too.
        let id = store.begin_session(&new_session(Some("v13"))).expect("begin");
        store.record_noise(id, &noise_rows(id)).expect("record");
        assert_eq!(store.load_session(id).expect("load").noise, noise_rows(id));
        store
            .record_noise(old.session.id, &noise_rows(old.session.id))
            .expect("record old");
        assert_eq!(store.load_session(old.session.id).expect("load").noise.len(), 2);
    }
}
