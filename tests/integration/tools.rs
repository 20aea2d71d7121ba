//! The external-tool workloads through the real `fsbench` binary on a loop ext4 (privileged):
//! bonnie++, sysbench fileio, dbench and PostMark each run for a few seconds and their stored
//! samples carry the expected metrics (and fio's latency histograms are stored and exported); a missing tool makes its case unavailable with the
//! install command while the other cases run; bonnie++ killed with SIGKILL mid-run fails its
//! case with its status, the run goes on with the next case, and nothing is left mounted.
//!
//! Needs the tools scripts/install.sh installs; a missing one fails under
//! `FSBENCH_REQUIRE_PRIVILEGED=1` and skips loudly otherwise.

use crate::require_privileged;
use crate::util::run_args;
use crate::util::start_run;
use crate::util::wait_with_stderr;
use crate::util::{
    assert_no_leftovers, mounts_under, report_json, scratch, skip_or_fail, text, tool_path, write_suite, SuiteRun,
};
use std::process::Command;
use std::time::{Duration, Instant};

/// `true` when every tool is installed; else skips loudly (or fails under
/// FSBENCH_REQUIRE_PRIVILEGED=1).
fn have_tools() -> bool {
    let missing: Vec<&str> = ["bonnie++", "sysbench", "dbench", "postmark"]
        .into_iter()
        .filter(|t| tool_path(t).is_none())
        .collect();
    if missing.is_empty() {
        return true;
    }
    skip_or_fail(&format!("{missing:?} not installed; run scripts/install.sh"));
    false
}

/// Metric names of `phase` in the first stored repeat of workload `workload`.
fn metric_names(j: &serde_json::Value, workload: &str, phase: &str) -> Vec<String> {
    let case = j["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["workload"] == workload)
        .unwrap_or_else(|| panic!("no case {workload}: {j}"));
    let sample = j["samples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["case_id"] == case["case_id"])
        .unwrap_or_else(|| panic!("no sample of {workload}: {j}"));
    sample["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["phase"] == phase)
        .map(|m| m["metric"]["name"].as_str().unwrap().to_string())
        .collect()
}

const SUITE: &str = r#"
[suite]
name = "tools"
description = "integration test"

[run]
repeats = 1
trim = 0

[[fs]]
type = "ext4"

[[workload]]
kind = "bonnie_pp"
size = "16MiB"
files = 1024
char_size = "1MiB"
seed = 1

[[workload]]
kind = "sysbench_fileio"
mode = "rndrw"
files = 4
total_size = "16MiB"
time = "1s"

[[workload]]
kind = "dbench"
clients = 1
time = "1s"

[[workload]]
kind = "postmark"
files = 200
transactions = 1000

[[workload]]
kind = "fio"
rw = "randrw"
size = "8MiB"
runtime = "1s"
"#;

#[test]
fn each_real_tool_runs_on_a_loop_ext4_and_stores_its_metrics() {
    require_privileged!();
    if !have_tools() {
        return;
    }
    let dir = scratch();
    let suite = write_suite(dir.path(), "suite.toml", SUITE);
    let run = SuiteRun::in_dir(dir.path());
    run.run_ok(&suite);
    assert_no_leftovers(&run.scratch);
    let j = report_json(run.db_str(), "latest");
    let has = |workload: &str, phase: &str, want: &[&str]| {
        let names = metric_names(&j, workload, phase);
        for w in want {
            assert!(names.iter().any(|n| n == w), "{workload}/{phase}: no {w} in {names:?}");
        }
    };
    // bonnie++ prints +++++ for what ran under 0.5 s: every phase keeps its latency and CPU.
    for phase in [
        "seq_write_char",
        "seq_write_block",
        "rewrite",
        "random_seeks",
        "seq_create",
        "rand_delete",
    ] {
        has("bonnie_pp", phase, &["lat_max", "cpu_process", "cpu_system"]);
    }
    // The per-character write is timed unless bonnie++ itself printed +++++ for it (under
    // 0.5 s on a fast, idle machine); then its note must say so instead of a number.
    let char_write = metric_names(&j, "bonnie_pp", "seq_write_char");
    if !char_write.iter().any(|n| n == "throughput") {
        let said = j["samples"].as_array().unwrap().iter().any(|s| {
            s["notes"].as_array().is_some_and(|ns| {
                ns.iter()
                    .filter_map(|n| n.as_str())
                    .any(|n| n.contains("+++++ for") && n.contains("seq_write_char"))
            })
        });
        assert!(
            said,
            "seq_write_char has neither a throughput nor bonnie++'s +++++ note: {char_write:?}"
        );
    }
    has(
        "sysbench_fileio",
        "rndrw",
        &[
            "reads_per_s",
            "writes_per_s",
            "fsyncs_per_s",
            "read_mib_s",
            "write_mib_s",
            "lat_avg",
            "lat_p95",
            "lat_max",
        ],
    );
    has(
        "dbench",
        "dbench",
        &["throughput", "lat_max", "lat_avg_ntcreatex", "lat_max_flush"],
    );
    has(
        "postmark",
        "postmark",
        &["transactions_per_s", "creates_per_s", "read_mib_s", "write_mib_s"],
    );
    // fio's completion-latency histograms are stored with the sample and exported with it.
    let fio_case = j["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["workload"] == "fio")
        .unwrap();
    let fio_sample = j["samples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["case_id"] == fio_case["case_id"])
        .unwrap();
    let hist = fio_sample["histograms"].as_array().expect("histograms exported");
    let phases: Vec<&str> = hist.iter().map(|h| h["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["randrw_read", "randrw_write"]);
    for h in hist {
        let bins = h["bins"].as_array().unwrap();
        assert!(bins.len() > 3, "{h}");
        let ns: Vec<u64> = bins.iter().map(|b| b[0].as_u64().unwrap()).collect();
        assert!(ns.windows(2).all(|w| w[0] < w[1]), "{h}");
    }
    // The tools' versions are recorded with the session.
    let all = j.to_string();
    for v in ["2.00a", "sysbench 1.0", "4.00", "v1.51"] {
        assert!(all.contains(v), "no tool version {v} in the report");
    }
}

#[test]
fn a_missing_tool_is_unavailable_with_its_install_command_and_the_rest_runs() {
    require_privileged!();
    if !have_tools() {
        return;
    }
    let dir = scratch();
    // A PATH with every program of /usr/sbin and /usr/bin but dbench.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    for d in ["/usr/sbin", "/usr/bin"] {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let to = bin.join(e.file_name());
            if e.file_name() != "dbench" && !to.exists() {
                std::os::unix::fs::symlink(e.path(), to).unwrap();
            }
        }
    }
    let suite = write_suite(
        dir.path(),
        "suite.toml",
        r#"
[suite]
name = "missing"
description = "integration test"

[run]
repeats = 1
trim = 0

[[fs]]
type = "ext4"

[[workload]]
kind = "dbench"
time = "1s"

[[workload]]
kind = "postmark"
files = 100
transactions = 200
"#,
    );
    let db = dir.path().join("r.db");
    let sc = dir.path().join("scratch");
    let o = Command::new(crate::util::bin())
        .args(run_args(&db, &suite, ("--scratch", &sc)))
        .env("PATH", &bin)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("apt-get install dbench"), "{out}");
    assert_no_leftovers(&sc);
    let j = report_json(db.to_str().unwrap(), "latest");
    assert!(!metric_names(&j, "postmark", "postmark").is_empty());
}

#[test]
fn bonnie_killed_mid_run_fails_its_case_the_run_continues_and_nothing_stays_mounted() {
    require_privileged!();
    if !have_tools() {
        return;
    }
    let dir = scratch();
    let (db, sc, mut child) = start_run(
        dir.path(),
        r#"
[suite]
name = "killed"
description = "integration test"

[run]
repeats = 1
trim = 0

[[fs]]
type = "ext4"

[[workload]]
kind = "bonnie_pp"
size = "1GiB"
files = 0
char_size = 0

[[workload]]
kind = "postmark"
files = 100
transactions = 200
"#,
    );
    let scs = sc.to_str().unwrap().to_string();
    let bonnie = || {
        std::fs::read_dir("/proc").unwrap().flatten().find_map(|e| {
            let raw = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
            (cmd.contains("bonnie++ -q -d") && cmd.contains(&scs))
                .then(|| e.file_name().to_str()?.parse::<i32>().ok())?
        })
    };
    let t0 = Instant::now();
    let pid = loop {
        if let Some(pid) = bonnie() {
            break pid;
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "bonnie++ never started");
        assert!(child.try_wait().unwrap().is_none(), "fsbench ended early");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(500));
    assert!(!mounts_under(&sc).is_empty());
    // SAFETY: kill(2) of the bonnie++ this test's run started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let (status, err) = wait_with_stderr(&mut child);
    // One repeat failed and the next case still ran and produced results: exit 0 with a
    // warning naming the failed case (`--strict` would make it 1).
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.contains("signal: 9"), "{err}");
    assert!(
        err.contains("WARNING: 1 repeat(s) failed in 1 case(s)") && err.contains("\n  ext4 × bonnie_pp: 1 of 1"),
        "{err}"
    );
    assert_no_leftovers(&sc);
    let j = report_json(db.to_str().unwrap(), "latest");
    assert!(!metric_names(&j, "postmark", "postmark").is_empty(), "{j}");
}
