//! The `image` workload: read-only image filesystems (erofs, squashfs) are built from a tree,
//! not formatted (issue 31, item 2). It runs only on a type of
//! [`crate::fstype::Backing::Built`], whose
//! provisioner gives it a staging filesystem ([`crate::fstype::STAGING`]) to hold the tree and
//! the image; the variant's own mkfs arguments (`-zlz4hc -C65536`, `-comp xz -b 64K`) go to
//! the build tool, so compressor × cluster or block size are filesystem variants of one suite,
//! compared in one table.
//!
//! | phase | what is timed | metrics |
//! |---|---|---|
//! | (untimed) | the dataset (`kernel` by default, text content) laid out as `tree/` on the staging filesystem, `syncfs`, then listed with a content hash of every file | |
//! | `build` | after drop caches: the real tool, `mkfs.erofs [fsbench's] [variant's] image.img tree` or `mksquashfs tree image.img [fsbench's] [variant's]` ([`FsType::build_args`]), then `syncfs` of the staging filesystem | `time` (s, lower), `ratio` (tree file bytes / image bytes, higher), `image_mib` (MiB, lower), `tree_mib` (detail) |
//! | (untimed) | the image attached read-only to a loop device (`losetup --read-only --direct-io=on`) and mounted `-o ro` with the type | |
//! | `cold_read` | after drop caches: the whole tree walked (`readdir`, path order) and every regular file read whole in 1 MiB reads | `throughput` (MiB/s of file data), `time` (s, detail), `files` (detail) |
//! | (untimed) | the mounted tree listed again and compared with the source: every path, type, mode, size, symlink target and content hash (times and owners are left out: the tools set them) | |
//! | `random_read` | after drop caches: `random_reads` distinct files in an order fixed by the seed, each opened and read whole | `rate` (files/s), `throughput` (MiB/s, detail) |
//!
//! Invariants: the cold read must read exactly the source's regular files and bytes, the
//! listing must match the source, and the random read must read exactly the chosen files'
//! bytes; otherwise the repeat fails naming the difference (a truncated or corrupt image, a
//! file the tool left out), never a sample. The loop device and the mount are recorded in the
//! run's undo log the moment they may exist, and undone (unmount, detach) on success, error,
//! interrupt and panic; the tree and the image are removed at the end.
//!
//! Where it runs: reading needs the kernel's driver. On a running kernel that has it (this
//! VM's 6.18 has both built in) the variant runs on the host; `erofs@guest` / `squashfs@guest`
//! run the whole workload in a QEMU guest (the host's tools through its 9p root), where the
//! running kernel lacks a driver or to compare kernels; under TCG the build's time is emulated
//! too (compare it only with other guest rows), while the image size and ratio do not depend
//! on where the tool runs.
//!
//! References: erofs-utils' mkfs.erofs(1) and PERFORMANCE.md, squashfs-tools' mksquashfs(1),
//! Documentation/filesystems/erofs.rst and squashfs.rst of Linux; doc/images.md.

use super::aging::measured::{read_all, shuffled};
use super::treecopy::TreecopySpec;
use crate::copy::{syncfs_path, timed_command};
use crate::datasets::{tree, Content, ContentPool, DatasetKind, DatasetSource, Manifest};
use crate::fstype::FsType;
use crate::metric::{MetricId, RawSample, Role, Unit};
use crate::phase::{Caches, Phases, Policy};
use crate::undo::{Detach, Stack, Unmount};
use crate::units::Bytes;
use crate::Invalid;
use crate::{EngineError, ErrHint, RunContext, Workload, WorkloadKind};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Phase: build the image from the tree.
pub const BUILD: &str = "build";
/// Phase: read the whole tree from the mounted image.
pub const COLD_READ: &str = "cold_read";
/// Phase: read seeded random files from the mounted image.
pub const RANDOM_READ: &str = "random_read";
/// Metric of `build`: tree file bytes / image bytes.
pub const RATIO: &str = "ratio";
/// Metric of `build`: the image's size, MiB.
pub const IMAGE_MIB: &str = "image_mib";
/// Detail metric of `build`: the tree's file data, MiB.
pub const TREE_MIB: &str = "tree_mib";
/// Detail metric of `cold_read`: regular files read.
pub const FILES: &str = "files";

/// The laid-out dataset, in the run directory.
const TREE: &str = "tree";
/// The built image, in the run directory.
const IMAGE: &str = "image.img";
/// Where the image is mounted, in the run directory.
const MNT: &str = "mnt";
/// What to change when the staging filesystem is full.
const ERR: ErrHint = ErrHint("use a smaller --scale or dataset_scale, or a larger image_size");

/// Parameters of the image workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageSpec {
    /// The tree to build from: `kernel` (default), `portage`, `mixed`, `dvd` (generated, see
    /// [`crate::datasets`]) or the path of an existing directory (built from as it is).
    #[serde(default = "default_dataset")]
    pub dataset: DatasetSource,
    /// Multiplies the generated dataset's files, directories and bytes (`--scale` multiplies it
    /// further). Default 0.02 (the kernel tree: 1,500 files, 23 MiB). Ignored for a directory.
    #[serde(default = "default_scale")]
    pub dataset_scale: f64,
    /// Seed of the generated dataset and of the random read's order. Default 0.
    #[serde(default)]
    pub seed: u64,
    /// Contents of generated files: `text` (default: source-code-like, compressible as source
    /// code is), `random` (incompressible) or `zeros`.
    #[serde(default = "default_content")]
    pub content: Content,
    /// Files `random_read` reads (distinct, at most every file). Default 500.
    #[serde(default = "default_random_reads")]
    pub random_reads: u32,
}

fn default_dataset() -> DatasetSource {
    DatasetSource::Generated(DatasetKind::Kernel)
}
fn default_scale() -> f64 {
    0.02
}
fn default_content() -> Content {
    Content::Text
}
fn default_random_reads() -> u32 {
    500
}

impl Default for ImageSpec {
    fn default() -> Self {
        ImageSpec {
            dataset: default_dataset(),
            dataset_scale: default_scale(),
            seed: 0,
            content: default_content(),
            random_reads: default_random_reads(),
        }
    }
}

impl ImageSpec {
    /// The same tree as treecopy lays out, for its footprint.
    fn as_treecopy(&self) -> TreecopySpec {
        TreecopySpec {
            dataset: self.dataset.clone(),
            dataset_scale: self.dataset_scale,
            seed: self.seed,
            content: self.content,
            ..TreecopySpec::default()
        }
    }
}

impl Workload for ImageSpec {
    fn phases(&self) -> Vec<String> {
        [BUILD, COLD_READ, RANDOM_READ].map(str::to_string).to_vec()
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        WorkloadKind::Image(ImageSpec {
            dataset_scale: self.dataset_scale * factor,
            random_reads: super::scaled_count(self.random_reads, factor, 1),
            ..self.clone()
        })
    }

    fn validate(&self) -> Result<(), Invalid> {
        if self.random_reads == 0 {
            return Err("random_reads must be at least 1".into());
        }
        self.as_treecopy().validate()
    }

    fn builds_image(&self) -> bool {
        true
    }

    fn content(&self) -> Option<Content> {
        Some(self.content)
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        // The tree and an image no larger than it (plus the tool's metadata) coexist.
        self.as_treecopy().footprint()
    }

    fn describe(&self) -> String {
        let what = match &self.dataset {
            DatasetSource::Generated(k) => {
                let n = k.profile().scaled(self.dataset_scale);
                format!(
                    "dataset={k}×{} ({} files, {}, seed {}, content {})",
                    self.dataset_scale,
                    n.files,
                    Bytes(n.bytes).human(),
                    self.seed,
                    self.content
                )
            }
            DatasetSource::Dir(p) => format!("dataset={}", p.display()),
        };
        format!("image {what} random_reads={}", self.random_reads)
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        self.validate()?;
        let t = ctx.fs.filter(|t| t.is_built()).ok_or_else(|| {
            EngineError::Invalid(
                "image builds a read-only image: run it on erofs or squashfs (e.g. --fs erofs@guest)".into(),
            )
        })?;
        let result = run_phases(self, ctx, t);
        // Best effort on every path: leave the run directory as it was given (the mount and
        // loop device are gone by now: their guard lives in run_phases).
        let _ = std::fs::remove_file(ctx.dir.join(IMAGE));
        let _ = std::fs::remove_dir_all(ctx.dir.join(TREE));
        let _ = std::fs::remove_dir(ctx.dir.join(MNT));
        result
    }
}

fn run_phases(spec: &ImageSpec, ctx: &RunContext, t: &'static FsType) -> Result<RawSample, EngineError> {
    let mut phases = Phases::new(ctx);
    let (image, mnt) = (ctx.dir.join(IMAGE), ctx.dir.join(MNT));
    // The tool runs in the run directory: the paths it is given are relative to it.
    let (source, source_arg) = match &spec.dataset {
        DatasetSource::Generated(kind) => {
            let tree = ctx.dir.join(TREE);
            let manifest = Manifest::generate(*kind, spec.dataset_scale, spec.seed);
            manifest.materialize(&tree, &ContentPool::new(spec.content, spec.seed), ctx.interrupt)?;
            (tree, TREE.to_string())
        }
        DatasetSource::Dir(p) => (p.clone(), path_arg(p)),
    };
    syncfs_path(ctx.dir)?;
    let listing = |root: &Path| tree::list_tree(root).map_err(|e| ERR.io("list the tree under", root, e));
    let expected = normalized(listing(&source)?);
    let sum = tree::summarize(&expected);

    // build
    let args = t
        .build_args(ctx.mkfs_args, &source_arg, IMAGE)
        .ok_or_else(|| EngineError::Invalid(format!("{} is not built from a tree", t.name)))?;
    let mut cmd = Command::new(t.mkfs_program(t.name));
    cmd.args(&args).current_dir(ctx.dir);
    phases.note(format!("image: {} {}", t.mkfs_program(t.name), args.join(" ")));
    phases.begin(BUILD, Caches::DropIfAsked);
    let built = timed_command(&phases, cmd, Some(ctx.dir))?;
    let image_bytes = std::fs::metadata(&image).map_err(|e| ERR.io("stat", &image, e))?.len();
    let metrics = build_metrics(built.wall.as_secs_f64(), sum.bytes, image_bytes);
    phases.record(BUILD, &built, metrics, &Policy::new());

    // Unmounted and detached by `undo()` below or, on an early return, on drop.
    let mut mounted = Stack::new(ctx.state.map(|s| s.share()));
    mount_image(&mut mounted, t, &image, &mnt)?;

    // cold_read: the walk is part of it, as in `find | xargs cat`.
    phases.begin(COLD_READ, Caches::DropIfAsked);
    let read = phases.region(|| {
        let files = regular_files(&mnt)?;
        let bytes = read_all(&files, ctx.interrupt)?;
        Ok((files, bytes))
    })?;
    let (files, bytes) = &read.value;
    check_read(COLD_READ, files.len() as u64, *bytes, sum.files, sum.bytes)?;
    let secs = read.wall.as_secs_f64();
    phases.record(
        COLD_READ,
        &read,
        vec![
            mib_per_sec(*bytes, secs),
            (MetricId::lower("time", Unit::Seconds).with_role(Role::Detail), secs),
            (
                MetricId::higher(FILES, Unit::Count).with_role(Role::Detail),
                files.len() as f64,
            ),
        ],
        &Policy::new(),
    );
    compare(&expected, &normalized(listing(&mnt)?))?;

    // random_read
    let sizes: HashMap<PathBuf, u64> = expected
        .iter()
        .filter(|e| e.kind == tree::EntryType::File)
        .map(|e| (mnt.join(&e.path), e.size))
        .collect();
    let n = (spec.random_reads as usize).min(files.len());
    let chosen: Vec<PathBuf> = shuffled(files.clone(), spec.seed).into_iter().take(n).collect();
    let want: u64 = chosen.iter().map(|p| sizes.get(p).copied().unwrap_or(0)).sum();
    phases.begin(RANDOM_READ, Caches::DropIfAsked);
    let read = phases.region(|| read_all(&chosen, ctx.interrupt))?;
    check_read(RANDOM_READ, n as u64, read.value, n as u64, want)?;
    let secs = read.wall.as_secs_f64();
    phases.record(
        RANDOM_READ,
        &read,
        vec![
            (MetricId::higher("rate", Unit::OpsPerSec), n as f64 / secs.max(1e-9)),
            (
                MetricId::higher("throughput", Unit::MibPerSec).with_role(Role::Detail),
                mib_per_sec(read.value, secs).1,
            ),
        ],
        &Policy::new(),
    );
    mounted
        .undo()
        .map_err(|e| EngineError::io("unmount the image", std::io::Error::other(e.to_string())))?;
    Ok(phases.finish())
}

/// `build`'s metrics: its time in `secs`, and the image's facts: the ratio is the tree's file
/// data over the image's size in bytes.
fn build_metrics(secs: f64, tree_bytes: u64, image_bytes: u64) -> Vec<(MetricId, f64)> {
    let mib = |b: u64| b as f64 / Bytes::MIB as f64;
    vec![
        (MetricId::lower("time", Unit::Seconds), secs),
        (
            MetricId::higher(RATIO, Unit::Ratio),
            tree_bytes as f64 / image_bytes.max(1) as f64,
        ),
        (MetricId::lower(IMAGE_MIB, Unit::Mib), mib(image_bytes)),
        (
            MetricId::higher(TREE_MIB, Unit::Mib).with_role(Role::Detail),
            mib(tree_bytes),
        ),
    ]
}

/// `bytes` in `secs` as MiB/s, the headline `throughput`.
fn mib_per_sec(bytes: u64, secs: f64) -> (MetricId, f64) {
    (
        MetricId::higher("throughput", Unit::MibPerSec),
        bytes as f64 / Bytes::MIB as f64 / secs.max(1e-9),
    )
}

/// `Err` unless a read phase read exactly `want_files` files and `want_bytes` bytes.
fn check_read(phase: &str, files: u64, bytes: u64, want_files: u64, want_bytes: u64) -> Result<(), EngineError> {
    if (files, bytes) == (want_files, want_bytes) {
        return Ok(());
    }
    Err(EngineError::Invalid(format!(
        "{phase}: read {files} files and {bytes} bytes from the image, where the tree has {want_files} files and {want_bytes} bytes"
    )))
}

/// A listing with what the image tools set rather than keep cleared: times (`-T0`; squashfs
/// keeps whole seconds) and owners (`--all-root`, `-all-root`).
fn normalized(mut entries: Vec<tree::TreeEntry>) -> Vec<tree::TreeEntry> {
    for e in &mut entries {
        e.mtime = (0, 0);
        e.uid = 0;
        e.gid = 0;
    }
    entries
}

/// The mounted tree against its source ([`tree::compare`] of the normalized listings).
fn compare(source: &[tree::TreeEntry], image: &[tree::TreeEntry]) -> Result<(), EngineError> {
    tree::compare(source, image, false)
        .map_err(|d| EngineError::Invalid(format!("the mounted image differs from its tree: {d}")))
}

/// The regular files under `root`, walked with `readdir` and sorted per directory (path order).
fn regular_files(root: &Path) -> Result<Vec<PathBuf>, EngineError> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<(PathBuf, std::fs::FileType)> = Vec::new();
        for e in std::fs::read_dir(&dir).map_err(|e| ERR.io("read directory", &dir, e))? {
            let e = e.map_err(|e| ERR.io("read directory", &dir, e))?;
            let kind = e.file_type().map_err(|err| ERR.io("stat", &e.path(), err))?;
            entries.push((e.path(), kind));
        }
        entries.sort_unstable_by(|a, b| b.0.cmp(&a.0));
        for (p, kind) in entries {
            if kind.is_dir() {
                stack.push(p);
            } else if kind.is_file() {
                files.push(p);
            }
        }
    }
    files.sort_unstable();
    Ok(files)
}

fn path_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Attaches `image` read-only and mounts it `-o ro` as type `t` on `mnt`, each piece pushed on
/// `undo` (recorded in the run's log) the moment it may exist.
fn mount_image(undo: &mut Stack, t: &FsType, image: &Path, mnt: &Path) -> Result<(), EngineError> {
    let fail = |what: &str, e: crate::host::HostError| EngineError::io(what, std::io::Error::other(e.to_string()));
    let args = ["--find", "--show", "--read-only", "--direct-io=on", &path_arg(image)];
    let dev = crate::host::run_tool("losetup", &args)
        .map_err(|e| fail("attach the image to a loop device", e))?
        .trim()
        .to_string();
    undo.push(Detach {
        device: dev.clone(),
        image: image.to_path_buf(),
    });
    std::fs::create_dir(mnt).map_err(|e| ERR.io("create", mnt, e))?;
    undo.push(Unmount {
        mountpoint: mnt.to_path_buf(),
        source: dev.clone(),
    });
    crate::host::run_tool("mount", &["-t", t.name, "-o", "ro", &dev, &path_arg(mnt)])
        .map_err(|e| fail(&format!("mount the {} image", t.name), e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// A small tree: two files in a directory and one at the top.
    fn small_tree(root: &Path) {
        std::fs::create_dir_all(root.join("d")).unwrap();
        std::fs::write(root.join("d/a.c"), b"int main() { return 0; }\n").unwrap();
        std::fs::write(root.join("d/b.h"), b"#pragma once\n").unwrap();
        std::fs::write(root.join("top"), b"x").unwrap();
    }

    #[test]
    fn a_bare_kind_means_the_defaults_and_bad_settings_are_refused() {
        let k: WorkloadKind = toml::from_str("kind = \"image\"").unwrap();
        assert_eq!(k, WorkloadKind::Image(ImageSpec::default()));
        assert_eq!(k.workload().phases(), [BUILD, COLD_READ, RANDOM_READ]);
        assert!(k.workload().builds_image());
        let bad = ImageSpec {
            random_reads: 0,
            ..ImageSpec::default()
        };
        assert!(bad.validate().unwrap_err().0.contains("random_reads"));
        let bad = ImageSpec {
            dataset_scale: 0.0,
            ..ImageSpec::default()
        };
        assert!(bad.validate().unwrap_err().0.contains("dataset_scale"));
        assert!(toml::from_str::<WorkloadKind>("kind = \"image\"\ncompressor = \"xz\"").is_err());
        let WorkloadKind::Image(s) = ImageSpec::default().scaled(0.5) else {
            panic!("scaled to another kind")
        };
        assert_eq!((s.dataset_scale, s.random_reads), (0.01, 250));
    }

    #[test]
    fn build_metrics_give_the_ratio_of_tree_bytes_to_image_bytes_with_their_directions() {
        let m = build_metrics(2.0, 10 * Bytes::MIB, 4 * Bytes::MIB);
        let get = |n: &str| m.iter().find(|(id, _)| id.name == n).unwrap();
        assert_eq!(get("time").1, 2.0);
        assert_eq!(get(RATIO).1, 2.5);
        assert_eq!(get(RATIO).0.direction, crate::metric::Direction::HigherIsBetter);
        assert_eq!(get(IMAGE_MIB).1, 4.0);
        assert_eq!(get(IMAGE_MIB).0.direction, crate::metric::Direction::LowerIsBetter);
        assert_eq!(get(TREE_MIB).0.role, Role::Detail);
        // An empty image file does not divide by zero.
        assert!(build_metrics(1.0, 5, 0).iter().all(|(_, v)| v.is_finite()));
    }

    #[test]
    fn the_read_checks_fail_on_a_missing_file_or_a_short_read() {
        assert!(check_read(COLD_READ, 3, 100, 3, 100).is_ok());
        let e = check_read(COLD_READ, 2, 100, 3, 100).unwrap_err().to_string();
        assert!(e.contains("read 2 files") && e.contains("has 3 files"), "{e}");
        assert!(check_read(RANDOM_READ, 3, 99, 3, 100).is_err());
    }

    #[test]
    fn the_comparison_ignores_times_and_owners_but_catches_a_truncated_changed_or_missing_file() {
        let tmp = tempfile::tempdir().unwrap();
        let (src, img) = (tmp.path().join("src"), tmp.path().join("img"));
        small_tree(&src);
        small_tree(&img);
        let list = |p: &Path| normalized(tree::list_tree(p).unwrap());
        // Times differ (written later) and are left out, as the tools set them.
        let old = std::fs::File::options().write(true).open(img.join("top")).unwrap();
        old.set_modified(std::time::SystemTime::UNIX_EPOCH).unwrap();
        compare(&list(&src), &list(&img)).unwrap();
        std::fs::write(img.join("d/a.c"), b"int main() { return 0; }").unwrap();
        let e = compare(&list(&src), &list(&img)).unwrap_err().to_string();
        assert!(e.contains("d/a.c") && e.contains("size"), "{e}");
        std::fs::write(img.join("d/a.c"), b"int main() { return 1; }\n").unwrap();
        let e = compare(&list(&src), &list(&img)).unwrap_err().to_string();
        assert!(e.contains("content hash"), "{e}");
        std::fs::remove_file(img.join("d/a.c")).unwrap();
        let e = compare(&list(&src), &list(&img)).unwrap_err().to_string();
        assert!(e.contains("missing"), "{e}");
    }

    #[test]
    fn the_walk_finds_every_regular_file_in_path_order_and_reads_them_whole() {
        let tmp = tempfile::tempdir().unwrap();
        small_tree(tmp.path());
        std::os::unix::fs::symlink("top", tmp.path().join("link")).unwrap();
        let files = regular_files(tmp.path()).unwrap();
        let names: Vec<_> = files.iter().map(|p| p.strip_prefix(tmp.path()).unwrap()).collect();
        assert_eq!(names, [Path::new("d/a.c"), Path::new("d/b.h"), Path::new("top")]);
        assert_eq!(read_all(&files, &AtomicBool::new(false)).unwrap(), 25 + 13 + 1);
    }

    #[test]
    fn it_refuses_a_type_that_is_not_built_and_other_workloads_refuse_a_built_one() {
        let tmp = tempfile::tempdir().unwrap();
        let flag = AtomicBool::new(false);
        let ext4 = RunContext {
            fs: Some(FsType::of("ext4")),
            ..RunContext::quiet(tmp.path(), &flag)
        };
        let e = crate::run(&ImageSpec::default(), &ext4).unwrap_err().to_string();
        assert!(e.contains("erofs or squashfs"), "{e}");
        let erofs = RunContext {
            fs: Some(FsType::of("erofs")),
            ..RunContext::quiet(tmp.path(), &flag)
        };
        let bonnie = crate::BonnieSpec::default();
        let e = crate::run(&bonnie, &erofs).unwrap_err().to_string();
        assert!(e.contains("only the `image` workload"), "{e}");
        assert!(crate::dir_is_empty(tmp.path()));
    }
}
