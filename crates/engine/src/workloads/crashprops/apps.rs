//! Real applications' update protocols under the crash states of [`super::states`] (issue 43,
//! item 3): Debian's `sqlite3` CLI in rollback-journal (DELETE) and WAL modes, Debian's
//! `git`, and the PostgreSQL and MariaDB servers ([`servers`]), each judged by the
//! application's own check plus acknowledged-data accounting.
//!
//! The CLI, not the rusqlite crate of the workspace, because it is the tool (and Debian's
//! libsqlite3, 3.40 on bookworm) users have; rusqlite bundles its own SQLite build. One
//! long-lived `sqlite3` process per application gets the transactions on its stdin; after
//! each `COMMIT` it is asked `SELECT 'ack N';`, and the line coming back on its stdout (the
//! shell answers statements in order) means the commit returned: the workload then sends the
//! acknowledgement to the disk's log ([`super::states::Log::acknowledged`] says which
//! acknowledgements a crash state must honour).
//!
//! An application's checker runs on a writable copy of its folder as a crash state recovered it
//! (SQLite rolls a hot journal back or replays a WAL on open, which a read-only mount forbids):
//! - SQLite: `PRAGMA integrity_check` must print `ok`, and the rows must be whole transactions
//!   1..=j of the sequence (a prefix: each transaction inserts [`ROWS`] rows tagged with its
//!   number); then, for the applications that promise durability, every acknowledged
//!   transaction must be among them.
//! - Git: `git fsck --full` must pass, and once a commit was acknowledged HEAD must resolve to a
//!   commit; then `main` must hold every acknowledged commit and HEAD be on `other` once the
//!   checkout was acknowledged.
//!
//! A state is **corrupt** when the check fails (the application cannot open or verify its
//! files) and **lost** when it passes but an acknowledged update is missing; both are
//! vulnerabilities. Invariant: every checker fails on a known-corrupt input (the unit tests
//! here and tests/integration/crashapps.rs).
//!
//! A server application explores a seeded uniform sample of at most [`servers::MAX_STATES`] of
//! its enumerated states ([`sample`]): each state starts a server.
//!
//! References: SQLite's "Atomic Commit In SQLite" and `PRAGMA synchronous` (EXTRA syncs the
//! directory after the rollback journal is unlinked); git-config(1) `core.fsync` (unset, git
//! 2.39 fsyncs packs and their metadata but no loose object, ref or index).

use super::states::{self, Budget, CrashState, Log};
use crate::undo::UndoLog;
use crate::workloads::oltp::DbEngine;
use crate::Unavailable;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;

pub mod redis;
pub mod servers;

/// Rows each SQLite transaction inserts (1500 random bytes each: a transaction spans pages).
pub const ROWS: usize = 3;
/// SQLite transactions in the sequence.
pub const TXNS: u32 = 4;
/// The database file's name in the application's folder.
pub const DB: &str = "app.db";

/// What a crash state shows an application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AppVerdict {
    /// The check passes and every acknowledged update is there.
    Holds,
    /// The application's own check fails: what it said.
    Corrupt(String),
    /// The check passes but acknowledged updates are missing: which.
    Lost(String),
}

/// What an application's protocol calls with each acknowledgement's number.
pub type Ack<'a> = dyn FnMut(u32) -> std::io::Result<()> + 'a;

/// The most a SQLite or git application's folder holds, in bytes.
const SMALL: u64 = 160 << 10;

/// What an application's steps may need besides its folder.
pub struct AppEnv<'a> {
    /// A folder outside the filesystem under test (the run folder): a server's socket folder
    /// goes there while it records.
    pub scratch: &'a Path,
    /// Set on Ctrl-C: a server's start stops waiting.
    pub interrupt: &'a AtomicBool,
    /// The run's undo log: a server's socket folder and PostgreSQL's shared memory are recorded
    /// in it while they exist.
    pub undo: Option<&'a dyn UndoLog>,
}

/// One application.
pub struct App {
    /// Report row.
    pub name: &'static str,
    /// The protocol, as the report prints it.
    pub ops: &'static str,
    /// Whether the application promises that acknowledged updates survive (else only
    /// consistency is judged).
    pub durable: bool,
    /// At most this many crash states, a seeded sample ([`sample`]); `None`: the workload's
    /// `max_states` alone.
    pub max_states: Option<usize>,
    /// The most its folder holds, in bytes (the filesystem's image is sized from it).
    pub bytes: u64,
    /// `Err` says what to install.
    pub available: fn() -> Result<(), Unavailable>,
    /// Makes the setup in the (empty, existing) folder (made durable before the mark).
    pub setup: fn(&Path, &AppEnv) -> std::io::Result<()>,
    /// Runs the protocol; calls the closure with each acknowledgement's number when the
    /// application reported it.
    pub act: fn(&Path, &AppEnv, &mut Ack) -> std::io::Result<()>,
    /// Judges a writable copy of the folder given the acknowledgements the state must honour.
    pub check: fn(&Path, &AppEnv, &[u32]) -> AppVerdict,
}

/// `tool` on the PATH, or what to install: Debian's `package`.
pub(super) fn have_tool(tool: &str, package: &str) -> Result<(), Unavailable> {
    match crate::host::find_tool(tool) {
        Some(_) => Ok(()),
        None => Err(Unavailable(format!(
            "{tool} is not installed: run `apt-get install {package}` (or scripts/install.sh)"
        ))),
    }
}

/// A database server's row: the protocol and check of [`servers`] for `engine` with
/// `settings`, a seeded sample of at most [`servers::MAX_STATES`] states (a server start each).
macro_rules! server_app {
    ($name:literal, $ops:literal, $engine:expr, $settings:expr, $bytes:expr) => {
        App {
            name: $name,
            ops: $ops,
            durable: true,
            max_states: Some(servers::MAX_STATES),
            bytes: $bytes,
            available: || servers::available($engine),
            setup: |d, e| servers::setup(d, e, $engine, $settings),
            act: |d, e, ack| servers::act(d, e, $engine, $settings, ack),
            check: |d, e, a| servers::check(d, e, $engine, $settings, a),
        }
    };
}

/// Every application, in the report's row order.
pub const TABLE: &[App] = &[
    App {
        name: "sqlite-rollback",
        ops: "sqlite3: journal_mode=DELETE, synchronous=FULL; 4 transactions of 3 rows, each acknowledged when COMMIT returns",
        durable: true,
        max_states: None,
        bytes: SMALL,
        available: || have_tool("sqlite3", "sqlite3"),
        setup: |d, _| sqlite_setup(d, "DELETE"),
        act: |d, _, ack| sqlite_act(d, "FULL", ack),
        check: |d, _, a| sqlite_check(d, a),
    },
    App {
        name: "sqlite-rollback-extra",
        ops: "sqlite3: journal_mode=DELETE, synchronous=EXTRA (the directory synced after the journal's unlink); 4 transactions",
        durable: true,
        max_states: None,
        bytes: SMALL,
        available: || have_tool("sqlite3", "sqlite3"),
        setup: |d, _| sqlite_setup(d, "DELETE"),
        act: |d, _, ack| sqlite_act(d, "EXTRA", ack),
        check: |d, _, a| sqlite_check(d, a),
    },
    App {
        name: "sqlite-wal",
        ops: "sqlite3: journal_mode=WAL, synchronous=FULL; 4 transactions, then the close (checkpoint, WAL removed)",
        durable: true,
        max_states: None,
        bytes: SMALL,
        available: || have_tool("sqlite3", "sqlite3"),
        setup: |d, _| sqlite_setup(d, "WAL"),
        act: |d, _, ack| sqlite_act(d, "FULL", ack),
        check: |d, _, a| sqlite_check(d, a),
    },
    App {
        name: "sqlite-wal-normal",
        ops: "sqlite3: journal_mode=WAL, synchronous=NORMAL (consistency promised, not durability); 4 transactions, then the close",
        durable: false,
        max_states: None,
        bytes: SMALL,
        available: || have_tool("sqlite3", "sqlite3"),
        setup: |d, _| sqlite_setup(d, "WAL"),
        act: |d, _, ack| sqlite_act(d, "NORMAL", ack),
        check: |d, _, a| sqlite_check(d, a),
    },
    App {
        name: "git",
        ops: "git 2.39, core.fsync unset: init; add+commit 2 files; branch other; commit -a (second); checkout other; each acknowledged when the command returns",
        durable: true,
        max_states: None,
        bytes: SMALL,
        available: || have_tool("git", "git"),
        setup: |_, _| Ok(()),
        act: |d, _, ack| git_act(d, &[], ack),
        check: |d, _, a| git_check(d, a),
    },
    App {
        name: "git-fsync-all",
        ops: "git 2.39, core.fsync=all, core.fsyncMethod=fsync: the same protocol",
        durable: true,
        max_states: None,
        bytes: SMALL,
        available: || have_tool("git", "git"),
        setup: |_, _| Ok(()),
        act: |d, _, ack| git_act(d, &[("core.fsync", "all"), ("core.fsyncMethod", "fsync")], ack),
        check: |d, _, a| git_check(d, a),
    },
    server_app!(
        "postgresql",
        "PostgreSQL 15 defaults (fsync=on, synchronous_commit=on, full_page_writes=on): start; 4 transactions of 3 rows through psql, each acknowledged when COMMIT returns; fast shutdown",
        DbEngine::Postgresql,
        servers::PG_DURABLE,
        servers::PG_BYTES
    ),
    server_app!(
        "postgresql-async",
        "PostgreSQL 15, synchronous_commit=off (consistency promised, the last commits may be lost): the same protocol, judged for durability to show the accounting can fail",
        DbEngine::Postgresql,
        servers::PG_ASYNC,
        servers::PG_BYTES
    ),
    server_app!(
        "mariadb",
        "MariaDB 10.11 InnoDB, innodb_flush_log_at_trx_commit=1, doublewrite: start; 4 transactions of 3 rows through the mariadb client, each acknowledged when COMMIT returns; shutdown (SIGTERM)",
        DbEngine::Mariadb,
        servers::MARIADB_DURABLE,
        servers::MARIADB_BYTES
    ),
    server_app!(
        "mariadb-flush-2",
        "MariaDB 10.11 InnoDB, innodb_flush_log_at_trx_commit=2 (the redo log flushed about once a second): the same protocol, judged for durability to show the accounting can fail",
        DbEngine::Mariadb,
        servers::MARIADB_LAZY,
        servers::MARIADB_BYTES
    ),
    App {
        name: "redis-aof",
        ops: "redis-server 7.0, appendonly yes, appendfsync always (multi-part AOF): start; SET k1, SET k2 (1500 B), BGREWRITEAOF (new base and incr, the manifest renamed), SET k3, SET k4, each acknowledged when redis-cli returns; SHUTDOWN",
        durable: true,
        max_states: None,
        bytes: 1 << 20,
        available: redis::available,
        setup: redis::setup,
        act: redis::act,
        check: redis::check,
    },
];

/// The crash states of an application whose states are capped at `cap`: all of `log`'s
/// enumeration within `budget` (its own `max_states` ignored) when there are at most
/// `min(cap, budget.max_states)`, else a uniform draw of that many seeded by `budget.seed`,
/// in enumeration order; and how many were enumerated.
pub fn sample(log: &Log, budget: &Budget, cap: usize) -> (Vec<CrashState>, usize) {
    let all = Budget {
        max_states: usize::MAX,
        ..*budget
    };
    let (list, enumerated) = states::enumerate(log, &all);
    let n = cap.min(budget.max_states);
    if list.len() <= n {
        return (list, enumerated);
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(budget.seed ^ 0x5e1ec7);
    let mut idx: Vec<usize> = (0..list.len()).collect();
    idx.shuffle(&mut rng);
    idx.truncate(n);
    idx.sort_unstable();
    (idx.into_iter().map(|i| list[i].clone()).collect(), enumerated)
}

/// The application named `name`.
pub fn by_name(name: &str) -> Option<&'static App> {
    TABLE.iter().find(|a| a.name == name)
}

fn other(what: String) -> std::io::Error {
    std::io::Error::other(what)
}

/// Runs `program` with `args` in `dir` to its end: stdout, or an error with its stderr.
fn run(dir: &Path, program: &str, args: &[&str], envs: &[(String, String)]) -> std::io::Result<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let first = err
        .lines()
        .chain(std::str::from_utf8(&out.stdout).unwrap_or("").lines())
        .find(|l| !l.trim().is_empty());
    let what = args.iter().find(|a| !a.starts_with('-')).unwrap_or(&"");
    Err(other(format!(
        "{program} {what}: {} ({})",
        first.unwrap_or("no message"),
        out.status
    )))
}

fn sqlite_setup(dir: &Path, mode: &str) -> std::io::Result<()> {
    let sql = format!(
        "PRAGMA journal_mode={mode}; CREATE TABLE t(id INTEGER PRIMARY KEY, txn INTEGER NOT NULL, pad BLOB NOT NULL);"
    );
    run(dir, "sqlite3", &["-bail", DB, &sql], &[]).map(|_| ())
}

/// The transactions through one `sqlite3` process, each acknowledged when its `ack` line comes
/// back (module doc).
fn sqlite_act(dir: &Path, sync: &str, ack: &mut Ack) -> std::io::Result<()> {
    let mut c = Command::new("sqlite3");
    c.args(["-bail", DB]).current_dir(dir);
    feed_acked(
        c,
        "sqlite3",
        &format!("PRAGMA synchronous={sync};"),
        |n| {
            format!(
                "BEGIN; WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {ROWS}) \
                 INSERT INTO t(txn, pad) SELECT {n}, randomblob(1500) FROM c; COMMIT; SELECT 'ack {n}';"
            )
        },
        ack,
    )
}

/// Runs `cmd` (an SQL client) with its input and output piped, writes `prologue`, then each
/// transaction `txn(n)` for n in 1..=[`TXNS`] (ending in `SELECT 'ack n'`) and calls `ack(n)`
/// when the line `ack n` comes back, so the acknowledgement is the client's COMMIT returning;
/// then closes its input and requires a clean exit. `who` names the client in errors.
pub(super) fn feed_acked(
    mut cmd: Command,
    who: &str,
    prologue: &str,
    txn: impl Fn(u32) -> String,
    ack: &mut Ack,
) -> std::io::Result<()> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or_else(|| other(format!("{who}: no stdin")))?;
    let out = child.stdout.take().ok_or_else(|| other(format!("{who}: no stdout")))?;
    let mut lines = BufReader::new(out).lines();
    writeln!(stdin, "{prologue}")?;
    for n in 1..=TXNS {
        writeln!(stdin, "{}", txn(n))?;
        stdin.flush()?;
        let want = format!("ack {n}");
        let mut came = false;
        for l in lines.by_ref() {
            if l?.trim() == want {
                came = true;
                break;
            }
        }
        if !came {
            drop(stdin);
            let out = child.wait_with_output()?;
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            return Err(other(format!("{who} ended before {want}: {err}")));
        }
        ack(n)?;
    }
    drop(stdin);
    let status = child.wait()?;
    if !status.success() {
        return Err(other(format!("{who} closed with {status}")));
    }
    Ok(())
}

/// `PRAGMA integrity_check`, then the rows per transaction (module doc).
pub fn sqlite_check(dir: &Path, acked: &[u32]) -> AppVerdict {
    let sql = "PRAGMA integrity_check; SELECT txn || ' ' || count(*) FROM t GROUP BY txn ORDER BY txn;";
    let out = match run(dir, "sqlite3", &["-bail", DB, sql], &[]) {
        Ok(o) => o,
        Err(e) => return AppVerdict::Corrupt(e.to_string()),
    };
    let mut lines = out.lines();
    let first = lines.next().unwrap_or_default();
    if first != "ok" {
        return AppVerdict::Corrupt(format!("integrity_check: {first}"));
    }
    let mut present = Vec::new();
    for l in lines {
        let mut f = l.split_whitespace().map(str::parse::<u64>);
        match (f.next(), f.next()) {
            (Some(Ok(t)), Some(Ok(c))) => present.push((t, c)),
            _ => return AppVerdict::Corrupt(format!("unexpected row `{l}`")),
        }
    }
    let prefix = present
        .iter()
        .enumerate()
        .all(|(i, &(t, c))| t == i as u64 + 1 && c == ROWS as u64);
    if !prefix {
        return AppVerdict::Corrupt(format!(
            "rows are not whole transactions 1..=j: {present:?} (transaction, rows)"
        ));
    }
    let j = present.len() as u32;
    match acked.iter().copied().max() {
        Some(a) if a > j => AppVerdict::Lost(format!(
            "transactions 1..={j} of {TXNS} present; {a} were acknowledged before the crash"
        )),
        _ => AppVerdict::Holds,
    }
}

/// The environment of every git command: no system or user configuration, fixed identity and
/// dates (the same commits every run), the given `core.*` settings.
fn git_env(dir: &Path, config: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = [
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_AUTHOR_NAME", "fsbench"),
        ("GIT_AUTHOR_EMAIL", "fsbench@localhost"),
        ("GIT_COMMITTER_NAME", "fsbench"),
        ("GIT_COMMITTER_EMAIL", "fsbench@localhost"),
        ("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z"),
        ("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let parent = dir.parent().unwrap_or(dir);
    env.push(("GIT_CEILING_DIRECTORIES".into(), parent.to_string_lossy().into_owned()));
    env.push(("GIT_CONFIG_COUNT".into(), config.len().to_string()));
    for (i, (k, v)) in config.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}"), k.to_string()));
        env.push((format!("GIT_CONFIG_VALUE_{i}"), v.to_string()));
    }
    env
}

/// Acknowledgements: 1 `git init`, 2 the first commit, 3 the second, 4 the checkout.
fn git_act(
    dir: &Path,
    config: &[(&str, &str)],
    ack: &mut dyn FnMut(u32) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let env = git_env(dir, config);
    let git = |args: &[&str]| run(dir, "git", args, &env).map(|_| ());
    git(&["init", "-q", "-b", "main"])?;
    ack(1)?;
    std::fs::write(dir.join("a.txt"), "first version of a\n".repeat(200))?;
    std::fs::write(dir.join("b.txt"), "b\n".repeat(3000))?;
    git(&["add", "-A"])?;
    git(&["commit", "-q", "-m", "first"])?;
    ack(2)?;
    git(&["branch", "other"])?;
    std::fs::write(dir.join("a.txt"), "second version of a\n".repeat(200))?;
    git(&["commit", "-q", "-a", "-m", "second"])?;
    ack(3)?;
    git(&["checkout", "-q", "other"])?;
    ack(4)
}

/// What `.git/HEAD` holds when git does not take the folder for a repository (the file git
/// checks first): `; .git/HEAD: N bytes, all zero`, or nothing when it is a valid HEAD.
fn head_shape(dir: &Path) -> String {
    match std::fs::read(dir.join(".git/HEAD")) {
        Err(e) => format!("; .git/HEAD: {e}"),
        Ok(b) if b.starts_with(b"ref: refs/") => String::new(),
        Ok(b) if b.is_empty() => "; .git/HEAD: 0 bytes".into(),
        Ok(b) if b.iter().all(|x| *x == 0) => format!("; .git/HEAD: {} bytes, all zero", b.len()),
        Ok(b) => format!(
            "; .git/HEAD: {} bytes: {:?}",
            b.len(),
            String::from_utf8_lossy(&b[..b.len().min(40)])
        ),
    }
}

/// `git fsck --full`, HEAD, then the acknowledged commits and checkout (module doc).
pub fn git_check(dir: &Path, acked: &[u32]) -> AppVerdict {
    let last = acked.iter().copied().max().unwrap_or(0);
    if last == 0 {
        return AppVerdict::Holds; // nothing acknowledged, nothing promised
    }
    let env = git_env(dir, &[]);
    let git = |args: &[&str]| run(dir, "git", args, &env);
    if !dir.join(".git").is_dir() {
        return AppVerdict::Lost("no .git: the repository `git init` made is gone".into());
    }
    if let Err(e) = git(&["fsck", "--full", "--no-progress"]) {
        return AppVerdict::Corrupt(format!("{e}{}", head_shape(dir)));
    }
    if last < 2 {
        return AppVerdict::Holds;
    }
    if let Err(e) = git(&["rev-parse", "--verify", "HEAD^{commit}"]) {
        // An unborn branch (its ref never reached the disk) opens fine: the commit is lost.
        let target = git(&["symbolic-ref", "-q", "HEAD"]).unwrap_or_default();
        let target = target.trim();
        let packed = std::fs::read_to_string(dir.join(".git/packed-refs")).unwrap_or_default();
        if !target.is_empty() && !dir.join(".git").join(target).exists() && !packed.contains(target) {
            return AppVerdict::Lost(format!("HEAD's branch {target} does not exist (unborn)"));
        }
        return AppVerdict::Corrupt(format!("HEAD does not resolve to a commit: {e}"));
    }
    let log = git(&["log", "--format=%s", "main"]).unwrap_or_default();
    let subjects: Vec<&str> = log.lines().collect();
    let want: &[&str] = if last >= 3 { &["second", "first"] } else { &["first"] };
    if !subjects.ends_with(want) || subjects.len() < want.len() {
        return AppVerdict::Lost(format!("main's commits {subjects:?}; acknowledged: {want:?}"));
    }
    if last >= 4 {
        let head = git(&["symbolic-ref", "HEAD"]).unwrap_or_default();
        if head.trim() != "refs/heads/other" {
            return AppVerdict::Lost(format!("HEAD is `{}` after `git checkout other` returned", head.trim()));
        }
    }
    AppVerdict::Holds
}

#[cfg(test)]
mod tests {
    use super::*;

    fn have(tool: &str) -> bool {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    #[test]
    fn sqlite_check_passes_a_whole_prefix_and_reports_a_lost_ack_and_a_corrupt_page() {
        if !have("sqlite3") {
            panic!("sqlite3 is not installed: scripts/install.sh installs it");
        }
        let d = tempfile::tempdir().unwrap();
        sqlite_setup(d.path(), "DELETE").unwrap();
        let mut acks = Vec::new();
        sqlite_act(d.path(), "FULL", &mut |n| {
            acks.push(n);
            Ok(())
        })
        .unwrap();
        assert_eq!(acks, vec![1, 2, 3, 4]);
        assert_eq!(sqlite_check(d.path(), &acks), AppVerdict::Holds);
        // Drop transaction 4's rows: acknowledged but missing.
        run(d.path(), "sqlite3", &[DB, "DELETE FROM t WHERE txn = 4"], &[]).unwrap();
        assert!(matches!(sqlite_check(d.path(), &acks), AppVerdict::Lost(_)));
        assert_eq!(sqlite_check(d.path(), &[1, 2, 3]), AppVerdict::Holds);
        // Half a transaction: not a prefix of whole transactions.
        run(d.path(), "sqlite3", &[DB, "DELETE FROM t WHERE id = 2"], &[]).unwrap();
        assert!(matches!(sqlite_check(d.path(), &[]), AppVerdict::Corrupt(_)));
        // A page of the table overwritten with garbage.
        let db = d.path().join(DB);
        let f = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, &[0x5a; 4096], 4096).unwrap();
        let v = sqlite_check(d.path(), &[]);
        assert!(matches!(&v, AppVerdict::Corrupt(_)), "{v:?}");
    }

    #[test]
    fn git_check_passes_the_protocol_and_reports_a_deleted_object_and_a_lost_commit() {
        if !have("git") {
            panic!("git is not installed: scripts/install.sh installs it");
        }
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        let mut acks = Vec::new();
        git_act(&repo, &[], &mut |n| {
            acks.push(n);
            Ok(())
        })
        .unwrap();
        assert_eq!(acks, vec![1, 2, 3, 4]);
        assert_eq!(git_check(&repo, &acks), AppVerdict::Holds);
        // main moved back to the first commit: the acknowledged second commit is lost.
        let env = git_env(&repo, &[]);
        run(&repo, "git", &["update-ref", "refs/heads/main", "main~1"], &env).unwrap();
        assert!(matches!(git_check(&repo, &acks), AppVerdict::Lost(_)));
        assert_eq!(git_check(&repo, &[1, 2]), AppVerdict::Holds);
        // A deleted object: fsck fails.
        let blob = run(&repo, "git", &["rev-parse", "main:b.txt"], &env).unwrap();
        let blob = blob.trim();
        std::fs::remove_file(repo.join(".git/objects").join(&blob[..2]).join(&blob[2..])).unwrap();
        let v = git_check(&repo, &[1]);
        assert!(matches!(&v, AppVerdict::Corrupt(m) if m.contains("fsck")), "{v:?}");
        assert_eq!(git_check(&repo, &[]), AppVerdict::Holds, "nothing acknowledged");
        // HEAD's data lost, its size kept: what a crash leaves when metadata goes first.
        std::fs::write(repo.join(".git/HEAD"), [0u8; 23]).unwrap();
        let v = git_check(&repo, &[1]);
        assert!(
            matches!(&v, AppVerdict::Corrupt(m) if m.contains("HEAD: 23 bytes, all zero")),
            "{v:?}"
        );
    }
}
