//! `fsbench record` and the `replay` workload end to end (issue 44): real programs recorded
//! here under strace (`tar -xf` of a tree, `git checkout` between two commits of a repository
//! the test makes, and a threaded C program compiled by the test), replayed through
//! `fsbench run` on the recording's own filesystem (`--dir` beside the recordings) and on loop
//! ext4, xfs and btrfs: every kind's calls within 1 % of the trace and no divergent call. A
//! cross-thread dependency removed from a trace makes the replay diverge and the fidelity
//! check say so. Bad input exits 2 with a message; recording changes nothing the program does
//! not.

use crate::require_privileged;
use crate::util::{fsbench, report_json, samples_of, scratch, skip_or_fail, text, tool_path, write_suite};
use fsbench::trace::{Kind, Trace};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `fsbench record --root ROOT -o TRACE -- CMD…` run in `root`; asserts exit 0.
fn record(root: &Path, trace: &Path, cmd: &[&str]) -> Trace {
    record_with(root, trace, &[], cmd)
}

/// [`record`] with `flags` before `--root`.
fn record_with(root: &Path, trace: &Path, flags: &[&str], cmd: &[&str]) -> Trace {
    let o = Command::new(crate::util::bin())
        .arg("record")
        .args(flags)
        .args(["--root", root.to_str().unwrap(), "-o", trace.to_str().unwrap(), "--"])
        .args(cmd)
        .current_dir(root)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "record {cmd:?}: {}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(" calls in "),
        "{}",
        text(&o)
    );
    Trace::read(trace).unwrap()
}

/// tracefs mounts this process sees.
fn tracefs_mounts() -> usize {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains(" - tracefs "))
        .count()
}

/// A recording made as root with perf installed has its timing measured: perf named in the
/// header, every call's tracer time set and never going back on its thread, and no tracefs
/// mount left behind (perf mounts it in a namespace of its own when it is not mounted).
fn assert_measured(t: &Trace, mounts_before: usize) {
    assert!(
        t.header.timing.as_deref().is_some_and(|w| w.starts_with("perf ")),
        "{:?}",
        t.header.timing
    );
    let mut last: std::collections::HashMap<u32, f64> = std::collections::HashMap::new();
    for c in &t.calls {
        let now = c.tracer_s.unwrap_or_else(|| panic!("no tracer time: {c:?}"));
        let before = last.insert(c.tid, now).unwrap_or(0.0);
        assert!(now >= before && c.dur_s >= 0.0, "{c:?} after {before}");
    }
    assert_eq!(tracefs_mounts(), mounts_before, "a tracefs mount was left");
}

/// A recording made with `--untraced-run` has the untraced run's times: named in the header,
/// on every call, each call's end not before its start, and a thread's calls in order.
fn assert_untraced(t: &Trace) {
    assert!(
        t.header.timing.as_deref().is_some_and(|w| w.contains("untraced run")),
        "{:?}",
        t.header.timing
    );
    let mut last: std::collections::HashMap<u32, f64> = std::collections::HashMap::new();
    for c in &t.calls {
        let [start, end] = c
            .untraced_run_s
            .unwrap_or_else(|| panic!("no untraced run's times: {c:?}"));
        let before = last.insert(c.tid, end).unwrap_or(0.0);
        assert!(start >= before && end >= start, "{c:?} after {before}");
    }
}

/// Runs `cmd` in `dir`, asserting success.
fn sh(dir: &Path, cmd: &[&str]) {
    let o = Command::new(cmd[0])
        .args(&cmd[1..])
        .current_dir(dir)
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{cmd:?}: {}", text(&o));
}

/// A tree of `n` files over 4 directories, sizes 0 to ~40 KiB.
fn make_tree(dir: &Path, n: usize, salt: u8) {
    for i in 0..n {
        let d = dir.join(format!("d{}", i % 4));
        std::fs::create_dir_all(&d).unwrap();
        let size = (i * 977 + usize::from(salt) * 31) % 40_000;
        std::fs::write(
            d.join(format!("f{i:03}.txt")),
            vec![(b'a' + (i % 26) as u8) ^ salt; size],
        )
        .unwrap();
    }
}

/// The three recordings in `dir`: `(name, trace)`; `None` (after skip_or_fail) without a tool.
fn recordings(dir: &Path) -> Option<Vec<(&'static str, PathBuf)>> {
    for t in ["strace", "perf", "tar", "git", "cc"] {
        if tool_path(t).is_none() {
            skip_or_fail(&format!("{t} is not installed"));
            return None;
        }
    }
    // tar: extract 120 files into an empty root.
    let src = dir.join("tsrc");
    make_tree(&src, 120, 0);
    std::os::unix::fs::symlink("f000.txt", src.join("d0/link")).unwrap();
    sh(dir, &["tar", "-cf", "small.tar", "-C", src.to_str().unwrap(), "."]);
    let root = dir.join("tar");
    std::fs::create_dir(&root).unwrap();
    let mounts = tracefs_mounts();
    let tar = record_with(
        &root,
        &dir.join("tar.trace"),
        &["--untraced-run"],
        &["tar", "-xf", "../small.tar"],
    );
    assert_measured(&tar, mounts);
    assert_untraced(&tar);
    let creates = tar
        .calls
        .iter()
        .filter(|c| c.kind == Kind::Open && c.flags.contains("O_CREAT"))
        .count();
    assert!(creates >= 120, "tar creates every file: {creates}");
    assert_eq!(tar.counts().get(&Kind::Symlink), Some(&1), "and the link");
    assert!(tar.tree.is_empty());
    // git: check out the first of two commits.
    let repo = dir.join("git");
    std::fs::create_dir(&repo).unwrap();
    sh(&repo, &["git", "init", "-q", "-b", "main"]);
    make_tree(&repo, 60, 0);
    sh(&repo, &["git", "add", "-A"]);
    let commit = |msg: &str| {
        sh(
            &repo,
            &["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", msg],
        )
    };
    commit("one");
    for i in (0..60).step_by(3) {
        std::fs::remove_file(repo.join(format!("d{}/f{i:03}.txt", i % 4))).unwrap();
    }
    make_tree(&repo.join("new"), 30, 7);
    sh(&repo, &["git", "add", "-A"]);
    commit("two");
    let git = record_with(
        &repo,
        &dir.join("git.trace"),
        &["--untraced-run"],
        &["git", "checkout", "-q", "HEAD~1"],
    );
    assert_measured(&git, mounts);
    assert_untraced(&git);
    assert!(
        git.tree.len() > 100,
        "the repository and its objects: {}",
        git.tree.len()
    );
    assert!(
        git.calls.iter().any(|c| c.kind == Kind::Unlink),
        "checkout removes the second commit's files"
    );
    assert!(
        git.calls.iter().any(|c| c.kind == Kind::Rename),
        "index.lock renamed to index"
    );
    // A threaded program: producer, consumer, main.
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/replay/threads.c");
    sh(dir, &["cc", "-O2", "-pthread", "-o", "threads", src]);
    let root = dir.join("thr");
    std::fs::create_dir(&root).unwrap();
    let thr = record(&root, &dir.join("threads.trace"), &["../threads"]);
    assert_measured(&thr, mounts);
    let tids: std::collections::BTreeSet<u32> = thr.calls.iter().map(|c| c.tid).collect();
    assert_eq!(tids.len(), 3, "three threads made calls under the root");
    assert_eq!(thr.counts()[&Kind::Fsync], 20);
    Some(vec![
        ("tar", dir.join("tar.trace")),
        ("git", dir.join("git.trace")),
        ("threads", dir.join("threads.trace")),
    ])
}

/// A suite replaying `traces` (closed, the threads trace also timed on the traced run's
/// times, and the tar trace timed on its untraced run's), `fs` tables before.
fn suite(fs: &str, traces: &[(&str, PathBuf)], repeats: u32) -> String {
    let mut s = format!("[suite]\nname = \"replay\"\n\n[run]\nrepeats = {repeats}\ndrop_caches = false\n\n{fs}");
    for (name, p) in traces {
        s.push_str(&format!(
            "[[workload]]\nkind = \"replay\"\nname = \"{name}\"\ntrace = \"{}\"\n\n",
            p.display()
        ));
    }
    for (name, p) in [&traces[2], &traces[0]] {
        s.push_str(&format!(
            "[[workload]]\nkind = \"replay\"\nname = \"{name}-timed\"\nmode = \"timed\"\ntrace = \"{}\"\n\n",
            p.display()
        ));
    }
    s
}

/// Every sample of `j`: no divergent call, every kind within 1 %, the fidelity note passed.
fn assert_faithful(j: &serde_json::Value, expect_samples: usize) {
    let samples = samples_of(j, |_| true);
    assert_eq!(samples.len(), expect_samples);
    for s in samples {
        let m = |name: &str| -> f64 {
            s["measurements"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["metric"]["name"] == name)
                .and_then(|m| m["value"].as_f64())
                .unwrap_or_else(|| panic!("no {name} in {s}"))
        };
        let case = &j["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["case_id"] == s["case_id"])
            .unwrap();
        let what = format!("{} on {}: {}", case["workload"], case["variant"], s["notes"]);
        assert_eq!(m("divergent"), 0.0, "{what}");
        assert!(m("count_gap_pct") <= 1.0, "{what}");
        assert!(m("time") > 0.0 && m("calls_per_s") > 0.0, "{what}");
        assert!(s["notes"].to_string().contains("fidelity check passed"), "{what}");
    }
}

#[test]
fn recorded_programs_replay_faithfully_here_and_on_ext4_xfs_and_btrfs() {
    require_privileged!();
    let dir = scratch();
    let Some(traces) = recordings(dir.path()) else { return };
    // On the recording's own filesystem (the scratch folder's), through --dir.
    let own = dir.path().join("own");
    std::fs::create_dir(&own).unwrap();
    let s = write_suite(dir.path(), "own.toml", &suite("", &traces, 2));
    let db = dir.path().join("own.db");
    let o = fsbench(&["--db", db.to_str().unwrap(), "run", &s, "--dir", own.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_faithful(&report_json(db.to_str().unwrap(), "latest"), 10);
    assert!(
        std::fs::read_dir(&own).unwrap().next().is_none(),
        "the replay left files"
    );
    // On loop ext4, xfs and btrfs.
    let fs = "[[fs]]\ntype = \"ext4\"\n\n[[fs]]\ntype = \"xfs\"\n\n[[fs]]\ntype = \"btrfs\"\n\n";
    let s = write_suite(dir.path(), "fs.toml", &suite(fs, &traces, 2));
    let run = crate::util::SuiteRun::in_dir(dir.path());
    let o = run.run_ok(&s);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("divergent (count)"), "{out}");
    let j = report_json(run.db_str(), "latest");
    assert_faithful(&j, 3 * 5 * 2);
    crate::util::assert_no_leftovers(&run.scratch);
}

/// The threads trace with the consumer's open of `work/f00` moved before the producer's create
/// of `work/tmp00` (handles numbered again in open order): nothing then orders that open after
/// the rename that makes `work/f00`.
fn without_the_dependency(t: &Trace) -> Trace {
    let mut t = t.clone();
    let find = |t: &Trace, p: &str| {
        t.calls
            .iter()
            .position(|c| c.kind == Kind::Open && c.path.as_deref() == Some(p))
    };
    let open = find(&t, "work/f00").unwrap();
    let create = find(&t, "work/tmp00").unwrap();
    let mut moved = t.calls.remove(open);
    moved.start_s = t.calls[create].start_s - 2.0 * fsbench::engine::workloads::replay::plan::STAMP_SKEW_S;
    t.calls.insert(create, moved);
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
    t
}

/// The threads program's recording made on this machine and kept
/// (`tests/fixtures/replay/strace-6.1-threads.txt`, `strace -f -ttt -T -y`), resolved as
/// `fsbench record` resolves it: this test is about the check catching a dependency removed on
/// purpose, so it starts from a recording whose faithful replay is known (the fresh recordings
/// are the faithful-replay test's).
fn threads_recording() -> Trace {
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/replay/strace-6.1-threads.txt"
    );
    Trace::from_strace_text(
        &std::fs::read_to_string(p).unwrap(),
        Path::new("/tmp/fsbench-strace-root"),
        "threads",
    )
    .unwrap()
}

#[test]
fn a_removed_cross_thread_dependency_diverges_and_the_fidelity_check_says_so() {
    let dir = scratch();
    let good = threads_recording();
    good.write(&dir.path().join("good.trace")).unwrap();
    without_the_dependency(&good)
        .write(&dir.path().join("bad.trace"))
        .unwrap();
    let mut text_ = String::from("[suite]\nname = \"dep\"\n\n[run]\nrepeats = 1\ndrop_caches = false\n\n");
    for name in ["good", "bad"] {
        let p = dir.path().join(format!("{name}.trace"));
        text_.push_str(&format!(
            "[[workload]]\nkind = \"replay\"\nname = \"{name}\"\ntrace = \"{}\"\n\n",
            p.display()
        ));
    }
    let s = write_suite(dir.path(), "dep.toml", &text_);
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let db = dir.path().join("r.db");
    let o = fsbench(&["--db", db.to_str().unwrap(), "run", &s, "--dir", work.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = report_json(db.to_str().unwrap(), "latest");
    let notes = |w: &str| samples_of(&j, |c| c["workload"] == w)[0]["notes"].to_string();
    assert!(notes("good").contains("fidelity check passed"), "{}", notes("good"));
    let bad = notes("bad");
    assert!(bad.contains("fidelity check FAILED"), "{bad}");
    assert!(bad.contains("first: openat work/f00"), "{bad}");
    assert!(bad.contains("replayed No such file or directory"), "{bad}");
}

#[test]
fn bad_input_exits_2_with_a_message_and_recording_changes_nothing_else() {
    let dir = scratch();
    if tool_path("strace").is_none() {
        return skip_or_fail("strace is not installed");
    }
    let d = dir.path();
    let o = fsbench(&["record", "--", "/nonexistent/program", "x"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("/nonexistent/program: command not found"),
        "{}",
        text(&o)
    );
    let o = fsbench(&["record", "--", "no-such-command-here"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = fsbench(&["record", "--root", "/nonexistent/dir", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not a directory"), "{}", text(&o));
    // A mark directory under the root would be the program's files: refused.
    let o = fsbench(&[
        "record",
        "--root",
        "/tmp",
        "--mark-on",
        "/tmp/fsbench-marks",
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("is under --root"), "{}", text(&o));
    // Recording `cat` of a file: the tree afterwards is the tree before, times included.
    let root = d.join("root");
    make_tree(&root, 12, 3);
    let listing = |r: &Path| -> Vec<(String, u64, std::time::SystemTime)> {
        let mut v: Vec<_> = fsbench::trace::tree::capture(r, &[], false)
            .unwrap()
            .into_iter()
            .map(|e| {
                let md = std::fs::symlink_metadata(r.join(&e.path)).unwrap();
                (e.path, e.size, md.modified().unwrap())
            })
            .collect();
        v.sort();
        v
    };
    let before = listing(&root);
    let trace = d.join("cat.trace");
    let t = record(&root, &trace, &["cat", "d1/f001.txt"]);
    assert_eq!(listing(&root), before);
    assert_eq!(t.tree.len(), before.len());
    assert!(t.calls.iter().any(|c| c.kind == Kind::Read && c.result > 0));
    // A program that fails still leaves its trace, and record exits 1.
    let o = Command::new(crate::util::bin())
        .args(["record", "-o", d.join("false.trace").to_str().unwrap(), "--", "false"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(Trace::read(&d.join("false.trace")).is_ok());
    // Truncated and foreign traces: the suite is refused before anything runs.
    let full = std::fs::read_to_string(&trace).unwrap();
    let cut = d.join("cut.trace");
    std::fs::write(&cut, &full[..full.len() - 40]).unwrap();
    let foreign = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/replay/strace-6.1-tar-x.txt"
    );
    for (trace, says) in [(cut.to_str().unwrap(), "truncated"), (foreign, "not an fsbench trace")] {
        let s = write_suite(
            d,
            "bad.toml",
            &format!("[suite]\nname = \"b\"\n\n[[fs]]\ntype = \"ext4\"\n\n[[workload]]\nkind = \"replay\"\ntrace = \"{trace}\"\n"),
        );
        let o = fsbench(&["plan", &s]);
        assert_eq!(o.status.code(), Some(2), "{trace}: {}", text(&o));
        assert!(text(&o).contains(says), "{trace}: {}", text(&o));
    }
    // A trace not recorded yet: the case is unavailable, with the command that makes it, and a
    // run with nothing else to do exits 2.
    let s = write_suite(
        d,
        "absent.toml",
        "[suite]\nname = \"b\"\n\n[run]\nrepeats = 1\n\n[[workload]]\nkind = \"replay\"\ntrace = \"/nonexistent/x.trace\"\n",
    );
    let work = d.join("work");
    std::fs::create_dir(&work).unwrap();
    let o = fsbench(&[
        "--db",
        d.join("r.db").to_str().unwrap(),
        "run",
        &s,
        "--dir",
        work.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("fsbench record -o /nonexistent/x.trace"),
        "{}",
        text(&o)
    );
}

#[test]
fn hashed_names_leave_no_name_in_the_trace_and_replay_the_same() {
    let dir = scratch();
    if tool_path("strace").is_none() {
        return skip_or_fail("strace is not installed");
    }
    let root = dir.path().join("secret-root");
    std::fs::create_dir_all(root.join("private/notes")).unwrap();
    std::fs::write(root.join("private/notes/diary.txt"), "x").unwrap();
    std::os::unix::fs::symlink("notes/diary.txt", root.join("private/link")).unwrap();
    let trace = dir.path().join("h.trace");
    let o = Command::new(crate::util::bin())
        .args(["record", "--hash-names", "-o", trace.to_str().unwrap(), "--", "sh", "-c"])
        .arg("cat private/link > private/scratchpad && mv private/scratchpad private/notes/moved && ls -R >/dev/null && rm private/notes/moved")
        .current_dir(&root)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let body = std::fs::read_to_string(&trace).unwrap();
    for name in ["secret-root", "private", "notes", "diary", "scratchpad", "moved"] {
        assert!(!body.contains(name), "{name} is in the trace:\n{body}");
    }
    let s = write_suite(
        dir.path(),
        "h.toml",
        &format!("[suite]\nname = \"h\"\n\n[run]\nrepeats = 1\ndrop_caches = false\n\n[[workload]]\nkind = \"replay\"\ntrace = \"{}\"\n", trace.display()),
    );
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let db = dir.path().join("r.db");
    let o = fsbench(&["--db", db.to_str().unwrap(), "run", &s, "--dir", work.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let notes = samples_of(&report_json(db.to_str().unwrap(), "latest"), |_| true)[0]["notes"].to_string();
    assert!(notes.contains("fidelity check passed"), "{notes}");
}

/// The value of `metric` in every phase of `sample`: `(phase, value)`.
fn per_phase(sample: &serde_json::Value, metric: &str) -> Vec<(String, f64)> {
    sample["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["metric"]["name"] == metric)
        .map(|m| (m["phase"].as_str().unwrap().to_string(), m["value"].as_f64().unwrap()))
        .collect()
}

/// `make` building tests/fixtures/replay/cproject (two objects and a link, whose recipe
/// probes the mark directory), recorded here for real with `--mark-on`, replayed on loop ext4
/// as one phase, by program and by time mark: no divergent call in any phase, the phases
/// named by the programs make ran and by the mark.
#[test]
fn make_recorded_here_replays_on_ext4_by_program_and_by_mark_with_none_divergent() {
    require_privileged!();
    for t in ["strace", "make", "cc"] {
        if tool_path(t).is_none() {
            return skip_or_fail(&format!("{t} is not installed"));
        }
    }
    let dir = scratch();
    let d = dir.path();
    let project = d.join("project");
    std::fs::create_dir(&project).unwrap();
    let src = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/replay/cproject"));
    for f in ["Makefile", "main.c", "util.c", "util.h"] {
        std::fs::copy(src.join(f), project.join(f)).unwrap();
    }
    let marks = d.join("marks");
    let trace = d.join("make.trace");
    let o = Command::new(crate::util::bin())
        .args([
            "record",
            "--mark-on",
            marks.to_str().unwrap(),
            "-o",
            trace.to_str().unwrap(),
        ])
        .args(["--", "make", &format!("MARK={}", marks.display())])
        .current_dir(&project)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(project.join("prog").exists(), "make built the program");
    let t = Trace::read(&trace).unwrap();
    let names: Vec<&str> = t.header.marks.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["link"], "the link recipe's probe of the mark directory");
    let programs: std::collections::BTreeSet<&str> = t.calls.iter().filter_map(|c| c.program.as_deref()).collect();
    for p in ["make", "cc1", "as", "ld"] {
        assert!(programs.contains(p), "{p} made calls under the root: {programs:?}");
    }
    let mut s = String::from(
        "[suite]\nname = \"make\"\n\n[run]\nrepeats = 1\ndrop_caches = false\n\n[[fs]]\ntype = \"ext4\"\n\n",
    );
    for (name, by) in [("whole", "none"), ("by-program", "process"), ("by-mark", "marks")] {
        s.push_str(&format!(
            "[[workload]]\nkind = \"replay\"\nname = \"{name}\"\nphases = \"{by}\"\ntrace = \"{}\"\n\n",
            trace.display()
        ));
    }
    let s = write_suite(d, "make.toml", &s);
    let run = crate::util::SuiteRun::in_dir(d);
    run.run_ok(&s);
    let j = report_json(run.db_str(), "latest");
    let mut calls = Vec::new();
    for (w, want) in [
        ("whole", vec!["replay"]),
        ("by-program", vec!["make", "cc1", "as", "ld"]),
        ("by-mark", vec!["start", "link"]),
    ] {
        let samples = samples_of(&j, |c| c["workload"] == w);
        assert_eq!(samples.len(), 1, "{w}");
        let s = samples[0];
        let divergent = per_phase(s, "divergent");
        let phases: Vec<&str> = divergent.iter().map(|(p, _)| p.as_str()).collect();
        for p in &want {
            assert!(phases.contains(p), "{w}: no phase {p} in {phases:?}");
        }
        if w != "by-program" {
            assert_eq!(phases, want, "{w}");
        }
        assert!(
            divergent.iter().all(|(_, v)| *v == 0.0),
            "{w}: {divergent:?}: {}",
            s["notes"]
        );
        assert!(
            s["notes"].to_string().contains("fidelity check passed"),
            "{w}: {}",
            s["notes"]
        );
        let n: f64 = per_phase(s, "calls_per_s")
            .iter()
            .zip(per_phase(s, "time"))
            .map(|((_, r), (_, t))| r * t)
            .sum();
        calls.push(n.round());
    }
    assert!(
        calls.iter().all(|n| *n == calls[0]),
        "every split issues every call: {calls:?}"
    );
    crate::util::assert_no_leftovers(&run.scratch);
}

/// A trace whose tree is larger than where it would be replayed: `plan` refuses it (exit 2)
/// before anything is provisioned, naming the trace, the sizes and what to do; the same suite
/// with a normal trace plans.
#[test]
fn a_trace_larger_than_its_image_or_scratch_space_is_refused_at_plan_time() {
    let dir = scratch();
    let d = dir.path();
    let trace = |name: &str, size: u64| -> PathBuf {
        let p = d.join(format!("{name}.trace"));
        let t = Trace {
            header: fsbench::trace::Header {
                version: fsbench::trace::VERSION,
                tool: "strace 6.1".into(),
                command: vec!["cat".into(), "big".into()],
                root: "/r".into(),
                wall_s: 0.01,
                overhead_s: None,
                overhead_in_call_s: None,
                timing: None,
                hashed_names: false,
                dropped: Default::default(),
                marks: Vec::new(),
            },
            tree: vec![fsbench::trace::Entry {
                path: "big".into(),
                kind: fsbench::trace::EntryKind::File,
                size,
                mode: 0o644,
                target: None,
            }],
            calls: Vec::new(),
        };
        t.write(&p).unwrap();
        p
    };
    let suite = |name: &str, trace: &Path, image: &str| {
        write_suite(
            d,
            &format!("{name}.toml"),
            &format!("[suite]\nname = \"{name}\"\n\n[[fs]]\ntype = \"ext4\"\n{image}\n[[workload]]\nkind = \"replay\"\nname = \"{name}\"\ntrace = \"{}\"\n", trace.display()),
        )
    };
    let scratch_dir = d.join("scratch");
    std::fs::create_dir(&scratch_dir).unwrap();
    let plan = |s: &str| fsbench(&["plan", s, "--scratch", scratch_dir.to_str().unwrap()]);
    // 64 TiB: more than any scratch folder here.
    let o = plan(&suite("huge", &trace("huge", 64 << 40), ""));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let e = text(&o);
    assert!(e.contains("huge on ext4: trace ") && e.contains("64.0 TiB"), "{e}");
    assert!(
        e.contains("--scale does not shrink it") && e.contains("--scratch"),
        "{e}"
    );
    // 1 GiB into an image_size of 256 MiB.
    let o = plan(&suite("mid", &trace("mid", 1 << 30), "image_size = \"256MiB\"\n"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let e = text(&o);
    assert!(
        e.contains("its image_size (256.0 MiB)") && e.contains("raise image_size"),
        "{e}"
    );
    // A normal trace, with and without the image_size.
    let small = trace("small", 1 << 20);
    for image in ["", "image_size = \"256MiB\"\n"] {
        let o = plan(&suite("small", &small, image));
        assert_eq!(o.status.code(), Some(0), "{image}: {}", text(&o));
    }
    assert!(
        std::fs::read_dir(&scratch_dir).unwrap().next().is_none(),
        "plan provisioned nothing"
    );
}

/// `--untraced-run`: the second run writes nothing but its copy of the root. A shell script
/// that makes files under the root and appends to one outside it leaves one run's effects under
/// the root and one line outside; in its untraced run the append fails on the read-only mount,
/// so the runs differ there (those calls keep the traced think time) and every call has the
/// untraced run's times. Nothing is left mounted or in the temporary folder, and the hidden
/// helper refuses to run outside a private mount namespace.
#[test]
fn the_untraced_run_writes_only_its_copy_and_where_it_differs_the_traced_times_stay() {
    require_privileged!();
    for t in ["strace", "perf"] {
        if tool_path(t).is_none() {
            return skip_or_fail(&format!("{t} is not installed"));
        }
    }
    let dir = scratch();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    // Mounts of this test or of an untraced run (other tests mount their own meanwhile).
    let ours = || {
        std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .lines()
            .filter(|l| l.contains(dir.path().to_str().unwrap()) || l.contains("fsbench-untraced"))
            .count()
    };
    // The recording's temporary folder in a folder of the test's own (TMPDIR): empty afterwards.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let outside = dir.path().join("outside.log");
    let script = format!(
        "echo a > made; cat made; mkdir d; mv made d/made; echo x >> {}",
        outside.display()
    );
    let o = Command::new(crate::util::bin())
        .args(["record", "--untraced-run", "-o"])
        .arg(dir.path().join("sh.trace"))
        .args(["--", "sh", "-c", &script])
        .current_dir(&root)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The append failed on the read-only mount in the untraced run: the runs differ there, and
    // every call still has the untraced run's times.
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let differ = out
        .split("untraced run: its calls lined up with the traced run's (")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse::<usize>().ok());
    assert!(differ.is_some_and(|n| n >= 1), "{}", text(&o));
    assert_untraced(&Trace::read(&dir.path().join("sh.trace")).unwrap());
    assert_eq!(std::fs::read_to_string(root.join("d/made")).unwrap(), "a\n");
    assert_eq!(
        std::fs::read_dir(&root).unwrap().count(),
        1,
        "only d is left under the root"
    );
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "x\n",
        "the append outside the root ran once"
    );
    assert_eq!(ours(), 0, "a mount was left");
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "the temporary folder was left"
    );
    // The helper alone, in this mount namespace: refused before it mounts anything.
    let copy = dir.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    let ns = std::fs::read_link("/proc/self/ns/mnt").unwrap();
    let o = Command::new(crate::util::bin())
        .arg("untraced-run")
        .args(["--root", root.to_str().unwrap(), "--copy", copy.to_str().unwrap()])
        .args([
            "--out",
            copy.to_str().unwrap(),
            "--cwd",
            root.to_str().unwrap(),
            "--perf",
            "perf",
        ])
        .arg("--parent-ns")
        .arg(&ns)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("not in a private mount namespace"), "{}", text(&o));
    assert_eq!(ours(), 0, "the helper mounted something");
}

/// SIGINT to `fsbench record` and its program together (their process group, as a terminal's
/// Ctrl-C): the trace of what the program did until then is written, the exit code is 130,
/// the temporary folder is gone and no process of the group is left.
#[test]
fn an_interrupted_recording_writes_what_the_program_did_and_leaves_nothing() {
    require_privileged!();
    if tool_path("strace").is_none() {
        return skip_or_fail("strace is not installed");
    }
    use std::os::unix::process::CommandExt;
    let dir = scratch();
    let (root, tmp) = (dir.path().join("root"), dir.path().join("tmp"));
    std::fs::create_dir(&root).unwrap();
    std::fs::create_dir(&tmp).unwrap();
    let trace = dir.path().join("int.trace");
    let child = Command::new(crate::util::bin())
        .args([
            "record",
            "-o",
            trace.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "echo a > made; exec sleep 60",
        ])
        .current_dir(&root)
        .env("TMPDIR", &tmp)
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !root.join("made").exists() {
        assert!(t0.elapsed().as_secs() < 60, "the program never ran");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let group = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process_group(group, rustix::process::Signal::Int).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        t0.elapsed().as_secs() < 50,
        "the recording waited for the program's sleep"
    );
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(
        text(&o).contains("interrupted: the trace of what sh did until then is written"),
        "{}",
        text(&o)
    );
    let t = Trace::read(&trace).unwrap();
    assert!(
        t.calls
            .iter()
            .any(|c| c.kind == Kind::Open && c.path.as_deref() == Some("made")),
        "the open of made is in the trace"
    );
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "the temporary folder was left"
    );
    assert!(
        rustix::process::test_kill_process_group(group).is_err(),
        "a process of the recording's group is left"
    );
}
