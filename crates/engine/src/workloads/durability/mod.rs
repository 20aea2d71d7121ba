//! `durability`: which syscall sequence survives a power cut on which filesystem (issue 28).
//!
//! One repeat makes `cuts` cuts on the filesystem the runner provisioned (a fresh mkfs per
//! repeat). Before each cut every primitive of [`primitives::TABLE`] (or the chosen ones, the
//! two controls always among them) gets `files` files in its own folder, prepared at
//! generation 1 and made durable with `syncfs` (untimed); then each primitive runs its sequence
//! on its files, one primitive after the other in table order, and the power is cut right after
//! the last two, the controls ([`primitives::Control`]): the flush control (written back with no
//! flush), then the negative control (a write acknowledged with no sync at all). Every
//! acknowledgement therefore returned before the cut began. After the cut the filesystem is
//! recovered (timed mount), every stamped unit is classified ([`stamp`]: intact, lost, reverted,
//! torn), replaced files are judged old, new or neither, then the read-only check runs (and a
//! repair when it asks), exactly as in `powercut` ([`crate::workloads::powercut`]).
//!
//! Each cut is judged by its own controls. A cut whose negative control lost nothing showed no
//! loss: its units are counted as `unverified_units` on every primitive (a note in capitals per
//! cut), and the matrix shows the column unverified. A cut whose flush control lost nothing kept
//! what reached the disk unflushed: it cannot expose a missing flush (counted, a note). A cut
//! after which the filesystem did not mount checks nothing: every unit it acknowledged counts as
//! lost (and as `unrecovered_units`), never silently absent.
//!
//! With `isolate = true` each cut runs one primitive (round robin) and the controls, `cuts` per
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
//! promise; durable and atomic primitives only), `lost`, `reverted`, `torn`, `acked_units`,
//! `unverified_units`, `unrecovered_units`, and for a replace
//! `rename_old`/`rename_new`/`rename_neither`; a control has `control_caught` (1 when it lost
//! something in every cut), `cuts_not_caught` and `cuts` instead of `violations`. The phase's
//! time is the sequences' wall time summed over the cuts. A violation (per file), a cut whose
//! negative control lost nothing and a cut that did not mount are notes in capitals; the
//! report's durability matrix (`sections::durability`) gives each rate with its 95 % Wilson
//! interval beside the promise and what the filesystems document.
//!
//! `broken_control_cut = N` is broken on purpose (the test that shows the invalidation): in cut
//! N the negative control's files are fsynced before the cut, so that cut's control loses
//! nothing; every other step is the real one, and the notes say so.

use crate::metric::{CpuUsage, MetricId, RawSample};
use crate::phase::{Caches, Phases, Policy};
use crate::workloads::powercut::disk::Model;
use crate::workloads::powercut::{
    cpu_mean, cut_power, eio, record_recovery, recover, recover_after_cut, sync_fs, timed, DiskStack, Fs, Method,
    Totals, PHASE_FSCK, PHASE_RECOVERY,
};
use crate::{EngineError, RunContext, Workload, WorkloadKind};
use crate::{Invalid, Unavailable};
use primitives::{Control, Counts, FileCheck, Primitive, Promise};
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
    /// Primitives to run, by name (empty: all); the two controls always run.
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
    /// Each cut runs one primitive (in table order, round robin) and the controls,
    /// so that no other primitive's sync can make its unsynced work durable; `cuts` is then
    /// per primitive ([`DurabilitySpec::total_cuts`]). Default false: every primitive in every
    /// cut.
    #[serde(default)]
    pub isolate: bool,
    /// Broken on purpose: in this cut of each repeat (1-based; 0, the default: none) the
    /// negative control's files are fsynced before the cut, so the control loses nothing and
    /// the cut is unverified (the test that shows a control that lost nothing invalidating its
    /// column). Stated in the notes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub broken_control_cut: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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
            broken_control_cut: 0,
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
    /// 1 when the control lost something in every cut of the repeat (the negative control: the
    /// cuts can see a loss; the flush control: they drop unflushed writes), else 0.
    pub fn control_caught() -> MetricId {
        MetricId::higher("control_caught", Unit::Count).with_role(Role::Outcome)
    }
    /// Cuts of the repeat in which the control lost nothing: for the negative control the
    /// cuts whose cells are unverified, for the flush control the cuts that cannot expose a
    /// missing flush.
    pub fn cuts_not_caught() -> MetricId {
        MetricId::lower("cuts_not_caught", Unit::Count).with_role(Role::Outcome)
    }
    /// Cuts the control ran in (and was checked or counted lost after).
    pub fn cuts() -> MetricId {
        MetricId::higher("cuts", Unit::Count).with_role(Role::Detail)
    }
    /// Acknowledged units checked in cuts whose negative control lost nothing: a loss there
    /// would not have been seen (unverified).
    pub fn unverified_units() -> MetricId {
        MetricId::lower("unverified_units", Unit::Count).with_role(Role::Detail)
    }
    /// Acknowledged units of cuts after which the filesystem did not mount, counted as lost.
    pub fn unrecovered_units() -> MetricId {
        MetricId::lower("unrecovered_units", Unit::Count).with_role(Role::Detail)
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

/// What one primitive adds up to over a repeat's cuts (or over one cut).
#[derive(Default, Clone)]
struct Tally {
    counts: Counts,
    wall: Duration,
    cpu: Vec<CpuUsage>,
    /// Acknowledged units of cuts whose negative control lost nothing.
    unverified: u64,
    /// Acknowledged units of cuts that did not mount (also in `counts` as lost).
    unrecovered: u64,
    /// Cuts judged (a control's).
    cuts: u64,
    /// Cuts in which it lost nothing (a control's).
    cuts_missed: u64,
}

impl Tally {
    fn add(&mut self, o: Tally) {
        self.counts.add(&o.counts);
        self.wall += o.wall;
        self.cpu.extend(o.cpu);
        self.unverified += o.unverified;
        self.unrecovered += o.unrecovered;
        self.cuts += o.cuts;
        self.cuts_missed += o.cuts_missed;
    }
}

impl DurabilitySpec {
    /// Cuts per repeat: `cuts`, or with `isolate` `cuts` per primitive other than the controls.
    pub fn total_cuts(&self) -> u32 {
        let tested = self.selected().iter().filter(|p| p.control().is_none()).count() as u32;
        match self.isolate {
            true => self.cuts * tested.max(1),
            false => self.cuts,
        }
    }

    /// Indices into the selected primitives `prims` (the controls last) that cut `cut` runs:
    /// all, or with `isolate` one primitive under test (round robin) and the controls.
    fn active(&self, prims: &[&Primitive], cut: u32) -> Vec<usize> {
        let (controls, tested): (Vec<usize>, Vec<usize>) =
            (0..prims.len()).partition(|&i| prims[i].control().is_some());
        if !self.isolate || tested.is_empty() {
            return (0..prims.len()).collect();
        }
        let mut v = vec![tested[cut as usize % tested.len()]];
        v.extend(controls);
        v
    }

    /// The primitives to run, in table order: the chosen ones and the controls.
    fn selected(&self) -> Vec<&'static Primitive> {
        primitives::TABLE
            .iter()
            .filter(|p| {
                self.primitives.is_empty() || p.control().is_some() || self.primitives.iter().any(|n| n == p.name)
            })
            .collect()
    }

    /// The cut method's note: what cuts, and with which model and seed.
    fn method_note(&self, fs_type: &str) -> String {
        let mut note = self.method_words(fs_type);
        if self.writeback {
            note.push_str(
                "; before each cut every file's dirty pages but the control's were written back without a flush (writeback = true)",
            );
        }
        if self.broken_control_cut > 0 {
            note.push_str(&format!(
                "; BROKEN ON PURPOSE: in cut {} the negative control's files were fsynced before the cut (broken_control_cut)",
                self.broken_control_cut
            ));
        }
        note
    }

    /// Which failures of a filesystem this workload's cuts can expose, in principle (the
    /// controls measure it per cut): what the cut drops, and so which missing step shows as a
    /// loss.
    pub fn exposes(&self) -> &'static str {
        match (self.method, self.disk_model) {
            (Method::Shutdown, _) => "the shutdown ioctl drops the page cache and the log not yet written, and keeps everything that reached the disk, flushed or not: it exposes a sync that does not write the data or the log, not a missing flush (the flush control survives it)",
            (_, Model::Volatile | Model::Passthrough) => "the volatile disk drops every write since the last completed flush: it exposes a sync that does not write and a missing flush",
            (_, Model::Reorder) => "the reordering disk keeps a seeded subset of the writes since the last flush: it exposes a missing flush and writes the filesystem needs in order (whole writes)",
            (_, Model::TornSectors) => "the torn-sectors disk keeps a seeded subset of the sectors written since the last flush: it exposes a missing flush and writes that must not tear",
            (_, Model::Tear) => "the tearing disk drops every write since the last flush but the first half of the last one: it exposes a missing flush and a torn last write",
            (_, Model::BrokenFlush) => "BROKEN: the disk drops flushed writes too, so a loss blames the disk, not the filesystem",
            (_, Model::BrokenSuperblock) => "BROKEN: the cut zeroes the superblock, so the filesystem does not mount and every unit counts as lost",
        }
    }

    /// What runs between the sequences and the cut: the write-back of `writeback`, and in cut
    /// `broken_control_cut` the negative control's fsync.
    fn before_cut(&self, dir: &Path, cut: u32) -> Result<(), EngineError> {
        if self.writeback {
            write_back(dir)?;
        }
        if self.broken_control_cut == cut + 1 {
            let d = dir.join(primitives::CONTROL);
            let err = |what: String| move |e| EngineError::io(what, e);
            for f in std::fs::read_dir(&d).map_err(err(format!("read {}", d.display())))? {
                let path = f.map_err(err(format!("read {}", d.display())))?.path();
                std::fs::File::open(&path)
                    .and_then(|file| file.sync_all())
                    .map_err(err(format!("fsync {}", path.display())))?;
            }
        }
        Ok(())
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
            let idx = self.active(&prims, cut);
            let cut_prims: Vec<&Primitive> = idx.iter().map(|&i| prims[i]).collect();
            let mut cut_tallies = vec![Tally::default(); idx.len()];
            self.prepare(&cut_prims, &dir)?;
            let checks = self.act(ctx, &cut_prims, &dir, &mut cut_tallies)?;
            self.before_cut(&dir, cut)?;
            cut_power(stack.server.as_ref(), &dir).map_err(|e| eio("cut the power", e))?;
            let mut line = format!("cut {}: ", cut + 1);
            let rel = dir.strip_prefix(&fs.mountpoint).unwrap_or(&dir).to_path_buf();
            let mut checked = false;
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
                    checked = true;
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
            if !checked {
                count_unrecovered(&checks, cut, &mut cut_tallies, &mut phases);
            }
            judge_cut(&cut_prims, cut, &mut cut_tallies, &mut phases, &mut line);
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

/// After cut `cut`, whose recovery mount failed so that nothing was checked: every unit the
/// cut acknowledged counts as lost ([`primitives::all_lost`]) and as unrecovered, never
/// silently absent; a note says how many.
fn count_unrecovered(checks: &[Vec<FileCheck>], cut: u32, tallies: &mut [Tally], phases: &mut Phases) {
    let mut units = 0;
    for (files, tally) in checks.iter().zip(tallies.iter_mut()) {
        for c in files {
            let n = primitives::all_lost(c);
            tally.counts.add(&n);
            tally.unrecovered += n.acked;
            units += n.acked;
        }
    }
    phases.note(format!(
        "UNRECOVERED: cut {}: the filesystem did not mount after the cut: its {units} acknowledged units count as lost",
        cut + 1
    ));
}

/// Judges cut `cut` (`tallies` hold that cut's counts) by its controls: a negative control that
/// lost nothing makes the cut unverified (every primitive's units of the cut count as
/// unverified, a note in capitals); a flush control that lost nothing is counted (the cut
/// cannot expose a missing flush). `line` says what each control showed.
fn judge_cut(prims: &[&Primitive], cut: u32, tallies: &mut [Tally], phases: &mut Phases, line: &mut String) {
    let mut unverified = false;
    for (p, t) in prims.iter().zip(tallies.iter_mut()) {
        let Some(control) = p.control() else { continue };
        t.cuts += 1;
        let lost = t.counts.damaged() > 0;
        t.cuts_missed += u64::from(!lost);
        match (control, lost) {
            (Control::PageCache, false) => {
                unverified = true;
                phases.note(format!(
                    "NEGATIVE CONTROL FAILED: cut {}: {} lost nothing of {} units acknowledged with no sync: the cut showed no loss, so its other zeros prove nothing (its cells are unverified)",
                    cut + 1,
                    p.name,
                    t.counts.acked
                ));
            }
            (Control::Flush, _) => line.push_str(if lost {
                ", flush control lost"
            } else {
                ", flush control kept"
            }),
            (Control::PageCache, true) => {}
        }
    }
    if unverified {
        for t in tallies.iter_mut() {
            t.unverified += t.counts.acked;
        }
        line.push_str(", UNVERIFIED (the negative control lost nothing)");
    }
}

/// Records primitive `p`'s phase: its counts, and for the flush control a note when some cut
/// kept it (the report's durability matrix gives every rate with its interval).
fn record_primitive(phases: &mut Phases, p: &Primitive, tally: &Tally) {
    let c = &tally.counts;
    phases.begin(p.name, Caches::Keep);
    let mut rows: Vec<(MetricId, f64)> = vec![(metrics::damaged(), c.damaged() as f64)];
    match p.promise {
        Promise::Durable | Promise::Atomic => rows.push((metrics::violations(), c.violations(p.promise) as f64)),
        Promise::Control => rows.extend([
            (
                metrics::control_caught(),
                (tally.cuts > 0 && tally.cuts_missed == 0) as u8 as f64,
            ),
            (metrics::cuts_not_caught(), tally.cuts_missed as f64),
            (metrics::cuts(), tally.cuts as f64),
        ]),
        Promise::Nothing => {}
    }
    rows.extend([
        (metrics::lost(), c.lost as f64),
        (metrics::reverted(), c.reverted as f64),
        (metrics::torn(), c.torn as f64),
        (metrics::acked_units(), c.acked as f64),
        (metrics::unverified_units(), tally.unverified as f64),
        (metrics::unrecovered_units(), tally.unrecovered as f64),
    ]);
    if c.old + c.new + c.neither > 0 {
        rows.extend([
            (metrics::rename_old(), c.old as f64),
            (metrics::rename_new(), c.new as f64),
            (metrics::rename_neither(), c.neither as f64),
        ]);
    }
    phases.record(p.name, &timed(tally.wall, cpu_mean(&tally.cpu)), rows, &Policy::new());
    if p.control() == Some(Control::Flush) && tally.cuts_missed > 0 {
        phases.note(format!(
            "flush control: {} lost nothing in {} of {} cuts: written back to the disk and never flushed, it survived them, so those cuts cannot expose a missing flush",
            p.name, tally.cuts_missed, tally.cuts
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
        if self.broken_control_cut > self.total_cuts() {
            return Err(Invalid(format!(
                "broken_control_cut = {} is beyond the {} cuts of a repeat",
                self.broken_control_cut,
                self.total_cuts()
            )));
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
            "durability: {} primitives x {} files, {} cuts{} by {how}{}",
            self.selected().len(),
            self.files,
            self.total_cuts(),
            if self.isolate {
                " (one primitive and the controls each)"
            } else {
                ""
            },
            match self.broken_control_cut {
                0 => String::new(),
                n => format!("; BROKEN ON PURPOSE: the negative control fsynced in cut {n}"),
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
        let prims = s.selected();
        let names: Vec<&str> = prims.iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "write-fsync",
                "mmap-msync",
                primitives::FLUSH_CONTROL,
                primitives::CONTROL
            ]
        );
        let runs: Vec<Vec<usize>> = (0..4).map(|c| s.active(&prims, c)).collect();
        assert_eq!(runs, [vec![0, 2, 3], vec![1, 2, 3], vec![0, 2, 3], vec![1, 2, 3]]);
        let all = DurabilitySpec {
            isolate: false,
            ..s.clone()
        };
        assert_eq!((all.total_cuts(), all.active(&prims, 1)), (2, vec![0, 1, 2, 3]));
        assert_eq!(s.active(&prims[2..], 5), vec![0, 1], "the controls alone");
    }

    /// One cut's tallies of write-fsync (4 units, nothing damaged) and the two controls, whose
    /// damaged units are `flush_lost` and `control_lost`.
    fn cut_tallies(flush_lost: u64, control_lost: u64) -> Vec<Tally> {
        let counts = |lost| Counts {
            acked: 4,
            intact: 4 - lost,
            lost,
            ..Counts::default()
        };
        [0, flush_lost, control_lost]
            .into_iter()
            .map(|lost| Tally {
                counts: counts(lost),
                ..Tally::default()
            })
            .collect()
    }

    fn three() -> Vec<&'static Primitive> {
        ["write-fsync", primitives::FLUSH_CONTROL, primitives::CONTROL]
            .into_iter()
            .filter_map(primitives::by_name)
            .collect()
    }

    #[test]
    fn a_cut_whose_negative_control_lost_nothing_is_unverified_and_only_that_one() {
        let t = tempfile::tempdir().unwrap();
        let flag = std::sync::atomic::AtomicBool::new(false);
        let ctx = RunContext::quiet(t.path(), &flag);
        let mut phases = Phases::new(&ctx);
        let prims = three();
        let mut sum = vec![Tally::default(); 3];
        let mut lines = Vec::new();
        // Cut 1: both controls lost; cut 2: the negative control kept (broken), the flush
        // control kept too.
        for (cut, (flush, control)) in [(4, 4), (0, 0)].into_iter().enumerate() {
            let mut tallies = cut_tallies(flush, control);
            let mut line = String::new();
            judge_cut(&prims, cut as u32, &mut tallies, &mut phases, &mut line);
            lines.push(line);
            for (s, t) in sum.iter_mut().zip(tallies) {
                s.add(t);
            }
        }
        assert_eq!(lines[0], ", flush control lost");
        assert_eq!(
            lines[1],
            ", flush control kept, UNVERIFIED (the negative control lost nothing)"
        );
        assert_eq!(
            sum.iter().map(|t| t.unverified).collect::<Vec<_>>(),
            [4, 4, 4],
            "cut 2's units"
        );
        assert_eq!(
            sum.iter().map(|t| (t.cuts, t.cuts_missed)).collect::<Vec<_>>(),
            [(0, 0), (2, 1), (2, 1)]
        );
        for (p, tally) in prims.iter().zip(&sum) {
            record_primitive(&mut phases, p, tally);
        }
        let sample = phases.finish();
        let notes = sample.notes.join("\n");
        assert!(
            notes.contains("NEGATIVE CONTROL FAILED: cut 2: nosync-control lost nothing of 4 units"),
            "{notes}"
        );
        assert!(!notes.contains("cut 1: nosync"), "{notes}");
        assert!(
            notes.contains("flush control: noflush-control lost nothing in 1 of 2 cuts"),
            "{notes}"
        );
        let value = |phase: &str, metric: &str| {
            sample
                .phases
                .iter()
                .filter(|r| r.phase == phase)
                .flat_map(|r| r.metrics.iter())
                .find(|(m, _)| m.name == metric)
                .map(|(_, v)| *v)
        };
        assert_eq!(
            value(primitives::CONTROL, "control_caught"),
            Some(0.0),
            "not in every cut"
        );
        assert_eq!(value(primitives::CONTROL, "cuts_not_caught"), Some(1.0));
        assert_eq!(value(primitives::CONTROL, "cuts"), Some(2.0));
        assert_eq!(value("write-fsync", "unverified_units"), Some(4.0));
        assert_eq!(value("write-fsync", "control_caught"), None);

        // Every control lost in every cut: nothing unverified, caught.
        let mut phases = Phases::new(&ctx);
        let mut tallies = cut_tallies(4, 1);
        let mut line = String::new();
        judge_cut(&prims, 0, &mut tallies, &mut phases, &mut line);
        assert!(tallies.iter().all(|t| t.unverified == 0), "{line}");
    }

    #[test]
    fn a_cut_that_did_not_mount_counts_its_units_lost_not_absent() {
        let t = tempfile::tempdir().unwrap();
        let flag = std::sync::atomic::AtomicBool::new(false);
        let ctx = RunContext::quiet(t.path(), &flag);
        let mut phases = Phases::new(&ctx);
        let prims = three();
        let checks: Vec<Vec<FileCheck>> = prims
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let d = t.path().join(p.name);
                std::fs::create_dir_all(&d).unwrap();
                (0..2)
                    .map(|i| {
                        p.prepare(&d, i, file_id(k, i)).unwrap();
                        p.act(&d, i, file_id(k, i)).unwrap()
                    })
                    .collect()
            })
            .collect();
        let mut tallies = vec![Tally::default(); 3];
        count_unrecovered(&checks, 0, &mut tallies, &mut phases);
        for t in &tallies {
            assert_eq!((t.counts.acked, t.counts.lost, t.unrecovered), (8, 8, 8));
        }
        assert_eq!(tallies[0].counts.violations(Promise::Durable), 8);
        let mut line = String::new();
        judge_cut(&prims, 0, &mut tallies, &mut phases, &mut line);
        assert!(
            tallies.iter().all(|t| t.unverified == 0),
            "lost, so not unverified: {line}"
        );
        let notes = phases.finish().notes.join("\n");
        assert!(
            notes.contains("UNRECOVERED: cut 1: the filesystem did not mount after the cut: its 24 acknowledged units count as lost"),
            "{notes}"
        );
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
        assert_eq!(
            s.phases(),
            [
                "recovery",
                "fsck",
                "write-fsync",
                primitives::FLUSH_CONTROL,
                primitives::CONTROL
            ]
        );
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
            (
                DurabilitySpec {
                    broken_control_cut: 4,
                    ..Default::default()
                },
                "broken_control_cut = 4 is beyond the 3 cuts",
            ),
        ] {
            assert!(s.validate().unwrap_err().0.contains(want), "{want}");
        }
        let shutdown = DurabilitySpec {
            method: Method::Shutdown,
            ..Default::default()
        };
        assert!(shutdown.exposes().contains("not a missing flush"));
        assert!(DurabilitySpec::default().exposes().contains("and a missing flush"));
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
