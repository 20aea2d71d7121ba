//! File fragmentation through the `FS_IOC_FIEMAP` ioctl, on any filesystem that implements it
//! (ext2/3/4, xfs, btrfs, f2fs, …; not tmpfs, which has no block map).
//!
//! [`Mapper`] owns one request buffer (allocated once, reused for every file) and maps a file
//! in as many ioctl calls as it takes: each call returns at most [`EXTENTS_PER_CALL`] extents;
//! the next call starts where the last returned extent ends, until an extent carries
//! `FIEMAP_EXTENT_LAST` or a call maps nothing (the rest of the file is a hole).
//!
//! Two counts come out of one mapping ([`FileMap`]):
//! - `extents`: the records the filesystem reported (ext4 splits extents at 128 MiB, btrfs
//!   at 128 MiB of compressed data, …, so a contiguous file may have several);
//! - `fragments`: physically discontiguous pieces, the number e2fsprogs' `filefrag` prints as
//!   "N extents found". An extent continues the previous piece when it starts right after it
//!   on disk (dense), or where the previous extent's logical-to-physical offset puts it (the
//!   same run with a hole in the file); an extent at logical offset 0 always continues. A file
//!   with no mapped data (empty, or all hole) has 0 of both; inline data (btrfs and ext4 small
//!   files, reported with `FIEMAP_EXTENT_DATA_INLINE`) is one extent and one fragment.
//!
//! References: the kernel's `Documentation/filesystems/fiemap.rst` and
//! `include/uapi/linux/fiemap.h` (layouts and flags, restated below), filefrag(8) and its
//! counting rule in e2fsprogs `misc/filefrag.c` (read for semantics, nothing copied).
//!
//! Invariants: the layouts below match the kernel's UAPI structs exactly (checked by tests);
//! mapping never allocates after [`Mapper::new`]; `fragments <= extents`.

use rustix::fs::{Mode, OFlags};
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

/// `FS_IOC_FIEMAP` = `_IOWR('f', 11, struct fiemap)`, with `sizeof(struct fiemap)` = 32.
pub const FS_IOC_FIEMAP: libc::c_ulong =
    (3 << 30) | ((std::mem::size_of::<FiemapHeader>() as libc::c_ulong) << 16) | ((b'f' as libc::c_ulong) << 8) | 11;
/// Request flag: sync the file before mapping it.
pub const FIEMAP_FLAG_SYNC: u32 = 0x1;
/// Extent flag: the last extent of the file.
pub const FIEMAP_EXTENT_LAST: u32 = 0x1;
/// Extent flag: data is not yet allocated on disk (delayed allocation).
pub const FIEMAP_EXTENT_DELALLOC: u32 = 0x4;
/// Extent flag: data is stored in the inode or metadata (no block of its own).
pub const FIEMAP_EXTENT_DATA_INLINE: u32 = 0x200;
/// Extents asked for per ioctl call.
pub const EXTENTS_PER_CALL: usize = 128;
/// `FIEMAP_MAX_OFFSET`: map to the end of the file, whatever its size.
const MAX_OFFSET: u64 = u64::MAX;

/// `struct fiemap` without its flexible array (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct FiemapHeader {
    /// Logical byte offset where mapping starts (in).
    pub fm_start: u64,
    /// Logical length to map, bytes (in).
    pub fm_length: u64,
    /// `FIEMAP_FLAG_*` (in/out).
    pub fm_flags: u32,
    /// Extents written to the array (out).
    pub fm_mapped_extents: u32,
    /// Room in the array, in extents (in).
    pub fm_extent_count: u32,
    /// Reserved, zero.
    pub fm_reserved: u32,
}

/// `struct fiemap_extent` (56 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FiemapExtent {
    /// Logical byte offset of the extent in the file.
    pub fe_logical: u64,
    /// Physical byte offset on the device.
    pub fe_physical: u64,
    /// Length, bytes.
    pub fe_length: u64,
    /// Reserved.
    pub fe_reserved64: [u64; 2],
    /// `FIEMAP_EXTENT_*`.
    pub fe_flags: u32,
    /// Reserved.
    pub fe_reserved: [u32; 3],
}

/// The request buffer: header followed by the extent array, as the kernel expects it.
#[repr(C)]
struct Request {
    header: FiemapHeader,
    extents: [FiemapExtent; EXTENTS_PER_CALL],
}

/// How one file is laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileMap {
    /// Extent records the filesystem reported.
    pub extents: u64,
    /// Physically discontiguous pieces (filefrag's "N extents found").
    pub fragments: u64,
    /// Extents still in delayed allocation (no disk position yet; sync first to avoid them).
    pub delalloc: u64,
}

/// Counts pieces across the extents of one file, in order (see the module docs for the rule).
#[derive(Clone, Copy, Debug, Default)]
struct FragmentCounter {
    prev: Option<FiemapExtent>,
    map: FileMap,
}

impl FragmentCounter {
    fn push(&mut self, e: &FiemapExtent) {
        self.map.extents += 1;
        if e.fe_flags & FIEMAP_EXTENT_DELALLOC != 0 {
            self.map.delalloc += 1;
        }
        let continues = match &self.prev {
            None => false,
            Some(p) => {
                let dense = p.fe_physical.wrapping_add(p.fe_length);
                let same_run = p.fe_physical.wrapping_add(e.fe_logical.wrapping_sub(p.fe_logical));
                e.fe_logical == 0 || e.fe_physical == dense || e.fe_physical == same_run
            }
        };
        if !continues {
            self.map.fragments += 1;
        }
        self.prev = Some(*e);
    }
}

/// Maps files with `FS_IOC_FIEMAP`, reusing one request buffer.
pub struct Mapper {
    req: Box<Request>,
    flags: u32,
}

impl Default for Mapper {
    fn default() -> Self {
        Mapper::new()
    }
}

impl Mapper {
    /// A mapper with room for [`EXTENTS_PER_CALL`] extents per call (about 7 KiB, allocated
    /// once), without `FIEMAP_FLAG_SYNC`.
    pub fn new() -> Mapper {
        Mapper {
            req: Box::new(Request {
                header: FiemapHeader::default(),
                extents: [FiemapExtent::default(); EXTENTS_PER_CALL],
            }),
            flags: 0,
        }
    }

    /// Also asks the filesystem to write the file's dirty data before mapping it
    /// (`FIEMAP_FLAG_SYNC`, filefrag's `-s`), so delayed allocations get their place.
    pub fn with_sync(mut self) -> Mapper {
        self.flags |= FIEMAP_FLAG_SYNC;
        self
    }

    /// Maps the open file `fd`. Errors are the ioctl's: `EOPNOTSUPP`/`ENOTTY` when the
    /// filesystem has no FIEMAP (see [`is_unsupported`]).
    pub fn map_fd(&mut self, fd: RawFd) -> io::Result<FileMap> {
        let mut counter = FragmentCounter::default();
        let mut start = 0u64;
        loop {
            self.req.header = FiemapHeader {
                fm_start: start,
                fm_length: MAX_OFFSET - start,
                fm_flags: self.flags,
                fm_mapped_extents: 0,
                fm_extent_count: EXTENTS_PER_CALL as u32,
                fm_reserved: 0,
            };
            let ptr: *mut Request = &mut *self.req;
            // SAFETY: `ptr` points to a live, writable `struct fiemap` followed by room for
            // `fm_extent_count` extents, exactly the layout FS_IOC_FIEMAP reads and writes;
            // the kernel does not keep the pointer.
            let rc = unsafe { libc::ioctl(fd, FS_IOC_FIEMAP as _, ptr) };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
            let n = (self.req.header.fm_mapped_extents as usize).min(EXTENTS_PER_CALL);
            if n == 0 {
                break;
            }
            let mut last = false;
            for e in &self.req.extents[..n] {
                counter.push(e);
                last |= e.fe_flags & FIEMAP_EXTENT_LAST != 0;
            }
            let tail = &self.req.extents[n - 1];
            let next = tail.fe_logical.saturating_add(tail.fe_length);
            // A zero-length final record cannot advance the cursor: stop rather than loop.
            if last || next <= start || next == MAX_OFFSET {
                break;
            }
            start = next;
        }
        Ok(counter.map)
    }

    /// The first extent of the open file `fd` (the one at its lowest logical offset), `None`
    /// for a file without one.
    pub fn first_extent(&mut self, fd: RawFd) -> io::Result<Option<FiemapExtent>> {
        self.req.header = FiemapHeader {
            fm_start: 0,
            fm_length: MAX_OFFSET,
            fm_flags: self.flags,
            fm_mapped_extents: 0,
            fm_extent_count: 1,
            fm_reserved: 0,
        };
        let ptr: *mut Request = &mut *self.req;
        // SAFETY: as in `map_fd`: a live, writable `struct fiemap` with room for one extent.
        let rc = unsafe { libc::ioctl(fd, FS_IOC_FIEMAP as _, ptr) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((self.req.header.fm_mapped_extents > 0).then(|| self.req.extents[0]))
    }

    /// Opens `name` relative to the directory `dirfd` (read-only, not following a final
    /// symlink) and maps it.
    pub fn map_at(&mut self, dir: BorrowedFd<'_>, name: &CStr) -> io::Result<FileMap> {
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NOCTTY;
        let fd = rustix::fs::openat(dir, name, flags, Mode::empty())?;
        self.map_fd(fd.as_raw_fd())
    }

    /// Maps the file at `path`.
    pub fn map_path(&mut self, path: &std::path::Path) -> io::Result<FileMap> {
        let f = std::fs::File::open(path)?;
        self.map_fd(f.as_raw_fd())
    }
}

/// `true` when `e` means "this filesystem does not implement FIEMAP" rather than a failure.
pub fn is_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EOPNOTSUPP) | Some(libc::ENOTTY) | Some(libc::ENOSYS)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};

    fn ext(logical: u64, physical: u64, length: u64, flags: u32) -> FiemapExtent {
        FiemapExtent {
            fe_logical: logical,
            fe_physical: physical,
            fe_length: length,
            fe_flags: flags,
            ..FiemapExtent::default()
        }
    }

    fn count(list: &[FiemapExtent]) -> FileMap {
        let mut c = FragmentCounter::default();
        for e in list {
            c.push(e);
        }
        c.map
    }

    #[test]
    fn layouts_and_ioctl_number_match_the_kernel_uapi() {
        assert_eq!(std::mem::size_of::<FiemapHeader>(), 32);
        assert_eq!(std::mem::size_of::<FiemapExtent>(), 56);
        assert_eq!(std::mem::offset_of!(FiemapExtent, fe_flags), 40);
        assert_eq!(std::mem::offset_of!(Request, extents), 32);
        // _IOWR('f', 11, struct fiemap) on x86_64 and aarch64.
        assert_eq!(FS_IOC_FIEMAP, 0xC020_660B);
    }

    #[test]
    fn counting_rule_merges_physically_contiguous_extents() {
        let k = 4096;
        // One piece split into two records (ext4 at 128 MiB): one fragment.
        let split = [
            ext(0, 100 * k, 10 * k, 0),
            ext(10 * k, 110 * k, 5 * k, FIEMAP_EXTENT_LAST),
        ];
        assert_eq!(
            count(&split),
            FileMap {
                extents: 2,
                fragments: 1,
                delalloc: 0
            }
        );
        // A hole in the file but the same logical→physical offset: still one piece.
        let sparse = [ext(0, 100 * k, k, 0), ext(5 * k, 105 * k, k, FIEMAP_EXTENT_LAST)];
        assert_eq!(count(&sparse).fragments, 1);
        // Elsewhere on disk: a second fragment; back after the first: a third.
        let three = [
            ext(0, 100 * k, k, 0),
            ext(k, 500 * k, k, 0),
            ext(2 * k, 102 * k, k, FIEMAP_EXTENT_LAST),
        ];
        assert_eq!(count(&three).fragments, 3);
        // A file starting with a hole counts its first extent.
        assert_eq!(count(&[ext(8 * k, 9 * k, k, FIEMAP_EXTENT_LAST)]).fragments, 1);
        // Inline data is one extent and one fragment; nothing mapped is zero.
        let inline = [ext(0, 0, 100, FIEMAP_EXTENT_LAST | FIEMAP_EXTENT_DATA_INLINE)];
        assert_eq!(count(&inline).fragments, 1);
        assert_eq!(count(&[]), FileMap::default());
        assert_eq!(count(&[ext(0, 0, k, FIEMAP_EXTENT_DELALLOC)]).delalloc, 1);
    }

    #[test]
    fn maps_real_files_in_tmp_when_supported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let mut f = std::fs::File::create(&path).expect("create");
        let mut mapper = Mapper::new().with_sync();
        match mapper.map_fd(f.as_raw_fd()) {
            Err(e) if is_unsupported(&e) => {
                skip_or_fail!("{} has no FIEMAP ({e})", dir.path().display())
            }
            Err(e) => panic!("fiemap of an empty file: {e}"),
            Ok(m) => assert_eq!(m, FileMap::default(), "an empty file has no extents"),
        }
        f.write_all(&vec![7u8; 256 * 1024]).expect("write");
        f.sync_all().expect("fsync");
        let m = mapper.map_fd(f.as_raw_fd()).expect("fiemap");
        assert!(m.extents >= 1 && m.fragments >= 1 && m.fragments <= m.extents, "{m:?}");
        assert_eq!(m.delalloc, 0, "synced data has a place on disk");
        // A file with a hole in front maps only its data.
        let sparse = dir.path().join("sparse");
        let mut s = std::fs::File::create(&sparse).expect("create");
        s.seek(SeekFrom::Start(64 << 20)).expect("seek");
        s.write_all(b"tail").expect("write");
        s.sync_all().expect("fsync");
        let m = mapper.map_path(&sparse).expect("fiemap");
        assert_eq!(m.fragments, 1, "{m:?}");
        let missing = mapper.map_at(rustix::fs::CWD, c"/nonexistent/fsbench-fiemap");
        assert_eq!(missing.err().and_then(|e| e.raw_os_error()), Some(libc::ENOENT));
    }
}
