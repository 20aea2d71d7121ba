//! OLTP on SQLite: the database file `oltp.db` (and its `-wal`/`-shm` or `-journal`) in the run
//! directory on the filesystem under test, one `rusqlite` connection per worker.
//!
//! Load (untimed, one connection): `PRAGMA journal_mode` (persistent for WAL), the tables
//! filled in one transaction each through a prepared INSERT, then `CREATE INDEX k_N`, then a
//! WAL checkpoint (TRUNCATE) so the timed phase starts with an empty log.
//!
//! Timed phase: each worker opens its connection (untimed, before the start barrier), sets
//! `PRAGMA synchronous` and `busy_timeout`, and runs one transaction per pool operation (so the
//! latency histogram holds transaction latencies). `read_write` transactions start with
//! `BEGIN IMMEDIATE`: SQLite allows one writer, and taking the write lock up front makes a
//! waiting writer queue in the busy handler instead of failing to upgrade a read lock. When a
//! statement still returns SQLITE_BUSY or SQLITE_LOCKED (the busy timeout expired, or a WAL
//! snapshot went stale), the transaction is rolled back, counted in `busy_retries` and run
//! again; the retried time stays in that transaction's latency.
//!
//! Statements are prepared once per connection (`prepare_cached`, sized to hold all of them);
//! column values are read by reference and strings are generated into fixed buffers, so the
//! per-transaction work in fsbench allocates nothing of its own (SQLite's allocator is its own).

use super::{fill_digits, OltpMode, OltpSpec, RandType, C_LEN, PAD_LEN};
use crate::metric::{MetricId, RawSample, Unit};
use crate::openloop;
use crate::phase::{LatencySet, Phases, Policy};
use crate::pool::{PoolRun, Step, Worker, WorkerPool};
use crate::{EngineError, RunContext};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rusqlite::{params, Connection, ErrorCode, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// File name of the database in the run directory.
pub const DB_FILE: &str = "oltp.db";
/// Consecutive busy retries of one transaction after which the run fails.
const MAX_RETRIES: u32 = 10_000;

/// The SQL of every statement for one table.
struct TableSql {
    point: String,
    simple: String,
    sum: String,
    order: String,
    distinct: String,
    index_update: String,
    non_index_update: String,
    delete: String,
    insert: String,
}

impl TableSql {
    fn new(t: u32) -> TableSql {
        TableSql {
            point: format!("SELECT c FROM sbtest{t} WHERE id=?1"),
            simple: format!("SELECT c FROM sbtest{t} WHERE id BETWEEN ?1 AND ?2"),
            sum: format!("SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN ?1 AND ?2"),
            order: format!("SELECT c FROM sbtest{t} WHERE id BETWEEN ?1 AND ?2 ORDER BY c"),
            distinct: format!("SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN ?1 AND ?2 ORDER BY c"),
            index_update: format!("UPDATE sbtest{t} SET k=k+1 WHERE id=?1"),
            non_index_update: format!("UPDATE sbtest{t} SET c=?1 WHERE id=?2"),
            delete: format!("DELETE FROM sbtest{t} WHERE id=?1"),
            insert: format!("INSERT INTO sbtest{t} (id, k, c, pad) VALUES (?1, ?2, ?3, ?4)"),
        }
    }
}

fn db_err(what: impl Into<String>, e: rusqlite::Error) -> EngineError {
    EngineError::io(what, std::io::Error::other(e))
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked)
    )
}

/// The database path and its companion files, removed after the run.
fn db_files(dir: &Path) -> [PathBuf; 4] {
    let db = dir.join(DB_FILE);
    let with = |s: &str| {
        let mut p = db.clone().into_os_string();
        p.push(s);
        PathBuf::from(p)
    };
    [with("-wal"), with("-shm"), with("-journal"), db]
}

fn remove_db(dir: &Path) -> Result<(), EngineError> {
    let mut first = None;
    for p in db_files(dir) {
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                first.get_or_insert(EngineError::io(format!("unlink {}", p.display()), e));
            }
        }
    }
    first.map_or(Ok(()), Err)
}

/// Loads, runs the timed phase, removes the database (also on error or interrupt).
pub fn run(spec: &OltpSpec, ctx: &RunContext) -> Result<RawSample, EngineError> {
    let result = load(spec, ctx.dir, ctx.interrupt).and_then(|()| timed(spec, ctx));
    let removed = remove_db(ctx.dir);
    let sample = result?;
    removed.map(|()| sample)
}

fn open(path: &Path) -> Result<Connection, EngineError> {
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| db_err(format!("open {}", path.display()), e))
}

fn load(spec: &OltpSpec, dir: &Path, interrupt: &AtomicBool) -> Result<(), EngineError> {
    let path = dir.join(DB_FILE);
    let what = |step: &str| format!("{step} ({})", path.display());
    let conn = open(&path)?;
    let mode: String = conn
        .query_row(&format!("PRAGMA journal_mode={}", spec.journal_mode.name()), [], |r| {
            r.get(0)
        })
        .map_err(|e| db_err(what("PRAGMA journal_mode"), e))?;
    if !mode.eq_ignore_ascii_case(spec.journal_mode.name()) {
        return Err(EngineError::Invalid(format!(
            "SQLite refused journal_mode={} on {} (got {mode})",
            spec.journal_mode.name(),
            path.display()
        )));
    }
    conn.pragma_update(None, "synchronous", spec.synchronous.name())
        .map_err(|e| db_err(what("PRAGMA synchronous"), e))?;
    let mut rng = SmallRng::seed_from_u64(spec.seed ^ 0x0171_7e57);
    let (mut c, mut pad) = ([0u8; C_LEN], [0u8; PAD_LEN]);
    let mut step = crate::progress::step(
        format!("SQLite load ({} × {} rows)", spec.tables, spec.rows),
        Some(u64::from(spec.tables) * spec.rows),
        "rows",
    );
    for t in 1..=spec.tables {
        conn.execute_batch(&format!(
            "CREATE TABLE sbtest{t}(id INTEGER PRIMARY KEY, k INTEGER DEFAULT 0 NOT NULL, \
             c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL)"
        ))
        .map_err(|e| db_err(what("CREATE TABLE"), e))?;
        let tx = conn.unchecked_transaction().map_err(|e| db_err(what("BEGIN"), e))?;
        {
            let mut ins = tx
                .prepare(&format!("INSERT INTO sbtest{t}(id, k, c, pad) VALUES (?1, ?2, ?3, ?4)"))
                .map_err(|e| db_err(what("prepare INSERT"), e))?;
            for id in 1..=spec.rows {
                if id % 4096 == 0 {
                    if interrupt.load(Ordering::Relaxed) {
                        return Err(EngineError::Interrupted);
                    }
                    step.set(u64::from(t - 1) * spec.rows + id);
                }
                fill_digits(&mut rng, &mut c);
                fill_digits(&mut rng, &mut pad);
                let k = spec.rand_type.sample(&mut rng, 1, spec.rows);
                ins.execute(params![id as i64, k as i64, ascii(&c), ascii(&pad)])
                    .map_err(|e| db_err(what("INSERT"), e))?;
            }
        }
        tx.commit().map_err(|e| db_err(what("COMMIT"), e))?;
        conn.execute_batch(&format!("CREATE INDEX k_{t} ON sbtest{t}(k)"))
            .map_err(|e| db_err(what("CREATE INDEX"), e))?;
    }
    if spec.journal_mode.name() == "wal" {
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(|e| db_err(what("wal_checkpoint"), e))?;
    }
    conn.close().map_err(|(_, e)| db_err(what("close"), e))?;
    step.set(u64::from(spec.tables) * spec.rows);
    step.finish();
    Ok(())
}

/// The generated digits as &str (they are ASCII by construction).
#[inline]
fn ascii(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or("")
}

fn timed(spec: &OltpSpec, ctx: &RunContext) -> Result<RawSample, EngineError> {
    let path = ctx.dir.join(DB_FILE);
    let workers = || -> Result<Vec<TxnWorker>, EngineError> {
        (0..spec.threads)
            .map(|i| TxnWorker::new(spec, &path, i, ctx.interrupt))
            .collect()
    };
    let mut phases = Phases::new(ctx);
    let phase = spec.phase();
    // The mean first (a headline of sysbench's report), then every percentile.
    let policy = Policy::new().latency(LatencySet::Full);
    let headline = |run: &PoolRun<u64>, wall: Duration| {
        let secs = wall.as_secs_f64().max(1e-9);
        let retries: u64 = run.outputs.iter().sum();
        let mut metrics = vec![
            (MetricId::higher("tps", Unit::OpsPerSec), run.ops as f64 / secs),
            (
                MetricId::higher("qps", Unit::OpsPerSec),
                (run.ops * spec.mode.queries_per_txn()) as f64 / secs,
            ),
            (MetricId::lower("busy_retries", Unit::Count), retries as f64),
        ];
        if run.latency.count() > 0 {
            metrics.push((MetricId::latency("lat_avg"), run.latency.mean_us()));
        }
        Ok(metrics)
    };
    if spec.open_loop.as_ref().is_none_or(openloop::OpenLoopSpec::keeps_closed) {
        phases.begin(phase, policy.caches);
        let t = phases.pool(WorkerPool::with_deadline(spec.time.0), workers()?)?;
        if t.value.ops < 10 {
            phases.note(format!(
                "oltp {phase}: only {} transaction(s) completed: raise time",
                t.value.ops
            ));
        }
        let metrics = headline(&t.value, t.wall)?;
        phases.record(phase, &t, metrics, &policy);
    }
    if let Some(open) = &spec.open_loop {
        openloop::run_phases(
            &mut phases,
            open,
            phase,
            spec.time.0,
            spec.seed,
            false,
            &policy,
            workers,
            headline,
        )?;
    }
    phases.note(format!(
        "sqlite {} (bundled), journal_mode={}, synchronous={}",
        rusqlite::version(),
        spec.journal_mode.name(),
        spec.synchronous.name()
    ));
    Ok(phases.finish())
}

/// One connection running transactions.
struct TxnWorker<'a> {
    conn: Connection,
    sql: Vec<TableSql>,
    begin: &'static str,
    mode: OltpMode,
    dist: RandType,
    rows: u64,
    range: u64,
    rng: SmallRng,
    c: [u8; C_LEN],
    pad: [u8; PAD_LEN],
    retries: u64,
    interrupt: &'a AtomicBool,
}

impl<'a> TxnWorker<'a> {
    fn new(spec: &OltpSpec, path: &Path, index: u32, interrupt: &'a AtomicBool) -> Result<TxnWorker<'a>, EngineError> {
        let conn = open(path)?;
        let what = |step: &str| format!("{step} ({})", path.display());
        conn.pragma_update(None, "synchronous", spec.synchronous.name())
            .map_err(|e| db_err(what("PRAGMA synchronous"), e))?;
        conn.busy_timeout(spec.busy_timeout.0)
            .map_err(|e| db_err(what("busy_timeout"), e))?;
        conn.set_prepared_statement_cache_capacity(spec.tables as usize * 9 + 8);
        let sql: Vec<TableSql> = (1..=spec.tables).map(TableSql::new).collect();
        let begin = match spec.mode {
            OltpMode::ReadOnly => "BEGIN",
            OltpMode::ReadWrite => "BEGIN IMMEDIATE",
        };
        // Prepare every statement now, outside the timed region.
        for s in &sql {
            for q in [
                &s.point,
                &s.simple,
                &s.sum,
                &s.order,
                &s.distinct,
                &s.index_update,
                &s.non_index_update,
                &s.delete,
                &s.insert,
            ] {
                conn.prepare_cached(q).map_err(|e| db_err(what("prepare"), e))?;
            }
        }
        for q in [begin, "COMMIT", "ROLLBACK"] {
            conn.prepare_cached(q).map_err(|e| db_err(what("prepare"), e))?;
        }
        Ok(TxnWorker {
            conn,
            sql,
            begin,
            mode: spec.mode,
            dist: spec.rand_type,
            rows: spec.rows,
            range: spec.range_size,
            rng: SmallRng::seed_from_u64(
                spec.seed
                    .wrapping_add(u64::from(index) + 1)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ),
            c: [0; C_LEN],
            pad: [0; PAD_LEN],
            retries: 0,
            interrupt,
        })
    }

    #[inline]
    fn id(&mut self) -> i64 {
        self.dist.sample(&mut self.rng, 1, self.rows) as i64
    }

    #[inline]
    fn table(&mut self) -> usize {
        self.rng.gen_range(0..self.sql.len())
    }

    /// Runs a select and reads every row's first column by reference.
    fn select(&self, sql: &str, a: i64, b: Option<i64>) -> rusqlite::Result<usize> {
        let mut st = self.conn.prepare_cached(sql)?;
        let mut rows = match b {
            Some(b) => st.query(params![a, b])?,
            None => st.query(params![a])?,
        };
        let mut n = 0;
        while let Some(r) = rows.next()? {
            n += std::hint::black_box(r.get_ref(0)?).as_bytes().map_or(8, <[u8]>::len);
        }
        Ok(n)
    }

    fn exec(&self, sql: &str, p: &[&dyn rusqlite::ToSql]) -> rusqlite::Result<usize> {
        self.conn.prepare_cached(sql)?.execute(p)
    }

    /// One transaction; an error leaves it open (the caller rolls back).
    fn transaction(&mut self) -> rusqlite::Result<()> {
        self.exec(self.begin, &[])?;
        let t = self.table();
        for _ in 0..10 {
            let id = self.id();
            self.select(&self.sql[t].point, id, None)?;
        }
        for kind in 0..4 {
            let t = self.table();
            let a = self.id();
            let b = a + self.range as i64 - 1;
            let s = &self.sql[t];
            let q = match kind {
                0 => &s.simple,
                1 => &s.sum,
                2 => &s.order,
                _ => &s.distinct,
            };
            self.select(q, a, Some(b))?;
        }
        if self.mode == OltpMode::ReadWrite {
            let t = self.table();
            let id = self.id();
            self.exec(&self.sql[t].index_update, &[&id])?;
            let t = self.table();
            let id = self.id();
            fill_digits(&mut self.rng, &mut self.c);
            self.exec(&self.sql[t].non_index_update, &[&ascii(&self.c), &id])?;
            let t = self.table();
            let (id, k) = (self.id(), self.id());
            fill_digits(&mut self.rng, &mut self.c);
            fill_digits(&mut self.rng, &mut self.pad);
            self.exec(&self.sql[t].delete, &[&id])?;
            self.exec(&self.sql[t].insert, &[&id, &k, &ascii(&self.c), &ascii(&self.pad)])?;
        }
        self.exec("COMMIT", &[])?;
        Ok(())
    }
}

impl Worker for TxnWorker<'_> {
    type Output = u64;

    fn op(&mut self) -> Result<Step, EngineError> {
        let mut attempts = 0u32;
        loop {
            match self.transaction() {
                Ok(()) => return Ok(Step::Op),
                Err(e) if is_busy(&e) => {
                    if !self.conn.is_autocommit() {
                        let _ = self.exec("ROLLBACK", &[]);
                    }
                    self.retries += 1;
                    attempts += 1;
                    if self.interrupt.load(Ordering::Relaxed) {
                        return Err(EngineError::Interrupted);
                    }
                    if attempts >= MAX_RETRIES {
                        return Err(db_err(format!("transaction still busy after {attempts} retries"), e));
                    }
                    std::thread::sleep(Duration::from_micros(100));
                }
                Err(e) => return Err(db_err("OLTP transaction", e)),
            }
        }
    }

    fn finish(self) -> u64 {
        self.retries
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Dur;
    use crate::workloads::oltp::{JournalMode, Synchronous};

    fn metric(s: &RawSample, name: &str) -> f64 {
        s.phases[0]
            .metrics
            .iter()
            .find(|(m, _)| m.name == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no {name}"))
    }

    fn small(mode: OltpMode, threads: u32) -> OltpSpec {
        OltpSpec {
            mode,
            tables: 2,
            rows: 2000,
            threads,
            time: Dur(Duration::from_millis(400)),
            synchronous: Synchronous::Off,
            ..OltpSpec::default()
        }
    }

    #[test]
    fn load_builds_sysbench_tables() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let spec = small(OltpMode::ReadOnly, 1);
        load(&spec, tmp.path(), &flag).expect("load");
        let conn = Connection::open(tmp.path().join(DB_FILE)).expect("open");
        for t in 1..=2 {
            let (n, min, max): (i64, i64, i64) = conn
                .query_row(&format!("SELECT COUNT(*), MIN(id), MAX(id) FROM sbtest{t}"), [], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .expect("count");
            assert_eq!((n, min, max), (2000, 1, 2000));
            let c: String = conn
                .query_row(&format!("SELECT c FROM sbtest{t} WHERE id=7"), [], |r| r.get(0))
                .expect("c");
            assert_eq!(c.len(), C_LEN);
            let idx: i64 = conn
                .query_row(
                    "SELECT COUNT(*) FROM sqlite_master WHERE type='index' AND name=?1",
                    [format!("k_{t}")],
                    |r| r.get(0),
                )
                .expect("index");
            assert_eq!(idx, 1);
        }
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).expect("mode");
        assert_eq!(mode, "wal");
        drop(conn);
        remove_db(tmp.path()).expect("remove");
    }

    #[test]
    fn read_write_keeps_row_count_and_reports_tps_and_qps() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        for (mode, threads) in [(OltpMode::ReadWrite, 3), (OltpMode::ReadOnly, 2)] {
            let spec = small(mode, threads);
            load(&spec, tmp.path(), &flag).expect("load");
            let ctx = RunContext::quiet(tmp.path(), &flag);
            let sum_k = |dir: &Path| -> i64 {
                let conn = Connection::open(dir.join(DB_FILE)).expect("open");
                conn.query_row("SELECT SUM(k) FROM sbtest1", [], |r| r.get(0))
                    .expect("sum")
            };
            let before = sum_k(tmp.path());
            // Counted on the database side: triggers (part of the schema, so they fire for the
            // workload's own connections, and roll back with a retried transaction) count the
            // committed index updates, non-index updates, deletes and inserts of every table.
            let conn = Connection::open(tmp.path().join(DB_FILE)).expect("open");
            let mut ddl = String::from("CREATE TABLE counts(what TEXT PRIMARY KEY, n INTEGER);");
            for what in ["k", "c", "del", "ins"] {
                ddl += &format!("INSERT INTO counts VALUES ('{what}', 0);");
            }
            for t in 1..=2 {
                for (what, event) in [
                    ("k", "UPDATE OF k"),
                    ("c", "UPDATE OF c"),
                    ("del", "DELETE"),
                    ("ins", "INSERT"),
                ] {
                    ddl += &format!(
                        "CREATE TRIGGER count_{what}_{t} AFTER {event} ON sbtest{t} BEGIN UPDATE counts SET n = n + 1 WHERE what = '{what}'; END;"
                    );
                }
            }
            conn.execute_batch(&ddl).expect("counting triggers");
            drop(conn);
            let s = timed(&spec, &ctx).expect("timed");
            let tps = metric(&s, "tps");
            assert!(tps > 0.0, "{mode:?}");
            let conn = Connection::open(tmp.path().join(DB_FILE)).expect("open");
            let count = |what: &str| -> f64 {
                conn.query_row("SELECT n FROM counts WHERE what = ?1", [what], |r| r.get::<_, i64>(0))
                    .expect("count") as f64
            };
            let txns = tps * s.phases[0].wall.as_secs_f64();
            if mode == OltpMode::ReadWrite {
                // One of each write per committed transaction (oltp.rs's table).
                for what in ["k", "c", "del", "ins"] {
                    let n = count(what);
                    assert!((n - txns).abs() < 0.5, "{what}: {n} by the database, {txns} by fsbench");
                }
            } else {
                for what in ["k", "c", "del", "ins"] {
                    assert_eq!(count(what), 0.0, "read_only wrote ({what})");
                }
            }
            drop(conn);
            let wall = s.phases[0].wall;
            assert!(
                wall >= Duration::from_millis(400) && wall < Duration::from_secs(30),
                "{wall:?}"
            );
            assert!(metric(&s, "lat_p50") > 0.0 && metric(&s, "lat_max") >= metric(&s, "lat_p99"));
            assert!(metric(&s, "busy_retries") >= 0.0);
            assert!(s.notes.iter().any(|n| n.starts_with("sqlite 3.")), "{:?}", s.notes);
            // Delete + insert of the same id: the tables keep their rows.
            let conn = Connection::open(tmp.path().join(DB_FILE)).expect("open");
            for t in 1..=2 {
                let n: i64 = conn
                    .query_row(&format!("SELECT COUNT(*) FROM sbtest{t}"), [], |r| r.get(0))
                    .expect("count");
                assert_eq!(n, 2000);
            }
            drop(conn);
            // Updates and re-inserts change k in read_write only.
            assert_eq!(sum_k(tmp.path()) != before, mode == OltpMode::ReadWrite, "{mode:?}");
            remove_db(tmp.path()).expect("remove");
        }
    }

    #[test]
    fn whole_run_with_rollback_journal_cleans_up() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let spec = OltpSpec {
            journal_mode: JournalMode::Delete,
            synchronous: Synchronous::Normal,
            ..small(OltpMode::ReadWrite, 2)
        };
        let s = crate::run_quiet(&spec, tmp.path(), &flag).expect("run");
        assert_eq!(s.phases[0].phase, "oltp_read_write");
        assert!(metric(&s, "tps") > 0.0);
        assert!(
            std::fs::read_dir(tmp.path()).expect("dir").next().is_none(),
            "files left"
        );
    }

    #[test]
    fn interrupt_during_the_load_or_run_returns_interrupted() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(true);
        let spec = small(OltpMode::ReadOnly, 1);
        assert!(matches!(
            crate::run_quiet(&spec, tmp.path(), &flag),
            Err(EngineError::Interrupted)
        ));
        let long = OltpSpec {
            time: Dur(Duration::from_secs(600)),
            ..small(OltpMode::ReadWrite, 2)
        };
        let t0 = std::time::Instant::now();
        let r = crate::run_interrupted_after(&long, tmp.path(), Duration::from_millis(500));
        assert!(matches!(r, Err(EngineError::Interrupted)), "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(30));
        assert!(
            std::fs::read_dir(tmp.path()).expect("dir").next().is_none(),
            "files left"
        );
    }
}
