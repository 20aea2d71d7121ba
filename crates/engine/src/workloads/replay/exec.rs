//! The timed replay: one OS thread per recorded thread, each issuing its ops in program order,
//! waiting for its dependencies on the other threads' progress counters (spinning, then
//! yielding), and, in `timed` mode, sleeping the recorded gap before each op.
//!
//! Hot-loop rules kept: every path is a `CString` made before the start, each thread's buffer
//! and counters are allocated before it; an op is one system call through libc (no
//! allocation, errno read back), its outcome compared with the recorded one. Handles are a
//! table of atomic descriptors shared by the threads; an op on a handle whose open failed in
//! the replay is not issued: it counts as skipped and divergent.

use super::plan::{Expect, Op, Plan, ANY_ERROR, NONE};
use crate::trace::Kind;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Kinds, by index ([`Kind::ALL`]).
pub const KINDS: usize = Kind::ALL.len();

/// What one thread did.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// System calls issued per kind (closes of a handle's non-last descriptor and mmap/msync
    /// are not issued).
    pub issued: [u64; KINDS],
    /// Ops whose outcome differed from the recording, per kind.
    pub divergent: [u64; KINDS],
    /// Ops not issued because their handle is not open in the replay.
    pub skipped: u64,
    /// Bytes read and written.
    pub read: u64,
    /// Bytes written.
    pub written: u64,
    /// The first divergent op of the thread: its recorded call's index in the trace and what
    /// the replay got (`Err(0)`: not issued).
    pub first: Option<(u32, Result<i64, i32>)>,
}

impl Tally {
    /// Adds `o` into `self`.
    pub fn add(&mut self, o: &Tally) {
        for i in 0..KINDS {
            self.issued[i] += o.issued[i];
            self.divergent[i] += o.divergent[i];
        }
        self.skipped += o.skipped;
        self.read += o.read;
        self.written += o.written;
        self.first = match (self.first, o.first) {
            (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
    }
}

/// Index of `k` in [`Kind::ALL`].
pub fn kind_index(k: Kind) -> usize {
    Kind::ALL.iter().position(|x| *x == k).unwrap_or(0)
}

/// Shared state of one replay.
pub struct Shared<'a> {
    /// The compiled trace.
    pub plan: &'a Plan,
    /// The replay's root directory.
    pub root: RawFd,
    /// Descriptor of each handle, -1 when not open.
    pub fds: Vec<AtomicI32>,
    /// Ops finished per thread ([`u64::MAX`] once a thread stopped early).
    pub done: Vec<AtomicU64>,
    /// Sleep the recorded gaps.
    pub timed: bool,
    /// The run's interrupt flag.
    pub interrupt: &'a AtomicBool,
    /// Data written (random bytes), at least [`Plan::buffer`] long.
    pub data: &'a [u8],
}

/// `Ok(value)` or `Err(errno)` of a libc call returning -1 on error.
fn ret(r: i64) -> Result<i64, i32> {
    if r < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
    } else {
        Ok(r)
    }
}

impl Shared<'_> {
    /// Runs thread `t`'s ops `range` (its ops in one piece of a phase, [`super::phases`]);
    /// returns its tally, or `None` when interrupted.
    pub fn thread(&self, t: usize, range: std::ops::Range<usize>, buf: &mut [u8]) -> Option<Tally> {
        let mut tally = Tally::default();
        let first = range.start;
        let ops = &self.plan.threads[t][range];
        let mut prev_end = Instant::now();
        for (i, op) in ops.iter().enumerate() {
            let waited = match self.wait(op) {
                Some(w) if !self.interrupt.load(Ordering::Relaxed) => w,
                _ => {
                    self.done[t].store(u64::MAX, Ordering::Release);
                    return None;
                }
            };
            if self.timed && op.gap_ns > 0 {
                // The think time runs from the later of the previous call's end and the
                // moment the dependencies were met ([`Op::gap_ns`]).
                let from = if waited { Instant::now() } else { prev_end };
                sleep_until(from + Duration::from_nanos(op.gap_ns));
            }
            let k = kind_index(op.kind);
            match self.issue(op, buf) {
                Some(got) => {
                    if op.issues() {
                        tally.issued[k] += 1;
                    }
                    if let Ok(n) = got {
                        match op.kind {
                            Kind::Read | Kind::Pread => tally.read += n as u64,
                            Kind::Write | Kind::Pwrite => tally.written += n as u64,
                            Kind::CopyFileRange => {
                                (tally.read, tally.written) = (tally.read + n as u64, tally.written + n as u64)
                            }
                            _ => {}
                        }
                    }
                    if diverges(op, got) {
                        tally.divergent[k] += 1;
                        tally.first = tally.first.or(Some((op.call, got)));
                    }
                }
                None => {
                    tally.skipped += 1;
                    tally.divergent[k] += 1;
                    tally.first = tally.first.or(Some((op.call, Err(0))));
                }
            }
            prev_end = Instant::now();
            self.done[t].store((first + i) as u64 + 1, Ordering::Release);
        }
        Some(tally)
    }

    /// Waits until every dependency of `op` is done; `false` when interrupted.
    /// Waits until `op`'s dependencies are done: `Some(whether it had to wait)`, `None` when
    /// interrupted.
    fn wait(&self, op: &Op) -> Option<bool> {
        let (from, n) = op.deps;
        let mut waited = false;
        for &(ot, os) in &self.plan.deps[from as usize..(from + n) as usize] {
            let mut spins = 0u32;
            while self.done[ot as usize].load(Ordering::Acquire) <= u64::from(os) {
                if self.interrupt.load(Ordering::Relaxed) {
                    return None;
                }
                waited = true;
                spins += 1;
                if spins < 200 {
                    std::hint::spin_loop();
                } else if spins < 2_000 {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(Duration::from_micros(20));
                }
            }
        }
        Some(waited)
    }

    fn path(&self, i: u32) -> *const libc::c_char {
        self.plan.paths[i as usize].as_ptr()
    }

    fn fd(&self, h: u32) -> Option<RawFd> {
        if h == NONE {
            return None;
        }
        let fd = self.fds[h as usize].load(Ordering::Acquire);
        (fd >= 0).then_some(fd)
    }

    /// Issues `op`: `None` when its handle is not open, else the call's outcome.
    fn issue(&self, op: &Op, buf: &mut [u8]) -> Option<Result<i64, i32>> {
        let len = op.len as usize;
        // SAFETY (every call below): paths are NUL-terminated `CString`s of the plan, buffers
        // are this thread's and at least `len` long (`Plan::buffer`, `MAX_IO`), descriptors
        // are ours; no pointer outlives the call.
        let r = unsafe {
            match op.kind {
                Kind::Open => {
                    let r = ret(libc::openat(self.root, self.path(op.path), op.flags, op.mode) as i64);
                    if let (Ok(fd), true) = (r, op.handle != NONE) {
                        let old = self.fds[op.handle as usize].swap(fd as i32, Ordering::AcqRel);
                        if old >= 0 {
                            libc::close(old);
                        }
                    }
                    return Some(r.map(|_| 0));
                }
                Kind::Close if !op.last => return Some(Ok(0)),
                Kind::Mmap | Kind::Msync => return Some(op_expected(op)),
                Kind::Close => {
                    let fd = self.fds[op.handle as usize].swap(-1, Ordering::AcqRel);
                    if fd < 0 {
                        return None;
                    }
                    ret(libc::close(fd) as i64)
                }
                Kind::Read => ret(libc::read(self.fd(op.handle)?, buf.as_mut_ptr().cast(), len) as i64),
                Kind::Pread => ret(libc::pread(self.fd(op.handle)?, buf.as_mut_ptr().cast(), len, op.offset) as i64),
                Kind::Write => ret(libc::write(self.fd(op.handle)?, self.data.as_ptr().cast(), len) as i64),
                Kind::Pwrite => {
                    ret(libc::pwrite(self.fd(op.handle)?, self.data.as_ptr().cast(), len, op.offset) as i64)
                }
                Kind::Fsync => ret(libc::fsync(self.fd(op.handle)?) as i64),
                Kind::Fdatasync => ret(libc::fdatasync(self.fd(op.handle)?) as i64),
                Kind::SyncFileRange => ret(libc::sync_file_range(
                    self.fd(op.handle)?,
                    op.offset,
                    op.len as i64,
                    libc::SYNC_FILE_RANGE_WRITE,
                ) as i64),
                Kind::Fstat => {
                    let mut st: libc::stat = std::mem::zeroed();
                    ret(libc::fstat(self.fd(op.handle)?, &mut st) as i64)
                }
                Kind::Getdents => ret(libc::syscall(
                    libc::SYS_getdents64,
                    self.fd(op.handle)?,
                    buf.as_mut_ptr(),
                    len.min(buf.len()),
                )),
                Kind::Ftruncate => ret(libc::ftruncate(self.fd(op.handle)?, op.len as i64) as i64),
                Kind::Fallocate => ret(libc::fallocate(self.fd(op.handle)?, op.flags, op.offset, op.len as i64) as i64),
                Kind::Lseek => ret(libc::lseek(self.fd(op.handle)?, op.offset, op.flags)),
                Kind::CopyFileRange => ret(libc::copy_file_range(
                    self.fd(op.handle)?,
                    std::ptr::null_mut(),
                    self.fd(op.handle2)?,
                    std::ptr::null_mut(),
                    len,
                    0,
                ) as i64),
                Kind::Stat if op.access => ret(libc::faccessat(self.root, self.path(op.path), op.flags, 0) as i64),
                Kind::Stat => {
                    let mut st: libc::stat = std::mem::zeroed();
                    ret(libc::fstatat(self.root, self.path(op.path), &mut st, op.flags) as i64)
                }
                Kind::Truncate => {
                    let fd = libc::openat(self.root, self.path(op.path), libc::O_WRONLY | libc::O_CLOEXEC);
                    if fd < 0 {
                        ret(-1)
                    } else {
                        let r = ret(libc::ftruncate(fd, op.len as i64) as i64);
                        libc::close(fd);
                        r
                    }
                }
                Kind::Rename => ret(libc::syscall(
                    libc::SYS_renameat2,
                    self.root,
                    self.path(op.path),
                    self.root,
                    self.path(op.path2),
                    op.flags,
                )),
                Kind::Unlink => ret(libc::unlinkat(self.root, self.path(op.path), 0) as i64),
                Kind::Rmdir => ret(libc::unlinkat(self.root, self.path(op.path), libc::AT_REMOVEDIR) as i64),
                Kind::Mkdir => ret(libc::mkdirat(self.root, self.path(op.path), op.mode) as i64),
                Kind::Symlink => ret(libc::symlinkat(self.path(op.path2), self.root, self.path(op.path)) as i64),
                Kind::Link => {
                    ret(libc::linkat(self.root, self.path(op.path), self.root, self.path(op.path2), op.flags) as i64)
                }
            }
        };
        Some(r)
    }
}

/// What a counted-only op "returns": its recording.
fn op_expected(op: &Op) -> Result<i64, i32> {
    match op.expect {
        Expect::Ok(v) => Ok(v),
        Expect::Err(e) => Err(e),
        Expect::Unknown => Ok(0),
    }
}

/// Whether `got` differs from what `op` recorded: success against failure, another errno, or
/// another value where the value is the same on every filesystem (bytes read and written,
/// positions); getdents only as "more entries" against "end", stat and the rest as success.
pub fn diverges(op: &Op, got: Result<i64, i32>) -> bool {
    match (op.expect, got) {
        (Expect::Unknown, _) => false,
        (Expect::Err(e), Err(g)) => e != ANY_ERROR && e != g,
        (Expect::Err(_), Ok(_)) | (Expect::Ok(_), Err(_)) => true,
        (Expect::Ok(v), Ok(g)) => match op.kind {
            Kind::Read | Kind::Pread | Kind::Write | Kind::Pwrite | Kind::Lseek | Kind::CopyFileRange => v != g,
            Kind::Getdents => (v == 0) != (g == 0),
            _ => false,
        },
    }
}

/// Sleeps (then spins the last 50 µs) until `t`.
fn sleep_until(t: Instant) {
    loop {
        let now = Instant::now();
        if now >= t {
            return;
        }
        let left = t - now;
        if left > Duration::from_micros(50) {
            std::thread::sleep(left - Duration::from_micros(50));
        } else {
            std::hint::spin_loop();
        }
    }
}
