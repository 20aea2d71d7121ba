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
//! Only where FIEMAP's physical offset is the byte offset on the device (ext2/3/4, xfs): on
//! btrfs it is an address in the filesystem's own chunk space, and its copy-on-write writes go
//! elsewhere anyway, so the probe is not run there (a note says so).

use super::primitives::stamped;
use super::stamp::{self, BlockState};
use crate::engine::workloads::powercut::disk::DiskServer;
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

/// Runs the probe in the new folder `dir` on the filesystem of type `fs_type` served by
/// `server`; `Err` says why it could not run (not a result). The folder is left for the caller
/// to remove.
pub fn probe(dir: &Path, fs_type: &str, server: &DiskServer) -> Result<Outcome, String> {
    if !matches!(fs_type, "ext2" | "ext3" | "ext4" | "xfs") {
        return Err(format!(
            "not probed on {fs_type}: FIEMAP's physical offset is not the byte offset on the disk there"
        ));
    }
    let e = |what: &'static str| move |err: std::io::Error| format!("{what}: {err}");
    std::fs::create_dir(dir).map_err(e("create the probe's folder"))?;
    let path = dir.join("f");
    let f = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(e("create the probe's file"))?;
    f.write_all_at(&stamped(ID, UNIT, 0, UNITS, 1), 0).map_err(e("write"))?;
    f.sync_all().map_err(e("fsync"))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(e("fsync the folder"))?;
    let ext = crate::engine::fiemap::Mapper::new()
        .first_extent(f.as_raw_fd())
        .map_err(e("FIEMAP"))?
        .filter(|x| x.fe_logical == 0 && x.fe_length >= (UNITS * UNIT) as u64)
        .ok_or("the file's first extent does not hold its four blocks")?;
    f.write_all_at(&stamped(ID, UNIT, 0, UNITS, 2), 0)
        .map_err(e("overwrite"))?;
    server
        .fail_writes(ext.fe_physical, (UNITS * UNIT) as u64)
        .map_err(|x| x.to_string())?;
    let first = f.sync_all();
    let second = f.sync_all();
    server.heal().map_err(|x| x.to_string())?;
    let cached_read = seen(&f);
    // SAFETY: a plain system call on an open descriptor.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    let uncached_read = seen(&f);
    Ok(Outcome {
        first_fsync_error: first.is_err(),
        second_fsync_ok: second.is_ok(),
        cached_read,
        uncached_read,
    })
}
