//! The guest-kernel target (src/guest): a real QEMU guest (TCG here: KVM hangs in early boot on
//! this machine, which the probe detects) boots Debian's kernels, runs a tiny bonnie on jfs
//! (default kernel) and on reiserfs (Debian's 6.12) inside, and the host stores the samples with the guest's kernel release; a guest
//! that cannot boot is a clean failed case with its console lines; nothing is left after success
//! or after SIGKILL + `fsbench cleanup`. The guest boots are the slow part: the set boots three
//! guests (two cases, one killed), each a few seconds of guest time.
//!
//! The filesystems people compare today: f2fs, nilfs2 and ntfs3 run the same tiny bonnie in a
//! guest (ntfs3 under the further 6.12 kernel, Debian 12's 6.1 lacking it) and ntfs-3g over
//! FUSE on the host, in one session; exfat in a guest runs bonnie and a tiny mongo whose
//! `symlink` phase says "unsupported on exfat" while every other phase runs (five boots, each
//! 15-30 s under TCG).

use crate::require_privileged;
use crate::util::{
    assert_nothing_left, files_under, fsbench, report_json, scratch, skip_or_fail, spawn_run, text, write_suite,
    SuiteRun,
};
use std::path::Path;
use std::time::{Duration, Instant};

/// A bonnie small enough for an emulated CPU.
const BONNIE: &str = r#"
[[workload]]
kind = "bonnie"
file_size = "8MiB"
char_size = "512KiB"
files = 64
seeks = 50
"#;

fn suite(fs: &[(&str, &str)]) -> String {
    let mut s = String::from("[suite]\nname = \"guest\"\n\n[run]\nrepeats = 1\n\n");
    for (t, kernel) in fs {
        s += &format!("[[fs]]\ntype = \"{t}\"\nkernel = \"{kernel}\"\n\n");
    }
    s + BONNIE
}

/// A suite of `fs` (type, `Some(kernel)` for a guest) and the workloads `workloads`.
fn suite_of(fs: &[(&str, Option<&str>)], workloads: &str) -> String {
    let mut s = String::from("[suite]\nname = \"today\"\n\n[run]\nrepeats = 1\n\n");
    for (t, kernel) in fs {
        s += &format!("[[fs]]\ntype = \"{t}\"\n");
        if let Some(k) = kernel {
            s += &format!("kernel = \"{k}\"\n");
        }
        s += "\n";
    }
    s + workloads
}

/// The notes of the one sample of `variant` × `workload` in the JSON report, asserting it is ok.
pub(crate) fn ok_sample<'a>(report: &'a serde_json::Value, variant: &str, workload: &str) -> &'a serde_json::Value {
    let case = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["variant"] == variant && c["workload"] == workload)
        .unwrap_or_else(|| panic!("no case {variant} × {workload}: {}", report["cases"]));
    let samples: Vec<_> = report["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["case_id"] == case["case_id"])
        .collect();
    assert_eq!(samples.len(), 1, "{variant}: {samples:?}");
    assert_eq!(samples[0]["status"]["state"], "ok", "{variant}: {}", samples[0]);
    samples[0]
}

/// The value of `phase`'s `metric` in a stored sample.
pub(crate) fn value(sample: &serde_json::Value, phase: &str, metric: &str) -> Option<f64> {
    sample["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["phase"] == phase && x["metric"]["name"] == metric)
        .and_then(|x| x["value"].as_f64())
}

/// ntfs-3g processes whose command line names something under `dir`.
fn ntfs3g_under(dir: &Path) -> Vec<u32> {
    processes_under(dir, |c| c.windows(7).any(|w| w == b"ntfs-3g"))
}

/// Whether QEMU and the guest kernel are here; otherwise the test is skipped (or fails in CI).
pub(crate) fn guest_ready() -> bool {
    let have_qemu = crate::util::tool_path("qemu-system-x86_64").is_some();
    let have_kernel = std::fs::read_dir("/var/lib/fsbench/guest/boot")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("vmlinuz-"));
    let have_612 = !guest_release_612().is_empty();
    if !(have_qemu && have_kernel && have_612) {
        skip_or_fail("no qemu-system-x86_64 or guest kernels (default and 6.12): run scripts/install.sh");
        return false;
    }
    true
}

/// QEMU processes whose command line names something under `dir`.
fn qemus_under(dir: &Path) -> Vec<u32> {
    processes_under(dir, |c| {
        c.starts_with(b"qemu-system") || c.windows(18).any(|w| w == b"qemu-system-x86_64")
    })
}

/// Processes whose command line `is_it` and names something under `dir`.
fn processes_under(dir: &Path, is_it: impl Fn(&[u8]) -> bool) -> Vec<u32> {
    let needle = dir.as_os_str().as_encoded_bytes().to_vec();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| is_it(&c) && c.windows(needle.len()).any(|w| w == needle.as_slice()))
        })
        .collect()
}

/// Nothing of a guest run left under `scr`: no QEMU naming it, no mount, loop device, run
/// folder or file.
pub(crate) fn assert_guest_left_nothing(scr: &Path) {
    assert!(qemus_under(scr).is_empty(), "a QEMU process is left");
    assert_nothing_left(scr);
}

/// The release of the guest kernel install.sh unpacked.
fn guest_release() -> String {
    std::fs::read_dir("/var/lib/fsbench/guest/boot")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_prefix("vmlinuz-")
                .map(str::to_string)
        })
        .max()
        .unwrap()
}

/// The release of the 6.12 kernel install.sh unpacked apart (`kernel = "6.12"`).
fn guest_release_612() -> String {
    std::fs::read_dir("/var/lib/fsbench/guest/kernels")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|r| r.starts_with("6.12."))
        .max()
        .unwrap_or_default()
}

/// jfs under Debian's default kernel and reiserfs under its 6.12 (xz-compressed modules), in
/// one session: two kernels, each named in its samples and in the session's tool versions.
#[test]
fn a_tcg_guest_runs_bonnie_on_jfs_and_reiserfs_and_the_host_stores_the_samples() {
    require_privileged!();
    if !guest_ready() {
        return;
    }
    let dir = scratch();
    let scr = dir.path().join("scratch");
    let suite = write_suite(
        dir.path(),
        "guest.toml",
        &suite(&[("jfs", "guest"), ("reiserfs", "6.12")]),
    );
    let run = SuiteRun::in_dir(dir.path());
    let t0 = Instant::now();
    let o = run.run(&suite, &[]);
    eprintln!("two guest cases took {:.0} s", t0.elapsed().as_secs_f64());
    assert!(o.status.success(), "{}", text(&o));
    // The metrics keep their declared roles across the serial line: latency percentiles stay
    // out of the terminal table, as the host's do.
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("seq_write_block") && !table.contains("lat_p50"),
        "{table}"
    );

    let report = report_json(run.db_str(), "latest");
    let (release, release_612) = (guest_release(), guest_release_612());
    for (variant, release) in [("jfs@guest", &release), ("reiserfs@guest:6.12", &release_612)] {
        let s = ok_sample(&report, variant, "bonnie");
        let notes: Vec<&str> = s["notes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|n| n.as_str())
            .collect();
        let note = notes[0];
        assert!(
            note.starts_with(&format!("guest: Linux {release} under ")),
            "{variant}: the guest's kernel is not in the sample: {notes:?}"
        );
        // Measured in the guest by the engine: bonnie's phases with real numbers.
        let tput = value(s, "seq_write_block", "throughput").expect("seq_write_block throughput");
        assert!(tput > 0.0, "{tput}");
        let boot_s = value(s, "guest", "boot").expect("boot time");
        assert!(boot_s > 0.0 && boot_s < 180.0, "boot took {boot_s} s");
        eprintln!("{variant}: {note}");
        // The mount was the guest's, of the requested type.
        assert!(
            s["effective_mount_opts"].as_str().is_some_and(|o| o.contains("rw")),
            "{s}"
        );
    }
    // The session records the guest kernel and QEMU.
    let tools = report["session"]["tool_versions"].to_string();
    assert!(
        tools.contains("guest kernel")
            && tools.contains(&release)
            && tools.contains(&release_612)
            && tools.contains("QEMU emulator"),
        "{tools}"
    );
    // The report groups them apart from any host variant and labels emulated results.
    let cell = &report["workloads"][0]["rows"][0]["cells"][0];
    if note_accel(&report) == "tcg" {
        assert!(
            cell["group"]
                .as_str()
                .is_some_and(|g| g.contains("emulated: compare only with each other")),
            "{cell}"
        );
    }
    assert_guest_left_nothing(&scr);
}

/// The accelerator the stored note names.
fn note_accel(report: &serde_json::Value) -> String {
    let note = report["samples"][0]["notes"][0].as_str().unwrap_or_default();
    note.split(" under ")
        .nth(1)
        .unwrap_or("")
        .split(' ')
        .next()
        .unwrap_or("")
        .to_string()
}

#[test]
fn a_guest_that_cannot_boot_is_a_clean_failed_case_with_its_console_lines() {
    require_privileged!();
    if !guest_ready() {
        return;
    }
    let dir = scratch();
    let scr = dir.path().join("scratch");
    // A file that is not a kernel: QEMU refuses it at once.
    let bogus = dir.path().join("vmlinuz-bogus");
    std::fs::write(&bogus, vec![0x42u8; 64 << 10]).unwrap();
    let suite = write_suite(dir.path(), "bad.toml", &suite(&[("jfs", bogus.to_str().unwrap())]));
    let run = SuiteRun::in_dir(dir.path());
    let o = run.run(&suite, &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a failed repeat, not a crash or a usage error: {}",
        text(&o)
    );
    let report = report_json(run.db_str(), "latest");
    let s = &report["samples"][0];
    assert_eq!(s["status"]["state"], "failed", "{s}");
    let why = s["status"]["error"].as_str().unwrap();
    assert!(why.contains("ended before it reached its init; console: "), "{why}");
    // QEMU's own words (here: "qemu: linux kernel too old to load a ram disk").
    assert!(why.contains("qemu"), "QEMU's words are missing: {why}");
    assert_guest_left_nothing(&scr);
}

#[test]
fn a_sigkilled_run_with_a_guest_leaves_nothing_after_cleanup() {
    require_privileged!();
    if !guest_ready() {
        return;
    }
    let dir = scratch();
    let scr = dir.path().join("scratch");
    let suite = write_suite(dir.path(), "kill.toml", &suite(&[("jfs", "guest")]));
    let db = dir.path().join("r.db");
    let mut child = spawn_run(&db, &suite, &scr, &[]);
    // Kill fsbench while the guest (not the KVM probe: it has a disk image) runs.
    let t0 = Instant::now();
    let image = || {
        files_under(&scr)
            .iter()
            .any(|f| f.contains("/img-") && f.ends_with(".img"))
    };
    while qemus_under(&scr).is_empty() || !image() {
        assert!(t0.elapsed() < Duration::from_secs(120), "the guest never started");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL: no guard runs
    child.wait().unwrap();
    assert!(image(), "the disk image should still be there before cleanup");

    // `cleanup` also visits the run registry, where other processes' runs may fail to undo:
    // only what it says about this scratch folder is this test's business.
    let o = fsbench(&["cleanup", "--scratch", scr.to_str().unwrap()]);
    let ours = scr.to_str().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.lines().any(|l| l.contains(ours)), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines()
            .any(|l| l.starts_with("removed image") && l.contains(ours) && l.contains("/img-")),
        "{out}"
    );
    // QEMU dies with fsbench (PR_SET_PDEATHSIG); the recorded kill step covers the rest.
    let t1 = Instant::now();
    while !qemus_under(&scr).is_empty() && t1.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_guest_left_nothing(&scr);
}

#[test]
fn ctrl_c_while_a_guest_runs_kills_qemu_and_removes_its_files() {
    require_privileged!();
    if !guest_ready() {
        return;
    }
    let dir = scratch();
    let scr = dir.path().join("scratch");
    let suite = write_suite(dir.path(), "int.toml", &suite(&[("reiserfs", "guest")]));
    let db = dir.path().join("r.db");
    let mut child = spawn_run(&db, &suite, &scr, &[]);
    let t0 = Instant::now();
    while qemus_under(&scr).is_empty() || !files_under(&scr).iter().any(|f| f.ends_with(".img")) {
        assert!(t0.elapsed() < Duration::from_secs(120), "the guest never started");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was interrupted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "an interrupted run exits 130");
    assert_guest_left_nothing(&scr);
}

#[test]
fn a_guest_that_misses_its_boot_timeout_is_killed_and_a_failed_case_with_its_console() {
    require_privileged!();
    if !guest_ready() {
        return;
    }
    let dir = scratch();
    let scr = dir.path().join("scratch");
    let suite = write_suite(dir.path(), "slow.toml", &suite(&[("jfs", "guest")]));
    let db = dir.path().join("r.db");
    // No kernel reaches its init in 0.3 s under emulation.
    let o = std::process::Command::new(crate::util::bin())
        .args([
            "--db",
            db.to_str().unwrap(),
            "run",
            &suite,
            "--scratch",
            scr.to_str().unwrap(),
        ])
        .env("FSBENCH_GUEST_BOOT_TIMEOUT", "0.3")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let report = report_json(db.to_str().unwrap(), "latest");
    let why = report["samples"][0]["status"]["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(why.contains("did not reach its init within 0.3 s; console: "), "{why}");
    assert_guest_left_nothing(&scr);
}

#[test]
fn f2fs_nilfs2_and_ntfs3_run_bonnie_in_a_guest_and_ntfs_3g_over_fuse_and_leave_nothing() {
    require_privileged!();
    if !guest_ready() {
        return;
    }
    let tools = ["mkfs.f2fs", "mkfs.nilfs2", "mkfs.ntfs", "ntfs-3g"];
    if tools.iter().any(|t| crate::util::tool_path(t).is_none()) {
        skip_or_fail("f2fs-tools, nilfs-tools or ntfs-3g missing: run scripts/install.sh");
        return;
    }
    let dir = scratch();
    let scr = dir.path().join("scratch");
    let fs = [
        ("ntfs-3g", None),
        ("f2fs", Some("guest")),
        ("nilfs2", Some("guest")),
        ("ntfs3", Some("guest")),
    ];
    let suite = write_suite(dir.path(), "today.toml", &suite_of(&fs, BONNIE));
    let run = SuiteRun::in_dir(dir.path());
    let t0 = Instant::now();
    let o = run.run(&suite, &[]);
    eprintln!("four cases took {:.0} s", t0.elapsed().as_secs_f64());
    assert!(o.status.success(), "{}", text(&o));
    let report = report_json(run.db_str(), "latest");
    for (variant, kernel) in [
        ("ntfs-3g", None),
        ("f2fs@guest", Some(guest_release())),
        ("nilfs2@guest", Some(guest_release())),
        // Debian 12's 6.1 is built without ntfs3: the further 6.12 kernel runs it.
        ("ntfs3@guest", None),
    ] {
        let s = ok_sample(&report, variant, "bonnie");
        let tput = value(s, "seq_write_block", "throughput").expect("seq_write_block throughput");
        assert!(tput > 0.0, "{variant}: {tput}");
        let note = s["notes"][0].as_str().unwrap_or_default().to_string();
        if let Some(release) = kernel {
            assert!(
                note.starts_with(&format!("guest: Linux {release} under ")),
                "{variant}: {note}"
            );
        }
        if variant == "ntfs3@guest" {
            assert!(note.starts_with("guest: Linux 6.12."), "{variant}: {note}");
        }
        if variant == "ntfs-3g" {
            // The host's own mount, of FUSE's block-device type.
            assert!(
                s["effective_mount_opts"]
                    .as_str()
                    .is_some_and(|o| o.contains("allow_other")),
                "{s}"
            );
            assert!(!note.starts_with("guest:"), "{note}");
        }
    }
    assert!(ntfs3g_under(&scr).is_empty(), "an ntfs-3g server is left");
    assert_guest_left_nothing(&scr);
}

#[test]
fn on_exfat_in_a_guest_mongo_s_symlink_phase_is_unsupported_and_the_rest_runs() {
    require_privileged!();
    if !guest_ready() {
        return;
    }
    if crate::util::tool_path("mkfs.exfat").is_none() {
        skip_or_fail("mkfs.exfat missing: run scripts/install.sh (exfatprogs)");
        return;
    }
    let dir = scratch();
    let scr = dir.path().join("scratch");
    let mongo = "\n[[workload]]\nkind = \"mongo\"\nfiles = 200\ndirs = 4\nfile_size = \"1000B\"\n";
    let workloads = format!("{BONNIE}{mongo}");
    let suite = write_suite(
        dir.path(),
        "exfat.toml",
        &suite_of(&[("exfat", Some("guest"))], &workloads),
    );
    let run = SuiteRun::in_dir(dir.path());
    let o = run.run(&suite, &[]);
    assert!(
        o.status.success(),
        "a phase exfat cannot run never fails the run: {}",
        text(&o)
    );
    let report = report_json(run.db_str(), "latest");
    let b = ok_sample(&report, "exfat@guest", "bonnie");
    assert!(
        value(b, "seq_write_block", "throughput").is_some_and(|v| v > 0.0),
        "{b}"
    );
    let m = ok_sample(&report, "exfat@guest", "mongo");
    let notes = m["notes"].to_string();
    assert!(
        notes.contains("symlink: unsupported on exfat (no symbolic links)"),
        "{notes}"
    );
    assert!(
        value(m, "symlink", "time").is_none(),
        "a symlink phase was measured on exfat: {m}"
    );
    for phase in ["create", "copy", "read", "stat", "rename", "delete"] {
        assert!(value(m, phase, "time").is_some_and(|t| t > 0.0), "{phase} missing: {m}");
    }
    // The report says it, too.
    let r = fsbench(&["--db", run.db_str(), "report", "latest"]);
    assert!(
        String::from_utf8_lossy(&r.stdout).contains("unsupported on exfat"),
        "{}",
        text(&r)
    );
    assert_guest_left_nothing(&scr);
}

#[test]
fn ext4_on_the_host_and_in_a_guest_give_the_guest_s_slowdown_factor_with_an_interval() {
    require_privileged!();
    if !guest_ready() {
        return;
    }
    let dir = scratch();
    let scr = dir.path().join("scratch");
    let text_of = suite_of(&[("ext4", None), ("ext4", Some("guest"))], BONNIE).replace("repeats = 1", "repeats = 2");
    let suite = write_suite(dir.path(), "calibration.toml", &text_of);
    let run = SuiteRun::in_dir(dir.path());
    let o = run.run_ok(&suite);
    // The terminal table names the factor; the md report has every row's with its interval.
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("calibration: ext4@guest (guest, ") && table.contains("against ext4 on the host"),
        "{table}"
    );
    let md = fsbench(&["--db", run.db_str(), "report", "latest", "--format", "md"]);
    let md = String::from_utf8_lossy(&md.stdout).replace('\\', "");
    assert!(
        md.contains("## Calibration: ext4 on the host against ext4@guest"),
        "{md}"
    );
    let row = md
        .lines()
        .find(|l| l.starts_with("| bonnie | seq_write_block | throughput"))
        .unwrap_or_else(|| panic!("{md}"));
    let interval: Vec<f64> = row
        .split('[')
        .nth(1)
        .and_then(|s| s.split(']').next())
        .unwrap_or_else(|| panic!("no interval: {row}"))
        .split(", ")
        .map(|s| s.parse().unwrap())
        .collect();
    // Two repeats on a loaded machine can make the interval wide: its lower end may print as
    // 0.00 (a CI run: 7.10 [0.00, 24402.45]); it is an interval around the factor all the same.
    assert!(interval[0] >= 0.0 && interval[0] < interval[1], "{row}");
    // The tables still rank the guest only within its own group.
    let report = report_json(run.db_str(), "latest");
    let cells = report["workloads"][0]["rows"][0]["cells"].as_array().unwrap();
    let guest = cells.iter().find(|c| c["variant"] == "ext4@guest").unwrap();
    assert!(
        guest["group"].as_str().is_some_and(|g| g.starts_with("guest, ")),
        "{guest}"
    );
    assert_guest_left_nothing(&scr);
}

#[test]
fn list_and_doctor_say_where_and_how_each_filesystem_of_today_runs() {
    require_privileged!();
    if !guest_ready() {
        return;
    }
    for args in [&["list", "filesystems"][..], &["doctor"][..]] {
        let o = fsbench(args);
        let out = String::from_utf8_lossy(&o.stdout);
        let line = |t: &str| {
            out.lines()
                .find(|l| l.split_whitespace().any(|w| w.trim_end_matches(':') == t))
                .unwrap_or_else(|| panic!("{args:?}: no {t}: {out}"))
                .to_string()
        };
        for t in ["f2fs", "nilfs2", "exfat"] {
            let l = line(t);
            assert!(
                l.contains("in a QEMU guest kernel (Linux 6.1.")
                    && l.contains(&format!("module {t} loaded in the guest")),
                "{l}"
            );
            assert!(l.contains(&format!("--fs {t}@guest")), "{l}");
        }
        // Debian 12's 6.1 is built without ntfs3: the further 6.12 kernel has it.
        let ntfs3 = line("ntfs3");
        assert!(
            ntfs3.contains("(Linux 6.12.") && ntfs3.contains("module ntfs3 loaded"),
            "{ntfs3}"
        );
        assert!(line("ntfs-3g").contains("available through FUSE (ntfs-3g"), "{out}");
        let bcachefs = line("bcachefs");
        assert!(
            bcachefs.contains("unavailable: ") && bcachefs.contains("not packaged for Debian 12"),
            "{bcachefs}"
        );
        // `mkfs.ntfs` makes ntfs3 and ntfs-3g: no third, generic `ntfs` line.
        assert!(
            !out.lines()
                .any(|l| l.split_whitespace().any(|w| w.trim_end_matches(':') == "ntfs")),
            "{out}"
        );
    }
}

#[test]
fn a_sigkilled_run_on_ntfs_3g_leaves_no_fuse_server_after_cleanup() {
    require_privileged!();
    if crate::util::tool_path("ntfs-3g").is_none() {
        skip_or_fail("ntfs-3g missing: run scripts/install.sh");
        return;
    }
    let dir = scratch();
    let scr = dir.path().join("scratch");
    let bonnie =
        "[[workload]]\nkind = \"bonnie\"\nfile_size = \"64MiB\"\nchar_size = \"8MiB\"\nfiles = 2000\nseeks = 500\n";
    let suite = write_suite(dir.path(), "ntfs.toml", &suite_of(&[("ntfs-3g", None)], bonnie));
    let mut child = spawn_run(&dir.path().join("r.db"), &suite, &scr, &[]);
    let t0 = Instant::now();
    // The server and its mount: `mount -t ntfs-3g` names the type before the server runs, and a
    // kill before the mount exists leaves cleanup nothing to unmount (a CI run under load).
    while ntfs3g_under(&scr).is_empty() || !crate::util::mounts_under(&scr).iter().any(|m| m.contains("fuseblk")) {
        assert!(t0.elapsed() < Duration::from_secs(60), "ntfs-3g never mounted");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL: no guard runs, the FUSE server keeps the mount
    child.wait().unwrap();
    assert!(
        !ntfs3g_under(&scr).is_empty(),
        "the server should outlive fsbench until cleanup"
    );
    let o = fsbench(&["cleanup", "--scratch", scr.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.lines().any(|l| l.starts_with("unmounted ")), "{}", text(&o));
    // Unmounting a fuseblk mount ends its server.
    let t1 = Instant::now();
    while !ntfs3g_under(&scr).is_empty() && t1.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(ntfs3g_under(&scr).is_empty(), "an ntfs-3g server is left");
    assert_nothing_left(&scr);
}
