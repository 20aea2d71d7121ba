//! `durability`: which syscall sequence survives a power cut on which filesystem (issue 28).
//!
//! One repeat makes `cuts` cuts on the filesystem the runner provisioned (a fresh mkfs per
//! repeat). Before each cut every primitive of [`primitives::TABLE`] (or the chosen ones, the
//! negative control always among them) gets `files` files in its own folder, prepared at
//! generation 1 and made durable with `syncfs` (untimed); then each primitive runs its sequence
//! on its files, one primitive after the other in table order, and the power is cut right after
//! the last one, the negative control (a write acknowledged with no sync at all). Every
//! acknowledgement therefore returned before the cut began. After the cut the filesystem is
//! recovered (timed mount), every stamped unit is classified ([`stamp`]: intact, lost, reverted,
//! torn), replaced files are judged old, new or neither, then the read-only check runs (and a
//! repair when it asks), exactly as in `powercut` ([`crate::workloads::powercut`]).
//!
//! With `isolate = true` each cut runs one primitive (round robin) and the control, `cuts` per
//! primitive, so no other primitive's commit can make its unsynced work durable.
//!
//! With `fsync_errors = true` (disk method) each repeat first probes fsync error semantics
//! ([`fsync_errors`]): the row `fsync-eio` says whether fsync reported a failed writeback,
//! whether a second fsync then succeeded, and what reads returned.
//!
//! One cut method per workload entry, never mixed: `method = "disk"` (the FUSE power-cut disk
//! with its `disk_model`: volatile, reorder, torn-sectors, …; the seeded models use `seed`, which
//! the notes state so a case replays) or `method = "shutdown"` (`FS_IOC_SHUTDOWN` with
//! NOLOGFLUSH, unavailable where the filesystem lacks it).
//!
//! Rows: `recovery` and `fsck` as in `powercut`; one phase per primitive with `damaged` (lost +
//! reverted + torn units, summed over the repeat's cuts), `violations` (what breaks the stated
//! promise; durable and atomic primitives only), `lost`, `reverted`, `torn`, `acked_units`, and
//! for a replace `rename_old`/`rename_new`/`rename_neither`; the control has `control_caught`
//! (1 when it lost something) instead of `violations`. The phase's time is the sequences' wall
//! time summed over the cuts. A violation (per file), and a negative control that lost nothing
//! (the method cannot see a loss), are notes in capitals; the report's durability matrix
//! (`sections::durability`) gives each rate with its 95 % Wilson interval beside the promise and
//! what the filesystems document.

use crate::metric::{CpuUsage, MetricId, RawSample};
use crate::phase::{Caches, Phases, Policy};
use crate::workloads::powercut::disk::Model;
use crate::workloads::powercut::{
    cpu_mean, cut_power, eio, record_recovery, recover, recover_after_cut, sync_fs, timed, DiskStack, Fs, Method,
    Totals, PHASE_FSCK, PHASE_RECOVERY,
};
use crate::{EngineError, RunContext, Workload, WorkloadKind};
use crate::{Invalid, Unavailable};
use primitives::{Counts, FileCheck, Primitive, Promise};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub mod fsync_errors;
pub mod primitives;
pub mod promises;
pub mod stamp;

/// Parameters of the `durability` workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DurabilitySpec {
    /// Cuts per repeat (per primitive with `isolate`). Default 3.
    #[serde(default = "default_cuts")]
    pub cuts: u32,
    /// Files per primitive and cut. Default 4.
    #[serde(default = "default_files")]
    pub files: u32,
    /// `disk` (default) or `shutdown`; `auto` is refused (one method per row).
    #[serde(default = "default_method")]
    pub method: Method,
    /// The power-cut disk's model (`method = "disk"`): `volatile` (default), `reorder`,
    /// `torn-sectors`, `tear`, `broken-flush`.
    #[serde(default = "default_model")]
    pub disk_model: Model,
    /// Seed of the seeded disk models' cuts. Default 1.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Primitives to run, by name (empty: all); the negative control always runs.
    #[serde(default)]
    pub primitives: Vec<String>,
    /// Before the cut, write every file's dirty pages back (but the negative control's) and
    /// wait for them (`sync_file_range`, which sends no flush), so unflushed writes sit in the
    /// disk's volatile cache where the model decides what persists; without it they are still
    /// in the page cache at the cut (under `shutdown` what is written back is on the disk).
    /// Default false.
    #[serde(default)]
    pub writeback: bool,
    /// Also probe fsync error semantics once per repeat ([`fsync_errors`]): the disk fails the writeback
    /// of a file's blocks with EIO. Disk method only. Default false.
    #[serde(default)]
    pub fsync_errors: bool,
    /// Each cut runs one primitive (in table order, round robin) and the negative control,
    /// so that no other primitive's sync can make its unsynced work durable; `cuts` is then
    /// per primitive ([`DurabilitySpec::total_cuts`]). Default false: every primitive in every
    /// cut.
    #[serde(default)]
    pub isolate: bool,
}

fn default_cuts() -> u32 {
    3
}
fn default_files() -> u32 {
    4
}
fn default_method() -> Method {
    Method::Disk
}
fn default_model() -> Model {
    Model::Volatile
}
fn default_seed() -> u64 {
    1
}

impl Default for DurabilitySpec {
    fn default() -> Self {
        DurabilitySpec {
            cuts: default_cuts(),
            files: default_files(),
            method: default_method(),
            disk_model: default_model(),
            seed: default_seed(),
            primitives: Vec::new(),
            writeback: false,
            fsync_errors: false,
            isolate: false,
        }
    }
}

/// The metric table of this workload (the recovery and fsck rows are `powercut`'s).
pub mod metrics {
    use crate::metric::{MetricId, Role, Unit};

    /// Acknowledged units lost, reverted or torn after recovery, summed over a repeat's cuts.
    pub fn damaged() -> MetricId {
        MetricId::lower("damaged", Unit::Count).with_role(Role::Outcome)
    }
    /// Results breaking the primitive's stated promise (damaged units of a durable primitive,
    /// replaced files in neither version of an atomic one).
    pub fn violations() -> MetricId {
        MetricId::lower("violations", Unit::Count).with_role(Role::Outcome)
    }
    /// 1 when the negative control lost something (the cut method can see a loss), else 0.
    pub fn control_caught() -> MetricId {
        MetricId::higher("control_caught", Unit::Count).with_role(Role::Outcome)
    }
    /// Acknowledged units missing (zeros, beyond the end, or the file gone).
    pub fn lost() -> MetricId {
        MetricId::lower("lost", Unit::Count).with_role(Role::Detail)
    }
    /// Acknowledged units found in an older generation.
    pub fn reverted() -> MetricId {
        MetricId::lower("reverted", Unit::Count).with_role(Role::Detail)
    }
    /// Acknowledged units whose stamp or checksum does not match (mixed or foreign contents).
    pub fn torn() -> MetricId {
        MetricId::lower("torn", Unit::Count).with_role(Role::Detail)
    }
    /// Acknowledged units checked.
    pub fn acked_units() -> MetricId {
        MetricId::higher("acked_units", Unit::Count).with_role(Role::Detail)
    }
    /// Replaced files found whole in their old version.
    pub fn rename_old() -> MetricId {
        MetricId::lower("rename_old", Unit::Count).with_role(Role::Detail)
    }
    /// Replaced files found whole in their new version.
    pub fn rename_new() -> MetricId {
        MetricId::higher("rename_new", Unit::Count).with_role(Role::Detail)
    }
    /// Replaced files found in neither version (zero-length, mixed, missing).
    pub fn rename_neither() -> MetricId {
        MetricId::lower("rename_neither", Unit::Count).with_role(Role::Detail)
    }
    /// 1 when the first fsync after a failed writeback reported the error, else 0.
    pub fn first_fsync_error() -> MetricId {
        MetricId::higher("first_fsync_error", Unit::Count).with_role(Role::Outcome)
    }
    /// 1 when a second fsync then returned success although the data never reached the disk.
    pub fn second_fsync_ok() -> MetricId {
        MetricId::lower("second_fsync_ok", Unit::Count).with_role(Role::Detail)
    }
    /// 1 when the read through the page cache after the failure returned the new data.
    pub fn cached_read_new() -> MetricId {
        MetricId::lower("cached_read_new", Unit::Count).with_role(Role::Detail)
    }
    /// Writes the disk refused with EIO in the probe's failing range (0: the probe's answers
    /// say nothing about a failure).
    pub fn refused_writes() -> MetricId {
        MetricId::higher("refused_writes", Unit::Count).with_role(Role::Detail)
    }
    /// 1 when the read after dropping the clean pages returned the old data (silently).
    pub fn uncached_read_old() -> MetricId {
        MetricId::lower("uncached_read_old", Unit::Count).with_role(Role::Detail)
    }
    /// 1 when the failed writeback turned the filesystem read-only (it was mounted again).
    pub fn went_read_only() -> MetricId {
        MetricId::lower("went_read_only", Unit::Count).with_role(Role::Detail)
    }
}

/// Why a ZFS pool is not cut (issue 28 asks for zfs-fuse in the matrix).
pub const ZFS_UNAVAILABLE: &str = "durability cannot cut a ZFS pool: a power cut of zfs-fuse must fail the pool's disk and kill the zfs-fuse daemon, then restart it and import the pool from the power-cut disk's loop device alone (the original loop device serves the same image) as the recovery; the daemon and the pool are the ZFS target's to start and undo (provision::zfs), which the engine may not reach, and ZFS has no fsck to check with";

/// Why a guest variant (`TYPE@guest`) is not in the matrix.
pub const GUEST_UNAVAILABLE: &str = "durability cannot cut a guest's disk yet: the power-cut disk is a FUSE server on the host and the shutdown ioctl, the cut and the recovery mount run beside the filesystem, while a guest's filesystem lives on a virtio disk inside QEMU; the guest would need the power-cut disk's image behind its virtio disk and a cut that stops the guest";

/// The phase of the fsync error probe.
pub const PHASE_FSYNC_EIO: &str = "fsync-eio";

/// What one primitive adds up to over a repeat's cuts.
#[derive(Default, Clone)]
struct Tally {
    counts: Counts,
    wall: Duration,
    cpu: Vec<CpuUsage>,
}

impl Tally {
    fn add(&mut self, o: Tally) {
        self.counts.add(&o.counts);
        self.wall += o.wall;
        self.cpu.extend(o.cpu);
    }
}

impl DurabilitySpec {
    /// Cuts per repeat: `cuts`, or with `isolate` `cuts` per primitive other than the control.
    pub fn total_cuts(&self) -> u32 {
        match self.isolate {
            true => self.cuts * (self.selected().len() as u32 - 1).max(1),
            false => self.cuts,
        }
    }

    /// Indices into the selected primitives (the control last) that cut `cut` runs.
    fn active(&self, n: usize, cut: u32) -> Vec<usize> {
        match (self.isolate, n) {
            (false, _) | (true, 0..=1) => (0..n).collect(),
            (true, _) => vec![cut as usize % (n - 1), n - 1],
        }
    }

    /// The primitives to run, in table order: the chosen ones and the control.
    fn selected(&self) -> Vec<&'static Primitive> {
        primitives::TABLE
            .iter()
            .filter(|p| {
                self.primitives.is_empty()
                    || p.name == primitives::CONTROL
                    || self.primitives.iter().any(|n| n == p.name)
            })
            .collect()
    }

    /// The cut method's note: what cuts, and with which model and seed.
    fn method_note(&self, fs_type: &str) -> String {
        let note = self.method_words(fs_type);
        if self.writeback {
            format!(
                "{note}; before each cut every file's dirty pages but the control's were written back without a flush (writeback = true)"
            )
        } else {
            note
        }
    }

    fn method_words(&self, fs_type: &str) -> String {
        match self.method {
            Method::Shutdown => format!("power cut of {fs_type} by FS_IOC_SHUTDOWN with NOLOGFLUSH"),
            _ if self.disk_model.is_seeded() => format!(
                "power cut of {fs_type} by the power-cut disk (FUSE), model: {}; seed {} (cut c of a repeat draws from seed {} and c: same seed, same choices for the same writes)",
                self.disk_model.describe(),
                self.seed,
                self.seed
            ),
            _ => format!(
                "power cut of {fs_type} by the power-cut disk (FUSE), model: {}",
                self.disk_model.describe()
            ),
        }
    }

    /// Runs the fsync error probe in `work/eio` and removes its folder; the probe's wall time
    /// and outcome, `None` (with a note) where it cannot run.
    fn probe_fsync_errors(
        &self,
        fs: &Fs,
        work: &Path,
        server: &crate::workloads::powercut::disk::DiskServer,
        phases: &mut Phases,
    ) -> Result<Option<(Duration, fsync_errors::Outcome)>, EngineError> {
        std::fs::create_dir_all(work).map_err(|e| EngineError::io(format!("create {}", work.display()), e))?;
        let dir = work.join("eio");
        let t0 = Instant::now();
        let r = fsync_errors::probe(&dir, server);
        let wall = t0.elapsed();
        // Heal in any case: a probe that failed half-way must not leave the disk failing.
        server.heal().map_err(|e| eio("heal the disk", e))?;
        let _ = std::fs::remove_dir_all(&dir);
        // syncfs reports a writeback error of the filesystem once (errseq per superblock): the
        // first one after the probe is part of the answer, the second must succeed.
        // A filesystem the failure turned read-only is mounted again (its recovery) for the cuts.
        let (syncfs_error, read_only) = fsync_errors::syncfs_after(work);
        if read_only {
            fs.unmount()?;
            fs.mount()
                .map_err(|e| eio("mount again after the fsync error probe", e))?;
            let _ = std::fs::remove_dir_all(&dir);
        }
        sync_fs(work)?;
        match r.map(|o| fsync_errors::Outcome { read_only, ..o }) {
            Ok(o) => {
                phases.note(format!(
                    "{PHASE_FSYNC_EIO}: the writeback of a file's 16 KiB failed with EIO on the disk, which refused every write carrying its new units{} ({} writes refused); fsync 1: {}; fsync 2: {}; read through the page cache: {}; read after dropping its clean pages: {}; {}the next syncfs of the filesystem: {}",
                    fsync_errors::file_kind(&fs.fs_type, o.nocow),
                    o.refused_writes,
                    if o.first_fsync_error { "error" } else { "SUCCESS (the error was not reported)" },
                    if o.second_fsync_ok { "success (the data is not on the disk)" } else { "error" },
                    o.cached_read.as_str(),
                    o.uncached_read.as_str(),
                    if o.read_only {
                        "the filesystem turned READ-ONLY and was mounted again (its recovery); "
                    } else {
                        ""
                    },
                    if syncfs_error { "error" } else { "success" }
                ));
                Ok(Some((wall, o)))
            }
            Err(why) => {
                phases.note(format!("{PHASE_FSYNC_EIO}: {why}"));
                Ok(None)
            }
        }
    }

    /// Prepares every primitive's files in `dir` (generation 1) and makes them durable.
    fn prepare(&self, prims: &[&Primitive], dir: &Path) -> Result<(), EngineError> {
        for (k, p) in prims.iter().enumerate() {
            let d = dir.join(p.name);
            std::fs::create_dir_all(&d).map_err(|e| EngineError::io(format!("create {}", d.display()), e))?;
            for i in 0..self.files as usize {
                p.prepare(&d, i, file_id(k, i))
                    .map_err(|e| EngineError::io("prepare".to_string(), e))?;
            }
        }
        sync_fs(dir)
    }

    /// Runs every primitive's sequence on its files, timing each; what the check must find.
    fn act(
        &self,
        ctx: &RunContext,
        prims: &[&Primitive],
        dir: &Path,
        tallies: &mut [Tally],
    ) -> Result<Vec<Vec<FileCheck>>, EngineError> {
        let mut checks = Vec::with_capacity(prims.len());
        for (k, p) in prims.iter().enumerate() {
            if ctx.interrupt.load(Ordering::Relaxed) {
                return Err(EngineError::Interrupted);
            }
            let d = dir.join(p.name);
            let meter = crate::cpu::CpuMeter::start();
            let t0 = Instant::now();
            let mut files = Vec::with_capacity(self.files as usize);
            for i in 0..self.files as usize {
                files.push(
                    p.act(&d, i, file_id(k, i))
                        .map_err(|e| EngineError::io(p.name.to_string(), e))?,
                );
            }
            tallies[k].wall += t0.elapsed();
            tallies[k].cpu.push(meter.stop());
            checks.push(files);
        }
        Ok(checks)
    }

    /// A seeded model's account of what its cuts kept and dropped, from the disk's counters.
    fn disk_note(&self, stack: &DiskStack) -> Option<String> {
        let st = stack.server.as_ref()?.stats().ok()?;
        self.disk_model.is_seeded().then(|| {
            format!(
                "disk: {} writes, {} flushes, {} cuts kept {} and dropped {} {} written since the last flush",
                st.writes,
                st.flushes,
                st.cuts,
                st.kept_units,
                st.dropped_units,
                if self.disk_model == Model::Reorder {
                    "writes"
                } else {
                    "sectors"
                }
            )
        })
    }

    fn run_cuts(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        let mut phases = Phases::new(ctx);
        if let Some(fs) = ctx.fs {
            self.availability_on(fs)?;
        }
        let runner_fs = Fs::of_run(ctx, "durability")?;
        let fsck = recover::fsck_for(&runner_fs.fs_type)
            .ok_or_else(|| EngineError::Unavailable(format!("no fsck known to fsbench for {}", runner_fs.fs_type)))?;
        fsck.available()?;
        if self.method == Method::Shutdown {
            recover::shutdown_supported(ctx.dir)
                .map_err(|why| EngineError::Unavailable(format!("{}: {why}", runner_fs.fs_type)))?;
        }
        phases.note(self.method_note(&runner_fs.fs_type));
        let mut stack = DiskStack::new(ctx);
        let fs = match self.method {
            Method::Shutdown => runner_fs,
            _ => stack.mount(ctx, runner_fs, (self.disk_model, self.seed))?,
        };
        let work = fs.mountpoint.join(ctx.dir.file_name().unwrap_or_default());
        let probed = match (&stack.server, self.fsync_errors) {
            (Some(server), true) => self.probe_fsync_errors(&fs, &work, server, &mut phases)?,
            _ => None,
        };
        let prims = self.selected();
        let mut tallies = vec![Tally::default(); prims.len()];
        let mut t = Totals::default();
        let mut lines = Vec::new();
        let cuts = self.total_cuts();
        for cut in 0..cuts {
            (ctx.on_phase)(&format!("cut {}/{cuts}", cut + 1));
            let dir = work.join(format!("cut{cut}"));
            let idx = self.active(prims.len(), cut);
            let cut_prims: Vec<&Primitive> = idx.iter().map(|&i| prims[i]).collect();
            let mut cut_tallies = vec![Tally::default(); idx.len()];
            self.prepare(&cut_prims, &dir)?;
            let checks = self.act(ctx, &cut_prims, &dir, &mut cut_tallies)?;
            if self.writeback {
                write_back(&dir)?;
            }
            cut_power(stack.server.as_ref(), &dir).map_err(|e| eio("cut the power", e))?;
            let mut line = format!("cut {}: ", cut + 1);
            let rel = dir.strip_prefix(&fs.mountpoint).unwrap_or(&dir).to_path_buf();
            let recovered = recover_after_cut(
                ctx,
                &fs,
                &fsck,
                stack.server.as_ref(),
                cut,
                &mut t,
                &mut phases,
                &mut line,
                &mut |_, phases, line| {
                    let damaged = verify_cut(
                        &fs.mountpoint.join(&rel),
                        &cut_prims,
                        &checks,
                        cut,
                        &mut cut_tallies,
                        phases,
                    );
                    line.push_str(&format!(", {damaged} units damaged"));
                },
            )?;
            for (i, tally) in idx.into_iter().zip(cut_tallies) {
                tallies[i].add(tally);
            }
            lines.push(line);
            if !recovered {
                break;
            }
            match std::fs::remove_dir_all(&dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(EngineError::io(format!("remove {}", dir.display()), e))
                }
                _ => {}
            }
            sync_fs(&fs.mountpoint)?;
        }
        phases.note(format!("cuts: {}", lines.join("; ")));
        if let Some(note) = self.disk_note(&stack) {
            phases.note(note);
        }
        if self.method != Method::Shutdown {
            stack.teardown().map_err(|e| eio("power-cut disk teardown", e))?;
        }
        record_recovery(&mut phases, &t);
        if let Some((wall, o)) = probed {
            phases.begin(PHASE_FSYNC_EIO, Caches::Keep);
            let rows = vec![
                (metrics::first_fsync_error(), o.first_fsync_error as u8 as f64),
                (metrics::second_fsync_ok(), o.second_fsync_ok as u8 as f64),
                (
                    metrics::cached_read_new(),
                    (o.cached_read == fsync_errors::Seen::New) as u8 as f64,
                ),
                (
                    metrics::uncached_read_old(),
                    (o.uncached_read == fsync_errors::Seen::Old) as u8 as f64,
                ),
                (metrics::refused_writes(), o.refused_writes as f64),
                (metrics::went_read_only(), o.read_only as u8 as f64),
            ];
            phases.record(PHASE_FSYNC_EIO, &timed(wall, CpuUsage::default()), rows, &Policy::new());
        }
        for (p, tally) in prims.iter().zip(&tallies) {
            record_primitive(&mut phases, p, tally);
        }
        Ok(phases.finish())
    }
}

/// Writes back the dirty pages of every file under `dir` but the negative control's and waits
/// for them, with no flush ([`primitives::write_back`]). The control stays in the page cache: a
/// filesystem that commits what is written back (ext4 data=journal journals it, with a flush)
/// would otherwise make it durable, and the control would prove nothing.
fn write_back(dir: &Path) -> Result<(), EngineError> {
    let err = |what: String| move |e| EngineError::io(what, e);
    for d in std::fs::read_dir(dir).map_err(err(format!("read {}", dir.display())))? {
        let d = d.map_err(err(format!("read {}", dir.display())))?.path();
        if d.file_name().is_some_and(|n| n == primitives::CONTROL) {
            continue;
        }
        for f in std::fs::read_dir(&d).map_err(err(format!("read {}", d.display())))? {
            let path = f.map_err(err(format!("read {}", d.display())))?.path();
            std::fs::File::open(&path)
                .and_then(|file| primitives::write_back(&file))
                .map_err(err(format!("sync_file_range {}", path.display())))?;
        }
    }
    Ok(())
}

/// The stamp id of file `i` of the `k`-th primitive run.
fn file_id(k: usize, i: usize) -> u32 {
    (k * 10_000 + i + 1) as u32
}

/// Checks every primitive's files under the recovered cut folder `dir`, adding to `tallies`; a
/// violation of a promise is a note per file. The damaged units of the cut.
fn verify_cut(
    dir: &Path,
    prims: &[&Primitive],
    checks: &[Vec<FileCheck>],
    cut: u32,
    tallies: &mut [Tally],
    phases: &mut Phases,
) -> u64 {
    let mut damaged = 0;
    for ((p, files), tally) in prims.iter().zip(checks).zip(tallies.iter_mut()) {
        for c in files {
            let (n, what) = primitives::verify(dir, c);
            damaged += n.damaged();
            if n.violations(p.promise) > 0 {
                if let Some(w) = what {
                    phases.note(format!("VIOLATION ({}): cut {}: {w}", p.promise.as_str(), cut + 1));
                }
            }
            tally.counts.add(&n);
        }
    }
    damaged
}

/// Records primitive `p`'s phase: its counts, and a note when the negative control lost nothing
/// (the report's durability matrix gives every rate with its interval).
fn record_primitive(phases: &mut Phases, p: &Primitive, tally: &Tally) {
    let c = &tally.counts;
    phases.begin(p.name, Caches::Keep);
    let mut rows: Vec<(MetricId, f64)> = vec![(metrics::damaged(), c.damaged() as f64)];
    match p.promise {
        Promise::Durable | Promise::Atomic => rows.push((metrics::violations(), c.violations(p.promise) as f64)),
        Promise::Control => rows.push((metrics::control_caught(), (c.damaged() > 0) as u8 as f64)),
        Promise::Nothing => {}
    }
    rows.extend([
        (metrics::lost(), c.lost as f64),
        (metrics::reverted(), c.reverted as f64),
        (metrics::torn(), c.torn as f64),
        (metrics::acked_units(), c.acked as f64),
    ]);
    if c.old + c.new + c.neither > 0 {
        rows.extend([
            (metrics::rename_old(), c.old as f64),
            (metrics::rename_new(), c.new as f64),
            (metrics::rename_neither(), c.neither as f64),
        ]);
    }
    phases.record(p.name, &timed(tally.wall, cpu_mean(&tally.cpu)), rows, &Policy::new());
    if p.promise == Promise::Control && c.damaged() == 0 && c.acked > 0 {
        phases.note(format!(
            "NEGATIVE CONTROL FAILED: {} lost nothing of {} units acknowledged with no sync: this cut method showed no loss, so the zeros of the other primitives prove nothing",
            p.name, c.acked
        ));
    }
}

impl Workload for DurabilitySpec {
    fn phases(&self) -> Vec<String> {
        let mut v = vec![PHASE_RECOVERY.to_string(), PHASE_FSCK.to_string()];
        if self.fsync_errors {
            v.push(PHASE_FSYNC_EIO.to_string());
        }
        v.extend(self.selected().iter().map(|p| p.name.to_string()));
        v
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        let mut s = self.clone();
        s.files = ((self.files as f64 * factor).round() as u32).max(1);
        WorkloadKind::Durability(s)
    }

    fn validate(&self) -> Result<(), Invalid> {
        if self.cuts == 0 {
            return Err("cuts must be at least 1".into());
        }
        if self.files == 0 || self.files > 1000 {
            return Err("files must be between 1 and 1000".into());
        }
        if self.method == Method::Auto {
            return Err(Invalid(
                "method = \"auto\" would mix cut methods in one row: choose \"disk\" or \"shutdown\" (one workload entry each)"
                    .into(),
            ));
        }
        if self.method == Method::Shutdown && self.fsync_errors {
            return Err(Invalid(
                "fsync_errors = true needs the power-cut disk (method = \"disk\"), which fails the writes".into(),
            ));
        }
        if self.method == Method::Disk && self.disk_model == Model::Passthrough {
            return Err("disk_model = \"passthrough\" cannot cut the power; use \"volatile\"".into());
        }
        if let Some(bad) = self.primitives.iter().find(|n| primitives::by_name(n).is_none()) {
            let names: Vec<&str> = primitives::TABLE.iter().map(|p| p.name).collect();
            return Err(Invalid(format!(
                "unknown primitive `{bad}`; known: {}",
                names.join(", ")
            )));
        }
        Ok(())
    }

    fn needs_block_device(&self) -> bool {
        true
    }

    fn availability_on(&self, fs: &crate::fstype::FsType) -> Result<(), Unavailable> {
        match fs.name {
            "zfs" => Err(ZFS_UNAVAILABLE.into()),
            _ => Ok(()),
        }
    }

    fn availability_in_guest(&self) -> Result<(), Unavailable> {
        Err(GUEST_UNAVAILABLE.into())
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        // One cut folder at a time: every primitive's files (a truncated file starts twice as
        // long, a replace has its temporary copy, an append doubles).
        let prims = self.selected();
        let files = prims.len() as u64 * self.files as u64 * 2;
        let data: u64 = prims
            .iter()
            .map(|p| 2 * (p.unit * p.units) as u64 * self.files as u64)
            .sum();
        crate::fstype::Footprint {
            files,
            dirs: prims.len() as u64 + 2,
            block_bytes: data,
            entry_bytes: files * 32,
            ..Default::default()
        }
    }

    fn describe(&self) -> String {
        let how = match self.method {
            Method::Shutdown => "FS_IOC_SHUTDOWN".to_string(),
            _ => format!(
                "the power-cut disk, model {} (seed {}){}",
                self.disk_model.as_arg(),
                self.seed,
                if self.writeback {
                    ", dirty pages written back before each cut"
                } else {
                    ""
                }
            ),
        };
        format!(
            "durability: {} primitives x {} files, {} cuts{} by {how}",
            self.selected().len(),
            self.files,
            self.total_cuts(),
            if self.isolate {
                " (one primitive and the control each)"
            } else {
                ""
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
    fn isolated_cuts_run_one_primitive_and_the_control_round_robin() {
        let s = DurabilitySpec {
            primitives: vec!["write-fsync".into(), "mmap-msync".into()],
            isolate: true,
            cuts: 2,
            ..Default::default()
        };
        assert_eq!(s.total_cuts(), 4, "2 cuts for each of 2 primitives");
        let runs: Vec<Vec<usize>> = (0..4).map(|c| s.active(3, c)).collect();
        assert_eq!(runs, [vec![0, 2], vec![1, 2], vec![0, 2], vec![1, 2]]);
        let all = DurabilitySpec {
            isolate: false,
            ..s.clone()
        };
        assert_eq!((all.total_cuts(), all.active(3, 1)), (2, vec![0, 1, 2]));
        assert_eq!(s.active(1, 5), vec![0], "the control alone");
    }

    #[test]
    fn a_zfs_pool_is_unavailable_with_the_reason_and_the_others_are_not() {
        let of = |name| crate::fstype::FsTypeId::of(name).get();
        let s = DurabilitySpec::default();
        assert!(s
            .availability_on(of("zfs"))
            .unwrap_err()
            .0
            .contains("cannot cut a ZFS pool"));
        for ok in ["ext4", "xfs", "btrfs"] {
            assert_eq!(s.availability_on(of(ok)), Ok(()), "{ok}");
        }
        assert!(s
            .availability_in_guest()
            .unwrap_err()
            .0
            .contains("cannot cut a guest's disk"));
    }

    #[test]
    fn the_control_always_runs_and_bad_parameters_say_what_to_change() {
        let s = DurabilitySpec {
            primitives: vec!["write-fsync".into()],
            ..Default::default()
        };
        assert_eq!(s.phases(), ["recovery", "fsck", "write-fsync", primitives::CONTROL]);
        assert_eq!(DurabilitySpec::default().selected().len(), primitives::TABLE.len());
        for (s, want) in [
            (
                DurabilitySpec {
                    method: Method::Auto,
                    ..Default::default()
                },
                "mix cut methods",
            ),
            (
                DurabilitySpec {
                    primitives: vec!["write-fsnyc".into()],
                    ..Default::default()
                },
                "unknown primitive `write-fsnyc`",
            ),
            (
                DurabilitySpec {
                    cuts: 0,
                    ..Default::default()
                },
                "cuts",
            ),
            (
                DurabilitySpec {
                    method: Method::Shutdown,
                    fsync_errors: true,
                    ..Default::default()
                },
                "needs the power-cut disk",
            ),
        ] {
            assert!(s.validate().unwrap_err().0.contains(want), "{want}");
        }
        let parsed: WorkloadKind =
            toml::from_str("kind = \"durability\"\ndisk_model = \"reorder\"\nseed = 7\nprimitives = [\"mmap-msync\"]")
                .unwrap();
        assert!(matches!(
            parsed,
            WorkloadKind::Durability(DurabilitySpec {
                disk_model: Model::Reorder,
                seed: 7,
                method: Method::Disk,
                ..
            })
        ));
    }
}
