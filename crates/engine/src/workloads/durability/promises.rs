//! What is documented, or reported by the literature, for each primitive and for the fsync
//! error probe (issue 28, item 6): one table, [`PROMISES`], each entry with its source. The
//! report's durability matrix states the entries beside each cell and prints a measurement that
//! contradicts an entry as a `FINDING` ([`Claim::broken_by`]); nothing here changes what is
//! measured.
//!
//! Entries that hold on every filesystem (`fs_types` empty) are POSIX's or Linux's man pages;
//! each primitive of [`super::primitives::TABLE`] has exactly one, and its claim is the
//! primitive's own [`Promise`] (a break of it is the matrix's `VIOLATION`, not a finding).
//! Entries for one filesystem (and, where it matters, a mount option such as ext4's `data=`
//! mode) are what that filesystem documents beyond POSIX, or what a study measured on it.
//!
//! The fsync error probe's entries (issue 42, item 4) are scoped to what their source studied:
//! the ATC'20 study (Rebello et al.) measured ext4 in data=ordered and data=journal mode, XFS
//! and Btrfs with its default copy-on-write files, and modelled each in its artifact CuttleFS
//! (`cuttlefs/fsyncs.py`: `Ext4Ordered`/`XFS` keep the new data in clean pages and report once,
//! `Ext4Data` reports at the next fsync, `Btrfs` "reverts to old state on failure", dropping the
//! failed pages). A NOCOW btrfs file is btrfs(5)'s `nodatacow` for that file: the report reads a
//! `nocow = true` variant as mounted with `nodatacow` ([`with_nocow`]), so an entry for btrfs's
//! copy-on-write files (`when` `datacow`, btrfs's default) is not judged on it. ext4
//! data=journal writes the data to its journal first, so the probe's disk refuses the journal
//! write and jbd2 aborts the journal; ATC'20's data-mode behaviour (a failure at the data's
//! home, after the journal commit) is not what the probe makes, and has no entry.

use super::primitives::Promise;

/// What an entry says will be found after a power cut (or, for the probe, after a failed
/// writeback).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Every acknowledged unit survives: a lost, reverted or torn unit contradicts it.
    Durable,
    /// A replaced file is whole in its old or its new version: a file in neither contradicts it.
    OldOrNew,
    /// Nothing survives for sure: a loss is the documented outcome, never a finding.
    MayLose,
    /// The probe's 0/1 row `metric` of phase `fsync-eio` is `expected` (1 = true) in every
    /// repeat.
    Probe {
        /// The metric of row `fsync-eio` (`first_fsync_error`, …).
        metric: &'static str,
        /// What the source says it is.
        expected: bool,
    },
}

impl Claim {
    /// The claim as the reports state it.
    pub fn as_str(self) -> &'static str {
        match self {
            Claim::Durable => "durable",
            Claim::OldOrNew => "old or new",
            Claim::MayLose => "may lose",
            Claim::Probe { expected: true, .. } => "yes",
            Claim::Probe { expected: false, .. } => "no",
        }
    }

    /// Whether what was measured contradicts the claim: `damaged` units and replaced files in
    /// `neither` version (summed over cuts and repeats) for a primitive; for a probe claim,
    /// `probe` = (repeats whose row `metric` was 1, repeats probed).
    pub fn broken_by(self, damaged: u64, neither: u64, probe: Option<(u64, u64)>) -> bool {
        match self {
            Claim::Durable => damaged > 0,
            Claim::OldOrNew => neither > 0,
            Claim::MayLose => false,
            Claim::Probe { expected, .. } => {
                probe.is_some_and(|(yes, n)| n > 0 && if expected { yes < n } else { yes > 0 })
            }
        }
    }

    /// The claim POSIX makes for a primitive's own promise.
    pub fn of(p: Promise) -> Claim {
        match p {
            Promise::Durable => Claim::Durable,
            Promise::Atomic => Claim::OldOrNew,
            Promise::Nothing | Promise::Control => Claim::MayLose,
        }
    }
}

/// One entry of the table.
#[derive(Clone, Copy, Debug)]
pub struct Documented {
    /// The primitive's name, or `fsync-eio` for the probe.
    pub primitive: &'static str,
    /// The filesystem types it holds for; empty: every filesystem.
    pub fs_types: &'static [&'static str],
    /// A mount option it holds under (`data=ordered`, `flushoncommit`); for ext3/ext4 a
    /// `data=` condition also holds when no `data=` option is given and it is the default mode
    /// (`ordered`). `None`: any options.
    pub when: Option<&'static str>,
    /// What it says will be found.
    pub claim: Claim,
    /// Where it is documented, short (the matrix cites it).
    pub cite: &'static str,
    /// What the source says, in a sentence.
    pub says: &'static str,
}

const ALL: &[&str] = &[];
const EXT4: &[&str] = &["ext3", "ext4"];

const fn entry(
    primitive: &'static str,
    fs_types: &'static [&'static str],
    when: Option<&'static str>,
    claim: Claim,
    cite: &'static str,
    says: &'static str,
) -> Documented {
    Documented {
        primitive,
        fs_types,
        when,
        claim,
        cite,
        says,
    }
}

const FSYNC: &str = "POSIX fsync(2)";
const FSYNC_SAYS: &str = "fsync returns after all data and metadata of the file reached the storage device (Linux fsync(2): including a flush of the disk's write cache); the size is metadata it covers";
const DIR_FSYNC: &str = "Linux fsync(2)";
const DIR_FSYNC_SAYS: &str =
    "fsync of a file does not make its directory entry durable; an explicit fsync of the directory does";
const ATC20: &str = "ATC'20 (Rebello et al.)";
const AUTO_DA_ALLOC: &str = "ext4(5) auto_da_alloc";
const AUTO_DA_ALLOC_SAYS: &str = "on a rename over an existing file, the new file's delayed-allocation blocks are forced to disk before the rename is committed, in the default data=ordered mode (the ext3-like guarantee that avoids zero-length files)";
const WRITEBACK: &str = "ext4(5) data=writeback";
const WRITEBACK_SAYS: &str = "data ordering is not preserved: data may reach the disk after its metadata is committed, so old or missing data can appear after a crash (auto_da_alloc's guarantee is for data=ordered)";
const XFS_FAQ: &str = "XFS FAQ (NULL files)";
const XFS_SAYS: &str = "metadata can be committed before the data it refers to is written back, so a file written shortly before a crash can read as zeros or be empty; xfs flushes a file on close after truncating it, not on rename";
const BTRFS_317: &str = "btrfs since 3.17 (GLib MR 2425)";
const BTRFS_SAYS: &str = "btrfs flushed a file renamed over another before the commit (2009, \"add extra flushing for renames and truncates\"); its developers confirmed this is not guaranteed since kernel 3.17: empty files after a crash";
const DIOREAD: &str = "ext4(5) dioread_nolock";
const DIOREAD_SAYS: &str = "the default since Linux 5.6: buffered writeback allocates unwritten extents and converts them to written when the I/O completes, in a later transaction; a rename committed before the conversion comes back at its size with zeros (measured here: 0 lost with dioread_lock)";
const FLUSHONCOMMIT: &str = "btrfs(5) flushoncommit";
const FLUSHONCOMMIT_SAYS: &str = "flushoncommit forces all data dirtied before a transaction into that commit, so the committed state includes every completed operation (a rename commits with its file's data)";
const ATC20_ONCE: &str = "after a failed writeback the pages are marked clean: the error is reported once, and a later fsync succeeds although the data is not on the disk (CuttleFS: Ext4Ordered, XFS, Btrfs)";
/// btrfs(5)'s default: files are copy-on-write (`nodatacow` turns it off for new files).
pub const DATACOW: &str = "datacow";
/// btrfs(5)'s mount option that makes new files NOCOW, as `chattr +C` does for one file.
pub const NODATACOW: &str = "nodatacow";

/// Every entry: per primitive the POSIX (or Linux man page) promise first, then what each
/// filesystem documents, then the fsync error probe's.
pub const PROMISES: &[Documented] = &[
    entry("write-fsync", ALL, None, Claim::Durable, FSYNC, FSYNC_SAYS),
    entry(
        "write-fdatasync",
        ALL,
        None,
        Claim::Durable,
        "POSIX fdatasync(2)",
        "fdatasync returns after the data and the metadata needed to read it back reached the storage device (synchronized I/O data integrity completion)",
    ),
    entry(
        "osync-write",
        ALL,
        None,
        Claim::Durable,
        "POSIX open(2) O_SYNC",
        "each write returns after its data and the file's metadata reached synchronized I/O file integrity completion",
    ),
    entry(
        "odsync-write",
        ALL,
        None,
        Claim::Durable,
        "POSIX open(2) O_DSYNC",
        "each write returns after its data (and the metadata needed to read it) reached synchronized I/O data integrity completion",
    ),
    entry(
        "write-fsync-1k",
        ALL,
        None,
        Claim::Durable,
        FSYNC,
        "fsync covers every byte written, whatever the size of the write (a sub-block write is a read-modify-write of the block)",
    ),
    entry(
        "write-fsync-64k",
        ALL,
        None,
        Claim::Durable,
        FSYNC,
        "fsync covers every byte written; no filesystem here promises that a write larger than a block is atomic before it",
    ),
    entry(
        "mmap-msync",
        ALL,
        None,
        Claim::Durable,
        "POSIX msync(2) MS_SYNC",
        "msync with MS_SYNC returns after the mapped range was written to the file's storage (Linux: an fsync of the range)",
    ),
    entry("append-fsync", ALL, None, Claim::Durable, FSYNC, FSYNC_SAYS),
    entry("truncate-fsync", ALL, None, Claim::Durable, FSYNC, FSYNC_SAYS),
    entry("create-fsync-file-dir", ALL, None, Claim::Durable, DIR_FSYNC, DIR_FSYNC_SAYS),
    entry(
        "create-fsync-file",
        ALL,
        None,
        Claim::MayLose,
        DIR_FSYNC,
        "calling fsync on a file does not necessarily ensure that the entry in the directory containing it has reached the disk",
    ),
    entry("hardlink-fsync-dir", ALL, None, Claim::Durable, DIR_FSYNC, DIR_FSYNC_SAYS),
    entry(
        "rename-fsync-file-dir",
        ALL,
        None,
        Claim::Durable,
        "POSIX rename(2), fsync(2)",
        "the documented safe replace: the new file's data made durable by its fsync, the rename by the directory's",
    ),
    entry(
        "rename-fsync-file",
        ALL,
        None,
        Claim::OldOrNew,
        "POSIX rename(2)",
        "the name refers to the old or the new file at every moment, and the new file's data is durable: a crash shows one of the two",
    ),
    entry(
        "rename-fsync-dir",
        ALL,
        None,
        Claim::MayLose,
        "POSIX rename(2), fsync(2)",
        "the directory's fsync makes the rename durable, not the new file's data: a zero-length or partial file is allowed",
    ),
    entry("rename-fsync-dir", EXT4, Some("data=ordered"), Claim::Durable, AUTO_DA_ALLOC, AUTO_DA_ALLOC_SAYS),
    entry("rename-fsync-dir", EXT4, Some("data=writeback"), Claim::MayLose, WRITEBACK, WRITEBACK_SAYS),
    entry("rename-fsync-dir", &["ext4"], Some("dioread_nolock"), Claim::MayLose, DIOREAD, DIOREAD_SAYS),
    entry("rename-fsync-dir", &["xfs"], None, Claim::MayLose, XFS_FAQ, XFS_SAYS),
    entry("rename-fsync-dir", &["btrfs"], None, Claim::MayLose, BTRFS_317, BTRFS_SAYS),
    entry(
        "rename-no-fsync",
        ALL,
        None,
        Claim::MayLose,
        "POSIX rename(2)",
        "without an fsync nothing is durable: the old file, the new one, or a zero-length one",
    ),
    entry("rename-no-fsync", EXT4, Some("data=ordered"), Claim::OldOrNew, AUTO_DA_ALLOC, AUTO_DA_ALLOC_SAYS),
    entry("rename-no-fsync", EXT4, Some("data=writeback"), Claim::MayLose, WRITEBACK, WRITEBACK_SAYS),
    entry("rename-no-fsync", &["xfs"], None, Claim::MayLose, XFS_FAQ, XFS_SAYS),
    entry("rename-no-fsync", &["btrfs"], None, Claim::MayLose, BTRFS_317, BTRFS_SAYS),
    entry(
        "rename-no-fsync",
        &["btrfs"],
        Some("flushoncommit"),
        Claim::OldOrNew,
        FLUSHONCOMMIT,
        FLUSHONCOMMIT_SAYS,
    ),
    entry(
        "sync-file-range",
        ALL,
        None,
        Claim::MayLose,
        "Linux sync_file_range(2)",
        "no guarantee that the data is there after a crash: it writes no metadata and does not flush the disk's write cache",
    ),
    entry(
        super::primitives::FLUSH_CONTROL,
        ALL,
        None,
        Claim::MayLose,
        "Linux sync_file_range(2)",
        "written back with no flush of the disk's write cache: the flush control, lost by a cut that drops unflushed writes, kept by one that keeps what reached the disk",
    ),
    entry(
        super::primitives::CONTROL,
        ALL,
        None,
        Claim::MayLose,
        "POSIX write(2)",
        "a write acknowledged with no sync is not durable: the negative control, which a working cut must catch",
    ),
    entry(
        super::PHASE_FSYNC_EIO,
        ALL,
        None,
        Claim::Probe {
            metric: "first_fsync_error",
            expected: true,
        },
        "Linux fsync(2) EIO",
        "an error during synchronization is returned as EIO; since Linux 4.13 a writeback error is reported to every file descriptor open on the file then (errseq_t)",
    ),
    entry(
        super::PHASE_FSYNC_EIO,
        EXT4,
        Some("data=ordered"),
        Claim::Probe {
            metric: "second_fsync_ok",
            expected: true,
        },
        ATC20,
        ATC20_ONCE,
    ),
    entry(
        super::PHASE_FSYNC_EIO,
        &["xfs"],
        None,
        Claim::Probe {
            metric: "second_fsync_ok",
            expected: true,
        },
        ATC20,
        ATC20_ONCE,
    ),
    entry(
        super::PHASE_FSYNC_EIO,
        &["btrfs"],
        Some(DATACOW),
        Claim::Probe {
            metric: "second_fsync_ok",
            expected: true,
        },
        ATC20,
        ATC20_ONCE,
    ),
    entry(
        super::PHASE_FSYNC_EIO,
        &["ext3", "ext4", "xfs"],
        None,
        Claim::Probe {
            metric: "cached_read_new",
            expected: true,
        },
        ATC20,
        "ext4 (ordered and data mode) and XFS keep the new, unwritten data in the clean pages: a read returns data the disk does not hold, until the pages are evicted",
    ),
    entry(
        super::PHASE_FSYNC_EIO,
        &["btrfs"],
        Some(DATACOW),
        Claim::Probe {
            metric: "cached_read_new",
            expected: false,
        },
        ATC20,
        "Btrfs reverts the file to its state on the disk after a failed fsync (CuttleFS's Btrfs drops the failed pages): a read returns the old data, not the new",
    ),
    entry(
        super::PHASE_FSYNC_EIO,
        EXT4,
        Some("data=journal"),
        Claim::Probe {
            metric: "went_read_only",
            expected: true,
        },
        "ext4(5) data=journal, jbd2_journal_abort",
        "data=journal commits the data into the journal before it is written to its place; a journal write that fails aborts the journal (no further commits, new handles get EROFS) and ext4 remounts read-only",
    ),
];

/// Whether mount options `opts` (comma lists) of a filesystem of type `fs_type` satisfy
/// `when` ([`Documented::when`]): ext3/ext4's `data=` mode (default `ordered`), ext4's
/// `dioread_nolock` (its default but with `dioread_lock`, `nodioread_nolock` or data=journal,
/// which turns it off), btrfs's `datacow` (its default but with `nodatacow`), else the option
/// given.
fn holds(fs_type: &str, opts: &[String], when: Option<&str>) -> bool {
    let Some(when) = when else { return true };
    let given: Vec<&str> = opts.iter().flat_map(|o| o.split(',')).map(str::trim).collect();
    let mode = given.iter().find_map(|o| o.strip_prefix("data=")).unwrap_or("ordered");
    match when.strip_prefix("data=") {
        Some(want) if EXT4.contains(&fs_type) => mode == want,
        _ if when == "dioread_nolock" && fs_type == "ext4" => {
            mode != "journal" && !given.iter().any(|o| matches!(*o, "dioread_lock" | "nodioread_nolock"))
        }
        _ if when == DATACOW && fs_type == "btrfs" => !given.contains(&NODATACOW),
        _ => given.contains(&when),
    }
}

/// The mount options a variant's entries are judged under: `opts`, and for a NOCOW variant
/// (`nocow = true`: its workload folder has `FS_NOCOW_FL`, so every file the workload makes is
/// NOCOW) btrfs(5)'s [`NODATACOW`], which does the same for every new file.
pub fn with_nocow(opts: &[String], nocow: bool) -> Vec<String> {
    let mut o = opts.to_vec();
    if nocow {
        o.push(NODATACOW.into());
    }
    o
}

/// The entries of `table` that hold for `primitive` on a filesystem of type `fs_type` mounted
/// with `opts`, in table order.
pub fn applicable<'a>(
    table: &'a [Documented],
    primitive: &'a str,
    fs_type: &'a str,
    opts: &'a [String],
) -> impl Iterator<Item = &'a Documented> + 'a {
    table.iter().filter(move |d| {
        d.primitive == primitive
            && (d.fs_types.is_empty() || d.fs_types.contains(&fs_type))
            && holds(fs_type, opts, d.when)
    })
}

/// Every entry of [`PROMISES`] for `primitive`, in table order.
pub fn for_primitive(primitive: &str) -> impl Iterator<Item = &'static Documented> + '_ {
    PROMISES.iter().filter(move |d| d.primitive == primitive)
}

impl Documented {
    /// Where it holds: `every filesystem`, `ext3/ext4 data=ordered`, `btrfs flushoncommit`.
    pub fn scope(&self) -> String {
        let fs = if self.fs_types.is_empty() {
            "every filesystem".to_string()
        } else {
            self.fs_types.join("/")
        };
        match self.when {
            Some(w) => format!("{fs} {w}"),
            None => fs,
        }
    }

    /// Whether it is the POSIX promise of a primitive of the table (its break is a
    /// `VIOLATION`, not a finding).
    pub fn is_primitive_promise(&self) -> bool {
        self.fs_types.is_empty() && super::primitives::by_name(self.primitive).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::super::primitives::{by_name, TABLE};
    use super::*;

    #[test]
    fn every_primitive_has_one_posix_entry_matching_its_promise() {
        for p in TABLE {
            let posix: Vec<&Documented> = for_primitive(p.name).filter(|d| d.fs_types.is_empty()).collect();
            assert_eq!(posix.len(), 1, "{}", p.name);
            assert_eq!(posix[0].claim, Claim::of(p.promise), "{}", p.name);
        }
        for d in PROMISES {
            assert!(
                by_name(d.primitive).is_some() || d.primitive == super::super::PHASE_FSYNC_EIO,
                "{}",
                d.primitive
            );
            assert!(!d.cite.is_empty() && !d.says.is_empty(), "{}", d.primitive);
        }
    }

    #[test]
    fn entries_hold_for_their_filesystem_and_mode_only() {
        let o = |s: &str| vec![s.to_string()];
        let cites =
            |p, fs, opts: &[String]| -> Vec<&str> { applicable(PROMISES, p, fs, opts).map(|d| d.cite).collect() };
        assert_eq!(
            cites("rename-fsync-dir", "ext4", &[]),
            ["POSIX rename(2), fsync(2)", AUTO_DA_ALLOC, DIOREAD]
        );
        assert!(cites("rename-fsync-dir", "ext4", &o("noatime,data=ordered")).contains(&AUTO_DA_ALLOC));
        assert_eq!(
            cites("rename-fsync-dir", "ext4", &o("data=writeback"))[1..],
            [WRITEBACK, DIOREAD]
        );
        assert_eq!(cites("rename-fsync-dir", "ext4", &o("data=journal")).len(), 1);
        assert_eq!(
            cites("rename-fsync-dir", "ext4", &o("dioread_lock")),
            ["POSIX rename(2), fsync(2)", AUTO_DA_ALLOC]
        );
        assert!(!cites("rename-fsync-dir", "ext3", &[]).contains(&DIOREAD));
        assert_eq!(cites("rename-no-fsync", "btrfs", &[]), ["POSIX rename(2)", BTRFS_317]);
        assert!(cites("rename-no-fsync", "btrfs", &o("compress=zstd,flushoncommit")).contains(&FLUSHONCOMMIT));
        let eio = super::super::PHASE_FSYNC_EIO;
        let claims = |fs, opts: &[String]| -> Vec<(&str, bool)> {
            applicable(PROMISES, eio, fs, opts)
                .filter_map(|d| match d.claim {
                    Claim::Probe { metric, expected } => Some((metric, expected)),
                    _ => None,
                })
                .collect()
        };
        let fsync1 = ("first_fsync_error", true);
        let once = ("second_fsync_ok", true);
        let new = ("cached_read_new", true);
        assert_eq!(claims("xfs", &[]), [fsync1, once, new]);
        assert_eq!(claims("ext4", &[]), [fsync1, once, new], "data=ordered by default");
        assert_eq!(claims("ext4", &o("data=writeback")), [fsync1, new], "not studied");
        assert_eq!(
            claims("ext4", &o("data=journal")),
            [fsync1, new, ("went_read_only", true)]
        );
        // btrfs's copy-on-write files, and a NOCOW variant: only what holds for every file.
        assert_eq!(claims("btrfs", &[]), [fsync1, once, ("cached_read_new", false)]);
        assert_eq!(claims("btrfs", &with_nocow(&[], true)), [fsync1]);
        assert_eq!(claims("btrfs", &o("nodatacow")), [fsync1]);
        assert_eq!(with_nocow(&o("noatime"), false), o("noatime"));
    }

    #[test]
    fn each_claim_is_broken_by_what_contradicts_it_and_only_that() {
        assert!(Claim::Durable.broken_by(1, 0, None) && !Claim::Durable.broken_by(0, 0, None));
        assert!(Claim::OldOrNew.broken_by(4, 1, None) && !Claim::OldOrNew.broken_by(4, 0, None));
        assert!(!Claim::MayLose.broken_by(96, 24, None));
        let yes = Claim::Probe {
            metric: "first_fsync_error",
            expected: true,
        };
        assert!(yes.broken_by(0, 0, Some((1, 2))) && !yes.broken_by(0, 0, Some((2, 2))));
        assert!(
            !yes.broken_by(0, 0, None) && !yes.broken_by(0, 0, Some((0, 0))),
            "not probed"
        );
        let no = Claim::Probe {
            metric: "x",
            expected: false,
        };
        assert!(no.broken_by(0, 0, Some((1, 2))) && !no.broken_by(0, 0, Some((0, 2))));
    }
}
