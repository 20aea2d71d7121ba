//! Safety under failure: faults become results, resume, and kills at random moments.

use crate::require_privileged;
use crate::util::run_suite;
use crate::util::start_run;
use crate::util::{
    assert_no_leftovers, fsbench, mounts_under, report_json, scratch, spawn_run, text, write_suite, TINY,
};
use crate::util::{samples_of, wait_with_stderr};
use rand::{Rng, SeedableRng};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn sample_errors(j: &serde_json::Value, variant: &str) -> Vec<String> {
    samples_of(j, |c| c["variant"] == variant)
        .into_iter()
        .map(|s| s["status"]["error"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn enospc_read_only_and_rejected_mount_options_fail_their_case_and_the_rest_runs() {
    require_privileged!();
    let dir = scratch();
    let suite = TINY
        .replace("repeats = 3", "repeats = 1")
        .replace("file_size = \"16MiB\"", "file_size = \"96MiB\"")
        + r#"
[[fs]]
name = "ext4-full"
type = "ext4"
image_size = "64MiB"

[[fs]]
name = "ext4-ro"
type = "ext4"
mount_opts = ["ro"]

[[fs]]
name = "ext4-badopt"
type = "ext4"
mount_opts = ["compress=lzo"]
"#;
    let suite = write_suite(dir.path(), "faults.toml", &suite);
    let db = dir.path().join("r.db");
    let sc = dir.path().join("scratch");
    let (db, sc) = (db.to_str().unwrap(), sc.to_str().unwrap());
    let o = fsbench(&["--db", db, "run", &suite, "--scratch", sc]);
    // The plain ext4 case produced results: exit 0, with a warning naming each failed case.
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_no_leftovers(Path::new(sc));
    let err = String::from_utf8_lossy(&o.stderr);
    for case in ["ext4-full × ", "ext4-ro × ", "ext4-badopt × "] {
        assert!(
            err.contains(&format!("\n  {case}")),
            "the warning does not name {case}:\n{err}"
        );
    }
    assert!(err.contains("WARNING: 3 repeat(s) failed in 3 case(s)"), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("failed"), "report does not show the failures:\n{out}");

    let j = report_json(db, "latest");
    assert_eq!(
        sample_errors(&j, "ext4"),
        vec![String::new()],
        "the healthy case must succeed"
    );
    let full = sample_errors(&j, "ext4-full").join(" ");
    assert!(full.contains("No space left"), "{full}");
    let ro = sample_errors(&j, "ext4-ro").join(" ");
    assert!(ro.contains("Read-only"), "{ro}");
    let bad = sample_errors(&j, "ext4-badopt").join(" ");
    assert!(bad.contains("mount"), "{bad}");
    let warnings = j["warnings"].to_string();
    for v in ["ext4-full", "ext4-ro", "ext4-badopt"] {
        assert!(warnings.contains(v), "warnings lack {v}: {warnings}");
    }
}

/// Waits until the database holds at least `n` stored repeats, then sends `sig`.
fn interrupt_after_samples(child: &mut std::process::Child, db: &Path, n: usize, sig: rustix::process::Signal) {
    let t0 = Instant::now();
    loop {
        assert!(t0.elapsed() < Duration::from_secs(120), "no progress");
        if let Ok(store) = fsbench::store::Store::open(db) {
            if let Ok(data) = store.load_session(1) {
                if data.samples.len() >= n {
                    break;
                }
            }
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "run ended before it could be interrupted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    rustix::process::kill_process(rustix::process::Pid::from_child(child), sig).unwrap();
}

#[test]
fn a_resumed_session_reports_the_same_cases_and_repeats_as_one_that_ran_through() {
    require_privileged!();
    let dir = scratch();
    let suite = write_suite(
        dir.path(),
        "s.toml",
        &TINY.replace(
            "[[fs]]\ntype = \"ext4\"",
            "[[fs]]\ntype = \"ext4\"\n\n[[fs]]\ntype = \"xfs\"",
        ),
    );
    let sc = dir.path().join("scratch");
    let sc = sc.to_str().unwrap();

    let db_full = dir.path().join("full.db");
    let o = fsbench(&["--db", db_full.to_str().unwrap(), "run", &suite, "--scratch", sc]);
    assert!(o.status.success(), "{}", text(&o));

    let db = dir.path().join("resumed.db");
    let mut child = spawn_run(&db, &suite, Path::new(sc), &[]);
    interrupt_after_samples(&mut child, &db, 2, rustix::process::Signal::Int);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_no_leftovers(Path::new(sc));
    let partial = report_json(db.to_str().unwrap(), "1");
    let stored = partial["samples"].as_array().unwrap().len();
    assert!((2..6).contains(&stored), "{stored} samples before resume");
    assert_eq!(partial["session"]["status"], "interrupted");

    let o = fsbench(&["--db", db.to_str().unwrap(), "run", "--resume", "latest"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!("{} of 6 repeats left", 6 - stored)),
        "{}",
        text(&o)
    );
    assert_no_leftovers(Path::new(sc));

    let a = report_json(db_full.to_str().unwrap(), "1");
    let b = report_json(db.to_str().unwrap(), "1");
    assert_eq!(b["session"]["status"], "complete");
    let ids = |j: &serde_json::Value| {
        j["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["case_id"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&a), ids(&b), "same cases");
    let shape = |j: &serde_json::Value| {
        let mut v: Vec<(String, u64, bool)> = j["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["case_id"].as_str().unwrap().to_string(),
                    s["repeat"].as_u64().unwrap(),
                    s["is_warmup"].as_bool().unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(shape(&a), shape(&b), "same repeats");
    let rows = |j: &serde_json::Value| {
        j["workloads"][0]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["phase"].clone(),
                    r["metric"]["name"].clone(),
                    r["cells"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|c| c["summary"]["n"].clone())
                        .collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(&a), rows(&b), "same rows and n per cell");
}

/// Waits (at most 30 s) until process `pid` catches SIGINT and SIGTERM (`SigCgt` in
/// /proc/PID/status), or has exited.
fn wait_for_signal_handlers(pid: u32) {
    let want = (1u64 << (libc::SIGINT - 1)) | (1u64 << (libc::SIGTERM - 1));
    let t0 = std::time::Instant::now();
    while t0.elapsed() < Duration::from_secs(30) {
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            return;
        };
        let caught = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok());
        match caught {
            Some(mask) if mask & want == want => return,
            None => return,
            _ => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    panic!("process {pid} did not install its SIGINT/SIGTERM handlers within 30 s");
}

#[test]
fn sigint_sigterm_and_sigkill_at_twenty_random_moments_leave_nothing_and_lose_no_repeat() {
    require_privileged!();
    let dir = scratch();
    let suite = write_suite(dir.path(), "s.toml", TINY);
    let sc = dir.path().join("scratch");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(20261122);
    use rustix::process::Signal;
    let signals = [Signal::Int, Signal::Term, Signal::Kill];
    for round in 0..20 {
        let sig = signals[round % 3];
        let delay = Duration::from_millis(rng.gen_range(0..2500));
        let db = dir.path().join(format!("r{round}.db"));
        let mut child = spawn_run(&db, &suite, &sc, &[]);
        // The moments count from when fsbench takes signals (right after parsing its command
        // line): a SIGTERM before the handlers exist gets the default action in any program
        // (a loaded CI run hit round 7's 84 ms before the debug binary was that far).
        wait_for_signal_handlers(child.id());
        std::thread::sleep(delay);
        let _ = rustix::process::kill_process(rustix::process::Pid::from_child(&child), sig);
        let (status, err) = wait_with_stderr(&mut child);
        let ctx = format!("round {round}, {sig:?} after {delay:?}: {status:?}\n{err}");
        if sig == Signal::Kill {
            let o = fsbench(&["cleanup", "--scratch", sc.to_str().unwrap()]);
            assert!(o.status.success(), "{ctx}\ncleanup: {}", text(&o));
        } else {
            // Either it finished before the signal (0) or it stopped cleanly (130).
            assert!(matches!(status.code(), Some(0) | Some(130)), "{ctx}");
        }
        assert!(mounts_under(&sc).is_empty(), "{ctx}");
        assert_no_leftovers(&sc);
        if let Ok(rd) = std::fs::read_dir(&sc) {
            let left: Vec<_> = rd.flatten().map(|e| e.path()).collect();
            assert!(left.is_empty(), "scratch not empty: {left:?} {ctx}");
        }
        if db.exists() {
            let store = fsbench::store::Store::open(&db).unwrap();
            assert!(store.integrity_check().unwrap(), "{ctx}");
            let announced = err.lines().filter(|l| l.contains("done in")).count();
            let stored = store.load_session(1).map(|d| d.samples.len()).unwrap_or(0);
            assert!(
                stored >= announced,
                "{announced} repeats announced but {stored} stored: {ctx}"
            );
        }
    }
}

/// A FUSE server (tests/fixtures/faultyfs.py) serving the scratch folder, mounted for the
/// test's lifetime; writes to files whose name contains `fail_match` fail with EIO after
/// `fail_after` bytes.
struct FaultyFs {
    mountpoint: std::path::PathBuf,
    child: std::process::Child,
}

impl FaultyFs {
    fn start(dir: &Path, fail_match: &str, fail_after: u64) -> FaultyFs {
        let fusepy = Path::new("/usr/lib/python3/dist-packages/fusepy.py");
        if !fusepy.exists() {
            panic!("python3-fusepy is missing: run scripts/install.sh (the failing-disk test needs it)");
        }
        let backing = dir.join("backing");
        let mountpoint = dir.join("faulty");
        std::fs::create_dir_all(&backing).unwrap();
        std::fs::create_dir_all(&mountpoint).unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/faultyfs.py");
        let child = Command::new("/usr/bin/python3")
            .arg(script)
            .args([backing.as_os_str(), mountpoint.as_os_str()])
            .args([fail_match, &fail_after.to_string()])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while !mounts_under(&mountpoint).iter().any(|l| l.contains("fuse")) {
            assert!(t0.elapsed() < Duration::from_secs(20), "faultyfs did not mount");
            std::thread::sleep(Duration::from_millis(50));
        }
        FaultyFs { mountpoint, child }
    }
}

impl Drop for FaultyFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mountpoint).status();
        let _ = self.child.wait();
    }
}

#[test]
fn eio_from_a_failing_disk_fails_its_case_and_the_rest_runs() {
    require_privileged!();
    let dir = scratch();
    // The ext4 image's backing file starts failing after 20 MB of writes: mkfs gets through,
    // the workload's data does not. The xfs image on the same server is never failed.
    let fs = FaultyFs::start(dir.path(), "ext4", 20_000_000);
    let suite = write_suite(
        dir.path(),
        "s.toml",
        &TINY.replace("repeats = 3", "repeats = 1").replace(
            "[[fs]]\ntype = \"ext4\"",
            "[[fs]]\ntype = \"ext4\"\n\n[[fs]]\ntype = \"xfs\"",
        ),
    );
    let db = dir.path().join("r.db");
    let sc = fs.mountpoint.join("scratch");
    // A failing disk is an error to the caller: any failed repeat exits 1.
    let o = run_suite(&db, &suite, ("--scratch", &sc), &["--strict"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_no_leftovers(&sc);
    let j = report_json(db.to_str().unwrap(), "latest");
    let ext4 = sample_errors(&j, "ext4").join(" ");
    assert!(ext4.contains("Input/output error"), "{ext4}");
    assert_eq!(sample_errors(&j, "xfs"), vec![String::new()], "xfs must still run");
    drop(fs);
}

#[test]
fn two_runs_at_once_share_scratch_and_database_without_colliding() {
    require_privileged!();
    let dir = scratch();
    let suite = write_suite(dir.path(), "s.toml", &TINY.replace("repeats = 3", "repeats = 2"));
    let db = dir.path().join("shared.db");
    let sc = dir.path().join("scratch");
    let spawn = |label: &str| spawn_run(&db, &suite, &sc, &["--label", label]);
    let (a, b) = (spawn("a"), spawn("b"));
    for (name, child) in [("a", a), ("b", b)] {
        let o = child.wait_with_output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "run {name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert_no_leftovers(&sc);
    let store = fsbench::store::Store::open(&db).unwrap();
    let sessions = store.list_sessions().unwrap();
    assert_eq!(sessions.len(), 2);
    for s in sessions {
        assert_eq!(s.status.as_str(), "complete");
        assert_eq!(store.load_session(s.id).unwrap().samples.len(), 2);
    }
    assert!(store.integrity_check().unwrap());
}

#[test]
fn a_session_sigkilled_mid_run_resumes_after_cleanup_and_completes() {
    require_privileged!();
    let dir = scratch();
    let (db, sc, mut child) = start_run(dir.path(), TINY);
    interrupt_after_samples(&mut child, &db, 1, rustix::process::Signal::Kill);
    assert_eq!(child.wait().unwrap().code(), None, "killed by a signal");
    let partial = report_json(db.to_str().unwrap(), "1");
    let stored = partial["samples"].as_array().unwrap().len();
    assert!((1..3).contains(&stored), "{stored} samples before the kill");
    // SIGKILL leaves the status as it was while running.
    assert_eq!(partial["session"]["status"], "running");
    let o = fsbench(&["cleanup", "--scratch", sc.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_no_leftovers(&sc);

    let o = fsbench(&["--db", db.to_str().unwrap(), "run", "--resume", "latest"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!("{} of 3 repeats left", 3 - stored)),
        "{}",
        text(&o)
    );
    assert_no_leftovers(&sc);
    let done = report_json(db.to_str().unwrap(), "1");
    assert_eq!(done["session"]["status"], "complete");
    let mut repeats: Vec<u64> = done["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["repeat"].as_u64().unwrap())
        .collect();
    repeats.sort();
    assert_eq!(repeats.len(), 3, "{repeats:?}");
    repeats.dedup();
    assert_eq!(repeats.len(), 3, "each repeat once: {repeats:?}");
}

#[test]
fn resuming_a_session_that_a_live_process_runs_is_refused() {
    require_privileged!();
    let dir = scratch();
    let (db, sc, child) = start_run(dir.path(), TINY);
    // The session exists (status running) as soon as its first repeat is stored.
    let t0 = Instant::now();
    loop {
        assert!(t0.elapsed() < Duration::from_secs(120), "no repeat stored");
        let stored = fsbench::store::Store::open(&db)
            .ok()
            .and_then(|s| s.load_session(1).ok())
            .map(|d| d.samples.len())
            .unwrap_or(0);
        if stored >= 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Stopped so that it is surely still running while the second process tries.
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::Stop).unwrap();
    let o = fsbench(&["--db", db.to_str().unwrap(), "run", "--resume", "1"]);
    rustix::process::kill_process(pid, rustix::process::Signal::Cont).unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("session 1 is being run by another live fsbench process"),
        "{}",
        text(&o)
    );
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_no_leftovers(&sc);
    let j = report_json(db.to_str().unwrap(), "1");
    assert_eq!(j["session"]["status"], "complete");
    assert_eq!(j["samples"].as_array().unwrap().len(), 3, "no repeat run twice");
}

#[test]
fn cleanup_spares_a_live_run() {
    require_privileged!();
    let dir = scratch();
    let (db, sc, child) = start_run(dir.path(), TINY);
    let pid = rustix::process::Pid::from_child(&child);
    // Caught with its filesystem mounted (and stopped, so nothing changes but what cleanup does).
    let t0 = Instant::now();
    let (mounts, loops) = loop {
        assert!(t0.elapsed() < Duration::from_secs(120), "the run never mounted");
        if !mounts_under(&sc).is_empty() {
            rustix::process::kill_process(pid, rustix::process::Signal::Stop).unwrap();
            let (m, l) = (mounts_under(&sc), crate::util::loops_under(&sc));
            if !m.is_empty() {
                break (m, l);
            }
            rustix::process::kill_process(pid, rustix::process::Signal::Cont).unwrap();
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let o = fsbench(&["cleanup", "--scratch", sc.to_str().unwrap()]);
    let after = (mounts_under(&sc), crate::util::loops_under(&sc));
    rustix::process::kill_process(pid, rustix::process::Signal::Cont).unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(after, (mounts.clone(), loops), "cleanup touched a live run");
    assert!(!mounts.is_empty());
    // And the run goes on undisturbed to the end.
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_no_leftovers(&sc);
    let j = report_json(db.to_str().unwrap(), "1");
    assert_eq!(sample_errors(&j, "ext4"), vec![String::new(); 3]);
}
