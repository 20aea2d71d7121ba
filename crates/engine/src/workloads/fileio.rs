//! The `fileio` workload: sysbench fileio's file I/O test, run natively.
//!
//! Reference: sysbench 1.0.20 (`sysbench fileio help`, and `src/tests/fileio/sb_fileio.c` of
//! akopytov/sysbench, read to match semantics; no code is taken from it).
//!
//! **Prepare** (untimed): `files` files `test_file.0` … of `total_size / files` bytes each
//! (rounded down to whole blocks here) are written in full and fsynced, as `sysbench fileio
//! prepare` does; for `seqwr` they are created empty instead (sysbench removes them and the
//! run recreates them). Then the usual `sync; drop caches` before the timed phase.
//!
//! **Run** (timed, one phase named after the mode): `threads` workers issue requests of
//! `block_size` bytes with pread(2)/pwrite(2) on descriptors opened before the timed region
//! and shared by all workers (as sysbench shares them):
//!
//! | mode | requests |
//! |---|---|
//! | `seqwr` | writes, one global sequential cursor over all files in order (file 0 first), wrapping |
//! | `seqrewr` | the same over the prepared files |
//! | `seqrd` | reads, same cursor |
//! | `rndrd` | reads at a block uniformly drawn over the whole file set |
//! | `rndwr` | writes, same distribution |
//! | `rndrw` | per worker: a read while `(reads + 1) / (writes + 1) < rw_ratio`, else a write |
//!
//! **fsync schedule** (sysbench's `--file-fsync-freq`): once writes have happened, every
//! `fsync_freq` requests a cycle starts that fsyncs every file once, one fsync per operation;
//! requests resume when the cycle is done. Each fsync is an operation of its own (it counts in
//! `fsyncs_per_s` and in the latency histogram, as sysbench counts it as an event). With
//! `fsync_end` every worker fsyncs every file after its last request, inside the timed region
//! (sysbench's `--file-fsync-end`, per thread, counted in `fsyncs_per_s`). Read-only modes
//! never fsync.
//!
//! The phase stops at `time` (sysbench `--time`) or after `requests` reads and writes
//! (sysbench `--events`), whichever comes first; `0` disables either bound.
//!
//! Deliberate differences from sysbench (all documented choices, none changes what a single
//! thread measures):
//! - sysbench hands out requests and fsyncs from one mutex-protected generator. Here each
//!   worker keeps its own schedule (no shared lock in the hot loop): with `threads = N` a worker
//!   starts its fsync cycle every `N × fsync_freq` of its own requests, so the machine-wide
//!   ratio of fsyncs to requests is sysbench's. Sequential modes share one atomic block cursor,
//!   so requests still walk the files in order.
//! - `requests` counts reads and writes only; sysbench's `--events` also counts fsyncs. With
//!   random modes the requests are split evenly between workers up front.
//! - Files are a whole number of blocks (sysbench issues one short request at a file's tail).
//! - `data = "random"` fills the write buffer with random bytes once (sysbench writes zeros,
//!   the default here too, which compresses extremely well: compare `btrfs compress=lzo` with
//!   both).
//!
//! `io = "direct"` opens with O_DIRECT; every worker's buffer is allocated once, aligned to
//! 4096 bytes, and `block_size` must be a multiple of 4096.
//!
//! `io = "atomic"` (fio's `atomic=1`) opens with O_DIRECT and issues every write as one
//! pwritev2(2) with `RWF_ATOMIC`, never continued if short; `block_size` must be a power of
//! two within the atomic write unit range statx(2) reports for the first file, checked before
//! the phase (a filesystem reporting none makes the case unavailable).
//!
//! `io = "uncached"` (fio's `uncached=1`) issues each request with preadv2(2) / pwritev2(2) and
//! `RWF_DONTCACHE` (Linux 6.14+) on descriptors opened buffered: the page cache carries the
//! transfer and drops its pages afterwards. Whether the kernel did is measured, not assumed:
//! after each phase the share of the file set still in the page cache (mincore(2)) is a
//! `cached_mib` row, and a phase that left a quarter of what it moved cached gets a note
//! ([`crate::phase::Phases::uncached`]). A filesystem that refuses the flag (btrfs on
//! 6.18: `EOPNOTSUPP`) makes the case unavailable, found by a one-byte probe before the phase.
//!
//! Engine rules kept: the hot loop ([`FileWorker::op`]) allocates nothing, formats nothing,
//! takes no lock (the sequential cursor is one atomic add), reads the clock once per operation
//! (in the pool), and uses a per-worker `SmallRng` seeded from `seed` and the worker index.
//! The files are removed at the end and on error or interrupt.

use crate::metric::{MetricId, RawSample, Unit};
use crate::openloop::{self, OpenLoopSpec};
use crate::phase::{LatencySet, Phases, Policy, Short, MIN_TIMED_RUN};
use crate::pool::{PoolRun, Step, Worker, WorkerPool};
use crate::sysio::{self, AlignedBuf};
use crate::units::{Bytes, Dur};
use crate::Invalid;
use crate::{EngineError, ErrHint, RunContext, Workload, WorkloadKind};
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Alignment of O_DIRECT buffers and the granularity `block_size` must have with `io = "direct"`.
pub const DIRECT_ALIGN: usize = 4096;
/// Largest accepted `block_size`.
const MAX_BLOCK: u64 = 256 * Bytes::MIB;
/// Most files (each is one open descriptor during the run).
const MAX_FILES: u32 = 65_536;
/// Most worker threads.
const MAX_THREADS: u32 = 1024;
/// Deepest io_uring queue per worker.
const MAX_IODEPTH: u32 = 4096;
/// Prepare writes in buffers of about this size.
const PREPARE_CHUNK: u64 = Bytes::MIB;
/// The phase: caches dropped if asked, every latency percentile, and a note below
/// [`MIN_TIMED_RUN`].
const POLICY: Policy = Policy::new().latency(LatencySet::Full).short(Short::Each {
    limit: MIN_TIMED_RUN,
    prefix: "fileio ",
    aside: "",
    raise: "time or requests",
});
/// Errors of a full filesystem say what to change.
const ERR: ErrHint = ErrHint("lower total_size or use a larger target");
/// Shortest `time` that `--scale` produces.
const MIN_SCALED_TIME: Duration = Duration::from_secs(2);

/// sysbench's `--file-test-mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileioMode {
    /// Sequential write into files created empty.
    Seqwr,
    /// Sequential rewrite of the prepared files.
    Seqrewr,
    /// Sequential read.
    Seqrd,
    /// Random read.
    Rndrd,
    /// Random write.
    Rndwr,
    /// Random reads and writes mixed by `rw_ratio` (the default, as in the ext4-vs-btrfs study).
    #[default]
    Rndrw,
}

impl FileioMode {
    /// The mode's name, also the phase name (`rndrw`).
    pub fn name(self) -> &'static str {
        match self {
            FileioMode::Seqwr => "seqwr",
            FileioMode::Seqrewr => "seqrewr",
            FileioMode::Seqrd => "seqrd",
            FileioMode::Rndrd => "rndrd",
            FileioMode::Rndwr => "rndwr",
            FileioMode::Rndrw => "rndrw",
        }
    }

    fn sequential(self) -> bool {
        matches!(self, FileioMode::Seqwr | FileioMode::Seqrewr | FileioMode::Seqrd)
    }

    /// Whether the mode issues reads.
    pub fn reads(self) -> bool {
        matches!(self, FileioMode::Seqrd | FileioMode::Rndrd | FileioMode::Rndrw)
    }

    /// Whether the mode issues writes (and therefore fsyncs).
    pub fn writes(self) -> bool {
        !matches!(self, FileioMode::Seqrd | FileioMode::Rndrd)
    }
}

/// How files are opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoMode {
    /// Through the page cache (sysbench's default).
    #[default]
    Buffered,
    /// O_DIRECT (sysbench `--file-extra-flags=direct`): 4096-aligned buffers and blocks.
    Direct,
    /// No system call per request (fio's `ioengine=null`): the whole engine runs — request
    /// generation, counters, the clock, the histogram — but nothing is read or written and no
    /// file is prepared or opened. Measures fsbench's own cost per operation.
    Null,
    /// io_uring (the `io-uring` crate): one ring per worker with `iodepth` requests in flight,
    /// files registered with the ring, buffered unless `direct = true`.
    IoUring,
    /// Uncached buffered I/O (fio's `uncached=1`): preadv2(2) / pwritev2(2) with
    /// `RWF_DONTCACHE` (Linux 6.14+), so each request goes through the page cache and its
    /// pages are dropped once it completes (a write's once its writeback does). Any block
    /// size. A filesystem without support (btrfs on 6.18) makes the case unavailable, and each
    /// phase records how much of the file set the page cache still holds (`cached_mib`).
    Uncached,
    /// Untorn writes (fio's `atomic=1`): O_DIRECT, and every write a pwritev2(2) with
    /// `RWF_ATOMIC` (Linux 6.11+), which lands whole or not at all; reads are plain O_DIRECT.
    /// `block_size` must be a power of two within the atomic write unit range the filesystem
    /// reports (statx `STATX_WRITE_ATOMIC`); a filesystem that reports none (ext4 and btrfs on
    /// a loop device here) makes the case unavailable. Compare with `direct` for what the
    /// guarantee costs.
    Atomic,
}

impl IoMode {
    /// The name as written in suite files.
    pub fn name(self) -> &'static str {
        match self {
            IoMode::Buffered => "buffered",
            IoMode::Direct => "direct",
            IoMode::Null => "null",
            IoMode::IoUring => "io_uring",
            IoMode::Uncached => "uncached",
            IoMode::Atomic => "atomic",
        }
    }
}

/// What written blocks contain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fill {
    /// Zero bytes, as sysbench writes.
    #[default]
    Zeros,
    /// Random bytes (incompressible), drawn once per worker before the timed region.
    Random,
}

/// The access-pattern advice given to the kernel for every file before the timed region
/// (posix_fadvise(2) over the whole file), as fio's `fadvise_hint` does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fadvise {
    /// No advice (`POSIX_FADV_NORMAL`, the kernel's default readahead): what sysbench does,
    /// and the default.
    #[default]
    Normal,
    /// `POSIX_FADV_RANDOM`: no readahead, so a random read brings in only its own pages —
    /// what fio does for random jobs by default (`fadvise_hint=1`).
    Random,
    /// `POSIX_FADV_SEQUENTIAL`: larger readahead — what fio does for sequential jobs.
    Sequential,
    /// fio's default: `random` for the random modes, `sequential` for the sequential ones.
    Fio,
}

impl Fadvise {
    /// The name as written in suite files.
    pub fn name(self) -> &'static str {
        match self {
            Fadvise::Normal => "normal",
            Fadvise::Random => "random",
            Fadvise::Sequential => "sequential",
            Fadvise::Fio => "fio",
        }
    }

    /// The advice for `mode`: `None` for `normal` (no call at all, as sysbench).
    fn advice(self, mode: FileioMode) -> Option<rustix::fs::Advice> {
        match self {
            Fadvise::Normal => None,
            Fadvise::Random => Some(rustix::fs::Advice::Random),
            Fadvise::Sequential => Some(rustix::fs::Advice::Sequential),
            Fadvise::Fio if mode.sequential() => Some(rustix::fs::Advice::Sequential),
            Fadvise::Fio => Some(rustix::fs::Advice::Random),
        }
    }
}

fn is_normal(v: &Fadvise) -> bool {
    *v == Fadvise::Normal
}

fileio_job_spec! {
/// Parameters of the fileio workload (sysbench option names in brackets).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileioSpec {
    /// `buffered` (default), `direct` (O_DIRECT), `uncached` (RWF_DONTCACHE), `atomic`
    /// (O_DIRECT with RWF_ATOMIC writes), `null` (no system call: the engine's own cost) or
    /// `io_uring`.
    #[serde(default)]
    pub io: IoMode,
    /// Requests in flight per worker with `io = "io_uring"` (fio's `iodepth`). Default 1.
    #[serde(default = "default_iodepth", skip_serializing_if = "is_one")]
    pub iodepth: u32,
    /// O_DIRECT with `io = "io_uring"` (`io = "direct"` is the psync spelling). Default false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub direct: bool,
    /// Pin worker i to the i-th CPU this process may run on (modulo their number). Default false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub pin: bool,
    /// Content of written blocks: `zeros` (default, as sysbench) or `random`.
    #[serde(default)]
    pub data: Fill,
    /// Readahead advice for the files (posix_fadvise(2), given after they are opened, before
    /// the timed region): `normal` (default: no call, as sysbench), `random`, `sequential`, or
    /// `fio` (random for random modes, sequential otherwise: fio's `fadvise_hint=1`). With
    /// caches dropped, `random` keeps a 4 KiB random read from pulling 128 KiB of readahead
    /// into the page cache, which later reads would then hit (issue 13: fileio `rndrd` read 7.7×
    /// fio's rate without it).
    #[serde(default, skip_serializing_if = "is_normal")]
    pub fadvise: Fadvise,
    /// Seed of the per-worker random generators. Default 0.
    #[serde(default)]
    pub seed: u64,
    /// Wear-out stonewalling (IOR's `-D time -O stoneWallingWearOut=1`): at `time` (the
    /// stonewall) the ranks of a many-rank run agree on the largest request count any rank
    /// reached and every rank goes on to it, so each does the same work. Needs `time`. Alone it
    /// changes nothing. Default false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub wear_out: bool,
    /// With many ranks (MPI): every rank works on one shared file set in the slot's directory,
    /// prepared and removed by rank 0 (IOR's N-1, one shared file set), instead of its own in
    /// `rank-N` (file-per-rank, IOR `-F`, the default). Sequential modes walk the whole set on
    /// every rank. Alone it changes nothing. Default false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ranks_share: bool,
    /// Open loop (fio's `rate_iops`, `open_loop = { rate = 2000, arrival = "poisson" }`): the
    /// workers together start operations at their intended times, whatever the filesystem
    /// does, and latency is measured from the intended start (no coordinated omission;
    /// [`crate::openloop`]); a sweep of rates and the capacity search at a latency
    /// target give phases of their own, in place of the closed-loop phase. Every operation a
    /// worker performs takes one start, fsyncs included. Absent (the default): the closed
    /// loop, each worker issuing its next request when the last returns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoopSpec>,
}
}

pub(super) fn default_files() -> u32 {
    128
}
pub(super) fn default_total_size() -> Bytes {
    Bytes(2 * Bytes::GIB)
}
pub(super) fn default_block_size() -> Bytes {
    Bytes(16 * Bytes::KIB)
}
pub(super) fn default_rw_ratio() -> f64 {
    1.5
}
pub(super) fn default_fsync_freq() -> u32 {
    100
}
pub(super) fn default_threads() -> u32 {
    1
}
pub(super) fn default_time() -> Dur {
    Dur(Duration::from_secs(10))
}
fn default_iodepth() -> u32 {
    1
}
// The settings added after the first release are left out of the serialised spec when they
// have their default value, so the case ids (a hash of the serialised workload) of existing
// suites do not change.
fn is_one(v: &u32) -> bool {
    *v == 1
}
fn is_false(v: &bool) -> bool {
    !*v
}

impl Default for FileioSpec {
    fn default() -> Self {
        super::serde_default()
    }
}

impl FileioSpec {
    /// Bytes of each file: `total_size / files`, rounded down to whole blocks.
    pub fn file_size(&self) -> u64 {
        let per = self.total_size.get() / u64::from(self.files.max(1));
        per.checked_div(self.block_size.get()).unwrap_or(0) * self.block_size.get()
    }

    fn blocks_per_file(&self) -> u64 {
        self.file_size().checked_div(self.block_size.get()).unwrap_or(0)
    }

    /// Whether the files are opened with O_DIRECT.
    fn o_direct(&self) -> bool {
        matches!(self.io, IoMode::Direct | IoMode::Atomic) || (self.io == IoMode::IoUring && self.direct)
    }
}

impl Workload for FileioSpec {
    fn phases(&self) -> Vec<String> {
        match &self.open_loop {
            Some(open) => open.phases(self.mode.name()),
            None => vec![self.mode.name().to_string()],
        }
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        let min_total = (u64::from(self.files) * self.block_size.get()).max(16 * Bytes::MIB);
        let time = if self.time.0.is_zero() {
            self.time
        } else {
            self.time.scaled(factor, MIN_SCALED_TIME)
        };
        let requests = if self.requests == 0 {
            0
        } else {
            let v = (self.requests as f64 * factor).floor();
            (if v.is_finite() && v < u64::MAX as f64 {
                v as u64
            } else {
                u64::MAX
            })
            .max(100)
        };
        WorkloadKind::Fileio(FileioSpec {
            total_size: self.total_size.scaled(factor, min_total),
            time,
            requests,
            ..self.clone()
        })
    }

    fn with_target(&self, target: openloop::LatencyTarget) -> Option<WorkloadKind> {
        (self.io != IoMode::IoUring).then(|| {
            WorkloadKind::Fileio(FileioSpec {
                open_loop: Some(OpenLoopSpec::with_target(self.open_loop.as_ref(), target)),
                ..self.clone()
            })
        })
    }

    fn validate(&self) -> Result<(), Invalid> {
        let block = self.block_size.get();
        if self.files == 0 || self.files > MAX_FILES {
            return Err(Invalid(format!(
                "files must be between 1 and {MAX_FILES} (is {})",
                self.files
            )));
        }
        if block == 0 || block > MAX_BLOCK {
            return Err(Invalid(format!(
                "block_size must be between 1 byte and 256MiB (is {})",
                self.block_size
            )));
        }
        if self.wear_out && self.time.0.is_zero() {
            return Err("wear_out needs a time limit (the stonewall): set time".into());
        }
        if self.file_size() == 0 {
            return Err(Invalid(format!(
                "total_size ({}) gives each of the {} files less than one block of {}: raise total_size or lower files",
                self.total_size, self.files, self.block_size
            )));
        }
        if self.o_direct() && block % DIRECT_ALIGN as u64 != 0 {
            return Err(Invalid(format!(
                "direct I/O needs block_size to be a multiple of 4KiB (is {})",
                self.block_size
            )));
        }
        if self.io == IoMode::Atomic && !block.is_power_of_two() {
            return Err(Invalid(format!(
                "atomic writes need block_size to be a power of two (is {})",
                self.block_size
            )));
        }
        if self.io == IoMode::Atomic && !self.mode.writes() {
            return Err(Invalid(format!(
                "io = \"atomic\" makes the writes atomic, and mode {} only reads: use io = \"direct\"",
                self.mode.name()
            )));
        }
        if self.iodepth == 0 || self.iodepth > MAX_IODEPTH {
            return Err(Invalid(format!(
                "iodepth must be between 1 and {MAX_IODEPTH} (is {})",
                self.iodepth
            )));
        }
        if self.iodepth > 1 && self.io != IoMode::IoUring {
            return Err(Invalid(format!(
                "iodepth = {} needs io = \"io_uring\" (io = \"{}\" issues one request at a time)",
                self.iodepth,
                self.io.name()
            )));
        }
        if self.direct && self.io != IoMode::IoUring {
            return Err(Invalid(format!(
                "direct = true goes with io = \"io_uring\"; with io = \"{}\" write io = \"direct\" instead",
                self.io.name()
            )));
        }
        if !(self.rw_ratio.is_finite() && self.rw_ratio >= 0.0) {
            return Err(Invalid(format!("rw_ratio must be a number ≥ 0 (is {})", self.rw_ratio)));
        }
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(Invalid(format!(
                "threads must be between 1 and {MAX_THREADS} (is {})",
                self.threads
            )));
        }
        if let Some(open) = &self.open_loop {
            open.validate()?;
            if self.time.0.is_zero() && !open.keeps_closed() {
                return Err("open_loop with a rate or a sweep needs a time limit: set time".into());
            }
            if self.wear_out {
                return Err(Invalid(
                    "open_loop and wear_out do not go together: the open loop's work is set by its rate".into(),
                ));
            }
            if self.io == IoMode::IoUring {
                return Err(Invalid(
                    "open_loop issues one request per start: use io = \"buffered\" or \"direct\", not io_uring".into(),
                ));
            }
        }
        if self.time.0.is_zero() && self.requests == 0 {
            return Err("time and requests are both 0: the phase would never end (set one of them)".into());
        }
        Ok(())
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        // `test_file.N` files of equal size.
        let name = 10 + u64::from(self.files.max(1)).to_string().len() as u64;
        // `seqwr` starts from empty files: with a request limit it writes at most that many blocks.
        let per_file = match self.mode {
            FileioMode::Seqwr if self.requests > 0 => self
                .file_size()
                .min((self.requests.saturating_mul(self.block_size.get())).div_ceil(u64::from(self.files.max(1)))),
            _ => self.file_size(),
        };
        let fp = crate::fstype::Footprint::default()
            .files(u64::from(self.files), per_file, name)
            .growing();
        // Every mode but `seqwr` and the reads writes over prepared data.
        let rewrites = self.mode.writes() && !matches!(self.mode, FileioMode::Seqwr);
        let limit = match self.requests {
            0 => u64::MAX,
            n => n.saturating_mul(self.block_size.get()),
        };
        let rewritten = if rewrites { fp.block_bytes.min(limit) } else { 0 };
        // Atomic writes without device support are copy-on-write on every type that has them
        // (xfs: each goes out of place through the CoW fork, whose extent size hint reserves
        // more than the write), so what is rewritten may need its own space again: measured,
        // 4 KiB random atomic writes over 256 MiB filled xfs's image sized without this.
        let cow = if self.io == IoMode::Atomic { rewritten } else { 0 };
        fp.rewrites(rewritten).extra(cow)
    }

    fn describe(&self) -> String {
        let mut s = format!(
            "fileio {} {} files x {} = {}, block {}, {} thread(s)",
            self.mode.name(),
            self.files,
            Bytes(self.file_size()),
            Bytes(self.file_size() * u64::from(self.files)).human(),
            self.block_size,
            self.threads
        );
        if !self.time.0.is_zero() {
            s.push_str(&format!(", {}", self.time));
        }
        if self.requests > 0 {
            s.push_str(&format!(", {} requests", self.requests));
        }
        if self.mode.writes() {
            if self.fsync_freq > 0 {
                s.push_str(&format!(", fsync every {}", self.fsync_freq));
            } else {
                s.push_str(", no periodic fsync");
            }
            if self.fsync_end {
                s.push_str(" + at end");
            }
        }
        if self.mode == FileioMode::Rndrw {
            s.push_str(&format!(", r/w {}", self.rw_ratio));
        }
        match self.io {
            IoMode::Buffered => s.push_str(", buffered"),
            IoMode::Direct => s.push_str(", O_DIRECT"),
            IoMode::Null => s.push_str(", null I/O (no system call)"),
            IoMode::Uncached => s.push_str(", uncached (RWF_DONTCACHE)"),
            IoMode::Atomic => s.push_str(", O_DIRECT, atomic writes (RWF_ATOMIC)"),
            IoMode::IoUring => {
                s.push_str(&format!(", io_uring depth {}", self.iodepth));
                if self.direct {
                    s.push_str(" O_DIRECT");
                }
            }
        }
        if self.fadvise != Fadvise::Normal {
            s.push_str(&format!(", fadvise {}", self.fadvise.name()));
        }
        if self.pin {
            s.push_str(", pinned");
        }
        if self.wear_out {
            s.push_str(", wear-out stonewall");
        }
        if self.ranks_share {
            s.push_str(", one file set shared by the ranks");
        }
        if let Some(open) = &self.open_loop {
            s.push_str(&format!(", {}", open.describe()));
        }
        s
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        self.validate()?;
        let (dir, lead) = if self.ranks_share && self.io != IoMode::Null {
            ctx.sync.shared_dir(ctx.dir)
        } else {
            (ctx.dir.to_path_buf(), true)
        };
        let shared = dir != ctx.dir;
        let set = FileSet::new(&dir, self.files);
        let result = self.run_on(&set, lead, shared, ctx);
        // The files are removed whatever happened (untimed); a shared set by rank 0 once every
        // rank closed it.
        let done = if shared && result.is_ok() {
            ctx.sync.barrier("the end of the shared file set", ctx.interrupt)
        } else {
            Ok(())
        };
        let removed = if lead { set.remove_all() } else { Ok(()) };
        let mut sample = result?;
        done?;
        if shared && lead {
            sample.notes.push(format!(
                "fileio: every rank worked on one shared file set of {} files (rank 0 prepared it)",
                self.files
            ));
        }
        removed.map(|()| sample)
    }
}

impl FileioSpec {
    fn run_on(&self, set: &FileSet, lead: bool, shared: bool, ctx: &RunContext) -> Result<RawSample, EngineError> {
        // The null engine touches no file: nothing to lay out or open.
        let files = if self.io == IoMode::Null {
            Vec::new()
        } else {
            if lead {
                set.prepare(self, ctx.interrupt)?;
            }
            if shared {
                // Every rank waits for rank 0's files (a failed preparation: rank 0 syncs
                // "ended" instead, which stops the others here).
                ctx.sync.barrier("the shared file set", ctx.interrupt)?;
            }
            let files = set.open(self.o_direct())?;
            if self.io == IoMode::Uncached {
                uncached_supported(&files[0], &set.paths[0])?;
            }
            if self.io == IoMode::Atomic {
                atomic_supported(&files[0], &set.paths[0], self.block_size)?;
            }
            if let Some(advice) = self.fadvise.advice(self.mode) {
                for (f, p) in files.iter().zip(&set.paths) {
                    rustix::fs::fadvise(f, 0, 0, advice).map_err(|e| ERR.io("posix_fadvise", p, e.into()))?;
                }
            }
            files
        };
        let mut phases = Phases::new(ctx);
        if self.o_direct() {
            phases.direct_io();
        }
        if self.io == IoMode::Uncached {
            phases.uncached(set.paths.clone());
        }
        let phase = self.mode.name();
        let threads = self.threads as usize;
        let cursor = AtomicU64::new(0);
        let workers = || -> Result<Vec<FileWorker>, EngineError> {
            (0..threads)
                .map(|k| {
                    let left = if self.requests == 0 || self.mode.sequential() {
                        // Sequential modes: the shared cursor enforces the global limit.
                        u64::MAX
                    } else {
                        self.requests / threads as u64 + u64::from((k as u64) < self.requests % threads as u64)
                    };
                    FileWorker::new(self, set, &files, &cursor, k, left)
                })
                .collect()
        };
        let headline = |run: &PoolRun<Counters>, wall: Duration| {
            let mut c = Counters::default();
            for o in &run.outputs {
                c.add(o);
            }
            let secs = wall.as_secs_f64().max(1e-9);
            let mib = Bytes::MIB as f64;
            let mut metrics = Vec::new();
            if self.mode.reads() {
                metrics.push((MetricId::higher("reads_per_s", Unit::OpsPerSec), c.reads as f64 / secs));
            }
            if self.mode.writes() {
                metrics.push((
                    MetricId::higher("writes_per_s", Unit::OpsPerSec),
                    c.writes as f64 / secs,
                ));
                metrics.push((
                    MetricId::higher("fsyncs_per_s", Unit::OpsPerSec),
                    c.fsyncs as f64 / secs,
                ));
            }
            if self.mode.reads() {
                metrics.push((
                    MetricId::higher("read_mib_s", Unit::MibPerSec),
                    c.read_bytes as f64 / mib / secs,
                ));
            }
            if self.mode.writes() {
                metrics.push((
                    MetricId::higher("write_mib_s", Unit::MibPerSec),
                    c.write_bytes as f64 / mib / secs,
                ));
            }
            Ok(metrics)
        };
        if self.open_loop.as_ref().is_none_or(OpenLoopSpec::keeps_closed) {
            let pool = if self.time.0.is_zero() {
                WorkerPool::new()
            } else {
                WorkerPool::with_deadline(self.time.0)
            }
            .pinned(self.pin)
            .wear_out(self.wear_out);
            phases.run_pool(phase, pool, workers()?, &POLICY, headline)?;
        }
        if let Some(open) = &self.open_loop {
            openloop::run_phases(
                &mut phases,
                open,
                phase,
                self.time.0,
                self.seed,
                self.pin,
                &POLICY,
                workers,
                headline,
            )?;
        }
        if self.threads > 1 && self.mode.writes() && self.fsync_freq > 0 {
            phases.note(format!(
                "fileio: each of the {} workers runs its own fsync cycle every {} of its requests (sysbench: one global cycle every {})",
                self.threads,
                u64::from(self.fsync_freq) * u64::from(self.threads),
                self.fsync_freq
            ));
        }
        drop(files);
        Ok(phases.finish())
    }
}

/// This kernel's release (`uname -r`), for the unavailability messages.
fn kernel_release() -> String {
    rustix::system::uname().release().to_string_lossy().into_owned()
}

/// Whether the filesystem of `file` (at `path`) takes `RWF_DONTCACHE`: a one-byte preadv2(2)
/// with it (the kernel checks the flag before reading, so an empty file answers too).
/// `EOPNOTSUPP` — the filesystem lacks support, or the kernel predates 6.14 — makes the case
/// unavailable with what to use instead; another error is the I/O error it is.
fn uncached_supported(file: &File, path: &Path) -> Result<(), EngineError> {
    let mut byte = [0u8; 1];
    match rustix::io::preadv2(file, &mut [io::IoSliceMut::new(&mut byte)], 0, sysio::RWF_DONTCACHE) {
        Ok(_) => Ok(()),
        Err(rustix::io::Errno::OPNOTSUPP) => Err(EngineError::Unavailable(format!(
            "io = \"uncached\": this filesystem does not support uncached buffered I/O on Linux {} (preadv2 with RWF_DONTCACHE: EOPNOTSUPP; ext4 and xfs have it since 6.14); use io = \"buffered\" or \"direct\" here",
            kernel_release()
        ))),
        Err(e) => Err(ERR.io("preadv2 RWF_DONTCACHE", path, e.into())),
    }
}

/// Whether the filesystem of `file` (at `path`) writes `block` bytes atomically: the unit
/// range statx(2) reports for the file must hold `block` (a power of two, checked by
/// `validate`). No range, or a maximum of 0, makes the case unavailable; a block outside it
/// is unavailable too, with the range to choose from.
fn atomic_supported(file: &File, path: &Path, block: Bytes) -> Result<(), EngineError> {
    let units = crate::host::path::atomic_write_units(file).map_err(|e| ERR.io("statx", path, e))?;
    match units {
        Some((min, max, _)) if max > 0 => {
            if (u64::from(min)..=u64::from(max)).contains(&block.get()) {
                Ok(())
            } else {
                Err(EngineError::Unavailable(format!(
                    "io = \"atomic\": this filesystem writes {} to {} atomically here (statx), not block_size {block}: choose a power of two in that range",
                    Bytes(u64::from(min)),
                    Bytes(u64::from(max))
                )))
            }
        }
        Some(_) => Err(EngineError::Unavailable(format!(
            "io = \"atomic\": this filesystem offers no atomic writes on this device on Linux {} (statx STATX_WRITE_ATOMIC: unit max 0; xfs has them by copy-on-write since 6.16, others need a device with atomic write units); use io = \"direct\" here",
            kernel_release()
        ))),
        None => Err(EngineError::Unavailable(format!(
            "io = \"atomic\": the kernel does not report atomic write units for this filesystem on Linux {} (statx without STATX_WRITE_ATOMIC); use io = \"direct\" here",
            kernel_release()
        ))),
    }
}

// ---------------------------------------------------------------------------------------------
// The file set: prepare, open, remove.
// ---------------------------------------------------------------------------------------------

/// The test files `test_file.N` in the run directory.
struct FileSet {
    paths: Vec<PathBuf>,
}

impl FileSet {
    fn new(dir: &Path, files: u32) -> FileSet {
        FileSet {
            paths: (0..files).map(|i| dir.join(format!("test_file.{i}"))).collect(),
        }
    }

    /// Lays the files out (untimed): full and fsynced, or empty for `seqwr`.
    fn prepare(&self, spec: &FileioSpec, interrupt: &AtomicBool) -> Result<(), EngineError> {
        let size = spec.file_size();
        let block = spec.block_size.get();
        let chunk = (PREPARE_CHUNK / block).max(1) * block;
        let mut buf = vec![0u8; chunk as usize];
        if spec.data == Fill::Random {
            SmallRng::seed_from_u64(spec.seed ^ 0x5eed).fill_bytes(&mut buf);
        }
        let laid = if spec.mode == FileioMode::Seqwr { 0 } else { size };
        let total = laid * self.paths.len() as u64;
        let mut step = crate::progress::step(
            format!(
                "fileio prepare ({} files, {})",
                self.paths.len(),
                crate::units::Bytes(total).human()
            ),
            Some(total),
            "bytes",
        );
        for path in &self.paths {
            if interrupt.load(Ordering::Relaxed) {
                return Err(EngineError::Interrupted);
            }
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(path)
                .map_err(|e| ERR.io("create", path, e))?;
            if spec.mode == FileioMode::Seqwr {
                continue;
            }
            let mut left = size;
            while left > 0 {
                if interrupt.load(Ordering::Relaxed) {
                    return Err(EngineError::Interrupted);
                }
                let n = left.min(chunk) as usize;
                f.write_all(&buf[..n]).map_err(|e| ERR.io("write", path, e))?;
                left -= n as u64;
                step.add(n as u64);
            }
            f.sync_all().map_err(|e| ERR.io("fsync", path, e))?;
        }
        step.finish();
        Ok(())
    }

    /// Opens every file read-write (with O_DIRECT for `direct`), before the timed region.
    fn open(&self, direct: bool) -> Result<Vec<File>, EngineError> {
        self.paths
            .iter()
            .map(|p| {
                let mut o = OpenOptions::new();
                o.read(true).write(true);
                if direct {
                    o.custom_flags(libc::O_DIRECT);
                }
                o.open(p).map_err(|e| ERR.io("open", p, e))
            })
            .collect()
    }

    /// Removes every file that exists; reports the first failure other than "not found".
    fn remove_all(&self) -> Result<(), EngineError> {
        let mut first = None;
        for p in &self.paths {
            match std::fs::remove_file(p) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    first.get_or_insert_with(|| ERR.io("unlink", p, e));
                }
            }
        }
        first.map_or(Ok(()), Err)
    }
}

// ---------------------------------------------------------------------------------------------
// The worker.
// ---------------------------------------------------------------------------------------------

/// A buffer aligned to [`DIRECT_ALIGN`] (O_DIRECT needs the alignment), allocated once.
fn aligned_buf(len: usize) -> Result<AlignedBuf, EngineError> {
    AlignedBuf::zeroed(len, DIRECT_ALIGN).map_err(|e| EngineError::Invalid(format!("buffer of {len} bytes: {e}")))
}

/// What one worker did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Read requests.
    pub reads: u64,
    /// Write requests.
    pub writes: u64,
    /// fsync calls (periodic and at the end).
    pub fsyncs: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
}

impl Counters {
    fn add(&mut self, o: &Counters) {
        self.reads += o.reads;
        self.writes += o.writes;
        self.fsyncs += o.fsyncs;
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
    }
}

/// One request: which file, where, read or write.
#[derive(Clone, Copy, Debug, Default)]
struct Request {
    file: usize,
    pos: u64,
    write: bool,
}

/// One thread of the fileio phase; see the module documentation for the schedule.
struct FileWorker<'a> {
    files: &'a [File],
    paths: &'a [PathBuf],
    mode: FileioMode,
    io: IoMode,
    /// Files in the set (the null engine opens none, but draws requests over all of them).
    nfiles: usize,
    buf: AlignedBuf,
    block: u64,
    blocks_per_file: u64,
    total_blocks: u64,
    rng: SmallRng,
    /// Shared block cursor of the sequential modes.
    cursor: &'a AtomicU64,
    /// Global request limit of the sequential modes (`u64::MAX` = none).
    seq_limit: u64,
    /// Requests this worker may still issue (random modes; `u64::MAX` = none).
    left: u64,
    rw_ratio: f64,
    /// Own requests between fsync cycles (0 = never).
    fsync_interval: u64,
    fsync_end: bool,
    /// Requests issued (reads + writes), drives the fsync schedule.
    reqs: u64,
    /// Reads and writes issued (rndrw keeps its ratio on these; with io_uring they run ahead
    /// of the completed ones in `counters`).
    issued_reads: u64,
    issued_writes: u64,
    /// Writes since the last completed fsync cycle.
    dirty: bool,
    /// Next file to fsync in the current cycle.
    fsync_next: usize,
    counters: Counters,
    /// The ring of `io = "io_uring"`.
    ring: Option<Uring>,
}

impl<'a> FileWorker<'a> {
    fn new(
        spec: &FileioSpec,
        set: &'a FileSet,
        files: &'a [File],
        cursor: &'a AtomicU64,
        index: usize,
        left: u64,
    ) -> Result<FileWorker<'a>, EngineError> {
        let block = spec.block_size.get();
        let mut rng = SmallRng::seed_from_u64(spec.seed.wrapping_add(index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let (buf, ring) = if spec.io == IoMode::IoUring {
            (aligned_buf(0)?, Some(Uring::new(spec, files, &mut rng)?))
        } else {
            let mut buf = aligned_buf(block as usize)?;
            if spec.data == Fill::Random {
                rng.fill_bytes(buf.as_mut_slice());
            }
            (buf, None)
        };
        let blocks_per_file = spec.blocks_per_file();
        Ok(FileWorker {
            files,
            paths: &set.paths,
            mode: spec.mode,
            io: spec.io,
            nfiles: spec.files as usize,
            buf,
            block,
            blocks_per_file,
            total_blocks: blocks_per_file * u64::from(spec.files),
            rng,
            cursor,
            seq_limit: if spec.requests == 0 { u64::MAX } else { spec.requests },
            left,
            rw_ratio: spec.rw_ratio,
            fsync_interval: u64::from(spec.fsync_freq) * u64::from(spec.threads),
            fsync_end: spec.fsync_end,
            reqs: 0,
            issued_reads: 0,
            issued_writes: 0,
            dirty: false,
            fsync_next: 0,
            counters: Counters::default(),
            ring,
        })
    }

    #[cold]
    fn err(&self, op: &str, file: usize, e: io::Error) -> EngineError {
        ERR.io(op, &self.paths[file], e)
    }

    /// fsyncs one file (counted, no system call with the null engine).
    fn fsync(&mut self, file: usize) -> Result<(), EngineError> {
        if self.io != IoMode::Null {
            if let Err(e) = self.files[file].sync_all() {
                return Err(self.err("fsync", file, e));
            }
        }
        self.counters.fsyncs += 1;
        Ok(())
    }

    /// No requests left to issue (checked before an fsync cycle: the end-of-test fsyncs cover
    /// what a due cycle would).
    #[inline]
    fn exhausted(&self) -> bool {
        if self.mode.sequential() {
            self.cursor.load(Ordering::Relaxed) >= self.seq_limit
        } else {
            self.left == 0
        }
    }

    /// An fsync cycle is in progress or due.
    #[inline]
    fn fsync_due(&self) -> bool {
        self.fsync_interval != 0 && self.dirty && self.reqs % self.fsync_interval == 0
    }

    /// fsyncs the next file of the current cycle (one operation).
    fn fsync_step(&mut self) -> Result<Step, EngineError> {
        let f = self.fsync_next;
        self.fsync(f)?;
        self.fsync_next += 1;
        if self.fsync_next == self.nfiles {
            self.fsync_next = 0;
            self.dirty = false;
        }
        Ok(Step::Op)
    }

    /// Draws the next request, or `None` when this worker has none left.
    #[inline]
    fn next_request(&mut self) -> Option<Request> {
        let (block_index, write) = if self.mode.sequential() {
            let k = self.cursor.fetch_add(1, Ordering::Relaxed);
            if k >= self.seq_limit {
                return None;
            }
            (k % self.total_blocks, self.mode != FileioMode::Seqrd)
        } else {
            if self.left == 0 {
                return None;
            }
            if self.left != u64::MAX {
                self.left -= 1;
            }
            let write = match self.mode {
                FileioMode::Rndwr => true,
                FileioMode::Rndrw => {
                    (self.issued_reads as f64 + 1.0) / (self.issued_writes as f64 + 1.0) >= self.rw_ratio
                }
                _ => false,
            };
            (self.rng.gen_range(0..self.total_blocks), write)
        };
        if write {
            self.issued_writes += 1;
            self.dirty = true;
        } else {
            self.issued_reads += 1;
        }
        self.reqs += 1;
        Some(Request {
            file: (block_index / self.blocks_per_file) as usize,
            pos: (block_index % self.blocks_per_file) * self.block,
            write,
        })
    }

    #[inline]
    fn count(&mut self, write: bool) {
        if write {
            self.counters.writes += 1;
            self.counters.write_bytes += self.block;
        } else {
            self.counters.reads += 1;
            self.counters.read_bytes += self.block;
        }
    }

    /// One operation with pread/pwrite (or none, for the null engine).
    #[inline]
    fn op_sync(&mut self) -> Result<Step, EngineError> {
        if self.exhausted() {
            return Ok(Step::Done);
        }
        if self.fsync_due() {
            return self.fsync_step();
        }
        let Some(r) = self.next_request() else {
            return Ok(Step::Done);
        };
        let done = match (self.io, r.write) {
            // Everything but the system call: keep the request's arithmetic alive.
            (IoMode::Null, _) => {
                std::hint::black_box((r.file, r.pos, self.buf.as_slice().as_ptr()));
                Ok(())
            }
            (IoMode::Atomic, true) => sysio::pwrite_atomic(&self.files[r.file], self.buf.as_slice(), r.pos)
                .map_err(|e| ("pwritev2 RWF_ATOMIC", e)),
            (IoMode::Uncached, true) => {
                sysio::pwrite_all_flags(&self.files[r.file], self.buf.as_slice(), r.pos, sysio::RWF_DONTCACHE)
                    .map_err(|e| ("pwritev2 RWF_DONTCACHE", e))
            }
            (IoMode::Uncached, false) => sysio::pread_exact_flags(
                &self.files[r.file],
                self.buf.as_mut_slice(),
                r.pos,
                sysio::RWF_DONTCACHE,
            )
            .map_err(|e| ("preadv2 RWF_DONTCACHE", e)),
            (_, true) => self.files[r.file]
                .write_all_at(self.buf.as_slice(), r.pos)
                .map_err(|e| ("pwrite", e)),
            (_, false) => self.files[r.file]
                .read_exact_at(self.buf.as_mut_slice(), r.pos)
                .map_err(|e| ("pread", e)),
        };
        if let Err((op, e)) = done {
            return Err(self.err(op, r.file, e));
        }
        self.count(r.write);
        Ok(Step::Op)
    }

    /// One operation with io_uring: tops the ring up to its depth, then completes one request
    /// (or, during an fsync cycle, drains the ring and fsyncs one file).
    fn op_uring(&mut self) -> Result<Step, EngineError> {
        if self.fsync_due() {
            if self.ring.as_ref().is_some_and(|u| u.inflight > 0) {
                return self.complete_one();
            }
            if self.exhausted() {
                return Ok(Step::Done);
            }
            return self.fsync_step();
        }
        loop {
            let room = self.ring.as_ref().is_some_and(|u| u.has_room());
            if !room || self.exhausted() {
                break;
            }
            let Some(r) = self.next_request() else { break };
            if let Some(u) = self.ring.as_mut() {
                u.push(r)?;
            }
            if self.fsync_due() {
                break;
            }
        }
        if self.ring.as_ref().is_some_and(|u| u.inflight > 0) {
            self.complete_one()
        } else if self.fsync_due() && !self.exhausted() {
            self.fsync_step()
        } else {
            Ok(Step::Done)
        }
    }

    fn complete_one(&mut self) -> Result<Step, EngineError> {
        let Some(u) = self.ring.as_mut() else {
            return Ok(Step::Done);
        };
        let (r, res) = u.complete_one().map_err(|e| EngineError::io("io_uring_enter", e))?;
        let op = if r.write {
            "pwrite (io_uring)"
        } else {
            "pread (io_uring)"
        };
        match res {
            Ok(n) if n as u64 == self.block => {}
            Ok(n) => {
                let e = io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("short transfer: {n} of {} bytes", self.block),
                );
                return Err(self.err(op, r.file, e));
            }
            Err(e) => return Err(self.err(op, r.file, e)),
        }
        self.count(r.write);
        Ok(Step::Op)
    }
}

impl Worker for FileWorker<'_> {
    type Output = Counters;

    #[inline]
    fn op(&mut self) -> Result<Step, EngineError> {
        if self.ring.is_some() {
            self.op_uring()
        } else {
            self.op_sync()
        }
    }

    fn end(&mut self) -> Result<(), EngineError> {
        // Requests still in flight when the deadline passed complete here, uncounted.
        if let Some(u) = self.ring.as_mut() {
            u.drain().map_err(|e| EngineError::io("io_uring_enter", e))?;
        }
        if self.fsync_end && self.mode.writes() {
            for f in 0..self.nfiles {
                self.fsync(f)?;
            }
        }
        Ok(())
    }

    fn finish(self) -> Counters {
        self.counters
    }
}

// ---------------------------------------------------------------------------------------------
// io_uring.
// ---------------------------------------------------------------------------------------------

/// One worker's ring: `depth` slots, each with its own block of one aligned buffer (allocated
/// and, where the kernel allows, registered once), the worker's files registered with the ring.
///
/// Timing: the pool reads the clock once per [`Worker::op`], and each op completes exactly one
/// request, so ops/s is completions per second. The latency recorded is the time from the
/// previous completion to this one: with `iodepth = 1` that is the request's latency; with a
/// deeper queue it is the interval between completions, and the mean completion latency is
/// about `iodepth` times its mean (Little's law). Reading the clock at each submission as well
/// would give fio's `clat`, at the price of a second clock read per request.
struct Uring {
    ring: io_uring::IoUring,
    /// Slot buffers; `None` once leaked (a ring that could not be drained keeps it forever).
    buf: Option<AlignedBuf>,
    block: usize,
    /// What each slot's request is, for its completion.
    slots: Vec<Request>,
    /// Free slots (a stack, preallocated to `depth`).
    free: Vec<u32>,
    inflight: u32,
    /// Buffers registered with the ring (ReadFixed/WriteFixed).
    fixed_buf: bool,
    /// Queued requests submitted without waiting once this many are queued.
    batch: usize,
}

impl Uring {
    fn new(spec: &FileioSpec, files: &[File], rng: &mut SmallRng) -> Result<Uring, EngineError> {
        use std::os::fd::AsRawFd;
        let depth = spec.iodepth;
        let block = spec.block_size.get() as usize;
        let setup = |e: io::Error| {
            match e.raw_os_error() {
            Some(libc::ENOSYS) | Some(libc::EPERM) => EngineError::Unavailable(format!(
                "io_uring is not available here ({e}): check the sysctl kernel.io_uring_disabled, or use io = \"buffered\""
            )),
            _ => EngineError::io("io_uring_setup", e),
        }
        };
        // No IPI to run completion work (5.19+), or a plain ring. (Not SINGLE_ISSUER: the ring
        // is made on the calling thread and used on the worker's.)
        let ring = match io_uring::IoUring::builder().setup_coop_taskrun().build(depth) {
            Ok(r) => r,
            Err(_) => io_uring::IoUring::new(depth).map_err(setup)?,
        };
        let mut buf = aligned_buf(block * depth as usize)?;
        if spec.data == Fill::Random {
            rng.fill_bytes(buf.as_mut_slice());
        }
        let fds: Vec<i32> = files.iter().map(|f| f.as_raw_fd()).collect();
        ring.submitter()
            .register_files(&fds)
            .map_err(|e| EngineError::io("io_uring register files", e))?;
        let iov = libc::iovec {
            iov_base: buf.as_mut_slice().as_mut_ptr().cast(),
            iov_len: buf.as_slice().len(),
        };
        // SAFETY: the buffer outlives the ring's use of it: `Drop` drains the ring before the
        // buffer is freed, and leaks the buffer if it cannot.
        let fixed_buf = unsafe { ring.submitter().register_buffers(&[iov]) }.is_ok();
        Ok(Uring {
            ring,
            buf: Some(buf),
            block,
            slots: vec![Request::default(); depth as usize],
            free: (0..depth).rev().collect(),
            inflight: 0,
            fixed_buf,
            batch: (depth as usize / 4).max(1),
        })
    }

    #[inline]
    fn has_room(&self) -> bool {
        !self.free.is_empty()
    }

    /// Queues `r` in a free slot (submitted by the next `complete_one`).
    fn push(&mut self, r: Request) -> Result<(), EngineError> {
        use io_uring::{opcode, types};
        let Some(slot) = self.free.pop() else {
            return Err(EngineError::Invalid("io_uring: no free slot".into()));
        };
        let Some(buf) = self.buf.as_mut() else {
            return Err(EngineError::Invalid("io_uring: buffer gone".into()));
        };
        // SAFETY: slot < depth, so the block lies inside the buffer.
        let ptr = unsafe { buf.as_mut_slice().as_mut_ptr().add(slot as usize * self.block) };
        let fd = types::Fixed(r.file as u32);
        let len = self.block as u32;
        let entry = match (r.write, self.fixed_buf) {
            (false, true) => opcode::ReadFixed::new(fd, ptr, len, 0).offset(r.pos).build(),
            (false, false) => opcode::Read::new(fd, ptr, len).offset(r.pos).build(),
            (true, true) => opcode::WriteFixed::new(fd, ptr, len, 0).offset(r.pos).build(),
            (true, false) => opcode::Write::new(fd, ptr, len).offset(r.pos).build(),
        }
        .user_data(u64::from(slot));
        self.slots[slot as usize] = r;
        // SAFETY: the entry points into `buf`, which stays alive and untouched by us until the
        // slot's completion is reaped (or the ring is drained in `Drop`).
        while unsafe { self.ring.submission().push(&entry) }.is_err() {
            // The submission queue is full (cannot happen with depth entries, but be safe).
            self.ring.submit().map_err(|e| EngineError::io("io_uring_enter", e))?;
        }
        self.inflight += 1;
        Ok(())
    }

    /// Submits what is queued and reaps one completion: its request and result.
    fn complete_one(&mut self) -> io::Result<(Request, io::Result<u32>)> {
        loop {
            let cqe = self.ring.completion().next();
            if let Some(cqe) = cqe {
                // Submit what was queued since, without waiting, once it is a batch (a quarter
                // of the depth): one system call per completion would cost more than the
                // request on a fast filesystem. A queue that runs dry submits below.
                if self.ring.submission().len() >= self.batch {
                    self.enter(0)?;
                }
                let slot = cqe.user_data() as u32;
                self.free.push(slot);
                self.inflight -= 1;
                let res = cqe.result();
                let r = self.slots[slot as usize];
                let res = if res < 0 {
                    Err(io::Error::from_raw_os_error(-res))
                } else {
                    Ok(res as u32)
                };
                return Ok((r, res));
            }
            self.enter(1)?;
        }
    }

    /// Submits and waits for `want` completions, retrying on EINTR.
    fn enter(&mut self, want: usize) -> io::Result<()> {
        loop {
            match self.ring.submit_and_wait(want) {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && want == 0 => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// Waits until nothing is in flight (results are dropped).
    fn drain(&mut self) -> io::Result<()> {
        while self.inflight > 0 {
            let _dropped = self.complete_one()?;
        }
        Ok(())
    }
}

impl Drop for Uring {
    fn drop(&mut self) {
        if self.drain().is_err() {
            // The kernel may still write into the buffer: never free it.
            std::mem::forget(self.buf.take());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny(mode: FileioMode) -> FileioSpec {
        FileioSpec {
            mode,
            files: 4,
            total_size: Bytes(4 * Bytes::MIB),
            block_size: Bytes(16 * Bytes::KIB),
            time: Dur(Duration::ZERO),
            requests: 1000,
            ..FileioSpec::default()
        }
    }

    fn metric(s: &RawSample, name: &str) -> Option<f64> {
        s.phases[0]
            .metrics
            .iter()
            .find(|(m, _)| m.name == name)
            .map(|(_, v)| *v)
    }

    /// (syscr, syscw, rchar, wchar) of this thread (/proc/thread-self/io): the kernel's count
    /// of read and write system calls and their bytes, independent of fsbench's counters.
    fn thread_io() -> (u64, u64, u64, u64) {
        let text = std::fs::read_to_string("/proc/thread-self/io").expect("/proc/thread-self/io");
        let get = |k: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(k))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| panic!("{k} in {text}"))
        };
        (get("syscr:"), get("syscw:"), get("rchar:"), get("wchar:"))
    }

    #[test]
    fn every_mode_runs_reports_its_metrics_and_cleans_up() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        for mode in [
            FileioMode::Seqwr,
            FileioMode::Seqrewr,
            FileioMode::Seqrd,
            FileioMode::Rndrd,
            FileioMode::Rndwr,
            FileioMode::Rndrw,
        ] {
            let spec = tiny(mode);
            let io0 = thread_io();
            let s = crate::run_quiet(&spec, tmp.path(), &flag).expect("run");
            let io1 = thread_io();
            assert_eq!(s.phases.len(), 1);
            assert_eq!(s.phases[0].phase, mode.name());
            let secs = s.phases[0].wall.as_secs_f64();
            let reads = metric(&s, "reads_per_s").unwrap_or(0.0) * secs;
            let writes = metric(&s, "writes_per_s").unwrap_or(0.0) * secs;
            // Exactly `requests` reads + writes, whatever the mode, as the kernel counted the
            // bytes of this thread's read and write calls (one worker runs inline): 16 KiB per
            // request, plus the 4 files of 1 MiB laid out first by every mode but seqwr, plus
            // under 16 KiB of /proc reads by the CPU meter.
            let block = 16 * 1024;
            let kernel_reads = (io1.2 - io0.2) / block;
            let laid_out = if mode == FileioMode::Seqwr { 0 } else { 4 * Bytes::MIB };
            let kernel_writes = (io1.3 - io0.3 - laid_out) / block;
            assert_eq!(kernel_reads + kernel_writes, 1000, "{mode:?}");
            assert!(
                (reads - kernel_reads as f64).abs() < 0.5,
                "{mode:?}: {reads} vs {kernel_reads}"
            );
            assert!(
                (writes - kernel_writes as f64).abs() < 0.5,
                "{mode:?}: {writes} vs {kernel_writes}"
            );
            assert_eq!(metric(&s, "reads_per_s").is_some(), mode.reads(), "{mode:?}");
            assert_eq!(metric(&s, "fsyncs_per_s").is_some(), mode.writes(), "{mode:?}");
            if let Some(mib) = metric(&s, "read_mib_s") {
                let per_s = metric(&s, "reads_per_s").expect("reads");
                assert!((mib - per_s * 16.0 / 1024.0).abs() < 1e-6 * mib.max(1.0));
            }
            if mode.writes() {
                // 1000 requests: a cycle of 4 fsyncs after requests 100, 200, … 900, and the
                // 4 end-of-test fsyncs instead of a cycle after the last request.
                let fsyncs = metric(&s, "fsyncs_per_s").expect("fsyncs") * secs;
                assert!((fsyncs - 40.0).abs() < 0.5, "{mode:?}: {fsyncs}");
            }
            assert!(s.phases[0].metrics.iter().any(|(m, _)| m.name == "lat_p999"));
            assert!(s.phases[0].metrics.iter().all(|(_, v)| v.is_finite() && *v >= 0.0));
            assert!(crate::dir_is_empty(tmp.path()), "{mode:?} left files");
        }
    }

    #[test]
    fn fadvise_is_left_out_of_the_spec_when_normal_and_every_advice_runs() {
        // `normal` is not serialised, so case ids of existing suites stay as they were.
        let json = serde_json::to_string(&tiny(FileioMode::Rndrd)).expect("json");
        assert!(!json.contains("fadvise"), "{json}");
        let spec: FileioSpec = toml::from_str("mode = \"rndrd\"\nfadvise = \"random\"").expect("toml");
        assert_eq!(spec.fadvise, Fadvise::Random);
        assert!(serde_json::to_string(&spec)
            .expect("json")
            .contains("\"fadvise\":\"random\""));
        assert!(spec.describe().contains("fadvise random"), "{}", spec.describe());
        assert!(toml::from_str::<FileioSpec>("fadvise = \"willneed\"").is_err());
        assert_eq!(
            Fadvise::Fio.advice(FileioMode::Seqrd),
            Some(rustix::fs::Advice::Sequential)
        );
        assert_eq!(Fadvise::Fio.advice(FileioMode::Rndrd), Some(rustix::fs::Advice::Random));
        assert_eq!(Fadvise::Normal.advice(FileioMode::Rndrd), None);
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        for fadvise in [Fadvise::Random, Fadvise::Sequential, Fadvise::Fio] {
            let spec = FileioSpec {
                fadvise,
                requests: 200,
                ..tiny(FileioMode::Rndrd)
            };
            let s = crate::run_quiet(&spec, tmp.path(), &flag).expect("run");
            assert!(metric(&s, "reads_per_s").expect("reads") > 0.0);
        }
    }

    #[test]
    fn rndrw_keeps_the_read_write_ratio() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let spec = FileioSpec {
            requests: 5000,
            fsync_freq: 0,
            ..tiny(FileioMode::Rndrw)
        };
        let s = crate::run_quiet(&spec, tmp.path(), &flag).expect("run");
        let r = metric(&s, "reads_per_s").expect("reads");
        let w = metric(&s, "writes_per_s").expect("writes");
        assert!((r / w - 1.5).abs() < 0.01, "{r} / {w}");
        // fsync_freq = 0: only the end-of-test fsyncs.
        let fsyncs = metric(&s, "fsyncs_per_s").expect("fsyncs") * s.phases[0].wall.as_secs_f64();
        assert!((fsyncs - 4.0).abs() < 0.5, "{fsyncs}");
    }

    #[test]
    fn sequential_cursor_walks_files_in_order_with_threads() {
        // seqwr with 2 threads and exactly one pass over the files: every file ends full.
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let spec = FileioSpec {
            threads: 2,
            requests: 4 * 64, // 4 files of 1 MiB in 16 KiB blocks
            ..tiny(FileioMode::Seqwr)
        };
        let set = FileSet::new(tmp.path(), spec.files);
        let ctx = RunContext::quiet(tmp.path(), &flag);
        let s = spec.run_on(&set, true, false, &ctx).expect("run");
        for p in &set.paths {
            assert_eq!(std::fs::metadata(p).expect("file").len(), Bytes::MIB, "{}", p.display());
        }
        let writes = metric(&s, "writes_per_s").expect("writes") * s.phases[0].wall.as_secs_f64();
        assert!((writes - 256.0).abs() < 0.5);
        set.remove_all().expect("remove");
    }

    /// `io = "uncached"`: parsed and described; on /var/tmp (ext4 here, which has
    /// RWF_DONTCACHE) one pass of new writes runs through preadv2/pwritev2 with the flag (the
    /// kernel counts one write call per request) and the page cache gains nothing of the file;
    /// on tmpfs (/dev/shm), which refuses the flag, the run is unavailable with what to use.
    #[test]
    fn uncached_io_runs_where_the_filesystem_has_it_and_is_unavailable_where_not() {
        let spec: FileioSpec = toml::from_str("mode = \"seqwr\"\nio = \"uncached\"").expect("toml");
        assert_eq!(spec.io, IoMode::Uncached);
        assert!(
            spec.describe().contains("uncached (RWF_DONTCACHE)"),
            "{}",
            spec.describe()
        );
        let flag = AtomicBool::new(false);
        let spec = FileioSpec {
            files: 1,
            total_size: Bytes(8 * Bytes::MIB),
            block_size: Bytes(Bytes::MIB),
            requests: 8,
            fsync_freq: 0,
            io: IoMode::Uncached,
            ..tiny(FileioMode::Seqwr)
        };
        let tmp = tempfile::tempdir_in("/var/tmp").expect("tempdir");
        let before = thread_io();
        let s = crate::run_quiet(&spec, tmp.path(), &flag).expect("uncached on ext4");
        let after = thread_io();
        assert!(after.1 - before.1 >= 8, "{before:?} {after:?}");
        assert_eq!(metric(&s, "cached_mib"), Some(0.0), "{:?}", s.phases[0].metrics);
        assert!(!s.notes.iter().any(|n| n.contains("no caching")), "{:?}", s.notes);
        let shm = tempfile::tempdir_in("/dev/shm").expect("tempdir on tmpfs");
        match crate::run_quiet(&spec, shm.path(), &flag) {
            Err(EngineError::Unavailable(m)) => {
                assert!(m.contains("RWF_DONTCACHE") && m.contains("io = \"buffered\""), "{m}")
            }
            other => panic!("tmpfs took RWF_DONTCACHE: {other:?}"),
        }
    }

    /// `io = "atomic"`: parsed and described; a block that is no power of two and a mode that
    /// only reads are refused by `validate`; on /var/tmp (ext4 on a disk without atomic write
    /// units here) and on tmpfs (which reports none) the run is unavailable with what to use.
    #[test]
    fn atomic_writes_are_checked_against_what_the_filesystem_reports() {
        let spec: FileioSpec = toml::from_str("mode = \"rndwr\"\nio = \"atomic\"").expect("toml");
        assert_eq!(spec.io, IoMode::Atomic);
        assert!(
            spec.describe().contains("atomic writes (RWF_ATOMIC)"),
            "{}",
            spec.describe()
        );
        let bad = FileioSpec {
            block_size: Bytes(12 * Bytes::KIB),
            io: IoMode::Atomic,
            ..tiny(FileioMode::Rndwr)
        };
        assert!(bad.validate().unwrap_err().0.contains("power of two"));
        let reads = FileioSpec {
            io: IoMode::Atomic,
            ..tiny(FileioMode::Rndrd)
        };
        assert!(reads.validate().unwrap_err().0.contains("only reads"));
        // Rewrites in place take their space again: out of place, as copy-on-write.
        let direct = FileioSpec {
            io: IoMode::Direct,
            ..tiny(FileioMode::Rndwr)
        };
        let atomic = FileioSpec {
            io: IoMode::Atomic,
            ..tiny(FileioMode::Rndwr)
        };
        let (d, a) = (direct.footprint(), atomic.footprint());
        assert_eq!(a.extra_bytes, d.extra_bytes + d.rewrite_bytes);
        assert!(d.rewrite_bytes > 0);
        let flag = AtomicBool::new(false);
        let spec = FileioSpec {
            io: IoMode::Atomic,
            block_size: Bytes(64 * Bytes::KIB),
            ..tiny(FileioMode::Rndwr)
        };
        for dir in ["/var/tmp", "/dev/shm"] {
            let tmp = tempfile::tempdir_in(dir).expect("tempdir");
            match crate::run_quiet(&spec, tmp.path(), &flag) {
                Err(EngineError::Unavailable(m)) => {
                    assert!(
                        m.contains("io = \"atomic\"") && m.contains("use io = \"direct\" here"),
                        "{dir}: {m}"
                    )
                }
                other => panic!("{dir}: atomic writes where statx reports none: {other:?}"),
            }
        }
    }

    #[test]
    fn time_bound_and_direct_io() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let spec = FileioSpec {
            time: Dur(Duration::from_millis(300)),
            requests: 0,
            io: IoMode::Direct,
            data: Fill::Random,
            threads: 2,
            ..tiny(FileioMode::Rndrw)
        };
        match crate::run_quiet(&spec, tmp.path(), &flag) {
            Ok(s) => {
                let wall = s.phases[0].wall;
                assert!(
                    wall >= Duration::from_millis(300) && wall < Duration::from_secs(20),
                    "{wall:?}"
                );
                assert!(metric(&s, "reads_per_s").expect("reads") > 0.0);
                assert!(s.notes.iter().any(|n| n.contains("too short")));
            }
            // A temp directory on a filesystem without O_DIRECT (old tmpfs) refuses the open.
            Err(EngineError::Io { what, source }) => {
                assert!(what.starts_with("open "), "{what}");
                assert_eq!(source.raw_os_error(), Some(libc::EINVAL));
            }
            Err(e) => panic!("{e}"),
        }
        assert!(crate::dir_is_empty(tmp.path()));
    }

    #[test]
    fn null_engine_counts_requests_without_files() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        for mode in [FileioMode::Rndrw, FileioMode::Seqwr, FileioMode::Rndrd] {
            let spec = FileioSpec {
                io: IoMode::Null,
                threads: 2,
                pin: true,
                ..tiny(mode)
            };
            let s = crate::run_quiet(&spec, tmp.path(), &flag).expect("run");
            let secs = s.phases[0].wall.as_secs_f64();
            let reads = metric(&s, "reads_per_s").unwrap_or(0.0) * secs;
            let writes = metric(&s, "writes_per_s").unwrap_or(0.0) * secs;
            assert!((reads + writes - 1000.0).abs() < 0.5, "{mode:?}: {reads} + {writes}");
            if mode.writes() {
                // The fsync schedule runs as with real I/O (each worker: a cycle every 200 of
                // its requests), without the system call.
                assert!(metric(&s, "fsyncs_per_s").expect("fsyncs") > 0.0);
            }
            assert!(crate::dir_is_empty(tmp.path()), "the null engine creates no file");
        }
    }

    #[test]
    fn io_uring_runs_every_mode_at_depth() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        for (mode, depth) in [
            (FileioMode::Rndrd, 8),
            (FileioMode::Rndwr, 4),
            (FileioMode::Rndrw, 1),
            (FileioMode::Seqwr, 16),
            (FileioMode::Seqrd, 3),
        ] {
            let spec = FileioSpec {
                io: IoMode::IoUring,
                iodepth: depth,
                data: Fill::Random,
                ..tiny(mode)
            };
            match crate::run_quiet(&spec, tmp.path(), &flag) {
                Ok(s) => {
                    let secs = s.phases[0].wall.as_secs_f64();
                    let reads = metric(&s, "reads_per_s").unwrap_or(0.0) * secs;
                    let writes = metric(&s, "writes_per_s").unwrap_or(0.0) * secs;
                    assert!((reads + writes - 1000.0).abs() < 0.5, "{mode:?}: {reads} + {writes}");
                    if mode.writes() {
                        let fsyncs = metric(&s, "fsyncs_per_s").expect("fsyncs") * secs;
                        assert!((fsyncs - 40.0).abs() < 0.5, "{mode:?}: {fsyncs}");
                    }
                }
                // A sandbox that forbids io_uring: reported, not a failure of the engine.
                Err(EngineError::Unavailable(m)) => skip_or_fail!("io_uring: {m}"),
                Err(e) => panic!("{mode:?}: {e}"),
            }
            assert!(crate::dir_is_empty(tmp.path()));
        }
        // A time-bound run stops with requests in flight and drains them.
        let spec = FileioSpec {
            io: IoMode::IoUring,
            iodepth: 32,
            time: Dur(Duration::from_millis(200)),
            requests: 0,
            threads: 2,
            ..tiny(FileioMode::Rndrw)
        };
        match crate::run_quiet(&spec, tmp.path(), &flag) {
            Ok(s) => assert!(metric(&s, "reads_per_s").expect("reads") > 0.0),
            Err(EngineError::Unavailable(m)) => skip_or_fail!("io_uring: {m}"),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn new_settings_keep_old_specs_serialised_as_before() {
        // Case ids hash the serialised spec: defaults of the newer settings must not show.
        let text = toml::to_string(&FileioSpec::default()).expect("ser");
        assert!(
            !text.contains("iodepth") && !text.contains("pin") && !text.contains("direct"),
            "{text}"
        );
        let t: FileioSpec = toml::from_str("io = \"io_uring\"\niodepth = 32\ndirect = true\npin = true").expect("spec");
        assert!(t.validate().is_ok());
        assert!(
            t.describe().contains("io_uring depth 32 O_DIRECT, pinned"),
            "{}",
            t.describe()
        );
        for bad in [
            "iodepth = 4",
            "io = \"io_uring\"\niodepth = 0",
            "direct = true",
            "io = \"null\"\ndirect = true",
        ] {
            let s: FileioSpec = toml::from_str(bad).expect("parses");
            assert!(s.validate().is_err(), "{bad}");
        }
    }

    #[test]
    fn interrupt_stops_and_cleans_up() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spec = FileioSpec {
            time: Dur(Duration::from_secs(600)),
            requests: 0,
            ..tiny(FileioMode::Rndrd)
        };
        let t0 = std::time::Instant::now();
        let r = crate::run_interrupted_after(&spec, tmp.path(), Duration::from_millis(200));
        assert!(matches!(r, Err(EngineError::Interrupted)), "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(10));
        assert!(crate::dir_is_empty(tmp.path()));
    }

    #[test]
    fn aligned_buffer_is_aligned_and_zeroed() {
        let mut b = aligned_buf(16384).expect("buf");
        assert_eq!(b.as_slice().as_ptr() as usize % DIRECT_ALIGN, 0);
        assert_eq!(b.as_slice().len(), 16384);
        assert!(b.as_slice().iter().all(|&x| x == 0));
        b.as_mut_slice()[5] = 7;
        assert_eq!(b.as_slice()[5], 7);
    }

    #[test]
    fn defaults_match_sysbench_and_parse() {
        let s: FileioSpec = toml::from_str("").expect("empty spec");
        assert_eq!(s, FileioSpec::default());
        assert_eq!(
            (s.files, s.total_size, s.block_size),
            (128, Bytes(2 * Bytes::GIB), Bytes(16384))
        );
        assert_eq!((s.fsync_freq, s.fsync_end, s.rw_ratio, s.threads), (100, true, 1.5, 1));
        assert_eq!(s.time, Dur(Duration::from_secs(10)));
        assert_eq!(s.file_size(), 16 * Bytes::MIB);
        assert!(s.validate().is_ok());
        let t: FileioSpec = toml::from_str(
            "mode = \"rndrd\"\nfiles = 8\ntotal_size = \"15GiB\"\nblock_size = \"4k\"\nio = \"direct\"\ntime = \"300s\"\nrequests = 10\nthreads = 4\ndata = \"random\"\nfsync_freq = 0\nfsync_end = false\nrw_ratio = 2.0\nseed = 3",
        )
        .expect("spec");
        assert_eq!(t.mode, FileioMode::Rndrd);
        assert_eq!(t.io, IoMode::Direct);
        assert_eq!(t.total_size, Bytes(15 * Bytes::GIB));
        assert!(t.validate().is_ok());
        let back: FileioSpec = toml::from_str(&toml::to_string(&t).expect("ser")).expect("reparse");
        assert_eq!(back, t);
        assert!(toml::from_str::<FileioSpec>("mode = \"rndrx\"").is_err());
        assert!(toml::from_str::<FileioSpec>("file_num = 3").is_err());
    }

    #[test]
    fn validation_and_scaling() {
        let ok = FileioSpec::default();
        for bad in [
            FileioSpec { files: 0, ..ok.clone() },
            FileioSpec {
                block_size: Bytes(0),
                ..ok.clone()
            },
            FileioSpec {
                total_size: Bytes(1000),
                ..ok.clone()
            },
            FileioSpec {
                io: IoMode::Direct,
                block_size: Bytes(1000),
                ..ok.clone()
            },
            FileioSpec {
                rw_ratio: f64::NAN,
                ..ok.clone()
            },
            FileioSpec {
                threads: 0,
                ..ok.clone()
            },
            FileioSpec {
                time: Dur(Duration::ZERO),
                requests: 0,
                ..ok.clone()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        let study = FileioSpec {
            total_size: Bytes(15 * Bytes::GIB),
            time: Dur(Duration::from_secs(300)),
            ..ok.clone()
        };
        let WorkloadKind::Fileio(s) = study.scaled(0.02) else {
            panic!("scaled to another kind")
        };
        assert_eq!(s.total_size, Bytes((15.0 * Bytes::GIB as f64 * 0.02) as u64));
        assert_eq!(s.time, Dur(Duration::from_secs(6)));
        let WorkloadKind::Fileio(t) = study.scaled(0.0001) else {
            panic!("scaled to another kind")
        };
        assert_eq!(t.time, Dur(MIN_SCALED_TIME));
        assert_eq!(t.total_size, Bytes(16 * Bytes::MIB));
        assert!(t.validate().is_ok());
        assert!(study.footprint().block_bytes >= 15 * Bytes::GIB);
        let d = study.describe();
        assert!(d.starts_with("fileio rndrw 128 files x 120MiB"), "{d}");
        assert!(d.contains("300s") && d.contains("fsync every 100"), "{d}");
    }
}
