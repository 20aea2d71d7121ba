//! Issue 17's long untimed steps on a real run on loop images: the raw-device baseline before
//! the first repeat, and in every repeat mkfs and the workload's preparation (fileio's file
//! set, the generated kernel tree, the SQLite load) each start and end in the `--events`
//! stream inside their repeat and before its first timed phase; a later mkfs of the same size
//! carries the first one's duration as its ETA, and so does the next run's first (the machine's
//! cache of step durations). On a terminal (a pty from `script`) the steps
//! are drawn under the bar; without one a short step prints nothing, and `--quiet` nothing at
//! all.

use crate::util::{assert_no_leftovers, bin, run_args, scratch, text, write_suite};
use serde_json::Value;
use std::path::Path;

const SUITE: &str = r#"
[suite]
name = "steps"

[run]
repeats = 2
warmup = 0
drop_caches = false

[[fs]]
type = "ext4"

[[workload]]
kind = "fileio"
mode = "rndrd"
total_size = "16MiB"
files = 4
block_size = "4KiB"
time = "1s"

[[workload]]
kind = "treecopy"
dataset = "kernel"
dataset_scale = 0.01

[[workload]]
kind = "oltp"
rows = 2000
threads = 1
time = "1s"
"#;

#[test]
fn long_steps_are_announced_inside_their_repeat_with_an_eta_from_the_last_run() {
    crate::require_privileged!();
    let dir = scratch();
    let suite = write_suite(dir.path(), "steps.toml", SUITE);
    let db = dir.path().join("r.db");
    let sc = dir.path().join("scratch");
    let events = dir.path().join("events.jsonl");
    // The machine's step durations live in the cache folder: a fresh one here.
    let cache = dir.path().join("cache");
    let run = |args: &[&str]| {
        std::process::Command::new(bin())
            .env("XDG_CACHE_HOME", &cache)
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&[
        &run_args(&db, &suite, ("--scratch", &sc))[..],
        &["--events", events.to_str().unwrap()],
    ]
    .concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_no_leftovers(&sc);
    // Without a terminal, steps of a few seconds print no line of their own.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("mkfs.ext4 ("), "{err}");

    let ev: Vec<Value> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kind = |e: &Value| e["event"].as_str().unwrap().to_string();
    // Every step_start is followed by its own step_end before any other step starts.
    let mut open: Option<String> = None;
    for e in &ev {
        match kind(e).as_str() {
            "step_start" => {
                assert!(open.is_none(), "step inside step: {e}");
                open = Some(e["step"].as_str().unwrap().to_string());
            }
            "step_progress" => assert_eq!(open.as_deref(), e["step"].as_str(), "{e}"),
            "step_end" => {
                assert_eq!(open.take().as_deref(), e["step"].as_str(), "{e}");
                assert_eq!(e["status"], "ok", "{e}");
            }
            _ => {}
        }
    }
    assert!(open.is_none());
    // The baseline, before the first repeat.
    let first_repeat = ev.iter().position(|e| kind(e) == "repeat_start").unwrap();
    let baseline = ev
        .iter()
        .position(|e| kind(e) == "step_start" && e["step"].as_str().unwrap().starts_with("raw-device baseline"))
        .expect("no baseline step");
    assert!(baseline < first_repeat);
    // Counted in passes: the random-read passes run for a time, not over a number of bytes.
    assert_eq!(ev[baseline]["unit"], "passes");

    // Each repeat: mkfs, then the workload's preparation, all before its first phase.
    let starts: Vec<usize> = ev
        .iter()
        .enumerate()
        .filter(|(_, e)| kind(e) == "repeat_start")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(starts.len(), 6, "3 cases × 2 repeats");
    let mut mkfs_expected = Vec::new();
    for &s in &starts {
        let case = ev[s]["case"].as_str().unwrap();
        let workload = ev[s]["workload"].as_str().unwrap().to_string();
        let first_phase = s + ev[s..].iter().position(|e| kind(e) == "phase_start").unwrap();
        let steps: Vec<&Value> = ev[s..first_phase].iter().filter(|e| kind(e) == "step_start").collect();
        let names: Vec<&str> = steps.iter().map(|e| e["step"].as_str().unwrap()).collect();
        assert!(names[0].starts_with("mkfs.ext4 ("), "{workload}: {names:?}");
        assert!(
            steps.iter().all(|e| e["case"] == case),
            "{workload}: steps of another case"
        );
        mkfs_expected.push(steps[0]["expected_s"].clone());
        let prep = match workload.as_str() {
            "fileio" => "fileio prepare (4 files, 16.0 MiB)",
            "treecopy" => "data set (",
            "oltp" => "SQLite load (1 × 2000 rows)",
            w => panic!("unexpected workload {w}"),
        };
        assert!(names.iter().any(|n| n.starts_with(prep)), "{workload}: {names:?}");
        // Its end comes before the phase too.
        assert!(ev[s..first_phase]
            .iter()
            .any(|e| kind(e) == "step_end" && e["step"].as_str().unwrap().starts_with(prep)));
    }
    // The first mkfs has no expectation; every later one (same image size) has the last one's.
    assert_eq!(mkfs_expected[0], Value::Null);
    assert!(
        mkfs_expected[1..].iter().all(|v| v.as_f64().is_some_and(|s| s > 0.0)),
        "{mkfs_expected:?}"
    );

    // The durations outlive the run: the cache names the mkfs step.
    let stored: Value =
        serde_json::from_slice(&std::fs::read(cache.join("fsbench/step-durations.json")).unwrap()).unwrap();
    let mkfs = ev[starts[0]..].iter().find(|e| kind(e) == "step_start").unwrap()["step"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(stored[&mkfs].as_f64().is_some_and(|s| s > 0.0), "{stored}");

    // The next run's first mkfs has that ETA; --quiet prints no step on standard error.
    let events2 = dir.path().join("events2.jsonl");
    let o = run(&[
        "--db",
        db.to_str().unwrap(),
        "--quiet",
        "run",
        &suite,
        "--scratch",
        sc.to_str().unwrap(),
        "--only",
        "fileio",
        "--repeat",
        "1",
        "--events",
        events2.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("mkfs"), "{}", text(&o));
    let first_mkfs: Value = std::fs::read_to_string(&events2)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == "step_start" && e["step"] == mkfs.as_str())
        .unwrap();
    assert!(
        first_mkfs["expected_s"].as_f64().is_some_and(|s| s > 0.0),
        "{first_mkfs}"
    );
    assert_no_leftovers(&sc);
}

/// On a terminal the steps are drawn: `script` gives the run a pty, and what the terminal got
/// names the mkfs step and the file set's preparation under the run's bar.
#[test]
fn on_a_terminal_each_long_step_has_its_own_bar() {
    crate::require_privileged!();
    let dir = scratch();
    // A file set large enough to be drawn (indicatif draws at most 20 times a second).
    let suite = write_suite(
        dir.path(),
        "tty.toml",
        "[suite]\nname = \"tty\"\n\n[run]\nrepeats = 1\nwarmup = 0\ndrop_caches = false\n\n[[fs]]\ntype = \"ext4\"\n\n\
         [[workload]]\nkind = \"fileio\"\nmode = \"rndrd\"\ntotal_size = \"256MiB\"\nfiles = 4\nblock_size = \"4KiB\"\ntime = \"1s\"\n",
    );
    let db = dir.path().join("r.db");
    let sc = dir.path().join("scratch");
    let typescript = dir.path().join("typescript");
    let cmd = format!(
        "{} --db {} run {} --scratch {}",
        bin().display(),
        db.display(),
        suite,
        sc.display()
    );
    let o = std::process::Command::new("script")
        .args(["-q", "-e", "-c", &cmd])
        .arg(&typescript)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let tty = String::from_utf8_lossy(&std::fs::read(&typescript).unwrap()).into_owned();
    assert!(tty.contains("fileio prepare (4 files, 256.0 MiB)"), "{tty}");
    assert!(tty.contains("ETA"), "{tty}");
    assert_no_leftovers(Path::new(&sc));
}

/// Threads of process `pid` (`Threads:` of /proc/PID/status); `None` once it has exited.
fn threads_of(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:")?.trim().parse().ok())
}

/// A single-worker phase runs in a process of one thread (issue 29 item 6): a second thread,
/// even an idle one, makes the kernel take a file reference on every `*at()` call (the table is
/// shared), about 30 ns of a 1 µs `stat`. The step relay used to keep a forwarding thread for
/// the whole run; the process is polled throughout a run of bonnie's small-file phases.
#[test]
fn a_run_of_single_worker_phases_stays_one_thread() {
    let dir = scratch();
    let suite = write_suite(
        dir.path(),
        "one.toml",
        "[suite]\nname = \"one-thread\"\n\n[run]\nrepeats = 1\nwarmup = 0\ndrop_caches = false\n\n[[fs]]\ntype = \"tmpfs\"\n\n\
         [[workload]]\nkind = \"bonnie\"\nfile_size = \"0\"\nfiles = 4000\nfile_min_size = \"0\"\nfile_max_size = \"0\"\ndirs = 1\nfsync = false\n",
    );
    let db = dir.path().join("r.db");
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let mut child = std::process::Command::new(bin())
        .args(run_args(&db, &suite, ("--dir", &target)))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start fsbench run");
    let mut seen = Vec::new();
    while child.try_wait().unwrap().is_none() {
        if let Some(n) = threads_of(child.id()) {
            seen.push(n);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(seen.len() >= 20, "polled only {} times", seen.len());
    assert!(seen.iter().all(|&n| n == 1), "threads seen during the run: {seen:?}");
}
