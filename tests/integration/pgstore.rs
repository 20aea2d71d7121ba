//! The shared PostgreSQL store on a real server (Debian's `postgresql`, started here as the
//! `postgres` user on a unix socket in a private temporary folder): a session pushed from
//! SQLite reads back with the same JSON export; pushing again copies nothing; two concurrent
//! `fsbench run --db postgres://…` writers lose and duplicate nothing; a run's per-second
//! throughput series and latency histograms survive a push unchanged and are stored by a run
//! straight into PostgreSQL, with its session-to-session noise estimates.

use crate::util::{fsbench, scratch, skip_or_fail, text, write_suite};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TINY: &str = "[suite]\nname = \"tiny\"\n\n[run]\nrepeats = 2\nwarmup = 1\ndrop_caches = false\n\n\
[[workload]]\nkind = \"bonnie\"\nfile_size = \"4MiB\"\nchunk_size = \"8KiB\"\nfiles = 64\n";

/// A PostgreSQL server of this test; stopped (fast shutdown) on drop.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGINT = fast shutdown of the postmaster we started.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let _ = self.child.wait();
    }
}

fn pg_bin(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .collect();
    dirs.sort();
    dirs.into_iter().rev().map(|d| d.join(name)).find(|p| p.exists())
}

fn start_server(dir: &Path) -> Option<Server> {
    let (Some(initdb), Some(postgres)) = (pg_bin("initdb"), pg_bin("postgres")) else {
        skip_or_fail("postgresql is not installed (scripts/install.sh installs it)");
        return None;
    };
    // The server runs as the `postgres` user the package makes; without it the test cannot
    // run, which is said (and fails under FSBENCH_REQUIRE_PRIVILEGED=1), never a silent pass.
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, "postgres"]).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    let (Some(uid), Some(gid)) = (id("-u"), id("-g")) else {
        skip_or_fail("no `postgres` user (the postgresql package makes it: scripts/install.sh)");
        return None;
    };
    let base = dir.join("pg");
    let (data, sock) = (base.join("data"), base.join("sock"));
    std::fs::create_dir_all(&sock).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    for p in [&base, &sock] {
        std::os::unix::fs::chown(p, Some(uid), Some(gid)).unwrap();
    }
    // Started directly as the postgres user (not through runuser), so the child is the
    // postmaster itself and Drop stops exactly it.
    let o = Command::new(&initdb)
        .uid(uid)
        .gid(gid)
        .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "-D"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(o.status.success(), "initdb: {}", text(&o));
    let child = Command::new(&postgres)
        .uid(uid)
        .gid(gid)
        .arg("-D")
        .arg(&data)
        .arg("-k")
        .arg(&sock)
        .args(["-c", "listen_addresses=", "-p", "5432", "-F"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server {
        child,
        url: format!("postgresql://postgres@localhost/postgres?host={}", sock.display()),
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sock.join(".s.PGSQL.5432").exists() {
        assert!(Instant::now() < deadline, "postgres did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(300));
    Some(server)
}

/// The JSON export with the ids a database assigns (session, samples) blanked.
/// An export without what names the database's own ids: the session's and samples' ids, and
/// the session-to-session noise estimates (their session lists are ids of the database that
/// computed them, so `push` leaves them there).
fn without_ids(mut j: Value) -> Value {
    j.as_object_mut().unwrap().remove("session_noise");
    j["session"]["id"] = Value::Null;
    for s in j["samples"].as_array_mut().unwrap() {
        s["id"] = Value::Null;
    }
    j
}

/// A new empty folder `name` under `root`, for a `--dir` run.
fn work_dir(root: &std::path::Path, name: &str) -> String {
    let w = root.join(name);
    std::fs::create_dir(&w).unwrap();
    w.to_string_lossy().into_owned()
}

fn export(db: &str, session: &str) -> Value {
    let o = fsbench(&["--db", db, "report", session, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn postgres_store_round_trip_push_and_concurrent_writers() {
    crate::require_privileged!();
    let dir = scratch();
    let Some(pg) = start_server(dir.path()) else { return };
    let url = pg.url.as_str();
    let suite = write_suite(dir.path(), "tiny.toml", TINY);
    let work = |name: &str| work_dir(dir.path(), name);

    // A real session into SQLite, pushed: the export from PostgreSQL equals SQLite's.
    let sqlite = dir.path().join("local.db");
    let sqlite = sqlite.to_str().unwrap();
    let o = fsbench(&["--db", sqlite, "run", &suite, "--dir", &work("w0"), "--label", "local"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = fsbench(&["--db", sqlite, "push", "--to", url]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("1 copied, 0 already there"), "{out}");
    let local = export(sqlite, "latest");
    let remote = export(url, "local");
    assert_eq!(
        without_ids(remote),
        without_ids(local.clone()),
        "PostgreSQL export differs from SQLite's"
    );
    // The check can fail: a changed value is seen.
    let mut changed = without_ids(local);
    changed["samples"][0]["measurements"][0]["value"] = Value::from(-1.0);
    assert_ne!(without_ids(export(url, "local")), changed);

    // Pushing again copies nothing.
    let o = fsbench(&["--db", sqlite, "push", "--to", url]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("0 copied, 1 already there"),
        "{}",
        text(&o)
    );

    // Two writers at once, straight into PostgreSQL (FSBENCH_DB for one of them).
    let spawn = |w: String, label: &str, via_env: bool| {
        let mut c = Command::new(crate::util::bin());
        if via_env {
            c.env("FSBENCH_DB", url);
        } else {
            c.args(["--db", url]);
        }
        c.args(["run", &suite, "--dir", &w, "--label", label])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = spawn(work("w1"), "writer-a", false);
    let b = spawn(work("w2"), "writer-b", true);
    for c in [a, b] {
        let o = c.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    let o = fsbench(&["--db", url, "list", "sessions"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let listing = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(listing.lines().count(), 3, "{listing}");
    let mut ids = Vec::new();
    for label in ["writer-a", "writer-b"] {
        let j = export(url, label);
        ids.push(j["session"]["id"].as_i64().unwrap());
        assert_eq!(j["session"]["status"], "complete");
        // Its noise rows, stored in PostgreSQL as it completed: each writer ran in its own
        // --dir, so it is the one session of its configuration (a row whose repeats cannot be
        // used lists none); no estimate yet.
        let own = Value::from(vec![j["session"]["id"].clone()]);
        let noise = j["session_noise"].as_array().expect("session_noise");
        assert!(noise.iter().any(|e| e["sessions"] == own), "{label}: {noise:?}");
        assert!(noise.iter().all(
            |e| (e["sessions"] == own || e["sessions"].as_array().is_some_and(Vec::is_empty))
                && e["between_sd_pct"].is_null()
        ));
        let samples = j["samples"].as_array().unwrap();
        // 1 warm-up + 2 measured repeats, each once, each with its measurements.
        let mut keys: Vec<(String, u64)> = samples
            .iter()
            .map(|s| {
                (
                    s["case_id"].as_str().unwrap().to_string(),
                    s["repeat"].as_u64().unwrap(),
                )
            })
            .collect();
        keys.sort();
        keys.dedup();
        assert_eq!((samples.len(), keys.len()), (3, 3), "{label}: {keys:?}");
        assert!(samples
            .iter()
            .all(|s| !s["measurements"].as_array().unwrap().is_empty()));
    }
    assert_ne!(ids[0], ids[1]);
    // History reads the shared store too.
    let o = fsbench(&["--db", url, "history", "--phase", "seq_create", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    drop(pg);
}

/// A suite whose phases store both kinds of chart data: mongo's pool phases their latency
/// histograms, fileio's time-based phase also its per-second throughput series.
const SERIES: &str = "[suite]\nname = \"series\"\n\n[run]\nrepeats = 1\ndrop_caches = false\n\n\
[[workload]]\nkind = \"mongo\"\nfiles = 200\n\n\
[[workload]]\nkind = \"fileio\"\nmode = \"rndrw\"\ntotal_size = \"8MiB\"\nfiles = 4\nblock_size = \"4KiB\"\ntime = \"2s\"\n";

/// The (phase, ops) series and the phases with a histogram of an export's samples.
fn chart_data(j: &Value) -> (Vec<(String, Vec<u64>)>, Vec<String>) {
    let (mut series, mut hist) = (Vec::new(), Vec::new());
    for s in j["samples"].as_array().unwrap() {
        for t in s["series"].as_array().cloned().unwrap_or_default() {
            let ops = t["ops"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            series.push((t["phase"].as_str().unwrap().to_string(), ops));
        }
        for h in s["histograms"].as_array().cloned().unwrap_or_default() {
            assert!(!h["bins"].as_array().unwrap().is_empty());
            hist.push(h["phase"].as_str().unwrap().to_string());
        }
    }
    // Samples are listed in run order, which a fresh seed shuffles: compare by phase.
    series.sort_by(|a, b| a.0.cmp(&b.0));
    hist.sort();
    (series, hist)
}

#[test]
fn postgres_stores_and_pushes_per_second_series_and_latency_histograms() {
    crate::require_privileged!();
    let dir = scratch();
    let Some(pg) = start_server(dir.path()) else { return };
    let url = pg.url.as_str();
    let suite = write_suite(dir.path(), "series.toml", SERIES);
    let work = |name: &str| work_dir(dir.path(), name);

    // A real run into SQLite, pushed: PostgreSQL's export, series and histograms included,
    // equals SQLite's.
    let sqlite = dir.path().join("local.db");
    let sqlite = sqlite.to_str().unwrap();
    let o = fsbench(&["--db", sqlite, "run", &suite, "--dir", &work("w0"), "--label", "local"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let local = export(sqlite, "latest");
    let (series, hist) = chart_data(&local);
    assert!(!series.is_empty(), "fileio stored no per-second series: {series:?}");
    assert!(series.iter().all(|(_, ops)| (2..=3).contains(&ops.len())), "{series:?}");
    assert!(hist.len() >= 3, "mongo and fileio phases stored histograms: {hist:?}");
    let o = fsbench(&["--db", sqlite, "push", "--to", url]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("1 copied, 0 already there"),
        "{}",
        text(&o)
    );
    let remote = export(url, "local");
    assert_eq!(
        chart_data(&remote),
        (series.clone(), hist.clone()),
        "push lost chart data"
    );
    assert_eq!(without_ids(remote.clone()), without_ids(local.clone()));
    // The check can fail: one changed second of a series, or a lost histogram, is seen.
    let mut changed = without_ids(local.clone());
    let s = changed["samples"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["series"].as_array().is_some_and(|a| !a.is_empty()))
        .unwrap();
    s["series"][0]["ops"][0] = Value::from(s["series"][0]["ops"][0].as_u64().unwrap() + 1);
    assert_ne!(without_ids(remote.clone()), changed);
    let mut changed = without_ids(local);
    let s = changed["samples"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["histograms"].as_array().is_some_and(|a| !a.is_empty()))
        .unwrap();
    s["histograms"].as_array_mut().unwrap().pop();
    assert_ne!(without_ids(remote), changed);
    // Pushing again copies nothing.
    let o = fsbench(&["--db", sqlite, "push", "--to", url]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("0 copied, 1 already there"),
        "{}",
        text(&o)
    );

    // A run straight into PostgreSQL stores them too: the same phases, each series about the
    // 2 s of its phase, and the HTML report drawn from PostgreSQL has both charts.
    let o = fsbench(&["--db", url, "run", &suite, "--dir", &work("w1"), "--label", "direct"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let direct = export(url, "direct");
    // Completed straight into PostgreSQL: its noise rows are stored there too. One repeat per
    // case, so no session of them is usable (a session's mean needs two repeats to count):
    // every row lists none and has no estimate.
    let noise = direct["session_noise"].as_array().expect("session_noise");
    assert!(!noise.is_empty(), "{direct}");
    assert!(noise
        .iter()
        .all(|e| e["sessions"].as_array().is_some_and(Vec::is_empty) && e["between_sd_pct"].is_null()));
    let (d_series, d_hist) = chart_data(&direct);
    let phases = |v: &[(String, Vec<u64>)]| v.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
    assert_eq!(phases(&d_series), phases(&series));
    assert!(d_series
        .iter()
        .all(|(_, ops)| (2..=3).contains(&ops.len()) && ops.iter().sum::<u64>() > 0));
    assert_eq!(d_hist, hist);
    let o = fsbench(&["--db", url, "report", "direct", "--format", "html"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let html = String::from_utf8_lossy(&o.stdout);
    assert!(html.contains("class=\"chart chart-histogram\"") && html.contains("class=\"chart chart-throughput\""));
}

#[test]
fn the_ranks_of_a_many_rank_session_round_trip_through_postgres() {
    crate::require_privileged!();
    let dir = scratch();
    let Some(pg) = start_server(dir.path()) else { return };
    use fsbench::store::{HostInfo, NewSession, RankHost, SessionStatus, Store};
    // A many-rank session's record (schema 8, rank_hosts) in SQLite, pushed.
    let sqlite = dir.path().join("ranks.db");
    let store = Store::open(&sqlite).unwrap();
    let rank = |r: u32| RankHost {
        rank: r,
        host: HostInfo {
            hostname: format!("node{r}"),
            kernel: "6.1.0-13-amd64".into(),
            cpu_model: "Xeon".into(),
            ncpu: 8,
            mem_bytes: 1 << 34,
        },
        dir: "/mnt/shared/run".into(),
        mount_point: "/mnt/shared".into(),
        mount_source: "srv:/export".into(),
        fs_type: "nfs4".into(),
        mount_opts: "rw,relatime".into(),
        super_opts: "rw,vers=4.2,rsize=1048576".into(),
        clock_offset_ns: -1234 * i64::from(r),
        clock_rtt_ns: 40_000,
    };
    let id = store
        .begin_session(&NewSession {
            label: Some("ranks".into()),
            run_options: None,
            suite_name: "mpi".into(),
            suite_text: String::new(),
            args: vec![],
            fsbench_version: "test".into(),
            host: rank(0).host,
            tool_versions: vec![],
            target: "directory /mnt/shared/run".into(),
            ranks: vec![rank(0), rank(1)],
            policy: Default::default(),
        })
        .unwrap();
    // One repeat with the cluster's row and every rank's own rows and series (schema 9: `rank`).
    use fsbench::metric::{Measurement, MetricId, ThroughputSeries, Unit};
    use fsbench::store::{CaseAvailability, CaseRecord, NewSample, SampleStatus};
    store
        .record_case(
            id,
            &CaseRecord {
                case_id: "c1".into(),
                variant: "nfs".into(),
                fs_type: "nfs4".into(),
                mkfs_args: vec![],
                mount_opts: vec![],
                workload: "fileio".into(),
                workload_kind: "fileio".into(),
                workload_json: "{}".into(),
                availability: CaseAvailability::Available,
            },
        )
        .unwrap();
    let m = |rank: Option<u32>, value: f64| Measurement {
        phase: "rndrw".into(),
        rank,
        metric: MetricId::higher("rate", Unit::OpsPerSec),
        value,
    };
    let t = |rank: Option<u32>, ops: Vec<u64>| ThroughputSeries {
        phase: "rndrw".into(),
        rank,
        ops,
    };
    let w = |rank: Option<u32>, bins: Vec<Vec<(u64, u64)>>| fsbench::metric::LatencyWindows {
        phase: "rndrw".into(),
        rank,
        window_ms: 1000,
        bins,
    };
    store
        .record_sample(
            id,
            &NewSample {
                case_id: "c1".into(),
                repeat: 0,
                is_warmup: false,
                started_at: "2025-01-01T00:00:00Z".into(),
                wall_s: 2.0,
                status: SampleStatus::Ok,
                device: None,
                effective_mount_opts: None,
                notes: vec![],
                measurements: vec![m(None, 900.0), m(Some(0), 400.0), m(Some(1), 500.0)],
                histograms: vec![],
                series: vec![t(Some(0), vec![400, 3]), t(Some(1), vec![500, 4])],
                // Per-window latency (schema 12): the cluster's merged windows and each rank's.
                windows: vec![
                    w(None, vec![vec![(1_000, 5), (2_000, 1)], vec![(1_500, 3)]]),
                    w(Some(0), vec![vec![(1_000, 5)], vec![(1_500, 1)]]),
                    w(Some(1), vec![vec![(2_000, 1)], vec![(1_500, 2)]]),
                ],
                // The I/O-path facts (schema 11) make the round trip too.
                path: Some(fsbench::host::path::PathFacts {
                    loop_dio: Some(false),
                    scheduler: Some("none".into()),
                    super_options: Some("rw,relatime".into()),
                    ..Default::default()
                }),
            },
        )
        .unwrap();
    store.finish_session(id, SessionStatus::Complete).unwrap();
    drop(store);
    let sqlite = sqlite.to_str().unwrap();
    let o = fsbench(&["--db", sqlite, "push", "--to", &pg.url]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let local = export(sqlite, "ranks");
    assert_eq!(
        local["session"]["ranks"][1]["super_opts"], "rw,vers=4.2,rsize=1048576",
        "{local}"
    );
    assert_eq!(local["session"]["ranks"][1]["clock_offset_ns"], -1234, "{local}");
    assert_eq!(local["samples"][0]["measurements"][2]["rank"], 1, "{local}");
    assert_eq!(local["samples"][0]["series"][1]["rank"], 1, "{local}");
    assert_eq!(local["samples"][0]["path"]["loop_dio"], false, "{local}");
    assert_eq!(local["samples"][0]["windows"][2]["rank"], 1, "{local}");
    assert_eq!(local["samples"][0]["windows"][0]["window_ms"], 1000, "{local}");
    assert_eq!(local["samples"][0]["windows"][0]["bins"][1][0][1], 3, "{local}");
    assert_eq!(without_ids(export(&pg.url, "ranks")), without_ids(local.clone()));

    // A database from before schema 8 at the PostgreSQL-only version 1001 (no rank_hosts, no
    // `rank` columns: every rank's own rows named `PHASE@rankN`; no record of applied
    // migrations) gains rank_hosts when fsbench opens it, though 8 < 1001, and schema 9 gives
    // the per-rank rows back their rank.
    let psql = pg_bin("psql").expect("psql next to postgres");
    let o = Command::new(psql)
        .arg(&pg.url)
        .args([
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            "DROP TABLE rank_hosts; DROP TABLE fsbench_migrations; UPDATE fsbench_schema SET version = 1001; \
             UPDATE metrics SET phase = phase || '@rank' || rank WHERE rank IS NOT NULL; \
             UPDATE throughput_series SET phase = phase || '@rank' || rank WHERE rank IS NOT NULL; \
             ALTER TABLE metrics DROP COLUMN rank; ALTER TABLE throughput_series DROP COLUMN rank",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let j = export(&pg.url, "ranks");
    assert!(j["session"].get("ranks").is_none(), "the rows went with the table: {j}");
    assert_eq!(
        without_ids(j)["samples"],
        without_ids(local)["samples"],
        "the ranks of the rows are back"
    );
    drop(pg);
}
