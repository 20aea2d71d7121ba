//! The filesystem types fsbench knows: one row per type ([`FsType`]) with how the kernel is
//! probed, which mkfs makes it and with which of fsbench's own arguments, the smallest image
//! mkfs accepts, where it lives (a block device, RAM, a FUSE helper), why it may be unavailable
//! and how to fix that, and the space facts the image-size estimates need.
//!
//! Space estimates ([`FsType::estimate`]): a workload declares what it holds on the filesystem
//! at its peak as a [`Footprint`] (files, directories, symlinks, file data rounded to 4 KiB
//! blocks, small files, directory-entry bytes); each type turns that into the bytes its `df`
//! "used" grows by and the inodes it uses ([`Usage`]), and into an image size
//! ([`FsType::image_bytes`]) that holds both: for types with a fixed inode count (ext2/3/4:
//! one inode per 16 KiB of image, mke2fs.conf `inode_ratio`) the sparse image is made large
//! enough that the default ratio yields the inodes needed, so mkfs keeps its defaults and the
//! filesystem is the one users get. Sparse images cost only what is written, so the scratch
//! folder needs [`Estimate::scratch_bytes`], not the image size.
//!
//! Invariants: every name a suite can give resolves ([`FsType::of`]; unknown names get the
//! generic row, made with `mkfs.NAME` and estimated conservatively like ext4), and a variant
//! resolves its name once, when it is read, keeping the row as an [`FsTypeId`]; a type's
//! estimate never lies below what a run uses (tested against the peak sampled from statvfs and
//! btrfs' sysfs allocation counters during real runs in `tests/integration/space.rs`).
//!
//! References: mke2fs.conf(5) (`blocksize = 4096`, `inode_ratio = 16384`, the `small` type
//! below 512 MiB with 1 KiB blocks), mkfs.ext4(8) (`lazy_itable_init`), mkfs.xfs(8) (300 MB
//! minimum, 512-byte inodes allocated in chunks of 64, `imaxpct`), mkfs.btrfs(8) (114 MB
//! minimum without `--mixed`, DUP metadata on one device, `max_inline` 2048), tmpfs(5).

use crate::units::Bytes;
use std::fmt::Write as _;

/// Where a filesystem of this type lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    /// Made by `mkfs` on a block device (a loop image or a confirmed device).
    Block,
    /// In RAM: no mkfs, no block device; the image size is the `size=` mount option.
    Memory,
    /// Made by `mkfs` on a block device but mounted through a FUSE helper program.
    Fuse {
        /// The helper mount(8) runs.
        helper: &'static str,
    },
    /// A pool on a block device with one dataset, made by `zpool create` (ZFS; see
    /// [`crate::provision::zfs`]): no mkfs, mount options become dataset properties.
    Pool,
    /// A read-only image built from a directory tree by its tool (`mkfs.erofs`, `mksquashfs`),
    /// not formatted: the block device holds a [`STAGING`] filesystem with the tree and the
    /// image, and only the `image` workload runs on it (it builds the image, attaches it to a
    /// loop device read-only and mounts it with the type).
    Built {
        /// The tool takes the tree before the image (`mksquashfs TREE IMAGE [options]`);
        /// otherwise options come first and the image before the tree (`mkfs.erofs [options]
        /// IMAGE TREE`).
        tree_first: bool,
    },
}

/// The filesystem made on the block device of a [`Backing::Built`] type, which holds the tree
/// the image is built from and the image itself (with fsbench's ext4 arguments).
pub const STAGING: &str = "ext4";

/// Something a workload phase may need from the filesystem that not every type has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Feature {
    /// Symbolic links (`symlinkat`).
    Symlinks,
    /// More than one name per file (`linkat`).
    HardLinks,
    /// Unix modes and owners kept per file (`fchmod`, `fchown`).
    Permissions,
}

impl Feature {
    /// What the filesystem lacks, as a report says it: `symbolic links`.
    pub fn describe(self) -> &'static str {
        match self {
            Feature::Symlinks => "symbolic links",
            Feature::HardLinks => "hard links",
            Feature::Permissions => "Unix permissions and owners",
        }
    }
}

/// How a type uses space, for estimates (see the module docs). Bytes unless said otherwise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpaceModel {
    /// Data block size: every file's data is rounded up to it (all modelled types use 4 KiB).
    pub block: u64,
    /// Image bytes per inode mkfs makes when the inode count is fixed at mkfs time; `None`
    /// when inodes are allocated as needed.
    pub bytes_per_inode: Option<u64>,
    /// Bytes of `df` "used" each inode adds (0 where inode tables are preallocated).
    pub inode_bytes: u64,
    /// Bytes of `df` "used" each directory adds (its first block).
    pub dir_bytes: u64,
    /// Multiplier on the directory-entry bytes (block fill, index blocks, copies).
    pub entry_factor: f64,
    /// Files of 1..=this many bytes live in the metadata, not in data blocks (0: none).
    pub inline_max: u64,
    /// Multiplier on the bytes of inline files (metadata copies and leaf fill).
    pub inline_factor: f64,
    /// Bytes each file with data holds beyond its blocks while it waits for writeback (XFS
    /// reserves worst-case block-map blocks per delayed-allocation extent; btrfs' extent and
    /// checksum items).
    pub per_data_file: u64,
    /// Share of the bytes of files that grow over many writes while open which may be
    /// allocated beyond their end (XFS speculative preallocation doubles a growing file at
    /// most; how much of it a run sees depends on writeback timing).
    pub prealloc_share: f64,
    /// Share of the bytes rewritten in place that exist twice until the change is committed
    /// (btrfs copy-on-write).
    pub rewrite_share: f64,
    /// Share of the image a fresh filesystem takes for itself (inode tables, bitmaps, logs).
    pub overhead_share: f64,
    /// Bytes a fresh filesystem takes for itself besides, and the slack kept free.
    pub overhead_fixed: u64,
    /// Largest share of the image inodes may take when they are allocated as needed (XFS's
    /// `imaxpct`, 25 % below 1 TiB), each [`SpaceModel::inode_bytes`]; 0: no limit.
    pub max_inode_share: f64,
}

/// One filesystem type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FsType {
    /// The type as `mount -t` and suite files spell it.
    pub name: &'static str,
    /// The name in /proc/filesystems that says the kernel can mount it now.
    pub kernel: &'static str,
    /// The kernel module that provides it (`modprobe NAME`).
    pub module: &'static str,
    /// The program that makes it (`None`: nothing to make, or fsbench cannot make it).
    pub mkfs: Option<&'static str>,
    /// fsbench's own mkfs arguments, before a variant's: force, quiet, and no lazy
    /// initialisation for ext* (no background thread writes inode tables while measuring).
    pub mkfs_args: &'static [&'static str],
    /// The Debian package with the mkfs program (`None`: none known).
    pub package: Option<&'static str>,
    /// Smallest image fsbench makes: what mkfs accepts and, for ext*, the smallest that gets
    /// the default 4 KiB blocks and inode ratio rather than mke2fs.conf's `small` type, bytes.
    pub min_image: u64,
    /// Smallest device mkfs accepts, bytes (a device's size is what it is: mkfs picks its
    /// geometry from it).
    pub min_device: u64,
    /// Block device, RAM or FUSE.
    pub backing: Backing,
    /// Space facts for estimates.
    pub space: SpaceModel,
    /// What it cannot hold: a phase that needs one of these is left out with "unsupported on
    /// TYPE" ([`FsType::unsupported`]) instead of failing the run.
    pub lacks: &'static [Feature],
}

/// ext2/3/4 with mke2fs.conf defaults at 512 MiB and over: 4 KiB blocks, one 256-byte inode
/// per 16 KiB (preallocated), one block per directory, a journal up to 1 GiB.
const EXT: SpaceModel = SpaceModel {
    block: 4096,
    bytes_per_inode: Some(16 * Bytes::KIB),
    inode_bytes: 0,
    dir_bytes: 4096,
    entry_factor: 1.5,
    inline_max: 0,
    inline_factor: 0.0,
    per_data_file: 0,
    // mballoc's inode preallocation: a file written in many requests holds up to 8 MiB (and
    // per-CPU group preallocations) beyond its end until it is closed; 192 MiB of filecopy
    // measured 200 MiB used at its peak.
    prealloc_share: 0.05,
    rewrite_share: 0.0,
    overhead_share: 0.04,
    overhead_fixed: 64 * Bytes::MIB,
    max_inode_share: 0.0,
};

/// XFS: 4 KiB blocks, 512-byte inodes allocated in chunks of 64 as files appear, small
/// directories inside the inode, a log of at least 64 MiB; inodes may take at most `imaxpct`
/// = 25 % of a filesystem under 1 TiB (a 1.8 GiB image ran out of inodes at 937,000 empty
/// files: 25 % of 1.8 GiB in 512-byte inodes).
const XFS: SpaceModel = SpaceModel {
    block: 4096,
    bytes_per_inode: None,
    inode_bytes: 512,
    dir_bytes: 0,
    entry_factor: 1.6,
    inline_max: 0,
    inline_factor: 0.0,
    per_data_file: 16 * Bytes::KIB,
    prealloc_share: 1.0,
    rewrite_share: 0.0,
    overhead_share: 0.03,
    overhead_fixed: 128 * Bytes::MIB,
    max_inode_share: 0.25,
};

/// btrfs on one device: 4 KiB sectors, metadata (inodes, directory items, inline files up to
/// 2 KiB) in 16 KiB tree nodes kept twice (DUP), space handed out in chunks.
const BTRFS: SpaceModel = SpaceModel {
    block: 4096,
    bytes_per_inode: None,
    inode_bytes: 1024,
    dir_bytes: 0,
    entry_factor: 8.0,
    inline_max: 2048,
    inline_factor: 4.0,
    per_data_file: 512,
    prealloc_share: 0.0,
    rewrite_share: 1.0,
    overhead_share: 0.10,
    overhead_fixed: 256 * Bytes::MIB,
    max_inode_share: 0.0,
};

/// tmpfs: file data in 4 KiB pages counted against `size=`; inodes and directory entries
/// live in kernel memory outside it.
const TMPFS: SpaceModel = SpaceModel {
    block: 4096,
    bytes_per_inode: None,
    inode_bytes: 0,
    dir_bytes: 0,
    entry_factor: 0.0,
    inline_max: 0,
    inline_factor: 0.0,
    per_data_file: 0,
    prealloc_share: 0.0,
    rewrite_share: 0.0,
    overhead_share: 0.0,
    overhead_fixed: 16 * Bytes::MIB,
    max_inode_share: 0.0,
};

/// ZFS (zfs-fuse 0.7, pool version 23, `ashift=12` on a loop device), measured on a 512 MiB
/// pool: the root dataset offers 472 MiB (8 % for labels, the boot block, metaslab rounding and
/// the pool's reserve); 100 MiB written in one file used 100.1 MiB; 2,000 files of 1 KiB and
/// 500 directories used 12.4 MiB more (4 KiB per small file, about 1 KiB of metadata per
/// object, kept twice as ditto blocks). The 2016 preset's portage tree at 0.05 and its copy
/// (15,000 files, 2,002 directories, 74.1 MiB in 4 KiB blocks) used 94.6 MiB, estimated
/// 110.6 MiB; a 224 MiB pool offers 185.6 MiB. Copy-on-write: rewritten data exists twice until
/// the transaction group commits.
const ZFS: SpaceModel = SpaceModel {
    block: 4096,
    bytes_per_inode: None,
    inode_bytes: 1024,
    dir_bytes: 4096,
    entry_factor: 4.0,
    inline_max: 0,
    inline_factor: 0.0,
    per_data_file: 512,
    prealloc_share: 0.0,
    rewrite_share: 1.0,
    overhead_share: 0.10,
    overhead_fixed: 96 * Bytes::MIB,
    max_inode_share: 0.0,
};

/// The base of the models below: 4 KiB blocks and nothing else; each says only what it adds.
const NOTHING: SpaceModel = SpaceModel {
    block: 4096,
    bytes_per_inode: None,
    inode_bytes: 0,
    dir_bytes: 0,
    entry_factor: 0.0,
    inline_max: 0,
    inline_factor: 0.0,
    per_data_file: 0,
    prealloc_share: 0.0,
    rewrite_share: 0.0,
    overhead_share: 0.0,
    overhead_fixed: 0,
    max_inode_share: 0.0,
};

/// f2fs (f2fs-tools 1.15 defaults): 4 KiB blocks, one 4 KiB node block per inode that also
/// holds small files' data and small directories' entries inline; 2 MiB segments of which mkfs
/// reserves some and over-provisions a share for its cleaner (about 10-20 % on small images).
const F2FS: SpaceModel = SpaceModel {
    inode_bytes: 4096,
    entry_factor: 2.0,
    inline_max: 2048,
    rewrite_share: 1.0,
    overhead_share: 0.20,
    overhead_fixed: 48 * Bytes::MIB,
    ..NOTHING
};

/// nilfs2: every change is appended to the log and the old blocks stay until nilfs_cleanerd
/// reclaims them (rewrites exist twice); 5 % of segments reserved (`-m 5`); 256-byte inodes in
/// the ifile, block maps in B-tree nodes written with the data.
const NILFS2: SpaceModel = SpaceModel {
    inode_bytes: 512,
    dir_bytes: 4096,
    entry_factor: 2.0,
    per_data_file: 4096,
    rewrite_share: 1.0,
    overhead_share: 0.15,
    overhead_fixed: 64 * Bytes::MIB,
    ..NOTHING
};

/// exFAT (exfatprogs 1.2 defaults): no inodes; a directory takes at least one cluster; entries
/// are 32-byte records, three or more per name; clusters are 4 KiB up to 256 MiB and 32 KiB up
/// to 32 GiB, so each file may waste up to 28 KiB beyond its 4 KiB blocks.
const EXFAT: SpaceModel = SpaceModel {
    dir_bytes: 32 * Bytes::KIB,
    entry_factor: 6.0,
    per_data_file: 28 * Bytes::KIB,
    overhead_share: 0.02,
    overhead_fixed: 16 * Bytes::MIB,
    ..NOTHING
};

/// NTFS (mkfs.ntfs defaults): 4 KiB clusters, a 1 KiB MFT record per file and directory (small
/// files' data resident in it), directory indexes in 4 KiB index blocks, the log file and the
/// MFT's reserved zone taken at mkfs time.
const NTFS: SpaceModel = SpaceModel {
    inode_bytes: 1024,
    dir_bytes: 4096,
    entry_factor: 4.0,
    overhead_share: 0.05,
    overhead_fixed: 32 * Bytes::MIB,
    ..NOTHING
};

const fn block(
    name: &'static str,
    mkfs: &'static str,
    package: Option<&'static str>,
    min_image: u64,
    space: SpaceModel,
) -> FsType {
    FsType {
        name,
        kernel: name,
        module: name,
        mkfs: Some(mkfs),
        mkfs_args: &[],
        package,
        min_image,
        min_device: if min_image < DEFAULT_MIN {
            min_image
        } else {
            DEFAULT_MIN
        },
        backing: Backing::Block,
        space,
        lacks: &[],
    }
}

const EXT_ARGS: &[&str] = &["-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0"];
/// Most bytes the per-file reservations of files waiting for writeback take at once: the
/// kernel's dirty-page limits start writeback long before, and XFS flushes delayed
/// allocations and retries before it reports ENOSPC.
const RESERVE_MAX: u64 = Bytes::GIB;
/// XFS preallocates at most this much beyond a file's end (`XFS_MAX_BMBT_EXTLEN` blocks).
const PREALLOC_MAX: u64 = 8 * Bytes::GIB;
/// Below this mke2fs.conf picks the `small` type (1 KiB blocks, one inode per 4 KiB).
const EXT_MIN: u64 = 512 * Bytes::MIB;
/// The smallest image of types with no known minimum.
const DEFAULT_MIN: u64 = 64 * Bytes::MIB;

/// Every known type, in the order `fsbench list filesystems` shows them.
pub const TABLE: &[FsType] = &[
    FsType {
        mkfs_args: EXT_ARGS,
        ..block("ext2", "mkfs.ext2", Some("e2fsprogs"), EXT_MIN, EXT)
    },
    FsType {
        mkfs_args: EXT_ARGS,
        ..block("ext3", "mkfs.ext3", Some("e2fsprogs"), EXT_MIN, EXT)
    },
    FsType {
        mkfs_args: EXT_ARGS,
        ..block("ext4", "mkfs.ext4", Some("e2fsprogs"), EXT_MIN, EXT)
    },
    // xfsprogs 6.x refuses filesystems under 300 MB.
    FsType {
        mkfs_args: &["-f", "-q"],
        min_device: 300 * 1000 * 1000,
        ..block("xfs", "mkfs.xfs", Some("xfsprogs"), 320 * Bytes::MIB, XFS)
    },
    // btrfs needs 114294784 bytes per device without --mixed.
    FsType {
        mkfs_args: &["-f", "-q"],
        min_device: 114_294_784,
        ..block("btrfs", "mkfs.btrfs", Some("btrfs-progs"), 128 * Bytes::MIB, BTRFS)
    },
    FsType {
        name: "tmpfs",
        kernel: "tmpfs",
        module: "tmpfs",
        mkfs: None,
        mkfs_args: &[],
        package: None,
        min_image: DEFAULT_MIN,
        min_device: DEFAULT_MIN,
        backing: Backing::Memory,
        space: TMPFS,
        lacks: &[],
    },
    // A pool, not a mkfs: `zpool create` (provision::zfs); OpenZFS's module or zfs-fuse.
    FsType {
        module: "zfs",
        mkfs_args: &[],
        min_device: 64 * Bytes::MIB,
        backing: Backing::Pool,
        ..block("zfs", "zpool", Some("zfs-fuse"), 128 * Bytes::MIB, ZFS)
    },
    // Log-structured for flash; mkfs.f2fs 1.15 refuses devices under 52 MiB.
    FsType {
        mkfs_args: &["-f", "-q"],
        min_device: 52 * Bytes::MIB,
        ..block("f2fs", "mkfs.f2fs", Some("f2fs-tools"), DEFAULT_MIN, F2FS)
    },
    // Both ask for confirmation without these (jfs: `-q`; reiserfs: `-f -f` for a whole disk).
    FsType {
        mkfs_args: &["-q"],
        ..block("jfs", "mkfs.jfs", Some("jfsutils"), DEFAULT_MIN, EXT)
    },
    FsType {
        mkfs_args: &["-f", "-f", "-q"],
        ..block("reiserfs", "mkfs.reiserfs", Some("reiserfsprogs"), DEFAULT_MIN, EXT)
    },
    // bcachefs-tools is not packaged for Debian 12 (the 6.12 backports kernel has the driver).
    block("bcachefs", "mkfs.bcachefs", None, DEFAULT_MIN, EXT),
    // Log-structured with continuous checkpoints; mkfs.nilfs2 2.2.9 needs 134,221,824 bytes
    // with its default 8 MiB segments. mount(8) runs mount.nilfs2, which starts the
    // nilfs_cleanerd garbage collector for the mount.
    FsType {
        mkfs_args: &["-f", "-q"],
        min_device: 134_221_824,
        ..block("nilfs2", "mkfs.nilfs2", Some("nilfs-tools"), 160 * Bytes::MIB, NILFS2)
    },
    // What SD cards and USB sticks carry: no symlinks, no hard links, and one mode and owner
    // for every file (the fmask/dmask/uid/gid mount options); chmod and chown fail with EPERM.
    FsType {
        lacks: &[Feature::Symlinks, Feature::HardLinks, Feature::Permissions],
        ..block("exfat", "mkfs.exfat", Some("exfatprogs"), DEFAULT_MIN, EXFAT)
    },
    // The kernel's NTFS driver (Linux 5.15 and later, where built: Debian 12's 6.1 is not).
    FsType {
        mkfs_args: &["-F", "-f", "-q"],
        ..block("ntfs3", "mkfs.ntfs", Some("ntfs-3g"), DEFAULT_MIN, NTFS)
    },
    // NTFS through FUSE (ntfs-3g; mount(8) runs mount.ntfs-3g): symlinks and hard links work,
    // chmod and chown succeed but keep nothing without the `permissions` mount option.
    FsType {
        kernel: "fuseblk",
        module: "fuse",
        mkfs_args: &["-F", "-f", "-q"],
        backing: Backing::Fuse { helper: "ntfs-3g" },
        lacks: &[Feature::Permissions],
        ..block("ntfs-3g", "mkfs.ntfs", Some("ntfs-3g"), DEFAULT_MIN, NTFS)
    },
    // Read-only images built from a tree (issue 31): erofs-utils 1.5 (Debian 12) knows lz4 and
    // lz4hc (`-zlz4hc,12`, `-C65536` for 64 KiB physical clusters); `-T0` and `--all-root`
    // make the build reproducible (every time 0, every owner root) and `--quiet` keeps its
    // output short. squashfs-tools 4.5: gzip, lzo, lz4, xz, zstd (`-comp xz`, `-b 128K`);
    // `-noappend` always makes a new image, `-all-time 0` and `-all-root` as erofs's `-T0` and
    // `--all-root` (erofs-utils' PERFORMANCE.md builds both so). Both sized like ext4: the
    // staging ext4 holds them.
    FsType {
        mkfs_args: &["-T0", "--all-root", "--quiet"],
        backing: Backing::Built { tree_first: false },
        ..block("erofs", "mkfs.erofs", Some("erofs-utils"), EXT_MIN, EXT)
    },
    FsType {
        mkfs_args: &["-noappend", "-no-progress", "-quiet", "-all-root", "-all-time", "0"],
        backing: Backing::Built { tree_first: true },
        ..block("squashfs", "mksquashfs", Some("squashfs-tools"), EXT_MIN, EXT)
    },
    // Recognised in `--fs` lists only (not listed by `fsbench list filesystems`).
    block("reiser4", "mkfs.reiser4", None, DEFAULT_MIN, EXT),
    block("vfat", "mkfs.vfat", Some("dosfstools"), DEFAULT_MIN, EXT),
];

/// How many rows of [`TABLE`] `fsbench list filesystems` and `doctor` show (the rest are
/// only recognised in `--fs` lists).
const LISTED: usize = 17;

/// The row for names not in [`TABLE`]: `mkfs.NAME`, no arguments, estimated like ext4.
const GENERIC: FsType = FsType {
    name: "",
    kernel: "",
    module: "",
    mkfs: None,
    mkfs_args: &[],
    package: None,
    min_image: DEFAULT_MIN,
    min_device: DEFAULT_MIN,
    backing: Backing::Block,
    space: EXT,
    lacks: &[],
};

/// A resolved row of the table, as a variant keeps it: a Copy handle (an index into
/// [`TABLE`], or the generic row), so the name is looked up once, when the variant is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FsTypeId(Option<u8>);

// Every row's index fits the handle.
const _: () = assert!(TABLE.len() <= u8::MAX as usize);

impl FsTypeId {
    /// The handle of `name`'s row (the generic row for types not in [`TABLE`]).
    pub fn of(name: &str) -> Self {
        FsTypeId(TABLE.iter().position(|t| t.name == name).map(|i| i as u8))
    }

    /// The row this handle stands for.
    pub fn get(self) -> &'static FsType {
        match self.0 {
            Some(i) => &TABLE[usize::from(i)],
            None => &GENERIC,
        }
    }
}

impl FsType {
    /// The row for `name` (the generic row for types not in [`TABLE`]).
    pub fn of(name: &str) -> &'static FsType {
        FsTypeId::of(name).get()
    }

    /// Whether `name` is a row of [`TABLE`].
    pub fn is_known(name: &str) -> bool {
        TABLE.iter().any(|t| t.name == name)
    }

    /// Whether this type lives in RAM (tmpfs): no mkfs, no block device, RAM not scratch space.
    pub fn in_memory(&self) -> bool {
        self.backing == Backing::Memory
    }

    /// Whether this type is a read-only image built from a tree ([`Backing::Built`]).
    pub fn is_built(&self) -> bool {
        matches!(self.backing, Backing::Built { .. })
    }

    /// The build tool's arguments for a [`Backing::Built`] type: fsbench's own
    /// ([`FsType::mkfs_args`]), then a variant's `extra` (compressor, cluster or block size),
    /// with the tree and the image where the tool wants them: `mkfs.erofs OPTIONS IMAGE TREE`,
    /// `mksquashfs TREE IMAGE OPTIONS`. `None` for a type that is not built.
    pub fn build_args(&self, extra: &[String], tree: &str, image: &str) -> Option<Vec<String>> {
        let Backing::Built { tree_first } = self.backing else {
            return None;
        };
        let mut options = self.default_mkfs_args();
        options.extend(extra.iter().cloned());
        let paths = if tree_first { [tree, image] } else { [image, tree] }.map(str::to_string);
        Some(if tree_first {
            paths.into_iter().chain(options).collect()
        } else {
            options.into_iter().chain(paths).collect()
        })
    }

    /// The mkfs program for a filesystem of type `name` (`mkfs.NAME` unless the row says).
    pub fn mkfs_program(&self, name: &str) -> String {
        self.mkfs.map_or_else(|| format!("mkfs.{name}"), str::to_string)
    }

    /// fsbench's own mkfs arguments, owned.
    pub fn default_mkfs_args(&self) -> Vec<String> {
        self.mkfs_args.iter().map(|s| s.to_string()).collect()
    }

    /// Bytes and inodes a workload with footprint `fp` uses on this type at its peak.
    pub fn estimate(&self, fp: &Footprint) -> Usage {
        let s = &self.space;
        let inline = s.inline_max > 0;
        let data = if inline {
            fp.block_bytes.saturating_sub(fp.small_files.saturating_mul(s.block))
        } else {
            fp.block_bytes
        };
        let inline_bytes = if inline {
            (fp.small_bytes as f64 * s.inline_factor) as u64
        } else {
            0
        };
        let inodes = fp.files + fp.dirs + fp.symlinks;
        let data_files = if inline {
            fp.files - fp.small_files.min(fp.files)
        } else {
            fp.files
        };
        let share = |b: u64, f: f64| (b as f64 * f) as u64;
        let bytes = data
            .saturating_add(data_files.saturating_mul(s.per_data_file).min(RESERVE_MAX))
            .saturating_add(share(fp.growing_bytes, s.prealloc_share).min(PREALLOC_MAX))
            .saturating_add(share(fp.rewrite_bytes, s.rewrite_share))
            .saturating_add(inline_bytes)
            .saturating_add(inodes.saturating_mul(s.inode_bytes))
            .saturating_add(fp.dirs.saturating_mul(s.dir_bytes))
            .saturating_add((fp.entry_bytes as f64 * s.entry_factor) as u64)
            .saturating_add(fp.extra_bytes);
        // What the model leaves out (allocator rounding, tree splits): 2 % and 1 MiB.
        let bytes = bytes.saturating_add(bytes / 50).saturating_add(Bytes::MIB);
        Usage { bytes, inodes }
    }

    /// Image bytes that hold `u` on this type: the bytes with the type's own overhead, and for
    /// a fixed inode ratio enough image for the inodes (plus 1 % and 64 spare), in whole MiB,
    /// never below [`FsType::min_image`].
    pub fn image_bytes(&self, u: &Usage) -> u64 {
        self.image_and_reason(u).0
    }

    /// The smallest device that holds `u` (bytes and, for a fixed inode ratio, inodes), bytes.
    pub fn device_bytes(&self, u: &Usage) -> u64 {
        let (b, i) = self.for_bytes_and_inodes(u);
        b.max(i).max(self.min_device)
    }

    /// Image bytes for `u`'s bytes with the type's overhead, and for its inodes, whole MiB.
    fn for_bytes_and_inodes(&self, u: &Usage) -> (u64, u64) {
        let s = &self.space;
        let mib = |b: u64| b.div_ceil(Bytes::MIB).saturating_mul(Bytes::MIB);
        let for_bytes = mib((u.bytes as f64 * (1.0 + s.overhead_share) * 1.05) as u64 + s.overhead_fixed);
        let want = u.inodes.saturating_add(u.inodes / 100).saturating_add(64);
        let for_ratio = s.bytes_per_inode.map_or(0, |per| want.saturating_mul(per));
        // The share is of the data space, after the log and the allocation groups' headers;
        // inodes come in chunks: 10 % more image.
        let for_share = if s.max_inode_share > 0.0 {
            (want.saturating_mul(s.inode_bytes) as f64 / s.max_inode_share * 1.1) as u64
        } else {
            0
        };
        let for_inodes = mib(for_ratio.max(for_share));
        (for_bytes, for_inodes)
    }

    /// The image size and what decided it.
    fn image_and_reason(&self, u: &Usage) -> (u64, &'static str) {
        let (for_bytes, for_inodes) = self.for_bytes_and_inodes(u);
        if self.min_image >= for_bytes.max(for_inodes) {
            (self.min_image, " (the type's minimum)")
        } else if for_inodes > for_bytes {
            (for_inodes, " (sized for inodes)")
        } else {
            (for_bytes, "")
        }
    }

    /// Bytes a repeat writes to the scratch folder at most: what mkfs writes (journal or log,
    /// superblocks; inode tables stay sparse) plus the workload's bytes, never above the image.
    pub fn scratch_bytes(&self, u: &Usage, image: u64) -> u64 {
        match self.backing {
            Backing::Memory => 0,
            _ => {
                let mkfs = (image / 64).min(Bytes::GIB) + 64 * Bytes::MIB;
                u.bytes.saturating_add(mkfs).min(image)
            }
        }
    }

    /// The whole estimate of a workload with footprint `fp` on this type, with its basis.
    pub fn plan(&self, fp: &Footprint) -> Estimate {
        let usage = self.estimate(fp);
        let (image, why) = self.image_and_reason(&usage);
        let mut basis = format!(
            "bytes {} ({} files + {} dirs + {} links, data {} in {} KiB blocks",
            Bytes(usage.bytes).human(),
            fp.files,
            fp.dirs,
            fp.symlinks,
            Bytes(fp.block_bytes).human(),
            self.space.block / 1024
        );
        if fp.rewrite_bytes > 0 {
            let _ = write!(basis, ", rewritten {}", Bytes(fp.rewrite_bytes).human());
        }
        if fp.extra_bytes > 0 {
            let _ = write!(basis, ", other {}", Bytes(fp.extra_bytes).human());
        }
        let _ = write!(basis, "), inodes {}", usage.inodes);
        if let Some(per) = self.space.bytes_per_inode {
            let _ = write!(basis, " (1 per {} KiB)", per / 1024);
        }
        let _ = write!(basis, " → image {}{why}", Bytes(image).human());
        Estimate {
            usage,
            image_bytes: image,
            scratch_bytes: self.scratch_bytes(&usage, image),
            basis,
        }
    }
}

/// The Debian package with a type's mkfs program `tool` (`mkfs.xfs` → `xfsprogs`), if known.
pub fn mkfs_package(tool: &str) -> Option<&'static str> {
    TABLE.iter().find(|t| t.mkfs == Some(tool)).and_then(|t| t.package)
}

/// Filesystem types worth listing: the table's common ones, then every `mkfs.*` found in
/// `/usr/sbin`, `/sbin`, `/usr/bin`, `/bin`, each once.
pub fn candidate_types() -> Vec<String> {
    let mut v: Vec<String> = TABLE[..LISTED].iter().map(|t| t.name.to_string()).collect();
    for dir in ["/usr/sbin", "/sbin", "/usr/bin", "/bin"] {
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let Some(n) = e.file_name().to_str().map(str::to_string) else {
                    continue;
                };
                // `mkfs.ntfs` makes the table's `ntfs3` and `ntfs-3g`: listed under those.
                if TABLE
                    .iter()
                    .any(|t| t.mkfs == Some(n.as_str()) && Some(t.name) != n.strip_prefix("mkfs."))
                {
                    continue;
                }
                if let Some(t) = n.strip_prefix("mkfs.") {
                    v.push(t.to_string());
                }
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    v.retain(|t| seen.insert(t.clone()));
    v
}

/// What a workload holds on the filesystem at its peak, independent of the filesystem.
/// Counts are entries; bytes are bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Regular files.
    pub files: u64,
    /// Directories (not counting the run directory).
    pub dirs: u64,
    /// Symbolic links with short targets (kept in the inode).
    pub symlinks: u64,
    /// File data, each file rounded up to 4 KiB blocks.
    pub block_bytes: u64,
    /// Files of 1..=2048 bytes (btrfs keeps them inline in its metadata), counted in `files`.
    pub small_files: u64,
    /// Their bytes.
    pub small_bytes: u64,
    /// Directory-entry records of every entry: 8 bytes plus the name rounded up to 4.
    pub entry_bytes: u64,
    /// Bytes that are not plain files of known size (database logs and caches), counted as is.
    pub extra_bytes: u64,
    /// Of `block_bytes`, those of files that grow over many writes while held open.
    pub growing_bytes: u64,
    /// Bytes the workload rewrites in place (a file written again over its old data).
    pub rewrite_bytes: u64,
}

/// The size of a file block every footprint rounds to.
const FP_BLOCK: u64 = 4096;
/// Largest inline file (btrfs `max_inline`).
const FP_INLINE: u64 = 2048;

impl Footprint {
    /// Adds `n` files of `size` bytes each, with names of `name_len` bytes.
    pub fn files(mut self, n: u64, size: u64, name_len: u64) -> Self {
        self.files += n;
        let blocks = n.saturating_mul(size.div_ceil(FP_BLOCK) * FP_BLOCK);
        self.block_bytes = self.block_bytes.saturating_add(blocks);
        if (1..=FP_INLINE).contains(&size) {
            self.small_files += n;
            self.small_bytes = self.small_bytes.saturating_add(n.saturating_mul(size));
        }
        self.entries(n, name_len)
    }

    /// Adds one file of each size in `sizes`, with names of `name_len` bytes.
    pub fn file_sizes(self, sizes: impl IntoIterator<Item = u64>, name_len: u64) -> Self {
        sizes.into_iter().fold(self, |f, s| f.files(1, s, name_len))
    }

    /// Adds `n` files with sizes uniform in `[lo, hi]` (expected totals), names of `name_len`.
    pub fn uniform_files(mut self, n: u64, lo: u64, hi: u64, name_len: u64) -> Self {
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        let span = (hi - lo + 1) as f64;
        // Expected blocks per file: Σ over sizes of ceil(size / block), by whole-block runs.
        let (mut blocks, mut small, mut small_bytes) = (0f64, 0f64, 0f64);
        let mut s = lo;
        while s <= hi {
            let b = s.div_ceil(FP_BLOCK);
            let end = if b == 0 { 0 } else { (b * FP_BLOCK).min(hi) };
            blocks += (end - s + 1) as f64 * b as f64;
            if s == u64::MAX || end == hi {
                break;
            }
            s = end + 1;
        }
        let (slo, shi) = (lo.max(1), hi.min(FP_INLINE));
        if slo <= shi {
            let k = (shi - slo + 1) as f64;
            small = k / span;
            small_bytes = k * (slo + shi) as f64 / 2.0 / span;
        }
        let nf = n as f64;
        self.files += n;
        self.block_bytes = self
            .block_bytes
            .saturating_add((nf * blocks / span).ceil() as u64 * FP_BLOCK);
        self.small_files += (nf * small).ceil() as u64;
        self.small_bytes = self.small_bytes.saturating_add((nf * small_bytes).ceil() as u64);
        self.entries(n, name_len)
    }

    /// Marks the data added so far as growing over many writes while held open.
    pub fn growing(mut self) -> Self {
        self.growing_bytes = self.block_bytes;
        self
    }

    /// Adds `bytes` of extra data that grows over many writes while held open (a log).
    pub fn growing_extra(mut self, bytes: u64) -> Self {
        self.growing_bytes = self.growing_bytes.saturating_add(bytes);
        self.extra(bytes)
    }

    /// Marks `bytes` as rewritten in place.
    pub fn rewrites(mut self, bytes: u64) -> Self {
        self.rewrite_bytes = self.rewrite_bytes.saturating_add(bytes);
        self
    }

    /// Adds `n` directories with names of `name_len` bytes.
    pub fn dirs(mut self, n: u64, name_len: u64) -> Self {
        self.dirs += n;
        self.entries(n, name_len)
    }

    /// Adds `n` short symlinks with names of `name_len` bytes.
    pub fn symlinks(mut self, n: u64, name_len: u64) -> Self {
        self.symlinks += n;
        self.entries(n, name_len)
    }

    /// Adds `bytes` of data that is not plain files of known size.
    pub fn extra(mut self, bytes: u64) -> Self {
        self.extra_bytes = self.extra_bytes.saturating_add(bytes);
        self
    }

    fn entries(mut self, n: u64, name_len: u64) -> Self {
        self.entry_bytes = self
            .entry_bytes
            .saturating_add(n.saturating_mul(8 + name_len.div_ceil(4) * 4));
        self
    }

    /// Every count and size multiplied by `f` (a footprint measured on a sample of a larger
    /// whole), rounded up.
    pub fn times(self, f: f64) -> Self {
        let m = |v: u64| (v as f64 * f).ceil() as u64;
        Footprint {
            files: m(self.files),
            dirs: m(self.dirs),
            symlinks: m(self.symlinks),
            block_bytes: m(self.block_bytes / FP_BLOCK) * FP_BLOCK,
            small_files: m(self.small_files),
            small_bytes: m(self.small_bytes),
            entry_bytes: m(self.entry_bytes),
            extra_bytes: m(self.extra_bytes),
            growing_bytes: m(self.growing_bytes),
            rewrite_bytes: m(self.rewrite_bytes),
        }
    }

    /// The footprint twice (a tree and its copy).
    pub fn twice(self) -> Self {
        self.plus(self)
    }

    /// Both footprints at once.
    pub fn plus(self, o: Self) -> Self {
        Footprint {
            files: self.files + o.files,
            dirs: self.dirs + o.dirs,
            symlinks: self.symlinks + o.symlinks,
            block_bytes: self.block_bytes.saturating_add(o.block_bytes),
            small_files: self.small_files + o.small_files,
            small_bytes: self.small_bytes.saturating_add(o.small_bytes),
            entry_bytes: self.entry_bytes.saturating_add(o.entry_bytes),
            extra_bytes: self.extra_bytes.saturating_add(o.extra_bytes),
            growing_bytes: self.growing_bytes.saturating_add(o.growing_bytes),
            rewrite_bytes: self.rewrite_bytes.saturating_add(o.rewrite_bytes),
        }
    }

    /// The larger of two footprints that never coexist, field by field (an upper bound of
    /// either).
    pub fn max(self, o: Self) -> Self {
        Footprint {
            files: self.files.max(o.files),
            dirs: self.dirs.max(o.dirs),
            symlinks: self.symlinks.max(o.symlinks),
            block_bytes: self.block_bytes.max(o.block_bytes),
            small_files: self.small_files.max(o.small_files),
            small_bytes: self.small_bytes.max(o.small_bytes),
            entry_bytes: self.entry_bytes.max(o.entry_bytes),
            extra_bytes: self.extra_bytes.max(o.extra_bytes),
            growing_bytes: self.growing_bytes.max(o.growing_bytes),
            rewrite_bytes: self.rewrite_bytes.max(o.rewrite_bytes),
        }
    }
}

/// Bytes and inodes a workload uses on one filesystem type at its peak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Growth of `df` "used", bytes.
    pub bytes: u64,
    /// Inodes in use.
    pub inodes: u64,
}

/// A workload's estimate on one type: usage, image size, scratch space, and the basis shown
/// by `fsbench plan`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// Bytes and inodes at the peak.
    pub usage: Usage,
    /// The image (or tmpfs `size=`) to make, bytes.
    pub image_bytes: u64,
    /// Bytes a repeat writes to the scratch folder at most (0 for tmpfs).
    pub scratch_bytes: u64,
    /// One line: `bytes X (…), inodes Y (1 per 16 KiB) → image Z`.
    pub basis: String,
}

/// What ENOSPC on the filesystem holding `path` means: `"out of inodes"` when it has no free
/// inodes left (or fewer than 1 % of them with blocks to spare), else `"filesystem full"`.
pub fn enospc_cause(path: &std::path::Path) -> &'static str {
    let mut p = path;
    loop {
        if let Ok(st) = rustix::fs::statvfs(p) {
            let inodes_short = st.f_files > 0 && st.f_ffree <= st.f_files / 100;
            let blocks_left = st.f_bfree > st.f_blocks / 20;
            return if inodes_short && blocks_left {
                "out of inodes"
            } else {
                "filesystem full"
            };
        }
        match p.parent() {
            Some(q) => p = q,
            None => return "filesystem full",
        }
    }
}

/// What follows the phase in the note of a phase left out ([`FsType::unsupported`]).
const UNSUPPORTED: &str = ": unsupported on";

/// Whether `note` says `phase` was left out because the filesystem lacks what it needs.
pub fn is_unsupported_note(note: &str, phase: &str) -> bool {
    note.strip_prefix(phase)
        .is_some_and(|rest| rest.starts_with(UNSUPPORTED))
}

/// The mount options fsbench maps to ZFS dataset properties, for error messages.
pub const ZFS_SUPPORTED_OPTIONS: &str = "noatime, atime, compress[=ALG] (or compression=ALG), recordsize=SIZE, \
     sync=standard|always|disabled (OpenZFS only), checksum=ALG";

/// The ZFS dataset properties for a variant's mount options, in order (provision::zfs), or
/// one error naming the option and listing the supported ones.
pub fn dataset_properties(opts: &[String]) -> Result<Vec<(String, String)>, BadZfsOption> {
    let mut out: Vec<(String, String)> = Vec::new();
    for opt in opts {
        let (key, value) = match opt.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (opt.as_str(), None),
        };
        let prop = match (key, value) {
            ("noatime", None) => ("atime", "off"),
            ("atime", None) => ("atime", "on"),
            ("compress", None) => ("compression", "on"),
            ("compress" | "compression", Some(v)) => ("compression", v),
            ("recordsize", Some(v)) => ("recordsize", v),
            ("sync", Some(v)) => ("sync", v),
            ("checksum", Some(v)) => ("checksum", v),
            _ => return Err(BadZfsOption::Unknown(opt.clone())),
        };
        if prop.1.is_empty() || prop.1.contains([',', ' ']) {
            return Err(BadZfsOption::NoValue {
                opt: opt.clone(),
                key: key.to_string(),
            });
        }
        // A later option overrides an earlier one, as with mount(8).
        out.retain(|(k, _)| k != prop.0);
        out.push((prop.0.to_string(), prop.1.to_string()));
    }
    Ok(out)
}

/// A zfs mount option with no dataset property ([`dataset_properties`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadZfsOption {
    /// An option fsbench does not map.
    #[error("zfs: mount option `{0}` has no dataset property fsbench knows; supported: {ZFS_SUPPORTED_OPTIONS}")]
    Unknown(String),
    /// An option without its value.
    #[error("zfs: mount option `{opt}` needs a value, e.g. `{key}=…`")]
    NoValue {
        /// The option as written.
        opt: String,
        /// Its key.
        key: String,
    },
}

impl FsType {
    /// Checks a variant's mount options when a suite or `--fs` is read: for a pool type they
    /// must map to dataset properties ([`dataset_properties`]); other types pass.
    pub fn check_mount_options(&self, opts: &[String]) -> Result<(), BadZfsOption> {
        if self.backing != Backing::Pool {
            return Ok(());
        }
        dataset_properties(opts).map(|_| ())
    }

    /// The first of `needs` this type lacks.
    pub fn lacking(&self, needs: &[Feature]) -> Option<Feature> {
        needs.iter().copied().find(|f| self.lacks.contains(f))
    }

    /// The first of `needs` this type lacks, as a note: `"symlink: unsupported on exfat (no
    /// symbolic links)"`; `None` when it has them all.
    pub fn unsupported(&self, phase: &str, needs: &[Feature]) -> Option<String> {
        let f = self.lacking(needs)?;
        Some(format!(
            "{phase}{UNSUPPORTED} {} (no {}); the phase was left out",
            self.name,
            f.describe()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_has_a_unique_name_and_known_types_resolve() {
        let mut names: Vec<&str> = TABLE.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TABLE.len());
        assert_eq!(FsType::of("xfs").min_image, 320 * Bytes::MIB);
        assert!(FsType::of("tmpfs").in_memory());
        assert_eq!(FsType::of("nosuchfs").mkfs_program("nosuchfs"), "mkfs.nosuchfs");
        assert!(FsType::of("ext4")
            .mkfs_args
            .contains(&"lazy_itable_init=0,lazy_journal_init=0"));
    }

    #[test]
    fn ext4_images_grow_for_inodes_and_others_do_not() {
        // 30,000 files of 1 KiB and 4,000 directories, copied once: 68,000 inodes.
        let fp = Footprint::default().files(30_000, 1024, 12).dirs(4_000, 8).twice();
        let e = FsType::of("ext4").plan(&fp);
        assert_eq!(e.usage.inodes, 68_000);
        assert!(e.image_bytes / (16 * Bytes::KIB) >= 68_000, "{}", e.basis);
        assert!(e.basis.contains("sized for inodes"), "{}", e.basis);
        // XFS makes inodes as needed: its image follows the bytes alone.
        let x = FsType::of("xfs").plan(&fp);
        assert!(
            !x.basis.contains("inodes)") && x.image_bytes > x.usage.bytes,
            "{}",
            x.basis
        );
        // The scratch folder needs what is written, not the sparse image.
        assert!(e.scratch_bytes < e.image_bytes);
    }

    #[test]
    fn a_million_tiny_files_need_their_blocks_not_an_inode_ratio_of_space() {
        // mongo with 1,000,000 files of 100 B: two copies and a link per file.
        let fp = Footprint::default()
            .files(1_000_000, 100, 9)
            .dirs(240, 6)
            .twice()
            .symlinks(1_000_000, 13);
        let t = FsType::of("tmpfs").estimate(&fp);
        assert!(t.bytes >= 2_000_000 * 4096 && t.bytes < 2_000_000 * 4096 * 21 / 20);
        let e = FsType::of("ext4").plan(&fp);
        assert!(e.usage.bytes < 9 * Bytes::GIB, "{}", e.basis);
        assert!(e.scratch_bytes < 10 * Bytes::GIB, "{}", e.basis);
        assert!(e.image_bytes >= 3_000_480 * 16 * Bytes::KIB, "{}", e.basis);
    }

    #[test]
    fn xfs_images_hold_a_million_empty_files_within_imaxpct() {
        // 10^6 empty files in 1,000 directories: the bytes alone gave a 1.8 GiB image, whose
        // 25 % holds only ~943,000 inodes of 512 bytes (a real run stopped at 937,105).
        let fp = Footprint::default().dirs(1000, 8).files(1_000_000, 0, 10);
        let x = FsType::of("xfs").plan(&fp);
        assert!(x.image_bytes / 4 / 512 > x.usage.inodes, "{}", x.basis);
        assert!(x.basis.contains("sized for inodes"), "{}", x.basis);
        // A few large files: the bytes decide, as before.
        let big = FsType::of("xfs").plan(&Footprint::default().files(4, Bytes::GIB, 8));
        assert!(!big.basis.contains("inodes)"), "{}", big.basis);
    }

    #[test]
    fn a_device_needs_what_holds_the_workload_not_the_image_floor() {
        let small = FsType::of("ext4").estimate(&Footprint::default().files(256, 4096, 12));
        let d = FsType::of("ext4").device_bytes(&small);
        assert!(d < FsType::of("ext4").min_image && d >= DEFAULT_MIN, "{d}");
        assert!(FsType::of("xfs").device_bytes(&small) >= 300_000_000);
        // Inodes still decide where the count is fixed by the size.
        let many = FsType::of("ext4").estimate(&Footprint::default().files(100_000, 0, 12));
        assert!(FsType::of("ext4").device_bytes(&many) >= 100_000 * 16 * Bytes::KIB);
    }

    #[test]
    fn uniform_sizes_give_the_expected_blocks() {
        let f = Footprint::default().uniform_files(1000, 0, 8191, 10);
        // Sizes 0: 0 blocks; 1..=4096: 1; 4097..=8191: 2 → (4096 + 2·4095) / 8192 per file.
        let per: f64 = (4096.0 + 2.0 * 4095.0) / 8192.0;
        assert_eq!(f.block_bytes, (1000.0 * per).ceil() as u64 * 4096);
        assert_eq!(f.small_files, (1000.0 * 2048.0 / 8192.0f64).ceil() as u64);
        let same = Footprint::default().uniform_files(10, 100, 100, 10);
        assert_eq!(same, Footprint::default().files(10, 100, 10));
    }

    #[test]
    fn built_types_put_the_tree_and_image_where_their_tool_wants_them() {
        let extra = ["-zlz4hc".to_string(), "-C65536".to_string()];
        assert_eq!(
            FsType::of("erofs").build_args(&extra, "T", "I").unwrap(),
            ["-T0", "--all-root", "--quiet", "-zlz4hc", "-C65536", "I", "T"]
        );
        let extra = ["-comp".to_string(), "xz".to_string()];
        assert_eq!(
            FsType::of("squashfs").build_args(&extra, "T", "I").unwrap(),
            [
                "T",
                "I",
                "-noappend",
                "-no-progress",
                "-quiet",
                "-all-root",
                "-all-time",
                "0",
                "-comp",
                "xz"
            ]
        );
        assert!(FsType::of("erofs").is_built() && FsType::of("squashfs").is_built());
        assert_eq!(FsType::of("ext4").build_args(&[], "T", "I"), None);
        assert!(!FsType::of(STAGING).is_built());
    }

    #[test]
    fn the_listed_rows_end_with_the_image_types_and_exfat_declares_what_it_lacks() {
        assert_eq!(TABLE[LISTED - 1].name, "squashfs");
        assert_eq!(TABLE[LISTED].name, "reiser4");
        let exfat = FsType::of("exfat");
        let note = exfat.unsupported("symlink", &[Feature::Symlinks]).unwrap();
        assert_eq!(
            note,
            "symlink: unsupported on exfat (no symbolic links); the phase was left out"
        );
        assert!(exfat
            .unsupported("copy", &[Feature::HardLinks])
            .unwrap()
            .contains("no hard links"));
        assert_eq!(exfat.unsupported("read", &[]), None);
        assert!(is_unsupported_note(&note, "symlink") && !is_unsupported_note(&note, "sym"));
        assert!(!is_unsupported_note("symlink ran under 0.5 s", "symlink"));
        assert_eq!(FsType::of("ext4").unsupported("symlink", &[Feature::Symlinks]), None);
        // The minimum sizes mkfs accepts here (f2fs-tools 1.15, nilfs-tools 2.2.9).
        assert_eq!(FsType::of("f2fs").min_device, 52 * Bytes::MIB);
        assert!(FsType::of("nilfs2").min_image >= 134_221_824);
        assert_eq!(mkfs_package("mkfs.ntfs"), Some("ntfs-3g"));
    }

    #[test]
    fn enospc_on_a_filesystem_with_inodes_left_is_full() {
        assert_eq!(enospc_cause(std::path::Path::new("/")), "filesystem full");
    }
}
