//! The program's own times from a second run without the tracer (`fsbench record
//! --untraced-run`; issue 44, doc/replay.md, *An untraced run*).
//!
//! A ptrace tracer slows a syscall-dense program's own code between calls (cold caches after
//! every switch to the tracer and back, the stop paths), and no event of the traced run
//! separates that from the program's code (`crate::trace::timing`, its limits). So the program
//! runs once more under `perf record` of `raw_syscalls:sys_enter`/`sys_exit` alone — no stops —
//! and [`retime`] gives each of strace's calls that run's times for its think time, while the
//! traced run's order stays the trace's order (descriptors, paths, cross-thread dependencies).
//!
//! Matching:
//! - threads by their place in the process tree: the first thread of each run, then per creator
//!   the n-th thread or process its `clone`/`clone3`/`fork`/`vfork` made (the call's result in the
//!   creator); a different count refuses the run ([`UntracedError::Threads`]);
//! - per thread, strace's calls against the untraced run's calls of the numbers strace printed
//!   (its filter prints every call of those numbers and no other), by a Myers diff of (number,
//!   outcome: success, failure, none) — a program need not behave the same twice: a copy's new
//!   inode numbers and change times make `git` re-read files its index says are clean, a signal
//!   lands elsewhere, a poll loops once more. A call that matched, with the call before it on
//!   its thread matched to the one before its match, takes the untraced run's times; any other
//!   takes the traced run's think time (less its measured tracer time) after the previous
//!   call's end on the untraced clock, and the thread's clock keeps the shift from then on
//!   (a thread it makes starts from its creator's shift). [`Retimed::estimated`] counts those;
//!   more than half of all calls refuses the run.
//!
//! perf's own cost: a system call under these two tracepoints costs `per_call_s` more than
//! without (the caller measures it, here about 1.3 µs), of which each event is taken as half,
//! and each event's half before its time stamp and half after. So a call's gap after the
//! previous printed call holds one event's cost plus two per call strace does not print
//! (futex, brk) between them, and its duration one. The untraced clock of a thread is perf's
//! less that cost counted over its events so far (a new thread starts from its creator's at the
//! creating call's exit); [`Syscall::untraced_run`] holds each call's start and end on it.
//!
//! Input: `perf script --ns -F tid,time,event,trace` of `perf record -k monotonic -e
//! raw_syscalls:sys_enter -e raw_syscalls:sys_exit` (perf 6.1; lines are read by
//! `crate::trace::timing`'s reader, which refuses a record that lost events).

use super::timing::{line, Event, TimingError, CREATORS};
use crate::parsers::strace::{Ret, Syscall};
use std::collections::{HashMap, HashSet};

/// Why the untraced run cannot time a trace (the caller keeps the traced run's times and says
/// why).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum UntracedError {
    /// perf's record could not be read.
    #[error(transparent)]
    Record(#[from] TimingError),
    /// The two runs made different threads or processes.
    #[error("the untraced run made {untraced} threads or processes where the traced run made {traced} (creator's thread {tid} of the traced run)")]
    Threads {
        /// The creator's thread id in the traced run.
        tid: u32,
        /// Made in the traced run.
        traced: usize,
        /// Made in the untraced run.
        untraced: usize,
    },
    /// A thread's calls differ between the runs.
    #[error("thread {tid} of the traced run: its call {index} ({name}) {why} in the untraced run")]
    Calls {
        /// The thread id in the traced run.
        tid: u32,
        /// The call's place among the thread's printed calls, from 0.
        index: usize,
        /// The traced call's name.
        name: String,
        /// What differs.
        why: String,
    },
}

/// One system call of the untraced run, on perf's clock (seconds).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Sys {
    nr: u32,
    /// `None`: its entry came before the record did (the `execve` perf enabled the events at).
    enter: Option<f64>,
    /// `None`: it never returned (`exit_group`).
    exit: Option<f64>,
    ret: Option<i64>,
}

/// The untraced run: per thread its calls in order, and the first thread.
#[derive(Debug, Default)]
struct Run {
    threads: HashMap<u32, Vec<Sys>>,
    root: Option<u32>,
}

impl Run {
    fn parse(text: &str) -> Result<Run, TimingError> {
        let mut run = Run::default();
        for l in text.lines() {
            let Some((tid, at, ev)) = line(l)? else { continue };
            run.root.get_or_insert(tid);
            let calls = run.threads.entry(tid).or_default();
            match ev {
                Event::Enter(nr) => calls.push(Sys {
                    nr,
                    enter: Some(at),
                    exit: None,
                    ret: None,
                }),
                Event::Exit(nr, ret) => match calls.last_mut() {
                    // -1: the kernel reset the number (a call a signal interrupted).
                    Some(c) if c.exit.is_none() && (i64::from(c.nr) == nr || nr == -1) => {
                        (c.exit, c.ret) = (Some(at), Some(ret));
                    }
                    _ => calls.push(Sys {
                        nr: u32::try_from(nr).map_err(|_| TimingError::Foreign(l.to_string()))?,
                        enter: None,
                        exit: Some(at),
                        ret: Some(ret),
                    }),
                },
                _ => {}
            }
        }
        if run.root.is_none() {
            return Err(TimingError::Empty);
        }
        Ok(run)
    }

    /// The threads and processes `tid` made, in the order it made them.
    fn made(&self, tid: u32) -> Vec<u32> {
        self.threads.get(&tid).map_or_else(Vec::new, |calls| {
            calls
                .iter()
                .filter(|c| CREATORS.contains(&c.nr))
                .filter_map(|c| c.ret.filter(|&r| r > 0).and_then(|r| u32::try_from(r).ok()))
                .collect()
        })
    }
}

/// How [`retime`] went.
#[derive(Clone, Debug, PartialEq)]
pub struct Retimed {
    /// Calls given times on the untraced run's clock.
    pub calls: usize,
    /// Of those, the calls whose think time is the traced run's (the runs differ there: a call
    /// one run made and the other not, or a call right after such a place).
    pub estimated: usize,
    /// The first of those: its thread in the traced run, its place on the thread, its name.
    pub first_estimated: Option<(u32, usize, String)>,
    /// Threads and processes matched.
    pub threads: usize,
    /// The untraced run's span, first event to last, seconds on perf's clock.
    pub span_s: f64,
    /// perf's cost taken out over all threads, seconds.
    pub cost_s: f64,
}

/// The strace side's threads: the first call's thread, and per thread those it made in order.
fn traced_tree(calls: &[Syscall]) -> (Option<u32>, HashMap<u32, Vec<u32>>) {
    let root = calls.iter().min_by(|a, b| a.start.total_cmp(&b.start)).map(|c| c.tid);
    let mut made: HashMap<u32, Vec<u32>> = HashMap::new();
    for c in calls {
        if let Some(child) = made_by(c) {
            made.entry(c.tid).or_default().push(child);
        }
    }
    (root, made)
}

/// The thread or process a traced call made, if it is a creating call that succeeded.
fn made_by(c: &Syscall) -> Option<u32> {
    match (c.nr, &c.ret) {
        (Some(nr), Ret::Value { value, .. }) if CREATORS.contains(&nr) && *value > 0 => u32::try_from(*value).ok(),
        _ => None,
    }
}

/// A call's number and outcome, the unit the runs are lined up by: 0 succeeded, 1 failed, 2
/// unknown (no result).
type Token = (u32, u8);

fn failed(r: i64) -> bool {
    (-4095..0).contains(&r)
}

/// The threads of the two runs paired by their place in the process tree, the first thread
/// first and every creator before the threads it made.
fn pair_threads(calls: &[Syscall], run: &Run) -> Result<Vec<(u32, u32)>, UntracedError> {
    let (root, made) = traced_tree(calls);
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    if let (Some(s), Some(u)) = (root, run.root) {
        pairs.push((s, u));
    }
    let mut i = 0;
    while let Some(&(s, u)) = pairs.get(i) {
        let (ms, mu) = (made.get(&s).cloned().unwrap_or_default(), run.made(u));
        if ms.len() != mu.len() {
            return Err(UntracedError::Threads {
                tid: s,
                traced: ms.len(),
                untraced: mu.len(),
            });
        }
        pairs.extend(ms.into_iter().zip(mu));
        i += 1;
    }
    Ok(pairs)
}

/// Per thread of the traced run: the clock shift and the creating call's end it starts from.
type Births = HashMap<u32, (f64, f64)>;

/// One thread's calls on the untraced clock: `mine` (the traced run's, in order) against `all`
/// (the untraced thread's every call, perf's cost before its first event `base`). Where the
/// runs agree (a call and the one before it matched in order) a call takes the untraced run's
/// times; elsewhere its think time is the traced run's (less its measured tracer time) after
/// the previous call's end on this clock, and the clock keeps the shift from then on. Returns
/// the times and how many were estimated; records in `births` what the threads it makes start
/// from.
fn thread_times(
    mine: &[&Syscall],
    all: &[Sys],
    traced: &HashSet<u32>,
    base: f64,
    event: f64,
    births: &mut Births,
) -> (Vec<(f64, f64)>, Vec<usize>) {
    let printed: Vec<(usize, &Sys)> = all.iter().enumerate().filter(|(_, c)| traced.contains(&c.nr)).collect();
    let tok_s: Vec<Token> = mine
        .iter()
        .map(|c| {
            let o = match c.ret {
                Ret::Value { .. } => 0,
                Ret::Error(_) => 1,
                Ret::Unknown => 2,
            };
            (c.nr.unwrap_or(u32::MAX), o)
        })
        .collect();
    let tok_u: Vec<Token> = printed
        .iter()
        .map(|(_, k)| (k.nr, k.ret.map_or(2, |r| u8::from(failed(r)))))
        .collect();
    let mut matched: Vec<Option<usize>> = vec![None; mine.len()];
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &tok_s, &tok_u) {
        if let similar::DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = op
        {
            for d in 0..len {
                matched[old_index + d] = Some(new_index + d);
            }
        }
    }
    // The untraced run's own clock for printed call `j`: perf's cost before its sys_enter stamp
    // (every event before it and half its own) and before its sys_exit stamp taken out.
    let abs = |j: usize| {
        let (k, c) = printed[j];
        let before = base + event * (2 * k) as f64 + event / 2.0;
        let exit = c.exit.or(c.enter).unwrap_or(0.0);
        let enter = c.enter.unwrap_or(exit);
        (enter - before, (exit - before - event).max(enter - before))
    };
    let (mut shift, anchor) = mine
        .first()
        .and_then(|c| births.get(&c.tid).copied())
        .unwrap_or((0.0, 0.0));
    let untraced_clock = |c: &Syscall| c.start - c.tracer.unwrap_or(0.0);
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(mine.len());
    let mut estimated = Vec::new();
    for (i, c) in mine.iter().enumerate() {
        let clean = match (i, matched[i]) {
            (0, Some(_)) => true,
            (_, Some(j)) => j > 0 && matched[i - 1] == Some(j - 1),
            _ => false,
        };
        let (s, e) = match (clean, matched[i]) {
            (true, Some(j)) => {
                // A gap shorter than the event cost taken out would go back in time: it is 0.
                let (s, e) = abs(j);
                let from = out.last().map_or(f64::NEG_INFINITY, |p: &(f64, f64)| p.1);
                ((s - shift).max(from), (e - shift).max(from))
            }
            _ => {
                estimated.push(i);
                let (prev_end, gap) = match i {
                    0 => (anchor, 0.0),
                    _ => {
                        let p = mine[i - 1];
                        (
                            out[i - 1].1,
                            (untraced_clock(c) - (untraced_clock(p) + p.duration)).max(0.0),
                        )
                    }
                };
                let s = prev_end + gap;
                match matched[i] {
                    Some(j) => {
                        let (us, ue) = abs(j);
                        shift = us - s;
                        (s, s + (ue - us))
                    }
                    None => (s, s + c.duration),
                }
            }
        };
        if let Some(child) = made_by(c) {
            births.insert(child, (shift, e));
        }
        out.push((s, e));
    }
    (out, estimated)
}

/// Gives each of strace's `calls` (parsed with `-n`, in the traced run's order) its start and
/// end on the untraced run's clock ([`Syscall::untraced_run`]) from `text` (see the module
/// documentation), `per_call_s` being perf's cost per system call. `traced` holds the numbers
/// strace printed. All or nothing: on an error `calls` are left as they were.
pub fn retime(
    calls: &mut [Syscall],
    text: &str,
    traced: &HashSet<u32>,
    per_call_s: f64,
) -> Result<Retimed, UntracedError> {
    let run = Run::parse(text)?;
    let pairs = pair_threads(calls, &run)?;
    let event = per_call_s / 2.0;
    // Per untraced thread: perf's cost before its first event (its creator's at the creating
    // call's exit).
    let mut inherit: HashMap<u32, f64> = HashMap::new();
    let mut births: Births = HashMap::new();
    let mut times: HashMap<u32, Vec<(f64, f64)>> = HashMap::new();
    let (mut cost_s, mut estimated, mut first) = (0.0, 0, None);
    for &(s, u) in &pairs {
        let base = inherit.get(&u).copied().unwrap_or(0.0);
        let all = run.threads.get(&u).map(Vec::as_slice).unwrap_or(&[]);
        let mine: Vec<&Syscall> = calls.iter().filter(|c| c.tid == s).collect();
        let (out, est) = thread_times(&mine, all, traced, base, event, &mut births);
        if let Some(&i) = est.first() {
            let at = mine[i].start;
            if first
                .as_ref()
                .is_none_or(|&(_, _, _, t): &(u32, usize, String, f64)| at < t)
            {
                first = Some((s, i, mine[i].name.clone(), at));
            }
        }
        estimated += est.len();
        for (k, c) in all.iter().enumerate() {
            if let (true, Some(r)) = (CREATORS.contains(&c.nr), c.ret.filter(|&r| r > 0)) {
                inherit.insert(r as u32, base + event * (2 * k + 2) as f64);
            }
        }
        cost_s += event * (2 * all.len()) as f64;
        times.insert(s, out);
    }
    if let Some(c) = calls.iter().find(|c| !times.contains_key(&c.tid)) {
        return Err(UntracedError::Calls {
            tid: c.tid,
            index: 0,
            name: c.name.clone(),
            why: "is on a thread not matched".into(),
        });
    }
    if 2 * estimated > calls.len() {
        return Err(UntracedError::Calls {
            tid: first.as_ref().map_or(0, |f| f.0),
            index: first.as_ref().map_or(0, |f| f.1),
            name: first.map_or_else(String::new, |f| f.2),
            why: format!(
                "is the first of {estimated} of {} calls where the runs differ (more than half)",
                calls.len()
            ),
        });
    }
    let mut next: HashMap<u32, usize> = HashMap::new();
    for c in calls.iter_mut() {
        let k = next.entry(c.tid).or_insert(0);
        c.untraced_run = Some(times[&c.tid][*k]);
        *k += 1;
    }
    let stamps = run.threads.values().flatten().flat_map(|c| [c.enter, c.exit]).flatten();
    let (lo, hi) = stamps.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), t| (lo.min(t), hi.max(t)));
    Ok(Retimed {
        calls: calls.len(),
        estimated,
        first_estimated: first.map(|(t, i, n, _)| (t, i, n)),
        threads: pairs.len(),
        span_s: (hi - lo).max(0.0),
        cost_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tid: u32, start: f64, name: &str, nr: u32, ret: Ret) -> Syscall {
        Syscall {
            tid,
            start,
            duration: 0.0,
            name: name.into(),
            args: Vec::new(),
            ret,
            nr: Some(nr),
            tracer: None,
            untraced_run: None,
        }
    }
    fn ok(value: i64) -> Ret {
        Ret::Value { value, path: None }
    }

    /// A process (10) that opens a file, makes a thread (11) that stats one, and exits; a futex
    /// (202) between its calls is not printed.
    const UNTRACED: &str = "\
100 1.000000000:  raw_syscalls:sys_exit: NR 59 = 0
100 1.000010000: raw_syscalls:sys_enter: NR 257 (ffffff9c, 0, 0, 0, 0, 0)
100 1.000012000:  raw_syscalls:sys_exit: NR 257 = 3
100 1.000020000: raw_syscalls:sys_enter: NR 202 (0, 0, 0, 0, 0, 0)
100 1.000021000:  raw_syscalls:sys_exit: NR 202 = 0
100 1.000030000: raw_syscalls:sys_enter: NR 56 (0, 0, 0, 0, 0, 0)
100 1.000040000:  raw_syscalls:sys_exit: NR 56 = 101
101 1.000045000: raw_syscalls:sys_enter: NR 262 (ffffff9c, 0, 0, 0, 0, 0)
101 1.000046000:  raw_syscalls:sys_exit: NR 262 = -2
100 1.000050000: raw_syscalls:sys_enter: NR 231 (0, 0, 0, 0, 0, 0)
";

    fn traced() -> Vec<Syscall> {
        vec![
            call(10, 5.0, "execve", 59, ok(0)),
            call(10, 5.1, "openat", 257, ok(3)),
            call(10, 5.2, "clone", 56, ok(11)),
            call(11, 5.3, "newfstatat", 262, Ret::Error("ENOENT".into())),
            call(10, 5.4, "exit_group", 231, Ret::Unknown),
        ]
    }

    fn numbers() -> HashSet<u32> {
        [59, 257, 56, 262, 231].into_iter().collect()
    }

    #[test]
    fn calls_get_the_untraced_runs_times_less_perfs_cost_per_event() {
        let mut calls = traced();
        // 2 µs a call: 1 µs an event.
        let r = retime(&mut calls, UNTRACED, &numbers(), 2e-6).unwrap();
        assert_eq!((r.calls, r.threads), (5, 2));
        let t = |i: usize| calls[i].untraced_run.unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // The openat: 2 events before it (the execve counted whole) and half of its own.
        assert!(close(t(1).0, 1.000010 - 2.5e-6), "{:?}", t(1));
        assert!(close(t(1).1, 1.000012 - 3.5e-6), "{:?}", t(1));
        // The gap after it less one event, the futex between less two more.
        let gap = t(2).0 - t(1).1;
        assert!(close(gap, (1.000030 - 1.000012) - 1e-6 - 2e-6), "{gap}");
        // The thread starts from its creator's cost at the clone's exit (4 calls: 8 events),
        // and its first call has half of its own event before the stamp.
        assert!(close(t(3).0, 1.000045 - 8e-6 - 0.5e-6), "{:?}", t(3));
        // exit_group never returned: its end is its start.
        assert!(close(t(4).1, t(4).0), "{:?}", t(4));
        assert!((r.span_s - 50e-6).abs() < 1e-9);
    }

    #[test]
    fn where_the_runs_differ_a_call_takes_the_traced_think_time_and_the_clock_follows() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // A call that failed in the traced run succeeds in the untraced one: thread 11's only
        // call has no counterpart and starts at its creator's clone's end.
        let mut calls = traced();
        let text = UNTRACED.replace("NR 262 = -2", "NR 262 = 0");
        let r = retime(&mut calls, &text, &numbers(), 2e-6).unwrap();
        assert_eq!(
            (r.estimated, r.first_estimated.clone()),
            (1, Some((11, 0, "newfstatat".into())))
        );
        assert!(close(
            calls[3].untraced_run.unwrap().0,
            calls[2].untraced_run.unwrap().1
        ));
        // An extra call in the untraced run before the clone: the clone's think time is the
        // traced run's (0.1 s after the openat: no tracer time measured), the exit_group's the
        // untraced run's after the clone.
        let mut calls = traced();
        let extra = "100 1.000025000: raw_syscalls:sys_enter: NR 257 (0, 0, 0, 0, 0, 0)\n100 1.000026000:  raw_syscalls:sys_exit: NR 257 = 4\n";
        let text = UNTRACED.replace("100 1.000030000:", &format!("{extra}100 1.000030000:"));
        let r = retime(&mut calls, &text, &numbers(), 2e-6).unwrap();
        assert_eq!((r.estimated, r.first_estimated), (1, Some((10, 2, "clone".into()))));
        let t = |i: usize| calls[i].untraced_run.unwrap();
        assert!(close(t(2).0, t(1).1 + 0.1), "{:?} {:?}", t(1), t(2));
        assert!(
            close(t(2).1 - t(2).0, 10e-6 - 1e-6),
            "the clone keeps its untraced duration: {:?}",
            t(2)
        );
        // exit_group, the sixth call: 1.000050 less 10.5 events before its stamp; the clone's end
        // 1.000040 less 9.5 (2 × 4 calls before it, its sys_enter, half of its sys_exit): both on
        // the untraced clock, shifted alike.
        let untraced_gap = (1.000050 - 10.5e-6) - (1.000040 - 9.5e-6);
        assert!(close(t(4).0 - t(2).1, untraced_gap), "{:?} {:?}", t(2), t(4));
    }

    #[test]
    fn a_gap_shorter_than_perfs_cost_is_none_and_a_threads_clock_never_goes_back() {
        // exit_group 0.1 µs after the clone returned: less than the event cost taken out.
        let mut calls = traced();
        let text = UNTRACED.replace(
            "100 1.000050000: raw_syscalls:sys_enter: NR 231",
            "100 1.000040100: raw_syscalls:sys_enter: NR 231",
        );
        retime(&mut calls, &text, &numbers(), 2e-6).unwrap();
        let (clone, exit) = (calls[2].untraced_run.unwrap(), calls[4].untraced_run.unwrap());
        assert_eq!(exit.0, clone.1, "{clone:?} {exit:?}");
    }

    #[test]
    fn runs_that_cannot_be_lined_up_leave_the_traced_times_and_say_why() {
        let mut calls = traced();
        // No thread made.
        let text: String = UNTRACED
            .lines()
            .filter(|l| !l.starts_with("101 ") && !l.contains("NR 56"))
            .map(|l| format!("{l}\n"))
            .collect();
        let e = retime(&mut calls, &text, &numbers(), 2e-6).unwrap_err();
        assert!(
            matches!(
                e,
                UntracedError::Threads {
                    traced: 1,
                    untraced: 0,
                    ..
                }
            ),
            "{e}"
        );
        // A lost event.
        let e = retime(&mut calls, &format!("{UNTRACED}PERF_RECORD_LOST 5\n"), &numbers(), 2e-6).unwrap_err();
        assert!(matches!(e, UntracedError::Record(TimingError::Lost(_))), "{e}");
        // More than half the calls differ: every number another.
        let text = UNTRACED
            .replace("NR 257", "NR 2")
            .replace("NR 231", "NR 60")
            .replace("NR 59", "NR 322");
        let e = retime(&mut calls, &text, &numbers(), 2e-6).unwrap_err();
        assert!(e.to_string().contains("where the runs differ (more than half)"), "{e}");
        assert!(calls.iter().all(|c| c.untraced_run.is_none()));
    }
}
