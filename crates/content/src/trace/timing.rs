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
//! - at an entry stop the thread wakes the tracer (`sched:sched_waking`, in the thread's own
//!   context) before it goes off the CPU: from that waking to the switch out is the tracer's
//!   too (the seccomp stop's notification, measured here at 3 µs of 6 at the median), and so is
//!   the way from the switch in after it to the call's `sys_enter` (no program code there);
//! - from the switch in after an exit stop to the waking at the next entry stop, with nothing
//!   between, the thread runs the tracer's way back to user space, the program's code and the
//!   way into the next call: the shortest such interval of the whole record (two passes,
//!   [`Timeline::floor_s`]) is counted as the tracer's in each;
//! - a thread asleep (state `S` or `D`) outside the calls strace printed (a futex of a join or a
//!   lock) and woken by another thread of the program waited for that one: the replay has no
//!   tracer, so it wakes at the waker's time without the waker's tracer time — its tracer
//!   time becomes the waker's at the waking (never less than its own, never more than the
//!   sleep adds). A thread's exit wakes its joiner where perf no longer records (the exiting
//!   thread's last events are gone), so a sleep in state `S` with no recorded waker during
//!   which program threads ended was woken by the last of them ([`Timeline::parse`]). A sleep
//!   inside a printed call (`wait4`, a pipe's `read`) is the replay's to reproduce (it waits for
//!   the same child or writer) and keeps its time;
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
//! the tracer's (I/O, a timer); what is not measured: the tracer's paths above their floor, the
//! way into an entry stop when the tracer was awake already (no waking), and the program's own
//! code running slower under the tracer (cold caches after each switch).
//!
//! The tracer's own threads (those that call `ptrace`, number 101) are left out.
//!
//! Input: `perf script --ns --show-switch-events --show-lost-events -F tid,time,event,trace` of
//! `perf record -k monotonic --switch-events -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit
//! -e sched:sched_switch -e sched:sched_waking` (perf 6.1; the fixtures
//! `tests/fixtures/replay/perf-6.1-script-*.txt` are real ones). A record that lost events is
//! refused.

use crate::parsers::strace::Syscall;
use std::collections::HashMap;

/// The system call numbers (x86_64) that make a thread or process: the return value in the
/// creator is the new one's id.
pub(super) const CREATORS: [u32; 4] = [56, 57, 58, 435];

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
    /// The shortest time from a thread's switch in after an exit stop to its waking of the
    /// tracer at the next entry stop, with no call, switch or other waking between, seconds: the
    /// floor of the tracer's paths there (the way back to user space, the entry into the next
    /// call up to its seccomp stop's notification), counted as the tracer's in every such
    /// interval; the rest of each is the program's.
    pub floor_s: f64,
}

/// What one thread was doing at its last event.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Last {
    Nothing,
    /// Returned from a call at this time (still in the kernel's exit path), and whether that
    /// call stopped at entry (only those stop at exit too: strace asks for the exit stop of a
    /// call the seccomp filter stopped).
    Exit(f64, bool),
    /// Back on the CPU at `at` after a stop in state `t`; `entry`: a call's entry stop (its
    /// `sys_enter` comes next).
    InAfterStop {
        at: f64,
        entry: bool,
    },
    Other,
}

/// A sleep outside the calls strace printed, until the thread is back on the CPU.
#[derive(Clone, Copy, Debug)]
struct Sleep {
    /// When it went off the CPU, seconds on perf's clock.
    at: f64,
    /// Its tracer time then, seconds.
    tracer: f64,
    /// In state `S` (a join may end it); `D` (I/O) is never taken for one.
    joinable: bool,
}

#[derive(Debug)]
struct ThreadState {
    /// Its tracer time so far, seconds: its creators' up to its creation, its own stops and
    /// paths, and what its wakers' had when they woke it.
    tracer: f64,
    /// The tracer's time on this thread alone (its stops and the paths into them), seconds.
    own: f64,
    last: Last,
    /// When it went off the CPU in state `t`, until it is back.
    stopped_at: Option<f64>,
    /// The stop in progress is an entry stop (else an exit stop).
    entry_stop: bool,
    /// Back on the CPU after an exit stop at this time, until its next call, waking or switch.
    resumed_at: Option<f64>,
    /// The shortest time seen from the return of an exit stop to the waking of the tracer at the
    /// next entry stop with nothing between (the floor of the tracer's paths there), seconds.
    shortest: f64,
    /// The state `sched_switch` said it leaves in (`t`: the `PERF_RECORD_SWITCH OUT` that
    /// follows starts a stop; `R`: it is preempted).
    leaving: Option<char>,
    /// Preempted (off the CPU in state `R`): what it was doing goes on when it is back.
    preempted: bool,
    /// The index of its call in progress in its timeline.
    open: Option<usize>,
    /// The number of the call it is in (stopped or not).
    in_call: Option<u32>,
    /// Its first waking of another thread outside any call since its last event: at an entry
    /// stop, the tracer's notification.
    woke_at: Option<f64>,
    asleep: Option<Sleep>,
    /// The last waking of it by another thread of the program while asleep: when, and the
    /// waker's tracer time then (seconds).
    woken: Option<(f64, f64)>,
}

impl ThreadState {
    fn new(tracer: f64) -> ThreadState {
        ThreadState {
            tracer,
            own: 0.0,
            last: Last::Nothing,
            stopped_at: None,
            entry_stop: false,
            resumed_at: None,
            shortest: f64::INFINITY,
            leaving: None,
            preempted: false,
            open: None,
            in_call: None,
            woke_at: None,
            asleep: None,
            woken: None,
        }
    }

    /// Off the CPU at `at`, in the state its `sched_switch` said; `floor`: the tracer's paths
    /// between an exit stop and the next entry stop's waking, seconds ([`Timeline::floor_s`]).
    fn off_cpu(&mut self, at: f64, floor: f64) {
        let resumed = self.resumed_at.take();
        match self.leaving.take() {
            Some('t') => {
                // Into a stop: from the call's return (an exit stop) or from the thread's
                // waking of the tracer (an entry stop), and the floor of the paths since the
                // last exit stop when nothing else happened between.
                self.entry_stop = !matches!(self.last, Last::Exit(_, true));
                match (self.last, self.woke_at) {
                    (Last::Exit(e, true), _) => self.held(at - e),
                    (_, Some(w)) => {
                        self.held(at - w);
                        if let Some(r) = resumed {
                            self.shortest = self.shortest.min(w - r);
                            self.held(floor.min(w - r));
                        }
                    }
                    _ => {}
                }
                self.stopped_at = Some(at);
                self.last = Last::Other;
            }
            // Preempted (seen between a stop and the call's `sys_enter`): not a step of its own.
            Some('R') => self.preempted = true,
            state => {
                if matches!(state, Some('S' | 'D')) && self.open.is_none() {
                    self.asleep = Some(Sleep {
                        at,
                        tracer: self.tracer,
                        joinable: state == Some('S'),
                    });
                    self.woken = None;
                }
                self.last = Last::Other;
            }
        }
    }

    /// Back on the CPU at `at`; `joined`: the end of the thread that ended last within its
    /// sleep, if it slept.
    fn on_cpu(&mut self, at: f64, joined: Option<(f64, f64)>) {
        if let Some(o) = self.stopped_at.take() {
            self.held(at - o);
            self.last = Last::InAfterStop {
                at,
                entry: self.entry_stop,
            };
            self.resumed_at = (!self.entry_stop).then_some(at);
        } else if !std::mem::take(&mut self.preempted) {
            self.last = Last::Other;
        }
        if let Some(sleep) = self.asleep.take() {
            if let Some(w) = self.woken.take().or(joined) {
                self.woken_by(sleep, w);
            }
        }
    }

    /// Adds `d` seconds of the tracer's time on this thread.
    fn held(&mut self, d: f64) {
        self.tracer += d;
        self.own += d;
    }

    /// Back on the CPU after `sleep`, woken at `w` by a thread whose tracer time was then
    /// `waker`: the replay wakes it at the waker's time, so it takes the waker's tracer time —
    /// never less than its own, never more than the sleep had.
    fn woken_by(&mut self, sleep: Sleep, (w, waker): (f64, f64)) {
        let most = sleep.tracer + (w - sleep.at).max(0.0);
        self.tracer = self.tracer.max(waker.min(most));
    }
}

/// One line of `perf script`, as far as timing needs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Event {
    Enter(u32),
    /// The number the tracepoint printed (-1 where a tracer changed it) and the result.
    Exit(i64, i64),
    /// `sched_switch` of the thread, leaving in this state (`t`, `R`, `S`, `D`, …).
    Leaving(char),
    Out,
    In,
    /// The thread wakes this one (`sched_waking`, in the waker's context).
    Waking(u32),
}

/// `ptrace`'s number (x86_64): the threads that call it are the tracer's.
const PTRACE: u32 = 101;

/// `TID TIME: EVENT…` → `(tid, time, event)`; `None` for lines timing does not use.
pub(super) fn line(l: &str) -> Result<Option<(u32, f64, Event)>, TimingError> {
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
    } else if let Some(r) = rest.strip_prefix("sched:sched_waking: ") {
        // `comm=NAME pid=TID prio=… target_cpu=…` (a name may hold spaces).
        let (_, target) = r.rsplit_once(" pid=").ok_or_else(bad)?;
        Event::Waking(u32::try_from(number(target)?).map_err(|_| bad())?)
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

/// The tracer's threads, and when each other thread's last event was `(time, tid)`, in time
/// order.
type FirstPass = (std::collections::HashSet<u32>, Vec<(f64, u32)>);

/// The first pass over the record: the tracer's threads, and when each other thread's last
/// event was (in time order) — a thread's exit wakes its joiner after perf stopped recording
/// it.
fn first_pass(events: &[(u32, f64, Event)]) -> Result<FirstPass, TimingError> {
    let mut tracers = std::collections::HashSet::new();
    let mut last: HashMap<u32, f64> = HashMap::new();
    for &(tid, at, ev) in events {
        if ev == Event::Enter(PTRACE) {
            tracers.insert(tid);
        }
        last.insert(tid, at);
    }
    if last.is_empty() {
        return Err(TimingError::Empty);
    }
    let mut ends: Vec<(f64, u32)> = last
        .into_iter()
        .filter(|(tid, _)| !tracers.contains(tid))
        .map(|(tid, at)| (at, tid))
        .collect();
    ends.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok((tracers, ends))
}

/// For `tid` back on the CPU at `at` from a sleep in state `S` with no recorded waker: the
/// thread of the program that ended last within the sleep (a join), as `(its end, its tracer
/// time then)`.
fn joiner(state: &HashMap<u32, ThreadState>, ends: &[(f64, u32)], tid: u32, at: f64) -> Option<(f64, f64)> {
    let s = state.get(&tid)?;
    let sleep = s.asleep.filter(|z| z.joinable && s.woken.is_none())?;
    let from = ends.partition_point(|&(e, _)| e <= sleep.at);
    ends[from..]
        .iter()
        .take_while(|&&(e, _)| e <= at)
        .filter(|&&(_, u)| u != tid)
        .filter_map(|&(e, u)| state.get(&u).map(|o| (e, o.tracer)))
        .last()
}

impl Timeline {
    /// Reads `perf script`'s text (see the module documentation); `traced` holds the numbers of
    /// the calls strace printed (its filter stops every call of those numbers, and no other).
    /// Two passes: the first finds the floor of the tracer's paths ([`Timeline::floor_s`]), the
    /// second counts it.
    pub fn parse(text: &str, traced: &std::collections::HashSet<u32>) -> Result<Timeline, TimingError> {
        let events = text
            .lines()
            .filter_map(|l| line(l).transpose())
            .collect::<Result<Vec<_>, _>>()?;
        let first = first_pass(&events)?;
        let floor = Self::pass(&events, traced, &first, 0.0).floor_s;
        Ok(Self::pass(&events, traced, &first, floor))
    }

    /// One pass over the record, `floor` seconds counted for each exit-to-entry path.
    fn pass(
        events: &[(u32, f64, Event)],
        traced: &std::collections::HashSet<u32>,
        (tracers, ends): &FirstPass,
        floor: f64,
    ) -> Timeline {
        let mut t = Timeline::default();
        let mut state: HashMap<u32, ThreadState> = HashMap::new();
        // A new thread's tracer time from its creator, when the creator returned first.
        let mut inherited: HashMap<u32, f64> = HashMap::new();
        for &(tid, at, ev) in events {
            if tracers.contains(&tid) {
                continue;
            }
            let joined = match ev {
                Event::In => joiner(&state, ends, tid, at),
                _ => None,
            };
            let s = state
                .entry(tid)
                .or_insert_with(|| ThreadState::new(inherited.remove(&tid).unwrap_or(0.0)));
            match ev {
                Event::Waking(target) => {
                    if s.in_call.is_none() && s.woke_at.is_none() {
                        s.woke_at = Some(at);
                    }
                    let waker = s.tracer;
                    if let Some(o) = state.get_mut(&target).filter(|o| target != tid && o.asleep.is_some()) {
                        o.woken = Some((at, waker));
                    }
                    continue;
                }
                Event::Leaving(state) => s.leaving = Some(state),
                Event::Out => s.off_cpu(at, floor),
                Event::In => s.on_cpu(at, joined),
                Event::Enter(nr) => {
                    // From the switch in after an entry stop to `sys_enter`: the tracer's way
                    // back into the call, no program code in it.
                    if let Last::InAfterStop { at: i, entry: true } = s.last {
                        s.held(at - i);
                    }
                    s.resumed_at = None;
                    let calls = t.threads.entry(tid).or_default();
                    let stopped = matches!(s.last, Last::InAfterStop { .. });
                    s.open = (stopped && traced.contains(&nr)).then(|| {
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
                    s.resumed_at = None;
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
            if let Some(s) = state.get_mut(&tid) {
                if !matches!(ev, Event::Leaving(_)) {
                    s.woke_at = None;
                }
            }
        }
        let shortest = state.values().map(|s| s.shortest).fold(f64::INFINITY, f64::min);
        t.floor_s = if shortest.is_finite() { shortest } else { 0.0 };
        t.own = state.into_iter().map(|(tid, s)| (tid, s.own)).collect();
        t
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

/// How [`align`] went.
#[derive(Clone, Debug, PartialEq)]
pub struct Aligned {
    /// Calls given the kernel's times.
    pub calls: usize,
    /// The tracer's time over all threads, seconds.
    pub tracer_s: f64,
    /// The floor of the tracer's paths between calls ([`Timeline::floor_s`]), seconds.
    pub floor_s: f64,
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
        floor_s: timeline.floor_s,
    })
}

#[cfg(test)]
mod tests;
