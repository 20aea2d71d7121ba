//! The `fio` workload through the real `fsbench` binary on a loop ext4 (privileged): an inline
//! randread job and a two-job file, their stored samples carrying fio's IOPS, bandwidth and
//! latency per phase; and Ctrl-C while fio runs, which leaves nothing mounted.
//!
//! Needs fio (scripts/install.sh installs it); a missing fio fails under
//! `FSBENCH_REQUIRE_PRIVILEGED=1` and skips loudly otherwise.

use crate::require_privileged;
use crate::util::start_run;
use crate::util::{assert_no_leftovers, fsbench, mounts_under, scratch, text, write_suite};
use crate::util::{interrupt, samples_of};
use std::path::Path;
use std::time::{Duration, Instant};

/// Skips (loudly) or fails (under FSBENCH_REQUIRE_PRIVILEGED=1) without fio.
macro_rules! require_fio {
    () => {
        if !Path::new("/usr/bin/fio").is_file() && !Path::new("/usr/local/bin/fio").is_file() {
            if std::env::var("FSBENCH_REQUIRE_PRIVILEGED").as_deref() == Ok("1") {
                panic!("fio not installed and FSBENCH_REQUIRE_PRIVILEGED=1: run scripts/install.sh");
            }
            eprintln!(
                "SKIPPED (fio not installed; run scripts/install.sh): {}",
                module_path!()
            );
            return;
        }
    };
}

/// `(name, value)` of every stored measurement of `phase`, one list per stored repeat of
/// workload `workload` (samples are joined to their case by `case_id`).
fn sample_metrics(j: &serde_json::Value, workload: &str, phase: &str) -> Vec<Vec<(String, f64)>> {
    samples_of(j, |c| c["workload"] == workload)
        .into_iter()
        .map(|s| {
            s["measurements"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["phase"] == phase)
                .map(|m| {
                    (
                        m["metric"]["name"].as_str().unwrap().to_string(),
                        m["value"].as_f64().unwrap(),
                    )
                })
                .collect()
        })
        .collect()
}

#[test]
fn fio_inline_and_job_file_on_a_loop_ext4_store_iops_bw_and_latency_per_phase() {
    require_privileged!();
    require_fio!();
    let dir = scratch();
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio/two-jobs.fio");
    let suite = write_suite(
        dir.path(),
        "suite.toml",
        &format!(
            r#"
[suite]
name = "fio"
description = "integration test"

[run]
repeats = 2
trim = 0

[[fs]]
type = "ext4"

[[workload]]
kind = "fio"
name = "rr"
rw = "randread"
bs = "4k"
size = "32MiB"
runtime = "2s"

[[workload]]
kind = "fio"
name = "two"
job_file = "{}"
"#,
            job.display()
        ),
    );
    let db = dir.path().join("r.db");
    let sc = dir.path().join("scratch");
    let (dbs, scs) = (db.to_str().unwrap(), sc.to_str().unwrap());
    let o = fsbench(&["--db", dbs, "run", &suite, "--scratch", scs]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_no_leftovers(&sc);
    let o = fsbench(&["--db", dbs, "report", "latest", "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    for (workload, phase) in [("rr", "randread_read"), ("two", "writer_write"), ("two", "reader_read")] {
        let repeats = sample_metrics(&j, workload, phase);
        assert_eq!(repeats.len(), 2, "{workload}/{phase}: {j}");
        for metrics in repeats {
            let names: Vec<&str> = metrics.iter().map(|(n, _)| n.as_str()).collect();
            for want in ["iops", "bw", "lat_p50", "lat_p99", "lat_p999", "lat_max"] {
                assert!(names.contains(&want), "{workload}/{phase}: no {want} in {names:?}");
            }
            let v = |n: &str| metrics.iter().find(|(m, _)| m == n).unwrap().1;
            assert!(v("iops") > 10.0 && v("bw") > 0.01, "{workload}/{phase}: {metrics:?}");
            // fio's percentiles are bucket values (within ~1.6 % above the true value), so
            // p99 may exceed the exact maximum by a little; the order of the percentiles holds.
            assert!(
                v("lat_p50") <= v("lat_p99") && v("lat_p99") <= v("lat_p999"),
                "{metrics:?}"
            );
            assert!(v("lat_max") >= v("lat_p50"), "{metrics:?}");
        }
    }
}

#[test]
fn ctrl_c_while_fio_runs_leaves_nothing_mounted() {
    require_privileged!();
    require_fio!();
    let dir = scratch();
    let (_db, sc, mut child) = start_run(
        dir.path(),
        r#"
[suite]
name = "fio-long"
description = "integration test"

[[fs]]
type = "ext4"

[[workload]]
kind = "fio"
rw = "randwrite"
size = "32MiB"
runtime = "120s"
"#,
    );
    // Wait for fio's processes working under the scratch folder.
    let scs = sc.to_str().unwrap().to_string();
    let fio_running = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|raw| {
                    let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
                    cmd.contains("fio --output-format") && cmd.contains(&scs)
                })
                .unwrap_or(false)
        })
    };
    let t0 = Instant::now();
    loop {
        if fio_running() {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "fio never started");
        assert!(child.try_wait().unwrap().is_none(), "fsbench ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(700));
    assert!(!mounts_under(&sc).is_empty());
    let t1 = Instant::now();
    let (status, err) = interrupt(&mut child);
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        t1.elapsed() < Duration::from_secs(30),
        "took {:?} to stop",
        t1.elapsed()
    );
    assert_no_leftovers(&sc);
}
