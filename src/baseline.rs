//! The raw-device baseline: how fast the block device under the filesystems is by itself, so
//! the report can flag a throughput above it as served from a cache, not the disk (DESIGN.md,
//! "Rules that make the numbers honest": "baseline measured once per target").
//!
//! What [`measure`] does, once per session before the first case, on the device
//! [`crate::provision::Provisioner::raw_device`] hands out (a loop device over a fresh image in
//! the scratch folder, attached exactly like the filesystems' images, or the confirmed
//! `--device`):
//! 1. a sequential write of its first `bytes` in [`REQUEST`]-sized requests with O_DIRECT,
//!    followed by fdatasync(2); the clock runs from the first pwrite(2) to the end of the
//!    fdatasync, so the rate is what reached stable storage (for a loop device with direct I/O
//!    the flush becomes an fsync of the backing file);
//! 2. a sequential O_DIRECT read of the same bytes, timed from the first to the last pread(2).
//!
//! This is fio's `rw=write` / `rw=read` with `direct=1, bs=1M, ioengine=psync, iodepth=1`: one
//! request in flight, the way a filesystem's own sequential I/O mostly reaches the device. A
//! filesystem can still beat it somewhat (merged or parallel requests), which is why the report
//! only flags throughputs clearly above it (`report::CACHE_BOUND_TOLERANCE`).
//!
//! Invariants:
//! - Only `[0, bytes)` of the given device is written; which device that may be is the
//!   provisioner's decision (an image fsbench made, or a device the user confirmed with
//!   `--wipe`). Block devices are opened with O_EXCL, so the kernel itself refuses one that is
//!   mounted or held by anyone else.
//! - The timed loops allocate nothing and make exactly one pwrite/pread per request (plus
//!   retries of EINTR and short transfers). The buffer, [`REQUEST`] bytes aligned to
//!   [`ALIGN`], is allocated and filled before the clock starts. Its content is pseudo-random
//!   (no layer can compress it or skip zeros), and each request stamps its index into every
//!   4 KiB block so no two blocks are identical (no layer can deduplicate them).
//! - The interrupt flag is polled before every request, so Ctrl-C stops within one request and
//!   the caller's guard detaches and deletes what was made for the measurement.
//! - Errors are [`BaselineError`] values, never panics; the caller turns them into a warning,
//!   never a failed run.
//!
//! References: open(2) (O_DIRECT alignment: "the logical block size of the underlying storage
//! (typically 512 bytes)", and O_EXCL without O_CREAT on block devices), pwrite(2), pread(2),
//! fdatasync(2), losetup(8) `--direct-io`; fio(1) `direct`, `bs`, `rw`.

use crate::engine::sysio::AlignedBuf;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Bytes per request: 1 MiB (fio's `bs=1M`), large enough that per-request overhead is small
/// and a multiple of every logical block size.
pub const REQUEST: usize = 1 << 20;

/// Alignment of the buffer in bytes: 4096 covers logical block sizes of 512 and 4096 bytes,
/// which O_DIRECT requires buffers, offsets and lengths to be multiples of.
pub const ALIGN: usize = 4096;

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
    #[error("{op} of {device} at byte {offset}: the device ended after {done} of {REQUEST} bytes")]
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

/// One timed sequential pass over the device.
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
}

/// Both passes of a baseline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RawRates {
    /// Sequential O_DIRECT write, fdatasync included.
    pub write: Pass,
    /// Sequential O_DIRECT read of the same bytes.
    pub read: Pass,
}

/// Measures the sequential write and then read rate of the first `bytes` of `device` (rounded
/// down to whole [`REQUEST`]s), overwriting them; see the module docs. Polls `interrupt` before
/// every request.
pub fn measure(device: &Path, bytes: u64, interrupt: &AtomicBool) -> Result<RawRates, BaselineError> {
    let name = || device.display().to_string();
    let requests = bytes / REQUEST as u64;
    if requests == 0 {
        return Err(BaselineError::TooSmall { device: name(), bytes });
    }
    let fd = open_direct(device).map_err(|source| BaselineError::Open { device: name(), source })?;
    let mut buf = request_buf();
    fill_pseudo_random(buf.as_mut_slice(), 0x9e37_79b9_7f4a_7c15);
    // Progress only between the two timed passes, never inside them.
    let mut step = crate::progress::step(
        format!("raw-device baseline ({})", crate::units::Bytes(bytes).human()),
        Some(2 * requests * REQUEST as u64),
        "bytes",
    );

    let start = Instant::now();
    for i in 0..requests {
        if interrupt.load(Ordering::Relaxed) {
            return Err(BaselineError::Interrupted);
        }
        stamp(buf.as_mut_slice(), i);
        transfer(Op::Write(&fd, buf.as_slice()), i * REQUEST as u64).map_err(|e| e.at(device))?;
    }
    rustix::fs::fdatasync(&fd).map_err(|e| BaselineError::Sync {
        device: name(),
        source: e.into(),
    })?;
    let write = Pass {
        bytes: requests * REQUEST as u64,
        seconds: start.elapsed().as_secs_f64(),
    };
    step.set(write.bytes);

    let start = Instant::now();
    for i in 0..requests {
        if interrupt.load(Ordering::Relaxed) {
            return Err(BaselineError::Interrupted);
        }
        transfer(Op::Read(&fd, buf.as_mut_slice()), i * REQUEST as u64).map_err(|e| e.at(device))?;
    }
    let read = Pass {
        bytes: requests * REQUEST as u64,
        seconds: start.elapsed().as_secs_f64(),
    };
    step.set(write.bytes + read.bytes);
    step.finish();
    Ok(RawRates { write, read })
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

/// Fills `buf` from a xorshift64 generator seeded with `seed` (made non-zero).
fn fill_pseudo_random(buf: &mut [u8], seed: u64) {
    let mut x = seed | 1;
    for chunk in buf.chunks_exact_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
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
                assert_eq!((r.write.bytes, r.read.bytes), (4 * REQUEST as u64, 4 * REQUEST as u64));
                assert!(r.write.mib_per_sec() > 0.0 && r.read.mib_per_sec() > 0.0, "{r:?}");
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
