//! A trace compiled for replay, before anything is timed: every path as a `CString`, every
//! call as an [`Op`] of its thread with the flags, lengths and expected outcome decoded, and
//! the cross-thread dependencies (see [`super`]) as a flat list each op indexes.
//!
//! Dependencies (resource-oriented ordering, after ARTC, SOSP '13): the resources of a call
//! are the paths it names, the parent directory of a path it creates, removes or renames, the
//! handles it uses, and for a read, write, truncation, allocation, seek or listing through a
//! handle the path that handle was opened by (the file's data). Calls on one resource keep their recorded order: a call waits for the
//! latest call of every other thread that touched one of its resources and came before it.
//! The order is that of completion (start + duration), except where a lookup's recorded
//! result contradicts it: a lookup that found its path comes after the nearest other thread's
//! change that made it, one that got ENOENT before the nearest change it did not see, overlap
//! or not, within [`STAMP_SKEW_S`] (strace stamps a call when it handles the stop, so a thread stopped while it served
//! another can carry a later time than a change its call ran before: a stat stamped 22 µs
//! after a rename's end that got ENOENT, `threads-late-stamp.trace`; a stat that started
//! before a rename and found the renamed file, the threads fixture). A lookup
//! (open without `O_CREAT`, stat, access) also waits for the latest change of its path's
//! parent, without becoming one. Within a thread, completion order is program order; every wait
//! points to an earlier completion, so the order is acyclic and no replay can deadlock.

use crate::trace::tree::stays_under;
use crate::trace::{Call, Header, Kind, Trace};
use std::collections::HashMap;
use std::ffi::CString;

/// "None" in a `u32` index field.
pub const NONE: u32 = u32::MAX;
/// An error name this build does not know: any error matches it.
pub const ANY_ERROR: i32 = -2;

/// What the recorded call returned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Expect {
    /// Success with this value (bytes, a position, 0).
    Ok(i64),
    /// This errno ([`ANY_ERROR`] for a name this build does not know).
    Err(i32),
    /// The trace does not say (a call still running when the trace ended).
    Unknown,
}

/// One call, ready to issue.
#[derive(Clone, Debug)]
pub struct Op {
    /// What it is.
    pub kind: Kind,
    /// Index into [`Plan::paths`], or [`NONE`].
    pub path: u32,
    /// A rename's target, or [`NONE`].
    pub path2: u32,
    /// Handle used or opened, or [`NONE`].
    pub handle: u32,
    /// copy_file_range's destination handle, or [`NONE`].
    pub handle2: u32,
    /// open flags; lseek whence; fallocate mode; access mode; `AT_SYMLINK_NOFOLLOW` for stat.
    pub flags: i32,
    /// Mode of a create or mkdir.
    pub mode: u32,
    /// Offset, bytes.
    pub offset: i64,
    /// Length, bytes (capped at the buffer's size).
    pub len: u64,
    /// For a close: whether it closes the handle (its last descriptor).
    pub last: bool,
    /// The access(2) form of a stat-family call.
    pub access: bool,
    /// The recorded outcome.
    pub expect: Expect,
    /// The think time before this call, ns: the recorded time between the end of the thread's
    /// previous call or of the latest call it depends on, whichever ended later (or the
    /// trace's start), and this call's start, less the tracer's cost in it ([`think_gap`]); at
    /// least 0. The replay sleeps it from the same point: its previous call's end, or the
    /// moment its dependencies were met when it had to wait for them.
    pub gap_ns: u64,
    /// This op's dependencies: `Plan::deps[deps.0 .. deps.0 + deps.1]`.
    pub deps: (u32, u32),
    /// Index of the recorded call in the trace.
    pub call: u32,
}

impl Op {
    /// Whether the replay issues a system call for this op: not for mmap and msync, nor for a
    /// close of a handle's non-last descriptor.
    pub fn issues(&self) -> bool {
        self.kind.replayed() && (self.kind != Kind::Close || self.last)
    }
}

/// The compiled trace.
pub struct Plan {
    /// Every path, relative to the replay's root (`.` for the root).
    pub paths: Vec<CString>,
    /// Each thread's ops in program order.
    pub threads: Vec<Vec<Op>>,
    /// `(thread, op index)`: wait until that thread has finished that op.
    pub deps: Vec<(u32, u32)>,
    /// Handles in the trace.
    pub handles: usize,
    /// Largest read or write, bytes (the size of each thread's buffer).
    pub buffer: usize,
}

/// Largest single read or write replayed, bytes; longer ones are cut (and diverge).
pub const MAX_IO: u64 = 64 << 20;

/// The errno of a name (`ENOENT`), or [`ANY_ERROR`].
pub fn errno_of(name: &str) -> i32 {
    const TABLE: &[(&str, i32)] = &[
        ("EPERM", libc::EPERM),
        ("ENOENT", libc::ENOENT),
        ("EINTR", libc::EINTR),
        ("EIO", libc::EIO),
        ("ENXIO", libc::ENXIO),
        ("EBADF", libc::EBADF),
        ("EAGAIN", libc::EAGAIN),
        ("EACCES", libc::EACCES),
        ("EFAULT", libc::EFAULT),
        ("EBUSY", libc::EBUSY),
        ("EEXIST", libc::EEXIST),
        ("EXDEV", libc::EXDEV),
        ("ENOTDIR", libc::ENOTDIR),
        ("EISDIR", libc::EISDIR),
        ("EINVAL", libc::EINVAL),
        ("ENFILE", libc::ENFILE),
        ("EMFILE", libc::EMFILE),
        ("ENOTTY", libc::ENOTTY),
        ("ETXTBSY", libc::ETXTBSY),
        ("EFBIG", libc::EFBIG),
        ("ENOSPC", libc::ENOSPC),
        ("ESPIPE", libc::ESPIPE),
        ("EROFS", libc::EROFS),
        ("ERANGE", libc::ERANGE),
        ("ENAMETOOLONG", libc::ENAMETOOLONG),
        ("ENOSYS", libc::ENOSYS),
        ("ENOTEMPTY", libc::ENOTEMPTY),
        ("ELOOP", libc::ELOOP),
        ("ENODATA", libc::ENODATA),
        ("EOPNOTSUPP", libc::EOPNOTSUPP),
        ("EDQUOT", libc::EDQUOT),
        ("ESTALE", libc::ESTALE),
    ];
    TABLE.iter().find(|(n, _)| *n == name).map_or(ANY_ERROR, |(_, e)| *e)
}

/// `O_…|O_…` as open flags; unknown names are left out.
pub fn open_flags(s: &str) -> i32 {
    const TABLE: &[(&str, i32)] = &[
        ("O_RDONLY", libc::O_RDONLY),
        ("O_WRONLY", libc::O_WRONLY),
        ("O_RDWR", libc::O_RDWR),
        ("O_CREAT", libc::O_CREAT),
        ("O_EXCL", libc::O_EXCL),
        ("O_TRUNC", libc::O_TRUNC),
        ("O_APPEND", libc::O_APPEND),
        ("O_DIRECTORY", libc::O_DIRECTORY),
        ("O_NOFOLLOW", libc::O_NOFOLLOW),
        ("O_SYNC", libc::O_SYNC),
        ("O_DSYNC", libc::O_DSYNC),
        ("O_DIRECT", libc::O_DIRECT),
        ("O_PATH", libc::O_PATH),
        ("O_TMPFILE", libc::O_TMPFILE),
        ("O_NOATIME", libc::O_NOATIME),
        ("O_NONBLOCK", libc::O_NONBLOCK),
    ];
    s.split('|')
        .filter_map(|f| TABLE.iter().find(|(n, _)| *n == f.trim()))
        .fold(libc::O_CLOEXEC, |acc, (_, v)| acc | v)
}

/// `R_OK|W_OK` as access(2)'s mode.
fn access_mode(s: &str) -> i32 {
    s.split('|').fold(libc::F_OK, |acc, f| {
        acc | match f.trim() {
            "R_OK" => libc::R_OK,
            "W_OK" => libc::W_OK,
            "X_OK" => libc::X_OK,
            _ => 0,
        }
    })
}

/// fallocate's mode as strace prints it (`0`, `FALLOC_FL_KEEP_SIZE|FALLOC_FL_PUNCH_HOLE`).
fn fallocate_mode(s: &str) -> i32 {
    if let Some(v) = crate::parsers::strace::int_arg(s) {
        return v as i32;
    }
    s.split('|').fold(0, |acc, f| {
        acc | match f.trim() {
            "FALLOC_FL_KEEP_SIZE" => libc::FALLOC_FL_KEEP_SIZE,
            "FALLOC_FL_PUNCH_HOLE" => libc::FALLOC_FL_PUNCH_HOLE,
            "FALLOC_FL_ZERO_RANGE" => libc::FALLOC_FL_ZERO_RANGE,
            "FALLOC_FL_COLLAPSE_RANGE" => libc::FALLOC_FL_COLLAPSE_RANGE,
            "FALLOC_FL_INSERT_RANGE" => libc::FALLOC_FL_INSERT_RANGE,
            _ => 0,
        }
    })
}

/// The parent of a relative path (`.` for a top-level name).
fn parent(p: &str) -> &str {
    p.rsplit_once('/').map_or(".", |(d, _)| d)
}

/// A resource of the ordering: a path or a handle.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Res {
    Path(u32),
    Handle(u32),
}

/// The target a replayed symbolic link gets in place of one that would leave the root.
pub const OUTSIDE: &str = "fsbench-replay-outside-root";

/// How far apart, seconds, a lookup and a change of its path may be stamped on the wrong sides
/// of each other and still be ordered by the lookup's result ([`linearize`]): the tracer's
/// stamping skew, 13–172 µs in the recordings made here, with room for a loaded machine.
/// Farther apart, the trace is taken as written and the replay's fidelity check counts what
/// diverges (a trace edited to drop a dependency, or a change the plan does not model).
pub const STAMP_SKEW_S: f64 = 0.001;

/// The order key of each call (see the module documentation): its completion time, moved
/// where a lookup's recorded result contradicts the state of its path that the completion
/// order of another thread's changes implies, then never before its thread's previous call.
pub(super) fn linearize(calls: &[Call]) -> Vec<f64> {
    let end = |c: &Call| c.start_s + c.dur_s;
    let mut key: Vec<f64> = calls.iter().map(end).collect();
    // Successful changes per path, by completion: (end, call, whether it makes the path exist).
    let mut changes: HashMap<&str, Vec<(f64, usize, bool)>> = HashMap::new();
    for (i, c) in calls.iter().enumerate().filter(|(_, c)| c.errno.is_none()) {
        let (p, p2) = (c.path.as_deref(), c.path2.as_deref());
        let made: &[(Option<&str>, bool)] = match c.kind {
            Kind::Open if c.flags.contains("O_CREAT") => &[(p, true)],
            Kind::Mkdir | Kind::Symlink => &[(p, true)],
            Kind::Link => &[(p2, true)],
            Kind::Rename => &[(p, false), (p2, true)],
            Kind::Unlink | Kind::Rmdir => &[(p, false)],
            _ => &[],
        };
        for (path, makes) in made {
            if let Some(path) = path {
                changes.entry(path).or_default().push((end(c), i, *makes));
            }
        }
    }
    for list in changes.values_mut() {
        list.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    }
    // (first, second): calls of two threads whose order the recorded result decides.
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for (i, l) in calls.iter().enumerate() {
        let lookup = l.kind == Kind::Stat || (l.kind == Kind::Open && !l.flags.contains("O_CREAT"));
        let (found, absent) = (l.errno.is_none(), l.errno.as_deref() == Some("ENOENT"));
        let Some(list) = l
            .path
            .as_deref()
            .filter(|_| lookup && (found || absent))
            .and_then(|p| changes.get(p))
        else {
            continue;
        };
        // The path's state at the lookup's completion: after the last change before it, or
        // (before the first change) the opposite of what that change did.
        let n = list.partition_point(|&(e, ci, _)| e < end(l) || (e == end(l) && ci < i));
        let exists = |k: usize| if k == 0 { !list[0].2 } else { list[k - 1].2 };
        if exists(n) == found {
            continue;
        }
        // The recorded result says the lookup crossed the nearest change of another thread
        // (the tracer stamps a call when it handles the stop, so a thread it made wait can
        // carry a later time than the change it did not yet see): before the last change,
        // or after the next one that left the path as found.
        let before = (n > 0 && exists(n - 1) == found).then(|| list[n - 1]);
        let after = list[n..].iter().find(|c| c.2 == found).copied();
        let dist = |c: &(f64, usize, bool)| (c.0 - end(l)).abs();
        let near = |c: &Option<(f64, usize, bool)>| c.filter(|c| dist(c) <= STAMP_SKEW_S);
        let (first, second) = match (near(&before), near(&after)) {
            (Some(b), Some(a)) if dist(&a) < dist(&b) => (a.1, i),
            (Some(b), _) => (i, b.1),
            (None, Some(a)) => (a.1, i),
            (None, None) => continue,
        };
        if calls[first].tid != calls[second].tid {
            pairs.push((first, second));
        }
    }
    // Move the second of each pair after the first, and every thread's calls after its
    // previous one, until both hold: only ever later, so a thread's own order (which can
    // carry the late stamp: the producer's close and rename both stamped after the stat
    // that found the renamed file) cannot undo it. Pairs that contradict each other (none
    // seen) stop after 16 rounds; the fidelity check then counts what diverges.
    for _ in 0..16 {
        let mut moved = false;
        for &(first, second) in &pairs {
            if key[second] <= key[first] {
                key[second] = key[first] + 1e-9;
                moved = true;
            }
        }
        let mut prev: HashMap<u32, f64> = HashMap::new();
        for (i, c) in calls.iter().enumerate() {
            let p = prev.entry(c.tid).or_insert(f64::MIN);
            key[i] = key[i].max(*p);
            *p = key[i];
        }
        if !moved {
            break;
        }
    }
    key
}

/// Builds the [`Plan`] of `trace`.
pub fn compile(trace: &Trace) -> Plan {
    let mut paths: Vec<CString> = Vec::new();
    let mut index: HashMap<String, u32> = HashMap::new();
    let mut intern = |p: &str| -> u32 {
        if let Some(i) = index.get(p) {
            return *i;
        }
        let i = paths.len() as u32;
        paths.push(CString::new(p.replace('\0', "")).unwrap_or_default());
        index.insert(p.to_string(), i);
        i
    };
    let mut tids: HashMap<u32, u32> = HashMap::new();
    let mut threads: Vec<Vec<Op>> = Vec::new();
    let mut ends: Vec<Option<f64>> = Vec::new();
    // Per thread: the recorded time the tracer added before its latest call's end, s; what it
    // started with (taken from the threads before it); every thread's shift at its latest call.
    let mut shifts: Vec<f64> = Vec::new();
    // Per thread: its latest call's end on the untraced clock (its end less the measured tracer
    // time before it, `Call::tracer_s`), s.
    let mut untraced_ends: Vec<Option<f64>> = Vec::new();
    let mut born: Vec<f64> = Vec::new();
    let mut seen: Vec<Vec<f64>> = Vec::new();
    let mut deps: Vec<(u32, u32)> = Vec::new();
    let mut last: HashMap<Res, (u32, u32)> = HashMap::new();
    // The path each handle was opened by.
    let mut opened: HashMap<u32, u32> = HashMap::new();
    let mut handles = 0usize;
    let mut buffer = 0u64;
    let key = linearize(&trace.calls);
    let mut order: Vec<usize> = (0..trace.calls.len()).collect();
    order.sort_by(|&a, &b| key[a].total_cmp(&key[b]).then(a.cmp(&b)));
    for ci in order {
        let c = &trace.calls[ci];
        let t = *tids.entry(c.tid).or_insert_with(|| {
            threads.push(Vec::new());
            ends.push(None);
            shifts.push(0.0);
            untraced_ends.push(None);
            born.push(shifts.iter().copied().fold(0.0, f64::max));
            seen.push(Vec::new());
            (threads.len() - 1) as u32
        });
        let seq = threads[t as usize].len() as u32;
        let path = c.path.as_deref().map_or(NONE, &mut intern);
        let path2 = c.path2.as_deref().map_or(NONE, &mut intern);
        let (mut touch, look) = resources(c, path, path2, &mut intern);
        touch.extend(file_data(c, &mut opened, path));
        let start = deps.len() as u32;
        let mut wait: HashMap<u32, u32> = HashMap::new();
        for r in touch.iter().chain(&look) {
            if let Some(&(ot, os)) = last.get(r) {
                if ot != t {
                    let w = wait.entry(ot).or_insert(os);
                    *w = (*w).max(os);
                }
            }
        }
        let mut w: Vec<(u32, u32)> = wait.into_iter().collect();
        w.sort_unstable();
        deps.extend(&w);
        for r in touch {
            last.insert(r, (t, seq));
        }
        let mut op = op_of(c);
        op.call = ci as u32;
        (op.path, op.path2) = (path, path2);
        if c.kind == Kind::Symlink {
            op.path2 = intern(symlink_target(c));
        }
        op.deps = (start, deps.len() as u32 - start);
        let tu = t as usize;
        let along = (0..shifts.len())
            .filter(|&x| x != tu)
            .map(|x| match ends[tu] {
                None => shifts[x],
                Some(_) => shifts[x] - seen[tu].get(x).copied().unwrap_or(born[x]),
            })
            .fold(0.0, f64::max);
        // A call that waited for another thread's call is timed from the later of the two ends.
        let waited_for: Vec<&Call> = w
            .iter()
            .map(|&(ot, os)| &trace.calls[threads[ot as usize][os as usize].call as usize])
            .collect();
        let (gap, shift) = match untraced_start(c) {
            Some(start) => (
                measured_gap(start, latest_end(untraced_ends[tu], &waited_for, true)),
                shifts[tu],
            ),
            None => think_gap(
                c,
                latest_end(ends[tu], &waited_for, false),
                shifts[tu],
                along,
                &trace.header,
            ),
        };
        untraced_ends[tu] = untraced_end(c);
        op.gap_ns = (gap * 1e9) as u64;
        (ends[tu], shifts[tu]) = (Some(c.start_s + c.dur_s), shift);
        seen[tu].clone_from(&shifts);
        if c.kind == Kind::Open && c.errno.is_none() {
            handles = handles.max(op.handle as usize + 1);
        }
        if matches!(
            c.kind,
            Kind::Read | Kind::Pread | Kind::Write | Kind::Pwrite | Kind::Getdents
        ) {
            buffer = buffer.max(op.len);
        }
        threads[t as usize].push(op);
    }
    Plan {
        paths,
        threads,
        deps,
        handles,
        buffer: buffer.max(4096) as usize,
    }
}

/// The think time before `c` and its thread's new shift, seconds.
///
/// Each system call strace prints costs the tracer `overhead_s` ([`Header`]); of that,
/// `overhead_in_call_s` lands inside the call's recorded duration, the rest in the gap before
/// it. Between the end of the thread's previous call in the trace (`prev_end`) and `c`'s start
/// lie `c.untraced` printed calls the replay does not issue (whole: gap and duration) and
/// `c`'s own gap: the thread's own tracer cost there is `(untraced + 1) × overhead_s −
/// overhead_in_call_s`. The replay re-issues `c` itself, so its recorded duration is never
/// slept.
///
/// Other threads' tracer time (`along`, from the thread's shifts): a thread that waited for
/// another (a join, a wait for a child, a poll) recorded a gap stretched by that thread's
/// tracer cost, which strace adds under `-f` to every thread it stops. For a thread's later
/// calls `along` is the most any other thread had taken out since this thread's previous call,
/// and the gap loses the larger of the two (they overlap in time: a thread that waited made no
/// calls of its own meanwhile). A thread's first call (`prev_end` `None`) is timed from the
/// trace's start, which the replay thread shares: `along` is then the most any thread had
/// taken out before it started (the thread that started it has run longest), and the gap
/// loses both. A thread that computed in parallel with another's calls loses that thread's
/// tracer time too (doc/replay.md: the limit of this). `shift` is the thread's running total of
/// tracer time taken out, the in-call part of every call included; the returned gap is at
/// least 0.
pub fn think_gap(c: &Call, prev_end: Option<f64>, shift: f64, along: f64, h: &Header) -> (f64, f64) {
    let per = h.overhead_s.unwrap_or(0.0);
    let in_call = h.overhead_in_call_s.unwrap_or(0.0).clamp(0.0, per);
    let tracer = f64::from(c.untraced + 1) * per - in_call;
    let (raw, before, cost) = match prev_end {
        Some(end) => (c.start_s - end, shift, tracer.max(along)),
        None => (c.start_s, 0.0, tracer + along),
    };
    let gap = (raw - cost).max(0.0);
    (gap, before + (raw - gap) + in_call)
}

/// What a recorded symlink points to, as the replay makes it: its target when that stays under
/// the root, else [`OUTSIDE`].
fn symlink_target(c: &Call) -> &str {
    let target = c.target.as_deref().unwrap_or("");
    let safe = c
        .path
        .as_deref()
        .is_some_and(|p| stays_under(p, std::path::Path::new(target)));
    if safe && !target.is_empty() {
        target
    } else {
        OUTSIDE
    }
}

/// The later of a thread's previous call's end (`own`) and the ends of the calls it waited for,
/// seconds; with `untraced`, each on its thread's untraced clock (its end less the tracer time
/// before it, [`Call::tracer_s`]).
fn latest_end(own: Option<f64>, waited_for: &[&Call], untraced: bool) -> Option<f64> {
    let end = |d: &&Call| match untraced {
        true => untraced_end(d).unwrap_or(d.start_s + d.dur_s),
        false => d.start_s + d.dur_s,
    };
    own.into_iter().chain(waited_for.iter().map(end)).reduce(f64::max)
}

/// `c`'s end on the untraced clock, seconds: the untraced run's ([`Call::untraced_run_s`]), else
/// its recorded end less the tracer time measured before it ([`Call::tracer_s`]); `None` when
/// neither was measured.
fn untraced_end(c: &Call) -> Option<f64> {
    c.untraced_run_s
        .map(|[_, end]| end)
        .or_else(|| c.tracer_s.map(|now| c.start_s + c.dur_s - now))
}

/// `c`'s start on the untraced clock, seconds: the untraced run's ([`Call::untraced_run_s`]),
/// else its recorded start less the tracer time measured before it ([`Call::tracer_s`]: each
/// thread's recorded time less its tracer time; `crate::trace::timing` carries a thread's tracer
/// time over to the threads it makes and wakes); `None` when neither was measured.
fn untraced_start(c: &Call) -> Option<f64> {
    c.untraced_run_s
        .map(|[start, _]| start)
        .or_else(|| c.tracer_s.map(|now| c.start_s - now))
}

/// The think time before a call that starts at `start` on the untraced clock
/// ([`untraced_start`]), seconds: from `base` (the later of the thread's previous call's end
/// and the ends of the calls it waited for, each on that clock; `None`: the trace's start), at
/// least 0. No estimate: the kernel's record says where strace stopped each thread, or the
/// untraced run where each call was.
pub fn measured_gap(start: f64, base: Option<f64>) -> f64 {
    (start - base.unwrap_or(0.0)).max(0.0)
}

/// The resources `c` changes (`touch`) and those it only looks up (`look`).
fn resources(c: &Call, path: u32, path2: u32, intern: &mut impl FnMut(&str) -> u32) -> (Vec<Res>, Vec<Res>) {
    let mut touch = Vec::new();
    let mut look = Vec::new();
    let creates = c.kind == Kind::Open && c.flags.contains("O_CREAT");
    let changes_names = creates
        || matches!(
            c.kind,
            Kind::Mkdir | Kind::Rmdir | Kind::Unlink | Kind::Rename | Kind::Symlink | Kind::Link
        );
    for (i, p) in [(path, &c.path), (path2, &c.path2)] {
        let Some(p) = p else { continue };
        touch.push(Res::Path(i));
        let dir = Res::Path(intern(parent(p)));
        if changes_names {
            touch.push(dir);
        } else {
            look.push(dir);
        }
    }
    for h in [c.handle, c.handle2].into_iter().flatten() {
        touch.push(Res::Handle(h));
    }
    (touch, look)
}

/// The file data a call on a handle reads or changes, as the path its handle was opened by
/// (kept in `opened`, filled by the opens): a read, write, truncation, allocation, seek or
/// directory listing through a handle keeps its recorded order with the other calls on that
/// path, so another process's read of a file waits for the write that filled it (`ld`
/// reading the object `as` wrote) and a listing waits for the creates before it.
fn file_data(c: &Call, opened: &mut HashMap<u32, u32>, path: u32) -> Vec<Res> {
    if c.kind == Kind::Open {
        if let (Some(h), None) = (c.handle, &c.errno) {
            opened.insert(h, path);
        }
        return Vec::new();
    }
    let data = matches!(
        c.kind,
        Kind::Read
            | Kind::Pread
            | Kind::Write
            | Kind::Pwrite
            | Kind::Ftruncate
            | Kind::Fallocate
            | Kind::Lseek
            | Kind::Getdents
            | Kind::CopyFileRange
    );
    [c.handle, c.handle2]
        .into_iter()
        .flatten()
        .filter(|_| data)
        .filter_map(|h| opened.get(&h).map(|p| Res::Path(*p)))
        .collect()
}

/// The op of `c` without its paths, dependencies and gap.
fn op_of(c: &Call) -> Op {
    let expect = match (&c.errno, c.result) {
        (Some(e), _) if e == "unknown" => Expect::Unknown,
        (Some(e), _) => Expect::Err(errno_of(e)),
        (None, v) => Expect::Ok(v),
    };
    let access = c.flags.starts_with("access:");
    let flags = match c.kind {
        Kind::Open => open_flags(&c.flags),
        Kind::Lseek => match c.flags.as_str() {
            "SEEK_CUR" => libc::SEEK_CUR,
            "SEEK_END" => libc::SEEK_END,
            "SEEK_DATA" => libc::SEEK_DATA,
            "SEEK_HOLE" => libc::SEEK_HOLE,
            _ => libc::SEEK_SET,
        },
        Kind::Stat if access => access_mode(&c.flags["access:".len()..]),
        Kind::Stat if c.flags == "nofollow" => libc::AT_SYMLINK_NOFOLLOW,
        Kind::Rename => c.flags.split('|').fold(0, |acc, f| {
            acc | match f.trim() {
                "RENAME_NOREPLACE" => libc::RENAME_NOREPLACE as i32,
                "RENAME_EXCHANGE" => libc::RENAME_EXCHANGE as i32,
                "RENAME_WHITEOUT" => libc::RENAME_WHITEOUT as i32,
                _ => 0,
            }
        }),
        Kind::Fallocate => fallocate_mode(&c.flags),
        Kind::Link if c.flags.contains("AT_SYMLINK_FOLLOW") => libc::AT_SYMLINK_FOLLOW,
        _ => 0,
    };
    Op {
        kind: c.kind,
        path: NONE,
        path2: NONE,
        handle: c.handle.unwrap_or(NONE),
        handle2: c.handle2.unwrap_or(NONE),
        flags,
        mode: c.mode.unwrap_or(0o644),
        offset: c.offset.unwrap_or(0),
        len: c.len.unwrap_or(0).min(MAX_IO),
        last: c.last,
        access,
        expect,
        gap_ns: 0,
        deps: (0, 0),
        call: 0,
    }
}
