//! Real `fsbench run` sessions end to end: provision, run, store, report, and Ctrl-C.

use crate::require_privileged;
use crate::util::{
    assert_no_leftovers, fsbench, mounts_under, scratch, spawn_run, text, write_suite, BONNIE_PHASES, TINY,
};
use std::path::Path;
use std::time::{Duration, Instant};

#[test]
fn a_short_run_compares_three_filesystems_stores_samples_and_reports_json() {
    require_privileged!();
    let dir = scratch();
    let suite = write_suite(dir.path(), "suite.toml", TINY);
    let db = dir.path().join("r.db");
    let sc = dir.path().join("scratch");
    let (db, sc) = (db.to_str().unwrap(), sc.to_str().unwrap());
    let o = fsbench(&[
        "--db",
        db,
        "run",
        &suite,
        "--fs",
        "ext4,xfs,btrfs,zfs",
        "--scratch",
        sc,
        "--label",
        "e2e",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for col in ["ext4", "xfs", "btrfs"] {
        assert!(out.contains(col), "table lacks {col}:\n{out}");
    }
    for p in BONNIE_PHASES {
        assert!(out.contains(p), "table lacks phase {p}:\n{out}");
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("zfs") && err.contains("unavailable"), "{err}");
    assert_no_leftovers(Path::new(sc));

    let o = fsbench(&["--db", db, "report", "latest", "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    assert_eq!(j["schema_version"], 1);
    assert_eq!(j["session"]["label"], "e2e");
    let tables = j["workloads"].as_array().unwrap();
    assert_eq!(tables.len(), 1);
    let rows = tables[0]["rows"].as_array().unwrap();
    for p in BONNIE_PHASES {
        assert!(rows.iter().any(|r| r["phase"] == p), "json lacks {p}");
    }
    let mut saw_cpu = false;
    for r in rows {
        saw_cpu |= r["metric"]["name"] == "cpu_process";
        let cells = r["cells"].as_array().unwrap();
        assert_eq!(cells.len(), 3, "one cell per available fs in {r}");
        for c in cells {
            let s = &c["summary"];
            assert!(s["n"].as_u64().unwrap() >= 3, "{s}");
            assert!(
                s["mean"].is_number() && s["ci_low"].is_number() && s["ci_high"].is_number(),
                "{s}"
            );
        }
    }
    assert!(saw_cpu, "no CPU rows");
    // The raw device was measured once, before the first case, and every cell says whether it
    // is above it.
    let b = &j["baseline"];
    assert_eq!(b["status"]["state"], "measured", "{b}");
    assert!(b["device"].as_str().unwrap().starts_with("/dev/loop"), "{b}");
    let values = b["values"].as_array().unwrap();
    let names: Vec<&str> = values.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["raw_seq_write", "raw_seq_read"]);
    for v in values {
        assert_eq!(v["unit"], "MiB/s", "{v}");
        assert!(
            v["value"].as_f64().unwrap() > 0.0 && v["seconds"].as_f64().unwrap() > 0.0,
            "{v}"
        );
        let bytes = v["bytes"].as_u64().unwrap();
        assert!((64 << 20..=512 << 20).contains(&bytes) && bytes % (1 << 20) == 0, "{v}");
    }
    for r in rows {
        for c in r["cells"].as_array().unwrap() {
            assert!(c["cache_bound"].is_boolean(), "{c}");
            if r["metric"]["unit"] != "MiB/s" {
                assert_eq!(c["cache_bound"], false, "{r}");
            }
        }
    }
    let baseline_lines = err.lines().filter(|l| l.contains("raw device: write")).count();
    assert_eq!(baseline_lines, 1, "measured once per session:\n{err}");
    // zfs is kept as an unavailable case with its reason
    assert!(j["warnings"].to_string().contains("zfs"));
    assert_eq!(j["samples"].as_array().unwrap().len(), 9);

    let o = fsbench(&["--db", db, "report", "e2e", "--format", "csv"]);
    let csv = String::from_utf8_lossy(&o.stdout);
    assert!(csv.lines().next().unwrap().contains("variant"));
    assert!(csv.lines().count() > 9 * 12);
    let o = fsbench(&["--db", db, "report", "latest", "--format", "md"]);
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(md.contains("| raw device | write "), "{md}");
    let o = fsbench(&["--db", db, "list", "sessions"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("complete"));
}

#[test]
fn ctrl_c_in_the_middle_of_a_phase_leaves_nothing_mounted_and_keeps_finished_repeats() {
    require_privileged!();
    let dir = scratch();
    // Big enough that the first repeat is still running when the signal arrives.
    let suite = write_suite(
        dir.path(),
        "suite.toml",
        &TINY
            .replace("file_size = \"16MiB\"", "file_size = \"256MiB\"")
            .replace("files = 256", "files = 20000"),
    );
    let db = dir.path().join("r.db");
    let sc = dir.path().join("scratch");
    let mut child = spawn_run(&db, &suite, &sc, &[]);
    let t0 = Instant::now();
    while mounts_under(&sc).is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(60), "never mounted");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(700));
    rustix::process::kill_process(rustix::process::Pid::from_child(&child), rustix::process::Signal::Int).unwrap();
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(60), "took too long to stop");
    assert_no_leftovers(&sc);
    let o = fsbench(&["--db", db.to_str().unwrap(), "list", "sessions"]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("interrupted"),
        "{}",
        text(&o)
    );
}
