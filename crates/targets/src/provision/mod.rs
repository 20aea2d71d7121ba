//! Provisioning: turning a filesystem variant into a mounted, empty directory, and undoing it.
//!
//! A [`Provisioner`] makes a [`Mounted`] for one repeat. `Mounted` is a guard holding an undo
//! stack ([`crate::undo::Step`]s): every resource (image file, loop device, mount, directory) is pushed the
//! moment it exists, so a failure half-way through provisioning, an error in the workload, a
//! panic (unwinding) or SIGINT/SIGTERM (the runner returns normally after polling the flag) all
//! end in `Drop`, which undoes the stack in reverse order. Every push and pop is mirrored in the
//! run's on-disk state file ([`state`]) so `fsbench cleanup` can undo a run that was SIGKILLed.
//!
//! Safety rules (doc/architecture.md, "Safety"): fsbench only runs mkfs on loop devices attached to image
//! files it created in its own run folder; a loop device is detached only if its backing file is
//! still that image; a mount is removed only if /proc/mounts still shows it on that device.
//! Loop devices are always allocated with `losetup --find` (other processes may hold some).
//!
//! [`Provisioner::raw_device`] hands the raw-device baseline ([`crate::baseline`]) the block
//! device under the target before the first case: for loop images a loop device over a fresh
//! image attached exactly like the filesystems' (same code, same guard and state file), for
//! `--device` the confirmed device itself, for `--dir` nothing.
//!
//! Mounting goes through util-linux `mount(8)`, which turns option strings such as `noatime`
//! into mount flags and passes the rest to the filesystem; unmounting uses umount(2) directly.
//! References: losetup(8), mount(8), mkfs.ext4(8) (`-E lazy_itable_init=0,lazy_journal_init=0`
//! so no background thread initialises inode tables during the first minutes), mkfs.xfs(8)
//! (300 MB minimum), mkfs.btrfs(8) (114 MB minimum without `--mixed`).

use crate::config::FsVariant;
use crate::engine::child::{self, ChildError, Sink, Watch};
use crate::engine::Unavailable;
use crate::host::{install_hint, mount_entry, unescape_mount_field};
use crate::policy::LoopIo;
use crate::undo::{Detach, RemoveDir, RemoveFile, Step, Unmount};
use std::path::{Path, PathBuf};
use std::process::Command;

pub mod image;
pub mod made;
pub mod readback;
pub mod safety;
pub mod state;
pub mod zfs;

pub use state::{cleanup_leftovers, dead_runs, CleanupReport, RunState};

/// Why a filesystem could not be provisioned or removed.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    /// An external tool (losetup, mkfs.*, mount) failed; `stderr` is its last lines.
    #[error("`{command}` failed ({status}): {stderr}")]
    Tool {
        /// The command line.
        command: String,
        /// Exit status description.
        status: String,
        /// What it printed on stderr (trimmed).
        stderr: String,
    },
    /// A tool is not installed.
    #[error("`{tool}` is not installed: {hint}")]
    MissingTool {
        /// Program name.
        tool: String,
        /// What to install.
        hint: String,
    },
    /// A file operation failed.
    #[error("{what}: {source}")]
    Io {
        /// Operation and path.
        what: String,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// The variant cannot be provided on this machine.
    #[error("{0}")]
    Unavailable(String),
    /// A tool that reads a filesystem's parameters back printed something fsbench cannot read.
    #[error("reading back {what}: {source}")]
    ReadBack {
        /// What was read (`mkfs parameters`, `the compression ratio`).
        what: &'static str,
        /// Why its output is unreadable.
        #[source]
        source: crate::parsers::ParseError,
    },
    /// A system call on the machine failed (an unmount).
    #[error(transparent)]
    Host(#[from] crate::host::HostError),
    /// Taking back a resource failed.
    #[error(transparent)]
    Undo(#[from] crate::undo::UndoError),
}

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ProvisionError {
    let what = what.into();
    move |source| ProvisionError::Io { what, source }
}

/// Runs a command to its end (not interruptible: a half-made filesystem or mount is worse than
/// a short wait), returning its stdout, or a [`ProvisionError::Tool`] with its stderr.
pub fn run_tool(program: &str, args: &[String], envs: &[(&str, &str)]) -> Result<String, ProvisionError> {
    let command = std::iter::once(program.to_string())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    let mut cmd = Command::new(program);
    cmd.args(args).envs(envs.iter().copied());
    let out = child::run(&mut cmd, Sink::Capture, Sink::Capture, Watch::default()).map_err(|e| match e {
        ChildError::Spawn(e) if e.kind() == std::io::ErrorKind::NotFound => ProvisionError::MissingTool {
            tool: program.to_string(),
            hint: install_hint(program),
        },
        ChildError::Spawn(e) | ChildError::Io(e) => ProvisionError::Io {
            what: format!("run {command}"),
            source: e,
        },
        other => ProvisionError::Io {
            what: format!("run {command}"),
            source: std::io::Error::other(other.to_string()),
        },
    })?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        let tail: Vec<&str> = out.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = tail[tail.len().saturating_sub(3)..].join(" / ");
        Err(ProvisionError::Tool {
            command,
            status: out.status.to_string(),
            stderr: tail,
        })
    }
}

/// Whether type `name` (from the [`crate::fstype`] table) can be made and mounted here; `Err` says why not and what would fix it.
pub fn availability(name: &str) -> Result<(), Unavailable> {
    type_availability(name, crate::fstype::FsType::of(name))
}

/// [`availability`] of a variant's type, from the table row it was resolved to when read.
pub fn variant_availability(variant: &FsVariant) -> Result<(), Unavailable> {
    type_availability(&variant.fs_type, variant.fs())
}

/// [`availability`] of type `name` whose table row is `t`.
fn type_availability(name: &str, t: &crate::fstype::FsType) -> Result<(), Unavailable> {
    use crate::fstype::Backing;
    use crate::host::{find_tool, is_root, kernel_filesystems};
    if !is_root() {
        return Err("needs root (loop devices, mkfs and mount); run as root, or benchmark an existing directory with --dir PATH".into());
    }
    if t.backing == Backing::Pool {
        return zfs::availability();
    }
    let probe = if t.kernel.is_empty() { name } else { t.kernel };
    let in_kernel = kernel_filesystems().iter().any(|k| k == probe);
    if name == "reiser4" && !in_kernel {
        return Err("never merged into Linux; needs a patched kernel: name one with kernel = \"/path/to/bzImage\" in the suite's [[fs]] (src/guest)".into());
    }
    let modules_possible = std::path::Path::new("/proc/modules").exists();
    if !in_kernel && !modules_possible {
        return Err(Unavailable(format!(
            "the running kernel has no {name} driver (not in /proc/filesystems) and cannot load modules"
        )));
    }
    if t.in_memory() {
        return Ok(());
    }
    let mkfs = t.mkfs_program(name);
    if find_tool(&mkfs).is_none() {
        return Err(Unavailable(format!(
            "`{mkfs}` is not installed; {}",
            install_hint(&mkfs)
        )));
    }
    if let Backing::Fuse { helper } = t.backing {
        if find_tool(helper).is_none() {
            return Err(Unavailable(format!(
                "`{helper}` is not installed; {}",
                install_hint(helper)
            )));
        }
    }
    if find_tool("losetup").is_none() {
        return Err(Unavailable(format!(
            "`losetup` is not installed; {}",
            install_hint("losetup")
        )));
    }
    Ok(())
}

/// The workload's folder at the root of every filesystem fsbench mounts.
const WORK_DIR: &str = "fsbench-work";

/// A mounted filesystem (or work directory) for one repeat; undoes everything on drop.
pub struct Mounted {
    /// An empty directory on the filesystem under test, for the workload.
    pub workdir: PathBuf,
    /// The mountpoint (equal to the parent of `workdir` for mounts).
    pub mountpoint: PathBuf,
    /// The block device, for loop-backed filesystems.
    pub device: Option<String>,
    /// Mount options as /proc/mounts reports them.
    pub effective_opts: Option<String>,
    /// For a loop device fsbench attached: whether direct I/O on its image was asked for
    /// (`false`: buffered on purpose, [`crate::policy::LoopIo::Buffered`]); `None` without one.
    pub loop_dio_asked: Option<bool>,
    /// What a reader of the results must know about how this filesystem was provided (a FUSE
    /// ZFS, say); the runner adds them to the sample's notes.
    pub notes: Vec<String>,
    /// The loop image under the filesystem and the index of its `RemoveFile` step in `undo`
    /// (what [`Mounted::save_image`] copies once the steps above it are undone).
    image: Option<(PathBuf, usize)>,
    undo: Vec<Box<dyn Step>>,
    state: RunState,
    /// Held while the guard lives and released after its undo steps (the zfs lock).
    hold: Vec<Box<dyn std::any::Any + Send>>,
}

impl Mounted {
    fn new(state: RunState, mountpoint: PathBuf) -> Self {
        Mounted {
            workdir: mountpoint.clone(),
            mountpoint,
            device: None,
            effective_opts: None,
            loop_dio_asked: None,
            notes: Vec::new(),
            image: None,
            undo: Vec::new(),
            state,
            hold: Vec::new(),
        }
    }

    /// Creates the mountpoint folder `mnt` and a guard that already knows to remove it.
    fn with_mountpoint(state: RunState, mnt: PathBuf) -> Result<Self, ProvisionError> {
        let mut m = Mounted::new(state, mnt.clone());
        std::fs::create_dir(&mnt).map_err(io_err(format!("create {}", mnt.display())))?;
        m.push(RemoveDir {
            path: mnt,
            recursive: false,
        });
        Ok(m)
    }

    /// Once mounted: records the options the kernel applied and makes the empty work folder.
    fn ready(mut self) -> Result<Self, ProvisionError> {
        self.effective_opts = mount_entry(&self.mountpoint).map(|(_, _, o)| o);
        let work = self.mountpoint.join(WORK_DIR);
        std::fs::create_dir(&work).map_err(io_err(format!("create {}", work.display())))?;
        self.workdir = work;
        Ok(self)
    }

    /// Records that the loop image `image` now exists: its removal is an undo step like any
    /// other, and [`Mounted::save_image`] knows where it sits in the stack.
    fn push_image(&mut self, image: &Path) {
        self.push(RemoveFile {
            path: image.to_path_buf(),
        });
        self.image = Some((image.to_path_buf(), self.undo.len() - 1));
    }

    /// Records that a resource now exists (in memory and in the state file).
    fn push(&mut self, u: impl Step) {
        self.state.push(&u);
        self.undo.push(Box::new(u));
    }

    /// Undoes everything now, reporting the first error (drop does the same, silently).
    pub fn teardown(mut self) -> Result<(), ProvisionError> {
        self.undo_all()
    }

    fn undo_all(&mut self) -> Result<(), ProvisionError> {
        self.undo_down_to(0)
    }

    /// Undoes the steps above the first `keep` of the stack, newest first, reporting the first
    /// error (a step that failed stays in the state file for `fsbench cleanup`).
    fn undo_down_to(&mut self, keep: usize) -> Result<(), ProvisionError> {
        let mut first = None;
        while self.undo.len() > keep {
            let Some(u) = self.undo.pop() else { break };
            match u.apply() {
                Ok(()) => self.state.pop(u.as_ref()),
                Err(e) => {
                    // Keep it in the state file so `fsbench cleanup` can try again.
                    first.get_or_insert(e.into());
                }
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Err(e) = self.undo_all() {
            eprintln!("fsbench: cleanup incomplete: {e}; run `fsbench cleanup`");
        }
    }
}

/// Makes a [`Mounted`] for one repeat of a variant.
pub trait Provisioner {
    /// Provisions `variant` with an image (or tmpfs) of `image_bytes`; `tag` names the repeat
    /// in paths (safe characters only).
    fn provision(&self, variant: &FsVariant, image_bytes: u64, tag: &str) -> Result<Mounted, ProvisionError>;
    /// One line describing the target for the session record.
    fn describe(&self) -> String;
    /// The raw block device under this target, for the raw-device baseline
    /// ([`crate::baseline`]), with at most `max_bytes` (from offset 0) that may be overwritten;
    /// `Ok(None)` when the target has no block device fsbench owns (an existing directory).
    fn raw_device(&self, max_bytes: u64) -> Result<Option<RawDevice>, ProvisionError>;
    /// Provisions `variant` from a copy of the filesystem image `image` (made for this repeat,
    /// so `image` itself is never written) instead of a fresh mkfs; the work folder may hold
    /// what the image holds. Only loop images can; other targets refuse.
    fn provision_from(&self, variant: &FsVariant, image: &Path, tag: &str) -> Result<Mounted, ProvisionError> {
        let _ = (variant, tag);
        Err(ProvisionError::Unavailable(format!(
            "{} cannot start from the image {}: only loop images can (drop --dir/--device)",
            self.describe(),
            image.display()
        )))
    }
}

/// A block device the raw-device baseline may overwrite, from offset 0 to `bytes`, for as long
/// as this value lives. For loop images it holds the guard of the loop device and its image;
/// [`RawDevice::release`] (or drop) detaches and deletes them, like [`Mounted`].
pub struct RawDevice {
    /// `/dev/loopN`, or the `--device` the user confirmed.
    pub path: PathBuf,
    /// Bytes that may be written, from offset 0 (a multiple of 1 MiB).
    pub bytes: u64,
    /// What the device is, for the report: `a 512 MiB sparse image in the scratch folder, …`.
    pub what: String,
    /// Why `bytes` is smaller than asked, or anything else a reader should know.
    pub note: Option<String>,
    guard: Option<Mounted>,
}

impl RawDevice {
    /// Undoes what was made for the device (nothing for a real device), reporting the first
    /// error.
    pub fn release(mut self) -> Result<(), ProvisionError> {
        self.guard.take().map_or(Ok(()), Mounted::teardown)
    }
}

/// Rounds down to whole MiB.
fn whole_mib(bytes: u64) -> u64 {
    bytes & !((1 << 20) - 1)
}

/// Free bytes for an unprivileged writer in the filesystem that holds `path`, or would hold it:
/// a path that does not exist yet is answered by its nearest existing parent.
pub fn free_bytes(path: &Path) -> Option<u64> {
    let mut p = path;
    loop {
        if let Ok(st) = rustix::fs::statvfs(p) {
            return Some(st.f_bavail.saturating_mul(st.f_frsize));
        }
        p = p.parent()?;
    }
}

/// Space the raw-device baseline leaves free in the scratch folder, so that measuring never fills
/// the disk the results database or other runs may live on.
const BASELINE_FREE_MARGIN: u64 = 256 << 20;

/// The smallest baseline image worth measuring: below this, per-request overheads and the first
/// allocations dominate the rate.
pub const BASELINE_MIN_BYTES: u64 = 64 << 20;

/// Loop-backed images (and tmpfs) in a private run folder under the scratch folder.
pub struct ImageProvisioner {
    state: RunState,
    loop_io: LoopIo,
}

impl ImageProvisioner {
    /// Uses the run folder of `state` (see [`RunState::create`]); loop devices with direct I/O
    /// on their images.
    pub fn new(state: RunState) -> Self {
        ImageProvisioner {
            state,
            loop_io: LoopIo::Direct,
        }
    }

    /// The filesystems' loop devices do I/O as `loop_io` says (the raw-device baseline's stays
    /// direct: it measures the device under the host's page cache).
    pub fn with_loop_io(self, loop_io: LoopIo) -> Self {
        ImageProvisioner { loop_io, ..self }
    }
}

impl Provisioner for ImageProvisioner {
    fn describe(&self) -> String {
        format!("loop images in {}", self.state.dir().display())
    }

    fn provision(&self, variant: &FsVariant, image_bytes: u64, tag: &str) -> Result<Mounted, ProvisionError> {
        variant_availability(variant).map_err(|e| ProvisionError::Unavailable(e.0))?;
        let dir = self.state.dir();
        let mnt = dir.join(format!("mnt-{tag}"));
        let mut m = Mounted::with_mountpoint(self.state.clone(), mnt.clone())?;

        let opts = variant.mount_opts.join(",");
        if variant.fs().in_memory() {
            let size_opt = format!("size={image_bytes}");
            let all = if opts.is_empty() {
                size_opt
            } else {
                format!("{size_opt},{opts}")
            };
            m.push(Unmount {
                mountpoint: mnt.clone(),
                source: "tmpfs".into(),
            });
            let args = ["-t", "tmpfs", "-o", &all, "tmpfs", &path_arg(&mnt)].map(String::from);
            run_tool("mount", &args, &[])?;
        } else {
            let image = dir.join(format!("img-{tag}.img"));
            let device = attach_image(&mut m, &image, image_bytes, self.loop_io)?;
            mkfs_and_mount(&mut m, variant, &device)?;
        }
        m.ready()
    }

    fn provision_from(&self, variant: &FsVariant, image: &Path, tag: &str) -> Result<Mounted, ProvisionError> {
        variant_availability(variant).map_err(|e| ProvisionError::Unavailable(e.0))?;
        image::provision_copy(&self.state, variant, image, tag, self.loop_io)
    }

    /// A loop device over a fresh sparse image `img-baseline.img` in the run folder, made and
    /// attached exactly as for a filesystem (no mkfs, no mount), of `max_bytes` or less when the
    /// scratch folder is short of space (the note says so).
    fn raw_device(&self, max_bytes: u64) -> Result<Option<RawDevice>, ProvisionError> {
        let dir = self.state.dir();
        let free = free_bytes(&dir).unwrap_or(u64::MAX);
        let bytes = whole_mib(max_bytes.min(free.saturating_sub(BASELINE_FREE_MARGIN)));
        if bytes < BASELINE_MIN_BYTES {
            return Err(ProvisionError::Unavailable(format!(
                "the scratch folder {} has only {} free, too little for a {} baseline image",
                dir.display(),
                crate::units::Bytes(free).human(),
                crate::units::Bytes(BASELINE_MIN_BYTES).human()
            )));
        }
        let note = (bytes < whole_mib(max_bytes)).then(|| {
            format!(
                "measured over {} instead of {}: the scratch folder had only {} free",
                crate::units::Bytes(bytes).human(),
                crate::units::Bytes(max_bytes).human(),
                crate::units::Bytes(free).human()
            )
        });
        // Nothing is mounted: the guard's mountpoint and workdir are the run folder itself.
        let mut m = Mounted::new(self.state.clone(), dir.clone());
        let device = attach_image(&mut m, &dir.join("img-baseline.img"), bytes, LoopIo::Direct)?;
        let direct = loop_direct_io(&device);
        let mut notes: Vec<String> = note.into_iter().collect();
        if !direct {
            notes.push(
                "the host refused direct I/O on the backing file, so its page cache may serve the read: \
                 the read rate may be too high"
                    .into(),
            );
        }
        let note = (!notes.is_empty()).then(|| notes.join("; "));
        Ok(Some(RawDevice {
            path: PathBuf::from(device),
            bytes,
            what: format!(
                "a {} sparse image in the scratch folder, loop-attached like the filesystems' images ({})",
                crate::units::Bytes(bytes).human(),
                if direct {
                    "direct I/O on the backing file"
                } else {
                    "buffered backing I/O"
                }
            ),
            note,
            guard: Some(m),
        }))
    }
}

/// Creates the sparse image `image` of `bytes` and attaches it to a free loop device doing I/O
/// as `loop_io` says, pushing both onto `m`'s undo stack the moment they exist; returns the
/// device (also set in `m`, with the mode asked for).
fn attach_image(m: &mut Mounted, image: &Path, bytes: u64, loop_io: LoopIo) -> Result<String, ProvisionError> {
    let f = std::fs::File::create_new(image).map_err(io_err(format!("create {}", image.display())))?;
    m.push_image(image);
    f.set_len(bytes)
        .map_err(io_err(format!("size {} to {bytes} bytes", image.display())))?;
    drop(f);
    attach_pushed(m, image, loop_io)
}

/// Attaches `image`, already on `m`'s undo stack, to a free loop device doing I/O as
/// `loop_io` says, pushing the detach; returns the device (also set in `m`).
fn attach_pushed(m: &mut Mounted, image: &Path, loop_io: LoopIo) -> Result<String, ProvisionError> {
    let device = attach_loop(image, loop_io)?;
    m.push(Detach {
        device: device.clone(),
        image: image.to_path_buf(),
    });
    m.device = Some(device.clone());
    m.loop_dio_asked = Some(loop_io.is_direct());
    Ok(device)
}

/// Whether a loop device does direct I/O on its backing file (sysfs `loop/dio`).
pub fn loop_direct_io(device: &str) -> bool {
    Path::new(device)
        .file_name()
        .and_then(|n| std::fs::read_to_string(format!("/sys/block/{}/loop/dio", n.to_string_lossy())).ok())
        .is_some_and(|s| s.trim() == "1")
}

/// The progress step of mkfs: `mkfs.ext4 (64 MiB)`, the size read from sysfs (no size when
/// sysfs does not know the device), so runs on images of one size share their ETA.
fn mkfs_step_name(mkfs: &str, device: &str) -> String {
    let sectors = Path::new(device)
        .file_name()
        .and_then(|n| std::fs::read_to_string(format!("/sys/class/block/{}/size", n.to_string_lossy())).ok())
        .and_then(|s| s.trim().parse::<u64>().ok());
    match sectors {
        Some(n) => format!("{mkfs} ({})", crate::units::Bytes(n * 512).human()),
        None => mkfs.to_string(),
    }
}

/// Makes a fresh filesystem of `variant` on `device` and mounts it on `m.mountpoint`.
fn mkfs_and_mount(m: &mut Mounted, variant: &FsVariant, device: &str) -> Result<(), ProvisionError> {
    let t = variant.fs();
    if t.backing == crate::fstype::Backing::Pool {
        return zfs::create_pool(m, variant, device);
    }
    if t.is_built() {
        // Nothing to format: the image is built by the workload (`image`) from a tree, both
        // kept on a staging filesystem made here; the variant's own arguments go to its tool.
        let staging = FsVariant::with_type(format!("{}-staging", variant.name), crate::fstype::STAGING);
        return mkfs_and_mount(m, &staging, device);
    }
    let mkfs = t.mkfs_program(&variant.fs_type);
    let mut args = t.default_mkfs_args();
    args.extend(variant.mkfs_args.iter().cloned());
    args.push(device.to_string());
    // A long step on a large image: a spinner with the last run's time as its ETA.
    let step = crate::progress::step(mkfs_step_name(&mkfs, device), None, "steps");
    run_tool(&mkfs, &args, &[])?;
    step.finish();
    mount_device(m, variant, device)
}

/// Mounts the filesystem on `device` as `variant` says (its type and mount options) on
/// `m.mountpoint`, the unmount recorded first.
fn mount_device(m: &mut Mounted, variant: &FsVariant, device: &str) -> Result<(), ProvisionError> {
    let mut margs = vec!["-t".to_string(), variant.fs_type.clone()];
    let opts = variant.mount_opts.join(",");
    if !opts.is_empty() {
        margs.extend(["-o".to_string(), opts]);
    }
    let mnt = m.mountpoint.clone();
    margs.extend([device.to_string(), path_arg(&mnt)]);
    // Recorded before mount(8) runs: if fsbench is killed while the mount is in flight, the
    // state file already says to undo it (undoing a mount that never happened is a no-op).
    m.push(Unmount {
        mountpoint: mnt,
        source: device.to_string(),
    });
    run_tool("mount", &margs, &[])?;
    Ok(())
}

/// A fresh filesystem of `variant` on `device`, mounted in `state`'s run folder as `mnt-TAG`,
/// behind the usual guard: what the guest agent ([`crate::guest::agent`]) does with the guest's
/// disk, which fsbench itself created on the host.
pub fn provision_device(
    state: &RunState,
    variant: &FsVariant,
    device: &str,
    tag: &str,
) -> Result<Mounted, ProvisionError> {
    let mut m = Mounted::with_mountpoint(state.clone(), state.dir().join(format!("mnt-{tag}")))?;
    m.device = Some(device.to_string());
    mkfs_and_mount(&mut m, variant, device)?;
    m.ready()
}

/// A real block device the user named and confirmed (see [`safety`]): a fresh filesystem on it
/// for every repeat, mounted in the run folder. The device itself is never released or
/// removed; after the run it holds fsbench's last filesystem.
pub struct DeviceProvisioner {
    device: safety::DeviceInfo,
    state: RunState,
}

impl DeviceProvisioner {
    /// Uses a device that passed [`safety::confirm`].
    pub fn new(device: safety::DeviceInfo, state: RunState) -> Self {
        DeviceProvisioner { device, state }
    }
}

impl Provisioner for DeviceProvisioner {
    fn describe(&self) -> String {
        format!(
            "device {} ({}, {})",
            self.device.path.display(),
            self.device.model,
            crate::units::Bytes(self.device.size_bytes).human()
        )
    }

    fn provision(&self, variant: &FsVariant, _image_bytes: u64, tag: &str) -> Result<Mounted, ProvisionError> {
        variant_availability(variant).map_err(|e| ProvisionError::Unavailable(e.0))?;
        if variant.fs().in_memory() {
            return Err(ProvisionError::Unavailable(
                "tmpfs lives in memory: run it without --device".into(),
            ));
        }
        self.check_still_free()?;
        let mnt = self.state.dir().join(format!("mnt-{tag}"));
        let mut m = Mounted::with_mountpoint(self.state.clone(), mnt.clone())?;
        let device = self.device.path.to_string_lossy().into_owned();
        m.device = Some(device.clone());
        mkfs_and_mount(&mut m, variant, &device)?;
        // The next run with the same confirmation recognises this filesystem as fsbench's.
        made::record(&self.device.path, &self.device.name, self.device.size_bytes);
        m.ready()
    }

    /// The first `max_bytes` (or the whole device, if smaller) of the confirmed device. Nothing is
    /// made, so nothing is undone; the baseline opens it with O_EXCL, which the kernel refuses
    /// while anything else holds it.
    fn raw_device(&self, max_bytes: u64) -> Result<Option<RawDevice>, ProvisionError> {
        self.check_still_free()?;
        let size = whole_mib(self.device.size_bytes);
        let bytes = whole_mib(max_bytes).min(size);
        let human = |b| crate::units::Bytes(b).human();
        Ok(Some(RawDevice {
            path: self.device.path.clone(),
            bytes,
            what: format!(
                "the first {} of {} ({}, {})",
                human(bytes),
                self.device.path.display(),
                self.device.model,
                human(self.device.size_bytes)
            ),
            note: (bytes < whole_mib(max_bytes)).then(|| {
                format!(
                    "measured over the whole device ({}), less than {}",
                    human(bytes),
                    human(max_bytes)
                )
            }),
            guard: None,
        }))
    }
}

impl DeviceProvisioner {
    /// Refuses the device if someone else mounted it, stacked a device on it or uses it as swap
    /// since it was confirmed. Between repeats it holds fsbench's own filesystem, so a
    /// filesystem signature alone is no reason.
    fn check_still_free(&self) -> Result<(), ProvisionError> {
        let now = safety::inspect(&self.device.path).map_err(|e| ProvisionError::Unavailable(e.to_string()))?;
        match now
            .refusals
            .iter()
            .find(|r| r.contains("mounted") || r.contains("stacked") || r.contains("swap"))
        {
            Some(r) => Err(ProvisionError::Unavailable(format!(
                "{}: {r}",
                self.device.path.display()
            ))),
            None => Ok(()),
        }
    }
}

fn path_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Attaches `image` to a free loop device. [`LoopIo::Direct`]: with direct I/O on the backing
/// file (so the host's page cache does not stand between the filesystem and the disk), falling
/// back to buffered backing I/O where the host filesystem refuses O_DIRECT (the path facts
/// then show the mismatch). [`LoopIo::Buffered`]: `--direct-io=off` said explicitly (a
/// `losetup` too old for the option attaches buffered anyway).
fn attach_loop(image: &Path, loop_io: LoopIo) -> Result<String, ProvisionError> {
    let img = path_arg(image);
    let losetup = |dio: Option<&str>| {
        let mut args: Vec<String> = vec!["--find".into(), "--show".into()];
        args.extend(dio.map(|d| format!("--direct-io={d}")));
        args.push(img.clone());
        run_tool("losetup", &args, &[])
    };
    let dio = if loop_io.is_direct() { "on" } else { "off" };
    let out = losetup(Some(dio)).or_else(|_| losetup(None))?;
    let dev = out.trim().to_string();
    if !dev.starts_with("/dev/loop") {
        return Err(ProvisionError::Tool {
            command: "losetup --find --show".into(),
            status: "ok".into(),
            stderr: format!("unexpected output `{dev}`"),
        });
    }
    Ok(dev)
}

/// An existing directory (`--dir`): no mkfs, no mount; each repeat gets a fresh subfolder that
/// is removed afterwards.
pub struct DirProvisioner {
    root: PathBuf,
    state: RunState,
}

impl DirProvisioner {
    /// Benchmarks inside `root`, which must exist and be a directory.
    pub fn new(root: PathBuf, state: RunState) -> Result<Self, ProvisionError> {
        let md = std::fs::metadata(&root).map_err(io_err(format!("--dir {}", root.display())))?;
        if !md.is_dir() {
            return Err(ProvisionError::Unavailable(format!(
                "--dir {}: not a directory",
                root.display()
            )));
        }
        Ok(DirProvisioner { root, state })
    }

    /// Type of the filesystem holding the directory.
    pub fn fs_type(&self) -> String {
        dir_fs_type(&self.root)
    }
}

/// Type of the filesystem holding `dir` (longest matching /proc/mounts prefix), or `unknown`.
pub fn dir_fs_type(dir: &Path) -> String {
    let root = std::fs::canonicalize(dir).unwrap_or(dir.to_path_buf());
    let text = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let mp = PathBuf::from(unescape_mount_field(f.get(1)?));
            let t = f.get(2)?.to_string();
            root.starts_with(&mp).then(|| (mp.as_os_str().len(), t))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, t)| t)
        .unwrap_or_else(|| "unknown".into())
}

impl Provisioner for DirProvisioner {
    fn describe(&self) -> String {
        format!("directory {} ({})", self.root.display(), self.fs_type())
    }

    /// An existing directory sits on a device fsbench does not own: nothing to measure.
    fn raw_device(&self, _max_bytes: u64) -> Result<Option<RawDevice>, ProvisionError> {
        Ok(None)
    }

    fn provision(&self, _variant: &FsVariant, _image_bytes: u64, tag: &str) -> Result<Mounted, ProvisionError> {
        let work = self.root.join(format!("fsbench-{}-{tag}", std::process::id()));
        let mut m = Mounted::new(self.state.clone(), self.root.clone());
        std::fs::create_dir(&work).map_err(io_err(format!("create {}", work.display())))?;
        m.push(RemoveDir {
            path: work.clone(),
            recursive: true,
        });
        m.effective_opts = mount_entry(&self.root).map(|(_, _, o)| o);
        m.workdir = work;
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ext4_gets_lazy_init_disabled() {
        let a = crate::fstype::FsType::of("ext4").default_mkfs_args();
        assert!(a.iter().any(|s| s.contains("lazy_itable_init=0")));
        assert!(crate::fstype::FsType::of("xfs")
            .default_mkfs_args()
            .contains(&"-f".to_string()));
    }

    #[test]
    fn unknown_filesystem_is_unavailable_with_a_reason() {
        let r = availability("nosuchfs");
        assert!(r.is_err());
        assert!(r.unwrap_err().0.contains("nosuchfs"));
    }
}
