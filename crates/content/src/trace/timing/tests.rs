use super::*;

fn fixture(name: &str) -> String {
    let p = format!("{}/../../tests/fixtures/replay/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// `sh -c 'cat /etc/hostname > …/out & ls … > /dev/null; wait'` recorded here under perf and
/// `strace -n` together (perf's lines of the three traced processes kept).
fn recorded() -> (Vec<Syscall>, Timeline) {
    let calls = crate::parsers::strace::parse(&fixture("strace-6.1-n-sh-fork.txt")).unwrap();
    let timeline = Timeline::parse(&fixture("perf-6.1-script-sh-fork.txt"), &numbers(&calls)).unwrap();
    (calls, timeline)
}

fn numbers(calls: &[Syscall]) -> std::collections::HashSet<u32> {
    calls.iter().filter_map(|c| c.nr).collect()
}

/// The offset between the clocks for the fixture: strace's start of the first call less the
/// kernel's (the test needs only a fixed one).
fn offset(calls: &[Syscall], t: &Timeline) -> f64 {
    let first = &calls[0];
    calls[0].start - t.threads[&first.tid][0].enter
}

#[test]
fn every_printed_call_is_found_with_its_number_and_keeps_its_threads_order() {
    let (mut calls, t) = recorded();
    let before = calls.clone();
    let off = offset(&calls, &t);
    let a = align(&mut calls, &t, off).expect("aligned");
    assert_eq!(a.calls, before.len());
    assert!(a.tracer_s > 0.0, "{a:?}");
    for tid in [23396u32, 23397, 23398] {
        let names = |v: &[Syscall]| {
            v.iter()
                .filter(|c| c.tid == tid)
                .map(|c| c.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&calls), names(&before), "thread {tid}: order changed");
        let mine: Vec<&Syscall> = calls.iter().filter(|c| c.tid == tid).collect();
        for w in mine.windows(2) {
            // Per thread: calls follow one another, and the tracer's time only grows.
            assert!(
                w[1].start >= w[0].start + w[0].duration - 1e-9,
                "{:?} then {:?}",
                w[0],
                w[1]
            );
            assert!(w[1].tracer >= w[0].tracer, "{:?} then {:?}", w[0], w[1]);
        }
    }
    // The kernel's time in a call has no tracer in it: never more than strace's `-T`.
    for (c, b) in calls.iter().zip(&before) {
        if b.duration > 0.0 && c.name == b.name && c.tid == b.tid {
            assert!(
                c.duration <= b.duration + 2e-6,
                "{} {} > {}",
                c.name,
                c.duration,
                b.duration
            );
        }
    }
    // The tracer's time is most of the traced run here: every call stops twice.
    let wall = before.last().unwrap().start - before[0].start;
    assert!(a.tracer_s > 0.3 * wall, "tracer {} of {wall} s", a.tracer_s);
}

#[test]
fn a_child_starts_from_its_creators_tracer_time() {
    let (mut calls, t) = recorded();
    let off = offset(&calls, &t);
    align(&mut calls, &t, off).unwrap();
    // sh forks the two children: the first call of each comes after sh's tracer time at the
    // fork, so it carries at least that much.
    let first = |tid: u32| calls.iter().find(|c| c.tid == tid).unwrap().clone();
    let fork_time = |child: u32| {
        calls
            .iter()
            .filter(|c| c.tid == 23396 && c.start < first(child).start)
            .filter_map(|c| c.tracer)
            .fold(0.0, f64::max)
    };
    for child in [23397u32, 23398] {
        let c = first(child);
        assert!(
            c.tracer.unwrap() >= fork_time(child),
            "{child}: {c:?} against {}",
            fork_time(child)
        );
        assert!(t.own[&child] > 0.0);
        assert!(t.own[&child] < c.tracer.unwrap() + t.own[&child]);
    }
}

#[test]
fn a_missing_kernel_record_or_a_lost_event_is_refused_and_leaves_the_calls_alone() {
    let (calls, _) = recorded();
    // One stopped openat of the cat process taken out of perf's record: its line in strace's
    // output is not found, and nothing is rewritten.
    let text = fixture("perf-6.1-script-sh-fork.txt");
    let victim = text
        .lines()
        .position(|l| l.trim_start().starts_with("23397 ") && l.contains("sys_enter: NR 257 "))
        .expect("an openat of the cat process");
    let cut: Vec<&str> = text
        .lines()
        .enumerate()
        .filter(|(i, _)| *i != victim)
        .map(|(_, l)| l)
        .collect();
    let broken = Timeline::parse(&cut.join("\n"), &numbers(&calls)).unwrap();
    let mut mine = calls.clone();
    let e = align(&mut mine, &broken, 0.0).unwrap_err().to_string();
    assert!(
        e.contains("openat of thread 23397") || e.contains("of thread 23397"),
        "{e}"
    );
    assert_eq!(mine, calls, "a failed alignment changes nothing");
    // Without -n's numbers there is nothing to match.
    let mut plain = calls.clone();
    plain[3].nr = None;
    let n = numbers(&calls);
    assert!(align(&mut plain, &Timeline::parse(&text, &n).unwrap(), 0.0)
        .unwrap_err()
        .to_string()
        .contains("no system call number"));
    // A record that lost events is not used.
    let lost = format!("{text}\n 23396 11700.000000: PERF_RECORD_LOST lost 12\n");
    assert!(Timeline::parse(&lost, &n)
        .unwrap_err()
        .to_string()
        .contains("perf lost events"));
    assert!(Timeline::parse("", &n).is_err());
    assert!(Timeline::parse("hello world", &n).is_err());
}

#[test]
fn the_tracer_time_of_a_thread_is_its_stops_and_the_exit_paths_into_them() {
    // A call stopped at entry (OUT in state t, IN), run, returned, then stopped at exit.
    let text = "\
 7 1.000000:     sched:sched_switch: prev_comm=p prev_pid=7 prev_prio=120 prev_state=t ==> next_comm=strace next_pid=6 next_prio=120
 7 1.000000: PERF_RECORD_SWITCH OUT
 7 1.000100: PERF_RECORD_SWITCH IN
 7 1.000101: raw_syscalls:sys_enter: NR 257 (ffffff9c, 0, 0, 0, 0, 0)
 7 1.000111:  raw_syscalls:sys_exit: NR 257 = 3
 7 1.000131:     sched:sched_switch: prev_comm=p prev_pid=7 prev_prio=120 prev_state=t ==> next_comm=strace next_pid=6 next_prio=120
 7 1.000131: PERF_RECORD_SWITCH OUT
 7 1.000231: PERF_RECORD_SWITCH IN
 7 1.000300: raw_syscalls:sys_enter: NR 1 (1, 0, 0, 0, 0, 0)
 7 1.000301:  raw_syscalls:sys_exit: NR 1 = 1
 7 1.000350:     sched:sched_switch: prev_comm=p prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=x next_pid=9 next_prio=120
 7 1.000350: PERF_RECORD_SWITCH OUT
 7 1.000450: PERF_RECORD_SWITCH IN
 7 1.000455:     sched:sched_waking: comm=strace pid=6 prio=120 target_cpu=000
 7 1.000460:     sched:sched_switch: prev_comm=p prev_pid=7 prev_prio=120 prev_state=t ==> next_comm=strace next_pid=6 next_prio=120
 7 1.000460: PERF_RECORD_SWITCH OUT
 7 1.000500: PERF_RECORD_SWITCH IN
 7 1.000501: raw_syscalls:sys_enter: NR 0 (3, 0, 0, 0, 0, 0)
 7 1.000511:  raw_syscalls:sys_exit: NR 0 = 5
";
    let t = Timeline::parse(text, &[257, 0].into_iter().collect()).unwrap();
    let k = &t.threads[&7];
    // The write (NR 1) did not stop at entry: it is not one of strace's lines.
    assert_eq!(k.iter().map(|c| c.nr).collect::<Vec<_>>(), [257, 0]);
    // The stop (100 µs) and the way from the switch in to `sys_enter` (1 µs).
    assert!((k[0].tracer - 101e-6).abs() < 1e-9, "{k:?}");
    assert!((k[0].exit.unwrap() - k[0].enter - 10e-6).abs() < 1e-9);
    // Before the read: the first stop and way in (101 µs), the openat's exit path and stop
    // (20 + 100 µs), the read's entry path from its waking of the tracer (5 µs), its stop
    // (40 µs) and way in (1 µs); the sleep in state S (100 µs) is the program's (no thread
    // woke it).
    assert!((k[1].tracer - 267e-6).abs() < 1e-9, "{k:?}");
    assert!((t.own[&7] - 267e-6).abs() < 1e-9, "{t:?}");
    // No exit stop was followed by an entry stop with nothing between: no floor.
    assert_eq!(t.floor_s, 0.0);
    // Without the waking, the entry path is not seen: 262 µs.
    let unseen: String = text
        .lines()
        .filter(|l| !l.contains("sched_waking"))
        .map(|l| format!("{l}\n"))
        .collect();
    let t = Timeline::parse(&unseen, &[257, 0].into_iter().collect()).unwrap();
    assert!((t.threads[&7][1].tracer - 262e-6).abs() < 1e-9, "{t:?}");
}

/// Seen in a recording of `git checkout` here: the thread is preempted (state `R`) between its
/// entry stop and the call's `sys_enter`. The call is still one strace stopped; a sleep (state
/// `S`) in the same place would end that (it is the program's).
#[test]
fn a_preemption_between_the_stop_and_the_call_keeps_the_call_a_stopped_one() {
    let text = "\
 7 1.000000:     sched:sched_switch: prev_comm=git prev_pid=7 prev_prio=120 prev_state=t ==> next_comm=strace next_pid=6 next_prio=120
 7 1.000000: PERF_RECORD_SWITCH OUT
 7 1.000100: PERF_RECORD_SWITCH IN
 7 1.000150:     sched:sched_switch: prev_comm=git prev_pid=7 prev_prio=120 prev_state=R ==> next_comm=kworker/1:12 next_pid=3089 next_prio=120
 7 1.000151: PERF_RECORD_SWITCH OUT preempt
 7 1.000170: PERF_RECORD_SWITCH IN
 7 1.000171: raw_syscalls:sys_enter: NR 3 (3, 0, a340, 0, 0, 0)
 7 1.000174:  raw_syscalls:sys_exit: NR 3 = 0
";
    let t = Timeline::parse(text, &[3].into_iter().collect()).unwrap();
    assert_eq!(t.threads[&7].len(), 1, "{t:?}");
    // The stop, and the way into the call with the preemption in it (71 µs): no program code.
    assert!((t.threads[&7][0].tracer - 171e-6).abs() < 1e-9, "{t:?}");
    let slept = text.replace("prev_state=R", "prev_state=S");
    let t = Timeline::parse(&slept, &[3].into_iter().collect()).unwrap();
    assert!(t.threads.get(&7).is_none_or(|k| k.is_empty()), "{t:?}");
}

/// A thread asleep (a join) while another was stopped by the tracer and ended: the last thread
/// that ended within the sleep woke it, so it takes that one's tracer time (here its 300 µs
/// stop, within its 600 µs sleep).
#[test]
fn a_join_takes_the_tracer_time_of_the_thread_that_ended() {
    let text = "\
 7 0.999900:     sched:sched_switch: prev_comm=m prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=w next_pid=8 next_prio=120
 7 0.999900: PERF_RECORD_SWITCH OUT
 8 1.000000:     sched:sched_switch: prev_comm=w prev_pid=8 prev_prio=120 prev_state=t ==> next_comm=strace next_pid=6 next_prio=120
 8 1.000000: PERF_RECORD_SWITCH OUT
 8 1.000300: PERF_RECORD_SWITCH IN
 8 1.000301: raw_syscalls:sys_enter: NR 3 (3, 0, 0, 0, 0, 0)
 8 1.000302:  raw_syscalls:sys_exit: NR 3 = 0
 7 1.000500: PERF_RECORD_SWITCH IN
 7 1.000510:     sched:sched_switch: prev_comm=m prev_pid=7 prev_prio=120 prev_state=t ==> next_comm=strace next_pid=6 next_prio=120
 7 1.000510: PERF_RECORD_SWITCH OUT
 7 1.000520: PERF_RECORD_SWITCH IN
 7 1.000521: raw_syscalls:sys_enter: NR 3 (4, 0, 0, 0, 0, 0)
 7 1.000522:  raw_syscalls:sys_exit: NR 3 = 0
";
    let t = Timeline::parse(text, &[3].into_iter().collect()).unwrap();
    // The other's 301 µs (its stop and way into its call), its own stop and way in (11 µs).
    assert!((t.threads[&7][0].tracer - 312e-6).abs() < 1e-9, "{t:?}");
    assert!((t.threads[&8][0].tracer - 301e-6).abs() < 1e-9, "{t:?}");
    assert!((t.own[&7] - 11e-6).abs() < 1e-9, "its own stops only: {t:?}");
    // Asleep in state D (I/O), no waker recorded: a thread that ended meanwhile did not wake it.
    let io = text.replace(
        "prev_pid=7 prev_prio=120 prev_state=S",
        "prev_pid=7 prev_prio=120 prev_state=D",
    );
    let t = Timeline::parse(&io, &[3].into_iter().collect()).unwrap();
    assert!((t.threads[&7][0].tracer - 11e-6).abs() < 1e-9, "{t:?}");
}

/// The thread that woke a sleeper, as perf recorded it: the sleeper takes the waker's tracer
/// time at the waking — never more than its sleep, never less than its own; a sleep in state `D`
/// (I/O) is no join; a sleep inside a printed call (a `wait4`, a pipe's `read`) keeps its time;
/// the tracer's own threads (they call `ptrace`) wake no one.
#[test]
fn a_sleeper_takes_its_wakers_tracer_time_and_only_a_programs_thread_wakes() {
    // 7 sleeps from 1.0; 8 is stopped 200 µs, then wakes 7 at 1.0004 and runs on; 7 is back
    // at 1.0005 and makes a call (its own stop 10 µs).
    let text = |state: &str, waker: u32| {
        format!(
            "\
 7 1.000000:     sched:sched_switch: prev_comm=m prev_pid=7 prev_prio=120 prev_state={state} ==> next_comm=w next_pid=8 next_prio=120
 7 1.000000: PERF_RECORD_SWITCH OUT
 9 1.000001: raw_syscalls:sys_enter: NR 101 (18, 8, 0, 0, 0, 0)
 8 1.000100:     sched:sched_switch: prev_comm=w prev_pid=8 prev_prio=120 prev_state=t ==> next_comm=strace next_pid=9 next_prio=120
 8 1.000100: PERF_RECORD_SWITCH OUT
 8 1.000300: PERF_RECORD_SWITCH IN
 8 1.000301: raw_syscalls:sys_enter: NR 202 (7, 1, 1, 0, 0, 0)
 {waker} 1.000400:     sched:sched_waking: comm=m pid=7 prio=120 target_cpu=000
 8 1.000401:  raw_syscalls:sys_exit: NR 202 = 1
 7 1.000500: PERF_RECORD_SWITCH IN
 7 1.000510:     sched:sched_switch: prev_comm=m prev_pid=7 prev_prio=120 prev_state=t ==> next_comm=strace next_pid=9 next_prio=120
 7 1.000510: PERF_RECORD_SWITCH OUT
 7 1.000520: PERF_RECORD_SWITCH IN
 7 1.000521: raw_syscalls:sys_enter: NR 3 (4, 0, 0, 0, 0, 0)
 7 1.000522:  raw_syscalls:sys_exit: NR 3 = 0
 8 1.000600: raw_syscalls:sys_enter: NR 3 (5, 0, 0, 0, 0, 0)
"
        )
    };
    let parse = |t: &str| Timeline::parse(t, &[3].into_iter().collect()).unwrap();
    let first = |t: &Timeline| t.threads[&7][0].tracer;
    // Woken by 8: 8's 201 µs (its stop and way into its call), and 7's own 11 µs.
    let t = parse(&text("S", 8));
    assert!((first(&t) - 212e-6).abs() < 1e-9, "{t:?}");
    assert!((t.own[&7] - 11e-6).abs() < 1e-9, "{t:?}");
    // In state D the recorded waker counts as well.
    assert!((first(&parse(&text("D", 8))) - 212e-6).abs() < 1e-9);
    // Woken by the tracer's thread (it called ptrace) or by nothing recorded: 8 did not end
    // within the sleep, so the sleep is the program's.
    assert!((first(&parse(&text("S", 9))) - 11e-6).abs() < 1e-9);
    let unwoken: String = text("S", 8)
        .lines()
        .filter(|l| !l.contains("sched_waking"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!((first(&parse(&unwoken)) - 11e-6).abs() < 1e-9);
    // Never more than the sleep: a waker that had 901 µs wakes a 400 µs sleep.
    let long = text("S", 8).replace(" 8 1.000100:", " 8 0.999400:");
    assert!(
        (first(&parse(&long)) - (400e-6 + 11e-6)).abs() < 1e-9,
        "{:?}",
        parse(&long)
    );
    // A sleep inside a call strace printed (7 asleep in a stopped read): the replay waits as
    // the program did, and the sleep keeps its time.
    let in_call = format!(
        " 7 0.999000:     sched:sched_switch: prev_comm=m prev_pid=7 prev_prio=120 prev_state=t ==> next_comm=strace next_pid=9 next_prio=120\n 7 0.999000: PERF_RECORD_SWITCH OUT\n 7 0.999010: PERF_RECORD_SWITCH IN\n 7 0.999011: raw_syscalls:sys_enter: NR 0 (3, 0, 0, 0, 0, 0)\n{}",
        text("S", 8)
    )
    .replace(" 7 1.000500: PERF_RECORD_SWITCH IN\n", " 7 1.000500: PERF_RECORD_SWITCH IN\n 7 1.000505:  raw_syscalls:sys_exit: NR 0 = 4\n");
    let t = Timeline::parse(&in_call, &[0, 3].into_iter().collect()).unwrap();
    let read_then_call = &t.threads[&7];
    assert_eq!(read_then_call.len(), 2, "{t:?}");
    // Its first stop and way in (11 µs), the exit path and stop after the read (5 + 10 µs): no
    // 200 µs.
    assert!((read_then_call[1].tracer - 26e-6).abs() < 1e-9, "{t:?}");
}

/// Between an exit stop and the next call's entry stop, the thread runs the tracer's way back
/// to user space, the program's code, and the way into the next call up to its waking of the
/// tracer: the shortest such interval of the recording (here 3 of 3, 5 and 9 µs) is the floor
/// of the tracer's paths, counted as the tracer's in each; an interval with a call in it (the
/// unprinted write) is none.
#[test]
fn the_floor_of_the_paths_between_calls_is_the_shortest_and_counts_in_each() {
    let stop = |t: f64, d: f64| {
        format!(
            " 7 {t:.6}:     sched:sched_switch: prev_comm=p prev_pid=7 prev_prio=120 prev_state=t ==> next_comm=strace next_pid=6 next_prio=120\n 7 {t:.6}: PERF_RECORD_SWITCH OUT\n 7 {:.6}: PERF_RECORD_SWITCH IN\n",
            t + d
        )
    };
    let wake = |t: f64| format!(" 7 {t:.6}:     sched:sched_waking: comm=strace pid=6 prio=120 target_cpu=000\n");
    let call = |t: f64| {
        format!(
            " 7 {t:.6}: raw_syscalls:sys_enter: NR 0 (3, 0, 0, 0, 0, 0)\n 7 {:.6}:  raw_syscalls:sys_exit: NR 0 = 1\n",
            t + 1e-6
        )
    };
    let unprinted = |t: f64| {
        format!(
            " 7 {t:.6}: raw_syscalls:sys_enter: NR 1 (1, 0, 0, 0, 0, 0)\n 7 {:.6}:  raw_syscalls:sys_exit: NR 1 = 1\n",
            t + 1e-6
        )
    };
    // Call 1 at 1.000010 (its exit 1.000011); exit stop 1.000012–1.000022; the waking 3 µs
    // later, the entry stop to 1.000035, call 2 at 1.000036; exit stop 1.000038–1.000047, the
    // waking 5 µs later; call 3 at 1.000063; exit stop 1.000065–1.000069, an unprinted write,
    // the waking at 1.000078; call 4 at 1.000089.
    let mut text = stop(1.0, 9e-6) + &call(1.000010) + &stop(1.000012, 10e-6);
    text += &(wake(1.000025) + &stop(1.000026, 9e-6) + &call(1.000036) + &stop(1.000038, 9e-6));
    text += &(wake(1.000052) + &stop(1.000053, 9e-6) + &call(1.000063) + &stop(1.000065, 4e-6));
    text += &(unprinted(1.000070) + &wake(1.000078) + &stop(1.000079, 9e-6) + &call(1.000089));
    let t = Timeline::parse(&text, &[0].into_iter().collect()).unwrap();
    assert!((t.floor_s - 3e-6).abs() < 1e-9, "{t:?}");
    let k = &t.threads[&7];
    assert_eq!(k.len(), 4, "{t:?}");
    // Call 2: call 1's stop and way in (10 µs), its exit path and stop (1 + 10), the floor of
    // the 3 µs interval (3: none of it the program's), the waking to the switch out (1), the
    // stop and way in (10).
    assert!((k[1].tracer - 35e-6).abs() < 1e-9, "{k:?}");
    // Call 3: + exit path and stop (1 + 9), the floor of the 5 µs interval (3: the program
    // keeps 2), waking to out (1), stop and way in (10).
    assert!((k[2].tracer - 59e-6).abs() < 1e-9, "{k:?}");
    // Call 4: + exit path and stop (1 + 4), no floor across the write, waking to out (1), stop
    // and way in (10).
    assert!((k[3].tracer - 75e-6).abs() < 1e-9, "{k:?}");
    // A pass without the floor leaves those intervals to the program: 6 µs less by call 3.
    let events: Vec<_> = text.lines().filter_map(|l| line(l).unwrap()).collect();
    let first = first_pass(&events).unwrap();
    let without = Timeline::pass(&events, &[0].into_iter().collect(), &first, 0.0);
    assert!((without.threads[&7][2].tracer - 53e-6).abs() < 1e-9, "{without:?}");
}
