//! The seeded writer that runs until the power is cut, and the ledger of what it was told is
//! durable.
//!
//! Each operation is chosen by a seeded RNG: create a file and fsync it and its directory,
//! append with fdatasync, rename and fsync the directory, mkdir and fsync the parent, write a
//! file without any sync (information only), and optionally commit one numbered row to an
//! SQLite database (WAL, `synchronous=FULL`) or to a database server whose data directory is
//! on the filesystem under test ([`ServerLink`]: PostgreSQL through the `postgres` client
//! crate, MariaDB through its `mariadb` client on a pipe; each row one autocommitted `INSERT`,
//! acknowledged when the server answers). The [`Ledger`] lives in fsbench's memory, never on
//! the filesystem under test: a path enters it as acknowledged only after every sync of its
//! operation returned success. The operation in flight when the cut came is remembered, and
//! either of its outcomes is accepted.
//!
//! [`verify`] compares a recovered filesystem with the ledger: every acknowledged file must
//! hold at least its acknowledged bytes with the same checksum (FNV-1a 64), every acknowledged
//! directory must exist, a name renamed away durably must be gone, and every acknowledged SQLite
//! row must be there (a server's rows are counted by the caller, which must start the server
//! again first: [`count_server_rows`], [`Verdict::add_rows`]). Each miss is one `acked_lost`
//! with its path and what is wrong, and each missing row counts one.
//!
//! Invariant: the writer's loop allocates its buffers once; file contents come from the
//! seeded RNG, so a run with the same seed writes the same bytes.

use rand::{Rng, RngCore, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The name of the writer's SQLite database in its folder.
pub const DB_NAME: &str = "rows.sqlite";

/// The table of numbered rows in SQLite (`n` is the rowid).
const CREATE_ROWS: &str = "CREATE TABLE rows (n INTEGER PRIMARY KEY, payload BLOB NOT NULL)";
/// The same table in a server's `postgres` database.
const CREATE_ROWS_PG: &str = "CREATE TABLE rows (n BIGINT PRIMARY KEY, payload BYTEA NOT NULL)";

/// What the writer does.
#[derive(Clone, Debug)]
pub struct WriterSpec {
    /// Seed of the operation sequence and of the file contents.
    pub seed: u64,
    /// Largest file created or append made, in bytes (at least 1).
    pub max_write: usize,
    /// Commit numbered rows to an SQLite database too.
    pub sqlite: bool,
    /// Commit numbered rows through a database server too.
    pub server: Option<ServerLink>,
    /// Stop after this many acknowledged operations (0: only a failure or `stop` ends it).
    pub max_ops: u64,
}

/// How the writer reaches a database server (its table made beforehand).
#[derive(Clone, Debug)]
pub enum ServerLink {
    /// PostgreSQL through the client crate, over the unix socket in this folder (user and
    /// database `postgres`, table `rows` made by [`create_server_table`]).
    Postgres(std::path::PathBuf),
    /// A line-oriented SQL client (MariaDB's `mariadb --batch --unbuffered`), fed statements
    /// on its standard input; each commit is acknowledged by the row's number printed back.
    /// The table is [`LINE_TABLE`].
    Lines {
        /// The client program.
        program: std::path::PathBuf,
        /// Its arguments (connection and output format).
        args: Vec<std::ffi::OsString>,
    },
}

/// The table a [`ServerLink::Lines`] client commits to.
pub const LINE_TABLE: &str = "fsbench.rows";

/// What a recovered path should hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// A file of at least `len` bytes whose first `len` bytes hash to `hash`.
    File {
        /// Acknowledged length, in bytes.
        len: u64,
        /// FNV-1a 64 of those bytes.
        hash: u64,
    },
    /// A directory.
    Dir,
}

/// The acknowledged state after one writer run, kept on the host side.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    /// Paths (relative to the writer's folder) acknowledged durable, and what they hold.
    pub acked: BTreeMap<String, Expect>,
    /// Names durably renamed away: they must not come back.
    pub gone: BTreeSet<String>,
    /// The rename in flight at the cut (`from`, `to`): the file may be under either name.
    pub in_flight_rename: Option<(String, String)>,
    /// Files written without any sync: (path, length, hash).
    pub unsynced: Vec<(String, u64, u64)>,
    /// Operations acknowledged.
    pub acked_ops: u64,
    /// Rows committed and acknowledged (1..=n), SQLite or server.
    pub db_rows: u64,
}

/// FNV-1a 64, streaming: hashing `a` then `b` equals hashing `a ++ b`.
#[derive(Clone, Copy, Debug)]
pub struct Fnv(pub u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// Adds `data`.
    pub fn write(&mut self, data: &[u8]) {
        for b in data {
            self.0 ^= *b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// Why the writer stopped before the cut.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct WriterError {
    /// Operation and path.
    pub what: String,
    /// The OS error.
    #[source]
    pub source: std::io::Error,
}

fn werr(what: String) -> impl FnOnce(std::io::Error) -> WriterError {
    move |source| WriterError { what, source }
}

fn fsync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Runs the writer in `dir` until an operation fails. `acked` counts acknowledged operations
/// for the cutter; `cutting` says the power is being cut, after which a failure is the expected
/// end (`Ok`) rather than an error; `stop` ends it without a cut (an interrupt).
pub fn run(
    spec: &WriterSpec,
    dir: &Path,
    acked: &AtomicU64,
    cutting: &AtomicBool,
    stop: &AtomicBool,
) -> Result<Ledger, WriterError> {
    let mut l = Ledger::default();
    match run_ops(spec, dir, acked, cutting, stop, &mut l) {
        Ok(()) => Ok(l),
        Err(_) if cutting.load(Ordering::SeqCst) => Ok(l),
        Err(e) => Err(e),
    }
}

fn run_ops(
    spec: &WriterSpec,
    dir: &Path,
    acked: &AtomicU64,
    cutting: &AtomicBool,
    stop: &AtomicBool,
    l: &mut Ledger,
) -> Result<(), WriterError> {
    // An operation counts as acknowledged only if its last sync returned before the cut began:
    // `cutting` is raised before the cut, so an operation that finds it still down after its
    // sync finished before the power went. One that finds it up may have "succeeded" on a
    // filesystem already shut down (XFS answers a directory fsync with 0 once the shutdown has
    // dropped the directory's log items): a real power cut would never have let it return, so
    // it stays in flight (either outcome accepted) and the writer stops.
    let after_cut = || cutting.load(Ordering::SeqCst);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(spec.seed);
    let mut buf = vec![0u8; spec.max_write.max(1)];
    let mut files: Vec<String> = Vec::new(); // acknowledged files (append and rename sources)
    let mut dirs: Vec<String> = vec![String::new()];
    let mut db = open_db(spec, dir)?;
    let mut k: u64 = 0;
    while !stop.load(Ordering::Relaxed) && (spec.max_ops == 0 || l.acked_ops < spec.max_ops) {
        k += 1;
        let roll = rng.gen_range(0..100u32);
        match roll {
            // Create, fsync the file and its directory.
            0..=34 => {
                if create_op(dir, k, &mut rng, &mut buf, &dirs, cutting, l, &mut files)? {
                    return Ok(());
                }
            }
            // Append with fdatasync.
            35..=54 if !files.is_empty() => {
                let rel = files[rng.gen_range(0..files.len())].clone();
                let n = rng.gen_range(1..=buf.len());
                rng.fill_bytes(&mut buf[..n]);
                let path = dir.join(&rel);
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .map_err(werr(format!("open {rel}")))?;
                f.write_all(&buf[..n]).map_err(werr(format!("append {rel}")))?;
                f.sync_data().map_err(werr(format!("fdatasync {rel}")))?;
                if after_cut() {
                    return Ok(());
                }
                if let Some(Expect::File { len, hash }) = l.acked.get_mut(&rel) {
                    let mut h = Fnv(*hash);
                    h.write(&buf[..n]);
                    *len += n as u64;
                    *hash = h.0;
                }
            }
            // Rename into a (maybe other) directory, fsync both directories.
            55..=64 if !files.is_empty() => {
                if rename_op(dir, k, &mut rng, &dirs, cutting, l, &mut files)? {
                    return Ok(());
                }
            }
            // Make a directory, fsync its parent.
            65..=74 => {
                let rel = format!("d{k}");
                std::fs::create_dir(dir.join(&rel)).map_err(werr(format!("mkdir {rel}")))?;
                fsync_dir(dir).map_err(werr(format!("fsync {}", dir.display())))?;
                if after_cut() {
                    return Ok(());
                }
                l.acked.insert(rel.clone(), Expect::Dir);
                dirs.push(rel);
            }
            // Commit one numbered row.
            90..=99 if db.is_some() => {
                let n = l.db_rows + 1;
                let n_bytes = rng.gen_range(16..=256usize).min(buf.len().max(16));
                let payload = &buf[..n_bytes.min(buf.len())];
                if let Some(db) = db.as_mut() {
                    db.commit(n, payload)
                        .map_err(|e| werr(format!("commit row {n}"))(std::io::Error::other(e)))?;
                }
                if after_cut() {
                    return Ok(());
                }
                l.db_rows = n;
            }
            // Write without any sync: may or may not survive.
            _ => {
                let rel = format!("u{k}");
                let n = rng.gen_range(1..=buf.len());
                rng.fill_bytes(&mut buf[..n]);
                let mut f = File::create_new(dir.join(&rel)).map_err(werr(format!("create {rel}")))?;
                f.write_all(&buf[..n]).map_err(werr(format!("write {rel}")))?;
                let mut h = Fnv::default();
                h.write(&buf[..n]);
                l.unsynced.push((rel, n as u64, h.0));
                continue; // not an acknowledged operation
            }
        }
        l.acked_ops += 1;
        acked.store(l.acked_ops, Ordering::SeqCst);
    }
    Ok(())
}

/// `name` inside the relative directory `d` (the root when empty).
fn sub(d: &str, name: String) -> String {
    if d.is_empty() {
        name
    } else {
        format!("{d}/{name}")
    }
}

/// Where the writer commits its numbered rows.
enum RowDb {
    Sqlite(rusqlite::Connection),
    Server(Box<postgres::Client>),
    Lines(LineClient),
}

/// A running line-oriented SQL client ([`ServerLink::Lines`]); killed when dropped.
struct LineClient {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    out: std::io::BufReader<std::process::ChildStdout>,
}

impl LineClient {
    fn spawn(program: &Path, args: &[std::ffi::OsString]) -> std::io::Result<LineClient> {
        let mut child = std::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        let (Some(stdin), Some(out)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("the SQL client has no pipes"));
        };
        Ok(LineClient {
            child,
            stdin,
            out: std::io::BufReader::new(out),
        })
    }

    /// Inserts row `n` (autocommit) and waits for its number back: the client prints it only
    /// after the server acknowledged the `INSERT`, and stops at the first error.
    fn commit(&mut self, n: u64, payload: &[u8]) -> Result<(), CommitError> {
        use std::fmt::Write as _;
        use std::io::BufRead;
        let mut hex = String::with_capacity(payload.len() * 2);
        for b in payload {
            let _ = write!(hex, "{b:02x}");
        }
        writeln!(
            self.stdin,
            "INSERT INTO {LINE_TABLE} (n, payload) VALUES ({n}, x'{hex}'); SELECT {n};"
        )
        .and_then(|()| self.stdin.flush())
        .map_err(|source| CommitError::Send { n, source })?;
        let mut line = String::new();
        self.out.read_line(&mut line).map_err(CommitError::Read)?;
        if line.trim() == n.to_string() {
            Ok(())
        } else {
            Err(CommitError::Answer { line, n })
        }
    }
}

impl Drop for LineClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl RowDb {
    /// Commits row `n` (one autocommitted `INSERT`); `Ok` once the database acknowledged it.
    fn commit(&mut self, n: u64, payload: &[u8]) -> Result<(), CommitError> {
        match self {
            RowDb::Sqlite(c) => c
                .execute(
                    "INSERT INTO rows (n, payload) VALUES (?1, ?2)",
                    rusqlite::params![n as i64, payload],
                )
                .map(drop)
                .map_err(CommitError::Sqlite),
            RowDb::Server(c) => c
                .execute(
                    "INSERT INTO rows (n, payload) VALUES ($1, $2)",
                    &[&(n as i64), &payload],
                )
                .map(drop)
                .map_err(|e| CommitError::Server(PgError(e))),
            RowDb::Lines(c) => c.commit(n, payload),
        }
    }
}

/// Why the writer's row was not acknowledged ([`RowDb::commit`]).
#[derive(Debug, thiserror::Error)]
enum CommitError {
    /// SQLite refused the `INSERT`.
    #[error(transparent)]
    Sqlite(rusqlite::Error),
    /// The PostgreSQL server refused it.
    #[error(transparent)]
    Server(PgError),
    /// The line client's standard input is closed.
    #[error("send row {n}: {source}")]
    Send { n: u64, source: std::io::Error },
    /// Its standard output is.
    #[error("read the answer: {0}")]
    Read(std::io::Error),
    /// It answered something other than the row's number (it stops at the first error).
    #[error("the client answered {line:?}, not {n}")]
    Answer { line: String, n: u64 },
}

/// A PostgreSQL client error, shown with the server's message (`postgres::Error` alone says
/// only "db error").
#[derive(Debug, thiserror::Error)]
#[error("{}", pg_error(.0))]
pub struct PgError(#[source] pub postgres::Error);

/// Why the writer's table in the PostgreSQL server could not be created or counted
/// ([`create_server_table`], [`count_server_rows`]).
#[derive(Debug, thiserror::Error)]
pub enum ServerRowsError {
    /// No connection to the server.
    #[error("connect: {0}")]
    Connect(#[source] PgError),
    /// The `CREATE TABLE` failed.
    #[error("create the rows table: {0}")]
    CreateTable(#[source] PgError),
    /// The count failed (other than the table being gone).
    #[error("count the rows: {0}")]
    Count(#[source] PgError),
}

/// A client of the PostgreSQL server listening in `socket_dir` (user and database `postgres`).
pub fn connect_server(socket_dir: &Path) -> Result<postgres::Client, postgres::Error> {
    postgres::Config::new()
        .host_path(socket_dir)
        .user("postgres")
        .dbname("postgres")
        .connect_timeout(std::time::Duration::from_secs(10))
        .connect(postgres::NoTls)
}

/// A client error with the server's message (`postgres::Error` alone says only "db error").
fn pg_error(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => format!("{}: {}", d.severity(), d.message()),
        None => e.to_string(),
    }
}

/// Creates the writer's table in the PostgreSQL server in `socket_dir`; the caller then makes
/// it durable (a `syncfs`), so that a server running with `fsync = off` loses rows, not the
/// table.
pub fn create_server_table(socket_dir: &Path) -> Result<(), ServerRowsError> {
    let mut c = connect_server(socket_dir).map_err(|e| ServerRowsError::Connect(PgError(e)))?;
    c.batch_execute(CREATE_ROWS_PG)
        .map_err(|e| ServerRowsError::CreateTable(PgError(e)))
}

/// How many of the rows `1..=acked` the PostgreSQL server in `socket_dir` holds (0 when the
/// table itself is gone).
pub fn count_server_rows(socket_dir: &Path, acked: u64) -> Result<u64, ServerRowsError> {
    let mut c = connect_server(socket_dir).map_err(|e| ServerRowsError::Connect(PgError(e)))?;
    match c.query_one("SELECT count(*) FROM rows WHERE n BETWEEN 1 AND $1", &[&(acked as i64)]) {
        Ok(row) => Ok(row.get::<_, i64>(0) as u64),
        Err(e) if e.code() == Some(&postgres::error::SqlState::UNDEFINED_TABLE) => Ok(0),
        Err(e) => Err(ServerRowsError::Count(PgError(e))),
    }
}

/// Opens the database of a spec with rows: the SQLite file (WAL, full sync, its directory
/// synced) or a connection to the server (its table created); `None` without one.
fn open_db(spec: &WriterSpec, dir: &Path) -> Result<Option<RowDb>, WriterError> {
    match &spec.server {
        Some(ServerLink::Postgres(socket_dir)) => {
            let c = connect_server(socket_dir).map_err(|e| {
                werr(format!("connect to the server in {}", socket_dir.display()))(std::io::Error::other(pg_error(&e)))
            })?;
            return Ok(Some(RowDb::Server(Box::new(c))));
        }
        Some(ServerLink::Lines { program, args }) => {
            let c = LineClient::spawn(program, args).map_err(werr(format!("start {}", program.display())))?;
            return Ok(Some(RowDb::Lines(c)));
        }
        None => {}
    }
    if spec.sqlite {
        let c = rusqlite::Connection::open(dir.join(DB_NAME))
            .and_then(|c| {
                // Exclusive locking before WAL: the wal-index lives on the heap instead of an
                // mmap'ed `-shm` file, whose page faults would kill fsbench with SIGBUS once
                // the filesystem under it is cut off.
                c.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
                c.pragma_update(None, "journal_mode", "WAL")?;
                c.pragma_update(None, "synchronous", "FULL")?;
                c.execute(CREATE_ROWS, [])?;
                Ok(c)
            })
            .map_err(|e| werr(format!("create {}", DB_NAME))(std::io::Error::other(e)))?;
        fsync_dir(dir).map_err(werr(format!("fsync {}", dir.display())))?;
        Ok(Some(RowDb::Sqlite(c)))
    } else {
        Ok(None)
    }
}

/// Operation `k`: creates a file in a random directory, fsyncs it and its directory, and
/// records it as acknowledged. `Ok(true)`: the sync returned after the cut began (stop).
#[allow(clippy::too_many_arguments)]
fn create_op(
    dir: &Path,
    k: u64,
    rng: &mut rand::rngs::SmallRng,
    buf: &mut [u8],
    dirs: &[String],
    cutting: &AtomicBool,
    l: &mut Ledger,
    files: &mut Vec<String>,
) -> Result<bool, WriterError> {
    let d = dirs[rng.gen_range(0..dirs.len())].clone();
    let rel = sub(&d, format!("f{k}"));
    let n = rng.gen_range(1..=buf.len());
    rng.fill_bytes(&mut buf[..n]);
    let path = dir.join(&rel);
    let mut f = File::create_new(&path).map_err(werr(format!("create {rel}")))?;
    f.write_all(&buf[..n]).map_err(werr(format!("write {rel}")))?;
    f.sync_all().map_err(werr(format!("fsync {rel}")))?;
    fsync_dir(&dir.join(&d)).map_err(werr(format!("fsync dir of {rel}")))?;
    if cutting.load(Ordering::SeqCst) {
        return Ok(true);
    }
    let mut h = Fnv::default();
    h.write(&buf[..n]);
    l.acked.insert(
        rel.clone(),
        Expect::File {
            len: n as u64,
            hash: h.0,
        },
    );
    files.push(rel);
    Ok(false)
}

/// Operation `k`: renames an acknowledged file into a random directory, fsyncs both
/// directories, and moves it in the ledger. `Ok(true)`: the sync returned after the cut began.
fn rename_op(
    dir: &Path,
    k: u64,
    rng: &mut rand::rngs::SmallRng,
    dirs: &[String],
    cutting: &AtomicBool,
    l: &mut Ledger,
    files: &mut [String],
) -> Result<bool, WriterError> {
    let i = rng.gen_range(0..files.len());
    let from = files[i].clone();
    let d = dirs[rng.gen_range(0..dirs.len())].clone();
    let to = sub(&d, format!("r{k}"));
    l.in_flight_rename = Some((from.clone(), to.clone()));
    std::fs::rename(dir.join(&from), dir.join(&to)).map_err(werr(format!("rename {from} {to}")))?;
    let from_dir = Path::new(&from)
        .parent()
        .map(|p| dir.join(p))
        .unwrap_or(dir.to_path_buf());
    fsync_dir(&from_dir).map_err(werr(format!("fsync dir of {from}")))?;
    fsync_dir(&dir.join(&d)).map_err(werr(format!("fsync dir of {to}")))?;
    if cutting.load(Ordering::SeqCst) {
        return Ok(true);
    }
    l.in_flight_rename = None;
    if let Some(e) = l.acked.remove(&from) {
        l.acked.insert(to.clone(), e);
    }
    l.gone.insert(from);
    files[i] = to;
    Ok(false)
}

/// What [`verify`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Acknowledged operations' results missing or wrong: `path: what`.
    pub acked_lost: Vec<String>,
    /// Unsynced files missing or incomplete.
    pub unsynced_lost: u64,
    /// Unsynced files fully there.
    pub unsynced_kept: u64,
    /// Committed SQLite rows missing (or all of them when the database cannot be read).
    pub db_rows_lost: u64,
    /// Why the database could not be read, if it could not.
    pub db_error: Option<String>,
}

impl Verdict {
    /// Adds the count of acknowledged rows `1..=acked` found in database `name`
    /// (`Err`: it could not be read, and every acknowledged row counts as lost; its message is
    /// kept as [`Verdict::db_error`]).
    pub fn add_rows<E: std::fmt::Display>(&mut self, name: &str, acked: u64, present: Result<u64, E>) {
        match present {
            Ok(n) => self.db_rows_lost = acked.saturating_sub(n),
            Err(e) => {
                self.db_rows_lost = acked;
                self.db_error = Some(e.to_string());
            }
        }
        if self.db_rows_lost > 0 {
            self.acked_lost.push(format!(
                "{name}: {} of {acked} committed rows missing",
                self.db_rows_lost
            ));
        }
    }

    /// Acknowledged results lost, each SQLite row one (issue 28 item 7): the missing or wrong
    /// paths plus the missing rows, not the database's one line of `acked_lost`.
    pub fn lost_count(&self) -> u64 {
        let db_line = (self.db_rows_lost > 0) as u64;
        self.acked_lost.len() as u64 - db_line + self.db_rows_lost
    }
}

/// Reads the first `len` bytes of `path` and hashes them; `Err` says what is wrong.
fn check_file(path: &Path, len: u64, hash: u64) -> Result<(), String> {
    let f = File::open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            "missing".to_string()
        } else {
            format!("unreadable: {e}")
        }
    })?;
    let mut h = Fnv::default();
    let mut got = 0u64;
    let mut buf = [0u8; 64 * 1024];
    let mut r = f.take(len);
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                h.write(&buf[..n]);
                got += n as u64;
            }
            Err(e) => return Err(format!("read error after {got} bytes: {e}")),
        }
    }
    if got < len {
        return Err(format!("short: {got} of {len} acknowledged bytes"));
    }
    if h.0 != hash {
        return Err("content differs from what was acknowledged".into());
    }
    Ok(())
}

/// Compares the writer's folder `dir` on the recovered filesystem with `l`.
pub fn verify(dir: &Path, l: &Ledger, sqlite: bool) -> Verdict {
    let mut v = Verdict::default();
    for (rel, e) in &l.acked {
        let p = dir.join(rel);
        let r = match e {
            Expect::Dir => match std::fs::metadata(&p) {
                Ok(m) if m.is_dir() => Ok(()),
                Ok(_) => Err("not a directory".to_string()),
                Err(_) => Err("directory missing".to_string()),
            },
            Expect::File { len, hash } => check_file(&p, *len, *hash).or_else(|why| {
                // The rename in flight may have reached the disk: the file under its new name.
                match &l.in_flight_rename {
                    Some((from, to)) if from == rel => check_file(&dir.join(to), *len, *hash).map_err(|_| why),
                    _ => Err(why),
                }
            }),
        };
        if let Err(why) = r {
            v.acked_lost.push(format!("{rel}: {why}"));
        }
    }
    for rel in &l.gone {
        if std::fs::symlink_metadata(dir.join(rel)).is_ok() {
            v.acked_lost
                .push(format!("{rel}: renamed away durably, but back after the cut"));
        }
    }
    for (rel, len, hash) in &l.unsynced {
        match check_file(&dir.join(rel), *len, *hash) {
            Ok(()) => v.unsynced_kept += 1,
            Err(_) => v.unsynced_lost += 1,
        }
    }
    if sqlite {
        let present =
            rusqlite::Connection::open_with_flags(dir.join(DB_NAME), rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)
                .and_then(|c| {
                    c.query_row(
                        "SELECT count(*) FROM rows WHERE n BETWEEN 1 AND ?1",
                        [l.db_rows as i64],
                        |r| r.get::<_, i64>(0),
                    )
                });
        v.add_rows(DB_NAME, l.db_rows, present.map(|n| n as u64));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger_after(spec: &WriterSpec, dir: &Path, ops: u64) -> Ledger {
        let acked = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        let cutting = AtomicBool::new(false);
        std::thread::scope(|s| {
            let h = s.spawn(|| run(spec, dir, &acked, &cutting, &stop));
            while acked.load(Ordering::SeqCst) < ops && !h.is_finished() {
                std::thread::yield_now();
            }
            stop.store(true, Ordering::SeqCst);
            h.join().unwrap().unwrap()
        })
    }

    /// Deletes row 2 of the writer's database in `dir` too.
    fn c_delete_more(dir: &Path) {
        let c = rusqlite::Connection::open(dir.join(DB_NAME)).unwrap();
        c.execute("DELETE FROM rows WHERE n = 2", []).unwrap();
    }

    #[test]
    fn fnv_streams() {
        let mut a = Fnv::default();
        a.write(b"hello ");
        a.write(b"world");
        let mut b = Fnv::default();
        b.write(b"hello world");
        assert_eq!(a.0, b.0);
    }

    #[test]
    fn an_intact_folder_verifies_and_every_kind_of_damage_is_an_acked_loss() {
        let t = tempfile::tempdir().unwrap();
        let spec = WriterSpec {
            seed: 7,
            max_write: 8192,
            sqlite: true,
            server: None,
            max_ops: 0,
        };
        let l = ledger_after(&spec, t.path(), 120);
        assert!(l.acked_ops >= 120 && !l.gone.is_empty() && l.db_rows > 0, "{l:?}");
        let v = verify(t.path(), &l, true);
        assert!(v.acked_lost.is_empty(), "{v:?}");
        assert_eq!(v.unsynced_kept as usize, l.unsynced.len());

        // Damage: truncate one file, flip a byte of another, remove a directory's entry,
        // bring back a renamed-away name, delete rows.
        let files: Vec<(&String, u64)> = l
            .acked
            .iter()
            .filter_map(|(p, e)| match e {
                Expect::File { len, .. } if *len > 1 => Some((p, *len)),
                _ => None,
            })
            .collect();
        let (a, alen) = files[0];
        std::fs::OpenOptions::new()
            .write(true)
            .open(t.path().join(a))
            .unwrap()
            .set_len(alen - 1)
            .unwrap();
        let (b, _) = files[1];
        let mut bytes = std::fs::read(t.path().join(b)).unwrap();
        bytes[0] ^= 0xFF;
        std::fs::write(t.path().join(b), bytes).unwrap();
        let gone = l.gone.iter().next().unwrap();
        std::fs::write(t.path().join(gone), b"x").unwrap();
        let c = rusqlite::Connection::open(t.path().join(DB_NAME)).unwrap();
        c.execute("DELETE FROM rows WHERE n = 1", []).unwrap();
        drop(c);
        c_delete_more(t.path());
        let v = verify(t.path(), &l, true);
        assert_eq!(v.db_rows_lost, 2);
        assert_eq!(v.lost_count(), 3 + 2, "three paths and two rows, each row one");
        let text = v.acked_lost.join("\n");
        assert!(text.contains(&format!("{a}: short")), "{text}");
        assert!(text.contains(&format!("{b}: content differs")), "{text}");
        assert!(text.contains(&format!("{gone}: renamed away")), "{text}");
        assert_eq!(v.acked_lost.len(), 4, "{text}");
    }

    #[test]
    fn a_line_client_row_counts_only_when_its_number_comes_back() {
        // A stand-in for `mariadb --batch`: prints the number after `SELECT` of each line.
        let echo =
            |script: &str| LineClient::spawn(Path::new("/bin/sh"), &["-c".into(), script.into()]).expect("spawn sh");
        let mut ok = echo("while read -r l; do n=${l##*SELECT }; echo ${n%;}; done");
        ok.commit(1, b"ab").expect("row 1");
        ok.commit(2, &[0xff; 16]).expect("row 2");
        let mut wrong = echo("while read -r l; do echo 7; done");
        assert!(wrong.commit(3, b"x").unwrap_err().to_string().contains("not 3"));
        // A client that stops (as mariadb does on an error, or when its server is killed).
        let mut gone = echo("read -r l; exit 1");
        assert!(gone.commit(4, b"x").is_err());
    }

    #[test]
    fn each_missing_row_counts_and_an_unreadable_database_loses_them_all() {
        let mut v = Verdict::default();
        v.add_rows("server", 25, Ok::<_, &str>(22));
        assert_eq!((v.db_rows_lost, v.lost_count()), (3, 3));
        assert_eq!(v.acked_lost, vec!["server: 3 of 25 committed rows missing".to_string()]);
        let mut v = Verdict::default();
        v.add_rows("server", 25, Err("did not start"));
        assert_eq!((v.db_rows_lost, v.db_error.as_deref()), (25, Some("did not start")));
        let mut v = Verdict::default();
        v.add_rows("server", 25, Ok::<_, &str>(25));
        assert_eq!((v.db_rows_lost, v.acked_lost.len(), v.lost_count()), (0, 0, 0));
    }

    #[test]
    fn the_same_seed_writes_the_same_sequence() {
        let spec = WriterSpec {
            seed: 3,
            max_write: 1000,
            sqlite: false,
            server: None,
            max_ops: 40,
        };
        let (t1, t2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = ledger_after(&spec, t1.path(), 40);
        let b = ledger_after(&spec, t2.path(), 40);
        assert_eq!((a.acked_ops, &a.acked, &a.unsynced), (40, &b.acked, &b.unsynced));
    }
}
