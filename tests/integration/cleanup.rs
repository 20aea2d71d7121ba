//! `fsbench cleanup` finds a killed run wherever its scratch folder was (the run registry in
//! /run/fsbench), undoes each step once, and `fsbench run` points at the leftovers first.

use crate::require_privileged;
use crate::util::run_suite;
use crate::util::{assert_no_leftovers, fsbench, loops_under, mounts_under, spawn_run, text, write_suite, TINY};
use std::time::{Duration, Instant};

#[test]
fn a_sigkilled_run_with_its_own_scratch_is_undone_by_a_bare_cleanup() {
    require_privileged!();
    // A scratch folder outside the default /var/tmp/fsbench, as `--scratch /big/disk` would be.
    let dir = tempfile::Builder::new()
        .prefix("fsbench-own-scratch-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let scratch = dir.path().join("big-disk");
    let suite = write_suite(dir.path(), "tiny.toml", TINY);
    let db = dir.path().join("r.db");
    let mut child = spawn_run(&db, &suite, &scratch, &[]);
    // Kill it while a filesystem is mounted and its loop device attached.
    let t0 = Instant::now();
    while mounts_under(&scratch).is_empty() || loops_under(&scratch).is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(60), "the run never mounted anything");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
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
    let o = fsbench(&["cleanup"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let ours: Vec<&str> = out.lines().filter(|l| l.contains(scratch.to_str().unwrap())).collect();
    assert!(ours.iter().any(|l| l.starts_with("unmounted")), "{out}");
    assert!(ours.iter().any(|l| l.starts_with("detached")), "{out}");
    let mut sorted = ours.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), ours.len(), "a step was printed twice:\n{out}");
    assert_no_leftovers(&scratch);
    // And nothing of it stays registered.
    let registered = std::fs::read_dir("/run/fsbench/runs")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| std::fs::read_link(e.path()).is_ok_and(|t| t.starts_with(&scratch)))
        .count();
    assert_eq!(registered, 0);
}
