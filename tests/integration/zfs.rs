//! ZFS as a pool on zfs-fuse (crates/targets/src/provision/zfs.rs): a real pool made by `fsbench run`, used by
//! bonnie and destroyed with the daemon fsbench started; a SIGKILLed run undone by
//! `fsbench cleanup`; a pool fsbench did not make left alone.
//!
//! zfs-fuse is one daemon per machine, so these tests run one at a time (a mutex) and each
//! waits until no zfs-fuse runs before it starts fsbench, so the daemon it sees is fsbench's.

use crate::require_privileged;
use crate::util::{assert_no_leftovers, fsbench, scratch, skip_or_fail, spawn_run, text, write_suite};
use ::fsbench::provision::zfs;
use ::fsbench::undo::Step;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A zfs bonnie suite (noatime and lzjb compression as dataset properties).
fn suite(repeats: u32, file_size: &str) -> String {
    format!(
        r#"
[suite]
name = "zfs-tiny"
description = "integration test"

[run]
repeats = {repeats}

[[fs]]
type = "zfs"
mount_opts = ["noatime", "compress=lzjb"]

[[workload]]
kind = "bonnie"
file_size = "{file_size}"
char_size = "1MiB"
files = 256
seeks = 200
"#
    )
}

/// Whether zfs-fuse is this machine's ZFS; otherwise skips (or fails under CI).
fn zfs_fuse_here() -> bool {
    match zfs::detect() {
        Ok(b) if b.is_fuse() => true,
        Ok(b) => {
            skip_or_fail(&format!("this machine's ZFS is {}, not zfs-fuse", b.label()));
            false
        }
        Err(e) => {
            skip_or_fail(&format!("no ZFS: {e}"));
            false
        }
    }
}

/// Waits (up to 5 minutes) until no zfs-fuse runs, so the next daemon is the one fsbench starts.
fn wait_for_no_daemon() -> bool {
    let t0 = Instant::now();
    while zfs::running_daemon().is_some() {
        if t0.elapsed() > Duration::from_secs(300) {
            skip_or_fail("a zfs-fuse daemon this test did not start keeps running");
            return false;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    true
}

/// Whether process `pid` is alive and not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s.rsplit_once(')').map(|(_, r)| r.trim_start()).unwrap_or("");
        !state.starts_with('Z') && !state.starts_with('X')
    })
}

/// Pools whose name starts with `prefix`.
fn pools_named(prefix: &str) -> Vec<String> {
    zfs::pools().into_iter().filter(|p| p.starts_with(prefix)).collect()
}

/// Nothing of a zfs run left: no pool named `prefix…`, the daemon fsbench started (`daemon`)
/// gone, no mount, loop device or run folder under `scratch`; `context` ends the messages.
fn assert_zfs_left_nothing(prefix: &str, daemon: u32, scratch: &Path, context: &str) {
    assert_eq!(pools_named(prefix), Vec::<String>::new(), "{context}");
    assert!(!alive(daemon), "zfs-fuse (pid {daemon}) still runs {context}");
    assert_no_leftovers(scratch);
}

/// The zfs tests' gate: one at a time (the guard), zfs-fuse installed (else a loud skip) and no
/// zfs-fuse daemon running; `None` when the test cannot run.
fn one_zfs_test() -> Option<std::sync::MutexGuard<'static, ()>> {
    let one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    (zfs_fuse_here() && wait_for_no_daemon()).then_some(one)
}

/// The scratch folder `dir/scratch` and a small zfs suite (3 repeats, 64 MiB) written in `dir`.
fn small_zfs_suite(dir: &Path) -> (PathBuf, String) {
    (dir.join("scratch"), write_suite(dir, "zfs.toml", &suite(3, "64MiB")))
}

/// The small zfs suite ([`small_zfs_suite`]) started in `dir` with the database `dir/r.db` and
/// waited for until it has made its pool ([`until_pool`]): the scratch folder and that.
fn small_run_until_pool(dir: &Path) -> (PathBuf, (std::process::Child, String, (u32, u64))) {
    let (scratch, suite) = small_zfs_suite(dir);
    let run = until_pool(spawn_run(&dir.join("r.db"), &suite, &scratch, &[]));
    (scratch, run)
}

/// Starts `fsbench run` in its own process group, as a shell starts a foreground job.
fn spawn_run_in_own_group(db: &Path, suite: &str, scratch: &Path) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    Command::new(crate::util::bin())
        .args(["--db", db.to_str().unwrap(), "run", suite, "--scratch"])
        .arg(scratch)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start fsbench run")
}

/// Runs `fsbench cleanup --scratch SCRATCH`: its stdout, and the `failed:` lines about this
/// test's run or daemon (cleanup also visits other dead runs in the machine's registry, whose
/// failures are not this test's).
fn cleanup(scratch: &Path, daemon: u32) -> (String, Vec<String>) {
    let o = fsbench(&["cleanup", "--scratch", scratch.to_str().unwrap()]);
    let ours: Vec<String> = String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.contains(scratch.to_str().unwrap()) || l.contains(&format!("zfs-fuse (pid {daemon})")))
        .map(str::to_string)
        .collect();
    (String::from_utf8_lossy(&o.stdout).into_owned(), ours)
}

/// Waits (up to 2 minutes) until the run `child` has made its pool: the run, the prefix of its
/// pools' names and the daemon's (pid, start time). Kills the run and fails when it made none.
fn until_pool(mut child: std::process::Child) -> (std::process::Child, String, (u32, u64)) {
    let prefix = format!("fsbench-{}-", child.id());
    let t0 = Instant::now();
    while pools_named(&prefix).is_empty() {
        if t0.elapsed() > Duration::from_secs(120) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "the run made no pool {prefix}*: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let daemon = zfs::running_daemon().expect("fsbench started zfs-fuse");
    (child, prefix, daemon)
}

#[test]
fn a_zfs_fuse_pool_runs_bonnie_and_nothing_is_left() {
    require_privileged!();
    let Some(_one) = one_zfs_test() else {
        return;
    };
    // `list filesystems` and `doctor` say which ZFS a run would use.
    for args in [&["list", "filesystems"][..], &["doctor"][..]] {
        let o = fsbench(args);
        let out = String::from_utf8_lossy(&o.stdout);
        let line = out.lines().find(|l| l.contains("zfs")).unwrap_or_default();
        assert!(line.contains("zfs (zfs-fuse 0.7, userspace)"), "{args:?}: {out}");
    }
    let dir = scratch();
    let scratch = dir.path().join("scratch");
    // And repair_scaling, whose check on a pool is a scrub (issue 30).
    let repair = "\n[[workload]]\nkind = \"repair_scaling\"\ncounts = [200, 800]\nfiles_per_dir = 100\n";
    let suite = write_suite(dir.path(), "zfs.toml", &(suite(1, "16MiB") + repair));
    let db = dir.path().join("r.db");
    // Watch the daemon and the pool while the run goes on.
    let mut child = spawn_run(&db, &suite, &scratch, &[]);
    let prefix = format!("fsbench-{}-", child.id());
    let (mut daemons, mut pools) = (Vec::new(), Vec::new());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if let Some((pid, _)) = zfs::running_daemon() {
            if !daemons.contains(&pid) {
                daemons.push(pid);
            }
        }
        for p in pools_named(&prefix) {
            if !pools.contains(&p) {
                pools.push(p);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = child.wait_with_output().unwrap().stderr;
    assert!(status.success(), "{}", String::from_utf8_lossy(&err));
    // One daemon per case: each case's last pool stops the daemon fsbench started for it.
    assert_eq!(daemons.len(), 2, "fsbench started one zfs-fuse per case: {daemons:?}");
    assert_eq!(pools.len(), 2, "one pool per repeat of each workload: {pools:?}");

    // The samples are stored with the dataset properties ZFS applied and the FUSE caveat.
    let report = crate::util::report_json(db.to_str().unwrap(), "latest");
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("zfs (zfs-fuse 0.7, userspace)") && warnings.contains("not comparable"),
        "{warnings}"
    );
    assert!(warnings.contains("atime=off,compression=lzjb"), "{warnings}");
    // The dataset's properties read back with `zfs get`, and the on-disk ratio of bonnie's
    // zero-filled data from ZFS's own accounting: its zeros are holes, so it shrank.
    // (The bonnie case's sample: the order of the two cases in a round is random.)
    let bonnie = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["workload"] == "bonnie")
        .expect("the bonnie case");
    let sample = report["samples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["case_id"] == bonnie["case_id"])
        .expect("the bonnie sample");
    let path = &sample["path"];
    assert_eq!(path["mkfs_params"]["compression"], "lzjb", "{path}");
    assert_eq!(path["mkfs_params"]["atime"], "off", "{path}");
    assert_eq!(path["probe_content"], "zeros", "{path}");
    assert!(path["on_disk_ratio"].as_f64().is_some_and(|r| r > 1.5), "{path}");
    assert!(!warnings.contains("did not shrink"), "{warnings}");
    let rows = report["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "bonnie")
        .expect("the bonnie workload")["rows"]
        .as_array()
        .unwrap();
    let writes = rows
        .iter()
        .find(|r| r["phase"] == "seq_write_block")
        .expect("a seq_write_block row");
    assert!(
        writes["cells"][0]["summary"]["mean"].as_f64().unwrap() > 0.0,
        "{writes}"
    );

    // repair_scaling: each level's scrub and mount timed, no checker process (no check_rss),
    // the scrub named as the checker and the cut said not measured.
    let repair = report["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "repair_scaling")
        .expect("the repair_scaling workload");
    let rows = repair["rows"].as_array().unwrap();
    for phase in ["check@200", "mount@200", "check@800", "mount@800"] {
        let r = rows
            .iter()
            .find(|r| r["phase"] == phase && r["metric"]["name"] == "time")
            .unwrap_or_else(|| panic!("no {phase} time: {repair}"));
        let t = r["cells"][0]["summary"]["mean"].as_f64().unwrap();
        assert!(t > 0.0 && t < 60.0, "{phase}: {t} s");
    }
    assert!(!rows.iter().any(|r| r["metric"]["name"] == "check_rss"), "{repair}");
    assert!(
        warnings.contains("checker: zpool scrub") && warnings.contains("mount_cut not measured on zfs"),
        "{warnings}"
    );

    // Nothing left: no pool, no daemon fsbench started, no mount, no loop device, no run folder.
    assert!(!alive(daemons[0]), "the first case's zfs-fuse is left");
    assert_zfs_left_nothing(&prefix, daemons[1], &scratch, "");
}

#[test]
fn a_sigkilled_zfs_run_is_undone_by_cleanup_pool_and_daemon() {
    require_privileged!();
    let Some(_one) = one_zfs_test() else {
        return;
    };
    let dir = scratch();
    let (scratch, (mut child, prefix, (daemon, _))) = small_run_until_pool(dir.path());
    child.kill().unwrap(); // SIGKILL: no guard runs
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(pools_named(&prefix).len(), 1, "the pool outlived the run");
    assert!(alive(daemon), "the daemon outlived the run");

    let (out, failed) = cleanup(&scratch, daemon);
    assert!(failed.is_empty(), "{failed:?}\n{out}");
    assert!(out.contains(&format!("destroyed zfs pool {prefix}")), "{out}");
    assert!(out.contains(&format!("stopped zfs-fuse (pid {daemon})")), "{out}");
    assert_zfs_left_nothing(&prefix, daemon, &scratch, "");
}

#[test]
fn cleanup_never_touches_a_pool_fsbench_did_not_make() {
    require_privileged!();
    let Some(_one) = one_zfs_test() else {
        return;
    };
    let dir = scratch();
    let (scratch, (mut child, prefix, (daemon, _))) = small_run_until_pool(dir.path());

    // A pool the test makes by hand on the same daemon, named like fsbench's.
    let img = dir.path().join("hand.img");
    std::fs::File::create(&img).unwrap().set_len(128 << 20).unwrap();
    let out = Command::new("losetup")
        .args(["--find", "--show"])
        .arg(&img)
        .output()
        .unwrap();
    assert!(out.status.success());
    let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let hand = format!("fsbench-handmade-{}", std::process::id());
    let hand_mnt = dir.path().join("hand-mnt");
    let made = Command::new("zpool")
        .args(["create", "-f", "-o", "cachefile=none", "-m"])
        .arg(&hand_mnt)
        .args([&hand, &dev])
        .output()
        .unwrap();
    // The test's own pool goes the way fsbench's do (unmount, then `zpool destroy` with the
    // retries zfs-fuse needs while its unmount settles).
    let undo_hand = || {
        let gone = ::fsbench::provision::zfs::DestroyPool {
            pool: hand.clone(),
            device: dev.clone(),
            mountpoint: hand_mnt.clone(),
        }
        .apply();
        let _ = Command::new("losetup").args(["-d", &dev]).status();
        assert!(gone.is_ok() && pools_named(&hand).is_empty(), "{gone:?}");
    };
    if !made.status.success() {
        undo_hand();
        panic!("zpool create {hand}: {}", String::from_utf8_lossy(&made.stderr));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    // Cleanup destroys fsbench's pool, but leaves the hand-made one and the daemon serving it,
    // and says so (the step stays pending).
    let (out, failed) = cleanup(&scratch, daemon);
    let hand_left = pools_named(&hand).len() == 1;
    let daemon_left = alive(daemon);
    // A DestroyPool step naming the hand-made pool on another device is refused too.
    let guard = ::fsbench::provision::zfs::DestroyPool {
        pool: hand.clone(),
        device: "/dev/loop-not-this-one".into(),
        mountpoint: hand_mnt.clone(),
    }
    .apply();
    let hand_after_guard = pools_named(&hand).len() == 1;
    undo_hand();
    assert!(out.contains(&format!("destroyed zfs pool {prefix}")), "{out}");
    let said = failed.iter().any(|l| l.contains(&hand) && l.contains("left running"));
    assert!(said, "cleanup did not say why the daemon stays: {failed:?}\n{out}");
    assert!(hand_left, "cleanup destroyed the hand-made pool:\n{out}");
    assert!(daemon_left, "cleanup stopped a daemon that serves a foreign pool");
    assert!(guard.is_ok() && hand_after_guard, "{guard:?}");
    assert_eq!(pools_named(&prefix), Vec::<String>::new());

    // With the foreign pool gone, the next cleanup stops the daemon fsbench started.
    let (out, failed) = cleanup(&scratch, daemon);
    assert!(failed.is_empty(), "{failed:?}\n{out}");
    assert!(out.contains(&format!("stopped zfs-fuse (pid {daemon})")), "{out}");
    assert!(!alive(daemon), "zfs-fuse (pid {daemon}) still runs");
    assert_no_leftovers(&scratch);
}

#[test]
fn a_mount_option_zfs_has_no_property_for_is_a_usage_error() {
    let o = fsbench(&["plan", "--fs", "zfs:noatime,discard", "--only", "bonnie"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("`discard`") && err.contains(fsbench::fstype::ZFS_SUPPORTED_OPTIONS),
        "{err}"
    );
    // The same options a pool understands plan fine.
    let o = fsbench(&[
        "plan",
        "--fs",
        "zfs:noatime,compress=lzjb,recordsize=16k",
        "--only",
        "bonnie",
    ]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn ctrl_c_at_the_terminal_destroys_the_pool_and_stops_the_daemon() {
    require_privileged!();
    let Some(_one) = one_zfs_test() else {
        return;
    };
    let dir = scratch();
    let (scratch, suite) = small_zfs_suite(dir.path());
    let (child, prefix, (daemon, _)) = until_pool(spawn_run_in_own_group(&dir.path().join("r.db"), &suite, &scratch));
    // Ctrl-C: SIGINT to the whole foreground process group, fsbench and its children.
    let group = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process_group(group, rustix::process::Signal::Int).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(!err.contains("cleanup incomplete"), "{err}");
    assert_zfs_left_nothing(&prefix, daemon, &scratch, &err);
}
