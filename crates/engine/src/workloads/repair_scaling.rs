//! `repair_scaling`: how the cost of a full filesystem check and of a mount grows with the
//! number of files (issue 30, "the cost of repair"). A user choosing a filesystem for 10⁷
//! files wants to know whether `fsck` after a crash takes a minute or an hour, and how much
//! memory the checker needs.
//!
//! One repeat, on the fresh filesystem the runner made for it, grows one file set level by level
//! to each of `counts` files (each level adds the files between the previous count and this
//! one: creation is untimed, with a progress step, `O_CREAT|O_EXCL` + close (+ one write of
//! `file_size` bytes) in directories of `files_per_dir` files, then `syncfs`). At each level,
//! in this order:
//!
//! | phase | what is timed | metrics |
//! |---|---|---|
//! | `mount_cut@N` | after `FS_IOC_SHUTDOWN` with NOLOGFLUSH (the power cut of the powercut workload, right after the level's `syncfs`, so the journal holds the level's metadata) and an unmount: the mount, which replays the log | `time` (s, lower is better) |
//! | `check@N` | after a clean unmount: the full read-only check of the device, `e2fsck -f -n`, `xfs_repair -n`, `btrfs check --readonly` ([`recover::fsck_for`]) | `time` (s), `check_rss` (MiB, detail: the checker's peak resident set, `ru_maxrss` of its `wait4` usage) |
//! | `mount@N` | the mount after that clean unmount | `time` (s) |
//!
//! Caches are synced and dropped before each phase when the run asks (the check and both mounts
//! start cold). The check's CPU is the checker's (children's CPU), a mount's is mount(8)'s. A
//! check that finds damage on this cleanly unmounted filesystem is a note; a checker that cannot
//! check is an error.
//!
//! `mount_cut` needs the shutdown ioctl, probed at the start ([`recover::shutdown_supported`]);
//! where the filesystem lacks it (btrfs without `CONFIG_BTRFS_EXPERIMENTAL`) the phase is not
//! recorded and a note says why. btrfs is copy-on-write: after a cut it mounts its last
//! committed transaction and replays only the tree log of files fsynced since, which the
//! level's `syncfs` has emptied, so its cut mount is its clean mount; the power-cut disk (FUSE)
//! of the powercut workload could cut it, but serving 10⁶ files through FUSE would time the
//! server rather than the filesystem. On a ZFS pool fsbench made (issue 30: "zfs scrub where a
//! pool is used"), which has no offline checker and no shutdown ioctl, `check@N` is
//! `zpool scrub` timed to its end (polling `zpool status`; the scrub reads and verifies every
//! block, in the daemon or kernel, so there is no checker process and no `check_rss`), `mount@N`
//! is `zfs mount` after `zfs unmount`, and `mount_cut@N` is not measured (a note says why). A
//! dataset of a pool fsbench did not make is refused.
//!
//! Every repeat's notes name the checker and its version (`checker: e2fsck -f -n · e2fsck
//! 1.47.0 (5-Feb-2023)`, [`CHECKER_NOTE`]), which the report's repair-scaling section prints
//! beside the fitted exponent. At the end (also on error and on interrupt) the filesystem is
//! mounted again if it is not, and the file set is removed, untimed: the run directory is left
//! empty. The workload needs a filesystem fsbench made on a block device
//! ([`crate::Workload::needs_block_device`]).
//!
//! References: e2fsck(8), xfs_repair(8), btrfs-check(8); mmtests' `fsck` configs (empty files,
//! counts by decade); ioctl_fs(2)'s `FS_IOC_SHUTDOWN`.

use super::powercut::recover::{self, Fsck, FsckVerdict};
use super::powercut::Fs;
use crate::metric::{MetricId, RawSample, Role, Unit};
use crate::phase::{Caches, Phases, Policy};
use crate::units::Bytes;
use crate::Invalid;
use crate::{EngineError, ErrHint, RunContext, Workload, WorkloadKind};
use rustix::fs::{Mode, OFlags};
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::Ordering;

/// Phase prefix of the full check at a level (`check@10000`).
pub const CHECK: &str = "check";
/// Phase prefix of the mount after a clean unmount.
pub const MOUNT: &str = "mount";
/// Phase prefix of the mount after a cut (log replay).
pub const MOUNT_CUT: &str = "mount_cut";
/// Start of the note naming the checker and its version.
pub const CHECKER_NOTE: &str = "checker: ";
/// Metric of every phase: its wall time, seconds.
pub const TIME: &str = "time";
/// Detail metric of a check: the checker's peak resident set, MiB.
pub const CHECK_RSS: &str = "check_rss";

/// The workload's directory in the run directory.
const TOP: &str = "repair";
/// Most files at one level (file names carry 9 digits).
const MAX_COUNT: u64 = 999_999_999;
/// Fewest files at a level: below this a check times its own start-up.
const MIN_COUNT: u64 = 100;
/// Largest `file_size`: the workload is about metadata.
const MAX_FILE_SIZE: u64 = Bytes::MIB;
/// Largest `files_per_dir`.
const MAX_PER_DIR: u32 = 1_000_000;
/// Length of a directory name (`d` + 7 digits) and of a file name (`f` + 9 digits), bytes.
const DIR_NAME: u64 = 8;
const FILE_NAME: u64 = 10;
/// Errors of a full filesystem say what to change.
const ERR: ErrHint = ErrHint("lower counts or file_size, or use a larger target");
/// Every phase: its time is its result however short.
const POLICY: Policy = Policy::new();

/// Parameters of the `repair_scaling` workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepairScalingSpec {
    /// Files at each level, strictly increasing, each 100..=999 999 999. Default
    /// `[10000, 100000, 1000000]`.
    #[serde(default = "default_counts")]
    pub counts: Vec<u64>,
    /// Files per directory (the tree grows by directories, so a directory's size does not
    /// change with the level). Default 1000.
    #[serde(default = "default_per_dir")]
    pub files_per_dir: u32,
    /// Bytes written to every file, at most 1 MiB. Default 0 (empty files, as mmtests' fsck
    /// tests make: the check's cost is the metadata's).
    #[serde(default)]
    pub file_size: Bytes,
    /// Also time the mount after a cut (`mount_cut@N`) where the shutdown ioctl exists.
    /// Default true.
    #[serde(default = "super::default_true")]
    pub cut: bool,
}

fn default_counts() -> Vec<u64> {
    vec![10_000, 100_000, 1_000_000]
}
fn default_per_dir() -> u32 {
    1000
}

impl Default for RepairScalingSpec {
    fn default() -> Self {
        RepairScalingSpec {
            counts: default_counts(),
            files_per_dir: default_per_dir(),
            file_size: Bytes(0),
            cut: true,
        }
    }
}

/// `PREFIX@COUNT`.
pub fn phase_name(prefix: &str, count: u64) -> String {
    format!("{prefix}@{count}")
}

/// The prefix and file count of a phase `PREFIX@COUNT` of this workload.
pub fn parse_phase(phase: &str) -> Option<(&str, u64)> {
    let (prefix, count) = phase.rsplit_once('@')?;
    let count = count.parse().ok()?;
    [CHECK, MOUNT, MOUNT_CUT].contains(&prefix).then_some((prefix, count))
}

/// Where the filesystem stands, so the end can bring it back mounted whatever happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Mounted,
    /// Mounted but shut down (after the cut, before its unmount).
    ShutDown,
    Unmounted,
}

fn metric_time() -> MetricId {
    MetricId::lower(TIME, Unit::Seconds)
}

fn metric_rss() -> MetricId {
    MetricId::lower(CHECK_RSS, Unit::Mib).with_role(Role::Detail)
}

fn eio(what: &str, e: impl std::fmt::Display) -> EngineError {
    EngineError::io(what.to_string(), std::io::Error::other(e.to_string()))
}

impl RepairScalingSpec {
    /// Directories holding `files` files.
    fn dirs_for(&self, files: u64) -> u64 {
        files.div_ceil(u64::from(self.files_per_dir.max(1)))
    }

    fn largest(&self) -> u64 {
        self.counts.iter().copied().max().unwrap_or(0)
    }

    /// Creates files `from..to` under `top` (directories made as they are first needed), then
    /// `syncfs`; untimed, with a progress step.
    fn grow(&self, ctx: &RunContext, top: &Path, from: u64, to: u64) -> Result<(), EngineError> {
        let mut step = crate::progress::step(
            format!("repair_scaling file set {from} → {to} files"),
            Some(to - from),
            "files",
        );
        let per = u64::from(self.files_per_dir);
        let data = vec![0x5au8; self.file_size.get() as usize];
        let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let mut dir: Option<(u64, OwnedFd)> = None;
        for i in from..to {
            if i % 1024 == 0 {
                if ctx.interrupt.load(Ordering::Relaxed) {
                    return Err(EngineError::Interrupted);
                }
                step.set(i - from);
            }
            let d = i / per;
            if dir.as_ref().is_none_or(|(n, _)| *n != d) {
                let name = dir_name(d);
                let path = top.join(&name);
                if i % per == 0 {
                    rustix::fs::mkdir(&path, Mode::from_raw_mode(0o755))
                        .map_err(|e| ERR.io("mkdir", &path, e.into()))?;
                }
                let fd =
                    rustix::fs::open(&path, dir_flags, Mode::empty()).map_err(|e| ERR.io("open", &path, e.into()))?;
                dir = Some((d, fd));
            }
            let (_, dfd) = dir.as_ref().expect("opened above");
            let fname = CString::new(file_name(i)).expect("no NUL in a formatted name");
            let fd = rustix::fs::openat(
                dfd,
                &fname,
                OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o644),
            )
            .map_err(|e| ERR.io_in("create", &top.join(dir_name(d)), Some(&fname), e.into()))?;
            if !data.is_empty() {
                crate::sysio::write_all(&fd, &data)
                    .map_err(|e| ERR.io_in("write", &top.join(dir_name(d)), Some(&fname), e))?;
            }
            drop(fd);
        }
        let f = std::fs::File::open(top).map_err(|e| EngineError::io(format!("open {}", top.display()), e))?;
        rustix::fs::syncfs(&f).map_err(|e| ERR.io("syncfs", top, e.into()))?;
        step.finish();
        Ok(())
    }

    /// The levels: grow, then cut and mount, check, mount; `state` follows the filesystem.
    fn levels(
        &self,
        ctx: &RunContext,
        phases: &mut Phases,
        fs: &Fs,
        fsck: &Fsck,
        cut: bool,
        state: &mut State,
    ) -> Result<(), EngineError> {
        let top = &ctx.dir.join(TOP);
        let mut made = 0;
        for &count in &self.counts {
            self.grow(ctx, top, made, count)?;
            made = count;
            if cut {
                let name = phase_name(MOUNT_CUT, count);
                recover::shutdown_now(top)
                    .map_err(|e| EngineError::io(format!("FS_IOC_SHUTDOWN {}", top.display()), e))?;
                *state = State::ShutDown;
                fs.unmount()?;
                *state = State::Unmounted;
                self.timed_mount(ctx, phases, fs, &name, state)?;
            }
            fs.unmount()?;
            *state = State::Unmounted;
            self.timed_check(ctx, phases, fs, fsck, count)?;
            self.timed_mount(ctx, phases, fs, &phase_name(MOUNT, count), state)?;
        }
        Ok(())
    }

    /// Phase `name`: mount the unmounted filesystem, timed.
    fn timed_mount(
        &self,
        ctx: &RunContext,
        phases: &mut Phases,
        fs: &Fs,
        name: &str,
        state: &mut State,
    ) -> Result<(), EngineError> {
        if ctx.interrupt.load(Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        phases.begin(name, Caches::DropIfAsked);
        let t = phases.with_children(None, || {
            fs.mount().map_err(|e| eio(&format!("{name}: mount {}", fs.device), e))
        })?;
        *state = State::Mounted;
        phases.record(name, &t, vec![(metric_time(), t.wall.as_secs_f64())], &POLICY);
        Ok(())
    }

    /// Phase `check@count`: the full read-only check of the unmounted device, timed.
    fn timed_check(
        &self,
        ctx: &RunContext,
        phases: &mut Phases,
        fs: &Fs,
        fsck: &Fsck,
        count: u64,
    ) -> Result<(), EngineError> {
        let name = phase_name(CHECK, count);
        if ctx.interrupt.load(Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        phases.begin(&name, Caches::DropIfAsked);
        let t = phases.with_children(None, || {
            fsck.check(&fs.device, Some(ctx.interrupt)).map_err(|e| {
                if ctx.interrupt.load(Ordering::Relaxed) {
                    EngineError::Interrupted
                } else {
                    EngineError::io(fsck.check_command(&fs.device), e)
                }
            })
        })?;
        let checked = &t.value;
        match checked.verdict {
            FsckVerdict::Clean => {}
            FsckVerdict::RepairNeeded => phases.note(format!(
                "{name}: {} found damage on a cleanly unmounted filesystem: {}",
                fsck.program, checked.tail
            )),
            FsckVerdict::Failed => {
                return Err(EngineError::Invalid(format!(
                    "{name}: `{}` could not check: {}",
                    fsck.check_command(&fs.device),
                    checked.tail
                )))
            }
        }
        let rss_mib = checked.max_rss_kib as f64 / 1024.0;
        phases.record(
            &name,
            &t,
            vec![(metric_time(), t.wall.as_secs_f64()), (metric_rss(), rss_mib)],
            &POLICY,
        );
        Ok(())
    }

    /// Whatever happened, the filesystem mounted and sound again: a shut-down one is unmounted
    /// first, an unmounted one mounted.
    fn restore(fs: &Fs, state: State) -> Result<(), EngineError> {
        if state == State::ShutDown {
            fs.unmount()?;
        }
        if state != State::Mounted && !crate::host::is_mounted(&fs.mountpoint, None) {
            fs.mount().map_err(|e| eio(&format!("mount {} again", fs.device), e))?;
        }
        Ok(())
    }

    /// Removes the file set under `top` (untimed, with a progress step): what [`Self::grow`]
    /// made, then anything else `remove_dir_all` finds.
    fn remove(&self, top: &Path, made: u64) -> Result<(), EngineError> {
        if !top.exists() {
            return Ok(());
        }
        let mut step = crate::progress::step("repair_scaling removing the file set", Some(made), "files");
        let per = u64::from(self.files_per_dir);
        let mut done = 0;
        for d in 0..self.dirs_for(made) {
            let dir = top.join(dir_name(d));
            let Ok(dfd) = rustix::fs::open(
                &dir,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            ) else {
                continue;
            };
            for i in d * per..((d + 1) * per).min(made) {
                let fname = CString::new(file_name(i)).expect("no NUL in a formatted name");
                match rustix::fs::unlinkat(&dfd, &fname, rustix::fs::AtFlags::empty()) {
                    Ok(()) | Err(rustix::io::Errno::NOENT) => {}
                    Err(e) => {
                        return Err(EngineError::io(
                            format!("unlink {}/{}", dir.display(), file_name(i)),
                            e.into(),
                        ))
                    }
                }
                done += 1;
                if done % 4096 == 0 {
                    step.set(done);
                }
            }
        }
        std::fs::remove_dir_all(top).map_err(|e| EngineError::io(format!("remove {}", top.display()), e))?;
        step.finish();
        Ok(())
    }

    fn run_levels(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        if let Some(pool) = Pool::of_run(ctx)? {
            return self.run_pool_levels(ctx, &pool);
        }
        let fs = Fs::of_run(ctx, "repair_scaling")?;
        let fsck = recover::fsck_for(&fs.fs_type).ok_or_else(|| {
            EngineError::Unavailable(format!("{}: fsbench knows no offline checker for it", fs.fs_type))
        })?;
        fsck.available()?;
        let mut phases = Phases::new(ctx);
        phases.note(format!(
            "{CHECKER_NOTE}{} · {}",
            fsck.check_command("").trim_end(),
            fsck.version().unwrap_or_else(|| "version unknown".into())
        ));
        let cut = self.cut
            && match recover::shutdown_supported(ctx.dir) {
                Ok(()) => {
                    phases.note(format!(
                        "{MOUNT_CUT}: the power cut is FS_IOC_SHUTDOWN with NOLOGFLUSH right after each level's syncfs"
                    ));
                    true
                }
                Err(why) => {
                    let cow = if fs.fs_type == "btrfs" {
                        "; btrfs mounts its last committed transaction after a cut and replays only the tree log of files fsynced since, which the level's syncfs emptied: its cut mount is its clean mount"
                    } else {
                        ""
                    };
                    phases.note(format!("{MOUNT_CUT} not measured on {}: {why}{cow}", fs.fs_type));
                    false
                }
            };
        let top = ctx.dir.join(TOP);
        std::fs::create_dir(&top).map_err(|e| ERR.io("mkdir", &top, e))?;
        let mut state = State::Mounted;
        let result = self.levels(ctx, &mut phases, &fs, &fsck, cut, &mut state);
        let restored = Self::restore(&fs, state);
        let removed = restored.and_then(|()| self.remove(&top, self.largest()));
        result?;
        removed?;
        Ok(phases.finish())
    }
}

// ---------------------------------------------------------------------------------------------
// ZFS: a pool fsbench made is checked by a scrub and "mounted" by `zfs mount`.
// ---------------------------------------------------------------------------------------------

/// The ZFS pool fsbench made under the run directory (its root dataset mounted there).
struct Pool {
    name: String,
    mountpoint: std::path::PathBuf,
    /// `fuse.zfs` (zfs-fuse) or `zfs` (OpenZFS in the kernel).
    fs_type: String,
}

impl Pool {
    /// The pool mounted above `ctx.dir` when it is a ZFS dataset; `Ok(None)` for any other
    /// filesystem. A pool fsbench did not make (its name lacks [`crate::host::ZFS_POOL_PREFIX`],
    /// such as a user's dataset under `--dir`) is refused, never scrubbed or unmounted.
    fn of_run(ctx: &RunContext) -> Result<Option<Pool>, EngineError> {
        let mountpoint = ctx.dir.parent().map(Path::to_path_buf).unwrap_or_default();
        let mountpoint = std::fs::canonicalize(&mountpoint).unwrap_or(mountpoint);
        let Some((name, fs_type, _)) = crate::host::mount_entry(&mountpoint) else {
            return Ok(None);
        };
        if fs_type != "zfs" && fs_type != "fuse.zfs" {
            return Ok(None);
        }
        if !made_by_fsbench(&name) {
            return Err(EngineError::Invalid(format!(
                "repair_scaling scrubs and remounts the pool under test, and {name} on {} is not a pool fsbench made: run it on loop images or --device",
                mountpoint.display()
            )));
        }
        Ok(Some(Pool {
            name,
            mountpoint,
            fs_type,
        }))
    }

    fn zfs(&self, args: &[&str]) -> Result<String, EngineError> {
        tool("zfs", args)
    }

    fn zpool(&self, args: &[&str]) -> Result<String, EngineError> {
        tool("zpool", args)
    }

    /// Commits the open transaction group, untimed, so the scrub sees the level's files: a
    /// snapshot made and destroyed (zfs-fuse 0.7 has no `zpool sync`, and its FUSE mount does
    /// not pass `syncfs` on).
    fn commit(&self) -> Result<(), EngineError> {
        let snap = format!("{}@fsbench-scrub", self.name);
        self.zfs(&["snapshot", &snap])?;
        self.zfs(&["destroy", &snap]).map(|_| ())
    }

    /// `zpool scrub`, then waits until `zpool status` no longer shows it in progress; the
    /// status's scrub line at the end (`scrub completed after 0h0m with 0 errors …`).
    fn scrub(&self, interrupt: &std::sync::atomic::AtomicBool) -> Result<String, EngineError> {
        self.zpool(&["scrub", &self.name])?;
        loop {
            let out = self.zpool(&["status", &self.name])?;
            if !scrub_in_progress(&out) {
                let line = out.lines().find(|l| l.contains("scrub")).unwrap_or_default();
                return Ok(line.trim().to_string());
            }
            if interrupt.load(Ordering::Relaxed) {
                // Stop the scrub rather than leave it running into the next phase.
                let _ = self.zpool(&["scrub", "-s", &self.name]);
                return Err(EngineError::Interrupted);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// `zfs mount POOL`, then waits (at most 10 s) until the dataset is in the mount table.
    fn mount(&self) -> Result<(), EngineError> {
        self.zfs(&["mount", &self.name])?;
        let t0 = std::time::Instant::now();
        while !crate::host::is_mounted(&self.mountpoint, Some(&self.name)) {
            if t0.elapsed() > std::time::Duration::from_secs(10) {
                return Err(EngineError::Invalid(format!(
                    "zfs mount {}: not mounted on {} after 10 s",
                    self.name,
                    self.mountpoint.display()
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Ok(())
    }

    fn unmount(&self) -> Result<(), EngineError> {
        self.zfs(&["unmount", &self.name]).map(|_| ())
    }
}

/// Whether a mounted ZFS dataset is the root of a pool fsbench made (never a user's pool, nor
/// a child dataset).
fn made_by_fsbench(dataset: &str) -> bool {
    dataset.starts_with(crate::host::ZFS_POOL_PREFIX) && !dataset.contains('/')
}

/// Runs `program args` to its end: its output, or an error naming the command.
fn tool(program: &str, args: &[&str]) -> Result<String, EngineError> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    crate::host::run_tool(program, &args).map_err(|e| eio(&format!("{program} {}", args.join(" ")), e))
}

/// `ZFS pool version 23` from `zpool upgrade -v` ("This system is currently running ZFS pool
/// version 23.").
fn pool_version(upgrade: &str) -> Option<String> {
    let line = upgrade.lines().find(|l| l.contains("pool version"))?;
    let at = line.find("ZFS pool version").or_else(|| line.find("pool version"))?;
    Some(line[at..].trim().trim_end_matches('.').to_string())
}

/// Whether a `zpool status` text shows a scrub in progress (zfs-fuse: ` scrub: scrub in
/// progress`, OpenZFS: `scan: scrub in progress since …`).
fn scrub_in_progress(status: &str) -> bool {
    status
        .lines()
        .any(|l| l.contains("scrub in progress") || l.contains("scrub: resilver in progress"))
}

impl RepairScalingSpec {
    /// The levels on a ZFS pool: grow, then `check@N` = a scrub of the pool to its end and
    /// `mount@N` = `zfs mount` after `zfs unmount` (ZFS has no offline checker and no shutdown
    /// ioctl: `mount_cut` is not measured, and a note says why).
    fn run_pool_levels(&self, ctx: &RunContext, pool: &Pool) -> Result<RawSample, EngineError> {
        let mut phases = Phases::new(ctx);
        let backend = if pool.fs_type == "fuse.zfs" {
            "zfs-fuse (FUSE daemon)"
        } else {
            "OpenZFS (kernel)"
        };
        let version = tool("zpool", &["upgrade", "-v"])
            .ok()
            .and_then(|o| pool_version(&o))
            .unwrap_or_else(|| "version unknown".into());
        phases.note(format!("{CHECKER_NOTE}zpool scrub (to its end) · {version}, {backend}"));
        phases.note(format!(
            "{CHECK} on zfs is a scrub: it reads and verifies every block of the pool in the ZFS {}, so its CPU and memory are not a checker process's (no check_rss)",
            if pool.fs_type == "fuse.zfs" { "daemon" } else { "kernel" }
        ));
        if self.cut {
            phases.note(format!(
                "{MOUNT_CUT} not measured on zfs: ZFS has no FS_IOC_SHUTDOWN; it is transactional and imports its last committed transaction group after a cut"
            ));
        }
        let top = ctx.dir.join(TOP);
        std::fs::create_dir(&top).map_err(|e| ERR.io("mkdir", &top, e))?;
        let mut mounted = true;
        let mut made = 0;
        let mut result = Ok(());
        for &count in &self.counts {
            result = self.grow(ctx, &top, made, count).and_then(|()| {
                made = count;
                pool.commit()?;
                let name = phase_name(CHECK, count);
                phases.begin(&name, Caches::DropIfAsked);
                let t = phases.with_children(None, || pool.scrub(ctx.interrupt))?;
                if t.value.contains("errors") && !t.value.contains("with 0 errors") {
                    phases.note(format!("{name}: the scrub found errors: {}", t.value));
                }
                phases.record(&name, &t, vec![(metric_time(), t.wall.as_secs_f64())], &POLICY);
                pool.unmount()?;
                mounted = false;
                let name = phase_name(MOUNT, count);
                phases.begin(&name, Caches::DropIfAsked);
                let t = phases.with_children(None, || pool.mount())?;
                mounted = true;
                phases.record(&name, &t, vec![(metric_time(), t.wall.as_secs_f64())], &POLICY);
                Ok(())
            });
            if result.is_err() {
                break;
            }
        }
        let restored = if mounted || crate::host::is_mounted(&pool.mountpoint, Some(&pool.name)) {
            Ok(())
        } else {
            pool.mount()
        };
        let removed = restored.and_then(|()| self.remove(&top, made.max(self.largest())));
        result?;
        removed?;
        Ok(phases.finish())
    }
}

fn dir_name(d: u64) -> String {
    format!("d{d:07}")
}

fn file_name(i: u64) -> String {
    format!("f{i:09}")
}

impl Workload for RepairScalingSpec {
    fn phases(&self) -> Vec<String> {
        let mut out = Vec::new();
        for &c in &self.counts {
            if self.cut {
                out.push(phase_name(MOUNT_CUT, c));
            }
            out.push(phase_name(CHECK, c));
            out.push(phase_name(MOUNT, c));
        }
        out
    }

    /// Every count times `factor`; above 1 the counts below the smallest scaled one stay, so
    /// `--scale 10` turns 10⁴…10⁶ into 10⁴…10⁷ (the curve keeps its start and reaches further).
    fn scaled(&self, factor: f64) -> WorkloadKind {
        let scale = |c: u64| {
            let v = (c as f64 * factor).round();
            if v.is_finite() {
                (v as u64).clamp(MIN_COUNT, MAX_COUNT)
            } else {
                MAX_COUNT
            }
        };
        let mut counts: Vec<u64> = self.counts.iter().map(|&c| scale(c)).collect();
        if factor > 1.0 {
            let low = counts.iter().copied().min().unwrap_or(0);
            counts.extend(self.counts.iter().copied().filter(|&c| c < low));
        }
        counts.sort_unstable();
        counts.dedup();
        WorkloadKind::RepairScaling(RepairScalingSpec { counts, ..self.clone() })
    }

    fn validate(&self) -> Result<(), Invalid> {
        if self.counts.is_empty() {
            return Err("counts must name at least one number of files, e.g. counts = [10000, 100000]".into());
        }
        if let Some(c) = self.counts.iter().find(|&&c| !(MIN_COUNT..=MAX_COUNT).contains(&c)) {
            return Err(Invalid(format!(
                "counts: {c} is out of range: every count must be between {MIN_COUNT} and {MAX_COUNT} files"
            )));
        }
        if let Some(w) = self.counts.windows(2).find(|w| w[1] <= w[0]) {
            return Err(Invalid(format!(
                "counts must increase strictly (the file set grows level by level): {} then {}",
                w[0], w[1]
            )));
        }
        if self.files_per_dir == 0 || self.files_per_dir > MAX_PER_DIR {
            return Err(Invalid(format!(
                "files_per_dir must be between 1 and {MAX_PER_DIR} (is {})",
                self.files_per_dir
            )));
        }
        if self.dirs_for(self.largest()) > 9_999_999 {
            return Err(Invalid(format!(
                "{} files at {} per directory need more than 9,999,999 directories: raise files_per_dir",
                self.largest(),
                self.files_per_dir
            )));
        }
        if self.file_size.get() > MAX_FILE_SIZE {
            return Err(Invalid(format!(
                "file_size must be at most {} (is {}): repair_scaling measures metadata",
                Bytes(MAX_FILE_SIZE),
                self.file_size
            )));
        }
        Ok(())
    }

    /// The three checkers' versions where installed (the one a filesystem uses is also in each
    /// repeat's notes).
    fn tool_versions(&self) -> Vec<(String, String)> {
        ["ext4", "xfs", "btrfs"]
            .into_iter()
            .filter_map(recover::fsck_for)
            .filter_map(|f| f.version().map(|v| (f.program.to_string(), v)))
            .collect()
    }

    fn needs_block_device(&self) -> bool {
        true
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        let files = self.largest();
        crate::fstype::Footprint::default()
            .dirs(1, TOP.len() as u64)
            .dirs(self.dirs_for(files), DIR_NAME)
            .files(files, self.file_size.get(), FILE_NAME)
    }

    fn describe(&self) -> String {
        let counts: Vec<String> = self.counts.iter().map(u64::to_string).collect();
        format!(
            "repair_scaling counts=[{}] files_per_dir={} file_size={}: at each count a full read-only check, a mount{}, with the checker's peak memory",
            counts.join(", "),
            self.files_per_dir,
            self.file_size,
            if self.cut { ", a mount after a cut (shutdown ioctl)" } else { "" }
        )
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        self.validate()?;
        if ctx.interrupt.load(Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        self.run_levels(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(counts: &[u64]) -> RepairScalingSpec {
        RepairScalingSpec {
            counts: counts.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn a_scrub_in_progress_is_read_from_both_zfs_status_formats() {
        // zfs-fuse 0.7, captured here.
        assert!(!scrub_in_progress(
            " scrub: scrub completed after 0h0m with 0 errors on Thu Nov 26 09:43:03 2026"
        ));
        assert!(scrub_in_progress(
            " scrub: scrub in progress for 0h0m, 45.00% done, 0h0m to go"
        ));
        // OpenZFS 2.x (zpool-status(8)).
        assert!(scrub_in_progress(
            "  scan: scrub in progress since Tue Nov 25 10:00:00 2026"
        ));
        assert!(!scrub_in_progress(
            "  scan: scrub repaired 0B in 00:00:01 with 0 errors on Tue Nov 25 10:00:01 2026"
        ));
        assert!(!scrub_in_progress(" scrub: none requested"));
        assert_eq!(
            pool_version("This system is currently running ZFS pool version 23.\n\nThe following versions").as_deref(),
            Some("ZFS pool version 23")
        );
        // Only a pool fsbench made is scrubbed and remounted.
        assert!(made_by_fsbench("fsbench-123-1700000000-s001-zfs"));
        assert!(!made_by_fsbench("tank"));
        assert!(!made_by_fsbench("fsbench-123-1700000000-s001-zfs/home"));
    }

    #[test]
    fn phases_name_each_level_in_run_order() {
        let s = spec(&[200, 2000]);
        assert_eq!(
            s.phases(),
            [
                "mount_cut@200",
                "check@200",
                "mount@200",
                "mount_cut@2000",
                "check@2000",
                "mount@2000"
            ]
        );
        let no_cut = RepairScalingSpec { cut: false, ..s };
        assert_eq!(no_cut.phases(), ["check@200", "mount@200", "check@2000", "mount@2000"]);
        assert_eq!(parse_phase("check@10000"), Some((CHECK, 10_000)));
        assert_eq!(parse_phase("mount_cut@7"), Some((MOUNT_CUT, 7)));
        assert_eq!(parse_phase("rndrd@100"), None, "another workload's sweep");
        assert_eq!(parse_phase("check"), None);
    }

    #[test]
    fn bad_counts_are_refused_with_what_to_change() {
        for (counts, want) in [
            (vec![], "at least one"),
            (vec![10_000, 10_000], "increase strictly"),
            (vec![100_000, 10_000], "increase strictly"),
            (vec![50], "between 100"),
            (vec![1_000_000_000], "between 100"),
        ] {
            let e = spec(&counts).validate().unwrap_err();
            assert!(e.0.contains(want), "{counts:?}: {e}");
        }
        let e = RepairScalingSpec {
            files_per_dir: 0,
            ..Default::default()
        }
        .validate()
        .unwrap_err();
        assert!(e.0.contains("files_per_dir"), "{e}");
        let e = RepairScalingSpec {
            file_size: Bytes(2 * Bytes::MIB),
            ..Default::default()
        }
        .validate()
        .unwrap_err();
        assert!(e.0.contains("file_size"), "{e}");
        assert!(toml::from_str::<WorkloadKind>("kind = \"repair_scaling\"\ncount = [1]").is_err());
    }

    #[test]
    fn scale_reaches_ten_million_and_keeps_the_start() {
        let d = RepairScalingSpec::default();
        let WorkloadKind::RepairScaling(up) = d.scaled(10.0) else {
            panic!()
        };
        assert_eq!(up.counts, [10_000, 100_000, 1_000_000, 10_000_000]);
        let WorkloadKind::RepairScaling(down) = d.scaled(0.01) else {
            panic!()
        };
        assert_eq!(down.counts, [100, 1000, 10_000]);
        let WorkloadKind::RepairScaling(tiny) = d.scaled(1e-9) else {
            panic!()
        };
        assert_eq!(tiny.counts, [100], "clamped and deduplicated");
        assert!(up.validate().is_ok() && tiny.validate().is_ok());
    }

    #[test]
    fn the_footprint_is_the_largest_level() {
        let fp = spec(&[200, 2500]).footprint();
        assert_eq!(fp.files, 2500);
        assert_eq!(fp.dirs, 1 + 3, "the top and ceil(2500 / 1000) directories");
        assert_eq!(fp.block_bytes, 0, "empty files");
        let ext4 = crate::fstype::FsType::of("ext4");
        let million = ext4.estimate(&RepairScalingSpec::default().footprint());
        assert!(million.inodes >= 1_000_000, "{million:?}");
    }

    #[test]
    fn a_directory_target_is_refused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let run = tmp.path().join("run");
        std::fs::create_dir(&run).expect("mkdir");
        let flag = std::sync::atomic::AtomicBool::new(false);
        let r = crate::run_quiet(&spec(&[200]), &run, &flag);
        match r {
            Err(EngineError::Invalid(e)) => assert!(e.contains("block device"), "{e}"),
            other => panic!("{other:?}"),
        }
        assert!(crate::dir_is_empty(&run));
        assert!(RepairScalingSpec::default().needs_block_device());
    }
}
