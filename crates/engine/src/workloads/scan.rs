//! The `scan` workload: a metadata scan of a tree of many small files, as `find`, `du`,
//! `ls -lR`, updatedb and backup tools do.
//!
//! Untimed preparation makes `scan/` in the run directory with `dirs` directories `dDDDDD`
//! holding the `files` files `fFFFFFFFF` spread evenly (directory `d` gets `files / dirs`
//! files, one more while `d < files % dirs`), each of `file_size` bytes of random data drawn
//! from `seed`, then `syncfs`. Two timed phases walk the tree, depth first, discovering the
//! directories from what it reads (as fts(3) does for `find` and `du`):
//!
//! | phase | what is timed | metrics |
//! |---|---|---|
//! | `readdir` | open every directory, read its entries with `getdents64(2)`, close it | `time` (s, lower is better), `rate` (entries/s, higher is better), latency |
//! | `stat` | the same walk, plus `fstatat(AT_SYMLINK_NOFOLLOW)` of every entry (`ls -l`, `du`) | the same |
//!
//! One operation is one directory entry (not counting `.` and `..`): `files + dirs` per phase.
//! The `getdents64` call that fills the buffer, and the open of a directory met in the walk,
//! are part of the operation of the entry that needed them, so the latency percentiles show
//! the cost of a refill or a descent where it falls. After each phase the counts of files,
//! directories (and, for `stat`, file bytes from `st_size`) are checked against the layout.
//! The phases change nothing, so no sync; caches are dropped before each if the run asks
//! (without that, both phases measure the dentry and inode caches the preparation filled).
//! Everything is removed at the end, untimed, also on error and on interrupt: the run
//! directory is left empty.
//!
//! Engine rules kept: the walker owns one 32 KiB `getdents64` buffer per tree level (the size
//! glibc's `opendir` uses), allocated before the timed region; entries are parsed in place
//! from that buffer and names passed to `fstatat`/`openat` as `CStr`s pointing into it, so the
//! hot loop allocates nothing; one clock read per operation ([`WorkerPool`]).
//!
//! References: getdents64(2) (`struct linux_dirent64`), fstatat(2), fts(3).

use crate::datasets::content::Content;
use crate::metric::{MetricId, RawSample, Unit};
use crate::phase::{Caches, LatencySet, Phases, Policy, Short, MIN_TIME};
use crate::pool::{Step, Worker, WorkerPool};
use crate::sysio;
use crate::units::Bytes;
use crate::Invalid;
use crate::{EngineError, ErrHint, RunContext, Workload, WorkloadKind};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use serde::{Deserialize, Serialize};
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Phase: read every directory's entries.
pub const READDIR: &str = "readdir";
/// Phase: read every directory's entries and stat each.
pub const STAT: &str = "stat";

/// Name of the workload's directory in the run directory.
const TOP: &CStr = c"scan";
/// Most directories (names carry 5 decimal digits).
const MAX_DIRS: u32 = 100_000;
/// Most files (names carry 8 decimal digits).
const MAX_FILES: u32 = 99_999_999;
/// Largest `file_size`: the workload is about metadata.
const MAX_FILE_SIZE: u64 = 64 * Bytes::MIB;
/// Smallest `files` after `--scale`.
const MIN_SCALED_FILES: u32 = 16;
/// `getdents64` buffer per tree level, bytes: glibc's `opendir` buffer.
const DIRENT_BUF: usize = 32 * 1024;
/// Deepest tree the walker descends (the layout has two levels: `scan/` and `dDDDDD/`).
const MAX_DEPTH: usize = 4;
/// Flags of every directory the walk opens.
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);
/// The timed phases: caches dropped if asked, median/p99/max latency, one note for short phases.
const POLICY: Policy = Policy::new().latency(LatencySet::Core).short(Short::Collect {
    limit: MIN_TIME,
    family: "scan",
    raise: "files",
});
/// Errors of a full filesystem say what to change.
const ERR: ErrHint = ErrHint("lower files, dirs or file_size, or use a larger target");

/// Parameters of the scan workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanSpec {
    /// Files in the tree. Default 50 000.
    #[serde(default = "default_files")]
    pub files: u32,
    /// Directories the files are spread over. Default 500 (100 files each).
    #[serde(default = "default_dirs")]
    pub dirs: u32,
    /// Size of every file, bytes. Default 0 (empty files: a pure metadata tree).
    #[serde(default)]
    pub file_size: Bytes,
    /// Seed of the file data. Default 0.
    #[serde(default)]
    pub seed: u64,
}

fn default_files() -> u32 {
    50_000
}
fn default_dirs() -> u32 {
    500
}

impl Default for ScanSpec {
    fn default() -> Self {
        ScanSpec {
            files: default_files(),
            dirs: default_dirs(),
            file_size: Bytes(0),
            seed: 0,
        }
    }
}

impl ScanSpec {
    /// Files in directory `d`.
    fn files_in(&self, d: u32) -> u32 {
        self.files / self.dirs + u32::from(d < self.files % self.dirs)
    }
}

impl Workload for ScanSpec {
    fn phases(&self) -> Vec<String> {
        vec![READDIR.to_string(), STAT.to_string()]
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        let scale = |n: u32, min: u32| super::scaled_count(n, factor, min);
        WorkloadKind::Scan(ScanSpec {
            files: scale(self.files, MIN_SCALED_FILES).min(MAX_FILES),
            dirs: scale(self.dirs, 1).min(MAX_DIRS),
            ..self.clone()
        })
    }

    fn validate(&self) -> Result<(), Invalid> {
        if self.dirs == 0 || self.dirs > MAX_DIRS {
            return Err(Invalid(format!(
                "dirs must be between 1 and {MAX_DIRS} (is {})",
                self.dirs
            )));
        }
        if self.files > MAX_FILES {
            return Err(Invalid(format!(
                "files must be at most {MAX_FILES} (is {})",
                self.files
            )));
        }
        if self.file_size.get() > MAX_FILE_SIZE {
            return Err(Invalid(format!(
                "file_size must be at most {} (is {}): scan measures metadata",
                Bytes(MAX_FILE_SIZE),
                self.file_size
            )));
        }
        Ok(())
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        crate::fstype::Footprint::default()
            .dirs(1, 4)
            .dirs(u64::from(self.dirs), 6)
            .files(u64::from(self.files), self.file_size.get(), 9)
    }

    fn describe(&self) -> String {
        format!(
            "scan files={} dirs={} file_size={}",
            self.files, self.dirs, self.file_size
        )
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        self.validate()?;
        let top_path = ctx.dir.join(TOP.to_string_lossy().as_ref());
        let result = run_phases(self, ctx, &top_path);
        let removed = std::fs::remove_dir_all(&top_path);
        match (result, removed) {
            (Ok(_), Err(e)) if top_path.exists() => Err(EngineError::io(format!("remove {}", top_path.display()), e)),
            (result, _) => result,
        }
    }
}

fn run_phases(spec: &ScanSpec, ctx: &RunContext, top_path: &Path) -> Result<RawSample, EngineError> {
    let top = prepare(spec, ctx.dir, top_path, ctx.interrupt)?;
    let mut phases = Phases::new(ctx);
    let want = Counts {
        files: u64::from(spec.files),
        dirs: u64::from(spec.dirs),
        bytes: u64::from(spec.files) * spec.file_size.get(),
    };
    for (phase, stat) in [(READDIR, false), (STAT, true)] {
        let walker = Walker::new(top.as_fd(), top_path, stat);
        phases.begin(phase, Caches::DropIfAsked);
        let t = phases.pool(WorkerPool::new(), vec![walker])?;
        let got = t.value.outputs[0];
        let expect = Counts {
            bytes: if stat { want.bytes } else { 0 },
            ..want
        };
        if got != expect || t.value.ops != want.files + want.dirs {
            return Err(EngineError::Invalid(format!(
                "{phase} of {} found {got:?} in {} operations, but it holds {expect:?}",
                top_path.display(),
                t.value.ops
            )));
        }
        let secs = t.wall.as_secs_f64().max(1e-9);
        let metrics = vec![
            (MetricId::lower("time", Unit::Seconds), t.wall.as_secs_f64()),
            (MetricId::higher("rate", Unit::OpsPerSec), t.value.ops as f64 / secs),
        ];
        phases.record(phase, &t, metrics, &POLICY);
    }
    Ok(phases.finish())
}

/// Untimed: makes `scan/` under `parent` with the layout of `spec`, syncs, and returns it open.
fn prepare(spec: &ScanSpec, parent: &Path, top_path: &Path, interrupt: &AtomicBool) -> Result<OwnedFd, EngineError> {
    if interrupt.load(Ordering::Relaxed) {
        return Err(EngineError::Interrupted);
    }
    let parent_fd = rustix::fs::open(parent, DIR_FLAGS, Mode::empty())
        .map_err(|e| EngineError::io(format!("open directory {}", parent.display()), e.into()))?;
    rustix::fs::mkdirat(&parent_fd, TOP, Mode::from_raw_mode(0o755))
        .map_err(|e| ERR.io_in("mkdir", top_path, None, e.into()))?;
    let top = rustix::fs::openat(&parent_fd, TOP, DIR_FLAGS, Mode::empty())
        .map_err(|e| ERR.io_in("open", top_path, None, e.into()))?;
    let mut data = vec![0u8; spec.file_size.get().min(Bytes::MIB) as usize];
    Content::Random.fill(&mut data, spec.seed ^ 0x7363_616e);
    let files: u64 = (0..spec.dirs).map(|d| u64::from(spec.files_in(d))).sum();
    let mut step = crate::progress::step(
        format!("scan data set ({} directories, {files} files)", spec.dirs),
        Some(files),
        "files",
    );
    let mut file = 0u32;
    for d in 0..spec.dirs {
        let dname = CString::new(format!("d{d:05}")).expect("no NUL in a formatted name");
        rustix::fs::mkdirat(&top, &dname, Mode::from_raw_mode(0o755))
            .map_err(|e| ERR.io_in("mkdir", top_path, Some(&dname), e.into()))?;
        let dir = rustix::fs::openat(&top, &dname, DIR_FLAGS, Mode::empty())
            .map_err(|e| ERR.io_in("open", top_path, Some(&dname), e.into()))?;
        let dir_path = top_path.join(dname.to_string_lossy().as_ref());
        for _ in 0..spec.files_in(d) {
            if interrupt.load(Ordering::Relaxed) {
                return Err(EngineError::Interrupted);
            }
            let fname = CString::new(format!("f{file:08}")).expect("no NUL in a formatted name");
            let fd = rustix::fs::openat(
                &dir,
                &fname,
                OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o644),
            )
            .map_err(|e| ERR.io_in("create", &dir_path, Some(&fname), e.into()))?;
            let mut left = spec.file_size.get();
            while left > 0 {
                let n = left.min(data.len() as u64) as usize;
                sysio::write_all(&fd, &data[..n]).map_err(|e| ERR.io_in("write", &dir_path, Some(&fname), e))?;
                left -= n as u64;
            }
            sysio::close_checked(fd).map_err(|e| ERR.io_in("close", &dir_path, Some(&fname), e.into()))?;
            file += 1;
            step.set(u64::from(file));
        }
    }
    rustix::fs::syncfs(&top).map_err(|e| ERR.io_in("syncfs", top_path, None, e.into()))?;
    step.finish();
    Ok(top)
}

/// What a walk counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    /// Entries that are not directories.
    files: u64,
    /// Directories below the walk's root.
    dirs: u64,
    /// `st_size` of the regular files (only when the walk stats).
    bytes: u64,
}

/// One open directory of the walk and its `getdents64` buffer.
struct Level {
    fd: Option<OwnedFd>,
    buf: Vec<u8>,
    /// Next record in `buf`, and the end of what the last `getdents64` filled.
    pos: usize,
    len: usize,
}

/// `d_type` of a directory and of an entry whose type the filesystem does not report.
const DT_DIR: u8 = libc::DT_DIR;
const DT_UNKNOWN: u8 = libc::DT_UNKNOWN;
/// Offsets in `struct linux_dirent64`: `d_reclen` (u16), `d_type` (u8), `d_name`.
const RECLEN: usize = 16;
const TYPE: usize = 18;
const NAME: usize = 19;

/// Depth-first walk of the tree under `root`, one directory entry per operation.
struct Walker<'a> {
    root: BorrowedFd<'a>,
    path: &'a Path,
    stat: bool,
    levels: Vec<Level>,
    /// Open levels; 0 before the start and after the end.
    depth: usize,
    started: bool,
    counts: Counts,
}

impl<'a> Walker<'a> {
    fn new(root: BorrowedFd<'a>, path: &'a Path, stat: bool) -> Walker<'a> {
        Walker {
            root,
            path,
            stat,
            levels: (0..MAX_DEPTH)
                .map(|_| Level {
                    fd: None,
                    buf: vec![0; DIRENT_BUF],
                    pos: 0,
                    len: 0,
                })
                .collect(),
            depth: 0,
            started: false,
            counts: Counts::default(),
        }
    }

    fn err(&self, op: &str, name: Option<&CStr>, e: io::Error) -> EngineError {
        ERR.io_in(op, self.path, name, e)
    }
}

impl Worker for Walker<'_> {
    type Output = Counts;

    fn op(&mut self) -> Result<Step, EngineError> {
        if !self.started {
            self.started = true;
            let fd = rustix::fs::openat(self.root, c".", DIR_FLAGS, Mode::empty())
                .map_err(|e| self.err("open", None, e.into()))?;
            let first = &mut self.levels[0];
            (first.fd, first.pos, first.len) = (Some(fd), 0, 0);
            self.depth = 1;
        }
        loop {
            if self.depth == 0 {
                return Ok(Step::Done);
            }
            let (upper, lower) = self.levels.split_at_mut(self.depth);
            let level = &mut upper[self.depth - 1];
            let Some(fd) = level.fd.as_ref() else {
                return Err(EngineError::Invalid(
                    "internal error: scan walk lost a directory".into(),
                ));
            };
            if level.pos >= level.len {
                let n = crate::sysio::getdents64(fd.as_fd(), &mut level.buf)
                    .map_err(|e| ERR.io_in("getdents", self.path, None, e))?;
                if n == 0 {
                    if let Some(fd) = level.fd.take() {
                        sysio::close_checked(fd).map_err(|e| ERR.io_in("close", self.path, None, e.into()))?;
                    }
                    self.depth -= 1;
                    continue;
                }
                (level.pos, level.len) = (0, n);
            }
            let rec = &level.buf[level.pos..level.len];
            let reclen = match rec.get(RECLEN..RECLEN + 2) {
                Some(&[lo, hi]) => usize::from(u16::from_ne_bytes([lo, hi])),
                _ => 0,
            };
            if reclen <= NAME || reclen > rec.len() {
                return Err(EngineError::Invalid(format!(
                    "getdents64 under {} returned a record of {reclen} bytes",
                    self.path.display()
                )));
            }
            level.pos += reclen;
            let d_type = rec[TYPE];
            let name = CStr::from_bytes_until_nul(&rec[NAME..reclen])
                .map_err(|_| EngineError::Invalid("getdents64 returned a name without NUL".into()))?;
            let bytes = name.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let mut is_dir = d_type == DT_DIR;
            if self.stat || d_type == DT_UNKNOWN {
                let st = rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(|e| ERR.io_in("stat", self.path, Some(name), e.into()))?;
                let ft = FileType::from_raw_mode(st.st_mode);
                is_dir = ft == FileType::Directory;
                if self.stat && ft == FileType::RegularFile {
                    self.counts.bytes += st.st_size as u64;
                }
            }
            if !is_dir {
                self.counts.files += 1;
                return Ok(Step::Op);
            }
            self.counts.dirs += 1;
            let Some(next) = lower.first_mut() else {
                return Err(EngineError::Invalid(format!(
                    "the tree under {} is deeper than {MAX_DEPTH} levels",
                    self.path.display()
                )));
            };
            let sub = rustix::fs::openat(fd, name, DIR_FLAGS, Mode::empty())
                .map_err(|e| ERR.io_in("open", self.path, Some(name), e.into()))?;
            (next.fd, next.pos, next.len) = (Some(sub), 0, 0);
            self.depth += 1;
            return Ok(Step::Op);
        }
    }

    fn finish(self) -> Counts {
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::test_util::metric;

    fn small() -> ScanSpec {
        ScanSpec {
            files: 1000,
            dirs: 13,
            file_size: Bytes(100),
            seed: 1,
        }
    }

    /// Files, directories and regular-file bytes under `dir`, counted with `std::fs`.
    fn std_count(dir: &Path) -> Counts {
        let mut c = Counts::default();
        for e in std::fs::read_dir(dir).expect("read_dir") {
            let e = e.expect("entry");
            let md = e.metadata().expect("metadata");
            if md.is_dir() {
                c.dirs += 1;
                let sub = std_count(&e.path());
                c.files += sub.files;
                c.dirs += sub.dirs;
                c.bytes += sub.bytes;
            } else {
                c.files += 1;
                c.bytes += md.len();
            }
        }
        c
    }

    #[test]
    fn runs_both_phases_counts_every_entry_and_leaves_nothing() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let spec = small();
        let sample = crate::run_quiet(&spec, tmp.path(), &flag).expect("scan run");
        let names: Vec<&str> = sample.phases.iter().map(|p| p.phase.as_str()).collect();
        assert_eq!(names, [READDIR, STAT]);
        for p in &sample.phases {
            let (m, t) = &p.metrics[0];
            assert_eq!((m.name.as_str(), m.unit), ("time", Unit::Seconds));
            assert!(*t > 0.0 && (t - p.wall.as_secs_f64()).abs() < 1e-9, "{}", p.phase);
            let rate = metric(p, "rate");
            assert!((rate * t - 1013.0).abs() < 1e-6 * 1013.0, "{} {rate} × {t}", p.phase);
            assert!(metric(p, "lat_p50") > 0.0 && metric(p, "lat_max") >= metric(p, "lat_p99"));
        }
        assert!(sample.notes.iter().any(|n| n.starts_with("scan phases under")));
        assert!(crate::dir_is_empty(tmp.path()), "run directory left non-empty");
    }

    #[test]
    fn walk_counts_what_std_read_dir_counts() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        // An uneven spread (1000 = 13 × 76 + 12), and 5 files in 7 directories (two left empty).
        for spec in [
            small(),
            ScanSpec {
                files: 5,
                dirs: 7,
                ..small()
            },
        ] {
            let top_path = tmp.path().join("scan");
            let top = prepare(&spec, tmp.path(), &top_path, &flag).expect("prepare");
            let reference = std_count(&top_path);
            assert_eq!(
                (reference.files, reference.dirs, reference.bytes),
                (u64::from(spec.files), u64::from(spec.dirs), u64::from(spec.files) * 100)
            );
            for stat in [false, true] {
                let run = crate::phase::untimed(vec![Walker::new(top.as_fd(), &top_path, stat)], &flag).expect("walk");
                let got = run.outputs[0];
                assert_eq!((got.files, got.dirs), (reference.files, reference.dirs), "stat={stat}");
                assert_eq!(got.bytes, if stat { reference.bytes } else { 0 });
                assert_eq!(run.ops, reference.files + reference.dirs);
            }
            drop(top);
            std::fs::remove_dir_all(&top_path).expect("remove");
        }
    }

    #[test]
    fn validation_refuses_bad_parameters() {
        let ok = ScanSpec::default();
        assert!(ok.validate().is_ok());
        let bad = [
            ScanSpec { dirs: 0, ..ok.clone() },
            ScanSpec {
                dirs: MAX_DIRS + 1,
                ..ok.clone()
            },
            ScanSpec {
                files: MAX_FILES + 1,
                ..ok.clone()
            },
            ScanSpec {
                file_size: Bytes(MAX_FILE_SIZE + 1),
                ..ok.clone()
            },
        ];
        for b in &bad {
            let e = b.validate().expect_err("should be invalid");
            assert!(e.0.contains("must be"), "{e}");
        }
        assert!(toml::from_str::<ScanSpec>("files = 10\nfile_sise = \"1k\"").is_err());
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        assert!(matches!(
            crate::run_quiet(&bad[0], tmp.path(), &flag),
            Err(EngineError::Invalid(_))
        ));
        assert!(crate::dir_is_empty(tmp.path()));
    }

    #[test]
    fn scaling_footprint_and_interrupt() {
        let WorkloadKind::Scan(s) = ScanSpec::default().scaled(0.01) else {
            panic!("scaled scan is scan")
        };
        assert_eq!((s.files, s.dirs), (500, 5));
        let WorkloadKind::Scan(tiny) = ScanSpec::default().scaled(1e-9) else {
            panic!("scaled scan is scan")
        };
        assert!(tiny.validate().is_ok() && tiny.files == MIN_SCALED_FILES);
        let fp = ScanSpec::default().footprint();
        assert_eq!((fp.files, fp.dirs, fp.block_bytes), (50_000, 501, 0));
        crate::workloads::test_util::assert_interrupted_leaves_nothing(&small());
    }
}
