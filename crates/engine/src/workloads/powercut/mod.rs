//! `powercut`: cut the power under a seeded writer, recover, and measure what a user choosing a
//! filesystem wants to know — how long the recovery mount (journal replay) takes, whether fsck
//! finds damage and how long it takes, and whether anything acknowledged durable was lost.
//!
//! One repeat makes `cuts` cuts on the filesystem the runner provisioned for it (a fresh mkfs
//! per repeat). The cuts of a repeat reuse that filesystem: after each cut it is recovered,
//! checked, repaired if the check asked for it, and the writer's folder is removed, so the next
//! cut starts from a sound filesystem. Each cut comes after a seeded number of acknowledged
//! operations in `[ops/2, ops]`, while the writer runs (the operation in flight is cut too).
//!
//! Two ways to cut, chosen per filesystem (`method = "auto"`) and stated in the sample's notes:
//! - `FS_IOC_SHUTDOWN` with NOLOGFLUSH where the filesystem implements it (probed, never
//!   assumed: [`recover::shutdown_supported`]);
//! - the power-cut disk ([`disk`]): the runner's image is served by a FUSE
//!   server and a second loop device over it carries the filesystem; a cut discards every
//!   write since the last completed flush and fails all I/O until the filesystem is unmounted.
//!   The runner's own mount is unmounted first and its loop device stays idle until teardown.
//!   Server, FUSE mount, loop device and mount are each written to the run's state file as an
//!   undo step the moment they may exist, so `fsbench cleanup` undoes them after a SIGKILL.
//!
//! Per repeat (over its cuts): `recovery/recovery_mount_s` (mean), `recovery/recovery_failed`,
//! `fsck/fsck_s` (mean of the read-only check), `fsck/fsck_repair_needed`, `fsck/fsck_failed`,
//! `loss/acked_lost`, `loss/db_rows_lost` (SQLite or server writer, in rows),
//! `loss/db_recovery_failed` (server writer: cuts after which the server did not start), and as
//! detail `unsynced_lost`,
//! `unsynced_kept`, `acked_ops`. Every acknowledged loss is a note naming its path. A filesystem
//! that does not mount after a cut is a result (`recovery_failed`), not an error.
//!
//! This workload needs a filesystem fsbench made on a block device; `--dir` targets are refused
//! before the run ([`crate::Workload::needs_block_device`]).
//!
//! Its pieces (issue 14):
//! - [`writer`]: the seeded writer and the host-side ledger of what was acknowledged durable,
//!   and the check of a recovered filesystem against it;
//! - [`recover`]: the `FS_IOC_SHUTDOWN` cut and its probe, and the table of read-only checkers
//!   (e2fsck, xfs_repair, btrfs check) with their verdicts and repairs;
//! - [`dbserver`]: a PostgreSQL or MariaDB server (oltp's) with its data directory on the
//!   filesystem under test,
//!   killed at the cut and started again to count the acknowledged rows lost (`server`);
//! - [`disk`]: the power-cut disk, a FUSE server (the `fuser` crate, mounted with the mount(2)
//!   system call as root) that models a volatile write cache under a loop device.
//!
//! Invariant: nothing about what was acknowledged is ever kept on the filesystem under test.

use crate::metric::{CpuUsage, RawSample};
use crate::phase::{Caches, Phases, Policy, Timed};
use crate::undo::{Detach, Step, UndoLog, Unmount};
use crate::units::Bytes;
use crate::workloads::oltp::server::Tools;
use crate::workloads::oltp::DbEngine;
use crate::Invalid;
use crate::{EngineError, RunContext, Workload, WorkloadKind};
use dbserver::DbServer;
use disk::{DiskServer, Model};
use rand::{Rng, SeedableRng};
use recover::{Fsck, FsckVerdict};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use writer::{Ledger, WriterSpec};

pub mod dbserver;
pub mod disk;
pub mod recover;
pub mod writer;

/// How the power is cut.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// The shutdown ioctl where the filesystem implements it, the power-cut disk otherwise.
    #[default]
    Auto,
    /// `FS_IOC_SHUTDOWN` with NOLOGFLUSH (unavailable where not implemented).
    Shutdown,
    /// The FUSE power-cut disk.
    Disk,
}

/// Parameters of the `powercut` workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowercutSpec {
    /// Cuts per repeat. Default 5.
    #[serde(default = "default_cuts")]
    pub cuts: u32,
    /// Each cut comes after a seeded number of acknowledged operations in `[ops/2, ops]`.
    /// Default 400.
    #[serde(default = "default_ops")]
    pub ops: u64,
    /// Largest file created or append made. Default 64 KiB.
    #[serde(default = "default_max_write")]
    pub max_write: Bytes,
    /// Seed of the writer and of the cut moments. Default 1.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// `auto`, `shutdown` or `disk`. Default `auto`.
    #[serde(default)]
    pub method: Method,
    /// The power-cut disk's model: `volatile` (default), `broken-flush` (acknowledges flushes
    /// but drops them: a broken disk, to show that the loss check can fail) or
    /// `broken-superblock` (a cut also zeroes the first MiB: the filesystem cannot mount after
    /// it, to show that `recovery_failed` is a result) or `tear` (volatile, and the cut tears the
    /// last unflushed write: its first half is kept), `reorder` (a subset of the writes since the
    /// last flush persists) or `torn-sectors` (a subset of their 512-byte sectors persists),
    /// both seeded by `seed`.
    #[serde(default = "default_model")]
    pub disk_model: Model,
    /// Also commit numbered rows to an SQLite database and count `db_rows_lost`. Default false.
    #[serde(default)]
    pub sqlite: bool,
    /// Also commit numbered rows through a database server fsbench starts per cut with its
    /// data directory on the filesystem under test, kill it at the cut, start it again on the
    /// recovered data and count `db_rows_lost` (in rows) and `db_recovery_failed`:
    /// `"postgresql"` or `"mariadb"`. Default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<DbEngine>,
    /// `true` (default) runs the server with its durable settings ([`dbserver::DURABLE`],
    /// [`dbserver::MARIADB_DURABLE`]); `false` with PostgreSQL's `fsync = off` or MariaDB's
    /// `innodb_flush_log_at_trx_commit = 0`, a negative control that must lose acknowledged rows.
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub server_fsync: bool,
}

fn default_true() -> bool {
    true
}
fn is_true(b: &bool) -> bool {
    *b
}

fn default_cuts() -> u32 {
    5
}
fn default_ops() -> u64 {
    400
}
fn default_max_write() -> Bytes {
    Bytes(64 * 1024)
}
fn default_seed() -> u64 {
    1
}
fn default_model() -> Model {
    Model::Volatile
}

impl Default for PowercutSpec {
    fn default() -> Self {
        PowercutSpec {
            cuts: default_cuts(),
            ops: default_ops(),
            max_write: default_max_write(),
            seed: default_seed(),
            method: Method::Auto,
            disk_model: default_model(),
            sqlite: false,
            server: None,
            server_fsync: true,
        }
    }
}

/// Phase of the recovery mount.
pub const PHASE_RECOVERY: &str = "recovery";
/// Phase of the read-only check.
pub const PHASE_FSCK: &str = "fsck";
/// Phase of the comparison with the acknowledged state.
pub const PHASE_LOSS: &str = "loss";

/// The metric table of this workload: name, unit, direction and role of every metric it emits.
pub mod metrics {
    use crate::metric::{MetricId, Role, Unit};

    /// Mean wall time of the mount after a cut (journal replay), in seconds.
    pub fn recovery_mount_s() -> MetricId {
        MetricId::lower("recovery_mount_s", Unit::Seconds)
    }
    /// Cuts after which the filesystem did not mount.
    pub fn recovery_failed() -> MetricId {
        MetricId::lower("recovery_failed", Unit::Count).with_role(Role::Outcome)
    }
    /// Mean wall time of the read-only check after recovery, in seconds.
    pub fn fsck_s() -> MetricId {
        MetricId::lower("fsck_s", Unit::Seconds)
    }
    /// Cuts after which the check found damage to repair.
    pub fn fsck_repair_needed() -> MetricId {
        MetricId::lower("fsck_repair_needed", Unit::Count).with_role(Role::Outcome)
    }
    /// Cuts after which the checker could not check.
    pub fn fsck_failed() -> MetricId {
        MetricId::lower("fsck_failed", Unit::Count).with_role(Role::Detail)
    }
    /// Acknowledged-durable results missing or wrong after recovery, each SQLite row one (0 for
    /// a correct filesystem).
    pub fn acked_lost() -> MetricId {
        MetricId::lower("acked_lost", Unit::Count).with_role(Role::Outcome)
    }
    /// Committed (acknowledged) rows missing after recovery, SQLite's or the server's, each
    /// row one.
    pub fn db_rows_lost() -> MetricId {
        MetricId::lower("db_rows_lost", Unit::Count).with_role(Role::Outcome)
    }
    /// Cuts after which the database server did not start on its recovered data directory.
    pub fn db_recovery_failed() -> MetricId {
        MetricId::lower("db_recovery_failed", Unit::Count).with_role(Role::Outcome)
    }
    /// Files written without sync and lost (information, not an error).
    pub fn unsynced_lost() -> MetricId {
        MetricId::lower("unsynced_lost", Unit::Count).with_role(Role::Detail)
    }
    /// Files written without sync and kept whole (information).
    pub fn unsynced_kept() -> MetricId {
        MetricId::higher("unsynced_kept", Unit::Count).with_role(Role::Detail)
    }
    /// Operations acknowledged before the cuts, summed.
    pub fn acked_ops() -> MetricId {
        MetricId::higher("acked_ops", Unit::Count).with_role(Role::Detail)
    }
}

/// The notes a cut workload (this one and `durability`) writes per repeat or per cut, by the
/// prefix they start with, and what the report's terminal calls them when it prints one line
/// for all of them (`report::build`; the Markdown, HTML and JSON reports list each in full).
pub const PER_CUT_NOTES: &[(&str, &str)] = &[
    ("cuts: ", "each cut's recovery mount, damaged units and fsck verdict"),
    (
        "disk: ",
        "the seeded disk's writes, flushes and what its cuts kept and dropped",
    ),
    ("VIOLATION (", "VIOLATION, one note per damaged file"),
    (
        "NEGATIVE CONTROL FAILED: cut ",
        "NEGATIVE CONTROL FAILED, one note per cut whose control lost nothing (its cells unverified)",
    ),
    (
        "UNRECOVERED: cut ",
        "UNRECOVERED, one note per cut that did not mount (its units count as lost)",
    ),
    (
        "flush control: ",
        "the flush control kept in some cuts (they cannot expose a missing flush)",
    ),
    ("acked_lost: cut ", "acknowledged data lost, one note per item"),
    (
        "db_recovery_failed: cut ",
        "the database server did not start after the cut",
    ),
];

/// The filesystem under test as /proc/mounts shows it: what a workload that unmounts, cuts and
/// mounts it again needs (powercut, repair_scaling).
pub(crate) struct Fs {
    /// The block device (`/dev/loopN`).
    pub(crate) device: String,
    /// The type as the kernel names it (`ext4`).
    pub(crate) fs_type: String,
    /// The options to mount it again with ([`remount_opts`]).
    pub(crate) opts: String,
    /// Where it is mounted.
    pub(crate) mountpoint: PathBuf,
}

impl Fs {
    /// The filesystem under `ctx.dir`: the runner's mount, on a block device; `workload` names
    /// the workload in the error of a directory target.
    pub(crate) fn of_run(ctx: &RunContext, workload: &str) -> Result<Fs, EngineError> {
        let mountpoint = ctx.dir.parent().map(Path::to_path_buf).unwrap_or_default();
        // /proc/mounts names mount points by absolute path (a relative `--scratch` is not).
        let mountpoint = std::fs::canonicalize(&mountpoint).unwrap_or(mountpoint);
        match crate::host::mount_entry(&mountpoint) {
            Some((device, fs_type, opts)) if device.starts_with("/dev/") => Ok(Fs {
                device,
                fs_type,
                opts: remount_opts(&opts),
                mountpoint,
            }),
            _ => Err(EngineError::Invalid(format!(
                "{workload} needs a filesystem fsbench made on a block device (loop images or --device), not a directory"
            ))),
        }
    }

    /// Mounts it again with mount(8) (type, options, device, mount point as found).
    pub(crate) fn mount(&self) -> Result<(), crate::host::HostError> {
        let args = [
            "-t".to_string(),
            self.fs_type.clone(),
            "-o".to_string(),
            self.opts.clone(),
            self.device.clone(),
            self.mountpoint.to_string_lossy().into_owned(),
        ];
        crate::host::run_tool("mount", &args).map(|_| ())
    }

    /// Unmounts it (umount(2), retried on EBUSY).
    pub(crate) fn unmount(&self) -> Result<(), EngineError> {
        crate::host::unmount(&self.mountpoint)
            .map_err(|e| EngineError::io("unmount after the cut", std::io::Error::other(e.to_string())))
    }
}

/// Mount options to mount again with: what the kernel showed, less what mount(8) would refuse
/// to be told (`seclabel`) and read-only (a filesystem that went read-only on the error).
fn remount_opts(opts: &str) -> String {
    let kept: Vec<&str> = opts.split(',').filter(|o| !matches!(*o, "seclabel" | "ro")).collect();
    kept.join(",")
}

/// The power-cut disk's stack: server, loop device over its image, mount. Undone in reverse
/// order on drop. With the run's state ([`RunContext::state`]) each piece is recorded as an
/// undo step the moment it may exist, in creation order (server kill, FUSE unmount, loop detach,
/// mount), so `fsbench cleanup` undoes them in the reverse order after a SIGKILL; a record goes
/// only once its step is done, so a failed teardown keeps the state file for cleanup. Every
/// piece also lives in the run folder under a `mnt-` name, which cleanup sweeps as well.
pub(crate) struct DiskStack {
    state: Option<Arc<dyn UndoLog>>,
    pub(crate) server: Option<DiskServer>,
    loop_dev: Option<Detach>,
    mnt: Option<Unmount>,
}

impl DiskStack {
    /// An empty stack recording into the run's state.
    pub(crate) fn new(ctx: &RunContext) -> DiskStack {
        DiskStack {
            state: ctx.state.map(|s| s.share()),
            server: None,
            loop_dev: None,
            mnt: None,
        }
    }

    /// Moves the runner's filesystem onto a power-cut disk of `model` ([`mount_on_disk`]).
    pub(crate) fn mount(&mut self, ctx: &RunContext, runner_fs: Fs, model: (Model, u64)) -> Result<Fs, EngineError> {
        mount_on_disk(ctx, runner_fs, model, self)
    }

    /// Records `u` (a piece that may exist from now on).
    fn record(&self, u: &dyn Step) {
        if let Some(st) = &self.state {
            st.push(u);
        }
    }

    /// Drops the record of `u` (its step is done).
    fn done(&self, u: &dyn Step) {
        if let Some(st) = &self.state {
            st.pop(u);
        }
    }

    /// Unmounts, detaches and stops what the stack holds, in that order.
    pub(crate) fn teardown(&mut self) -> Result<(), TeardownError> {
        let mut first: Option<TeardownError> = None;
        if let Some(u) = self.mnt.take() {
            {
                let mountpoint = &u.mountpoint;
                let r = if crate::host::is_mounted(mountpoint, None) {
                    crate::host::unmount(mountpoint)
                } else {
                    Ok(())
                };
                match r {
                    Ok(()) => {
                        let _ = std::fs::remove_dir(mountpoint);
                        self.done(&u);
                    }
                    Err(e) => {
                        first.get_or_insert(TeardownError::Unmount(e));
                    }
                }
            }
        }
        if let Some(u) = self.loop_dev.take() {
            match u.apply() {
                Ok(()) => self.done(&u),
                Err(e) => {
                    first.get_or_insert(TeardownError::Detach(e));
                }
            }
        }
        if let Some(s) = self.server.take() {
            if let Err(e) = s.stop() {
                first.get_or_insert(TeardownError::Server(e));
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// The first step of [`DiskStack::teardown`] that failed (the others were still tried).
#[derive(Debug, thiserror::Error)]
pub(crate) enum TeardownError {
    /// The power-cut disk's mount stayed.
    #[error(transparent)]
    Unmount(crate::host::HostError),
    /// Its loop device stayed attached.
    #[error(transparent)]
    Detach(crate::undo::UndoError),
    /// Its server did not stop.
    #[error(transparent)]
    Server(disk::DiskError),
}

/// Why [`cut_power`] did not cut the power.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CutError {
    /// The power-cut disk did not cut.
    #[error(transparent)]
    Disk(disk::DiskError),
    /// `FS_IOC_SHUTDOWN` failed.
    #[error(transparent)]
    Shutdown(std::io::Error),
}

impl Drop for DiskStack {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            eprintln!("fsbench: power-cut disk teardown: {e}; run `fsbench cleanup`");
        }
    }
}

/// Moves the runner's filesystem onto the power-cut disk of `model` (with the seed of its
/// seeded cuts): unmounts it, starts the disk server over its image, attaches a loop device and
/// mounts it at `<tag>-pc` beside the runner's mount `<tag>` (each step recorded in `stack` for
/// the teardown and the undo log).
fn mount_on_disk(
    ctx: &RunContext,
    runner_fs: Fs,
    (model, seed): (Model, u64),
    stack: &mut DiskStack,
) -> Result<Fs, EngineError> {
    let run_dir = &runner_fs.mountpoint.parent().map(Path::to_path_buf).unwrap_or_default();
    let tag = runner_fs
        .mountpoint
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "mnt".into());
    let base = crate::host::loop_backing_file(&runner_fs.device).unwrap_or_else(|| PathBuf::from(&runner_fs.device));
    let base_arg = match base.strip_prefix(run_dir) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => base.to_string_lossy().into_owned(),
    };
    runner_fs.unmount()?;
    let server = DiskServer::start(run_dir, &base_arg, &format!("{tag}-pcdisk"), model, seed, ctx.state)
        .map_err(|e| eio("start the power-cut disk", e))?;
    let image = server.image();
    stack.server = Some(server);
    let out = crate::host::run_tool("losetup", &["--find", "--show", &image.to_string_lossy()])
        .map_err(|e| eio("attach a loop device to the power-cut disk", e))?;
    let dev = out.trim().to_string();
    let detach = Detach {
        device: dev.clone(),
        image,
    };
    stack.record(&detach);
    stack.loop_dev = Some(detach);
    let mnt = run_dir.join(format!("{tag}-pc"));
    std::fs::create_dir(&mnt).map_err(|e| EngineError::io(format!("create {}", mnt.display()), e))?;
    // Recorded before the first mount; the cuts unmount and mount it again under it.
    let unmount = Unmount {
        mountpoint: mnt.clone(),
        source: dev.clone(),
    };
    stack.record(&unmount);
    stack.mnt = Some(unmount);
    let fs = Fs {
        device: dev,
        fs_type: runner_fs.fs_type.clone(),
        opts: runner_fs.opts.clone(),
        mountpoint: mnt,
    };
    fs.mount().map_err(|e| eio("mount over the power-cut disk", e))?;
    Ok(fs)
}

/// What one repeat's cuts add up to (the durability workload keeps its recovery fields too).
#[derive(Default)]
pub(crate) struct Totals {
    pub(crate) mount: Vec<Duration>,
    pub(crate) mount_cpu: Vec<CpuUsage>,
    pub(crate) recovery_failed: u64,
    pub(crate) fsck: Vec<Duration>,
    pub(crate) fsck_cpu: Vec<CpuUsage>,
    pub(crate) repair_needed: u64,
    pub(crate) fsck_failed: u64,
    pub(crate) acked_lost: u64,
    pub(crate) db_rows_lost: u64,
    pub(crate) db_recovery_failed: u64,
    pub(crate) unsynced_lost: u64,
    pub(crate) unsynced_kept: u64,
    pub(crate) acked_ops: u64,
    pub(crate) verify_wall: Duration,
    pub(crate) verify_cpu: Vec<CpuUsage>,
}

fn mean(d: &[Duration]) -> f64 {
    if d.is_empty() {
        0.0
    } else {
        d.iter().map(Duration::as_secs_f64).sum::<f64>() / d.len() as f64
    }
}

pub(crate) fn cpu_mean(c: &[CpuUsage]) -> CpuUsage {
    let n = c.len().max(1) as f64;
    CpuUsage {
        process_pct: c.iter().map(|c| c.process_pct).sum::<f64>() / n,
        system_pct: c.iter().map(|c| c.system_pct).sum::<f64>() / n,
    }
}

pub(crate) fn timed(wall: Duration, cpu: CpuUsage) -> Timed<()> {
    Timed::plain(wall, cpu, ())
}

pub(crate) fn eio(what: &str, e: impl std::fmt::Display) -> EngineError {
    EngineError::io(what.to_string(), std::io::Error::other(e.to_string()))
}

impl PowercutSpec {
    fn cut_target(&self, cut: u32) -> u64 {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(self.seed.wrapping_mul(0x9E37_79B9).wrapping_add(cut as u64));
        let lo = (self.ops / 2).max(1);
        rng.gen_range(lo..=self.ops.max(lo))
    }

    fn run_cuts(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        let mut phases = Phases::new(ctx);
        let runner_fs = Fs::of_run(ctx, "powercut")?;
        let fsck = recover::fsck_for(&runner_fs.fs_type)
            .ok_or_else(|| EngineError::Unavailable(format!("no fsck known to fsbench for {}", runner_fs.fs_type)))?;
        fsck.available()?;
        let db_tools = self.server.map(dbserver::tools).transpose()?;
        let probe = recover::shutdown_supported(ctx.dir);
        let use_disk = match (self.method, &probe) {
            (Method::Disk, _) => true,
            (Method::Shutdown, Ok(())) | (Method::Auto, Ok(())) => false,
            (Method::Shutdown, Err(why)) => {
                return Err(EngineError::Unavailable(format!(
                    "{}: {why}; use method = \"disk\" (the power-cut disk)",
                    runner_fs.fs_type
                )))
            }
            (Method::Auto, Err(_)) => true,
        };
        let mut stack = DiskStack::new(ctx);
        let fs = if use_disk {
            let why = match &probe {
                Ok(()) => "chosen by method = \"disk\"".to_string(),
                Err(w) => w.to_string(),
            };
            phases.note(format!(
                "power cut by the power-cut disk (FUSE, model: {}); {why}",
                self.disk_model.describe()
            ));
            stack.mount(ctx, runner_fs, (self.disk_model, self.seed))?
        } else {
            phases.note("power cut by FS_IOC_SHUTDOWN with NOLOGFLUSH (the log is not written)".into());
            runner_fs
        };
        if !fsck.journal {
            phases.note(format!(
                "{} has no journal: fsck required after a power cut (its time is fsck_s)",
                fs.fs_type
            ));
        }
        let work = fs.mountpoint.join(ctx.dir.file_name().unwrap_or_default());
        let mut t = Totals::default();
        let mut cut_lines = Vec::new();
        for cut in 0..self.cuts {
            (ctx.on_phase)(&format!("cut {}/{}", cut + 1, self.cuts));
            let env = CutEnv {
                ctx,
                fs: &fs,
                fsck: &fsck,
                disk: stack.server.as_ref(),
                db_tools: db_tools.as_ref(),
            };
            match self.one_cut(&env, &work, cut, &mut t, &mut phases)? {
                Some(line) => cut_lines.push(line),
                None => break,
            }
        }
        phases.note(format!("cuts: {}", cut_lines.join("; ")));
        if use_disk {
            stack.teardown().map_err(|e| eio("power-cut disk teardown", e))?;
        }
        self.record_totals(&mut phases, &t);
        Ok(phases.finish())
    }

    /// Records the totals of all cuts as the recovery, fsck and loss phases.
    fn record_totals(&self, phases: &mut Phases, t: &Totals) {
        record_recovery(phases, t);
        phases.begin(PHASE_LOSS, Caches::Keep);
        let mut loss = vec![(metrics::acked_lost(), t.acked_lost as f64)];
        if self.sqlite || self.server.is_some() {
            loss.push((metrics::db_rows_lost(), t.db_rows_lost as f64));
        }
        if self.server.is_some() {
            loss.push((metrics::db_recovery_failed(), t.db_recovery_failed as f64));
        }
        loss.extend([
            (metrics::unsynced_lost(), t.unsynced_lost as f64),
            (metrics::unsynced_kept(), t.unsynced_kept as f64),
            (metrics::acked_ops(), t.acked_ops as f64),
        ]);
        phases.record(
            PHASE_LOSS,
            &timed(t.verify_wall, cpu_mean(&t.verify_cpu)),
            loss,
            &Policy::new(),
        );
    }

    /// Starts the database server of cut `cut` in its folder `dir` (socket folder beside the
    /// runner's mount, outside the filesystem under test); the first cut notes its version
    /// and settings.
    fn start_db<'c>(
        &self,
        ctx: &'c RunContext,
        tools: Tools,
        fs: &Fs,
        dir: &Path,
        cut: u32,
        phases: &mut Phases,
    ) -> Result<DbServer<'c>, EngineError> {
        let run_parent = fs.mountpoint.parent().unwrap_or(Path::new("/tmp"));
        let tools_engine = tools.engine;
        let db = DbServer::start(
            tools,
            (dir, run_parent),
            dbserver::settings(tools_engine, self.server_fsync),
            ctx.interrupt,
            ctx.state,
        )?;
        if cut == 0 {
            phases.note(format!(
                "db: {} with its data directory on the filesystem under test, started per cut with {}; each row one autocommitted INSERT acknowledged by the server; the server's process group SIGKILLed right after the cut, then started again on the recovered data to count the rows",
                db.version().unwrap_or_else(|| "the server".into()),
                db.settings_note()
            ));
            if db.run_outside() {
                phases.note(format!(
                    "db: the socket folder is {} (the run folder's path is too long for a unix socket)",
                    db.socket_dir().display()
                ));
            }
        }
        Ok(db)
    }

    /// Runs the writer in `dir` and cuts the power once it has `cut_target` acknowledged
    /// operations (or stops on an interrupt); the writer's ledger.
    /// With a database server `db`, the writer commits its rows through it, and the server's
    /// process group is killed right after the disk's cut ([`dbserver`]).
    fn write_until_cut(
        &self,
        ctx: &RunContext,
        server: Option<&DiskServer>,
        mut db: Option<&mut DbServer>,
        dir: &Path,
        cut: u32,
    ) -> Result<Ledger, EngineError> {
        let spec = WriterSpec {
            seed: self.seed.wrapping_mul(1000).wrapping_add(cut as u64),
            max_write: self.max_write.0 as usize,
            sqlite: self.sqlite,
            server: db.as_ref().map(|d| d.link()),
            max_ops: 0,
        };
        let target = self.cut_target(cut);
        let acked = AtomicU64::new(0);
        let cutting = AtomicBool::new(false);
        let stop = AtomicBool::new(false);
        let (ledger, cut_err) = std::thread::scope(|s| {
            let h = s.spawn(|| writer::run(&spec, dir, &acked, &cutting, &stop));
            while acked.load(Ordering::SeqCst) < target && !h.is_finished() && !ctx.interrupt.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_micros(200));
            }
            cutting.store(true, Ordering::SeqCst);
            let cut_err = if ctx.interrupt.load(Ordering::Relaxed) || h.is_finished() {
                None // no cut: interrupted, or the writer failed on its own
            } else {
                let r = cut_power(server, dir).err();
                // The disk first, then the server: nothing it writes after the cut persists.
                if let Some(d) = db.as_mut() {
                    d.kill();
                }
                r
            };
            stop.store(true, Ordering::SeqCst);
            (h.join(), cut_err)
        });
        if ctx.interrupt.load(Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        let ledger: Ledger = match ledger {
            Ok(Ok(l)) => l,
            Ok(Err(e)) => return Err(eio("powercut writer", e)),
            Err(_) => return Err(EngineError::Invalid("the powercut writer panicked".into())),
        };
        if let Some(e) = cut_err {
            return Err(eio("cut the power", e));
        }
        Ok(ledger)
    }

    /// Verifies the recovered cut folder `rel` against `ledger`, adding its losses to `t`,
    /// the line and the notes.
    /// With a database server `db`, it is started again on the recovered data directory to
    /// count the acknowledged rows (inside the loss phase's time).
    #[allow(clippy::too_many_arguments)]
    fn verify_cut(
        &self,
        fs: &Fs,
        rel: &Path,
        ledger: &Ledger,
        db: Option<&mut DbServer>,
        cut: u32,
        t: &mut Totals,
        phases: &mut Phases,
        line: &mut String,
    ) {
        let meter = crate::cpu::CpuMeter::start();
        let t1 = Instant::now();
        let mut v = writer::verify(&fs.mountpoint.join(rel), ledger, self.sqlite);
        if let Some(db) = db {
            let present = db.count_after_recovery(ledger.db_rows);
            if let Err(e) = &present {
                t.db_recovery_failed += 1;
                phases.note(format!("db_recovery_failed: cut {}: {e}", cut + 1));
            }
            v.add_rows("server", ledger.db_rows, present);
            line.push_str(&format!(", rows lost {} of {}", v.db_rows_lost, ledger.db_rows));
        }
        t.verify_wall += t1.elapsed();
        t.verify_cpu.push(meter.stop());
        t.acked_lost += v.lost_count();
        t.db_rows_lost += v.db_rows_lost;
        t.unsynced_lost += v.unsynced_lost;
        t.unsynced_kept += v.unsynced_kept;
        line.push_str(&format!(
            ", acked lost {}, unsynced lost {} kept {}",
            v.acked_lost.len(),
            v.unsynced_lost,
            v.unsynced_kept
        ));
        for l in &v.acked_lost {
            phases.note(format!("acked_lost: cut {}: {}", cut + 1, l));
        }
    }

    /// One cut: write, cut, recover, verify, check, repair, clean. `None` when the filesystem
    /// could not be brought back and the repeat's remaining cuts are skipped.
    fn one_cut(
        &self,
        env: &CutEnv,
        work: &Path,
        cut: u32,
        t: &mut Totals,
        phases: &mut Phases,
    ) -> Result<Option<String>, EngineError> {
        let CutEnv {
            ctx,
            fs,
            fsck,
            disk: server,
            db_tools,
        } = *env;
        let dir = work.join(format!("cut{cut}"));
        let rel = dir
            .strip_prefix(&fs.mountpoint)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        std::fs::create_dir_all(&dir).map_err(|e| EngineError::io(format!("create {}", dir.display()), e))?;
        let mut db = match db_tools {
            Some(tools) => Some(self.start_db(ctx, tools.clone(), fs, &dir, cut, phases)?),
            None => None,
        };
        sync_fs(&dir)?;
        if let Some(s) = server {
            if s.model() == Model::BrokenFlush {
                s.arm().map_err(|e| eio("arm the broken disk", e))?;
            }
        }
        let ledger = self.write_until_cut(ctx, server, db.as_mut(), &dir, cut)?;
        t.acked_ops += ledger.acked_ops;
        let mut line = format!("cut {} after {} acked ops: ", cut + 1, ledger.acked_ops);
        let recovered = recover_after_cut(
            ctx,
            fs,
            fsck,
            server,
            cut,
            t,
            phases,
            &mut line,
            &mut |t, phases, line| self.verify_cut(fs, &rel, &ledger, db.as_mut(), cut, t, phases, line),
        )?;
        if let Some(db) = db {
            if let Err(note) = db.finish() {
                phases.note(format!("server after cut {}: {note}", cut + 1));
            }
        }
        if !recovered {
            return Ok(None);
        }
        // A repair after a failed recovery may have lost the cut's folder (or the work folder).
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(EngineError::io(format!("remove {}", dir.display()), e))
            }
            _ => {}
        }
        sync_fs(&fs.mountpoint)?;
        Ok(Some(line))
    }
}

/// What every cut of a repeat works with.
#[derive(Clone, Copy)]
struct CutEnv<'a> {
    ctx: &'a RunContext<'a>,
    fs: &'a Fs,
    fsck: &'a Fsck,
    /// The power-cut disk, when it cuts (else the shutdown ioctl).
    disk: Option<&'a DiskServer>,
    /// The database server's tools, with `server`.
    db_tools: Option<&'a Tools>,
}

/// After the power was cut under the mounted `fs` (cut number `cut`, 0-based): unmounts it,
/// powers the disk back on, times the recovery mount (journal replay), runs `verify` on the
/// recovered filesystem, runs the read-only check and a repair when it asks for one, and mounts
/// it again; adds to `t`, `phases`' notes and `line`. `Ok(false)`: the filesystem could not be
/// brought back and the remaining cuts are skipped (noted).
#[allow(clippy::too_many_arguments)]
pub(crate) fn recover_after_cut(
    ctx: &RunContext,
    fs: &Fs,
    fsck: &Fsck,
    server: Option<&DiskServer>,
    cut: u32,
    t: &mut Totals,
    phases: &mut Phases,
    line: &mut String,
    verify: &mut dyn FnMut(&mut Totals, &mut Phases, &mut String),
) -> Result<bool, EngineError> {
    fs.unmount()?;
    if let Some(s) = server {
        s.reset().map_err(|e| eio("power the disk back on", e))?;
    }
    // The recovery mount: journal replay.
    let meter = crate::cpu::CpuMeter::start();
    let t0 = Instant::now();
    let mounted = fs.mount();
    let wall = t0.elapsed();
    let cpu = meter.stop();
    match mounted {
        Ok(()) => {
            t.mount.push(wall);
            t.mount_cpu.push(cpu);
            line.push_str(&format!("mount {:.3} s", wall.as_secs_f64()));
            verify(t, phases, line);
            fs.unmount()?;
        }
        Err(e) => {
            t.recovery_failed += 1;
            line.push_str("recovery_failed");
            phases.note(format!("recovery_failed: cut {}: {e}", cut + 1));
        }
    }
    // The read-only check, then a repair when it asked for one.
    let meter = crate::cpu::CpuMeter::start();
    let checked = fsck
        .check(&fs.device, Some(ctx.interrupt))
        .map_err(|e| EngineError::io(format!("{} {}", fsck.program, fs.device), e))?;
    let mut cpu = meter.stop();
    let (verdict, fwall, tail) = (checked.verdict, checked.wall, checked.tail);
    // The checker is a child: its CPU counts as the phase's process CPU.
    cpu.process_pct += crate::cpu::process_pct(checked.cpu, fwall);
    t.fsck.push(fwall);
    t.fsck_cpu.push(cpu);
    line.push_str(&format!(", fsck {:.3} s {}", fwall.as_secs_f64(), verdict.as_str()));
    match verdict {
        FsckVerdict::Clean => {}
        FsckVerdict::RepairNeeded => t.repair_needed += 1,
        FsckVerdict::Failed => t.fsck_failed += 1,
    }
    if verdict != FsckVerdict::Clean {
        phases.note(format!("fsck {}: cut {}: {tail}", verdict.as_str(), cut + 1));
        if let Err(e) = fsck.repair(&fs.device) {
            phases.note(format!(
                "repair after cut {} failed: {e}; remaining cuts skipped",
                cut + 1
            ));
            return Ok(false);
        }
    }
    if let Err(e) = fs.mount() {
        phases.note(format!(
            "the filesystem did not mount after cut {} and its repair: {e}; remaining cuts skipped",
            cut + 1
        ));
        return Ok(false);
    }
    Ok(true)
}

/// Records the recovery mounts and checks of all cuts in `t` as the recovery and fsck phases.
pub(crate) fn record_recovery(phases: &mut Phases, t: &Totals) {
    phases.begin(PHASE_RECOVERY, Caches::Keep);
    phases.record(
        PHASE_RECOVERY,
        &timed(t.mount.iter().sum(), cpu_mean(&t.mount_cpu)),
        vec![
            (metrics::recovery_mount_s(), mean(&t.mount)),
            (metrics::recovery_failed(), t.recovery_failed as f64),
        ],
        &Policy::new(),
    );
    phases.begin(PHASE_FSCK, Caches::Keep);
    phases.record(
        PHASE_FSCK,
        &timed(t.fsck.iter().sum(), cpu_mean(&t.fsck_cpu)),
        vec![
            (metrics::fsck_s(), mean(&t.fsck)),
            (metrics::fsck_repair_needed(), t.repair_needed as f64),
            (metrics::fsck_failed(), t.fsck_failed as f64),
        ],
        &Policy::new(),
    );
}

/// Cuts the power: the disk's cut when there is one, `FS_IOC_SHUTDOWN` of `dir`'s filesystem
/// otherwise.
pub(crate) fn cut_power(server: Option<&DiskServer>, dir: &Path) -> Result<(), CutError> {
    match server {
        Some(s) => s.cut().map_err(CutError::Disk),
        None => recover::shutdown_now(dir).map_err(CutError::Shutdown),
    }
}

/// `syncfs` of the filesystem holding `path`: the writer starts from a durable state.
pub(crate) fn sync_fs(path: &Path) -> Result<(), EngineError> {
    let f = std::fs::File::open(path).map_err(|e| EngineError::io(format!("open {}", path.display()), e))?;
    rustix::fs::syncfs(&f).map_err(|e| EngineError::io(format!("syncfs {}", path.display()), e.into()))
}

impl Workload for PowercutSpec {
    fn phases(&self) -> Vec<String> {
        vec![PHASE_RECOVERY.into(), PHASE_FSCK.into(), PHASE_LOSS.into()]
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        let mut s = self.clone();
        s.ops = ((self.ops as f64 * factor).round() as u64).max(20);
        WorkloadKind::Powercut(s)
    }

    fn validate(&self) -> Result<(), Invalid> {
        if self.cuts == 0 {
            return Err("cuts must be at least 1".into());
        }
        if self.ops < 2 {
            return Err("ops must be at least 2".into());
        }
        if self.max_write.0 == 0 || self.max_write.0 > 64 << 20 {
            return Err("max_write must be between 1 byte and 64 MiB".into());
        }
        if self.disk_model == Model::Passthrough {
            return Err("disk_model = \"passthrough\" cannot cut the power; use \"volatile\"".into());
        }
        match self.server {
            Some(DbEngine::Sqlite) => {
                return Err("server = \"sqlite\": SQLite is not a server; use sqlite = true".into())
            }
            Some(_) if self.sqlite => return Err("choose one of sqlite = true and server".into()),
            None if !self.server_fsync => return Err("server_fsync = false needs a server".into()),
            _ => {}
        }
        Ok(())
    }

    fn needs_block_device(&self) -> bool {
        true
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        // At most `ops` operations per cut (one folder at a time); a third create files and a
        // fifth append, each up to `max_write`; unsynced files add as many again.
        let files = self.ops + self.ops / 4;
        let data = files * self.max_write.0.div_ceil(4096) * 4096;
        crate::fstype::Footprint {
            files,
            dirs: self.ops / 10 + 2,
            block_bytes: data,
            entry_bytes: files * 16,
            // A server's data directory: initdb's ~40 MB and a 16 MiB WAL segment or two;
            // MariaDB's system tables, 12 MiB ibdata1 and a 96 MiB redo log.
            extra_bytes: if self.sqlite { self.ops * 512 + (4 << 20) } else { 0 }
                + match self.server {
                    Some(DbEngine::Mariadb) => 256 << 20,
                    Some(_) => 128 << 20,
                    None => 0,
                },
            ..Default::default()
        }
    }

    fn describe(&self) -> String {
        format!(
            "powercut: {} cuts, each after {}..{} acked ops (seed {}), writes up to {}, method {}{}{}",
            self.cuts,
            (self.ops / 2).max(1),
            self.ops,
            self.seed,
            self.max_write.human(),
            match self.method {
                Method::Auto => "auto (shutdown ioctl where supported, else power-cut disk)",
                Method::Shutdown => "FS_IOC_SHUTDOWN",
                Method::Disk => "power-cut disk",
            },
            if self.sqlite { ", SQLite rows" } else { "" },
            match (self.server, self.server_fsync) {
                (Some(e), true) => format!(", {} rows", e.name()),
                (Some(e), false) => format!(", {} rows with fsync = off (negative control)", e.name()),
                (None, _) => String::new(),
            }
        )
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        self.run_cuts(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_moments_are_seeded_and_within_range() {
        let s = PowercutSpec::default();
        let a: Vec<u64> = (0..5).map(|c| s.cut_target(c)).collect();
        let b: Vec<u64> = (0..5).map(|c| s.cut_target(c)).collect();
        assert_eq!(a, b);
        assert!(a.iter().all(|t| (200..=400).contains(t)), "{a:?}");
        let other = PowercutSpec { seed: 2, ..s.clone() };
        assert_ne!(a, (0..5).map(|c| other.cut_target(c)).collect::<Vec<_>>());
    }

    #[test]
    fn bad_parameters_are_refused_with_what_to_change() {
        for (s, want) in [
            (
                PowercutSpec {
                    cuts: 0,
                    ..Default::default()
                },
                "cuts",
            ),
            (
                PowercutSpec {
                    ops: 1,
                    ..Default::default()
                },
                "ops",
            ),
            (
                PowercutSpec {
                    disk_model: Model::Passthrough,
                    ..Default::default()
                },
                "passthrough",
            ),
            (
                PowercutSpec {
                    server: Some(DbEngine::Sqlite),
                    ..Default::default()
                },
                "sqlite = true",
            ),
            (
                PowercutSpec {
                    server: Some(DbEngine::Mariadb),
                    sqlite: true,
                    ..Default::default()
                },
                "choose one",
            ),
            (
                PowercutSpec {
                    server_fsync: false,
                    ..Default::default()
                },
                "needs a server",
            ),
        ] {
            assert!(s.validate().unwrap_err().0.contains(want));
        }
        let parsed: WorkloadKind =
            toml::from_str("kind = \"powercut\"\nmethod = \"disk\"\ndisk_model = \"broken-flush\"\nsqlite = true")
                .unwrap();
        assert!(matches!(
            parsed,
            WorkloadKind::Powercut(PowercutSpec {
                method: Method::Disk,
                disk_model: Model::BrokenFlush,
                sqlite: true,
                ..
            })
        ));
    }

    #[test]
    fn a_server_is_parsed_validated_and_kept_out_of_specs_without_one() {
        let parsed: WorkloadKind =
            toml::from_str("kind = \"powercut\"\nserver = \"postgresql\"\nserver_fsync = false").unwrap();
        let WorkloadKind::Powercut(spec) = parsed else {
            panic!("not powercut")
        };
        assert_eq!((spec.server, spec.server_fsync), (Some(DbEngine::Postgresql), false));
        assert_eq!(spec.validate(), Ok(()));
        assert!(
            spec.describe().contains("postgresql rows with fsync = off"),
            "{}",
            spec.describe()
        );
        assert!(spec.footprint().extra_bytes >= 128 << 20);
        // A spec without a server serializes as before (stored suites unchanged).
        let plain = serde_json::to_string(&PowercutSpec::default()).unwrap();
        assert!(!plain.contains("server"), "{plain}");
        assert_eq!(dbserver::settings(DbEngine::Postgresql, true), dbserver::DURABLE);
        assert!(dbserver::settings(DbEngine::Postgresql, false).contains(&"fsync=off"));
        assert!(dbserver::settings(DbEngine::Mariadb, true).contains(&"innodb_flush_log_at_trx_commit=1"));
        assert!(dbserver::settings(DbEngine::Mariadb, false).contains(&"innodb_flush_log_at_trx_commit=0"));
    }

    #[test]
    fn remount_options_drop_read_only_and_seclabel() {
        assert_eq!(remount_opts("ro,relatime,seclabel,attr2"), "relatime,attr2");
    }
}
