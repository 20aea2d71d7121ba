//! One repeat of one case: provision behind the guard, run the workload, tear down, and fill the
//! sample the runner commits.
//!
//! Invariant: the [`crate::provision::Mounted`] guard is dropped (undoing mount, loop device and
//! image) before [`run_slot`] returns, whatever happened.

use crate::config::Suite;
use crate::engine::RunContext;
use crate::host::path::PathFacts;
use crate::metric::{Measurement, MetricId, Role, Unit};
use crate::plan;
use crate::provision::{Provisioner, RunState};
use crate::store::{CaseAvailability, CaseRecord, NewSample};
use std::sync::atomic::{AtomicBool, Ordering};

/// How a repeat ended.
pub(super) enum SlotOutcome {
    /// It ran and tore down cleanly: each whole-repeat phase's wall time, in phase order (what
    /// a warm-up tells [`super::sizing::Sizing`]).
    Done(Vec<(String, std::time::Duration)>),
    /// It failed: why.
    Failed(String),
    /// SIGINT or SIGTERM stopped it.
    Interrupted,
}

/// The wall time of each phase of the whole repeat (not a rank's own), in phase order.
fn phase_walls(raw: &crate::metric::RawSample) -> Vec<(String, std::time::Duration)> {
    raw.phases
        .iter()
        .filter(|p| p.rank.is_none())
        .map(|p| (p.phase.clone(), p.wall))
        .collect()
}

/// Safe path component for a slot: letters, digits and `-` only.
pub(super) fn tag_for(slot_index: usize, variant: &str) -> String {
    let clean: String = variant
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("s{slot_index:03}-{clean}")
}

/// What the store keeps of a case: its identity, the full mkfs arguments, the workload's
/// parameters, and why it is unavailable.
pub(super) fn case_record(c: &plan::Case) -> CaseRecord {
    let mut mkfs_args = c.variant.fs().default_mkfs_args();
    mkfs_args.extend(c.variant.mkfs_args.iter().cloned());
    CaseRecord {
        case_id: c.id.0.clone(),
        variant: c.variant.name.clone(),
        fs_type: c.variant.fs_type.clone(),
        mkfs_args,
        mount_opts: c.variant.mount_opts.clone(),
        workload: c.workload.name.clone(),
        workload_kind: c.workload.kind.name().to_string(),
        workload_json: serde_json::to_string(&c.workload.kind).unwrap_or_default(),
        availability: match &c.unavailable {
            None => CaseAvailability::Available,
            Some(r) => CaseAvailability::Unavailable(r.clone()),
        },
    }
}

/// Which slot a repeat is: its path tag ([`tag_for`]), its index in the plan (what rank 0 tells
/// the other ranks) and the ranks' clock offsets.
pub(super) struct SlotAt<'a> {
    /// Safe path component.
    pub tag: String,
    /// Index into the plan's slots.
    pub index: usize,
    /// Every rank's clock against rank 0's (one entry alone).
    pub offsets: &'a [crate::comm::ClockOffset],
    /// The saved image it starts from and the path its image is saved to, if any
    /// (`--aged-from`, `--keep-aged`).
    pub images: super::aged::RepeatImages,
}

/// One repeat of a variant that runs under a guest kernel ([`crate::guest`]): QEMU boots, the
/// agent inside provisions and runs the workload through the engine, and the sample comes back.
fn run_guest_slot(
    state: &RunState,
    case: &plan::Case,
    suite: &Suite,
    tag: &str,
    interrupt: &AtomicBool,
    sample: &mut NewSample,
) -> SlotOutcome {
    use crate::guest::GuestError;
    match crate::guest::run_slot(
        state,
        &case.variant,
        &case.workload.kind,
        case.image_bytes,
        suite.policy.drop_caches,
        tag,
        interrupt,
    ) {
        Err(GuestError::Interrupted) => SlotOutcome::Interrupted,
        Err(_) if interrupt.load(Ordering::Relaxed) => SlotOutcome::Interrupted,
        Err(e) => SlotOutcome::Failed(e.to_string()),
        Ok(g) => {
            sample.device = Some("/dev/vda (guest)".into());
            sample.effective_mount_opts = g.effective_mount_opts;
            let walls = phase_walls(&g.raw);
            sample.absorb(g.raw);
            sample.measurements.push(g.boot);
            SlotOutcome::Done(walls)
        }
    }
}

/// Provisions, runs and tears down one repeat, filling `sample`; the workload runs in `memory`
/// when given (a guest variant's workload runs in the guest's own memory instead), on the ranks
/// of `cluster`.
#[allow(clippy::too_many_arguments)] // each is a distinct input of one repeat
pub(super) fn run_slot(
    cluster: &dyn crate::comm::cluster::Cluster,
    provisioner: &dyn Provisioner,
    state: &RunState,
    case: &plan::Case,
    suite: &Suite,
    at: &SlotAt,
    interrupt: &AtomicBool,
    memory: Option<&crate::cgroup::MemoryCgroup>,
    on_phase: &(dyn Fn(&str) + Sync),
    sample: &mut NewSample,
) -> SlotOutcome {
    if case.variant.kernel.is_some() {
        return run_guest_slot(state, case, suite, &at.tag, interrupt, sample);
    }
    let interrupted = || interrupt.load(Ordering::Relaxed);
    let provisioned = match &at.images.start {
        Some(image) => provisioner.provision_from(&case.variant, image, &at.tag),
        None => provisioner.provision(&case.variant, case.image_bytes, &at.tag),
    };
    let mut mounted = match provisioned {
        Ok(m) => m,
        Err(_) if interrupted() => return SlotOutcome::Interrupted,
        Err(e) => return SlotOutcome::Failed(format!("provisioning {}: {e}", case.variant.name)),
    };
    sample.device = mounted.device.clone();
    sample.effective_mount_opts = mounted.effective_opts.clone();
    sample.path = Some(path_facts(case, &mounted, memory, &mut sample.notes));
    // The quiesce gate: outside the timed phases and the CPU meters, which start in the engine.
    let mut quiesce = None;
    if let Some(dev) = &mounted.device {
        match super::quiesce::wait_idle(dev, &super::quiesce::Gate::default(), interrupt) {
            Ok(super::quiesce::Outcome::Interrupted) => {
                let _ = mounted.teardown();
                return SlotOutcome::Interrupted;
            }
            Ok(o) => quiesce = Some((o.waited(), o.note(dev))),
            Err(e) => quiesce = Some((None, Some(format!("quiesce: not waited: {e}")))),
        }
    }
    let ctx = RunContext {
        dir: &mounted.workdir,
        drop_caches: suite.policy.drop_caches,
        interrupt,
        sync: cluster.phase_sync(),
        on_phase,
        state: Some(state),
        fs: Some(case.variant.fs()),
        mkfs_args: &case.variant.mkfs_args,
        keep: at.images.keep.is_some(),
    };
    // The workload (and whatever it starts) runs in the memory cgroup; provisioning, the quiesce
    // gate and teardown do not.
    let oom_before = memory.and_then(|m| m.oom_kills());
    let entered = match memory.map(|m| m.enter()).transpose() {
        Ok(e) => e,
        Err(e) => {
            let _ = mounted.teardown();
            return SlotOutcome::Failed(e.to_string());
        }
    };
    // Alone, the workload in the slot's directory; with many ranks, every rank in its own.
    let result = cluster.run(&case.workload.kind, at.index, &ctx, at.offsets);
    drop(entered);
    if let (Some(m), Some(before)) = (memory, oom_before) {
        if let Some(after) = m.oom_kills().filter(|a| *a > before) {
            sample.notes.push(format!(
                "memory cgroup: the OOM killer ended {} process(es) during the workload (limit {} MiB): raise --memory",
                after - before,
                m.limit() >> 20
            ));
        }
    }
    let mut provision_notes = std::mem::take(&mut mounted.notes);
    let teardown = match (&at.images.keep, &result) {
        (Some(to), Ok(_)) => {
            let saved = mounted
                .save_image(to)
                .map_err(|e| e.to_string())
                .and_then(|()| super::aged::AgedImages::record(case, to).map_err(|e| e.to_string()));
            match saved {
                Ok(()) => {
                    provision_notes.push(format!("aged image saved to {}", to.display()));
                    Ok(())
                }
                Err(e) => Err(format!("saving the aged image to {}: {e}", to.display())),
            }
        }
        _ => mounted.teardown().map_err(|e| e.to_string()),
    };
    match result {
        Err(crate::engine::EngineError::Interrupted) => SlotOutcome::Interrupted,
        Err(_) if interrupted() => SlotOutcome::Interrupted,
        Err(e) => SlotOutcome::Failed(e.to_string()),
        Ok(raw) => {
            let walls = phase_walls(&raw);
            sample.absorb(raw);
            sample.notes.extend(provision_notes);
            sample.measurements.extend(sample.path.as_ref().and_then(ratio_row));
            if let Some((waited, note)) = quiesce {
                if let Some(w) = waited {
                    sample.measurements.push(Measurement {
                        phase: super::quiesce::PHASE.into(),
                        rank: None,
                        metric: MetricId::lower(super::quiesce::METRIC, Unit::Seconds).with_role(Role::Detail),
                        value: w.as_secs_f64(),
                    });
                }
                sample.notes.extend(note);
            }
            match teardown {
                Ok(()) => SlotOutcome::Done(walls),
                Err(e) => SlotOutcome::Failed(format!("teardown: {e}")),
            }
        }
    }
}

/// The I/O path as the kernel and the tools report it now that the filesystem is mounted
/// (untimed, before the quiesce gate): the sysfs and mountinfo facts (with the loop mode fsbench
/// asked for, so a buffered loop by request is no mismatch), the mkfs parameters read
/// back beside the ones the variant asked for, the memory cgroup's limit in force beside the
/// one asked, the on-disk ratio of the workload's kind of data on a compressing mount, and a
/// NoCOW variant's attribute, set on the workload's directory here and read back. What cannot
/// be read is a note, and the fact stays absent.
fn path_facts(
    case: &plan::Case,
    mounted: &crate::provision::Mounted,
    memory: Option<&crate::cgroup::MemoryCgroup>,
    notes: &mut Vec<String>,
) -> PathFacts {
    use crate::host::path;
    let v = &case.variant;
    let mut facts = PathFacts::read(mounted.device.as_deref(), &mounted.mountpoint);
    facts.loop_dio_asked = mounted.loop_dio_asked;
    let mut args = v.fs().default_mkfs_args();
    args.extend(v.mkfs_args.iter().cloned());
    facts.mkfs_asked = crate::parsers::mkfs_params::asked(&v.fs_type, &args);
    match crate::provision::readback::mkfs_params(&v.fs_type, mounted.device.as_deref(), &mounted.mountpoint) {
        Ok(p) => facts.mkfs_params = p.unwrap_or_default(),
        Err(e) => notes.push(format!("mkfs parameters: not read back: {e}")),
    }
    if let Some(m) = memory {
        facts.memory_asked = Some(m.limit());
        match m.limit_in_force() {
            Ok(l) => facts.memory_limit = Some(l),
            Err(e) => notes.push(format!("memory limit: not read back: {e}")),
        }
    }
    facts.page_reporting = crate::balloon::Reporting::read().map(|r| r.fact());
    match path::atomic_write_fact(&mounted.mountpoint) {
        Ok(units) => facts.atomic_write = units,
        Err(e) => notes.push(format!("atomic write units: not read back: {e}")),
    }
    probe_ratio(case, mounted, &mut facts, notes);
    if v.nocow {
        facts.nocow_asked = true;
        if let Err(e) = path::set_nocow(&mounted.workdir) {
            notes.push(format!(
                "NoCOW: FS_IOC_SETFLAGS on {} failed: {e}",
                mounted.workdir.display()
            ));
        }
        match path::nocow(&mounted.workdir) {
            Ok(n) => facts.nocow = Some(n),
            Err(e) => notes.push(format!("NoCOW: not read back: {e}")),
        }
    }
    facts
}

/// On a compressing mount, the on-disk ratio of 64 MiB of the workload's kind of data: the
/// statfs probe where the super options compress, `zfs get compressratio` on a zfs dataset
/// whose `compression` is not `off` (its FUSE mount shows no option); a probe that fails is a
/// note.
fn probe_ratio(case: &plan::Case, mounted: &crate::provision::Mounted, facts: &mut PathFacts, notes: &mut Vec<String>) {
    use crate::host::path;
    let statfs = facts.super_options.as_deref().is_some_and(path::compresses);
    let zfs = case.variant.fs_type == "zfs" && facts.mkfs_params.get("compression").is_some_and(|c| c != "off");
    if !statfs && !zfs {
        return;
    }
    let content = case.workload.kind.workload().content().unwrap_or_default();
    let mut data = vec![0u8; path::PROBE_BYTES];
    content.fill(&mut data, 0x7072_6f62);
    let ratio = if zfs {
        crate::provision::readback::zfs_probe_ratio(&mounted.mountpoint, &data).map_err(|e| e.to_string())
    } else {
        path::on_disk_ratio(&mounted.mountpoint, &data).map_err(|e| e.to_string())
    };
    match ratio {
        Ok(r) => {
            facts.on_disk_ratio = Some(r);
            facts.probe_content = Some(content.as_str().to_string());
        }
        Err(e) => notes.push(format!("compression probe: not measured: {e}")),
    }
}

/// The detail row of the compression probe's ratio, if it measured one.
fn ratio_row(facts: &PathFacts) -> Option<Measurement> {
    Some(Measurement {
        phase: PATH_PHASE.into(),
        rank: None,
        metric: MetricId::higher(ON_DISK_RATIO, Unit::Ratio).with_role(Role::Detail),
        value: facts.on_disk_ratio?,
    })
}

/// The row of a sample's I/O-path figures (a detail row of its own).
pub const PATH_PHASE: &str = "path";
/// The compression probe's on-disk ratio (logical over allocated bytes), a metric of
/// [`PATH_PHASE`].
pub const ON_DISK_RATIO: &str = "on_disk_ratio";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_tags_are_safe_path_components() {
        assert_eq!(tag_for(7, "btrfs:compress=lzo"), "s007-btrfs-compress-lzo");
        assert_eq!(tag_for(0, "../x"), "s000----x");
    }
}
