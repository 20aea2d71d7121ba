//! ZFS as a pool, not a mkfs: the `zfs` filesystem type ([`crate::fstype::Backing::Pool`]).
//!
//! A repeat on zfs gets its own pool on the loop device (or the confirmed device), made with
//! `zpool create -o cachefile=none -m MOUNTPOINT -O PROP=VAL … POOL DEVICE`: its root dataset
//! is the one dataset, mounted at the case's mount point. Mount options become dataset
//! properties ([`dataset_properties`]: `noatime` → `atime=off`, `compress=ALG` →
//! `compression=ALG`, `recordsize=`, `sync=`, `checksum=`); anything else is refused with the
//! list of what is supported. Afterwards the dataset is unmounted and the pool destroyed.
//!
//! Which ZFS ([`Backend`]): OpenZFS's kernel module where `/sys/module/zfs` and its `zpool`
//! exist (zfsutils-linux), otherwise zfs-fuse (Debian `zfs-fuse` 0.7), a userspace daemon that
//! serves pools over FUSE. fsbench starts that daemon when none is running
//! (`zfs-fuse --no-daemon --no-kstat-mount`, in its own process group so a Ctrl-C at the
//! terminal reaches fsbench, which destroys the pool, and not the daemon under it), waits for
//! its socket, and stops only a daemon it started (SIGTERM, then SIGKILL after 15 s), and only
//! once no pool is left in it. Every sample of a zfs-fuse pool carries a note that FUSE ZFS is
//! not comparable to the in-kernel one, which the report shows among its warnings.
//!
//! Invariants (safety):
//! - Pools are named `fsbench-<pid>-<seconds>-<slot tag>` after the run folder, and both the
//!   daemon ([`StopDaemon`], with its start time) and the pool ([`DestroyPool`],
//!   with the device it was made on) are undo steps in the run's state file, written before
//!   the daemon or pool exists, so `fsbench cleanup` after a SIGKILL finds them.
//! - A pool is destroyed only if its name is one fsbench makes and `zpool status` shows it on
//!   the recorded device; a daemon is stopped only if it is the recorded process (pid and start
//!   time) and holds no pool. Pools and daemons fsbench did not create are never touched.
//! - One fsbench zfs pool at a time on a machine: a repeat holds an exclusive `flock` on
//!   [`LOCK`] from before the daemon starts until after it stops, so two runs never share (and
//!   stop) one daemon; `fsbench cleanup` takes the same lock before it undoes zfs steps.
//! - `cachefile=none`: a pool is never written to zpool.cache, so no daemon or boot imports
//!   it again after a crash.
//!
//! References: zpool(8), zfs(8) of zfs-fuse 0.7 (pool version 23: no `sync` property, no
//! `relatime`), zfs-fuse(8) (`--no-daemon`, `--no-kstat-mount`; the socket
//! `/var/run/zfs/zfs_socket`), /work/shared/research/capabilities.md (zfs-fuse on this machine).

use super::{io_err, run_tool, Mounted, ProvisionError};
use crate::config::FsVariant;
use crate::engine::Unavailable;
use crate::host::process::{alive_comm, is_ours, stop, Identity, Stop};
use crate::undo::{as_kind, kind_basics, Kind, Lock, Step, UndoError, Unmount};
use serde::{Deserialize, Serialize};
use std::any::Any;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The machine-wide lock held while fsbench has a zfs pool (see the module doc).
pub const LOCK: &str = "/run/fsbench/zfs.lock";
/// zfs-fuse's control socket; `zpool` and `zfs` talk to the daemon through it.
pub const FUSE_SOCKET: &str = "/var/run/zfs/zfs_socket";
/// Prefix of every pool fsbench makes.
pub const POOL_PREFIX: &str = crate::host::ZFS_POOL_PREFIX;
use crate::fstype::dataset_properties;

/// How long to wait for a started zfs-fuse to accept commands.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a stopped zfs-fuse may take to exit before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// The ZFS this machine has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backend {
    /// OpenZFS's kernel module (`/sys/module/zfs`) with its `zpool` and `zfs`.
    Kernel {
        /// `/sys/module/zfs/version`, e.g. `2.1.11-1`.
        version: String,
    },
    /// zfs-fuse: a userspace daemon serving pools through FUSE.
    Fuse {
        /// The Debian package's upstream version, e.g. `0.7`.
        version: String,
    },
}

impl Backend {
    /// What the report and `fsbench list filesystems` call it: `zfs (zfs-fuse 0.7, userspace)`.
    pub fn label(&self) -> String {
        match self {
            Backend::Kernel { version } => format!("zfs (OpenZFS {version}, kernel)"),
            Backend::Fuse { version } => format!("zfs (zfs-fuse {version}, userspace)"),
        }
    }

    /// Whether pools live in a userspace daemon fsbench may have to start.
    pub fn is_fuse(&self) -> bool {
        matches!(self, Backend::Fuse { .. })
    }
}

/// The ZFS on this machine, or why there is none and how to get one.
pub fn detect() -> Result<Backend, Unavailable> {
    use crate::host::find_tool;
    let tools = find_tool("zpool").is_some() && find_tool("zfs").is_some();
    if Path::new("/sys/module/zfs").exists() && tools && find_tool("zfs-fuse").is_none() {
        let version = std::fs::read_to_string("/sys/module/zfs/version")
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|_| "unknown version".into());
        return Ok(Backend::Kernel { version });
    }
    if find_tool("zfs-fuse").is_some() && tools {
        if !Path::new("/dev/fuse").exists() {
            return Err("zfs-fuse needs FUSE, and /dev/fuse is missing (`modprobe fuse`)".into());
        }
        return Ok(Backend::Fuse {
            version: fuse_version(),
        });
    }
    if tools {
        return Err(Unavailable(
            "the OpenZFS tools are installed but the zfs kernel module is not loaded: run `modprobe zfs`".into(),
        ));
    }
    Err(Unavailable(
        "no ZFS on this machine: run `apt-get install zfs-fuse` (userspace, or `scripts/install.sh`), \
         or for the in-kernel OpenZFS `apt-get install zfsutils-linux zfs-dkms` (Debian contrib)"
            .into(),
    ))
}

/// The zfs-fuse version from its Debian package (`0.7.0-25+b1` → `0.7`), or `0.7`'s family name.
fn fuse_version() -> String {
    let out = std::process::Command::new("dpkg-query")
        .args(["-W", "-f", "${Version}", "zfs-fuse"])
        .output();
    let v = out
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    short_version(&v).unwrap_or_else(|| "(unknown version)".into())
}

/// `0.7.0-25+b1` → `0.7`; `1:0.7.2-1` → `0.7`.
fn short_version(v: &str) -> Option<String> {
    let v = v.rsplit(':').next()?.split(['-', '+', '~']).next()?;
    let mut parts = v.split('.');
    let (a, b) = (parts.next()?, parts.next()?);
    (!a.is_empty() && !b.is_empty()).then(|| format!("{a}.{b}"))
}

/// Whether zfs can be provisioned here (`Err`: why not and what to install).
pub fn availability() -> Result<(), Unavailable> {
    detect()?;
    if crate::host::find_tool("losetup").is_none() {
        return Err(Unavailable(format!(
            "`losetup` is not installed; {}",
            super::install_hint("losetup")
        )));
    }
    Ok(())
}

/// What `fsbench list filesystems` and `doctor` add after "available" for type `name`:
/// the ZFS in use and how to get the other one; empty for other types.
pub fn listing_suffix(name: &str) -> String {
    if crate::fstype::FsType::of(name).backing != crate::fstype::Backing::Pool {
        return String::new();
    }
    match detect() {
        Ok(b @ Backend::Fuse { .. }) => format!(
            ": {}, measures FUSE too; for the in-kernel OpenZFS install zfsutils-linux and zfs-dkms (Debian contrib)",
            b.label()
        ),
        Ok(b) => format!(": {}", b.label()),
        Err(_) => String::new(),
    }
}

/// The pool name for the repeat `tag` of the run whose folder is `run_dir`
/// (`…/run-123-1700000000` → `fsbench-123-1700000000-s001-zfs`).
pub fn pool_name(run_dir: &Path, tag: &str) -> String {
    let run = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let run = run.strip_prefix("run-").unwrap_or(&run);
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect()
    };
    format!("{POOL_PREFIX}{}-{}", clean(run), clean(tag))
}

/// Makes the pool of `variant` on `device`, its dataset mounted on `m.mountpoint`: takes the
/// zfs lock, starts zfs-fuse if needed, records every step on `m`'s undo stack before it
/// happens, and adds the comparability note for a FUSE ZFS.
pub(super) fn create_pool(m: &mut Mounted, variant: &FsVariant, device: &str) -> Result<(), ProvisionError> {
    let props = dataset_properties(&variant.mount_opts).map_err(|e| ProvisionError::Unavailable(e.to_string()))?;
    let backend = detect().map_err(|e| ProvisionError::Unavailable(e.0))?;
    let lock = ZfsLock::acquire(Duration::from_secs(30 * 60))?;
    m.hold.push(Box::new(lock));
    if backend.is_fuse() && running_daemon().is_none() {
        start_daemon(m)?;
    }
    let run_dir = m.state.dir();
    let tag = m
        .mountpoint
        .file_name()
        .map(|n| n.to_string_lossy().trim_start_matches("mnt-").to_string())
        .unwrap_or_default();
    let pool = pool_name(&run_dir, &tag);
    let mnt = m.mountpoint.clone();
    m.push(DestroyPool {
        pool: pool.clone(),
        device: device.to_string(),
        mountpoint: mnt.clone(),
    });
    let mut args: Vec<String> = vec!["create".into(), "-f".into(), "-o".into(), "cachefile=none".into()];
    args.extend(["-m".into(), mnt.to_string_lossy().into_owned()]);
    for (k, v) in &props {
        args.extend(["-O".into(), format!("{k}={v}")]);
    }
    args.extend(variant.mkfs_args.iter().cloned());
    args.extend([pool.clone(), device.to_string()]);
    run_tool("zpool", &args, &[])?;
    // zfs-fuse mounts asynchronously after `zpool create` returns.
    let t0 = Instant::now();
    while !crate::host::is_mounted(&mnt, Some(&pool)) {
        if t0.elapsed() > Duration::from_secs(10) {
            return Err(ProvisionError::Unavailable(format!(
                "pool {pool} was created but its dataset is not mounted on {} after 10 s",
                mnt.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let shown = effective_properties(&pool, &props)?;
    let props_text = if shown.is_empty() {
        "default dataset properties".to_string()
    } else {
        format!("dataset properties {shown}")
    };
    m.notes.push(match &backend {
        Backend::Fuse { .. } => format!(
            "{}: a FUSE ZFS in a userspace daemon, not comparable with the in-kernel OpenZFS or ranked \
             fairly against kernel filesystems ({props_text})",
            backend.label()
        ),
        Backend::Kernel { .. } => format!("{} ({props_text})", backend.label()),
    });
    Ok(())
}

/// The values ZFS reports for the properties fsbench set on `pool`, read back with `zfs get`
/// (`atime=off,compression=lzjb`).
fn effective_properties(pool: &str, props: &[(String, String)]) -> Result<String, ProvisionError> {
    if props.is_empty() {
        return Ok(String::new());
    }
    let keys: Vec<&str> = props.iter().map(|(k, _)| k.as_str()).collect();
    let out = run_tool(
        "zfs",
        &[
            "get".into(),
            "-H".into(),
            "-o".into(),
            "property,value".into(),
            keys.join(","),
            pool.into(),
        ],
        &[],
    )?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(","))
}

/// A zfs-fuse daemon that is running now: `(pid, start time)`.
pub fn running_daemon() -> Option<(u32, u64)> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        if !is_live_daemon(pid) {
            return None;
        }
        Some((pid, crate::host::process_start_time(pid)?))
    })
}

/// Whether `pid` is a zfs-fuse process that has not exited (a zombie has).
fn is_live_daemon(pid: u32) -> bool {
    alive_comm(pid).as_deref() == Some("zfs-fuse")
}

/// Starts zfs-fuse in its own process group, recorded as [`StopDaemon`], and waits until
/// it answers `zpool list`.
fn start_daemon(m: &mut Mounted) -> Result<(), ProvisionError> {
    use std::os::unix::process::CommandExt;
    let program = crate::host::find_tool("zfs-fuse").unwrap_or_else(|| PathBuf::from("zfs-fuse"));
    let child = std::process::Command::new(program)
        .args(["--no-daemon", "--no-kstat-mount"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(io_err("start zfs-fuse"))?;
    let pid = child.id();
    // The process is reaped by `StopDaemon` (waitpid), not through `Child`.
    drop(child);
    let start_time = crate::host::process_start_time(pid).unwrap_or(0);
    m.push(StopDaemon { pid, start_time });
    let t0 = Instant::now();
    loop {
        if Path::new(FUSE_SOCKET).exists() && run_tool("zpool", &["list".into()], &[]).is_ok() {
            return Ok(());
        }
        if !is_live_daemon(pid) {
            return Err(ProvisionError::Unavailable(
                "zfs-fuse exited right after it started (is another ZFS daemon holding /var/run/zfs?)".into(),
            ));
        }
        if t0.elapsed() > START_TIMEOUT {
            return Err(ProvisionError::Unavailable(format!(
                "zfs-fuse did not answer on {FUSE_SOCKET} within {} s",
                START_TIMEOUT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Names of the pools imported now (empty when no ZFS answers).
pub fn pools() -> Vec<String> {
    run_tool("zpool", &["list".into(), "-H".into(), "-o".into(), "name".into()], &[])
        .map(|s| {
            s.lines()
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `zpool status POOL` shows the pool on `device` (as `/dev/loop3` or `loop3`).
fn pool_on_device(pool: &str, device: &str) -> bool {
    let Ok(status) = run_tool("zpool", &["status".into(), pool.into()], &[]) else {
        return false;
    };
    let short = Path::new(device)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    status
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .any(|w| w == device || w == short)
}

/// [`DestroyPool`]: unmounts the dataset and destroys the pool, only if the pool is
/// fsbench's (name) and on the recorded device; a pool that is gone is done.
pub(super) fn destroy_pool(pool: &str, device: &str, mountpoint: &Path) -> Result<(), ProvisionError> {
    if !pool.starts_with(POOL_PREFIX) || !pools().iter().any(|p| p == pool) {
        return Ok(());
    }
    if !pool_on_device(pool, device) {
        return Ok(()); // same name, another device: not the pool this run made
    }
    // Unmounting first makes zfs-fuse's `zpool destroy` succeed at once (it otherwise reports
    // "pool is busy" while its own unmount is still in flight).
    if crate::host::is_mounted(mountpoint, Some(pool)) {
        crate::host::unmount(mountpoint)?;
    }
    let args = ["destroy".to_string(), "-f".into(), pool.to_string()];
    let mut last = None;
    for _ in 0..40 {
        match run_tool("zpool", &args, &[]) {
            Ok(_) => return Ok(()),
            Err(e) => last = Some(e),
        }
        if !pools().iter().any(|p| p == pool) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    Err(last.unwrap_or(ProvisionError::Unavailable(format!("zpool destroy {pool} failed"))))
}

/// [`StopDaemon`]: stops the zfs-fuse fsbench started, if it is still that process and
/// holds no pool; a pool in it is someone else's, so the daemon is left running and the step
/// fails (and stays pending) saying so.
pub(super) fn stop_daemon(pid: u32, start_time: u64) -> Result<(), ProvisionError> {
    let me = Identity::Comm("zfs-fuse");
    if is_ours(pid, start_time, me) && !pools().is_empty() {
        return Err(ProvisionError::Unavailable(format!(
            "zfs-fuse (pid {pid}), started by fsbench, still serves pools fsbench did not leave there ({}): \
             left running; destroy or export them, then run `fsbench cleanup` again",
            pools().join(", ")
        )));
    }
    let how = Stop {
        first: libc::SIGTERM,
        kill_after: STOP_TIMEOUT,
        give_up_after: STOP_TIMEOUT * 2,
        reap: true,
    };
    if stop(pid, start_time, me, how) {
        Ok(())
    } else {
        Err(ProvisionError::Unavailable(format!(
            "zfs-fuse (pid {pid}) did not exit after SIGTERM and SIGKILL"
        )))
    }
}

/// Destroy a ZFS pool fsbench made, if it is still on `device` (see [`destroy_pool`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DestroyPool {
    /// The pool (`fsbench-…`).
    pub pool: String,
    /// The device it was made on.
    pub device: String,
    /// Where its dataset is mounted.
    pub mountpoint: PathBuf,
}

/// Stop the zfs-fuse daemon fsbench started, if it is still that process and holds no pool
/// (see [`stop_daemon`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopDaemon {
    /// Its process id.
    pub pid: u32,
    /// Its start time (field 22 of /proc/PID/stat), so a recycled pid is never signalled.
    pub start_time: u64,
}

/// The zfs lock as a [`Lock`] for `fsbench cleanup`: a live run may use the daemon a dead one
/// started (the step then fails and stays pending for the next cleanup).
const CLEANUP_LOCK: Lock = Lock {
    name: "zfs",
    acquire: || {
        ZfsLock::acquire(Duration::from_secs(60))
            .map(|l| Box::new(l) as Box<dyn Any>)
            .map_err(|e| UndoError::Failed(e.to_string()))
    },
};

fn undo_err(e: ProvisionError) -> UndoError {
    use crate::host::HostError;
    match e {
        ProvisionError::Undo(e) => e,
        ProvisionError::Host(e) => e.into(),
        ProvisionError::Io { what, source } => HostError::Io { what, source }.into(),
        other => UndoError::Failed(other.to_string()),
    }
}

impl Kind for DestroyPool {
    const TAG: &'static str = "destroy_pool";
}

impl Step for DestroyPool {
    kind_basics!();
    fn apply(&self) -> Result<(), UndoError> {
        destroy_pool(&self.pool, &self.device, &self.mountpoint).map_err(undo_err)
    }
    /// Also a mount of the pool's dataset: destroying the pool unmounts it.
    fn same_resource(&self, other: &dyn Step) -> bool {
        as_kind::<Self>(other).is_some_and(|o| o.pool == self.pool)
            || as_kind::<Unmount>(other).is_some_and(|u| u.source == self.pool)
    }
    fn describe(&self) -> String {
        format!("destroyed zfs pool {} ({})", self.pool, self.device)
    }
    fn lock(&self) -> Option<Lock> {
        Some(CLEANUP_LOCK)
    }
}

impl Kind for StopDaemon {
    const TAG: &'static str = "stop_daemon";
}

impl Step for StopDaemon {
    kind_basics!();
    fn apply(&self) -> Result<(), UndoError> {
        stop_daemon(self.pid, self.start_time).map_err(undo_err)
    }
    fn same_resource(&self, other: &dyn Step) -> bool {
        as_kind::<Self>(other).is_some_and(|o| o.pid == self.pid)
    }
    fn describe(&self) -> String {
        format!("stopped zfs-fuse (pid {}) fsbench had started", self.pid)
    }
    fn lock(&self) -> Option<Lock> {
        Some(CLEANUP_LOCK)
    }
}

/// The machine-wide zfs lock (an exclusive `flock` on [`LOCK`]); released when dropped.
pub struct ZfsLock {
    _file: std::fs::File,
}

impl ZfsLock {
    /// Waits up to `timeout` for the lock (polling, so Ctrl-C ends the wait).
    pub fn acquire(timeout: Duration) -> Result<ZfsLock, ProvisionError> {
        use rustix::fs::{flock, FlockOperation};
        if let Some(dir) = Path::new(LOCK).parent() {
            std::fs::create_dir_all(dir).map_err(io_err(format!("create {}", dir.display())))?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(LOCK)
            .map_err(io_err(format!("open {LOCK}")))?;
        let t0 = Instant::now();
        loop {
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(ZfsLock { _file: file }),
                Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(io_err(format!("lock {LOCK}"))(e.into())),
            }
            if crate::signal::interrupted() {
                return Err(ProvisionError::Unavailable(
                    "interrupted while waiting for the zfs lock".into(),
                ));
            }
            if t0.elapsed() > timeout {
                return Err(ProvisionError::Unavailable(format!(
                    "another fsbench run has held the zfs lock {LOCK} for {} s; one zfs pool at a time",
                    timeout.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `stop_daemon` record as runs before this module wrote it (the JSON in a run's state
    /// file) still reads and undoes: a process named zfs-fuse (a copy of sleep) with the
    /// recorded start time is stopped, one with another start time is left alone.
    #[test]
    fn stop_daemon_records_of_older_runs_still_read_and_undo() {
        use crate::host::process::testing::spawn_fresh_copy;
        use crate::host::process::{is_ours, Identity};
        use crate::host::process_start_time;
        use crate::undo::{Kinds, Record, Step};
        let start_of = |pid| process_start_time(pid).unwrap();
        let kinds = Kinds::generic().with::<StopDaemon>();
        let read = |text: &str| kinds.read(&serde_json::from_str::<Record>(text).unwrap()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        // A stop_daemon record: a process named zfs-fuse (a copy of sleep) with the recorded
        // start time is stopped; the real daemon's pool check still comes first.
        let fake = dir.path().join("zfs-fuse");
        std::fs::copy("/bin/sleep", &fake).unwrap();
        let mut daemon = spawn_fresh_copy(&fake);
        let pid = daemon.id();
        let start = start_of(pid);
        let old_stop = format!(r#"{{"undo":"stop_daemon","pid":{pid},"start_time":{start}}}"#);
        let stop_rec = read(&old_stop);
        assert_eq!(stop_rec.record(), StopDaemon { pid, start_time: start }.record());
        let not_ours = read(&old_stop.replace(
            &format!("\"start_time\":{start}"),
            &format!("\"start_time\":{}", start + 1),
        ));
        not_ours.apply().unwrap();
        assert!(daemon.try_wait().unwrap().is_none(), "another start time was stopped");
        if pools().is_empty() {
            stop_rec.apply().unwrap();
            // SIGTERM ends sleep; the record reaps it (no `Child` waits for a real daemon).
            assert!(!is_ours(pid, start, Identity::Comm("zfs-fuse")));
        } else {
            // Another zfs-fuse on this machine serves pools: the step refuses and stops nothing.
            assert!(stop_rec.apply().is_err());
            assert!(daemon.try_wait().unwrap().is_none());
        }
        let _ = daemon.kill();
        let _ = daemon.wait();
    }

    fn opts(o: &[&str]) -> Vec<String> {
        o.iter().map(|s| s.to_string()).collect()
    }

    fn props(o: &[&str]) -> Vec<(String, String)> {
        dataset_properties(&opts(o)).unwrap()
    }

    #[test]
    fn mount_options_become_dataset_properties() {
        let p = props(&[
            "noatime",
            "compress=lzjb",
            "recordsize=16k",
            "sync=disabled",
            "checksum=sha256",
        ]);
        let want = [
            ("atime", "off"),
            ("compression", "lzjb"),
            ("recordsize", "16k"),
            ("sync", "disabled"),
            ("checksum", "sha256"),
        ];
        assert_eq!(p, want.map(|(k, v)| (k.to_string(), v.to_string())));
        assert_eq!(
            props(&["compression=gzip-9"]),
            [("compression".into(), "gzip-9".into())]
        );
        assert_eq!(props(&["compress"]), [("compression".into(), "on".into())]);
        assert!(props(&[]).is_empty());
        // The last of two options for one property wins, as with mount(8).
        assert_eq!(props(&["atime", "noatime"]), [("atime".into(), "off".into())]);
    }

    #[test]
    fn an_unknown_or_empty_option_is_one_error_listing_the_supported_ones() {
        let e = dataset_properties(&opts(&["noatime", "discard"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`discard`") && e.contains(crate::fstype::ZFS_SUPPORTED_OPTIONS),
            "{e}"
        );
        let e = dataset_properties(&opts(&["recordsize"])).unwrap_err().to_string();
        assert!(e.contains("`recordsize`"), "{e}");
        let e = dataset_properties(&opts(&["compress="])).unwrap_err().to_string();
        assert!(e.contains("needs a value"), "{e}");
    }

    #[test]
    fn pool_names_mark_the_run_and_the_repeat() {
        let n = pool_name(Path::new("/var/tmp/fsbench/run-123-1700000000"), "s001-zfs-noatime");
        assert_eq!(n, "fsbench-123-1700000000-s001-zfs-noatime");
        assert!(n.starts_with(POOL_PREFIX));
    }

    #[test]
    fn a_pools_dataset_mount_is_the_pools_own_resource() {
        let pool = DestroyPool {
            pool: "fsbench-1-2-s000-zfs".into(),
            device: "/dev/loop9".into(),
            mountpoint: PathBuf::from("/x/mnt-s000-zfs"),
        };
        let mount = |source: &str| Unmount {
            mountpoint: PathBuf::from("/x/mnt-s000-zfs"),
            source: source.into(),
        };
        assert!(pool.same_resource(&mount("fsbench-1-2-s000-zfs")));
        assert!(!pool.same_resource(&mount("/dev/loop9")));
    }

    #[test]
    fn stop_daemon_never_signals_a_process_that_is_not_the_recorded_zfs_fuse() {
        // A live process with the recorded pid and start time, but not zfs-fuse.
        let mut other = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = other.id();
        let start = crate::host::process_start_time(pid).unwrap();
        let r = stop_daemon(pid, start);
        let alive = other.try_wait().unwrap().is_none();
        let _ = other.kill();
        let _ = other.wait();
        assert!(r.is_ok() && alive, "{r:?}");
    }

    #[test]
    fn versions_shorten_to_major_minor() {
        assert_eq!(short_version("0.7.0-25+b1").as_deref(), Some("0.7"));
        assert_eq!(short_version("1:0.7.2-1").as_deref(), Some("0.7"));
        assert_eq!(short_version(""), None);
        assert_eq!(
            Backend::Fuse { version: "0.7".into() }.label(),
            "zfs (zfs-fuse 0.7, userspace)"
        );
    }
}
