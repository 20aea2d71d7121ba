use super::*;
use crate::workloads::test_util::metric;
use std::sync::atomic::AtomicBool;

/// A recording made here by strace and kept (`tests/fixtures/replay/NAME`), resolved as
/// `fsbench record` resolves it.
fn fixture_trace(name: &str) -> Trace {
    let p = format!("{}/../../tests/fixtures/replay/{name}", env!("CARGO_MANIFEST_DIR"));
    Trace::from_strace_text(
        &std::fs::read_to_string(&p).unwrap(),
        Path::new("/tmp/fsbench-strace-root"),
        name,
    )
    .unwrap()
}

/// Whether the plan of `t` has the call `waiter` wait for the call `on` (or a later call of
/// its thread).
fn waits_on(t: &Trace, waiter: usize, on: usize) -> bool {
    let p = plan::compile(t);
    let ops = p.threads.iter().flatten().find(|o| o.call == waiter as u32).unwrap();
    let (tid_on, seq_on) = p
        .threads
        .iter()
        .enumerate()
        .find_map(|(ti, ops)| {
            ops.iter()
                .position(|o| o.call == on as u32)
                .map(|s| (ti as u32, s as u32))
        })
        .unwrap();
    p.deps[ops.deps.0 as usize..(ops.deps.0 + ops.deps.1) as usize]
        .iter()
        .any(|&(dt, ds)| dt == tid_on && ds >= seq_on)
}

/// The index of `t`'s rename whose target is `path`.
fn rename_making(t: &Trace, path: &str) -> usize {
    t.calls
        .iter()
        .position(|c| c.kind == Kind::Rename && c.path2.as_deref() == Some(path))
        .unwrap_or_else(|| panic!("no rename makes {path}"))
}

fn spec_for(t: &Trace, dir: &Path) -> ReplaySpec {
    let p = dir.join("t.trace");
    t.write(&p).unwrap();
    ReplaySpec {
        trace: p,
        ..ReplaySpec::default()
    }
}

#[test]
fn the_threaded_recording_replays_every_call_with_none_divergent() {
    let tr = tempfile::tempdir().unwrap();
    let t = fixture_trace("strace-6.1-threads.txt");
    let spec = spec_for(&t, tr.path());
    let run = tempfile::tempdir().unwrap();
    let s = crate::run_quiet(&spec, run.path(), &AtomicBool::new(false)).unwrap();
    let p = &s.phases[0];
    assert_eq!(metric(p, "divergent"), 0.0, "{:?}", s.notes);
    assert_eq!(metric(p, "count_gap_pct"), 0.0, "{:?}", s.notes);
    assert_eq!(metric(p, "calls_fsync"), 20.0);
    assert_eq!(metric(p, "calls_rename"), 40.0);
    assert_eq!(metric(p, "syncs"), 20.0);
    assert_eq!(metric(p, "write_mib"), 20.0 * 65536.0 / 1048576.0);
    assert_eq!(metric(p, "read_mib"), 20.0 * 65536.0 / 1048576.0);
    assert!(s.notes[0].contains("fidelity check passed"), "{:?}", s.notes);
    assert!(crate::dir_is_empty(run.path()));
}

#[test]
fn a_removed_dependency_makes_the_replay_diverge_and_the_check_fail() {
    let tr = tempfile::tempdir().unwrap();
    let mut t = fixture_trace("strace-6.1-threads.txt");
    // The consumer's open of work/f00 moved before the producer's create of work/tmp00: it
    // now starts first, so nothing orders it after the rename that makes work/f00.
    let open = t
        .calls
        .iter()
        .position(|c| c.kind == Kind::Open && c.path.as_deref() == Some("work/f00"))
        .unwrap();
    let create = t
        .calls
        .iter()
        .position(|c| c.kind == Kind::Open && c.path.as_deref() == Some("work/tmp00"))
        .unwrap();
    let mut moved = t.calls.remove(open);
    moved.start_s = t.calls[create].start_s - 2.0 * plan::STAMP_SKEW_S;
    t.calls.insert(create, moved);
    // Handles are numbered in open order.
    renumber(&mut t);
    let spec = spec_for(&t, tr.path());
    let run = tempfile::tempdir().unwrap();
    let s = crate::run_quiet(&spec, run.path(), &AtomicBool::new(false)).unwrap();
    let p = &s.phases[0];
    assert!(metric(p, "divergent") >= 1.0, "{:?}", s.notes);
    assert!(s.notes[0].contains("fidelity check FAILED"), "{:?}", s.notes);
    assert!(s.notes[0].contains("first: openat work/f00"), "{:?}", s.notes);
}

/// Numbers the handles again in the order of the opens that make them.
fn renumber(t: &mut Trace) {
    let mut map = std::collections::HashMap::new();
    for c in &t.calls {
        if c.kind == Kind::Open && c.errno.is_none() {
            let n = map.len() as u32;
            map.insert(c.handle.unwrap(), n);
        }
    }
    for c in &mut t.calls {
        c.handle = c.handle.map(|h| map[&h]);
        c.handle2 = c.handle2.map(|h| map[&h]);
    }
}

#[test]
fn the_tree_is_rebuilt_with_sizes_and_modes_and_reads_match() {
    let tr = tempfile::tempdir().unwrap();
    let t = fixture_trace("strace-6.1-sh-fork.txt");
    // The shell's trace reads in.txt (5 bytes), which existed before the run.
    let mut t = t;
    t.tree = vec![crate::trace::Entry {
        path: "in.txt".into(),
        kind: EntryKind::File,
        size: 5,
        mode: 0o644,
        target: None,
    }];
    let spec = spec_for(&t, tr.path());
    let run = tempfile::tempdir().unwrap();
    let s = crate::run_quiet(&spec, run.path(), &AtomicBool::new(false)).unwrap();
    let p = &s.phases[0];
    assert_eq!(metric(p, "divergent"), 0.0, "{:?}", s.notes);
    assert_eq!(metric(p, "calls_copy_file_range"), 2.0);
    // Without the tree, the open of in.txt fails and its copies cannot be issued.
    t.tree.clear();
    let spec = spec_for(&t, tr.path());
    let s = crate::run_quiet(&spec, run.path(), &AtomicBool::new(false)).unwrap();
    assert!(metric(&s.phases[0], "divergent") >= 3.0, "{:?}", s.notes);
}

/// The longest thread's recorded gaps, seconds: what a timed replay sleeps at least.
fn slept(t: &Trace) -> f64 {
    let p = plan::compile(t);
    p.threads
        .iter()
        .map(|ops| ops.iter().map(|o| o.gap_ns).sum::<u64>())
        .max()
        .unwrap_or(0) as f64
        / 1e9
}

#[test]
fn timed_mode_keeps_the_recorded_gaps() {
    let tr = tempfile::tempdir().unwrap();
    let mut t = fixture_trace("strace-6.1-threads.txt");
    let run = tempfile::tempdir().unwrap();
    let replay = |t: &Trace, mode| {
        let spec = ReplaySpec {
            mode,
            ..spec_for(t, tr.path())
        };
        let s = crate::run_quiet(&spec, run.path(), &AtomicBool::new(false)).unwrap();
        s.phases[0].wall.as_secs_f64()
    };
    let gaps = slept(&t);
    assert!(gaps > 0.005, "{gaps}");
    assert!(replay(&t, ReplayMode::Timed) >= gaps);
    // Spread the calls over 0.5 s more: the timed replay sleeps longer, the closed one does
    // not (not all 0.5 s on one thread: a call that waited for another thread's is timed from
    // that call's end).
    let last = t.calls.last().unwrap().start_s;
    for c in &mut t.calls {
        c.start_s *= 0.5 / last + 1.0;
    }
    let stretched = slept(&t);
    assert!(stretched >= gaps + 0.25, "{stretched} {gaps}");
    assert!(replay(&t, ReplayMode::Timed) >= stretched);
    assert!(replay(&t, ReplayMode::Closed) < stretched);
}

#[test]
fn a_missing_or_damaged_trace_is_invalid_and_an_interrupt_leaves_nothing() {
    let e = ReplaySpec::default().validate().unwrap_err().0;
    assert!(e.contains("trace = "), "{e}");
    let absent = ReplaySpec {
        trace: "/nonexistent/x.trace".into(),
        ..ReplaySpec::default()
    };
    assert!(absent.validate().is_ok());
    assert!(absent
        .availability()
        .unwrap_err()
        .0
        .contains("fsbench record -o /nonexistent/x.trace"));
    let tr = tempfile::tempdir().unwrap();
    let p = tr.path().join("bad.trace");
    std::fs::write(&p, "hello\n").unwrap();
    let spec = ReplaySpec {
        trace: p,
        ..ReplaySpec::default()
    };
    assert!(spec.validate().unwrap_err().0.contains("not an fsbench trace"));
    let t = fixture_trace("strace-6.1-threads.txt");
    crate::workloads::test_util::assert_interrupted_leaves_nothing(&spec_for(&t, tr.path()));
}

#[test]
fn divergence_compares_what_is_the_same_on_every_filesystem() {
    let op = |kind, expect| plan::Op {
        kind,
        path: plan::NONE,
        path2: plan::NONE,
        handle: plan::NONE,
        handle2: plan::NONE,
        flags: 0,
        mode: 0,
        offset: 0,
        len: 0,
        last: false,
        access: false,
        expect,
        gap_ns: 0,
        deps: (0, 0),
        call: 0,
    };
    use exec::diverges;
    use plan::Expect;
    assert!(!diverges(&op(Kind::Stat, Expect::Err(libc::ENOENT)), Err(libc::ENOENT)));
    assert!(diverges(&op(Kind::Stat, Expect::Err(libc::ENOENT)), Ok(0)));
    assert!(diverges(&op(Kind::Open, Expect::Ok(0)), Err(libc::EEXIST)));
    assert!(diverges(&op(Kind::Read, Expect::Ok(6)), Ok(5)));
    assert!(!diverges(&op(Kind::Getdents, Expect::Ok(96)), Ok(120)));
    assert!(diverges(&op(Kind::Getdents, Expect::Ok(0)), Ok(120)));
    assert!(!diverges(
        &op(Kind::Stat, Expect::Err(plan::ANY_ERROR)),
        Err(libc::EPERM)
    ));
    assert!(!diverges(&op(Kind::Fsync, Expect::Unknown), Err(libc::EIO)));
    assert_eq!(plan::errno_of("ENOTEMPTY"), libc::ENOTEMPTY);
    assert_eq!(
        plan::open_flags("O_WRONLY|O_CREAT|O_BOGUS"),
        libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC
    );
    let mut issued = [0u64; KINDS];
    let mut expected = [0u64; KINDS];
    (issued[0], expected[0]) = (99, 100);
    assert_eq!(count_gap_pct(&issued, &expected), 1.0);
    issued[1] = 1;
    assert_eq!(count_gap_pct(&issued, &expected), 100.0);
}

/// A lookup that overlapped another thread's change of its path is ordered by its result: the
/// fixture's stat of work/f00 that started before the rename making it and found it comes
/// after the rename; the same stat made to fail with ENOENT (as a recording here did) comes
/// before it. Both replay with no divergent call.
#[test]
fn overlapping_lookups_are_ordered_by_what_they_found() {
    let t = fixture_trace("strace-6.1-threads.txt");
    let rename = rename_making(&t, "work/f00");
    let r = &t.calls[rename];
    let overlapping = t
        .calls
        .iter()
        .position(|c| {
            c.kind == Kind::Stat
                && c.path.as_deref() == Some("work/f00")
                && c.start_s < r.start_s + r.dur_s
                && r.start_s < c.start_s + c.dur_s
        })
        .expect("the fixture's stat overlapping the rename");
    assert!(t.calls[overlapping].errno.is_none(), "it found the file");
    let mut absent = t.clone();
    absent.calls[overlapping].errno = Some("ENOENT".into());
    absent.calls[overlapping].result = -1;
    assert!(
        waits_on(&t, overlapping, rename),
        "found: the stat waits for the rename"
    );
    assert!(!waits_on(&t, rename, overlapping));
    assert!(
        waits_on(&absent, rename, overlapping),
        "ENOENT: the rename waits for the stat"
    );
    assert!(!waits_on(&absent, overlapping, rename));
    let tr = tempfile::tempdir().unwrap();
    let run = tempfile::tempdir().unwrap();
    for t in [t, absent] {
        let s = crate::run_quiet(&spec_for(&t, tr.path()), run.path(), &AtomicBool::new(false)).unwrap();
        assert_eq!(metric(&s.phases[0], "divergent"), 0.0, "{:?}", s.notes);
    }
}

/// A lookup whose recorded result contradicts the completion order is ordered by its result,
/// overlap or not. Two recordings made here, kept: in `threads-late-stamp.trace` the
/// consumer's stat of work/f12 got ENOENT yet was stamped 22 µs after the producer's rename
/// making it had ended; in `threads-late-change.trace` the stat of work/f16 found the file
/// though the producer's close and rename were stamped after the stat had ended (strace stamps
/// a call when it handles the stop, and it was handling the other thread's). Ordered by
/// completion, the two did not wait for each other and replays diverged (2 of 2, 2 of 2); now
/// the one the result puts second waits for the other, and five replays of each have no
/// divergent call.
#[test]
fn a_lookup_stamped_on_the_wrong_side_of_a_change_is_ordered_by_its_result() {
    let end = |c: &crate::trace::Call| c.start_s + c.dur_s;
    let tr = tempfile::tempdir().unwrap();
    let run = tempfile::tempdir().unwrap();
    for (fixture, file, found) in [
        ("threads-late-change.trace", "work/f16", true),
        ("threads-late-stamp.trace", "work/f12", false),
    ] {
        let p = format!("{}/../../tests/fixtures/replay/{fixture}", env!("CARGO_MANIFEST_DIR"));
        let t = Trace::read(Path::new(&p)).unwrap();
        let rename = rename_making(&t, file);
        let r = &t.calls[rename];
        let stat = t
            .calls
            .iter()
            .position(|c| {
                c.kind == Kind::Stat
                    && c.path.as_deref() == Some(file)
                    && c.errno.is_none() == found
                    && if found { end(c) < r.start_s } else { c.start_s > end(r) }
            })
            .expect("the recording's stat stamped on the wrong side of the rename");
        let (first, second) = if found { (rename, stat) } else { (stat, rename) };
        assert!(waits_on(&t, second, first), "{fixture}: the second waits for the first");
        assert!(!waits_on(&t, first, second), "{fixture}");
        for _ in 0..5 {
            let s = crate::run_quiet(&spec_for(&t, tr.path()), run.path(), &AtomicBool::new(false)).unwrap();
            assert_eq!(metric(&s.phases[0], "divergent"), 0.0, "{fixture}: {:?}", s.notes);
        }
    }
}

/// A timed replay's gap leaves out the tracer's measured cost of the calls in it and of the two
/// stops around it, never below zero.
#[test]
fn timed_gaps_leave_out_the_tracers_cost() {
    let mut t = fixture_trace("strace-6.1-threads.txt");
    let plain = plan::compile(&t);
    t.header.overhead_s = Some(2e-5);
    let less = plan::compile(&t);
    let mut lowered = 0;
    // A thread's first call after the first thread's also leaves out what that thread had taken
    // out (think_time_takes_out_the_tracer_in_calls_and_before_a_threads_start).
    fn later(th: &[plan::Op]) -> impl Iterator<Item = plan::Op> + '_ {
        th.iter().skip(1).cloned()
    }
    let first = plain.threads[0].first().cloned().into_iter();
    let less_first = less.threads[0].first().cloned().into_iter();
    for (a, b) in first
        .chain(plain.threads.iter().flat_map(|th| later(th)))
        .zip(less_first.chain(less.threads.iter().flat_map(|th| later(th))))
    {
        let c = &t.calls[a.call as usize];
        let cost = (u64::from(c.untraced) + 1) * 20_000;
        // At least the thread's own cost (float rounding: 1 ns); more when another thread's
        // calls fell in the gap (think_time_takes_out_the_tracer_in_calls_and_before_a_threads_start).
        assert!(
            b.gap_ns <= a.gap_ns.saturating_sub(cost) + 1,
            "{c:?}: {} {}",
            a.gap_ns,
            b.gap_ns
        );
        lowered += u32::from(b.gap_ns < a.gap_ns);
    }
    assert!(lowered > 100, "{lowered}");
    assert!(
        t.calls.iter().any(|c| c.untraced > 0),
        "the C library's calls before main's first"
    );
}

/// The recording of `sh -c 'echo a > one; cat one > two; test -e /tmp/fsbench-marks/second;
/// cp two three; stat -c %s three'` made here, with its mark.
fn marked_trace() -> Trace {
    let p = format!(
        "{}/../../tests/fixtures/replay/strace-6.1-sh-marks.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let calls = crate::parsers::strace::parse(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let root = Path::new("/tmp/fsbench-strace-root");
    let r = crate::trace::resolve::Resolver::new(root, root, false)
        .mark_on(Path::new("/tmp/fsbench-marks"))
        .run(&calls);
    let mut t = fixture_trace("strace-6.1-sh-marks.txt");
    (t.calls, t.header.marks, t.header.command) = (r.calls, r.marks, vec!["sh".into()]);
    t
}

fn phase<'a>(s: &'a crate::metric::RawSample, name: &str) -> &'a crate::metric::PhaseResult {
    s.phases.iter().find(|p| p.phase == name).unwrap_or_else(|| {
        panic!(
            "no phase {name}: {:?}",
            s.phases.iter().map(|p| &p.phase).collect::<Vec<_>>()
        )
    })
}

#[test]
fn phases_by_program_and_by_mark_split_the_rows_and_add_up_to_the_whole() {
    let t = marked_trace();
    let tr = tempfile::tempdir().unwrap();
    let whole = spec_for(&t, tr.path());
    let run = tempfile::tempdir().unwrap();
    let one = crate::run_quiet(&whole, run.path(), &AtomicBool::new(false)).unwrap();
    assert_eq!(one.phases.len(), 1);
    let all = metric(phase(&one, REPLAY), "calls_per_s") * metric(phase(&one, REPLAY), "time");
    assert_eq!(metric(phase(&one, REPLAY), "divergent"), 0.0, "{:?}", one.notes);
    for (by, names) in [
        (PhaseBy::Process, vec!["sh", "cat", "cp", "stat"]),
        (PhaseBy::Marks, vec![phases::START, "second"]),
    ] {
        let spec = ReplaySpec {
            phases: by,
            ..whole.clone()
        };
        assert_eq!(spec.phases(), names, "{by:?}");
        let s = crate::run_quiet(&spec, run.path(), &AtomicBool::new(false)).unwrap();
        let got: Vec<&str> = s.phases.iter().map(|p| p.phase.as_str()).collect();
        assert_eq!(got, names, "{by:?}");
        let mut issued = 0.0;
        for p in &s.phases {
            assert_eq!(metric(p, "divergent"), 0.0, "{by:?} {}: {:?}", p.phase, s.notes);
            assert_eq!(metric(p, "count_gap_pct"), 0.0, "{by:?} {}", p.phase);
            issued += metric(p, "calls_per_s") * metric(p, "time");
        }
        assert!((issued - all).abs() < 0.5, "{by:?}: {issued} calls against {all}");
        assert!(
            s.notes.iter().any(|n| n.contains("fidelity check passed")),
            "{:?}",
            s.notes
        );
        assert!(crate::dir_is_empty(run.path()));
    }
    // cat's copy is in its own phase (process) and before the mark (marks); cp's create of
    // three after it.
    let by_proc = ReplaySpec {
        phases: PhaseBy::Process,
        ..whole.clone()
    };
    let s = crate::run_quiet(&by_proc, run.path(), &AtomicBool::new(false)).unwrap();
    assert_eq!(metric(phase(&s, "cat"), "calls_copy_file_range"), 2.0);
    let by_mark = ReplaySpec {
        phases: PhaseBy::Marks,
        ..whole
    };
    let s = crate::run_quiet(&by_mark, run.path(), &AtomicBool::new(false)).unwrap();
    assert_eq!(metric(phase(&s, phases::START), "calls_copy_file_range"), 2.0);
    assert!(metric(phase(&s, "second"), "dir_ops") >= 1.0, "cp creates three");
}

#[test]
fn every_threads_ops_in_a_piece_are_contiguous_and_cover_the_plan_once() {
    let t = marked_trace();
    let plan = plan::compile(&t);
    for by in [PhaseBy::None, PhaseBy::Process, PhaseBy::Marks] {
        let split = phases::split(&t, &plan, by);
        for (th, ops) in plan.threads.iter().enumerate() {
            let mut next = 0;
            for pc in &split.pieces {
                let r = &pc.ranges[th];
                if r.start < r.end {
                    assert_eq!(r.start, next, "{by:?}: thread {th} resumes where it stopped");
                    next = r.end;
                }
            }
            assert_eq!(next, ops.len(), "{by:?}: thread {th} runs every op");
        }
    }
    let split = phases::split(&t, &plan, PhaseBy::Process);
    assert!(split.pieces.len() >= 4, "{:?}", split.pieces.len());
    assert!(split.pieces.iter().all(|p| p.recorded_s >= 0.0));
}

#[test]
fn phases_by_marks_on_a_trace_without_marks_is_refused_saying_how_to_mark() {
    let tr = tempfile::tempdir().unwrap();
    let t = fixture_trace("strace-6.1-threads.txt");
    let spec = ReplaySpec {
        phases: PhaseBy::Marks,
        ..spec_for(&t, tr.path())
    };
    let e = spec.validate().unwrap_err().0;
    assert!(e.contains("no time marks") && e.contains("--mark-on"), "{e}");
    let ok = ReplaySpec {
        phases: PhaseBy::Marks,
        ..spec_for(&marked_trace(), tr.path())
    };
    ok.validate().expect("a trace with marks");
    let cfg: ReplaySpec = toml::from_str("trace = \"t\"\nphases = \"process\"").unwrap();
    assert_eq!(cfg.phases, PhaseBy::Process);
    assert!(toml::from_str::<ReplaySpec>("trace = \"t\"\nphases = \"threads\"").is_err());
}

/// In the `sh` recording, cat fills `two` through the shell's redirection (a handle opened by
/// the shell) and cp then opens `two` by name: cp's open waits for cat's last copy into it
/// (the file's data is a resource of calls through a handle), in whatever thread each runs.
#[test]
fn a_read_by_name_waits_for_the_write_through_another_processs_handle() {
    let t = marked_trace();
    let plan = plan::compile(&t);
    let find = |pred: &dyn Fn(&crate::trace::Call) -> bool| -> (usize, usize) {
        for (th, ops) in plan.threads.iter().enumerate() {
            if let Some(i) = ops.iter().rposition(|o| pred(&t.calls[o.call as usize])) {
                return (th, i);
            }
        }
        panic!("no such call")
    };
    let (cat_t, cat_i) = find(&|c| c.kind == Kind::CopyFileRange && c.program.as_deref() == Some("cat"));
    let (cp_t, cp_i) =
        find(&|c| c.kind == Kind::Open && c.program.as_deref() == Some("cp") && c.path.as_deref() == Some("two"));
    assert_ne!(cat_t, cp_t, "two processes, two replay threads");
    // What must be done before cp's open: per thread, the ops up to this index (program order
    // and the waits, followed to their end).
    let mut before: Vec<Option<usize>> = vec![None; plan.threads.len()];
    let mut todo = vec![(cp_t, cp_i)];
    while let Some((th, i)) = todo.pop() {
        let from = before[th].map_or(0, |b| b + 1);
        if i < from && before[th].is_some() {
            continue;
        }
        before[th] = Some(i.max(before[th].unwrap_or(0)));
        for j in from..=i {
            let op = &plan.threads[th][j];
            let deps = &plan.deps[op.deps.0 as usize..(op.deps.0 + op.deps.1) as usize];
            todo.extend(deps.iter().map(|&(t2, i2)| (t2 as usize, i2 as usize)));
        }
    }
    assert!(
        before[cat_t].is_some_and(|b| b >= cat_i),
        "cp's open of two comes after cat's copy ({cat_t}, {cat_i}): {before:?}"
    );
}

fn call(tid: u32, start_s: f64, dur_s: f64, untraced: u32) -> crate::trace::Call {
    crate::trace::Call {
        tid,
        kind: Kind::Stat,
        syscall: "newfstatat".into(),
        path: Some("x".into()),
        path2: None,
        handle: None,
        handle2: None,
        flags: String::new(),
        mode: None,
        offset: None,
        len: None,
        target: None,
        untraced,
        last: false,
        result: 0,
        errno: None,
        start_s,
        dur_s,
        tracer_s: None,
        untraced_run_s: None,
        program: None,
    }
}

/// The think time leaves out, per printed call, the tracer's cost in the gap (`overhead_s −
/// overhead_in_call_s`) and, for the printed calls the replay does not issue, their whole cost;
/// a thread's first call also leaves out what the threads before it had taken out (the tracer's
/// time before the thread started), and a gap in which another thread made calls (a join) at
/// least that thread's tracer time. Figures by hand: overhead 30 µs a call, 10 µs of it inside
/// the call.
#[test]
fn think_time_takes_out_the_tracer_in_calls_and_before_a_threads_start() {
    let mut t = fixture_trace("strace-6.1-threads.txt");
    t.header.overhead_s = Some(30e-6);
    t.header.overhead_in_call_s = Some(10e-6);
    // Each thread on its own path: no dependency between them.
    let call = |tid, start_s, dur_s, untraced| crate::trace::Call {
        path: Some(format!("p{tid}")),
        ..call(tid, start_s, dur_s, untraced)
    };
    t.calls = vec![
        call(1, 0.001, 100e-6, 3), // A's first: 1000 − (4 × 30 − 10) = 890 µs; A took out 120
        call(1, 0.0012, 50e-6, 0), // 100 − 20 = 80 µs; A took out 150 µs
        call(2, 0.002, 0.0, 0),    // B's first: 2000 − 20 − 150 = 1830 µs; B took out 180
        call(2, 0.0021, 0.0, 0),   // 100 − 20 = 80; B 210
        call(2, 0.0022, 0.0, 9),   // 100 − (10 × 30 − 10) < 0: 0; B 320
        call(1, 0.0025, 0.0, 0),   // A joined B: 1250 − (320 − 150) = 1080 µs
        call(1, 0.00251, 0.0, 0),  // 10 µs after A's previous end: nothing left
    ];
    let p = plan::compile(&t);
    let us = |th: usize| -> Vec<u64> { p.threads[th].iter().map(|o| (o.gap_ns + 500) / 1000).collect() };
    assert_eq!(us(0), [890, 80, 1080, 0]);
    assert_eq!(us(1), [1830, 80, 0]);
    // Without the in-call part (a version 1 trace) every gap loses the whole 30 µs a call.
    t.header.overhead_in_call_s = None;
    let p = plan::compile(&t);
    let us = |th: usize| -> Vec<u64> { p.threads[th].iter().map(|o| (o.gap_ns + 500) / 1000).collect() };
    assert_eq!(us(0), [880, 70, 1090, 0]);
    assert_eq!(us(1), [1820, 70, 0]);
}

/// A call that waited for another thread's call is timed from that call's end, not from its
/// thread's previous call (or the trace's start): the wait is the dependency's, which the
/// replay keeps by itself. Overhead 30 µs a call, 10 µs of it inside the call.
#[test]
fn think_time_after_a_dependency_runs_from_its_end() {
    let mut t = fixture_trace("strace-6.1-threads.txt");
    t.header.overhead_s = Some(30e-6);
    t.header.overhead_in_call_s = Some(10e-6);
    let mut mkdir = call(1, 0.001, 500e-6, 0); // A: 1000 − 20 = 980 µs; A took out 30
    (mkdir.kind, mkdir.syscall, mkdir.path) = (Kind::Mkdir, "mkdir".into(), Some("d".into()));
    let mut stat = call(2, 0.0016, 0.0, 0); // B waits for the mkdir: 1600 − 1500 − max(20, 30)
    stat.path = Some("d".into());
    let other = call(2, 0.0017, 0.0, 0); // no dependency: 100 − 20 µs
    t.calls = vec![mkdir, stat, other];
    let p = plan::compile(&t);
    let us = |th: usize| -> Vec<u64> { p.threads[th].iter().map(|o| (o.gap_ns + 500) / 1000).collect() };
    assert_eq!(p.threads[1][0].deps.1, 1, "the stat waits for the mkdir");
    assert_eq!(us(0), [980]);
    assert_eq!(us(1), [70, 80]);
}

/// With the tracer's time measured per call (`tracer_s`, perf's record), a gap loses exactly
/// the thread's tracer time since its previous call — and a thread's first call everything
/// before it — whatever the calibration says; a call after a dependency is timed from its end.
#[test]
fn measured_tracer_time_comes_out_of_the_gaps_exactly() {
    let mut t = fixture_trace("strace-6.1-threads.txt");
    // A calibration that would take out far more: not used when the time is measured.
    t.header.overhead_s = Some(500e-6);
    t.header.overhead_in_call_s = Some(10e-6);
    t.header.timing = Some("perf 6.1.187".into());
    let at = |tid, start_s, dur_s, tracer_s: f64| crate::trace::Call {
        path: Some(format!("p{tid}")),
        tracer_s: Some(tracer_s),
        untraced_run_s: None,
        ..call(tid, start_s, dur_s, 0)
    };
    let mut mkdir = at(1, 0.0012, 100e-6, 250e-6); // A: 1200 − 250 = 950 µs after the start
    (mkdir.kind, mkdir.syscall, mkdir.path) = (Kind::Mkdir, "mkdir".into(), Some("d".into()));
    let mut stat = at(2, 0.0020, 0.0, 900e-6); // B waits for the mkdir (ends at 1300 µs)
    stat.path = Some("d".into());
    t.calls = vec![
        at(1, 0.001, 100e-6, 200e-6), // A's first: 1000 − 200 = 800 µs
        mkdir,                        // 1200 − 1100 − (250 − 200) = 50 µs
        at(1, 0.0016, 0.0, 300e-6),   // 1600 − 1300 − 50 = 250 µs
        stat,                         // B's first, after a wait, untraced: 2000 − 900 − (1300 − 250) = 50
        at(2, 0.0021, 0.0, 1000e-6),  // 100 − 100 = 0 µs
        at(2, 0.0023, 0.0, 1050e-6),  // 200 − 50 = 150 µs
    ];
    let p = plan::compile(&t);
    let us = |th: usize| -> Vec<u64> { p.threads[th].iter().map(|o| (o.gap_ns + 500) / 1000).collect() };
    assert_eq!(p.threads[1][0].deps.1, 1, "the stat waits for the mkdir");
    assert_eq!(us(0), [800, 50, 250]);
    assert_eq!(us(1), [50, 0, 150]);
    // The same trace timed by the calibration (no tracer_s) loses 490 µs a call instead.
    for c in &mut t.calls {
        c.tracer_s = None;
    }
    let p = plan::compile(&t);
    assert!(
        p.threads[0][2].gap_ns < 250_000 - 100_000,
        "{:?}",
        p.threads[0][2].gap_ns
    );
}

/// With the untraced run's times (`untraced_run_s`, `fsbench record --untraced-run`), the gaps
/// are that run's — its previous call's end, or the end of the call waited for, to the call's
/// start — whatever the traced run's times and tracer times say; the order stays the traced
/// run's (the stat waits for the mkdir).
#[test]
fn the_untraced_runs_times_are_the_gaps_when_the_trace_has_them() {
    let mut t = fixture_trace("strace-6.1-threads.txt");
    t.header.timing = Some("perf 6.1.187; untraced run, perf's cost 1.30 µs a call taken out".into());
    let at = |tid, start_s, [u0, u1]: [f64; 2]| crate::trace::Call {
        path: Some(format!("p{tid}")),
        // The traced run's: 1 ms of tracer time before every call, which the gaps ignore.
        tracer_s: Some(start_s - 0.0005),
        untraced_run_s: Some([u0, u1]),
        ..call(tid, start_s, 100e-6, 0)
    };
    let mut mkdir = at(1, 0.0030, [120e-6, 130e-6]);
    (mkdir.kind, mkdir.syscall, mkdir.path) = (Kind::Mkdir, "mkdir".into(), Some("d".into()));
    let mut stat = at(2, 0.0050, [150e-6, 151e-6]);
    stat.path = Some("d".into());
    t.calls = vec![
        at(1, 0.0010, [40e-6, 45e-6]),   // A's first: 40 µs from the start
        mkdir,                           // 120 − 45 = 75 µs
        at(1, 0.0040, [200e-6, 210e-6]), // 200 − 130 = 70 µs
        stat,                            // B's first, after the mkdir: 150 − 130 = 20 µs
        at(2, 0.0060, [180e-6, 190e-6]), // 180 − 151 = 29 µs
    ];
    let p = plan::compile(&t);
    let us = |th: usize| -> Vec<u64> { p.threads[th].iter().map(|o| (o.gap_ns + 500) / 1000).collect() };
    assert_eq!(p.threads[1][0].deps.1, 1, "the stat waits for the mkdir");
    assert_eq!(us(0), [40, 75, 70]);
    assert_eq!(us(1), [20, 29]);
}
