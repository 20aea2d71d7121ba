//! The native workload engine.
//!
//! A workload (one file per family under `workloads/`) describes phases; the engine runs them on
//! an empty directory of the filesystem under test and returns a [`RawSample`]. [`WorkloadKind`]
//! is the closed set of workloads and [`WorkloadKind::workload`] is the single place that
//! dispatches on it: everything else goes through the [`Workload`] trait.
//!
//! Rules every workload keeps (doc/architecture.md, "Rules that keep the numbers honest"):
//! - the hot loop allocates nothing, takes no shared lock, and reads the monotonic clock once
//!   per operation (the end of one operation is the start of the next);
//! - write phases end with fsync inside the timed region unless the spec says otherwise;
//! - `sync` and drop caches before each timed phase when the policy asks for it;
//! - CPU of the process (getrusage) and of the machine (/proc/stat) per phase;
//! - the interrupt flag is polled, so Ctrl-C ends a phase quickly and guards run.

#[cfg(test)]
#[macro_use]
extern crate fsbench_core;

// The lower crates' modules this crate uses, by their names in the layer map
// (doc/architecture.md), so a path reads `crate::units::Bytes` in every crate.
use fsbench_content::datasets;
use fsbench_content::parsers;
use fsbench_content::trace;
use fsbench_core::choice;
use fsbench_core::fstype;
use fsbench_core::host;
use fsbench_core::metric;
use fsbench_core::progress;
use fsbench_core::undo;
use fsbench_core::units;

use crate::metric::RawSample;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::AtomicBool;

pub mod caches;
pub mod child;
pub mod clock;
pub mod copy;
pub mod cpu;
pub mod fiemap;
pub mod latency;
pub mod openloop;
pub mod phase;
pub mod pool;
pub mod resize;
pub mod stall;
pub mod sync;
pub mod sysio;
pub mod windows;
pub mod workloads;

pub use workloads::bigfile::BigfileSpec;
pub use workloads::bonnie::BonnieSpec;
pub use workloads::filecopy::FilecopySpec;
pub use workloads::fileio::FileioSpec;
pub use workloads::mongo::MongoSpec;
pub use workloads::oltp::OltpSpec;
pub use workloads::treecopy::TreecopySpec;

/// Why a workload could not produce a sample.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A system call failed; `what` says which operation on which path.
    #[error("{what}: {source}")]
    Io {
        /// The operation and path, e.g. "write /mnt/x/Bonnie.0".
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The run was interrupted (SIGINT/SIGTERM) while this workload ran.
    #[error("interrupted")]
    Interrupted,
    /// The workload's parameters cannot work (found at run time).
    #[error("invalid workload: {0}")]
    Invalid(String),
    /// Something the workload needs is not installed here (a database server, a tool); the
    /// message says what to install.
    #[error("unavailable: {0}")]
    Unavailable(String),
}

impl EngineError {
    /// Wraps an I/O error with the operation and path it came from.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        EngineError::Io {
            what: what.into(),
            source,
        }
    }
}

/// A workload spec that cannot work: the message names the key and says what to change
/// (`"seekers must be at most 1024 (is 2000)"`). What [`Workload::validate`] returns.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

/// Something a workload needs is missing here, or the workload cannot run where it is asked
/// to: the message says what is missing and what to install (`"… apt-get install fio"`).
/// What [`Workload::availability`] and its `_on`/`_in_guest` siblings return.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(pub String);

impl From<String> for Invalid {
    fn from(s: String) -> Self {
        Invalid(s)
    }
}

impl From<&str> for Invalid {
    fn from(s: &str) -> Self {
        Invalid(s.to_string())
    }
}

impl From<String> for Unavailable {
    fn from(s: String) -> Self {
        Unavailable(s)
    }
}

impl From<&str> for Unavailable {
    fn from(s: &str) -> Self {
        Unavailable(s.to_string())
    }
}

impl From<Invalid> for EngineError {
    fn from(e: Invalid) -> Self {
        EngineError::Invalid(e.0)
    }
}

impl From<Unavailable> for EngineError {
    fn from(e: Unavailable) -> Self {
        EngineError::Unavailable(e.0)
    }
}

/// The hint a workload adds to an I/O error when the filesystem is full: what to change.
/// `ErrHint::io` and `ErrHint::io_in` are the one way workloads wrap an I/O error with its
/// operation and path.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ErrHint(
    /// What to do on ENOSPC, e.g. `"lower size, or use a larger target"`; the error says
    /// ` (filesystem full: …)` or ` (out of inodes: …)`, whichever [`crate::fstype::enospc_cause`]
    /// finds on the filesystem holding the path.
    pub &'static str,
);

impl ErrHint {
    /// `"{op} {path}"`, plus the hint on ENOSPC and `" (quota exceeded)"` on EDQUOT.
    pub fn io(self, op: &str, path: &Path, e: std::io::Error) -> EngineError {
        self.io_in(op, path, None, e)
    }

    /// [`ErrHint::io`] for the entry `name` of directory `dir` (`"{op} {dir}/{name}"`).
    pub fn io_in(self, op: &str, dir: &Path, name: Option<&std::ffi::CStr>, e: std::io::Error) -> EngineError {
        let mut what = format!("{op} {}", dir.display());
        if let Some(n) = name {
            what.push('/');
            what.push_str(&n.to_string_lossy());
        }
        match e.raw_os_error() {
            Some(libc::ENOSPC) => {
                what.push_str(&format!(" ({}: {})", crate::fstype::enospc_cause(dir), self.0));
            }
            Some(libc::EDQUOT) => what.push_str(" (quota exceeded)"),
            _ => {}
        }
        EngineError::io(what, e)
    }
}

/// What a workload gets to run one repeat.
pub struct RunContext<'a> {
    /// An empty directory on the filesystem under test; the workload owns it.
    pub dir: &'a Path,
    /// `sync` + drop caches before every timed phase (needs root; skipped with a note if not).
    pub drop_caches: bool,
    /// Set by SIGINT/SIGTERM; poll it at least every few milliseconds of work.
    pub interrupt: &'a AtomicBool,
    /// How the phases line up with other processes running the same repeat (the ranks of an
    /// MPI run): [`sync::Solo`], which does nothing, for a single process.
    pub sync: &'a dyn sync::PhaseSync,
    /// Called with a phase name when it starts (progress display).
    pub on_phase: &'a (dyn Fn(&str) + Sync),
    /// The run's state file, for a workload that creates pieces of its own outside `dir` (the
    /// power-cut disk's server, mounts and loop device): each is recorded as an
    /// [`crate::undo::Step`] the moment it may exist, so `fsbench cleanup` undoes it after a
    /// SIGKILL. `None` outside a run (unit tests, `run_quiet`).
    pub state: Option<&'a dyn crate::undo::UndoLog>,
    /// The filesystem type under test, whose declared gaps ([`crate::fstype::FsType::lacks`])
    /// leave out the phases that need them ([`RunContext::unsupported`]); `None` when unknown
    /// (an existing directory, unit tests): every phase runs.
    pub fs: Option<&'static crate::fstype::FsType>,
    /// The variant's own mkfs arguments (after the row's defaults). Only a built type's
    /// workload ([`crate::fstype::Backing::Built`], `image`) uses them: they go to its build
    /// tool (`-zlz4hc`, `-comp xz -b 64K`); every other workload never runs mkfs. Empty when
    /// unknown.
    pub mkfs_args: &'a [String],
    /// Leave what the workload made on the filesystem instead of emptying its directory: the
    /// runner saves the filesystem's image afterwards (`--keep-aged`). Only `aging` in its aged
    /// mode keeps anything; every other workload ignores it.
    pub keep: bool,
}

impl<'a> RunContext<'a> {
    /// A context in `dir` that keeps caches and reports no phases: for [`run_quiet`] and the
    /// unit tests that call a workload's parts directly.
    pub fn quiet(dir: &'a Path, interrupt: &'a AtomicBool) -> Self {
        fn no_phase(_: &str) {}
        RunContext {
            dir,
            drop_caches: false,
            interrupt,
            sync: &sync::Solo,
            on_phase: &no_phase,
            state: None,
            fs: None,
            mkfs_args: &[],
            keep: false,
        }
    }

    /// The note saying `phase` is left out because the filesystem under test lacks one of
    /// `needs` (`"symlink: unsupported on exfat (no symbolic links); …"`), or `None`: run it.
    pub fn unsupported(&self, phase: &str, needs: &[crate::fstype::Feature]) -> Option<String> {
        self.fs.and_then(|t| t.unsupported(phase, needs))
    }
}

/// The interface every workload family implements.
pub trait Workload {
    /// Names of the timed phases in run order (report rows).
    fn phases(&self) -> Vec<String>;
    /// A copy with every size and duration multiplied by `factor` (`--scale`), never below
    /// what the workload needs to work.
    fn scaled(&self, factor: f64) -> WorkloadKind;
    /// A copy whose phases that ran under the minimum time in `walls` (each phase's shortest
    /// warm-up over the session's variants) are given more work ([`resize`]), with one line
    /// per change; `None` when no phase is short or the workload has no size to raise (the
    /// default: its short phases keep their "ran under" note).
    fn resized(&self, walls: &resize::PhaseWalls) -> Option<resize::Resized> {
        let _ = walls;
        None
    }
    /// A copy that also searches its capacity at latency target `target` (`--target`), or
    /// `None` for a workload that cannot run open loop ([`openloop`]).
    fn with_target(&self, target: openloop::LatencyTarget) -> Option<WorkloadKind> {
        let _ = target;
        None
    }
    /// Checks parameters that serde cannot (ranges, relations). Message says what to change.
    fn validate(&self) -> Result<(), Invalid>;
    /// Whether this machine can run the workload (external servers and tools installed);
    /// `Err` says what to install. Most workloads need nothing and keep the default.
    fn availability(&self) -> Result<(), Unavailable> {
        Ok(())
    }
    /// Whether the workload can run on a filesystem of type `fs` at all (whatever this machine
    /// has); `Err` says why not, and the case is unavailable, reported with that reason, before
    /// anything is made. Most workloads run on every type and keep the default.
    fn availability_on(&self, _fs: &crate::fstype::FsType) -> Result<(), Unavailable> {
        Ok(())
    }
    /// Whether the workload can run inside a guest kernel (a `TYPE@guest` variant); `Err` says
    /// why not, and such a case is unavailable with that reason before anything is made. Most
    /// workloads run in the guest's agent like on the host and keep the default.
    fn availability_in_guest(&self) -> Result<(), Unavailable> {
        Ok(())
    }
    /// `(tool, version)` of the external programs the workload runs (servers, load
    /// generators), recorded with the session. Most workloads run none and keep the default.
    fn tool_versions(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// Whether the workload needs a filesystem fsbench made on a block device (it unmounts,
    /// cuts or checks it), so an existing directory (`--dir`) cannot host it. Most keep `false`.
    fn needs_block_device(&self) -> bool {
        false
    }
    /// What the data the workload writes is like (its `content` setting), which the
    /// compression probe writes to measure the on-disk ratio a compressing filesystem really
    /// achieves on it. `None`: not said (the probe writes incompressible data).
    fn content(&self) -> Option<crate::datasets::content::Content> {
        None
    }
    /// Whether the workload builds a read-only image type's image itself (`image`), the only
    /// kind that runs on a [`crate::fstype::Backing::Built`] type (erofs, squashfs): any other
    /// would measure the staging filesystem under the image type's name, so [`run`] refuses
    /// it. Most workloads keep `false`.
    fn builds_image(&self) -> bool {
        false
    }
    /// Whether the workload copies its filesystem's loop image (`crashprops` records it on the
    /// power-cut disk and mounts copies of it): in a guest the agent then puts the filesystem on
    /// a loop image in a staging filesystem on the guest's disk, as the host does in its run
    /// folder, instead of on the disk itself. Most workloads keep `false`.
    fn needs_loop_image(&self) -> bool {
        false
    }
    /// The workload as a guest kernel runs it, when that differs (a smaller budget for an
    /// emulated guest, said in the parameters the sample records). Most keep `None`.
    fn in_guest(&self) -> Option<WorkloadKind> {
        None
    }
    /// What `phase` needs from the filesystem beyond files and directories (symlinks, hard
    /// links, permissions): on a type that lacks one, the phase is left out with an
    /// "unsupported on TYPE" note and the rest of the repeat runs. A workload that declares a
    /// need here handles the phase's absence in its own `run` (later phases adapt); when every
    /// phase is unsupported, [`run`] returns the notes without running the workload. Most
    /// workloads need nothing and keep the default.
    fn needs(&self, phase: &str) -> &'static [crate::fstype::Feature] {
        let _ = phase;
        &[]
    }
    /// What the workload holds on the filesystem at its peak (files, directories, data), from
    /// which [`crate::fstype::FsType::estimate`] sizes images and checks space.
    fn footprint(&self) -> crate::fstype::Footprint;
    /// For a workload whose size `--scale` does not change (a replayed trace holds the tree
    /// the program found and what it wrote): what it holds, in words, for the message that
    /// refuses a target too small for it before anything is provisioned (`trace T: a tree
    /// of 3 files, 1.0 GiB, plus 8 KiB written`). `None` for the others, which `--scale`
    /// shrinks.
    fn fixed_size(&self) -> Option<String> {
        None
    }
    /// One line for `fsbench plan`.
    fn describe(&self) -> String;
    /// Runs one repeat: untimed preparation, then the timed phases.
    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError>;
}

/// Runs one repeat of `workload`: chooses and calibrates the per-operation clock first
/// ([`clock::best`], once per process, up to 200 ms), so that no phase's CPU meter or time
/// contains the calibration.
///
/// A read-only image type (erofs, squashfs) runs only a workload that builds its image
/// ([`Workload::builds_image`]); any other is an error naming the type.
///
/// When the filesystem under test lacks something every phase needs ([`Workload::needs`]), the
/// workload is not run (not even its untimed preparation, which would need it too): the sample
/// holds one "unsupported" note per phase and no measurements.
pub fn run(workload: &dyn Workload, ctx: &RunContext) -> Result<RawSample, EngineError> {
    if let Some(t) = ctx.fs.filter(|t| t.is_built() && !workload.builds_image()) {
        return Err(EngineError::Invalid(format!(
            "{} is a read-only image built from a tree: only the `image` workload runs on it",
            t.name
        )));
    }
    let phases = workload.phases();
    let unsupported: Vec<String> = phases
        .iter()
        .filter_map(|p| ctx.unsupported(p, workload.needs(p)))
        .collect();
    if !phases.is_empty() && unsupported.len() == phases.len() {
        return Ok(RawSample {
            notes: unsupported,
            ..RawSample::default()
        });
    }
    clock::best();
    workload.run(ctx)
}

/// Runs one repeat of `workload` in `dir` without dropping caches or reporting phases: for unit
/// tests and the `examples/` drivers of the bench scripts.
pub fn run_quiet(workload: &dyn Workload, dir: &Path, interrupt: &AtomicBool) -> Result<RawSample, EngineError> {
    run(workload, &RunContext::quiet(dir, interrupt))
}

/// Runs one repeat of `workload` in `dir` like [`run_quiet`] and raises its interrupt flag
/// `after` the start from another thread: the interrupt test of every workload.
#[cfg(any(test, feature = "test-support"))]
pub fn run_interrupted_after(
    workload: &dyn Workload,
    dir: &Path,
    after: std::time::Duration,
) -> Result<RawSample, EngineError> {
    let flag = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(after);
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        run_quiet(workload, dir, &flag)
    })
}

/// Runs one repeat of `workload` in `dir` by its own [`Workload::run`] (no cache drops, never
/// interrupted) and returns it with the phase names it announced, in order.
#[cfg(any(test, feature = "test-support"))]
pub fn run_seeing_phases(workload: &dyn Workload, dir: &Path) -> (Result<RawSample, EngineError>, Vec<String>) {
    let flag = AtomicBool::new(false);
    let seen = std::sync::Mutex::new(Vec::new());
    let on_phase = |p: &str| seen.lock().expect("test mutex").push(p.to_string());
    let ctx = RunContext {
        dir,
        drop_caches: false,
        interrupt: &flag,
        sync: &sync::Solo,
        on_phase: &on_phase,
        state: None,
        fs: None,
        mkfs_args: &[],
        keep: false,
    };
    let r = workload.run(&ctx);
    (r, seen.into_inner().expect("test mutex"))
}

/// `true` when `dir` exists and has no entries: what every workload must leave behind.
#[cfg(any(test, feature = "test-support"))]
pub fn dir_is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).map(|mut d| d.next().is_none()).unwrap_or(false)
}

/// Defines [`WorkloadKind`] and everything derived from its list: the serde tag of each
/// variant, [`WorkloadKind::KINDS`], [`WorkloadKind::name`], [`WorkloadKind::workload`] and
/// [`WorkloadKind::defaults`]. A new workload is one line here (plus its file).
macro_rules! workload_kinds {
    ($( $(#[$doc:meta])* $variant:ident($spec:ty) = $name:literal, )*) => {
        /// The closed set of workloads, as written in suite files (`kind = "bonnie"`).
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind")]
        pub enum WorkloadKind {
            $( $(#[$doc])* #[serde(rename = $name)] $variant($spec), )*
        }

        impl WorkloadKind {
            /// Every kind name, in the order of the enum (for `fsbench list workloads` and
            /// "did you mean").
            pub const KINDS: &'static [&'static str] = &[$($name),*];

            /// The kind name as written in suite files (the serde tag).
            pub fn name(&self) -> &'static str {
                match self {
                    $( WorkloadKind::$variant(_) => $name, )*
                }
            }

            /// The single dispatch point from the closed set to the [`Workload`] interface.
            pub fn workload(&self) -> &dyn Workload {
                match self {
                    $( WorkloadKind::$variant(spec) => spec, )*
                }
            }

            /// Every kind with its default parameters, in the order of [`WorkloadKind::KINDS`].
            pub fn defaults() -> Vec<WorkloadKind> {
                vec![$( WorkloadKind::$variant(<$spec>::default()), )*]
            }
        }
    };
}

workload_kinds! {
    /// bonnie++ 2.x: sequential char/block I/O, rewrite, random seeks, small files.
    Bonnie(BonnieSpec) = "bonnie",
    /// The reiserfs mongo benchmark: create, copy, symlink, read, stat, rename, delete of many
    /// small files, with fragmentation after create and copy (FIEMAP).
    Mongo(MongoSpec) = "mongo",
    /// The 2022 huge-file test: write, fsync, close, unlink and space freed of one big file.
    Bigfile(BigfileSpec) = "bigfile",
    /// Copy a dataset tree within the filesystem, then delete the copy (`cp -a`, `rm -r`).
    Treecopy(TreecopySpec) = "treecopy",
    /// Copy one large file between two directories and back, deleting each time (ISO test).
    Filecopy(FilecopySpec) = "filecopy",
    /// sysbench fileio: seq/rnd reads and writes over a file set, fsync schedule, threads.
    Fileio(FileioSpec) = "fileio",
    /// sysbench-style OLTP transactions on SQLite, or on a MariaDB/PostgreSQL server fsbench starts.
    Oltp(OltpSpec) = "oltp",
    /// A metadata scan of many files (`find`, `du`, `ls -lR`): readdir, then readdir + stat.
    Scan(workloads::scan::ScanSpec) = "scan",
    /// The real fio, from a job file or inline options; every job's IOPS, bandwidth and latency.
    Fio(workloads::fio::FioSpec) = "fio",
    /// The real bonnie++, its CSV line as the native bonnie phases.
    BonniePp(workloads::bonnie_pp::BonniePpSpec) = "bonnie_pp",
    /// The real `sysbench fileio` (prepare, run, cleanup), every --file-test-mode.
    SysbenchFileio(workloads::sysbench_fileio::SysbenchFileioSpec) = "sysbench_fileio",
    /// The real dbench 4 with its client.txt loadfile: throughput and per-operation latency.
    Dbench(workloads::dbench::DbenchSpec) = "dbench",
    /// The real PostMark 1.51: the mail-server small-file transactions.
    Postmark(workloads::postmark::PostmarkSpec) = "postmark",
    /// Cut the power under a seeded writer (shutdown ioctl or the FUSE power-cut disk), then
    /// measure recovery mount, fsck and what acknowledged-durable data was lost.
    Powercut(workloads::powercut::PowercutSpec) = "powercut",
    /// coreutils `dd` writing one file (`conv=fsync` or `oflag=direct`): bigfile's referee.
    Dd(workloads::dd::DdSpec) = "dd",
    /// Full read-only check, clean mount and mount after a cut at growing file counts, with the
    /// checker's peak memory: how the cost of repair scales.
    RepairScaling(workloads::repair_scaling::RepairScalingSpec) = "repair_scaling",
    /// A seeded create/append/overwrite/rename/delete stream to a target fullness after a target
    /// churn (`aged`), or its final tree written directly (`fresh`); then a cold read and layout.
    Aging(workloads::aging::AgingSpec) = "aging",
    /// Named syscall sequences (fsync, O_SYNC, rename with and without fsyncs, …) with stamped
    /// blocks, cut under a chosen method and disk model: lost, reverted and torn units per
    /// primitive, a negative control that must lose.
    Durability(workloads::durability::DurabilitySpec) = "durability",
    /// Persistence-property probes (Pillai et al., OSDI '14) with no fsync between the
    /// operations under test, judged in systematic crash states built from the power-cut disk's
    /// write log: per property the states explored and the violating ones.
    Crashprops(workloads::crashprops::CrashPropsSpec) = "crashprops",
    /// Build a read-only image (erofs, squashfs: the variant's compressor and cluster or block
    /// size) from a tree, then its cold read and seeded random file reads from the mount.
    Image(workloads::image::ImageSpec) = "image",
    /// A program's file-system calls recorded by `fsbench record`, replayed with their
    /// cross-thread order: replay time, calls per second, divergent results (doc/replay.md).
    Replay(workloads::replay::ReplaySpec) = "replay",
}

#[cfg(test)]
mod kind_tests {
    use super::*;

    #[test]
    fn every_kind_parses_back_from_its_name_and_lists_its_phases() {
        let defaults = WorkloadKind::defaults();
        assert_eq!(defaults.len(), WorkloadKind::KINDS.len());
        for (k, name) in defaults.iter().zip(WorkloadKind::KINDS) {
            assert_eq!(k.name(), *name);
            // The serde tag is the same name, and a bare `kind = ...` means the defaults.
            let parsed: WorkloadKind =
                toml::from_str(&format!("kind = \"{name}\"")).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(&parsed, k, "{name}: Default and the serde defaults differ");
            let text = toml::to_string(k).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(text.starts_with(&format!("kind = \"{name}\"")), "{text}");
            let phases = k.workload().phases();
            assert!(!phases.is_empty(), "{name} lists no phases");
            // A replay's defaults name no trace: it is the one kind whose input the user must give.
            if *name != "replay" {
                assert!(k.workload().validate().is_ok(), "{name}'s defaults are invalid");
            }
            assert!(
                k.workload().describe().starts_with(name),
                "{name}: {}",
                k.workload().describe()
            );
        }
        let mut sorted = WorkloadKind::KINDS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), WorkloadKind::KINDS.len(), "kind names are unique");
    }
}
