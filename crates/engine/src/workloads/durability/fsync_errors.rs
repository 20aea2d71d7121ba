//! fsync error semantics (issue 28, item 4; issue 42, item 4): what a filesystem tells an
//! application whose data could not be written back, probed on the power-cut disk.
//!
//! One probe: a file of four stamped 4 KiB units is written and made durable (generation 1);
//! the disk is told to fail with EIO every write that carries a unit of generation 2 of this
//! file ([`DiskServer::fail_stamped`], by what the write carries, [`super::stamp::carries`]);
//! the units are overwritten in the page cache (generation 2); then `fsync` twice, the disk
//! healed, the file read through the page cache, and read again after
//! `posix_fadvise(DONTNEED)` dropped its clean pages. The outcome says whether the first fsync
//! reported the error, whether the second then returned success although the data never
//! reached the disk, and what each read returned (the new data, the old data, an error).
//! References: the ATC'20 study of fsync failures (Rebello et al., "Can applications recover
//! from fsync failures?", and its model of each filesystem, CuttleFS), the kernel's errseq_t
//! (Documentation/filesystems/vfs.rst, "Handling errors during writeback").
//!
//! Failing by content, not by place, is what makes the probe hold for every filesystem as it
//! is run: an in-place overwrite (ext4, xfs, a NOCOW btrfs file) and a copy-on-write one
//! (btrfs, which writes the new data to a newly allocated extent) carry the same units, so both
//! fail. Before (issue 42), the disk failed a byte range found in advance, which no
//! copy-on-write overwrite reaches, and the probe made its btrfs file NOCOW: the `btrfs` column
//! described a NOCOW file. The file now inherits what its folder has: NOCOW only in a
//! `nocow = true` variant (`btrfs+nocow`), whose workload folder carries `FS_NOCOW_FL`; the
//! outcome says which ([`Outcome::nocow`], read back). The disk is told before the overwrite,
//! so no writeback of generation 2 (the kernel's own flusher included) can reach it. A unit
//! stored transformed (btrfs `compress`, fscrypt) or inline in metadata is not recognised:
//! the disk then refuses nothing and [`Outcome::refused_writes`] is 0, which says the answers
//! are about no failure. A filesystem that writes the data to its journal first (ext4
//! data=journal) has that journal write refused: it aborts the journal and turns read-only
//! ([`Outcome::read_only`]), and the caller mounts it again (its recovery) before the cuts.
//! The cut models play no part: the probe makes no cut, and a refused
//! write is refused before any model logs it, so the probe runs the same under every model.

use super::primitives::stamped;
use super::stamp::{self, BlockState};
use crate::workloads::powercut::disk::DiskServer;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Units in the probe's file.
const UNITS: usize = 4;
/// Bytes of a unit.
const UNIT: usize = 4096;
/// The stamp id of the probe's file.
const ID: u32 = 999_999;

/// What a read after the failed writeback returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Every unit of the new generation (what was written, never stored).
    New,
    /// Every unit of the old generation (what the disk holds).
    Old,
    /// The read failed.
    Error,
    /// Anything else (mixed, zeros).
    Other,
}

impl Seen {
    /// The outcome as the notes state it.
    pub fn as_str(self) -> &'static str {
        match self {
            Seen::New => "the new data",
            Seen::Old => "the old data",
            Seen::Error => "an error",
            Seen::Other => "neither version",
        }
    }
}

/// What one probe found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The first fsync after the failed writeback returned an error.
    pub first_fsync_error: bool,
    /// The second fsync returned success (the data is still not on the disk).
    pub second_fsync_ok: bool,
    /// The read through the page cache right after.
    pub cached_read: Seen,
    /// The read after the file's clean pages were dropped.
    pub uncached_read: Seen,
    /// Writes the disk refused with EIO because they carried the new units (0: none was
    /// written, so the fsyncs' answers say nothing about a failure).
    pub refused_writes: u64,
    /// Whether the probe's file had `FS_NOCOW_FL` (read back; inherited from its folder in a
    /// `nocow = true` variant); `None` where the filesystem answers no flags.
    pub nocow: Option<bool>,
    /// The filesystem was read-only after the failure (ext4 data=journal, whose journal write
    /// carries the data, aborts its journal, and turns read-only at its next operation): set by
    /// the caller ([`syncfs_after`]) after it removed the probe's folder, and it then mounts the
    /// filesystem again before going on.
    pub read_only: bool,
}

fn seen(f: &File) -> Seen {
    let mut buf = vec![0u8; UNITS * UNIT];
    if f.read_exact_at(&mut buf, 0).is_err() {
        return Seen::Error;
    }
    let all = |g| {
        buf.chunks(UNIT)
            .enumerate()
            .all(|(i, u)| stamp::classify(u, UNIT, ID, (i * UNIT) as u64, g) == BlockState::Intact)
    };
    if all(2) {
        Seen::New
    } else if all(1) {
        Seen::Old
    } else {
        Seen::Other
    }
}

/// Filesystems whose overwrites of a file are copy-on-write unless it is NOCOW.
const COPY_ON_WRITE: &[&str] = &["btrfs"];

/// What the notes say of the probe's file on a filesystem of type `fs_type`, given its NOCOW
/// flag read back: ` (a NOCOW file: overwritten in place)`, ` (a copy-on-write file: the new
/// data went to a new place)`, or nothing where the filesystem overwrites in place anyway.
pub fn file_kind(fs_type: &str, nocow: Option<bool>) -> &'static str {
    match nocow {
        Some(true) => " (a NOCOW file: overwritten in place)",
        _ if COPY_ON_WRITE.contains(&fs_type) => " (a copy-on-write file: the new data went to a new place)",
        _ => "",
    }
}

/// `syncfs` of the filesystem holding `path` after the probe: (it returned an error, the
/// filesystem is read-only). Read-only: mounted so (statvfs), or refusing the sync with EROFS,
/// which ext4 does as soon as its journal aborted and before its read-only flag is set (ext4
/// turns read-only from a work queue).
pub fn syncfs_after(path: &Path) -> (bool, bool) {
    let r = File::open(path).and_then(|f| rustix::fs::syncfs(&f).map_err(std::io::Error::from));
    let erofs = r.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EROFS));
    let flagged = rustix::fs::statvfs(path).is_ok_and(|v| v.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY));
    (r.is_err(), erofs || flagged)
}

/// Runs the probe in the new folder `dir` on the filesystem served by `server`; `Err` says why
/// it could not run (not a result). The folder is left for the caller to remove; the caller
/// heals the disk in any case (a probe that failed half-way may leave it failing).
pub fn probe(dir: &Path, server: &DiskServer) -> Result<Outcome, ProbeError> {
    let e = |what: &'static str| {
        move |source: std::io::Error| ProbeError::Io {
            what: what.to_string(),
            source,
        }
    };
    std::fs::create_dir(dir).map_err(e("create the probe's folder"))?;
    let path = dir.join("f");
    let f = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(e("create the probe's file"))?;
    let nocow = crate::host::path::nocow(&path).ok();
    f.write_all_at(&stamped(ID, UNIT, 0, UNITS, 1), 0).map_err(e("write"))?;
    f.sync_all().map_err(e("fsync"))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(e("fsync the folder"))?;
    let refused = || server.stats().map(|s| s.eio_writes);
    let before = refused()?;
    // Before the overwrite: no writeback of the new units, the flusher's included, gets through.
    server.fail_stamped(ID, 2)?;
    f.write_all_at(&stamped(ID, UNIT, 0, UNITS, 2), 0)
        .map_err(e("overwrite"))?;
    let first = f.sync_all();
    let second = f.sync_all();
    server.heal()?;
    let refused_writes = refused()? - before;
    let cached_read = seen(&f);
    // SAFETY: a plain system call on an open descriptor.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    let uncached_read = seen(&f);
    Ok(Outcome {
        first_fsync_error: first.is_err(),
        second_fsync_ok: second.is_ok(),
        cached_read,
        uncached_read,
        refused_writes,
        nocow,
        read_only: false,
    })
}

/// Why the probe could not run (not a result of the probe).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// A step on the probe's file or the disk's image failed.
    #[error("{what}: {source}")]
    Io {
        /// The step, e.g. "fsync the folder".
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The power-cut disk refused a command or its statistics.
    #[error(transparent)]
    Disk(#[from] crate::workloads::powercut::disk::DiskError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_is_told_new_old_mixed_or_failed() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("f");
        let new = stamped(ID, UNIT, 0, UNITS, 2);
        let old = stamped(ID, UNIT, 0, UNITS, 1);
        let mut mixed = new.clone();
        mixed[UNIT..2 * UNIT].copy_from_slice(&old[UNIT..2 * UNIT]);
        for (data, want) in [(&new, Seen::New), (&old, Seen::Old), (&mixed, Seen::Other)] {
            std::fs::write(&path, data).unwrap();
            assert_eq!(seen(&File::open(&path).unwrap()), want);
        }
        std::fs::write(&path, &new[..UNIT]).unwrap();
        assert_eq!(
            seen(&File::open(&path).unwrap()),
            Seen::Error,
            "short: read_exact fails"
        );
    }

    #[test]
    fn the_file_kind_is_said_where_it_matters() {
        assert!(file_kind("btrfs", Some(true)).contains("NOCOW"));
        assert!(file_kind("btrfs", Some(false)).contains("copy-on-write"));
        assert!(file_kind("btrfs", None).contains("copy-on-write"));
        assert_eq!(file_kind("ext4", Some(false)), "");
    }
}
