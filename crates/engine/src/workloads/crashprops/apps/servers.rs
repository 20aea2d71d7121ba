//! PostgreSQL and MariaDB as `crashprops` applications (issue 43, item 3): the servers of the
//! `oltp` and `powercut` workloads ([`crate::workloads::oltp::server`]: the same tools, service
//! user, unix socket only, process group, `PR_SET_PDEATHSIG = SIGKILL`, and PostgreSQL's
//! shared memory recorded in the run's undo log the moment it exists), under the crash states
//! of the recording disk.
//!
//! Protocol:
//! - **setup** (before the mark, made durable by the flush): `initdb` / `mariadb-install-db` in
//!   `FOLDER/db-data` on the filesystem under test, the server started once with the app's
//!   settings, the table `t(txn, k, pad)` made (PostgreSQL also `CREATE EXTENSION amcheck`),
//!   the server stopped cleanly;
//! - **act** (recorded): the server started again with the same settings (its socket folder
//!   outside the filesystem under test, in the run folder), one SQL client (`psql` /
//!   `mariadb`) fed on its standard input: [`TXNS`] transactions `BEGIN; INSERT` [`ROWS`] rows
//!   of 1500 bytes `; COMMIT; SELECT 'ack N';`, each acknowledged when its `ack N` line comes
//!   back (the COMMIT returned to the client), then the client ends and the server is **stopped
//!   cleanly** (PostgreSQL's fast shutdown, SIGINT, with its shutdown checkpoint; MariaDB's
//!   SIGTERM with InnoDB's log flush), so the states cover the commits, the background writes
//!   and the shutdown's;
//! - **check** (on a writable copy of the state's folder, as for SQLite): the stale
//!   `postmaster.pid` removed (after a reboot its pid names no process; the copy's could name
//!   a live one by chance), the server started on the copy (its crash recovery: WAL replay /
//!   InnoDB redo), then its own check — PostgreSQL: `amcheck`'s `bt_index_check(t_pkey,
//!   heapallindexed)` and `verify_heapam(t)` with no row; MariaDB: `CHECK TABLE` saying `OK` —
//!   and the rows per transaction: whole transactions 1..=j of 1500-byte pads, then every
//!   acknowledged one among them. A server that does not start, a failing check or rows that
//!   are not whole transactions is **corrupt**; a missing acknowledged transaction is **lost**.
//!   The server is stopped and the copy removed (an undo step of the state).
//!
//! Server starts are slow (4-7 s a state with the copy, mount and stop), so a server explores a seeded
//! uniform sample of at most [`MAX_STATES`] of its enumerated states ([`super::sample`]).
//!
//! References: PostgreSQL 15 "WAL Reliability" and "Asynchronous Commit" (with
//! `synchronous_commit = off` a crash may lose the last commits, up to three times
//! `wal_writer_delay`, but the database stays consistent); amcheck; MariaDB
//! `innodb_flush_log_at_trx_commit` (1: the redo log written and flushed at each commit; 2:
//! written at commit, flushed about once a second, so an OS crash or power cut may lose about a
//! second of commits); `CHECK TABLE`.

use super::{Ack, AppEnv, AppVerdict, ROWS, TXNS};
use crate::undo::RemoveDir;
use crate::workloads::oltp::server::{server_tools, Instance, ServerProcess, StartOptions};
use crate::workloads::oltp::DbEngine;
use crate::{EngineError, Unavailable};
use std::path::Path;

/// At most this many crash states per server application (a seeded sample, module doc).
pub const MAX_STATES: usize = 10;

/// The most a PostgreSQL data directory holds here, in bytes (initdb's 40 MiB, a 16 MiB WAL
/// segment, margin).
pub const PG_BYTES: u64 = 96 << 20;
/// The most a MariaDB data directory holds here, in bytes (ibdata1 12 MiB, three 10 MiB undo
/// tablespaces, the 8 MiB redo log, the system tables, margin).
pub const MARIADB_BYTES: u64 = 128 << 20;

/// Bytes of each row's pad (below PostgreSQL's TOAST threshold: stored inline, uncompressed).
const PAD: usize = 1500;

/// PostgreSQL's defaults, stated: a commit returns once its WAL is on stable storage.
pub const PG_DURABLE: &[&str] = &["fsync=on", "synchronous_commit=on", "full_page_writes=on"];
/// PostgreSQL with asynchronous commit: consistent, but the last commits may be lost.
pub const PG_ASYNC: &[&str] = &["fsync=on", "synchronous_commit=off", "full_page_writes=on"];
/// MariaDB's InnoDB flushing its redo log at every commit (its default), with the doublewrite
/// buffer; a small redo log so that the copy per state is small.
pub const MARIADB_DURABLE: &[&str] = &[
    "innodb_flush_log_at_trx_commit=1",
    "innodb_doublewrite=1",
    "innodb_log_file_size=8M",
];
/// MariaDB writing its redo log at commit and flushing it about once a second.
pub const MARIADB_LAZY: &[&str] = &[
    "innodb_flush_log_at_trx_commit=2",
    "innodb_doublewrite=1",
    "innodb_log_file_size=8M",
];

fn io_err(e: EngineError) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

fn options(settings: &[&str]) -> StartOptions {
    StartOptions {
        buffer_pool: 32 << 20,
        max_connections: 10,
        settings: settings.iter().map(|s| s.to_string()).collect(),
    }
}

/// The server's tools, or what to install (for the workload's availability).
pub fn available(engine: DbEngine) -> Result<(), Unavailable> {
    server_tools(engine).map(drop)
}

/// An instance whose socket folder's removal is recorded in the run's undo log while it
/// exists; removed (and the record dropped) when it goes.
struct Socketed<'a> {
    db: Instance<'a>,
    env: &'a AppEnv<'a>,
    step: RemoveDir,
}

impl<'a> Socketed<'a> {
    fn new(db: Instance<'a>, env: &'a AppEnv<'a>) -> Self {
        let step = RemoveDir {
            path: db.socket_dir().to_path_buf(),
            recursive: true,
        };
        if let Some(u) = env.undo {
            u.push(&step);
        }
        Socketed { db, env, step }
    }
}

impl Drop for Socketed<'_> {
    fn drop(&mut self) {
        if std::fs::remove_dir_all(self.db.socket_dir()).is_ok() {
            if let Some(u) = self.env.undo {
                u.pop(&self.step);
            }
        }
    }
}

fn table_sql(engine: DbEngine) -> &'static str {
    match engine {
        DbEngine::Mariadb => "CREATE DATABASE fsbench; CREATE TABLE fsbench.t (txn INT NOT NULL, k INT NOT NULL, pad VARCHAR(2000) NOT NULL, PRIMARY KEY (txn, k)) ENGINE=InnoDB",
        _ => "CREATE EXTENSION amcheck; CREATE TABLE t (txn INT NOT NULL, k INT NOT NULL, pad TEXT NOT NULL, PRIMARY KEY (txn, k))",
    }
}

/// Initialises the data directory in `dir`, makes the table and stops the server cleanly.
pub fn setup(dir: &Path, env: &AppEnv, engine: DbEngine, settings: &[&str]) -> std::io::Result<()> {
    let tools = server_tools(engine).map_err(|u| std::io::Error::other(u.to_string()))?;
    let db = Instance::create(tools, (dir, env.scratch), env.interrupt, env.undo).map_err(io_err)?;
    let s = Socketed::new(db, env);
    let o = options(settings);
    s.db.init_with(&o.settings).map_err(io_err)?;
    let mut p = s.db.start(&o).map_err(io_err)?;
    s.db.sql(table_sql(engine), "table.log").map_err(io_err)?;
    p.stop().map_err(|e| std::io::Error::other(e.to_string()))
}

/// The SQL of transaction `n`, then the line that asks for its acknowledgement.
fn txn_sql(n: u32) -> String {
    let rows: Vec<String> = (1..=ROWS).map(|k| format!("({n}, {k}, repeat('x', {PAD}))")).collect();
    format!(
        "BEGIN; INSERT INTO t VALUES {}; COMMIT; SELECT 'ack {n}';",
        rows.join(", ")
    )
}

/// Feeds the transactions to `db`'s SQL client and calls `ack` as each `ack N` comes back.
fn feed(db: &Instance, engine: DbEngine, ack: &mut Ack) -> std::io::Result<()> {
    let prologue = if engine == DbEngine::Mariadb {
        "USE fsbench;"
    } else {
        ""
    };
    super::feed_acked(db.sql_client(), "the SQL client", prologue, txn_sql, ack)
}

/// The recorded protocol (module doc): start, the acknowledged transactions, a clean stop.
pub fn act(dir: &Path, env: &AppEnv, engine: DbEngine, settings: &[&str], ack: &mut Ack) -> std::io::Result<()> {
    let tools = server_tools(engine).map_err(|u| std::io::Error::other(u.to_string()))?;
    let db = Instance::open(tools, (dir, env.scratch), env.interrupt, env.undo).map_err(io_err)?;
    let s = Socketed::new(db, env);
    let mut p = s.db.start(&options(settings)).map_err(io_err)?;
    feed(&s.db, engine, ack)?;
    p.stop().map_err(|e| std::io::Error::other(e.to_string()))
}

/// The server's own check on the recovered copy (module doc); `Err` is what it said.
fn own_check(db: &Instance, engine: DbEngine) -> Result<(), String> {
    match engine {
        DbEngine::Mariadb => {
            let out = db
                .sql("CHECK TABLE fsbench.t", "check.log")
                .map_err(|e| e.to_string())?;
            let last = out.lines().last().unwrap_or_default();
            if last.split('\t').next_back() != Some("OK") {
                return Err(format!("CHECK TABLE: {}", out.trim().replace('\n', " / ")));
            }
            Ok(())
        }
        _ => {
            db.sql("SELECT bt_index_check('t_pkey', true)", "check.log")
                .map_err(|e| format!("bt_index_check: {e}"))?;
            let out = db
                .sql("SELECT count(*) FROM verify_heapam('t')", "check.log")
                .map_err(|e| format!("verify_heapam: {e}"))?;
            match out.trim() {
                "0" => Ok(()),
                n => Err(format!("verify_heapam found {n} problems in t")),
            }
        }
    }
}

/// Whole transactions 1..=j (each [`ROWS`] rows of [`PAD`] bytes) from the lines
/// `txn rows bytes`, or what is wrong with them.
fn whole_prefix(out: &str) -> Result<u32, String> {
    let mut present = Vec::new();
    for l in out.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<u64> = l.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        match f[..] {
            [t, c, b] => present.push((t, c, b)),
            _ => return Err(format!("unexpected row `{l}`")),
        }
    }
    let whole = present
        .iter()
        .enumerate()
        .all(|(i, &(t, c, b))| t == i as u64 + 1 && c == ROWS as u64 && b == (ROWS * PAD) as u64);
    if !whole {
        return Err(format!(
            "rows are not whole transactions 1..=j: {present:?} (transaction, rows, pad bytes)"
        ));
    }
    Ok(present.len() as u32)
}

/// Starts the server on the copy `dir` (its recovery), checks it and counts the transactions
/// (module doc).
pub fn check(dir: &Path, env: &AppEnv, engine: DbEngine, settings: &[&str], acked: &[u32]) -> AppVerdict {
    let _ = std::fs::remove_file(dir.join("db-data/postmaster.pid"));
    let tools = match server_tools(engine) {
        Ok(t) => t,
        Err(u) => return AppVerdict::Corrupt(format!("cannot check: {u}")),
    };
    // The socket folder in the copy (removed with it), or under the temporary directory.
    let db = match Instance::open(tools, (dir, dir), env.interrupt, env.undo) {
        Ok(db) => db,
        Err(e) => return AppVerdict::Corrupt(format!("no data directory: {e}")),
    };
    let s = Socketed::new(db, env);
    let mut p: ServerProcess = match s.db.start(&options(settings)) {
        Ok(p) => p,
        Err(e) => return AppVerdict::Corrupt(format!("the server did not start: {e}")),
    };
    let verdict = judge(&s.db, engine, acked);
    if let Err(e) = p.stop() {
        eprintln!("fsbench: {e}");
    }
    verdict
}

fn judge(db: &Instance, engine: DbEngine, acked: &[u32]) -> AppVerdict {
    if let Err(e) = own_check(db, engine) {
        return AppVerdict::Corrupt(e);
    }
    let table = if engine == DbEngine::Mariadb { "fsbench.t" } else { "t" };
    let sql = format!("SELECT concat_ws(' ', txn, count(*), sum(length(pad))) FROM {table} GROUP BY txn ORDER BY txn");
    let out = match db.sql(&sql, "count.log") {
        Ok(o) => o,
        Err(e) => return AppVerdict::Corrupt(format!("count the rows: {e}")),
    };
    let j = match whole_prefix(&out) {
        Ok(j) => j,
        Err(e) => return AppVerdict::Corrupt(e),
    };
    match acked.iter().copied().max() {
        Some(a) if a > j => AppVerdict::Lost(format!(
            "transactions 1..={j} of {TXNS} present; {a} were acknowledged before the crash"
        )),
        _ => AppVerdict::Holds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn whole_transactions_are_a_prefix_of_full_rows() {
        assert_eq!(whole_prefix("1 3 4500\n2 3 4500\n"), Ok(2));
        assert_eq!(whole_prefix(""), Ok(0));
        assert!(whole_prefix("1 3 4500\n3 3 4500\n").is_err(), "a gap");
        assert!(whole_prefix("1 2 3000\n").is_err(), "half a transaction");
        assert!(whole_prefix("1 3 4499\n").is_err(), "a short pad");
        assert!(whole_prefix("1|3|4500\n").is_err(), "not the format");
    }

    /// Runs the protocol in a temporary folder, then breaks the data directory three ways and
    /// expects each checker to say so.
    fn broken_copies_are_reported(engine: DbEngine, settings: &[&str], delete: &str, file_sql: Option<&str>) {
        if let Err(why) = available(engine) {
            panic!("{why}");
        }
        let scratch = tempfile::Builder::new().prefix("fsb-cs").tempdir_in("/tmp").unwrap();
        std::fs::set_permissions(scratch.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let dir = scratch.path().join("app");
        std::fs::create_dir(&dir).unwrap();
        let stop = AtomicBool::new(false);
        let env = AppEnv {
            scratch: scratch.path(),
            interrupt: &stop,
            undo: None,
        };
        setup(&dir, &env, engine, settings).unwrap();
        let mut acks = Vec::new();
        act(&dir, &env, engine, settings, &mut |n| {
            acks.push(n);
            Ok(())
        })
        .unwrap();
        assert_eq!(acks, vec![1, 2, 3, 4]);
        assert_eq!(check(&dir, &env, engine, settings, &acks), AppVerdict::Holds);
        // Transaction 4's rows deleted: acknowledged, missing.
        let tools = server_tools(engine).unwrap();
        let db = Instance::open(tools, (&dir, scratch.path()), &stop, None).unwrap();
        let s = Socketed::new(db, &env);
        let mut p = s.db.start(&options(settings)).unwrap();
        s.db.sql(delete, "delete.log").unwrap();
        // The table's file: PostgreSQL's from the catalogue, InnoDB's own tablespace; a page
        // past the first (PostgreSQL's pages are 8 KiB, InnoDB's 16 KiB with the root at 3).
        let (table_file, at) = match file_sql {
            Some(q) => (s.db.sql(q, "file.log").unwrap().trim().to_string(), 8192),
            None => ("fsbench/t.ibd".to_string(), 3 * 16384),
        };
        p.stop().unwrap();
        drop(s);
        let v = check(&dir, &env, engine, settings, &acks);
        assert!(matches!(&v, AppVerdict::Lost(m) if m.contains("1..=3")), "{v:?}");
        assert_eq!(check(&dir, &env, engine, settings, &[1, 2, 3]), AppVerdict::Holds);
        // The table's file overwritten with garbage past its first page.
        let f = dir.join("db-data").join(table_file);
        let file = std::fs::OpenOptions::new().write(true).open(&f).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&file, &[0x5a; 16384], at).unwrap();
        drop(file);
        let v = check(&dir, &env, engine, settings, &[1, 2, 3]);
        assert!(matches!(&v, AppVerdict::Corrupt(_)), "{v:?}");
        // The control file / system tablespace header zeroed: the server refuses to start.
        let control = dir.join("db-data").join(match engine {
            DbEngine::Mariadb => "ibdata1",
            _ => "global/pg_control",
        });
        let file = std::fs::OpenOptions::new().write(true).open(&control).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&file, &[0; 8192], 0).unwrap();
        drop(file);
        let v = check(&dir, &env, engine, settings, &[]);
        assert!(
            matches!(&v, AppVerdict::Corrupt(m) if m.contains("did not start")),
            "{v:?}"
        );
        // The data directory gone.
        std::fs::remove_dir_all(dir.join("db-data")).unwrap();
        let v = check(&dir, &env, engine, settings, &[]);
        assert!(matches!(&v, AppVerdict::Corrupt(_)), "{v:?}");
    }

    #[test]
    fn postgresql_check_reports_a_lost_transaction_and_a_corrupt_table() {
        broken_copies_are_reported(
            DbEngine::Postgresql,
            PG_DURABLE,
            "DELETE FROM t WHERE txn = 4",
            Some("SELECT pg_relation_filepath('t')"),
        );
    }

    #[test]
    fn mariadb_check_reports_a_lost_transaction_and_a_corrupt_table() {
        broken_copies_are_reported(
            DbEngine::Mariadb,
            MARIADB_DURABLE,
            "DELETE FROM fsbench.t WHERE txn = 4",
            None,
        );
    }
}
