//! Turns strace's calls ([`crate::parsers::strace`]) into trace [`Call`]s under one root.
//!
//! What it keeps per thread, in start order: the descriptor table (shared by threads made
//! with `CLONE_FILES`, copied by fork, vfork and a clone without it) mapping each descriptor to a
//! handle with its close-on-exec flag (dup, dup2, dup3, `fcntl(F_DUPFD)` add a descriptor of
//! the same handle; an exec drops the close-on-exec ones); and the working directory (learnt
//! from every `AT_FDCWD</path>` annotation, followed through chdir and fchdir), against which
//! the paths of the calls without a directory descriptor (`open`, `stat`, `rename`) resolve.
//! A path is joined to its directory and normalised lexically (symbolic links are not
//! followed), then taken relative to the root.
//!
//! Dropped, and counted by reason in [`super::Header::dropped`]: calls on paths or
//! descriptors outside the root (`outside root`), descriptors under the root the trace did
//! not see opened (`unknown descriptor`, e.g. a shell's redirection made before the trace
//! started), and calls under the root of kinds the trace does not hold (`unsupported NAME`:
//! chmod, utimensat, symlink, …). Calls that never reach files (mmap of anonymous memory,
//! wait4, fcntl other than F_DUPFD) are not counted at all.
//!
//! Each call also carries the program its process runs ([`Call::program`]: the file name of the
//! process's last successful execve, inherited by fork and clone). With a mark directory
//! ([`Resolver::mark_on`]), any call naming a path under it (found or not, a stat, an open, an
//! access) is a time mark ([`Mark`]) named by the path's first component below it; the call
//! itself is outside the root, so it is dropped as every such call is. A mark with the name of
//! the one before it is not repeated (`touch` opens and then stamps its file).
//!
//! `--hash-names` replaces each path component by 16 hex digits of its 64-bit FNV-1a hash,
//! so equal names stay equal and a tree's shape is kept; name lengths are not.

use super::{Call, Kind, Mark};
use crate::parsers::strace::{fd_arg, int_arg, unquote, Ret, Syscall};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

/// One descriptor: its handle and whether exec closes it.
#[derive(Clone, Copy, Debug)]
struct Fd {
    handle: u32,
    cloexec: bool,
}

type Table = Rc<RefCell<HashMap<i32, Fd>>>;
type Cwd = Rc<RefCell<PathBuf>>;

/// The resolver's state; see the module documentation.
pub struct Resolver {
    root: PathBuf,
    hash: bool,
    tables: HashMap<u32, Table>,
    cwds: HashMap<u32, Cwd>,
    /// Descriptors per handle, across every table.
    refs: Vec<u32>,
    /// Children of clone/fork calls: child → shares (files, fs).
    children: HashMap<u32, (bool, bool)>,
    /// System calls per thread since its last call in the trace (this one included).
    since: HashMap<u32, u32>,
    /// Where a new, unknown thread starts.
    start_cwd: PathBuf,
    /// The program each thread runs (see [`Call::program`]).
    programs: HashMap<u32, String>,
    /// The mark directory, absolute and normalised.
    marks_dir: Option<PathBuf>,
    /// Time marks made, in time order.
    pub marks: Vec<Mark>,
    t0: f64,
    /// The first start on the untraced run's clock (`Syscall::untraced_run`), seconds.
    t0u: f64,
    /// Calls made.
    pub calls: Vec<Call>,
    /// Calls dropped, by reason.
    pub dropped: BTreeMap<String, u64>,
}

/// The 64-bit FNV-1a hash of `s` as 16 hex digits.
pub fn hash_name(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// `p` with every component but `.`, `..` and the empty one (a leading or doubled `/`) hashed
/// ([`hash_name`]): a symbolic link's target under `--hash-names`, which still resolves to the
/// hashed names of the tree.
pub fn hash_components(p: &str) -> String {
    p.split('/')
        .map(|c| {
            if c.is_empty() || c == "." || c == ".." {
                c.to_string()
            } else {
                hash_name(c)
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// `p` normalised lexically: `.` dropped, `..` removing the component before (never above `/`).
pub fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

impl Resolver {
    /// A resolver for a program started in `cwd`, keeping what is under `root` (both absolute),
    /// hashing names if `hash`.
    pub fn new(root: &Path, cwd: &Path, hash: bool) -> Resolver {
        Resolver {
            root: normalise(root),
            hash,
            tables: HashMap::new(),
            cwds: HashMap::new(),
            refs: Vec::new(),
            children: HashMap::new(),
            since: HashMap::new(),
            start_cwd: normalise(cwd),
            programs: HashMap::new(),
            marks_dir: None,
            marks: Vec::new(),
            t0: f64::NAN,
            t0u: f64::NAN,
            calls: Vec::new(),
            dropped: BTreeMap::new(),
        }
    }

    /// Makes every call on a path under `dir` (absolute) a time mark; see the module
    /// documentation.
    pub fn mark_on(mut self, dir: &Path) -> Resolver {
        self.marks_dir = Some(normalise(dir));
        self
    }

    /// Resolves every call of `syscalls` (in start order, as [`crate::parsers::strace::parse`]
    /// returns them).
    pub fn run(mut self, syscalls: &[Syscall]) -> Resolver {
        for s in syscalls {
            if let ("clone" | "clone3" | "fork" | "vfork", Ret::Value { value, .. }) = (s.name.as_str(), &s.ret) {
                let flags = s.args.iter().find(|a| a.contains("CLONE_")).map_or("", String::as_str);
                let shares = (flags.contains("CLONE_FILES"), flags.contains("CLONE_FS"));
                self.children.insert(*value as u32, shares);
            }
        }
        self.t0 = syscalls.iter().map(|s| s.start).fold(f64::INFINITY, f64::min);
        self.t0u = syscalls
            .iter()
            .filter_map(|s| s.untraced_run.map(|u| u.0))
            .fold(f64::INFINITY, f64::min);
        // A call that makes a descriptor takes effect when it returns, every other at its
        // start: a close on one thread may free descriptor 3 while an open on another, started
        // earlier, is still in the kernel and then returns 3.
        let at = |s: &Syscall| match s.name.as_str() {
            "open" | "openat" | "openat2" | "creat" | "dup" | "dup2" | "dup3" | "fcntl" => s.start + s.duration,
            _ => s.start,
        };
        let mut order: Vec<&Syscall> = syscalls.iter().collect();
        order.sort_by(|a, b| at(a).total_cmp(&at(b)));
        for s in order {
            self.one(s);
        }
        self.calls.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
        self.marks.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
        self.marks.dedup_by(|b, a| a.name == b.name);
        self.renumber();
        self
    }

    /// Numbers the handles again in the order their opens appear, which [`super::Trace::read`]
    /// checks.
    fn renumber(&mut self) {
        let mut map: HashMap<u32, u32> = HashMap::new();
        for c in &self.calls {
            if let (Kind::Open, Some(h)) = (c.kind, c.handle) {
                let n = map.len() as u32;
                map.entry(h).or_insert(n);
            }
        }
        for c in &mut self.calls {
            c.handle = c.handle.and_then(|h| map.get(&h).copied());
            c.handle2 = c.handle2.and_then(|h| map.get(&h).copied());
        }
    }

    fn drop_call(&mut self, why: &str) {
        *self.dropped.entry(why.to_string()).or_insert(0) += 1;
    }

    fn table(&mut self, tid: u32) -> Table {
        self.tables.entry(tid).or_default().clone()
    }

    fn cwd(&mut self, tid: u32) -> PathBuf {
        let start = self.start_cwd.clone();
        self.cwds
            .entry(tid)
            .or_insert_with(|| Rc::new(RefCell::new(start)))
            .borrow()
            .clone()
    }

    /// A clone/fork at its start: the child's table and directory from the parent's.
    fn fork(&mut self, s: &Syscall) {
        let Ret::Value { value, .. } = s.ret else { return };
        let child = value as u32;
        let (files, fs) = self.children.get(&child).copied().unwrap_or((false, false));
        let parent = self.table(s.tid);
        let table = if files {
            parent
        } else {
            let copy = parent.borrow().clone();
            for fd in copy.values() {
                self.refs[fd.handle as usize] += 1;
            }
            Rc::new(RefCell::new(copy))
        };
        self.tables.insert(child, table);
        if let Some(p) = self.programs.get(&s.tid).cloned() {
            self.programs.insert(child, p);
        }
        self.cwd(s.tid);
        let pcwd = self.cwds[&s.tid].clone();
        let cwd = if fs {
            pcwd
        } else {
            Rc::new(RefCell::new(pcwd.borrow().clone()))
        };
        self.cwds.insert(child, cwd);
    }

    /// The path `p` (absolute, or relative to `dir`) relative to the root, hashed if asked;
    /// `None` outside the root.
    fn rel(&self, dir: &Path, p: &str) -> Option<String> {
        let abs = normalise(&dir.join(p));
        let rel = abs.strip_prefix(&self.root).ok()?;
        let parts: Vec<String> = rel
            .components()
            .map(|c| {
                let s = c.as_os_str().to_string_lossy();
                if self.hash {
                    hash_name(&s)
                } else {
                    s.into_owned()
                }
            })
            .collect();
        Some(if parts.is_empty() { ".".into() } else { parts.join("/") })
    }

    /// A symbolic link's target as recorded, its components hashed if names are.
    fn target(&self, t: &str) -> String {
        if !self.hash {
            return t.to_string();
        }
        t.split('/')
            .map(|c| {
                if c.is_empty() || c == "." || c == ".." {
                    c.to_string()
                } else {
                    hash_name(c)
                }
            })
            .collect::<Vec<_>>()
            .join("/")
    }

    /// The directory a path argument is relative to: the `dirfd` argument's `-y` path, or the
    /// thread's working directory.
    fn dir_of(&mut self, tid: u32, dirfd: Option<&str>) -> PathBuf {
        match dirfd.and_then(fd_arg) {
            Some((fd, Some(p))) if p.starts_with('/') => {
                let p = PathBuf::from(p);
                if fd == libc::AT_FDCWD {
                    self.cwd(tid);
                    *self.cwds[&tid].borrow_mut() = p.clone();
                }
                p
            }
            _ => self.cwd(tid),
        }
    }

    /// The handle of descriptor argument `arg` of thread `tid`, or the reason it is dropped.
    fn handle(&mut self, tid: u32, arg: Option<&String>) -> Result<u32, &'static str> {
        let (fd, path) = arg.and_then(|a| fd_arg(a)).ok_or("unreadable descriptor")?;
        if let Some(f) = self.table(tid).borrow().get(&fd) {
            return Ok(f.handle);
        }
        let under = path
            .filter(|p| p.starts_with('/'))
            .and_then(|p| self.rel(Path::new("/"), &p))
            .is_some();
        Err(if under { "unknown descriptor" } else { "outside root" })
    }

    /// Removes descriptor `fd` of `tid`'s table; `Some((handle, last))` if it was ours.
    fn forget(&mut self, tid: u32, fd: i32) -> Option<(u32, bool)> {
        let f = self.table(tid).borrow_mut().remove(&fd)?;
        let r = &mut self.refs[f.handle as usize];
        *r = r.saturating_sub(1);
        Some((f.handle, *r == 0))
    }

    /// Descriptor `fd` of `s`'s thread closed as a side effect of `s` (dup2 over it, exec of a
    /// close-on-exec one, the process's exit): a close call, with the time of `s`, when it was
    /// the handle's last descriptor.
    fn implicit_close(&mut self, s: &Syscall, fd: i32) {
        if let Some((h, true)) = self.forget(s.tid, fd) {
            let mut c = self.call(s, Kind::Close);
            (c.handle, c.last, c.result, c.errno, c.dur_s) = (Some(h), true, 0, None, 0.0);
            self.emit(c);
        }
    }

    fn dup(&mut self, s: &Syscall, cloexec: bool) {
        let (Some((old, _)), Ret::Value { value, .. }) = (s.args.first().and_then(|a| fd_arg(a)), &s.ret) else {
            return;
        };
        let new = *value as i32;
        if new == old {
            return;
        }
        self.implicit_close(s, new);
        let table = self.table(s.tid);
        let got = table.borrow().get(&old).copied();
        if let Some(f) = got {
            self.refs[f.handle as usize] += 1;
            table.borrow_mut().insert(
                new,
                Fd {
                    handle: f.handle,
                    cloexec,
                },
            );
        }
    }

    /// A new call of `s` with the fields every call has.
    fn call(&self, s: &Syscall, kind: Kind) -> Call {
        let (result, errno) = match &s.ret {
            Ret::Value { value, .. } => (*value, None),
            Ret::Error(e) => (-1, Some(e.clone())),
            Ret::Unknown => (-1, Some("unknown".into())),
        };
        Call {
            tid: s.tid,
            program: self.programs.get(&s.tid).cloned(),
            kind,
            syscall: s.name.clone(),
            path: None,
            path2: None,
            handle: None,
            handle2: None,
            flags: String::new(),
            mode: None,
            offset: None,
            len: None,
            target: None,
            untraced: 0,
            last: false,
            result,
            errno,
            start_s: ((s.start - self.t0).max(0.0) * 1e6).round() / 1e6,
            dur_s: (s.duration * 1e9).round() / 1e9,
            tracer_s: s.tracer.map(|t| (t * 1e6).round() / 1e6),
            untraced_run_s: s
                .untraced_run
                .map(|(a, b)| [a, b].map(|t| ((t - self.t0u).max(0.0) * 1e9).round() / 1e9)),
        }
    }

    /// Adds `c` to the trace with the count of its thread's system calls since its previous
    /// call in the trace.
    fn emit(&mut self, mut c: Call) {
        c.untraced = self.since.insert(c.tid, 0).unwrap_or(1).saturating_sub(1);
        self.calls.push(c);
    }

    fn one(&mut self, s: &Syscall) {
        *self.since.entry(s.tid).or_insert(0) += 1;
        if self.marks_dir.is_some() {
            self.mark(s);
        }
        let a = &s.args;
        let arg = |i: usize| a.get(i).map(String::as_str);
        let num = |i: usize| arg(i).and_then(int_arg);
        match s.name.as_str() {
            "clone" | "clone3" | "fork" | "vfork" => self.fork(s),
            "execve" | "execveat" if matches!(s.ret, Ret::Value { value: 0, .. }) => {
                let table = self.table(s.tid);
                let gone: Vec<i32> = table
                    .borrow()
                    .iter()
                    .filter(|(_, f)| f.cloexec)
                    .map(|(fd, _)| *fd)
                    .collect();
                for fd in gone {
                    self.implicit_close(s, fd);
                }
                let program = arg(if s.name == "execve" { 0 } else { 1 }).and_then(unquote);
                if let Some(name) = program.as_deref().and_then(|p| Path::new(p).file_name()) {
                    self.programs.insert(s.tid, name.to_string_lossy().into_owned());
                }
            }
            "exit_group" => {
                let table = self.table(s.tid);
                let mut all: Vec<i32> = table.borrow().keys().copied().collect();
                all.sort_unstable();
                for fd in all {
                    self.implicit_close(s, fd);
                }
            }
            "dup" | "dup2" => self.dup(s, false),
            "dup3" => self.dup(s, arg(2).is_some_and(|f| f.contains("O_CLOEXEC"))),
            "fcntl" if arg(1).is_some_and(|c| c.starts_with("F_DUPFD")) => {
                self.dup(s, arg(1) == Some("F_DUPFD_CLOEXEC"))
            }
            "fcntl" if arg(1) == Some("F_SETFD") => {
                if let Some((fd, _)) = arg(0).and_then(fd_arg) {
                    if let Some(f) = self.table(s.tid).borrow_mut().get_mut(&fd) {
                        f.cloexec = arg(2).is_some_and(|v| v.contains("FD_CLOEXEC"));
                    }
                }
            }
            "chdir" => {
                let dir = self.cwd(s.tid);
                if let (Some(p), Ret::Value { value: 0, .. }) = (arg(0).and_then(unquote), &s.ret) {
                    *self.cwds[&s.tid].borrow_mut() = normalise(&dir.join(p));
                }
            }
            "fchdir" => {
                if let (Some((_, Some(p))), Ret::Value { value: 0, .. }) = (arg(0).and_then(fd_arg), &s.ret) {
                    self.cwd(s.tid);
                    *self.cwds[&s.tid].borrow_mut() = PathBuf::from(p);
                }
            }
            "open" | "creat" => self.open(
                s,
                None,
                arg(0),
                if s.name == "creat" { None } else { arg(1) },
                num(if s.name == "creat" { 1 } else { 2 }),
            ),
            "openat" => self.open(s, arg(0), arg(1), arg(2), num(3)),
            "openat2" => {
                let (flags, mode) = open_how(arg(2).unwrap_or(""));
                self.open(s, arg(0), arg(1), Some(&flags), mode)
            }
            "close" => {
                let Some((fd, _)) = arg(0).and_then(fd_arg) else { return };
                match self.forget(s.tid, fd) {
                    Some((h, last)) => {
                        let mut c = self.call(s, Kind::Close);
                        (c.handle, c.last) = (Some(h), last);
                        self.emit(c);
                    }
                    None => self.not_ours(s.tid, arg(0)),
                }
            }
            _ => self.data_or_name(s),
        }
    }

    /// A time mark when `s` names a path under the mark directory (see the module
    /// documentation).
    fn mark(&mut self, s: &Syscall) {
        let (dir_at, path_at) = match s.args.first() {
            Some(a) if a.starts_with('"') => (None, 0),
            Some(a) if fd_arg(a).is_some() && s.args.get(1).is_some_and(|b| b.starts_with('"')) => (Some(0), 1),
            _ => return,
        };
        let Some(p) = s.args.get(path_at).and_then(|a| unquote(a)) else {
            return;
        };
        let dir = self.dir_of(s.tid, dir_at.and_then(|i| s.args.get(i)).map(String::as_str));
        let abs = normalise(&dir.join(p));
        let Some(marks) = &self.marks_dir else { return };
        let Some(Component::Normal(first)) = abs.strip_prefix(marks).ok().and_then(|r| r.components().next()) else {
            return;
        };
        let name: String = first
            .to_string_lossy()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let at_s = ((s.start - self.t0).max(0.0) * 1e6).round() / 1e6;
        self.marks.push(Mark { name, at_s });
    }

    /// Counts a call on a descriptor that is not a handle of the trace.
    fn not_ours(&mut self, tid: u32, arg: Option<&str>) {
        let a = arg.map(str::to_string);
        if let Err(why) = self.handle(tid, a.as_ref()) {
            self.drop_call(why);
        }
    }

    fn open(&mut self, s: &Syscall, dirfd: Option<&str>, path: Option<&str>, flags: Option<&str>, mode: Option<i64>) {
        let Some(p) = path.and_then(unquote) else { return };
        let dir = self.dir_of(s.tid, dirfd);
        let Some(rel) = self.rel(&dir, &p) else {
            return self.drop_call("outside root");
        };
        let flags = match s.name.as_str() {
            "creat" => "O_WRONLY|O_CREAT|O_TRUNC".to_string(),
            _ => flags.unwrap_or("O_RDONLY").to_string(),
        };
        let mut c = self.call(s, Kind::Open);
        c.path = Some(rel);
        c.mode = mode
            .filter(|_| flags.contains("O_CREAT") || flags.contains("O_TMPFILE"))
            .map(|m| m as u32);
        c.flags = flags;
        if let Ret::Value { value, .. } = s.ret {
            let handle = self.refs.len() as u32;
            self.refs.push(1);
            let cloexec = c.flags.contains("O_CLOEXEC");
            self.implicit_close(s, value as i32);
            self.table(s.tid)
                .borrow_mut()
                .insert(value as i32, Fd { handle, cloexec });
            (c.handle, c.result) = (Some(handle), 0);
        }
        self.emit(c);
    }
}

/// openat2's `struct open_how` as strace prints it (`{flags=O_WRONLY|O_CREAT, mode=0644,
/// resolve=RESOLVE_BENEATH}`): its flags (`O_RDONLY` when absent) and mode (absent without
/// `O_CREAT` or `O_TMPFILE`).
pub fn open_how(arg: &str) -> (String, Option<i64>) {
    let inner = arg.trim().trim_start_matches('{').trim_end_matches('}');
    let mut flags = "O_RDONLY".to_string();
    let mut mode = None;
    for field in inner.split(", ") {
        if let Some(f) = field.strip_prefix("flags=") {
            flags = f.to_string();
        } else if let Some(m) = field.strip_prefix("mode=") {
            mode = int_arg(m);
        }
    }
    (flags, mode)
}

mod calls;

#[cfg(test)]
mod tests;
