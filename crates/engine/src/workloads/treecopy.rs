//! The `treecopy` workload: copy a whole tree within one filesystem, then delete the copy — the
//! `time cp -a linux linux.copy; time rm -rf linux.copy` of the desktop (2009) and ZFS-vs-native
//! (2016) studies, and stage D of the peer baselines (`research/peer-baselines.md` §3d).
//!
//! | phase | what is timed |
//! |---|---|
//! | (untimed) | the dataset (`kernel`, `portage`, `mixed`, `dvd`, or a user directory) laid out as `tree/` on the filesystem under test, then `syncfs` |
//! | `copy` | `tree/` → `tree.copy/` (a sibling on the same filesystem) with modes, owners, symlinks and times preserved, then `syncfs` (with `fsync = true`, the default) |
//! | `delete` | `rm -r tree.copy/`, then `syncfs` |
//!
//! Both phases need symbolic links when the tree holds any (the `kernel` and `mixed` datasets
//! from a scale where their share rounds to one link; `delete` removes the copy): on a type
//! without them (exfat) the workload is then not run, not even laid out, and each phase says
//! "unsupported on TYPE" ([`Workload::needs`]). A tree without links copies on exfat too, where
//! every file shows the mount's one mode, so the copy's modes match its source's.
//!
//! Before each phase the engine syncs and drops caches (the suite's `drop_caches`), so the copy
//! starts cold, as the studies' runs after a fresh mount did. Metrics: `time` (seconds, lower is
//! better), CPU of the process and of the machine, and per-entry latency percentiles for the
//! native method.
//!
//! # Methods
//! - `method = "native"` (default): fsbench's own copier and remover. Both walk the tree without
//!   recursion (a stack of directory levels), with `*at()` calls on directory descriptors; each
//!   directory's entries are read whole with `getdents64` into a per-level buffer that is
//!   reused. The copier sorts them by inode number before it copies them, as coreutils' `cp`
//!   does (gnulib's `savedir`, for locality on ext4); the remover unlinks them in `rm -r`'s
//!   order (`delete_order`, [`DeleteOrder`]): as `getdents64` returned them, sorted by inode
//!   number only in a directory of more than 10,000 entries (gnulib's fts), directories after
//!   their entries with `AT_REMOVEDIR`. For each entry the copier makes: `fstatat`; a directory is
//!   made with `mkdirat` and finished after its children (owner, mode, atime and mtime); a
//!   regular file is opened with `O_CREAT|O_EXCL`, its data copied, then owner (only when it
//!   differs from fsbench's), mode (only when the create mode could not set it), and times set
//!   on the open descriptor; a symlink is recreated with its target, owner and times
//!   (`AT_SYMLINK_NOFOLLOW`); FIFOs and device nodes are made with `mknodat`; files with several
//!   links inside the tree are linked again, not copied twice. File data:
//!   - `reflink = "never"` (default): `read(2)`/`write(2)` with one reused buffer of `buffer`
//!     bytes (default 128 KiB, the size coreutils 9 uses), `POSIX_FADV_SEQUENTIAL` on files
//!     larger than the buffer; never `FICLONE`, and never `copy_file_range(2)`, because on xfs
//!     and btrfs that may share extents instead of copying (peer baselines §3d: coreutils 9.1's
//!     default `cp -a` "copies" 600 MB in 5 s of pure metadata there).
//!   - `reflink = "auto"`: `FICLONE` first, then `copy_file_range`, then read/write — whatever
//!     the filesystem does fastest, data shared where it can.
//!
//!   Deliberate differences from `cp -a`: extended attributes and ACLs are not copied (the
//!   generated datasets have none), holes are filled rather than preserved, and a file is copied
//!   up to the size `fstatat` reported (one `read` fewer per file than reading to EOF).
//!   Deliberate differences from `rm -rf` (coreutils 9.1, strace): per directory `rm` also
//!   makes an `fstatat`, opens and reads it twice (once to see whether it is empty), with
//!   `fstat` and `fcntl` calls, all on cached data; the native opens and reads it once. fts
//!   reads a directory of more than 100,000 entries 100,000 at a time (sorting each batch);
//!   the native reads it whole.
//! - `method = "cp"`: runs coreutils `cp -a --reflink=never` (or `--reflink=auto`; with
//!   `cp_preserve`, `cp -dR --preserve=<cp_preserve>` in place of `-a`) for `copy` and
//!   `rm -rf` for `delete`, then `syncfs`, as people time it by hand: in the run directory, with
//!   the relative names `tree` and `tree.copy`. The process CPU reported
//!   adds the children's CPU (`RUSAGE_CHILDREN`).
//!
//! Which method and reflink mode ran is in [`Workload::describe`] (stored with the case) and in
//! a note of every sample.
//!
//! Engine rules kept: buffers (data, directory entries, names, link targets) are allocated
//! before the timed region and reused; the only allocations inside it are a level's buffers the
//! first time the walk reaches a new depth and the path of a hard-linked file. The interrupt
//! flag is polled per entry (by the pool) and per buffer inside a file. Everything created is
//! removed at the end, and on error or interrupt (best effort). Errors name the operation and
//! the path; a full filesystem says so and what to change.

use crate::copy::{copy_data, fail, open_dir, syncfs_path, timed_command, Ctx, Fail, COPY_ERR};
pub use crate::copy::{Method, Reflink};
use crate::datasets::{self, tree, Content, ContentPool, DatasetError, DatasetKind, DatasetSource, Manifest};
use crate::metric::{MetricId, RawSample, Unit};
use crate::phase::{self, Caches, LatencySet, Phases, Policy};
use crate::pool::{Step, Worker, WorkerPool};
use crate::sysio::close_checked;
use crate::units::Bytes;
use crate::Invalid;
use crate::{EngineError, RunContext, Workload, WorkloadKind};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, Timespec, Timestamps};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Phase: copy the tree to a sibling directory.
pub const COPY: &str = "copy";
/// Phase: delete the copy.
pub const DELETE: &str = "delete";
/// The laid-out dataset, in the run directory.
const TREE: &str = "tree";
/// The copy, in the run directory.
const TREE_COPY: &str = "tree.copy";
/// Size of the directory-entry buffer of the walkers (getdents64), bytes.
const DIRENT_BUF: usize = 64 * 1024;

copy_spec! {
/// Parameters of the treecopy workload: the tree, then the copy options (`cp -a` and `rm -rf`
/// with `method = "cp"`), then treecopy's own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreecopySpec {
    /// The tree to copy: `kernel` (default), `portage`, `mixed`, `dvd` (generated, see
    /// [`crate::datasets`]) or the path of an existing directory (copied as it is).
    #[serde(default = "default_dataset")]
    pub dataset: DatasetSource,
    /// Multiplies the generated dataset's files, directories and bytes (`--scale` multiplies it
    /// further). Default 1. Ignored for a user directory.
    #[serde(default = "default_one")]
    pub dataset_scale: f64,
    /// Seed of the generated dataset. Default 0.
    #[serde(default)]
    pub seed: u64,
    /// Contents of generated files: `random` (default, incompressible), `text`
    /// (source-code-like) or `zeros`.
    #[serde(default)]
    pub content: Content,
} {
    /// After `copy` (untimed), compare the copy with the source entry by entry (names, types,
    /// sizes, modes, owners, symlink targets, mtimes, content hashes) and fail on any
    /// difference. Default false.
    #[serde(default)]
    pub verify: bool,
    /// With `method = "cp"`: run `cp -dR --preserve=<this>` instead of `cp -a` (which is
    /// `-dR --preserve=all`). `ownership,timestamps,links` keeps what the native copier keeps
    /// and leaves out `cp -a`'s extended-attribute and ACL calls (`fsbench verify` uses it;
    /// doc/verify.md has the system-call counts). Default: unset (`cp -a`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cp_preserve: Option<String>,
    /// The native copier's system calls per regular file: `coreutils` (default) makes the
    /// filesystem calls coreutils 9.1's `cp` makes, `minimal` only those the copy needs (see
    /// [`Calls`]).
    #[serde(default)]
    pub calls: Calls,
    /// With `method = "cp"`: run `cp` with glibc told to keep its per-file 128 KiB buffer in
    /// the heap ([`CP_REUSE_TUNABLES`]) instead of mapping and unmapping it for every file, so
    /// that what is timed is the filesystem's work, not the allocator's (`fsbench verify` sets
    /// it; doc/verify.md has the measurement). Default false: `cp` as people run it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cp_reuse_buffer: bool,
    /// The order in which the native remover unlinks a directory's entries: `rm` (default)
    /// as coreutils' `rm -r`, `inode` every directory by inode number (see [`DeleteOrder`]).
    /// Left out of the serialised spec at its default, so the case ids of suites written
    /// before it existed stay the same.
    #[serde(default, skip_serializing_if = "DeleteOrder::is_rm")]
    pub delete_order: DeleteOrder,
}
}

/// In which order the native remover unlinks the entries of each directory (`delete_order`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeleteOrder {
    /// As coreutils 9.1 `rm -r` (gnulib fts, strace in doc/verify.md): the order `getdents64`
    /// returns them in, sorted by inode number only in a directory of more than
    /// [`FTS_SORT_THRESHOLD`] entries on a filesystem other than tmpfs, NFS or CIFS. The
    /// kernel tree has no such directory, so `rm -rf` removes it in directory order.
    #[default]
    Rm,
    /// Every directory sorted by inode number, as `cp` reads them (fsbench's remover before
    /// issue 42). On a copy of the Linux 6.1 tree, xfs and btrfs read and wrote as much
    /// removing in this order as in `rm`'s, in as much time (doc/verify.md).
    Inode,
}

impl DeleteOrder {
    /// Whether this is the default, `rm`.
    fn is_rm(&self) -> bool {
        *self == DeleteOrder::Rm
    }

    /// The name as written in suite files.
    pub fn as_str(self) -> &'static str {
        match self {
            DeleteOrder::Rm => "rm",
            DeleteOrder::Inode => "inode",
        }
    }
}

/// Entries a directory must exceed before gnulib's fts (coreutils `rm`) sorts it by inode
/// number: `FTS_INODE_SORT_DIR_ENTRIES_THRESHOLD`.
pub const FTS_SORT_THRESHOLD: usize = 10_000;

/// Filesystem magics on which gnulib's fts never sorts by inode
/// (`dirent_inode_sort_may_be_useful`: CIFS, NFS, tmpfs; statfs(2)).
const FTS_NO_SORT_MAGICS: &[i64] = &[0xFF53_4D42, 0x6969, 0x0102_1994];

/// Which system calls the native copier makes for each regular file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Calls {
    /// The filesystem calls of coreutils 9.1 `cp -dR --preserve=ownership,timestamps` (strace,
    /// doc/verify.md): `fstatat`, `open`, `fstat` of the source, create with owner-only mode,
    /// `fstat` of the copy, `fadvise(SEQUENTIAL)`, read/write to end of file (one `read` that
    /// returns 0), `futimens`, `fchmod`, two `close`: 13 per file.
    #[default]
    Coreutils,
    /// Only what the copy needs: `fstatat`, two `open`, the data, `futimens` (`fchmod` only
    /// when the create mode could not set the mode), two `close`: 8 per file.
    Minimal,
}

impl Calls {
    /// The name as written in suite files.
    pub fn as_str(self) -> &'static str {
        match self {
            Calls::Coreutils => "coreutils",
            Calls::Minimal => "minimal",
        }
    }
}

/// `GLIBC_TUNABLES` of `cp_reuse_buffer`: a 128 KiB buffer stays below the mmap threshold, and
/// freeing it never trims the heap, so the next file's buffer is the same memory.
pub const CP_REUSE_TUNABLES: &str = "glibc.malloc.mmap_threshold=4194304:glibc.malloc.trim_threshold=67108864";

fn default_dataset() -> DatasetSource {
    DatasetSource::Generated(DatasetKind::Kernel)
}
fn default_one() -> f64 {
    1.0
}

impl Default for TreecopySpec {
    fn default() -> Self {
        super::serde_default()
    }
}

/// Largest accepted `buffer`.
const MAX_BUFFER: u64 = 256 * Bytes::MIB;

impl TreecopySpec {
    /// What the source tree holds: every entry of the generated manifest (the same one `run`
    /// writes), or of the user's directory as it is now (empty if it cannot be read).
    fn tree_footprint(&self) -> crate::fstype::Footprint {
        use crate::fstype::Footprint;
        let name_len = |p: &str| p.rsplit('/').next().map_or(0, str::len) as u64;
        match &self.dataset {
            DatasetSource::Generated(k) => {
                // Counted on the manifest itself up to SAMPLE entries; beyond, on a manifest of
                // SAMPLE entries (the same size distribution) scaled up, so planning a huge
                // scale stays quick and small.
                const SAMPLE: f64 = 400_000.0;
                let n = k.profile().scaled(self.dataset_scale);
                let entries = (n.files + n.dirs + n.symlinks) as f64;
                let sample = if entries > SAMPLE {
                    self.dataset_scale * SAMPLE / entries
                } else {
                    self.dataset_scale
                };
                let m = datasets::Manifest::generate(*k, sample, self.seed);
                let fp = m.entries.iter().fold(Footprint::default(), |f, e| match e.kind {
                    datasets::EntryKind::Dir => f.dirs(1, name_len(&e.path)),
                    datasets::EntryKind::File { size, .. } => f.files(1, size, name_len(&e.path)),
                    datasets::EntryKind::Symlink { .. } => f.symlinks(1, name_len(&e.path)),
                });
                if sample < self.dataset_scale {
                    fp.times(self.dataset_scale / sample)
                } else {
                    fp
                }
            }
            DatasetSource::Dir(p) => {
                let mut f = Footprint::default();
                let mut stack = vec![p.clone()];
                while let Some(dir) = stack.pop() {
                    let Ok(rd) = std::fs::read_dir(&dir) else { continue };
                    for item in rd.flatten() {
                        let (Ok(meta), n) = (item.metadata(), item.file_name().len() as u64) else {
                            continue;
                        };
                        f = if meta.is_dir() {
                            stack.push(item.path());
                            f.dirs(1, n)
                        } else if meta.is_symlink() {
                            f.symlinks(1, n)
                        } else {
                            f.files(1, meta.len(), n)
                        };
                    }
                }
                f
            }
        }
    }

    /// The note every sample carries: which copier, which data path.
    fn method_note(&self) -> String {
        let sync = if self.fsync { "syncfs counted" } else { "no sync" };
        match self.method {
            Method::Native => format!(
                "treecopy: native copier, {}, reflink={}, calls={}, delete_order={}; {sync}",
                match self.reflink {
                    Reflink::Never => format!("read/write with a {} buffer", self.buffer),
                    Reflink::Auto => "FICLONE, else copy_file_range, else read/write".to_string(),
                },
                self.reflink.as_str(),
                self.calls.as_str(),
                self.delete_order.as_str()
            ),
            Method::Cp => format!(
                "treecopy: `{}cp {} --reflink={}` and `rm -rf`; {sync}",
                if self.cp_reuse_buffer {
                    "GLIBC_TUNABLES=… "
                } else {
                    ""
                },
                self.cp_mode_args().join(" "),
                self.reflink.as_str()
            ),
        }
    }
}

impl TreecopySpec {
    /// What `cp` is told to keep: `-a`, or `-dR --preserve=<cp_preserve>`.
    fn cp_mode_args(&self) -> Vec<String> {
        match &self.cp_preserve {
            None => vec!["-a".into()],
            Some(p) => vec!["-dR".into(), format!("--preserve={p}")],
        }
    }
}

impl Workload for TreecopySpec {
    fn phases(&self) -> Vec<String> {
        vec![COPY.to_string(), DELETE.to_string()]
    }

    fn needs(&self, phase: &str) -> &'static [crate::fstype::Feature] {
        let has_symlinks = match &self.dataset {
            DatasetSource::Generated(k) => k.profile().scaled(self.dataset_scale).symlinks > 0,
            DatasetSource::Dir(_) => self.tree_footprint().symlinks > 0,
        };
        match phase {
            COPY | DELETE if has_symlinks => &[crate::fstype::Feature::Symlinks],
            _ => &[],
        }
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        WorkloadKind::Treecopy(TreecopySpec {
            dataset_scale: self.dataset_scale * factor,
            ..self.clone()
        })
    }

    fn validate(&self) -> Result<(), Invalid> {
        if !(self.dataset_scale.is_finite() && self.dataset_scale > 0.0) {
            return Err(Invalid(format!(
                "dataset_scale must be a positive number (is {})",
                self.dataset_scale
            )));
        }
        if self.buffer.get() == 0 || self.buffer.get() > MAX_BUFFER {
            return Err(Invalid(format!(
                "buffer must be between 1 byte and 256MiB (is {})",
                self.buffer
            )));
        }
        if let DatasetSource::Dir(p) = &self.dataset {
            if !p.is_dir() {
                return Err(Invalid(format!(
                    "dataset `{}` is not an existing directory: give a directory, or one of kernel, portage, mixed, dvd",
                    p.display()
                )));
            }
        }
        Ok(())
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        // The tree and its full copy coexist at the end of `copy`.
        self.tree_footprint().dirs(1, 9).twice()
    }

    fn content(&self) -> Option<crate::datasets::content::Content> {
        Some(self.content)
    }

    fn describe(&self) -> String {
        let what = match &self.dataset {
            DatasetSource::Generated(k) => {
                let n = k.profile().scaled(self.dataset_scale);
                format!(
                    "dataset={k}×{} ({} files, {} dirs, {}, seed {}, content {})",
                    fmt_scale(self.dataset_scale),
                    n.files,
                    n.dirs,
                    Bytes(n.bytes).human(),
                    self.seed,
                    self.content
                )
            }
            DatasetSource::Dir(p) => format!("dataset={}", p.display()),
        };
        let mut s = format!(
            "treecopy {what} method={} reflink={}",
            self.method.as_str(),
            self.reflink.as_str()
        );
        if self.method == Method::Native {
            s.push_str(&format!(
                " buffer={} calls={} delete_order={}",
                self.buffer,
                self.calls.as_str(),
                self.delete_order.as_str()
            ));
        }
        if self.method == Method::Cp && self.cp_reuse_buffer {
            s.push_str(" cp_reuse_buffer");
        }
        s.push_str(if self.fsync { " fsync" } else { " no-fsync" });
        if self.verify {
            s.push_str(" verify");
        }
        s
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        self.validate()?;
        let tree = ctx.dir.join(TREE);
        let copy = ctx.dir.join(TREE_COPY);
        let result = run_phases(self, ctx, &tree, &copy);
        // Best effort on every path: leave the run directory as it was given.
        let _ = remove_tree(&copy, &AtomicBool::new(false));
        let _ = remove_tree(&tree, &AtomicBool::new(false));
        result
    }
}

fn fmt_scale(s: f64) -> String {
    let t = format!("{s:.4}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

impl From<DatasetError> for EngineError {
    fn from(e: DatasetError) -> Self {
        match e {
            DatasetError::Io { what, source } => EngineError::Io { what, source },
            DatasetError::Interrupted => EngineError::Interrupted,
            DatasetError::Invalid(m) => EngineError::Invalid(m),
        }
    }
}

/// Both phases: `time` (s), and for the native walkers the latency of each entry.
const POLICY: Policy = Policy::new().latency(LatencySet::Core);

fn run_phases(spec: &TreecopySpec, ctx: &RunContext, tree: &Path, copy: &Path) -> Result<RawSample, EngineError> {
    let mut phases = Phases::new(ctx);
    phases.note(spec.method_note());
    let opts = CopyOptions {
        reflink: spec.reflink,
        buffer: spec.buffer.get() as usize,
        calls: spec.calls,
    };

    // Untimed: lay the dataset out on the filesystem under test.
    match &spec.dataset {
        DatasetSource::Generated(kind) => {
            let manifest = Manifest::generate(*kind, spec.dataset_scale, spec.seed);
            let pool = ContentPool::new(spec.content, spec.seed);
            manifest.materialize(tree, &pool, ctx.interrupt)?;
        }
        DatasetSource::Dir(src) => {
            let c = TreeCopier::new(src, tree, opts, false, ctx.interrupt)?;
            phase::untimed(vec![c], ctx.interrupt)?;
        }
    }
    syncfs_path(ctx.dir)?;
    let sync_dir = spec.fsync.then_some(ctx.dir);

    // copy
    phases.begin(COPY, Caches::DropIfAsked);
    let t = match spec.method {
        Method::Native => {
            let copier = TreeCopier::new(tree, copy, opts, spec.fsync, ctx.interrupt)?;
            phases.pool(WorkerPool::new(), vec![copier])?.map(drop)
        }
        Method::Cp => {
            let mut cmd = Command::new("cp");
            if spec.cp_reuse_buffer {
                cmd.env("GLIBC_TUNABLES", CP_REUSE_TUNABLES);
            }
            // In the run directory with relative names, as `cd /mnt && time cp -a src dst` by
            // hand: each of cp's path calls walks two components, not the scratch folder's
            // whole path (doc/verify.md: 3-5 % of cp's CPU on a warm copy), as the native's
            // `*at()` calls on directory descriptors walk one.
            cmd.current_dir(ctx.dir)
                .args(spec.cp_mode_args())
                .arg(format!("--reflink={}", spec.reflink.as_str()))
                .arg("--")
                .arg(TREE)
                .arg(TREE_COPY);
            timed_command(&phases, cmd, sync_dir)?
        }
    };
    phases.record(COPY, &t, vec![time(t.wall)], &POLICY);

    if spec.verify {
        verify_copy(spec, tree, copy)?;
    }

    // delete
    phases.begin(DELETE, Caches::DropIfAsked);
    let t = match spec.method {
        Method::Native => {
            let remover = TreeRemover::new(copy, spec.delete_order, spec.fsync, ctx.interrupt)?;
            phases.pool(WorkerPool::new(), vec![remover])?.map(drop)
        }
        Method::Cp => {
            let mut cmd = Command::new("rm");
            cmd.current_dir(ctx.dir).arg("-rf").arg("--").arg(TREE_COPY);
            timed_command(&phases, cmd, sync_dir)?
        }
    };
    phases.record(DELETE, &t, vec![time(t.wall)], &POLICY);
    if copy.symlink_metadata().is_ok() {
        return Err(EngineError::Invalid(format!(
            "{} still exists after the delete phase",
            copy.display()
        )));
    }
    Ok(phases.finish())
}

/// The headline of both phases: seconds, lower is better.
fn time(wall: Duration) -> (MetricId, f64) {
    (MetricId::lower("time", Unit::Seconds), wall.as_secs_f64())
}

/// Compares the copy with its source: the laid-out tree, and for a user directory also the
/// directory itself (so the untimed layout is checked too).
fn verify_copy(spec: &TreecopySpec, tree: &Path, copy: &Path) -> Result<(), EngineError> {
    let list = |p: &Path| tree::list_tree(p).map_err(|e| EngineError::io(format!("verify: list {}", p.display()), e));
    let t = list(tree)?;
    let c = list(copy)?;
    let same_as = |source: &Path, entries: &[tree::TreeEntry]| {
        tree::compare(entries, &c, true).map_err(|d| {
            EngineError::Invalid(format!(
                "verify: {} differs from {}: {d}",
                copy.display(),
                source.display()
            ))
        })
    };
    same_as(tree, &t)?;
    if let DatasetSource::Dir(src) = &spec.dataset {
        same_as(src, &list(src)?)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The native copier and remover.
// ---------------------------------------------------------------------------------------------

/// How the native copier moves file data.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CopyOptions {
    /// Never or auto (see [`Reflink`]).
    pub reflink: Reflink,
    /// Read/write buffer, bytes.
    pub buffer: usize,
    /// Which system calls per regular file.
    pub calls: Calls,
}

/// One directory entry read by a walker: its name in the level's name buffer.
#[derive(Clone, Copy, Debug)]
struct Item {
    /// Offset of the NUL-terminated name in [`Level::names`].
    start: u32,
    /// Name length with its NUL.
    len: u32,
    ino: u64,
    dtype: FileType,
}

/// A directory the walk is inside of. Levels are kept when the walk climbs back up, so their
/// buffers are reused by the next directory at the same depth.
#[derive(Default)]
struct Level {
    src: Option<OwnedFd>,
    dst: Option<OwnedFd>,
    /// Names of the entries, NUL-terminated, back to back.
    names: Vec<u8>,
    items: Vec<Item>,
    next: usize,
    /// This directory's own name (no NUL), for error paths and hard-link paths.
    name: Vec<u8>,
    /// Source directory's metadata, applied to the copy when the level is finished.
    meta: Option<Meta>,
}

/// What is applied to a copied entry: owner, permission bits, times.
#[derive(Clone, Copy, Debug)]
struct Meta {
    uid: u32,
    gid: u32,
    mode: u32,
    times: (Timespec, Timespec),
}

impl Meta {
    fn of(st: &rustix::fs::Stat) -> Meta {
        Meta {
            uid: st.st_uid,
            gid: st.st_gid,
            mode: st.st_mode & 0o7777,
            times: (
                Timespec {
                    tv_sec: st.st_atime as i64,
                    tv_nsec: st.st_atime_nsec as _,
                },
                Timespec {
                    tv_sec: st.st_mtime as i64,
                    tv_nsec: st.st_mtime_nsec as _,
                },
            ),
        }
    }

    /// Owner and group as rustix wants them.
    fn owner(&self) -> (Option<rustix::fs::Uid>, Option<rustix::fs::Gid>) {
        // SAFETY: the ids come from stat(2), so they are real ids, never the "no change"
        // value -1 that makes from_raw unsafe.
        unsafe {
            (
                Some(rustix::fs::Uid::from_raw(self.uid)),
                Some(rustix::fs::Gid::from_raw(self.gid)),
            )
        }
    }

    fn timestamps(&self) -> Timestamps {
        Timestamps {
            last_access: self.times.0,
            last_modification: self.times.1,
        }
    }
}

impl Level {
    fn item_name(&self, i: usize) -> &CStr {
        let it = self.items[i];
        // The buffer holds exactly the NUL-terminated name getdents returned.
        CStr::from_bytes_with_nul(&self.names[it.start as usize..(it.start + it.len) as usize]).unwrap_or(c"?")
    }

    /// Reads every entry of `self.src` (except `.` and `..`), in `getdents64` order, then
    /// sorts them by inode number when `sort` says so for their number.
    fn read(&mut self, dirbuf: &mut [MaybeUninit<u8>], sort: Sort) -> Result<(), Fail> {
        self.names.clear();
        self.items.clear();
        self.next = 0;
        let Some(fd) = self.src.as_ref() else {
            return Ok(());
        };
        let mut rd = RawDir::new(fd, dirbuf);
        while let Some(e) = rd.next() {
            let e = e.ctx("read directory")?;
            let name = e.file_name().to_bytes_with_nul();
            if name == b".\0" || name == b"..\0" {
                continue;
            }
            self.items.push(Item {
                start: self.names.len() as u32,
                len: name.len() as u32,
                ino: e.ino(),
                dtype: e.file_type(),
            });
            self.names.extend_from_slice(name);
        }
        if sort.sorts(self.items.len()) {
            self.items.sort_unstable_by_key(|i| i.ino);
        }
        Ok(())
    }
}

/// Whether a walker sorts a directory's entries by inode number once it has read them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sort {
    /// Every directory: coreutils `cp` (gnulib `savedir` with `SAVEDIR_SORT_FASTREAD`).
    Always,
    /// Only a directory of more than this many entries: coreutils `rm` (gnulib fts).
    Above(usize),
    /// Never: `rm` on tmpfs, NFS and CIFS.
    Never,
}

impl Sort {
    /// Whether a directory of `entries` entries is sorted.
    fn sorts(self, entries: usize) -> bool {
        match self {
            Sort::Always => true,
            Sort::Above(n) => entries > n,
            Sort::Never => false,
        }
    }

    /// The remover's rule for `order` on a filesystem whose statfs(2) type is `magic`.
    fn removal(order: DeleteOrder, magic: i64) -> Sort {
        match order {
            DeleteOrder::Inode => Sort::Always,
            DeleteOrder::Rm if FTS_NO_SORT_MAGICS.contains(&magic) => Sort::Never,
            DeleteOrder::Rm => Sort::Above(FTS_SORT_THRESHOLD),
        }
    }
}

/// Owner (when it differs from `ids` and the process is root), then mode (unless the create
/// mode `created_mode` already is the wanted one), then times, on an open copy.
fn finish_fd(ids: (u32, u32), root: bool, fd: &OwnedFd, meta: &Meta, created_mode: Option<u32>) -> Result<(), Fail> {
    let chown = (meta.uid, meta.gid) != ids && root;
    if chown {
        let owner = meta.owner();
        rustix::fs::fchown(fd, owner.0, owner.1).ctx("chown")?;
    }
    // chown clears set-id bits, and the create mode went through the umask.
    if chown || created_mode != Some(meta.mode) {
        rustix::fs::fchmod(fd, Mode::from_raw_mode(meta.mode)).ctx("chmod")?;
    }
    rustix::fs::futimens(fd, &meta.timestamps()).ctx("set times of")
}

/// Path of entry `name` at walk depth `d` below `root`, for error messages (allocates: only on
/// the error path).
fn entry_path(root: &Path, levels: &[Level], d: usize, name: Option<&[u8]>) -> PathBuf {
    let mut p = root.to_path_buf();
    for l in levels.iter().take(d + 1).skip(1) {
        p.push(OsStr::from_bytes(&l.name));
    }
    if let Some(n) = name {
        p.push(OsStr::from_bytes(n));
    }
    p
}

/// The failure `f` of item `i` of walk level `d`, named by its path below `root` (allocates:
/// only on the error path).
fn item_fail(f: Fail, root: &Path, levels: &[Level], d: usize, i: usize) -> EngineError {
    fail(f, &entry_path(root, levels, d, Some(levels[d].item_name(i).to_bytes())))
}

/// The walk's levels split after level `d`: levels `0..=d` (the current one last) and those
/// below it, adding an empty slot for level `d + 1` the first time the walk goes that deep.
#[inline]
fn split_at_level(levels: &mut Vec<Level>, d: usize) -> (&[Level], &mut [Level]) {
    if levels.len() == d + 1 {
        levels.push(Level::default());
    }
    let (lower, upper) = levels.split_at_mut(d + 1);
    (lower, upper)
}

/// Operations of the copier on the source tree (the rest act on the copy), for error paths.
const SOURCE_OPS: &[&str] = &["stat", "open", "read", "readlink", "open directory", "read directory"];

/// Effective user and group of this process.
fn ids() -> (u32, u32) {
    (rustix::process::geteuid().as_raw(), rustix::process::getegid().as_raw())
}

/// The process umask (read once: setting it back is the only way to read it).
fn umask() -> u32 {
    let old = rustix::process::umask(Mode::from_raw_mode(0o022));
    rustix::process::umask(old);
    old.as_raw_mode()
}

/// Copies a tree, one entry per [`Worker::op`]; see the module documentation. The destination
/// must not exist; it is created with the source root's mode and times.
pub(crate) struct TreeCopier<'a> {
    src_root: PathBuf,
    dst_root: PathBuf,
    dst_root_fd: OwnedFd,
    levels: Vec<Level>,
    depth: usize,
    dirbuf: Vec<MaybeUninit<u8>>,
    buf: Vec<u8>,
    link_buf: Vec<u8>,
    /// (device, inode) of multiply linked files already copied → path below the copy's root.
    links: HashMap<(u64, u64), CString>,
    opts: CopyOptions,
    ids: (u32, u32),
    root: bool,
    umask: u32,
    fsync: bool,
    interrupt: &'a AtomicBool,
    /// Regular files copied and their bytes.
    pub files: u64,
    /// Bytes of file data copied.
    pub bytes: u64,
}

impl<'a> TreeCopier<'a> {
    /// Prepares a copy of `src` to `dst` (untimed: creates `dst`, opens both, reads the root's
    /// entries). With `fsync`, [`Worker::end`] runs `syncfs` on the destination filesystem.
    pub(crate) fn new(
        src: &Path,
        dst: &Path,
        opts: CopyOptions,
        fsync: bool,
        interrupt: &'a AtomicBool,
    ) -> Result<Self, EngineError> {
        let st = rustix::fs::stat(src).map_err(|e| COPY_ERR.io("stat", src, e.into()))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
            return Err(EngineError::Invalid(format!("{} is not a directory", src.display())));
        }
        rustix::fs::mkdir(dst, Mode::from_raw_mode(0o700)).map_err(|e| COPY_ERR.io("mkdir", dst, e.into()))?;
        let src_fd = open_dir(src).map_err(|e| COPY_ERR.io("open directory", src, e))?;
        let dst_fd = open_dir(dst).map_err(|e| COPY_ERR.io("open directory", dst, e))?;
        let dst_root_fd = open_dir(dst).map_err(|e| COPY_ERR.io("open directory", dst, e))?;
        let mut dirbuf = Vec::with_capacity(DIRENT_BUF);
        dirbuf.resize(DIRENT_BUF, MaybeUninit::new(0u8));
        let mut root = Level {
            src: Some(src_fd),
            dst: Some(dst_fd),
            meta: Some(Meta::of(&st)),
            ..Level::default()
        };
        root.read(&mut dirbuf, Sort::Always).map_err(|f| fail(f, src))?;
        let ids = ids();
        Ok(TreeCopier {
            src_root: src.to_path_buf(),
            dst_root: dst.to_path_buf(),
            dst_root_fd,
            levels: vec![root],
            depth: 1,
            dirbuf,
            buf: vec![0; opts.buffer.max(1)],
            link_buf: Vec::with_capacity(4096),
            links: HashMap::new(),
            opts,
            ids,
            root: ids.0 == 0,
            umask: umask(),
            fsync,
            interrupt,
            files: 0,
            bytes: 0,
        })
    }

    /// Copies one entry at depth `d` (index `i` of that level).
    fn entry(&mut self, d: usize, i: usize) -> Result<(), Fail> {
        let (lower, upper) = split_at_level(&mut self.levels, d);
        let lvl = &lower[d];
        let name = lvl.item_name(i);
        let (Some(src_dir), Some(dst_dir)) = (lvl.src.as_ref(), lvl.dst.as_ref()) else {
            return Err(Fail::Io("walk", io::Error::other("directory closed")));
        };
        let st = rustix::fs::statat(src_dir, name, AtFlags::SYMLINK_NOFOLLOW).ctx("stat")?;
        let meta = Meta::of(&st);
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => {
                rustix::fs::mkdirat(dst_dir, name, Mode::from_raw_mode(0o700)).ctx("mkdir")?;
                let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                let s = rustix::fs::openat(src_dir, name, flags, Mode::empty()).ctx("open directory")?;
                let t = rustix::fs::openat(dst_dir, name, flags, Mode::empty()).ctx("open new directory")?;
                let next = &mut upper[0];
                next.name.clear();
                next.name.extend_from_slice(name.to_bytes());
                next.src = Some(s);
                next.dst = Some(t);
                next.meta = Some(meta);
                next.read(&mut self.dirbuf, Sort::Always)?;
                self.depth += 1;
            }
            FileType::RegularFile => {
                if st.st_nlink > 1 {
                    if let Some(first) = self.links.get(&(st.st_dev, st.st_ino)) {
                        rustix::fs::linkat(&self.dst_root_fd, first.as_c_str(), dst_dir, name, AtFlags::empty())
                            .ctx("link")?;
                        return Ok(());
                    }
                }
                let s = rustix::fs::openat(
                    src_dir,
                    name,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .ctx("open")?;
                let cu = self.opts.calls == Calls::Coreutils;
                if cu {
                    rustix::fs::fstat(&s).ctx("stat")?;
                }
                // coreutils creates the copy for its owner only until owner and mode are set.
                let create = meta.mode & if cu { 0o700 } else { 0o777 };
                let t = rustix::fs::openat(
                    dst_dir,
                    name,
                    OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
                    Mode::from_raw_mode(create),
                )
                .ctx("create")?;
                let size = st.st_size as u64;
                if cu {
                    rustix::fs::fstat(&t).ctx("stat")?;
                    if size <= self.buf.len() as u64 {
                        // copy_data advises only files larger than the buffer.
                        let _ = rustix::fs::fadvise(&s, 0, 0, rustix::fs::Advice::Sequential);
                    }
                }
                copy_data(&s, &t, size, self.opts.reflink, &mut self.buf, self.interrupt)?;
                if cu {
                    // coreutils reads until a read returns 0; what a growing file added is
                    // not copied (the copy is of the size fstatat saw).
                    rustix::io::read(&s, &mut self.buf[..]).ctx("read")?;
                }
                let created = (!cu && meta.mode & 0o7000 == 0).then_some(create & !self.umask);
                finish_fd(self.ids, self.root, &t, &meta, created)?;
                drop(s);
                close_checked(t).ctx("close")?;
                self.files += 1;
                self.bytes += size;
                if st.st_nlink > 1 {
                    let mut rel = Vec::new();
                    for l in lower.iter().skip(1) {
                        rel.extend_from_slice(&l.name);
                        rel.push(b'/');
                    }
                    rel.extend_from_slice(name.to_bytes());
                    if let Ok(c) = CString::new(rel) {
                        self.links.insert((st.st_dev, st.st_ino), c);
                    }
                }
            }
            FileType::Symlink => {
                let target =
                    rustix::fs::readlinkat(src_dir, name, std::mem::take(&mut self.link_buf)).ctx("readlink")?;
                let r = rustix::fs::symlinkat(target.as_c_str(), dst_dir, name).ctx("symlink");
                self.link_buf = target.into_bytes();
                r?;
                if (meta.uid, meta.gid) != self.ids && self.root {
                    let owner = meta.owner();
                    rustix::fs::chownat(dst_dir, name, owner.0, owner.1, AtFlags::SYMLINK_NOFOLLOW).ctx("chown")?;
                }
                rustix::fs::utimensat(dst_dir, name, &meta.timestamps(), AtFlags::SYMLINK_NOFOLLOW)
                    .ctx("set times of")?;
            }
            other => {
                rustix::fs::mknodat(dst_dir, name, other, Mode::from_raw_mode(meta.mode & 0o777), st.st_rdev)
                    .ctx("mknod")?;
                if (meta.uid, meta.gid) != self.ids && self.root {
                    let owner = meta.owner();
                    rustix::fs::chownat(dst_dir, name, owner.0, owner.1, AtFlags::SYMLINK_NOFOLLOW).ctx("chown")?;
                }
                rustix::fs::chmodat(dst_dir, name, Mode::from_raw_mode(meta.mode), AtFlags::empty()).ctx("chmod")?;
                rustix::fs::utimensat(dst_dir, name, &meta.timestamps(), AtFlags::SYMLINK_NOFOLLOW)
                    .ctx("set times of")?;
            }
        }
        Ok(())
    }
}

/// The next step of a depth-first walk down the open directories `levels[..depth]`.
enum Walk {
    /// Every directory, the root's too, has been left.
    Done,
    /// Every child of the directory at this level is handled: leave it.
    Leave(usize),
    /// Handle this child (level, index) next; the level has moved past it.
    Entry(usize, usize),
}

/// Where the walk of [`TreeCopier`] and [`TreeRemover`] goes next (the one order both keep).
fn walk_step(levels: &mut [Level], depth: usize) -> Walk {
    if depth == 0 {
        return Walk::Done;
    }
    let d = depth - 1;
    let lvl = &mut levels[d];
    if lvl.next == lvl.items.len() {
        return Walk::Leave(d);
    }
    lvl.next += 1;
    Walk::Entry(d, lvl.next - 1)
}

impl Worker for TreeCopier<'_> {
    type Output = (u64, u64);

    fn op(&mut self) -> Result<Step, EngineError> {
        let (d, i) = match walk_step(&mut self.levels, self.depth) {
            Walk::Done => return Ok(Step::Done),
            Walk::Leave(d) => {
                // Every child is done: the directory's own metadata, then close it.
                let lvl = &mut self.levels[d];
                let (dst, meta) = (lvl.dst.take(), lvl.meta.take());
                lvl.src = None;
                if let (Some(fd), Some(meta)) = (dst, meta) {
                    if let Err(f) = finish_fd(self.ids, self.root, &fd, &meta, None) {
                        let p = entry_path(&self.dst_root, &self.levels, d, None);
                        return Err(fail(f, &p));
                    }
                }
                self.depth -= 1;
                return Ok(Step::Op);
            }
            Walk::Entry(d, i) => (d, i),
        };
        match self.entry(d, i) {
            Ok(()) => Ok(Step::Op),
            Err(f) => {
                let root = match &f {
                    Fail::Io(op, _) if SOURCE_OPS.contains(op) => &self.src_root,
                    _ => &self.dst_root,
                };
                Err(item_fail(f, root, &self.levels, d, i))
            }
        }
    }

    fn end(&mut self) -> Result<(), EngineError> {
        if self.fsync {
            rustix::fs::syncfs(&self.dst_root_fd).map_err(|e| COPY_ERR.io("syncfs", &self.dst_root, e.into()))?;
        }
        Ok(())
    }

    fn finish(self) -> (u64, u64) {
        (self.files, self.bytes)
    }
}

/// Removes a tree (`rm -r`), one entry per [`Worker::op`], each directory's entries in the
/// order of [`DeleteOrder`]; with `fsync`, [`Worker::end`] runs `syncfs`.
pub(crate) struct TreeRemover<'a> {
    root: PathBuf,
    parent: OwnedFd,
    root_name: CString,
    levels: Vec<Level>,
    depth: usize,
    dirbuf: Vec<MaybeUninit<u8>>,
    /// Which directories are sorted by inode number (decided once, on the root's filesystem).
    sort: Sort,
    fsync: bool,
    _interrupt: &'a AtomicBool,
}

impl<'a> TreeRemover<'a> {
    /// Prepares the removal of directory `root` (untimed: opens it and its parent, reads the
    /// filesystem's type and the root's entries).
    pub(crate) fn new(
        root: &Path,
        order: DeleteOrder,
        fsync: bool,
        interrupt: &'a AtomicBool,
    ) -> Result<Self, EngineError> {
        let parent_path = root.parent().unwrap_or(Path::new("/"));
        let parent = open_dir(parent_path).map_err(|e| COPY_ERR.io("open directory", parent_path, e))?;
        let root_name = CString::new(root.file_name().unwrap_or_default().as_bytes())
            .map_err(|_| EngineError::Invalid(format!("{} has a NUL in its name", root.display())))?;
        let fd = rustix::fs::openat(
            &parent,
            root_name.as_c_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| COPY_ERR.io("open directory", root, e.into()))?;
        let mut dirbuf = Vec::with_capacity(DIRENT_BUF);
        dirbuf.resize(DIRENT_BUF, MaybeUninit::new(0u8));
        // fts asks statfs once per device; a tree below one run directory is on one.
        let magic = rustix::fs::fstatfs(&fd)
            .map_err(|e| COPY_ERR.io("statfs", root, e.into()))?
            .f_type as i64;
        let sort = Sort::removal(order, magic);
        let mut first = Level {
            src: Some(fd),
            ..Level::default()
        };
        first.read(&mut dirbuf, sort).map_err(|f| fail(f, root))?;
        Ok(TreeRemover {
            root: root.to_path_buf(),
            parent,
            root_name,
            levels: vec![first],
            depth: 1,
            dirbuf,
            sort,
            fsync,
            _interrupt: interrupt,
        })
    }

    fn entry(&mut self, d: usize, i: usize) -> Result<(), Fail> {
        let (lower, upper) = split_at_level(&mut self.levels, d);
        let lvl = &lower[d];
        let name = lvl.item_name(i);
        let Some(dir) = lvl.src.as_ref() else {
            return Err(Fail::Io("walk", io::Error::other("directory closed")));
        };
        let mut t = lvl.items[i].dtype;
        if t == FileType::Unknown {
            let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ctx("stat")?;
            t = FileType::from_raw_mode(st.st_mode);
        }
        if t == FileType::Directory {
            let fd = rustix::fs::openat(
                dir,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .ctx("open directory")?;
            let next = &mut upper[0];
            next.name.clear();
            next.name.extend_from_slice(name.to_bytes());
            next.src = Some(fd);
            next.read(&mut self.dirbuf, self.sort)?;
            self.depth += 1;
        } else {
            rustix::fs::unlinkat(dir, name, AtFlags::empty()).ctx("unlink")?;
        }
        Ok(())
    }
}

impl Worker for TreeRemover<'_> {
    type Output = ();

    fn op(&mut self) -> Result<Step, EngineError> {
        let (d, i) = match walk_step(&mut self.levels, self.depth) {
            Walk::Done => return Ok(Step::Done),
            Walk::Leave(d) => {
                // Every child is removed: the directory itself.
                self.levels[d].src = None;
                let r = if d == 0 {
                    rustix::fs::unlinkat(&self.parent, self.root_name.as_c_str(), AtFlags::REMOVEDIR)
                } else {
                    let (lower, upper) = self.levels.split_at(d);
                    let name = upper[0].name.as_slice();
                    match (lower[d - 1].src.as_ref(), CString::new(name)) {
                        (Some(p), Ok(n)) => rustix::fs::unlinkat(p, n.as_c_str(), AtFlags::REMOVEDIR),
                        _ => Err(rustix::io::Errno::INVAL),
                    }
                };
                if let Err(e) = r {
                    return Err(COPY_ERR.io("rmdir", &entry_path(&self.root, &self.levels, d, None), e.into()));
                }
                self.depth -= 1;
                return Ok(Step::Op);
            }
            Walk::Entry(d, i) => (d, i),
        };
        self.entry(d, i)
            .map_err(|f| item_fail(f, &self.root, &self.levels, d, i))?;
        Ok(Step::Op)
    }

    fn end(&mut self) -> Result<(), EngineError> {
        if self.fsync {
            rustix::fs::syncfs(&self.parent).map_err(|e| COPY_ERR.io("syncfs", &self.root, e.into()))?;
        }
        Ok(())
    }
}

/// Removes `root` and everything below it, untimed; a missing `root` is not an error.
pub(crate) fn remove_tree(root: &Path, interrupt: &AtomicBool) -> Result<(), EngineError> {
    match root.symlink_metadata() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(COPY_ERR.io("stat", root, e)),
        Ok(m) if !m.is_dir() => return std::fs::remove_file(root).map_err(|e| COPY_ERR.io("unlink", root, e)),
        Ok(_) => {}
    }
    let mut r = TreeRemover::new(root, DeleteOrder::Rm, false, interrupt)?;
    while r.op()? == Step::Op {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Removes CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the calling thread's effective
    /// capabilities (capget/capset, version 3), so that even root meets file permissions on
    /// this thread. Other threads keep theirs.
    fn drop_dac_capabilities_of_this_thread() {
        #[repr(C)]
        struct Header {
            version: u32,
            pid: i32,
        }
        #[repr(C)]
        #[derive(Clone, Copy, Default)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        const VERSION_3: u32 = 0x2008_0522;
        const CAP_DAC_OVERRIDE: u32 = 1;
        const CAP_DAC_READ_SEARCH: u32 = 2;
        let mut hdr = Header {
            version: VERSION_3,
            pid: 0,
        };
        let mut data = [Data::default(); 2];
        // SAFETY: the kernel reads the header and writes two Data records, as declared.
        let r = unsafe { libc::syscall(libc::SYS_capget, &mut hdr as *mut Header, data.as_mut_ptr()) };
        assert_eq!(r, 0, "capget: {}", io::Error::last_os_error());
        data[0].effective &= !((1 << CAP_DAC_OVERRIDE) | (1 << CAP_DAC_READ_SEARCH));
        // SAFETY: as above; capset reads them.
        let r = unsafe { libc::syscall(libc::SYS_capset, &mut hdr as *mut Header, data.as_ptr()) };
        assert_eq!(r, 0, "capset: {}", io::Error::last_os_error());
    }
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn set_mtime(p: &Path, sec: i64, nsec: i64) {
        let t = Timestamps {
            last_access: Timespec {
                tv_sec: sec,
                tv_nsec: nsec,
            },
            last_modification: Timespec {
                tv_sec: sec,
                tv_nsec: nsec,
            },
        };
        rustix::fs::utimensat(rustix::fs::CWD, p, &t, AtFlags::SYMLINK_NOFOLLOW).expect("utimensat");
    }

    /// A user directory with every kind of entry the copier handles.
    fn user_tree(root: &Path) {
        let sub = root.join("a/b/c");
        std::fs::create_dir_all(&sub).expect("mkdir");
        std::fs::create_dir(root.join("empty")).expect("mkdir");
        std::fs::write(root.join("zero"), b"").expect("write");
        std::fs::write(root.join("a/one"), b"1").expect("write");
        let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        std::fs::write(sub.join("big.bin"), &big).expect("write");
        std::fs::write(root.join("a/b/script.sh"), b"#!/bin/sh\necho hi\n").expect("write");
        std::fs::set_permissions(root.join("a/b/script.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::write(root.join("a/private"), b"secret").expect("write");
        std::fs::set_permissions(root.join("a/private"), std::fs::Permissions::from_mode(0o600)).expect("chmod");
        std::fs::set_permissions(root.join("empty"), std::fs::Permissions::from_mode(0o2750)).expect("chmod");
        symlink("b/c/big.bin", root.join("a/rel-link")).expect("symlink");
        symlink("/nonexistent/target", root.join("dangling")).expect("symlink");
        std::fs::hard_link(root.join("a/one"), root.join("a/b/one-again")).expect("link");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o640),
            0,
        )
        .expect("mkfifo");
        // Times last, deepest first, each with nanoseconds.
        let mut n = 0;
        for p in [
            "a/b/c/big.bin",
            "a/b/c",
            "a/b/script.sh",
            "a/b/one-again",
            "a/rel-link",
            "a/private",
            "a/b",
            "a",
            "dangling",
            "fifo",
            "zero",
            "empty",
            "",
        ] {
            n += 1;
            set_mtime(&root.join(p), 1_500_000_000 + n * 1000, n * 123_457);
        }
    }

    #[test]
    fn native_copy_of_a_user_directory_is_exact() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let src = tmp.path().join("src");
        std::fs::create_dir(&src).expect("mkdir");
        user_tree(&src);
        let flag = AtomicBool::new(false);
        for (i, (reflink, buffer, calls)) in [
            (Reflink::Never, 128 * 1024, Calls::Coreutils),
            (Reflink::Never, 128 * 1024, Calls::Minimal),
            (Reflink::Never, 7, Calls::Coreutils),
            (Reflink::Auto, 4096, Calls::Minimal),
        ]
        .into_iter()
        .enumerate()
        {
            let dst = tmp.path().join(format!("dst{i}"));
            let opts = CopyOptions { reflink, buffer, calls };
            let c = TreeCopier::new(&src, &dst, opts, true, &flag).expect("copier");
            let run = phase::untimed(vec![c], &flag).expect("copy");
            // Entries: 13 below the root, plus one finish per directory (5 with the root).
            assert_eq!(run.ops, 13 + 5, "{reflink:?}");
            let (files, bytes) = run.outputs[0];
            assert_eq!(files, 5, "the second name of a hard-linked file is linked, not copied");
            assert_eq!(bytes, 300_000 + 1 + 6 + 18);
            let a = tree::list_tree(&src).expect("list src");
            let b = tree::list_tree(&dst).expect("list dst");
            tree::compare(&a, &b, true).unwrap_or_else(|d| panic!("{reflink:?}/{buffer}/{calls:?}: {d}"));
            let one = std::fs::metadata(dst.join("a/one")).expect("stat");
            assert_eq!(std::os::unix::fs::MetadataExt::nlink(&one), 2, "hard link kept");
        }
    }

    #[test]
    fn remover_deletes_everything_and_only_that() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let t = tmp.path().join("t");
        std::fs::create_dir(&t).expect("mkdir");
        user_tree(&t);
        std::fs::write(tmp.path().join("keep"), b"x").expect("write");
        let flag = AtomicBool::new(false);
        let r = TreeRemover::new(&t, DeleteOrder::Rm, true, &flag).expect("remover");
        let run = phase::untimed(vec![r], &flag).expect("remove");
        assert_eq!(run.ops, 13 + 5);
        assert!(!t.exists());
        assert!(tmp.path().join("keep").exists());
        assert!(remove_tree(&t, &flag).is_ok(), "a missing tree is fine");
    }

    /// A directory whose `getdents64` order is not its inode order: files made in `tmp/src`,
    /// then moved into `dir` last-made first (a rename keeps the inode). Returns the names in
    /// directory order and in inode order.
    fn shuffled_dir(tmp: &Path, dir: &Path) -> (Vec<String>, Vec<String>) {
        let src = tmp.join("src");
        std::fs::create_dir(&src).expect("mkdir");
        std::fs::create_dir(dir).expect("mkdir");
        let names: Vec<String> = (0..40).map(|i| format!("f{i:02}")).collect();
        for n in &names {
            std::fs::write(src.join(n), b"x").expect("write");
        }
        for n in names.iter().rev() {
            std::fs::rename(src.join(n), dir.join(n)).expect("rename");
        }
        std::fs::remove_dir(&src).expect("rmdir");
        let listed = |d: &Path| -> Vec<(String, u64)> {
            std::fs::read_dir(d)
                .expect("read_dir")
                .map(|e| {
                    let e = e.expect("entry");
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        std::os::unix::fs::DirEntryExt::ino(&e),
                    )
                })
                .collect()
        };
        let in_dir_order = listed(dir);
        let mut by_inode = in_dir_order.clone();
        by_inode.sort_by_key(|(_, ino)| *ino);
        let names = |v: Vec<(String, u64)>| v.into_iter().map(|(n, _)| n).collect::<Vec<_>>();
        (names(in_dir_order), names(by_inode))
    }

    /// The names removed by each of the remover's first `n` steps, in order.
    fn removal_sequence(dir: &Path, order: DeleteOrder, n: usize) -> Vec<String> {
        let flag = AtomicBool::new(false);
        let mut r = TreeRemover::new(dir, order, false, &flag).expect("remover");
        let present = || -> std::collections::BTreeSet<String> {
            std::fs::read_dir(dir)
                .expect("read_dir")
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect()
        };
        let mut seq = Vec::new();
        for _ in 0..n {
            let before = present();
            assert_eq!(r.op().expect("step"), Step::Op);
            let gone: Vec<String> = before.difference(&present()).cloned().collect();
            assert_eq!(gone.len(), 1, "one entry per step: {gone:?}");
            seq.push(gone[0].clone());
        }
        while r.op().expect("step") == Step::Op {}
        assert!(!dir.exists());
        seq
    }

    #[test]
    fn remover_unlinks_in_rm_order_or_by_inode() {
        let tmp = tempfile::tempdir().expect("tempdir");
        for (i, order) in [DeleteOrder::Rm, DeleteOrder::Inode].into_iter().enumerate() {
            let work = tmp.path().join(format!("w{i}"));
            std::fs::create_dir(&work).expect("mkdir");
            let dir = work.join("t");
            let (in_dir_order, by_inode) = shuffled_dir(&work, &dir);
            assert_ne!(
                in_dir_order, by_inode,
                "the test needs a directory order that is not inode order"
            );
            let want = match order {
                DeleteOrder::Rm => in_dir_order,
                DeleteOrder::Inode => by_inode,
            };
            assert_eq!(removal_sequence(&dir, order, want.len()), want, "{order:?}");
        }
    }

    #[test]
    fn rm_order_sorts_only_large_directories_and_not_on_tmpfs_nfs_cifs() {
        const EXT4: i64 = 0xEF53;
        let rm = Sort::removal(DeleteOrder::Rm, EXT4);
        assert_eq!(rm, Sort::Above(FTS_SORT_THRESHOLD));
        assert!(!rm.sorts(10_000) && rm.sorts(10_001), "fts sorts above 10,000 entries");
        for magic in FTS_NO_SORT_MAGICS {
            assert!(!Sort::removal(DeleteOrder::Rm, *magic).sorts(1_000_000), "{magic:#x}");
        }
        let inode = Sort::removal(DeleteOrder::Inode, EXT4);
        assert!(inode.sorts(2) && Sort::removal(DeleteOrder::Inode, 0x0102_1994).sorts(2));
        assert!(Sort::Always.sorts(0));
    }

    #[test]
    fn workload_on_a_user_directory_verifies_and_cleans_up() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let src = tmp.path().join("user");
        std::fs::create_dir(&src).expect("mkdir");
        user_tree(&src);
        let run_dir = tmp.path().join("run");
        std::fs::create_dir(&run_dir).expect("mkdir");
        let flag = AtomicBool::new(false);
        for method in [Method::Native, Method::Cp] {
            let spec = TreecopySpec {
                dataset: DatasetSource::Dir(src.clone()),
                method,
                verify: true,
                ..TreecopySpec::default()
            };
            assert!(spec.validate().is_ok());
            let s = crate::run_quiet(&spec, &run_dir, &flag).unwrap_or_else(|e| panic!("{method:?}: {e}"));
            let names: Vec<&str> = s.phases.iter().map(|p| p.phase.as_str()).collect();
            assert_eq!(names, [COPY, DELETE]);
            for p in &s.phases {
                let (m, v) = &p.metrics[0];
                assert_eq!((m.name.as_str(), m.unit), ("time", Unit::Seconds));
                assert!((*v - p.wall.as_secs_f64()).abs() < 1e-9 && *v > 0.0);
                assert!(p.cpu.process_pct.is_finite());
            }
            assert!(
                s.notes[0].contains(method.as_str()) || s.notes[0].contains("cp -a"),
                "{:?}",
                s.notes
            );
            assert!(s.notes[0].contains("reflink=never"), "{:?}", s.notes);
            assert!(crate::dir_is_empty(&run_dir), "{method:?} left files behind");
        }
        // The source is untouched.
        assert!(src.join("a/b/c/big.bin").exists());
    }

    #[test]
    fn workload_on_a_generated_dataset_copies_exactly() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        for kind in DatasetKind::ALL {
            let spec = TreecopySpec {
                dataset: DatasetSource::Generated(kind),
                dataset_scale: if kind == DatasetKind::Dvd { 0.002 } else { 0.005 },
                content: Content::Text,
                verify: true,
                ..TreecopySpec::default()
            };
            let s = crate::run_quiet(&spec, tmp.path(), &flag).unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_eq!(s.phases.len(), 2);
            assert!(s.phases[0].metrics.iter().any(|(m, _)| m.name == "lat_p99"));
            assert!(crate::dir_is_empty(tmp.path()));
        }
    }

    #[test]
    fn on_exfat_a_tree_with_symlinks_is_unsupported_and_nothing_is_laid_out() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        // The kernel tree at 0.02 holds a few symlinks; at 0.002 its share rounds to none.
        let spec = |scale| TreecopySpec {
            dataset_scale: scale,
            ..TreecopySpec::default()
        };
        assert!(DatasetKind::Kernel.profile().scaled(0.02).symlinks > 0);
        assert_eq!(DatasetKind::Kernel.profile().scaled(0.002).symlinks, 0);
        let on = |fs: &str| crate::RunContext {
            fs: Some(crate::fstype::FsType::of(fs)),
            ..crate::RunContext::quiet(tmp.path(), &flag)
        };
        let sample = crate::run(&spec(0.02), &on("exfat")).expect("not run, not failed");
        assert!(sample.phases.is_empty());
        assert_eq!(
            sample.notes,
            [
                "copy: unsupported on exfat (no symbolic links); the phase was left out",
                "delete: unsupported on exfat (no symbolic links); the phase was left out"
            ]
        );
        assert!(crate::dir_is_empty(tmp.path()));
        // A tree without links needs nothing of the kind; a type with links runs either.
        assert!(spec(0.002).needs(COPY).is_empty());
        let sample = crate::run(&spec(0.02), &on("ext4")).expect("treecopy");
        assert_eq!(sample.phases.len(), 2);
    }

    #[test]
    fn interrupt_stops_and_cleans_up() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(true);
        let spec = TreecopySpec {
            dataset_scale: 0.002,
            ..TreecopySpec::default()
        };
        assert!(matches!(
            crate::run_quiet(&spec, tmp.path(), &flag),
            Err(EngineError::Interrupted)
        ));
        assert!(crate::dir_is_empty(tmp.path()));
        // Interrupted inside a file's data copy.
        let src = tmp.path().join("s");
        std::fs::create_dir(&src).expect("mkdir");
        std::fs::write(src.join("f"), vec![1u8; 1 << 20]).expect("write");
        let c = TreeCopier::new(
            &src,
            &tmp.path().join("d"),
            CopyOptions {
                reflink: Reflink::Never,
                buffer: 4096,
                calls: Calls::default(),
            },
            false,
            &flag,
        )
        .expect("copier");
        let mut c = c;
        assert!(matches!(c.op(), Err(EngineError::Interrupted)));
    }

    #[test]
    fn errors_name_the_operation_and_path() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let src = tmp.path().join("s");
        std::fs::create_dir(&src).expect("mkdir");
        let dst = tmp.path().join("d");
        std::fs::create_dir(&dst).expect("mkdir");
        match TreeCopier::new(
            &src,
            &dst,
            CopyOptions {
                reflink: Reflink::Never,
                buffer: 16,
                calls: Calls::default(),
            },
            false,
            &flag,
        ) {
            Err(EngineError::Io { what, source }) => {
                assert_eq!(what, format!("mkdir {}", dst.display()));
                assert_eq!(source.kind(), io::ErrorKind::AlreadyExists);
            }
            other => panic!("expected mkdir error, got {:?}", other.err()),
        }
        // A file that cannot be read names the source path. Root reads a mode-000 file through
        // CAP_DAC_OVERRIDE, so the copy runs on a thread that drops that capability (and
        // CAP_DAC_READ_SEARCH) from its own effective set: capabilities are per thread, and a
        // single worker runs inline on the calling thread. As non-root the drop is a no-op.
        std::fs::write(src.join("locked"), b"x").expect("write");
        std::fs::set_permissions(src.join("locked"), std::fs::Permissions::from_mode(0o000)).expect("chmod");
        let d2 = tmp.path().join("d2");
        std::thread::scope(|s| {
            s.spawn(|| {
                drop_dac_capabilities_of_this_thread();
                let denied = std::fs::File::open(src.join("locked")).expect_err("mode 000 must be unreadable now");
                assert_eq!(denied.raw_os_error(), Some(libc::EACCES));
                let c = TreeCopier::new(
                    &src,
                    &d2,
                    CopyOptions {
                        reflink: Reflink::Never,
                        buffer: 16,
                        calls: Calls::default(),
                    },
                    false,
                    &flag,
                )
                .expect("copier");
                let e = phase::untimed(vec![c], &flag).expect_err("unreadable");
                assert!(
                    e.to_string().starts_with(&format!("open {}/locked", src.display())),
                    "{e}"
                );
            })
            .join()
            .expect("unprivileged copy thread");
        });
        let e = COPY_ERR.io(
            "write",
            Path::new("/mnt/x/tree.copy/f"),
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        let text = e.to_string();
        assert!(text.starts_with("write /mnt/x/tree.copy/f (filesystem full"), "{text}");
        assert!(text.contains("No space left on device"), "{text}");
        // A missing user directory is refused when the suite is loaded.
        let spec = TreecopySpec {
            dataset: DatasetSource::Dir(tmp.path().join("nope")),
            ..TreecopySpec::default()
        };
        assert!(spec
            .validate()
            .expect_err("missing dir")
            .0
            .contains("not an existing directory"));
    }

    #[test]
    fn spec_parses_scales_and_sizes_honestly() {
        let s: TreecopySpec = toml::from_str("").expect("empty spec");
        assert_eq!(s, TreecopySpec::default());
        assert_eq!(s.dataset, DatasetSource::Generated(DatasetKind::Kernel));
        assert_eq!(
            (s.method, s.reflink, s.content),
            (Method::Native, Reflink::Never, Content::Random)
        );
        let s: TreecopySpec = toml::from_str(
            r#"dataset = "portage"
               dataset_scale = 0.5
               method = "cp"
               reflink = "auto"
               content = "text"
               seed = 3
               buffer = "1M"
               fsync = false"#,
        )
        .expect("spec");
        assert_eq!(s.dataset, DatasetSource::Generated(DatasetKind::Portage));
        assert_eq!(
            (s.method, s.reflink, s.content, s.seed),
            (Method::Cp, Reflink::Auto, Content::Text, 3)
        );
        assert!(toml::from_str::<TreecopySpec>("dataset = \"kernal\"")
            .expect_err("typo")
            .to_string()
            .contains("unknown dataset"));
        assert!(toml::from_str::<TreecopySpec>("reflink = \"always\"").is_err());
        assert_eq!(s.delete_order, DeleteOrder::Rm);
        let inode: TreecopySpec = toml::from_str("delete_order = \"inode\"").expect("spec");
        assert_eq!(inode.delete_order, DeleteOrder::Inode);
        assert!(inode.describe().contains("delete_order=inode"), "{}", inode.describe());
        assert!(toml::from_str::<TreecopySpec>("delete_order = \"random\"").is_err());
        assert!(toml::from_str::<TreecopySpec>("datset = \"kernel\"").is_err());
        let d = s.describe();
        assert!(
            d.contains("dataset=portage×0.5") && d.contains("method=cp reflink=auto"),
            "{d}"
        );

        let k = TreecopySpec::default();
        let WorkloadKind::Treecopy(small) = k.scaled(0.05) else {
            panic!("treecopy scales to treecopy")
        };
        assert!((small.dataset_scale - 0.05).abs() < 1e-12);
        // Disk space: both trees plus slack, at least twice the data.
        let st = datasets::Manifest::generate(DatasetKind::Kernel, 0.05, 0).stats();
        let fp = small.footprint();
        assert_eq!((fp.files, fp.dirs), (2 * st.files, 2 * (st.dirs + 1)), "{fp:?}");
        assert!(fp.block_bytes >= 2 * st.bytes && fp.block_bytes < 2 * st.bytes + 2 * 4096 * st.files);
        assert!(k.footprint().block_bytes > 2 * 1_200_000_000);
        let bad = TreecopySpec {
            dataset_scale: 0.0,
            ..TreecopySpec::default()
        };
        assert!(bad.validate().is_err());
    }
}
