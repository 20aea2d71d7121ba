//! fsync error semantics (issue 28, item 4): what a filesystem tells an application whose data
//! could not be written back, probed on the power-cut disk's failing range.
//!
//! One probe: a file of four stamped 4 KiB units is written and made durable (generation 1);
//! its first extent's place on the image is read with FIEMAP; the units are overwritten in the
//! page cache (generation 2); the disk is told to fail every write to that place with EIO; then
//! `fsync` twice, the range healed, the file read through the page cache, and read again after
//! `posix_fadvise(DONTNEED)` dropped its clean pages. The outcome says whether the first fsync
//! reported the error, whether the second then returned success although the data never
//! reached the disk, and what each read returned (the new data, the old data, an error).
//! References: the ATC'20 study of fsync failures (Rebello et al., "Can applications recover
//! from fsync failures?"), the kernel's errseq_t (Documentation/filesystems/vfs.rst).
//!
//! The failing range is where the disk holds the file's generation-1 units: FIEMAP's physical
//! offset where the image holds them there (ext2/3/4, xfs), else the one place in the image
//! that holds all four, found by reading it ([`locate`]; btrfs, whose FIEMAP offsets are
//! addresses in its own chunk space). On btrfs the file is made NOCOW (`FS_NOCOW_FL`, set
//! while it is empty) first: a copy-on-write overwrite goes to a newly allocated place, which
//! no range set in advance can fail, so a copy-on-write file would show a writeback that
//! never failed (measured: 0 writes refused, both fsyncs successful). The cut models play no
//! part: the probe makes no cut, and a failing range refuses the write before any model logs
//! it, so the probe runs the same under every model.

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
    /// Writes the disk refused with EIO in the failing range (0: the range was never written,
    /// so the fsyncs' answers say nothing about a failure).
    pub refused_writes: u64,
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

/// Filesystems whose copy-on-write overwrites must be turned off for the probe's file.
const NOCOW: &[&str] = &["btrfs"];

/// Whether the probe's file is made NOCOW on a filesystem of type `fs_type` (module doc).
pub fn nocow(fs_type: &str) -> bool {
    NOCOW.contains(&fs_type)
}

/// Runs the probe in the new folder `dir` on the filesystem of type `fs_type` served by
/// `server`; `Err` says why it could not run (not a result). The folder is left for the caller
/// to remove.
pub fn probe(dir: &Path, fs_type: &str, server: &DiskServer) -> Result<Outcome, ProbeError> {
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
    if nocow(fs_type) {
        crate::host::path::set_nocow(&path).map_err(e("set FS_NOCOW_FL on the probe's file"))?;
    }
    let old = stamped(ID, UNIT, 0, UNITS, 1);
    f.write_all_at(&old, 0).map_err(e("write"))?;
    f.sync_all().map_err(e("fsync"))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(e("fsync the folder"))?;
    let at = locate(&f, &server.image(), &old)?;
    f.write_all_at(&stamped(ID, UNIT, 0, UNITS, 2), 0)
        .map_err(e("overwrite"))?;
    let refused = || server.stats().map(|s| s.eio_writes);
    let before = refused()?;
    server.fail_writes(at, (UNITS * UNIT) as u64)?;
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
    })
}

/// Whether `image` holds `want` at byte `at`.
fn holds_at(image: &File, at: u64, want: &[u8]) -> bool {
    let mut buf = vec![0u8; want.len()];
    image.read_exact_at(&mut buf, at).is_ok() && buf == want
}

/// The byte offset in `image` (the disk as the power-cut disk serves it) of the durable
/// contents `want` of the open file `f`: FIEMAP's physical offset where the image holds them
/// there, else the one 4 KiB-aligned place that holds them, found by reading the image. `Err`
/// when none does, or more than one (the probe would not know which to fail).
pub fn locate(f: &File, image: &Path, want: &[u8]) -> Result<u64, ProbeError> {
    let img = File::open(image).map_err(|source| ProbeError::Io {
        what: format!("open {}", image.display()),
        source,
    })?;
    // Only a hint: without FIEMAP the image is read.
    let hint = crate::fiemap::Mapper::new()
        .first_extent(f.as_raw_fd())
        .ok()
        .flatten()
        .filter(|x| x.fe_logical == 0)
        .map(|x| x.fe_physical);
    if let Some(at) = hint.filter(|at| holds_at(&img, *at, want)) {
        return Ok(at);
    }
    let head = &want[..UNIT.min(want.len())];
    let mut found = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut base = 0u64;
    loop {
        let n =
            crate::workloads::powercut::disk::read_at_most(&img, &mut buf, base).map_err(|source| ProbeError::Io {
                what: "read the image".into(),
                source,
            })?;
        let whole = n - n % UNIT;
        if whole == 0 {
            break;
        }
        for (i, block) in buf[..whole].chunks(UNIT).enumerate() {
            let at = base + (i * UNIT) as u64;
            if block == head && holds_at(&img, at, want) {
                found.push(at);
            }
        }
        base += whole as u64;
    }
    match found[..] {
        [at] => Ok(at),
        [] => Err(ProbeError::Nowhere),
        _ => Err(ProbeError::Ambiguous(found.len())),
    }
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
    /// The file's durable contents are not on the disk in one piece.
    #[error("the file's durable blocks are nowhere on the disk in one piece")]
    Nowhere,
    /// The file's durable contents are at several places: which one to fail is unknown.
    #[error("the file's durable blocks are at {0} places on the disk")]
    Ambiguous(usize),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_durable_blocks_are_found_where_the_image_holds_them_once() {
        let t = tempfile::tempdir().unwrap();
        let f = File::create(t.path().join("f")).unwrap();
        let want = stamped(ID, UNIT, 0, UNITS, 1);
        let image = t.path().join("image");
        let mut img = vec![0u8; 64 * UNIT];
        img[3 * UNIT..3 * UNIT + want.len()].copy_from_slice(&want);
        // The first unit alone elsewhere is not the file.
        img[40 * UNIT..41 * UNIT].copy_from_slice(&want[..UNIT]);
        std::fs::write(&image, &img).unwrap();
        assert_eq!(locate(&f, &image, &want).unwrap(), 3 * UNIT as u64);
        img[20 * UNIT..20 * UNIT + want.len()].copy_from_slice(&want);
        std::fs::write(&image, &img).unwrap();
        assert!(locate(&f, &image, &want).unwrap_err().to_string().contains("2 places"));
        std::fs::write(&image, vec![0u8; 64 * UNIT]).unwrap();
        assert!(locate(&f, &image, &want).unwrap_err().to_string().contains("nowhere"));
    }
}
