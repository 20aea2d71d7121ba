//! Shared helpers for the integration tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output};

/// Skips (loudly) a test that needs root, or fails it when `FSBENCH_REQUIRE_PRIVILEGED=1`
/// (set by `.ci/run`), so CI can never count a skipped privileged test as passed.
#[macro_export]
macro_rules! require_privileged {
    () => {
        if !$crate::util::is_root() {
            if std::env::var("FSBENCH_REQUIRE_PRIVILEGED").as_deref() == Ok("1") {
                panic!("this test needs root (loop devices, mkfs, mount) and FSBENCH_REQUIRE_PRIVILEGED=1 is set");
            }
            eprintln!("SKIPPED (needs root): {}", module_path!());
            return;
        }
    };
}

/// Skips (loudly) a test whose tool or kernel feature this machine lacks, or fails it when
/// `FSBENCH_REQUIRE_PRIVILEGED=1`: CI must never count a skipped check as passed. The caller
/// returns right after.
pub fn skip_or_fail(why: &str) {
    if std::env::var("FSBENCH_REQUIRE_PRIVILEGED").as_deref() == Ok("1") {
        panic!("cannot run ({why}) and FSBENCH_REQUIRE_PRIVILEGED=1 requires every check to run");
    }
    eprintln!("SKIPPED: {why}");
}

/// Where `name` is installed (PATH, then the sbin directories), if anywhere.
pub fn tool_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"].iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A private temporary folder under /var/tmp (like the default scratch), removed on drop.
pub fn scratch() -> tempfile::TempDir {
    std::fs::create_dir_all("/var/tmp").unwrap();
    tempfile::Builder::new()
        .prefix("fsbench-test-")
        .tempdir_in("/var/tmp")
        .unwrap()
}

/// Path of the built `fsbench` binary.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fsbench"))
}

/// Runs `fsbench` with `args` and returns its output.
pub fn fsbench(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().expect("run fsbench")
}

/// Text of stdout + stderr, for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Mount lines whose mountpoint is under `dir`.
pub fn mounts_under(dir: &Path) -> Vec<String> {
    let d = dir.to_string_lossy().into_owned();
    std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .filter(|l| l.contains(&d))
        .map(str::to_string)
        .collect()
}

/// `losetup -a` lines whose backing file is under `dir`.
pub fn loops_under(dir: &Path) -> Vec<String> {
    let d = dir.to_string_lossy().into_owned();
    let out = Command::new("losetup").arg("-a").output().expect("losetup -a");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(&d))
        .map(str::to_string)
        .collect()
}

/// Asserts nothing of fsbench is left under `dir`: no mounts, no loop devices, no run folders.
pub fn assert_no_leftovers(dir: &Path) {
    assert_eq!(mounts_under(dir), Vec::<String>::new(), "mounts left behind");
    assert_eq!(loops_under(dir), Vec::<String>::new(), "loop devices left behind");
    if let Ok(rd) = std::fs::read_dir(dir) {
        let runs: Vec<_> = rd
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n.to_string_lossy().starts_with("run-"))
            .collect();
        assert!(runs.is_empty(), "run folders left behind: {runs:?}");
    }
}

/// A one-filesystem bonnie suite small enough to run in about a second per repeat.
pub const TINY: &str = r#"
[suite]
name = "tiny"
description = "integration test"

[run]
repeats = 3

[[fs]]
type = "ext4"

[[workload]]
kind = "bonnie"
file_size = "16MiB"
char_size = "1MiB"
files = 256
seeks = 200
"#;

/// The bonnie phases, in run order (the rows every bonnie report must have).
pub const BONNIE_PHASES: [&str; 12] = [
    "seq_write_char",
    "seq_write_block",
    "rewrite",
    "seq_read_char",
    "seq_read_block",
    "random_seeks",
    "seq_create",
    "seq_stat",
    "seq_delete",
    "rand_create",
    "rand_stat",
    "rand_delete",
];

/// Writes a suite file `name` into `dir` and returns its path as text.
pub fn write_suite(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// The arguments `--db DB run SUITE FLAG PATH` of an `fsbench run`; `(FLAG, PATH)` is where it
/// runs (`--scratch` or `--dir`).
pub fn run_args<'a>(db: &'a Path, suite: &'a str, (flag, path): (&'a str, &'a Path)) -> [&'a str; 6] {
    ["--db", db.to_str().unwrap(), "run", suite, flag, path.to_str().unwrap()]
}

/// The command `fsbench --db DB run SUITE --device DEV --wipe DEV --scratch SCRATCH`, not
/// started: the suite on the whole device `dev`, its destruction confirmed.
pub fn wiping_run(db: &Path, suite: &Path, dev: &str, scratch: &Path) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(["--db", db.to_str().unwrap(), "run", suite.to_str().unwrap()])
        .args(["--device", dev, "--wipe", dev, "--scratch", scratch.to_str().unwrap()]);
    cmd
}

/// A variant named after its filesystem type, made with the default `mkfs` and mounted with
/// `mount_opts`, on an image sized by the plan.
pub fn fs_variant(fs_type: &str, mount_opts: &[&str]) -> fsbench::config::FsVariant {
    fsbench::config::FsVariant {
        mount_opts: mount_opts.iter().map(|s| s.to_string()).collect(),
        ..fsbench::config::FsVariant::with_type(fs_type, fs_type)
    }
}

/// Starts `fsbench --db DB run SUITE --scratch SCRATCH EXTRA…` in the background, stdout
/// discarded and stderr piped (for progress lines and errors).
pub fn spawn_run(db: &Path, suite: &str, scratch: &Path, extra: &[&str]) -> std::process::Child {
    Command::new(bin())
        .args(run_args(db, suite, ("--scratch", scratch)))
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start fsbench run")
}

/// `fsbench --db DB run SUITE FLAG PATH EXTRA…`, run to its end; `(FLAG, PATH)` is where it
/// runs (`--scratch` or `--dir`).
pub fn run_suite(db: &Path, suite: &str, (flag, path): (&str, &Path), extra: &[&str]) -> Output {
    let mut args = run_args(db, suite, (flag, path)).to_vec();
    args.extend_from_slice(extra);
    fsbench(&args)
}

/// `fsbench run` of the suite `text` (written to DIR/suite.toml) started in the background with
/// the database DIR/r.db and the scratch folder DIR/scratch: those two paths and the run.
pub fn start_run(dir: &Path, text: &str) -> (PathBuf, PathBuf, Child) {
    let suite = write_suite(dir, "suite.toml", text);
    let (db, sc) = (dir.join("r.db"), dir.join("scratch"));
    let child = spawn_run(&db, &suite, &sc, &[]);
    (db, sc, child)
}

/// A mount the test made itself (`mount ARGS… MNT`), unmounted on drop — lazily if busy — so a
/// failing assertion leaves nothing mounted for the leftover checks of `.ci/run`.
pub struct TestMount(PathBuf);

impl TestMount {
    /// Runs `mount ARGS… MNT` and asserts it succeeded.
    pub fn new(args: &[&str], mnt: &Path) -> TestMount {
        let o = Command::new("mount").args(args).arg(mnt).output().expect("run mount");
        assert!(o.status.success(), "mount {args:?} {}: {}", mnt.display(), text(&o));
        TestMount(mnt.to_path_buf())
    }
}

impl Drop for TestMount {
    fn drop(&mut self) {
        let ok = Command::new("umount").arg(&self.0).status().is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// The JSON report of `session` (`latest`, an id or a label) in the database `db`.
pub fn report_json(db: &str, session: &str) -> serde_json::Value {
    let o = fsbench(&["--db", db, "report", session, "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).expect("valid JSON")
}

/// `fsbench --db DB report SESSION --format FORMAT -o OUT`, which must succeed; the text it wrote.
pub fn report_file(db: &str, session: &str, format: &str, out: &Path) -> String {
    let o = fsbench(&[
        "--db",
        db,
        "report",
        session,
        "--format",
        format,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "report --format {format} failed:\n{}", text(&o));
    std::fs::read_to_string(out).unwrap()
}

/// The common run of a test: `fsbench --db DIR/r.db run SUITE --scratch DIR/scratch EXTRA…`
/// in the test's folder `DIR`; `db` and `scratch` stay for the report and the leftover checks.
pub struct SuiteRun {
    /// `DIR/r.db`.
    pub db: PathBuf,
    /// `DIR/scratch`.
    pub scratch: PathBuf,
}

impl SuiteRun {
    /// The paths of a run in `dir` (nothing is created).
    pub fn in_dir(dir: &Path) -> SuiteRun {
        SuiteRun {
            db: dir.join("r.db"),
            scratch: dir.join("scratch"),
        }
    }

    /// The database path as text (for `--db` and [`report_json`]).
    pub fn db_str(&self) -> &str {
        self.db.to_str().unwrap()
    }

    /// Runs `suite`, `extra` arguments after the scratch folder, and returns its output.
    pub fn run(&self, suite: &str, extra: &[&str]) -> Output {
        run_suite(&self.db, suite, ("--scratch", &self.scratch), extra)
    }

    /// [`SuiteRun::run`] without extra arguments, asserting exit status 0 (status and output
    /// in the message).
    pub fn run_ok(&self, suite: &str) -> Output {
        let o = self.run(suite, &[]);
        assert_eq!(o.status.code(), Some(0), "{:?}\n{}", o.status, text(&o));
        o
    }
}

/// Files left anywhere under `dir` (images, initramfs, logs, state records).
pub fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            } else {
                out.push(e.path().display().to_string());
            }
        }
    }
    out
}

/// [`assert_no_leftovers`], and not a single file anywhere under `dir` either.
pub fn assert_nothing_left(dir: &Path) {
    assert_no_leftovers(dir);
    assert_eq!(files_under(dir), Vec::<String>::new(), "files left behind");
}

/// Waits for `child` (its stderr piped) to end: its exit status and what it wrote to stderr.
pub fn wait_with_stderr(child: &mut Child) -> (ExitStatus, String) {
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    (status, err)
}

/// Ctrl-C (SIGINT) to the run `child` started by this test, then [`wait_with_stderr`].
pub fn interrupt(child: &mut Child) -> (ExitStatus, String) {
    rustix::process::kill_process(rustix::process::Pid::from_child(child), rustix::process::Signal::Int).unwrap();
    wait_with_stderr(child)
}

/// The stored samples, in the JSON report `j`, of the cases for which `keep(case)` holds.
pub fn samples_of(j: &serde_json::Value, keep: impl Fn(&serde_json::Value) -> bool) -> Vec<&serde_json::Value> {
    let ids: Vec<&str> = j["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| keep(c))
        .filter_map(|c| c["case_id"].as_str())
        .collect();
    j["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["case_id"].as_str().is_some_and(|id| ids.contains(&id)))
        .collect()
}

/// The shared memory a PostgreSQL server leaves when it is killed, listed before a test so the
/// test can check afterwards that none of it was left: the dynamic shared memory files
/// `/dev/shm/PostgreSQL.<digits>` and the SysV segments (`/proc/sysvipc/shm`). Other processes
/// on the machine may own segments too, so only what appeared since the listing counts, and
/// only while no live process uses it (a running server maps its files and attaches its SysV
/// segment).
pub struct ShmListing {
    files: std::collections::BTreeSet<String>,
    sysv: std::collections::BTreeSet<i64>,
}

/// `PostgreSQL.<digits>` files directly in /dev/shm.
pub fn pg_shm_files() -> std::collections::BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| {
            n.strip_prefix("PostgreSQL.")
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(|n| format!("/dev/shm/{n}"))
        .collect()
}

/// Every path some live process maps (from /proc/*/maps).
fn mapped_paths() -> std::collections::BTreeSet<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("maps")).ok())
        .flat_map(|m| {
            m.lines()
                .filter_map(|l| l.splitn(6, ' ').nth(5).map(|p| p.trim_start().to_string()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// SysV shared memory segments: (shmid, attached, creator pid).
fn sysv_segments() -> Vec<(i64, u64, u32)> {
    std::fs::read_to_string("/proc/sysvipc/shm")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((
                f.get(1)?.parse().ok()?,
                f.get(6)?.parse().ok()?,
                f.get(4)?.parse().ok()?,
            ))
        })
        .collect()
}

/// Whether `pid` runs (a zombie waiting to be reaped does not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| Some(s.rsplit_once(')')?.1.trim_start().chars().next()? != 'Z'))
        .unwrap_or(false)
}

impl ShmListing {
    /// What is there now.
    pub fn now() -> ShmListing {
        ShmListing {
            files: pg_shm_files(),
            sysv: sysv_segments().into_iter().map(|s| s.0).collect(),
        }
    }

    /// What appeared since this listing and nothing uses: segment files no live process maps,
    /// SysV segments nothing is attached to whose creator is gone.
    pub fn left_now(&self) -> Vec<String> {
        let mapped = mapped_paths();
        let mut left: Vec<String> = pg_shm_files()
            .into_iter()
            .filter(|f| !self.files.contains(f) && !mapped.contains(f))
            .collect();
        left.extend(
            sysv_segments()
                .into_iter()
                .filter(|&(id, attached, creator)| !self.sysv.contains(&id) && attached == 0 && !alive(creator))
                .map(|(id, _, creator)| format!("SysV shared memory {id} (made by process {creator})")),
        );
        left
    }

    /// Asserts nothing is left ([`ShmListing::left_now`]), waiting up to 15 s for it to be
    /// gone: another test's server may be between its kill and the removal that follows.
    pub fn assert_none_left(&self) {
        let t0 = std::time::Instant::now();
        let mut left = self.left_now();
        while !left.is_empty() && t0.elapsed() < std::time::Duration::from_secs(15) {
            std::thread::sleep(std::time::Duration::from_millis(100));
            left = self.left_now();
        }
        assert_eq!(left, Vec::<String>::new(), "PostgreSQL shared memory left behind");
    }
}

/// The check can fail: a segment file that appears and nobody maps is a leftover until it is
/// gone; one made before the listing is not.
#[test]
fn a_left_segment_file_is_seen_by_the_shm_listing() {
    let name = |n: u64| format!("/dev/shm/PostgreSQL.{n}");
    let free = |from: u64| (from..).map(name).find(|p| !Path::new(p).exists()).unwrap();
    let old = free(4_000_000_000 + u64::from(std::process::id()));
    std::fs::write(&old, b"x").unwrap();
    let listing = ShmListing::now();
    let new = free(4_100_000_000 + u64::from(std::process::id()));
    std::fs::write(&new, b"x").unwrap();
    let left = listing.left_now();
    std::fs::remove_file(&new).unwrap();
    std::fs::remove_file(&old).unwrap();
    assert!(left.contains(&new), "{left:?}");
    assert!(!left.contains(&old), "{left:?}");
    assert!(!listing.left_now().contains(&new));
}
