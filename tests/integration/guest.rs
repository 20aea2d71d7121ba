//! The guest-kernel target (src/guest): a real QEMU guest (TCG here: KVM hangs in early boot on
//! this machine, which the probe detects) boots Debian's kernels, runs a tiny bonnie on jfs
//! (default kernel) and on reiserfs (Debian's 6.12) inside, and the host stores the samples with the guest's kernel release; a guest
//! that cannot boot is a clean failed case with its console lines; nothing is left after success
//! or after SIGKILL + `fsbench cleanup`. The guest boots are the slow part: the set boots three
//! guests (two cases, one killed), each a few seconds of guest time.

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

/// Whether QEMU and the guest kernel are here; otherwise the test is skipped (or fails in CI).
fn guest_ready() -> bool {
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
    let needle = dir.as_os_str().as_encoded_bytes().to_vec();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                c.starts_with(b"qemu-system") || c.windows(18).any(|w| w == b"qemu-system-x86_64")
            } && c.windows(needle.len()).any(|w| w == needle.as_slice()))
        })
        .collect()
}

/// Nothing of a guest run left under `scr`: no QEMU naming it, no mount, loop device, run
/// folder or file.
fn assert_guest_left_nothing(scr: &Path) {
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
    let cases = report["cases"].as_array().unwrap();
    for (variant, release) in [("jfs@guest", &release), ("reiserfs@guest:6.12", &release_612)] {
        let case = cases.iter().find(|c| c["variant"] == variant).expect(variant);
        let samples: Vec<_> = report["samples"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["case_id"] == case["case_id"])
            .collect();
        assert_eq!(samples.len(), 1, "{variant}: {samples:?}");
        let s = samples[0];
        assert_eq!(s["status"]["state"], "ok", "{variant}: {s}");
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
        let m = s["measurements"].as_array().unwrap();
        let tput = m
            .iter()
            .find(|x| x["phase"] == "seq_write_block" && x["metric"]["name"] == "throughput")
            .expect("seq_write_block throughput");
        assert!(tput["value"].as_f64().unwrap() > 0.0, "{tput}");
        let boot = m
            .iter()
            .find(|x| x["phase"] == "guest" && x["metric"]["name"] == "boot")
            .expect("boot time");
        let boot_s = boot["value"].as_f64().unwrap();
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
