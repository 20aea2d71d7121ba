//! The `crashprops` workload on a real loop ext4 with data=journal through `fsbench run`
//! (issue 43, item 5): with the flushes honoured, block appends and an [append, rename] →
//! later-op sequence hold in every explored crash state; the same probes under the deliberately
//! wrong disk that ignores flushes (`barriers = "ignored"`, what a disk that acknowledges
//! flushes without honouring them leaves) turn to FAILS, with the smallest violating state in
//! the notes, the terminal and JSON reports; nothing is left behind. A SIGKILL while a crash
//! state is mounted is undone by `fsbench cleanup` (every piece was an undo step); Ctrl-C then
//! leaves nothing; the same for a SIGKILL or Ctrl-C while a real server application runs
//! (`redis-server`, PostgreSQL, MariaDB; shown to fail when the server does not die with
//! fsbench: with Redis's `PR_SET_PDEATHSIG` taken out, `fsbench cleanup` failed and the server
//! stayed).

use crate::powercut::{assert_powercut_left_nothing, cell, notes, pending_steps};
use crate::require_privileged;
use crate::util::{fsbench, mounts_under, report_json, scratch, spawn_run, text, write_suite, SuiteRun};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const PROBES: &str = r#"probes = ["atomic-block-append", "atomic-multiblock-append", "order-append-rename"]"#;

fn suite() -> String {
    format!(
        "[suite]\nname = \"crashprops-test\"\ndescription = \"integration test\"\n[run]\nrepeats = 1\nwarmup = 0\ndrop_caches = false\n[[fs]]\ntype = \"ext4\"\nname = \"ext4-journal\"\nmount_opts = \"data=journal\"\n\
         [[workload]]\nkind = \"crashprops\"\nname = \"honest\"\n{PROBES}\nmax_states = 64\nseed = 3\n\
         [[workload]]\nkind = \"crashprops\"\nname = \"broken\"\n{PROBES}\nbarriers = \"ignored\"\nsamples = 48\nmax_states = 64\nseed = 3\n"
    )
}

#[test]
fn ignoring_the_flushes_turns_properties_that_hold_on_ext4_data_journal_into_fails() {
    require_privileged!();
    let dir = scratch();
    let suite = write_suite(dir.path(), "cp.toml", &suite());
    let run = SuiteRun::in_dir(dir.path());
    let out = run.run_ok(&suite);
    let j = report_json(run.db_str(), "latest");
    let v = "ext4-journal";
    let mut broken_fails = 0;
    for p in ["atomic-block-append", "atomic-multiblock-append", "order-append-rename"] {
        let states = cell(&j, "honest", p, "states", v).unwrap_or_else(|| panic!("{p}: no states"));
        assert!(states.1 >= 4.0, "{p}: explored {states:?}");
        assert_eq!(
            cell(&j, "honest", p, "violating_states", v),
            Some((1, 0.0)),
            "{p} holds with the flushes honoured: {}",
            notes(&j, "honest", v)
        );
        assert!(
            cell(&j, "honest", p, "log_flushes", v).unwrap().1 >= 2.0,
            "{p}: flushes logged"
        );
        let bad = cell(&j, "broken", p, "violating_states", v).unwrap().1;
        if bad > 0.0 {
            broken_fails += 1;
            let n = notes(&j, "broken", v);
            assert!(n.contains(&format!("crash state: {p}: FAILS in {bad} of")), "{n}");
        }
    }
    // Measured on this machine: 3 of the 3 probes fail under the broken disk (seed 3).
    assert!(
        broken_fails >= 2,
        "the wrong disk turned only {broken_fails} probes to fails"
    );
    let m = j["crashprops"].as_array().expect("the crashprops export");
    let broken = m.iter().find(|m| m["workload"] == "broken").unwrap();
    assert!(broken["how"].as_str().unwrap().contains("IGNORED"), "{broken}");
    let verdicts: Vec<&str> = broken["properties"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["cells"][0]["verdict"].as_str().unwrap())
        .collect();
    assert!(verdicts.contains(&"fails"), "{verdicts:?}");
    let honest = m.iter().find(|m| m["workload"] == "honest").unwrap();
    assert!(honest["properties"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["cells"][0]["verdict"] == "holds"));
    let terminal = text(&out);
    assert!(
        terminal.contains("Crash-consistency properties") && terminal.contains("FAILS "),
        "{terminal}"
    );
    assert_powercut_left_nothing(dir.path(), &run.scratch);
}

/// Starts a long crashprops run (suite `name`, ext4) in `dir` and waits until it has a crash
/// state mounted; its scratch folder and the running child.
fn run_until_a_crash_state_is_mounted(dir: &Path, name: &str) -> (PathBuf, std::process::Child) {
    let suite = write_suite(
        dir,
        &format!("{name}.toml"),
        &format!("[suite]\nname = \"{name}\"\ndescription = \"integration test\"\n[run]\nrepeats = 1\nwarmup = 0\ndrop_caches = false\n[[fs]]\ntype = \"ext4\"\n[[workload]]\nkind = \"crashprops\"\nmax_states = 500\nexhaustive = 4096\n"),
    );
    let sc = dir.join("scratch");
    let mut child = spawn_run(&dir.join("r.db"), &suite, &sc, &[]);
    let t0 = Instant::now();
    while !mounts_under(&sc).iter().any(|l| l.contains("mnt-crashprops-state ")) {
        assert!(t0.elapsed() < Duration::from_secs(120), "no crash state was mounted");
        assert!(child.try_wait().unwrap().is_none(), "the run ended first");
        std::thread::sleep(Duration::from_millis(5));
    }
    (sc, child)
}

#[test]
fn a_sigkill_while_a_crash_state_is_mounted_is_undone_by_cleanup() {
    require_privileged!();
    let dir = scratch();
    let (sc, mut child) = run_until_a_crash_state_is_mounted(dir.path(), "cpkill");
    child.kill().unwrap();
    child.wait().unwrap();
    let pending = pending_steps(&sc);
    let has = |undo: &str, key: &str, end: &str| {
        pending
            .iter()
            .any(|u| u["undo"] == undo && u[key].as_str().unwrap_or_default().ends_with(end))
    };
    assert!(has("detach", "image", "mnt-crashprops-state.img"), "{pending:#?}");
    assert!(
        has("remove_file", "path", ".snap") && has("remove_file", "path", ".wlog"),
        "{pending:#?}"
    );
    let o = fsbench(&["cleanup", "--scratch", sc.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert_powercut_left_nothing(dir.path(), &sc);
}

#[test]
fn ctrl_c_while_a_crash_state_is_mounted_leaves_nothing() {
    require_privileged!();
    let dir = scratch();
    let (sc, mut child) = run_until_a_crash_state_is_mounted(dir.path(), "cpint");
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::Int).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_powercut_left_nothing(dir.path(), &sc);
}

/// The probes of the guest test: a block append, atomic on f2fs with the flushes honoured
/// (every explored state, 6.1 guest, seed 5), and a 16-block overwrite, which the wrong disk that
/// ignores flushes tears on f2fs (measured: 10 of 32 states, the smallest a prefix of one write).
const GUEST_PROBES: &str = r#"probes = ["atomic-block-append", "atomic-multiblock-write"]"#;

/// A guest column (issue 43, item 2): f2fs, which this host's kernel cannot mount, under Debian's
/// 6.1 in a TCG guest: the agent puts f2fs on a loop image in a staging ext4 on the guest's
/// disk, the power-cut disk (FUSE, in the guest) records it and every crash state is mounted
/// read-only by the guest's kernel. With the flushes honoured the block append holds; the wrong
/// disk that ignores them turns the multi-block overwrite to FAILS, with the smallest state in
/// the notes; at most `guest_max_states` states are explored; the samples name the guest's
/// kernel; nothing is left on the host.
#[test]
fn an_f2fs_column_in_a_guest_kernel_holds_and_fails_under_the_wrong_disk() {
    require_privileged!();
    if !crate::guest::guest_ready() {
        return;
    }
    if crate::util::tool_path("mkfs.f2fs").is_none() {
        crate::util::skip_or_fail("no mkfs.f2fs (f2fs-tools): run scripts/install.sh");
        return;
    }
    let dir = scratch();
    let suite = format!(
        "[suite]\nname = \"crashprops-guest\"\ndescription = \"integration test\"\n[run]\nrepeats = 1\nwarmup = 0\ndrop_caches = false\n[[fs]]\ntype = \"f2fs\"\nkernel = \"guest\"\n\
         [[workload]]\nkind = \"crashprops\"\nname = \"honest\"\n{GUEST_PROBES}\nmax_states = 64\nguest_max_states = 6\nseed = 5\n\
         [[workload]]\nkind = \"crashprops\"\nname = \"broken\"\n{GUEST_PROBES}\nbarriers = \"ignored\"\nsamples = 24\nmax_states = 64\nguest_max_states = 12\nseed = 5\n"
    );
    let suite = write_suite(dir.path(), "cpg.toml", &suite);
    let run = SuiteRun::in_dir(dir.path());
    let out = run.run_ok(&suite);
    let j = report_json(run.db_str(), "latest");
    let v = "f2fs@guest";
    for (w, cap) in [("honest", 6.0), ("broken", 12.0)] {
        for p in ["atomic-block-append", "atomic-multiblock-write"] {
            let states = cell(&j, w, p, "states", v).unwrap_or_else(|| panic!("{w} {p}: no states: {}", text(&out)));
            assert!(
                (2.0..=cap).contains(&states.1),
                "{w} {p}: explored {states:?}, at most {cap}"
            );
            assert!(
                cell(&j, w, p, "log_writes", v).unwrap().1 >= 1.0,
                "{w} {p}: writes logged"
            );
        }
    }
    assert_eq!(
        cell(&j, "honest", "atomic-block-append", "violating_states", v),
        Some((1, 0.0)),
        "a block append is atomic on f2fs with the flushes honoured: {}",
        notes(&j, "honest", v)
    );
    let bad = cell(&j, "broken", "atomic-multiblock-write", "violating_states", v)
        .unwrap()
        .1;
    let n = notes(&j, "broken", v);
    assert!(bad > 0.0, "the wrong disk did not tear the overwrite on f2fs: {n}");
    assert!(
        n.contains(&format!("crash state: atomic-multiblock-write: FAILS in {bad} of")),
        "{n}"
    );
    assert!(n.contains("Linux 6.1."), "the guest's kernel is named: {n}");
    assert_powercut_left_nothing(dir.path(), &run.scratch);
    crate::guest::assert_guest_left_nothing(&run.scratch);
}

/// fsbench `pid`'s server processes of application `app` still running: Redis by its socket
/// folder's name; PostgreSQL's postmaster and MariaDB's `mariadbd` by their data directory,
/// which is under the scratch folder `sc`.
fn servers_of(app: &str, pid: u32, sc: &Path) -> Vec<String> {
    let (needle, server) = match app {
        "redis-aof" => (format!("fsbench-redis-{pid}-"), "redis-server"),
        "postgresql" => (sc.display().to_string(), "postgres"),
        _ => (sc.display().to_string(), "mariadbd"),
    };
    // The program itself, not a `cp -a …/postgresql …` of its folder: "PID PROGRAM ARGS…".
    let program = |l: &String| {
        l.split(' ')
            .nth(1)
            .is_some_and(|p| Path::new(p).file_name().is_some_and(|n| n == server))
    };
    crate::db::processes_mentioning(&needle)
        .into_iter()
        .filter(program)
        .collect()
}

/// The socket folders of fsbench `pid`'s servers left in the temporary directory (Redis's
/// always; PostgreSQL's and MariaDB's when the run folder's path is too long for a socket).
fn socket_folders_of(pid: u32) -> Vec<PathBuf> {
    let tags = [format!("fsbench-redis-{pid}-"), format!("fsbench-db-{pid}-")];
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| tags.iter().any(|t| n.to_string_lossy().starts_with(t.as_str())))
        })
        .collect()
}

/// Real server applications under the crash states (issue 43): a SIGKILL while fsbench's
/// server runs leaves no server (it dies with fsbench: `PR_SET_PDEATHSIG`) and `fsbench
/// cleanup` removes its socket folder and every mount, loop device and file; Ctrl-C at the
/// same moment leaves nothing by itself, PostgreSQL's shared memory included. Redis gets both;
/// PostgreSQL the SIGKILL and MariaDB the Ctrl-C (their start is the `oltp` workload's, which
/// `db.rs` tests under SIGKILL for both and Ctrl-C for MariaDB).
#[test]
fn sigkill_or_ctrl_c_while_a_server_application_runs_leaves_nothing_after_cleanup() {
    require_privileged!();
    for tool in ["redis-server", "postgres", "mariadbd"] {
        if !crate::db::have(tool) {
            return crate::util::skip_or_fail(&format!("no {tool}: run scripts/install.sh"));
        }
    }
    for (name, app, kill) in [
        ("rdkill", "redis-aof", true),
        ("rdint", "redis-aof", false),
        ("pgkill", "postgresql", true),
        ("mdint", "mariadb", false),
    ] {
        let dir = crate::db::open_scratch();
        let suite = write_suite(
            dir.path(),
            &format!("{name}.toml"),
            &format!("[suite]\nname = \"{name}\"\ndescription = \"integration test\"\n[run]\nrepeats = 1\nwarmup = 0\ndrop_caches = false\n[[fs]]\ntype = \"ext4\"\n[[workload]]\nkind = \"crashprops\"\napps = [\"{app}\"]\nmax_states = 200\nexhaustive = 4096\n"),
        );
        let sc = dir.path().join("scratch");
        let shm = crate::util::ShmListing::now();
        let mut child = spawn_run(&dir.path().join("r.db"), &suite, &sc, &[]);
        let pid = child.id();
        // PostgreSQL and MariaDB: a server checking a crash state, on its copy in the run
        // folder. One on the power-cut disk dies with the disk's FUSE server anyway (its next
        // write fails), so it could not show a server that outlives fsbench.
        let on_copy = |l: &String| app == "redis-aof" || l.contains("mnt-crashprops-app");
        let t0 = Instant::now();
        while !servers_of(app, pid, &sc).iter().any(on_copy) {
            assert!(t0.elapsed() < Duration::from_secs(120), "{name}: no server started");
            assert!(child.try_wait().unwrap().is_none(), "{name}: the run ended first");
            std::thread::sleep(Duration::from_millis(5));
        }
        let signal = if kill {
            rustix::process::Signal::Kill
        } else {
            rustix::process::Signal::Int
        };
        rustix::process::kill_process(rustix::process::Pid::from_child(&child), signal).unwrap();
        let code = child.wait().unwrap().code();
        // The server goes with fsbench at once (SIGKILL: its death signal; Ctrl-C: stopped),
        // before any cleanup: only a short wait, since a server whose data directory
        // `fsbench cleanup` removes stops by itself within a minute (PostgreSQL's lock file
        // check), which would hide one that outlived fsbench.
        let t1 = Instant::now();
        while !servers_of(app, pid, &sc).is_empty() && t1.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            servers_of(app, pid, &sc),
            Vec::<String>::new(),
            "{name}: server outlived fsbench"
        );
        if kill {
            let o = fsbench(&["cleanup", "--scratch", sc.to_str().unwrap()]);
            assert!(o.status.success(), "{name}: {}", text(&o));
        } else {
            assert_eq!(code, Some(130), "{name}");
        }
        assert_eq!(
            socket_folders_of(pid),
            Vec::<PathBuf>::new(),
            "{name}: socket folder left"
        );
        assert_powercut_left_nothing(dir.path(), &sc);
        shm.assert_none_left();
    }
}
