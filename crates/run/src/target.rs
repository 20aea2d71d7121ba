//! Where the filesystems of a run live: [`Target`], one enum for loop images in a scratch folder,
//! a confirmed block device, or an existing directory. Everything that depends on the kind of
//! target is a method here, so a new kind (a guest kernel, MPI ranks on a shared filesystem) is
//! one new arm: its provisioner, its space check, whether the raw-device baseline applies, which
//! filesystem variants it can offer, what `plan` says about it, and the cleanup offer.
//!
//! Invariants:
//! - Nothing here writes to a device before [`Target::confirm`] accepted it (provision::safety).
//! - Every target keeps its run folder (state file, mountpoints) in the scratch folder and
//!   registers it (provision::state), so `fsbench cleanup` finds what a killed run of any
//!   target left.
//! - `--wipe` without `--device` is kept until [`Target::confirm`] so it is refused at the same
//!   point as every other device check (after `plan` has printed the plan).

use super::RunError;
use super::RunOptions;
use crate::config::{FsVariant, Suite};
use crate::plan::{self, Case, Plan};
use crate::policy::LoopIo;
use crate::provision::{
    self, safety::DeviceInfo, DeviceProvisioner, DirProvisioner, ImageProvisioner, Provisioner, RunState,
};
use crate::units::Bytes;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the filesystems of a run are made.
#[derive(Clone, Debug)]
pub enum Target {
    /// Sparse images in a private run folder under `scratch`, attached as loop devices (tmpfs
    /// needs none).
    Images {
        /// Scratch folder.
        scratch: PathBuf,
        /// A `--wipe` given without `--device`: refused by [`Target::confirm`].
        stray_wipe: Option<PathBuf>,
    },
    /// A real block device the user named (`--device`) and confirmed (`--wipe`, the same path):
    /// a fresh filesystem on it for every repeat, mounted in the run folder under `scratch`.
    Device {
        /// The device as the user named it.
        device: PathBuf,
        /// The confirmation as given.
        wipe: Option<PathBuf>,
        /// Scratch folder (run folder, mountpoints).
        scratch: PathBuf,
        /// Filled by [`Target::confirm`].
        confirmed: Option<Box<DeviceInfo>>,
    },
    /// An existing directory (`--dir`): no mkfs, no mount; one variant named after the type of
    /// the filesystem holding it.
    Dir {
        /// The directory.
        dir: PathBuf,
        /// Scratch folder (run folder with the state file).
        scratch: PathBuf,
        /// A `--wipe` given without `--device`: refused by [`Target::confirm`].
        stray_wipe: Option<PathBuf>,
    },
}

/// The smallest device that holds every case that will run (bytes, and inodes where mkfs fixes
/// their count by the device's size), in bytes.
fn largest_image(plan: &Plan) -> u64 {
    plan.cases
        .iter()
        .filter(|c| c.unavailable.is_none())
        .map(|c| c.variant.fs().device_bytes(&c.estimate.usage))
        .max()
        .unwrap_or(0)
}

/// Whether any case that will run puts a filesystem on a block device (anything but tmpfs) of
/// the host: only then is there a raw device to measure (a guest's disk is its own virtio image,
/// which the host's loop baseline does not describe).
pub fn needs_block_device(plan: &Plan) -> bool {
    plan.cases
        .iter()
        .any(|c| c.unavailable.is_none() && !c.variant.fs().in_memory() && c.variant.kernel.is_none())
}

impl Target {
    /// The target a `run` or `plan` command line names (nothing is checked yet).
    pub fn from_args(a: &RunOptions) -> Target {
        let scratch = a.scratch.clone();
        match (&a.dir, &a.device) {
            (Some(dir), _) => Target::Dir {
                dir: dir.clone(),
                scratch,
                stray_wipe: a.wipe.clone(),
            },
            (None, Some(device)) => Target::Device {
                device: device.clone(),
                wipe: a.wipe.clone(),
                scratch,
                confirmed: None,
            },
            (None, None) => Target::Images {
                scratch,
                stray_wipe: a.wipe.clone(),
            },
        }
    }

    /// The target of a command line and its suite: a suite's `[target] device` (confirmed in
    /// the file by an identical `wipe`) is a device target as if named with `--device X --wipe
    /// X`; it must agree with the command line, which may not name another target. Buffered
    /// loop devices (`--loop-io buffered`, `[run] loop_io`) need loop images.
    pub fn for_suite(a: &RunOptions, suite: &Suite) -> Result<Target, RunError> {
        let target = Target::suite_device(a, suite)?;
        match (&target, suite.loop_io) {
            (Target::Device { device, .. }, LoopIo::Buffered) => Err(RunError::Usage(format!(
                "loop_io = \"buffered\" (--loop-io) sets the loop devices over fsbench's images, and device {} has none: drop it or run on loop images",
                device.display()
            ))),
            (Target::Dir { dir, .. }, LoopIo::Buffered) => Err(RunError::Usage(format!(
                "loop_io = \"buffered\" (--loop-io) sets the loop devices over fsbench's images, and --dir {} has none: drop one of them",
                dir.display()
            ))),
            _ => Ok(target),
        }
    }

    /// [`Target::for_suite`] before the loop mode is checked: the command line's target, or
    /// the suite's `[target] device`.
    fn suite_device(a: &RunOptions, suite: &Suite) -> Result<Target, RunError> {
        let target = Target::from_args(a);
        let Some(d) = &suite.device else { return Ok(target) };
        let differs = |what: &str| {
            Err(RunError::Usage(format!(
                "the suite's [target] device = \"{}\" and {what} name two targets: remove one",
                d.display()
            )))
        };
        match target {
            Target::Images { scratch, stray_wipe } => match stray_wipe {
                Some(w) if w != *d => differs(&format!("--wipe {}", w.display())),
                _ => Ok(Target::Device {
                    device: d.clone(),
                    wipe: Some(d.clone()),
                    scratch,
                    confirmed: None,
                }),
            },
            Target::Device { device, .. } if device != *d => differs(&format!("--device {}", device.display())),
            t @ Target::Device { .. } => Ok(t),
            Target::Dir { dir, .. } => differs(&format!("--dir {}", dir.display())),
        }
    }

    /// The scratch folder that holds the run folder.
    pub fn scratch(&self) -> &Path {
        match self {
            Target::Images { scratch, .. } | Target::Device { scratch, .. } | Target::Dir { scratch, .. } => scratch,
        }
    }

    /// Whether the target replaces the suite's filesystem variants (an existing directory has
    /// exactly one), which makes it a suite option `--resume` refuses.
    pub fn replaces_variants(&self) -> bool {
        matches!(self, Target::Dir { .. })
    }

    /// Fits the suite to the target: an existing directory must exist and becomes the only
    /// variant, named after its filesystem type.
    pub fn fit_suite(&self, suite: &mut Suite) -> Result<(), RunError> {
        if let Target::Dir { dir, .. } = self {
            if !dir.is_dir() {
                return Err(RunError::Usage(format!(
                    "--dir {}: not an existing directory",
                    dir.display()
                )));
            }
            if let Some(w) = suite.workloads.iter().find(|w| w.kind.workload().needs_block_device()) {
                return Err(RunError::Usage(format!(
                    "workload `{}` ({}) needs a filesystem fsbench makes on a loop image or --device: it cannot unmount, check or cut the power of an existing directory; drop --dir {}",
                    w.name,
                    w.kind.name(),
                    dir.display()
                )));
            }
            let fs_type = provision::dir_fs_type(dir);
            suite.variants = vec![FsVariant::with_type(fs_type.clone(), fs_type)];
        }
        Ok(())
    }

    /// Whether this target can make `v` here; `Err` says why not and what would fix it.
    pub fn availability(&self, v: &FsVariant) -> Result<(), crate::engine::Unavailable> {
        if v.kernel.is_some() {
            // A guest variant needs QEMU and a guest kernel, not the host's driver.
            return match self {
                Target::Images { .. } => crate::guest::availability(v),
                Target::Device { .. } | Target::Dir { .. } => {
                    Err("a guest kernel runs on loop images only (not with --device or --dir)".into())
                }
            };
        }
        match self {
            Target::Dir { .. } => Ok(()),
            Target::Images { .. } | Target::Device { .. } => provision::variant_availability(v),
        }
    }

    /// Checks the device named with `--device` and its `--wipe` confirmation (every check runs
    /// before anything is written); refuses a `--wipe` without `--device`.
    pub fn confirm(&mut self) -> Result<(), RunError> {
        match self {
            Target::Images {
                stray_wipe: Some(w), ..
            }
            | Target::Dir {
                stray_wipe: Some(w), ..
            } => Err(RunError::Usage(format!(
                "--wipe {} confirms a --device; give --device {} too",
                w.display(),
                w.display()
            ))),
            Target::Device {
                device,
                wipe,
                confirmed,
                ..
            } => {
                *confirmed = Some(Box::new(
                    provision::safety::confirm(device, wipe.as_deref()).map_err(|e| RunError::Usage(e.to_string()))?,
                ));
                Ok(())
            }
            Target::Images { .. } | Target::Dir { .. } => Ok(()),
        }
    }

    /// Refuses a plan the target (or RAM, for tmpfs) cannot hold: the device's size, the free
    /// space of the directory or of the scratch folder (one image at a time).
    pub fn check_space(&self, plan: &Plan) -> Result<(), RunError> {
        self.check_fixed_sizes(plan)?;
        let (where_, need) = match self {
            Target::Device { device, .. } => {
                let need = largest_image(plan);
                let size = provision::safety::inspect(device).map(|i| i.size_bytes).unwrap_or(0);
                if need > size {
                    return Err(RunError::Usage(format!(
                        "{} holds {} but the workloads need {}: use a larger device or --scale",
                        device.display(),
                        Bytes(size).human(),
                        Bytes(need).human()
                    )));
                }
                return Ok(());
            }
            Target::Dir { dir, .. } => (dir.as_path(), plan::need_in_dir(plan, &provision::dir_fs_type(dir))),
            Target::Images { scratch, .. } => (scratch.as_path(), plan.peak_scratch_bytes),
        };
        if let Some(free) = provision::free_bytes(where_) {
            if need > free {
                return Err(RunError::Usage(format!(
                    "{} has {} free but the plan needs {} at once: free some space, choose another folder with --scratch, or shrink the run with --scale",
                    where_.display(),
                    Bytes(free).human(),
                    Bytes(need).human()
                )));
            }
        }
        let tmpfs_need = match self {
            // A device returned above; an existing directory makes no tmpfs.
            Target::Dir { .. } | Target::Device { .. } => 0,
            Target::Images { .. } => plan
                .cases
                .iter()
                .filter(|c| c.unavailable.is_none() && c.variant.fs().in_memory())
                .map(|c| c.image_bytes)
                .max()
                .unwrap_or(0),
        };
        if let Some(avail) = crate::sysinfo::mem_available() {
            if tmpfs_need > avail {
                return Err(RunError::Usage(format!(
                    "tmpfs needs {} of RAM but only {} is available: use --scale to shrink the run",
                    Bytes(tmpfs_need).human(),
                    Bytes(avail).human()
                )));
            }
        }
        Ok(())
    }

    /// Refuses a case whose workload `--scale` cannot shrink ([`crate::engine::Workload::fixed_size`]:
    /// a replayed trace) when what it holds does not fit where it would run: the variant's
    /// `image_size`, the scratch folder's free space (an image sized from it), the device, or
    /// the directory's free space. The message names the case, what it holds, both sizes and
    /// what to do.
    fn check_fixed_sizes(&self, plan: &Plan) -> Result<(), RunError> {
        for c in plan.cases.iter().filter(|c| c.unavailable.is_none()) {
            let Some(what) = c.workload.kind.workload().fixed_size() else {
                continue;
            };
            let (need, room, place, remedy) = match self {
                Target::Images { .. } if c.variant.fs().in_memory() => continue,
                Target::Images { scratch, .. } => match c.variant.image_size {
                    Some(size) => (
                        c.estimate.usage.bytes,
                        Some(size.get()),
                        "its image_size".to_string(),
                        format!(
                            "raise image_size to at least {}, or remove it to size the image from the trace",
                            Bytes(c.estimate.image_bytes).human()
                        ),
                    ),
                    None => (
                        c.estimate.scratch_bytes,
                        provision::free_bytes(scratch),
                        format!("the free space of {}", scratch.display()),
                        "free space there or choose a larger folder with --scratch".to_string(),
                    ),
                },
                Target::Device { device, .. } => (
                    c.variant.fs().device_bytes(&c.estimate.usage),
                    provision::safety::inspect(device).map(|i| i.size_bytes).ok(),
                    format!("the device {}", device.display()),
                    "use a larger --device".to_string(),
                ),
                Target::Dir { dir, .. } => (
                    fsbench_core::fstype::FsType::of(&provision::dir_fs_type(dir))
                        .estimate(&c.footprint)
                        .bytes,
                    provision::free_bytes(dir),
                    format!("the free space of {}", dir.display()),
                    "free space there or choose another --dir".to_string(),
                ),
            };
            if let Some(room) = room.filter(|&r| need > r) {
                return Err(RunError::Usage(format!(
                    "{} on {}: {what}; it needs {} on {}, more than {place} ({}). A trace is replayed as recorded (--scale does not shrink it): {remedy}, or record a smaller run of the program",
                    c.workload.name,
                    c.variant.name,
                    Bytes(need).human(),
                    c.variant.fs_type,
                    Bytes(room).human()
                )));
            }
        }
        Ok(())
    }

    /// The provisioner of one run, keeping its undo steps in `state`, its loop devices (loop
    /// images only) doing I/O as `loop_io` says. A device must have been confirmed first.
    pub fn provisioner(&self, state: RunState, loop_io: LoopIo) -> Result<Box<dyn Provisioner>, RunError> {
        Ok(match self {
            Target::Dir { dir, .. } => Box::new(DirProvisioner::new(dir.clone(), state)?),
            Target::Device { confirmed, device, .. } => match confirmed {
                Some(info) => Box::new(DeviceProvisioner::new((**info).clone(), state)),
                None => {
                    return Err(RunError::Usage(format!(
                        "internal error: --device {} used before it was confirmed",
                        device.display()
                    )))
                }
            },
            Target::Images { .. } => Box::new(ImageProvisioner::new(state).with_loop_io(loop_io)),
        })
    }

    /// Whether `plan` announces a raw-device baseline on this target (an existing directory
    /// never has one fsbench may overwrite).
    pub fn plans_baseline(&self, plan: &Plan) -> bool {
        !matches!(self, Target::Dir { .. }) && needs_block_device(plan)
    }

    /// The `image` column of `plan` for a case.
    pub fn image_label(&self, c: &Case) -> String {
        match self {
            Target::Dir { .. } => "-".to_string(),
            Target::Device { .. } => "device".to_string(),
            Target::Images { .. } if c.variant.fs().in_memory() => {
                format!("{} RAM", Bytes(c.image_bytes).human())
            }
            Target::Images { .. } => Bytes(c.image_bytes).human(),
        }
    }

    /// The lines `plan` ends with: the baseline, where the filesystems go, and for a device
    /// what would be destroyed (shown before saying whether it may be).
    pub fn write_plan_lines(&self, plan: &Plan, out: &mut dyn Write) -> std::io::Result<()> {
        if self.plans_baseline(plan) {
            writeln!(
                out,
                "Before the first case: raw-device baseline, a sequential write and reads (the fastest of O_DIRECT \
                 and buffered-readahead passes) of {} of {}",
                Bytes(crate::baseline::DEFAULT_BYTES).human(),
                match self {
                    Target::Device { .. } => "the device",
                    Target::Images { .. } | Target::Dir { .. } => "a loop image (less if scratch space is short)",
                }
            )?;
        }
        match self {
            Target::Dir { dir, .. } => {
                writeln!(out, "Target: existing directory {} (no mkfs, no mount)", dir.display())?
            }
            Target::Device { device, .. } => match provision::safety::inspect(device) {
                Ok(i) => {
                    writeln!(
                        out,
                        "Device: {} = /dev/{} ({}, {}); by-id: {}; EVERYTHING ON IT WILL BE DESTROYED",
                        device.display(),
                        i.name,
                        i.model,
                        Bytes(i.size_bytes).human(),
                        if i.by_id.is_empty() {
                            "none".to_string()
                        } else {
                            i.by_id.join(", ")
                        }
                    )?;
                    if let Some(m) = i.made_by_fsbench {
                        writeln!(
                            out,
                            "It holds the {} filesystem fsbench made there (UUID {}), so the same confirmation is accepted again",
                            m.fs_type, m.uuid
                        )?;
                    }
                }
                Err(e) => writeln!(out, "Device: {e}")?,
            },
            Target::Images { scratch, .. } => writeln!(
                out,
                "Scratch: {} needs {} at once (one image at a time); {} free",
                scratch.display(),
                Bytes(plan.peak_scratch_bytes).human(),
                provision::free_bytes(scratch)
                    .map(|b| Bytes(b).human())
                    .unwrap_or_else(|| "unknown".into())
            )?,
        }
        Ok(())
    }

    /// Whether repeats on this target can save their filesystem's image and start from a copy
    /// of a saved one (`--keep-aged`, `--aged-from`): loop images only; `Err` says why not.
    pub fn keeps_images(&self) -> Result<(), NoImages> {
        match self {
            Target::Images { .. } => Ok(()),
            Target::Device { device, .. } => Err(NoImages {
                flag: "--device",
                path: device.clone(),
            }),
            Target::Dir { dir, .. } => Err(NoImages {
                flag: "--dir",
                path: dir.clone(),
            }),
        }
    }

    /// When killed runs left mounts, loop devices or images (in this scratch folder or, through
    /// the run registry, anywhere): the line that says so and how to undo exactly those.
    pub fn cleanup_offer(&self) -> Option<String> {
        let dead = provision::dead_runs(self.scratch());
        (!dead.is_empty()).then(|| {
            let folders: Vec<String> = dead.iter().map(|d| d.display().to_string()).collect();
            format!(
                "{} killed run(s) left resources (mounts, loop devices or images) in {}: `fsbench cleanup` undoes exactly those",
                dead.len(),
                folders.join(", ")
            )
        })
    }
}

/// A target without loop images cannot save a repeat's image or start from a saved one
/// ([`Target::keeps_images`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{flag} {} has no image to save or start from: run on loop images", path.display())]
pub struct NoImages {
    /// The option that named the target (`--device`, `--dir`).
    pub flag: &'static str,
    /// The device or directory.
    pub path: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RunOptions;

    /// The target of `fsbench run ARGS…`.
    fn target(args: &[&str]) -> Target {
        Target::from_args(&options(args))
    }

    /// The options of `fsbench run ARGS…` (pairs of `--device`, `--dir`, `--scratch`,
    /// `--wipe` and a path), as the edge builds them.
    fn options(args: &[&str]) -> RunOptions {
        let mut o = RunOptions {
            scratch: crate::options::DEFAULT_SCRATCH.into(),
            ..RunOptions::default()
        };
        for pair in args.chunks(2) {
            let path = Some(PathBuf::from(pair[1]));
            match pair[0] {
                "--device" => o.device = path,
                "--dir" => o.dir = path,
                "--wipe" => o.wipe = path,
                "--scratch" => o.scratch = pair[1].into(),
                other => panic!("an option these tests do not use: {other}"),
            }
        }
        o
    }

    /// Only loop images can save an image or start from one: a device (also one a suite's
    /// `[target]` names, which clap's conflicts cannot see) and a directory are refused.
    #[test]
    fn only_loop_images_keep_images() {
        assert!(target(&[]).keeps_images().is_ok());
        let e = target(&["--device", "/dev/x"]).keeps_images().unwrap_err().to_string();
        assert!(e.contains("--device /dev/x has no image"), "{e}");
        let e = target(&["--dir", "/tmp"]).keeps_images().unwrap_err().to_string();
        assert!(e.contains("--dir /tmp has no image"), "{e}");
    }

    #[test]
    fn the_command_line_names_one_target_and_a_stray_wipe_is_refused_at_confirm() {
        assert!(matches!(target(&[]), Target::Images { .. }));
        assert!(matches!(target(&["--dir", "/tmp"]), Target::Dir { .. }));
        assert!(matches!(target(&["--device", "/dev/x"]), Target::Device { .. }));
        assert!(target(&["--dir", "/tmp"]).replaces_variants());
        assert!(!target(&["--device", "/dev/x"]).replaces_variants());
        assert_eq!(target(&["--scratch", "/s"]).scratch(), Path::new("/s"));
        for args in [&["--wipe", "/dev/x"][..], &["--dir", "/tmp", "--wipe", "/dev/x"]] {
            let e = target(args).confirm().expect_err("a --wipe without --device");
            assert!(e.to_string().contains("confirms a --device"), "{e}");
        }
        assert!(target(&[]).confirm().is_ok() && target(&["--dir", "/tmp"]).confirm().is_ok());
        let e = target(&["--device", "/dev/x"]).confirm().expect_err("unconfirmed");
        assert!(e.is_usage() && e.to_string().contains("--wipe /dev/x"), "{e}");
    }

    /// Buffered loop devices need loop images: `--dir` or a device is a usage error naming both.
    #[test]
    fn buffered_loops_are_refused_without_loop_images() {
        let suite = crate::config::load_preset("quick", &Default::default()).unwrap();
        let buffered = Suite {
            loop_io: LoopIo::Buffered,
            ..suite.clone()
        };
        assert!(matches!(
            Target::for_suite(&options(&[]), &buffered),
            Ok(Target::Images { .. })
        ));
        for args in [&["--dir", "/tmp"][..], &["--device", "/dev/x"]] {
            assert!(Target::for_suite(&options(args), &suite).is_ok(), "{args:?}");
            let e = Target::for_suite(&options(args), &buffered).expect_err("no loop images");
            assert!(
                e.is_usage() && e.to_string().contains("loop_io = \"buffered\"") && e.to_string().contains(args[1]),
                "{e}"
            );
        }
    }

    #[test]
    fn an_unconfirmed_device_has_no_provisioner() {
        let t = target(&["--device", "/dev/x"]);
        let dir = tempfile::tempdir().unwrap();
        let state = RunState::create(dir.path()).unwrap();
        assert!(t.provisioner(state.clone(), LoopIo::Direct).is_err());
        state.finish();
    }
}
