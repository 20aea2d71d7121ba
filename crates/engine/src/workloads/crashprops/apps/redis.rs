//! Redis as a `crashprops` application (issue 43, item 3: the key-value store packaged for
//! Debian): `redis-server` 7.0 with `appendonly yes` and `appendfsync always`, whose
//! multi-part AOF (a base file, an incremental file and a manifest replaced by a rename at each
//! rewrite) is a real update protocol, and whose own tools judge it (`redis-check-aof`, and the
//! server's AOF loading at start).
//!
//! Protocol:
//! - **setup**: the folder `FOLDER/data` (owned by the `redis` user when root); nothing else.
//! - **act** (recorded): `redis-server` started on it (unix socket only, `port 0`, no RDB
//!   snapshots, its socket and log in a private folder under the temporary directory, an undo
//!   step), which creates `appendonlydir` (base, incr, manifest); then through `redis-cli`, each
//!   acknowledged when the command returns `OK`: `SET k1 v1`, `SET k2 v2` (1500-byte values),
//!   `BGREWRITEAOF` waited for (`aof_rewrite_in_progress:0`, a new base and incr, the manifest
//!   renamed over), `SET k3`, `SET k4`; then `SHUTDOWN` (a clean stop).
//!   Acknowledgements: 1 and 2 the first two keys, 3 the rewrite, 4 and 5 the last two keys.
//! - **check** (on a writable copy of the state's folder): `redis-check-aof` on the manifest
//!   (its verdict kept for the message); `redis-server` started on the copy with the same
//!   settings (it loads the AOF; a truncated last command is dropped by its default
//!   `aof-load-truncated yes`) — a server that refuses to start, or keys that are not
//!   `k1..=kj` with their whole values, is **corrupt**; an acknowledged key missing is **lost**.
//!
//! The server runs as the `redis` user (root) in its own process group with `PR_SET_PDEATHSIG
//! = SIGKILL` (a SIGKILLed fsbench leaves no server holding the mount); it makes no shared
//! memory. References: redis.conf 7.0 (`appendonly`, `appendfsync always`: "fsync after every
//! write to the append only log. Slow, Safest."; `aof-load-truncated`), Redis persistence docs
//! (multi-part AOF since 7.0), redis-check-aof.

use super::{Ack, AppEnv, AppVerdict};
use crate::undo::RemoveDir;
use crate::Unavailable;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Keys set, `k1..=k4`.
const KEYS: u32 = 4;
/// Bytes of each value.
const VALUE: usize = 1500;
/// How long a start or the rewrite may take.
const WAIT: Duration = Duration::from_secs(30);

/// `redis-server` and `redis-cli` and `redis-check-aof` present, or what to install.
pub fn available() -> Result<(), Unavailable> {
    ["redis-server", "redis-cli", "redis-check-aof"]
        .into_iter()
        .try_for_each(|t| super::have_tool(t, "redis-server"))
}

/// The `redis` user's ids when running as root.
fn user() -> Option<(u32, u32)> {
    if crate::host::is_root() {
        crate::workloads::oltp::server::lookup_user("redis")
    } else {
        None
    }
}

fn value(n: u32) -> String {
    format!("{n}").repeat(VALUE)
}

/// A running server and its private socket folder (removed, its undo record dropped, on drop).
struct Server<'a> {
    child: Option<Child>,
    run: PathBuf,
    env: &'a AppEnv<'a>,
    step: RemoveDir,
}

impl<'a> Server<'a> {
    fn socket(&self) -> String {
        self.run.join("redis.sock").to_string_lossy().into_owned()
    }

    /// Starts `redis-server` on `data` and waits for its `PONG`; `Err` has its log's tail.
    fn start(data: &Path, env: &'a AppEnv<'a>) -> std::io::Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let run = std::env::temp_dir().join(format!("fsbench-redis-{}-{nanos}", std::process::id()));
        let step = RemoveDir {
            path: run.clone(),
            recursive: true,
        };
        if let Some(u) = env.undo {
            u.push(&step);
        }
        let mut s = Server {
            child: None,
            run,
            env,
            step,
        };
        std::fs::create_dir(&s.run)?;
        if let Some((uid, gid)) = user() {
            std::os::unix::fs::chown(&s.run, Some(uid), Some(gid))?;
        }
        let log = s.run.join("redis.log");
        let mut c = Command::new("redis-server");
        c.args(["--port", "0", "--unixsocket", &s.socket(), "--unixsocketperm", "777"])
            .arg("--dir")
            .arg(data)
            .args(["--appendonly", "yes", "--appendfsync", "always", "--save", ""])
            .args(["--daemonize", "no", "--logfile"])
            .arg(&log)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some((uid, gid)) = user() {
            c.uid(uid).gid(gid);
        }
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            c.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        s.child = Some(c.spawn()?);
        let t0 = Instant::now();
        loop {
            if s.cli(&["PING"]).is_ok_and(|o| o.trim() == "PONG") {
                return Ok(s);
            }
            let exited = s.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
            if exited.is_some() || t0.elapsed() > WAIT || s.env.interrupt.load(std::sync::atomic::Ordering::Relaxed) {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(3).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                return Err(std::io::Error::other(format!(
                    "redis-server did not start ({}): {}",
                    exited.map_or("no answer".to_string(), |e| e.to_string()),
                    tail.join(" / ")
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `redis-cli -s SOCKET ARGS`: its output, or an error.
    fn cli(&self, args: &[&str]) -> std::io::Result<String> {
        let out = Command::new("redis-cli")
            .args(["-s", &self.socket()])
            .args(args)
            .stdin(Stdio::null())
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() || text.starts_with("ERR") || text.starts_with("(error)") {
            return Err(std::io::Error::other(format!("redis-cli {}: {}", args[0], text.trim())));
        }
        Ok(text)
    }

    /// `SHUTDOWN` (a clean stop: the AOF fsynced), then waits for the process.
    fn shutdown(&mut self) -> std::io::Result<()> {
        let _ = self.cli(&["SHUTDOWN"]); // the connection closes as the server exits
        if let Some(mut c) = self.child.take() {
            let t0 = Instant::now();
            while c.try_wait()?.is_none() {
                if t0.elapsed() > WAIT {
                    // SAFETY: the child is not reaped; its pid is its process group.
                    unsafe { libc::kill(-(c.id() as i32), libc::SIGKILL) };
                    c.wait()?;
                    return Err(std::io::Error::other("redis-server did not stop; killed"));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    }
}

impl Drop for Server<'_> {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: the child is not reaped; its pid is its process group.
            unsafe { libc::kill(-(c.id() as i32), libc::SIGKILL) };
            let _ = c.wait();
        }
        if std::fs::remove_dir_all(&self.run).is_ok() {
            if let Some(u) = self.env.undo {
                u.pop(&self.step);
            }
        }
    }
}

/// The data folder, owned by the server's user.
pub fn setup(dir: &Path, _env: &AppEnv) -> std::io::Result<()> {
    let data = dir.join("data");
    std::fs::create_dir(&data)?;
    if let Some((uid, gid)) = user() {
        std::os::unix::fs::chown(&data, Some(uid), Some(gid))?;
    }
    Ok(())
}

/// The recorded protocol (module doc).
pub fn act(dir: &Path, env: &AppEnv, ack: &mut Ack) -> std::io::Result<()> {
    let mut s = Server::start(&dir.join("data"), env)?;
    let mut n = 0;
    let mut set = |s: &Server, k: u32, ack: &mut Ack| -> std::io::Result<()> {
        let out = s.cli(&["SET", &format!("k{k}"), &value(k)])?;
        if out.trim() != "OK" {
            return Err(std::io::Error::other(format!("SET k{k}: {}", out.trim())));
        }
        n += 1;
        ack(n)
    };
    set(&s, 1, ack)?;
    set(&s, 2, ack)?;
    s.cli(&["BGREWRITEAOF"])?;
    let t0 = Instant::now();
    loop {
        let info = s.cli(&["INFO", "persistence"])?;
        let idle = |k: &str| info.lines().any(|l| l.trim() == format!("{k}:0"));
        if idle("aof_rewrite_in_progress") && idle("aof_rewrite_scheduled") {
            break;
        }
        if t0.elapsed() > WAIT {
            return Err(std::io::Error::other("BGREWRITEAOF did not finish"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    ack(3)?;
    let mut n = 3;
    for k in 3..=KEYS {
        let out = s.cli(&["SET", &format!("k{k}"), &value(k)])?;
        if out.trim() != "OK" {
            return Err(std::io::Error::other(format!("SET k{k}: {}", out.trim())));
        }
        n += 1;
        ack(n)?;
    }
    s.shutdown()
}

/// The keys an acknowledgement number promises: 1 → k1, 2 → k2, 3 → the rewrite (k2),
/// 4 → k3, 5 → k4.
fn keys_promised(ack: u32) -> u32 {
    match ack {
        0..=2 => ack,
        3 => 2,
        a => a - 1,
    }
}

/// `redis-check-aof` on the copy's manifest, then the server's start and the keys (module doc).
pub fn check(dir: &Path, env: &AppEnv, acked: &[u32]) -> AppVerdict {
    let data = dir.join("data");
    let manifest = data.join("appendonlydir/appendonly.aof.manifest");
    let aof = match manifest.exists() {
        false => "no manifest".to_string(),
        true => match Command::new("redis-check-aof")
            .arg(&manifest)
            .stdin(Stdio::null())
            .output()
        {
            Ok(o) if o.status.success() => String::new(),
            Ok(o) => {
                let t = String::from_utf8_lossy(&o.stdout);
                format!("redis-check-aof: {}", t.lines().last().unwrap_or_default())
            }
            Err(e) => format!("redis-check-aof: {e}"),
        },
    };
    let mut s = match Server::start(&data, env) {
        Ok(s) => s,
        Err(e) => return AppVerdict::Corrupt(format!("{e}; {aof}")),
    };
    let mut present = 0;
    for k in 1..=KEYS {
        match s.cli(&["GET", &format!("k{k}")]) {
            Ok(v) if v.trim_end_matches('\n') == value(k) && present == k - 1 => present = k,
            Ok(v) if v.trim().is_empty() => {}
            Ok(v) => {
                let _ = s.shutdown();
                return AppVerdict::Corrupt(format!(
                    "k{k} holds {} bytes, not its whole value, or follows a missing key (k1..=k{present} present); {aof}",
                    v.trim_end_matches('\n').len()
                ));
            }
            Err(e) => return AppVerdict::Corrupt(format!("{e}; {aof}")),
        }
    }
    let _ = s.shutdown();
    let promised = acked.iter().copied().max().map_or(0, keys_promised);
    if promised > present {
        return AppVerdict::Lost(format!(
            "keys k1..=k{present} of {KEYS} present; k{promised} was acknowledged before the crash"
        ));
    }
    AppVerdict::Holds
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn redis_check_reports_a_lost_key_and_a_corrupt_aof() {
        available().unwrap();
        let scratch = tempfile::Builder::new().prefix("fsb-rd").tempdir_in("/tmp").unwrap();
        std::fs::set_permissions(scratch.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let dir = scratch.path().join("app");
        std::fs::create_dir(&dir).unwrap();
        let stop = AtomicBool::new(false);
        let env = AppEnv {
            scratch: scratch.path(),
            interrupt: &stop,
            undo: None,
        };
        setup(&dir, &env).unwrap();
        let mut acks = Vec::new();
        act(&dir, &env, &mut |n| {
            acks.push(n);
            Ok(())
        })
        .unwrap();
        assert_eq!(acks, vec![1, 2, 3, 4, 5]);
        assert_eq!(check(&dir, &env, &acks), AppVerdict::Holds);
        let aofdir = dir.join("data/appendonlydir");
        let manifest = std::fs::read_to_string(aofdir.join("appendonly.aof.manifest")).unwrap();
        let incr = manifest
            .lines()
            .find(|l| l.contains("type i"))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap()
            .to_string();
        let incr = aofdir.join(incr);
        let whole = std::fs::read(&incr).unwrap();
        // The incremental file cut before k4's SET: acknowledged, lost (a whole command less).
        let at = whole.windows(4).rposition(|w| w == b"*3\r\n").unwrap();
        std::fs::write(&incr, &whole[..at]).unwrap();
        let v = check(&dir, &env, &acks);
        assert!(matches!(&v, AppVerdict::Lost(m) if m.contains("k1..=k3")), "{v:?}");
        assert_eq!(check(&dir, &env, &[1, 2, 3, 4]), AppVerdict::Holds);
        // Garbage in the middle of the incremental file: the server refuses it.
        let mut bad = whole.clone();
        bad[at..at + 8].copy_from_slice(b"#garbage");
        std::fs::write(&incr, &bad).unwrap();
        let v = check(&dir, &env, &[]);
        assert!(
            matches!(&v, AppVerdict::Corrupt(m) if m.contains("did not start")),
            "{v:?}"
        );
        // The manifest gone with its files: the folder opens empty, every key lost.
        std::fs::remove_dir_all(&aofdir).unwrap();
        assert!(matches!(check(&dir, &env, &[1]), AppVerdict::Lost(_)));
    }

    #[test]
    fn acknowledgements_promise_keys_across_the_rewrite() {
        assert_eq!((0..=5).map(keys_promised).collect::<Vec<_>>(), vec![0, 1, 2, 2, 3, 4]);
    }
}
