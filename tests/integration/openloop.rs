//! Issue 29's open loop on a real filesystem: fileio's O_DIRECT random reads on ext4 over a
//! loop device at a sweep of rates and with the capacity search at a latency target, stored
//! and reported like any phase; nothing left behind.

use crate::require_privileged;
use crate::util::{assert_no_leftovers, report_file, report_json, scratch, write_suite, SuiteRun};

const SUITE: &str = r#"
[suite]
name = "openloop"

[run]
repeats = 1

[[fs]]
type = "ext4"

[[workload]]
kind = "fileio"
name = "rr"
mode = "rndrd"
files = 2
total_size = "32MiB"
block_size = "4KiB"
io = "direct"
threads = 2
time = "2s"
open_loop = { sweep = [200, 800], target = "p99=50ms", arrival = "poisson", probe_time = "500ms", max_probes = 6 }
"#;

/// The stored value of `metric` in `phase` of the session's only sample.
fn value(j: &serde_json::Value, phase: &str, metric: &str) -> f64 {
    j["samples"][0]["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["phase"] == phase && m["metric"]["name"] == metric)
        .and_then(|m| m["value"].as_f64())
        .unwrap_or_else(|| panic!("no {phase}/{metric} stored"))
}

#[test]
fn a_rate_sweep_and_a_capacity_search_run_on_ext4_and_are_stored() {
    require_privileged!();
    let dir = scratch();
    let suite = write_suite(dir.path(), "suite.toml", SUITE);
    let run = SuiteRun::in_dir(dir.path());
    run.run_ok(&suite);
    let j = report_json(run.db_str(), "latest");
    for rate in [200.0, 800.0] {
        let phase = format!("rndrd@{rate}");
        assert_eq!(value(&j, &phase, "rate_asked"), rate);
        // A Poisson schedule of 2 s: the count is random (sd √(2·rate)), well within 15 % —
        // unless the workers fell behind (a busy machine), which the run must then say.
        let achieved = value(&j, &phase, "rate_achieved");
        let notes = j["samples"][0]["notes"].to_string();
        let kept = (achieved - rate).abs() < 0.15 * rate;
        let said = notes.contains(&format!("{phase}: asked for {rate:.0} operations/s"));
        // Or every start was issued on time and the last operations, slow on a loaded machine
        // (CI: p99 of 87 ms at 800/s), drained after the schedule's end, which lengthens the
        // pool's wall time and so lowers ops per wall second (663/s in one CI run): the
        // schedule was kept, so no note is due.
        let on_time = value(&j, &phase, "unissued") <= (0.01 * rate * 2.0).max(1.0);
        assert!(kept || said || on_time, "{phase}: {achieved:.0}/s and no note: {notes}");
        assert!(achieved < 1.15 * rate, "{phase}: {achieved:.0}/s");
        let reads = value(&j, &phase, "reads_per_s");
        assert!(
            (reads - achieved).abs() < 0.05 * achieved,
            "{phase}: {reads} reads/s, {achieved} ops/s"
        );
        // Response and service percentiles: the response (from the intended start) is never
        // shorter than the service at the same percentile.
        assert!(value(&j, &phase, "lat_p50") >= 0.9 * value(&j, &phase, "svc_p50"));
    }
    let capacity = value(&j, "rndrd:capacity", "capacity_p99");
    let ceiling = value(&j, "rndrd:capacity", "ceiling");
    let failed_at = value(&j, "rndrd:capacity", "failed_at");
    assert!(ceiling > 0.0);
    assert!(
        capacity <= ceiling && capacity <= failed_at,
        "{capacity} {failed_at} {ceiling}"
    );
    assert_eq!(value(&j, "rndrd:capacity", "target_limit"), 50_000.0);
    let probes = value(&j, "rndrd:capacity", "probes");
    assert!((1.0..=6.0).contains(&probes), "{probes} probes");
    let notes = j["samples"][0]["notes"].to_string();
    assert!(
        notes.contains("rndrd:capacity:") && notes.contains("at p99=50ms"),
        "{notes}"
    );
    // The report: the capacity sentence with its target, and p50 and p99 against load.
    let html = report_file(run.db_str(), "latest", "html", &dir.path().join("r.html"));
    assert!(
        html.contains("sustains") && html.contains("at p99 ≤ 50 ms"),
        "no capacity sentence"
    );
    assert_eq!(
        html.matches("class=\"chart chart-load\"").count(),
        2,
        "p50 and p99 against load"
    );
    // Every open-loop phase stored its per-second latency windows, drawn per phase.
    let windows = j["samples"][0]["windows"].as_array().cloned().unwrap_or_default();
    for phase in ["rndrd@200", "rndrd@800"] {
        let w = windows
            .iter()
            .find(|w| w["phase"] == phase)
            .unwrap_or_else(|| panic!("no windows of {phase}"));
        let n = w["bins"].as_array().unwrap().len();
        assert!((2..=3).contains(&n), "{phase}: {n} windows for a 2 s phase");
    }
    assert!(
        html.contains("class=\"chart chart-latency-windows\""),
        "no latency-per-window chart"
    );
    let md = report_file(run.db_str(), "latest", "md", &dir.path().join("r.md"));
    assert!(md.contains("## Capacity at a latency target"), "{md}");
    assert_no_leftovers(&run.scratch);
}

const OLTP: &str = r#"
[suite]
name = "openloop-oltp"

[run]
repeats = 1

[[workload]]
kind = "oltp"
mode = "read_only"
rows = 2000
threads = 2
time = "2s"
open_loop = { rate = 150, arrival = "fixed" }
"#;

#[test]
fn sqlite_transactions_run_open_loop_at_the_rate_asked() {
    let dir = scratch();
    let suite = write_suite(dir.path(), "suite.toml", OLTP);
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let run = SuiteRun::in_dir(dir.path());
    let o = run.run(&suite, &["--dir", target.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::util::text(&o));
    let j = report_json(run.db_str(), "latest");
    // Fixed spacing: 150 starts a second for 2 s, all issued on an idle database.
    assert_eq!(value(&j, "oltp_read_only", "rate_asked"), 150.0);
    let tps = value(&j, "oltp_read_only", "tps");
    assert!((tps - 150.0).abs() < 15.0, "{tps} transactions/s");
    assert_eq!(value(&j, "oltp_read_only", "unissued"), 0.0);
    assert!(value(&j, "oltp_read_only", "lat_p99") > 0.0);
}

const STALLED: &str = r#"
[suite]
name = "openloop-stall"

[run]
repeats = 1

[[fs]]
type = "ext4"

[[workload]]
kind = "fileio"
name = "rr"
mode = "rndrd"
files = 2
total_size = "256KiB"
block_size = "4KiB"
io = "buffered"
threads = 2
time = "6s"
open_loop = { rate = 40, arrival = "poisson" }
"#;

/// Issue 42, item 2, on the real path: the fsbench process is stopped (SIGSTOP) for 500 ms
/// three times while its open loop of 40 reads/s runs — what a descheduled VM does to it
/// (about 25 % of the reads are due while it is stopped). The reads due
/// meanwhile wait, so the response p99 goes far above the service p99 at low utilisation:
/// the run says so on the terminal and stores the note with the seconds of the late
/// responses, and the phase stores its utilisation. The reads come from the page cache
/// (64 blocks, cached after their first read): a read in flight when the process stops counts
/// the stop as its service time, which no timer inside the process can tell from a slow read,
/// and with direct reads of a loaded shared disk (0.3–7 ms each) enough of them were in flight
/// to put the service p99 at the stop's 300 ms and the utilisation over 20 % (a CI run: 36.5 %,
/// service p99 300,941 µs); a cached read of a few µs is almost never caught.
#[test]
fn a_stopped_process_is_a_stall_named_in_the_run() {
    require_privileged!();
    use std::io::BufRead;
    let dir = scratch();
    let suite = write_suite(dir.path(), "suite.toml", STALLED);
    let (db, sc) = (dir.path().join("r.db"), dir.path().join("scratch"));
    let mut child = crate::util::spawn_run(&db, &suite, &sc, &["-v"]);
    let pid = child.id() as i32;
    let stderr = child.stderr.take().unwrap();
    let lines = std::thread::spawn(move || {
        let mut all = String::new();
        let mut stopped = false;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if !stopped && line.trim_end().ends_with("phase rndrd") {
                stopped = true;
                // The caches are dropped after this line, then the 6 s phase: stops at 1.5,
                // 3.2 and 4.9 s after it land in the phase even when the drop takes a second.
                for at in [1500, 1200, 1200] {
                    std::thread::sleep(std::time::Duration::from_millis(at));
                    // SAFETY: signals to the child this test started and still waits for.
                    unsafe { libc::kill(pid, libc::SIGSTOP) };
                    std::thread::sleep(std::time::Duration::from_millis(500));
                    unsafe { libc::kill(pid, libc::SIGCONT) };
                }
            }
            all.push_str(&line);
            all.push('\n');
        }
        (stopped, all)
    });
    let status = child.wait().unwrap();
    let (stopped, err) = lines.join().unwrap();
    assert!(status.success() && stopped, "{status:?}\n{err}");
    let j = report_json(db.to_str().unwrap(), "latest");
    // 20 cached reads/s per worker: under 20 % busy unless a read takes 10 ms on average.
    // On a starved CPU a cached read is not µs: beside four builds (load 18 on 2 cores) the
    // run at 50/s per worker had a service p50 of 1.6 ms and p99 of 52 ms, 37 % busy, where
    // the detector rightly said nothing; the 500 ms stops stay far over 4 × such a p99.
    let utilisation = value(&j, "rndrd", "utilisation");
    let svc = (value(&j, "rndrd", "svc_p50"), value(&j, "rndrd", "svc_p99"));
    assert!(
        utilisation > 0.0 && utilisation < 0.2,
        "{utilisation}, service p50/p99 {svc:?}"
    );
    let notes: Vec<String> = j["samples"][0]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str().map(String::from))
        .collect();
    let note = notes
        .iter()
        // The p99 stalls; the p50 may too (a quiet CI run: p50 198 µs against a cached read's
        // 24 µs, the backlog after each stop), and the note then names p50 (CI of 29 Nov: p50
        // 146 µs, 8 × the service time, and no p99 in the note); the p99 is checked below.
        .find(|n| n.starts_with("rndrd: stall: response-time "))
        .unwrap_or_else(|| panic!("no stall note: {notes:#?}"));
    eprintln!("{note}");
    assert!(note.contains("% utilisation") && note.contains(" s ("), "{note}");
    assert!(
        value(&j, "rndrd", "lat_p99") > 4.0 * value(&j, "rndrd", "svc_p99"),
        "{note}"
    );
    // Said when the repeat ended, not only in the report.
    assert!(err.contains("rndrd: stall: response-time"), "{err}");
    assert_no_leftovers(&sc);
}
