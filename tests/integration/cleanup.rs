//! `fsbench cleanup` finds a killed run wherever its scratch folder was (the run registry in
//! /run/fsbench), undoes each step once, and `fsbench run` points at the leftovers first.

use crate::require_privileged;
use crate::util::run_suite;
use crate::util::{assert_no_leftovers, fsbench, loops_under, mounts_under, spawn_run, text, write_suite, TINY};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Held by the tests of this file that kill a run and then run a bare `fsbench cleanup`: that
/// cleanup undoes every dead run, so it would take the other test's leftovers before its checks.
static KILL_THEN_CLEANUP: Mutex<()> = Mutex::new(());

#[test]
fn a_sigkilled_run_with_its_own_scratch_is_undone_by_a_bare_cleanup() {
    require_privileged!();
    // A scratch folder outside the default /var/tmp/fsbench, as `--scratch /big/disk` would be.
    let Mounted {
        _one_at_a_time,
        dir,
        scratch,
        db,
        suite,
        mut child,
    } = run_until_mounted("fsbench-own-scratch-", "big-disk");
    // Kill it while a filesystem is mounted and its loop device attached.
    child.kill().unwrap(); // SIGKILL: no guard runs
    child.wait().unwrap();
    // Let a mount(8)/losetup child that outlived fsbench finish.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !mounts_under(&scratch).is_empty() || !loops_under(&scratch).is_empty(),
        "nothing was left to clean"
    );

    // The next run says so before it starts (a --dir run: quick, and it makes nothing).
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let o = fsbench(&[
        "--db",
        db.to_str().unwrap(),
        "plan",
        &suite,
        "--dir",
        work.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run_suite(&db, &suite, ("--dir", &work), &["--repeat", "1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("killed run") && err.contains(scratch.to_str().unwrap()) && err.contains("`fsbench cleanup`"),
        "run did not point at the leftovers:\n{}",
        text(&o)
    );

    // A bare cleanup (default scratch) finds it through the registry and undoes it once.
    let (out, ours) = bare_cleanup(&scratch);
    let ours: Vec<&str> = ours.iter().map(String::as_str).collect();
    let mut sorted = ours.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), ours.len(), "a step was printed twice:\n{out}");
    assert_no_leftovers(&scratch);
    // And nothing of it stays registered.
    assert_eq!(registered_under(&scratch), 0);
}

/// A run of the tiny suite with its own scratch folder, holding a mounted filesystem.
struct Mounted {
    /// The other kill-then-cleanup tests wait meanwhile.
    _one_at_a_time: MutexGuard<'static, ()>,
    /// Holds the suite, the database and the scratch folder.
    dir: tempfile::TempDir,
    scratch: PathBuf,
    db: PathBuf,
    suite: String,
    child: std::process::Child,
}

/// Starts a run of the tiny suite with the scratch folder `scratch_name` in a new temp folder
/// named `prefix…` and waits until it has a filesystem mounted on its loop device (60 s at
/// most; the run must not end before).
fn run_until_mounted(prefix: &str, scratch_name: &str) -> Mounted {
    let one_at_a_time = KILL_THEN_CLEANUP.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::Builder::new().prefix(prefix).tempdir_in("/var/tmp").unwrap();
    let scratch = dir.path().join(scratch_name);
    let suite = write_suite(dir.path(), "tiny.toml", TINY);
    let db = dir.path().join("r.db");
    let mut child = spawn_run(&db, &suite, &scratch, &[]);
    let t0 = Instant::now();
    while mounts_under(&scratch).is_empty() || loops_under(&scratch).is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(60), "the run never mounted anything");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Mounted {
        _one_at_a_time: one_at_a_time,
        dir,
        scratch,
        db,
        suite,
        child,
    }
}

/// Runs a bare `fsbench cleanup` and checks it unmounted and detached what the run under
/// `scratch` left; returns its output and the lines about `scratch`.
fn bare_cleanup(scratch: &Path) -> (String, Vec<String>) {
    let o = fsbench(&["cleanup"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let ours: Vec<String> = out
        .lines()
        .filter(|l| l.contains(scratch.to_str().unwrap()))
        .map(str::to_string)
        .collect();
    assert!(ours.iter().any(|l| l.starts_with("unmounted")), "{out}");
    assert!(ours.iter().any(|l| l.starts_with("detached")), "{out}");
    (out, ours)
}

/// Registry entries in /run/fsbench/runs of runs under `scratch`: records naming it, or links
/// (older versions) pointing into it.
fn registered_under(scratch: &Path) -> usize {
    let needle = scratch.to_string_lossy().into_owned();
    std::fs::read_dir("/run/fsbench/runs")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| match std::fs::read_link(e.path()) {
            Ok(t) => t.starts_with(scratch),
            Err(_) => std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains(&needle)),
        })
        .count()
}

/// The run's record lives in the registry too: a test that deletes the scratch folder (state
/// file and all) under a live run, which is then SIGKILLed, still leaves `fsbench cleanup`
/// everything it needs to undo the mount and the loop device.
#[test]
fn a_run_whose_scratch_folder_was_deleted_is_still_undone_by_a_bare_cleanup() {
    require_privileged!();
    let Mounted {
        _one_at_a_time,
        dir: _dir,
        scratch,
        mut child,
        ..
    } = run_until_mounted("fsbench-deleted-scratch-", "scratch");
    // Stopped, so it neither notices the deletion nor tears down before the SIGKILL.
    let pid = child.id() as i32;
    // SAFETY: kill(2) on our own child, which has not been waited for.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let run_dir = std::fs::read_dir(&scratch)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("run-")))
        .expect("a run folder");
    // `rm -rf` deletes what it can; the mountpoint stays (busy), the state file goes.
    let rm = std::process::Command::new("rm")
        .arg("-rf")
        .arg(&scratch)
        .output()
        .unwrap();
    assert!(!rm.status.success(), "rm removed a folder holding a mount");
    assert!(!run_dir.join("state.json").exists(), "the state file survived rm");
    child.kill().unwrap(); // SIGKILL: no guard runs
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(!mounts_under(&scratch).is_empty(), "nothing was left to clean");
    assert_eq!(registered_under(&scratch), 1, "the run's record is not in the registry");

    bare_cleanup(&scratch);
    assert_no_leftovers(&scratch);
    assert!(!run_dir.exists(), "the run folder is left");
    assert_eq!(registered_under(&scratch), 0, "the registry record is left");
}
