//! Real `fsbench run` sessions end to end: provision, run, store, report, and Ctrl-C.

use crate::require_privileged;
use crate::util::interrupt;
use crate::util::run_suite;
use crate::util::start_run;
use crate::util::SuiteRun;
use crate::util::{assert_no_leftovers, fsbench, mounts_under, scratch, text, write_suite, BONNIE_PHASES, TINY};
use std::path::Path;
use std::time::{Duration, Instant};

#[test]
fn a_short_run_compares_three_filesystems_stores_samples_and_reports_json() {
    require_privileged!();
    let dir = scratch();
    let suite = write_suite(dir.path(), "suite.toml", TINY);
    let run = SuiteRun::in_dir(dir.path());
    let (db, sc) = (run.db_str(), run.scratch.to_str().unwrap());
    // reiser4 stands for a type this machine lacks (never merged into Linux; zfs now runs as a
    // pool).
    let o = run.run(&suite, &["--fs", "ext4,xfs,btrfs,reiser4", "--label", "e2e"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for col in ["ext4", "xfs", "btrfs"] {
        assert!(out.contains(col), "table lacks {col}:\n{out}");
    }
    for p in BONNIE_PHASES {
        assert!(out.contains(p), "table lacks phase {p}:\n{out}");
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("reiser4") && err.contains("unavailable"), "{err}");
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
    // Every repeat stores the I/O path the kernel reported after mounting: a loop device in
    // direct-I/O mode, its filesystem type and super options.
    for s in j["samples"].as_array().unwrap() {
        let p = &s["path"];
        assert_eq!(p["loop_dio"], true, "{s}");
        assert!(p["super_options"].is_string() && p["fs_type"].is_string(), "{p}");
    }
    let warnings = j["warnings"].to_string();
    assert!(!warnings.contains("buffered mode"), "{warnings}");
    // The raw device was measured once, before the first case, and every cell says whether it
    // is above it.
    let b = &j["baseline"];
    assert_eq!(b["status"]["state"], "measured", "{b}");
    assert!(b["device"].as_str().unwrap().starts_with("/dev/loop"), "{b}");
    let values = b["values"].as_array().unwrap();
    let names: Vec<&str> = values.iter().map(|v| v["name"].as_str().unwrap()).collect();
    // The two rates the report uses, then each pass (crate::baseline), then the random-read rate.
    assert_eq!(
        names,
        [
            "raw_seq_write",
            "raw_seq_read",
            "raw_seq_write_direct_qd16",
            "raw_seq_read_direct_qd16",
            "raw_seq_read_buffered",
            "raw_rand_read_4k"
        ]
    );
    for v in values {
        assert!(
            v["value"].as_f64().unwrap() > 0.0 && v["seconds"].as_f64().unwrap() > 0.0,
            "{v}"
        );
        let bytes = v["bytes"].as_u64().unwrap();
        if v["name"] == "raw_rand_read_4k" {
            assert_eq!(v["unit"], "ops/s", "{v}");
            assert!(bytes > 0 && bytes % 4096 == 0, "{v}");
        } else {
            assert_eq!(v["unit"], "MiB/s", "{v}");
            assert!((64 << 20..=512 << 20).contains(&bytes) && bytes % (1 << 20) == 0, "{v}");
        }
    }
    for r in rows {
        for c in r["cells"].as_array().unwrap() {
            assert!(c["cache_bound"].is_boolean(), "{c}");
            // Rates are judged only when they are random reads (report::cachebound): here
            // bonnie's seeks; its file and metadata rates never.
            if r["metric"]["unit"] != "MiB/s" && r["phase"] != "random_seeks" {
                assert_eq!(c["cache_bound"], false, "{r}");
            }
        }
    }
    let baseline_lines = err.lines().filter(|l| l.contains("raw device: write")).count();
    assert_eq!(baseline_lines, 1, "measured once per session:\n{err}");
    // reiser4 is kept as an unavailable case with its reason
    assert!(j["warnings"].to_string().contains("reiser4"));
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

/// `run --equivalence PCT`: a margin outside (0, 100) or not a number is a usage error (exit 2,
/// naming the flag); `--equivalence 5` is stored with the session's run options and is what the
/// report judges by: the report of the same stored data with another margin written into the
/// options gives another standing, exactly where the cell's bound at the equivalence test's
/// level (`two_sample::within_pct`, the TOST's dual) says it must.
#[test]
fn run_takes_the_equivalence_margin_stores_it_and_judges_by_it() {
    use fsbench::stats::two_sample::{within_pct, Sample, ALPHA};
    let dir = scratch();
    let suite = write_suite(dir.path(), "suite.toml", TINY);
    let run = SuiteRun::in_dir(dir.path());
    for bad in ["0", "100", "-3", "abc"] {
        let flag = format!("--equivalence={bad}");
        let o = run.run(&suite, &["--fs", "ext4,xfs", &flag]);
        assert_eq!(o.status.code(), Some(2), "--equivalence {bad}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("--equivalence"),
            "{}",
            text(&o)
        );
    }

    require_privileged!();
    let o = run.run(&suite, &["--fs", "ext4,xfs", "--warmup", "0", "--equivalence", "5"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("rows answered:") && out.contains("the same within 5 %"),
        "{out}"
    );
    let j = crate::util::report_json(run.db_str(), "latest");
    let options = &j["session"]["run_options"];
    assert_eq!(options["equivalence"], 5.0, "{options}");

    // Every ranked non-best cell with the bound its own equivalence test (0.05 a pair) gives
    // against the row's best: the same at 5 % exactly when that bound is 5 % or less.
    let sample = |c: &serde_json::Value| Sample {
        mean: c["summary"]["mean"].as_f64().unwrap(),
        sd: c["summary"]["sd"].as_f64().unwrap(),
        n: c["summary"]["n"].as_u64().unwrap() as usize,
    };
    let mut judged = Vec::new();
    for row in j["workloads"][0]["rows"].as_array().unwrap() {
        let cells = row["cells"].as_array().unwrap();
        let Some(best) = cells.iter().find(|c| c["best"] == true && c["standing"] == "best") else {
            continue;
        };
        for c in cells.iter().filter(|c| c["best"] == false && c["standing"].is_string()) {
            let Some(x) = within_pct(sample(c), sample(best), ALPHA) else {
                continue;
            };
            let same = c["standing"] == "same";
            assert_eq!(same, x <= 5.0, "{x} {c}");
            if c["standing"] == "inconclusive" {
                assert_eq!(c["within_pct"].as_f64(), Some(x), "{c}");
            }
            let name = (row["phase"].clone(), row["metric"]["name"].clone());
            judged.push((name, x));
        }
    }
    assert!(!judged.is_empty(), "no ranked row:\n{out}");
    // Rebuild the report with the margin written into the stored options: the same data are the
    // same at the cell's bound and not a tenth below it.
    let ((phase, metric), x) = judged.iter().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap().clone();
    let standing_with = |margin: f64| {
        let conn = rusqlite::Connection::open(&run.db).unwrap();
        let mut o = options.clone();
        o["equivalence"] = serde_json::json!(margin);
        conn.execute("UPDATE sessions SET run_options_json = ?1", [o.to_string()])
            .unwrap();
        drop(conn);
        let j = crate::util::report_json(run.db_str(), "latest");
        let row = j["workloads"][0]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["phase"] == phase && r["metric"]["name"] == metric)
            .cloned()
            .unwrap();
        let other = row["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["best"] == false)
            .cloned();
        other.map(|c| c["standing"].as_str().unwrap().to_string())
    };
    assert_eq!(standing_with(x).as_deref(), Some("same"), "{phase} at ±{x} %");
    if x > 0.15 {
        assert_ne!(
            standing_with(x - 0.1).as_deref(),
            Some("same"),
            "{phase} at ±{} %",
            x - 0.1
        );
    }
}

#[test]
fn ctrl_c_in_the_middle_of_a_phase_leaves_nothing_mounted_and_keeps_finished_repeats() {
    require_privileged!();
    let dir = scratch();
    // Big enough that the first repeat is still running when the signal arrives.
    let (db, sc, mut child) = start_run(
        dir.path(),
        &TINY
            .replace("file_size = \"16MiB\"", "file_size = \"256MiB\"")
            .replace("files = 256", "files = 20000"),
    );
    let t0 = Instant::now();
    while mounts_under(&sc).is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(60), "never mounted");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(700));
    let (status, err) = interrupt(&mut child);
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

/// One real run (ext4, 5 repeats, trim 1, caches kept): a fileio read from the page cache and a
/// CPU-only fileio (the `null` engine on 2 threads, 1 s).
const E2E: &str = r#"
[suite]
name = "e2e-report"
description = "integration test"

[run]
repeats = 5
trim = 1
drop_caches = false

[[fs]]
type = "ext4"

[[workload]]
kind = "fileio"
name = "cached-read"
mode = "seqrd"
files = 1
total_size = "8MiB"
block_size = "1MiB"
time = "300ms"

[[workload]]
kind = "fileio"
name = "cpu"
mode = "rndrd"
io = "null"
threads = 2
files = 1
total_size = "1MiB"
block_size = "4KiB"
time = "1s"
"#;

#[test]
fn trimmed_means_whole_system_cpu_and_the_cache_bound_flag_reach_the_report() {
    require_privileged!();
    let dir = scratch();
    let suite = write_suite(dir.path(), "suite.toml", E2E);
    let db = dir.path().join("r.db");
    let sc = dir.path().join("scratch");
    let o = run_suite(&db, &suite, ("--scratch", &sc), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_no_leftovers(&sc);
    let o = fsbench(&["--db", db.to_str().unwrap(), "report", "latest", "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let store = fsbench::store::Store::open(&db).unwrap();
    let data = store.load_session(1).unwrap();
    // Stored values of (workload case name, phase, metric), straight from the database.
    let stored = |workload: &str, phase: &str, metric: &str| -> Vec<f64> {
        let ids: Vec<&str> = j["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["workload"] == workload)
            .map(|c| c["case_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids.len(), 1, "{workload}: {}", j["cases"]);
        data.samples
            .iter()
            .filter(|s| ids.contains(&s.sample.case_id.as_str()) && !s.sample.is_warmup)
            .flat_map(|s| s.sample.measurements.iter())
            .filter(|m| m.phase == phase && m.metric.name == metric)
            .map(|m| m.value)
            .collect()
    };
    let cell = |workload: &str, phase: &str, metric: &str| -> serde_json::Value {
        let t = j["workloads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["workload"] == workload)
            .unwrap_or_else(|| panic!("no table {workload}"));
        t["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["phase"] == phase && r["metric"]["name"] == metric)
            .unwrap_or_else(|| panic!("no {phase}/{metric} in {workload}"))["cells"][0]
            .clone()
    };

    // Trim: the best and the worst of the five stored values are dropped, by our own sort.
    let mut v = stored("cached-read", "seqrd", "read_mib_s");
    assert_eq!(v.len(), 5, "{v:?}");
    v.sort_by(f64::total_cmp);
    let ours = v[1..4].iter().sum::<f64>() / 3.0;
    let c = cell("cached-read", "seqrd", "read_mib_s");
    assert_eq!(c["summary"]["trimmed"], 1, "{c}");
    let theirs = c["summary"]["trimmed_mean"].as_f64().unwrap();
    assert!(
        (ours - theirs).abs() <= 1e-9 * ours,
        "trimmed mean {theirs}, expected {ours}"
    );
    let md = fsbench(&["--db", db.to_str().unwrap(), "report", "latest", "--format", "md"]);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("trimmed mean (1/end)"), "{md}");

    // Whole-system CPU: a CPU-only phase on two threads keeps this machine busy, and what the
    // whole machine spent (/proc/stat) covers what this process spent (getrusage): system % ×
    // CPUs ≥ process % (of one CPU), up to tick rounding (USER_HZ 100: a few ticks in a 1 s
    // phase, 3 points of one CPU). How busy the process got depends on the other jobs of this
    // shared machine, so only "busy at all" is required of it.
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    let sys = stored("cpu", "rndrd", "cpu_system");
    let proc_ = stored("cpu", "rndrd", "cpu_process");
    assert_eq!((sys.len(), proc_.len()), (5, 5));
    for (s, p) in sys.iter().zip(&proc_) {
        assert!(*s > 0.0 && *s <= 100.0, "system {s} %");
        assert!(*p > 5.0, "two busy threads used {p} % of one CPU");
        assert!(s * cpus + 3.0 >= *p, "system {s} % × {cpus} CPUs < process {p} %");
    }
    let c = cell("cpu", "rndrd", "cpu_system");
    let mean = sys.iter().sum::<f64>() / 5.0;
    assert!(
        (c["summary"]["mean"].as_f64().unwrap() - mean).abs() <= 1e-9 * mean,
        "{c}"
    );

    // Cache-bound: reads served from the page cache beat the raw device the session measured
    // (O_DIRECT under the same loop set-up), and the report flags that cell and warns.
    let ceiling = j["baseline"]["values"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["unit"] == "MiB/s")
        .map(|v| v["value"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let c = cell("cached-read", "seqrd", "read_mib_s");
    let mean = c["summary"]["mean"].as_f64().unwrap();
    eprintln!("cached reads {mean:.0} MiB/s, raw device {ceiling:.0} MiB/s");
    assert!(
        mean > 2.0 * ceiling,
        "cached reads {mean} MiB/s vs raw device {ceiling} MiB/s"
    );
    assert_eq!(c["cache_bound"], true, "{c}");
    assert!(j["warnings"].to_string().contains("cached-read"), "{}", j["warnings"]);
    // Only throughputs (MiB/s) are compared with the device here: operation rates and CPU
    // never (sequential reads and `io = "null"` are not random reads of the device).
    for t in j["workloads"].as_array().unwrap() {
        for row in t["rows"].as_array().unwrap() {
            if row["metric"]["unit"] != "MiB/s" {
                assert_eq!(row["cells"][0]["cache_bound"], false, "{row}");
            }
        }
    }
}

#[test]
fn doctor_runs_every_check_and_fails_on_a_small_scratch() {
    require_privileged!();
    // As root on this machine every required check passes: exit 0.
    let o = fsbench(&["doctor"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for line in [
        "ok    running as root",
        "ok    loop devices (/dev/loop-control)",
        "ok    losetup",
        "ok    mount",
        "ok    drop_caches writable",
        "ok    filesystem ext4",
        "info  per-operation clock: ",
        "Ready: ",
    ] {
        assert!(out.contains(line), "doctor lacks `{line}`:\n{out}");
    }
    // A scratch folder on a 16 MiB tmpfs is too small: the check says how to fix it, exit 1.
    let dir = scratch();
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"])
        .arg(&small)
        .status()
        .unwrap();
    assert!(ok.success());
    let o = fsbench(&["doctor", "--scratch", small.to_str().unwrap()]);
    let _ = std::process::Command::new("umount").arg(&small).status();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!("FIX   scratch {}", small.display())) && out.contains("1 problem(s) above"),
        "{out}"
    );
}

/// Issue 27's acceptance, small: on `btrfs:compress=zstd` the compression probe measures the
/// on-disk ratio of the workload's own kind of data — text shrinks (> 1.5), random data does
/// not (≈ 1.0) — and ext4 (no compression) has no ratio; every sample carries the loop's
/// direct-I/O state, and nothing is flagged. The device counters of each phase agree: the
/// 16 MiB reach the loop device, compressed text much less, and fsync sends a flush.
#[test]
fn the_on_disk_ratio_of_a_compressing_mount_follows_the_content() {
    require_privileged!();
    let dir = scratch();
    for (content, lo, hi) in [("text", 1.5, 100.0), ("random", 0.9, 1.1)] {
        let suite = write_suite(
            dir.path(),
            &format!("{content}.toml"),
            &format!(
                "[suite]\nname = \"ratio\"\n[run]\nrepeats = 2\nwarmup = 0\ndrop_caches = false\n\
                 [[fs]]\ntype = \"ext4\"\n[[fs]]\ntype = \"btrfs\"\nmount_opts = \"compress=zstd\"\n\
                 [[workload]]\nkind = \"bigfile\"\nsize = \"16MiB\"\ncontent = \"{content}\"\n"
            ),
        );
        let db = dir.path().join(format!("{content}.db"));
        let sc = dir.path().join("scratch");
        let o = run_suite(&db, &suite, ("--scratch", &sc), &[]);
        assert!(o.status.success(), "{}", text(&o));
        assert_no_leftovers(&sc);
        let j = crate::util::report_json(db.to_str().unwrap(), "latest");
        for s in j["samples"].as_array().unwrap() {
            let variant = variant_of(&j, s);
            let p = &s["path"];
            assert_eq!(p["loop_dio"], true, "{s}");
            if variant.starts_with("btrfs") {
                let r = p["on_disk_ratio"].as_f64().unwrap_or_else(|| panic!("no ratio: {p}"));
                assert!((lo..=hi).contains(&r), "{content} on {variant}: ratio {r}");
                assert_eq!(p["probe_content"], content, "{p}");
                // The ratio is a row of its own too.
                let row = s["measurements"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|m| m["phase"] == "path" && m["metric"]["name"] == "on_disk_ratio");
                assert!(row.is_some_and(|m| m["value"].as_f64() == Some(r)), "{s}");
            } else {
                assert!(p["on_disk_ratio"].is_null(), "{variant} does not compress: {p}");
            }
            // What reached the loop device: write + fsync put the 16 MiB on it (less, when
            // zstd shrank text), and the fsync sent at least one cache flush.
            let device = |phase: &str, name: &str| {
                s["measurements"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|m| m["phase"] == phase && m["metric"]["name"] == name)
                    .and_then(|m| m["value"].as_f64())
                    .unwrap_or_else(|| panic!("no {phase} {name} row: {s}"))
            };
            let written = device("write", "device_write_mib") + device("fsync", "device_write_mib");
            if variant.starts_with("btrfs") && content == "text" {
                assert!(
                    written < 16.0 / lo,
                    "{variant}, {content}: {written} MiB reached the device"
                );
            } else {
                assert!(
                    written >= 15.5,
                    "{variant}, {content}: only {written} MiB reached the device"
                );
            }
            assert!(
                device("fsync", "device_flushes") >= 1.0,
                "{variant}: fsync without a flush"
            );
        }
        let warnings = j["warnings"].to_string();
        assert!(
            !warnings.contains("did not shrink") && !warnings.contains("buffered mode"),
            "{warnings}"
        );
        // The HTML's path panel: a row per variant with the facts and the ratio.
        let html = fsbench(&["--db", db.to_str().unwrap(), "report", "latest", "--format", "html"]);
        let html = String::from_utf8_lossy(&html.stdout);
        let panel = &html[html.find("I/O path (read back from the kernel)").expect("path panel")..];
        let panel = &panel[..panel.find("</table>").unwrap()];
        assert!(
            panel.contains("compress=zstd") && panel.contains(&format!("({content})")),
            "{panel}"
        );
        assert_eq!(panel.matches("<tr><td").count(), 2, "{panel}");
    }
}

/// O_DIRECT that the filesystem buffers is caught, not assumed: fileio's direct sequential
/// writes dirty (almost) no page cache on ext4 and on btrfs mounted `nodatasum`, but on btrfs
/// with data checksums this kernel writes them through the page cache (measured: 16,451 pages
/// dirtied for a 64 MiB `dd oflag=direct`, 0 on ext4), and the repeat says so. The count is the
/// machine's (`nr_dirtied`), so a test running beside this one can add to a phase's count (in
/// CI a neighbour dirtied 1.9 GB during one 1 s phase): noise only adds, so btrfs must be
/// flagged in every repeat, and ext4 and btrfs `nodatasum` must stay direct (under 16 MiB
/// dirtied) in their quietest repeat of four.
#[test]
fn direct_io_that_btrfs_buffers_is_flagged_and_nodatasum_is_not() {
    require_privileged!();
    let dir = scratch();
    let j = report_of_run(
        dir.path(),
        "direct.toml",
        "[suite]\nname = \"direct\"\n[run]\nrepeats = 4\nwarmup = 0\ndrop_caches = false\n\
         [[fs]]\ntype = \"ext4\"\n[[fs]]\ntype = \"btrfs\"\n\
         [[fs]]\ntype = \"btrfs\"\nname = \"btrfs-nodatasum\"\nmount_opts = \"nodatasum\"\n\
         [[workload]]\nkind = \"fileio\"\nname = \"direct\"\nmode = \"seqwr\"\nfiles = 1\n\
         total_size = \"64MiB\"\nblock_size = \"1MiB\"\nio = \"direct\"\nfsync_freq = 0\ntime = \"1s\"\n",
    );
    let mut by_variant: std::collections::BTreeMap<String, Vec<(bool, f64)>> = Default::default();
    for s in j["samples"].as_array().unwrap() {
        let variant = variant_of(&j, s);
        let flagged = s["notes"].to_string().contains("buffered the direct I/O");
        let dirtied = measured(s, "dirtied_pages").unwrap_or_else(|| panic!("no dirtied_pages row: {s}"));
        by_variant.entry(variant).or_default().push((flagged, dirtied));
    }
    assert_eq!(by_variant.len(), 3, "{by_variant:?}");
    let quietest = |runs: &[(bool, f64)]| runs.iter().map(|(_, d)| *d).fold(f64::MAX, f64::min);
    let buffered = quietest(&by_variant["btrfs"]);
    for (variant, runs) in &by_variant {
        assert_eq!(runs.len(), 4, "{variant}: {runs:?}");
        let flagged = runs.iter().filter(|(f, _)| *f).count();
        if variant == "btrfs" {
            // The phase is 1 s long: beside other tests' I/O it may write well under its 64 MiB
            // (CI once saw 31 MiB dirtied at btrfs's quietest), so the floor is 8 MiB.
            assert!(flagged == 4 && buffered >= 2048.0, "btrfs: {runs:?}");
        } else {
            // `nr_dirtied` counts the whole machine: other processes' writes (a parallel test,
            // a build) land in every repeat, so the direct variants are held against btrfs's
            // buffered figure, not an absolute count (CI once saw 4,755 pages at the quietest
            // of nodatasum's four repeats beside btrfs's buffered tens of thousands).
            assert!(
                quietest(runs) < 0.25 * buffered && flagged < 4,
                "{variant}: {runs:?} against btrfs's {buffered}"
            );
        }
    }
    let warnings = j["warnings"].to_string();
    assert!(
        warnings.contains("buffered the direct I/O") && warnings.contains("btrfs / direct"),
        "{warnings}"
    );
}

/// `io = "uncached"` (RWF_DONTCACHE) on ext4, xfs and btrfs: where the kernel takes the flag,
/// every repeat writes its file once (new blocks) and reads at random without readahead
/// (`fadvise = "random"`) with it, and records what the page cache gained of its files
/// (`cached_mib`), a small share of what it moved and never the note; where it does not
/// (btrfs on 6.18), each repeat fails with what to use instead and the other cases run. (What
/// the page cache does keep, readahead and ext4's overwrites, is in doc/io-path.md; the note's
/// catch is `engine::phase::tests::uncached_io_that_the_page_cache_keeps_is_caught`.)
#[test]
fn uncached_io_leaves_the_page_cache_as_it_found_it_or_says_the_filesystem_has_none() {
    require_privileged!();
    let dir = scratch();
    let j = report_of_run(
        dir.path(),
        "uncached.toml",
        "[suite]\nname = \"uncached\"\n[run]\nrepeats = 2\nwarmup = 0\n\
         [[fs]]\ntype = \"ext4\"\n[[fs]]\ntype = \"xfs\"\n[[fs]]\ntype = \"btrfs\"\n\
         [[workload]]\nkind = \"fileio\"\nname = \"write\"\nmode = \"seqwr\"\nfiles = 1\n\
         total_size = \"64MiB\"\nblock_size = \"1MiB\"\nio = \"uncached\"\nfsync_freq = 0\nrequests = 64\n\
         [[workload]]\nkind = \"fileio\"\nname = \"read\"\nmode = \"rndrd\"\nfiles = 2\n\
         total_size = \"64MiB\"\nblock_size = \"64KiB\"\nio = \"uncached\"\nfadvise = \"random\"\ntime = \"1s\"\n",
    );
    let mut ran = std::collections::BTreeSet::new();
    for s in j["samples"].as_array().unwrap() {
        let variant = variant_of(&j, s);
        if let Some(e) = s["status"]["error"].as_str() {
            assert!(
                e.contains("does not support uncached buffered I/O") && e.contains("io = \"buffered\""),
                "{variant}: {e}"
            );
            continue;
        }
        assert!(
            !s["notes"].to_string().contains("asked for no caching"),
            "{variant}: {s}"
        );
        let row = |name: &str| measured(s, name);
        let cached = row("cached_mib").unwrap_or_else(|| panic!("{variant}: no cached_mib row: {s}"));
        let moved = row("write_mib_s").or(row("read_mib_s")).unwrap();
        assert!(
            moved > 0.0 && cached < 16.0,
            "{variant}: {cached} MiB cached at {moved} MiB/s"
        );
        ran.insert(variant);
    }
    // ext4 and xfs have taken the flag since Linux 6.14.
    let (release, version) = kernel();
    if version >= vec![6, 14] {
        assert!(ran.contains("ext4") && ran.contains("xfs"), "{ran:?} on {release}");
    }
    eprintln!("uncached I/O ran on {ran:?} (Linux {release})");
}

/// `io = "atomic"` (O_DIRECT, RWF_ATOMIC writes) beside `io = "direct"` on ext4 and xfs: xfs
/// (Linux 6.16+, by copy-on-write) writes 64 KiB atomically and each repeat stores its rate;
/// a 2 MiB block beyond the range xfs reports is refused with that range;
/// ext4 on a loop device reports no atomic write units, and each of its repeats says so and
/// what to use instead, while the direct cases run everywhere.
#[test]
fn atomic_writes_run_where_the_filesystem_reports_units_and_say_why_not_elsewhere() {
    require_privileged!();
    let dir = scratch();
    let w = |name: &str, io: &str, block: &str, extra: &str| {
        format!(
            "[[workload]]\nkind = \"fileio\"\nname = \"{name}\"\nmode = \"rndwr\"\nfiles = 2\ntotal_size = \"32MiB\"\n\
             block_size = \"{block}\"\nio = \"{io}\"\nfsync_freq = 0\n{extra}\n"
        )
    };
    let j = report_of_run(
        dir.path(),
        "atomic.toml",
        &format!(
            "[suite]\nname = \"atomic\"\n[run]\nrepeats = 2\nwarmup = 0\n[[fs]]\ntype = \"ext4\"\n[[fs]]\ntype = \"xfs\"\n{}{}{}",
            w("atomic", "atomic", "64KiB", "time = \"1s\""),
            w("direct", "direct", "64KiB", "time = \"1s\""),
            w("atomic-2m", "atomic", "2MiB", "requests = 16\ntime = \"0s\"")
        ),
    );
    let (release, version) = kernel();
    let mut seen = std::collections::BTreeMap::<(String, String), Vec<Result<f64, String>>>::new();
    for s in j["samples"].as_array().unwrap() {
        let case = j["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["case_id"] == s["case_id"])
            .unwrap();
        let key = (case["workload"].as_str().unwrap().to_string(), variant_of(&j, s));
        let outcome = match s["status"]["error"].as_str() {
            Some(e) => Err(e.to_string()),
            None => Ok(measured(s, "writes_per_s").unwrap()),
        };
        seen.entry(key).or_default().push(outcome);
    }
    eprintln!("on Linux {release}: {seen:#?}");
    let all = |w: &str, fs: &str, ok: &dyn Fn(&Result<f64, String>) -> bool| {
        let runs = &seen[&(w.to_string(), fs.to_string())];
        runs.len() == 2 && runs.iter().all(ok)
    };
    let ran = |r: &Result<f64, String>| r.as_ref().is_ok_and(|&v| v > 0.0);
    let said = |r: &Result<f64, String>| {
        r.as_ref().err().is_some_and(|e| {
            e.contains("io = \"atomic\"")
                && (e.contains("use io = \"direct\" here") || e.contains("choose a power of two"))
        })
    };
    for fs in ["ext4", "xfs"] {
        assert!(all("direct", fs, &ran), "{fs}: {seen:?}");
        for w in ["atomic", "atomic-2m"] {
            assert!(all(w, fs, &|r| ran(r) || said(r)), "{w} on {fs}: {seen:?}");
        }
    }
    // Every repeat records the units the filesystem offers (`path.atomic_write`).
    let units: std::collections::BTreeSet<(String, String)> = j["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["path"].is_object())
        .map(|s| {
            (
                variant_of(&j, s),
                s["path"]["atomic_write"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect();
    eprintln!("atomic write units: {units:?}");
    if version >= vec![6, 16] {
        assert!(units.contains(&("ext4".into(), "none".into())), "{units:?}");
        assert!(units.iter().any(|(v, u)| v == "xfs" && u.contains(" – ")), "{units:?}");
        assert!(all("atomic", "xfs", &ran), "{seen:?}");
        assert!(
            all("atomic-2m", "xfs", &|r| r
                .as_ref()
                .is_err_and(|e| e.contains("choose a power of two in that range"))),
            "{seen:?}"
        );
    }
}

/// Runs the suite `text` (written to `dir/name`) on loop images in `dir`, which must succeed
/// and leave nothing, and returns the JSON report of its session.
fn report_of_run(dir: &Path, name: &str, text: &str) -> serde_json::Value {
    let suite = write_suite(dir, name, text);
    let run = SuiteRun::in_dir(dir);
    run.run_ok(&suite);
    assert_no_leftovers(&run.scratch);
    crate::util::report_json(run.db_str(), "latest")
}

/// The value of the row `metric` of the JSON sample `s` (its first phase that has one).
fn measured(s: &serde_json::Value, metric: &str) -> Option<f64> {
    s["measurements"]
        .as_array()?
        .iter()
        .find(|m| m["metric"]["name"] == metric)
        .and_then(|m| m["value"].as_f64())
}

/// This kernel's release (`uname -r`) and its major and minor version.
fn kernel() -> (String, Vec<u32>) {
    let release = rustix::system::uname().release().to_string_lossy().into_owned();
    let version = release
        .split(['.', '-'])
        .take(2)
        .filter_map(|v| v.parse().ok())
        .collect();
    (release, version)
}

/// The variant of sample `s` of the JSON report `j` (from its case).
fn variant_of(j: &serde_json::Value, s: &serde_json::Value) -> String {
    j["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case_id"] == s["case_id"])
        .and_then(|c| c["variant"].as_str())
        .unwrap_or_else(|| panic!("no case for {s}"))
        .to_string()
}

/// Loop devices buffered on purpose (`--loop-io buffered`): every repeat reads back dio off,
/// records that buffered was asked, and no buffered-loop mismatch is warned of, while the
/// methodology says the loop was buffered by request; the CSV carries the facts. A second
/// session with the default (direct) loops then makes `history` warn that the two took
/// different I/O paths. (`provision::path_facts_read_the_loop_state_back_and_a_buffered_loop_is_a_mismatch`
/// shows a loop forced buffered without asking is still a mismatch.)
#[test]
fn loops_buffered_by_request_read_back_buffered_without_a_mismatch() {
    require_privileged!();
    let dir = scratch();
    let suite = write_suite(
        dir.path(),
        "loopio.toml",
        "[suite]\nname = \"loopio\"\n[run]\nrepeats = 2\ndrop_caches = false\n\
         [[fs]]\ntype = \"ext4\"\n\
         [[workload]]\nkind = \"bigfile\"\nsize = \"16MiB\"\n",
    );
    let run = SuiteRun::in_dir(dir.path());
    let o = run.run(&suite, &["--loop-io", "buffered", "--label", "buffered"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_no_leftovers(&run.scratch);
    let all = text(&o);
    assert!(!all.contains("buffered mode (dio 0"), "{all}");
    let j = crate::util::report_json(run.db_str(), "buffered");
    let samples = j["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2, "{j}");
    for s in samples {
        let p = &s["path"];
        assert_eq!(
            (&p["loop_dio"], &p["loop_dio_asked"]),
            (&false.into(), &false.into()),
            "{s}"
        );
    }
    let warnings = j["warnings"].to_string();
    assert!(!warnings.contains("buffered mode (dio 0"), "{warnings}");
    assert!(
        warnings.contains("ext4: loop devices in buffered mode by request"),
        "{warnings}"
    );
    let o = fsbench(&["--db", run.db_str(), "report", "buffered", "--format", "csv"]);
    let csv = String::from_utf8_lossy(&o.stdout);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("{name}: {header:?}"))
    };
    let (dio, asked, fs) = (col("path_loop_dio"), col("path_loop_dio_asked"), col("path_fs_type"));
    for line in csv.lines().skip(1) {
        // No field of this session needs quoting before the super options.
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!((f[dio], f[asked], f[fs]), ("false", "false", "ext4"), "{line}");
    }
    // The same suite with direct loops: history names the change of path.
    let o = run.run(&suite, &["--label", "direct"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = crate::util::report_json(run.db_str(), "direct");
    assert!(
        j["samples"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["path"]["loop_dio"] == true && s["path"]["loop_dio_asked"] == true),
        "{j}"
    );
    let o = fsbench(&["--db", run.db_str(), "history", "--format", "json"]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning: the sessions took different I/O paths (sessions 1 → 2: ext4 loop direct I/O off (by request) → on)"),
        "{err}"
    );
    let h: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(h["path_changes"].as_array().map(Vec::len), Some(1), "{h}");
    assert_no_leftovers(&run.scratch);
}

/// Sizes set by time (issue 41): a warm-up whose phases run under 0.5 s has its workload
/// raised for the measured repeats of every variant alike, printed, stored with the session
/// (options and case records) and said in the report; `--fixed-sizes` keeps the suite's sizes
/// and their notes; `compare` and `history` flag the two sessions' different sizes.
#[test]
fn warm_ups_under_the_minimum_time_raise_the_sizes_of_every_variant_alike() {
    require_privileged!();
    let dir = scratch();
    let suite = write_suite(
        dir.path(),
        "sizes.toml",
        "[suite]\nname = \"sizes\"\n[run]\nrepeats = 2\nwarmup = 1\ndrop_caches = false\n\
         [[fs]]\ntype = \"ext4\"\n[[fs]]\ntype = \"xfs\"\n\
         [[workload]]\nkind = \"bonnie\"\nfile_size = \"4MiB\"\nchar_size = \"1MiB\"\nseeks = 128\nfiles = 256\n",
    );
    let run = SuiteRun::in_dir(dir.path());
    let db = run.db_str();
    let o = run.run(&suite, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    // Every phase of this size takes milliseconds on a quiet machine, and each knob grows by the
    // most, 16 ×; under load a phase can take longer (random_seeks' 128 seeks took 0.33 s beside
    // three other tests, and its knob grew 8 ×), so each knob's growth is a power of two from 2
    // to 16, and what is stored and compared is what was printed.
    let line = err
        .lines()
        .find(|l| l.starts_with("sizes set by time: bonnie: "))
        .unwrap_or_else(|| panic!("no sizes line:\n{err}"));
    let grown = |knob: &str, from: u64, unit: &str| -> u64 {
        let at = format!("{knob} {from}{unit} → ");
        let rest = &line[line.find(&at).unwrap_or_else(|| panic!("{at} missing from {line}")) + at.len()..];
        let to: u64 = rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())]
            .parse()
            .unwrap();
        assert!(
            to > from && to % from == 0 && (to / from).is_power_of_two() && to / from <= 16,
            "{knob} {from} → {to}: {line}"
        );
        to
    };
    let file_mib = grown("file_size", 4, "MiB");
    grown("char_size", 1, "MiB");
    let files = grown("files", 256, "");
    grown("seeks", 128, "");
    // Stored before the measured repeats: the options and both case records.
    let j = crate::util::report_json(db, "1");
    let resized = &j["session"]["run_options"]["resized"][0];
    assert_eq!(resized["workload"], "bonnie", "{}", j["session"]["run_options"]);
    assert_eq!(resized["kind"]["files"], files);
    let conn = rusqlite::Connection::open(db).unwrap();
    let specs: Vec<String> = conn
        .prepare("SELECT workload_json FROM cases WHERE session_id = 1")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(specs.len(), 2);
    for s in &specs {
        let spec: serde_json::Value = serde_json::from_str(s).unwrap();
        assert_eq!(
            (spec["files"].as_u64(), spec["file_size"].as_str()),
            (Some(files), Some(format!("{file_mib}MiB").as_str())),
            "{s}"
        );
    }
    // The report says what ran. (At most 16 × these sizes stay under 0.5 s here in places:
    // their measured repeats keep the note.)
    let report = String::from_utf8_lossy(&fsbench(&["--db", db, "report", "1"]).stdout).to_string();
    assert!(report.contains("Sizes set by time"), "{report}");

    // The suite's sizes as written: nothing raised, the short phases keep their note.
    let o = run.run(&suite, &["--fixed-sizes"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("sizes set by time"),
        "{}",
        text(&o)
    );
    let fixed = String::from_utf8_lossy(&fsbench(&["--db", db, "report", "2"]).stdout).to_string();
    assert!(fixed.contains("ran under 0.5 s"), "{fixed}");
    assert!(!fixed.contains("Sizes set by time"), "{fixed}");

    // Sessions of different sizes are flagged where they meet.
    let c = fsbench(&["--db", db, "compare", "1", "2"]);
    let said = text(&c);
    assert!(
        said.contains(&format!("sizes bonnie: file_size 4MiB → {file_mib}MiB")),
        "{said}"
    );
    let h = fsbench(&["--db", db, "history", "--suite", "sizes"]);
    let said = text(&h);
    assert!(said.contains("ran different sizes (sessions 1 → 2"), "{said}");
    assert_no_leftovers(&run.scratch);
}
