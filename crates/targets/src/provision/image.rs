//! Filesystem images that outlive a run (issue 30, item 5: a lab ages a filesystem once and
//! measures it many times).
//!
//! - [`Mounted::save_image`]: at the end of a repeat the guard's own steps unmount the
//!   filesystem and detach its loop device, in their usual order; then the image is copied to
//!   the path asked for (`cp --reflink=auto --sparse=always` to `PATH.partial`, renamed into
//!   place), and only then is the rest of the guard undone. What is saved is a cleanly unmounted
//!   filesystem.
//! - [`provision_copy`]: a repeat that starts from a saved image gets its own copy in the run
//!   folder (a reflink where the scratch filesystem can make one, else a sparse copy), attached
//!   and mounted without mkfs. The original is only ever read by `cp`: never attached, mounted
//!   or written.
//! - [`image_type`]: the filesystem type an image holds (`blkid -p`), for the checks made before
//!   a run starts.
//!
//! Invariants: the copy is on the guard's undo stack (`RemoveFile`) before `cp` runs, so a
//! failed or interrupted copy leaves nothing behind, and so is a saved image's `PATH.partial`
//! (a SIGKILL mid-save leaves it to `fsbench cleanup`); a failed save leaves no `PATH` (only a
//! complete copy is renamed into place).

use super::{attach_pushed, io_err, mount_device, run_tool, Mounted, ProvisionError, RunState};
use crate::config::FsVariant;
use crate::fstype::Backing;
use crate::policy::LoopIo;
use crate::undo::RemoveFile;
use std::path::{Path, PathBuf};

/// The filesystem type `blkid -p` finds in the image file `path` (`ext4`, `xfs`, `btrfs`);
/// an error when it is missing, not a regular file, or holds nothing blkid recognises.
pub fn image_type(path: &Path) -> Result<String, ProvisionError> {
    let md = std::fs::metadata(path).map_err(io_err(format!("image {}", path.display())))?;
    if !md.is_file() {
        return Err(ProvisionError::Unavailable(format!(
            "image {}: not a regular file",
            path.display()
        )));
    }
    super::made::probe(path).map(|(_, t)| t).ok_or_else(|| {
        ProvisionError::Unavailable(format!(
            "image {}: `blkid -p` finds no filesystem in it",
            path.display()
        ))
    })
}

/// Copies the image `src` to `dst` (which must not exist) as a reflink where the filesystem
/// holding both can, else sparsely (holes stay holes).
fn copy_image(src: &Path, dst: &Path) -> Result<(), ProvisionError> {
    let arg = |p: &Path| p.to_string_lossy().into_owned();
    let args = vec![
        "--reflink=auto".to_string(),
        "--sparse=always".to_string(),
        "--".to_string(),
        arg(src),
        arg(dst),
    ];
    run_tool("cp", &args, &[]).map(drop)
}

/// `variant` mounted from a fresh copy of `src` in `state`'s run folder (`img-TAG.img`,
/// `mnt-TAG`), behind the usual guard, with no mkfs; the work folder `fsbench-work` is the
/// image's own when it has one. Refuses an image of another type than the variant's, tmpfs
/// and zfs pools.
pub(super) fn provision_copy(
    state: &RunState,
    variant: &FsVariant,
    src: &Path,
    tag: &str,
    loop_io: LoopIo,
) -> Result<Mounted, ProvisionError> {
    let t = variant.fs();
    if t.in_memory() || t.backing == Backing::Pool {
        return Err(ProvisionError::Unavailable(format!(
            "{} cannot start from a saved image (only filesystems on a loop device can)",
            variant.fs_type
        )));
    }
    let found = image_type(src)?;
    if found != variant.fs_type {
        return Err(ProvisionError::Unavailable(format!(
            "image {} holds {found}, not {}",
            src.display(),
            variant.fs_type
        )));
    }
    let dir = state.dir();
    let mut m = Mounted::with_mountpoint(state.clone(), dir.join(format!("mnt-{tag}")))?;
    let image = dir.join(format!("img-{tag}.img"));
    m.push_image(&image);
    let name = src
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let step = crate::progress::step(format!("copy of {name}"), None, "steps");
    copy_image(src, &image)?;
    step.finish();
    let device = attach_pushed(&mut m, &image, loop_io)?;
    mount_device(&mut m, variant, &device)?;
    m.notes.push(format!(
        "started from a copy of the saved image {} (no mkfs)",
        src.display()
    ));
    m.ready_kept()
}

impl Mounted {
    /// Like `ready`, for a filesystem that may already hold the work folder (a saved image):
    /// the folder is made only when missing.
    fn ready_kept(mut self) -> Result<Self, ProvisionError> {
        self.effective_opts = crate::host::mount_entry(&self.mountpoint).map(|(_, _, o)| o);
        let work = self.mountpoint.join(super::WORK_DIR);
        if !work.is_dir() {
            std::fs::create_dir(&work).map_err(io_err(format!("create {}", work.display())))?;
        }
        self.workdir = work;
        Ok(self)
    }

    /// Unmounts the filesystem and detaches its loop device (the guard's own steps), copies
    /// its image to `to` (which must not exist), then undoes the rest of the guard. The copy is
    /// written as `TO.partial` and renamed, so `to` appears only complete. An error when there
    /// is no loop image (tmpfs, a device, a directory), when unmounting fails (nothing is
    /// copied then) or when the copy fails; the guard is undone in every case.
    pub fn save_image(mut self, to: &Path) -> Result<(), ProvisionError> {
        let Some((image, at)) = self.image.clone() else {
            return Err(ProvisionError::Unavailable(
                "no loop image under this filesystem to save".into(),
            ));
        };
        if to.exists() {
            return Err(ProvisionError::Unavailable(format!(
                "{} exists: fsbench does not overwrite a saved image",
                to.display()
            )));
        }
        // Steps above the image's removal: the unmount and the loop device's detach.
        self.undo_down_to(at + 1)?;
        let partial = PathBuf::from(format!("{}.partial", to.display()));
        // In the state file before cp runs: after a SIGKILL mid-copy `fsbench cleanup` removes
        // the partial copy; once renamed, removing it finds nothing, which succeeds.
        self.push(RemoveFile { path: partial.clone() });
        let saved = copy_image(&image, &partial).and_then(|()| {
            std::fs::rename(&partial, to).map_err(io_err(format!("rename {} to {}", partial.display(), to.display())))
        });
        let rest = self.undo_all();
        saved.and(rest)
    }
}
