//! OLTP against a real database server (MariaDB or PostgreSQL) that fsbench starts with its
//! data directory on the filesystem under test.
//!
//! One repeat, in order (everything but step 6 untimed):
//! 1. find the tools (`mariadbd`, `mariadb-install-db`, `mariadb-admin`, `mariadb`; or
//!    `postgres`, `initdb`, `pg_isready`, `psql` from the newest `/usr/lib/postgresql/*/bin` or
//!    PATH; `sysbench` or `pgbench`), else [`EngineError::Unavailable`] with the apt command;
//! 2. create `db-data` (the data directory) and `db-run` (unix socket, pid file, logs) in the
//!    run directory, owned by the service user (`mysql` / `postgres`) when running as root;
//! 3. initialise: `mariadb-install-db --no-defaults --auth-root-authentication-method=normal
//!    --skip-test-db` / `initdb -A trust -U postgres -E UTF8 --locale=C`;
//! 4. start the server as a child process, **listening only on the unix socket** in `db-run`
//!    (MariaDB `--skip-networking`; PostgreSQL `listen_addresses=''`), and poll
//!    `mariadb-admin ping` / `pg_isready` until it answers;
//! 5. create the `sbtest` database and load it with `sysbench oltp_read_only prepare` (or
//!    `pgbench -i`);
//! 6. after `sync` + drop caches, run `sysbench oltp_<mode> run` (or pgbench) for `time` and
//!    parse its report ([`crate::external`]);
//! 7. stop the server and remove both directories.
//!
//! **The server is always stopped before `run` returns**, also on error and interrupt: it is
//! held by a [`ServerProcess`] guard whose drop sends the polite stop signal (SIGTERM for
//! mariadbd, SIGINT = "fast shutdown" for the postmaster), waits up to 60 s, then SIGKILLs the
//! server's whole process group, and reaps it. Every child (server, tools, client) runs in its
//! own process group, so a terminal's Ctrl-C reaches only fsbench, which then stops them in
//! order (client, server) before the filesystem is unmounted; and every child gets
//! `PR_SET_PDEATHSIG = SIGKILL`, so even a SIGKILLed fsbench leaves no server holding the mount.
//! While waiting for a tool (`engine::child`), the interrupt flag is polled every 10 ms and the
//! tool's process group killed when it is set.
//!
//! **A PostgreSQL server's shared memory never outlives it**: a killed postmaster leaves its
//! dynamic shared memory files `/dev/shm/PostgreSQL.<handle>` and its SysV header segment
//! behind. While it starts, the postmaster's maps show them; the removal step
//! ([`super::pgshm::RemovePgShm`]) is recorded in the run's undo log at once, applied after
//! every kill ([`ServerProcess::kill`], the stop's SIGKILL fallback; a polite stop lets
//! PostgreSQL remove its own, and the step then finds nothing) and dropped once done, so
//! after a SIGKILLed fsbench (`PR_SET_PDEATHSIG` kills the postmaster) `fsbench cleanup`
//! removes them. The server is started with `dynamic_shared_memory_type=posix` (Linux's
//! default) so they are files outside the filesystem under test.
//!
//! Running as root, the server and its tools run as the service user (set with setuid before
//! exec, the data directory chowned to it); every directory above the run directory must then
//! be searchable by that user, which is checked with a message saying what to change. Not
//! root, they run as the invoking user.
//!
//! CPU: `cpu_process` of the phase is fsbench's own CPU plus the CPU used by the server's
//! process tree (from `/proc/PID/stat`, children included) and by the client (rusage of waited
//! children), over the phase's wall time, in percent of one CPU.
//!
//! References: mariadbd(8), mariadb-install-db(1), initdb(1), postgres(1) (shutdown modes),
//! sysbench 1.0 `--help`, pgbench(1); research/capabilities.md rows 8a and 8b (the commands
//! that worked on this machine).

use super::pgshm::RemovePgShm;
use super::{Client, DbEngine, OltpSpec};
use crate::child::{self, describe, ChildError, Sink, Watch};
use crate::host::find_tool;
use crate::host::is_root;
use crate::metric::{MetricId, RawSample, Unit};
use crate::parsers::{pgbench, sysbench};
use crate::phase::{Phases, Policy};
use crate::undo::UndoLog;
use crate::Unavailable;
use crate::{EngineError, RunContext};
use std::fs::File;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Name of the data directory in the run directory.
pub const DATA_DIR: &str = "db-data";
/// Name of the directory holding the socket, pid file and logs.
pub const RUN_DIR: &str = "db-run";
/// Database the tables are loaded into.
const DB_NAME: &str = "sbtest";
/// How long the server may take to answer after starting.
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a polite shutdown may take before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);
/// How long initialisation and database creation may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(300);
/// Extra time the client may need beyond `time` (connecting, its own report).
const CLIENT_GRACE: Duration = Duration::from_secs(300);
/// Poll period while waiting for a server to stop.
const POLL: Duration = Duration::from_millis(20);
/// Longest unix socket path (sun_path is 108 bytes, with a terminating NUL).
const MAX_SOCKET_PATH: usize = 107;
/// Longest socket file name: `mariadbd.sock` and PostgreSQL's `.s.PGSQL.5432` are 13 bytes.
const SOCKET_NAME_LEN: usize = 13;

/// The programs a server engine needs.
#[derive(Clone, Debug)]
pub struct Tools {
    /// Which server.
    pub engine: DbEngine,
    /// `mariadbd` / `postgres`.
    pub server: PathBuf,
    /// `mariadb-install-db` / `initdb`.
    pub init: PathBuf,
    /// `mariadb-admin` / `pg_isready`.
    pub ping: PathBuf,
    /// `mariadb` / `psql`.
    pub sql: PathBuf,
    /// `sysbench` / `pgbench`; `None` for a caller that drives the server itself
    /// ([`server_tools`]).
    pub client: Option<PathBuf>,
    /// The load generator.
    pub client_kind: Client,
}

impl Tools {
    /// `mariadb 10.11.19-MariaDB-0+deb12u1` / `postgresql 15.18` from the server's `--version`.
    pub fn server_version(&self) -> Option<String> {
        version_line(&self.server).and_then(|l| server_version(self.engine, &l))
    }
}

fn first_tool(names: &[&str]) -> Option<PathBuf> {
    names.iter().find_map(|n| find_tool(n))
}

/// The newest PostgreSQL major version's binary directory (Debian's layout), if any.
fn pg_bindir() -> Option<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((v, bin))
        })
        .collect();
    dirs.sort();
    dirs.pop().map(|(_, d)| d)
}

fn pg_tool(bindir: Option<&Path>, name: &str) -> Option<PathBuf> {
    bindir
        .map(|d| d.join(name))
        .filter(|p| p.is_file())
        .or_else(|| find_tool(name))
}

/// Finds the tools `engine` needs with `client`, or says what to install.
pub fn availability(engine: DbEngine, client: Client) -> Result<Tools, Unavailable> {
    find_tools(engine, Some(client))
}

/// Finds the server's own tools (no load generator), or says what to install.
pub fn server_tools(engine: DbEngine) -> Result<Tools, Unavailable> {
    find_tools(engine, None)
}

fn find_tools(engine: DbEngine, client: Option<Client>) -> Result<Tools, Unavailable> {
    let sysbench = || {
        find_tool("sysbench").ok_or_else(|| {
            "sysbench is not installed: run `apt-get install sysbench` (or scripts/install.sh)".to_string()
        })
    };
    match engine {
        DbEngine::Mariadb => {
            let missing = |what: &str| {
                format!("mariadb-server is not installed (no {what}): run `apt-get install mariadb-server sysbench` (or scripts/install.sh)")
            };
            Ok(Tools {
                engine,
                server: first_tool(&["mariadbd", "mysqld"]).ok_or_else(|| missing("mariadbd"))?,
                init: first_tool(&["mariadb-install-db", "mysql_install_db"])
                    .ok_or_else(|| missing("mariadb-install-db"))?,
                ping: first_tool(&["mariadb-admin", "mysqladmin"]).ok_or_else(|| missing("mariadb-admin"))?,
                sql: first_tool(&["mariadb", "mysql"]).ok_or_else(|| missing("the mariadb client"))?,
                client: client.map(|_| sysbench()).transpose()?,
                client_kind: Client::Sysbench,
            })
        }
        DbEngine::Postgresql => {
            let bindir = pg_bindir();
            let b = bindir.as_deref();
            let missing = |what: &str| {
                format!("postgresql is not installed (no {what}): run `apt-get install postgresql sysbench` (or scripts/install.sh)")
            };
            let client_path = match client {
                None => None,
                Some(Client::Sysbench) => Some(sysbench()?),
                Some(Client::Pgbench) => Some(pg_tool(b, "pgbench").ok_or_else(|| {
                    "pgbench is not installed: run `apt-get install postgresql-contrib` (or postgresql-client)"
                        .to_string()
                })?),
            };
            Ok(Tools {
                engine,
                server: pg_tool(b, "postgres").ok_or_else(|| missing("postgres"))?,
                init: pg_tool(b, "initdb").ok_or_else(|| missing("initdb"))?,
                ping: pg_tool(b, "pg_isready").ok_or_else(|| missing("pg_isready"))?,
                sql: pg_tool(b, "psql").ok_or_else(|| missing("psql"))?,
                client: client_path,
                client_kind: client.unwrap_or(Client::Pgbench),
            })
        }
        DbEngine::Sqlite => Err("sqlite runs in-process and needs no server".into()),
    }
}

/// `(uid, gid)` of a user from the password database.
pub(crate) fn lookup_user(name: &str) -> Option<(u32, u32)> {
    let cname = std::ffi::CString::new(name).ok()?;
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: passwd is plain old data filled by getpwnam_r.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call; buf outlives it.
    let rc = unsafe { libc::getpwnam_r(cname.as_ptr(), &mut pwd, buf.as_mut_ptr(), buf.len(), &mut out) };
    (rc == 0 && !out.is_null()).then_some((pwd.pw_uid, pwd.pw_gid))
}

/// Checks that `uid`/`gid` may search every directory from `/` down to `dir`.
fn check_traversable(dir: &Path, uid: u32, gid: u32, user: &str) -> Result<(), EngineError> {
    let mut p = Some(dir);
    while let Some(d) = p {
        let md = std::fs::metadata(d).map_err(|e| EngineError::io(format!("stat {}", d.display()), e))?;
        let mode = md.permissions().mode();
        let ok = if md.uid() == uid {
            mode & 0o100 != 0
        } else if md.gid() == gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !ok {
            return Err(EngineError::Invalid(format!(
                "user {user} cannot reach {}: {} has mode {:o}; make it searchable (chmod o+x {}) or choose a scratch folder under a world-searchable path",
                dir.display(),
                d.display(),
                mode & 0o7777,
                d.display()
            )));
        }
        p = d.parent();
    }
    Ok(())
}

/// A command in its own process group, killed if fsbench dies, optionally as another user.
fn command(program: &Path, user: Option<(u32, u32)>, cwd: &Path) -> Command {
    let mut c = Command::new(program);
    c.process_group(0).stdin(Stdio::null()).current_dir(cwd);
    if let Some((uid, gid)) = user {
        // std drops supplementary groups when a root parent sets the uid.
        c.uid(uid).gid(gid);
    }
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
    unsafe {
        c.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c
}

/// The last `n` non-empty lines of a log, joined with " / ".
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
}

/// The first `n` lines of a log that name an error (`ERROR`, `error:`, `FATAL`), joined with
/// " / ": a tool such as mariadb-install-db ends its log with boilerplate after the error.
fn error_lines(text: &str, n: usize) -> Option<String> {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("ERROR") || l.contains("FATAL") || l.to_lowercase().contains("error:"))
        .take(n)
        .collect();
    (!lines.is_empty()).then(|| lines.join(" / "))
}

fn tool_error(cmd: &str, status: &str, log: &str) -> EngineError {
    let why = match error_lines(log, 3) {
        Some(errors) => format!("{errors} … {}", tail(log, 2)),
        None => tail(log, 4),
    };
    EngineError::io(format!("`{cmd}`"), io::Error::other(format!("{status}: {why}")))
}

/// `kill(-pgid, sig)`, ignoring "no such process".
fn kill_group(pgid: i32, sig: i32) {
    // SAFETY: kill has no memory preconditions; a negative pid addresses the process group.
    unsafe { libc::kill(-pgid, sig) };
}

/// Runs `cmd` to completion with stdout and stderr in `log`, polling `interrupt` (the whole
/// process group is killed when it is set) and a timeout. Returns the log text.
fn run_logged(mut cmd: Command, log: &Path, interrupt: &AtomicBool, timeout: Duration) -> Result<String, EngineError> {
    let what = describe(&cmd);
    let f = File::create(log).map_err(|e| EngineError::io(format!("create {}", log.display()), e))?;
    let f2 = f
        .try_clone()
        .map_err(|e| EngineError::io(format!("dup {}", log.display()), e))?;
    let watch = Watch {
        interrupt: Some(interrupt),
        timeout: (timeout != Duration::MAX).then_some(timeout),
        kill_group: true,
    };
    let done = child::run(&mut cmd, Sink::File(f), Sink::File(f2), watch);
    let text = std::fs::read_to_string(log).unwrap_or_default();
    match done {
        Ok(d) if d.status.success() => Ok(text),
        Ok(d) => Err(tool_error(&what, &d.status.to_string(), &text)),
        Err(ChildError::Interrupted) => Err(EngineError::Interrupted),
        Err(ChildError::TimedOut(t)) => Err(tool_error(&what, &format!("killed after {} s", t.as_secs()), &text)),
        Err(ChildError::Spawn(e)) => Err(EngineError::io(format!("run `{what}`"), e)),
        Err(ChildError::Io(e)) => Err(EngineError::io(format!("wait for `{what}`"), e)),
    }
}

/// Process state letter from `/proc/PID/stat` (`Z` for a zombie), `None` if gone.
fn proc_state(pid: i32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit_once(')')?.1.trim_start().chars().next()
}

/// A running database server; stopping it is guaranteed (see the module documentation).
pub struct ServerProcess {
    child: Option<Child>,
    name: &'static str,
    stop_signal: i32,
    log: PathBuf,
    /// How long the polite stop may take before SIGKILL ([`STOP_TIMEOUT`]).
    stop_timeout: Duration,
    /// A PostgreSQL server's data directory: its shared memory is looked for
    /// ([`ServerProcess::watch_shm`]); `None` for MariaDB, which makes none that outlives it.
    pg_data: Option<PathBuf>,
    /// The undo step of a PostgreSQL server's shared memory once found, recorded in `undo`.
    shm: Option<RemovePgShm>,
    /// The run's undo log (none outside a run).
    undo: Option<Arc<dyn UndoLog>>,
}

impl ServerProcess {
    /// The server's pid (also its process group id), or 0 once stopped.
    pub fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    /// Looks for a running PostgreSQL server's shared memory in its postmaster's maps
    /// ([`RemovePgShm::find`]) until found, and records its removal in the run's undo log the
    /// moment it is found: from then on `fsbench cleanup` removes what a SIGKILL leaves.
    fn watch_shm(&mut self) {
        if self.shm.is_some() || self.child.is_none() {
            return;
        }
        let Some(data) = &self.pg_data else {
            return;
        };
        if let Some(step) = RemovePgShm::find(self.pid() as u32, data) {
            if let Some(log) = &self.undo {
                log.push(&step);
            }
            self.shm = Some(step);
        }
    }

    /// Once the server is reaped: removes the shared memory it left (none after a shutdown,
    /// which removes its own) and drops the record; on failure the record stays for
    /// `fsbench cleanup` and the error is the note.
    fn release_shm(&mut self) -> Result<(), StopError> {
        let Some(step) = self.shm.take() else {
            return Ok(());
        };
        match step.remove() {
            Ok(_) => {
                if let Some(log) = &self.undo {
                    log.pop(&step);
                }
                Ok(())
            }
            Err(e) => Err(StopError {
                name: self.name.to_string(),
                killed_after: None,
                shm_left: Some(e.to_string()),
            }),
        }
    }

    /// The shared memory step found so far (tests).
    #[cfg(test)]
    fn shm_step(&self) -> Option<&RemovePgShm> {
        self.shm.as_ref()
    }

    /// The last lines of the server's log, joined with " / ".
    pub fn log_tail(&self) -> String {
        tail(&std::fs::read_to_string(&self.log).unwrap_or_default(), 4)
    }

    /// Stops the server: the polite signal, up to [`STOP_TIMEOUT`], then SIGKILL to its process
    /// group; always reaps it, then removes the shared memory a killed PostgreSQL server left.
    /// `Err` (a note for the report) when it had to be killed or its shared memory could not be
    /// removed.
    pub fn stop(&mut self) -> Result<(), StopError> {
        self.watch_shm();
        let Some(mut child) = self.child.take() else {
            return self.release_shm();
        };
        let pid = child.id() as i32;
        // SAFETY: the child is not reaped yet, so `pid` is still ours.
        unsafe { libc::kill(pid, self.stop_signal) };
        let t0 = Instant::now();
        let mut killed = false;
        loop {
            match proc_state(pid) {
                None | Some('Z') => break,
                _ => {}
            }
            if !killed && t0.elapsed() > self.stop_timeout {
                kill_group(pid, libc::SIGKILL);
                killed = true;
            }
            if t0.elapsed() > self.stop_timeout + Duration::from_secs(30) {
                break; // unkillable (D state); reaping below blocks until it goes
            }
            std::thread::sleep(POLL);
        }
        // The leader is a zombie, so the group id is still reserved: sweep what is left of the
        // group, then reap the leader. (PostgreSQL's children call setsid(): they are in
        // sessions of their own, which this does not reach; they exit when the postmaster dies,
        // and `release_shm` waits for that.)
        kill_group(pid, libc::SIGKILL);
        let _ = child.wait();
        let shm_left = self.release_shm().err().and_then(|e| e.shm_left);
        if !killed && shm_left.is_none() {
            return Ok(());
        }
        Err(StopError {
            name: self.name.to_string(),
            killed_after: killed.then_some((self.stop_timeout, self.stop_signal)),
            shm_left,
        })
    }
}

impl ServerProcess {
    /// Kills the server's whole process group with SIGKILL at once (no shutdown: what a power
    /// cut does to it), reaps it, then removes the shared memory a PostgreSQL server leaves
    /// (once its children, in sessions of their own, have exited). `Err` says what is left.
    /// Nothing is looked up before the signal: the shared memory was found while the server
    /// started, so the kill follows the caller's cut at once.
    pub fn kill(&mut self) -> Result<(), StopError> {
        if let Some(mut child) = self.child.take() {
            kill_group(child.id() as i32, libc::SIGKILL);
            // The whole group got the signal at once; the leader cannot fork any more.
            let _ = child.wait();
        }
        self.release_shm()
    }
}

/// What went wrong stopping or killing a server, a note for the report: it had to be killed
/// after the polite signal's timeout, its shared memory is left (for `fsbench cleanup`), or both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StopError {
    /// The server's name.
    pub name: String,
    /// The timeout and the polite signal after which it was SIGKILLed.
    pub killed_after: Option<(Duration, i32)>,
    /// Why its shared memory could not be removed.
    pub shm_left: Option<String>,
}

impl std::fmt::Display for StopError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = &self.name;
        if let Some((timeout, signal)) = self.killed_after {
            write!(
                f,
                "{name} did not stop within {} s after signal {signal}; it was killed (SIGKILL)",
                timeout.as_secs()
            )?;
            if self.shm_left.is_some() {
                f.write_str("; ")?;
            }
        }
        if let Some(why) = &self.shm_left {
            write!(f, "{name}'s shared memory is left: {why}; run `fsbench cleanup`")?;
        }
        Ok(())
    }
}

impl std::error::Error for StopError {}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Err(note) = self.stop() {
            eprintln!("fsbench: {note}");
        }
    }
}

/// Where everything of one server lives.
struct Layout {
    data: PathBuf,
    run: PathBuf,
    /// `run` is a private folder outside the filesystem under test (the socket path would be
    /// too long inside it), removed at the end.
    run_outside: bool,
    user: Option<(u32, u32)>,
}

impl Layout {
    fn socket(&self) -> PathBuf {
        self.run.join("mariadbd.sock")
    }
}

fn make_dir(path: &Path, user: Option<(u32, u32)>, mode: u32) -> Result<(), EngineError> {
    std::fs::create_dir(path).map_err(|e| EngineError::io(format!("mkdir {}", path.display()), e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| EngineError::io(format!("chmod {}", path.display()), e))?;
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(path, Some(uid), Some(gid))
            .map_err(|e| EngineError::io(format!("chown {}", path.display()), e))?;
    }
    Ok(())
}

fn layout(engine: DbEngine, dir: &Path, run_parent: &Path, existing: bool) -> Result<Layout, EngineError> {
    let user =
        if is_root() {
            let name = match engine {
                DbEngine::Mariadb => "mysql",
                _ => "postgres",
            };
            let ids =
                lookup_user(name).ok_or_else(|| {
                    EngineError::Unavailable(format!(
                "the `{name}` user does not exist: reinstall the server package (apt-get install --reinstall {})",
                if engine == DbEngine::Mariadb { "mariadb-server" } else { "postgresql" }
            ))
                })?;
            check_traversable(dir, ids.0, ids.1, name)?;
            Some(ids)
        } else {
            None
        };
    let data = dir.join(DATA_DIR);
    let mut run = run_parent.join(RUN_DIR);
    let mut run_outside = false;
    if run.as_os_str().len() + 1 + SOCKET_NAME_LEN > MAX_SOCKET_PATH {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        run = std::env::temp_dir().join(format!("fsbench-db-{}-{nanos}", std::process::id()));
        run_outside = true;
    }
    let l = Layout {
        data,
        run,
        run_outside,
        user,
    };
    if !existing {
        make_dir(&l.data, user, 0o700)?;
    } else if !l.data.is_dir() {
        let e = io::Error::new(io::ErrorKind::NotFound, "no data directory");
        return Err(EngineError::io(format!("open {}", l.data.display()), e));
    }
    make_dir(&l.run, user, 0o755)?;
    Ok(l)
}

/// The first line of `program --version`.
fn version_line(program: &Path) -> Option<String> {
    let out = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).lines().next().map(str::to_string)
}

/// `mariadb 10.11.19-MariaDB-0+deb12u1` or `postgresql 15.18` from the server's `--version`.
pub fn server_version(engine: DbEngine, line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    match engine {
        DbEngine::Mariadb => {
            words.find(|w| *w == "Ver")?;
            Some(format!("mariadb {}", words.next()?))
        }
        DbEngine::Postgresql => {
            words.find(|w| *w == "(PostgreSQL)")?;
            Some(format!("postgresql {}", words.next()?))
        }
        DbEngine::Sqlite => None,
    }
}

/// `(tool, first line of --version)` of the server and the client, for the session record.
pub fn tool_versions(engine: DbEngine, client: Client) -> Vec<(String, String)> {
    let Ok(tools) = availability(engine, client) else {
        return Vec::new();
    };
    [Some(&tools.server), tools.client.as_ref()]
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let name = p.file_name()?.to_string_lossy().into_owned();
            Some((name, version_line(p)?))
        })
        .collect()
}

/// What a server is started with beyond its data directory and socket.
#[derive(Clone, Debug)]
pub struct StartOptions {
    /// MariaDB's InnoDB buffer pool / PostgreSQL's `shared_buffers`, in bytes.
    pub buffer_pool: u64,
    /// Client connections the server accepts.
    pub max_connections: u32,
    /// Further settings as `name=value`: PostgreSQL `-c name=value`, MariaDB `--name=value`.
    pub settings: Vec<String>,
}

/// One server's tools and folders: initialised, started and stopped the same way by `oltp`
/// and by `powercut` (which starts it again on a data directory recovered after a cut).
pub struct Instance<'a> {
    /// The server's programs.
    pub tools: Tools,
    l: Layout,
    interrupt: &'a AtomicBool,
    /// The run's undo log, given to each started server for its shared memory's record.
    undo: Option<Arc<dyn UndoLog>>,
}

impl<'a> Instance<'a> {
    /// Creates the data directory `DIR/db-data` and the socket folder `RUN_PARENT/db-run`
    /// (a private folder under the temporary directory when that path is too long for a unix
    /// socket), owned by the service user when running as root. Nothing is started. A server
    /// it starts records the removal of its shared memory in `undo` (the run's undo log,
    /// [`RunContext::state`]) for `fsbench cleanup`.
    pub fn create(
        tools: Tools,
        (dir, run_parent): (&Path, &Path),
        interrupt: &'a AtomicBool,
        undo: Option<&dyn UndoLog>,
    ) -> Result<Self, EngineError> {
        let l = layout(tools.engine, dir, run_parent, false)?;
        Ok(Instance {
            tools,
            l,
            interrupt,
            undo: undo.map(|u| u.share()),
        })
    }

    /// Like [`Instance::create`], on the data directory `DIR/db-data` an earlier instance
    /// initialised (which must exist; it is not chowned): only the socket folder is created.
    /// `crashprops`' servers start on one initialised before the recording, and on a crash
    /// state's copy of it.
    pub fn open(
        tools: Tools,
        (dir, run_parent): (&Path, &Path),
        interrupt: &'a AtomicBool,
        undo: Option<&dyn UndoLog>,
    ) -> Result<Self, EngineError> {
        let l = layout(tools.engine, dir, run_parent, true)?;
        Ok(Instance {
            tools,
            l,
            interrupt,
            undo: undo.map(|u| u.share()),
        })
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.l.data
    }

    /// The folder holding the unix socket (a PostgreSQL client's `host`) and the logs.
    pub fn socket_dir(&self) -> &Path {
        &self.l.run
    }

    /// Whether the socket folder is outside `run_parent` (its path was too long).
    pub fn run_outside(&self) -> bool {
        self.l.run_outside
    }

    /// Removes the data directory and the socket folder (the server must be stopped).
    pub fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.l.data);
        let _ = std::fs::remove_dir_all(&self.l.run);
    }

    fn cmd(&self, program: &Path) -> Command {
        command(program, self.l.user, &self.l.run)
    }

    fn log(&self, name: &str) -> PathBuf {
        self.l.run.join(name)
    }

    /// Initialises the data directory (`mariadb-install-db` / `initdb`).
    pub fn init(&self) -> Result<(), EngineError> {
        self.init_with(&[])
    }

    /// [`Instance::init`], MariaDB's bootstrap server also given `settings` (`name=value`, as
    /// [`StartOptions::settings`]; `innodb_log_file_size` sizes the redo log it creates);
    /// PostgreSQL's `initdb` ignores them.
    pub fn init_with(&self, settings: &[String]) -> Result<(), EngineError> {
        let mut c = self.cmd(&self.tools.init);
        match self.tools.engine {
            DbEngine::Mariadb => {
                c.arg("--no-defaults")
                    .arg(format!("--datadir={}", self.l.data.display()))
                    // Its bootstrap server's temporary tables in this instance's folder, not a
                    // /tmp that a concurrent bootstrap shares (CI: "Could not remove temporary table").
                    .arg(format!("--tmpdir={}", self.l.run.display()))
                    .args(["--auth-root-authentication-method=normal", "--skip-test-db"]);
                c.args(settings.iter().map(|kv| format!("--{kv}")));
            }
            _ => {
                c.arg("-D").arg(&self.l.data).args([
                    "-A",
                    "trust",
                    "-U",
                    "postgres",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-instructions",
                ]);
            }
        }
        if self.tools.engine == DbEngine::Mariadb {
            return run_logged(c, &self.log("init.log"), self.interrupt, SETUP_TIMEOUT).map(drop);
        }
        // initdb is not interrupted: its bootstrap `postgres --boot` holds a SysV header and
        // /dev/shm segments that only its own exit removes, and no record of them exists to
        // remove them after a kill (seen: a Ctrl-C during initdb left two segment files and the
        // header). It takes a second or two; the interrupt is answered when it is done, and
        // SETUP_TIMEOUT still bounds it.
        static NEVER: AtomicBool = AtomicBool::new(false);
        run_logged(c, &self.log("init.log"), &NEVER, SETUP_TIMEOUT)?;
        if self.interrupt.load(Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        Ok(())
    }

    /// Starts the server with `o` and waits until it answers (its crash recovery first, on a
    /// data directory left by a killed server).
    pub fn start(&self, o: &StartOptions) -> Result<ServerProcess, EngineError> {
        let mut c = self.cmd(&self.tools.server);
        let conns = o.max_connections.to_string();
        let (name, stop_signal) = match self.tools.engine {
            DbEngine::Mariadb => {
                c.arg("--no-defaults")
                    .arg(format!("--datadir={}", self.l.data.display()))
                    .arg(format!("--socket={}", self.l.socket().display()))
                    .arg(format!("--pid-file={}", self.l.run.join("mariadbd.pid").display()))
                    .arg(format!("--tmpdir={}", self.l.run.display()))
                    .arg("--skip-networking")
                    .arg(format!("--innodb-buffer-pool-size={}", o.buffer_pool))
                    .arg(format!("--max-connections={conns}"))
                    .args(o.settings.iter().map(|kv| format!("--{kv}")));
                ("mariadbd", libc::SIGTERM)
            }
            _ => {
                c.arg("-D").arg(&self.l.data).args([
                    "-c",
                    "listen_addresses=",
                    "-c",
                    &format!("unix_socket_directories={}", self.l.run.display()),
                    "-c",
                    &format!("shared_buffers={}kB", o.buffer_pool / 1024),
                    "-c",
                    &format!("max_connections={conns}"),
                    "-c",
                    "max_wal_size=256MB",
                    // Its dynamic shared memory as /dev/shm files, which `pgshm` finds and
                    // removes after a kill (the default on Linux, stated so it holds).
                    "-c",
                    "dynamic_shared_memory_type=posix",
                ]);
                for kv in &o.settings {
                    c.args(["-c", kv]);
                }
                // SIGINT is PostgreSQL's "fast" shutdown (SIGTERM waits for clients).
                ("postgres", libc::SIGINT)
            }
        };
        let log = self.log("server.log");
        let f = File::create(&log).map_err(|e| EngineError::io(format!("create {}", log.display()), e))?;
        let f2 = f
            .try_clone()
            .map_err(|e| EngineError::io(format!("dup {}", log.display()), e))?;
        let what = describe(&c);
        let child = c
            .stdout(f)
            .stderr(f2)
            .spawn()
            .map_err(|e| EngineError::io(format!("start `{what}`"), e))?;
        let mut server = ServerProcess {
            child: Some(child),
            name,
            stop_signal,
            log,
            stop_timeout: STOP_TIMEOUT,
            pg_data: (self.tools.engine == DbEngine::Postgresql).then(|| self.l.data.clone()),
            shm: None,
            undo: self.undo.clone(),
        };
        self.wait_ready(&mut server)?;
        Ok(server)
    }

    /// The SQL client connected to the running server as its superuser (`root` / `postgres`),
    /// printing bare values one row a line, tab-separated; the statements follow as arguments
    /// (`-e SQL` / `-c SQL`) or on its standard input.
    pub fn sql_client(&self) -> Command {
        let mut c = command(&self.tools.sql, None, &self.l.run);
        match self.tools.engine {
            DbEngine::Mariadb => {
                c.arg("--no-defaults")
                    .arg(format!("--socket={}", self.l.socket().display()))
                    .args(["-uroot", "--batch", "--skip-column-names", "--unbuffered"]);
            }
            _ => {
                c.arg("-h").arg(&self.l.run).args([
                    "-U",
                    "postgres",
                    "-d",
                    "postgres",
                    "-v",
                    "ON_ERROR_STOP=1",
                    "-q",
                    "-At",
                ]);
            }
        }
        c
    }

    /// Runs `sql` through [`Instance::sql_client`] (its output in the log `log_name` of the
    /// socket folder) and returns the output.
    pub fn sql(&self, sql: &str, log_name: &str) -> Result<String, EngineError> {
        let mut c = self.sql_client();
        c.arg(match self.tools.engine {
            DbEngine::Mariadb => "-e",
            _ => "-c",
        })
        .arg(sql);
        run_logged(c, &self.log(log_name), self.interrupt, SETUP_TIMEOUT)
    }

    fn ping_command(&self) -> Command {
        let mut c = Command::new(&self.tools.ping);
        c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        match self.tools.engine {
            DbEngine::Mariadb => {
                c.arg("--no-defaults")
                    .arg(format!("--socket={}", self.l.socket().display()))
                    .args(["-uroot", "--connect-timeout=2", "ping"]);
            }
            _ => {
                c.arg("-h").arg(&self.l.run).args(["-U", "postgres", "-q", "-t", "2"]);
            }
        }
        c
    }

    fn wait_ready(&self, server: &mut ServerProcess) -> Result<(), EngineError> {
        let t0 = Instant::now();
        loop {
            if self.interrupt.load(Ordering::Relaxed) {
                return Err(EngineError::Interrupted);
            }
            // The postmaster maps its control segment before it answers: recorded at once.
            server.watch_shm();
            if let Some(status) = server.exited() {
                return Err(EngineError::io(
                    format!("{} exited during startup", server.name),
                    io::Error::other(format!("{status}: {}", server.log_tail())),
                ));
            }
            if self.ping_command().status().is_ok_and(|s| s.success()) {
                server.watch_shm();
                return Ok(());
            }
            if t0.elapsed() > START_TIMEOUT {
                return Err(EngineError::io(
                    format!("{} did not answer within {} s", server.name, START_TIMEOUT.as_secs()),
                    io::Error::other(server.log_tail()),
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Everything that holds for one repeat.
struct Session<'a> {
    spec: &'a OltpSpec,
    db: Instance<'a>,
}

impl<'a> std::ops::Deref for Session<'a> {
    type Target = Instance<'a>;
    fn deref(&self) -> &Instance<'a> {
        &self.db
    }
}

impl Session<'_> {
    /// The load generator as a command in the socket folder (`availability` found it).
    fn client_command(&self) -> Result<Command, EngineError> {
        let client = self
            .tools
            .client
            .as_deref()
            .ok_or_else(|| EngineError::Invalid("no load generator was looked up for this server".into()))?;
        Ok(command(client, None, &self.l.run))
    }

    fn start_options(&self) -> StartOptions {
        StartOptions {
            buffer_pool: self.spec.buffer_pool.get(),
            max_connections: (self.spec.threads + 20).max(151),
            settings: Vec::new(),
        }
    }

    fn create_database(&self) -> Result<(), EngineError> {
        self.sql(&format!("CREATE DATABASE {DB_NAME}"), "createdb.log")
            .map(drop)
    }

    /// sysbench's connection and table options.
    fn sysbench_args(&self) -> Vec<String> {
        let mut a = match self.tools.engine {
            DbEngine::Mariadb => vec![
                "--db-driver=mysql".to_string(),
                format!("--mysql-socket={}", self.l.socket().display()),
                "--mysql-user=root".into(),
                format!("--mysql-db={DB_NAME}"),
            ],
            _ => vec![
                "--db-driver=pgsql".to_string(),
                format!("--pgsql-host={}", self.l.run.display()),
                "--pgsql-user=postgres".into(),
                format!("--pgsql-db={DB_NAME}"),
            ],
        };
        a.extend([
            format!("--tables={}", self.spec.tables),
            format!("--table-size={}", self.spec.rows),
            format!("--range_size={}", self.spec.range_size),
            format!("--rand-type={}", self.spec.rand_type.name()),
        ]);
        a
    }

    fn pgbench_args(&self) -> Vec<String> {
        vec![
            "-h".into(),
            self.l.run.to_string_lossy().into_owned(),
            "-U".into(),
            "postgres".into(),
        ]
    }

    fn load(&self) -> Result<(), EngineError> {
        let mut c = self.client_command()?;
        match self.tools.client_kind {
            Client::Sysbench => {
                c.arg("oltp_read_only").args(self.sysbench_args()).args([
                    format!("--threads={}", self.spec.threads.min(self.spec.tables)),
                    "prepare".to_string(),
                ]);
            }
            Client::Pgbench => {
                c.args(self.pgbench_args())
                    .args(["-i", "-q", "-s", &self.spec.pgbench_scale().to_string(), DB_NAME]);
            }
        }
        // The client's own load: no total to count, a spinner with the last run's time as ETA.
        let step = crate::progress::step(
            format!(
                "{} load ({} × {} rows)",
                self.spec.engine.name(),
                self.spec.tables,
                self.spec.rows
            ),
            None,
            "rows",
        );
        run_logged(c, &self.log("load.log"), self.interrupt, Duration::MAX)?;
        step.finish();
        Ok(())
    }

    /// The timed client run; returns its report text and wall time.
    fn client_run(&self) -> Result<(String, Duration), EngineError> {
        let secs = self.spec.time.0.as_secs_f64().ceil().max(1.0) as u64;
        let mut c = self.client_command()?;
        match self.tools.client_kind {
            Client::Sysbench => {
                c.arg(self.spec.mode.script()).args(self.sysbench_args()).args([
                    format!("--threads={}", self.spec.threads),
                    format!("--time={secs}"),
                    "--percentile=95".to_string(),
                    format!("--rand-seed={}", self.spec.seed),
                    "run".to_string(),
                ]);
            }
            Client::Pgbench => {
                let t = self.spec.threads.to_string();
                c.args(self.pgbench_args())
                    .args(["-c", &t, "-j", &t, "-T", &secs.to_string()]);
                if self.spec.mode == super::OltpMode::ReadOnly {
                    c.arg("-S");
                }
                c.arg(DB_NAME);
            }
        }
        let t0 = Instant::now();
        let text = run_logged(
            c,
            &self.log("client.log"),
            self.interrupt,
            Duration::from_secs(secs) + CLIENT_GRACE,
        )?;
        Ok((text, t0.elapsed()))
    }
}

/// What the client's report gives the phase.
struct ClientReport {
    metrics: Vec<(MetricId, f64)>,
    /// The run time the client reports (zero when it reports none).
    wall: Duration,
    /// `sysbench 1.0.20` / `pgbench 15.18 (…)`.
    version: Option<String>,
}

/// The phase's metrics from the client's report.
fn metrics_from(tools: &Tools, text: &str) -> Result<ClientReport, EngineError> {
    let bad = |e: crate::parsers::ParseError| {
        EngineError::io(
            "reading the client's report".to_string(),
            io::Error::other(format!("{e}; last lines: {}", tail(text, 3))),
        )
    };
    let us = MetricId::latency;
    match tools.client_kind {
        Client::Sysbench => {
            let r = sysbench::parse_oltp(text).map_err(bad)?;
            let mut m = vec![
                (MetricId::higher("tps", Unit::OpsPerSec), r.tps),
                (MetricId::higher("qps", Unit::OpsPerSec), r.qps),
                (MetricId::lower("ignored_errors", Unit::Count), r.ignored_errors as f64),
                (us("lat_avg"), r.lat_avg_us),
            ];
            if let Some((pct, v)) = r.lat_pct {
                m.push((us(&format!("lat_p{pct}")), v));
            }
            m.push((us("lat_max"), r.lat_max_us));
            Ok(ClientReport {
                metrics: m,
                wall: Duration::from_secs_f64(r.total_time_s.max(0.0)),
                version: r.version,
            })
        }
        Client::Pgbench => {
            let r = pgbench::parse(text).map_err(bad)?;
            let m = vec![
                (MetricId::higher("tps", Unit::OpsPerSec), r.tps),
                (MetricId::lower("failed_txns", Unit::Count), r.failed as f64),
                (us("lat_avg"), r.lat_avg_us),
            ];
            Ok(ClientReport {
                metrics: m,
                wall: Duration::ZERO,
                version: r.version,
            })
        }
    }
}

/// Runs one repeat against a server; see the module documentation for the steps.
pub fn run(spec: &OltpSpec, ctx: &RunContext) -> Result<RawSample, EngineError> {
    let tools = availability(spec.engine, spec.client)?;
    let session = Session {
        spec,
        db: Instance::create(tools, (ctx.dir, ctx.dir), ctx.interrupt, ctx.state)?,
    };
    let result = run_session(&session, ctx);
    // The server is stopped (inside run_session, or by its guard); remove its files.
    session.remove();
    result
}

fn run_session(s: &Session, ctx: &RunContext) -> Result<RawSample, EngineError> {
    let mut phases = Phases::new(ctx);
    s.init()?;
    let mut server = s.db.start(&s.start_options())?;
    s.create_database()?;
    s.load()?;

    let phase = s.spec.phase();
    let policy = Policy::new();
    phases.begin(phase, policy.caches);
    // fsbench's CPU plus the server's process tree and the client's, over the client's run.
    let mut t = phases.with_children(Some(server.pid()), || s.client_run())?;
    let (text, measured) = std::mem::take(&mut t.value);
    let report = metrics_from(&s.tools, &text)?;
    t.wall = if report.wall.is_zero() { measured } else { report.wall };

    if let Err(note) = server.stop() {
        phases.note(note.to_string());
    }
    let versions: Vec<String> = [s.tools.server_version(), report.version]
        .into_iter()
        .flatten()
        .collect();
    if !versions.is_empty() {
        phases.note(versions.join(", "));
    }
    phases.note(format!(
        "oltp {}: cpu_process includes the server and client processes",
        s.spec.engine.name()
    ));
    if s.l.run_outside {
        phases.note(format!(
            "oltp {}: the socket folder is {} (the run directory's path is too long for a unix socket)",
            s.spec.engine.name(),
            s.l.run.display()
        ));
    }
    phases.record(phase, &t, report.metrics, &policy);
    Ok(phases.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_real_version_lines() {
        assert_eq!(
            server_version(
                DbEngine::Mariadb,
                "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)"
            )
            .as_deref(),
            Some("mariadb 10.11.19-MariaDB-0+deb12u1")
        );
        assert_eq!(
            server_version(
                DbEngine::Postgresql,
                "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
            )
            .as_deref(),
            Some("postgresql 15.18")
        );
        assert_eq!(server_version(DbEngine::Mariadb, "garbage"), None);
    }

    /// Processes of process group `pgid` that are not zombies.
    fn live_in_group(pgid: i32) -> Vec<i32> {
        std::fs::read_dir("/proc")
            .expect("/proc")
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&pid| {
                let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                    return false;
                };
                let Some((_, rest)) = stat.rsplit_once(')') else {
                    return false;
                };
                let f: Vec<&str> = rest.split_whitespace().collect();
                // state ppid pgrp …
                f.first() != Some(&"Z") && f.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid)
            })
            .collect()
    }

    #[test]
    fn tool_versions_name_installed_servers_only() {
        for (engine, server) in [(DbEngine::Mariadb, "mariadbd"), (DbEngine::Postgresql, "postgres")] {
            let v = tool_versions(engine, Client::Sysbench);
            match availability(engine, Client::Sysbench) {
                Ok(_) => {
                    assert!(v.iter().any(|(t, _)| t == server), "{v:?}");
                    assert!(
                        v.iter().any(|(t, l)| t == "sysbench" && l.starts_with("sysbench 1.")),
                        "{v:?}"
                    );
                }
                Err(why) => {
                    assert!(v.is_empty());
                    assert!(why.0.contains("apt-get install"), "{why}");
                }
            }
        }
    }

    #[test]
    fn run_logged_kills_the_group_on_interrupt_and_timeout() {
        let tmp = tempfile::tempdir().expect("tempdir");
        // A shell whose own child would outlive it without the group kill; it writes its
        // process group id first so the test can look for survivors.
        let mut c = command(Path::new("/bin/sh"), None, tmp.path());
        c.args(["-c", "echo $$; sleep 60 & sleep 60"]);
        let flag = AtomicBool::new(false);
        let log = tmp.path().join("x.log");
        let t0 = Instant::now();
        std::thread::scope(|sc| {
            sc.spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                flag.store(true, Ordering::Relaxed);
            });
            assert!(matches!(
                run_logged(c, &log, &flag, Duration::from_secs(60)),
                Err(EngineError::Interrupted)
            ));
        });
        assert!(t0.elapsed() < Duration::from_secs(5));
        let pgid: i32 = std::fs::read_to_string(&log).expect("log").trim().parse().expect("pid");
        // The orphaned `sleep` may linger as a zombie until init reaps it; none may run.
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(live_in_group(pgid), Vec::<i32>::new(), "group members survived");

        let flag = AtomicBool::new(false);
        let mut c = command(Path::new("/bin/sleep"), None, tmp.path());
        c.arg("60");
        let e = run_logged(c, &tmp.path().join("y.log"), &flag, Duration::from_millis(100)).expect_err("timeout");
        assert!(e.to_string().contains("killed after 0 s"), "{e}");
    }

    #[test]
    fn a_tools_error_lines_come_before_its_closing_boilerplate() {
        let log = "Installing MariaDB/MySQL system tables\n2026 [ERROR] InnoDB: cannot allocate\nInstallation of system tables failed!\nYou can find the latest source\nat https://mariadb.org/jira\n";
        let e = tool_error("mariadb-install-db", "exit status: 1", log).to_string();
        assert!(e.contains("[ERROR] InnoDB: cannot allocate"), "{e}");
        assert!(e.contains("https://mariadb.org/jira"), "{e}");
        assert_eq!(error_lines("all fine\n", 3), None);
    }

    #[test]
    fn run_logged_reports_failures_with_the_log_tail() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let mut c = command(Path::new("/bin/sh"), None, tmp.path());
        c.args(["-c", "echo one; echo two >&2; exit 3"]);
        let e = run_logged(c, &tmp.path().join("x.log"), &flag, Duration::from_secs(10)).expect_err("exit 3");
        let text = e.to_string();
        assert!(text.contains("exit status: 3") && text.contains("one / two"), "{text}");
        let mut ok = command(Path::new("/bin/echo"), None, tmp.path());
        ok.arg("hello");
        assert_eq!(
            run_logged(ok, &tmp.path().join("y.log"), &flag, Duration::from_secs(10)).expect("ok"),
            "hello\n"
        );
    }

    #[test]
    fn stop_escalates_from_the_polite_signal() {
        let dir = std::env::temp_dir();
        // Ignores SIGTERM? No: sh exits on SIGTERM; check the polite path is enough.
        let mut c = command(Path::new("/bin/sleep"), None, &dir);
        c.arg("60");
        let child = c.spawn().expect("spawn");
        let pid = child.id() as i32;
        let mut s = ServerProcess {
            child: Some(child),
            name: "sleep",
            stop_signal: libc::SIGTERM,
            log: dir.join("none.log"),
            stop_timeout: STOP_TIMEOUT,
            pg_data: None,
            shm: None,
            undo: None,
        };
        let t0 = Instant::now();
        assert_eq!(s.stop(), Ok(()));
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert_eq!(proc_state(pid), None);
        assert_eq!(s.pid(), 0);
        assert_eq!(s.stop(), Ok(()), "stopping twice is harmless");
    }

    /// The undo log of a test: the records still pending.
    use crate::undo::Pending;

    /// A real PostgreSQL server started the way `oltp` and `powercut` start it, in a fresh
    /// world-searchable folder under /var/tmp, recording into `log`; with the segment files
    /// that were in /dev/shm before it started. Skips (or fails under
    /// `FSBENCH_REQUIRE_PRIVILEGED=1`) without root or PostgreSQL.
    macro_rules! real_postgresql {
        ($flag:ident, $log:ident => $dir:ident, $server:ident, $before:ident) => {
            // One server at a time: a test that leaves segments on purpose must not show up in
            // another's listing.
            let _serial = ONE_SERVER.lock().unwrap_or_else(|e| e.into_inner());
            if !is_root() {
                skip_or_fail!("a PostgreSQL server as its service user needs root");
            }
            let Ok(tools) = server_tools(DbEngine::Postgresql) else {
                skip_or_fail!("postgresql is not installed (scripts/install.sh)");
            };
            let $dir = tempfile::Builder::new()
                .prefix("fsbench-pgshm-")
                .tempdir_in("/var/tmp")
                .expect("tempdir");
            std::fs::set_permissions($dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
            let $before = crate::workloads::oltp::pgshm::segment_files();
            let db = Instance::create(tools, ($dir.path(), $dir.path()), &$flag, Some(&$log)).expect("create");
            db.init().expect("initdb");
            let options = StartOptions {
                buffer_pool: 32 << 20,
                max_connections: 20,
                settings: Vec::new(),
            };
            #[allow(unused_mut)]
            let mut $server = db.start(&options).expect("start");
        };
    }

    static ONE_SERVER: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// [`pgshm::left_since`](super::super::pgshm::left_since) once it is empty, or after 10 s:
    /// a segment another process on the machine is just removing is not a leftover.
    fn left_since(before: &std::collections::BTreeSet<PathBuf>) -> Vec<PathBuf> {
        let t0 = Instant::now();
        loop {
            let left = super::super::pgshm::left_since(before);
            if left.is_empty() || t0.elapsed() > Duration::from_secs(10) {
                return left;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The segment files the running `server` made (control segment first), its SysV id.
    fn made_by(server: &ServerProcess) -> (Vec<PathBuf>, Option<i32>) {
        let step = server.shm_step().expect("the control segment was found while starting");
        let listed = super::super::pgshm::parse_control(&std::fs::read(&step.control).unwrap()).unwrap();
        let mut files = vec![step.control.clone()];
        files.extend(listed.into_iter().map(super::super::pgshm::segment_path));
        (files, step.sysv.map(|s| s.shmid))
    }

    fn sysv_exists(shmid: i32) -> bool {
        // SAFETY: shmid_ds is plain old data that IPC_STAT fills.
        let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
        // SAFETY: `ds` is valid for the call.
        unsafe { libc::shmctl(shmid, libc::IPC_STAT, &mut ds) == 0 }
    }

    /// The power cut's and `Server::kill`'s path: SIGKILL to the server, then its shared
    /// memory (the control segment, each segment it lists, the SysV header) is removed, the
    /// record pushed while it started is dropped, and no new segment file is left.
    #[test]
    fn a_killed_postgresql_server_leaves_no_shared_memory() {
        let flag = AtomicBool::new(false);
        let log = Arc::new(Pending::default());
        real_postgresql!(flag, log => dir, server, before);
        let (files, sysv) = made_by(&server);
        eprintln!("while running: {files:?}, SysV {sysv:?}");
        assert!(files.iter().all(|f| f.exists() && !before.contains(f)), "{files:?}");
        assert_eq!(log.records().len(), 1, "recorded while it started");
        assert_eq!(server.kill(), Ok(()));
        assert_eq!(left_since(&before), Vec::<PathBuf>::new());
        assert!(files.iter().all(|f| !f.exists()), "{files:?}");
        assert!(!sysv.is_some_and(sysv_exists), "SysV segment {sysv:?} left");
        assert!(log.records().is_empty(), "record dropped once undone");
        drop(dir);
    }

    /// A polite stop lets PostgreSQL remove its own shared memory: with fsbench's removal
    /// taken out, nothing is left, and the step then finds nothing to do.
    #[test]
    fn a_politely_stopped_postgresql_server_removes_its_own_shared_memory() {
        let flag = AtomicBool::new(false);
        let log = Arc::new(Pending::default());
        real_postgresql!(flag, log => dir, server, before);
        let (files, sysv) = made_by(&server);
        let step = server.shm.take().expect("found");
        assert_eq!(server.stop(), Ok(()));
        assert_eq!(left_since(&before), Vec::<PathBuf>::new());
        assert!(files.iter().all(|f| !f.exists()), "{files:?}");
        assert!(!sysv.is_some_and(sysv_exists));
        assert_eq!(step.remove().expect("nothing to do"), Vec::<PathBuf>::new());
        drop(dir);
    }

    /// The stop path's fallback: a postmaster that does not stop (SIGSTOPped) is SIGKILLed
    /// after the timeout, and its shared memory is removed all the same.
    #[test]
    fn the_stop_timeouts_sigkill_removes_the_shared_memory_too() {
        let flag = AtomicBool::new(false);
        let log = Arc::new(Pending::default());
        real_postgresql!(flag, log => dir, server, before);
        let (files, _) = made_by(&server);
        server.stop_timeout = Duration::from_secs(1);
        // SAFETY: kill(2) on the child we started, not yet reaped.
        unsafe { libc::kill(server.pid(), libc::SIGSTOP) };
        let note = server.stop().expect_err("killed after the timeout");
        let note = note.to_string();
        assert!(
            note.contains("killed (SIGKILL)") && !note.contains("shared memory"),
            "{note}"
        );
        assert_eq!(left_since(&before), Vec::<PathBuf>::new());
        assert!(files.iter().all(|f| !f.exists()), "{files:?}");
        assert!(log.records().is_empty());
        drop(dir);
    }

    /// The check can fail: without the removal a SIGKILLed server leaves its control segment
    /// and pinned segments (the defect), which the before/after listing shows; the recorded
    /// step, applied as `fsbench cleanup` would, then removes exactly those.
    #[test]
    fn without_the_removal_a_killed_postgresql_server_leaves_its_segments() {
        let flag = AtomicBool::new(false);
        let log = Arc::new(Pending::default());
        real_postgresql!(flag, log => dir, server, before);
        let (files, sysv) = made_by(&server);
        let step = server.shm.take().expect("found");
        assert_eq!(server.kill(), Ok(()));
        // The killed server's children exit on their own; wait for them as the step does.
        let t0 = Instant::now();
        let mut left = super::super::pgshm::left_since(&before);
        while left.len() < files.len() && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
            left = super::super::pgshm::left_since(&before);
        }
        assert_eq!(
            left,
            files
                .iter()
                .cloned()
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>()
        );
        assert!(sysv.is_some_and(sysv_exists), "a killed server leaves its SysV segment");
        let undo: &dyn crate::undo::Step = &step;
        undo.apply().expect("cleanup's apply");
        assert_eq!(left_since(&before), Vec::<PathBuf>::new());
        assert!(!sysv.is_some_and(sysv_exists));
        drop(dir);
    }

    #[test]
    fn traversal_check_names_the_blocking_directory() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let inner = tmp.path().join("a/b");
        std::fs::create_dir_all(&inner).expect("mkdir");
        std::fs::set_permissions(tmp.path().join("a"), std::fs::Permissions::from_mode(0o700)).expect("chmod");
        // uid/gid 65534 (nobody) own nothing here.
        let e = check_traversable(&inner, 65534, 65534, "nobody").expect_err("blocked");
        assert!(
            e.to_string().contains("chmod o+x") && e.to_string().contains("/a"),
            "{e}"
        );
        std::fs::set_permissions(tmp.path().join("a"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        // The rest of the path (/tmp) is world-searchable.
        assert!(check_traversable(&inner, 65534, 65534, "nobody").is_ok());
    }
}
