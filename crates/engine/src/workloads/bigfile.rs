//! The `bigfile` workload: the 2022 huge-file creation test. One file of `size` bytes is
//! written in `block`-sized writes, and writing, flushing, closing, unlinking and getting the
//! space back are timed separately.
//!
//! | phase | what is timed | metrics |
//! |---|---|---|
//! | `write` | `size / block` write(2) calls into a new file (opened untimed, `O_CREAT\|O_EXCL`) | `time` (s), `throughput` (MiB/s), latency percentiles |
//! | `fsync` | fsync(2) of the file; only with `fsync = true` (the default) | `time` (s), `durable_throughput` = size / (write + fsync) (MiB/s) |
//! | `close` | close(2) of the file (some filesystems flush or trim preallocations here) | `time` (s) |
//! | `unlink` | unlink(2) of the file | `time` (s) |
//! | `space_freed` | from the end of unlink until statfs(2) shows the space back: free blocks at least what they were before the write, less 1 % of `size` (at least 8 MiB) of slack for metadata; polled every [`POLL`] | `time` (s) |
//!
//! Caches are synced and dropped once, before `write` (when the policy asks for it), never
//! between the phases: a `sync` before `fsync` or `close` would do their work for them. If
//! the space is not back within `space_timeout` the `space_freed` phase is left out of the
//! repeat with a note (a timeout is not a time). Each repeat is one sample, so the
//! per-iteration series of the study (and a first-run effect, flagged by the report) come
//! from the stored repeats.
//!
//! The data is `block` bytes of `content` (random by default, so compression cannot shrink
//! it) with the block number in its first eight bytes, so no two blocks are alike.
//!
//! Engine rules kept: the block buffer is allocated once; the write loop is the
//! [`WorkerPool`]'s (one clock read per block, interrupt polled per block); the single-call
//! phases read the clock once before and once after; the file is closed and removed on error
//! and interrupt; errors name the operation and path, ENOSPC with a hint.

use crate::metric::{MetricId, RawSample, Unit};
use crate::phase::{Caches, LatencySet, Phases, Policy, Timed};
use crate::pool::{Step, Worker, WorkerPool};
use crate::sysio::close_checked;
use crate::units::{Bytes, Dur};
use crate::workloads::mongo::Content;
use crate::Invalid;
use crate::{EngineError, ErrHint, RunContext, Workload, WorkloadKind};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Phase: write the file.
pub const WRITE: &str = "write";
/// Phase: fsync the file.
pub const FSYNC: &str = "fsync";
/// Phase: close the file.
pub const CLOSE: &str = "close";
/// Phase: unlink the file.
pub const UNLINK: &str = "unlink";
/// Phase: wait for the space to show as free.
pub const SPACE_FREED: &str = "space_freed";
/// Interval between two statfs(2) calls of `space_freed`.
pub const POLL: Duration = Duration::from_millis(5);
/// Name of the file in the run directory.
const FILE: &str = "bigfile.data";

/// The peak footprint of one file `name` written sequentially to `size` bytes (bigfile and its
/// referee dd): the file, growing, and its block map (ext2's indirect blocks are 1/1024 of it)
/// as extra bytes.
pub(super) fn one_file_footprint(name: &str, size: u64) -> crate::fstype::Footprint {
    crate::fstype::Footprint::default()
        .files(1, size, name.len() as u64)
        .growing()
        .extra(size / 1024)
}
/// Largest accepted block.
const MAX_BLOCK: u64 = Bytes::GIB;
/// Smallest size a scaled workload keeps.
const MIN_SCALED: u64 = 16 * Bytes::MIB;

/// Parameters of the bigfile workload. Sizes take `k`/`M`/`G` suffixes (binary).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BigfileSpec {
    /// Bytes to write, a whole number of blocks. Default 16 GiB.
    #[serde(default = "default_size")]
    pub size: Bytes,
    /// Bytes per write(2). Default 1 MiB.
    #[serde(default = "default_block")]
    pub block: Bytes,
    /// Time an fsync(2) as its own phase after the writes. Default true.
    #[serde(default = "super::default_true")]
    pub fsync: bool,
    /// File data: `"random"` (default), `"zeros"` or `"text"`.
    #[serde(default)]
    pub content: Content,
    /// Longest wait for the space to show as free after unlink. Default 120 s.
    #[serde(default = "default_space_timeout")]
    pub space_timeout: Dur,
}

fn default_size() -> Bytes {
    Bytes(16 * Bytes::GIB)
}
fn default_block() -> Bytes {
    Bytes(Bytes::MIB)
}
fn default_space_timeout() -> Dur {
    Dur(Duration::from_secs(120))
}

impl Default for BigfileSpec {
    fn default() -> Self {
        BigfileSpec {
            size: default_size(),
            block: default_block(),
            fsync: true,
            content: Content::default(),
            space_timeout: default_space_timeout(),
        }
    }
}

impl BigfileSpec {
    fn blocks(&self) -> u64 {
        self.size.get().checked_div(self.block.get()).unwrap_or(0)
    }
}

impl Workload for BigfileSpec {
    fn phases(&self) -> Vec<String> {
        let mut p = vec![WRITE];
        if self.fsync {
            p.push(FSYNC);
        }
        p.extend([CLOSE, UNLINK, SPACE_FREED]);
        p.into_iter().map(String::from).collect()
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        let block = self.block.get().max(1);
        let min = MIN_SCALED.max(block).div_ceil(block) * block;
        let size = self.size.scaled(factor, min).get() / block * block;
        WorkloadKind::Bigfile(BigfileSpec {
            size: Bytes(size),
            ..self.clone()
        })
    }

    fn validate(&self) -> Result<(), Invalid> {
        let block = self.block.get();
        if block == 0 || block > MAX_BLOCK {
            return Err(Invalid(format!(
                "block must be between 1 byte and 1GiB (is {})",
                self.block
            )));
        }
        if self.size.get() < block || self.size.get() % block != 0 {
            return Err(Invalid(format!(
                "size ({}) must be a whole number (at least 1) of blocks ({})",
                self.size, self.block
            )));
        }
        if self.space_timeout.0.is_zero() {
            return Err("space_timeout must be above 0, e.g. \"120s\"".into());
        }
        Ok(())
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        one_file_footprint(FILE, self.size.get())
    }

    fn content(&self) -> Option<crate::datasets::content::Content> {
        Some(self.content)
    }

    fn describe(&self) -> String {
        format!(
            "bigfile size={} block={} content={}{} space_timeout={}",
            self.size,
            self.block,
            self.content.as_str(),
            if self.fsync { " fsync" } else { " no-fsync" },
            self.space_timeout
        )
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        self.validate()?;
        if ctx.interrupt.load(Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        let path = ctx.dir.join(FILE);
        let mut run = Run {
            spec: self,
            ctx,
            path: &path,
            phases: Phases::new(ctx),
            file: None,
            created: false,
        };
        let result = run.all();
        if result.is_err() {
            run.file = None;
            if run.created {
                let _ = std::fs::remove_file(&path);
            }
        }
        result.map(|()| run.phases.finish())
    }
}

struct Run<'a, 'c> {
    spec: &'a BigfileSpec,
    ctx: &'a RunContext<'c>,
    path: &'a Path,
    phases: Phases<'a, 'c>,
    file: Option<File>,
    /// The file exists and is ours to remove on error.
    created: bool,
}

/// The write phase reports the median, p99 and maximum block latency; the others are one call.
const WRITE_POLICY: Policy = Policy::new().latency(LatencySet::Core);
/// fsync, close, unlink and space_freed continue the write: caches kept.
const NEXT_POLICY: Policy = Policy::new().caches(Caches::Keep);
/// Errors of a full filesystem say what to change.
const ERR: ErrHint = ErrHint("lower size, or use a larger target or image_size");

impl Run<'_, '_> {
    fn err(&self, op: &str, e: io::Error) -> EngineError {
        ERR.io(op, self.path, e)
    }

    /// Records `phase` with `time` first, then `extra`.
    fn push<T>(&mut self, phase: &str, t: &Timed<T>, policy: &Policy, extra: Vec<(MetricId, f64)>) {
        let mut metrics = vec![(MetricId::lower("time", Unit::Seconds), t.wall.as_secs_f64())];
        metrics.extend(extra);
        self.phases.record(phase, t, metrics, policy);
    }

    fn all(&mut self) -> Result<(), EngineError> {
        let spec = self.spec;
        let size = spec.size.get();
        let mib = size as f64 / Bytes::MIB as f64;
        let mut buf = vec![0u8; spec.block.get() as usize];
        spec.content.fill(&mut buf, 0x6269_6766);

        // Caches dropped once, before the write; the baseline of free space after that sync.
        self.phases.begin(WRITE, WRITE_POLICY.caches);
        let free_before = free_blocks_bytes(self.ctx.dir).map_err(|e| ERR.io("statfs", self.ctx.dir, e))?;
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(self.path)
            .map_err(|e| self.err("create", e))?;
        self.created = true;

        let writer = BlockWriter {
            file,
            path: self.path,
            buf,
            left: spec.blocks(),
            index: 0,
        };
        let mut t = self.phases.pool(WorkerPool::new(), vec![writer])?;
        let write_wall = t.wall;
        self.file = t.value.outputs.pop().flatten();
        let throughput = mib / write_wall.as_secs_f64().max(1e-9);
        self.push(
            WRITE,
            &t,
            &WRITE_POLICY,
            vec![(MetricId::higher("throughput", Unit::MibPerSec), throughput)],
        );

        if spec.fsync {
            self.check_interrupt()?;
            self.phases.begin(FSYNC, NEXT_POLICY.caches);
            let file = self.file.as_ref().ok_or_else(closed)?;
            let t = self
                .phases
                .region(|| file.sync_all().map_err(|e| self.err("fsync", e)))?;
            let durable = mib / (write_wall + t.wall).as_secs_f64().max(1e-9);
            self.push(
                FSYNC,
                &t,
                &NEXT_POLICY,
                vec![(MetricId::higher("durable_throughput", Unit::MibPerSec), durable)],
            );
        }

        self.check_interrupt()?;
        self.phases.begin(CLOSE, NEXT_POLICY.caches);
        let fd: OwnedFd = self.file.take().ok_or_else(closed)?.into();
        let t = self
            .phases
            .region(|| close_checked(fd).map_err(|e| self.err("close", e.into())))?;
        self.push(CLOSE, &t, &NEXT_POLICY, Vec::new());

        self.check_interrupt()?;
        self.phases.begin(UNLINK, NEXT_POLICY.caches);
        let t = self.phases.region(|| {
            std::fs::remove_file(self.path).map_err(|e| self.err("unlink", e))?;
            Ok(Instant::now())
        })?;
        let unlinked = t.value;
        self.created = false;
        self.push(UNLINK, &t, &NEXT_POLICY, Vec::new());

        self.phases.begin(SPACE_FREED, NEXT_POLICY.caches);
        let slack = (size / 100).max(8 * Bytes::MIB);
        let target = free_before.saturating_sub(slack);
        let timeout = spec.space_timeout.0;
        let mut t = self.phases.region(|| loop {
            let free = free_blocks_bytes(self.ctx.dir).map_err(|e| ERR.io("statfs", self.ctx.dir, e))?;
            let now = Instant::now();
            if free >= target {
                break Ok(Some(now));
            }
            if now - unlinked >= timeout {
                break Ok(None);
            }
            self.check_interrupt()?;
            std::thread::sleep(POLL);
        })?;
        match t.value {
            Some(at) => {
                // The phase's time runs from the unlink, not from the first look.
                t.wall = at - unlinked;
                self.push(SPACE_FREED, &t, &NEXT_POLICY, Vec::new());
            }
            None => self.phases.note(format!(
                "{SPACE_FREED}: the space of the {} file did not show as free within {} (space_timeout); phase left out",
                spec.size, spec.space_timeout
            )),
        }
        Ok(())
    }

    fn check_interrupt(&self) -> Result<(), EngineError> {
        if self.ctx.interrupt.load(Ordering::Relaxed) {
            Err(EngineError::Interrupted)
        } else {
            Ok(())
        }
    }
}

fn closed() -> EngineError {
    EngineError::Invalid("internal error: the big file was closed too early".into())
}

/// Free blocks of the filesystem holding `dir`, in bytes (`f_bfree × f_frsize`, reserved blocks
/// included). Not `provision::free_bytes` (`f_bavail`, what an unprivileged writer may use):
/// that reads 0 once a nearly full filesystem is into its reserve, so the space freed by the
/// unlink could not be seen coming back.
fn free_blocks_bytes(dir: &Path) -> io::Result<u64> {
    let st = rustix::fs::statvfs(dir).map_err(io::Error::from)?;
    Ok(st.f_bfree.saturating_mul(st.f_frsize))
}

/// The `write` phase: one op = one block; the block number goes into its first bytes.
struct BlockWriter<'p> {
    file: File,
    path: &'p Path,
    buf: Vec<u8>,
    left: u64,
    index: u64,
}

impl Worker for BlockWriter<'_> {
    type Output = Option<File>;

    fn op(&mut self) -> Result<Step, EngineError> {
        if self.left == 0 {
            return Ok(Step::Done);
        }
        let tag = self.index.to_le_bytes();
        let n = tag.len().min(self.buf.len());
        self.buf[..n].copy_from_slice(&tag[..n]);
        if let Err(e) = self.file.write_all(&self.buf) {
            return Err(ERR.io("write", self.path, e));
        }
        self.index += 1;
        self.left -= 1;
        Ok(Step::Op)
    }

    fn finish(self) -> Option<File> {
        Some(self.file)
    }
}

/// The file path a run uses in `dir` (for tests and diagnostics).
pub fn file_path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    fn small() -> BigfileSpec {
        BigfileSpec {
            size: Bytes(8 * Bytes::MIB),
            block: Bytes(Bytes::MIB),
            space_timeout: Dur(Duration::from_secs(30)),
            ..BigfileSpec::default()
        }
    }

    #[test]
    fn every_phase_is_timed_and_the_file_is_gone() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spec = small();
        let (s, seen) = crate::run_seeing_phases(&spec, tmp.path());
        let s = s.expect("bigfile run");
        assert_eq!(seen, spec.phases());
        let names: Vec<&str> = s.phases.iter().map(|p| p.phase.as_str()).collect();
        // The space of an 8 MiB file shows as free at once on the test's filesystem, or the
        // phase is left out with a note.
        if s.notes.iter().any(|n| n.starts_with(SPACE_FREED)) {
            assert_eq!(names, [WRITE, FSYNC, CLOSE, UNLINK]);
        } else {
            assert_eq!(names, [WRITE, FSYNC, CLOSE, UNLINK, SPACE_FREED]);
        }
        for p in &s.phases {
            let (m, v) = &p.metrics[0];
            assert_eq!((m.name.as_str(), m.unit), ("time", Unit::Seconds), "{}", p.phase);
            assert!(*v >= 0.0 && (*v - p.wall.as_secs_f64()).abs() < 1e-9);
        }
        let w = &s.phases[0];
        let tp = w
            .metrics
            .iter()
            .find(|(m, _)| m.name == "throughput")
            .expect("throughput")
            .1;
        assert!((tp * w.wall.as_secs_f64() - 8.0).abs() < 1e-6, "{tp}");
        assert!(w.metrics.iter().any(|(m, _)| m.name == "lat_max"));
        let durable = s.phases[1].metrics[1].1;
        assert!(durable > 0.0 && durable <= tp, "{durable} vs {tp}");
        assert!(!file_path(tmp.path()).exists());

        let no_sync = BigfileSpec {
            fsync: false,
            content: Content::Zeros,
            ..small()
        };
        let s = crate::run_quiet(&no_sync, tmp.path(), &AtomicBool::new(false)).expect("run");
        assert_eq!(s.phases[1].phase, CLOSE);
        assert_eq!(no_sync.phases(), [WRITE, CLOSE, UNLINK, SPACE_FREED]);
        assert!(std::fs::read_dir(tmp.path()).expect("dir").next().is_none());
    }

    #[test]
    fn writes_exactly_size_bytes_in_blocks() {
        // The single writer runs inline on this thread, so its write(2) bytes show in
        // /proc/thread-self/io.
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let spec = BigfileSpec {
            size: Bytes(3 * 4096),
            block: Bytes(4096),
            fsync: false,
            ..small()
        };
        let before = std::fs::read_to_string("/proc/thread-self/io").expect("io");
        let wchar = |t: &str| -> u64 {
            t.lines()
                .find_map(|l| l.strip_prefix("wchar:"))
                .and_then(|v| v.trim().parse().ok())
                .expect("wchar")
        };
        crate::run_quiet(&spec, tmp.path(), &flag).expect("run");
        let after = std::fs::read_to_string("/proc/thread-self/io").expect("io");
        assert_eq!(wchar(&after) - wchar(&before), 3 * 4096, "bytes written by this thread");
    }

    #[test]
    fn interrupt_and_errors_remove_the_file() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spec = BigfileSpec {
            size: Bytes(64 * Bytes::GIB),
            ..small()
        };
        let started = Instant::now();
        let r = crate::run_interrupted_after(&spec, tmp.path(), Duration::from_millis(50));
        assert!(matches!(r, Err(EngineError::Interrupted)), "{r:?}");
        assert!(started.elapsed() < Duration::from_secs(20));
        assert!(!file_path(tmp.path()).exists());

        let flag = AtomicBool::new(false);
        std::fs::write(file_path(tmp.path()), b"mine").expect("write");
        match crate::run_quiet(&small(), tmp.path(), &flag) {
            Err(EngineError::Io { what, source }) => {
                assert!(what.starts_with("create ") && what.ends_with(FILE), "{what}");
                assert_eq!(source.kind(), io::ErrorKind::AlreadyExists);
            }
            other => panic!("expected an I/O error, got {other:?}"),
        }
        assert_eq!(
            std::fs::read(file_path(tmp.path())).expect("read"),
            b"mine",
            "not ours to delete"
        );
        let e = ERR.io(
            "write",
            Path::new("/mnt/x/bigfile.data"),
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        assert!(
            e.to_string().starts_with("write /mnt/x/bigfile.data (filesystem full"),
            "{e}"
        );
    }

    #[test]
    fn spec_defaults_scaling_validation_and_space() {
        let s: BigfileSpec = toml::from_str("").expect("empty spec");
        assert_eq!(s, BigfileSpec::default());
        assert_eq!(
            (s.size, s.block, s.fsync),
            (Bytes(16 * Bytes::GIB), Bytes(Bytes::MIB), true)
        );
        assert!(s.validate().is_ok());
        let WorkloadKind::Bigfile(small) = s.scaled(0.05) else {
            panic!("scaled bigfile is bigfile")
        };
        assert_eq!(small.size.get() % Bytes::MIB, 0);
        assert_eq!(small.size.get() / Bytes::MIB, 819);
        let WorkloadKind::Bigfile(tiny) = s.scaled(1e-9) else {
            panic!("scaled bigfile is bigfile")
        };
        assert_eq!(tiny.size, Bytes(16 * Bytes::MIB));
        assert!(tiny.validate().is_ok());
        let fp = s.footprint();
        assert!(fp.block_bytes >= 16 * Bytes::GIB && fp.block_bytes + fp.extra_bytes < 17 * Bytes::GIB);
        for bad in [
            "size = \"1M\"\nblock = \"3M\"",
            "size = \"10M\"\nblock = \"3M\"",
            "block = 0",
            "space_timeout = \"0s\"",
        ] {
            let b: BigfileSpec = toml::from_str(bad).expect(bad);
            assert!(b.validate().is_err(), "{bad}");
        }
        assert!(toml::from_str::<BigfileSpec>("sise = 3").is_err());
        let t: BigfileSpec = toml::from_str("size = \"32GiB\"\nfsync = false\nspace_timeout = \"1m\"").expect("spec");
        assert_eq!(t.phases(), [WRITE, CLOSE, UNLINK, SPACE_FREED]);
        assert_eq!(t.space_timeout, Dur(Duration::from_secs(60)));
        assert!(t
            .describe()
            .starts_with("bigfile size=32GiB block=1MiB content=random no-fsync"));
    }
}
