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
    assert!((k[0].tracer - 100e-6).abs() < 1e-9, "{k:?}");
    assert!((k[0].exit.unwrap() - k[0].enter - 10e-6).abs() < 1e-9);
    // Before the read: the first stop (100 µs), the openat's exit path and stop (20 + 100 µs),
    // and the read's entry stop (40 µs); the sleep in state S (100 µs) is the program's.
    assert!((k[1].tracer - 260e-6).abs() < 1e-9, "{k:?}");
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
    assert!((t.threads[&7][0].tracer - 100e-6).abs() < 1e-9);
    let slept = text.replace("prev_state=R", "prev_state=S");
    let t = Timeline::parse(&slept, &[3].into_iter().collect()).unwrap();
    assert!(t.threads.get(&7).is_none_or(|k| k.is_empty()), "{t:?}");
}

/// A thread asleep (a join) while another was stopped by the tracer: its wait counts as tracer
/// time for as long as the other was stopped within it (here 300 of its 600 µs).
#[test]
fn a_sleep_stretched_by_another_threads_stops_counts_as_tracer_time() {
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
    // 300 µs of the other's stop in the sleep, 10 µs of its own stop.
    assert!((t.threads[&7][0].tracer - 310e-6).abs() < 1e-9, "{t:?}");
    assert!((t.threads[&8][0].tracer - 300e-6).abs() < 1e-9, "{t:?}");
    assert!((t.own[&7] - 10e-6).abs() < 1e-9, "its own stops only: {t:?}");
}
