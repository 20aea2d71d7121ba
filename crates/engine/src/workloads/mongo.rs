//! The `mongo` workload: the phases of the reiserfs team's mongo benchmark (`mongo.pl`, 2000),
//! run natively, with fragmentation counted through FIEMAP.
//!
//! References: the Mongo page of the Reiser4 wiki (the testsuite's introduction) and
//! `mongo.pl` from the reiserfs benchmark archive, read for what each phase does; no code is
//! taken from them. The 2000 journaling-filesystem test bench ran it with files of 100 B,
//! 1000 B and 10000 B (about 69 000 / 11 600 / 2 300 files in about 240 / 43 / 31
//! directories); [`MongoSpec::default`] is the first table, [`MongoSpec::study_2000`] all
//! three (the `mongo-2000` preset runs them as `mongo-100b`, `mongo-1k`, `mongo-10k`).
//!
//! Every worker (`processes`, one thread each, released together like mongo's processes
//! started in one shell line) owns its own pair of trees under `mongo/` in the run directory:
//! `tree1-WWW` (created) and `tree2-WWW` (its copy), each holding its share of the `dirs`
//! directories `dDDDDD` with its share of the `files` files `fFFFFFFFF` spread evenly.
//!
//! | phase | mongo.pl | what is timed (per worker, over its own trees) |
//! |---|---|---|
//! | `create` | Create (reiser_fract_tree) | mkdir of the tree and its directories; per file open(O_CREAT\|O_EXCL), write its size in one write per `1 MiB`, close |
//! | `frag_after_create` | Fragm. after Create | FIEMAP of every file of `tree1`: metric `extents_per_file` = fragments / files |
//! | `copy` | Copy (`cp -r`) | mkdir of `tree2` and its directories; per file open the source, create the copy, read/write until EOF, close both |
//! | `frag_after_copy` | Fragm. after Copy | as `frag_after_create`, over the files of both trees (mongo.pl counts the whole test directory) |
//! | `symlink` | Slinks (mongo_slinks) | `symlinkat` of `fFFFFFFFF.lnk` → `fFFFFFFFF` beside every file of `tree1` |
//! | `read` | Read (mongo_read) | open, read to EOF, close every file of both trees |
//! | `stat` | Stats (`find -type f`) | `fstatat(AT_SYMLINK_NOFOLLOW)` of every file and link of `tree1` and every file of `tree2` |
//! | `rename` | Rename | `renameat` of every file of `tree1` to `NAME.r` (the links are left dangling, as in mongo.pl) |
//! | `delete` | Delete (`rm -r`) | per directory: unlink its entries, rmdir it; then rmdir the tree; for both trees |
//!
//! Each timed phase reports `time` (seconds, lower is better, the study's unit), `rate`
//! (entries handled per second: files, links and directories) and latency percentiles; the
//! CPU use of the process and the machine is added by the engine. With `fsync = true` (the
//! default, the rule that write phases include the flush, doc/architecture.md) the phases that change
//! the filesystem (`create`, `copy`, `symlink`, `rename`, `delete`) end with one `syncfs(2)`
//! inside the timed region; mongo.pl ran `sync` after its timer instead.
//!
//! On a filesystem without symbolic links (exfat: [`crate::fstype::FsType::lacks`]) the
//! `symlink` phase is left out with the note "symlink: unsupported on exfat (no symbolic
//! links)"; `stat` and `delete` then handle the files alone and every other phase runs.
//!
//! Fragmentation is its own phase (`frag_after_create`, `frag_after_copy`) with one metric,
//! `extents_per_file` (ratio, lower is better): physically discontiguous pieces per file,
//! counted with the `FS_IOC_FIEMAP` ioctl ([`crate::fiemap`], the same count as
//! `filefrag`'s "extents found"), after a `syncfs` so delayed allocations have their place.
//! Its wall time and CPU are those of the walk (reported, not meaningful as a result). On a
//! filesystem without FIEMAP (tmpfs) both phases are left out with a note.
//!
//! Deliberate differences from mongo.pl: files have one size (`file_size`) or sizes drawn
//! uniformly from `[file_min_size, file_max_size]` instead of reiser_fract_tree's
//! distribution around a median, in a flat set of directories instead of a random tree;
//! fragmentation counts every file (mongo.pl's later versions only files over 16 KiB, which
//! would leave nothing to count at the study's sizes); each phase runs once per repeat
//! (mongo.pl summed three passes; fsbench repeats whole runs instead); each worker reads and
//! stats its own trees (mongo.pl's read and stat commands walked the whole test directory in
//! every process); stat is by name rather than through `find`'s readdir walk; links point
//! to the file's name in the same directory (short, so ext2/3 keep them in the inode as
//! mongo.pl's short absolute paths were).
//!
//! Engine rules kept: before a phase's timed region each worker gets its directory
//! boundaries, one NUL-terminated name template per kind of name (roots, directories, files of
//! either tree, renamed files, links; a link's target is the file name's last component) and
//! a cursor over the phase's operations, and the file data is filled once; nothing is kept
//! per file, so memory does not grow with `files`. The hot loop takes the next operation from
//! the cursor (the same system calls in the same order as `bench/mongo_meta.c`), makes its
//! names by updating the digits of the templates in place (an odometer step when the file is
//! the previous one + 1, as in every phase's walk; a rewrite by plain arithmetic otherwise)
//! and, when sizes differ, computes a file's size as a hash of (seed, worker, file); it
//! allocates and formats nothing. Latencies are sampled ([`Sampling::Auto`]: one operation in
//! N timed, N chosen from the first 1024 so that timing costs about 0.5 % of the operations at most,
//! N = 1 when they are slow; rows `lat_sample_every`, `lat_samples`); the interrupt flag is polled per operation and while preparing; the read phase's byte total is
//! summed from the same sizes after its timed region and checked; errors name the operation
//! and the path (ENOSPC with a hint); everything is removed at the end, on error and on
//! interrupt, leaving the run directory empty.

pub use crate::datasets::content::Content;
use crate::datasets::rng::SplitMix64;
use crate::fiemap::{self, Mapper};
use crate::metric::{MetricId, RawSample, Unit};
use crate::phase::{Caches, LatencySet, Phases, Policy, Short, MIN_TIME};
use crate::pool::{Sampling, Step, Worker, WorkerPool};
use crate::sysio;
use crate::units::Bytes;
use crate::Invalid;
use crate::{EngineError, ErrHint, RunContext, Workload, WorkloadKind};
use rustix::fs::{AtFlags, Mode, OFlags};
use serde::{Deserialize, Serialize};
use std::ffi::CStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Phase: create the trees and files.
pub const CREATE: &str = "create";
/// Phase: fragmentation of the created files.
pub const FRAG_AFTER_CREATE: &str = "frag_after_create";
/// Phase: copy every tree.
pub const COPY: &str = "copy";
/// Phase: fragmentation of originals and copies.
pub const FRAG_AFTER_COPY: &str = "frag_after_copy";
/// Phase: one symlink per created file.
pub const SYMLINK: &str = "symlink";
/// Phase: read every file of both trees.
pub const READ: &str = "read";
/// Phase: lstat every file and link.
pub const STAT: &str = "stat";
/// Phase: rename every created file.
pub const RENAME: &str = "rename";
/// Phase: remove both trees.
pub const DELETE: &str = "delete";

/// Name of the workload's directory in the run directory.
const TOP: &CStr = c"mongo";
/// Mode of every directory made (mkdir(2) applies the umask), as `bench/mongo_meta.c`.
const DIR_MODE: Mode = Mode::from_raw_mode(0o755);
/// Mode of every file made (umask applied), as `bench/mongo_meta.c`.
const FILE_MODE: Mode = Mode::from_raw_mode(0o644);
/// Flags of every file made: a new file, written only.
const CREATE_FLAGS: OFlags = OFlags::CREATE
    .union(OFlags::EXCL)
    .union(OFlags::WRONLY)
    .union(OFlags::CLOEXEC);
/// Flags of every file read.
const READ_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::CLOEXEC);
/// Largest write/read per system call, and the size of the data and copy buffers.
const IO_CHUNK: u64 = Bytes::MIB;
/// The timed phases: caches dropped if asked, the median, p99 and maximum latency, and one
/// note naming the phases under [`MIN_TIME`].
const POLICY: Policy = Policy::new().latency(LatencySet::Core).short(Short::Collect {
    limit: MIN_TIME,
    family: "mongo",
    raise: "files",
});
/// Errors of a full filesystem say what to change.
const ERR: ErrHint = ErrHint("lower files or the file sizes, or use a larger target");
/// Most workers.
const MAX_PROCESSES: u32 = 256;
/// Most files (names carry 8 decimal digits of the per-worker index).
const MAX_FILES: u32 = 99_999_999;
/// Most directories per worker (names carry 5 digits).
const MAX_DIRS: u32 = 99_999;

/// Parameters of the mongo workload. Sizes take `k`/`M`/`G` suffixes (binary).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MongoSpec {
    /// Files created in total (over all workers). Default 69 000 (the study's 100-byte table).
    #[serde(default = "default_files")]
    pub files: u32,
    /// Size of every file, bytes. Default 100 B when neither this nor the min/max pair is set.
    /// Not together with `file_min_size`/`file_max_size`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_size: Option<Bytes>,
    /// Smallest file size, bytes, when sizes are drawn uniformly (needs `file_max_size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_min_size: Option<Bytes>,
    /// Largest file size, bytes, when sizes are drawn uniformly (needs `file_min_size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_max_size: Option<Bytes>,
    /// Directories in total, spread over the workers (at least one each). Default 240.
    #[serde(default = "default_dirs")]
    pub dirs: u32,
    /// Parallel workers (threads), each with its own trees. Default 1.
    #[serde(default = "default_processes")]
    pub processes: u32,
    /// File data: `"random"` (default), `"zeros"` or `"text"`.
    #[serde(default)]
    pub content: Content,
    /// End the writing phases with a `syncfs` inside the timed region. Default true.
    #[serde(default = "super::default_true")]
    pub fsync: bool,
    /// Seed of the sizes and the data, so repeats do the same work. Default 0.
    #[serde(default)]
    pub seed: u64,
}

fn default_files() -> u32 {
    69_000
}
fn default_dirs() -> u32 {
    240
}
fn default_processes() -> u32 {
    1
}

/// Default file size when none is given: the study's first table.
const DEFAULT_FILE_SIZE: u64 = 100;

impl Default for MongoSpec {
    fn default() -> Self {
        MongoSpec {
            files: default_files(),
            file_size: None,
            file_min_size: None,
            file_max_size: None,
            dirs: default_dirs(),
            processes: default_processes(),
            content: Content::default(),
            fsync: true,
            seed: 0,
        }
    }
}

impl MongoSpec {
    /// The three tables of the 2000 journaling-filesystem study: `(name, spec)` for files of
    /// 100 B (69 000 in 240 directories), 1000 B (11 600 in 43) and 10 000 B (2 300 in 31).
    pub fn study_2000() -> [(&'static str, MongoSpec); 3] {
        let table = |files, size, dirs| MongoSpec {
            files,
            file_size: Some(Bytes(size)),
            dirs,
            ..MongoSpec::default()
        };
        [
            ("mongo-100b", table(69_000, 100, 240)),
            ("mongo-1k", table(11_600, 1000, 43)),
            ("mongo-10k", table(2_300, 10_000, 31)),
        ]
    }

    /// `(smallest, largest)` file size in bytes after defaults.
    pub fn size_range(&self) -> (u64, u64) {
        match (self.file_size, self.file_min_size, self.file_max_size) {
            (Some(s), _, _) => (s.get(), s.get()),
            (None, Some(lo), Some(hi)) => (lo.get(), hi.get()),
            (None, Some(lo), None) => (lo.get(), lo.get()),
            (None, None, Some(hi)) => (hi.get(), hi.get()),
            (None, None, None) => (DEFAULT_FILE_SIZE, DEFAULT_FILE_SIZE),
        }
    }

    /// Files handled by worker `w`.
    fn files_of(&self, w: u32) -> u32 {
        self.files / self.processes + u32::from(w < self.files % self.processes)
    }

    /// Directories of worker `w`.
    fn dirs_of(&self, w: u32) -> u32 {
        self.dirs / self.processes + u32::from(w < self.dirs % self.processes)
    }
}

impl Workload for MongoSpec {
    fn phases(&self) -> Vec<String> {
        [
            CREATE,
            FRAG_AFTER_CREATE,
            COPY,
            FRAG_AFTER_COPY,
            SYMLINK,
            READ,
            STAT,
            RENAME,
            DELETE,
        ]
        .into_iter()
        .map(String::from)
        .collect()
    }

    fn needs(&self, phase: &str) -> &'static [crate::fstype::Feature] {
        match phase {
            SYMLINK => &[crate::fstype::Feature::Symlinks],
            _ => &[],
        }
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        let scale = |n: u32, min: u32| super::scaled_count(n, factor, min);
        WorkloadKind::Mongo(MongoSpec {
            files: scale(self.files, self.processes.max(16)).min(MAX_FILES),
            dirs: scale(self.dirs, self.processes).min(MAX_DIRS.saturating_mul(self.processes)),
            ..self.clone()
        })
    }

    fn validate(&self) -> Result<(), Invalid> {
        if self.file_size.is_some() && (self.file_min_size.is_some() || self.file_max_size.is_some()) {
            return Err("set either file_size or file_min_size/file_max_size, not both".into());
        }
        if self.file_min_size.is_some() != self.file_max_size.is_some() {
            return Err("file_min_size and file_max_size go together: set both (or file_size alone)".into());
        }
        let (lo, hi) = self.size_range();
        if lo > hi {
            return Err(Invalid(format!(
                "file_min_size ({}) must not exceed file_max_size ({})",
                Bytes(lo),
                Bytes(hi)
            )));
        }
        if hi > 64 * Bytes::GIB {
            return Err(Invalid(format!(
                "file sizes must be at most 64GiB (largest is {})",
                Bytes(hi)
            )));
        }
        if self.processes == 0 || self.processes > MAX_PROCESSES {
            return Err(Invalid(format!(
                "processes must be between 1 and {MAX_PROCESSES} (is {})",
                self.processes
            )));
        }
        if self.files < self.processes || self.files > MAX_FILES {
            return Err(Invalid(format!(
                "files must be between processes ({}) and {MAX_FILES} (is {})",
                self.processes, self.files
            )));
        }
        if self.dirs < self.processes || self.dirs / self.processes >= MAX_DIRS {
            return Err(Invalid(format!(
                "dirs must be at least processes ({}) and at most {MAX_DIRS} per process (is {})",
                self.processes, self.dirs
            )));
        }
        Ok(())
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        use crate::fstype::Footprint;
        // From `symlink` to `rename`: both trees of every worker (`tree1-WWW/dDDDDD/fFFFFFFFF`
        // and its copy) and a short link beside every file of tree1, under `mongo/`.
        let (lo, hi) = self.size_range();
        let tree = Footprint::default()
            .dirs(u64::from(self.processes), 9)
            .dirs(u64::from(self.dirs), 6)
            .uniform_files(u64::from(self.files), lo, hi, 9);
        Footprint::default()
            .dirs(1, 5)
            .plus(tree.twice())
            .symlinks(u64::from(self.files), 13)
    }

    fn content(&self) -> Option<crate::datasets::content::Content> {
        Some(self.content)
    }

    fn describe(&self) -> String {
        let (lo, hi) = self.size_range();
        let size = if lo == hi {
            format!("{}", Bytes(lo))
        } else {
            format!("{}..{}", Bytes(lo), Bytes(hi))
        };
        format!(
            "mongo files={} size={size} dirs={} processes={} content={}{}",
            self.files,
            self.dirs,
            self.processes,
            self.content.as_str(),
            if self.fsync { " fsync" } else { " no-fsync" }
        )
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        self.validate()?;
        let mut runner = Runner::new(self, ctx)?;
        let result = runner.run_all();
        runner.cleanup(result.is_ok());
        result.map(|()| runner.phases.finish())
    }
}

// ---------------------------------------------------------------------------------------------
// Names and per-worker layout.
// ---------------------------------------------------------------------------------------------

/// Longest name and its NUL: `tree1-WWW/dDDDDD/fFFFFFFFF.lnk` is 30 bytes.
const NAME_CAP: usize = 32;
/// The directory's 5 digits in a name under a tree: `tree1-WWW/d` comes first.
const DIR_DIGITS: std::ops::Range<usize> = 11..16;
/// The file's basename (`fFFFFFFFF`, the link target) in a file name: after `tree1-WWW/dDDDDD/`.
const BASENAME: usize = 17;
/// The file's 8 digits in a file name.
const FILE_DIGITS: std::ops::Range<usize> = BASENAME + 1..BASENAME + 9;

/// One NUL-terminated name whose directory and file digits are rewritten in place: the name
/// of one kind (a tree's file, renamed file, link, directory) for any directory and file,
/// without formatting or allocating.
struct Template {
    buf: [u8; NAME_CAP],
    /// Bytes of the name with its NUL.
    len: usize,
    /// The directory and file the digits show now.
    dir: u32,
    file: u32,
}

impl Template {
    /// `name` must show directory 0 and file 0 where it has those digits.
    fn new(name: &str) -> Template {
        let len = name.len() + 1;
        assert!(
            len <= NAME_CAP && !name.as_bytes().contains(&0),
            "internal error: name template {name:?}"
        );
        // The digit updates never touch the NUL: it is outside both digit fields.
        assert!(!DIR_DIGITS.contains(&(len - 1)) && !FILE_DIGITS.contains(&(len - 1)));
        let mut buf = [0; NAME_CAP];
        buf[..name.len()].copy_from_slice(name.as_bytes());
        Template {
            buf,
            len,
            dir: 0,
            file: 0,
        }
    }

    /// The name as it is now.
    #[inline(always)]
    fn get(&self) -> &CStr {
        // SAFETY: `new` checked that `len <= NAME_CAP` and that the name has no NUL and ends
        // with one at `len - 1`, which no digit update reaches; updates write ASCII digits only.
        unsafe { CStr::from_bytes_with_nul_unchecked(self.buf.get_unchecked(..self.len)) }
    }

    /// The name for directory `d` (names with a directory field only).
    #[inline(always)]
    fn dir(&mut self, d: u32) -> &CStr {
        self.set_dir(d);
        self.get()
    }

    /// The name for file `i` of directory `d` (file names only).
    #[inline(always)]
    fn file(&mut self, d: u32, i: u32) -> &CStr {
        self.set_dir(d);
        if i == self.file.wrapping_add(1) {
            increment(&mut self.buf[FILE_DIGITS]);
        } else if i != self.file {
            put_digits(&mut self.buf[FILE_DIGITS], i);
        }
        self.file = i;
        self.get()
    }

    #[inline(always)]
    fn set_dir(&mut self, d: u32) {
        if d != self.dir {
            let digits = &mut self.buf[DIR_DIGITS];
            if d == self.dir.wrapping_add(1) {
                increment(digits);
            } else {
                put_digits(digits, d);
            }
            self.dir = d;
        }
    }
}

/// Adds one to the decimal number in `digits` (an odometer step: usually the last digit only).
#[inline]
fn increment(digits: &mut [u8]) {
    for b in digits.iter_mut().rev() {
        if *b < b'9' {
            *b += 1;
            return;
        }
        *b = b'0';
    }
}

/// Writes `v` in decimal into `digits`, zero-padded (`v` fits: the layout checks the counts).
#[inline]
fn put_digits(digits: &mut [u8], mut v: u32) {
    for b in digits.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// One worker's names, relative to the `mongo` directory: one template per kind, index `t` =
/// tree (0 = `tree1-WWW`, created; 1 = `tree2-WWW`, its copy).
struct Names {
    /// `tree1-WWW`, `tree2-WWW`.
    roots: [Template; 2],
    /// `treeT-WWW/dDDDDD`.
    dirs: [Template; 2],
    /// `treeT-WWW/dDDDDD/fFFFFFFFF`; the tree-1 one's basename is also the link target.
    files: [Template; 2],
    /// `tree1-WWW/dDDDDD/fFFFFFFFF.r`: a tree-1 file after `rename`.
    renamed: Template,
    /// `tree1-WWW/dDDDDD/fFFFFFFFF.lnk`: the link beside a tree-1 file.
    links: Template,
}

impl Names {
    /// Worker `w`'s names, all showing directory 0 and file 0 (untimed: formats).
    fn new(w: u32) -> Names {
        let tree = |t: u32, tail: &str| Template::new(&format!("tree{t}-{w:03}{tail}"));
        let file = "/d00000/f00000000";
        Names {
            roots: [tree(1, ""), tree(2, "")],
            dirs: [tree(1, "/d00000"), tree(2, "/d00000")],
            files: [tree(1, file), tree(2, file)],
            renamed: tree(1, &format!("{file}.r")),
            links: tree(1, &format!("{file}.lnk")),
        }
    }

    /// The names `op` works on: `(name, name)` for operations on one name; `(from, to)` for
    /// copy and rename; `(target, link)` for symlink.
    #[inline]
    fn of(&mut self, op: Op) -> (&CStr, &CStr) {
        let (t, d, i) = (usize::from(op.tree), op.dir, op.file);
        fn one(name: &CStr) -> (&CStr, &CStr) {
            (name, name)
        }
        match op.kind {
            Kind::MkdirRoot | Kind::RmdirRoot => one(self.roots[t].get()),
            Kind::Mkdir | Kind::Rmdir => one(self.dirs[t].dir(d)),
            Kind::Create | Kind::Read | Kind::Stat => one(self.files[t].file(d, i)),
            Kind::StatLink | Kind::UnlinkLink => one(self.links.file(d, i)),
            Kind::Unlink if t == 0 => one(self.renamed.file(d, i)),
            Kind::Unlink => one(self.files[1].file(d, i)),
            Kind::Copy => {
                let [from, to] = &mut self.files;
                (from.file(d, i), to.file(d, i))
            }
            Kind::Rename => (self.files[0].file(d, i), self.renamed.file(d, i)),
            Kind::Symlink => {
                self.files[0].file(d, i);
                let target = &self.files[0].buf[BASENAME..self.files[0].len];
                // SAFETY: the tail of a NUL-terminated name without inner NULs (see `get`).
                let target = unsafe { CStr::from_bytes_with_nul_unchecked(target) };
                (target, self.links.file(d, i))
            }
        }
    }
}

/// The file sizes of one worker: all `lo` when `lo == hi`, otherwise each file's size drawn
/// uniformly from `[lo, hi]` by a hash of (seed, worker, file index), so nothing is stored
/// per file and repeats with one seed write the same sizes.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    lo: u64,
    hi: u64,
    /// Hash key of the seed and the worker.
    key: u64,
}

impl Sizes {
    fn new(spec: &MongoSpec, w: u32) -> Sizes {
        let (lo, hi) = spec.size_range();
        Sizes {
            lo,
            hi,
            // Indices are below 2^27: distinct workers get distinct hash inputs.
            key: SplitMix64::new(spec.seed ^ 0x7369_7a65_7300).next_u64() ^ (u64::from(w) << 32),
        }
    }

    /// Size of file `i`, bytes.
    #[inline]
    fn of(&self, i: u32) -> u64 {
        if self.lo == self.hi {
            return self.lo;
        }
        // One SplitMix64 step is a bijective hash of (seed, worker, file); `below` maps it
        // onto [0, span) by multiply-shift. hi is at most 64 GiB, so span cannot overflow.
        self.lo + SplitMix64::new(self.key ^ u64::from(i)).below(self.hi - self.lo + 1)
    }
}

/// Everything one worker's operations refer to besides its names.
struct Layout {
    /// The worker.
    w: u32,
    /// `first[d]` = first file of directory `d`; `first[dirs]` = files.
    first: Vec<u32>,
    sizes: Sizes,
    ndirs: usize,
}

impl Layout {
    fn new(spec: &MongoSpec, w: u32) -> Result<Layout, EngineError> {
        let nfiles = spec.files_of(w) as usize;
        let ndirs = spec.dirs_of(w) as usize;
        // The names' digit fields are fixed-width.
        if w >= 1000 || ndirs > MAX_DIRS as usize || nfiles > MAX_FILES as usize || ndirs == 0 {
            return Err(EngineError::Invalid(format!(
                "internal error: worker {w} with {ndirs} directories and {nfiles} files does not fit the mongo names"
            )));
        }
        Ok(Layout {
            w,
            first: (0..=ndirs).map(|d| (d * nfiles / ndirs) as u32).collect(),
            sizes: Sizes::new(spec, w),
            ndirs,
        })
    }

    /// Files of the worker (in each tree).
    fn nfiles(&self) -> u32 {
        self.first[self.ndirs]
    }

    /// Bytes in the worker's tree-1 files (untimed: sums every size when they differ).
    fn tree_bytes(&self, interrupt: &AtomicBool) -> Result<u64, EngineError> {
        let s = self.sizes;
        if s.lo == s.hi {
            return Ok(s.lo * u64::from(self.nfiles()));
        }
        let mut sum = 0;
        for i in 0..self.nfiles() {
            if i % 65_536 == 0 && interrupt.load(Ordering::Relaxed) {
                return Err(EngineError::Interrupted);
            }
            sum += s.of(i);
        }
        Ok(sum)
    }

    /// The files of directory `d`.
    fn files_in(&self, d: usize) -> std::ops::Range<u32> {
        self.first[d]..self.first[d + 1]
    }
}

/// What one operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    MkdirRoot,
    Mkdir,
    Create,
    Copy,
    Symlink,
    Read,
    Stat,
    StatLink,
    Rename,
    /// Unlink a file (tree 0 by its renamed name).
    Unlink,
    UnlinkLink,
    Rmdir,
    RmdirRoot,
}

/// One operation of a phase: on tree `tree` (0 = created, 1 = copy), directory `dir` and file
/// `file` (the worker's file index; 0 for operations on a directory or a root).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Op {
    kind: Kind,
    tree: u8,
    dir: u32,
    file: u32,
}

/// One walk over a tree, directory by directory and, in each, file by file (so files come in
/// index order): what is done to the root before and after, to every directory before and
/// after its files, and to every file.
#[derive(Clone, Copy, Debug)]
struct Walk {
    tree: u8,
    root_first: Option<Kind>,
    dir_first: Option<Kind>,
    /// One or two.
    per_file: &'static [Kind],
    dir_last: Option<Kind>,
    root_last: Option<Kind>,
}

impl Walk {
    const fn files(tree: u8, per_file: &'static [Kind]) -> Walk {
        assert!(matches!(per_file.len(), 1 | 2), "one or two operations per file");
        Walk {
            tree,
            root_first: None,
            dir_first: None,
            per_file,
            dir_last: None,
            root_last: None,
        }
    }

    const fn make(tree: u8, per_file: &'static [Kind]) -> Walk {
        Walk {
            root_first: Some(Kind::MkdirRoot),
            dir_first: Some(Kind::Mkdir),
            ..Walk::files(tree, per_file)
        }
    }

    const fn remove(tree: u8, per_file: &'static [Kind]) -> Walk {
        Walk {
            dir_last: Some(Kind::Rmdir),
            root_last: Some(Kind::RmdirRoot),
            ..Walk::files(tree, per_file)
        }
    }

    /// Operations of this walk over `ndirs` directories holding `nfiles` files.
    fn len(&self, ndirs: usize, nfiles: usize) -> usize {
        let root = usize::from(self.root_first.is_some()) + usize::from(self.root_last.is_some());
        let dir = usize::from(self.dir_first.is_some()) + usize::from(self.dir_last.is_some());
        root + dir * ndirs + self.per_file.len() * nfiles
    }
}

/// The walks of `phase`, in order; the same system calls in the same order as
/// `bench/mongo_meta.c`. Empty for an unknown phase.
/// Without `links` (the `symlink` phase was left out), `stat` and `delete` skip the links.
fn walks(phase: &str, links: bool) -> &'static [Walk] {
    use Kind::*;
    const MAKE: &[Walk] = &[Walk::make(0, &[Create])];
    const COPY_TREE: &[Walk] = &[Walk::make(1, &[Copy])];
    const LINK: &[Walk] = &[Walk::files(0, &[Symlink])];
    const READ_BOTH: &[Walk] = &[Walk::files(0, &[Read]), Walk::files(1, &[Read])];
    const STAT_ALL: &[Walk] = &[Walk::files(0, &[Stat, StatLink]), Walk::files(1, &[Stat])];
    const MOVE: &[Walk] = &[Walk::files(0, &[Rename])];
    const REMOVE: &[Walk] = &[Walk::remove(0, &[Unlink, UnlinkLink]), Walk::remove(1, &[Unlink])];
    const STAT_FILES: &[Walk] = &[Walk::files(0, &[Stat]), Walk::files(1, &[Stat])];
    const REMOVE_FILES: &[Walk] = &[Walk::remove(0, &[Unlink]), Walk::remove(1, &[Unlink])];
    match phase {
        STAT if !links => STAT_FILES,
        DELETE if !links => REMOVE_FILES,
        CREATE => MAKE,
        COPY => COPY_TREE,
        SYMLINK => LINK,
        READ => READ_BOTH,
        STAT => STAT_ALL,
        RENAME => MOVE,
        DELETE => REMOVE,
        _ => &[],
    }
}

/// Where a [`Cursor`] is within its current walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    RootFirst,
    DirFirst,
    Files,
    DirLast,
    RootLast,
}

/// The operations of one worker's phase, one at a time, without a list: a position in the
/// phase's [`walks`] over the worker's directories.
struct Cursor<'l> {
    walks: &'static [Walk],
    /// The layout's directory boundaries (`first[d]`, `first[ndirs]` = files).
    first: &'l [u32],
    walk: usize,
    stage: Stage,
    /// The current walk's tree and per-file operations: `kinds[0..=last]`.
    tree: u8,
    kinds: [Kind; 2],
    last: usize,
    dir: u32,
    /// Next file of the directory and one past its last: `file < end` in stage `Files` only.
    file: u32,
    end: u32,
    /// Next entry of `kinds` for `file`.
    step: usize,
}

impl<'l> Cursor<'l> {
    fn new(phase: &str, first: &'l [u32], links: bool) -> Cursor<'l> {
        Cursor {
            walks: walks(phase, links),
            first,
            walk: 0,
            stage: Stage::RootFirst,
            tree: 0,
            kinds: [Kind::Stat; 2],
            last: 0,
            dir: 0,
            file: 0,
            end: 0,
            step: 0,
        }
    }

    /// The next operation, or `None` when the phase is complete. Allocates nothing.
    #[inline(always)]
    fn next_op(&mut self) -> Option<Op> {
        // The usual case: the next file of the directory.
        if self.file < self.end {
            let (kind, file) = (self.kinds[self.step & 1], self.file);
            if self.step == self.last {
                self.step = 0;
                self.file += 1;
            } else {
                self.step += 1;
            }
            return Some(Op {
                kind,
                tree: self.tree,
                dir: self.dir,
                file,
            });
        }
        self.next_boundary()
    }

    /// The next operation at a directory or root boundary (then on to the files).
    #[inline(never)]
    fn next_boundary(&mut self) -> Option<Op> {
        loop {
            let w = self.walks.get(self.walk)?;
            let op = |kind, dir| {
                Some(Op {
                    kind,
                    tree: w.tree,
                    dir,
                    file: 0,
                })
            };
            match self.stage {
                Stage::RootFirst => {
                    let k = w.per_file;
                    (self.tree, self.kinds, self.last) = (w.tree, [k[0], k[k.len() - 1]], k.len() - 1);
                    self.dir = 0;
                    self.stage = Stage::DirFirst;
                    if let Some(kind) = w.root_first {
                        return op(kind, 0);
                    }
                }
                Stage::DirFirst => {
                    let d = self.dir as usize;
                    if d + 1 >= self.first.len() {
                        self.stage = Stage::RootLast;
                        continue;
                    }
                    (self.file, self.end, self.step) = (self.first[d], self.first[d + 1], 0);
                    self.stage = Stage::Files;
                    if let Some(kind) = w.dir_first {
                        return op(kind, self.dir);
                    }
                    if self.file < self.end {
                        return self.next_op();
                    }
                }
                // `next_op` yields the files; here they are done.
                Stage::Files => self.stage = Stage::DirLast,
                Stage::DirLast => {
                    let d = self.dir;
                    self.dir += 1;
                    self.stage = Stage::DirFirst;
                    if let Some(kind) = w.dir_last {
                        return op(kind, d);
                    }
                }
                Stage::RootLast => {
                    self.walk += 1;
                    self.stage = Stage::RootFirst;
                    if let Some(kind) = w.root_last {
                        return op(kind, 0);
                    }
                }
            }
        }
    }

    /// Operations of the whole phase (untimed: counted, not walked).
    fn total(&self) -> usize {
        let ndirs = self.first.len() - 1;
        let nfiles = self.first[ndirs] as usize;
        self.walks.iter().map(|w| w.len(ndirs, nfiles)).sum()
    }
}

// ---------------------------------------------------------------------------------------------
// The runner.
// ---------------------------------------------------------------------------------------------

struct Runner<'a, 'c> {
    spec: &'a MongoSpec,
    ctx: &'a RunContext<'c>,
    phases: Phases<'a, 'c>,
    /// `mongo/` in the run directory, once created.
    top: Option<OwnedFd>,
    top_path: PathBuf,
    /// One layout per worker.
    layouts: Vec<Layout>,
    /// File data, `min(largest size, 1 MiB)` + 4 KiB so files start at different offsets.
    data: Vec<u8>,
    /// Whether the `symlink` phase made its links (not on a filesystem without symlinks).
    links: bool,
}

impl<'a, 'c: 'a> Runner<'a, 'c> {
    fn new(spec: &'a MongoSpec, ctx: &'a RunContext<'c>) -> Result<Self, EngineError> {
        Ok(Runner {
            spec,
            ctx,
            phases: Phases::new(ctx),
            top: None,
            top_path: ctx.dir.join(TOP.to_string_lossy().as_ref()),
            layouts: Vec::new(),
            data: Vec::new(),
            links: true,
        })
    }

    fn run_all(&mut self) -> Result<(), EngineError> {
        let spec = self.spec;
        let interrupt = self.ctx.interrupt;
        if interrupt.load(Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        for w in 0..spec.processes {
            self.layouts.push(Layout::new(spec, w)?);
        }
        let (_, hi) = spec.size_range();
        self.data = vec![0; (hi.min(IO_CHUNK) + 4096) as usize];
        spec.content.fill(&mut self.data, spec.seed ^ 0x6d6f_6e67_6f00);

        let parent = File::open(self.ctx.dir)
            .map_err(|e| EngineError::io(format!("open directory {}", self.ctx.dir.display()), e))?;
        rustix::fs::mkdirat(&parent, TOP, DIR_MODE).map_err(|e| ERR.io_in("mkdir", &self.top_path, None, e.into()))?;
        let top = rustix::fs::openat(
            &parent,
            TOP,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| ERR.io_in("open", &self.top_path, None, e.into()))?;
        self.top = Some(top);

        self.timed(CREATE, true)?;
        self.fragmentation(FRAG_AFTER_CREATE, 1)?;
        self.timed(COPY, true)?;
        self.fragmentation(FRAG_AFTER_COPY, 2)?;
        match self.ctx.unsupported(SYMLINK, self.spec.needs(SYMLINK)) {
            Some(note) => {
                self.links = false;
                self.phases.note(note);
            }
            None => self.timed(SYMLINK, true)?,
        }
        self.timed(READ, false)?;
        self.timed(STAT, false)?;
        self.timed(RENAME, true)?;
        self.timed(DELETE, true)?;
        Ok(())
    }

    /// The open `mongo/` directory. An associated function on the field, not a method, so
    /// that the borrow covers `self.top` only and the runner's other fields stay writable.
    fn top_fd(top: &Option<OwnedFd>) -> Result<BorrowedFd<'_>, EngineError> {
        top.as_ref()
            .map(AsFd::as_fd)
            .ok_or_else(|| EngineError::Invalid("internal error: mongo directory not open".into()))
    }

    /// Removes `mongo/`: after a complete run it is empty (one rmdir); after an error or
    /// interrupt, whatever is left.
    fn cleanup(&mut self, complete: bool) {
        self.top = None;
        if complete {
            if std::fs::remove_dir(&self.top_path).is_err() {
                let _ = std::fs::remove_dir_all(&self.top_path);
            }
        } else {
            let _ = std::fs::remove_dir_all(&self.top_path);
        }
    }

    /// Drops caches, runs one worker per layout over `phase`'s operations under a CPU meter,
    /// syncs when `writes` and `fsync`, and records the phase.
    fn timed(&mut self, phase: &'static str, writes: bool) -> Result<(), EngineError> {
        let top = Self::top_fd(&self.top)?;
        let path = self.top_path.as_path();
        let chunk = self.data.len().saturating_sub(4096).max(1);
        let workers: Vec<MongoWorker> = self
            .layouts
            .iter()
            .map(|l| MongoWorker {
                ops: Cursor::new(phase, &l.first, self.links),
                names: Names::new(l.w),
                io: Io {
                    top,
                    path,
                    l,
                    data: &self.data,
                    chunk,
                    buf: if matches!(phase, COPY | READ) {
                        vec![0; IO_CHUNK as usize]
                    } else {
                        Vec::new()
                    },
                    bytes: 0,
                },
            })
            .collect();
        let entries: u64 = workers.iter().map(|w| w.ops.total() as u64).sum();
        self.phases.begin(phase, Caches::DropIfAsked);
        // Metadata operations take about 1 µs on tmpfs: sampled, unless they are slow enough
        // for timing each to cost nothing measurable (copy and read of large files).
        let pool = WorkerPool::new().sample_latency(Sampling::Auto);
        let t = if writes && self.spec.fsync {
            self.phases.pool_then(pool, workers, |_| {
                rustix::fs::syncfs(top).map_err(|e| ERR.io_in("syncfs", path, None, e.into()))
            })?
        } else {
            self.phases.pool(pool, workers)?
        };
        if phase == READ {
            let mut want = 0;
            for l in &self.layouts {
                want += 2 * l.tree_bytes(self.ctx.interrupt)?;
            }
            let got: u64 = t.value.outputs.iter().sum();
            if got != want {
                return Err(EngineError::Invalid(format!(
                    "read {got} bytes from the files under {} but they hold {want}",
                    path.display()
                )));
            }
        }
        let secs = t.wall.as_secs_f64().max(1e-9);
        let metrics = vec![
            (MetricId::lower("time", Unit::Seconds), t.wall.as_secs_f64()),
            (MetricId::higher("rate", Unit::OpsPerSec), entries as f64 / secs),
        ];
        self.phases.record(phase, &t, metrics, &POLICY);
        Ok(())
    }

    /// Counts fragments of the files of the first `trees` trees of every worker with FIEMAP
    /// and records `extents_per_file`; on a filesystem without FIEMAP, a note instead.
    fn fragmentation(&mut self, phase: &'static str, trees: usize) -> Result<(), EngineError> {
        self.phases.begin(phase, Caches::Keep);
        let top = Self::top_fd(&self.top)?;
        // Delayed allocations get their place first (untimed).
        rustix::fs::syncfs(top).map_err(|e| ERR.io_in("syncfs", &self.top_path, None, e.into()))?;
        let mut mapper = Mapper::new();
        let (layouts, top_path, interrupt) = (&self.layouts, &self.top_path, self.ctx.interrupt);
        let t = self.phases.region(|| {
            let (mut files, mut fragments, mut delalloc) = (0u64, 0u64, 0u64);
            let mut k = 0u64;
            for l in layouts {
                let mut names = Names::new(l.w);
                let all =
                    (0..trees).flat_map(|t| (0..l.ndirs).flat_map(move |d| l.files_in(d).map(move |i| (t, d, i))));
                for (t, d, i) in all {
                    if k % 1024 == 0 && interrupt.load(Ordering::Relaxed) {
                        return Err(EngineError::Interrupted);
                    }
                    k += 1;
                    let name = names.files[t].file(d as u32, i);
                    match mapper.map_at(top, name) {
                        Ok(m) => {
                            files += 1;
                            fragments += m.fragments;
                            delalloc += m.delalloc;
                        }
                        Err(e) if fiemap::is_unsupported(&e) => return Ok(Err(e)),
                        Err(e) => return Err(ERR.io_in("fiemap", top_path, Some(name), e)),
                    }
                }
            }
            Ok(Ok((files, fragments, delalloc)))
        })?;
        let (files, fragments, delalloc) = match t.value {
            Ok(counts) => counts,
            Err(e) => {
                if !self.phases.has_note("fragmentation not measured") {
                    self.phases.note(format!(
                        "fragmentation not measured: this filesystem has no FIEMAP ({e}); {FRAG_AFTER_CREATE} and {FRAG_AFTER_COPY} left out"
                    ));
                }
                return Ok(());
            }
        };
        if delalloc > 0 {
            self.phases.note(format!(
                "{phase}: {delalloc} extent(s) still in delayed allocation after syncfs; counted as mapped"
            ));
        }
        let per_file = if files > 0 {
            fragments as f64 / files as f64
        } else {
            0.0
        };
        let metrics = vec![(MetricId::lower("extents_per_file", Unit::Ratio), per_file)];
        self.phases.record(phase, &t, metrics, &Policy::new());
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The worker.
// ---------------------------------------------------------------------------------------------

/// One thread of a phase: walks its phase's operations over its own trees.
struct MongoWorker<'p> {
    ops: Cursor<'p>,
    names: Names,
    io: Io<'p>,
}

/// What a worker's operations use besides their names.
struct Io<'p> {
    /// The `mongo` directory every name is relative to.
    top: BorrowedFd<'p>,
    path: &'p Path,
    l: &'p Layout,
    data: &'p [u8],
    /// Bytes per write of file data.
    chunk: usize,
    /// Copy/read buffer (empty in other phases).
    buf: Vec<u8>,
    /// Bytes read (the read phase's output, checked against the sizes).
    bytes: u64,
}

impl Io<'_> {
    #[cold]
    fn err(&self, op: &str, name: &CStr, e: io::Error) -> EngineError {
        ERR.io_in(op, self.path, Some(name), e)
    }

    fn create(&mut self, name: &CStr, i: u32) -> Result<(), EngineError> {
        let fd = rustix::fs::openat(self.top, name, CREATE_FLAGS, FILE_MODE)
            .map_err(|e| self.err("create", name, e.into()))?;
        let mut left = self.l.sizes.of(i);
        // Files start at different offsets of the data, so no two are alike.
        let mut off = (i as usize).wrapping_mul(61) % 4096;
        while left > 0 {
            let n = left.min(self.chunk as u64) as usize;
            sysio::write_all(&fd, &self.data[off..off + n]).map_err(|e| self.err("write", name, e))?;
            left -= n as u64;
            off = 0;
        }
        sysio::close_checked(fd).map_err(|e| self.err("close", name, e.into()))
    }

    fn copy(&mut self, src: &CStr, dst: &CStr) -> Result<(), EngineError> {
        let from = rustix::fs::openat(self.top, src, READ_FLAGS, Mode::empty())
            .map_err(|e| self.err("open", src, e.into()))?;
        let to = rustix::fs::openat(self.top, dst, CREATE_FLAGS, FILE_MODE)
            .map_err(|e| self.err("create", dst, e.into()))?;
        loop {
            let n = sysio::read_some(&from, &mut self.buf).map_err(|e| self.err("read", src, e.into()))?;
            if n == 0 {
                break;
            }
            sysio::write_all(&to, &self.buf[..n]).map_err(|e| self.err("write", dst, e))?;
        }
        drop(from);
        sysio::close_checked(to).map_err(|e| self.err("close", dst, e.into()))
    }

    fn read(&mut self, name: &CStr) -> Result<(), EngineError> {
        let fd = rustix::fs::openat(self.top, name, READ_FLAGS, Mode::empty())
            .map_err(|e| self.err("open", name, e.into()))?;
        loop {
            let n = sysio::read_some(&fd, &mut self.buf).map_err(|e| self.err("read", name, e.into()))?;
            if n == 0 {
                break;
            }
            self.bytes += n as u64;
        }
        Ok(())
    }
}

impl Worker for MongoWorker<'_> {
    type Output = u64;

    fn op(&mut self) -> Result<Step, EngineError> {
        let Some(op) = self.ops.next_op() else {
            return Ok(Step::Done);
        };
        let (a, b) = self.names.of(op);
        let io = &mut self.io;
        let top = io.top;
        match op.kind {
            Kind::MkdirRoot | Kind::Mkdir => {
                rustix::fs::mkdirat(top, a, DIR_MODE).map_err(|e| io.err("mkdir", a, e.into()))?;
            }
            Kind::Create => io.create(a, op.file)?,
            Kind::Copy => io.copy(a, b)?,
            Kind::Symlink => rustix::fs::symlinkat(a, top, b).map_err(|e| io.err("symlink", b, e.into()))?,
            Kind::Read => io.read(a)?,
            Kind::Stat | Kind::StatLink => {
                // The kernel fills the returned struct; nothing is zeroed first.
                rustix::fs::statat(top, a, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| io.err("stat", a, e.into()))?;
            }
            Kind::Rename => rustix::fs::renameat(top, a, top, b).map_err(|e| io.err("rename", a, e.into()))?,
            Kind::Unlink | Kind::UnlinkLink => {
                rustix::fs::unlinkat(top, a, AtFlags::empty()).map_err(|e| io.err("unlink", a, e.into()))?;
            }
            Kind::Rmdir | Kind::RmdirRoot => {
                rustix::fs::unlinkat(top, a, AtFlags::REMOVEDIR).map_err(|e| io.err("rmdir", a, e.into()))?;
            }
        }
        Ok(Step::Op)
    }

    fn finish(self) -> u64 {
        self.io.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::test_util::metric;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn small() -> MongoSpec {
        MongoSpec {
            files: 300,
            file_min_size: Some(Bytes(0)),
            file_max_size: Some(Bytes(20_000)),
            dirs: 7,
            processes: 2,
            ..MongoSpec::default()
        }
    }

    #[test]
    fn on_exfat_the_symlink_phase_is_unsupported_and_the_rest_runs_without_the_links() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spec = small();
        let flag = AtomicBool::new(false);
        let ctx = RunContext {
            fs: Some(crate::fstype::FsType::of("exfat")),
            ..RunContext::quiet(tmp.path(), &flag)
        };
        let sample = crate::run(&spec, &ctx).expect("mongo on a filesystem without symlinks");
        let names: Vec<&str> = sample.phases.iter().map(|p| p.phase.as_str()).collect();
        assert!(!names.contains(&SYMLINK), "{names:?}");
        for p in [CREATE, COPY, READ, STAT, RENAME, DELETE] {
            assert!(names.contains(&p), "{p} missing: {names:?}");
        }
        assert!(
            sample
                .notes
                .iter()
                .any(|n| n == "symlink: unsupported on exfat (no symbolic links); the phase was left out"),
            "{:?}",
            sample.notes
        );
        assert!(crate::dir_is_empty(tmp.path()));
        // Without the links, stat and delete visit the files alone: with them, stat would fail
        // on the first link that was never made.
        let l = Layout::new(&spec, 0).unwrap();
        let files = l.first[l.first.len() - 1] as usize;
        assert_eq!(Cursor::new(STAT, &l.first, true).total(), 3 * files);
        assert_eq!(Cursor::new(STAT, &l.first, false).total(), 2 * files);
        assert!(Cursor::new(DELETE, &l.first, false).total() < Cursor::new(DELETE, &l.first, true).total());
    }

    #[test]
    fn runs_every_phase_and_leaves_nothing() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spec = small();
        let (sample, seen) = crate::run_seeing_phases(&spec, tmp.path());
        let sample = sample.expect("mongo run");
        assert_eq!(seen, spec.phases());
        let names: Vec<&str> = sample.phases.iter().map(|p| p.phase.as_str()).collect();
        let fiemap = !sample.notes.iter().any(|n| n.contains("no FIEMAP"));
        if fiemap {
            assert_eq!(names, spec.phases().iter().map(String::as_str).collect::<Vec<_>>());
        } else {
            assert_eq!(names, [CREATE, COPY, SYMLINK, READ, STAT, RENAME, DELETE]);
        }
        for p in &sample.phases {
            if p.phase.starts_with("frag_") {
                let e = metric(p, "extents_per_file");
                // Files up to 20 kB, some empty: between 0 and a few pieces each.
                assert!((0.3..4.0).contains(&e), "{} = {e}", p.phase);
                assert_eq!(p.metrics[0].0.unit, Unit::Ratio);
                continue;
            }
            let (m, t) = &p.metrics[0];
            assert_eq!((m.name.as_str(), m.unit), ("time", Unit::Seconds));
            assert!(*t > 0.0 && (t - p.wall.as_secs_f64()).abs() < 1e-9, "{}", p.phase);
            let rate = metric(p, "rate");
            // Entries per phase: create = 2 roots… here per tree: 1 root + 7 dirs + 300 files.
            let entries = match p.phase.as_str() {
                CREATE | COPY => 2.0 + 7.0 + 300.0,
                SYMLINK | RENAME => 300.0,
                READ => 600.0,
                STAT => 900.0,
                DELETE => 2.0 * (2.0 + 7.0 + 300.0) + 300.0,
                other => panic!("unexpected phase {other}"),
            };
            assert!((rate * t - entries).abs() < 1e-6 * entries, "{} {rate} × {t}", p.phase);
            assert!(p.cpu.process_pct.is_finite());
        }
        assert!(sample.notes.iter().any(|n| n.contains("too short")));
        assert!(crate::dir_is_empty(tmp.path()), "run directory left non-empty");
    }

    #[test]
    fn fixed_sizes_are_written_copied_and_read_back_exactly() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        // 1.5 MiB files need two writes each; the read phase checks the byte total.
        for content in [Content::Zeros, Content::Random, Content::Text] {
            let spec = MongoSpec {
                files: 4,
                file_size: Some(Bytes(3 * Bytes::MIB / 2)),
                dirs: 2,
                content,
                fsync: false,
                ..MongoSpec::default()
            };
            let s = crate::run_quiet(&spec, tmp.path(), &flag).expect("run");
            assert!(s.phases.iter().any(|p| p.phase == READ));
            assert!(crate::dir_is_empty(tmp.path()));
        }
    }

    #[test]
    fn layout_spreads_files_and_dirs_evenly_with_distinct_names() {
        let spec = MongoSpec {
            files: 1001,
            dirs: 10,
            processes: 3,
            ..MongoSpec::default()
        };
        let layouts: Vec<Layout> = (0..3).map(|w| Layout::new(&spec, w).expect("layout")).collect();
        assert_eq!(layouts.iter().map(Layout::nfiles).sum::<u32>(), 1001);
        assert_eq!(layouts.iter().map(|l| l.ndirs).collect::<Vec<_>>(), [4, 3, 3]);
        let l = &layouts[1];
        let mut n = Names::new(l.w);
        assert_eq!(n.files[0].file(0, 0), c"tree1-001/d00000/f00000000");
        assert_eq!(n.files[1].file(0, 0), c"tree2-001/d00000/f00000000");
        assert_eq!(n.renamed.file(0, 0), c"tree1-001/d00000/f00000000.r");
        assert_eq!(n.links.file(0, 0), c"tree1-001/d00000/f00000000.lnk");
        assert_eq!(n.dirs[1].dir(0), c"tree2-001/d00000");
        assert_eq!(n.roots[0].get(), c"tree1-001");
        let symlink = Op {
            kind: Kind::Symlink,
            tree: 0,
            dir: 2,
            file: 700,
        };
        assert_eq!(n.of(symlink), (c"f00000700", c"tree1-001/d00002/f00000700.lnk"));
        let per_dir: Vec<usize> = (0..l.ndirs).map(|d| l.files_in(d).len()).collect();
        assert!(
            per_dir.iter().max().unwrap() - per_dir.iter().min().unwrap() <= 1,
            "{per_dir:?}"
        );
        // The delete phase removes every entry the create, copy and symlink phases made.
        let total = |phase| Cursor::new(phase, &l.first, true).total();
        assert_eq!(total(DELETE), total(CREATE) + total(COPY) + total(SYMLINK));
        assert_eq!(total("nonsense"), 0);
        assert_eq!(Cursor::new("nonsense", &l.first, true).next_op(), None);
    }

    /// The operations of `phase` over directories `first` as straight loops, in the order of
    /// `bench/mongo_meta.c` (the list the workload used to build).
    fn reference_ops(phase: &str, first: &[u32]) -> Vec<Op> {
        use Kind::*;
        let ndirs = first.len() as u32 - 1;
        let n = first[ndirs as usize];
        let files_in = |d: u32| first[d as usize]..first[d as usize + 1];
        let dir_of = |i: u32| first.partition_point(|&f| f <= i) as u32 - 1;
        let op = |kind, tree, dir, file| Op { kind, tree, dir, file };
        let on = |kind, tree, i| op(kind, tree, dir_of(i), i);
        let mut ops = Vec::new();
        let make_tree = |ops: &mut Vec<Op>, t: u8, kind| {
            ops.push(op(MkdirRoot, t, 0, 0));
            for d in 0..ndirs {
                ops.push(op(Mkdir, t, d, 0));
                ops.extend(files_in(d).map(|i| op(kind, t, d, i)));
            }
        };
        match phase {
            CREATE => make_tree(&mut ops, 0, Create),
            COPY => make_tree(&mut ops, 1, Copy),
            SYMLINK => ops.extend((0..n).map(|i| on(Symlink, 0, i))),
            READ => {
                ops.extend((0..n).map(|i| on(Read, 0, i)));
                ops.extend((0..n).map(|i| on(Read, 1, i)));
            }
            STAT => {
                for i in 0..n {
                    ops.push(on(Stat, 0, i));
                    ops.push(on(StatLink, 0, i));
                }
                ops.extend((0..n).map(|i| on(Stat, 1, i)));
            }
            RENAME => ops.extend((0..n).map(|i| on(Rename, 0, i))),
            DELETE => {
                for t in 0..2u8 {
                    for d in 0..ndirs {
                        for i in files_in(d) {
                            ops.push(op(Unlink, t, d, i));
                            if t == 0 {
                                ops.push(op(UnlinkLink, t, d, i));
                            }
                        }
                        ops.push(op(Rmdir, t, d, 0));
                    }
                    ops.push(op(RmdirRoot, t, 0, 0));
                }
            }
            _ => {}
        }
        ops
    }

    /// The names of `op` for worker `w` as the workload used to format them (see `Names::of`).
    fn reference_names(w: u32, op: Op) -> (String, String) {
        use Kind::*;
        let (t, d, i) = (op.tree + 1, op.dir, op.file);
        let root = |t: u8| format!("tree{t}-{w:03}");
        let dir = |t: u8| format!("tree{t}-{w:03}/d{d:05}");
        let file = |t: u8| format!("tree{t}-{w:03}/d{d:05}/f{i:08}");
        let renamed = format!("tree1-{w:03}/d{d:05}/f{i:08}.r");
        let link = format!("tree1-{w:03}/d{d:05}/f{i:08}.lnk");
        let one = |s: String| (s.clone(), s);
        match op.kind {
            MkdirRoot | RmdirRoot => one(root(t)),
            Mkdir | Rmdir => one(dir(t)),
            Create | Read | Stat => one(file(t)),
            Copy => (file(1), file(2)),
            Symlink => (format!("f{i:08}"), link),
            StatLink | UnlinkLink => one(link),
            Rename => (file(1), renamed),
            Unlink if t == 1 => one(renamed),
            Unlink => one(file(2)),
        }
    }

    #[test]
    fn templates_match_formatted_names_in_any_order() {
        let mut n = Names::new(7);
        let mut rng = SmallRng::seed_from_u64(1);
        // Odometer carries, jumps forwards and back, the largest indices, then random ones.
        let mut seq = vec![
            (0, 9),
            (0, 10),
            (0, 99),
            (1, 100),
            (9, 99_999),
            (10, 100_000),
            (99_998, 99_999_998),
        ];
        seq.extend([
            (3, 12_345_678),
            (3, 12_345_679),
            (0, 0),
            (0, 1),
            (4, 19_999_999),
            (5, 20_000_000),
        ]);
        seq.extend((0..1000).map(|_| (rng.gen_range(0..MAX_DIRS), rng.gen_range(0..MAX_FILES))));
        for (d, i) in seq {
            let f = format!("tree1-007/d{d:05}/f{i:08}");
            assert_eq!(n.files[0].file(d, i).to_str(), Ok(f.as_str()));
            assert_eq!(n.files[1].file(d, i).to_str(), Ok(f.replace("tree1", "tree2").as_str()));
            assert_eq!(n.links.file(d, i).to_str(), Ok(format!("{f}.lnk").as_str()));
            assert_eq!(n.renamed.file(d, i).to_str(), Ok(format!("{f}.r").as_str()));
            assert_eq!(n.dirs[0].dir(d).to_str(), Ok(format!("tree1-007/d{d:05}").as_str()));
        }
    }

    #[test]
    fn cursor_yields_the_reference_operations_in_order() {
        // Uneven files per directory (6,6,6,7 and 8,8,9), and more directories than files.
        let specs = [(50, 7, 2), (5, 9, 1)].map(|(files, dirs, processes)| MongoSpec {
            files,
            dirs,
            processes,
            ..MongoSpec::default()
        });
        for spec in &specs {
            for w in 0..spec.processes {
                let l = Layout::new(spec, w).expect("layout");
                for phase in spec.phases().iter().map(String::as_str).chain(["nonsense"]) {
                    let want = if phase.starts_with("frag_") {
                        Vec::new()
                    } else {
                        reference_ops(phase, &l.first)
                    };
                    let mut cursor = Cursor::new(phase, &l.first, true);
                    assert_eq!(cursor.total(), want.len(), "{phase} worker {w}");
                    let got: Vec<Op> = std::iter::from_fn(|| cursor.next_op()).collect();
                    assert_eq!(got, want, "{phase} worker {w} of {spec:?}");
                    assert_eq!(cursor.next_op(), None, "{phase} stays complete");
                    // A fresh set of templates per phase, as the runner makes them.
                    let mut names = Names::new(w);
                    for op in got {
                        let (a, b) = names.of(op);
                        let got = (a.to_str().expect("ASCII"), b.to_str().expect("ASCII"));
                        let want = reference_names(w, op);
                        assert_eq!(got, (want.0.as_str(), want.1.as_str()), "{phase} {op:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn delete_removes_exactly_what_the_phases_made() {
        let spec = MongoSpec {
            files: 50,
            dirs: 7,
            processes: 2,
            ..MongoSpec::default()
        };
        for w in 0..spec.processes {
            let l = Layout::new(&spec, w).expect("layout");
            let mut names = Names::new(w);
            let mut entries = std::collections::BTreeSet::new();
            for phase in [CREATE, COPY, SYMLINK, READ, STAT, RENAME, DELETE] {
                let mut cursor = Cursor::new(phase, &l.first, true);
                while let Some(op) = cursor.next_op() {
                    let (a, b) = names.of(op);
                    let (a, b) = (
                        a.to_str().expect("ASCII").to_owned(),
                        b.to_str().expect("ASCII").to_owned(),
                    );
                    let ok = match op.kind {
                        Kind::MkdirRoot | Kind::Mkdir | Kind::Create => entries.insert(a),
                        Kind::Copy => entries.contains(&a) && entries.insert(b),
                        // The target is the file's basename beside the link.
                        Kind::Symlink => entries.contains(&b.replace(".lnk", "")) && entries.insert(b),
                        Kind::Read | Kind::Stat | Kind::StatLink => entries.contains(&a),
                        Kind::Rename => entries.remove(&a) && entries.insert(b),
                        Kind::Unlink | Kind::UnlinkLink => entries.remove(&a),
                        Kind::Rmdir | Kind::RmdirRoot => {
                            let inside = format!("{a}/");
                            !entries.iter().any(|e| e.starts_with(&inside)) && entries.remove(&a)
                        }
                    };
                    assert!(ok, "{phase} {op:?}: on an entry that is not there, or makes one twice");
                }
            }
            assert!(entries.is_empty(), "left: {entries:?}");
        }
    }

    #[test]
    fn random_sizes_are_uniform_repeatable_and_differ_by_worker_and_seed() {
        let spec = MongoSpec {
            files: 20_000,
            file_min_size: Some(Bytes(100)),
            file_max_size: Some(Bytes(199)),
            dirs: 2,
            processes: 2,
            ..MongoSpec::default()
        };
        let a = Sizes::new(&spec, 0);
        let mut counts = [0u32; 100];
        for i in 0..10_000 {
            let s = a.of(i);
            assert!((100..=199).contains(&s), "{s}");
            assert_eq!(s, Sizes::new(&spec, 0).of(i));
            counts[(s - 100) as usize] += 1;
        }
        // 100 per value expected; 5 standard deviations either side.
        assert!(counts.iter().all(|c| (50..=150).contains(c)), "{counts:?}");
        let other_worker = Sizes::new(&spec, 1);
        let other_seed = Sizes::new(
            &MongoSpec {
                seed: 1,
                ..spec.clone()
            },
            0,
        );
        let same = |x: Sizes, y: Sizes| (0..1000).filter(|&i| x.of(i) == y.of(i)).count();
        // About 10 of 1000 by chance.
        assert!(same(a, other_worker) < 40 && same(a, other_seed) < 40);
        let wide = Sizes {
            lo: 0,
            hi: 64 * Bytes::GIB,
            key: 3,
        };
        assert!((0..1000).all(|i| wide.of(i) <= 64 * Bytes::GIB));
        assert!((0..1000).any(|i| wide.of(i) > 60 * Bytes::GIB));

        let flag = AtomicBool::new(false);
        let l = Layout::new(&spec, 1).expect("layout");
        let sum: u64 = (0..l.nfiles()).map(|i| l.sizes.of(i)).sum();
        assert_eq!(l.tree_bytes(&flag).expect("sum"), sum);
        let fixed = MongoSpec {
            file_size: Some(Bytes(7)),
            file_min_size: None,
            file_max_size: None,
            ..spec
        };
        let l = Layout::new(&fixed, 0).expect("layout");
        assert_eq!((l.sizes.of(0), l.sizes.of(9_999)), (7, 7));
        assert_eq!(l.tree_bytes(&flag).expect("sum"), 7 * 10_000);
    }

    #[test]
    fn defaults_are_the_first_study_table_and_parse() {
        let s: MongoSpec = toml::from_str("").expect("empty spec");
        assert_eq!(s, MongoSpec::default());
        assert_eq!(
            (s.files, s.dirs, s.processes, s.size_range()),
            (69_000, 240, 1, (100, 100))
        );
        assert_eq!(s.content, Content::Random);
        assert!(s.fsync && s.validate().is_ok());
        let tables = MongoSpec::study_2000();
        let got: Vec<(&str, u32, u64, u32)> = tables
            .iter()
            .map(|(n, t)| (*n, t.files, t.size_range().0, t.dirs))
            .collect();
        assert_eq!(
            got,
            [
                ("mongo-100b", 69_000, 100, 240),
                ("mongo-1k", 11_600, 1000, 43),
                ("mongo-10k", 2_300, 10_000, 31)
            ]
        );
        let text = r#"
            files = 500
            file_min_size = "1k"
            file_max_size = "8k"
            dirs = 5
            processes = 2
            content = "text"
            fsync = false
            seed = 3
        "#;
        let p: MongoSpec = toml::from_str(text).expect("spec");
        assert_eq!(p.size_range(), (1024, 8192));
        assert_eq!(p.content, Content::Text);
        let back: MongoSpec = toml::from_str(&toml::to_string(&p).expect("serialize")).expect("reparse");
        assert_eq!(back, p);
        assert!(toml::from_str::<MongoSpec>("content = \"ones\"").is_err());
        assert!(toml::from_str::<MongoSpec>("file_sise = 3").is_err());
        assert!(s
            .describe()
            .starts_with("mongo files=69000 size=100B dirs=240 processes=1 content=random fsync"));
    }

    #[test]
    fn validation_rejects_impossible_relations() {
        let ok = MongoSpec::default();
        let bad = [
            MongoSpec {
                file_size: Some(Bytes(1)),
                file_max_size: Some(Bytes(2)),
                ..ok.clone()
            },
            MongoSpec {
                file_min_size: Some(Bytes(1)),
                ..ok.clone()
            },
            MongoSpec {
                file_min_size: Some(Bytes(10)),
                file_max_size: Some(Bytes(5)),
                ..ok.clone()
            },
            MongoSpec {
                processes: 0,
                ..ok.clone()
            },
            MongoSpec {
                files: 2,
                processes: 3,
                dirs: 3,
                ..ok.clone()
            },
            MongoSpec {
                dirs: 1,
                processes: 2,
                ..ok.clone()
            },
        ];
        for b in &bad {
            assert!(b.validate().is_err(), "{b:?} should be invalid");
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        assert!(matches!(
            crate::run_quiet(&bad[3], tmp.path(), &flag),
            Err(EngineError::Invalid(_))
        ));
    }

    #[test]
    fn scaling_and_disk_bytes() {
        let s = MongoSpec::default();
        let WorkloadKind::Mongo(small) = s.scaled(0.05) else {
            panic!("scaled mongo is mongo")
        };
        assert_eq!((small.files, small.dirs, small.size_range()), (3450, 12, (100, 100)));
        let WorkloadKind::Mongo(tiny) = s.scaled(1e-9) else {
            panic!("scaled mongo is mongo")
        };
        assert!(tiny.validate().is_ok() && tiny.files >= 16 && tiny.dirs >= 1);
        // 100-byte files: an inode for every file, copy, link and directory.
        let fp = s.footprint();
        assert_eq!(fp.files + fp.dirs + fp.symlinks, 3 * 69_000 + 2 * 241 + 1, "{fp:?}");
        // 10 kB files: three 4 KiB blocks per copy at least.
        let big = MongoSpec {
            files: 100_000,
            file_size: Some(Bytes(10_000)),
            ..MongoSpec::default()
        };
        assert_eq!(big.footprint().block_bytes, 100_000 * 2 * 12 * 1024);
    }

    #[test]
    fn interrupt_and_errors_clean_up_and_say_where() {
        crate::workloads::test_util::assert_interrupted_leaves_nothing(&small());

        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        std::fs::create_dir(tmp.path().join("mongo")).expect("mkdir");
        match crate::run_quiet(&small(), tmp.path(), &flag) {
            Err(EngineError::Io { what, source }) => {
                assert!(what.starts_with("mkdir ") && what.ends_with("/mongo"), "{what}");
                assert_eq!(source.kind(), io::ErrorKind::AlreadyExists);
            }
            other => panic!("expected an I/O error, got {other:?}"),
        }
        let e = ERR.io_in(
            "create",
            Path::new("/mnt/x/mongo"),
            Some(c"tree1-000/d00001/f00000007"),
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        let text = e.to_string();
        assert!(
            text.starts_with("create /mnt/x/mongo/tree1-000/d00001/f00000007 (filesystem full"),
            "{text}"
        );
    }
}
