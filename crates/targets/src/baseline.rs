//! The raw-device baseline: how fast the block device under the filesystems is by itself, so
//! the report can flag a throughput above it as served from a cache, not the disk
//! (doc/architecture.md, "Rules that keep the numbers honest": the raw device is measured once
//! per session).
//!
//! What [`measure`] does, once per session before the first case, on the device
//! [`crate::provision::Provisioner::raw_device`] hands out (a loop device over a fresh image in
//! the scratch folder, attached exactly like the filesystems' images, or the confirmed
//! `--device`), in [`REQUEST`]-sized requests over its first `bytes`:
//! 1. a sequential O_DIRECT write with [`DEPTH`] requests in flight, followed by
//!    fdatasync(2); the clock runs from the first pwrite(2) to the end of the fdatasync, so the
//!    rate is what reached stable storage (for a loop device with direct I/O the flush becomes
//!    an fsync of the backing file);
//! 2. sequential reads of the same bytes, O_DIRECT with [`DEPTH`] requests in flight and
//!    buffered with the kernel's readahead after the device's page cache was dropped
//!    ([`Method::Buffered`]), three times each, alternating ([`PASSES`]); each is timed from the first
//!    to the last pread(2);
//! 3. after each pair of sequential reads, a random-read pass ([`Dir::RandomRead`]): O_DIRECT
//!    reads of [`RANDOM_BLOCK`] bytes at uniformly random [`RANDOM_BLOCK`]-aligned offsets of
//!    the bytes written, [`DEPTH`] in flight, for [`RANDOM_TIME`] (three passes, 1.5 s in all);
//!    timed from the start to the completion of the last request, every completed request
//!    counted. Its rate in operations per second ([`RawRates::random_read_iops`]) is the
//!    ceiling of a random-read rate: a filesystem's random read that misses its caches costs
//!    at least one such request, so reads per second above it were served from a cache (up to
//!    [`DEPTH`] in flight: a workload keeping more in flight may get more from a device that
//!    scales further, which the report's tolerance allows for in part).
//!
//! The device's rate in each direction is its fastest pass ([`RawRates::best`]): the baseline
//! is an upper bound of what the device delivers without a cache in front of it, which is what
//! the report's cache-bound flag needs (the random-read rate is the fastest of its passes too).
//! The one O_DIRECT stream measured before (fio's
//! `rw=read, direct=1, bs=1M, ioengine=psync, iodepth=1`) is latency-bound: on this machine's
//! virtio disk it read at 140–240 MiB/s while 16 requests in flight read at 600–1300 MiB/s, and
//! a filesystem's buffered sequential read through readahead (several requests in flight) got
//! 1.2–2.5 GiB/s from the same loop set-up inside a 64 MiB memory cgroup, so reads that reached
//! the disk were flagged as cache-bound. Taking the fastest of several passes also keeps one
//! burst of other load on a shared machine from lowering the ceiling. Every method's faster
//! pass is stored (`raw_seq_write_direct_qd16`, `raw_seq_read_direct_qd16`,
//! `raw_seq_read_buffered`), after the two rates the report uses, and then the random-read
//! rate (`raw_rand_read_4k`, ops/s).
//!
//! The random-read pass is time-bound rather than a fixed count because a device's random-read
//! rate spans three orders of magnitude (a disk's hundreds, a virtual disk's tens of
//! thousands, an NVMe drive's hundreds of thousands per second); its workers never read the
//! clock: the measuring thread sleeps for [`RANDOM_TIME`] and raises a stop flag that they check
//! before every request.
//!
//! Invariants:
//! - Only `[0, bytes)` of the given device is written; which device that may be is the
//!   provisioner's decision (an image fsbench made, or a device the user confirmed with
//!   `--wipe`). Block devices are opened with O_EXCL, so the kernel itself refuses one that is
//!   mounted or held by anyone else.
//! - The timed loops allocate nothing and make exactly one pwrite/pread per request (plus
//!   retries of EINTR and short transfers). The buffers ([`DEPTH`] of them, [`REQUEST`] bytes
//!   each, aligned to [`ALIGN`]; a random read uses the first [`RANDOM_BLOCK`] bytes of one)
//!   are allocated and filled before any clock starts; the threads of a deep pass each own one
//!   buffer and share nothing but the file descriptor (and the random pass's stop flag). Its
//!   content is pseudo-random
//!   (no layer can compress it or skip zeros), and each request stamps its index into every
//!   4 KiB block so no two blocks are identical (no layer can deduplicate them).
//! - The buffered pass leaves no page cache behind (`POSIX_FADV_DONTNEED` after it) and the
//!   descriptor in O_DIRECT mode again.
//! - Random reads stay inside `[0, bytes)` (the bytes just written) and are never written.
//! - The interrupt flag is polled before every request, so Ctrl-C stops within one request and
//!   the caller's guard detaches and deletes what was made for the measurement.
//! - Errors are [`BaselineError`] values, never panics; the caller turns them into a warning,
//!   never a failed run.
//!
//! References: open(2) (O_DIRECT alignment: "the logical block size of the underlying storage
//! (typically 512 bytes)", and O_EXCL without O_CREAT on block devices), pwrite(2), pread(2),
//! fdatasync(2), posix_fadvise(2), fcntl(2) `F_SETFL` (O_DIRECT may be changed), losetup(8)
//! `--direct-io`, block/readahead (`read_ahead_kb`); fio(1) `direct`, `bs`, `rw`, `iodepth`.

use crate::engine::sysio::AlignedBuf;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Bytes per request: 1 MiB (fio's `bs=1M`), large enough that per-request overhead is small
/// and a multiple of every logical block size.
pub const REQUEST: usize = 1 << 20;

/// Alignment of the buffer in bytes: 4096 covers logical block sizes of 512 and 4096 bytes,
/// which O_DIRECT requires buffers, offsets and lengths to be multiples of.
pub const ALIGN: usize = 4096;

/// Bytes per request of the random-read pass: 4 KiB, the page size and the block size of every
/// filesystem measured here, so one request is the least a cache miss of a read costs.
pub const RANDOM_BLOCK: usize = 4096;

/// Length of one random-read pass: 0.5 s (three passes, 1.5 s of the baseline), long enough for
/// thousands of requests on a disk that does a few hundred per second.
pub const RANDOM_TIME: Duration = Duration::from_millis(500);

/// Bytes measured when there is room: 512 MiB, enough that a disk's own write cache (tens to a
/// few hundred MiB) cannot hold it all, small enough to take about a second on an SSD.
pub const DEFAULT_BYTES: u64 = 512 << 20;

/// Why the baseline could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// The device cannot hold a single request.
    #[error("{device} offers {bytes} bytes, less than one {REQUEST}-byte request")]
    TooSmall {
        /// The device.
        device: String,
        /// Bytes it offered.
        bytes: u64,
    },
    /// open(2) failed: EBUSY when someone holds the device, EINVAL when it refuses O_DIRECT.
    #[error("open {device} for O_DIRECT I/O: {source}")]
    Open {
        /// The device.
        device: String,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// A request failed.
    #[error("{op} of {device} at byte {offset}: {source}")]
    Io {
        /// `pwrite` or `pread`.
        op: &'static str,
        /// The device.
        device: String,
        /// Offset of the failed request in bytes.
        offset: u64,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// A request transferred nothing before its end (the device ended early).
    #[error("{op} of {device} at byte {offset}: the device ended after {done} bytes of the request")]
    Short {
        /// `pwrite` or `pread`.
        op: &'static str,
        /// The device.
        device: String,
        /// Offset of the request in bytes.
        offset: u64,
        /// Bytes of the request that were transferred.
        done: usize,
    },
    /// fdatasync(2) failed: the written data may not be on stable storage.
    #[error("fdatasync {device}: {source}")]
    Sync {
        /// The device.
        device: String,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// SIGINT or SIGTERM arrived.
    #[error("interrupted")]
    Interrupted,
}

/// One timed pass over the device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pass {
    /// Bytes transferred.
    pub bytes: u64,
    /// Length of the timed region in seconds (for the write, fdatasync included).
    pub seconds: f64,
}

impl Pass {
    /// Throughput in MiB/s (1 MiB = 1,048,576 bytes); 0 when no time was measured.
    pub fn mib_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / (1u64 << 20) as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// Requests of `request` bytes per second; 0 when no time was measured or `request` is 0.
    pub fn ops_per_sec(&self, request: usize) -> f64 {
        if self.seconds > 0.0 && request > 0 {
            self.bytes as f64 / request as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// How one pass moves its bytes; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// [`DEPTH`] O_DIRECT requests in flight ([`DEPTH`] threads, each on every [`DEPTH`]-th
    /// request).
    DirectDeep,
    /// Buffered reads of one stream, the device's page cache dropped first, so the kernel's
    /// readahead (the device's `read_ahead_kb`, doubled by `POSIX_FADV_SEQUENTIAL`) keeps
    /// requests in flight as it does for a filesystem's sequential read.
    Buffered,
}

impl Method {
    /// How the method is named in a stored value's name (`raw_seq_read_` + this).
    pub fn suffix(self) -> &'static str {
        match self {
            Method::DirectDeep => "direct_qd16",
            Method::Buffered => "buffered",
        }
    }
}

/// Whether a pass writes or reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Sequential write, fdatasync included.
    Write,
    /// Sequential read of the bytes just written.
    Read,
    /// [`RANDOM_BLOCK`]-byte reads at uniformly random aligned offsets of the bytes just
    /// written, for [`RANDOM_TIME`] (only [`Method::DirectDeep`]).
    RandomRead,
}

/// Every pass of a baseline, in the order measured.
#[derive(Clone, Debug, PartialEq)]
pub struct RawRates {
    /// `(direction, method, pass)` of each pass.
    pub passes: Vec<(Dir, Method, Pass)>,
}

impl RawRates {
    /// The fastest pass of `dir`: the device's rate in that direction (the first one of equal
    /// rates). A pass of zero seconds never wins.
    pub fn best(&self, dir: Dir) -> Pass {
        self.fastest(|d, _| d == dir)
    }

    /// The fastest pass of `dir` by `method`.
    pub fn best_of(&self, dir: Dir, method: Method) -> Pass {
        self.fastest(|d, m| d == dir && m == method)
    }

    fn fastest(&self, keep: impl Fn(Dir, Method) -> bool) -> Pass {
        self.passes
            .iter()
            .filter(|(d, m, _)| keep(*d, *m))
            .map(|(_, _, p)| *p)
            .fold(Pass { bytes: 0, seconds: 0.0 }, |best, p| {
                if p.mib_per_sec() > best.mib_per_sec() {
                    p
                } else {
                    best
                }
            })
    }

    /// The fastest sequential write (fdatasync included).
    pub fn write(&self) -> Pass {
        self.best(Dir::Write)
    }

    /// The fastest sequential read.
    pub fn read(&self) -> Pass {
        self.best(Dir::Read)
    }

    /// The fastest random-read pass.
    pub fn random_read(&self) -> Pass {
        self.best(Dir::RandomRead)
    }

    /// The device's random-read rate: [`RANDOM_BLOCK`]-byte reads per second of the fastest
    /// random-read pass; 0 when none was measured.
    pub fn random_read_iops(&self) -> f64 {
        self.random_read().ops_per_sec(RANDOM_BLOCK)
    }
}

/// O_DIRECT requests in flight in a [`Method::DirectDeep`] pass: 16 (fio `iodepth=16`), more
/// than the readahead window of a filesystem's sequential read keeps in flight at once
/// (2.5 MiB on this machine's loop devices = 2.5 requests of [`REQUEST`] bytes).
pub const DEPTH: usize = 16;

/// The passes of [`measure`], in order: one write, then the two sequential read methods and
/// the random read three times, alternating, so that a burst of other load on a shared machine
/// during one pass does not set the rate.
pub const PASSES: [(Dir, Method); 10] = [
    (Dir::Write, Method::DirectDeep),
    (Dir::Read, Method::DirectDeep),
    (Dir::Read, Method::Buffered),
    (Dir::RandomRead, Method::DirectDeep),
    (Dir::Read, Method::DirectDeep),
    (Dir::Read, Method::Buffered),
    (Dir::RandomRead, Method::DirectDeep),
    (Dir::Read, Method::DirectDeep),
    (Dir::Read, Method::Buffered),
    (Dir::RandomRead, Method::DirectDeep),
];

/// Measures the sequential write and then the sequential and random read rates of the first
/// `bytes` of `device` (rounded down to whole [`REQUEST`]s), overwriting them, by every method
/// of the module docs in turn; the fastest pass of each direction is the device's rate. Polls
/// `interrupt` before every request.
pub fn measure(device: &Path, bytes: u64, interrupt: &AtomicBool) -> Result<RawRates, BaselineError> {
    let name = || device.display().to_string();
    let requests = bytes / REQUEST as u64;
    if requests == 0 {
        return Err(BaselineError::TooSmall { device: name(), bytes });
    }
    let fd = open_direct(device).map_err(|source| BaselineError::Open { device: name(), source })?;
    // Every buffer is allocated and filled before any clock starts.
    let mut bufs: Vec<AlignedBuf> = (0..DEPTH).map(|_| request_buf()).collect();
    for b in &mut bufs {
        fill_pseudo_random(b.as_mut_slice(), 0x9e37_79b9_7f4a_7c15);
    }
    let total = requests * REQUEST as u64;
    // Progress only between the timed passes, never inside them.
    let mut step = crate::progress::step(
        format!("raw-device baseline ({})", crate::units::Bytes(bytes).human()),
        Some(PASSES.len() as u64),
        "passes",
    );
    let mut passes = Vec::with_capacity(PASSES.len());
    for (dir, method) in PASSES {
        let pass = match (dir, method) {
            (Dir::RandomRead, _) => random_read(&fd, &mut bufs, total, interrupt, device)?,
            (_, Method::DirectDeep) => Pass {
                bytes: total,
                seconds: direct_pass(&fd, dir, &mut bufs, requests, interrupt, device)?,
            },
            (_, Method::Buffered) => Pass {
                bytes: total,
                seconds: buffered_read(&fd, &mut bufs[0], requests, interrupt, device)?,
            },
        };
        passes.push((dir, method, pass));
        step.add(1);
    }
    step.finish();
    Ok(RawRates { passes })
}

/// One O_DIRECT pass over `requests` requests with `bufs.len()` of them in flight: thread `k`
/// does requests `k, k + n, k + 2n, …` with buffer `k`. A write ends with fdatasync(2), inside
/// the timed region. Returns the seconds from the start of the first request to the end.
fn direct_pass(
    fd: &OwnedFd,
    dir: Dir,
    bufs: &mut [AlignedBuf],
    requests: u64,
    interrupt: &AtomicBool,
    device: &Path,
) -> Result<f64, BaselineError> {
    let n = bufs.len() as u64;
    let start_line = Barrier::new(bufs.len() + 1);
    let (start, result) = std::thread::scope(|s| {
        let workers: Vec<_> = bufs
            .iter_mut()
            .enumerate()
            .map(|(k, buf)| {
                let start_line = &start_line;
                s.spawn(move || -> Result<(), Option<Failure>> {
                    start_line.wait();
                    let mut i = k as u64;
                    while i < requests {
                        if interrupt.load(Ordering::Relaxed) {
                            return Err(None);
                        }
                        let offset = i * REQUEST as u64;
                        match dir {
                            Dir::Write => {
                                stamp(buf.as_mut_slice(), i);
                                transfer(Op::Write(fd, buf.as_slice()), offset).map_err(Some)?
                            }
                            Dir::Read | Dir::RandomRead => {
                                transfer(Op::Read(fd, buf.as_mut_slice()), offset).map_err(Some)?
                            }
                        }
                        i += n;
                    }
                    Ok(())
                })
            })
            .collect();
        start_line.wait();
        let start = Instant::now();
        let mut result = Ok(());
        for w in workers {
            let r = w.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            if result.is_ok() {
                result = r;
            }
        }
        (start, result)
    });
    match result {
        Ok(()) => {}
        Err(None) => return Err(BaselineError::Interrupted),
        Err(Some(f)) => return Err(f.at(device)),
    }
    if dir == Dir::Write {
        rustix::fs::fdatasync(fd).map_err(|e| BaselineError::Sync {
            device: device.display().to_string(),
            source: e.into(),
        })?;
    }
    Ok(start.elapsed().as_secs_f64())
}

/// One random-read pass over the first `bytes` of the device (a multiple of [`RANDOM_BLOCK`]):
/// thread `k` reads [`RANDOM_BLOCK`] bytes into the start of buffer `k` at offsets drawn
/// uniformly from the `bytes / RANDOM_BLOCK` aligned blocks by its own xorshift64 generator,
/// until the stop flag this thread raises after [`RANDOM_TIME`] (or an interrupt). The pass is
/// timed from the start line to the return of the last worker, and its bytes are those of
/// every completed request.
fn random_read(
    fd: &OwnedFd,
    bufs: &mut [AlignedBuf],
    bytes: u64,
    interrupt: &AtomicBool,
    device: &Path,
) -> Result<Pass, BaselineError> {
    let blocks = (bytes / RANDOM_BLOCK as u64).max(1);
    let stop = AtomicBool::new(false);
    let start_line = Barrier::new(bufs.len() + 1);
    let (seconds, result) = std::thread::scope(|s| {
        let workers: Vec<_> = bufs
            .iter_mut()
            .enumerate()
            .map(|(k, buf)| {
                let (start_line, stop) = (&start_line, &stop);
                s.spawn(move || -> Result<u64, Option<Failure>> {
                    let block = &mut buf.as_mut_slice()[..RANDOM_BLOCK];
                    // A distinct, non-zero seed per worker.
                    let mut x = (k as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                    let mut ops = 0u64;
                    start_line.wait();
                    while !stop.load(Ordering::Relaxed) {
                        if interrupt.load(Ordering::Relaxed) {
                            return Err(None);
                        }
                        let offset = next_offset(&mut x, blocks);
                        transfer(Op::Read(fd, &mut block[..]), offset).map_err(Some)?;
                        ops += 1;
                    }
                    Ok(ops)
                })
            })
            .collect();
        start_line.wait();
        let start = Instant::now();
        // Sleep in short slices so that an interrupt ends the pass at once.
        while !interrupt.load(Ordering::Relaxed) {
            let Some(left) = RANDOM_TIME.checked_sub(start.elapsed()).filter(|d| !d.is_zero()) else {
                break;
            };
            std::thread::sleep(left.min(Duration::from_millis(10)));
        }
        stop.store(true, Ordering::Relaxed);
        let mut result = Ok(0u64);
        for w in workers {
            let r = w.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            result = match (result, r) {
                (Ok(total), Ok(n)) => Ok(total + n),
                (Err(e), _) | (Ok(_), Err(e)) => Err(e),
            };
        }
        (start.elapsed().as_secs_f64(), result)
    });
    match result {
        // Workers that saw the stop flag first return normally: the interrupt still wins.
        Ok(_) if interrupt.load(Ordering::Relaxed) => Err(BaselineError::Interrupted),
        Ok(ops) => Ok(Pass {
            bytes: ops * RANDOM_BLOCK as u64,
            seconds,
        }),
        Err(None) => Err(BaselineError::Interrupted),
        Err(Some(f)) => Err(f.at(device)),
    }
}

/// One buffered sequential read of `requests` requests through `fd` (O_DIRECT switched off
/// for the pass with fcntl(2) `F_SETFL`, and back on after): the device's cached pages are
/// dropped first (`POSIX_FADV_DONTNEED`; the O_DIRECT passes before left none, but a reader
/// elsewhere might have), readahead is asked for with `POSIX_FADV_SEQUENTIAL`, and the pages
/// read are dropped again afterwards, outside the timed region. Returns the seconds from the
/// first to the last pread(2).
fn buffered_read(
    fd: &OwnedFd,
    buf: &mut AlignedBuf,
    requests: u64,
    interrupt: &AtomicBool,
    device: &Path,
) -> Result<f64, BaselineError> {
    let flags = rustix::fs::fcntl_getfl(fd).map_err(|e| setup_err(device, "fcntl F_GETFL", e))?;
    rustix::fs::fcntl_setfl(fd, flags - OFlags::DIRECT).map_err(|e| setup_err(device, "fcntl F_SETFL", e))?;
    let len = requests * REQUEST as u64;
    let advise = |advice| rustix::fs::fadvise(fd, 0, len, advice).map_err(|e| setup_err(device, "posix_fadvise", e));
    let timed = advise(rustix::fs::Advice::DontNeed)
        .and_then(|()| advise(rustix::fs::Advice::Sequential))
        .and_then(|()| {
            let start = Instant::now();
            for i in 0..requests {
                if interrupt.load(Ordering::Relaxed) {
                    return Err(BaselineError::Interrupted);
                }
                transfer(Op::Read(fd, buf.as_mut_slice()), i * REQUEST as u64).map_err(|e| e.at(device))?;
            }
            Ok(start.elapsed().as_secs_f64())
        });
    // Give the memory back and restore O_DIRECT whatever happened; the first error wins.
    let after = advise(rustix::fs::Advice::DontNeed)
        .and_then(|()| rustix::fs::fcntl_setfl(fd, flags).map_err(|e| setup_err(device, "fcntl F_SETFL", e)));
    let seconds = timed?;
    after?;
    Ok(seconds)
}

/// A failed set-up call of the buffered pass as a [`BaselineError::Io`] at offset 0.
fn setup_err(device: &Path, op: &'static str, e: Errno) -> BaselineError {
    BaselineError::Io {
        op,
        device: device.display().to_string(),
        offset: 0,
        source: e.into(),
    }
}

/// Opens `device` read-write with O_DIRECT (and O_EXCL for a block device: the kernel then
/// refuses it while it is mounted or claimed by anyone else).
fn open_direct(device: &Path) -> std::io::Result<OwnedFd> {
    let mut flags = OFlags::RDWR | OFlags::DIRECT | OFlags::CLOEXEC;
    if std::fs::metadata(device)?.file_type().is_block_device() {
        flags |= OFlags::EXCL;
    }
    Ok(rustix::fs::open(device, flags, Mode::empty())?)
}

/// One request: write all of a buffer, or read into all of it.
enum Op<'a> {
    Write(&'a OwnedFd, &'a [u8]),
    Read(&'a OwnedFd, &'a mut [u8]),
}

/// A failed request, before the device name is attached (kept allocation-free).
enum Failure {
    Os(&'static str, u64, Errno),
    Short(&'static str, u64, usize),
}

impl Failure {
    fn at(self, device: &Path) -> BaselineError {
        let device = device.display().to_string();
        match self {
            Failure::Os(op, offset, e) => BaselineError::Io {
                op,
                device,
                offset,
                source: e.into(),
            },
            Failure::Short(op, offset, done) => BaselineError::Short {
                op,
                device,
                offset,
                done,
            },
        }
    }
}

/// Performs one request at `offset` in full, retrying EINTR and continuing short transfers; a
/// transfer of zero bytes before the end is [`Failure::Short`].
#[inline]
fn transfer(op: Op<'_>, offset: u64) -> Result<(), Failure> {
    let mut done = 0;
    match op {
        Op::Write(fd, buf) => {
            while done < buf.len() {
                match rustix::io::pwrite(fd, &buf[done..], offset + done as u64) {
                    Ok(0) => return Err(Failure::Short("pwrite", offset, done)),
                    Ok(n) => done += n,
                    Err(Errno::INTR) => {}
                    Err(e) => return Err(Failure::Os("pwrite", offset, e)),
                }
            }
        }
        Op::Read(fd, buf) => {
            while done < buf.len() {
                match rustix::io::pread(fd, &mut buf[done..], offset + done as u64) {
                    Ok(0) => return Err(Failure::Short("pread", offset, done)),
                    Ok(n) => done += n,
                    Err(Errno::INTR) => {}
                    Err(e) => return Err(Failure::Os("pread", offset, e)),
                }
            }
        }
    }
    Ok(())
}

/// The one [`REQUEST`]-byte buffer of a measurement, aligned to [`ALIGN`], allocated once.
fn request_buf() -> AlignedBuf {
    match AlignedBuf::zeroed(REQUEST, ALIGN) {
        Ok(b) => b,
        Err(_) => unreachable!("REQUEST and ALIGN are constants that make a valid layout"),
    }
}

/// The next state of a xorshift64 generator (Marsaglia's 13, 7, 17); `x` must be non-zero.
#[inline]
fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

/// The next random-read offset in bytes: one of `blocks` [`RANDOM_BLOCK`]-aligned blocks, drawn
/// uniformly (bias below `blocks / 2^64`) by advancing the generator state `x` (non-zero).
#[inline]
fn next_offset(x: &mut u64, blocks: u64) -> u64 {
    *x = xorshift(*x);
    (*x % blocks) * RANDOM_BLOCK as u64
}

/// Fills `buf` from a xorshift64 generator seeded with `seed` (made non-zero).
fn fill_pseudo_random(buf: &mut [u8], seed: u64) {
    let mut x = seed | 1;
    for chunk in buf.chunks_exact_mut(8) {
        x = xorshift(x);
        chunk.copy_from_slice(&x.to_le_bytes());
    }
}

/// Writes request index `i` into the first 8 bytes of every 4 KiB block of `buf`, so no
/// block repeats another anywhere on the device.
#[inline]
fn stamp(buf: &mut [u8], i: u64) {
    for (b, block) in buf.chunks_exact_mut(ALIGN).enumerate() {
        block[..8].copy_from_slice(&(i.wrapping_mul(1 << 20) | b as u64).to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_mib_per_second() {
        let p = Pass {
            bytes: 512 << 20,
            seconds: 0.25,
        };
        assert_eq!(p.mib_per_sec(), 2048.0);
        assert_eq!(Pass { bytes: 1, seconds: 0.0 }.mib_per_sec(), 0.0);
    }

    #[test]
    fn the_fastest_pass_of_each_direction_is_the_rate() {
        let p = |seconds| Pass {
            bytes: 1 << 30,
            seconds,
        };
        let r = RawRates {
            passes: vec![
                (Dir::Write, Method::DirectDeep, p(2.0)),
                (Dir::Write, Method::DirectDeep, p(1.0)),
                (Dir::Read, Method::DirectDeep, p(4.0)),
                (Dir::Read, Method::DirectDeep, p(0.0)),
                (Dir::Read, Method::Buffered, p(0.5)),
                (Dir::Read, Method::Buffered, p(8.0)),
            ],
        };
        assert_eq!(r.write().mib_per_sec(), 1024.0);
        // A pass of zero seconds (no measurement) never wins; the buffered read does.
        assert_eq!(r.read().mib_per_sec(), 2048.0);
        assert_eq!(r.best(Dir::Read), p(0.5));
        assert_eq!(r.best_of(Dir::Read, Method::DirectDeep), p(4.0));
        let none = RawRates { passes: vec![] };
        assert_eq!(none.read().mib_per_sec(), 0.0);
    }

    #[test]
    fn random_offsets_are_aligned_inside_the_written_bytes_and_spread_over_them() {
        let blocks = 16 * (REQUEST / RANDOM_BLOCK) as u64; // 16 MiB
        let mut x = 0x9e37_79b9_7f4a_7c15 | 1;
        let mut hits = [0u32; 16];
        for _ in 0..16_000 {
            let offset = next_offset(&mut x, blocks);
            assert_eq!(offset % RANDOM_BLOCK as u64, 0, "{offset}");
            assert!(offset < blocks * RANDOM_BLOCK as u64, "{offset}");
            hits[(offset / REQUEST as u64) as usize] += 1;
        }
        // Uniform: every MiB gets about 1000 of the 16,000 reads.
        assert!(hits.iter().all(|&h| (800..1200).contains(&h)), "{hits:?}");
        // One block: always offset 0.
        assert_eq!(next_offset(&mut x, 1), 0);
    }

    #[test]
    fn the_random_rate_is_requests_per_second_of_the_fastest_random_pass() {
        let p = |ops: u64, seconds| Pass {
            bytes: ops * RANDOM_BLOCK as u64,
            seconds,
        };
        let r = RawRates {
            passes: vec![
                (
                    Dir::Read,
                    Method::DirectDeep,
                    Pass {
                        bytes: 1 << 30,
                        seconds: 0.1,
                    },
                ),
                (Dir::RandomRead, Method::DirectDeep, p(5_000, 0.5)),
                (Dir::RandomRead, Method::DirectDeep, p(6_000, 0.5)),
                (Dir::RandomRead, Method::DirectDeep, p(1, 0.0)),
            ],
        };
        assert_eq!(r.random_read_iops(), 12_000.0);
        // The random passes never count as the sequential read rate, nor the other way round.
        assert_eq!(r.read().mib_per_sec(), 10_240.0);
        assert_eq!(RawRates { passes: vec![] }.random_read_iops(), 0.0);
        assert_eq!(p(1, 1.0).ops_per_sec(0), 0.0);
    }

    #[test]
    fn the_buffer_is_aligned_patterned_and_stamped_per_block() {
        let mut b = request_buf();
        assert_eq!(b.as_slice().as_ptr() as usize % ALIGN, 0);
        fill_pseudo_random(b.as_mut_slice(), 42);
        let zeros = b.as_slice().iter().filter(|&&x| x == 0).count();
        assert!(zeros < REQUEST / 100, "{zeros} zero bytes: not pseudo-random");
        stamp(b.as_mut_slice(), 3);
        let first: Vec<[u8; 8]> = b
            .as_slice()
            .chunks_exact(ALIGN)
            .map(|c| c[..8].try_into().unwrap())
            .collect();
        let mut unique = first.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), REQUEST / ALIGN, "every 4 KiB block differs");
        stamp(b.as_mut_slice(), 4);
        assert_ne!(&b.as_slice()[..8], &first[0], "requests differ too");
    }

    #[test]
    fn too_small_and_missing_devices_are_errors_not_panics() {
        let flag = AtomicBool::new(false);
        let err = measure(Path::new("/nonexistent/dev"), (REQUEST - 1) as u64, &flag).unwrap_err();
        assert!(matches!(err, BaselineError::TooSmall { .. }), "{err}");
        let err = measure(Path::new("/nonexistent/dev"), REQUEST as u64, &flag).unwrap_err();
        assert!(
            matches!(err, BaselineError::Open { .. }) && err.to_string().contains("/nonexistent/dev"),
            "{err}"
        );
    }

    #[test]
    fn a_regular_file_is_written_and_read_back_or_refuses_o_direct_cleanly() {
        // Not a block device (those need root: see the integration tests), but the same code
        // path; tmpfs refuses O_DIRECT with EINVAL, which must be an Open error.
        let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
        let path = dir.path().join("dev.img");
        std::fs::File::create(&path)
            .unwrap()
            .set_len(4 * REQUEST as u64)
            .unwrap();
        let flag = AtomicBool::new(false);
        match measure(&path, 4 * REQUEST as u64 + 5, &flag) {
            Ok(r) => {
                assert_eq!(r.passes.len(), PASSES.len(), "{r:?}");
                for (dir, _, p) in &r.passes {
                    match dir {
                        Dir::RandomRead => {
                            assert!(p.bytes > 0 && p.bytes % RANDOM_BLOCK as u64 == 0, "{r:?}");
                            // Time-bound: at least RANDOM_TIME, and not much more.
                            assert!(p.seconds >= RANDOM_TIME.as_secs_f64() && p.seconds < 5.0, "{r:?}");
                        }
                        _ => assert_eq!(p.bytes, 4 * REQUEST as u64, "{r:?}"),
                    }
                }
                assert_eq!(r.passes.iter().filter(|(d, _, _)| *d == Dir::RandomRead).count(), 3);
                assert!(r.write().mib_per_sec() > 0.0 && r.read().mib_per_sec() > 0.0, "{r:?}");
                assert!(r.random_read_iops() > 0.0, "{r:?}");
                let data = std::fs::read(&path).unwrap();
                assert_eq!(&data[..8], &0u64.to_le_bytes(), "request 0, block 0 stamp");
                assert_eq!(&data[REQUEST + ALIGN..][..8], &((1u64 << 20) | 1).to_le_bytes());
            }
            Err(BaselineError::Open { source, .. }) => {
                assert_eq!(source.raw_os_error(), Some(libc::EINVAL), "{source}")
            }
            Err(e) => panic!("{e}"),
        }
        flag.store(true, Ordering::Relaxed);
        assert!(matches!(
            measure(&path, REQUEST as u64, &flag),
            Err(BaselineError::Interrupted) | Err(BaselineError::Open { .. })
        ));
    }
}
