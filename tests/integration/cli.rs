//! The command line as a new user meets it: help, exit codes, config errors, plans.

use crate::util::{fsbench, scratch, text};

#[test]
fn help_lists_every_subcommand_and_the_exit_codes() {
    let o = fsbench(&["--help"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for cmd in ["run", "plan", "report", "list", "doctor", "cleanup"] {
        assert!(out.contains(cmd), "--help lacks {cmd}:\n{out}");
    }
    assert!(out.contains("130 interrupted"));
    let o = fsbench(&["run", "--help"]);
    let out = String::from_utf8_lossy(&o.stdout);
    for flag in [
        "--preset",
        "--fs",
        "--only",
        "--repeat",
        "--warmup",
        "--scale",
        "--scratch",
        "--dir",
        "--db",
        "--label",
        "--strict",
    ] {
        assert!(out.contains(flag), "run --help lacks {flag}");
    }
    // `run`'s own exit codes: a partial failure is 0, --strict makes any failure 1.
    assert!(
        out.contains("some failed but other cases produced results") && out.contains("with --strict"),
        "{out}"
    );
}

#[test]
fn a_typo_in_a_suite_gets_file_line_col_a_suggestion_and_exit_2() {
    let dir = scratch();
    let suite = dir.path().join("suite.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"t\"\n\n[[fs]]\ntype = \"ext4\"\n\n[[workload]]\nkind = \"bonnie\"\nfle_size = \"16MiB\"\n",
    )
    .unwrap();
    let o = fsbench(&["plan", suite.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("suite.toml:9:"), "no file:line:col in: {err}");
    assert!(err.contains("file_size"), "no suggestion in: {err}");
}

#[test]
fn usage_errors_exit_2() {
    let o = fsbench(&["run", "--scale", "-1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = fsbench(&["run", "--preset", "quik"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("quick"), "{}", text(&o));
    let o = fsbench(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
    let o = fsbench(&["run", "--fs", "ext4", "--only", "nosuchworkload"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// A loop mode other than `direct` or `buffered` is a usage error (exit 2) naming the valid
/// ones, on the command line and in a suite (with its position); buffered loops with `--dir`,
/// which has no loop device, too.
#[test]
fn a_bad_loop_io_exits_2_with_the_valid_values() {
    let o = fsbench(&["run", "--loop-io", "cached"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("'cached'") && err.contains("--loop-io") && err.contains("direct") && err.contains("buffered"),
        "{err}"
    );
    let dir = scratch();
    let suite = crate::util::write_suite(
        dir.path(),
        "s.toml",
        "[suite]\nname = \"t\"\n\n[run]\nloop_io = \"cached\"\n\n[[fs]]\ntype = \"ext4\"\n\n[[workload]]\nkind = \"bonnie\"\n",
    );
    let o = fsbench(&["plan", suite.as_str()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("s.toml:5:11") && err.contains("loop_io = \"cached\": use \"direct\""),
        "{err}"
    );
    let d = dir.path().to_str().unwrap();
    let o = fsbench(&["plan", "--dir", d, "--scratch", d, "--loop-io", "buffered"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("loop_io = \"buffered\"") && err.contains("--dir"), "{err}");
    // The valid values are accepted, and the plan says when the loops are buffered.
    let o = fsbench(&["plan", "--dir", d, "--scratch", d, "--loop-io", "direct"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("buffered by request"));
    let o = fsbench(&["plan", "--fs", "ext4", "--scratch", d, "--loop-io", "buffered"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Loop devices buffered by request"),
        "{}",
        text(&o)
    );
}

/// A filesystem type no table row or `mkfs.NAME` knows is a configuration error (exit 2) that
/// lists the known types, in a suite file and in `--fs`.
#[test]
fn an_unknown_filesystem_type_exits_2_with_the_known_ones() {
    let dir = scratch();
    let suite = crate::util::write_suite(
        dir.path(),
        "s.toml",
        "[suite]\nname = \"t\"\n\n[[fs]]\ntype = \"nosuchfs\"\n\n[[workload]]\nkind = \"bonnie\"\n",
    );
    for args in [&["plan", suite.as_str()][..], &["plan", "--fs", "nosuchfs:noatime"]] {
        let o = fsbench(args);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("`nosuchfs`") && err.contains("mkfs.nosuchfs") && err.contains("ext2, ext3, ext4, xfs, btrfs"),
            "{err}"
        );
    }
}

#[test]
fn plan_shows_cases_order_sizes_and_space_and_marks_unavailable_types() {
    let dir = scratch();
    let s = dir.path().to_str().unwrap();
    let o = fsbench(&["plan", "--fs", "ext4,reiser4,xfs:noatime", "--scratch", s]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("UNAVAILABLE"), "{out}");
    assert!(out.contains("reiser4"), "{out}");
    assert!(out.contains("xfs:noatime"), "{out}");
    assert!(
        out.contains("Run order: ext4#1w xfs:noatime#1w ext4#2 xfs:noatime#2"),
        "{out}"
    );
    assert!(out.contains("needs"), "{out}");
    // plan never provisions anything
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn plan_refuses_a_scratch_folder_too_small_for_the_images() {
    let dir = scratch();
    let s = dir.path().to_str().unwrap();
    let o = fsbench(&["plan", "--fs", "ext4", "--scale", "500", "--scratch", s]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--scale"), "{}", text(&o));
}

#[test]
fn list_shows_presets_workloads_and_filesystems() {
    let o = fsbench(&["list", "presets"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("quick"));
    let o = fsbench(&["list", "workloads"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("bonnie") && out.contains("seq_write_block"), "{out}");
    let o = fsbench(&["list", "filesystems"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("ext4") && out.contains("zfs"), "{out}");
}

#[test]
fn a_reader_that_went_away_ends_the_output_quietly_with_141() {
    // A pipe whose read end is closed before fsbench starts: its first write gets EPIPE, as in
    // `fsbench list workloads | head -1` once head has exited.
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills two descriptors, which the OwnedFds below then own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors are fresh from pipe(2) and owned nowhere else.
    let (read, write) = unsafe {
        use std::os::fd::FromRawFd;
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    drop(read);
    let o = std::process::Command::new(crate::util::bin())
        .args(["list", "workloads"])
        .stdout(std::process::Stdio::from(write))
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(141), "{}", text(&o));
    assert!(o.stderr.is_empty(), "no error message for a closed pipe: {}", text(&o));
}
