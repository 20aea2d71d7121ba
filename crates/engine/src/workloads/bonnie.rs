//! The `bonnie` workload: bonnie++ 2.x's tests, run natively.
//!
//! References: bonnie++(8) and `/usr/share/doc/bonnie++/readme.html` (Debian package 2.00a),
//! and the bonnie++ 2.00a sources (`bonnie++.cpp`, `bon_io.cpp`, `bon_file.cpp`, `bonnie.h`),
//! read to match semantics; no code is taken from them. The phases, in order:
//!
//! | phase | bonnie++ column | what is timed |
//! |---|---|---|
//! | `seq_write_char` | Sequential Output Per Chr | `char_size` bytes written one byte at a time into a new file, then flush, fsync, close |
//! | `seq_write_block` | Sequential Output Block | the file recreated (untimed) and written in `chunk_size` writes, then fsync, close |
//! | `rewrite` | Rewrite | per chunk: read(2), dirty one byte, lseek(2) back, write(2); then fsync, close |
//! | `seq_read_char` | Sequential Input Per Chr | the first `char_size` bytes read one byte at a time |
//! | `seq_read_block` | Sequential Input Block | the file read in `chunk_size` reads |
//! | `random_seeks` | Random Seeks | `seekers` threads, each with its own descriptor, do `seeks` in total: lseek to a random chunk, read it, and for 10 % of them dirty a byte, lseek back, write it; each seeker fsyncs and closes at its end |
//! | `seq_create` | Sequential Create | `files` files created (`open(O_CREAT\|O_EXCL)`, data written, close) with names whose hexadecimal number comes first, i.e. in sorted order; then a filesystem sync |
//! | `seq_stat` | Sequential Read | every directory read with readdir(3); each entry stat(2)ed and, when not empty, its data read |
//! | `seq_delete` | Sequential Delete | readdir order; unlink(2) each entry, rmdir the directories; then a sync |
//! | `rand_create` | Random Create | as `seq_create` with names whose random characters come first, so they arrive in random order for the directory index |
//! | `rand_stat` | Random Read | stat (and read) every file in a shuffled order |
//! | `rand_delete` | Random Delete | unlink in another shuffled order, rmdir the directories; then a sync |
//!
//! Semantics kept from bonnie++ 2.00a:
//! - the close of every I/O phase fsyncs first (`CFileOp::Close`), inside the timed region; here
//!   that is what `fsync = true` (the default) means, and `fsync = false` leaves it out;
//! - the per-char phases use `char_size` bytes, not the whole file: bonnie++ 2 issues one
//!   `write(2)`/`read(2)` per byte and therefore limits them to `-f` MiB, default 3 MiB
//!   (`DefaultByteIO`, confirmed with strace: ≈3.16 M one-byte writes for `-s 64`);
//! - file creation and deletion phases end with `sync()` inside the timed region; here a
//!   `syncfs(2)` of the filesystem under test, so writeback of unrelated filesystems is not
//!   counted (and left out entirely with `fsync = false`);
//! - the block data is a zero-filled chunk with one byte changed per chunk (so it compresses
//!   well, as in bonnie++), per-char data is `i & 0x7f`;
//! - file names: 10 hexadecimal digits of the file number plus 0–12 random alphanumeric
//!   characters after (sequential) or before (random) them; with `dirs > 1` files are spread
//!   evenly over subdirectories `00000`, `00001`, … and addressed as `00003/name`;
//! - 10 % of the seeks rewrite their chunk (bonnie++'s `UpdateSeek`).
//!
//! Deliberate differences: `char_mode = "stdio"` (the default) reproduces bonnie++ 1.03's
//! putc()/getc() per-char phases instead of 2.x's syscall-per-byte (select `"syscall"` for the
//! latter); the random permutation is a uniform Fisher–Yates shuffle (bonnie++'s swap loop is
//! slightly biased); by default seeks are split evenly between seekers up front instead of
//! handed out through a pipe (`seek_dispatch = "pipe"` does the latter, module `seek`);
//! `file_size = 0` skips the I/O phases and `files = 0` the small-file phases, as bonnie++'s
//! `-s 0` and `-n 0`; `char_size = 0` skips the per-char phases as `-f` does.
//! `stat_passes` and `read_passes` (default 1, as bonnie++) repeat the stat phases and the
//! block read over the same files, each pass begun as a phase (caches dropped before it when the
//! run drops them per phase) and the phase timed whole ([`Phases::run_passes`]): a phase one
//! pass leaves under the minimum time reaches it without changing what one operation is.
//!
//! Engine rules kept: buffers, names, sizes and permutations are prepared before each timed
//! region; descriptors are opened outside it unless opening is the measured operation; the hot
//! loops allocate nothing and format nothing; every operation goes through the
//! [`crate::pool::WorkerPool`] (one clock read per operation, or per sampled one in the
//! small-file phases; interrupt polled per operation and every 1024 bytes inside a
//! syscall-per-byte chunk); everything created is removed at the end and on error or
//! interrupt, leaving the directory empty.
//!
//! Timed operations and latencies: in the per-char phases one timed operation is one
//! `chunk_size` batch of bytes (8192 one-byte calls at the default chunk, in either char mode),
//! so the clock is read and the histogram written once per batch, not per byte, and their
//! `lat_p50`/`lat_p99`/`lat_max` and histograms are the latency of a batch of `chunk_size`
//! one-byte operations. The per-byte cost is the system call's: in syscall mode one
//! pwrite(2)/pread(2) per byte (`put_bytes`, `get_bytes`: write(2)/read(2) of a
//! multithreaded process take the descriptor's `f_pos` mutex per call, which single-threaded
//! bonnie++ does not), measured with the stored CPU of `seq_write_char`/`seq_read_char` against
//! bonnie++ 2.00a's in the same runs at 1.09 / 1.14 × its CPU per byte written / read (1.14 /
//! 1.23 with write/read; doc/verify.md). In the block, rewrite and seek phases an operation is
//! one chunk; in the small-file phases one file.
//!
//! The small-file phases sample their latencies ([`Sampling::Auto`], `FILE_PHASES`): a file
//! takes about 1 µs on tmpfs, where timing each one (clock read and histogram record, 20–30
//! ns) alone kept the phases at 0.94–0.97 of a plain C loop (bench/README.md); the pool then
//! times one file in N (N from its first 1024 files, so that timing costs about 0.5 % at most; N = 1
//! where a file takes long enough) and counts every file. Their rows `lat_sample_every` and
//! `lat_samples` say which N and how many were timed; rates count every file.

use crate::fstype::Footprint;
use crate::metric::{MetricId, RawSample, Unit};
use crate::phase::{Caches, LatencySet, Phases, Policy, Short, MIN_TIME};
use crate::pool::{Sampling, Step, Worker};
use crate::sysio;
use crate::units::Bytes;
use crate::Invalid;
use crate::{EngineError, ErrHint, RunContext, Workload, WorkloadKind};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rustix::fs::{AtFlags, Mode, OFlags};
use serde::{Deserialize, Serialize};
use std::ffi::CStr;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

mod seek;
pub use seek::SeekDispatch;
use seek::Tickets;

/// Phase: one-byte writes.
pub const SEQ_WRITE_CHAR: &str = "seq_write_char";
/// Phase: chunk-sized writes.
pub const SEQ_WRITE_BLOCK: &str = "seq_write_block";
/// Phase: read, dirty, seek back, write each chunk.
pub const REWRITE: &str = "rewrite";
/// Phase: one-byte reads.
pub const SEQ_READ_CHAR: &str = "seq_read_char";
/// Phase: chunk-sized reads.
pub const SEQ_READ_BLOCK: &str = "seq_read_block";
/// Phase: parallel random chunk reads, 10 % rewritten.
pub const RANDOM_SEEKS: &str = "random_seeks";
/// Phase: create files, names in sorted order.
pub const SEQ_CREATE: &str = "seq_create";
/// Phase: stat (and read) files in readdir order (bonnie++ "Sequential Read").
pub const SEQ_STAT: &str = "seq_stat";
/// Phase: delete files in readdir order.
pub const SEQ_DELETE: &str = "seq_delete";
/// Phase: create files, names in random order.
pub const RAND_CREATE: &str = "rand_create";
/// Phase: stat (and read) files in random order (bonnie++ "Random Read").
pub const RAND_STAT: &str = "rand_stat";
/// Phase: delete files in random order.
pub const RAND_DELETE: &str = "rand_delete";

/// Per-char byte count for `char_mode = "syscall"` when `char_size` is not set: 3 MiB, bonnie++
/// 2.00a's `DefaultByteIO`.
pub const SYSCALL_CHAR_SIZE_DEFAULT: u64 = 3 * Bytes::MIB;
/// bonnie++'s `UpdateSeek`: one seek in this many rewrites its chunk.
pub const UPDATE_SEEK: u64 = 10;
/// Longest random part of a file name (bonnie++'s `RandExtraLen`).
const RAND_EXTRA_LEN: usize = 12;
/// bonnie++'s alphabet for the random part of file names.
const RAND_CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
/// Name of the large file in the run directory.
const IO_FILE: &str = "bonnie.data";
/// Name of the small-file test directory in the run directory.
const FILES_DIR: &CStr = c"bonnie.files";
/// Mode of the test directory and its subdirectories (umask applied), as bonnie++.
const DIR_MODE: Mode = Mode::from_raw_mode(0o700);
/// Mode of the small files (umask applied), as bonnie++.
const FILE_MODE: Mode = Mode::from_raw_mode(0o600);
/// Flags of a small file's creation.
const CREATE_FLAGS: OFlags = OFlags::CREATE
    .union(OFlags::EXCL)
    .union(OFlags::WRONLY)
    .union(OFlags::CLOEXEC);
/// Flags of a directory opened for *at() calls or readdir.
const DIR_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);
/// Every phase: caches dropped if asked, the median, p99 and maximum latency, and a note
/// below [`MIN_TIME`] (where bonnie++ prints `+++++`).
const POLICY: Policy = Policy::new().latency(LatencySet::Core).short(Short::Each {
    limit: MIN_TIME,
    prefix: "",
    aside: " (where bonnie++ prints +++++)",
    raise: "its size",
});
/// The small-file phases, whose operations are short (about 1 µs on tmpfs): their latencies
/// are sampled ([`Sampling::Auto`]: every operation stays timed where one takes long enough
/// for the clock not to matter).
pub const FILE_PHASES: [&str; 6] = [SEQ_CREATE, SEQ_STAT, SEQ_DELETE, RAND_CREATE, RAND_STAT, RAND_DELETE];
/// Errors of a full filesystem say what to change.
const ERR: ErrHint = ErrHint("lower file_size, files or file_max_size, or use a larger target");
/// Largest accepted `chunk_size`.
const MAX_CHUNK: u64 = Bytes::GIB;
/// Most subdirectories (bonnie++ names them with five digits).
const MAX_DIRS: u32 = 99_999;
/// Most passes of a stat or block-read phase (`stat_passes`, `read_passes`).
const MAX_PASSES: u32 = 64;

/// How the per-char phases issue their one-byte operations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CharMode {
    /// Through a userspace buffer of the file's `st_blksize` bytes, one non-inlined call per
    /// byte and one write(2)/read(2) per full buffer, like bonnie++ 1.03's putc()/getc()
    /// (glibc sizes stdio buffers from `st_blksize`).
    #[default]
    Stdio,
    /// One system call per byte, as bonnie++ 2.x does (pwrite(2)/pread(2) at the byte's offset
    /// where bonnie++ calls write(2)/read(2): the same work, without the `f_pos` lock of a
    /// multithreaded process; see `put_bytes`).
    Syscall,
}

/// Parameters of the bonnie workload. Sizes take `k`/`M`/`G` suffixes (binary).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BonnieSpec {
    /// Size of the file of the I/O phases, bytes (bonnie++ `-s`), rounded down to whole
    /// chunks. Default 512 MiB. `0` skips the six I/O phases (like `-s 0`).
    #[serde(default = "default_file_size")]
    pub file_size: Bytes,
    /// Bytes per read/write in the block, rewrite and seek phases, and per read/write of
    /// small-file data (bonnie++ `-s size:chunk` and `-n …:chunk`). Default 8 KiB as bonnie++.
    #[serde(default = "default_chunk_size")]
    pub chunk_size: Bytes,
    /// How per-char phases issue byte operations: `"stdio"` (default, bonnie++ 1.03) or
    /// `"syscall"` (one syscall per byte, bonnie++ 2.x).
    #[serde(default)]
    pub char_mode: CharMode,
    /// Bytes written and read by each per-char phase (bonnie++ `-f`). Default: the whole
    /// `file_size` in `stdio` mode (bonnie++ 1.03 wrote and read the whole file with
    /// putc/getc), and 3 MiB (bonnie++ 2.00a's default) but at most `file_size` in `syscall`
    /// mode, where one byte costs about 1 µs. `0` skips both per-char phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub char_size: Option<Bytes>,
    /// Parallel seeker threads in `random_seeks`, each with its own file descriptor. Default 5
    /// (bonnie++ `DefaultSeekProcCount`).
    #[serde(default = "default_seekers")]
    pub seekers: u32,
    /// Random seeks in total over all seekers. Default 8192 (bonnie++ `DefaultSeeks`). `0`
    /// skips `random_seeks`.
    #[serde(default = "default_seeks")]
    pub seeks: u32,
    /// How the seeks reach the seekers: `split` (default: evenly, before the start) or `pipe`
    /// (one read(2) of a ticket per seek from a pipe all seekers share, as bonnie++ 2.00a;
    /// module `seek`, doc/verify.md).
    #[serde(default, skip_serializing_if = "seek::is_split")]
    pub seek_dispatch: SeekDispatch,
    /// Keep `seeks` as it is under `--scale` (bonnie++'s 8192 seeks are fixed: no option sets
    /// them). `fsbench verify` sets it so both sides seek alike at every scale. Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fixed_seeks: bool,
    /// Number of small files (bonnie++ `-n` × 1024). Default 16384 (`-n 16`). `0` skips the
    /// six small-file phases.
    #[serde(default = "default_files")]
    pub files: u32,
    /// Smallest small-file size, bytes (bonnie++ `-n n:max:min`). Default 0.
    #[serde(default)]
    pub file_min_size: Bytes,
    /// Largest small-file size, bytes; each file gets a uniformly random size in
    /// `[file_min_size, file_max_size]`. Default 0 (empty files, as bonnie++).
    #[serde(default)]
    pub file_max_size: Bytes,
    /// Passes of `seq_stat` and `rand_stat` over the files (an fsbench addition; bonnie++ makes
    /// one). Each pass begins as a phase does (caches dropped before it when the run drops
    /// them per phase), and the phase's time is the passes' summed, so a stat phase that one
    /// pass would leave under the minimum time is timed whole. Default 1.
    #[serde(default = "default_passes", skip_serializing_if = "is_one")]
    pub stat_passes: u32,
    /// Passes of `seq_read_block` over the file, as `stat_passes` (an fsbench addition).
    /// Default 1.
    #[serde(default = "default_passes", skip_serializing_if = "is_one")]
    pub read_passes: u32,
    /// Directories the small files are spread over evenly (bonnie++ `-n n:max:min:dirs`).
    /// Default 1.
    #[serde(default = "default_dirs")]
    pub dirs: u32,
    /// Count the fsync at the end of each I/O phase and the filesystem sync at the end of the
    /// create and delete phases inside the timed region, as bonnie++ 2 does. Default true.
    #[serde(default = "super::default_true")]
    pub fsync: bool,
    /// Seed of the random names, file sizes, seek offsets and shuffles (bonnie++ `-z`), so
    /// repeats do the same work. Default 0.
    #[serde(default)]
    pub seed: u64,
    /// Run each single-worker phase (all but `random_seeks`) on one CPU: the calling thread is
    /// pinned for the phase ([`crate::pool::WorkerPool::pinned`]), so the kernel's I/O
    /// threads (the loop device's worker, writeback) run beside it rather than taking turns
    /// with it on one core. An fsbench addition (bonnie++ does not pin); measured on a 2-core
    /// VM, eight repeats of the quick preset's per-char read: 263–396 MiB/s free, 363–399
    /// pinned (doc/statistics.md). Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pin: bool,
    /// When the run's `drop_caches` applies: `each_phase` (default: before every phase, so
    /// each one starts cold) or `once` (before the first phase only, the way bonnie++ sees the
    /// caches when it is started after a drop: its rewrite, reads and seeks run over what the
    /// phases before them left in the page cache). `fsbench verify` uses `once` against the
    /// real bonnie++; with `each_phase`, `random_seeks` reads a cold file that bonnie++ would
    /// find cached (or, with a file over twice the RAM, mostly not), so the two measure
    /// different things.
    #[serde(default, skip_serializing_if = "is_each_phase")]
    pub caches: BonnieCaches,
    /// TEST ONLY (`fsbench verify --fast-seeks`, hidden): `random_seeks` does its `seeks` but
    /// reports `seeks × test_seek_credit`, so its rate comes out exactly this many times too
    /// high whatever the phase's time is made of (doing fewer seeks would not: the seekers'
    /// closing fsync is timed too), a native that is wrong in the direction a bound cannot
    /// catch. Never set it in a suite you read results from. Default 1 (no effect).
    #[serde(default = "default_passes", skip_serializing_if = "is_one")]
    pub test_seek_credit: u32,
}

/// When a bonnie run drops caches (if the run asks for it at all).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BonnieCaches {
    /// Before every timed phase (the default).
    #[default]
    EachPhase,
    /// Before the first timed phase only, as a bonnie++ run started after a drop.
    Once,
}

fn is_each_phase(c: &BonnieCaches) -> bool {
    *c == BonnieCaches::EachPhase
}

fn default_passes() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn default_file_size() -> Bytes {
    Bytes(512 * Bytes::MIB)
}
fn default_chunk_size() -> Bytes {
    Bytes(8 * Bytes::KIB)
}
fn default_seekers() -> u32 {
    5
}
fn default_seeks() -> u32 {
    8192
}
fn default_files() -> u32 {
    16384
}
fn default_dirs() -> u32 {
    1
}

/// The space bonnie (and bonnie++) needs: the I/O file of `io_bytes` (written over its old
/// data by the block-write and rewrite phases) or the small-file phases' `files` files of
/// `sizes` spread over `dirs` directories with names of `name` bytes, whichever is larger
/// (they never coexist).
pub(super) fn footprint_of(io_bytes: u64, (files, dirs): (u32, u32), sizes: (Bytes, Bytes), name: u64) -> Footprint {
    let io = Footprint::default()
        .files(u64::from(io_bytes > 0), io_bytes, 12)
        .growing()
        .rewrites(io_bytes);
    let sub = if dirs > 1 { u64::from(dirs) } else { 0 };
    let small = Footprint::default().dirs(u64::from(files > 0) + sub, 12).uniform_files(
        u64::from(files),
        sizes.0.get(),
        sizes.1.get(),
        name,
    );
    io.max(small)
}

impl Default for BonnieSpec {
    fn default() -> Self {
        BonnieSpec {
            file_size: default_file_size(),
            chunk_size: default_chunk_size(),
            char_mode: CharMode::default(),
            char_size: None,
            seekers: default_seekers(),
            seeks: default_seeks(),
            seek_dispatch: SeekDispatch::Split,
            fixed_seeks: false,
            files: default_files(),
            file_min_size: Bytes(0),
            file_max_size: Bytes(0),
            dirs: default_dirs(),
            stat_passes: 1,
            read_passes: 1,
            fsync: true,
            seed: 0,
            pin: false,
            caches: BonnieCaches::EachPhase,
            test_seek_credit: 1,
        }
    }
}

impl BonnieSpec {
    /// Bytes each per-char phase moves after defaults and the `file_size` cap are applied.
    pub fn effective_char_size(&self) -> u64 {
        let file = self.io_bytes();
        let wanted = match (self.char_size, self.char_mode) {
            (Some(b), _) => b.get(),
            (None, CharMode::Stdio) => file,
            (None, CharMode::Syscall) => SYSCALL_CHAR_SIZE_DEFAULT,
        };
        wanted.min(file)
    }

    /// Whole chunks in the I/O file.
    fn chunks(&self) -> u64 {
        self.file_size.get().checked_div(self.chunk_size.get()).unwrap_or(0)
    }

    /// Bytes of the I/O file actually used (whole chunks).
    fn io_bytes(&self) -> u64 {
        self.chunks() * self.chunk_size.get()
    }
}

impl Workload for BonnieSpec {
    fn phases(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.file_size.get() > 0 {
            let chars = self.effective_char_size() > 0;
            if chars {
                out.push(SEQ_WRITE_CHAR);
            }
            out.extend([SEQ_WRITE_BLOCK, REWRITE]);
            if chars {
                out.push(SEQ_READ_CHAR);
            }
            out.push(SEQ_READ_BLOCK);
            if self.seeks > 0 {
                out.push(RANDOM_SEEKS);
            }
        }
        if self.files > 0 {
            out.extend([SEQ_CREATE, SEQ_STAT, SEQ_DELETE, RAND_CREATE, RAND_STAT, RAND_DELETE]);
        }
        out.into_iter().map(String::from).collect()
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        let scale_count = |n: u32, min: u32| if n == 0 { 0 } else { super::scaled_count(n, factor, min) };
        let file_size = if self.file_size.get() == 0 {
            Bytes(0)
        } else {
            self.file_size.scaled(factor, 16 * Bytes::MIB)
        };
        let char_size = self.char_size.map(|c| {
            if c.get() == 0 {
                c
            } else {
                Bytes(c.scaled(factor, Bytes::MIB).get().min(file_size.get().max(Bytes::MIB)))
            }
        });
        WorkloadKind::Bonnie(BonnieSpec {
            file_size,
            char_size,
            files: scale_count(self.files, 256),
            seeks: if self.fixed_seeks {
                self.seeks
            } else {
                scale_count(self.seeks, 64)
            },
            ..self.clone()
        })
    }

    /// Each knob grows for the shortest phase it drives ([`crate::resize`]): `file_size` for
    /// the block write and the rewrite, `char_size` (when set) for the per-char phases, up to
    /// the file, `files` for the create and delete phases (in thousands of 1024, as `-n`),
    /// `seeks` (unless fixed) for `random_seeks`, and the passes of the block read and the
    /// stat phases for what the larger file or file count still leaves short.
    fn resized(&self, walls: &crate::resize::PhaseWalls) -> Option<crate::resize::Resized> {
        use crate::resize::{change, grow, shortest};
        let limit = MIN_TIME;
        let mut next = self.clone();
        let mut changes = Vec::new();
        let chunk = self.chunk_size.get().max(1);
        let mut file_factor = 1.0;
        if let Some((phase, wall, f)) = shortest(walls, &[SEQ_WRITE_BLOCK, REWRITE], limit) {
            let to = grow(self.file_size.get(), f, Bytes::MIB.max(chunk), u64::MAX);
            file_factor = to as f64 / self.file_size.get().max(1) as f64;
            next.file_size = Bytes(to);
            changes.push(change("file_size", self.file_size, next.file_size, phase, wall, limit));
        }
        if let Some(c) = self.char_size.filter(|c| c.get() > 0) {
            if let Some((phase, wall, f)) = shortest(walls, &[SEQ_WRITE_CHAR, SEQ_READ_CHAR], limit) {
                let to = grow(c.get(), f, Bytes::MIB, next.file_size.get());
                if to > c.get() {
                    next.char_size = Some(Bytes(to));
                    changes.push(change("char_size", c, Bytes(to), phase, wall, limit));
                }
            }
        }
        let mut files_factor = 1.0;
        let file_phases = [SEQ_CREATE, SEQ_DELETE, RAND_CREATE, RAND_DELETE];
        if let Some((phase, wall, f)) = shortest(walls, &file_phases, limit) {
            let to = grow(u64::from(self.files), f, 1024, u64::from(u32::MAX)) as u32;
            files_factor = f64::from(to) / f64::from(self.files.max(1));
            next.files = to;
            changes.push(change("files", self.files, to, phase, wall, limit));
        }
        if !self.fixed_seeks {
            if let Some((phase, wall, f)) = shortest(walls, &[RANDOM_SEEKS], limit) {
                let to = grow(u64::from(self.seeks), f, 1024, u64::from(u32::MAX)) as u32;
                next.seeks = to;
                changes.push(change("seeks", self.seeks, to, phase, wall, limit));
            }
        }
        // The passes: what the larger file or file count leaves short at the warm-up's speed.
        let after = |phase: &str, grown: f64| -> Vec<(String, std::time::Duration)> {
            walls
                .iter()
                .filter(|(p, _)| p == phase)
                .map(|(p, w)| (p.clone(), w.mul_f64(grown)))
                .collect()
        };
        let mut passes = |knob: &str, phases: &[&str], grown: f64, from: u32| -> u32 {
            let stretched: Vec<_> = phases.iter().flat_map(|p| after(p, grown)).collect();
            let Some((phase, _, f)) = shortest(&stretched, phases, limit) else {
                return from;
            };
            let to = grow(u64::from(from), f, 1, u64::from(MAX_PASSES)) as u32;
            if to > from {
                let wall = walls
                    .iter()
                    .find(|(p, _)| p == phase)
                    .map_or(Default::default(), |w| w.1);
                changes.push(change(knob, from, to, phase, wall, limit));
            }
            to
        };
        next.read_passes = passes("read_passes", &[SEQ_READ_BLOCK], file_factor, self.read_passes);
        next.stat_passes = passes("stat_passes", &[SEQ_STAT, RAND_STAT], files_factor, self.stat_passes);
        (!changes.is_empty()).then_some(crate::resize::Resized {
            kind: WorkloadKind::Bonnie(next),
            changes,
        })
    }

    fn validate(&self) -> Result<(), Invalid> {
        let chunk = self.chunk_size.get();
        if self.file_size.get() == 0 && self.files == 0 {
            return Err("file_size and files are both 0: nothing to run (set one of them)".into());
        }
        if chunk == 0 || chunk > MAX_CHUNK {
            return Err(Invalid(format!(
                "chunk_size must be between 1 byte and 1GiB (is {})",
                self.chunk_size
            )));
        }
        if self.file_size.get() > 0 {
            if chunk > self.file_size.get() {
                return Err(Invalid(format!(
                    "chunk_size ({}) must not exceed file_size ({})",
                    self.chunk_size, self.file_size
                )));
            }
            if let Some(c) = self.char_size {
                if c.get() > self.file_size.get() {
                    return Err(Invalid(format!(
                        "char_size ({c}) must not exceed file_size ({})",
                        self.file_size
                    )));
                }
            }
        }
        if self.seekers == 0 {
            return Err("seekers must be at least 1".into());
        }
        if self.test_seek_credit == 0 {
            return Err("test_seek_credit must be at least 1".into());
        }
        if self.seekers > 1024 {
            return Err(Invalid(format!("seekers must be at most 1024 (is {})", self.seekers)));
        }
        if self.file_min_size > self.file_max_size {
            return Err(Invalid(format!(
                "file_min_size ({}) must not exceed file_max_size ({})",
                self.file_min_size, self.file_max_size
            )));
        }
        for (name, n) in [("stat_passes", self.stat_passes), ("read_passes", self.read_passes)] {
            if !(1..=MAX_PASSES).contains(&n) {
                return Err(Invalid(format!("{name} must be between 1 and {MAX_PASSES} (is {n})")));
            }
        }
        if self.dirs == 0 || self.dirs > MAX_DIRS {
            return Err(Invalid(format!(
                "dirs must be between 1 and {MAX_DIRS} (is {})",
                self.dirs
            )));
        }
        Ok(())
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        // The I/O file and the small files never coexist: the larger of the two.
        let name = 10 + RAND_EXTRA_LEN as u64;
        footprint_of(
            self.io_bytes(),
            (self.files, self.dirs),
            (self.file_min_size, self.file_max_size),
            name,
        )
    }

    /// Zero-filled chunks with one byte changed each, as bonnie++ writes them.
    fn content(&self) -> Option<crate::datasets::content::Content> {
        Some(crate::datasets::content::Content::Zeros)
    }

    fn describe(&self) -> String {
        let mut s = String::from("bonnie");
        if self.file_size.get() > 0 {
            s.push_str(&format!(
                " file_size={} chunk={} char={}({:?}) seeks={}x{}",
                self.file_size,
                self.chunk_size,
                Bytes(self.effective_char_size()),
                self.char_mode,
                self.seeks,
                self.seekers
            ));
        }
        if self.files > 0 {
            s.push_str(&format!(
                " files={} size={}..{} dirs={}",
                self.files, self.file_min_size, self.file_max_size, self.dirs
            ));
        }
        if self.read_passes > 1 && self.file_size.get() > 0 {
            s.push_str(&format!(" read_passes={}", self.read_passes));
        }
        if self.stat_passes > 1 && self.files > 0 {
            s.push_str(&format!(" stat_passes={}", self.stat_passes));
        }
        if self.pin {
            s.push_str(" pin");
        }
        s.push_str(if self.fsync { " fsync" } else { " no-fsync" });
        if self.caches == BonnieCaches::Once {
            s.push_str(" caches-dropped-once");
        }
        if self.test_seek_credit > 1 {
            s.push_str(&format!(
                " TEST-ONLY: 1/{} of the seeks done, all reported",
                self.test_seek_credit
            ));
        }
        s
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        self.validate()?;
        let parent: OwnedFd = File::open(ctx.dir)
            .map_err(|e| EngineError::io(format!("open directory {}", ctx.dir.display()), e))?
            .into();
        let mut runner = Runner::new(self, ctx, parent.as_fd());
        let result = runner.run_all();
        if result.is_err() {
            runner.cleanup();
        }
        result.map(|()| runner.phases.finish())
    }
}

// ---------------------------------------------------------------------------------------------
// The runner: untimed preparation, timed phases, cleanup.
// ---------------------------------------------------------------------------------------------

/// What a phase's headline metric counts.
#[derive(Clone, Copy)]
enum Amount {
    /// Bytes moved → `throughput` in MiB/s.
    Bytes(u64),
    /// Operations → `rate` in ops/s.
    Ops(u64),
}

struct Runner<'a, 'c> {
    spec: &'a BonnieSpec,
    ctx: &'a RunContext<'c>,
    phases: Phases<'a, 'c>,
    rng: SmallRng,
    /// The run directory, kept open (by [`Workload::run`]) for *at() calls and syncfs.
    /// Borrowed for `'a` rather than owned, so that workers can hold it while the runner
    /// records their phase.
    parent: BorrowedFd<'a>,
    io_path: PathBuf,
    files_path: PathBuf,
    /// Phases timed so far (with `caches = "once"` only the first drops caches).
    timed_phases: usize,
}

impl<'a, 'c: 'a> Runner<'a, 'c> {
    fn new(spec: &'a BonnieSpec, ctx: &'a RunContext<'c>, parent: BorrowedFd<'a>) -> Self {
        Runner {
            spec,
            ctx,
            phases: {
                let mut p = Phases::new(ctx);
                if spec.pin {
                    p.pin_single_workers();
                }
                p
            },
            rng: SmallRng::seed_from_u64(spec.seed),
            parent,
            io_path: ctx.dir.join(IO_FILE),
            files_path: ctx.dir.join(FILES_DIR.to_string_lossy().as_ref()),
            timed_phases: 0,
        }
    }

    fn interrupt(&self) -> &'a AtomicBool {
        self.ctx.interrupt
    }

    fn run_all(&mut self) -> Result<(), EngineError> {
        if self.spec.file_size.get() > 0 {
            self.io_phases()?;
        }
        if self.spec.files > 0 {
            self.file_phases()?;
        }
        Ok(())
    }

    /// Best effort after an error or interrupt: leave the directory empty.
    fn cleanup(&self) {
        let _ = std::fs::remove_file(&self.io_path);
        let _ = std::fs::remove_dir_all(&self.files_path);
    }

    /// Drops caches, runs `workers` under a CPU meter, and records the phase.
    fn timed<W: Worker>(
        &mut self,
        phase: &str,
        workers: Vec<W>,
        amount: Amount,
    ) -> Result<Vec<W::Output>, EngineError> {
        self.timed_passes(phase, vec![workers], amount)
    }

    /// [`Self::timed`] for a phase of several passes ([`Phases::run_passes`]): one list of
    /// workers per pass, the amount is per pass.
    fn timed_passes<W: Worker>(
        &mut self,
        phase: &str,
        passes: Vec<Vec<W>>,
        amount: Amount,
    ) -> Result<Vec<W::Output>, EngineError> {
        let policy = match (self.spec.caches, self.timed_phases) {
            (BonnieCaches::Once, n) if n > 0 => POLICY.caches(Caches::Keep),
            _ => POLICY,
        };
        let policy = if FILE_PHASES.contains(&phase) {
            policy.sample_latency(Sampling::Auto)
        } else {
            policy
        };
        self.timed_phases += 1;
        let k = passes.len() as f64;
        self.phases.run_passes(phase, passes, &policy, |_, wall| {
            let secs = wall.as_secs_f64().max(1e-9);
            Ok(vec![match amount {
                Amount::Bytes(b) => (
                    MetricId::higher("throughput", Unit::MibPerSec),
                    k * b as f64 / Bytes::MIB as f64 / secs,
                ),
                Amount::Ops(n) => (MetricId::higher("rate", Unit::OpsPerSec), k * n as f64 / secs),
            }])
        })
    }

    fn open_io(&self, create: bool) -> Result<File, EngineError> {
        let mut o = OpenOptions::new();
        o.read(true).write(true);
        if create {
            match std::fs::remove_file(&self.io_path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(ERR.io_in("unlink", &self.io_path, None, e)),
            }
            o.create_new(true).mode(0o600);
        }
        o.open(&self.io_path)
            .map_err(|e| ERR.io_in(if create { "create" } else { "open" }, &self.io_path, None, e))
    }

    fn io_phases(&mut self) -> Result<(), EngineError> {
        let spec = self.spec;
        let chunk = spec.chunk_size.get() as usize;
        let chunks = spec.chunks();
        let char_bytes = spec.effective_char_size();
        let fsync = spec.fsync;
        let interrupt = self.interrupt();
        let path = self.io_path.clone();

        if char_bytes > 0 {
            let file = self.open_io(true)?;
            let w = CharWriter::new(file, &path, char_bytes, chunk, spec.char_mode, fsync, interrupt);
            self.timed(SEQ_WRITE_CHAR, vec![w], Amount::Bytes(char_bytes))?;
        }

        let file = self.open_io(true)?;
        let w = ChunkWorker::new(ChunkPass::Write, IoFile::new(file, &path, fsync), chunks, chunk);
        self.timed(SEQ_WRITE_BLOCK, vec![w], Amount::Bytes(chunks * chunk as u64))?;

        let file = self.open_io(false)?;
        let w = ChunkWorker::new(ChunkPass::Rewrite, IoFile::new(file, &path, fsync), chunks, chunk);
        self.timed(REWRITE, vec![w], Amount::Bytes(chunks * chunk as u64))?;

        if char_bytes > 0 {
            let file = self.open_io(false)?;
            let r = CharReader::new(file, &path, char_bytes, chunk, spec.char_mode, fsync, interrupt);
            let sums = self.timed(SEQ_READ_CHAR, vec![r], Amount::Bytes(char_bytes))?;
            std::hint::black_box(sums);
        }

        let mut passes = Vec::with_capacity(spec.read_passes as usize);
        for _ in 0..spec.read_passes {
            let file = self.open_io(false)?;
            passes.push(vec![ChunkWorker::new(
                ChunkPass::Read,
                IoFile::new(file, &path, fsync),
                chunks,
                chunk,
            )]);
        }
        self.timed_passes(SEQ_READ_BLOCK, passes, Amount::Bytes(chunks * chunk as u64))?;

        if spec.seeks > 0 {
            let all: Vec<u64> = (0..spec.seeks)
                .map(|_| {
                    let r: u64 = self.rng.gen();
                    ((r % chunks) << 1) | u64::from(r % UPDATE_SEEK == 0)
                })
                .collect();
            let mut workers = Vec::with_capacity(spec.seekers as usize);
            for tickets in seek::deal(all, spec.seekers as usize, spec.seek_dispatch)? {
                let file = self.open_io(false)?;
                workers.push(Seeker {
                    io: IoFile::new(file, &path, fsync),
                    tickets,
                    buf: vec![0; chunk],
                });
            }
            // `test_seek_credit` (test only): more seeks reported than done.
            let reported = u64::from(spec.seeks) * u64::from(spec.test_seek_credit.max(1));
            self.timed(RANDOM_SEEKS, workers, Amount::Ops(reported))?;
        }

        // bonnie++ deletes its file before the small-file tests (untimed).
        std::fs::remove_file(&self.io_path).map_err(|e| ERR.io_in("unlink", &self.io_path, None, e))
    }

    fn file_phases(&mut self) -> Result<(), EngineError> {
        let spec = self.spec;
        let n = spec.files as usize;
        let dir_names = NameTable::dirs(spec.dirs);
        let zeros = vec![0u8; spec.chunk_size.get() as usize];
        // One read buffer per stat pass (each pass's workers hold theirs).
        let mut bufs = vec![vec![0u8; spec.chunk_size.get() as usize]; spec.stat_passes as usize];
        let mut buf = vec![0u8; spec.chunk_size.get() as usize];
        let mut order: Vec<u32> = (0..spec.files).collect();
        let files_path = self.files_path.clone();

        for random in [false, true] {
            let interrupt = self.interrupt();
            let names = NameTable::files(spec.files, spec.dirs, random, &mut self.rng, interrupt)?;
            let sizes = self.file_sizes(n);
            let top = self.make_files_dir(&dir_names)?;
            let fs = FileSet {
                top: top.as_fd(),
                parent: self.parent,
                path: &files_path,
                dir_names: &dir_names,
                fsync: spec.fsync,
            };
            let (create, stat, delete) = if random {
                (RAND_CREATE, RAND_STAT, RAND_DELETE)
            } else {
                (SEQ_CREATE, SEQ_STAT, SEQ_DELETE)
            };
            let files = Amount::Ops(u64::from(spec.files));

            let w = Creator {
                fs,
                names: &names,
                sizes: &sizes,
                next: 0,
                data: &zeros,
            };
            self.timed(create, vec![w], files)?;

            if random {
                order.shuffle(&mut self.rng);
                let passes = bufs
                    .iter_mut()
                    .map(|buf| {
                        vec![ByName {
                            fs,
                            names: &names,
                            order: &order,
                            next: 0,
                            buf,
                            delete: false,
                        }]
                    })
                    .collect();
                self.timed_passes(stat, passes, files)?;
                order.shuffle(&mut self.rng);
                let w = ByName {
                    fs,
                    names: &names,
                    order: &order,
                    next: 0,
                    buf: &mut buf,
                    delete: true,
                };
                self.timed(delete, vec![w], Amount::Ops(u64::from(spec.files)))?;
            } else {
                let passes = bufs
                    .iter_mut()
                    .map(|buf| vec![Readdir::new(fs, n as u64, buf, false)])
                    .collect();
                self.timed_passes(stat, passes, files)?;
                let w = Readdir::new(fs, n as u64, &mut buf, true);
                self.timed(delete, vec![w], Amount::Ops(u64::from(spec.files)))?;
            }
            drop(top);
        }
        Ok(())
    }

    /// Uniform sizes in `[file_min_size, file_max_size]`, drawn before the timed region.
    fn file_sizes(&mut self, n: usize) -> Vec<u64> {
        let (min, max) = (self.spec.file_min_size.get(), self.spec.file_max_size.get());
        (0..n)
            .map(|_| if min == max { max } else { self.rng.gen_range(min..=max) })
            .collect()
    }

    /// Creates the test directory and its subdirectories (untimed, as bonnie++) and returns a
    /// descriptor of the test directory.
    fn make_files_dir(&self, dir_names: &NameTable) -> Result<OwnedFd, EngineError> {
        let parent = self.parent;
        rustix::fs::mkdirat(parent, FILES_DIR, DIR_MODE)
            .map_err(|e| ERR.io_in("mkdir", &self.files_path, None, e.into()))?;
        let top = rustix::fs::openat(parent, FILES_DIR, DIR_FLAGS, Mode::empty())
            .map_err(|e| ERR.io_in("open", &self.files_path, None, e.into()))?;
        for d in 0..dir_names.len() {
            let name = dir_names.get(d)?;
            rustix::fs::mkdirat(&top, name, DIR_MODE)
                .map_err(|e| ERR.io_in("mkdir", &self.files_path, Some(name), e.into()))?;
        }
        Ok(top)
    }
}

// ---------------------------------------------------------------------------------------------
// I/O-phase workers.
// ---------------------------------------------------------------------------------------------

/// The large file as one worker holds it: closed (with fsync first when asked) in
/// [`Worker::end`], inside the timed region, as bonnie++'s `Close()`.
struct IoFile<'p> {
    file: Option<File>,
    path: &'p Path,
    fsync: bool,
}

impl<'p> IoFile<'p> {
    fn new(file: File, path: &'p Path, fsync: bool) -> Self {
        IoFile {
            file: Some(file),
            path,
            fsync,
        }
    }

    #[inline]
    fn get(&mut self) -> Result<&mut File, EngineError> {
        match self.file.as_mut() {
            Some(f) => Ok(f),
            None => Err(EngineError::Invalid(format!(
                "{} used after close",
                self.path.display()
            ))),
        }
    }

    fn err(&self, op: &str, e: io::Error) -> EngineError {
        ERR.io_in(op, self.path, None, e)
    }

    fn close(&mut self) -> Result<(), EngineError> {
        let Some(file) = self.file.take() else {
            return Ok(());
        };
        if self.fsync {
            file.sync_all().map_err(|e| self.err("fsync", e))?;
        }
        sysio::close_checked(file.into()).map_err(|e| self.err("close", e.into()))
    }
}

/// Userspace buffer size for stdio mode: the file's `st_blksize`, as glibc's stdio uses.
fn stdio_buffer(file: &File) -> usize {
    let blk = file.metadata().map(|m| m.blksize()).unwrap_or(4096);
    (blk as usize).clamp(512, 1 << 20)
}

/// `seq_write_char`: one op (one clock read, one histogram record) = one chunk of bytes,
/// written one byte at a time.
struct CharWriter<'p> {
    io: IoFile<'p>,
    /// Offset of the next byte (syscall mode).
    off: u64,
    left: u64,
    chunk: u64,
    mode: CharMode,
    buf: Vec<u8>,
    pos: usize,
    interrupt: &'p AtomicBool,
}

impl<'p> CharWriter<'p> {
    fn new(
        file: File,
        path: &'p Path,
        bytes: u64,
        chunk: usize,
        mode: CharMode,
        fsync: bool,
        interrupt: &'p AtomicBool,
    ) -> Self {
        let buf = match mode {
            CharMode::Stdio => vec![0; stdio_buffer(&file)],
            CharMode::Syscall => Vec::new(),
        };
        CharWriter {
            io: IoFile::new(file, path, fsync),
            off: 0,
            left: bytes,
            chunk: chunk as u64,
            mode,
            buf,
            pos: 0,
            interrupt,
        }
    }

    /// putc: store one byte; write(2) the buffer when it is full.
    #[inline(never)]
    fn putc(&mut self, c: u8) -> Result<(), EngineError> {
        self.buf[self.pos] = c;
        self.pos += 1;
        if self.pos == self.buf.len() {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), EngineError> {
        if self.pos > 0 {
            let pos = self.pos;
            self.pos = 0;
            let f = self.io.get()?;
            if let Err(e) = f.write_all(&self.buf[..pos]) {
                return Err(self.io.err("write", e));
            }
        }
        Ok(())
    }
}

impl Worker for CharWriter<'_> {
    type Output = ();

    fn op(&mut self) -> Result<Step, EngineError> {
        if self.left == 0 {
            return Ok(Step::Done);
        }
        let n = self.left.min(self.chunk);
        match self.mode {
            CharMode::Stdio => {
                for i in 0..n {
                    self.putc(std::hint::black_box((i & 0x7f) as u8))?;
                }
            }
            CharMode::Syscall => {
                let f = self.io.get()?;
                let r = put_bytes(f, self.off, n, self.interrupt);
                self.off += n;
                r.map_err(|e| e.map_or(EngineError::Interrupted, |e| self.io.err("write", e)))?;
            }
        }
        self.left -= n;
        Ok(Step::Op)
    }

    fn end(&mut self) -> Result<(), EngineError> {
        self.flush()?;
        self.io.close()
    }
}

/// Syscall mode of `seq_write_char`: `n` one-byte pwrite(2)s of `i & 0x7f` from offset `off`,
/// the interrupt polled every 1024 bytes (`Err(None)`). pwrite(2) at the byte's offset does
/// the same write through the page cache as bonnie++'s write(2), without the `f_pos` lock
/// Linux takes on each read/write of a descriptor shared by threads (`fdget_pos`): fsbench has
/// several threads, bonnie++ one during these phases, and the lock cost 10-20 % more CPU per
/// byte (perf: `mutex_lock`, `mutex_unlock`, `fput`; doc/verify.md).
fn put_bytes(f: &File, off: u64, n: u64, interrupt: &AtomicBool) -> Result<(), Option<io::Error>> {
    let mut i = 0;
    while i < n {
        if i % 1024 == 0 && interrupt.load(Ordering::Relaxed) {
            return Err(None);
        }
        match f.write_at(&[(i & 0x7f) as u8], off + i) {
            Ok(1) => i += 1,
            Ok(_) => return Err(Some(io::ErrorKind::WriteZero.into())),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Some(e)),
        }
    }
    Ok(())
}

/// Syscall mode of `seq_read_char`: `n` one-byte pread(2)s from offset `off`, each byte added
/// to `sum`; as [`put_bytes`].
fn get_bytes(f: &File, off: u64, n: u64, sum: &mut u64, interrupt: &AtomicBool) -> Result<(), Option<io::Error>> {
    let mut byte = [0u8; 1];
    let mut i = 0;
    while i < n {
        if i % 1024 == 0 && interrupt.load(Ordering::Relaxed) {
            return Err(None);
        }
        match f.read_at(&mut byte, off + i) {
            Ok(1) => {
                *sum = sum.wrapping_add(u64::from(byte[0]));
                i += 1;
            }
            Ok(_) => return Err(Some(io::ErrorKind::UnexpectedEof.into())),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Some(e)),
        }
    }
    Ok(())
}

/// `seq_read_char`: one op (one clock read, one histogram record) = one chunk of bytes, read
/// one byte at a time.
struct CharReader<'p> {
    io: IoFile<'p>,
    /// Offset of the next byte (syscall mode).
    off: u64,
    left: u64,
    chunk: u64,
    mode: CharMode,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    sum: u64,
    interrupt: &'p AtomicBool,
}

impl<'p> CharReader<'p> {
    fn new(
        file: File,
        path: &'p Path,
        bytes: u64,
        chunk: usize,
        mode: CharMode,
        fsync: bool,
        interrupt: &'p AtomicBool,
    ) -> Self {
        let buf = match mode {
            CharMode::Stdio => vec![0; stdio_buffer(&file)],
            CharMode::Syscall => Vec::new(),
        };
        let io = IoFile::new(file, path, fsync);
        CharReader {
            io,
            off: 0,
            left: bytes,
            chunk: chunk as u64,
            mode,
            buf,
            pos: 0,
            len: 0,
            sum: 0,
            interrupt,
        }
    }

    /// getc: take one byte from the buffer; read(2) a full buffer when it is empty.
    #[inline(never)]
    fn getc(&mut self) -> Result<u8, EngineError> {
        if self.pos == self.len {
            let f = self.io.get()?;
            let n = match sysio::read_some(f, &mut self.buf) {
                Ok(n) => n,
                Err(e) => return Err(self.io.err("read", e.into())),
            };
            if n == 0 {
                return Err(self.io.err("read", io::ErrorKind::UnexpectedEof.into()));
            }
            self.pos = 0;
            self.len = n;
        }
        let c = self.buf[self.pos];
        self.pos += 1;
        Ok(c)
    }
}

impl Worker for CharReader<'_> {
    type Output = u64;

    fn op(&mut self) -> Result<Step, EngineError> {
        if self.left == 0 {
            return Ok(Step::Done);
        }
        let n = self.left.min(self.chunk);
        match self.mode {
            CharMode::Stdio => {
                for _ in 0..n {
                    let c = self.getc()?;
                    self.sum = self.sum.wrapping_add(u64::from(c));
                }
            }
            CharMode::Syscall => {
                let f = self.io.get()?;
                let r = get_bytes(f, self.off, n, &mut self.sum, self.interrupt);
                self.off += n;
                r.map_err(|e| e.map_or(EngineError::Interrupted, |e| self.io.err("read", e)))?;
            }
        }
        self.left -= n;
        Ok(Step::Op)
    }

    fn end(&mut self) -> Result<(), EngineError> {
        self.io.close()
    }

    fn finish(self) -> u64 {
        self.sum
    }
}

/// The one-byte change per chunk of `seq_write_block` and `rewrite`: adds 1 to `buf[idx]`
/// and moves `idx` to the next byte, wrapping at the end of the chunk.
#[inline]
fn dirty_next_byte(buf: &mut [u8], idx: &mut usize) {
    buf[*idx] = buf[*idx].wrapping_add(1);
    *idx = (*idx + 1) % buf.len();
}

/// Which whole-chunk pass a [`ChunkWorker`] makes over the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChunkPass {
    /// `seq_write_block`: one op = one chunk written; one byte of the chunk changes each time.
    Write,
    /// `rewrite`: one op = read a chunk, dirty one byte, seek back one chunk, write it.
    Rewrite,
    /// `seq_read_block`: one op = one chunk read.
    Read,
}

/// The one thread of `seq_write_block`, `rewrite` or `seq_read_block`: `left` chunks of
/// `buf.len()` bytes, from the start of the file.
struct ChunkWorker<'p> {
    pass: ChunkPass,
    io: IoFile<'p>,
    left: u64,
    buf: Vec<u8>,
    idx: usize,
}

impl<'p> ChunkWorker<'p> {
    fn new(pass: ChunkPass, io: IoFile<'p>, chunks: u64, chunk: usize) -> Self {
        ChunkWorker {
            pass,
            io,
            left: chunks,
            buf: vec![0; chunk],
            idx: 0,
        }
    }
}

impl Worker for ChunkWorker<'_> {
    type Output = ();

    fn op(&mut self) -> Result<Step, EngineError> {
        if self.left == 0 {
            return Ok(Step::Done);
        }
        if self.pass == ChunkPass::Write {
            dirty_next_byte(&mut self.buf, &mut self.idx);
        }
        let back = -(self.buf.len() as i64);
        let f = self.io.get()?;
        let r = match self.pass {
            ChunkPass::Write => f.write_all(&self.buf).map_err(|e| ("write", e)),
            ChunkPass::Read => f.read_exact(&mut self.buf).map_err(|e| ("read", e)),
            ChunkPass::Rewrite => f
                .read_exact(&mut self.buf)
                .map_err(|e| ("read", e))
                .and_then(|()| {
                    dirty_next_byte(&mut self.buf, &mut self.idx);
                    f.seek(SeekFrom::Current(back)).map_err(|e| ("lseek", e))
                })
                .and_then(|_| f.write_all(&self.buf).map_err(|e| ("write", e))),
        };
        if let Err((op, e)) = r {
            return Err(self.io.err(op, e));
        }
        self.left -= 1;
        Ok(Step::Op)
    }

    fn end(&mut self) -> Result<(), EngineError> {
        self.io.close()
    }
}

/// One `random_seeks` thread. Tickets are `chunk << 1 | update`, drawn before the start and
/// dealt as [`SeekDispatch`] says.
struct Seeker<'p> {
    io: IoFile<'p>,
    tickets: Tickets,
    buf: Vec<u8>,
}

impl Worker for Seeker<'_> {
    type Output = ();

    fn op(&mut self) -> Result<Step, EngineError> {
        let t = match self.tickets.next() {
            Ok(Some(t)) => t,
            Ok(None) => return Ok(Step::Done),
            Err(e) => return Err(self.io.err("read a seek ticket", e)),
        };
        let (chunk, update) = (t >> 1, t & 1 == 1);
        let len = self.buf.len() as u64;
        let offset = chunk * len;
        let f = self.io.get()?;
        let r = f
            .seek(SeekFrom::Start(offset))
            .map_err(|e| ("lseek", e))
            .and_then(|_| f.read_exact(&mut self.buf).map_err(|e| ("read", e)));
        let r = r.and_then(|()| {
            if update {
                let i = (chunk % len) as usize;
                self.buf[i] = self.buf[i].wrapping_sub(1);
                f.seek(SeekFrom::Start(offset)).map_err(|e| ("lseek", e))?;
                f.write_all(&self.buf).map_err(|e| ("write", e))?;
            }
            Ok(())
        });
        if let Err((op, e)) = r {
            return Err(self.io.err(op, e));
        }
        Ok(Step::Op)
    }

    fn end(&mut self) -> Result<(), EngineError> {
        self.io.close()
    }
}

// ---------------------------------------------------------------------------------------------
// Small-file phases.
// ---------------------------------------------------------------------------------------------

/// NUL-terminated names packed in one buffer (no allocation per name, none in the hot loop).
struct NameTable {
    buf: Vec<u8>,
    /// `ends[i]` is one past the NUL of name `i`; name `i` starts at `ends[i-1]` (or 0).
    ends: Vec<usize>,
}

impl NameTable {
    /// Subdirectory names `00000`, `00001`, … when `dirs > 1`; empty for one directory.
    fn dirs(dirs: u32) -> NameTable {
        let mut t = NameTable {
            buf: Vec::new(),
            ends: Vec::new(),
        };
        if dirs > 1 {
            for d in 0..dirs {
                // Writing into a Vec cannot fail.
                let _ = write!(t.buf, "{d:05}\0");
                t.ends.push(t.buf.len());
            }
        }
        t
    }

    /// bonnie++ file names: 10 hex digits of the index with 0..=12 random alphanumerics after
    /// (sequential) or before (random) them, prefixed by `ddddd/` when `dirs > 1`.
    fn files(
        n: u32,
        dirs: u32,
        random: bool,
        rng: &mut SmallRng,
        interrupt: &AtomicBool,
    ) -> Result<NameTable, EngineError> {
        let mut t = NameTable {
            buf: Vec::with_capacity(n as usize * (10 + RAND_EXTRA_LEN / 2 + 1 + if dirs > 1 { 6 } else { 0 })),
            ends: Vec::with_capacity(n as usize),
        };
        let mut extra = [0u8; RAND_EXTRA_LEN];
        for i in 0..n {
            if i % 65536 == 0 && interrupt.load(Ordering::Relaxed) {
                return Err(EngineError::Interrupted);
            }
            let len = rng.gen_range(0..=RAND_EXTRA_LEN);
            for c in &mut extra[..len] {
                *c = RAND_CHARS[rng.gen_range(0..RAND_CHARS.len())];
            }
            if dirs > 1 {
                let d = u64::from(i) * u64::from(dirs) / u64::from(n);
                let _ = write!(t.buf, "{d:05}/");
            }
            if random {
                t.buf.extend_from_slice(&extra[..len]);
                let _ = write!(t.buf, "{i:010x}");
            } else {
                let _ = write!(t.buf, "{i:010x}");
                t.buf.extend_from_slice(&extra[..len]);
            }
            t.buf.push(0);
            t.ends.push(t.buf.len());
        }
        Ok(t)
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    #[inline]
    fn get(&self, i: usize) -> Result<&CStr, EngineError> {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        let bytes = &self.buf[start..self.ends[i]];
        debug_assert!(CStr::from_bytes_with_nul(bytes).is_ok());
        // SAFETY: the constructors write each name from digits, `/` and RAND_CHARS (no NUL)
        // and end it with exactly one NUL; `buf` is never changed afterwards. Not scanning the
        // name again here saves a few % of a stat on tmpfs.
        Ok(unsafe { CStr::from_bytes_with_nul_unchecked(bytes) })
    }
}

/// What every small-file worker shares: the test directory and how to end a phase.
#[derive(Clone, Copy)]
struct FileSet<'p> {
    /// Descriptor of the test directory (`bonnie.files`).
    top: BorrowedFd<'p>,
    /// Descriptor of the run directory, for removing the test directory and syncfs.
    parent: BorrowedFd<'p>,
    path: &'p Path,
    dir_names: &'p NameTable,
    fsync: bool,
}

impl FileSet<'_> {
    fn err(&self, op: &str, name: &CStr, e: io::Error) -> EngineError {
        ERR.io_in(op, self.path, Some(name), e)
    }

    /// syncfs(2) of the filesystem under test, when the phase counts it.
    fn sync(&self) -> Result<(), EngineError> {
        if !self.fsync {
            return Ok(());
        }
        rustix::fs::syncfs(self.parent).map_err(|e| ERR.io_in("syncfs", self.path, None, e.into()))
    }

    /// End of a delete phase: remove any remaining subdirectories and the test directory,
    /// then sync (all timed, as bonnie++).
    fn remove_dirs(&self, subdirs: bool) -> Result<(), EngineError> {
        if subdirs {
            for d in 0..self.dir_names.len() {
                let name = self.dir_names.get(d)?;
                rustix::fs::unlinkat(self.top, name, AtFlags::REMOVEDIR)
                    .map_err(|e| self.err("rmdir", name, e.into()))?;
            }
        }
        rustix::fs::unlinkat(self.parent, FILES_DIR, AtFlags::REMOVEDIR)
            .map_err(|e| ERR.io_in("rmdir", self.path, None, e.into()))?;
        self.sync()
    }
}

/// stat(2) a file and, when it has data, open and read all of it (bonnie++ `stat_file`).
#[inline]
fn stat_and_read(dirfd: BorrowedFd<'_>, name: &CStr, buf: &mut [u8]) -> io::Result<()> {
    // The kernel fills the returned struct; nothing is zeroed first.
    let size = u64::try_from(rustix::fs::statat(dirfd, name, AtFlags::empty())?.st_size).unwrap_or(0);
    if size == 0 {
        return Ok(());
    }
    let mut f = File::from(rustix::fs::openat(
        dirfd,
        name,
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?);
    let mut left = size;
    while left > 0 {
        let want = left.min(buf.len() as u64) as usize;
        f.read_exact(&mut buf[..want])?;
        left -= want as u64;
    }
    Ok(())
}

/// `seq_create` / `rand_create`: one op = create one file, write its data, close it.
struct Creator<'p> {
    fs: FileSet<'p>,
    names: &'p NameTable,
    sizes: &'p [u64],
    next: usize,
    data: &'p [u8],
}

impl Worker for Creator<'_> {
    type Output = ();

    fn op(&mut self) -> Result<Step, EngineError> {
        if self.next == self.names.len() {
            return Ok(Step::Done);
        }
        let name = self.names.get(self.next)?;
        let fd = rustix::fs::openat(self.fs.top, name, CREATE_FLAGS, FILE_MODE)
            .map_err(|e| self.fs.err("create", name, e.into()))?;
        let mut left = self.sizes[self.next];
        while left > 0 {
            let n = left.min(self.data.len() as u64) as usize;
            sysio::write_all(&fd, &self.data[..n]).map_err(|e| self.fs.err("write", name, e))?;
            left -= n as u64;
        }
        // Closed unchecked on drop, as bonnie++ does.
        drop(fd);
        self.next += 1;
        Ok(Step::Op)
    }

    fn end(&mut self) -> Result<(), EngineError> {
        self.fs.sync()
    }
}

/// `seq_stat` / `seq_delete`: walk each directory with readdir(3); one op = one entry
/// stat(+read) or unlinked (the readdir and any directory open/close are part of it).
struct Readdir<'p> {
    fs: FileSet<'p>,
    expected: u64,
    done: u64,
    next_dir: usize,
    stream: Option<DirStream>,
    buf: &'p mut [u8],
    delete: bool,
}

impl<'p> Readdir<'p> {
    fn new(fs: FileSet<'p>, expected: u64, buf: &'p mut [u8], delete: bool) -> Self {
        Readdir {
            fs,
            expected,
            done: 0,
            next_dir: 0,
            stream: None,
            buf,
            delete,
        }
    }

    fn dirs(&self) -> usize {
        self.fs.dir_names.len().max(1)
    }

    fn open_next(&mut self) -> Result<(), EngineError> {
        let name = if self.fs.dir_names.len() == 0 {
            c"."
        } else {
            self.fs.dir_names.get(self.next_dir)?
        };
        let fd = rustix::fs::openat(self.fs.top, name, DIR_FLAGS, Mode::empty())
            .map_err(|e| self.fs.err("open", name, e.into()))?;
        self.stream = Some(DirStream::new(fd).map_err(|e| self.fs.err("opendir", name, e))?);
        Ok(())
    }

    /// After a directory is exhausted: close it and, when deleting, remove it.
    fn close_current(&mut self) -> Result<(), EngineError> {
        self.stream = None;
        if self.delete && self.fs.dir_names.len() > 0 {
            let name = self.fs.dir_names.get(self.next_dir)?;
            rustix::fs::unlinkat(self.fs.top, name, AtFlags::REMOVEDIR)
                .map_err(|e| self.fs.err("rmdir", name, e.into()))?;
        }
        self.next_dir += 1;
        Ok(())
    }
}

impl Worker for Readdir<'_> {
    type Output = ();

    fn op(&mut self) -> Result<Step, EngineError> {
        loop {
            if self.stream.is_none() {
                if self.next_dir == self.dirs() {
                    return Ok(Step::Done);
                }
                self.open_next()?;
            }
            let Some(stream) = self.stream.as_mut() else {
                continue;
            };
            match stream.next() {
                Err(e) => return Err(ERR.io_in("readdir", self.fs.path, None, e)),
                Ok(None) => self.close_current()?,
                Ok(Some((dfd, name))) => {
                    if name.to_bytes().first() == Some(&b'.') {
                        continue;
                    }
                    let r = if self.delete {
                        rustix::fs::unlinkat(dfd, name, AtFlags::empty()).map_err(io::Error::from)
                    } else {
                        stat_and_read(dfd, name, self.buf)
                    };
                    if let Err(e) = r {
                        let op = if self.delete { "unlink" } else { "stat" };
                        return Err(ERR.io_in(op, self.fs.path, Some(name), e));
                    }
                    self.done += 1;
                    return Ok(Step::Op);
                }
            }
        }
    }

    fn end(&mut self) -> Result<(), EngineError> {
        if self.done != self.expected {
            return Err(EngineError::Invalid(format!(
                "readdir of {} found {} files, expected {}",
                self.fs.path.display(),
                self.done,
                self.expected
            )));
        }
        if self.delete {
            // Subdirectories were removed as the walk left them.
            self.fs.remove_dirs(false)?;
        }
        Ok(())
    }
}

/// `rand_stat` / `rand_delete`: one op = stat(+read) or unlink one file, by name, in `order`.
struct ByName<'p> {
    fs: FileSet<'p>,
    names: &'p NameTable,
    order: &'p [u32],
    next: usize,
    buf: &'p mut [u8],
    delete: bool,
}

impl Worker for ByName<'_> {
    type Output = ();

    fn op(&mut self) -> Result<Step, EngineError> {
        let Some(&i) = self.order.get(self.next) else {
            return Ok(Step::Done);
        };
        let name = self.names.get(i as usize)?;
        let r = if self.delete {
            rustix::fs::unlinkat(self.fs.top, name, AtFlags::empty()).map_err(io::Error::from)
        } else {
            stat_and_read(self.fs.top, name, self.buf)
        };
        if let Err(e) = r {
            return Err(self.fs.err(if self.delete { "unlink" } else { "stat" }, name, e));
        }
        self.next += 1;
        Ok(Step::Op)
    }

    fn end(&mut self) -> Result<(), EngineError> {
        if self.delete {
            self.fs.remove_dirs(true)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// readdir(3), which neither std nor rustix offers without allocating per entry.
// ---------------------------------------------------------------------------------------------

/// A readdir(3) stream that owns its directory descriptor. glibc reads entries in batches
/// into a buffer allocated once by fdopendir, so iterating allocates nothing.
struct DirStream {
    dir: NonNull<libc::DIR>,
    /// `dirfd(dir)`, for *at() calls on the entries.
    fd: RawFd,
}

// SAFETY: a DIR stream may be used from any thread as long as it is not used concurrently;
// DirStream is only reachable through `&mut` by its owning worker.
unsafe impl Send for DirStream {}

impl DirStream {
    fn new(fd: OwnedFd) -> io::Result<DirStream> {
        let raw = fd.into_raw_fd();
        // SAFETY: `raw` is an open directory descriptor; on success the DIR owns it.
        let dir = unsafe { libc::fdopendir(raw) };
        match NonNull::new(dir) {
            Some(dir) => Ok(DirStream { dir, fd: raw }),
            None => {
                let e = io::Error::last_os_error();
                // SAFETY: fdopendir failed, so we still own `raw`.
                drop(unsafe { OwnedFd::from_raw_fd(raw) });
                Err(e)
            }
        }
    }

    /// The next entry: the stream's directory descriptor (for *at() calls on the entry) and
    /// the entry's name; `None` at the end.
    fn next(&mut self) -> io::Result<Option<(BorrowedFd<'_>, &CStr)>> {
        // readdir signals errors only through errno, so clear it first.
        // SAFETY: __errno_location returns this thread's errno slot.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: `dir` is a live stream owned by self.
        let ent = unsafe { libc::readdir64(self.dir.as_ptr()) };
        if ent.is_null() {
            let e = io::Error::last_os_error();
            return if e.raw_os_error() == Some(0) { Ok(None) } else { Err(e) };
        }
        // SAFETY: a non-null dirent stays valid until the next readdir/closedir on this
        // stream, which needs `&mut self`; d_name is NUL-terminated.
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) };
        // SAFETY: `fd` is the stream's descriptor, open until closedir in `drop`, which cannot
        // run while the returned borrow of `self` lives.
        let fd = unsafe { BorrowedFd::borrow_raw(self.fd) };
        Ok(Some((fd, name)))
    }
}

impl Drop for DirStream {
    fn drop(&mut self) {
        // SAFETY: closes the stream (and its descriptor) exactly once.
        unsafe { libc::closedir(self.dir.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn tiny() -> BonnieSpec {
        BonnieSpec {
            file_size: Bytes(2 * Bytes::MIB),
            chunk_size: Bytes(8 * Bytes::KIB),
            char_size: Some(Bytes(64 * Bytes::KIB)),
            seekers: 3,
            seeks: 200,
            files: 300,
            file_min_size: Bytes(0),
            file_max_size: Bytes(3000),
            dirs: 3,
            ..BonnieSpec::default()
        }
    }

    #[test]
    fn resizing_raises_the_knob_of_each_short_phase_and_nothing_else() {
        let quick = BonnieSpec {
            file_size: Bytes(Bytes::GIB),
            char_size: Some(Bytes(224 * Bytes::MIB)),
            seeks: 24_576,
            files: 40_960,
            stat_passes: 3,
            read_passes: 2,
            ..BonnieSpec::default()
        };
        // Every phase long enough: nothing to do.
        let long: Vec<(String, Duration)> = quick
            .phases()
            .into_iter()
            .map(|p| (p, Duration::from_millis(900)))
            .collect();
        assert_eq!(quick.resized(&long), None);
        // Creates at 0.2 s (the shortest of the four file phases: 3.75 → × 4), stats at 0.3 s
        // (× 4 with the files: long enough), seeks at 0.45 s (× 2), block reads at 0.1 s (× 8).
        let mut short = long.clone();
        for (p, w) in &mut short {
            *w = match p.as_str() {
                SEQ_CREATE => Duration::from_millis(200),
                RAND_DELETE => Duration::from_millis(300),
                SEQ_STAT => Duration::from_millis(300),
                RANDOM_SEEKS => Duration::from_millis(450),
                SEQ_READ_BLOCK => Duration::from_millis(100),
                _ => *w,
            };
        }
        let r = quick.resized(&short).expect("short phases");
        let WorkloadKind::Bonnie(b) = &r.kind else {
            panic!("{r:?}")
        };
        assert_eq!(b.files, 163_840, "{r:?}");
        assert_eq!(b.file_size, quick.file_size, "block write and rewrite were long enough");
        assert_eq!(b.char_size, quick.char_size);
        assert_eq!(b.stat_passes, 3, "0.3 s × 4 is long enough");
        assert_eq!(b.seeks, 49_152);
        assert_eq!(b.read_passes, 16);
        assert_eq!(r.changes.len(), 3, "{:?}", r.changes);
        assert!(r.changes[0].starts_with("files 40960 → "), "{:?}", r.changes);
        assert!(r.changes[0].contains("seq_create took 0.20 s"), "{:?}", r.changes);
        b.validate().expect("a resized spec stays valid");
    }

    #[test]
    fn whole_workload_runs_every_phase_and_leaves_nothing() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let spec = tiny();
        let seen = std::sync::Mutex::new(Vec::new());
        // Files on disk when seq_stat starts: what seq_create really left, counted by walking
        // the directory (not by the workload's own counter).
        let created = std::sync::Mutex::new(None);
        let on_phase = |p: &str| {
            if p == SEQ_STAT {
                let small = walkdir_files(tmp.path()).into_iter().filter(|&len| len <= 3000).count();
                *created.lock().expect("test mutex") = Some(small);
            }
            seen.lock().expect("test mutex").push(p.to_string())
        };
        let ctx = RunContext {
            on_phase: &on_phase,
            ..RunContext::quiet(tmp.path(), &flag)
        };
        let sample = spec.run(&ctx).expect("bonnie run");
        let names: Vec<&str> = sample.phases.iter().map(|p| p.phase.as_str()).collect();
        assert_eq!(names, spec.phases().iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(names.len(), 12);
        assert_eq!(*seen.lock().expect("test mutex"), spec.phases());
        for p in &sample.phases {
            let (m, v) = &p.metrics[0];
            let io = [SEQ_WRITE_CHAR, SEQ_WRITE_BLOCK, REWRITE, SEQ_READ_CHAR, SEQ_READ_BLOCK];
            if io.contains(&p.phase.as_str()) {
                assert_eq!(
                    (m.name.as_str(), m.unit),
                    ("throughput", Unit::MibPerSec),
                    "{}",
                    p.phase
                );
            } else {
                assert_eq!((m.name.as_str(), m.unit), ("rate", Unit::OpsPerSec), "{}", p.phase);
            }
            for (m, v) in &p.metrics {
                assert!(v.is_finite() && *v >= 0.0, "{} {} = {v}", p.phase, m.name);
            }
            assert!(*v > 0.0, "{}", p.phase);
            assert!(p.wall > Duration::ZERO);
            assert!(p.cpu.process_pct.is_finite() && p.cpu.process_pct >= 0.0, "{p:?}");
            assert!(p.cpu.system_pct.is_finite() && p.cpu.system_pct >= 0.0, "{p:?}");
            assert!(p.metrics.iter().any(|(m, _)| m.name == "lat_max"));
        }
        // The reported create rate is the files really created per second of the phase.
        let on_disk = created.lock().expect("test mutex").expect("seq_stat ran");
        assert_eq!(on_disk, 300, "files on disk after seq_create");
        let create = &sample.phases[6];
        let rate = create.metrics[0].1;
        assert!(
            (rate * create.wall.as_secs_f64() - on_disk as f64).abs() < 1.0,
            "{rate}/s over {:?}",
            create.wall
        );
        // Tiny phases are flagged, not hidden.
        assert!(sample.notes.iter().any(|n| n.contains("too short")));
        assert!(crate::dir_is_empty(tmp.path()), "directory left non-empty");
    }

    /// Sizes of every regular file under `dir`, recursively.
    fn walkdir_files(dir: &Path) -> Vec<u64> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
            let md = e.metadata().expect("stat");
            if md.is_dir() {
                out.extend(walkdir_files(&e.path()));
            } else if md.is_file() {
                out.push(md.len());
            }
        }
        out
    }

    /// Write syscalls of this thread so far (`syscw` of /proc/thread-self/io).
    fn thread_write_syscalls() -> u64 {
        let text = std::fs::read_to_string("/proc/thread-self/io").expect("/proc/thread-self/io");
        text.lines()
            .find_map(|l| l.strip_prefix("syscw:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("syscw line")
    }

    #[test]
    fn syscall_mode_writes_one_byte_per_call_and_stdio_buffers() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let char_bytes = 64 * Bytes::KIB;
        // One seeker runs inline on this thread; no small files.
        let base = BonnieSpec {
            file_size: Bytes(Bytes::MIB),
            char_size: Some(Bytes(char_bytes)),
            seekers: 1,
            seeks: 16,
            files: 0,
            ..BonnieSpec::default()
        };
        let chunks = Bytes::MIB / (8 * Bytes::KIB);
        // Block write + rewrite + at most every seek rewriting.
        let other_writes = 2 * chunks + 16;

        let sys = BonnieSpec {
            char_mode: CharMode::Syscall,
            ..base.clone()
        };
        let before = thread_write_syscalls();
        let s = crate::run_quiet(&sys, tmp.path(), &flag).expect("syscall run");
        let writes = thread_write_syscalls() - before;
        assert!(writes >= char_bytes + 2 * chunks, "{writes} write calls");
        assert!(writes <= char_bytes + other_writes + 64, "{writes} write calls");
        let tp = s.phases[0].metrics[0].1;
        assert!(tp > 0.0 && tp.is_finite());
        // One timed operation per 8 KiB batch of one-byte calls, not per byte: the per-char
        // histograms count 8 operations for 64 KiB, however many syscalls they made.
        for phase in [SEQ_WRITE_CHAR, SEQ_READ_CHAR] {
            let h = s.histograms.iter().find(|h| h.phase == phase).expect("histogram");
            let ops: u64 = h.bins.iter().map(|b| b.1).sum();
            assert_eq!(ops, char_bytes / (8 * Bytes::KIB), "{phase}: {:?}", h.bins);
        }

        let stdio = BonnieSpec {
            char_mode: CharMode::Stdio,
            ..base
        };
        let before = thread_write_syscalls();
        crate::run_quiet(&stdio, tmp.path(), &flag).expect("stdio run");
        let writes = thread_write_syscalls() - before;
        // 64 KiB through a ≥ 512-byte buffer is at most 128 writes.
        assert!(writes <= 128 + other_writes + 64, "{writes} write calls");
        assert!(crate::dir_is_empty(tmp.path()));
    }

    #[test]
    fn interrupt_returns_interrupted_and_cleans_up() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spec = BonnieSpec {
            file_size: Bytes(64 * Bytes::MIB),
            char_mode: CharMode::Syscall,
            char_size: Some(Bytes(64 * Bytes::MIB)),
            files: 0,
            ..BonnieSpec::default()
        };
        let started = std::time::Instant::now();
        let r = crate::run_interrupted_after(&spec, tmp.path(), Duration::from_millis(100));
        assert!(matches!(r, Err(EngineError::Interrupted)), "{r:?}");
        // 64 MiB at one syscall per byte would take a minute; the flag ends it at once.
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
        assert!(crate::dir_is_empty(tmp.path()));

        // Interrupted before the first small-file phase: nothing is created either.
        let flag = AtomicBool::new(true);
        let files = BonnieSpec {
            file_size: Bytes(0),
            files: 1000,
            ..BonnieSpec::default()
        };
        assert!(matches!(
            crate::run_quiet(&files, tmp.path(), &flag),
            Err(EngineError::Interrupted)
        ));
        assert!(crate::dir_is_empty(tmp.path()));
    }

    #[test]
    fn small_files_only_with_one_directory() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let spec = BonnieSpec {
            file_size: Bytes(0),
            files: 500,
            fsync: false,
            ..BonnieSpec::default()
        };
        let s = crate::run_quiet(&spec, tmp.path(), &flag).expect("run");
        let names: Vec<&str> = s.phases.iter().map(|p| p.phase.as_str()).collect();
        assert_eq!(
            names,
            [SEQ_CREATE, SEQ_STAT, SEQ_DELETE, RAND_CREATE, RAND_STAT, RAND_DELETE]
        );
        assert!(crate::dir_is_empty(tmp.path()));
    }

    /// `stat_passes` and `read_passes`: each pass begins as a phase (the progress hook sees
    /// it, and a run that drops caches drops them before it), the phase is recorded once, its
    /// histogram holds every pass's operations, and its rate is all of them over the summed time.
    #[test]
    fn passes_time_the_whole_phase_over_every_pass() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let spec = BonnieSpec {
            stat_passes: 3,
            read_passes: 2,
            ..tiny()
        };
        assert!(
            spec.describe().contains("read_passes=2 stat_passes=3"),
            "{}",
            spec.describe()
        );
        let seen = std::sync::Mutex::new(Vec::new());
        let on_phase = |p: &str| seen.lock().expect("test mutex").push(p.to_string());
        let ctx = RunContext {
            on_phase: &on_phase,
            ..RunContext::quiet(tmp.path(), &flag)
        };
        let sample = spec.run(&ctx).expect("bonnie run");
        let seen = seen.lock().expect("test mutex").clone();
        let count = |p: &str| seen.iter().filter(|s| *s == p).count();
        assert_eq!(
            (count(SEQ_STAT), count(RAND_STAT), count(SEQ_READ_BLOCK)),
            (3, 3, 2),
            "{seen:?}"
        );
        assert_eq!(count(SEQ_CREATE), 1);
        let names: Vec<&str> = sample.phases.iter().map(|p| p.phase.as_str()).collect();
        assert_eq!(names, spec.phases().iter().map(String::as_str).collect::<Vec<_>>());
        let ops = |p: &str| -> u64 {
            let h = sample.histograms.iter().find(|h| h.phase == p).expect("histogram");
            h.bins.iter().map(|(_, n)| n).sum()
        };
        assert_eq!((ops(SEQ_STAT), ops(RAND_STAT), ops(SEQ_CREATE)), (900, 900, 300));
        let chunks = spec.file_size.get() / spec.chunk_size.get();
        assert_eq!(ops(SEQ_READ_BLOCK), 2 * chunks);
        for p in [SEQ_STAT, RAND_STAT] {
            let r = sample.phases.iter().find(|r| r.phase == p).unwrap();
            let rate = r.metrics[0].1;
            assert!(
                (rate * r.wall.as_secs_f64() - 900.0).abs() < 1.0,
                "{p}: {rate}/s over {:?}",
                r.wall
            );
        }
        assert!(crate::dir_is_empty(tmp.path()), "directory left non-empty");
        // Zero passes is refused.
        let zero = BonnieSpec {
            stat_passes: 0,
            ..tiny()
        };
        assert!(zero
            .validate()
            .unwrap_err()
            .0
            .contains("stat_passes must be between 1 and 64"));
    }

    #[test]
    fn errors_name_the_operation_and_path() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        // A leftover test directory makes the untimed mkdir fail with EEXIST.
        std::fs::create_dir(tmp.path().join("bonnie.files")).expect("mkdir");
        let spec = BonnieSpec {
            file_size: Bytes(0),
            files: 10,
            ..BonnieSpec::default()
        };
        match crate::run_quiet(&spec, tmp.path(), &flag) {
            Err(EngineError::Io { what, source }) => {
                assert!(what.starts_with("mkdir ") && what.contains("bonnie.files"), "{what}");
                assert_eq!(source.kind(), io::ErrorKind::AlreadyExists);
            }
            other => panic!("expected an I/O error, got {other:?}"),
        }
        let missing = tmp.path().join("no-such-dir");
        match crate::run_quiet(&spec, &missing, &flag) {
            Err(EngineError::Io { what, .. }) => assert!(what.contains("no-such-dir"), "{what}"),
            other => panic!("expected an I/O error, got {other:?}"),
        }
    }

    #[test]
    fn enospc_is_a_clear_error() {
        let e = ERR.io_in(
            "write",
            Path::new("/mnt/x/bonnie.data"),
            None,
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        let text = e.to_string();
        assert!(text.starts_with("write /mnt/x/bonnie.data (filesystem full"), "{text}");
        assert!(text.contains("No space left on device"), "{text}");
    }

    #[test]
    fn names_follow_bonnie_layout() {
        let flag = AtomicBool::new(false);
        let mut rng = SmallRng::seed_from_u64(1);
        let seq = NameTable::files(1000, 1, false, &mut rng, &flag).expect("names");
        let rnd = NameTable::files(1000, 4, true, &mut rng, &flag).expect("names");
        for i in 0..1000 {
            let s = seq.get(i).expect("name").to_str().expect("ascii");
            let hex = format!("{i:010x}");
            assert!(s.starts_with(&hex) && s.len() <= 10 + RAND_EXTRA_LEN, "{s}");
            let r = rnd.get(i).expect("name").to_str().expect("ascii");
            let (dir, file) = r.split_once('/').expect("dir prefix");
            assert_eq!(dir, format!("{:05}", i * 4 / 1000));
            assert!(file.ends_with(&hex) && file.len() <= 10 + RAND_EXTRA_LEN, "{r}");
        }
        // Sequential names sort in creation order.
        let mut v: Vec<&CStr> = (0..1000).map(|i| seq.get(i).expect("name")).collect();
        let sorted = v.clone();
        v.sort();
        assert_eq!(v, sorted);
        assert_eq!(NameTable::dirs(1).len(), 0);
        assert_eq!(NameTable::dirs(3).get(2).expect("dir"), c"00002");
    }

    #[test]
    fn spec_defaults_match_bonnie() {
        let s: BonnieSpec = toml::from_str("").expect("empty spec");
        assert_eq!(s, BonnieSpec::default());
        assert_eq!(s.file_size, Bytes(512 * Bytes::MIB));
        assert_eq!(s.chunk_size, Bytes(8192));
        assert_eq!((s.seekers, s.seeks, s.files, s.dirs), (5, 8192, 16384, 1));
        assert_eq!((s.file_min_size, s.file_max_size), (Bytes(0), Bytes(0)));
        assert!(s.fsync);
        assert_eq!(s.char_mode, CharMode::Stdio);
        assert_eq!(s.effective_char_size(), 512 * Bytes::MIB);
        let sys = BonnieSpec {
            char_mode: CharMode::Syscall,
            ..s.clone()
        };
        assert_eq!(sys.effective_char_size(), 3 * Bytes::MIB);
        let small = BonnieSpec {
            file_size: Bytes(Bytes::MIB),
            ..sys
        };
        assert_eq!(small.effective_char_size(), Bytes::MIB);
        assert!(s.validate().is_ok());
        assert_eq!(s.phases().len(), 12);
    }

    #[test]
    fn spec_parses_the_preset_fields() {
        let text = r#"
            file_size = "1GiB"
            chunk_size = "16k"
            char_mode = "syscall"
            char_size = "4M"
            seekers = 3
            seeks = 4000
            files = 1024
            file_min_size = 0
            file_max_size = "4k"
            dirs = 8
            fsync = false
            seed = 7
        "#;
        let s: BonnieSpec = toml::from_str(text).expect("spec");
        assert_eq!(s.file_size, Bytes(Bytes::GIB));
        assert_eq!(s.chunk_size, Bytes(16 * 1024));
        assert_eq!(s.char_mode, CharMode::Syscall);
        assert_eq!(s.char_size, Some(Bytes(4 * Bytes::MIB)));
        assert_eq!((s.seekers, s.seeks, s.files, s.dirs, s.seed), (3, 4000, 1024, 8, 7));
        assert_eq!(s.file_max_size, Bytes(4096));
        assert!(!s.fsync);
        assert!(s.validate().is_ok());
        let back: BonnieSpec = toml::from_str(&toml::to_string(&s).expect("serialize")).expect("reparse");
        assert_eq!(back, s);

        let err = toml::from_str::<BonnieSpec>("file_sise = \"1G\"").expect_err("unknown field");
        assert!(err.to_string().contains("file_sise"), "{err}");
        assert!(toml::from_str::<BonnieSpec>("char_mode = \"mmap\"").is_err());
    }

    #[test]
    fn validation_rejects_impossible_relations() {
        let ok = BonnieSpec::default();
        let bad = [
            BonnieSpec {
                chunk_size: Bytes(0),
                ..ok.clone()
            },
            BonnieSpec {
                file_size: Bytes(4096),
                chunk_size: Bytes(8192),
                ..ok.clone()
            },
            BonnieSpec {
                file_min_size: Bytes(10),
                file_max_size: Bytes(5),
                ..ok.clone()
            },
            BonnieSpec { dirs: 0, ..ok.clone() },
            BonnieSpec {
                seekers: 0,
                ..ok.clone()
            },
            BonnieSpec {
                char_size: Some(Bytes(Bytes::GIB)),
                ..ok.clone()
            },
            BonnieSpec {
                file_size: Bytes(0),
                files: 0,
                ..ok.clone()
            },
        ];
        for b in &bad {
            assert!(b.validate().is_err(), "{b:?} should be invalid");
        }
        // A chunk larger than file_size is fine when the I/O phases are skipped.
        let files_only = BonnieSpec {
            file_size: Bytes(0),
            chunk_size: Bytes(Bytes::MIB),
            ..ok
        };
        assert!(files_only.validate().is_ok());
        assert_eq!(files_only.phases().len(), 6);
        let flag = AtomicBool::new(false);
        let tmp = tempfile::tempdir().expect("tempdir");
        assert!(matches!(
            crate::run_quiet(&bad[3], tmp.path(), &flag),
            Err(EngineError::Invalid(_))
        ));
    }

    #[test]
    fn scaling_keeps_sane_minimums_and_skips() {
        let s = BonnieSpec {
            char_size: Some(Bytes(8 * Bytes::MIB)),
            ..BonnieSpec::default()
        };
        let WorkloadKind::Bonnie(half) = s.scaled(0.5) else {
            panic!("scaled bonnie is bonnie")
        };
        assert_eq!(half.file_size, Bytes(256 * Bytes::MIB));
        assert_eq!(half.char_size, Some(Bytes(4 * Bytes::MIB)));
        assert_eq!((half.files, half.seeks), (8192, 4096));
        assert_eq!(half.chunk_size, s.chunk_size);
        let WorkloadKind::Bonnie(tiny) = s.scaled(0.0001) else {
            panic!("scaled bonnie is bonnie")
        };
        assert_eq!(tiny.file_size, Bytes(16 * Bytes::MIB));
        assert_eq!(tiny.files, 256);
        assert!(tiny.char_size.is_some_and(|c| c.get() >= Bytes::MIB));
        assert!(tiny.validate().is_ok());
        let skip = BonnieSpec {
            file_size: Bytes(0),
            ..BonnieSpec::default()
        };
        let WorkloadKind::Bonnie(skip2) = skip.scaled(2.0) else {
            panic!("scaled bonnie is bonnie")
        };
        assert_eq!(skip2.file_size, Bytes(0));
        assert_eq!(skip2.files, 32768);
    }

    #[test]
    fn disk_bytes_and_describe() {
        let s = BonnieSpec {
            files: 1000,
            file_max_size: Bytes(5000),
            ..BonnieSpec::default()
        };
        let fp = s.footprint();
        assert!(fp.block_bytes >= 512 * Bytes::MIB && fp.files == 1000, "{fp:?}");
        let d = s.describe();
        assert!(
            d.starts_with("bonnie file_size=512MiB") && d.contains("files=1000"),
            "{d}"
        );
        assert!(!d.contains('\n'));
    }

    #[test]
    fn the_test_seek_credit_reports_more_seeks_than_it_does() {
        let json = serde_json::to_string(&BonnieSpec::default()).expect("json");
        assert!(!json.contains("test_seek_credit"), "{json}");
        let spec: BonnieSpec = toml::from_str("test_seek_credit = 2").expect("toml");
        assert!(spec.describe().contains("TEST-ONLY"), "{}", spec.describe());
        assert!(toml::from_str::<BonnieSpec>("test_seek_credit = 0")
            .expect("toml")
            .validate()
            .is_err());
        // Reads counted by the seek phase: the same work, twice the ops reported.
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let reads = |credit: u32| {
            let spec = BonnieSpec {
                file_size: Bytes(Bytes::MIB),
                char_size: Some(Bytes(0)),
                seekers: 1,
                seeks: 512,
                files: 0,
                test_seek_credit: credit,
                ..BonnieSpec::default()
            };
            let s = crate::run_quiet(&spec, tmp.path(), &flag).expect("run");
            let p = s.phases.iter().find(|p| p.phase == RANDOM_SEEKS).expect("seeks");
            let (rate, wall) = (p.metrics[0].1, p.wall.as_secs_f64());
            let h = s
                .histograms
                .iter()
                .find(|h| h.phase == RANDOM_SEEKS)
                .expect("histogram");
            let done: u64 = h.bins.iter().map(|b| b.1).sum();
            // The rate is the 512 seeks done × the credit over the phase's time.
            assert!(
                (rate * wall / (512.0 * f64::from(credit)) - 1.0).abs() < 0.05,
                "{rate} × {wall}"
            );
            done
        };
        assert_eq!(reads(1), 512);
        assert_eq!(reads(2), 512, "the same 512 seeks done, 1024 reported");
    }

    #[test]
    fn caches_once_is_left_out_of_the_spec_by_default_and_runs_every_phase() {
        let json = serde_json::to_string(&BonnieSpec::default()).expect("json");
        assert!(!json.contains("caches"), "{json}");
        let spec: BonnieSpec = toml::from_str("caches = \"once\"").expect("toml");
        assert_eq!(spec.caches, BonnieCaches::Once);
        assert!(spec.describe().contains("caches-dropped-once"));
        assert!(toml::from_str::<BonnieSpec>("caches = \"never\"").is_err());
        // A tiny run with caches = "once" records every phase.
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let spec = BonnieSpec {
            file_size: Bytes(Bytes::MIB),
            char_size: Some(Bytes(0)),
            seekers: 1,
            seeks: 16,
            files: 16,
            caches: BonnieCaches::Once,
            ..BonnieSpec::default()
        };
        let s = crate::run_quiet(&spec, tmp.path(), &flag).expect("run");
        assert!(s.phases.iter().any(|p| p.phase == RANDOM_SEEKS));
        assert!(s.phases.iter().any(|p| p.phase == "rand_delete"));
    }
}
