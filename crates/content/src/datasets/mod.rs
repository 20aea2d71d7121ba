//! Deterministic dataset generators: trees of files that look, to a filesystem, like the data
//! the published studies copied (a Linux source tree, the Gentoo portage tree, a mixed project
//! tree, a DVD image), made from a seed and a scale; or any directory the user names.
//!
//! # Profiles at scale 1
//!
//! | kind | files | directories | max depth (directories/entries) | bytes | sizes | symlinks | modelled on |
//! |---|---|---|---|---|---|---|---|
//! | `kernel` | 75,000 | 5,000 | 10/11 | 1.2 GB | log-normal σ 1.4, 16 B … 4 MiB (p10 995 B, median 6.0 kB, p90 36 kB, p99 156 kB, max 2.6 MB); `.c` `.h` `.S` `.dts` `.rst` `.txt` `.sh` `.py`, 1 % executable | 0.1 % | a Linux 6.x source tree (`git ls-files`: ~85k files, ~5.8k directories, ~1.4 GB) |
//! | `portage` | 150,000 | 20,000 | 3/4 | 408 MB | log-normal σ 0.9, 64 B … 512 KiB (p10 571 B, median 1.8 kB, p90 5.8 kB, p99 15 kB, max 109 kB) | 0 | the Gentoo portage tree: category/package/files, ebuilds, Manifests, metadata.xml, patches (408 MB in the 2016 study) |
//! | `mixed` | 20,000 | 1,500 | 8/9 | 1.4 GB | texts 85 % of files / 15 % of bytes (σ 1.3), images 14.9 % / 40 % (σ 0.8, 16 KiB … 16 MiB), 20 videos 0.1 % / 45 % (σ 0.5, up to 512 MiB); overall p10 1.1 kB, median 7.1 kB, p90 111 kB, p99 476 kB, max 66 MB | 0.5 % | a project folder with sources, documents, photos and a few clips (1.4 GB in the 2016 study) |
//! | `dvd` | 1 | 0 | 0/1 | 4,700,372,992 (4.38 GiB, a single-layer DVD) | one file | 0 | one DVD image (the 2009 and 2016 studies) |
//!
//! The quantiles above are measured for seed 0 by the tests (`profiles_match_their_documentation`);
//! `fsbench dataset gen KIND DIR` prints them for what it generated.
//!
//! How a tree is made ([`Manifest::generate`]): directories first, as a random tree whose share
//! of directories per depth follows the profile, with one chain reaching the maximum depth;
//! then files, each in a uniformly chosen directory (the root included), with a log-normal size
//! per file class, scaled so the class's byte budget is met (then clamped, so the total is
//! within 2 % of the profile's); then symlinks, each pointing with a relative path at an
//! existing file. Names are words from a fixed list plus a base-36 serial, so they are unique.
//! Files are mode 0644 (a profile's share of executables 0755), directories 0755; every entry
//! gets a modification time from a fixed window, so that copies preserving times can be
//! checked exactly. Contents come from a [`ContentPool`] (see [`content`]): `random` by
//! default, `text`, or `zeros`.
//!
//! `--scale F` multiplies files, directories, symlinks and bytes (at least one file; the depth
//! is kept when there are enough directories).
//!
//! Invariants: the manifest is a pure function of `(kind, scale, seed)` (the generator is the
//! fixed [`rng::SplitMix64`], not `rand`, whose algorithms may change), and so is every byte
//! written, given the content kind; [`Manifest::hash`] covers everything. Generation writes
//! with slices of a pre-generated pool: no per-byte random numbers, no allocation per file
//! beyond its path.

use crate::choice::Choice;
use crate::units::Bytes;
use rng::{Fnv64, SplitMix64};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

pub mod content;
pub mod rng;
pub mod tree;

pub use content::{Content, ContentPool};

/// Why a dataset could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// A system call failed; `what` names the operation and path.
    #[error("{what}: {source}")]
    Io {
        /// Operation and path, e.g. "create /mnt/x/tree/drivers/core3.c".
        what: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The interrupt flag was set.
    #[error("interrupted")]
    Interrupted,
    /// The request cannot work (for example a non-empty target directory).
    #[error("{0}")]
    Invalid(String),
}

impl DatasetError {
    /// Wraps an error with the operation and path; a full filesystem gets a hint.
    pub fn io(op: &str, path: &Path, e: io::Error) -> DatasetError {
        let mut what = format!("{op} {}", path.display());
        if e.raw_os_error() == Some(libc::ENOSPC) {
            what.push_str(" (filesystem full: use a smaller --scale or dataset_scale, or a larger target)");
        }
        DatasetError::Io { what, source: e }
    }
}

/// The built-in dataset kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DatasetKind {
    /// A Linux source tree: ~75k mostly small text files in ~5k directories, 1.2 GB.
    Kernel,
    /// The Gentoo portage tree: ~150k tiny files (1–3 KB) in ~20k directories, 408 MB.
    Portage,
    /// A project tree: texts, images and a little video, ~1.4 GB.
    Mixed,
    /// One DVD image, 4.38 GiB.
    Dvd,
}

impl Choice for DatasetKind {
    const CHOICES: &'static [(Self, &'static str, &'static str)] = &[
        (
            DatasetKind::Kernel,
            "kernel",
            "A Linux source tree: ~75k mostly small text files in ~5k directories, 1.2 GB",
        ),
        (
            DatasetKind::Portage,
            "portage",
            "The Gentoo portage tree: ~150k tiny files (1–3 KB) in ~20k directories, 408 MB",
        ),
        (
            DatasetKind::Mixed,
            "mixed",
            "A project tree: texts, images and a little video, ~1.4 GB",
        ),
        (DatasetKind::Dvd, "dvd", "One DVD image, 4.38 GiB"),
    ];
}

impl DatasetKind {
    /// Every kind, in documentation order.
    pub const ALL: [DatasetKind; 4] = [
        DatasetKind::Kernel,
        DatasetKind::Portage,
        DatasetKind::Mixed,
        DatasetKind::Dvd,
    ];

    /// The name used in suite files and on the command line.
    pub fn as_str(self) -> &'static str {
        self.name()
    }

    /// The kind named `s`, if any.
    pub fn parse(s: &str) -> Option<DatasetKind> {
        Self::from_name(s).ok()
    }

    /// The profile at scale 1.
    pub fn profile(self) -> &'static Profile {
        match self {
            DatasetKind::Kernel => &KERNEL,
            DatasetKind::Portage => &PORTAGE,
            DatasetKind::Mixed => &MIXED,
            DatasetKind::Dvd => &DVD,
        }
    }
}

impl std::fmt::Display for DatasetKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A class of files within a profile (source files, images, video …).
#[derive(Debug)]
pub struct FileClass {
    /// Short name (`text`, `image`, `video`).
    pub name: &'static str,
    /// Share of the profile's file count.
    pub file_share: f64,
    /// Share of the profile's bytes.
    pub byte_share: f64,
    /// Shape σ of the log-normal size distribution (the median follows from the byte budget).
    pub sigma: f64,
    /// Smallest file, bytes.
    pub min: u64,
    /// Largest file, bytes.
    pub max: u64,
    /// File name suffixes and their weights.
    pub extensions: &'static [(&'static str, f64)],
    /// Share of files that are executable (mode 0755).
    pub exec_share: f64,
}

/// What a dataset looks like at scale 1; see the module documentation for the numbers.
#[derive(Debug)]
pub struct Profile {
    /// Which kind this is.
    pub kind: DatasetKind,
    /// One line for help texts.
    pub what: &'static str,
    /// Regular files.
    pub files: u64,
    /// Directories below the root.
    pub dirs: u64,
    /// Bytes of file data (apparent size).
    pub bytes: u64,
    /// Deepest directory level (a directory at the root has depth 1; files and symlinks in it
    /// are one level deeper).
    pub max_depth: u32,
    /// Relative share of directories at depth 1, 2, … (`max_depth` entries).
    pub depth_weights: &'static [f64],
    /// Symlinks per regular file.
    pub symlink_share: f64,
    /// File classes; shares add up to 1.
    pub classes: &'static [FileClass],
}

const SRC_EXT: &[(&str, f64)] = &[
    (".c", 46.0),
    (".h", 34.0),
    (".S", 2.0),
    (".dts", 4.0),
    (".rst", 7.0),
    (".txt", 3.0),
    (".yaml", 2.0),
    (".sh", 1.0),
    (".py", 1.0),
];

static KERNEL: Profile = Profile {
    kind: DatasetKind::Kernel,
    what: "Linux source tree: mostly small text files",
    files: 75_000,
    dirs: 5_000,
    bytes: 1_200_000_000,
    max_depth: 10,
    depth_weights: &[0.4, 6.0, 22.0, 30.0, 22.0, 11.0, 5.0, 2.3, 1.0, 0.3],
    symlink_share: 0.001,
    classes: &[FileClass {
        name: "text",
        file_share: 1.0,
        byte_share: 1.0,
        sigma: 1.4,
        min: 16,
        max: 4 * Bytes::MIB,
        extensions: SRC_EXT,
        exec_share: 0.01,
    }],
};

static PORTAGE: Profile = Profile {
    kind: DatasetKind::Portage,
    what: "Gentoo portage tree: tiny files in category/package/files",
    files: 150_000,
    dirs: 20_000,
    bytes: 408_000_000,
    max_depth: 3,
    depth_weights: &[1.0, 80.0, 19.0],
    symlink_share: 0.0,
    classes: &[FileClass {
        name: "text",
        file_share: 1.0,
        byte_share: 1.0,
        sigma: 0.9,
        min: 64,
        max: 512 * Bytes::KIB,
        extensions: &[
            (".ebuild", 62.0),
            (".xml", 13.0),
            (".patch", 12.0),
            (".manifest", 10.0),
            (".conf", 3.0),
        ],
        exec_share: 0.0,
    }],
};

static MIXED: Profile = Profile {
    kind: DatasetKind::Mixed,
    what: "project tree: texts, images and a little video",
    files: 20_000,
    dirs: 1_500,
    bytes: 1_400_000_000,
    max_depth: 8,
    depth_weights: &[2.0, 12.0, 25.0, 27.0, 18.0, 9.0, 5.0, 2.0],
    symlink_share: 0.005,
    classes: &[
        FileClass {
            name: "text",
            file_share: 0.85,
            byte_share: 0.15,
            sigma: 1.3,
            min: 16,
            max: 8 * Bytes::MIB,
            extensions: &[
                (".c", 20.0),
                (".py", 15.0),
                (".md", 15.0),
                (".txt", 15.0),
                (".html", 10.0),
                (".json", 10.0),
                (".tex", 5.0),
                (".csv", 10.0),
            ],
            exec_share: 0.02,
        },
        FileClass {
            name: "image",
            file_share: 0.149,
            byte_share: 0.40,
            sigma: 0.8,
            min: 16 * Bytes::KIB,
            max: 16 * Bytes::MIB,
            extensions: &[(".jpg", 60.0), (".png", 35.0), (".svg", 5.0)],
            exec_share: 0.0,
        },
        FileClass {
            name: "video",
            file_share: 0.001,
            byte_share: 0.45,
            sigma: 0.5,
            min: Bytes::MIB,
            max: 512 * Bytes::MIB,
            extensions: &[(".mp4", 70.0), (".mkv", 30.0)],
            exec_share: 0.0,
        },
    ],
};

static DVD: Profile = Profile {
    kind: DatasetKind::Dvd,
    what: "one single-layer DVD image",
    files: 1,
    dirs: 0,
    bytes: 4_700_372_992,
    max_depth: 0,
    depth_weights: &[],
    symlink_share: 0.0,
    classes: &[FileClass {
        name: "image",
        file_share: 1.0,
        byte_share: 1.0,
        sigma: 0.0,
        min: 1,
        max: u64::MAX,
        extensions: &[(".iso", 1.0)],
        exec_share: 0.0,
    }],
};

/// Counts of a profile at a scale, before generating anything (for plans and disk sizing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scaled {
    /// Regular files.
    pub files: u64,
    /// Directories below the root.
    pub dirs: u64,
    /// Symlinks.
    pub symlinks: u64,
    /// Target bytes of file data.
    pub bytes: u64,
}

impl Profile {
    /// Counts at `scale` (at least one file).
    pub fn scaled(&self, scale: f64) -> Scaled {
        let s = |n: u64| -> u64 {
            let v = (n as f64 * scale).round();
            if v.is_finite() && v > 0.0 {
                v as u64
            } else {
                0
            }
        };
        let files = s(self.files).max(1);
        Scaled {
            files,
            dirs: s(self.dirs),
            symlinks: (files as f64 * self.symlink_share).round() as u64,
            bytes: s(self.bytes).max(files),
        }
    }

    /// Help text: one paragraph per kind with its scale-1 numbers.
    pub fn help_line(&self) -> String {
        let classes: Vec<String> = self
            .classes
            .iter()
            .map(|c| {
                format!(
                    "{} {:.1}% of files/{:.0}% of bytes (log-normal σ {}, {}..{})",
                    c.name,
                    c.file_share * 100.0,
                    c.byte_share * 100.0,
                    c.sigma,
                    Bytes(c.min),
                    if c.max == u64::MAX {
                        "∞".to_string()
                    } else {
                        Bytes(c.max).to_string()
                    }
                )
            })
            .collect();
        format!(
            "{}: {}; {} files, {} directories, max depth {}, {} ({} bytes), symlinks {:.1}% of files; {}",
            self.kind,
            self.what,
            self.files,
            self.dirs,
            self.max_depth,
            Bytes(self.bytes).human(),
            self.bytes,
            self.symlink_share * 100.0,
            classes.join("; ")
        )
    }
}

/// The help text of `fsbench dataset gen`, built from the profiles themselves.
pub fn profiles_help() -> String {
    let mut s = String::from("Profiles at --scale 1 (--scale multiplies files, directories, symlinks and bytes):\n");
    for k in DatasetKind::ALL {
        s.push_str("  ");
        s.push_str(&k.profile().help_line());
        s.push('\n');
    }
    s.push_str(
        "\nContents (--content): random (incompressible, default), text (source-code-like: gzip -1 ≈ 3.1×), \
zeros. Files are 0644 (some 0755), directories 0755, modification times from a fixed window; the same \
kind, scale, seed and content always give the same bytes (the printed manifest hash says so).",
    );
    s
}

/// What a manifest entry is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A directory.
    Dir,
    /// A regular file of `size` bytes whose data starts at pool offset `offset`.
    File {
        /// Bytes.
        size: u64,
        /// Where in the content pool its data starts.
        offset: u64,
    },
    /// A symlink with a relative target.
    Symlink {
        /// The link's target, relative to the link's directory.
        target: String,
    },
}

/// One entry of a generated tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Path relative to the root, `/`-separated.
    pub path: String,
    /// What it is.
    pub kind: EntryKind,
    /// Permission bits (ignored for symlinks).
    pub mode: u32,
    /// Modification (and access) time: seconds since the epoch.
    pub mtime_sec: i64,
    /// Nanoseconds of the modification time.
    pub mtime_nsec: u32,
}

impl Entry {
    /// Path components below the root.
    pub fn depth(&self) -> u32 {
        self.path.split('/').count() as u32
    }
}

/// Statistics of a manifest (what `dataset gen` prints and the tests check).
#[derive(Clone, Debug, PartialEq)]
pub struct ManifestStats {
    /// Regular files.
    pub files: u64,
    /// Directories below the root.
    pub dirs: u64,
    /// Symlinks.
    pub symlinks: u64,
    /// Bytes of file data.
    pub bytes: u64,
    /// Deepest entry (a file at the root has depth 1).
    pub max_depth: u32,
    /// Deepest directory (a directory at the root has depth 1; 0 without directories).
    pub max_dir_depth: u32,
    /// File size quantiles p10, p50, p90, p99 and the maximum, bytes.
    pub size_quantiles: [u64; 5],
}

/// The complete description of a generated tree: every entry in creation order (parents before
/// children), plus what decides its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// The kind it was generated from.
    pub kind: DatasetKind,
    /// The scale it was generated at.
    pub scale_bits: u64,
    /// The seed.
    pub seed: u64,
    /// Entries, directories first, then files, then symlinks.
    pub entries: Vec<Entry>,
    /// Modification time of the root.
    pub root_mtime: (i64, u32),
}

/// Start of the modification-time window (2016-02-25, Linux 4.4.3's release).
const MTIME_BASE: i64 = 1_456_358_400;
/// Length of the window: three years.
const MTIME_SPAN: u64 = 3 * 365 * 86_400;

/// Syllables of generated names.
const NAME_WORDS: &[&str] = &[
    "core", "dev", "fs", "net", "mm", "sched", "block", "crypto", "sound", "usb", "pci", "gpu", "drm", "io", "irq",
    "timer", "power", "clk", "regmap", "phy", "spi", "i2c", "hid", "input", "media", "mtd", "scsi", "ata", "nvme",
    "virt", "bpf", "trace", "audit", "lib", "tools", "docs", "arch", "boot", "kvm", "page", "slab", "vfs", "ext",
    "xfs", "btrfs", "nfs", "fuse", "proc", "sys", "debug", "test", "util", "main", "config", "data", "img", "photo",
    "video", "report", "notes", "src", "build", "app", "web", "api", "model", "view", "cache", "store",
];

fn base36(mut n: u64, out: &mut String) {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut tmp = [0u8; 13];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = DIGITS[(n % 36) as usize];
        n /= 36;
        if n == 0 {
            break;
        }
    }
    for &c in &tmp[i..] {
        out.push(c as char);
    }
}

/// The start of the path of an entry directly in `dir` (relative to the tree's root, empty for
/// the root itself): `dir` followed by `/`, or empty for the root.
fn child_prefix(dir: &str) -> String {
    let mut path = dir.to_string();
    if !path.is_empty() {
        path.push('/');
    }
    path
}

fn name_into(g: &mut SplitMix64, serial: u64, suffix: &str, out: &mut String) {
    out.push_str(NAME_WORDS[g.below(NAME_WORDS.len() as u64) as usize]);
    if g.chance(0.5) {
        out.push('_');
        out.push_str(NAME_WORDS[g.below(NAME_WORDS.len() as u64) as usize]);
    }
    base36(serial, out);
    out.push_str(suffix);
}

fn mtime(g: &mut SplitMix64) -> (i64, u32) {
    (MTIME_BASE + g.below(MTIME_SPAN) as i64, g.below(1_000_000_000) as u32)
}

/// Log-normal sizes for `n` files of a class with a byte budget, clamped to the class's range.
fn class_sizes(class: &FileClass, n: usize, budget: u64, g: &mut SplitMix64) -> Vec<u64> {
    if n == 0 {
        return Vec::new();
    }
    let raw: Vec<f64> = (0..n).map(|_| (class.sigma * g.normal()).exp()).collect();
    let (lo, hi) = (class.min as f64, class.max as f64);
    // Find the scale k so that Σ clamp(k·raw) meets the budget (bisection on a monotone sum).
    let total = |k: f64| -> f64 { raw.iter().map(|r| (k * r).clamp(lo, hi).round()).sum() };
    let target = budget as f64;
    let (mut a, mut b) = (0.0f64, 1.0f64);
    while total(b) < target && b < 1e30 {
        b *= 2.0;
    }
    for _ in 0..100 {
        let m = 0.5 * (a + b);
        if total(m) < target {
            a = m;
        } else {
            b = m;
        }
    }
    raw.iter().map(|r| (b * r).clamp(lo, hi).round() as u64).collect()
}

/// Relative path from directory `from` to `to` (both relative to the root, `""` = root).
fn relative(from: &str, to: &str) -> String {
    let f: Vec<&str> = if from.is_empty() {
        vec![]
    } else {
        from.split('/').collect()
    };
    let t: Vec<&str> = to.split('/').collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; f.len() - common];
    parts.extend_from_slice(&t[common..]);
    parts.join("/")
}

impl Manifest {
    /// Generates the manifest of `kind` at `scale` from `seed`; see the module documentation.
    pub fn generate(kind: DatasetKind, scale: f64, seed: u64) -> Manifest {
        let p = kind.profile();
        let n = p.scaled(scale);
        let seed = seed ^ (kind as u64).wrapping_mul(0x51_7CC1_B727_220A);
        let mut g_dirs = SplitMix64::stream(seed, 1);
        let mut g_files = SplitMix64::stream(seed, 2);
        let mut g_sizes = SplitMix64::stream(seed, 3);
        let mut g_links = SplitMix64::stream(seed, 4);
        let mut g_times = SplitMix64::stream(seed, 5);
        let mut entries = Vec::with_capacity((n.files + n.dirs + n.symlinks) as usize);
        let mut serial = 0u64;

        // Directories: index 0 is the root (not an entry).
        let max_depth = (p.max_depth as u64).min(n.dirs) as usize;
        let mut dir_paths: Vec<String> = vec![String::new()];
        let mut by_depth: Vec<Vec<usize>> = vec![vec![0]];
        by_depth.resize(max_depth + 1, Vec::new());
        let weights = &p.depth_weights[..max_depth];
        for i in 0..n.dirs as usize {
            let depth = if i < max_depth {
                i + 1 // the spine: one chain reaching the deepest level
            } else {
                1 + g_dirs.weighted(weights)
            };
            let parents = &by_depth[depth - 1];
            let parent = parents[g_dirs.below(parents.len() as u64) as usize];
            let mut path = child_prefix(&dir_paths[parent]);
            name_into(&mut g_dirs, serial, "", &mut path);
            serial += 1;
            let (s, ns) = mtime(&mut g_times);
            entries.push(Entry {
                path: path.clone(),
                kind: EntryKind::Dir,
                mode: 0o755,
                mtime_sec: s,
                mtime_nsec: ns,
            });
            by_depth[depth].push(dir_paths.len());
            dir_paths.push(path);
        }

        // Files, class by class.
        let mut counts: Vec<u64> = p
            .classes
            .iter()
            .map(|c| ((n.files as f64 * c.file_share).round() as u64).max(u64::from(n.files >= p.classes.len() as u64)))
            .collect();
        let assigned: u64 = counts.iter().sum();
        if let Some(big) = (0..counts.len()).max_by_key(|&i| counts[i]) {
            counts[big] = (counts[big] + n.files).saturating_sub(assigned);
        }
        let first_file = entries.len();
        for (class, &count) in p.classes.iter().zip(&counts) {
            let budget = (n.bytes as f64 * class.byte_share).round() as u64;
            let sizes = class_sizes(class, count as usize, budget, &mut g_sizes);
            let ext_w: Vec<f64> = class.extensions.iter().map(|e| e.1).collect();
            for size in sizes {
                let dir = g_files.below(dir_paths.len() as u64) as usize;
                let mut path = child_prefix(&dir_paths[dir]);
                let ext = class.extensions[g_files.weighted(&ext_w)].0;
                name_into(&mut g_files, serial, ext, &mut path);
                serial += 1;
                let exec = g_files.chance(class.exec_share);
                let (s, ns) = mtime(&mut g_times);
                entries.push(Entry {
                    path,
                    kind: EntryKind::File {
                        size,
                        offset: g_files.next_u64(),
                    },
                    mode: if exec { 0o755 } else { 0o644 },
                    mtime_sec: s,
                    mtime_nsec: ns,
                });
            }
        }
        let files_end = entries.len();

        // Symlinks to existing files, with relative targets.
        for _ in 0..n.symlinks {
            let target = &entries[first_file + g_links.below((files_end - first_file) as u64) as usize].path;
            let dir = g_links.below(dir_paths.len() as u64) as usize;
            let rel = relative(&dir_paths[dir], target);
            let mut path = child_prefix(&dir_paths[dir]);
            name_into(&mut g_links, serial, "_link", &mut path);
            serial += 1;
            let (s, ns) = mtime(&mut g_times);
            entries.push(Entry {
                path,
                kind: EntryKind::Symlink { target: rel },
                mode: 0o777,
                mtime_sec: s,
                mtime_nsec: ns,
            });
        }
        let root_mtime = mtime(&mut g_times);
        Manifest {
            kind,
            scale_bits: scale.to_bits(),
            seed,
            entries,
            root_mtime,
        }
    }

    /// FNV-1a over every entry (path, type, mode, time, size, pool offset, target), the root's
    /// time, and the content kind: equal hashes mean byte-identical trees.
    pub fn hash(&self, content: Content) -> u64 {
        let mut h = Fnv64::default();
        h.bytes(content.as_str().as_bytes()).bytes(&[0]);
        h.u64(self.root_mtime.0 as u64).u64(u64::from(self.root_mtime.1));
        for e in &self.entries {
            h.bytes(e.path.as_bytes()).bytes(&[0]);
            h.u64(u64::from(e.mode))
                .u64(e.mtime_sec as u64)
                .u64(u64::from(e.mtime_nsec));
            match &e.kind {
                EntryKind::Dir => h.bytes(b"d"),
                EntryKind::File { size, offset } => h.bytes(b"f").u64(*size).u64(*offset),
                EntryKind::Symlink { target } => h.bytes(b"l").bytes(target.as_bytes()),
            };
        }
        h.finish()
    }

    /// Counts, depth and size quantiles.
    pub fn stats(&self) -> ManifestStats {
        let mut sizes: Vec<u64> = Vec::new();
        let (mut dirs, mut links, mut depth, mut dir_depth) = (0, 0, 0, 0);
        for e in &self.entries {
            depth = depth.max(e.depth());
            match e.kind {
                EntryKind::Dir => {
                    dirs += 1;
                    dir_depth = dir_depth.max(e.depth());
                }
                EntryKind::File { size, .. } => sizes.push(size),
                EntryKind::Symlink { .. } => links += 1,
            }
        }
        sizes.sort_unstable();
        let q = |p: f64| -> u64 {
            if sizes.is_empty() {
                0
            } else {
                sizes[((sizes.len() - 1) as f64 * p).round() as usize]
            }
        };
        ManifestStats {
            files: sizes.len() as u64,
            dirs,
            symlinks: links,
            bytes: sizes.iter().sum(),
            max_depth: depth,
            max_dir_depth: dir_depth,
            size_quantiles: [q(0.10), q(0.50), q(0.90), q(0.99), q(1.0)],
        }
    }

    /// Bytes the tree takes on a filesystem, estimated: data rounded up to 4 KiB blocks plus
    /// 4 KiB per entry for inodes and directory blocks.
    pub fn disk_bytes(&self) -> u64 {
        estimate_disk_bytes(
            self.entries.iter().filter_map(|e| match e.kind {
                EntryKind::File { size, .. } => Some(size),
                _ => None,
            }),
            self.entries.len() as u64,
        )
    }

    /// Writes the tree under `root`, which must not exist or be empty: directories, files
    /// (data from `pool`), symlinks, then modes and times of the directories and the root.
    /// Polls `interrupt` per entry and per MiB. On error the partial tree is left for the
    /// caller to remove.
    pub fn materialize(&self, root: &Path, pool: &ContentPool, interrupt: &AtomicBool) -> Result<(), DatasetError> {
        match std::fs::read_dir(root) {
            Ok(mut rd) => {
                if rd.next().is_some() {
                    return Err(DatasetError::Invalid(format!(
                        "{} is not empty: generate into a new or empty directory",
                        root.display()
                    )));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                std::fs::create_dir(root).map_err(|e| DatasetError::io("mkdir", root, e))?;
            }
            Err(e) => return Err(DatasetError::io("open directory", root, e)),
        }
        let mut path = PathBuf::new();
        let check = || {
            if interrupt.load(Ordering::Relaxed) {
                Err(DatasetError::Interrupted)
            } else {
                Ok(())
            }
        };
        let mut step = crate::progress::step(
            format!(
                "data set ({} entries, {})",
                self.entries.len(),
                Bytes(self.disk_bytes()).human()
            ),
            Some(self.entries.len() as u64),
            "entries",
        );
        for (done, e) in self.entries.iter().enumerate() {
            step.set(done as u64);
            check()?;
            path.clear();
            path.push(root);
            path.push(&e.path);
            match &e.kind {
                EntryKind::Dir => std::fs::create_dir(&path).map_err(|err| DatasetError::io("mkdir", &path, err))?,
                EntryKind::File { size, offset } => {
                    let mut f = OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(e.mode)
                        .open(&path)
                        .map_err(|err| DatasetError::io("create", &path, err))?;
                    let mut pos = 0u64;
                    while pos < *size {
                        if pos % (64 * Bytes::MIB) == 0 {
                            check()?;
                        }
                        let want = (*size - pos).min(content::MAX_SLICE as u64) as usize;
                        let chunk = pool.file_chunk(*offset, pos, want);
                        f.write_all(chunk)
                            .map_err(|err| DatasetError::io("write", &path, err))?;
                        pos += chunk.len() as u64;
                    }
                    set_mode_and_times(&f, &path, e.mode, (e.mtime_sec, e.mtime_nsec))?;
                }
                EntryKind::Symlink { target } => {
                    std::os::unix::fs::symlink(target, &path).map_err(|err| DatasetError::io("symlink", &path, err))?;
                    let t = timestamps((e.mtime_sec, e.mtime_nsec));
                    rustix::fs::utimensat(rustix::fs::CWD, &path, &t, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                        .map_err(|err| DatasetError::io("set times of", &path, err.into()))?;
                }
            }
        }
        // Directory modes and times last: creating entries changed their times.
        for e in self.entries.iter().filter(|e| e.kind == EntryKind::Dir) {
            path.clear();
            path.push(root);
            path.push(&e.path);
            let f = File::open(&path).map_err(|err| DatasetError::io("open", &path, err))?;
            set_mode_and_times(&f, &path, e.mode, (e.mtime_sec, e.mtime_nsec))?;
        }
        let f = File::open(root).map_err(|err| DatasetError::io("open", root, err))?;
        set_mode_and_times(&f, root, 0o755, self.root_mtime)?;
        step.set(self.entries.len() as u64);
        step.finish();
        Ok(())
    }
}

/// `mode & 0o7777` via fchmod (exact, whatever the umask) and atime = mtime = `t` via futimens.
fn set_mode_and_times(f: &File, path: &Path, mode: u32, t: (i64, u32)) -> Result<(), DatasetError> {
    f.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(|e| DatasetError::io("chmod", path, e))?;
    let time = SystemTime::UNIX_EPOCH + Duration::new(t.0 as u64, t.1);
    f.set_times(std::fs::FileTimes::new().set_accessed(time).set_modified(time))
        .map_err(|e| DatasetError::io("set times of", path, e))
}

fn timestamps(t: (i64, u32)) -> rustix::fs::Timestamps {
    let ts = rustix::fs::Timespec {
        tv_sec: t.0,
        tv_nsec: i64::from(t.1),
    };
    rustix::fs::Timestamps {
        last_access: ts,
        last_modification: ts,
    }
}

/// Bytes `entries` entries with file sizes `sizes` take on a filesystem: data rounded up to
/// 4 KiB plus 4 KiB per entry (inode, directory block share, allocator slack).
pub fn estimate_disk_bytes(sizes: impl Iterator<Item = u64>, entries: u64) -> u64 {
    sizes
        .map(|s| s.div_ceil(4096) * 4096)
        .fold(0u64, u64::saturating_add)
        .saturating_add(entries.saturating_mul(4096))
}

/// Estimated on-disk bytes of `kind` at `scale` without generating it: files' bytes plus
/// half a 4 KiB block of rounding per file plus 4 KiB per entry.
pub fn estimated_disk_bytes(kind: DatasetKind, scale: f64) -> u64 {
    let n = kind.profile().scaled(scale);
    let entries = n.files + n.dirs + n.symlinks;
    n.bytes
        .saturating_add(n.files.saturating_mul(2048))
        .saturating_add(entries.saturating_mul(4096))
}

/// Bytes allocated to a directory tree on its filesystem (`st_blocks × 512`, like `du`), and
/// its entry count; symlinks are not followed.
pub fn dir_usage(root: &Path) -> io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let mut stack = vec![root.to_path_buf()];
    let (mut bytes, mut entries) = (0u64, 0u64);
    while let Some(dir) = stack.pop() {
        for item in std::fs::read_dir(&dir)? {
            let item = item?;
            let meta = item.metadata()?;
            bytes = bytes.saturating_add(meta.blocks() * 512);
            entries += 1;
            if meta.is_dir() {
                stack.push(item.path());
            }
        }
    }
    Ok((bytes, entries))
}

/// Where a workload's tree comes from: a generated kind or an existing directory. Written in
/// suite files as one string: `"kernel"`, `"portage"`, `"mixed"`, `"dvd"`, or a path containing
/// a `/` (`"/usr/src/linux"`, `"./tree"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DatasetSource {
    /// A generated dataset.
    Generated(DatasetKind),
    /// A directory the user names, copied as it is.
    Dir(PathBuf),
}

/// A dataset name that is neither a generated dataset nor a path ([`DatasetSource::parse`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown dataset `{0}`: use kernel, portage, mixed, dvd, or the path of an existing directory (with a `/`, e.g. `./{0}`)")]
pub struct UnknownDataset(pub String);

impl DatasetSource {
    /// Parses the suite-file spelling; the error says what is accepted.
    pub fn parse(s: &str) -> Result<DatasetSource, UnknownDataset> {
        if let Some(k) = DatasetKind::parse(s) {
            return Ok(DatasetSource::Generated(k));
        }
        if s.contains('/') {
            return Ok(DatasetSource::Dir(PathBuf::from(s)));
        }
        Err(UnknownDataset(s.to_string()))
    }

    /// The suite-file spelling.
    pub fn to_text(&self) -> String {
        match self {
            DatasetSource::Generated(k) => k.as_str().to_string(),
            DatasetSource::Dir(p) => p.display().to_string(),
        }
    }
}

impl Serialize for DatasetSource {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_text())
    }
}

impl<'de> Deserialize<'de> for DatasetSource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        DatasetSource::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Generates `kind` at `scale` from `seed` with `content` into `dir` (`fsbench dataset gen`),
/// printing the profile that was made, the manifest hash and the time taken to `out`.
pub fn generate_into(
    kind: DatasetKind,
    dir: &Path,
    scale: f64,
    seed: u64,
    content: Content,
    interrupt: &AtomicBool,
    out: &mut dyn Write,
) -> Result<ManifestStats, DatasetError> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(DatasetError::Invalid(format!(
            "--scale {scale}: use a positive number such as 0.1 or 2"
        )));
    }
    let t0 = std::time::Instant::now();
    let manifest = Manifest::generate(kind, scale, seed);
    let pool = ContentPool::new(content, seed);
    manifest.materialize(dir, &pool, interrupt)?;
    let secs = t0.elapsed().as_secs_f64();
    let s = manifest.stats();
    let q = s.size_quantiles;
    let w = |e: io::Error| DatasetError::io("write to", Path::new("standard output"), e);
    writeln!(
        out,
        "{kind} (scale {scale}, seed {seed}, content {content}) in {}:",
        dir.display()
    )
    .map_err(w)?;
    writeln!(
        out,
        "  {} files, {} directories, {} symlinks ({:.2} % of files), max depth {} (directories {})",
        s.files,
        s.dirs,
        s.symlinks,
        100.0 * s.symlinks as f64 / s.files.max(1) as f64,
        s.max_depth,
        s.max_dir_depth
    )
    .map_err(w)?;
    writeln!(
        out,
        "  {} bytes ({}); file sizes p10 {} p50 {} p90 {} p99 {} max {} bytes",
        s.bytes,
        Bytes(s.bytes).human(),
        q[0],
        q[1],
        q[2],
        q[3],
        q[4]
    )
    .map_err(w)?;
    writeln!(
        out,
        "  manifest hash {:016x}; written in {secs:.2} s ({:.0} MiB/s, before the page cache is flushed)",
        manifest.hash(content),
        s.bytes as f64 / Bytes::MIB as f64 / secs.max(1e-9)
    )
    .map_err(w)?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_climb_and_descend() {
        assert_eq!(relative("", "a/b.c"), "a/b.c");
        assert_eq!(relative("a/x", "a/b.c"), "../b.c");
        assert_eq!(relative("a", "a/b.c"), "b.c");
        assert_eq!(relative("x/y", "a/b.c"), "../../a/b.c");
        let mut s = String::new();
        base36(0, &mut s);
        base36(36 * 36 - 1, &mut s);
        assert_eq!(s, "0zz");
    }

    /// Profiles at scale 1 (portage's 150k entries take about a second to draw).
    #[test]
    fn profiles_match_their_documentation() {
        for kind in DatasetKind::ALL {
            let p = kind.profile();
            let m = Manifest::generate(kind, 1.0, 0);
            let s = m.stats();
            assert_eq!(s.files, p.files, "{kind}");
            assert_eq!(s.dirs, p.dirs, "{kind}");
            assert_eq!(s.max_dir_depth, p.max_depth, "{kind}");
            assert_eq!(s.max_depth, p.max_depth + 1, "{kind}: a file in the deepest directory");
            eprintln!("{kind}: {s:?}");
            let rel = (s.bytes as f64 - p.bytes as f64).abs() / p.bytes as f64;
            assert!(rel < 0.02, "{kind}: {} bytes vs {}", s.bytes, p.bytes);
            assert_eq!(s.symlinks, (p.files as f64 * p.symlink_share).round() as u64, "{kind}");
            let shares: f64 = p.classes.iter().map(|c| c.file_share).sum();
            assert!((shares - 1.0).abs() < 1e-9, "{kind}");
            let [p10, p50, p90, p99, max] = s.size_quantiles;
            match kind {
                DatasetKind::Kernel => {
                    // Mostly small text files: median a few KiB, a long tail.
                    assert!((4_000..7_500).contains(&p50), "{p50}");
                    assert!((800..2_500).contains(&p10), "{p10}");
                    assert!((25_000..40_000).contains(&p90), "{p90}");
                    assert!((100_000..170_000).contains(&p99), "{p99}");
                    assert!(max <= 4 * Bytes::MIB);
                }
                DatasetKind::Portage => {
                    // Tiny files around 1–3 KB.
                    assert!((1_000..3_000).contains(&p50), "{p50}");
                    assert!(p90 < 8_000, "{p90}");
                    assert!(p10 >= 64);
                }
                DatasetKind::Mixed => {
                    assert!(max >= 50 * Bytes::MIB, "video present: {max}");
                    assert!(p50 < 64 * 1024, "mostly texts: {p50}");
                    let videos = m
                        .entries
                        .iter()
                        .filter(|e| e.path.ends_with(".mp4") || e.path.ends_with(".mkv"))
                        .count();
                    assert_eq!(videos, 20);
                }
                DatasetKind::Dvd => assert_eq!(max, 4_700_372_992),
            }
            // Every symlink points at a file of the manifest.
            for e in &m.entries {
                if let EntryKind::Symlink { target } = &e.kind {
                    let dir = e.path.rsplit_once('/').map_or("", |(d, _)| d);
                    let mut parts: Vec<&str> = if dir.is_empty() {
                        vec![]
                    } else {
                        dir.split('/').collect()
                    };
                    for c in target.split('/') {
                        if c == ".." {
                            parts.pop();
                        } else {
                            parts.push(c);
                        }
                    }
                    let resolved = parts.join("/");
                    assert!(
                        m.entries
                            .iter()
                            .any(|f| f.path == resolved && matches!(f.kind, EntryKind::File { .. })),
                        "{} -> {target}",
                        e.path
                    );
                }
            }
            // Names are unique.
            let mut paths: Vec<&str> = m.entries.iter().map(|e| e.path.as_str()).collect();
            paths.sort_unstable();
            paths.dedup();
            assert_eq!(paths.len(), m.entries.len(), "{kind}");
        }
    }

    #[test]
    fn scaling_keeps_shape_and_minimums() {
        let m = Manifest::generate(DatasetKind::Kernel, 0.05, 0).stats();
        assert_eq!((m.files, m.dirs), (3_750, 250));
        assert_eq!(m.max_dir_depth, 10);
        assert!((m.bytes as f64 / 60e6 - 1.0).abs() < 0.03, "{}", m.bytes);
        let tiny = Manifest::generate(DatasetKind::Mixed, 0.0001, 0).stats();
        assert!(tiny.files >= 2 && tiny.files <= 3, "{tiny:?}");
        let dvd = Manifest::generate(DatasetKind::Dvd, 0.01, 0).stats();
        assert_eq!((dvd.files, dvd.dirs, dvd.max_depth, dvd.max_dir_depth), (1, 0, 1, 0));
        assert_eq!(dvd.bytes, 47_003_730);
    }

    #[test]
    fn same_seed_same_manifest_other_seed_other() {
        for kind in DatasetKind::ALL {
            let a = Manifest::generate(kind, 0.02, 11);
            let b = Manifest::generate(kind, 0.02, 11);
            let c = Manifest::generate(kind, 0.02, 12);
            assert_eq!(a, b);
            assert_eq!(a.hash(Content::Random), b.hash(Content::Random));
            assert_ne!(a.hash(Content::Random), c.hash(Content::Random), "{kind}");
            assert_ne!(a.hash(Content::Random), a.hash(Content::Text));
        }
    }

    #[test]
    fn manifest_hashes_and_content_bytes_are_pinned() {
        // Captured at commit da3a4a3: a change of the generator (tree shape, names, sizes,
        // times, pool offsets) or of the content bytes is a change of every dataset, and must
        // be a deliberate edit of these constants.
        let manifests = [
            (DatasetKind::Kernel, Content::Random, 0xf5f4_c1e0_bb23_92e7_u64),
            (DatasetKind::Kernel, Content::Text, 0x1d91_ab11_d438_9ba3),
            (DatasetKind::Kernel, Content::Zeros, 0xbf83_e20c_cda2_d459),
            (DatasetKind::Portage, Content::Random, 0xe5c2_6e81_52ca_10d4),
            (DatasetKind::Mixed, Content::Random, 0x6f58_969b_d9ed_642e),
            (DatasetKind::Dvd, Content::Random, 0x6ea6_e9a4_9b31_6a71),
        ];
        for (kind, content, want) in manifests {
            let got = Manifest::generate(kind, 0.01, 0).hash(content);
            assert_eq!(got, want, "{kind:?} {content:?}: {got:#018x}");
        }
        // The first MiB of each content pool (seed 0), FNV-1a.
        for (content, want) in [
            (Content::Random, 0x5084_a7f3_ae42_bd61_u64),
            (Content::Text, 0xf030_94ea_2524_5a90),
            (Content::Zeros, 0xa967_7706_9d62_2325),
        ] {
            let mut h = rng::Fnv64::default();
            h.bytes(ContentPool::new(content, 0).slice(0, 1 << 20));
            assert_eq!(h.finish(), want, "{content:?}: {:#018x}", h.finish());
        }
    }

    #[test]
    fn materialized_trees_match_the_manifest_and_repeat_exactly() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let m = Manifest::generate(DatasetKind::Kernel, 0.004, 3);
        let pool = ContentPool::new(Content::Text, 3);
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        m.materialize(&a, &pool, &flag).expect("materialize a");
        m.materialize(&b, &pool, &flag).expect("materialize b");
        let la = tree::list_tree(&a).expect("list a");
        let lb = tree::list_tree(&b).expect("list b");
        tree::compare(&la, &lb, true).expect("identical trees");
        let s = tree::summarize(&la);
        let st = m.stats();
        assert_eq!(
            (s.files, s.dirs, s.symlinks, s.bytes, s.max_depth),
            (st.files, st.dirs, st.symlinks, st.bytes, st.max_depth)
        );
        // Modes and times are the manifest's.
        for e in &m.entries {
            let got = la.iter().find(|x| x.path == e.path).expect("entry on disk");
            assert_eq!(got.mtime, (e.mtime_sec, i64::from(e.mtime_nsec)), "{}", e.path);
            if !matches!(e.kind, EntryKind::Symlink { .. }) {
                assert_eq!(got.mode, e.mode, "{}", e.path);
            }
        }
        // Another seed gives another tree.
        let c = tmp.path().join("c");
        Manifest::generate(DatasetKind::Kernel, 0.004, 4)
            .materialize(&c, &ContentPool::new(Content::Text, 4), &flag)
            .expect("materialize c");
        assert_ne!(tree::summarize(&tree::list_tree(&c).expect("list c")).hash, s.hash);
        // A non-empty target is refused, an interrupt stops generation.
        let e = m.materialize(&a, &pool, &flag).expect_err("non-empty");
        assert!(e.to_string().contains("not empty"), "{e}");
        let stop = AtomicBool::new(true);
        assert!(matches!(
            m.materialize(&tmp.path().join("d"), &pool, &stop),
            Err(DatasetError::Interrupted)
        ));
    }

    #[test]
    fn dataset_source_parses_kinds_and_paths() {
        assert_eq!(
            DatasetSource::parse("kernel"),
            Ok(DatasetSource::Generated(DatasetKind::Kernel))
        );
        assert_eq!(
            DatasetSource::parse("/usr/src/linux"),
            Ok(DatasetSource::Dir(PathBuf::from("/usr/src/linux")))
        );
        let e = DatasetSource::parse("kernal").expect_err("typo").to_string();
        assert!(e.contains("unknown dataset `kernal`") && e.contains("kernel"), "{e}");
        let back: DatasetSource =
            serde_json::from_str(&serde_json::to_string(&DatasetSource::Dir("./x".into())).expect("ser")).expect("de");
        assert_eq!(back, DatasetSource::Dir("./x".into()));
        let help = profiles_help();
        for k in DatasetKind::ALL {
            assert!(help.contains(&format!("{k}: ")), "{help}");
            assert!(help.contains(&k.profile().files.to_string()));
        }
    }

    #[test]
    fn generation_is_fast() {
        // 60 MB of kernel-like tree in tmp: pool slices, no per-byte RNG. Measured in this
        // thread's user CPU time (generation is single-threaded), which preemption on a shared
        // machine does not inflate, unlike wall time. Measured here: 0.2 s in the test (debug)
        // build. 1.5 s catches a gross regression (a per-byte RNG in debug code, a syscall or
        // an allocation per small piece), not a few percent.
        fn thread_user_cpu() -> Duration {
            // SAFETY: getrusage fills the zeroed struct it is given.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) }, 0);
            Duration::from_secs(ru.ru_utime.tv_sec as u64) + Duration::from_micros(ru.ru_utime.tv_usec as u64)
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let cpu0 = thread_user_cpu();
        let mut out = Vec::new();
        let s = generate_into(
            DatasetKind::Kernel,
            &tmp.path().join("k"),
            0.05,
            1,
            Content::Random,
            &flag,
            &mut out,
        )
        .expect("generate");
        assert_eq!(s.files, 3750);
        let user = thread_user_cpu() - cpu0;
        eprintln!("generation: {user:?} user CPU");
        assert!(user < Duration::from_millis(1500), "{user:?} of user CPU");
        let text = String::from_utf8(out).expect("utf8");
        assert!(
            text.contains("3750 files, 250 directories") && text.contains("manifest hash"),
            "{text}"
        );
    }
}
