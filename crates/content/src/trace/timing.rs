//! The tracer's own time, measured rather than estimated: the kernel's record of the traced
//! run (`perf record` of its system calls and context switches) aligned with strace's lines,
//! so a trace's durations and think times are the program's, not strace's (issue 44;
//! doc/replay.md, *Timing*).
//!
//! Under `strace --seccomp-bpf` a call strace prints stops its thread twice: at entry (the
//! seccomp stop, before the kernel's `raw_syscalls:sys_enter` tracepoint) and at exit (after
//! `raw_syscalls:sys_exit`). While stopped the thread is off the CPU in state `t`
//! (TASK_TRACED), which `sched:sched_switch`'s `prev_state` names, and `perf record
//! --switch-events` marks when it runs again (`PERF_RECORD_SWITCH IN`). So, per thread:
//! - a call's time in the kernel is `sys_exit − sys_enter`, with no tracer in it;
//! - the tracer's time is every stop (a switch out in state `t` to the next switch in) and the
//!   exit path that leads into one (a `sys_exit` of a call that stopped at entry to the switch
//!   out in state `t` right after it: strace asks for the exit stop of those calls only);
//!   [`Timeline`] sums it per thread, a new thread or process starting from what its creator had
//!   at the `clone`/`fork` that made it (the replay times every thread from the trace's start);
//! - a thread asleep (state `S`: a join, a wait for a child, a lock) while another was stopped
//!   waited, most likely, for that one: the most any other thread was stopped within the sleep
//!   counts as its tracer time too ([`stretch_sleeps`]);
//! - a preemption (state `R`) between a stop and the call is not a step of its own (seen in
//!   `git checkout` here);
//! - strace's lines are the calls that stopped at entry: a `sys_enter` right after a switch in
//!   from a `t` stop, of a number strace printed (its filter is by number: every call of such a
//!   number stops, no other does; a call right after the previous call's exit stop or a signal
//!   stop is not one unless its number is), in order per thread, matched by `-n`'s number.
//!
//! [`align`] rewrites each parsed strace call's start and duration with the kernel's (on the
//! `-ttt` clock through the offset between the two clocks) and sets its thread's tracer time
//! before it ([`crate::parsers::strace::Syscall::tracer`]); a call it cannot find leaves every
//! call as strace timed it (the caller says why and falls back to the calibration). What stays
//! in a gap: the program's own computing, the calls strace does not stop, and waits that are not
//! the tracer's (I/O, another thread); what is not measured: the few microseconds between a
//! thread's system call instruction and its seccomp stop.
//!
//! Input: `perf script --show-switch-events --show-lost-events -F tid,time,event,trace` of
//! `perf record -k monotonic --switch-events -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit
//! -e sched:sched_switch` (perf 6.1; the fixture `tests/fixtures/replay/perf-6.1-script.txt`
//! is a real one). A record that lost events is refused.

use crate::parsers::strace::Syscall;
use std::collections::HashMap;

/// The system call numbers (x86_64) that make a thread or process: the return value in the
/// creator is the new one's id.
const CREATORS: [u32; 4] = [56, 57, 58, 435];

/// Why perf's record cannot time a trace (the caller keeps strace's times and says why).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TimingError {
    /// perf's ring buffer overflowed.
    #[error("perf lost events ({0}): its buffer was too small for this run")]
    Lost(String),
    /// A line that is not `perf script -F tid,time,event,trace` output.
    #[error("not a line of `perf script -F tid,time,event,trace`: {0}")]
    Foreign(String),
    /// Nothing recorded.
    #[error("perf recorded no system call or context switch of the run")]
    Empty,
    /// strace printed a call without `-n`'s number.
    #[error("{name} of thread {tid} has no system call number (-n)")]
    NoNumber {
        /// The call's name.
        name: String,
        /// Its thread.
        tid: u32,
    },
    /// A call strace printed is not among the calls perf saw stop its thread.
    #[error("{name} of thread {tid} at {start:.6} (number {nr}) is not among the calls perf saw stop that thread")]
    NotFound {
        /// The call's name.
        name: String,
        /// Its thread.
        tid: u32,
        /// strace's start, seconds since the epoch.
        start: f64,
        /// Its number.
        nr: u32,
    },
}

/// One call that stopped its thread at entry, as the kernel saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelCall {
    /// The system call number.
    pub nr: u32,
    /// `sys_enter`, seconds on perf's clock.
    pub enter: f64,
    /// `sys_exit`, seconds on perf's clock (`None`: it never returned, e.g. `exit_group`).
    pub exit: Option<f64>,
    /// The thread's tracer time before `enter`, seconds (its creators' up to its creation
    /// included).
    pub tracer: f64,
}

/// Per thread, the calls that stopped at entry, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// Thread id → its stopped calls.
    pub threads: HashMap<u32, Vec<KernelCall>>,
    /// Thread id → the tracer's time on that thread alone, seconds.
    pub own: HashMap<u32, f64>,
}

/// What one thread was doing at its last event.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Last {
    Nothing,
    /// Returned from a call at this time (still in the kernel's exit path), and whether that
    /// call stopped at entry (only those stop at exit too: strace asks for the exit stop of a
    /// call the seccomp filter stopped).
    Exit(f64, bool),
    /// Back on the CPU after a stop in state `t`.
    InAfterStop,
    Other,
}

#[derive(Debug)]
struct ThreadState {
    tracer: f64,
    /// What it started from (its creators' tracer time).
    base: f64,
    last: Last,
    /// When it went off the CPU in state `t`, until it is back.
    stopped_at: Option<f64>,
    /// The state `sched_switch` said it leaves in (`t`: the `PERF_RECORD_SWITCH OUT` that
    /// follows starts a stop; `R`: it is preempted).
    leaving: Option<char>,
    /// Preempted (off the CPU in state `R`): what it was doing goes on when it is back.
    preempted: bool,
    /// The index of its call in progress in its timeline.
    open: Option<usize>,
    /// The number of the call it is in (stopped or not).
    in_call: Option<u32>,
    /// Its tracer intervals `(from, to)`, in order.
    stops: Vec<(f64, f64)>,
    /// Its sleeps (off the CPU in state `S`: a futex, a wait for a child, a poll) `(from, to)`.
    sleeps: Vec<(f64, f64)>,
    /// When it went to sleep, until it is back.
    asleep_at: Option<f64>,
}

impl ThreadState {
    fn new(tracer: f64) -> ThreadState {
        ThreadState {
            tracer,
            base: tracer,
            last: Last::Nothing,
            stopped_at: None,
            leaving: None,
            preempted: false,
            open: None,
            in_call: None,
            stops: Vec::new(),
            sleeps: Vec::new(),
            asleep_at: None,
        }
    }
}

/// One line of `perf script`, as far as timing needs it.
#[derive(Clone, Debug, PartialEq)]
enum Event {
    Enter(u32),
    /// The number the tracepoint printed (-1 where a tracer changed it) and the result.
    Exit(i64, i64),
    /// `sched_switch` of the thread, leaving in this state (`t`, `R`, `S`, `D`, …).
    Leaving(char),
    Out,
    In,
}

/// `TID TIME: EVENT…` → `(tid, time, event)`; `None` for lines timing does not use.
fn line(l: &str) -> Result<Option<(u32, f64, Event)>, TimingError> {
    let l = l.trim();
    if l.is_empty() {
        return Ok(None);
    }
    if l.contains("PERF_RECORD_LOST") {
        return Err(TimingError::Lost(l.to_string()));
    }
    let bad = || TimingError::Foreign(l.to_string());
    let (tid, rest) = l.split_once(char::is_whitespace).ok_or_else(bad)?;
    let tid: u32 = tid.parse().map_err(|_| bad())?;
    let (time, rest) = rest.trim_start().split_once(':').ok_or_else(bad)?;
    let time: f64 = time.trim().parse().map_err(|_| bad())?;
    let rest = rest.trim_start();
    let number = |s: &str| -> Result<i64, TimingError> {
        s.split_whitespace().next().and_then(|n| n.parse().ok()).ok_or_else(bad)
    };
    let event = if let Some(r) = rest.strip_prefix("raw_syscalls:sys_enter: NR ") {
        Event::Enter(u32::try_from(number(r)?).map_err(|_| bad())?)
    } else if let Some(r) = rest.strip_prefix("raw_syscalls:sys_exit: NR ") {
        let nr = number(r)?;
        let ret = r
            .split_once(" = ")
            .and_then(|(_, v)| v.trim().parse().ok())
            .ok_or_else(bad)?;
        Event::Exit(nr, ret)
    } else if let Some(r) = rest.strip_prefix("sched:sched_switch: ") {
        // The thread's own switch: `prev_pid=TID … prev_state=S ==> next_…`.
        let own = r.contains(&format!(" prev_pid={tid} "));
        let state = r
            .split(" ==> ")
            .next()
            .and_then(|prev| prev.rsplit_once(" prev_state="))
            .map(|(_, s)| s.trim())
            .ok_or_else(bad)?;
        if !own {
            return Ok(None);
        }
        Event::Leaving(state.chars().next().ok_or_else(bad)?)
    } else if let Some(r) = rest.strip_prefix("PERF_RECORD_SWITCH") {
        match r.split_whitespace().next() {
            Some("OUT") => Event::Out,
            Some("IN") => Event::In,
            _ => return Err(bad()),
        }
    } else {
        return Ok(None);
    };
    Ok(Some((tid, time, event)))
}

impl Timeline {
    /// Reads `perf script`'s text (see the module documentation); `traced` holds the numbers of
    /// the calls strace printed (its filter stops every call of those numbers, and no other).
    pub fn parse(text: &str, traced: &std::collections::HashSet<u32>) -> Result<Timeline, TimingError> {
        let mut t = Timeline::default();
        let mut state: HashMap<u32, ThreadState> = HashMap::new();
        // A new thread's tracer time from its creator, when the creator returned first.
        let mut inherited: HashMap<u32, f64> = HashMap::new();
        let mut events = 0usize;
        for l in text.lines() {
            let Some((tid, at, ev)) = line(l)? else { continue };
            events += 1;
            let s = state
                .entry(tid)
                .or_insert_with(|| ThreadState::new(inherited.remove(&tid).unwrap_or(0.0)));
            match ev {
                Event::Leaving(state) => s.leaving = Some(state),
                Event::Out => match s.leaving.take() {
                    Some('t') => {
                        if let Last::Exit(e, true) = s.last {
                            s.tracer += at - e;
                            s.stops.push((e, at));
                        }
                        s.stopped_at = Some(at);
                        s.last = Last::Other;
                    }
                    // Preempted (seen between a stop and the call's `sys_enter`): not a step of
                    // its own.
                    Some('R') => s.preempted = true,
                    state => {
                        if state == Some('S') {
                            s.asleep_at = Some(at);
                        }
                        s.last = Last::Other;
                    }
                },
                Event::In => {
                    if let Some(o) = s.stopped_at.take() {
                        s.tracer += at - o;
                        s.stops.push((o, at));
                        s.last = Last::InAfterStop;
                    } else if !std::mem::take(&mut s.preempted) {
                        s.last = Last::Other;
                    }
                    if let Some(a) = s.asleep_at.take() {
                        s.sleeps.push((a, at));
                    }
                }
                Event::Enter(nr) => {
                    let calls = t.threads.entry(tid).or_default();
                    s.open = (s.last == Last::InAfterStop && traced.contains(&nr)).then(|| {
                        calls.push(KernelCall {
                            nr,
                            enter: at,
                            exit: None,
                            tracer: s.tracer,
                        });
                        calls.len() - 1
                    });
                    s.last = Last::Other;
                    s.in_call = Some(nr);
                }
                Event::Exit(_, ret) => {
                    // The call in progress (the exit's own number can read -1 under a tracer).
                    let stopped = s.open.take();
                    if let Some(i) = stopped {
                        if let Some(c) = t.threads.get_mut(&tid).and_then(|c| c.get_mut(i)) {
                            c.exit = Some(at);
                        }
                    }
                    s.last = Last::Exit(at, stopped.is_some());
                    let nr = s.in_call.take();
                    let made = u32::try_from(ret)
                        .ok()
                        .filter(|&r| r > 0 && nr.is_some_and(|n| CREATORS.contains(&n)));
                    if let Some(child) = made {
                        let base = s.tracer;
                        match state.get_mut(&child) {
                            // The new one ran first: it starts from its creator's time too.
                            Some(c) => {
                                c.tracer += base;
                                c.base += base;
                                for k in t.threads.get_mut(&child).into_iter().flatten() {
                                    k.tracer += base;
                                }
                            }
                            None => {
                                inherited.insert(child, base);
                            }
                        }
                    }
                }
            }
        }
        if events == 0 {
            return Err(TimingError::Empty);
        }
        stretch_sleeps(&mut t, &state);
        t.own = state.into_iter().map(|(tid, s)| (tid, s.tracer - s.base)).collect();
        Ok(t)
    }
}

/// The `-ttt` clock (CLOCK_REALTIME) less perf's (`-k monotonic`, CLOCK_MONOTONIC) now,
/// seconds: of three back-to-back readings, the one read closest together (within a few µs).
pub fn realtime_minus_monotonic() -> f64 {
    let read = |clock: libc::clockid_t| {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid timespec for the call to fill.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
    };
    (0..3)
        .map(|_| {
            let m0 = read(libc::CLOCK_MONOTONIC);
            let r = read(libc::CLOCK_REALTIME);
            let m1 = read(libc::CLOCK_MONOTONIC);
            (m1 - m0, r - (m0 + m1) / 2.0)
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map_or(0.0, |(_, d)| d)
}

/// A thread asleep while another was held by the tracer waited, most likely, for that one
/// (a join, a wait for a child, a lock): its wait was stretched by the other's stops, which a
/// replay without the tracer does not have. Each sleep of each thread counts as tracer time the
/// most any other thread was stopped within it (at most the sleep), added to the thread's calls
/// after it. A sleep that waited for something else (a timer, I/O) while another thread was
/// stopped loses time it should keep: the limit of this (doc/replay.md).
fn stretch_sleeps(t: &mut Timeline, state: &HashMap<u32, ThreadState>) {
    let overlap = |stops: &[(f64, f64)], (a, b): (f64, f64)| -> f64 {
        let from = stops.partition_point(|&(_, e)| e <= a);
        stops[from..]
            .iter()
            .take_while(|&&(s, _)| s < b)
            .map(|&(s, e)| e.min(b) - s.max(a))
            .sum()
    };
    for (tid, s) in state {
        let Some(calls) = t.threads.get_mut(tid) else { continue };
        for &sleep in &s.sleeps {
            let stretch = state
                .iter()
                .filter(|(u, _)| *u != tid)
                .map(|(_, o)| overlap(&o.stops, sleep))
                .fold(0.0, f64::max)
                .min(sleep.1 - sleep.0);
            for c in calls.iter_mut().filter(|c| c.enter >= sleep.1) {
                c.tracer += stretch;
            }
        }
    }
}

/// How [`align`] went.
#[derive(Clone, Debug, PartialEq)]
pub struct Aligned {
    /// Calls given the kernel's times.
    pub calls: usize,
    /// The tracer's time over all threads, seconds.
    pub tracer_s: f64,
}

/// Gives each of strace's `calls` (parsed with `-n`) the kernel's start and duration from
/// `timeline`, on strace's clock (`realtime_minus_mono`: the `-ttt` clock less perf's, seconds),
/// and its thread's tracer time before it, counted from the first call's. All or nothing: if a
/// call has no number or its thread's next stopped calls (up to 8 on) hold none with its
/// number, `calls` are left as they were and the error says which.
pub fn align(calls: &mut [Syscall], timeline: &Timeline, realtime_minus_mono: f64) -> Result<Aligned, TimingError> {
    let mut found: Vec<&KernelCall> = Vec::with_capacity(calls.len());
    let mut next: HashMap<u32, usize> = HashMap::new();
    for c in calls.iter() {
        let nr = c.nr.ok_or_else(|| TimingError::NoNumber {
            name: c.name.clone(),
            tid: c.tid,
        })?;
        let kernel = timeline.threads.get(&c.tid).map(Vec::as_slice).unwrap_or(&[]);
        let from = next.get(&c.tid).copied().unwrap_or(0);
        let k = (from..kernel.len().min(from + 8))
            .find(|&k| kernel[k].nr == nr)
            .ok_or_else(|| TimingError::NotFound {
                name: c.name.clone(),
                tid: c.tid,
                start: c.start,
                nr,
            })?;
        next.insert(c.tid, k + 1);
        found.push(&kernel[k]);
    }
    let origin = found
        .iter()
        .zip(calls.iter())
        .min_by(|a, b| a.1.start.total_cmp(&b.1.start));
    let origin = origin.map_or(0.0, |(k, _)| k.tracer);
    for (c, k) in calls.iter_mut().zip(&found) {
        c.start = k.enter + realtime_minus_mono;
        c.duration = k.exit.map_or(0.0, |e| (e - k.enter).max(0.0));
        c.tracer = Some((k.tracer - origin).max(0.0));
    }
    calls.sort_by(|a, b| a.start.total_cmp(&b.start));
    let tracer_s = calls
        .iter()
        .map(|c| c.tid)
        .collect::<std::collections::BTreeSet<_>>()
        .iter()
        .filter_map(|t| timeline.own.get(t))
        .sum();
    Ok(Aligned {
        calls: calls.len(),
        tracer_s,
    })
}

#[cfg(test)]
mod tests;
