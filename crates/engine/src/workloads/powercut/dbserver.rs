//! The database server under a power cut (issue 28 item 7): a PostgreSQL or MariaDB server
//! fsbench starts with its data directory in the cut's folder on the filesystem under test, the
//! writer's
//! numbered rows committed through it, the server killed at the cut, and started again on the
//! recovered data directory to count the acknowledged rows it lost.
//!
//! Per cut, in order:
//! 1. `initdb` / `mariadb-install-db` in `cutN/db-data`, the server started with the durable
//!    settings ([`DURABLE`], [`MARIADB_DURABLE`]; `server_fsync = false` starts it with the
//!    negative control's, [`NO_FSYNC`], [`MARIADB_NO_FLUSH`]), its socket folder `db-run`
//!    beside the runner's mount, outside the filesystem under test (under the temporary
//!    directory when that path is too long for a socket), the writer's table created;
//! 2. the writer commits rows through it ([`super::writer`]), each acknowledged by the server
//!    (PostgreSQL: the `postgres` crate; MariaDB: the `mariadb` client on a pipe, a row
//!    acknowledged when its number comes back after the `INSERT`);
//! 3. the cut: the disk's cut (or the shutdown ioctl) first, then SIGKILL to the server's
//!    whole process group at once ([`DbServer::kill`]). A power loss stops the disk and the
//!    CPU together; cutting the disk first means nothing the server writes after the cut point
//!    can persist (every write fails), and the kill follows within microseconds, so it can
//!    acknowledge nothing more. Killing first would leave a window in which the kernel may
//!    still flush what the dead server wrote (a journal commit), persisting more than a power
//!    cut would. After the kill, once the postmaster's children (in sessions of their own,
//!    which the group kill does not reach) have exited on its death, the shared memory a
//!    killed PostgreSQL server leaves (`/dev/shm/PostgreSQL.*`, its SysV header segment) is
//!    removed ([`crate::workloads::oltp::pgshm`]);
//! 4. after the recovery mount: the server started again on the recovered data directory (its
//!    WAL replay), the acknowledged rows counted, the server stopped. A server that does not
//!    start is `db_recovery_failed` with its log's tail in the note, and all its acknowledged
//!    rows count as lost.
//!
//! The server is the `oltp` workload's ([`crate::workloads::oltp::server`]): the same
//! tools, service user, process group, `PR_SET_PDEATHSIG = SIGKILL` (so a SIGKILLed fsbench
//! leaves no server holding the mount, and `fsbench cleanup` then unmounts as for any run, and
//! removes the shared memory whose removal each PostgreSQL server recorded in the run's undo
//! log while starting) and a guard that stops it on error and interrupt. It is started from the workload's own thread,
//! never from the writer's: the death signal follows the thread that forked.

use super::writer::{ServerLink, LINE_TABLE};
use crate::undo::{RemoveDir, UndoLog};
use crate::workloads::oltp::server::{server_tools, Instance, ServerProcess, StartOptions, StopError, Tools};
use crate::workloads::oltp::DbEngine;
use crate::EngineError;
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// PostgreSQL's durable settings: a commit is acknowledged only once its WAL is on stable
/// storage, and a page's first write after a checkpoint logs the whole page.
pub const DURABLE: [&str; 3] = ["synchronous_commit=on", "fsync=on", "full_page_writes=on"];

/// PostgreSQL's negative control: `fsync = off`, so acknowledged commits stay in the page
/// cache and a power cut loses them.
pub const NO_FSYNC: [&str; 3] = ["synchronous_commit=on", "fsync=off", "full_page_writes=on"];

/// MariaDB's durable settings: InnoDB writes and flushes its redo log at every commit, and
/// pages go through the doublewrite buffer (no binary log is kept).
pub const MARIADB_DURABLE: [&str; 2] = ["innodb_flush_log_at_trx_commit=1", "innodb_doublewrite=1"];

/// MariaDB's negative control: the redo log is written and flushed about once a second, not at
/// commit, so the commits of the last second are acknowledged but not durable.
pub const MARIADB_NO_FLUSH: [&str; 2] = ["innodb_flush_log_at_trx_commit=0", "innodb_doublewrite=1"];

/// MariaDB's database and table of the writer's rows ([`super::writer::LINE_TABLE`]).
const MARIADB_TABLE: &str =
    "CREATE DATABASE fsbench; CREATE TABLE fsbench.rows (n BIGINT PRIMARY KEY, payload BLOB NOT NULL) ENGINE=InnoDB";

/// Shared buffers of the small server, in bytes.
const BUFFER_POOL: u64 = 32 << 20;

/// The server of one cut: its folders, settings and, while it runs, its process.
pub struct DbServer<'a> {
    db: Instance<'a>,
    /// The run's undo log, holding the socket folder's removal while it exists.
    state: Option<&'a dyn UndoLog>,
    options: StartOptions,
    process: Option<ServerProcess>,
}

/// The server's tools, or what to install (`Unavailable`).
pub fn tools(engine: DbEngine) -> Result<Tools, EngineError> {
    match engine {
        DbEngine::Postgresql | DbEngine::Mariadb => server_tools(engine).map_err(EngineError::from),
        DbEngine::Sqlite => Err(EngineError::Invalid("SQLite is not a server: use sqlite = true".into())),
    }
}

/// The settings `engine` is started with: the durable ones, or the negative control's when
/// `fsync` is false ([`DURABLE`], [`NO_FSYNC`], [`MARIADB_DURABLE`], [`MARIADB_NO_FLUSH`]).
pub fn settings(engine: DbEngine, fsync: bool) -> &'static [&'static str] {
    match (engine, fsync) {
        (DbEngine::Mariadb, true) => &MARIADB_DURABLE,
        (DbEngine::Mariadb, false) => &MARIADB_NO_FLUSH,
        (_, true) => &DURABLE,
        (_, false) => &NO_FSYNC,
    }
}

impl<'a> DbServer<'a> {
    /// Initialises a data directory in `cut_dir`, starts the server on it with `settings` and
    /// creates the writer's table; its socket folder goes in `run_parent` (outside the
    /// filesystem under test), recorded in the run's undo log `state` as a folder to remove,
    /// so `fsbench cleanup` removes it after a SIGKILL (the data directory goes with the
    /// filesystem's image).
    pub fn start(
        tools: Tools,
        (cut_dir, run_parent): (&Path, &Path),
        settings: &[&str],
        interrupt: &'a AtomicBool,
        state: Option<&'a dyn UndoLog>,
    ) -> Result<Self, EngineError> {
        let db = Instance::create(tools, (cut_dir, run_parent), interrupt, state)?;
        if let Some(st) = state {
            st.push(&socket_dir_step(&db));
        }
        let mut s = DbServer {
            db,
            state,
            options: StartOptions {
                buffer_pool: BUFFER_POOL,
                max_connections: 20,
                settings: settings.iter().map(|s| s.to_string()).collect(),
            },
            process: None,
        };
        // On error the guard stops the server and removes the folders.
        s.db.init()?;
        s.process = Some(s.db.start(&s.options)?);
        if s.db.tools.engine == DbEngine::Mariadb {
            s.db.sql(MARIADB_TABLE, "table.log")?;
        } else {
            super::writer::create_server_table(s.db.socket_dir())
                .map_err(|e| EngineError::io("prepare the server's table", std::io::Error::other(e)))?;
        }
        Ok(s)
    }

    /// The socket folder (a PostgreSQL client's `host`).
    pub fn socket_dir(&self) -> &Path {
        self.db.socket_dir()
    }

    /// How the writer reaches the server: the client crate for PostgreSQL, the `mariadb`
    /// client fed on its standard input for MariaDB.
    pub fn link(&self) -> ServerLink {
        if self.db.tools.engine == DbEngine::Mariadb {
            let c = self.db.sql_client();
            ServerLink::Lines {
                program: c.get_program().into(),
                args: c.get_args().map(Into::into).collect(),
            }
        } else {
            ServerLink::Postgres(self.db.socket_dir().to_path_buf())
        }
    }

    /// Whether the socket folder had to go under the temporary directory.
    pub fn run_outside(&self) -> bool {
        self.db.run_outside()
    }

    /// SIGKILLs the server's process group (the cut), reaps it and removes the shared memory
    /// it left ([`ServerProcess::kill`]); what cannot be removed stays recorded for `fsbench
    /// cleanup`, and is said on stderr.
    pub fn kill(&mut self) {
        if let Some(mut p) = self.process.take() {
            if let Err(note) = p.kill() {
                eprintln!("fsbench: {note}");
            }
        }
    }

    /// Starts the server again on the recovered data directory, counts which of the rows
    /// `1..=acked` it holds, and stops it. `Err` says why they could not be counted: the server
    /// did not start (with its log's tail) or did not answer.
    pub fn count_after_recovery(&mut self, acked: u64) -> Result<u64, RecountError> {
        self.kill();
        let mut p = self.db.start(&self.options).map_err(RecountError::Start)?;
        let counted = if self.db.tools.engine == DbEngine::Mariadb {
            self.count_mariadb_rows(acked)
        } else {
            super::writer::count_server_rows(self.db.socket_dir(), acked).map_err(RecountError::Postgres)
        };
        let stopped = p.stop();
        let n = counted?;
        stopped.map_err(|note| RecountError::Stop { n, note })?;
        Ok(n)
    }

    /// How many of the rows `1..=acked` MariaDB holds (0 when its table or database is gone).
    fn count_mariadb_rows(&self, acked: u64) -> Result<u64, RecountError> {
        let sql = format!("SELECT count(*) FROM {LINE_TABLE} WHERE n BETWEEN 1 AND {acked}");
        match self.db.sql(&sql, "count.log") {
            Ok(out) => out
                .lines()
                .rev()
                .find_map(|l| l.trim().parse().ok())
                .ok_or(RecountError::NoCount(out)),
            Err(e) if e.to_string().contains("doesn't exist") || e.to_string().contains("Unknown database") => Ok(0),
            Err(e) => Err(RecountError::Mariadb(e)),
        }
    }

    /// Stops the server if it runs (politely, SIGKILL after the timeout) and removes its
    /// socket folder and data directory.
    pub fn finish(mut self) -> Result<(), StopError> {
        let stopped = self.process.take().map_or(Ok(()), |mut p| p.stop());
        self.remove();
        stopped
    }

    /// Removes the folders, and the socket folder's record once it is gone.
    fn remove(&self) {
        self.db.remove();
        if let Some(st) = self.state {
            if !self.db.socket_dir().exists() {
                st.pop(&socket_dir_step(&self.db));
            }
        }
    }

    /// `postgresql 15.18` from the server's `--version`.
    pub fn version(&self) -> Option<String> {
        self.db.tools.server_version()
    }

    /// The settings it runs with, for the sample's notes.
    pub fn settings_note(&self) -> String {
        self.options.settings.join(", ")
    }
}

impl Drop for DbServer<'_> {
    fn drop(&mut self) {
        // The process guard stops the server first (it is dropped before the folders go).
        if let Some(mut p) = self.process.take() {
            if let Err(note) = p.stop() {
                eprintln!("fsbench: {note}");
            }
        }
        self.remove();
    }
}

/// Why [`DbServer::count_after_recovery`] could not count the rows (every acknowledged row
/// then counts as lost, and the message is the sample's note).
#[derive(Debug, thiserror::Error)]
pub enum RecountError {
    /// The server did not start on the recovered data directory (its log's tail in the error).
    #[error("the server did not start after the cut: {0}")]
    Start(#[source] EngineError),
    /// PostgreSQL did not answer the count.
    #[error(transparent)]
    Postgres(#[from] super::writer::ServerRowsError),
    /// MariaDB's client failed.
    #[error("count the rows: {0}")]
    Mariadb(#[source] EngineError),
    /// MariaDB's client printed no number.
    #[error("no count in {0:?}")]
    NoCount(String),
    /// The rows were counted, but the server did not stop cleanly.
    #[error("counted {n} rows, then: {note}")]
    Stop {
        /// The rows counted.
        n: u64,
        /// What went wrong stopping it.
        #[source]
        note: StopError,
    },
}

/// The undo step that removes `db`'s socket folder (and the logs in it).
fn socket_dir_step(db: &Instance) -> RemoveDir {
    RemoveDir {
        path: db.socket_dir().to_path_buf(),
        recursive: true,
    }
}
