//! MPI mode (issue 16), with Open MPI's real `mpirun` and 4 ranks on one loop ext4 that rank 0
//! makes: bonnie's small-file phases and fileio, the stored cluster figures checked against the
//! stored per-rank rows and the per-rank per-second series, the timeline, the reduced
//! percentiles, every rank's fingerprint, a rank killed with SIGKILL (exit 1 naming it, within
//! seconds), one rank failing a repeat (a failed repeat; the session goes on), and the wear-out
//! stonewall with a rank throttled by a cgroup: for the whole phase, and up to its stonewall
//! only, where the aggregate must differ from the ranks' sum by what the skew predicts; and
//! bonnie's fixed-work small-file phases with a rank throttled, where the headline (all the
//! work over first start to last end) must differ from the ranks' sum by what their times
//! predict.
//! Built only with `--features mpi` (`cargo test --features mpi --test integration mpi`).

use crate::require_privileged;
use crate::util::{
    assert_no_leftovers, bin, report_json, run_args, scratch, skip_or_fail, text, tool_path, write_suite,
};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SUITE: &str = r#"
[suite]
name = "mpi"

[run]
repeats = 1
drop_caches = false

[[fs]]
type = "ext4"

[[workload]]
kind = "bonnie"
name = "smallfiles"
file_size = "0"
seeks = 0
files = 1024
file_max_size = "0"

[[workload]]
kind = "fileio"
name = "fileio"
mode = "rndrw"
files = 2
total_size = "8MiB"
block_size = "4KiB"
time = "1s"
"#;

/// row → metric → value of one stored sample; a row is the phase, `PHASE@rankN` for rank N's
/// own figures.
type Rows = BTreeMap<String, BTreeMap<String, f64>>;

/// The report row of a stored measurement or series: its phase, with `@rankN` when it has a
/// `rank` (never inside the phase name itself).
/// Reads the child's stderr line by line until a line contains `needle` (the lines so far),
/// failing if the child ends first (`what` names the line awaited) or `limit` after `t0` passes.
fn read_until(
    err: &mut BufReader<std::process::ChildStderr>,
    needle: &str,
    t0: Instant,
    limit: Duration,
    what: &str,
) -> String {
    let mut log = String::new();
    while !log.contains(needle) {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            panic!("the run ended before {what}: {log}");
        }
        log.push_str(&line);
        assert!(t0.elapsed() < limit, "{log}");
    }
    log
}

fn row_of(m: &serde_json::Value) -> String {
    let phase = m["phase"].as_str().unwrap();
    assert!(!phase.contains('@'), "a rank in a phase name: {phase}");
    match m["rank"].as_u64() {
        Some(r) => format!("{phase}@rank{r}"),
        None => phase.to_string(),
    }
}

fn rows(sample: &serde_json::Value) -> Rows {
    let mut out = Rows::new();
    for m in sample["measurements"].as_array().unwrap() {
        out.entry(row_of(m)).or_default().insert(
            m["metric"]["name"].as_str().unwrap().to_string(),
            m["value"].as_f64().unwrap(),
        );
    }
    out
}

/// The per-second series of `row` (as [`row_of`]) in a stored sample, if it has one.
fn series_of(sample: &serde_json::Value, row: &str) -> Option<Vec<f64>> {
    sample["series"].as_array()?.iter().find(|t| row_of(t) == row).map(|t| {
        t["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    })
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn have_mpirun() -> bool {
    if tool_path("mpirun").is_none() {
        skip_or_fail("mpirun is not installed (scripts/install.sh installs openmpi-bin)");
        return false;
    }
    true
}

#[test]
fn four_ranks_run_small_files_and_fileio_with_cluster_figures_from_every_rank() {
    require_privileged!();
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    // fileio for 3 s: a window of a few per-second buckets for the series check below.
    let suite = write_suite(dir.path(), "mpi.toml", &SUITE.replace("time = \"1s\"", "time = \"3s\""));
    let db = dir.path().join("r.db");
    let sc = dir.path().join("scratch");
    // `--ranks 4` starts mpirun itself (crates/comm/src/launch.rs).
    let o = Command::new(bin())
        .args(run_args(&db, &suite, ("--scratch", &sc)))
        .args(["--ranks", "4"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_no_leftovers(&sc);

    let r = report_json(db.to_str().unwrap(), "latest");
    assert_eq!(r["session"]["status"], "complete", "{r}");
    // Every rank's fingerprint, in its own table (rank_hosts): host, and the mount of the
    // ranks' directory (here the scratch folder) as /proc/self/mountinfo names it.
    let rank_hosts = r["session"]["ranks"]
        .as_array()
        .unwrap_or_else(|| panic!("no ranks: {r}"));
    assert_eq!(rank_hosts.len(), 4, "{r}");
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    for (k, rk) in rank_hosts.iter().enumerate() {
        assert_eq!(rk["rank"], k, "{rk}");
        assert!(!rk["host"]["kernel"].as_str().unwrap().is_empty(), "{rk}");
        assert!(rk["host"]["mem_bytes"].as_u64().unwrap() > 0, "{rk}");
        assert_eq!(rk["dir"], sc.to_str().unwrap(), "{rk}");
        let point = rk["mount_point"].as_str().unwrap();
        assert!(sc.starts_with(point), "{rk}");
        // The mount's line: its point, options, then after " - " its type and source.
        let line = mountinfo
            .lines()
            .rev()
            .find(|l| l.split(' ').nth(4) == Some(point))
            .unwrap_or_else(|| panic!("{point} in mountinfo"));
        assert_eq!(line.split(' ').nth(5), rk["mount_opts"].as_str(), "{rk}");
        let after = line.split(" - ").nth(1).unwrap();
        assert!(
            after.starts_with(&format!(
                "{} {} ",
                rk["fs_type"].as_str().unwrap(),
                rk["mount_source"].as_str().unwrap()
            )),
            "{rk} vs {line}"
        );
        assert!(!rk["mount_opts"].as_str().unwrap().is_empty(), "{rk}");
    }
    assert_eq!(rank_hosts[0]["clock_offset_ns"], 0, "rank 0 against itself");
    assert!(
        !r["session"]["tool_versions"].to_string().contains("mpi rank"),
        "fingerprints are no longer tool versions"
    );
    let samples = r["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2);
    let mut checked_aggregate = 0;
    let mut checked_latency = 0;
    let mut checked_series = 0;
    for s in samples {
        assert_eq!(s["status"]["state"], "ok", "{s}");
        let rows = rows(s);
        let phases: Vec<&String> = rows.keys().filter(|p| !p.contains('@') && *p != "quiesce").collect();
        assert!(!phases.is_empty());
        for p in phases {
            let cluster = &rows[p];
            let ranks: Vec<&BTreeMap<String, f64>> = (0..4)
                .map(|k| {
                    rows.get(&format!("{p}@rank{k}"))
                        .unwrap_or_else(|| panic!("no row {p}@rank{k}"))
                })
                .collect();
            // Timeline: every rank starts after the last rank arrived at the phase's sync (the
            // origin, 0), and the sync's arrivals are at or before it; the clocks of one host
            // agree to well under a millisecond.
            for (k, rk) in ranks.iter().enumerate() {
                assert!(
                    rk["start_s"] >= -1e-3,
                    "{p}: rank {k} started {} s before the sync released",
                    rk["start_s"]
                );
                assert!(rk["sync_in_s"] <= 1e-3, "{p}: rank {k} arrived after the release");
                assert!(
                    close(rk["end_s"] - rk["start_s"], rk["wall_s"])
                        || (rk["end_s"] - rk["start_s"] - rk["wall_s"]).abs() < 1e-6
                );
            }
            let first_start = ranks.iter().map(|x| x["start_s"]).fold(f64::MAX, f64::min);
            let last_start = ranks.iter().map(|x| x["start_s"]).fold(f64::MIN, f64::max);
            let first_end = ranks.iter().map(|x| x["end_s"]).fold(f64::MAX, f64::min);
            let last_end = ranks.iter().map(|x| x["end_s"]).fold(f64::MIN, f64::max);
            let walls: Vec<f64> = ranks.iter().map(|x| x["wall_s"]).collect();
            assert!(close(
                cluster["slowest_rank_s"],
                walls.iter().copied().fold(0.0, f64::max)
            ));
            for (name, v) in cluster {
                let Some(base) = name.strip_suffix("_fair_share") else {
                    continue;
                };
                // Fair share: the ranks' work (rate × wall) over first start to last end.
                let work: f64 = ranks.iter().map(|x| x[base] * x["wall_s"]).sum();
                assert!(
                    (v - work / (last_end - first_start)).abs() <= 1e-6 * v.abs().max(1.0),
                    "{p} {name}: {v} vs {}",
                    work / (last_end - first_start)
                );
                // The ranks' sum is kept as a detail row (a consistency check of that row; the
                // ranks here run alike, so it cannot tell the headline from the sum:
                // a_rank_throttled_… do). A phase without per-rank series (fixed work) has
                // the fair share as its headline, with or without a moment all ranks ran; with
                // series the headline is measured while all ranks were active (checked against
                // the raw seconds below) and absent without such a window.
                let sum: f64 = ranks.iter().map(|x| x[base]).sum();
                let timed = series_of(s, &format!("{p}@rank0")).is_some();
                if !timed || last_start < first_end {
                    let rank_sum = cluster[&format!("{base}_rank_sum")];
                    assert!(
                        (rank_sum - sum).abs() <= 1e-6 * sum.max(1.0),
                        "{p} {base}: {rank_sum} vs {sum}"
                    );
                    if !timed {
                        assert!(
                            (cluster[base] - v).abs() <= 1e-9 * v.abs().max(1.0),
                            "{p} {base}: {} vs the fair share {v}",
                            cluster[base]
                        );
                    }
                    checked_aggregate += 1;
                } else {
                    assert!(
                        !cluster.contains_key(base),
                        "{p}: no window in which all ran, yet an aggregate"
                    );
                }
            }
            // The aggregate against the raw per-rank per-second series (`P@rankN`, second i
            // from the rank's own start): the operations of every rank inside the window
            // (latest start → earliest end) lie between the buckets wholly inside it and those
            // touching it, so the aggregate's work (Σ rates × window) must lie there too,
            // within the 1 s bucket resolution.
            let series: Vec<Vec<f64>> = (0..4).filter_map(|k| series_of(s, &format!("{p}@rank{k}"))).collect();
            if !series.is_empty() {
                assert_eq!(series.len(), 4, "{p}: a series from every rank");
                let ops_rates: Vec<&String> = cluster
                    .keys()
                    .filter(|n| n.ends_with("_per_s") && !n.contains("fair_share"))
                    .collect();
                assert!(!ops_rates.is_empty(), "{p}: no ops/s aggregate: {cluster:?}");
                // The series count every operation of the timed loop: each rank's equals its
                // rates × wall, but for the final fsync of each of the 2 files (fileio's
                // fsync-at-end, counted in fsyncs_per_s after the loop).
                for (k, (ser, rk)) in series.iter().zip(&ranks).enumerate() {
                    let counted: f64 = ser.iter().sum();
                    let rated: f64 = ops_rates.iter().map(|n| rk[n.as_str()] * rk["wall_s"]).sum();
                    assert!(
                        (rated - counted).abs() <= 2.5 + 1e-9 * rated,
                        "{p} rank {k}: {counted} vs {rated}"
                    );
                }
                let (from, to) = (last_start, first_end);
                assert!(to > from, "{p}: the ranks overlapped");
                let (mut inside, mut touching) = (0.0, 0.0);
                for (ser, rk) in series.iter().zip(&ranks) {
                    for (i, n) in ser.iter().enumerate() {
                        let (a, b) = (rk["start_s"] + i as f64, rk["start_s"] + i as f64 + 1.0);
                        if a >= from && b <= to {
                            inside += n;
                        }
                        if b > from && a < to {
                            touching += n;
                        }
                    }
                }
                let window = to - from;
                let aggregate: f64 = ops_rates.iter().map(|n| cluster[n.as_str()]).sum();
                assert!(
                    inside <= aggregate * window + 3.0 && aggregate * window <= touching + 3.0,
                    "{p}: aggregate {aggregate}/s × {window} s outside the series' {inside}..={touching} operations"
                );
                // The same aggregate computed here from the raw seconds: each second's
                // operations spread over it (the last one ends at the rank's end), the part
                // inside the window counted, scaled by the rank's rated work over its counted
                // operations (fileio's final fsyncs are rated but not in the series).
                for n in &ops_rates {
                    let mut work = 0.0;
                    for (ser, rk) in series.iter().zip(&ranks) {
                        let counted: f64 = ser.iter().sum();
                        let end = rk["end_s"];
                        let mut inside = 0.0;
                        for (i, ops) in ser.iter().enumerate() {
                            let a = rk["start_s"] + i as f64;
                            let b = (a + 1.0).min(end).max(a);
                            if b > a {
                                inside += ops * (b.min(to) - a.max(from)).max(0.0) / (b - a);
                            }
                        }
                        work += rk[n.as_str()] * rk["wall_s"] * inside / counted;
                    }
                    let independent = work / window;
                    assert!(
                        (cluster[n.as_str()] - independent).abs() <= 1e-3 * independent.max(1.0),
                        "{p} {n}: stored {} vs from the series {independent}",
                        cluster[n.as_str()]
                    );
                }
                checked_series += 1;
            }
            // Reduced percentiles lie among the ranks'; the maximum is the largest rank's.
            if let Some(max) = cluster.get("lat_max") {
                // (A rank that timed no operation in the phase has no latency row.)
                let rank_max = ranks
                    .iter()
                    .filter_map(|x| x.get("lat_max"))
                    .fold(0.0, |a, b| f64::max(a, *b));
                assert!(close(*max, rank_max), "{p}: cluster max {max} vs ranks' {rank_max}");
                let p50s: Vec<f64> = ranks.iter().filter_map(|x| x.get("lat_p50").copied()).collect();
                let lo = p50s.iter().copied().fold(f64::MAX, f64::min);
                let hi = p50s.iter().copied().fold(0.0, f64::max);
                assert!(
                    (lo..=hi).contains(&cluster["lat_p50"]),
                    "{p}: p50 {} outside {lo}..{hi}",
                    cluster["lat_p50"]
                );
                checked_latency += 1;
            }
        }
    }
    assert!(checked_aggregate > 0, "no phase had an aggregate window");
    assert!(
        checked_series > 0,
        "no phase had per-rank series to check the aggregate with"
    );
    assert!(checked_latency > 0, "no phase had latency");

    // The report's section: every rank of every phase in the table and the timeline chart.
    let db = db.to_str().unwrap();
    let md = crate::util::fsbench(&["--db", db, "report", "latest", "--format", "md"]);
    let md = String::from_utf8_lossy(&md.stdout).into_owned();
    assert!(md.contains("## Ranks"), "{md}");
    // The fingerprint table: one row per rank with its mount.
    let mount_type = rank_hosts[0]["fs_type"].as_str().unwrap();
    for k in 0..4 {
        assert!(
            md.lines()
                .any(|l| l.starts_with(&format!("| {k} |")) && l.contains(&format!("type {mount_type}"))),
            "rank {k}'s fingerprint row: {md}"
        );
    }
    assert!(
        md.contains("| rndrw | 3 |"),
        "fileio's rank 3 in the per-rank table: {md}"
    );
    let html = crate::util::fsbench(&["--db", db, "report", "latest", "--format", "html"]);
    let html = String::from_utf8_lossy(&html.stdout).into_owned();
    assert!(html.contains("aria-label=\"per-rank timeline\""), "timeline chart");
    assert!(html.contains("<title>rndrw rank 3:"), "a bar per rank and phase");
}

/// Starts 4 ranks on a two-repeat suite (smallfiles, fileio of 2 s), waits until the last
/// repeat runs, sends `signal` to rank 2 and returns mpirun's status and its stderr.
///
/// `launcher`: started as `fsbench run --ranks 4` (crates/comm/src/launch.rs), else by mpirun directly.
/// Returns too how long the run took from the signal to its end.
fn run_and_signal_rank_2(
    signal: i32,
    extra_env: &[(&str, &str)],
    launcher: bool,
) -> (std::process::ExitStatus, String, tempfile::TempDir, Duration) {
    let dir = scratch();
    let suite = write_suite(
        dir.path(),
        "kill.toml",
        // Sequential order, so the last repeat is fileio's second whatever the seed (an
        // interleaved session runs each round in a fresh random order).
        &SUITE
            .replace("repeats = 1", "repeats = 2\norder = \"sequential\"")
            .replace("time = \"1s\"", "time = \"2s\""),
    );
    let db = dir.path().join("k.db");
    let sc = dir.path().join("scratch");
    let t0 = Instant::now();
    // mpirun sends the survivors SIGTERM after odls_base_sigkill_timeout and SIGKILL after
    // twice that; 10 s leaves rank 0 time to tear down.
    let mut cmd = if launcher {
        Command::new(bin())
    } else {
        let mut c = Command::new("mpirun");
        c.args([
            "--allow-run-as-root",
            "--oversubscribe",
            "--mca",
            "odls_base_sigkill_timeout",
            "10",
            "-np",
            "4",
        ]);
        for (k, v) in extra_env {
            c.env(k, v).args(["-x", k]);
        }
        c.arg(bin());
        c
    };
    let mut child = cmd
        .args(run_args(&db, &suite, ("--scratch", &sc)))
        .args(if launcher { &["--ranks", "4"][..] } else { &[] })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    // The last repeat of four is fileio's second: three repeats are committed by then.
    let mut log = read_until(&mut err, "[4/4]", t0, Duration::from_secs(90), "its last repeat");
    std::thread::sleep(Duration::from_secs(1));
    // Rank 2 of this run: our binary, our scratch folder on its command line, rank 2 in its
    // environment.
    let mut found = 0;
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let p = e.path();
        let cmd = std::fs::read(p.join("cmdline")).unwrap_or_default();
        let env = std::fs::read(p.join("environ")).unwrap_or_default();
        let has = |hay: &[u8], needle: &str| hay.split(|b| *b == 0).any(|w| w == needle.as_bytes());
        if has(&cmd, sc.to_str().unwrap()) && has(&env, "OMPI_COMM_WORLD_RANK=2") {
            let pid: i32 = e.file_name().to_string_lossy().parse().unwrap();
            unsafe { libc::kill(pid, signal) };
            found += 1;
        }
    }
    assert_eq!(found, 1, "rank 2 not found: {log}");
    let signalled = Instant::now();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    log.push_str(&rest);
    let status = child.wait().unwrap();
    let took = signalled.elapsed();
    assert!(t0.elapsed() < Duration::from_secs(120), "{log}");
    assert_no_leftovers(&sc);
    let r = report_json(db.to_str().unwrap(), "latest");
    assert_eq!(r["session"]["status"], "interrupted", "{r}");
    let ok = r["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["status"]["state"] == "ok")
        .count();
    assert_eq!(ok, 3, "the repeats committed before the rank went are kept: {r}");
    (status, log, dir, took)
}

#[test]
fn a_killed_rank_ends_the_run_with_an_error_and_nothing_mounted() {
    require_privileged!();
    if !have_mpirun() {
        return;
    }
    // Through `--ranks 4`: mpirun itself exits 137 (128 + SIGKILL) when a rank was killed; the
    // launcher turns that into the contract's exit 1 and names the rank.
    let (status, log, _dir, took) = run_and_signal_rank_2(libc::SIGKILL, &[], true);
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(log.contains("fsbench: error: rank 2 was killed (signal 9"), "{log}");
    // Every surviving rank says what happened: mpirun's SIGCONT reached it while it waited for
    // the dead rank (or its wait gave up first).
    assert!(
        log.matches("mpirun is ending the job").count() + log.matches("did not reach").count() >= 3,
        "each of the 3 survivors reports the dead rank: {log}"
    );
    assert!(log.contains("the ranks stopped"), "{log}");
    // Prompt: mpirun's two sleeps of odls_base_sigkill_timeout (5 s), not a minute.
    assert!(
        took < Duration::from_secs(25),
        "{took:?} from the kill to the end: {log}"
    );
}

#[test]
fn a_hung_rank_trips_the_watchdog_instead_of_hanging_the_run() {
    require_privileged!();
    if !have_mpirun() {
        return;
    }
    // SIGSTOP: mpirun sees nothing; the survivors' waits give up at the watchdog (2 s, or three
    // times the longest stretch between syncs: the 2 s fileio phase).
    let (status, log, _dir, _) = run_and_signal_rank_2(libc::SIGSTOP, &[("FSBENCH_MPI_WATCHDOG", "2")], false);
    assert!(!status.success(), "{log}");
    assert!(log.contains("watchdog (a rank died or hangs)"), "{log}");
    assert!(log.contains("the ranks stopped"), "{log}");
}

#[test]
fn ranks_with_different_suites_are_refused_before_anything_is_made() {
    require_privileged!();
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let a = write_suite(dir.path(), "a.toml", SUITE);
    let b = write_suite(dir.path(), "b.toml", &SUITE.replace("files = 1024", "files = 2048"));
    let db = dir.path().join("d.db");
    let sc = dir.path().join("scratch");
    let run = |suite: &str| -> Vec<String> {
        std::iter::once(bin().to_str().unwrap())
            .chain(run_args(&db, suite, ("--scratch", &sc)))
            .map(String::from)
            .collect()
    };
    // MPMD: rank 0 runs suite a, rank 1 suite b.
    let o = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "1"])
        .args(run(&a))
        .arg(":")
        .args(["-np", "1"])
        .args(run(&b))
        .output()
        .unwrap();
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(
        t.matches("rank 1 has another suite text than rank 0").count() >= 2,
        "both ranks say why: {t}"
    );
    assert_no_leftovers(&sc);
    assert!(!db.exists(), "nothing stored: {t}");
}

/// A cgroup v1 `cpu` group that holds a process to `pct` % of one CPU, removed on drop (its
/// processes have ended by then). One group per call: the tests of this binary run at once.
struct CpuLimit(std::path::PathBuf);

impl CpuLimit {
    fn new(pct: u32) -> Option<CpuLimit> {
        static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::path::PathBuf::from(format!(
            "/sys/fs/cgroup/cpu/fsbench-test-slow-{}-{n}",
            std::process::id()
        ));
        std::fs::create_dir(&dir).ok()?;
        let g = CpuLimit(dir);
        std::fs::write(g.0.join("cpu.cfs_period_us"), "100000").ok()?;
        std::fs::write(g.0.join("cpu.cfs_quota_us"), (1000 * pct).to_string()).ok()?;
        Some(g)
    }
}

impl Drop for CpuLimit {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// One fileio phase of random reads with the null engine (pure CPU, so a [`CpuLimit`] slows
/// a rank in proportion) for 1 s, with wear-out stonewalling.
const STONEWALL_SUITE: &str = r#"
[suite]
name = "stonewall"

[run]
repeats = 1
drop_caches = false

[[fs]]
type = "tmpfs"

[[workload]]
kind = "fileio"
name = "wall"
mode = "rndrd"
files = 1
total_size = "1MiB"
block_size = "4KiB"
io = "null"
time = "1s"
wear_out = true
"#;

/// `mpirun` with two ranks of `fsbench -v run SUITE`, rank 1 inside `slow` (it enters the
/// cgroup, then becomes fsbench: same process, same environment); not started.
fn slowed_rank_1(slow: &CpuLimit, db: &std::path::Path, suite: &str, sc: &std::path::Path) -> Command {
    let bin = bin();
    let fsbench: Vec<&str> = [bin.to_str().unwrap(), "-v"]
        .into_iter()
        .chain(run_args(db, suite, ("--scratch", sc)))
        .collect();
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "1"])
        .args(&fsbench)
        .args([":", "-np", "1", "sh", "-c", "echo $$ > \"$0\"/tasks && exec \"$@\""])
        .arg(&slow.0)
        .args(&fsbench);
    cmd
}

/// Runs `suite` (written as `name`) with rank 1 held to `pct` % of a CPU, checks that it
/// succeeded, left nothing and stored an ok sample, and returns that sample with the run's wall
/// time (the limit is dropped at return). `None` where the test cannot run (said by
/// [`skip_or_fail`]).
fn run_with_rank_1_slowed(pct: u32, name: &str, suite: &str) -> Option<(serde_json::Value, Duration)> {
    if !have_mpirun() {
        return None;
    }
    let Some(slow) = CpuLimit::new(pct) else {
        skip_or_fail("no cgroup v1 cpu controller to slow a rank with");
        return None;
    };
    let dir = scratch();
    let suite = write_suite(dir.path(), name, suite);
    let db = dir.path().join("slowed.db");
    let sc = dir.path().join("scratch");
    let t0 = Instant::now();
    let o = slowed_rank_1(&slow, &db, &suite, &sc).output().unwrap();
    let took = t0.elapsed();
    assert!(o.status.success(), "{}", text(&o));
    assert_no_leftovers(&sc);
    let r = report_json(db.to_str().unwrap(), "latest");
    let s = r["samples"][0].clone();
    assert_eq!(s["status"]["state"], "ok", "{s}");
    Some((s, took))
}

#[test]
fn a_slowed_rank_wears_out_to_the_count_agreed_at_the_stonewall() {
    require_privileged!();
    let Some((s, took)) = run_with_rank_1_slowed(25, "wall.toml", STONEWALL_SUITE) else {
        return;
    };
    let s = &s;
    let rows = rows(s);
    let (cluster, fast, slowed) = (&rows["rndrd"], &rows["rndrd@rank0"], &rows["rndrd@rank1"]);
    let agreed = cluster["stonewall_agreed_ops"];
    // The agreed count is the larger count at the stonewall: the fast rank's, so it did no
    // extra work; the slowed one had done fewer and wore out to exactly that count.
    assert_eq!(agreed, fast["ops_before_stonewall"], "{rows:?}");
    assert_eq!(fast["ops_after_stonewall"], 0.0, "{rows:?}");
    assert!(
        slowed["ops_before_stonewall"] < 0.8 * agreed,
        "rank 1 was slowed: {rows:?}"
    );
    assert_eq!(
        slowed["ops_before_stonewall"] + slowed["ops_after_stonewall"],
        agreed,
        "{rows:?}"
    );
    assert_eq!(cluster["stonewall_ops_min"], slowed["ops_before_stonewall"]);
    assert_eq!(cluster["stonewall_ops_max"], agreed);
    // The figures cover the same work on every rank: rate × wall is the agreed count.
    for (k, rk) in [fast, slowed].iter().enumerate() {
        let work = rk["reads_per_s"] * rk["wall_s"];
        assert!(
            (work - agreed).abs() <= 1e-6 * agreed,
            "rank {k}: {work} requests vs {agreed}"
        );
    }
    // The fast rank stopped at the stonewall (1 s), not later; the slowed one wore out after it.
    assert!(fast["wall_s"] < 1.5, "{rows:?}");
    assert!(slowed["wall_s"] > fast["wall_s"], "{rows:?}");
    let notes = s["notes"].to_string();
    assert!(notes.contains("stonewall (wear-out)"), "{notes}");
    assert!(took < Duration::from_secs(60), "{took:?}");
}

/// rank row → metric → value, the figures the tests below read.
fn figure(rows: &Rows, row: &str, name: &str) -> f64 {
    *rows
        .get(row)
        .and_then(|r| r.get(name))
        .unwrap_or_else(|| panic!("no {row} {name}: {rows:?}"))
}

#[test]
fn a_rank_throttled_inside_the_window_makes_the_aggregate_differ_from_the_rank_sum() {
    // A rank throttled steadily for its whole phase (the test above) leaves the aggregate equal
    // to the ranks' sum: with wear-out it runs after the window at the rate it ran inside it.
    // The two differ when a rank's rate inside the window differs from its rate outside it:
    // rank 1 is held to 10 % of a CPU up to its stonewall, then the test lifts the quota, so it
    // wears out at full speed after the window, and its average rate over its phase is well
    // above its rate inside the window.
    require_privileged!();
    if !have_mpirun() {
        return;
    }
    let Some(slow) = CpuLimit::new(10) else {
        skip_or_fail("no cgroup v1 cpu controller to slow a rank with");
        return;
    };
    // The phase's time: two whole seconds of each rank's series inside the window.
    const T: f64 = 2.0;
    let dir = scratch();
    let suite = write_suite(
        dir.path(),
        "skew.toml",
        &STONEWALL_SUITE.replace("time = \"1s\"", "time = \"2s\""),
    );
    let db = dir.path().join("s.db");
    let sc = dir.path().join("scratch");
    let t0 = Instant::now();
    let mut child = slowed_rank_1(&slow, &db, &suite, &sc)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    // When the phase started: `-v` prints "phase rndrd" once the phase's sync has released
    // every rank (`Phases::begin` in crates/engine/src/phase.rs: the sync, then the progress line), so
    // the line comes at the phase's start or after it, never before, whatever the load; read
    // late, it only lifts the throttle later (a smaller difference, still the predicted one).
    // Rank 1 reaches its stonewall T s after its own start, which follows the release by at
    // most a throttled period (90 ms of 100); 0.5 s more is a wide margin, and rank 1 at 10 %
    // would need about 9 T more to wear out, so the lift comes long before it ends. (The
    // cgroup's CPU time or throttle count would show the phase too, but MPI's start-up and the
    // fingerprints burn CPU as well; the null engine writes no file to watch for.)
    let mut log = read_until(&mut err, "phase rndrd", t0, Duration::from_secs(60), "its phase");
    std::thread::sleep(Duration::from_secs_f64(T + 0.5));
    std::fs::write(slow.0.join("cpu.cfs_quota_us"), "-1").unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    log.push_str(&rest);
    let status = child.wait().unwrap();
    assert!(status.success(), "{log}");
    assert_no_leftovers(&sc);
    let r = report_json(db.to_str().unwrap(), "latest");
    let s = &r["samples"][0];
    assert_eq!(s["status"]["state"], "ok", "{s}");
    let rows = rows(s);
    let f = |row: &str, name: &str| figure(&rows, row, name);
    let ranks = ["rndrd@rank0", "rndrd@rank1"];
    // The skew: rank 1's rate up to its stonewall well below rank 0's; rank 0 had done the
    // agreed count and ended at the agreement.
    let before: Vec<f64> = ranks.iter().map(|k| f(k, "ops_before_stonewall") / T).collect();
    assert!(before[1] < 0.5 * before[0], "rank 1 was throttled: {rows:?}");
    assert_eq!(f(ranks[0], "ops_after_stonewall"), 0.0, "{rows:?}");

    // The aggregate computed here from the per-rank rows only (no series): the window is the
    // latest start to the earliest end (rank 0's, at the stonewall agreement). Every rank did
    // its `ops_before_stonewall` between its start and its stonewall T s later, at a steady
    // rate there (rank 0 unthrottled, rank 1 at its quota: even over its 100 ms periods), so
    // the part inside the window is in proportion to the overlap; its `ops_after_stonewall`
    // came after the agreement, which closed the window.
    let from = ranks.iter().map(|k| f(k, "start_s")).fold(f64::MIN, f64::max);
    let to = ranks.iter().map(|k| f(k, "end_s")).fold(f64::MAX, f64::min);
    let window = to - from;
    assert!(window > 0.9 * T, "{rows:?}");
    let inside: Vec<f64> = ranks
        .iter()
        .map(|k| {
            let (a, b) = (f(k, "start_s"), f(k, "start_s") + T);
            f(k, "ops_before_stonewall") * (b.min(to) - a.max(from)).max(0.0) / T
        })
        .collect();
    let independent = inside.iter().sum::<f64>() / window;
    let aggregate = f("rndrd", "reads_per_s");
    let rank_sum = f("rndrd", "reads_per_s_rank_sum");
    // The tool spreads each rank's operations evenly within each of its seconds, this over its
    // whole stretch to the stonewall: the two differ only where the window's start cuts into
    // the earlier rank's first second (the ranks' start offset, a few ms here; under load at
    // most a throttled period, 90 ms), and then by how unevenly that rank ran (its seconds
    // differ by up to a quarter under the other tests' load): 0.25 × 90 ms of 2 s is 1.1 %
    // of that rank's rate. 2 % of the aggregate covers it (measured: within 0.01 %).
    let tolerance = 0.02 * aggregate;
    assert!(
        (aggregate - independent).abs() <= tolerance,
        "aggregate {aggregate} vs {independent} computed from the ranks' rows: {rows:?}"
    );
    // What the skew predicts: the ranks' sum exceeds the aggregate by rank 1's average rate
    // over its phase less its rate inside the window, its wear-out at full speed after the
    // lift; rank 0 ran at its average inside the window (the window is its phase, but for the
    // ranks' start offset), so nothing of the difference is its.
    let predicted = f(ranks[1], "reads_per_s") - inside[1] / window;
    let difference = rank_sum - aggregate;
    eprintln!(
        "aggregate {aggregate:.0}/s (computed here {independent:.0}/s), rank sum {rank_sum:.0}/s, \
         difference {difference:.0}/s, predicted {predicted:.0}/s; window {window:.3} s"
    );
    assert!(
        (difference - predicted).abs() <= tolerance,
        "rank sum − aggregate {difference} vs {predicted} predicted: {rows:?}"
    );
    // Large against the tolerances: an aggregate that were the ranks' sum fails above.
    assert!(
        difference >= 0.2 * aggregate,
        "the skew's cost {difference} is small against {aggregate}: {rows:?}"
    );
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    drop(slow);
}

/// bonnie's small-file phases (fixed work: `FILES` files per rank, no per-second series) on
/// tmpfs, so a [`CpuLimit`] slows a rank in proportion.
const FILES: f64 = 10_000.0;
const FILES_SUITE: &str = r#"
[suite]
name = "skewfiles"

[run]
repeats = 1
drop_caches = false

[[fs]]
type = "tmpfs"

[[workload]]
kind = "bonnie"
name = "files"
file_size = "0"
seeks = 0
files = 10000
file_max_size = "0"
"#;

#[test]
fn a_rank_throttled_through_fixed_work_phases_makes_the_headline_differ_from_the_rank_sum() {
    // A fixed-work phase has no per-second series: its headline is all the ranks' work over
    // first start to last end (IOR's aggregate), not the sum of their average rates. Rank 1 is
    // held to 10 % of a CPU for the whole run, so it takes several times rank 0's time for the
    // same files; the prediction below comes from the ranks' recorded start and end alone.
    require_privileged!();
    let Some((s, took)) = run_with_rank_1_slowed(10, "files.toml", FILES_SUITE) else {
        return;
    };
    let s = &s;
    let rows = rows(s);
    let f = |row: &str, name: &str| figure(&rows, row, name);
    let mut most = (0.0f64, "");
    for p in [
        "seq_create",
        "seq_stat",
        "seq_delete",
        "rand_create",
        "rand_stat",
        "rand_delete",
    ] {
        let ranks = [format!("{p}@rank0"), format!("{p}@rank1")];
        assert!(series_of(s, &ranks[0]).is_none(), "{p} is fixed work");
        let (start, end): (Vec<f64>, Vec<f64>) = ranks.iter().map(|k| (f(k, "start_s"), f(k, "end_s"))).unzip();
        // Fixed work: every rank did the same FILES files, whatever its speed.
        for k in &ranks {
            let done = f(k, "rate") * f(k, "wall_s");
            assert!((done - FILES).abs() <= 1e-6 * FILES, "{k}: {done} files");
        }
        // What the skew predicts from the ranks' times: the headline is 2 × FILES over first
        // start to last end, the ranks' sum FILES / (end − start) of each.
        let span = end.iter().copied().fold(f64::MIN, f64::max) - start.iter().copied().fold(f64::MAX, f64::min);
        let headline = 2.0 * FILES / span;
        let sum: f64 = start.iter().zip(&end).map(|(a, b)| FILES / (b - a)).sum();
        let (stored, stored_sum) = (f(p, "rate"), f(p, "rate_rank_sum"));
        assert!(
            (stored - headline).abs() <= 1e-6 * headline,
            "{p}: headline {stored} vs {headline} predicted (rank sum {stored_sum}): {rows:?}"
        );
        let (difference, predicted) = (stored_sum - stored, sum - headline);
        assert!(
            (difference - predicted).abs() <= 1e-6 * sum,
            "{p}: rank sum − headline {difference} vs {predicted} predicted: {rows:?}"
        );
        eprintln!(
            "{p}: rank walls {:.3} and {:.3} s; headline {stored:.0}/s, rank sum {stored_sum:.0}/s",
            f(&ranks[0], "wall_s"),
            f(&ranks[1], "wall_s")
        );
        if difference / stored_sum > most.0 {
            most = (difference / stored_sum, p);
        }
    }
    // The throttle made a real skew: where it was largest rank 1 took over twice rank 0's
    // time, so the headline is well below the ranks' sum ((k − 1) / (k + 1) of it for a rank
    // k times slower that started with the other): a headline that were the sum would miss
    // the prediction above by that much, far outside its 1e-6.
    let (share, p) = most;
    let walls = [f(&format!("{p}@rank0"), "wall_s"), f(&format!("{p}@rank1"), "wall_s")];
    eprintln!("{p}: the sum exceeds the headline by {:.0} %", 100.0 * share);
    assert!(walls[1] > 2.0 * walls[0], "{p}: rank 1 was throttled: {walls:?}");
    assert!(share > 0.25, "{p}: {share}: {rows:?}");
    assert!(took < Duration::from_secs(60), "{took:?}");
}

/// A fileio suite on a 160 MiB tmpfs: 64 MiB of files, shared by the ranks or one set each.
fn shared_suite(share: bool) -> String {
    format!(
        r#"
[suite]
name = "shared"

[run]
repeats = 1
drop_caches = false

[[fs]]
type = "tmpfs"
image_size = "160MiB"

[[workload]]
kind = "fileio"
name = "shared"
mode = "rndrd"
files = 2
total_size = "64MiB"
block_size = "4KiB"
time = "1s"
ranks_share = {share}
"#
    )
}

/// A second, small fileio case, one file set per rank, after [`shared_suite`]'s.
const SMALL_CASE: &str = r#"
[[workload]]
kind = "fileio"
name = "small"
mode = "rndrd"
files = 1
total_size = "4MiB"
block_size = "4KiB"
time = "1s"
"#;

#[test]
fn four_ranks_share_one_fileio_file_set_that_would_not_fit_four_times() {
    require_privileged!();
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let run = |share: bool| {
        let text = if share {
            shared_suite(true)
        } else {
            shared_suite(false) + SMALL_CASE
        };
        let suite = write_suite(dir.path(), &format!("s{share}.toml"), &text);
        let db = dir.path().join(format!("s{share}.db"));
        let sc = dir.path().join(format!("scratch{share}"));
        let o = Command::new(bin())
            .args(["--db", db.to_str().unwrap(), "run", &suite])
            .args(["--scratch", sc.to_str().unwrap(), "--ranks", "4"])
            .output()
            .unwrap();
        assert_no_leftovers(&sc);
        (o, report_json(db.to_str().unwrap(), "latest"))
    };
    // Shared: 64 MiB on the 160 MiB filesystem, every rank reads it.
    let (o, r) = run(true);
    assert!(o.status.success(), "{}", text(&o));
    let s = &r["samples"][0];
    assert_eq!(s["status"]["state"], "ok", "{s}");
    assert!(s["notes"].to_string().contains("one shared file set of 2 files"), "{s}");
    let rows = rows(s);
    let cluster = &rows["rndrd"];
    let ranks: Vec<&BTreeMap<String, f64>> = (0..4).map(|k| &rows[&format!("rndrd@rank{k}")]).collect();
    assert!(ranks.iter().all(|r| r["reads_per_s"] > 0.0), "{rows:?}");
    // The aggregate figures: fair share is every rank's work over the span.
    let first_start = ranks.iter().map(|x| x["start_s"]).fold(f64::MAX, f64::min);
    let last_end = ranks.iter().map(|x| x["end_s"]).fold(f64::MIN, f64::max);
    let work: f64 = ranks.iter().map(|x| x["reads_per_s"] * x["wall_s"]).sum();
    let fair = cluster["reads_per_s_fair_share"];
    assert!(
        (fair - work / (last_end - first_start)).abs() <= 1e-6 * fair,
        "{rows:?}"
    );
    // One set each: 4 × 64 MiB does not fit in 160 MiB, so the same case fails (on the ranks
    // that ran out of space; the others stop at the start of the phase). That is a failed
    // repeat of the session, as alone, and the session goes on with the next case (which
    // succeeds, so the run exits 0 with a warning), promptly.
    let t0 = Instant::now();
    let (o, r) = run(false);
    let took = t0.elapsed();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "a case produced results: {t}");
    assert_eq!(r["session"]["status"], "complete", "{r}");
    let samples = r["samples"].as_array().unwrap();
    let by_case = |name: &str| {
        let case = r["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["workload"] == name)
            .unwrap()["case_id"]
            .clone();
        samples
            .iter()
            .find(|s| s["case_id"] == case)
            .unwrap_or_else(|| panic!("no sample of {name}: {r}"))
    };
    let failed = by_case("shared");
    let why = failed["status"]["error"].to_string();
    assert_eq!(failed["status"]["state"], "failed", "{failed}");
    assert!(why.contains("No space left"), "{why}");
    assert_eq!(by_case("small")["status"]["state"], "ok", "{r}");
    assert!(t.contains("repeat 1 failed"), "{t}");
    assert!(took < Duration::from_secs(40), "{took:?}: {t}");
}

#[test]
fn one_rank_failing_a_repeat_fails_that_repeat_for_the_session_which_goes_on() {
    require_privileged!();
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    // fileio, one file set per rank (8 MiB in 4 MiB files), then a small case of 1 MiB. Rank 2
    // alone may write no file above 2 MiB (RLIMIT_FSIZE, SIGXFSZ ignored so write(2) says
    // EFBIG): its first case fails while it lays out its files, the others stop at the start
    // of the phase; its second case fits.
    let suite = write_suite(
        dir.path(),
        "one.toml",
        &(shared_suite(false).replace("64MiB", "8MiB") + &SMALL_CASE.replace("4MiB", "1MiB")),
    );
    let db = dir.path().join("o.db");
    let sc = dir.path().join("scratch");
    let fsbench: Vec<String> = std::iter::once(bin().to_str().unwrap())
        .chain(run_args(&db, &suite, ("--scratch", &sc)))
        .map(String::from)
        .collect();
    let t0 = Instant::now();
    let o = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .args(&fsbench)
        .args([
            ":",
            "-np",
            "1",
            "sh",
            "-c",
            "trap '' XFSZ; ulimit -f 2048; exec \"$@\"",
            "sh",
        ])
        .args(&fsbench)
        .args([":", "-np", "1"])
        .args(&fsbench)
        .output()
        .unwrap();
    let took = t0.elapsed();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "a case produced results: {t}");
    assert_no_leftovers(&sc);
    let r = report_json(db.to_str().unwrap(), "latest");
    assert_eq!(r["session"]["status"], "complete", "{r}");
    let case_of = |name: &str| {
        r["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["workload"] == name)
            .unwrap()["case_id"]
            .clone()
    };
    let samples = r["samples"].as_array().unwrap();
    let failed = samples.iter().find(|s| s["case_id"] == case_of("shared")).unwrap();
    assert_eq!(failed["status"]["state"], "failed", "{failed}");
    let why = failed["status"]["error"].as_str().unwrap();
    // Rank 2's own error first, then every other rank stopped because of it.
    assert!(why.starts_with("invalid workload: rank 2: "), "{why}");
    assert!(why.contains("File too large"), "{why}");
    for k in [0, 1, 3] {
        assert!(
            why.contains(&format!("rank {k}: stopped: rank 2 ended its workload")),
            "rank {k}: {why}"
        );
    }
    let ok = samples.iter().find(|s| s["case_id"] == case_of("small")).unwrap();
    assert_eq!(ok["status"]["state"], "ok", "the session went on: {ok}");
    assert!(t.contains("repeat 1 failed"), "{t}");
    assert!(took < Duration::from_secs(40), "{took:?}: {t}");
}
