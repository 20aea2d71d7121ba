//! The portable trace of a program's file-system calls: what `fsbench record` writes and the
//! `replay` workload reads (issue 44; doc/replay.md).
//!
//! A trace file is JSON lines, in this order (a reader refuses any other):
//!
//! 1. one [`Header`] (`{"header": {...}}`): the format version [`VERSION`], the tracer and its
//!    version, the command, the root it was recorded under, the traced run's wall time, what was
//!    dropped and why, whether names are hashed;
//! 2. one [`Entry`] per file, directory and symbolic link of the tree under the root before the
//!    program ran (`{"entry": {...}}`): path relative to the root, kind, size, mode; parents
//!    before children;
//! 3. one [`Call`] per recorded call under the root, in start order (`{"call": {...}}`);
//! 4. one [`End`] (`{"end": {...}}`) with the counts of entries and calls, so a truncated file
//!    is refused rather than replayed short.
//!
//! Invariants: paths are relative to the root, normalised (no `.`, `..` or empty components;
//! the root itself is `.`), never absolute; file contents are never stored, only sizes, offsets
//! and lengths; descriptors are resolved to handles ([`Call::handle`]), one per open file
//! description the program made under the root, numbered from 0 in the order they were opened.
//! [`Trace::read`] checks all of this: a damaged, truncated or foreign file is a
//! [`TraceError`] saying what and where.

pub mod resolve;
pub mod timing;
pub mod tree;
pub mod untraced;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// The format version this build writes. Version 2 added [`Header::overhead_in_call_s`] and
/// records under `strace --seccomp-bpf`; version 3 [`Call::untraced_run_s`].
pub const VERSION: u32 = 3;

/// The oldest format version this build reads: a version 1 trace loads with
/// [`Header::overhead_in_call_s`] unset (its timed replay takes out only `overhead_s`).
pub const MIN_VERSION: u32 = 1;

/// Why a trace cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read or written.
    #[error("{what}: {source}")]
    Io {
        /// The operation and path.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a trace of this format, or is damaged.
    #[error("{path}: {why}")]
    Bad {
        /// The file.
        path: String,
        /// What is wrong, with the line.
        why: String,
    },
}

/// The first line of a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// [`VERSION`] when written.
    pub version: u32,
    /// The tracer and its version (`strace 6.1`).
    pub tool: String,
    /// The command line that was traced.
    pub command: Vec<String>,
    /// The absolute root the paths are relative to, as recorded (hashed with the names).
    pub root: String,
    /// Wall time of the traced run (under the tracer), seconds.
    pub wall_s: f64,
    /// The tracer's cost per system call on this machine, seconds, measured when recording
    /// without perf's timing (`dd` of 10 000 bytes one at a time, with and without strace under
    /// the recording's flags; version 1: 20 000 bytes, without `-y -ttt -T`); `None` when not
    /// measured (since 29 Nov 2026 also when [`Header::timing`] names perf: not needed then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_s: Option<f64>,
    /// The part of [`Header::overhead_s`] inside a call's recorded duration (`-T`: strace takes
    /// a call's start and end when it handles the stops), seconds; `None` in version 1 traces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_in_call_s: Option<f64>,
    /// How the calls' times and the tracer's own time were measured, when not by strace's
    /// clock and the calibration: `perf VERSION` (`crate::trace::timing`: every call's
    /// [`Call::tracer_s`] is set), followed by `; untraced run, perf's cost N µs a call taken
    /// out` when every call has [`Call::untraced_run_s`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<String>,
    /// Whether every path component was replaced by its hash (`--hash-names`).
    pub hashed_names: bool,
    /// Calls not in the trace, by reason (`outside root`, `unknown descriptor`,
    /// `unsupported chmod`, …), counted.
    pub dropped: BTreeMap<String, u64>,
    /// The time marks the program made (`fsbench record --mark-on DIR`), in time order; each
    /// starts a phase of the replay under `phases = "marks"`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<Mark>,
}

/// A time mark: the program accessed `MARK-DIR/NAME` (any call on that path, found or not).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mark {
    /// The first component under the mark directory, its characters outside `[A-Za-z0-9._-]`
    /// replaced by `_`: the phase's name.
    pub name: String,
    /// When the marking call started, seconds from the first recorded call (as
    /// [`Call::start_s`]).
    pub at_s: f64,
}

/// What a tree entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (its target in [`Entry::target`] when it stays under the root).
    Symlink,
}

/// One entry of the tree the program found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Path relative to the root.
    pub path: String,
    /// What it is.
    pub kind: EntryKind,
    /// Size, bytes (files; 0 otherwise).
    pub size: u64,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    /// A symbolic link's target, kept only when it is relative and stays under the root (its
    /// components hashed with the names); `None` otherwise (the replay makes no such link).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// The kinds of call a trace holds; each names the family of system calls it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// open, openat, openat2, creat: [`Call::path`], [`Call::flags`], [`Call::mode`]; a new
    /// handle (openat2's `resolve` flags are not kept).
    Open,
    /// read, readv: [`Call::len`] bytes at the handle's position.
    Read,
    /// pread64, preadv: [`Call::len`] bytes at [`Call::offset`].
    Pread,
    /// write, writev.
    Write,
    /// pwrite64, pwritev.
    Pwrite,
    /// close of a handle (the last descriptor of it: [`Call::last`]).
    Close,
    /// fsync.
    Fsync,
    /// fdatasync.
    Fdatasync,
    /// sync_file_range: [`Call::offset`], [`Call::len`].
    SyncFileRange,
    /// rename, renameat, renameat2: [`Call::path`] to [`Call::path2`].
    Rename,
    /// unlink, unlinkat.
    Unlink,
    /// mkdir, mkdirat: [`Call::mode`].
    Mkdir,
    /// rmdir, unlinkat with `AT_REMOVEDIR`.
    Rmdir,
    /// stat, lstat, newfstatat, statx, access, faccessat(2) on a path ([`Call::flags`]:
    /// `nofollow` for lstat and `AT_SYMLINK_NOFOLLOW`).
    Stat,
    /// fstat, and the `AT_EMPTY_PATH` forms, on a handle.
    Fstat,
    /// getdents64: up to [`Call::len`] bytes of entries.
    Getdents,
    /// truncate: [`Call::path`] to [`Call::len`] bytes.
    Truncate,
    /// ftruncate.
    Ftruncate,
    /// fallocate: [`Call::flags`] (the mode, numeric), [`Call::offset`], [`Call::len`].
    Fallocate,
    /// lseek: [`Call::offset`], whence in [`Call::flags`].
    Lseek,
    /// copy_file_range from [`Call::handle`] to [`Call::handle2`], [`Call::len`] bytes.
    CopyFileRange,
    /// symlink, symlinkat: a link at [`Call::path`] to [`Call::target`].
    Symlink,
    /// link, linkat: [`Call::path`]'s file linked at [`Call::path2`].
    Link,
    /// mmap of a handle: counted, not replayed (the page faults that follow are not system
    /// calls and are not in the trace).
    Mmap,
    /// msync: counted, not replayed.
    Msync,
}

impl Kind {
    /// The name used in metric rows and the report (`open`, `sync_file_range`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Open => "open",
            Kind::Read => "read",
            Kind::Pread => "pread",
            Kind::Write => "write",
            Kind::Pwrite => "pwrite",
            Kind::Close => "close",
            Kind::Fsync => "fsync",
            Kind::Fdatasync => "fdatasync",
            Kind::SyncFileRange => "sync_file_range",
            Kind::Rename => "rename",
            Kind::Unlink => "unlink",
            Kind::Mkdir => "mkdir",
            Kind::Rmdir => "rmdir",
            Kind::Stat => "stat",
            Kind::Fstat => "fstat",
            Kind::Getdents => "getdents",
            Kind::Truncate => "truncate",
            Kind::Ftruncate => "ftruncate",
            Kind::Fallocate => "fallocate",
            Kind::Lseek => "lseek",
            Kind::CopyFileRange => "copy_file_range",
            Kind::Symlink => "symlink",
            Kind::Link => "link",
            Kind::Mmap => "mmap",
            Kind::Msync => "msync",
        }
    }

    /// Every kind, in declaration order.
    pub const ALL: [Kind; 25] = [
        Kind::Open,
        Kind::Read,
        Kind::Pread,
        Kind::Write,
        Kind::Pwrite,
        Kind::Close,
        Kind::Fsync,
        Kind::Fdatasync,
        Kind::SyncFileRange,
        Kind::Rename,
        Kind::Unlink,
        Kind::Mkdir,
        Kind::Rmdir,
        Kind::Stat,
        Kind::Fstat,
        Kind::Getdents,
        Kind::Truncate,
        Kind::Ftruncate,
        Kind::Fallocate,
        Kind::Lseek,
        Kind::CopyFileRange,
        Kind::Symlink,
        Kind::Link,
        Kind::Mmap,
        Kind::Msync,
    ];

    /// Whether the replay issues this kind (all but mmap and msync).
    pub fn replayed(self) -> bool {
        !matches!(self, Kind::Mmap | Kind::Msync)
    }
}

/// One recorded call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// The thread (or process) that made it, as the tracer printed it.
    pub tid: u32,
    /// The program its process was running: the file name of the last successful execve of
    /// the process (inherited through fork and clone); `None` before any (a trace of a process
    /// the tracer attached to). Names the phase under `phases = "process"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// What it is.
    pub kind: Kind,
    /// The system call's own name (`openat`, `newfstatat`).
    pub syscall: String,
    /// The path it names, relative to the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A rename's new path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path2: Option<String>,
    /// The handle it works on (fd calls), or the handle an open made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<u32>,
    /// copy_file_range's destination handle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle2: Option<u32>,
    /// Flags as the tracer printed them (`O_WRONLY|O_CREAT|O_EXCL`, `SEEK_SET`, `nofollow`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub flags: String,
    /// Mode argument (open with O_CREAT, mkdir).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    /// Offset argument, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    /// Length argument (bytes asked for), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub len: Option<u64>,
    /// A symbolic link's target as the program gave it (components hashed with the names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// System calls the thread made between its previous call in the trace and this one that
    /// are not in the trace (outside the root, unsupported, not file calls): each cost the
    /// tracer's overhead within the recorded gap ([`Header::overhead_s`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub untraced: u32,
    /// A close that closed the handle's last descriptor (the others are counted, not replayed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub last: bool,
    /// The value returned on success (bytes, a position, 0); for open, 0.
    pub result: i64,
    /// The error name on failure (`ENOENT`); then `result` is -1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errno: Option<String>,
    /// Start, seconds from the first recorded call of the run.
    pub start_s: f64,
    /// Time in the call, seconds.
    pub dur_s: f64,
    /// The tracer's time on this call's thread before it started (its creators' up to its
    /// creation included), seconds from the first recorded call, when measured
    /// ([`Header::timing`]); then `start_s` and `dur_s` are the kernel's, and a timed replay
    /// takes exactly this out of the gaps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracer_s: Option<f64>,
    /// This call's start and end on the clock of a second run of the program without the
    /// tracer (`fsbench record --untraced-run`; `crate::trace::untraced`: perf's own cost taken
    /// out), seconds from that run's first call; then a timed replay takes its think times from
    /// these, and the trace's order stays the traced run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untraced_run_s: Option<[f64; 2]>,
}

/// The trace file's last line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct End {
    /// Entries written.
    pub entries: u64,
    /// Calls written.
    pub calls: u64,
}

/// One line of the file.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Line {
    Header(Header),
    Entry(Entry),
    Call(Call),
    End(End),
}

/// A whole trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// The header.
    pub header: Header,
    /// The tree before the run.
    pub tree: Vec<Entry>,
    /// The calls, in start order.
    pub calls: Vec<Call>,
}

impl Trace {
    /// Writes the trace to `path` (created or replaced).
    pub fn write(&self, path: &Path) -> Result<(), TraceError> {
        let io = |e| TraceError::Io {
            what: format!("write {}", path.display()),
            source: e,
        };
        let f = std::fs::File::create(path).map_err(io)?;
        let mut w = std::io::BufWriter::new(f);
        let mut line = |l: &Line| -> Result<(), TraceError> {
            serde_json::to_writer(&mut w, l).map_err(|e| io(e.into()))?;
            w.write_all(b"\n").map_err(io)
        };
        line(&Line::Header(self.header.clone()))?;
        for e in &self.tree {
            line(&Line::Entry(e.clone()))?;
        }
        for c in &self.calls {
            line(&Line::Call(c.clone()))?;
        }
        line(&Line::End(End {
            entries: self.tree.len() as u64,
            calls: self.calls.len() as u64,
        }))?;
        w.flush().map_err(io)?;
        w.into_inner().map_err(|e| io(e.into_error()))?.sync_all().map_err(io)
    }

    /// Reads and checks the trace at `path`.
    pub fn read(path: &Path) -> Result<Trace, TraceError> {
        let text = std::fs::read_to_string(path).map_err(|e| TraceError::Io {
            what: format!("open trace {}", path.display()),
            source: e,
        })?;
        let bad = |why: String| TraceError::Bad {
            path: path.display().to_string(),
            why,
        };
        let mut header = None;
        let (mut tree, mut calls, mut end) = (Vec::new(), Vec::new(), None);
        let count = text.lines().count();
        for (i, l) in text.lines().enumerate() {
            let n = i + 1;
            if end.is_some() {
                return Err(bad(format!("line {n}: text after the end line")));
            }
            let parsed: Line = serde_json::from_str(l).map_err(|e| {
                if n == 1 {
                    bad(format!(
                        "not an fsbench trace (line 1: {e}); record one with `fsbench record`"
                    ))
                } else if n == count && !text.ends_with('\n') {
                    bad(format!("truncated: line {n}, the last, is cut short ({e})"))
                } else {
                    bad(format!("line {n}: {e}"))
                }
            })?;
            match (parsed, header.is_some()) {
                (Line::Header(h), false) => {
                    if !(MIN_VERSION..=VERSION).contains(&h.version) {
                        return Err(bad(format!(
                            "trace format version {} (this fsbench reads versions {MIN_VERSION} to {VERSION})",
                            h.version
                        )));
                    }
                    header = Some(h);
                }
                (_, false) => return Err(bad("not an fsbench trace (no header on line 1)".into())),
                (Line::Header(_), true) => return Err(bad(format!("line {n}: a second header"))),
                (Line::Entry(e), true) if calls.is_empty() => tree.push(e),
                (Line::Entry(_), true) => return Err(bad(format!("line {n}: a tree entry after the calls"))),
                (Line::Call(c), true) => calls.push(c),
                (Line::End(e), true) => end = Some(e),
            }
        }
        let header = header.ok_or_else(|| bad("empty file: not an fsbench trace".into()))?;
        let end = end.ok_or_else(|| {
            bad(format!(
                "truncated: no end line after {} entries and {} calls",
                tree.len(),
                calls.len()
            ))
        })?;
        if end.entries != tree.len() as u64 || end.calls != calls.len() as u64 {
            return Err(bad(format!(
                "the end line counts {} entries and {} calls, the file holds {} and {}",
                end.entries,
                end.calls,
                tree.len(),
                calls.len()
            )));
        }
        let t = Trace { header, tree, calls };
        t.check().map_err(bad)?;
        Ok(t)
    }

    /// The invariants of the module documentation: relative normal paths, handles opened
    /// before use.
    fn check(&self) -> Result<(), String> {
        for e in &self.tree {
            check_path(&e.path).map_err(|w| format!("tree entry {:?}: {w}", e.path))?;
        }
        let mut opened = 0u32;
        for (i, c) in self.calls.iter().enumerate() {
            for p in [&c.path, &c.path2].into_iter().flatten() {
                check_path(p).map_err(|w| format!("call {i} ({}): path {p:?}: {w}", c.syscall))?;
            }
            if c.kind == Kind::Open && c.errno.is_none() {
                if c.handle != Some(opened) {
                    return Err(format!("call {i} opens handle {:?}, expected {opened}", c.handle));
                }
                opened += 1;
            } else if let Some(h) = c.handle.into_iter().chain(c.handle2).find(|h| *h >= opened) {
                return Err(format!("call {i} ({}) uses handle {h} before it is opened", c.syscall));
            }
        }
        Ok(())
    }

    /// Bytes the tree's files hold.
    pub fn tree_bytes(&self) -> u64 {
        self.tree
            .iter()
            .filter(|e| e.kind == EntryKind::File)
            .map(|e| e.size)
            .sum()
    }

    /// A trace from strace's text output as `fsbench record` writes it for `root` (`strace -f
    /// -ttt -T -y`, root and working directory alike, names not hashed), with an empty tree and
    /// no calibration: the recordings kept under `tests/fixtures/replay/` as the tests load them.
    pub fn from_strace_text(text: &str, root: &Path, command: &str) -> Result<Trace, crate::parsers::ParseError> {
        let calls = crate::parsers::strace::parse(text)?;
        let r = resolve::Resolver::new(root, root, false).run(&calls);
        Ok(Trace {
            header: Header {
                version: VERSION,
                tool: "strace 6.1".into(),
                command: vec![command.into()],
                root: root.display().to_string(),
                wall_s: 0.05,
                overhead_s: None,
                overhead_in_call_s: None,
                timing: None,
                hashed_names: false,
                dropped: r.dropped,
                marks: Vec::new(),
            },
            tree: Vec::new(),
            calls: r.calls,
        })
    }

    /// Calls per kind.
    pub fn counts(&self) -> BTreeMap<Kind, u64> {
        let mut m = BTreeMap::new();
        for c in &self.calls {
            *m.entry(c.kind).or_insert(0) += 1;
        }
        m
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A trace path is relative and normal: `.` or components other than `.`, `..` and empty.
fn check_path(p: &str) -> Result<(), &'static str> {
    if p == "." {
        return Ok(());
    }
    if p.starts_with('/') {
        return Err("absolute");
    }
    if p.split('/')
        .any(|c| c.is_empty() || c == "." || c == ".." || c.contains('\0'))
    {
        return Err("not normalised");
    }
    Ok(())
}

#[cfg(test)]
mod tests;
