//! The `oltp` workload: sysbench-style OLTP transactions against a database whose files live on
//! the filesystem under test.
//!
//! Three engines, one transaction shape (sysbench 1.0.20's `oltp_read_only` and
//! `oltp_read_write` scripts, `/usr/share/sysbench/oltp_common.lua`, read to match semantics):
//!
//! - `engine = "sqlite"` (default): run natively through `rusqlite` on the [`WorkerPool`], one
//!   connection per worker ([`sqlite`]);
//! - `engine = "mariadb"` / `"postgresql"`: fsbench initialises a fresh server data directory
//!   on the filesystem under test, starts the server listening only on a unix socket, loads
//!   the tables and runs the load with sysbench (or pgbench for PostgreSQL with
//!   `client = "pgbench"`), parsing their reports ([`server`]). A server runs as its service
//!   user, owning its data directory: on a type that keeps no owners (exfat, ntfs-3g) its
//!   phases are "unsupported" ([`Workload::needs`]; PostgreSQL's initdb refuses a data
//!   directory it does not own, measured on ntfs-3g, and exfat refuses the chown).
//!
//! The schema: `tables` tables `sbtest1` … of `rows` rows `(id INTEGER PRIMARY KEY, k INTEGER,
//! c CHAR(120), pad CHAR(60))` with a secondary index on `k` built after the rows are inserted;
//! `c` and `pad` are groups of 11 random digits joined by `-` (119 and 59 characters), `k` is a
//! random id. Loading is untimed. One transaction:
//!
//! | statement (table chosen uniformly per group) | read_only | read_write |
//! |---|---|---|
//! | `BEGIN` | 1 | 1 |
//! | point select `SELECT c … WHERE id=?` | 10 | 10 |
//! | simple range `SELECT c … WHERE id BETWEEN ? AND ?` | 1 | 1 |
//! | sum range `SELECT SUM(k) …` | 1 | 1 |
//! | order range `… ORDER BY c` | 1 | 1 |
//! | distinct range `SELECT DISTINCT c … ORDER BY c` | 1 | 1 |
//! | index update `UPDATE … SET k=k+1 WHERE id=?` | | 1 |
//! | non-index update `UPDATE … SET c=? WHERE id=?` | | 1 |
//! | `DELETE … WHERE id=?` then `INSERT` of the same id | | 1 + 1 |
//! | `COMMIT` | 1 | 1 |
//!
//! Ranges span `range_size` ids (default 100). Ids are drawn with sysbench's default `special`
//! distribution (`rand_type`), or uniformly. `qps` counts BEGIN and COMMIT as sysbench does (16
//! queries per read-only and 20 per read-write transaction).
//!
//! Metrics of the one phase (`oltp_read_only` / `oltp_read_write`; `pgbench_tpcb` /
//! `pgbench_select_only` with pgbench): `tps`, `qps` (ops/s, higher is better), latency in µs
//! (`lat_avg`, and `lat_p50` … `lat_max` from the histogram for SQLite, `lat_p95`/`lat_max`
//! from sysbench), plus `busy_retries` (SQLite) or `ignored_errors` (sysbench: deadlocks it
//! retried) as counts. CPU: for servers `cpu_process` includes the server's and the client's
//! processes (see [`server`]).

use crate::metric::RawSample;
use crate::units::{Bytes, Dur};
use crate::{EngineError, RunContext, Workload, WorkloadKind};
use crate::{Invalid, Unavailable};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[path = "oltp/pgshm.rs"]
pub mod pgshm;
#[path = "oltp/server.rs"]
pub mod server;
#[path = "oltp/sqlite.rs"]
pub mod sqlite;

/// Shortest `time` that `--scale` produces.
const MIN_SCALED_TIME: Duration = Duration::from_secs(2);
/// Fewest rows per table that `--scale` produces.
const MIN_SCALED_ROWS: u64 = 1000;
/// Most tables.
const MAX_TABLES: u32 = 1000;
/// Most client threads.
const MAX_THREADS: u32 = 1024;

/// Where the tables live.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DbEngine {
    /// SQLite through rusqlite, in this process (the database file on the filesystem under test).
    #[default]
    Sqlite,
    /// A MariaDB (or MySQL) server fsbench starts, driven by sysbench.
    Mariadb,
    /// A PostgreSQL server fsbench starts, driven by sysbench (or pgbench).
    Postgresql,
}

impl DbEngine {
    /// The name as written in suite files.
    pub fn name(self) -> &'static str {
        match self {
            DbEngine::Sqlite => "sqlite",
            DbEngine::Mariadb => "mariadb",
            DbEngine::Postgresql => "postgresql",
        }
    }
}

/// Which transaction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OltpMode {
    /// sysbench `oltp_read_only`: 14 selects per transaction.
    ReadOnly,
    /// sysbench `oltp_read_write`: 14 selects, 2 updates, a delete and an insert (the default:
    /// it is the one that writes to the filesystem).
    #[default]
    ReadWrite,
}

impl OltpMode {
    /// sysbench's script name, also the phase name (`oltp_read_write`).
    pub fn script(self) -> &'static str {
        match self {
            OltpMode::ReadOnly => "oltp_read_only",
            OltpMode::ReadWrite => "oltp_read_write",
        }
    }

    /// Queries per transaction as sysbench counts them (BEGIN and COMMIT included).
    pub fn queries_per_txn(self) -> u64 {
        match self {
            OltpMode::ReadOnly => 16,
            OltpMode::ReadWrite => 20,
        }
    }
}

/// Distribution of row ids (sysbench `--rand-type`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RandType {
    /// sysbench 1.0's default: 75 % of the ids fall uniformly in the middle 1 % of the range,
    /// the rest follow a bell curve over the whole range (a hot spot).
    #[default]
    Special,
    /// Every id equally likely.
    Uniform,
}

impl RandType {
    /// The name sysbench's `--rand-type` takes.
    pub fn name(self) -> &'static str {
        match self {
            RandType::Special => "special",
            RandType::Uniform => "uniform",
        }
    }

    /// An id in `[a, b]` (sysbench `sb_rand_special` / `sb_rand_uniform` semantics with the
    /// default `--rand-spec-iter=12 --rand-spec-pct=1 --rand-spec-res=75`).
    #[inline]
    pub fn sample<R: Rng>(self, rng: &mut R, a: u64, b: u64) -> u64 {
        debug_assert!(a <= b);
        let t = (b - a) as f64;
        let v = match self {
            RandType::Uniform => rng.gen::<f64>() * (t + 1.0),
            RandType::Special => {
                let u: f64 = rng.gen();
                // 25 % of draws (u < 0.25): mean of 12 uniforms over the whole range.
                if u * 4.0 < 1.0 {
                    let sum: f64 = (0..12).map(|_| rng.gen::<f64>()).sum();
                    sum * t / 12.0
                } else {
                    // 75 %: uniform in a window of 1 % of the range centred on its middle.
                    let d = t * 0.01;
                    u * (d + 1.0) + t / 2.0 - t * 0.005
                }
            }
        };
        (a + v as u64).min(b)
    }
}

/// SQLite `PRAGMA journal_mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JournalMode {
    /// Write-ahead log (default).
    #[default]
    Wal,
    /// Rollback journal deleted at each commit (SQLite's own default).
    Delete,
    /// Rollback journal truncated at each commit.
    Truncate,
    /// Rollback journal header zeroed at each commit.
    Persist,
}

impl JournalMode {
    /// The pragma value.
    pub fn name(self) -> &'static str {
        match self {
            JournalMode::Wal => "wal",
            JournalMode::Delete => "delete",
            JournalMode::Truncate => "truncate",
            JournalMode::Persist => "persist",
        }
    }
}

/// SQLite `PRAGMA synchronous`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Synchronous {
    /// No fsync at all.
    Off,
    /// fsync at checkpoints only (in WAL mode).
    Normal,
    /// fsync at every commit (default, durable).
    #[default]
    Full,
    /// As full, plus the directory after unlinking a rollback journal.
    Extra,
}

impl Synchronous {
    /// The pragma value.
    pub fn name(self) -> &'static str {
        match self {
            Synchronous::Off => "off",
            Synchronous::Normal => "normal",
            Synchronous::Full => "full",
            Synchronous::Extra => "extra",
        }
    }
}

/// The load generator for a server engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Client {
    /// sysbench's oltp scripts (default; the same transactions on every engine).
    #[default]
    Sysbench,
    /// pgbench (PostgreSQL only): `pgbench -i -s ⌈tables × rows / 100000⌉`, then the TPC-B-like
    /// script for `read_write` or `-S` (select only) for `read_only`.
    Pgbench,
}

/// Parameters of the oltp workload. Keys marked (sqlite) or (server) apply only there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OltpSpec {
    /// `sqlite` (default), `mariadb` or `postgresql`.
    #[serde(default)]
    pub engine: DbEngine,
    /// `read_write` (default) or `read_only`.
    #[serde(default)]
    pub mode: OltpMode,
    /// Number of tables (sysbench `--tables`). Default 1.
    #[serde(default = "default_tables")]
    pub tables: u32,
    /// Rows per table (sysbench `--table-size`). Default 10000.
    #[serde(default = "default_rows")]
    pub rows: u64,
    /// Client connections, one thread each (sysbench `--threads`). Default 1.
    #[serde(default = "default_threads")]
    pub threads: u32,
    /// Length of the timed load (sysbench `--time`). Default 10 s.
    #[serde(default = "default_time")]
    pub time: Dur,
    /// Ids per range select (sysbench `--range_size`). Default 100.
    #[serde(default = "default_range_size")]
    pub range_size: u64,
    /// Id distribution (sysbench `--rand-type`): `special` (default) or `uniform`.
    #[serde(default)]
    pub rand_type: RandType,
    /// (sqlite) `PRAGMA journal_mode`: `wal` (default), `delete`, `truncate`, `persist`.
    #[serde(default)]
    pub journal_mode: JournalMode,
    /// (sqlite) `PRAGMA synchronous`: `full` (default), `normal`, `off`, `extra`.
    #[serde(default)]
    pub synchronous: Synchronous,
    /// (sqlite) How long a connection waits for a lock before SQLITE_BUSY, after which the
    /// transaction is rolled back, counted in `busy_retries`, and retried. Default 10 s.
    #[serde(default = "default_busy_timeout")]
    pub busy_timeout: Dur,
    /// (server) InnoDB buffer pool (MariaDB) or shared_buffers (PostgreSQL). Default 128 MiB.
    #[serde(default = "default_buffer_pool")]
    pub buffer_pool: Bytes,
    /// (postgresql) `sysbench` (default) or `pgbench`.
    #[serde(default)]
    pub client: Client,
    /// Seed of the random ids and strings (sqlite; servers use sysbench's `--rand-seed`, where
    /// 0 means "from the clock"). Default 0.
    #[serde(default)]
    pub seed: u64,
    /// (sqlite) Open loop, as fileio's (`open_loop = { rate = 200 }`, a `sweep`, a latency
    /// `target`; [`crate::openloop`]): transactions started at their intended times,
    /// latency from the intended start, in place of the closed-loop phase. Absent (default):
    /// the closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<crate::openloop::OpenLoopSpec>,
}

fn default_tables() -> u32 {
    1
}
fn default_rows() -> u64 {
    10_000
}
fn default_threads() -> u32 {
    1
}
fn default_time() -> Dur {
    Dur(Duration::from_secs(10))
}
fn default_range_size() -> u64 {
    100
}
fn default_busy_timeout() -> Dur {
    Dur(Duration::from_secs(10))
}
fn default_buffer_pool() -> Bytes {
    Bytes(128 * Bytes::MIB)
}

impl Default for OltpSpec {
    fn default() -> Self {
        OltpSpec {
            engine: DbEngine::default(),
            mode: OltpMode::default(),
            tables: default_tables(),
            rows: default_rows(),
            threads: default_threads(),
            time: default_time(),
            range_size: default_range_size(),
            rand_type: RandType::default(),
            journal_mode: JournalMode::default(),
            synchronous: Synchronous::default(),
            busy_timeout: default_busy_timeout(),
            buffer_pool: default_buffer_pool(),
            client: Client::default(),
            seed: 0,
            open_loop: None,
        }
    }
}

impl OltpSpec {
    /// The name of the one timed phase.
    pub fn phase(&self) -> &'static str {
        match (self.client, self.mode) {
            (Client::Pgbench, OltpMode::ReadWrite) => "pgbench_tpcb",
            (Client::Pgbench, OltpMode::ReadOnly) => "pgbench_select_only",
            (Client::Sysbench, m) => m.script(),
        }
    }

    /// pgbench's scale factor for `tables × rows` (100,000 accounts per scale unit).
    pub fn pgbench_scale(&self) -> u64 {
        (u64::from(self.tables) * self.rows).div_ceil(100_000).max(1)
    }
}

impl Workload for OltpSpec {
    fn needs(&self, _phase: &str) -> &'static [crate::fstype::Feature] {
        match self.engine {
            DbEngine::Sqlite => &[],
            DbEngine::Mariadb | DbEngine::Postgresql => &[crate::fstype::Feature::Permissions],
        }
    }

    fn phases(&self) -> Vec<String> {
        match &self.open_loop {
            Some(open) => open.phases(self.phase()),
            None => vec![self.phase().to_string()],
        }
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        let rows = (self.rows as f64 * factor).floor();
        let rows = if rows.is_finite() && rows < u64::MAX as f64 {
            rows as u64
        } else {
            u64::MAX
        };
        WorkloadKind::Oltp(OltpSpec {
            rows: rows.max(MIN_SCALED_ROWS.min(self.rows)),
            time: self.time.scaled(factor, MIN_SCALED_TIME.min(self.time.0)),
            ..self.clone()
        })
    }

    fn with_target(&self, target: crate::openloop::LatencyTarget) -> Option<WorkloadKind> {
        (self.engine == DbEngine::Sqlite).then(|| {
            WorkloadKind::Oltp(OltpSpec {
                open_loop: Some(crate::openloop::OpenLoopSpec::with_target(
                    self.open_loop.as_ref(),
                    target,
                )),
                ..self.clone()
            })
        })
    }

    fn validate(&self) -> Result<(), Invalid> {
        if self.tables == 0 || self.tables > MAX_TABLES {
            return Err(Invalid(format!(
                "tables must be between 1 and {MAX_TABLES} (is {})",
                self.tables
            )));
        }
        if self.rows == 0 || self.rows > u64::from(u32::MAX / 2) {
            return Err(Invalid(format!(
                "rows must be between 1 and {} (is {})",
                u32::MAX / 2,
                self.rows
            )));
        }
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(Invalid(format!(
                "threads must be between 1 and {MAX_THREADS} (is {})",
                self.threads
            )));
        }
        if self.time.0 < Duration::from_millis(100) {
            return Err(Invalid(format!("time must be at least 100ms (is {})", self.time)));
        }
        if self.range_size == 0 || self.range_size > self.rows {
            return Err(Invalid(format!(
                "range_size must be between 1 and rows ({}) (is {})",
                self.rows, self.range_size
            )));
        }
        if self.client == Client::Pgbench && self.engine != DbEngine::Postgresql {
            return Err(Invalid(format!(
                "client = \"pgbench\" needs engine = \"postgresql\" (engine is \"{}\")",
                self.engine.name()
            )));
        }
        if let Some(open) = &self.open_loop {
            if self.engine != DbEngine::Sqlite {
                return Err(Invalid(format!(
                    "open_loop runs with engine = \"sqlite\" (the server engines' clients are sysbench and pgbench; engine is \"{}\")",
                    self.engine.name()
                )));
            }
            open.validate()?;
        }
        if self.engine != DbEngine::Sqlite && self.buffer_pool.get() < 8 * Bytes::MIB {
            return Err(Invalid(format!(
                "buffer_pool must be at least 8MiB (is {})",
                self.buffer_pool
            )));
        }
        Ok(())
    }

    fn availability(&self) -> Result<(), Unavailable> {
        match self.engine {
            DbEngine::Sqlite => Ok(()),
            engine => server::availability(engine, self.client).map(|_| ()),
        }
    }

    fn tool_versions(&self) -> Vec<(String, String)> {
        match self.engine {
            DbEngine::Sqlite => vec![("sqlite (bundled)".into(), rusqlite::version().to_string())],
            engine => server::tool_versions(engine, self.client),
        }
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        // Database files are not plain files of known size: their bytes count as extra bytes;
        // the file counts are those of a fresh data directory, measured (an inode each).
        let rows = u64::from(self.tables).saturating_mul(self.rows);
        let (per_row, fixed, files) = match self.engine {
            // Row ≈ 200 bytes + index entry; the WAL, -shm and database files, the WAL
            // checkpointed every ~1000 pages and then written again from its start.
            DbEngine::Sqlite => (320, 6 * Bytes::MIB, 5),
            // ibdata1, the 96 MiB redo log (preallocated), undo tablespaces, ibtmp1, system
            // tables: 140-210 MiB and 222 files measured after a short run.
            DbEngine::Mariadb => (600, 210 * Bytes::MIB, 230),
            // The catalog (about 40 MiB, 1,300 files) and pg_wal, which grows with the run up
            // to max_wal_size (fsbench sets 256 MiB).
            DbEngine::Postgresql => (800, (48 + 256) * Bytes::MIB, 1320),
        };
        let fp = crate::fstype::Footprint::default()
            .files(files, 0, 16)
            .extra(rows.saturating_mul(per_row));
        match self.engine {
            // SQLite's WAL grows by appends; the servers' logs are preallocated.
            DbEngine::Sqlite => fp.growing_extra(fixed).rewrites(fixed),
            DbEngine::Mariadb | DbEngine::Postgresql => fp.extra(fixed),
        }
    }

    fn describe(&self) -> String {
        let mut s = format!(
            "oltp {} {} {} table(s) x {} rows, {} thread(s), {}",
            self.engine.name(),
            self.phase(),
            self.tables,
            self.rows,
            self.threads,
            self.time
        );
        match self.engine {
            DbEngine::Sqlite => s.push_str(&format!(
                ", journal_mode={} synchronous={}",
                self.journal_mode.name(),
                self.synchronous.name()
            )),
            _ => s.push_str(&format!(", buffer pool {}", self.buffer_pool)),
        }
        if self.client == Client::Sysbench {
            s.push_str(&format!(", ids {}", self.rand_type.name()));
        }
        if let Some(open) = &self.open_loop {
            s.push_str(&format!(", {}", open.describe()));
        }
        s
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        self.validate()?;
        match self.engine {
            DbEngine::Sqlite => sqlite::run(self, ctx),
            DbEngine::Mariadb | DbEngine::Postgresql => server::run(self, ctx),
        }
    }
}

/// Fills `buf` from sysbench's string template: groups of 11 random digits joined by `-`.
#[inline]
pub fn fill_digits<R: Rng>(rng: &mut R, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = if i % 12 == 11 { b'-' } else { rng.gen_range(b'0'..=b'9') };
    }
}

/// Length of the `c` column value (10 groups).
pub const C_LEN: usize = 119;
/// Length of the `pad` column value (5 groups).
pub const PAD_LEN: usize = 59;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_needs_owners_kept_and_is_not_started_where_they_are_not() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = std::sync::atomic::AtomicBool::new(false);
        let pg = OltpSpec {
            engine: DbEngine::Postgresql,
            ..OltpSpec::default()
        };
        let ctx = crate::RunContext {
            fs: Some(crate::fstype::FsType::of("ntfs-3g")),
            ..crate::RunContext::quiet(tmp.path(), &flag)
        };
        // Not run at all: no server, no data directory, one note per phase.
        let sample = crate::run(&pg, &ctx).expect("not run, not failed");
        assert!(sample.phases.is_empty());
        assert_eq!(
            sample.notes,
            [format!(
                "{}: unsupported on ntfs-3g (no Unix permissions and owners); the phase was left out",
                pg.phases()[0]
            )]
        );
        assert!(crate::dir_is_empty(tmp.path()));
        assert!(
            OltpSpec::default().needs(&pg.phases()[0]).is_empty(),
            "SQLite needs no owners"
        );
    }
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn special_distribution_has_sysbench_hot_spot() {
        let mut rng = SmallRng::seed_from_u64(1);
        let (a, b) = (1u64, 1_000_000u64);
        let n = 200_000;
        let mut hot = 0;
        for _ in 0..n {
            let v = RandType::Special.sample(&mut rng, a, b);
            assert!((a..=b).contains(&v));
            // The middle 1 %: [495000, 505000].
            if (495_000..=505_001).contains(&v) {
                hot += 1;
            }
        }
        let share = f64::from(hot) / f64::from(n);
        // 75 % land there by construction, plus the bell curve's small share of that window.
        assert!(share > 0.75 && share < 0.80, "{share}");
        let mut lo = 0;
        for _ in 0..n {
            let v = RandType::Uniform.sample(&mut rng, a, b);
            assert!((a..=b).contains(&v));
            if v <= 500_000 {
                lo += 1;
            }
        }
        let half = f64::from(lo) / f64::from(n);
        assert!((half - 0.5).abs() < 0.01, "{half}");
        // Degenerate range.
        assert_eq!(RandType::Special.sample(&mut rng, 7, 7), 7);
        assert_eq!(RandType::Uniform.sample(&mut rng, 7, 7), 7);
    }

    #[test]
    fn digit_template_matches_sysbench() {
        let mut rng = SmallRng::seed_from_u64(2);
        let mut c = [0u8; C_LEN];
        fill_digits(&mut rng, &mut c);
        let s = std::str::from_utf8(&c).expect("ascii");
        let groups: Vec<&str> = s.split('-').collect();
        assert_eq!(groups.len(), 10);
        assert!(groups
            .iter()
            .all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit())));
        let mut p = [0u8; PAD_LEN];
        fill_digits(&mut rng, &mut p);
        assert_eq!(std::str::from_utf8(&p).expect("ascii").split('-').count(), 5);
    }

    #[test]
    fn defaults_parse_validate_and_scale() {
        let s: OltpSpec = toml::from_str("").expect("empty");
        assert_eq!(s, OltpSpec::default());
        assert_eq!((s.tables, s.rows, s.threads, s.range_size), (1, 10_000, 1, 100));
        assert_eq!(s.phase(), "oltp_read_write");
        assert!(s.validate().is_ok());
        let t: OltpSpec = toml::from_str(
            "engine = \"mariadb\"\nmode = \"read_only\"\nrows = 1000000\nthreads = 8\ntime = \"60s\"\nbuffer_pool = \"256MiB\"",
        )
        .expect("spec");
        assert_eq!(t.engine, DbEngine::Mariadb);
        assert_eq!(t.phase(), "oltp_read_only");
        let WorkloadKind::Oltp(small) = t.scaled(0.02) else {
            panic!("scaled to another kind")
        };
        assert_eq!(small.rows, 20_000);
        assert_eq!(small.time, Dur(Duration::from_secs(2)));
        let WorkloadKind::Oltp(tiny) = t.scaled(1e-6) else {
            panic!("scaled to another kind")
        };
        assert_eq!(tiny.rows, MIN_SCALED_ROWS);
        assert!(tiny.validate().is_ok());
        let back: OltpSpec = toml::from_str(&toml::to_string(&t).expect("ser")).expect("reparse");
        assert_eq!(back, t);
        assert!(toml::from_str::<OltpSpec>("engine = \"oracle\"").is_err());
        assert!(toml::from_str::<OltpSpec>("table_size = 5").is_err());
        let pg = OltpSpec {
            engine: DbEngine::Postgresql,
            client: Client::Pgbench,
            rows: 250_000,
            ..OltpSpec::default()
        };
        assert_eq!((pg.phase(), pg.pgbench_scale()), ("pgbench_tpcb", 3));
        assert!(
            pg.describe().starts_with("oltp postgresql pgbench_tpcb"),
            "{}",
            pg.describe()
        );
    }

    #[test]
    fn validation_names_the_key() {
        let ok = OltpSpec::default();
        let cases = [
            (
                OltpSpec {
                    tables: 0,
                    ..ok.clone()
                },
                "tables",
            ),
            (OltpSpec { rows: 0, ..ok.clone() }, "rows"),
            (
                OltpSpec {
                    threads: 0,
                    ..ok.clone()
                },
                "threads",
            ),
            (
                OltpSpec {
                    time: Dur(Duration::ZERO),
                    ..ok.clone()
                },
                "time",
            ),
            (
                OltpSpec {
                    range_size: 20_000,
                    ..ok.clone()
                },
                "range_size",
            ),
            (
                OltpSpec {
                    client: Client::Pgbench,
                    ..ok.clone()
                },
                "pgbench",
            ),
        ];
        for (spec, key) in cases {
            let e = spec.validate().expect_err(key);
            assert!(e.0.contains(key), "{e}");
        }
    }
}
