//! The few system-call helpers the workloads share that rustix does not provide as such.
//!
//! The workloads call rustix (`rustix::fs::{openat, mkdirat, unlinkat, statat, renameat,
//! symlinkat, syncfs}`, `rustix::io::{read, write}`) directly: a `&CStr` name is passed to
//! the kernel as it is, and `rustix::io::Errno` becomes a `std::io::Error` with `.into()`.
//! What is left here is what every caller would otherwise write again:
//!
//! - [`write_all`]: write(2) until the whole buffer is written, retrying `EINTR` and short
//!   writes (rustix's `write` is one system call);
//! - [`read_some`]: one read(2), retrying `EINTR`;
//! - [`close_checked`]: close(2) that reports its error. Dropping an `OwnedFd` or a
//!   `std::fs::File` ignores it, but full disks and NFS report failed writeback there, and a
//!   benchmark that wrote data must not call that a success;
//! - [`getdents64`]: one getdents64(2) into the caller's buffer, retrying `EINTR` (rustix's
//!   `RawDir` cannot stay open in a worker across its calls);
//! - [`pread_exact_flags`] and [`pwrite_all_flags`]: preadv2(2) / pwritev2(2) of one buffer
//!   with per-call flags (`RWF_DONTCACHE`, [`RWF_DONTCACHE`]) until the whole buffer is read
//!   or written, retrying `EINTR` and short transfers, as `FileExt::read_exact_at` and
//!   `write_all_at` do for pread(2) / pwrite(2); [`pwrite_atomic`], one `RWF_ATOMIC` write;
//! - [`AlignedBuf`]: a zeroed heap buffer with the alignment O_DIRECT needs (a `Vec<u8>` only
//!   promises byte alignment), allocated once before a timed region.
//!
//! Invariants: nothing here allocates, formats or locks, so the helpers may run inside a
//! timed hot loop (`Worker::op`); each issues exactly the system calls named above, no
//! others, so a workload still does what its C baseline (`bench/smallfiles.c`,
//! `bench/mongo_meta.c`) does. Errors: [`read_some`] and [`close_checked`] can only fail with
//! an errno and return `rustix::io::Result`; [`write_all`] can also fail without one (a
//! write(2) that writes nothing) and returns `std::io::Result` with
//! `ErrorKind::WriteZero`, as `std::io::Write::write_all` does. `EINTR` from close(2) is
//! returned, never retried: Linux has released the descriptor by then (close(2), "Dealing
//! with error returns from close()").
//!
//! References: write(2), read(2), close(2), preadv2(2) (man-pages 6.x; `RWF_DONTCACHE` is
//! Linux 6.14's `include/uapi/linux/fs.h`, uncached buffered I/O: the page cache is used for
//! the transfer and its pages dropped once the I/O is done); rustix 0.38 `rustix::io::read`,
//! `rustix::io::write` and `rustix::io::try_close` (cargo feature `try_close`), whose
//! documentation explains why rustix's own `close` ignores errors
//! (<https://lwn.net/Articles/576518/>).

use rustix::io::Errno;
use std::alloc::{Layout, LayoutError};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, IntoRawFd, OwnedFd};
use std::ptr::NonNull;

/// write(2) until all of `buf` is written, retrying `EINTR` and short writes; a write(2)
/// that writes nothing is `ErrorKind::WriteZero`.
#[inline]
pub(crate) fn write_all<Fd: AsFd>(fd: Fd, mut buf: &[u8]) -> io::Result<()> {
    let fd = fd.as_fd();
    while !buf.is_empty() {
        match rustix::io::write(fd, buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// One read(2) into `buf`, retried on `EINTR`; `Ok(0)` at end of file.
#[inline]
pub(crate) fn read_some<Fd: AsFd>(fd: Fd, buf: &mut [u8]) -> rustix::io::Result<usize> {
    let fd = fd.as_fd();
    loop {
        match rustix::io::read(fd, buf) {
            Err(Errno::INTR) => {}
            r => return r,
        }
    }
}

/// `RWF_DONTCACHE` (Linux 6.14+): uncached buffered I/O. A read or write goes through the
/// page cache and its pages are dropped once the read completes or the write's writeback
/// does; a filesystem without support fails the call with `EOPNOTSUPP` (btrfs on 6.18).
pub(crate) const RWF_DONTCACHE: rustix::io::ReadWriteFlags =
    rustix::io::ReadWriteFlags::from_bits_retain(libc::RWF_DONTCACHE as u32);

/// `RWF_ATOMIC` (Linux 6.11+): the write lands whole or not at all, torn by no crash. Needs
/// O_DIRECT, a length that is a power of two within the file's atomic write unit range
/// (statx `STATX_WRITE_ATOMIC`) and an offset aligned to that length.
pub(crate) const RWF_ATOMIC: rustix::io::ReadWriteFlags =
    rustix::io::ReadWriteFlags::from_bits_retain(libc::RWF_ATOMIC as u32);

/// One pwritev2(2) of all of `buf` at `pos` with `RWF_ATOMIC`, retrying `EINTR`. An atomic
/// write is never continued: a short count is an error (`ErrorKind::WriteZero`'s sibling
/// `Other`, "short atomic write"), never a second, non-atomic call for the rest.
#[inline]
pub(crate) fn pwrite_atomic<Fd: AsFd>(fd: Fd, buf: &[u8], pos: u64) -> io::Result<()> {
    let fd = fd.as_fd();
    loop {
        match rustix::io::pwritev2(fd, &[io::IoSlice::new(buf)], pos, RWF_ATOMIC) {
            Ok(n) if n == buf.len() => return Ok(()),
            Ok(_) => return Err(io::Error::other("short atomic write")),
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// preadv2(2) of `buf` at `pos` with `flags` until `buf` is full, retrying `EINTR` and short
/// reads; end of file before that is `ErrorKind::UnexpectedEof`.
#[inline]
pub(crate) fn pread_exact_flags<Fd: AsFd>(
    fd: Fd,
    mut buf: &mut [u8],
    mut pos: u64,
    flags: rustix::io::ReadWriteFlags,
) -> io::Result<()> {
    let fd = fd.as_fd();
    while !buf.is_empty() {
        match rustix::io::preadv2(fd, &mut [io::IoSliceMut::new(buf)], pos, flags) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                pos += n as u64;
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// pwritev2(2) of `buf` at `pos` with `flags` until all of it is written, retrying `EINTR`
/// and short writes; a call that writes nothing is `ErrorKind::WriteZero`.
#[inline]
pub(crate) fn pwrite_all_flags<Fd: AsFd>(
    fd: Fd,
    mut buf: &[u8],
    mut pos: u64,
    flags: rustix::io::ReadWriteFlags,
) -> io::Result<()> {
    let fd = fd.as_fd();
    while !buf.is_empty() {
        match rustix::io::pwritev2(fd, &[io::IoSlice::new(buf)], pos, flags) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                buf = &buf[n..];
                pos += n as u64;
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// close(2) of `fd`, reporting its error (see the module documentation); never retried.
pub(crate) fn close_checked(fd: OwnedFd) -> rustix::io::Result<()> {
    let raw = fd.into_raw_fd();
    // SAFETY: `raw` comes from an `OwnedFd` we consumed, so it is open, owned by nobody
    // else, and closed exactly once, here.
    unsafe { rustix::io::try_close(raw) }
}

/// A zeroed heap buffer whose start is aligned to a chosen power of two (O_DIRECT wants
/// buffers, offsets and lengths aligned to the device's logical block size), allocated once.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer is uniquely owned heap memory; only its owner touches it.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// `len` zero bytes (at least 1) starting at a multiple of `align` bytes; `align` must be
    /// a power of two.
    pub fn zeroed(len: usize, align: usize) -> Result<AlignedBuf, LayoutError> {
        let layout = Layout::from_size_align(len.max(1), align)?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        match NonNull::new(ptr) {
            Some(ptr) => Ok(AlignedBuf { ptr, layout }),
            None => std::alloc::handle_alloc_error(layout),
        }
    }

    /// The whole buffer.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr points to layout.size() initialised (zeroed, then written) bytes owned
        // by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    /// The whole buffer, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with exactly this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// `getdents64(2)` of `fd` into `buf`: bytes filled, 0 at the end of the directory; retries
/// `EINTR`. The caller walks the `struct linux_dirent64` records itself, so a directory can be
/// read in place, with no allocation per entry (rustix's `RawDir` borrows its buffer for the
/// directory's whole life, which a walker that keeps one buffer per tree level cannot give).
pub(crate) fn getdents64(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the whole call and `fd`
        // is an open descriptor borrowed for it; the kernel writes at most that many bytes.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast::<libc::c_void>(),
                buf.len(),
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
