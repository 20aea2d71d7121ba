//! Read-only image filesystems (issue 31, item 2; the `image` workload, doc/images.md): erofs
//! and squashfs built by their real tools (mkfs.erofs, mksquashfs) from a tiny kernel-like tree
//! and read back through a kernel driver, in a QEMU guest (Debian's 6.1: always possible with
//! scripts/install.sh) and on the running kernel (measured where it has the drivers, each row
//! said unavailable with the reason where it has not). Each checks the stored metrics against
//! what `fsbench dataset gen` says the tree holds, and that nothing is left behind; an image
//! missing files fails its repeat, and after a SIGKILL with the image mounted `fsbench
//! cleanup` takes its mount and loop device back.

use crate::guest::{assert_guest_left_nothing, guest_ready, ok_sample, value};
use crate::require_privileged;
use crate::util::{
    assert_nothing_left, fsbench, mounts_under, report_json, scratch, skip_or_fail, spawn_run, text, write_suite,
    SuiteRun,
};
use std::time::{Duration, Instant};

/// The tree's scale in these tests: 75 files, 1.1 MiB of text.
const SCALE: &str = "0.001";

/// The files and bytes of `fsbench dataset gen kernel --scale SCALE --content text`, as the
/// generator itself prints them: what the image workload must read back.
fn kernel_tree_counts() -> (f64, f64) {
    let dir = scratch();
    let tree = dir.path().join("tree");
    let o = fsbench(&[
        "dataset",
        "gen",
        "kernel",
        tree.to_str().unwrap(),
        "--scale",
        SCALE,
        "--content",
        "text",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let number_before = |word: &str| -> f64 {
        let words: Vec<&str> = out.split_whitespace().collect();
        let at = words.iter().position(|w| w.trim_end_matches(',') == word).unwrap();
        words[at - 1].parse().unwrap_or_else(|_| panic!("{out}"))
    };
    (number_before("files"), number_before("bytes"))
}

/// The build tools are installed; otherwise the test is skipped (or fails in CI).
fn tools_ready() -> bool {
    if crate::util::tool_path("mkfs.erofs").is_none() || crate::util::tool_path("mksquashfs").is_none() {
        skip_or_fail("no mkfs.erofs or mksquashfs: run scripts/install.sh (erofs-utils, squashfs-tools)");
        return false;
    }
    true
}

/// An lz4 erofs and an lz4 squashfs variant.
const VARIANTS: &[(&str, &str, &str)] = &[
    ("erofs-lz4", "erofs", r#"["-zlz4"]"#),
    ("squashfs-lz4", "squashfs", r#"["-comp", "lz4"]"#),
];

/// An erofs variant whose image leaves out the tree's `.c` files: its check must fail.
const WITHOUT_C: (&str, &str, &str) = ("erofs-no-c", "erofs", r#"["-zlz4", "--exclude-regex=\\.c$"]"#);

/// A suite of `variants` (`kernel` for a guest, if any) and the image workload on the test's
/// tree.
fn suite(variants: &[(&str, &str, &str)], kernel: Option<&str>) -> String {
    let mut s = String::from("[suite]\nname = \"images\"\n\n[run]\nrepeats = 1\ndrop_caches = true\n\n");
    for (name, t, args) in variants {
        s += &format!("[[fs]]\nname = \"{name}\"\ntype = \"{t}\"\nmkfs_args = {args}\n");
        if let Some(k) = kernel {
            s += &format!("kernel = \"{k}\"\n");
        }
        s += "\n";
    }
    s + &format!("[[workload]]\nkind = \"image\"\ndataset_scale = {SCALE}\nrandom_reads = 20\n")
}

/// The stored sample of `variant` is sane: the image is smaller than the text tree, the ratio
/// is the tree's over the image's MiB, the tree's bytes and every file were read.
fn check_sample(report: &serde_json::Value, variant: &str, (files, bytes): (f64, f64)) {
    let s = ok_sample(report, variant, "image");
    let v =
        |phase: &str, metric: &str| value(s, phase, metric).unwrap_or_else(|| panic!("{variant}: no {phase} {metric}"));
    let ratio = v("build", "ratio");
    assert!(ratio > 1.2, "{variant}: a text tree compresses: ratio {ratio}");
    let image_mib = v("build", "image_mib");
    assert!(
        (v("build", "tree_mib") / image_mib - ratio).abs() < 1e-6 * ratio,
        "{variant}"
    );
    assert!(v("build", "time") > 0.0);
    assert_eq!(v("build", "tree_mib") * 1048576.0, bytes, "{variant}: the tree's bytes");
    assert_eq!(v("cold_read", "files"), files, "{variant}: every file read");
    assert!(v("cold_read", "throughput") > 0.0 && v("random_read", "rate") > 0.0);
    eprintln!("{variant}: ratio {ratio:.2}, {image_mib:.3} MiB");
}

/// erofs and squashfs, each built by its real tool from a tiny kernel-like tree on the guest's
/// staging ext4, mounted by the guest kernel's driver and read back. Two guest boots (about
/// 35 s here); nothing is left. (That the checks fail on a missing, truncated or changed file
/// is shown by the workload's unit tests and end to end by the running kernel's test.)
#[test]
fn erofs_and_squashfs_images_are_built_from_a_tiny_tree_and_read_back_in_a_guest() {
    require_privileged!();
    if !guest_ready() || !tools_ready() {
        return;
    }
    let dir = scratch();
    let scr = dir.path().join("scratch");
    let suite = write_suite(dir.path(), "images.toml", &suite(VARIANTS, Some("guest")));
    let run = SuiteRun::in_dir(dir.path());
    let t0 = Instant::now();
    let o = run.run(&suite, &[]);
    eprintln!("two image cases in a guest took {:.0} s", t0.elapsed().as_secs_f64());
    assert!(o.status.success(), "{}", text(&o));
    let report = report_json(run.db_str(), "latest");
    let counts = kernel_tree_counts();
    for variant in ["erofs-lz4", "squashfs-lz4"] {
        check_sample(&report, variant, counts);
    }
    assert_guest_left_nothing(&scr);
}

/// The same two variants on the running kernel: measured like the guest's where
/// /proc/filesystems lists the type (then the image's loop device and mount are gone
/// afterwards, with the staging filesystem's), else a case said unavailable naming the missing
/// driver — never a row left out. A third variant builds an erofs image without the tree's
/// `.c` files (`--exclude-regex`): the cold read's check against the tree fails that repeat,
/// naming the counts, while the other cases keep their results.
#[test]
fn erofs_and_squashfs_on_the_running_kernel_are_measured_or_said_unavailable() {
    require_privileged!();
    if !tools_ready() {
        return;
    }
    let known = std::fs::read_to_string("/proc/filesystems").unwrap();
    let has = |t: &str| known.lines().any(|l| l.split_whitespace().last() == Some(t));
    let dir = scratch();
    let scr = dir.path().join("scratch");
    let suite = write_suite(
        dir.path(),
        "images.toml",
        &suite(&[VARIANTS, &[WITHOUT_C]].concat(), None),
    );
    let run = SuiteRun::in_dir(dir.path());
    let o = run.run(&suite, &[]);
    let report = report_json(run.db_str(), "latest");
    let counts = kernel_tree_counts();
    if has("erofs") {
        let why = failed_with(&report, WITHOUT_C.0);
        let want = format!("where the tree has {} files and {} bytes", counts.0, counts.1);
        assert!(why.contains("cold_read: read ") && why.contains(&want), "{why}");
    }
    for (variant, t) in [
        ("erofs-lz4", "erofs"),
        ("squashfs-lz4", "squashfs"),
        (WITHOUT_C.0, "erofs"),
    ] {
        if has(t) && variant == WITHOUT_C.0 {
            continue;
        }
        if has(t) {
            check_sample(&report, variant, counts);
        } else {
            let warnings = report["warnings"].to_string();
            assert!(
                warnings.contains(&format!("{variant}: unavailable")) && warnings.contains(&format!("no {t} driver")),
                "{t} is not in /proc/filesystems: {warnings}; {}",
                text(&o)
            );
        }
    }
    assert_nothing_left(&scr);
}

/// The error of the one failed repeat of `variant` in the JSON report.
fn failed_with(report: &serde_json::Value, variant: &str) -> String {
    let case = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["variant"] == variant)
        .unwrap_or_else(|| panic!("no case {variant}"));
    let sample = report["samples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["case_id"] == case["case_id"])
        .unwrap_or_else(|| panic!("no sample of {variant}"));
    assert_eq!(sample["status"]["state"], "failed", "{sample}");
    sample["status"]["error"].as_str().unwrap().to_string()
}

/// fsbench killed (SIGKILL, no guard runs) while the image is mounted on the running kernel:
/// the image's mount and loop device were recorded as undo steps, so `fsbench cleanup` unmounts
/// and detaches them (then the staging filesystem's) and nothing is left. Where the running
/// kernel has no erofs the image is never mounted outside a guest, whose mounts die with it:
/// there is nothing of this workload's own to clean up, and the test says so.
#[test]
fn a_sigkilled_run_with_a_mounted_image_leaves_nothing_after_cleanup() {
    require_privileged!();
    if !tools_ready() {
        return;
    }
    if !std::fs::read_to_string("/proc/filesystems")
        .unwrap()
        .contains("\terofs")
    {
        skip_or_fail("the running kernel has no erofs: the image is only ever mounted in a guest");
        return;
    }
    let dir = scratch();
    let scr = dir.path().join("scratch");
    let text_of_suite =
        suite(&VARIANTS[..1], None).replace(&format!("dataset_scale = {SCALE}"), "dataset_scale = 0.05");
    let suite = write_suite(dir.path(), "kill.toml", &text_of_suite);
    let mut child = spawn_run(&dir.path().join("r.db"), &suite, &scr, &[]);
    let t0 = Instant::now();
    let image_mounted = || {
        mounts_under(&scr)
            .iter()
            .any(|m| m.contains("/fsbench-work/mnt erofs "))
    };
    while !image_mounted() {
        assert!(t0.elapsed() < Duration::from_secs(60), "the image was never mounted");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let o = fsbench(&["cleanup", "--scratch", scr.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    let said = |what: &str, of: &str| out.lines().any(|l| l.starts_with(what) && l.contains(of));
    assert!(
        said("unmounted", "/fsbench-work/mnt") && said("detached", "/fsbench-work/image.img"),
        "{}",
        text(&o)
    );
    assert_nothing_left(&scr);
}
