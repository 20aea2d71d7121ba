//! The `powercut` workload with a PostgreSQL or MariaDB server (issue 28 item 7), on a loop
//! ext4 over the FUSE power-cut disk (volatile model): with the durable settings no
//! acknowledged row is lost; the negative control (`server_fsync = false`) loses acknowledged
//! rows, each counted; nothing is left behind after a run, after Ctrl-C, or after SIGKILL +
//! `fsbench cleanup` (no server process, no mount, no loop device, no PostgreSQL shared memory
//! in /dev/shm or SysV).
//!
//! Needs root and `postgresql` / `mariadb-server` (scripts/install.sh installs them); missing,
//! the tests skip loudly, or fail under `FSBENCH_REQUIRE_PRIVILEGED=1`, like the oltp server
//! tests.

use crate::db::{open_scratch, processes_mentioning};
use crate::powercut::run_with_disk_workload_up;
use crate::powercut::{assert_powercut_left_nothing, assert_sigkill_is_undone_by_cleanup, cell, notes};
use crate::util::{report_json, write_suite, ShmListing, SuiteRun};
use crate::{require_privileged, require_tools};
use std::path::Path;
use std::time::{Duration, Instant};

/// The suite of both cases; `SERVER` stands for the engine.
const SUITE: &str = r#"
[suite]
name = "powercut-server"
description = "integration test"
[run]
repeats = 1
warmup = 0
drop_caches = false
[[fs]]
type = "ext4"
[[workload]]
kind = "powercut"
name = "durable"
method = "disk"
cuts = 2
ops = 100
max_write = "8KiB"
server = "SERVER"
[[workload]]
kind = "powercut"
name = "control"
method = "disk"
cuts = 1
ops = 100
max_write = "8KiB"
server = "SERVER"
server_fsync = false
"#;

/// Server processes whose command line names `dir` (their data directory is under it).
fn servers_named_under(dir: &Path) -> Vec<String> {
    processes_mentioning(dir.to_str().unwrap())
        .into_iter()
        .filter(|p| p.contains("postgres") || p.contains("mariadbd"))
        .collect()
}

/// Waits until no PostgreSQL process names `dir` (a killed server's backends take a moment).
pub(crate) fn assert_no_servers_named_under(dir: &Path) {
    let t0 = Instant::now();
    while !servers_named_under(dir).is_empty() && t0.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(servers_named_under(dir), Vec::<String>::new(), "server processes left");
}

/// `rows lost L of A` of every cut in the `cuts:` note: (lost, acknowledged) pairs.
fn rows_per_cut(notes: &str) -> Vec<(u64, u64)> {
    notes
        .split("rows lost ")
        .skip(1)
        .map(|rest| {
            let w: Vec<&str> = rest.split([' ', ',']).collect();
            (w[0].parse().unwrap(), w[2].parse().unwrap())
        })
        .collect()
}

#[test]
fn a_postgresql_server_loses_no_acknowledged_row_with_fsync_and_many_without() {
    require_privileged!();
    require_tools!("postgres", "initdb", "pg_isready");
    durable_loses_nothing_and_the_control_loses_rows(
        "postgresql",
        "synchronous_commit=on, fsync=on, full_page_writes=on",
        "fsync=off",
    );
}

#[test]
fn a_mariadb_server_loses_no_acknowledged_row_with_flush_at_commit_and_many_without() {
    require_privileged!();
    require_tools!("mariadbd", "mariadb-install-db", "mariadb");
    durable_loses_nothing_and_the_control_loses_rows(
        "mariadb",
        "innodb_flush_log_at_trx_commit=1, innodb_doublewrite=1",
        "innodb_flush_log_at_trx_commit=0",
    );
}

/// Runs [`SUITE`] with `engine`: the durable case (its settings `durable` in the notes) loses
/// no acknowledged row in 2 cuts; the control (`control` in the notes) loses more than one,
/// each counted; nothing is left.
fn durable_loses_nothing_and_the_control_loses_rows(engine: &str, durable: &str, control: &str) {
    let dir = open_scratch();
    let shm = ShmListing::now();
    let suite = write_suite(dir.path(), "pcs.toml", &SUITE.replace("SERVER", engine));
    let run = SuiteRun::in_dir(dir.path());
    run.run_ok(&suite);
    let j = report_json(run.db_str(), "latest");

    let n = notes(&j, "durable", "ext4");
    assert!(n.contains(durable), "{n}");
    let cuts = rows_per_cut(&n);
    assert_eq!(cuts.len(), 2, "{n}");
    assert!(
        cuts.iter().all(|&(lost, acked)| lost == 0 && acked > 0),
        "{cuts:?}: {n}"
    );
    assert_eq!(
        cell(&j, "durable", "loss", "db_rows_lost", "ext4"),
        Some((1, 0.0)),
        "{n}"
    );
    assert_eq!(
        cell(&j, "durable", "loss", "db_recovery_failed", "ext4"),
        Some((1, 0.0)),
        "{n}"
    );
    assert_eq!(cell(&j, "durable", "loss", "acked_lost", "ext4"), Some((1, 0.0)), "{n}");

    // The negative control: acknowledged rows lost, each one counted (not one per cut).
    let n = notes(&j, "control", "ext4");
    assert!(n.contains(control), "{n}");
    let cuts = rows_per_cut(&n);
    let lost: u64 = cuts.iter().map(|c| c.0).sum();
    assert!(lost > 1, "fsync = off lost at most one acknowledged row: {cuts:?}: {n}");
    assert_eq!(
        cell(&j, "control", "loss", "db_rows_lost", "ext4"),
        Some((1, lost as f64)),
        "{n}"
    );
    let (_, acked_lost) = cell(&j, "control", "loss", "acked_lost", "ext4").unwrap();
    assert!(acked_lost >= lost as f64, "{acked_lost} < {lost}");

    assert_no_servers_named_under(dir.path());
    assert_powercut_left_nothing(dir.path(), &run.scratch);
    // Every cut SIGKILLed a server: none left its shared memory.
    shm.assert_none_left();
}

/// Starts a long power-cut-disk workload with an `engine` server on ext4 in `dir` and returns
/// it once its server is running.
fn run_with_the_server_up(dir: &Path, engine: &str) -> (std::process::Child, std::path::PathBuf) {
    let long = format!("kind = \"powercut\"\nmethod = \"disk\"\ncuts = 50\nops = 4000\nserver = \"{engine}\"\n");
    let (mut child, sc) = run_with_disk_workload_up(dir, "ext4", &long);
    let t0 = Instant::now();
    while servers_named_under(&sc).is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(60), "the server never started");
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    (child, sc)
}

#[test]
fn ctrl_c_with_a_live_postgresql_server_under_the_power_cut_leaves_nothing() {
    require_privileged!();
    require_tools!("postgres", "initdb", "pg_isready");
    let dir = open_scratch();
    let shm = ShmListing::now();
    let (mut child, sc) = run_with_the_server_up(dir.path(), "postgresql");
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::Int).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_no_servers_named_under(dir.path());
    assert_powercut_left_nothing(dir.path(), &sc);
    shm.assert_none_left();
}

#[test]
fn a_sigkilled_run_with_a_live_postgresql_server_is_undone_by_cleanup() {
    require_privileged!();
    require_tools!("postgres", "initdb", "pg_isready");
    let dir = open_scratch();
    let shm = ShmListing::now();
    let (child, sc) = run_with_the_server_up(dir.path(), "postgresql");
    // The server dies with fsbench (PR_SET_PDEATHSIG); cleanup undoes the disk's pieces and
    // removes the shared memory it recorded.
    assert_sigkill_is_undone_by_cleanup(dir.path(), child, &sc);
    assert_no_servers_named_under(dir.path());
    shm.assert_none_left();
}

#[test]
fn a_sigkilled_run_with_a_live_mariadb_server_is_undone_by_cleanup() {
    require_privileged!();
    require_tools!("mariadbd", "mariadb-install-db", "mariadb");
    let dir = open_scratch();
    let (child, sc) = run_with_the_server_up(dir.path(), "mariadb");
    assert_sigkill_is_undone_by_cleanup(dir.path(), child, &sc);
    assert_no_servers_named_under(dir.path());
}
